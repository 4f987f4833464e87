/* Autograd entries of the CUDA backend: argument plumbing from the backend
 * contract (layouts, wk_attention_args, wk_optim_args) to the launchers of
 * kernels_grad.cu and conv/kernels_pool_backward.cu. The autograd rules
 * have checked shapes and dtypes; each
 * entry queues its kernels on the device's stream and returns at once. The
 * workspaces (norm_backward's per-row statistics when dw / db are wanted,
 * attention_backward's per-row lse and delta) come from the device's pool
 * and are freed stream-ordered right after the kernels that read them are
 * queued. optim_step allocates nothing.
 *
 * Checked: compiled; the kernels in host emulation
 * (tests/cuda/test_grad_emu.cu); this file only by tests/test_cuda_grad.c,
 * which needs a GPU. */
#include "cuda/nn/cuda_grad.h"

#ifdef WICK_HAVE_CUDA
#include <string.h>
#include "cuda/runtime/cuda_view.h"
#include "cuda/nn/kernels_grad.h"
#include "cuda/conv/kernels_pool.h"

wk_status wk__cuda_softmax_backward(wk_device *dev, const void *y, const wk_layout *ly, const void *g,
                                    const wk_layout *lg, wk_dtype dt, int dim, bool logp, void *dx) {
    const char *op = logp ? "wk_log_softmax backward" : "wk_softmax backward";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d,
                             wk__cu_softmax_backward(d->stream, y, wk__cu_view(ly), g, wk__cu_view(lg), dt, dim, logp,
                                                     dx));
}

wk_status wk__cuda_norm_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                 const wk_layout *lw, const void *g, const wk_layout *lg, wk_dtype dt, double eps,
                                 bool rms, void *dx, void *dw, void *db) {
    const char *op = rms ? "wk_rms_norm backward" : "wk_layer_norm backward";
    WK__CUDA_ENTER(op);
    wk_cu_view vx = wk__cu_view(lx);
    size_t wsn = wk__cu_norm_backward_workspace(vx, dt, dw || db);
    void *ws = NULL;
    if (wsn > 0) {
        wk_status st = wk__cupool_alloc(d->pool, wsn, &ws);
        if (st != WK_OK) return st;
    }
    wk_status st = wk__cuda_launched(op, d,
                                     wk__cu_norm_backward(d->stream, x, vx, w, wk__cu_opt_view(w ? lw : NULL),
                                                          g, wk__cu_view(lg), dt, eps, rms, dx, dw, db, ws));
    if (ws) wk__cupool_free(d->pool, ws, wsn); /* stream-ordered: after the kernels that read it */
    return st;
}

wk_status wk__cuda_attention_backward(wk_device *dev, const void *q, const wk_layout *lq, const void *k,
                                      const wk_layout *lk, const void *v, const wk_layout *lv, const void *mask,
                                      const wk_layout *lm, const void *o, const wk_layout *lo, const void *g,
                                      const wk_layout *lg, wk_dtype dt, const wk_attention_args *a, void *dq,
                                      void *dk, void *dv) {
    const char *op = "wk_attention backward";
    WK__CUDA_ENTER(op);
    wk_cu_view vq = wk__cu_view(lq);
    wk_cu_attn_args ca = {.scale = a->scale,
                          .causal = a->causal,
                          .q_offset = a->q_offset,
                          .group = a->group,
                          .window = a->window,
                          .softcap = a->softcap};
    size_t wsn = wk__cu_attention_backward_workspace(vq, dt);
    void *ws = NULL;
    if (wsn > 0) {
        wk_status st = wk__cupool_alloc(d->pool, wsn, &ws);
        if (st != WK_OK) return st;
    }
    wk_status st = wk__cuda_launched(
        op, d,
        wk__cu_attention_backward(d->stream, q, vq, k, wk__cu_view(lk), v, wk__cu_view(lv), mask,
                                  wk__cu_opt_view(mask ? lm : NULL), o, wk__cu_view(lo), g, wk__cu_view(lg), dt,
                                  ca, ws, dq, dk, dv));
    if (ws) wk__cupool_free(d->pool, ws, wsn);
    return st;
}

wk_status wk__cuda_optim_step(wk_device *dev, const wk_optim_args *a, void *param, const void *grad, void *m, void *v,
                              int64_t n, wk_dtype dt) {
    const char *op = "optimizer step";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d, wk__cu_optim_step(d->stream, a, param, grad, m, v, n, dt));
}

wk_status wk__cuda_pool2d_backward(wk_device *dev, const void *x, const wk_layout *lx, const void *g,
                                   const wk_layout *lg, wk_dtype dt, const wk_pool_params *p, void *dx) {
    const char *op = p->is_max ? "max_pool2d backward" : "avg_pool2d backward";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d,
                             wk__cu_pool2d_backward(d->stream, x, wk__cu_view(lx), g, wk__cu_view(lg), dt, p, dx));
}

wk_status wk__cuda_upsample2d_backward(wk_device *dev, const void *g, const wk_layout *lg, void *dx,
                                       const wk_layout *ldx, wk_dtype dt, bool bilinear, bool align_corners) {
    const char *op = bilinear ? "upsample_bilinear2d backward" : "upsample_nearest2d backward";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d,
                             wk__cu_upsample2d_backward(d->stream, g, wk__cu_view(lg), dx, wk__cu_contig_view(ldx), dt,
                                                        bilinear, align_corners));
}

#else
typedef int wk__cuda_grad_not_built; /* keeps the translation unit non-empty */
#endif
