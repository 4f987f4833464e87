/* A deterministic fuzz of the public API (fixed-seed xorshift): thousands of
 * random calls with random shapes (rank 0-9, dims -2..6, now and then 1<<40),
 * dims (-10..10), dtypes (including invalid values), op enums (including
 * out-of-range ones), NULL tensors, indices, reshape shapes, matmuls, cats of
 * mismatched tensors, reductions with repeated / out-of-range dims, short
 * readback buffers, in-place writes through views, scopes and references.
 *
 * The only outcomes allowed: a call succeeds (and leaves no error pending,
 * and returns a sane tensor), or it fails cleanly (NULL / non-OK, with
 * wk_last_status() != WK_OK and a non-empty wk_last_error()). No crash, no
 * sanitizer report, no leak: every tensor is freed and the CPU allocator's
 * bytes_in_use returns to where it started.
 *
 * Tensors kept between calls are small (at most CAP_NUMEL elements, no dim
 * above 1<<20) so that no random combination does a huge amount of work;
 * huge shapes only ever reach calls that must reject them or that make
 * views (which are dropped at once). */
#include "testutil.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Out-of-memory must be a clean error here, also under ASan. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#define POOL 24
#define CAP_NUMEL 1024
#define MAX_WORK (INT64_C(1) << 20) /* elements an op may produce when we can predict it */

static wk_tensor *g_pool[POOL];
static uint64_t g_rng;
static uint64_t g_seed;
static int g_iter;
static int g_scope_depth;
static uint64_t g_calls, g_ok;

/* ------------------------------------------------------------ randomness */

static uint64_t xr(void) {
    uint64_t x = g_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return g_rng = x;
}
/* uniform in [lo, hi] */
static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(xr() % (uint64_t)(hi - lo + 1)); }
static bool chance(int percent) { return rnd(0, 99) < percent; }

static const int64_t k_extreme[] = {INT64_MIN, INT64_MIN + 1, -(INT64_C(1) << 40), -1000, 1000,
                                    INT64_C(1) << 40, INT64_MAX - 1, INT64_MAX};
static int64_t rand_index(void) {
    if (chance(5)) return k_extreme[rnd(0, (int64_t)(sizeof k_extreme / sizeof k_extreme[0]) - 1)];
    return rnd(-8, 8);
}
static int rand_dimarg(void) {
    if (chance(3)) return chance(50) ? INT_MIN : INT_MAX;
    return (int)rnd(-10, 10);
}
static wk_dtype rand_dtype(void) {
    if (chance(6)) {
        const int bad[] = {WK_DTYPE_COUNT, 99, -1, INT_MAX, 11};
        return (wk_dtype)bad[rnd(0, 4)];
    }
    if (chance(40)) return WK_F32;
    return (wk_dtype)rnd(0, WK_DTYPE_COUNT - 1);
}
static double rand_value(void) {
    static const double v[] = {0, 1, -1, 0.5, 2, -3.25, 100, 1e10, -1e10, 448, 65504, 1e300};
    if (chance(5)) return chance(50) ? NAN : (chance(50) ? INFINITY : -INFINITY);
    return v[rnd(0, (int64_t)(sizeof v / sizeof v[0]) - 1)];
}
static int64_t rand_dim_size(void) {
    if (chance(2)) return INT64_C(1) << 40;
    return rnd(-2, 6);
}
/* Any shape: rank 0..9 (rarely -1), dims -2..6, now and then 1<<40. */
static int rand_shape_any(int64_t *s) {
    int r = (int)rnd(0, 9);
    if (chance(2)) r = -1;
    for (int i = 0; i < 12; i++) s[i] = rand_dim_size();
    return r;
}
/* A mostly valid, small shape: rank 0..4, dims 0..4 (mostly >= 1). */
static int rand_shape_small(int64_t *s) {
    int r = (int)rnd(0, 4);
    for (int i = 0; i < 12; i++) s[i] = chance(8) ? 0 : rnd(1, 4);
    return r;
}
static wk_device *rand_device(void) { return chance(3) ? NULL : wk_cpu(); }

/* ------------------------------------------------------------ checking */

static void fail_here(int line, const char *expr, const char *why) {
    fail_msg("seed %llu iteration %d, line %d: %s: %s (status %s, error \"%s\")", (unsigned long long)g_seed, g_iter,
             line, expr, why, wk_status_name(wk_last_status()), wk_last_error());
}

