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
#include "quant/blocks.h"
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

void wk__quantize_row_q4_0(const float *x, void *y, int64_t n) {
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

void wk__quantize_row_q4_1(const float *x, void *y, int64_t n) {
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

void wk__quantize_row_q5_0(const float *x, void *y, int64_t n) {
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

void wk__quantize_row_q5_1(const float *x, void *y, int64_t n) {
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

void wk__quantize_row_q8_0(const float *x, void *y, int64_t n) {
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
void wk__quantize_row_q8_1(const float *x, void *y, int64_t n) {
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

void wk__quantize_row_iq4_nl(const float *x, void *y, int64_t n) {
    wk_block_iq4_nl *b = (wk_block_iq4_nl *)y;
    for (int64_t i = 0; i < n / WK_QK; i++) iq4_nl_block(x + i * WK_QK, b + i);
}
