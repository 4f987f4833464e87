/* CPU reductions over any set of dims. The kept dims index the outputs; the
 * reduced dims are coalesced and walked as runs. Many outputs are split
 * across threads; a few outputs with long reductions split each reduction
 * into per-thread partials that are combined in order (so argmax ties still
 * pick the first index). f16/bf16 accumulate in f32 or wider, f32 in f32
 * lanes folded into f64 per run, integers in 64 bits (wrapping). */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    double sum;       /* float sum */
    uint64_t isum;    /* integer sum, wrapping */
    double best;      /* max/min for floats */
    int64_t ibest;    /* max/min for integers */
    int64_t idx;      /* arg index */
    bool any;
} red_state;

typedef struct {
    wk_reduce_op op;
    wk_dtype dt;
    const char *src;
    int64_t es;
    /* kept dims (output order) and reduced dims (coalesced) */
    int krank, rrank;
    int64_t kshape[WK_MAX_RANK], kstride[WK_MAX_RANK];
    int64_t rshape[WK_MAX_RANK], rstride[WK_MAX_RANK];
    int64_t offset, rcount;
    void *dst;
} red_plan;

static bool wants_max(wk_reduce_op op) { return op == WK_REDUCE_MAX || op == WK_REDUCE_ARGMAX; }

/* Fold one element (value v or integer iv) at reduction index k. */
static inline void fold_float(red_state *s, wk_reduce_op op, double v, int64_t k) {
    if (!s->any) { s->best = v; s->idx = k; s->any = true; return; }
    if (s->best != s->best) return;                           /* NaN already wins */
    bool better = v != v || (wants_max(op) ? v > s->best : v < s->best);
    if (better) { s->best = v; s->idx = k; }
}
static inline void fold_int(red_state *s, wk_reduce_op op, int64_t v, int64_t k) {
    if (!s->any) { s->ibest = v; s->idx = k; s->any = true; return; }
    if (wants_max(op) ? v > s->ibest : v < s->ibest) { s->ibest = v; s->idx = k; }
}

/* Accumulate n elements at element offset off with stride st; k0 is the
 * reduction index of the first. */
static void fold_run(const red_plan *p, red_state *s, int64_t off, int64_t st, int64_t n, int64_t k0) {
    const char *base = p->src;
    wk_dtype dt = p->dt;
    bool sum = p->op == WK_REDUCE_SUM || p->op == WK_REDUCE_MEAN;
    if (p->op == WK_REDUCE_PROD) {
        /* floats in double, integers in wrapping uint64; `any` marks a
         * started product (the zeroed state means "empty": 1) */
        if (!s->any) { s->sum = 1; s->isum = 1; s->any = true; }
        if (wk_dtype_is_int(dt)) {
            uint64_t t = s->isum;
            for (int64_t i = 0; i < n; i++) t *= (uint64_t)wk__load_i64(base, off + i * st, dt);
            s->isum = t;
        } else {
            double t = s->sum;
            for (int64_t i = 0; i < n; i++) t *= wk__load_f64(base, off + i * st, dt);
            s->sum = t;
        }
        return;
    }
    if (p->op == WK_REDUCE_ANY || p->op == WK_REDUCE_ALL) {
        /* isum: a nonzero was seen; ibest: a zero was seen (NaN is nonzero) */
        bool nz = false, z = false;
        if (wk_dtype_is_int(dt)) {
            for (int64_t i = 0; i < n; i++) {
                if (wk__load_i64(base, off + i * st, dt) != 0) nz = true; else z = true;
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                if (wk__load_f64(base, off + i * st, dt) != 0) nz = true; else z = true;
            }
        }
        if (nz) s->isum = 1;
        if (z) s->ibest = 1;
        return;
    }
    if (sum) {
        if (dt == WK_F32 && st == 1) { s->sum += wk__vsum_f32((const float *)(const void *)base + off, n); return; }
        if (dt == WK_F32) {
            const float *x = (const float *)(const void *)base + off;
            float t = 0;
            for (int64_t i = 0; i < n; i++) t += x[i * st];
            s->sum += t;
            return;
        }
        if (dt == WK_F64) {
            const double *x = (const double *)(const void *)base + off;
            double t = 0;
            for (int64_t i = 0; i < n; i++) t += x[i * st];
            s->sum += t;
            return;
        }
        if (wk__is_narrow_float(dt)) {
            float t = 0;
            for (int64_t i = 0; i < n; i++) t += wk__narrow_load(base, off + i * st, dt);
            s->sum += t;
            return;
        }
        uint64_t t = 0;
        for (int64_t i = 0; i < n; i++) t += (uint64_t)wk__load_i64(base, off + i * st, dt);
        s->isum += t;
        return;
    }
    if (dt == WK_F32 && st == 1 && n > 0 && (p->op == WK_REDUCE_MAX || p->op == WK_REDUCE_MIN)) {
        /* no index needed: vector max/min of the run, then one fold */
        fold_float(s, p->op, wk__vmaxmin_f32((const float *)(const void *)base + off, n, p->op == WK_REDUCE_MIN), k0);
        return;
    }
    if (wk_dtype_is_int(dt)) {
        for (int64_t i = 0; i < n; i++) fold_int(s, p->op, wk__load_i64(base, off + i * st, dt), k0 + i);
    } else if (dt == WK_F32) {
        const float *x = (const float *)(const void *)base + off;
        for (int64_t i = 0; i < n; i++) fold_float(s, p->op, x[i * st], k0 + i);
    } else {
        for (int64_t i = 0; i < n; i++) fold_float(s, p->op, wk__load_f64(base, off + i * st, dt), k0 + i);
    }
}

