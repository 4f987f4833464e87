/* Parameters: tracked leaves that optimizers update in place. */
#include "train/train_internal.h"
#include "wick/train.h"
#include "autograd/node.h"

wk_tensor *wk_param_new(const wk_tensor *init) {
    const char *op = "wk_param_new";
    if (!wk__check_in(op, init)) return NULL;
    if (!wk_dtype_is_float(init->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "parameters are float tensors, got %s", wk_dtype_name(init->dtype));
        return NULL;
    }
    /* a fresh storage (never init's, even when init is contiguous) and no
     * graph: the copy is made unrecorded, then marked as a leaf */
    wk_no_grad_begin();
    wk_tensor *p = wk_copy(init);
    wk_no_grad_end();
    if (!p) return NULL;
    if (wk_requires_grad(p, true) != WK_OK) {
        wk_tensor_free(p);
        return NULL;
    }
    return p;
}

wk_status wk_param_assign_(wk_tensor *p, const wk_tensor *src) {
    const char *op = "wk_param_assign_";
    if (!wk__check_in(op, p) || !wk__check_in(op, src)) return wk_last_status();
    if (wk_shares_storage(p, src))
        return wk__err(WK_ERR_ARG, op, "src shares p's storage: an overlapping copy would read values it already "
                                       "wrote; assign from a wk_copy of it");
    if (!wk__check_same(op, p, src)) return wk_last_status();
    wk_no_grad_begin();
    wk_status st = wk_copy_(p, src);
    wk_no_grad_end();
    return st;
}

