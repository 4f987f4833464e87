/* Internal header of the CPython extension wick._wick. */
#ifndef WKPY_H
#define WKPY_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "wick/wick.h"

/* wick.Tensor: one wk_tensor reference. */
typedef struct {
    PyObject_HEAD
    wk_tensor *t;
    PyObject *weakrefs;
} wkpy_tensor;

extern PyTypeObject wkpy_tensor_type;

/* errors.c: the exception classes (one per wk_status) and the raise. */
int       wkpy_errors_init(PyObject *module);
/* Raise the exception of wick's pending error (its message), clear it;
 * returns NULL for `return wkpy_raise();`. */
PyObject *wkpy_raise(void);

/* tensor.c */
int       wkpy_tensor_init_type(PyObject *module);
/* Wrap t (takes the reference; out of every wick scope). NULL t: raises. */
PyObject *wkpy_wrap(wk_tensor *t);
static inline wk_tensor *wkpy_t(PyObject *o) { return ((wkpy_tensor *)o)->t; }
static inline int wkpy_check(PyObject *o) { return PyObject_TypeCheck(o, &wkpy_tensor_type); }

/* convert.c: dtypes by name ("f32", "float32", ...) and Python data. */
int        wkpy_dtype_from(PyObject *o, wk_dtype *out); /* str or None (-> f32) */
/* A CPU tensor from nested sequences of numbers (dtype dt). */
wk_tensor *wkpy_from_nested(PyObject *data, wk_dtype dt);
/* Zero-copy over any object with the buffer protocol (numpy arrays): the
 * tensor keeps the exporter alive until wick releases the memory. */
wk_tensor *wkpy_from_buffer(PyObject *obj);
/* Nested lists of t's values. */
PyObject  *wkpy_tolist(const wk_tensor *t);

#endif
