/* The CPU backend's entries (assembled into wk__cpu_backend in cpu_backend.c). */
#ifndef WICK_CPU_BACKEND_H
#define WICK_CPU_BACKEND_H
#include "tensor/backend.h"

extern const wk_backend wk__cpu_backend;
extern const wk_backend_desc wk__cpu_backend_desc; /* cpu_device.c */

wk_status wk__cpu_copy_strided(wk_device *dev, const void *src, const wk_layout *ls, void *dst, const wk_layout *ld,
                               wk_dtype dt);
wk_status wk__cpu_to_host(wk_device *dev, const void *src, const wk_layout *l, wk_dtype dt, void *dst);
wk_status wk__cpu_from_host(wk_device *dev, void *buf, size_t off, const void *src, size_t nbytes);
wk_status wk__cpu_fill(wk_device *dev, void *dst, const wk_layout *ld, wk_dtype dt, double value);
wk_status wk__cpu_cast(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype sdt, void *dst, wk_dtype ddt);

wk_status wk__cpu_unary(wk_device *dev, wk_unary_op op, const void *src, const wk_layout *ls, void *dst, wk_dtype dt);
wk_status wk__cpu_affine(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double mul,
                         double add);
wk_status wk__cpu_powf(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double e);
wk_status wk__cpu_elu(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double alpha);
wk_status wk__cpu_clamp(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double lo,
                        double hi);
wk_status wk__cpu_binary(wk_device *dev, wk_binary_op op, const void *a, const wk_layout *la, const void *b,
                         const wk_layout *lb, void *dst, wk_dtype dt);
wk_status wk__cpu_cmp(wk_device *dev, wk_cmp_op op, const void *a, const wk_layout *la, const void *b,
                      const wk_layout *lb, void *dst, wk_dtype dt);
wk_status wk__cpu_where(wk_device *dev, const void *cond, const wk_layout *lc, wk_dtype cdt, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb, void *dst, wk_dtype dt);
wk_status wk__cpu_reduce(wk_device *dev, wk_reduce_op op, const void *src, const wk_layout *ls, wk_dtype dt,
                         const bool *mask, void *dst);
wk_status wk__cpu_matmul(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                         void *dst, wk_dtype dt);
/* cpu_index.c */
wk_status wk__cpu_index_select(wk_device *dev, const void *src, const wk_layout *ls, const void *ids,
                               const wk_layout *lids, wk_dtype idt, int dim, void *dst, wk_dtype dt);
wk_status wk__cpu_gather(wk_device *dev, const void *src, const wk_layout *ls, const void *ids, const wk_layout *lids,
                         wk_dtype idt, int dim, void *dst, wk_dtype dt);
wk_status wk__cpu_scatter(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                          wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt, bool add);
wk_status wk__cpu_index_add(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                            wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt);
/* cpu_conv.c */
wk_status wk__cpu_conv(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                       void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_args *a);
/* the four shapes of conv, also called directly by tests/cuda/test_cuda_conv_emu.cu */
wk_status wk__cpu_conv1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                         void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p);
wk_status wk__cpu_conv2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                         void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p);
wk_status wk__cpu_conv_transpose1d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                   const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                   const wk_conv_params *p);
wk_status wk__cpu_conv_transpose2d(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                   const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                   const wk_conv_params *p);
/* cpu_pool.c */
wk_status wk__cpu_pool2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                         wk_dtype dt, const wk_pool_params *p);
wk_status wk__cpu_upsample2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                             wk_dtype dt, bool bilinear, bool align_corners);
/* cpu_pool.c: the resampling index maps (shared with the backward) */
void wk__cpu_nearest_index(int64_t in, int64_t out, int64_t stride, int64_t *idx);
void wk__cpu_linear_index_f32(int64_t in, int64_t out, bool ac, int64_t stride, int64_t *i0, int64_t *i1, float *l0,
                              float *l1);
void wk__cpu_linear_index_f64(int64_t in, int64_t out, bool ac, int64_t stride, int64_t *i0, int64_t *i1, double *l0,
                              double *l1);
/* cpu_pool_backward.c: the optional autograd entries */
wk_status wk__cpu_pool2d_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *g,
                                  const wk_layout *lg, wk_dtype dt, const wk_pool_params *p, void *dx);
wk_status wk__cpu_upsample2d_backward(wk_device *dev, const void *g, const wk_layout *lg, void *dx,
                                      const wk_layout *ldx, wk_dtype dt, bool bilinear, bool align_corners);
/* cpu_scan.c */
wk_status wk__cpu_scan(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, int dim, bool prod);
wk_status wk__cpu_sort(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, bool descending,
                       void *values, void *indices);
wk_status wk__cpu_topk(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t k,
                       bool largest, void *values, void *indices);

wk_status wk__cpu_rand_uniform(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double lo, double hi);
wk_status wk__cpu_rand_normal(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double mean, double std);
wk_status wk__cpu_set_seed(wk_device *dev, uint64_t seed);

/* cpu_nn.c: fused optional entries */
wk_status wk__cpu_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst);
wk_status wk__cpu_log_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst);
wk_status wk__cpu_rms_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                           wk_dtype dt, double eps, void *dst);
wk_status wk__cpu_layer_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                             const void *b, const wk_layout *lb, wk_dtype dt, double eps, void *dst);
wk_status wk__cpu_swiglu(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype dt, void *dst);
/* cpu_rope.c */
wk_status wk__cpu_rope(wk_device *dev, const void *x, const wk_layout *lx, const void *cos, const wk_layout *lc,
                       const void *sin, const wk_layout *lsn, wk_dtype dt, bool interleaved, bool thd, void *dst);
/* cpu_attention.c */
wk_status wk__cpu_attention(wk_device *dev, const void *q, const wk_layout *lq, const void *k, const wk_layout *lk,
                            const void *v, const wk_layout *lv, const void *mask, const wk_layout *lm, wk_dtype dt,
                            const wk_attention_args *a, void *dst);
/* cpu_nn_backward.c, cpu_attention_backward.c (autograd; src/tensor/backend.h) */
wk_status wk__cpu_softmax_backward(wk_device *dev, const void *y, const wk_layout *ly, const void *g,
                                   const wk_layout *lg, wk_dtype dt, int dim, bool logp, void *dx);
wk_status wk__cpu_norm_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                const wk_layout *lw, const void *g, const wk_layout *lg, wk_dtype dt, double eps,
                                bool rms, void *dx, void *dw, void *db);
wk_status wk__cpu_attention_backward(wk_device *dev, const void *q, const wk_layout *lq, const void *k,
                                     const wk_layout *lk, const void *v, const wk_layout *lv, const void *mask,
                                     const wk_layout *lm, const void *o, const wk_layout *lo, const void *g,
                                     const wk_layout *lg, wk_dtype dt, const wk_attention_args *a, void *dq, void *dk,
                                     void *dv);

/* cpu_optim.c: the fused optimizer step (train.h) */
wk_status wk__cpu_optim_step(wk_device *dev, const wk_optim_args *a, void *param, const void *grad, void *m, void *v,
                             int64_t n, wk_dtype dt);

#endif
