/* Internal dtype helpers: storage sizing from the block geometry of
 * wk_dtype_info (dtype.c holds the one descriptor table). Code that sizes
 * storage or turns an element offset into a byte offset goes through these,
 * so block dtypes (several elements per block) need no change there. */
#ifndef WICK_CORE_DTYPE_H
#define WICK_CORE_DTYPE_H
#include "base/error.h"
#include "base/dtype_cases.h"

/* Bytes of numel elements of a descriptor's geometry (a whole storage, a
 * contiguous row, or an element offset from a block boundary). Pure, records
 * nothing: WK_ERR_DTYPE for a NULL or empty descriptor, WK_ERR_SHAPE when
 * numel is negative or not a whole number of blocks, WK_ERR_OOM when the
 * bytes do not fit in size_t. */
wk_status wk__dtype_info_bytes(const wk_dtype_info *di, int64_t numel, size_t *bytes);
/* The inverse: elements held by nbytes (WK_ERR_SHAPE if nbytes is not a
 * whole number of blocks or the count does not fit in int64_t). */
wk_status wk__dtype_info_elems(const wk_dtype_info *di, size_t nbytes, int64_t *numel);
/* wk__dtype_info_bytes for a dtype, recording the error under op. */
wk_status wk__dtype_bytes_for(const char *op, wk_dtype dt, int64_t numel, size_t *bytes);

/* Bytes per element, for kernels that walk element dtypes one element at a
 * time. Block dtypes never reach such kernels (the tensor layer refuses
 * element ops on them), so this is the descriptor's block size there too;
 * 0 for an invalid dtype. */
static inline size_t wk__dtype_elem_bytes(wk_dtype dt) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    return di ? di->block_bytes : 0;
}

#endif
