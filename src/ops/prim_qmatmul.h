/* The untracked quantized-weight product (src/ops/qmatmul.c); the public
 * one is src/autograd/tracked_qmatmul.c. */
#ifndef WICK_CORE_PRIM_QMATMUL_H
#define WICK_CORE_PRIM_QMATMUL_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_qmatmul(const wk_tensor *x, const wk_tensor *w);

/* wk_qmatmul's argument checks (op names the errors): false, error set. */
bool wk__qmatmul_check(const char *op, const wk_tensor *x, const wk_tensor *w);

/* x (..., K) times nw (1..WK__QMM_MULTI_MAX) weights (N_i, K) of one dtype
 * on x's device: (..., N_0 + ... + N_{nw-1}), equal to wk_cat of the nw
 * wk__prim_qmatmul results along the last dim, bit for bit (src/ops/
 * qmatmul_multi.c; WK__QMM_MULTI_MAX: tensor/backend.h; the backend's qmatmul_multi entry, else those calls). */
wk_tensor *wk__prim_qmatmul_multi(const wk_tensor *x, const wk_tensor *const *ws, int nw);

#endif
