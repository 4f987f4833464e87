/* gemm_kernel.inc instantiated for the generic target (see CMakeLists.txt for
 * the flags; called only after a run-time cpuid check). */
#include <stdlib.h>
#include "cpu/gemm.h"
#include "cpu/threadpool.h"

#define GEMM_T float
#define GEMM_MR 4
#define GEMM_NR 16
#define GEMM_NAME(x) gemm_f32_generic_##x
#include "cpu/gemm_kernel.inc"
bool wk__gemm_f32_generic(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                       int64_t brs, int64_t bcs, float *c) {
    return gemm_f32_generic_run(m, n, k, a, ars, acs, b, brs, bcs, c);
}
#undef GEMM_T
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_NAME
#undef GEMM_KC
#undef GEMM_NC
#undef GEMM_MC

#define GEMM_T double
#define GEMM_MR 4
#define GEMM_NR 8
#define GEMM_NAME(x) gemm_f64_generic_##x
#include "cpu/gemm_kernel.inc"
bool wk__gemm_f64_generic(int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs, const double *b,
                       int64_t brs, int64_t bcs, double *c) {
    return gemm_f64_generic_run(m, n, k, a, ars, acs, b, brs, bcs, c);
}
