/* The CPU backend's fused optional entries: softmax / log_softmax along any
 * dim (an online max: one pass over the input, then the output pass),
 * rms_norm and layer_norm over the last dim, swiglu over last-dim halves. Each output row is one
 * pass over a row gathered from the (strided) input: f32 / f64 rows along
 * the last dim are gathered straight into the output row and computed
 * there; other rows (and f16 / bf16 / f8, through f32) use a row buffer.
 * f64 computes in f64 (scalar, double sums); f32 rows use the vectorized
 * kernels of vmath.h (fixed-order float sums, so results do not depend on
 * the thread count). The dispatcher
 * (src/ops/nn.c) has checked dtypes and shapes; without these entries the
 * public ops run the composites of src/nn/nn.c, which these must match. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/nn/cpu_rowio.h"
#include "base/op_math.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Rows along dim d of a layout, and where each lands in a contiguous dst of
 * the same shape. */
typedef struct nn_rows {
    int orank;
    int64_t oshape[WK_MAX_RANK], osrc[WK_MAX_RANK], odst[WK_MAX_RANK];
    int64_t nrows, n, s_src, s_dst, off_src;
} nn_rows;

static void rows_init(nn_rows *r, const wk_layout *l, int d) {
    int64_t cstride[WK_MAX_RANK], acc = 1;
    for (int i = l->rank - 1; i >= 0; i--) {
        cstride[i] = acc;
        acc *= l->shape[i];
    }
    r->orank = 0;
    r->nrows = 1;
    for (int i = 0; i < l->rank; i++) {
        if (i == d) continue;
        r->oshape[r->orank] = l->shape[i];
        r->osrc[r->orank] = l->stride[i];
        r->odst[r->orank] = cstride[i];
        r->orank++;
        r->nrows *= l->shape[i];
    }
    r->n = l->rank ? l->shape[d] : 1;
    r->s_src = l->rank ? l->stride[d] : 0;
    r->s_dst = l->rank ? cstride[d] : 0;
    r->off_src = l->offset;
}
static inline int64_t row_src(const nn_rows *r, int64_t i) {
    return r->off_src + wk__unravel(r->oshape, r->osrc, r->orank, i);
}
static inline int64_t row_dst(const nn_rows *r, int64_t i) { return wk__unravel(r->oshape, r->odst, r->orank, i); }

/* one row (or a 1-D weight) as float / double values: cpu_rowio.h */
#define load_f wk__row_load_f
#define store_f wk__row_store_f
#define load_d wk__row_load_d
#define store_d wk__row_store_d

typedef enum { NN_SOFTMAX, NN_LOG_SOFTMAX, NN_RMS, NN_LAYER } nn_kind;

typedef struct nn_ctx {
    nn_kind kind;
    nn_rows rows;
    const void *src;
    void *dst;
    wk_dtype dt;
    double eps;
    const void *wf, *bf; /* weight / bias as a float or double row, or NULL */
    atomic_int failed;
} nn_ctx;

/* Softmax rows, one pass over the input with an online max: the running
 * max m and sum l = sum exp(x - m) are kept, and l is rescaled by
 * exp(m_old - m_new) when m grows. f32 goes by chunks of SM_CHUNK with the
 * vectorized kernels (vmath.h): a chunk's exp(x - m) is written where the
 * output goes and its m recorded, and the output pass scales each chunk by
 * exp(m_chunk - m) / l (by 1 / l, as a division, for the chunks computed
 * at the final max, which is every chunk of a row the size of one); l sums
 * in double in chunk order. f64 is scalar libm per element. Special values
 * as the composite (max, x - max, exp, sum): a NaN, or a +inf (inf - inf),
 * or a row of only -inf makes the row NaN. tmp has n elements. */
