/* wick.Tensor: a Python object owning one wk_tensor reference. Ops release
 * the GIL while wick computes; every failure is a wick.* exception. */
#include "wkpy.h"
#include "core/tensor.h" /* storage->buf for the buffer protocol */

PyObject *wkpy_wrap(wk_tensor *t) {
    if (!t) return wkpy_raise();
    wkpy_tensor *o = PyObject_GC_New(wkpy_tensor, &wkpy_tensor_type);
    if (!o) {
        wk_tensor_free(t);
        return NULL;
    }
    o->t = wk_keep(t); /* Python's reference counting owns it now, not a wick scope */
    o->weakrefs = NULL;
    PyObject_GC_Track((PyObject *)o);
    return (PyObject *)o;
}

static void tensor_dealloc(wkpy_tensor *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    wk_tensor *t = self->t;
    self->t = NULL;
    /* the last reference to numpy-backed memory calls back into Python
     * (release_buffer takes the GIL itself): keep the GIL here */
    wk_tensor_free(t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tensor_traverse(wkpy_tensor *self, visitproc visit, void *arg) {
    (void)self;
    (void)visit;
    (void)arg;
    return 0;
}

/* ---- properties ---- */

static PyObject *shape_tuple(const int64_t *v, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong((long long)v[i]));
    return t;
}
static PyObject *get_shape(wkpy_tensor *s, void *c) { (void)c; return shape_tuple(wk_shape(s->t), wk_rank(s->t)); }
static PyObject *get_stride(wkpy_tensor *s, void *c) { (void)c; return shape_tuple(wk_strides(s->t), wk_rank(s->t)); }
static PyObject *get_ndim(wkpy_tensor *s, void *c) { (void)c; return PyLong_FromLong(wk_rank(s->t)); }
static PyObject *get_dtype(wkpy_tensor *s, void *c) {
    (void)c;
    return PyUnicode_FromString(wk_dtype_name(wk_tensor_dtype(s->t)));
}
static PyObject *get_device(wkpy_tensor *s, void *c) {
    (void)c;
    return PyUnicode_FromString(wk_device_name(wk_tensor_device(s->t)));
}
static PyObject *get_requires_grad(wkpy_tensor *s, void *c) { (void)c; return PyBool_FromLong(wk_is_tracked(s->t)); }
static int set_requires_grad(wkpy_tensor *s, PyObject *v, void *c) {
    (void)c;
    int on = PyObject_IsTrue(v);
    if (on < 0) return -1;
    if (wk_requires_grad(s->t, on) != WK_OK) {
        wkpy_raise();
        return -1;
    }
    return 0;
}

/* __array_interface__ (numpy's zero-copy view of CPU memory). */
static const char *typestr(wk_dtype dt) {
    switch (dt) {
    case WK_F32: return "<f4";
    case WK_F64: return "<f8";
    case WK_F16: return "<f2";
    case WK_U8: return "|u1";
    case WK_U32: return "<u4";
    case WK_I16: return "<i2";
    case WK_I32: return "<i4";
    case WK_I64: return "<i8";
    default: return NULL;
    }
}

static PyObject *get_array_interface(wkpy_tensor *s, void *c) {
    (void)c;
    wk_tensor *t = s->t;
    const char *ts = typestr(t->dtype);
    if (!ts || wk_tensor_device(t) != wk_cpu()) {
        PyErr_Format(PyExc_TypeError, "__array_interface__: a %s tensor on %s has no numpy view (to_dtype / to_device first)",
                     wk_dtype_name(t->dtype), wk_device_name(wk_tensor_device(t)));
        return NULL;
    }
    size_t es = wk_dtype_size(t->dtype);
    int r = t->layout.rank;
    PyObject *strides = PyTuple_New(r);
    for (int i = 0; strides && i < r; i++)
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong((long long)(t->layout.stride[i] * (int64_t)es)));
    char *data = (char *)t->storage->buf + t->layout.offset * (int64_t)es;
    return Py_BuildValue("{s:N,s:s,s:(N,O),s:N,s:i}", "shape", shape_tuple(t->layout.shape, r), "typestr", ts, "data",
                         PyLong_FromVoidPtr(data), t->storage->read_only ? Py_True : Py_False, "strides", strides,
                         "version", 3);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)get_shape, NULL, "The dims, a tuple.", NULL},
    {"stride", (getter)get_stride, NULL, "Strides in elements (0 for broadcast dims).", NULL},
    {"ndim", (getter)get_ndim, NULL, "Rank.", NULL},
    {"dtype", (getter)get_dtype, NULL, "The dtype's name ('f32', ...).", NULL},
    {"device", (getter)get_device, NULL, "The device's name.", NULL},
    {"requires_grad", (getter)get_requires_grad, (setter)set_requires_grad, "Tracked by autograd.", NULL},
    {"__array_interface__", (getter)get_array_interface, NULL, "numpy's zero-copy view (CPU tensors).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- the buffer protocol: memoryview / numpy see the memory itself ---- */

static const char *buffer_format(wk_dtype dt) {
    switch (dt) {
    case WK_F32: return "f";
    case WK_F64: return "d";
    case WK_F16: return "e";
    case WK_U8: return "B";
    case WK_U32: return "I";
    case WK_I16: return "h";
    case WK_I32: return "i";
    case WK_I64: return "q";
    default: return NULL;
    }
}

static int tensor_getbuffer(wkpy_tensor *self, Py_buffer *view, int flags) {
    wk_tensor *t = self->t;
    const char *fmt = buffer_format(t->dtype);
    if (!fmt || wk_tensor_device(t) != wk_cpu()) {
        PyErr_Format(PyExc_BufferError, "a %s tensor on %s has no buffer view", wk_dtype_name(t->dtype),
                     wk_device_name(wk_tensor_device(t)));
        view->obj = NULL;
        return -1;
    }
    if ((flags & PyBUF_WRITABLE) && t->storage->read_only) {
        PyErr_SetString(PyExc_BufferError, "the tensor's memory is read-only");
        view->obj = NULL;
        return -1;
    }
    int r = t->layout.rank;
    Py_ssize_t es = (Py_ssize_t)wk_dtype_size(t->dtype);
    /* shape and strides live after the Py_ssize_t array the view owns */
    Py_ssize_t *arr = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * r + 1));
    if (!arr) {
        PyErr_NoMemory();
        view->obj = NULL;
        return -1;
    }
    for (int i = 0; i < r; i++) {
        arr[i] = (Py_ssize_t)t->layout.shape[i];
        arr[r + i] = (Py_ssize_t)t->layout.stride[i] * es;
    }
    view->buf = (char *)t->storage->buf + t->layout.offset * es;
    view->obj = Py_NewRef((PyObject *)self);
    view->len = (Py_ssize_t)wk_numel(t) * es;
    view->readonly = t->storage->read_only;
    view->itemsize = es;
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = r;
    view->shape = arr;
    view->strides = arr + r;
    view->suboffsets = NULL;
    view->internal = arr;
    return 0;
}

