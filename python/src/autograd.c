/* Autograd from Python, PyTorch's model over wick's (include/wick/autograd.h):
 * gradients live in one process-wide store, wkpy_grads, that `t.grad` reads
 * and `t.backward()` adds to, so "the gradient is on the tensor" as in torch
 * while wick keeps them out of its tensors.
 *
 * Locking: the store is one hash table; a lock guards it. backward runs with
 * the GIL released and the lock held (a long pass must not stop other Python
 * threads); every other user takes the lock too, releasing the GIL while it
 * waits (the thread holding the lock may need the GIL: freeing numpy-backed
 * memory calls back into Python). The lock remembers its owner so that such
 * a callback, which can free a Tensor and so reach the leaf-dealloc hook on
 * the thread that holds the lock, does not wait for itself.
 *
 * Leaves that die: a Tensor that is the last reference to a tracked leaf
 * takes its gradient with it (tensor_dealloc calls wkpy_on_leaf_dealloc), so
 * a loop making fresh leaves does not grow the store. Nothing can read that
 * gradient any more: readers need a tensor with the leaf's node, and the
 * only other holders are graph nodes and optimizers (which keep Python
 * references to their parameters). A leaf that dies before a backward
 * reaches it is swept later (maybe_prune_locked). */
#include "wkpy.h"
#include "tensor/tensor.h" /* refs, for the dealloc hook */
#include "pythread.h"
#include <stdatomic.h>
#include <string.h>

wk_grad_store *wkpy_grads;
wkpy_backward_hook wkpy_next_backward;
static PyThread_type_lock g_lock;
static _Atomic unsigned long g_owner; /* thread ident of the lock's holder, 0 when free */

static bool wkpy_grads_mine(void) { return atomic_load(&g_owner) == PyThread_get_thread_ident(); }

void wkpy_grads_lock_nogil(void) {
    PyThread_acquire_lock(g_lock, WAIT_LOCK);
    atomic_store(&g_owner, PyThread_get_thread_ident());
}

void wkpy_grads_lock(void) {
    if (PyThread_acquire_lock(g_lock, NOWAIT_LOCK)) {
        atomic_store(&g_owner, PyThread_get_thread_ident());
        return;
    }
    Py_BEGIN_ALLOW_THREADS wkpy_grads_lock_nogil();
    Py_END_ALLOW_THREADS
}

void wkpy_grads_unlock(void) {
    atomic_store(&g_owner, 0);
    PyThread_release_lock(g_lock);
}

/* Drop t's gradient (tracked t), the old one freed after the lock is let go:
 * its memory may be numpy's, whose release runs Python code. */
static void drop_grad_locked(const wk_tensor *t, wk_tensor **old) {
    wk_tensor *g = wk_grad(wkpy_grads, t);
    *old = g ? wk_tensor_retain(g) : NULL;
    if (g) wk_grad_set(wkpy_grads, t, NULL); /* cannot fail: t is tracked, g exists */
}

static void on_leaf_dealloc(wk_tensor *t) {
    if (!wk_is_leaf(t) || atomic_load(&t->refs) != 1) return;
    if (wkpy_grads_mine()) return; /* a callback inside a locked section: leave it (see the top) */
    wk_tensor *old;
    wkpy_grads_lock();
    drop_grad_locked(t, &old);
    wkpy_grads_unlock();
    wk_tensor_free(old);
}

/* Leaves dropped before a backward reached them (a leaf made inside a
 * function that returns only the loss) escape the hook: their entries are
 * added after they died. A prune sweeps them (nodes only the store holds),
 * when the store has doubled since the last one: O(1) amortized per entry.
 * Lock held. */
static int64_t g_prune_at = 1024;
static void maybe_prune_locked(void) {
    if (wk_grad_store_count(wkpy_grads) < g_prune_at) return;
    wk_grad_store_prune(wkpy_grads);
    int64_t n = wk_grad_store_count(wkpy_grads);
    g_prune_at = n * 2 > 1024 ? n * 2 : 1024;
}

