/* wick.SentenceEncoder (alias wick.Bert): BERT sentence embeddings
 * (all-MiniLM-L6-v2 and kin) over wk_bert: an HF directory in, mean-pooled
 * L2-normalised embeddings out (sentence-transformers' pipeline). */
#include "wkpy.h"
#include "wick/bert.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    wk_bert *b;
} bert_obj;

static PyTypeObject bert_type;

static PyObject *bert_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *names[] = {"path", "device", NULL};
    PyObject *path, *device = NULL, *bytes;
    wk_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:SentenceEncoder", names, &path, &device) ||
        wkpy_device_from(device, &dev) < 0 || wkpy_path(path, "SentenceEncoder", &bytes) < 0)
        return NULL;
    wk_bert *b;
    Py_BEGIN_ALLOW_THREADS b = wk_bert_load(PyBytes_AS_STRING(bytes), dev);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    if (!b) return wkpy_raise();
    bert_obj *o = PyObject_New(bert_obj, &bert_type);
    if (!o) {
        wk_bert_free(b);
        return NULL;
    }
    o->b = b;
    return (PyObject *)o;
}

static void bert_dealloc(bert_obj *self) {
    wk_bert_free(self->b);
    PyObject_Free(self);
}

/* embed(texts): a list of str -> (n, dim); one str -> (dim,) */
static PyObject *m_embed(bert_obj *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"texts", NULL};
    PyObject *a[1];
    if (wkpy_parse("embed", args, nargs, kw, names, 1, a) < 0) return NULL;
    bool one = PyUnicode_Check(a[0]);
    PyObject *seq = one ? PyTuple_Pack(1, a[0]) : PySequence_Fast(a[0], "embed(): texts must be a str or a list of str");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > INT32_MAX) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "embed(): too many texts (%zd)", n);
    }
    const char **texts = PyMem_Calloc((size_t)(n ? n : 1), sizeof *texts);
    PyObject *r = NULL;
    if (!texts) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t len;
        if (!PyUnicode_Check(it)) {
            PyErr_Format(PyExc_TypeError, "embed(): text %zd is a %s, not a str", i, Py_TYPE(it)->tp_name);
            goto done;
        }
        if (!(texts[i] = PyUnicode_AsUTF8AndSize(it, &len))) goto done;
        if (strlen(texts[i]) != (size_t)len) {
            PyErr_Format(PyExc_ValueError, "embed(): text %zd contains a NUL character", i);
            goto done;
        }
    }
    wk_tensor *t;
    if (n == 0) { /* no texts: no rows (sentence-transformers' answer), not an error */
        int64_t shape[2] = {0, wk_bert_dim(self->b)};
        t = wk_empty(shape, 2, WK_F32, wk_cpu());
    } else {
        /* the strings belong to seq's items, alive until we return */
        Py_BEGIN_ALLOW_THREADS t = wk_bert_embed(self->b, texts, (int)n);
        Py_END_ALLOW_THREADS
    }
    if (t && one) { /* sentence-transformers: one text gives one vector */
        int64_t d = wk_bert_dim(self->b);
        wk_tensor *v = wk_reshape(t, &d, 1);
        wk_tensor_free(t);
        t = v;
    }
    r = wkpy_wrap(t);
done:
    PyMem_Free(texts);
    Py_DECREF(seq);
    return r;
}

static PyObject *m_hidden(bert_obj *self, PyObject *ids_obj) {
    int32_t *ids;
    int64_t n;
    if (wkpy_ids(ids_obj, "hidden", &ids, &n) < 0) return NULL;
    wk_tensor *t;
    Py_BEGIN_ALLOW_THREADS t = wk_bert_hidden(self->b, ids, n);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(ids);
    return wkpy_wrap(t);
}

static PyObject *g_dim(bert_obj *self, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)wk_bert_dim(self->b));
}
static PyObject *g_max_tokens(bert_obj *self, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)wk_bert_max_tokens(self->b));
}
static PyObject *g_tokenizer(bert_obj *self, void *c) {
    (void)c;
    return wkpy_tokenizer_wrap(wk_bert_tokenizer(self->b), (PyObject *)self);
}
static PyObject *bert_repr(bert_obj *self) {
    return PyUnicode_FromFormat("wick.SentenceEncoder(dim=%lld, max_tokens=%lld)", (long long)wk_bert_dim(self->b),
                                (long long)wk_bert_max_tokens(self->b));
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef bert_methods[] = {
    {"embed", FAST(m_embed),
     "embed(texts)\nEmbeddings of a list of str as an f32 Tensor (n, dim), each row mean-pooled and of L2 norm 1 "
     "(one str gives (dim,)). Texts longer than max_tokens are cut; the GIL is released meanwhile."},
    {"encode", FAST(m_embed), "encode(texts)\nSame as embed (sentence-transformers' name)."},
    {"hidden", (PyCFunction)m_hidden, METH_O,
     "hidden(ids)\nThe last hidden state (1, L, dim) f32 for ids (with [CLS] / [SEP]), a list or integer tensor."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef bert_getset[] = {
    {"dim", (getter)g_dim, NULL, "The embedding size.", NULL},
    {"max_tokens", (getter)g_max_tokens, NULL, "The most ids a text becomes (longer texts are cut).", NULL},
    {"tokenizer", (getter)g_tokenizer, NULL, "The model's WordPiece tokenizer (a wick.Tokenizer).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject bert_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.SentenceEncoder",
    .tp_basicsize = sizeof(bert_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SentenceEncoder(path, device=None)\nA BERT sentence encoder from an HF directory (config.json, "
              "model.safetensors, tokenizer.json or vocab.txt): all-MiniLM-L6-v2 and kin. Immutable: threads may "
              "share one.",
    .tp_new = bert_new,
    .tp_dealloc = (destructor)bert_dealloc,
    .tp_repr = (reprfunc)bert_repr,
    .tp_methods = bert_methods,
    .tp_getset = bert_getset,
};

static int encoder_init(PyObject *m) {
    if (PyType_Ready(&bert_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "SentenceEncoder", (PyObject *)&bert_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Bert", (PyObject *)&bert_type);
}

const wkpy_part wkpy_part_encoder = {NULL, NULL, NULL, encoder_init};
