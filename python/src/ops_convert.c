/* Conversions and layout queries from Python, torch's spellings: to(dtype /
 * device / tensor), float() / double() / half() / bfloat16() / long() /
 * int() / short() / byte() / bool(), type_as, cpu() / cuda(), contiguous,
 * clone, and size() / dim() / numel() / element_size() / data_ptr() /
 * is_contiguous() / is_floating_point(), the nbytes and itemsize
 * properties.
 *
 * A conversion that changes nothing returns the tensor itself (torch): t.to
 * ("f32") on an f32 tensor is t, not a copy. The methods float() and int()
 * are separate slots from float(t) / int(t) (nb_float, nb_int): neither
 * shadows the other. */
#include "wkpy.h"
#include "tensor/tensor.h" /* storage->buf for data_ptr */
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
#define NOARGS(f) (PyCFunction)(void (*)(void))(f), METH_NOARGS

/* self converted to dt on dev; self itself when it already is (copy false).
 * Takes nothing; returns a new reference. */
static PyObject *converted(PyObject *self, wk_dtype dt, wk_device *dev, bool copy) {
    wk_tensor *t = wkpy_t(self);
    bool same_dt = wk_tensor_dtype(t) == dt, same_dev = wk_tensor_device(t) == dev;
    if (same_dt && same_dev && !copy) return Py_NewRef(self);
    wk_tensor *a = NULL, *r;
    bool big = wkpy_big(t) || !same_dev;
    if (same_dt && same_dev) {
        WKPY_NOGIL(big, r = wk_copy(t));
        return wkpy_wrap(r);
    }
    const wk_tensor *x = t;
    if (!same_dt) { /* convert where the data is, then move */
        WKPY_NOGIL(big, a = wk_to_dtype(t, dt));
        if (!a) return wkpy_raise();
        x = a;
    }
    if (same_dev) return wkpy_wrap(a);
    WKPY_NOGIL(big, r = wk_to_device(x, dev));
    wk_tensor_free(a);
    return wkpy_wrap(r);
}

/* What a positional argument of to() names: a device (a wick.device, a
 * torch.device, "cpu" / "cuda[:N]"), a tensor (its dtype and device), or
 * else a dtype. */
static bool names_device(PyObject *o) {
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        return s && (!strncmp(s, "cpu", 3) || !strncmp(s, "cuda", 4) || !strncmp(s, "metal", 5));
    }
    const char *tn = Py_TYPE(o)->tp_name;
    return !strcmp(tn, "wick.device") || !strcmp(tn, "torch.device");
}

/* to(dtype) / to(device) / to(device, dtype) / to(other) / to(dtype=, device=), copy=, non_blocking= */
static PyObject *m_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dtype", "device", "non_blocking", "copy", NULL};
    PyObject *a[4];
    if (nargs > 2) return PyErr_Format(PyExc_TypeError, "to() takes at most 2 positional arguments (%zd given)", nargs);
    if (wkpy_parse("to", args + nargs, 0, kw, names, 0, a) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    wk_dtype dt = wk_tensor_dtype(t);
    wk_device *dev = wk_tensor_device(t);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *o = args[i];
        if (wkpy_check(o)) {
            dt = wk_tensor_dtype(wkpy_t(o));
            dev = wk_tensor_device(wkpy_t(o));
        } else if (names_device(o)) {
            if (wkpy_device_from(o, &dev) < 0) return NULL;
        } else if (wkpy_dtype_from(o, dt, &dt) < 0)
            return NULL;
    }
    bool nb, copy;
    if ((a[0] && wkpy_dtype_from(a[0], dt, &dt) < 0) || (a[1] && a[1] != Py_None && wkpy_device_from(a[1], &dev) < 0) ||
        wkpy_bool(a[2], false, &nb) < 0 || wkpy_bool(a[3], false, &copy) < 0)
        return NULL;
    return converted(self, dt, dev, copy);
}

#define TO_DTYPE(n, dt, what)                                                                                  \
    static PyObject *m_##n(PyObject *self, PyObject *unused) {                                                 \
        (void)unused;                                                                                          \
        return converted(self, dt, wk_tensor_device(wkpy_t(self)), false);                                     \
    }
#define DTYPE_METHODS(X)                                                                                       \
    X(float, WK_F32, "f32")                                                                                    \
    X(double, WK_F64, "f64")                                                                                   \
    X(half, WK_F16, "f16")                                                                                     \
    X(bfloat16, WK_BF16, "bf16")                                                                               \
    X(long, WK_I64, "i64")                                                                                     \
    X(int, WK_I32, "i32")                                                                                      \
    X(short, WK_I16, "i16")                                                                                    \
    X(byte, WK_U8, "u8")