/* ---- Tensor.backward / .grad ---- */

static int retain_default(PyObject *retain, bool create, bool *out) { return wkpy_bool(retain, create, out); }

static PyObject *m_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"gradient", "retain_graph", "create_graph", NULL};
    PyObject *a[3];
    wk_backward_opts o = {0};
    if (wkpy_parse("backward", args, nargs, kw, names, 0, a) < 0 || wkpy_bool(a[2], false, &o.create_graph) < 0 ||
        retain_default(a[1], o.create_graph, &o.keep_graph) < 0)
        return NULL;
    bool owned = false;
    wk_tensor *go = NULL;
    if (a[0] && a[0] != Py_None && !(go = wkpy_operand(a[0], wkpy_t(self), &owned))) return NULL;
    o.grad_output = go;
    wk_status st;
    wkpy_backward_hook h = wkpy_next_backward; /* one shot: taken under the GIL */
    wkpy_next_backward = (wkpy_backward_hook){0};
    Py_BEGIN_ALLOW_THREADS wkpy_grads_lock_nogil();
    st = h.run ? h.run(h.ctx, wkpy_t(self), wkpy_grads, &o) : wk_backward(wkpy_t(self), wkpy_grads, &o);
    maybe_prune_locked();
    wkpy_grads_unlock();
    Py_END_ALLOW_THREADS
    if (h.release) h.release(h.ctx);
    if (owned) wk_tensor_free(go);
    return wkpy_status(st);
}

static PyObject *get_grad(PyObject *self, void *c) {
    (void)c;
    wk_tensor *t = wkpy_t(self);
    if (!wk_is_tracked(t)) Py_RETURN_NONE;
    wkpy_grads_lock();
    wk_tensor *g = wk_grad(wkpy_grads, t);
    if (g) wk_tensor_retain(g); /* the store's tensors are in no scope: a plain new reference */
    wkpy_grads_unlock();
    if (!g) Py_RETURN_NONE;
    return wkpy_wrap(g);
}

static int set_grad(PyObject *self, PyObject *v, void *c) {
    (void)c;
    wk_tensor *t = wkpy_t(self), *old = NULL;
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete .grad (assign None)");
        return -1;
    }
    if (v == Py_None) {
        if (!wk_is_tracked(t)) return 0;
        wkpy_grads_lock();
        drop_grad_locked(t, &old);
        wkpy_grads_unlock();
        wk_tensor_free(old);
        return 0;
    }
    if (!wkpy_check(v)) {
        PyErr_Format(PyExc_TypeError, "assigned grad must be a wick.Tensor or None, got %s", Py_TYPE(v)->tp_name);
        return -1;
    }
    wkpy_grads_lock();
    old = wk_grad(wkpy_grads, t);
    if (old) wk_tensor_retain(old);
    wk_status st = wk_grad_set(wkpy_grads, t, wkpy_t(v));
    wkpy_grads_unlock();
    wk_tensor_free(old);
    return st == WK_OK ? 0 : wkpy_raise_int();
}

static PyObject *get_grad_fn(PyObject *self, void *c) {
    (void)c;
    const char *n = wk_grad_fn_name(wkpy_t(self));
    if (!n || !strcmp(n, "leaf")) Py_RETURN_NONE; /* torch: leaves have no grad_fn */
    return PyUnicode_FromString(n);
}

static PyObject *m_requires_grad_(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"requires_grad", NULL};
    PyObject *a[1];
    bool on;
    if (wkpy_parse("requires_grad_", args, nargs, kw, names, 0, a) < 0 || wkpy_bool(a[0], true, &on) < 0) return NULL;
    wk_tensor *t = wkpy_t(self);
    /* torch: turning it off on a non-leaf is an error, turning it on a no-op */
    if (!(on && wk_is_tracked(t)) && wk_requires_grad(t, on) != WK_OK) return wkpy_raise();
    return Py_NewRef(self);
}

static PyObject *m_detach(PyObject *self, PyObject *unused) {
    (void)unused;
    return wkpy_wrap(wk_detach(wkpy_t(self)));
}

