/* Oracle suite for the "more ops" section of wick.h (round_to, norm, dot,
 * mv, tril, triu, meshgrid, slice_assign(_), upsampling by a scale factor):
 * every case of $WICK_ORACLE_DIR/ops_extra/manifest.txt (written by
 * tests/oracle/gen_ops_extra.py from numpy and torch; the format is
 * described there) is run through the op table (tests/oracle/op_table.def:
 * ot_find / ot_run) and compared. Each case runs with 1 and with 2 threads
 * (inputs loaded afresh, since slice_assign_ writes into its input) and the
 * two results must be bit-identical. With WICK_ORACLE_DEVICE=cuda:0 the
 * inputs live on the GPU (ctest's oracle_cuda_ops_extra). Every failing case
 * prints its id and the first mismatch; the run ends with
 * "oracle_ops_extra: N cases, M failed". test_table_coverage then checks the
 * manifest against the table's declared dtypes and layouts for these ops. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IO 8

static char g_dir[4096];
static int g_total, g_failed;

/* Runs the case's op through the op table (tests/oracle/op_table.def): the
 * first result into out[0], any further ones (meshgrid) after it; *nout of
 * them, owned by the caller's scope. WK_ERR_INTERNAL (with why) when the op
 * is not in the table or the case does not fit it. */
static wk_status run_op(const char *op, wk_dtype dt, wk_tensor **in, int nin, const char *params, wk_tensor **out,
                        int *nout, char *why, size_t cap) {
    *nout = 0;
    const ot_entry *e = ot_find(op);
    if (!e) {
        snprintf(why, cap, "op '%s' is not in tests/oracle/op_table.def", op);
        return WK_ERR_INTERNAL;
    }
    ot_ctx x = {.in = in, .nin = nin, .params = strcmp(params, "-") == 0 ? "" : params, .dt = dt, .dev = ou_device()};
    wk_clear_error();
    out[0] = ot_run(e, &x);
    if (x.bad) {
        snprintf(why, cap, "%s: %s", op, x.why);
        return WK_ERR_INTERNAL;
    }
    if (!out[0]) return wk_last_status();
    *nout = 1 + x.nmore;
    for (int i = 0; i < x.nmore && i + 1 < MAX_IO; i++) out[i + 1] = x.more[i];
    return WK_OK;
}

/* got (of the case dtype) against the expected file; an error string or NULL. */
static const char *compare(const wk_tensor *got, const char *file, wk_dtype dt, double tol, char *msg, size_t cap) {
    if (wk_tensor_dtype(got) != dt) {
        snprintf(msg, cap, "result dtype %s, want %s", wk_dtype_name(wk_tensor_dtype(got)), wk_dtype_name(dt));
        return msg;
    }
    return ou_compare_file(got, g_dir, file, tol, false, msg, cap);
}

/* Loads the ','-joined input specs; false with why on failure. */
static bool load_inputs(char *specs, wk_dtype dt, wk_tensor **in, int *nin, char *why, size_t cap) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", specs);
    *nin = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*nin == MAX_IO) { snprintf(why, cap, "too many inputs"); return false; }
        bool nc = false;
        in[*nin] = ou_load_input(g_dir, tok, dt, &nc, why, cap);
        if (!in[*nin]) return false;
        (*nin)++;
    }
    return true;
}

static int g_cover_problems;

/* The op table's coverage bookkeeping for a case that must succeed (and
 * did): its layouts (ot_case_layouts) on its dtype, which must be declared. */
static void record_coverage(const char *id, const char *op, wk_dtype dt, const char *specs, wk_tensor **in, int nin,
                            wk_tensor **out, int nout) {
    const ot_entry *e = ot_find(op);
    char buf[2048];
    const char *sp[MAX_IO];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", specs);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && n < nin; tok = strtok_r(NULL, ",", &save))
        sp[n++] = tok;
    if (e && !ot_cover_case(id, e, dt, sp, in, n, out, nout)) g_cover_problems++;
}

