/* Backward rules of powf / elu / clamp, the reductions max / min / prod,
 * the linalg composites (var, std, log_sum_exp, norm, dot, mv), the scans,
 * sort / topk values, tril / triu and round_to: against central differences
 * in f64 (tests/gradcheck.h, second order too) over layouts, exact values
 * where ties and zeros decide (PyTorch's), and against torch autograd per
 * dtype (tests/oracle/gen_grad_elem.py). */
#include "testutil.h"
#include "gradcheck.h"
#include "oracle_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_POWF, OP_ELU, OP_CLAMP, OP_MAX, OP_MIN, OP_PROD, OP_CUMSUM, OP_CUMPROD, OP_SORT, OP_TOPK,
    OP_VAR, OP_STD, OP_LSE, OP_NORM, OP_TRIL, OP_TRIU, OP_ROUND_TO, OP_DOT, OP_MV,
};

typedef struct {
    int op;
    double a, b;     /* e / alpha / lo, hi / p / k / decimals */
    int dims[4], nd; /* dims list; the scans / sort / topk use dims[0] */
    bool keep, flag; /* keepdim; descending / largest / unbiased */
} octx;

static wk_tensor *apply(wk_tensor *const *in, int nin, void *vctx) {
    const octx *c = vctx;
    const wk_tensor *x = in[0];
    wk_tensor *v = NULL;
    switch (c->op) {
    case OP_POWF: return wk_powf(x, c->a);
    case OP_ELU: return wk_elu(x, c->a);
    case OP_CLAMP: return wk_clamp(x, c->a, c->b);
    case OP_MAX: return wk_max(x, c->dims, c->nd, c->keep);
    case OP_MIN: return wk_min(x, c->dims, c->nd, c->keep);
    case OP_PROD: return wk_prod(x, c->dims, c->nd, c->keep);
    case OP_CUMSUM: return wk_cumsum(x, c->dims[0]);
    case OP_CUMPROD: return wk_cumprod(x, c->dims[0]);
    case OP_SORT: return wk_sort(x, c->dims[0], c->flag, &v, NULL) == WK_OK ? v : NULL;
    case OP_TOPK: return wk_topk(x, (int64_t)c->a, c->dims[0], c->flag, &v, NULL) == WK_OK ? v : NULL;
    case OP_VAR: return wk_var(x, c->dims, c->nd, c->keep, c->flag);
    case OP_STD: return wk_std(x, c->dims, c->nd, c->keep, c->flag);
    case OP_LSE: return wk_log_sum_exp(x, c->dims, c->nd, c->keep);
    case OP_NORM: return wk_norm(x, c->a, c->dims, c->nd, c->keep);
    case OP_TRIL: return wk_tril(x, (int64_t)c->a);
    case OP_TRIU: return wk_triu(x, (int64_t)c->a);
    case OP_ROUND_TO: return wk_round_to(x, (int)c->a);
    case OP_DOT: return wk_dot(x, nin > 1 ? in[1] : x); /* one input: x . x */
    case OP_MV: return wk_mv(x, in[1]);
    }
    return NULL;
}

/* ---- inputs: distinct values (no ties), |v| in [0.3, 1.2], signed or not ---- */

static wk_tensor *distinct(const int64_t *shape, int rank, bool signed_vals, uint64_t seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    /* a permutation of an even grid: i * a mod n for a prime a not dividing n */
    static const int64_t primes[] = {7, 11, 13, 17, 19, 23, 29, 31};
    int64_t a = 1;
    for (size_t i = 0; i < sizeof primes / sizeof primes[0] && a == 1; i++)
        if (n % primes[i] != 0) a = primes[i]; /* a prime not dividing n: coprime, so i -> i a mod n permutes */
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (i * a + (int64_t)seed) % n;
        v[i] = 0.3 + 0.9 * ((double)k + 0.5) / (double)n;
        if (signed_vals && ((i * 5 + (int64_t)seed) % 3 == 0)) v[i] = -v[i];
    }
    wk_tensor *t = TU_OK(wk_from_host(v, sizeof(double) * (size_t)n, shape, rank, WK_F64, wk_cpu()));
    free(v);
    return t;
}

enum { L_CONTIG, L_T, L_NARROW, L_BCAST, L_EMPTY, L_ONE, L_RANK0, L_COUNT };
static const char *const k_layout[] = {"contiguous", "transposed", "narrowed", "broadcast", "empty", "one", "rank0"};

