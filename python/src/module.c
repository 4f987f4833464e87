/* The module wick._wick: the exception classes, then every part (parts.h).
 * The Python package (python/wick/__init__.py) re-exports it. */
#include "wkpy.h"

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "wick._wick", "wick's CPython extension (see the wick package).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wick(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (wkpy_errors_init(m) < 0 || wkpy_parts_init(m) < 0 ||
        PyModule_AddStringConstant(m, "__version__", WICK_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
