/* Shapes from Python: views (reshape / view / permute / transpose /
 * squeeze / expand / narrow / select / chunk / split / unbind / movedim),
 * joins and rearrangements (cat / stack / meshgrid / repeat / flip / roll /
 * pad / tril / triu) and the matmul family (matmul / mm / bmm / mv / dot),
 * with PyTorch's names and argument names. Each op is a Tensor method and,
 * where torch has one, a module function taking the tensor first. */
#include "wkpy.h"
#include <limits.h>
#include <stdarg.h>
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

typedef PyObject *(*method_fn)(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);

/* wick.op(input, ...) as input.op(...): the tensor is the first positional */
static PyObject *as_function(const char *fname, method_fn f, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    if (nargs < 1 || !wkpy_check(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s(): input must be a wick.Tensor, got %s", fname,
                     nargs < 1 ? "nothing" : Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    return f(args[0], args + 1, nargs - 1, kw);
}
#define FUNCTION(name)                                                                                         \
    static PyObject *f_##name(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {                    \
        (void)m;                                                                                               \
        return as_function(#name, m_##name, a, n, k);                                                          \
    }

/* A wick error class raised from the binding's own checks (the class wick
 * itself would use for the same mistake). */
static PyObject *wick_error(wk_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) {
        PyErr_SetObject(wkpy_error_class(st), msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* dim normalised against rank (negative counts from the end), or -1 with
 * wick.IndexError as wick's own dim check raises */
static int norm_dim(long long dim, int rank, int *out) {
    long long d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= rank) {
        wick_error(WK_ERR_INDEX, "dim %lld out of range for rank %d", dim, rank);
        return -1;
    }
    *out = (int)d;
    return 0;
}

/* int64 -> int for dims: out-of-range values stay out of range */
static int clamp_int(long long v) { return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v; }

/* One plain integer (a Python int, a numpy integer: __index__), not a Tensor */
static bool plain_int(PyObject *o) { return PyLong_Check(o) || (!wkpy_check(o) && PyIndex_Check(o)); }

/* An int or a sequence of ints (a dims= argument, by name) into ints. */
static int int_or_ints(PyObject *o, const char *fname, const char *what, int64_t *v, int *n) {
    if (plain_int(o)) {
        long long x;
        if (wkpy_int(o, 0, &x) < 0) return -1;
        v[0] = x;
        *n = 1;
        return 0;
    }
    if (wkpy_shape(o, v, n) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s(): %s must be an int or a sequence of ints, got %s", fname, what,
                         Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    return 0;
}

/* Ints given as positional varargs or one sequence (t.permute(1, 0) and
 * t.permute((1, 0))), or by the keyword kwname alone (t.permute(dims=...)). */
static int ints_var(const char *fname, const char *kwname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw,
                    int64_t *v, int *n) {
    if (kw && PyTuple_GET_SIZE(kw)) {
        const char *const names[] = {kwname, NULL};
        PyObject *a[1];
        if (nargs) {
            PyErr_Format(PyExc_TypeError, "%s(): give %s positionally or by keyword, not both", fname, kwname);
            return -1;
        }
        if (wkpy_parse(fname, args, 0, kw, names, 1, a) < 0) return -1;
        return int_or_ints(a[0], fname, kwname, v, n);
    }
    if (nargs == 1) return int_or_ints(args[0], fname, kwname, v, n); /* t.flip(np.int64(0)) too */
    return wkpy_shape_fast(args, nargs, v, n);
}

/* A tuple of fresh tensors (takes the n references; frees them on failure). */
static PyObject *tuple_of(wk_tensor **ts, int n) {
    PyObject *tup = PyTuple_New(n);
    if (!tup) {
        for (int i = 0; i < n; i++) wk_tensor_free(ts[i]);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        PyObject *o = wkpy_wrap(ts[i]);
        if (!o) {
            for (int k = i + 1; k < n; k++) wk_tensor_free(ts[k]);
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, o);
    }
    return tup;
}

/* ------------------------------------------------------------------ views */

static PyObject *m_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t shape[WK_MAX_RANK];
    int rank;
    if (ints_var("reshape", "shape", args, nargs, kw, shape, &rank) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_reshape(t, shape, rank)); /* copies when no view fits */
    return wkpy_wrap(r);
}
FUNCTION(reshape)

/* view = reshape that refuses to copy (torch's contract: the result
 * aliases self). */
static PyObject *m_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t shape[WK_MAX_RANK];
    int rank;
    if (ints_var("view", "size", args, nargs, kw, shape, &rank) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_reshape(t, shape, rank));
    if (r && !wk_shares_storage(r, t)) {
        char d[160];
        wk_tensor_describe(t, d, sizeof d);
        wk_tensor_free(r);
        return wick_error(WK_ERR_SHAPE,
                          "view(): the strides of this %s tensor do not allow the new shape without a copy "
                          "(use reshape, or contiguous() first)",
                          d);
    }
    return wkpy_wrap(r);
}

/* reshape_as / view_as: other's shape */
static PyObject *shape_as(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw, bool view) {
    static const char *const names[] = {"other", NULL};
    const char *fname = view ? "view_as" : "reshape_as";
    PyObject *a[1];
    if (wkpy_parse(fname, args, nargs, kw, names, 1, a) < 0) return NULL;
    wk_tensor *o = wkpy_tensor_arg(a[0], fname, "other");
    if (!o) return NULL;
    PyObject *shape = PyTuple_New(wk_rank(o));
    for (int i = 0; shape && i < wk_rank(o); i++) {
        PyObject *d = PyLong_FromLongLong((long long)wk_shape(o)[i]);
        if (!d) Py_CLEAR(shape);
        else PyTuple_SET_ITEM(shape, i, d);
    }
    if (!shape) return NULL;
    PyObject *r = (view ? m_view : m_reshape)(self, &shape, 1, NULL);
    Py_DECREF(shape);
    return r;
}
static PyObject *m_reshape_as(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return shape_as(s, a, n, k, false); }
static PyObject *m_view_as(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return shape_as(s, a, n, k, true); }

static PyObject *m_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t d[WK_MAX_RANK];
    int n, dims[WK_MAX_RANK];
    if (ints_var("permute", "dims", args, nargs, kw, d, &n) < 0) return NULL;
    for (int i = 0; i < n; i++) dims[i] = clamp_int(d[i]);
    return wkpy_wrap(wk_permute(wkpy_t(self), dims, n));
}
FUNCTION(permute)

static PyObject *m_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim0", "dim1", NULL};
    PyObject *a[2];
    long long d0, d1;
    if (wkpy_parse("transpose", args, nargs, kw, names, 2, a) < 0 || wkpy_int(a[0], 0, &d0) < 0 ||
        wkpy_int(a[1], 0, &d1) < 0)
        return NULL;
    return wkpy_wrap(wk_transpose(wkpy_t(self), clamp_int(d0), clamp_int(d1)));
}
FUNCTION(transpose)

