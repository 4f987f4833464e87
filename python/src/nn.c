/* The nn ops of wick (include/wick/nn.h) and the losses of train.h, as
 * module functions with torch.nn.functional's names and argument names
 * (wick.softmax(x, dim), wick.layer_norm(x, (D,), w, b), wick.cross_entropy
 * ...), and the Tensor methods torch has for them (t.softmax(dim)).
 *
 * Plain unary activations (relu, gelu, silu, sigmoid, tanh) are the
 * elementwise part's; python/wick/functional.py maps the torch spellings
 * (gelu(approximate=)) onto them. Where torch accepts more than wick's C
 * entry (layer_norm over several trailing dims, cross_entropy on (N, C, d...)
 * or probability targets, class weights, boolean attention masks), the
 * difference is composed here from wick ops, so autograd records it. */
#include "wkpy.h"
#include <math.h>
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

/* ---- shared argument helpers ---- */

/* An optional Tensor argument: absent / None gives NULL (0), a Tensor is
 * borrowed, anything else is a TypeError (-1). */
static int opt_tensor(PyObject *o, const char *fname, const char *what, wk_tensor **out) {
    *out = NULL;
    if (!o || o == Py_None) return 0;
    *out = wkpy_tensor_arg(o, fname, what);
    return *out ? 0 : -1;
}

/* torch's reduction= strings. */
static int reduction_from(PyObject *o, const char *fname, wk_reduction *out) {
    *out = WK_REDUCE_MEAN_LOSS;
    if (!o || o == Py_None) return 0;
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s(): reduction must be a str", fname);
        return -1;
    }
    if (!strcmp(s, "mean")) *out = WK_REDUCE_MEAN_LOSS;
    else if (!strcmp(s, "sum")) *out = WK_REDUCE_SUM_LOSS;
    else if (!strcmp(s, "none")) *out = WK_REDUCE_NONE_LOSS;
    else {
        PyErr_Format(PyExc_ValueError, "%s(): reduction must be 'mean', 'sum' or 'none', got '%s'", fname, s);
        return -1;
    }
    return 0;
}

/* torch's deprecated size_average= / reduce= positions are kept so that
 * positional calls line up with torch's; only None is accepted there. */
static int no_legacy(const char *fname, PyObject *size_average, PyObject *reduce) {
    if ((size_average && size_average != Py_None) || (reduce && reduce != Py_None)) {
        PyErr_Format(PyExc_ValueError, "%s(): size_average / reduce are deprecated in torch and not supported: use "
                     "reduction='mean' | 'sum' | 'none'", fname);
        return -1;
    }
    return 0;
}

static int float_input(const wk_tensor *t, const char *fname, const char *what) {
    if (wk_dtype_is_float(wk_tensor_dtype(t))) return 0;
    PyErr_Format(wkpy_error_class(WK_ERR_DTYPE), "%s(): %s must be a float tensor, got %s", fname, what,
                 wk_dtype_name(wk_tensor_dtype(t)));
    return -1;
}

static bool same_shape(const wk_tensor *a, const wk_tensor *b) {
    if (wk_rank(a) != wk_rank(b)) return false;
    for (int d = 0; d < wk_rank(a); d++)
        if (wk_dim(a, d) != wk_dim(b, d)) return false;
    return true;
}

static int check_same_shape(const wk_tensor *a, const wk_tensor *b, const char *fname) {
    if (same_shape(a, b)) return 0;
    char x[300], y[300];
    wk_tensor_describe(a, x, sizeof x);
    wk_tensor_describe(b, y, sizeof y);
    PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): input (%s) and target (%s) must have one shape", fname, x, y);
    return -1;
}

/* A ValueError naming a bad number (PyErr_Format has no %g); NULL. */
static PyObject *bad_number(const char *fname, const char *what, double v) {
    char num[40];
    snprintf(num, sizeof num, "%g", v);
    PyErr_Format(PyExc_ValueError, "%s(): %s, got %s", fname, what, num);
    return NULL;
}

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

