/* Every backward rule of the op table (tests/oracle/op_table.def) against
 * central finite differences in f64, through tests/gradcheck.h's gc_check.
 *
 * For each entry with GRAD 1: each case (the entry's backend cases "bk",
 * or the kind's default, within an element budget; or this file's own
 * smaller cases, k_fd_cases, where the table's are too big for two forward
 * passes per input element), each declared layout variant (c t n b tn p e
 * 1 0, built by tests/op_cases.c as test_backend_ops builds them): float
 * inputs in f64 (f32 where the op has no f64: those are linear selections)
 * from the entry's domain, half-integer domains ("h", there to hit kinks in
 * the forward tests) replaced by uniform ones so no input sits on a kink,
 * the call run through ot_run with the float inputs tracked, and the
 * gradients of sum(f(x) * R) checked by gc_check.
 *
 * An entry whose result comes back untracked has no rule yet: "NO RULE".
 * It fails the test only with WICK_GRAD_REQUIRE_ALL=1 (or once
 * GRAD_REQUIRE_ALL_DEFAULT below is 1). A wrong gradient always fails,
 * naming op, dtype, layout, case, input and element.
 *
 * GRAD 0 entries: an integer result must be untracked; floor / ceil /
 * round / sign / round_to give zero gradients (or an untracked result); the
 * in-place entries refuse a tracked leaf destination (as PyTorch); scatter
 * (repeated ids: finite differences do not define its gradient) is left to
 * the PyTorch comparison (test_oracle_grad).
 *
 * Each entry is one cmocka test; the group's teardown prints the per-op
 * table. */
#include "testutil.h"
#include "gradcheck.h"
#include "op_cases.h"
#include "op_table.h"
#include "oracle_util.h"
#include "wick/autograd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lead flips this to 1 once every rule has landed (or sets
 * WICK_GRAD_REQUIRE_ALL=1): an entry without a rule then fails. */
#define GRAD_REQUIRE_ALL_DEFAULT 1

/* Tracked elements per case: finite differences cost two forward passes
 * per element. */
#define FD_BUDGET 1024

/* Cases of our own for entries whose table cases are all (or mostly) too
 * big for finite differences, or whose small cases miss a parameter. */
static const struct { const char *name, *cases; } k_fd_cases[] = {
    {"cumsum", "4x5|dim=0 / 4x5|dim=1 / 1x1|dim=1"},
    {"cumprod", "4x5|dim=0 / 4x5|dim=1 / 1x1|dim=0"},
    {"sort", "4x5|dim=1;desc=0 / 5x3|dim=0;desc=1 / 1x1|dim=0;desc=0"},
    {"topk", "4x6|dim=1;k=3;largest=1 / 6x4|dim=0;k=2;largest=0 / 1x1|dim=1;k=1;largest=1"},
    {"norm", "3x4x5|p=2.0;dims=1;keep=0 / 3x4x5|p=1.0;dims=0|2;keep=1 / 5x6|p=inf;dims=1;keep=0 / "
             "5x6|p=0.5;dims=;keep=0 / 5x6|p=0.0;dims=0;keep=1 / 5x6|p=-inf;dims=-1;keep=0 / 5x6|p=3.0;dims=;keep=0"},
    {"index_add", "5x4,7#i64~i:0:5,7x4|dim=0 / 4x5,6#i64~i:0:5,4x6|dim=1"},
    {"scatter_add", "6,9#i64~i:0:6,9|dim=0 / 3x4,3x5#i64~i:0:4,3x5|dim=1"},
    {"conv2d", "1x2x5x6,3x2x3x3~u:-1.5:1.5|padding=1 / 1x4x6x6,4x2x3x3~u:-1.5:1.5|padding=1;stride=2;groups=2 / "
               "2x2x7x6,2x1x3x2~u:-1.5:1.5|padding=2;dilation=2;groups=2 / 2x3x5x5,5x3x1x1~u:-1.5:1.5|"},
    {"conv1d", "2x4x11,6x4x3~u:-1.5:1.5|padding=1 / 1x4x8,8x2x3~u:-1.5:1.5|padding=1;stride=2;groups=2 / "
               "3x6x7,6x1x2~u:-1.5:1.5|padding=2;dilation=2;groups=6 / 2x3x5,5x3x1~u:-1.5:1.5|"},
    {"conv_transpose2d", "1x2x5x6,2x3x3x3~u:-1.5:1.5|padding=1 / 1x4x4x4,4x2x3x3~u:-1.5:1.5|padding=1;stride=2;groups=2;"
                         "output_padding=1 / 2x2x5x4,2x1x3x2~u:-1.5:1.5|padding=2;dilation=2;groups=2 / "
                         "2x3x5x5,3x5x1x1~u:-1.5:1.5|"},
    {"conv_transpose1d", "2x4x11,4x6x3~u:-1.5:1.5|padding=1 / 1x4x8,4x4x3~u:-1.5:1.5|padding=1;stride=2;groups=2;"
                         "output_padding=1 / 3x6x7,6x1x2~u:-1.5:1.5|padding=2;dilation=2;groups=6 / "
                         "2x3x5,3x5x1~u:-1.5:1.5|"},
    {"max_pool2d", "2x2x7x9|k=3x3;s=2x2;p=1x1 / 2x2x6x8|k=2x2;s=2x2;p=0x0 / 1x2x7x7|k=3x2;s=1x3;p=1x0"},
    {"avg_pool2d", "2x2x7x9|k=3x2;s=1x2;p=1x1;cip=0 / 2x2x7x9|k=3x2;s=1x2;p=1x1;cip=1 / 1x2x6x6|k=2x2;s=3x3;p=0x0;cip=0"},
    {"upsample_bilinear2d", "2x2x5x7|size=9x13;ac=0 / 2x2x5x7|size=9x13;ac=1 / 1x2x6x6|size=4x3;ac=0"},
    {"upsample_nearest2d", "2x2x5x7|size=11x4"},
};

