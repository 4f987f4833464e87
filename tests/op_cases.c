/* The op table's case machinery (tests/op_cases.h). */
#include "op_cases.h"
#include "testutil.h"
#include "oracle_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_table.h"

const char *oc_default_bk(const char *kind) {
    if (strcmp(kind, "unary") == 0) return "3x7 / 4x1000";
    if (strcmp(kind, "binary") == 0 || strcmp(kind, "cmp") == 0) return "3x4,3x4 / 3x1x5,4x5 / 2x3,1 / 40x300,300";
    if (strcmp(kind, "reduce") == 0) return "3x4x5|dims=1;keep=0 / 3x4x5|dims=0|2;keep=1 / 7x300|dims=1;keep=0";
    if (strcmp(kind, "reduce_all") == 0) return "3x4x5 / 300x70";
    return "";
}

void oc_fill(double *v, int64_t n, const char *dom, int seed) {
    double lo = -4, hi = 4;
    char kind = 'u';
    if (dom && *dom) {
        kind = dom[0];
        if (kind != 'r' && sscanf(dom + 1, ":%lf:%lf", &lo, &hi) != 2) kind = 'u';
    }
    for (int64_t i = 0; i < n; i++) {
        double s = sin((double)i * 0.731 + 0.2 + seed * 1.37) * (1.0 + (double)(i % 7) / 3.0) / 7.0 * 3.0; /* |s| < 1.72 */
        double u = 0.5 + s / 3.44;                                                                      /* in (0, 1) */
        switch (kind) {
        case 'r': v[i] = (i % 3 == 1 ? -1.0 : 1.0) * (0.1 + 9.9 * u); break;
        case 'i': v[i] = lo + (double)(((i * 7919) + (i % 13) * 31) % (int64_t)(hi - lo > 0 ? hi - lo : 1)); break;
        case 'h': v[i] = lo + (hi - lo) * u; if (i % 2) v[i] = floor(v[i] * 2.0) / 2.0; break;
        default: v[i] = lo + (hi - lo) * u; break;
        }
    }
}

bool oc_parse_input(const char *s, oc_spec *o) {
    char buf[1024], *p;
    snprintf(buf, sizeof buf, "%s", s);
    memset(o, 0, sizeof *o);
    if ((p = strchr(buf, '@'))) {
        o->force_t = strcmp(p, "@t") == 0;
        *p = 0;
        if (!o->force_t) return false;
    }
    if ((p = strchr(buf, '~'))) {
        snprintf(o->dom, sizeof o->dom, "%s", p + 1);
        *p = 0;
    }
    if ((p = strchr(buf, '#'))) {
        if (!wk_dtype_from_name(p + 1, &o->dt)) return false;
        o->has_dt = true;
        *p = 0;
    }
    o->rank = ou_parse_shape(buf, o->shape);
    return o->rank >= 0;
}

int oc_parse_case(const char *bkcase, char *buf, size_t cap, oc_spec *sp, const char **params, const char **bad_tok) {
    snprintf(buf, cap, "%s", bkcase);
    char *bar = strchr(buf, '|');
    *params = "";
    if (bar) {
        *bar = 0;
        *params = bar + 1;
    }
    int nin = 0;
    for (char *tok = buf; *tok && nin < OC_MAX_IN;) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = 0;
        if (!oc_parse_input(tok, &sp[nin++])) {
            *bad_tok = tok;
            return -1;
        }
        if (!comma) break;
        *comma = ','; /* buf keeps the inputs for messages */
        tok = comma + 1;
    }
    return nin;
}

bool oc_layout_shape(const oc_spec *sp, int idx, int lay, const int64_t *shape0, int rank0, int64_t *shape, int *rank) {
    (void)idx;
    *rank = sp->rank;
    memcpy(shape, sp->shape, sizeof sp->shape);
    bool operand = !sp->has_dt;
    if (operand && lay == OT_E && *rank && rank0 && shape[0] == shape0[0]) shape[0] = 0;
    if (operand && lay == OT_1)
        for (int i = 0; i < *rank; i++) shape[i] = 1;
    if (operand && lay == OT_0) *rank = 0;
    return true;
}

bool oc_make_input(const oc_spec *sp, int idx, int lay, const int64_t *shape0, int rank0, wk_dtype dt,
                   const char *dom, const char *(*fill_dom)(const char *dom), wk_device *dev, wk_tensor **c,
                   wk_tensor **g) {
    int64_t shape[WK_MAX_RANK], st[WK_MAX_RANK];
    int rank;
    oc_layout_shape(sp, idx, lay, shape0, rank0, shape, &rank);
    bool operand = !sp->has_dt;
    bool t = sp->force_t || (operand && (lay == OT_T || (lay == OT_TN && idx == 0)));
    bool n = operand && (lay == OT_N || (lay == OT_TN && idx == 0));
    bool b = operand && lay == OT_B && idx == 0;
    bool p = operand && lay == OT_P && idx == 0;
    if ((t || p) && rank < 2) return false;
    if ((n || b) && (rank < 1 || (b && shape[0] < 2))) return false;
    /* the stored tensor: transposed / permuted dims, a longer dim 0, or dim 0 of 1 */
    memcpy(st, shape, sizeof st);
    if (n) st[0] += 3;
    if (b) st[0] = 1;
    if (t) { int64_t z = st[rank - 1]; st[rank - 1] = st[rank - 2]; st[rank - 2] = z; }
    if (p) for (int i = 0; i < rank; i++) st[i] = shape[rank - 1 - i];
    int64_t cnt = 1;
    for (int i = 0; i < rank; i++) cnt *= st[i];
    double *v = malloc(sizeof(double) * (size_t)(cnt ? cnt : 1));
    assert_non_null(v);
    const char *d = sp->dom[0] ? sp->dom : dom;
    oc_fill(v, cnt, fill_dom ? fill_dom(d) : d, idx);
    wk_tensor *h = TU_OK(wk_from_host(v, sizeof(double) * (size_t)cnt, st, rank, WK_F64, wk_cpu()));
    free(v);
    wk_tensor *base = TU_OK(wk_to_dtype(h, sp->has_dt ? sp->dt : dt));
    wk_tensor_free(h);
    wk_tensor *bases[2] = {base, dev ? TU_OK(wk_to_device(base, dev)) : NULL};
    wk_tensor *outs[2] = {NULL, NULL};
    for (int k = 0; k < 2 && bases[k]; k++) {
        wk_tensor *x = bases[k], *y;
        if (t) { y = TU_OK(wk_transpose(x, -2, -1)); wk_tensor_free(x); x = y; }
        if (p) {
            int perm[WK_MAX_RANK];
            for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
            y = TU_OK(wk_permute(x, perm, rank)); wk_tensor_free(x); x = y;
        }
        if (n) { y = TU_OK(wk_narrow(x, 0, 2, shape[0])); wk_tensor_free(x); x = y; }
        if (b) { y = TU_OK(wk_broadcast_as(x, shape, rank)); wk_tensor_free(x); x = y; }
        outs[k] = x;
    }
    *c = outs[0];
    if (g) *g = outs[1];
    return true;
}