/* torch.t: rank 0 and 1 come back as they are (a view), rank 2 transposed */
static PyObject *m_t(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {NULL};
    PyObject *a[1];
    if (wkpy_parse("t", args, nargs, kw, names, 0, a) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    int r = wk_rank(t);
    if (r > 2) return wick_error(WK_ERR_SHAPE, "t() expects a tensor of rank <= 2, got rank %d (use transpose)", r);
    if (r < 2) {
        int id[1] = {0};
        return wkpy_wrap(wk_permute(t, id, r));
    }
    return wkpy_wrap(wk_t(t));
}
FUNCTION(t)

/* squeeze(dim=None): None drops every size-1 dim; an int or a tuple drops
 * those of size 1 (others stay, as torch) */
static PyObject *m_squeeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", NULL};
    PyObject *a[1];
    if (wkpy_parse("squeeze", args, nargs, kw, names, 0, a) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    int r = wk_rank(t);
    const int64_t *s = wk_shape(t);
    bool drop[WK_MAX_RANK] = {false};
    if (!a[0] || a[0] == Py_None) {
        for (int i = 0; i < r; i++) drop[i] = s[i] == 1;
    } else {
        int64_t d[WK_MAX_RANK];
        int n;
        if (int_or_ints(a[0], "squeeze", "dim", d, &n) < 0) return NULL;
        if (r == 0) { /* torch accepts dim 0 / -1 of a rank-0 tensor */
            for (int i = 0; i < n; i++)
                if (d[i] < -1 || d[i] > 0) return wick_error(WK_ERR_INDEX, "dim %lld out of range for rank 0", (long long)d[i]);
        }
        for (int i = 0; i < n && r > 0; i++) {
            int k;
            if (norm_dim(d[i], r, &k) < 0) return NULL;
            drop[k] = s[k] == 1;
        }
    }
    int64_t ns[WK_MAX_RANK];
    int nr = 0;
    for (int i = 0; i < r; i++)
        if (!drop[i]) ns[nr++] = s[i];
    return wkpy_wrap(wk_reshape(t, ns, nr)); /* dropping size-1 dims is always a view */
}
FUNCTION(squeeze)

static PyObject *m_unsqueeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", NULL};
    PyObject *a[1];
    long long d;
    if (wkpy_parse("unsqueeze", args, nargs, kw, names, 1, a) < 0 || wkpy_int(a[0], 0, &d) < 0) return NULL;
    return wkpy_wrap(wk_unsqueeze(wkpy_t(self), clamp_int(d)));
}
FUNCTION(unsqueeze)

static PyObject *m_flatten(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"start_dim", "end_dim", NULL};
    PyObject *a[2];
    long long s, e;
    if (wkpy_parse("flatten", args, nargs, kw, names, 0, a) < 0 || wkpy_int(a[0], 0, &s) < 0 ||
        wkpy_int(a[1], -1, &e) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_flatten(t, clamp_int(s), clamp_int(e)));
    return wkpy_wrap(r);
}
FUNCTION(flatten)

/* unflatten(dim, sizes): dim becomes sizes (one -1 inferred) */
static PyObject *m_unflatten(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "sizes", NULL};
    PyObject *a[2];
    long long dim;
    int64_t sz[WK_MAX_RANK];
    int n, d;
    if (wkpy_parse("unflatten", args, nargs, kw, names, 2, a) < 0 || wkpy_int(a[0], 0, &dim) < 0 ||
        int_or_ints(a[1], "unflatten", "sizes", sz, &n) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self);
    int r = wk_rank(t);
    if (norm_dim(dim, r, &d) < 0) return NULL;
    if (n == 0) return wick_error(WK_ERR_SHAPE, "unflatten(): sizes must not be empty");
    if (r - 1 + n > WK_MAX_RANK) return wick_error(WK_ERR_SHAPE, "unflatten(): rank would exceed %d", WK_MAX_RANK);
    int64_t s[WK_MAX_RANK];
    int k = 0;
    for (int i = 0; i < d; i++) s[k++] = wk_shape(t)[i];
    for (int i = 0; i < n; i++) s[k++] = sz[i];
    for (int i = d + 1; i < r; i++) s[k++] = wk_shape(t)[i];
    /* the product must be dim's size: reshape alone would accept sizes that
     * borrow elements from a neighbouring dim */
    int64_t known = 1;
    bool hole = false;
    for (int i = 0; i < n; i++) {
        if (sz[i] == -1) hole = true;
        else known *= sz[i];
    }
    int64_t size = wk_shape(t)[d];
    if (hole ? (known == 0 || size % known) : known != size)
        return wick_error(WK_ERR_SHAPE, "unflatten(): sizes do not multiply to dim %d's size %lld", d, (long long)size);
    wk_tensor *res;
    WKPY_NOGIL(wkpy_big(t), res = wk_reshape(t, s, k));
    return wkpy_wrap(res);
}
FUNCTION(unflatten)

