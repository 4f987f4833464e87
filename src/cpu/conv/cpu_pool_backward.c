/* CPU backward of pooling and resampling (the optional pool2d_backward /
 * upsample2d_backward entries of src/tensor/backend.h), NCHW, 1-d ops with H = 1.
 *
 * Work is split over the N*C planes like the forward (cpu_pool.c): one plane
 * is written by one thread only, so scattering each output's gradient into
 * its input window needs no atomics and sums in the same order whatever the
 * thread count (deterministic). x and g are read through their layouts (g
 * is often a broadcast view: stride 0); dx is contiguous. Sums are kept in
 * the accumulator type (f32 for f32 / f16 / bf16 / f8, f64 for f64) and
 * rounded once per element at the end.
 *
 *  - max pool: each window's gradient goes to its first maximum in row-major
 *    order, or to its last NaN (torch 1.13's `val > max || isnan(val)`);
 *    a window of -inf only gives it to its first cell.
 *  - avg pool: g / divisor to every in-image cell of the window (divisor as
 *    the forward: k_h * k_w with count_include_pad, else the in-image cells).
 *    x is not read (it may be NULL: only lx's shape is used).
 *  - nearest / bilinear: each output's gradient to the cells it read, with
 *    the forward's index maps and weights (wk__cpu_*_index). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype_cases.h"
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/threadpool.h"

typedef struct bw_ctx {
    const void *x, *g;
    void *dx;
    int64_t C, H, W, OH, OW;
    int64_t xsn, xsc, xsh, xsw, xoff;
    int64_t gsn, gsc, gsh, gsw, goff;
    const wk_pool_params *p;
    const int64_t *ih, *iw;                 /* nearest */
    const int64_t *h0, *h1, *w0, *w1;       /* bilinear (w0 / w1 unscaled: dx is contiguous) */
    const float *lh0, *lh1, *lw0, *lw1;
    const double *dh0, *dh1, *dw0, *dw1;
} bw_ctx;

#define LD_PLAIN(p, i) ((p)[i])
#define LD_BF16(p, i) wk_bf16_to_f32((p)[i])
#define LD_F16(p, i) wk_f16_to_f32((p)[i])
#define LD_F8(p, i) wk_f8e4m3_to_f32((p)[i])
#define ST_PLAIN(p, i, v) ((p)[i] = (v))
#define ST_BF16(p, i, v) ((p)[i] = wk_f32_to_bf16(v))
#define ST_F16(p, i, v) ((p)[i] = wk_f32_to_f16(v))
#define ST_F8(p, i, v) ((p)[i] = wk_f32_to_f8e4m3(v))

/* Window [lo, hi) of output o along a dim, clipped to [0, n). */
static inline void window(int64_t o, int64_t s, int64_t p, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t a = o * s - p, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > n ? n : b;
}

static inline int64_t gplane(const bw_ctx *c, int64_t pl) {
    return c->goff + (pl / c->C) * c->gsn + (pl % c->C) * c->gsc;
}

/* take ? a : b on the bits: compilers turn a float ternary into a branch,
 * which mispredicts about every other window on real data (a max pool's
 * backward ran at ~20 ns per window). */
static inline uint32_t select_u(uint32_t take, uint32_t a, uint32_t b) {
    uint32_t mask = 0u - take;
    return (a & mask) | (b & ~mask);
}

static inline float select_f(uint32_t take, float a, float b) {
    uint32_t ua, ub, mask = 0u - take;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ub = (ua & mask) | (ub & ~mask);
    memcpy(&b, &ub, sizeof b);
    return b;
}

/* Per dtype: SUF, storage type, accumulator type, load, store. The
 * accumulator plane is dx itself when the types agree (DIRECT), else
 * scratch. Each kernel: zero the plane's accumulator, scatter, store. */
