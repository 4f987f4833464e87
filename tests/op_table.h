/* The op-test table (tests/oracle/op_table.def) compiled in: one entry per
 * op, with its dtypes, layout variants, tolerance class, gradient-check flag,
 * input domain, backend cases and the call that runs it. tests/test_oracle.c
 * runs numpy's cases through it; tests/test_backend_ops.c compares every
 * other backend with the CPU through it. */
#ifndef WICK_OP_TABLE_H
#define WICK_OP_TABLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "wick/wick.h"

/* Layout variants (the "layouts" field). */
enum {
    OT_C = 1 << 0,  /* c  contiguous */
    OT_T = 1 << 1,  /* t  transposed */
    OT_N = 1 << 2,  /* n  narrowed */
    OT_B = 1 << 3,  /* b  broadcast (stride 0) */
    OT_TN = 1 << 4, /* tn transposed + narrowed */
    OT_P = 1 << 5,  /* p  permuted */
    OT_E = 1 << 6,  /* e  empty */
    OT_1 = 1 << 7,  /* 1  one element */
    OT_0 = 1 << 8,  /* 0  rank 0 */
};
#define OT_NLAYOUTS 9
/* Its letters ("c", "tn", ...) of layout bit i. */
const char *ot_layout_name(int i);
/* "c t n" -> mask; -1 on an unknown token. */
int ot_parse_layouts(const char *s);

/* What a call sees: its inputs, its "k=v;k=v" parameters, the case dtype and
 * device (for the creation ops), and where results after the first go (the
 * indices of sort / topk, meshgrid's outputs 2..n): more[0 .. nmore). */
#define OT_MAX_MORE 7
typedef struct ot_ctx {
    wk_tensor *const *in;
    int nin;
    const char *params;
    wk_dtype dt;
    wk_device *dev;
    wk_tensor *more[OT_MAX_MORE];
    int nmore;
    bool bad;        /* a missing input or parameter: the case is malformed */
    char why[160];
} ot_ctx;

typedef struct ot_entry {
    const char *id, *name, *kind, *oracle, *dtypes, *layouts, *tol;
    int grad;
    const char *dom, *bk;
    wk_tensor *(*call)(ot_ctx *x);
} ot_entry;

extern const ot_entry ot_table[];
extern const int ot_count;

const ot_entry *ot_find(const char *name);
/* Bit (1 << dtype) per declared dtype; 0 when the string is malformed. */
unsigned ot_dtype_mask(const ot_entry *e);
int ot_layout_mask(const ot_entry *e);
/* The tolerance class without its ":S" ("exact", "trans", ...). */
void ot_tol_class(const ot_entry *e, char *out, size_t cap);
/* tu_tol(dtype) multiplier of the backend-vs-CPU check. */
double ot_backend_scale(const ot_entry *e);
/* NULL when e's backend tolerance is well formed (a known class; only
 * "exact" bit-compared), else why not. */
const char *ot_backend_scale_problem(const ot_entry *e);
/* Runs the op. NULL with wick's error when the op failed; x->bad (and
 * x->why) when the case does not fit the op (missing input / parameter). */
wk_tensor *ot_run(const ot_entry *e, ot_ctx *x);
/* Oracle coverage, for the test_oracle*.c harnesses whose manifests carry
 * no layouts field: the layout bits one case covers, from its input specs'
 * view chains (FILE@VIEW+VIEW...[#DTYPE]: t n b p, tn for t and n on one
 * input, c for an input without a view) and the shapes of the viewed inputs
 * and results (e: a 0-size input or result; 0 / 1: a rank-0 / one-element
 * input), as gen_oracle.py's Oracle.layouts works them out. */
int ot_case_layouts(const char *const *specs, wk_tensor *const *in, int nin, wk_tensor *const *out, int nout);
/* Records that a case that must succeed ran e on dt in these layouts. */
void ot_cover(const ot_entry *e, wk_dtype dt, int layouts);
/* ot_cover of one case that must succeed (and did), with its layouts from
 * ot_case_layouts; false (and a FAIL line naming the case) when the table
 * does not declare dt for e. */
bool ot_cover_case(const char *id, const ot_entry *e, wk_dtype dt, const char *const *specs, wk_tensor *const *in,
                   int nin, wk_tensor *const *out, int nout);
/* Every declared (op, dtype, layout) of the entries whose oracle is `oracle`
 * had a recorded case; prints a FAIL line per gap and returns the gaps;
 * *tuples gets the number declared. */
int ot_cover_check(const char *oracle, int *tuples);
/* The end of every test_oracle*.c's test_table_coverage (a cmocka test):
 * skipped when the harness ran no cases; otherwise ot_cover_check of oracle
 * plus the problems the harness counted itself (ot_cover_case's FAIL lines),
 * printed as "LABEL: op table coverage: N (op, dtype, layout) tuples
 * declared, M problems"; fails when the table declares none or M > 0. */
void ot_coverage_test(const char *label, const char *oracle, int ncases, int problems);
/* The table as JSON (one object per op), for tests/oracle/check_table.py. */
void ot_print_json(FILE *f);

/* Used by the call expressions in op_table.def. */
wk_tensor *ot_in(ot_ctx *x, int i);
/* An optional input (nn.h's weight, bias, mask): input i, or NULL when the
 * case has fewer inputs (a NULL input, '-' in gen_nn's manifest, is NULL too). */
wk_tensor *ot_opt(ot_ctx *x, int i);
double ot_pf(ot_ctx *x, const char *key);
long long ot_pi(ot_ctx *x, const char *key);
wk_tensor *ot_reduce(ot_ctx *x, wk_reduce_op op);
wk_tensor *ot_cast(ot_ctx *x);
wk_tensor *ot_join(ot_ctx *x, bool stack);
wk_tensor *ot_create(ot_ctx *x, char which);
wk_tensor *ot_conv(ot_ctx *x, int dims, bool transposed);
wk_tensor *ot_pool(ot_ctx *x, char which);
wk_tensor *ot_sort(ot_ctx *x);
wk_tensor *ot_topk(ot_ctx *x);
wk_tensor *ot_norm(ot_ctx *x);
wk_tensor *ot_stat(ot_ctx *x, char which);
wk_tensor *ot_scatter_inplace(ot_ctx *x, bool add);
wk_tensor *ot_flip(ot_ctx *x);
wk_tensor *ot_repeat(ot_ctx *x);
wk_tensor *ot_meshgrid(ot_ctx *x);
wk_tensor *ot_slice_assign(ot_ctx *x, bool inplace);
wk_tensor *ot_upsample_scale(ot_ctx *x, char which);

#endif