/* narrow(dim, start, length): a negative start counts from the end (torch) */
static PyObject *m_narrow(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "start", "length", NULL};
    PyObject *a[3];
    long long dim, start, len;
    if (wkpy_parse("narrow", args, nargs, kw, names, 3, a) < 0 || wkpy_int(a[0], 0, &dim) < 0 ||
        wkpy_int(a[1], 0, &start) < 0 || wkpy_int(a[2], 0, &len) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self);
    int64_t size = wk_dim(t, clamp_int(dim));
    if (start < 0 && size >= 0) start += size;
    return wkpy_wrap(wk_narrow(t, clamp_int(dim), start, len));
}
FUNCTION(narrow)

static PyObject *m_select(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", "index", NULL};
    PyObject *a[2];
    long long dim, index;
    if (wkpy_parse("select", args, nargs, kw, names, 2, a) < 0 || wkpy_int(a[0], 0, &dim) < 0 ||
        wkpy_int(a[1], 0, &index) < 0)
        return NULL;
    return wkpy_wrap(wk_select(wkpy_t(self), clamp_int(dim), index));
}
FUNCTION(select)

/* expand / broadcast_to: -1 keeps a dim of t; new dims go on the left */
static PyObject *expand_to(wk_tensor *t, const int64_t *sizes, int n, const char *fname) {
    int r = wk_rank(t);
    if (n < r) return wick_error(WK_ERR_SHAPE, "%s(): %d sizes for a tensor of rank %d", fname, n, r);
    int64_t s[WK_MAX_RANK];
    for (int i = 0; i < n; i++) {
        s[i] = sizes[i];
        if (s[i] == -1) {
            if (i < n - r) return wick_error(WK_ERR_SHAPE, "%s(): -1 is not allowed in a new leading dim %d", fname, i);
            s[i] = wk_shape(t)[i - (n - r)];
        }
    }
    return wkpy_wrap(wk_broadcast_as(t, s, n));
}

static PyObject *m_expand(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t s[WK_MAX_RANK];
    int n;
    if (ints_var("expand", "size", args, nargs, kw, s, &n) < 0) return NULL;
    return expand_to(wkpy_t(self), s, n, "expand");
}

static PyObject *m_broadcast_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"shape", NULL};
    PyObject *a[1];
    int64_t s[WK_MAX_RANK];
    int n;
    if (wkpy_parse("broadcast_to", args, nargs, kw, names, 1, a) < 0 ||
        int_or_ints(a[0], "broadcast_to", "shape", s, &n) < 0)
        return NULL;
    return expand_to(wkpy_t(self), s, n, "broadcast_to");
}
FUNCTION(broadcast_to)

static PyObject *m_expand_as(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"other", NULL};
    PyObject *a[1];
    if (wkpy_parse("expand_as", args, nargs, kw, names, 1, a) < 0) return NULL;
    wk_tensor *o = wkpy_tensor_arg(a[0], "expand_as", "other");
    if (!o) return NULL;
    return wkpy_wrap(wk_broadcast_as(wkpy_t(self), wk_shape(o), wk_rank(o)));
}

/* chunk(chunks, dim=0) -> tuple; an empty dim gives `chunks` empty views
 * (torch) where wick gives one */
static PyObject *m_chunk(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"chunks", "dim", NULL};
    PyObject *a[2];
    long long chunks, dim;
    if (wkpy_parse("chunk", args, nargs, kw, names, 1, a) < 0 || wkpy_int(a[0], 0, &chunks) < 0 ||
        wkpy_int(a[1], 0, &dim) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self);
    int d;
    if (norm_dim(dim, wk_rank(t), &d) < 0) return NULL;
    if (chunks < 1) return wick_error(WK_ERR_ARG, "chunk(): chunks must be at least 1, got %lld", chunks);
    int64_t size = wk_shape(t)[d];
    /* with chunks >= size every chunk has one element: asking wick for size
     * chunks gives the same split without a huge output array */
    int64_t n = size == 0 ? chunks : (chunks < size ? chunks : size);
    if (n > INT_MAX) return PyErr_NoMemory();
    wk_tensor **out = PyMem_Calloc((size_t)n, sizeof *out);
    if (!out) return PyErr_NoMemory();
    int count = (int)n;
    wk_status st = WK_OK;
    if (size == 0) {
        for (int i = 0; i < count; i++)
            if (!(out[i] = wk_narrow(t, d, 0, 0))) {
                for (int k = 0; k < i; k++) wk_tensor_free(out[k]);
                st = wk_last_status();
                break;
            }
    } else st = wk_chunk(t, (int)n, d, out, &count);
    PyObject *r = st == WK_OK ? tuple_of(out, count) : wkpy_raise();
    PyMem_Free(out);
    return r;
}
FUNCTION(chunk)

/* split(split_size_or_sections, dim=0): pieces of one size (the last
 * smaller) or of the listed sizes (summing to the dim) */