/* A composite's result out of the scope it was built in (r may be NULL). */
static wk_tensor *leave_scope(wk_tensor *r) {
    if (r) wk_keep(r);
    wk_scope_end();
    return r;
}

static wk_tensor *reduce_loss(wk_tensor *l, wk_reduction red) {
    return red == WK_REDUCE_MEAN_LOSS ? wk_mean_all(l) : red == WK_REDUCE_SUM_LOSS ? wk_sum_all(l) : wk_contiguous(l);
}

static wk_tensor *scalar_like(double v, const wk_tensor *like) {
    return wk_full(NULL, 0, v, wk_tensor_dtype(like), wk_tensor_device(like));
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
                               const wk_tensor *mask, double scale, bool causal, long long q_offset, bool gqa) {
    wk_tensor *am = NULL, *y = NULL;
    bool big = wkpy_big(q) || wkpy_big(k);
    WKPY_NOGIL(big, am = additive_mask(mask, q));
    if (mask && !am) return wkpy_raise();
    wk_attention_opts o = {.mask = am, .scale = scale, .causal = causal, .q_offset = q_offset};
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
    return attention_run(q, k, v, mask, scale, causal, 0, gqa);
}

static PyObject *f_attention(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "attention";
    static const char *const names[] = {"q", "k", "v", "mask", "scale", "causal", "q_offset", NULL};
    PyObject *a[7];
    wk_tensor *q, *k, *v, *mask;
    double scale;
    bool causal;
    long long off;
    if (wkpy_parse(fn, args, nargs, kw, names, 3, a) < 0 || !(q = wkpy_tensor_arg(a[0], fn, "q")) ||
        !(k = wkpy_tensor_arg(a[1], fn, "k")) || !(v = wkpy_tensor_arg(a[2], fn, "v")) ||
        opt_tensor(a[3], fn, "mask", &mask) < 0 || scale_arg(a[4], fn, &scale) < 0 ||
        wkpy_bool(a[5], false, &causal) < 0 || wkpy_int(a[6], 0, &off) < 0)
        return NULL;
    return attention_run(q, k, v, mask, scale, causal, off, true);
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

/* ---- elementwise losses ---- */

static PyObject *f_mse_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "target", "size_average", "reduce", "reduction", NULL};
    PyObject *a[5];
    wk_tensor *x, *t;
    wk_reduction red;
    if (wkpy_parse("mse_loss", args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], "mse_loss", "input")) ||
        !(t = wkpy_tensor_arg(a[1], "mse_loss", "target")) || no_legacy("mse_loss", a[2], a[3]) < 0 ||
        reduction_from(a[4], "mse_loss", &red) < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = wk_mse_loss(x, t, red));
    return wkpy_wrap(y);
}

static wk_tensor *l1_run(const wk_tensor *x, const wk_tensor *t, wk_reduction red) {
    wk_scope_begin();
    return leave_scope(reduce_loss(wk_abs(wk_sub(x, t)), red));
}

static PyObject *f_l1_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "target", "size_average", "reduce", "reduction", NULL};
    PyObject *a[5];
    wk_tensor *x, *t;
    wk_reduction red;
    if (wkpy_parse("l1_loss", args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], "l1_loss", "input")) ||
        !(t = wkpy_tensor_arg(a[1], "l1_loss", "target")) || no_legacy("l1_loss", a[2], a[3]) < 0 ||
        reduction_from(a[4], "l1_loss", &red) < 0 || float_input(x, "l1_loss", "input") < 0 ||
        check_same_shape(x, t, "l1_loss") < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = l1_run(x, t, red));
    return wkpy_wrap(y);
}

static PyObject *f_huber_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "target", "reduction", "delta", NULL};
    PyObject *a[4];
    wk_tensor *x, *t;
    wk_reduction red;
    double delta;
    if (wkpy_parse("huber_loss", args, nargs, kw, names, 2, a) < 0 ||
        !(x = wkpy_tensor_arg(a[0], "huber_loss", "input")) || !(t = wkpy_tensor_arg(a[1], "huber_loss", "target")) ||
        reduction_from(a[2], "huber_loss", &red) < 0 || wkpy_double(a[3], 1.0, &delta) < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = wk_huber_loss(x, t, delta, red));
    return wkpy_wrap(y);
}

