/* The nn ops of wick (include/wick/nn.h) as module functions with
 * torch.nn.functional's names and argument names (wick.softmax(x, dim),
 * wick.layer_norm(x, (D,), w, b), wick.scaled_dot_product_attention ...),
 * and the Tensor methods torch has for them (t.softmax(dim)); the losses
 * are nn_loss.c's.
 *
 * Plain unary activations (relu, gelu, silu, sigmoid, tanh) are the
 * elementwise part's; python/wick/functional.py maps the torch spellings
 * (gelu(approximate=)) onto them. Where torch accepts more than wick's C
 * entry (layer_norm over several trailing dims, group / batch norm, boolean
 * attention masks, dropout), the difference is composed here from wick ops,
 * so autograd records it. */
#include "nn_args.h"
#include "wick/train.h"

/* dim=: required (torch guesses a dim for softmax with a warning; wick does not). */
static int dim_arg(PyObject *o, const char *fname, int *dim) {
    if (!o || o == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s(): dim is required (wick does not guess it)", fname);
        return -1;
    }
    long long d;
    if (wkpy_int(o, 0, &d) < 0) return -1;
    *dim = (int)d;
    return 0;
}

/* ---- softmax / log_softmax ---- */

static PyObject *softmax_run(const char *fname, bool log, PyObject *input, PyObject *dim_o, PyObject *dtype_o) {
    wk_tensor *x = wkpy_tensor_arg(input, fname, "input");
    int dim;
    if (!x || dim_arg(dim_o, fname, &dim) < 0) return NULL;
    wk_tensor *cast = NULL;
    if (dtype_o && dtype_o != Py_None) { /* torch's dtype=: cast first, then compute */
        wk_dtype dt;
        if (wkpy_dtype_from(dtype_o, WK_F32, &dt) < 0) return NULL;
        if (dt != wk_tensor_dtype(x) && !(cast = wk_to_dtype(x, dt))) return wkpy_raise();
    }
    const wk_tensor *src = cast ? cast : x;
    wk_tensor *r;
    WKPY_NOGIL(wkpy_big(src), r = log ? wk_log_softmax(src, dim) : wk_softmax(src, dim));
    wk_tensor_free(cast);
    return wkpy_wrap(r);
}

static const char *const k_softmax_fn[] = {"input", "dim", "dtype", NULL};
static const char *const k_softmax_m[] = {"dim", "dtype", NULL};

static PyObject *f_softmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    if (wkpy_parse("softmax", args, nargs, kw, k_softmax_fn, 1, a) < 0) return NULL;
    return softmax_run("softmax", false, a[0], a[1], a[2]);
}
static PyObject *f_log_softmax(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    PyObject *a[3];
    if (wkpy_parse("log_softmax", args, nargs, kw, k_softmax_fn, 1, a) < 0) return NULL;
    return softmax_run("log_softmax", true, a[0], a[1], a[2]);
}
static PyObject *m_softmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[2];
    if (wkpy_parse("softmax", args, nargs, kw, k_softmax_m, 0, a) < 0) return NULL;
    return softmax_run("softmax", false, self, a[0], a[1]);
}
static PyObject *m_log_softmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    PyObject *a[2];
    if (wkpy_parse("log_softmax", args, nargs, kw, k_softmax_m, 0, a) < 0) return NULL;
    return softmax_run("log_softmax", true, self, a[0], a[1]);
}

/* ---- normalisation ---- */

/* wick normalises over the last dim; torch's normalized_shape of k trailing
 * dims is the same computation over those dims flattened into one. */
