/* wick.dtype: one immutable object per wick dtype (wick.float32 is
 * wick.f32), with its name, size and kind; and every spelling a Python
 * user might pass for one (str, numpy dtype / type, torch dtype). */
#include "wkpy.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    wk_dtype dt;
} wkpy_dtype;

static PyTypeObject dtype_type;
static PyObject *g_dtypes[WK_DTYPE_COUNT];

PyObject *wkpy_dtype_obj(wk_dtype dt) {
    if ((int)dt < 0 || dt >= WK_DTYPE_COUNT || !g_dtypes[dt]) {
        PyErr_Format(PyExc_ValueError, "not a wick dtype: %d", (int)dt);
        return NULL;
    }
    return Py_NewRef(g_dtypes[dt]);
}

/* numpy / torch / Python spellings -> wick's names */
static const struct { const char *alias, *name; } k_alias[] = {
    {"float32", "f32"}, {"float", "f32"},   {"float64", "f64"}, {"double", "f64"}, {"float16", "f16"},
    {"half", "f16"},    {"bfloat16", "bf16"}, {"uint8", "u8"},  {"bool", "u8"},    {"uint32", "u32"},
    {"int16", "i16"},   {"short", "i16"},   {"int32", "i32"},   {"int", "i64"},    {"int64", "i64"},
    {"long", "i64"},    {"float8_e4m3fn", "f8e4m3"},
};

static int from_name(const char *s, wk_dtype *out) {
    if (!strncmp(s, "torch.", 6)) s += 6;
    else if (!strncmp(s, "numpy.", 6)) s += 6;
    else if (!strncmp(s, "wick.", 5)) s += 5;
    for (size_t i = 0; i < sizeof k_alias / sizeof k_alias[0]; i++)
        if (!strcmp(s, k_alias[i].alias)) s = k_alias[i].name;
    if (!wk_dtype_from_name(s, out)) {
        PyErr_Format(PyExc_TypeError, "unknown dtype '%s' (wick's names: f32, f16, bf16, f64, u8, u32, i16, i32, "
                                      "i64, f8e4m3, q4_0, ...; numpy's and torch's names work too)", s);
        return -1;
    }
    return 0;
}

int wkpy_dtype_from(PyObject *o, wk_dtype dflt, wk_dtype *out) {
    if (!o || o == Py_None) {
        *out = dflt;
        return 0;
    }
    if (Py_IS_TYPE(o, &dtype_type)) {
        *out = ((wkpy_dtype *)o)->dt;
        return 0;
    }
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        return s ? from_name(s, out) : -1;
    }
    if (o == (PyObject *)&PyFloat_Type) { *out = WK_F32; return 0; }
    if (o == (PyObject *)&PyLong_Type) { *out = WK_I64; return 0; }
    if (o == (PyObject *)&PyBool_Type) { *out = WK_U8; return 0; }
    /* numpy dtypes and scalar types, torch dtypes: by name. numpy's `.name`
     * ("float32") is on dtype objects; a type like np.float32 goes through
     * np.dtype(np.float32) only when numpy is already imported. str(torch
     * dtype) is "torch.float32". */
    PyObject *name = PyObject_GetAttrString(o, "name");
    if (!name || !PyUnicode_Check(name)) {
        Py_XDECREF(name);
        PyErr_Clear();
        if (PyType_Check(o)) {
            PyObject *npmod = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");
            if (npmod) {
                PyObject *d = PyObject_CallMethod(npmod, "dtype", "O", o);
                if (d) {
                    int r = wkpy_dtype_from(d, dflt, out);
                    Py_DECREF(d);
                    return r;
                }
                PyErr_Clear();
            }
        }
        name = PyObject_Str(o);
        if (!name) return -1;
    }
    const char *s = PyUnicode_AsUTF8(name);
    int r = s ? from_name(s, out) : -1;
    Py_DECREF(name);
    return r;
}

static PyObject *dtype_repr(wkpy_dtype *self) {
    return PyUnicode_FromFormat("wick.%s", wk_dtype_name(self->dt));
}
static PyObject *dtype_str(wkpy_dtype *self) { return PyUnicode_FromString(wk_dtype_name(self->dt)); }
static Py_hash_t dtype_hash(wkpy_dtype *self) { return (Py_hash_t)self->dt + 1000; }

