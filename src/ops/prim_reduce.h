/* The untracked reduction (src/ops/reduce.c); the public tracked one is
 * src/autograd/tracked_reduce.c. */
#ifndef WICK_CORE_PRIM_REDUCE_H
#define WICK_CORE_PRIM_REDUCE_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_reduce(const wk_tensor *t, wk_reduce_op op, const int *dims, int ndims, bool keepdim);
/* The op's public name ("wk_sum"), for errors; "wk_reduce" for an invalid op. */

#endif
