/* Oracle suite for scans and order: every case of
 * $WICK_ORACLE_DIR/scan/manifest.txt (written by tests/oracle/gen_scan.py
 * from numpy and torch; the format is described there) is run through the
 * op table (tests/oracle/op_table.def: ot_find / ot_run) and compared. Each
 * case runs with 1 and with 2 threads and the two results must be
 * bit-identical. Every failing case prints its id and the first mismatch;
 * the run ends with "oracle_scan: N cases, M failed". test_table_coverage
 * then checks the manifest against the table's declared dtypes and layouts
 * for these ops. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[4096];
static int g_total, g_failed, g_cover_problems;

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int parse_shape(const char *s, int64_t *shape) {
    int n = 0;
    while (*s && n < WK_MAX_RANK) {
        shape[n++] = strtoll(s, (char **)&s, 10);
        if (*s == 'x') s++;
    }
    return n;
}

/* Apply a '+'-joined view chain (new reference; consumes t). */
static wk_tensor *apply_view(wk_tensor *t, const char *view) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", view);
    for (char *tok = strtok(buf, "+"); tok && t; tok = strtok(NULL, "+")) {
        wk_tensor *r = NULL;
        if (strcmp(tok, "c") == 0) continue;
        if (strcmp(tok, "t") == 0) r = wk_transpose(t, 0, 1);
        else if (tok[0] == 'n') {
            int d;
            long long s, l;
            if (sscanf(tok + 1, "%d:%lld:%lld", &d, &s, &l) == 3) r = wk_narrow(t, d, s, l);
        } else if (tok[0] == 'b') {
            int64_t shape[WK_MAX_RANK];
            int rank = parse_shape(tok + 1, shape);
            r = wk_broadcast_as(t, shape, rank);
        }
        wk_tensor_free(t);
        t = r;
    }
    return t;
}

typedef struct {
    wk_tensor *v, *i;
    wk_status st;
    char why[200]; /* set when the case does not fit the op table */
} result;

/* Runs op through the op table (tests/oracle/op_table.def). The first
 * result is the values (the indices, when the case expects indices only:
 * argsort); sort / topk give their indices second. */
static result run_op(const char *op, wk_tensor *x, const char *params, bool indices_only) {
    result r = {NULL, NULL, WK_OK, ""};
    const ot_entry *e = ot_find(op);
    if (!e) {
        snprintf(r.why, sizeof r.why, "op '%s' is not in tests/oracle/op_table.def", op);
        r.st = WK_ERR_INTERNAL;
        return r;
    }
    wk_tensor *in[1] = {x};
    ot_ctx c = {.in = in, .nin = 1, .params = strcmp(params, "-") == 0 ? "" : params, .dt = wk_tensor_dtype(x),
                .dev = ou_device()};
    wk_clear_error();
    wk_tensor *first = ot_run(e, &c);
    if (c.bad) {
        snprintf(r.why, sizeof r.why, "%s: %s", op, c.why);
        r.st = WK_ERR_INTERNAL;
        return r;
    }
    if (!first) {
        r.st = wk_last_status();
        return r;
    }
    if (indices_only) r.i = first;
    else r.v = first;
    if (c.nmore && !r.i) r.i = c.more[0];
    else if (c.nmore) wk_tensor_free(c.more[0]);
    return r;
}

