/* The CPU backend's row dequantizers: for the common weight types the SIMD
 * rows (dequant_rows_avx2.c) when the vmath level allows, else the
 * portable reference row of the traits table (quant/quant.h). Every row
 * gives the reference's bits (tests/test_quant_simd.c). */
#ifndef WICK_CPU_QUANTIZED_DEQUANT_ROWS_H
#define WICK_CPU_QUANTIZED_DEQUANT_ROWS_H
#include <stdint.h>
#include "quant/quant.h"

/* The row dequantizer of block dtype dt for the current vmath level; NULL
 * when dt is not a block dtype. Asked per call: the level may change. */
wk__q_to_f32_fn wk__cpu_dequant_row(wk_dtype dt);

#define WK__CPU_DQ_DECLARE(t) void wk__dequant_row_##t##_avx2(const void *src, float *dst, int64_t n);
WK__CPU_DQ_DECLARE(q4_0)
WK__CPU_DQ_DECLARE(q4_1)
WK__CPU_DQ_DECLARE(q5_0)
WK__CPU_DQ_DECLARE(q5_1)
WK__CPU_DQ_DECLARE(q8_0)
WK__CPU_DQ_DECLARE(q4_K)
WK__CPU_DQ_DECLARE(q5_K)
WK__CPU_DQ_DECLARE(q6_K)
#undef WK__CPU_DQ_DECLARE

#endif
