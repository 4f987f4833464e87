/* The public block conversions (their bodies: src/ops/quantize.c). */
#include "autograd/record.h"
#include "ops/prim_quantize.h"

/* Quantizing has no gradient (the block values are frozen): a tensor that
 * requires grad in grad mode is refused rather than silently dropped. */
wk_tensor *wk_quantize(const wk_tensor *t, wk_dtype qdt) {
    if (wk__ag_on1(t)) {
        wk__err(WK_ERR_ARG, "wk_quantize",
                "t requires grad (%s) while grad mode is on: quantized blocks have no gradient, so it would be "
                "dropped; quantize wk_detach(t), or inside wk_no_grad_begin / wk_no_grad_end",
                t->node->backward ? t->node->name : "a leaf marked with wk_requires_grad");
        return NULL;
    }
    return wk__prim_quantize(t, qdt);
}

wk_tensor *wk_quantize_imatrix(const wk_tensor *t, wk_dtype qdt, const float *imatrix, int64_t n) {
    if (wk__ag_on1(t)) {
        wk__err(WK_ERR_ARG, "wk_quantize_imatrix",
                "t requires grad while grad mode is on: quantized blocks have no gradient; quantize wk_detach(t)");
        return NULL;
    }
    return wk__prim_quantize_imatrix(t, qdt, imatrix, n);
}

/* A tracked input is a block tensor made from a tracked float by wk_to_dtype
 * (fake quantization): the gradient goes straight through to that float
 * (rules_quant.c). A block-quantized leaf is frozen. */
wk_tensor *wk_dequantize(const wk_tensor *w, wk_dtype dt) {
    if (!wk__ag_on1(w)) return wk__prim_dequantize(w, dt);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_dequantize(w, dt);
    wk__ag_resume();
    return wk__ag_dequantize(r, w);
}
