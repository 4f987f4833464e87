/* The nn floor's internals (src/nn): the fused nn ops' recorders (rules in
 * rules_nn.c) and the composites' helpers that nn.c and rules_nn.c share.
 * The floor sits above autograd (it records with autograd's node API and
 * calls public, recorded ops) and above core's untracked prims
 * (ops/prim_nn.h). */
#ifndef WICK_NN_INTERNAL_H
#define WICK_NN_INTERNAL_H
#include "autograd/node.h"
#include "ops/prim_nn.h"
#include "wick/nn.h"

/* rules_nn.c: each takes the op's fresh result r (NULL passes through) and
 * returns it with its node attached, or NULL (r freed) when the node could
 * not be made. dim normalised, a the effective attention arguments (scale
 * resolved, group Hq / Hkv), op the public name. */
wk_tensor *wk__ag_softmax(wk_tensor *r, const wk_tensor *x, int dim, bool logp);
wk_tensor *wk__ag_nn_norm(wk_tensor *r, const wk_tensor *x, const wk_tensor *w, const wk_tensor *b, double eps, bool rms);
wk_tensor *wk__ag_rope(wk_tensor *r, const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved,
                       bool thd);
wk_tensor *wk__ag_swiglu(wk_tensor *r, const wk_tensor *x);
wk_tensor *wk__ag_attention(wk_tensor *r, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                            const wk_tensor *mask, const wk_attention_args *a, const char *op);

/* nn.c: t in the dtype composites compute in (f64 stays, the rest f32; a
 * view when it already is). NULL passes through. */
wk_tensor *wk__nn_to_work(const wk_tensor *t);
/* k (..., Hkv, L, D) -> (..., Hkv * group, L, D), each kv head repeated
 * group times in a row, from public ops (recorded: the gradient sums back
 * over the group). A new tensor, a view when group is 1; NULL passes. */
wk_tensor *wk__nn_repeat_kv(const wk_tensor *k, int64_t group);

#endif
