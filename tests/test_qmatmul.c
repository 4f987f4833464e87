/* wk_qmatmul on the CPU: every weight block type against an f64 reference
 * (the weights dequantized by quant/dequant_block.h times the activations
 * quantized by the scalar reference quantizer and dequantized), at every
 * SIMD level the CPU has (AVX-512 with and without VNNI), 1 and 2 threads
 * (bit-identical), decode and prefill row counts (M = 1..9, 16, 17, 33),
 * N not a multiple of any tile or panel, batch dims, f16/bf16 and strided x,
 * row-strided w; SIMD == portable bit for bit on data whose float sums are
 * exact; f16/bf16 weights; the argument errors; the decode tails (nb = 1,
 * N not a multiple of 4) and the 4-row decode kernels == the 1-row ones bit
 * for bit. */
#include "tensor/tensor.h"
#include "cpu/gemm/gemm.h"
#include "cpu/quantized/qdot.h"
#include "cpu/vmath/vmath.h"
#include "quant/dequant_block.h"
#include "testutil.h"
#include "wick/nn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x243f6a8885a308d3ULL;
static uint64_t rnext(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double urand(void) { return (double)(rnext() >> 11) * 0x1p-53 * 2 - 1; }

static const wk_dtype all_types[] = {WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q8_0, WK_Q8_1, WK_Q2_K,
                                     WK_Q3_K, WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_Q8_K, WK_IQ4_NL, WK_IQ4_XS};
#define NTYPES (int)(sizeof all_types / sizeof all_types[0])

static void dq_block(wk_dtype dt, const void *b, float *y) {
    switch (dt) {
    case WK_Q4_0: wk__dq_q4_0(b, y); return;
    case WK_Q4_1: wk__dq_q4_1(b, y); return;
    case WK_Q5_0: wk__dq_q5_0(b, y); return;
    case WK_Q5_1: wk__dq_q5_1(b, y); return;
    case WK_Q8_0: wk__dq_q8_0(b, y); return;
    case WK_Q8_1: wk__dq_q8_1(b, y); return;
    case WK_Q2_K: wk__dq_q2_K(b, y); return;
    case WK_Q3_K: wk__dq_q3_K(b, y); return;
    case WK_Q4_K: wk__dq_q4_K(b, y); return;
    case WK_Q5_K: wk__dq_q5_K(b, y); return;
    case WK_Q6_K: wk__dq_q6_K(b, y); return;
    case WK_Q8_K: wk__dq_q8_K(b, y); return;
    case WK_IQ4_NL: wk__dq_iq4_nl(b, y); return;
    case WK_IQ4_XS: wk__dq_iq4_xs(b, y); return;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    fail_msg("not a block dtype");
}

/* Random blocks: random bytes, then every scale field set to d (and every
 * min field to m) so no f16 field holds inf / NaN. */
static void set_scales(wk_dtype dt, uint8_t *b, float d, float m) {
    uint16_t hd = wk_f32_to_f16(d), hm = wk_f32_to_f16(m);
#define SETD(T) ((T *)b)->d = hd
#define SETDM(T, f) (((T *)b)->d = hd, ((T *)b)->f = hm)
    switch (dt) {
    case WK_Q4_0: SETD(wk_block_q4_0); return;
    case WK_Q4_1: SETDM(wk_block_q4_1, m); return;
    case WK_Q5_0: SETD(wk_block_q5_0); return;
    case WK_Q5_1: SETDM(wk_block_q5_1, m); return;
    case WK_Q8_0: SETD(wk_block_q8_0); return;
    case WK_Q8_1: SETDM(wk_block_q8_1, s); return;
    case WK_Q2_K: SETDM(wk_block_q2_K, dmin); return;
    case WK_Q3_K: SETD(wk_block_q3_K); return;
    case WK_Q4_K: SETDM(wk_block_q4_K, dmin); return;
    case WK_Q5_K: SETDM(wk_block_q5_K, dmin); return;
    case WK_Q6_K: SETD(wk_block_q6_K); return;
    case WK_Q8_K: ((wk_block_q8_K *)b)->d = d; return;
    case WK_IQ4_NL: SETD(wk_block_iq4_nl); return;
    case WK_IQ4_XS: SETD(wk_block_iq4_xs); return;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
#undef SETD
#undef SETDM
}

/* n x k weight bytes; exact: scales 1 (integer-valued products) */
static uint8_t *make_weights(wk_dtype dt, int64_t n, int64_t k, bool exact, size_t *nbytes) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    int64_t nblk = n * k / di->block_elems;
    *nbytes = (size_t)nblk * di->block_bytes;
    uint8_t *w = malloc(*nbytes);
    for (size_t i = 0; i < *nbytes; i++) w[i] = (uint8_t)rnext();
    for (int64_t b = 0; b < nblk; b++) {
        float d = exact ? 1.f : (float)(0.002 + 0.02 * fabs(urand())) * (urand() < 0 ? -1 : 1);
        float m = exact ? 1.f : (float)(0.01 * urand());
        set_scales(dt, w + b * di->block_bytes, d, m);
    }
    return w;
}

/* the reference: dequantized weights (n, k) as double */
static double *dequant_ref(wk_dtype dt, const uint8_t *w, int64_t n, int64_t k) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    double *W = malloc(sizeof(double) * (size_t)(n * k));
    float tmp[WK_QK_K];
    for (int64_t b = 0; b < n * k / di->block_elems; b++) {
        dq_block(dt, w + b * di->block_bytes, tmp);
        for (uint32_t j = 0; j < di->block_elems; j++) W[b * di->block_elems + j] = tmp[j];
    }
    return W;
}

/* the activations as the kernels see them: quantized by the scalar
 * reference quantizer, dequantized (d * q) */
static double *act_ref(wk_dtype dt, const float *X, int64_t m, int64_t k) {
    double *A = malloc(sizeof(double) * (size_t)(m * k));
    if (wk__qact_kind(dt) == WK_QACT_32) {
        wk_qa32 *q = malloc(sizeof(wk_qa32) * (size_t)(k / 32));
        for (int64_t i = 0; i < m; i++) {
            wk__qact32_row(X + i * k, k, q);
            for (int64_t p = 0; p < k; p++) A[i * k + p] = (double)q[p / 32].d * q[p / 32].qs[p % 32];
        }
        free(q);
    } else {
        wk_block_q8_K *q = malloc(sizeof(wk_block_q8_K) * (size_t)(k / 256));
        for (int64_t i = 0; i < m; i++) {
            wk__qactK_row(X + i * k, k, q);
            for (int64_t p = 0; p < k; p++) A[i * k + p] = (double)q[p / 256].d * q[p / 256].qs[p % 256];
        }
        free(q);
    }
    return A;
}

typedef enum { X_PLAIN, X_BATCH, X_TRANSPOSED, X_F16, X_BF16 } x_kind;

/* x with m rows of k, in one of several layouts / dtypes */
static wk_tensor *make_x(int64_t m, int64_t k, x_kind kind, bool exact) {
    float *h = malloc(sizeof(float) * (size_t)(m * k));
    for (int64_t i = 0; i < m * k; i++) h[i] = exact ? (float)((int)(rnext() % 7) - 3) : (float)urand();
    if (exact) /* pin each block's scale to 1 (q8_0) / -1 (q8_K) */
        for (int64_t i = 0; i < m * k; i += 32) h[i] = 127;
    wk_tensor *x;
    if (kind == X_TRANSPOSED) {
        float *t = malloc(sizeof(float) * (size_t)(m * k));
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++) t[p * m + i] = h[i * k + p];
        wk_tensor *xt = TU_OK(wk_from_host(t, sizeof(float) * (size_t)(m * k), (int64_t[]){k, m}, 2, WK_F32, wk_cpu()));
        x = TU_OK(wk_transpose(xt, 0, 1));
        wk_tensor_free(xt);
        free(t);
    } else if (kind == X_BATCH && m % 3 == 0) {
        x = TU_OK(wk_from_host(h, sizeof(float) * (size_t)(m * k), (int64_t[]){3, m / 3, k}, 3, WK_F32, wk_cpu()));
    } else {
        x = TU_OK(wk_from_host(h, sizeof(float) * (size_t)(m * k), (int64_t[]){m, k}, 2, WK_F32, wk_cpu()));
        if (kind == X_F16 || kind == X_BF16) {
            wk_tensor *y = TU_OK(wk_to_dtype(x, kind == X_F16 ? WK_F16 : WK_BF16));
            wk_tensor_free(x);
            x = y;
        }
    }
    free(h);
    return x;
}

