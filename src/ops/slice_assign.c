/* Assignment into a multi-dim strided slice: the slice is one view of dst
 * (offset moved to the starts, sizes the slice lengths, strides multiplied
 * by the steps), src is broadcast to it as a stride-0 view, and one
 * wk_copy_ writes through the view with the backend's copy_strided entry
 * (which also copies src out first when it shares dst's storage).
 * Untracked: the public forms (src/autograd/tracked_slice_assign.c) record
 * one node (rules_join.c); the in-place form rebases dst onto it. */
#include <inttypes.h>

#include "ops/prim_slice_assign.h"
#include "ops/prim_copy.h"
#include "tensor/prim_views.h"

/* The slice view lv of layout l and src's layout ls broadcast to it, and
 * the slice normalised into sp (for autograd's rule); false (error recorded
 * under op) if the arguments do not fit. */
static bool plan(const char *op, const wk_layout *l, const int64_t *starts, const int64_t *ends, const int64_t *steps,
                 int n, const wk_tensor *src, wk_layout *lv, wk_layout *ls, wk__slice_spec *sp) {
    int rank = l->rank;
    if (n < 0 || n > rank) { wk__err(WK_ERR_ARG, op, "%d sliced dims for a rank-%d tensor", n, rank); return false; }
    if (n > 0 && (!starts || !ends)) { wk__err(WK_ERR_ARG, op, "NULL starts or ends"); return false; }
    *lv = *l;
    sp->n = n;
    for (int i = 0; i < n; i++) {
        int64_t size = l->shape[i];
        int64_t s = starts[i], e = ends[i], step = steps ? steps[i] : 1;
        if (step < 1) { wk__err(WK_ERR_ARG, op, "step %" PRId64 " of dim %d must be >= 1", step, i); return false; }
        /* negative positions count from the end; no clamping after that */
        if (s < 0 && s >= -size) s += size;
        if (e < 0 && e >= -size) e += size;
        if (s < 0 || e < s || e > size) {
            wk__err(WK_ERR_INDEX, op,
                    "range [%" PRId64 ", %" PRId64 ") of dim %d does not fit its size %" PRId64
                    " (0 <= start <= end <= size after counting negatives from the end)",
                    starts[i], ends[i], i, size);
            return false;
        }
        int64_t len = e > s ? (e - s - 1) / step + 1 : 0;
        sp->start[i] = s;
        sp->len[i] = len;
        sp->step[i] = step;
        lv->offset += s * l->stride[i];
        lv->shape[i] = len;
        /* with one element or none the step is never taken (and a huge step
         * must not overflow the stride) */
        if (len > 1) lv->stride[i] *= step;
    }
    return wk__layout_broadcast(op, &src->layout, lv->shape, rank, ls) == WK_OK;
}

static wk_status assign(wk_tensor *dst, const wk_layout *lv, const wk_tensor *src, const wk_layout *ls) {
    if (wk__layout_numel(lv) == 0) return WK_OK;
    wk_tensor *view = wk__tensor_view(dst, lv);
    wk_tensor *from = view ? wk__tensor_view(src, ls) : NULL;
    wk_status st = from ? wk__prim_copy_(view, from) : wk_last_status();
    wk_tensor_free(from);
    wk_tensor_free(view);
    return st;
}

bool wk__prim_slice_spec(const char *op, const wk_tensor *dst, const int64_t *starts, const int64_t *ends,
                         const int64_t *steps, int n, const wk_tensor *src, wk__slice_spec *sp) {
    if (!wk__check_same(op, dst, src)) return false;
    wk_layout lv, ls;
    return plan(op, &dst->layout, starts, ends, steps, n, src, &lv, &ls, sp);
}

wk_status wk__prim_slice_assign_(wk_tensor *dst, const int64_t *starts, const int64_t *ends, const int64_t *steps,
                                 int n, const wk_tensor *src) {
    const char *op = "wk_slice_assign_";
    if (!wk__check_same(op, dst, src)) return wk_last_status();
    wk_layout lv, ls;
    wk__slice_spec sp;
    if (!plan(op, &dst->layout, starts, ends, steps, n, src, &lv, &ls, &sp)) return wk_last_status();
    /* assign writes through a fresh (untracked) view: refuse a tracked
     * leaf here, naming this op (passes while recording is suspended) */
    if (dst->node && !wk__graph_get()->check_inplace(op, dst)) return wk_last_status();
    return assign(dst, &lv, src, &ls);
}

wk_tensor *wk__prim_slice_assign(const wk_tensor *t, const int64_t *starts, const int64_t *ends, const int64_t *steps,
                                 int n, const wk_tensor *src) {
    const char *op = "wk_slice_assign";
    if (!wk__check_same(op, t, src)) return NULL;
    wk_layout lv, ls;
    wk__slice_spec sp;
    /* checked on t first so bad arguments cost no copy; then planned again
     * on the copy's own (contiguous) layout */
    if (!plan(op, &t->layout, starts, ends, steps, n, src, &lv, &ls, &sp)) return NULL;
    wk_tensor *r = wk__prim_copy(t);
    if (r && (!plan(op, &r->layout, starts, ends, steps, n, src, &lv, &ls, &sp) || assign(r, &lv, src, &ls) != WK_OK)) {
        wk_tensor_free(r);
        r = NULL;
    }
    return r;
}
