/* Oracle cases for the indexing ops: $WICK_ORACLE_DIR/indexing/manifest.txt
 * (written by tests/oracle/gen_indexing.py from torch / numpy; the format is
 * described there). Every case is run through the op table (ot_find /
 * ot_run) with its layout variant and compared with the expected .npy;
 * failures print the case id and the first mismatch; the run ends with
 * "oracle_indexing: N cases, M failed". test_table_coverage then checks the
 * manifest against the table's declared dtypes and layouts for these ops. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXIN 4

static char g_dir[4096];
static int g_total, g_failed, g_noncontig, g_cover_problems;

typedef struct {
    char *id, *op, *dtype, *variant, *params, *inputs, *expected;
    wk_dtype dt;
} icase;

/* FILE[@VIEW][#DTYPE] -> tensor owned by the current scope. */
static wk_tensor *load_input(const icase *c, const char *spec, char *why, size_t cap) {
    bool noncontig = false;
    wk_tensor *t = ou_load_input(g_dir, spec, c->dt, &noncontig, why, cap);
    if (noncontig) g_noncontig++;
    return t;
}

/* Runs the case's op through the op table (tests/oracle/op_table.def); NULL
 * result on failure (wk_last_status() says why). *malformed (with why) when
 * the op is not in the table or the case does not fit it. */
static wk_tensor *run_op(const icase *c, wk_tensor **in, int nin, bool *malformed, char *why, size_t cap) {
    *malformed = false;
    const ot_entry *e = ot_find(c->op);
    if (!e) {
        snprintf(why, cap, "op '%s' is not in tests/oracle/op_table.def", c->op);
        *malformed = true;
        return NULL;
    }
    ot_ctx x = {.in = in, .nin = nin, .params = strcmp(c->params, "-") == 0 ? "" : c->params, .dt = c->dt,
                .dev = ou_device()};
    wk_tensor *r = ot_run(e, &x);
    if (x.bad) {
        snprintf(why, cap, "%s", x.why);
        *malformed = true;
    }
    return r;
}

