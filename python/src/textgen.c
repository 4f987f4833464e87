/* Text generation from Python: wick.generate(model, prompt, ...) -> str over
 * wk_generate, and wick.stream(model, prompt, ...), an iterator of text
 * pieces that runs the same loop one token per step (prefill, then sample,
 * decode, hold back stop strings, forward), so that its pieces join to
 * generate()'s text with the same settings. `model` is a wick.Llama or a
 * path (loaded for this call only: nothing is cached globally).
 *
 * The GIL is released while the model runs. generate() takes it back only
 * between tokens to see Ctrl-C; a stream yields each piece as soon as its
 * token is sampled and runs that token's forward pass at the next step. */
#include "wkpy.h"
#include "wick/tokenizer.h"
#include "wick/llama.h"
#include "wick/generate.h"
#include "model/stop_text.h" /* the stop-string holdback wk_generate uses */
#include <stdlib.h>
#include <string.h>

/* ---- options (shared by generate and stream) ---- */

static const char *const k_names[] = {"prompt", "max_new_tokens", "temperature", "top_k",  "top_p",
                                      "min_p",  "repeat_penalty", "repeat_last_n", "seed", "stop",
                                      "chat",   "system",         "stop_at_eos",  "max_ctx", NULL};
enum { A_PROMPT, A_MAX_NEW, A_TEMP, A_TOP_K, A_TOP_P, A_MIN_P, A_REP, A_REP_N, A_SEED, A_STOP, A_CHAT, A_SYSTEM,
       A_EOS, A_MAX_CTX, A_N };

/* Everything parsed, with private copies of the strings (a stream outlives
 * its arguments). */
typedef struct {
    char *prompt, *system;
    char **stop;
    int n_stop;
    wk_generate_opts o;
} gen_args;

static void args_free(gen_args *g) {
    PyMem_RawFree(g->prompt);
    PyMem_RawFree(g->system);
    for (int i = 0; i < g->n_stop; i++) PyMem_RawFree(g->stop[i]);
    PyMem_RawFree(g->stop);
    memset(g, 0, sizeof *g);
}

static char *str_copy(PyObject *o, const char *what) {
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, got %s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s) return NULL;
    if (memchr(s, 0, (size_t)n)) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        return NULL;
    }
    char *c = PyMem_RawMalloc((size_t)n + 1);
    if (!c) return PyErr_NoMemory(), NULL;
    memcpy(c, s, (size_t)n + 1);
    return c;
}

static int parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw, gen_args *g) {
    memset(g, 0, sizeof *g);
    PyObject *a[A_N];
    if (wkpy_parse(fname, args, nargs, kw, k_names, 1, a) < 0) return -1;
    wk_generate_opts_default(&g->o);
    wk_sampler_opts *s = &g->o.sampling;
    long long max_new, top_k, rep_n, seed, max_ctx;
    bool chat, eos;
    if (wkpy_int(a[A_MAX_NEW], g->o.max_new_tokens, &max_new) < 0 || wkpy_double(a[A_TEMP], s->temperature, &s->temperature) < 0 ||
        wkpy_int(a[A_TOP_K], s->top_k, &top_k) < 0 || wkpy_double(a[A_TOP_P], s->top_p, &s->top_p) < 0 ||
        wkpy_double(a[A_MIN_P], s->min_p, &s->min_p) < 0 ||
        wkpy_double(a[A_REP], s->repeat_penalty, &s->repeat_penalty) < 0 ||
        wkpy_int(a[A_REP_N], s->repeat_last_n, &rep_n) < 0 || wkpy_int(a[A_SEED], 0, &seed) < 0 ||
        wkpy_bool(a[A_CHAT], false, &chat) < 0 || wkpy_bool(a[A_EOS], true, &eos) < 0 ||
        wkpy_int(a[A_MAX_CTX], 0, &max_ctx) < 0)
        return -1;
    if (seed < 0) {
        PyErr_Format(PyExc_ValueError, "%s(): seed must be >= 0", fname);
        return -1;
    }
    g->o.max_new_tokens = max_new;
    s->top_k = top_k;
    s->repeat_last_n = rep_n;
    s->seed = (uint64_t)seed;
    g->o.chat = chat;
    g->o.stop_at_eos = eos;
    g->o.max_ctx = max_ctx;
    if (!(g->prompt = str_copy(a[A_PROMPT], "prompt"))) goto fail;
    if (a[A_SYSTEM] && a[A_SYSTEM] != Py_None && !(g->system = str_copy(a[A_SYSTEM], "system"))) goto fail;
    g->o.system = g->system;
    PyObject *stop = a[A_STOP];
    if (stop && stop != Py_None) {
        PyObject *seq = PyUnicode_Check(stop) ? PyTuple_Pack(1, stop) : PySequence_Fast(stop, "stop must be a str or a list of str");
        if (!seq) goto fail;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        g->stop = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *g->stop);
        if (!g->stop) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
            if (!(g->stop[i] = str_copy(it, "a stop string"))) {
                Py_DECREF(seq);
                goto fail;
            }
            g->n_stop++;
            if (!g->stop[i][0]) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_ValueError, "%s(): a stop string is empty", fname);
                goto fail;
            }
        }
        Py_DECREF(seq);
        g->o.stop = (const char *const *)g->stop;
        g->o.n_stop = g->n_stop;
    }
    return 0;
