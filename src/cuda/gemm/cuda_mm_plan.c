/* The cuBLAS mapping of matmul (see cuda_mm_plan.h). Built in every
 * configuration: plain C, tested on the CPU. */
#include "cuda/gemm/cuda_mm_plan.h"
#include <limits.h>

/* Matrix X (r x c, element strides sr, sc) as the column-major operand that
 * holds X^T (c x r): op N with ld = sr when rows are contiguous, op T with
 * ld = sc when columns are. False when neither (needs a copy). */
static bool xt_operand(int64_t r, int64_t c, int64_t sr, int64_t sc, bool *trans, int64_t *ld) {
    int64_t c1 = c > 1 ? c : 1, r1 = r > 1 ? r : 1;
    if ((c == 1 || sc == 1) && (r == 1 || sr >= c1)) {
        *trans = false;
        *ld = r == 1 ? c1 : sr;
        return *ld <= INT_MAX;
    }
    if ((r == 1 || sr == 1) && (c == 1 || sc >= r1)) {
        *trans = true;
        *ld = c == 1 ? r1 : sc;
        return *ld <= INT_MAX;
    }
    return false;
}

/* The batch dims [0, nbd) of l as one stride (flat batch index b at
 * b * stride); cuBLAS takes no negative batch stride. */
static bool one_batch_stride(const wk_layout *l, int nbd, int64_t *stride) {
    return wk__layout_merged_stride(l, 0, nbd, stride) && *stride >= 0;
}

bool wk__cumm_plan(const wk_layout *la, const wk_layout *lb, wk_cumm_call *c) {
    int r = la->rank, nbd = r - 2;
    int64_t m = la->shape[r - 2], k = la->shape[r - 1], n = lb->shape[r - 1];
    *c = (wk_cumm_call){0};
    c->batch = 1;
    for (int i = 0; i < nbd; i++) c->batch *= la->shape[i];
    c->m = n;
    c->n = m;
    c->k = k;
    c->ldc = n > 1 ? n : 1;
    c->stride_c = m * n;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return false;
    /* cuBLAS's first operand holds (wick B)^T, its second (wick A)^T */
    c->copy_b = !xt_operand(k, n, lb->stride[r - 2], lb->stride[r - 1], &c->trans_first, &c->ld_first);
    c->copy_a = !xt_operand(m, k, la->stride[r - 2], la->stride[r - 1], &c->trans_second, &c->ld_second);
    c->strided = c->batch <= INT_MAX && one_batch_stride(lb, nbd, &c->stride_first) &&
                 one_batch_stride(la, nbd, &c->stride_second);
    return true;
}
