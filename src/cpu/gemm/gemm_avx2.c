/* The packed GEMM for AVX2+FMA (flags in CMakeLists.txt; called only after a
 * run-time cpuid check). The loops and packing are the portable ones of
 * gemm_kernel.inc; the micro-kernels here keep the whole C tile in twelve
 * ymm accumulators (6 rows x 2 vectors): with the two B vectors and the
 * broadcast A value that is 15 of the 16 ymm registers, and 12 independent
 * FMA chains cover the FMA latency (4-5 cycles) on two 256-bit pipes.
 * Register block: f32 6x16, f64 6x8. */
#include "cpu/vmath/vmath.h"

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

/* C[mr x nr] (row stride ldc) = (first) or += the 6 x (2 vectors) product of
 * the packed strips: ap is [kc][6], bp is kc rows of 2*VL, ldb apart. A full tile is stored
 * straight from the registers; a partial one (mr < 6 or nr < 2*VL, the edges
 * of C) goes through a stack tile so nothing outside C is touched. */
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
        bp += ldb;                                                                              \
    }                                                                                           \
    if (mr == 6 && nr == 2 * VL) {                                                              \
        if (first) {                                                                            \
            STORE(c, c0a); STORE(c + VL, c0b); c += ldc;                                        \
            STORE(c, c1a); STORE(c + VL, c1b); c += ldc;                                        \
            STORE(c, c2a); STORE(c + VL, c2b); c += ldc;                                        \
            STORE(c, c3a); STORE(c + VL, c3b); c += ldc;                                        \
            STORE(c, c4a); STORE(c + VL, c4b); c += ldc;                                        \
            STORE(c, c5a); STORE(c + VL, c5b);                                                  \
        } else {                                                                                \
            STORE(c, ADD(LOAD(c), c0a)); STORE(c + VL, ADD(LOAD(c + VL), c0b)); c += ldc;       \
            STORE(c, ADD(LOAD(c), c1a)); STORE(c + VL, ADD(LOAD(c + VL), c1b)); c += ldc;       \
            STORE(c, ADD(LOAD(c), c2a)); STORE(c + VL, ADD(LOAD(c + VL), c2b)); c += ldc;       \
            STORE(c, ADD(LOAD(c), c3a)); STORE(c + VL, ADD(LOAD(c + VL), c3b)); c += ldc;       \
            STORE(c, ADD(LOAD(c), c4a)); STORE(c + VL, ADD(LOAD(c + VL), c4b)); c += ldc;       \
            STORE(c, ADD(LOAD(c), c5a)); STORE(c + VL, ADD(LOAD(c + VL), c5b));                 \
        }                                                                                       \
        return;                                                                                 \
    }                                                                                           \
    T tile[6][2 * VL];                                                                          \
    STORE(tile[0], c0a); STORE(tile[0] + VL, c0b);                                              \
    STORE(tile[1], c1a); STORE(tile[1] + VL, c1b);                                              \
    STORE(tile[2], c2a); STORE(tile[2] + VL, c2b);                                              \
    STORE(tile[3], c3a); STORE(tile[3] + VL, c3b);                                              \
    STORE(tile[4], c4a); STORE(tile[4] + VL, c4b);                                              \
    STORE(tile[5], c5a); STORE(tile[5] + VL, c5b);                                              \
    for (int64_t r = 0; r < mr; r++)                                                            \
        for (int64_t j = 0; j < nr; j++) c[r * ldc + j] = first ? tile[r][j] : c[r * ldc + j] + tile[r][j];

/* The edge rows of C (mr <= R < 6): the same kc x 2-vector product for R
 * rows only, so a 2-row remainder (M = 32, 128, 512 with MR 6) costs a
 * third of a full tile, not all of it. ap is still [kc][6]. Each C element
 * gets the same FMA chain in the same k order as in the 6-row kernel: which
 * kernel covers a row never changes its bits. */
