/* Quantized dot products for the CPU qmatmul (cpu/quantized/qmatmul.c).
 *
 * As in ggml, each weight block type has a partner activation type and the
 * rows of x are quantized once to it:
 *   - the 32-element types (q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 iq4_nl) pair with
 *     wk_qa32 (ggml's q8_0 / q8_1 values: the two quantize alike);
 *   - the 256-element types (q2_K..q6_K, q8_K, iq4_xs) pair with q8_K.
 * A kernel dots ONE weight row with up to WK_QDOT_MR activation rows: the
 * weight blocks are unpacked once per block and reused across the rows, so
 * the matrix-vector case reads the weights exactly once and the GEMM case
 * runs a 1 x MR register tile over an L2-resident panel of weight rows. */
#ifndef WICK_CPU_QDOT_H
#define WICK_CPU_QDOT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tensor/backend.h"
#include "base/blocks.h"
#include "wick/wick.h"

#define WK_QDOT_MR 8

/* The partner of the 32-element types: q = round_even(x / d) with
 * d = max|x| / 127 (f16-rounded as ggml stores it: `d` is that f16 value
 * widened), s = d * isum, isum = sum(q) (the offsets of q4_0 / q5_0 / the
 * mins of q4_1 / q5_1 fold into it). */
typedef struct {
    float d;
    float s;
    int32_t isum;
    int32_t pad_;
    int8_t qs[WK_QK];
} wk_qa32;

typedef enum { WK_QACT_32, WK_QACT_K } wk_qact_kind;

/* out[i * ldo] = dot(weight row w (nb blocks), activation row i) for
 * i < mr (1 <= mr <= WK_QDOT_MR); activation rows are `as` bytes apart. */
typedef void (*wk_qdot_fn)(int64_t nb, const void *w, const void *a, size_t as, int mr, float *out, int64_t ldo);

/* The decode form: 4 weight rows (w, w + wrs, w + 2 wrs, w + 3 wrs) with
 * mr activation rows, 1 <= mr <= the level's WK_QDOT4_MR_*: out[i * ldo + r]
 * = dot(row r, activation row i). One pass over the activation blocks
 * serves the four rows, and the four rows' horizontal sums are one
 * transpose-add. Per row it performs exactly the 1-row kernel's operations
 * in the same order, so the results are bit-identical to wk_qdot_fn's (a
 * row's result does not depend on how the rows were grouped: 1 thread ==
 * 2 threads). */
typedef void (*wk_qdot4_fn)(int64_t nb, const void *w, size_t wrs, const void *a, size_t as, int mr, float *out,
                            int64_t ldo);
#define WK_QDOT4_MR_AVX2 1 /* 16 ymm registers: 4 rows x 2 accumulator sets */
#define WK_QDOT4_MR_VNNI 2 /* 32 registers */

/* f16 / bf16 weight row (k elements) with up to WK_QDOT_MR f32 rows of x
 * (xs elements apart): out[i * ldo] = sum_p x_i[p] * w[p]. */
/* 1 (the default): wk_qmatmul / qmatmul_multi with f16 / bf16 weights run
 * the dot-form product (cpu/gemm/dotmm.h) for every M: batch invariant at
 * row-dot decode speed. 0: qmatmul.c's widened panels + f32 GEMM. */
#ifndef WK_QMM_HALF_DOT_FORM
#define WK_QMM_HALF_DOT_FORM 1
#endif
typedef void (*wk_hdot_fn)(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                           int64_t ldo);

/* Partner kind of a block dtype (callers pass block dtypes only). */
wk_qact_kind wk__qact_kind(wk_dtype wdt);

/* Scalar activation quantizers (also the tests' reference): k a multiple of
 * 32 / 256. Round half to even, like ggml's SIMD paths. */
void wk__qact32_row(const float *x, int64_t k, wk_qa32 *out);
void wk__qactK_row(const float *x, int64_t k, wk_block_q8_K *out);

/* Kernels per level; NULL where a level has no kernel for the type (the
 * caller falls back to the portable one). */
wk_qdot_fn wk__qdot_generic(wk_dtype wdt);
wk_qdot_fn wk__qdot_avx2(wk_dtype wdt);
wk_qdot_fn wk__qdot_avx512vnni(wk_dtype wdt);
wk_qdot4_fn wk__qdot4_avx2(wk_dtype wdt);
wk_qdot4_fn wk__qdot4_avx512vnni(wk_dtype wdt);
void wk__hdot_generic(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                      int64_t ldo);
void wk__hdot_avx2(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                   int64_t ldo);

