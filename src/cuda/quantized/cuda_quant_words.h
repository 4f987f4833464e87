/* Block rows as raw words, for the CUDA backend's generic entries (pure C,
 * no CUDA: also included by tests/cuda/test_cuda_quant_emu.cu).
 *
 * wk__cuq_word_layout: the element layout l of dtype dt as a layout of raw
 * words (*word: u32 when the block size is a multiple of 4 bytes, i16 when
 * of 2, else u8): the same rows, the last dim counted in words. The copy
 * and index kernels move elements by size only and know no block dtype, so
 * this is how copy_strided, index_select (along any dim but the last),
 * to_host and copy_between move whole block rows: a row of q4_0 (18-byte
 * blocks) moves as 9 i16 words per block, a q4_K row (144) as 36 u32. For
 * an element dtype, *out = *l and *word = dt. WK_ERR_SHAPE (recorded under
 * op) when l is not whole blocks per contiguous row. */
#ifndef WICK_CUDA_QUANT_WORDS_H
#define WICK_CUDA_QUANT_WORDS_H
#include "base/error.h"
#include "tensor/layout.h"

static inline wk_status wk__cuq_word_layout(const char *op, wk_dtype dt, const wk_layout *l, wk_layout *out,
                                            wk_dtype *word) {
    *out = *l;
    *word = dt;
    if (!wk_dtype_is_quantized(dt)) return WK_OK;
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    int64_t qk = di->block_elems, qb = di->block_bytes;
    int64_t ws = qb % 4 == 0 ? 4 : qb % 2 == 0 ? 2 : 1;
    *word = ws == 4 ? WK_U32 : ws == 2 ? WK_I16 : WK_U8;
    int last = l->rank - 1;
    if (last < 0 || l->shape[last] % qk != 0 || (l->shape[last] > 1 && l->stride[last] != 1) ||
        l->offset % qk != 0)
        return wk__err(WK_ERR_SHAPE, op, "a %s view must hold whole blocks of %lld in contiguous rows",
                       wk_dtype_name(dt), (long long)qk);
    for (int d = 0; d < last; d++) {
        if (l->shape[d] > 1 && l->stride[d] % qk != 0)
            return wk__err(WK_ERR_SHAPE, op, "a row of the %s view starts inside a block (dim %d stride %lld)",
                           wk_dtype_name(dt), d, (long long)l->stride[d]);
        out->stride[d] = l->shape[d] > 1 ? l->stride[d] / qk * qb / ws : 0;
    }
    out->shape[last] = l->shape[last] / qk * qb / ws;
    out->stride[last] = 1;
    out->offset = l->offset / qk * qb / ws;
    return WK_OK;
}

#endif
