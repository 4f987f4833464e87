/* The CPU binary ops on bf16 / f16 / f8e4m3 (src/cpu/elementwise/cpu_binary.c): each
 * element is the f32 op on the widened operands, rounded once to the dtype.
 * Every op x dtype x operand layout (contiguous, row- and column-broadcast,
 * scalar, transposed) x odd run lengths, bit-exact against a reference built
 * here from the scalar conversions (wk_bf16_to_f32 / wk_f32_to_bf16, ...),
 * on special values (+-0, NaN with payloads, +-inf, subnormals, the largest
 * finite values, so sums and products overflow); 1 and 2 threads
 * bit-identical; the integer stride paths against plain C. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const wk_dtype k_narrow[3] = {WK_BF16, WK_F16, WK_F8E4M3};
static const wk_binary_op k_ops[7] = {WK_ADD, WK_SUB, WK_MUL, WK_DIV, WK_MAXIMUM, WK_MINIMUM, WK_POW};

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd64(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static float widen(const void *p, int64_t i, wk_dtype dt) {
    if (dt == WK_BF16) return wk_bf16_to_f32(((const uint16_t *)p)[i]);
    if (dt == WK_F16) return wk_f16_to_f32(((const uint16_t *)p)[i]);
    return wk_f8e4m3_to_f32(((const uint8_t *)p)[i]);
}
static void narrow(void *p, int64_t i, wk_dtype dt, float v) {
    if (dt == WK_BF16) ((uint16_t *)p)[i] = wk_f32_to_bf16(v);
    else if (dt == WK_F16) ((uint16_t *)p)[i] = wk_f32_to_f16(v);
    else ((uint8_t *)p)[i] = wk_f32_to_f8e4m3(v);
}

/* the f32 meaning of each op (maximum / minimum: NaN if either is NaN, as
 * the NaN sum of the two; otherwise the larger / smaller, the second operand
 * on a tie such as -0 vs +0) */
static float ref_f32(wk_binary_op op, float x, float y) {
    switch (op) {
    case WK_ADD: return x + y;
    case WK_SUB: return x - y;
    case WK_MUL: return x * y;
    case WK_DIV: return x / y;
    case WK_MAXIMUM: return (isnan(x) || isnan(y)) ? x + y : (x > y ? x : y);
    case WK_MINIMUM: return (isnan(x) || isnan(y)) ? x + y : (x < y ? x : y);
    case WK_POW: return powf(x, y);
    case WK_BINARY_COUNT: break;
    }
    return 0;
}

/* Half the elements from a pool of special values, half random bits
 * (which include NaNs with payloads and subnormals). */
static void fill_bits(void *p, int64_t n, wk_dtype dt) {
    static const uint16_t pool_bf[] = {0x0000, 0x8000, 0x7fc0, 0xffc1, 0x7f80, 0xff80, 0x3f80, 0xbf80,
                                       0x0001, 0x8001, 0x7f7f, 0xff7f, 0x4000, 0x3f00, 0x007f, 0x4040};
    static const uint16_t pool_h[] = {0x0000, 0x8000, 0x7e00, 0xfc01, 0x7c00, 0xfc00, 0x3c00, 0xbc00,
                                      0x0001, 0x8001, 0x7bff, 0xfbff, 0x4000, 0x3800, 0x03ff, 0x4200};
    static const uint8_t pool_f8[] = {0x00, 0x80, 0x7f, 0xff, 0x7e, 0xfe, 0x38, 0xb8,
                                      0x01, 0x81, 0x77, 0xf7, 0x40, 0x30, 0x07, 0x44};
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rnd64(), v = rnd64();
        int k = (int)((r >> 1) % 16);
        if (dt == WK_F8E4M3) ((uint8_t *)p)[i] = (r & 1) ? pool_f8[k] : (uint8_t)v;
        else ((uint16_t *)p)[i] = (r & 1) ? (dt == WK_BF16 ? pool_bf[k] : pool_h[k]) : (uint16_t)v;
    }
}


