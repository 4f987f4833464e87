/* The gather / scatter family with PyTorch's names and argument order, as
 * Tensor methods and wick.* functions (the function takes the tensor first,
 * as `input`): index_select, gather, take_along_dim, scatter / scatter_,
 * scatter_add / scatter_add_, index_add / index_add_, masked_fill /
 * masked_fill_, slice_scatter, and wick.embedding.
 *
 * Index arguments may be Tensors (u8 / u32 / i32 / i64, as wick takes them),
 * numpy integer arrays (zero-copy) or lists; they move to the tensor's
 * device. Out-of-range indices are wick.IndexError (wick checks them). */
#include "wkpy.h"
#include <string.h>

/* Tensors an op made for its arguments, freed when it returns. */
typedef struct {
    wk_tensor *t[6];
    int n;
} owned_set;

static wk_tensor *own(owned_set *o, wk_tensor *t) {
    if (t) o->t[o->n++] = t;
    return t;
}
static void own_free(owned_set *o) {
    for (int i = 0; i < o->n; i++) wk_tensor_free(o->t[i]);
    o->n = 0;
}

/* A NULL from wick: raise its error unless a Python error is pending. */
static void *fail(void) {
    if (!PyErr_Occurred()) wkpy_raise();
    return NULL;
}

/* An index (or mask) argument on like's device. */
static wk_tensor *index_arg(PyObject *o, const wk_tensor *like, owned_set *os) {
    bool owned, mask;
    wk_tensor *t = wkpy_index_operand(o, &owned, &mask);
    if (!t) return NULL;
    if (owned) own(os, t);
    if (wk_tensor_device(t) != wk_tensor_device(like) && !(t = own(os, wk_to_device(t, wk_tensor_device(like)))))
        return fail();
    return t;
}

static int dim_arg(PyObject *o, const char *fname, int *dim) {
    if (!o || o == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument 'dim'", fname);
        return -1;
    }
    long long d;
    if (wkpy_int(o, 0, &d) < 0) return -1;
    *dim = (int)d;
    return 0;
}

/* A source argument: a Tensor, or a number / list made a tensor of like's
 * dtype and device (a number fills shape, when given). */
static wk_tensor *source_arg(PyObject *o, const wk_tensor *like, const wk_tensor *shape_of, owned_set *os) {
    if ((PyFloat_Check(o) || PyLong_Check(o)) && shape_of) {
        double v;
        if (wkpy_double(o, 0, &v) < 0) return NULL;
        wk_tensor *t = own(os, wk_full(wk_shape(shape_of), wk_rank(shape_of), v, wk_tensor_dtype(like),
                                       wk_tensor_device(like)));
        return t ? t : fail();
    }
    bool owned;
    wk_tensor *t = wkpy_operand(o, like, &owned);
    if (t && owned) own(os, t);
    return t;
}

/* ---- methods and their wick.* functions from one body ----
 * OP_BOTH(name, nreq, "arg", ...) declares name##_impl(self, a) and the
 * method / function wrappers (the function adds `input` in front). */
