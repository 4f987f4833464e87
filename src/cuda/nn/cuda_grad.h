/* The CUDA backend's autograd entries (cuda_grad.c) for the table in
 * cuda_backend.c: softmax_backward, norm_backward, attention_backward,
 * optim_step, pool2d_backward and upsample2d_backward (backend.h's optional
 * entries), each the kernels of kernels_grad.cu (pooling: conv/kernels_pool_backward.cu). */
#ifndef WICK_CUDA_GRAD_H
#define WICK_CUDA_GRAD_H
#include "cuda/runtime/cuda_device.h"

#ifdef WICK_HAVE_CUDA
wk_status wk__cuda_softmax_backward(wk_device *dev, const void *y, const wk_layout *ly, const void *g,
                                    const wk_layout *lg, wk_dtype dt, int dim, bool logp, void *dx);
wk_status wk__cuda_norm_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                 const wk_layout *lw, const void *g, const wk_layout *lg, wk_dtype dt, double eps,
                                 bool rms, void *dx, void *dw, void *db);
wk_status wk__cuda_attention_backward(wk_device *dev, const void *q, const wk_layout *lq, const void *k,
                                      const wk_layout *lk, const void *v, const wk_layout *lv, const void *mask,
                                      const wk_layout *lm, const void *o, const wk_layout *lo, const void *g,
                                      const wk_layout *lg, wk_dtype dt, const wk_attention_args *a, void *dq,
                                      void *dk, void *dv);
wk_status wk__cuda_optim_step(wk_device *dev, const wk_optim_args *a, void *param, const void *grad, void *m, void *v,
                              int64_t n, wk_dtype dt);
wk_status wk__cuda_pool2d_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *g,
                                   const wk_layout *lg, wk_dtype dt, const wk_pool_params *p, void *dx);
wk_status wk__cuda_upsample2d_backward(wk_device *dev, const void *g, const wk_layout *lg, void *dx,
                                       const wk_layout *ldx, wk_dtype dt, bool bilinear, bool align_corners);
#endif

#endif
