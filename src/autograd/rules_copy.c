/* Backward rules of the copies between dtypes and devices: the gradient
 * goes back to the input's dtype / device. */
#include "autograd/record.h"

static wk_status to_dtype_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, wk_to_dtype(c->g, c->n->in[0].dtype)); }

wk_tensor *wk__ag_to_dtype(wk_tensor *r, const wk_tensor *x) {
    if (!r) return NULL;
    if (!wk_dtype_is_float(x->dtype)) return r;
    return wk__node_attach(wk__node_new(WK__OP_TO_DTYPE, "wk_to_dtype", to_dtype_backward, 1, &x), r);
}

static wk_status to_device_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, wk_to_device(c->g, c->n->in[0].dev)); }

wk_tensor *wk__ag_to_device(wk_tensor *r, const wk_tensor *x) {
    if (!r) return NULL;
    return wk__node_attach(wk__node_new(WK__OP_TO_DEVICE, "wk_to_device", to_device_backward, 1, &x), r);
}
