/* Oracle suite for the "more ops" section of wick.h (round_to, norm, dot,
 * mv, tril, triu, meshgrid, slice_assign(_), upsampling by a scale factor):
 * every case of $WICK_ORACLE_DIR/ops_extra/manifest.txt (written by
 * tests/oracle/gen_ops_extra.py from numpy and torch; the format is
 * described there) is run through the public API and compared. Each case
 * runs with 1 and with 2 threads (inputs loaded afresh, since
 * slice_assign_ writes into its input) and the two results must be
 * bit-identical. With WICK_ORACLE_DEVICE=cuda:0 the inputs live on the GPU
 * (ctest's oracle_cuda_ops_extra). Every failing case prints its id and the
 * first mismatch; the run ends with "oracle_ops_extra: N cases, M failed". */
#include "testutil.h"
#include "oracle_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IO 8

static char g_dir[4096];
static int g_total, g_failed;

static long long param_ll(const char *params, const char *key, long long dflt) {
    char buf[64];
    return ou_param(params, key, buf, sizeof buf) ? strtoll(buf, NULL, 10) : dflt;
}

static double param_d(const char *params, const char *key, double dflt) {
    char buf[64];
    return ou_param(params, key, buf, sizeof buf) ? strtod(buf, NULL) : dflt;
}

/* '|'-joined integers of key into out; the count, or -1 when absent. */
static int param_list(const char *params, const char *key, int64_t *out) {
    char buf[256];
    long long v[WK_MAX_RANK];
    if (!ou_param(params, key, buf, sizeof buf)) return -1;
    int n = ou_parse_ints(buf, '|', v, WK_MAX_RANK);
    for (int i = 0; i < n; i++) out[i] = (int64_t)v[i];
    return n;
}

/* Runs op on the inputs; outputs into out (*nout of them). Everything lives
 * in the caller's scope. */
static wk_status run_op(const char *op, wk_tensor **in, int nin, const char *params, wk_tensor **out, int *nout) {
    *nout = 1;
    out[0] = NULL;
    if (strcmp(op, "round_to") == 0) out[0] = wk_round_to(in[0], (int)param_ll(params, "dec", 0));
    else if (strcmp(op, "norm") == 0) {
        int64_t d64[WK_MAX_RANK];
        int dims[WK_MAX_RANK];
        int nd = param_list(params, "dims", d64);
        for (int i = 0; i < nd; i++) dims[i] = (int)d64[i];
        out[0] = wk_norm(in[0], param_d(params, "p", 2.0), nd > 0 ? dims : NULL, nd > 0 ? nd : 0,
                         param_ll(params, "keep", 0) != 0);
    } else if (strcmp(op, "dot") == 0) out[0] = wk_dot(in[0], in[1]);
    else if (strcmp(op, "mv") == 0) out[0] = wk_mv(in[0], in[1]);
    else if (strcmp(op, "tril") == 0) out[0] = wk_tril(in[0], param_ll(params, "k", 0));
    else if (strcmp(op, "triu") == 0) out[0] = wk_triu(in[0], param_ll(params, "k", 0));
    else if (strcmp(op, "meshgrid") == 0) {
        char idx[8] = "ij";
        ou_param(params, "idx", idx, sizeof idx);
        *nout = nin;
        return wk_meshgrid(in, nin, strcmp(idx, "xy") == 0 ? WK_MESHGRID_XY : WK_MESHGRID_IJ, out);
    } else if (strcmp(op, "slice_assign") == 0 || strcmp(op, "slice_assign_") == 0) {
        int64_t st[WK_MAX_RANK], en[WK_MAX_RANK], sp[WK_MAX_RANK];
        int n = param_list(params, "starts", st);
        if (param_list(params, "ends", en) != n) return WK_ERR_INTERNAL;
        int ns = param_list(params, "steps", sp);
        const int64_t *steps = ns < 0 ? NULL : sp;
        if (ns >= 0 && ns != n) return WK_ERR_INTERNAL;
        if (op[strlen(op) - 1] == '_') {
            wk_status s = wk_slice_assign_(in[0], st, en, steps, n, in[1]);
            out[0] = s == WK_OK ? in[0] : NULL;
            return s;
        }
        out[0] = wk_slice_assign(in[0], st, en, steps, n, in[1]);
    } else if (strcmp(op, "up_nearest1d") == 0) out[0] = wk_upsample_nearest1d_scale(in[0], param_d(params, "s", 1));
    else if (strcmp(op, "up_nearest2d") == 0)
        out[0] = wk_upsample_nearest2d_scale(in[0], param_d(params, "sh", 1), param_d(params, "sw", 1));
    else if (strcmp(op, "up_bilinear2d") == 0)
        out[0] = wk_upsample_bilinear2d_scale(in[0], param_d(params, "sh", 1), param_d(params, "sw", 1),
                                              param_ll(params, "ac", 0) != 0);
    else return WK_ERR_INTERNAL;
    return out[0] ? WK_OK : wk_last_status();
}