static PyObject *m_retain_grad(PyObject *self, PyObject *unused) {
    (void)unused;
    wk_tensor *t = wkpy_t(self);
    if (wk_is_leaf(t)) Py_RETURN_NONE; /* a leaf's gradient is always kept */
    return wkpy_status(wk_retain_grad(t));
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef autograd_methods[] = {
    {"backward", FAST(m_backward),
     "backward(gradient=None, retain_graph=None, create_graph=False)\n"
     "Run backward from this tensor; gradients add into every leaf's .grad (and retain_grad tensors'). "
     "gradient: dL/dself (needed unless self has one element). retain_graph (default: create_graph) keeps "
     "the graph for another backward; create_graph records the pass (higher-order gradients). The GIL is "
     "released during the pass."},
    {"requires_grad_", FAST(m_requires_grad_),
     "requires_grad_(requires_grad=True)\nStart (or stop) tracking this leaf; returns self."},
    {"detach", (PyCFunction)m_detach, METH_NOARGS,
     "detach()\nA new untracked tensor sharing this one's memory."},
    {"retain_grad", (PyCFunction)m_retain_grad, METH_NOARGS,
     "retain_grad()\nKeep this non-leaf's gradient in .grad after backward."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef autograd_getset[] = {
    {"grad", (getter)get_grad, (setter)set_grad,
     "The gradient backward accumulated for this tensor, or None. Assign a tensor of the same shape, dtype "
     "and device to replace it, None to drop it.", NULL},
    {"grad_fn", (getter)get_grad_fn, NULL,
     "The name of the op that recorded this tensor ('wk_mul', ...), or None for leaves and untracked tensors.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- wick.autograd.grad ---- */

/* outputs / inputs: a Tensor or a sequence of them (a new reference to a
 * sequence either way) */
static PyObject *as_seq(PyObject *o, const char *what) {
    if (wkpy_check(o)) return PyTuple_Pack(1, o);
    if (PyList_Check(o) || PyTuple_Check(o)) return PySequence_Tuple(o);
    PyErr_Format(PyExc_TypeError, "grad(): %s must be a wick.Tensor or a sequence of them, got %s", what,
                 Py_TYPE(o)->tp_name);
    return NULL;
}

/* Add the gradients of one output into acc (acc[i] NULL: takes g[i]). */
static wk_status add_into(wk_tensor **acc, wk_tensor **g, int n) {
    for (int i = 0; i < n; i++) {
        if (!acc[i]) {
            acc[i] = g[i];
            g[i] = NULL;
            continue;
        }
        wk_tensor *s = wk_add(acc[i], g[i]);
        if (!s) return wk_last_status();
        wk_tensor_free(acc[i]);
        wk_tensor_free(g[i]);
        g[i] = NULL;
        acc[i] = s;
    }
    return WK_OK;
}

static PyObject *f_grad(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", NULL};
    PyObject *a[5];
    bool create, retain;
    if (wkpy_parse("grad", args, nargs, kw, names, 2, a) < 0 || wkpy_bool(a[4], false, &create) < 0 ||
        retain_default(a[3], create, &retain) < 0)
        return NULL;
    PyObject *outs = as_seq(a[0], "outputs"), *gos = NULL, *ins = NULL, *res = NULL;
    wk_tensor **xs = NULL, **acc = NULL, **g = NULL;
    if (!outs) return NULL;
    int nx = 0, ny = (int)PyTuple_GET_SIZE(outs);
    for (int i = 0; i < ny; i++)
        if (!wkpy_check(PyTuple_GET_ITEM(outs, i))) {
            PyErr_Format(PyExc_TypeError, "grad(): output %d is not a wick.Tensor", i);
            goto done;
        }
    if (a[2] && a[2] != Py_None) {
        if (!(gos = wkpy_check(a[2]) ? PyTuple_Pack(1, a[2]) : PySequence_Tuple(a[2]))) goto done;
        if (PyTuple_GET_SIZE(gos) != ny) {
            PyErr_Format(PyExc_ValueError, "grad(): %d grad_outputs for %d outputs", (int)PyTuple_GET_SIZE(gos), ny);
            goto done;
        }
    }
    /* ins holds the inputs while the GIL is released (a[1] could be a list
     * another thread empties) */
    if (!(ins = as_seq(a[1], "inputs")) || !(xs = wkpy_tensor_list(ins, "grad", &nx))) goto done;
    acc = PyMem_Calloc((size_t)(nx ? nx : 1), sizeof *acc);
    g = PyMem_Calloc((size_t)(nx ? nx : 1), sizeof *g);
    if (!acc || !g) {
        PyErr_NoMemory();
        goto done;
    }
    wk_status st = WK_OK;
    for (int k = 0; st == WK_OK && k < ny; k++) {
        PyObject *go = gos ? PyTuple_GET_ITEM(gos, k) : Py_None;
        wk_tensor *y = wkpy_t(PyTuple_GET_ITEM(outs, k)), *got = NULL;
        bool owned = false;
        if (go != Py_None && !(got = wkpy_operand(go, y, &owned))) goto done;
        /* several outputs over one graph: keep it for all but the last */
        wk_backward_opts o = {.grad_output = got, .create_graph = create, .keep_graph = retain || k + 1 < ny};
        WKPY_NOGIL(true, st = wk_grad_of(y, xs, nx, &o, g));
        if (owned) wk_tensor_free(got);
        if (st == WK_OK) st = add_into(acc, g, nx);
    }
    if (st != WK_OK) {
        wkpy_raise();
        goto done;
    }
    if (!(res = PyTuple_New(nx))) goto done;
    for (int i = 0; i < nx; i++) {
        PyObject *w = wkpy_wrap(acc[i]);
        acc[i] = NULL;
        if (!w) {
            Py_CLEAR(res);
            goto done;
        }
        PyTuple_SET_ITEM(res, i, w);
    }
done:
    for (int i = 0; acc && i < nx; i++) wk_tensor_free(acc[i]);
    for (int i = 0; g && i < nx; i++) wk_tensor_free(g[i]);
    PyMem_Free(acc);
    PyMem_Free(g);
    PyMem_Free(xs);
    Py_XDECREF(gos);
    Py_XDECREF(ins);
    Py_DECREF(outs);
    return res;
}

static PyObject *f_is_grad_enabled(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyBool_FromLong(wk_grad_enabled());
}

static PyObject *f_store_count(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    wkpy_grads_lock();
    int64_t n = wk_grad_store_count(wkpy_grads);
    wkpy_grads_unlock();
    return PyLong_FromLongLong((long long)n);
}

static PyMethodDef autograd_functions[] = {
    {"_autograd_grad", FAST(f_grad),
     "grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False)\n"
     "The gradients of outputs (a tensor or a sequence: their vector-Jacobian products are summed) with "
     "respect to each of inputs, as a tuple; .grad is not touched. An input the outputs do not depend on "
     "gets zeros (torch raises unless allow_unused)."},
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS,
     "is_grad_enabled()\nWhether this thread records ops for autograd (False inside no_grad())."},
    {"_grad_store_count", f_store_count, METH_NOARGS,
     "_grad_store_count()\nHow many tensors hold a gradient (the process-wide store: for leak tests)."},
    {NULL, NULL, 0, NULL},
};

/* ---- no_grad / enable_grad / set_grad_enabled ----
 * wick's grad mode is a per-thread nesting count (wk_no_grad_begin/end).
 * Turning grading off adds one level; turning it on removes every level and
 * remembers how many, to restore them. */

static int mode_off(void) {
    wk_no_grad_begin();
    return -1;
}
static int mode_on(void) {
    int n = 0;
    while (!wk_grad_enabled()) {
        wk_no_grad_end();
        n++;
    }
    return n;
}
static int mode_apply(bool on) { return on ? mode_on() : mode_off(); }
static void mode_undo(int token) {
    if (token < 0) wk_no_grad_end();
    for (int i = 0; i < token; i++) wk_no_grad_begin();
}

typedef struct {
    PyObject_HEAD
    bool on;         /* the mode this object sets */
    bool applied;    /* set_grad_enabled: applied when made */
    int token;       /* what to undo on __exit__ */
} grad_mode;

static PyObject *grad_mode_make(PyTypeObject *type, bool on, bool apply_now) {
    grad_mode *o = (grad_mode *)type->tp_alloc(type, 0);
    if (!o) return NULL;
    o->on = on;
    o->applied = apply_now;
    o->token = apply_now ? mode_apply(on) : 0;
    return (PyObject *)o;
}

static int no_keywords(const char *fname, PyObject *kw) {
    if (!kw || !PyDict_GET_SIZE(kw)) return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", fname);
    return -1;
}

static PyObject *gm_call(grad_mode *self, PyObject *args, PyObject *kw);

/* no_grad() / enable_grad(): a mode object; no_grad(func), the bare
 * decorator @wick.no_grad: the decorated function at once */
static PyObject *plain_mode_new(PyTypeObject *type, PyObject *args, PyObject *kw, const char *fname, bool on) {
    if (no_keywords(fname, kw) < 0) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n > 1 || (n == 1 && !PyCallable_Check(PyTuple_GET_ITEM(args, 0)))) {
        PyErr_Format(PyExc_TypeError, "%s() takes no arguments (or, as a bare decorator, one function)", fname);
        return NULL;
    }
    PyObject *mode = grad_mode_make(type, on, false);
    if (!mode || n == 0) return mode;
    PyObject *f = gm_call((grad_mode *)mode, args, NULL);
    Py_DECREF(mode);
    return f;
}
static PyObject *no_grad_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    return plain_mode_new(type, args, kw, "no_grad", false);
}
static PyObject *enable_grad_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    return plain_mode_new(type, args, kw, "enable_grad", true);
}
static PyObject *set_grad_enabled_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"mode", NULL};
    int mode;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "p:set_grad_enabled", names, &mode)) return NULL;
    return grad_mode_make(type, mode, true); /* torch: takes effect when called, undone by __exit__ */
}

