/* The CPU backend's fused optional entries: softmax / log_softmax along any
 * dim, rms_norm and layer_norm over the last dim. Each output row is one
 * pass over a row gathered from the (strided) input: f32 / f64 rows along
 * the last dim are gathered straight into the output row and computed
 * there; other rows (and f16 / bf16 / f8, through f32) use a row buffer.
 * f64 computes in f64 (scalar, double sums); f32 rows use the vectorized
 * kernels of vmath.h (fixed-order float sums, so results do not depend on
 * the thread count). The dispatcher
 * (src/core/nn.c) has checked dtypes and shapes; a NULL entry there means
 * the composite of required entries, which these must match. */
#include "core/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_convert.h"
#include "cpu/threadpool.h"
#include "cpu/vmath.h"
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

/* one row (or a 1-D weight) as float / double values */
static void load_f(const void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, float *out) {
    if (s == 1 && dt == WK_F32) memcpy(out, (const float *)p + off, sizeof(float) * (size_t)n);
    else if (s == 1 && dt == WK_F16) wk__vcvt_f16_to_f32(out, (const uint16_t *)p + off, n);
    else if (s == 1 && dt == WK_BF16) wk__vcvt_bf16_to_f32(out, (const uint16_t *)p + off, n);
    else if (dt == WK_F32)
        for (int64_t j = 0; j < n; j++) out[j] = ((const float *)p)[off + j * s];
    else
        for (int64_t j = 0; j < n; j++) out[j] = wk__narrow_load(p, off + j * s, dt);
}
static void store_f(void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, const float *v) {
    if (s == 1 && dt == WK_F16) wk__vcvt_f32_to_f16((uint16_t *)p + off, v, n);
    else if (s == 1 && dt == WK_BF16) wk__vcvt_f32_to_bf16((uint16_t *)p + off, v, n);
    else if (dt == WK_F32)
        for (int64_t j = 0; j < n; j++) ((float *)p)[off + j * s] = v[j];
    else
        for (int64_t j = 0; j < n; j++) wk__narrow_store(p, off + j * s, dt, v[j]);
}
static void load_d(const void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, double *out) {
    (void)dt;
    for (int64_t j = 0; j < n; j++) out[j] = ((const double *)p)[off + j * s];
}
static void store_d(void *p, wk_dtype dt, int64_t off, int64_t s, int64_t n, const double *v) {
    (void)dt;
    for (int64_t j = 0; j < n; j++) ((double *)p)[off + j * s] = v[j];
}

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

/* Softmax rows. f32 uses the vectorized kernels (vmath.h: max, x - max,
 * exp, a fixed-order sum, one division), the same steps as the composite;
 * f64 is scalar libm with a double sum. tmp has n elements (log_softmax). */
static void softmax_row_f(float *x, int64_t n, bool logp, float *tmp) {
    float mx = wk__vmaxmin_f32(x, n, 0); /* NaN if any is NaN */
    wk__vbinary_scalar_f32(WK_SUB, x, x, mx, n);
    if (logp) {
        wk__vexp_f32(tmp, x, n);
        wk__vbinary_scalar_f32(WK_SUB, x, x, logf(wk__vsum_f32(tmp, n)), n);
    } else {
        wk__vexp_f32(x, x, n);
        wk__vbinary_scalar_f32(WK_DIV, x, x, wk__vsum_f32(x, n), n);
    }
}
static void softmax_row_d(double *x, int64_t n, bool logp, double *tmp) {
    (void)tmp;
    double mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) mx = x[j] > mx || isnan(x[j]) ? x[j] : mx;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) sum += exp(x[j] - mx);
    if (logp) {
        double lse = log(sum);
        for (int64_t j = 0; j < n; j++) x[j] = (x[j] - mx) - lse;
    } else {
        for (int64_t j = 0; j < n; j++) x[j] = exp(x[j] - mx) / sum;
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
