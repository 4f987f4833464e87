/* DLPack both ways (the Python array API's zero-copy exchange):
 * Tensor.__dlpack__ / __dlpack_device__ export a wick tensor's memory to
 * torch / numpy / anyone; wick.from_dlpack wraps theirs with wk_from_blob.
 * No copy either way: writes through one side are read by the other.
 *
 * Lifetimes. Export: the capsule's DLManagedTensor owns one wick reference
 * to the tensor, dropped by its deleter, which runs exactly once: when the
 * consumer lets go, or when a capsule nobody consumed dies. Import: the
 * wick storage's release callback calls the producer's deleter, once, when
 * the last wick view of that memory is freed. */
#include "wkpy.h"
#include "dlpack.h"
#include "tensor/tensor.h" /* storage->buf, dev->ordinal, wk__from_device_blob */
#include <stdlib.h>
#include <string.h>

static const char k_capsule[] = "dltensor";
static const char k_used[] = "used_dltensor";

/* ---- dtypes ---- */

static const struct {
    wk_dtype dt;
    wkdl_dtype dl;
} k_dtypes[] = {
    {WK_F32, {WKDL_FLOAT, 32, 1}},  {WK_F64, {WKDL_FLOAT, 64, 1}}, {WK_F16, {WKDL_FLOAT, 16, 1}},
    {WK_BF16, {WKDL_BFLOAT, 16, 1}}, {WK_U8, {WKDL_UINT, 8, 1}},   {WK_U32, {WKDL_UINT, 32, 1}},
    {WK_I16, {WKDL_INT, 16, 1}},    {WK_I32, {WKDL_INT, 32, 1}},   {WK_I64, {WKDL_INT, 64, 1}},
};
#define N_DTYPES (sizeof k_dtypes / sizeof k_dtypes[0])

static const char *code_name(unsigned code) {
    static const char *const n[] = {"int", "uint", "float", "opaque handle", "bfloat", "complex", "bool"};
    return code < sizeof n / sizeof n[0] ? n[code] : "unknown";
}

/* ---- export ---- */

typedef struct {
    wkdl_managed m;
    wk_tensor *t;                        /* the reference the capsule owns */
    int64_t shape[WK_MAX_RANK], strides[WK_MAX_RANK];
} export_ctx;

/* May run on any thread, with or without the GIL (torch frees its tensors
 * wherever they die): only wick and libc here. A tensor over numpy memory
 * takes the GIL itself in its own release callback (convert.c). */
static void export_deleter(wkdl_managed *m) {
    export_ctx *c = m->manager_ctx;
    wk_tensor_free(c->t);
    free(c);
}

/* A capsule that dies unconsumed still owns its DLManagedTensor. */
static void capsule_destructor(PyObject *cap) {
    if (!PyCapsule_IsValid(cap, k_capsule)) return; /* consumed: "used_dltensor" */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb); /* a destructor may run while an exception is pending */
    wkdl_managed *m = PyCapsule_GetPointer(cap, k_capsule);
    if (m && m->deleter) m->deleter(m);
    PyErr_Restore(et, ev, tb);
}

/* The DLPack device of t, or -1 with wick.DeviceError. */
static int dl_device_of(const wk_tensor *t, wkdl_device *out) {
    wk_device *dev = t->storage->dev;
    switch (wk_device_kind_of(dev)) {
    case WK_DEVICE_CPU: *out = (wkdl_device){WKDL_CPU, 0}; return 0;
    case WK_DEVICE_CUDA: *out = (wkdl_device){WKDL_CUDA, dev->ordinal}; return 0;
    default:
        PyErr_Format(wkpy_error_class(WK_ERR_DEVICE), "__dlpack__: a tensor on %s cannot be exported (CPU and CUDA only)",
                     wk_device_name(dev));
        return -1;
    }
}