/* Two operands without the m (or n) extent, such as a row and a scalar,
 * give a result without it: the result is rm x rn, read back flat. */
static bool has_m(int kind) { return kind == TU_FULL || kind == TU_COL || kind == TU_TRANSPOSED; }
static bool has_n(int kind) { return kind == TU_FULL || kind == TU_ROW || kind == TU_TRANSPOSED; }
static void *readback(const wk_tensor *r, int64_t m, int64_t n, wk_dtype dt) {
    assert_non_null(r);
    assert_int_equal(wk_tensor_dtype(r), dt);
    assert_int_equal(wk_numel(r), m * n);
    size_t bytes = (size_t)(m * n) * wk_dtype_size(dt);
    void *h = malloc(bytes);
    assert_non_null(h);
    TU_STATUS_OK(wk_to_host(r, h, bytes));
    return h;
}

static unsigned bits_at(const void *p, int64_t i, wk_dtype dt) {
    return dt == WK_F8E4M3 ? ((const uint8_t *)p)[i] : ((const uint16_t *)p)[i];
}

/* The bits of op(x, y) rounded to dt, or (x86 hands back the first
 * operand's NaN of two, and a compiler may swap the operands of the
 * commutative + and *, so vmath's levels differ there) for two NaNs under
 * add / mul / maximum / minimum either operand's NaN rounded: *alt. */
static unsigned ref_bits(wk_binary_op op, float x, float y, wk_dtype dt, unsigned *alt) {
    unsigned char w[2];
    narrow(w, 0, dt, ref_f32(op, x, y));
    unsigned r = bits_at(w, 0, dt);
    *alt = r;
    if (isnan(x) && isnan(y) && (op == WK_ADD || op == WK_MUL || op == WK_MAXIMUM || op == WK_MINIMUM)) {
        narrow(w, 0, dt, x);
        r = bits_at(w, 0, dt);
        narrow(w, 0, dt, y);
        *alt = bits_at(w, 0, dt);
    }
    return r;
}

/* one op on (m, n) operands of kinds ka, kb against the reference */
static void check(wk_binary_op op, wk_dtype dt, int64_t m, int64_t n, int ka, int kb) {
    tu_opnd a, b;
    tu_opnd_make(&a, ka, m, n, dt, fill_bits);
    tu_opnd_make(&b, kb, m, n, dt, fill_bits);
    wk_tensor *r = wk_binary(a.t, b.t, op);
    if (!r) fail_msg("%s %s: %s", wk_binary_name(op), wk_dtype_name(dt), wk_last_error());
    int64_t rm = has_m(ka) || has_m(kb) ? m : 1, rn = has_n(ka) || has_n(kb) ? n : 1;
    void *y = readback(r, rm, rn, dt);
    for (int64_t i = 0; i < rm; i++)
        for (int64_t j = 0; j < rn; j++) {
            float x = widen(a.host, tu_opnd_at(&a, i, j, m, n), dt), z = widen(b.host, tu_opnd_at(&b, i, j, m, n), dt);
            unsigned w2, w = ref_bits(op, x, z, dt, &w2), got = bits_at(y, i * rn + j, dt);
            if (w != got && w2 != got)
                fail_msg("%s %s %lldx%lld kinds %d,%d at (%lld,%lld): %a op %a: got 0x%x want 0x%x",
                         wk_binary_name(op), wk_dtype_name(dt), (long long)m, (long long)n, ka, kb, (long long)i,
                         (long long)j, (double)x, (double)z, got, w);
        }
    free(y);
    wk_tensor_free(r);
    tu_opnd_free(&a);
    tu_opnd_free(&b);
}

/* Run lengths around the block of 256 and the SIMD widths; m = 1 keeps a
 * contiguous run exactly n long, m = 3 gives broadcast runs of n. */
