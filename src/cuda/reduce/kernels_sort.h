/* C ABI of the CUDA scans (kernels_scan.cu) and sort / top-k
 * (kernels_sort.cu): the backend entries scan, sort and topk of
 * src/tensor/backend.h, mirroring src/cpu/reduce/cpu_scan.c bit for bit (see each .cu).
 *
 * Like every launcher (cuda_kernels.h): src is a view of any strides
 * (0-strides included) passed by value, dim in [0, ls.rank), outputs
 * contiguous with src's shape (topk: shape[dim] = k), the work is queued on
 * `s` and the cudaError_t of the launch comes back as int (0 = ok);
 * nothing is queued when there are 0 elements.
 *
 * Workspace: the caller allocates `ws` (device memory, any alignment the
 * pool gives, i.e. >= 8 bytes) of the size the matching *_workspace
 * function returns for the same (ls, dim, dt) - 0 means none is needed and
 * ws may be NULL - and may free it right after the launcher returns: every
 * use of it is queued on `s` (stream-ordered reuse). */
#ifndef WICK_CUDA_KERNELS_SORT_H
#define WICK_CUDA_KERNELS_SORT_H
#include <stddef.h>
#include "cuda/cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of workspace wk__cu_scan needs (0: none). */
size_t wk__cu_scan_workspace(wk_cu_view ls, int dim, wk_dtype dt);
/* cumsum (prod = false) / cumprod along dim; dst contiguous, dtype dt. */
int wk__cu_scan(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, int dim, bool prod, void *ws);

/* Bytes of workspace wk__cu_sort and wk__cu_topk need (0: none). */
size_t wk__cu_sort_workspace(wk_cu_view ls, int dim, wk_dtype dt);
/* Stable sort along dim: values (dtype dt) and indices (i64), either may be
 * NULL. Ascending, or descending when `descending`; order as the CPU's. */
int wk__cu_sort(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype dt, int dim, bool descending, void *values,
                void *indices, void *ws);
/* The first k of the sort along dim (largest: descending); 0 <= k <= len. */
int wk__cu_topk(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype dt, int dim, int64_t k, bool largest,
                void *values, void *indices, void *ws);

#ifdef __cplusplus
}
#endif
#endif