static bool sane_tensor(const wk_tensor *t) {
    int r = wk_rank(t);
    if (r < 0 || r > WK_MAX_RANK) return false;
    int64_t n = 1;
    for (int i = 0; i < r; i++) {
        if (wk_shape(t)[i] < 0) return false;
        n *= wk_shape(t)[i] ? wk_shape(t)[i] : 0;
        if (wk_shape(t)[i] == 0) n = 0;
    }
    if (wk_numel(t) != n) return false;
    const wk_dtype_info *di = wk_dtype_info_of(wk_tensor_dtype(t));
    if (!di) return false;
    /* a block dtype: rows of whole blocks */
    if (di->block_elems > 1 && (r < 1 || wk_shape(t)[r - 1] % di->block_elems)) return false;
    if (wk_tensor_device(t) != wk_cpu()) return false;
    return true;
}

static wk_tensor *check_t(wk_tensor *r, const char *expr, int line) {
    g_calls++;
    if (!r) {
        if (wk_last_status() == WK_OK) fail_here(line, expr, "returned NULL with no error status");
        if (!wk_last_error()[0]) fail_here(line, expr, "returned NULL with an empty error message");
        return NULL;
    }
    g_ok++;
    if (wk_last_status() != WK_OK) fail_here(line, expr, "succeeded but left an error pending");
    if (!sane_tensor(r)) fail_here(line, expr, "returned a tensor with an impossible shape/dtype");
    return r;
}

static wk_status check_s(wk_status st, const char *expr, int line) {
    g_calls++;
    if (st == WK_OK) {
        g_ok++;
        if (wk_last_status() != WK_OK) fail_here(line, expr, "returned OK but left an error pending");
        return st;
    }
    if ((unsigned)st > WK_ERR_INTERNAL) fail_here(line, expr, "returned an unknown status");
    if (st == WK_ERR_INTERNAL) fail_here(line, expr, "internal error");
    if (wk_last_status() != st) fail_here(line, expr, "returned status differs from wk_last_status()");
    if (!wk_last_error()[0]) fail_here(line, expr, "failed with an empty error message");
    return st;
}

/* Clear, call, check. */
#define T(expr) (wk_clear_error(), check_t((expr), #expr, __LINE__))
#define S(expr) (wk_clear_error(), check_s((expr), #expr, __LINE__))

/* ------------------------------------------------------------ the pool */

static bool small_enough(const wk_tensor *t) {
    if (wk_numel(t) > CAP_NUMEL) return false;
    for (int i = 0; i < wk_rank(t); i++)
        if (wk_shape(t)[i] > (1 << 20)) return false;
    return true;
}

/* Pool entries replaced during an action are freed after it (an action may
 * still hold the replaced tensor as an input). */
static wk_tensor *g_grave[512];
static int g_ngrave;
static void bury(wk_tensor *t) {
    if (!t) return;
    if (g_ngrave == (int)(sizeof g_grave / sizeof g_grave[0])) fail_msg("graveyard full");
    g_grave[g_ngrave++] = t;
}
static void flush_grave(void) {
    while (g_ngrave > 0) wk_tensor_free(g_grave[--g_ngrave]);
}

/* Store r in the pool (small results) or drop it. Inside a scope a result may
 * also be left to the scope. */
static void consume(wk_tensor *r) {
    if (!r) return;
    if (g_scope_depth > 0) {
        int64_t c = rnd(0, 2);
        if (c == 0) return;                      /* the scope frees it */
        if (c == 1) { wk_tensor_free(r); return; }
        wk_keep(r);
    }
    if (small_enough(r) && chance(70)) {
        int k = (int)rnd(0, POOL - 1);
        bury(g_pool[k]); /* the caller may still use it */
        g_pool[k] = r;
    } else {
        wk_tensor_free(r);
    }
}

static wk_tensor *pick(void) {
    if (chance(4)) return NULL;
    return g_pool[rnd(0, POOL - 1)];
}

/* Prefer a pool tensor with the given dtype (for ops that need two alike). */
static wk_tensor *pick_like(const wk_tensor *a) {
    if (!a || chance(25)) return pick();
    int start = (int)rnd(0, POOL - 1);
    for (int i = 0; i < POOL; i++) {
        wk_tensor *t = g_pool[(start + i) % POOL];
        if (t && wk_tensor_dtype(t) == wk_tensor_dtype(a)) return t;
    }
    return pick();
}

/* numpy broadcast element count of up to 3 tensors, -1 if they do not broadcast
 * (or are NULL). */
