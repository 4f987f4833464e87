/* Text generation from Python: wick.generate(model, prompt, ...) -> str and
 * wick.stream(model, prompt, ...), an iterator of text pieces, both over the
 * library's step API (wk_gen_start / wk_gen_step, wick/generate.h): one
 * loop, so a stream's pieces join to generate()'s text with the same
 * settings, and both report the same stop reason. `model` is a wick.Model
 * or a path (loaded for this call only: nothing is cached globally).
 *
 * The GIL is released while a step runs (the model's forward pass and the
 * sampling); generate() takes it back between tokens to see Ctrl-C; a
 * stream yields each piece as soon as its token is sampled and runs that
 * token's forward pass at the next step. */
#include "wkpy.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "wick/generate.h"
#include <stdlib.h>
#include <string.h>

/* ---- options (shared by generate and stream) ---- */

/* generate / stream take a prompt first, Model.chat messages, ChatSession a
 * model: the same options after it */
static const char *const k_names[] = {"prompt", "max_new_tokens", "temperature", "top_k",  "top_p",
                                      "min_p",  "repeat_penalty", "repeat_last_n", "seed", "stop",
                                      "chat",   "system",         "stop_at_eos",  "max_ctx", "return_stats",
                                      NULL};
static const char *const k_chat_names[] = {"messages", "max_new_tokens", "temperature", "top_k",  "top_p",
                                           "min_p",    "repeat_penalty", "repeat_last_n", "seed", "stop",
                                           "chat",     "system",         "stop_at_eos",  "max_ctx", "return_stats",
                                           NULL};
static const char *const k_session_names[] = {"model", "max_new_tokens", "temperature", "top_k",  "top_p",
                                              "min_p", "repeat_penalty", "repeat_last_n", "seed", "stop",
                                              "chat",  "system",         "stop_at_eos",  "max_ctx", "return_stats",
                                              NULL};
enum { A_PROMPT, A_MAX_NEW, A_TEMP, A_TOP_K, A_TOP_P, A_MIN_P, A_REP, A_REP_N, A_SEED, A_STOP, A_CHAT, A_SYSTEM,
       A_EOS, A_MAX_CTX, A_RET_STATS, A_N };

/* Everything parsed, with private copies of the strings (wk_gen_start runs
 * without the GIL; it copies what the session keeps). */
typedef struct {
    char *prompt, *system;
    char **stop;
    int n_stop;
    bool return_stats;
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

/* first NULL: generate / stream (the prompt is copied); else *first is the
 * first argument (borrowed) and the names are chat's or ChatSession's, which
 * take no chat= (and ChatSession no return_stats=). */
static int parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kw, gen_args *g,
                      const char *const *names, PyObject **first) {
    memset(g, 0, sizeof *g);
    PyObject *a[A_N];
    if (wkpy_parse(fname, args, nargs, kw, names, 1, a) < 0) return -1;
    if (first && (a[A_CHAT] || (names == k_session_names && a[A_RET_STATS]))) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", fname,
                     a[A_CHAT] ? "chat" : "return_stats");
        return -1;
    }
    wk_generate_opts_default(&g->o);
    wk_sampler_opts *s = &g->o.sampling;
    long long max_new, top_k, rep_n, seed, max_ctx;
    bool chat, eos, ret_stats;
    if (wkpy_int(a[A_MAX_NEW], g->o.max_new_tokens, &max_new) < 0 || wkpy_double(a[A_TEMP], s->temperature, &s->temperature) < 0 ||
        wkpy_int(a[A_TOP_K], s->top_k, &top_k) < 0 || wkpy_double(a[A_TOP_P], s->top_p, &s->top_p) < 0 ||
        wkpy_double(a[A_MIN_P], s->min_p, &s->min_p) < 0 ||
        wkpy_double(a[A_REP], s->repeat_penalty, &s->repeat_penalty) < 0 ||
        wkpy_int(a[A_REP_N], s->repeat_last_n, &rep_n) < 0 || wkpy_int(a[A_SEED], 0, &seed) < 0 ||
        wkpy_bool(a[A_CHAT], false, &chat) < 0 || wkpy_bool(a[A_EOS], true, &eos) < 0 ||
        wkpy_int(a[A_MAX_CTX], 0, &max_ctx) < 0 || wkpy_bool(a[A_RET_STATS], false, &ret_stats) < 0)
        return -1;
    if (ret_stats && !strcmp(fname, "stream")) {
        PyErr_Format(PyExc_TypeError, "%s(): return_stats is generate()'s (a stream has .stats)", fname);
        return -1;
    }
    g->return_stats = ret_stats;
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
    if (first) *first = a[A_PROMPT];
    else if (!(g->prompt = str_copy(a[A_PROMPT], "prompt"))) goto fail;
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

