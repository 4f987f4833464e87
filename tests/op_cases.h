/* The op table's case machinery shared by tests/test_backend_ops.c (every
 * backend against the CPU) and tests/test_grad_table.c (every backward
 * rule against finite differences): the default cases of a kind, the input
 * values of a domain, the "SHAPE[#DTYPE][~DOM][@t]" input specs of a case,
 * and an input built in one of the layout variants (c t n b tn p e 1 0). */
#ifndef WICK_OP_CASES_H
#define WICK_OP_CASES_H
#include <stdbool.h>
#include <stdint.h>
#include "wick/wick.h"

#define OC_MAX_IN 8

/* Backend cases of a kind whose table entry leaves "bk" empty. */
const char *oc_default_bk(const char *kind);
/* Deterministic values of a domain ("u:LO:HI", "h:LO:HI", "r", "i:LO:HI"). */
void oc_fill(double *v, int64_t n, const char *dom, int seed);

typedef struct oc_spec {
    int64_t shape[WK_MAX_RANK];
    int rank;
    bool has_dt, force_t;
    wk_dtype dt;
    char dom[32];
} oc_spec;

/* SHAPE[#DTYPE][~DOM][@t] */
bool oc_parse_input(const char *s, oc_spec *o);
/* One case "IN,IN,...|PARAMS" into specs (at most OC_MAX_IN) and params
 * (a pointer into buf, which gets a copy of the case); the input count, or
 * -1 with the bad token in *bad_tok. */
int oc_parse_case(const char *bkcase, char *buf, size_t cap, oc_spec *sp, const char **params, const char **bad_tok);
/* The shape input idx has in layout lay (e: dim 0 of inputs whose dim 0
 * matches input 0's becomes 0; 1: every dim 1; 0: rank 0), or false when
 * the layout does not apply to it. Only operands (inputs without their own
 * #DTYPE) take layouts. */
bool oc_layout_shape(const oc_spec *sp, int idx, int lay, const int64_t *shape0, int rank0, int64_t *shape, int *rank);
/* One input on the CPU (*c) and, when dev is not NULL, a copy on dev (*g),
 * with layout lay applied to both: the stored tensor gets values of the
 * domain (the spec's own ~DOM, else dom; fill_dom, when not NULL, replaces
 * the resulting domain), then the same views are taken. false when the
 * layout does not apply to these shapes. Owned by the current scope. */
bool oc_make_input(const oc_spec *sp, int idx, int lay, const int64_t *shape0, int rank0, wk_dtype dt,
                   const char *dom, const char *(*fill_dom)(const char *dom), wk_device *dev, wk_tensor **c,
                   wk_tensor **g);

#endif
