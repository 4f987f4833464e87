/* Creating tensors from Python: wick.tensor / as_tensor / from_numpy from
 * data, and zeros / ones / empty / full / arange / eye / rand / randn and
 * the *_like forms. Every function takes dtype= and device= (wick.dtype or
 * any name, wick.device or "cpu" / "cuda:0") and requires_grad=. */
#include "wkpy.h"

/* device and requires_grad applied to a fresh CPU or device tensor */
static PyObject *finish(wk_tensor *t, wk_device *dev, bool requires_grad) {
    if (t && dev && wk_tensor_device(t) != dev) {
        wk_tensor *d = wk_to_device(t, dev);
        wk_tensor_free(t);
        t = d;
    }
    if (t && requires_grad && wk_requires_grad(t, true) != WK_OK) {
        wk_tensor_free(t);
        t = NULL;
    }
    return wkpy_wrap(t);
}

static PyObject *f_tensor(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"data", "dtype", "device", "requires_grad", NULL};
    PyObject *a[4];
    wk_dtype dt;
    wk_device *dev;
    bool rg;
    if (wkpy_parse("tensor", args, nargs, kw, names, 1, a) < 0 || wkpy_dtype_from(a[1], WK_F32, &dt) < 0 ||
        wkpy_device_from(a[2], &dev) < 0 || wkpy_bool(a[3], false, &rg) < 0)
        return NULL;
    wk_tensor *t;
    if (wkpy_check(a[0])) t = wk_copy(wkpy_t(a[0]));
    else if (PyFloat_Check(a[0]) || PyLong_Check(a[0])) {
        double v;
        if (wkpy_double(a[0], 0, &v) < 0) return NULL;
        if (!a[1]) dt = PyFloat_Check(a[0]) ? WK_F32 : WK_I64;
        t = wk_full(NULL, 0, v, dt, wk_cpu());
    } else if (PyObject_CheckBuffer(a[0])) { /* a copy (torch.tensor copies); from_numpy shares */
        wk_tensor *s = wkpy_from_buffer(a[0]);
        if (!s) return NULL;
        t = a[1] && dt != wk_tensor_dtype(s) ? wk_to_dtype(s, dt) : wk_copy(s);
        wk_tensor_free(s);
    } else {
        t = wkpy_from_nested(a[0], dt, a[1] != NULL && a[1] != Py_None);
        if (!t) return NULL;
    }
    if (t && a[1] && a[1] != Py_None && wk_tensor_dtype(t) != dt) {
        wk_tensor *c = wk_to_dtype(t, dt);
        wk_tensor_free(t);
        t = c;
    }
    return finish(t, dev, rg);
}

static PyObject *f_as_tensor(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"data", "dtype", "device", NULL};
    PyObject *a[3];
    wk_dtype dt;
    wk_device *dev;
    if (wkpy_parse("as_tensor", args, nargs, kw, names, 1, a) < 0 || wkpy_device_from(a[2], &dev) < 0) return NULL;
    bool owned;
    wk_tensor *t = wkpy_operand(a[0], NULL, &owned); /* shares numpy's memory; a copy of lists */
    if (!t) return NULL;
    if (!owned) t = wk_tensor_retain(t);
    if (a[1] && a[1] != Py_None) {
        if (wkpy_dtype_from(a[1], WK_F32, &dt) < 0) {
            wk_tensor_free(t);
            return NULL;
        }
        if (dt != wk_tensor_dtype(t)) {
            wk_tensor *c = wk_to_dtype(t, dt);
            wk_tensor_free(t);
            t = c;
        }
    }
    return finish(t, dev, false);
}

static PyObject *f_from_numpy(PyObject *m, PyObject *arr) {
    (void)m;
    wk_tensor *t = wkpy_from_buffer(arr);
    return t ? wkpy_wrap(t) : NULL;
}

/* zeros(*shape, dtype=, device=, requires_grad=) and friends: the shape as
 * positional ints or one sequence */
typedef enum { K_ZEROS, K_ONES, K_EMPTY, K_RAND, K_RANDN } fill_kind;

