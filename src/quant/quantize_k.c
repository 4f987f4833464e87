/* Row quantizers for the K types and IQ4_XS (see quantize_k.h).
 *
 * Byte equality with ggml needs the same float operations in the same order:
 * every expression below keeps ggml's association (w * l * x is (w * l) * x,
 * integers converted to float at the same points), and this file is built
 * without FMA contraction (ISO C mode, baseline x86-64 flags), as
 * libggml-base is. The per-block scratch (levels, trial levels, weights,
 * sub-block scales) lives on the stack: nothing is allocated.
 *
 * Speed: ggml fits one sub-block at a time, a chain of dependent float sums.
 * Here the fits run lane-parallel over a block's sub-blocks (two blocks' for
 * q4_K / q5_K), transposed so the compiler vectorizes across sub-blocks with
 * the baseline SSE2 it may use in this file; within a lane nothing is
 * reordered, so the bytes are the same (test_quantk's ggml hashes). */
#include "quant/quantize_k.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "base/blocks.h"
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
 * the best min found so far), solve the weighted least squares scale and min
 * for each one's levels, and keep the best by weighted squared (or absolute,
 * abs_err) error. ggml's make_qkx2_quants.
 *
 * Done for NL sub-blocks at once, one lane each: x, w and L are transposed
 * (element i of sub-block j at [i * NL + j]) so the inner loops run across
 * the independent sub-blocks and vectorize, while each lane does exactly the
 * scalar fit's operations in its order (no sum is reassociated), so the
 * result is bit for bit the one-sub-block-at-a-time result. Writes scale[j]
 * and neg_min[j] = -min (>= 0). */
enum { MAX_LANES = 16 };
#if defined(__GNUC__)
#define WK__INLINE_ALWAYS inline __attribute__((always_inline)) /* specialised per call's constants */
#else
#define WK__INLINE_ALWAYS inline
#endif
static WK__INLINE_ALWAYS void fit_scale_min_lanes(
    const int NL, const int n, const int nmax, const float *xt, const float *wt, uint8_t *Lt, float *scale_out,
    float *neg_min_out, const float rmin, const float rdelta, const int nstep, const bool abs_err) {
    float lo[MAX_LANES], hi[MAX_LANES], sum_w[MAX_LANES], sum_x[MAX_LANES];
    float scale[MAX_LANES], min[MAX_LANES], best[MAX_LANES], den[MAX_LANES];
    float s[MAX_LANES], m[MAX_LANES], err[MAX_LANES];
    float sum_l[MAX_LANES], sum_l2[MAX_LANES], sum_xl[MAX_LANES];
    int flat[MAX_LANES], take[MAX_LANES];
    /* levels as int32 so every lane array has the floats' width (one vector shape) */
    int32_t trial[32 * MAX_LANES], Li[32 * MAX_LANES];
    for (int j = 0; j < NL; j++) {
        lo[j] = hi[j] = xt[j];
        sum_w[j] = wt[j];
        sum_x[j] = sum_w[j] * xt[j];
    }
    for (int i = 1; i < n; i++) {
        for (int j = 0; j < NL; j++) {
            float v = xt[i * NL + j], w = wt[i * NL + j];
            lo[j] = v < lo[j] ? v : lo[j];
            hi[j] = v > hi[j] ? v : hi[j];
            sum_w[j] += w;
            sum_x[j] += w * v;
        }
    }
    for (int j = 0; j < NL; j++) {
        if (lo[j] > 0) lo[j] = 0;
        flat[j] = hi[j] == lo[j];
        /* a flat lane (all values equal, none above 0) keeps L = 0; its
         * other arithmetic runs on a harmless denominator and is dropped */
        float iscale = nmax / (flat[j] ? 1.f : hi[j] - lo[j]);
        scale[j] = 1 / iscale;
        min[j] = lo[j];
        best[j] = 0;
        den[j] = iscale;
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < NL; j++) {
            float v = xt[i * NL + j];
            int l = clamp_int(round_nearest(den[j] * (v - lo[j])), 0, nmax);
            Li[i * NL + j] = l;
            float diff = scale[j] * l + lo[j] - v;
            best[j] += wt[i * NL + j] * (abs_err ? fabsf(diff) : diff * diff);
        }
    }
    for (int k = 0; k <= nstep; k++) {
        const float stretch = rmin + rdelta * k + nmax;
        for (int j = 0; j < NL; j++) {
            den[j] = stretch / (flat[j] ? 1.f : hi[j] - min[j]); /* the inverse scale of this grid */
            sum_l[j] = sum_l2[j] = sum_xl[j] = 0;
        }
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < NL; j++) {
                float v = xt[i * NL + j], w = wt[i * NL + j];
                int l = clamp_int(round_nearest(den[j] * (v - min[j])), 0, nmax);
                trial[i * NL + j] = l;
                sum_l[j] += w * l;
                sum_l2[j] += w * l * l;
                sum_xl[j] += w * l * v;
            }
        }
        for (int j = 0; j < NL; j++) {
            float det = sum_w[j] * sum_l2[j] - sum_l[j] * sum_l[j];
            take[j] = det > 0 && !flat[j];
            if (!take[j]) det = 1.f;
            s[j] = (sum_w[j] * sum_xl[j] - sum_x[j] * sum_l[j]) / det;
            m[j] = (sum_l2[j] * sum_x[j] - sum_l[j] * sum_xl[j]) / det;
            if (m[j] > 0) { /* the min must stay <= 0: refit the scale alone */
                m[j] = 0;
                s[j] = sum_xl[j] / (take[j] ? sum_l2[j] : 1.f);
            }
            err[j] = 0;
        }
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < NL; j++) {
                float diff = s[j] * trial[i * NL + j] + m[j] - xt[i * NL + j];
                err[j] += wt[i * NL + j] * (abs_err ? fabsf(diff) : diff * diff);
            }
        }
        int any = 0;
        for (int j = 0; j < NL; j++) {
            take[j] = take[j] && err[j] < best[j];
            any |= take[j];
            if (take[j]) {
                best[j] = err[j];
                scale[j] = s[j];
                min[j] = m[j];
            }
        }
        if (!any) continue;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < NL; j++) Li[i * NL + j] = take[j] ? trial[i * NL + j] : Li[i * NL + j];
    }
    for (int j = 0; j < NL; j++) {
        if (flat[j]) {
            for (int i = 0; i < n; i++) Li[i * NL + j] = 0;
            scale_out[j] = 0.f;
            neg_min_out[j] = -lo[j];
        } else {
            scale_out[j] = scale[j];
            neg_min_out[j] = -min[j];
        }
    }
    for (int i = 0; i < n * NL; i++) Lt[i] = (uint8_t)Li[i];
}

