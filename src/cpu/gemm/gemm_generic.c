/* The portable GEMM compiled for the generic target (flags in CMakeLists.txt;
 * called only after a run-time cpuid check). Register block: f32 4x16, f64 4x8. */
#define GEMM_ISA generic
#define GEMM_MR_F32 4
#define GEMM_NR_F32 16
#define GEMM_MR_F64 4
#define GEMM_NR_F64 8
#include "cpu/gemm/gemm_instances.inc"
