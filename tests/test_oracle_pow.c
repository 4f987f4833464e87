/* Oracle suite for the binary op pow: every case of
 * $WICK_ORACLE_DIR/pow/manifest.txt (written by tests/oracle/gen_pow.py from
 * numpy; the format is described there) runs the op table's binary.pow
 * (tests/oracle/op_table.def: ot_find / ot_run, i.e. wk_pow(a, b)) and is
 * compared with numpy's answer. Each case also runs with 2 threads, and as
 * wk_binary(a, b, WK_POW): both must give the same bits. Every failing case
 * prints its id and the first mismatch; the run ends with
 * "oracle_pow: N cases, M failed". test_table_coverage then checks the
 * manifest against the table's declared dtypes and layouts for pow. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[4096];
static int g_total, g_failed, g_cover_problems;

/* binary.pow through the op table; NULL on failure, with why set when the
 * op is not in the table or the case does not fit it. */
static wk_tensor *run_pow(wk_tensor *a, wk_tensor *b, wk_dtype dt, char *why, size_t cap) {
    const ot_entry *e = ot_find("binary.pow");
    if (!e) {
        snprintf(why, cap, "op 'binary.pow' is not in tests/oracle/op_table.def");
        return NULL;
    }
    wk_tensor *in[2] = {a, b};
    ot_ctx c = {.in = in, .nin = 2, .params = "", .dt = dt, .dev = ou_device()};
    wk_tensor *r = ot_run(e, &c);
    if (c.bad) snprintf(why, cap, "%s", c.why);
    return r;
}

/* A kernel on an asynchronous device (CUDA) reports a data-dependent error
 * (a negative integer exponent) when the stream is next waited for, as
 * integer division by zero: the call returns a tensor and the readback
 * fails. True when t really succeeded; else the error is the last status. */
static bool really_succeeded(const wk_tensor *t) {
    int64_t n = wk_numel(t);
    double *buf = malloc(sizeof(double) * (size_t)(n + 1));
    bool ok = buf && wk_to_host_f64(t, buf, (size_t)n) == WK_OK;
    free(buf);
    return ok;
}

/* One manifest line; inputs live in a scope (ou_load_input's contract). */
static void run_case(char *line) {
    char *f[6];
    int nf = 0;
    for (char *tok = strtok(line, " \n"); tok && nf < 6; tok = strtok(NULL, " \n")) f[nf++] = tok;
    if (nf != 6) return;
    const char *id = f[0], *dts = f[1], *as = f[2], *bs = f[3], *want = f[4];
    double tol = strtod(f[5], NULL);
    g_total++;
    char msg[512], why[256], mwhy[200] = "";
    const char *err = NULL;
    wk_dtype dt;
    bool noncontig = false;
    wk_scope_begin();
    wk_tensor *a = NULL, *b = NULL, *r1 = NULL, *r2 = NULL, *r3 = NULL;
    if (!wk_dtype_from_name(dts, &dt)) {
        snprintf(msg, sizeof msg, "unknown dtype %s", dts);
        err = msg;
        goto report;
    }
    a = ou_load_input(g_dir, as, dt, &noncontig, why, sizeof why);
    b = a ? ou_load_input(g_dir, bs, dt, &noncontig, why, sizeof why) : NULL;
    if (!a || !b) { snprintf(msg, sizeof msg, "input setup failed: %s", why); err = msg; goto report; }
    wk_set_num_threads(1);
    r1 = run_pow(a, b, dt, mwhy, sizeof mwhy);
    if (mwhy[0]) { snprintf(msg, sizeof msg, "malformed case: %s", mwhy); err = msg; goto report; }
    if (want[0] == '!') {
        wk_status st;
        if (!ou_status_from_name(want + 1, &st)) {
            snprintf(msg, sizeof msg, "bad expected status %s", want);
            err = msg;
        } else if (r1 && really_succeeded(r1)) {
            snprintf(msg, sizeof msg, "succeeded, expected %s", want + 1);
            err = msg;
        } else if (wk_last_status() != st) {
            snprintf(msg, sizeof msg, "failed with %s (%s), expected %s", wk_status_name(wk_last_status()),
                     wk_last_error(), want + 1);
            err = msg;
        }
        wk_clear_error();
        goto report;
    }
    if (!r1) { snprintf(msg, sizeof msg, "failed: %s", wk_last_error()); err = msg; goto report; }
    if (wk_tensor_dtype(r1) != dt) {
        snprintf(msg, sizeof msg, "result dtype %s", wk_dtype_name(wk_tensor_dtype(r1)));
        err = msg;
        goto report;
    }
    err = ou_compare_file(r1, g_dir, want, tol, wk_dtype_is_int(dt), msg, sizeof msg);
    if (err) goto report;
    wk_set_num_threads(2);
    r2 = run_pow(a, b, dt, mwhy, sizeof mwhy);
    wk_set_num_threads(1);
    r3 = wk_binary(a, b, WK_POW);
    if (!ou_same_bits(r1, r2)) { snprintf(msg, sizeof msg, "2 threads differ from 1 thread"); err = msg; }
    else if (!ou_same_bits(r1, r3)) { snprintf(msg, sizeof msg, "wk_binary(WK_POW) differs from wk_pow"); err = msg; }
    else { /* the op table's coverage: this case's dtype and layouts */
        const char *specs[2] = {as, bs};
        wk_tensor *ins[2] = {a, b};
        if (!ot_cover_case(id, ot_find("binary.pow"), dt, specs, ins, 2, &r1, 1)) g_cover_problems++;
    }
report:
    wk_scope_end();
    if (err) {
        g_failed++;
        if (g_failed <= 40) fprintf(stderr, "FAIL %s (%s %s %s%s): %s\n", id, dts, as, bs, noncontig ? " noncontig" : "", err);
    }
}

