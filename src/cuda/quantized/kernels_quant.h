/* The C ABI of the block-quantized kernels (kernels_quant.cu), called by
 * cuda_quant.c. Same rules as cuda_kernels.h: every launcher queues its work
 * on `s` and returns at once, 0 or the cudaError_t of the launch as int
 * (cudaErrorInvalidValue for a malformed call); nothing to do queues nothing.
 *
 * Weights arrive as wick lays out a block tensor: an element view (shape and
 * strides in elements) whose last dim is contiguous and a whole number of
 * blocks, every row starting on a block boundary. The launchers turn it into
 * byte addresses of rows themselves (wk__cu_qrows_plan), so no layout is
 * uploaded. Outputs are contiguous, in f32 / f16 / bf16. */
#ifndef WICK_CUDA_KERNELS_QUANT_H
#define WICK_CUDA_KERNELS_QUANT_H
#include "cuda/cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rows of a block tensor as bytes: row r (row-major over the dims before
 * the last) starts at byte offset + sum(index_d * stride[d]). */
typedef struct wk_cu_qrows {
    int32_t dt;   /* the block dtype */
    int32_t rank; /* dims before the last (0 for one row) */
    int64_t shape[WK_MAX_RANK];
    int64_t stride[WK_MAX_RANK]; /* bytes */
    int64_t offset;              /* bytes */
    int64_t rows, k;             /* rows; elements per row */
    int64_t nblk;                /* blocks per row */
    int32_t qk, qbytes;          /* elements and bytes per block */
} wk_cu_qrows;

/* Fill *q from the element view lw of block dtype dt. false for a view that
 * is not whole blocks (last dim not contiguous or not a multiple of the
 * block, a row or offset off a block boundary) or a dt that is no block
 * dtype. Pure host code. */
bool wk__cu_qrows_plan(wk_cu_view lw, wk_dtype dt, wk_cu_qrows *q);

/* dst (contiguous, lw's shape, ddt in f32/f16/bf16) = the dequantized w. */
int wk__cu_dequantize(wk_cu_stream s, const void *w, wk_cu_view lw, wk_dtype wdt, void *dst, wk_dtype ddt);

/* The decode product for 1 <= m <= WK_CU_QMV_MAX_M rows of activations:
 * dst (m x N contiguous, ddt) = x (m x K contiguous f32) . w^T, w the N x K
 * block tensor lw (2-D). A group of g lanes per weight row (g the power of
 * two >= the row's blocks, at most a warp): each lane takes every g-th
 * block, dequantizes it in registers (dequant_block.h) and dots it with the
 * m rows of x, so the weights are read once for all m; the lanes' sums meet
 * in a fixed xor-butterfly (the same bits for any timing). */
#define WK_CU_QMV_MAX_M 8
int wk__cu_qmatvec(wk_cu_stream s, const void *w, wk_cu_view lw, wk_dtype wdt, const float *x, int64_t m, void *dst,
                   wk_dtype ddt);

#ifdef __cplusplus
}
#endif
#endif