/* Ops whose derivative is undefined where inputs tie: the broadcast layout
 * (stride 0: every value repeated along dim 0) makes ties, so it is left
 * out for them (test_grad_elem checks ties with torch's exact values). */
static const char *const k_tie_ops[] = {"reduce.max", "reduce.min", "reduce_all.max", "reduce_all.min",
                                        "sort", "topk", "norm"};
/* GRAD 0 entries whose derivative is zero almost everywhere. */
static const char *const k_zero_ops[] = {"unary.ceil", "unary.floor", "unary.round", "unary.sign", "round_to"};
/* GRAD 0 entries that write into input 0 in place. */
static const char *const k_inplace_ops[] = {"scatter_", "scatter_add_", "slice_assign_"};

static bool in_list(const char *const *l, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i], name) == 0) return true;
    return false;
}
#define IN_LIST(l, name) in_list(l, sizeof l / sizeof l[0], name)

typedef struct op_stat {
    bool ran;
    int pass, norule, fail, na, big;
    char note[96];
    char first_fail[400];
} op_stat;
static op_stat g_stat[512];
static bool g_require_all;
static char g_what[1400]; /* the case running now, for the summary when gc_check fails it */

static const char *fd_dom(const char *dom) {
    /* "h:LO:HI" puts half the values on half-integers, i.e. on the kinks of
     * relu / clamp / abs: uniform over the same range instead */
    static _Thread_local char buf[40];
    if (dom && dom[0] == 'h') {
        snprintf(buf, sizeof buf, "u%s", dom + 1);
        return buf;
    }
    return dom;
}

typedef struct fd_ctx {
    const ot_entry *e;
    const char *params;
    wk_dtype dt;
} fd_ctx;

/* The entry's call; gc_check's difference passes hand contiguous f64
 * copies, which go to the op's dtype first (f32-only ops). */
static wk_tensor *call_entry(wk_tensor *const *in, int nin, void *vctx) {
    fd_ctx *c = vctx;
    wk_tensor *cv[OC_MAX_IN];
    for (int i = 0; i < nin; i++) {
        wk_dtype d = wk_tensor_dtype(in[i]);
        cv[i] = wk_dtype_is_float(d) && d != c->dt ? wk_to_dtype(in[i], c->dt) : in[i];
    }
    ot_ctx x = {.in = cv, .nin = nin, .params = c->params, .dt = c->dt, .dev = wk_cpu()};
    return ot_run(c->e, &x); /* further results (indices) stay in the caller's scope */
}

static bool is_tracked_input(const wk_tensor *t) { return t && wk_dtype_is_float(wk_tensor_dtype(t)); }