static PyObject *m_split(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"split_size_or_sections", "dim", NULL};
    PyObject *a[2];
    long long dim;
    if (wkpy_parse("split", args, nargs, kw, names, 1, a) < 0 || wkpy_int(a[1], 0, &dim) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    int d;
    if (norm_dim(dim, wk_rank(t), &d) < 0) return NULL;
    int64_t size = wk_shape(t)[d];
    int64_t *sizes = NULL;
    Py_ssize_t n;
    if (plain_int(a[0]) || wkpy_check(a[0])) {
        long long each;
        if (wkpy_int(a[0], 0, &each) < 0) return NULL;
        if (each < 0 || (each == 0 && size > 0))
            return wick_error(WK_ERR_ARG, "split(): split_size must be positive for a dim of size %lld, got %lld",
                              (long long)size, each);
        n = each == 0 ? 1 : (Py_ssize_t)((size + each - 1) / each);
        if (n == 0) n = 1; /* an empty dim: one empty piece */
        sizes = PyMem_Malloc(sizeof *sizes * (size_t)n);
        if (!sizes) return PyErr_NoMemory();
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t left = size - (int64_t)i * each;
            sizes[i] = left < each ? left : each;
        }
    } else {
        PyObject *seq = PySequence_Fast(a[0], "split(): split_size_or_sections must be an int or a sequence of ints");
        if (!seq) return NULL;
        n = PySequence_Fast_GET_SIZE(seq);
        sizes = PyMem_Malloc(sizeof *sizes * (size_t)(n ? n : 1));
        if (!sizes) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            long long v;
            if (wkpy_int(PySequence_Fast_GET_ITEM(seq, i), 0, &v) < 0) {
                Py_DECREF(seq);
                PyMem_Free(sizes);
                return NULL;
            }
            sizes[i] = v;
        }
        Py_DECREF(seq);
    }
    if (n > INT_MAX) {
        PyMem_Free(sizes);
        return PyErr_NoMemory();
    }
    wk_tensor **out = PyMem_Calloc((size_t)(n ? n : 1), sizeof *out);
    PyObject *r;
    if (!out) r = PyErr_NoMemory();
    else if (n == 0) r = wick_error(WK_ERR_ARG, "split(): no sections given");
    else r = wk_split(t, sizes, (int)n, d, out) == WK_OK ? tuple_of(out, (int)n) : wkpy_raise();
    PyMem_Free(out);
    PyMem_Free(sizes);
    return r;
}
FUNCTION(split)

static PyObject *m_unbind(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", NULL};
    PyObject *a[1];
    long long dim;
    if (wkpy_parse("unbind", args, nargs, kw, names, 0, a) < 0 || wkpy_int(a[0], 0, &dim) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    int d;
    if (norm_dim(dim, wk_rank(t), &d) < 0) return NULL;
    int64_t n = wk_shape(t)[d];
    PyObject *tup = PyTuple_New((Py_ssize_t)n);
    for (int64_t i = 0; tup && i < n; i++) {
        PyObject *o = wkpy_wrap(wk_select(t, d, i));
        if (!o) {
            Py_CLEAR(tup);
            break;
        }
        PyTuple_SET_ITEM(tup, (Py_ssize_t)i, o);
    }
    return tup;
}
FUNCTION(unbind)

/* movedim(source, destination): ints or sequences of one length; the dims
 * not named keep their order in the remaining places (torch) */
static PyObject *m_movedim(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"source", "destination", NULL};
    PyObject *a[2];
    int64_t src[WK_MAX_RANK], dst[WK_MAX_RANK];
    int ns, nd;
    if (wkpy_parse("movedim", args, nargs, kw, names, 2, a) < 0 ||
        int_or_ints(a[0], "movedim", "source", src, &ns) < 0 ||
        int_or_ints(a[1], "movedim", "destination", dst, &nd) < 0)
        return NULL;
    if (ns != nd)
        return PyErr_Format(PyExc_ValueError, "movedim(): %d source dims but %d destination dims", ns, nd), NULL;
    wk_tensor *t = wkpy_t(self);
    int r = wk_rank(t), perm[WK_MAX_RANK];
    bool src_used[WK_MAX_RANK] = {false}, dst_used[WK_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) perm[i] = -1;
    for (int i = 0; i < ns; i++) {
        int s, d;
        if (norm_dim(src[i], r, &s) < 0 || norm_dim(dst[i], r, &d) < 0) return NULL;
        if (src_used[s] || dst_used[d])
            return wick_error(WK_ERR_ARG, "movedim(): repeated dim in %s", src_used[s] ? "source" : "destination");
        src_used[s] = dst_used[d] = true;
        perm[d] = s;
    }
    int next = 0;
    for (int i = 0; i < r; i++) {
        if (perm[i] >= 0) continue;
        while (src_used[next]) next++;
        perm[i] = next++;
    }
    return wkpy_wrap(wk_permute(t, perm, r));
}
FUNCTION(movedim)

/* --------------------------------------------------------- rearrangements */

static PyObject *m_repeat(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t reps[WK_MAX_RANK];
    int n;
    if (ints_var("repeat", "repeats", args, nargs, kw, reps, &n) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_repeat(t, reps, n));
    return wkpy_wrap(r);
}

static PyObject *m_flip(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t d[WK_MAX_RANK];
    int n, dims[WK_MAX_RANK];
    if (ints_var("flip", "dims", args, nargs, kw, d, &n) < 0) return NULL;
    for (int i = 0; i < n; i++) dims[i] = clamp_int(d[i]);
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_flip(t, dims, n));
    return wkpy_wrap(r);
}
FUNCTION(flip)

/* roll(shifts, dims=None): sequences roll dim by dim; no dims rolls the
 * flattened tensor and restores the shape (torch) */
static PyObject *m_roll(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"shifts", "dims", NULL};
    PyObject *a[2];
    int64_t sh[WK_MAX_RANK], dm[WK_MAX_RANK];
    int ns, nd = 0;
    if (wkpy_parse("roll", args, nargs, kw, names, 1, a) < 0 || int_or_ints(a[0], "roll", "shifts", sh, &ns) < 0)
        return NULL;
    bool flat = !a[1] || a[1] == Py_None;
    if (!flat && int_or_ints(a[1], "roll", "dims", dm, &nd) < 0) return NULL;
    if (flat ? ns != 1 : ns != nd)
        return PyErr_Format(PyExc_ValueError, flat ? "roll(): without dims, shifts must be one int (got %d)"
                                                   : "roll(): %d shifts for %d dims",
                            ns, nd),
               NULL;
    wk_tensor *t = wkpy_t(self);
    wk_tensor *cur = flat ? wk_flatten_all(t) : wk_tensor_retain(t);
    bool big = wkpy_big(t);
    for (int i = 0; cur && i < (flat ? 1 : nd); i++) {
        wk_tensor *next;
        WKPY_NOGIL(big, next = wk_roll(cur, sh[i], flat ? 0 : clamp_int(dm[i])));
        wk_tensor_free(cur);
        cur = next;
    }
    if (cur && flat) {
        wk_tensor *back = wk_reshape(cur, wk_shape(t), wk_rank(t));
        wk_tensor_free(cur);
        cur = back;
    }
    return wkpy_wrap(cur);
}
FUNCTION(roll)