static wk_tensor *layer_norm_dims(const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, int k) {
    if (k == 1) return wk_layer_norm(x, w, b, eps);
    int r = wk_rank(x);
    int64_t shape[WK_MAX_RANK], d = 1;
    for (int i = 0; i < r - k; i++) shape[i] = wk_dim(x, i);
    for (int i = r - k; i < r; i++) d *= wk_dim(x, i);
    shape[r - k] = d;
    wk_scope_begin();
    wk_tensor *xf = wk_reshape(x, shape, r - k + 1);
    wk_tensor *wf = w ? wk_reshape(w, &d, 1) : NULL, *bf = b ? wk_reshape(b, &d, 1) : NULL;
    wk_tensor *y = (w && !wf) || (b && !bf) ? NULL : wk_layer_norm(xf, wf, bf, eps);
    return leave_scope(wk_reshape(y, wk_shape(x), r));
}

static PyObject *f_layer_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "normalized_shape", "weight", "bias", "eps", NULL};
    PyObject *a[5];
    int64_t ns[WK_MAX_RANK];
    int k;
    double eps;
    wk_tensor *x, *w, *b;
    if (wkpy_parse("layer_norm", args, nargs, kw, names, 2, a) < 0 ||
        !(x = wkpy_tensor_arg(a[0], "layer_norm", "input")) || wkpy_shape(a[1], ns, &k) < 0 ||
        opt_tensor(a[2], "layer_norm", "weight", &w) < 0 || opt_tensor(a[3], "layer_norm", "bias", &b) < 0 ||
        wkpy_double(a[4], 1e-5, &eps) < 0)
        return NULL;
    int r = wk_rank(x);
    bool ok = k >= 1 && k <= r;
    for (int i = 0; ok && i < k; i++) ok = ns[i] == wk_dim(x, r - k + i);
    if (!ok) {
        char d[300];
        wk_tensor_describe(x, d, sizeof d);
        PyErr_Format(PyExc_ValueError, "layer_norm(): normalized_shape must be the trailing dims of the input (%s)", d);
        return NULL;
    }
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = layer_norm_dims(x, w, b, eps, k));
    return wkpy_wrap(y);
}

static PyObject *f_rms_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "weight", "eps", NULL};
    PyObject *a[3];
    double eps;
    wk_tensor *x, *w;
    if (wkpy_parse("rms_norm", args, nargs, kw, names, 1, a) < 0 || !(x = wkpy_tensor_arg(a[0], "rms_norm", "input")) ||
        opt_tensor(a[1], "rms_norm", "weight", &w) < 0 || wkpy_double(a[2], 1e-6, &eps) < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = wk_rms_norm(x, w, eps));
    return wkpy_wrap(y);
}

/* A per-channel vector (C) shaped to broadcast over (N, C, d...) of rank r. */
static wk_tensor *channel_view(const wk_tensor *v, int r) {
    int64_t shape[WK_MAX_RANK];
    shape[0] = wk_numel(v);
    for (int i = 1; i < r - 1; i++) shape[i] = 1;
    return wk_reshape(v, shape, r - 1);
}

static wk_tensor *channel_affine(wk_tensor *y, const wk_tensor *w, const wk_tensor *b, int r) {
    if (w) y = wk_mul(y, channel_view(w, r));
    if (b) y = wk_add(y, channel_view(b, r));
    return y;
}

/* (N, C, d...) as (N, G, C/G * d...): wick's layer_norm over the last dim
 * normalises each group; the affine is per channel. */
static wk_tensor *group_norm_run(const wk_tensor *x, int64_t groups, const wk_tensor *w, const wk_tensor *b,
                                 double eps) {
    int r = wk_rank(x);
    int64_t rest = wk_dim(x, 1) / groups;
    for (int i = 2; i < r; i++) rest *= wk_dim(x, i);
    wk_scope_begin();
    wk_tensor *g = wk_layer_norm(wk_reshape(x, (int64_t[]){wk_dim(x, 0), groups, rest}, 3), NULL, NULL, eps);
    return leave_scope(channel_affine(wk_reshape(g, wk_shape(x), r), w, b, r));
}

