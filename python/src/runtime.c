/* Runtime queries from Python: allocator statistics and caches (CPU buffer
 * cache, CUDA pools), the backends compiled in, and storage facts of a
 * tensor (offset, sharing, read-only). */
#include "wkpy.h"

static PyObject *f_memory_stats(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"device", NULL};
    PyObject *a[1];
    wk_device *dev;
    if (wkpy_parse("memory_stats", args, nargs, kw, names, 0, a) < 0 || wkpy_device_from(a[0], &dev) < 0) return NULL;
    wk_memory_stats s;
    if (wk_device_memory_stats(dev, &s) != WK_OK) return wkpy_raise();
    return Py_BuildValue("{s:n,s:n,s:n,s:K,s:K,s:K}", "bytes_in_use", (Py_ssize_t)s.bytes_in_use, "bytes_cached",
                         (Py_ssize_t)s.bytes_cached, "peak_bytes_in_use", (Py_ssize_t)s.peak_bytes_in_use,
                         "cache_hits", (unsigned long long)s.cache_hits, "cache_misses",
                         (unsigned long long)s.cache_misses, "alloc_failures", (unsigned long long)s.alloc_failures);
}

static PyObject *f_empty_cache(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"device", NULL};
    PyObject *a[1];
    wk_device *dev;
    if (wkpy_parse("empty_cache", args, nargs, kw, names, 0, a) < 0 || wkpy_device_from(a[0], &dev) < 0) return NULL;
    size_t released = 0;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_device_release_cache(dev, &released);
    Py_END_ALLOW_THREADS
    if (st != WK_OK) return wkpy_raise();
    return PyLong_FromSize_t(released);
}

static PyObject *f_set_cpu_cache_limit(PyObject *m, PyObject *arg) {
    (void)m;
    long long v;
    if (wkpy_int(arg, 0, &v) < 0) return NULL;
    if (v < 0) return PyErr_Format(PyExc_ValueError, "set_cpu_cache_limit(%lld): bytes must be >= 0", v);
    return wkpy_status(wk_cpu_cache_set_limit((size_t)v));
}

static PyObject *f_backends(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    PyObject *s = PyUnicode_FromString(wk_backends());
    if (!s) return NULL;
    PyObject *r = PyUnicode_Split(s, NULL, -1);
    Py_DECREF(s);
    return r;
}

static PyObject *f_shares_storage(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    (void)m;
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "shares_storage(a, b) takes 2 arguments (%zd given)", nargs);
    wk_tensor *a = wkpy_tensor_arg(args[0], "shares_storage", "a"), *b = a ? wkpy_tensor_arg(args[1], "shares_storage", "b") : NULL;
    if (!b) return NULL;
    return PyBool_FromLong(wk_shares_storage(a, b));
}

static PyObject *m_storage_offset(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong((long long)wk_offset(wkpy_t(self)));
}
static PyObject *m_shares_storage(PyObject *self, PyObject *other) {
    wk_tensor *o = wkpy_tensor_arg(other, "shares_storage", "other");
    return o ? PyBool_FromLong(wk_shares_storage(wkpy_t(self), o)) : NULL;
}
static PyObject *g_is_read_only(PyObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(wk_is_read_only(wkpy_t(self)));
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef runtime_functions[] = {
    {"memory_stats", FAST(f_memory_stats),
     "memory_stats(device=None) -> dict: the device allocator's counters (bytes_in_use, bytes_cached, "
     "peak_bytes_in_use, cache_hits, cache_misses, alloc_failures); the CPU's buffer cache by default."},
    {"empty_cache", FAST(f_empty_cache),
     "empty_cache(device=None) -> int: hand every cached block back to the system / driver; the bytes freed. "
     "Live tensors are untouched."},
    {"set_cpu_cache_limit", f_set_cpu_cache_limit, METH_O,
     "set_cpu_cache_limit(nbytes) -> None: the most freed CPU memory kept for reuse (WICK_CPU_CACHE_MB)."},
    {"backends", f_backends, METH_NOARGS, "backends() -> list: the backends compiled in, e.g. ['cpu', 'cuda']."},
    {"shares_storage", (PyCFunction)(void (*)(void))f_shares_storage, METH_FASTCALL,
     "shares_storage(a, b) -> bool: both tensors are views of one storage (writes through one are seen by the "
     "other)."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef runtime_methods[] = {
    {"storage_offset", m_storage_offset, METH_NOARGS,
     "storage_offset() -> int: where the view starts in its storage, in elements."},
    {"shares_storage", m_shares_storage, METH_O,
     "shares_storage(other) -> bool: self and other are views of one storage."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef runtime_getset[] = {
    {"is_read_only", g_is_read_only, NULL,
     "The storage may not be written (a read-only numpy array, a memory-mapped model file).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

const wkpy_part wkpy_part_runtime = {runtime_methods, runtime_getset, runtime_functions, NULL};
