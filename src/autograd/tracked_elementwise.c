/* The public elementwise ops that record (their untracked bodies:
 * src/ops/elementwise.c, ops/prim_elementwise.h). */
#include "autograd/record.h"
#include "ops/prim_elementwise.h"

wk_tensor *wk_unary(const wk_tensor *t, wk_unary_op op) {
    if (!wk__ag_on1(t)) return wk__prim_unary(t, op);
    return wk__ag_unary(wk__prim_unary(t, op), t, op);
}

wk_tensor *wk_affine(const wk_tensor *t, double mul, double add) {
    if (!wk__ag_on1(t)) return wk__prim_affine(t, mul, add);
    return wk__ag_affine(wk__prim_affine(t, mul, add), t, mul);
}

wk_tensor *wk_powf(const wk_tensor *t, double e) {
    if (!wk__ag_on1(t)) return wk__prim_powf(t, e);
    return wk__ag_powf(wk__prim_powf(t, e), t, e);
}

wk_tensor *wk_elu(const wk_tensor *t, double alpha) {
    if (!wk__ag_on1(t)) return wk__prim_elu(t, alpha);
    return wk__ag_elu(wk__prim_elu(t, alpha), t, alpha);
}

wk_tensor *wk_clamp(const wk_tensor *t, double lo, double hi) {
    if (!wk__ag_on1(t)) return wk__prim_clamp(t, lo, hi);
    return wk__ag_clamp(wk__prim_clamp(t, lo, hi), t, lo, hi);
}

wk_tensor *wk_binary(const wk_tensor *a, const wk_tensor *b, wk_binary_op op) {
    if (!wk__ag_on2(a, b)) return wk__prim_binary(a, b, op);
    return wk__ag_binary(wk__prim_binary(a, b, op), a, b, op);
}

wk_tensor *wk_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b) {
    if (!wk__ag_on2(a, b)) return wk__prim_where(cond, a, b);
    return wk__ag_where(wk__prim_where(cond, a, b), cond, a, b);
}
