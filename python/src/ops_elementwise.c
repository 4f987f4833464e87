/* Elementwise ops from Python: every unary, binary and comparison op of the
 * lists in wick/wick_ops.h as a Tensor method and a module function
 * (t.exp() and wick.exp(t)), their in-place forms (t.exp_(), t.add_(x)),
 * and the parametric ops (affine, elu, clamp), where, fill_ / zero_ /
 * copy_. The per-op wrappers are generated from the X-macro lists, so an op
 * added there appears here with no edit.
 *
 * Python numbers on one side go through wk_binary_scalar / wk_cmp_scalar /
 * wk_powf (no operand tensor is built here). torch's one promotion rule that
 * matters for numbers is kept: a Python float beside an integer tensor
 * computes in f32 (comparisons in f64); wick would otherwise round the
 * float to the integer dtype and answer quietly wrong. Two tensors of different dtypes are
 * wick's DTypeError, as in wick. */
#include "wkpy.h"
#include <math.h>
#include <string.h>

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
#define NOARGS(f) (PyCFunction)(void (*)(void))(f), METH_NOARGS
#define ONE(f) (PyCFunction)(void (*)(void))(f), METH_O

/* What kind of Python number o is: 0 none, 1 an integer (int, bool, a
 * numpy integer scalar), 2 a float (float, a numpy float scalar). numpy's
 * scalars count as numbers (t * np.int64(2) must not become a rank-0 i64
 * tensor that mismatches an f32 t). */
static int number_kind(PyObject *o) {
    if (PyFloat_Check(o)) return 2;
    if (PyLong_Check(o)) return 1;
    const char *tn = Py_TYPE(o)->tp_name;
    if (!strncmp(tn, "numpy.", 6) && strcmp(tn, "numpy.ndarray") && !strstr(tn, "complex") && PyNumber_Check(o))
        return PyIndex_Check(o) ? 1 : 2;
    return 0;
}
static bool is_number(PyObject *o) { return number_kind(o) != 0; }
static bool is_float_number(PyObject *o) { return number_kind(o) == 2; }

/* wkpy_operand, with numbers of every kind above as rank-0 tensors in
 * like's dtype and device (f32 / i64 on the CPU without like) */
static wk_tensor *operand(PyObject *o, const wk_tensor *like, bool *owned) {
    int kind = number_kind(o);
    if (!kind || PyFloat_Check(o) || PyLong_Check(o)) return wkpy_operand(o, like, owned);
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    wk_dtype dt = like ? wk_tensor_dtype(like) : kind == 2 ? WK_F32 : WK_I64;
    wk_tensor *t = wk_full(NULL, 0, v, dt, like ? wk_tensor_device(like) : wk_cpu());
    if (!t) return wkpy_raise(), NULL;
    *owned = true;
    return t;
}

/* r computed from self, written back into self's memory (torch's in-place
 * forms): the result must keep self's shape and dtype (wk_copy_ checks). */
static PyObject *into_self(PyObject *self, wk_tensor *r) {
    if (!r) return wkpy_raise();
    wk_status st;
    WKPY_NOGIL(wkpy_big(r), st = wk_copy_(wkpy_t(self), r));
    wk_tensor_free(r);
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(self);
}

/* ---- unary ops (WK_UNARY_OPS) ---- */

static wk_tensor *unary_of(const wk_tensor *t, wk_unary_op op) {
    wk_tensor *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_unary(t, op));
    return r;
}

static PyObject *unary_fn(const char *name, PyObject *x, wk_unary_op op) {
    wk_tensor *t = wkpy_tensor_arg(x, name, "input");
    return t ? wkpy_wrap(unary_of(t, op)) : NULL;
}

#define UNARY_WRAPPERS(e, n, ...)                                                                              \
    static PyObject *m_##n(PyObject *self, PyObject *unused) {                                                 \
        (void)unused;                                                                                          \
        return wkpy_wrap(unary_of(wkpy_t(self), e));                                                           \
    }                                                                                                          \
    static PyObject *m_##n##_(PyObject *self, PyObject *unused) {                                              \
        (void)unused;                                                                                          \
        return into_self(self, unary_of(wkpy_t(self), e));                                                     \
    }                                                                                                          \
    static PyObject *f_##n(PyObject *mod, PyObject *x) {                                                       \
        (void)mod;                                                                                             \
        return unary_fn(#n, x, e);                                                                             \
    }
