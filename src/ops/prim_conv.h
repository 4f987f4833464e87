/* The untracked convolution (src/ops/conv.c): every argument check, the
 * output shape and one backend call; nothing recorded. The public wk_conv*
 * ops (src/autograd/tracked_conv.c) call it and record when x or w is
 * tracked. */
#ifndef WICK_CORE_PRIM_CONV_H
#define WICK_CORE_PRIM_CONV_H
#include "tensor/tensor.h"

/* op: the public name (errors name it); spatial 1 or 2; norm (NULL: not
 * wanted) gets the normalized parameters (stride / dilation / groups >= 1)
 * that the backend ran with. */
wk_tensor *wk__prim_conv(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p, int spatial,
                         bool transposed, wk_conv_params *norm);

#endif