#define EDGE_BODY(T, V, VL, R, LOAD, STORE, SET1, FMA, ADD, ZERO)                                \
    V acc[R][2];                                                                                \
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = ZERO();                                 \
    for (int64_t p = 0; p < kc; p++) {                                                          \
        V b0 = LOAD(bp), b1 = LOAD(bp + VL);                                                    \
        for (int r = 0; r < R; r++) {                                                           \
            V a = SET1(ap[r]);                                                                  \
            acc[r][0] = FMA(a, b0, acc[r][0]);                                                  \
            acc[r][1] = FMA(a, b1, acc[r][1]);                                                  \
        }                                                                                       \
        ap += 6;                                                                                \
        bp += ldb;                                                                              \
    }                                                                                           \
    T tile[R][2 * VL];                                                                          \
    for (int r = 0; r < R; r++) {                                                               \
        STORE(tile[r], acc[r][0]);                                                              \
        STORE(tile[r] + VL, acc[r][1]);                                                         \
    }                                                                                           \
    for (int64_t r = 0; r < mr; r++)                                                            \
        for (int64_t j = 0; j < nr; j++) c[r * ldc + j] = first ? tile[r][j] : c[r * ldc + j] + tile[r][j];

#define DEF_EDGE(T, sfx, V, VL, R, LOAD, STORE, SET1, FMA, ADD, ZERO)                                          \
    static void edge_##sfx##_##R(int64_t kc, const T *restrict ap, const T *restrict bp, int64_t ldb,          \
                                 T *restrict c, int64_t ldc, int64_t mr, int64_t nr, bool first) {            \
        EDGE_BODY(T, V, VL, R, LOAD, STORE, SET1, FMA, ADD, ZERO)                                              \
    }
DEF_EDGE(float, f32, __m256, 8, 2, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
         _mm256_setzero_ps)
DEF_EDGE(float, f32, __m256, 8, 4, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
         _mm256_setzero_ps)
DEF_EDGE(double, f64, __m256d, 4, 2, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd,
         _mm256_add_pd, _mm256_setzero_pd)
DEF_EDGE(double, f64, __m256d, 4, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd,
         _mm256_add_pd, _mm256_setzero_pd)

static void micro_f32_6x16(int64_t kc, const void *vap, const void *vbp, int64_t ldb, void *vc, int64_t ldc,
                           int64_t mr, int64_t nr, bool first) {
    const float *restrict ap = vap, *restrict bp = vbp;
    float *restrict c = vc;
    if (mr <= 2) {
        edge_f32_2(kc, ap, bp, ldb, c, ldc, mr, nr, first);
        return;
    }
    if (mr <= 4) {
        edge_f32_4(kc, ap, bp, ldb, c, ldc, mr, nr, first);
        return;
    }
    MICRO_BODY(float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps,
               _mm256_add_ps, _mm256_setzero_ps)
}

static void micro_f64_6x8(int64_t kc, const void *vap, const void *vbp, int64_t ldb, void *vc, int64_t ldc,
                           int64_t mr, int64_t nr, bool first) {
    const double *restrict ap = vap, *restrict bp = vbp;
    double *restrict c = vc;
    if (mr <= 2) {
        edge_f64_2(kc, ap, bp, ldb, c, ldc, mr, nr, first);
        return;
    }
    if (mr <= 4) {
        edge_f64_4(kc, ap, bp, ldb, c, ldc, mr, nr, first);
        return;
    }
    MICRO_BODY(double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_fmadd_pd,
               _mm256_add_pd, _mm256_setzero_pd)
}

/* f16 / bf16 runs widened while packing (gemm_narrow.inc): inline, as a
 * B row of a strip is only 16 values and a call to vmath's converter per
 * row cost a third of a short-M product. A NaN stays a NaN (F16C quiets a
 * signaling one; only the payload of a NaN result could differ). */
static inline void widen_f16(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    if (i < n) wk__vcvt_f16_to_f32_avx2(y + i, x + i, n - i);
}
static inline void widen_bf16(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_si256((__m256i *)(y + i),
                            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i))), 16));
    if (i < n) wk__vcvt_bf16_to_f32_avx2(y + i, x + i, n - i);
}

#define GEMM_ISA avx2
#define GEMM_MR_F32 6
#define GEMM_NR_F32 16
#define GEMM_MR_F64 6
#define GEMM_NR_F64 8
#define GEMM_MICRO_F32 micro_f32_6x16
#define GEMM_MICRO_F64 micro_f64_6x8
#define GEMM_CVT_F16 widen_f16
#define GEMM_CVT_BF16 widen_bf16
#include "cpu/gemm/gemm_instances.inc"