/* Symmetric fit x[i] ~ scale * (L[i] - nmax) with L - nmax in -nmax..nmax-1,
 * weights x^2 (q6_K): the grid through the largest magnitude, then the least
 * squares scale of 18 grids nudged by +-0.1..0.9 levels, keeping the one that
 * explains most of x. ggml's make_qx_quants with rmse_type 1, no weights.
 * Gives the (signed) scale; 0 and all-zero levels for an all-zero sub-block.
 * Lane-parallel over NL sub-blocks as fit_scale_min_lanes (transposed x and
 * L, each lane the scalar fit's operations in order). */
static WK__INLINE_ALWAYS void fit_scale_sym_x2_lanes(const int NL, const int n, const int nmax, const float *xt,
                                                     int8_t *Lt, float *scale_out) {
    float amax[MAX_LANES], vmax[MAX_LANES], iscale[MAX_LANES], sumlx[MAX_LANES], suml2[MAX_LANES];
    float scale[MAX_LANES], best[MAX_LANES];
    int zero[MAX_LANES], take[MAX_LANES];
    int32_t Li[16 * MAX_LANES], trial[16 * MAX_LANES];
    for (int j = 0; j < NL; j++) amax[j] = vmax[j] = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < NL; j++) {
            float v = xt[i * NL + j], a = fabsf(v);
            vmax[j] = a > amax[j] ? v : vmax[j];
            amax[j] = a > amax[j] ? a : amax[j];
        }
    for (int j = 0; j < NL; j++) {
        zero[j] = amax[j] < ZERO_EPS;
        iscale[j] = -nmax / (zero[j] ? 1.f : vmax[j]);
        sumlx[j] = suml2[j] = 0;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < NL; j++) {
            float v = xt[i * NL + j], w = v * v;
            int l = clamp_int(round_nearest(iscale[j] * v), -nmax, nmax - 1);
            Li[i * NL + j] = l + nmax;
            sumlx[j] += w * v * l;
            suml2[j] += w * l * l;
        }
    for (int j = 0; j < NL; j++) {
        scale[j] = suml2[j] ? sumlx[j] / (suml2[j] ? suml2[j] : 1.f) : 0.0f;
        best[j] = scale[j] * sumlx[j];
    }
    for (int k = -9; k <= 9; k++) {
        if (k == 0) continue;
        const float num = -(nmax + 0.1f * k);
        for (int j = 0; j < NL; j++) {
            iscale[j] = num / (zero[j] ? 1.f : vmax[j]);
            sumlx[j] = suml2[j] = 0;
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < NL; j++) {
                float v = xt[i * NL + j], w = v * v;
                int l = clamp_int(round_nearest(iscale[j] * v), -nmax, nmax - 1);
                trial[i * NL + j] = l + nmax;
                sumlx[j] += w * v * l;
                suml2[j] += w * l * l;
            }
        int any = 0;
        for (int j = 0; j < NL; j++) {
            take[j] = !zero[j] && suml2[j] > 0 && sumlx[j] * sumlx[j] > best[j] * suml2[j];
            any |= take[j];
            if (take[j]) {
                scale[j] = sumlx[j] / suml2[j];
                best[j] = scale[j] * sumlx[j];
            }
        }
        if (!any) continue;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < NL; j++) Li[i * NL + j] = take[j] ? trial[i * NL + j] : Li[i * NL + j];
    }
    for (int j = 0; j < NL; j++) scale_out[j] = zero[j] ? 0.f : scale[j];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < NL; j++) Lt[i * NL + j] = (int8_t)(zero[j] ? 0 : Li[i * NL + j]);
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
    uint8_t L[WK_QK_K], Lt[WK_QK_K];
    float xt[WK_QK_K], wt[WK_QK_K], mins[16], scales[16];
    for (int j = 0; j < 16; j++) /* transpose: the 16 sub-blocks of 16 become lanes */
        for (int i = 0; i < 16; i++) {
            xt[i * 16 + j] = x[16 * j + i];
            wt[i * 16 + j] = fabsf(x[16 * j + i]);
        }
    fit_scale_min_lanes(16, 16, 3, xt, wt, Lt, scales, mins, -0.5f, 0.1f, 15, true);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++) L[16 * j + i] = Lt[i * 16 + j];
    float max_scale = 0, max_min = 0; /* scales and mins are >= 0 here */
    for (int j = 0; j < 16; j++) {
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
        /* unsigned shift: the same low byte as ggml's int shift, also for the
         * meaningless level of an overflowing (inf) iscale, without UB */
        for (int j = 0; j < 16; j++) y->scales[j] |= (uint8_t)((unsigned)round_nearest(iscale * mins[j]) << 4);
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

/* Fit the sub-blocks of 32 of nb (1 or 2) consecutive blocks, levels 0..nmax
 * into L (256 * nb), scales and mins (8 * nb). Two blocks at a time give 16
 * lanes, which vectorize better than a block's 8; each sub-block's fit is
 * the same either way. Weights av_x + |x|, av_x the sub-block's RMS. */
static void fit_subblocks_k(const float *x, int nb, int nmax, float rmin, int nstep, uint8_t *L, float *scales,
                            float *mins) {
    float xt[2 * WK_QK_K], wt[2 * WK_QK_K], sum_x2[16];
    uint8_t Lt[2 * WK_QK_K];
    const int nl = 8 * nb;
    /* transpose: sub-block j (of either block: x + 32 * j) becomes lane j */
    for (int j = 0; j < nl; j++) sum_x2[j] = 0;
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < nl; j++) {
            float v = x[32 * j + i];
            xt[i * nl + j] = v;
            sum_x2[j] += v * v;
        }
    for (int j = 0; j < nl; j++) {
        float av_x = sqrtf(sum_x2[j] / 32);
        for (int i = 0; i < 32; i++) wt[i * nl + j] = av_x + fabsf(xt[i * nl + j]);
    }
    if (nb == 2 && nmax == 15) fit_scale_min_lanes(16, 32, 15, xt, wt, Lt, scales, mins, rmin, 0.1f, nstep, false);
    else if (nb == 2) fit_scale_min_lanes(16, 32, 31, xt, wt, Lt, scales, mins, rmin, 0.1f, nstep, false);
    else if (nmax == 15) fit_scale_min_lanes(8, 32, 15, xt, wt, Lt, scales, mins, rmin, 0.1f, nstep, false);
    else fit_scale_min_lanes(8, 32, 31, xt, wt, Lt, scales, mins, rmin, 0.1f, nstep, false);
    for (int j = 0; j < nl; j++)
        for (int i = 0; i < 32; i++) L[32 * j + i] = Lt[i * nl + j];
}