#define SM_CHUNK 256
static void softmax_row_f(float *x, int64_t n, bool logp, float *tmp) {
    float m = -INFINITY;
    double l = 0;
    float *cmax = tmp; /* softmax: the running max each chunk was computed at */
    for (int64_t c0 = 0, ci = 0; c0 < n; c0 += SM_CHUNK, ci++) {
        int64_t len = n - c0 < SM_CHUNK ? n - c0 : SM_CHUNK;
        float *xc = x + c0, *e = logp ? tmp : xc;
        float mc = wk__vmaxmin_f32(xc, len, 0);
        if (isnan(mc) || mc > m) {
            if (!isnan(m)) l *= exp((double)m - (double)mc);
            m = mc;
        }
        if (!logp) cmax[ci] = m;
        if (m == -INFINITY) { /* every value so far is -inf: contributes 0 */
            if (!logp) memset(e, 0, sizeof(float) * (size_t)len);
            continue;
        }
        wk__vbinary_scalar_f32(WK_SUB, e, xc, m, len);
        wk__vexp_f32(e, e, len);
        l += (double)wk__vsum_f32(e, len);
    }
    if (m == -INFINITY) l = NAN; /* only -inf: -inf - -inf, as the composite */
    if (logp) {
        wk__vbinary_scalar_f32(WK_SUB, x, x, m, n);
        wk__vbinary_scalar_f32(WK_SUB, x, x, logf((float)l), n);
        return;
    }
    float lf = (float)l;
    for (int64_t c0 = 0, ci = 0; c0 < n; c0 += SM_CHUNK, ci++) {
        int64_t len = n - c0 < SM_CHUNK ? n - c0 : SM_CHUNK;
        if (cmax[ci] == m || isnan(lf)) wk__vbinary_scalar_f32(WK_DIV, x + c0, x + c0, lf, len);
        else wk__vbinary_scalar_f32(WK_MUL, x + c0, x + c0, (float)(exp((double)cmax[ci] - (double)m) / l), len);
    }
}
static void softmax_row_d(double *x, int64_t n, bool logp, double *tmp) {
    (void)tmp;
    double m = -INFINITY, l = 0;
    for (int64_t j = 0; j < n; j++) {
        double v = x[j];
        if (isnan(v)) {
            m = l = NAN;
            break;
        }
        if (v > m) {
            l = l * exp(m - v) + 1;
            m = v;
        } else if (v != -INFINITY) {
            l += exp(v - m);
        }
    }
    if (isinf(m)) l = NAN; /* only -inf, or a +inf: inf - inf, as the composite */
    if (logp) {
        double lse = log(l);
        for (int64_t j = 0; j < n; j++) x[j] = (x[j] - m) - lse;
    } else {
        for (int64_t j = 0; j < n; j++) x[j] = exp(x[j] - m) / l;
    }
}

/* Norm rows: rms (no centering) or layer (centered, biased variance), then
 * the optional weight and bias. f32 vectorized (fixed-order float sums),
 * f64 scalar. tmp has n elements. */
static void norm_row_f(float *x, int64_t n, bool rms, double eps, const float *w, const float *b, float *tmp) {
    if (!rms) wk__vbinary_scalar_f32(WK_SUB, x, x, wk__vsum_f32(x, n) / (float)n, n);
    wk__vbinary_f32(WK_MUL, tmp, x, x, n);
    float inv = (float)(1.0 / sqrt((double)wk__vsum_f32(tmp, n) / (double)n + eps));
    wk__vbinary_scalar_f32(WK_MUL, x, x, inv, n);
    if (w) wk__vbinary_f32(WK_MUL, x, x, w, n);
    if (b) wk__vbinary_f32(WK_ADD, x, x, b, n);
}
static void norm_row_d(double *x, int64_t n, bool rms, double eps, const double *w, const double *b, double *tmp) {
    (void)tmp;
    double mean = 0, acc = 0;
    if (!rms) {
        for (int64_t j = 0; j < n; j++) mean += x[j];
        mean /= (double)n;
    }
    for (int64_t j = 0; j < n; j++) acc += (x[j] - mean) * (x[j] - mean);
    double inv = 1.0 / sqrt(acc / (double)n + eps);
    for (int64_t j = 0; j < n; j++) {
        double v = (x[j] - mean) * inv;
        if (w) v = v * w[j];
        if (b) v = v + b[j];
        x[j] = v;
    }
}

