/* The untracked block conversions (src/ops/quantize.c); the public ones are
 * src/autograd/tracked_quantize.c. */
#ifndef WICK_CORE_PRIM_QUANTIZE_H
#define WICK_CORE_PRIM_QUANTIZE_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_quantize(const wk_tensor *t, wk_dtype qdt);
wk_tensor *wk__prim_dequantize(const wk_tensor *w, wk_dtype dt);
/* With an importance matrix (src/ops/quantize_imatrix.c). */
wk_tensor *wk__prim_quantize_imatrix(const wk_tensor *t, wk_dtype qdt, const float *imatrix, int64_t n);

#endif