static void test_patterns(void **state) {
    (void)state;
    static const int64_t lens[] = {1, 7, 255, 256, 257, 1031};
    static const int64_t ms[] = {1, 3};
    for (int o = 0; o < 7; o++)
        for (int d = 0; d < 3; d++)
            for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
                for (int mi = 0; mi < 2; mi++)
                    for (int ka = 0; ka < TU_NKINDS; ka++)
                        for (int kb = 0; kb < TU_NKINDS; kb++) check(k_ops[o], k_narrow[d], ms[mi], lens[l], ka, kb);
}

/* Every pair of f8e4m3 values (256 x 256) for every op: the whole domain,
 * one held operand per run (a column against a row). */
static void test_f8_all_pairs(void **state) {
    (void)state;
    uint8_t v[256];
    for (int i = 0; i < 256; i++) v[i] = (uint8_t)i;
    wk_tensor *a = TU_OK(wk_from_host(v, 256, (int64_t[2]){256, 1}, 2, WK_F8E4M3, wk_cpu()));
    wk_tensor *b = TU_OK(wk_from_host(v, 256, (int64_t[1]){256}, 1, WK_F8E4M3, wk_cpu()));
    for (int o = 0; o < 7; o++) {
        wk_tensor *r = TU_OK(wk_binary(a, b, k_ops[o]));
        uint8_t *y = readback(r, 256, 256, WK_F8E4M3);
        for (int i = 0; i < 256; i++)
            for (int j = 0; j < 256; j++) {
                unsigned w2, w = ref_bits(k_ops[o], wk_f8e4m3_to_f32(v[i]), wk_f8e4m3_to_f32(v[j]), WK_F8E4M3, &w2);
                if (y[i * 256 + j] != w && y[i * 256 + j] != w2)
                    fail_msg("%s f8e4m3 0x%02x, 0x%02x: got 0x%02x want 0x%02x", wk_binary_name(k_ops[o]), i, j,
                             y[i * 256 + j], w);
            }
        free(y);
        wk_tensor_free(r);
    }
    wk_tensor_free(a);
    wk_tensor_free(b);
}

/* Two threads cut the range elsewhere than one: the bits must not move. */
static void test_threads_identical(void **state) {
    (void)state;
    int saved = wk_num_threads();
    const int64_t m = 613, n = 701;
    for (int d = 0; d < 3; d++)
        for (int o = 0; o < 7; o++) {
            tu_opnd a, b, bc;
            tu_opnd_make(&a, TU_FULL, m, n, k_narrow[d], fill_bits);
            tu_opnd_make(&b, TU_ROW, m, n, k_narrow[d], fill_bits);
            tu_opnd_make(&bc, TU_COL, m, n, k_narrow[d], fill_bits);
            wk_tensor *r[2][3];
            for (int t = 0; t < 2; t++) {
                TU_STATUS_OK(wk_set_num_threads(t + 1));
                r[t][0] = TU_OK(wk_binary(a.t, a.t, k_ops[o]));
                r[t][1] = TU_OK(wk_binary(a.t, b.t, k_ops[o]));
                r[t][2] = TU_OK(wk_binary(bc.t, a.t, k_ops[o]));
            }
            for (int k = 0; k < 3; k++) {
                char *y1 = readback(r[0][k], m, n, k_narrow[d]), *y2 = readback(r[1][k], m, n, k_narrow[d]);
                assert_memory_equal(y1, y2, (size_t)(m * n) * wk_dtype_size(k_narrow[d]));
                free(y1);
                free(y2);
                wk_tensor_free(r[0][k]);
                wk_tensor_free(r[1][k]);
            }
            tu_opnd_free(&a);
            tu_opnd_free(&b);
            tu_opnd_free(&bc);
        }
    TU_STATUS_OK(wk_set_num_threads(saved));
}

/* The integer stride paths (both walking, one held either side, any
 * strides): i32 and i64 add / sub / mul / maximum wrap like unsigned C. */
