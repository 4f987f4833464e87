/* The ground of the binding (py_base.h): the wick.Tensor type object with
 * its lifetime slots (allocation by wkpy_wrap, dealloc, GC, hash, weak
 * references), wkpy_status and the GIL test. The protocols and methods
 * are the roof's (py_tensor.c, module.c); nothing here calls above. */
#include "py_base.h"
#include "wick/autograd.h"

PyObject *wkpy_wrap(wk_tensor *t) {
    if (!t) return wkpy_raise();
    wkpy_tensor *o = PyObject_GC_New(wkpy_tensor, &wkpy_tensor_type);
    if (!o) {
        wk_tensor_free(t);
        return NULL;
    }
    o->t = wk_keep(t); /* Python's reference counting owns it now, not a wick scope */
    o->weakrefs = NULL;
    PyObject_GC_Track((PyObject *)o);
    return (PyObject *)o;
}

PyObject *wkpy_status(wk_status st) {
    if (st != WK_OK) return wkpy_raise();
    Py_RETURN_NONE;
}

bool wkpy_big(const wk_tensor *t) {
    return t && (wk_numel(t) >= WKPY_GIL_NUMEL || wk_device_kind_of(wk_tensor_device(t)) != WK_DEVICE_CPU);
}

void (*wkpy_on_leaf_dealloc)(wk_tensor *t);

static void tensor_dealloc(wkpy_tensor *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    wk_tensor *t = self->t;
    self->t = NULL;
    if (wkpy_on_leaf_dealloc && wk_is_tracked(t)) wkpy_on_leaf_dealloc(t); /* autograd.c: a dying leaf's gradient */
    /* the last reference to numpy-backed memory calls back into Python
     * (release_buffer takes the GIL itself): keep the GIL here */
    wk_tensor_free(t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tensor_traverse(wkpy_tensor *self, visitproc visit, void *arg) {
    (void)self;
    (void)visit;
    (void)arg;
    return 0;
}

static Py_hash_t tensor_hash(PyObject *self) { return _Py_HashPointer(self); }

PyTypeObject wkpy_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Tensor",
    .tp_basicsize = sizeof(wkpy_tensor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A wick tensor: a strided view over reference-counted storage on one device.",
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_traverse = (traverseproc)tensor_traverse,
    .tp_hash = (hashfunc)tensor_hash,
    .tp_weaklistoffset = offsetof(wkpy_tensor, weakrefs),
};
