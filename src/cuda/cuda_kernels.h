/* The C ABI between the CUDA backend's host code (cuda_backend.c, plain C)
 * and its kernels (*.cu, compiled ahead of time by nvcc into the library's
 * fatbin). Views travel to kernels by value as kernel arguments, so a
 * strided launch never uploads its layout separately (candle copies dims +
 * strides to the device for every non-contiguous op).
 *
 * Every launcher queues its work on `stream` and returns at once:
 * 0 on success, else the cudaError_t of the launch (as int). Launchers with
 * zero elements queue nothing and return 0. Integer division by zero and
 * out-of-range indices are recorded in `*err_flag` (device memory, set to a
 * wk_status code by the kernel; the host reads it when it next waits) -
 * never undefined behaviour, never a silent wrong answer. */
#ifndef WICK_CUDA_KERNELS_H
#define WICK_CUDA_KERNELS_H
#include <stdint.h>
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *wk_cu_stream; /* = cudaStream_t */

/* A view: wk_layout's fields as plain data (element strides, offset). */
typedef struct wk_cu_view {
    int32_t rank;
    int64_t shape[WK_MAX_RANK];
    int64_t stride[WK_MAX_RANK];
    int64_t offset;
} wk_cu_view;

/* dst written through its view */
int wk__cu_fill(wk_cu_stream s, void *dst, wk_cu_view ld, wk_dtype dt, double value);
int wk__cu_copy_strided(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_cu_view ld, wk_dtype dt);
/* dst contiguous from here on */
int wk__cu_cast(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype sdt, void *dst, wk_dtype ddt);
int wk__cu_unary(wk_cu_stream s, wk_unary_op op, const void *src, wk_cu_view ls, void *dst, wk_dtype dt);
int wk__cu_affine(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double mul, double add);
int wk__cu_powf(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double e);
int wk__cu_elu(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double alpha);
int wk__cu_clamp(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double lo, double hi);
/* a, b already broadcast to the output shape (0 strides) */
int wk__cu_binary(wk_cu_stream s, wk_binary_op op, const void *a, wk_cu_view la, const void *b, wk_cu_view lb,
                  void *dst, wk_dtype dt, int32_t *err_flag);
int wk__cu_cmp(wk_cu_stream s, wk_cmp_op op, const void *a, wk_cu_view la, const void *b, wk_cu_view lb, void *dst,
               wk_dtype dt);
int wk__cu_where(wk_cu_stream s, const void *cond, wk_cu_view lc, wk_dtype cdt, const void *a, wk_cu_view la,
                 const void *b, wk_cu_view lb, void *dst, wk_dtype dt);

/* Reduce the dims of ls with mask[d] set (mask: host array of ls.rank
 * bools, read before the call returns); dst contiguous over the kept dims,
 * in dtype dt (sum/mean/max/min/prod), u32 (argmax/argmin) or u8 (any/all).
 * Deterministic: a fixed per-output tree, independent of timing. */
int wk__cu_reduce(wk_cu_stream s, wk_reduce_op op, const void *src, wk_cu_view ls, wk_dtype dt, const bool *mask,
                  void *dst);

/* Indexing (kernels_index.cu). ids have an integer dtype idt (u8, u32, i32,
 * i64). wk__cu_index_check: every element of the ids view with
 * (unsigned)id >= size lowers *first_bad (device memory, 8 bytes, preset by
 * the caller to ~0ull) to its row-major position in the view (atomicMin:
 * the first bad position, independent of timing). The others check every id
 * again: a bad one is skipped (never read or written out of bounds) and
 * sets *err_flag = WK_ERR_INDEX; callers run wk__cu_index_check first and
 * wait for it, so in-place ops never write with bad ids. Deterministic: no
 * atomics on data; scatter / index_add handle the ids along dim of one
 * position in increasing order (one thread per position of the other dims;
 * one thread for the whole op when dst's view overlaps itself). */
int wk__cu_index_check(wk_cu_stream s, const void *ids, wk_cu_view lids, wk_dtype idt, int64_t size,
                       unsigned long long *first_bad);
/* dst contiguous: src's shape with shape[dim] = numel(ids); ids 1-D */
int wk__cu_index_select(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids,
                        wk_dtype idt, int dim, void *dst, wk_dtype dt, int32_t *err_flag);
/* dst contiguous with ids' shape */
int wk__cu_gather(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids, wk_dtype idt,
                  int dim, void *dst, wk_dtype dt, int32_t *err_flag);
/* in place through ld: dst[.. ids[i] ..] = src[i] (or += when add) */
int wk__cu_scatter(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids, wk_dtype idt,
                   const void *src, wk_cu_view lsrc, int dim, wk_dtype dt, bool add, int32_t *err_flag);
/* in place through ld: dst.index_select(dim, ids) += src; ids 1-D */
int wk__cu_index_add(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids, wk_dtype idt,
                     const void *src, wk_cu_view lsrc, int dim, wk_dtype dt, int32_t *err_flag);
/* index_add with parallelism (unique ids) x (outer positions), same bits as
 * wk__cu_index_add: sorted_ids (len ids of dtype idt, ascending, contiguous)
 * and perm (len i64 original positions) are the output of a STABLE
 * ascending sort of the 1-D ids (wk__cu_sort, dim 0); each run of equal ids
 * is summed in sorted = original order. ld must not overlap itself
 * (returns cudaErrorInvalidValue otherwise): call it only when
 * wk__cu_index_add_prefers_sorted(ld, lids, dim). */
int wk__cu_index_add_sorted(wk_cu_stream s, void *dst, wk_cu_view ld, const void *sorted_ids, const int64_t *perm,
                            wk_dtype idt, int64_t len, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt,
                            int32_t *err_flag);
/* Pure host decision: true when the sorted path should be used (1-D ids of
 * 64 or more, fewer than 65536 positions of dst's dims but dim, dst not
 * overlapping itself; see kernels_index.cu for why these thresholds). */
bool wk__cu_index_add_prefers_sorted(wk_cu_view ld, wk_cu_view lids, int dim);
/* scatter / scatter_add (add) with parallelism numel(ids) instead of the
 * number of lines (positions of ids' dims but dim), same bits as
 * wk__cu_scatter: sorted_ids (dtype idt) and perm (i64 original positions
 * along dim), both contiguous with lids' shape, are the output of a STABLE
 * ascending sort of the ids along dim (wk__cu_sort(ids, lids, idt, dim)).
 * Add: each run of equal ids in a line is summed into dst in sorted =
 * original order; set: the run's last entry (the CPU's last write) is
 * stored. dst's written positions must not overlap (returns
 * cudaErrorInvalidValue otherwise): call it only when
 * wk__cu_scatter_prefers_sorted(ld, lids, dim). */
int wk__cu_scatter_sorted(wk_cu_stream s, void *dst, wk_cu_view ld, const void *sorted_ids, const int64_t *perm,
                          wk_cu_view lids, wk_dtype idt, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt,
                          bool add, int32_t *err_flag);
/* Pure host decision: true when the sorted scatter path should be used
 * (64 or more ids along dim, fewer than 65536 lines, dst's written
 * positions not overlapping; see kernels_index.cu). */
bool wk__cu_scatter_prefers_sorted(wk_cu_view ld, wk_cu_view lids, int dim);

#ifdef __cplusplus
}
#endif
#endif