#define POOL_BW(SUF, ST, AT, LD, STO, DIRECT)                                                                        \
    static AT *acc_begin_##SUF(AT **scratch, ST *dxp, int64_t n) {                                                   \
        AT *a = DIRECT ? (AT *)(void *)dxp : *scratch;                                                              \
        memset(a, 0, sizeof(AT) * (size_t)n);                                                                       \
        return a;                                                                                                    \
    }                                                                                                                \
    static void acc_end_##SUF(const AT *a, ST *dxp, int64_t n) {                                                     \
        if (DIRECT) return;                                                                                          \
        for (int64_t i = 0; i < n; i++) STO(dxp, i, a[i]);                                                           \
    }                                                                                                                \
    static void max_bw_##SUF(void *vc, int64_t b, int64_t e, int tid) {                                            \
        (void)tid;                                                                                                   \
        const bw_ctx *c = vc;                                                                                        \
        const wk_pool_params *p = c->p;                                                                              \
        const ST *x = c->x, *g = c->g;                                                                               \
        ST *dx = c->dx;                                                                                              \
        const int64_t HW = c->H * c->W;                                                                              \
        AT *scratch = DIRECT ? NULL : malloc(sizeof(AT) * (size_t)HW);                                              \
        if (!DIRECT && !scratch) return; /* reported by the caller's pre-check */                                    \
        for (int64_t pl = b; pl < e; pl++) {                                                                         \
            const ST *xp = x + c->xoff + (pl / c->C) * c->xsn + (pl % c->C) * c->xsc;                                \
            const ST *gp = g + gplane(c, pl);                                                                        \
            AT *a = acc_begin_##SUF(&scratch, dx + pl * HW, HW);                                                     \
            for (int64_t oh = 0; oh < c->OH; oh++) {                                                                 \
                int64_t h0, h1;                                                                                      \
                window(oh, p->s[0], p->p[0], p->k[0], c->H, &h0, &h1);                                               \
                for (int64_t ow = 0; ow < c->OW; ow++) {                                                             \
                    int64_t w0, w1;                                                                                  \
                    window(ow, p->s[1], p->p[1], p->k[1], c->W, &w0, &w1);                                           \
                    int64_t best = h0 * c->W + w0;                                                                   \
                    float m = -INFINITY;                                                                             \
                    for (int64_t ih = h0; ih < h1; ih++)                                                             \
                        for (int64_t iw = w0; iw < w1; iw++) {                                                       \
                            /* selects, not a branch: on real data "v > m" is a coin toss */                        \
                            float v = (float)LD(xp, ih * c->xsh + iw * c->xsw);                                      \
                            uint32_t take = (uint32_t)((v > m) | (v != v));                                          \
                            m = select_f(take, v, m);                                                                \
                            best = take ? ih * c->W + iw : best;                                                     \
                        }                                                                                            \
                    a[best] += (AT)LD(gp, oh * c->gsh + ow * c->gsw);                                                \
                }                                                                                                    \
            }                                                                                                        \
            acc_end_##SUF(a, dx + pl * HW, HW);                                                                      \
        }                                                                                                            \
        free(scratch);                                                                                               \
    }                                                                                                                \
    static void avg_bw_##SUF(void *vc, int64_t b, int64_t e, int tid) {                                            \
        (void)tid;                                                                                                   \
        const bw_ctx *c = vc;                                                                                        \
        const wk_pool_params *p = c->p;                                                                              \
        const ST *g = c->g;                                                                                          \
        ST *dx = c->dx;                                                                                              \
        const int64_t HW = c->H * c->W;                                                                              \
        AT *scratch = DIRECT ? NULL : malloc(sizeof(AT) * (size_t)HW);                                              \
        if (!DIRECT && !scratch) return;                                                                             \
        for (int64_t pl = b; pl < e; pl++) {                                                                         \
            const ST *gp = g + gplane(c, pl);                                                                        \
            AT *a = acc_begin_##SUF(&scratch, dx + pl * HW, HW);                                                     \
            for (int64_t oh = 0; oh < c->OH; oh++) {                                                                 \
                int64_t h0, h1;                                                                                      \
                window(oh, p->s[0], p->p[0], p->k[0], c->H, &h0, &h1);                                               \
                for (int64_t ow = 0; ow < c->OW; ow++) {                                                             \
                    int64_t w0, w1;                                                                                  \
                    window(ow, p->s[1], p->p[1], p->k[1], c->W, &w0, &w1);                                           \
                    AT div = p->count_include_pad ? (AT)p->k[0] * (AT)p->k[1] : (AT)((h1 - h0) * (w1 - w0));         \
                    AT v = (AT)LD(gp, oh * c->gsh + ow * c->gsw) / div;                                              \
                    for (int64_t ih = h0; ih < h1; ih++) {                                                           \
                        AT *row = a + ih * c->W;                                                                     \
                        for (int64_t iw = w0; iw < w1; iw++) row[iw] += v;                                           \
                    }                                                                                                \
                }                                                                                                    \
            }                                                                                                        \
            acc_end_##SUF(a, dx + pl * HW, HW);                                                                      \
        }                                                                                                            \
        free(scratch);                                                                                               \
    }                                                                                                                \
    static void nearest_bw_##SUF(void *vc, int64_t b, int64_t e, int tid) {                                        \
        (void)tid;                                                                                                   \
        const bw_ctx *c = vc;                                                                                        \
        const ST *g = c->g;                                                                                          \
        ST *dx = c->dx;                                                                                              \
        const int64_t HW = c->H * c->W;                                                                              \
        AT *scratch = DIRECT ? NULL : malloc(sizeof(AT) * (size_t)HW);                                              \
        if (!DIRECT && !scratch) return;                                                                             \
        for (int64_t pl = b; pl < e; pl++) {                                                                         \
            const ST *gp = g + gplane(c, pl);                                                                        \
            AT *a = acc_begin_##SUF(&scratch, dx + pl * HW, HW);                                                     \
            for (int64_t oh = 0; oh < c->OH; oh++) {                                                                 \
                AT *row = a + c->ih[oh] * c->W;                                                                      \
                const ST *gr = gp + oh * c->gsh;                                                                     \
                for (int64_t ow = 0; ow < c->OW; ow++) row[c->iw[ow]] += (AT)LD(gr, ow * c->gsw);                    \
            }                                                                                                        \
            acc_end_##SUF(a, dx + pl * HW, HW);                                                                      \
        }                                                                                                            \
        free(scratch);                                                                                               \
    }