static void run_case(char *line) {
    char *f[9];
    int nf = 0;
    for (char *tok = strtok(line, " \n"); tok && nf < 9; tok = strtok(NULL, " \n")) f[nf++] = tok;
    if (nf != 9) return;
    const char *id = f[0], *op = f[1], *dts = f[2], *view = f[3], *params = f[4], *input = f[5], *vals = f[6],
               *idxs = f[7];
    double tol = strtod(f[8], NULL);
    wk_dtype dt;
    g_total++;
    char msg[512];
    const char *err = NULL;
    if (!wk_dtype_from_name(strcmp(dts, "f8") == 0 ? "f8e4m3" : dts, &dt)) {
        snprintf(msg, sizeof msg, "unknown dtype %s", dts);
        err = msg;
        goto report;
    }
    wk_tensor *raw = ou_load(g_dir, input);
    wk_tensor *x = raw ? wk_to_dtype(raw, dt) : NULL;
    wk_tensor_free(raw);
    x = x ? apply_view(x, view) : NULL;
    if (!x) { snprintf(msg, sizeof msg, "input setup failed: %s", wk_last_error()); err = msg; goto report; }
    wk_set_num_threads(1);
    bool indices_only = strcmp(vals, "-") == 0;
    result r1 = run_op(op, x, params, indices_only);
    if (r1.why[0]) {
        snprintf(msg, sizeof msg, "malformed case: %s", r1.why);
        err = msg;
        wk_tensor_free(x);
        goto report;
    }
    if (vals[0] == '!') {
        wk_status want = starts_with(vals + 1, "DTYPE") ? WK_ERR_DTYPE : starts_with(vals + 1, "INDEX") ? WK_ERR_INDEX
                       : starts_with(vals + 1, "SHAPE") ? WK_ERR_SHAPE : WK_ERR_ARG;
        if (r1.st == WK_OK || r1.v || r1.i) {
            snprintf(msg, sizeof msg, "succeeded, expected %s", vals + 1);
            err = msg;
        } else if (r1.st != want) {
            snprintf(msg, sizeof msg, "failed with %s (%s), expected %s", wk_status_name(r1.st), wk_last_error(), vals + 1);
            err = msg;
        }
        wk_clear_error();
        wk_tensor_free(r1.v);
        wk_tensor_free(r1.i);
        wk_tensor_free(x);
        goto report;
    }
    wk_set_num_threads(2);
    result r2 = run_op(op, x, params, indices_only);
    wk_set_num_threads(1);
    if (r1.st != WK_OK) {
        snprintf(msg, sizeof msg, "failed: %s", wk_last_error());
        err = msg;
    } else {
        bool odt_int = wk_dtype_is_int(wk_tensor_dtype(r1.v ? r1.v : r1.i));
        if (strcmp(vals, "-") != 0 && !err) err = ou_compare_file(r1.v, g_dir, vals, tol, odt_int, msg, sizeof msg);
        if (r1.v && !err && wk_tensor_dtype(r1.v) != (strcmp(op, "any") == 0 || strcmp(op, "all") == 0 ? WK_U8 : dt)) {
            snprintf(msg, sizeof msg, "result dtype %s", wk_dtype_name(wk_tensor_dtype(r1.v)));
            err = msg;
        }
        if (strcmp(idxs, "-") != 0 && !err) {
            if (!r1.i || wk_tensor_dtype(r1.i) != WK_I64) { snprintf(msg, sizeof msg, "indices missing or not i64"); err = msg; }
            else if ((err = ou_compare_file(r1.i, g_dir, idxs, 0, true, msg, sizeof msg)) != NULL) {
                size_t l = strlen(msg);
                snprintf(msg + l, sizeof msg - l, " (indices)");
            }
        }
        if (!err && (r2.st != WK_OK || !ou_same_bits(r1.v, r2.v) || !ou_same_bits(r1.i, r2.i))) {
            snprintf(msg, sizeof msg, "2 threads differ from 1 thread");
            err = msg;
        }
        if (!err) { /* the op table's coverage: this case's dtype and layouts */
            char spec[512];
            snprintf(spec, sizeof spec, "%s@%s", input, view);
            const char *specs[1] = {spec};
            wk_tensor *outs[2] = {r1.v, r1.i};
            if (!ot_cover_case(id, ot_find(op), dt, specs, &x, 1, outs, 2)) g_cover_problems++;
        }
    }
    wk_tensor_free(r1.v);
    wk_tensor_free(r1.i);
    wk_tensor_free(r2.v);
    wk_tensor_free(r2.i);
    wk_tensor_free(x);
report:
    if (err) {
        g_failed++;
        if (g_failed <= 40) fprintf(stderr, "FAIL %s (%s %s %s %s): %s\n", id, op, dts, view, params, err);
    }
}

static void test_oracle_scan(void **state) {
    (void)state;
    ou_run_manifest("scan", "gen_scan", g_dir, sizeof g_dir, run_case);
    printf("oracle_scan: %d cases, %d failed\n", g_total, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

/* The manifest against the op table (after test_oracle_scan ran every case):
 * each case that must succeed runs on a declared dtype, and every declared
 * (op, dtype, layout) of the entries whose oracle is gen_scan has such a
 * case. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle_scan", "gen_scan", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_scan), cmocka_unit_test(test_table_coverage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