/* x (3, 4) in layout l (empty: (0, 4), one: (1, 1), rank 0: a scalar). */
static wk_tensor *input(int l, bool signed_vals) {
    switch (l) {
    case L_CONTIG: return distinct((int64_t[]){3, 4}, 2, signed_vals, 1);
    case L_T: return TU_OK(wk_t(distinct((int64_t[]){4, 3}, 2, signed_vals, 2)));
    case L_NARROW: return TU_OK(wk_narrow(distinct((int64_t[]){3, 7}, 2, signed_vals, 3), 1, 2, 4));
    case L_BCAST: return TU_OK(wk_broadcast_as(distinct((int64_t[]){1, 4}, 2, signed_vals, 4), (int64_t[]){3, 4}, 2));
    case L_EMPTY: return distinct((int64_t[]){0, 4}, 2, signed_vals, 5);
    case L_ONE: return distinct((int64_t[]){1, 1}, 2, signed_vals, 6);
    case L_RANK0: return distinct(NULL, 0, signed_vals, 7);
    }
    return NULL;
}

static bool smooth(const octx *c) {
    (void)c;
    return true; /* every case below stays away from kinks, ties and zeros */
}

/* gc_check of one op over every layout. Ops that reduce or scan take dims
 * from c (rank 2); rank 0 uses no dims (reductions) or dim 0 (scans). A
 * broadcast input repeats along dim 0: ops where that makes ties (max, min,
 * sort, topk, norm inf) only run it along dim 1. */
static void check_layouts(const char *name, octx c, bool signed_vals, bool ties_matter) {
    for (int l = 0; l < L_COUNT; l++) {
        wk_scope_begin();
        octx cc = c;
        if (l == L_RANK0) {
            if (c.op == OP_TRIL || c.op == OP_TRIU) { wk_scope_end(); continue; } /* needs rank 2 */
            if (c.nd > 0) cc.nd = 0;
            cc.dims[0] = c.dims[0] < 0 ? -1 : 0;
            if (c.op == OP_TOPK) cc.a = 1;
        }
        if (l == L_BCAST && ties_matter) {
            bool uses0 = false;
            for (int i = 0; i < c.nd; i++) uses0 |= c.dims[i] == 0 || c.dims[i] == -2;
            if (c.op == OP_SORT || c.op == OP_TOPK) uses0 = c.dims[0] == 0 || c.dims[0] == -2;
            if (uses0 || (ties_matter && c.nd == 0 && c.op != OP_SORT && c.op != OP_TOPK)) {
                wk_scope_end();
                continue;
            }
        }
        if (c.op == OP_TOPK && (l == L_ONE) && cc.a > 1) cc.a = 1;
        if (c.op == OP_TOPK && l == L_EMPTY && (cc.dims[0] == 0 || cc.dims[0] == -2)) cc.a = 0;
        /* max / min over an empty dim has no value (an error, as torch) */
        if ((c.op == OP_MAX || c.op == OP_MIN || (c.op == OP_NORM && (isinf(c.a) || c.a < 0))) && l == L_EMPTY) {
            bool over0 = c.nd == 0;
            for (int i = 0; i < c.nd; i++) over0 |= c.dims[i] == 0 || c.dims[i] == -2;
            if (over0) { wk_scope_end(); continue; }
        }
        /* std of a one-element slice is 0: its gradient is NaN (torch's too), differences say 0 */
        if (c.op == OP_STD && (l == L_ONE || l == L_RANK0)) { wk_scope_end(); continue; }
        wk_tensor *x = input(l, signed_vals);
        char what[128];
        snprintf(what, sizeof what, "%s, %s", name, k_layout[l]);
        gc_opts o = {.second_order = smooth(&cc), .atol = 1e-5, .rtol = 1e-4};
        gc_check(what, apply, &cc, &x, 1, &o);
        wk_scope_end();
    }
}

