/* What the op files call to record (one function per op family; the rules
 * themselves are static in src/autograd/rules_*.c). Each takes the op's
 * fresh result r (NULL passes through), the inputs and the arguments the
 * rule needs, and returns r with its node attached, or NULL (r freed) when
 * the node could not be made. Call only when wk__ag_on*() said so. */
#ifndef WICK_AUTOGRAD_RECORD_H
#define WICK_AUTOGRAD_RECORD_H
#include "autograd/node.h"
#include "ops/prim_slice_assign.h"

/* rules_elementwise.c */
wk_tensor *wk__ag_unary(wk_tensor *r, const wk_tensor *x, wk_unary_op op);
wk_tensor *wk__ag_binary(wk_tensor *r, const wk_tensor *a, const wk_tensor *b, wk_binary_op op);
wk_tensor *wk__ag_affine(wk_tensor *r, const wk_tensor *x, double mul);
wk_tensor *wk__ag_where(wk_tensor *r, const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b);

/* rules_reduce.c */
wk_tensor *wk__ag_reduce(wk_tensor *r, const wk_tensor *x, wk_reduce_op op, const bool *mask, bool keepdim);

/* rules_views.c */
wk_tensor *wk__ag_reshape(wk_tensor *r, const wk_tensor *x);   /* also squeeze, unsqueeze */
wk_tensor *wk__ag_narrow(wk_tensor *r, const wk_tensor *x, int dim, int64_t start, int64_t len);
wk_tensor *wk__ag_select(wk_tensor *r, const wk_tensor *x, int dim, int64_t index);
wk_tensor *wk__ag_permute(wk_tensor *r, const wk_tensor *x, const int *dims); /* dims normalised, x's rank */
wk_tensor *wk__ag_broadcast(wk_tensor *r, const wk_tensor *x);
/* An alias of x that the op returns as its result (contiguous of a
 * contiguous tensor, to_dtype to the same dtype, ...): identity gradient. */
wk_tensor *wk__ag_identity(wk_tensor *r, const wk_tensor *x, const char *op);

/* rules_copy.c */
wk_tensor *wk__ag_to_dtype(wk_tensor *r, const wk_tensor *x);
wk_tensor *wk__ag_to_device(wk_tensor *r, const wk_tensor *x);

/* rules_matmul.c */
wk_tensor *wk__ag_matmul(wk_tensor *r, const wk_tensor *a, const wk_tensor *b, const char *op);

/* rules_quant.c: qmatmul records with respect to x and a float (f16 /
 * bf16) w; a block-quantized w is frozen (no edge). dequantize of a tracked
 * block tensor (a non-leaf: wk_to_dtype of a tracked float) passes the
 * gradient straight through, carried in f32; a block-quantized leaf is
 * frozen. */
wk_tensor *wk__ag_qmatmul(wk_tensor *r, const wk_tensor *x, const wk_tensor *w);
wk_tensor *wk__ag_dequantize(wk_tensor *r, const wk_tensor *w);

/* rules_custom.c: a custom op's stored backward callback as its rule */
struct wk_custom_op;
wk_tensor *wk__ag_custom(wk_tensor *r, const struct wk_custom_op *op, int nin, const wk_tensor *const *in);
/* custom_op.c: an op is reference counted (atomic); wk_custom_op_free drops
 * the caller's reference, each recorded node holds one. */
void wk__custom_op_retain(const struct wk_custom_op *op);
void wk__custom_op_release(const struct wk_custom_op *op);
/* ---- grad_elem: elementwise-parameter ops, reductions, scans, order, linalg ---- */
/* rules_elementwise.c (second part) */
wk_tensor *wk__ag_powf(wk_tensor *r, const wk_tensor *x, double e);
wk_tensor *wk__ag_elu(wk_tensor *r, const wk_tensor *x, double alpha);
wk_tensor *wk__ag_clamp(wk_tensor *r, const wk_tensor *x, double lo, double hi);
/* rules_reduce.c: the reduced dims of a reduction's node (WK__OP_REDUCE,
 * _NORM, _LOG_SUM_EXP, _VAR: their args' .red), and g of the reduction
 * viewed in x's shape through them */
