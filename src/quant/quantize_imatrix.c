/* Row quantizers with an importance matrix (see quantize_imatrix.h).
 *
 * Byte equality with ggml needs its float operations in its order, so the
 * searches below are plain scalar loops over one (sub-)block at a time, each
 * sum accumulated in element order, products associated as ggml writes them
 * (w * l * x is (w * l) * x, integers converted to float where ggml
 * converts), and no a*b+c contraction into FMA (GCC in ISO C mode does not
 * contract; clang is told below). These paths are taken only when a matrix
 * is given, so they are written for clarity, not speed.
 *
 * The searches (the ideas are ggml's, the code is ours):
 *  - sym_fit:    symmetric levels -nmax..nmax-1 through the largest
 *                magnitude, then 18 nearby grids; the weighted least squares
 *                scale of the best (q4_0 q5_0 q3_K q6_K, and q3_K's scales).
 *  - affine_fit: levels 0..nmax with a min <= 0: the min/max grid, then 37
 *                stretched grids, each solved for scale and min by weighted
 *                least squares; the least weighted squared error wins
 *                (q4_1 q5_1 q2_K q4_K q5_K).
 *  - pos_fit:    non-negative levels 0..nmax for the sub-block scales and
 *                mins of the K types, weighted by the sub-blocks' total
 *                weight, with single-level refinement sweeps.
 *  - iq4 block:  the non-linear table's search of quantize_simple.c and
 *                quantize_k.c, with the importance weights. */
#include "quant/quantize_imatrix.h"

#include <math.h>
#include <string.h>

#include "base/blocks.h"
#include "quant/dequant_block.h"
#include "quant/quant.h"
#include "wick/wick.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define ZERO_EPS 1e-15f /* a group whose largest magnitude is below this is all zero */

