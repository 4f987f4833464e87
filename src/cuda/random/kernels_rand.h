/* Launchers of the CUDA random-number kernels (src/cuda/random/kernels_rand.cu):
 * uniform and normal numbers for every float dtype (f32, f64, f16, bf16,
 * f8e4m3) into a contiguous buffer, from a counter-based generator
 * (Philox4x32-10) keyed by the device's seed.
 *
 * Stream model: one call with (seed, offset) uses the Philox counters
 * offset .. offset + wk__cu_rand_counters(n, dt, normal) - 1 (64-bit,
 * wrapping); element i takes its bits from counter offset + i / per
 * (per = 4 values per counter for f32 and narrower, 2 for f64), so the
 * result depends only on (seed, offset, i) - not on the grid or the launch
 * shape. The caller advances its offset by wk__cu_rand_counters after each
 * call, so consecutive calls never reuse bits; n split at a multiple of
 * per gives exactly the values of one call over the whole n.
 *
 * Both launchers queue one kernel on the stream and return at once: 0, or
 * the cudaError_t of the launch (as int); n == 0 queues nothing and
 * returns 0; n < 0, dst == NULL (with n > 0) or a non-float dtype returns
 * cudaErrorInvalidValue. The caller validates the bounds as wk_rand /
 * wk_randn do (finite, lo <= hi, std >= 0). */
#ifndef WICK_CUDA_KERNELS_RAND_H
#define WICK_CUDA_KERNELS_RAND_H
#include <stdbool.h>
#include <stdint.h>
#include "cuda/cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[0..n) uniform in [lo, hi) (as wk__cpu_rand_uniform: a value that
 * rounds to >= hi in dt is replaced by lo rounded to dt; lo == hi gives lo) */
int wk__cu_rand_uniform(wk_cu_stream s, void *dst, int64_t n, wk_dtype dt, double lo, double hi, uint64_t seed,
                        uint64_t offset);
/* dst[0..n) normal(mean, std): Box-Muller, even elements the cosine and odd
 * elements the sine output of one pair (as wk__cpu_rand_normal) */
int wk__cu_rand_normal(wk_cu_stream s, void *dst, int64_t n, wk_dtype dt, double mean, double std, uint64_t seed,
                       uint64_t offset);
/* Philox counters one call of n elements of dt uses = how far the caller
 * advances offset: ceil(n / per); the same for uniform and normal; 0 for
 * n <= 0 or a non-float dt. */
uint64_t wk__cu_rand_counters(int64_t n, wk_dtype dt, bool normal);

#ifdef __cplusplus
}
#endif
#endif
