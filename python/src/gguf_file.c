/* GGUF files from Python: wick.GGUF (the memory-mapped reader: metadata as
 * Python values, tensors as zero-copy views, block-quantized ones in their
 * block dtype) and wick.save_gguf over wick's writer.
 *
 * Metadata values become Python values by type: integers int, f32 / f64
 * float, bool bool, strings str (UTF-8; bytes that are not UTF-8 come back
 * as surrogate escapes, recoverable with .encode("utf-8",
 * "surrogateescape")), arrays lists. GGUF.types names each value's type
 * ("u32", "string", "array[i32]"), which save_gguf accepts back as
 * (value, type) pairs, so metadata round-trips with its types. */
#include "wkpy.h"
#include "wick/gguf.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    wk_gguf *g;     /* NULL once closed */
    PyObject *meta; /* the metadata dict, built on first use */
} gguf_obj;

static PyTypeObject gguf_type;

const wk_gguf *wkpy_gguf_of(PyObject *o) {
    if (!PyObject_TypeCheck(o, &gguf_type)) return NULL;
    return ((gguf_obj *)o)->g;
}

static int g_live(gguf_obj *self) {
    if (self->g) return 0;
    PyErr_SetString(PyExc_ValueError, "the GGUF file is closed");
    return -1;
}

static int gguf_init(gguf_obj *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", NULL};
    PyObject *path, *b;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:GGUF", names, &path) || wkpy_path(path, "GGUF", &b) < 0) return -1;
    wk_gguf *g;
    Py_BEGIN_ALLOW_THREADS g = wk_gguf_open(PyBytes_AS_STRING(b));
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    if (!g) return wkpy_raise_int();
    wk_gguf_close(self->g);
    Py_CLEAR(self->meta);
    self->g = g;
    return 0;
}

static void gguf_dealloc(gguf_obj *self) {
    wk_gguf_close(self->g);
    Py_XDECREF(self->meta);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- values ---- */

static PyObject *str_value(const char *s, uint64_t len) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "surrogateescape");
}

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        if ((call) != WK_OK) return wkpy_raise();                                                              \
    } while (0)

static PyObject *scalar_value(const wk_gguf *g, int64_t i, wk_gguf_type t) {
    switch (t) {
    case WK_GGUF_U8: { uint8_t v; CHECK(wk_gguf_get_u8(g, i, &v)); return PyLong_FromUnsignedLong(v); }
    case WK_GGUF_I8: { int8_t v; CHECK(wk_gguf_get_i8(g, i, &v)); return PyLong_FromLong(v); }
    case WK_GGUF_U16: { uint16_t v; CHECK(wk_gguf_get_u16(g, i, &v)); return PyLong_FromUnsignedLong(v); }
    case WK_GGUF_I16: { int16_t v; CHECK(wk_gguf_get_i16(g, i, &v)); return PyLong_FromLong(v); }
    case WK_GGUF_U32: { uint32_t v; CHECK(wk_gguf_get_u32(g, i, &v)); return PyLong_FromUnsignedLong(v); }
    case WK_GGUF_I32: { int32_t v; CHECK(wk_gguf_get_i32(g, i, &v)); return PyLong_FromLong(v); }
    case WK_GGUF_F32: { float v; CHECK(wk_gguf_get_f32(g, i, &v)); return PyFloat_FromDouble(v); }
    case WK_GGUF_BOOL: { bool v; CHECK(wk_gguf_get_bool(g, i, &v)); return PyBool_FromLong(v); }
    case WK_GGUF_U64: { uint64_t v; CHECK(wk_gguf_get_u64(g, i, &v)); return PyLong_FromUnsignedLongLong(v); }
    case WK_GGUF_I64: { int64_t v; CHECK(wk_gguf_get_i64(g, i, &v)); return PyLong_FromLongLong(v); }
    case WK_GGUF_F64: { double v; CHECK(wk_gguf_get_f64(g, i, &v)); return PyFloat_FromDouble(v); }
    case WK_GGUF_STRING: {
        const char *s;
        uint64_t len;
        CHECK(wk_gguf_get_string(g, i, &s, &len));
        return str_value(s, len);
    }
    default: PyErr_Format(PyExc_ValueError, "GGUF value %lld has no value type", (long long)i); return NULL;
    }
}