/* bilinear: WP selects the weight arrays (l: f32, d: f64). */
#define BILINEAR_BW(SUF, ST, AT, LD, WP, DIRECT)                                                                     \
    static void bilinear_bw_##SUF(void *vc, int64_t b, int64_t e, int tid) {                                       \
        (void)tid;                                                                                                   \
        const bw_ctx *c = vc;                                                                                        \
        const ST *g = c->g;                                                                                          \
        ST *dx = c->dx;                                                                                              \
        const int64_t HW = c->H * c->W, W = c->W;                                                                    \
        const AT *lh0 = c->WP##h0, *lh1 = c->WP##h1, *lw0 = c->WP##w0, *lw1 = c->WP##w1;                             \
        AT *scratch = DIRECT ? NULL : malloc(sizeof(AT) * (size_t)HW);                                              \
        if (!DIRECT && !scratch) return;                                                                             \
        for (int64_t pl = b; pl < e; pl++) {                                                                         \
            const ST *gp = g + gplane(c, pl);                                                                        \
            AT *a = acc_begin_##SUF(&scratch, dx + pl * HW, HW);                                                     \
            for (int64_t oh = 0; oh < c->OH; oh++) {                                                                 \
                AT *r0 = a + c->h0[oh] * W, *r1 = a + c->h1[oh] * W;                                                 \
                const AT a0 = lh0[oh], a1 = lh1[oh];                                                                 \
                const ST *gr = gp + oh * c->gsh;                                                                     \
                for (int64_t ow = 0; ow < c->OW; ow++) {                                                             \
                    const AT v = (AT)LD(gr, ow * c->gsw);                                                            \
                    const int64_t j0 = c->w0[ow], j1 = c->w1[ow];                                                    \
                    const AT b0 = lw0[ow] * v, b1 = lw1[ow] * v;                                                     \
                    r0[j0] += a0 * b0;                                                                               \
                    r0[j1] += a0 * b1;                                                                               \
                    r1[j0] += a1 * b0;                                                                               \
                    r1[j1] += a1 * b1;                                                                               \
                }                                                                                                    \
            }                                                                                                        \
            acc_end_##SUF(a, dx + pl * HW, HW);                                                                      \
        }                                                                                                            \
        free(scratch);                                                                                               \
    }

POOL_BW(f32, float, float, LD_PLAIN, ST_PLAIN, 1)
POOL_BW(f64, double, double, LD_PLAIN, ST_PLAIN, 1)
POOL_BW(bf16, uint16_t, float, LD_BF16, ST_BF16, 0)
POOL_BW(f16, uint16_t, float, LD_F16, ST_F16, 0)
POOL_BW(f8, uint8_t, float, LD_F8, ST_F8, 0)
BILINEAR_BW(f32, float, float, LD_PLAIN, l, 1)
BILINEAR_BW(f64, double, double, LD_PLAIN, d, 1)
BILINEAR_BW(bf16, uint16_t, float, LD_BF16, l, 0)
BILINEAR_BW(f16, uint16_t, float, LD_F16, l, 0)
BILINEAR_BW(f8, uint8_t, float, LD_F8, l, 0)

