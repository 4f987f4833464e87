/* The CPU backend's fused backward entries of softmax / log_softmax and of
 * rms_norm / layer_norm (src/tensor/backend.h: softmax_backward, norm_backward).
 *
 * softmax: one pass per row over y and g (gathered from their strides, g
 * often a broadcast view with stride 0): dx = y (g - sum(g y)), log_softmax
 * dx = g - exp(y) sum(g). norms: per row, the mean and 1 / rms are
 * recomputed from x (the forward keeps nothing), then dx = rs (gy - xhat
 * mean(gy xhat) [- mean(gy)]) with gy = g w, xhat the normalized row. dw
 * and db are sums over rows: a second pass split by columns, each column
 * summed over the rows in row order in double, so results never depend on
 * the thread count (every row and every column is computed by one thread).
 * f32 rows use vmath's kernels (fixed-order sums), f64 is scalar double,
 * f16 / bf16 / f8 go through f32 rows. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/nn/cpu_rowio.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Rows along dim d of a shape: the other dims' sizes and the strides of
 * up to three layouts (y / x, g, and the contiguous dst). */
typedef struct bw_rows {
    int orank;
    int64_t oshape[WK_MAX_RANK], os[3][WK_MAX_RANK];
    int64_t nrows, n, s[3], off[3];
} bw_rows;

static void bw_rows_init(bw_rows *r, const wk_layout *la, const wk_layout *lb, int d) {
    const wk_layout *ls[2] = {la, lb};
    int64_t cstride[WK_MAX_RANK], acc = 1;
    for (int i = la->rank - 1; i >= 0; i--) {
        cstride[i] = acc;
        acc *= la->shape[i];
    }
    r->orank = 0;
    r->nrows = 1;
    for (int i = 0; i < la->rank; i++) {
        if (i == d) continue;
        r->oshape[r->orank] = la->shape[i];
        for (int k = 0; k < 2; k++) r->os[k][r->orank] = ls[k]->stride[i];
        r->os[2][r->orank] = cstride[i];
        r->orank++;
        r->nrows *= la->shape[i];
    }
    r->n = la->rank ? la->shape[d] : 1;
    for (int k = 0; k < 2; k++) {
        r->s[k] = la->rank ? ls[k]->stride[d] : 0;
        r->off[k] = ls[k]->offset;
    }
    r->s[2] = la->rank ? cstride[d] : 0;
    r->off[2] = 0;
}
static inline int64_t bw_row(const bw_rows *r, int k, int64_t i) {
    return r->off[k] + wk__unravel(r->oshape, r->os[k], r->orank, i);
}

/* ---- softmax ---- */

typedef struct sm_ctx {
    bw_rows rows;
    const void *y, *g;
    void *dx;
    wk_dtype dt;
    bool logp;
    atomic_int failed;
} sm_ctx;

static void sm_range_f(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    sm_ctx *c = vc;
    const bw_rows *r = &c->rows;
    int64_t n = r->n;
    float *buf = malloc(sizeof(float) * (size_t)(3 * n) + 1);
    if (!buf) {
        atomic_store(&c->failed, 1);
        return;
    }
    float *y = buf, *g = buf + n, *t = buf + 2 * n;
    for (int64_t i = begin; i < end; i++) {
        wk__row_load_f(c->y, c->dt, bw_row(r, 0, i), r->s[0], n, y);
        wk__row_load_f(c->g, c->dt, bw_row(r, 1, i), r->s[1], n, g);
        if (c->logp) { /* g - exp(y) sum(g) */
            float sg = wk__vsum_f32(g, n);
            wk__vexp_f32(t, y, n);
            wk__vbinary_scalar_f32(WK_MUL, t, t, sg, n);
            wk__vbinary_f32(WK_SUB, t, g, t, n);
        } else { /* y (g - sum(g y)) */
            wk__vbinary_f32(WK_MUL, t, g, y, n);
            float dot = wk__vsum_f32(t, n);
            wk__vbinary_scalar_f32(WK_SUB, t, g, dot, n);
            wk__vbinary_f32(WK_MUL, t, t, y, n);
        }
        wk__row_store_f(c->dx, c->dt, bw_row(r, 2, i), r->s[2], n, t);
    }
    free(buf);
}

