/* Reductions, scans and orderings from Python: every op of WK_REDUCE_OPS
 * (sum, mean, max, min, argmax, argmin, prod, any, all; generated from the
 * list, so a new one appears with no edit) with torch's dim= / keepdim=,
 * and var / std, logsumexp, amax / amin, norm, cumsum / cumprod, sort,
 * argsort, topk. Each is a Tensor method and a module function
 * (t.sum(1) and wick.sum(t, 1)).
 *
 * torch's conventions kept where wick's differ:
 *  - dim=None (or an empty sequence) reduces every dim; keepdim then keeps
 *    them all as size 1;
 *  - index results are i64 (wick's argmax / argmin give u32: converted);
 *  - sum / prod / cumsum / cumprod of a narrower integer dtype compute in
 *    i64 (wick would wrap in the input dtype: a u8 mask's sum at 256);
 *  - max / min with one int dim return (values, indices), a struct sequence
 *    like torch.return_types.max; max(other) / min(other) with a Tensor is
 *    maximum / minimum. */
#include "wkpy.h"
#include <math.h>
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

/* ---- (values, indices) results: torch.return_types.max / min / sort / topk ---- */

enum { RT_MAX, RT_MIN, RT_SORT, RT_TOPK, RT_COUNT };
static PyStructSequence_Field k_vi_fields[] = {
    {"values", "the values"}, {"indices", "their indices along dim (i64)"}, {NULL, NULL}};
static PyStructSequence_Desc k_rt_desc[RT_COUNT] = {
    {"wick.return_types.max", "max(dim=...): (values, indices).", k_vi_fields, 2},
    {"wick.return_types.min", "min(dim=...): (values, indices).", k_vi_fields, 2},
    {"wick.return_types.sort", "sort(): (values, indices).", k_vi_fields, 2},
    {"wick.return_types.topk", "topk(): (values, indices).", k_vi_fields, 2},
};
static PyTypeObject *g_rt[RT_COUNT];

/* Takes both references (either may be NULL: wick's error is raised). */
static PyObject *values_indices(int kind, wk_tensor *values, wk_tensor *indices) {
    if (!values || !indices) {
        wk_tensor_free(values);
        wk_tensor_free(indices);
        return wkpy_raise();
    }
    PyObject *v = wkpy_wrap(values), *i = wkpy_wrap(indices);
    PyObject *r = v && i ? PyStructSequence_New(g_rt[kind]) : NULL;
    if (!r) {
        Py_XDECREF(v);
        Py_XDECREF(i);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, v);
    PyStructSequence_SET_ITEM(r, 1, i);
    return r;
}

/* ---- helpers ---- */

/* dim=: None or an empty sequence -> every dim (torch); an int; a sequence */
static int parse_dims(PyObject *o, const wk_tensor *t, int *dims, int *n) {
    if (wkpy_dims(o, dims, n) < 0) return -1;
    if (*n <= 0) {
        *n = wk_rank(t);
        for (int i = 0; i < *n; i++) dims[i] = i;
    }
    return 0;
}

/* An int argument (dim=, k=), required or with a default. */
static int parse_int(PyObject *o, const char *fname, const char *what, long long dflt, long long *out) {
    if (o && o != Py_None && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): %s must be an int, got %s", fname, what, Py_TYPE(o)->tp_name);
        return -1;
    }
    return wkpy_int(o, dflt, out);
}

/* Integers narrower than i64 are summed in i64 (torch); NULL when t is kept. */
static wk_tensor *widened(const wk_tensor *t, bool *failed) {
    wk_dtype dt = wk_tensor_dtype(t);
    *failed = false;
    if (!wk_dtype_is_int(dt) || dt == WK_I64) return NULL;
    wk_tensor *w = wk_to_dtype(t, WK_I64);
    *failed = !w;
    return w;
}

/* wick's u32 indices as torch's i64 (takes the reference) */
static wk_tensor *as_i64(wk_tensor *idx) {
    if (!idx || wk_tensor_dtype(idx) == WK_I64) return idx;
    wk_tensor *r = wk_to_dtype(idx, WK_I64);
    wk_tensor_free(idx);
    return r;
}

static wk_tensor *reduce_of(const wk_tensor *t, wk_reduce_op op, const int *dims, int n, bool keepdim) {
    wk_tensor *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_reduce(t, op, dims, n, keepdim));
    return r;
}