static int64_t bcast_numel(wk_tensor *const *ts, int n) {
    int r = 0;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) return -1;
        if (wk_rank(ts[i]) > r) r = wk_rank(ts[i]);
    }
    int64_t total = 1;
    for (int d = 0; d < r; d++) {
        int64_t size = 1;
        for (int i = 0; i < n; i++) {
            int ri = wk_rank(ts[i]), k = d - (r - ri);
            int64_t s = k < 0 ? 1 : wk_shape(ts[i])[k];
            if (s == 1) continue;
            if (size != 1 && size != s) return -1;
            size = s;
        }
        if (size == 0) return 0;
        if (total > INT64_MAX / size) return INT64_MAX;
        total *= size;
    }
    return total;
}

/* ------------------------------------------------------------ actions */

static void act_create(void) {
    int64_t s[16];
    int rank = chance(65) ? rand_shape_small(s) : rand_shape_any(s);
    wk_dtype dt = rand_dtype();
    wk_device *dev = rand_device();
    switch (rnd(0, 10)) {
    case 0: consume(T(wk_zeros(s, rank, dt, dev))); break;
    case 1: consume(T(wk_ones(s, rank, dt, dev))); break;
    case 2: consume(T(wk_full(s, rank, rand_value(), dt, dev))); break;
    case 3: {
        wk_tensor *e = T(wk_empty(s, rank, dt, dev));
        if (e) S(wk_fill_(e, rand_value())); /* must be written before read */
        consume(e);
        break;
    }
    case 4: consume(T(wk_rand(s, rank, rand_value(), rand_value(), dt, dev))); break;
    case 5: consume(T(wk_randn(s, rank, rand_value(), chance(80) ? 1.0 : rand_value(), dt, dev))); break;
    case 6: {
        /* from_host: exact size, or off by a little; the buffer always holds nbytes */
        size_t es = wk_dtype_size(dt);
        int64_t n = 1;
        bool valid = rank >= 0 && rank <= WK_MAX_RANK;
        for (int i = 0; valid && i < rank; i++) {
            if (s[i] < 0 || s[i] > 64) valid = false;
            else n *= s[i];
        }
        size_t nbytes = valid && n <= 4 * CAP_NUMEL ? (size_t)n * (es ? es : 1) : (size_t)rnd(0, 64);
        if (chance(20)) {
            int64_t off = rnd(-3, 3);
            nbytes = (int64_t)nbytes + off < 0 ? 0 : (size_t)((int64_t)nbytes + off);
        }
        unsigned char *buf = malloc(nbytes ? nbytes : 1);
        assert_non_null(buf);
        for (size_t i = 0; i < nbytes; i++) buf[i] = (unsigned char)xr();
        consume(T(wk_from_host(chance(3) ? NULL : buf, nbytes, chance(3) ? NULL : s, rank, dt, dev)));
        free(buf);
        break;
    }
    case 7: {
        static const double starts[] = {0, 1, -3, 2.5, -0.5, 10};
        static const double steps[] = {1, -1, 2, 0.3, -0.25, 0, 3, -2};
        double a = starts[rnd(0, 5)], b = starts[rnd(0, 5)] * (chance(50) ? 1 : -1), st = steps[rnd(0, 7)];
        if (chance(5)) b = chance(50) ? 1e15 : 1e300; /* too many elements: a clean error */
        if (chance(3)) st = NAN;
        if (chance(3)) a = INFINITY;
        consume(T(wk_arange(a, b, st, dt, dev)));
        break;
    }
    case 8: {
        int64_t n = chance(90) ? rnd(-2, 6) : (chance(50) ? INT64_C(1) << 40 : INT64_C(1) << 22);
        consume(T(wk_eye(n, dt, dev)));
        break;
    }
    case 9: consume(T(wk_zeros_like(pick()))); break;
    default: consume(T(wk_ones_like(pick()))); break;
    }
}

