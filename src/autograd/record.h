/* What the op files call to record (one function per op family; the rules
 * themselves are static in src/autograd/rules_*.c). Each takes the op's
 * fresh result r (NULL passes through), the inputs and the arguments the
 * rule needs, and returns r with its node attached, or NULL (r freed) when
 * the node could not be made. Call only when wk__ag_on*() said so. */
#ifndef WICK_AUTOGRAD_RECORD_H
#define WICK_AUTOGRAD_RECORD_H
#include "autograd/node.h"

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

/* rules_nn.c (grad_nn): the fused nn ops; dim normalised, a the effective
 * attention arguments (scale resolved, group Hq / Hkv), op the public name */
wk_tensor *wk__ag_softmax(wk_tensor *r, const wk_tensor *x, int dim, bool logp);
wk_tensor *wk__ag_norm(wk_tensor *r, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, bool rms);
wk_tensor *wk__ag_rope(wk_tensor *r, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                       bool thd);
wk_tensor *wk__ag_swiglu(wk_tensor *r, const wk_tensor *x);
wk_tensor *wk__ag_attention(wk_tensor *r, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                            const wk_tensor *mask, const wk_attention_args *a, const char *op);

/* ---- grad_conv: rules_conv.c, rules_pool.c ---- */
/* p: the normalized parameters (stride / dilation / groups >= 1). */
wk_tensor *wk__ag_conv(wk_tensor *r, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p, int spatial,
                       bool transposed, const char *op);
/* pool2d (src/core/pool.c): p as the backend got it. */
wk_tensor *wk__ag_pool2d(wk_tensor *r, const wk_tensor *x, const wk_pool_params *p, const char *op);
/* upsample (pool.c): rank 3 (1-d, H = 1) or 4. */
wk_tensor *wk__ag_upsample(wk_tensor *r, const wk_tensor *x, int rank, bool bilinear, bool align_corners,
                           const char *op);
/* ---- end grad_conv ---- */

#endif