static void sm_range_d(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    sm_ctx *c = vc;
    const bw_rows *r = &c->rows;
    int64_t n = r->n;
    double *buf = malloc(sizeof(double) * (size_t)(3 * n) + 1);
    if (!buf) {
        atomic_store(&c->failed, 1);
        return;
    }
    double *y = buf, *g = buf + n, *t = buf + 2 * n;
    for (int64_t i = begin; i < end; i++) {
        wk__row_load_d(c->y, c->dt, bw_row(r, 0, i), r->s[0], n, y);
        wk__row_load_d(c->g, c->dt, bw_row(r, 1, i), r->s[1], n, g);
        double acc = 0;
        if (c->logp) {
            for (int64_t j = 0; j < n; j++) acc += g[j];
            for (int64_t j = 0; j < n; j++) t[j] = g[j] - exp(y[j]) * acc;
        } else {
            for (int64_t j = 0; j < n; j++) acc += g[j] * y[j];
            for (int64_t j = 0; j < n; j++) t[j] = y[j] * (g[j] - acc);
        }
        wk__row_store_d(c->dx, c->dt, bw_row(r, 2, i), r->s[2], n, t);
    }
    free(buf);
}

wk_status wk__cpu_softmax_backward(wk_device *dev, const void *y, const wk_layout *ly, const void *g,
                                   const wk_layout *lg, wk_dtype dt, int dim, bool logp, void *dx) {
    (void)dev;
    const char *op = logp ? "wk_log_softmax" : "wk_softmax";
    if (!wk_dtype_is_float(dt)) return wk__err(WK_ERR_DTYPE, op, "backward: not defined for %s", wk_dtype_name(dt));
    sm_ctx c = {.y = y, .g = g, .dx = dx, .dt = dt, .logp = logp};
    bw_rows_init(&c.rows, ly, lg, dim);
    atomic_init(&c.failed, 0);
    if (c.rows.nrows == 0 || c.rows.n == 0) return WK_OK;
    int64_t grain = c.rows.n >= 4096 ? 1 : 4096 / c.rows.n;
    wk__parallel_for(c.rows.nrows, grain, c.rows.nrows * c.rows.n >= (1 << 14) ? 0 : INT64_MAX,
                     dt == WK_F64 ? sm_range_d : sm_range_f, &c);
    if (atomic_load(&c.failed)) return wk__err(WK_ERR_OOM, op, "backward: cannot allocate row buffers");
    return WK_OK;
}

/* ---- rms_norm / layer_norm ---- */

typedef struct nb_ctx {
    bw_rows rows; /* over x and g along the last dim */
    const void *x, *w, *g;
    wk_layout lw;
    void *dx, *dw, *db;
    wk_dtype dt;
    double eps;
    bool rms;
    double *stat; /* per row: mean, 1 / rms (what the column pass needs) */
    atomic_int failed;
} nb_ctx;

