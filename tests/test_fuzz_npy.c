/* Deterministic fuzzing of the .npy and .npz parsers: valid byte images are
 * mutated (bit flips, byte and field replacements, truncation, insertions and
 * deletions in the header, shape tokens) with a fixed-seed xorshift generator
 * and fed to wk_npy_load_bytes and the in-memory npz parser. Only clean
 * errors (NULL / a status, with a message) or valid tensors are allowed;
 * every image is copied into an exactly sized buffer so that ASan catches
 * any read past its end. WICK_FUZZ_ITERS scales the iteration counts. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "io/npy_internal.h"

/* ------------------------------------------------------------------ rng */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void) {
    uint64_t x = g_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    g_rng = x;
    return x;
}
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* --------------------------------------------------------------- buffers */

typedef struct buf {
    uint8_t *b;
    size_t   n, cap;
} buf;

static void buf_reserve(buf *x, size_t n) {
    if (n <= x->cap) return;
    x->cap = n * 2 + 64;
    x->b = realloc(x->b, x->cap);
    assert_non_null(x->b);
}
static void buf_set(buf *x, const uint8_t *p, size_t n) {
    buf_reserve(x, n);
    if (n) memcpy(x->b, p, n);
    x->n = n;
}
static void buf_put(buf *x, const void *p, size_t n) {
    buf_reserve(x, x->n + n);
    if (n) memcpy(x->b + x->n, p, n);
    x->n += n;
}
static void buf_insert(buf *x, size_t at, const void *p, size_t n) {
    if (at > x->n) at = x->n;
    buf_reserve(x, x->n + n);
    memmove(x->b + at + n, x->b + at, x->n - at);
    memcpy(x->b + at, p, n);
    x->n += n;
}
static void buf_erase(buf *x, size_t at, size_t n) {
    if (at >= x->n) return;
    if (n > x->n - at) n = x->n - at;
    memmove(x->b + at, x->b + at + n, x->n - at - n);
    x->n -= n;
}
static void put16(buf *x, uint32_t v) {
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    buf_put(x, b, 2);
}
static void put32(buf *x, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_put(x, b, 4);
}
static void put64(buf *x, uint64_t v) {
    put32(x, (uint32_t)v);
    put32(x, (uint32_t)(v >> 32));
}

/* ------------------------------------------------------------- seed images */

#define MAX_SEEDS 32
static buf g_npy[MAX_SEEDS];
static int g_n_npy;
static buf g_npz[MAX_SEEDS];
static int g_n_npz;

static void add_npy_from_tensor(wk_tensor *t) {
    uint8_t *pre, *dat;
    size_t pl, dl;
    TU_STATUS_OK(wk__npy_preamble(t, &pre, &pl, "fuzz"));
    TU_STATUS_OK(wk__npy_tensor_bytes(t, &dat, &dl, "fuzz"));
    buf *x = &g_npy[g_n_npy++];
    buf_put(x, pre, pl);
    buf_put(x, dat, dl);
    free(pre);
    free(dat);
    wk_tensor_free(t);
}

static void add_npy_handmade(int major, const char *dict, size_t data_len) {
    buf *x = &g_npy[g_n_npy++];
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict);
    size_t total = (pre + hl + 1 + 63) / 64 * 64;
    buf_put(x, "\x93NUMPY", 6);
    uint8_t v[2] = {(uint8_t)major, 0};
    buf_put(x, v, 2);
    if (major == 1) put16(x, (uint32_t)(total - pre));
    else put32(x, (uint32_t)(total - pre));
    buf_put(x, dict, hl);
    while (x->n < total - 1) buf_put(x, " ", 1);
    buf_put(x, "\n", 1);
    for (size_t i = 0; i < data_len; i++) {
        uint8_t b = (uint8_t)(i * 29 + 7);
        buf_put(x, &b, 1);
    }
}

typedef struct zmember {
    const char    *name;
    const uint8_t *data;
    size_t         len;
    int            method;
    bool           zip64;
} zmember;

