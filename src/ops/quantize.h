/* Block-dtype conversions of wk_to_dtype (quantize.c; convert.c calls it). */
#ifndef WICK_CORE_QUANTIZE_H
#define WICK_CORE_QUANTIZE_H
#include "tensor/tensor.h"

/* wk_to_dtype when t's dtype or dt is a block dtype (not both the same):
 * element -> block quantizes, block -> element dequantizes, block -> other
 * block goes through f32. Errors name op. */
wk_tensor *wk__to_dtype_blocks(const char *op, const wk_tensor *t, wk_dtype dt);

#endif
