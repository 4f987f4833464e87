/* Statistics built from existing entries, so every backend has them:
 * var/std (one pass for the mean, one for the squares) and log_sum_exp.
 * The untracked ops (wk__prim_var / _std / _log_sum_exp, ops/prim_scan.h);
 * the public tracked ones are in src/autograd/tracked_scan.c. */
#include "tensor/tensor.h"
#include "ops/prim_elementwise.h"
#include "ops/prim_copy.h"
#include "ops/prim_reduce.h"
#include "ops/prim_scan.h"
#include "tensor/prim_views.h"
#include <math.h>

/* Validate a dims list like wk_reduce; *count = elements per reduction. */
static bool red_dims(const char *op, const wk_tensor *t, const int *dims, int ndims, int64_t *count) {
    int rank = t->layout.rank;
    bool seen[WK_MAX_RANK] = {false};
    if (ndims < 0 || (ndims > 0 && !dims)) { wk__err(WK_ERR_ARG, op, "bad dims list"); return false; }
    *count = 1;
    for (int i = 0; i < ndims; i++) {
        int d;
        if (wk__norm_dim(op, dims[i], rank, &d) != WK_OK) return false;
        if (seen[d]) { wk__err(WK_ERR_ARG, op, "dim %d listed twice", d); return false; }
        seen[d] = true;
        *count *= t->layout.shape[d];
    }
    return true;
}

static bool float_in(const char *op, const wk_tensor *t) {
    if (!wk__check_in(op, t)) return false;
    if (!wk_dtype_is_float(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(t->dtype));
        return false;
    }
    return true;
}

/* f16/bf16/f8 are computed in f32 and rounded once at the end. */
static bool narrow(wk_dtype dt) { return dt == WK_F16 || dt == WK_BF16 || dt == WK_F8E4M3; }

static wk_tensor *to_dt_owned(wk_tensor *r, wk_dtype dt) {
    if (!r || r->dtype == dt) return r;
    wk_tensor *c = wk__prim_to_dtype(r, dt);
    wk_tensor_free(r);
    return c;
}

static wk_tensor *var_impl(const char *op, const wk_tensor *t, const int *dims, int ndims, bool keepdim,
                           bool unbiased, bool take_sqrt) {
    if (!float_in(op, t)) return NULL;
    int64_t n;
    if (!red_dims(op, t, dims, ndims, &n)) return NULL;
    /* in f64 whatever the dtype: the mean must be exact enough for the
     * deviations of nearly constant data */
    /* no retain of t: inside a scope a retain/free pair would take t from
     * its scope (see wk_tensor_retain) */
    wk_tensor *xc = t->dtype != WK_F64 ? wk__prim_to_dtype(t, WK_F64) : NULL;
    const wk_tensor *x = t->dtype != WK_F64 ? xc : t;
    if (!x) return NULL;
    /* two passes: the mean, then the squared deviations from it */
    wk_tensor *mu = wk__prim_reduce(x, WK_REDUCE_MEAN, dims, ndims, true);
    wk_tensor *dev = wk__prim_binary(x, mu, WK_SUB);
    wk_tensor *sq = wk__prim_binary(dev, dev, WK_MUL);
    wk_tensor *ss = wk__prim_reduce(sq, WK_REDUCE_SUM, dims, ndims, keepdim);
    int64_t den = n - (unbiased ? 1 : 0);
    /* no degrees of freedom left: NaN, like torch */
    wk_tensor *v = den > 0 ? wk__prim_affine(ss, 1.0 / (double)den, 0) : wk__prim_affine(ss, 0, NAN);
    wk_tensor *r = v;
    if (take_sqrt) {
        r = wk__prim_unary(v, WK_SQRT);
        wk_tensor_free(v);
    }
    wk_tensor_free(xc);
    wk_tensor_free(mu);
    wk_tensor_free(dev);
    wk_tensor_free(sq);
    wk_tensor_free(ss);
    return to_dt_owned(r, t->dtype);
}

wk_tensor *wk__prim_var(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased) {
    return var_impl("wk_var", t, dims, ndims, keepdim, unbiased, false);
}
wk_tensor *wk__prim_std(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased) {
    return var_impl("wk_std", t, dims, ndims, keepdim, unbiased, true);
}

/* log(sum(exp(x - m))) + m with m the max over the dims; m is replaced by 0
 * where it is not finite (all -inf gives log(0) = -inf, +inf gives +inf,
 * NaN stays NaN). An empty reduction gives -inf. */
wk_tensor *wk__prim_log_sum_exp(const wk_tensor *t, const int *dims, int ndims, bool keepdim) {
    const char *op = "wk_log_sum_exp";
    if (!float_in(op, t)) return NULL;
    int64_t n;
    if (!red_dims(op, t, dims, ndims, &n)) return NULL;
    int rank = t->layout.rank;
    bool mask[WK_MAX_RANK] = {false};
    for (int i = 0; i < ndims; i++) mask[dims[i] < 0 ? dims[i] + rank : dims[i]] = true;
    int64_t oshape[WK_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (keepdim || !mask[i]) oshape[orank++] = mask[i] ? 1 : t->layout.shape[i];
    if (n == 0) return wk_full(oshape, orank, -INFINITY, t->dtype, wk__dev(t));
    wk_tensor *xc = narrow(t->dtype) ? wk__prim_to_dtype(t, WK_F32) : NULL;
    const wk_tensor *x = narrow(t->dtype) ? xc : t;
    if (!x) return NULL;
    wk_tensor *m = wk__prim_reduce(x, WK_REDUCE_MAX, dims, ndims, true);
    wk_tensor *am = wk__prim_unary(m, WK_ABS);
    wk_tensor *inf = wk_cmp_scalar(am, INFINITY, WK_EQ);
    wk_tensor *zero = m ? wk_zeros(NULL, 0, m->dtype, wk__dev(m)) : NULL;
    wk_tensor *ms = wk__prim_where(inf, zero, m);
    wk_tensor *d = wk__prim_binary(x, ms, WK_SUB);
    wk_tensor *e = wk__prim_unary(d, WK_EXP);
    wk_tensor *s = wk__prim_reduce(e, WK_REDUCE_SUM, dims, ndims, true);
    wk_tensor *ls = wk__prim_unary(s, WK_LOG);
    wk_tensor *r = wk__prim_binary(ls, ms, WK_ADD);
    wk_tensor *out = r ? wk__prim_reshape(r, oshape, orank) : NULL;   /* a view of r */
    wk_tensor *all[] = {xc, m, am, inf, zero, ms, d, e, s, ls, r};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
    return to_dt_owned(out, t->dtype);
}
