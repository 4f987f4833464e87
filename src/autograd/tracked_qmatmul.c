/* The public quantized-weight product (its body: src/core/qmatmul.c). */
#include "autograd/record.h"
#include "core/prim_qmatmul.h"

wk_tensor *wk_qmatmul(const wk_tensor *x, const wk_tensor *w) { return wk__prim_qmatmul(x, w); }
