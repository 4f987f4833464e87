/* The portable GEMM compiled for the avx2 target (flags in CMakeLists.txt;
 * called only after a run-time cpuid check). Register block: f32 6x16, f64 6x8. */
#define GEMM_ISA avx2
#define GEMM_MR_F32 6
#define GEMM_NR_F32 16
#define GEMM_MR_F64 6
#define GEMM_NR_F64 8
#include "cpu/gemm_instances.inc"