/* weight / bias: None or (C) */
static int channel_params_ok(const char *fname, const wk_tensor *x, const wk_tensor *const *ps, int n) {
    for (int i = 0; i < n; i++)
        if (ps[i] && (wk_rank(ps[i]) != 1 || wk_dim(ps[i], 0) != wk_dim(x, 1))) {
            char dx[300], dp[300];
            wk_tensor_describe(x, dx, sizeof dx);
            wk_tensor_describe(ps[i], dp, sizeof dp);
            PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): per-channel tensors must be (C) for input %s, got %s",
                         fname, dx, dp);
            return -1;
        }
    return 0;
}

static int channels_input_ok(const char *fname, const wk_tensor *x) {
    if (wk_rank(x) >= 2) return float_input(x, fname, "input");
    PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): input must be (N, C, ...), got rank %d", fname, wk_rank(x));
    return -1;
}

static PyObject *f_group_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "group_norm";
    static const char *const names[] = {"input", "num_groups", "weight", "bias", "eps", NULL};
    PyObject *a[5];
    wk_tensor *x, *w, *b;
    long long groups;
    double eps;
    if (wkpy_parse(fn, args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], fn, "input")) ||
        wkpy_int(a[1], 1, &groups) < 0 || opt_tensor(a[2], fn, "weight", &w) < 0 ||
        opt_tensor(a[3], fn, "bias", &b) < 0 || wkpy_double(a[4], 1e-5, &eps) < 0 || channels_input_ok(fn, x) < 0 ||
        channel_params_ok(fn, x, (const wk_tensor *[]){w, b}, 2) < 0)
        return NULL;
    if (groups < 1 || wk_dim(x, 1) % groups) {
        PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): %lld channels do not split into %lld groups", fn,
                     (long long)wk_dim(x, 1), groups);
        return NULL;
    }
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = group_norm_run(x, groups, w, b, eps));
    return wkpy_wrap(y);
}

typedef struct bn_args {
    const wk_tensor *x, *w, *b;
    wk_tensor *rm, *rv; /* running stats, updated in place when training */
    bool training;
    double momentum, eps;
} bn_args;

/* torch's batch_norm: batch statistics over every dim but the channels
 * when training (biased variance to normalise, the unbiased one into the
 * running variance, updated unrecorded), the running ones otherwise. */
static wk_tensor *batch_norm_run(const bn_args *c) {
    const wk_tensor *x = c->x;
    int r = wk_rank(x), dims[WK_MAX_RANK], nd = 0;
    for (int i = 0; i < r; i++)
        if (i != 1) dims[nd++] = i;
    wk_scope_begin();
    wk_tensor *mean, *var, *y = NULL;
    if (c->training) {
        mean = wk_mean(x, dims, nd, true);
        var = wk_mean(wk_sqr(wk_sub(x, mean)), dims, nd, true);
        if (c->rm || c->rv) {
            double n = (double)wk_numel(x) / (double)wk_dim(x, 1), m = c->momentum;
            bool ok = true;
            wk_no_grad_begin();
            if (c->rm) {
                wk_tensor *nm = wk_add(wk_affine(c->rm, 1.0 - m, 0.0), wk_affine(wk_flatten_all(mean), m, 0.0));
                ok = nm && wk_copy_(c->rm, nm) == WK_OK;
            }
            if (ok && c->rv) {
                wk_tensor *nv =
                    wk_add(wk_affine(c->rv, 1.0 - m, 0.0), wk_affine(wk_flatten_all(var), m * n / (n - 1.0), 0.0));
                ok = nv && wk_copy_(c->rv, nv) == WK_OK;
            }
            wk_no_grad_end();
            if (!ok) mean = NULL; /* the error stays pending: the result is NULL */
        }
    } else {
        mean = channel_view(c->rm, r);
        var = channel_view(c->rv, r);
    }
    if (mean && var) y = wk_div(wk_sub(x, mean), wk_sqrt(wk_affine(var, 1.0, c->eps)));
    return leave_scope(channel_affine(y, c->w, c->b, r));
}

