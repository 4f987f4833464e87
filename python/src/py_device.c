/* wick.device: a wick device as a Python object ("cpu", "cuda:0"), compared
 * by identity of the wick instance; plus the device-level functions. */
#include "wkpy.h"
#include <stdlib.h>
#include <limits.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    wk_device *dev;
} wkpy_device;

static PyTypeObject device_type;

PyObject *wkpy_device_obj(wk_device *dev) {
    wkpy_device *o = PyObject_New(wkpy_device, &device_type);
    if (o) o->dev = dev;
    return (PyObject *)o;
}

static int ordinal_of(const wk_device *dev) {
    const char *n = wk_device_name(dev), *c = strchr(n, ':');
    return c ? atoi(c + 1) : 0;
}

static int from_str(const char *s, long idx, wk_device **out) {
    if (!strcmp(s, "cpu")) {
        *out = wk_cpu();
        return 0;
    }
    long ord = idx >= 0 ? idx : 0;
    if (!strncmp(s, "cuda", 4) && (s[4] == 0 || s[4] == ':')) {
        if (s[4] == ':') {
            char *end;
            ord = strtol(s + 5, &end, 10);
            if (end == s + 5 || *end || ord < 0) goto bad;
        }
        wk_device *d = wk_cuda((int)ord);
        if (!d) return wkpy_raise_int();
        *out = d;
        return 0;
    }
bad:
    PyErr_Format(PyExc_ValueError, "unknown device '%s' (expected 'cpu', 'cuda' or 'cuda:N')", s);
    return -1;
}

int wkpy_device_from(PyObject *o, wk_device **out) {
    if (!o || o == Py_None) {
        *out = wk_cpu();
        return 0;
    }
    if (Py_IS_TYPE(o, &device_type)) {
        *out = ((wkpy_device *)o)->dev;
        return 0;
    }
    PyObject *s = PyUnicode_Check(o) ? Py_NewRef(o) : PyObject_Str(o); /* torch.device -> "cuda:0" */
    if (!s) return -1;
    const char *c = PyUnicode_AsUTF8(s);
    int r = c ? from_str(c, -1, out) : -1;
    Py_DECREF(s);
    return r;
}

static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *names[] = {"type", "index", NULL};
    PyObject *o;
    long idx = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|l", names, &o, &idx)) return NULL;
    wk_device *d;
    if (PyUnicode_Check(o) && idx >= 0) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s || from_str(s, idx, &d) < 0) return NULL;
    } else if (wkpy_device_from(o, &d) < 0) return NULL;
    return wkpy_device_obj(d);
}

static PyObject *device_str(wkpy_device *self) {
    if (wk_device_kind_of(self->dev) == WK_DEVICE_CPU) return PyUnicode_FromString("cpu");
    return PyUnicode_FromFormat("%s:%d", wk_device_kind_of(self->dev) == WK_DEVICE_CUDA ? "cuda" : "metal",
                                ordinal_of(self->dev));
}
static PyObject *device_repr(wkpy_device *self) {
    PyObject *s = device_str(self);
    if (!s) return NULL;
    PyObject *r = PyUnicode_FromFormat("wick.device('%U')", s);
    Py_DECREF(s);
    return r;
}
static Py_hash_t device_hash(wkpy_device *self) { return _Py_HashPointer(self->dev); }

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    wk_device *x, *y;
    if (wkpy_device_from(a, &x) < 0 || wkpy_device_from(b, &y) < 0 || a == Py_None || b == Py_None) {
        PyErr_Clear();
        wk_clear_error();
        return PyBool_FromLong(op == Py_NE);
    }
    return PyBool_FromLong((x == y) == (op == Py_EQ));
}