/* argmax / argmin: dim None gives the index into the flattened tensor
 * (keepdim then keeps every dim as size 1, like torch). */
static PyObject *arg_reduce(const char *name, wk_reduce_op op, const wk_tensor *t, PyObject *dim, bool keepdim) {
    if (dim && dim != Py_None) {
        long long d;
        if (parse_int(dim, name, "dim", 0, &d) < 0) return NULL;
        int di = (int)d;
        return wkpy_wrap(as_i64(reduce_of(t, op, &di, 1, keepdim)));
    }
    wk_tensor *flat = wk_flatten_all(t);
    if (!flat) return wkpy_raise();
    int zero = 0;
    wk_tensor *r = as_i64(reduce_of(flat, op, &zero, 1, false));
    wk_tensor_free(flat);
    if (r && keepdim) {
        int64_t ones[WK_MAX_RANK];
        for (int i = 0; i < wk_rank(t); i++) ones[i] = 1;
        wk_tensor *k = wk_reshape(r, ones, wk_rank(t));
        wk_tensor_free(r);
        r = k;
    }
    return wkpy_wrap(r);
}

/* ---- the list's reductions (WK_REDUCE_OPS) ---- */

static PyObject *reduce_method(const char *name, wk_reduce_op op, PyObject *self, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "keepdim", NULL};
    PyObject *a[2];
    if (wkpy_parse(name, args, nargs, kw, names, 0, a) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    bool minmax = op == WK_REDUCE_MAX || op == WK_REDUCE_MIN;
    if (minmax && a[0] && wkpy_check(a[0])) { /* torch.max(input, other) */
        if (a[1]) return PyErr_Format(PyExc_TypeError, "%s(other): keepdim is not an argument here", name);
        wk_tensor *o = wkpy_t(a[0]), *r;
        wk_binary_op bop = op == WK_REDUCE_MAX ? WK_MAXIMUM : WK_MINIMUM;
        WKPY_NOGIL(wkpy_big(t) || wkpy_big(o), r = wk_binary(t, o, bop));
        return wkpy_wrap(r);
    }
    bool keepdim;
    if (wkpy_bool(a[1], false, &keepdim) < 0) return NULL;
    if (op == WK_REDUCE_ARGMAX || op == WK_REDUCE_ARGMIN) return arg_reduce(name, op, t, a[0], keepdim);
    if (minmax && a[0] && PyIndex_Check(a[0])) { /* one int dim: (values, indices) like torch */
        long long d;
        if (wkpy_int(a[0], 0, &d) < 0) return NULL;
        int di = (int)d;
        wk_tensor *v = reduce_of(t, op, &di, 1, keepdim);
        wk_tensor *i = v ? as_i64(reduce_of(t, op == WK_REDUCE_MAX ? WK_REDUCE_ARGMAX : WK_REDUCE_ARGMIN, &di, 1,
                                            keepdim))
                         : NULL;
        return values_indices(op == WK_REDUCE_MAX ? RT_MAX : RT_MIN, v, i);
    }
    int dims[WK_MAX_RANK], n;
    if (parse_dims(a[0], t, dims, &n) < 0) return NULL;
    bool failed = false;
    wk_tensor *w = op == WK_REDUCE_SUM || op == WK_REDUCE_PROD ? widened(t, &failed) : NULL;
    if (failed) return wkpy_raise();
    wk_tensor *r = reduce_of(w ? w : t, op, dims, n, keepdim);
    wk_tensor_free(w);
    return wkpy_wrap(r);
}

#define REDUCE_WRAPPERS(e, n, form)                                                                            \
    static PyObject *m_##n(PyObject *self, PyObject *const *a, Py_ssize_t na, PyObject *kw) {                  \
        return reduce_method(#n, e, self, a, na, kw);                                                          \
    }
WK_REDUCE_OPS(REDUCE_WRAPPERS)

