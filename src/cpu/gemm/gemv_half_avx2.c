/* f16 / bf16 matrix-vector inner loops for AVX2 + F16C (flags in
 * CMakeLists.txt; called only after a run-time cpuid check): the AVX-512
 * file's loops (gemv_half_avx512.c) on 8-lane ymm vectors, the matrix
 * widened in registers and fed straight to the FMAs. The portable path
 * they replace converted 1024-value runs through vmath into a stack buffer
 * and read them back: 6 GB/s on a 576 x 1536 f16 matrix held in L3. */
#include "cpu/gemm/gemv_half.h"
#include <immintrin.h>
#include <string.h>

static inline __m256 widen8(const uint16_t *p, bool f16) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (f16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The last w < 8 values through a zero-padded copy (never read past B). */
static inline __m256 widen_tail(const uint16_t *p, int64_t w, bool f16) {
    uint16_t t[8] = {0};
    memcpy(t, p, sizeof(uint16_t) * (size_t)w);
    return widen8(t, f16);
}

void wk__gemv_half_rows_avx2(float *acc, const float *x, const uint16_t *b, int64_t brs, int64_t k, int64_t w,
                             bool f16) {
    const int64_t wv = w / 8 * 8;
    int64_t p = 0;
    /* eight rows a pass over an L1-resident acc, as on AVX-512 */
    for (; p + 8 <= k; p += 8) {
        __m256 xv[8];
        for (int r = 0; r < 8; r++) xv[r] = _mm256_set1_ps(x[p + r]);
        const uint16_t *row = b + p * brs;
        for (int64_t j = 0; j < wv; j += 8) {
            __m256 s = _mm256_loadu_ps(acc + j);
            for (int r = 0; r < 8; r++) s = _mm256_fmadd_ps(xv[r], widen8(row + r * brs + j, f16), s);
            _mm256_storeu_ps(acc + j, s);
        }
        if (wv < w) {
            float t[8];
            __m256 s = _mm256_setzero_ps();
            for (int r = 0; r < 8; r++) s = _mm256_fmadd_ps(xv[r], widen_tail(row + r * brs + wv, w - wv, f16), s);
            _mm256_storeu_ps(t, s);
            for (int64_t j = wv; j < w; j++) acc[j] += t[j - wv];
        }
    }
    for (; p < k; p++) {
        __m256 xv = _mm256_set1_ps(x[p]);
        const uint16_t *row = b + p * brs;
        for (int64_t j = 0; j < wv; j += 8)
            _mm256_storeu_ps(acc + j, _mm256_fmadd_ps(xv, widen8(row + j, f16), _mm256_loadu_ps(acc + j)));
        if (wv < w) {
            float t[8];
            _mm256_storeu_ps(t, _mm256_mul_ps(xv, widen_tail(row + wv, w - wv, f16)));
            for (int64_t j = wv; j < w; j++) acc[j] += t[j - wv];
        }
    }
}

float wk__gemv_half_dot_avx2(const float *x, const uint16_t *col, int64_t k, bool f16) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p), widen8(col + p, f16), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p + 8), widen8(col + p + 8, f16), s1);
    }
    if (p + 8 <= k) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + p), widen8(col + p, f16), s0);
        p += 8;
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(s0, s1));
    float s = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
    for (; p < k; p++) {
        float v = f16 ? _cvtsh_ss(col[p]) : 0.0f;
        if (!f16) {
            uint32_t u = (uint32_t)col[p] << 16;
            memcpy(&v, &u, sizeof v);
        }
        s += x[p] * v;
    }
    return s;
}