static PyObject *g_type(wkpy_device *s, void *c) {
    (void)c;
    static const char *k[] = {"cpu", "cuda", "metal"};
    return PyUnicode_FromString(k[wk_device_kind_of(s->dev)]);
}
static PyObject *g_index(wkpy_device *s, void *c) {
    (void)c;
    if (wk_device_kind_of(s->dev) == WK_DEVICE_CPU) Py_RETURN_NONE;
    return PyLong_FromLong(ordinal_of(s->dev));
}
static PyObject *d_synchronize(wkpy_device *s, PyObject *unused) {
    (void)unused;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_device_synchronize(s->dev);
    Py_END_ALLOW_THREADS
    return wkpy_status(st);
}
static PyObject *d_manual_seed(wkpy_device *s, PyObject *seed) {
    unsigned long long v = PyLong_AsUnsignedLongLong(seed);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    return wkpy_status(wk_device_set_seed(s->dev, v));
}

static PyGetSetDef device_getset[] = {
    {"type", (getter)g_type, NULL, "'cpu' or 'cuda'.", NULL},
    {"index", (getter)g_index, NULL, "The GPU ordinal (None for the CPU).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyMethodDef device_methods[] = {
    {"synchronize", (PyCFunction)d_synchronize, METH_NOARGS,
     "synchronize() -> None: wait for the device's queued work."},
    {"manual_seed", (PyCFunction)d_manual_seed, METH_O,
     "manual_seed(seed) -> None: seed the device's random generator."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject device_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.device",
    .tp_basicsize = sizeof(wkpy_device),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "device(type, index=None): wick.device('cpu'), wick.device('cuda:0'), wick.device('cuda', 1).",
    .tp_repr = (reprfunc)device_repr,
    .tp_str = (reprfunc)device_str,
    .tp_hash = (hashfunc)device_hash,
    .tp_richcompare = device_richcompare,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
    .tp_new = device_new,
};

static PyObject *f_cuda_device_count(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyLong_FromLong(wk_cuda_device_count());
}
static PyObject *f_cuda_is_available(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyBool_FromLong(wk_cuda_device_count() > 0);
}
static PyObject *f_manual_seed(PyObject *m, PyObject *seed) {
    (void)m;
    unsigned long long v = PyLong_AsUnsignedLongLong(seed);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    return wkpy_status(wk_device_set_seed(wk_cpu(), v));
}
static PyObject *f_get_num_threads(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyLong_FromLong(wk_num_threads());
}
static PyObject *f_set_num_threads(PyObject *m, PyObject *n) {
    (void)m;
    long v = PyLong_AsLong(n);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (v < INT_MIN || v > INT_MAX) return PyErr_Format(PyExc_OverflowError, "set_num_threads(%ld): out of range", v);
    return wkpy_status(wk_set_num_threads((int)v));
}
static PyObject *f_cpu_isa(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyUnicode_FromString(wk_cpu_isa());
}

static PyMethodDef device_functions[] = {
    {"cuda_device_count", f_cuda_device_count, METH_NOARGS,
     "cuda_device_count() -> int: CUDA devices usable here (0 without the backend or a GPU)."},
    {"cuda_is_available", f_cuda_is_available, METH_NOARGS,
     "cuda_is_available() -> bool: True when a CUDA device is usable."},
    {"manual_seed", f_manual_seed, METH_O,
     "manual_seed(seed) -> None: seed the CPU's random generator (rand / randn)."},
    {"get_num_threads", f_get_num_threads, METH_NOARGS, "get_num_threads() -> int: the CPU backend's thread count."},
    {"set_num_threads", f_set_num_threads, METH_O,
     "set_num_threads(n) -> None: set the CPU backend's thread count (1 .. 256; wick.ArgError outside)."},
    {"cpu_isa", f_cpu_isa, METH_NOARGS,
     "cpu_isa() -> str: the SIMD level the CPU backend chose ('avx512', 'avx2', 'generic')."},
    {NULL, NULL, 0, NULL},
};

static int devices_init(PyObject *m) {
    if (PyType_Ready(&device_type) < 0 || PyModule_AddObjectRef(m, "device", (PyObject *)&device_type) < 0) return -1;
    PyObject *cpu = wkpy_device_obj(wk_cpu());
    return cpu ? PyModule_AddObject(m, "cpu", cpu) : -1;
}

const wkpy_part wkpy_part_devices = {NULL, NULL, device_functions, devices_init};
