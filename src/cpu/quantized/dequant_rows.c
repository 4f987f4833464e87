/* The CPU's row dequantizer per block dtype: the AVX2 rows
 * (dequant_rows_avx2.c) from the vmath level AVX2 up for the types that
 * have one, else the traits table's reference row. */
#include "cpu/quantized/dequant_rows.h"
#include "cpu/vmath/vmath.h"

#if defined(__x86_64__) || defined(__i386__)
#define WK__DQ_HAVE_AVX2 1
#else
#define WK__DQ_HAVE_AVX2 0
#endif

#if WK__DQ_HAVE_AVX2
static wk__q_to_f32_fn avx2_row(wk_dtype dt) {
    switch (dt) {
    case WK_Q4_0: return wk__dequant_row_q4_0_avx2;
    case WK_Q4_1: return wk__dequant_row_q4_1_avx2;
    case WK_Q5_0: return wk__dequant_row_q5_0_avx2;
    case WK_Q5_1: return wk__dequant_row_q5_1_avx2;
    case WK_Q8_0: return wk__dequant_row_q8_0_avx2;
    case WK_Q4_K: return wk__dequant_row_q4_K_avx2;
    case WK_Q5_K: return wk__dequant_row_q5_K_avx2;
    case WK_Q6_K: return wk__dequant_row_q6_K_avx2;
    default: return NULL;
    }
}
#endif

wk__q_to_f32_fn wk__cpu_dequant_row(wk_dtype dt) {
    const wk__quant_traits *tr = wk__quant_traits_of(dt);
    if (!tr) return NULL;
#if WK__DQ_HAVE_AVX2
    if (wk__vmath_level() >= WK_VMATH_AVX2) {
        wk__q_to_f32_fn f = avx2_row(dt);
        if (f) return f;
    }
#endif
    return tr->to_f32;
}
