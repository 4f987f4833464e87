/* Row quantizers of the 32-element block types, following ggml's reference
 * quantizers (ggml-quants.c *_ref). Every step is a float32 operation in the
 * order ggml and gguf-py 0.19.0 use (scale = extreme / constant, inverse
 * scale 1/d or 0, trunc(x * id + offset) or roundf), so the bytes match
 * gguf-py's quantize() exactly for q4_0 q4_1 q5_0 q5_1 q8_0. q8_1 and iq4_nl
 * (gguf-py has no quantizer for them) follow ggml's reference the same way.
 * Scales are stored as f16 with round-to-nearest-even, like numpy's astype. */
#include <math.h>
#include <string.h>
#include "quant/quant.h"
#include "base/blocks.h"
#include "quant/quant_rows.h"
#include "wick/wick.h"

/* ggml's rounding order: no a*b+c contraction into an FMA (clang contracts
 * by default when the target has FMA; GCC in ISO C mode does not). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* The value of largest magnitude (the first one on ties), sign kept. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

/* trunc(v) clamped to [0, top]: the (int8_t) cast then MIN of ggml, which
 * gguf-py writes as trunc + astype(uint8) + clip; v >= 0 up to rounding.
 * The int conversion truncates like truncf (a libm call without SSE4.1)
 * and only sees values in (0, top), so it is always defined. */
static uint8_t trunc_clamp(float v, int top) {
    if (!(v > 0.0f)) return 0;
    return v >= (float)top ? (uint8_t)top : (uint8_t)(int)v;
}