static PyObject *triangle(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw, bool lower) {
    static const char *const names[] = {"diagonal", NULL};
    PyObject *a[1];
    long long k;
    if (wkpy_parse(lower ? "tril" : "triu", args, nargs, kw, names, 0, a) < 0 || wkpy_int(a[0], 0, &k) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = lower ? wk_tril(t, k) : wk_triu(t, k));
    return wkpy_wrap(r);
}
static PyObject *m_tril(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return triangle(s, a, n, k, true); }
static PyObject *m_triu(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return triangle(s, a, n, k, false); }
FUNCTION(tril)
FUNCTION(triu)

/* ------------------------------------------------------------------ joins */

/* cat / stack: the sequence is held as a tuple for the whole call (a
 * generator's items would otherwise die with the temporary list) */
static PyObject *join(const char *fname, bool stack, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"tensors", "dim", NULL};
    PyObject *a[2];
    long long dim;
    if (wkpy_parse(fname, args, nargs, kw, names, 1, a) < 0 || wkpy_int(a[1], 0, &dim) < 0) return NULL;
    if (wkpy_check(a[0]))
        return PyErr_Format(PyExc_TypeError, "%s(): tensors must be a sequence of wick.Tensor, not one Tensor", fname),
               NULL;
    PyObject *tup = PySequence_Tuple(a[0]);
    if (!tup) return NULL;
    int n;
    wk_tensor **ts = wkpy_tensor_list(tup, fname, &n);
    if (!ts) {
        Py_DECREF(tup);
        return NULL;
    }
    bool big = false;
    for (int i = 0; i < n; i++) big = big || wkpy_big(ts[i]);
    wk_tensor *r;
    WKPY_NOGIL(big, r = stack ? wk_stack(ts, n, clamp_int(dim)) : wk_cat(ts, n, clamp_int(dim)));
    PyMem_Free(ts);
    Py_DECREF(tup);
    return wkpy_wrap(r);
}
static PyObject *f_cat(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return join("cat", false, a, n, k);
}
static PyObject *f_stack(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return join("stack", true, a, n, k);
}

/* meshgrid(*tensors, indexing="ij") (or one sequence of tensors) */
static PyObject *f_meshgrid(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"indexing", NULL};
    PyObject *a[1];
    if (wkpy_parse("meshgrid", args + nargs, 0, kw, names, 0, a) < 0) return NULL;
    wk_meshgrid_indexing ix = WK_MESHGRID_IJ;
    if (a[0] && a[0] != Py_None) {
        const char *s = PyUnicode_Check(a[0]) ? PyUnicode_AsUTF8(a[0]) : NULL;
        if (!s || (strcmp(s, "ij") && strcmp(s, "xy"))) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "meshgrid(): indexing must be \"ij\" or \"xy\"");
            return NULL;
        }
        ix = strcmp(s, "xy") ? WK_MESHGRID_IJ : WK_MESHGRID_XY;
    }
    PyObject *tup;
    if (nargs == 1 && !wkpy_check(args[0])) tup = PySequence_Tuple(args[0]);
    else if ((tup = PyTuple_New(nargs)))
        for (Py_ssize_t i = 0; i < nargs; i++) PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i]));
    if (!tup) return NULL;
    int n;
    wk_tensor **ts = wkpy_tensor_list(tup, "meshgrid", &n);
    PyObject *r = NULL;
    if (ts) {
        wk_tensor *out[WK_MAX_RANK];
        if (n < 1 || n > WK_MAX_RANK) r = wick_error(WK_ERR_ARG, "meshgrid(): needs 1 to %d tensors, got %d", WK_MAX_RANK, n);
        else r = wk_meshgrid(ts, n, ix, out) == WK_OK ? tuple_of(out, n) : wkpy_raise();
        PyMem_Free(ts);
    }
    Py_DECREF(tup);
    return r;
}

/* pad(input, pad, mode="constant", value=None): torch.nn.functional.pad's
 * (left, right) pairs from the last dim backwards. constant pads with
 * value (negative pads crop), replicate repeats the edge, reflect mirrors
 * without the edge, circular wraps around. */
typedef enum { PAD_CONSTANT, PAD_REPLICATE, PAD_REFLECT, PAD_CIRCULAR } pad_mode;

/* t padded along d by l / r >= 0 (a new reference or NULL with wick's error) */
static wk_tensor *pad_dim(wk_tensor *t, int d, int64_t l, int64_t r, pad_mode mode, double value) {
    if (mode == PAD_CONSTANT && value == 0) return wk_pad_with_zeros(t, d, l, r);
    if (mode == PAD_REPLICATE) return wk_pad_with_same(t, d, l, r);
    int64_t n = wk_shape(t)[d];
    wk_tensor *parts[3] = {NULL, t, NULL}, *lo = NULL, *hi = NULL;
    if (mode == PAD_CONSTANT) {
        int64_t s[WK_MAX_RANK];
        memcpy(s, wk_shape(t), sizeof(int64_t) * (size_t)wk_rank(t));
        s[d] = l;
        parts[0] = wk_full(s, wk_rank(t), value, wk_tensor_dtype(t), wk_tensor_device(t));
        s[d] = r;
        parts[2] = wk_full(s, wk_rank(t), value, wk_tensor_dtype(t), wk_tensor_device(t));
    } else if (mode == PAD_REFLECT) { /* t[l], ..., t[1] | t | t[n-2], ..., t[n-1-r] */
        lo = wk_narrow(t, d, 1, l);
        hi = wk_narrow(t, d, n - 1 - r, r);
        int dims[1] = {d};
        parts[0] = lo ? wk_flip(lo, dims, 1) : NULL;
        parts[2] = hi ? wk_flip(hi, dims, 1) : NULL;
    } else { /* circular: t[n-l:] | t | t[:r] */
        parts[0] = wk_narrow(t, d, n - l, l);
        parts[2] = wk_narrow(t, d, 0, r);
    }
    /* the pieces that hold elements (wick's cat needs no empty ones) */
    wk_tensor *use[3];
    int k = 0;
    for (int i = 0; i < 3; i++)
        if (parts[i] && (i == 1 || wk_shape(parts[i])[d] > 0)) use[k++] = parts[i];
    wk_tensor *res = parts[0] && parts[2] ? wk_cat(use, k, d) : NULL;
    wk_tensor_free(parts[0]);
    wk_tensor_free(parts[2]);
    wk_tensor_free(lo);
    wk_tensor_free(hi);
    return res;
}