/* smooth_l1 = huber(delta = beta) / beta; beta = 0 is l1 */
static wk_tensor *smooth_l1_run(const wk_tensor *x, const wk_tensor *t, double beta, wk_reduction red) {
    if (beta == 0.0) return l1_run(x, t, red);
    wk_scope_begin();
    return leave_scope(wk_affine(wk_huber_loss(x, t, beta, red), 1.0 / beta, 0.0));
}

static PyObject *f_smooth_l1_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "smooth_l1_loss";
    static const char *const names[] = {"input", "target", "size_average", "reduce", "reduction", "beta", NULL};
    PyObject *a[6];
    wk_tensor *x, *t;
    wk_reduction red;
    double beta;
    if (wkpy_parse(fn, args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], fn, "input")) ||
        !(t = wkpy_tensor_arg(a[1], fn, "target")) || no_legacy(fn, a[2], a[3]) < 0 ||
        reduction_from(a[4], fn, &red) < 0 || wkpy_double(a[5], 1.0, &beta) < 0 || float_input(x, fn, "input") < 0 ||
        check_same_shape(x, t, fn) < 0)
        return NULL;
    if (!(beta >= 0.0 && isfinite(beta)))
        return bad_number(fn, "beta must be finite and >= 0", beta);
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = smooth_l1_run(x, t, beta, red));
    return wkpy_wrap(y);
}

/* binary cross-entropy on logits with torch's weight (times each element's
 * loss) and pos_weight (the positive term's weight, broadcast over the
 * classes of the last dim): (1 - y) x + (1 + (pw - 1) y) (log(1 + e^-|x|) + max(-x, 0)) */
static wk_tensor *bce_logits_run(const wk_tensor *x, const wk_tensor *y, const wk_tensor *w, const wk_tensor *pw,
                                 wk_reduction red) {
    if (!w && !pw) return wk_bce_with_logits(x, y, red);
    wk_scope_begin();
    wk_tensor *l;
    if (!pw) l = wk_bce_with_logits(x, y, WK_REDUCE_NONE_LOSS);
    else {
        wk_tensor *zero = scalar_like(0.0, x);
        wk_tensor *sp = wk_add(wk_log(wk_affine(wk_exp(wk_neg(wk_abs(x))), 1.0, 1.0)), wk_maximum(wk_neg(x), zero));
        wk_tensor *lw = wk_affine(wk_mul(wk_affine(pw, 1.0, -1.0), y), 1.0, 1.0);
        l = wk_add(wk_mul(wk_affine(y, -1.0, 1.0), x), wk_mul(lw, sp));
    }
    if (w) l = wk_mul(l, w);
    return leave_scope(reduce_loss(l, red));
}

static PyObject *f_bce_with_logits(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "binary_cross_entropy_with_logits";
    static const char *const names[] = {"input", "target", "weight", "size_average", "reduce",
                                        "reduction", "pos_weight", NULL};
    PyObject *a[7];
    wk_tensor *x, *t, *w, *pw;
    wk_reduction red;
    if (wkpy_parse(fn, args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], fn, "input")) ||
        !(t = wkpy_tensor_arg(a[1], fn, "target")) || opt_tensor(a[2], fn, "weight", &w) < 0 ||
        no_legacy(fn, a[3], a[4]) < 0 || reduction_from(a[5], fn, &red) < 0 ||
        opt_tensor(a[6], fn, "pos_weight", &pw) < 0 || float_input(x, fn, "input") < 0 ||
        check_same_shape(x, t, fn) < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = bce_logits_run(x, t, w, pw, red));
    return wkpy_wrap(y);
}

/* -(y log p + (1 - y) log(1 - p)), each log clamped at -100 as torch does
 * (so p = 0 or 1 gives a finite loss) */