/* model argument: a wick.Model (new reference) or a path loaded now */
static PyObject *model_arg(PyObject *o, const char *fname) {
    if (wkpy_llama_of(o)) return Py_NewRef(o);
    if (!PyUnicode_Check(o) && !PyObject_HasAttrString(o, "__fspath__"))
        return PyErr_Format(PyExc_TypeError, "%s(): model must be a wick.Model or a path, got %s", fname,
                            Py_TYPE(o)->tp_name);
    return wkpy_llama_load(o, NULL, NULL, NULL);
}

/* ---- what generate and stream share ---- */

/* The stop reason's Python name: None while running. */
static PyObject *reason_obj(wk_stop_reason r, bool closed) {
    if (closed) return PyUnicode_FromString("closed");
    switch (r) {
    case WK_STOP_MAX_TOKENS: return PyUnicode_FromString("length");
    case WK_STOP_EOS: return PyUnicode_FromString("eos");
    case WK_STOP_STRING: return PyUnicode_FromString("stop");
    case WK_STOP_CALLBACK: return PyUnicode_FromString("closed");
    case WK_STOP_CONTEXT_FULL: return PyUnicode_FromString("context");
    case WK_STOP_NONE: break;
    }
    Py_RETURN_NONE;
}

/* wk_generate_stats as a dict, the stop reason by name */
static PyObject *stats_dict(const wk_generate_stats *st, bool closed) {
    PyObject *reason = reason_obj(st->stop_reason, closed);
    if (!reason) return NULL;
    PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:d,s:d,s:d,s:N}", "n_prompt", (long long)st->n_prompt, "n_prefill",
                                (long long)st->n_prefill, "n_refill", (long long)st->n_refill, "n_generated", (long long)st->n_generated, "prefill_ms",
                                st->prefill_ms, "first_token_ms", st->first_token_ms, "decode_ms", st->decode_ms,
                                "stop_reason", reason);
    return d;
}

/* A session over the model, started without the GIL. */
static wk_gen *session_start(PyObject *model, const gen_args *g) {
    const wk_lm *m = wkpy_llama_of(model);
    wk_gen *s;
    Py_BEGIN_ALLOW_THREADS s = wk_gen_start(m, g->prompt, &g->o);
    Py_END_ALLOW_THREADS
    if (!s) wkpy_raise();
    return s;
}

/* ---- generate ---- */

typedef struct {
    char *buf;
    size_t n, cap;
} text_sink;

static int sink_put(text_sink *k, const char *bytes, size_t n) {
    if (k->n + n + 1 > k->cap) {
        size_t cap = (k->n + n + 1) * 2;
        char *b = PyMem_RawRealloc(k->buf, cap);
        if (!b) return -1;
        k->buf = b;
        k->cap = cap;
    }
    memcpy(k->buf + k->n, bytes, n);
    k->n += n;
    return 0;
}

/* A session's steps to the end, then wk_gen_free; Ctrl-C is seen between
 * tokens. The text, or (text, stats) with return_stats; *stats (may be
 * NULL) gets the statistics either way. */
static PyObject *run_to_end(wk_gen *s, bool return_stats, wk_generate_stats *stats) {
    text_sink k = {0};
    wk_status st = WK_OK;
    bool oom = false;
    wk_gen_token t;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS st = wk_gen_step(s, &t);
        if (st == WK_OK && t.n_text) oom = sink_put(&k, t.text, t.n_text) < 0;
        Py_END_ALLOW_THREADS
        if (st != WK_OK || oom || t.stop != WK_STOP_NONE) break;
        if (PyErr_CheckSignals() < 0) break; /* the signal's exception is set */
    }
    PyObject *r = NULL;
    if (st != WK_OK) wkpy_raise();
    else if (oom) PyErr_NoMemory();
    else if (!PyErr_Occurred()) {
        r = PyUnicode_DecodeUTF8(k.buf ? k.buf : "", (Py_ssize_t)k.n, "replace");
        if (r && return_stats) {
            wk_generate_stats gs;
            wk_gen_stats(s, &gs);
            PyObject *d = stats_dict(&gs, false);
            PyObject *pair = d ? PyTuple_Pack(2, r, d) : NULL;
            Py_XDECREF(d);
            Py_SETREF(r, pair);
        }
    }
    PyMem_RawFree(k.buf);
    if (stats) wk_gen_stats(s, stats);
    Py_BEGIN_ALLOW_THREADS wk_gen_free(s); /* a chat reply: it joins the conversation */
    Py_END_ALLOW_THREADS
    return r;
}

