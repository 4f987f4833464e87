/* The public matrix products that record (their untracked bodies:
 * src/ops/matmul.c). */
#include "autograd/record.h"
#include "ops/prim_matmul.h"

wk_tensor *wk_matmul(const wk_tensor *a, const wk_tensor *b) {
    if (!wk__ag_on2(a, b)) return wk__prim_matmul(a, b);
    return wk__ag_matmul(wk__prim_matmul(a, b), a, b, "wk_matmul");
}

wk_tensor *wk_broadcast_matmul(const wk_tensor *a, const wk_tensor *b) {
    if (!wk__ag_on2(a, b)) return wk__prim_broadcast_matmul(a, b);
    return wk__ag_matmul(wk__prim_broadcast_matmul(a, b), a, b, "wk_broadcast_matmul");
}
