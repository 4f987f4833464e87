/* The dist floor from Python (include/wick/dist.h), the C half of
 * wick.distributed (python/wick/distributed.py, which gives it torch's
 * shapes: in-place collectives, process groups, Work objects, DDP):
 *  - _Comm: one wk_comm (_comm_init: "mpi" or "self"; _Comm.split), whose
 *    collectives return new tensors (the Python layer copies them into the
 *    caller's tensors);
 *  - _Work: one pending asynchronous collective (wait / is_completed);
 *  - _DDPReducer: DistributedDataParallel's gradient all-reduce (a wk_ddp),
 *    run by the Tensor.backward its arm() arms (autograd.c's
 *    wkpy_next_backward hook) as wk_ddp_backward.
 * Every call that can wait for a peer releases the GIL: the peers may be
 * threads of this process (they are not in tests, but a Python thread
 * blocked in a collective must never stop the others). */
#include "wkpy.h"
#include "wick/dist.h"
#include "wick/train.h"
#include "base/error.h" /* wk__err: the reducer's own failures become wick errors */
#include <string.h>

/* ------------------------------------------------------------ _Comm */

typedef struct {
    PyObject_HEAD
    wk_comm *c;
} comm_obj;

static PyTypeObject comm_type;
static PyTypeObject work_type;

static PyObject *comm_wrap(wk_comm *c) {
    comm_obj *o = PyObject_New(comm_obj, &comm_type);
    if (!o) {
        Py_BEGIN_ALLOW_THREADS wk_comm_free(c);
        Py_END_ALLOW_THREADS
        return NULL;
    }
    o->c = c;
    return (PyObject *)o;
}

/* the communicator, or a ValueError once free() was called */
static wk_comm *comm_of(comm_obj *self) {
    if (!self->c) PyErr_SetString(PyExc_ValueError, "the communicator was freed (destroy_process_group)");
    return self->c;
}

static void comm_dealloc(comm_obj *self) {
    if (self->c) {
        Py_BEGIN_ALLOW_THREADS wk_comm_free(self->c); /* waits for its pending work */
        Py_END_ALLOW_THREADS
    }
    PyObject_Free(self);
}

static int op_arg(int op, wk_dist_op *out) {
    if (op < 0 || op >= WK_DIST_OP_COUNT) {
        PyErr_Format(PyExc_ValueError, "unknown reduce op %d (ReduceOp.SUM, AVG, MAX, MIN or PRODUCT)", op);
        return -1;
    }
    *out = (wk_dist_op)op;
    return 0;
}

static PyObject *f_comm_init(PyObject *m, PyObject *args) {
    (void)m;
    const char *backend;
    double timeout = 0.0;
    if (!PyArg_ParseTuple(args, "s|d:_comm_init", &backend, &timeout)) return NULL;
    wk_comm_opts o = {.timeout_s = timeout};
    wk_comm *c = NULL;
    if (!strcmp(backend, "mpi")) {
        Py_BEGIN_ALLOW_THREADS c = wk_comm_init_mpi(NULL, NULL, &o);
        Py_END_ALLOW_THREADS
    } else if (!strcmp(backend, "self")) {
        c = wk_comm_self(&o);
    } else {
        PyErr_Format(PyExc_ValueError, "unknown backend '%s' (\"mpi\" or \"self\"; \"nccl\" is not bound yet)",
                     backend);
        return NULL;
    }
    return c ? comm_wrap(c) : wkpy_raise();
}