static PyObject *filled(const char *fname, fill_kind k, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    int64_t shape[WK_MAX_RANK];
    int rank;
    if (wkpy_shape_fast(args, nargs, shape, &rank) < 0) return NULL;
    static const char *const names[] = {"dtype", "device", "requires_grad", NULL};
    PyObject *a[3];
    wk_dtype dt;
    wk_device *dev;
    bool rg;
    if (wkpy_parse(fname, args + nargs, 0, kw, names, 0, a) < 0 || wkpy_dtype_from(a[0], WK_F32, &dt) < 0 ||
        wkpy_device_from(a[1], &dev) < 0 || wkpy_bool(a[2], false, &rg) < 0)
        return NULL;
    wk_tensor *t = NULL;
    switch (k) {
    case K_ZEROS: t = wk_full(shape, rank, 0.0, dt, dev); break;
    case K_ONES: t = wk_full(shape, rank, 1.0, dt, dev); break;
    case K_EMPTY: t = wk_empty(shape, rank, dt, dev); break;
    case K_RAND: t = wk_rand(shape, rank, 0.0, 1.0, dt, dev); break;
    case K_RANDN: t = wk_randn(shape, rank, 0.0, 1.0, dt, dev); break;
    }
    return finish(t, NULL, rg);
}
#define FILLED(name, kind)                                                                                     \
    static PyObject *f_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {            \
        (void)m;                                                                                               \
        return filled(#name, kind, args, nargs, kw);                                                           \
    }
FILLED(zeros, K_ZEROS)
FILLED(ones, K_ONES)
FILLED(empty, K_EMPTY)
FILLED(rand, K_RAND)
FILLED(randn, K_RANDN)

static PyObject *f_full(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"shape", "fill_value", "dtype", "device", "requires_grad", NULL};
    PyObject *a[5];
    int64_t shape[WK_MAX_RANK];
    int rank;
    double v;
    wk_dtype dt;
    wk_device *dev;
    bool rg;
    if (wkpy_parse("full", args, nargs, kw, names, 2, a) < 0) return NULL;
    if (a[1] == Py_None) return PyErr_Format(PyExc_TypeError, "full(): fill_value must be a number, not None");
    if (wkpy_shape(a[0], shape, &rank) < 0 ||
        wkpy_double(a[1], 0, &v) < 0 || wkpy_dtype_from(a[2], PyLong_Check(a[1]) ? WK_I64 : WK_F32, &dt) < 0 ||
        wkpy_device_from(a[3], &dev) < 0 || wkpy_bool(a[4], false, &rg) < 0)
        return NULL;
    return finish(wk_full(shape, rank, v, dt, dev), NULL, rg);
}

/* zeros_like(t, dtype=None, device=None) ... : t's shape, dtype and device unless given */
static PyObject *like(const char *fname, double v, bool fill, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kw) {
    static const char *const names[] = {"input", "fill_value", "dtype", "device", "requires_grad", NULL};
    static const char *const names2[] = {"input", "dtype", "device", "requires_grad", NULL};
    PyObject *a[5] = {0};
    if (fill) {
        if (wkpy_parse(fname, args, nargs, kw, names, 2, a) < 0 || wkpy_double(a[1], 0, &v) < 0) return NULL;
    } else if (wkpy_parse(fname, args, nargs, kw, names2, 1, a) < 0) return NULL;
    else {
        a[4] = a[3];
        a[3] = a[2];
        a[2] = a[1];
    }
    wk_tensor *t = wkpy_tensor_arg(a[0], fname, "input");
    if (!t) return NULL;
    wk_dtype dt;
    wk_device *dev = wk_tensor_device(t);
    bool rg;
    if (wkpy_dtype_from(a[2], wk_tensor_dtype(t), &dt) < 0 || (a[3] && wkpy_device_from(a[3], &dev) < 0) ||
        wkpy_bool(a[4], false, &rg) < 0)
        return NULL;
    return finish(wk_full(wk_shape(t), wk_rank(t), v, dt, dev), NULL, rg);
}
static PyObject *f_zeros_like(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return like("zeros_like", 0.0, false, a, n, k);
}
static PyObject *f_ones_like(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return like("ones_like", 1.0, false, a, n, k);
}
static PyObject *f_full_like(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) {
    (void)m;
    return like("full_like", 0.0, true, a, n, k);
}

