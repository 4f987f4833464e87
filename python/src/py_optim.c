/* Training from Python over train.h: the optimizers (wick.optim.SGD / Adam /
 * AdamW, C types over wk_optimizer), gradient clipping, and checkpoints.
 * They read and write the gradients of autograd.c's store (wkpy_grads),
 * under its lock; a step runs with the GIL released. */
#include "wkpy.h"
#include "tensor/tensor.h" /* ->node: a parameter's identity, whatever its Python wrapper */
#include "wick/train.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* PyErr_Format has no %g: format with C's printf, then raise ValueError */
static void value_error(const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    PyErr_SetString(PyExc_ValueError, buf);
}

typedef struct {
    PyObject_HEAD
    wk_optimizer *opt;
    PyObject *params; /* a tuple of the Tensors: they stay alive (and keep their gradients) as long as we do */
} optimizer;

static PyTypeObject optimizer_type;

/* params: any iterable of Tensors (model.parameters() is a generator) */
static PyObject *param_tuple(PyObject *params, const char *fname) {
    if (wkpy_check(params)) {
        PyErr_Format(PyExc_TypeError, "%s(): params must be an iterable of Tensors, got one Tensor", fname);
        return NULL;
    }
    PyObject *t = PySequence_Tuple(params);
    if (!t) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!wkpy_check(PyTuple_GET_ITEM(t, i))) {
            PyErr_Format(PyExc_TypeError, "%s(): parameter %zd is a %s, not a wick.Tensor (parameter groups are not "
                         "supported)", fname, i, Py_TYPE(PyTuple_GET_ITEM(t, i))->tp_name);
            Py_DECREF(t);
            return NULL;
        }
    if (n == 0) {
        PyErr_Format(PyExc_ValueError, "%s(): got an empty parameter list", fname);
        Py_DECREF(t);
        return NULL;
    }
    if (n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s(): too many parameters", fname);
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

/* Make the object; cfg's zero fields are wick's defaults, so lr 0 is set
 * after creation. */
static PyObject *make(PyTypeObject *type, const char *fname, PyObject *params, wk_optim_config *cfg) {
    PyObject *ps = param_tuple(params, fname);
    if (!ps) return NULL;
    int n = (int)PyTuple_GET_SIZE(ps);
    wk_tensor **ts = PyMem_Malloc(sizeof *ts * (size_t)n);
    if (!ts) {
        Py_DECREF(ps);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < n; i++) ts[i] = wkpy_t(PyTuple_GET_ITEM(ps, i));
    bool lr0 = cfg->lr == 0.0;
    wk_optimizer *opt = wk_optimizer_new(cfg, ts, n);
    PyMem_Free(ts);
    if (opt && lr0 && wk_optimizer_set_lr(opt, 0.0) != WK_OK) {
        wk_optimizer_free(opt);
        opt = NULL;
    }
    if (!opt) {
        Py_DECREF(ps);
        return wkpy_raise();
    }
    optimizer *o = (optimizer *)type->tp_alloc(type, 0);
    if (!o) {
        wk_optimizer_free(opt);
        Py_DECREF(ps);
        return NULL;
    }
    o->opt = opt;
    o->params = ps;
    return (PyObject *)o;
}

static int nonneg(const char *fname, const char *what, double v) {
    if (v >= 0.0 && isfinite(v)) return 0;
    value_error("%s(): invalid %s %g (finite, >= 0)", fname, what, v);
    return -1;
}

static PyObject *sgd_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"params", "lr", "momentum", "dampening", "weight_decay", "nesterov", NULL};
    PyObject *params;
    double lr, mom = 0, damp = 0, wd = 0;
    int nesterov = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|dddp:SGD", names, &params, &lr, &mom, &damp, &wd, &nesterov))
        return NULL;
    if (nonneg("SGD", "lr", lr) < 0 || nonneg("SGD", "momentum", mom) < 0 || nonneg("SGD", "weight_decay", wd) < 0)
        return NULL;
    if (nesterov && (mom <= 0 || damp != 0)) {
        PyErr_SetString(PyExc_ValueError, "SGD(): nesterov momentum requires a momentum and zero dampening");
        return NULL;
    }
    wk_optim_config c = {.kind = WK_SGD, .lr = lr, .momentum = mom, .dampening = damp, .weight_decay = wd,
                         .nesterov = nesterov};
    return make(type, "SGD", params, &c);
}