static wk_tensor *bce_run(const wk_tensor *p, const wk_tensor *y, const wk_tensor *w, wk_reduction red) {
    wk_scope_begin();
    wk_tensor *lp = wk_clamp(wk_log(p), -100.0, INFINITY);
    wk_tensor *lq = wk_clamp(wk_log(wk_affine(p, -1.0, 1.0)), -100.0, INFINITY);
    wk_tensor *l = wk_neg(wk_add(wk_mul(y, lp), wk_mul(wk_affine(y, -1.0, 1.0), lq)));
    if (w) l = wk_mul(l, w);
    return leave_scope(reduce_loss(l, red));
}

static PyObject *f_bce(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "binary_cross_entropy";
    static const char *const names[] = {"input", "target", "weight", "size_average", "reduce", "reduction", NULL};
    PyObject *a[6];
    wk_tensor *x, *t, *w;
    wk_reduction red;
    if (wkpy_parse(fn, args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], fn, "input")) ||
        !(t = wkpy_tensor_arg(a[1], fn, "target")) || opt_tensor(a[2], fn, "weight", &w) < 0 ||
        no_legacy(fn, a[3], a[4]) < 0 || reduction_from(a[5], fn, &red) < 0 || float_input(x, fn, "input") < 0 ||
        check_same_shape(x, t, fn) < 0)
        return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = bce_run(x, t, w, red));
    return wkpy_wrap(y);
}

/* target (log(target) - input), 0 where target is 0 (torch's xlogy); with
 * log_target, exp(target) (target - input). batchmean: the sum over dim 0's size. */
static wk_tensor *kl_div_run(const wk_tensor *x, const wk_tensor *t, wk_reduction red, bool batchmean, bool log_t) {
    wk_scope_begin();
    wk_tensor *l;
    if (log_t) l = wk_mul(wk_exp(t), wk_sub(t, x));
    else {
        wk_tensor *zero = scalar_like(0.0, t);
        l = wk_sub(wk_where(wk_cmp_scalar(t, 0.0, WK_GT), wk_mul(t, wk_log(t)), zero), wk_mul(t, x));
    }
    if (batchmean) {
        double n = wk_rank(x) ? (double)wk_dim(x, 0) : 1.0;
        return leave_scope(wk_affine(wk_sum_all(l), 1.0 / n, 0.0));
    }
    return leave_scope(reduce_loss(l, red));
}

static PyObject *f_kl_div(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const fn = "kl_div";
    static const char *const names[] = {"input", "target", "size_average", "reduce", "reduction", "log_target", NULL};
    PyObject *a[6];
    wk_tensor *x, *t;
    wk_reduction red = WK_REDUCE_MEAN_LOSS;
    bool batchmean = false, log_t;
    if (wkpy_parse(fn, args, nargs, kw, names, 2, a) < 0 || !(x = wkpy_tensor_arg(a[0], fn, "input")) ||
        !(t = wkpy_tensor_arg(a[1], fn, "target")) || no_legacy(fn, a[2], a[3]) < 0 ||
        wkpy_bool(a[5], false, &log_t) < 0)
        return NULL;
    if (a[4] && PyUnicode_Check(a[4]) && PyUnicode_CompareWithASCIIString(a[4], "batchmean") == 0) batchmean = true;
    else if (reduction_from(a[4], fn, &red) < 0) return NULL;
    if (float_input(x, fn, "input") < 0 || check_same_shape(x, t, fn) < 0) return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = kl_div_run(x, t, red, batchmean, log_t));
    return wkpy_wrap(y);
}

/* ---- classification losses ----
 * wick's entries take (N, C) and (N) class ids; torch also takes (C) with
 * a rank-0 target, (N, C, d1, ...) with (N, d1, ...), class weights, and
 * (for cross_entropy) probability targets of the input's shape. */

typedef struct class_args {
    const wk_tensor *x, *t, *w;
    wk_class_loss_opts o;
    bool ce;
} class_args;

/* per-class weights w, targets ids (M) i64 and logp (M, C): torch's weighted
 * loss, the mean dividing by the weights of the rows counted */
