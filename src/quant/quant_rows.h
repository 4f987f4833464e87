/* The fast row converters and the scalar references they must match bit for
 * bit (tests/test_quant_simd.c compares them at every SIMD level).
 *
 * Quantizers (quantize_simple.c): wk__quantize_row_<t> in quant.h is the
 * fast one (SSE2, the x86-64 baseline); wk__quantize_row_<t>_ref below is
 * ggml's reference loop, kept as the definition of the bytes.
 *
 * Dequantizers (dequant_rows.c): wk__dequant_row_<t>_ref loops the
 * per-block reference of dequant_block.h; it is the traits table's to_f32.
 * The CPU backend's SIMD rows (cpu/quantized/dequant_rows.h) give the same
 * bits. n is whole blocks. */
#ifndef WICK_QUANT_QUANT_ROWS_H
#define WICK_QUANT_QUANT_ROWS_H
#include <stdint.h>

void wk__quantize_row_q4_0_ref(const float *x, void *y, int64_t n);
void wk__quantize_row_q4_1_ref(const float *x, void *y, int64_t n);
void wk__quantize_row_q5_0_ref(const float *x, void *y, int64_t n);
void wk__quantize_row_q5_1_ref(const float *x, void *y, int64_t n);
void wk__quantize_row_q8_0_ref(const float *x, void *y, int64_t n);
void wk__quantize_row_q8_1_ref(const float *x, void *y, int64_t n);
void wk__quantize_row_iq4_nl_ref(const float *x, void *y, int64_t n);

#define WK__DQ_ROWS_DECLARE(t)                                                  \
    void wk__dequant_row_##t##_ref(const void *src, float *dst, int64_t n);
WK__DQ_ROWS_DECLARE(q4_0)
WK__DQ_ROWS_DECLARE(q4_1)
WK__DQ_ROWS_DECLARE(q5_0)
WK__DQ_ROWS_DECLARE(q5_1)
WK__DQ_ROWS_DECLARE(q8_0)
WK__DQ_ROWS_DECLARE(q4_K)
WK__DQ_ROWS_DECLARE(q5_K)
WK__DQ_ROWS_DECLARE(q6_K)
#undef WK__DQ_ROWS_DECLARE

#endif
