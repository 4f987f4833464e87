/* wick.Tensor's own protocols, the roof of the binding: its properties, the
 * buffer protocol and __array_interface__, the operators, len / [] and
 * comparisons, repr, tolist / item / numpy (the part tensor_core). module.c
 * installs the protocols (wkpy_tensor_protocols, parts.h) on the type
 * py_base.c defines, before readying it; the ops are methods contributed by
 * the other parts. Nothing but module.c names this file. */
#include "wkpy.h"
#include "parts.h"
#include "tensor/tensor.h" /* storage->buf: wick has no public data pointer (the rest goes through wick.h) */
#include "base/dtype_cases.h" /* WK__CASE_BLOCK_DTYPES: the switches below name every dtype */

/* ---- properties ---- */

static PyObject *shape_tuple(const int64_t *v, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong((long long)v[i]));
    return t;
}
static PyObject *get_shape(wkpy_tensor *s, void *c) { (void)c; return shape_tuple(wk_shape(s->t), wk_rank(s->t)); }
static PyObject *get_stride(wkpy_tensor *s, void *c) { (void)c; return shape_tuple(wk_strides(s->t), wk_rank(s->t)); }
static PyObject *get_ndim(wkpy_tensor *s, void *c) { (void)c; return PyLong_FromLong(wk_rank(s->t)); }
static PyObject *get_dtype(wkpy_tensor *s, void *c) { (void)c; return wkpy_dtype_obj(wk_tensor_dtype(s->t)); }
static PyObject *get_device(wkpy_tensor *s, void *c) { (void)c; return wkpy_device_obj(wk_tensor_device(s->t)); }
static PyObject *get_is_cuda(wkpy_tensor *s, void *c) {
    (void)c;
    return PyBool_FromLong(wk_device_kind_of(wk_tensor_device(s->t)) == WK_DEVICE_CUDA);
}
/* torch: every tensor that is not the result of a recorded op is a leaf */
static PyObject *get_is_leaf(wkpy_tensor *s, void *c) {
    (void)c;
    return PyBool_FromLong(!wk_is_tracked(s->t) || wk_is_leaf(s->t));
}
static PyObject *get_T(wkpy_tensor *s, void *c) {
    (void)c;
    int r = wk_rank(s->t), dims[WK_MAX_RANK];
    for (int i = 0; i < r; i++) dims[i] = r - 1 - i;
    return wkpy_wrap(wk_permute(s->t, dims, r));
}
static PyObject *get_mT(wkpy_tensor *s, void *c) { (void)c; return wkpy_wrap(wk_t(s->t)); }
static PyObject *get_id(wkpy_tensor *s, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong(wk_tensor_id(s->t));
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
    /* numpy has no bf16 / f8 dtype and no block dtypes */
    case WK_BF16: case WK_F8E4M3: WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: return NULL;
    }
    return NULL;
}

