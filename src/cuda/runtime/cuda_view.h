/* wk_layout -> wk_cu_view, the plain-data view CUDA kernels receive by value
 * (cuda_kernels.h): how every host-side CUDA file hands a layout to a
 * launcher, so no layout is ever uploaded separately. */
#ifndef WICK_CUDA_VIEW_H
#define WICK_CUDA_VIEW_H
#include <string.h>
#include "tensor/layout.h"
#include "cuda/cuda_kernels.h"

static inline wk_cu_view wk__cu_view(const wk_layout *l) {
    wk_cu_view v;
    memset(&v, 0, sizeof v);
    v.rank = l->rank;
    for (int i = 0; i < l->rank; i++) {
        v.shape[i] = l->shape[i];
        v.stride[i] = l->stride[i];
    }
    v.offset = l->offset;
    return v;
}

/* An absent optional input's view (all zero). */
static inline wk_cu_view wk__cu_no_view(void) {
    wk_cu_view v;
    memset(&v, 0, sizeof v);
    return v;
}
/* l's view, or the absent one when l is NULL. */
static inline wk_cu_view wk__cu_opt_view(const wk_layout *l) { return l ? wk__cu_view(l) : wk__cu_no_view(); }

/* The contiguous view of l's shape (offset 0): how outputs are written. */
static inline wk_cu_view wk__cu_contig_view(const wk_layout *l) {
    wk_layout c;
    wk__layout_contiguous(&c, l->shape, l->rank, 0);
    return wk__cu_view(&c);
}

#endif