/* dtype == "f32" / np.float32 / torch.float32 works; unknown things are unequal */
static PyObject *dtype_richcompare(PyObject *a, PyObject *b, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    wk_dtype x, y;
    if (wkpy_dtype_from(a, WK_F32, &x) < 0 || wkpy_dtype_from(b, WK_F32, &y) < 0 || a == Py_None || b == Py_None) {
        PyErr_Clear();
        return PyBool_FromLong(op == Py_NE);
    }
    return PyBool_FromLong((x == y) == (op == Py_EQ));
}

static PyObject *g_name(wkpy_dtype *s, void *c) { (void)c; return PyUnicode_FromString(wk_dtype_name(s->dt)); }
static PyObject *g_itemsize(wkpy_dtype *s, void *c) {
    (void)c;
    return PyLong_FromSize_t(wk_dtype_size(s->dt)); /* 0 for block dtypes */
}
static PyObject *g_is_float(wkpy_dtype *s, void *c) { (void)c; return PyBool_FromLong(wk_dtype_is_float(s->dt)); }
static PyObject *g_is_int(wkpy_dtype *s, void *c) { (void)c; return PyBool_FromLong(wk_dtype_is_int(s->dt)); }
static PyObject *g_is_quantized(wkpy_dtype *s, void *c) {
    (void)c;
    return PyBool_FromLong(wk_dtype_is_quantized(s->dt));
}
static PyObject *g_block(wkpy_dtype *s, void *c) {
    (void)c;
    const wk_dtype_info *i = wk_dtype_info_of(s->dt);
    return Py_BuildValue("(II)", i->block_elems, i->block_bytes);
}

static PyGetSetDef dtype_getset[] = {
    {"name", (getter)g_name, NULL, "wick's name ('f32', 'q4_0', ...).", NULL},
    {"itemsize", (getter)g_itemsize, NULL, "Bytes per element (0 for block-quantized dtypes).", NULL},
    {"is_floating_point", (getter)g_is_float, NULL, "Float values (f32, f16, bf16, f64, f8e4m3).", NULL},
    {"is_int", (getter)g_is_int, NULL, "Integer values.", NULL},
    {"is_quantized", (getter)g_is_quantized, NULL, "A GGML block-quantized dtype.", NULL},
    {"block", (getter)g_block, NULL, "(elements, bytes) per block; (1, itemsize) for element dtypes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *dtype_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    PyObject *o;
    static char *names[] = {"name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O", names, &o)) return NULL;
    wk_dtype dt;
    if (wkpy_dtype_from(o, WK_F32, &dt) < 0) return NULL;
    return wkpy_dtype_obj(dt);
}

static PyTypeObject dtype_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.dtype",
    .tp_basicsize = sizeof(wkpy_dtype),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "dtype(name): a wick dtype (wick.f32 is wick.float32). Compares equal to its names, numpy's and torch's.",
    .tp_repr = (reprfunc)dtype_repr,
    .tp_str = (reprfunc)dtype_str,
    .tp_hash = (hashfunc)dtype_hash,
    .tp_richcompare = dtype_richcompare,
    .tp_getset = dtype_getset,
    .tp_new = dtype_new,
};

static int dtypes_init(PyObject *m) {
    if (PyType_Ready(&dtype_type) < 0 || PyModule_AddObjectRef(m, "dtype", (PyObject *)&dtype_type) < 0) return -1;
    for (int d = 0; d < WK_DTYPE_COUNT; d++) {
        wkpy_dtype *o = PyObject_New(wkpy_dtype, &dtype_type);
        if (!o) return -1;
        o->dt = (wk_dtype)d;
        g_dtypes[d] = (PyObject *)o;
        if (PyModule_AddObjectRef(m, wk_dtype_name((wk_dtype)d), (PyObject *)o) < 0) return -1;
    }
    static const struct { const char *alias; wk_dtype dt; } k_mod_alias[] = {
        {"float32", WK_F32}, {"float64", WK_F64}, {"float16", WK_F16}, {"bfloat16", WK_BF16}, {"uint8", WK_U8},
        {"uint32", WK_U32},  {"int16", WK_I16},   {"int32", WK_I32},   {"int64", WK_I64},     {"float8_e4m3", WK_F8E4M3},
    };
    for (size_t i = 0; i < sizeof k_mod_alias / sizeof k_mod_alias[0]; i++)
        if (PyModule_AddObjectRef(m, k_mod_alias[i].alias, g_dtypes[k_mod_alias[i].dt]) < 0) return -1;
    return 0;
}

const wkpy_part wkpy_part_dtypes = {NULL, NULL, NULL, dtypes_init};
