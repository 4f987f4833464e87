/* How a wick matmul maps onto one cuBLAS GEMM call (or one per batch):
 * pure C, so tests/test_cuda.c checks the mapping on the CPU by running a
 * host emulation of cuBLAS's column-major GEMM with exactly these arguments
 * for many layouts (transposed, narrowed, broadcast, permuted batches).
 *
 * Row-major C = A B (A: ..., m, k; B: ..., k, n) is computed as column-major
 * C^T = B^T A^T: cuBLAS's first operand is wick's B, its second wick's A, its
 * m is wick's n and its n wick's m; ldc = wick's n, and C is contiguous. */
#ifndef WICK_CUDA_MM_PLAN_H
#define WICK_CUDA_MM_PLAN_H
#include "tensor/layout.h"

typedef struct wk_cumm_call {
    bool copy_a, copy_b;        /* wick operand needs a contiguous copy first */
    /* cuBLAS arguments (column-major) */
    bool trans_first, trans_second; /* op T on cuBLAS's A (= wick B) / B (= wick A) */
    int64_t m, n, k;            /* cuBLAS sizes: m = wick n, n = wick m */
    int64_t ld_first, ld_second, ldc;
    int64_t batch;
    bool strided;               /* one strided-batched call; else one call per batch */
    int64_t stride_first, stride_second, stride_c; /* element strides (strided mode) */
} wk_cumm_call;

/* Plan C = A B for wick layouts la (..., m, k) and lb (..., k, n) with equal
 * batch dims. copy_a / copy_b say an operand's matrix dims are not
 * expressible with a leading dimension (re-plan with its contiguous copy).
 * Sizes and leading dims fit cuBLAS's int when the call returns true;
 * false: a size exceeds int (the caller reports it). */
bool wk__cumm_plan(const wk_layout *la, const wk_layout *lb, wk_cumm_call *c);

/* Element offset of flat batch index i of l (batch dims [0, rank - 2)), for
 * the per-batch loop. */
static inline int64_t wk__cumm_batch_offset(const wk_layout *l, int64_t i) {
    return wk__unravel(l->shape, l->stride, l->rank - 2, i);
}

#endif
