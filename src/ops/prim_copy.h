/* The untracked copies (declared in tensor/copy.h, included here), casts
 * and moves (convert.c) and in-place copies (inplace.c): the public ops' bodies, argument checks
 * included, without recording. The public tracked forms are
 * src/autograd/tracked_copy.c. */
#ifndef WICK_OPS_PRIM_COPY_H
#define WICK_OPS_PRIM_COPY_H
#include "tensor/tensor.h"
#include "tensor/copy.h"

wk_tensor *wk__prim_to_dtype(const wk_tensor *t, wk_dtype dt);
wk_tensor *wk__prim_to_device(const wk_tensor *t, wk_device *dev);
wk_status  wk__prim_copy_(wk_tensor *dst, const wk_tensor *src);
wk_status  wk__prim_slice_set(wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset);

#endif /* WICK_OPS_PRIM_COPY_H */