static void raw_deflate(const uint8_t *src, size_t n, buf *out) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n) + 16;
    buf_reserve(out, cap);
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    zs.next_out = out->b;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out->n = zs.total_out;
    deflateEnd(&zs);
}

/* Same layout as numpy's zipfile output (Zip64 local extras when asked). */
static void build_zip(const zmember *m, int n, bool zip64_end, buf *z) {
    z->n = 0;
    uint64_t offs[8];
    uint32_t crcs[8];
    buf comp[8];
    memset(comp, 0, sizeof comp);
    for (int i = 0; i < n; i++) {
        crcs[i] = (uint32_t)crc32(0, m[i].data, (uInt)m[i].len);
        if (m[i].method == 8) raw_deflate(m[i].data, m[i].len, &comp[i]);
        else buf_set(&comp[i], m[i].data, m[i].len);
        offs[i] = z->n;
        size_t nl = strlen(m[i].name);
        put32(z, 0x04034b50);
        put16(z, 20);
        put16(z, 0);
        put16(z, (uint32_t)m[i].method);
        put16(z, 0);
        put16(z, 0x21);
        put32(z, crcs[i]);
        put32(z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)comp[i].n);
        put32(z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)m[i].len);
        put16(z, (uint32_t)nl);
        put16(z, m[i].zip64 ? 20 : 0);
        buf_put(z, m[i].name, nl);
        if (m[i].zip64) {
            put16(z, 1);
            put16(z, 16);
            put64(z, m[i].len);
            put64(z, comp[i].n);
        }
        buf_put(z, comp[i].b, comp[i].n);
    }
    uint64_t cd = z->n;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name);
        put32(z, 0x02014b50);
        put16(z, 0x031e);
        put16(z, 20);
        put16(z, 0);
        put16(z, (uint32_t)m[i].method);
        put16(z, 0);
        put16(z, 0x21);
        put32(z, crcs[i]);
        put32(z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)comp[i].n);
        put32(z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)m[i].len);
        put16(z, (uint32_t)nl);
        put16(z, m[i].zip64 ? 28 : 0);
        put16(z, 0);
        put16(z, 0);
        put16(z, 0);
        put32(z, 0);
        put32(z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)offs[i]);
        buf_put(z, m[i].name, nl);
        if (m[i].zip64) {
            put16(z, 1);
            put16(z, 24);
            put64(z, m[i].len);
            put64(z, comp[i].n);
            put64(z, offs[i]);
        }
        free(comp[i].b);
    }
    uint64_t cds = z->n - cd;
    if (zip64_end) {
        uint64_t e64 = z->n;
        put32(z, 0x06064b50);
        put64(z, 44);
        put16(z, 45);
        put16(z, 45);
        put32(z, 0);
        put32(z, 0);
        put64(z, (uint64_t)n);
        put64(z, (uint64_t)n);
        put64(z, cds);
        put64(z, cd);
        put32(z, 0x07064b50);
        put32(z, 0);
        put64(z, e64);
        put32(z, 1);
    }
    put32(z, 0x06054b50);
    put16(z, 0);
    put16(z, 0);
    put16(z, zip64_end ? 0xFFFF : (uint32_t)n);
    put16(z, zip64_end ? 0xFFFF : (uint32_t)n);
    put32(z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cds);
    put32(z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd);
    put16(z, 0);
}

static wk_tensor *values(const int64_t *shape, int rank, wk_dtype dt) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 13) % 17);
    wk_tensor *t = tu_make(v, shape, rank, dt);
    free(v);
    return t;
}

