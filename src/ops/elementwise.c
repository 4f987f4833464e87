/* Elementwise ops: dtype rules from the op lists, broadcasting, then one
 * backend call into a fresh contiguous output. The untracked ops
 * (wk__prim_*, ops/prim_elementwise.h); the public tracked ones are
 * src/autograd/tracked_elementwise.c, the wrappers composite_elementwise.c.
 * Comparisons have no gradient: wk_cmp / wk_cmp_scalar stay public here. */
#include "tensor/tensor.h"
#include "tensor/op_lists.h"
#include "ops/prim_elementwise.h"
#include <math.h>

/* The op lists' tables (names, integer rules, backward rules) are the
 * tensor floor's: src/tensor/op_lists.c. */


static wk_tensor *alloc_like(const char *op, const wk_tensor *t, wk_dtype dt) {
    return wk__tensor_alloc(op, wk__dev(t), dt, t->layout.shape, t->layout.rank);
}

static wk_tensor *finish(wk_tensor *r, wk_status st) {
    if (st != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

wk_tensor *wk__prim_unary(const wk_tensor *t, wk_unary_op op) {
    if ((unsigned)op >= WK_UNARY_COUNT) { wk__err(WK_ERR_ARG, "wk_unary", "invalid unary op %d", (int)op); return NULL; }
    const char *name = wk__unary_names[op];   /* no formatting on the hot path */
    if (!wk__check_in(name, t)) return NULL;
    if (wk_dtype_is_int(t->dtype) && wk__unary_int_rule[op] == INT_NONE) {
        wk__err(WK_ERR_DTYPE, name, "not defined for integer dtype %s (convert with wk_to_dtype first)",
                wk_dtype_name(t->dtype));
        return NULL;
    }
    wk_tensor *r = alloc_like(name, t, t->dtype);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(t)->unary(wk__dev(t), op, t->storage->buf, &t->layout, r->storage->buf, t->dtype));
}

wk_tensor *wk__prim_affine(const wk_tensor *t, double mul, double add) {
    const char *op = "wk_affine";
    if (!wk__check_in(op, t)) return NULL;
    wk_tensor *r = alloc_like(op, t, t->dtype);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(t)->affine(wk__dev(t), t->storage->buf, &t->layout, r->storage->buf, t->dtype, mul, add));
}

static bool float_only(const char *op, const wk_tensor *t) {
    if (!wk__check_in(op, t)) return false;
    if (!wk_dtype_is_float(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(t->dtype));
        return false;
    }
    return true;
}

wk_tensor *wk__prim_powf(const wk_tensor *t, double e) {
    const char *op = "wk_powf";
    if (!float_only(op, t)) return NULL;
    wk_tensor *r = alloc_like(op, t, t->dtype);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(t)->powf(wk__dev(t), t->storage->buf, &t->layout, r->storage->buf, t->dtype, e));
}

wk_tensor *wk__prim_elu(const wk_tensor *t, double alpha) {
    const char *op = "wk_elu";
    if (!float_only(op, t)) return NULL;
    wk_tensor *r = alloc_like(op, t, t->dtype);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(t)->elu(wk__dev(t), t->storage->buf, &t->layout, r->storage->buf, t->dtype, alpha));
}

wk_tensor *wk__prim_clamp(const wk_tensor *t, double lo, double hi) {
    const char *op = "wk_clamp";
    if (!wk__check_in(op, t)) return NULL;
    if (isnan(lo) || isnan(hi) || lo > hi) { wk__err(WK_ERR_ARG, op, "bounds [%g, %g] are not an interval", lo, hi); return NULL; }
    wk_tensor *r = alloc_like(op, t, t->dtype);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(t)->clamp(wk__dev(t), t->storage->buf, &t->layout, r->storage->buf, t->dtype, lo, hi));
}

