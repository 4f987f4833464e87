/* The block-dtype traits table: dequantizers loop the scalar per-block
 * reference of dequant_block.h (shared with CUDA, bit-exact with gguf-py;
 * the common weight types' loops are dequant_rows.c's _ref rows; the CPU
 * backend swaps in its SIMD rows, cpu/quantized/dequant_rows.h);
 * quantizers live in quantize_simple.c (32-element types) and quantize_k.c
 * (K types, IQ4_XS). */
#include "quant/quant.h"
#include "quant/dequant_block.h"
#include "quant/quantize_k.h"
#include "quant/quant_rows.h"
#include "base/dtype.h"

/* ggml's rounding order: no a*b+c contraction into an FMA (clang contracts
 * by default when the target has FMA; GCC in ISO C mode does not). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* One row dequantizer per type: n / block_elems blocks, block after block. */
#define WK__DQ_ROW(name, qk)                                                  \
    static void dq_row_##name(const void *src, float *dst, int64_t n) {       \
        const wk_block_##name *b = (const wk_block_##name *)src;              \
        for (int64_t i = 0; i < n / (qk); i++) wk__dq_##name(b + i, dst + i * (qk)); \
    }
/* The reference rows of dequant_rows.c, under the same names. */
#define WK__DQ_REF(name)                                                     \
    static void dq_row_##name(const void *src, float *dst, int64_t n) { wk__dequant_row_##name##_ref(src, dst, n); }
WK__DQ_REF(q4_0)
WK__DQ_REF(q4_1)
WK__DQ_REF(q5_0)
WK__DQ_REF(q5_1)
WK__DQ_REF(q8_0)
WK__DQ_ROW(q8_1, WK_QK)
WK__DQ_ROW(q2_K, WK_QK_K)
WK__DQ_ROW(q3_K, WK_QK_K)
WK__DQ_REF(q4_K)
WK__DQ_REF(q5_K)
WK__DQ_REF(q6_K)
WK__DQ_ROW(q8_K, WK_QK_K)
WK__DQ_ROW(iq4_nl, WK_QK)
WK__DQ_ROW(iq4_xs, WK_QK_K)

#define TRAITS(DT, name, qk, from, partner) \
    [DT - WK_ELEM_DTYPE_COUNT] = {DT, qk, sizeof(wk_block_##name), dq_row_##name, from, partner}

/* Indexed by dtype - WK_ELEM_DTYPE_COUNT. One line per type: the K-type
 * quantizers (quantize_k.c) fill their `from` slot on their own line. */
static const wk__quant_traits traits[] = {
    TRAITS(WK_Q4_0, q4_0, WK_QK, wk__quantize_row_q4_0, WK_Q8_0),
    TRAITS(WK_Q4_1, q4_1, WK_QK, wk__quantize_row_q4_1, WK_Q8_1),
    TRAITS(WK_Q5_0, q5_0, WK_QK, wk__quantize_row_q5_0, WK_Q8_0),
    TRAITS(WK_Q5_1, q5_1, WK_QK, wk__quantize_row_q5_1, WK_Q8_1),
    TRAITS(WK_Q8_0, q8_0, WK_QK, wk__quantize_row_q8_0, WK_Q8_0),
    TRAITS(WK_Q8_1, q8_1, WK_QK, wk__quantize_row_q8_1, WK_Q8_1),
    TRAITS(WK_IQ4_NL, iq4_nl, WK_QK, wk__quantize_row_iq4_nl, WK_Q8_0),

    /* K types and IQ4_XS: quantizers from quantize_k.c */
    TRAITS(WK_Q2_K, q2_K, WK_QK_K, wk__quantize_row_q2_K, WK_Q8_K),
    TRAITS(WK_Q3_K, q3_K, WK_QK_K, wk__quantize_row_q3_K, WK_Q8_K),
    TRAITS(WK_Q4_K, q4_K, WK_QK_K, wk__quantize_row_q4_K, WK_Q8_K),
    TRAITS(WK_Q5_K, q5_K, WK_QK_K, wk__quantize_row_q5_K, WK_Q8_K),
    TRAITS(WK_Q6_K, q6_K, WK_QK_K, wk__quantize_row_q6_K, WK_Q8_K),
    TRAITS(WK_Q8_K, q8_K, WK_QK_K, wk__quantize_row_q8_K, WK_Q8_K),
    TRAITS(WK_IQ4_XS, iq4_xs, WK_QK_K, wk__quantize_row_iq4_xs, WK_Q8_K),
};
_Static_assert(sizeof(traits) / sizeof(traits[0]) == WK_DTYPE_COUNT - WK_ELEM_DTYPE_COUNT,
               "one traits entry per block dtype");

const wk__quant_traits *wk__quant_traits_of(wk_dtype dt) {
    if ((int)dt < (int)WK_ELEM_DTYPE_COUNT || (int)dt >= (int)WK_DTYPE_COUNT) return NULL;
    return &traits[dt - WK_ELEM_DTYPE_COUNT];
}

static wk_status row_check(const wk__quant_traits *tr, int64_t n) {
    if (!tr) return WK_ERR_DTYPE;
    if (n < 0 || n % tr->block_elems) return WK_ERR_SHAPE;
    return WK_OK;
}

wk_status wk__quantize_row(wk_dtype dt, const float *src, void *dst, int64_t n) {
    const wk__quant_traits *tr = wk__quant_traits_of(dt);
    wk_status s = row_check(tr, n);
    if (s != WK_OK) return s;
    if (!tr->from_f32) return WK_ERR_NOT_COMPILED;
    tr->from_f32(src, dst, n);
    return WK_OK;
}

wk_status wk__dequantize_row(wk_dtype dt, const void *src, float *dst, int64_t n) {
    const wk__quant_traits *tr = wk__quant_traits_of(dt);
    wk_status s = row_check(tr, n);
    if (s != WK_OK) return s;
    tr->to_f32(src, dst, n);
    return WK_OK;
}