static void test_powf_elu_clamp(void **state) {
    (void)state;
    const double es[] = {2, 3, 0.5, -1.5, 0, 1};
    for (size_t i = 0; i < sizeof es / sizeof es[0]; i++) {
        char n[64];
        snprintf(n, sizeof n, "powf %g", es[i]);
        check_layouts(n, (octx){.op = OP_POWF, .a = es[i]}, fmod(es[i], 1.0) == 0, false);
    }
    check_layouts("elu 1", (octx){.op = OP_ELU, .a = 1.0}, true, false);
    check_layouts("elu 0.5", (octx){.op = OP_ELU, .a = 0.5}, true, false);
    check_layouts("clamp", (octx){.op = OP_CLAMP, .a = -0.5, .b = 0.6}, true, false);
}

static void test_reductions(void **state) {
    (void)state;
    struct { int dims[4], nd; bool keep; } cfg[] = {
        {{0}, 1, false}, {{-1}, 1, true}, {{0, 1}, 2, false}, {{1, -2}, 2, true}, {{0}, 0, false},
    };
    const int ops[] = {OP_MAX, OP_MIN, OP_PROD, OP_VAR, OP_STD, OP_LSE};
    const char *names[] = {"max", "min", "prod", "var", "std", "log_sum_exp"};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
            octx c = {.op = ops[o], .nd = cfg[k].nd, .keep = cfg[k].keep, .flag = k % 2 == 0};
            memcpy(c.dims, cfg[k].dims, sizeof c.dims);
            if ((ops[o] == OP_VAR || ops[o] == OP_STD || ops[o] == OP_LSE) && c.nd == 0) continue; /* no dims: no reduction */
            char n[64];
            snprintf(n, sizeof n, "%s cfg %zu", names[o], k);
            bool ties = ops[o] == OP_MAX || ops[o] == OP_MIN;
            /* var / std of a broadcast (constant along dim 0) slice: std's gradient is NaN there (torch too) */
            if ((ops[o] == OP_STD || ops[o] == OP_VAR) && (c.dims[0] == 0 || c.dims[1] == -2 || c.dims[0] == 1)) ties = true;
            check_layouts(n, c, true, ties);
        }
}

static void test_norms(void **state) {
    (void)state;
    const double ps[] = {2, 1, 3, 1.5, 0.5, INFINITY, -INFINITY, -1, 0};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        char n[64];
        snprintf(n, sizeof n, "norm p=%g dims -1", ps[i]);
        check_layouts(n, (octx){.op = OP_NORM, .a = ps[i], .dims = {-1}, .nd = 1}, true, isinf(ps[i]));
        snprintf(n, sizeof n, "norm p=%g all, keepdim", ps[i]);
        check_layouts(n, (octx){.op = OP_NORM, .a = ps[i], .nd = 0, .keep = true}, true, isinf(ps[i]));
    }
}

static void test_scans_sort_tri(void **state) {
    (void)state;
    for (int d = -2; d < 2; d++) {
        char n[64];
        snprintf(n, sizeof n, "cumsum dim %d", d);
        check_layouts(n, (octx){.op = OP_CUMSUM, .dims = {d}}, true, false);
        snprintf(n, sizeof n, "cumprod dim %d", d);
        check_layouts(n, (octx){.op = OP_CUMPROD, .dims = {d}}, true, false);
        snprintf(n, sizeof n, "sort dim %d", d);
        check_layouts(n, (octx){.op = OP_SORT, .dims = {d}, .flag = d % 2 != 0}, true, true);
        snprintf(n, sizeof n, "topk 2 dim %d", d);
        check_layouts(n, (octx){.op = OP_TOPK, .a = 2, .dims = {d}, .flag = d % 2 == 0}, true, true);
    }
    for (int k = -2; k <= 1; k++) {
        char n[64];
        snprintf(n, sizeof n, "tril %d", k);
        check_layouts(n, (octx){.op = OP_TRIL, .a = k}, true, false);
        snprintf(n, sizeof n, "triu %d", k);
        check_layouts(n, (octx){.op = OP_TRIU, .a = k}, true, false);
    }
    check_layouts("round_to 2", (octx){.op = OP_ROUND_TO, .a = 2}, true, false); /* no value on a .5 step */
}

