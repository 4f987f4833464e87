/* The untracked scans and sorts (src/ops/scan.c) and the statistics built
 * from reductions, var / std / log_sum_exp (src/ops/stats.c): the
 * public ops' bodies, argument checks included, without recording. The
 * public tracked ones are src/autograd/tracked_scan.c. */
#ifndef WICK_CORE_PRIM_SCAN_H
#define WICK_CORE_PRIM_SCAN_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_cumsum(const wk_tensor *t, int dim);
wk_tensor *wk__prim_cumprod(const wk_tensor *t, int dim);
wk_status  wk__prim_sort(const wk_tensor *t, int dim, bool descending, wk_tensor **values, wk_tensor **indices);
wk_status  wk__prim_topk(const wk_tensor *t, int64_t k, int dim, bool largest, wk_tensor **values,
                         wk_tensor **indices);
wk_tensor *wk__prim_var(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased);
wk_tensor *wk__prim_std(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased);
wk_tensor *wk__prim_log_sum_exp(const wk_tensor *t, const int *dims, int ndims, bool keepdim);

#endif
