/* Python values <-> wick tensors: dtype names, nested lists, the buffer
 * protocol (zero-copy from numpy), and tolist. */
#include "wkpy.h"
#include <stdlib.h>
#include <string.h>

/* ---- nested sequences ---- */

static int nested_shape(PyObject *o, int64_t *shape, int depth, int *rank) {
    if (PySequence_Check(o) && !PyUnicode_Check(o) && !PyBytes_Check(o)) {
        if (depth >= WK_MAX_RANK) {
            PyErr_Format(PyExc_ValueError, "more than %d nested levels", WK_MAX_RANK);
            return -1;
        }
        Py_ssize_t n = PySequence_Size(o);
        if (n < 0) return -1;
        shape[depth] = n;
        *rank = depth + 1 > *rank ? depth + 1 : *rank;
        if (n == 0) return 0;
        PyObject *first = PySequence_GetItem(o, 0);
        if (!first) return -1;
        int r = nested_shape(first, shape, depth + 1, rank);
        Py_DECREF(first);
        return r;
    }
    return 0;
}

/* Fill v (doubles) and iv (exact int64 for Python ints) in row-major order. */
static int nested_fill(PyObject *o, const int64_t *shape, int rank, int depth, double *v, int64_t *iv, int64_t *pos,
                       bool *any_float) {
    if (depth == rank) {
        if (PyLong_Check(o)) { /* exact: ints beyond 2^53 keep their digits */
            int ovf = 0;
            long long x = PyLong_AsLongLongAndOverflow(o, &ovf);
            if (x == -1 && PyErr_Occurred()) return -1;
            if (ovf) {
                PyErr_SetString(PyExc_OverflowError, "a Python int does not fit in int64");
                return -1;
            }
            iv[*pos] = x;
            v[(*pos)++] = (double)x;
            return 0;
        }
        *any_float = true;
        double x = PyFloat_AsDouble(o);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        iv[*pos] = 0;
        v[(*pos)++] = x;
        return 0;
    }
    if (!PySequence_Check(o) || PyUnicode_Check(o) || PySequence_Size(o) != shape[depth]) {
        PyErr_Format(PyExc_ValueError, "ragged nested sequence: expected %lld items at depth %d", (long long)shape[depth],
                     depth);
        return -1;
    }
    for (int64_t i = 0; i < shape[depth]; i++) {
        PyObject *it = PySequence_GetItem(o, (Py_ssize_t)i);
        if (!it) return -1;
        int r = nested_fill(it, shape, rank, depth + 1, v, iv, pos, any_float);
        Py_DECREF(it);
        if (r < 0) return -1;
    }
    return 0;
}

wk_tensor *wkpy_from_nested(PyObject *data, wk_dtype dt, bool dt_given) {
    int64_t shape[WK_MAX_RANK] = {0};
    int rank = 0;
    if (nested_shape(data, shape, 0, &rank) < 0) return NULL;
    int64_t n = 1;
    const int64_t cap = ((int64_t)1 << 40) / (int64_t)(2 * sizeof(double));
    for (int i = 0; i < rank; i++) {
        if (shape[i] && n > cap / shape[i]) return PyErr_NoMemory(), NULL; /* lists repeating one list */
        n *= shape[i];
    }
    double *v = PyMem_Malloc(sizeof(double) * (size_t)(n ? n : 1));
    int64_t *iv = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v || !iv) {
        PyMem_Free(v);
        PyMem_Free(iv);
        PyErr_NoMemory();
        return NULL;
    }
    int64_t pos = 0;
    wk_tensor *t = NULL;
    bool any_float = false;
    if (nested_fill(data, shape, rank, 0, v, iv, &pos, &any_float) == 0) {
        if (!dt_given) dt = any_float || n == 0 ? WK_F32 : WK_I64;
        /* all ints into an integer dtype: from the exact int64 values */
        bool exact = !any_float && wk_dtype_is_int(dt);
        wk_dtype src = exact ? WK_I64 : WK_F64;
        wk_tensor *d = wk_from_host(exact ? (const void *)iv : (const void *)v, sizeof(double) * (size_t)n, shape,
                                    rank, src, wk_cpu());
        t = dt == src || !d ? d : wk_to_dtype(d, dt);
        if (t != d) wk_tensor_free(d);
        if (!t) wkpy_raise();
    }
    PyMem_Free(v);
    PyMem_Free(iv);
    return t;
}

/* ---- the buffer protocol ---- */

static int dtype_of_format(const char *f, Py_ssize_t itemsize, wk_dtype *out) {
    if (*f == '<' || *f == '=' || *f == '@' || *f == '|') f++;
    if (f[0] && f[1]) return -1;
    switch (f[0]) {
    case 'f': *out = WK_F32; return itemsize == 4 ? 0 : -1;
    case 'd': *out = WK_F64; return itemsize == 8 ? 0 : -1;
    case 'e': *out = WK_F16; return itemsize == 2 ? 0 : -1;
    case 'B': *out = WK_U8; return 0;
    case 'h': *out = WK_I16; return itemsize == 2 ? 0 : -1;
    case 'i': case 'l': case 'q':
        *out = itemsize == 4 ? WK_I32 : WK_I64;
        return itemsize == 4 || itemsize == 8 ? 0 : -1;
    case 'I': case 'L':
        *out = WK_U32;
        return itemsize == 4 ? 0 : -1;
    default: return -1;
    }
}

typedef struct {
    Py_buffer view;
} held_buffer;

