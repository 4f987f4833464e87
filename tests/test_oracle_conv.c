/* Conv oracle: every case of $WICK_ORACLE_DIR/conv/manifest.txt (written by
 * tests/oracle/gen_conv.py from torch in float64) is run through the op
 * table (tests/oracle/op_table.def: ot_find / ot_run) and compared with
 * torch's answer within the case's tolerance. Every case also runs on 1 and
 * on 2 threads, which must agree bit for bit, and with a non-contiguous view
 * of the same weight (same result exactly). The manifest format is described
 * at the top of gen_conv.py. test_table_coverage then checks the manifest
 * against the table's declared dtypes and layouts for these ops. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[4096];
static int g_total, g_failed, g_noncontig, g_cover_problems;

static wk_dtype parse_dt(const char *s) {
    if (strcmp(s, "f64") == 0) return WK_F64;
    if (strcmp(s, "f16") == 0) return WK_F16;
    if (strcmp(s, "bf16") == 0) return WK_BF16;
    return WK_F32;
}

static wk_tensor *load(const char *file, wk_dtype dt) {
    wk_tensor *raw = ou_load(g_dir, file);
    if (!raw) return NULL;
    wk_tensor *t = wk_to_dtype(raw, dt);
    wk_tensor_free(raw);
    return t;
}

/* x as the op must see it, from the stored array and the variant (b: the
 * stored batch of 1 broadcast to the expected result's batch, n). */
static wk_tensor *view_x(wk_tensor *s, const char *variant, int64_t n) {
    int r = wk_rank(s);
    if (strcmp(variant, "t") == 0) return wk_transpose(s, r - 2, r - 1);
    if (strcmp(variant, "n") == 0) return wk_narrow(s, r - 1, 1, wk_dim(s, r - 1) - 3);
    if (strcmp(variant, "p") == 0) {
        int d3[3] = {0, 2, 1}, d4[4] = {0, 3, 1, 2};
        return wk_permute(s, r == 3 ? d3 : d4, r);
    }
    if (strcmp(variant, "b") == 0) {
        int64_t shape[WK_MAX_RANK];
        for (int i = 0; i < r; i++) shape[i] = wk_dim(s, i);
        shape[0] = n;
        return wk_broadcast_as(s, shape, r);
    }
    return wk_contiguous(s);
}

/* Runs op through the op table (tests/oracle/op_table.def); NULL on failure,
 * with why set when the op is not in the table or the case does not fit it. */
static wk_tensor *run_op(const char *op, wk_tensor *x, wk_tensor *w, const char *params, char *why, size_t cap) {
    const ot_entry *e = ot_find(op);
    if (!e) {
        snprintf(why, cap, "op '%s' is not in tests/oracle/op_table.def", op);
        return NULL;
    }
    wk_tensor *in[2] = {x, w};
    ot_ctx c = {.in = in, .nin = 2, .params = params, .dt = wk_tensor_dtype(x), .dev = ou_device()};
    wk_tensor *r = ot_run(e, &c);
    if (c.bad) snprintf(why, cap, "%s", c.why);
    return r;
}

