/* The CUDA backend's fused nn entries (cuda_nn.c) for the table in
 * cuda_backend.c: softmax, log_softmax, rms_norm, layer_norm, rope, swiglu
 * and attention, each one kernel of kernels_nn.cu (attention with a second,
 * merging kernel when it splits the keys). */
#ifndef WICK_CUDA_NN_H
#define WICK_CUDA_NN_H
#include "cuda/runtime/cuda_device.h"

#ifdef WICK_HAVE_CUDA
wk_status wk__cuda_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst);
wk_status wk__cuda_log_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst);
wk_status wk__cuda_rms_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                            wk_dtype dt, double eps, void *dst);
wk_status wk__cuda_layer_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                              const void *b, const wk_layout *lb, wk_dtype dt, double eps, void *dst);
wk_status wk__cuda_rope(wk_device *dev, const void *x, const wk_layout *lx, const void *cos, const wk_layout *lc,
                        const void *sin, const wk_layout *lsn, wk_dtype dt, bool interleaved, bool thd, void *dst);
wk_status wk__cuda_swiglu(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype dt, void *dst);
wk_status wk__cuda_attention(wk_device *dev, const void *q, const wk_layout *lq, const void *k, const wk_layout *lk,
                             const void *v, const wk_layout *lv, const void *mask, const wk_layout *lm, wk_dtype dt,
                             const wk_attention_args *a, void *dst);
#endif

#endif
