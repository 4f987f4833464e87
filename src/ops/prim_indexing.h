/* The untracked indexing ops (src/ops/indexing.c): the public ops'
 * parameters, every argument check, the backend call; nothing recorded.
 * The public ops (src/autograd/tracked_indexing.c) call them and record one
 * node when an input is tracked. */
#ifndef WICK_CORE_PRIM_INDEXING_H
#define WICK_CORE_PRIM_INDEXING_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_index_select(const wk_tensor *t, const wk_tensor *ids, int dim);
wk_tensor *wk__prim_gather(const wk_tensor *t, const wk_tensor *ids, int dim);
wk_tensor *wk__prim_scatter(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_tensor *wk__prim_scatter_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
/* In place: t writable with one element per index; ids / src that share
 * t's storage are read from a copy first. */
wk_status  wk__prim_scatter_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_status  wk__prim_scatter_add_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_tensor *wk__prim_index_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_tensor *wk__prim_slice_scatter(const wk_tensor *t, const wk_tensor *src, int dim, int64_t start);
wk_tensor *wk__prim_repeat(const wk_tensor *t, const int64_t *reps, int nreps);
wk_tensor *wk__prim_pad_with_zeros(const wk_tensor *t, int dim, int64_t left, int64_t right);

/* The checks the composites above share (errors name op). */
/* t (wk__check_in, or wk__check_in_blocks when blocks: the row gathers
 * that take block dtypes) and ids valid, on one device, an index dtype. */
bool wk__prim_check_ids(const char *op, const wk_tensor *t, const wk_tensor *ids, bool blocks);
bool wk__prim_same_device(const char *op, const wk_tensor *a, const wk_tensor *b);
/* The pad arguments (left, right >= 0, the padded shape valid; same: an
 * edge to replicate); *d the normalised dim. */
bool wk__prim_pad_check(const char *op, const wk_tensor *t, int dim, int64_t left, int64_t right, bool same, int *d);

#endif
