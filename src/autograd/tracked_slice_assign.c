/* The public slice assignments: the untracked op (src/ops/slice_assign.c)
 * and one node (rules_join.c). The in-place form makes the node first (an
 * allocation failure writes nothing), writes with recording suspended, then
 * rebases dst onto the node. */
#include "autograd/record.h"

wk_status wk_slice_assign_(wk_tensor *dst, const int64_t *starts, const int64_t *ends, const int64_t *steps, int n,
                           const wk_tensor *src) {
    if (!wk__ag_inplace_on(dst, src)) return wk__prim_slice_assign_(dst, starts, ends, steps, n, src);
    wk__slice_spec sp;
    if (!wk__prim_slice_spec("wk_slice_assign_", dst, starts, ends, steps, n, src, &sp)) return wk_last_status();
    wk__node *nd = wk__ag_slice_assign_node(dst, &sp, src);
    if (!nd) return wk_last_status();
    wk__ag_suspend();
    wk_status st = wk__prim_slice_assign_(dst, starts, ends, steps, n, src);
    wk__ag_resume();
    return wk__ag_rebase(dst, nd, st);
}

wk_tensor *wk_slice_assign(const wk_tensor *t, const int64_t *starts, const int64_t *ends, const int64_t *steps, int n,
                           const wk_tensor *src) {
    if (!wk__ag_on2(t, src)) return wk__prim_slice_assign(t, starts, ends, steps, n, src);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_slice_assign(t, starts, ends, steps, n, src);
    wk__ag_resume();
    wk__slice_spec sp = {0};
    /* the arguments were valid when r was made: sp cannot fail then */
    if (r && !wk__prim_slice_spec("wk_slice_assign", t, starts, ends, steps, n, src, &sp)) {
        wk_tensor_free(r);
        return NULL;
    }
    return wk__ag_slice_assign(r, t, &sp, src);
}