/* Fold reduction indices [b, e) of the output whose base element offset is base. */
static void fold_range(const red_plan *p, red_state *s, int64_t base, int64_t b, int64_t e) {
    int r = p->rrank;
    int64_t inner = p->rshape[r - 1], ist = p->rstride[r - 1];
    int64_t pos = b;
    while (pos < e) {
        int64_t outer = pos / inner, j = pos % inner, n = inner - j;
        if (n > e - pos) n = e - pos;
        int64_t off = base + j * ist + wk__unravel(p->rshape, p->rstride, r - 1, outer);
        fold_run(p, s, off, ist, n, pos);
        pos += n;
    }
}

static void combine(const red_plan *p, red_state *into, const red_state *s) {
    if (p->op == WK_REDUCE_SUM || p->op == WK_REDUCE_MEAN) { into->sum += s->sum; into->isum += s->isum; return; }
    if (p->op == WK_REDUCE_PROD) {
        if (!s->any) return;
        if (!into->any) { *into = *s; return; }
        into->sum *= s->sum;
        into->isum *= s->isum;
        return;
    }
    if (p->op == WK_REDUCE_ANY || p->op == WK_REDUCE_ALL) { into->isum |= s->isum; into->ibest |= s->ibest; return; }
    if (!s->any) return;
    if (wk_dtype_is_int(p->dt)) fold_int(into, p->op, s->ibest, s->idx);
    else fold_float(into, p->op, s->best, s->idx);
}

static void store(const red_plan *p, int64_t o, const red_state *s) {
    switch (p->op) {
    case WK_REDUCE_SUM:
        if (wk_dtype_is_int(p->dt)) wk__store_i64(p->dst, o, p->dt, (int64_t)s->isum);
        else wk__store_f64(p->dst, o, p->dt, s->sum);
        break;
    case WK_REDUCE_MEAN: wk__store_f64(p->dst, o, p->dt, s->sum / (double)p->rcount); break;
    case WK_REDUCE_MAX: case WK_REDUCE_MIN:
        if (wk_dtype_is_int(p->dt)) wk__store_i64(p->dst, o, p->dt, s->ibest);
        else wk__store_f64(p->dst, o, p->dt, s->best);
        break;
    case WK_REDUCE_PROD:
        if (wk_dtype_is_int(p->dt)) wk__store_i64(p->dst, o, p->dt, s->any ? (int64_t)s->isum : 1);
        else wk__store_f64(p->dst, o, p->dt, s->any ? s->sum : 1.0);
        break;
    case WK_REDUCE_ANY: ((uint8_t *)p->dst)[o] = s->isum != 0; break;
    case WK_REDUCE_ALL: ((uint8_t *)p->dst)[o] = s->ibest == 0; break;
    case WK_REDUCE_ARGMAX: case WK_REDUCE_ARGMIN: ((uint32_t *)p->dst)[o] = (uint32_t)s->idx; break;
    case WK_REDUCE_COUNT: break; /* rejected by wk_reduce */
    }
}

static int64_t out_base(const red_plan *p, int64_t o) { return p->offset + wk__unravel(p->kshape, p->kstride, p->krank, o); }