/* y (m, n) from wk_qmatmul as f32 */
static float *run(const wk_tensor *x, const wk_tensor *w, int64_t m, int64_t n) {
    wk_tensor *y = TU_OK(wk_qmatmul(x, w));
    assert_int_equal(wk_shape(y)[wk_rank(y) - 1], n);
    float *Y = malloc(sizeof(float) * (size_t)(m * n));
    TU_STATUS_OK(wk_to_host_f32(y, Y, (size_t)(m * n)));
    wk_tensor_free(y);
    return Y;
}

static void check_ref(const char *what, wk_dtype wdt, const float *Y, const double *A, const double *W, int64_t m,
                      int64_t n, int64_t k, double rel_out) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int64_t p = 0; p < k; p++) {
                s += A[i * k + p] * W[j * k + p];
                sa += fabs(A[i * k + p] * W[j * k + p]);
            }
            double err = fabs((double)Y[i * n + j] - s), tol = 1e-5 * sa + rel_out * fabs(s) + 1e-30;
            if (!(err <= tol))
                fail_msg("%s %s m=%lld n=%lld k=%lld at (%lld,%lld): got %.9g want %.9g (tol %.3g, isa %s)", what,
                         wk_dtype_name(wdt), (long long)m, (long long)n, (long long)k, (long long)i, (long long)j,
                         (double)Y[i * n + j], s, tol, wk_cpu_isa());
        }
}

