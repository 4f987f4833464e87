/* CPU pooling and resampling on NCHW (1-d ops arrive with H = 1).
 *
 * Inputs are read through their layout (any strides, including 0); outputs
 * are contiguous. Work is split over the N*C planes (wk__parallel_for), each
 * plane computed the same way on any thread, so results do not depend on the
 * thread count.
 *
 * Semantics follow PyTorch 1.13's CPU kernels:
 *  - max pool: NaN in a window gives NaN; integers compare exactly.
 *  - avg pool: sum in the accumulator (f32 for f32/f16/bf16/f8, f64 for f64)
 *    over the window rows in order, divided by the window size (kh*kw when
 *    count_include_pad; the in-image cells otherwise).
 *  - nearest: src = min(floor(dst * (float)(in/out)), in - 1) (legacy
 *    'nearest'), an exact copy for every dtype.
 *  - bilinear: as UpSampleKernel.cpp: scale in f32 (f64 for f64), source
 *    position and its fraction in double, weights rounded to f32 (f64), blend
 *    lh0 * (lw0 * x00 + lw1 * x01) + lh1 * (...) in f32 (f64); align_corners
 *    both ways. f32 weights match torch 1.13 bit for bit. f16/bf16/f8 compute
 *    in f32 and round the result once (torch 1.13's own bf16 kernel keeps
 *    intermediates in bf16 and is less accurate; it has no f16 kernels). */
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/threadpool.h"

/* Geometry of one call. */
typedef struct plane_geo {
    const void *x;
    void *y;
    int64_t N, C, H, W, OH, OW;
    int64_t xsn, xsc, xsh, xsw, xoff; /* input strides / offset (elements) */
} plane_geo;

static void geo_init(plane_geo *g, const void *x, const wk_layout *lx, void *y, const wk_layout *ld) {
    g->x = x;
    g->y = y;
    g->N = lx->shape[0];
    g->C = lx->shape[1];
    g->H = lx->shape[2];
    g->W = lx->shape[3];
    g->OH = ld->shape[2];
    g->OW = ld->shape[3];
    g->xsn = lx->stride[0];
    g->xsc = lx->stride[1];
    g->xsh = lx->stride[2];
    g->xsw = lx->stride[3];
    g->xoff = lx->offset;
}

/* Element offset of plane `pl` (= n*C + c) in the input. */
static inline int64_t plane_off(const plane_geo *g, int64_t pl) {
    return g->xoff + (pl / g->C) * g->xsn + (pl % g->C) * g->xsc;
}

/* Split planes [0, N*C) over threads when the call is large enough
 * (work = elements touched per plane). */
static void run_planes(const plane_geo *g, double work, wk_range_fn fn, void *ctx) {
    int64_t planes = g->N * g->C;
    int64_t min_planes = work >= WK_PAR_MIN_ELEMS ? 1 : (int64_t)(WK_PAR_MIN_ELEMS / (work < 1 ? 1 : work)) + 1;
    wk__parallel_for(planes, 1, min_planes, fn, ctx);
}

/* ------------------------------------------------------------------ pooling */

typedef struct pool_ctx {
    plane_geo g;
    const wk_pool_params *p;
} pool_ctx;

#define LD_PLAIN(p, i) ((p)[i])
#define ST_PLAIN(p, i, v) ((p)[i] = (v))
#define LD_BF16(p, i) wk_bf16_to_f32((p)[i])
#define ST_BF16(p, i, v) ((p)[i] = wk_f32_to_bf16(v))
#define LD_F16(p, i) wk_f16_to_f32((p)[i])
#define ST_F16(p, i, v) ((p)[i] = wk_f32_to_f16(v))
#define LD_F8(p, i) wk_f8e4m3_to_f32((p)[i])
#define ST_F8(p, i, v) ((p)[i] = wk_f32_to_f8e4m3(v))
#define NAN_F(v) isnan(v)
#define NAN_NO(v) 0

/* Window bounds of output index o along a dim: [lo, hi) clipped to the image
 * (written so that no intermediate can overflow, whatever the sizes). */
