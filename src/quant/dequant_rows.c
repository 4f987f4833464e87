/* Row dequantizers of the common weight types, picked per call: the AVX2
 * kernels (dequant_rows_avx2.c) from the vmath level AVX2 up, else the
 * per-block scalar reference (dequant_block.h). Both give the same bits
 * (tests/test_quant_simd.c). The types not listed here keep their scalar
 * rows in quant_traits.c. */
#include "quant/quant_rows.h"
#include "quant/dequant_block.h"
#include "cpu/vmath.h"

/* the reference's float ops exactly: no a*b+c contraction (clang) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(__x86_64__) || defined(__i386__)
#define WK__DQ_HAVE_AVX2 1
#else
#define WK__DQ_HAVE_AVX2 0
#endif

#if WK__DQ_HAVE_AVX2
#define WK__DQ_PICK(name)                                                                         \
    if (wk__vmath_level() >= WK_VMATH_AVX2) {                                                     \
        wk__dequant_row_##name##_avx2(src, dst, n);                                               \
        return;                                                                                   \
    }
#else
#define WK__DQ_PICK(name)
#endif

#define WK__DQ_ROWS(name, qk)                                                                     \
    void wk__dequant_row_##name##_ref(const void *src, float *dst, int64_t n) {                   \
        const wk_block_##name *b = (const wk_block_##name *)src;                                  \
        for (int64_t i = 0; i < n / (qk); i++) wk__dq_##name(b + i, dst + i * (qk));              \
    }                                                                                             \
    void wk__dequant_row_##name(const void *src, float *dst, int64_t n) {                         \
        WK__DQ_PICK(name)                                                                         \
        wk__dequant_row_##name##_ref(src, dst, n);                                                \
    }
WK__DQ_ROWS(q4_0, WK_QK)
WK__DQ_ROWS(q4_1, WK_QK)
WK__DQ_ROWS(q5_0, WK_QK)
WK__DQ_ROWS(q5_1, WK_QK)
WK__DQ_ROWS(q8_0, WK_QK)
WK__DQ_ROWS(q4_K, WK_QK_K)
WK__DQ_ROWS(q5_K, WK_QK_K)
WK__DQ_ROWS(q6_K, WK_QK_K)
