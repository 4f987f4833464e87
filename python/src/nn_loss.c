/* The losses of train.h (and the few torch.nn.functional has beside them),
 * with torch's names, argument positions and reductions: mse / l1 / huber /
 * smooth_l1, binary cross-entropy on probabilities and on logits (weight,
 * pos_weight), kl_div, cross_entropy and nll_loss. wick's C entries take
 * (N, C) logits with (N) class ids; torch's other forms ((C), (N, C, d...),
 * class weights, probability targets) are composed here from wick ops, so
 * autograd records them. */
#include "nn_args.h"
#include "wick/train.h"

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

static PyMethodDef nn_loss_functions[] = {
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
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_nn_loss = {NULL, NULL, nn_loss_functions, NULL};