/* One case: wdt, m x k times (n x k)^T, in the x layout `kind`; checked
 * against the reference, and 1 thread == 2 threads bit for bit. */
static void one_case(wk_dtype wdt, int64_t m, int64_t n, int64_t kblocks, x_kind kind) {
    int64_t k = kblocks * wk_dtype_info_of(wdt)->block_elems;
    size_t nbytes;
    uint8_t *wb = make_weights(wdt, n, k, false, &nbytes);
    wk_tensor *w = TU_OK(wk_from_host(wb, nbytes, (int64_t[]){n, k}, 2, wdt, wk_cpu()));
    wk_tensor *x = make_x(m, k, kind, false);
    float *X = malloc(sizeof(float) * (size_t)(m * k));
    TU_STATUS_OK(wk_to_host_f32(x, X, (size_t)(m * k)));
    double *W = dequant_ref(wdt, wb, n, k), *A = act_ref(wdt, X, m, k);
    TU_STATUS_OK(wk_set_num_threads(1));
    float *Y1 = run(x, w, m, n);
    TU_STATUS_OK(wk_set_num_threads(2));
    float *Y2 = run(x, w, m, n);
    double rel_out = kind == X_F16 ? 0x1p-11 : kind == X_BF16 ? 0x1p-8 : 0;
    check_ref("qmatmul", wdt, Y1, A, W, m, n, k, rel_out);
    assert_memory_equal(Y1, Y2, sizeof(float) * (size_t)(m * n));
    free(Y1);
    free(Y2);
    free(W);
    free(A);
    free(X);
    free(wb);
    wk_tensor_free(w);
    wk_tensor_free(x);
}

/* Runs fn at every SIMD level (and, at AVX-512 with VNNI, also without). */
static void each_level(void (*fn)(void)) {
    for (int level = WK_VMATH_SCALAR; level <= wk__vmath_max_level(); level++) {
        assert_int_equal(wk__vmath_set_level(level), 0);
        fn();
        if (level == WK_VMATH_AVX512 && wk__cpu_has_avx512vnni()) {
            wk__qmm_force(WK_QMM_NO_VNNI);
            fn();
            wk__qmm_force(WK_QMM_AUTO);
        }
    }
    wk__vmath_set_level(-1);
    TU_STATUS_OK(wk_set_num_threads(2));
}

