/* Internal header of the CPython extension wick._wick: the ground
 * (py_base.h) and the helpers the parts share.
 *
 * Layout: one file per job, each a "part" (parts.h) that contributes
 * Tensor methods, Tensor properties and module functions. Layers, each
 * file calling only into the ones below it (tools/depgraph.py --files
 * python/src: no cycle):
 *  - ground: py_base.c (the Tensor object, wkpy_wrap, wkpy_status, the GIL
 *    test) and errors.c, declared by py_base.h;
 *  - the shared helpers declared below (args.c, convert.c, py_dtype.c,
 *    py_device.c, index.c, ops_elementwise.c, files.c, ...) and the parts;
 *  - roof: py_tensor.c (the Tensor's protocols: numbers, buffer, mapping,
 *    repr, properties) and module.c (every part's tables assembled into the
 *    type, PyInit__wick). Nothing below includes parts.h or names them.
 * A new part is one file plus one line in parts.h.
 *
 * Rules every part follows (they are what makes the binding wick):
 *  - Every wick failure becomes the exception of its status, with wick's
 *    message (`return wkpy_raise();` after a NULL / non-WK_OK); a Python
 *    argument error is a TypeError / ValueError raised before wick runs.
 *    Nothing aborts the interpreter.
 *  - A wk_tensor returned by wick is handed to wkpy_wrap (it takes the
 *    reference); temporaries are wk_tensor_free'd on every path.
 *  - Long ops run with the GIL released: WKPY_NOGIL(big, stmt). Tiny ones
 *    keep it (releasing costs more than a 2x2 add).
 *  - Arguments are parsed with wkpy_parse (METH_FASTCALL | METH_KEYWORDS):
 *    tiny-tensor calls must stay cheaper than PyTorch's. */
#ifndef WKPY_H
#define WKPY_H
#include "py_base.h"
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "wick/autograd.h"

/* ---- py_dtype.c: wick.dtype objects (wick.float32, wick.f32, ..., wick.q4_0) ---- */
/* The dtype object for dt (new reference). */
PyObject *wkpy_dtype_obj(wk_dtype dt);
/* A dtype from a wick.dtype, a str ("f32", "float32", "torch.float32",
 * "q4_0"), a numpy dtype or type, a torch dtype; None gives dflt. 0 / -1. */
int       wkpy_dtype_from(PyObject *o, wk_dtype dflt, wk_dtype *out);

/* ---- py_device.c: wick.device objects ("cpu", "cuda", "cuda:1") ---- */
PyObject *wkpy_device_obj(wk_device *dev);
/* A device from a wick.device, a str, a torch.device (via str); None gives
 * the CPU. 0 / -1 (wick's error raised: a CUDA device without the backend
 * is wick.NotCompiledError). */
int       wkpy_device_from(PyObject *o, wk_device **out);

/* ---- args.c: argument parsing ---- */
/* Parse fastcall arguments by name into out[0..n-1] (borrowed; NULL when
 * absent). names: NULL-terminated; the first nreq are required. Raises a
 * TypeError naming fname on unknown / duplicate / missing arguments. */
int wkpy_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
               const char *const *names, int nreq, PyObject **out);
/* A shape from an int, a sequence of ints, or (varargs form) the tuple of
 * positional arguments themselves: zeros(2, 3) and zeros((2, 3)). */
int wkpy_shape(PyObject *o, int64_t *shape, int *rank);
int wkpy_shape_fast(PyObject *const *args, Py_ssize_t nargs, int64_t *shape, int *rank);
/* dim=: None (every dim: *n = -1), an int, or a sequence of ints. */
int wkpy_dims(PyObject *o, int *dims, int *n);
/* Python ints / floats / bools (None allowed where dflt is used). */
int wkpy_int(PyObject *o, long long dflt, long long *out);
int wkpy_double(PyObject *o, double dflt, double *out);
int wkpy_bool(PyObject *o, bool dflt, bool *out);
/* A tensor operand: a Tensor (borrowed, *owned false); a Python number
 * (a rank-0 tensor in like's dtype and device, or f32 / i64 on the CPU
 * with like NULL); anything with the buffer protocol (zero-copy) or a nested
 * sequence (*owned true: free it). NULL with an exception otherwise. */
wk_tensor *wkpy_operand(PyObject *o, const wk_tensor *like, bool *owned);
/* A Tensor argument, or a TypeError naming fname and what. */
wk_tensor *wkpy_tensor_arg(PyObject *o, const char *fname, const char *what);
/* A list / tuple of Tensors as a malloc'd array of pointers borrowed from
 * o's items (free with PyMem_Free; o must stay alive meanwhile). */
wk_tensor **wkpy_tensor_list(PyObject *o, const char *fname, int *n);

/* ---- convert.c ---- */
/* A CPU tensor from nested sequences of numbers (dtype dt; dt_given false
 * infers: any float -> f32, else bool / int -> i64). */
wk_tensor *wkpy_from_nested(PyObject *data, wk_dtype dt, bool dt_given);
/* Zero-copy over any object with the buffer protocol (numpy arrays): the
 * tensor keeps the exporter alive until wick releases the memory. */
