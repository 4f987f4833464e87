/* A block-dtype view as a u8 view of the same bytes. A valid block layout
 * (wk__check_block_layout) has a contiguous last dim of whole blocks and
 * rows on block boundaries, so each row is one run of bytes: the u8 layout
 * has the same rank, the last dim n / block_elems * block_bytes bytes with
 * stride 1, the other strides and the offset rescaled from elements to
 * bytes. Copies, gathers, concatenation and device moves of block tensors
 * run as the backends' u8 kernels on this layout (a row gather is a byte
 * copy), so no backend needs block-dtype code for them. */
#ifndef WICK_CORE_BLOCK_BYTES_H
#define WICK_CORE_BLOCK_BYTES_H
#include "tensor/layout.h"

/* l must be a valid block layout of dt; element dtypes map to themselves. */
static inline wk_layout wk__block_bytes_layout(const wk_layout *l, wk_dtype dt, wk_dtype *bdt) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!di || di->block_elems == 1) {
        *bdt = dt;
        return *l;
    }
    int64_t be = di->block_elems, bb = di->block_bytes;
    wk_layout b = *l;
    for (int i = 0; i < l->rank - 1; i++) b.stride[i] = l->stride[i] / be * bb;
    b.shape[l->rank - 1] = l->shape[l->rank - 1] / be * bb;
    b.stride[l->rank - 1] = 1;
    b.offset = l->offset / be * bb;
    *bdt = WK_U8;
    return b;
}

#endif
