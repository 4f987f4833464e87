/* wick.Tokenizer: wick's byte-level BPE / WordPiece tokenizers from Python,
 * named as HF `tokenizers` names them (encode(text, add_special_tokens=True)
 * -> ids, decode(ids, skip_special_tokens=False), token_to_id). One comes
 * from a file (tokenizer.json, a BERT vocab.txt, a .gguf's tokenizer.ggml.*)
 * or from a model (Llama.tokenizer, SentenceEncoder.tokenizer), which it
 * keeps alive: a model's tokenizer is borrowed from the model. */
#include "wkpy.h"
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    const wk_tokenizer *tok;
    wk_tokenizer *owned; /* freed with the object; NULL when borrowed */
    PyObject *owner;     /* keeps a borrowed tokenizer's model alive */
} tok_obj;

static PyTypeObject tok_type;

PyObject *wkpy_tokenizer_wrap(const wk_tokenizer *t, PyObject *owner) {
    if (!t) Py_RETURN_NONE;
    tok_obj *o = PyObject_New(tok_obj, &tok_type);
    if (!o) return NULL;
    o->tok = t;
    o->owned = NULL;
    o->owner = Py_XNewRef(owner);
    return (PyObject *)o;
}

const wk_tokenizer *wkpy_tokenizer_of(PyObject *o) {
    return PyObject_TypeCheck(o, &tok_type) ? ((tok_obj *)o)->tok : NULL;
}

static void tok_dealloc(tok_obj *self) {
    wk_tokenizer_free(self->owned);
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static PyObject *tok_own(wk_tokenizer *t) {
    if (!t) return wkpy_raise();
    tok_obj *o = PyObject_New(tok_obj, &tok_type);
    if (!o) {
        wk_tokenizer_free(t);
        return NULL;
    }
    o->tok = o->owned = t;
    o->owner = NULL;
    return (PyObject *)o;
}

/* Tokenizer(path, lowercase=True): by the name's ending, or a wick.GGUF */
static PyObject *tok_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *names[] = {"path", "lowercase", NULL};
    PyObject *src;
    int lower = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:Tokenizer", names, &src, &lower)) return NULL;
    const wk_gguf *g = wkpy_gguf_of(src);
    if (g) return tok_own(wk_tokenizer_from_gguf(g));
    PyObject *b;
    if (wkpy_path(src, "Tokenizer", &b) < 0) return NULL;
    const char *p = PyBytes_AS_STRING(b);
    wk_tokenizer *t;
    Py_BEGIN_ALLOW_THREADS
    if (ends_with(p, ".gguf")) {
        wk_gguf *f = wk_gguf_open(p);
        t = f ? wk_tokenizer_from_gguf(f) : NULL;
        wk_gguf_close(f);
    } else if (ends_with(p, ".txt"))
        t = wk_tokenizer_load_vocab_txt(p, lower);
    else
        t = wk_tokenizer_load_json(p);
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    return tok_own(t);
}

static PyObject *tok_from_str(PyObject *cls, PyObject *json) {
    (void)cls;
    Py_ssize_t len;
    const char *s = PyUnicode_Check(json) ? PyUnicode_AsUTF8AndSize(json, &len) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "Tokenizer.from_str(): expected the tokenizer.json text, got %s",
                         Py_TYPE(json)->tp_name);
        return NULL;
    }
    return tok_own(wk_tokenizer_from_json(s, (size_t)len));
}

/* ---- encode / decode ---- */

int64_t wkpy_encode(const wk_tokenizer *t, const char *s, size_t len, unsigned flags, int32_t **ids) {
    int64_t cap = (int64_t)len + 8, n = -1;
    *ids = NULL;
    for (int pass = 0; pass < 2; pass++) {
        PyMem_RawFree(*ids);
        *ids = PyMem_RawMalloc((size_t)cap * sizeof **ids);
        if (!*ids) return -2;
        bool big = len > 4096;
        WKPY_NOGIL(big, n = wk_tokenizer_encode(t, s, len, flags, *ids, cap));
        if (n < 0 || n <= cap) break;
        cap = n;
    }
    return n;
}

static PyObject *id_list(const int32_t *ids, int64_t n) {
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        PyObject *v = PyLong_FromLong(ids[i]);
        if (!v) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, v);
    }
    return l;
}