/* amax / amin: values only, any dims (torch.amax; dim=() is every dim) */
static PyObject *m_amax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "keepdim", NULL};
    PyObject *a[2];
    int dims[WK_MAX_RANK], n;
    bool keepdim;
    if (wkpy_parse("amax", args, nargs, kw, names, 0, a) < 0 || parse_dims(a[0], wkpy_t(self), dims, &n) < 0 ||
        wkpy_bool(a[1], false, &keepdim) < 0)
        return NULL;
    return wkpy_wrap(reduce_of(wkpy_t(self), WK_REDUCE_MAX, dims, n, keepdim));
}
static PyObject *m_amin(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "keepdim", NULL};
    PyObject *a[2];
    int dims[WK_MAX_RANK], n;
    bool keepdim;
    if (wkpy_parse("amin", args, nargs, kw, names, 0, a) < 0 || parse_dims(a[0], wkpy_t(self), dims, &n) < 0 ||
        wkpy_bool(a[1], false, &keepdim) < 0)
        return NULL;
    return wkpy_wrap(reduce_of(wkpy_t(self), WK_REDUCE_MIN, dims, n, keepdim));
}

/* ---- var / std ---- */

/* var(dim=None, unbiased=True, keepdim=False, correction=None): torch's two
 * spellings; wick divides by N - 1 or N, so correction is 0 or 1. */
static PyObject *var_std(const char *name, bool take_sqrt, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kw) {
    static const char *const names[] = {"dim", "unbiased", "keepdim", "correction", NULL};
    PyObject *a[4];
    if (wkpy_parse(name, args, nargs, kw, names, 0, a) < 0) return NULL;
    if (a[0] && PyBool_Check(a[0]) && !a[1]) { /* torch's var(unbiased) overload */
        a[1] = a[0];
        a[0] = NULL;
    }
    bool unbiased, keepdim;
    if (wkpy_bool(a[1], true, &unbiased) < 0 || wkpy_bool(a[2], false, &keepdim) < 0) return NULL;
    if (a[3] && a[3] != Py_None) {
        if (a[1]) return PyErr_Format(PyExc_TypeError, "%s(): give unbiased or correction, not both", name);
        long long c;
        if (parse_int(a[3], name, "correction", 1, &c) < 0) return NULL;
        if (c != 0 && c != 1)
            return PyErr_Format(PyExc_ValueError, "%s(): correction must be 0 or 1 in wick, got %lld", name, c);
        unbiased = c == 1;
    }
    wk_tensor *t = wkpy_t(self), *r;
    int dims[WK_MAX_RANK], n;
    if (parse_dims(a[0], t, dims, &n) < 0) return NULL;
    WKPY_NOGIL(wkpy_big(t), r = take_sqrt ? wk_std(t, dims, n, keepdim, unbiased) : wk_var(t, dims, n, keepdim, unbiased));
    return wkpy_wrap(r);
}
static PyObject *m_var(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return var_std("var", false, s, a, n, k); }
static PyObject *m_std(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return var_std("std", true, s, a, n, k); }

/* ---- logsumexp, norm ---- */

static PyObject *m_logsumexp(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "keepdim", NULL};
    PyObject *a[2];
    int dims[WK_MAX_RANK], n;
    bool keepdim;
    wk_tensor *t = wkpy_t(self), *r;
    if (wkpy_parse("logsumexp", args, nargs, kw, names, 0, a) < 0 || parse_dims(a[0], t, dims, &n) < 0 ||
        wkpy_bool(a[1], false, &keepdim) < 0)
        return NULL;
    WKPY_NOGIL(wkpy_big(t), r = wk_log_sum_exp(t, dims, n, keepdim));
    return wkpy_wrap(r);
}

/* norm(p=2, dim=None, keepdim=False): torch.linalg.vector_norm's meaning
 * (wk_norm); p may be a number, inf / -inf, or "fro" (= 2 over the dims). */
static PyObject *m_norm(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"p", "dim", "keepdim", NULL};
    PyObject *a[3];
    if (wkpy_parse("norm", args, nargs, kw, names, 0, a) < 0) return NULL;
    double p = 2.0;
    if (a[0] && PyUnicode_Check(a[0])) {
        if (PyUnicode_CompareWithASCIIString(a[0], "fro"))
            return PyErr_Format(PyExc_ValueError, "norm(): p=%R is not supported (numbers, inf, 'fro')", a[0]);
    } else if (wkpy_double(a[0], 2.0, &p) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    int dims[WK_MAX_RANK], n;
    bool keepdim;
    if (parse_dims(a[1], t, dims, &n) < 0 || wkpy_bool(a[2], false, &keepdim) < 0) return NULL;
    WKPY_NOGIL(wkpy_big(t), r = wk_norm(t, p, dims, n, keepdim));
    return wkpy_wrap(r);
}

