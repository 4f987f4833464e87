/* AVX-512 f16 / bf16 weight dots for wk_qmatmul's decode path (M < 16).
 * Weights are widened in zmm registers (F16C vcvtph2ps, bf16 by a 16-bit
 * shift) and multiplied against f32 x with FMA: nothing is widened to memory
 * and every weight byte is read once. */
#ifndef WICK_CPU_QMATMUL_HALF_H
#define WICK_CPU_QMATMUL_HALF_H
#include <stdbool.h>
#include <stdint.h>

/* wk_hdot_fn (qdot.h): one weight row with up to WK_QDOT_MR rows of x. */
void wk__hdot_avx512(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                     int64_t ldo);
#endif
