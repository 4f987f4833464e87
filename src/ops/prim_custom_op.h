/* The untracked custom op (custom_op.c): checks, the device's callback, the
 * output; nothing recorded. fn names the public entry for errors. The
 * public wk_custom_op1/2/3 (src/autograd/tracked_custom_op.c) record. */
#ifndef WICK_CORE_PRIM_CUSTOM_OP_H
#define WICK_CORE_PRIM_CUSTOM_OP_H
#include "tensor/tensor.h"
#include "wick/custom_op.h"

wk_tensor *wk__prim_custom_op(const char *fn, const wk_custom_op *op, int nin, const wk_tensor *const *in);

#endif
