/* The packed GEMM for AVX-512 (flags in CMakeLists.txt; called only after a
 * run-time cpuid check). The loops and packing are the portable ones of
 * gemm_kernel.inc; the micro-kernels here keep the whole C tile in twelve
 * zmm accumulators (6 rows x 2 vectors), enough independent FMAs to cover
 * the FMA latency on two 512-bit pipes. */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

/* C[mr x nr] (row stride ldc) = or += the 6 x (2 vectors) product of the
 * packed strips: ap is [kc][6], bp is [kc][2*VL]. */
#define MICRO_BODY(T, V, VL, LOAD, STORE, SET1, FMA, ADD, ZERO)                                  \
    V c0a = ZERO(), c0b = ZERO(), c1a = ZERO(), c1b = ZERO(), c2a = ZERO(), c2b = ZERO();       \
    V c3a = ZERO(), c3b = ZERO(), c4a = ZERO(), c4b = ZERO(), c5a = ZERO(), c5b = ZERO();       \
    for (int64_t p = 0; p < kc; p++) {                                                          \
        V b0 = LOAD(bp), b1 = LOAD(bp + VL), a;                                                 \
        a = SET1(ap[0]); c0a = FMA(a, b0, c0a); c0b = FMA(a, b1, c0b);                          \
        a = SET1(ap[1]); c1a = FMA(a, b0, c1a); c1b = FMA(a, b1, c1b);                          \
        a = SET1(ap[2]); c2a = FMA(a, b0, c2a); c2b = FMA(a, b1, c2b);                          \
        a = SET1(ap[3]); c3a = FMA(a, b0, c3a); c3b = FMA(a, b1, c3b);                          \
        a = SET1(ap[4]); c4a = FMA(a, b0, c4a); c4b = FMA(a, b1, c4b);                          \
        a = SET1(ap[5]); c5a = FMA(a, b0, c5a); c5b = FMA(a, b1, c5b);                          \
        ap += 6;                                                                                \
        bp += 2 * VL;                                                                           \
    }                                                                                           \
    V acc[12] = {c0a, c0b, c1a, c1b, c2a, c2b, c3a, c3b, c4a, c4b, c5a, c5b};                   \
    if (mr == 6 && nr == 2 * VL) {                                                              \
        for (int r = 0; r < 6; r++) {                                                           \
            T *row = c + r * ldc;                                                               \
            if (first) { STORE(row, acc[2 * r]); STORE(row + VL, acc[2 * r + 1]); }             \
            else {                                                                              \
                STORE(row, ADD(LOAD(row), acc[2 * r]));                                         \
                STORE(row + VL, ADD(LOAD(row + VL), acc[2 * r + 1]));                           \
            }                                                                                   \
        }                                                                                       \
        return;                                                                                 \
    }                                                                                           \
    T tile[6][2 * VL];                                                                          \
    for (int r = 0; r < 6; r++) { STORE(tile[r], acc[2 * r]); STORE(tile[r] + VL, acc[2 * r + 1]); } \
    for (int64_t r = 0; r < mr; r++)                                                            \
        for (int64_t j = 0; j < nr; j++) c[r * ldc + j] = first ? tile[r][j] : c[r * ldc + j] + tile[r][j];

static void micro_f32_6x32(int64_t kc, const float *restrict ap, const float *restrict bp, float *restrict c,
                           int64_t ldc, int64_t mr, int64_t nr, bool first) {
    MICRO_BODY(float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
               _mm512_setzero_ps)
}

static void micro_f64_6x16(int64_t kc, const double *restrict ap, const double *restrict bp, double *restrict c,
                           int64_t ldc, int64_t mr, int64_t nr, bool first) {
    MICRO_BODY(double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd,
               _mm512_setzero_pd)
}

#define GEMM_ISA avx512
#define GEMM_MR_F32 6
#define GEMM_NR_F32 32
#define GEMM_MR_F64 6
#define GEMM_NR_F64 16
#define GEMM_MICRO_F32 micro_f32_6x32
#define GEMM_MICRO_F64 micro_f64_6x16
#include "cpu/gemm_instances.inc"