/* Broadcast a and b to a common shape; allocate the output of dtype odt. */
static wk_tensor *prepare2(const char *op, const wk_tensor *a, const wk_tensor *b, wk_dtype odt, wk_layout *la,
                           wk_layout *lb) {
    if (!wk__check_same(op, a, b)) return NULL;
    int64_t shape[WK_MAX_RANK];
    int rank;
    if (wk__broadcast_shapes(op, a->layout.shape, a->layout.rank, b->layout.shape, b->layout.rank, shape, &rank) != WK_OK)
        return NULL;
    if (wk__layout_broadcast(op, &a->layout, shape, rank, la) != WK_OK ||
        wk__layout_broadcast(op, &b->layout, shape, rank, lb) != WK_OK)
        return NULL;
    return wk__tensor_alloc(op, wk__dev(a), odt, shape, rank);
}

wk_tensor *wk__prim_binary(const wk_tensor *a, const wk_tensor *b, wk_binary_op op) {
    if ((unsigned)op >= WK_BINARY_COUNT) { wk__err(WK_ERR_ARG, "wk_binary", "invalid binary op %d", (int)op); return NULL; }
    const char *name = wk__binary_names[op];
    wk_layout la, lb;
    wk_tensor *r = prepare2(name, a, b, a ? a->dtype : WK_F32, &la, &lb);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(a)->binary(wk__dev(a), op, a->storage->buf, &la, b->storage->buf, &lb, r->storage->buf,
                                       a->dtype));
}

wk_tensor *wk__scalar_like(const char *op, const wk_tensor *t, double s) {
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), t->dtype, NULL, 0);
    if (!r) return NULL;
    return finish(r, wk__be(t)->fill(wk__dev(t), r->storage->buf, &r->layout, t->dtype, s));
}

wk_tensor *wk_cmp(const wk_tensor *a, const wk_tensor *b, wk_cmp_op op) {
    if ((unsigned)op >= WK_CMP_COUNT) { wk__err(WK_ERR_ARG, "wk_cmp", "invalid comparison op %d", (int)op); return NULL; }
    const char *name = wk__cmp_names[op];
    wk_layout la, lb;
    wk_tensor *r = prepare2(name, a, b, WK_U8, &la, &lb);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(a)->cmp(wk__dev(a), op, a->storage->buf, &la, b->storage->buf, &lb, r->storage->buf, a->dtype));
}

wk_tensor *wk_cmp_scalar(const wk_tensor *a, double s, wk_cmp_op op) {
    if (!wk__check_in("wk_cmp_scalar", a)) return NULL;
    wk_tensor *b = wk__scalar_like("wk_cmp_scalar", a, s);
    if (!b) return NULL;
    wk_tensor *r = wk_cmp(a, b, op);
    wk_tensor_free(b);
    return r;
}

wk_tensor *wk__prim_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b) {
    const char *op = "wk_where";
    if (!wk__check_in(op, cond) || !wk__check_same(op, a, b)) return NULL;
    if (wk__dev(cond) != wk__dev(a)) {
        wk__err(WK_ERR_DEVICE, op, "device mismatch: cond on %s, values on %s", wk__dev(cond)->name, wk__dev(a)->name);
        return NULL;
    }
    if (!wk_dtype_is_int(cond->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "condition must have an integer dtype, got %s", wk_dtype_name(cond->dtype));
        return NULL;
    }
    int64_t s1[WK_MAX_RANK], s2[WK_MAX_RANK];
    int r1, r2;
    if (wk__broadcast_shapes(op, a->layout.shape, a->layout.rank, b->layout.shape, b->layout.rank, s1, &r1) != WK_OK ||
        wk__broadcast_shapes(op, cond->layout.shape, cond->layout.rank, s1, r1, s2, &r2) != WK_OK)
        return NULL;
    wk_layout lc, la, lb;
    if (wk__layout_broadcast(op, &cond->layout, s2, r2, &lc) != WK_OK ||
        wk__layout_broadcast(op, &a->layout, s2, r2, &la) != WK_OK ||
        wk__layout_broadcast(op, &b->layout, s2, r2, &lb) != WK_OK)
        return NULL;
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(a), a->dtype, s2, r2);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(a)->where(wk__dev(a), cond->storage->buf, &lc, cond->dtype, a->storage->buf, &la,
                                      b->storage->buf, &lb, r->storage->buf, a->dtype));
}