DTYPE_METHODS(TO_DTYPE)
#define DTYPE_METHOD_DEFS(n, dt, what)                                                                         \
    {#n, NOARGS(m_##n), #n "()\n\nself as " what " (torch's ." #n "()); self itself when it already is."},

/* torch's .bool(): nonzero -> 1 (wick's bool is u8 0 / 1) */
static PyObject *m_bool(PyObject *self, PyObject *unused) {
    (void)unused;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_cmp_scalar(t, 0.0, WK_NE));
    return wkpy_wrap(r);
}

static PyObject *m_type_as(PyObject *self, PyObject *other) {
    wk_tensor *o = wkpy_tensor_arg(other, "type_as", "other");
    return o ? converted(self, wk_tensor_dtype(o), wk_tensor_device(wkpy_t(self)), false) : NULL;
}

static PyObject *m_cpu(PyObject *self, PyObject *unused) {
    (void)unused;
    return converted(self, wk_tensor_dtype(wkpy_t(self)), wk_cpu(), false);
}

/* cuda(device=None): an index, "cuda:N" or a device; NotCompiledError
 * without the CUDA backend. */
static PyObject *m_cuda(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"device", "non_blocking", NULL};
    PyObject *a[2];
    if (wkpy_parse("cuda", args, nargs, kw, names, 0, a) < 0) return NULL;
    wk_device *dev;
    if (!a[0] || a[0] == Py_None || PyLong_Check(a[0])) {
        long long i;
        if (wkpy_int(a[0], 0, &i) < 0) return NULL;
        if (!(dev = wk_cuda((int)i))) return wkpy_raise();
    } else if (wkpy_device_from(a[0], &dev) < 0)
        return NULL;
    if (wk_device_kind_of(dev) != WK_DEVICE_CUDA)
        return PyErr_Format(PyExc_ValueError, "cuda(): %R is not a CUDA device", a[0]);
    return converted(self, wk_tensor_dtype(wkpy_t(self)), dev, false);
}

static PyObject *m_contiguous(PyObject *self, PyObject *unused) {
    (void)unused;
    wk_tensor *t = wkpy_t(self), *r;
    if (wk_is_contiguous(t)) return Py_NewRef(self);
    WKPY_NOGIL(wkpy_big(t), r = wk_contiguous(t));
    return wkpy_wrap(r);
}

static PyObject *m_clone(PyObject *self, PyObject *unused) {
    (void)unused;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_copy(t));
    return wkpy_wrap(r);
}

static PyObject *m_is_contiguous(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(wk_is_contiguous(wkpy_t(self)));
}
static PyObject *m_is_floating_point(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(wk_dtype_is_float(wk_tensor_dtype(wkpy_t(self))));
}
static PyObject *m_numel(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong((long long)wk_numel(wkpy_t(self)));
}
static PyObject *m_dim(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(wk_rank(wkpy_t(self)));
}
static PyObject *m_element_size(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromSize_t(wk_dtype_size(wk_tensor_dtype(wkpy_t(self)))); /* 0 for block dtypes */
}

/* size() -> the shape tuple; size(dim) -> one size (negative dims count
 * from the end; out of range is wick.IndexError) */