static void all_types_shapes(void) {
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33};
    for (int t = 0; t < NTYPES; t++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            one_case(all_types[t], ms[mi], ms[mi] < 16 ? 67 : 29, wk_dtype_info_of(all_types[t])->block_elems == 32 ? 5 : 2,
                     X_PLAIN);
}
static void test_all_types_all_levels(void **state) {
    (void)state;
    each_level(all_types_shapes);
}

/* long rows (K = 4096 for the 32-element types, 2048 for the others) and a
 * weight row count past several panels: the loops over many blocks */
static void long_rows(void) {
    for (int t = 0; t < NTYPES; t++) {
        bool k32 = wk_dtype_info_of(all_types[t])->block_elems == 32;
        one_case(all_types[t], 1, 150, k32 ? 128 : 8, X_PLAIN);
        one_case(all_types[t], 19, 131, k32 ? 37 : 3, X_PLAIN);
    }
}
static void test_long_rows_all_levels(void **state) {
    (void)state;
    each_level(long_rows);
}

static void layouts(void) {
    static const wk_dtype types[] = {WK_Q4_0, WK_Q4_1, WK_Q8_0, WK_Q4_K, WK_Q6_K, WK_Q5_K, WK_IQ4_XS};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (x_kind kind = X_BATCH; kind <= X_BF16; kind++) {
            one_case(types[t], 6, 19, 1, kind);
            one_case(types[t], 18, 70, 2, kind);
        }
}
static void test_batch_strided_half_x(void **state) {
    (void)state;
    each_level(layouts);
}

/* Data whose every float sum is exact (integer weights and activations,
 * scales 1): each SIMD kernel must equal the portable one bit for bit. */
static void exact_vs_portable(void) {
    for (int t = 0; t < NTYPES; t++) {
        wk_dtype wdt = all_types[t];
        int64_t k = 2 * (wk_dtype_info_of(wdt)->block_elems == 32 ? 32 : 256), n = 21;
        size_t nbytes;
        uint8_t *wb = make_weights(wdt, n, k, true, &nbytes);
        wk_tensor *w = TU_OK(wk_from_host(wb, nbytes, (int64_t[]){n, k}, 2, wdt, wk_cpu()));
        for (int64_t m = 1; m <= 17; m += 8) {
            wk_tensor *x = make_x(m, k, X_PLAIN, true);
            float *Ys = run(x, w, m, n);
            wk__qmm_force(WK_QMM_PORTABLE);
            float *Yp = run(x, w, m, n);
            wk__qmm_force(WK_QMM_AUTO);
            for (int64_t i = 0; i < m * n; i++)
                if (Ys[i] != Yp[i])
                    fail_msg("%s at %s: SIMD %.9g != portable %.9g at %lld", wk_dtype_name(wdt), wk_cpu_isa(),
                             (double)Ys[i], (double)Yp[i], (long long)i);
            free(Ys);
            free(Yp);
            wk_tensor_free(x);
        }
        wk_tensor_free(w);
        free(wb);
    }
}
static void test_simd_equals_portable_exact(void **state) {
    (void)state;
    each_level(exact_vs_portable);
}

/* The K-type prefill panel (AVX512-VNNI: 16 activation rows x 8 weight
 * rows, weight panels of 64 rows): M >= 16 with ragged last panels, N past
 * one weight panel and not a multiple of the tile, several super-blocks;
 * against the reference, 1 == 2 threads, and bit for bit the portable
 * kernel on integer-exact data (every sum exact). */