/* snprintf's "%s" of a longer buffer, without the truncation warning */
static void copy_trunc(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = 0;
}

static void note_fail(op_stat *s, const char *msg) {
    s->fail++;
    if (!s->first_fail[0]) copy_trunc(s->first_fail, sizeof s->first_fail, msg);
    printf("FAIL %s\n", msg);
}

/* sum |y| (0 for an empty y), untracked */
static double abs_sum(const wk_tensor *y) {
    double v = 0;
    wk_no_grad_begin();
    wk_tensor *s = wk_sum_all(wk_abs(y));
    if (!s || wk_item(s, &v) != WK_OK) v = 0;
    wk_no_grad_end();
    return isfinite(v) ? v : 0;
}

/* cast to a float dtype: the gradient is R in the target dtype, read back
 * (the straight-through rule: finite differences of a rounding say 0) */
static void check_cast_float(const char *what, fd_ctx *c, wk_tensor *const *in, int nin, wk_tensor *y, op_stat *s) {
    wk_tensor *g[OC_MAX_IN] = {0};
    if (gc_grads(call_entry, c, in, nin, NULL, 1234, g) != WK_OK) {
        char m[2000];
        snprintf(m, sizeof m, "%s: backward failed: %s", what, wk_last_error());
        note_fail(s, m);
        return;
    }
    wk_tensor *r = TU_OK(gc_weights(wk_shape(y), wk_rank(y), wk_tensor_dtype(y), 1234));
    double d = g[0] ? tu_max_abs_diff(g[0], r) : INFINITY;
    if (d != 0) {
        char m[2000];
        snprintf(m, sizeof m, "%s: gradient differs from R cast back by up to %g", what, d);
        note_fail(s, m);
    } else {
        s->pass++;
    }
    for (int i = 0; i < nin; i++) wk_tensor_free(g[i]);
}