WK_UNARY_OPS(UNARY_WRAPPERS)

/* torch's names for wick's ops, where torch spells them differently */
#define ALIAS(alias, n, e)                                                                                     \
    static PyObject *m_##alias(PyObject *s, PyObject *u) { return m_##n(s, u); }                              \
    static PyObject *m_##alias##_(PyObject *s, PyObject *u) { return m_##n##_(s, u); }                        \
    static PyObject *f_##alias(PyObject *m, PyObject *x) {                                                     \
        (void)m;                                                                                               \
        return unary_fn(#alias, x, e);                                                                         \
    }
ALIAS(reciprocal, recip, WK_RECIP)
ALIAS(square, sqr, WK_SQR)
ALIAS(negative, neg, WK_NEG)

/* the integer column of the list, in words */
#define INTDOC_INT_NONE "Float dtypes only (integers: wick.DTypeError)."
#define INTDOC_INT_ID "The identity on integer dtypes."
#define INTDOC_INT_DEF "Defined on integer dtypes (wrapping like C unsigned arithmetic)."
#define UNARY_METHOD_DEFS(e, n, ints, ...)                                                                     \
    {#n, NOARGS(m_##n), #n "()\n\nElementwise " #n " (wick's wk_" #n "), a new tensor. " INTDOC_##ints},     \
    {#n "_", NOARGS(m_##n##_), #n "_()\n\nIn place: self = self." #n "(); returns self."},
#define UNARY_FUNCTION_DEFS(e, n, ints, ...)                                                                   \
    {#n, ONE(f_##n), #n "(input)\n\nElementwise " #n " (wick's wk_" #n "). " INTDOC_##ints},
#define ALIAS_METHOD_DEFS(alias, n)                                                                            \
    {#alias, NOARGS(m_##alias), #alias "()\n\ntorch's name for " #n "()."},                                   \
    {#alias "_", NOARGS(m_##alias##_), #alias "_()\n\ntorch's name for " #n "_()."},
#define ALIAS_FUNCTION_DEFS(alias, n) {#alias, ONE(f_##alias), #alias "(input)\n\ntorch's name for " #n "()."},

/* ---- binary ops and comparisons ---- */

typedef enum { K_BINARY, K_CMP } op_kind;

static wk_tensor *apply2(op_kind k, int op, const wk_tensor *x, const wk_tensor *y) {
    wk_tensor *r;
    bool big = wkpy_big(x) || wkpy_big(y);
    WKPY_NOGIL(big, r = k == K_BINARY ? wk_binary(x, y, (wk_binary_op)op) : wk_cmp(x, y, (wk_cmp_op)op));
    return r;
}

/* t op number: the scalar forms. pow of a float tensor by a number is
 * wk_powf (its own, cheaper backward). */
static wk_tensor *apply_number(op_kind k, int op, const wk_tensor *t, PyObject *num) {
    double v = PyFloat_AsDouble(num);
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    wk_tensor *promoted = NULL;
    if (is_float_number(num) && !wk_dtype_is_float(wk_tensor_dtype(t))) {
        /* torch: int tensor (op) float computes in f32; a comparison gives u8
         * whatever it computes in, so it compares in f64, exact for every
         * integer dtype but the largest i64 */
        promoted = wk_to_dtype(t, k == K_CMP ? WK_F64 : WK_F32);
        if (!promoted) return wkpy_raise(), NULL;
        t = promoted;
    }
    wk_tensor *r;
    bool big = wkpy_big(t);
    if (k == K_CMP) WKPY_NOGIL(big, r = wk_cmp_scalar(t, v, (wk_cmp_op)op));
    else if (op == WK_POW && wk_dtype_is_float(wk_tensor_dtype(t))) WKPY_NOGIL(big, r = wk_powf(t, v));
    else WKPY_NOGIL(big, r = wk_binary_scalar(t, v, (wk_binary_op)op));
    wk_tensor_free(promoted);
    if (!r) wkpy_raise();
    return r;
}

/* a op b for any pair of operands (Tensors, numbers, arrays, lists): the
 * first operand that is not a Python number sets the dtype and device the
 * other converts to. NULL with an exception on failure. */
static wk_tensor *apply_any(op_kind k, int op, PyObject *a, PyObject *b) {
    if (wkpy_check(a) && is_number(b)) return apply_number(k, op, wkpy_t(a), b);
    bool a_first = !is_number(a) || is_number(b);
    PyObject *anchor_obj = a_first ? a : b, *other_obj = a_first ? b : a;
    bool own_anchor, own_other;
    wk_tensor *anchor = operand(anchor_obj, NULL, &own_anchor);
    if (!anchor) return NULL;
    if (is_float_number(other_obj) && !wk_dtype_is_float(wk_tensor_dtype(anchor))) {
        wk_tensor *f = wk_to_dtype(anchor, k == K_CMP ? WK_F64 : WK_F32);
        if (own_anchor) wk_tensor_free(anchor);
        if (!f) return wkpy_raise(), NULL;
        anchor = f;
        own_anchor = true;
    }
    wk_tensor *other = operand(other_obj, anchor, &own_other);
    wk_tensor *r = NULL;
    if (other) {
        r = a_first ? apply2(k, op, anchor, other) : apply2(k, op, other, anchor);
        if (!r) wkpy_raise();
        if (own_other) wk_tensor_free(other);
    }
    if (own_anchor) wk_tensor_free(anchor);
    return r;
}

PyObject *wkpy_elementwise(PyObject *a, PyObject *b, int op, bool cmp) {
    wk_tensor *r = apply_any(cmp ? K_CMP : K_BINARY, op, a, b);
    return r ? wkpy_wrap(r) : NULL;
}

/* module functions: f(input, other) */
static PyObject *pair_fn(const char *name, op_kind k, int op, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kw) {
    static const char *const names[] = {"input", "other", NULL};
    PyObject *a[2];
    if (wkpy_parse(name, args, nargs, kw, names, 2, a) < 0) return NULL;
    wk_tensor *r = apply_any(k, op, a[0], a[1]);
    return r ? wkpy_wrap(r) : NULL;
}

#define BINARY_WRAPPERS(e, n, ...)                                                                             \
    static PyObject *m_##n(PyObject *self, PyObject *other) {                                                  \
        wk_tensor *r = apply_any(K_BINARY, e, self, other);                                                    \
        return r ? wkpy_wrap(r) : NULL;                                                                        \
    }                                                                                                          \
    static PyObject *m_##n##_(PyObject *self, PyObject *other) {                                               \
        wk_tensor *r = apply_any(K_BINARY, e, self, other);                                                    \
        return r ? into_self(self, r) : NULL;                                                                  \
    }                                                                                                          \
    static PyObject *f_##n(PyObject *m, PyObject *const *a, Py_ssize_t na, PyObject *kw) {                     \
        (void)m;                                                                                               \
        return pair_fn(#n, K_BINARY, e, a, na, kw);                                                            \
    }
WK_BINARY_OPS(BINARY_WRAPPERS)

#define CMP_WRAPPERS(e, n, ...)                                                                                \
    static PyObject *m_##n(PyObject *self, PyObject *other) {                                                  \
        wk_tensor *r = apply_any(K_CMP, e, self, other);                                                       \
        return r ? wkpy_wrap(r) : NULL;                                                                        \
    }                                                                                                          \
    static PyObject *f_##n(PyObject *m, PyObject *const *a, Py_ssize_t na, PyObject *kw) {                     \
        (void)m;                                                                                               \
        return pair_fn(#n, K_CMP, e, a, na, kw);                                                               \
    }
WK_CMP_OPS(CMP_WRAPPERS)

#define BINARY_METHOD_DEFS(e, n, ...)                                                                          \
    {#n, ONE(m_##n),                                                                                           \
     #n "(other, /)\n\nElementwise " #n " with numpy broadcasting (wick's wk_" #n "). other: a Tensor of the " \
        "same dtype and device, or a Python number (wk_binary_scalar; a float beside an integer tensor "       \
        "computes in f32, like torch)."},                                                                      \
    {#n "_", ONE(m_##n##_), #n "_(other, /)\n\nIn place: self = self." #n "(other) (same shape and dtype); "   \
                                "returns self."},
#define BINARY_FUNCTION_DEFS(e, n, ...)                                                                        \
    {#n, FAST(f_##n),                                                                                          \
     #n "(input, other)\n\nElementwise " #n " with broadcasting; either side may be a Python number, an "      \
        "array or a list (it takes the other side's dtype and device)."},
#define CMP_METHOD_DEFS(e, n, op)                                                                              \
    {#n, ONE(m_##n), #n "(other, /)\n\nself " #op " other elementwise, a u8 tensor of 0 / 1 (broadcasting)."},
#define CMP_FUNCTION_DEFS(e, n, op)                                                                            \
    {#n, FAST(f_##n), #n "(input, other)\n\ninput " #op " other elementwise, a u8 tensor of 0 / 1."},

/* ---- where(condition, input, other) ---- */

static PyObject *where3(PyObject *c, PyObject *a, PyObject *b) {
    /* the values: like apply_any, the first that is not a number leads */
    bool a_first = !is_number(a) || is_number(b);
    PyObject *lead_obj = a_first ? a : b, *other_obj = a_first ? b : a;
    bool own_lead, own_other = false, own_c = false;
    wk_tensor *lead = operand(lead_obj, NULL, &own_lead), *other = NULL, *cond = NULL, *r = NULL;
    if (!lead) return NULL;
    if (is_float_number(other_obj) && !wk_dtype_is_float(wk_tensor_dtype(lead))) {
        wk_tensor *f = wk_to_dtype(lead, WK_F32);
        if (own_lead) wk_tensor_free(lead);
        if (!f) return wkpy_raise();
        lead = f;
        own_lead = true;
    }
    other = operand(other_obj, lead, &own_other);
    if (other) cond = wkpy_operand(c, NULL, &own_c);
    if (cond) {
        bool big = wkpy_big(lead) || wkpy_big(other) || wkpy_big(cond);
        WKPY_NOGIL(big, r = a_first ? wk_where(cond, lead, other) : wk_where(cond, other, lead));
        if (!r) wkpy_raise();
    }
    if (own_c) wk_tensor_free(cond);
    if (own_other) wk_tensor_free(other);
    if (own_lead) wk_tensor_free(lead);
    return r ? wkpy_wrap(r) : NULL;
}

static PyObject *f_where(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"condition", "input", "other", NULL};
    PyObject *a[3];
    if (wkpy_parse("where", args, nargs, kw, names, 3, a) < 0) return NULL;
    return where3(a[0], a[1], a[2]);
}

/* torch's Tensor.where(condition, other): condition ? self : other */
static PyObject *m_where(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"condition", "other", NULL};
    PyObject *a[2];
    if (wkpy_parse("where", args, nargs, kw, names, 2, a) < 0) return NULL;
    return where3(a[0], self, a[1]);
}

/* ---- parametric ops: affine, elu, clamp ---- */

/* Module forms take the tensor first: f(input, ...) -> method(input, ...). */
#define AS_FUNCTION(n)                                                                                         \
    static PyObject *f_##n(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {             \
        (void)mod;                                                                                             \
        if (nargs < 1 || !wkpy_check(args[0]))                                                                 \
            return PyErr_Format(PyExc_TypeError, #n "(): input must be a wick.Tensor (positional), got %s",    \
                                nargs < 1 ? "nothing" : Py_TYPE(args[0])->tp_name);                            \
        return m_##n(args[0], args + 1, nargs - 1, kw);                                                        \
    }

static PyObject *m_affine(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"mul", "add", NULL};
    PyObject *a[2];
    double mul, add;
    if (wkpy_parse("affine", args, nargs, kw, names, 0, a) < 0 || wkpy_double(a[0], 1.0, &mul) < 0 ||
        wkpy_double(a[1], 0.0, &add) < 0)
        return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_affine(t, mul, add));
    return wkpy_wrap(r);
}
AS_FUNCTION(affine)

