/* Launchers of the CUDA pooling and resampling kernels (kernels_pool.cu,
 * kernels_pool_backward.cu): the backend.h entries pool2d, upsample2d and
 * their backward on NCHW (1-d ops arrive with
 * H = 1). Same conventions as cuda_kernels.h: x is read through its view
 * (any strides, 0 included, and offset: passed by value, nothing uploaded);
 * dst is written contiguous in the shape of ld (ld's strides and offset are
 * not read, as the CPU backend); the work is queued on `s` and the launch's
 * cudaError_t returned as int (0 = ok); an empty output queues nothing.
 * A dtype the CPU backend does not define for the op, or views that do not
 * fit the op (rank != 4, N/C differ, a pooling window that would be empty)
 * give cudaErrorInvalidValue and queue nothing. */
#ifndef WICK_CUDA_KERNELS_POOL_H
#define WICK_CUDA_KERNELS_POOL_H
#include "tensor/backend.h"
#include "cuda/cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* max pool: every dtype; avg pool: f32, f64, bf16, f16, f8e4m3. *p is
 * copied into the kernel argument (read before the call returns). */
int wk__cu_pool2d(wk_cu_stream s, const void *x, wk_cu_view lx, void *dst, wk_cu_view ld, wk_dtype dt,
                  const wk_pool_params *p);
/* nearest: every dtype; bilinear: f32, f64, bf16, f16, f8e4m3 */
int wk__cu_upsample2d(wk_cu_stream s, const void *x, wk_cu_view lx, void *dst, wk_cu_view ld, wk_dtype dt,
                      bool bilinear, bool align_corners);

/* The backward entries (kernels_pool_backward.cu), f32, f64, bf16, f16,
 * f8e4m3. */
/* pool2d backward on NCHW: x read through lx (max needs it for the window's
 * first maximum), g (N, C, OH, OW) through lg; dx contiguous in x's shape.
 * Gather: one item per input element sums the outputs whose windows hold
 * it, in (oh, ow) order. */
int wk__cu_pool2d_backward(wk_cu_stream s, const void *x, wk_cu_view lx, const void *g, wk_cu_view lg, wk_dtype dt,
                           const wk_pool_params *p, void *dx);
/* upsample2d backward: g (N, C, OH, OW) through lg -> dx contiguous in
 * ldx's shape (N, C, H, W); one item per input element sums the outputs
 * that read it with the forward's weights (nearest: weight 1). */
int wk__cu_upsample2d_backward(wk_cu_stream s, const void *g, wk_cu_view lg, void *dx, wk_cu_view ldx, wk_dtype dt,
                               bool bilinear, bool align_corners);

#ifdef __cplusplus
}
#endif
#endif
