/* The CPU cmp / where fast paths (src/cpu/elementwise/cpu_binary.c): each stride
 * pattern of a run (both operands walking, one held by broadcasting, a
 * transposed view, a held condition), every dtype, odd lengths, against a
 * reference computed here from the raw bits; the sign-magnitude keys of the
 * narrow floats exhaustively for f8e4m3 and on the special values of f16 /
 * bf16; 1 and 2 threads bit-identical; masked_fill and tril on top. */
#include "testutil.h"
#include "base/dtype_cases.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const wk_dtype k_all[10] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3};
static const wk_dtype k_conds[5] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64};

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* the value of element i of a raw buffer as a double (exact for every dtype
 * but i64 beyond 2^53; those compare as integers, see ref_cmp) */
static double as_f64(const void *p, int64_t i, wk_dtype dt) {
    switch (dt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I16: return ((const int16_t *)p)[i];
    case WK_I32: return ((const int32_t *)p)[i];
    case WK_I64: return (double)((const int64_t *)p)[i];
    case WK_BF16: return wk_bf16_to_f32(((const uint16_t *)p)[i]);
    case WK_F16: return wk_f16_to_f32(((const uint16_t *)p)[i]);
    case WK_F32: return ((const float *)p)[i];
    case WK_F64: return ((const double *)p)[i];
    case WK_F8E4M3: return wk_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: break;
    }
    return 0;
}

static uint8_t ref_cmp(const void *a, int64_t ia, const void *b, int64_t ib, wk_dtype dt, wk_cmp_op op) {
    if (dt == WK_I64) {
        int64_t x = ((const int64_t *)a)[ia], y = ((const int64_t *)b)[ib];
        switch (op) {
        case WK_EQ: return x == y;
        case WK_NE: return x != y;
        case WK_LT: return x < y;
        case WK_LE: return x <= y;
        case WK_GT: return x > y;
        case WK_GE: return x >= y;
        case WK_CMP_COUNT: break;
        }
        return 0;
    }
    double x = as_f64(a, ia, dt), y = as_f64(b, ib, dt);
    switch (op) {
    case WK_EQ: return x == y;
    case WK_NE: return x != y;
    case WK_LT: return x < y;
    case WK_LE: return x <= y;
    case WK_GT: return x > y;
    case WK_GE: return x >= y;
    case WK_CMP_COUNT: break;
    }
    return 0;
}

/* Random element bits: half from a small pool (ties, +-0, NaN, inf, tiny),
 * half random bit patterns (which include NaNs with payloads). */
static void fill_bits(void *p, int64_t n, wk_dtype dt) {
    size_t es = wk_dtype_size(dt);
    static const uint64_t pool16_bf[] = {0x0000, 0x8000, 0x7fc0, 0xffc1, 0x7f80, 0xff80, 0x3f80, 0xbf80, 0x0001, 0x8001};
    static const uint64_t pool16_h[] = {0x0000, 0x8000, 0x7e00, 0xfc01, 0x7c00, 0xfc00, 0x3c00, 0xbc00, 0x0001, 0x8001};
    static const uint64_t pool8_f8[] = {0x00, 0x80, 0x7f, 0xff, 0x7e, 0xfe, 0x38, 0xb8, 0x01, 0x81};
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rnd64(), v = rnd64();
        if (r & 1) {
            int k = (int)((r >> 1) % 10);
            switch (dt) {
            case WK_BF16: v = pool16_bf[k]; break;
            case WK_F16: v = pool16_h[k]; break;
            case WK_F8E4M3: v = pool8_f8[k]; break;
            case WK_F32: { float f = k == 0 ? 0.0f : k == 1 ? -0.0f : k == 2 ? NAN : k == 3 ? INFINITY : (float)(k - 6); memcpy(&v, &f, 4); break; }
            case WK_F64: { double f = k == 0 ? 0.0 : k == 1 ? -0.0 : k == 2 ? NAN : k == 3 ? -INFINITY : (double)(k - 6); memcpy(&v, &f, 8); break; }
            default: v = (uint64_t)(int64_t)(k - 5); if (k == 9) v = 256; break; /* ints: small ties, 256 (not 0 in u8) */
            }
        }
        memcpy((char *)p + (size_t)i * es, &v, es);
    }
}


/* The result of an op on (m, n) operands must be m x n with u8 / dtype
 * elements; read it back whole. */
