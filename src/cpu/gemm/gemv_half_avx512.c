/* f16 / bf16 matrix-vector inner loops for AVX-512 (flags in CMakeLists.txt;
 * called only after a run-time cpuid check): the half-precision matrix is
 * widened in registers and fed straight to the FMAs, so it is read once
 * from memory and never written back as f32 (a convert-then-axpy pair of
 * passes reached only ~8 GB/s, a quarter of the read bandwidth). */
#include "cpu/gemm/gemv_half.h"
#include <immintrin.h>

static inline __m512 widen16(const uint16_t *p, __mmask16 m, bool f16) {
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (f16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

void wk__gemv_half_rows_avx512(float *acc, const float *x, const uint16_t *b, int64_t brs, int64_t k, int64_t w,
                               bool f16) {
    /* eight rows a pass over an L1-resident acc: long runs of each row for
     * the prefetcher and an eighth of the acc traffic (walking 16 columns
     * down all rows instead reads 32 bytes per row and ran at 6 GB/s) */
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
        __m512 xv[8];
        for (int r = 0; r < 8; r++) xv[r] = _mm512_set1_ps(x[p + r]);
        const uint16_t *row = b + p * brs;
        for (int64_t j = 0; j < w; j += 16) {
            __mmask16 m = tail_mask(w - j);
            __m512 s = _mm512_maskz_loadu_ps(m, acc + j);
            for (int r = 0; r < 8; r++) s = _mm512_fmadd_ps(xv[r], widen16(row + r * brs + j, m, f16), s);
            _mm512_mask_storeu_ps(acc + j, m, s);
        }
    }
    for (; p < k; p++) {
        __m512 xv = _mm512_set1_ps(x[p]);
        const uint16_t *row = b + p * brs;
        for (int64_t j = 0; j < w; j += 16) {
            __mmask16 m = tail_mask(w - j);
            _mm512_mask_storeu_ps(acc + j, m,
                                  _mm512_fmadd_ps(xv, widen16(row + j, m, f16), _mm512_maskz_loadu_ps(m, acc + j)));
        }
    }
}

float wk__gemv_half_dot_avx512(const float *x, const uint16_t *col, int64_t k, bool f16) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p), widen16(col + p, 0xffff, f16), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + p + 16), widen16(col + p + 16, 0xffff, f16), s1);
    }
    for (; p < k; p += 16) {
        __mmask16 m = tail_mask(k - p);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + p), widen16(col + p, m, f16), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}