static PyObject *m_dlpack_device(PyObject *self, PyObject *unused) {
    (void)unused;
    wkdl_device d;
    if (dl_device_of(wkpy_t(self), &d) < 0) return NULL;
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

static PyObject *m_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    /* max_version: the array API's newer consumers ask for DLPack >= 1.0;
     * a producer that only speaks 0.x answers with the legacy "dltensor"
     * capsule, which those consumers accept. */
    static const char *const names[] = {"stream", "max_version", NULL};
    PyObject *a[2];
    if (wkpy_parse("__dlpack__", args, nargs, kw, names, 0, a) < 0) return NULL;
    PyObject *stream = a[0];
    if (stream && stream != Py_None && !PyLong_Check(stream))
        return PyErr_Format(PyExc_TypeError, "__dlpack__: stream must be an int or None, not %s",
                            Py_TYPE(stream)->tp_name);
    wk_tensor *t = wkpy_t(self);
    wk_dtype dt = wk_tensor_dtype(t);
    wkdl_device dev;
    if (dl_device_of(t, &dev) < 0) return NULL;
    size_t k = 0;
    while (k < N_DTYPES && k_dtypes[k].dt != dt) k++;
    if (k == N_DTYPES)
        return PyErr_Format(wkpy_error_class(WK_ERR_DTYPE),
                            "__dlpack__: %s has no DLPack type (f32, f64, f16, bf16, u8, u32, i16, i32, i64 do; "
                            "to_dtype first)", wk_dtype_name(dt));
    /* DLPack 0.x has no read-only flag: a consumer would write into memory
     * wick promised not to touch (a mapped file); numpy refuses the same. */
    if (wk_is_read_only(t))
        return PyErr_Format(PyExc_BufferError, "__dlpack__: the tensor's memory is read-only and DLPack cannot say so "
                                               "(export a copy: wick.tensor(t))");
    /* as torch: the consumer would write past autograd's version checks and
     * lose the graph without a word */
    if (wk_is_tracked(t))
        return PyErr_Format(PyExc_RuntimeError, "__dlpack__: cannot export a tensor that requires grad (detach it first)");
    /* Stream semantics: wick's device has one stream of its own, which a
     * consumer's stream cannot wait on by handle here, so every queued op
     * is waited for before the pointer is handed out (any consumer stream
     * then sees finished data). stream=-1 asks for no synchronisation. */
    int overflow = 0;
    bool no_sync = stream && PyLong_Check(stream) && PyLong_AsLongAndOverflow(stream, &overflow) == -1 && !overflow;
    if (dev.device_type == WKDL_CUDA && !no_sync) {
        wk_status st;
        Py_BEGIN_ALLOW_THREADS st = wk_device_synchronize(t->storage->dev);
        Py_END_ALLOW_THREADS
        if (st != WK_OK) return wkpy_raise();
    }
    export_ctx *c = malloc(sizeof *c);
    if (!c) return PyErr_NoMemory();
    int r = wk_rank(t);
    for (int i = 0; i < r; i++) {
        c->shape[i] = t->layout.shape[i];
        c->strides[i] = t->layout.stride[i];
    }
    /* data points at the first element and byte_offset is 0, as torch and
     * numpy export (torch 1.13's importer ignores byte_offset). An empty
     * tensor still points into its storage (NULL data is allowed too). */
    size_t es = wk_dtype_size(dt);
    char *base = t->storage->buf;
    c->m.dl_tensor = (wkdl_tensor){
        .data = base ? base + (size_t)t->layout.offset * es : NULL,
        .device = dev,
        .ndim = r,
        .dtype = k_dtypes[k].dl,
        .shape = c->shape,
        .strides = c->strides,
        .byte_offset = 0,
    };
    c->m.manager_ctx = c;
    c->m.deleter = export_deleter;
    c->t = wk_tensor_retain(t); /* outside every scope: Python's reference is kept too */
    PyObject *cap = PyCapsule_New(&c->m, k_capsule, capsule_destructor);
    if (!cap) export_deleter(&c->m);
    return cap;
}

/* ---- import ---- */

/* wick's release callback: the last wick view of the memory is gone (wick
 * already waited for a GPU's queued work, see wk__from_device_blob). It may run on
 * any thread; producers' deleters may touch Python objects (numpy's does a
 * Py_DECREF), so they run under the GIL. */
static void release_managed(void *ctx, void *data, size_t nbytes) {
    (void)data;
    (void)nbytes;
    wkdl_managed *m = ctx;
    if (!m->deleter) return;
    PyGILState_STATE g = PyGILState_Ensure();
    m->deleter(m);
    PyGILState_Release(g);
}

/* Raise an error of wick's class for status st and return NULL. */
#define REJECT(st, ...) (PyErr_Format(wkpy_error_class(st), "from_dlpack: " __VA_ARGS__), (wk_tensor *)NULL)