/* arange(end) / arange(start, end, step=1): numpy's meaning; ints give i64 */
static PyObject *f_arange(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"start", "end", "step", "dtype", "device", "requires_grad", NULL};
    PyObject *a[6];
    double start, end, step;
    if (wkpy_parse("arange", args, nargs, kw, names, 1, a) < 0 || wkpy_double(a[0], 0, &start) < 0 ||
        wkpy_double(a[1], 0, &end) < 0 || wkpy_double(a[2], 1, &step) < 0)
        return NULL;
    if (!a[1] || a[1] == Py_None) {
        end = start;
        start = 0;
    }
    bool all_int = PyLong_Check(a[0]) && (!a[1] || a[1] == Py_None || PyLong_Check(a[1])) &&
                   (!a[2] || a[2] == Py_None || PyLong_Check(a[2]));
    wk_dtype dt;
    wk_device *dev;
    bool rg;
    if (wkpy_dtype_from(a[3], all_int ? WK_I64 : WK_F32, &dt) < 0 || wkpy_device_from(a[4], &dev) < 0 ||
        wkpy_bool(a[5], false, &rg) < 0)
        return NULL;
    return finish(wk_arange(start, end, step, dt, dev), NULL, rg);
}

static PyObject *f_eye(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"n", "dtype", "device", "requires_grad", NULL};
    PyObject *a[4];
    long long n;
    wk_dtype dt;
    wk_device *dev;
    bool rg;
    if (wkpy_parse("eye", args, nargs, kw, names, 1, a) < 0 || wkpy_int(a[0], 0, &n) < 0 ||
        wkpy_dtype_from(a[1], WK_F32, &dt) < 0 || wkpy_device_from(a[2], &dev) < 0 || wkpy_bool(a[3], false, &rg) < 0)
        return NULL;
    return finish(wk_eye(n, dt, dev), NULL, rg);
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef creation_functions[] = {
    {"tensor", FAST(f_tensor),
     "tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor: a new tensor holding a copy of data (nested "
     "lists of numbers, a number, a numpy array or anything with the buffer protocol, a Tensor). Without dtype, "
     "floats give f32 and ints i64 (an array keeps its dtype)."},
    {"as_tensor", FAST(f_as_tensor),
     "as_tensor(data, dtype=None, device=None) -> Tensor: shares data's memory when it can (a Tensor, a numpy array on the "
     "CPU in its own dtype), else copies."},
    {"from_numpy", f_from_numpy, METH_O,
     "from_numpy(array) -> Tensor: a tensor sharing the array's memory (any object with the buffer protocol); the array "
     "stays alive until the last tensor over it is freed. Read-only arrays give read-only tensors."},
    {"zeros", FAST(f_zeros), "zeros(*shape, dtype=f32, device=cpu, requires_grad=False) -> Tensor."},
    {"ones", FAST(f_ones), "ones(*shape, dtype=f32, device=cpu, requires_grad=False) -> Tensor."},
    {"empty", FAST(f_empty), "empty(*shape, dtype=f32, device=cpu) -> Tensor: uninitialised memory."},
    {"rand", FAST(f_rand),
     "rand(*shape, dtype=f32, device=cpu) -> Tensor: uniform in [0, 1) from the device's generator."},
    {"randn", FAST(f_randn),
     "randn(*shape, dtype=f32, device=cpu) -> Tensor: standard normal from the device's generator."},
    {"full", FAST(f_full), "full(shape, fill_value, dtype=None, device=cpu, requires_grad=False) -> Tensor."},
    {"zeros_like", FAST(f_zeros_like),
     "zeros_like(input, dtype=None, device=None) -> Tensor: input's shape (dtype, device)."},
    {"ones_like", FAST(f_ones_like), "ones_like(input, dtype=None, device=None) -> Tensor."},
    {"full_like", FAST(f_full_like), "full_like(input, fill_value, dtype=None, device=None) -> Tensor."},
    {"arange", FAST(f_arange),
     "arange(start, end=None, step=1, dtype=None, device=cpu) -> Tensor: numpy's meaning; all-int arguments give i64, "
     "else f32."},
    {"eye", FAST(f_eye), "eye(n, dtype=f32, device=cpu) -> Tensor: the n x n identity."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_creation = {NULL, NULL, creation_functions, NULL};
