/* The untracked cat (src/ops/join.c): every argument check, one copy per
 * input; nothing recorded. The public wk_cat (src/autograd/tracked_join.c)
 * records when an input is tracked. */
#ifndef WICK_CORE_PRIM_JOIN_H
#define WICK_CORE_PRIM_JOIN_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_cat(wk_tensor *const *ts, int n, int dim);

#endif
