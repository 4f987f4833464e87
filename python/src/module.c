/* The module wick._wick: creation functions and module state. The Python
 * package (python/wick/__init__.py) re-exports it. */
#include "wkpy.h"

static int shape_arg(PyObject *o, int64_t *shape, int *rank) {
    if (PyLong_Check(o)) {
        shape[0] = PyLong_AsLongLong(o);
        *rank = 1;
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(o, "shape must be an int or a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > WK_MAX_RANK) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "rank %zd exceeds %d", n, WK_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) shape[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    Py_DECREF(seq);
    *rank = (int)n;
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *f_tensor(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *names[] = {"data", "dtype", NULL};
    PyObject *data, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", names, &data, &dto)) return NULL;
    wk_dtype dt;
    if (wkpy_dtype_from(dto, &dt) < 0) return NULL;
    wk_tensor *t = wkpy_from_nested(data, dt);
    return t ? wkpy_wrap(t) : NULL;
}

static PyObject *filled(PyObject *args, PyObject *kw, double v) {
    static char *names[] = {"shape", "dtype", NULL};
    PyObject *so, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", names, &so, &dto)) return NULL;
    int64_t shape[WK_MAX_RANK];
    int rank;
    wk_dtype dt;
    if (shape_arg(so, shape, &rank) < 0 || wkpy_dtype_from(dto, &dt) < 0) return NULL;
    return wkpy_wrap(wk_full(shape, rank, v, dt, wk_cpu()));
}
static PyObject *f_zeros(PyObject *m, PyObject *a, PyObject *k) { (void)m; return filled(a, k, 0.0); }
static PyObject *f_ones(PyObject *m, PyObject *a, PyObject *k) { (void)m; return filled(a, k, 1.0); }

static PyObject *f_arange(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *names[] = {"start", "end", "step", "dtype", NULL};
    double start, end = 0, step = 1;
    PyObject *endo = Py_None, *dto = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "d|OdO", names, &start, &endo, &step, &dto)) return NULL;
    if (endo == Py_None) {
        end = start;
        start = 0;
    } else if ((end = PyFloat_AsDouble(endo)) == -1.0 && PyErr_Occurred()) return NULL;
    wk_dtype dt;
    if (wkpy_dtype_from(dto, &dt) < 0) return NULL;
    return wkpy_wrap(wk_arange(start, end, step, dt, wk_cpu()));
}

static PyObject *f_from_numpy(PyObject *mod, PyObject *arr) {
    (void)mod;
    wk_tensor *t = wkpy_from_buffer(arr);
    return t ? wkpy_wrap(t) : NULL;
}

static PyObject *f_exp(PyObject *mod, PyObject *x) {
    (void)mod;
    if (!wkpy_check(x)) return PyErr_Format(PyExc_TypeError, "expected a wick.Tensor, got %s", Py_TYPE(x)->tp_name);
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS r = wk_exp(wkpy_t(x));
    Py_END_ALLOW_THREADS
    return wkpy_wrap(r);
}

static PyMethodDef module_methods[] = {
    {"tensor", (PyCFunction)(void (*)(void))f_tensor, METH_VARARGS | METH_KEYWORDS,
     "tensor(data, dtype='f32'): a CPU tensor from nested sequences of numbers."},
    {"zeros", (PyCFunction)(void (*)(void))f_zeros, METH_VARARGS | METH_KEYWORDS, "zeros(shape, dtype='f32')."},
    {"ones", (PyCFunction)(void (*)(void))f_ones, METH_VARARGS | METH_KEYWORDS, "ones(shape, dtype='f32')."},
    {"arange", (PyCFunction)(void (*)(void))f_arange, METH_VARARGS | METH_KEYWORDS,
     "arange(start, end=None, step=1, dtype='f32'), numpy's meaning."},
    {"from_numpy", f_from_numpy, METH_O,
     "from_numpy(array): a tensor sharing the array's memory (any object with the buffer protocol); the array "
     "stays alive until the last tensor over it is freed."},
    {"exp", f_exp, METH_O, "exp(t)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "wick._wick", "wick's CPython extension (see the wick package).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wick(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (wkpy_errors_init(m) < 0 || wkpy_tensor_init_type(m) < 0 ||
        PyModule_AddStringConstant(m, "__version__", WICK_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