static PyObject *run_generate(PyObject *model, const gen_args *g) {
    wk_gen *s = session_start(model, g);
    return s ? run_to_end(s, g->return_stats, NULL) : NULL;
}

/* ---- stream: the same steps, one piece per next() ---- */

typedef struct {
    PyObject_HEAD
    PyObject *model;
    wk_gen *g;               /* NULL once the stream ended (the cache freed) */
    wk_generate_stats stats; /* as of the last step */
    bool done, closed, busy;
} stream_obj;

static PyTypeObject stream_type;

/* the model's memory for this sequence, now */
static void stream_release(stream_obj *s) {
    if (s->g) wk_gen_stats(s->g, &s->stats);
    wk_gen_free(s->g);
    s->g = NULL;
}

static void stream_dealloc(stream_obj *s) {
    stream_release(s);
    Py_XDECREF(s->model);
    PyObject_Free(s);
}

static PyObject *stream_next(stream_obj *s) {
    if (s->busy) return PyErr_Format(PyExc_ValueError, "stream: already running in another thread");
    while (!s->done) {
        s->busy = true;
        wk_status st;
        wk_gen_token t;
        Py_BEGIN_ALLOW_THREADS st = wk_gen_step(s->g, &t);
        Py_END_ALLOW_THREADS
        s->busy = false;
        if (st != WK_OK) {
            s->done = true;
            stream_release(s);
            return wkpy_raise();
        }
        wk_gen_stats(s->g, &s->stats);
        s->done = t.stop != WK_STOP_NONE;
        if (t.n_text) {
            PyObject *r = PyUnicode_DecodeUTF8(t.text, (Py_ssize_t)t.n_text, "replace");
            if (s->done) stream_release(s);
            return r;
        }
        if (!s->done && PyErr_CheckSignals() < 0) return NULL;
    }
    stream_release(s);
    return NULL; /* StopIteration */
}

static PyObject *stream_close(stream_obj *s, PyObject *unused) {
    (void)unused;
    if (s->busy) return PyErr_Format(PyExc_ValueError, "stream: already running in another thread");
    if (!s->done) s->done = s->closed = true;
    stream_release(s);
    Py_RETURN_NONE;
}

static PyObject *g_n_prompt(stream_obj *s, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)s->stats.n_prompt);
}
static PyObject *g_n_generated(stream_obj *s, void *c) {
    (void)c;
    return PyLong_FromLongLong((long long)s->stats.n_generated);
}
static PyObject *g_stop_reason(stream_obj *s, void *c) {
    (void)c;
    return reason_obj(s->stats.stop_reason, s->closed);
}
static PyObject *g_stats(stream_obj *s, void *c) {
    (void)c;
    return stats_dict(&s->stats, s->closed);
}

