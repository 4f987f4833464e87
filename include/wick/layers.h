/*
 * wick — the layer kit (src/nn/layers.c): the layers models are made of,
 * shared by the language models (lm.h, bert.h), training (train.h, which
 * adds torch-style initialisers) and Python's wick.nn.
 *
 * A layer is a plain struct of tensors it owns (*_free releases them;
 * *_params lists them: returns the count, writes up to cap borrowed
 * pointers). A forward is a composition of recorded public ops, so a layer
 * whose tensors are tracked float leaves trains: gradients reach them
 * through the ops. Errors as everywhere: NULL + wk_last_error().
 */
#ifndef WICK_LAYERS_H
#define WICK_LAYERS_H
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = x . weight^T + bias. weight (out, in) of any strides:
 *  - f32 / f64 / f16 / bf16 of x's dtype: wk_broadcast_matmul with the
 *    weight transposed as a view (trainable: weight and bias get gradients);
 *  - a GGML block dtype, or an untracked f16 / bf16 weight with an f32 x:
 *    wk_qmatmul (the weight is frozen; x's gradient is recorded).
 * x (..., in) -> (..., out); a 1-D x gives (out). */
typedef struct wk_linear {
    wk_tensor *weight; /* (out, in) */
    wk_tensor *bias;   /* (out) or NULL */
} wk_linear;
wk_tensor *wk_linear_forward(const wk_linear *l, const wk_tensor *x);
void       wk_linear_free(wk_linear *l);
int        wk_linear_params(const wk_linear *l, wk_tensor **out, int cap);

/* Rows of weight (num, dim) at ids (any integer dtype and shape) ->
 * (ids..., dim): a float table's rows in its dtype; a GGML block table's
 * rows gathered as blocks, then dequantized to f32. */
typedef struct wk_embedding_layer {
    wk_tensor *weight; /* (num, dim) */
} wk_embedding_layer;
wk_tensor *wk_embedding_layer_forward(const wk_embedding_layer *e, const wk_tensor *ids);
void       wk_embedding_layer_free(wk_embedding_layer *e);
int        wk_embedding_layer_params(const wk_embedding_layer *e, wk_tensor **out, int cap);

/* Over the last dim: rms_norm (wk_rms_norm) or layer_norm (wk_layer_norm). */
typedef struct wk_norm_layer {
    wk_tensor *weight; /* (dim) */
    wk_tensor *bias;   /* (dim); NULL for rms (or a layer norm without bias) */
    double eps;
    bool rms;
} wk_norm_layer;
wk_tensor *wk_norm_layer_forward(const wk_norm_layer *n, const wk_tensor *x);
void       wk_norm_layer_free(wk_norm_layer *n);
int        wk_norm_layer_params(const wk_norm_layer *n, wk_tensor **out, int cap);

#ifdef __cplusplus
}
#endif
#endif /* WICK_LAYERS_H */