static wk_tensor *wrap_managed(wkdl_managed *m) {
    const wkdl_tensor *d = &m->dl_tensor;
    wk_device *dev;
    switch (d->device.device_type) {
    case WKDL_CPU:
    case WKDL_CUDA_HOST: dev = wk_cpu(); break; /* pinned host memory is host memory */
    case WKDL_CUDA:
        if (d->device.device_id < 0) return REJECT(WK_ERR_DEVICE, "CUDA device id %d", (int)d->device.device_id);
        dev = wk_cuda(d->device.device_id); /* NotCompiledError without the backend, DeviceError without the GPU */
        if (!dev) return wkpy_raise(), NULL;
        break;
    default:
        return REJECT(WK_ERR_DEVICE, "DLPack device type %d is not one wick has (kDLCPU = 1, kDLCUDA = 2)",
                      (int)d->device.device_type);
    }
    if (d->dtype.lanes != 1)
        return REJECT(WK_ERR_DTYPE, "vector elements (%u lanes of %s%u) are not supported", (unsigned)d->dtype.lanes,
                      code_name(d->dtype.code), (unsigned)d->dtype.bits);
    size_t k = 0;
    while (k < N_DTYPES && (k_dtypes[k].dl.code != d->dtype.code || k_dtypes[k].dl.bits != d->dtype.bits)) k++;
    if (k == N_DTYPES)
        return REJECT(WK_ERR_DTYPE, "DLPack type %s%u (code %u) has no wick dtype", code_name(d->dtype.code),
                      (unsigned)d->dtype.bits, (unsigned)d->dtype.code);
    wk_dtype dt = k_dtypes[k].dt;
    size_t es = wk_dtype_size(dt);
    if (d->ndim < 0 || d->ndim > WK_MAX_RANK)
        return REJECT(WK_ERR_SHAPE, "rank %d (wick has 0 to %d dims)", (int)d->ndim, WK_MAX_RANK);
    if (d->ndim > 0 && !d->shape) return REJECT(WK_ERR_ARG, "NULL shape for rank %d", (int)d->ndim);
    /* the span the view reaches, with overflow checks: the values are the
     * producer's, and wk_from_blob checks them against it again */
    int64_t numel = 1, hi = 0;
    for (int i = 0; i < d->ndim; i++) {
        int64_t n = d->shape[i], s = d->strides ? d->strides[i] : 0;
        if (n < 0) return REJECT(WK_ERR_SHAPE, "negative size %lld of dim %d", (long long)n, i);
        if (n > 1 && d->strides) {
            if (s < 0)
                return REJECT(WK_ERR_ARG, "negative stride %lld of dim %d (wick views cannot; copy it first)",
                              (long long)s, i);
            if (s > (INT64_MAX - hi) / (n - 1)) return REJECT(WK_ERR_ARG, "stride %lld of dim %d overflows", (long long)s, i);
            hi += (n - 1) * s;
        }
        if (n && numel > INT64_MAX / n) return REJECT(WK_ERR_SHAPE, "%d dims overflow the element count", (int)d->ndim);
        numel *= n;
    }
    if (!d->strides) hi = numel ? numel - 1 : 0;
    if (d->byte_offset % es)
        return REJECT(WK_ERR_ARG, "byte_offset %llu is not a whole number of %s elements",
                      (unsigned long long)d->byte_offset, wk_dtype_name(dt));
    char *p = numel ? (char *)d->data + d->byte_offset : NULL; /* an empty view reaches nothing */
    if (numel && !d->data) return REJECT(WK_ERR_ARG, "NULL data for %lld elements", (long long)numel);
    if ((uintptr_t)p % es)
        return REJECT(WK_ERR_ARG, "data %p + byte_offset %llu is not aligned for %s", d->data,
                      (unsigned long long)d->byte_offset, wk_dtype_name(dt));
    if (numel && (uint64_t)hi >= (uint64_t)(SIZE_MAX / es)) return REJECT(WK_ERR_ARG, "the view spans more bytes than memory has");
    size_t nbytes = numel ? ((size_t)hi + 1) * es : 0;
    int64_t shape[WK_MAX_RANK], strides[WK_MAX_RANK];
    for (int i = 0; i < d->ndim; i++) {
        shape[i] = d->shape[i];
        strides[i] = d->strides ? d->strides[i] : 0;
    }
    const int64_t *st = d->strides ? strides : NULL;
    wk_tensor *t = wk_device_kind_of(dev) == WK_DEVICE_CPU
                       ? wk_from_blob(p, nbytes, shape, d->ndim, st, dt, dev, release_managed, m, 0)
                       : wk__from_device_blob(p, nbytes, shape, d->ndim, st, dt, dev, release_managed, m, 0);
    if (!t) wkpy_raise(); /* wick never calls release on failure: m is still the capsule's */
    return t;
}

/* The stream= a producer gets: None for host memory; for CUDA memory the
 * handle of the stream wick's device queues on, so that the producer
 * (torch) makes it wait for the producer's pending writes (the array API's
 * protocol) - wick's stream is non-blocking, so the legacy default stream
 * that None stands for would order nothing. A new reference, or NULL. */
