/* Row quantizers for the K types and IQ4_XS (see quantize_k.h).
 *
 * Byte equality with ggml needs the same float operations in the same order:
 * every expression below keeps ggml's association (w * l * x is (w * l) * x,
 * integers converted to float at the same points), and this file is built
 * without FMA contraction (ISO C mode, baseline x86-64 flags), as
 * libggml-base is. The per-block scratch (levels, trial levels, weights,
 * sub-block scales) lives on the stack: nothing is allocated. */
#include "quant/quantize_k.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/dequant_block.h"
#include "wick/wick.h"

/* Below this a sub-block's largest magnitude counts as all zero (ggml's GROUP_MAX_EPS). */
#define ZERO_EPS 1e-15f

/* Round to nearest, ties to even, by adding 1.5 * 2^23: the integer lands in
 * the low mantissa bits. Valid for |f| < 2^22 (ggml's nearest_int; outside
 * that range both give the same meaningless but deterministic value). */
static inline int round_nearest(float f) {
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static inline uint16_t to_f16(float f) { return wk_f32_to_f16(f); }

/* Index of the iq4nl table entry nearest to v (ties to the lower entry), by bisection. */
static inline int nearest_iq4nl(float v) {
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

/* ---- sub-block fits ---------------------------------------------------- */

/* Affine fit x[i] ~ scale * L[i] + min with L in 0..nmax and min <= 0, for the
 * types that store a min (q2_K, q4_K, q5_K): start from the min/max grid,
 * then try nstep + 1 grids stretched by rmin + rdelta * k levels (anchored at
 * the best min found so far), solve the
 * weighted least squares scale and min for each one's levels, and keep the
 * best by weighted squared (or absolute, abs_err) error. ggml's
 * make_qkx2_quants. Returns scale; *neg_min = -min (>= 0). */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, uint8_t *trial,
                           float *neg_min, float rmin, float rdelta, int nstep, bool abs_err) {
    float lo = x[0], hi = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (lo > 0) lo = 0;
    if (hi == lo) {
        memset(L, 0, (size_t)n);
        *neg_min = -lo;
        return 0.f;
    }
    float iscale = nmax / (hi - lo);
    float scale = 1 / iscale, min = lo;
    float best_err = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clamp_int(round_nearest(iscale * (x[i] - lo)), 0, nmax);
        float diff = scale * L[i] + lo - x[i];
        best_err += w[i] * (abs_err ? fabsf(diff) : diff * diff);
    }
    for (int k = 0; k <= nstep; k++) {
        /* the grid's origin is the best min so far, not the data's (as in ggml) */
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
            err += w[i] * (abs_err ? fabsf(diff) : diff * diff);
        }
        if (err < best_err) {
            memcpy(L, trial, (size_t)n);
            best_err = err;
            scale = s;
            min = m;
        }
    }
    *neg_min = -min;
    return scale;
}

/* Symmetric fit x[i] ~ scale * (L[i] - nmax) with L - nmax in -nmax..nmax-1,
 * weights x^2 (q6_K): the grid through the largest magnitude, then the least
 * squares scale of 18 grids nudged by +-0.1..0.9 levels, keeping the one that
 * explains most of x. ggml's make_qx_quants with rmse_type 1, no weights.
 * Returns the (signed) scale; 0 and all-zero levels for an all-zero block. */
