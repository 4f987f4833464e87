/* Row quantizers with an importance matrix (quantize_imatrix.c): what
 * ggml_quantize_chunk writes when it is given `imatrix`, byte for byte.
 *
 * An importance matrix holds one non-negative weight per column of a weight
 * matrix (the mean square of the activations that column multiplied, as
 * llama.cpp's llama-imatrix measures it). The quantizers then fit each block
 * to minimise the error weighted by qw[j] * sqrt(sigma2 + x[j]^2) rather
 * than the unweighted error the plain ones use.
 *
 * Which types use it (as in ggml): q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K
 * q6_K iq4_nl iq4_xs. q8_0, q8_1 and q8_K have one fit only, so the matrix
 * changes nothing and the plain quantizer runs. */
#ifndef WICK_QUANT_QUANTIZE_IMATRIX_H
#define WICK_QUANT_QUANTIZE_IMATRIX_H
#include <stdbool.h>
#include <stdint.h>
#include "base/error.h"

/* True when dt's quantizer reads an importance matrix. */
bool wk__quant_uses_imatrix(wk_dtype dt);

/* Quantize one row of n elements (whole blocks of dt) into dst with the
 * importance weights qw[0..n-1] (one per element of the row; NULL: the plain
 * quantizer). Pure, no allocation. Errors as wk__quantize_row (quant.h);
 * the weights are not checked here (wk_quantize_imatrix checks them). */
wk_status wk__quantize_row_imatrix(wk_dtype dt, const float *src, void *dst, int64_t n, const float *qw);

#endif