static PyObject *c_rank(comm_obj *self, PyObject *u) {
    (void)u;
    wk_comm *c = comm_of(self);
    return c ? PyLong_FromLong(wk_comm_rank(c)) : NULL;
}
static PyObject *c_size(comm_obj *self, PyObject *u) {
    (void)u;
    wk_comm *c = comm_of(self);
    return c ? PyLong_FromLong(wk_comm_size(c)) : NULL;
}
static PyObject *c_backend(comm_obj *self, PyObject *u) {
    (void)u;
    wk_comm *c = comm_of(self);
    if (!c) return NULL;
    wk_comm_backend b = wk_comm_backend_of(c);
    return PyUnicode_FromString(b == WK_COMM_MPI ? "mpi" : b == WK_COMM_NCCL ? "nccl" : "self");
}
static PyObject *c_timeout(comm_obj *self, PyObject *u) {
    (void)u;
    wk_comm *c = comm_of(self);
    return c ? PyFloat_FromDouble(wk_comm_timeout(c)) : NULL;
}
static PyObject *c_free(comm_obj *self, PyObject *u) {
    (void)u;
    wk_comm *c = self->c;
    self->c = NULL;
    if (c) {
        Py_BEGIN_ALLOW_THREADS wk_comm_free(c);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *c_split(comm_obj *self, PyObject *args) {
    int color, key;
    wk_comm *c = comm_of(self), *s;
    if (!c || !PyArg_ParseTuple(args, "ii:split", &color, &key)) return NULL;
    wk_clear_error();
    Py_BEGIN_ALLOW_THREADS s = wk_comm_split(c, color, key);
    Py_END_ALLOW_THREADS
    if (s) return comm_wrap(s);
    if (color < 0 && wk_last_status() == WK_OK) Py_RETURN_NONE; /* this rank joins none */
    return wkpy_raise();
}

static PyObject *c_barrier(comm_obj *self, PyObject *u) {
    (void)u;
    wk_comm *c = comm_of(self);
    if (!c) return NULL;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_barrier(c);
    Py_END_ALLOW_THREADS
    return wkpy_status(st);
}

/* The blocking and asynchronous collectives share their argument parsing:
 * kind names the collective, the int arguments follow the tensor. */
enum coll { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, SEND, RECV };

typedef struct {
    PyObject_HEAD
    wk_dist_work *w;
    PyObject *comm;  /* keeps the communicator alive while the work is pending */
    PyObject *input; /* the input Tensor (or None), kept until the work is done */
} work_obj;

/* Parse (tensor, a, b) for kind; the tensor may be None only for broadcast.
 * *t borrowed. */
static int coll_args(enum coll kind, PyObject *args, const char *fname, PyObject **tobj, wk_tensor **t, int *a,
                     int *b) {
    *a = *b = 0;
    *tobj = Py_None;
    *t = NULL;
    int ok;
    switch (kind) { /* a, b: op; dim; dim, op; root; peer, tag; peer, tag */
    case RECV: ok = PyArg_ParseTuple(args, "ii", a, b); break;
    case REDUCE_SCATTER:
    case SEND: ok = PyArg_ParseTuple(args, "Oii", tobj, a, b); break;
    default: ok = PyArg_ParseTuple(args, "Oi", tobj, a); break;
    }
    if (!ok) return -1;
    if (kind == RECV || (kind == BROADCAST && *tobj == Py_None)) return 0;
    if (!(*t = wkpy_tensor_arg(*tobj, fname, "tensor"))) return -1;
    return 0;
}

static PyObject *collective(comm_obj *self, PyObject *args, enum coll kind, bool async, const char *fname) {
    wk_comm *c = comm_of(self);
    PyObject *tobj;
    wk_tensor *t, *r = NULL;
    int a, b;
    wk_dist_op op = WK_DIST_SUM;
    if (!c || coll_args(kind, args, fname, &tobj, &t, &a, &b) < 0) return NULL;
    if ((kind == ALL_REDUCE && op_arg(a, &op) < 0) || (kind == REDUCE_SCATTER && op_arg(b, &op) < 0)) return NULL;
    if (async) {
        wk_dist_work *w = NULL;
        switch (kind) {
        case ALL_REDUCE: w = wk_all_reduce_async(c, t, op); break;
        case ALL_GATHER: w = wk_all_gather_async(c, t, a); break;
        case REDUCE_SCATTER: w = wk_reduce_scatter_async(c, t, a, op); break;
        case BROADCAST: w = wk_broadcast_async(c, t, a); break;
        case SEND: w = wk_send_async(c, t, a, b); break;
        case RECV: w = wk_recv_async(c, a, b); break;
        }
        if (!w) return wkpy_raise();
        work_obj *o = PyObject_New(work_obj, &work_type);
        if (!o) {
            Py_BEGIN_ALLOW_THREADS wk_tensor_free(wk_dist_wait(w));
            Py_END_ALLOW_THREADS
            return NULL;
        }
        o->w = w;
        o->comm = Py_NewRef((PyObject *)self);
        o->input = Py_NewRef(tobj);
        return (PyObject *)o;
    }
    wk_status st = WK_OK;
    Py_BEGIN_ALLOW_THREADS switch (kind) {
    case ALL_REDUCE: r = wk_all_reduce(c, t, op); break;
    case ALL_GATHER: r = wk_all_gather(c, t, a); break;
    case REDUCE_SCATTER: r = wk_reduce_scatter(c, t, a, op); break;
    case BROADCAST: r = wk_broadcast(c, t, a); break;
    case SEND: st = wk_send(c, t, a, b); break;
    case RECV: r = wk_recv(c, a, b); break;
    }
    Py_END_ALLOW_THREADS
    if (kind == SEND) return wkpy_status(st);
    return wkpy_wrap(r);
}

#define COLL(name, kind)                                                                                       \
    static PyObject *c_##name(comm_obj *self, PyObject *args) { return collective(self, args, kind, false, #name); } \
    static PyObject *c_##name##_async(comm_obj *self, PyObject *args) {                                          \
        return collective(self, args, kind, true, #name "_async");                                             \
    }
COLL(all_reduce, ALL_REDUCE)
COLL(all_gather, ALL_GATHER)
COLL(reduce_scatter, REDUCE_SCATTER)
COLL(broadcast, BROADCAST)
COLL(send, SEND)
COLL(recv, RECV)

#define VA(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS
#define NO(f) (PyCFunction)(void (*)(void))(f), METH_NOARGS
static PyMethodDef comm_methods[] = {
    {"rank", NO(c_rank), "rank()\nThis process's rank in the communicator."},
    {"size", NO(c_size), "size()\nThe number of ranks."},
    {"backend", NO(c_backend), "backend()\n\"mpi\", \"self\" or \"nccl\"."},
    {"timeout", NO(c_timeout), "timeout()\nSeconds a collective waits for a peer."},
    {"free", NO(c_free), "free()\nFree the communicator now (waits for its pending work); later calls raise."},
    {"split", VA(c_split),
     "split(color, key)\nSub-communicator of the ranks with the same color, ordered by key (collective); "
     "None where color < 0."},
    {"barrier", NO(c_barrier), "barrier()\nWait until every rank got here."},
    {"all_reduce", VA(c_all_reduce), "all_reduce(tensor, op)\nop over every rank's tensor: a new tensor."},
    {"all_gather", VA(c_all_gather), "all_gather(tensor, dim)\nEvery rank's tensor concatenated along dim."},
    {"reduce_scatter", VA(c_reduce_scatter),
     "reduce_scatter(tensor, dim, op)\nop over every rank's tensor, then this rank's chunk of dim."},
    {"broadcast", VA(c_broadcast), "broadcast(tensor, root)\nroot's tensor (None: take root's shape)."},
    {"send", VA(c_send), "send(tensor, peer, tag)\nSend tensor to rank peer."},
    {"recv", VA(c_recv), "recv(peer, tag)\nThe tensor rank peer sends."},
    {"all_reduce_async", VA(c_all_reduce_async), "all_reduce_async(tensor, op)\nall_reduce as a _Work."},
    {"all_gather_async", VA(c_all_gather_async), "all_gather_async(tensor, dim)\nall_gather as a _Work."},
    {"reduce_scatter_async", VA(c_reduce_scatter_async),
     "reduce_scatter_async(tensor, dim, op)\nreduce_scatter as a _Work."},
    {"broadcast_async", VA(c_broadcast_async), "broadcast_async(tensor, root)\nbroadcast as a _Work."},
    {"send_async", VA(c_send_async), "send_async(tensor, peer, tag)\nsend as a _Work."},
    {"recv_async", VA(c_recv_async), "recv_async(peer, tag)\nrecv as a _Work."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject comm_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick._Comm",
    .tp_basicsize = sizeof(comm_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Comm()\nA wick communicator (wick.distributed's process groups hold one); made by _comm_init.",
    .tp_dealloc = (destructor)comm_dealloc,
    .tp_methods = comm_methods,
};

/* ------------------------------------------------------------ _Work */

static PyObject *w_wait(work_obj *self, PyObject *u) {
    (void)u;
    if (!self->w) {
        PyErr_SetString(PyExc_ValueError, "wait(): this work was already waited for");
        return NULL;
    }
    wk_dist_work *w = self->w;
    self->w = NULL;
    wk_tensor *r;
    wk_clear_error();
    Py_BEGIN_ALLOW_THREADS r = wk_dist_wait(w);
    Py_END_ALLOW_THREADS
    Py_CLEAR(self->input);
    if (r) return wkpy_wrap(r);
    if (wk_last_status() != WK_OK) return wkpy_raise();
    Py_RETURN_NONE; /* a send */
}

static PyObject *w_is_completed(work_obj *self, PyObject *u) {
    (void)u;
    return PyBool_FromLong(!self->w || wk_dist_test(self->w));
}

static void work_dealloc(work_obj *self) {
    if (self->w) { /* never waited for: finish it (the peers expect it) and drop the result */
        wk_dist_work *w = self->w;
        Py_BEGIN_ALLOW_THREADS wk_tensor_free(wk_dist_wait(w));
        Py_END_ALLOW_THREADS
        wk_clear_error();
    }
    Py_XDECREF(self->input);
    Py_XDECREF(self->comm);
    PyObject_Free(self);
}

static PyMethodDef work_methods[] = {
    {"wait", NO(w_wait), "wait()\nBlock until done: the result tensor (None for a send); raises its error."},
    {"is_completed", NO(w_is_completed), "is_completed()\nDone yet (never blocks)?"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject work_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick._Work",
    .tp_basicsize = sizeof(work_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Work()\nOne pending asynchronous collective of a _Comm.",
    .tp_dealloc = (destructor)work_dealloc,
    .tp_methods = work_methods,
};

/* ------------------------------------------------------------ _DDPReducer
 * DistributedDataParallel's gradient reduction: one wk_ddp (train.h) over
 * the module's parameters. arm() makes the next Tensor.backward run as
 * wk_ddp_backward into the process-wide store, so each bucket's all_reduce
 * starts while that backward still runs (the on_grad_ready hook). */

typedef struct {
    PyObject_HEAD
    PyObject *comm;   /* the _Comm: alive as long as the wk_ddp that uses it */
    PyObject *params; /* tuple of the Tensors (wk_ddp holds references of its own) */
    wk_ddp *d;
} reducer_obj;

static PyTypeObject reducer_type;

static void reducer_dealloc(reducer_obj *self) {
    if (self->d) {
        wk_ddp *d = self->d;
        Py_BEGIN_ALLOW_THREADS wk_ddp_free(d);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(self->params);
    Py_XDECREF(self->comm);
    PyObject_Free(self);
}

/* Collective: overwrites the parameters with rank 0's values. */
static PyObject *reducer_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"comm", "params", "bucket_cap_mb", "sum", NULL};
    PyObject *comm, *params;
    double mb = 25.0;
    int sum = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|dp:_DDPReducer", names, &comm_type, &comm, &params, &mb, &sum))
        return NULL;
    wk_comm *c = comm_of((comm_obj *)comm);
    if (!c) return NULL;
    PyObject *ps = PySequence_Tuple(params);
    if (!ps) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ps);
    wk_tensor **ts = PyMem_Calloc((size_t)n + 1, sizeof *ts);
    reducer_obj *self = ts ? (reducer_obj *)type->tp_alloc(type, 0) : NULL;
    if (!self) {
        PyMem_Free(ts);
        Py_DECREF(ps);
        return ts ? NULL : PyErr_NoMemory();
    }
    self->comm = Py_NewRef(comm);
    self->params = ps;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(ts[i] = wkpy_tensor_arg(PyTuple_GET_ITEM(ps, i), "DistributedDataParallel", "parameter"))) goto fail;
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "DistributedDataParallel: too many parameters");
        goto fail;
    }
    wk_ddp_opts o = {.bucket_mb = mb, .sum = sum};
    wk_ddp *d;
    Py_BEGIN_ALLOW_THREADS d = wk_ddp_new(c, ts, (int)n, &o);
    Py_END_ALLOW_THREADS
    if (!(self->d = d)) {
        wkpy_raise();
        goto fail;
    }
    PyMem_Free(ts);
    return (PyObject *)self;
fail:
    PyMem_Free(ts);
    Py_DECREF(self);
    return NULL;
}

static wk_status reducer_run(void *ctx, const wk_tensor *root, wk_grad_store *gs, const wk_backward_opts *o) {
    reducer_obj *r = ctx;
    if (!((comm_obj *)r->comm)->c) /* destroy_process_group came first */
        return wk__err(WK_ERR_ARG, "DistributedDataParallel", "its process group was destroyed");
    return wk_ddp_backward(r->d, root, gs, o);
}

static void reducer_release(void *ctx) { Py_DECREF((PyObject *)ctx); }

static PyObject *r_arm(reducer_obj *self, PyObject *u) {
    (void)u;
    wkpy_backward_hook old = wkpy_next_backward;
    wkpy_next_backward = (wkpy_backward_hook){.run = reducer_run, .release = reducer_release, .ctx = self};
    Py_INCREF(self);
    if (old.release) old.release(old.ctx);
    Py_RETURN_NONE;
}

static PyObject *r_disarm(reducer_obj *self, PyObject *u) {
    (void)u;
    if (wkpy_next_backward.ctx == self) {
        wkpy_next_backward = (wkpy_backward_hook){0};
        Py_DECREF(self);
    }
    Py_RETURN_NONE;
}

static PyMethodDef reducer_methods[] = {
    {"arm", NO(r_arm), "arm()\nThe next Tensor.backward also reduces the gradients (one pass)."},
    {"disarm", NO(r_disarm), "disarm()\nUndo arm() if that backward has not run."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject reducer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick._DDPReducer",
    .tp_basicsize = sizeof(reducer_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_DDPReducer(comm, params, bucket_cap_mb=25.0, sum=False)\nDistributedDataParallel's bucketed "
              "gradient all-reduce (a wk_ddp; collective: rank 0's parameter values everywhere).",
    .tp_dealloc = (destructor)reducer_dealloc,
    .tp_methods = reducer_methods,
    .tp_new = reducer_new,
};

/* ------------------------------------------------------------ the part */

static PyObject *f_has_mpi(PyObject *m, PyObject *u) {
    (void)m;
    (void)u;
    return PyBool_FromLong(wk_dist_has_mpi());
}

static PyMethodDef dist_functions[] = {
    {"_comm_init", VA(f_comm_init),
     "_comm_init(backend, timeout=0.0)\nA world _Comm: backend \"mpi\" (MPI_COMM_WORLD) or \"self\"."},
    {"_dist_has_mpi", NO(f_has_mpi), "_dist_has_mpi()\nWhether this build has MPI."},
    {NULL, NULL, 0, NULL},
};

static int dist_init(PyObject *m) {
    if (PyType_Ready(&comm_type) < 0 || PyType_Ready(&work_type) < 0 || PyType_Ready(&reducer_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "_Comm", (PyObject *)&comm_type) < 0 ||
        PyModule_AddObjectRef(m, "_Work", (PyObject *)&work_type) < 0 ||
        PyModule_AddObjectRef(m, "_DDPReducer", (PyObject *)&reducer_type) < 0)
        return -1;
    return 0;
}

const wkpy_part wkpy_part_dist = {NULL, NULL, dist_functions, dist_init};
