/* The one-op reduction wrappers wick.h declares (their part records). */
#include "autograd/node.h"
#include "ops/prim_reduce.h"
#include "tensor/op_lists.h"

static wk_tensor *reduce_all(const wk_tensor *t, wk_reduce_op op) {
    if (!wk__check_in(wk__reduce_name(op), t)) return NULL;
    int dims[WK_MAX_RANK];
    for (int i = 0; i < t->layout.rank; i++) dims[i] = i;
    return wk_reduce(t, op, dims, t->layout.rank, false);
}

/* The one-op functions wick.h declares, by the list's form column. */
#define REDUCE_FN(e, n, form) REDUCE_FN_##form(e, n)
#define REDUCE_FN_DIMS(e, n)                                                                                    \
    wk_tensor *wk_##n(const wk_tensor *t, const int *d, int nd, bool k) { return wk_reduce(t, e, d, nd, k); } \
    wk_tensor *wk_##n##_all(const wk_tensor *t) { return reduce_all(t, e); }
#define REDUCE_FN_ARG(e, n) \
    wk_tensor *wk_##n(const wk_tensor *t, int d, bool k) { return wk_reduce(t, e, &d, 1, k); }
#define REDUCE_FN_ONLY(e, n)
WK_REDUCE_OPS(REDUCE_FN)