static const wk_dtype k_panel_types[] = {WK_Q4_K, WK_Q5_K, WK_Q6_K};
static void k_panel(void) {
    static const int64_t ms[] = {16, 31, 48};
    for (size_t t = 0; t < sizeof k_panel_types / sizeof k_panel_types[0]; t++) {
        wk_dtype wdt = k_panel_types[t];
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) one_case(wdt, ms[mi], 75, 3, X_PLAIN);
        int64_t k = 3 * 256, n = 75, m = 35;
        size_t nbytes;
        uint8_t *wb = make_weights(wdt, n, k, true, &nbytes);
        wk_tensor *w = TU_OK(wk_from_host(wb, nbytes, (int64_t[]){n, k}, 2, wdt, wk_cpu()));
        wk_tensor *x = make_x(m, k, X_PLAIN, true);
        float *Ys = run(x, w, m, n);
        wk__qmm_force(WK_QMM_PORTABLE);
        float *Yp = run(x, w, m, n);
        wk__qmm_force(WK_QMM_AUTO);
        for (int64_t i = 0; i < m * n; i++)
            if (Ys[i] != Yp[i])
                fail_msg("%s at %s (m %lld): SIMD %.9g != portable %.9g at %lld", wk_dtype_name(wdt), wk_cpu_isa(),
                         (long long)m, (double)Ys[i], (double)Yp[i], (long long)i);
        free(Ys);
        free(Yp);
        wk_tensor_free(x);
        wk_tensor_free(w);
        free(wb);
    }
}
static void test_k_panel_all_levels(void **state) {
    (void)state;
    each_level(k_panel);
}

/* The decode paths' tails: nb = 1 block, M = 1..8, N below and past the
 * 4-row kernels' groups and not a multiple of 4 (the 1-row tail). */
static void decode_tails(void) {
    static const int64_t ns[] = {1, 3, 5, 13, 70};
    for (int t = 0; t < NTYPES; t++)
        for (int64_t m = 1; m <= 8; m++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) one_case(all_types[t], m, ns[ni], 1, X_PLAIN);
}
static void test_decode_tails_all_levels(void **state) {
    (void)state;
    each_level(decode_tails);
}

/* The 4-row decode kernel (wk_qdot4_fn) equals four calls of the 1-row
 * kernel bit for bit (qdot.h's promise: what keeps 1 thread == 2 threads
 * however the rows are grouped), for every mr it takes and several nb. */
static void qdot4_vs_qdot(void) {
    static const int64_t nbs[] = {1, 2, 3, 7, 20};
    for (int t = 0; t < NTYPES; t++) {
        wk_dtype wdt = all_types[t];
        wk_qmm_kernels kern = wk__qmm_choose(wdt);
        if (!kern.qdot4) continue;
        assert_true(kern.qdot4_mr >= 1 && kern.qdot4_mr <= WK_QDOT_MR);
        bool k32 = wk__qact_kind(wdt) == WK_QACT_32;
        for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++) {
            int64_t nb = nbs[bi], k = nb * (k32 ? 32 : 256);
            size_t nbytes;
            uint8_t *wb = make_weights(wdt, 4, k, false, &nbytes);
            size_t wrs = nbytes / 4, as = (size_t)nb * (k32 ? sizeof(wk_qa32) : sizeof(wk_block_q8_K));
            float *X = malloc(sizeof(float) * (size_t)(WK_QDOT_MR * k));
            uint8_t *A = malloc(as * WK_QDOT_MR);
            for (int64_t i = 0; i < WK_QDOT_MR * k; i++) X[i] = (float)urand();
            for (int i = 0; i < WK_QDOT_MR; i++) {
                if (k32) wk__qact32_row(X + i * k, k, (wk_qa32 *)(A + (size_t)i * as));
                else wk__qactK_row(X + i * k, k, (wk_block_q8_K *)(A + (size_t)i * as));
            }
            for (int mr = 1; mr <= kern.qdot4_mr; mr++) {
                float y4[WK_QDOT_MR * 4], y1[WK_QDOT_MR * 4];
                kern.qdot4(nb, wb, wrs, A, as, mr, y4, 4);
                for (int r = 0; r < 4; r++) kern.qdot(nb, wb + (size_t)r * wrs, A, as, mr, y1 + r, 4);
                for (int i = 0; i < 4 * mr; i++)
                    if (memcmp(&y4[i], &y1[i], sizeof(float)) != 0)
                        fail_msg("%s at %s nb %lld mr %d: 4-row %.9g != 1-row %.9g at %d", wk_dtype_name(wdt),
                                 wk_cpu_isa(), (long long)nb, mr, (double)y4[i], (double)y1[i], i);
            }
            free(A);
            free(X);
            free(wb);
        }
    }
}
static void test_qdot4_equals_qdot_all_levels(void **state) {
    (void)state;
    each_level(qdot4_vs_qdot);
}

