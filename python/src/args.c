/* Argument parsing for the binding: a fastcall parser by name (cheaper than
 * PyArg_ParseTupleAndKeywords on the tiny-tensor path), shapes, dims,
 * numbers, and tensor operands. */
#include "wkpy.h"
#include <string.h>

int wkpy_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
               const char *const *names, int nreq, PyObject **out) {
    int n = 0;
    while (names[n]) n++;
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname, n, nargs);
        return -1;
    }
    for (int i = 0; i < n; i++) out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (!key) return -1;
        int i = 0;
        while (i < n && strcmp(names[i], key)) i++;
        if (i == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", fname, key);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname, key);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < nreq; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
            return -1;
        }
    return 0;
}

int wkpy_int(PyObject *o, long long dflt, long long *out) {
    if (!o || o == Py_None) {
        *out = dflt;
        return 0;
    }
    if (wkpy_check(o)) { /* a one-element integer tensor counts as an int (torch) */
        double v;
        if (wk_item(wkpy_t(o), &v) != WK_OK) return wkpy_raise_int();
        *out = (long long)v;
        return 0;
    }
    long long v = PyLong_AsLongLong(o); /* __index__: numpy ints work, floats do not */
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

int wkpy_double(PyObject *o, double dflt, double *out) {
    if (!o || o == Py_None) {
        *out = dflt;
        return 0;
    }
    if (wkpy_check(o)) {
        if (wk_item(wkpy_t(o), out) != WK_OK) return wkpy_raise_int();
        return 0;
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

int wkpy_bool(PyObject *o, bool dflt, bool *out) {
    if (!o || o == Py_None) {
        *out = dflt;
        return 0;
    }
    /* bools, ints and numpy.bool_ (torch refuses the rest: a str or a list
     * is a mistake, not a truth value) */
    if (!PyBool_Check(o) && !PyLong_Check(o) && strcmp(Py_TYPE(o)->tp_name, "numpy.bool_")) {
        PyErr_Format(PyExc_TypeError, "expected a bool, got %s", Py_TYPE(o)->tp_name);
        return -1;
    }
    int v = PyObject_IsTrue(o);
    if (v < 0) return -1;
    *out = v;
    return 0;
}

static int shape_seq(PyObject *o, int64_t *shape, int *rank) {
    if (PyBytes_Check(o) || PyByteArray_Check(o) || PyUnicode_Check(o)) { /* sequences, but not of dims */
        PyErr_Format(PyExc_TypeError, "a shape must be an int or a sequence of ints, not %s", Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *seq = PySequence_Fast(o, "shape must be an int or a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > WK_MAX_RANK) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "rank %zd exceeds wick's maximum %d", n, WK_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        shape[i] = v;
    }
    Py_DECREF(seq);
    *rank = (int)n;
    return 0;
}

int wkpy_shape(PyObject *o, int64_t *shape, int *rank) {
    if (PyLong_Check(o) || (PyIndex_Check(o) && !PySequence_Check(o))) { /* numpy ints too */
        shape[0] = PyLong_AsLongLong(o);
        *rank = 1;
        return shape[0] == -1 && PyErr_Occurred() ? -1 : 0;
    }
    return shape_seq(o, shape, rank);
}

int wkpy_shape_fast(PyObject *const *args, Py_ssize_t nargs, int64_t *shape, int *rank) {
    if (nargs == 1 && !PyLong_Check(args[0]) && !(PyIndex_Check(args[0]) && !wkpy_check(args[0])))
        return shape_seq(args[0], shape, rank);
    if (nargs > WK_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "rank %zd exceeds wick's maximum %d", nargs, WK_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        long long v = PyLong_AsLongLong(args[i]);
        if (v == -1 && PyErr_Occurred()) return -1;
        shape[i] = v;
    }
    *rank = (int)nargs;
    return 0;
}

int wkpy_dims(PyObject *o, int *dims, int *n) {
    if (!o || o == Py_None) {
        *n = -1;
        return 0;
    }
    if (PyLong_Check(o) || PyIndex_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v == -1 && PyErr_Occurred()) return -1;
        dims[0] = (int)v;
        *n = 1;
        return 0;
    }
    int64_t d[WK_MAX_RANK];
    if (shape_seq(o, d, n) < 0) {
        PyErr_SetString(PyExc_TypeError, "dim must be None, an int or a sequence of ints");
        return -1;
    }
    for (int i = 0; i < *n; i++) dims[i] = (int)d[i];
    return 0;
}

wk_tensor *wkpy_operand(PyObject *o, const wk_tensor *like, bool *owned) {
    *owned = false;
    if (wkpy_check(o)) return wkpy_t(o);
    wk_tensor *t = NULL;
    if (PyFloat_Check(o) || PyLong_Check(o)) { /* bool is a PyLong */
        double v = PyFloat_AsDouble(o);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        wk_dtype dt = like ? wk_tensor_dtype(like) : PyFloat_Check(o) ? WK_F32 : WK_I64;
        t = wk_full(NULL, 0, v, dt, like ? wk_tensor_device(like) : wk_cpu());
    } else if (PyObject_CheckBuffer(o)) {
        t = wkpy_from_buffer(o);
        if (!t) return NULL;
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        t = like ? wkpy_from_nested(o, wk_tensor_dtype(like), true) : wkpy_from_nested(o, WK_F32, false);
        if (!t) return NULL;
        if (like && wk_tensor_device(like) != wk_cpu()) {
            wk_tensor *d = wk_to_device(t, wk_tensor_device(like));
            wk_tensor_free(t);
            t = d;
        }
    } else {
        PyErr_Format(PyExc_TypeError, "expected a wick.Tensor, a number, an array or a list, got %s",
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    if (!t) {
        wkpy_raise();
        return NULL;
    }
    *owned = true;
    return t;
}

wk_tensor *wkpy_tensor_arg(PyObject *o, const char *fname, const char *what) {
    if (o && wkpy_check(o)) return wkpy_t(o);
    PyErr_Format(PyExc_TypeError, "%s(): %s must be a wick.Tensor, got %s", fname, what,
                 o ? Py_TYPE(o)->tp_name : "nothing");
    return NULL;
}

wk_tensor **wkpy_tensor_list(PyObject *o, const char *fname, int *n) {
    /* a list or tuple only: the pointers are borrowed from o's items, so o
     * itself (held by the caller) must be what holds them — a generator's
     * temporary list would die on return */
    if (!PyList_Check(o) && !PyTuple_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): expected a list or tuple of wick.Tensor, got %s", fname,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(o, "expected a sequence of wick.Tensor");
    if (!seq) return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    wk_tensor **ts = PyMem_Malloc(sizeof *ts * (size_t)(k ? k : 1));
    if (!ts) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!wkpy_check(it)) {
            PyErr_Format(PyExc_TypeError, "%s(): item %zd is a %s, not a wick.Tensor", fname, i, Py_TYPE(it)->tp_name);
            PyMem_Free(ts);
            Py_DECREF(seq);
            return NULL;
        }
        ts[i] = wkpy_t(it);
    }
    Py_DECREF(seq); /* the tensors stay alive: o holds them */
    *n = (int)k;
    return ts;
}