static void nb_rows_f(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    nb_ctx *c = vc;
    const bw_rows *r = &c->rows;
    int64_t n = r->n;
    float *buf = malloc(sizeof(float) * (size_t)(4 * n) + 1);
    if (!buf) {
        atomic_store(&c->failed, 1);
        return;
    }
    float *x = buf, *g = buf + n, *w = buf + 2 * n, *t = buf + 3 * n;
    if (c->w) wk__row_load_f(c->w, c->dt, c->lw.offset, c->lw.stride[0], n, w);
    for (int64_t i = begin; i < end; i++) {
        wk__row_load_f(c->x, c->dt, bw_row(r, 0, i), r->s[0], n, x);
        wk__row_load_f(c->g, c->dt, bw_row(r, 1, i), r->s[1], n, g);
        float mean = c->rms ? 0.0f : wk__vsum_f32(x, n) / (float)n;
        if (!c->rms) wk__vbinary_scalar_f32(WK_SUB, x, x, mean, n);
        wk__vbinary_f32(WK_MUL, t, x, x, n);
        float rs = (float)(1.0 / sqrt((double)wk__vsum_f32(t, n) / (double)n + c->eps));
        c->stat[2 * i] = mean;
        c->stat[2 * i + 1] = rs;
        wk__vbinary_scalar_f32(WK_MUL, x, x, rs, n); /* xhat */
        if (c->w) wk__vbinary_f32(WK_MUL, g, g, w, n); /* gy */
        wk__vbinary_f32(WK_MUL, t, g, x, n);
        float mgx = wk__vsum_f32(t, n) / (float)n;
        float mg = c->rms ? 0.0f : wk__vsum_f32(g, n) / (float)n;
        /* rs (gy - mg - xhat mgx) */
        wk__vbinary_scalar_f32(WK_MUL, t, x, mgx, n);
        wk__vbinary_f32(WK_SUB, t, g, t, n);
        if (!c->rms) wk__vbinary_scalar_f32(WK_SUB, t, t, mg, n);
        wk__vbinary_scalar_f32(WK_MUL, t, t, rs, n);
        wk__row_store_f(c->dx, c->dt, bw_row(r, 2, i), r->s[2], n, t);
    }
    free(buf);
}

static void nb_rows_d(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    nb_ctx *c = vc;
    const bw_rows *r = &c->rows;
    int64_t n = r->n;
    double *buf = malloc(sizeof(double) * (size_t)(3 * n) + 1);
    if (!buf) {
        atomic_store(&c->failed, 1);
        return;
    }
    double *x = buf, *g = buf + n, *t = buf + 2 * n;
    const double *w = c->w ? (const double *)c->w + c->lw.offset : NULL;
    int64_t ws = c->lw.stride[0];
    for (int64_t i = begin; i < end; i++) {
        wk__row_load_d(c->x, c->dt, bw_row(r, 0, i), r->s[0], n, x);
        wk__row_load_d(c->g, c->dt, bw_row(r, 1, i), r->s[1], n, g);
        double mean = 0, ss = 0, sgx = 0, sg = 0;
        if (!c->rms) {
            for (int64_t j = 0; j < n; j++) mean += x[j];
            mean /= (double)n;
        }
        for (int64_t j = 0; j < n; j++) ss += (x[j] - mean) * (x[j] - mean);
        double rs = 1.0 / sqrt(ss / (double)n + c->eps);
        c->stat[2 * i] = mean;
        c->stat[2 * i + 1] = rs;
        for (int64_t j = 0; j < n; j++) {
            x[j] = (x[j] - mean) * rs;
            if (w) g[j] *= w[j * ws];
            sgx += g[j] * x[j];
            sg += g[j];
        }
        double mgx = sgx / (double)n, mg = c->rms ? 0.0 : sg / (double)n;
        for (int64_t j = 0; j < n; j++) t[j] = rs * (g[j] - mg - x[j] * mgx);
        wk__row_store_d(c->dx, c->dt, bw_row(r, 2, i), r->s[2], n, t);
    }
    free(buf);
}

