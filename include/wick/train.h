/*
 * wick — training pieces on top of autograd (include/wick/autograd.h):
 * parameters, optimizers, gradient clipping, losses, small layers, and
 * checkpoints (parameters + optimizer state) in safetensors files.
 *
 * Optimizer steps run in place on the parameters' storage inside a no-grad
 * region and allocate nothing per step (the state buffers are made on the
 * first step). Errors as everywhere: a status / NULL and wk_last_error().
 */
#ifndef WICK_TRAIN_H
#define WICK_TRAIN_H
#include "wick/autograd.h"
#include "wick/layers.h"
#include "wick/dist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Also declared by autograd.h; repeated so that including autograd.h first
 * (which pulls in wick.h, which pulls in this header before autograd.h's
 * body) still compiles. */
typedef struct wk_grad_store wk_grad_store;

/* ---------------------------------------------------------- parameters */

/* A parameter: a new contiguous copy of init that requires grad (a leaf). */
wk_tensor *wk_param_new(const wk_tensor *init);
/* Overwrite p's values with src's (same shape / dtype / device; src any
 * layout), in place and unrecorded. A src that shares storage with p is
 * refused (WK_ERR_ARG): an overlapping copy would read values it already
 * wrote. */
wk_status  wk_param_assign_(wk_tensor *p, const wk_tensor *src);

/* ---------------------------------------------------------- optimizers */

typedef enum wk_optimizer_kind { WK_SGD = 0, WK_ADAM, WK_ADAMW } wk_optimizer_kind;

/* torch.optim's meanings and defaults. Zero fields mean: lr 1e-3, betas
 * (0.9, 0.999), eps 1e-8; weight_decay 0 (AdamW: use 1e-2 explicitly as
 * torch's default, since 0 here means none); momentum 0, dampening 0. */
typedef struct wk_optim_config {
    wk_optimizer_kind kind;
    double lr;
    double weight_decay;   /* SGD / Adam: L2 added to the gradient; AdamW: decoupled p -= lr * wd * p */
    double momentum;       /* SGD */
    double dampening;      /* SGD */
    bool nesterov;         /* SGD; needs momentum > 0 and dampening 0 */
    double beta1, beta2;   /* Adam / AdamW */
    double eps;            /* Adam / AdamW */
} wk_optim_config;

typedef struct wk_optimizer wk_optimizer;
/* An optimizer over n parameters (tracked leaves, float, contiguous; it
 * keeps a reference to each). */
wk_optimizer *wk_optimizer_new(const wk_optim_config *cfg, wk_tensor *const *params, int n);
void          wk_optimizer_free(wk_optimizer *opt);
/* One step from the gradients in gs; a parameter with no gradient there is
 * skipped (as torch skips p.grad None). */
wk_status     wk_optimizer_step(wk_optimizer *opt, const wk_grad_store *gs);
wk_status     wk_optimizer_set_lr(wk_optimizer *opt, double lr);
double        wk_optimizer_lr(const wk_optimizer *opt);
/* Steps taken so far (Adam's t). */
int64_t       wk_optimizer_steps(const wk_optimizer *opt);

/* Scale the gradients of params in gs so their joint L2 norm is at most
 * max_norm (torch.nn.utils.clip_grad_norm_); *total_norm (may be NULL)
 * gets the norm before clipping. */
wk_status wk_clip_grad_norm(wk_grad_store *gs, wk_tensor *const *params, int n, double max_norm,
                            double *total_norm);

/* -------------------------------------------------------------- losses */

typedef enum wk_reduction { WK_REDUCE_MEAN_LOSS = 0, WK_REDUCE_SUM_LOSS, WK_REDUCE_NONE_LOSS } wk_reduction;

wk_tensor *wk_mse_loss(const wk_tensor *pred, const wk_tensor *target, wk_reduction red);
/* Huber with threshold delta > 0 (torch.nn.functional.huber_loss). */
wk_tensor *wk_huber_loss(const wk_tensor *pred, const wk_tensor *target, double delta, wk_reduction red);
/* Binary cross-entropy on logits, numerically stable (torch's
 * binary_cross_entropy_with_logits); target floats in [0, 1]. */
wk_tensor *wk_bce_with_logits(const wk_tensor *logits, const wk_tensor *target, wk_reduction red);

typedef struct wk_class_loss_opts {
    wk_reduction reduction;
    bool has_ignore_index;  /* targets equal to ignore_index add nothing (and do not count for the mean) */
    int64_t ignore_index;
    double label_smoothing; /* cross_entropy only: in [0, 1) */
} wk_class_loss_opts;
/* logits / log-probabilities (N, C), targets (N) of an integer dtype with
 * values in [0, C) (or ignore_index); opts NULL: mean, no ignore, no
 * smoothing. As torch.nn.functional.cross_entropy / nll_loss. */
wk_tensor *wk_cross_entropy(const wk_tensor *logits, const wk_tensor *targets, const wk_class_loss_opts *opts);
wk_tensor *wk_nll_loss(const wk_tensor *logp, const wk_tensor *targets, const wk_class_loss_opts *opts);