static void act_elementwise(void) {
    wk_tensor *a = pick();
    switch (rnd(0, 9)) {
    case 0: {
        int op = chance(90) ? (int)rnd(0, WK_UNARY_COUNT - 1) : (int)rnd(-3, 40);
        consume(T(wk_unary(a, (wk_unary_op)op)));
        (void)wk_unary_name((wk_unary_op)op);
        break;
    }
    case 1: case 2: {
        wk_tensor *b = pick_like(a);
        wk_tensor *ab[2] = {a, b};
        int64_t n = bcast_numel(ab, 2);
        if (n > MAX_WORK) break;
        int op = chance(92) ? (int)rnd(0, WK_BINARY_COUNT - 1) : (int)rnd(-3, 20);
        consume(T(wk_binary(a, b, (wk_binary_op)op)));
        (void)wk_binary_name((wk_binary_op)op);
        break;
    }
    case 3: {
        int op = chance(92) ? (int)rnd(0, WK_BINARY_COUNT - 1) : (int)rnd(-3, 20);
        consume(T(wk_binary_scalar(a, rand_value(), (wk_binary_op)op)));
        break;
    }
    case 4: {
        wk_tensor *b = pick_like(a);
        wk_tensor *ab[2] = {a, b};
        if (bcast_numel(ab, 2) > MAX_WORK) break;
        int op = chance(92) ? (int)rnd(0, WK_CMP_COUNT - 1) : (int)rnd(-3, 20);
        consume(T(wk_cmp(a, b, (wk_cmp_op)op)));
        (void)wk_cmp_name((wk_cmp_op)op);
        break;
    }
    case 5: {
        int op = chance(92) ? (int)rnd(0, WK_CMP_COUNT - 1) : (int)rnd(-3, 20);
        consume(T(wk_cmp_scalar(a, rand_value(), (wk_cmp_op)op)));
        break;
    }
    case 6: {
        wk_tensor *c = pick(), *b = pick_like(a);
        wk_tensor *cab[3] = {c, a, b};
        if (bcast_numel(cab, 3) > MAX_WORK) break;
        consume(T(wk_where(c, a, b)));
        break;
    }
    case 7: consume(T(wk_affine(a, rand_value(), rand_value()))); break;
    case 8: consume(T(wk_powf(a, rand_value()))); consume(T(wk_elu(a, rand_value()))); break;
    default: {
        double lo = rand_value(), hi = chance(70) ? lo + fabs(rand_value()) : rand_value();
        consume(T(wk_clamp(a, lo, hi)));
        break;
    }
    }
}

static void act_reduce(void) {
    wk_tensor *a = pick();
    int dims[16];
    int rank = a ? wk_rank(a) : 4;
    int nd = (int)rnd(-1, 9);
    for (int i = 0; i < 16; i++)
        dims[i] = chance(70) && rank > 0 ? (int)rnd(-rank, rank - 1) : rand_dimarg();
    bool keep = chance(50);
    switch (rnd(0, 3)) {
    case 0: {
        int op = chance(92) ? (int)rnd(0, WK_REDUCE_COUNT - 1) : (int)rnd(-3, 20);
        consume(T(wk_reduce(a, (wk_reduce_op)op, chance(3) ? NULL : dims, nd, keep)));
        break;
    }
    case 1: consume(T(wk_argmax(a, dims[0], keep))); consume(T(wk_argmin(a, dims[1], keep))); break;
    case 2: consume(T(wk_sum(a, dims, nd < 0 ? 0 : nd, keep))); consume(T(wk_mean(a, dims, 1, keep))); break;
    default:
        switch (rnd(0, 3)) {
        case 0: consume(T(wk_sum_all(a))); break;
        case 1: consume(T(wk_mean_all(a))); break;
        case 2: consume(T(wk_max_all(a))); break;
        default: consume(T(wk_min_all(a))); break;
        }
    }
}

static void act_view(void) {
    wk_tensor *a = pick();
    switch (rnd(0, 12)) {
    case 0: consume(T(wk_narrow(a, rand_dimarg(), rand_index(), rand_index()))); break;
    case 1: consume(T(wk_select(a, rand_dimarg(), rand_index()))); break;
    case 2: consume(T(wk_transpose(a, rand_dimarg(), rand_dimarg()))); break;
    case 3: consume(T(wk_t(a))); break;
    case 4: {
        int p[16];
        int r = a && chance(70) ? wk_rank(a) : (int)rnd(-1, 9);
        for (int i = 0; i < 16; i++) p[i] = i;
        for (int i = 15; i > 0; i--) { int j = (int)rnd(0, i), x = p[i]; p[i] = p[j]; p[j] = x; }
        if (r > 0 && chance(60)) { /* a valid permutation of 0..r-1 */
            for (int i = 0; i < r; i++) p[i] = i;
            for (int i = r - 1; i > 0; i--) { int j = (int)rnd(0, i), x = p[i]; p[i] = p[j]; p[j] = x; }
            if (chance(30)) p[rnd(0, r - 1)] -= r; /* negative spelling */
        }
        if (chance(10)) p[0] = rand_dimarg();
        consume(T(wk_permute(a, chance(3) ? NULL : p, r)));
        break;
    }
    case 5: consume(T(wk_squeeze(a, rand_dimarg()))); break;
    case 6: consume(T(wk_unsqueeze(a, rand_dimarg()))); break;
    case 7: consume(T(wk_flatten(a, rand_dimarg(), rand_dimarg()))); break;
    case 8: consume(T(wk_flatten_all(a))); break;
    case 9: consume(T(wk_contiguous(a))); break;
    case 10: consume(T(wk_copy(a))); break;
    case 11: consume(T(wk_to_dtype(a, rand_dtype()))); break;
    default: consume(T(wk_to_device(a, rand_device()))); break;
    }
}

