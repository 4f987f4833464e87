/* The untracked quantized-weight product (src/ops/qmatmul.c); the public
 * one is src/autograd/tracked_qmatmul.c. */
#ifndef WICK_CORE_PRIM_QMATMUL_H
#define WICK_CORE_PRIM_QMATMUL_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_qmatmul(const wk_tensor *x, const wk_tensor *w);

#endif
