/* The CUDA backend's convolution entries (cuda_conv.c), with exactly the
 * signatures of the backend table's conv1d / conv2d / conv_transpose1d /
 * conv_transpose2d (src/backend.h). Only built with WICK_HAVE_CUDA. */
#ifndef WICK_CUDA_CONV_H
#define WICK_CUDA_CONV_H
#include "backend.h"

#ifdef WICK_HAVE_CUDA
wk_status wk__cuda_conv1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                          void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p);
wk_status wk__cuda_conv2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                          void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p);
wk_status wk__cuda_conv_transpose1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                    const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                    const wk_conv_params *p);
wk_status wk__cuda_conv_transpose2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                    const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                    const wk_conv_params *p);
#endif

#endif
