/* Layouts: shape, strides (in elements) and start offset of a view. All
 * shape logic lives here once; backends receive layouts and never re-derive
 * shapes. */
#ifndef WICK_CORE_LAYOUT_H
#define WICK_CORE_LAYOUT_H
#include "wick/wick.h"

typedef struct wk_layout {
    int rank;
    int64_t shape[WK_MAX_RANK];
    int64_t stride[WK_MAX_RANK];
    int64_t offset;
} wk_layout;

/* Row-major contiguous layout for a shape (validated by the caller). */
void    wk__layout_contiguous(wk_layout *l, const int64_t *shape, int rank, int64_t offset);
int64_t wk__layout_numel(const wk_layout *l);
/* Row-major contiguous, ignoring size-1 dims (candle's rule). */
bool    wk__layout_is_contiguous(const wk_layout *l);
/* Validate a user shape: rank in [0, WK_MAX_RANK], dims >= 0, product fits.
 * Records the error under `op` and returns its status. */
wk_status wk__check_shape(const char *op, const int64_t *shape, int rank, int64_t *numel);
/* Normalize a possibly negative dim for a given rank; error if out of range. */
wk_status wk__norm_dim(const char *op, int dim, int rank, int *out);
/* Smallest and one-past-largest element offsets the view touches (for bounds
 * checks of views against the storage). numel 0 gives [offset, offset). */
void    wk__layout_span(const wk_layout *l, int64_t *lo, int64_t *hi);
/* Dims [d0, d1) of l as ONE row-major dim: true and *stride (its element
 * stride) when each dim steps over the next one's extent exactly (size-1
 * dims ignored; all of size 1: *stride = 1), false otherwise. How the GPU
 * code decides whether a batch or a group of dims can be handed to cuBLAS
 * with one stride. */
bool    wk__layout_merged_stride(const wk_layout *l, int d0, int d1, int64_t *stride);
/* numpy broadcasting of two shapes into out. */
wk_status wk__broadcast_shapes(const char *op, const int64_t *a, int ra, const int64_t *b, int rb,
                               int64_t *out, int *rout);
/* View l broadcast to shape (right aligned, stride 0 on stretched dims). */
wk_status wk__layout_broadcast(const char *op, const wk_layout *l, const int64_t *shape, int rank, wk_layout *out);
/* "[2, 3]" into buf. */
const char *wk__shape_str(const int64_t *shape, int rank, char *buf, size_t len);

/* Element offset of row-major flat index idx over (shape, stride) of the
 * given rank: the one place a flat position is turned into an offset. */
static inline int64_t wk__unravel(const int64_t *shape, const int64_t *stride, int rank, int64_t idx) {
    int64_t off = 0;
    for (int i = rank - 1; i >= 0; i--) {
        off += (idx % shape[i]) * stride[i];
        idx /= shape[i];
    }
    return off;
}

/* ---- strided iteration for kernels ----
 * Up to 4 operands sharing one shape are coalesced: adjacent dims that are
 * contiguous in EVERY operand merge, size-1 dims drop. The result has the
 * innermost dim last; kernels loop over outer indices and run an inner loop
 * with per-operand strides. */
#define WK_ITER_MAX_OPS 4
typedef struct wk_iter {
    int nops, rank;                         /* rank >= 1 after coalescing */
    int64_t shape[WK_MAX_RANK];
    int64_t stride[WK_ITER_MAX_OPS][WK_MAX_RANK];
    int64_t offset[WK_ITER_MAX_OPS];
} wk_iter;
void wk__iter_init(wk_iter *it, int nops, const wk_layout *const *ls);
/* Element offsets of each operand at flat outer position `outer` (row-major
 * over all dims but the last). */
void wk__iter_offsets(const wk_iter *it, int64_t outer, int64_t *offs);
static inline int64_t wk__iter_outer_count(const wk_iter *it) {
    int64_t n = 1;
    for (int i = 0; i < it->rank - 1; i++) n *= it->shape[i];
    return n;
}

#endif
