/* CPU convolutions: im2col + GEMM (forward) and GEMM + col2im (transposed).
 *
 * Forward convs run per group over blocks of output positions numbered
 * across batch items (so one GEMM spans several small images: the weight is
 * packed once for all of them and N fills whole register strips); transposed
 * convs per (batch item, group) over blocks of input positions. Column
 * buffers stay under COL_CAP bytes (forward blocks are ~1 MB so the block is
 * still in cache when the GEMM packs it). The GEMM is the per-ISA one cpu_matmul.c uses (same run-time
 * pick), so convs speed up with it. f64 runs through the f64 GEMM; f16 / bf16
 * run through f32 blocks and are rounded once at the end. A 1x1, stride-1,
 * unpadded forward conv on f32 / f64 skips im2col (the input is the GEMM's B
 * as it lies). Contiguous f32 / f64 weights are used in place.
 *
 * Threads: forward (batch, group, position block) tasks are spread over the
 * pool (with few batch items / groups the positions are split finer), each
 * task running its im2col + GEMM on one thread; transposed convs let the GEMM
 * thread over its rows and col2im over output channels, or spread the (batch,
 * group) pairs when the GEMM has few rows (depthwise). The GEMM sums every
 * output in the same order (k blocks from 0) whatever the block or thread
 * split, so results do not depend on the thread count.
 * 1-d convs are 2-d convs with a height of 1 (no padding / stride on it).
 *
 * Two f32 shapes of small CNNs have paths of their own (below): convs that
 * keep the map size ("same geometry": im2col / col2im as one shifted,
 * masked loop per tap and image; transposed ones one GEMM per block of
 * images) and convs whose kernel covers the whole map (the weight gradient
 * of such a conv, rules_conv.c: "small_out", one GEMM per block of batch
 * items over shifted input rows). */
#include "tensor/tensor.h"
#include "cpu/memory/cpu_alloc.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/gemm/gemm.h"
#include "cpu/runtime/threadpool.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define COL_CAP ((int64_t)32 << 20) /* bytes of column buffer per block */
#define PAR_WORK ((int64_t)1 << 16) /* elements of im2col / col2im work worth threading */
#define PAR_MACS ((double)(1 << 18)) /* multiply-adds worth spreading tasks over threads */

typedef struct conv_geo {
    wk_dtype dt;
    bool f64;                        /* compute type double (else float) */
    size_t esz;                      /* bytes of the compute type */
    int64_t n, cin, h, w;            /* input */
    int64_t cout, kh, kw, oh, ow;    /* output channels, kernel, output */
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t groups, cin_g, cout_g;
    int64_t xoff, xs_n, xs_c, xs_h, xs_w;
    const void *x;
    void *dst;
    const void *wpack;               /* weight, contiguous, compute type */
    wk_gemm_f32_fn g32;
    wk_gemm_f64_fn g64;
    bool transposed;
    int64_t fwd_span;                /* forward: positions per unit (see conv_fwd_block) */
    int64_t fwd_nb, fwd_nblocks;     /* forward: positions per task, tasks per unit */
    bool fwd_gemm_only;              /* forward 1x1 / stride 1 / unpadded on f32, f64: no im2col */
    bool same;                       /* f32 "same" geometry, see same_geometry() */
    const int32_t *ixw;              /* same: ixw[q] = q % w, the column of input position q */
    int64_t tr_imgs, tr_nblocks;     /* same, transposed: images per task, image blocks */
    bool small_out;                  /* f32 "kernel covers the map" geometry, see small_out_geometry() */
    int64_t so_items, so_nblocks;    /* small_out: batch items per task, item blocks */
} conv_geo;

static void geo_init(conv_geo *g, const void *x, const wk_layout *lx, const wk_layout *lw, void *dst,
                     const wk_layout *ld, wk_dtype dt, const wk_conv_params *p, bool transposed) {
    memset(g, 0, sizeof *g);
    bool two = lx->rank == 4;
    g->dt = dt;
    g->f64 = dt == WK_F64;
    g->esz = g->f64 ? sizeof(double) : sizeof(float);
    g->x = x;
    g->dst = dst;
    g->transposed = transposed;
    g->n = lx->shape[0];
    g->cin = lx->shape[1];
    g->h = two ? lx->shape[2] : 1;
    g->w = lx->shape[lx->rank - 1];
    g->kh = two ? lw->shape[2] : 1;
    g->kw = lw->shape[lw->rank - 1];
    g->cout = ld->shape[1];
    g->oh = two ? ld->shape[2] : 1;
    g->ow = ld->shape[ld->rank - 1];
    g->sw = p->stride;
    g->pw = p->padding;
    g->dw = p->dilation;
    g->sh = two ? p->stride : 1;
    g->ph = two ? p->padding : 0;
    g->dh = two ? p->dilation : 1;
    g->groups = p->groups;
    g->cin_g = g->cin / g->groups;
    g->cout_g = g->cout / g->groups;
    g->xoff = lx->offset;
    g->xs_n = lx->stride[0];
    g->xs_c = lx->stride[1];
    g->xs_h = two ? lx->stride[2] : 0;
    g->xs_w = lx->stride[lx->rank - 1];
    wk_gemm_kernels kk = wk__gemm_kernels(); /* the same choice as matmul */
    g->g32 = kk.f32;
    g->g64 = kk.f64;
    g->fwd_gemm_only = !transposed && (dt == WK_F32 || g->f64) && g->kh == 1 && g->kw == 1 && g->sh == 1 &&
                       g->sw == 1 && g->ph == 0 && g->pw == 0 && (g->h == 1 || g->xs_h == g->w * g->xs_w);
}