/* The row loop, once per compute type T. */
#define NN_ROW_KERNELS(T, SFX, NATIVE)                                                                              \
    static void nn_range_##SFX(void *vc, int64_t begin, int64_t end, int tid) {                                     \
        (void)tid;                                                                                                  \
        nn_ctx *c = vc;                                                                                             \
        const nn_rows *r = &c->rows;                                                                                \
        /* f32 / f64 rows along the last dim are computed in the output row */                                    \
        bool direct = c->dt == NATIVE && r->s_dst == 1;                                                             \
        /* [row buffer unless direct][scratch row]                  */                                              \
        T *buf = malloc((size_t)r->n * sizeof(T) * 2 + 1);                                                          \
        if (!buf) {                                                                                                 \
            atomic_store(&c->failed, 1);                                                                            \
            return;                                                                                                 \
        }                                                                                                           \
        for (int64_t i = begin; i < end; i++) {                                                                     \
            T *row = direct ? (T *)c->dst + row_dst(r, i) : buf;                                                    \
            load_##SFX(c->src, c->dt, row_src(r, i), r->s_src, r->n, row);                                          \
            if (c->kind == NN_SOFTMAX || c->kind == NN_LOG_SOFTMAX)                                                 \
                softmax_row_##SFX(row, r->n, c->kind == NN_LOG_SOFTMAX, buf + r->n);                                \
            else                                                                                                    \
                norm_row_##SFX(row, r->n, c->kind == NN_RMS, c->eps, c->wf, c->bf, buf + r->n);                     \
            if (!direct) store_##SFX(c->dst, c->dt, row_dst(r, i), r->s_dst, r->n, row);                            \
        }                                                                                                           \
        free(buf);                                                                                                  \
    }

NN_ROW_KERNELS(float, f, WK_F32)
NN_ROW_KERNELS(double, d, WK_F64)

static wk_status nn_run(const char *op, nn_ctx *c, const wk_layout *ls, int dim, const void *w, const wk_layout *lw,
                        const void *b, const wk_layout *lb) {
    if (!wk_dtype_is_float(c->dt)) return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(c->dt));
    rows_init(&c->rows, ls, dim);
    if (c->rows.nrows == 0 || c->rows.n == 0) return WK_OK;
    bool dbl = c->dt == WK_F64;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    void *wb = NULL;
    if (w || b) {
        wb = malloc(2 * (size_t)c->rows.n * es);
        if (!wb) return wk__err(WK_ERR_OOM, op, "cannot allocate the weight rows");
        void *wrow = wb, *brow = (char *)wb + (size_t)c->rows.n * es;
        const void *srcs[2] = {w, b};
        const wk_layout *ls2[2] = {lw, lb};
        void *dsts[2] = {wrow, brow};
        for (int k = 0; k < 2; k++) {
            if (!srcs[k]) continue;
            int64_t s = ls2[k]->rank ? ls2[k]->stride[ls2[k]->rank - 1] : 0;
            if (dbl) load_d(srcs[k], c->dt, ls2[k]->offset, s, c->rows.n, dsts[k]);
            else load_f(srcs[k], c->dt, ls2[k]->offset, s, c->rows.n, dsts[k]);
        }
        c->wf = w ? wrow : NULL;
        c->bf = b ? brow : NULL;
    }
    atomic_init(&c->failed, 0);
    int64_t min_rows = WK_PAR_MIN_ELEMS / c->rows.n;
    wk__parallel_for(c->rows.nrows, 1, min_rows < 1 ? 1 : min_rows, dbl ? nn_range_d : nn_range_f, c);
    free(wb);
    if (atomic_load(&c->failed)) return wk__err(WK_ERR_OOM, op, "cannot allocate a row buffer");
    return WK_OK;
}

wk_status wk__cpu_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst) {
    (void)dev;
    nn_ctx c = {.kind = NN_SOFTMAX, .src = src, .dst = dst, .dt = dt};
    return nn_run("wk_softmax", &c, ls, dim, NULL, NULL, NULL, NULL);
}

