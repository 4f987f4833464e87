/* Vector products and norms, built from matmul and reductions so every
 * backend has them (no backend entries of their own).
 *  - dot / mv: the vectors are re-viewed as (1, k) / (k, 1) matrices (a
 *    layout change, never a copy, whatever their stride), so the product
 *    reaches the backend's matrix-vector path with m or n equal to 1.
 *  - norm: torch.linalg.vector_norm from abs / sqr / powf / sum / max / min;
 *    narrow floats are widened to f32 first so x^2 cannot overflow f16.
 * The untracked ops (ops/prim_linalg.h), made of prims; the public ones
 * record one node each in src/autograd/tracked_linalg.c. */
#include <inttypes.h>
#include <math.h>

#include "tensor/tensor.h"
#include "ops/prim_elementwise.h"
#include "ops/prim_linalg.h"
#include "ops/prim_matmul.h"
#include "ops/prim_copy.h"
#include "ops/prim_reduce.h"

/* A 2-D view (rows, cols) of the 1-D tensor v walking its one stride along
 * the dim of size k (the other dim has size 1, so its stride is irrelevant). */
static wk_tensor *vec_as_matrix(const wk_tensor *v, bool as_row) {
    wk_layout l = v->layout;
    int64_t k = v->layout.shape[0], s = v->layout.stride[0];
    l.rank = 2;
    l.shape[0] = as_row ? 1 : k;
    l.shape[1] = as_row ? k : 1;
    l.stride[0] = as_row ? 0 : s;
    l.stride[1] = as_row ? s : 0;
    return wk__tensor_view(v, &l);
}

/* The matmul result r (contiguous) re-viewed with the given shape. */
static wk_tensor *reshaped_result(wk_tensor *r, const int64_t *shape, int rank) {
    if (!r) return NULL;
    wk_layout l;
    wk__layout_contiguous(&l, shape, rank, r->layout.offset);
    wk_tensor *out = wk__tensor_view(r, &l);
    wk_tensor_free(r);
    return out;
}

