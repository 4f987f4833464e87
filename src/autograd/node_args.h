/* What a node records besides its saved values: the op id (which rule
 * family made it) and the family's typed argument struct. node.h holds
 * them in every node (wk__node.op, wk__node.args); the recorders write
 * them, the rules read them. See node.h's top comment for the pattern.
 *
 * The autograd floor names only its own families. The floors above it (nn,
 * dist, train) number theirs in the ranges reserved here (WK__OP_NN_FIRST..,
 * WK__OP_DIST_FIRST.., WK__OP_TRAIN_FIRST..) and keep their argument structs in their own
 * headers (src/nn/nn_internal.h, src/train/train_internal.h), stored in
 * the union's raw block `upper` and read through that floor's typed
 * accessor (wk__nn_args_of, wk__train_args_of). */
#ifndef WICK_AUTOGRAD_NODE_ARGS_H
#define WICK_AUTOGRAD_NODE_ARGS_H
#include <stdbool.h>
#include <stdint.h>
#include "tensor/backend.h"
#include "wick/wick.h"

/* One id per recorded op family (one rule, or a few sharing one argument
 * struct). The name string on the node (wk__node.name) stays for messages;
 * the id is what code compares. */
typedef enum wk__op_id {
    WK__OP_LEAF = 0,          /* wk_requires_grad's leaf: no rule, no args */
    /* rules_elementwise.c */
    WK__OP_UNARY,             /* args.unary */
    WK__OP_BINARY,            /* args.binary */
    WK__OP_AFFINE,            /* args.affine */
    WK__OP_WHERE,             /* no args */
    WK__OP_POWF,              /* args.power */
    WK__OP_ELU,               /* args.elu */
    WK__OP_CLAMP,             /* args.clamp */
    /* rules_reduce.c: sum, mean, max / min, prod */
    WK__OP_REDUCE,            /* args.reduce */
    /* rules_views.c */
    WK__OP_RESHAPE,           /* reshape, squeeze, unsqueeze: no args */
    WK__OP_IDENTITY,          /* an alias the op returns: no args */
    WK__OP_NARROW,            /* narrow, select: args.narrow */
    WK__OP_PERMUTE,           /* args.permute */
    WK__OP_BROADCAST,         /* no args */
    /* rules_copy.c */
    WK__OP_TO_DTYPE,          /* no args */
    WK__OP_TO_DEVICE,         /* no args */
    /* rules_matmul.c */
    WK__OP_MATMUL,            /* matmul, broadcast_matmul: no args */
    /* rules_quant.c */
    WK__OP_QMATMUL,           /* no args */
    WK__OP_DEQUANTIZE,        /* no args */
    /* rules_custom.c */
    WK__OP_CUSTOM,            /* args.custom */
    /* rules_scan.c */
    WK__OP_CUMSUM,            /* args.scan */
    WK__OP_CUMSUM_REVERSE,    /* args.scan */
    WK__OP_CUMPROD,           /* args.scan */
    /* rules_sort.c */
    WK__OP_ORDER,             /* sort / topk values: args.order */
    /* rules_linalg.c */
    WK__OP_DOT,               /* no args */
    WK__OP_MV,                /* no args */
    WK__OP_NORM,              /* args.norm */
    WK__OP_LOG_SUM_EXP,       /* args.lse */
    WK__OP_VAR,               /* var, std: args.var */
    /* rules_conv.c */
    WK__OP_CONV,              /* conv1d / 2d and the transposed: args.conv */
    /* rules_pool.c */
    WK__OP_POOL2D,            /* max / avg pool2d: args.pool */
    WK__OP_POOL2D_BACKWARD,   /* the pool gradient under create_graph: args.pool */
    WK__OP_UPSAMPLE,          /* args.upsample */
    WK__OP_UPSAMPLE_BACKWARD, /* the upsample gradient under create_graph: args.upsample */
    /* rules_join.c */
    WK__OP_CAT,               /* args.cat */
    WK__OP_PAD_ZEROS,         /* args.pad */
    WK__OP_REPEAT,            /* args.repeat */
    WK__OP_SLICE_SCATTER,     /* slice_scatter, slice_set: args.slice */
    WK__OP_COPY,              /* copy_: no args */
    WK__OP_SLICE_ASSIGN,      /* slice_assign, slice_assign_: args.slice_assign */
    /* rules_index.c */
    WK__OP_INDEX_SELECT,      /* args.index */
    WK__OP_GATHER,            /* args.index */
    WK__OP_INDEX_ADD,         /* args.index */
    WK__OP_SCATTER,           /* scatter, scatter_add (and in place): args.index */
    WK__OP_AUTOGRAD_END,      /* the autograd floor's ids are below this */
    /* the floors above autograd number their families from here on (their
     * enums: src/nn/nn_internal.h, src/train/train_internal.h) */
    WK__OP_NN_FIRST = 64,
    WK__OP_DIST_FIRST = 88,   /* src/dist/dist_tracked.c */
    WK__OP_TRAIN_FIRST = 96,
    WK__OP_LIMIT = 128        /* every id is below this */
} wk__op_id;
_Static_assert(WK__OP_AUTOGRAD_END <= WK__OP_NN_FIRST, "autograd op ids run into the nn floor's range");