const wk__reduced *wk__ag_reduced_of(const wk__node *n);
wk_tensor *wk__ag_expand_reduced(const wk_tensor *g, const wk__node *n);
/* rules_scan.c: dim normalised (x of rank 0: dim 0) */
wk_tensor *wk__ag_cumsum(wk_tensor *r, const wk_tensor *x, int dim);
wk_tensor *wk__ag_cumprod(wk_tensor *r, const wk_tensor *x, int dim);
/* rules_sort.c: the values of sort / topk (dim normalised); ix: their i64 indices */
wk_tensor *wk__ag_order(wk_tensor *values, const wk_tensor *x, const wk_tensor *ix, int dim, const char *op);
/* rules_linalg.c: mask = the reduced dims (x's rank) */
wk_tensor *wk__ag_dot(wk_tensor *r, const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk__ag_mv(wk_tensor *r, const wk_tensor *m, const wk_tensor *v);
wk_tensor *wk__ag_norm(wk_tensor *r, const wk_tensor *x, double p, const bool *mask, bool keepdim);
wk_tensor *wk__ag_log_sum_exp(wk_tensor *r, const wk_tensor *x, const bool *mask, bool keepdim);
/* var (take_sqrt false) / std; den = n - correction */
wk_tensor *wk__ag_var(wk_tensor *r, const wk_tensor *x, const bool *mask, bool keepdim, double den, bool take_sqrt);
/* ---- end grad_elem ---- */
/* ---- grad_conv: rules_conv.c, rules_pool.c ---- */
/* p: the normalized parameters (stride / dilation / groups >= 1). */
wk_tensor *wk__ag_conv(wk_tensor *r, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p, int spatial,
                       bool transposed, const char *op);
/* pool2d (src/ops/pool.c): p as the backend got it. */
wk_tensor *wk__ag_pool2d(wk_tensor *r, const wk_tensor *x, const wk_pool_params *p, const char *op);
/* upsample (pool.c): rank 3 (1-d, H = 1) or 4. */
wk_tensor *wk__ag_upsample(wk_tensor *r, const wk_tensor *x, int rank, bool bilinear, bool align_corners,
                           const char *op);
/* ---- end grad_conv ---- */
/* The fused nn ops' recorders (wk__ag_softmax, ...) live with the ops
 * above autograd: src/nn/nn_internal.h. */

/* The class losses' recorder (wk__ag_class_loss) lives with the losses, in
 * the training floor: src/train/train_internal.h. */
/* ---- grad_shape: joins, pads, slice writes, indexing (rules_join.c,
 * rules_index.c). The in-place forms (wk__ag_*_node) are called only when
 * wk__ag_inplace_on said so: each makes the node BEFORE the write (so an
 * allocation failure leaves dst unwritten), the caller writes with
 * recording suspended, then wk__ag_rebase gives dst the node. ---- */
/* Grad mode on, src or dst tracked, and dst not a leaf that requires grad
 * (that write stays refused by wk__check_writable, as in PyTorch). */
static inline bool wk__ag_inplace_on(const wk_tensor *dst, const wk_tensor *src) {
    return dst && src && wk__ag_on2(dst, src) && !(dst->node && !dst->node->backward);
}
/* st WK_OK: dst->node becomes n (its old node lives on as n's edge 0);
 * otherwise n is dropped. Returns st. */
wk_status  wk__ag_rebase(wk_tensor *dst, wk__node *n, wk_status st);
wk_tensor *wk__ag_cat(wk_tensor *r, wk_tensor *const *ts, int n, int dim);
wk_tensor *wk__ag_pad_zeros(wk_tensor *r, const wk_tensor *x, int dim, int64_t left);
wk_tensor *wk__ag_repeat(wk_tensor *r, const wk_tensor *x, const int64_t *reps, int nreps);
/* slice_scatter(t, src, dim, start) and its in-place form slice_set (dst, src, dim, offset) */
wk_tensor *wk__ag_slice_scatter(wk_tensor *r, const wk_tensor *t, const wk_tensor *src, int dim, int64_t start);
wk__node  *wk__ag_slice_set_node(const wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset);
/* wk_copy_ (a whole overwrite: dst's old value gets a zero gradient) */
wk__node  *wk__ag_copy_node(const wk_tensor *dst, const wk_tensor *src);
/* slice_assign: sp the slice normalised (wk__slice_spec: ops/prim_slice_assign.h) */
wk_tensor *wk__ag_slice_assign(wk_tensor *r, const wk_tensor *t, const wk__slice_spec *sp, const wk_tensor *src);
wk__node  *wk__ag_slice_assign_node(const wk_tensor *dst, const wk__slice_spec *sp, const wk_tensor *src);
/* rules_index.c (ids: the integer index tensor, saved) */
wk_tensor *wk__ag_index_select(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, int dim);
wk_tensor *wk__ag_gather(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, int dim);
wk_tensor *wk__ag_index_add(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
/* scatter (add false: set) and scatter_add, out of place and in place */
wk_tensor *wk__ag_scatter(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                          bool add);
wk__node  *wk__ag_scatter_node(const wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim, bool add);
/* ---- end grad_shape ---- */

#endif
