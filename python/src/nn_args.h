/* Helpers shared by the nn parts of the binding (py_nn.c: the ops, nn_loss.c:
 * the losses): optional tensors, torch's reduction= strings, argument checks
 * that raise wick's classes, and the scope pattern of composites. */
#ifndef WKPY_NN_ARGS_H
#define WKPY_NN_ARGS_H
#include "wkpy.h"
#include "wick/train.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

/* An optional Tensor argument: absent / None gives NULL (0), a Tensor is
 * borrowed, anything else is a TypeError (-1). */
static inline int opt_tensor(PyObject *o, const char *fname, const char *what, wk_tensor **out) {
    *out = NULL;
    if (!o || o == Py_None) return 0;
    *out = wkpy_tensor_arg(o, fname, what);
    return *out ? 0 : -1;
}

/* torch's reduction= strings. */
static inline int reduction_from(PyObject *o, const char *fname, wk_reduction *out) {
    *out = WK_REDUCE_MEAN_LOSS;
    if (!o || o == Py_None) return 0;
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s(): reduction must be a str", fname);
        return -1;
    }
    if (!strcmp(s, "mean")) *out = WK_REDUCE_MEAN_LOSS;
    else if (!strcmp(s, "sum")) *out = WK_REDUCE_SUM_LOSS;
    else if (!strcmp(s, "none")) *out = WK_REDUCE_NONE_LOSS;
    else {
        PyErr_Format(PyExc_ValueError, "%s(): reduction must be 'mean', 'sum' or 'none', got '%s'", fname, s);
        return -1;
    }
    return 0;
}

/* torch's deprecated size_average= / reduce= positions are kept so that
 * positional calls line up with torch's; only None is accepted there. */
static inline int no_legacy(const char *fname, PyObject *size_average, PyObject *reduce) {
    if ((size_average && size_average != Py_None) || (reduce && reduce != Py_None)) {
        PyErr_Format(PyExc_ValueError, "%s(): size_average / reduce are deprecated in torch and not supported: use "
                     "reduction='mean' | 'sum' | 'none'", fname);
        return -1;
    }
    return 0;
}

static inline int float_input(const wk_tensor *t, const char *fname, const char *what) {
    if (wk_dtype_is_float(wk_tensor_dtype(t))) return 0;
    PyErr_Format(wkpy_error_class(WK_ERR_DTYPE), "%s(): %s must be a float tensor, got %s", fname, what,
                 wk_dtype_name(wk_tensor_dtype(t)));
    return -1;
}

static inline bool same_shape(const wk_tensor *a, const wk_tensor *b) {
    if (wk_rank(a) != wk_rank(b)) return false;
    for (int d = 0; d < wk_rank(a); d++)
        if (wk_dim(a, d) != wk_dim(b, d)) return false;
    return true;
}

static inline int check_same_shape(const wk_tensor *a, const wk_tensor *b, const char *fname) {
    if (same_shape(a, b)) return 0;
    char x[300], y[300];
    wk_tensor_describe(a, x, sizeof x);
    wk_tensor_describe(b, y, sizeof y);
    PyErr_Format(wkpy_error_class(WK_ERR_SHAPE), "%s(): input (%s) and target (%s) must have one shape", fname, x, y);
    return -1;
}

/* A ValueError naming a bad number (PyErr_Format has no %g); NULL. */
static inline PyObject *bad_number(const char *fname, const char *what, double v) {
    char num[40];
    snprintf(num, sizeof num, "%g", v);
    PyErr_Format(PyExc_ValueError, "%s(): %s, got %s", fname, what, num);
    return NULL;
}

/* A composite's result out of the scope it was built in (r may be NULL). */
static inline wk_tensor *leave_scope(wk_tensor *r) {
    if (r) wk_keep(r);
    wk_scope_end();
    return r;
}

static inline wk_tensor *reduce_loss(wk_tensor *l, wk_reduction red) {
    return red == WK_REDUCE_MEAN_LOSS ? wk_mean_all(l) : red == WK_REDUCE_SUM_LOSS ? wk_sum_all(l) : wk_contiguous(l);
}

static inline wk_tensor *scalar_like(double v, const wk_tensor *like) {
    return wk_full(NULL, 0, v, wk_tensor_dtype(like), wk_tensor_device(like));
}

#endif