#define WINDOW(o, s, p, k, n, lo, hi)                                                                                 \
    int64_t lo = (o) * (s) - (p), hi;                                                                                 \
    if (lo < 0) {                                                                                                     \
        hi = lo + (k);                                                                                                \
        lo = 0;                                                                                                       \
    } else                                                                                                            \
        hi = (k) > (n) - lo ? (n) : lo + (k);                                                                         \
    if (hi > (n)) hi = (n)

/* max pool over planes [b, e): ST = storage type, VT = value type. Max is
 * exact, so the order does not matter: per output row, the column maxima of
 * the kh window rows are taken first (a vectorizable pass over W when the
 * rows are contiguous), then the max over kw of those. A NaN anywhere in a
 * window gives NaN (torch). Without scratch memory it falls back to the
 * direct window loop. */
#define MAX_POOL(SUF, ST, VT, LOWEST, LD, STO, ISNAN)                                                                 \
    static inline VT vmax_##SUF(VT m, VT v) { return ((v > m) | ISNAN(v)) ? v : m; }                                \
    static void col_init_##SUF(VT *restrict col, const ST *restrict row, int64_t W, int64_t sw) {                    \
        if (sw == 1)                                                                                                  \
            for (int64_t iw = 0; iw < W; iw++) col[iw] = LD(row, iw);                                                 \
        else                                                                                                          \
            for (int64_t iw = 0; iw < W; iw++) col[iw] = LD(row, iw * sw);                                            \
    }                                                                                                                 \
    static void col_max_##SUF(VT *restrict col, const ST *restrict row, int64_t W, int64_t sw) {                     \
        if (sw == 1)                                                                                                  \
            for (int64_t iw = 0; iw < W; iw++) col[iw] = vmax_##SUF(col[iw], LD(row, iw));                            \
        else                                                                                                          \
            for (int64_t iw = 0; iw < W; iw++) col[iw] = vmax_##SUF(col[iw], LD(row, iw * sw));                       \
    }                                                                                                                 \
    /* o[i] = max over j < k of col[start + i * s + j], for i < n (windows inside the row) */                      \
    static void hmax_##SUF(VT *restrict o, const VT *restrict col, int64_t n, int64_t s, int64_t start, int64_t k) { \
        for (int64_t i = 0; i < n; i++) o[i] = col[start + i * s];                                                    \
        for (int64_t j = 1; j < k; j++)                                                                               \
            for (int64_t i = 0; i < n; i++) o[i] = vmax_##SUF(o[i], col[start + i * s + j]);                          \
    }                                                                                                                 \
    static void max_pool_##SUF(void *vctx, int64_t b, int64_t e, int tid) {                                         \
        const pool_ctx *c = vctx;                                                                                     \
        const plane_geo *g = &c->g;                                                                                   \
        const wk_pool_params *p = c->p;                                                                               \
        const ST *x = g->x;                                                                                           \
        ST *y = g->y;                                                                                                 \
        const int64_t sh = g->xsh, sw = g->xsw, W = g->W;                                                             \
        const int64_t OW = g->OW, s1 = p->s[1], p1 = p->p[1], k1 = p->k[1];                                          \
        /* output columns [olo, ohi) have their whole window inside the row */                                       \
        const int64_t olo = p1 / s1 + (p1 % s1 != 0);                                                                 \
        int64_t ohi = W - (k1 - p1) >= 0 ? (W - (k1 - p1)) / s1 + 1 : 0;                                              \
        if (ohi > OW) ohi = OW;                                                                                       \
        if (ohi < olo) ohi = olo;                                                                                     \
        VT *col = malloc(sizeof(VT) * (size_t)(W + OW));                                                              \
        VT *orow = col ? col + W : NULL;                                                                              \
        for (int64_t pl = b; pl < e; pl++) {                                                                          \
            const ST *xp = x + plane_off(g, pl);                                                                      \
            ST *yp = y + pl * g->OH * g->OW;                                                                          \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                                                  \
                WINDOW(oh, p->s[0], p->p[0], p->k[0], g->H, h0, h1);                                                  \
                if (col) {                                                                                            \
                    col_init_##SUF(col, xp + h0 * sh, W, sw);                                                         \
                    for (int64_t ih = h0 + 1; ih < h1; ih++) col_max_##SUF(col, xp + ih * sh, W, sw);                 \
                    for (int64_t ow = 0; ow < OW; ow++) {                                                             \
                        if (ow == olo && ohi > olo) {                                                                 \
                            hmax_##SUF(orow + olo, col, ohi - olo, s1, olo * s1 - p1, k1);                            \
                            for (; ow < ohi; ow++) STO(yp, oh * OW + ow, orow[ow]);                                   \
                            if (ow == OW) break;                                                                      \
                        }                                                                                             \
                        WINDOW(ow, s1, p1, k1, W, w0, w1);                                                            \
                        VT m = col[w0];                                                                               \
                        for (int64_t iw = w0 + 1; iw < w1; iw++) m = vmax_##SUF(m, col[iw]);                          \
                        STO(yp, oh * OW + ow, m);                                                                     \
                    }                                                                                                 \
                    continue;                                                                                         \
                }                                                                                                     \
                for (int64_t ow = 0; ow < g->OW; ow++) {                                                              \
                    WINDOW(ow, p->s[1], p->p[1], p->k[1], W, w0, w1);                                                 \
                    VT m = LOWEST;                                                                                    \
                    for (int64_t ih = h0; ih < h1; ih++) {                                                            \
                        const ST *row = xp + ih * sh;                                                                 \
                        for (int64_t iw = w0; iw < w1; iw++) m = vmax_##SUF(m, LD(row, iw * sw));                     \
                    }                                                                                                 \
                    STO(yp, oh * g->OW + ow, m);                                                                      \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
        free(col);                                                                                                    \
    }

/* avg pool: AT = accumulator type. */
#define AVG_POOL(SUF, ST, AT, LD, STO)                                                                                \
    static void avg_pool_##SUF(void *vctx, int64_t b, int64_t e, int tid) {                                         \
        const pool_ctx *c = vctx;                                                                                     \
        const plane_geo *g = &c->g;                                                                                   \
        const wk_pool_params *p = c->p;                                                                               \
        const ST *x = g->x;                                                                                           \
        ST *y = g->y;                                                                                                 \
        const int64_t sh = g->xsh, sw = g->xsw;                                                                       \
        for (int64_t pl = b; pl < e; pl++) {                                                                          \
            const ST *xp = x + plane_off(g, pl);                                                                      \
            ST *yp = y + pl * g->OH * g->OW;                                                                          \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                                                  \
                WINDOW(oh, p->s[0], p->p[0], p->k[0], g->H, h0, h1);                                                  \
                for (int64_t ow = 0; ow < g->OW; ow++) {                                                              \
                    WINDOW(ow, p->s[1], p->p[1], p->k[1], g->W, w0, w1);                                              \
                    AT sum = 0;                                                                                       \
                    for (int64_t ih = h0; ih < h1; ih++) {                                                            \
                        const ST *row = xp + ih * sh;                                                                 \
                        for (int64_t iw = w0; iw < w1; iw++) sum += (AT)LD(row, iw * sw);                             \
                    }                                                                                                 \
                    /* floor mode with padding <= k/2: padded windows never pass H + p */                            \
                    AT div = p->count_include_pad ? (AT)p->k[0] * (AT)p->k[1] : (AT)((h1 - h0) * (w1 - w0));          \
                    STO(yp, oh * g->OW + ow, sum / div);                                                              \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
    }

MAX_POOL(f32, float, float, -INFINITY, LD_PLAIN, ST_PLAIN, NAN_F)
MAX_POOL(f64, double, double, -INFINITY, LD_PLAIN, ST_PLAIN, NAN_F)
MAX_POOL(bf16, uint16_t, float, -INFINITY, LD_BF16, ST_BF16, NAN_F)
MAX_POOL(f16, uint16_t, float, -INFINITY, LD_F16, ST_F16, NAN_F)
MAX_POOL(f8, uint8_t, float, -INFINITY, LD_F8, ST_F8, NAN_F)
MAX_POOL(u8, uint8_t, uint8_t, 0, LD_PLAIN, ST_PLAIN, NAN_NO)
MAX_POOL(u32, uint32_t, uint32_t, 0, LD_PLAIN, ST_PLAIN, NAN_NO)
MAX_POOL(i16, int16_t, int16_t, INT16_MIN, LD_PLAIN, ST_PLAIN, NAN_NO)
MAX_POOL(i32, int32_t, int32_t, INT32_MIN, LD_PLAIN, ST_PLAIN, NAN_NO)
MAX_POOL(i64, int64_t, int64_t, INT64_MIN, LD_PLAIN, ST_PLAIN, NAN_NO)
AVG_POOL(f32, float, float, LD_PLAIN, ST_PLAIN)
AVG_POOL(f64, double, double, LD_PLAIN, ST_PLAIN)
AVG_POOL(bf16, uint16_t, float, LD_BF16, ST_BF16)
AVG_POOL(f16, uint16_t, float, LD_F16, ST_F16)
AVG_POOL(f8, uint8_t, float, LD_F8, ST_F8)

/* f32 max pool, 2x2 windows at stride 2, no padding (every CNN's pool):
 * one pass, no scratch, the NaN-propagating max as bit selects (a float
 * ternary compiles to a branch that mispredicts on real data). */
static inline float max_nan_f32(float m, float v) {
    uint32_t um, uv, mask = 0u - (uint32_t)((v > m) | (v != v));
    memcpy(&um, &m, sizeof um);
    memcpy(&uv, &v, sizeof uv);
    um = (uv & mask) | (um & ~mask);
    memcpy(&m, &um, sizeof m);
    return m;
}

static void max_pool_2x2_f32(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    const pool_ctx *c = vctx;
    const plane_geo *g = &c->g;
    const float *x = g->x;
    float *y = g->y;
    const int64_t sh = g->xsh, sw = g->xsw, OH = g->OH, OW = g->OW;
    for (int64_t pl = b; pl < e; pl++) {
        const float *xp = x + plane_off(g, pl);
        float *yp = y + pl * OH * OW;
        for (int64_t oh = 0; oh < OH; oh++) {
            const float *r0 = xp + 2 * oh * sh, *r1 = r0 + sh;
            for (int64_t ow = 0; ow < OW; ow++) {
                /* columns first, then across, as max_pool_f32 and the CUDA
                 * kernel: which NaN (payload, sign) survives depends on the
                 * order */
                float c0 = max_nan_f32(r0[2 * ow * sw], r1[2 * ow * sw]);
                float c1 = max_nan_f32(r0[(2 * ow + 1) * sw], r1[(2 * ow + 1) * sw]);
                yp[oh * OW + ow] = max_nan_f32(c0, c1);
            }
        }
    }
}

wk_status wk__cpu_pool2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                         wk_dtype dt, const wk_pool_params *p) {
    pool_ctx c = {.p = p};
    geo_init(&c.g, x, lx, dst, ld);
    wk_range_fn fn = NULL;
    if (p->is_max) {
        switch (dt) {
        case WK_F32:
            fn = p->k[0] == 2 && p->k[1] == 2 && p->s[0] == 2 && p->s[1] == 2 && p->p[0] == 0 && p->p[1] == 0 &&
                         c.g.OH * 2 <= c.g.H && c.g.OW * 2 <= c.g.W
                     ? max_pool_2x2_f32
                     : max_pool_f32;
            break;
        case WK_F64: fn = max_pool_f64; break;
        case WK_BF16: fn = max_pool_bf16; break;
        case WK_F16: fn = max_pool_f16; break;
        case WK_F8E4M3: fn = max_pool_f8; break;
        case WK_U8: fn = max_pool_u8; break;
        case WK_U32: fn = max_pool_u32; break;
        case WK_I16: fn = max_pool_i16; break;
        case WK_I32: fn = max_pool_i32; break;
        case WK_I64: fn = max_pool_i64; break;
        default: break;
        }
    } else {
        switch (dt) {
        case WK_F32: fn = avg_pool_f32; break;
        case WK_F64: fn = avg_pool_f64; break;
        case WK_BF16: fn = avg_pool_bf16; break;
        case WK_F16: fn = avg_pool_f16; break;
        case WK_F8E4M3: fn = avg_pool_f8; break;
        default: break;
        }
    }
    if (!fn)
        return wk__err(WK_ERR_DTYPE, p->is_max ? "max_pool2d" : "avg_pool2d", "not defined for dtype %s",
                       wk_dtype_name(dt));
    /* elements read per plane (windows clipped to the image) */
    double kh = (double)(p->k[0] < c.g.H ? p->k[0] : c.g.H), kw = (double)(p->k[1] < c.g.W ? p->k[1] : c.g.W);
    run_planes(&c.g, (double)c.g.OH * (double)c.g.OW * kh * kw, fn, &c);
    return WK_OK;
}

/* ------------------------------------------------------------- resampling */

typedef struct up_ctx {
    plane_geo g;
    const int64_t *ih, *iw;   /* nearest: source row / col of each output row / col */
    /* bilinear: two source rows / cols and their weights per output row / col */
    const int64_t *h0, *h1, *w0, *w1;
    const float *lh0, *lh1, *lw0, *lw1;     /* f32 weights (f32 and narrow dtypes) */
    const double *dh0, *dh1, *dw0, *dw1;    /* f64 weights */
} up_ctx;

/* nearest: a copy of elements of ST (any type of the dtype's size). */
#define NEAREST(SUF, ST)                                                                                              \
    static void nearest_##SUF(void *vctx, int64_t b, int64_t e, int tid) {                                          \
        const up_ctx *c = vctx;                                                                                       \
        const plane_geo *g = &c->g;                                                                                   \
        const ST *x = g->x;                                                                                           \
        ST *y = g->y;                                                                                                 \
        for (int64_t pl = b; pl < e; pl++) {                                                                          \
            const ST *xp = x + plane_off(g, pl);                                                                      \
            ST *yp = y + pl * g->OH * g->OW;                                                                          \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                                                  \
                const ST *row = xp + c->ih[oh] * g->xsh;                                                              \
                ST *yr = yp + oh * g->OW;                                                                             \
                for (int64_t ow = 0; ow < g->OW; ow++) yr[ow] = row[c->iw[ow]];                                       \
            }                                                                                                         \
        }                                                                                                             \
    }
