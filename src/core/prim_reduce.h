/* The untracked reduction (src/core/reduce.c); the public tracked one is
 * src/autograd/tracked_reduce.c. */
#ifndef WICK_CORE_PRIM_REDUCE_H
#define WICK_CORE_PRIM_REDUCE_H
#include "core/tensor.h"

wk_tensor *wk__prim_reduce(const wk_tensor *t, wk_reduce_op op, const int *dims, int ndims, bool keepdim);
/* The op's public name ("wk_sum"), for errors; "wk_reduce" for an invalid op. */
const char *wk__reduce_name(wk_reduce_op op);

#endif
