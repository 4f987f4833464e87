/* Small layers (train.h): structs of parameters initialised as torch.nn's
 * reset_parameters, from the device's generator:
 *  - Linear, Conv2d: kaiming_uniform(a = sqrt(5)) on the weight, which is
 *    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same bound;
 *  - Embedding: N(0, 1);
 *  - LayerNorm / RmsNorm: weight ones, bias zeros.
 * The layers themselves, their forwards and *_free / *_params, are the
 * layer kit's (include/wick/layers.h, src/nn/layers.c); this file makes
 * them trainable parameters. Conv2d is training's own. */
#include "train/train_internal.h"
#include "wick/train.h"
#include <math.h>

/* A leaf parameter from a fresh (untracked, contiguous) tensor t. */
static wk_tensor *as_param(wk_tensor *t) {
    if (!t) return NULL;
    wk_keep(t);
    if (wk_requires_grad(t, true) != WK_OK) {
        wk_tensor_free(t);
        return NULL;
    }
    return t;
}

static wk_tensor *uniform_param(const int64_t *shape, int rank, double bound, wk_dtype dt, wk_device *dev) {
    wk_no_grad_begin();
    wk_tensor *t = wk_rand(shape, rank, -bound, bound, dt, dev);
    wk_no_grad_end();
    return as_param(t);
}

static bool check_layer(const char *op, wk_dtype dt, wk_device *dev) {
    if (!dev) {
        wk__err(WK_ERR_ARG, op, "NULL device");
        return false;
    }
    if (!wk_dtype_is_float(dt) || wk_dtype_is_quantized(dt)) {
        wk__err(WK_ERR_DTYPE, op, "layers hold float parameters, not %s", wk_dtype_name(dt));
        return false;
    }
    return true;
}

/* ---- Linear ---- */

wk_status wk_linear_init(wk_linear *l, int64_t in, int64_t out, bool bias, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_linear_init";
    if (!l) return wk__err(WK_ERR_ARG, op, "NULL layer");
    l->weight = l->bias = NULL;
    if (!check_layer(op, dt, dev)) return wk_last_status();
    if (in < 1 || out < 1) return wk__err(WK_ERR_SHAPE, op, "in %lld and out %lld must be >= 1", (long long)in, (long long)out);
    double bound = 1.0 / sqrt((double)in);
    l->weight = uniform_param((int64_t[]){out, in}, 2, bound, dt, dev);
    if (l->weight && bias) l->bias = uniform_param((int64_t[]){out}, 1, bound, dt, dev);
    if (!l->weight || (bias && !l->bias)) {
        wk_linear_free(l);
        return wk_last_status();
    }
    return WK_OK;
}

/* ---- Embedding ---- */

wk_status wk_embedding_layer_init(wk_embedding_layer *e, int64_t num, int64_t dim, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_embedding_layer_init";
    if (!e) return wk__err(WK_ERR_ARG, op, "NULL layer");
    e->weight = NULL;
    if (!check_layer(op, dt, dev)) return wk_last_status();
    if (num < 1 || dim < 1) return wk__err(WK_ERR_SHAPE, op, "num %lld and dim %lld must be >= 1", (long long)num, (long long)dim);
    wk_no_grad_begin();
    wk_tensor *t = wk_randn((int64_t[]){num, dim}, 2, 0.0, 1.0, dt, dev);
    wk_no_grad_end();
    e->weight = as_param(t);
    return e->weight ? WK_OK : wk_last_status();
}

/* ---- Conv2d ---- */

wk_status wk_conv2d_layer_init(wk_conv2d_layer *c, int64_t in, int64_t out, int64_t kh, int64_t kw,
                               const wk_conv_params *p, bool bias, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_conv2d_layer_init";
    if (!c) return wk__err(WK_ERR_ARG, op, "NULL layer");
    c->weight = c->bias = NULL;
    c->p = p ? *p : (wk_conv_params){0};
    if (!check_layer(op, dt, dev)) return wk_last_status();
    int64_t groups = c->p.groups ? c->p.groups : 1;
    if (in < 1 || out < 1 || kh < 1 || kw < 1 || groups < 1 || in % groups || out % groups)
        return wk__err(WK_ERR_SHAPE, op, "in %lld, out %lld (both divisible by groups %lld) and kernel %lldx%lld must be >= 1",
                       (long long)in, (long long)out, (long long)groups, (long long)kh, (long long)kw);
    if (c->p.padding < 0 || c->p.stride < 0 || c->p.dilation < 0 || c->p.output_padding != 0)
        return wk__err(WK_ERR_ARG, op, "padding, stride, dilation must be >= 0 and output_padding 0");
    double bound = 1.0 / sqrt((double)(in / groups * kh * kw));
    c->weight = uniform_param((int64_t[]){out, in / groups, kh, kw}, 4, bound, dt, dev);
    if (c->weight && bias) c->bias = uniform_param((int64_t[]){out}, 1, bound, dt, dev);
    if (!c->weight || (bias && !c->bias)) {
        wk_conv2d_layer_free(c);
        return wk_last_status();
    }
    return WK_OK;
}

wk_tensor *wk_conv2d_layer_forward(const wk_conv2d_layer *c, const wk_tensor *x) {
    if (!c || !c->weight) {
        wk__err(WK_ERR_ARG, "wk_conv2d_layer_forward", "layer not initialised");
        return NULL;
    }
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    wk_tensor *y = wk_conv2d(x, c->weight, &c->p);
    if (c->bias) y = wk_add(y, wk_reshape(c->bias, (int64_t[]){1, c->weight->layout.shape[0], 1, 1}, 4));
    if (y) wk_keep(y);
    wk_scope_end();
    return wk__hand_over(y);
}

void wk_conv2d_layer_free(wk_conv2d_layer *c) {
    if (!c) return;
    wk_tensor_free(c->weight);
    wk_tensor_free(c->bias);
    c->weight = c->bias = NULL;
}

int wk_conv2d_layer_params(const wk_conv2d_layer *c, wk_tensor **out, int cap) {
    return c ? wk__list_params(c->weight, c->bias, out, cap) : 0;
}

/* ---- LayerNorm / RmsNorm ---- */

wk_status wk_norm_layer_init(wk_norm_layer *n, int64_t dim, bool rms, double eps, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_norm_layer_init";
    if (!n) return wk__err(WK_ERR_ARG, op, "NULL layer");
    n->weight = n->bias = NULL;
    n->rms = rms;
    n->eps = eps;
    if (!check_layer(op, dt, dev)) return wk_last_status();
    if (dim < 1) return wk__err(WK_ERR_SHAPE, op, "dim %lld must be >= 1", (long long)dim);
    if (!(eps >= 0.0) || !isfinite(eps)) return wk__err(WK_ERR_ARG, op, "eps %g must be finite and >= 0", eps);
    n->weight = as_param(wk_ones((int64_t[]){dim}, 1, dt, dev));
    if (n->weight && !rms) n->bias = as_param(wk_zeros((int64_t[]){dim}, 1, dt, dev));
    if (!n->weight || (!rms && !n->bias)) {
        wk_norm_layer_free(n);
        return wk_last_status();
    }
    return WK_OK;
}