static PyObject *f_batch_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "batch_norm";
    static const char *const names[] = {"input", "running_mean", "running_var", "weight", "bias",
                                        "training", "momentum", "eps", NULL};
    PyObject *a[8];
    bn_args c;
    wk_tensor *x, *rm, *rv, *w, *b;
    if (wkpy_parse(fn, args, nargs, kw, names, 3, a) < 0 || !(x = wkpy_tensor_arg(a[0], fn, "input")) ||
        opt_tensor(a[1], fn, "running_mean", &rm) < 0 || opt_tensor(a[2], fn, "running_var", &rv) < 0 ||
        opt_tensor(a[3], fn, "weight", &w) < 0 || opt_tensor(a[4], fn, "bias", &b) < 0 ||
        wkpy_bool(a[5], false, &c.training) < 0 || wkpy_double(a[6], 0.1, &c.momentum) < 0 ||
        wkpy_double(a[7], 1e-5, &c.eps) < 0 || channels_input_ok(fn, x) < 0 ||
        channel_params_ok(fn, x, (const wk_tensor *[]){rm, rv, w, b}, 4) < 0)
        return NULL;
    if (!c.training && (!rm || !rv)) {
        PyErr_Format(PyExc_ValueError, "%s(): running_mean and running_var are needed when not training", fn);
        return NULL;
    }
    if (c.training && wk_numel(x) <= wk_dim(x, 1)) {
        PyErr_Format(PyExc_ValueError, "%s(): expected more than 1 value per channel when training", fn);
        return NULL;
    }
    c.x = x, c.w = w, c.b = b, c.rm = rm, c.rv = rv;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = batch_norm_run(&c));
    return wkpy_wrap(y);
}

/* ---- rotary embeddings ---- */

static PyObject *rope_run(const char *fname, bool thd, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"input", "cos", "sin", "interleaved", NULL};
    PyObject *a[4];
    wk_tensor *x, *c, *s;
    bool il;
    if (wkpy_parse(fname, args, nargs, kw, names, 3, a) < 0 || !(x = wkpy_tensor_arg(a[0], fname, "input")) ||
        !(c = wkpy_tensor_arg(a[1], fname, "cos")) || !(s = wkpy_tensor_arg(a[2], fname, "sin")) ||
        wkpy_bool(a[3], false, &il) < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = thd ? wk_rope_thd(x, c, s, il) : wk_rope(x, c, s, il));
    return wkpy_wrap(y);
}
static PyObject *f_rope(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return rope_run("rope", false, args, nargs, kw);
}
static PyObject *f_rope_thd(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return rope_run("rope_thd", true, args, nargs, kw);
}

/* ---- attention ---- */

/* torch's boolean masks (True: the key takes part) as wick's additive one:
 * 0 where allowed, -inf where not, in q's dtype. Float masks pass as they are. */
static wk_tensor *additive_mask(const wk_tensor *mask, const wk_tensor *q) {
    if (!mask || wk_dtype_is_float(wk_tensor_dtype(mask))) return mask ? wk_tensor_retain((wk_tensor *)mask) : NULL;
    wk_scope_begin();
    wk_tensor *z = wk_full(wk_shape(mask), wk_rank(mask), 0.0, wk_tensor_dtype(q), wk_tensor_device(q));
    return leave_scope(wk_masked_fill(z, wk_cmp_scalar(mask, 0.0, WK_EQ), -INFINITY));
}

static int scale_arg(PyObject *o, const char *fname, double *scale) {
    if (wkpy_double(o, 0.0, scale) < 0) return -1;
    if (o && o != Py_None && !(*scale > 0.0 && isfinite(*scale))) {
        bad_number(fname, "scale must be finite and > 0 (None: 1/sqrt(D))", *scale);
        return -1;
    }
    return 0;
}