/* One case of a GRAD 1 entry in one layout. */
static void fd_case(const ot_entry *e, wk_dtype dt, int lay, const char *bkcase, op_stat *s) {
    char buf[1024];
    oc_spec sp[OC_MAX_IN];
    const char *params, *bad_tok = "";
    int nin = oc_parse_case(bkcase, buf, sizeof buf, sp, &params, &bad_tok);
    int li = 0;
    while (!(lay & (1 << li))) li++;
    snprintf(g_what, sizeof g_what, "%s %s layout %s [%s|%s]", e->name, wk_dtype_name(dt), ot_layout_name(li), buf,
             params);
    if (nin < 0) {
        char m[2000];
        snprintf(m, sizeof m, "%s: bad case input '%s'", g_what, bad_tok);
        note_fail(s, m);
        return;
    }
    if (lay == OT_B && IN_LIST(k_tie_ops, e->name)) { /* stride 0 makes ties */
        s->na++;
        return;
    }
    /* the budget: tracked elements in this layout */
    int64_t tracked = 0;
    for (int i = 0; i < nin; i++) {
        int64_t sh[WK_MAX_RANK];
        int r;
        oc_layout_shape(&sp[i], i, lay, sp[0].shape, sp[0].rank, sh, &r);
        int64_t n = 1;
        for (int k = 0; k < r; k++) n *= sh[k];
        if (!sp[i].has_dt || wk_dtype_is_float(sp[i].dt)) tracked += n;
    }
    if (tracked > FD_BUDGET) {
        s->big++;
        return;
    }
    wk_scope_begin();
    wk_tensor *in[OC_MAX_IN];
    for (int i = 0; i < nin; i++)
        if (!oc_make_input(&sp[i], i, lay, sp[0].shape, sp[0].rank, dt, e->dom, fd_dom, NULL, &in[i], NULL)) {
            s->na++; /* this layout does not apply to these shapes */
            wk_scope_end();
            return;
        }
    fd_ctx c = {.e = e, .params = params, .dt = dt};
    char m[2000];
    /* untracked first: does the op take this case at all? */
    wk_clear_error();
    wk_tensor *y0 = call_entry(in, nin, &c);
    if (!y0) {
        if (lay == OT_C) {
            snprintf(m, sizeof m, "%s: fails untracked although op_table.def declares it: %s", g_what, wk_last_error());
            note_fail(s, m);
        } else {
            s->na++; /* an error the layout makes (as test_backend_ops counts it) */
        }
        wk_clear_error();
        wk_scope_end();
        return;
    }
    double S = abs_sum(y0);
    /* tracked: a rule? */
    int ntr = 0;
    for (int i = 0; i < nin; i++)
        if (is_tracked_input(in[i])) {
            if (wk_requires_grad(in[i], true) != WK_OK) {
                snprintf(m, sizeof m, "%s: wk_requires_grad on input %d: %s", g_what, i, wk_last_error());
                note_fail(s, m);
                wk_clear_error();
                wk_scope_end();
                return;
            }
            ntr++;
        }
    wk_tensor *y = call_entry(in, nin, &c);
    bool tracked_out = y && wk_is_tracked(y);
    bool int_out = y && !wk_dtype_is_float(wk_tensor_dtype(y));
    for (int i = 0; i < nin; i++)
        if (is_tracked_input(in[i])) wk_requires_grad(in[i], false);
    if (!y) {
        snprintf(m, sizeof m, "%s: fails with tracked inputs (untracked it works): %s", g_what, wk_last_error());
        note_fail(s, m);
        wk_clear_error();
    } else if (int_out) {
        /* cast to an integer dtype: never tracked */
        if (tracked_out) {
            snprintf(m, sizeof m, "%s: an integer result is tracked", g_what);
            note_fail(s, m);
        } else {
            s->pass++;
        }
    } else if (ntr == 0) {
        s->na++;
    } else if (!tracked_out) {
        s->norule++;
        printf("NO RULE %s\n", g_what);
    } else if (strcmp(e->name, "cast") == 0 && wk_tensor_dtype(y) != WK_F64) {
        check_cast_float(g_what, &c, in, nin, y, s);
    } else {
        gc_opts o = {0};
        if (dt == WK_F64) {
            o.eps = 1e-6;
            o.rtol = 1e-5;
            o.atol = 1e-6 + 1e-8 * S; /* rounding of L, amplified by 1/eps */
        } else {
            /* f32: only linear selections (exact up to the rounding of L) */
            o.eps = 1e-2;
            o.rtol = 1e-4;
            o.atol = 1e-4 + 1e-5 * S;
        }
        /* a failure here fails this entry's cmocka test; the teardown's
         * table names g_what */
        copy_trunc(s->first_fail, sizeof s->first_fail, g_what);
        s->fail++;
        gc_check(g_what, call_entry, &c, in, nin, &o);
        s->fail--;
        s->first_fail[0] = 0;
        s->pass++;
    }
    wk_scope_end();
    wk_clear_error();
}

/* The cases of a GRAD 1 entry: our own where k_fd_cases has them. */
static const char *fd_cases(const ot_entry *e) {
    for (size_t i = 0; i < sizeof k_fd_cases / sizeof k_fd_cases[0]; i++)
        if (strcmp(k_fd_cases[i].name, e->name) == 0) return k_fd_cases[i].cases;
    return e->bk[0] ? e->bk : oc_default_bk(e->kind);
}

/* f64 where declared; else f32 (the linear selections); else none. */
static bool fd_dtype(const ot_entry *e, wk_dtype *dt) {
    unsigned dm = ot_dtype_mask(e);
    if (dm & (1u << WK_F64)) *dt = WK_F64;
    else if (dm & (1u << WK_F32)) *dt = WK_F32;
    else return false;
    return true;
}

static void each_case(const char *cases, void (*fn)(const char *one, void *arg), void *arg) {
    const char *p = cases;
    while (*p) {
        const char *sep = strstr(p, " / ");
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)len, p);
        fn(one, arg);
        p += len + (sep ? 3 : 0);
    }
}

typedef struct run_arg {
    const ot_entry *e;
    wk_dtype dt;
    int lay;
    op_stat *s;
} run_arg;

static void fd_one(const char *one, void *arg) {
    run_arg *a = arg;
    fd_case(a->e, a->dt, a->lay, one, a->s);
}

/* ---- GRAD 0 ---- */