static void act_reshape(void) {
    wk_tensor *a = pick();
    int64_t s[16];
    int rank;
    if (a && chance(60)) {
        /* a factorisation of numel, with maybe a -1 and maybe a wrong factor */
        int64_t n = wk_numel(a);
        rank = (int)rnd(0, 5);
        int64_t rest = n;
        for (int i = 0; i < rank; i++) {
            int64_t f = 1;
            for (int64_t c = rnd(1, 4); c >= 1; c--)
                if (rest % c == 0 && c > 1) { f = c; break; }
            s[i] = i == rank - 1 ? rest : f;
            rest = f ? rest / f : rest;
        }
        if (rank == 0 && n != 1 && chance(50)) { rank = 1; s[0] = n; }
        if (rank > 0 && chance(40)) s[rnd(0, rank - 1)] = -1;
        if (rank > 0 && chance(15)) s[rnd(0, rank - 1)] = rand_dim_size();
    } else {
        rank = rand_shape_any(s);
        if (rank > 0 && chance(30)) s[rnd(0, rank - 1)] = -1;
        if (rank > 1 && chance(10)) s[0] = s[1] = -1;
    }
    consume(T(wk_reshape(a, chance(3) ? NULL : s, rank)));
}

static void act_broadcast(void) {
    wk_tensor *a = pick();
    int64_t s[16];
    int rank;
    if (a && chance(60)) {
        /* a compatible target: stretch size-1 dims, add leading dims */
        int r = wk_rank(a), lead = (int)rnd(0, 3);
        rank = r + lead;
        for (int i = 0; i < lead; i++) s[i] = rnd(0, 3);
        for (int i = 0; i < r; i++) s[lead + i] = wk_shape(a)[i] == 1 ? rnd(0, 4) : wk_shape(a)[i];
        if (chance(10) && rank > 0) s[rnd(0, rank - 1)] = rand_dim_size();
    } else {
        rank = rand_shape_any(s);
    }
    if (chance(50)) consume(T(wk_broadcast_as(a, chance(3) ? NULL : s, rank)));
    else consume(T(wk_broadcast_left(a, s, (int)rnd(-1, 4))));
}

static void act_split(void) {
    wk_tensor *a = pick();
    if (chance(50)) {
        int n = chance(90) ? (int)rnd(-2, 12) : (chance(50) ? 300 : INT_MIN);
        int cap = n > 0 ? n : 1;
        wk_tensor **out = calloc((size_t)cap, sizeof *out);
        assert_non_null(out);
        int count = -7;
        wk_status st = S(wk_chunk(a, n, rand_dimarg(), chance(3) ? NULL : out, &count));
        if (st == WK_OK) {
            if (count < 1 || count > cap) fail_here(__LINE__, "wk_chunk", "bad chunk count");
            for (int i = 0; i < count; i++) {
                if (!out[i] || !sane_tensor(out[i])) fail_here(__LINE__, "wk_chunk", "bad chunk");
                consume(out[i]);
            }
        }
        free(out);
    } else {
        int n = (int)rnd(-1, 5);
        int64_t sizes[8];
        int d = a && wk_rank(a) > 0 && chance(70) ? (int)rnd(0, wk_rank(a) - 1) : rand_dimarg();
        int64_t total = a && d >= 0 && d < wk_rank(a) ? wk_shape(a)[d] : 4;
        for (int i = 0; i < 8; i++) {
            sizes[i] = i == n - 1 ? total : (total > 0 ? rnd(0, total) : 0);
            total -= sizes[i] < total ? sizes[i] : total;
        }
        if (chance(20)) sizes[rnd(0, 7)] = rand_index();
        wk_tensor *out[8] = {NULL};
        wk_status st = S(wk_split(a, sizes, n, d, chance(3) ? NULL : out));
        if (st == WK_OK)
            for (int i = 0; i < n; i++) {
                if (!out[i] || !sane_tensor(out[i])) fail_here(__LINE__, "wk_split", "bad piece");
                consume(out[i]);
            }
    }
}