static int setup_seeds(void **state) {
    (void)state;
    static const int64_t s1[1] = {5}, s2[2] = {2, 3}, s3[3] = {2, 2, 3}, s0[2] = {0, 3};
    add_npy_from_tensor(values(s2, 2, WK_F32));
    add_npy_from_tensor(values(s1, 1, WK_U8));
    add_npy_from_tensor(values(s3, 3, WK_I64));
    add_npy_from_tensor(values(NULL, 0, WK_F64));
    add_npy_from_tensor(values(s2, 2, WK_F16));
    add_npy_from_tensor(values(s1, 1, WK_U32));
    add_npy_from_tensor(values(s0, 2, WK_I16));
    add_npy_handmade(1, "{'descr': '>i4', 'fortran_order': True, 'shape': (3, 2, 2), }", 48);
    add_npy_handmade(2, "{'shape': (2, 3), 'fortran_order': True, 'descr': '<f8', }", 48);
    add_npy_handmade(3, "{\"descr\": \"|b1\", \"fortran_order\": False, \"shape\": (4L,)}", 4);
    add_npy_handmade(1, "{'descr': '>f2', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 2), }", 4);

    /* npz images: stored, deflated, Zip64 extras and end records. */
    for (int v = 0; v < 6; v++) {
        zmember m[3] = {
            {"a.npy", g_npy[0].b, g_npy[0].n, v & 1 ? 8 : 0, v >= 2},
            {"b.npy", g_npy[7].b, g_npy[7].n, v & 1 ? 0 : 8, v >= 4},
            {"c", g_npy[3].b, g_npy[3].n, 0, false},
        };
        build_zip(m, v == 5 ? 1 : 3, v >= 4, &g_npz[g_n_npz++]);
    }
    return 0;
}

static int teardown_seeds(void **state) {
    (void)state;
    for (int i = 0; i < g_n_npy; i++) free(g_npy[i].b);
    for (int i = 0; i < g_n_npz; i++) free(g_npz[i].b);
    return 0;
}

/* ------------------------------------------------------------- mutations */

static const char *TOKENS[] = {
    "'shape': (", "'descr': '<f4'", "'fortran_order': True", "9999999999999999999", "4294967296",
    "-1", ",", ", ", "(", ")", "{", "}", "'", "\"", ":", "1, 1, 1, 1, 1, 1, 1, 1, 1", "()", "(0,)",
    "True", "False", "L", "<u8", ">f8", "|u1", " ", "\n", "\\", "\0", "\x93NUMPY",
};
#define N_TOKENS (sizeof TOKENS / sizeof TOKENS[0])

static const uint32_t INTERESTING[] = {0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0xFFFFFFFFu, 64, 46, 22};
#define N_INTERESTING (sizeof INTERESTING / sizeof INTERESTING[0])

static void mutate_bytes(buf *x) {
    if (x->n == 0) return;
    switch (rnd_below(5)) {
    case 0: { /* bit flips */
        int k = 1 + (int)rnd_below(4);
        for (int i = 0; i < k; i++) x->b[rnd_below(x->n)] ^= (uint8_t)(1u << rnd_below(8));
        break;
    }
    case 1: /* random byte */
        x->b[rnd_below(x->n)] = (uint8_t)rnd();
        break;
    case 2: /* interesting 8/16/32-bit value */
    {
        uint32_t v = INTERESTING[rnd_below(N_INTERESTING)];
        size_t w = (size_t)1 << rnd_below(3);
        if (w > x->n) w = 1;
        size_t at = rnd_below(x->n - w + 1);
        for (size_t i = 0; i < w; i++) x->b[at + i] = (uint8_t)(v >> (8 * i));
        break;
    }
    case 3: /* truncation */
        x->n = rnd_below(x->n);
        break;
    default: { /* insert random bytes */
        uint8_t r[8];
        size_t k = 1 + rnd_below(sizeof r);
        for (size_t i = 0; i < k; i++) r[i] = (uint8_t)rnd();
        buf_insert(x, rnd_below(x->n + 1), r, k);
        break;
    }
    }
}