/* one element of a numeric array's raw little-endian bytes (unaligned) */
static PyObject *elem_value(const unsigned char *p, wk_gguf_type t) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
            uint64_t u64; int64_t i64; double f64; } v;
    switch (t) {
    case WK_GGUF_U8: memcpy(&v, p, 1); return PyLong_FromUnsignedLong(v.u8);
    case WK_GGUF_I8: memcpy(&v, p, 1); return PyLong_FromLong(v.i8);
    case WK_GGUF_BOOL: memcpy(&v, p, 1); return PyBool_FromLong(v.u8 != 0);
    case WK_GGUF_U16: memcpy(&v, p, 2); return PyLong_FromUnsignedLong(v.u16);
    case WK_GGUF_I16: memcpy(&v, p, 2); return PyLong_FromLong(v.i16);
    case WK_GGUF_U32: memcpy(&v, p, 4); return PyLong_FromUnsignedLong(v.u32);
    case WK_GGUF_I32: memcpy(&v, p, 4); return PyLong_FromLong(v.i32);
    case WK_GGUF_F32: memcpy(&v, p, 4); return PyFloat_FromDouble(v.f32);
    case WK_GGUF_U64: memcpy(&v, p, 8); return PyLong_FromUnsignedLongLong(v.u64);
    case WK_GGUF_I64: memcpy(&v, p, 8); return PyLong_FromLongLong(v.i64);
    case WK_GGUF_F64: memcpy(&v, p, 8); return PyFloat_FromDouble(v.f64);
    default: PyErr_SetString(PyExc_ValueError, "not a numeric GGUF type"); return NULL;
    }
}

static PyObject *array_value(const wk_gguf *g, int64_t i) {
    wk_gguf_type et;
    uint64_t n;
    CHECK(wk_gguf_get_array(g, i, &et, &n));
    if (n > (uint64_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    PyObject *l = PyList_New((Py_ssize_t)n);
    if (!l) return NULL;
    const unsigned char *data = NULL;
    size_t nbytes = 0, es = 0;
    if (et != WK_GGUF_STRING) {
        const void *d;
        if (wk_gguf_array_data(g, i, &d, &nbytes) != WK_OK) {
            Py_DECREF(l);
            return wkpy_raise();
        }
        data = d;
        es = n ? nbytes / n : 0;
    }
    for (uint64_t j = 0; j < n; j++) {
        PyObject *v;
        if (et == WK_GGUF_STRING) {
            const char *s;
            uint64_t len;
            v = wk_gguf_array_string(g, i, j, &s, &len) == WK_OK ? str_value(s, len) : wkpy_raise();
        } else
            v = elem_value(data + j * es, et);
        if (!v) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)j, v);
    }
    return l;
}

static PyObject *kv_value(const wk_gguf *g, int64_t i) {
    wk_gguf_type t = wk_gguf_kv_type(g, i);
    return t == WK_GGUF_ARRAY ? array_value(g, i) : scalar_value(g, i, t);
}

static PyObject *kv_type_name(const wk_gguf *g, int64_t i) {
    wk_gguf_type t = wk_gguf_kv_type(g, i), et;
    uint64_t n;
    if (t != WK_GGUF_ARRAY) return PyUnicode_FromString(wk_gguf_type_name(t));
    if (wk_gguf_get_array(g, i, &et, &n) != WK_OK) return wkpy_raise();
    return PyUnicode_FromFormat("array[%s]", wk_gguf_type_name(et));
}

/* ---- properties and methods ---- */