static PyObject *m_elu(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"alpha", NULL};
    PyObject *a[1];
    double alpha;
    if (wkpy_parse("elu", args, nargs, kw, names, 0, a) < 0 || wkpy_double(a[0], 1.0, &alpha) < 0) return NULL;
    wk_tensor *t = wkpy_t(self), *r;
    WKPY_NOGIL(wkpy_big(t), r = wk_elu(t, alpha));
    return wkpy_wrap(r);
}
AS_FUNCTION(elu)

/* clamp(min=None, max=None): a missing bound is -inf / +inf (torch); a
 * Tensor bound is maximum / minimum with broadcasting. */
static wk_tensor *clamp_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw,
                           const char *name) {
    static const char *const names[] = {"min", "max", NULL};
    PyObject *a[2];
    if (wkpy_parse(name, args, nargs, kw, names, 0, a) < 0) return NULL;
    bool has_lo = a[0] && a[0] != Py_None, has_hi = a[1] && a[1] != Py_None;
    if (!has_lo && !has_hi) {
        PyErr_Format(PyExc_ValueError, "%s(): at least one of min and max must be given", name);
        return NULL;
    }
    wk_tensor *t = wkpy_t(self);
    if ((has_lo && wkpy_check(a[0])) || (has_hi && wkpy_check(a[1]))) {
        if (!has_lo) return apply_any(K_BINARY, WK_MINIMUM, self, a[1]);
        wk_tensor *lo = apply_any(K_BINARY, WK_MAXIMUM, self, a[0]);
        if (!lo || !has_hi) return lo;
        PyObject *lo_obj = wkpy_wrap(lo);
        if (!lo_obj) return NULL;
        wk_tensor *r = apply_any(K_BINARY, WK_MINIMUM, lo_obj, a[1]);
        Py_DECREF(lo_obj);
        return r;
    }
    double lo, hi;
    if (wkpy_double(a[0], -INFINITY, &lo) < 0 || wkpy_double(a[1], INFINITY, &hi) < 0) return NULL;
    wk_tensor *promoted = NULL, *r;
    if (((a[0] && is_float_number(a[0])) || (a[1] && is_float_number(a[1]))) &&
        !wk_dtype_is_float(wk_tensor_dtype(t))) { /* torch: a float bound on an integer tensor gives f32 */
        if (!(promoted = wk_to_dtype(t, WK_F32))) return wkpy_raise(), NULL;
        t = promoted;
    }
    WKPY_NOGIL(wkpy_big(t), r = wk_clamp(t, lo, hi));
    wk_tensor_free(promoted);
    if (!r) wkpy_raise();
    return r;
}