static PyObject *m_encode(tok_obj *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"text", "add_special_tokens", "parse_special", NULL};
    PyObject *a[3];
    bool add, parse;
    if (wkpy_parse("encode", args, nargs, kw, names, 1, a) < 0 || wkpy_bool(a[1], true, &add) < 0 ||
        wkpy_bool(a[2], true, &parse) < 0)
        return NULL;
    if (!PyUnicode_Check(a[0]))
        return PyErr_Format(PyExc_TypeError, "encode(): text must be a str, got %s", Py_TYPE(a[0])->tp_name);
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(a[0], &len);
    if (!s) return NULL;
    int32_t *ids;
    unsigned flags = (add ? WK_TOK_ADD_SPECIAL : 0) | (parse ? WK_TOK_PARSE_SPECIAL : 0);
    int64_t n = wkpy_encode(self->tok, s, (size_t)len, flags, &ids);
    PyObject *r = n == -2 ? PyErr_NoMemory() : n < 0 ? wkpy_raise() : id_list(ids, n);
    PyMem_RawFree(ids);
    return r;
}

int wkpy_ids(PyObject *o, const char *fname, int32_t **ids, int64_t *n) {
    *ids = NULL;
    *n = 0;
    if (wkpy_check(o)) { /* a tensor of ids: any shape, read as integers */
        wk_tensor *t = wkpy_t(o);
        if (!wk_dtype_is_int(wk_tensor_dtype(t))) {
            PyErr_Format(PyExc_TypeError, "%s(): ids must be an integer tensor, got %s", fname,
                         wk_dtype_name(wk_tensor_dtype(t)));
            return -1;
        }
        int64_t k = wk_numel(t);
        double *v = PyMem_RawMalloc(sizeof(double) * (size_t)(k ? k : 1));
        *ids = PyMem_RawMalloc(sizeof(int32_t) * (size_t)(k ? k : 1));
        if (!v || !*ids) {
            PyMem_RawFree(v);
            PyMem_RawFree(*ids);
            *ids = NULL;
            PyErr_NoMemory();
            return -1;
        }
        if (wk_to_host_f64(t, v, (size_t)k) != WK_OK) {
            PyMem_RawFree(v);
            PyMem_RawFree(*ids);
            *ids = NULL;
            return wkpy_raise_int();
        }
        for (int64_t i = 0; i < k; i++) {
            /* a value outside int32 would make the conversion undefined */
            if (!(v[i] >= INT32_MIN && v[i] <= INT32_MAX)) {
                PyErr_Format(PyExc_OverflowError, "%s(): id %.0f does not fit int32", fname, v[i]);
                PyMem_RawFree(v);
                PyMem_RawFree(*ids);
                *ids = NULL;
                return -1;
            }
            (*ids)[i] = (int32_t)v[i];
        }
        PyMem_RawFree(v);
        *n = k;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "ids must be a list of ints or an integer tensor");
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    *ids = PyMem_RawMalloc(sizeof(int32_t) * (size_t)(k ? k : 1));
    if (!*ids) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) goto fail;
        if (v < INT32_MIN || v > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "%s(): id %ld does not fit int32", fname, v);
            goto fail;
        }
        (*ids)[i] = (int32_t)v;
    }
    Py_DECREF(seq);
    *n = k;
    return 0;
fail:
    Py_DECREF(seq);
    PyMem_RawFree(*ids);
    *ids = NULL;
    return -1;
}

static PyObject *m_decode(tok_obj *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"ids", "skip_special_tokens", NULL};
    PyObject *a[2];
    bool skip;
    int32_t *ids;
    int64_t n;
    if (wkpy_parse("decode", args, nargs, kw, names, 1, a) < 0 || wkpy_bool(a[1], false, &skip) < 0 ||
        wkpy_ids(a[0], "decode", &ids, &n) < 0)
        return NULL;
    PyObject *r = NULL;
    char small[256];
    int64_t need = wk_tokenizer_decode(self->tok, ids, n, skip, small, sizeof small);
    if (need < 0) wkpy_raise();
    else if (need < (int64_t)sizeof small) r = PyUnicode_DecodeUTF8(small, (Py_ssize_t)need, "replace");
    else {
        char *buf = PyMem_RawMalloc((size_t)need + 1);
        if (!buf) PyErr_NoMemory();
        else if (wk_tokenizer_decode(self->tok, ids, n, skip, buf, (size_t)need + 1) < 0) wkpy_raise();
        else r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)need, "replace");
        PyMem_RawFree(buf);
    }
    PyMem_RawFree(ids);
    return r;
}

static PyObject *m_token_to_id(tok_obj *self, PyObject *token) {
    const char *s = PyUnicode_Check(token) ? PyUnicode_AsUTF8(token) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "token_to_id(): token must be a str, got %s", Py_TYPE(token)->tp_name);
        return NULL;
    }
    int32_t id = wk_tokenizer_find(self->tok, s);
    if (id < 0) Py_RETURN_NONE; /* HF's answer for an unknown token */
    return PyLong_FromLong(id);
}

