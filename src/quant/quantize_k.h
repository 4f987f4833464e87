/* Row quantizers f32 -> GGML blocks for the 256-element super-block types
 * (q2_K q3_K q4_K q5_K q6_K q8_K iq4_xs). Each writes n / 256 blocks of the
 * dtype's struct (base/blocks.h) to y; n must be a positive multiple of 256
 * (the callers, wk_quantize and the traits table, check shapes first).
 *
 * They follow ggml's reference quantizers (what ggml_quantize_chunk runs
 * without an importance matrix, and what llama-quantize writes) step for
 * step, float operation for float operation, so the bytes equal ggml's for
 * finite input: tools/quant_vs_ggml.c checks that against libggml-base.
 * Block scales are f16: inputs whose block scale overflows f16 (|x| beyond
 * about 65504 times the type's largest level) get an infinite scale there,
 * as in ggml; q8_K's scale is f32. No allocation; thread-safe (pure). */
#ifndef WICK_QUANT_QUANTIZE_K_H
#define WICK_QUANT_QUANTIZE_K_H
#include <stdint.h>

void wk__quantize_row_q2_K(const float *x, void *y, int64_t n);
void wk__quantize_row_q3_K(const float *x, void *y, int64_t n);
void wk__quantize_row_q4_K(const float *x, void *y, int64_t n);
void wk__quantize_row_q5_K(const float *x, void *y, int64_t n);
void wk__quantize_row_q6_K(const float *x, void *y, int64_t n);
/* q8_K: the activation partner of the K types; bsums[j] = sum of qs[16j..16j+15]
 * (zero for an all-zero block, where ggml leaves them unwritten). */
void wk__quantize_row_q8_K(const float *x, void *y, int64_t n);
void wk__quantize_row_iq4_xs(const float *x, void *y, int64_t n);

#endif
