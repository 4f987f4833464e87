/* The untracked elementwise ops (src/ops/elementwise.c): the public ops'
 * bodies, argument checks included, without recording. The public tracked
 * ops are src/autograd/tracked_elementwise.c; library code that needs one
 * of these values untracked calls the prim. */
#ifndef WICK_CORE_PRIM_ELEMENTWISE_H
#define WICK_CORE_PRIM_ELEMENTWISE_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_unary(const wk_tensor *t, wk_unary_op op);
wk_tensor *wk__prim_affine(const wk_tensor *t, double mul, double add);
wk_tensor *wk__prim_powf(const wk_tensor *t, double e);
wk_tensor *wk__prim_elu(const wk_tensor *t, double alpha);
wk_tensor *wk__prim_clamp(const wk_tensor *t, double lo, double hi);
wk_tensor *wk__prim_binary(const wk_tensor *a, const wk_tensor *b, wk_binary_op op);
wk_tensor *wk__prim_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b);
/* A rank-0 tensor holding s in t's dtype on t's device (errors name op):
 * the right-hand side of wk_binary_scalar / wk_cmp_scalar. */
wk_tensor *wk__scalar_like(const char *op, const wk_tensor *t, double s);

#endif