/* rows of w at a stride: every other row of a taller weight (a zero-copy
 * view, as a model file's tensors are) */
static void test_row_strided_weight(void **state) {
    (void)state;
    int64_t n = 40, k = 256, m = 3;
    size_t nbytes, rb;
    uint8_t *wb = make_weights(WK_Q4_K, n, k, false, &nbytes);
    rb = nbytes / (size_t)n;
    /* block tensors have no public strided view yet (whole-row narrow comes
     * with the quant work): the internal view of rows 1, 3, 5, ... */
    wk_tensor *full = TU_OK(wk_from_host(wb, nbytes, (int64_t[]){n, k}, 2, WK_Q4_K, wk_cpu()));
    wk_layout l = {.rank = 2, .shape = {n / 2 - 1, k}, .stride = {2 * k, 1}, .offset = k};
    wk_tensor *w = TU_OK(wk__tensor_view(full, &l));
    wk_tensor_free(full);
    uint8_t *sel = malloc(nbytes / 2);
    for (int64_t j = 0; j < n / 2 - 1; j++) memcpy(sel + (size_t)j * rb, wb + (size_t)(2 * j + 1) * rb, rb);
    wk_tensor *x = make_x(m, k, X_PLAIN, false);
    float *X = malloc(sizeof(float) * (size_t)(m * k));
    TU_STATUS_OK(wk_to_host_f32(x, X, (size_t)(m * k)));
    double *W = dequant_ref(WK_Q4_K, sel, n / 2 - 1, k), *A = act_ref(WK_Q4_K, X, m, k);
    float *Y = run(x, w, m, n / 2 - 1);
    check_ref("row-strided w", WK_Q4_K, Y, A, W, m, n / 2 - 1, k, 0);
    free(Y);
    free(W);
    free(A);
    free(X);
    free(sel);
    wk_tensor_free(w);
    wk_tensor_free(x);
    free(wb);
}

/* f16 / bf16 weights: x stays f32, the weights widen exactly. K = 77 and
 * 208 reach the AVX-512 kernels' 32-wide loop and both a partial and a
 * full masked 16-lane tail; N = 523 leaves rows after the 4-row groups. */
static void half_weights(void) {
    static const int64_t ms[] = {1, 3, 8, 9, 16, 33}, ks[] = {77, 208};
    for (int f = 0; f < 4; f++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            int64_t m = ms[mi], n = 523, k = ks[f / 2];
            if (f >= 2 && m > 9) continue; /* the second K checks the decode kernels */
            wk_dtype wdt = f % 2 ? WK_BF16 : WK_F16;
            float *wh = malloc(sizeof(float) * (size_t)(n * k));
            for (int64_t i = 0; i < n * k; i++) wh[i] = (float)urand();
            wk_tensor *w32 = TU_OK(wk_from_host(wh, sizeof(float) * (size_t)(n * k), (int64_t[]){n, k}, 2, WK_F32, wk_cpu()));
            wk_tensor *w = TU_OK(wk_to_dtype(w32, wdt));
            wk_tensor *x = make_x(m, k, mi % 2 ? X_TRANSPOSED : X_PLAIN, false);
            double *W = malloc(sizeof(double) * (size_t)(n * k)), *A = malloc(sizeof(double) * (size_t)(m * k));
            TU_STATUS_OK(wk_to_host_f64(w, W, (size_t)(n * k)));
            TU_STATUS_OK(wk_to_host_f64(x, A, (size_t)(m * k)));
            if (wdt == WK_BF16 && m >= 16 && wk__gemm_kernels().bf16_dot) /* that path rounds x to bf16 */
                for (int64_t i = 0; i < m * k; i++) A[i] = wk_bf16_to_f32(wk_f32_to_bf16((float)A[i]));
            TU_STATUS_OK(wk_set_num_threads(1));
            float *Y1 = run(x, w, m, n);
            TU_STATUS_OK(wk_set_num_threads(2));
            float *Y2 = run(x, w, m, n);
            check_ref("half weights", wdt, Y1, A, W, m, n, k, 0);
            check_ref("half weights 2 threads", wdt, Y2, A, W, m, n, k, 0);
            free(Y1);
            free(Y2);
            free(W);
            free(A);
            free(wh);
            wk_tensor_free(w32);
            wk_tensor_free(w);
            wk_tensor_free(x);
        }
}
static void test_half_weights_all_levels(void **state) {
    (void)state;
    each_level(half_weights);
}