/* f32 max pool with 2x2 windows at stride 2, no padding (every CNN's
 * pool): the windows tile the plane, so each input cell gets at most one
 * gradient and is written once (0 or g) instead of zeroed and scattered
 * into. The same first-maximum / last-NaN rule as max_bw, written as
 * selects: a ~2x faster plane on 8x8 maps than the general kernel. */
static void max_bw_2x2_f32(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const bw_ctx *c = vc;
    const float *x = c->x, *g = c->g;
    float *dx = c->dx;
    const int64_t W = c->W, HW = c->H * W, OH = c->OH, OW = c->OW;
    for (int64_t pl = b; pl < e; pl++) {
        const float *xp = x + c->xoff + (pl / c->C) * c->xsn + (pl % c->C) * c->xsc;
        const float *gp = g + gplane(c, pl);
        float *a = dx + pl * HW;
        if (OH * 2 != c->H || OW * 2 != W) memset(a, 0, sizeof(float) * (size_t)HW); /* an odd edge */
        for (int64_t oh = 0; oh < OH; oh++) {
            const float *r0 = xp + 2 * oh * c->xsh, *r1 = r0 + c->xsh;
            float *d0 = a + 2 * oh * W, *d1 = d0 + W;
            for (int64_t ow = 0; ow < OW; ow++) {
                float v0 = r0[2 * ow * c->xsw], v1 = r0[(2 * ow + 1) * c->xsw];
                float v2 = r1[2 * ow * c->xsw], v3 = r1[(2 * ow + 1) * c->xsw];
                uint32_t t1 = (uint32_t)((v1 > v0) | (v1 != v1)), best = t1;
                float m = select_f(t1, v1, v0);
                uint32_t t2 = (uint32_t)((v2 > m) | (v2 != v2));
                m = select_f(t2, v2, m);
                best = select_u(t2, 2u, best);
                uint32_t t3 = (uint32_t)((v3 > m) | (v3 != v3));
                best = select_u(t3, 3u, best);
                /* v0 = -inf with no later taker keeps cell 0, as max_bw */
                float gv = gp[oh * c->gsh + ow * c->gsw];
                d0[2 * ow] = select_f(best == 0, gv, 0.0f);
                d0[2 * ow + 1] = select_f(best == 1, gv, 0.0f);
                d1[2 * ow] = select_f(best == 2, gv, 0.0f);
                d1[2 * ow + 1] = select_f(best == 3, gv, 0.0f);
            }
        }
    }
}

enum { K_MAX, K_AVG, K_NEAREST, K_BILINEAR };

static wk_range_fn pick(wk_dtype dt, int kind) {
#define PICK(SUF)                                                                                                    \
    return kind == K_MAX ? max_bw_##SUF : kind == K_AVG ? avg_bw_##SUF : kind == K_NEAREST ? nearest_bw_##SUF       \
                                                                                           : bilinear_bw_##SUF
    switch (dt) {
    case WK_F32: PICK(f32);
    case WK_F64: PICK(f64);
    case WK_BF16: PICK(bf16);
    case WK_F16: PICK(f16);
    case WK_F8E4M3: PICK(f8);
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64:
    WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: return NULL; /* integer results are never tracked */
    }
    return NULL;
#undef PICK
}

/* geometry from x's shape (lx: N C H W) and the gradient's layout */
static void ctx_init(bw_ctx *c, const int64_t *xshape, const void *g, const wk_layout *lg, void *dx) {
    memset(c, 0, sizeof *c);
    c->g = g;
    c->dx = dx;
    c->C = xshape[1];
    c->H = xshape[2];
    c->W = xshape[3];
    c->OH = lg->shape[2];
    c->OW = lg->shape[3];
    c->gsn = lg->stride[0], c->gsc = lg->stride[1], c->gsh = lg->stride[2], c->gsw = lg->stride[3];
    c->goff = lg->offset;
}

/* Threads over planes: each task allocates at most one plane of scratch
 * (narrow dtypes); a failed malloc would leave planes unwritten, so the
 * largest plane is tried once here first. */
static wk_status run(const char *op, bw_ctx *c, int64_t planes, wk_dtype dt, double work, wk_range_fn fn) {
    if (dt != WK_F32 && dt != WK_F64) {
        int64_t hw = c->H * c->W;
        void *probe = malloc(sizeof(float) * (size_t)(hw > 0 ? hw : 1));
        if (!probe) return wk__err(WK_ERR_OOM, op, "cannot allocate a %lld x %lld accumulator plane", (long long)c->H,
                                   (long long)c->W);
        free(probe);
    }
    int64_t min_planes = work >= WK_PAR_MIN_ELEMS ? 1 : (int64_t)(WK_PAR_MIN_ELEMS / (work < 1 ? 1 : work)) + 1;
    wk__parallel_for(planes, 1, min_planes, fn, c);
    return WK_OK;
}

