/* The CUDA backend's convolution entry (cuda_conv.c), with exactly the
 * signature of the backend table's conv (src/tensor/backend.h). Only built with WICK_HAVE_CUDA. */
#ifndef WICK_CUDA_CONV_H
#define WICK_CUDA_CONV_H
#include "tensor/backend.h"

#ifdef WICK_HAVE_CUDA
wk_status wk__cuda_conv(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                        void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_args *a);
#endif

#endif
