/* The untracked matrix products (src/ops/matmul.c); the public tracked
 * ones are src/autograd/tracked_matmul.c. */
#ifndef WICK_CORE_PRIM_MATMUL_H
#define WICK_CORE_PRIM_MATMUL_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_matmul(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk__prim_broadcast_matmul(const wk_tensor *a, const wk_tensor *b);

#endif
