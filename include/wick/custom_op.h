/* Custom ops: user code as an op on wick tensors (candle's CustomOp1/2/3
 * and InplaceOp1/2/3). An op is a set of C callbacks, one per backend kind
 * (CPU, CUDA), registered once; calling it on a device whose kind has no
 * callback is a clean WK_ERR_NOT_COMPILED naming the op and the backend.
 *
 *   static wk_status my_cpu(void *user, int nin, const wk_custom_view *in,
 *                           const wk_custom_view *out) { ... }
 *   wk_custom_op_def def = {.name = "my_op", .num_inputs = 1, .cpu = my_cpu};
 *   wk_custom_op *op = wk_custom_op_register(&def);
 *   wk_tensor *y = wk_custom_op1(op, x);
 *
 * Callbacks see each tensor as a wk_custom_view: the storage buffer (on the
 * CPU a host pointer; on CUDA a device pointer) plus the view's shape,
 * element strides and element offset, so element (i, j) of a rank-2 view is
 * ((T *)buf)[offset + i*stride[0] + j*stride[1]]. The output of op1/2/3 is
 * fresh and contiguous (offset 0). CUDA callbacks run after the device has
 * finished the work queued before them and must have finished their own
 * work when they return (synchronize the stream they launch on). */
#ifndef WICK_CUSTOM_OP_H
#define WICK_CUSTOM_OP_H
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_custom_view {
    void *buf;
    wk_dtype dtype;
    int rank;
    const int64_t *shape;
    const int64_t *stride; /* elements */
    int64_t offset;        /* elements from buf to the view's first element */
    wk_device *device;
} wk_custom_view;

/* The output's shape (at most WK_MAX_RANK dims) and dtype from the inputs.
 * NULL in the definition: input 0's shape and dtype. */
typedef wk_status (*wk_custom_shape_fn)(void *user, int nin, const wk_custom_view *in, int64_t *out_shape,
                                        int *out_rank, wk_dtype *out_dtype);
/* op1/2/3: read in[0..nin), write the contiguous out. */
typedef wk_status (*wk_custom_compute_fn)(void *user, int nin, const wk_custom_view *in, const wk_custom_view *out);
/* in-place op1/2/3: write into in[0] (through its view), read the others. */
typedef wk_status (*wk_custom_inplace_fn)(void *user, int nin, const wk_custom_view *in);
/* For autograd: grad_inputs[i] (set to a new tensor, or NULL for "no
 * gradient") from the inputs, the forward output and its gradient. Each
 * gradient must have its input's shape, dtype and device: otherwise the
 * backward pass fails with WK_ERR_SHAPE (WK_ERR_DTYPE, WK_ERR_DEVICE)
 * naming the op, the input and both shapes. */
typedef wk_status (*wk_custom_backward_fn)(void *user, int nin, const wk_tensor *const *inputs, const wk_tensor *output,
                                           const wk_tensor *grad_output, wk_tensor **grad_inputs);

typedef struct wk_custom_op_def {
    const char *name;                 /* copied; appears in every error */
    int num_inputs;                   /* 1, 2 or 3 */
    void *user;                       /* passed to every callback */
    wk_custom_shape_fn out_shape;     /* optional */
    wk_custom_compute_fn cpu, cuda;   /* per backend kind; NULL: not on that backend */
    wk_custom_inplace_fn cpu_inplace, cuda_inplace;
    wk_custom_backward_fn backward;   /* optional; stored for autograd */
    bool contiguous_inputs;           /* hand the callbacks contiguous inputs (copies when needed) */
} wk_custom_op_def;

typedef struct wk_custom_op wk_custom_op;

/* A new op from a definition (copied); NULL + WK_ERR_ARG when the name is
 * missing, num_inputs is not 1..3 or no callback is given.
 *
 * Lifetime: an op is reference counted (atomically). register returns the
 * caller's reference and wk_custom_op_free drops it; every autograd node
 * that recorded the op holds one more, dropped when that graph is freed.
 * So freeing the op while a recorded graph is alive is safe: a later
 * backward still runs its callback, and the op's memory goes with the
 * last reference. The op must not be called (op1/2/3, inplace) after the
 * caller's wk_custom_op_free. def.user is not owned: it must stay valid
 * while any graph that recorded the op can still run backward. */
wk_custom_op *wk_custom_op_register(const wk_custom_op_def *def);
void          wk_custom_op_free(wk_custom_op *op);
const char   *wk_custom_op_name(const wk_custom_op *op);

/* Run on the inputs' device (all on one device); the count must match
 * num_inputs (WK_ERR_ARG). NULL inputs propagate. */
wk_tensor *wk_custom_op1(const wk_custom_op *op, const wk_tensor *a);
wk_tensor *wk_custom_op2(const wk_custom_op *op, const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_custom_op3(const wk_custom_op *op, const wk_tensor *a, const wk_tensor *b, const wk_tensor *c);
wk_status  wk_custom_inplace1(const wk_custom_op *op, wk_tensor *a);
wk_status  wk_custom_inplace2(const wk_custom_op *op, wk_tensor *a, const wk_tensor *b);
wk_status  wk_custom_inplace3(const wk_custom_op *op, wk_tensor *a, const wk_tensor *b, const wk_tensor *c);

/* The stored backward callback (for autograd): whether there is one, and a
 * call of it; WK_ERR_NOT_COMPILED naming the op when there is none.
 * grad_inputs has num_inputs slots, set to NULL first. */
bool      wk_custom_op_has_backward(const wk_custom_op *op);
wk_status wk_custom_op_backward(const wk_custom_op *op, const wk_tensor *const *inputs, const wk_tensor *output,
                                const wk_tensor *grad_output, wk_tensor **grad_inputs);

#ifdef __cplusplus
}
#endif
#endif /* WICK_CUSTOM_OP_H */
