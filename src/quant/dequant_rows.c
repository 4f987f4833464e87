/* Reference row dequantizers of the common weight types: the per-block
 * scalar reference of dequant_block.h looped over a row. They are the
 * traits table's to_f32 rows (quant_traits.c) and the definition the CPU
 * backend's SIMD rows (cpu/quantized/dequant_rows.c) must match bit for bit
 * (tests/test_quant_simd.c). The types not listed here keep their scalar
 * rows in quant_traits.c. */
#include "quant/quant_rows.h"
#include "quant/dequant_block.h"

/* the reference's float ops exactly: no a*b+c contraction (clang) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define WK__DQ_ROWS(name, qk)                                                                     \
    void wk__dequant_row_##name##_ref(const void *src, float *dst, int64_t n) {                   \
        const wk_block_##name *b = (const wk_block_##name *)src;                                  \
        for (int64_t i = 0; i < n / (qk); i++) wk__dq_##name(b + i, dst + i * (qk));              \
    }
WK__DQ_ROWS(q4_0, WK_QK)
WK__DQ_ROWS(q4_1, WK_QK)
WK__DQ_ROWS(q5_0, WK_QK)
WK__DQ_ROWS(q5_1, WK_QK)
WK__DQ_ROWS(q8_0, WK_QK)
WK__DQ_ROWS(q4_K, WK_QK_K)
WK__DQ_ROWS(q5_K, WK_QK_K)
WK__DQ_ROWS(q6_K, WK_QK_K)
