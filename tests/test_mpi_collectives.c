/* The collectives (wick/dist.h) against a single-process reference: every
 * collective over every element dtype and several layouts, on any number of
 * ranks (ctest runs this as MPI's singleton and under mpirun -np 2 / 3).
 *
 * Inputs are a function of (rank, flat index), small integers, so every
 * rank can compute what every other rank holds, and every partial sum,
 * product, max and min along the ring is exactly representable (even in
 * f8e4m3): the result must then equal the f64 reference converted once to
 * the dtype, byte for byte. Each result's hash is also gathered to check
 * that every rank holds the same bits.
 *
 * The NCCL section runs only in a build with NCCL and with a GPU (it says
 * why it skips otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "testutil.h"
#include "wick/dist.h"
#include "wick/nn.h"

static wk_comm *W; /* the world */
static int R, N;
static long g_checked; /* results compared byte for byte with the reference */
static uint64_t g_acc;  /* the hash of this test's world results so far, in order */
static long g_nacc;

static const wk_dtype DTS[] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3};
#define NDT ((int)(sizeof DTS / sizeof DTS[0]))

static bool is_unsigned(wk_dtype dt) { return dt == WK_U8 || dt == WK_U32; }

/* Rank r's element i: -1 .. 2 (0 .. 3 for unsigned dtypes). */
static double val(wk_dtype dt, int r, int64_t i, int salt) {
    /* a small hash, so the ranks' values are not shifts of one another */
    uint64_t h = (uint64_t)i * 2654435761u ^ ((uint64_t)r * 40503u + (uint64_t)salt * 977u + 1);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    int v = (int)(h % 4);
    return is_unsigned(dt) ? v : v - 1;
}

/* ---------------------------------------------------------------- layouts */

enum { L_CONTIG, L_TRANSPOSED, L_NARROWED, L_BCAST, L_PERMUTE3, L_COUNT };
static const char *const LNAME[] = {"contiguous", "transposed", "narrowed", "broadcast", "permute3"};

static int64_t numel_of(const int64_t *s, int nd) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

/* The logical values of rank r's input (a broadcast view repeats its last dim's row). */
static void logical(int layout, const int64_t *s, int nd, wk_dtype dt, int r, int salt, double *out) {
    int64_t n = numel_of(s, nd), last = nd ? s[nd - 1] : 1;
    for (int64_t i = 0; i < n; i++) out[i] = val(dt, r, layout == L_BCAST ? i % last : i, salt);
}

/* Rank r's input in the given layout: the logical values written through a view. */
static wk_tensor *make_input(int layout, const int64_t *s, int nd, wk_dtype dt, int r, int salt) {
    int64_t n = numel_of(s, nd);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    logical(layout, s, nd, dt, r, salt, v);
    wk_tensor *src = tu_make(v, s, nd, dt), *out = NULL, *base = NULL;
    free(v);
    switch (layout) {
    case L_CONTIG: return src;
    case L_TRANSPOSED: {
        assert_int_equal(nd, 2);
        int64_t bs[2] = {s[1], s[0]};
        base = TU_OK(wk_empty(bs, 2, dt, wk_cpu()));
        out = TU_OK(wk_t(base));
        break;
    }
    case L_NARROWED: {
        assert_int_equal(nd, 2);
        int64_t bs[2] = {s[0] + 1, s[1] + 3};
        base = TU_OK(wk_zeros(bs, 2, dt, wk_cpu()));
        wk_tensor *a = TU_OK(wk_narrow(base, 0, 1, s[0]));
        out = TU_OK(wk_narrow(a, 1, 2, s[1]));
        wk_tensor_free(a);
        break;
    }
    case L_BCAST: {
        assert_int_equal(nd, 2);
        wk_tensor *row = TU_OK(wk_narrow(src, 0, 0, 1)); /* (1, cols) */
        base = TU_OK(wk_contiguous(row));
        wk_tensor_free(row);
        if (s[0] == 0) { /* a broadcast of an empty row set: still a stride-0 view */
            out = TU_OK(wk_broadcast_as(base, s, 2));
        } else {
            out = TU_OK(wk_broadcast_as(base, s, 2));
            assert_int_equal(wk_strides(out)[0], 0);
        }
        wk_tensor_free(base);
        wk_tensor_free(src);
        return out;
    }
    case L_PERMUTE3: {
        assert_int_equal(nd, 3);
        int64_t bs[3] = {s[2], s[0], s[1]};
        int perm[3] = {1, 2, 0};
        base = TU_OK(wk_empty(bs, 3, dt, wk_cpu()));
        out = TU_OK(wk_permute(base, perm, 3));
        break;
    }
    default: fail();
    }
    TU_STATUS_OK(wk_copy_(out, src));
    wk_tensor_free(base);
    wk_tensor_free(src);
    return out;
}

/* --------------------------------------------------------------- checking */

static void *bytes_of(const wk_tensor *t, size_t *nb) {
    wk_tensor *c = TU_OK(wk_contiguous(t));
    const wk_dtype_info *di = wk_dtype_info_of(wk_tensor_dtype(t));
    *nb = (size_t)(wk_numel(t) / di->block_elems * di->block_bytes);
    void *b = malloc(*nb ? *nb : 1);
    assert_non_null(b);
    TU_STATUS_OK(wk_to_host(c, b, *nb));
    wk_tensor_free(c);
    return b;
}

static uint64_t fnv(const void *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ull;
    return h;
}

/* Every rank of c holds bytes hashing to h. */
static void same_on_all(wk_comm *c, uint64_t h, const char *what) {
    if (wk_comm_size(c) == 1) return;
    int64_t one = 8;
    wk_tensor *t = TU_OK(wk_from_host(&h, 8, &one, 1, WK_U8, wk_cpu()));
    wk_tensor *g = TU_OK(wk_all_gather(c, t, 0));
    size_t nb;
    uint64_t *hs = bytes_of(g, &nb);
    assert_int_equal(nb, 8 * (size_t)wk_comm_size(c));
    for (int i = 0; i < wk_comm_size(c); i++)
        if (hs[i] != h) {
            printf("rank %d: %s differs on rank %d\n", R, what, i);
            fail();
        }
    free(hs);
    wk_tensor_free(t);
    wk_tensor_free(g);
}

/* got must equal (dtype, shape, bytes) the reference values ref converted to dt. */
static void expect(wk_comm *c, const wk_tensor *got, const double *ref, const int64_t *s, int nd, wk_dtype dt,
                   const char *what) {
    if (!got) {
        printf("rank %d: %s failed: %s\n", R, what, wk_last_error());
        fail();
    }
    assert_int_equal(wk_tensor_dtype(got), dt);
    tu_assert_shape(got, s, nd);
    wk_tensor *e = tu_make(ref, s, nd, dt);
    size_t na, nb;
    void *a = bytes_of(got, &na), *b = bytes_of(e, &nb);
    assert_int_equal(na, nb);
    if (memcmp(a, b, na) != 0) {
        printf("rank %d of %d: %s: result differs from the single-process reference\n", R, N, what);
        fail();
    }
    if (c == W) {
        /* the world's results: hashed in order, compared once per test (teardown) */
        uint64_t h[2] = {g_acc, fnv(a, na)};
        g_acc = fnv(h, sizeof h);
        g_nacc++;
    } else {
        same_on_all(c, fnv(a, na), what);
    }
    g_checked++;
    free(a);
    free(b);
    wk_tensor_free(e);
}

