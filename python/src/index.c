/* Tensor indexing: t[key] and t[key] = value with ints, slices, None and
 * `...` (views: narrow / select / unsqueeze); a slice step other than 1
 * gathers (a copy, as wick has no stepped views). */
#include "wkpy.h"

/* Apply one basic key to t at *dim (a dim t has); a new tensor or NULL. */
static wk_tensor *apply_one(wk_tensor *t, PyObject *k, int *dim) {
    if (k == Py_None) {
        wk_tensor *r = wk_unsqueeze(t, *dim);
        (*dim)++;
        return r;
    }
    int64_t n = wk_dim(t, *dim);
    if (PySlice_Check(k)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(k, &start, &stop, &step) < 0) return NULL;
        if (step < 0) {
            PyErr_SetString(PyExc_ValueError, "negative slice steps are not supported (use flip)");
            return NULL;
        }
        Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)n, &start, &stop, step);
        wk_tensor *r;
        if (step == 1) r = wk_narrow(t, *dim, start, len);
        else {
            wk_tensor *ids = wk_arange((double)start, (double)start + (double)step * (double)len, (double)step,
                                       WK_I64, wk_tensor_device(t));
            r = wk_index_select(t, ids, *dim);
            wk_tensor_free(ids);
        }
        (*dim)++;
        return r;
    }
    long long i;
    if (wkpy_int(k, 0, &i) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "unsupported index of type %s (ints, slices, None and ... work)",
                         Py_TYPE(k)->tp_name);
        }
        return NULL;
    }
    if (i < -n || i >= n) {
        PyErr_Format(PyExc_IndexError, "index %lld is out of range for dim %d of size %lld", i, *dim, (long long)n);
        return NULL;
    }
    return wk_select(t, *dim, i < 0 ? i + n : i);
}

/* The basic indexing of t by key: a new tensor, or NULL with an exception. */
static wk_tensor *basic_index(wk_tensor *t, PyObject *key) {
    PyObject *tup = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!tup) return NULL;
    Py_ssize_t nk = PyTuple_GET_SIZE(tup), used = 0, ell = -1;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *k = PyTuple_GET_ITEM(tup, i);
        if (k == Py_Ellipsis) {
            if (ell >= 0) {
                Py_DECREF(tup);
                PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
                return NULL;
            }
            ell = i;
        } else if (k != Py_None) used++;
    }
    int rank = wk_rank(t);
    if (used > rank) {
        Py_DECREF(tup);
        PyErr_Format(PyExc_IndexError, "too many indices: %zd for a tensor of rank %d", used, rank);
        return NULL;
    }
    wk_tensor *cur = wk_tensor_retain(t);
    int dim = 0;
    for (Py_ssize_t i = 0; cur && i < nk; i++) {
        PyObject *k = PyTuple_GET_ITEM(tup, i);
        if (k == Py_Ellipsis) {
            dim += rank - (int)used;
            continue;
        }
        wk_tensor *next = apply_one(cur, k, &dim);
        wk_tensor_free(cur);
        cur = next;
        if (!cur && !PyErr_Occurred()) wkpy_raise();
    }
    Py_DECREF(tup);
    return cur;
}

PyObject *wkpy_getitem(PyObject *self, PyObject *key) {
    wk_tensor *r = basic_index(wkpy_t(self), key);
    return r ? wkpy_wrap(r) : NULL;
}

/* t[key] = value: value (a Tensor, a number, an array) written into the
 * view basic indexing gives (broadcast to it). */
int wkpy_setitem(PyObject *self, PyObject *key, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "wick tensors do not support item deletion");
        return -1;
    }
    wk_tensor *view = basic_index(wkpy_t(self), key);
    if (!view) return -1;
    if (!wk_shares_storage(view, wkpy_t(self))) {
        wk_tensor_free(view);
        PyErr_SetString(PyExc_NotImplementedError, "assignment through a stepped slice is not supported yet");
        return -1;
    }
    wk_status st;
    if (PyFloat_Check(value) || PyLong_Check(value)) {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) {
            wk_tensor_free(view);
            return -1;
        }
        WKPY_NOGIL(wkpy_big(view), st = wk_fill_(view, v));
    } else {
        bool owned;
        wk_tensor *src = wkpy_operand(value, view, &owned);
        if (!src) {
            wk_tensor_free(view);
            return -1;
        }
        wk_tensor *b = wk_broadcast_as(src, wk_shape(view), wk_rank(view));
        WKPY_NOGIL(wkpy_big(view), st = b ? wk_copy_(view, b) : wk_last_status());
        wk_tensor_free(b);
        if (owned) wk_tensor_free(src);
    }
    wk_tensor_free(view);
    return st == WK_OK ? 0 : wkpy_raise_int();
}
