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

#ifdef __cplusplus
}
#endif
#endif