static void *readback(const wk_tensor *r, int64_t m, int64_t n, wk_dtype dt) {
    assert_non_null(r);
    assert_int_equal(wk_tensor_dtype(r), dt);
    tu_assert_shape(r, (int64_t[2]){m, n}, 2);
    size_t bytes = (size_t)(m * n) * wk_dtype_size(dt);
    void *h = malloc(bytes);
    assert_non_null(h);
    TU_STATUS_OK(wk_to_host(r, h, bytes));
    return h;
}

static void check_cmp(int64_t m, int64_t n, wk_dtype dt, int ka, int kb) {
    tu_opnd a, b;
    tu_opnd_make(&a, ka, m, n, dt, fill_bits);
    tu_opnd_make(&b, kb, m, n, dt, fill_bits);
    for (int op = 0; op < WK_CMP_COUNT; op++) {
        wk_tensor *r = wk_cmp(a.t, b.t, (wk_cmp_op)op);
        uint8_t *y = readback(r, m, n, WK_U8);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                uint8_t want = ref_cmp(a.host, tu_opnd_at(&a, i, j, m, n), b.host, tu_opnd_at(&b, i, j, m, n), dt, (wk_cmp_op)op);
                if (y[i * n + j] != want)
                    fail_msg("cmp %s op %d kinds %d/%d at (%lld,%lld) of %lldx%lld: got %d want %d", wk_dtype_name(dt),
                             op, ka, kb, (long long)i, (long long)j, (long long)m, (long long)n, y[i * n + j], want);
            }
        free(y);
        wk_tensor_free(r);
    }
    tu_opnd_free(&a);
    tu_opnd_free(&b);
}

/* every dtype, every pair of operand kinds (a scalar-scalar pair is 1 x 1
 * broadcast nowhere, skipped: its result is 0-d), odd lengths */
static void test_cmp_patterns(void **state) {
    (void)state;
    for (int d = 0; d < 10; d++)
        for (int ka = 0; ka < TU_NKINDS; ka++)
            for (int kb = 0; kb < TU_NKINDS; kb++) {
                if (ka != TU_FULL && ka != TU_TRANSPOSED && kb != TU_FULL && kb != TU_TRANSPOSED) {
                    /* row x col and the like still broadcast to m x n */
                    if (ka == TU_SCALAR && kb == TU_SCALAR) continue;
                    if ((ka == TU_ROW || ka == TU_SCALAR) && (kb == TU_ROW || kb == TU_SCALAR)) continue;
                    if ((ka == TU_COL || ka == TU_SCALAR) && (kb == TU_COL || kb == TU_SCALAR)) continue;
                }
                check_cmp(37, 301, k_all[d], ka, kb);
                check_cmp(3, 7, k_all[d], ka, kb);
            }
}

/* The narrow float keys: every pair of f8e4m3 values, both operands walking
 * and one held (the held side goes through the stride-0 key fill). */
static void test_cmp_f8_exhaustive(void **state) {
    (void)state;
    uint8_t col[256], row[256];
    for (int i = 0; i < 256; i++) col[i] = row[i] = (uint8_t)i;
    wk_tensor *a = TU_OK(wk_from_host(col, 256, (int64_t[2]){256, 1}, 2, WK_F8E4M3, wk_cpu()));
    wk_tensor *b = TU_OK(wk_from_host(row, 256, (int64_t[1]){256}, 1, WK_F8E4M3, wk_cpu()));
    for (int op = 0; op < WK_CMP_COUNT; op++) {
        wk_tensor *r = wk_cmp(a, b, (wk_cmp_op)op);
        uint8_t *y = readback(r, 256, 256, WK_U8);
        for (int i = 0; i < 256; i++)
            for (int j = 0; j < 256; j++) {
                uint8_t want = ref_cmp(col, i, row, j, WK_F8E4M3, (wk_cmp_op)op);
                if (y[i * 256 + j] != want)
                    fail_msg("f8e4m3 op %d: 0x%02x vs 0x%02x got %d want %d", op, i, j, y[i * 256 + j], want);
            }
        free(y);
        wk_tensor_free(r);
    }
    wk_tensor_free(a);
    wk_tensor_free(b);
}

/* f16 / bf16: every pair from the edges of each binade's neighbourhood
 * (zeros, subnormals, max, inf, every NaN class) and their negatives. */
