/* The untracked vector products and norms (src/ops/linalg.c); the public
 * ones record in src/autograd/tracked_linalg.c. */
#ifndef WICK_CORE_PRIM_LINALG_H
#define WICK_CORE_PRIM_LINALG_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_dot(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk__prim_mv(const wk_tensor *m, const wk_tensor *v);
wk_tensor *wk__prim_norm(const wk_tensor *t, double p, const int *dims, int ndims, bool keepdim);

#endif