static void test_dot_mv(void **state) {
    (void)state;
    wk_scope_begin();
    gc_opts o = {.second_order = true, .atol = 1e-5, .rtol = 1e-4};
    octx dot = {.op = OP_DOT}, mv = {.op = OP_MV};
    /* dot of strided vectors (a column of a transposed matrix, a narrowed one) */
    wk_tensor *in[2] = {TU_OK(wk_select(wk_t(distinct((int64_t[]){5, 3}, 2, true, 1)), 0, 1)),
                        TU_OK(wk_narrow(distinct((int64_t[]){8}, 1, true, 2), 0, 2, 5))};
    gc_check("dot strided", apply, &dot, in, 2, &o);
    gc_check("dot x.x", apply, &dot, in, 1, &o); /* both sides are one input */
    bool only_b[2] = {false, true};
    gc_opts ob = o;
    ob.track = only_b;
    gc_check("dot b only", apply, &dot, in, 2, &ob);
    wk_tensor *mvin[2] = {TU_OK(wk_t(distinct((int64_t[]){5, 3}, 2, true, 3))), distinct((int64_t[]){5}, 1, true, 4)};
    gc_check("mv transposed", apply, &mv, mvin, 2, &o);
    wk_tensor *bc[2] = {TU_OK(wk_broadcast_as(distinct((int64_t[]){1, 5}, 2, true, 5), (int64_t[]){3, 5}, 2)),
                        TU_OK(wk_broadcast_as(distinct((int64_t[]){1}, 1, true, 6), (int64_t[]){5}, 1))};
    gc_check("mv broadcast", apply, &mv, bc, 2, &o);
    wk_tensor *emp[2] = {distinct((int64_t[]){0, 5}, 2, true, 7), distinct((int64_t[]){5}, 1, true, 8)};
    gc_check("mv empty", apply, &mv, emp, 2, &o);
    wk_tensor *emp2[2] = {distinct((int64_t[]){0}, 1, true, 7), distinct((int64_t[]){0}, 1, true, 8)};
    gc_check("dot empty", apply, &dot, emp2, 2, &o);
    wk_scope_end();
}

/* ---- exact values where ties and zeros decide (PyTorch's numbers) ---- */

/* dL/dx of L = sum(f(x)) (every output weighs 1). */
static void grad_of_sum(const octx *c, const double *xv, const int64_t *shape, int rank, double *out) {
    wk_scope_begin();
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    wk_tensor *x = TU_OK(wk_from_host(xv, sizeof(double) * (size_t)n, shape, rank, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *in[1] = {x};
    wk_tensor *y = TU_OK(apply(in, 1, (void *)c));
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(TU_OK(wk_sum_all(y)), gs, NULL));
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, x), out, (size_t)n));
    wk_grad_store_free(gs);
    wk_scope_end();
}

static void expect(const char *what, const double *got, const double *want, int n) {
    for (int i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-12 * (1 + fabs(want[i]))) && !(isnan(got[i]) && isnan(want[i]))) {
            print_error("%s: element %d is %.17g, want %.17g\n", what, i, got[i], want[i]);
            fail();
        }
}

