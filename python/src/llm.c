/* wick.Model (a decoder language model of any family wick knows -- llama,
 * mistral, qwen2, qwen3, gemma2, gemma3, phi3, smollm3 -- loaded from a GGUF
 * file or an HF directory; wick.Llama is the same type under its old name)
 * and wick.KVCache (one sequence's keys and values): the forward pass from
 * Python. Generation, streaming and chat are textgen.c (above this file: it
 * loads and reads models); Model.generate / stream / chat call it through
 * wkpy_llama_textgen / wkpy_llama_chat, which module.c sets at import.
 *
 * The model is immutable once loaded, so threads may share one; a cache is
 * one sequence's state and wick does not lock it, so a cache in use by one
 * forward refuses a second (RuntimeError) instead of racing. */
#include "wkpy.h"
#include "wick/lm.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    wk_lm *m;
} llama_obj;

typedef struct {
    PyObject_HEAD
    wk_kv_cache *c;
    PyObject *model; /* the Llama the cache was made for (kept alive) */
    bool busy;
} cache_obj;

static PyTypeObject llama_type, cache_type;

const wk_lm *wkpy_llama_of(PyObject *o) {
    return PyObject_TypeCheck(o, &llama_type) ? ((llama_obj *)o)->m : NULL;
}

PyObject *wkpy_llama_load(PyObject *path, PyObject *device, PyObject *dtype, PyObject *kv_dtype) {
    PyObject *b;
    wk_lm_load_opts o;
    memset(&o, 0, sizeof o); /* dtype 0: keep the file's dtypes */
    if (wkpy_device_from(device, &o.device) < 0) return NULL;
    if (dtype && dtype != Py_None) {
        if (wkpy_dtype_from(dtype, WK_F32, &o.dtype) < 0) return NULL;
        if (o.dtype != WK_F32 && o.dtype != WK_F16 && o.dtype != WK_BF16)
            return PyErr_Format(PyExc_ValueError, "Model(): dtype must be f32, f16 or bf16 (the float weights' "
                                                  "dtype), got %s", wk_dtype_name(o.dtype));
    }
    if (kv_dtype && kv_dtype != Py_None) {
        if (wkpy_dtype_from(kv_dtype, WK_F32, &o.kv_dtype) < 0) return NULL;
        if (o.kv_dtype != WK_F32 && o.kv_dtype != WK_F16 && o.kv_dtype != WK_BF16)
            return PyErr_Format(PyExc_ValueError, "Model(): kv_dtype must be f32, f16 or bf16 (the KV cache's "
                                                  "dtype), got %s", wk_dtype_name(o.kv_dtype));
    }
    if (wkpy_path(path, "Model", &b) < 0) return NULL;
    wk_lm *m;
    Py_BEGIN_ALLOW_THREADS m = wk_lm_load(PyBytes_AS_STRING(b), &o);
    Py_END_ALLOW_THREADS
    Py_DECREF(b);
    if (!m) return wkpy_raise();
    llama_obj *self = PyObject_New(llama_obj, &llama_type);
    if (!self) {
        wk_lm_free(m);
        return NULL;
    }
    self->m = m;
    return (PyObject *)self;
}

static PyObject *llama_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *names[] = {"path", "device", "dtype", "kv_dtype", NULL};
    PyObject *path, *device = NULL, *dtype = NULL, *kv_dtype = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:Model", names, &path, &device, &dtype, &kv_dtype)) return NULL;
    return wkpy_llama_load(path, device, dtype, kv_dtype);
}

static void llama_dealloc(llama_obj *self) {
    /* every Tokenizer borrowed from the model holds a reference to it: none is left */
    wk_lm_free(self->m);
    PyObject_Free(self);
}

static PyObject *g_arch(llama_obj *self, void *c) {
    (void)c;
    return PyUnicode_FromString(wk_lm_config_of(self->m)->arch);
}

/* d[key] = str, or lst.append(str) with d NULL */
static int set_str(PyObject *d, const char *key, const char *v) {
    PyObject *o = PyUnicode_FromString(v);
    if (!o) return -1;
    int rc = PyDict_Check(d) ? PyDict_SetItemString(d, key, o) : PyList_Append(d, o);
    Py_DECREF(o);
    return rc;
}