static PyObject *m_clamp(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    wk_tensor *r = clamp_of(self, args, nargs, kw, "clamp");
    return r ? wkpy_wrap(r) : NULL;
}
static PyObject *m_clamp_(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    wk_tensor *r = clamp_of(self, args, nargs, kw, "clamp_");
    return r ? into_self(self, r) : NULL;
}
AS_FUNCTION(clamp)

/* ---- fill_, zero_, copy_ ---- */

static PyObject *m_fill_(PyObject *self, PyObject *value) {
    double v;
    if (wkpy_double(value, 0, &v) < 0) return NULL;
    wk_status st;
    WKPY_NOGIL(wkpy_big(wkpy_t(self)), st = wk_fill_(wkpy_t(self), v));
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(self);
}

static PyObject *m_zero_(PyObject *self, PyObject *unused) {
    (void)unused;
    wk_status st;
    WKPY_NOGIL(wkpy_big(wkpy_t(self)), st = wk_zero_(wkpy_t(self)));
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(self);
}

/* copy_(src): src broadcast to self's shape, converted to its dtype and
 * device (torch's copy_). */
static PyObject *m_copy_(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"src", "non_blocking", NULL};
    PyObject *a[2];
    if (wkpy_parse("copy_", args, nargs, kw, names, 1, a) < 0) return NULL;
    wk_tensor *dst = wkpy_t(self);
    bool owned;
    wk_tensor *src = operand(a[0], dst, &owned);
    if (!src) return NULL;
    wk_tensor *tmp[3] = {NULL, NULL, NULL};
    const wk_tensor *s = src;
    if (wk_tensor_dtype(s) != wk_tensor_dtype(dst)) s = tmp[0] = wk_to_dtype(s, wk_tensor_dtype(dst));
    if (s && wk_tensor_device(s) != wk_tensor_device(dst)) s = tmp[1] = wk_to_device(s, wk_tensor_device(dst));
    if (s) s = tmp[2] = wk_broadcast_as(s, wk_shape(dst), wk_rank(dst));
    wk_status st = WK_ERR_ARG;
    if (s) WKPY_NOGIL(wkpy_big(dst), st = wk_copy_(dst, s));
    for (int i = 0; i < 3; i++) wk_tensor_free(tmp[i]);
    if (owned) wk_tensor_free(src);
    if (st != WK_OK) return wkpy_raise();
    return Py_NewRef(self);
}

