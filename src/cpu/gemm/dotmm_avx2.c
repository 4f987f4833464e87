/* AVX2 + FMA + F16C dot-form block (dotmm.h). Each element: one ymm
 * accumulator, fma over k in 8-lane chunks in order, the last chunk zero
 * padded, then one fixed horizontal sum (hsum8). Tiles of up to 2 x rows x
 * 4 w rows (8 chains, 13 of the 16 ymm registers) share the loads; every
 * tile shape runs the same per-element sequence, so the bits never depend
 * on the tile. f16 / bf16 w is widened in registers. */
#include "cpu/gemm/dotmm.h"
#include <immintrin.h>
#include <string.h>

static inline __attribute__((always_inline)) __m256 ld_w(const void *w, int64_t p, const int WT) {
    if (WT == WK_DOTMM_F32) return _mm256_loadu_ps((const float *)w + p);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + p));
    if (WT == WK_DOTMM_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* the last k % 8 values of w, zero padded */
static inline __attribute__((always_inline)) __m256 ld_w_tail(const void *w, int64_t p, int64_t left, const int WT) {
    if (WT == WK_DOTMM_F32) {
        float t[8] = {0};
        memcpy(t, (const float *)w + p, sizeof(float) * (size_t)left);
        return _mm256_loadu_ps(t);
    }
    uint16_t t[8] = {0};
    memcpy(t, (const uint16_t *)w + p, sizeof(uint16_t) * (size_t)left);
    return ld_w(t, 0, WT);
}

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline __attribute__((always_inline)) void tile(int64_t k, const float *x, int64_t xs, const int MR,
                                                       const char *w, int64_t wrsb, const int NR, const int WT,
                                                       float *out, int64_t ldo) {
    __m256 acc[2][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
        __m256 wv[4];
        for (int j = 0; j < NR; j++) wv[j] = ld_w(w + j * wrsb, p, WT);
        for (int i = 0; i < MR; i++) {
            __m256 xv = _mm256_loadu_ps(x + i * xs + p);
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (p < k) {
        int64_t left = k - p;
        __m256 wv[4];
        for (int j = 0; j < NR; j++) wv[j] = ld_w_tail(w + j * wrsb, p, left, WT);
        for (int i = 0; i < MR; i++) {
            __m256 xv = ld_w_tail(x + i * xs, p, left, WK_DOTMM_F32);
            for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) out[i * ldo + j] = hsum8(acc[i][j]);
}

#define DM_BLOCK(name, WT, ES)                                                                                \
    static void name(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs, int64_t n, \
                     float *out, int64_t ldo) {                                                               \
        const char *wb = w;                                                                                   \
        int64_t wrsb = wrs * ES;                                                                              \
        for (int64_t i = 0; i < m; i += 2) {                                                                  \
            const float *xi = x + i * xs;                                                                     \
            float *oi = out + i * ldo;                                                                        \
            bool two = m - i >= 2;                                                                            \
            int64_t j = 0;                                                                                    \
            for (; j + 4 <= n; j += 4) {                                                                      \
                if (two) tile(k, xi, xs, 2, wb + j * wrsb, wrsb, 4, WT, oi + j, ldo);                         \
                else tile(k, xi, xs, 1, wb + j * wrsb, wrsb, 4, WT, oi + j, ldo);                             \
            }                                                                                                 \
            for (; j < n; j++) {                                                                              \
                if (two) tile(k, xi, xs, 2, wb + j * wrsb, wrsb, 1, WT, oi + j, ldo);                         \
                else tile(k, xi, xs, 1, wb + j * wrsb, wrsb, 1, WT, oi + j, ldo);                             \
            }                                                                                                 \
        }                                                                                                     \
    }
DM_BLOCK(dm_f32, WK_DOTMM_F32, 4)
DM_BLOCK(dm_f16, WK_DOTMM_F16, 2)
DM_BLOCK(dm_bf16, WK_DOTMM_BF16, 2)

void wk__dotmm_block_avx2(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs, int64_t n,
                          wk_dotmm_wtype wt, float *out, int64_t ldo) {
    if (wt == WK_DOTMM_F32) dm_f32(k, x, xs, m, w, wrs, n, out, ldo);
    else if (wt == WK_DOTMM_F16) dm_f16(k, x, xs, m, w, wrs, n, out, ldo);
    else dm_bf16(k, x, xs, m, w, wrs, n, out, ldo);
}
