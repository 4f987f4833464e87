/* The CPU backend's block-dtype entries (cpu_quant.c). */
#ifndef WICK_CPU_QUANT_H
#define WICK_CPU_QUANT_H
#include "tensor/backend.h"

/* w (wdt, a valid block layout) -> dst contiguous in ddt (f32, f16, bf16). */
wk_status wk__cpu_dequantize(wk_device *dev, const void *w, const wk_layout *lw, wk_dtype wdt, void *dst,
                             wk_dtype ddt);
/* x (sdt: f32, f16, bf16, f64; any layout, last dim whole blocks of qdt)
 * -> dst contiguous in qdt. */
wk_status wk__cpu_quantize(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype sdt, void *dst,
                           wk_dtype qdt);

#endif
