/* GGML block quantization from Python: t.quantize("q4_0") / wick.quantize,
 * t.dequantize(dtype=f32) / wick.dequantize, and wick.qmatmul(x, w), the
 * quantized matmul y = x @ w.T with w (N, K) in a block dtype (or f16 /
 * bf16) and x (..., K) float: the weight is the quantized operand, given in
 * nn.Linear's (out_features, in_features) layout. */
#include "wkpy.h"
#include "wick/nn.h"

/* the block dtype argument: anything wkpy_dtype_from takes, but quantized */
static int block_dtype(PyObject *o, const char *fname, wk_dtype *dt) {
    if (!o || o == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s(): dtype is required (a block dtype: 'q4_0', wick.q8_0, ...)", fname);
        return -1;
    }
    if (wkpy_dtype_from(o, WK_F32, dt) < 0) return -1;
    if (!wk_dtype_is_quantized(*dt)) {
        PyErr_Format(PyExc_ValueError, "%s(): %s is not a block-quantized dtype (q4_0, q4_1, q5_0, q5_1, q8_0, "
                                       "q2_K ... q6_K, iq4_nl, ...)", fname, wk_dtype_name(*dt));
        return -1;
    }
    return 0;
}

static PyObject *quantize_impl(const char *fname, PyObject *input, PyObject *dtype) {
    wk_dtype dt;
    if (block_dtype(dtype, fname, &dt) < 0) return NULL;
    bool owned;
    wk_tensor *x = wkpy_operand(input, NULL, &owned);
    if (!x) return NULL;
    wk_tensor *r;
    WKPY_NOGIL(wkpy_big(x), r = wk_quantize(x, dt));
    if (owned) wk_tensor_free(x);
    return wkpy_wrap(r);
}

static PyObject *dequantize_impl(const char *fname, PyObject *input, PyObject *dtype) {
    wk_tensor *w = wkpy_tensor_arg(input, fname, "input");
    wk_dtype dt;
    if (!w || wkpy_dtype_from(dtype, WK_F32, &dt) < 0) return NULL;
    if (wk_dtype_is_quantized(dt)) {
        PyErr_Format(PyExc_ValueError, "%s(): dtype must be an element dtype, got %s", fname, wk_dtype_name(dt));
        return NULL;
    }
    wk_tensor *r;
    WKPY_NOGIL(wkpy_big(w), r = wk_dequantize(w, dt));
    return wkpy_wrap(r);
}

static PyObject *m_quantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dtype", NULL};
    PyObject *a[1];
    if (wkpy_parse("quantize", args, nargs, kw, names, 1, a) < 0) return NULL;
    return quantize_impl("quantize", self, a[0]);
}

static PyObject *m_dequantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    static const char *const names[] = {"dtype", NULL};
    PyObject *a[1];
    if (wkpy_parse("dequantize", args, nargs, kw, names, 0, a) < 0) return NULL;
    return dequantize_impl("dequantize", self, a[0]);
}

static PyObject *f_quantize(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "dtype", NULL};
    PyObject *a[2];
    if (wkpy_parse("quantize", args, nargs, kw, names, 2, a) < 0) return NULL;
    return quantize_impl("quantize", a[0], a[1]);
}

static PyObject *f_dequantize(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "dtype", NULL};
    PyObject *a[2];
    if (wkpy_parse("dequantize", args, nargs, kw, names, 1, a) < 0) return NULL;
    return dequantize_impl("dequantize", a[0], a[1]);
}

static PyObject *f_qmatmul(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
    (void)m;
    static const char *const names[] = {"input", "weight", NULL};
    PyObject *a[2];
    if (wkpy_parse("qmatmul", args, nargs, kw, names, 2, a) < 0) return NULL;
    wk_tensor *w = wkpy_tensor_arg(a[1], "qmatmul", "weight");
    if (!w) return NULL;
    bool owned;
    wk_tensor *x = wkpy_operand(a[0], NULL, &owned);
    if (!x) return NULL;
    wk_tensor *r;
    Py_BEGIN_ALLOW_THREADS r = wk_qmatmul(x, w);
    Py_END_ALLOW_THREADS
    if (owned) wk_tensor_free(x);
    return wkpy_wrap(r);
}

static PyObject *g_is_quantized(PyObject *self, void *c) {
    (void)c;
    return PyBool_FromLong(wk_dtype_is_quantized(wk_tensor_dtype(wkpy_t(self))));
}

#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
static PyMethodDef quant_methods[] = {
    {"quantize", FAST(m_quantize),
     "quantize(dtype)\nA new contiguous tensor of the block dtype (q4_0, q4_1, q5_0, q5_1, q8_0, the K types, ...): "
     "ggml's reference quantizers; the last dim must be a multiple of the block (32 or 256)."},
    {"dequantize", FAST(m_dequantize),
     "dequantize(dtype=wick.f32)\nThe values of a block-quantized tensor as a new contiguous tensor of an element "
     "dtype (bit-exact with gguf-py's f32 values)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef quant_getset[] = {
    {"is_quantized", (getter)g_is_quantized, NULL, "The dtype is a GGML block dtype.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef quant_functions[] = {
    {"quantize", FAST(f_quantize), "quantize(input, dtype)\nSame as input.quantize(dtype) (arrays work too)."},
    {"dequantize", FAST(f_dequantize), "dequantize(input, dtype=wick.f32)\nSame as input.dequantize(dtype)."},
    {"qmatmul", FAST(f_qmatmul),
     "qmatmul(input, weight)\ninput @ weight.T with weight (N, K) block-quantized (or f16 / bf16), rows "
     "contiguous, and input (..., K) f32 / f16 / bf16: ggml's quantized matmul (input's rows are quantized to "
     "the weight's partner type, q8_0 / q8_1 / q8_K). Result (..., N) in input's dtype."},
    {NULL, NULL, 0, NULL},
};

const wkpy_part wkpy_part_quant = {quant_methods, quant_getset, quant_functions, NULL};