static PyObject *stream_for(PyObject *obj) {
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear(); /* __dlpack__ only: the capsule says where it lives */
        Py_RETURN_NONE;
    }
    int type = 0, id = 0;
    int ok = PyArg_ParseTuple(dev, "ii", &type, &id);
    Py_DECREF(dev);
    if (!ok) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError, "from_dlpack: __dlpack_device__ must return (device_type, device_id)");
    }
    if (type != WKDL_CUDA) Py_RETURN_NONE;
    if (id < 0) return PyErr_Format(wkpy_error_class(WK_ERR_DEVICE), "from_dlpack: CUDA device id %d", id);
    wk_device *d = wk_cuda(id); /* NotCompiledError / DeviceError before any capsule exists */
    if (!d) return wkpy_raise();
    uintptr_t h = wk__device_stream(d);
    return PyLong_FromSize_t((size_t)h);
}

/* The "dltensor" capsule of obj: obj itself, or what obj.__dlpack__(stream=...) returns. */
static PyObject *capsule_of(PyObject *obj) {
    if (PyCapsule_CheckExact(obj)) return Py_NewRef(obj);
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
    if (!meth) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError,
                            "from_dlpack: expected an object with __dlpack__ (a torch / numpy / wick tensor) or a "
                            "'dltensor' capsule, not %s", Py_TYPE(obj)->tp_name);
    }
    PyObject *stream = stream_for(obj);
    PyObject *kw = stream ? Py_BuildValue("{s:N}", "stream", stream) : NULL;
    PyObject *noargs = kw ? PyTuple_New(0) : NULL;
    PyObject *cap = noargs ? PyObject_Call(meth, noargs, kw) : NULL;
    Py_XDECREF(noargs);
    Py_XDECREF(kw);
    Py_DECREF(meth);
    return cap;
}

static PyObject *f_from_dlpack(PyObject *m, PyObject *obj) {
    (void)m;
    PyObject *cap = capsule_of(obj);
    if (!cap) return NULL;
    wkdl_managed *mt = NULL;
    if (!PyCapsule_CheckExact(cap))
        PyErr_Format(PyExc_TypeError, "from_dlpack: __dlpack__ returned %s, not a capsule", Py_TYPE(cap)->tp_name);
    else if (PyCapsule_IsValid(cap, k_used))
        PyErr_SetString(PyExc_ValueError, "from_dlpack: the capsule was already consumed ('used_dltensor')");
    else if (!PyCapsule_IsValid(cap, k_capsule)) {
        const char *n = PyCapsule_GetName(cap);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "from_dlpack: a capsule named '%s', not 'dltensor' (DLPack 0.x)", n ? n : "NULL");
    } else
        mt = PyCapsule_GetPointer(cap, k_capsule);
    wk_tensor *t = mt ? wrap_managed(mt) : NULL;
    /* ours now: the capsule must not call the deleter when it dies */
    if (t && PyCapsule_SetName(cap, k_used) < 0) {
        t->storage->release = NULL; /* cannot happen (SetName fails only on a non-capsule); keep one owner */
        wk_tensor_free(t);
        t = NULL;
    }
    Py_DECREF(cap);
    return t ? wkpy_wrap(t) : NULL;
}

static PyMethodDef dlpack_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))m_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(stream=None, max_version=None)\n"
     "A DLPack 0.x capsule ('dltensor') sharing the tensor's memory (no copy), for torch.from_dlpack, "
     "numpy.from_dlpack and wick.from_dlpack. The capsule holds a reference to the tensor until its consumer "
     "frees the result (or the capsule dies unconsumed). CUDA tensors: wick's device is synchronised first (every "
     "queued op finishes), so any consumer stream sees the values; stream=-1 skips that. CPU: stream is ignored. "
     "f32, f64, f16, bf16, u8, u32, i16, i32 and i64 export; quantized and f8 dtypes raise wick.DTypeError, "
     "read-only memory BufferError, tensors that require grad RuntimeError."},
    {"__dlpack_device__", (PyCFunction)m_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n(device_type, device_id) as DLPack numbers them: (1, 0) for the CPU, (2, n) for cuda:n."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef dlpack_functions[] = {
    {"from_dlpack", f_from_dlpack, METH_O,
     "from_dlpack(obj)\n"
     "A tensor sharing the memory of obj (a torch / numpy / wick tensor, anything with __dlpack__, or a raw "
     "'dltensor' capsule) without a copy: writes through either side are seen by the other. The producer's memory "
     "is released when the last wick tensor over it is freed. CPU memory (kDLCPU, kDLCUDAHost) and CUDA memory "
     "(kDLCUDA, device_id n -> cuda:n) are accepted; other devices, vector lanes, unknown dtypes, negative "
     "strides, misaligned data and rank > 8 raise wick errors. The result is writable. obj.__dlpack__ is called "
     "with stream=None for host memory and, for CUDA memory, with the handle of the stream of wick's device, so "
     "that the producer orders its pending writes before wick's reads (a raw capsule carries no such promise: "
     "finish the producer's work first)."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_dlpack = {dlpack_methods, NULL, dlpack_functions, NULL};