/* Header-aware npy mutations; sometimes keep the header length consistent. */
static void mutate_npy(buf *x) {
    size_t hdr_end = x->n;
    size_t pre = x->n >= 8 && x->b[6] >= 2 ? 12 : 10;
    if (x->n >= pre) {
        size_t hl = pre == 10 ? wk__rd16(x->b + 8) : wk__rd32(x->b + 8);
        if (pre + hl < x->n) hdr_end = pre + hl;
    }
    int rounds = 1 + (int)rnd_below(3);
    for (int r = 0; r < rounds; r++) {
        size_t op = rnd_below(8);
        if (op < 4 || x->n <= pre) {
            mutate_bytes(x);
            continue;
        }
        size_t lo = pre, hi = hdr_end > lo ? hdr_end : lo;
        if (op == 4 || op == 5) { /* insert a token inside the header */
            const char *t = TOKENS[rnd_below(N_TOKENS)];
            size_t tl = strlen(t) ? strlen(t) : 1;
            buf_insert(x, lo + rnd_below(hi - lo + 1), t, tl);
            hdr_end += tl;
        } else if (op == 6) { /* delete a run inside the header */
            size_t at = lo + rnd_below(hi - lo + 1), k = 1 + rnd_below(6);
            buf_erase(x, at, k);
            hdr_end = hdr_end > k ? hdr_end - k : 0;
        } else { /* overwrite with a token */
            const char *t = TOKENS[rnd_below(N_TOKENS)];
            size_t tl = strlen(t), at = lo + rnd_below(hi - lo + 1);
            for (size_t i = 0; i < tl && at + i < x->n; i++) x->b[at + i] = (uint8_t)t[i];
        }
        if ((rnd() & 1) && x->n >= pre && hdr_end >= pre) { /* fix the header length */
            size_t hl = hdr_end - pre;
            if (pre == 10) wk__wr16(x->b + 8, (uint16_t)hl);
            else wk__wr32(x->b + 8, (uint32_t)hl);
        }
    }
}

/* ---------------------------------------------------------------- checks */

static uint8_t *exact_copy(const buf *x) {
    uint8_t *c = malloc(x->n ? x->n : 1);
    assert_non_null(c);
    if (x->n) memcpy(c, x->b, x->n);
    return c;
}

static void check_tensor(wk_tensor *t) {
    int rank = wk_rank(t);
    assert_true(rank >= 0 && rank <= WK_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        assert_true(wk_shape(t)[i] >= 0);
        n *= wk_shape(t)[i];
    }
    assert_int_equal(n, wk_numel(t));
    size_t nb = (size_t)n * wk_dtype_size(wk_tensor_dtype(t));
    uint8_t *b = malloc(nb ? nb : 1);
    assert_non_null(b);
    TU_STATUS_OK(wk_to_host(t, b, nb));
    free(b);
}

static int g_ok, g_fail;

static void run_npy(const buf *x) {
    uint8_t *c = exact_copy(x);
    wk_tensor *t = wk_npy_load_bytes(c, x->n, wk_cpu());
    if (t) {
        check_tensor(t);
        wk_tensor_free(t);
        g_ok++;
    } else {
        if (wk_last_status() != WK_ERR_FORMAT || !wk_last_error()[0])
            fail_msg("npy: unexpected failure %s (%s)", wk_status_name(wk_last_status()), wk_last_error());
        wk_clear_error();
        g_fail++;
    }
    free(c);
}

static void run_npz(const buf *x) {
    uint8_t *c = exact_copy(x);
    char **names;
    wk_tensor **ts;
    int count;
    wk_status st = wk__npz_load_bytes(c, x->n, wk_cpu(), &names, &ts, &count, "fuzz", "<memory>");
    if (st == WK_OK) {
        for (int i = 0; i < count; i++) {
            assert_non_null(names[i]);
            check_tensor(ts[i]);
        }
        wk_npz_free(names, ts, count);
        g_ok++;
    } else {
        if (st != WK_ERR_FORMAT || wk_last_status() != st || !wk_last_error()[0])
            fail_msg("npz: unexpected failure %s (%s)", wk_status_name(st), wk_last_error());
        assert_null(names);
        assert_null(ts);
        assert_int_equal(count, 0);
        wk_clear_error();
        g_fail++;
    }
    free(c);
}

