/* The public convolutions: the untracked op (src/ops/conv.c), recorded when
 * x or w is tracked (src/autograd/rules_conv.c); the body makes its output
 * with one backend call and records nothing itself. */
#include "autograd/record.h"
#include "ops/prim_conv.h"

static wk_tensor *conv_run(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *pin, int sp,
                           bool transposed) {
    wk_conv_params p;
    if (!wk__ag_on2(x, w)) return wk__prim_conv(op, x, w, pin, sp, transposed, &p);
    wk_tensor *r = wk__prim_conv(op, x, w, pin, sp, transposed, &p);
    return wk__ag_conv(r, x, w, &p, sp, transposed, op);
}

wk_tensor *wk_conv1d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p) {
    return conv_run("wk_conv1d", x, w, p, 1, false);
}
wk_tensor *wk_conv2d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p) {
    return conv_run("wk_conv2d", x, w, p, 2, false);
}
wk_tensor *wk_conv_transpose1d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p) {
    return conv_run("wk_conv_transpose1d", x, w, p, 1, true);
}
wk_tensor *wk_conv_transpose2d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p) {
    return conv_run("wk_conv_transpose2d", x, w, p, 2, true);
}