/* After each test: every rank got the same world results (one all_gather
 * of the running hash instead of one per result: fewer round trips on an
 * oversubscribed machine). */
static int same_results(void **state) {
    (void)state;
    if (g_nacc) {
        char what[64];
        snprintf(what, sizeof what, "one of this test's %ld results", g_nacc);
        same_on_all(W, g_acc, what);
    }
    g_acc = 0;
    g_nacc = 0;
    return 0;
}

static double apply(wk_dist_op op, double a, double b) {
    switch (op) {
    case WK_DIST_SUM:
    case WK_DIST_AVG: return a + b;
    case WK_DIST_MAX: return a > b ? a : b;
    case WK_DIST_MIN: return a < b ? a : b;
    case WK_DIST_PROD: return a * b;
    default: return 0;
    }
}

/* The reduction of every rank of a size-n world's logical values (ranks
 * given by world rank list ranks[0..n)). */
static double *reduced(int layout, const int64_t *s, int nd, wk_dtype dt, wk_dist_op op, int salt, const int *ranks,
                       int n) {
    int64_t m = numel_of(s, nd);
    double *acc = malloc(sizeof(double) * (size_t)(m ? m : 1)), *tmp = malloc(sizeof(double) * (size_t)(m ? m : 1));
    assert_true(acc && tmp);
    logical(layout, s, nd, dt, ranks[0], salt, acc);
    for (int k = 1; k < n; k++) {
        logical(layout, s, nd, dt, ranks[k], salt, tmp);
        for (int64_t i = 0; i < m; i++) acc[i] = apply(op, acc[i], tmp[i]);
    }
    if (op == WK_DIST_AVG)
        for (int64_t i = 0; i < m; i++) acc[i] /= n;
    free(tmp);
    return acc;
}

static int *world_ranks(void) {
    static int r[64];
    for (int i = 0; i < N && i < 64; i++) r[i] = i;
    return r;
}

/* ------------------------------------------------------------- all_reduce */

static void one_all_reduce(int layout, const int64_t *s, int nd, wk_dtype dt, wk_dist_op op, int salt) {
    char what[160];
    snprintf(what, sizeof what, "all_reduce %s %s %s (%lld elements)", wk_dist_op_name(op), wk_dtype_name(dt),
             LNAME[layout], (long long)numel_of(s, nd));
    wk_tensor *x = make_input(layout, s, nd, dt, R, salt);
    wk_tensor *y = wk_all_reduce(W, x, op);
    if (op == WK_DIST_AVG && !wk_dtype_is_float(dt)) {
        TU_FAILS(y, WK_ERR_DTYPE);
    } else {
        double *ref = reduced(layout, s, nd, dt, op, salt, world_ranks(), N);
        expect(W, y, ref, s, nd, dt, what);
        assert_false(wk_shares_storage(x, y));
        free(ref);
    }
    wk_tensor_free(x);
    wk_tensor_free(y);
}

static void test_all_reduce_small(void **state) {
    (void)state;
    int64_t s2[2] = {5, 7}, s3[3] = {2, 3, 4}, empty[2] = {0, 7}, one[1] = {1};
    for (int d = 0; d < NDT; d++)
        for (int op = 0; op < WK_DIST_OP_COUNT; op++) {
            for (int l = L_CONTIG; l <= L_BCAST; l++) one_all_reduce(l, s2, 2, DTS[d], (wk_dist_op)op, d + op);
            one_all_reduce(L_PERMUTE3, s3, 3, DTS[d], (wk_dist_op)op, d);
            one_all_reduce(L_CONTIG, empty, 2, DTS[d], (wk_dist_op)op, 0);
            one_all_reduce(L_CONTIG, one, 1, DTS[d], (wk_dist_op)op, 1);
        }
}

/* Above 64 KiB: the ring path (about 1 MiB). */
static void test_all_reduce_big(void **state) {
    (void)state;
    for (int d = 0; d < NDT; d++) {
        int64_t s[2] = {(1 << 20) / 256 / (int64_t)wk_dtype_size(DTS[d]), 256};
        one_all_reduce(L_CONTIG, s, 2, DTS[d], WK_DIST_SUM, d);
    }
    int64_t s[2] = {1024, 257}; /* f32: ~1 MiB, numel not a multiple of the size */
    for (int op = 0; op < WK_DIST_OP_COUNT; op++) one_all_reduce(L_TRANSPOSED, s, 2, WK_F32, (wk_dist_op)op, op);
    one_all_reduce(L_NARROWED, s, 2, WK_BF16, WK_DIST_MAX, 3);
    one_all_reduce(L_CONTIG, s, 2, WK_I64, WK_DIST_PROD, 3);
}

/* ------------------------------------------------------------- all_gather */

static int64_t gather_len(int r) { return (N > 1 && r == N - 1) ? 0 : r + 1; }

/* Rank r's input to a gather along dim d of shape s with s[d] replaced. */
static void gather_shape(const int64_t *s, int nd, int d, int r, int64_t *out) {
    for (int k = 0; k < nd; k++) out[k] = s[k];
    out[d] = gather_len(r) * s[d];
}

static void one_all_gather(int layout, const int64_t *s, int nd, int d, wk_dtype dt, int salt) {
    char what[160];
    snprintf(what, sizeof what, "all_gather dim %d %s %s", d, wk_dtype_name(dt), LNAME[layout]);
    int64_t sh[WK_MAX_RANK];
    gather_shape(s, nd, d, R, sh);
    wk_tensor *x = make_input(layout, sh, nd, dt, R, salt);
    wk_tensor *y = wk_all_gather(W, x, d - nd); /* a negative dim counts from the end */
    /* the reference: every rank's logical values concatenated (as f64) */
    wk_tensor **parts = calloc((size_t)N, sizeof *parts);
    for (int r = 0; r < N; r++) {
        int64_t ps[WK_MAX_RANK];
        gather_shape(s, nd, d, r, ps);
        int64_t n = numel_of(ps, nd);
        double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
        logical(layout, ps, nd, dt, r, salt, v);
        parts[r] = tu_make(v, ps, nd, WK_F64);
        free(v);
    }
    wk_tensor *cat = TU_OK(wk_cat(parts, N, d));
    int64_t n = wk_numel(cat);
    double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
    TU_STATUS_OK(wk_to_host_f64(cat, ref, (size_t)n));
    int64_t es[WK_MAX_RANK];
    for (int k = 0; k < nd; k++) es[k] = wk_dim(cat, k);
    expect(W, y, ref, es, nd, dt, what);
    for (int r = 0; r < N; r++) wk_tensor_free(parts[r]);
    free(parts);
    free(ref);
    wk_tensor_free(cat);
    wk_tensor_free(x);
    wk_tensor_free(y);
}