/* Store one block's 6-bit scales and mins against f16 d, dmin in the
 * 12-byte packing: j < 4 in the low 6 bits of bytes j (scale) and j + 4
 * (min); j >= 4 as nibbles of byte j + 4 with their top 2 bits in the spare
 * top bits of bytes j - 4 and j. Then requantize L to the stored scales.
 * Shared by q4_K (nmax 15) and q5_K (31). */
static void store_scales_mins_k(const float *x, int nmax, const float *scales, const float *mins, uint8_t *L,
                                uint8_t packed[12], uint16_t *d16, uint16_t *dmin16) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
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

/* nb (1 or 2) q4_K blocks */
static void quantize_blocks_q4_K(const float *x, wk_block_q4_K *y, int nb) {
    uint8_t L[2 * WK_QK_K];
    float scales[16], mins[16];
    fit_subblocks_k(x, nb, 15, -1.f, 20, L, scales, mins);
    for (int b = 0; b < nb; b++, y++) {
        const uint8_t *Lb = L + b * WK_QK_K;
        store_scales_mins_k(x + b * WK_QK_K, 15, scales + 8 * b, mins + 8 * b, L + b * WK_QK_K, y->scales, &y->d,
                            &y->dmin);
        /* each 64 values: the first 32 in low nibbles, the next 32 in high nibbles */
        for (int j = 0; j < WK_QK_K; j += 64)
            for (int l = 0; l < 32; l++) y->qs[j / 2 + l] = (uint8_t)(Lb[j + l] | (Lb[j + l + 32] << 4));
    }
}

