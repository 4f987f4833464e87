/* Elementwise ops made of the recorded public ones (their parts record):
 * the one-op wrappers wick.h declares and wk_binary_scalar. */
#include "autograd/node.h"
#include "ops/prim_elementwise.h"

/* wk_exp(t), ...: one per list line, as declared by wick.h */
#define UNARY_FN(e, n, ...) \
    wk_tensor *wk_##n(const wk_tensor *t) { return wk_unary(t, e); }
WK_UNARY_OPS(UNARY_FN)

/* wk_add(a, b), ...: one per list line, as declared by wick.h */
#define BINARY_FN(e, n, ...) \
    wk_tensor *wk_##n(const wk_tensor *a, const wk_tensor *b) { return wk_binary(a, b, e); }
WK_BINARY_OPS(BINARY_FN)

wk_tensor *wk_binary_scalar(const wk_tensor *a, double s, wk_binary_op op) {
    if (!wk__check_in("wk_binary_scalar", a)) return NULL;
    wk_tensor *b = wk__scalar_like("wk_binary_scalar", a, s);
    if (!b) return NULL;
    wk_tensor *r = wk_binary(a, b, op);
    wk_tensor_free(b);
    return r;
}
