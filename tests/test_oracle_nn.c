/* Oracle suite for the fused nn ops (include/wick/nn.h): every case of
 * $WICK_ORACLE_DIR/nn/manifest.txt (written by tests/oracle/gen_nn.py from
 * torch in float64; the format is described there) runs through the public
 * API on the oracle device (the CPU's fused entries, or the composites on a
 * backend without them, e.g. CUDA) through the op table
 * (tests/oracle/op_table.def: ot_find / ot_run) and is compared. Each case runs with 1
 * and 2 threads; the results must be bit-identical. Failing cases print
 * their id and first mismatch; the run ends "oracle_nn: N cases, M failed".
 * test_table_coverage then checks the manifest against the table's declared
 * dtypes and layouts for these ops. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[4096];
static int g_total, g_failed, g_noncontig, g_cover_problems;

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
    const ot_entry *e = ot_find(op);
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
    if (!err) { /* the op table's coverage: this case's dtype and the layouts of its present inputs */
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
    printf("oracle_nn: %d cases (%d with non-contiguous inputs) on %s, %d failed\n", g_total, g_noncontig,
           wk_device_name(ou_device()), g_failed);
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