fail:
    args_free(g);
    return -1;
}

/* model argument: a wick.Llama (new reference) or a path loaded now */
static PyObject *model_arg(PyObject *o, const char *fname) {
    if (wkpy_llama_of(o)) return Py_NewRef(o);
    if (!PyUnicode_Check(o) && !PyObject_HasAttrString(o, "__fspath__"))
        return PyErr_Format(PyExc_TypeError, "%s(): model must be a wick.Llama or a path, got %s", fname,
                            Py_TYPE(o)->tp_name);
    return wkpy_llama_load(o, NULL, NULL);
}

/* ---- generate ---- */

typedef struct {
    char *buf;
    size_t n, cap;
    bool oom, interrupted;
} text_sink;

static int sink_put(text_sink *k, const char *bytes, size_t n) {
    if (k->n + n + 1 > k->cap) {
        size_t cap = (k->n + n + 1) * 2;
        char *b = PyMem_RawRealloc(k->buf, cap);
        if (!b) {
            k->oom = true;
            return 1;
        }
        k->buf = b;
        k->cap = cap;
    }
    memcpy(k->buf + k->n, bytes, n);
    k->n += n;
    return 0;
}

/* wk_generate's callback, without the GIL: take it briefly to see Ctrl-C */
static int on_text(void *ctx, const char *bytes, size_t n) {
    text_sink *k = ctx;
    if (sink_put(k, bytes, n)) return 1;
    PyGILState_STATE st = PyGILState_Ensure();
    int sig = PyErr_CheckSignals();
    PyGILState_Release(st);
    if (sig < 0) {
        k->interrupted = true;
        return 1;
    }
    return 0;
}

static PyObject *run_generate(PyObject *model, gen_args *g) {
    text_sink k = {0};
    g->o.on_text = on_text;
    g->o.ctx = &k;
    wk_status st;
    const wk_llama *m = wkpy_llama_of(model);
    Py_BEGIN_ALLOW_THREADS st = wk_generate(m, g->prompt, &g->o, NULL);
    Py_END_ALLOW_THREADS
    PyObject *r = NULL;
    if (k.interrupted) { /* the signal's exception is set */
        if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    } else if (k.oom)
        PyErr_NoMemory();
    else if (st != WK_OK)
        wkpy_raise();
    else
        r = PyUnicode_DecodeUTF8(k.buf ? k.buf : "", (Py_ssize_t)k.n, "replace");
    PyMem_RawFree(k.buf);
    return r;
}

/* ---- stream: the generate loop one token per step ---- */

typedef struct {
    PyObject_HEAD
    PyObject *model;
    const wk_llama *m;
    const wk_tokenizer *tok;
    gen_args args;
    wk_sampler *sampler;
    wk_kv_cache *cache;
    int32_t *ids; /* the prompt then every sampled id (the sampler's history) */
    int64_t nh, n_prompt, max_new, room, n_generated, vocab;
    float *logits;
    char *piece;
    size_t piece_cap;
    wk_token_stream ts;
    wk__stop_text out;
    text_sink pending; /* text passed on by the holdback, not yielded yet */
    int32_t eos[3];
    int n_eos;
    int32_t last;      /* the sampled id whose forward pass is still to run */
    bool started, need_forward, done, busy;
    int stop_reason;   /* -1 while running; wk_generate_stats' codes */
} stream_obj;

static PyTypeObject stream_type;

