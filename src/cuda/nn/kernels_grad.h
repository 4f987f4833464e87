/* The C ABI of the CUDA autograd kernels (kernels_grad.cu; pooling's are
 * in conv/kernels_pool.h), called by
 * cuda_grad.c: the optional backward / optimizer entries at the end of
 * src/tensor/backend.h. Same rules as cuda_kernels.h / kernels_nn.h: every
 * launcher queues its work on `s` and returns at once, 0 or the cudaError_t
 * of the launch as int (cudaErrorInvalidValue for a malformed call or a
 * dtype that is not f32 / f64 / f16 / bf16 / f8e4m3); nothing to do queues
 * nothing. Inputs are views (any strides, 0 strides included); outputs
 * contiguous. f32 and f64 compute in their own type, the narrow floats in
 * f32. Every reduction has a fixed order (no atomics): the results do not
 * depend on timing or on the grid. */
#ifndef WICK_CUDA_KERNELS_GRAD_H
#define WICK_CUDA_KERNELS_GRAD_H
#include "tensor/backend.h"
#include "cuda/cuda_kernels.h"
#include "cuda/nn/kernels_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g),
 * sums along dim; dx contiguous in y's shape (g has it too). One warp per
 * row, lane partial sums met in lane order. */
int wk__cu_softmax_backward(wk_cu_stream s, const void *y, wk_cu_view ly, const void *g, wk_cu_view lg, wk_dtype dt,
                            int dim, bool logp, void *dx);

/* Bytes of workspace wk__cu_norm_backward needs (per row: mean and
 * 1 / sqrt(var + eps) in the compute type); 0 when neither dw nor db is
 * wanted. */
size_t wk__cu_norm_backward_workspace(wk_cu_view lx, wk_dtype dt, bool want_dw_db);
/* rms_norm (rms) / layer_norm backward over the last dim D: dx contiguous in
 * x's shape (NULL: not written); dw / db (D contiguous; NULL: not wanted,
 * db only for layer_norm) written, not accumulated. w NULL: weight 1. With
 * dw or db, ws (device memory of the size above) carries the rows'
 * statistics from the row kernel to a column kernel, which sums each column
 * over the rows in row order. */
int wk__cu_norm_backward(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw, const void *g,
                         wk_cu_view lg, wk_dtype dt, double eps, bool rms, void *dx, void *dw, void *db, void *ws);

/* Bytes of workspace wk__cu_attention_backward needs: per query row its
 * log-sum-exp and delta = g . o, in the compute type (O(rows), never
 * O(Lq * Lk)). */
size_t wk__cu_attention_backward_workspace(wk_cu_view lq, wk_dtype dt);
/* Attention backward (the forward's views and args, plus its output o and
 * the gradient g, both (..., Lq, Dv)): dq, dk, dv contiguous in q / k / v's
 * shapes, each kv head's dk / dv summed over its query group. Two kernels,
 * both recomputing the scores tile by tile (32 keys or queries per tile):
 * one warp per (query row, 256 dims of D) writes dq and the row's (lse,
 * delta) into ws; then one warp per (key row, 256 dims) walks the query
 * rows that see that key (every query head of its group, causal start
 * j - q_offset) and writes dk and dv. Each output element is summed by one
 * lane in a fixed order. */
int wk__cu_attention_backward(wk_cu_stream s, const void *q, wk_cu_view lq, const void *k, wk_cu_view lk,
                              const void *v, wk_cu_view lv, const void *mask, wk_cu_view lm, const void *o,
                              wk_cu_view lo, const void *g, wk_cu_view lg, wk_dtype dt, wk_cu_attn_args a, void *ws,
                              void *dq, void *dk, void *dv);

/* One optimizer step over n contiguous elements in place (backend.h's
 * wk_optim_args; *a read before the call returns): param, m, v (NULL where
 * the rule has none) and grad all of dtype dt. One item per element. */
int wk__cu_optim_step(wk_cu_stream s, const wk_optim_args *a, void *param, const void *grad, void *m, void *v,
                      int64_t n, wk_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
