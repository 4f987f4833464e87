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

/* ---- what the fused nn ops' nodes record (rules_nn.c) ----
 * Op ids in the range autograd reserves for this floor (node_args.h), and
 * the argument structs, kept in the node's raw block args.upper and read
 * through wk__nn_args_of (autograd names no nn type). */
/* The op ids: wk__op_id values in this floor's range (macros, so that they
 * have wk__op_id's type: gcc warns on mixing two enums). */
#define WK__OP_SOFTMAX   ((wk__op_id)(WK__OP_NN_FIRST + 0)) /* softmax, log_softmax: softmax */
#define WK__OP_NN_NORM   ((wk__op_id)(WK__OP_NN_FIRST + 1)) /* rms_norm, layer_norm: norm */
#define WK__OP_ROPE      ((wk__op_id)(WK__OP_NN_FIRST + 2)) /* rope, rope_thd: rope */
#define WK__OP_SWIGLU    ((wk__op_id)(WK__OP_NN_FIRST + 3)) /* no args */
#define WK__OP_ATTENTION ((wk__op_id)(WK__OP_NN_FIRST + 4)) /* attention */
_Static_assert((int)WK__OP_NN_FIRST + 5 <= (int)WK__OP_DIST_FIRST, "nn op ids run into the dist floor's range");

typedef struct { int dim; bool logp; } wk__args_softmax;               /* dim normalised */
typedef struct { bool rms, has_w; double eps; } wk__args_nn_norm;      /* has_w: saved 1 is the weight */
typedef struct { bool interleaved, thd; } wk__args_rope;
typedef struct { wk_attention_args a; bool has_mask; } wk__args_attention; /* a: scale resolved, group Hq / Hkv */
typedef union wk__nn_args {
    wk__args_softmax softmax;
    wk__args_nn_norm norm;
    wk__args_rope rope;
    wk__args_attention attention;
} wk__nn_args;
_Static_assert(sizeof(wk__nn_args) <= WK__ARGS_UPPER_BYTES, "the nn args outgrow the node's upper block");
_Static_assert(_Alignof(wk__nn_args) <= _Alignof(wk__node_args),
               "the nn args need more alignment than the node's");
/* n's args as the nn floor's (n made by a recorder of this floor) */
static inline wk__nn_args *wk__nn_args_of(wk__node *n) { return (wk__nn_args *)(void *)n->args.upper; }

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

/* nn.c: cap * tanh(s / cap) (attention's logit soft-capping) in public
 * ops; NULL passes through. */
wk_tensor *wk__nn_softcap(const wk_tensor *s, double cap);
/* nn.c: t in the dtype composites compute in (f64 stays, the rest f32; a
 * view when it already is). NULL passes through. */
wk_tensor *wk__nn_to_work(const wk_tensor *t);
/* k (..., Hkv, L, D) -> (..., Hkv * group, L, D), each kv head repeated
 * group times in a row, from public ops (recorded: the gradient sums back
 * over the group). A new tensor, a view when group is 1; NULL passes. */
wk_tensor *wk__nn_repeat_kv(const wk_tensor *k, int64_t group);

#endif