/* nb (1 or 2) q5_K blocks */
static void quantize_blocks_q5_K(const float *x, wk_block_q5_K *y, int nb) {
    uint8_t L[2 * WK_QK_K];
    float scales[16], mins[16];
    fit_subblocks_k(x, nb, 31, -0.5f, 15, L, scales, mins);
    for (int b = 0; b < nb; b++, y++) {
        const uint8_t *Lb = L + b * WK_QK_K;
        store_scales_mins_k(x + b * WK_QK_K, 31, scales + 8 * b, mins + 8 * b, L + b * WK_QK_K, y->scales, &y->d,
                            &y->dmin);
        /* low 4 bits as in q4_K; bit 4 of value 64k + l (l < 32) in qh[l]
         * bit 2k, of value 64k + 32 + l in bit 2k + 1 */
        memset(y->qh, 0, sizeof y->qh);
        for (int j = 0, k = 0; j < WK_QK_K; j += 64, k++) {
            for (int l = 0; l < 32; l++) {
                int lo = Lb[j + l], hi = Lb[j + l + 32];
                if (lo > 15) {
                    lo -= 16;
                    y->qh[l] |= (uint8_t)(1u << (2 * k));
                }
                if (hi > 15) {
                    hi -= 16;
                    y->qh[l] |= (uint8_t)(2u << (2 * k));
                }
                y->qs[j / 2 + l] = (uint8_t)(lo | (hi << 4));
            }
        }
    }
}

/* ---- q6_K ---------------------------------------------------------------- */