static void zero_case(const ot_entry *e, wk_dtype dt, int lay, const char *bkcase, op_stat *s) {
    char buf[1024], m[2000];
    oc_spec sp[OC_MAX_IN];
    const char *params, *bad_tok = "";
    int nin = oc_parse_case(bkcase, buf, sizeof buf, sp, &params, &bad_tok);
    int li = 0;
    while (!(lay & (1 << li))) li++;
    snprintf(g_what, sizeof g_what, "%s %s layout %s [%s|%s]", e->name, wk_dtype_name(dt), ot_layout_name(li), buf,
             params);
    if (nin < 0) {
        snprintf(m, sizeof m, "%s: bad case input '%s'", g_what, bad_tok);
        note_fail(s, m);
        return;
    }
    if (nin == 0) { /* creation: nothing to track; the result must not be */
        if (lay != OT_C) return;
        wk_scope_begin();
        fd_ctx c = {.e = e, .params = params, .dt = dt};
        wk_tensor *y = call_entry(NULL, 0, &c);
        if (y && wk_is_tracked(y)) {
            snprintf(m, sizeof m, "%s: a created tensor is tracked", g_what);
            note_fail(s, m);
        } else if (y) {
            s->pass++;
        } else {
            s->na++;
        }
        wk_scope_end();
        wk_clear_error();
        return;
    }
    wk_scope_begin();
    wk_tensor *in[OC_MAX_IN];
    for (int i = 0; i < nin; i++)
        if (!oc_make_input(&sp[i], i, lay, sp[0].shape, sp[0].rank, dt, e->dom, NULL, NULL, &in[i], NULL)) {
            s->na++;
            wk_scope_end();
            return;
        }
    fd_ctx c = {.e = e, .params = params, .dt = dt};
    wk_clear_error();
    wk_tensor *y0 = call_entry(in, nin, &c);
    if (!y0) {
        s->na++;
        wk_clear_error();
        wk_scope_end();
        return;
    }
    bool inplace = IN_LIST(k_inplace_ops, e->name);
    bool track[OC_MAX_IN] = {false};
    for (int i = 0; i < nin; i++) {
        track[i] = is_tracked_input(in[i]);
        if (track[i]) TU_STATUS_OK(wk_requires_grad(in[i], true));
    }
    wk_clear_error();
    wk_tensor *y = call_entry(in, nin, &c);
    wk_status st = wk_last_status();
    bool tracked_out = y && wk_is_tracked(y);
    for (int i = 0; i < nin; i++)
        if (track[i]) wk_requires_grad(in[i], false);
    if (inplace) {
        /* a tracked leaf destination: refused, as PyTorch refuses it */
        if (y || st != WK_ERR_ARG) {
            snprintf(m, sizeof m, "%s: an in-place write into a tracked leaf was %s", g_what,
                     y ? "allowed" : wk_status_name(st));
            note_fail(s, m);
        } else {
            s->pass++;
        }
    } else if (!y) {
        snprintf(m, sizeof m, "%s: fails with tracked inputs (untracked it works): %s", g_what, wk_last_error());
        note_fail(s, m);
    } else if (!tracked_out) {
        s->pass++; /* untracked: no gradient, as PyTorch's integer results */
    } else if (!wk_dtype_is_float(wk_tensor_dtype(y))) {
        snprintf(m, sizeof m, "%s: an integer result is tracked", g_what);
        note_fail(s, m);
    } else if (IN_LIST(k_zero_ops, e->name)) {
        wk_tensor *g[OC_MAX_IN] = {0};
        if (gc_grads(call_entry, &c, in, nin, track, 1234, g) != WK_OK) {
            snprintf(m, sizeof m, "%s: backward failed: %s", g_what, wk_last_error());
            note_fail(s, m);
        } else {
            bool zero = true;
            for (int i = 0; i < nin; i++)
                if (g[i]) {
                    wk_tensor *z = TU_OK(wk_zeros_like(g[i]));
                    zero = zero && tu_max_abs_diff(g[i], z) == 0;
                }
            if (!zero) {
                snprintf(m, sizeof m, "%s: a non-zero gradient (the op is piecewise constant)", g_what);
                note_fail(s, m);
            } else {
                s->pass++;
            }
        }
        for (int i = 0; i < nin; i++) wk_tensor_free(g[i]);
    } else {
        /* tracked, differentiable, but not by differences (scatter's
         * repeated ids): the PyTorch comparison checks it */
        s->na++;
        snprintf(s->note, sizeof s->note, "tracked; repeated ids: torch comparison only");
    }
    wk_scope_end();
    wk_clear_error();
}