static PyObject *gm_enter(grad_mode *self, PyObject *u) {
    (void)u;
    if (!self->applied) self->token = mode_apply(self->on);
    self->applied = false;
    return Py_NewRef(self);
}
static PyObject *gm_exit(grad_mode *self, PyObject *args) {
    (void)args;
    mode_undo(self->token);
    self->token = 0;
    Py_RETURN_FALSE;
}

/* The decorator form: a callable that runs func under the mode, per call
 * (no state shared between calls, so threads can call it at once). */
typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *dict; /* functools.update_wrapper's __name__, __doc__, __wrapped__ ... */
    bool on;
    vectorcallfunc vectorcall;
} grad_mode_fn;

static PyTypeObject grad_mode_fn_type;

static PyObject *gmf_call(grad_mode_fn *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    int token = mode_apply(self->on);
    PyObject *r = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    mode_undo(token);
    return r;
}
static int gmf_traverse(grad_mode_fn *self, visitproc visit, void *arg) {
    Py_VISIT(self->func);
    Py_VISIT(self->dict);
    return 0;
}
static int gmf_clear(grad_mode_fn *self) {
    Py_CLEAR(self->func);
    Py_CLEAR(self->dict);
    return 0;
}
static void gmf_dealloc(grad_mode_fn *self) {
    PyObject_GC_UnTrack(self);
    gmf_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}
