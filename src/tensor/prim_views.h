/* The untracked views (src/tensor/views.c): the public ops' bodies, argument
 * checks included, without recording. The public tracked views are
 * src/autograd/tracked_views.c. */
#ifndef WICK_CORE_PRIM_VIEWS_H
#define WICK_CORE_PRIM_VIEWS_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_reshape(const wk_tensor *t, const int64_t *shape, int rank);
wk_tensor *wk__prim_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len);
wk_tensor *wk__prim_transpose(const wk_tensor *t, int d0, int d1);
wk_tensor *wk__prim_permute(const wk_tensor *t, const int *dims, int rank);
wk_tensor *wk__prim_broadcast_as(const wk_tensor *t, const int64_t *shape, int rank);
wk_tensor *wk__prim_squeeze(const wk_tensor *t, int dim);
wk_tensor *wk__prim_unsqueeze(const wk_tensor *t, int dim);
wk_tensor *wk__prim_select(const wk_tensor *t, int dim, int64_t index);

#endif