void wk__quantize_row_q4_0_ref(const float *x, void *y, int64_t n) {
    wk_block_q4_0 *b = (wk_block_q4_0 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        float d = signed_absmax(x, WK_QK) / -8.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        for (int j = 0; j < WK_QK / 2; j++) {
            uint8_t lo = trunc_clamp(x[j] * id + 8.5f, 15), hi = trunc_clamp(x[j + 16] * id + 8.5f, 15);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

void wk__quantize_row_q4_1_ref(const float *x, void *y, int64_t n) {
    wk_block_q4_1 *b = (wk_block_q4_1 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        float mn, mx;
        min_max(x, WK_QK, &mn, &mx);
        float d = (mx - mn) / 15.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(mn);
        for (int j = 0; j < WK_QK / 2; j++) {
            uint8_t lo = trunc_clamp((x[j] - mn) * id + 0.5f, 15), hi = trunc_clamp((x[j + 16] - mn) * id + 0.5f, 15);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

/* The 5-bit types: low nibbles in qs (element j and j + 16 share a byte),
 * the fifth bit of element j in bit j of the little-endian qh. */
static void pack5(const uint8_t *q, uint8_t *qs, uint8_t *qh) {
    uint32_t h = 0;
    for (int j = 0; j < WK_QK / 2; j++) {
        qs[j] = (uint8_t)((q[j] & 0xf) | (q[j + 16] & 0xf) << 4);
        h |= (uint32_t)(q[j] >> 4) << j;
        h |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    put_le32(qh, h);
}

void wk__quantize_row_q5_0_ref(const float *x, void *y, int64_t n) {
    wk_block_q5_0 *b = (wk_block_q5_0 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        float d = signed_absmax(x, WK_QK) / -16.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t q[WK_QK];
        for (int j = 0; j < WK_QK; j++) q[j] = trunc_clamp(x[j] * id + 16.5f, 31);
        b[i].d = wk_f32_to_f16(d);
        pack5(q, b[i].qs, b[i].qh);
    }
}

void wk__quantize_row_q5_1_ref(const float *x, void *y, int64_t n) {
    wk_block_q5_1 *b = (wk_block_q5_1 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        float mn, mx;
        min_max(x, WK_QK, &mn, &mx);
        float d = (mx - mn) / 31.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t q[WK_QK];
        for (int j = 0; j < WK_QK; j++) q[j] = trunc_clamp((x[j] - mn) * id + 0.5f, 31);
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(mn);
        pack5(q, b[i].qs, b[i].qh);
    }
}

static float absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
    return amax;
}

/* roundf(x * id), ties away from zero: |x * id| <= 127 by construction
 * (clamped anyway; NaN gives 0). a - trunc(a) is exact, so the tie test is
 * roundf's, without its libm call. */
static int8_t round_q8(float v) {
    float a = fabsf(v);
    if (!(a < 127.5f)) return a >= 127.5f ? (v > 0 ? 127 : -127) : 0;
    int r = (int)a;
    if (a - (float)r >= 0.5f) r++;
    return (int8_t)(v < 0 ? -r : r);
}

void wk__quantize_row_q8_0_ref(const float *x, void *y, int64_t n) {
    wk_block_q8_0 *b = (wk_block_q8_0 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        float d = absmax(x, WK_QK) / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        for (int j = 0; j < WK_QK; j++) b[i].qs[j] = round_q8(x[j] * id);
    }
}

/* q8_0 plus s = d * sum(q), the term a q4_1 / q5_1 dot product needs for
 * the weights' min (ggml rounds d*sum in f32, then to f16). */
void wk__quantize_row_q8_1_ref(const float *x, void *y, int64_t n) {
    wk_block_q8_1 *b = (wk_block_q8_1 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        float d = absmax(x, WK_QK) / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < WK_QK; j++) {
            b[i].qs[j] = round_q8(x[j] * id);
            sum += b[i].qs[j];
        }
        b[i].d = wk_f32_to_f16(d);
        b[i].s = wk_f32_to_f16((float)sum * d);
    }
}

/* ---- iq4_nl: 4-bit indices into the non-linear table ---- */

/* Index of the table value nearest to v (the upper one on ties, as ggml). */
static int nearest_iq4(float v) {
    const int8_t *val = wk_iq4nl_values;
    if (v <= (float)val[0]) return 0;
    if (v >= (float)val[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (v < (float)val[mid]) hi = mid;
        else lo = mid;
    }
    return v - (float)val[hi - 1] < (float)val[hi] - v ? hi - 1 : hi;
}

/* ggml's search (no importance weights: weight x^2): start from the scale
 * that maps the extreme to the table's end, refit d by least squares, then
 * try 2*7+1 nearby inverse scales and keep the best weighted fit; finally
 * re-pick every index with the chosen (f32) scale. */
static void iq4_nl_block(const float *x, wk_block_iq4_nl *b) {
    enum { NTRY = 7 };
    const int8_t *val = wk_iq4nl_values;
    float w[WK_QK];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < WK_QK; j++) {
        w[j] = x[j] * x[j];
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    float d = 0.0f;
    if (amax >= 1e-15f) {
        d = -max / (float)val[0];
        float id = 1.0f / d, sumqx = 0.0f, sumq2 = 0.0f;
        for (int j = 0; j < WK_QK; j++) {
            float q = (float)val[nearest_iq4(id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        d = sumqx / sumq2;
        float best = d * sumqx;
        for (int t = -NTRY; t <= NTRY; t++) {
            id = ((float)t + (float)val[0]) / max;
            sumqx = sumq2 = 0.0f;
            for (int j = 0; j < WK_QK; j++) {
                float q = (float)val[nearest_iq4(id * x[j])];
                sumqx += w[j] * q * x[j];
                sumq2 += w[j] * q * q;
            }
            if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
    }
    b->d = wk_f32_to_f16(d);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < WK_QK / 2; j++)
        b->qs[j] = (uint8_t)(nearest_iq4(id * x[j]) | nearest_iq4(id * x[j + 16]) << 4);
}

void wk__quantize_row_iq4_nl_ref(const float *x, void *y, int64_t n) {
    wk_block_iq4_nl *b = (wk_block_iq4_nl *)y;
    for (int64_t i = 0; i < n / WK_QK; i++) iq4_nl_block(x + i * WK_QK, b + i);
}

/* ---- the fast rows: the same float ops lane by lane, SSE2 (x86-64 baseline) ----
 * Why the bytes stay the same: every element goes through the reference's
 * exact ops (mul, add, sub; no FMA), and the block reductions are max / min,
 * which do not depend on the order, except in two corners handled below:
 * maxps(a, b) is "a > b ? a : b" like the reference's compare-and-keep (so
 * a NaN element is skipped the same way), and a block whose min or max is a
 * zero goes back to the reference scan (the sign of that zero depends on
 * which zero came first). */
#if defined(__SSE2__)
#include <emmintrin.h>

typedef struct { __m128 v[8]; } blk32;

static inline void load32(const float *x, blk32 *b) {
    for (int k = 0; k < 8; k++) b->v[k] = _mm_loadu_ps(x + 4 * k);
}

static inline __m128 abs4(__m128 v) { return _mm_and_ps(v, _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff))); }

static inline float hmax4(__m128 v) {
    v = _mm_max_ps(v, _mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(_mm_max_ps(v, _mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1))));
}
static inline float hmin4(__m128 v) {
    v = _mm_min_ps(v, _mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(_mm_min_ps(v, _mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1))));
}

/* max |x| over the block; NaN elements never win (reference: amax < |x|). */
static inline float absmax32(const blk32 *b) {
    __m128 a = _mm_setzero_ps();
    for (int k = 0; k < 8; k++) a = _mm_max_ps(abs4(b->v[k]), a);
    return hmax4(a);
}

/* signed_absmax: the first element whose |x| is the max (0 when that is 0). */
static inline float signed_absmax32(const float *x, const blk32 *b) {
    float amax = absmax32(b);
    if (!(amax > 0.0f)) return 0.0f;
    __m128 va = _mm_set1_ps(amax);
    uint32_t m = 0;
    for (int k = 0; k < 8; k++) m |= (uint32_t)_mm_movemask_ps(_mm_cmpeq_ps(abs4(b->v[k]), va)) << (4 * k);
    return x[__builtin_ctz(m)];
}

/* min_max: lanes start from x[0] as the reference does (a NaN x[0] stays). */
static inline void min_max32(const float *x, const blk32 *b, float *mn, float *mx) {
    __m128 lo = _mm_set1_ps(x[0]), hi = lo;
    for (int k = 0; k < 8; k++) {
        lo = _mm_min_ps(b->v[k], lo);
        hi = _mm_max_ps(b->v[k], hi);
    }
    *mn = hmin4(lo);
    *mx = hmax4(hi);
    if (*mn == 0.0f || *mx == 0.0f) min_max(x, WK_QK, mn, mx);
}

/* trunc_clamp of lane values: maxps(v, 0) sends NaN and v <= 0 to 0,
 * minps(v, top) sends v >= top to top, cvttps truncates the rest. */
static inline __m128i trunc_clamp4(__m128 v, __m128 top) {
    return _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(v, _mm_setzero_ps()), top));
}

/* 32 values 0..31 as int32 (q[0..7], 4 each) -> bytes of elements 0..15, 16..31 */
static inline void bytes32(const __m128i *q, __m128i *lo, __m128i *hi) {
    *lo = _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
    *hi = _mm_packus_epi16(_mm_packs_epi32(q[4], q[5]), _mm_packs_epi32(q[6], q[7]));
}

static inline void store_nibbles(uint8_t *qs, __m128i lo, __m128i hi) {
    __m128i m = _mm_set1_epi8(0x0f);
    _mm_storeu_si128((__m128i *)qs, _mm_or_si128(_mm_and_si128(lo, m), _mm_slli_epi16(_mm_and_si128(hi, m), 4)));
}

/* pack5: nibbles as above, bit 4 of every byte gathered by movemask (<< 3
 * puts it in the sign bit; values < 32 so no bits cross into the next byte). */
static inline void store5(uint8_t *qs, uint8_t *qh, __m128i lo, __m128i hi) {
    store_nibbles(qs, lo, hi);
    uint32_t h = (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(lo, 3)) |
                 (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(hi, 3)) << 16;
    put_le32(qh, h);
}

/* q = trunc_clamp((x - sub) * id + off, top) for the 32 lanes */
static inline void scale32(const blk32 *b, float sub, int use_sub, float id, float off, float top, __m128i *q) {
    __m128 vs = _mm_set1_ps(sub), vid = _mm_set1_ps(id), vo = _mm_set1_ps(off), vt = _mm_set1_ps(top);
    for (int k = 0; k < 8; k++) {
        __m128 v = use_sub ? _mm_sub_ps(b->v[k], vs) : b->v[k];
        q[k] = trunc_clamp4(_mm_add_ps(_mm_mul_ps(v, vid), vo), vt);
    }
}

void wk__quantize_row_q4_0(const float *x, void *y, int64_t n) {
    wk_block_q4_0 *b = (wk_block_q4_0 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        blk32 v;
        __m128i q[8], lo, hi;
        load32(x, &v);
        float d = signed_absmax32(x, &v) / -8.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        scale32(&v, 0.0f, 0, id, 8.5f, 15.0f, q);
        bytes32(q, &lo, &hi);
        store_nibbles(b[i].qs, lo, hi);
    }
}

void wk__quantize_row_q4_1(const float *x, void *y, int64_t n) {
    wk_block_q4_1 *b = (wk_block_q4_1 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        blk32 v;
        __m128i q[8], lo, hi;
        float mn, mx;
        load32(x, &v);
        min_max32(x, &v, &mn, &mx);
        float d = (mx - mn) / 15.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(mn);
        scale32(&v, mn, 1, id, 0.5f, 15.0f, q);
        bytes32(q, &lo, &hi);
        store_nibbles(b[i].qs, lo, hi);
    }
}

void wk__quantize_row_q5_0(const float *x, void *y, int64_t n) {
    wk_block_q5_0 *b = (wk_block_q5_0 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        blk32 v;
        __m128i q[8], lo, hi;
        load32(x, &v);
        float d = signed_absmax32(x, &v) / -16.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        scale32(&v, 0.0f, 0, id, 16.5f, 31.0f, q);
        bytes32(q, &lo, &hi);
        store5(b[i].qs, b[i].qh, lo, hi);
    }
}

void wk__quantize_row_q5_1(const float *x, void *y, int64_t n) {
    wk_block_q5_1 *b = (wk_block_q5_1 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        blk32 v;
        __m128i q[8], lo, hi;
        float mn, mx;
        load32(x, &v);
        min_max32(x, &v, &mn, &mx);
        float d = (mx - mn) / 31.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(mn);
        scale32(&v, mn, 1, id, 0.5f, 31.0f, q);
        bytes32(q, &lo, &hi);
        store5(b[i].qs, b[i].qh, lo, hi);
    }
}

/* round_q8 lane by lane: |v| with NaN -> 0 (maxps) and clamped to 127 (the
 * reference's +-127 for |v| >= 127.5), trunc, +1 when the exact fraction
 * is >= 0.5, then the sign of v back on. The 32 results as int8 in *out
 * (elements 0..15, 16..31); returns their sum. */
static inline int round_q8_32(const blk32 *b, float id, int8_t *out) {
    __m128 vid = _mm_set1_ps(id), top = _mm_set1_ps(127.0f), half = _mm_set1_ps(0.5f), zero = _mm_setzero_ps();
    __m128i q[8], sum = _mm_setzero_si128();
    for (int k = 0; k < 8; k++) {
        __m128 v = _mm_mul_ps(b->v[k], vid);
        __m128 a = _mm_min_ps(_mm_max_ps(abs4(v), zero), top);
        __m128i r = _mm_cvttps_epi32(a);
        __m128 fr = _mm_sub_ps(a, _mm_cvtepi32_ps(r));
        r = _mm_sub_epi32(r, _mm_castps_si128(_mm_cmpge_ps(fr, half)));
        __m128i neg = _mm_castps_si128(_mm_cmplt_ps(v, zero));
        q[k] = _mm_sub_epi32(_mm_xor_si128(r, neg), neg);
        sum = _mm_add_epi32(sum, q[k]);
    }
    _mm_storeu_si128((__m128i *)out, _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_packs_epi16(_mm_packs_epi32(q[4], q[5]), _mm_packs_epi32(q[6], q[7])));
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(1, 0, 3, 2)));
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(sum);
}

void wk__quantize_row_q8_0(const float *x, void *y, int64_t n) {
    wk_block_q8_0 *b = (wk_block_q8_0 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        blk32 v;
        load32(x, &v);
        float d = absmax32(&v) / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = wk_f32_to_f16(d);
        (void)round_q8_32(&v, id, b[i].qs);
    }
}

void wk__quantize_row_q8_1(const float *x, void *y, int64_t n) {
    wk_block_q8_1 *b = (wk_block_q8_1 *)y;
    for (int64_t i = 0; i < n / WK_QK; i++, x += WK_QK) {
        blk32 v;
        load32(x, &v);
        float d = absmax32(&v) / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = round_q8_32(&v, id, b[i].qs);
        b[i].d = wk_f32_to_f16(d);
        b[i].s = wk_f32_to_f16((float)sum * d);
    }
}

/* nearest_iq4 for 4 lanes without the search's branches: the index is
 * 1 + #{k in 1..14 : val[k] <= v} (the search's hi), the two neighbours come
 * along as blends, and the reference's tie test picks between them. NaN
 * lanes go to 15, where the search ends for them (every compare false
 * there moves lo up). Writes the
 * table values (for the sums) and the indices. */
static inline void nearest_iq4_4(__m128 v, float *qv, int32_t *qi) {
    const int8_t *val = wk_iq4nl_values;
    __m128i hi = _mm_set1_epi32(1);
    __m128 lov = _mm_set1_ps((float)val[0]), hiv = _mm_set1_ps((float)val[15]);
    for (int k = 1; k < 15; k++) {
        __m128 t = _mm_set1_ps((float)val[k]), le = _mm_cmple_ps(t, v);
        hi = _mm_sub_epi32(hi, _mm_castps_si128(le));
        lov = _mm_or_ps(_mm_and_ps(le, t), _mm_andnot_ps(le, lov));
    }
    for (int k = 14; k >= 1; k--) {
        __m128 t = _mm_set1_ps((float)val[k]), lt = _mm_cmplt_ps(v, t);
        hiv = _mm_or_ps(_mm_and_ps(lt, t), _mm_andnot_ps(lt, hiv));
    }
    /* v - val[hi - 1] < val[hi] - v: take the lower one */
    __m128 low = _mm_cmplt_ps(_mm_sub_ps(v, lov), _mm_sub_ps(hiv, v));
    __m128i idx = _mm_add_epi32(hi, _mm_castps_si128(low));
    __m128 q = _mm_or_ps(_mm_and_ps(low, lov), _mm_andnot_ps(low, hiv));
    /* the ends: v <= val[0] -> 0, v >= val[15] -> 15 (checked in that order) */
    __m128 v0 = _mm_set1_ps((float)val[0]), v15 = _mm_set1_ps((float)val[15]);
    __m128 top = _mm_or_ps(_mm_cmpge_ps(v, v15), _mm_cmpunord_ps(v, v)), bot = _mm_cmple_ps(v, v0);
    idx = _mm_or_si128(_mm_andnot_si128(_mm_castps_si128(top), idx), _mm_and_si128(_mm_castps_si128(top), _mm_set1_epi32(15)));
    q = _mm_or_ps(_mm_andnot_ps(top, q), _mm_and_ps(top, v15));
    idx = _mm_andnot_si128(_mm_castps_si128(bot), idx);
    q = _mm_or_ps(_mm_andnot_ps(bot, q), _mm_and_ps(bot, v0));
    _mm_storeu_ps(qv, q);
    _mm_storeu_si128((__m128i *)qi, idx);
}

static inline void nearest_iq4_32(const blk32 *b, float id, float *qv, int32_t *qi) {
    __m128 vid = _mm_set1_ps(id);
    for (int k = 0; k < 8; k++) nearest_iq4_4(_mm_mul_ps(vid, b->v[k]), qv + 4 * k, qi + 4 * k);
}

/* iq4_nl_block with the index picks vectorized; the sums stay scalar and
 * in the reference's order (they are order-dependent float sums). */
static void iq4_nl_block_fast(const float *x, wk_block_iq4_nl *b) {
    enum { NTRY = 7 };
    const int8_t *val = wk_iq4nl_values;
    float w[WK_QK], qv[WK_QK];
    int32_t qi[WK_QK];
    blk32 v;
    load32(x, &v);
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < WK_QK; j++) {
        w[j] = x[j] * x[j];
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    float d = 0.0f;
    if (amax >= 1e-15f) {
        d = -max / (float)val[0];
        float id = 1.0f / d, sumqx = 0.0f, sumq2 = 0.0f;
        nearest_iq4_32(&v, id, qv, qi);
        for (int j = 0; j < WK_QK; j++) {
            sumqx += w[j] * qv[j] * x[j];
            sumq2 += w[j] * qv[j] * qv[j];
        }
        d = sumqx / sumq2;
        float best = d * sumqx;
        for (int t = -NTRY; t <= NTRY; t++) {
            id = ((float)t + (float)val[0]) / max;
            sumqx = sumq2 = 0.0f;
            nearest_iq4_32(&v, id, qv, qi);
            for (int j = 0; j < WK_QK; j++) {
                sumqx += w[j] * qv[j] * x[j];
                sumq2 += w[j] * qv[j] * qv[j];
            }
            if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
    }
    b->d = wk_f32_to_f16(d);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    nearest_iq4_32(&v, id, qv, qi);
    for (int j = 0; j < WK_QK / 2; j++) b->qs[j] = (uint8_t)(qi[j] | qi[j + 16] << 4);
}

void wk__quantize_row_iq4_nl(const float *x, void *y, int64_t n) {
    wk_block_iq4_nl *b = (wk_block_iq4_nl *)y;
    for (int64_t i = 0; i < n / WK_QK; i++) iq4_nl_block_fast(x + i * WK_QK, b + i);
}

#else /* no SSE2: the reference loops are the rows */

void wk__quantize_row_q4_0(const float *x, void *y, int64_t n) { wk__quantize_row_q4_0_ref(x, y, n); }
void wk__quantize_row_q4_1(const float *x, void *y, int64_t n) { wk__quantize_row_q4_1_ref(x, y, n); }
void wk__quantize_row_q5_0(const float *x, void *y, int64_t n) { wk__quantize_row_q5_0_ref(x, y, n); }
void wk__quantize_row_q5_1(const float *x, void *y, int64_t n) { wk__quantize_row_q5_1_ref(x, y, n); }
void wk__quantize_row_q8_0(const float *x, void *y, int64_t n) { wk__quantize_row_q8_0_ref(x, y, n); }
void wk__quantize_row_q8_1(const float *x, void *y, int64_t n) { wk__quantize_row_q8_1_ref(x, y, n); }
void wk__quantize_row_iq4_nl(const float *x, void *y, int64_t n) { wk__quantize_row_iq4_nl_ref(x, y, n); }

#endif
