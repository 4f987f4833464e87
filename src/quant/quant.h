/* Per-block-dtype traits: the portable reference row converters between f32
 * and a GGML block dtype, and the partner dtype a quantized dot product pairs
 * it with (ggml's vec_dot_type; the CPU's qmatmul picks the same partners in
 * cpu/quantized/qact.c). One table (quant_traits.c), read by the untracked
 * quantize ops (src/ops/quantize.c) and the CPU backend (cpu/quantized/:
 * cpu_quant.c quantizes through from_f32, dequant_rows.c swaps SIMD rows in
 * for to_f32).
 *
 * A "row" here is n consecutive elements, n a multiple of the dtype's
 * block_elems: n / block_elems blocks of block_bytes each, packed. */
#ifndef WICK_QUANT_QUANT_H
#define WICK_QUANT_QUANT_H
#include <stdint.h>
#include "base/error.h"

typedef void (*wk__q_to_f32_fn)(const void *src, float *dst, int64_t n);
typedef void (*wk__q_from_f32_fn)(const float *src, void *dst, int64_t n);

typedef struct {
    wk_dtype dtype;
    uint32_t block_elems, block_bytes;
    wk__q_to_f32_fn to_f32;     /* never NULL for a block dtype */
    wk__q_from_f32_fn from_f32; /* every block dtype has one; callers still check NULL */
    wk_dtype vec_dot_type;      /* the activations' block dtype in a dot product */
} wk__quant_traits;

/* The traits of a block dtype; NULL for an element or invalid dtype. */
const wk__quant_traits *wk__quant_traits_of(wk_dtype dt);

/* Quantize / dequantize one row of n elements. Pure (records nothing):
 * WK_ERR_DTYPE when dt is not a block dtype, WK_ERR_NOT_COMPILED when dt has
 * no quantizer, WK_ERR_SHAPE when n is negative or not whole blocks. */
wk_status wk__quantize_row(wk_dtype dt, const float *src, void *dst, int64_t n);
wk_status wk__dequantize_row(wk_dtype dt, const void *src, float *dst, int64_t n);

/* Row quantizers of the 32-element types (quantize_simple.c): ggml's
 * reference algorithms, byte-exact with gguf-py 0.19.0 where it has them. */
void wk__quantize_row_q4_0(const float *x, void *y, int64_t n);
void wk__quantize_row_q4_1(const float *x, void *y, int64_t n);
void wk__quantize_row_q5_0(const float *x, void *y, int64_t n);
void wk__quantize_row_q5_1(const float *x, void *y, int64_t n);
void wk__quantize_row_q8_0(const float *x, void *y, int64_t n);
void wk__quantize_row_q8_1(const float *x, void *y, int64_t n);
void wk__quantize_row_iq4_nl(const float *x, void *y, int64_t n);

/* Row quantizers of the 256-element types and IQ4_XS: quantize_k.h. */

#endif
