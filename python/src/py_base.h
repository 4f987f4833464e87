/* The ground of the CPython extension wick._wick: what every other file of
 * python/src stands on, naming nothing above it. The Tensor object itself
 * (its struct, the type object's storage and lifetime: py_base.c), wrapping
 * a wk_tensor, the status -> exception mapping (errors.c), the GIL rule
 * and the part descriptor. The Tensor's protocols (numbers, buffer,
 * mapping, repr) and the method tables are filled in by the roof
 * (py_tensor.c, module.c) before the type is readied at import. */
#ifndef WKPY_PY_BASE_H
#define WKPY_PY_BASE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include "wick/wick.h"

/* wick.Tensor: one wk_tensor reference (kept out of every wick scope). */
typedef struct {
    PyObject_HEAD
    wk_tensor *t;
    PyObject *weakrefs;
} wkpy_tensor;

/* The type (py_base.c): its name, size, GC and lifetime slots; module.c
 * adds the protocols (py_tensor.c) and every part's tables, then readies it. */
extern PyTypeObject wkpy_tensor_type;

/* A part of the binding (parts.h lists them): what one file contributes. */
typedef struct wkpy_part {
    PyMethodDef *tensor_methods;   /* NULL-terminated, or NULL */
    PyGetSetDef *tensor_getset;    /* NULL-terminated, or NULL */
    PyMethodDef *functions;        /* module functions, NULL-terminated, or NULL */
    int (*init)(PyObject *module); /* types, constants (after Tensor is ready); or NULL */
} wkpy_part;

/* ---- errors.c ---- */
int       wkpy_errors_init(PyObject *module);
/* Raise the exception of wick's pending error (its message), clear it;
 * returns NULL for `return wkpy_raise();`. A pending Python exception
 * (a conversion failed first) is left as it is. */
PyObject *wkpy_raise(void);
/* Same, for functions returning int: -1. */
int       wkpy_raise_int(void);
/* The class for a status (borrowed; wick.Error for unknown ones). */
PyObject *wkpy_error_class(wk_status st);

/* ---- py_base.c ---- */
/* Wrap t (takes the reference). NULL t: raises wick's error, returns NULL. */
PyObject *wkpy_wrap(wk_tensor *t);
static inline wk_tensor *wkpy_t(PyObject *o) { return ((wkpy_tensor *)o)->t; }
static inline int wkpy_check(PyObject *o) { return PyObject_TypeCheck(o, &wkpy_tensor_type); }
/* Wrap a wk_status: None on WK_OK, else raises. */
PyObject *wkpy_status(wk_status st);
/* Called (when set) as a tracked Tensor dies, before its reference is
 * dropped: autograd.c sets it to drop the store's gradient of a leaf
 * nothing else holds. */
extern void (*wkpy_on_leaf_dealloc)(wk_tensor *t);

/* ---- GIL ----
 * Release the GIL for stmt when big is true. Ops on tensors of at least
 * WKPY_GIL_NUMEL elements (or any queued GPU op's host wait) release it. */
#define WKPY_GIL_NUMEL 16384
#define WKPY_NOGIL(big, stmt)                                                                                  \
    do {                                                                                                       \
        if (big) {                                                                                             \
            Py_BEGIN_ALLOW_THREADS stmt;                                                                       \
            Py_END_ALLOW_THREADS                                                                               \
        } else {                                                                                               \
            stmt;                                                                                              \
        }                                                                                                      \
    } while (0)
/* True when an op on t is worth releasing the GIL for. */
bool wkpy_big(const wk_tensor *t);

#endif