static void stream_release(stream_obj *s) {
    wk_sampler_free(s->sampler);
    wk_kv_cache_free(s->cache);
    PyMem_RawFree(s->ids);
    PyMem_RawFree(s->logits);
    PyMem_RawFree(s->piece);
    wk__stop_text_free(&s->out);
    s->sampler = NULL;
    s->cache = NULL;
    s->ids = NULL;
    s->logits = NULL;
    s->piece = NULL;
}

static void stream_dealloc(stream_obj *s) {
    stream_release(s);
    PyMem_RawFree(s->pending.buf);
    args_free(&s->args);
    Py_XDECREF(s->model);
    PyObject_Free(s);
}

static int stream_on_text(void *ctx, const char *bytes, size_t n) { return sink_put(ctx, bytes, n); }

static bool is_eos(const stream_obj *s, int32_t id) {
    for (int i = 0; i < s->n_eos; i++)
        if (s->eos[i] == id) return true;
    return false;
}

/* everything before the first token: the prompt, its ids, the buffers */
static int stream_setup(stream_obj *s) {
    const wk_llama_config *cfg = wk_llama_config_of(s->m);
    const wk_generate_opts *o = &s->args.o;
    s->tok = wk_llama_tokenizer(s->m);
    if (!s->tok) {
        PyErr_SetString(wkpy_error_class(WK_ERR_ARG), "stream: the model has no tokenizer");
        return -1;
    }
    if (!(s->sampler = wk_sampler_new(&o->sampling))) return wkpy_raise_int();
    char *chat_text = NULL;
    const char *text = s->args.prompt;
    if (o->chat) {
        const char *tmpl = wk_llama_chat_template(s->m);
        int64_t need = tmpl ? wk_chat_render(tmpl, o->system, text, NULL, 0) : -1;
        if (need < 0) {
            PyErr_SetString(wkpy_error_class(WK_ERR_ARG),
                            tmpl ? "stream: chat: the model's chat template is not ChatML-style; wick cannot render it"
                                 : "stream: chat: the model file has no chat template");
            return -1;
        }
        if (!(chat_text = PyMem_RawMalloc((size_t)need + 1))) return PyErr_NoMemory(), -1;
        wk_chat_render(tmpl, o->system, text, chat_text, (size_t)need + 1);
        text = chat_text;
    }
    int64_t n = wkpy_encode(s->tok, text, strlen(text), WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, &s->ids);
    PyMem_RawFree(chat_text);
    if (n < 0) return n == -2 ? (PyErr_NoMemory(), -1) : wkpy_raise_int();
    int64_t ctx = cfg->max_ctx;
    if (o->max_ctx > 0 && o->max_ctx < ctx) ctx = o->max_ctx;
    if (n == 0 || n > ctx) {
        PyErr_Format(wkpy_error_class(WK_ERR_ARG),
                     n ? "stream: the prompt has %lld tokens, more than the context of %lld"
                       : "stream: the prompt is empty (no tokens, no BOS)",
                     (long long)n, (long long)ctx);
        return -1;
    }
    s->n_prompt = s->nh = n;
    s->room = ctx - n + 1;
    s->max_new = o->max_new_tokens > 0 && o->max_new_tokens < s->room ? o->max_new_tokens : s->room;
    int32_t *ids = PyMem_RawRealloc(s->ids, (size_t)(n + s->room) * sizeof *ids);
    if (!ids) return PyErr_NoMemory(), -1;
    s->ids = ids;
    if (cfg->eos >= 0) s->eos[s->n_eos++] = cfg->eos;
    if (wk_tokenizer_eos(s->tok) >= 0) s->eos[s->n_eos++] = wk_tokenizer_eos(s->tok);
    if (o->chat && wk_tokenizer_find(s->tok, "<|im_end|>") >= 0) s->eos[s->n_eos++] = wk_tokenizer_find(s->tok, "<|im_end|>");
    if (!o->stop_at_eos) s->n_eos = 0;
    s->vocab = cfg->vocab;
    s->piece_cap = 3 * (wk_tokenizer_max_token_bytes(s->tok) + 4) + 64;
    s->logits = PyMem_RawMalloc((size_t)s->vocab * sizeof *s->logits);
    s->piece = PyMem_RawMalloc(s->piece_cap);
    if (!s->logits || !s->piece) return PyErr_NoMemory(), -1;
    s->out = (wk__stop_text){.stop = o->stop, .n_stop = o->n_stop, .on_text = stream_on_text, .ctx = &s->pending};
    return 0;
}

