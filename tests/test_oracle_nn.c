/* Oracle suite for the fused nn ops (include/wick/nn.h): every case of
 * $WICK_ORACLE_DIR/nn/manifest.txt (written by tests/oracle/gen_nn.py from
 * torch in float64; the format is described there) runs through the public
 * API on the oracle device (the CPU's fused entries, or the composites on a
 * backend without them, e.g. CUDA) through the op table
 * (tests/oracle/op_table.def: ot_find / ot_run) and is compared. Each case runs with 1
 * and 2 threads; the results must be bit-identical. Failing cases print
 * their id and first mismatch; the run ends "oracle_nn: N cases, M failed".
 * Every case that must succeed also runs at each lower SIMD level the CPU
 * has (vmath's level, which picks the GEMM and vector kernels the fused
 * entries use) and once through the composites (the oracle device's backend
 * table swapped for a copy without the fused entries), each against the
 * oracle. wk_attention, wk_rope_thd and wk_swiglu are not op-table entries:
 * local_ops below runs them. test_table_coverage then checks the manifest
 * against the table's declared dtypes and layouts for the table's ops. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"
#include "tensor/tensor.h"
#include "cpu/vmath/vmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[4096];
static char g_ebuf[1024]; /* a failure message that quotes msg */
static int g_total, g_failed, g_noncontig, g_cover_problems, g_composite, g_levels;

/* ---- the fused ops that are not op-table entries ---- */
/* win= / cap= are optional (most attention cases predate them): 0, off */
static long long opt_pi(ot_ctx *x, const char *key) {
    char b[64];
    return ou_param(x->params, key, b, sizeof b) ? ot_pi(x, key) : 0;
}
static double opt_pf(ot_ctx *x, const char *key) {
    char b[64];
    return ou_param(x->params, key, b, sizeof b) ? ot_pf(x, key) : 0;
}
static wk_tensor *call_attention(ot_ctx *x) {
    wk_attention_opts o = {.mask = ot_opt(x, 3),
                           .scale = ot_pf(x, "scale"),
                           .causal = ot_pi(x, "causal") != 0,
                           .q_offset = ot_pi(x, "off"),
                           .window = opt_pi(x, "win"),
                           .softcap = opt_pf(x, "cap")};
    return wk_attention(ot_in(x, 0), ot_in(x, 1), ot_in(x, 2), &o);
}
static wk_tensor *call_rope_thd(ot_ctx *x) {
    return wk_rope_thd(ot_in(x, 0), ot_in(x, 1), ot_in(x, 2), ot_pi(x, "inter") != 0);
}
static wk_tensor *call_swiglu(ot_ctx *x) { return wk_swiglu(ot_in(x, 0)); }
static const ot_entry local_ops[] = {
    {.id = "ATTENTION", .name = "attention", .call = call_attention},
    {.id = "ROPE_THD", .name = "rope_thd", .call = call_rope_thd},
    {.id = "SWIGLU", .name = "swiglu", .call = call_swiglu},
};
static const ot_entry *find_op(const char *name, bool *local) {
    *local = false;
    for (size_t i = 0; i < sizeof local_ops / sizeof local_ops[0]; i++)
        if (strcmp(local_ops[i].name, name) == 0) {
            *local = true;
            return &local_ops[i];
        }
    return ot_find(name);
}

/* Runs op through the op table (tests/oracle/op_table.def); NULL on failure,
 * with why set when the op is not in the table or the case does not fit it.
 * An absent optional input ('-') is a NULL entry of in. */
static wk_tensor *run_op(const ot_entry *e, wk_tensor *const *in, int nin, const char *params, wk_dtype dt, char *why,
                         size_t cap) {
    if (!e) {
        snprintf(why, cap, "op is not in tests/oracle/op_table.def");
        return NULL;
    }
    ot_ctx c = {.in = in, .nin = nin, .params = params, .dt = dt, .dev = ou_device()};
    wk_tensor *r = ot_run(e, &c);
    if (c.bad) snprintf(why, cap, "%s", c.why);
    return r;
}