static void act_join(void) {
    wk_tensor *ts[6];
    int n = (int)rnd(-1, 5);
    ts[0] = pick();
    for (int i = 1; i < 6; i++) ts[i] = chance(60) ? ts[0] : pick_like(ts[0]);
    if (chance(50)) consume(T(wk_cat(chance(3) ? NULL : ts, n, rand_dimarg())));
    else consume(T(wk_stack(chance(3) ? NULL : ts, n, rand_dimarg())));
}

/* Naive check of a successful matmul of small float tensors. */
static void verify_matmul(const wk_tensor *a, const wk_tensor *b, const wk_tensor *c) {
    wk_dtype dt = wk_tensor_dtype(c);
    if (dt != WK_F32 && dt != WK_F64) return;
    int r = wk_rank(c);
    if (wk_rank(a) != r || wk_rank(b) != r) return;
    int64_t m = wk_dim(a, -2), k = wk_dim(a, -1), n = wk_dim(b, -1), nb = wk_numel(c) / (m * n > 0 ? m * n : 1);
    if (wk_numel(c) == 0) return;
    double *x = malloc(sizeof(double) * (size_t)(wk_numel(a) + 1)), *y = malloc(sizeof(double) * (size_t)(wk_numel(b) + 1));
    double *z = malloc(sizeof(double) * (size_t)wk_numel(c));
    assert_true(x && y && z);
    assert_int_equal(wk_to_host_f64(a, x, (size_t)wk_numel(a)), WK_OK);
    assert_int_equal(wk_to_host_f64(b, y, (size_t)wk_numel(b)), WK_OK);
    assert_int_equal(wk_to_host_f64(c, z, (size_t)wk_numel(c)), WK_OK);
    for (int64_t q = 0; q < nb; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    double t = x[q * m * k + i * k + p] * y[q * k * n + p * n + j];
                    s += t;
                    mag += fabs(t);
                }
                double g = z[q * m * n + i * n + j];
                if (isnan(s) || isinf(mag)) continue;
                if (fabs(g - s) > 1e-4 * mag + 1e-6) fail_here(__LINE__, "wk_matmul", "wrong value");
            }
    free(x);
    free(y);
    free(z);
}

/* The same values as x (rank >= 2), stored with its last two dims swapped. */
static wk_tensor *transposed_storage(wk_tensor *x) {
    wk_tensor *v = T(wk_t(x));
    wk_tensor *c = T(wk_contiguous(v));
    wk_tensor *r = T(wk_t(c));
    wk_tensor_free(c);
    wk_tensor_free(v);
    if (r && wk_is_contiguous(r) && wk_dim(r, -1) > 1 && wk_dim(r, -2) > 1)
        fail_here(__LINE__, "transposed_storage", "a transposed copy should not be contiguous");
    return r;
}

static void act_matmul(void) {
    if (chance(40)) {
        wk_tensor *a = pick(), *b = pick_like(a);
        if (a && b && wk_numel(a) * wk_numel(b) > MAX_WORK) return;
        consume(T(chance(50) ? wk_matmul(a, b) : wk_broadcast_matmul(a, b)));
        return;
    }
    /* compatible shapes, strided operands */
    int nbatch = (int)rnd(0, 2);
    int64_t sa[8], sb[8];
    for (int i = 0; i < nbatch; i++) sa[i] = sb[i] = rnd(0, 3);
    int64_t m = rnd(0, 5), k = rnd(0, 5), n = rnd(0, 5);
    if (chance(10)) k = rnd(0, 40);
    sa[nbatch] = m;
    sa[nbatch + 1] = k;
    sb[nbatch] = k;
    sb[nbatch + 1] = n;
    bool bcast = chance(30);
    if (bcast && nbatch > 0) sb[0] = 1;
    if (chance(10)) sb[nbatch] += rnd(-1, 1); /* maybe an inner mismatch */
    wk_dtype dt = chance(70) ? (chance(50) ? WK_F32 : WK_F64) : rand_dtype();
    wk_tensor *a = T(wk_randn(sa, nbatch + 2, 0, 1, dt, wk_cpu()));
    wk_tensor *b = T(wk_randn(sb, nbatch + 2, 0, 1, dt, wk_cpu()));
    wk_tensor *at = a && chance(30) ? transposed_storage(a) : NULL;
    wk_tensor *bt = b && chance(30) ? transposed_storage(b) : NULL;
    wk_tensor *ua = at ? at : a, *ub = bt ? bt : b;
    wk_tensor *c = bcast ? T(wk_broadcast_matmul(ua, ub)) : T(wk_matmul(ua, ub));
    if (c && !bcast) verify_matmul(ua, ub, c);
    wk_tensor_free(c);
    wk_tensor_free(bt);
    wk_tensor_free(at);
    wk_tensor_free(b);
    wk_tensor_free(a);
}

