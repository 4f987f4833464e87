/* The public block conversions (their bodies: src/core/quantize.c). */
#include "autograd/record.h"
#include "core/prim_quantize.h"

wk_tensor *wk_quantize(const wk_tensor *t, wk_dtype qdt) { return wk__prim_quantize(t, qdt); }

wk_tensor *wk_dequantize(const wk_tensor *w, wk_dtype dt) { return wk__prim_dequantize(w, dt); }