/* the family features (wk_lm_config's second block) into d */
static int config_features(const wk_lm_config *k, PyObject *d) {
    PyObject *f = Py_BuildValue(
        "{s:O,s:O,s:O,s:O,s:O,s:d,s:d,s:d,s:d,s:L,s:L,s:d,s:d}", "attn_bias", k->attn_bias ? Py_True : Py_False,
        "qk_norm", k->qk_norm ? Py_True : Py_False, "post_norms", k->post_norms ? Py_True : Py_False, "gelu_mlp",
        k->gelu_mlp ? Py_True : Py_False, "fused_qkv", k->fused_qkv ? Py_True : Py_False, "embed_scale",
        k->embed_scale, "attn_scale", k->attn_scale, "attn_softcap", k->attn_softcap, "final_softcap",
        k->final_softcap, "sliding_window", (long long)k->sliding_window, "rope_dims", (long long)k->rope_dims,
        "rope_local_theta", k->rope_local_theta, "rope_attn_factor", k->rope_attn_factor);
    if (!f) return -1;
    int rc = PyDict_Update(d, f);
    Py_DECREF(f);
    if (rc < 0) return -1;
    /* per layer, the names of its WK_LM_* flags: [] | ["sliding"] | ["no_rope"] ... */
    PyObject *layers = PyList_New((Py_ssize_t)k->n_layers);
    if (!layers) return -1;
    for (int64_t l = 0; l < k->n_layers; l++) {
        unsigned fl = k->layer_flags ? k->layer_flags[l] : 0;
        PyObject *names = PyList_New(0);
        if (!names || ((fl & WK_LM_SLIDING) && set_str(names, NULL, "sliding") < 0) ||
            ((fl & WK_LM_NO_ROPE) && set_str(names, NULL, "no_rope") < 0)) {
            Py_XDECREF(names);
            Py_DECREF(layers);
            return -1;
        }
        PyList_SET_ITEM(layers, (Py_ssize_t)l, names);
    }
    rc = PyDict_SetItemString(d, "layer_flags", layers);
    Py_DECREF(layers);
    return rc;
}

static PyObject *g_config(llama_obj *self, void *c) {
    (void)c;
    const wk_lm_config *k = wk_lm_config_of(self->m);
    PyObject *d = Py_BuildValue(
        "{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:d,s:d,s:s,s:d,s:d,s:d,s:L,s:O,s:O}", "vocab", (long long)k->vocab, "dim",
        (long long)k->dim, "ffn_dim", (long long)k->ffn_dim, "n_layers", (long long)k->n_layers, "n_heads",
        (long long)k->n_heads, "n_kv_heads", (long long)k->n_kv_heads, "head_dim", (long long)k->head_dim, "max_ctx",
        (long long)k->max_ctx, "rope_theta", k->rope_theta, "rms_eps", k->rms_eps, "rope_scaling", k->rope_scaling,
        "rope_factor", k->rope_factor, "rope_low_freq_factor", k->rope_low_freq_factor, "rope_high_freq_factor",
        k->rope_high_freq_factor, "rope_orig_ctx", (long long)k->rope_orig_ctx, "tied_embeddings",
        k->tied_embeddings ? Py_True : Py_False, "rope_interleaved", k->rope_interleaved ? Py_True : Py_False);
    if (!d) return NULL;
    PyObject *bos = k->bos >= 0 ? PyLong_FromLong(k->bos) : Py_NewRef(Py_None);
    PyObject *eos = k->eos >= 0 ? PyLong_FromLong(k->eos) : Py_NewRef(Py_None);
    if (!bos || !eos || PyDict_SetItemString(d, "bos", bos) < 0 || PyDict_SetItemString(d, "eos", eos) < 0 ||
        set_str(d, "arch", k->arch) < 0 || config_features(k, d) < 0)
        Py_CLEAR(d);
    Py_XDECREF(bos);
    Py_XDECREF(eos);
    return d;
}

/* a new Tokenizer object each time: it keeps self alive, and self keeping
 * it would make a cycle these GC-less types could not break */
static PyObject *g_tokenizer(llama_obj *self, void *c) {
    (void)c;
    return wkpy_tokenizer_wrap(wk_lm_tokenizer(self->m), (PyObject *)self);
}

static PyObject *g_chat_template(llama_obj *self, void *c) {
    (void)c;
    const char *t = wk_lm_chat_template(self->m);
    if (!t) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(t, (Py_ssize_t)strlen(t), "replace");
}
static PyObject *g_vocab_size(llama_obj *self, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)wk_lm_config_of(self->m)->vocab);
}

