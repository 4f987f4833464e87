/* The untracked pooling and resampling ops (src/ops/pool.c): the public
 * ops' parameters, every argument check, one backend call; nothing
 * recorded. The public wk_*_pool2d / wk_upsample_* (src/autograd/
 * tracked_pool.c) call them and record when x is tracked. */
#ifndef WICK_CORE_PRIM_POOL_H
#define WICK_CORE_PRIM_POOL_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_avg_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                               int64_t pw, bool count_include_pad);
wk_tensor *wk__prim_max_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                               int64_t pw);
wk_tensor *wk__prim_upsample_nearest1d(const wk_tensor *x, int64_t out_l);
wk_tensor *wk__prim_upsample_nearest2d(const wk_tensor *x, int64_t out_h, int64_t out_w);
wk_tensor *wk__prim_upsample_bilinear2d(const wk_tensor *x, int64_t out_h, int64_t out_w, bool align_corners);

#endif