static void test_exact_ties_and_zeros(void **state) {
    (void)state;
    double g[12];
    /* max / min: ties share the gradient evenly (torch.amax) */
    double t1[] = {1, 3, 3, 2, -1, -1, -1, 0.5, 4, 0, 4, 4};
    octx mx = {.op = OP_MAX, .dims = {1}, .nd = 1};
    grad_of_sum(&mx, t1, (int64_t[]){3, 4}, 2, g);
    expect("max ties", g, (double[]){0, .5, .5, 0, 0, 0, 0, 1, 1. / 3, 0, 1. / 3, 1. / 3}, 12);
    octx mn = {.op = OP_MIN, .dims = {-1}, .nd = 1, .keep = true};
    grad_of_sum(&mn, t1, (int64_t[]){3, 4}, 2, g);
    expect("min ties", g, (double[]){1, 0, 0, 0, 1. / 3, 1. / 3, 1. / 3, 0, 0, 1, 0, 0}, 12);
    octx mall = {.op = OP_MAX, .nd = 0};
    double t2[] = {4, 1, 4, 4, 2, 0};
    grad_of_sum(&mall, t2, (int64_t[]){2, 3}, 2, g); /* no dims: nothing reduced */
    expect("max no dims", g, (double[]){1, 1, 1, 1, 1, 1}, 6);
    octx mall2 = {.op = OP_MAX, .dims = {0, 1}, .nd = 2};
    grad_of_sum(&mall2, t2, (int64_t[]){2, 3}, 2, g);
    expect("max all ties", g, (double[]){1. / 3, 0, 1. / 3, 1. / 3, 0, 0}, 6);
    /* prod: one zero -> the others' product at it; two -> 0; none -> y / x */
    double z[] = {2, 0, 3, 0, 0, 3, 2, 4, 3};
    octx pr = {.op = OP_PROD, .dims = {1}, .nd = 1};
    grad_of_sum(&pr, z, (int64_t[]){3, 3}, 2, g);
    expect("prod zeros", g, (double[]){0, 6, 0, 0, 0, 0, 12, 6, 8}, 9);
    octx pall = {.op = OP_PROD, .dims = {0, 1}, .nd = 2};
    double z1[] = {2, -1, 0, 3, 0.5, 4};
    grad_of_sum(&pall, z1, (int64_t[]){2, 3}, 2, g);
    expect("prod all, one zero", g, (double[]){0, 0, -12, 0, 0, 0}, 6);
    /* cumprod with zeros: torch's values */
    double c1[] = {2, 0, 3, 4, 0, 2, 0, 3};
    octx cp = {.op = OP_CUMPROD, .dims = {1}};
    grad_of_sum(&cp, c1, (int64_t[]){2, 4}, 2, g);
    expect("cumprod zeros", g, (double[]){1, 32, 0, 0, 3, 0, 0, 0}, 8);
    /* clamp: a value on a bound passes the gradient (torch) */
    double cl[] = {-1, -0.5, 0, 0.5, 1};
    octx cla = {.op = OP_CLAMP, .a = -0.5, .b = 0.5};
    grad_of_sum(&cla, cl, (int64_t[]){5}, 1, g);
    expect("clamp bounds", g, (double[]){0, 1, 1, 1, 0}, 5);
    /* elu at 0 takes the alpha exp(x) side; powf 0 is flat; powf 2 at 0 */
    octx el = {.op = OP_ELU, .a = 0.5};
    grad_of_sum(&el, (double[]){0, 1, -1}, (int64_t[]){3}, 1, g);
    expect("elu kink", g, (double[]){0.5, 1, 0.5 * exp(-1.0)}, 3);
    octx p0 = {.op = OP_POWF, .a = 0};
    grad_of_sum(&p0, (double[]){0, 2, -3}, (int64_t[]){3}, 1, g);
    expect("powf 0", g, (double[]){0, 0, 0}, 3);
    /* norm at a zero vector: 0, not NaN (torch) */
    octx n2 = {.op = OP_NORM, .a = 2, .dims = {1}, .nd = 1}, n3 = {.op = OP_NORM, .a = 3, .dims = {1}, .nd = 1};
    double nz[] = {0, 0, 0, 3, 4, 0};
    grad_of_sum(&n2, nz, (int64_t[]){2, 3}, 2, g);
    expect("norm2 at 0", g, (double[]){0, 0, 0, 0.6, 0.8, 0}, 6);
    grad_of_sum(&n3, nz, (int64_t[]){2, 3}, 2, g);
    double n3v = cbrt(27.0 + 64.0);
    expect("norm3 at 0", g, (double[]){0, 0, 0, 9 / (n3v * n3v), 16 / (n3v * n3v), 0}, 6);
    /* std of a constant slice: NaN, as torch's std backward gives */
    octx sd = {.op = OP_STD, .dims = {1}, .nd = 1, .flag = true};
    grad_of_sum(&sd, (double[]){2, 2, 2, 1, 2, 3}, (int64_t[]){2, 3}, 2, g);
    assert_true(isnan(g[0]) && isnan(g[1]) && isnan(g[2]));
    expect("std", g + 3, (double[]){-0.5, 0, 0.5}, 3);
    /* round_to, floor, ceil, round, sign: zero gradients */
    octx rt = {.op = OP_ROUND_TO, .a = 2};
    grad_of_sum(&rt, (double[]){0.123, -4.5, 7}, (int64_t[]){3}, 1, g);
    expect("round_to", g, (double[]){0, 0, 0}, 3);
}

/* second order at exact zeros (one per slice): the Hessian terms through
 * the zero are there */