static PyObject *get_array_interface(wkpy_tensor *s, void *c) {
    (void)c;
    wk_tensor *t = s->t;
    wk_dtype dt = wk_tensor_dtype(t);
    const char *ts = typestr(dt);
    if (!ts || wk_tensor_device(t) != wk_cpu()) {
        PyErr_Format(PyExc_TypeError, "__array_interface__: a %s tensor on %s has no numpy view (to_dtype / to_device first)",
                     wk_dtype_name(dt), wk_device_name(wk_tensor_device(t)));
        return NULL;
    }
    size_t es = wk_dtype_size(dt);
    int r = wk_rank(t);
    const int64_t *stride = wk_strides(t);
    PyObject *strides = PyTuple_New(r);
    for (int i = 0; strides && i < r; i++)
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong((long long)(stride[i] * (int64_t)es)));
    char *data = (char *)t->storage->buf + wk_offset(t) * (int64_t)es;
    return Py_BuildValue("{s:N,s:s,s:(N,O),s:N,s:i}", "shape", shape_tuple(wk_shape(t), r), "typestr", ts, "data",
                         PyLong_FromVoidPtr(data), wk_is_read_only(t) ? Py_True : Py_False, "strides", strides,
                         "version", 3);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)get_shape, NULL, "The dims, a tuple.", NULL},
    {"strides", (getter)get_stride, NULL, "Strides in elements (0 for broadcast dims), a tuple.", NULL},
    {"ndim", (getter)get_ndim, NULL, "Rank.", NULL},
    {"dtype", (getter)get_dtype, NULL, "The dtype (a wick.dtype).", NULL},
    {"device", (getter)get_device, NULL, "The device (a wick.device).", NULL},
    {"is_cuda", (getter)get_is_cuda, NULL, "On a CUDA device.", NULL},
    {"requires_grad", (getter)get_requires_grad, (setter)set_requires_grad,
     "Tracked by autograd (a leaf that requires grad, or the result of a recorded op). Setting it on a leaf "
     "starts or stops tracking.", NULL},
    {"is_leaf", (getter)get_is_leaf, NULL, "Not the result of a recorded op.", NULL},
    {"T", (getter)get_T, NULL, "Every dim reversed (a view).", NULL},
    {"mT", (getter)get_mT, NULL, "The last two dims swapped (a view).", NULL},
    {"_id", (getter)get_id, NULL, "wick's unique id of the tensor object.", NULL},
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
    /* no struct format character for bf16 / f8 or block dtypes */
    case WK_BF16: case WK_F8E4M3: WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: return NULL;
    }
    return NULL;
}

static int tensor_getbuffer(wkpy_tensor *self, Py_buffer *view, int flags) {
    wk_tensor *t = self->t;
    wk_dtype dt = wk_tensor_dtype(t);
    const char *fmt = buffer_format(dt);
    if (!fmt || wk_tensor_device(t) != wk_cpu()) {
        PyErr_Format(PyExc_BufferError, "a %s tensor on %s has no buffer view", wk_dtype_name(dt),
                     wk_device_name(wk_tensor_device(t)));
        view->obj = NULL;
        return -1;
    }
    bool read_only = wk_is_read_only(t);
    if ((flags & PyBUF_WRITABLE) && read_only) {
        PyErr_SetString(PyExc_BufferError, "the tensor's memory is read-only");
        view->obj = NULL;
        return -1;
    }
    int r = wk_rank(t);
    const int64_t *shape = wk_shape(t), *stride = wk_strides(t);
    Py_ssize_t es = (Py_ssize_t)wk_dtype_size(dt);
    /* shape and strides live after the Py_ssize_t array the view owns */
    Py_ssize_t *arr = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * r + 1));
    if (!arr) {
        PyErr_NoMemory();
        view->obj = NULL;
        return -1;
    }
    for (int i = 0; i < r; i++) {
        arr[i] = (Py_ssize_t)shape[i];
        arr[r + i] = (Py_ssize_t)stride[i] * es;
    }
    view->buf = (char *)t->storage->buf + wk_offset(t) * es;
    view->obj = Py_NewRef((PyObject *)self);
    view->len = (Py_ssize_t)wk_numel(t) * es;
    view->readonly = read_only;
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