static void run_case(char *line) {
    char *f[7];
    int nf = 0;
    for (char *tok = strtok(line, " \n"); tok && nf < 7; tok = strtok(NULL, " \n")) f[nf++] = tok;
    if (nf != 7) return;
    const char *id = f[0], *op = f[1], *dts = f[2], *params = f[3], *expected = f[5];
    double tol = strtod(f[6], NULL);
    g_total++;
    char msg[512], why[256], mwhy[200] = "";
    const char *err = NULL;
    const char *specs[4] = {NULL, NULL, NULL, NULL};
    bool local;
    const ot_entry *e = find_op(op, &local);
    wk_dtype dt;
    wk_tensor *in[4] = {NULL, NULL, NULL, NULL};
    wk_scope_begin(); /* the loaded inputs and their views */
    if (!wk_dtype_from_name(dts, &dt)) {
        snprintf(msg, sizeof msg, "unknown dtype %s", dts);
        err = msg;
        goto report;
    }
    int nin = 0;
    bool noncontig = false;
    for (char *spec = strtok(f[4], ","); spec && nin < 4; spec = strtok(NULL, ","), nin++) {
        specs[nin] = spec;
        if (strcmp(spec, "-") == 0) continue;
        in[nin] = ou_load_input(g_dir, spec, dt, &noncontig, why, sizeof why);
        if (!in[nin]) {
            snprintf(msg, sizeof msg, "input %d: %s", nin, why);
            err = msg;
            goto report;
        }
    }
    g_noncontig += noncontig;
    wk_set_num_threads(1);
    wk_tensor *r1 = run_op(e, in, nin, params, dt, mwhy, sizeof mwhy);
    if (mwhy[0]) {
        snprintf(msg, sizeof msg, "malformed case: %s", mwhy);
        err = msg;
        goto report;
    }
    if (expected[0] == '!') {
        wk_status want;
        if (!ou_status_from_name(expected + 1, &want)) {
            snprintf(msg, sizeof msg, "bad status %s", expected + 1);
            err = msg;
        } else if (r1) {
            snprintf(msg, sizeof msg, "succeeded, expected %s", expected + 1);
            err = msg;
        } else if (wk_last_status() != want) {
            snprintf(msg, sizeof msg, "failed with %s (%s), expected %s", wk_status_name(wk_last_status()),
                     wk_last_error(), expected + 1);
            err = msg;
        }
        wk_clear_error();
        goto report;
    }
    if (!r1) {
        snprintf(msg, sizeof msg, "failed: %s", wk_last_error());
        err = msg;
        goto report;
    }
    if (wk_tensor_dtype(r1) != dt || wk_tensor_device(r1) != ou_device()) {
        snprintf(msg, sizeof msg, "result dtype %s on %s", wk_dtype_name(wk_tensor_dtype(r1)),
                 wk_device_name(wk_tensor_device(r1)));
        err = msg;
        goto report;
    }
    err = ou_compare_file(r1, g_dir, expected, tol, false, msg, sizeof msg);
    if (!err) {
        wk_set_num_threads(2);
        wk_tensor *r2 = run_op(e, in, nin, params, dt, mwhy, sizeof mwhy);
        wk_set_num_threads(1);
        if (!ou_same_bits(r1, r2)) {
            snprintf(msg, sizeof msg, "2 threads differ from 1 thread");
            err = msg;
        }
    }
    if (!err && wk_device_kind_of(ou_device()) == WK_DEVICE_CPU) {
        /* the lower SIMD levels this CPU has */
        int top = wk__vmath_level();
        for (int lv = top - 1; lv >= 0 && !err; lv--) {
            if (wk__vmath_set_level(lv) != 0) continue;
            wk_tensor *rl = run_op(e, in, nin, params, dt, mwhy, sizeof mwhy);
            const char *le = rl ? ou_compare_file(rl, g_dir, expected, tol, false, msg, sizeof msg) : wk_last_error();
            if (le) {
                snprintf(g_ebuf, sizeof g_ebuf, "at SIMD level %d: %s", lv, le);
                err = g_ebuf;
            }
            g_levels++;
        }
        wk__vmath_set_level(-1);
    }
    if (!err) {
        /* the composites: the same backend without its fused entries */
        wk_device *dev = ou_device();
        const wk_backend *saved = dev->be;
        wk_backend plain = *saved;
        plain.softmax = NULL;
        plain.log_softmax = NULL;
        plain.rms_norm = NULL;
        plain.layer_norm = NULL;
        plain.rope = NULL;
        plain.swiglu = NULL;
        plain.attention = NULL;
        dev->be = &plain;
        wk_tensor *rc = run_op(e, in, nin, params, dt, mwhy, sizeof mwhy);
        dev->be = saved;
        const char *ce = rc ? ou_compare_file(rc, g_dir, expected, tol, false, msg, sizeof msg) : wk_last_error();
        if (ce) {
            snprintf(g_ebuf, sizeof g_ebuf, "composite: %s", ce);
            err = g_ebuf;
        }
        g_composite++;
    }
    if (!err && !local) { /* the op table's coverage: this case's dtype and the layouts of its present inputs */
        const char *cs[4];
        wk_tensor *ci[4];
        int nc = 0;
        for (int i = 0; i < nin; i++)
            if (in[i]) {
                cs[nc] = specs[i];
                ci[nc++] = in[i];
            }
        if (!ot_cover_case(id, e, dt, cs, ci, nc, &r1, 1)) g_cover_problems++;
    }
report:
    wk_scope_end();
    if (err) {
        g_failed++;
        if (g_failed <= 40) fprintf(stderr, "FAIL %s (%s %s %s): %s\n", id, op, dts, params, err);
    }
}

static void test_oracle_nn(void **state) {
    (void)state;
    ou_run_manifest("nn", "gen_nn", g_dir, sizeof g_dir, run_case);
    printf("oracle_nn: %d cases (%d with non-contiguous inputs) on %s, %d failed; %d also at lower SIMD levels, "
           "%d through the composites\n",
           g_total, g_noncontig, wk_device_name(ou_device()), g_failed, g_levels, g_composite);
    assert_true(g_total > 1000);
    assert_true(g_noncontig > 100);
    assert_int_equal(g_failed, 0);
}

/* The manifest against the op table (after test_oracle_nn ran every case):
 * each case that must succeed runs on a declared dtype, and every declared
 * (op, dtype, layout) of the entries whose oracle is gen_nn has a case. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle_nn", "gen_nn", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_nn), cmocka_unit_test(test_table_coverage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