static void test_cmp_half_specials(void **state) {
    (void)state;
    static const uint16_t base[] = {0x0000, 0x0001, 0x0002, 0x03ff, 0x0400, 0x3bff, 0x3c00, 0x3c01, 0x7bff, 0x7c00,
                                    0x7c01, 0x7e00, 0x7fff, 0x007f, 0x0080, 0x3f80, 0x7f7f, 0x7f80, 0x7f81, 0x7fc0};
    enum { NB = sizeof base / sizeof base[0], N = 2 * NB };
    uint16_t v[N];
    for (int i = 0; i < NB; i++) { v[i] = base[i]; v[NB + i] = (uint16_t)(base[i] | 0x8000); }
    const wk_dtype dts[2] = {WK_F16, WK_BF16};
    for (int d = 0; d < 2; d++) {
        wk_tensor *a = TU_OK(wk_from_host(v, sizeof v, (int64_t[2]){N, 1}, 2, dts[d], wk_cpu()));
        wk_tensor *b = TU_OK(wk_from_host(v, sizeof v, (int64_t[1]){N}, 1, dts[d], wk_cpu()));
        wk_tensor *av = TU_OK(wk_broadcast_as(a, (int64_t[2]){N, N}, 2));
        wk_tensor *ab = TU_OK(wk_contiguous(av));
        wk_tensor_free(av);
        for (int op = 0; op < WK_CMP_COUNT; op++)
            for (int form = 0; form < 2; form++) { /* held column, then both walking */
                wk_tensor *r = wk_cmp(form ? ab : a, b, (wk_cmp_op)op);
                uint8_t *y = readback(r, N, N, WK_U8);
                for (int i = 0; i < N; i++)
                    for (int j = 0; j < N; j++) {
                        uint8_t want = ref_cmp(v, i, v, j, dts[d], (wk_cmp_op)op);
                        if (y[i * N + j] != want)
                            fail_msg("%s op %d: 0x%04x vs 0x%04x got %d want %d", wk_dtype_name(dts[d]), op, v[i],
                                     v[j], y[i * N + j], want);
                    }
                free(y);
                wk_tensor_free(r);
            }
        wk_tensor_free(a);
        wk_tensor_free(b);
        wk_tensor_free(ab);
    }
}

static void check_where(int64_t m, int64_t n, wk_dtype dt, wk_dtype cdt, int kc, int ka, int kb) {
    tu_opnd c, a, b;
    tu_opnd_make(&c, kc, m, n, cdt, fill_bits);
    tu_opnd_make(&a, ka, m, n, dt, fill_bits);
    tu_opnd_make(&b, kb, m, n, dt, fill_bits);
    size_t es = wk_dtype_size(dt), ces = wk_dtype_size(cdt);
    wk_tensor *r = wk_where(c.t, a.t, b.t);
    char *y = readback(r, m, n, dt);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint64_t cv = 0;
            memcpy(&cv, (char *)c.host + (size_t)tu_opnd_at(&c, i, j, m, n) * ces, ces);
            const tu_opnd *s = cv ? &a : &b;
            const char *want = (const char *)s->host + (size_t)tu_opnd_at(s, i, j, m, n) * es;
            if (memcmp(y + (size_t)(i * n + j) * es, want, es) != 0)
                fail_msg("where %s cond %s kinds %d/%d/%d at (%lld,%lld): bits differ", wk_dtype_name(dt),
                         wk_dtype_name(cdt), kc, ka, kb, (long long)i, (long long)j);
        }
    free(y);
    wk_tensor_free(r);
    tu_opnd_free(&c);
    tu_opnd_free(&a);
    tu_opnd_free(&b);
}

/* every value dtype x condition dtype, the condition in every kind, the
 * values walking, held or transposed; bits compared (NaN payloads, -0) */
static void test_where_patterns(void **state) {
    (void)state;
    for (int d = 0; d < 10; d++)
        for (int cd = 0; cd < 5; cd++)
            for (int kc = 0; kc < TU_NKINDS; kc++)
                for (int ka = 0; ka < TU_NKINDS; ka++)
                    for (int kb = 0; kb < TU_NKINDS; kb += (kc == TU_FULL || ka == TU_FULL) ? 1 : 4) {
                        /* at least one of them spans both dims: TU_FULL or TU_TRANSPOSED, or a TU_ROW with a TU_COL */
                        bool spans = kc == TU_FULL || kc == TU_TRANSPOSED || ka == TU_FULL || ka == TU_TRANSPOSED || kb == TU_FULL ||
                                     kb == TU_TRANSPOSED;
                        if (!spans) continue;
                        check_where(29, 263, k_all[d], k_conds[cd], kc, ka, kb);
                    }
}

/* A pool of two threads cuts the flat range elsewhere than one thread:
 * the answers must not move by a bit. Sizes above the parallel threshold. */