static PyObject *g_metadata(gguf_obj *self, void *c) {
    (void)c;
    if (g_live(self) < 0) return NULL;
    /* a fresh dict each time (changing it changes nothing here); the arrays'
     * lists are built once and shared */
    if (self->meta) return PyDict_Copy(self->meta);
    PyObject *d = PyDict_New();
    int64_t n = wk_gguf_kv_count(self->g);
    for (int64_t i = 0; d && i < n; i++) {
        PyObject *v = kv_value(self->g, i);
        if (!v || PyDict_SetItemString(d, wk_gguf_key(self->g, i), v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    self->meta = d; /* values are immutable in the file: build them once */
    return d ? PyDict_Copy(d) : NULL;
}

static PyObject *g_types(gguf_obj *self, void *c) {
    (void)c;
    if (g_live(self) < 0) return NULL;
    PyObject *d = PyDict_New();
    int64_t n = wk_gguf_kv_count(self->g);
    for (int64_t i = 0; d && i < n; i++) {
        PyObject *v = kv_type_name(self->g, i);
        if (!v || PyDict_SetItemString(d, wk_gguf_key(self->g, i), v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *g_tensor_names(gguf_obj *self, void *c) {
    (void)c;
    if (g_live(self) < 0) return NULL;
    int64_t n = wk_gguf_tensor_count(self->g);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(wk_gguf_tensor_name(self->g, i));
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, s);
    }
    return l;
}

#define GETU(name, expr)                                                                                       \
    static PyObject *g_##name(gguf_obj *self, void *c) {                                                       \
        (void)c;                                                                                               \
        if (g_live(self) < 0) return NULL;                                                                     \
        return PyLong_FromUnsignedLongLong((unsigned long long)(expr));                                        \
    }
GETU(version, wk_gguf_version(self->g))
GETU(alignment, wk_gguf_alignment(self->g))
GETU(data_offset, wk_gguf_data_offset(self->g))
GETU(file_size, wk_gguf_file_size(self->g))

static PyObject *g_closed(gguf_obj *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->g == NULL);
}

static int64_t tensor_index(gguf_obj *self, PyObject *name) {
    if (g_live(self) < 0) return -1;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a tensor name is a str, not %s", Py_TYPE(name)->tp_name);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return -1;
    int64_t i = wk_gguf_find_tensor(self->g, s);
    if (i < 0) PyErr_SetObject(PyExc_KeyError, name);
    return i;
}

static PyObject *m_tensor(gguf_obj *self, PyObject *name) {
    int64_t i = tensor_index(self, name);
    return i < 0 ? NULL : wkpy_wrap(wk_gguf_tensor_at(self->g, i));
}

static PyObject *m_tensor_info(gguf_obj *self, PyObject *name) {
    int64_t i = tensor_index(self, name);
    if (i < 0) return NULL;
    uint32_t gt = wk_gguf_tensor_ggml_type(self->g, i);
    int64_t shape[4];
    int rank = wk_gguf_tensor_shape(self->g, i, shape);
    wk_dtype dt;
    PyObject *dto = wk_ggml_type_to_dtype(gt, &dt) ? wkpy_dtype_obj(dt) : Py_NewRef(Py_None);
    PyObject *sh = PyTuple_New(rank < 0 ? 0 : rank);
    for (int k = 0; sh && k < rank; k++) PyTuple_SET_ITEM(sh, k, PyLong_FromLongLong((long long)shape[k]));
    const char *tn = wk_ggml_type_name(gt);
    return Py_BuildValue("{s:s,s:I,s:N,s:N,s:K,s:K}", "ggml_type", tn ? tn : "unknown", "ggml_type_id", gt, "dtype",
                         dto, "shape", sh, "offset", (unsigned long long)wk_gguf_tensor_offset(self->g, i), "nbytes",
                         (unsigned long long)wk_gguf_tensor_nbytes(self->g, i));
}

/* every tensor wick has a dtype for, as a dict */
static PyObject *m_tensors(gguf_obj *self, PyObject *unused) {
    (void)unused;
    if (g_live(self) < 0) return NULL;
    PyObject *d = PyDict_New();
    int64_t n = wk_gguf_tensor_count(self->g);
    for (int64_t i = 0; d && i < n; i++) {
        wk_dtype dt;
        if (!wk_ggml_type_to_dtype(wk_gguf_tensor_ggml_type(self->g, i), &dt)) continue;
        PyObject *v = wkpy_wrap(wk_gguf_tensor_at(self->g, i));
        if (!v || PyDict_SetItemString(d, wk_gguf_tensor_name(self->g, i), v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *m_close(gguf_obj *self, PyObject *unused) {
    (void)unused;
    wk_gguf_close(self->g);
    self->g = NULL;
    Py_RETURN_NONE;
}
static PyObject *m_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    if (g_live((gguf_obj *)self) < 0) return NULL;
    return Py_NewRef(self);
}
static PyObject *m_exit(gguf_obj *self, PyObject *args) {
    (void)args;
    return m_close(self, NULL);
}

static PyMethodDef gguf_methods[] = {
    {"tensor", (PyCFunction)m_tensor, METH_O,
     "tensor(name)\nThe tensor called name: a zero-copy, read-only CPU view of the file in wick's shape order "
     "(GGUF's ne reversed); block-quantized tensors come in their block dtype (wick.q4_1, ...)."},
    {"tensor_info", (PyCFunction)m_tensor_info, METH_O,
     "tensor_info(name)\nA dict: ggml_type ('q4_1'), ggml_type_id, dtype (None when wick has none), shape, offset, "
     "nbytes."},
    {"tensors", (PyCFunction)m_tensors, METH_NOARGS,
     "tensors()\nEvery tensor wick has a dtype for, as a dict name -> Tensor (views)."},
    {"close", (PyCFunction)m_close, METH_NOARGS, "close()\nClose the reader; tensors already taken stay valid."},
    {"__enter__", (PyCFunction)m_enter, METH_NOARGS, "__enter__()\nThe object itself (a context manager)."},
    {"__exit__", (PyCFunction)m_exit, METH_VARARGS, "__exit__(*exc_info)\nclose()."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef gguf_getset[] = {
    {"metadata", (getter)g_metadata, NULL,
     "Every key -> value (ints, floats, bools, str, lists), a new dict each time (the lists are shared: copy one "
     "before changing it).", NULL},
    {"types", (getter)g_types, NULL, "Every key -> its GGUF type name ('u32', 'string', 'array[i32]').", NULL},
    {"tensor_names", (getter)g_tensor_names, NULL, "The tensors' names in file order, a list.", NULL},
    {"version", (getter)g_version, NULL, "The GGUF version (1, 2 or 3).", NULL},
    {"alignment", (getter)g_alignment, NULL, "general.alignment (32 by default).", NULL},
    {"data_offset", (getter)g_data_offset, NULL, "The file offset of the tensor data.", NULL},
    {"file_size", (getter)g_file_size, NULL, "Bytes in the file.", NULL},
    {"closed", (getter)g_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject gguf_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.GGUF",
    .tp_basicsize = sizeof(gguf_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GGUF(path)\nA memory-mapped GGUF file (v1-v3): .metadata, .types, .tensor_names, .tensor(name). "
              "A context manager; tensors outlive close().",
    .tp_init = (initproc)gguf_init,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)gguf_dealloc,
    .tp_methods = gguf_methods,
    .tp_getset = gguf_getset,
};

static PyObject *f_load_gguf(PyObject *m, PyObject *path) {
    (void)m;
    return PyObject_CallOneArg((PyObject *)&gguf_type, path);
}

/* ---- save_gguf ---- */

static int type_from_name(const char *s, wk_gguf_type *out, bool *is_array) {
    *is_array = false;
    if (!strncmp(s, "array[", 6)) {
        *is_array = true;
        s += 6;
    }
    size_t n = strlen(s);
    if (*is_array && (n == 0 || s[n - 1] != ']')) return -1;
    if (*is_array) n--;
    for (int t = 0; t < WK_GGUF_TYPE_COUNT; t++) {
        const char *tn = wk_gguf_type_name((wk_gguf_type)t);
        if (t != WK_GGUF_ARRAY && strlen(tn) == n && !strncmp(tn, s, n)) {
            *out = (wk_gguf_type)t;
            return 0;
        }
    }
    return -1;
}

/* the type Python values of one kind get without an explicit type */
static int infer_type(PyObject *v, wk_gguf_type *t) {
    if (PyBool_Check(v)) *t = WK_GGUF_BOOL;
    else if (PyLong_Check(v)) {
        int over;
        long long x = PyLong_AsLongLongAndOverflow(v, &over);
        if (x == -1 && PyErr_Occurred()) return -1;
        *t = over > 0 ? WK_GGUF_U64 : over < 0 ? WK_GGUF_I64 : (x >= INT32_MIN && x <= INT32_MAX) ? WK_GGUF_I32 : WK_GGUF_I64;
    } else if (PyFloat_Check(v)) *t = WK_GGUF_F32;
    else if (PyUnicode_Check(v) || PyBytes_Check(v)) *t = WK_GGUF_STRING;
    else {
        PyErr_Format(PyExc_TypeError, "save_gguf(): no GGUF type for a %s value (give (value, 'type'))",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    return 0;
}

/* widen an inferred element type so every element fits */
static wk_gguf_type join_type(wk_gguf_type a, wk_gguf_type b) {
    if (a == b) return a;
    if (a == WK_GGUF_F32 || b == WK_GGUF_F32) return WK_GGUF_F32;
    if (a == WK_GGUF_U64 || b == WK_GGUF_U64) return WK_GGUF_U64;
    return WK_GGUF_I64;
}

static int utf8_of(PyObject *v, const char **s, Py_ssize_t *len) {
    if (PyBytes_Check(v)) {
        *s = PyBytes_AS_STRING(v);
        *len = PyBytes_GET_SIZE(v);
        return 0;
    }
    if (!PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "save_gguf(): a string value must be str or bytes, got %s", Py_TYPE(v)->tp_name);
        return -1;
    }
    *s = PyUnicode_AsUTF8AndSize(v, len);
    return *s ? 0 : -1;
}

/* a Python number into n bytes of element type t */
static int pack_number(PyObject *v, wk_gguf_type t, unsigned char *out) {
    if (t == WK_GGUF_F32 || t == WK_GGUF_F64) {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        if (t == WK_GGUF_F32) {
            float f = (float)d;
            memcpy(out, &f, 4);
        } else
            memcpy(out, &d, 8);
        return 0;
    }
    if (PyFloat_Check(v)) {
        PyErr_Format(PyExc_TypeError, "save_gguf(): a float value for an integer type %s", wk_gguf_type_name(t));
        return -1;
    }
    if (t == WK_GGUF_U64) {
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        memcpy(out, &x, 8);
        return 0;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    static const struct { long long lo, hi; int size; } k[] = {
        [WK_GGUF_U8] = {0, UINT8_MAX, 1},          [WK_GGUF_I8] = {INT8_MIN, INT8_MAX, 1},
        [WK_GGUF_U16] = {0, UINT16_MAX, 2},        [WK_GGUF_I16] = {INT16_MIN, INT16_MAX, 2},
        [WK_GGUF_U32] = {0, UINT32_MAX, 4},        [WK_GGUF_I32] = {INT32_MIN, INT32_MAX, 4},
        [WK_GGUF_BOOL] = {0, 1, 1},                [WK_GGUF_I64] = {INT64_MIN, INT64_MAX, 8},
    };
    if (x < k[t].lo || x > k[t].hi) {
        PyErr_Format(PyExc_OverflowError, "save_gguf(): %lld does not fit %s", x, wk_gguf_type_name(t));
        return -1;
    }
    /* little-endian host (GGUF is little-endian): the low bytes */
    memcpy(out, &x, (size_t)k[t].size);
    return 0;
}

static size_t type_size(wk_gguf_type t) {
    switch (t) {
    case WK_GGUF_U8: case WK_GGUF_I8: case WK_GGUF_BOOL: return 1;
    case WK_GGUF_U16: case WK_GGUF_I16: return 2;
    case WK_GGUF_U32: case WK_GGUF_I32: case WK_GGUF_F32: return 4;
    default: return 8;
    }
}

static int add_scalar(wk_gguf_writer *w, const char *key, PyObject *v, wk_gguf_type t) {
    wk_status st;
    if (t == WK_GGUF_STRING) {
        const char *s;
        Py_ssize_t len;
        if (utf8_of(v, &s, &len) < 0) return -1;
        st = wk_gguf_writer_add_string(w, key, s, (uint64_t)len);
    } else {
        unsigned char b[8] = {0};
        if (pack_number(v, t, b) < 0) return -1;
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
        uint64_t u64; int64_t i64; double f64;
        switch (t) {
        case WK_GGUF_U8: memcpy(&u8, b, 1); st = wk_gguf_writer_add_u8(w, key, u8); break;
        case WK_GGUF_I8: memcpy(&i8, b, 1); st = wk_gguf_writer_add_i8(w, key, i8); break;
        case WK_GGUF_BOOL: st = wk_gguf_writer_add_bool(w, key, b[0] != 0); break;
        case WK_GGUF_U16: memcpy(&u16, b, 2); st = wk_gguf_writer_add_u16(w, key, u16); break;
        case WK_GGUF_I16: memcpy(&i16, b, 2); st = wk_gguf_writer_add_i16(w, key, i16); break;
        case WK_GGUF_U32: memcpy(&u32, b, 4); st = wk_gguf_writer_add_u32(w, key, u32); break;
        case WK_GGUF_I32: memcpy(&i32, b, 4); st = wk_gguf_writer_add_i32(w, key, i32); break;
        case WK_GGUF_F32: memcpy(&f32, b, 4); st = wk_gguf_writer_add_f32(w, key, f32); break;
        case WK_GGUF_U64: memcpy(&u64, b, 8); st = wk_gguf_writer_add_u64(w, key, u64); break;
        case WK_GGUF_I64: memcpy(&i64, b, 8); st = wk_gguf_writer_add_i64(w, key, i64); break;
        default: memcpy(&f64, b, 8); st = wk_gguf_writer_add_f64(w, key, f64); break;
        }
    }
    return st == WK_OK ? 0 : wkpy_raise_int();
}

static int add_array(wk_gguf_writer *w, const char *key, PyObject *list, bool typed, wk_gguf_type t) {
    PyObject *seq = PySequence_Fast(list, "save_gguf(): an array value must be a list");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int rc = -1;
    void *buf = NULL;
    if (!typed) {
        if (n == 0) {
            PyErr_Format(PyExc_ValueError, "save_gguf(): '%s' is an empty array: give its type, ([], 'i32')", key);
            goto done;
        }
        if (infer_type(items[0], &t) < 0) goto done;
        for (Py_ssize_t j = 1; j < n; j++) {
            wk_gguf_type tj;
            if (infer_type(items[j], &tj) < 0) goto done;
            if ((tj == WK_GGUF_STRING) != (t == WK_GGUF_STRING) || (tj == WK_GGUF_BOOL) != (t == WK_GGUF_BOOL)) {
                PyErr_Format(PyExc_TypeError, "save_gguf(): '%s' mixes element kinds", key);
                goto done;
            }
            t = join_type(t, tj);
        }
    }
    wk_status st;
    if (t == WK_GGUF_STRING) {
        const char **strs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *strs);
        uint64_t *lens = PyMem_Calloc((size_t)(n ? n : 1), sizeof *lens);
        buf = strs;
        if (!strs || !lens) {
            PyMem_Free(lens);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_ssize_t len;
            if (utf8_of(items[j], &strs[j], &len) < 0) {
                PyMem_Free(lens);
                goto done;
            }
            lens[j] = (uint64_t)len;
        }
        st = wk_gguf_writer_add_string_array(w, key, strs, lens, (uint64_t)n);
        PyMem_Free(lens);
    } else {
        size_t es = type_size(t);
        unsigned char *b = PyMem_Calloc((size_t)(n ? n : 1), es);
        buf = b;
        if (!b) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < n; j++)
            if (pack_number(items[j], t, b + (size_t)j * es) < 0) goto done;
        st = wk_gguf_writer_add_array(w, key, t, b, (uint64_t)n);
    }
    rc = st == WK_OK ? 0 : wkpy_raise_int();
done:
    PyMem_Free(buf);
    Py_DECREF(seq);
    return rc;
}

static int add_kv(wk_gguf_writer *w, PyObject *k, PyObject *v) {
    if (!PyUnicode_Check(k)) {
        PyErr_Format(PyExc_TypeError, "save_gguf(): metadata keys must be str, got %s", Py_TYPE(k)->tp_name);
        return -1;
    }
    const char *key = PyUnicode_AsUTF8(k);
    if (!key) return -1;
    bool typed = false, is_array = false;
    wk_gguf_type t = WK_GGUF_I32;
    if (PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(v, 1))) {
        const char *tn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(v, 1));
        if (!tn) return -1;
        if (type_from_name(tn, &t, &is_array) < 0) {
            PyErr_Format(PyExc_ValueError, "save_gguf(): unknown GGUF type '%s' for '%s' (u8 i8 u16 i16 u32 i32 "
                                           "u64 i64 f32 f64 bool string, or array[...] of one)", tn, key);
            return -1;
        }
        typed = true;
        v = PyTuple_GET_ITEM(v, 0);
    }
    if (PyList_Check(v) || PyTuple_Check(v)) return add_array(w, key, v, typed, t);
    if (is_array) {
        PyErr_Format(PyExc_TypeError, "save_gguf(): '%s' is typed as an array but its value is a %s", key,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    if (!typed) {
        if (infer_type(v, &t) < 0) return -1;
        if (!strcmp(key, "general.alignment") && t == WK_GGUF_I32) t = WK_GGUF_U32; /* the format says u32 */
    }
    return add_scalar(w, key, v, t);
}

static PyObject *f_save_gguf(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"path", "metadata", "tensors", NULL};
    PyObject *a[3], *path;
    if (wkpy_parse("save_gguf", args, nargs, kw, names, 1, a) < 0) return NULL;
    for (int i = 1; i < 3; i++)
        if (a[i] && a[i] != Py_None && !PyDict_Check(a[i]))
            return PyErr_Format(PyExc_TypeError, "save_gguf(): %s must be a dict, got %s", names[i],
                                Py_TYPE(a[i])->tp_name);
    if (wkpy_path(a[0], "save_gguf", &path) < 0) return NULL;
    wk_gguf_writer *w = wk_gguf_writer_new();
    PyObject *r = NULL;
    if (!w) {
        wkpy_raise();
        goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (a[1] && a[1] != Py_None && PyDict_Next(a[1], &pos, &k, &v))
        if (add_kv(w, k, v) < 0) goto done;
    pos = 0;
    while (a[2] && a[2] != Py_None && PyDict_Next(a[2], &pos, &k, &v)) {
        const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!name) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "save_gguf(): tensor names must be str, got %s", Py_TYPE(k)->tp_name);
            goto done;
        }
        bool owned;
        wk_tensor *t = wkpy_operand(v, NULL, &owned);
        if (!t) goto done;
        wk_status st = wk_gguf_writer_add_tensor(w, name, t); /* keeps a reference or a copy */
        if (owned) wk_tensor_free(t);
        if (st != WK_OK) {
            wkpy_raise();
            goto done;
        }
    }
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_gguf_writer_write(w, PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    r = wkpy_status(st);
done:
    wk_gguf_writer_free(w);
    Py_DECREF(path);
    return r;
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef gguf_functions[] = {
    {"load_gguf", f_load_gguf, METH_O, "load_gguf(path)\nSame as wick.GGUF(path)."},
    {"save_gguf", FAST(f_save_gguf),
     "save_gguf(path, metadata=None, tensors=None)\nWrite a GGUF v3 file: metadata key -> value (bool, int -> i32 "
     "or i64, float -> f32, str, lists of one kind -> arrays; (value, 'u32') / (list, 'array[f32]') give the "
     "type), then tensors name -> Tensor (element or block dtypes ggml has, rank <= 4)."},
    {NULL, NULL, 0, NULL},
};

static int gguf_part_init(PyObject *m) {
    if (PyType_Ready(&gguf_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "GGUF", (PyObject *)&gguf_type);
}

const wkpy_part wkpy_part_gguf_file = {NULL, NULL, gguf_functions, gguf_part_init};