/* ---- scans ---- */

static PyObject *scan(const char *name, bool prod, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kw) {
    static const char *const names[] = {"dim", "dtype", NULL};
    PyObject *a[2];
    long long d;
    if (wkpy_parse(name, args, nargs, kw, names, 1, a) < 0 || parse_int(a[0], name, "dim", 0, &d) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *w = NULL, *r;
    bool failed = false;
    if (a[1] && a[1] != Py_None) {
        wk_dtype dt;
        if (wkpy_dtype_from(a[1], WK_F32, &dt) < 0) return NULL;
        if (dt != wk_tensor_dtype(t) && !(w = wk_to_dtype(t, dt))) return wkpy_raise();
    } else if ((w = widened(t, &failed)), failed)
        return wkpy_raise();
    const wk_tensor *x = w ? w : t;
    WKPY_NOGIL(wkpy_big(x), r = prod ? wk_cumprod(x, (int)d) : wk_cumsum(x, (int)d));
    wk_tensor_free(w);
    return wkpy_wrap(r);
}
static PyObject *m_cumsum(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return scan("cumsum", false, s, a, n, k); }
static PyObject *m_cumprod(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return scan("cumprod", true, s, a, n, k); }

/* ---- sort, argsort, topk ---- */

static int sort_args(const char *name, PyObject *const *args, Py_ssize_t nargs, PyObject *kw, int *dim, bool *desc) {
    static const char *const names[] = {"dim", "descending", "stable", NULL};
    PyObject *a[3];
    long long d;
    bool stable;
    /* wick's sort is always stable: stable= is accepted for torch's spelling */
    if (wkpy_parse(name, args, nargs, kw, names, 0, a) < 0 || parse_int(a[0], name, "dim", -1, &d) < 0 ||
        wkpy_bool(a[1], false, desc) < 0 || wkpy_bool(a[2], false, &stable) < 0)
        return -1;
    *dim = (int)d;
    return 0;
}

static PyObject *m_sort(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int dim;
    bool desc;
    if (sort_args("sort", args, nargs, kw, &dim, &desc) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *v = NULL, *i = NULL;
    wk_status st;
    WKPY_NOGIL(wkpy_big(t), st = wk_sort(t, dim, desc, &v, &i));
    if (st != WK_OK) v = i = NULL;
    return values_indices(RT_SORT, v, i);
}

static PyObject *m_argsort(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int dim;
    bool desc;
    if (sort_args("argsort", args, nargs, kw, &dim, &desc) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_argsort(t, dim, desc));
    return wkpy_wrap(r);
}

static PyObject *m_topk(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"k", "dim", "largest", "sorted", NULL};
    PyObject *a[4];
    long long k, d;
    bool largest, sorted;
    if (wkpy_parse("topk", args, nargs, kw, names, 1, a) < 0 || parse_int(a[0], "topk", "k", 0, &k) < 0 ||
        parse_int(a[1], "topk", "dim", -1, &d) < 0 || wkpy_bool(a[2], true, &largest) < 0 ||
        wkpy_bool(a[3], true, &sorted) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self), *v = NULL, *i = NULL;
    wk_status st;
    WKPY_NOGIL(wkpy_big(t), st = wk_topk(t, (int64_t)k, (int)d, largest, &v, &i));
    if (st != WK_OK) v = i = NULL;
    return values_indices(RT_TOPK, v, i);
}

/* ---- module forms: f(input, ...) is input.f(...) ---- */

#define AS_FUNCTION(n)                                                                                         \
    static PyObject *f_##n(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {             \
        (void)mod;                                                                                             \
        if (nargs < 1 || !wkpy_check(args[0]))                                                                 \
            return PyErr_Format(PyExc_TypeError, #n "(): input must be a wick.Tensor (positional), got %s",    \
                                nargs < 1 ? "nothing" : Py_TYPE(args[0])->tp_name);                            \
        return m_##n(args[0], args + 1, nargs - 1, kw);                                                        \
    }
