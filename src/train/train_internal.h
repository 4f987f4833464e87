/* Internal pieces of the training layer (include/wick/train.h) shared by
 * the files of src/train: the optimizer's state (the checkpoint reads and writes it)
 * and the composite optimizer step used when a backend has no optim_step. */
#ifndef WICK_TRAIN_INTERNAL_H
#define WICK_TRAIN_INTERNAL_H
#include "autograd/node.h"
#include "tensor/tensor.h"
#include "wick/train.h"
#include "nn/layers.h"

struct wk_optimizer {
    wk_optim_config cfg;  /* defaults resolved, validated */
    int n;
    wk_tensor **p;        /* references the optimizer owns */
    /* per parameter, made on its first step (NULL before): SGD's momentum
     * buffer (m only, when momentum > 0) or Adam's moments m and v */
    wk_tensor **m, **v;
    /* per parameter: a contiguous buffer for a gradient that arrives as a
     * strided view (made the first time one does, then reused) */
    wk_tensor **scratch;
    int64_t *pstep;       /* steps each parameter took (torch's state['step']) */
    int64_t steps;        /* wk_optimizer_step calls that succeeded */
};

/* The most steps an optimizer counts (2^53: every count up to it is exact
 * as the double the bias corrections take, and t + 1 cannot overflow). A
 * checkpoint claiming more is refused at load; a step past it is refused. */
#define WK__OPTIM_MAX_STEPS ((int64_t)1 << 53)

/* Which state buffers the rule keeps: m (SGD momentum or Adam's first
 * moment) and v (Adam's second moment). */
bool wk__optim_has_m(const wk_optim_config *c);
bool wk__optim_has_v(const wk_optim_config *c);
/* Check a config (defaults already resolved): WK_ERR_ARG naming op and the field. */
wk_status wk__optim_config_check(const char *op, const wk_optim_config *c);
/* Zero fields -> torch's defaults (see train.h). */
wk_optim_config wk__optim_config_resolve(const wk_optim_config *c);
/* The step-dependent arguments of parameter step t (1-based). */
wk_optim_args wk__optim_args_for(const wk_optim_config *c, int64_t t);

/* One step on p (contiguous), g (same shape), m / v (contiguous or NULL)
 * with public ops (each temporary allocated), under no-grad: the fallback
 * for backends without optim_step. Exposed for tests. */
wk_status wk__optim_step_composite(const wk_optim_args *a, wk_tensor *p, const wk_tensor *g, wk_tensor *m,
                                   wk_tensor *v);

/* wk__hand_over (a composite's kept result to the caller's scope) is the
 * layer kit's: nn/layers.h. */

/* ---- what the class losses' nodes record (rules_loss.c) ----
 * An op id in the range autograd reserves for this floor (node_args.h) and
 * the argument struct, kept in the node's raw block args.upper and read
 * through wk__train_args_of (autograd names no train type). */
/* The op id: a wk__op_id value in this floor's range (a macro, so that it
 * has wk__op_id's type: gcc warns on mixing two enums). */
#define WK__OP_CLASS_LOSS ((wk__op_id)(WK__OP_TRAIN_FIRST + 0)) /* cross_entropy, nll_loss: class_loss */
_Static_assert((int)WK__OP_TRAIN_FIRST + 1 <= (int)WK__OP_LIMIT, "train op ids run past WK__OP_LIMIT");
typedef struct {
    bool ce;      /* cross_entropy (false: nll_loss) */
    bool none;    /* reduction none: the output is per row */
    double eps;   /* label smoothing */
    double scale; /* the reduction's factor */
} wk__args_class_loss;
typedef union wk__train_args {
    wk__args_class_loss class_loss;
} wk__train_args;
_Static_assert(sizeof(wk__train_args) <= WK__ARGS_UPPER_BYTES, "the train args outgrow the node's upper block");
_Static_assert(_Alignof(wk__train_args) <= _Alignof(wk__node_args),
               "the train args need more alignment than the node's");
/* n's args as the train floor's (n made by a recorder of this floor) */
static inline wk__train_args *wk__train_args_of(wk__node *n) {
    return (wk__train_args *)(void *)n->args.upper;
}

/* rules_loss.c: the recorder of the class losses.
 * cross_entropy (ce) / nll_loss of x (N, C): ids (N, 1) i64 target classes
 * (ignored rows any valid class), mask (N, 1) u8 rows counted, scale the
 * reduction's factor, none: the output is per row (N). */
wk_tensor *wk__ag_class_loss(wk_tensor *r, const wk_tensor *x, const wk_tensor *ids, const wk_tensor *mask, bool ce,
                             double eps, double scale, bool none);

#endif