/* -------------------------------------------------------------- layers
 * The layer structs, their forwards and *_free / *_params are the layer
 * kit's (wick/layers.h); the initialisers below make their tensors tracked
 * leaves (parameters), as torch.nn's reset_parameters, from the device's
 * generator (set its seed for a fixed start). */

/* weight U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform, a = sqrt(5)); bias
 * (out) from the same bound when asked. */
wk_status  wk_linear_init(wk_linear *l, int64_t in, int64_t out, bool bias, wk_dtype dt, wk_device *dev);
/* weight (num, dim) N(0, 1) as torch. */
wk_status  wk_embedding_layer_init(wk_embedding_layer *e, int64_t num, int64_t dim, wk_dtype dt, wk_device *dev);
/* weight ones, bias zeros (none for rms). */
wk_status  wk_norm_layer_init(wk_norm_layer *n, int64_t dim, bool rms, double eps, wk_dtype dt, wk_device *dev);

/* Plain struct of parameters as the kit's; training's own. */
typedef struct wk_conv2d_layer {
    wk_tensor *weight; /* (out, in / groups, kh, kw) */
    wk_tensor *bias;   /* (out) or NULL */
    wk_conv_params p;
} wk_conv2d_layer;
wk_status  wk_conv2d_layer_init(wk_conv2d_layer *c, int64_t in, int64_t out, int64_t kh, int64_t kw,
                                const wk_conv_params *p, bool bias, wk_dtype dt, wk_device *dev);
wk_tensor *wk_conv2d_layer_forward(const wk_conv2d_layer *c, const wk_tensor *x); /* (N, C, H, W) */
void       wk_conv2d_layer_free(wk_conv2d_layer *c);
int        wk_conv2d_layer_params(const wk_conv2d_layer *c, wk_tensor **out, int cap);

/* --------------------------------------------------------- checkpoints */

/* Write params (names[i] -> params[i]) and, if opt is not NULL, its state
 * ("optim.<name>.m", "optim.<name>.v", the step count and config in the
 * metadata) to a safetensors file. */
wk_status wk_checkpoint_save(const char *path, const char *const *names, wk_tensor *const *params, int n,
                             const wk_optimizer *opt);
/* Read them back into existing params (shapes and dtypes must match; a
 * missing name is WK_ERR_FORMAT naming it) and, if opt is not NULL, its
 * state (opt must have been made over the same params in the same order). */
wk_status wk_checkpoint_load(const char *path, const char *const *names, wk_tensor *const *params, int n,
                             wk_optimizer *opt);

/* ------------------------------------------- data-parallel training
 * torch's DistributedDataParallel for wick: each rank runs the same model
 * on its own shard of every global batch; gradients are averaged over the
 * ranks in buckets while backward is still running (wk_backward_opts'
 * on_grad_ready hook starts each bucket's asynchronous all_reduce as soon
 * as its last gradient is ready), so after wk_ddp_backward every rank holds
 * the same averaged gradients, and the same optimizer step keeps the
 * parameters identical. With equal shards the result is the one-process
 * run over the global batch (to rounding: the sum's order differs).
 *
 *   wk_ddp *d = wk_ddp_new(comm, params, n, NULL);   // broadcasts rank 0's values
 *   loop: loss = model(my shard); wk_ddp_backward(d, loss, gs, NULL);
 *         wk_optimizer_step(opt, gs); wk_grad_store_zero(gs);
 */
typedef struct wk_ddp wk_ddp;
typedef struct wk_ddp_opts {
    double bucket_mb;   /* bytes of gradients per all_reduce bucket, in MiB; <= 0: 25 (torch's default) */
    bool sum;           /* sum the gradients instead of averaging them (default false: average) */
} wk_ddp_opts;
/* Over n parameters (tracked float leaves, contiguous, the same shapes and
 * order on every rank); overwrites them with rank 0's values (collective:
 * every rank calls it). Buckets take the parameters in reverse order (the
 * order backward usually finishes them). */
wk_ddp   *wk_ddp_new(wk_comm *c, wk_tensor *const *params, int n, const wk_ddp_opts *o);
void      wk_ddp_free(wk_ddp *d);
/* wk_backward(loss, gs, opts) with the bucketed gradient all_reduce; when it
 * returns, gs holds the reduced gradient of every parameter (a parameter no
 * rank's graph reached keeps none; one that some ranks reached gets zeros
 * from the others). opts' own on_grad_ready, if any, is still called. */
wk_status wk_ddp_backward(wk_ddp *d, const wk_tensor *loss, wk_grad_store *gs, const wk_backward_opts *opts);
/* Checkpoints from rank 0: save writes the file on rank 0 only (then all
 * ranks meet at a barrier); load reads it on rank 0 and broadcasts the
 * values (and the optimizer's state when opt is not NULL) to every rank. */
wk_status wk_ddp_checkpoint_save(wk_ddp *d, const char *path, const char *const *names, const wk_optimizer *opt);
wk_status wk_ddp_checkpoint_load(wk_ddp *d, const char *path, const char *const *names, wk_optimizer *opt);
wk_comm  *wk_ddp_comm(const wk_ddp *d);

#ifdef __cplusplus
}
#endif
#endif /* WICK_TRAIN_H */
