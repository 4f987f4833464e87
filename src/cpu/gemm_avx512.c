/* The portable GEMM compiled for the avx512 target (flags in CMakeLists.txt;
 * called only after a run-time cpuid check). Register block: f32 6x32, f64 6x16. */
#define GEMM_ISA avx512
#define GEMM_MR_F32 6
#define GEMM_NR_F32 32
#define GEMM_MR_F64 6
#define GEMM_NR_F64 16
#include "cpu/gemm_instances.inc"