static void outputs_piece(void *ctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    const red_plan *p = ctx;
    if (p->dt == WK_F32 && (p->op == WK_REDUCE_SUM || p->op == WK_REDUCE_MEAN) && p->rrank == 1 &&
        p->rstride[0] == 1 && p->rcount > 0) {
        /* one contiguous run per output (sum over the last dim): straight to
         * the vector sum and the f32 result, as fold_range -> fold_run ->
         * store would do it (same bits), without their per-output index
         * arithmetic and dtype switches (~15% of a sum over rows of 1024) */
        const float *x = (const float *)(const void *)p->src;
        float *y = p->dst;
        bool mean = p->op == WK_REDUCE_MEAN;
        for (int64_t o = b; o < e; o++) {
            int64_t base = p->krank == 1 ? p->offset + o * p->kstride[0] : out_base(p, o);
            double sum = 0;
            sum += wk__vsum_f32(x + base, p->rcount);
            y[o] = (float)(mean ? sum / (double)p->rcount : sum);
        }
        return;
    }
    for (int64_t o = b; o < e; o++) {
        red_state s = {0};
        if (p->rcount) fold_range(p, &s, out_base(p, o), 0, p->rcount);
        store(p, o, &s);
    }
}

#define MAX_PARTIALS 256
typedef struct {
    const red_plan *p;
    int64_t base;
    red_state part[MAX_PARTIALS];
    int64_t grain;
} split_ctx;

/* One partial per grain, whatever the piece size: the result does not
 * depend on the thread count. */
static void split_piece(void *ctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    split_ctx *c = ctx;
    for (int64_t g = b; g < e; g += c->grain) {
        red_state s = {0};
        fold_range(c->p, &s, c->base, g, g + c->grain < e ? g + c->grain : e);
        c->part[g / c->grain] = s;
    }
}

/* ---- reductions whose innermost kept dim is contiguous (sum over dim 0 of
 * a row-major matrix, mean over a batch): walking each output down its
 * column would stride through memory once per output, so whole rows are
 * folded into a block of column accumulators instead. f32/f64 sum, mean,
 * max and min. ---- */
#define COLS 512

typedef struct {
    const red_plan *p;
    int64_t inner, nblk;
} cols_ctx;

static int64_t red_offset(const red_plan *p, int64_t r) { return wk__unravel(p->rshape, p->rstride, p->rrank, r); }

static void cols_piece(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    const cols_ctx *c = vctx;
    const red_plan *p = c->p;
    bool sum = p->op == WK_REDUCE_SUM || p->op == WK_REDUCE_MEAN, mn = p->op == WK_REDUCE_MIN;
    double acc[COLS];
    for (int64_t w = b; w < e; w++) {
        int64_t o0 = (w / c->nblk) * c->inner + (w % c->nblk) * COLS;
        int64_t len = c->inner - (w % c->nblk) * COLS;
        if (len > COLS) len = COLS;
        int64_t base = out_base(p, o0);
        for (int64_t r = 0; r < p->rcount; r++) {
            int64_t off = base + red_offset(p, r);
            if (p->dt == WK_F32) {
                const float *x = (const float *)(const void *)p->src + off;
                if (sum) for (int64_t j = 0; j < len; j++) acc[j] = (r ? acc[j] : 0.0) + x[j];
                else if (r == 0) for (int64_t j = 0; j < len; j++) acc[j] = x[j];
                else if (mn) for (int64_t j = 0; j < len; j++) acc[j] = (x[j] != x[j] || x[j] < acc[j]) ? x[j] : acc[j];
                else for (int64_t j = 0; j < len; j++) acc[j] = (x[j] != x[j] || x[j] > acc[j]) ? x[j] : acc[j];
            } else {
                const double *x = (const double *)(const void *)p->src + off;
                if (sum) for (int64_t j = 0; j < len; j++) acc[j] = (r ? acc[j] : 0.0) + x[j];
                else if (r == 0) for (int64_t j = 0; j < len; j++) acc[j] = x[j];
                else if (mn) for (int64_t j = 0; j < len; j++) acc[j] = (x[j] != x[j] || x[j] < acc[j]) ? x[j] : acc[j];
                else for (int64_t j = 0; j < len; j++) acc[j] = (x[j] != x[j] || x[j] > acc[j]) ? x[j] : acc[j];
            }
        }
        if (p->rcount == 0)
            for (int64_t j = 0; j < len; j++) acc[j] = 0;
        if (p->op == WK_REDUCE_MEAN)
            for (int64_t j = 0; j < len; j++) acc[j] /= (double)p->rcount;
        for (int64_t j = 0; j < len; j++) wk__store_f64(p->dst, o0 + j, p->dt, acc[j]);
    }
}

