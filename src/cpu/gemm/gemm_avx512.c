/* The packed GEMM for AVX-512 (flags in CMakeLists.txt; called only after a
 * run-time cpuid check). The loops and packing are the portable ones of
 * gemm_kernel.inc; the micro-kernels here keep the whole C tile in sixteen
 * zmm accumulators (8 rows x 2 vectors): 16 independent FMA chains cover the
 * 4-cycle FMA latency on two 512-bit pipes, and each k step needs 2 vector
 * loads + 8 broadcasts for 16 FMAs, inside the two load ports' budget.
 * Measured on a 48 KiB-L1 Xeon (kernel alone, B strip in L1, C in memory):
 * 6 x 32 reached ~105-140 GFLOP/s without the C prefetch and ~150 with it;
 * 8 x 32 and 12-14 x 32 reach ~150-160. 8 rows wastes nothing on the
 * 32/64/128-row products of language models and convolutions. */
#include "cpu/vmath/vmath.h"

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#define MR 8

/* C[mr x nr] (row stride ldc) = (first) or += the MR x (2 vectors) product
 * of the strips: ap is [kc][MR] (packed), bp is kc rows of 2*VL, ldb apart
 * (2*VL when packed, B's row stride when read in place). Partial tiles
 * (mr < MR rows, nr < 2*VL columns) use masked loads and stores. */
#define MICRO_BODY(T, V, VL, MASK, LOADU, STOREU, MLOAD, MSTORE, SET1, FMA, ADD, ZERO)                       \
    V acc[MR][2];                                                                                            \
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = ZERO();                                             \
    /* C is touched only after the k loop: fetch it now so the final loads                                   \
     * and stores do not stall on L3 / DRAM latency (~10% at kc 256) */                                     \
    for (int64_t r = 0; r < mr; r++) {                                                                       \
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);                                              \
        _mm_prefetch((const char *)(c + r * ldc + 2 * VL - 1), _MM_HINT_T0);                                 \
    }                                                                                                        \
    for (int64_t p = 0; p < kc; p++) {                                                                       \
        /* unpacked B rows (ldb != 2*VL) are a page apart: no hardware                                        \
         * prefetcher follows them, so fetch eight rows ahead */                                             \
        if (ldb != 2 * VL) {                                                                                 \
            _mm_prefetch((const char *)(bp + 8 * ldb), _MM_HINT_T0);                                         \
            _mm_prefetch((const char *)(bp + 8 * ldb + 2 * VL - 1), _MM_HINT_T0);                            \
        }                                                                                                    \
        V b0 = LOADU(bp), b1 = LOADU(bp + VL);                                                               \
        for (int r = 0; r < MR; r++) {                                                                       \
            V a = SET1(ap[r]);                                                                               \
            acc[r][0] = FMA(a, b0, acc[r][0]);                                                               \
            acc[r][1] = FMA(a, b1, acc[r][1]);                                                               \
        }                                                                                                    \
        ap += MR;                                                                                            \
        bp += ldb;                                                                                           \
    }                                                                                                        \
    if (nr == 2 * VL) {                                                                                      \
        for (int64_t r = 0; r < mr; r++) {                                                                   \
            T *row = c + r * ldc;                                                                            \
            if (first) {                                                                                     \
                STOREU(row, acc[r][0]);                                                                      \
                STOREU(row + VL, acc[r][1]);                                                                 \
            } else {                                                                                         \
                STOREU(row, ADD(LOADU(row), acc[r][0]));                                                     \
                STOREU(row + VL, ADD(LOADU(row + VL), acc[r][1]));                                           \
            }                                                                                                \
        }                                                                                                    \
        return;                                                                                              \
    }                                                                                                        \
    int64_t n0 = nr < VL ? nr : VL, n1 = nr - n0;                                                            \
    MASK m0 = (MASK)((1u << n0) - 1), m1 = (MASK)((1u << n1) - 1);                                           \
    for (int64_t r = 0; r < mr; r++) {                                                                       \
        T *row = c + r * ldc;                                                                                \
        V v0 = acc[r][0], v1 = acc[r][1];                                                                    \
        if (!first) {                                                                                        \
            v0 = ADD(MLOAD(ZERO(), m0, row), v0);                                                            \
            v1 = ADD(MLOAD(ZERO(), m1, row + VL), v1);                                                       \
        }                                                                                                    \
        MSTORE(row, m0, v0);                                                                                 \
        MSTORE(row + VL, m1, v1);                                                                            \
    }

static void micro_f32_8x32(int64_t kc, const void *vap, const void *vbp, int64_t ldb, void *vc, int64_t ldc,
                           int64_t mr, int64_t nr, bool first) {
    const float *restrict ap = vap, *restrict bp = vbp;
    float *restrict c = vc;
    MICRO_BODY(float, __m512, 16, __mmask16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_mask_loadu_ps,
               _mm512_mask_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_setzero_ps)
}

static void micro_f64_8x16(int64_t kc, const void *vap, const void *vbp, int64_t ldb, void *vc, int64_t ldc,
                           int64_t mr, int64_t nr, bool first) {
    const double *restrict ap = vap, *restrict bp = vbp;
    double *restrict c = vc;
    MICRO_BODY(double, __m512d, 8, __mmask8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_mask_loadu_pd,
               _mm512_mask_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, _mm512_setzero_pd)
}

/* f16 / bf16 runs widened while packing (gemm_narrow.inc): inline, as a
 * B row of a strip is only 32 values (see gemm_avx2.c). A NaN stays a NaN. */
static inline void widen_f16(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))));
    if (i < n) wk__vcvt_f16_to_f32_avx512(y + i, x + i, n - i);
}
static inline void widen_bf16(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_si512((void *)(y + i),
                            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + i))), 16));
    if (i < n) wk__vcvt_bf16_to_f32_avx512(y + i, x + i, n - i);
}

#define GEMM_ISA avx512
#define GEMM_MR_F32 MR
#define GEMM_NR_F32 32
#define GEMM_MR_F64 MR
#define GEMM_NR_F64 16
/* B strips read in place up to M = 32 (four row strips): at 32 x 4096 x
 * 4096 on Zen 4 69 GFLOP/s against 66 packed per strip (AVX2's one-line
 * rows do worse in place: gemm_loop.c) */
#define GEMM_DIRECT_B_MAX_M(MR) 32
#define GEMM_MICRO_F32 micro_f32_8x32
#define GEMM_MICRO_F64 micro_f64_8x16
#define GEMM_CVT_F16 widen_f16
#define GEMM_CVT_BF16 widen_bf16
#include "cpu/gemm/gemm_instances.inc"