static wk_tensor *weighted_class_loss(const wk_tensor *logp, const wk_tensor *ids, const class_args *c) {
    wk_dtype dt = wk_tensor_dtype(logp);
    int64_t C = wk_dim(logp, 1), M = wk_dim(logp, 0);
    wk_tensor *keep = c->o.has_ignore_index ? wk_cmp_scalar(ids, (double)c->o.ignore_index, WK_NE)
                                            : wk_full(wk_shape(ids), 1, 1.0, WK_U8, wk_tensor_device(ids));
    wk_tensor *safe = wk_where(keep, ids, wk_zeros(NULL, 0, WK_I64, wk_tensor_device(ids)));
    wk_tensor *wsel = wk_mul(wk_index_select(c->w, safe, 0), wk_to_dtype(keep, dt)); /* (M) */
    wk_tensor *picked = wk_reshape(wk_gather(logp, wk_unsqueeze(safe, 1), 1), &M, 1);
    wk_tensor *l = wk_neg(wk_mul(picked, wsel));
    double eps = c->o.label_smoothing;
    if (eps > 0.0) {
        wk_tensor *wrow = wk_reshape(c->w, (int64_t[]){1, C}, 2);
        wk_tensor *smooth = wk_neg(wk_mul(wk_sum(wk_mul(logp, wrow), (int[]){1}, 1, false), wk_to_dtype(keep, dt)));
        l = wk_add(wk_affine(l, 1.0 - eps, 0.0), wk_affine(smooth, eps / (double)C, 0.0));
    }
    if (c->o.reduction == WK_REDUCE_MEAN_LOSS) return wk_div(wk_sum_all(l), wk_sum_all(wsel));
    return reduce_loss(l, c->o.reduction);
}

/* probability targets: -sum_c w_c y_c logp_c over the class dim, y mixed
 * with the uniform distribution by label_smoothing; mean over the rest */
static wk_tensor *soft_class_loss(const class_args *c) {
    int r = wk_rank(c->x), cd = r == 1 ? 0 : 1;
    int64_t C = wk_dim(c->x, cd);
    wk_tensor *logp = wk_log_softmax(c->x, cd);
    wk_tensor *y = (wk_tensor *)c->t;
    double eps = c->o.label_smoothing;
    if (eps > 0.0) y = wk_affine(y, 1.0 - eps, eps / (double)C);
    wk_tensor *prod = wk_mul(y, logp);
    if (c->w) {
        int64_t ws[WK_MAX_RANK];
        for (int i = 0; i < r - cd; i++) ws[i] = i == 0 ? C : 1;
        prod = wk_mul(prod, wk_reshape(c->w, ws, r - cd));
    }
    return reduce_loss(wk_neg(wk_sum(prod, (int[]){cd}, 1, false)), c->o.reduction);
}

static wk_tensor *class_loss_run(const class_args *c) {
    wk_scope_begin();
    if (wk_dtype_is_float(wk_tensor_dtype(c->t))) return leave_scope(soft_class_loss(c));
    const wk_tensor *x = c->x, *t = c->t;
    int r = wk_rank(x);
    int64_t C = wk_dim(x, r == 1 ? 0 : 1), M = wk_numel(t);
    if (r != 2) { /* to (M, C) and (M): the class dim moved last, the rest flattened */
        int perm[WK_MAX_RANK], n = 0;
        for (int i = 0; i < r; i++)
            if (i != 1 || r == 1) perm[n++] = i;
        if (r > 1) perm[n++] = 1;
        x = wk_reshape(wk_permute(x, perm, r), (int64_t[]){M, C}, 2);
        t = wk_reshape(t, &M, 1);
    }
    wk_tensor *l;
    if (c->w) {
        wk_tensor *logp = c->ce ? wk_log_softmax(x, 1) : (wk_tensor *)x;
        l = weighted_class_loss(logp, wk_to_dtype(t, WK_I64), c);
    } else
        l = c->ce ? wk_cross_entropy(x, t, &c->o) : wk_nll_loss(x, t, &c->o);
    if (l && r != 2 && c->o.reduction == WK_REDUCE_NONE_LOSS) l = wk_reshape(l, wk_shape(c->t), wk_rank(c->t));
    return leave_scope(l);
}

