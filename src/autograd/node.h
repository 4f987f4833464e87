/* The recorded graph (internal): nodes, recording helpers for op files, and
 * the context backward rules run in. include/wick/autograd.h has the
 * user-visible rules; docs/ARCHITECTURE.md ("Autograd") the why.
 *
 * How an op records: the untracked op is wk__prim_foo in src/ops/X.c
 * (declared in ops/prim_X.h, argument checks included); the public op is
 * src/autograd/tracked_X.c (the floors below never name autograd). A node
 * holds plain data: its op id (wk__op_id, node_args.h: the rule family,
 * what code compares; the name string is for messages), the values the
 * rule reads (saved tensors) and the family's small typed argument struct
 * (n->args.<family>, declared in node_args.h next to the id):
 *
 *     wk_tensor *wk_foo(const wk_tensor *x, int dim) {
 *         if (!wk__ag_on1(x)) return wk__prim_foo(x, dim); // untracked: one test
 *         wk__ag_suspend();                                // the body records nothing
 *         wk_tensor *r = wk__prim_foo(x, dim);
 *         wk__ag_resume();
 *         if (!r) return NULL;
 *         wk__node *n = wk__node_new(WK__OP_FOO, "wk_foo", foo_backward, 1, &x);
 *         if (n) n->args.foo = (wk__args_foo){.dim = dim};  // the rule's arguments
 *         wk__node_save(n, x);                             // only what the rule reads
 *         return wk__node_attach(n, r);                    // r->node = n (or frees r on OOM)
 *     }
 *     static wk_status foo_backward(wk__bw_ctx *c) {
 *         int dim = c->n->args.foo.dim;
 *         wk_tensor *x = wk__bw_saved(c, 0);
 *         ...
 *     }
 *
 * (the recorders live with their rules, src/autograd/rules_X.c, declared in
 * record.h). Adding a family: an id in wk__op_id and, when it has
 * arguments, a struct and a member of wk__node_args. The union is as large
 * as its largest member, so an argument that would make every node bigger
 * (wk_slice_assign's three WK_MAX_RANK arrays) is a typed pointer in the
 * args to a malloc'd copy, freed by the node's on_free.
 *
 * The floors above autograd (nn, train) record the same way, but autograd
 * may not name their types: each floor numbers its ids in a range
 * node_args.h reserves (WK__OP_NN_FIRST, WK__OP_TRAIN_FIRST) and keeps its
 * argument structs in its own header, stored in the union's raw, suitably
 * aligned block args.upper and reached through that floor's typed accessor
 * (wk__nn_args_of(n)->softmax, src/nn/nn_internal.h;
 * wk__train_args_of(n)->class_loss, src/train/train_internal.h), whose
 * _Static_asserts check that the structs fit the block and its alignment.
 * A generic block plus accessors (rather than one union naming every
 * floor's types, or a malloc'd pointer per node) keeps the floors and
 * keeps the node one allocation.
 *
 * Composite ops made of recorded public ops need nothing: their parts record
 * (they live in src/autograd/composite_X.c).
 */
#ifndef WICK_AUTOGRAD_NODE_H
#define WICK_AUTOGRAD_NODE_H
#include <stdatomic.h>
#include "autograd/node_args.h"
#include "tensor/tensor.h"
#include "wick/autograd.h"

typedef struct wk__node wk__node;
typedef struct wk__bw_ctx wk__bw_ctx;
/* A backward rule: read c->g (dL/d output), the node's saved values and
 * args; set the gradient of each input that needs one (wk__bw_need) with
 * wk__bw_set. Runs inside a scope (temporaries need no frees) and, unless
 * the pass creates a graph, in no-grad mode. */
typedef wk_status (*wk__bw_fn)(wk__bw_ctx *c);

/* One input of a node: the input's node (NULL: no gradient flows to it)
 * and its metadata (the gradient's shape, dtype and device). */
typedef struct wk__edge {
    wk__node *node;
    int64_t shape[WK_MAX_RANK];
    int rank;
    wk_dtype dtype;
    wk_device *dev;
} wk__edge;

#define WK__MAX_SAVED 6
typedef struct wk__saved {
    wk_tensor *t;       /* a reference the node owns (outside every scope) */
    uint32_t version;   /* t's storage version when saved */
    bool is_output;     /* an alias of the node's own output, kept without its node (no cycle) */
} wk__saved;