static void test_int_patterns(void **state) {
    (void)state;
    static const wk_binary_op ops[4] = {WK_ADD, WK_SUB, WK_MUL, WK_MAXIMUM};
    static const wk_dtype dts[2] = {WK_I32, WK_I64};
    const int64_t m = 5, n = 259;
    for (int d = 0; d < 2; d++)
        for (int o = 0; o < 4; o++)
            for (int ka = 0; ka < TU_NKINDS; ka++)
                for (int kb = 0; kb < TU_NKINDS; kb++) {
                    wk_dtype dt = dts[d];
                    int64_t ca = tu_opnd_count(ka, m, n), cb = tu_opnd_count(kb, m, n);
                    size_t es = wk_dtype_size(dt);
                    tu_opnd a = {ka, malloc((size_t)ca * es), NULL}, b = {kb, malloc((size_t)cb * es), NULL};
                    assert_non_null(a.host);
                    assert_non_null(b.host);
                    for (int64_t i = 0; i < ca * (int64_t)es; i++) ((uint8_t *)a.host)[i] = (uint8_t)rnd64();
                    for (int64_t i = 0; i < cb * (int64_t)es; i++) ((uint8_t *)b.host)[i] = (uint8_t)rnd64();
                    tu_opnd *ps[2] = {&a, &b};
                    for (int q = 0; q < 2; q++) {
                        tu_opnd *p = ps[q];
                        int64_t shape[2] = {m, n};
                        int rank = 2;
                        if (p->kind == TU_ROW) { shape[0] = n; rank = 1; }
                        if (p->kind == TU_COL) shape[1] = 1;
                        if (p->kind == TU_SCALAR) rank = 0;
                        if (p->kind == TU_TRANSPOSED) { shape[0] = n; shape[1] = m; }
                        int64_t c = q ? cb : ca;
                        wk_tensor *s = TU_OK(wk_from_host(p->host, (size_t)c * es, shape, rank, dt, wk_cpu()));
                        p->t = p->kind == TU_TRANSPOSED ? TU_OK(wk_t(s)) : s;
                        if (p->kind == TU_TRANSPOSED) wk_tensor_free(s);
                    }
                    wk_tensor *r = TU_OK(wk_binary(a.t, b.t, ops[o]));
                    int64_t rm = has_m(ka) || has_m(kb) ? m : 1, rn = has_n(ka) || has_n(kb) ? n : 1;
                    void *y = readback(r, rm, rn, dt);
                    for (int64_t i = 0; i < rm; i++)
                        for (int64_t j = 0; j < rn; j++) {
                            int64_t ia = tu_opnd_at(&a, i, j, m, n), ib = tu_opnd_at(&b, i, j, m, n);
                            uint64_t x, z, w, got;
                            if (dt == WK_I32) {
                                x = (uint32_t)((int32_t *)a.host)[ia];
                                z = (uint32_t)((int32_t *)b.host)[ib];
                                got = (uint32_t)((int32_t *)y)[i * rn + j];
                            } else {
                                x = (uint64_t)((int64_t *)a.host)[ia];
                                z = (uint64_t)((int64_t *)b.host)[ib];
                                got = (uint64_t)((int64_t *)y)[i * rn + j];
                            }
                            switch (ops[o]) {
                            case WK_ADD: w = x + z; break;
                            case WK_SUB: w = x - z; break;
                            case WK_MUL: w = x * z; break;
                            default: /* maximum, signed */
                                if (dt == WK_I32) w = (int32_t)(uint32_t)x > (int32_t)(uint32_t)z ? x : z;
                                else w = (int64_t)x > (int64_t)z ? x : z;
                                break;
                            }
                            if (dt == WK_I32) w = (uint32_t)w;
                            if (w != got)
                                fail_msg("%s %s kinds %d,%d at (%lld,%lld)", wk_binary_name(ops[o]),
                                         wk_dtype_name(dt), ka, kb, (long long)i, (long long)j);
                        }
                    free(y);
                    wk_tensor_free(r);
                    tu_opnd_free(&a);
                    tu_opnd_free(&b);
                }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_f8_all_pairs),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_int_patterns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
