/* The untracked fused nn ops (src/ops/nn.c): the public ops' parameters
 * (include/wick/nn.h) and argument checks, then the backend's fused entry.
 * Nothing recorded. The public ops (src/nn/nn.c) call them and record.
 *
 * composite (never NULL): set when the arguments are valid but the backend
 * has no fused entry for the op; the prim then returns NULL with no error
 * recorded and the caller computes the op as a composite of public ops.
 * Otherwise it is cleared and the result (NULL: error recorded) is final. */
#ifndef WICK_CORE_PRIM_NN_H
#define WICK_CORE_PRIM_NN_H
#include "tensor/tensor.h"

wk_tensor *wk__prim_softmax(const wk_tensor *t, int dim, bool *composite);
wk_tensor *wk__prim_log_softmax(const wk_tensor *t, int dim, bool *composite);
wk_tensor *wk__prim_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps, bool *composite);
wk_tensor *wk__prim_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps,
                               bool *composite);
wk_tensor *wk__prim_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                         bool *composite);
wk_tensor *wk__prim_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                             bool *composite);
/* an empty x takes the composite too */
wk_tensor *wk__prim_swiglu(const wk_tensor *x, bool *composite);
/* a: the effective arguments (scale resolved, group Hq / Hkv), set once the
 * arguments are checked (whenever the result is not NULL or composite is set) */
wk_tensor *wk__prim_scaled_dot_product_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                                 const wk_tensor *mask, double scale, bool causal, wk_attention_args *a,
                                                 bool *composite);
/* wk_attention with its options (wk_attention_opts but the mask) in req:
 * scale, causal, q_offset, window, softcap as given (req->group unused) */
wk_tensor *wk__prim_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_tensor *mask,
                              const wk_attention_args *req, wk_attention_args *a, bool *composite);

/* The additive visibility mask (Lq, Lk) in dtype dt (f32 or f64) on dev of
 * a's causal / q_offset / window rules: 0 where query i sees key j (j <= i
 * + q_offset when causal; i + q_offset - j < window when window > 0), -inf
 * elsewhere. A constant (untracked); the forward composite and the
 * backward rule (src/nn) both use it. OOM errors name op. */
wk_tensor *wk__prim_causal_mask(const char *op, wk_device *dev, wk_dtype dt, int64_t lq, int64_t lk,
                                const wk_attention_args *a);

#endif