static PyObject *attention_run(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                               const wk_tensor *mask, double scale, bool causal, long long q_offset, bool gqa,
                               long long window, double softcap) {
    wk_tensor *am = NULL, *y = NULL;
    bool big = wkpy_big(q) || wkpy_big(k);
    WKPY_NOGIL(big, am = additive_mask(mask, q));
    if (mask && !am) return wkpy_raise();
    wk_attention_opts o = {
        .mask = am, .scale = scale, .causal = causal, .q_offset = q_offset, .window = window, .softcap = softcap};
    WKPY_NOGIL(big, y = gqa ? wk_attention(q, k, v, &o) : wk_scaled_dot_product_attention(q, k, v, am, scale, causal));
    wk_tensor_free(am);
    return wkpy_wrap(y);
}

static PyObject *f_sdpa(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "scaled_dot_product_attention";
    static const char *const names[] = {"query", "key", "value", "attn_mask", "dropout_p",
                                        "is_causal", "scale", "enable_gqa", NULL};
    PyObject *a[8];
    wk_tensor *q, *k, *v, *mask;
    double p, scale;
    bool causal, gqa;
    if (wkpy_parse(fn, args, nargs, kw, names, 3, a) < 0 || !(q = wkpy_tensor_arg(a[0], fn, "query")) ||
        !(k = wkpy_tensor_arg(a[1], fn, "key")) || !(v = wkpy_tensor_arg(a[2], fn, "value")) ||
        opt_tensor(a[3], fn, "attn_mask", &mask) < 0 || wkpy_double(a[4], 0.0, &p) < 0 ||
        wkpy_bool(a[5], false, &causal) < 0 || scale_arg(a[6], fn, &scale) < 0 || wkpy_bool(a[7], false, &gqa) < 0)
        return NULL;
    if (p != 0.0)
        return bad_number(fn, "dropout_p must be 0 (wick's attention has no dropout)", p);
    return attention_run(q, k, v, mask, scale, causal, 0, gqa, 0, 0.0);
}

static PyObject *f_attention(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "attention";
    static const char *const names[] = {"q", "k", "v", "mask", "scale", "causal", "q_offset", "window", "softcap", NULL};
    PyObject *a[9];
    wk_tensor *q, *k, *v, *mask;
    double scale, softcap;
    bool causal;
    long long off, window;
    if (wkpy_parse(fn, args, nargs, kw, names, 3, a) < 0 || !(q = wkpy_tensor_arg(a[0], fn, "q")) ||
        !(k = wkpy_tensor_arg(a[1], fn, "k")) || !(v = wkpy_tensor_arg(a[2], fn, "v")) ||
        opt_tensor(a[3], fn, "mask", &mask) < 0 || scale_arg(a[4], fn, &scale) < 0 ||
        wkpy_bool(a[5], false, &causal) < 0 || wkpy_int(a[6], 0, &off) < 0 || wkpy_int(a[7], 0, &window) < 0 ||
        wkpy_double(a[8], 0.0, &softcap) < 0)
        return NULL;
    return attention_run(q, k, v, mask, scale, causal, off, true, window, softcap);
}

/* ---- linear, swiglu, dropout ---- */

static PyObject *f_linear(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "weight", "bias", NULL};
    PyObject *a[3];
    wk_tensor *x, *w, *b;
    if (wkpy_parse("linear", args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], "linear", "input")) ||
        !(w = wkpy_tensor_arg(a[1], "linear", "weight")) || opt_tensor(a[2], "linear", "bias", &b) < 0)
        return NULL;
    if (wk_rank(w) != 2 || (b && wk_rank(b) != 1) || (b && wk_dim(b, 0) != wk_dim(w, 0))) {
        char dw[300], db[300] = "None";
        wk_tensor_describe(w, dw, sizeof dw);
        if (b) wk_tensor_describe(b, db, sizeof db);
        PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "linear(): weight must be (out, in) and bias (out); got %s and %s",
                     dw, db);
        return NULL;
    }
    /* wk_linear_forward only reads the layer: the casts do not write */
    wk_linear l = {(wk_tensor *)w, (wk_tensor *)b};
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x) || wkpy_big(w), y = wk_linear_forward(&l, x));
    return wkpy_wrap(y);
}