static void quantize_block_q6_K(const float *x, wk_block_q6_K *y) {
    int8_t L[WK_QK_K], Lt[WK_QK_K];
    float xt[WK_QK_K], scales[16];
    for (int j = 0; j < 16; j++) /* transpose: the 16 sub-blocks of 16 become lanes */
        for (int i = 0; i < 16; i++) xt[i * 16 + j] = x[16 * j + i];
    fit_scale_sym_x2_lanes(16, 16, 32, xt, Lt, scales);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++) L[16 * j + i] = Lt[i * 16 + j];
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; j++) {
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
/* The value of the iq4nl entry nearest_iq4nl(v) picks, without branches
 * (so the lane loops below vectorize): with t[0] < v < t[15] the bisection
 * ends at the last entry <= v and its successor, which a scan over the
 * increasing table finds too; at or beyond either end the same comparison
 * picks the end entry. The same float comparisons, so the same choice. */
static inline float nearest_iq4nl_value(float v) {
    static const float t[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    float lo = t[0], hi = t[1];
    for (int k = 1; k < 15; k++) {
        int le = t[k] <= v;
        lo = le ? t[k] : lo;
        hi = le ? t[k + 1] : hi;
    }
    return v - lo < hi - v ? lo : hi;
}

static void quantize_block_iq4_xs(const float *x, wk_block_iq4_xs *y) {
    const int8_t *t = wk_iq4nl_values;
    uint8_t L[WK_QK_K];
    float scales[8];
    /* the 8 sub-blocks of 32 as lanes (transposed), each running the
     * scalar search's operations in order, as in fit_scale_min_lanes */
    float xt[WK_QK_K], amax[8], vmax[8], sid[8], sd[8], best[8], sumqx[8], sumq2[8];
    int zero[8];
    for (int j = 0; j < 8; j++) amax[j] = vmax[j] = 0;
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 8; j++) {
            float v = x[32 * j + i], a = fabsf(v);
            xt[i * 8 + j] = v;
            vmax[j] = a > amax[j] ? v : vmax[j];
            amax[j] = a > amax[j] ? a : amax[j];
        }
    for (int j = 0; j < 8; j++) {
        zero[j] = amax[j] < ZERO_EPS;
        if (zero[j]) vmax[j] = 1.f; /* dropped below; keeps the arithmetic finite */
        sd[j] = -vmax[j] / t[0];
        sid[j] = 1 / sd[j];
        sumqx[j] = sumq2[j] = 0;
    }
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 8; j++) {
            float v = xt[i * 8 + j], q = nearest_iq4nl_value(sid[j] * v), w = v * v;
            sumqx[j] += w * q * v;
            sumq2[j] += w * q * q;
        }
    for (int j = 0; j < 8; j++) {
        sd[j] = sumq2[j] > 0 ? sumqx[j] / (sumq2[j] > 0 ? sumq2[j] : 1.f) : 0.f;
        best[j] = sd[j] * sumqx[j];
    }
    for (int k = -7; k <= 7; k++) {
        for (int j = 0; j < 8; j++) {
            sid[j] = (k + t[0]) / vmax[j];
            sumqx[j] = sumq2[j] = 0;
        }
        for (int i = 0; i < 32; i++)
            for (int j = 0; j < 8; j++) {
                float v = xt[i * 8 + j], q = nearest_iq4nl_value(sid[j] * v), w = v * v;
                sumqx[j] += w * q * v;
                sumq2[j] += w * q * q;
            }
        for (int j = 0; j < 8; j++) {
            if (sumq2[j] > 0 && sumqx[j] * sumqx[j] > best[j] * sumq2[j]) {
                sd[j] = sumqx[j] / sumq2[j];
                best[j] = sd[j] * sumqx[j];
            }
        }
    }
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ib++) {
        scales[ib] = zero[ib] ? 0.f : sd[ib];
        if (zero[ib]) continue;
        if (fabsf(sd[ib]) > amax_scale) {
            amax_scale = fabsf(sd[ib]);
            max_scale = sd[ib];
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
WK__QUANT_ROW(q6_K, wk_block_q6_K)
WK__QUANT_ROW(q8_K, wk_block_q8_K)
WK__QUANT_ROW(iq4_xs, wk_block_iq4_xs)

/* q4_K and q5_K fit two blocks per call (16 lanes), the odd last one alone */
#define WK__QUANT_ROW_PAIRS(name, block_t)                                               \
    void wk__quantize_row_##name(const float *x, void *y, int64_t n) {                   \
        block_t *b = (block_t *)y;                                                       \
        int64_t nb = n / WK_QK_K, i = 0;                                                 \
        for (; i + 2 <= nb; i += 2) quantize_blocks_##name(x + i * WK_QK_K, b + i, 2);   \
        if (i < nb) quantize_blocks_##name(x + i * WK_QK_K, b + i, 1);                   \
    }
WK__QUANT_ROW_PAIRS(q4_K, wk_block_q4_K)
WK__QUANT_ROW_PAIRS(q5_K, wk_block_q5_K)