/* Adam and AdamW: one parser, AdamW's weight decay defaulting to 1e-2 */
static PyObject *adam_like(PyTypeObject *type, PyObject *args, PyObject *kw, const char *fname, wk_optimizer_kind k,
                           double wd_default) {
    static char *names[] = {"params", "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", NULL};
    char fmt[32];
    snprintf(fmt, sizeof fmt, "O|d(dd)ddpp:%s", fname);
    PyObject *params;
    double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = wd_default;
    int amsgrad = 0, maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, names, &params, &lr, &b1, &b2, &eps, &wd, &amsgrad, &maximize))
        return NULL;
    if (amsgrad || maximize) {
        PyErr_Format(PyExc_ValueError, "%s(): amsgrad and maximize are not supported by wick", fname);
        return NULL;
    }
    if (nonneg(fname, "lr", lr) < 0 || nonneg(fname, "weight_decay", wd) < 0) return NULL;
    if (!(b1 > 0 && b1 < 1) || !(b2 > 0 && b2 < 1)) {
        /* 0 is valid in torch but means "the default" in wk_optim_config */
        value_error("%s(): betas (%g, %g) must be in (0, 1)", fname, b1, b2);
        return NULL;
    }
    if (!(eps > 0) || !isfinite(eps)) {
        value_error("%s(): eps %g must be finite and > 0", fname, eps);
        return NULL;
    }
    wk_optim_config c = {.kind = k, .lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd};
    return make(type, fname, params, &c);
}
static PyObject *adam_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    return adam_like(type, args, kw, "Adam", WK_ADAM, 0.0);
}
static PyObject *adamw_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    return adam_like(type, args, kw, "AdamW", WK_ADAMW, 1e-2);
}

static void opt_dealloc(optimizer *self) {
    PyObject_GC_UnTrack(self);
    wk_optimizer_free(self->opt);
    Py_CLEAR(self->params);
    Py_TYPE(self)->tp_free((PyObject *)self);
}
static int opt_traverse(optimizer *self, visitproc visit, void *arg) {
    Py_VISIT(self->params);
    return 0;
}

static PyObject *m_step(optimizer *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"closure", NULL};
    PyObject *a[1], *loss = NULL;
    if (wkpy_parse("step", args, nargs, kw, names, 0, a) < 0) return NULL;
    if (a[0] && a[0] != Py_None && !(loss = PyObject_CallNoArgs(a[0]))) return NULL; /* torch: loss = closure() */
    wk_status st;
    Py_BEGIN_ALLOW_THREADS wkpy_grads_lock_nogil();
    st = wk_optimizer_step(self->opt, wkpy_grads);
    wkpy_grads_unlock();
    Py_END_ALLOW_THREADS
    if (st != WK_OK) {
        Py_XDECREF(loss);
        return wkpy_raise();
    }
    return loss ? loss : Py_NewRef(Py_None);
}

/* Drop (or zero) the gradients of params; the old gradients are freed
 * after the lock is let go (numpy-backed memory calls back into Python). */
static int zero_grads(PyObject *ps, bool to_none) {
    Py_ssize_t n = PyTuple_GET_SIZE(ps);
    wk_tensor **old = PyMem_Calloc((size_t)(n ? n : 1), sizeof *old);
    if (!old) {
        PyErr_NoMemory();
        return -1;
    }
    wk_status st = WK_OK;
    wkpy_grads_lock();
    for (Py_ssize_t i = 0; i < n && st == WK_OK; i++) {
        wk_tensor *p = wkpy_t(PyTuple_GET_ITEM(ps, i)), *g = wk_grad(wkpy_grads, p);
        if (!g) continue;
        old[i] = wk_tensor_retain(g);
        if (to_none) {
            st = wk_grad_set(wkpy_grads, p, NULL);
            continue;
        }
        wk_no_grad_begin();
        wk_tensor *z = wk_zeros_like(p);
        wk_no_grad_end();
        st = z ? wk_grad_set(wkpy_grads, p, z) : wk_last_status();
        wk_tensor_free(z); /* the store took its own reference */
    }
    wkpy_grads_unlock();
    for (Py_ssize_t i = 0; i < n; i++) wk_tensor_free(old[i]);
    PyMem_Free(old);
    return st == WK_OK ? 0 : wkpy_raise_int();
}

