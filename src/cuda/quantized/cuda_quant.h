/* The CUDA backend's block-quantized entries (cuda_quant.c): dequantize and
 * qmatmul for the table in cuda_backend.c, and the word views through which
 * the generic copy / index / transfer entries move whole block rows. */
#ifndef WICK_CUDA_QUANT_H
#define WICK_CUDA_QUANT_H
#include "cuda/runtime/cuda_device.h"
#include "cuda/quantized/cuda_quant_words.h"

#ifdef WICK_HAVE_CUDA
wk_status wk__cuda_dequantize(wk_device *dev, const void *w, const wk_layout *lw, wk_dtype wdt, void *dst,
                              wk_dtype ddt);
wk_status wk__cuda_qmatmul(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, const void *w,
                           const wk_layout *lw, wk_dtype wdt, void *dst);
#endif

#endif