/* got against the expected file; an error string or NULL. */
static const char *compare(const wk_tensor *got, const char *file, wk_dtype dt, double tol, char *msg, size_t cap) {
    wk_tensor *want = ou_load(g_dir, file);
    if (!want) { snprintf(msg, cap, "cannot load %s: %s", file, wk_last_error()); return msg; }
    if (wk_tensor_dtype(got) != dt) {
        snprintf(msg, cap, "result dtype %s, want %s", wk_dtype_name(wk_tensor_dtype(got)), wk_dtype_name(dt));
        return msg;
    }
    int rank = wk_rank(want);
    if (wk_rank(got) != rank) { snprintf(msg, cap, "rank %d, want %d", wk_rank(got), rank); return msg; }
    for (int d = 0; d < rank; d++)
        if (wk_dim(got, d) != wk_dim(want, d)) {
            snprintf(msg, cap, "dim %d is %lld, want %lld", d, (long long)wk_dim(got, d), (long long)wk_dim(want, d));
            return msg;
        }
    int64_t n = wk_numel(want);
    const char *res = NULL;
    double *a = malloc(sizeof(double) * (size_t)(n + 1)), *b = malloc(sizeof(double) * (size_t)(n + 1));
    if (!a || !b || wk_to_host_f64(got, a, (size_t)n) != WK_OK || wk_to_host_f64(want, b, (size_t)n) != WK_OK) {
        snprintf(msg, cap, "readback failed: %s", wk_last_error());
        res = msg;
    } else {
        for (int64_t k = 0; k < n && !res; k++)
            if (!ou_close_rel(a[k], b[k], tol)) {
                snprintf(msg, cap, "element %lld: got %.10g want %.10g (tol %g)", (long long)k, a[k], b[k], tol);
                res = msg;
            }
    }
    free(a);
    free(b);
    return res;
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
    wk_status s1 = run_op(op, in, nin, params, o1, &n1);
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
    if (run_op(op, in2, nin2, params, o2, &n2) != WK_OK || n2 != n1) {
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
    if (!ou_dir("ops_extra", g_dir, sizeof g_dir)) {
        print_message("WICK_ORACLE_DIR not set: skipping\n");
        skip();
    }
    (void)ou_device(); /* exits with OU_SKIP, saying why, when the device cannot open */
    char path[8192];
    FILE *fp = ou_open_manifest(g_dir, path, sizeof path);
    if (!fp) {
        fprintf(stderr, "cannot open %s (run tests/oracle/gen_ops_extra.py first)\n", path);
        fail();
    }
    int saved_threads = wk_num_threads();
    char line[4096];
    while (ou_next_line(fp, line, sizeof line)) run_case(line);
    fclose(fp);
    wk_set_num_threads(saved_threads);
    printf("oracle_ops_extra: %d cases, %d failed\n", g_total, g_failed);
    assert_true(g_total > 0);
    assert_int_equal(g_failed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oracle_ops_extra)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