static wk_status run_forward(stream_obj *s, const int32_t *ids, int64_t n) {
    wk_tensor *l = wk_llama_forward(s->m, s->cache, ids, n, false);
    if (!l) return wk_last_status();
    wk_status st = wk_to_host_f32(l, s->logits, (size_t)s->vocab);
    wk_tensor_free(l);
    return st;
}

/* the end of the text: flush the UTF-8 held back, then the stop holdback */
static wk_status stream_finish(stream_obj *s, int reason) {
    s->done = true;
    s->stop_reason = reason;
    int64_t np = wk_token_stream_flush(&s->ts, s->piece, s->piece_cap);
    if (np < 0) return wk_last_status();
    int rc = wk__stop_text_put(&s->out, s->piece, (size_t)np);
    if (rc == WK__TEXT_GO_ON) rc = wk__stop_text_finish(&s->out);
    if (rc == WK__TEXT_STOP_STRING) s->stop_reason = 2;
    return rc == WK__TEXT_OOM || s->pending.oom ? WK_ERR_OOM : WK_OK;
}

/* One token, without the GIL: the forward pass still owed, sample, decode. */
static wk_status stream_step(stream_obj *s) {
    wk_status st;
    if (!s->started) {
        s->started = true;
        /* every sampled token but the last is run */
        if (!(s->cache = wk_kv_cache_new(s->m, s->n_prompt + s->max_new - 1))) return wk_last_status();
        if ((st = run_forward(s, s->ids, s->n_prompt))) return st;
    } else if (s->need_forward) {
        s->need_forward = false;
        if ((st = run_forward(s, &s->last, 1))) return st;
    }
    int32_t id = wk_sampler_sample(s->sampler, s->logits, s->vocab, s->ids, s->nh);
    if (id < 0) return wk_last_status();
    s->n_generated++;
    if (is_eos(s, id)) return stream_finish(s, 1);
    s->ids[s->nh++] = id;
    int64_t np = wk_token_stream_put(s->tok, &s->ts, id, true, s->piece, s->piece_cap);
    if (np < 0) return wk_last_status();
    int rc = wk__stop_text_put(&s->out, s->piece, (size_t)np);
    if (rc == WK__TEXT_OOM || s->pending.oom) return WK_ERR_OOM;
    if (rc != WK__TEXT_GO_ON) { /* a stop string: the text ends before it */
        s->done = true;
        s->stop_reason = rc;
        return WK_OK;
    }
    if (s->n_generated >= s->max_new)
        return stream_finish(s, s->args.o.max_new_tokens > 0 && s->args.o.max_new_tokens <= s->room ? 0 : 4);
    s->last = id;
    s->need_forward = true;
    return WK_OK;
}

static PyObject *stream_next(stream_obj *s) {
    if (s->busy) return PyErr_Format(PyExc_ValueError, "stream: already running in another thread");
    while (!s->done && s->pending.n == 0) {
        s->busy = true;
        wk_status st;
        Py_BEGIN_ALLOW_THREADS st = stream_step(s);
        Py_END_ALLOW_THREADS
        s->busy = false;
        if (st != WK_OK) {
            s->done = true;
            s->pending.n = 0;
            stream_release(s);
            if (st == WK_ERR_OOM && wk_last_status() != WK_ERR_OOM) return PyErr_NoMemory();
            return wkpy_raise();
        }
        if (PyErr_CheckSignals() < 0) return NULL;
    }
    if (s->done) stream_release(s); /* the model's memory for this sequence, now */
    if (s->pending.n == 0) return NULL; /* StopIteration */
    PyObject *r = PyUnicode_DecodeUTF8(s->pending.buf, (Py_ssize_t)s->pending.n, "replace");
    s->pending.n = 0;
    return r;
}

static PyObject *stream_close(stream_obj *s, PyObject *unused) {
    (void)unused;
    if (s->busy) return PyErr_Format(PyExc_ValueError, "stream: already running in another thread");
    if (!s->done) {
        s->done = true;
        s->stop_reason = 3;
    }
    s->pending.n = 0;
    stream_release(s);
    Py_RETURN_NONE;
}

static PyObject *g_n_prompt(stream_obj *s, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)s->n_prompt);
}
static PyObject *g_n_generated(stream_obj *s, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)s->n_generated);
}
static PyObject *g_stop_reason(stream_obj *s, void *c) {
    (void)c;
    static const char *const k[] = {"length", "eos", "stop", "closed", "context"};
    if (!s->done || s->stop_reason < 0 || s->stop_reason > 4) Py_RETURN_NONE;
    return PyUnicode_FromString(k[s->stop_reason]);
}