/* ---- tables ---- */

/* Hand-written entries come first: for a name listed twice the first
 * method wins (the type's dict keeps the first), so a more precise doc
 * here shadows the generated one of the same op. */
static PyMethodDef elementwise_methods[] = {
    {"gelu", NOARGS(m_gelu),
     "gelu()\n\nGELU, the tanh approximation (torch's gelu(approximate='tanh')); gelu_erf() is the exact erf "
     "form (torch's default). Float dtypes only."},
    {"round", NOARGS(m_round), "round()\n\nRound half away from zero (C round; torch rounds half to even)."},
    WK_UNARY_OPS(UNARY_METHOD_DEFS)
    ALIAS_METHOD_DEFS(reciprocal, recip)
    ALIAS_METHOD_DEFS(square, sqr)
    ALIAS_METHOD_DEFS(negative, neg)
    WK_BINARY_OPS(BINARY_METHOD_DEFS)
    WK_CMP_OPS(CMP_METHOD_DEFS)
    {"where", FAST(m_where), "where(condition, other)\n\ncondition ? self : other elementwise (torch's "
                             "Tensor.where); other may be a number."},
    {"affine", FAST(m_affine), "affine(mul=1.0, add=0.0)\n\nself * mul + add in one pass (integers compute in "
                               "double and convert back)."},
    {"elu", FAST(m_elu), "elu(alpha=1.0)\n\nELU: x > 0 ? x : alpha * (exp(x) - 1). Float dtypes only."},
    {"clamp", FAST(m_clamp),
     "clamp(min=None, max=None)\n\nEach element limited to [min, max]; a missing bound is unlimited (torch). "
     "Number bounds use wk_clamp (min > max is wick.ArgError, torch would give max); Tensor bounds are "
     "maximum / minimum with broadcasting."},
    {"clip", FAST(m_clamp), "clip(min=None, max=None)\n\nThe same as clamp."},
    {"clamp_", FAST(m_clamp_), "clamp_(min=None, max=None)\n\nIn place clamp; returns self."},
    {"clip_", FAST(m_clamp_), "clip_(min=None, max=None)\n\nThe same as clamp_."},
    {"fill_", ONE(m_fill_), "fill_(value, /)\n\nEvery element set to value (a number); returns self."},
    {"zero_", NOARGS(m_zero_), "zero_()\n\nEvery element set to 0; returns self."},
    {"copy_", FAST(m_copy_),
     "copy_(src, non_blocking=False)\n\nsrc's values written into self: src (a Tensor, number, array or list) is "
     "broadcast to self's shape and converted to self's dtype and device; returns self."},
    {NULL, NULL, 0, NULL},
};

