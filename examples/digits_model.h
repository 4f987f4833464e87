/*
 * The digits CNN shared by examples/digits_cnn.c and bench/bench_train.c
 * (header-only: static functions, so each program compiles its own copy).
 *
 *   x (N, 1, 8, 8) -> conv 1->16 3x3 pad 1 -> relu -> max pool 2
 *                  -> conv 16->32 3x3 pad 1 -> relu -> max pool 2
 *                  -> flatten (N, 128) -> linear 128->10 -> logits
 *
 * The parameter names are those of the same torch.nn.Module in
 * examples/digits_torch.py (conv1.weight, ...), so a checkpoint written
 * here loads there as a state_dict.
 */
#ifndef WICK_EXAMPLES_DIGITS_MODEL_H
#define WICK_EXAMPLES_DIGITS_MODEL_H
#include <stdint.h>
#include <stdio.h>

#include "wick/train.h"

#define DIGITS_NPARAMS 6

typedef struct digits_model {
    wk_conv2d_layer conv1, conv2;
    wk_linear fc;
    wk_tensor *params[DIGITS_NPARAMS]; /* borrowed from the layers */
} digits_model;

/* The names of params[], in order (a function: a static array would be
 * unused in programs that never save). */
static inline const char *const *digits_param_names(void) {
    static const char *const names[DIGITS_NPARAMS] = {
        "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias",
    };
    return names;
}

static inline void digits_model_free(digits_model *m) {
    wk_conv2d_layer_free(&m->conv1);
    wk_conv2d_layer_free(&m->conv2);
    wk_linear_free(&m->fc);
}

/* torch.nn's default init from the device generator seeded with seed, in
 * dtype dt (tests/test_mpi_ddp.c trains in f64). */
static inline wk_status digits_model_init_dt(digits_model *m, uint64_t seed, wk_dtype dt, wk_device *dev) {
    wk_conv_params p = {.padding = 1};
    wk_status st = wk_device_set_seed(dev, seed);
    if (st == WK_OK) st = wk_conv2d_layer_init(&m->conv1, 1, 16, 3, 3, &p, true, dt, dev);
    if (st == WK_OK) st = wk_conv2d_layer_init(&m->conv2, 16, 32, 3, 3, &p, true, dt, dev);
    if (st == WK_OK) st = wk_linear_init(&m->fc, 32 * 2 * 2, 10, true, dt, dev);
    if (st != WK_OK) return st;
    int n = wk_conv2d_layer_params(&m->conv1, m->params, DIGITS_NPARAMS);
    n += wk_conv2d_layer_params(&m->conv2, m->params + n, DIGITS_NPARAMS - n);
    n += wk_linear_params(&m->fc, m->params + n, DIGITS_NPARAMS - n);
    return n == DIGITS_NPARAMS ? WK_OK : WK_ERR_ARG;
}

static inline wk_status digits_model_init(digits_model *m, uint64_t seed, wk_device *dev) {
    return digits_model_init_dt(m, seed, WK_F32, dev);
}

/* result, after dropping the caller's reference to used: the forward frees
 * each intermediate once consumed, so only what the recorded nodes saved
 * stays alive and the backward can free it as it goes. */
static inline wk_tensor *digits_then(wk_tensor *used, wk_tensor *result) {
    wk_tensor_free(used);
    return result;
}

/* Logits (N, 10) of x (borrowed); the result is the caller's. */
static inline wk_tensor *digits_model_forward(const digits_model *m, const wk_tensor *x) {
    wk_tensor *h = wk_conv2d_layer_forward(&m->conv1, x);
    h = digits_then(h, wk_relu(h));
    h = digits_then(h, wk_max_pool2d(h, 2, 2, 2, 2, 0, 0));
    h = digits_then(h, wk_conv2d_layer_forward(&m->conv2, h));
    h = digits_then(h, wk_relu(h));
    h = digits_then(h, wk_max_pool2d(h, 2, 2, 2, 2, 0, 0));
    h = digits_then(h, wk_flatten(h, 1, 3));
    return digits_then(h, wk_linear_forward(&m->fc, h));
}

/* One training step on rows ids (i64 (B)) of xs / ys: forward, mean
 * cross-entropy, backward into gs (zeroed first; with ddp not NULL,
 * wk_ddp_backward: the gradients averaged over the ranks), optimizer step.
 * *loss gets the loss (this rank's rows) before the step. */
static inline wk_status digits_train_step_ddp(const digits_model *m, wk_optimizer *opt, wk_grad_store *gs,
                                              wk_ddp *ddp, const wk_tensor *xs, const wk_tensor *ys,
                                              const wk_tensor *ids, double *loss) {
    wk_scope_begin();
    wk_tensor *xb = wk_index_select(xs, ids, 0);
    wk_tensor *yb = wk_index_select(ys, ids, 0);
    wk_tensor *logits = digits_model_forward(m, xb);
    wk_tensor *l = wk_cross_entropy(logits, yb, NULL);
    wk_tensor_free(logits);
    wk_grad_store_zero(gs);
    wk_status st = !l ? WK_ERR_ARG : ddp ? wk_ddp_backward(ddp, l, gs, NULL) : wk_backward(l, gs, NULL);
    if (st == WK_OK) st = wk_item(l, loss);
    if (st == WK_OK) st = wk_optimizer_step(opt, gs);
    wk_scope_end();
    return st;
}

/* The same without data parallelism. */
static inline wk_status digits_train_step(const digits_model *m, wk_optimizer *opt, wk_grad_store *gs,
                                   const wk_tensor *xs, const wk_tensor *ys, const wk_tensor *ids, double *loss) {
    return digits_train_step_ddp(m, opt, gs, NULL, xs, ys, ids, loss);
}

/* Accuracy of the model on (xs, ys) in [0, 1], or a negative value on error. */
static inline double digits_accuracy(const digits_model *m, const wk_tensor *xs, const wk_tensor *ys) {
    int64_t n = wk_dim(ys, 0);
    double acc = -1.0;
    wk_no_grad_begin();
    wk_scope_begin();
    wk_tensor *pred = wk_to_dtype(wk_argmax(digits_model_forward(m, xs), 1, false), WK_I64);
    wk_tensor *hits = wk_sum_all(wk_to_dtype(wk_cmp(pred, ys, WK_EQ), WK_F64));
    double h;
    if (hits && n > 0 && wk_item(hits, &h) == WK_OK) acc = h / (double)n;
    wk_scope_end();
    wk_no_grad_end();
    return acc;
}

#endif