/* forward(ids, cache=None, all_logits=False) */
static PyObject *m_forward(llama_obj *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"ids", "cache", "all_logits", NULL};
    PyObject *a[3];
    bool all;
    if (wkpy_parse("forward", args, nargs, kw, names, 1, a) < 0 || wkpy_bool(a[2], false, &all) < 0) return NULL;
    cache_obj *co = NULL;
    if (a[1] && a[1] != Py_None) {
        if (!PyObject_TypeCheck(a[1], &cache_type))
            return PyErr_Format(PyExc_TypeError, "forward(): cache must be a wick.KVCache, got %s",
                                Py_TYPE(a[1])->tp_name);
        co = (cache_obj *)a[1];
        if (co->model != (PyObject *)self)
            return PyErr_Format(PyExc_ValueError, "forward(): the cache was made for another model");
        if (co->busy) return PyErr_Format(PyExc_RuntimeError, "forward(): the cache is in use by another thread");
    }
    int32_t *ids;
    int64_t n;
    if (wkpy_ids(a[0], "forward", &ids, &n) < 0) return NULL;
    wk_kv_cache *c = co ? co->c : NULL;
    wk_tensor *r = NULL;
    if (co) co->busy = true;
    Py_BEGIN_ALLOW_THREADS
    wk_kv_cache *tmp = c ? NULL : wk_kv_cache_new(self->m, n > 0 ? n : 1); /* no cache: a throwaway one */
    if (c || tmp) r = wk_lm_forward(self->m, c ? c : tmp, ids, n, all);
    wk_kv_cache_free(tmp);
    Py_END_ALLOW_THREADS
    if (co) co->busy = false;
    PyMem_RawFree(ids);
    return wkpy_wrap(r);
}

PyObject *(*wkpy_llama_textgen)(bool stream, PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);

static PyObject *m_generate(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    return wkpy_llama_textgen(false, self, args, nargs, kw);
}
static PyObject *m_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    return wkpy_llama_textgen(true, self, args, nargs, kw);
}

PyObject *(*wkpy_llama_chat)(PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);

static PyObject *m_chat(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    return wkpy_llama_chat(self, args, nargs, kw);
}