static PyObject *m_is_special(tok_obj *self, PyObject *id) {
    long v = PyLong_AsLong(id);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (v < 0 || v >= wk_tokenizer_vocab_size(self->tok))
        return PyErr_Format(PyExc_IndexError, "is_special(): id %ld is outside the vocabulary of %lld", v,
                            (long long)wk_tokenizer_vocab_size(self->tok));
    return PyBool_FromLong(wk_tokenizer_is_special(self->tok, (int32_t)v));
}

static PyObject *m_vocab_size(tok_obj *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLongLong((long long)wk_tokenizer_vocab_size(self->tok));
}
static PyObject *g_vocab_size(tok_obj *self, void *c) {
    (void)c;
    return m_vocab_size(self, NULL);
}
static PyObject *id_or_none(int32_t id) {
    if (id < 0) Py_RETURN_NONE;
    return PyLong_FromLong(id);
}
static PyObject *g_bos(tok_obj *self, void *c) {
    (void)c;
    return id_or_none(wk_tokenizer_bos(self->tok));
}
static PyObject *g_eos(tok_obj *self, void *c) {
    (void)c;
    return id_or_none(wk_tokenizer_eos(self->tok));
}
static PyObject *g_max_token_bytes(tok_obj *self, void *c) {
    (void)c;
    return PyLong_FromSize_t(wk_tokenizer_max_token_bytes(self->tok));
}
static Py_ssize_t tok_len(tok_obj *self) { return (Py_ssize_t)wk_tokenizer_vocab_size(self->tok); }

static PyObject *tok_repr(tok_obj *self) {
    return PyUnicode_FromFormat("wick.Tokenizer(vocab_size=%lld%s)", (long long)wk_tokenizer_vocab_size(self->tok),
                                self->owner ? ", from a model" : "");
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef tok_methods[] = {
    {"encode", FAST(m_encode),
     "encode(text, add_special_tokens=True, parse_special=True)\nThe ids of text, a list of ints (the same as HF "
     "tokenizers' encode(text).ids): add_special_tokens adds BOS / [CLS] ... [SEP] as the file says; "
     "parse_special matches special tokens written in the text (HF always does)."},
    {"decode", FAST(m_decode),
     "decode(ids, skip_special_tokens=False)\nThe text of ids (a list of ints or an integer tensor); bytes that "
     "do not form UTF-8 become U+FFFD."},
    {"token_to_id", (PyCFunction)m_token_to_id, METH_O,
     "token_to_id(token)\nThe id of a token as stored in the vocabulary ('<|im_end|>'), or None."},
    {"is_special", (PyCFunction)m_is_special, METH_O, "is_special(id)\nA special / control token (skipped by decode)."},
    {"get_vocab_size", (PyCFunction)m_vocab_size, METH_NOARGS, "get_vocab_size()\nThe vocabulary size (HF's name)."},
    {"from_str", (PyCFunction)tok_from_str, METH_O | METH_CLASS,
     "from_str(json)\nA tokenizer from the text of a tokenizer.json."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tok_getset[] = {
    {"vocab_size", (getter)g_vocab_size, NULL, "Ids in the vocabulary.", NULL},
    {"bos_token_id", (getter)g_bos, NULL, "The BOS id from the file, or None.", NULL},
    {"eos_token_id", (getter)g_eos, NULL, "The EOS id from the file, or None.", NULL},
    {"max_token_bytes", (getter)g_max_token_bytes, NULL, "Bytes of the longest token's text.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods tok_sequence = {.sq_length = (lenfunc)tok_len};

static PyTypeObject tok_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Tokenizer",
    .tp_basicsize = sizeof(tok_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tokenizer(path, lowercase=True)\nA tokenizer from an HF tokenizer.json, a BERT vocab.txt "
              "(lowercase: BERT's uncased rules), a .gguf file or a wick.GGUF; token for token the same as HF "
              "tokenizers on the same file. Immutable: threads may share one.",
    .tp_new = tok_new,
    .tp_dealloc = (destructor)tok_dealloc,
    .tp_repr = (reprfunc)tok_repr,
    .tp_methods = tok_methods,
    .tp_getset = tok_getset,
    .tp_as_sequence = &tok_sequence,
};

static int tok_init(PyObject *m) {
    if (PyType_Ready(&tok_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Tokenizer", (PyObject *)&tok_type);
}

const wkpy_part wkpy_part_tokenizer = {NULL, NULL, NULL, tok_init};
