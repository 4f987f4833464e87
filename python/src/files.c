/* Tensor files from Python: safetensors (wick.SafeTensors, load_safetensors,
 * save_safetensors), .npy / .npz (wick.load / wick.save, load_npz /
 * save_npz). GGUF is gguf_file.c.
 *
 * Loaded tensors are wick's zero-copy views of the memory-mapped file: the
 * mapping lives as long as the loader or any tensor made from it (wick's
 * storage reference count), so closing a SafeTensors object leaves every
 * tensor taken from it readable. */
#include "wkpy.h"
#include "wick/safetensors.h"
#include <string.h>

int wkpy_path(PyObject *o, const char *fname, PyObject **bytes) {
    *bytes = NULL;
    if (!o || !PyUnicode_FSConverter(o, bytes)) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s(): path must be a str or os.PathLike, got %s", fname,
                         o ? Py_TYPE(o)->tp_name : "nothing");
        }
        return -1;
    }
    return 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static PyObject *shape_of(const int64_t *shape, int rank) {
    PyObject *t = PyTuple_New(rank);
    for (int i = 0; t && i < rank; i++) {
        PyObject *v = PyLong_FromLongLong((long long)shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* ---- wick.SafeTensors ---- */

typedef struct {
    PyObject_HEAD
    wk_safetensors *st; /* NULL once closed */
} st_obj;

static PyTypeObject st_type;

static int st_open(st_obj *self, PyObject *path, const char *fname) {
    PyObject *b;
    if (wkpy_path(path, fname, &b) < 0) return -1;
    wk_safetensors *st;
    Py_BEGIN_ALLOW_THREADS st = wk_safetensors_open(PyBytes_AS_STRING(b));
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    if (!st) return wkpy_raise_int();
    self->st = st;
    return 0;
}

static int st_init(st_obj *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", NULL};
    PyObject *path;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:SafeTensors", names, &path)) return -1;
    wk_safetensors_close(self->st);
    self->st = NULL;
    return st_open(self, path, "SafeTensors");
}

static void st_dealloc(st_obj *self) {
    wk_safetensors_close(self->st);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int st_live(st_obj *self) {
    if (self->st) return 0;
    PyErr_SetString(PyExc_ValueError, "the SafeTensors file is closed");
    return -1;
}

static PyObject *st_keys(st_obj *self, PyObject *unused) {
    (void)unused;
    if (st_live(self) < 0) return NULL;
    int n = wk_safetensors_count(self->st);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(wk_safetensors_name(self->st, i));
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

/* the index of name, or a KeyError */
static int st_find(st_obj *self, PyObject *name) {
    if (st_live(self) < 0) return -1;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "a tensor name is a str, not %s", Py_TYPE(name)->tp_name);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return -1;
    int i = wk_safetensors_find(self->st, s);
    if (i < 0) PyErr_SetObject(PyExc_KeyError, name);
    return i;
}

static PyObject *st_get_impl(st_obj *self, PyObject *name, PyObject *dtype, PyObject *device) {
    if (st_find(self, name) < 0) return NULL;
    const char *s = PyUnicode_AsUTF8(name);
    wk_dtype dt;
    wk_device *dev;
    if (wkpy_device_from(device, &dev) < 0) return NULL;
    /* the view with the GIL held (another thread may close the file),
     * then the conversion, which needs only the view, without it */
    wk_tensor *t = wk_safetensors_get(self->st, s);
    if (!t) return wkpy_raise();
    if (wkpy_dtype_from(dtype, wk_tensor_dtype(t), &dt) < 0) {
        wk_tensor_free(t);
        return NULL;
    }
    if (dt == wk_tensor_dtype(t) && dev == wk_tensor_device(t)) return wkpy_wrap(t);
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS
    r = dt == wk_tensor_dtype(t) ? wk_tensor_retain(t) : wk_to_dtype(t, dt);
    if (r && dev != wk_tensor_device(r)) {
        wk_tensor *d = wk_to_device(r, dev);
        wk_tensor_free(r);
        r = d;
    }
    Py_END_ALLOW_THREADS
    wk_tensor_free(t);
    return wkpy_wrap(r);
}

static PyObject *st_get(st_obj *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"name", "dtype", "device", NULL};
    PyObject *a[3];
    if (wkpy_parse("get", args, nargs, kw, names, 1, a) < 0) return NULL;
    return st_get_impl(self, a[0], a[1] == Py_None ? NULL : a[1], a[2] == Py_None ? NULL : a[2]);
}

static PyObject *st_getitem(st_obj *self, PyObject *name) { return st_get_impl(self, name, NULL, NULL); }

static PyObject *st_info(st_obj *self, PyObject *name) {
    int i = st_find(self, name);
    if (i < 0) return NULL;
    wk_safetensors_info info;
    if (wk_safetensors_info_at(self->st, i, &info) != WK_OK) return wkpy_raise();
    PyObject *dt = info.supported ? wkpy_dtype_obj(info.dtype) : Py_NewRef(Py_None);
    if (!dt) return NULL;
    return Py_BuildValue("{s:s,s:N,s:N,s:K,s:K,s:s}", "st_dtype", info.st_dtype, "dtype", dt, "shape",
                         shape_of(info.shape, info.rank), "nbytes", (unsigned long long)info.nbytes, "offset",
                         (unsigned long long)info.offset, "file", wk_safetensors_shard_path(self->st, info.shard));
}

static PyObject *st_metadata(st_obj *self, void *c) {
    (void)c;
    if (st_live(self) < 0) return NULL;
    PyObject *d = PyDict_New();
    int n = wk_safetensors_meta_count(self->st);
    for (int i = 0; d && i < n; i++) {
        const char *k = wk_safetensors_meta_key(self->st, i);
        PyObject *v = PyUnicode_FromString(wk_safetensors_meta_value(self->st, k));
        if (!v || PyDict_SetItemString(d, k, v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *st_files(st_obj *self, void *c) {
    (void)c;
    if (st_live(self) < 0) return NULL;
    int n = wk_safetensors_shard_count(self->st);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(wk_safetensors_shard_path(self->st, i));
        if (!s) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *st_close(st_obj *self, PyObject *unused) {
    (void)unused;
    wk_safetensors_close(self->st);
    self->st = NULL;
    Py_RETURN_NONE;
}
static PyObject *st_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    if (st_live((st_obj *)self) < 0) return NULL;
    return Py_NewRef(self);
}
static PyObject *st_exit(st_obj *self, PyObject *args) {
    (void)args;
    return st_close(self, NULL);
}
static PyObject *st_closed(st_obj *self, void *c) {
    (void)c;
    return PyBool_FromLong(self->st == NULL);
}

static Py_ssize_t st_len(st_obj *self) {
    if (st_live(self) < 0) return -1;
    return wk_safetensors_count(self->st);
}
static int st_contains(st_obj *self, PyObject *name) {
    if (st_live(self) < 0) return -1;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        PyErr_Clear();
        return 0;
    }
    return wk_safetensors_find(self->st, s) >= 0;
}
static PyObject *st_iter(st_obj *self) {
    PyObject *k = st_keys(self, NULL);
    if (!k) return NULL;
    PyObject *it = PyObject_GetIter(k);
    Py_DECREF(k);
    return it;
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef st_methods[] = {
    {"keys", (PyCFunction)st_keys, METH_NOARGS, "keys()\nThe tensor names, sorted (the safetensors package's order)."},
    {"get", FAST(st_get),
     "get(name, dtype=None, device=None)\nThe tensor called name: a zero-copy, read-only CPU view of the file, or "
     "converted to dtype / moved to device when given (KeyError for an unknown name)."},
    {"get_tensor", FAST(st_get), "get_tensor(name, dtype=None, device=None)\nSame as get (the safetensors package's name)."},
    {"info", (PyCFunction)st_info, METH_O,
     "info(name)\nA dict: st_dtype (the file's name, e.g. 'BF16'), dtype (a wick.dtype, None when wick has none), "
     "shape, nbytes, offset (in its file), file."},
    {"close", (PyCFunction)st_close, METH_NOARGS,
     "close()\nDrop the loader's reference to the mapping; tensors already taken stay valid."},
    {"__enter__", (PyCFunction)st_enter, METH_NOARGS, "__enter__()\nThe object itself (a context manager)."},
    {"__exit__", (PyCFunction)st_exit, METH_VARARGS, "__exit__(*exc_info)\nclose()."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef st_getset[] = {
    {"metadata", (getter)st_metadata, NULL, "The __metadata__ map (str -> str), a dict.", NULL},
    {"files", (getter)st_files, NULL, "The files the tensors live in (the shards of an index).", NULL},
    {"closed", (getter)st_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyMappingMethods st_mapping = {(lenfunc)st_len, (binaryfunc)st_getitem, NULL};
static PySequenceMethods st_sequence = {.sq_contains = (objobjproc)st_contains};

static PyTypeObject st_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.SafeTensors",
    .tp_basicsize = sizeof(st_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SafeTensors(path)\nA memory-mapped safetensors file (a .safetensors file, a sharded checkpoint's "
              "index .json, or a directory holding one). A mapping of names to tensors; a context manager.",
    .tp_init = (initproc)st_init,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)st_dealloc,
    .tp_methods = st_methods,
    .tp_getset = st_getset,
    .tp_as_mapping = &st_mapping,
    .tp_as_sequence = &st_sequence,
    .tp_iter = (getiterfunc)st_iter,
};

/* load_safetensors(path, device=None, dtype=None) -> dict */
static PyObject *f_load_safetensors(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"path", "device", "dtype", NULL};
    PyObject *a[3];
    wk_device *dev;
    wk_dtype dt = WK_F32;
    if (wkpy_parse("load_safetensors", args, nargs, kw, names, 1, a) < 0 || wkpy_device_from(a[1], &dev) < 0 ||
        wkpy_dtype_from(a[2], WK_F32, &dt) < 0)
        return NULL;
    bool convert = a[2] && a[2] != Py_None;
    if (convert && !wk_dtype_is_float(dt)) {
        PyErr_Format(PyExc_ValueError, "load_safetensors(): dtype must be a float dtype (it converts the float "
                                       "tensors), got %s", wk_dtype_name(dt));
        return NULL;
    }
    st_obj tmp = {0};
    if (st_open(&tmp, a[0], "load_safetensors") < 0) return NULL;
    PyObject *d = PyDict_New();
    int n = wk_safetensors_count(tmp.st);
    for (int i = 0; d && i < n; i++) {
        wk_safetensors_info info;
        wk_tensor *t = NULL;
        const char *name = wk_safetensors_name(tmp.st, i);
        if (wk_safetensors_info_at(tmp.st, i, &info) == WK_OK) {
            /* the float tensors only: integer ones (position ids) keep their dtype */
            wk_dtype want = convert && info.supported && wk_dtype_is_float(info.dtype) ? dt : info.dtype;
            Py_BEGIN_ALLOW_THREADS t = wk_safetensors_get_as(tmp.st, name, want, dev);
            Py_END_ALLOW_THREADS
        }
        PyObject *v = wkpy_wrap(t);
        if (!v || PyDict_SetItemString(d, name, v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    wk_safetensors_close(tmp.st);
    return d;
}

/* names and tensors out of a dict (name -> Tensor / array / nested list) */
typedef struct {
    int n;
    const char **names;
    wk_tensor **ts;
    bool *owned;
} named_tensors;

static void named_free(named_tensors *nt) {
    for (int i = 0; i < nt->n; i++)
        if (nt->owned && nt->owned[i]) wk_tensor_free(nt->ts[i]);
    PyMem_Free(nt->names);
    PyMem_Free(nt->ts);
    PyMem_Free(nt->owned);
    memset(nt, 0, sizeof *nt);
}

/* the names point into d's keys: d must stay alive while nt is used */
static int named_from(PyObject *d, const char *fname, named_tensors *nt) {
    memset(nt, 0, sizeof *nt);
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%s(): tensors must be a dict of name -> Tensor, got %s", fname,
                     Py_TYPE(d)->tp_name);
        return -1;
    }
    Py_ssize_t n = PyDict_Size(d), k = n ? n : 1;
    nt->names = PyMem_Calloc((size_t)k, sizeof *nt->names);
    nt->ts = PyMem_Calloc((size_t)k, sizeof *nt->ts);
    nt->owned = PyMem_Calloc((size_t)k, sizeof *nt->owned);
    if (!nt->names || !nt->ts || !nt->owned) {
        named_free(nt);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (PyDict_Next(d, &pos, &key, &val)) {
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "%s(): tensor names must be str, got %s", fname, Py_TYPE(key)->tp_name);
            goto fail;
        }
        const char *s = PyUnicode_AsUTF8(key);
        if (!s) goto fail;
        bool owned;
        wk_tensor *t = wkpy_operand(val, NULL, &owned);
        if (!t) goto fail;
        nt->names[nt->n] = s;
        nt->ts[nt->n] = t;
        nt->owned[nt->n] = owned;
        nt->n++;
    }
    return 0;
fail:
    named_free(nt);
    return -1;
}

/* metadata: None or a dict str -> str */
static int str_map(PyObject *d, const char *fname, int *n, const char ***keys, const char ***vals) {
    *n = 0;
    *keys = *vals = NULL;
    if (!d || d == Py_None) return 0;
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%s(): metadata must be a dict of str -> str, got %s", fname,
                     Py_TYPE(d)->tp_name);
        return -1;
    }
    Py_ssize_t k = PyDict_Size(d);
    *keys = PyMem_Calloc((size_t)(k ? k : 1), sizeof **keys);
    *vals = PyMem_Calloc((size_t)(k ? k : 1), sizeof **vals);
    if (!*keys || !*vals) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *val;
    while (PyDict_Next(d, &pos, &key, &val)) {
        if (!PyUnicode_Check(key) || !PyUnicode_Check(val)) {
            PyErr_Format(PyExc_TypeError, "%s(): metadata keys and values must be str (got %s -> %s)", fname,
                         Py_TYPE(key)->tp_name, Py_TYPE(val)->tp_name);
            goto fail;
        }
        if (!((*keys)[*n] = PyUnicode_AsUTF8(key)) || !((*vals)[*n] = PyUnicode_AsUTF8(val))) goto fail;
        (*n)++;
    }
    return 0;
fail:
    PyMem_Free(*keys);
    PyMem_Free(*vals);
    *keys = *vals = NULL;
    return -1;
}

static PyObject *save_st_path(const char *path, PyObject *tensors, PyObject *meta) {
    named_tensors nt;
    int nmeta;
    const char **mk, **mv;
    if (named_from(tensors, "save_safetensors", &nt) < 0) return NULL;
    if (str_map(meta, "save_safetensors", &nmeta, &mk, &mv) < 0) {
        named_free(&nt);
        return NULL;
    }
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_safetensors_save(path, nt.n, nt.names, nt.ts, nmeta, mk, mv);
    Py_END_ALLOW_THREADS
    named_free(&nt);
    PyMem_Free(mk);
    PyMem_Free(mv);
    return wkpy_status(st);
}

static PyObject *f_save_safetensors(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"path", "tensors", "metadata", NULL};
    PyObject *a[3], *path;
    if (wkpy_parse("save_safetensors", args, nargs, kw, names, 2, a) < 0 ||
        wkpy_path(a[0], "save_safetensors", &path) < 0)
        return NULL;
    PyObject *r = save_st_path(PyBytes_AS_STRING(path), a[1], a[2]);
    Py_DECREF(path);
    return r;
}

/* ---- .npy / .npz ---- */

static PyObject *load_npz_path(const char *path, wk_device *dev) {
    char **names;
    wk_tensor **ts;
    int n;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_npz_load(path, dev, &names, &ts, &n);
    Py_END_ALLOW_THREADS
    if (st != WK_OK) return wkpy_raise();
    PyObject *d = PyDict_New();
    for (int i = 0; i < n; i++) {
        PyObject *v = d ? wkpy_wrap(wk_tensor_retain(ts[i])) : NULL;
        if (!v || PyDict_SetItemString(d, names[i], v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    wk_npz_free(names, ts, n);
    return d;
}

static PyObject *f_load_npz(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"path", "device", NULL};
    PyObject *a[2], *path;
    wk_device *dev;
    if (wkpy_parse("load_npz", args, nargs, kw, names, 1, a) < 0 || wkpy_device_from(a[1], &dev) < 0 ||
        wkpy_path(a[0], "load_npz", &path) < 0)
        return NULL;
    PyObject *r = load_npz_path(PyBytes_AS_STRING(path), dev);
    Py_DECREF(path);
    return r;
}

static PyObject *save_npz_path(const char *path, PyObject *d) {
    named_tensors nt;
    if (named_from(d, "save_npz", &nt) < 0) return NULL;
    wk_status st;
    Py_BEGIN_ALLOW_THREADS st = wk_npz_save(path, nt.names, nt.ts, nt.n);
    Py_END_ALLOW_THREADS
    named_free(&nt);
    return wkpy_status(st);
}

static PyObject *f_save_npz(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"path", "tensors", NULL};
    PyObject *a[2], *path;
    if (wkpy_parse("save_npz", args, nargs, kw, names, 2, a) < 0 || wkpy_path(a[0], "save_npz", &path) < 0)
        return NULL;
    PyObject *r = save_npz_path(PyBytes_AS_STRING(path), a[1]);
    Py_DECREF(path);
    return r;
}

/* load(path, device=None): by the name's ending */
static PyObject *f_load(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"path", "device", NULL};
    PyObject *a[2], *path;
    wk_device *dev;
    if (wkpy_parse("load", args, nargs, kw, names, 1, a) < 0 || wkpy_device_from(a[1], &dev) < 0 ||
        wkpy_path(a[0], "load", &path) < 0)
        return NULL;
    const char *p = PyBytes_AS_STRING(path);
    PyObject *r;
    if (ends_with(p, ".npz")) r = load_npz_path(p, dev);
    else if (ends_with(p, ".safetensors")) r = f_load_safetensors(m, args, nargs, kw);
    else {
        wk_tensor *t;
        Py_BEGIN_ALLOW_THREADS t = wk_npy_load(p, dev);
        Py_END_ALLOW_THREADS
        r = wkpy_wrap(t);
    }
    Py_DECREF(path);
    return r;
}

/* save(path, obj): a tensor -> .npy; a dict -> .npz or .safetensors by name */
static PyObject *f_save(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"path", "obj", NULL};
    PyObject *a[2], *path;
    if (wkpy_parse("save", args, nargs, kw, names, 2, a) < 0 || wkpy_path(a[0], "save", &path) < 0) return NULL;
    const char *p = PyBytes_AS_STRING(path);
    PyObject *r = NULL;
    if (PyDict_Check(a[1])) {
        if (ends_with(p, ".npz")) r = save_npz_path(p, a[1]);
        else if (ends_with(p, ".safetensors")) r = save_st_path(p, a[1], NULL);
        else
            PyErr_Format(PyExc_ValueError, "save(): a dict is saved as .npz or .safetensors (by the path's ending), "
                                           "not '%s'", p);
    } else {
        bool owned;
        wk_tensor *t = wkpy_operand(a[1], NULL, &owned);
        if (t) {
            wk_status st;
            Py_BEGIN_ALLOW_THREADS st = wk_npy_save(p, t);
            Py_END_ALLOW_THREADS
            if (owned) wk_tensor_free(t);
            r = wkpy_status(st);
        }
    }
    Py_DECREF(path);
    return r;
}

static PyMethodDef files_functions[] = {
    {"load_safetensors", FAST(f_load_safetensors),
     "load_safetensors(path, device=None, dtype=None)\nEvery tensor of a safetensors file (or sharded index, or "
     "directory) as a dict name -> Tensor: zero-copy read-only views of the mapped file on the CPU (the mapping "
     "lives as long as any of them), else moved to device; dtype converts the float tensors."},
    {"save_safetensors", FAST(f_save_safetensors),
     "save_safetensors(path, tensors, metadata=None)\nWrite a dict name -> Tensor (any layout and device; arrays "
     "work too) and an optional str -> str metadata dict as one .safetensors file."},
    {"load_npz", FAST(f_load_npz), "load_npz(path, device=None)\nThe arrays of a .npz file as a dict name -> Tensor."},
    {"save_npz", FAST(f_save_npz), "save_npz(path, tensors)\nWrite a dict name -> Tensor as a .npz file (stored)."},
    {"load", FAST(f_load),
     "load(path, device=None)\nA .npy file as a Tensor; a .npz or .safetensors file as a dict name -> Tensor."},
    {"save", FAST(f_save),
     "save(path, obj)\nA Tensor (or array) as a .npy file; a dict name -> Tensor as .npz or .safetensors (by the "
     "path's ending)."},
    {NULL, NULL, 0, NULL},
};

static int files_init(PyObject *m) {
    if (PyType_Ready(&st_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "SafeTensors", (PyObject *)&st_type);
}

const wkpy_part wkpy_part_files = {NULL, NULL, files_functions, files_init};