static int iters(int base) {
    const char *e = getenv("WICK_FUZZ_ITERS");
    double scale = e ? atof(e) : 1.0;
    return scale > 0 ? (int)(base * scale) : base;
}

/* ----------------------------------------------------------------- tests */

static void test_seeds_load(void **state) {
    (void)state;
    for (int i = 0; i < g_n_npy; i++) {
        wk_tensor *t = wk_npy_load_bytes(g_npy[i].b, g_npy[i].n, wk_cpu());
        if (!t) fail_msg("npy seed %d: %s", i, wk_last_error());
        check_tensor(t);
        wk_tensor_free(t);
    }
    for (int i = 0; i < g_n_npz; i++) {
        char **names;
        wk_tensor **ts;
        int count;
        if (wk__npz_load_bytes(g_npz[i].b, g_npz[i].n, wk_cpu(), &names, &ts, &count, "fuzz", "<memory>") != WK_OK)
            fail_msg("npz seed %d: %s", i, wk_last_error());
        assert_int_equal(count, i == 5 ? 1 : 3);
        wk_npz_free(names, ts, count);
    }
}

static void test_fuzz_npy(void **state) {
    (void)state;
    g_rng = 0x243F6A8885A308D3ull;
    g_ok = g_fail = 0;
    buf x = {0};
    clock_t t0 = clock();
    int n = iters(40000);
    for (int i = 0; i < n; i++) {
        const buf *seed = &g_npy[rnd_below((size_t)g_n_npy)];
        buf_set(&x, seed->b, seed->n);
        mutate_npy(&x);
        run_npy(&x);
    }
    /* Every prefix of every seed. */
    for (int s = 0; s < g_n_npy; s++)
        for (size_t cut = 0; cut < g_npy[s].n; cut++) {
            buf_set(&x, g_npy[s].b, cut);
            run_npy(&x);
        }
    free(x.b);
    print_message("npy: %d mutated images, %d loaded, %d rejected, %.2f s\n", n, g_ok, g_fail,
                  (double)(clock() - t0) / CLOCKS_PER_SEC);
    assert_true(g_ok > 0 && g_fail > 0);
}

static void test_fuzz_npz(void **state) {
    (void)state;
    g_rng = 0x13198A2E03707344ull;
    g_ok = g_fail = 0;
    buf x = {0}, member = {0};
    clock_t t0 = clock();
    int n = iters(25000);
    for (int i = 0; i < n; i++) {
        if (rnd_below(3) == 0) {
            /* A valid zip around a mutated npy member: reaches the npy
             * parser through the npz path with correct CRCs. */
            const buf *seed = &g_npy[rnd_below((size_t)g_n_npy)];
            buf_set(&member, seed->b, seed->n);
            mutate_npy(&member);
            zmember m[2] = {
                {"m.npy", member.b, member.n, rnd() & 1 ? 8 : 0, (rnd() & 1) != 0},
                {"ok.npy", g_npy[1].b, g_npy[1].n, 0, false},
            };
            build_zip(m, 2, rnd() & 1, &x);
        } else {
            const buf *seed = &g_npz[rnd_below((size_t)g_n_npz)];
            buf_set(&x, seed->b, seed->n);
            int rounds = 1 + (int)rnd_below(3);
            for (int r = 0; r < rounds; r++) mutate_bytes(&x);
        }
        run_npz(&x);
    }
    for (int s = 0; s < g_n_npz; s++)
        for (size_t cut = 0; cut < g_npz[s].n; cut++) {
            buf_set(&x, g_npz[s].b, cut);
            run_npz(&x);
        }
    free(x.b);
    free(member.b);
    print_message("npz: %d mutated images, %d loaded, %d rejected, %.2f s\n", n, g_ok, g_fail,
                  (double)(clock() - t0) / CLOCKS_PER_SEC);
    assert_true(g_ok > 0 && g_fail > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds_load),
        cmocka_unit_test(test_fuzz_npy),
        cmocka_unit_test(test_fuzz_npz),
    };
    return cmocka_run_group_tests(tests, setup_seeds, teardown_seeds);
}
