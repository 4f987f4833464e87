/*
 * wick — autograd: a recorded graph, backward, gradient stores.
 *
 * A tensor records the op that made it only when grad mode is on (the
 * default; see wk_no_grad_begin) and one of the op's float inputs is
 * tracked: a leaf marked with wk_requires_grad, or a tensor an earlier
 * recorded op made. Untracked code pays one pointer test per op.
 *
 * The graph: each recorded tensor owns one node (the op, edges to its
 * inputs' nodes, the few values its backward needs). Nodes hold their
 * inputs' nodes, never their outputs, so there are no cycles: freeing the
 * last reference to a graph's output frees the graph. An input value is
 * saved only when a backward rule reads it (y = a + b saves nothing;
 * y = a * b saves a and b; y = exp(x) saves y).
 *
 * Gradients live in a wk_grad_store, not in the tensors: run backward into
 * a store, read any leaf's gradient (and a non-leaf's marked with
 * wk_retain_grad), accumulate over several backward calls, zero.
 *
 * In-place writes record too: wk_copy_, wk_slice_set, wk_slice_assign_,
 * wk_scatter_ and wk_scatter_add_ with a tracked source (or into a tracked
 * non-leaf) rebase the destination onto the write's node, as PyTorch does.
 * Refused while grad mode is on (WK_ERR_ARG): writes into a leaf that
 * requires grad, and wk_fill_ / wk_zero_ / wk_one_ into any tracked tensor
 * (update parameters inside a no-grad region, as the optimizers do). Only
 * the tensor written through is rebased: other views of its storage keep
 * their old nodes. Every tensor saved for a backward remembers its
 * storage's version: a backward that finds it written since fails with
 * WK_ERR_ARG naming the op, rather than computing a wrong gradient.
 *
 * Integer results (argmax, comparisons, indices) are never tracked. Ops
 * whose derivative is zero almost everywhere (floor, ceil, round, sign)
 * give a zero gradient, as PyTorch does.
 */
#ifndef WICK_AUTOGRAD_H
#define WICK_AUTOGRAD_H
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ tracking */

/* Mark (on) or unmark a leaf: t must be a float tensor that no recorded op
 * made (WK_ERR_ARG otherwise: a non-leaf's tracking comes from its inputs;
 * wk_detach it first). Marking an already marked leaf is a no-op. */
wk_status  wk_requires_grad(wk_tensor *t, bool on);
/* Tracked: a marked leaf or the result of a recorded op. */
bool       wk_is_tracked(const wk_tensor *t);
/* A marked leaf (gradients of leaves are kept by every backward). */
bool       wk_is_leaf(const wk_tensor *t);
/* A new untracked tensor sharing t's storage and layout. */
wk_tensor *wk_detach(const wk_tensor *t);
/* Keep this non-leaf's gradient in the stores backward passes fill. */
wk_status  wk_retain_grad(wk_tensor *t);
/* The identity backward's on_grad_ready reports for t: stable for t's
 * lifetime; NULL when t is not tracked. */
const void *wk_grad_key(const wk_tensor *t);
/* The name of the op that recorded t ("wk_mul", ...), "leaf", or NULL. */
const char *wk_grad_fn_name(const wk_tensor *t);

/* No-grad regions, per thread and nestable: between begin and the matching
 * end nothing is recorded. wk_grad_enabled: whether this thread records. */
void wk_no_grad_begin(void);
void wk_no_grad_end(void);
bool wk_grad_enabled(void);

/* ------------------------------------------------------------ gradients */

typedef struct wk_grad_store wk_grad_store;
wk_grad_store *wk_grad_store_new(void);
void           wk_grad_store_free(wk_grad_store *gs);
/* Forget every gradient (the next backward starts from zero). */
void           wk_grad_store_zero(wk_grad_store *gs);
/* Number of tensors with a gradient in the store. */
int64_t        wk_grad_store_count(const wk_grad_store *gs);
/* Forget the gradients nothing can reach any more: of tensors freed since
 * whose graphs are gone too (a leaf made in a loop and dropped keeps its
 * entry otherwise). Returns how many were dropped; O(capacity). */
int64_t        wk_grad_store_prune(wk_grad_store *gs);

typedef struct wk_backward_opts {
    /* dL/droot, root's shape, dtype and device; NULL: root must have one
     * element and gets 1 */
    const wk_tensor *grad_output;
    /* keep the saved values so backward can run through this graph again;
     * false (default) frees them node by node as the pass goes */
    bool keep_graph;
    /* record the backward pass itself, so gradients are tracked tensors that
     * can be differentiated again (Hessian-vector products); implies
     * keep_graph */
    bool create_graph;
    /* keep the gradient of every tracked tensor reached, not only of leaves
     * and wk_retain_grad tensors */
    bool all_grads;
    /* Called on this thread as soon as a tensor's gradient for this pass is
     * complete and stored in gs (each leaf, each wk_retain_grad tensor, and
     * every tensor with all_grads), while the pass goes on with the rest of
     * the graph: data-parallel training starts reducing gradients here
     * (wk_ddp). key is wk_grad_key of that tensor; wk_grad(gs, t) then holds
     * the gradient so far (this pass's plus what gs held before). The order
     * of the calls depends only on the graph's structure, so ranks running
     * the same graph see the same order. A status other than WK_OK stops
     * the pass with it. NULL: no calls. */
    wk_status (*on_grad_ready)(void *ctx, wk_grad_store *gs, const void *key);
    void *on_grad_ready_ctx;
} wk_backward_opts;

/* Run backward from root into gs (gradients add to what gs already holds).
 * opts NULL: defaults. Errors: root untracked (WK_ERR_ARG), no grad_output
 * for a root of more than one element (WK_ERR_SHAPE), a grad_output of the
 * wrong shape / dtype / device, a graph already freed by an earlier pass
 * (WK_ERR_ARG, "run the first backward with keep_graph"), a saved tensor
 * modified in place (WK_ERR_ARG), and any op error of the backward ops. */
wk_status wk_backward(const wk_tensor *root, wk_grad_store *gs, const wk_backward_opts *opts);

/* The gradient of t in gs: borrowed (owned by the store: valid until the
 * store is zeroed, freed, or a later backward adds to it), or NULL when gs
 * holds none for t. wk_tensor_retain it to keep it longer. */
wk_tensor *wk_grad(const wk_grad_store *gs, const wk_tensor *t);
/* Replace (or, g NULL, drop: gs then forgets t entirely) t's gradient in gs;
 * g must match t's shape, dtype and device. gs takes a reference of its own. */
wk_status  wk_grad_set(wk_grad_store *gs, const wk_tensor *t, wk_tensor *g);

/* dy/dx for each x in xs (torch.autograd.grad): out[i] a new reference, or
 * a zero tensor of x's shape when y does not depend on xs[i]. grad_output /
 * create_graph / keep_graph as in opts (all_grads is ignored). */
wk_status wk_grad_of(const wk_tensor *y, wk_tensor *const *xs, int n, const wk_backward_opts *opts,
                     wk_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* WICK_AUTOGRAD_H */