static PyObject *f_pad(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "pad", "mode", "value", NULL};
    PyObject *a[4];
    int64_t p[2 * WK_MAX_RANK];
    if (wkpy_parse("pad", args, nargs, kw, names, 2, a) < 0) return NULL;
    wk_tensor *t = wkpy_tensor_arg(a[0], "pad", "input");
    if (!t) return NULL;
    PyObject *seq = PySequence_Fast(a[1], "pad(): pad must be a sequence of ints");
    if (!seq) return NULL;
    Py_ssize_t np = PySequence_Fast_GET_SIZE(seq);
    int rank = wk_rank(t);
    if (np % 2 || np / 2 > rank) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "pad(): pad needs an even number of values, at most 2 per dim (%zd for rank %d)",
                            np, rank),
               NULL;
    }
    for (Py_ssize_t i = 0; i < np; i++) {
        long long v;
        if (wkpy_int(PySequence_Fast_GET_ITEM(seq, i), 0, &v) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        p[i] = v;
    }
    Py_DECREF(seq);
    pad_mode mode = PAD_CONSTANT;
    if (a[2] && a[2] != Py_None) {
        static const char *const modes[] = {"constant", "replicate", "reflect", "circular"};
        const char *s = PyUnicode_Check(a[2]) ? PyUnicode_AsUTF8(a[2]) : NULL;
        int k = 0;
        while (s && k < 4 && strcmp(s, modes[k])) k++;
        if (!s || k == 4) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "pad(): mode must be constant, replicate, reflect or circular");
            return NULL;
        }
        mode = (pad_mode)k;
    }
    double value;
    if (wkpy_double(a[3], 0.0, &value) < 0) return NULL;
    if (mode != PAD_CONSTANT && value != 0)
        return PyErr_Format(PyExc_ValueError, "pad(): value applies to mode=\"constant\" only"), NULL;
    wk_tensor *cur = wk_tensor_retain(t);
    bool big = wkpy_big(t);
    for (Py_ssize_t i = 0; cur && i < np / 2; i++) {
        int d = rank - 1 - (int)i;
        int64_t l = p[2 * i], r = p[2 * i + 1], n = wk_shape(cur)[d];
        if ((l < 0 || r < 0) && mode != PAD_CONSTANT) {
            wk_tensor_free(cur);
            return PyErr_Format(PyExc_ValueError, "pad(): negative padding needs mode=\"constant\""), NULL;
        }
        if ((mode == PAD_REFLECT && (l >= n || r >= n)) || (mode == PAD_CIRCULAR && (l > n || r > n))) {
            wk_tensor_free(cur);
            return PyErr_Format(PyExc_ValueError, "pad(): %s padding (%lld, %lld) too large for dim %d of size %lld",
                                mode == PAD_REFLECT ? "reflect" : "circular", (long long)l, (long long)r, d, (long long)n),
                   NULL;
        }
        wk_tensor *next = NULL;
        if (l < 0 || r < 0) { /* crop first: a negative pad removes elements */
            int64_t cl = l < 0 ? -l : 0, cr = r < 0 ? -r : 0;
            if (cl + cr > n) {
                wk_tensor_free(cur);
                return wick_error(WK_ERR_SHAPE, "pad(): cropping %lld from dim %d of size %lld", (long long)(cl + cr), d,
                                  (long long)n);
            }
            next = wk_narrow(cur, d, cl, n - cl - cr);
            wk_tensor_free(cur);
            cur = next;
            if (!cur) break;
            l = l < 0 ? 0 : l;
            r = r < 0 ? 0 : r;
        }
        if (l == 0 && r == 0) continue;
        WKPY_NOGIL(big, next = pad_dim(cur, d, l, r, mode, value));
        wk_tensor_free(cur);
        cur = next;
    }
    return wkpy_wrap(cur);
}

/* ---------------------------------------------------------- matmul family */

static wk_tensor *other_arg(PyObject *const *args, Py_ssize_t nargs, PyObject *kw, const char *fname,
                            const char *name) {
    const char *const names[] = {name, NULL};
    PyObject *a[1];
    if (wkpy_parse(fname, args, nargs, kw, names, 1, a) < 0) return NULL;
    return wkpy_tensor_arg(a[0], fname, name);
}

/* torch.matmul: 1-D operands become a row (left) or a column (right) that
 * is removed again; batch dims broadcast */
static wk_tensor *matmul_any(wk_tensor *a, wk_tensor *b) { /* runs without the GIL: ranks checked */
    int ra = wk_rank(a), rb = wk_rank(b);
    if (ra == 1 && rb == 1) return wk_dot(a, b);
    wk_tensor *x = ra == 1 ? wk_unsqueeze(a, 0) : wk_tensor_retain(a);
    wk_tensor *y = rb == 1 ? wk_unsqueeze(b, -1) : wk_tensor_retain(b);
    wk_tensor *r = x && y ? wk_broadcast_matmul(x, y) : NULL;
    wk_tensor_free(x);
    wk_tensor_free(y);
    if (r && (ra == 1 || rb == 1)) {
        wk_tensor *s = wk_squeeze(r, ra == 1 ? -2 : -1);
        wk_tensor_free(r);
        r = s;
    }
    return r;
}