/* ---- the argument structs, one per family (the union member named in the
 * enum above) ---- */

/* rules_elementwise.c */
typedef struct { wk_unary_op op; } wk__args_unary;
typedef struct { wk_binary_op op; } wk__args_binary;
typedef struct { double mul; } wk__args_affine;          /* y = mul x + add: the gradient is mul g */
typedef struct { double e; } wk__args_powf;
typedef struct { double alpha; } wk__args_elu;
typedef struct { double lo, hi; } wk__args_clamp;

/* The reduced dims of a reduction (a bit per dim of the input) and whether
 * they were kept: what wk__ag_expand_reduced reads (rules_reduce.c,
 * rules_linalg.c). */
typedef struct {
    uint32_t dims;
    bool keepdim;
} wk__reduced;
_Static_assert(WK_MAX_RANK <= 32, "wk__reduced.dims holds one bit per dim");

/* rules_reduce.c */
typedef struct {
    wk__reduced red;
    wk_reduce_op op;
    double count;             /* elements per reduced slice (mean divides by it) */
} wk__args_reduce;

/* rules_linalg.c */
typedef struct {
    wk__reduced red;
    double p;
} wk__args_norm;
typedef struct { wk__reduced red; } wk__args_lse;
typedef struct {
    wk__reduced red;
    bool take_sqrt;           /* std (the output saved too); false: var */
    double den;               /* n - correction */
} wk__args_var;

/* rules_views.c */
typedef struct {
    int dim;
    bool select;              /* select: the dim comes back (unsqueeze) before the pad */
    int64_t start, len;       /* select: start the index, len 1 */
} wk__args_narrow;
typedef struct { uint8_t dims[WK_MAX_RANK]; } wk__args_permute; /* normalised, the input's rank of them */

/* rules_custom.c: the node holds a reference to op (dropped by its on_free) */
struct wk_custom_op;
typedef struct { const struct wk_custom_op *op; } wk__args_custom;

/* rules_scan.c, rules_sort.c: dim normalised */
typedef struct { int dim; } wk__args_scan;
typedef struct { int dim; } wk__args_order;

/* rules_conv.c: p normalised (stride / dilation / groups >= 1) */
typedef struct {
    wk_conv_params p;
    int spatial;              /* 1 or 2 */
    bool transposed;
} wk__args_conv;

/* rules_pool.c: p as the backend got it; upsample's output sizes come from
 * the gradient */
typedef struct { wk_pool_params p; } wk__args_pool;
typedef struct {
    int rank;                 /* 3 (1-d, seen as H = 1) or 4 */
    bool bilinear, align_corners;
} wk__args_upsample;

/* rules_join.c */
typedef struct { int dim; } wk__args_cat;                  /* normalised; the offsets are the edges' sizes */
typedef struct { int dim; int64_t left; } wk__args_pad;     /* dim normalised */
typedef struct {
    int n;
    int64_t reps[WK_MAX_RANK];
} wk__args_repeat;
typedef struct { int dim; int64_t start; } wk__args_slice;  /* dim normalised; the region's extent is edge 1's */
/* The normalised slice (three WK_MAX_RANK arrays: larger than every other
 * family's args together, so not inline in every node): malloc'd by the
 * recorder, freed by the node's on_free. */
struct wk__slice_spec;
typedef struct { struct wk__slice_spec *spec; } wk__args_slice_assign;

/* rules_index.c: dim as given (the public ops take negative dims too) */
typedef struct {
    int dim;
    bool add;                 /* scatter: scatter_add (false: scatter, a set) */
} wk__args_index;

/* Bytes the floors above autograd may use for their args (their structs
 * _Static_assert that they fit). */
#define WK__ARGS_UPPER_BYTES 56

typedef union wk__node_args {
    wk__args_unary unary;
    wk__args_binary binary;
    wk__args_affine affine;
    wk__args_powf power;
    wk__args_elu elu;
    wk__args_clamp clamp;
    wk__args_reduce reduce;
    wk__args_norm norm;
    wk__args_lse lse;
    wk__args_var var;
    wk__args_narrow narrow;
    wk__args_permute permute;
    wk__args_custom custom;
    wk__args_scan scan;
    wk__args_order order;
    wk__args_conv conv;
    wk__args_pool pool;
    wk__args_upsample upsample;
    wk__args_cat cat;
    wk__args_pad pad;
    wk__args_repeat repeat;
    wk__args_slice slice;
    wk__args_slice_assign slice_assign;
    wk__args_index index;
    /* the nn / train floors' block (typed by their accessors); the two
     * members after it only give the union the alignment those types need */
    unsigned char upper[WK__ARGS_UPPER_BYTES];
    double align_d_;
    int64_t align_i_;
} wk__node_args;

#endif
