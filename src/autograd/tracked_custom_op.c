/* The public out-of-place custom ops: the untracked run
 * (wk__prim_custom_op, ops/custom_op.c) and, when an input is tracked, one
 * node whose rule is the op's stored backward callback (rules_custom.c).
 * The in-place forms record nothing and stay in core. */
#include "autograd/record.h"
#include "ops/prim_custom_op.h"

static wk_tensor *tracked(const char *fn, const wk_custom_op *op, int nin, const wk_tensor *const *in) {
    wk_tensor *out = wk__prim_custom_op(fn, op, nin, in);
    if (out && wk__ag_onn((wk_tensor *const *)in, nin)) out = wk__ag_custom(out, op, nin, in);
    return out;
}

wk_tensor *wk_custom_op1(const wk_custom_op *op, const wk_tensor *a) {
    const wk_tensor *in[1] = {a};
    return tracked("wk_custom_op1", op, 1, in);
}
wk_tensor *wk_custom_op2(const wk_custom_op *op, const wk_tensor *a, const wk_tensor *b) {
    const wk_tensor *in[2] = {a, b};
    return tracked("wk_custom_op2", op, 2, in);
}
wk_tensor *wk_custom_op3(const wk_custom_op *op, const wk_tensor *a, const wk_tensor *b, const wk_tensor *c) {
    const wk_tensor *in[3] = {a, b, c};
    return tracked("wk_custom_op3", op, 3, in);
}