wk_status wk__cpu_log_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst) {
    (void)dev;
    nn_ctx c = {.kind = NN_LOG_SOFTMAX, .src = src, .dst = dst, .dt = dt};
    return nn_run("wk_log_softmax", &c, ls, dim, NULL, NULL, NULL, NULL);
}

wk_status wk__cpu_rms_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                           wk_dtype dt, double eps, void *dst) {
    (void)dev;
    nn_ctx c = {.kind = NN_RMS, .src = x, .dst = dst, .dt = dt, .eps = eps};
    return nn_run("wk_rms_norm", &c, lx, lx->rank - 1, w, lw, NULL, NULL);
}

wk_status wk__cpu_layer_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                             const void *b, const wk_layout *lb, wk_dtype dt, double eps, void *dst) {
    (void)dev;
    nn_ctx c = {.kind = NN_LAYER, .src = x, .dst = dst, .dt = dt, .eps = eps};
    return nn_run("wk_layer_norm", &c, lx, lx->rank - 1, w, lw, b, lb);
}

/* ---- swiglu: silu(a) * b over the two halves of each last-dim row ---- */

typedef struct swiglu_ctx {
    nn_rows rows;
    const void *src;
    void *dst;
    wk_dtype dt;
    atomic_int failed;
} swiglu_ctx;

/* f32 through vmath's silu and multiply (the composite's kernels, so the
 * bits agree); f64 scalar (the composite's scalar silu). */
static void swiglu_range_f(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    swiglu_ctx *c = vc;
    const nn_rows *r = &c->rows;
    int64_t h = r->n / 2, s = r->s_src;
    float *buf = malloc(sizeof(float) * (size_t)(3 * h) + 1);
    if (!buf) {
        atomic_store(&c->failed, 1);
        return;
    }
    for (int64_t i = begin; i < end; i++) {
        int64_t off = row_src(r, i);
        const float *a = wk__row_view_f(c->src, c->dt, off, s, h, buf);
        const float *b = wk__row_view_f(c->src, c->dt, off + h * s, s, h, buf + h);
        float *o = c->dt == WK_F32 ? (float *)c->dst + i * h : buf + 2 * h;
        wk__vsilu_f32(o, a, h);
        wk__vbinary_f32(WK_MUL, o, o, b, h);
        if (c->dt != WK_F32) store_f(c->dst, c->dt, i * h, 1, h, o);
    }
    free(buf);
}
static void swiglu_range_d(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    swiglu_ctx *c = vc;
    const nn_rows *r = &c->rows;
    int64_t h = r->n / 2, s = r->s_src;
    const double *x = c->src;
    for (int64_t i = begin; i < end; i++) {
        int64_t off = row_src(r, i);
        double *o = (double *)c->dst + i * h;
        for (int64_t j = 0; j < h; j++) o[j] = wk__op_silu_f64(x[off + j * s]) * x[off + (j + h) * s];
    }
}

wk_status wk__cpu_swiglu(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype dt, void *dst) {
    (void)dev;
    if (!wk_dtype_is_float(dt)) return wk__err(WK_ERR_DTYPE, "wk_swiglu", "not defined for dtype %s", wk_dtype_name(dt));
    swiglu_ctx c = {.src = x, .dst = dst, .dt = dt};
    rows_init(&c.rows, lx, lx->rank - 1);
    if (c.rows.nrows == 0 || c.rows.n == 0) return WK_OK;
    atomic_init(&c.failed, 0);
    int64_t min_rows = WK_PAR_MIN_ELEMS / c.rows.n;
    wk__parallel_for(c.rows.nrows, 1, min_rows < 1 ? 1 : min_rows, dt == WK_F64 ? swiglu_range_d : swiglu_range_f, &c);
    if (atomic_load(&c.failed)) return wk__err(WK_ERR_OOM, "wk_swiglu", "cannot allocate a row buffer");
    return WK_OK;
}
