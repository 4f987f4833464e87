/* Oracle suite for pooling and resampling: every case of
 * $WICK_ORACLE_DIR/pool/manifest.txt (written by tests/oracle/gen_pool.py
 * from PyTorch 1.13) is run through the op table (tests/oracle/op_table.def:
 * ot_find / ot_run) and compared with torch's answer, once with 1 thread and
 * once with 2 (the results must be identical). The manifest format is
 * described at the top of gen_pool.py.
 *
 * Every failing case prints its id, max error and the first mismatching
 * index; the run ends with "oracle_pool: N cases, M failed".
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
 * with why set when the op is not in the table or the case does not fit it. */
static wk_tensor *run_op(const char *op, const char *params, wk_tensor *x, char *why, size_t cap) {
    const ot_entry *e = ot_find(op);
    if (!e) {
        snprintf(why, cap, "op '%s' is not in tests/oracle/op_table.def", op);
        return NULL;
    }
    wk_tensor *in[1] = {x};
    ot_ctx c = {.in = in, .nin = 1, .params = params, .dt = wk_tensor_dtype(x), .dev = ou_device()};
    wk_tensor *r = ot_run(e, &c);
    if (c.bad) snprintf(why, cap, "%s", c.why);
    return r;
}

/* Compare got with the expected file; returns true if it matches. */
static bool compare(const char *id, const wk_tensor *got, const char *expfile, wk_dtype dt, double atol,
                    double rtol) {
    wk_tensor *want = ou_load(g_dir, expfile);
    if (!want) {
        printf("FAIL %s: cannot load %s: %s\n", id, expfile, wk_last_error());
        return false;
    }
    if (wk_tensor_dtype(got) != dt) {
        printf("FAIL %s: result dtype %s\n", id, wk_dtype_name(wk_tensor_dtype(got)));
        return false;
    }
    int r = wk_rank(got);
    if (r != wk_rank(want) || memcmp(wk_shape(got), wk_shape(want), sizeof(int64_t) * (size_t)r) != 0) {
        printf("FAIL %s: result shape differs from expected\n", id);
        return false;
    }
    int64_t n = wk_numel(got);
    if (n == 0) return true;
    bool ok = true;
    if (wk_dtype_is_int(dt)) {
        /* exact: read both as raw bytes of the dtype */
        size_t sz = wk_dtype_size(dt) * (size_t)n;
        unsigned char *a = malloc(sz), *b = malloc(sz);
        if (!a || !b || wk_to_host(got, a, sz) != WK_OK || wk_to_host(want, b, sz) != WK_OK) ok = false;
        else if (memcmp(a, b, sz) != 0) {
            size_t es = wk_dtype_size(dt);
            for (int64_t i = 0; i < n; i++)
                if (memcmp(a + (size_t)i * es, b + (size_t)i * es, es) != 0) {
                    printf("FAIL %s: first mismatch at flat index %lld\n", id, (long long)i);
                    break;
                }
            ok = false;
        }
        free(a);
        free(b);
        return ok;
    }
    double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    if (!a || !b || wk_to_host_f64(got, a, (size_t)n) != WK_OK || wk_to_host_f64(want, b, (size_t)n) != WK_OK) {
        printf("FAIL %s: readback failed\n", id);
        free(a);
        free(b);
        return false;
    }
    double maxerr = 0;
    int64_t first = -1;
    for (int64_t i = 0; i < n; i++) {
        bool good = ou_close(a[i], b[i], atol, rtol);
        if (isfinite(b[i]) && fabs(a[i] - b[i]) > maxerr) maxerr = fabs(a[i] - b[i]);
        if (!good && first < 0) first = i;
    }
    if (first >= 0) {
        printf("FAIL %s: max error %g, first mismatch at flat index %lld: got %.17g want %.17g\n", id, maxerr,
               (long long)first, a[first], b[first]);
        ok = false;
    }
    free(a);
    free(b);
    return ok;
}

static void run_line(char *line) {
    char id[256], op[64], dts[32], variant[64], params[256], input[512], exp[256];
    double atol, rtol;
    if (sscanf(line, "%255s %63s %31s %63s %255s %511s %255s %lf %lf", id, op, dts, variant, params, input, exp,
               &atol, &rtol) != 9) {
        printf("FAIL bad manifest line: %s", line);
        g_failed++;
        return;
    }
    g_total++;
    wk_dtype dt;
    if (!wk_dtype_from_name(dts, &dt)) {
        printf("FAIL %s: bad dtype\n", id);
        g_failed++;
        return;
    }
    wk_scope_begin();
    bool ok = false;
    char why[512];
    bool nc = false;
    wk_tensor *x = ou_load_input(g_dir, input, dt, &nc, why, sizeof why);
    if (!x) printf("FAIL %s: input %s: %s\n", id, input, why);
    else {
        if (strcmp(variant, "contig") != 0) g_noncontig++;
        wk_set_num_threads(1);
        char mwhy[200] = "";
        wk_tensor *r1 = run_op(op, params, x, mwhy, sizeof mwhy);
        wk_set_num_threads(2);
        wk_tensor *r2 = run_op(op, params, x, mwhy, sizeof mwhy);
        if (mwhy[0]) printf("FAIL %s: malformed case: %s\n", id, mwhy);
        else if (!r1 || !r2) printf("FAIL %s: op failed: %s\n", id, wk_last_error());
        else {
            ok = compare(id, r1, exp, dt, atol, rtol);
            if (ok && !ou_same_bits(r1, r2)) {
                printf("FAIL %s: 1-thread and 2-thread results differ\n", id);
                ok = false;
            }
        }
        if (ok) { /* the op table's coverage: this case's dtype and layouts */
            const char *specs[1] = {input};
            if (!ot_cover_case(id, ot_find(op), dt, specs, &x, 1, &r1, 1)) g_cover_problems++;
        }
    }
    wk_scope_end();
    wk_clear_error();
    if (!ok) g_failed++;
}

static void test_oracle_pool(void **state) {
    (void)state;
    ou_run_manifest("pool", "gen_pool", g_dir, sizeof g_dir, run_line);
    printf("oracle_pool: %d cases (%d non-contiguous), %d failed\n", g_total, g_noncontig, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

/* The manifest against the op table (after test_oracle_pool ran every case):
 * each case runs on a declared dtype, and every declared (op, dtype, layout)
 * of the entries whose oracle is gen_pool has a case. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle_pool", "gen_pool", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_pool), cmocka_unit_test(test_table_coverage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
