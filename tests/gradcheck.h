/* Gradient checks shared by the autograd tests: autograd's gradient of
 * L = sum(f(inputs) * R) (R a fixed random tensor, so every output element
 * weighs differently) against central finite differences in f64. */
#ifndef WICK_GRADCHECK_H
#define WICK_GRADCHECK_H
#include <stdbool.h>
#include "wick/wick.h"

/* The function under test: a new tensor from the inputs (which it must not
 * free), or NULL on error. */
typedef wk_tensor *(*gc_fn)(wk_tensor *const *in, int nin, void *ctx);

typedef struct gc_opts {
    double eps;        /* finite-difference step; 0: 1e-6 */
    double atol, rtol; /* 0: 1e-6, 1e-5 */
    const bool *track; /* which inputs get gradients; NULL: every float input */
    bool second_order; /* also check d/dx (grad . V) (Hessian-vector) against differences of gradients */
} gc_opts;

/* Runs the check on inputs `in` (f64 CPU tensors, any layout: the
 * gradient is taken through that layout, the differences on contiguous
 * copies of the values). Fails the cmocka test, naming `what`, input and
 * element, on a mismatch or an error. Returns the worst |auto - numeric|
 * relative to atol + rtol * |numeric| (<= 1 passes). */
double gc_check(const char *what, gc_fn fn, void *ctx, wk_tensor *const *in, int nin, const gc_opts *o);

/* Autograd's gradients of sum(fn(in) * R) wrt each tracked input (out[i]
 * NULL for the others); R is made from seed (uniform in [-1, 1]) in the
 * output's shape and dtype. For comparisons with PyTorch. */
wk_status gc_grads(gc_fn fn, void *ctx, wk_tensor *const *in, int nin, const bool *track, uint64_t seed,
                   wk_tensor **out);

/* R of gc_grads: the same values for the same (seed, shape), in dtype dt. */
wk_tensor *gc_weights(const int64_t *shape, int rank, wk_dtype dt, uint64_t seed);

#endif