static PyMethodDef stream_methods[] = {
    {"close", (PyCFunction)stream_close, METH_NOARGS, "close()\nStop now and free the sequence's cache."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef stream_getset[] = {
    {"n_prompt", (getter)g_n_prompt, NULL, "Tokens in the prompt (after the chat template).", NULL},
    {"n_generated", (getter)g_n_generated, NULL, "Tokens sampled so far (an EOS that ended the text too).", NULL},
    {"stop_reason", (getter)g_stop_reason, NULL,
     "None while running; then 'length' (max_new_tokens), 'eos', 'stop' (a stop string), 'closed' or 'context'.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject stream_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.TextStream",
    .tp_basicsize = sizeof(stream_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TextStream()\nThe iterator wick.stream / Llama.stream return (not made directly): each item is the text of the tokens sampled since the last (complete "
              "UTF-8; text that could still become a stop string is held until it cannot).",
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)stream_next,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

PyObject *wkpy_textgen(bool stream, PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    const char *fname = stream ? "stream" : "generate";
    gen_args g;
    if (parse_args(fname, args, nargs, kw, &g) < 0) return NULL;
    /* the sampler options are checked before any work (wk_sampler_new's rules) */
    wk_sampler *probe = wk_sampler_new(&g.o.sampling);
    if (!probe) {
        args_free(&g);
        return wkpy_raise();
    }
    wk_sampler_free(probe);
    PyObject *m = model_arg(model, fname);
    if (!m) {
        args_free(&g);
        return NULL;
    }
    if (!stream) {
        PyObject *r = run_generate(m, &g);
        args_free(&g);
        Py_DECREF(m);
        return r;
    }
    stream_obj *s = PyObject_New(stream_obj, &stream_type);
    if (!s) {
        args_free(&g);
        Py_DECREF(m);
        return NULL;
    }
    /* every field zero first: dealloc may run from any point below */
    memset((char *)s + sizeof(PyObject), 0, sizeof *s - sizeof(PyObject));
    s->model = m;
    s->m = wkpy_llama_of(m);
    s->args = g;
    s->args.o.stop = (const char *const *)s->args.stop;
    s->stop_reason = -1;
    if (stream_setup(s) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

/* wick.generate(model, prompt, ...) / wick.stream(model, prompt, ...) */
static PyObject *module_textgen(bool stream, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    if (nargs < 1)
        return PyErr_Format(PyExc_TypeError, "%s() missing required argument 'model' (a wick.Llama or a path; "
                                             "positional)", stream ? "stream" : "generate");
    return wkpy_textgen(stream, args[0], args + 1, nargs - 1, kw);
}
static PyObject *f_generate(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return module_textgen(false, args, nargs, kw);
}
static PyObject *f_stream(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    return module_textgen(true, args, nargs, kw);
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef textgen_functions[] = {
    {"generate", FAST(f_generate),
     "generate(model, prompt, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, "
     "repeat_penalty=1.0, repeat_last_n=64, seed=0, stop=None, chat=False, system=None, stop_at_eos=True, "
     "max_ctx=0)\nThe text the model (a wick.Llama, or a path loaded for this call) generates after prompt "
     "(special tokens in it parsed; chat wraps it in the model's ChatML template, system its system message). "
     "temperature <= 0 is greedy; top_k <= 0, top_p >= 1, min_p <= 0 and repeat_penalty 1 are off; the same seed "
     "gives the same text. Stops at max_new_tokens (<= 0: the context), at EOS (stop_at_eos), or before a stop "
     "string (a str or a list of str)."},
    {"stream", FAST(f_stream),
     "stream(model, prompt, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, "
     "repeat_penalty=1.0, repeat_last_n=64, seed=0, stop=None, chat=False, system=None, stop_at_eos=True, "
     "max_ctx=0)\nAn iterator of text pieces, yielded as the tokens are sampled; ''.join(stream(...)) == "
     "generate(...) with the same arguments."},
    {NULL, NULL, 0, NULL},
};

static int textgen_init(PyObject *m) {
    if (PyType_Ready(&stream_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "TextStream", (PyObject *)&stream_type);
}

const wkpy_part wkpy_part_textgen = {NULL, NULL, textgen_functions, textgen_init};