/* The shape rules above, checked before wick runs (its messages speak of
 * (N, C) only). */
static int class_shapes_ok(const class_args *c, const char *fname) {
    const wk_tensor *x = c->x, *t = c->t;
    int r = wk_rank(x);
    bool soft = wk_dtype_is_float(wk_tensor_dtype(t));
    bool ok = r >= 1;
    if (ok && soft) ok = same_shape(x, t);
    else if (ok) {
        ok = wk_rank(t) == (r == 1 ? 0 : r - 1);
        for (int i = 0; ok && i < wk_rank(t); i++) ok = wk_dim(t, i) == wk_dim(x, i == 0 ? 0 : i + 1);
    }
    int64_t C = r >= 1 ? wk_dim(x, r == 1 ? 0 : 1) : 0;
    if (ok && c->w) ok = wk_rank(c->w) == 1 && wk_dim(c->w, 0) == C;
    if (ok) return 0;
    char dx[300], dt[300], dw[300] = "None";
    wk_tensor_describe(x, dx, sizeof dx);
    wk_tensor_describe(t, dt, sizeof dt);
    if (c->w) wk_tensor_describe(c->w, dw, sizeof dw);
    PyErr_Format(wkpy_error_class(WK_ERR_SHAPE),
                 "%s(): input (N, C, d...) or (C), target (N, d...) / () of class ids or the input's shape of "
                 "probabilities, weight (C); got input %s, target %s, weight %s",
                 fname, dx, dt, dw);
    return -1;
}

static PyObject *class_loss_call(const char *fname, bool ce, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"input", "target", "weight", "size_average", "ignore_index",
                                        "reduce", "reduction", "label_smoothing", NULL};
    PyObject *a[8];
    class_args c = {.ce = ce};
    long long ignore;
    wk_tensor *x, *t, *w;
    if (wkpy_parse(fname, args, nargs, kw, names, 2, a) < 0) return NULL;
    if (!ce && a[7]) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument 'label_smoothing'", fname);
        return NULL;
    }
    if (!(x = wkpy_tensor_arg(a[0], fname, "input")) || !(t = wkpy_tensor_arg(a[1], fname, "target")) ||
        opt_tensor(a[2], fname, "weight", &w) < 0 || no_legacy(fname, a[3], a[5]) < 0 ||
        wkpy_int(a[4], -100, &ignore) < 0 || reduction_from(a[6], fname, &c.o.reduction) < 0 ||
        wkpy_double(a[7], 0.0, &c.o.label_smoothing) < 0 || float_input(x, fname, "input") < 0)
        return NULL;
    c.x = x;
    c.t = t;
    c.w = w;
    c.o.has_ignore_index = true; /* torch's default -100 is always in force */
    c.o.ignore_index = ignore;
    if (!(c.o.label_smoothing >= 0.0 && c.o.label_smoothing < 1.0)) /* wick's range (torch also takes 1) */
        return bad_number(fname, "label_smoothing must be in [0, 1)", c.o.label_smoothing);
    if (!ce && wk_dtype_is_float(wk_tensor_dtype(t))) {
        PyErr_Format(wkpy_error_class(WK_ERR_DTYPE), "%s(): target must be class ids (an integer dtype), got %s", fname,
                     wk_dtype_name(wk_tensor_dtype(t)));
        return NULL;
    }
    if (class_shapes_ok(&c, fname) < 0) return NULL;
    wk_tensor *y;
    WKPY_NOGIL(wkpy_big(x), y = class_loss_run(&c));
    return wkpy_wrap(y);
}