static void test_errors(void **state) {
    (void)state;
    wk_scope_begin(); /* every tensor below goes with the scope */
    size_t nbytes;
    uint8_t *wb = make_weights(WK_Q4_0, 4, 64, false, &nbytes);
    wk_tensor *w = TU_OK(wk_from_host(wb, nbytes, (int64_t[]){4, 64}, 2, WK_Q4_0, wk_cpu()));
    wk_tensor *x = make_x(2, 64, X_PLAIN, false);
    wk_tensor *xi = TU_OK(wk_to_dtype(x, WK_I32));
    wk_tensor *x32 = make_x(2, 32, X_PLAIN, false);
    wk_tensor *w3 = TU_OK(wk_reshape(x, (int64_t[]){2, 1, 64}, 3));
    wk_tensor *wh = TU_OK(wk_to_dtype(make_x(64, 8, X_PLAIN, false), WK_F16));
    wk_tensor *wht = TU_OK(wk_transpose(wh, 0, 1)); /* (8, 64), rows not contiguous */
    TU_FAILS(wk_qmatmul(xi, w), WK_ERR_DTYPE);
    TU_FAILS(wk_qmatmul(x, x), WK_ERR_DTYPE); /* f32 weights: use wk_matmul */
    TU_FAILS(wk_qmatmul(x32, w), WK_ERR_SHAPE);
    TU_FAILS(wk_qmatmul(x, w3), WK_ERR_DTYPE);
    TU_FAILS(wk_qmatmul(x, wht), WK_ERR_SHAPE);
    TU_FAILS(wk_qmatmul(NULL, w), WK_ERR_ARG);
    TU_FAILS(wk_qmatmul(x, NULL), WK_ERR_ARG);
    wk_tensor *s = TU_OK(wk_reshape(make_x(1, 1, X_PLAIN, false), (int64_t[]){0}, 0));
    TU_FAILS(wk_qmatmul(s, w), WK_ERR_SHAPE);
    /* a 1-D x gives a 1-D y; a 0-row x an empty result */
    wk_tensor *x1 = TU_OK(wk_reshape(x32, (int64_t[]){64}, 1));
    wk_tensor *y1 = TU_OK(wk_qmatmul(x1, w));
    assert_int_equal(wk_rank(y1), 1);
    assert_int_equal(wk_shape(y1)[0], 4);
    wk_tensor *x0 = TU_OK(wk_narrow(x, 0, 0, 0));
    wk_tensor *y0 = TU_OK(wk_qmatmul(x0, w));
    assert_int_equal(wk_shape(y0)[0], 0);
    free(wb);
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_types_all_levels),
        cmocka_unit_test(test_long_rows_all_levels),
        cmocka_unit_test(test_batch_strided_half_x),
        cmocka_unit_test(test_simd_equals_portable_exact),
        cmocka_unit_test(test_k_panel_all_levels),
        cmocka_unit_test(test_row_strided_weight),
        cmocka_unit_test(test_half_weights_all_levels),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_decode_tails_all_levels),
        cmocka_unit_test(test_qdot4_equals_qdot_all_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