static void act_readback(void) {
    wk_tensor *a = pick();
    size_t es = a ? wk_dtype_size(wk_tensor_dtype(a)) : 4;
    int64_t n = a ? wk_numel(a) : 3;
    int64_t claim = n + (chance(30) ? rnd(-3, 2) : 0);
    if (claim < 0) claim = 0;
    switch (rnd(0, 4)) {
    case 0: {
        size_t nb = (size_t)claim * es;
        if (chance(10) && nb) nb -= 1; /* not a whole number of elements */
        unsigned char *buf = malloc(nb ? nb : 1);
        assert_non_null(buf);
        S(wk_to_host(a, chance(3) ? NULL : buf, nb));
        free(buf);
        break;
    }
    case 1: {
        float *buf = malloc(sizeof(float) * (size_t)(claim ? claim : 1));
        assert_non_null(buf);
        S(wk_to_host_f32(a, chance(3) ? NULL : buf, (size_t)claim));
        free(buf);
        break;
    }
    case 2: {
        double *buf = malloc(sizeof(double) * (size_t)(claim ? claim : 1));
        assert_non_null(buf);
        S(wk_to_host_f64(a, chance(3) ? NULL : buf, (size_t)claim));
        free(buf);
        break;
    }
    case 3: {
        double v;
        S(wk_item(a, chance(3) ? NULL : &v));
        break;
    }
    default: {
        int64_t idx[16];
        for (int i = 0; i < 16; i++) {
            int64_t size = a && i < wk_rank(a) ? wk_shape(a)[i] : 3;
            idx[i] = chance(80) && size > 0 ? rnd(-size, size - 1) : rand_index();
        }
        double v;
        S(wk_get(a, chance(3) ? NULL : idx, chance(3) ? NULL : &v));
        break;
    }
    }
}

static void act_inplace(void) {
    wk_tensor *a = pick();
    switch (rnd(0, 4)) {
    case 0: S(wk_fill_(a, rand_value())); break;
    case 1: S(chance(50) ? wk_zero_(a) : wk_one_(a)); break;
    case 2: {
        wk_tensor *b = chance(30) ? a : pick_like(a);
        S(wk_copy_(a, b));
        break;
    }
    default: {
        wk_tensor *b = pick_like(a);
        if (a && chance(50)) { /* a slice of a itself, or of a same-shaped copy */
            int r = wk_rank(a);
            if (r > 0) {
                int d = (int)rnd(0, r - 1);
                int64_t size = wk_shape(a)[d];
                int64_t st = rnd(0, size), len = rnd(0, size - st);
                wk_tensor *src = T(wk_narrow(a, d, st, len));
                S(wk_slice_set(a, src, chance(80) ? d : rand_dimarg(), chance(80) ? rnd(0, size - len) : rand_index()));
                wk_tensor_free(src);
                break;
            }
        }
        S(wk_slice_set(a, b, rand_dimarg(), rand_index()));
        break;
    }
    }
}

