/* The GGML block layouts and their scalar dequantizers (src/quant) made
 * usable by the CUDA kernels, plus per-type traits the kernels are
 * templated on.
 *
 * blocks.h and dequant_block.h are plain C. Two things keep nvcc from
 * taking them as they are: _Static_assert is C only (C++ spells it
 * static_assert), and ggml's IQ4 value table wk_iq4nl_values is a host
 * array, which device code cannot read. The dequantizers therefore see the
 * table through wkc_iq4nl_lut, an object whose operator[] picks the value
 * out of four 32-bit immediates: the same code on host and device, no
 * memory read, and tests/cuda/test_cuda_quant_emu.cu checks all 16 entries
 * against wk_iq4nl_values. */
#ifndef WICK_CUDA_KERNELS_QUANT_CUH
#define WICK_CUDA_KERNELS_QUANT_CUH
#include "cuda/common/cuda_dtype.cuh"

#if defined(__cplusplus) && !defined(_Static_assert)
#define _Static_assert static_assert
#endif
#include "base/blocks.h"

/* wk_iq4nl_values[i & 15]: the table's bytes, four per word, low byte first */
WKC_HD int wkc_iq4nl(int i) {
    i &= 15;
    uint32_t w = i < 8 ? (i < 4 ? 0xBFAD9881u : 0xF6EADDCFu) : (i < 12 ? 0x26190D01u : 0x71594535u);
    return (int)(int8_t)(uint8_t)(w >> (8 * (i & 3)));
}
struct wkc_iq4nl_lut {
    WKC_HD int operator[](int i) const { return wkc_iq4nl(i); }
};
#define wk_iq4nl_values wkc_iq4nl_lut()
#include "quant/dequant_block.h"
#undef wk_iq4nl_values

/* Per block dtype: elements (qk) and bytes per block, and the block's
 * dequantizer from raw bytes (rows start on block boundaries, and every
 * block size is a multiple of its struct's alignment, so the cast is
 * aligned). X(dtype, block struct, elements, dequantizer) */
#define WKC_QUANT_TYPES(X)                                  \
    X(WK_Q4_0, wk_block_q4_0, WK_QK, wk__dq_q4_0)           \
    X(WK_Q4_1, wk_block_q4_1, WK_QK, wk__dq_q4_1)           \
    X(WK_Q5_0, wk_block_q5_0, WK_QK, wk__dq_q5_0)           \
    X(WK_Q5_1, wk_block_q5_1, WK_QK, wk__dq_q5_1)           \
    X(WK_Q8_0, wk_block_q8_0, WK_QK, wk__dq_q8_0)           \
    X(WK_Q8_1, wk_block_q8_1, WK_QK, wk__dq_q8_1)           \
    X(WK_Q2_K, wk_block_q2_K, WK_QK_K, wk__dq_q2_K)         \
    X(WK_Q3_K, wk_block_q3_K, WK_QK_K, wk__dq_q3_K)         \
    X(WK_Q4_K, wk_block_q4_K, WK_QK_K, wk__dq_q4_K)         \
    X(WK_Q5_K, wk_block_q5_K, WK_QK_K, wk__dq_q5_K)         \
    X(WK_Q6_K, wk_block_q6_K, WK_QK_K, wk__dq_q6_K)         \
    X(WK_Q8_K, wk_block_q8_K, WK_QK_K, wk__dq_q8_K)         \
    X(WK_IQ4_NL, wk_block_iq4_nl, WK_QK, wk__dq_iq4_nl)     \
    X(WK_IQ4_XS, wk_block_iq4_xs, WK_QK_K, wk__dq_iq4_xs)

template <int DT> struct wkc_qblk;
#define WKC_QBLK_TRAITS(DT, T, QK, FN)                                              \
    template <> struct wkc_qblk<DT> {                                               \
        enum { qk = QK, bytes = (int)sizeof(T) };                                   \
        static WKC_HD void dq(const uint8_t *p, float *y) { FN((const T *)p, y); }  \
    };
WKC_QUANT_TYPES(WKC_QBLK_TRAITS)
#undef WKC_QBLK_TRAITS

#endif