/* Columns [begin, end) of dw / db: sums over every row, in row order. */
#define NB_COLS 64
static void nb_cols(void *vc, int64_t begin, int64_t end, int tid) {
    (void)tid;
    nb_ctx *c = vc;
    const bw_rows *r = &c->rows;
    int64_t j0 = begin * NB_COLS, j1 = end * NB_COLS < r->n ? end * NB_COLS : r->n, len = j1 - j0;
    double *buf = malloc(sizeof(double) * (size_t)(2 * len) + 1);
    float *fb = malloc(sizeof(float) * (size_t)(2 * len) + 1);
    if (!buf || !fb) {
        free(buf);
        free(fb);
        atomic_store(&c->failed, 1);
        return;
    }
    double *sw = buf, *sb = buf + len;
    memset(buf, 0, sizeof(double) * (size_t)(2 * len));
    float *xf = fb, *gf = fb + len;
    for (int64_t i = 0; i < r->nrows; i++) {
        int64_t xo = bw_row(r, 0, i) + j0 * r->s[0], go = bw_row(r, 1, i) + j0 * r->s[1];
        double mean = c->stat[2 * i], rs = c->stat[2 * i + 1];
        if (c->dt == WK_F64) {
            const double *x = c->x, *g = c->g;
            for (int64_t j = 0; j < len; j++) {
                double gv = g[go + j * r->s[1]];
                sw[j] += gv * ((x[xo + j * r->s[0]] - mean) * rs);
                sb[j] += gv;
            }
        } else {
            wk__row_load_f(c->x, c->dt, xo, r->s[0], len, xf);
            wk__row_load_f(c->g, c->dt, go, r->s[1], len, gf);
            /* xhat as the row pass computed it in float */
            for (int64_t j = 0; j < len; j++) {
                float xh = (xf[j] - (float)mean) * (float)rs;
                sw[j] += (double)gf[j] * (double)xh;
                sb[j] += (double)gf[j];
            }
        }
    }
    for (int64_t j = 0; j < len; j++) {
        if (c->dt == WK_F64) {
            if (c->dw) ((double *)c->dw)[j0 + j] = sw[j];
            if (c->db) ((double *)c->db)[j0 + j] = sb[j];
        } else {
            if (c->dw) wk__row_store_f(c->dw, c->dt, j0 + j, 1, 1, &(float){(float)sw[j]});
            if (c->db) wk__row_store_f(c->db, c->dt, j0 + j, 1, 1, &(float){(float)sb[j]});
        }
    }
    free(buf);
    free(fb);
}

wk_status wk__cpu_norm_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                const wk_layout *lw, const void *g, const wk_layout *lg, wk_dtype dt, double eps,
                                bool rms, void *dx, void *dw, void *db) {
    (void)dev;
    const char *op = rms ? "wk_rms_norm" : "wk_layer_norm";
    if (!wk_dtype_is_float(dt)) return wk__err(WK_ERR_DTYPE, op, "backward: not defined for %s", wk_dtype_name(dt));
    if (lx->rank < 1) return wk__err(WK_ERR_SHAPE, op, "backward: x needs rank >= 1");
    nb_ctx c = {.x = x, .w = w, .g = g, .dx = dx, .dw = dw, .db = rms ? NULL : db, .dt = dt, .eps = eps, .rms = rms};
    if (w) c.lw = *lw;
    bw_rows_init(&c.rows, lx, lg, lx->rank - 1);
    atomic_init(&c.failed, 0);
    int64_t nr = c.rows.nrows, n = c.rows.n;
    if (n == 0) return WK_OK;
    if (nr == 0) { /* sums over no rows */
        size_t es = wk_dtype_size(dt);
        if (dw) memset(dw, 0, es * (size_t)n);
        if (c.db) memset(c.db, 0, es * (size_t)n);
        return WK_OK;
    }
    c.stat = malloc(sizeof(double) * (size_t)(2 * nr));
    if (!c.stat) return wk__err(WK_ERR_OOM, op, "backward: cannot allocate %lld row statistics", (long long)nr);
    int64_t grain = n >= 4096 ? 1 : 4096 / n;
    bool par = nr * n >= (1 << 14);
    wk__parallel_for(nr, grain, par ? 0 : INT64_MAX, dt == WK_F64 ? nb_rows_d : nb_rows_f, &c);
    if (!atomic_load(&c.failed) && (c.dw || c.db))
        wk__parallel_for((n + NB_COLS - 1) / NB_COLS, 1, par ? 0 : INT64_MAX, nb_cols, &c);
    free(c.stat);
    if (atomic_load(&c.failed)) return wk__err(WK_ERR_OOM, op, "backward: cannot allocate row buffers");
    return WK_OK;
}