/* wick's release callback: runs on whichever thread frees the last view. */
static void release_buffer(void *ctx, void *data, size_t nbytes) {
    (void)data;
    (void)nbytes;
    held_buffer *h = ctx;
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(&h->view);
    PyGILState_Release(g);
    PyMem_RawFree(h);
}

wk_tensor *wkpy_from_buffer(PyObject *obj) {
    held_buffer *h = PyMem_RawMalloc(sizeof *h);
    if (!h) {
        PyErr_NoMemory();
        return NULL;
    }
    if (PyObject_GetBuffer(obj, &h->view, PyBUF_RECORDS_RO) < 0) {
        PyMem_RawFree(h);
        return NULL;
    }
    Py_buffer *v = &h->view;
    wk_dtype dt;
    int64_t shape[WK_MAX_RANK], strides[WK_MAX_RANK];
    size_t span = (size_t)v->itemsize;
    const char *why = NULL;
    if (dtype_of_format(v->format ? v->format : "B", v->itemsize, &dt) < 0) why = "element format not supported";
    else if (v->ndim > WK_MAX_RANK) why = "too many dims";
    for (int i = 0; !why && i < v->ndim; i++) {
        shape[i] = v->shape[i];
        Py_ssize_t s = v->strides ? v->strides[i] : 0;
        if (s < 0 || s % v->itemsize) why = "negative or unaligned strides (copy the array first)";
        strides[i] = s / v->itemsize;
        if (v->shape[i] == 0) span = 0;
    }
    /* strides may be NULL (ctypes arrays): C-contiguous, itemsize apart */
    if (!why && span && !v->strides) span = (size_t)v->len;
    for (int i = 0; !why && span && v->strides && i < v->ndim; i++)
        span += (size_t)(v->shape[i] - 1) * (size_t)v->strides[i];
    if (why) {
        PyErr_Format(PyExc_TypeError, "wick.from_numpy: %s (format '%s', itemsize %zd)", why,
                     v->format ? v->format : "B", v->itemsize);
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        return NULL;
    }
    wk_tensor *t = wk_from_blob(v->buf, span, shape, v->ndim, v->strides ? strides : NULL, dt, wk_cpu(),
                                release_buffer, h, v->readonly ? WK_BLOB_READ_ONLY : 0);
    if (!t) { /* wick never calls release on failure: the buffer is still ours */
        PyBuffer_Release(v);
        PyMem_RawFree(h);
        wkpy_raise();
    }
    return t;
}

/* ---- tolist ---- */

/* v: doubles (float dtypes) or int64 (integer dtypes: exact) */
static PyObject *list_rec(const void *v, const int64_t *shape, int rank, int d, int64_t *pos, bool is_float) {
    if (d == rank) {
        int64_t i = (*pos)++;
        return is_float ? PyFloat_FromDouble(((const double *)v)[i])
                        : PyLong_FromLongLong((long long)((const int64_t *)v)[i]);
    }
    PyObject *l = PyList_New((Py_ssize_t)shape[d]);
    if (!l) return NULL;
    for (int64_t i = 0; i < shape[d]; i++) {
        PyObject *it = list_rec(v, shape, rank, d + 1, pos, is_float);
        if (!it) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, it);
    }
    return l;
}

/* Every element of t on the host: doubles for float (and block) dtypes,
 * exact int64 for integer dtypes. PyMem_Free the result. */
static void *host_values(const wk_tensor *t, bool *is_float) {
    int64_t n = wk_numel(t);
    void *v = PyMem_Malloc(8 * (size_t)(n ? n : 1));
    if (!v) return PyErr_NoMemory(), NULL;
    *is_float = !wk_dtype_is_int(wk_tensor_dtype(t));
    wk_status st;
    if (*is_float) {
        WKPY_NOGIL(wkpy_big(t), st = wk_to_host_f64(t, v, (size_t)n));
    } else {
        wk_tensor *i = wk_tensor_dtype(t) == WK_I64 ? NULL : wk_to_dtype(t, WK_I64);
        WKPY_NOGIL(wkpy_big(t), st = (wk_tensor_dtype(t) == WK_I64 || i) ? wk_to_host(i ? i : t, v, 8 * (size_t)n)
                                                                          : wk_last_status());
        wk_tensor_free(i);
    }
    if (st != WK_OK) {
        PyMem_Free(v);
        wkpy_raise();
        return NULL;
    }
    return v;
}

PyObject *wkpy_tolist(const wk_tensor *t) {
    bool is_float;
    void *v = host_values(t, &is_float);
    if (!v) return NULL;
    int64_t pos = 0;
    PyObject *r = list_rec(v, wk_shape(t), wk_rank(t), 0, &pos, is_float);
    PyMem_Free(v);
    return r;
}

PyObject *wkpy_item(const wk_tensor *t) {
    if (wk_numel(t) != 1) { /* wick's own error (ShapeError, naming the shape) */
        double d;
        if (wk_item(t, &d) != WK_OK) return wkpy_raise();
    }
    bool is_float;
    void *v = host_values(t, &is_float);
    if (!v) return NULL;
    PyObject *r = is_float ? PyFloat_FromDouble(*(double *)v) : PyLong_FromLongLong((long long)*(int64_t *)v);
    PyMem_Free(v);
    return r;
}

PyObject *wkpy_scalar(double v, wk_dtype dt) {
    if (wk_dtype_is_float(dt)) return PyFloat_FromDouble(v);
    return PyLong_FromLongLong((long long)v);
}