struct wk__node {
    atomic_int refs;        /* the output tensor, nodes whose edge is this one, stores */
    wk__op_id op;           /* the op family (node_args.h): what code compares */
    const char *name;       /* the op, for errors: "wk_mul" */
    wk__bw_fn backward;     /* NULL: a leaf */
    bool retain;            /* stores keep this non-leaf's gradient */
    bool released;          /* a pass without keep_graph freed the saved values */
    /* the output */
    int64_t shape[WK_MAX_RANK];
    int rank;
    wk_dtype dtype;
    wk_device *dev;
    /* what the rule reads */
    wk__saved saved[WK__MAX_SAVED];
    int nsaved;
    wk__node_args args;     /* the family's typed arguments (args.<family>, node_args.h) */
    void (*on_free)(wk__node *n); /* NULL, or run as the node is freed (drops what the rule holds) */
    int nin;
    wk__edge in[];
};

struct wk__bw_ctx {
    wk__node *n;
    const wk_tensor *g;     /* dL/d(output): the output's shape, dtype, device */
    wk_tensor **gin;        /* n->nin slots, NULL until set */
    bool create_graph;
};

/* ---- grad mode (node.c) ---- */
extern _Thread_local int wk__tl_nograd;
static inline bool wk__ag_on1(const wk_tensor *a) { return a && a->node && wk__tl_nograd == 0; }
static inline bool wk__ag_on2(const wk_tensor *a, const wk_tensor *b) {
    return ((a && a->node) || (b && b->node)) && wk__tl_nograd == 0;
}
static inline bool wk__ag_on3(const wk_tensor *a, const wk_tensor *b, const wk_tensor *c) {
    return ((a && a->node) || (b && b->node) || (c && c->node)) && wk__tl_nograd == 0;
}
bool wk__ag_onn(wk_tensor *const *ts, int n);
static inline void wk__ag_suspend(void) { wk__tl_nograd++; }
static inline void wk__ag_resume(void) { wk__tl_nograd--; }

/* ---- recording (node.c) ---- */
/* A node for an op with nin inputs (NULL entries allowed: no edge). Edges
 * point at the tracked float inputs' nodes. NULL with WK_ERR_OOM recorded. */
wk__node *wk__node_new(wk__op_id op, const char *name, wk__bw_fn fn, int nin, const wk_tensor *const *in);
/* Save an input value the rule reads (the next saved index; t NULL: an
 * empty slot, for a value only some gradients need: saving less is what
 * keeps a graph's memory down). No-op when n is NULL. Returns n. */
wk__node *wk__node_save(wk__node *n, const wk_tensor *t);
/* Save the op's own output (an alias without its node: no cycle; under
 * create_graph the rule gets it back with the node attached). */
wk__node *wk__node_save_out(wk__node *n, const wk_tensor *out);
/* out->node = n and out is returned; an integer out drops n. n NULL (the
 * node could not be made): frees out, returns NULL (the error is recorded). */
wk_tensor *wk__node_attach(wk__node *n, wk_tensor *out);
void       wk__node_retain(wk__node *n);
/* Drop one reference; frees iteratively (a long chain cannot overflow the stack). */
void       wk__node_release(wk__node *n);
/* Free the saved values (a pass without keep_graph). */
void       wk__node_release_saved(wk__node *n);
/* The in-place write check's autograd half: refuses a write into a tracked
 * tensor while grad mode is on (WK_ERR_ARG naming op). */
bool       wk__ag_check_inplace(const char *op, const wk_tensor *t);

/* A new tensor header over t's storage and layout with t's node (the same
 * value, tracked the same way), registered in the current scope like any
 * result. Use it, never wk_tensor_retain, to hand back "a new reference"
 * to a tensor that already exists: wk_tensor_free of a retained
 * scope-owned tensor takes it out of its scope (tensor.c), so retain + free
 * inside scopes leaks. */
wk_tensor *wk__alias(const wk_tensor *t);

/* ---- inside rules (node.c) ---- */
static inline bool wk__bw_need(const wk__bw_ctx *c, int i) { return c->n->in[i].node != NULL; }
/* Saved value i: checks its version (WK_ERR_ARG naming the op when it was
 * written in place since); NULL on error. Borrowed for the rule's run. */
wk_tensor *wk__bw_saved(wk__bw_ctx *c, int i);
/* Set input i's gradient (shape, dtype and device checked against the
 * edge: WK_ERR_INTERNAL naming the op otherwise). t NULL: the error that
 * made it. The context takes its own reference. */
wk_status  wk__bw_set(wk__bw_ctx *c, int i, const wk_tensor *t);
/* g summed over the dims broadcasting expanded to reach g's shape from
 * shape/rank (numpy rules): the gradient of a broadcast input. */
wk_tensor *wk__sum_to(const wk_tensor *g, const int64_t *shape, int rank);
/* wk__bw_set(c, i, wk__sum_to(t, edge i's shape)). */
wk_status  wk__bw_set_sum(wk__bw_ctx *c, int i, const wk_tensor *t);

#endif
