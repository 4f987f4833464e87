/* AVX-512 f16 / bf16 weight dots (qmatmul_half.h). */
#include "cpu/quantized/qmatmul_half.h"
#include "cpu/quantized/qdot.h"
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