static bool check_product(const char *op, const wk_tensor *a, const wk_tensor *b, int rank_a) {
    if (!wk__check_same(op, a, b)) return false;
    char x[128], y[128];
    if (a->layout.rank != rank_a || b->layout.rank != 1) {
        wk__err(WK_ERR_SHAPE, op, "expected a rank-%d lhs and a rank-1 rhs, got %s and %s", rank_a,
                wk__shape_str(a->layout.shape, a->layout.rank, x, sizeof x),
                wk__shape_str(b->layout.shape, b->layout.rank, y, sizeof y));
        return false;
    }
    if (a->layout.shape[rank_a - 1] != b->layout.shape[0]) {
        wk__err(WK_ERR_SHAPE, op, "inner dims differ: lhs %s, rhs %s",
                wk__shape_str(a->layout.shape, a->layout.rank, x, sizeof x),
                wk__shape_str(b->layout.shape, b->layout.rank, y, sizeof y));
        return false;
    }
    if (wk_dtype_is_int(a->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s (as wk_matmul)", wk_dtype_name(a->dtype));
        return false;
    }
    return true;
}

wk_tensor *wk__prim_dot(const wk_tensor *a, const wk_tensor *b) {
    if (!check_product("wk_dot", a, b, 1)) return NULL;
    wk_tensor *ra = vec_as_matrix(a, true), *cb = vec_as_matrix(b, false);
    wk_tensor *r = ra && cb ? wk__prim_matmul(ra, cb) : NULL;
    wk_tensor_free(ra);
    wk_tensor_free(cb);
    return reshaped_result(r, NULL, 0);
}

wk_tensor *wk__prim_mv(const wk_tensor *m, const wk_tensor *v) {
    if (!check_product("wk_mv", m, v, 2)) return NULL;
    wk_tensor *cv = vec_as_matrix(v, false);
    wk_tensor *r = cv ? wk__prim_matmul(m, cv) : NULL;
    wk_tensor_free(cv);
    int64_t n = m->layout.shape[0];
    return reshaped_result(r, &n, 1);
}

/* ---- vector norms ---- */

/* Takes ownership of x (may be NULL) and returns op(x); op's own result or NULL. */
static wk_tensor *then(wk_tensor *x, wk_unary_op op) {
    wk_tensor *r = x ? wk__prim_unary(x, op) : NULL;
    wk_tensor_free(x);
    return r;
}

wk_tensor *wk__prim_norm(const wk_tensor *t, double p, const int *dims, int ndims, bool keepdim) {
    const char *op = "wk_norm";
    if (!wk__check_in(op, t)) return NULL;
    if (!wk_dtype_is_float(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(t->dtype));
        return NULL;
    }
    if (isnan(p)) { wk__err(WK_ERR_ARG, op, "p is NaN"); return NULL; }
    int rank = t->layout.rank;
    if (ndims < 0 || (ndims > 0 && !dims)) { wk__err(WK_ERR_ARG, op, "bad dims list (ndims %d)", ndims); return NULL; }
    int all[WK_MAX_RANK];
    bool seen[WK_MAX_RANK] = {false};
    int64_t red = 1, kept = 1;
    if (ndims == 0) {
        for (int i = 0; i < rank; i++) all[i] = i, seen[i] = true;
        ndims = rank;
    } else {
        if (ndims > rank) { wk__err(WK_ERR_ARG, op, "%d dims listed for a rank-%d tensor", ndims, rank); return NULL; }
        for (int i = 0; i < ndims; i++) {
            if (wk__norm_dim(op, dims[i], rank, &all[i]) != WK_OK) return NULL;
            if (seen[all[i]]) { wk__err(WK_ERR_ARG, op, "dim %d listed twice", all[i]); return NULL; }
            seen[all[i]] = true;
        }
    }
    for (int i = 0; i < rank; i++) {
        if (seen[i]) red *= t->layout.shape[i];
        else kept *= t->layout.shape[i];
    }
    /* max |x| and the negative-p norms have no identity (torch errors too) */
    if ((p < 0 || isinf(p)) && red == 0 && kept > 0) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "p = %g over an empty reduction of %s has no value", p,
                wk__shape_str(t->layout.shape, rank, b, sizeof b));
        return NULL;
    }
    if (isinf(p)) {
        /* max / min |x| are exact in any dtype: no widening */
        wk_tensor *a = wk__prim_unary(t, WK_ABS);
        wk_tensor *r = a ? wk__prim_reduce(a, p > 0 ? WK_REDUCE_MAX : WK_REDUCE_MIN, all, ndims, keepdim) : NULL;
        wk_tensor_free(a);
        return r;
    }
    wk_dtype acc = t->dtype == WK_F64 ? WK_F64 : WK_F32;
    wk_tensor *x;
    if (p == 0) {
        /* count of nonzero elements (NaN counts), summed in the accumulator type */
        wk_tensor *nz = wk_cmp_scalar(t, 0.0, WK_NE);
        x = nz ? wk__prim_to_dtype(nz, acc) : NULL;
        wk_tensor_free(nz);
    } else {
        x = wk__prim_to_dtype(t, acc);
        if (p == 2) x = then(x, WK_SQR);
        else {
            x = then(x, WK_ABS);
            if (p != 1) {
                wk_tensor *y = x ? wk__prim_powf(x, p) : NULL;
                wk_tensor_free(x);
                x = y;
            }
        }
    }
    wk_tensor *s = x ? wk__prim_reduce(x, WK_REDUCE_SUM, all, ndims, keepdim) : NULL;
    wk_tensor_free(x);
    if (p == 2) s = then(s, WK_SQRT);
    else if (p != 0 && p != 1) {
        wk_tensor *y = s ? wk__prim_powf(s, 1.0 / p) : NULL;
        wk_tensor_free(s);
        s = y;
    }
    if (!s || s->dtype == t->dtype) return s;
    wk_tensor *r = wk__prim_to_dtype(s, t->dtype);
    wk_tensor_free(s);
    return r;
}