static PyObject *f_swiglu(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", NULL};
    PyObject *a[1];
    wk_tensor *x;
    if (wkpy_parse("swiglu", args, nargs, kw, names, 1, a) < 0 || !(x = wkpy_tensor_arg(a[0], "swiglu", "input")))
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = wk_swiglu(x));
    return wkpy_wrap(y);
}

/* x * keep / (1 - p), keep ~ Bernoulli(1 - p) from the device's generator:
 * a product, so autograd sends the gradient through the kept elements only */
static wk_tensor *dropout_run(const wk_tensor *x, double p) {
    wk_scope_begin();
    wk_tensor *keep;
    if (p >= 1.0) keep = wk_zeros(wk_shape(x), wk_rank(x), wk_tensor_dtype(x), wk_tensor_device(x));
    else {
        wk_tensor *u = wk_rand(wk_shape(x), wk_rank(x), 0.0, 1.0, wk_tensor_dtype(x), wk_tensor_device(x));
        keep = wk_affine(wk_to_dtype(wk_cmp_scalar(u, p, WK_GE), wk_tensor_dtype(x)), 1.0 / (1.0 - p), 0.0);
    }
    return leave_scope(wk_mul(x, keep));
}

static PyObject *f_dropout(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "p", "training", "inplace", NULL};
    PyObject *a[4];
    wk_tensor *x;
    double p;
    bool training, inplace;
    if (wkpy_parse("dropout", args, nargs, kw, names, 1, a) < 0 || !(x = wkpy_tensor_arg(a[0], "dropout", "input")) ||
        wkpy_double(a[1], 0.5, &p) < 0 || wkpy_bool(a[2], true, &training) < 0 || wkpy_bool(a[3], false, &inplace) < 0)
        return NULL;
    if (!(p >= 0.0 && p <= 1.0))
        return bad_number("dropout", "p must be in [0, 1]", p);
    if (float_input(x, "dropout", "input") < 0) return NULL;
    if (!training || p == 0.0) return Py_NewRef(a[0]); /* torch returns the input itself */
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = dropout_run(x, p));
    if (!inplace || !y) return wkpy_wrap(y);
    wk_status st;
    WKPY_NOGIL(wkpy_big(x), st = wk_copy_(x, y));
    wk_tensor_free(y);
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(a[0]);
}

/* ---- parameters (the module layer's helpers, python/wick/nn.py) ---- */

static PyObject *f_param_new(PyObject *m, PyObject *arg) {
    (void)m;
    wk_tensor *t = wkpy_tensor_arg(arg, "_param_new", "data");
    return t ? wkpy_wrap(wk_param_new(t)) : NULL;
}

static PyObject *f_param_assign(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    wk_tensor *p, *src;
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "_param_assign_(param, src) takes 2 arguments"), NULL;
    if (!(p = wkpy_tensor_arg(args[0], "_param_assign_", "param")) ||
        !(src = wkpy_tensor_arg(args[1], "_param_assign_", "src")))
        return NULL;
    wk_status st;
    WKPY_NOGIL(wkpy_big(p), st = wk_param_assign_(p, src));
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(args[0]);
}

/* ---- tables ---- */