static PyObject *llama_repr(llama_obj *self) {
    const wk_lm_config *k = wk_lm_config_of(self->m);
    return PyUnicode_FromFormat("wick.Model(arch='%s', vocab=%lld, dim=%lld, n_layers=%lld, max_ctx=%lld)", k->arch,
                                (long long)k->vocab, (long long)k->dim, (long long)k->n_layers,
                                (long long)k->max_ctx);
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef llama_methods[] = {
    {"forward", FAST(m_forward),
     "forward(ids, cache=None, all_logits=False)\nRun ids (a list of ints or an integer tensor) at the cache's next "
     "positions (appending their keys and values; without a cache, a fresh one for these ids only). Returns f32 "
     "logits (1, vocab) for the last id, or (n, vocab) with all_logits. The GIL is released meanwhile."},
    {"generate", FAST(m_generate),
     "generate(prompt, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, "
     "repeat_last_n=64, seed=0, stop=None, chat=False, system=None, stop_at_eos=True, max_ctx=0, "
     "return_stats=False)\nSame as wick.generate(self, prompt, ...)."},
    {"stream", FAST(m_stream),
     "stream(prompt, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, "
     "repeat_last_n=64, seed=0, stop=None, chat=False, system=None, stop_at_eos=True, max_ctx=0)\nSame as "
     "wick.stream(self, prompt, ...)."},
    {"chat", FAST(m_chat),
     "chat(messages, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, "
     "repeat_last_n=64, seed=0, stop=None, system=None, stop_at_eos=True, max_ctx=0, return_stats=False)\nThe "
     "assistant's reply to messages (a list of {'role': ..., 'content': ...} dicts or (role, content) pairs), "
     "rendered with the model's chat template; system, when given, is a first system message. A one-off "
     "wick.ChatSession: for a conversation that goes on, keep one (its KV cache keeps the history)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef llama_getset[] = {
    {"arch", (getter)g_arch, NULL, "The family: 'llama', 'mistral', 'qwen2', 'qwen3', 'gemma2', 'gemma3', 'phi3' "
     "or 'smollm3'.", NULL},
    {"config", (getter)g_config, NULL,
     "The model's config, a dict: arch, vocab, dim, n_layers, n_heads, ..., the family features (attn_bias, "
     "qk_norm, post_norms, gelu_mlp, fused_qkv, embed_scale, attn_scale, attn_softcap, final_softcap, "
     "sliding_window, rope_dims, rope_local_theta, rope_attn_factor) and layer_flags (per layer, a list of "
     "'sliding' / 'no_rope').", NULL},
    {"tokenizer", (getter)g_tokenizer, NULL, "The file's tokenizer (a wick.Tokenizer), or None.", NULL},
    {"chat_template", (getter)g_chat_template, NULL, "The file's chat template, or None.", NULL},
    {"vocab_size", (getter)g_vocab_size, NULL, "Logits per position.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject llama_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Model",
    .tp_basicsize = sizeof(llama_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(path, device=None, dtype=None, kv_dtype=None)\nA decoder language model of any family wick knows (llama -- "
              "Llama 2/3, SmolLM2 --, mistral, qwen2, qwen3, gemma2, gemma3, phi3, smollm3) from a .gguf file "
              "(quantized layers stay quantized) or an HF directory. dtype (f32 / f16 / bf16) converts the "
              "float weight matrices at load; None keeps the file's. kv_dtype (f32 / f16 / bf16; None: f32) is the "
              "dtype of its KV caches (f16 halves what decode reads over a long context). Immutable: threads may share one. "
              "wick.Llama is the same type (its former name).",
    .tp_new = llama_new,
    .tp_dealloc = (destructor)llama_dealloc,
    .tp_repr = (reprfunc)llama_repr,
    .tp_methods = llama_methods,
    .tp_getset = llama_getset,
};

/* ---- wick.KVCache ---- */

static PyObject *cache_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *names[] = {"model", "max_tokens", NULL};
    PyObject *model;
    long long max_tokens = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|L:KVCache", names, &model, &max_tokens)) return NULL;
    if (!PyObject_TypeCheck(model, &llama_type))
        return PyErr_Format(PyExc_TypeError, "KVCache(): model must be a wick.Model, got %s", Py_TYPE(model)->tp_name);
    wk_kv_cache *c;
    Py_BEGIN_ALLOW_THREADS c = wk_kv_cache_new(((llama_obj *)model)->m, (int64_t)max_tokens);
    Py_END_ALLOW_THREADS
    if (!c) return wkpy_raise();
    cache_obj *o = PyObject_New(cache_obj, &cache_type);
    if (!o) {
        wk_kv_cache_free(c);
        return NULL;
    }
    o->c = c;
    o->model = Py_NewRef(model);
    o->busy = false;
    return (PyObject *)o;
}

static void cache_dealloc(cache_obj *self) {
    wk_kv_cache_free(self->c);
    Py_XDECREF(self->model);
    PyObject_Free(self);
}

static Py_ssize_t cache_len(cache_obj *self) { return (Py_ssize_t)wk_kv_cache_len(self->c); }

static PyObject *c_truncate(cache_obj *self, PyObject *n) {
    long long v = PyLong_AsLongLong(n);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (self->busy) return PyErr_Format(PyExc_RuntimeError, "truncate(): the cache is in use by another thread");
    return wkpy_status(wk_kv_cache_truncate(self->c, (int64_t)v));
}
static PyObject *c_clear(cache_obj *self, PyObject *unused) {
    (void)unused;
    if (self->busy) return PyErr_Format(PyExc_RuntimeError, "clear(): the cache is in use by another thread");
    return wkpy_status(wk_kv_cache_truncate(self->c, 0));
}
static PyObject *c_capacity(cache_obj *self, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)wk_kv_cache_capacity(self->c));
}
static PyObject *c_model(cache_obj *self, void *c) {
    (void)c;
    return Py_NewRef(self->model);
}
static PyObject *cache_repr(cache_obj *self) {
    return PyUnicode_FromFormat("wick.KVCache(len=%lld, capacity=%lld)", (long long)wk_kv_cache_len(self->c),
                                (long long)wk_kv_cache_capacity(self->c));
}

static PyMethodDef cache_methods[] = {
    {"truncate", (PyCFunction)c_truncate, METH_O, "truncate(n)\nForget positions >= n."},
    {"clear", (PyCFunction)c_clear, METH_NOARGS, "clear()\nForget every position."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef cache_getset[] = {
    {"capacity", (getter)c_capacity, NULL, "Positions the cache can hold.", NULL},
    {"model", (getter)c_model, NULL, "The model the cache belongs to.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PySequenceMethods cache_sequence = {.sq_length = (lenfunc)cache_len};

static PyTypeObject cache_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.KVCache",
    .tp_basicsize = sizeof(cache_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "KVCache(model, max_tokens=0)\nOne sequence's keys and values for every layer of model, allocated "
              "once for max_tokens positions (0: the model's context). len() is the positions filled.",
    .tp_new = cache_new,
    .tp_dealloc = (destructor)cache_dealloc,
    .tp_repr = (reprfunc)cache_repr,
    .tp_methods = cache_methods,
    .tp_getset = cache_getset,
    .tp_as_sequence = &cache_sequence,
};

static int llm_init(PyObject *m) {
    if (PyType_Ready(&llama_type) < 0 || PyType_Ready(&cache_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Model", (PyObject *)&llama_type) < 0) return -1;
    /* the former name, kept for compatibility: the same type */
    if (PyModule_AddObjectRef(m, "Llama", (PyObject *)&llama_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "KVCache", (PyObject *)&cache_type);
}

const wkpy_part wkpy_part_llm = {NULL, NULL, NULL, llm_init};