static void test_all_gather(void **state) {
    (void)state;
    int64_t s2[2] = {1, 3}, s2b[2] = {4, 1}, s3[3] = {2, 3, 1};
    for (int d = 0; d < NDT; d++) {
        one_all_gather(L_CONTIG, s2, 2, 0, DTS[d], d);
        one_all_gather(L_TRANSPOSED, s2b, 2, 1, DTS[d], d);
        one_all_gather(L_NARROWED, s2, 2, 0, DTS[d], d);
        one_all_gather(L_PERMUTE3, s3, 3, 2, DTS[d], d);
        one_all_gather(L_PERMUTE3, s3, 3, 1, DTS[d], d);
    }
    /* broadcast views gather along the non-broadcast dim */
    int64_t sb[2] = {3, 2};
    one_all_gather(L_BCAST, sb, 2, 1, WK_F32, 5);
    /* above 64 KiB in total */
    int64_t big[2] = {40000 / (N > 1 ? N : 1), 4};
    one_all_gather(L_CONTIG, big, 2, 0, WK_F32, 2);
}

/* --------------------------------------------------------- reduce_scatter */

static void one_reduce_scatter(int layout, const int64_t *s, int nd, int d, wk_dtype dt, wk_dist_op op, int salt) {
    char what[160];
    snprintf(what, sizeof what, "reduce_scatter dim %d (%lld) %s %s %s", d, (long long)s[d], wk_dist_op_name(op),
             wk_dtype_name(dt), LNAME[layout]);
    wk_tensor *x = make_input(layout, s, nd, dt, R, salt);
    wk_tensor *y = wk_reduce_scatter(W, x, d, op);
    if (op == WK_DIST_AVG && !wk_dtype_is_float(dt)) {
        TU_FAILS(y, WK_ERR_DTYPE);
        wk_tensor_free(x);
        return;
    }
    double *full = reduced(layout, s, nd, dt, op, salt, world_ranks(), N);
    wk_tensor *ft = tu_make(full, s, nd, WK_F64);
    int64_t cs = (s[d] + N - 1) / N, lo = (int64_t)R * cs, hi = lo + cs;
    if (lo > s[d]) lo = s[d];
    if (hi > s[d]) hi = s[d];
    wk_tensor *part = TU_OK(wk_narrow(ft, d, lo, hi - lo));
    int64_t ps[WK_MAX_RANK], n = wk_numel(part);
    for (int k = 0; k < nd; k++) ps[k] = wk_dim(part, k);
    double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
    TU_STATUS_OK(wk_to_host_f64(part, ref, (size_t)n));
    /* the parts differ between ranks: compare with the reference only */
    if (!y) {
        printf("rank %d: %s failed: %s\n", R, what, wk_last_error());
        fail();
    }
    tu_assert_shape(y, ps, nd);
    wk_tensor *e = tu_make(ref, ps, nd, dt);
    size_t na, nb;
    void *a = bytes_of(y, &na), *b = bytes_of(e, &nb);
    assert_int_equal(na, nb);
    if (memcmp(a, b, na) != 0) {
        printf("rank %d of %d: %s: differs from the reference\n", R, N, what);
        fail();
    }
    free(a);
    free(b);
    free(ref);
    free(full);
    wk_tensor_free(e);
    wk_tensor_free(part);
    wk_tensor_free(ft);
    wk_tensor_free(x);
    wk_tensor_free(y);
}

static void test_reduce_scatter(void **state) {
    (void)state;
    int64_t even[2] = {2 * N, 3}, over[2] = {N + 1, 3}, under[2] = {N > 1 ? N - 1 : 1, 5}, s3[3] = {2, N + 1, 3};
    for (int d = 0; d < NDT; d++)
        for (int op = 0; op < WK_DIST_OP_COUNT; op++) {
            one_reduce_scatter(L_CONTIG, even, 2, 0, DTS[d], (wk_dist_op)op, d);
            one_reduce_scatter(L_TRANSPOSED, over, 2, 0, DTS[d], (wk_dist_op)op, op);
            one_reduce_scatter(L_NARROWED, under, 2, 0, DTS[d], (wk_dist_op)op, d + op);
            one_reduce_scatter(L_PERMUTE3, s3, 3, 1, DTS[d], (wk_dist_op)op, 1);
        }
    int64_t sb[2] = {3, N + 2};
    one_reduce_scatter(L_BCAST, sb, 2, 1, WK_F32, WK_DIST_SUM, 2);
    int64_t big[2] = {4096 + 1, 64}; /* f32, ~1 MiB */
    one_reduce_scatter(L_CONTIG, big, 2, 0, WK_F32, WK_DIST_SUM, 4);
}

/* -------------------------------------------------------------- broadcast */

static void test_broadcast(void **state) {
    (void)state;
    int64_t s2[2] = {5, 7}, s3[3] = {2, 3, 4}, big[2] = {1024, 256}, empty[2] = {0, 3};
    for (int root = 0; root < N; root++)
        for (int d = 0; d < NDT; d++)
            for (int l = 0; l < L_COUNT; l++) {
                const int64_t *s = l == L_PERMUTE3 ? s3 : s2;
                int nd = l == L_PERMUTE3 ? 3 : 2;
                char what[128];
                snprintf(what, sizeof what, "broadcast root %d %s %s", root, wk_dtype_name(DTS[d]), LNAME[l]);
                /* non-roots pass their own tensor (its shape) or NULL (take the root's) */
                wk_tensor *x = (R == root || (l & 1)) ? make_input(l, s, nd, DTS[d], R, d) : NULL;
                wk_tensor *y = wk_broadcast(W, x, root);
                int64_t n = numel_of(s, nd);
                double *ref = malloc(sizeof(double) * (size_t)n);
                logical(l, s, nd, DTS[d], root, d, ref);
                expect(W, y, ref, s, nd, DTS[d], what);
                free(ref);
                wk_tensor_free(x);
                wk_tensor_free(y);
            }
    for (int root = 0; root < N; root++) {
        wk_tensor *x = R == root ? make_input(L_CONTIG, big, 2, WK_F32, R, 1) : NULL;
        wk_tensor *y = wk_broadcast(W, x, root);
        double *ref = malloc(sizeof(double) * 1024 * 256);
        logical(L_CONTIG, big, 2, WK_F32, root, 1, ref);
        expect(W, y, ref, big, 2, WK_F32, "broadcast 1 MiB");
        free(ref);
        wk_tensor_free(x);
        wk_tensor_free(y);
        x = R == root ? make_input(L_CONTIG, empty, 2, WK_I16, R, 1) : NULL;
        y = TU_OK(wk_broadcast(W, x, root));
        tu_assert_shape(y, empty, 2);
        wk_tensor_free(x);
        wk_tensor_free(y);
    }
}