static bool run_case(char *line, int *noncontig) {
    char id[256], op[64], dts[16], variant[16], xf[64], wf[64], ef[64];
    long long st, pad, dil, grp, opad;
    double atol, rtol;
    if (sscanf(line, "%255s %63s %15s %15s %lld %lld %lld %lld %lld %63s %63s %63s %lf:%lf", id, op, dts, variant, &st,
               &pad, &dil, &grp, &opad, xf, wf, ef, &atol, &rtol) != 14) {
        printf("FAIL bad manifest line: %s\n", line);
        return false;
    }
    wk_dtype dt = parse_dt(dts);
    char p[200], why[200] = "";
    snprintf(p, sizeof p, "stride=%lld;padding=%lld;dilation=%lld;groups=%lld;output_padding=%lld", st, pad, dil, grp,
             opad);
    wk_tensor *xs = load(xf, dt), *w = load(wf, dt), *e = load(ef, WK_F64);
    wk_tensor *x = xs && e ? view_x(xs, variant, wk_dim(e, 0)) : NULL;
    bool ok = false;
    wk_tensor *y1 = NULL, *y2 = NULL, *y3 = NULL, *wt = NULL, *wtc = NULL, *wnc = NULL;
    double *got = NULL, *want = NULL, *got2 = NULL;
    if (!x || !w || !e) {
        printf("FAIL %s: cannot load inputs: %s\n", id, wk_last_error());
        goto done;
    }
    if (!wk_is_contiguous(x)) (*noncontig)++;
    wk_set_num_threads(1);
    y1 = run_op(op, x, w, p, why, sizeof why);
    wk_set_num_threads(2);
    y2 = run_op(op, x, w, p, why, sizeof why);
    /* the same weight values through a non-contiguous layout */
    wt = wk_transpose(w, 0, 1);
    wtc = wt ? wk_contiguous(wt) : NULL;
    wnc = wtc ? wk_transpose(wtc, 0, 1) : NULL;
    y3 = wnc ? run_op(op, x, wnc, p, why, sizeof why) : NULL;
    if (why[0]) {
        printf("FAIL %s: malformed case: %s\n", id, why);
        goto done;
    }
    if (!y1 || !y2 || !y3) {
        printf("FAIL %s: op failed: %s\n", id, wk_last_error());
        goto done;
    }
    if (wk_tensor_dtype(y1) != dt || wk_rank(y1) != wk_rank(e)) {
        printf("FAIL %s: dtype / rank differ\n", id);
        goto done;
    }
    for (int i = 0; i < wk_rank(e); i++)
        if (wk_dim(y1, i) != wk_dim(e, i)) {
            printf("FAIL %s: dim %d is %lld, want %lld\n", id, i, (long long)wk_dim(y1, i), (long long)wk_dim(e, i));
            goto done;
        }
    int64_t n = wk_numel(e);
    size_t cnt = (size_t)(n > 0 ? n : 1);
    got = calloc(cnt, sizeof(double));
    got2 = calloc(cnt, sizeof(double));
    want = calloc(cnt, sizeof(double));
    if (!got || !got2 || !want || wk_to_host_f64(y1, got, (size_t)n) != WK_OK ||
        wk_to_host_f64(y2, got2, (size_t)n) != WK_OK || wk_to_host_f64(e, want, (size_t)n) != WK_OK) {
        printf("FAIL %s: readback\n", id);
        goto done;
    }
    double maxerr = 0;
    int64_t bad = -1;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        if (d > maxerr) maxerr = d;
        if (bad < 0 && !(d <= atol + rtol * fabs(want[i]))) bad = i;
    }
    if (bad >= 0) {
        printf("FAIL %s: max error %g (atol %g rtol %g); first mismatch at flat %lld: got %.17g want %.17g\n", id,
               maxerr, atol, rtol, (long long)bad, got[bad], want[bad]);
        goto done;
    }
    if (n > 0 && memcmp(got, got2, sizeof(double) * (size_t)n) != 0) {
        printf("FAIL %s: 1 and 2 threads differ\n", id);
        goto done;
    }
    if (tu_max_abs_diff(y3, y1) != 0.0) {
        printf("FAIL %s: non-contiguous weight gives a different result\n", id);
        goto done;
    }
    { /* the op table's coverage: this case's dtype and layouts */
        char spec[128];
        snprintf(spec, sizeof spec, "%s@%s", xf, variant);
        const char *specs[2] = {spec, wf};
        wk_tensor *ins[2] = {x, w};
        if (!ot_cover_case(id, ot_find(op), dt, specs, ins, 2, &y1, 1)) g_cover_problems++;
    }
    ok = true;
done:
    free(got);
    free(got2);
    free(want);
    wk_tensor_free(y1);
    wk_tensor_free(y2);
    wk_tensor_free(y3);
    wk_tensor_free(wt);
    wk_tensor_free(wtc);
    wk_tensor_free(wnc);
    wk_tensor_free(x);
    wk_tensor_free(xs);
    wk_tensor_free(w);
    wk_tensor_free(e);
    wk_clear_error();
    return ok;
}

static void run_line(char *line) {
    g_total++;
    if (!run_case(line, &g_noncontig)) g_failed++;
}

static void test_oracle_conv(void **state) {
    (void)state;
    ou_run_manifest("conv", "gen_conv", g_dir, sizeof g_dir, run_line);
    printf("oracle conv: %d cases (%d non-contiguous inputs), %d failed\n", g_total, g_noncontig, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

/* The manifest against the op table (after test_oracle_conv ran every case):
 * each case runs on a declared dtype, and every declared (op, dtype, layout)
 * of the entries whose oracle is gen_conv has a case. */
static void test_table_coverage(void **state) {
    (void)state;
    ot_coverage_test("oracle conv", "gen_conv", g_total, g_cover_problems);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_conv), cmocka_unit_test(test_table_coverage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