static void tensor_releasebuffer(wkpy_tensor *self, Py_buffer *view) {
    (void)self;
    PyMem_Free(view->internal);
}

static PyBufferProcs tensor_as_buffer = {(getbufferproc)tensor_getbuffer, (releasebufferproc)tensor_releasebuffer};

/* ---- operators ---- */

/* A tensor operand: a Tensor, or a Python number as a rank-0 tensor like
 * the other side (dtype and device). NULL with an exception otherwise. */
static wk_tensor *operand(PyObject *o, const wk_tensor *like, bool *made) {
    *made = false;
    if (wkpy_check(o)) return wkpy_t(o);
    if (PyFloat_Check(o) || PyLong_Check(o)) {
        double v = PyFloat_AsDouble(o);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        wk_tensor *s = wk_full(NULL, 0, v, wk_tensor_dtype(like), wk_tensor_device(like));
        if (!s) {
            wkpy_raise();
            return NULL;
        }
        *made = true;
        return s;
    }
    return NULL;
}

static PyObject *binop(PyObject *a, PyObject *b, wk_binary_op op, bool matmul) {
    const wk_tensor *like = wkpy_check(a) ? wkpy_t(a) : wkpy_check(b) ? wkpy_t(b) : NULL;
    if (!like) Py_RETURN_NOTIMPLEMENTED;
    bool ma, mb;
    wk_tensor *x = operand(a, like, &ma);
    if (!x) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    wk_tensor *y = operand(b, like, &mb);
    if (!y) {
        if (ma) wk_tensor_free(x);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS r = matmul ? wk_broadcast_matmul(x, y) : wk_binary(x, y, op);
    Py_END_ALLOW_THREADS
    if (ma) wk_tensor_free(x);
    if (mb) wk_tensor_free(y);
    return wkpy_wrap(r);
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binop(a, b, WK_ADD, false); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binop(a, b, WK_SUB, false); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binop(a, b, WK_MUL, false); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binop(a, b, WK_DIV, false); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return binop(a, b, WK_POW, false);
}
static PyObject *nb_matmul(PyObject *a, PyObject *b) { return binop(a, b, WK_ADD, true); }
static PyObject *nb_neg(PyObject *a) { return wkpy_wrap(wk_neg(wkpy_t(a))); }

static PyNumberMethods tensor_as_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul, .nb_true_divide = nb_div,
    .nb_power = nb_pow, .nb_matrix_multiply = nb_matmul, .nb_negative = nb_neg,
};

