/* AVX2 row dequantizers: dequant_block.h's formulas 8 lanes at a time, with
 * the same float ops in the same order (int -> float exact, then d * q, or
 * d * q + m, or dl * q - ml; the products of scales stay scalar f32 as
 * there), so the results are the reference's bits. Called only through
 * wk__cpu_dequant_row (dequant_rows.c) after the vmath level says AVX2. */
#include <immintrin.h>
#include "cpu/quantized/dequant_rows.h"
#include "quant/dequant_block.h"

/* -mfma is on for this file: never contract a*b+c (clang; GCC's ISO C
 * mode does not contract). Intrinsics are separate mul / add anyway. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* 8 int32 lanes -> float, times d, plus m (when add), stored at y */
static inline void put8_mul(float *y, __m256i q, __m256 d) { _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d)); }
static inline void put8_mul_add(float *y, __m256i q, __m256 d, __m256 m) {
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m));
}
static inline void put8_mul_sub(float *y, __m256i q, __m256 d, __m256 m) {
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m));
}

/* bytes 0..7 / 8..15 of a 128-bit vector, zero- or sign-extended to int32 */
static inline __m256i u8lo(__m128i v) { return _mm256_cvtepu8_epi32(v); }
static inline __m256i u8hi(__m128i v) { return _mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)); }
static inline __m256i s8lo(__m128i v) { return _mm256_cvtepi8_epi32(v); }
static inline __m256i s8hi(__m128i v) { return _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)); }

/* The 16 low and 16 high nibbles of qs as bytes (elements 0..15, 16..31). */
static inline void nibbles16(const uint8_t *qs, __m128i *lo, __m128i *hi) {
    __m128i v = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    *lo = _mm_and_si128(v, m);
    *hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
}

/* The fifth bits of elements j0..j0+15 (bit j of qh) as 0 / 16 bytes. */
static inline __m128i fifth16(uint32_t qh, int j0) {
    /* byte k gets bits j0 + k: broadcast the 16 bits, pick each with a mask */
    uint32_t bits = qh >> j0;
    __m128i v = _mm_set1_epi16((short)(bits & 0xffff));
    /* bytes 0..7 test bit k of the low byte, bytes 8..15 bit k of the high byte */
    __m128i sel = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(b, sel), sel), _mm_set1_epi8(16));
}

void wk__dequant_row_q4_0_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q4_0 *b = (const wk_block_q4_0 *)src;
    const __m128i eight = _mm_set1_epi8(8);
    for (int64_t i = 0; i < n / WK_QK; i++, dst += WK_QK) {
        __m256 d = _mm256_set1_ps(wk__q_f16(b[i].d));
        __m128i lo, hi;
        nibbles16(b[i].qs, &lo, &hi);
        lo = _mm_sub_epi8(lo, eight);
        hi = _mm_sub_epi8(hi, eight);
        put8_mul(dst, s8lo(lo), d);
        put8_mul(dst + 8, s8hi(lo), d);
        put8_mul(dst + 16, s8lo(hi), d);
        put8_mul(dst + 24, s8hi(hi), d);
    }
}

void wk__dequant_row_q4_1_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q4_1 *b = (const wk_block_q4_1 *)src;
    for (int64_t i = 0; i < n / WK_QK; i++, dst += WK_QK) {
        __m256 d = _mm256_set1_ps(wk__q_f16(b[i].d)), m = _mm256_set1_ps(wk__q_f16(b[i].m));
        __m128i lo, hi;
        nibbles16(b[i].qs, &lo, &hi);
        put8_mul_add(dst, u8lo(lo), d, m);
        put8_mul_add(dst + 8, u8hi(lo), d, m);
        put8_mul_add(dst + 16, u8lo(hi), d, m);
        put8_mul_add(dst + 24, u8hi(hi), d, m);
    }
}