static float fit_scale_sym_x2(int n, int nmax, const float *x, int8_t *L) {
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
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; k++) {
        if (k == 0) continue;
        iscale = -(nmax + 0.1f * k) / vmax;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp_int(round_nearest(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + clamp_int(round_nearest(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Symmetric fit for q3_K: levels -nmax..nmax-1 from the largest magnitude,
 * then up to 5 sweeps moving single levels where that raises the x^2-weighted
 * explained energy sumlx^2 / suml2. ggml's make_q3_quants with do_rmse.
 * Leaves L = level + nmax; returns the least squares scale. */
static float fit_scale_q3(int n, int nmax, const float *x, int8_t *L) {
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
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int sweep = 0; sweep < 5; sweep++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * L[i] * L[i];
            int nl = clamp_int(round_nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (nl == L[i]) continue;
            slx += w * x[i] * nl;
            sl2 += w * nl * nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* ---- q2_K ---------------------------------------------------------------- */

static void quantize_block_q2_K(const float *x, wk_block_q2_K *y) {
    uint8_t L[WK_QK_K], trial[16];
    float w[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0; /* scales and mins are >= 0 here */
    for (int j = 0; j < 16; j++) {
        for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
        scales[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, trial, &mins[j], -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    /* 4-bit sub-block scales (low nibble) and mins (high nibble) against f16 d, dmin */
    if (max_scale > 0) {
        float iscale = 15.f / max_scale;
        for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)round_nearest(iscale * scales[j]);
        y->d = to_f16(max_scale / 15.f);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = to_f16(0.f);
    }
    if (max_min > 0) {
        float iscale = 15.f / max_min;
        for (int j = 0; j < 16; j++) y->scales[j] |= (uint8_t)(round_nearest(iscale * mins[j]) << 4);
        y->dmin = to_f16(max_min / 15.f);
    } else {
        y->dmin = to_f16(0.f);
    }
    /* requantize against the stored (rounded) scales */
    float d_all = wk__q_f16(y->d), dmin_all = wk__q_f16(y->dmin);
    for (int j = 0; j < 16; j++) {
        float d = d_all * (y->scales[j] & 0xF);
        if (!d) continue;
        float dm = dmin_all * (y->scales[j] >> 4);
        for (int i = 0; i < 16; i++) L[16 * j + i] = (uint8_t)clamp_int(round_nearest((x[16 * j + i] + dm) / d), 0, 3);
    }
    for (int j = 0; j < WK_QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            y->qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* ---- q3_K ---------------------------------------------------------------- */

static void quantize_block_q3_K(const float *x, wk_block_q3_K *y) {
    int8_t L[WK_QK_K];
    float scales[16];
    float max_scale = 0, amax = 0; /* signed scale of largest magnitude */
    for (int j = 0; j < 16; j++) {
        scales[j] = fit_scale_q3(16, 4, x + 16 * j, L + 16 * j);
        float a = fabsf(scales[j]);
        if (a > amax) {
            amax = a;
            max_scale = scales[j];
        }
    }
    /* 16 6-bit scales (stored + 32): low nibbles in bytes 0..7, two high bits
     * per scale in bytes 8..11 */
    memset(y->scales, 0, sizeof y->scales);
    if (max_scale) {
        float iscale = -32.f / max_scale;
        for (int j = 0; j < 16; j++) {
            int l = clamp_int((int8_t)round_nearest(iscale * scales[j]), -32, 31) + 32;
            if (j < 8) y->scales[j] = (uint8_t)(l & 0xF);
            else y->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
            y->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y->d = to_f16(1 / iscale);
    } else {
        y->d = to_f16(0.f);
    }
    int8_t sc[16];
    wk__q3k_scales(y->scales, sc);
    float d_all = wk__q_f16(y->d);
    for (int j = 0; j < 16; j++) {
        float d = d_all * sc[j];
        if (!d) continue;
        for (int i = 0; i < 16; i++) L[16 * j + i] = (int8_t)(clamp_int(round_nearest(x[16 * j + i] / d), -4, 3) + 4);
    }
    /* bit 2 of value j goes to hmask[j % 32] bit j / 32; the low 2 bits to qs */
    memset(y->hmask, 0, sizeof y->hmask);
    for (int j = 0; j < WK_QK_K; j++) {
        if (L[j] > 3) {
            y->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            L[j] = (int8_t)(L[j] - 4);
        }
    }
    for (int j = 0; j < WK_QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            y->qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* ---- q4_K / q5_K ------------------------------------------------------- */

/* Fit the 8 sub-blocks of 32 (levels 0..nmax into L), then store 6-bit scales
 * and mins against f16 d, dmin in the 12-byte packing: j < 4 in the low 6
 * bits of bytes j (scale) and j + 4 (min); j >= 4 as nibbles of byte j + 4
 * with their top 2 bits in the spare top bits of bytes j - 4 and j. Then
 * requantize to the stored scales. Shared by q4_K (nmax 15) and q5_K (31). */
static void quantize_scales_mins_k(const float *x, int nmax, float rmin, int nstep, uint8_t *L, uint8_t packed[12],
                                   uint16_t *d16, uint16_t *dmin16) {
    uint8_t trial[32];
    float w[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xb = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xb[l] * xb[l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xb[l]);
        scales[j] = fit_scale_min(32, nmax, xb, w, L + 32 * j, trial, &mins[j], rmin, 0.1f, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; j++) {
        /* through uint8_t as ggml does: a (rare) negative fit wraps, then clamps to 63 */
        uint8_t ls = (uint8_t)round_nearest(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)round_nearest(inv_min * mins[j]);
        if (ls > 63) ls = 63;
        if (lm > 63) lm = 63;
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d16 = to_f16(max_scale / 63.f);
    *dmin16 = to_f16(max_min / 63.f);
    float d_all = wk__q_f16(*d16), dmin_all = wk__q_f16(*dmin16);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, mn;
        wk__q4k_scale_min(j, packed, &sc, &mn);
        float d = d_all * sc;
        if (!d) continue;
        float dm = dmin_all * mn;
        for (int i = 0; i < 32; i++) L[32 * j + i] = (uint8_t)clamp_int(round_nearest((x[32 * j + i] + dm) / d), 0, nmax);
    }
}

static void quantize_block_q4_K(const float *x, wk_block_q4_K *y) {
    uint8_t L[WK_QK_K];
    quantize_scales_mins_k(x, 15, -1.f, 20, L, y->scales, &y->d, &y->dmin);
    /* each 64 values: the first 32 in low nibbles, the next 32 in high nibbles */
    for (int j = 0; j < WK_QK_K; j += 64)
        for (int l = 0; l < 32; l++) y->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

static void quantize_block_q5_K(const float *x, wk_block_q5_K *y) {
    uint8_t L[WK_QK_K];
    quantize_scales_mins_k(x, 31, -0.5f, 15, L, y->scales, &y->d, &y->dmin);
    /* low 4 bits as in q4_K; bit 4 of value 64k + l (l < 32) in qh[l] bit 2k,
     * of value 64k + 32 + l in bit 2k + 1 */
    memset(y->qh, 0, sizeof y->qh);
    for (int j = 0, k = 0; j < WK_QK_K; j += 64, k++) {
        for (int l = 0; l < 32; l++) {
            int a = L[j + l], b = L[j + l + 32];
            if (a > 15) {
                a -= 16;
                y->qh[l] |= (uint8_t)(1u << (2 * k));
            }
            if (b > 15) {
                b -= 16;
                y->qh[l] |= (uint8_t)(2u << (2 * k));
            }
            y->qs[j / 2 + l] = (uint8_t)(a | (b << 4));
        }
    }
}

/* ---- q6_K ---------------------------------------------------------------- */

static void quantize_block_q6_K(const float *x, wk_block_q6_K *y) {
    int8_t L[WK_QK_K];
    float scales[16];
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; j++) {
        scales[j] = fit_scale_sym_x2(16, 32, x + 16 * j, L + 16 * j);
        float a = fabsf(scales[j]);
        if (a > max_abs) {
            max_abs = a;
            max_scale = scales[j];
        }
    }
    if (max_abs < ZERO_EPS) {
        memset(y, 0, sizeof *y);
        return;
    }
    /* 8-bit signed sub-block scales against f16 d */
    float iscale = -128.f / max_scale;
    y->d = to_f16(1 / iscale);
    for (int j = 0; j < 16; j++) {
        int s = round_nearest(iscale * scales[j]);
        y->scales[j] = (int8_t)(s < 127 ? s : 127);
    }
    float d_all = wk__q_f16(y->d);
    for (int j = 0; j < 16; j++) {
        float d = d_all * y->scales[j];
        if (!d) continue;
        for (int i = 0; i < 16; i++) L[16 * j + i] = (int8_t)(clamp_int(round_nearest(x[16 * j + i] / d), -32, 31) + 32);
    }
    /* per 128 values: low nibbles of l and l + 64 share ql[l], of l + 32 and
     * l + 96 share ql[l + 32]; the four top 2-bit pairs share qh[l] */
    for (int j = 0; j < WK_QK_K; j += 128) {
        uint8_t *ql = y->ql + j / 2, *qh = y->qh + j / 4;
        for (int l = 0; l < 32; l++) {
            int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
            ql[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
            ql[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
            qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
    }
}

/* ---- q8_K ---------------------------------------------------------------- */

static void quantize_block_q8_K(const float *x, wk_block_q8_K *y) {
    float amax = 0, vmax = 0;
    for (int j = 0; j < WK_QK_K; j++) {
        float a = fabsf(x[j]);
        if (a > amax) {
            amax = a;
            vmax = x[j];
        }
    }
    if (!amax) {
        memset(y, 0, sizeof *y);
        return;
    }
    /* -127 (not -128) / signed max: the largest magnitude maps to -127, and
     * the opposite sign saturates at 127 */
    float iscale = -127.f / vmax;
    for (int j = 0; j < WK_QK_K; j++) {
        int v = round_nearest(iscale * x[j]);
        y->qs[j] = (int8_t)(v < 127 ? v : 127);
    }
    for (int j = 0; j < WK_QK_K / 16; j++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += y->qs[16 * j + i];
        y->bsums[j] = (int16_t)s;
    }
    y->d = 1 / iscale;
}

/* ---- iq4_xs -------------------------------------------------------------- */

/* Each sub-block of 32: the x^2-weighted least squares scale for the
 * non-linear table, best of the grid through the largest magnitude and 15
 * grids offset by -7..7 table units; then 6-bit signed sub-block scales
 * against one f16 d = -max / 32 and indices requantized to d * scale. ggml's
 * quantize_row_iq4_nl_impl for a 256 super-block, ntry 7, no weights. */
static void quantize_block_iq4_xs(const float *x, wk_block_iq4_xs *y) {
    const int8_t *t = wk_iq4nl_values;
    uint8_t L[WK_QK_K];
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ib++) {
        const float *xb = x + 32 * ib;
        float amax = 0, vmax = 0;
        for (int j = 0; j < 32; j++) {
            float a = fabsf(xb[j]);
            if (a > amax) {
                amax = a;
                vmax = xb[j];
            }
        }
        if (amax < ZERO_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = -vmax / t[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            float q = t[nearest_iq4nl(id * xb[j])], w = xb[j] * xb[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int k = -7; k <= 7; k++) {
            id = (k + t[0]) / vmax;
            sumqx = sumq2 = 0;
            for (int j = 0; j < 32; j++) {
                float q = t[nearest_iq4nl(id * xb[j])], w = xb[j] * xb[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (fabsf(d) > amax_scale) {
            amax_scale = fabsf(d);
            max_scale = d;
        }
    }
    /* the unrounded d drives the sub-block scales, as in ggml; an all-zero
     * block stores d = -0 (f16 0x8000) */
    float d = -max_scale / 32;
    y->d = to_f16(d);
    float id = d ? 1 / d : 0.f;
    y->scales_h = 0;
    memset(y->scales_l, 0, sizeof y->scales_l);
    for (int ib = 0; ib < 8; ib++) {
        int l = clamp_int(round_nearest(id * scales[ib]), -32, 31);
        float dl = d * l;
        float idl = dl ? 1 / dl : 0.f;
        for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)nearest_iq4nl(idl * x[32 * ib + j]);
        l += 32;
        y->scales_l[ib / 2] |= (uint8_t)((l & 0xF) << (4 * (ib % 2)));
        y->scales_h |= (uint16_t)((l >> 4) << (2 * ib));
    }
    for (int ib = 0; ib < 8; ib++)
        for (int j = 0; j < 16; j++) y->qs[16 * ib + j] = (uint8_t)(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4));
}

/* ---- rows ---------------------------------------------------------------- */

#define WK__QUANT_ROW(name, block_t)                                                        \
    void wk__quantize_row_##name(const float *x, void *y, int64_t n) {                      \
        block_t *b = (block_t *)y;                                                          \
        for (int64_t i = 0; i < n / WK_QK_K; i++) quantize_block_##name(x + i * WK_QK_K, b + i); \
    }

WK__QUANT_ROW(q2_K, wk_block_q2_K)
WK__QUANT_ROW(q3_K, wk_block_q3_K)
WK__QUANT_ROW(q4_K, wk_block_q4_K)
WK__QUANT_ROW(q5_K, wk_block_q5_K)
WK__QUANT_ROW(q6_K, wk_block_q6_K)
WK__QUANT_ROW(q8_K, wk_block_q8_K)
WK__QUANT_ROW(iq4_xs, wk_block_iq4_xs)