#define REDUCE_FUNCTION(e, n, form) AS_FUNCTION(n)
WK_REDUCE_OPS(REDUCE_FUNCTION)
AS_FUNCTION(amax)
AS_FUNCTION(amin)
AS_FUNCTION(var)
AS_FUNCTION(std)
AS_FUNCTION(logsumexp)
AS_FUNCTION(norm)
AS_FUNCTION(cumsum)
AS_FUNCTION(cumprod)
AS_FUNCTION(sort)
AS_FUNCTION(argsort)
AS_FUNCTION(topk)

/* ---- tables ---- */

#define RDOC_DIMS(n)                                                                                           \
    "The " #n " over dim (None or (): every dim; an int; a sequence of ints), reduced dims kept as size 1 "   \
    "with keepdim."
#define RDOC_ONLY(n) RDOC_DIMS(n)
#define RDOC_ARG(n)                                                                                            \
    "The index (i64, like torch) of the first " #n " along dim; dim None: into the flattened tensor (keepdim " \
    "then keeps every dim as size 1)."
#define REDUCE_METHOD_DEFS(e, n, form) {#n, FAST(m_##n), #n "(dim=None, keepdim=False)\n\n" RDOC_##form(n)},
#define REDUCE_FUNCTION_DEFS(e, n, form)                                                                       \
    {#n, FAST(f_##n), #n "(input, /, dim=None, keepdim=False)\n\n" RDOC_##form(n)},

#define MAXMIN_DOC(n, other)                                                                                   \
    #n "(dim=None, keepdim=False)\n\nThe " #n " over dim (None or (): every dim; a sequence of ints: the "     \
       "values). With one int dim: (values, indices), a wick.return_types." #n " struct sequence like torch's " \
       "namedtuple (indices i64, the first on ties). " #n "(other) with a Tensor is " #other "(other)."
#define SUMPROD_DOC(n)                                                                                         \
    #n "(dim=None, keepdim=False)\n\nThe " #n " over dim (None or (): every dim; an int; a sequence of "       \
       "ints), reduced dims kept as size 1 with keepdim. Integer dtypes narrower than i64 give i64 (torch)."
#define ANYALL_DOC(n, what)                                                                                    \
    #n "(dim=None, keepdim=False)\n\nWhether " what " element over dim is nonzero: a u8 tensor of 0 / 1."

/* Hand-written entries first: the first method of a name wins, so these
 * docs shadow the generated ones. */
static PyMethodDef reduce_methods[] = {
    {"max", FAST(m_max), MAXMIN_DOC(max, maximum)},
    {"min", FAST(m_min), MAXMIN_DOC(min, minimum)},
    {"sum", FAST(m_sum), SUMPROD_DOC(sum)},
    {"prod", FAST(m_prod), SUMPROD_DOC(prod)},
    {"mean", FAST(m_mean), "mean(dim=None, keepdim=False)\n\nThe mean over dim (None or (): every dim; an int; a "
                           "sequence). Float dtypes only (integers: wick.DTypeError)."},
    {"any", FAST(m_any), ANYALL_DOC(any, "any")},
    {"all", FAST(m_all), ANYALL_DOC(all, "every")},
    WK_REDUCE_OPS(REDUCE_METHOD_DEFS)
    {"amax", FAST(m_amax), "amax(dim=(), keepdim=False)\n\nThe max over dim (() or None: every dim), values only."},
    {"amin", FAST(m_amin), "amin(dim=(), keepdim=False)\n\nThe min over dim (() or None: every dim), values only."},
    {"var", FAST(m_var),
     "var(dim=None, unbiased=True, keepdim=False, correction=None)\n\nVariance over dim (float dtypes), computed "
     "in f64. unbiased divides by N - 1; correction (0 or 1) is torch's other spelling of it; var(False) is "
     "var(unbiased=False). No degrees of freedom left gives NaN."},
    {"std", FAST(m_std), "std(dim=None, unbiased=True, keepdim=False, correction=None)\n\nThe square root of var."},
    {"logsumexp", FAST(m_logsumexp),
     "logsumexp(dim=None, keepdim=False)\n\nlog(sum(exp(x))) over dim, stable (shifted by the max). Float "
     "dtypes; an empty reduction gives -inf."},
    {"log_sum_exp", FAST(m_logsumexp), "log_sum_exp(dim=None, keepdim=False)\n\nThe same as logsumexp."},
    {"norm", FAST(m_norm),
     "norm(p=2, dim=None, keepdim=False)\n\nThe vector p-norm over dim (torch.linalg.vector_norm): p > 0 or < 0, "
     "inf (max |x|), -inf (min |x|), 0 (count of nonzeros), 'fro' (2). Float dtypes."},
    {"cumsum", FAST(m_cumsum),
     "cumsum(dim, dtype=None)\n\nInclusive running sum along dim; computed in dtype when given, else integers "
     "narrower than i64 give i64 (torch)."},
    {"cumprod", FAST(m_cumprod), "cumprod(dim, dtype=None)\n\nInclusive running product along dim (as cumsum)."},
    {"sort", FAST(m_sort),
     "sort(dim=-1, descending=False, stable=False)\n\n(values, indices) sorted along dim, a "
     "wick.return_types.sort. Always stable (ties keep their order); NaN last ascending, first descending."},
    {"argsort", FAST(m_argsort),
     "argsort(dim=-1, descending=False, stable=False)\n\nThe indices (i64) that sort along dim (stable)."},
    {"topk", FAST(m_topk),
     "topk(k, dim=-1, largest=True, sorted=True)\n\n(values, indices) of the k largest (smallest) along dim, "
     "sorted, ties by lower index, a wick.return_types.topk."},
    {NULL, NULL, 0, NULL},
};

/* Module functions: the last of a name wins, so the shadowing docs go last. */
static PyMethodDef reduce_functions[] = {
    WK_REDUCE_OPS(REDUCE_FUNCTION_DEFS)
    {"max", FAST(f_max), "max(input, /, dim=None, keepdim=False)\n\nSee Tensor.max (an int dim gives (values, "
                         "indices); max(input, other) is maximum)."},
    {"min", FAST(f_min), "min(input, /, dim=None, keepdim=False)\n\nSee Tensor.min."},
    {"sum", FAST(f_sum), "sum(input, /, dim=None, keepdim=False)\n\nSee Tensor.sum (narrow integers give i64)."},
    {"prod", FAST(f_prod), "prod(input, /, dim=None, keepdim=False)\n\nSee Tensor.prod."},
    {"amax", FAST(f_amax), "amax(input, /, dim=(), keepdim=False)\n\nThe max over dim, values only."},
    {"amin", FAST(f_amin), "amin(input, /, dim=(), keepdim=False)\n\nThe min over dim, values only."},
    {"var", FAST(f_var), "var(input, /, dim=None, unbiased=True, keepdim=False, correction=None)\n\nSee Tensor.var."},
    {"std", FAST(f_std), "std(input, /, dim=None, unbiased=True, keepdim=False, correction=None)\n\nSee Tensor.std."},
    {"logsumexp", FAST(f_logsumexp), "logsumexp(input, /, dim=None, keepdim=False)\n\nSee Tensor.logsumexp."},
    {"log_sum_exp", FAST(f_logsumexp), "log_sum_exp(input, /, dim=None, keepdim=False)\n\nThe same as logsumexp."},
    {"norm", FAST(f_norm), "norm(input, /, p=2, dim=None, keepdim=False)\n\nSee Tensor.norm."},
    {"cumsum", FAST(f_cumsum), "cumsum(input, /, dim, dtype=None)\n\nSee Tensor.cumsum."},
    {"cumprod", FAST(f_cumprod), "cumprod(input, /, dim, dtype=None)\n\nSee Tensor.cumprod."},
    {"sort", FAST(f_sort), "sort(input, /, dim=-1, descending=False, stable=False)\n\nSee Tensor.sort."},
    {"argsort", FAST(f_argsort), "argsort(input, /, dim=-1, descending=False, stable=False)\n\nSee Tensor.argsort."},
    {"topk", FAST(f_topk), "topk(input, /, k, dim=-1, largest=True, sorted=True)\n\nSee Tensor.topk."},
    {NULL, NULL, 0, NULL},
};

static int reduce_init(PyObject *module) {
    (void)module;
    for (int i = 0; i < RT_COUNT; i++)
        if (!g_rt[i] && !(g_rt[i] = PyStructSequence_NewType(&k_rt_desc[i]))) return -1;
    return 0;
}

const wkpy_part wkpy_part_reduce = {reduce_methods, NULL, reduce_functions, reduce_init};