#define OP_METHOD(name, nreq, ...)                                                                             \
    static const char *const name##_names[] = {__VA_ARGS__, NULL};                                             \
    static PyObject *name##_impl(PyObject *self, PyObject **a);                                                \
    static PyObject *m_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {         \
        PyObject *a[8];                                                                                        \
        if (wkpy_parse(#name, args, nargs, kw, name##_names, nreq, a) < 0) return NULL;                        \
        return name##_impl(self, a);                                                                           \
    }
#define OP_BOTH(name, nreq, ...)                                                                               \
    OP_METHOD(name, nreq, __VA_ARGS__)                                                                         \
    static const char *const name##_fnames[] = {"input", __VA_ARGS__, NULL};                                   \
    static PyObject *f_##name(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {          \
        (void)mod;                                                                                             \
        PyObject *a[9];                                                                                        \
        if (wkpy_parse(#name, args, nargs, kw, name##_fnames, (nreq) + 1, a) < 0) return NULL;                 \
        if (!wkpy_tensor_arg(a[0], #name, "input")) return NULL;                                               \
        return name##_impl(a[0], a + 1);                                                                       \
    }

/* ---- index_select / gather / take_along_dim ---- */

OP_BOTH(index_select, 2, "dim", "index")
static PyObject *index_select_impl(PyObject *self, PyObject **a) {
    wk_tensor *t = wkpy_t(self), *r = NULL;
    owned_set os = {.n = 0};
    int dim;
    wk_tensor *ids = dim_arg(a[0], "index_select", &dim) < 0 ? NULL : index_arg(a[1], t, &os);
    if (ids) WKPY_NOGIL(wkpy_big(t), r = wk_index_select(t, ids, dim));
    own_free(&os);
    return ids ? wkpy_wrap(r) : NULL;
}

OP_BOTH(gather, 2, "dim", "index")
static PyObject *gather_impl(PyObject *self, PyObject **a) {
    wk_tensor *t = wkpy_t(self), *r = NULL;
    owned_set os = {.n = 0};
    int dim;
    wk_tensor *ids = dim_arg(a[0], "gather", &dim) < 0 ? NULL : index_arg(a[1], t, &os);
    if (ids) WKPY_NOGIL(wkpy_big(t) || wkpy_big(ids), r = wk_gather(t, ids, dim));
    own_free(&os);
    return ids ? wkpy_wrap(r) : NULL;
}

/* torch.take_along_dim(input, indices, dim=None): gather along dim; no dim
 * gathers from the flattened tensor with flattened indices. */
OP_BOTH(take_along_dim, 1, "indices", "dim")
static PyObject *take_along_dim_impl(PyObject *self, PyObject **a) {
    wk_tensor *t = wkpy_t(self), *r = NULL;
    owned_set os = {.n = 0};
    wk_tensor *ids = index_arg(a[0], t, &os);
    int dim = 0;
    if (ids && (!a[1] || a[1] == Py_None)) {
        t = own(&os, wk_flatten_all(t));
        ids = t ? own(&os, wk_flatten_all(ids)) : NULL;
        if (!ids) fail();
    } else if (ids && dim_arg(a[1], "take_along_dim", &dim) < 0) ids = NULL;
    if (ids) WKPY_NOGIL(wkpy_big(t) || wkpy_big(ids), r = wk_gather(t, ids, dim));
    own_free(&os);
    return ids ? wkpy_wrap(r) : NULL;
}

/* ---- scatter family ---- */

/* scatter(dim, index, src) / scatter(dim, index, value=v): torch's two
 * forms; reduce="add" is scatter_add. in_place writes self. */
static PyObject *scatter_common(PyObject *self, PyObject **a, const char *fname, bool add, bool in_place) {
    wk_tensor *t = wkpy_t(self), *r = NULL;
    owned_set os = {.n = 0};
    int dim;
    PyObject *srco = a[2] ? a[2] : a[3];
    if (a[2] && a[3]) {
        PyErr_Format(PyExc_TypeError, "%s(): give src or value, not both", fname);
        return NULL;
    }
    if (!srco) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument 'src' (a Tensor or a number)", fname);
        return NULL;
    }
    if (a[4] && a[4] != Py_None) {
        const char *red = PyUnicode_Check(a[4]) ? PyUnicode_AsUTF8(a[4]) : NULL;
        if (!red || strcmp(red, "add") != 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "%s(): reduce must be None or 'add' (wick has no multiply scatter)",
                             fname);
            return NULL;
        }
        add = true;
    }
    if (dim_arg(a[0], fname, &dim) < 0) return NULL;
    wk_tensor *ids = index_arg(a[1], t, &os);
    wk_tensor *src = ids ? source_arg(srco, t, ids, &os) : NULL;
    PyObject *res = NULL;
    if (src) {
        bool big = wkpy_big(t) || wkpy_big(ids);
        if (in_place) {
            wk_status st;
            WKPY_NOGIL(big, st = add ? wk_scatter_add_(t, ids, src, dim) : wk_scatter_(t, ids, src, dim));
            res = st == WK_OK ? Py_NewRef(self) : wkpy_raise();
        } else {
            WKPY_NOGIL(big, r = add ? wk_scatter_add(t, ids, src, dim) : wk_scatter(t, ids, src, dim));
            res = wkpy_wrap(r);
        }
    }
    own_free(&os);
    return res;
}

OP_BOTH(scatter, 2, "dim", "index", "src", "value", "reduce")
static PyObject *scatter_impl(PyObject *self, PyObject **a) { return scatter_common(self, a, "scatter", false, false); }
OP_METHOD(scatter_, 2, "dim", "index", "src", "value", "reduce")
static PyObject *scatter__impl(PyObject *self, PyObject **a) { return scatter_common(self, a, "scatter_", false, true); }

/* scatter_add takes src only; the common body reads a[0..4] */
static PyObject *scatter_add_common(PyObject *self, PyObject **a, const char *fname, bool in_place) {
    PyObject *b[5] = {a[0], a[1], a[2], NULL, NULL};
    return scatter_common(self, b, fname, true, in_place);
}
OP_BOTH(scatter_add, 3, "dim", "index", "src")
static PyObject *scatter_add_impl(PyObject *self, PyObject **a) {
    return scatter_add_common(self, a, "scatter_add", false);
}
OP_METHOD(scatter_add_, 3, "dim", "index", "src")
static PyObject *scatter_add__impl(PyObject *self, PyObject **a) {
    return scatter_add_common(self, a, "scatter_add_", true);
}

/* ---- index_add (torch: alpha scales source) ---- */

static wk_tensor *index_add_new(PyObject *self, PyObject **a, const char *fname) {
    wk_tensor *t = wkpy_t(self), *r = NULL;
    owned_set os = {.n = 0};
    int dim;
    double alpha;
    if (dim_arg(a[0], fname, &dim) < 0 || wkpy_double(a[3], 1.0, &alpha) < 0) return NULL;
    wk_tensor *ids = index_arg(a[1], t, &os);
    wk_tensor *src = ids ? source_arg(a[2], t, NULL, &os) : NULL;
    if (src && alpha != 1.0 && !(src = own(&os, wk_binary_scalar(src, alpha, WK_MUL)))) fail();
    if (src) {
        WKPY_NOGIL(wkpy_big(t) || wkpy_big(src), r = wk_index_add(t, ids, src, dim));
        if (!r) fail();
    }
    own_free(&os);
    return r;
}

OP_BOTH(index_add, 3, "dim", "index", "source", "alpha")
static PyObject *index_add_impl(PyObject *self, PyObject **a) {
    wk_tensor *r = index_add_new(self, a, "index_add");
    return r ? wkpy_wrap(r) : NULL;
}

/* In-place forms that wick computes as a copy: the result written back. */
static PyObject *write_back(PyObject *self, wk_tensor *r) {
    if (!r) return NULL;
    wk_status st;
    WKPY_NOGIL(wkpy_big(r), st = wk_copy_(wkpy_t(self), r));
    wk_tensor_free(r);
    return st == WK_OK ? Py_NewRef(self) : wkpy_raise();
}

OP_METHOD(index_add_, 3, "dim", "index", "source", "alpha")
static PyObject *index_add__impl(PyObject *self, PyObject **a) {
    return write_back(self, index_add_new(self, a, "index_add_"));
}

/* ---- masked_fill ---- */

static wk_tensor *masked_fill_new(PyObject *self, PyObject **a) {
    wk_tensor *t = wkpy_t(self), *r = NULL;
    owned_set os = {.n = 0};
    double v;
    if (wkpy_double(a[1], 0, &v) < 0) return NULL;
    wk_tensor *mask = index_arg(a[0], t, &os);
    if (mask) {
        WKPY_NOGIL(wkpy_big(t), r = wk_masked_fill(t, mask, v));
        if (!r) fail();
    }
    own_free(&os);
    return r;
}

OP_BOTH(masked_fill, 2, "mask", "value")
static PyObject *masked_fill_impl(PyObject *self, PyObject **a) {
    wk_tensor *r = masked_fill_new(self, a);
    return r ? wkpy_wrap(r) : NULL;
}
OP_METHOD(masked_fill_, 2, "mask", "value")
static PyObject *masked_fill__impl(PyObject *self, PyObject **a) { return write_back(self, masked_fill_new(self, a)); }

/* ---- slice_scatter: a copy of self with self[..., start:end:step, ...] = src
 * (the indexing part's setitem does the write, any step). ---- */

OP_BOTH(slice_scatter, 1, "src", "dim", "start", "end", "step")
static PyObject *slice_scatter_impl(PyObject *self, PyObject **a) {
    wk_tensor *t = wkpy_t(self);
    long long dim, step;
    if (wkpy_int(a[1], 0, &dim) < 0 || wkpy_int(a[4], 1, &step) < 0) return NULL;
    int rank = wk_rank(t);
    if (dim < -rank || dim >= rank) {
        PyErr_Format(wkpy_error_class(WK_ERR_INDEX), "slice_scatter(): dim %lld out of range for rank %d", dim, rank);
        return NULL;
    }
    if (dim < 0) dim += rank;
    if (step <= 0) {
        PyErr_SetString(PyExc_ValueError, "slice_scatter(): step must be positive");
        return NULL;
    }
    PyObject *sl = PySlice_New(a[2] ? a[2] : Py_None, a[3] ? a[3] : Py_None, a[4] ? a[4] : Py_None);
    PyObject *key = sl ? PyTuple_New(dim + 1) : NULL;
    for (int i = 0; key && i < dim; i++) PyTuple_SET_ITEM(key, i, PySlice_New(NULL, NULL, NULL));
    if (key) PyTuple_SET_ITEM(key, dim, Py_NewRef(sl));
    Py_XDECREF(sl);
    if (!key) return NULL;
    PyObject *res = NULL, *src = NULL;
    bool owned;
    wk_tensor *s = wkpy_operand(a[0], t, &owned);
    if (s) {
        src = owned ? wkpy_wrap(s) : Py_NewRef(a[0]);
        PyObject *view = src ? wkpy_getitem(self, key) : NULL; /* the shape src must have (torch's rule) */
        if (view) {
            wk_tensor *v = wkpy_t(view);
            bool same = wk_rank(v) == wk_rank(wkpy_t(src));
            for (int i = 0; same && i < wk_rank(v); i++) same = wk_dim(v, i) == wk_dim(wkpy_t(src), i);
            if (!same) {
                char x[200], y[200];
                wk_tensor_describe(v, x, sizeof x);
                wk_tensor_describe(wkpy_t(src), y, sizeof y);
                PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "slice_scatter(): src %s does not fit the slice %s", y, x);
            } else {
                res = wkpy_wrap(wk_copy(t));
                if (res && wkpy_setitem(res, key, src) < 0) Py_CLEAR(res);
            }
            Py_DECREF(view);
        }
    }
    Py_XDECREF(src);
    Py_DECREF(key);
    return res;
}

/* ---- embedding: wick.embedding(ids, table), torch's F.embedding(input, weight) ---- */

static PyObject *f_embedding(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)mod;
    static const char *const names[] = {"input", "weight", "ids", "table", NULL};
    PyObject *a[4];
    if (wkpy_parse("embedding", args, nargs, kw, names, 0, a) < 0) return NULL;
    if ((a[0] && a[2]) || (a[1] && a[3])) {
        PyErr_SetString(PyExc_TypeError, "embedding(): give input or ids, weight or table, not both");
        return NULL;
    }
    PyObject *ido = a[0] ? a[0] : a[2], *tabo = a[1] ? a[1] : a[3];
    if (!ido || !tabo) {
        PyErr_SetString(PyExc_TypeError, "embedding() needs ids (input) and a table (weight)");
        return NULL;
    }
    wk_tensor *table = wkpy_tensor_arg(tabo, "embedding", "the table (weight)");
    if (!table) return NULL;
    owned_set os = {.n = 0};
    wk_tensor *ids = index_arg(ido, table, &os), *r = NULL;
    if (ids) WKPY_NOGIL(wkpy_big(table) || wkpy_big(ids), r = wk_embedding(ids, table));
    own_free(&os);
    return ids ? wkpy_wrap(r) : NULL;
}

/* ---- tables ---- */

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

#define DOC_INDEX_SELECT                                                                                       \
    "index_select(dim, index)\n\nThe entries of dim at the 1-D index (u8 / u32 / i32 / i64 tensor, numpy array or " \
    "list): result size index.numel along dim. A copy."
#define DOC_GATHER                                                                                             \
    "gather(dim, index)\n\nout[i][j][k] = self[index[i][j][k]][j][k] (dim 0; numpy's take_along_axis): index has " \
    "self's rank, sizes <= self's off dim."
#define DOC_TAKE                                                                                               \
    "take_along_dim(indices, dim=None)\n\ngather(dim, indices); without dim, from the flattened tensor with the " \
    "flattened indices."
#define DOC_SCATTER                                                                                            \
    "scatter(dim, index, src=None, value=None, reduce=None)\n\nA copy with self[index[i][j]][j] = src[i][j] (dim 0); " \
    "src a Tensor of self's dtype or a number (value=). Duplicates: the last write wins. reduce='add' adds."
#define DOC_SCATTER_                                                                                           \
    "scatter_(dim, index, src=None, value=None, reduce=None)\n\nscatter in place; returns self."
#define DOC_SCATTER_ADD                                                                                        \
    "scatter_add(dim, index, src)\n\nA copy with self[index[i][j]][j] += src[i][j] (dim 0); duplicates accumulate."
#define DOC_SCATTER_ADD_ "scatter_add_(dim, index, src)\n\nscatter_add in place; returns self."
#define DOC_INDEX_ADD                                                                                          \
    "index_add(dim, index, source, alpha=1)\n\nA copy with self.index_select(dim, index) += alpha * source (index " \
    "1-D; source has self's shape but index.numel along dim)."
#define DOC_INDEX_ADD_ "index_add_(dim, index, source, alpha=1)\n\nindex_add written into self; returns self."
#define DOC_MASKED_FILL                                                                                        \
    "masked_fill(mask, value)\n\nA copy with value where mask (u8 tensor, numpy bool array, list) is nonzero; mask " \
    "broadcasts to self."
#define DOC_MASKED_FILL_ "masked_fill_(mask, value)\n\nmasked_fill written into self; returns self."
#define DOC_SLICE_SCATTER                                                                                      \
    "slice_scatter(src, dim=0, start=None, end=None, step=1)\n\nA copy with self[..., start:end:step] = src along " \
    "dim; src has the slice's shape."

static PyMethodDef gather_methods[] = {
    {"index_select", FAST(m_index_select), DOC_INDEX_SELECT},
    {"gather", FAST(m_gather), DOC_GATHER},
    {"take_along_dim", FAST(m_take_along_dim), DOC_TAKE},
    {"scatter", FAST(m_scatter), DOC_SCATTER},
    {"scatter_", FAST(m_scatter_), DOC_SCATTER_},
    {"scatter_add", FAST(m_scatter_add), DOC_SCATTER_ADD},
    {"scatter_add_", FAST(m_scatter_add_), DOC_SCATTER_ADD_},
    {"index_add", FAST(m_index_add), DOC_INDEX_ADD},
    {"index_add_", FAST(m_index_add_), DOC_INDEX_ADD_},
    {"masked_fill", FAST(m_masked_fill), DOC_MASKED_FILL},
    {"masked_fill_", FAST(m_masked_fill_), DOC_MASKED_FILL_},
    {"slice_scatter", FAST(m_slice_scatter), DOC_SLICE_SCATTER},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef gather_functions[] = {
    {"index_select", FAST(f_index_select), "index_select(input, dim, index)\n\nTensor.index_select as a function."},
    {"gather", FAST(f_gather), "gather(input, dim, index)\n\nTensor.gather as a function."},
    {"take_along_dim", FAST(f_take_along_dim),
     "take_along_dim(input, indices, dim=None)\n\nTensor.take_along_dim as a function."},
    {"scatter", FAST(f_scatter),
     "scatter(input, dim, index, src=None, value=None, reduce=None)\n\nTensor.scatter as a function."},
    {"scatter_add", FAST(f_scatter_add), "scatter_add(input, dim, index, src)\n\nTensor.scatter_add as a function."},
    {"index_add", FAST(f_index_add),
     "index_add(input, dim, index, source, alpha=1)\n\nTensor.index_add as a function."},
    {"masked_fill", FAST(f_masked_fill), "masked_fill(input, mask, value)\n\nTensor.masked_fill as a function."},
    {"slice_scatter", FAST(f_slice_scatter),
     "slice_scatter(input, src, dim=0, start=None, end=None, step=1)\n\nTensor.slice_scatter as a function."},
    {"embedding", FAST(f_embedding),
     "embedding(input=None, weight=None, ids=None, table=None)\n\nRows of the table (vocab, hidden) picked by the "
     "ids: shape ids.shape + (hidden,). wick.embedding(ids, table) and torch's F.embedding(input, weight) order."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_gather = {gather_methods, NULL, gather_functions, NULL};
