/* AVX2 quantized dot kernels (maddubs + madd) and the f16/bf16 weight dot. */
#define QD_VNNI 0
#define QD_NAME(x) x##_avx2
#include "cpu/quantized/qdot_simd.inc"

/* 8 f16 / bf16 weights widened to f32 */
static inline __m256 hd_load8(const uint16_t *w, bool f16) {
    __m128i h = _mm_loadu_si128((const __m128i *)w);
    if (f16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* U independent accumulators per row (U * MR <= 8) so the fma chains
 * overlap: with one row a single chain would run at the fma latency */
static inline __attribute__((always_inline)) void hd_mr(int64_t k, const uint16_t *w, bool f16, const float *x,
                                                        int64_t xs, const int MR, float *out, int64_t ldo) {
    enum { U_MAX = 4 };
    const int U = MR == 1 ? 4 : MR == 2 ? 4 : MR <= 4 ? 2 : 1;
    __m256 acc[U_MAX][WK_QDOT_MR];
    for (int u = 0; u < U; u++)
        for (int i = 0; i < MR; i++) acc[u][i] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 * U <= k; p += 8 * U)
        for (int u = 0; u < U; u++) {
            __m256 wv = hd_load8(w + p + 8 * u, f16);
            for (int i = 0; i < MR; i++)
                acc[u][i] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i * xs + p + 8 * u), acc[u][i]);
        }
    for (; p + 8 <= k; p += 8) {
        __m256 wv = hd_load8(w + p, f16);
        for (int i = 0; i < MR; i++) acc[0][i] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i * xs + p), acc[0][i]);
    }
    for (int i = 0; i < MR; i++) {
        for (int u = 1; u < U; u++) acc[0][i] = _mm256_add_ps(acc[0][i], acc[u][i]);
        float s = qd_hsum(acc[0][i]);
        for (int64_t q = p; q < k; q++) s += (f16 ? _cvtsh_ss(w[q]) : wk_bf16_to_f32(w[q])) * x[i * xs + q];
        out[i * ldo] = s;
    }
}

void wk__hdot_avx2(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                   int64_t ldo) {
    switch (mr) {
    case 1: hd_mr(k, w, f16, x, xs, 1, out, ldo); break;
    case 2: hd_mr(k, w, f16, x, xs, 2, out, ldo); break;
    case 3: hd_mr(k, w, f16, x, xs, 3, out, ldo); break;
    case 4: hd_mr(k, w, f16, x, xs, 4, out, ldo); break;
    case 5: hd_mr(k, w, f16, x, xs, 5, out, ldo); break;
    case 6: hd_mr(k, w, f16, x, xs, 6, out, ldo); break;
    case 7: hd_mr(k, w, f16, x, xs, 7, out, ldo); break;
    default: hd_mr(k, w, f16, x, xs, 8, out, ldo); break;
    }
}