static void run_case(char *line) {
    char *f[7];
    int nf = 0;
    for (char *save = NULL, *tok = strtok_r(line, " \n", &save); tok && nf < 7; tok = strtok_r(NULL, " \n", &save))
        f[nf++] = tok;
    if (nf != 7) return;
    const char *id = f[0], *op = f[1], *dts = f[2], *params = f[4], *exp = f[5];
    double tol = strtod(f[6], NULL);
    g_total++;
    char msg[768] = "";
    const char *err = NULL;
    wk_dtype dt;
    if (!wk_dtype_from_name(dts, &dt)) {
        snprintf(msg, sizeof msg, "unknown dtype %s", dts);
        err = msg;
        goto report;
    }
    wk_scope_begin();
    wk_tensor *in[MAX_IO], *o1[MAX_IO], *o2[MAX_IO];
    int nin, n1, n2;
    wk_set_num_threads(1);
    if (!load_inputs(f[3], dt, in, &nin, msg, sizeof msg)) { err = msg; goto done; }
    char why[256] = "";
    wk_status s1 = run_op(op, dt, in, nin, params, o1, &n1, why, sizeof why);
    if (why[0]) { snprintf(msg, sizeof msg, "malformed case: %s", why); err = msg; goto done; }
    if (exp[0] == '!') {
        wk_status want;
        if (!ou_status_from_name(exp + 1, &want)) snprintf(msg, sizeof msg, "bad status %s", exp + 1), err = msg;
        else if (s1 == WK_OK) snprintf(msg, sizeof msg, "succeeded, expected %s", exp + 1), err = msg;
        else if (s1 != want)
            snprintf(msg, sizeof msg, "failed with %s (%s), expected %s", wk_status_name(s1), wk_last_error(), exp + 1),
                err = msg;
        else if (!strstr(wk_last_error(), "wk_"))
            snprintf(msg, sizeof msg, "error message names no op: %s", wk_last_error()), err = msg;
        wk_clear_error();
        goto done;
    }
    if (s1 != WK_OK) { snprintf(msg, sizeof msg, "failed: %s", wk_last_error()); err = msg; goto done; }
    record_coverage(id, op, dt, f[3], in, nin, o1, n1);
    char ebuf[2048];
    snprintf(ebuf, sizeof ebuf, "%s", exp);
    int k = 0;
    for (char *save = NULL, *tok = strtok_r(ebuf, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save), k++) {
        if (k >= n1) { snprintf(msg, sizeof msg, "only %d outputs", n1); err = msg; break; }
        if ((err = compare(o1[k], tok, dt, tol, msg, sizeof msg)) != NULL) {
            size_t l = strlen(msg);
            snprintf(msg + l, sizeof msg - l, " (output %d)", k);
        }
    }
    if (!err && k != n1) { snprintf(msg, sizeof msg, "%d outputs, want %d", n1, k); err = msg; }
    if (err) goto done;
    wk_set_num_threads(2);
    wk_tensor *in2[MAX_IO];
    int nin2;
    if (!load_inputs(f[3], dt, in2, &nin2, msg, sizeof msg)) { err = msg; goto done; }
    if (run_op(op, dt, in2, nin2, params, o2, &n2, why, sizeof why) != WK_OK || n2 != n1) {
        snprintf(msg, sizeof msg, "2 threads failed: %s", wk_last_error());
        err = msg;
        goto done;
    }
    for (int i = 0; i < n1 && !err; i++)
        if (!ou_same_bits(o1[i], o2[i])) snprintf(msg, sizeof msg, "2 threads differ from 1 thread"), err = msg;
done:
    wk_set_num_threads(1);
    wk_scope_end();
report:
    if (err) {
        g_failed++;
        if (g_failed <= 40) fprintf(stderr, "FAIL %s (%s %s %s): %s\n", id, op, dts, params, err);
    }
}

static void test_oracle_ops_extra(void **state) {
    (void)state;
    ou_run_manifest("ops_extra", "gen_ops_extra", g_dir, sizeof g_dir, run_case);
    printf("oracle_ops_extra: %d cases, %d failed\n", g_total, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

/* The manifest against the op table (after test_oracle_ops_extra ran every
 * case): each case that must succeed runs on a declared dtype, and every
 * declared (op, dtype, layout) of the entries whose oracle is gen_ops_extra
 * has such a case. A dtype or layout added to the table without an oracle
 * case fails here. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle_ops_extra", "gen_ops_extra", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_ops_extra), cmocka_unit_test(test_table_coverage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
