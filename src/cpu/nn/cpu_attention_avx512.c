/* AVX-512 scores kernel of the CPU attention (cpu_attention.h): four keys
 * at a time, 16 lanes of d per FMA (a masked load for the tail of d), the
 * four accumulators folded to 8 lanes and reduced together by hadd. */
#include "cpu/nn/cpu_attention.h"
#include <immintrin.h>

static inline __m256 fold(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
}

void wk__attn_dots_f32_avx512(const float *q, const float *k, int64_t krs, int64_t n, int64_t d, float *s) {
    int64_t dfull = d & ~(int64_t)15;
    __mmask16 tail = (__mmask16)((1u << (d & 15)) - 1u);
    for (int64_t j = 0; j < n; j += 4) {
        int64_t nk = n - j < 4 ? n - j : 4;
        /* past the end: the last key again (its sums are not stored) */
        const float *k0 = k + j * krs, *k1 = k + (j + (nk > 1)) * krs;
        const float *k2 = k + (j + (nk > 2 ? 2 : nk - 1)) * krs, *k3 = k + (j + nk - 1) * krs;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int64_t p = 0;
        for (; p < dfull; p += 16) {
            __m512 qv = _mm512_loadu_ps(q + p);
            a0 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k0 + p), a0);
            a1 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k1 + p), a1);
            a2 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k2 + p), a2);
            a3 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k3 + p), a3);
        }
        if (tail) {
            __m512 qv = _mm512_maskz_loadu_ps(tail, q + p);
            a0 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k0 + p), a0);
            a1 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k1 + p), a1);
            a2 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k2 + p), a2);
            a3 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k3 + p), a3);
        }
        /* h = [a0 a1 a2 a3 | a0 a1 a2 a3] partial sums, then the halves */
        __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(fold(a0), fold(a1)), _mm256_hadd_ps(fold(a2), fold(a3)));
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

/* 64 outputs (four vectors) at a time, the last block masked. */
void wk__attn_pv_f32_avx512(const float *p, const float *v, int64_t vrs, int64_t n, int64_t dv, float *o) {
    for (int64_t e0 = 0; e0 < dv; e0 += 64) {
        int64_t w = dv - e0 < 64 ? dv - e0 : 64;
        __mmask16 m[4];
        for (int c = 0; c < 4; c++) {
            int64_t cnt = w - 16 * c;
            m[c] = cnt >= 16 ? (__mmask16)0xFFFF : cnt <= 0 ? (__mmask16)0 : (__mmask16)((1u << cnt) - 1u);
        }
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const float *row = v + e0;
        if (w == 64) {
            for (int64_t j = 0; j < n; j++, row += vrs) {
                __m512 pj = _mm512_set1_ps(p[j]);
                a0 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(row), a0);
                a1 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(row + 16), a1);
                a2 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(row + 32), a2);
                a3 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(row + 48), a3);
            }
        } else {
            for (int64_t j = 0; j < n; j++, row += vrs) {
                __m512 pj = _mm512_set1_ps(p[j]);
                a0 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[0], row), a0);
                a1 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[1], row + 16), a1);
                a2 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[2], row + 32), a2);
                a3 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[3], row + 48), a3);
            }
        }
        _mm512_mask_storeu_ps(o + e0, m[0], a0);
        _mm512_mask_storeu_ps(o + e0 + 16, m[1], a1);
        _mm512_mask_storeu_ps(o + e0 + 32, m[2], a2);
        _mm512_mask_storeu_ps(o + e0 + 48, m[3], a3);
    }
}

/* ---- f16 / bf16 caches (cpu_attention_half.inc) ---- */
#define HV __m512
#define HW 16
#define HZERO() _mm512_setzero_ps()
#define HSET1(x) _mm512_set1_ps(x)
#define HFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define HLOADF(p) _mm512_loadu_ps(p)
#define HSTOREF(p, v) _mm512_storeu_ps(p, v)
#define HLOAD16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define HLOADB16(p) \
    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))
static inline void hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3, float *out) {
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(fold(a0), fold(a1)), _mm256_hadd_ps(fold(a2), fold(a3)));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}
#define HSUM4(a0, a1, a2, a3, out) hsum4(a0, a1, a2, a3, out)
#define HSFX avx512
#include "cpu/nn/cpu_attention_half.inc"