/* a decorated method binds like the function it wraps */
static PyObject *gmf_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *gm_call(grad_mode *self, PyObject *args, PyObject *kw) {
    PyObject *func;
    if (no_keywords("decorator", kw) < 0 || !PyArg_ParseTuple(args, "O:decorator", &func)) return NULL;
    if (!PyCallable_Check(func))
        return PyErr_Format(PyExc_TypeError, "a grad mode decorates a callable, got %s", Py_TYPE(func)->tp_name);
    if (self->applied) { /* @set_grad_enabled(False): the mode is per call, not from now on */
        mode_undo(self->token);
        self->token = 0;
        self->applied = false;
    }
    grad_mode_fn *f = PyObject_GC_New(grad_mode_fn, &grad_mode_fn_type);
    if (!f) return NULL;
    f->func = Py_NewRef(func);
    f->dict = NULL;
    f->on = self->on;
    f->vectorcall = (vectorcallfunc)gmf_call;
    PyObject_GC_Track(f);
    PyObject *ft = PyImport_ImportModule("functools");
    PyObject *r = ft ? PyObject_CallMethod(ft, "update_wrapper", "OO", (PyObject *)f, func) : NULL;
    Py_XDECREF(ft);
    if (!r) {
        Py_DECREF(f);
        return NULL;
    }
    Py_DECREF(r);
    return (PyObject *)f;
}

