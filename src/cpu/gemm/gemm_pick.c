/* The run-time choice of GEMM kernels (one place for matmul and conv). */
#include "cpu/cpu_backend.h"
#include "cpu/gemm/gemm.h"
#include "cpu/gemm/gemv_half.h"
#include <string.h>

wk_gemm_kernels wk__gemm_kernels(void) {
    const char *isa = wk_cpu_isa();
    if (strcmp(isa, "avx512") == 0) {
        bool dot = wk__cpu_has_avx512bf16();
        return (wk_gemm_kernels){wk__gemm_f32_avx512, wk__gemm_f64_avx512, wk__gemv_f32_avx512, wk__gemv_f64_avx512,
                                 dot, &wk__ukr_f16_avx512,
                                 dot ? wk__gemm_bf16_avx512bf16_ukr() : &wk__ukr_bf16_avx512,
                                 wk__gemv_half_rows_avx512, wk__gemv_half_dot_avx512};
    }
    if (strcmp(isa, "avx2") == 0)
        return (wk_gemm_kernels){wk__gemm_f32_avx2, wk__gemm_f64_avx2, wk__gemv_f32_avx2, wk__gemv_f64_avx2, false,
                                 &wk__ukr_f16_avx2, &wk__ukr_bf16_avx2, wk__gemv_half_rows_avx2,
                                 wk__gemv_half_dot_avx2};
    return (wk_gemm_kernels){wk__gemm_f32_generic, wk__gemm_f64_generic, wk__gemv_f32_generic, wk__gemv_f64_generic,
                             false, &wk__ukr_f16_generic, &wk__ukr_bf16_generic, NULL, NULL};
}