static PyObject *richcompare(PyObject *a, PyObject *b, int op) {
    static const wk_cmp_op map[] = {[Py_LT] = WK_LT, [Py_LE] = WK_LE, [Py_EQ] = WK_EQ,
                                    [Py_NE] = WK_NE, [Py_GT] = WK_GT, [Py_GE] = WK_GE};
    if (!wkpy_check(a)) Py_RETURN_NOTIMPLEMENTED;
    bool mb;
    wk_tensor *y = operand(b, wkpy_t(a), &mb);
    if (!y) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    wk_tensor *r = wk_cmp(wkpy_t(a), y, map[op]);
    if (mb) wk_tensor_free(y);
    return wkpy_wrap(r);
}

/* ---- methods ---- */

static PyObject *m_tolist(wkpy_tensor *self, PyObject *unused) {
    (void)unused;
    return wkpy_tolist(self->t);
}

static PyObject *m_item(wkpy_tensor *self, PyObject *unused) {
    (void)unused;
    double v;
    if (wk_item(self->t, &v) != WK_OK) return wkpy_raise();
    return wk_dtype_is_float(wk_tensor_dtype(self->t)) ? PyFloat_FromDouble(v) : PyLong_FromLongLong((long long)v);
}

static PyObject *m_sum(wkpy_tensor *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dim", "keepdim", NULL};
    PyObject *dim = Py_None;
    int keepdim = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", names, &dim, &keepdim)) return NULL;
    if (dim == Py_None) return wkpy_wrap(wk_sum_all(self->t));
    int d = (int)PyLong_AsLong(dim);
    if (d == -1 && PyErr_Occurred()) return NULL;
    return wkpy_wrap(wk_sum(self->t, &d, 1, keepdim));
}

static PyMethodDef tensor_methods[] = {
    {"tolist", (PyCFunction)m_tolist, METH_NOARGS, "The values as nested lists."},
    {"item", (PyCFunction)m_item, METH_NOARGS, "The value of a one-element tensor."},
    {"sum", (PyCFunction)(void (*)(void))m_sum, METH_VARARGS | METH_KEYWORDS, "sum(dim=None, keepdim=False)."},
    {NULL, NULL, 0, NULL},
};

static PyObject *tensor_repr(wkpy_tensor *self) {
    char d[300];
    wk_tensor_describe(self->t, d, sizeof d);
    PyObject *vals = wk_numel(self->t) <= 64 ? wkpy_tolist(self->t) : NULL;
    if (!vals) {
        PyErr_Clear();
        return PyUnicode_FromFormat("wick.Tensor(%s)", d);
    }
    PyObject *r = PyUnicode_FromFormat("wick.Tensor(%R, %s)", vals, d);
    Py_DECREF(vals);
    return r;
}

PyTypeObject wkpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Tensor",
    .tp_basicsize = sizeof(wkpy_tensor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A wick tensor: a strided view over reference-counted storage on one device.",
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_traverse = (traverseproc)tensor_traverse,
    .tp_repr = (reprfunc)tensor_repr,
    .tp_as_number = &tensor_as_number,
    .tp_as_buffer = &tensor_as_buffer,
    .tp_richcompare = richcompare,
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_weaklistoffset = offsetof(wkpy_tensor, weakrefs),
};

int wkpy_tensor_init_type(PyObject *m) {
    if (PyType_Ready(&wkpy_tensor_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Tensor", (PyObject *)&wkpy_tensor_type);
}