static PyObject *binop(PyObject *a, PyObject *b, wk_binary_op op, bool matmul) {
    const wk_tensor *like = wkpy_check(a) ? wkpy_t(a) : wkpy_check(b) ? wkpy_t(b) : NULL;
    if (!like) Py_RETURN_NOTIMPLEMENTED;
    if (!matmul && Py_IS_TYPE(a, &wkpy_tensor_type) && Py_IS_TYPE(b, &wkpy_tensor_type)) {
        /* two tensors: straight to wick (the common, tiny-op-sensitive case) */
        wk_tensor *r;
        WKPY_NOGIL(wkpy_big(wkpy_t(a)) || wkpy_big(wkpy_t(b)), r = wk_binary(wkpy_t(a), wkpy_t(b), op));
        return wkpy_wrap(r);
    }
    if (!matmul) { /* the methods' rules: scalar forms, torch's int/float promotion */
        PyObject *r = wkpy_elementwise(a, b, op, false);
        if (!r && PyErr_ExceptionMatches(PyExc_TypeError) &&
            !PyErr_ExceptionMatches(wkpy_error_class(WK_ERR_DTYPE))) {
            PyErr_Clear(); /* an operand of a type we do not know: let Python try the other side */
            Py_RETURN_NOTIMPLEMENTED;
        }
        return r;
    }
    bool ma, mb;
    wk_tensor *x = wkpy_operand(a, like, &ma);
    if (!x) goto not_ours;
    wk_tensor *y = wkpy_operand(b, like, &mb);
    if (!y) {
        if (ma) wk_tensor_free(x);
        goto not_ours;
    }
    wk_tensor *r;
    bool big = wkpy_big(x) || wkpy_big(y) || matmul;
    WKPY_NOGIL(big, r = matmul ? wk_broadcast_matmul(x, y) : wk_binary(x, y, op));
    if (ma) wk_tensor_free(x);
    if (mb) wk_tensor_free(y);
    return wkpy_wrap(r);
not_ours: /* an operand of a type we do not know: let Python try the other side */
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return NULL;
}

/* a op= b: computes a op b (broadcasting), then writes it into a's memory;
 * the result must keep a's shape and dtype (torch's rule). */