static PyMethodDef stream_methods[] = {
    {"close", (PyCFunction)stream_close, METH_NOARGS, "close()\nStop now and free the sequence's cache."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef stream_getset[] = {
    {"n_prompt", (getter)g_n_prompt, NULL, "Tokens in the prompt (after the chat template).", NULL},
    {"n_generated", (getter)g_n_generated, NULL, "Tokens sampled so far (an EOS that ended the text too).", NULL},
    {"stop_reason", (getter)g_stop_reason, NULL,
     "None while running; then 'length' (max_new_tokens), 'eos', 'stop' (a stop string), 'closed' or 'context' "
     "(the context is full).",
     NULL},
    {"stats", (getter)g_stats, NULL,
     "A dict as of the last piece: n_prompt, n_prefill, n_generated, prefill_ms, first_token_ms, decode_ms, stop_reason "
     "(generate(..., return_stats=True)'s).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject stream_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.TextStream",
    .tp_basicsize = sizeof(stream_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TextStream()\nThe iterator wick.stream / Model.stream return (not made directly): each item is the text of the tokens sampled since the last (complete "
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
    if (parse_args(fname, args, nargs, kw, &g, k_names, NULL) < 0) return NULL;
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
    s->stats.stop_reason = WK_STOP_NONE;
    s->g = session_start(m, &g);
    args_free(&g);
    if (!s->g) {
        Py_DECREF(s);
        return NULL;
    }
    wk_gen_stats(s->g, &s->stats);
    return (PyObject *)s;
}

/* wick.generate(model, prompt, ...) / wick.stream(model, prompt, ...) */
static PyObject *module_textgen(bool stream, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    if (nargs < 1)
        return PyErr_Format(PyExc_TypeError, "%s() missing required argument 'model' (a wick.Model or a path; "
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
     "max_ctx=0, return_stats=False)\nThe text the model (a wick.Model, or a path loaded for this call) generates after prompt "
     "(special tokens in it parsed; chat wraps it in the model's ChatML template, system its system message). "
     "temperature <= 0 is greedy; top_k <= 0, top_p >= 1, min_p <= 0 and repeat_penalty 1 are off; the same seed "
     "gives the same text. Stops at max_new_tokens (<= 0: the context), at EOS (stop_at_eos), before a stop "
     "string (a str or a list of str), or when the context (max_ctx: at most that many positions) is full. "
     "return_stats=True returns (text, stats), stats a dict: n_prompt, n_prefill, n_generated, prefill_ms, first_token_ms, "
     "decode_ms, stop_reason ('length', 'eos', 'stop' or 'context', as TextStream.stop_reason)."},
    {"stream", FAST(f_stream),
     "stream(model, prompt, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, "
     "repeat_penalty=1.0, repeat_last_n=64, seed=0, stop=None, chat=False, system=None, stop_at_eos=True, "
     "max_ctx=0)\nAn iterator of text pieces, yielded as the tokens are sampled; ''.join(stream(...)) == "
     "generate(...) with the same arguments."},
    {NULL, NULL, 0, NULL},
};

/* ---- chat: wick.ChatSession and Model.chat, over wk_chat_session ---- */

typedef struct {
    PyObject_HEAD
    PyObject *model;
    wk_chat_session *s;
    wk_generate_stats last; /* the last reply's */
    bool has_last, busy;
} chat_obj;

static PyTypeObject chat_type;

/* A session over model with g's options (started with the GIL: cheap). */
static wk_chat_session *chat_new(PyObject *model, const gen_args *g) {
    wk_chat_session *s = wk_chat_session_new(wkpy_llama_of(model), &g->o);
    if (!s) wkpy_raise();
    return s;
}

/* The role and content of one message: a dict or a (role, content) pair;
 * borrowed UTF-8 (valid while item lives). */
static int message_of(PyObject *item, const char **role, const char **content) {
    PyObject *r, *c;
    if (PyDict_Check(item)) {
        r = PyDict_GetItemString(item, "role");
        c = PyDict_GetItemString(item, "content");
    } else if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2) {
        r = PyTuple_GET_ITEM(item, 0);
        c = PyTuple_GET_ITEM(item, 1);
    } else {
        PyErr_Format(PyExc_TypeError, "a message must be a dict with 'role' and 'content' or a (role, content) "
                                      "pair, got %s", Py_TYPE(item)->tp_name);
        return -1;
    }
    if (!r || !c || !PyUnicode_Check(r) || !PyUnicode_Check(c)) {
        PyErr_SetString(PyExc_TypeError, "a message's role and content must be str");
        return -1;
    }
    Py_ssize_t nr, nc;
    if (!(*role = PyUnicode_AsUTF8AndSize(r, &nr)) || !(*content = PyUnicode_AsUTF8AndSize(c, &nc))) return -1;
    if ((size_t)nr != strlen(*role) || (size_t)nc != strlen(*content)) {
        PyErr_SetString(PyExc_ValueError, "a message contains a NUL character");
        return -1;
    }
    return 0;
}

static int add_message(wk_chat_session *s, PyObject *item) {
    const char *role, *content;
    if (message_of(item, &role, &content) < 0) return -1;
    if (wk_chat_session_add(s, role, content) != WK_OK) {
        wkpy_raise();
        return -1;
    }
    return 0;
}

/* The reply to the conversation so far: the text (or (text, stats)). */
static PyObject *chat_reply(chat_obj *c, bool return_stats, bool *started) {
    if (c->busy) return PyErr_Format(PyExc_RuntimeError, "ChatSession: in use by another thread");
    c->busy = true;
    wk_gen *g;
    Py_BEGIN_ALLOW_THREADS g = wk_chat_session_reply(c->s);
    Py_END_ALLOW_THREADS
    PyObject *r = g ? run_to_end(g, return_stats, &c->last) : wkpy_raise();
    c->has_last = c->has_last || g;
    if (started) *started = g != NULL;
    c->busy = false;
    return r;
}

/* Model.chat(messages, ...): a one-off session */
PyObject *wkpy_chat(PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    gen_args g;
    PyObject *msgs;
    if (parse_args("chat", args, nargs, kw, &g, k_chat_names, &msgs) < 0) return NULL;
    PyObject *seq = PySequence_Fast(msgs, "chat(): messages must be a list of messages");
    chat_obj c = {.model = model};
    PyObject *r = NULL;
    if (seq && (c.s = chat_new(model, &g))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        Py_ssize_t i = 0;
        while (i < n && add_message(c.s, PySequence_Fast_GET_ITEM(seq, i)) == 0) i++;
        if (i == n) r = chat_reply(&c, g.return_stats, NULL);
        wk_chat_session_free(c.s);
    }
    Py_XDECREF(seq);
    args_free(&g);
    return r;
}

static PyObject *chat_new_py(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    /* tp_new's tuple + dict to wkpy_parse's fastcall form */
    Py_ssize_t np = PyTuple_GET_SIZE(args), nk = kw ? PyDict_GET_SIZE(kw) : 0;
    PyObject **v = PyMem_Malloc((size_t)(np + nk + 1) * sizeof *v);
    PyObject *names = nk ? PyTuple_New(nk) : NULL;
    if (!v || (nk && !names)) {
        PyMem_Free(v);
        Py_XDECREF(names);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < np; i++) v[i] = PyTuple_GET_ITEM(args, i);
    Py_ssize_t pos = 0, j = 0;
    PyObject *k, *val;
    while (kw && PyDict_Next(kw, &pos, &k, &val)) {
        PyTuple_SET_ITEM(names, j, Py_NewRef(k));
        v[np + j++] = val;
    }
    gen_args g;
    PyObject *model = NULL, *r = NULL;
    int rc = parse_args("ChatSession", v, np, names, &g, k_session_names, &model);
    PyMem_Free(v);
    Py_XDECREF(names);
    if (rc < 0) return NULL;
    if (!wkpy_llama_of(model)) {
        args_free(&g);
        return PyErr_Format(PyExc_TypeError, "ChatSession(): model must be a wick.Model, got %s",
                            Py_TYPE(model)->tp_name);
    }
    chat_obj *c = PyObject_New(chat_obj, &chat_type);
    if (c) {
        memset((char *)c + sizeof(PyObject), 0, sizeof *c - sizeof(PyObject));
        c->model = Py_NewRef(model);
        if (!(c->s = chat_new(model, &g))) Py_CLEAR(c);
        r = (PyObject *)c;
    }
    args_free(&g);
    return r;
}

static void chat_dealloc(chat_obj *c) {
    wk_chat_session_free(c->s);
    Py_XDECREF(c->model);
    PyObject_Free(c);
}

static int chat_idle(chat_obj *c) {
    if (!c->busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "ChatSession: in use by another thread");
    return -1;
}

static PyObject *cs_add(chat_obj *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"role", "content", NULL};
    PyObject *a[2];
    if (wkpy_parse("add", args, nargs, kw, names, 2, a) < 0 || chat_idle(c) < 0) return NULL;
    PyObject *pair = PyTuple_Pack(2, a[0], a[1]);
    int rc = pair ? add_message(c->s, pair) : -1;
    Py_XDECREF(pair);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *cs_send(chat_obj *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"text", "return_stats", NULL};
    PyObject *a[2];
    bool ret;
    if (wkpy_parse("send", args, nargs, kw, names, 1, a) < 0 || wkpy_bool(a[1], false, &ret) < 0 ||
        chat_idle(c) < 0)
        return NULL;
    PyObject *user = PyUnicode_FromString("user");
    PyObject *pair = user ? PyTuple_Pack(2, user, a[0]) : NULL;
    Py_XDECREF(user);
    int rc = pair ? add_message(c->s, pair) : -1;
    Py_XDECREF(pair);
    if (rc < 0) return NULL;
    bool started = false;
    PyObject *r = chat_reply(c, ret, &started);
    if (!started && c->s) wk_chat_session_pop(c->s); /* a reply that never started (too long...): drop the turn */
    return r;
}

static PyObject *cs_reply(chat_obj *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"return_stats", NULL};
    PyObject *a[1];
    bool ret;
    if (wkpy_parse("reply", args, nargs, kw, names, 0, a) < 0 || wkpy_bool(a[0], false, &ret) < 0) return NULL;
    return chat_reply(c, ret, NULL);
}

static PyObject *cs_pop(chat_obj *c, PyObject *unused) {
    (void)unused;
    if (chat_idle(c) < 0) return NULL;
    return wkpy_status(wk_chat_session_pop(c->s));
}

static PyObject *cs_reset(chat_obj *c, PyObject *unused) {
    (void)unused;
    if (chat_idle(c) < 0) return NULL;
    return wkpy_status(wk_chat_session_reset(c->s));
}

static PyObject *cs_messages(chat_obj *c, void *unused) {
    (void)unused;
    size_t n;
    const wk_chat_message *m = wk_chat_session_messages(c->s, &n);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *d = Py_BuildValue("{s:s,s:s}", "role", m[i].role, "content", m[i].content);
        if (!d) Py_CLEAR(l);
        else PyList_SET_ITEM(l, (Py_ssize_t)i, d);
    }
    return l;
}

static PyObject *cs_cached(chat_obj *c, void *unused) {
    (void)unused;
    return PyLong_FromLongLong((long long)wk_chat_session_cached(c->s));
}
static PyObject *cs_stats(chat_obj *c, void *unused) {
    (void)unused;
    if (!c->has_last) Py_RETURN_NONE;
    return stats_dict(&c->last, false);
}
static PyObject *cs_model(chat_obj *c, void *unused) {
    (void)unused;
    return Py_NewRef(c->model);
}

static PyMethodDef chat_methods[] = {
    {"send", FAST(cs_send),
     "send(text, return_stats=False)\nAdd a user message and return the assistant's reply (it joins the "
     "conversation). With return_stats, (reply, stats): n_prompt is the whole conversation, n_prefill the "
     "tokens this turn ran (the rest came from the KV cache)."},
    {"add", FAST(cs_add), "add(role, content)\nAppend a message (any role the template knows)."},
    {"reply", FAST(cs_reply),
     "reply(return_stats=False)\nThe assistant's reply to the conversation so far (it joins the conversation)."},
    {"pop", (PyCFunction)cs_pop, METH_NOARGS, "pop()\nDrop the last message (to regenerate a reply, say)."},
    {"reset", (PyCFunction)cs_reset, METH_NOARGS,
     "reset()\nForget the conversation but the system message; the KV cache still serves its prefix."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef chat_getset[] = {
    {"messages", (getter)cs_messages, NULL, "The conversation: a list of {'role': ..., 'content': ...} dicts.", NULL},
    {"cached", (getter)cs_cached, NULL, "Tokens the KV cache holds.", NULL},
    {"stats", (getter)cs_stats, NULL, "The last reply's stats dict (generate(..., return_stats=True)'s), or None.",
     NULL},
    {"model", (getter)cs_model, NULL, "The wick.Model the session runs.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject chat_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.ChatSession",
    .tp_basicsize = sizeof(chat_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ChatSession(model, max_new_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, "
              "repeat_penalty=1.0, repeat_last_n=64, seed=0, stop=None, system=None, stop_at_eos=True, "
              "max_ctx=0)\nA multi-turn conversation with model (its chat template), whose KV cache keeps the "
              "history: each reply renders the whole conversation and runs only the tokens the cache lacks. "
              "Options apply to every reply (max_new_tokens per reply; every reply samples with seed). A "
              "conversation longer than the context (max_ctx: at most that many positions) raises "
              "ValueError: pop() or reset() and go on. The GIL is released while a reply runs.",
    .tp_new = chat_new_py,
    .tp_dealloc = (destructor)chat_dealloc,
    .tp_methods = chat_methods,
    .tp_getset = chat_getset,
};

static int textgen_init(PyObject *m) {
    if (PyType_Ready(&stream_type) < 0 || PyType_Ready(&chat_type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "ChatSession", (PyObject *)&chat_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "TextStream", (PyObject *)&stream_type);
}

const wkpy_part wkpy_part_textgen = {NULL, NULL, textgen_functions, textgen_init};
