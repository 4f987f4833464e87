/* Fused nn entries of the CUDA backend: argument plumbing from the backend
 * contract (layouts, wk_attention_args) to the launchers of kernels_nn.cu.
 * The dispatcher (src/ops/nn.c) has checked shapes and dtypes; each entry
 * queues its kernel on the device's stream and returns at once. Attention
 * over few query rows and many keys (decode) splits each row's keys over
 * several warps: the partial results go to a pooled workspace, freed
 * stream-ordered right after the merging kernel is queued.
 *
 * Checked: compiled; the kernels in host emulation
 * (tests/cuda/test_cuda_nn_emu.cu); this file only by tests/test_cuda_ops.c
 * (fused CUDA against the CPU), which needs a GPU. */
#include "cuda/nn/cuda_nn.h"

#ifdef WICK_HAVE_CUDA
#include <string.h>
#include "cuda/runtime/cuda_view.h"
#include "cuda/nn/kernels_nn.h"

static wk_status softmax_entry(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst,
                               bool logp) {
    const char *op = logp ? "wk_log_softmax" : "wk_softmax";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d, wk__cu_softmax(d->stream, src, wk__cu_view(ls), dt, dim, logp, dst));
}

wk_status wk__cuda_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst) {
    return softmax_entry(dev, src, ls, dt, dim, dst, false);
}

wk_status wk__cuda_log_softmax(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim,
                               void *dst) {
    return softmax_entry(dev, src, ls, dt, dim, dst, true);
}

wk_status wk__cuda_rms_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                            wk_dtype dt, double eps, void *dst) {
    const char *op = "wk_rms_norm";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d, wk__cu_rms_norm(d->stream, x, wk__cu_view(lx), w, wk__cu_opt_view(lw),
                                                    dt, eps, dst));
}

wk_status wk__cuda_layer_norm(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                              const void *b, const wk_layout *lb, wk_dtype dt, double eps, void *dst) {
    const char *op = "wk_layer_norm";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d,
                             wk__cu_layer_norm(d->stream, x, wk__cu_view(lx), w, wk__cu_opt_view(lw), b,
                                               wk__cu_opt_view(lb), dt, eps, dst));
}

wk_status wk__cuda_rope(wk_device *dev, const void *x, const wk_layout *lx, const void *cos, const wk_layout *lc,
                        const void *sin, const wk_layout *lsn, wk_dtype dt, bool interleaved, bool thd, void *dst) {
    const char *op = thd ? "wk_rope_thd" : "wk_rope";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d,
                             wk__cu_rope(d->stream, x, wk__cu_view(lx), cos, wk__cu_view(lc), sin, wk__cu_view(lsn),
                                         dt, interleaved, thd, dst));
}

wk_status wk__cuda_swiglu(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype dt, void *dst) {
    const char *op = "wk_swiglu";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d, wk__cu_swiglu(d->stream, x, wk__cu_view(lx), dt, dst));
}

wk_status wk__cuda_attention(wk_device *dev, const void *q, const wk_layout *lq, const void *k, const wk_layout *lk,
                             const void *v, const wk_layout *lv, const void *mask, const wk_layout *lm, wk_dtype dt,
                             const wk_attention_args *a, void *dst) {
    const char *op = "wk_attention";
    WK__CUDA_ENTER(op);
    wk_cu_view vq = wk__cu_view(lq), vk = wk__cu_view(lk), vv = wk__cu_view(lv);
    wk_cu_view vm = wk__cu_opt_view(mask ? lm : NULL);
    wk_cu_attn_args ca = {.scale = a->scale,
                          .causal = a->causal,
                          .q_offset = a->q_offset,
                          .group = a->group,
                          .window = a->window,
                          .softcap = a->softcap};
    int64_t splits = wk__cu_attention_splits(vq, vk, vv, ca);
    size_t wsn = wk__cu_attention_workspace(vq, vv, dt, splits);
    void *ws = NULL;
    if (wsn > 0 && wk__cupool_alloc(d->pool, wsn, &ws) != WK_OK) {
        /* no room for the split partials (nothing was recorded): one warp
         * per row still works */
        ws = NULL;
        wsn = 0;
        splits = 1;
    }
    wk_status st = wk__cuda_launched(op, d, wk__cu_attention(d->stream, q, vq, k, vk, v, vv, mask, vm,
                                                             dt, ca, splits, ws, dst));
    if (ws) wk__cupool_free(d->pool, ws, wsn); /* stream-ordered: after the kernels that use it */
    return st;
}

#endif