static void test_oracle_pow(void **state) {
    (void)state;
    ou_run_manifest("pow", "gen_pow", g_dir, sizeof g_dir, run_case);
    printf("oracle_pow: %d cases, %d failed\n", g_total, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

/* Not from the manifest: the op list's pieces for pow are there. */
static void test_pow_list(void **state) {
    (void)state;
    assert_string_equal(wk_binary_name(WK_POW), "pow");
    assert_int_equal(WK_POW, WK_BINARY_COUNT - 1); /* appended: the older values keep their numbers */
    assert_int_equal(WK_MINIMUM, 5);
    /* NULL propagates, and the error names the op */
    wk_clear_error();
    assert_null(wk_pow(NULL, NULL));
    /* a scalar exponent through wk_binary_scalar */
    wk_scope_begin();
    float xs[4] = {-2.0f, 0.5f, 3.0f, -0.0f};
    wk_tensor *x = wk_from_host(xs, sizeof xs, (int64_t[]){4}, 1, WK_F32, ou_device());
    wk_tensor *y = wk_binary_scalar(x, 3.0, WK_POW);
    assert_non_null(y);
    float ys[4];
    assert_int_equal(wk_to_host(y, ys, sizeof ys), WK_OK);
    assert_true(ys[0] == -8.0f && ys[1] == 0.125f && ys[2] == 27.0f && ys[3] == 0.0f && signbit(ys[3]));
    /* integer negative exponent: WK_ERR_ARG naming pow */
    int32_t is[3] = {2, 3, 4}, es[3] = {1, -2, 0};
    wk_tensor *i = wk_from_host(is, sizeof is, (int64_t[]){3}, 1, WK_I32, ou_device());
    wk_tensor *e = wk_from_host(es, sizeof es, (int64_t[]){3}, 1, WK_I32, ou_device());
    wk_tensor *p = wk_pow(i, e);
    if (p) assert_false(really_succeeded(p)); /* an asynchronous device: at the readback */
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    if (!p) assert_non_null(strstr(wk_last_error(), "pow"));
    wk_clear_error();
    wk_scope_end();
}

/* The manifest against the op table (after test_oracle_pow ran every case):
 * each case that must succeed runs on a declared dtype, and every declared
 * (op, dtype, layout) of the entries whose oracle is gen_pow has a case. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle_pow", "gen_pow", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_pow), cmocka_unit_test(test_table_coverage),
                                       cmocka_unit_test(test_pow_list)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
