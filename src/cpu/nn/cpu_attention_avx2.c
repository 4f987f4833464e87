/* AVX2 scores kernel of the CPU attention (cpu_attention.h): four keys at a
 * time, 8 lanes of d per FMA (a masked load for the tail of d), the four
 * accumulators reduced together by hadd. */
#include "cpu/nn/cpu_attention.h"
#include <immintrin.h>

void wk__attn_dots_f32_avx2(const float *q, const float *k, int64_t krs, int64_t n, int64_t d, float *s) {
    int64_t dfull = d & ~(int64_t)7;
    int rem = (int)(d & 7);
    /* lanes below rem loaded, the rest zero */
    __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int64_t j = 0; j < n; j += 4) {
        int64_t nk = n - j < 4 ? n - j : 4;
        /* past the end: the last key again (its sums are not stored) */
        const float *k0 = k + j * krs, *k1 = k + (j + (nk > 1)) * krs;
        const float *k2 = k + (j + (nk > 2 ? 2 : nk - 1)) * krs, *k3 = k + (j + nk - 1) * krs;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int64_t p = 0;
        for (; p < dfull; p += 8) {
            __m256 qv = _mm256_loadu_ps(q + p);
            a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + p), a0);
            a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + p), a1);
            a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + p), a2);
            a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + p), a3);
        }
        if (rem) {
            __m256 qv = _mm256_maskload_ps(q + p, tail);
            a0 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k0 + p, tail), a0);
            a1 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k1 + p, tail), a1);
            a2 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k2 + p, tail), a2);
            a3 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k3 + p, tail), a3);
        }
        __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
        __m128 r = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        if (nk == 4) {
            _mm_storeu_ps(s + j, r);
        } else {
            float t[4];
            _mm_storeu_ps(t, r);
            for (int64_t i = 0; i < nk; i++) s[j + i] = t[i];
        }
    }
}

/* 32 outputs (four vectors) at a time, the last block masked. */
void wk__attn_pv_f32_avx2(const float *p, const float *v, int64_t vrs, int64_t n, int64_t dv, float *o) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t e0 = 0; e0 < dv; e0 += 32) {
        int64_t w = dv - e0 < 32 ? dv - e0 : 32;
        __m256i m[4];
        for (int c = 0; c < 4; c++) m[c] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(w - 8 * c)), lane);
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const float *row = v + e0;
        if (w == 32) {
            for (int64_t j = 0; j < n; j++, row += vrs) {
                __m256 pj = _mm256_set1_ps(p[j]);
                a0 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row), a0);
                a1 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row + 8), a1);
                a2 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row + 16), a2);
                a3 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row + 24), a3);
            }
        } else {
            for (int64_t j = 0; j < n; j++, row += vrs) {
                __m256 pj = _mm256_set1_ps(p[j]);
                a0 = _mm256_fmadd_ps(pj, _mm256_maskload_ps(row, m[0]), a0);
                a1 = _mm256_fmadd_ps(pj, _mm256_maskload_ps(row + 8, m[1]), a1);
                a2 = _mm256_fmadd_ps(pj, _mm256_maskload_ps(row + 16, m[2]), a2);
                a3 = _mm256_fmadd_ps(pj, _mm256_maskload_ps(row + 24, m[3]), a3);
            }
        }
        _mm256_maskstore_ps(o + e0, m[0], a0);
        _mm256_maskstore_ps(o + e0 + 8, m[1], a1);
        _mm256_maskstore_ps(o + e0 + 16, m[2], a2);
        _mm256_maskstore_ps(o + e0 + 24, m[3], a3);
    }
}

/* ---- f16 / bf16 caches (cpu_attention_half.inc) ---- */
#define HV __m256
#define HW 8
#define HZERO() _mm256_setzero_ps()
#define HSET1(x) _mm256_set1_ps(x)
#define HFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define HLOADF(p) _mm256_loadu_ps(p)
#define HSTOREF(p, v) _mm256_storeu_ps(p, v)
#define HLOAD16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define HLOADB16(p) \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))
static inline void hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3, float *out) {
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}
#define HSUM4(a0, a1, a2, a3, out) hsum4(a0, a1, a2, a3, out)
#define HSFX avx2
#include "cpu/nn/cpu_attention_half.inc"