/* ----------------------------------------------------- send / recv, barrier */

/* A ring: rank r sends to r+1 and receives from r-1 (even ranks send first,
 * odd ones receive first, so a rendezvous-sized message cannot deadlock). */
/* A tensor received from rank `from` must be its make_input(layout: the
 * logical values; received tensors are contiguous), bytes, dtype and
 * shape. Frees got. */
static void expect_from(wk_tensor *got, const int64_t *s, int nd, wk_dtype dt, int from, int salt, int layout) {
    if (!got) {
        printf("rank %d: recv failed: %s\n", R, wk_last_error());
        fail();
    }
    int64_t n = numel_of(s, nd);
    double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
    logical(layout, s, nd, dt, from, salt, ref);
    assert_int_equal(wk_tensor_dtype(got), dt);
    tu_assert_shape(got, s, nd);
    wk_tensor *e = tu_make(ref, s, nd, dt);
    size_t na, nb;
    void *a = bytes_of(got, &na), *b = bytes_of(e, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(a);
    free(b);
    free(ref);
    wk_tensor_free(e);
    wk_tensor_free(got);
}

static void ring_once(int layout, const int64_t *s, int nd, wk_dtype dt, int tag, int salt) {
    int right = (R + 1) % N, left = (R + N - 1) % N;
    wk_tensor *x = make_input(layout, s, nd, dt, R, salt), *y = NULL;
    if (R % 2 == 0) {
        TU_STATUS_OK(wk_send(W, x, right, tag));
        y = wk_recv(W, left, tag);
    } else {
        y = wk_recv(W, left, tag);
        TU_STATUS_OK(wk_send(W, x, right, tag));
    }
    expect_from(y, s, nd, dt, left, salt, layout);
    wk_tensor_free(x);
}

static void test_send_recv_ring(void **state) {
    (void)state;
    if (N == 1) {
        printf("send / recv ring: a world of 1 has no peers (the self rules are tested in test_self)\n");
        return;
    }
    int64_t s2[2] = {5, 7}, s3[3] = {2, 3, 4}, empty[2] = {0, 4}, big[2] = {1024, 256};
    for (int d = 0; d < NDT; d++)
        for (int l = 0; l < L_COUNT; l++)
            ring_once(l, l == L_PERMUTE3 ? s3 : s2, l == L_PERMUTE3 ? 3 : 2, DTS[d], d * 7 + l, d);
    ring_once(L_CONTIG, empty, 2, WK_F16, 0, 0);
    ring_once(L_TRANSPOSED, big, 2, WK_F32, 16383, 2); /* the largest user tag, 1 MiB */
    TU_STATUS_OK(wk_barrier(W));
}

static void test_barrier(void **state) {
    (void)state;
    for (int i = 0; i < 5; i++) TU_STATUS_OK(wk_barrier(W));
    assert_true(wk_comm_ok(W));
}

/* ------------------------------------------------------------------ async */

static void test_async(void **state) {
    (void)state;
    int64_t s[2] = {300, 257}, g[2] = {0, 5}, rs[2] = {N + 1, 3};
    gather_shape((int64_t[]){1, 5}, 2, 0, R, g);
    wk_tensor *a = make_input(L_CONTIG, s, 2, WK_F32, R, 1);
    wk_tensor *b = make_input(L_TRANSPOSED, s, 2, WK_I32, R, 2);
    wk_tensor *c = make_input(L_CONTIG, g, 2, WK_F64, R, 3);
    wk_tensor *d = make_input(L_NARROWED, rs, 2, WK_BF16, R, 4);
    wk_tensor *e = R == 0 ? make_input(L_CONTIG, s, 2, WK_F16, R, 5) : NULL;
    wk_dist_work *w[5];
    w[0] = wk_all_reduce_async(W, a, WK_DIST_SUM);
    w[1] = wk_all_reduce_async(W, b, WK_DIST_MAX);
    w[2] = wk_all_gather_async(W, c, 0);
    w[3] = wk_reduce_scatter_async(W, d, 0, WK_DIST_SUM);
    w[4] = wk_broadcast_async(W, e, 0);
    for (int i = 0; i < 5; i++) assert_non_null(w[i]);
    /* compute while they run */
    wk_tensor *m = TU_OK(wk_ones((int64_t[]){96, 96}, 2, WK_F32, wk_cpu()));
    int done_polls = 0;
    for (int it = 0; it < 20; it++) {
        wk_tensor *p = TU_OK(wk_matmul(m, m));
        wk_tensor_free(p);
        for (int i = 0; i < 5; i++) done_polls += wk_dist_test(w[i]);
    }
    /* a blocking call queues behind them */
    wk_tensor *z = TU_OK(wk_all_reduce(W, a, WK_DIST_MIN));
    double *ref = reduced(L_CONTIG, s, 2, WK_F32, WK_DIST_MIN, 1, world_ranks(), N);
    expect(W, z, ref, s, 2, WK_F32, "blocking all_reduce after async ones");
    free(ref);
    for (int i = 0; i < 5; i++) assert_true(wk_dist_test(w[i])); /* issue order: all done before z */
    wk_tensor *y0 = wk_dist_wait(w[0]), *y1 = wk_dist_wait(w[1]), *y2 = wk_dist_wait(w[2]), *y3 = wk_dist_wait(w[3]),
              *y4 = wk_dist_wait(w[4]);
    ref = reduced(L_CONTIG, s, 2, WK_F32, WK_DIST_SUM, 1, world_ranks(), N);
    expect(W, y0, ref, s, 2, WK_F32, "async all_reduce sum");
    free(ref);
    ref = reduced(L_TRANSPOSED, s, 2, WK_I32, WK_DIST_MAX, 2, world_ranks(), N);
    expect(W, y1, ref, s, 2, WK_I32, "async all_reduce max");
    free(ref);
    int64_t total = 0;
    for (int r = 0; r < N; r++) total += gather_len(r);
    assert_int_equal(wk_dim(y2, 0), total);
    assert_non_null(y3);
    assert_int_equal(wk_dim(y3, 0), R * 2 < N + 1 ? ((N + 1) - R * 2 < 2 ? (N + 1) - R * 2 : 2) : 0);
    ref = malloc(sizeof(double) * 300 * 257);
    logical(L_CONTIG, s, 2, WK_F16, 0, 5, ref);
    expect(W, y4, ref, s, 2, WK_F16, "async broadcast");
    free(ref);
    assert_null(wk_dist_wait(NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    assert_false(wk_dist_test(NULL));
    printf("rank %d: async: %d polls saw work done during compute\n", R, done_polls);
    wk_tensor *tensors[] = {a, b, c, d, e, m, z, y0, y1, y2, y3, y4};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) wk_tensor_free(tensors[i]);
}

/* Async send / recv in a ring, several outstanding on one communicator. */
static void test_async_p2p(void **state) {
    (void)state;
    if (N == 1) return;
    int right = (R + 1) % N, left = (R + N - 1) % N;
    int64_t s[1] = {17};
    wk_tensor *x = make_input(L_CONTIG, s, 1, WK_I64, R, 0);
    /* even ranks: send then recv; odd: recv then send */
    wk_dist_work *w1 = R % 2 == 0 ? wk_send_async(W, x, right, 3) : wk_recv_async(W, left, 3);
    wk_dist_work *w2 = R % 2 == 0 ? wk_recv_async(W, left, 3) : wk_send_async(W, x, right, 3);
    wk_tensor *r1 = wk_dist_wait(w1), *r2 = wk_dist_wait(w2);
    wk_tensor *got = R % 2 == 0 ? r2 : r1;
    assert_null(R % 2 == 0 ? r1 : r2);
    expect_from(got, s, 1, WK_I64, left, 0, L_CONTIG);
    wk_tensor_free(x);
}

/* Every rank posts its send before its receive, with a payload large enough
 * for MPI's rendezvous protocol (the send cannot finish before the peer's
 * receive is posted): a posted async send leaves the queue, so the
 * receive behind it runs and both complete. */
static void test_async_exchange(void **state) {
    (void)state;
    if (N == 1) return;
    int right = (R + 1) % N, left = (R + N - 1) % N;
    int64_t s[2] = {512, 512};
    wk_tensor *x = make_input(L_CONTIG, s, 2, WK_F32, R, 1);
    for (int it = 0; it < 3; it++) {
        wk_dist_work *ws = wk_send_async(W, x, right, 5);
        wk_dist_work *wr = wk_recv_async(W, left, 5);
        wk_tensor *got = wk_dist_wait(wr);
        wk_tensor *none = (wk_tensor *)1;
        TU_STATUS_OK(wk_dist_wait_status(ws, &none));
        assert_null(none);
        expect_from(got, s, 2, WK_F32, left, 1, L_CONTIG);
    }
    wk_tensor_free(x);
}

/* Receives posted before the sends (torch allows it), two from one peer on
 * one tag (they take the messages in issue order: a large one, then a
 * small one), and a collective issued between them: posted receives leave
 * the queue, so nothing waits for anything that comes after it. */
static void test_async_recv_first(void **state) {
    (void)state;
    if (N == 1) return;
    int right = (R + 1) % N, left = (R + N - 1) % N;
    int64_t big[2] = {512, 512}, small[1] = {7};
    wk_tensor *xb = make_input(L_CONTIG, big, 2, WK_F32, R, 2), *xs = make_input(L_CONTIG, small, 1, WK_I32, R, 3);
    wk_dist_work *r1 = wk_recv_async(W, left, 9), *r2 = wk_recv_async(W, left, 9);
    wk_tensor *sum = wk_all_reduce(W, xs, WK_DIST_SUM);
    assert_non_null(sum);
    wk_dist_work *s1 = wk_send_async(W, xb, right, 9), *s2 = wk_send_async(W, xs, right, 9);
    wk_tensor *g1 = wk_dist_wait(r1), *g2 = wk_dist_wait(r2);
    TU_STATUS_OK(wk_dist_wait_status(s1, NULL));
    TU_STATUS_OK(wk_dist_wait_status(s2, NULL));
    expect_from(g1, big, 2, WK_F32, left, 2, L_CONTIG);
    expect_from(g2, small, 1, WK_I32, left, 3, L_CONTIG);
    /* a posted receive, then a BLOCKING send of a rendezvous-sized message
     * on both sides: the send's wait advances the posted receive */
    wk_dist_work *r3 = wk_recv_async(W, left, 10);
    TU_STATUS_OK(wk_send(W, xb, right, 10));
    expect_from(wk_dist_wait(r3), big, 2, WK_F32, left, 2, L_CONTIG);
    wk_tensor_free(sum);
    wk_tensor_free(xb);
    wk_tensor_free(xs);
}

/* ------------------------------------------------------------- sub-groups */

static void test_split(void **state) {
    (void)state;
    int color = R % 2;
    wk_comm *sub = wk_comm_split(W, color, R);
    if (!sub) {
        printf("rank %d: split failed: %s\n", R, wk_last_error());
        fail();
    }
    int members[64], n = 0;
    for (int r = 0; r < N && n < 64; r++)
        if (r % 2 == color) members[n++] = r;
    assert_int_equal(wk_comm_size(sub), n);
    assert_int_equal(wk_comm_rank(sub), R / 2);
    assert_int_equal(wk_comm_backend_of(sub), wk_comm_backend_of(W));
    int64_t s[2] = {6, 5};
    for (int op = 0; op < WK_DIST_OP_COUNT; op++) {
        wk_tensor *x = make_input(L_TRANSPOSED, s, 2, WK_F32, R, op);
        wk_tensor *y = wk_all_reduce(sub, x, (wk_dist_op)op);
        double *ref = reduced(L_TRANSPOSED, s, 2, WK_F32, (wk_dist_op)op, op, members, n);
        expect(sub, y, ref, s, 2, WK_F32, "all_reduce on an even / odd group");
        free(ref);
        wk_tensor_free(x);
        wk_tensor_free(y);
    }
    /* the group's gather holds its members' world ranks in order */
    int64_t one = 1;
    int32_t me = R;
    wk_tensor *x = TU_OK(wk_from_host(&me, 4, &one, 1, WK_I32, wk_cpu()));
    wk_tensor *g = TU_OK(wk_all_gather(sub, x, 0));
    size_t nb;
    int32_t *got = bytes_of(g, &nb);
    for (int i = 0; i < n; i++) assert_int_equal(got[i], members[i]);
    free(got);
    wk_tensor_free(g);
    /* the world still works alongside */
    wk_tensor *wg = TU_OK(wk_all_gather(W, x, 0));
    assert_int_equal(wk_dim(wg, 0), N);
    wk_tensor_free(wg);
    TU_STATUS_OK(wk_barrier(sub));
    wk_tensor_free(x);
    wk_comm_free(sub);
    /* color < 0: rank 0 joins none (NULL, no error); the rest form a group */
    wk_clear_error();
    wk_comm *rest = wk_comm_split(W, R == 0 ? -1 : 0, 0);
    if (R == 0) {
        assert_null(rest);
        assert_int_equal(wk_last_status(), WK_OK);
    } else {
        assert_non_null(rest);
        assert_int_equal(wk_comm_size(rest), N - 1);
        assert_int_equal(wk_comm_rank(rest), R - 1);
        TU_STATUS_OK(wk_barrier(rest));
        wk_comm_free(rest);
    }
}

/* ------------------------------------------------------------ block dtypes */

static wk_tensor *q8_rows(int r, int64_t rows) {
    int64_t s[2] = {rows, 64};
    wk_tensor *f = tu_values(s, 2, WK_F32, 1.0 + r, 0.25 * r);
    wk_tensor *q = TU_OK(wk_quantize(f, WK_Q8_0));
    wk_tensor_free(f);
    return q;
}

static void test_block_dtypes(void **state) {
    (void)state;
    size_t na, nb;
    /* broadcast from every root */
    for (int root = 0; root < N; root++) {
        wk_tensor *x = R == root ? q8_rows(root, 4) : NULL;
        wk_tensor *y = TU_OK(wk_broadcast(W, x, root));
        wk_tensor *e = q8_rows(root, 4);
        assert_int_equal(wk_tensor_dtype(y), WK_Q8_0);
        void *a = bytes_of(y, &na), *b = bytes_of(e, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(a);
        free(b);
        wk_tensor_free(x);
        wk_tensor_free(y);
        wk_tensor_free(e);
    }
    /* all_gather along dim 0 (uneven rows): the blocks concatenated */
    wk_tensor *x = q8_rows(R, gather_len(R));
    wk_tensor *y = TU_OK(wk_all_gather(W, x, 0));
    void *a = bytes_of(y, &na);
    size_t off = 0;
    for (int r = 0; r < N; r++) {
        wk_tensor *e = q8_rows(r, gather_len(r));
        void *b = bytes_of(e, &nb);
        assert_true(off + nb <= na);
        assert_memory_equal((char *)a + off, b, nb);
        off += nb;
        free(b);
        wk_tensor_free(e);
    }
    assert_int_equal(off, na);
    free(a);
    wk_tensor_free(y);
    /* arithmetic or the last dim: refused on every rank */
    TU_FAILS(wk_all_reduce(W, x, WK_DIST_SUM), WK_ERR_DTYPE);
    TU_FAILS(wk_reduce_scatter(W, x, 0, WK_DIST_MAX), WK_ERR_DTYPE);
    TU_FAILS(wk_all_gather(W, x, 1), WK_ERR_DTYPE);
    wk_tensor_free(x);
    /* send in a ring */
    if (N > 1) {
        int right = (R + 1) % N, left = (R + N - 1) % N;
        wk_tensor *q = q8_rows(R, 3);
        wk_tensor *got = NULL;
        if (R % 2 == 0) {
            TU_STATUS_OK(wk_send(W, q, right, 1));
            got = TU_OK(wk_recv(W, left, 1));
        } else {
            got = TU_OK(wk_recv(W, left, 1));
            TU_STATUS_OK(wk_send(W, q, right, 1));
        }
        wk_tensor *e = q8_rows(left, 3);
        a = bytes_of(got, &na);
        void *b = bytes_of(e, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(a);
        free(b);
        wk_tensor_free(e);
        wk_tensor_free(q);
        wk_tensor_free(got);
    }
    assert_true(wk_comm_ok(W));
}

/* ----------------------------------------------------------------- errors */

static void test_errors(void **state) {
    (void)state;
    int64_t s[2] = {2, 3};
    wk_tensor *x = make_input(L_CONTIG, s, 2, WK_F32, R, 0), *xi = make_input(L_CONTIG, s, 2, WK_I32, R, 0);
    TU_FAILS(wk_all_reduce(NULL, x, WK_DIST_SUM), WK_ERR_ARG);
    TU_FAILS(wk_all_reduce(W, NULL, WK_DIST_SUM), WK_ERR_ARG);
    TU_FAILS(wk_all_reduce(W, x, (wk_dist_op)99), WK_ERR_ARG);
    TU_FAILS(wk_all_gather(NULL, x, 0), WK_ERR_ARG);
    TU_FAILS(wk_all_gather(W, NULL, 0), WK_ERR_ARG);
    TU_FAILS(wk_all_gather(W, x, 2), WK_ERR_INDEX);
    TU_FAILS(wk_all_gather(W, x, -3), WK_ERR_INDEX);
    TU_FAILS(wk_reduce_scatter(W, NULL, 0, WK_DIST_SUM), WK_ERR_ARG);
    TU_FAILS(wk_reduce_scatter(W, x, 5, WK_DIST_SUM), WK_ERR_INDEX);
    TU_FAILS(wk_all_reduce(W, xi, WK_DIST_AVG), WK_ERR_DTYPE);
    TU_FAILS(wk_reduce_scatter(W, xi, 0, WK_DIST_AVG), WK_ERR_DTYPE);
    TU_FAILS(wk_broadcast(NULL, x, 0), WK_ERR_ARG);
    TU_FAILS(wk_broadcast(W, x, N), WK_ERR_ARG);
    TU_FAILS(wk_broadcast(W, x, -1), WK_ERR_ARG);
    TU_FAILS(wk_broadcast(W, NULL, R), WK_ERR_ARG); /* every rank is the root of its own call: all refuse */
    assert_int_equal(wk_send(NULL, x, 0, 0), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_send(W, NULL, (R + 1) % N, 0), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_send(W, x, R, 0), WK_ERR_ARG); /* self */
    wk_clear_error();
    assert_int_equal(wk_send(W, x, N, 0), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_send(W, x, -1, 0), WK_ERR_ARG);
    wk_clear_error();
    TU_FAILS(wk_recv(W, R, 0), WK_ERR_ARG);
    TU_FAILS(wk_recv(NULL, 0, 0), WK_ERR_ARG);
    if (N > 1) {
        assert_int_equal(wk_send(W, x, (R + 1) % N, -1), WK_ERR_ARG);
        wk_clear_error();
        assert_int_equal(wk_send(W, x, (R + 1) % N, 16384), WK_ERR_ARG);
        wk_clear_error();
        TU_FAILS(wk_recv(W, (R + 1) % N, 99999), WK_ERR_ARG);
    }
    assert_int_equal(wk_barrier(NULL), WK_ERR_ARG);
    wk_clear_error();
    assert_null(wk_all_reduce_async(NULL, x, WK_DIST_SUM));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    /* an async error comes back from wait */
    wk_dist_work *w = wk_all_reduce_async(W, xi, WK_DIST_AVG);
    assert_non_null(w);
    TU_FAILS(wk_dist_wait(w), WK_ERR_DTYPE);
    /* NCCL wants a CUDA device and an MPI / self boot communicator */
    wk_comm *bad = wk_comm_init_nccl(W, wk_cpu(), NULL);
    assert_null(bad);
    assert_int_equal(wk_last_status(), wk_dist_has_nccl() ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED);
    wk_clear_error();
    assert_null(wk_comm_init_nccl(NULL, wk_cpu(), NULL));
    assert_int_equal(wk_last_status(), wk_dist_has_nccl() ? WK_ERR_ARG : WK_ERR_NOT_COMPILED);
    wk_clear_error();
    assert_string_equal(wk_dist_op_name(WK_DIST_PROD), "prod");
    assert_string_equal(wk_dist_op_name((wk_dist_op)77), "invalid");
    assert_int_equal(wk_comm_rank(NULL), -1);
    assert_int_equal(wk_comm_size(NULL), -1);
    assert_false(wk_comm_ok(NULL));

    /* mismatched non-gather dims: rank 1 has one more column; every rank
     * fails naming another rank, and the communicator stays usable */
    if (N > 1) {
        int64_t ms[2] = {2, 3 + (R == 1)};
        wk_tensor *m = make_input(L_CONTIG, ms, 2, WK_F32, R, 0);
        wk_tensor *y = wk_all_gather(W, m, 0);
        assert_null(y);
        assert_int_equal(wk_last_status(), WK_ERR_SHAPE);
        const char *msg = wk_last_error();
        char other[32];
        snprintf(other, sizeof other, "rank %d has", R == 1 ? 0 : 1);
        if (!strstr(msg, other) || !strstr(msg, "wk_all_gather")) {
            printf("rank %d: the message should name the other rank (\"%s\"): %s\n", R, other, msg);
            fail();
        }
        wk_clear_error();
        wk_tensor_free(m);
        assert_true(wk_comm_ok(W));
        /* a non-root expecting another shape than the root sends */
        int64_t bs[2] = {2, R == 0 ? 3 : 4};
        wk_tensor *b = make_input(L_CONTIG, bs, 2, WK_F32, R, 0);
        y = wk_broadcast(W, b, 0);
        if (R == 0) {
            assert_non_null(y);
            wk_tensor_free(y);
        } else {
            TU_FAILS(y, WK_ERR_SHAPE);
        }
        wk_tensor_free(b);
        assert_true(wk_comm_ok(W));
    }
    TU_STATUS_OK(wk_barrier(W));
    wk_tensor *z = wk_all_reduce(W, x, WK_DIST_SUM);
    double *ref = reduced(L_CONTIG, s, 2, WK_F32, WK_DIST_SUM, 0, world_ranks(), N);
    expect(W, z, ref, s, 2, WK_F32, "all_reduce after errors");
    free(ref);
    wk_tensor_free(z);
    wk_tensor_free(x);
    wk_tensor_free(xi);
}

/* -------------------------------------------------------- self communicator */

static void test_self(void **state) {
    (void)state;
    wk_comm *c = wk_comm_self(&(wk_comm_opts){.timeout_s = 5});
    assert_non_null(c);
    assert_int_equal(wk_comm_rank(c), 0);
    assert_int_equal(wk_comm_size(c), 1);
    assert_int_equal(wk_comm_backend_of(c), WK_COMM_SELF);
    assert_true(wk_comm_timeout(c) == 5.0);
    assert_true(wk_comm_ok(c));
    /* a self communicator has no job to end: abort is an error, not an exit */
    wk_clear_error();
    assert_int_equal(wk_comm_abort(c, 1), WK_ERR_ARG);
    assert_int_equal(wk_comm_abort(NULL, 1), WK_ERR_ARG);
    wk_clear_error();
    int64_t s[2] = {3, 4};
    for (int d = 0; d < NDT; d++) {
        wk_tensor *x = make_input(L_TRANSPOSED, s, 2, DTS[d], 0, d);
        double ref[12];
        logical(L_TRANSPOSED, s, 2, DTS[d], 0, d, ref);
        for (int op = 0; op < WK_DIST_OP_COUNT; op++) {
            wk_tensor *y = wk_all_reduce(c, x, (wk_dist_op)op);
            if (op == WK_DIST_AVG && !wk_dtype_is_float(DTS[d])) {
                TU_FAILS(y, WK_ERR_DTYPE);
                continue;
            }
            expect(c, y, ref, s, 2, DTS[d], "self all_reduce: a copy");
            assert_false(wk_shares_storage(x, y));
            wk_tensor_free(y);
        }
        wk_tensor *y = wk_all_gather(c, x, 1);
        expect(c, y, ref, s, 2, DTS[d], "self all_gather");
        wk_tensor_free(y);
        y = wk_reduce_scatter(c, x, 0, WK_DIST_SUM);
        expect(c, y, ref, s, 2, DTS[d], "self reduce_scatter: the whole");
        wk_tensor_free(y);
        y = wk_broadcast(c, x, 0);
        expect(c, y, ref, s, 2, DTS[d], "self broadcast");
        wk_tensor_free(y);
        wk_tensor_free(x);
    }
    wk_tensor *x = make_input(L_CONTIG, s, 2, WK_F32, 0, 0);
    TU_FAILS(wk_broadcast(c, x, 1), WK_ERR_ARG);
    assert_int_equal(wk_send(c, x, 0, 0), WK_ERR_ARG);
    wk_clear_error();
    TU_FAILS(wk_recv(c, 0, 0), WK_ERR_ARG);
    TU_STATUS_OK(wk_barrier(c));
    wk_tensor *y = wk_dist_wait(wk_all_reduce_async(c, x, WK_DIST_SUM));
    assert_non_null(y);
    wk_tensor_free(y);
    wk_comm *sub = wk_comm_split(c, 3, 0);
    assert_non_null(sub);
    assert_int_equal(wk_comm_size(sub), 1);
    assert_int_equal(wk_comm_backend_of(sub), WK_COMM_SELF);
    wk_comm_free(sub);
    assert_null(wk_comm_split(c, -1, 0));
    wk_tensor_free(x);
    wk_comm_free(c);
    wk_comm_free(NULL);
}

/* ------------------------------------------------------ CUDA tensors via MPI */

static void test_cuda_through_mpi(void **state) {
    (void)state;
    if (wk_cuda_device_count() <= 0) {
        wk_clear_error();
        printf("skipped: no CUDA device (CUDA tensors through an MPI communicator)\n");
        skip();
    }
    wk_device *g = wk_cuda(0);
    int64_t s[2] = {5, 7};
    wk_tensor *h = make_input(L_TRANSPOSED, s, 2, WK_F32, R, 1);
    wk_tensor *x = tu_to_device(h, g);
    wk_tensor *y = TU_OK(wk_all_reduce(W, x, WK_DIST_SUM));
    assert_true(wk_same_device(wk_tensor_device(y), g));
    double *ref = reduced(L_TRANSPOSED, s, 2, WK_F32, WK_DIST_SUM, 1, world_ranks(), N);
    expect(W, y, ref, s, 2, WK_F32, "all_reduce of a CUDA tensor over MPI");
    free(ref);
    wk_tensor *b = TU_OK(wk_broadcast(W, x, 0));
    assert_true(wk_same_device(wk_tensor_device(b), g));
    wk_tensor *ga = TU_OK(wk_all_gather(W, x, 0));
    assert_true(wk_same_device(wk_tensor_device(ga), g));
    wk_tensor *t[] = {h, x, y, b, ga};
    for (int i = 0; i < 5; i++) wk_tensor_free(t[i]);
}

/* ------------------------------------------------------------------- NCCL */

/* One GPU per rank: the world when there are enough GPUs, else each rank
 * alone (a size-1 NCCL communicator from a split of the world). */
static void test_nccl(void **state) {
    (void)state;
    if (!wk_dist_has_nccl()) {
        printf("skipped: this wick was built without NCCL (a CUDA build with nccl.h and libnccl)\n");
        skip();
    }
    int ng = wk_cuda_device_count();
    wk_clear_error();
    if (ng <= 0) {
        printf("skipped: no CUDA device for NCCL\n");
        skip();
    }
    bool world = ng >= N;
    wk_comm *boot = world ? W : wk_comm_split(W, R, 0);
    assert_non_null(boot);
    wk_device *g = wk_cuda(world ? R : 0);
    wk_comm *nc = wk_comm_init_nccl(boot, g, NULL);
    if (!nc) {
        printf("rank %d: wk_comm_init_nccl: %s\n", R, wk_last_error());
        fail();
    }
    assert_int_equal(wk_comm_backend_of(nc), WK_COMM_NCCL);
    int nn = wk_comm_size(nc), nr = wk_comm_rank(nc);
    int members[64];
    for (int i = 0; i < nn; i++) members[i] = world ? i : R;
    int64_t s2[2] = {5, 7}, big[2] = {1024, 256};
    for (int d = 0; d < NDT; d++)
        for (int op = 0; op < WK_DIST_OP_COUNT; op++)
            for (int b = 0; b < 2; b++) {
                const int64_t *s = b ? big : s2;
                if (b && op != WK_DIST_SUM) continue;
                wk_tensor *h = make_input(b ? L_CONTIG : L_TRANSPOSED, s, 2, DTS[d], R, op);
                wk_tensor *x = tu_to_device(h, g);
                wk_tensor *y = wk_all_reduce(nc, x, (wk_dist_op)op);
                char what[96];
                snprintf(what, sizeof what, "NCCL all_reduce %s %s", wk_dist_op_name((wk_dist_op)op), wk_dtype_name(DTS[d]));
                if (op == WK_DIST_AVG && !wk_dtype_is_float(DTS[d])) {
                    TU_FAILS(y, WK_ERR_DTYPE);
                } else {
                    assert_non_null(y);
                    assert_true(wk_same_device(wk_tensor_device(y), g));
                    double *ref = reduced(b ? L_CONTIG : L_TRANSPOSED, s, 2, DTS[d], (wk_dist_op)op, op, members, nn);
                    expect(nc, y, ref, s, 2, DTS[d], what);
                    free(ref);
                }
                wk_tensor_free(h);
                wk_tensor_free(x);
                wk_tensor_free(y);
            }
    /* uneven all_gather, reduce_scatter, broadcast, send / recv, barrier, async */
    int64_t gs[2] = {nr + 1, 3};
    wk_tensor *h = make_input(L_CONTIG, gs, 2, WK_F32, nr, 1), *x = tu_to_device(h, g);
    wk_tensor *y = TU_OK(wk_all_gather(nc, x, 0));
    assert_int_equal(wk_dim(y, 0), (int64_t)nn * (nn + 1) / 2);
    wk_tensor_free(y);
    int64_t rs[2] = {nn + 1, 3};
    wk_tensor *h2 = make_input(L_CONTIG, rs, 2, WK_F32, R, 2), *x2 = tu_to_device(h2, g);
    y = TU_OK(wk_reduce_scatter(nc, x2, 0, WK_DIST_SUM));
    int64_t cs = (nn + 1 + nn - 1) / nn, lo = nr * cs < nn + 1 ? nr * cs : nn + 1;
    assert_int_equal(wk_dim(y, 0), lo + cs > nn + 1 ? nn + 1 - lo : cs);
    wk_tensor_free(y);
    y = TU_OK(wk_broadcast(nc, nr == 0 ? x2 : NULL, 0));
    double *ref = malloc(sizeof(double) * (size_t)wk_numel(x2));
    logical(L_CONTIG, rs, 2, WK_F32, members[0], 2, ref);
    expect(nc, y, ref, rs, 2, WK_F32, "NCCL broadcast");
    free(ref);
    wk_tensor_free(y);
    if (nn > 1) {
        int right = (nr + 1) % nn, left = (nr + nn - 1) % nn;
        wk_tensor *got;
        if (nr % 2 == 0) {
            TU_STATUS_OK(wk_send(nc, x2, right, 0));
            got = TU_OK(wk_recv(nc, left, 0));
        } else {
            got = TU_OK(wk_recv(nc, left, 0));
            TU_STATUS_OK(wk_send(nc, x2, right, 0));
        }
        tu_assert_shape(got, rs, 2);
        wk_tensor_free(got);
    }
    TU_STATUS_OK(wk_barrier(nc));
    wk_dist_work *w1 = wk_all_reduce_async(nc, x2, WK_DIST_MAX), *w2 = wk_all_gather_async(nc, x, 0);
    wk_tensor *y1 = TU_OK(wk_dist_wait(w1)), *y2 = TU_OK(wk_dist_wait(w2));
    wk_tensor_free(y1);
    wk_tensor_free(y2);
    wk_tensor *t[] = {h, x, h2, x2};
    for (int i = 0; i < 4; i++) wk_tensor_free(t[i]);
    wk_comm_free(nc);
    if (!world) wk_comm_free(boot);
}

int main(int argc, char **argv) {
    W = wk_comm_init_mpi(&argc, &argv, NULL);
    if (!W && wk_last_status() == WK_ERR_NOT_COMPILED) {
        /* a build without MPI (the GPU machine's): everything on a world of
         * one, the self communicator, so the NCCL section still runs */
        printf("no MPI in this build (%s): the tests run on wk_comm_self\n", wk_last_error());
        wk_clear_error();
        W = wk_comm_self(NULL);
    }
    if (!W) {
        fprintf(stderr, "wk_comm_init_mpi: %s\n", wk_last_error());
        return 1;
    }
    R = wk_comm_rank(W);
    N = wk_comm_size(W);
    if (N > 64) return 1; /* the test's own tables */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_self, same_results),
        cmocka_unit_test_teardown(test_barrier, same_results),
        cmocka_unit_test_teardown(test_all_reduce_small, same_results),
        cmocka_unit_test_teardown(test_all_reduce_big, same_results),
        cmocka_unit_test_teardown(test_all_gather, same_results),
        cmocka_unit_test_teardown(test_reduce_scatter, same_results),
        cmocka_unit_test_teardown(test_broadcast, same_results),
        cmocka_unit_test_teardown(test_send_recv_ring, same_results),
        cmocka_unit_test_teardown(test_async, same_results),
        cmocka_unit_test_teardown(test_async_p2p, same_results),
        cmocka_unit_test_teardown(test_async_exchange, same_results),
        cmocka_unit_test_teardown(test_async_recv_first, same_results),
        cmocka_unit_test_teardown(test_split, same_results),
        cmocka_unit_test_teardown(test_block_dtypes, same_results),
        cmocka_unit_test_teardown(test_errors, same_results),
        cmocka_unit_test_teardown(test_cuda_through_mpi, same_results),
        cmocka_unit_test_teardown(test_nccl, same_results),
    };
    int fails = cmocka_run_group_tests(tests, NULL, NULL);
    printf("rank %d of %d: %ld results matched the reference bit for bit on every rank\n", R, N, g_checked);
    wk_comm_free(W);
    return fails ? 1 : 0;
}
