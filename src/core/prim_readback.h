/* The untracked copies, casts, moves and in-place copies (src/core/readback.c):
 * the public ops' bodies, argument checks included, without recording. The
 * public tracked forms are src/autograd/tracked_readback.c. */
#ifndef WICK_CORE_PRIM_READBACK_H
#define WICK_CORE_PRIM_READBACK_H
#include "core/tensor.h"

wk_tensor *wk__prim_copy(const wk_tensor *t);
wk_tensor *wk__prim_contiguous(const wk_tensor *t);
wk_tensor *wk__prim_to_dtype(const wk_tensor *t, wk_dtype dt);
wk_tensor *wk__prim_to_device(const wk_tensor *t, wk_device *dev);
wk_status  wk__prim_copy_(wk_tensor *dst, const wk_tensor *src);
wk_status  wk__prim_slice_set(wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset);

#endif