static PyObject *f_cross_entropy(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return class_loss_call("cross_entropy", true, args, nargs, kw);
}
static PyObject *f_nll_loss(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return class_loss_call("nll_loss", false, args, nargs, kw);
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
     "attention(q, k, v, mask=None, scale=None, causal=False, q_offset=0)\nwick's attention for decoding and "
     "grouped-query heads: q (..., Hq, Lq, D), k / v (..., Hkv, Lk, D) with Hkv dividing Hq, any strides (a "
     "narrow of a KV cache); causal lets query i see key j iff j <= i + q_offset. Result contiguous."},
    {"linear", FAST(f_linear),
     "linear(input, weight, bias=None)\ninput @ weight^T + bias: input (..., in), weight (out, in), bias "
     "(out)."},
    {"swiglu", FAST(f_swiglu),
     "swiglu(input)\nsilu(a) * b where a, b are the two halves of the last dim (candle's swiglu)."},
    {"dropout", FAST(f_dropout),
     "dropout(input, p=0.5, training=True, inplace=False)\nZeroes each element with probability p (the "
     "device's generator, wick.manual_seed) and scales the rest by 1/(1-p); the input itself when not training or "
     "p is 0."},
    {"mse_loss", FAST(f_mse_loss),
     "mse_loss(input, target, size_average=None, reduce=None, reduction='mean')\nmean((input - target)^2); "
     "reduction 'mean' | 'sum' | 'none'. Shapes must be equal (no broadcasting)."},
    {"l1_loss", FAST(f_l1_loss),
     "l1_loss(input, target, size_average=None, reduce=None, reduction='mean')\nmean(|input - target|)."},
    {"huber_loss", FAST(f_huber_loss),
     "huber_loss(input, target, reduction='mean', delta=1.0)\n0.5 d^2 where |d| < delta, else delta (|d| - "
     "delta/2), as torch's."},
    {"smooth_l1_loss", FAST(f_smooth_l1_loss),
     "smooth_l1_loss(input, target, size_average=None, reduce=None, reduction='mean', beta=1.0)\nhuber_loss "
     "with delta = beta, divided by beta (beta 0: l1_loss)."},
    {"binary_cross_entropy_with_logits", FAST(f_bce_with_logits),
     "binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, "
     "reduction='mean', pos_weight=None)\nNumerically stable BCE on logits; weight multiplies each "
     "element's loss, pos_weight the positive term (broadcast over the last dim), as torch's."},
    {"binary_cross_entropy", FAST(f_bce),
     "binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction='mean')\n"
     "-(y log p + (1 - y) log(1 - p)) on probabilities, each log clamped at -100 (torch's rule)."},
    {"kl_div", FAST(f_kl_div),
     "kl_div(input, target, size_average=None, reduce=None, reduction='mean', log_target=False)\nKL divergence of "
     "log-probabilities input from target (probabilities, or log-probabilities with log_target), pointwise "
     "target (log target - input) with 0 where target is 0; reduction also 'batchmean' (the sum over dim 0's "
     "size, the true KL divergence)."},
    {"cross_entropy", FAST(f_cross_entropy),
     "cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, "
     "reduction='mean', label_smoothing=0.0)\nlog_softmax over the class dim then the negative "
     "log-likelihood, as torch's: input (N, C), (C) or (N, C, d...); target class ids (N), () or (N, d...) of an "
     "integer dtype (rows equal to ignore_index count for nothing), or probabilities of the input's shape; "
     "weight (C) per class (the mean divides by the weights of the counted rows)."},
    {"nll_loss", FAST(f_nll_loss),
     "nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, "
     "reduction='mean')\nThe negative log-likelihood of log-probabilities input at the class ids target "
     "(shapes as cross_entropy's class-id form)."},
    {"_param_new", f_param_new, METH_O,
     "_param_new(data)\nA parameter: a new contiguous copy of data that requires grad (a leaf)."},
    {"_param_assign_", (PyCFunction)(void (*)(void))f_param_assign, METH_FASTCALL,
     "_param_assign_(param, src)\nOverwrite param's values with src's in place, unrecorded (same shape, "
     "dtype, device); returns param."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_nn = {nn_methods, NULL, nn_functions, NULL};
