/* The module wick._wick, the roof of the binding: the exception classes,
 * then the Tensor type made ready (its protocols from py_tensor.c, the
 * concatenation of every part's method and property tables, parts.h), then
 * every part's module functions and init. The Python package
 * (python/wick/__init__.py) re-exports it. */
#include "wkpy.h"
#include "parts.h"
#include <string.h>

#define WKPY_DECLARE_PART(name) extern const wkpy_part wkpy_part_##name;
WKPY_PARTS(WKPY_DECLARE_PART)
#define WKPY_PART_ADDR(name) &wkpy_part_##name,
static const wkpy_part *const k_parts[] = {WKPY_PARTS(WKPY_PART_ADDR)};
#define NPARTS (sizeof k_parts / sizeof k_parts[0])

static size_t count_methods(const PyMethodDef *m) {
    size_t n = 0;
    while (m && m[n].ml_name) n++;
    return n;
}
static size_t count_getset(const PyGetSetDef *g) {
    size_t n = 0;
    while (g && g[n].name) n++;
    return n;
}

/* The type's method and property tables: the concatenation of every part's
 * (they live as long as the process: a type's tables must). */
static int build_tables(void) {
    size_t nm = 1, ng = 1;
    for (size_t i = 0; i < NPARTS; i++) {
        nm += count_methods(k_parts[i]->tensor_methods);
        ng += count_getset(k_parts[i]->tensor_getset);
    }
    PyMethodDef *m = PyMem_RawCalloc(nm, sizeof *m);
    PyGetSetDef *g = PyMem_RawCalloc(ng, sizeof *g);
    if (!m || !g) {
        PyMem_RawFree(m);
        PyMem_RawFree(g);
        PyErr_NoMemory();
        return -1;
    }
    size_t im = 0, ig = 0;
    for (size_t i = 0; i < NPARTS; i++) {
        size_t a = count_methods(k_parts[i]->tensor_methods), b = count_getset(k_parts[i]->tensor_getset);
        if (a) memcpy(m + im, k_parts[i]->tensor_methods, a * sizeof *m);
        if (b) memcpy(g + ig, k_parts[i]->tensor_getset, b * sizeof *g);
        im += a;
        ig += b;
    }
    wkpy_tensor_type.tp_methods = m;
    wkpy_tensor_type.tp_getset = g;
    return 0;
}

/* The Tensor type from every part, then each part added to the module. */
static int parts_init(PyObject *mod) {
    wkpy_llama_textgen = wkpy_textgen; /* Llama.generate / stream (llm.c) run textgen.c's generator */
    wkpy_llama_chat = wkpy_chat;       /* Model.chat (llm.c) runs textgen.c's chat session */
    wkpy_tensor_protocols(&wkpy_tensor_type);
    if (build_tables() < 0 || PyType_Ready(&wkpy_tensor_type) < 0 ||
        PyModule_AddObjectRef(mod, "Tensor", (PyObject *)&wkpy_tensor_type) < 0)
        return -1;
    for (size_t i = 0; i < NPARTS; i++) {
        if (k_parts[i]->functions && PyModule_AddFunctions(mod, k_parts[i]->functions) < 0) return -1;
        if (k_parts[i]->init && k_parts[i]->init(mod) < 0) return -1;
    }
    return 0;
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "wick._wick", "wick's CPython extension (see the wick package).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wick(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (wkpy_errors_init(m) < 0 || parts_init(m) < 0 ||
        PyModule_AddStringConstant(m, "__version__", WICK_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