static PyObject *inplace(PyObject *a, PyObject *b, wk_binary_op op, bool matmul) {
    PyObject *r = binop(a, b, op, matmul);
    if (!r || r == Py_NotImplemented) return r;
    wk_tensor *dst = wkpy_t(a), *src = wkpy_t(r);
    wk_status st;
    WKPY_NOGIL(wkpy_big(dst), st = wk_copy_(dst, src));
    Py_DECREF(r);
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(a);
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
static PyObject *nb_pos(PyObject *a) { return Py_NewRef(a); }
static PyObject *nb_abs(PyObject *a) { return wkpy_wrap(wk_abs(wkpy_t(a))); }
static PyObject *ni_add(PyObject *a, PyObject *b) { return inplace(a, b, WK_ADD, false); }
static PyObject *ni_sub(PyObject *a, PyObject *b) { return inplace(a, b, WK_SUB, false); }
static PyObject *ni_mul(PyObject *a, PyObject *b) { return inplace(a, b, WK_MUL, false); }
static PyObject *ni_div(PyObject *a, PyObject *b) { return inplace(a, b, WK_DIV, false); }
static PyObject *ni_matmul(PyObject *a, PyObject *b) { return inplace(a, b, WK_ADD, true); }
static PyObject *ni_pow(PyObject *a, PyObject *b, PyObject *m) {
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return inplace(a, b, WK_POW, false);
}

/* float(t), int(t), bool(t), operator.index(t): one-element tensors only */
static int one_value(PyObject *a, const char *what, double *v) {
    if (wk_numel(wkpy_t(a)) != 1) {
        PyErr_Format(PyExc_ValueError, "%s of a tensor with %lld elements is ambiguous (one element only)", what,
                     (long long)wk_numel(wkpy_t(a)));
        return -1;
    }
    if (wk_item(wkpy_t(a), v) != WK_OK) return wkpy_raise_int();
    return 0;
}
static PyObject *nb_float(PyObject *a) {
    double v;
    return one_value(a, "float()", &v) < 0 ? NULL : PyFloat_FromDouble(v);
}
static PyObject *nb_int(PyObject *a) {
    double v;
    if (wk_dtype_is_int(wk_tensor_dtype(wkpy_t(a))) && wk_numel(wkpy_t(a)) == 1) return wkpy_item(wkpy_t(a));
    if (one_value(a, "int()", &v) < 0) return NULL;
    return wk_dtype_is_float(wk_tensor_dtype(wkpy_t(a))) ? PyLong_FromDouble(v) : PyLong_FromLongLong((long long)v);
}
static PyObject *nb_index(PyObject *a) {
    if (!wk_dtype_is_int(wk_tensor_dtype(wkpy_t(a))))
        return PyErr_Format(PyExc_TypeError, "only integer tensors of one element can be used as an index"), NULL;
    return nb_int(a);
}
static int nb_bool(PyObject *a) {
    double v;
    return one_value(a, "bool()", &v) < 0 ? -1 : v != 0;
}

static PyNumberMethods tensor_as_number = {
    .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul, .nb_true_divide = nb_div,
    .nb_power = nb_pow, .nb_matrix_multiply = nb_matmul, .nb_negative = nb_neg, .nb_positive = nb_pos,
    .nb_absolute = nb_abs, .nb_bool = nb_bool, .nb_int = nb_int, .nb_float = nb_float, .nb_index = nb_index,
    .nb_inplace_add = ni_add, .nb_inplace_subtract = ni_sub, .nb_inplace_multiply = ni_mul,
    .nb_inplace_true_divide = ni_div, .nb_inplace_power = ni_pow, .nb_inplace_matrix_multiply = ni_matmul,
};

static Py_ssize_t mp_length(PyObject *a) {
    if (wk_rank(wkpy_t(a)) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)wk_dim(wkpy_t(a), 0);
}
static PyMappingMethods tensor_as_mapping = {mp_length, wkpy_getitem, wkpy_setitem};

static PyObject *richcompare(PyObject *a, PyObject *b, int op) {
    static const wk_cmp_op map[] = {[Py_LT] = WK_LT, [Py_LE] = WK_LE, [Py_EQ] = WK_EQ,
                                    [Py_NE] = WK_NE, [Py_GT] = WK_GT, [Py_GE] = WK_GE};
    if (!wkpy_check(a)) Py_RETURN_NOTIMPLEMENTED;
    /* the methods' rules (an int tensor against a float compares exactly) */
    PyObject *r = wkpy_elementwise(a, b, map[op], true);
    if (!r && PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(wkpy_error_class(WK_ERR_DTYPE))) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    return r;
}

/* ---- methods ---- */

static PyObject *m_tolist(wkpy_tensor *self, PyObject *unused) {
    (void)unused;
    return wkpy_tolist(self->t);
}

static PyObject *m_item(wkpy_tensor *self, PyObject *unused) {
    (void)unused;
    return wkpy_item(self->t);
}

static PyObject *m_numpy(PyObject *self, PyObject *unused) {
    (void)unused;
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return NULL;
    PyObject *r = PyObject_CallMethod(np, "asarray", "O", self); /* __array_interface__: no copy */
    Py_DECREF(np);
    return r;
}

static PyMethodDef tensor_methods[] = {
    {"tolist", (PyCFunction)m_tolist, METH_NOARGS,
     "tolist() -> list: the values as nested lists (floats for float dtypes, else ints)."},
    {"item", (PyCFunction)m_item, METH_NOARGS,
     "item() -> float | int: the value of a one-element tensor (a float for float dtypes, else an int)."},
    {"numpy", (PyCFunction)m_numpy, METH_NOARGS,
     "numpy() -> Any: a numpy array sharing the tensor's memory (CPU tensors of numpy's dtypes; no copy)."},
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

const wkpy_part wkpy_part_tensor_core = {tensor_methods, tensor_getset, NULL, NULL};

void wkpy_tensor_protocols(PyTypeObject *tp) {
    tp->tp_repr = (reprfunc)tensor_repr;
    tp->tp_as_number = &tensor_as_number;
    tp->tp_as_buffer = &tensor_as_buffer;
    tp->tp_richcompare = richcompare;
    tp->tp_as_mapping = &tensor_as_mapping;
}