wk_tensor *wkpy_from_buffer(PyObject *obj);
/* Nested lists of t's values (integer dtypes exact, through int64). */
PyObject  *wkpy_tolist(const wk_tensor *t);
/* The value of a one-element tensor: a float, or an exact int. */
PyObject  *wkpy_item(const wk_tensor *t);
/* One value as a Python float / int / bool by dtype. */
PyObject  *wkpy_scalar(double v, wk_dtype dt);

/* ---- index.c: Tensor.__getitem__ / __setitem__ ---- */
PyObject *wkpy_getitem(PyObject *self, PyObject *key);
int       wkpy_setitem(PyObject *self, PyObject *key, PyObject *value);

/* ---- py_index ---- */
/* An index operand: a Tensor (borrowed; *is_mask when u8), a numpy bool
 * array or a list of bools (a u8 mask, a copy), any other buffer (zero-copy),
 * a nested list of ints (i64), an object with __array__ (torch tensors,
 * via numpy). *owned: free it. NULL with an exception otherwise. */
wk_tensor *wkpy_index_operand(PyObject *o, bool *owned, bool *is_mask);
/* ---- elementwise (ops_elementwise.c) ---- */
/* a op b for any pair of Tensors, Python / numpy numbers, arrays and lists:
 * numbers go through wk_binary_scalar / wk_cmp_scalar (a number on the left
 * takes the other side's dtype and device), and a float beside an integer
 * tensor computes in f32 (torch; comparisons in f64). op is a wk_binary_op,
 * or a wk_cmp_op when cmp. New reference, or NULL with an exception (a
 * TypeError for operands of unknown types). */
PyObject *wkpy_elementwise(PyObject *a, PyObject *b, int op, bool cmp);
/* ---- py_models (files.c, gguf_file.c, py_tokenizer.c, llm.c, textgen.c, encoder.c) ---- */
/* A path argument (str or os.PathLike) as bytes in the file system's
 * encoding (new reference in *bytes), or a TypeError naming fname. */
int wkpy_path(PyObject *o, const char *fname, PyObject **bytes);
/* The reader of a wick.GGUF object (NULL when o is not one, or closed). */
typedef struct wk_gguf wk_gguf;
const wk_gguf *wkpy_gguf_of(PyObject *o);
/* py_tokenizer.c: a wick.Tokenizer over t borrowed from owner (a model it keeps
 * alive; None for a NULL t); the tokenizer of a Tokenizer object (or NULL);
 * encode into *ids (PyMem_RawMalloc'd; -1 wick's error, -2 no memory);
 * ids from a list of ints or an integer tensor (*ids PyMem_RawFree'd). */
typedef struct wk_tokenizer wk_tokenizer;
PyObject *wkpy_tokenizer_wrap(const wk_tokenizer *t, PyObject *owner);
const wk_tokenizer *wkpy_tokenizer_of(PyObject *o);
int64_t wkpy_encode(const wk_tokenizer *t, const char *s, size_t len, unsigned flags, int32_t **ids);
int wkpy_ids(PyObject *o, const char *fname, int32_t **ids, int64_t *n);
/* llm.c: the model of a wick.Llama (or NULL); a new Llama loaded from path. */
typedef struct wk_lm wk_lm;
const wk_lm *wkpy_llama_of(PyObject *o);
PyObject *wkpy_llama_load(PyObject *path, PyObject *device, PyObject *dtype, PyObject *kv_dtype);
/* What Llama.generate / Llama.stream call: textgen.c's wkpy_textgen, which
 * module.c stores here at import (textgen.c sits above llm.c: it loads
 * and reads Llamas, so llm.c does not name it). */
extern PyObject *(*wkpy_llama_textgen)(bool stream, PyObject *model, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kw);
/* textgen.c: generate (a str) or stream (an iterator of str) over model (a
 * Llama), the arguments from the prompt on. */
PyObject *wkpy_textgen(bool stream, PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);
/* Model.chat(messages, ...): textgen.c's wkpy_chat, stored here by module.c. */
extern PyObject *(*wkpy_llama_chat)(PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);
PyObject *wkpy_chat(PyObject *model, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);
/* ---- autograd ---- */
/* The process-wide gradient store (autograd.c) behind Tensor.grad /
 * backward and the optimizers, and its lock. wkpy_grads_lock: GIL held (it
 * is released while waiting); wkpy_grads_lock_nogil: GIL released. Never
 * run Python code, or free a tensor whose memory may be numpy's, while
 * holding it with the GIL. */
extern wk_grad_store *wkpy_grads;
void wkpy_grads_lock(void);
void wkpy_grads_lock_nogil(void);
void wkpy_grads_unlock(void);
/* (autograd.c also sets py_base.h's wkpy_on_leaf_dealloc.) */
/* A one-shot replacement for the next Tensor.backward's pass, armed by
 * dist.c (DistributedDataParallel's forward: the backward of its output
 * also all-reduces the gradients). run replaces wk_backward (the GIL
 * released, the store's lock held); release is then called with the GIL
 * held (dropping what arming took). Tensor.backward takes and clears it
 * (GIL held), so it runs for exactly one pass. */
typedef struct wkpy_backward_hook {
    wk_status (*run)(void *ctx, const wk_tensor *root, wk_grad_store *gs, const wk_backward_opts *o);
    void (*release)(void *ctx);
    void *ctx;
} wkpy_backward_hook;
extern wkpy_backward_hook wkpy_next_backward;

#endif