static double tol_for(const icase *c) {
    bool add = strstr(c->op, "add") != NULL;
    if (!add) return 0;
    switch (c->dt) {
    case WK_F32: return 1e-6;
    case WK_F64: return 1e-13;
    case WK_F16: return 1e-3;
    case WK_BF16: return 8e-3;
    default: return 0;
    }
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void case_fail(const icase *c, const char *fmt, ...) {
    g_failed++;
    printf("FAIL %s op=%s dtype=%s variant=%s: ", c->id, c->op, c->dtype, c->variant);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static void run_case(icase *c) {
    g_total++;
    wk_clear_error();
    wk_scope_begin();
    wk_tensor *in[MAXIN];
    int nin = 0;
    char ib[2048];
    snprintf(ib, sizeof ib, "%s", c->inputs);
    if (strcmp(ib, "-") != 0) {
        char *save = NULL;
        for (char *tok = strtok_r(ib, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (nin >= MAXIN) { case_fail(c, "%s", "too many inputs"); wk_scope_end(); return; }
            char why[512];
            in[nin] = load_input(c, tok, why, sizeof why);
            if (!in[nin]) { case_fail(c, "loading input failed: %s", why); wk_scope_end(); return; }
            nin++;
        }
    }
    bool malformed;
    char mwhy[200];
    wk_tensor *r = run_op(c, in, nin, &malformed, mwhy, sizeof mwhy);
    if (malformed) { case_fail(c, "malformed case: %s", mwhy); wk_scope_end(); return; }
    if (c->expected[0] == '!') {
        wk_status want;
        if (!ou_status_from_name(c->expected + 1, &want)) case_fail(c, "bad status %s", c->expected);
        else if (r) case_fail(c, "expected error %s, got a result", c->expected + 1);
        else if (wk_last_status() != want) case_fail(c, "wrong error: %s", wk_last_error());
        wk_clear_error();
        wk_scope_end();
        return;
    }
    if (!r) { case_fail(c, "call failed: %s", wk_last_error()); wk_scope_end(); return; }
    wk_tensor *e = ou_load(g_dir, c->expected);
    if (!e) { case_fail(c, "cannot load expected: %s", wk_last_error()); wk_scope_end(); return; }
    if (wk_tensor_dtype(r) != c->dt) { case_fail(c, "result dtype %s", wk_dtype_name(wk_tensor_dtype(r))); wk_scope_end(); return; }
    bool shape_ok = wk_rank(r) == wk_rank(e);
    for (int i = 0; shape_ok && i < wk_rank(r); i++) shape_ok = wk_dim(r, i) == wk_dim(e, i);
    if (!shape_ok) {
        char b1[128], b2[128], msg[300];
        snprintf(msg, sizeof msg, "shape %s, want %s", wk_tensor_describe(r, b1, sizeof b1),
                 wk_tensor_describe(e, b2, sizeof b2));
        case_fail(c, "%s", msg);
        wk_scope_end();
        return;
    }
    int64_t n = wk_numel(r);
    int fails_before = g_failed;
    if (n > 0) {
        if (wk_dtype_is_int(c->dt)) {
            wk_tensor *r64 = wk_to_dtype(r, WK_I64), *e64 = wk_to_dtype(e, WK_I64);
            int64_t *g = malloc((size_t)n * 8), *w = malloc((size_t)n * 8);
            if (!r64 || !e64 || !g || !w || wk_to_host(r64, g, (size_t)n * 8) != WK_OK ||
                wk_to_host(e64, w, (size_t)n * 8) != WK_OK) {
                case_fail(c, "%s", "readback failed");
            } else {
                for (int64_t i = 0; i < n; i++)
                    if (g[i] != w[i]) {
                        char msg[128];
                        snprintf(msg, sizeof msg, "at flat %lld got %lld want %lld", (long long)i, (long long)g[i],
                                 (long long)w[i]);
                        case_fail(c, "%s", msg);
                        break;
                    }
            }
            free(g);
            free(w);
        } else {
            double *g = malloc((size_t)n * 8), *w = malloc((size_t)n * 8);
            double rt = tol_for(c);
            if (!g || !w || wk_to_host_f64(r, g, (size_t)n) != WK_OK || wk_to_host_f64(e, w, (size_t)n) != WK_OK) {
                case_fail(c, "%s", "readback failed");
            } else {
                for (int64_t i = 0; i < n; i++) {
                    bool ok = ou_close_rel(g[i], w[i], rt);
                    if (!ok) {
                        char msg[160];
                        snprintf(msg, sizeof msg, "at flat %lld got %.17g want %.17g", (long long)i, g[i], w[i]);
                        case_fail(c, "%s", msg);
                        break;
                    }
                }
            }
            free(g);
            free(w);
        }
    }
    if (g_failed == fails_before) { /* the op table's coverage: this case's dtype and layouts */
        const char *specs[MAXIN];
        char sb[2048];
        int ns = 0;
        snprintf(sb, sizeof sb, "%s", strcmp(c->inputs, "-") == 0 ? "" : c->inputs);
        for (char *save = NULL, *tok = strtok_r(sb, ",", &save); tok && ns < nin; tok = strtok_r(NULL, ",", &save))
            specs[ns++] = tok;
        if (!ot_cover_case(c->id, ot_find(c->op), c->dt, specs, in, ns, &r, 1)) g_cover_problems++;
    }
    wk_scope_end();
}

static void run_line(char *line) {
    line[strcspn(line, "\r\n")] = 0;
    char *fld[7];
    int nf = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " ", &save); tok && nf < 7; tok = strtok_r(NULL, " ", &save)) fld[nf++] = tok;
    icase c = {0};
    if (nf != 7) {
        c.id = line;
        c.op = c.dtype = c.variant = "?";
        g_total++;
        case_fail(&c, "%s", "malformed manifest line");
        return;
    }
    c.id = fld[0];
    c.op = fld[1];
    c.dtype = fld[2];
    c.variant = fld[3];
    c.params = fld[4];
    c.inputs = fld[5];
    c.expected = fld[6];
    if (!wk_dtype_from_name(c.dtype, &c.dt)) {
        g_total++;
        case_fail(&c, "%s", "bad dtype");
        return;
    }
    run_case(&c);
}

static void test_oracle_indexing(void **state) {
    (void)state;
    ou_run_manifest("indexing", "gen_indexing", g_dir, sizeof g_dir, run_line);
    printf("oracle_indexing: %d cases (%d non-contiguous inputs), %d failed\n", g_total, g_noncontig, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

/* The manifest against the op table (after test_oracle_indexing ran every
 * case): each case that must succeed runs on a declared dtype, and every
 * declared (op, dtype, layout) of the entries whose oracle is gen_indexing
 * has such a case. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle_indexing", "gen_indexing", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_indexing), cmocka_unit_test(test_table_coverage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