static void test_threads_identical(void **state) {
    (void)state;
    int saved = wk_num_threads();
    const int64_t m = 613, n = 701;
    for (int d = 0; d < 10; d++) {
        tu_opnd a, b, c, bc;
        tu_opnd_make(&a, TU_FULL, m, n, k_all[d], fill_bits);
        tu_opnd_make(&b, TU_ROW, m, n, k_all[d], fill_bits);
        tu_opnd_make(&bc, TU_COL, m, n, k_all[d], fill_bits);
        tu_opnd_make(&c, TU_COL, m, n, WK_I32, fill_bits);
        wk_tensor *r[2][3];
        for (int t = 0; t < 2; t++) {
            TU_STATUS_OK(wk_set_num_threads(t + 1));
            r[t][0] = TU_OK(wk_cmp(a.t, b.t, WK_LE));
            r[t][1] = TU_OK(wk_cmp(bc.t, a.t, WK_NE));
            r[t][2] = TU_OK(wk_where(c.t, a.t, b.t));
        }
        for (int k = 0; k < 3; k++) {
            wk_dtype rd = k == 2 ? k_all[d] : WK_U8;
            char *y1 = readback(r[0][k], m, n, rd), *y2 = readback(r[1][k], m, n, rd);
            assert_memory_equal(y1, y2, (size_t)(m * n) * wk_dtype_size(rd));
            free(y1);
            free(y2);
            wk_tensor_free(r[0][k]);
            wk_tensor_free(r[1][k]);
        }
        tu_opnd_free(&a);
        tu_opnd_free(&b);
        tu_opnd_free(&bc);
        tu_opnd_free(&c);
    }
    TU_STATUS_OK(wk_set_num_threads(saved));
}

/* masked_fill (a held fill value) and tril / triu (a broadcast iota mask)
 * over the fast paths, bits checked. */
static void test_masked_fill_and_triangles(void **state) {
    (void)state;
    const int64_t m = 45, n = 67;
    for (int d = 0; d < 10; d++) {
        wk_dtype dt = k_all[d];
        size_t es = wk_dtype_size(dt);
        tu_opnd a, mk, mr;
        tu_opnd_make(&a, TU_FULL, m, n, dt, fill_bits);
        tu_opnd_make(&mk, TU_FULL, m, n, WK_U8, fill_bits);
        tu_opnd_make(&mr, TU_ROW, m, n, WK_I64, fill_bits);
        wk_tensor *seven = TU_OK(wk_full(NULL, 0, 7.0, dt, wk_cpu()));
        char sv[8];
        TU_STATUS_OK(wk_to_host(seven, sv, es));
        for (int form = 0; form < 2; form++) {
            const tu_opnd *mo = form ? &mr : &mk;
            wk_tensor *r = wk_masked_fill(a.t, mo->t, 7.0);
            char *y = readback(r, m, n, dt);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    uint64_t cv = 0;
                    memcpy(&cv, (char *)mo->host + (size_t)tu_opnd_at(mo, i, j, m, n) * wk_dtype_size(form ? WK_I64 : WK_U8),
                           form ? 8 : 1);
                    const char *want = cv ? sv : (const char *)a.host + (size_t)(i * n + j) * es;
                    if (memcmp(y + (size_t)(i * n + j) * es, want, es) != 0)
                        fail_msg("masked_fill %s form %d at (%lld,%lld)", wk_dtype_name(dt), form, (long long)i,
                                 (long long)j);
                }
            free(y);
            wk_tensor_free(r);
        }
        static const int64_t ks[] = {0, 1, -3, 100, -100};
        for (int lower = 0; lower < 2; lower++)
            for (int q = 0; q < 5; q++) {
                int64_t k = ks[q];
                wk_tensor *r = lower ? wk_tril(a.t, k) : wk_triu(a.t, k);
                char *y = readback(r, m, n, dt);
                char zero[8] = {0};
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        bool keep = lower ? j - i <= k : j - i >= k;
                        const char *want = keep ? (const char *)a.host + (size_t)(i * n + j) * es : zero;
                        if (memcmp(y + (size_t)(i * n + j) * es, want, es) != 0)
                            fail_msg("%s %s k %lld at (%lld,%lld)", lower ? "tril" : "triu", wk_dtype_name(dt),
                                     (long long)k, (long long)i, (long long)j);
                    }
                free(y);
                wk_tensor_free(r);
            }
        wk_tensor_free(seven);
        tu_opnd_free(&a);
        tu_opnd_free(&mk);
        tu_opnd_free(&mr);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cmp_patterns),
        cmocka_unit_test(test_cmp_f8_exhaustive),
        cmocka_unit_test(test_cmp_half_specials),
        cmocka_unit_test(test_where_patterns),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_masked_fill_and_triangles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
