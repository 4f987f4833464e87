/* tril / triu as one comparison and one where: the mask col - row <= k (or
 * >= k) is built from two iotas of lengths n and m compared with
 * broadcasting, so no loop runs over the elements on the host and every
 * backend (CUDA included) does the work with entries it already has.
 * A composite of recorded public ops (the where records the gradient to t):
 * the autograd floor (moved from src/core/triangle.c). */
#include <inttypes.h>

#include "autograd/node.h"

static wk_tensor *triangle(const char *op, const wk_tensor *t, int64_t k, bool lower) {
    if (!wk__check_in(op, t)) return NULL;
    int rank = t->layout.rank;
    if (rank < 2) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "needs rank >= 2 (..., rows, cols), got %s",
                wk__shape_str(t->layout.shape, rank, b, sizeof b));
        return NULL;
    }
    int64_t m = t->layout.shape[rank - 2], n = t->layout.shape[rank - 1];
    /* every k outside [-m, n] keeps all or nothing, as its clamped value
     * does; clamping keeps the iota values exact in f64 */
    if (k < -m - 1) k = -m - 1;
    if (k > n + 1) k = n + 1;
    wk_device *dev = wk__dev(t);
    /* Every iota value lies in [-m - 1, m + n + 1]: i32 holds it for any
     * matrix below 2^30 per side, and compares at twice i64's rate (baseline
     * x86-64 has no 64-bit vector compare). */
    wk_dtype it = m + n + 2 < ((int64_t)1 << 31) ? WK_I32 : WK_I64;
    /* rows + k as a column (m, 1), cols as a row (n) */
    wk_tensor *rows = wk_arange((double)k, (double)(k + m), 1.0, it, dev);
    wk_tensor *rc = rows ? wk_reshape(rows, (int64_t[2]){m, 1}, 2) : NULL;
    wk_tensor *cols = wk_arange(0.0, (double)n, 1.0, it, dev);
    wk_tensor *mask = rc && cols ? wk_cmp(cols, rc, lower ? WK_LE : WK_GE) : NULL;
    wk_tensor *zero = mask ? wk_zeros(NULL, 0, t->dtype, dev) : NULL;
    wk_tensor *r = zero ? wk_where(mask, t, zero) : NULL;
    wk_tensor_free(rows);
    wk_tensor_free(rc);
    wk_tensor_free(cols);
    wk_tensor_free(mask);
    wk_tensor_free(zero);
    return r;
}

wk_tensor *wk_tril(const wk_tensor *t, int64_t k) { return triangle("wk_tril", t, k, true); }
wk_tensor *wk_triu(const wk_tensor *t, int64_t k) { return triangle("wk_triu", t, k, false); }