/* Round to nearest, ties to even (the 1.5 * 2^23 trick, as quantize_k.c). */
static int round_nearest(float f) {
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static int min_int(int a, int b) { return a < b ? a : b; }

/* Index of the iq4nl table entry nearest to v, by bisection (ties: lower). */
static int nearest_iq4(float v) {
    const int8_t *t = wk_iq4nl_values;
    if (v <= t[0]) return 0;
    if (v >= t[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (v < t[mid]) hi = mid;
        else lo = mid;
    }
    return v - t[hi - 1] < t[hi] - v ? hi - 1 : hi;
}

/* ---- the three searches ---------------------------------------------------- */

/* Symmetric: L[i] = level + nmax; returns the (signed) scale, 0 for an
 * all-zero group. */
static float sym_fit(int n, int nmax, const float *x, int8_t *L, const float *w) {
    float amax = 0, vmax = 0;
    for (int i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > amax) {
            amax = a;
            vmax = x[i];
        }
    }
    if (amax < ZERO_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / vmax;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clamp_int(round_nearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        sumlx += w[i] * x[i] * l;
        suml2 += w[i] * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; k++) {
        if (k == 0) continue;
        iscale = -(nmax + 0.1f * k) / vmax;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp_int(round_nearest(iscale * x[i]), -nmax, nmax - 1);
            sumlx += w[i] * x[i] * l;
            suml2 += w[i] * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + clamp_int(round_nearest(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Affine: L[i] in 0..nmax, x ~ scale * L + min; returns scale, *neg_min = -min. */
static float affine_fit(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min) {
    enum { NSTEP = 36 };
    const float rmin = -0.9f, rdelta = 0.05f;
    uint8_t trial[32];
    float lo = x[0], hi = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (lo > 0) lo = 0;
    if (hi <= lo) {
        memset(L, 0, (size_t)n);
        *neg_min = -lo;
        return 0.f;
    }
    float iscale = nmax / (hi - lo);
    float scale = 1 / iscale, min = lo;
    float best = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clamp_int(round_nearest(iscale * (x[i] - lo)), 0, nmax);
        float diff = scale * L[i] + lo - x[i];
        best += w[i] * (diff * diff);
    }
    for (int k = 0; k <= NSTEP; k++) {
        /* each grid is anchored at the best min found so far */
        iscale = (rmin + rdelta * k + nmax) / (hi - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp_int(round_nearest(iscale * (x[i] - min)), 0, nmax);
            trial[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float s = (sum_w * sum_xl - sum_x * sum_l) / det;
        float m = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (m > 0) { /* the min must stay <= 0: refit the scale alone */
            m = 0;
            s = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = s * trial[i] + m - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best) {
            memcpy(L, trial, (size_t)n);
            best = err;
            scale = s;
            min = m;
        }
    }
    *neg_min = -min;
    return scale;
}

/* Non-negative x (sub-block scales or mins), levels 0..nmax, weights w:
 * the best of 9 grids by weighted squared error, then up to 5 sweeps that
 * move single levels where that raises sumlx^2 / suml2. L holds the levels
 * as uint8_t, as ggml stores them (a negative level wraps there and here). */
static float pos_fit(int n, int nmax, const float *x, uint8_t *L, const float *w) {
    float vmax = 0;
    for (int i = 0; i < n; i++) vmax = vmax > x[i] ? vmax : x[i];
    if (vmax < ZERO_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = nmax / vmax;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)round_nearest(iscale * x[i]);
    float scale = 1 / iscale;
    float best = 0;
    for (int i = 0; i < n; i++) {
        float diff = x[i] - scale * L[i];
        best += w[i] * diff * diff;
    }
    for (int k = -4; k <= 4; k++) {
        if (k == 0) continue;
        float iscale_k = (0.1f * k + nmax) / vmax;
        float scale_k = 1 / iscale_k;
        float err = 0;
        for (int i = 0; i < n; i++) {
            int l = min_int(nmax, round_nearest(iscale_k * x[i]));
            float diff = x[i] - scale_k * l;
            err += w[i] * diff * diff;
        }
        if (err < best) {
            best = err;
            iscale = iscale_k;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = min_int(nmax, round_nearest(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * l;
        suml2 += w[i] * l * l;
    }
    for (int sweep = 0; sweep < 5; sweep++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * L[i];
            float sl2 = suml2 - w[i] * L[i] * L[i];
            if (!(slx > 0 && sl2 > 0)) continue;
            int nl = min_int(nmax, round_nearest(x[i] * sl2 / slx));
            if (nl == L[i]) continue;
            slx += w[i] * x[i] * nl;
            sl2 += w[i] * nl * nl;
            if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (uint8_t)nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* ---- the 32-element types -------------------------------------------------- */

/* The legacy types' weights: qw[j] * sqrt(sigma2 + x[j]^2), sigma2 the mean
 * square over the whole row. */
static float row_sigma2(const float *x, int64_t n) {
    float s = 0;
    for (int64_t j = 0; j < n; j++) s += x[j] * x[j];
    return s / n;
}

static void weights_of(const float *x, const float *qw, float sigma2, float *w, int n) {
    for (int j = 0; j < n; j++) w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* 5-bit levels: low nibbles in qs (j and j + 16 share a byte), bit 4 of
 * level j in bit j of qh */
static void pack5(const uint8_t *q, uint8_t *qs, uint8_t *qh) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0xf) | (q[j + 16] & 0xf) << 4);
        h |= (uint32_t)((q[j] >> 4) & 1) << j;
        h |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
    }
    put_le32(qh, h);
}

static void row_q4_0(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q4_0 *b = (wk_block_q4_0 *)y;
    float sigma2 = row_sigma2(x, n), w[WK_QK];
    int8_t L[WK_QK];
    for (int64_t i = 0; i < n / WK_QK; i++) {
        weights_of(x + i * WK_QK, qw + i * WK_QK, sigma2, w, WK_QK);
        b[i].d = wk_f32_to_f16(sym_fit(WK_QK, 8, x + i * WK_QK, L, w));
        for (int j = 0; j < 16; j++) b[i].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}

static void row_q5_0(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q5_0 *b = (wk_block_q5_0 *)y;
    float sigma2 = row_sigma2(x, n), w[WK_QK];
    int8_t L[WK_QK];
    uint8_t q[WK_QK];
    for (int64_t i = 0; i < n / WK_QK; i++) {
        weights_of(x + i * WK_QK, qw + i * WK_QK, sigma2, w, WK_QK);
        b[i].d = wk_f32_to_f16(sym_fit(WK_QK, 16, x + i * WK_QK, L, w));
        for (int j = 0; j < WK_QK; j++) q[j] = (uint8_t)L[j];
        pack5(q, b[i].qs, b[i].qh);
    }
}

static void row_q4_1(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q4_1 *b = (wk_block_q4_1 *)y;
    float sigma2 = row_sigma2(x, n), w[WK_QK], neg_min;
    uint8_t L[WK_QK];
    for (int64_t i = 0; i < n / WK_QK; i++) {
        weights_of(x + i * WK_QK, qw + i * WK_QK, sigma2, w, WK_QK);
        float d = affine_fit(WK_QK, 15, x + i * WK_QK, w, L, &neg_min);
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(-neg_min);
        for (int j = 0; j < 16; j++) b[i].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}

static void row_q5_1(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q5_1 *b = (wk_block_q5_1 *)y;
    float sigma2 = row_sigma2(x, n), w[WK_QK], neg_min;
    uint8_t L[WK_QK];
    for (int64_t i = 0; i < n / WK_QK; i++) {
        weights_of(x + i * WK_QK, qw + i * WK_QK, sigma2, w, WK_QK);
        float d = affine_fit(WK_QK, 31, x + i * WK_QK, w, L, &neg_min);
        b[i].d = wk_f32_to_f16(d);
        b[i].m = wk_f32_to_f16(-neg_min);
        pack5(L, b[i].qs, b[i].qh);
    }
}

/* ---- iq4_nl / iq4_xs ------------------------------------------------------- */

/* One sub-block of 32 against the non-linear table with weights w: the
 * least squares scale through the largest magnitude, then 15 grids offset
 * by -7..7 table units; the best weighted fit's scale (0: all zero). */
static float iq4_scale(const float *x, const float *w) {
    const int8_t *t = wk_iq4nl_values;
    float amax = 0, vmax = 0;
    for (int j = 0; j < 32; j++) {
        float a = fabsf(x[j]);
        if (a > amax) {
            amax = a;
            vmax = x[j];
        }
    }
    if (amax < ZERO_EPS) return 0.f;
    float d = -vmax / t[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; j++) {
        float q = t[nearest_iq4(id * x[j])];
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int k = -7; k <= 7; k++) {
        id = (k + t[0]) / vmax;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            float q = t[nearest_iq4(id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* sigma2 of the iq4 types: twice the mean square of the (super-)block */
static float block_sigma2(const float *x, int n) {
    float s = 0;
    for (int j = 0; j < n; j++) s += x[j] * x[j];
    return s * (2.f / n);
}

static void row_iq4_nl(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_iq4_nl *b = (wk_block_iq4_nl *)y;
    float w[WK_QK];
    for (int64_t i = 0; i < n / WK_QK; i++) {
        const float *xb = x + i * WK_QK;
        weights_of(xb, qw + i * WK_QK, block_sigma2(xb, WK_QK), w, WK_QK);
        float d = iq4_scale(xb, w);
        b[i].d = wk_f32_to_f16(d);
        float id = d ? 1 / d : 0;
        for (int j = 0; j < 16; j++)
            b[i].qs[j] = (uint8_t)(nearest_iq4(id * xb[j]) | nearest_iq4(id * xb[j + 16]) << 4);
    }
}

static void row_iq4_xs(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_iq4_xs *b = (wk_block_iq4_xs *)y;
    float w[32], scales[8];
    uint8_t L[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K, qw += WK_QK_K) {
        float sigma2 = block_sigma2(x, WK_QK_K), max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < 8; ib++) {
            weights_of(x + 32 * ib, qw + 32 * ib, sigma2, w, 32);
            scales[ib] = iq4_scale(x + 32 * ib, w);
            if (fabsf(scales[ib]) > amax_scale) {
                amax_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        /* 6-bit signed sub-block scales against d = -max / 32 (unrounded d
         * drives them, as in ggml), indices re-picked with each one */
        float d = -max_scale / 32;
        b[i].d = wk_f32_to_f16(d);
        float id = d ? 1 / d : 0.f;
        b[i].scales_h = 0;
        memset(b[i].scales_l, 0, sizeof b[i].scales_l);
        for (int ib = 0; ib < 8; ib++) {
            int l = clamp_int(round_nearest(id * scales[ib]), -32, 31);
            float dl = d * l;
            float idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)nearest_iq4(idl * x[32 * ib + j]);
            l += 32;
            b[i].scales_l[ib / 2] |= (uint8_t)((l & 0xF) << (4 * (ib % 2)));
            b[i].scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
        for (int ib = 0; ib < 8; ib++)
            for (int j = 0; j < 16; j++) b[i].qs[16 * ib + j] = (uint8_t)(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4));
    }
}

/* ---- the K types ------------------------------------------------------------ */

static float sum_squares(const float *x, int n) {
    float s = 0;
    for (int j = 0; j < n; j++) s += x[j] * x[j];
    return s;
}

static float sum_of(const float *w, int n) {
    float s = 0;
    for (int j = 0; j < n; j++) s += w[j];
    return s;
}

/* the 2-bit levels of 128 values: l, l + 32, l + 64, l + 96 share byte l */
static void pack2(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < WK_QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

static void row_q2_K(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q2_K *b = (wk_block_q2_K *)y;
    uint8_t L[WK_QK_K], Ls[16], Lm[16];
    float w[16], sw[16], scales[16], mins[16];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K, qw += WK_QK_K) {
        float sigma2 = sum_squares(x, WK_QK_K) / WK_QK_K; /* q2_K: the mean square, not twice it */
        for (int j = 0; j < 16; j++) {
            weights_of(x + 16 * j, qw + 16 * j, sigma2, w, 16);
            sw[j] = sum_of(w, 16);
            scales[j] = affine_fit(16, 3, x + 16 * j, w, L + 16 * j, &mins[j]);
        }
        float dm = pos_fit(16, 15, scales, Ls, sw);
        float mm = pos_fit(16, 15, mins, Lm, sw);
        b[i].d = wk_f32_to_f16(dm);
        b[i].dmin = wk_f32_to_f16(mm);
        dm = wk__q_f16(b[i].d);
        mm = wk__q_f16(b[i].dmin);
        for (int j = 0; j < 16; j++) b[i].scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
        for (int j = 0; j < 16; j++) {
            const float d = dm * (b[i].scales[j] & 0xF);
            if (!d) continue;
            const float m = mm * (b[i].scales[j] >> 4);
            for (int k = 0; k < 16; k++) L[16 * j + k] = (uint8_t)clamp_int(round_nearest((x[16 * j + k] + m) / d), 0, 3);
        }
        pack2(L, b[i].qs);
    }
}

static void row_q3_K(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q3_K *b = (wk_block_q3_K *)y;
    int8_t L[WK_QK_K], Ls[16], sc[16];
    float w[16], sw[16], scales[16];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K, qw += WK_QK_K) {
        float sigma2 = 2 * sum_squares(x, WK_QK_K) / WK_QK_K;
        for (int j = 0; j < 16; j++) {
            weights_of(x + 16 * j, qw + 16 * j, sigma2, w, 16);
            sw[j] = sum_of(w, 16);
            scales[j] = sym_fit(16, 4, x + 16 * j, L + 16 * j, w);
        }
        memset(b[i].scales, 0, sizeof b[i].scales);
        float d_block = sym_fit(16, 32, scales, Ls, sw);
        /* 6-bit scales: low nibbles in bytes 0..7, top 2 bits in bytes 8..11 */
        for (int j = 0; j < 16; j++) {
            int l = Ls[j];
            if (j < 8) b[i].scales[j] = (uint8_t)(l & 0xF);
            else b[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
            l >>= 4;
            b[i].scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
        }
        b[i].d = wk_f32_to_f16(d_block);
        wk__q3k_scales(b[i].scales, sc);
        for (int j = 0; j < 16; j++) {
            float d = wk__q_f16(b[i].d) * sc[j];
            if (!d) continue;
            for (int k = 0; k < 16; k++) L[16 * j + k] = (int8_t)(clamp_int(round_nearest(x[16 * j + k] / d), -4, 3) + 4);
        }
        /* bit 2 of level j into hmask[j % 32] bit j / 32, the low 2 bits to qs */
        memset(b[i].hmask, 0, sizeof b[i].hmask);
        uint8_t U[WK_QK_K];
        for (int j = 0; j < WK_QK_K; j++) {
            int l = L[j];
            if (l > 3) {
                b[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                l -= 4;
            }
            U[j] = (uint8_t)l;
        }
        pack2(U, b[i].qs);
    }
}

/* q4_K / q5_K: 8 sub-blocks of 32 with a scale and a min each, both 6-bit
 * against f16 d and dmin, in the 12-byte packing (quantize_k.c). */
static void fit_k_block(const float *x, const float *qw, int nmax, bool clamp63, uint8_t *L, uint8_t packed[12],
                        uint16_t *d16, uint16_t *dmin16) {
    float w[32], sw[8], scales[8], mins[8];
    uint8_t Ls[8], Lm[8];
    float sigma2 = 2 * sum_squares(x, WK_QK_K) / WK_QK_K;
    for (int j = 0; j < 8; j++) {
        weights_of(x + 32 * j, qw + 32 * j, sigma2, w, 32);
        sw[j] = sum_of(w, 32);
        scales[j] = affine_fit(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j]);
    }
    float d_block = pos_fit(8, 63, scales, Ls, sw);
    float m_block = pos_fit(8, 63, mins, Lm, sw);
    for (int j = 0; j < 8; j++) {
        uint8_t ls = Ls[j], lm = Lm[j];
        if (clamp63) { /* q5_K clamps; q4_K stores the level as it is (ggml) */
            ls = ls < 63 ? ls : 63;
            lm = lm < 63 ? lm : 63;
        }
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d16 = wk_f32_to_f16(d_block);
    *dmin16 = wk_f32_to_f16(m_block);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, mn;
        wk__q4k_scale_min(j, packed, &sc, &mn);
        const float d = wk__q_f16(*d16) * sc;
        if (!d) continue;
        const float dm = wk__q_f16(*dmin16) * mn;
        for (int k = 0; k < 32; k++) L[32 * j + k] = (uint8_t)clamp_int(round_nearest((x[32 * j + k] + dm) / d), 0, nmax);
    }
}

static void row_q4_K(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q4_K *b = (wk_block_q4_K *)y;
    uint8_t L[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K, qw += WK_QK_K) {
        fit_k_block(x, qw, 15, false, L, b[i].scales, &b[i].d, &b[i].dmin);
        for (int j = 0; j < WK_QK_K; j += 64)
            for (int l = 0; l < 32; l++) b[i].qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

static void row_q5_K(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q5_K *b = (wk_block_q5_K *)y;
    uint8_t L[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K, qw += WK_QK_K) {
        fit_k_block(x, qw, 31, true, L, b[i].scales, &b[i].d, &b[i].dmin);
        /* bit 4 of level 64k + l in qh[l] bit 2k, of 64k + 32 + l in bit 2k + 1 */
        memset(b[i].qh, 0, sizeof b[i].qh);
        for (int j = 0, k = 0; j < WK_QK_K; j += 64, k++) {
            for (int l = 0; l < 32; l++) {
                int lo = L[j + l], hi = L[j + l + 32];
                if (lo > 15) {
                    lo -= 16;
                    b[i].qh[l] |= (uint8_t)(1u << (2 * k));
                }
                if (hi > 15) {
                    hi -= 16;
                    b[i].qh[l] |= (uint8_t)(2u << (2 * k));
                }
                b[i].qs[j / 2 + l] = (uint8_t)(lo | (hi << 4));
            }
        }
    }
}

/* q6_K: the importance weights themselves (no sigma2 term, as ggml) */
static void row_q6_K(const float *x, void *y, int64_t n, const float *qw) {
    wk_block_q6_K *b = (wk_block_q6_K *)y;
    int8_t L[WK_QK_K];
    float scales[16];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K, qw += WK_QK_K) {
        float max_scale = 0, max_abs = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = sym_fit(16, 32, x + 16 * j, L + 16 * j, qw + 16 * j);
            if (fabsf(scales[j]) > max_abs) {
                max_abs = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        if (max_abs < ZERO_EPS) {
            memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        float iscale = -128.f / max_scale;
        b[i].d = wk_f32_to_f16(1 / iscale);
        for (int j = 0; j < 16; j++) b[i].scales[j] = (int8_t)min_int(127, round_nearest(iscale * scales[j]));
        for (int j = 0; j < 16; j++) {
            float d = wk__q_f16(b[i].d) * b[i].scales[j];
            if (!d) continue;
            for (int k = 0; k < 16; k++) L[16 * j + k] = (int8_t)(clamp_int(round_nearest(x[16 * j + k] / d), -32, 31) + 32);
        }
        for (int j = 0; j < WK_QK_K; j += 128) {
            uint8_t *ql = b[i].ql + j / 2, *qh = b[i].qh + j / 4;
            for (int l = 0; l < 32; l++) {
                int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
                ql[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
                ql[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
                qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

/* ---- dispatch ---------------------------------------------------------------- */

typedef void (*row_imatrix_fn)(const float *x, void *y, int64_t n, const float *qw);

static row_imatrix_fn row_fn_of(wk_dtype dt) {
    switch (dt) {
    case WK_Q4_0: return row_q4_0;
    case WK_Q4_1: return row_q4_1;
    case WK_Q5_0: return row_q5_0;
    case WK_Q5_1: return row_q5_1;
    case WK_Q2_K: return row_q2_K;
    case WK_Q3_K: return row_q3_K;
    case WK_Q4_K: return row_q4_K;
    case WK_Q5_K: return row_q5_K;
    case WK_Q6_K: return row_q6_K;
    case WK_IQ4_NL: return row_iq4_nl;
    case WK_IQ4_XS: return row_iq4_xs;
    default: return NULL;
    }
}

bool wk__quant_uses_imatrix(wk_dtype dt) { return row_fn_of(dt) != NULL; }

wk_status wk__quantize_row_imatrix(wk_dtype dt, const float *src, void *dst, int64_t n, const float *qw) {
    row_imatrix_fn fn = qw ? row_fn_of(dt) : NULL;
    if (!fn) return wk__quantize_row(dt, src, dst, n);
    const wk__quant_traits *tr = wk__quant_traits_of(dt);
    if (n < 0 || n % tr->block_elems) return WK_ERR_SHAPE;
    if (n > 0) fn(src, dst, n, qw);
    return WK_OK;
}
