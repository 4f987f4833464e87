/* AVX-512 dot-form block (dotmm.h). Each element: one zmm accumulator,
 * fma over k in 16-lane chunks in order, the last chunk masked (zero
 * lanes), then _mm512_reduce_add_ps. Tiles of up to 4 x rows x 4 w rows
 * share the loads (16 chains in flight); every tile shape runs that same
 * per-element sequence, so the bits never depend on the tile. f16 / bf16 w
 * is widened in registers (vcvtph2ps, 16-bit shift): read once, no copy. */
#include "cpu/gemm/dotmm.h"
#include <immintrin.h>

static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
}

static inline __attribute__((always_inline)) __m512 ld_w(const void *w, int64_t p, __mmask16 mk, const int WT) {
    if (WT == WK_DOTMM_F32) return _mm512_maskz_loadu_ps(mk, (const float *)w + p);
    __m256i h = _mm256_maskz_loadu_epi16(mk, (const uint16_t *)w + p);
    if (WT == WK_DOTMM_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) void tile(int64_t k, const float *x, int64_t xs, const int MR,
                                                       const char *w, int64_t wrsb, const int NR, const int WT,
                                                       float *out, int64_t ldo) {
    __m512 acc[4][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) acc[i][j] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m512 wv[4];
        for (int j = 0; j < NR; j++) wv[j] = ld_w(w + j * wrsb, p, 0xFFFF, WT);
        for (int i = 0; i < MR; i++) {
            __m512 xv = _mm512_loadu_ps(x + i * xs + p);
            for (int j = 0; j < NR; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    if (p < k) {
        __mmask16 mk = tail_mask(k - p);
        __m512 wv[4];
        for (int j = 0; j < NR; j++) wv[j] = ld_w(w + j * wrsb, p, mk, WT);
        for (int i = 0; i < MR; i++) {
            __m512 xv = _mm512_maskz_loadu_ps(mk, x + i * xs + p);
            for (int j = 0; j < NR; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) out[i * ldo + j] = _mm512_reduce_add_ps(acc[i][j]);
}

/* 1: f16 / bf16 w at M = 1 runs 1 x 1 tiles: each weight row read front
 * to back, one stream the prefetcher follows (decode streams its weights
 * from DRAM; 4 interleaved rows ran ~10% slower on SmolLM2 F16 decode).
 * The tile never changes the bits. */
#ifndef DM_ONE_ROW
#define DM_ONE_ROW 1
#endif
/* WT and the tile shape are compile-time constants in each instance */
#define DM_BLOCK(name, WT, ES)                                                                                \
    static void name(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs, int64_t n, \
                     float *out, int64_t ldo) {                                                               \
        const char *wb = w;                                                                                   \
        int64_t wrsb = wrs * ES;                                                                              \
        int64_t i = 0;                                                                                        \
        for (; i < m; i += 4) {                                                                               \
            int mr = m - i < 4 ? (int)(m - i) : 4;                                                            \
            const float *xi = x + i * xs;                                                                     \
            float *oi = out + i * ldo;                                                                        \
            int64_t j = 0;                                                                                    \
            for (; j + 4 <= n && !(DM_ONE_ROW && mr == 1 && WT != WK_DOTMM_F32); j += 4) {                  \
                const char *wj = wb + j * wrsb;                                                               \
                switch (mr) {                                                                                 \
                case 1: tile(k, xi, xs, 1, wj, wrsb, 4, WT, oi + j, ldo); break;                              \
                case 2: tile(k, xi, xs, 2, wj, wrsb, 4, WT, oi + j, ldo); break;                              \
                case 3: tile(k, xi, xs, 3, wj, wrsb, 4, WT, oi + j, ldo); break;                              \
                default: tile(k, xi, xs, 4, wj, wrsb, 4, WT, oi + j, ldo); break;                             \
                }                                                                                             \
            }                                                                                                 \
            for (; j < n; j++) {                                                                              \
                const char *wj = wb + j * wrsb;                                                               \
                switch (mr) {                                                                                 \
                case 1: tile(k, xi, xs, 1, wj, wrsb, 1, WT, oi + j, ldo); break;                              \
                case 2: tile(k, xi, xs, 2, wj, wrsb, 1, WT, oi + j, ldo); break;                              \
                case 3: tile(k, xi, xs, 3, wj, wrsb, 1, WT, oi + j, ldo); break;                              \
                default: tile(k, xi, xs, 4, wj, wrsb, 1, WT, oi + j, ldo); break;                             \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }
DM_BLOCK(dm_f32, WK_DOTMM_F32, 4)
DM_BLOCK(dm_f16, WK_DOTMM_F16, 2)
DM_BLOCK(dm_bf16, WK_DOTMM_BF16, 2)

void wk__dotmm_block_avx512(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs,
                            int64_t n, wk_dotmm_wtype wt, float *out, int64_t ldo) {
    if (wt == WK_DOTMM_F32) dm_f32(k, x, xs, m, w, wrs, n, out, ldo);
    else if (wt == WK_DOTMM_F16) dm_f16(k, x, xs, m, w, wrs, n, out, ldo);
    else dm_bf16(k, x, xs, m, w, wrs, n, out, ldo);
}