void wk__dequant_row_q5_0_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q5_0 *b = (const wk_block_q5_0 *)src;
    const __m128i sixteen = _mm_set1_epi8(16);
    for (int64_t i = 0; i < n / WK_QK; i++, dst += WK_QK) {
        __m256 d = _mm256_set1_ps(wk__q_f16(b[i].d));
        uint32_t qh = wk__q_le32(b[i].qh);
        __m128i lo, hi;
        nibbles16(b[i].qs, &lo, &hi);
        lo = _mm_sub_epi8(_mm_or_si128(lo, fifth16(qh, 0)), sixteen);
        hi = _mm_sub_epi8(_mm_or_si128(hi, fifth16(qh, 16)), sixteen);
        put8_mul(dst, s8lo(lo), d);
        put8_mul(dst + 8, s8hi(lo), d);
        put8_mul(dst + 16, s8lo(hi), d);
        put8_mul(dst + 24, s8hi(hi), d);
    }
}

void wk__dequant_row_q5_1_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q5_1 *b = (const wk_block_q5_1 *)src;
    for (int64_t i = 0; i < n / WK_QK; i++, dst += WK_QK) {
        __m256 d = _mm256_set1_ps(wk__q_f16(b[i].d)), m = _mm256_set1_ps(wk__q_f16(b[i].m));
        uint32_t qh = wk__q_le32(b[i].qh);
        __m128i lo, hi;
        nibbles16(b[i].qs, &lo, &hi);
        lo = _mm_or_si128(lo, fifth16(qh, 0));
        hi = _mm_or_si128(hi, fifth16(qh, 16));
        put8_mul_add(dst, u8lo(lo), d, m);
        put8_mul_add(dst + 8, u8hi(lo), d, m);
        put8_mul_add(dst + 16, u8lo(hi), d, m);
        put8_mul_add(dst + 24, u8hi(hi), d, m);
    }
}

void wk__dequant_row_q8_0_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q8_0 *b = (const wk_block_q8_0 *)src;
    for (int64_t i = 0; i < n / WK_QK; i++, dst += WK_QK) {
        __m256 d = _mm256_set1_ps(wk__q_f16(b[i].d));
        __m128i q0 = _mm_loadu_si128((const __m128i *)b[i].qs), q1 = _mm_loadu_si128((const __m128i *)(b[i].qs + 16));
        put8_mul(dst, s8lo(q0), d);
        put8_mul(dst + 8, s8hi(q0), d);
        put8_mul(dst + 16, s8lo(q1), d);
        put8_mul(dst + 24, s8hi(q1), d);
    }
}

/* 32 byte values (two 128-bit halves) as dl * q - ml into y[0..31] */
static inline void put32_mul_sub(float *y, __m128i a, __m128i c, float dl, float ml) {
    __m256 d = _mm256_set1_ps(dl), m = _mm256_set1_ps(ml);
    put8_mul_sub(y, u8lo(a), d, m);
    put8_mul_sub(y + 8, u8hi(a), d, m);
    put8_mul_sub(y + 16, u8lo(c), d, m);
    put8_mul_sub(y + 24, u8hi(c), d, m);
}

void wk__dequant_row_q4_K_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q4_K *b = (const wk_block_q4_K *)src;
    const __m128i m4 = _mm_set1_epi8(0x0f);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = wk__q_f16(b[i].d), dmin = wk__q_f16(b[i].dmin);
        const uint8_t *q = b[i].qs;
        for (int is = 0; is < 8; is += 2, q += 32, dst += 64) {
            uint8_t s1, m1, s2, m2;
            wk__q4k_scale_min(is, b[i].scales, &s1, &m1);
            wk__q4k_scale_min(is + 1, b[i].scales, &s2, &m2);
            __m128i a = _mm_loadu_si128((const __m128i *)q), c = _mm_loadu_si128((const __m128i *)(q + 16));
            put32_mul_sub(dst, _mm_and_si128(a, m4), _mm_and_si128(c, m4), d * (float)s1, dmin * (float)m1);
            put32_mul_sub(dst + 32, _mm_and_si128(_mm_srli_epi16(a, 4), m4), _mm_and_si128(_mm_srli_epi16(c, 4), m4),
                          d * (float)s2, dmin * (float)m2);
        }
    }
}