static bool reduce_by_columns(const red_plan *p, int64_t nout) {
    if (p->krank == 0 || p->kstride[p->krank - 1] != 1 || (p->dt != WK_F32 && p->dt != WK_F64)) return false;
    if (p->op != WK_REDUCE_SUM && p->op != WK_REDUCE_MEAN && p->op != WK_REDUCE_MAX && p->op != WK_REDUCE_MIN)
        return false;
    int64_t inner = p->kshape[p->krank - 1];
    /* only when every reduced dim jumps further than the contiguous columns */
    if (inner < 16 || p->rcount < 2) return false;
    for (int i = 0; i < p->rrank; i++)
        if (p->rshape[i] > 1 && (p->rstride[i] < inner && p->rstride[i] > -inner)) return false;
    cols_ctx c = {p, inner, (inner + COLS - 1) / COLS};
    int64_t work = (nout / inner) * c.nblk;
    int64_t per = p->rcount * COLS;
    wk__parallel_for(work, 1, per > 0 ? WK_PAR_MIN_ELEMS / per + 1 : INT64_MAX, cols_piece, &c);
    return true;
}

wk_status wk__cpu_reduce(wk_device *dev, wk_reduce_op op, const void *src, const wk_layout *ls, wk_dtype dt,
                         const bool *mask, void *dst) {
    (void)dev;
    red_plan p = {.op = op, .dt = dt, .src = src, .es = (int64_t)wk__dtype_elem_bytes(dt), .offset = ls->offset, .dst = dst};
    int64_t nout = 1;
    p.rcount = 1;
    for (int i = 0; i < ls->rank; i++) {
        if (mask[i]) {
            p.rcount *= ls->shape[i];
            if (ls->shape[i] == 1) continue;
            /* coalesce with the previous reduced dim when contiguous to it */
            if (p.rrank > 0 && p.rstride[p.rrank - 1] == ls->stride[i] * ls->shape[i]) {
                p.rshape[p.rrank - 1] *= ls->shape[i];
                p.rstride[p.rrank - 1] = ls->stride[i];
            } else {
                p.rshape[p.rrank] = ls->shape[i];
                p.rstride[p.rrank++] = ls->stride[i];
            }
        } else {
            p.kshape[p.krank] = ls->shape[i];
            p.kstride[p.krank++] = ls->stride[i];
            nout *= ls->shape[i];
        }
    }
    if (p.rrank == 0) { p.rshape[0] = 1; p.rstride[0] = 1; p.rrank = 1; }
    if (p.rcount == 0) { p.rshape[0] = 0; p.rrank = 1; }
    if (reduce_by_columns(&p, nout)) return WK_OK;
    /* the choice of path (and so the summation order) must not depend on
     * the thread count */
    if (nout >= 64 || p.rcount < WK_PAR_MIN_ELEMS) {
        int64_t min_par = p.rcount > 0 ? WK_PAR_MIN_ELEMS / p.rcount + 1 : INT64_MAX;
        wk__parallel_for(nout, 1, min_par, outputs_piece, &p);
        return WK_OK;
    }
    /* few outputs, long reductions: split each reduction */
    split_ctx *c = malloc(sizeof *c);
    if (!c) return wk__err(WK_ERR_OOM, "reduce", "cannot allocate reduction scratch");
    c->p = &p;
    c->grain = (p.rcount + MAX_PARTIALS - 1) / MAX_PARTIALS;
    if (c->grain < 4096) c->grain = 4096;
    for (int64_t o = 0; o < nout; o++) {
        c->base = out_base(&p, o);
        int64_t np = (p.rcount + c->grain - 1) / c->grain;
        memset(c->part, 0, sizeof(red_state) * (size_t)np);
        wk__parallel_for(p.rcount, c->grain, 0, split_piece, c);
        red_state s = {0};
        for (int64_t k = 0; k < np; k++) combine(&p, &s, &c->part[k]);
        store(&p, o, &s);
    }
    free(c);
    return WK_OK;
}
