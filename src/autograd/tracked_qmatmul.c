/* The public quantized-weight product (its body: src/ops/qmatmul.c): it
 * records with respect to the float input x (and an f16 / bf16 weight), so
 * adapters train on a quantized model; a block-quantized weight is frozen
 * (rules_quant.c). */
#include "autograd/record.h"
#include "ops/prim_qmatmul.h"

wk_tensor *wk_qmatmul(const wk_tensor *x, const wk_tensor *w) {
    if (!wk__ag_on2(x, w)) return wk__prim_qmatmul(x, w);
    return wk__ag_qmatmul(wk__prim_qmatmul(x, w), x, w);
}