void wk__dequant_row_q5_K_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q5_K *b = (const wk_block_q5_K *)src;
    const __m128i m4 = _mm_set1_epi8(0x0f), sixteen = _mm_set1_epi8(16);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = wk__q_f16(b[i].d), dmin = wk__q_f16(b[i].dmin);
        const uint8_t *ql = b[i].qs;
        __m128i h0 = _mm_loadu_si128((const __m128i *)b[i].qh), h1 = _mm_loadu_si128((const __m128i *)(b[i].qh + 16));
        for (int is = 0; is < 8; is += 2, ql += 32, dst += 64) {
            uint8_t s1, m1, s2, m2;
            wk__q4k_scale_min(is, b[i].scales, &s1, &m1);
            wk__q4k_scale_min(is + 1, b[i].scales, &s2, &m2);
            /* bit is of qh[l] -> +16 on the low nibble, bit is + 1 on the high one */
            __m128i u1 = _mm_set1_epi8((char)(1 << is)), u2 = _mm_set1_epi8((char)(2 << is));
            __m128i a = _mm_loadu_si128((const __m128i *)ql), c = _mm_loadu_si128((const __m128i *)(ql + 16));
            __m128i la = _mm_or_si128(_mm_and_si128(a, m4), _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(h0, u1), u1), sixteen));
            __m128i lc = _mm_or_si128(_mm_and_si128(c, m4), _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(h1, u1), u1), sixteen));
            __m128i ha = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4),
                                      _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(h0, u2), u2), sixteen));
            __m128i hc = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(c, 4), m4),
                                      _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(h1, u2), u2), sixteen));
            put32_mul_sub(dst, la, lc, d * (float)s1, dmin * (float)m1);
            put32_mul_sub(dst + 32, ha, hc, d * (float)s2, dmin * (float)m2);
        }
    }
}

/* 16 bytes of 6-bit values, minus 32, times ds (= d * scale, as the reference) */
static inline void put16_q6(float *y, __m128i q, float ds) {
    __m256 d = _mm256_set1_ps(ds);
    q = _mm_sub_epi8(q, _mm_set1_epi8(32));
    put8_mul(y, s8lo(q), d);
    put8_mul(y + 8, s8hi(q), d);
}

void wk__dequant_row_q6_K_avx2(const void *src, float *dst, int64_t n) {
    const wk_block_q6_K *b = (const wk_block_q6_K *)src;
    const __m128i m4 = _mm_set1_epi8(0x0f), m3 = _mm_set1_epi8(3);
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        float d = wk__q_f16(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        const int8_t *sc = b[i].scales;
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, dst += 128) {
            for (int h = 0; h < 2; h++) { /* l = 16 h .. 16 h + 15: scale index is = h */
                __m128i a = _mm_loadu_si128((const __m128i *)(ql + 16 * h));
                __m128i c = _mm_loadu_si128((const __m128i *)(ql + 32 + 16 * h));
                __m128i hb = _mm_loadu_si128((const __m128i *)(qh + 16 * h));
                __m128i q1 = _mm_or_si128(_mm_and_si128(a, m4), _mm_slli_epi16(_mm_and_si128(hb, m3), 4));
                __m128i q2 = _mm_or_si128(_mm_and_si128(c, m4), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 2), m3), 4));
                __m128i q3 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4),
                                          _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 4), m3), 4));
                __m128i q4 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(c, 4), m4),
                                          _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 6), m3), 4));
                float *y = dst + 16 * h;
                put16_q6(y, q1, d * (float)sc[h]);
                put16_q6(y + 32, q2, d * (float)sc[h + 2]);
                put16_q6(y + 64, q3, d * (float)sc[h + 4]);
                put16_q6(y + 96, q4, d * (float)sc[h + 6]);
            }
        }
    }
}
