/* wk_quantize_imatrix's body: quantize with an importance matrix, on the
 * host. The weighted quantizers (quant/quantize_imatrix.c) need a row's
 * weights beside its values and are the CPU's only, so the values are
 * gathered to host f32 once, quantized row by row, and the blocks moved to
 * t's device. Single-threaded: the searches are ggml's scalar ones, chosen
 * for byte equality, not speed. */
#include <math.h>
#include <stdlib.h>

#include "ops/prim_copy.h"
#include "ops/prim_quantize.h"
#include "quant/quant.h"
#include "quant/quantize_imatrix.h"
#include "wick/wick.h"

/* Rows of t share the matrix's slices: one slice of `cols` weights for
 * every row (n == cols), or, for a stack of matrices (rank >= 3, a mixture
 * of experts' weights as llama.cpp stores them), one slice per matrix
 * (n == cols * matrices). 0 when n fits neither. */
static int64_t rows_per_slice(const wk_tensor *t, int64_t n) {
    int r = t->layout.rank;
    int64_t cols = t->layout.shape[r - 1], numel = wk_numel(t);
    int64_t rows = cols ? numel / cols : 0;
    if (n == cols) return rows > 0 ? rows : 1;
    int64_t per_matrix = r >= 2 ? t->layout.shape[r - 2] : 1;
    if (r >= 3 && per_matrix > 0 && n / cols == rows / per_matrix && n % cols == 0) return per_matrix;
    return 0;
}

wk_tensor *wk__prim_quantize_imatrix(const wk_tensor *t, wk_dtype qdt, const float *imatrix, int64_t n) {
    const char *op = "wk_quantize_imatrix";
    if (!wk__check_in_blocks(op, t)) return NULL;
    const wk__quant_traits *tr = wk__quant_traits_of(qdt);
    if (!tr || !tr->from_f32) return wk__prim_quantize(t, qdt); /* its error names the dtype */
    int r = t->layout.rank;
    if (r < 1) {
        wk__err(WK_ERR_SHAPE, op, "a 0-d tensor has no rows to quantize");
        return NULL;
    }
    int64_t cols = t->layout.shape[r - 1];
    if (!imatrix || n < 1) {
        wk__err(WK_ERR_ARG, op, "imatrix is %s (n = %lld): pass wk_quantize for no matrix",
                imatrix ? "empty" : "NULL", (long long)n);
        return NULL;
    }
    int64_t per_slice = rows_per_slice(t, n);
    if (!per_slice) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op,
                "the importance matrix has %lld values; shape %s takes %lld (one per column)%s",
                (long long)n, wk__shape_str(t->layout.shape, r, b, sizeof b), (long long)cols,
                r >= 3 ? ", or that times the number of stacked matrices" : "");
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(imatrix[i])) {
            wk__err(WK_ERR_ARG, op, "importance matrix value %lld is %g (must be finite)", (long long)i,
                    (double)imatrix[i]);
            return NULL;
        }
    /* the types whose quantizer has one fit only: the plain path, same bytes */
    if (!wk__quant_uses_imatrix(qdt)) return wk__prim_quantize(t, qdt);
    if (cols % tr->block_elems) return wk__prim_quantize(t, qdt); /* names the shape error */

    wk_tensor *f = wk__prim_to_dtype(t, WK_F32);
    if (!f) return NULL;
    int64_t numel = wk_numel(f), rows = cols ? numel / cols : 0;
    size_t row_bytes = (size_t)(cols / tr->block_elems) * tr->block_bytes;
    float *x = malloc(numel ? (size_t)numel * sizeof *x : 1);
    uint8_t *q = malloc(rows ? (size_t)rows * row_bytes : 1);
    wk_tensor *out = NULL;
    if (!x || !q) {
        wk__err(WK_ERR_OOM, op, "no memory for %lld values", (long long)numel);
        goto done;
    }
    if (numel && wk__be(f)->to_host(wk__dev(f), f->storage->buf, &f->layout, WK_F32, x) != WK_OK) goto done;
    for (int64_t i = 0; i < rows; i++) {
        const float *qw = imatrix + (n == cols ? 0 : (i / per_slice) * cols);
        wk_status st = wk__quantize_row_imatrix(qdt, x + i * cols, q + (size_t)i * row_bytes, cols, qw);
        if (st != WK_OK) {
            wk__err(st, op, "row %lld could not be quantized to %s", (long long)i, wk_dtype_name(qdt));
            goto done;
        }
    }
    out = wk_from_host(q, (size_t)rows * row_bytes, t->layout.shape, r, qdt, wk__dev(t));
done:
    free(x);
    free(q);
    wk_tensor_free(f);
    return out;
}
