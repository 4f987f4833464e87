/* wick.Sampler (wk_sampler: the token sampler of wick.generate, for custom
 * decoding loops over Llama.forward) and wick.chat_render (the model's chat
 * template applied to a prompt). */
#include "wkpy.h"
#include "wick/generate.h"

typedef struct {
    PyObject_HEAD
    wk_sampler *s;
    PyThread_type_lock lock; /* a sampler's state (its generator) is not shared between threads */
} wkpy_sampler;

static PyTypeObject sampler_type;

static PyObject *sampler_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n", "seed",
                            NULL};
    wk_sampler_opts o;
    wk_sampler_opts_default(&o);
    long long top_k = o.top_k, last_n = o.repeat_last_n;
    unsigned long long seed = o.seed;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|dLdddLK", names, &o.temperature, &top_k, &o.top_p, &o.min_p,
                                     &o.repeat_penalty, &last_n, &seed))
        return NULL;
    o.top_k = top_k;
    o.repeat_last_n = last_n;
    o.seed = seed;
    wkpy_sampler *self = (wkpy_sampler *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (!(self->lock = PyThread_allocate_lock())) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (!(self->s = wk_sampler_new(&o))) {
        Py_DECREF(self);
        return wkpy_raise();
    }
    return (PyObject *)self;
}

static void sampler_dealloc(wkpy_sampler *self) {
    wk_sampler_free(self->s);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* history: a list / tuple of ints (or None) into a PyMem array */
static int history_arg(PyObject *o, int32_t **out, int64_t *n) {
    *out = NULL;
    *n = 0;
    if (!o || o == Py_None) return 0;
    PyObject *seq = PySequence_Fast(o, "history must be a sequence of token ids");
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    int32_t *v = PyMem_Malloc(sizeof *v * (size_t)(k ? k : 1));
    if (!v) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (x == -1 && PyErr_Occurred()) {
            PyMem_Free(v);
            Py_DECREF(seq);
            return -1;
        }
        if (x < INT32_MIN || x > INT32_MAX) {
            PyMem_Free(v);
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "token id %ld out of range", x);
            return -1;
        }
        v[i] = (int32_t)x;
    }
    Py_DECREF(seq);
    *out = v;
    *n = k;
    return 0;
}

static PyObject *sampler_sample(wkpy_sampler *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"logits", "history", NULL};
    PyObject *a[2];
    if (wkpy_parse("sample", args, nargs, kw, names, 1, a) < 0) return NULL;
    bool owned;
    wk_tensor *t = wkpy_operand(a[0], NULL, &owned);
    if (!t) return NULL;
    int64_t n = wk_numel(t);
    float *logits = PyMem_Malloc(sizeof(float) * (size_t)(n ? n : 1));
    int32_t *hist = NULL;
    int64_t nh = 0;
    PyObject *r = NULL;
    if (!logits) PyErr_NoMemory();
    else if (history_arg(a[1], &hist, &nh) == 0) {
        wk_status st;
        int32_t id = -1;
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        st = wk_to_host_f32(t, logits, (size_t)n); /* any float dtype, any layout: the row-major values */
        if (st == WK_OK) id = wk_sampler_sample(self->s, logits, n, hist, nh);
        PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
        if (st != WK_OK || id < 0) wkpy_raise();
        else r = PyLong_FromLong(id);
    }
    PyMem_Free(logits);
    PyMem_Free(hist);
    if (owned) wk_tensor_free(t);
    return r;
}

static PyMethodDef sampler_methods[] = {
    {"sample", (PyCFunction)(void (*)(void))sampler_sample, METH_FASTCALL | METH_KEYWORDS,
     "sample(logits, history=None) -> int: the next token id from the logits (a 1-D tensor or array of the "
     "vocabulary's scores, any float dtype), penalising ids in history (the repetition penalty's window). "
     "Candidates are ordered by logit, the lower id first on ties; the same seed and logits give the same ids "
     "on every machine."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject sampler_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "wick.Sampler",
    .tp_basicsize = sizeof(wkpy_sampler),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sampler(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, repeat_last_n=64, "
              "seed=0)\nwick.generate's token sampler for your own decoding loop (temperature <= 0: greedy; "
              "top_k <= 0, top_p >= 1, min_p <= 0, repeat_penalty 1: off). Bad options raise wick.ArgError.",
    .tp_dealloc = (destructor)sampler_dealloc,
    .tp_methods = sampler_methods,
    .tp_new = sampler_new,
};

static PyObject *f_chat_render(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"template", "user", "system", NULL};
    PyObject *a[3];
    if (wkpy_parse("chat_render", args, nargs, kw, names, 2, a) < 0) return NULL;
    const char *tmpl = PyUnicode_Check(a[0]) ? PyUnicode_AsUTF8(a[0]) : NULL;
    const char *user = PyUnicode_Check(a[1]) ? PyUnicode_AsUTF8(a[1]) : NULL;
    const char *sys = a[2] && a[2] != Py_None ? (PyUnicode_Check(a[2]) ? PyUnicode_AsUTF8(a[2]) : NULL) : NULL;
    if (!tmpl || !user || (a[2] && a[2] != Py_None && !sys)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "chat_render(): template, user and system are str");
        return NULL;
    }
    int64_t need = wk_chat_render(tmpl, sys, user, NULL, 0);
    if (need < 0)
        return PyErr_Format(PyExc_ValueError, "chat_render(): the template is not one wick can render "
                                              "(ChatML-style <|im_start|>role ... <|im_end|> templates are)");
    char *out = PyMem_Malloc((size_t)need + 1);
    if (!out) return PyErr_NoMemory();
    wk_chat_render(tmpl, sys, user, out, (size_t)need + 1);
    PyObject *r = PyUnicode_DecodeUTF8(out, (Py_ssize_t)need, "surrogateescape");
    PyMem_Free(out);
    return r;
}

static PyMethodDef sampler_functions[] = {
    {"chat_render", (PyCFunction)(void (*)(void))f_chat_render, METH_FASTCALL | METH_KEYWORDS,
     "chat_render(template, user, system=None) -> str: the prompt wrapped in the chat template (Llama.chat_template), "
     "ending with the assistant's generation prompt; system None takes the template's default system message."},
    {NULL, NULL, 0, NULL},
};

static int sampler_init(PyObject *m) {
    if (PyType_Ready(&sampler_type) < 0) return -1;
    return PyModule_AddObjectRef(m, "Sampler", (PyObject *)&sampler_type);
}

const wkpy_part wkpy_part_sampler = {NULL, NULL, sampler_functions, sampler_init};