static void act_misc(void) {
    switch (rnd(0, 9)) {
    case 0: { /* drop a pool entry */
        int k = (int)rnd(0, POOL - 1);
        bury(g_pool[k]);
        g_pool[k] = NULL;
        break;
    }
    case 1: { /* references */
        wk_tensor *a = pick();
        wk_tensor *r = wk_tensor_retain(a);
        if (r != a) fail_here(__LINE__, "wk_tensor_retain", "did not return its argument");
        wk_tensor_free(r);
        break;
    }
    case 2: { /* queries on anything */
        wk_tensor *a = pick();
        char buf[48];
        wk_tensor_describe(a, buf, (size_t)rnd(0, 47));
        (void)wk_dim(a, rand_dimarg());
        (void)wk_is_contiguous(a);
        (void)wk_shares_storage(a, pick());
        (void)wk_offset(a);
        (void)wk_tensor_id(a);
        (void)wk_dtype_name(rand_dtype());
        (void)wk_dtype_size(rand_dtype());
        (void)wk_status_name((wk_status)rnd(-2, 20));
        break;
    }
    case 3: {
        wk_clear_error();
        {   /* with the CUDA backend compiled in and no usable GPU: WK_ERR_DEVICE */
            bool cuda_in = strstr(wk_backends(), "cuda") != NULL;
            wk_device *cu = wk_cuda((int)rnd(-2, 3));
            if (cu ? !cuda_in
                   : (wk_last_status() != (cuda_in ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED) || !wk_last_error()[0]))
                fail_here(__LINE__, "wk_cuda", "expected WK_ERR_NOT_COMPILED (WK_ERR_DEVICE with CUDA compiled in)");
        }
        wk_clear_error();
        if (wk_metal((int)rnd(-2, 3)) || wk_last_status() != WK_ERR_NOT_COMPILED || !wk_last_error()[0])
            fail_here(__LINE__, "wk_metal", "expected WK_ERR_NOT_COMPILED");
        break;
    }
    case 4:
        S(wk_device_synchronize(rand_device()));
        S(wk_device_set_seed(rand_device(), xr()));
        break;
    case 5: { /* the same value of every tensor, read through a contiguous copy */
        wk_tensor *a = pick();
        if (!a || wk_numel(a) == 0) break;
        wk_tensor *c = T(wk_contiguous(a));
        double *x = malloc(sizeof(double) * (size_t)wk_numel(a)), *y = malloc(sizeof(double) * (size_t)wk_numel(a));
        assert_true(x && y && c);
        S(wk_to_host_f64(a, x, (size_t)wk_numel(a)));
        S(wk_to_host_f64(c, y, (size_t)wk_numel(a)));
        for (int64_t i = 0; i < wk_numel(a); i++)
            if (!(x[i] == y[i] || (isnan(x[i]) && isnan(y[i])))) fail_here(__LINE__, "wk_contiguous", "values differ");
        free(x);
        free(y);
        wk_tensor_free(c);
        break;
    }
    default: act_create(); break;
    }
}

static void step(void);

static void act_scope(void) {
    if (g_scope_depth >= 3) return;
    wk_scope_begin();
    g_scope_depth++;
    int n = (int)rnd(0, 8);
    for (int i = 0; i < n; i++) step();
    g_scope_depth--;
    wk_scope_end();
}

static void step(void) {
    switch (rnd(0, 15)) {
    case 0: case 1: act_create(); break;
    case 2: case 3: act_elementwise(); break;
    case 4: act_reduce(); break;
    case 5: case 6: act_view(); break;
    case 7: act_reshape(); break;
    case 8: act_broadcast(); break;
    case 9: act_split(); break;
    case 10: act_join(); break;
    case 11: act_matmul(); break;
    case 12: act_readback(); break;
    case 13: act_inplace(); break;
    case 14: act_scope(); break;
    default: act_misc(); break;
    }
}

static void run_seed(uint64_t seed, int iters) {
    g_seed = seed;
    g_rng = seed ? seed : 1;
    for (int i = 0; i < 8; i++) xr();
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), seed));
    wk_cpu_mem_stats before, after;
    wk_cpu_mem_stats_get(&before);
    for (g_iter = 0; g_iter < iters; g_iter++) {
        step();
        flush_grave();
    }
    for (int i = 0; i < POOL; i++) {
        wk_tensor_free(g_pool[i]);
        g_pool[i] = NULL;
    }
    wk_clear_error();
    wk_cpu_mem_stats_get(&after);
    if (after.bytes_in_use != before.bytes_in_use)
        fail_msg("seed %llu: %zu bytes of tensor storage leaked", (unsigned long long)seed,
                 after.bytes_in_use - before.bytes_in_use);
}

static void test_fuzz_seed_1(void **state) { (void)state; run_seed(0x9e3779b97f4a7c15ULL, 60000); }
static void test_fuzz_seed_2(void **state) { (void)state; run_seed(20240607, 60000); }
static void test_fuzz_seed_3(void **state) { (void)state; run_seed(1, 60000); }

/* WICK_FUZZ_API_SEEDS=N runs N more seeds (100..100+N-1) for longer hunts. */
static void test_fuzz_extra_seeds(void **state) {
    (void)state;
    const char *e = getenv("WICK_FUZZ_API_SEEDS");
    int n = e ? atoi(e) : 0;
    for (int i = 0; i < n; i++) run_seed(100 + (uint64_t)i, 20000);
}

static int teardown(void **state) {
    (void)state;
    print_message("fuzz: %llu calls, %llu succeeded\n", (unsigned long long)g_calls, (unsigned long long)g_ok);
    wk_cpu_cache_release();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_seed_1),
        cmocka_unit_test(test_fuzz_seed_2),
        cmocka_unit_test(test_fuzz_seed_3),
        cmocka_unit_test(test_fuzz_extra_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