typedef enum { MM_MATMUL, MM_MM, MM_BMM, MM_MV, MM_DOT } mm_kind;

static PyObject *mm_common(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw, mm_kind k) {
    static const char *const fname[] = {"matmul", "mm", "bmm", "mv", "dot"};
    static const char *const oname[] = {"other", "mat2", "mat2", "vec", "other"};
    wk_tensor *b = other_arg(args, nargs, kw, fname[k], oname[k]), *a = wkpy_t(self), *r = NULL;
    if (!b) return NULL;
    /* the ranks torch requires (wick's own ops accept more) */
    static const int ra[] = {0, 2, 3, 2, 1}, rb[] = {0, 2, 3, 1, 1};
    if (k == MM_MATMUL && (wk_rank(a) == 0 || wk_rank(b) == 0))
        return wick_error(WK_ERR_SHAPE, "matmul(): both operands need rank >= 1 (got ranks %d and %d)", wk_rank(a),
                          wk_rank(b));
    if (k != MM_MATMUL && (wk_rank(a) != ra[k] || wk_rank(b) != rb[k]))
        return wick_error(WK_ERR_SHAPE, "%s(): expects ranks %d and %d, got %d and %d", fname[k], ra[k], rb[k],
                          wk_rank(a), wk_rank(b));
    bool big = true; /* a matmul is worth the release even when small-ish */
    switch (k) {
    case MM_MATMUL: WKPY_NOGIL(big, r = matmul_any(a, b)); break;
    case MM_MM:
    case MM_BMM: WKPY_NOGIL(big, r = wk_matmul(a, b)); break;
    case MM_MV: WKPY_NOGIL(big, r = wk_mv(a, b)); break;
    case MM_DOT: WKPY_NOGIL(big, r = wk_dot(a, b)); break;
    }
    return wkpy_wrap(r);
}
static PyObject *m_matmul(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return mm_common(s, a, n, k, MM_MATMUL); }
static PyObject *m_mm(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return mm_common(s, a, n, k, MM_MM); }
static PyObject *m_bmm(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return mm_common(s, a, n, k, MM_BMM); }
static PyObject *m_mv(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return mm_common(s, a, n, k, MM_MV); }
static PyObject *m_dot(PyObject *s, PyObject *const *a, Py_ssize_t n, PyObject *k) { return mm_common(s, a, n, k, MM_DOT); }
FUNCTION(matmul)
FUNCTION(mm)
FUNCTION(bmm)
FUNCTION(mv)
FUNCTION(dot)

/* ----------------------------------------------------------------- tables */

