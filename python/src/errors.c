/* Every wick status becomes a Python exception class with wick's message.
 * The classes also derive from the built-in exception a Python user would
 * catch for that failure (IndexError, MemoryError, OSError, ...). */
#include "py_base.h"

static PyObject *g_base;
static PyObject *g_by_status[WK_ERR_COMM + 1];

static const struct {
    wk_status st;
    const char *name;
    PyObject **builtin;
} k_classes[] = {
    {WK_ERR_SHAPE, "ShapeError", &PyExc_ValueError},
    {WK_ERR_DTYPE, "DTypeError", &PyExc_TypeError},
    {WK_ERR_DEVICE, "DeviceError", &PyExc_ValueError},
    {WK_ERR_INDEX, "IndexError", &PyExc_IndexError},
    {WK_ERR_ARG, "ArgError", &PyExc_ValueError},
    {WK_ERR_OOM, "OutOfMemoryError", &PyExc_MemoryError},
    {WK_ERR_NOT_COMPILED, "NotCompiledError", &PyExc_NotImplementedError},
    {WK_ERR_IO, "IOError", &PyExc_OSError},
    {WK_ERR_FORMAT, "FormatError", &PyExc_ValueError},
    {WK_ERR_DIV_ZERO, "DivZeroError", &PyExc_ZeroDivisionError},
    {WK_ERR_INTERNAL, "InternalError", &PyExc_RuntimeError},
    {WK_ERR_BUSY, "BusyError", &PyExc_RuntimeError},
    {WK_ERR_COMM, "CommError", &PyExc_RuntimeError},
};

int wkpy_errors_init(PyObject *m) {
    g_base = PyErr_NewExceptionWithDoc("wick.Error", "Base class of every error wick reports.", PyExc_Exception, NULL);
    if (!g_base || PyModule_AddObjectRef(m, "Error", g_base) < 0) return -1;
    for (size_t i = 0; i < sizeof k_classes / sizeof k_classes[0]; i++) {
        char full[64];
        snprintf(full, sizeof full, "wick.%s", k_classes[i].name);
        PyObject *bases = PyTuple_Pack(2, g_base, *k_classes[i].builtin);
        if (!bases) return -1;
        PyObject *cls = PyErr_NewException(full, bases, NULL);
        Py_DECREF(bases);
        if (!cls || PyModule_AddObjectRef(m, k_classes[i].name, cls) < 0) return -1;
        g_by_status[k_classes[i].st] = cls;
    }
    return 0;
}

PyObject *wkpy_raise(void) {
    if (PyErr_Occurred()) return NULL; /* a Python error came first (a conversion) */
    wk_status st = wk_last_status();
    const char *msg = wk_last_error();
    PyObject *cls = (st > WK_OK && st <= WK_ERR_COMM && g_by_status[st]) ? g_by_status[st] : g_base;
    PyErr_SetString(cls, msg && *msg ? msg : "wick: unknown error");
    wk_clear_error();
    return NULL;
}

int wkpy_raise_int(void) {
    wkpy_raise();
    return -1;
}

PyObject *wkpy_error_class(wk_status st) {
    return (st > WK_OK && st <= WK_ERR_COMM && g_by_status[st]) ? g_by_status[st] : g_base;
}
