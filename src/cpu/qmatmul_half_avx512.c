/* AVX-512 f16 / bf16 weight dots (qmatmul_half.h). */
#include "cpu/qmatmul_half.h"
#include "cpu/qdot.h"
#include <immintrin.h>

/* 16 weights widened to f32; the masked load leaves lanes >= n zero so the
 * tail needs no scalar loop. */
static inline __m512 hw_load16(const uint16_t *w, bool f16, __mmask16 mk) {
    __m256i h = _mm256_maskz_loadu_epi16(mk, w);
    if (f16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
}

/* U independent accumulators per x row (U * MR <= 8) so the FMA chains
 * overlap instead of running at the FMA latency. */
static inline __attribute__((always_inline)) void hd_mr(int64_t k, const uint16_t *w, const bool f16,
                                                        const float *x, int64_t xs, const int MR, float *out,
                                                        int64_t ldo) {
    enum { U_MAX = 4 };
    const int U = MR <= 2 ? 4 : MR <= 4 ? 2 : 1;
    __m512 acc[U_MAX][WK_QDOT_MR];
    for (int u = 0; u < U; u++)
        for (int i = 0; i < MR; i++) acc[u][i] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 16 * U <= k; p += 16 * U)
        for (int u = 0; u < U; u++) {
            __m512 wv = hw_load16(w + p + 16 * u, f16, 0xFFFF);
            for (int i = 0; i < MR; i++)
                acc[u][i] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + i * xs + p + 16 * u), acc[u][i]);
        }
    for (; p < k; p += 16) {
        __mmask16 mk = tail_mask(k - p);
        __m512 wv = hw_load16(w + p, f16, mk);
        for (int i = 0; i < MR; i++)
            acc[0][i] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mk, x + i * xs + p), acc[0][i]);
    }
    for (int i = 0; i < MR; i++) {
        for (int u = 1; u < U; u++) acc[0][i] = _mm512_add_ps(acc[0][i], acc[u][i]);
        out[i * ldo] = _mm512_reduce_add_ps(acc[0][i]);
    }
}

/* f16 and MR are compile-time constants in each instance: a run-time
 * dtype test inside the loop made the compiler spill the accumulators. */
#define HD_INSTANCE(name, F16)                                                                                \
    static void name(int64_t k, const uint16_t *w, const float *x, int64_t xs, int mr, float *out,            \
                     int64_t ldo) {                                                                           \
        switch (mr) {                                                                                         \
        case 1: hd_mr(k, w, F16, x, xs, 1, out, ldo); break;                                                  \
        case 2: hd_mr(k, w, F16, x, xs, 2, out, ldo); break;                                                  \
        case 3: hd_mr(k, w, F16, x, xs, 3, out, ldo); break;                                                  \
        case 4: hd_mr(k, w, F16, x, xs, 4, out, ldo); break;                                                  \
        case 5: hd_mr(k, w, F16, x, xs, 5, out, ldo); break;                                                  \
        case 6: hd_mr(k, w, F16, x, xs, 6, out, ldo); break;                                                  \
        case 7: hd_mr(k, w, F16, x, xs, 7, out, ldo); break;                                                  \
        default: hd_mr(k, w, F16, x, xs, 8, out, ldo); break;                                                 \
        }                                                                                                     \
    }
HD_INSTANCE(hd_f16, true)
HD_INSTANCE(hd_bf16, false)

void wk__hdot_avx512(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                     int64_t ldo) {
    if (f16) hd_f16(k, w, x, xs, mr, out, ldo);
    else hd_bf16(k, w, x, xs, mr, out, ldo);
}

static inline __attribute__((always_inline)) void hd4(int64_t k, const uint16_t *w, int64_t wrs, const bool f16,
                                                      const float *x, float *out) {
    const uint16_t *w0 = w, *w1 = w + wrs, *w2 = w + 2 * wrs, *w3 = w + 3 * wrs;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) {
        __m512 x0 = _mm512_loadu_ps(x + p), x1 = _mm512_loadu_ps(x + p + 16);
        a0 = _mm512_fmadd_ps(hw_load16(w0 + p, f16, 0xFFFF), x0, a0);
        a1 = _mm512_fmadd_ps(hw_load16(w1 + p, f16, 0xFFFF), x0, a1);
        a2 = _mm512_fmadd_ps(hw_load16(w2 + p, f16, 0xFFFF), x0, a2);
        a3 = _mm512_fmadd_ps(hw_load16(w3 + p, f16, 0xFFFF), x0, a3);
        b0 = _mm512_fmadd_ps(hw_load16(w0 + p + 16, f16, 0xFFFF), x1, b0);
        b1 = _mm512_fmadd_ps(hw_load16(w1 + p + 16, f16, 0xFFFF), x1, b1);
        b2 = _mm512_fmadd_ps(hw_load16(w2 + p + 16, f16, 0xFFFF), x1, b2);
        b3 = _mm512_fmadd_ps(hw_load16(w3 + p + 16, f16, 0xFFFF), x1, b3);
    }
    for (; p < k; p += 16) {
        __mmask16 mk = tail_mask(k - p);
        __m512 xv = _mm512_maskz_loadu_ps(mk, x + p);
        a0 = _mm512_fmadd_ps(hw_load16(w0 + p, f16, mk), xv, a0);
        a1 = _mm512_fmadd_ps(hw_load16(w1 + p, f16, mk), xv, a1);
        a2 = _mm512_fmadd_ps(hw_load16(w2 + p, f16, mk), xv, a2);
        a3 = _mm512_fmadd_ps(hw_load16(w3 + p, f16, mk), xv, a3);
    }
    out[0] = _mm512_reduce_add_ps(_mm512_add_ps(a0, b0));
    out[1] = _mm512_reduce_add_ps(_mm512_add_ps(a1, b1));
    out[2] = _mm512_reduce_add_ps(_mm512_add_ps(a2, b2));
    out[3] = _mm512_reduce_add_ps(_mm512_add_ps(a3, b3));
}

void wk__hdot4_avx512(int64_t k, const uint16_t *w, int64_t wrs, bool f16, const float *x, float *out) {
    if (f16) hd4(k, w, wrs, true, x, out);
    else hd4(k, w, wrs, false, x, out);
}