static PyGetSetDef gmf_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject grad_mode_fn_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick._grad_mode_function",
    .tp_basicsize = sizeof(grad_mode_fn),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A function run under a grad mode (made by @wick.no_grad() and friends).",
    .tp_dealloc = (destructor)gmf_dealloc,
    .tp_traverse = (traverseproc)gmf_traverse,
    .tp_clear = (inquiry)gmf_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(grad_mode_fn, vectorcall),
    .tp_descr_get = gmf_get,
    .tp_dictoffset = offsetof(grad_mode_fn, dict),
    .tp_getset = gmf_getset,
};

static PyMethodDef grad_mode_methods[] = {
    {"__enter__", (PyCFunction)gm_enter, METH_NOARGS, "__enter__()\nEnter the grad mode (per thread)."},
    {"__exit__", (PyCFunction)gm_exit, METH_VARARGS, "__exit__(*exc_info)\nRestore the grad mode in force before."},
    {NULL, NULL, 0, NULL},
};

#define GRAD_MODE_TYPE(var, name, newfn, doc)                                                                 \
    static PyTypeObject var = {                                                                                \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick." name,                                                 \
        .tp_basicsize = sizeof(grad_mode),                                                                     \
        .tp_flags = Py_TPFLAGS_DEFAULT,                                                                        \
        .tp_doc = doc,                                                                                         \
        .tp_new = newfn,                                                                                       \
        .tp_call = (ternaryfunc)gm_call,                                                                       \
        .tp_methods = grad_mode_methods,                                                                       \
    };
GRAD_MODE_TYPE(no_grad_type, "no_grad", no_grad_new,
               "no_grad()\nA context manager and decorator: nothing inside records for autograd (this thread; "
               "nestable). Parameter updates belong in one.")
GRAD_MODE_TYPE(enable_grad_type, "enable_grad", enable_grad_new,
               "enable_grad()\nA context manager and decorator: recording on inside, even within no_grad().")
GRAD_MODE_TYPE(set_grad_enabled_type, "set_grad_enabled", set_grad_enabled_new,
               "set_grad_enabled(mode)\nTurn recording on or off for this thread now (as a function) or for a "
               "with block (as a context manager, restored on exit), as torch.set_grad_enabled.")

static int autograd_init(PyObject *m) {
    if (!(g_lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return -1;
    }
    if (!(wkpy_grads = wk_grad_store_new())) return wkpy_raise_int();
    wkpy_on_leaf_dealloc = on_leaf_dealloc;
    /* the store lives as long as the process: tensors freed at interpreter
     * exit still reach the hook */
    PyTypeObject *types[] = {&grad_mode_fn_type, &no_grad_type, &enable_grad_type, &set_grad_enabled_type};
    const char *names[] = {NULL, "no_grad", "enable_grad", "set_grad_enabled"};
    for (int i = 0; i < 4; i++) {
        if (PyType_Ready(types[i]) < 0) return -1;
        if (names[i] && PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) return -1;
    }
    return 0;
}

const wkpy_part wkpy_part_autograd = {autograd_methods, autograd_getset, autograd_functions, autograd_init};
