/* The check every in-place write makes first: the destination's storage may
 * be written, and its layout gives each index its own element. A layout in
 * which two indices share an element (a stride-0 broadcast dim, or strides
 * that fold back onto each other) would make the result depend on the
 * order in which a kernel happens to write (today: the last row wins), so,
 * as in PyTorch, it is an error naming the op. */
#include "tensor/tensor.h"
#include <stdlib.h>

/* Enumerating offsets to settle the rare layouts the cheap test cannot:
 * up to this many elements (8 bytes each of scratch); beyond, refused. */
#define WK_OVERLAP_EXACT_MAX ((int64_t)1 << 22)

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Exact: every offset of the view, sorted, has no duplicate. */
static bool exact_overlap(const wk_layout *l, int64_t n) {
    int64_t *offs = malloc((size_t)n * sizeof *offs);
    if (!offs) return true; /* cannot prove it safe: refuse the write */
    for (int64_t i = 0; i < n; i++) offs[i] = wk__unravel(l->shape, l->stride, l->rank, i);
    qsort(offs, (size_t)n, sizeof *offs, cmp_i64);
    bool dup = false;
    for (int64_t i = 1; i < n && !dup; i++) dup = offs[i] == offs[i - 1];
    free(offs);
    return dup;
}

bool wk__layout_self_overlaps(const wk_layout *l) {
    int64_t size[WK_MAX_RANK], step[WK_MAX_RANK];
    int r = 0;
    for (int i = 0; i < l->rank; i++) {
        if (l->shape[i] == 0) return false; /* no elements at all */
        if (l->shape[i] == 1) continue;     /* one index: its stride is never used */
        if (l->stride[i] == 0) return true; /* the common case: a broadcast dim */
        size[r] = l->shape[i];
        step[r] = l->stride[i] < 0 ? -l->stride[i] : l->stride[i]; /* the sign does not change which offsets collide */
        r++;
    }
    /* Sort dims by |stride| (insertion sort, r <= 8). If each stride steps
     * past the whole extent of the dims below it, the offsets are a
     * mixed-radix number and all distinct. Every view wick makes of a
     * contiguous storage passes this test. */
    for (int i = 1; i < r; i++)
        for (int j = i; j > 0 && step[j - 1] > step[j]; j--) {
            int64_t t = step[j]; step[j] = step[j - 1]; step[j - 1] = t;
            t = size[j]; size[j] = size[j - 1]; size[j - 1] = t;
        }
    int64_t extent = 1; /* offsets reachable by the dims below, as a count from 0 */
    bool distinct = true;
    for (int i = 0; i < r && distinct; i++) {
        if (step[i] < extent) distinct = false;
        else extent += (size[i] - 1) * step[i]; /* a valid layout's span fits in int64 */
    }
    if (distinct) return false;
    /* Strides that interleave without colliding (e.g. shape (3, 2), strides
     * (2, 3) from wk_from_blob) fail the cheap test; settle them exactly. */
    int64_t n = wk__layout_numel(l);
    return n > WK_OVERLAP_EXACT_MAX ? true : exact_overlap(l, n);
}

wk_status wk__check_writable(const char *op, const wk_tensor *t, const wk_layout *l) {
    if (t->node && !wk__graph_get()->check_inplace(op, t)) return wk_last_status();
    if (t->storage->read_only)
        return wk__err(WK_ERR_ARG, op, "the destination's storage is read-only (wk_from_blob with WK_BLOB_READ_ONLY "
                                       "or a read-only mapping); write into a copy (wk_copy)");
    if (wk__layout_self_overlaps(l)) {
        char s[128], st[128];
        return wk__err(WK_ERR_ARG, op,
                       "unsupported operation: more than one element of the written-to tensor (shape %s, strides %s) "
                       "refers to a single memory location; write into a copy (wk_copy) instead",
                       wk__shape_str(l->shape, l->rank, s, sizeof s), wk__shape_str(l->stride, l->rank, st, sizeof st));
    }
    /* the write goes ahead: values autograd saved from this storage are stale */
    wk__storage_bump(t->storage);
    return WK_OK;
}