static PyMethodDef nn_methods[] = {
    {"softmax", FAST(m_softmax),
     "softmax(dim, dtype=None)\nexp(x - max) / sum(exp(x - max)) along dim (cast to dtype first if given)."},
    {"log_softmax", FAST(m_log_softmax),
     "log_softmax(dim, dtype=None)\n(x - max) - log(sum(exp(x - max))) along dim."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef nn_functions[] = {
    {"softmax", FAST(f_softmax),
     "softmax(input, dim, dtype=None)\nexp(x - max) / sum(exp(x - max)) along dim; float dtypes (f16 / bf16 "
     "compute through f32). dtype= casts the input first, as torch."},
    {"log_softmax", FAST(f_log_softmax),
     "log_softmax(input, dim, dtype=None)\n(x - max) - log(sum(exp(x - max))) along dim."},
    {"layer_norm", FAST(f_layer_norm),
     "layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05)\n(x - mean) / sqrt(var + eps) * "
     "weight + bias over the trailing dims normalized_shape names (biased variance, as torch); weight and bias "
     "have shape normalized_shape. Another normalized_shape is a ValueError."},
    {"rms_norm", FAST(f_rms_norm),
     "rms_norm(input, weight=None, eps=1e-06)\nx / sqrt(mean(x^2) + eps) * weight over the last dim (candle / "
     "llama's rms_norm; weight 1-D of the last dim's size, None: ones)."},
    {"group_norm", FAST(f_group_norm),
     "group_norm(input, num_groups, weight=None, bias=None, eps=1e-05)\nNormalises (N, C, ...) over each group of "
     "C / num_groups channels and the other dims (biased variance), then weight and bias (C) per channel."},
    {"batch_norm", FAST(f_batch_norm),
     "batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, "
     "eps=1e-05)\nPer-channel normalisation of (N, C, ...), as torch's: training uses the batch's statistics "
     "(biased variance) and updates running_mean / running_var in place (momentum, unbiased variance; None: not "
     "kept); otherwise the running ones."},
    {"rope", FAST(f_rope),
     "rope(input, cos, sin, interleaved=False)\nRotary embedding of x (B, H, T, D), D even, with cos / sin "
     "(T, D/2): pairs (x[i], x[i + D/2]) rotate (GPT-NeoX, candle's rope), or (x[2i], x[2i+1]) when interleaved "
     "(GPT-J, candle's rope_i)."},
    {"rope_thd", FAST(f_rope_thd),
     "rope_thd(input, cos, sin, interleaved=False)\nrope on the (B, T, H, D) layout (candle's rope_thd); the "
     "result is contiguous."},
    {"scaled_dot_product_attention", FAST(f_sdpa),
     "scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, "
     "enable_gqa=False)\nsoftmax(q k^T * scale + mask) v over the last two dims, as torch's. attn_mask: a "
     "float mask added to the scores (q's dtype), or an integer / bool-like mask (nonzero: the key takes part), "
     "broadcastable to (..., Lq, Lk); is_causal masks key j > query i (both may be given); scale None is "
     "1/sqrt(D). enable_gqa: key / value may have fewer heads (dim -3) dividing query's. dropout_p must be 0."},
    {"attention", FAST(f_attention),
     "attention(q, k, v, mask=None, scale=None, causal=False, q_offset=0, window=0, softcap=0.0)\nwick's attention "
     "for decoding and grouped-query heads: q (..., Hq, Lq, D), k / v (..., Hkv, Lk, D) with Hkv dividing Hq, any "
     "strides (a narrow of a KV cache); causal lets query i see key j iff j <= i + q_offset. window > 0: a sliding "
     "window, key j visible only if i + q_offset - j < window; softcap > 0: scores become softcap * tanh(s / "
     "softcap) before the mask (Gemma 2). Result contiguous."},
    {"linear", FAST(f_linear),
     "linear(input, weight, bias=None)\ninput @ weight^T + bias: input (..., in), weight (out, in), bias "
     "(out)."},
    {"swiglu", FAST(f_swiglu),
     "swiglu(input)\nsilu(a) * b where a, b are the two halves of the last dim (candle's swiglu)."},
    {"dropout", FAST(f_dropout),
     "dropout(input, p=0.5, training=True, inplace=False)\nZeroes each element with probability p (the "
     "device's generator, wick.manual_seed) and scales the rest by 1/(1-p); the input itself when not training or "
     "p is 0."},
    {"_param_new", f_param_new, METH_O,
     "_param_new(data)\nA parameter: a new contiguous copy of data that requires grad (a leaf)."},
    {"_param_assign_", (PyCFunction)(void (*)(void))f_param_assign, METH_FASTCALL,
     "_param_assign_(param, src)\nOverwrite param's values with src's in place, unrecorded (same shape, "
     "dtype, device); returns param."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_nn = {nn_methods, NULL, nn_functions, NULL};