static PyObject *m_zero_grad(optimizer *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"set_to_none", NULL};
    PyObject *a[1];
    bool to_none;
    if (wkpy_parse("zero_grad", args, nargs, kw, names, 0, a) < 0 || wkpy_bool(a[0], true, &to_none) < 0 ||
        zero_grads(self->params, to_none) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *get_lr(optimizer *self, void *c) {
    (void)c;
    return PyFloat_FromDouble(wk_optimizer_lr(self->opt));
}
static int set_lr(optimizer *self, PyObject *v, void *c) {
    (void)c;
    double lr;
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete lr");
        return -1;
    }
    if (wkpy_double(v, 0, &lr) < 0) return -1;
    return wk_optimizer_set_lr(self->opt, lr) == WK_OK ? 0 : wkpy_raise_int();
}
static PyObject *get_steps(optimizer *self, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)wk_optimizer_steps(self->opt));
}
static PyObject *get_params(optimizer *self, void *c) {
    (void)c;
    return Py_NewRef(self->params);
}

static PyMethodDef opt_methods[] = {
    {"step", (PyCFunction)(void (*)(void))m_step, METH_FASTCALL | METH_KEYWORDS,
     "step(closure=None)\nOne update of every parameter from its .grad (parameters without one are skipped), "
     "in place, with the GIL released. closure: called first, its value returned (torch's form)."},
    {"zero_grad", (PyCFunction)(void (*)(void))m_zero_grad, METH_FASTCALL | METH_KEYWORDS,
     "zero_grad(set_to_none=True)\nDrop the parameters' gradients (set_to_none=False: replace them by zeros)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef opt_getset[] = {
    {"lr", (getter)get_lr, (setter)set_lr, "The learning rate (settable: schedules).", NULL},
    {"steps", (getter)get_steps, NULL, "Steps taken so far.", NULL},
    {"params", (getter)get_params, NULL, "The parameters, a tuple.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject optimizer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.optim.Optimizer",
    .tp_basicsize = sizeof(optimizer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The base of wick's optimizers (over wk_optimizer, train.h).",
    .tp_dealloc = (destructor)opt_dealloc,
    .tp_traverse = (traverseproc)opt_traverse,
    .tp_methods = opt_methods,
    .tp_getset = opt_getset,
};

#define OPT_TYPE(var, name, newfn, doc)                                                                       \
    static PyTypeObject var = {                                                                                \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.optim." name,                                           \
        .tp_basicsize = sizeof(optimizer),                                                                     \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,                                                   \
        .tp_doc = doc,                                                                                         \
        .tp_dealloc = (destructor)opt_dealloc,                                                                 \
        .tp_traverse = (traverseproc)opt_traverse,                                                             \
        .tp_base = &optimizer_type,                                                                            \
        .tp_new = newfn,                                                                                       \
    };
OPT_TYPE(sgd_type, "SGD", sgd_new,
         "SGD(params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False)\n"
         "torch.optim.SGD: p -= lr * (g + weight_decay * p), with (Nesterov) momentum.")
OPT_TYPE(adam_type, "Adam", adam_new,
         "Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0)\n"
         "torch.optim.Adam (weight_decay: L2 added to the gradient).")
OPT_TYPE(adamw_type, "AdamW", adamw_new,
         "AdamW(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01)\n"
         "torch.optim.AdamW (decoupled weight decay: p -= lr * weight_decay * p).")

/* ---- clip_grad_norm_ ---- */

static PyObject *f_clip_grad_norm_(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"parameters", "max_norm", "norm_type", NULL};
    PyObject *a[3];
    double max_norm, norm_type;
    if (wkpy_parse("clip_grad_norm_", args, nargs, kw, names, 2, a) < 0 || wkpy_double(a[1], 0, &max_norm) < 0 ||
        wkpy_double(a[2], 2.0, &norm_type) < 0)
        return NULL;
    if (norm_type != 2.0) {
        value_error("clip_grad_norm_(): norm_type %g: wick clips by the L2 norm only", norm_type);
        return NULL;
    }
    PyObject *ps = wkpy_check(a[0]) ? PyTuple_Pack(1, a[0]) : PySequence_Tuple(a[0]);
    if (!ps) return NULL;
    int n = 0;
    wk_tensor **ts = wkpy_tensor_list(ps, "clip_grad_norm_", &n);
    if (!ts) {
        Py_DECREF(ps);
        return NULL;
    }
    double total = 0;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS wkpy_grads_lock_nogil();
    st = wk_clip_grad_norm(wkpy_grads, ts, n, max_norm, &total);
    wkpy_grads_unlock();
    Py_END_ALLOW_THREADS
    /* the norm as a 0-d tensor in the parameters' dtype, as torch */
    wk_dtype dt = n && wk_dtype_is_float(wk_tensor_dtype(ts[0])) ? wk_tensor_dtype(ts[0]) : WK_F32;
    PyMem_Free(ts);
    Py_DECREF(ps);
    if (st != WK_OK) return wkpy_raise();
    return wkpy_wrap(wk_full(NULL, 0, total, dt, wk_cpu()));
}

/* ---- checkpoints ---- */

/* t is parameter p for a checkpoint: p itself (its node), or a detached
 * view of all of it (a state_dict's entry: same storage and layout). */
static bool same_param(const wk_tensor *t, const wk_tensor *p) {
    if (t->node && t->node == p->node) return true;
    const wk_layout *a = &t->layout, *b = &p->layout;
    if (t->storage != p->storage || t->dtype != p->dtype || a->rank != b->rank || a->offset != b->offset) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d] || a->stride[d] != b->stride[d]) return false;
    return true;
}

/* names / tensors from a dict, in the optimizer's parameter order when one
 * is given (wick matches its state to parameters by position, and wants the
 * parameters themselves: a detached entry is replaced by its parameter). */
static int checkpoint_lists(PyObject *dict, PyObject *optobj, const char *fname, const char ***names, wk_tensor ***ts,
                            int *n) {
    if (!PyDict_Check(dict)) {
        PyErr_Format(PyExc_TypeError, "%s(): tensors must be a dict of name -> Tensor, got %s", fname,
                     Py_TYPE(dict)->tp_name);
        return -1;
    }
    Py_ssize_t k = PyDict_GET_SIZE(dict), pos = 0, i = 0;
    *names = PyMem_Calloc((size_t)(k ? k : 1), sizeof **names);
    *ts = PyMem_Calloc((size_t)(k ? k : 1), sizeof **ts);
    if (!*names || !*ts) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key, *val;
    while (PyDict_Next(dict, &pos, &key, &val)) {
        if (!PyUnicode_Check(key) || !wkpy_check(val)) {
            PyErr_Format(PyExc_TypeError, "%s(): tensors must map str to Tensor (got %s -> %s)", fname,
                         Py_TYPE(key)->tp_name, Py_TYPE(val)->tp_name);
            return -1;
        }
        if (!((*names)[i] = PyUnicode_AsUTF8(key))) return -1; /* the dict keeps the str alive */
        (*ts)[i++] = wkpy_t(val);
    }
    *n = (int)k;
    if (!optobj || optobj == Py_None) return 0;
    if (!PyObject_TypeCheck(optobj, &optimizer_type)) {
        PyErr_Format(PyExc_TypeError, "%s(): optimizer must be a wick.optim optimizer, got %s", fname,
                     Py_TYPE(optobj)->tp_name);
        return -1;
    }
    PyObject *ps = ((optimizer *)optobj)->params;
    Py_ssize_t np = PyTuple_GET_SIZE(ps);
    if (np != k) {
        PyErr_Format(PyExc_ValueError, "%s(): the optimizer has %zd parameters, the dict %zd tensors", fname, np, k);
        return -1;
    }
    for (Py_ssize_t j = 0; j < np; j++) { /* selection into position j */
        wk_tensor *p = wkpy_t(PyTuple_GET_ITEM(ps, j));
        Py_ssize_t f = j;
        while (f < k && !same_param((*ts)[f], p)) f++;
        if (f == k) {
            PyErr_Format(PyExc_ValueError, "%s(): the optimizer's parameter %zd is not in the dict", fname, j);
            return -1;
        }
        const char *nm = (*names)[f];
        wk_tensor *t = (*ts)[f];
        (*names)[f] = (*names)[j];
        (*ts)[f] = (*ts)[j];
        (*names)[j] = nm;
        (*ts)[j] = t->node == p->node ? t : p;
    }
    return 0;
}

static PyObject *checkpoint(PyObject *const *args, Py_ssize_t nargs, PyObject *kw, bool save) {
    static const char *const names[] = {"path", "tensors", "optimizer", NULL};
    const char *fname = save ? "save_checkpoint" : "load_checkpoint";
    PyObject *a[3], *path = NULL;
    const char **nm = NULL;
    wk_tensor **ts = NULL;
    int n = 0;
    PyObject *res = NULL;
    if (wkpy_parse(fname, args, nargs, kw, names, 2, a) < 0 || !PyUnicode_FSConverter(a[0], &path)) return NULL;
    if (checkpoint_lists(a[1], a[2], fname, &nm, &ts, &n) == 0) {
        wk_optimizer *opt = a[2] && a[2] != Py_None ? ((optimizer *)a[2])->opt : NULL;
        const char *p = PyBytes_AS_STRING(path);
        wk_status st;
        /* a load writes the parameters: hold the store lock so no step runs at once */
        Py_BEGIN_ALLOW_THREADS wkpy_grads_lock_nogil();
        st = save ? wk_checkpoint_save(p, nm, ts, n, opt) : wk_checkpoint_load(p, nm, ts, n, opt);
        wkpy_grads_unlock();
        Py_END_ALLOW_THREADS
        res = wkpy_status(st);
    }
    PyMem_Free(nm);
    PyMem_Free(ts);
    Py_DECREF(path);
    return res;
}
static PyObject *f_save_checkpoint(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return checkpoint(args, nargs, kw, true);
}
static PyObject *f_load_checkpoint(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return checkpoint(args, nargs, kw, false);
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef optim_functions[] = {
    {"clip_grad_norm_", FAST(f_clip_grad_norm_),
     "clip_grad_norm_(parameters, max_norm, norm_type=2.0)\n"
     "Scale the parameters' gradients so their joint L2 norm is at most max_norm "
     "(torch.nn.utils.clip_grad_norm_); returns the norm before clipping (a 0-d tensor)."},
    {"save_checkpoint", FAST(f_save_checkpoint),
     "save_checkpoint(path, tensors, optimizer=None)\n"
     "Write tensors (a dict name -> Tensor) and, with optimizer, its state (moments, step counts, config) to "
     "a safetensors file. With optimizer, the dict holds exactly its parameters, in any order (or detached "
     "views of them: a module's state_dict())."},
    {"load_checkpoint", FAST(f_load_checkpoint),
     "load_checkpoint(path, tensors, optimizer=None)\n"
     "Read a save_checkpoint file back into the dict's tensors, in place (shapes and dtypes must match; a "
     "missing name is wick.FormatError) and, with optimizer, its state."},
    {NULL, NULL, 0, NULL},
};

static int optim_init(PyObject *m) {
    if (PyType_Ready(&optimizer_type) < 0 || PyType_Ready(&sgd_type) < 0 || PyType_Ready(&adam_type) < 0 ||
        PyType_Ready(&adamw_type) < 0)
        return -1;
    /* wick.optim (python/wick/optim.py) re-exports them without the underscore */
    if (PyModule_AddObjectRef(m, "_Optimizer", (PyObject *)&optimizer_type) < 0 ||
        PyModule_AddObjectRef(m, "_SGD", (PyObject *)&sgd_type) < 0 ||
        PyModule_AddObjectRef(m, "_Adam", (PyObject *)&adam_type) < 0 ||
        PyModule_AddObjectRef(m, "_AdamW", (PyObject *)&adamw_type) < 0)
        return -1;
    return 0;
}

const wkpy_part wkpy_part_optim = {NULL, NULL, optim_functions, optim_init};