/* The weight as a contiguous array of the compute type (its own dim order). */
static void *pack_weight(const void *w, const wk_layout *lw, wk_dtype dt) {
    int64_t s[4], st[4];
    bool two = lw->rank == 4;
    s[0] = lw->shape[0]; st[0] = lw->stride[0];
    s[1] = lw->shape[1]; st[1] = lw->stride[1];
    s[2] = two ? lw->shape[2] : 1; st[2] = two ? lw->stride[2] : 0;
    s[3] = lw->shape[lw->rank - 1]; st[3] = lw->stride[lw->rank - 1];
    int64_t cnt = s[0] * s[1] * s[2] * s[3];
    bool f64 = dt == WK_F64;
    void *buf = malloc((f64 ? sizeof(double) : sizeof(float)) * (size_t)(cnt > 0 ? cnt : 1));
    if (!buf) return NULL;
    int64_t i = 0;
    for (int64_t a = 0; a < s[0]; a++)
        for (int64_t b = 0; b < s[1]; b++)
            for (int64_t c = 0; c < s[2]; c++)
                for (int64_t d = 0; d < s[3]; d++, i++) {
                    int64_t o = lw->offset + a * st[0] + b * st[1] + c * st[2] + d * st[3];
                    if (f64) ((double *)buf)[i] = ((const double *)w)[o];
                    else if (dt == WK_F32) ((float *)buf)[i] = ((const float *)w)[o];
                    else ((float *)buf)[i] = wk__narrow_load(w, o, dt);
                }
    return buf;
}

static inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* [lo, hi): the positions o in [0, n) with 0 <= o*s + off < lim. */
static inline void valid_range(int64_t n, int64_t s, int64_t off, int64_t lim, int64_t *lo, int64_t *hi) {
    int64_t l = off >= 0 ? 0 : ceil_div(-off, s);
    int64_t h = lim - off > 0 ? ceil_div(lim - off, s) : 0;
    if (l > n) l = n;
    if (h > n) h = n;
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* Copy cnt input elements (element stride xs) into a compute-type buffer.
 * Short runs (the usual case: one output row) are copied inline; a libc
 * call per 14-element run cost more than the copy. */
static inline void load_run(const conv_geo *g, void *d, int64_t di, int64_t src, int64_t xs, int64_t cnt) {
    if (g->f64) {
        double *o = (double *)d + di;
        const double *s = (const double *)g->x + src;
        if (xs == 1 && cnt >= 64) memcpy(o, s, sizeof(double) * (size_t)cnt);
        else for (int64_t i = 0; i < cnt; i++) o[i] = s[i * xs];
    } else if (g->dt == WK_F32) {
        float *o = (float *)d + di;
        const float *s = (const float *)g->x + src;
        if (xs == 1 && cnt >= 64) memcpy(o, s, sizeof(float) * (size_t)cnt);
        else if (xs == 1) for (int64_t i = 0; i < cnt; i++) o[i] = s[i];
        else for (int64_t i = 0; i < cnt; i++) o[i] = s[i * xs];
    } else {
        float *o = (float *)d + di;
        for (int64_t i = 0; i < cnt; i++) o[i] = wk__narrow_load(g->x, src + i * xs, g->dt);
    }
}

static inline void zero_run(const conv_geo *g, void *d, int64_t di, int64_t cnt) {
    if (cnt <= 0) return;
    if (cnt >= 64) {
        memset((char *)d + (size_t)di * g->esz, 0, g->esz * (size_t)cnt);
    } else if (g->f64) {
        for (int64_t i = 0; i < cnt; i++) ((double *)d)[di + i] = 0;
    } else {
        for (int64_t i = 0; i < cnt; i++) ((float *)d)[di + i] = 0;
    }
}

/* ------------------------------------------------------------ forward */

typedef struct im2col_ctx {
    const conv_geo *g;
    int64_t xbase;   /* element offset of (batch item 0, first channel of the group) */
    int64_t c0, c1;  /* positions of this block, numbered across batch items */
    void *col;       /* [K, c1 - c0] */
} im2col_ctx;

/* Rows [r0, r1) of the column block: row r = (channel, ki, kj), one run per
 * output row of each batch item. The position is advanced incrementally
 * (no divisions per run) and short runs are copied inline: 3x3 convs on
 * 14-wide maps have runs of 14 and spent a quarter of their time here. */
static void im2col_rows(void *vctx, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const im2col_ctx *c = vctx;
    const conv_geo *g = c->g;
    int64_t nb = c->c1 - c->c0, kk = g->kh * g->kw, npos = g->oh * g->ow;
    for (int64_t r = r0; r < r1; r++) {
        int64_t ch = r / kk, ki = (r % kk) / g->kw, kj = r % g->kw;
        int64_t offw = kj * g->dw - g->pw, vlo, vhi;
        valid_range(g->ow, g->sw, offw, g->w, &vlo, &vhi); /* the same for every output row */
        int64_t drow = r * nb;
        int64_t j = c->c0, bi = j / npos, pos = j % npos, oy = pos / g->ow, ox0 = pos % g->ow;
        while (j < c->c1) {
            int64_t ox1 = g->ow;
            if (ox1 - ox0 > c->c1 - j) ox1 = ox0 + (c->c1 - j);
            int64_t d = drow + (j - c->c0) - ox0; /* d + ox = destination of ox */
            int64_t iy = oy * g->sh - g->ph + ki * g->dh;
            if (iy < 0 || iy >= g->h) {
                zero_run(g, c->col, d + ox0, ox1 - ox0);
            } else {
                int64_t lo = vlo < ox0 ? ox0 : vlo > ox1 ? ox1 : vlo;
                int64_t hi = vhi > ox1 ? ox1 : vhi < lo ? lo : vhi;
                int64_t base = c->xbase + bi * g->xs_n + ch * g->xs_c;
                zero_run(g, c->col, d + ox0, lo - ox0);
                if (hi > lo)
                    load_run(g, c->col, d + lo, base + iy * g->xs_h + (lo * g->sw + offw) * g->xs_w, g->sw * g->xs_w,
                             hi - lo);
                zero_run(g, c->col, d + hi, ox1 - hi);
            }
            j += ox1 - ox0;
            ox0 = 0;
            if (++oy == g->oh) {
                oy = 0;
                bi++;
            }
        }
    }
}

/* ------------------------------------------------------- same geometry
 *
 * Small CNNs (3x3 pad 1 on 8x8 maps) are dominated by im2col / col2im runs
 * of 4-8 elements. When the conv keeps the map size (stride 1, output size =
 * input size: padding = dilation * (k - 1) / 2 on each dim), f32, with the
 * input's rows contiguous, one kernel tap (ki, kj) moves a whole image by
 * one flat shift s = (ki*dh - ph) * w + (kj*dw - pw): output position q
 * reads input q + s (forward) or input q adds into output q + s
 * (transposed). Rows out of the image fall outside [0, npos) and are
 * clipped with the range; columns that wrap into the next row are masked
 * with the column table ixw. So each (tap row, image) is one straight,
 * vectorizable loop instead of oh runs. */
#define SAME_MAX_POS 1024 /* positions per image (32x32): larger maps keep the run-wise path, measured as fast there */

static bool same_geometry(const conv_geo *g) {
    int64_t npos = g->h * g->w;
    return g->dt == WK_F32 && g->sh == 1 && g->sw == 1 && g->oh == g->h && g->ow == g->w && g->xs_w == 1 &&
           (g->h == 1 || g->xs_h == g->w) && npos > 0 && npos <= SAME_MAX_POS;
}

/* The flat shift of tap row r (channel, ki, kj) and its column offset. */
static inline int64_t same_shift(const conv_geo *g, int64_t r, int64_t *offw) {
    int64_t kk = g->kh * g->kw, ki = (r % kk) / g->kw, kj = r % g->kw;
    *offw = kj * g->dw - g->pw;
    return (ki * g->dh - g->ph) * g->w + *offw;
}

/* [lo, hi): the positions q in [p0, p1) with 0 <= q + sh < npos. */
static inline void same_range(int64_t p0, int64_t p1, int64_t sh, int64_t npos, int64_t *lo, int64_t *hi) {
    int64_t l = -sh > p0 ? -sh : p0, h = npos - sh < p1 ? npos - sh : p1;
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* im2col_rows for the same geometry (the caller's im2col_ctx). */
static void im2col_same(void *vctx, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const im2col_ctx *c = vctx;
    const conv_geo *g = c->g;
    const int64_t nb = c->c1 - c->c0, kk = g->kh * g->kw, npos = g->h * g->w;
    const uint32_t w = (uint32_t)g->w;
    const int32_t *ixw = g->ixw;
    const float *x = g->x;
    for (int64_t r = r0; r < r1; r++) {
        int64_t offw, sh = same_shift(g, r, &offw), ch = r / kk;
        const int32_t ow32 = (int32_t)offw;
        float *drow = (float *)c->col + r * nb;
        for (int64_t j = c->c0; j < c->c1;) {
            int64_t bi = j / npos, p0 = j % npos, p1 = npos - p0 < c->c1 - j ? npos : p0 + (c->c1 - j), lo, hi;
            const float *xp = x + c->xbase + bi * g->xs_n + ch * g->xs_c + sh; /* xp[q]: input q + sh */
            float *d = drow + (j - c->c0) - p0;                              /* d[q]: output q */
            same_range(p0, p1, sh, npos, &lo, &hi);
            for (int64_t q = p0; q < lo; q++) d[q] = 0.0f;
            for (int64_t q = lo; q < hi; q++) {
                float v = xp[q];
                d[q] = (uint32_t)(ixw[q] + ow32) < w ? v : 0.0f;
            }
            for (int64_t q = hi; q < p1; q++) d[q] = 0.0f;
            j += p1 - p0;
        }
    }
}

static bool gemm(const conv_geo *g, int64_t m, int64_t n, int64_t k, const void *a, int64_t ars, int64_t acs,
                 const void *b, int64_t brs, int64_t bcs, void *c) {
    if (g->f64) return g->g64(m, n, k, a, ars, acs, b, brs, bcs, c);
    return g->g32(m, n, k, a, ars, acs, b, brs, bcs, c);
}

/* Scratch of one worker: column block and a C block. */
typedef struct conv_scratch {
    void *col, *cbuf;
    size_t col_bytes, cbuf_bytes;
} conv_scratch;

static int64_t block_cols(const conv_geo *g, int64_t rows, int64_t total) {
    int64_t nb = COL_CAP / ((int64_t)g->esz * (rows > 0 ? rows : 1));
    if (nb < 1) nb = 1;
    return nb < total ? nb : total;
}

static bool scratch_alloc(const conv_geo *g, conv_scratch *s) {
    s->col = s->cbuf = NULL;
    int64_t col_elems, c_elems;
    if (g->small_out) {
        int64_t n = g->so_items * g->oh * g->ow;
        col_elems = n * g->cin_g * g->h * g->w;
        c_elems = g->cout_g * n;
    } else if (!g->transposed) {
        int64_t k = g->cin_g * g->kh * g->kw, nb = g->fwd_nb;
        col_elems = g->fwd_gemm_only ? 1 : k * nb;
        c_elems = g->cout_g * nb;
    } else if (g->same) {
        int64_t n = g->tr_imgs * g->h * g->w;
        col_elems = g->cout_g * g->kh * g->kw * n;
        c_elems = g->cin_g * n;
    } else {
        int64_t k = g->cout_g * g->kh * g->kw, npos = g->h * g->w, nb = block_cols(g, k, npos);
        col_elems = k * nb;
        c_elems = g->cin_g * nb + (g->dt == WK_F32 || g->f64 ? 0 : g->cout_g * g->oh * g->ow); /* x block + acc */
    }
    /* the cached allocator: fresh pages cost more than the im2col itself */
    s->col_bytes = g->esz * (size_t)(col_elems > 0 ? col_elems : 1);
    s->cbuf_bytes = g->esz * (size_t)(c_elems > 0 ? c_elems : 1);
    s->col = wk__cpu_alloc(s->col_bytes);
    s->cbuf = wk__cpu_alloc(s->cbuf_bytes);
    if (!s->col || !s->cbuf) {
        wk__cpu_free(s->col, s->col_bytes);
        wk__cpu_free(s->cbuf, s->cbuf_bytes);
        s->col = s->cbuf = NULL;
        return false;
    }
    return true;
}

static void scratch_free(conv_scratch *s) {
    wk__cpu_free(s->col, s->col_bytes);
    wk__cpu_free(s->cbuf, s->cbuf_bytes);
}

/* The weight gradient of a stride-1 "same" conv arrives (rules_conv.c) as a
 * conv whose kernel is the gradient map: kernel size = input size, stride
 * and dilation 1, a few output positions (3x3 for padding 1). im2col would
 * have kernel-sized rows (N * h * w of them) of only ow columns. Here each
 * output position p = (oy, ox) is one row of B^T: for every input channel,
 * the input plane moved by the flat shift (oy - ph) * w + (ox - pw), masked
 * like im2col_same: long contiguous rows, and one GEMM covers the output
 * positions of a block of batch items. The weight (the gradient map, a
 * permuted view) is packed transposed, [group][cin_g * kh * kw][cout_g]. */
#define SMALL_OUT_MAX_POS 64

/* The f32 weight of a small_out conv as W^T per group (see above). */
static float *pack_weight_t(const float *w, const wk_layout *lw, int64_t groups) {
    bool two = lw->rank == 4;
    int64_t o = lw->shape[0], c = lw->shape[1], kh = two ? lw->shape[2] : 1, kw = lw->shape[lw->rank - 1];
    int64_t s0 = lw->stride[0], s1 = lw->stride[1], s2 = two ? lw->stride[2] : 0, s3 = lw->stride[lw->rank - 1];
    int64_t m = o / groups, kp = c * kh * kw;
    float *t = malloc(sizeof(float) * (size_t)(o * kp > 0 ? o * kp : 1));
    if (!t) return NULL;
    /* contiguous stores, strided loads: the loads cost less */
    for (int64_t gi = 0; gi < groups; gi++)
        for (int64_t ci = 0; ci < c; ci++)
            for (int64_t y = 0; y < kh; y++)
                for (int64_t x = 0; x < kw; x++) {
                    const float *src = w + lw->offset + gi * m * s0 + ci * s1 + y * s2 + x * s3;
                    float *d = t + gi * kp * m + ((ci * kh + y) * kw + x) * m;
                    for (int64_t co = 0; co < m; co++) d[co] = src[co * s0];
                }
    return t;
}

static bool small_out_geometry(const conv_geo *g) {
    int64_t npos = g->h * g->w;
    return !g->transposed && g->dt == WK_F32 && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 &&
           g->kh == g->h && g->kw == g->w && g->xs_w == 1 && (g->h == 1 || g->xs_h == g->w) && npos > 0 &&
           npos <= SAME_MAX_POS && g->oh * g->ow <= SMALL_OUT_MAX_POS;
}

/* Batch items [b0, b1) of group gi (see small_out_geometry): B^T in s->col
 * as [(item, p), cin_g * h * w], C in s->cbuf as [cout_g, (item, p)]. */
static bool conv_small_out(const conv_geo *g, int64_t gi, int64_t b0, int64_t b1, conv_scratch *s) {
    const int64_t npos = g->h * g->w, P = g->oh * g->ow, kp = g->cin_g * npos, ni = b1 - b0, m = g->cout_g;
    const uint32_t w = (uint32_t)g->w;
    const float *x = g->x;
    float *bt = s->col, *cb = s->cbuf, *dst = g->dst;
    for (int64_t b = b0; b < b1; b++)
        for (int64_t p = 0; p < P; p++) {
            int64_t oy = p / g->ow, ox = p % g->ow, offw = ox - g->pw, sh = (oy - g->ph) * g->w + offw, lo, hi;
            const int32_t ow32 = (int32_t)offw;
            same_range(0, npos, sh, npos, &lo, &hi);
            for (int64_t ci = 0; ci < g->cin_g; ci++) {
                const float *xp = x + g->xoff + b * g->xs_n + (gi * g->cin_g + ci) * g->xs_c + sh;
                float *d = bt + ((b - b0) * P + p) * kp + ci * npos;
                for (int64_t q = 0; q < lo; q++) d[q] = 0.0f;
                for (int64_t q = lo; q < hi; q++) {
                    float v = xp[q];
                    d[q] = (uint32_t)(g->ixw[q] + ow32) < w ? v : 0.0f;
                }
                for (int64_t q = hi; q < npos; q++) d[q] = 0.0f;
            }
        }
    /* C^T = B^T W^T: both operands as the GEMM packs them fastest (rows of
     * contiguous k; W^T packed by conv_run, wpack_t) */
    const float *wt = (const float *)g->wpack + gi * kp * m;
    if (!gemm(g, ni * P, m, kp, bt, kp, 1, wt, m, 1, cb)) return false;
    for (int64_t b = b0; b < b1; b++)
        for (int64_t co = 0; co < m; co++) {
            float *d = dst + (b * g->cout + gi * m + co) * P;
            const float *src = cb + (b - b0) * P * m + co;
            for (int64_t p = 0; p < P; p++) d[p] = src[p * m];
        }
    return true;
}

/* Store rows x cols of a compute-type block (row stride srs) into dst (row
 * stride drs) at element doff. */
static void store_block(const conv_geo *g, const void *src, int64_t rows, int64_t cols, int64_t srs, int64_t doff,
                        int64_t drs) {
    for (int64_t r = 0; r < rows; r++) {
        if (g->f64)
            memcpy((double *)g->dst + doff + r * drs, (const double *)src + r * srs, sizeof(double) * (size_t)cols);
        else if (g->dt == WK_F32)
            memcpy((float *)g->dst + doff + r * drs, (const float *)src + r * srs, sizeof(float) * (size_t)cols);
        else
            for (int64_t j = 0; j < cols; j++)
                wk__narrow_store(g->dst, doff + r * drs + j, g->dt, ((const float *)src)[r * srs + j]);
    }
}

/* Output positions [c0, c1) of the forward conv for one unit: a (batch
 * item, group) pair for the 1x1 GEMM-only path (positions of that item), else
 * a group, with positions numbered across batch items (n * oh * ow), so one
 * GEMM covers several small images: the weight is packed once for them and
 * the GEMM's N is wide enough to fill its register tiles. */
static bool conv_fwd_block(const conv_geo *g, int64_t unit, int64_t c0, int64_t c1, conv_scratch *s) {
    int64_t m = g->cout_g, k = g->cin_g * g->kh * g->kw, npos = g->oh * g->ow, w = c1 - c0;
    int64_t gi = g->fwd_gemm_only ? unit % g->groups : unit, b0 = g->fwd_gemm_only ? unit / g->groups : 0;
    const char *a = (const char *)g->wpack + (size_t)(gi * m * k) * g->esz;
    int64_t xbase = g->xoff + b0 * g->xs_n + gi * g->cin_g * g->xs_c;
    bool native = g->dt == WK_F32 || g->f64;
    /* a block that is exactly one batch item's positions goes straight to dst */
    int64_t bfirst = b0 + c0 / npos;
    bool direct = native && w == npos && c0 % npos == 0;
    int64_t doff = (bfirst * g->cout + gi * m) * npos;
    void *c = direct ? (char *)g->dst + (size_t)doff * g->esz : s->cbuf;
    bool ok;
    if (g->fwd_gemm_only) {
        /* a plain GEMM on the input as it lies */
        const char *b = (const char *)g->x + (size_t)(xbase + c0 * g->xs_w) * g->esz;
        ok = gemm(g, m, w, k, a, k, 1, b, g->xs_c, g->xs_w, c);
    } else {
        im2col_ctx ic = {g, xbase, c0, c1, s->col};
        wk__parallel_for(k, 1, k * w >= PAR_WORK ? 2 : INT64_MAX, g->same ? im2col_same : im2col_rows, &ic);
        ok = gemm(g, m, w, k, a, k, 1, s->col, w, 1, c);
    }
    if (ok && !direct)
        for (int64_t j = c0; j < c1;) {
            /* runs of one batch item */
            int64_t bi = b0 + j / npos, pos = j % npos, len = npos - pos < c1 - j ? npos - pos : c1 - j;
            store_block(g, (const char *)s->cbuf + (size_t)(j - c0) * g->esz, m, len, w,
                        (bi * g->cout + gi * m) * npos + pos, npos);
            j += len;
        }
    return ok;
}

/* ------------------------------------------------------------ transposed */

typedef struct col2im_ctx {
    const conv_geo *g;
    const void *col; /* [cout_g*kh*kw, c1 - c0] */
    int64_t c0, c1;  /* input positions of this block */
    void *out;       /* [cout_g, oh*ow] accumulator, compute type */
} col2im_ctx;

static void col2im_chans(void *vctx, int64_t co0, int64_t co1, int tid) {
    (void)tid;
    const col2im_ctx *c = vctx;
    const conv_geo *g = c->g;
    int64_t nb = c->c1 - c->c0, opos = g->oh * g->ow;
    for (int64_t co = co0; co < co1; co++)
        for (int64_t ki = 0; ki < g->kh; ki++)
            for (int64_t kj = 0; kj < g->kw; kj++) {
                int64_t r = (co * g->kh + ki) * g->kw + kj, offw = kj * g->dw - g->pw;
                for (int64_t j = c->c0; j < c->c1;) {
                    int64_t iy = j / g->w, ix0 = j % g->w, ix1 = g->w;
                    if (ix1 - ix0 > c->c1 - j) ix1 = ix0 + (c->c1 - j);
                    int64_t oy = iy * g->sh - g->ph + ki * g->dh;
                    if (oy >= 0 && oy < g->oh) {
                        int64_t lo, hi;
                        valid_range(g->w, g->sw, offw, g->ow, &lo, &hi);
                        if (lo < ix0) lo = ix0;
                        if (hi > ix1) hi = ix1;
                        int64_t src = r * nb + (j - c->c0) - ix0, dst = co * opos + oy * g->ow + offw;
                        if (g->f64) {
                            const double *s = c->col;
                            double *o = c->out;
                            for (int64_t ix = lo; ix < hi; ix++) o[dst + ix * g->sw] += s[src + ix];
                        } else {
                            const float *s = c->col;
                            float *o = c->out;
                            for (int64_t ix = lo; ix < hi; ix++) o[dst + ix * g->sw] += s[src + ix];
                        }
                    }
                    j += ix1 - ix0;
                }
            }
}

typedef struct xpack_ctx {
    const conv_geo *g;
    int64_t xbase, c0, c1;
    void *buf; /* [cin_g, c1 - c0] */
} xpack_ctx;

static void xpack_rows(void *vctx, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const xpack_ctx *c = vctx;
    const conv_geo *g = c->g;
    int64_t nb = c->c1 - c->c0;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t j = c->c0; j < c->c1;) {
            int64_t iy = j / g->w, ix0 = j % g->w, ix1 = g->w;
            if (ix1 - ix0 > c->c1 - j) ix1 = ix0 + (c->c1 - j);
            load_run(g, c->buf, r * nb + (j - c->c0), c->xbase + r * g->xs_c + iy * g->xs_h + ix0 * g->xs_w, g->xs_w,
                     ix1 - ix0);
            j += ix1 - ix0;
        }
}

/* One (batch item, group) of the transposed conv. */
static bool conv_tr_one(const conv_geo *g, int64_t bi, int64_t gi, conv_scratch *s) {
    int64_t kt = g->cout_g * g->kh * g->kw, ipos = g->h * g->w, opos = g->oh * g->ow, cg = g->cin_g;
    /* A = W_g^T: the packed weight rows of the group are [cin_g, kt] */
    const char *a = (const char *)g->wpack + (size_t)(gi * cg * kt) * g->esz;
    int64_t xbase = g->xoff + bi * g->xs_n + gi * cg * g->xs_c;
    int64_t doff = (bi * g->cout + gi * g->cout_g) * opos;
    bool native = g->dt == WK_F32 || g->f64;
    bool xdirect = native && (g->h == 1 || g->xs_h == g->w * g->xs_w);
    void *acc = native ? (char *)g->dst + (size_t)doff * g->esz
                       : (char *)s->cbuf + (size_t)(cg * block_cols(g, kt, ipos)) * g->esz;
    memset(acc, 0, g->esz * (size_t)(g->cout_g * opos));
    int64_t nb = block_cols(g, kt, ipos);
    for (int64_t c0 = 0; c0 < ipos; c0 += nb) {
        int64_t c1 = c0 + nb < ipos ? c0 + nb : ipos, w = c1 - c0;
        const void *b;
        int64_t brs, bcs;
        if (xdirect) {
            b = (const char *)g->x + (size_t)(xbase + c0 * g->xs_w) * g->esz;
            brs = g->xs_c;
            bcs = g->xs_w;
        } else {
            xpack_ctx xc = {g, xbase, c0, c1, s->cbuf};
            wk__parallel_for(cg, 1, cg * w >= PAR_WORK ? 2 : INT64_MAX, xpack_rows, &xc);
            b = s->cbuf;
            brs = w;
            bcs = 1;
        }
        if (!gemm(g, kt, w, cg, a, 1, kt, b, brs, bcs, s->col)) return false;
        col2im_ctx cc = {g, s->col, c0, c1, acc};
        wk__parallel_for(g->cout_g, 1, kt * w >= PAR_WORK ? 2 : INT64_MAX, col2im_chans, &cc);
    }
    if (!native)
        for (int64_t i = 0; i < g->cout_g * opos; i++) wk__narrow_store(g->dst, doff + i, g->dt, ((float *)acc)[i]);
    return true;
}

/* col2im_chans for the same geometry: c0, c1 are whole images, out is
 * dst at the group's first output channel. Each output sums its taps in
 * the order (ki, kj) as col2im_chans does (an invalid tap adds +0). */
static void col2im_same(void *vctx, int64_t co0, int64_t co1, int tid) {
    (void)tid;
    const col2im_ctx *c = vctx;
    const conv_geo *g = c->g;
    const int64_t nb = c->c1 - c->c0, kk = g->kh * g->kw, npos = g->h * g->w, istride = g->cout * npos;
    const uint32_t w = (uint32_t)g->w;
    const int32_t *ixw = g->ixw;
    for (int64_t co = co0; co < co1; co++)
        for (int64_t t = 0; t < kk; t++) {
            int64_t r = co * kk + t, offw, sh = same_shift(g, r, &offw), lo, hi;
            const int32_t ow32 = (int32_t)offw;
            same_range(0, npos, sh, npos, &lo, &hi);
            for (int64_t j = c->c0; j < c->c1; j += npos) {
                const float *sp = (const float *)c->col + r * nb + (j - c->c0);
                float *o = (float *)c->out + (j / npos) * istride + co * npos + sh; /* o[q]: output q + sh */
                for (int64_t q = lo; q < hi; q++) {
                    float v = sp[q];
                    o[q] += (uint32_t)(ixw[q] + ow32) < w ? v : 0.0f;
                }
            }
        }
}

/* Images [b0, b1) of group gi of a same-geometry transposed conv as ONE
 * GEMM over their positions (per-image GEMMs of a 4x4 map have 16 columns:
 * half of one register strip) and one col2im. threaded: the GEMM and the
 * col2im may use the pool (a single task); else they run on this thread. */
static bool conv_tr_same(const conv_geo *g, int64_t gi, int64_t b0, int64_t b1, conv_scratch *s, bool threaded) {
    int64_t kt = g->cout_g * g->kh * g->kw, npos = g->h * g->w, cg = g->cin_g, n = (b1 - b0) * npos;
    const float *a = (const float *)g->wpack + gi * cg * kt; /* A = W_g^T */
    float *xb = s->cbuf, *dst = g->dst;
    const float *x = g->x;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t b = b0; b < b1; b++)
            memcpy(xb + ci * n + (b - b0) * npos, x + g->xoff + b * g->xs_n + (gi * cg + ci) * g->xs_c,
                   sizeof(float) * (size_t)npos);
    if (!gemm(g, kt, n, cg, a, 1, kt, xb, n, 1, s->col)) return false;
    for (int64_t b = b0; b < b1; b++)
        memset(dst + (b * g->cout + gi * g->cout_g) * npos, 0, sizeof(float) * (size_t)(g->cout_g * npos));
    col2im_ctx cc = {g, s->col, b0 * npos, b1 * npos, dst + gi * g->cout_g * npos};
    wk__parallel_for(g->cout_g, 1, threaded && kt * n >= PAR_WORK ? 2 : INT64_MAX, col2im_same, &cc);
    return true;
}

/* ------------------------------------------------------------ driver */

typedef struct tasks_ctx {
    const conv_geo *g;
    atomic_int failed;
    int64_t ntasks;
} tasks_ctx;

/* Tasks [t0, t1): forward = (unit, position block) (see conv_fwd_block),
 * transposed = (batch item, group). */
static void tasks_range(void *vctx, int64_t t0, int64_t t1, int tid) {
    (void)tid;
    tasks_ctx *c = vctx;
    const conv_geo *g = c->g;
    conv_scratch s;
    if (!scratch_alloc(g, &s)) {
        atomic_store(&c->failed, 1);
        return;
    }
    for (int64_t t = t0; t < t1; t++) {
        bool ok;
        if (g->small_out) {
            int64_t gi = t / g->so_nblocks, b0 = (t % g->so_nblocks) * g->so_items;
            ok = conv_small_out(g, gi, b0, b0 + g->so_items < g->n ? b0 + g->so_items : g->n, &s);
        } else if (g->transposed && g->same) {
            int64_t gi = t / g->tr_nblocks, b0 = (t % g->tr_nblocks) * g->tr_imgs;
            ok = conv_tr_same(g, gi, b0, b0 + g->tr_imgs < g->n ? b0 + g->tr_imgs : g->n, &s, t1 - t0 == 1 && t0 == 0 &&
                              c->ntasks == 1);
        } else if (g->transposed) {
            ok = conv_tr_one(g, t / g->groups, t % g->groups, &s);
        } else {
            int64_t unit = t / g->fwd_nblocks, blk = t % g->fwd_nblocks, span = g->fwd_span;
            int64_t c0 = blk * g->fwd_nb, c1 = c0 + g->fwd_nb < span ? c0 + g->fwd_nb : span;
            ok = conv_fwd_block(g, unit, c0, c1, &s);
        }
        if (!ok) {
            atomic_store(&c->failed, 1);
            break;
        }
    }
    scratch_free(&s);
}

static wk_status conv_run(const char *op, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                          void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p, bool transposed) {
    if (dt != WK_F32 && dt != WK_F64 && dt != WK_F16 && dt != WK_BF16)
        return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    conv_geo g;
    geo_init(&g, x, lx, lw, dst, ld, dt, p, transposed);
    int64_t npairs = g.n * g.groups, nt = wk_num_threads();
    int32_t *ixw = NULL;
    bool same = same_geometry(&g) && !g.fwd_gemm_only, small_out = !same && small_out_geometry(&g);
    if ((same || small_out) && (ixw = malloc(sizeof(int32_t) * (size_t)(g.h * g.w)))) {
        for (int64_t q = 0; q < g.h * g.w; q++) ixw[q] = (int32_t)(q % g.w);
        g.ixw = ixw;
        g.same = same;
        g.small_out = small_out;
    }
    int64_t ntasks = npairs;
    double work; /* multiply-adds per pair, as a double: only compared with a threshold */
    bool spread;
    if (g.small_out) {
        /* item blocks of ~2 MB of B^T, at least two per thread when worth it */
        int64_t P = g.oh * g.ow, kp = g.cin_g * g.h * g.w;
        int64_t items = ((int64_t)2 << 20) / (P * (kp > 0 ? kp : 1) * 4);
        if (items > g.n) items = g.n;
        if (items < 1) items = 1; /* an empty batch: no blocks */
        int64_t nblocks = (g.n + items - 1) / items;
        work = (double)kp * (double)P * (double)g.cout_g;
        spread = nt > 1 && work * (double)npairs >= PAR_MACS;
        if (spread && g.groups * nblocks < 2 * nt) {
            nblocks = (2 * nt + g.groups - 1) / g.groups;
            if (nblocks > g.n) nblocks = g.n;
            items = (g.n + nblocks - 1) / nblocks;
            nblocks = (g.n + items - 1) / items;
        }
        g.so_items = items;
        g.so_nblocks = nblocks;
        ntasks = g.groups * nblocks;
        spread = spread && ntasks >= 2;
    } else if (!transposed) {
        /* Position blocks: a column block of about 1 MB stays in cache between
         * im2col and the GEMM's packing. With few tasks, either split the
         * positions so every thread gets the same number of tasks (the GEMM
         * has few rows: its own row split pays badly) or leave the threading
         * to the GEMM. The GEMM sums each output in the same order for any
         * block width, so the result does not depend on this choice. */
        int64_t k = g.cin_g * g.kh * g.kw, npos = g.oh * g.ow;
        int64_t units = g.fwd_gemm_only ? npairs : g.groups, span = g.fwd_gemm_only ? npos : g.n * npos;
        int64_t cap = block_cols(&g, k, span);
        int64_t nb = ((int64_t)1 << 20) / (k * (int64_t)g.esz);
        if (nb < 256) nb = 256;
        if (nb > cap) nb = cap;
        if (nb > span) nb = span;
        int64_t nblocks = (span + nb - 1) / nb;
        bool small_m = g.cout_g < 128;
        if (nt > 1 && units * nblocks < 8 * nt && (small_m || units >= nt)) {
            int64_t want = units * nblocks < 2 * nt ? 2 * nt : units * nblocks;
            want = (want + nt - 1) / nt * nt;
            int64_t per_unit = (want + units - 1) / units;
            if (small_m && per_unit > nblocks) nblocks = per_unit;
            nb = (span + nblocks - 1) / nblocks;
            if (nb < 32) nb = span < 32 ? span : 32;
            if (nb > cap) nb = cap;
        } else if (nblocks > 1) {
            /* equal blocks, whole register strips (32 columns) where possible */
            nb = (span + nblocks - 1) / nblocks;
            nb = (nb + 31) / 32 * 32;
            if (nb > cap) nb = cap;
        }
        g.fwd_span = span;
        g.fwd_nb = nb;
        g.fwd_nblocks = (span + nb - 1) / nb;
        ntasks = units * g.fwd_nblocks;
        work = (double)k * (double)npos * (double)g.cout_g;
        spread = ntasks >= 2 && nt > 1 && (small_m || ntasks >= nt);
    } else if (g.same) {
        /* image blocks of ~1024 positions and ~2 MB of columns, at least two
         * blocks per thread when the work is worth spreading */
        int64_t npos = g.h * g.w, kt = g.cout_g * g.kh * g.kw;
        int64_t imgs = 1024 / npos, by_mem = ((int64_t)2 << 20) / ((kt > 0 ? kt : 1) * npos * 4);
        if (imgs > by_mem) imgs = by_mem;
        if (imgs > g.n) imgs = g.n;
        if (imgs < 1) imgs = 1; /* an empty batch: no blocks */
        int64_t nblocks = (g.n + imgs - 1) / imgs;
        work = (double)(g.cin_g * npos) * (double)kt;
        spread = nt > 1 && work * (double)npairs >= PAR_MACS;
        if (spread && g.groups * nblocks < 2 * nt) {
            nblocks = (2 * nt + g.groups - 1) / g.groups;
            if (nblocks > g.n) nblocks = g.n;
            imgs = (g.n + nblocks - 1) / nblocks;
            nblocks = (g.n + imgs - 1) / imgs;
        }
        g.tr_imgs = imgs;
        g.tr_nblocks = nblocks;
        ntasks = g.groups * nblocks;
        spread = spread && ntasks >= 2;
    } else {
        work = (double)(g.cin_g * g.h * g.w) * (double)(g.cout_g * g.kh * g.kw);
        /* the GEMM (cout_g*kh*kw rows) threads itself unless it has too few
         * rows to split; then the pairs are spread instead */
        spread = ntasks >= 2 && nt > 1 && g.cout_g * g.kh * g.kw < 32;
    }
    /* a contiguous f32 / f64 weight is used as it lies */
    bool wcopy = g.small_out || !((dt == WK_F32 || dt == WK_F64) && wk__layout_is_contiguous(lw));
    if (g.small_out) g.wpack = pack_weight_t(w, lw, g.groups);
    else g.wpack = wcopy ? pack_weight(w, lw, dt) : (const void *)((const char *)w + (size_t)lw->offset * g.esz);
    if (!g.wpack) {
        free(ixw);
        return wk__err(WK_ERR_OOM, op, "cannot allocate the packed weight");
    }
    tasks_ctx tc = {&g, 0, spread ? 0 : ntasks};
    if (spread) wk__parallel_for(ntasks, 1, work * (double)npairs >= PAR_MACS ? 2 : INT64_MAX, tasks_range, &tc);
    else tasks_range(&tc, 0, ntasks, 0);
    if (wcopy) free((void *)g.wpack);
    free(ixw);
    if (atomic_load(&tc.failed)) return wk__err(WK_ERR_OOM, op, "cannot allocate convolution scratch buffers");
    return WK_OK;
}

wk_status wk__cpu_conv1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                         void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p) {
    (void)dev;
    return conv_run("conv1d", x, lx, w, lw, dst, ld, dt, p, false);
}
wk_status wk__cpu_conv2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                         void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p) {
    (void)dev;
    return conv_run("conv2d", x, lx, w, lw, dst, ld, dt, p, false);
}
wk_status wk__cpu_conv_transpose1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                   const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                   const wk_conv_params *p) {
    (void)dev;
    return conv_run("conv_transpose1d", x, lx, w, lw, dst, ld, dt, p, true);
}
wk_status wk__cpu_conv_transpose2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                   const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                   const wk_conv_params *p) {
    (void)dev;
    return conv_run("conv_transpose2d", x, lx, w, lw, dst, ld, dt, p, true);
}

/* The backend table's one conv entry: the spatial rank and direction come
 * in the arguments, the layouts already have rank spatial + 2. */
static const char *conv_name(const wk_conv_args *a) {
    if (a->spatial == 1) return a->transposed ? "conv_transpose1d" : "conv1d";
    return a->transposed ? "conv_transpose2d" : "conv2d";
}
wk_status wk__cpu_conv(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                       void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_args *a) {
    (void)dev;
    if ((a->spatial != 1 && a->spatial != 2) || lx->rank != a->spatial + 2)
        return wk__err(WK_ERR_ARG, conv_name(a), "spatial rank %d does not match a rank-%d input", a->spatial,
                       lx->rank);
    return conv_run(conv_name(a), x, lx, w, lw, dst, ld, dt, &a->p, a->transposed);
}