static void zero_one(const char *one, void *arg) {
    run_arg *a = arg;
    zero_case(a->e, a->dt, a->lay, one, a->s);
}

static void test_entry(void **state) {
    const ot_entry *e = *state;
    op_stat *s = &g_stat[e - ot_table];
    s->ran = true;
    wk_dtype dt;
    if (!fd_dtype(e, &dt)) {
        /* GRAD 0 on integers only: nothing float to track */
        snprintf(s->note, sizeof s->note, "no float dtype");
        return;
    }
    int lm = ot_layout_mask(e);
    assert_true(lm > 0);
    const char *cases = e->grad ? fd_cases(e) : (e->bk[0] ? e->bk : oc_default_bk(e->kind));
    if (!cases[0]) {
        note_fail(s, "no cases");
        fail_msg("%s: no cases", e->name);
    }
    for (int l = 0; l < OT_NLAYOUTS; l++) {
        if (!(lm & (1 << l))) continue;
        run_arg a = {e, dt, 1 << l, s};
        each_case(cases, e->grad ? fd_one : zero_one, &a);
    }
    if (s->fail) fail_msg("%s: %d gradient checks failed (FAIL lines above)", e->name, s->fail);
    if (s->norule && g_require_all)
        fail_msg("%s: no backward rule (the result is untracked) and WICK_GRAD_REQUIRE_ALL=1", e->name);
    if (e->grad && s->pass + s->norule == 0)
        fail_msg("%s: marked GRAD 1 but no case could be checked (%d n/a, %d over the budget)", e->name, s->na,
                 s->big);
}

static int summary(void **state) {
    (void)state;
    int pass = 0, norule = 0, fail = 0, ops_norule = 0, ops_fail = 0, ops_ok = 0;
    printf("\ngrad_table: per-op summary (checks: passed / NO RULE / FAILED / n-a / over budget)\n");
    printf("  %-28s %4s %6s %7s %6s %4s %4s  %s\n", "op", "GRAD", "status", "passed", "norule", "fail", "n/a",
           "note");
    for (int k = 0; k < ot_count; k++) {
        const op_stat *s = &g_stat[k];
        if (!s->ran) continue;
        const char *status = s->fail ? "FAIL" : s->norule ? "NORULE" : s->pass ? "ok" : "-";
        printf("  %-28s %4d %6s %7d %6d %4d %4d  %s%s%s\n", ot_table[k].name, ot_table[k].grad, status, s->pass,
               s->norule, s->fail, s->na + s->big, s->note, s->first_fail[0] ? " first failure: " : "",
               s->first_fail);
        pass += s->pass;
        norule += s->norule;
        fail += s->fail;
        ops_fail += s->fail > 0;
        ops_norule += !s->fail && s->norule > 0;
        ops_ok += !s->fail && !s->norule && s->pass > 0;
    }
    printf("grad_table: %d checks passed, %d NO RULE, %d failed; ops: %d ok, %d without a rule, %d failing%s\n", pass,
           norule, fail, ops_ok, ops_norule, ops_fail,
           g_require_all ? "" : " (NO RULE does not fail: WICK_GRAD_REQUIRE_ALL=1 makes it)");
    return 0;
}

int main(void) {
    const char *req = getenv("WICK_GRAD_REQUIRE_ALL");
    g_require_all = GRAD_REQUIRE_ALL_DEFAULT || (req && req[0] == '1');
    assert_true(ot_count <= (int)(sizeof g_stat / sizeof g_stat[0]));
    const char *only = getenv("WICK_GRAD_ONLY"); /* one op by name, for debugging */
    struct CMUnitTest *tests = calloc((size_t)ot_count, sizeof *tests);
    if (!tests) return 1;
    size_t n = 0;
    for (int k = 0; k < ot_count; k++) {
        if (only && *only && strcmp(only, ot_table[k].name) != 0) continue;
        tests[n].name = ot_table[k].name;
        tests[n].test_func = test_entry;
        tests[n].initial_state = (void *)&ot_table[k];
        n++;
    }
    int rc = _cmocka_run_group_tests("grad_table", tests, n, NULL, summary);
    free(tests);
    return rc;
}