static void test_second_order_zeros(void **state) {
    (void)state;
    wk_scope_begin();
    double v[] = {2, 0, 3, 0.5, -1.5, 1.25, 0, 2, 0.75, 1.5, -2, 0};
    wk_tensor *x = TU_OK(wk_from_host(v, sizeof v, (int64_t[]){3, 4}, 2, WK_F64, wk_cpu()));
    gc_opts o = {.second_order = true, .atol = 1e-5, .rtol = 1e-4};
    octx pr = {.op = OP_PROD, .dims = {1}, .nd = 1};
    gc_check("prod one zero per row", apply, &pr, &x, 1, &o);
    octx cp = {.op = OP_CUMPROD, .dims = {1}};
    gc_check("cumprod one zero per row", apply, &cp, &x, 1, &o);
    /* two zeros in a slice: first order still exact */
    double w[] = {2, 0, 3, 0, -1.5, 1.25, 0.5, 2};
    wk_tensor *y = TU_OK(wk_from_host(w, sizeof w, (int64_t[]){2, 4}, 2, WK_F64, wk_cpu()));
    gc_opts o1 = {.atol = 1e-5, .rtol = 1e-4};
    gc_check("prod two zeros", apply, &pr, &y, 1, &o1);
    gc_check("cumprod two zeros", apply, &cp, &y, 1, &o1);
    wk_scope_end();
}

/* the multi-output ops: only float values are tracked */
static void test_tracking(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = distinct((int64_t[]){3, 4}, 2, true, 1);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *v, *ix;
    TU_STATUS_OK(wk_sort(x, 1, false, &v, &ix));
    assert_string_equal(wk_grad_fn_name(v), "wk_sort");
    assert_false(wk_is_tracked(ix));
    TU_STATUS_OK(wk_topk(x, 2, 0, true, &v, &ix));
    assert_string_equal(wk_grad_fn_name(v), "wk_topk");
    assert_false(wk_is_tracked(ix));
    assert_false(wk_is_tracked(TU_OK(wk_argsort(x, 1, true))));
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_powf(x, 2))), "wk_powf");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_prod(x, (int[]){0}, 1, false))), "wk_prod");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_cumprod(x, 0))), "wk_cumprod");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_norm(x, 2, NULL, 0, false))), "wk_norm");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_var(x, (int[]){1}, 1, false, true))), "wk_var");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_std(x, (int[]){-1}, 1, true, true))), "wk_std");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_log_sum_exp(x, (int[]){0}, 1, false))), "wk_log_sum_exp");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_dot(wk_flatten_all(x), wk_flatten_all(x)))), "wk_dot");
    /* the saved indices are checked: writing them in place fails the backward */
    wk_tensor *l = TU_OK(wk_sum_all(wk_mul(v, v)));
    wk_tensor *v2, *ix2;
    TU_STATUS_OK(wk_sort(x, 1, false, &v2, &ix2));
    wk_tensor *l2 = TU_OK(wk_sum_all(v2));
    TU_STATUS_OK(wk_fill_(ix2, 0.0));
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    assert_int_equal(wk_backward(l2, gs, NULL), WK_ERR_ARG);
    wk_clear_error();
    wk_grad_store_free(gs);
    /* untracked inputs: nothing recorded */
    wk_tensor *u = distinct((int64_t[]){3, 4}, 2, true, 2);
    assert_false(wk_is_tracked(TU_OK(wk_cumsum(u, 0))));
    assert_false(wk_is_tracked(TU_OK(wk_max(u, (int[]){0}, 1, false))));
    wk_scope_end();
}

/* ---- torch autograd per dtype (tests/oracle/gen_grad_elem.py) ---- */