/* cpuid: AVX512-VNNI (+VL) present AND the SIMD level in force (vmath's,
 * honouring WICK_ISA) is AVX-512 (cpu_features.c). */
bool wk__cpu_has_avx512vnni(void);

/* Which kernels the CPU qmatmul may take: the run-time choice, or a
 * test's override of it (wk__qmm_force). */
typedef enum {
    WK_QMM_AUTO = 0,     /* the run-time choice: SIMD level, cpuid */
    WK_QMM_PORTABLE = 1, /* the portable kernels for every weight dtype (f16/bf16
                          * included: no SIMD dot, no bf16 GEMM) */
    WK_QMM_NO_VNNI = 2,  /* SIMD but no VNNI: the AVX2 kernels and the 1 x 8
                          * tile also at the AVX-512 level */
} wk_qmm_mode;

/* Tests: override the choice for every later call; WK_QMM_AUTO restores it. */
void wk__qmm_force(wk_qmm_mode mode);

/* The kernels the CPU qmatmul runs for weight dtype wdt now. */
typedef struct {
    wk_qdot_fn qdot;  /* block wdt: the 1 x MR dot (NULL for f16 / bf16) */
    wk_qdot4_fn qdot4; /* block wdt: the 4-row decode dot of qdot's level, or NULL */
    int qdot4_mr;      /* the most activation rows qdot4 takes */
    bool vnni_panel;  /* block wdt: the AVX512-VNNI prefill panel GEMM
                       * (wk__qgemm32_ / wk__qgemmK_avx512vnni) */
    wk_hdot_fn hdot;  /* f16 / bf16 wdt: the decode dot (NULL otherwise) */
    bool bf16_gemm;   /* bf16 wdt: the AVX512-BF16 prefill GEMM */
} wk_qmm_kernels;

/* The one chooser every qmatmul path asks: the SIMD level in force
 * (vmath's, honouring WICK_ISA), cpuid and the override considered. */
wk_qmm_kernels wk__qmm_choose(wk_dtype wdt);

/* The matrix-vector / small-M loop over block weights, shared by qmatmul
 * and qmatmul_multi (so both give the same bits): weight rows [b, e)
 * (wrs bytes apart, nb blocks each) against m quantized activation rows
 * (`as` bytes apart), in cache panels of weight rows, groups of
 * WK_QDOT_MR activation rows, four weight rows per kernel call where the
 * 4-row kernel takes the group; out[i * ldo + j] for row j of w. */
/* Row `row` of x (any rank and strides, f32 / f16 / bf16; k elements in
 * its last dim) as contiguous f32 into y: qmatmul's and qmatmul_multi's
 * gather. */
void wk__qmm_gather_row(const void *x, const wk_layout *l, wk_dtype xdt, int64_t k, int64_t row, float *y);

void wk__qmm_rows(const wk_qmm_kernels *k, int64_t nb, const uint8_t *w, size_t wrs, const uint8_t *A, size_t as,
                  int64_t m, int64_t b, int64_t e, float *out, int64_t ldo);

/* Prefill GEMM for the 32-element types on AVX512-VNNI (qmatmul_panel_avx512vnni.c):
 * out (m, n) = A (m rows of nb wk_qa32 blocks, `as` bytes apart) times the
 * n weight rows (wrs bytes apart)^T; threads on the pool. false: out of
 * memory (nothing else can fail). Call only when wk__cpu_has_avx512vnni()
 * and wk__qgemm32_supported(wdt). */
bool wk__qgemm32_supported(wk_dtype wdt);
bool wk__qgemm32_avx512vnni(wk_dtype wdt, int64_t m, int64_t n, int64_t nb, const uint8_t *w, size_t wrs,
                            const uint8_t *A, size_t as, float *out);

/* The same for q4_K, q5_K and q6_K (qmatmul_panel_k_avx512vnni.c): A holds
 * m rows of nb wk_block_q8_K; same contract. */
bool wk__qgemmK_supported(wk_dtype wdt);
bool wk__qgemmK_avx512vnni(wk_dtype wdt, int64_t m, int64_t n, int64_t nb, const uint8_t *w, size_t wrs,
                           const uint8_t *A, size_t as, float *out);

/* The backend entry (backend.h's qmatmul), in cpu/quantized/qmatmul.c. */
wk_status wk__cpu_qmatmul(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, const void *w,
                          const wk_layout *lw, wk_dtype wdt, void *dst);

#endif