NEAREST(1, uint8_t)
NEAREST(2, uint16_t)
NEAREST(4, uint32_t)
NEAREST(8, uint64_t)

/* bilinear: out = lh0 * (lw0 * x00 + lw1 * x01) + lh1 * (lw0 * x10 + lw1 * x11),
 * torch's order of operations. The W-interpolated input rows (the
 * parentheses) are kept in two row buffers and reused by the following
 * output rows that need them; the final blend is a vectorizable pass. The
 * direct loop is the fallback without scratch memory; both give the same bits. */
#define BILINEAR(SUF, ST, AT, LD, STO, WP)                                                                            \
    static void hrow_##SUF(AT *restrict t, const ST *restrict r, const int64_t *j0, const int64_t *j1,              \
                           const AT *b0, const AT *b1, int64_t OW) {                                                  \
        for (int64_t ow = 0; ow < OW; ow++) t[ow] = b0[ow] * (AT)LD(r, j0[ow]) + b1[ow] * (AT)LD(r, j1[ow]);          \
    }                                                                                                                 \
    static void blend_##SUF(ST *restrict y, const AT *restrict t0, const AT *restrict t1, AT a0, AT a1, int64_t OW) { \
        for (int64_t ow = 0; ow < OW; ow++) STO(y, ow, a0 * t0[ow] + a1 * t1[ow]);                                    \
    }                                                                                                                 \
    static void bilinear_##SUF(void *vctx, int64_t b, int64_t e, int tid) {                                         \
        const up_ctx *c = vctx;                                                                                       \
        const plane_geo *g = &c->g;                                                                                   \
        const ST *x = g->x;                                                                                           \
        ST *y = g->y;                                                                                                 \
        const int64_t OW = g->OW;                                                                                     \
        const AT *lh0 = c->WP##h0, *lh1 = c->WP##h1, *lw0 = c->WP##w0, *lw1 = c->WP##w1;                              \
        AT *buf = malloc(sizeof(AT) * 2 * (size_t)OW);                                                                \
        for (int64_t pl = b; pl < e; pl++) {                                                                          \
            const ST *xp = x + plane_off(g, pl);                                                                      \
            ST *yp = y + pl * g->OH * OW;                                                                             \
            int64_t tag[2] = {-1, -1}; /* input row held by each buffer */                                            \
            for (int64_t oh = 0; oh < g->OH; oh++) {                                                                  \
                const AT a0 = lh0[oh], a1 = lh1[oh];                                                                  \
                ST *yr = yp + oh * OW;                                                                                \
                if (buf) {                                                                                            \
                    const int64_t R0 = c->h0[oh], R1 = c->h1[oh];                                                     \
                    int s0 = tag[0] == R0 ? 0 : tag[1] == R0 ? 1 : -1;                                                \
                    if (s0 < 0) {                                                                                     \
                        s0 = tag[0] == R1 ? 1 : 0;                                                                    \
                        hrow_##SUF(buf + s0 * OW, xp + R0 * g->xsh, c->w0, c->w1, lw0, lw1, OW);                      \
                        tag[s0] = R0;                                                                                 \
                    }                                                                                                 \
                    int s1 = tag[0] == R1 ? 0 : tag[1] == R1 ? 1 : -1;                                                \
                    if (s1 < 0) {                                                                                     \
                        s1 = 1 - s0;                                                                                  \
                        hrow_##SUF(buf + s1 * OW, xp + R1 * g->xsh, c->w0, c->w1, lw0, lw1, OW);                      \
                        tag[s1] = R1;                                                                                 \
                    }                                                                                                 \
                    blend_##SUF(yr, buf + s0 * OW, buf + s1 * OW, a0, a1, OW);                                        \
                    continue;                                                                                         \
                }                                                                                                     \
                const ST *r0 = xp + c->h0[oh] * g->xsh, *r1 = xp + c->h1[oh] * g->xsh;                                \
                for (int64_t ow = 0; ow < OW; ow++) {                                                                 \
                    const int64_t j0 = c->w0[ow], j1 = c->w1[ow];                                                     \
                    const AT b0 = lw0[ow], b1 = lw1[ow];                                                              \
                    AT t0 = b0 * (AT)LD(r0, j0) + b1 * (AT)LD(r0, j1);                                                \
                    AT t1 = b0 * (AT)LD(r1, j0) + b1 * (AT)LD(r1, j1);                                                \
                    STO(yr, ow, a0 * t0 + a1 * t1);                                                                   \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
        free(buf);                                                                                                    \
    }
BILINEAR(f32, float, float, LD_PLAIN, ST_PLAIN, l)
BILINEAR(f64, double, double, LD_PLAIN, ST_PLAIN, d)
BILINEAR(bf16, uint16_t, float, LD_BF16, ST_BF16, l)
BILINEAR(f16, uint16_t, float, LD_F16, ST_F16, l)
BILINEAR(f8, uint8_t, float, LD_F8, ST_F8, l)

/* torch's legacy nearest index: min(floor(dst * (float)in / out), in - 1). */
void wk__cpu_nearest_index(int64_t in, int64_t out, int64_t stride, int64_t *idx) {
    float scale = (float)in / (float)out;
    for (int64_t i = 0; i < out; i++) {
        int64_t s;
        if (out == in) s = i;
        else if (out == 2 * in) s = i >> 1;
        else {
            float f = floorf((float)i * scale);
            s = f >= (float)(in - 1) ? in - 1 : (int64_t)f;
        }
        idx[i] = s * stride;
    }
}

/* torch's linear source indices and weights (compute_source_index_and_lambda):
 * the scale is computed in AT (float for f32 and narrower, double for f64),
 * the source position and its fraction in double, the weights rounded to AT
 * (this reproduces torch 1.13's f32 weights bit for bit). Indices are
 * pre-multiplied by stride. */
#define LINEAR_INDEX(SUF, AT)                                                                                         \
    void wk__cpu_linear_index_##SUF(int64_t in, int64_t out, bool ac, int64_t stride, int64_t *i0, int64_t *i1,    \
                                   AT *l0, AT *l1) {                                                                  \
        const double scale =                                                                                          \
            (double)(ac ? (out > 1 ? (AT)(in - 1) / (AT)(out - 1) : (AT)0) : (AT)in / (AT)out);                       \
        for (int64_t i = 0; i < out; i++) {                                                                           \
            int64_t a, b;                                                                                             \
            AT w0, w1;                                                                                                \
            if (in == out) {                                                                                          \
                a = b = i;                                                                                            \
                w0 = 1, w1 = 0;                                                                                       \
            } else {                                                                                                  \
                double src;                                                                                           \
                if (ac) src = scale * (double)i;                                                                      \
                else {                                                                                                \
                    src = scale * ((double)i + 0.5) - 0.5;                                                            \
                    if (src < 0) src = 0;                                                                             \
                }                                                                                                     \
                a = src >= (double)(in - 1) ? in - 1 : (int64_t)src;                                                  \
                b = a + (a < in - 1 ? 1 : 0);                                                                         \
                double f = src - (double)a;                                                                           \
                w1 = (AT)(f < 0 ? 0 : f > 1 ? 1 : f);                                                                 \
                w0 = (AT)1 - w1;                                                                                      \
            }                                                                                                         \
            i0[i] = a * stride, i1[i] = b * stride, l0[i] = w0, l1[i] = w1;                                           \
        }                                                                                                             \
    }
LINEAR_INDEX(f32, float)
LINEAR_INDEX(f64, double)

wk_status wk__cpu_upsample2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                             wk_dtype dt, bool bilinear, bool align_corners) {
    const char *op = bilinear ? "upsample_bilinear2d" : "upsample_nearest2d";
    up_ctx c = {0};
    geo_init(&c.g, x, lx, dst, ld);
    int64_t OH = c.g.OH, OW = c.g.OW, n = OH + OW;
    wk_range_fn fn = NULL;
    if (!bilinear) {
        switch (wk__dtype_elem_bytes(dt)) {
        case 1: fn = nearest_1; break;
        case 2: fn = nearest_2; break;
        case 4: fn = nearest_4; break;
        case 8: fn = nearest_8; break;
        default: return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
        }
        int64_t *idx = malloc(sizeof(int64_t) * (size_t)n);
        if (!idx) return wk__err(WK_ERR_OOM, op, "cannot allocate %lld indices", (long long)n);
        wk__cpu_nearest_index(c.g.H, OH, 1, idx);
        wk__cpu_nearest_index(c.g.W, OW, c.g.xsw, idx + OH);
        c.ih = idx;
        c.iw = idx + OH;
        run_planes(&c.g, (double)OH * (double)OW, fn, &c);
        free(idx);
        return WK_OK;
    }
    switch (dt) {
    case WK_F32: fn = bilinear_f32; break;
    case WK_F64: fn = bilinear_f64; break;
    case WK_BF16: fn = bilinear_bf16; break;
    case WK_F16: fn = bilinear_f16; break;
    case WK_F8E4M3: fn = bilinear_f8; break;
    default: return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    }
    int64_t *idx = malloc(sizeof(int64_t) * 2 * (size_t)n);
    void *w = malloc(sizeof(double) * 2 * (size_t)n);
    if (!idx || !w) {
        free(idx);
        free(w);
        return wk__err(WK_ERR_OOM, op, "cannot allocate %lld indices", (long long)n);
    }
    c.h0 = idx, c.h1 = idx + OH, c.w0 = idx + 2 * OH, c.w1 = idx + 2 * OH + OW;
    if (dt == WK_F64) {
        double *d = w;
        wk__cpu_linear_index_f64(c.g.H, OH, align_corners, 1, idx, idx + OH, d, d + OH);
        wk__cpu_linear_index_f64(c.g.W, OW, align_corners, c.g.xsw, idx + 2 * OH, idx + 2 * OH + OW, d + 2 * OH,
                         d + 2 * OH + OW);
        c.dh0 = d, c.dh1 = d + OH, c.dw0 = d + 2 * OH, c.dw1 = d + 2 * OH + OW;
    } else {
        float *f = w;
        wk__cpu_linear_index_f32(c.g.H, OH, align_corners, 1, idx, idx + OH, f, f + OH);
        wk__cpu_linear_index_f32(c.g.W, OW, align_corners, c.g.xsw, idx + 2 * OH, idx + 2 * OH + OW, f + 2 * OH,
                         f + 2 * OH + OW);
        c.lh0 = f, c.lh1 = f + OH, c.lw0 = f + 2 * OH, c.lw1 = f + 2 * OH + OW;
    }
    run_planes(&c.g, (double)OH * (double)OW * 4, fn, &c);
    free(idx);
    free(w);
    return WK_OK;
}