static PyObject *m_size(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dim", NULL};
    PyObject *a[1];
    if (wkpy_parse("size", args, nargs, kw, names, 0, a) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    int r = wk_rank(t);
    if (!a[0] || a[0] == Py_None) {
        PyObject *tu = PyTuple_New(r);
        for (int i = 0; tu && i < r; i++) PyTuple_SET_ITEM(tu, i, PyLong_FromLongLong((long long)wk_shape(t)[i]));
        return tu;
    }
    if (!PyIndex_Check(a[0])) return PyErr_Format(PyExc_TypeError, "size(): dim must be an int, got %s", Py_TYPE(a[0])->tp_name);
    long long d;
    if (wkpy_int(a[0], 0, &d) < 0) return NULL;
    if (d < -r || d >= r) {
        PyErr_Format(wkpy_error_class(WK_ERR_INDEX), "size: dim %lld out of range for rank %d", d, r);
        return NULL;
    }
    return PyLong_FromLongLong((long long)wk_dim(t, (int)d));
}

/* The address of the first element (CPU: a host pointer; a GPU tensor: the
 * device pointer, as torch). */
static PyObject *m_data_ptr(PyObject *self, PyObject *unused) {
    (void)unused;
    wk_tensor *t = wkpy_t(self);
    const wk_dtype_info *di = wk_dtype_info_of(t->dtype);
    int64_t off_bytes = t->layout.offset / (int64_t)di->block_elems * (int64_t)di->block_bytes;
    return PyLong_FromVoidPtr((char *)t->storage->buf + off_bytes);
}

static PyObject *get_nbytes(wkpy_tensor *s, void *c) {
    (void)c;
    const wk_dtype_info *di = wk_dtype_info_of(wk_tensor_dtype(s->t));
    return PyLong_FromLongLong((long long)(wk_numel(s->t) / (int64_t)di->block_elems * (int64_t)di->block_bytes));
}
static PyObject *get_itemsize(wkpy_tensor *s, void *c) {
    (void)c;
    return PyLong_FromSize_t(wk_dtype_size(wk_tensor_dtype(s->t)));
}

/* module forms of the two torch has as functions */
static PyObject *f_numel(PyObject *m, PyObject *x) {
    (void)m;
    return wkpy_tensor_arg(x, "numel", "input") ? m_numel(x, NULL) : NULL;
}
static PyObject *f_clone(PyObject *m, PyObject *x) {
    (void)m;
    return wkpy_tensor_arg(x, "clone", "input") ? m_clone(x, NULL) : NULL;
}

static PyMethodDef convert_methods[] = {
    {"to", FAST(m_to),
     "to(dtype=None, device=None, non_blocking=False, copy=False)\n\nself converted to dtype and/or moved to "
     "device. Positional forms as torch: to(\"f16\"), to(wick.f16), to(\"cuda\"), to(device, dtype), "
     "to(other_tensor). self itself when nothing changes (unless copy)."},
    DTYPE_METHODS(DTYPE_METHOD_DEFS)
    {"bool", NOARGS(m_bool), "bool()\n\nself != 0 as u8 0 / 1 (wick's bool dtype)."},
    {"type_as", (PyCFunction)(void (*)(void))m_type_as, METH_O, "type_as(other, /)\n\nself in other's dtype."},
    {"cpu", NOARGS(m_cpu), "cpu()\n\nself on the CPU (self itself when it is)."},
    {"cuda", FAST(m_cuda),
     "cuda(device=None, non_blocking=False)\n\nself on a CUDA device (an index, default 0, or 'cuda:N'); "
     "wick.NotCompiledError without the CUDA backend."},
    {"contiguous", NOARGS(m_contiguous), "contiguous()\n\nself when row-major contiguous, else a contiguous copy."},
    {"clone", NOARGS(m_clone), "clone()\n\nA contiguous copy in new memory (wk_copy)."},
    {"is_contiguous", NOARGS(m_is_contiguous), "is_contiguous()\n\nRow-major contiguous (size-1 dims ignored)."},
    {"is_floating_point", NOARGS(m_is_floating_point), "is_floating_point()\n\nThe dtype is a float dtype."},
    {"numel", NOARGS(m_numel), "numel()\n\nThe number of elements."},
    {"nelement", NOARGS(m_numel), "nelement()\n\nThe same as numel."},
    {"dim", NOARGS(m_dim), "dim()\n\nThe rank (ndim)."},
    {"ndimension", NOARGS(m_dim), "ndimension()\n\nThe same as dim."},
    {"element_size", NOARGS(m_element_size), "element_size()\n\nBytes per element (0 for block dtypes)."},
    {"size", FAST(m_size), "size(dim=None)\n\nThe shape as a tuple, or the size of one dim."},
    {"data_ptr", NOARGS(m_data_ptr),
     "data_ptr()\n\nThe address of the first element (host memory on the CPU, the device pointer on a GPU)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef convert_getset[] = {
    {"nbytes", (getter)get_nbytes, NULL, "Bytes the elements take (numel times the element size; blocks for "
                                         "block dtypes).", NULL},
    {"itemsize", (getter)get_itemsize, NULL, "Bytes per element (0 for block dtypes).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef convert_functions[] = {
    {"numel", (PyCFunction)(void (*)(void))f_numel, METH_O, "numel(input)\n\nThe number of elements."},
    {"clone", (PyCFunction)(void (*)(void))f_clone, METH_O, "clone(input)\n\nA contiguous copy."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_convert = {convert_methods, convert_getset, convert_functions, NULL};
