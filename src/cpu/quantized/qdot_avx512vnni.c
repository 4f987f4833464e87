/* AVX512-VNNI quantized dot kernels: vpdpbusd on 256-bit registers (the
 * same algorithm as qdot_avx2.c with one instruction per byte product). */
#define QD_VNNI 1
#define QD_NAME(x) x##_avx512vnni
#include "cpu/quantized/qdot_simd.inc"