static PyMethodDef shape_methods[] = {
    {"reshape", FAST(m_reshape),
     "reshape(*shape)\nThe same elements in a new shape (one dim may be -1): a view when the strides allow, else "
     "a copy. reshape(2, 3) and reshape((2, 3)) both work."},
    {"view", FAST(m_view),
     "view(*shape)\nreshape that never copies: raises wick.ShapeError when the strides do not allow the new shape "
     "as a view of the same memory."},
    {"reshape_as", FAST(m_reshape_as), "reshape_as(other)\nreshape to other's shape."},
    {"view_as", FAST(m_view_as), "view_as(other)\nview with other's shape."},
    {"permute", FAST(m_permute), "permute(*dims)\nA view with the dims in the given order."},
    {"transpose", FAST(m_transpose), "transpose(dim0, dim1)\nA view with dim0 and dim1 swapped."},
    {"swapaxes", FAST(m_transpose), "swapaxes(dim0, dim1)\nAlias of transpose."},
    {"swapdims", FAST(m_transpose), "swapdims(dim0, dim1)\nAlias of transpose."},
    {"t", FAST(m_t), "t()\nThe transpose of a rank-2 tensor (a view); rank 0 and 1 come back unchanged."},
    {"squeeze", FAST(m_squeeze),
     "squeeze(dim=None)\nA view without size-1 dims: every one (dim=None) or those named (an int or a tuple; dims "
     "of another size stay)."},
    {"unsqueeze", FAST(m_unsqueeze), "unsqueeze(dim)\nA view with a size-1 dim inserted at dim."},
    {"flatten", FAST(m_flatten),
     "flatten(start_dim=0, end_dim=-1)\nDims start_dim..end_dim merged into one (a view when possible)."},
    {"unflatten", FAST(m_unflatten), "unflatten(dim, sizes)\ndim split into sizes (one may be -1)."},
    {"narrow", FAST(m_narrow),
     "narrow(dim, start, length)\nA view of length elements of dim from start (negative start counts from the "
     "end)."},
    {"select", FAST(m_select), "select(dim, index)\nA view of one index of dim, the dim removed."},
    {"expand", FAST(m_expand),
     "expand(*sizes)\nA broadcast view (stride 0 on stretched dims); -1 keeps a dim, new dims go on the left."},
    {"expand_as", FAST(m_expand_as), "expand_as(other)\nexpand to other's shape."},
    {"broadcast_to", FAST(m_broadcast_to), "broadcast_to(shape)\nexpand to shape (numpy rules)."},
    {"chunk", FAST(m_chunk),
     "chunk(chunks, dim=0)\nA tuple of views splitting dim into chunks pieces of ceil(size / chunks) (fewer when "
     "they run out)."},
    {"split", FAST(m_split),
     "split(split_size_or_sections, dim=0)\nA tuple of views: pieces of one size (the last smaller), or of the "
     "listed sizes."},
    {"unbind", FAST(m_unbind), "unbind(dim=0)\nA tuple of views, one per index of dim (the dim removed)."},
    {"movedim", FAST(m_movedim),
     "movedim(source, destination)\nA view with the source dims moved to the destination positions."},
    {"moveaxis", FAST(m_movedim), "moveaxis(source, destination)\nAlias of movedim."},
    {"repeat", FAST(m_repeat),
     "repeat(*repeats)\nTiles the tensor repeats[i] times along dim i (extra leading repeats add dims)."},
    {"flip", FAST(m_flip), "flip(*dims)\nA copy with the order of the elements reversed along dims."},
    {"roll", FAST(m_roll),
     "roll(shifts, dims=None)\nElements shifted along dims (wrapping around); without dims, along the flattened "
     "tensor."},
    {"tril", FAST(m_tril), "tril(diagonal=0)\nThe lower triangle of the last two dims (j - i <= diagonal), zeros elsewhere."},
    {"triu", FAST(m_triu), "triu(diagonal=0)\nThe upper triangle of the last two dims (j - i >= diagonal), zeros elsewhere."},
    {"matmul", FAST(m_matmul),
     "matmul(other)\nMatrix product as torch.matmul: batch dims broadcast, a 1-D operand is a row (left) or a column "
     "(right) removed again; two 1-D operands give the dot product."},
    {"mm", FAST(m_mm), "mm(mat2)\nProduct of two matrices (rank 2)."},
    {"bmm", FAST(m_bmm), "bmm(mat2)\nBatched product of two rank-3 tensors with the same batch size."},
    {"mv", FAST(m_mv), "mv(vec)\nMatrix (n, k) times vector (k): (n)."},
    {"dot", FAST(m_dot), "dot(other)\nDot product of two 1-D tensors (rank 0)."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef shape_functions[] = {
    {"reshape", FAST(f_reshape), "reshape(input, shape)\ninput.reshape(shape)."},
    {"permute", FAST(f_permute), "permute(input, dims)\ninput.permute(dims)."},
    {"transpose", FAST(f_transpose), "transpose(input, dim0, dim1)\ninput.transpose(dim0, dim1)."},
    {"swapaxes", FAST(f_transpose), "swapaxes(input, dim0, dim1)\nAlias of transpose."},
    {"swapdims", FAST(f_transpose), "swapdims(input, dim0, dim1)\nAlias of transpose."},
    {"t", FAST(f_t), "t(input)\ninput.t()."},
    {"squeeze", FAST(f_squeeze), "squeeze(input, dim=None)\ninput.squeeze(dim)."},
    {"unsqueeze", FAST(f_unsqueeze), "unsqueeze(input, dim)\ninput.unsqueeze(dim)."},
    {"flatten", FAST(f_flatten), "flatten(input, start_dim=0, end_dim=-1)\ninput.flatten(start_dim, end_dim)."},
    {"unflatten", FAST(f_unflatten), "unflatten(input, dim, sizes)\ninput.unflatten(dim, sizes)."},
    {"narrow", FAST(f_narrow), "narrow(input, dim, start, length)\ninput.narrow(dim, start, length)."},
    {"select", FAST(f_select), "select(input, dim, index)\ninput.select(dim, index)."},
    {"broadcast_to", FAST(f_broadcast_to), "broadcast_to(input, shape)\ninput.broadcast_to(shape)."},
    {"chunk", FAST(f_chunk), "chunk(input, chunks, dim=0)\ninput.chunk(chunks, dim)."},
    {"split", FAST(f_split), "split(tensor, split_size_or_sections, dim=0)\ntensor.split(split_size_or_sections, dim)."},
    {"unbind", FAST(f_unbind), "unbind(input, dim=0)\ninput.unbind(dim)."},
    {"movedim", FAST(f_movedim), "movedim(input, source, destination)\ninput.movedim(source, destination)."},
    {"moveaxis", FAST(f_movedim), "moveaxis(input, source, destination)\nAlias of movedim."},
    {"flip", FAST(f_flip), "flip(input, dims)\ninput.flip(dims)."},
    {"roll", FAST(f_roll), "roll(input, shifts, dims=None)\ninput.roll(shifts, dims)."},
    {"tril", FAST(f_tril), "tril(input, diagonal=0)\ninput.tril(diagonal)."},
    {"triu", FAST(f_triu), "triu(input, diagonal=0)\ninput.triu(diagonal)."},
    {"cat", FAST(f_cat),
     "cat(tensors, dim=0)\nThe tensors (one dtype and device, equal shapes but along dim) joined along dim."},
    {"concatenate", FAST(f_cat), "concatenate(tensors, dim=0)\nAlias of cat."},
    {"concat", FAST(f_cat), "concat(tensors, dim=0)\nAlias of cat."},
    {"stack", FAST(f_stack), "stack(tensors, dim=0)\nThe tensors (one shape) joined along a new dim inserted at dim."},
    {"meshgrid", FAST(f_meshgrid),
     "meshgrid(*tensors, indexing='ij')\nCoordinate grids from 1-D (or rank-0) tensors, as broadcast views; "
     "indexing 'xy' swaps the first two dims."},
    {"pad", FAST(f_pad),
     "pad(input, pad, mode='constant', value=None)\ntorch.nn.functional.pad: pad lists (left, right) pairs from "
     "the last dim backwards; mode constant (value, default 0; negative pads crop), replicate, reflect or circular."},
    {"matmul", FAST(f_matmul), "matmul(input, other)\ninput.matmul(other)."},
    {"mm", FAST(f_mm), "mm(input, mat2)\ninput.mm(mat2)."},
    {"bmm", FAST(f_bmm), "bmm(input, mat2)\ninput.bmm(mat2)."},
    {"mv", FAST(f_mv), "mv(input, vec)\ninput.mv(vec)."},
    {"dot", FAST(f_dot), "dot(input, other)\ninput.dot(other)."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_shape = {shape_methods, NULL, shape_functions, NULL};