static bool parse_ctx(const char *op, const char *params, octx *c) {
    static const struct { const char *name; int op; } k[] = {
        {"powf", OP_POWF}, {"elu", OP_ELU}, {"clamp", OP_CLAMP}, {"amax", OP_MAX}, {"amin", OP_MIN},
        {"prod", OP_PROD}, {"cumsum", OP_CUMSUM}, {"cumprod", OP_CUMPROD}, {"sort", OP_SORT}, {"topk", OP_TOPK},
        {"var", OP_VAR}, {"std", OP_STD}, {"lse", OP_LSE}, {"norm", OP_NORM}, {"dot", OP_DOT}, {"mv", OP_MV},
        {"tril", OP_TRIL}, {"triu", OP_TRIU},
    };
    memset(c, 0, sizeof *c);
    c->op = -1;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcmp(op, k[i].name)) c->op = k[i].op;
    if (c->op < 0) return false;
    char s[64];
    if (ou_param(params, "e", s, sizeof s) || ou_param(params, "alpha", s, sizeof s) ||
        ou_param(params, "lo", s, sizeof s) || ou_param(params, "p", s, sizeof s) || ou_param(params, "k", s, sizeof s))
        c->a = strtod(s, NULL);
    if (ou_param(params, "hi", s, sizeof s)) c->b = strtod(s, NULL);
    if (ou_param(params, "keep", s, sizeof s)) c->keep = s[0] == '1';
    if (ou_param(params, "desc", s, sizeof s) || ou_param(params, "unb", s, sizeof s)) c->flag = s[0] == '1';
    if (ou_param(params, "dim", s, sizeof s)) c->dims[0] = atoi(s);
    if (ou_param(params, "dims", s, sizeof s)) {
        if (!strcmp(s, "all")) {
            c->nd = 2;
            c->dims[0] = 0;
            c->dims[1] = 1;
        } else {
            long long d[4];
            c->nd = ou_parse_ints(s, '|', d, 4);
            for (int i = 0; i < c->nd; i++) c->dims[i] = (int)d[i];
        }
    }
    return true;
}

static void test_torch_oracle(void **state) {
    (void)state;
    char dir[1024], path[1200], line[1024];
    if (!ou_dir("grad_elem", dir, sizeof dir)) {
        print_message("WICK_ORACLE_DIR not set: run through ctest (tests/oracle/gen_grad_elem.py)\n");
        skip();
    }
    FILE *f = ou_open_manifest(dir, path, sizeof path);
    assert_non_null(f);
    int cases = 0;
    while (ou_next_line(f, line, sizeof line)) {
        char id[16], op[16], dt[8], params[256], fa[32], fb[32], fr[32], fg[80];
        double tol;
        assert_int_equal(sscanf(line, "%15s %15s %7s %255s %31s %31s %31s %79s %lf", id, op, dt, params, fa, fb, fr,
                                fg, &tol), 9);
        octx c;
        assert_true(parse_ctx(op, params, &c));
        wk_dtype dtype;
        assert_true(wk_dtype_from_name(dt, &dtype));
        wk_scope_begin();
        int nin = strcmp(fb, "-") ? 2 : 1;
        wk_tensor *in[2] = {TU_OK(wk_to_dtype(TU_OK(ou_load(dir, fa)), dtype)), NULL};
        if (nin == 2) in[1] = TU_OK(wk_to_dtype(TU_OK(ou_load(dir, fb)), dtype));
        wk_tensor *r = TU_OK(wk_to_dtype(TU_OK(ou_load(dir, fr)), dtype));
        for (int i = 0; i < nin; i++) TU_STATUS_OK(wk_requires_grad(in[i], true));
        wk_tensor *y = apply(in, nin, &c);
        if (!y) {
            print_error("case %s (%s %s %s): %s\n", id, op, dt, params, wk_last_error());
            fail();
        }
        wk_grad_store *gs = wk_grad_store_new();
        TU_STATUS_OK(wk_backward(TU_OK(wk_sum_all(wk_mul(y, r))), gs, NULL));
        char *bar = strchr(fg, '|');
        if (bar) *bar = 0;
        const char *gfile[2] = {fg, bar ? bar + 1 : NULL};
        for (int i = 0; i < nin; i++) {
            wk_tensor *g = wk_grad(gs, in[i]);
            assert_non_null(g);
            assert_int_equal(wk_tensor_dtype(g), dtype);
            char msg[512];
            const char *bad = ou_compare_file(g, dir, gfile[i], tol, false, msg, sizeof msg);
            if (bad) {
                print_error("case %s (%s %s %s) input %d: %s\n", id, op, dt, params, i, bad);
                fail();
            }
        }
        wk_grad_store_free(gs);
        wk_scope_end();
        cases++;
    }
    fclose(f);
    assert_true(cases > 300);
    print_message("torch oracle: %d cases\n", cases);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_powf_elu_clamp),   cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_norms),            cmocka_unit_test(test_scans_sort_tri),
        cmocka_unit_test(test_dot_mv),           cmocka_unit_test(test_exact_ties_and_zeros),
        cmocka_unit_test(test_second_order_zeros), cmocka_unit_test(test_tracking),
        cmocka_unit_test(test_torch_oracle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