/* For module functions the last one added wins (PyModule_AddFunctions sets
 * attributes in order): the shadowing entries come last here. */
static PyMethodDef elementwise_functions[] = {
    WK_UNARY_OPS(UNARY_FUNCTION_DEFS)
    ALIAS_FUNCTION_DEFS(reciprocal, recip)
    ALIAS_FUNCTION_DEFS(square, sqr)
    ALIAS_FUNCTION_DEFS(negative, neg)
    WK_BINARY_OPS(BINARY_FUNCTION_DEFS)
    WK_CMP_OPS(CMP_FUNCTION_DEFS)
    {"where", FAST(f_where),
     "where(condition, input, other)\n\ncondition (an integer tensor, nonzero = true) ? input : other, all "
     "three broadcast; input or other may be a Python number."},
    {"affine", FAST(f_affine), "affine(input, /, mul=1.0, add=0.0)\n\ninput * mul + add in one pass."},
    {"elu", FAST(f_elu), "elu(input, /, alpha=1.0)\n\nELU (float dtypes)."},
    {"clamp", FAST(f_clamp), "clamp(input, /, min=None, max=None)\n\nSee Tensor.clamp."},
    {"clip", FAST(f_clamp), "clip(input, /, min=None, max=None)\n\nThe same as clamp."},
    {"gelu", ONE(f_gelu), "gelu(input)\n\nGELU, the tanh approximation; gelu_erf(input) is the exact form."},
    {"round", ONE(f_round), "round(input)\n\nRound half away from zero (C round; torch rounds half to even)."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_elementwise = {elementwise_methods, NULL, elementwise_functions, NULL};
