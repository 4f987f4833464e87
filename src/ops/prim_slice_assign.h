/* The untracked slice assignment (src/ops/slice_assign.c): every argument
 * check, one strided write; nothing recorded. The public wk_slice_assign /
 * wk_slice_assign_ (src/autograd/tracked_slice_assign.c) record one node. */
#ifndef WICK_CORE_PRIM_SLICE_ASSIGN_H
#define WICK_CORE_PRIM_SLICE_ASSIGN_H
#include "tensor/tensor.h"

/* The slice normalised (start, length, step per sliced dim), as
 * autograd's rule (rules_join.c) reads it. */
typedef struct wk__slice_spec {
    int n;
    int64_t start[WK_MAX_RANK], len[WK_MAX_RANK], step[WK_MAX_RANK];
} wk__slice_spec;

/* The arguments checked as the ops check them (errors name op) and the
 * slice normalised into sp; false (error recorded) if they do not fit. */
bool wk__prim_slice_spec(const char *op, const wk_tensor *dst, const int64_t *starts, const int64_t *ends,
                         const int64_t *steps, int n, const wk_tensor *src, wk__slice_spec *sp);
wk_status  wk__prim_slice_assign_(wk_tensor *dst, const int64_t *starts, const int64_t *ends, const int64_t *steps,
                                  int n, const wk_tensor *src);
wk_tensor *wk__prim_slice_assign(const wk_tensor *t, const int64_t *starts, const int64_t *ends, const int64_t *steps,
                                 int n, const wk_tensor *src);

#endif