wk_status wk__cpu_pool2d_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *g,
                                  const wk_layout *lg, wk_dtype dt, const wk_pool_params *p, void *dx) {
    (void)dev;
    const char *op = p->is_max ? "max_pool2d_backward" : "avg_pool2d_backward";
    wk_range_fn fn = pick(dt, p->is_max ? K_MAX : K_AVG);
    if (!fn) return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    if (p->is_max && !x) return wk__err(WK_ERR_INTERNAL, op, "max pool backward needs the input");
    bw_ctx c;
    ctx_init(&c, lx->shape, g, lg, dx);
    c.p = p;
    c.x = x;
    c.xsn = lx->stride[0], c.xsc = lx->stride[1], c.xsh = lx->stride[2], c.xsw = lx->stride[3];
    c.xoff = lx->offset;
    if (dt == WK_F32 && p->is_max && p->k[0] == 2 && p->k[1] == 2 && p->s[0] == 2 && p->s[1] == 2 && p->p[0] == 0 &&
        p->p[1] == 0 && c.OH * 2 <= c.H && c.OW * 2 <= c.W)
        fn = max_bw_2x2_f32;
    double kh = (double)(p->k[0] < c.H ? p->k[0] : c.H), kw = (double)(p->k[1] < c.W ? p->k[1] : c.W);
    return run(op, &c, lx->shape[0] * lx->shape[1], dt, (double)c.OH * (double)c.OW * kh * kw + (double)(c.H * c.W),
               fn);
}

wk_status wk__cpu_upsample2d_backward(wk_device *dev, const void *g, const wk_layout *lg, void *dx,
                                      const wk_layout *ldx, wk_dtype dt, bool bilinear, bool align_corners) {
    (void)dev;
    const char *op = bilinear ? "upsample_bilinear2d_backward" : "upsample_nearest2d_backward";
    wk_range_fn fn = pick(dt, bilinear ? K_BILINEAR : K_NEAREST);
    if (!fn) return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    bw_ctx c;
    ctx_init(&c, ldx->shape, g, lg, dx);
    int64_t OH = c.OH, OW = c.OW, n = OH + OW;
    int64_t *idx = malloc(sizeof(int64_t) * 2 * (size_t)n);
    void *w = bilinear ? malloc(sizeof(double) * 2 * (size_t)n) : NULL;
    if (!idx || (bilinear && !w)) {
        free(idx);
        free(w);
        return wk__err(WK_ERR_OOM, op, "cannot allocate %lld indices", (long long)n);
    }
    double work = (double)OH * (double)OW + (double)(c.H * c.W);
    if (!bilinear) {
        wk__cpu_nearest_index(c.H, OH, 1, idx);
        wk__cpu_nearest_index(c.W, OW, 1, idx + OH);
        c.ih = idx;
        c.iw = idx + OH;
    } else {
        c.h0 = idx, c.h1 = idx + OH, c.w0 = idx + 2 * OH, c.w1 = idx + 2 * OH + OW;
        if (dt == WK_F64) {
            double *d = w;
            wk__cpu_linear_index_f64(c.H, OH, align_corners, 1, idx, idx + OH, d, d + OH);
            wk__cpu_linear_index_f64(c.W, OW, align_corners, 1, idx + 2 * OH, idx + 2 * OH + OW, d + 2 * OH,
                                     d + 2 * OH + OW);
            c.dh0 = d, c.dh1 = d + OH, c.dw0 = d + 2 * OH, c.dw1 = d + 2 * OH + OW;
        } else {
            float *f = w;
            wk__cpu_linear_index_f32(c.H, OH, align_corners, 1, idx, idx + OH, f, f + OH);
            wk__cpu_linear_index_f32(c.W, OW, align_corners, 1, idx + 2 * OH, idx + 2 * OH + OW, f + 2 * OH,
                                     f + 2 * OH + OW);
            c.lh0 = f, c.lh1 = f + OH, c.lw0 = f + 2 * OH, c.lw1 = f + 2 * OH + OW;
        }
        work *= 4;
    }
    wk_status st = run(op, &c, ldx->shape[0] * ldx->shape[1], dt, work, fn);
    free(idx);
    free(w);
    return st;
}
