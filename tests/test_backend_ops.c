/* Every other backend against the CPU, op by op, from the op table
 * (tests/oracle/op_table.def), as ggml's test-backend-ops does: for each op,
 * each declared dtype, each declared layout variant and each of its backend
 * cases ("bk"), the same inputs are built on the CPU and copied to the
 * device, the same views are taken on both, the op runs on both and the
 * device's result is compared with the CPU's: tu_tol(result dtype) times the
 * op's backend scale (0: bit-exact), both results of sort / topk, or the
 * same error status on both sides.
 *
 * The other backend is CUDA (wk_cuda(0)). Without a device the program
 * prints why and exits 77 (ctest's SKIP_RETURN_CODE). WICK_TEST_GPU_AS_CPU=1
 * lets the CPU stand in (ctest test_backend_ops_dry), so the table's backend
 * cases, shapes and parameters keep running everywhere.
 *
 * WICK_BACKEND_OPS_LIST=FILE writes one line per check (op dtype layout
 * shapes params), for comparing what is checked before and after a change. */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"
#include "op_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN OC_MAX_IN

static wk_device *g_dev;
static FILE *g_list;
static int g_checks, g_errors_agreed, g_na;

/* The device result against the CPU's; false (with a message) when they differ. */
static bool same_result(const char *what, wk_tensor *g, wk_tensor *c, double scale) {
    if (wk_tensor_dtype(g) != wk_tensor_dtype(c) || wk_rank(g) != wk_rank(c)) {
        printf("FAIL %s: device gives %s rank %d, cpu %s rank %d\n", what, wk_dtype_name(wk_tensor_dtype(g)),
               wk_rank(g), wk_dtype_name(wk_tensor_dtype(c)), wk_rank(c));
        return false;
    }
    for (int i = 0; i < wk_rank(c); i++)
        if (wk_dim(g, i) != wk_dim(c, i)) {
            printf("FAIL %s: dim %d is %lld on the device, %lld on the cpu\n", what, i, (long long)wk_dim(g, i),
                   (long long)wk_dim(c, i));
            return false;
        }
    wk_tensor *back = wk_to_device(g, wk_cpu());
    if (!back) {
        printf("FAIL %s: reading back: %s\n", what, wk_last_error());
        return false;
    }
    double tol = tu_tol(wk_tensor_dtype(c)) * scale;
    bool ok = true;
    if (tol == 0 && wk_dtype_is_int(wk_tensor_dtype(c))) {
        ok = ou_same_bits(back, c);
        if (!ok) printf("FAIL %s: integer results differ\n", what);
    } else {
        int64_t n = wk_numel(c);
        double *x = malloc(sizeof(double) * (size_t)(n ? n : 1)), *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
        assert_true(x && y);
        TU_STATUS_OK(wk_to_host_f64(back, x, (size_t)n));
        TU_STATUS_OK(wk_to_host_f64(c, y, (size_t)n));
        for (int64_t i = 0; i < n && ok; i++)
            if (!ou_close(x[i], y[i], tol, tol)) {
                printf("FAIL %s: element %lld is %.17g on the device, %.17g on the cpu (tol %g)\n", what, (long long)i,
                       x[i], y[i], tol);
                ok = false;
            }
        free(x);
        free(y);
    }
    wk_tensor_free(back);
    return ok;
}

/* One backend case of e on dt in layout lay; returns the failures. */
static int run_one(const ot_entry *e, wk_dtype dt, int lay, const char *bkcase) {
    char buf[1024], what[1200];
    oc_spec sp[MAX_IN];
    const char *params, *bad_tok = "";
    int nin = oc_parse_case(bkcase, buf, sizeof buf, sp, &params, &bad_tok);
    if (nin < 0) {
        printf("FAIL %s: bad backend input '%s' in op_table.def\n", e->name, bad_tok);
        return 1;
    }
    if (nin == 0 && lay != OT_C) return 0; /* creation ops: no input to lay out */
    wk_tensor *cin[MAX_IN], *gin[MAX_IN];
    int fails = 0;
    wk_scope_begin();
    for (int i = 0; i < nin; i++)
        if (!oc_make_input(&sp[i], i, lay, sp[0].shape, sp[0].rank, dt, e->dom, NULL, g_dev, &cin[i], &gin[i])) {
            g_na++; /* this layout does not apply to these shapes */
            wk_scope_end();
            return 0;
        }
    int li = 0;
    while (!(lay & (1 << li))) li++;
    snprintf(what, sizeof what, "%s %s layout %s [%s|%s]", e->name, wk_dtype_name(dt), ot_layout_name(li), buf, params);
    g_checks++;
    ot_ctx xc = {.in = cin, .nin = nin, .params = params, .dt = dt, .dev = wk_cpu()};
    ot_ctx xg = {.in = gin, .nin = nin, .params = params, .dt = dt, .dev = g_dev};
    wk_clear_error();
    wk_tensor *rc = ot_run(e, &xc);
    wk_status sc = wk_last_status();
    char cerr[256];
    snprintf(cerr, sizeof cerr, "%s", wk_last_error());
    wk_clear_error();
    wk_tensor *rg = ot_run(e, &xg);
    wk_status sg = wk_last_status();
    if (g_list) { /* op dtype layout inputs|params -> the cpu result's shape (or its error) */
        fprintf(g_list, "%s %s %s %s|%s ->", e->name, wk_dtype_name(dt), ot_layout_name(li), buf, params);
        for (int i = 0; rc && i < wk_rank(rc); i++) fprintf(g_list, "%s%lld", i ? "x" : " ", (long long)wk_dim(rc, i));
        fprintf(g_list, "%s\n", rc ? "" : " error");
    }
    if (xc.bad || xg.bad) {
        printf("FAIL %s: the table's backend case does not fit the op: %s\n", what, xc.bad ? xc.why : xg.why);
        fails++;
    } else if (!rc && !rg) {
        if (sc != sg) {
            printf("FAIL %s: cpu fails with %s, the device with %s\n", what, wk_status_name(sc), wk_status_name(sg));
            fails++;
        } else if (lay == OT_C) {
            /* a declared dtype must work on contiguous inputs */
            printf("FAIL %s: fails on the cpu (%s) although op_table.def declares it\n", what, cerr);
            fails++;
        } else {
            g_errors_agreed++;
        }
    } else if (!rc || !rg) {
        printf("FAIL %s: %s fails (%s), the %s does not\n", what, rc ? "the device" : "the cpu",
               rc ? wk_last_error() : cerr, rc ? "cpu" : "device");
        fails++;
    } else {
        double scale = ot_backend_scale(e);
        if (!same_result(what, rg, rc, scale)) fails++;
        /* the further results (sort / topk indices: bit-exact; meshgrid's
         * outputs: views of the inputs, so exact as well) */
        if (xc.nmore != xg.nmore) {
            printf("FAIL %s: %d further results on the cpu, %d on the device\n", what, xc.nmore, xg.nmore);
            fails++;
        }
        for (int i = 0; i < xc.nmore && i < xg.nmore; i++) {
            char w2[1300];
            snprintf(w2, sizeof w2, "%s (result %d)", what, i + 2);
            if (!xc.more[i] || !xg.more[i] || !same_result(w2, xg.more[i], xc.more[i], 0.0)) fails++;
        }
    }
    for (int i = 0; i < xc.nmore; i++) wk_tensor_free(xc.more[i]);
    for (int i = 0; i < xg.nmore; i++) wk_tensor_free(xg.more[i]);
    wk_scope_end();
    wk_clear_error();
    return fails;
}

/* Every entry of one kind: declared dtypes x declared layouts x backend cases. */
static void run_kind(const char *kind) {
    int fails = 0, before = g_checks;
    for (int k = 0; k < ot_count; k++) {
        const ot_entry *e = &ot_table[k];
        if (strcmp(e->kind, kind) != 0) continue;
        unsigned dm = ot_dtype_mask(e);
        int lm = ot_layout_mask(e);
        if (!dm || lm <= 0) {
            printf("FAIL %s: bad dtypes or layouts in op_table.def\n", e->name);
            fails++;
            continue;
        }
        const char *bk = e->bk[0] ? e->bk : oc_default_bk(kind);
        if (!bk[0]) {
            printf("FAIL %s: no backend cases (bk) in op_table.def and no default for kind %s\n", e->name, kind);
            fails++;
            continue;
        }
        for (int d = 0; d < WK_ELEM_DTYPE_COUNT; d++) {
            if (!(dm & (1u << d))) continue;
            for (int l = 0; l < OT_NLAYOUTS; l++) {
                if (!(lm & (1 << l))) continue;
                const char *p = bk;
                while (*p) {
                    const char *sep = strstr(p, " / ");
                    size_t len = sep ? (size_t)(sep - p) : strlen(p);
                    char one[1024];
                    snprintf(one, sizeof one, "%.*s", (int)len, p);
                    fails += run_one(e, (wk_dtype)d, 1 << l, one);
                    p += len + (sep ? 3 : 0);
                }
            }
        }
    }
    printf("backend_ops[%s]: %d checks, %d failed\n", kind, g_checks - before, fails);
    fflush(stdout);
    if (fails) fail_msg("%d %s backend checks failed (the FAIL lines above say which)", fails, kind);
}

#define KIND_TEST(k) \
    static void test_##k(void **state) { (void)state; run_kind(#k); }
KIND_TEST(unary)
KIND_TEST(param)
KIND_TEST(binary)
KIND_TEST(binary_scalar)
KIND_TEST(cmp)
KIND_TEST(cmp_scalar)
KIND_TEST(where)
KIND_TEST(reduce)
KIND_TEST(reduce_all)
KIND_TEST(cast)
KIND_TEST(join)
KIND_TEST(matmul)
KIND_TEST(create)
KIND_TEST(conv)
KIND_TEST(pool)
KIND_TEST(scan)
KIND_TEST(sort)
KIND_TEST(index)
KIND_TEST(linalg)
KIND_TEST(tri)
KIND_TEST(meshgrid)
KIND_TEST(slice_assign)
KIND_TEST(nn)

/* Every table entry's kind has a test above (a new kind needs one). */
static void test_every_kind_runs(void **state) {
    (void)state;
    static const char *const kinds[] = {"unary", "param", "binary", "binary_scalar", "cmp", "cmp_scalar",
                                        "where", "reduce", "reduce_all", "cast", "join", "matmul",
                                        "create", "conv", "pool", "scan", "sort", "index",
                                        "linalg", "tri", "meshgrid", "slice_assign", "nn"};
    int orphans = 0;
    for (int k = 0; k < ot_count; k++) {
        bool found = false;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) found |= strcmp(kinds[i], ot_table[k].kind) == 0;
        if (!found) {
            printf("FAIL %s: kind %s has no backend test\n", ot_table[k].name, ot_table[k].kind);
            orphans++;
        }
    }
    int grad = 0;
    for (int k = 0; k < ot_count; k++) grad += ot_table[k].grad;
    printf("backend_ops: %d table ops, %d marked grad-checkable (the finite-difference check's worklist)\n", ot_count,
           grad);
    if (orphans) fail_msg("%d table ops of a kind without a backend test", orphans);
}

/* The backend tolerance table (tests/op_table.c): every op's class has a
 * row, only "exact" ops are bit-compared, and in particular no
 * transcendental - f64 included - is (libdevice / FMA contraction can put
 * the GPU an ulp from the CPU). */
static void test_tolerance_table(void **state) {
    (void)state;
    int bad = 0;
    for (int k = 0; k < ot_count; k++) {
        const char *why = ot_backend_scale_problem(&ot_table[k]);
        if (why) {
            printf("FAIL %s (tol \"%s\"): %s\n", ot_table[k].name, ot_table[k].tol, why);
            bad++;
        }
    }
    static const char *const never_bitwise[] = {"unary.exp", "unary.log", "unary.sin", "unary.cos", "unary.tanh",
                                                "unary.erf", "unary.gelu", "unary.gelu_erf", "unary.silu",
                                                "unary.sigmoid", "powf", "binary.pow", "elu", "softmax",
                                                "log_softmax", "lse", "matmul", "bmatmul", "sdpa"};
    for (size_t i = 0; i < sizeof never_bitwise / sizeof never_bitwise[0]; i++) {
        const ot_entry *e = ot_find(never_bitwise[i]);
        assert_non_null(e);
        const wk_dtype dts[] = {WK_F64, WK_F32, WK_F16, WK_BF16};
        for (int j = 0; j < 4; j++) {
            if (!(ot_dtype_mask(e) & (1u << dts[j]))) continue;
            if (!(tu_tol(dts[j]) * ot_backend_scale(e) > 0)) {
                printf("FAIL %s %s would be bit-compared against the CPU\n", e->name, wk_dtype_name(dts[j]));
                bad++;
            }
        }
    }
    if (bad) fail_msg("%d ops with a malformed backend tolerance", bad);
}

static int teardown(void **state) {
    (void)state;
    printf("backend_ops: %d checks (%d agreed on an error status, %d layouts not applicable to a case's shapes)\n",
           g_checks, g_errors_agreed, g_na);
    if (g_list) fclose(g_list);
    return 0;
}

int main(void) {
    const char *dry = getenv("WICK_TEST_GPU_AS_CPU");
    if (dry && dry[0] == '1') {
        g_dev = wk_cpu();
        printf("backend_ops: dry run, the CPU stands in for the device (WICK_TEST_GPU_AS_CPU=1)\n");
    } else {
        g_dev = wk_cuda(0);
        if (!g_dev) {
            printf("skipped (no CUDA device): no backend besides the CPU opens here: %s\n", wk_last_error());
            return OU_SKIP;
        }
        printf("backend_ops: cuda:0 against the CPU\n");
    }
    const char *list = getenv("WICK_BACKEND_OPS_LIST");
    if (list && *list) g_list = fopen(list, "w");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_runs),
        cmocka_unit_test(test_tolerance_table),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_param),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_binary_scalar),
        cmocka_unit_test(test_cmp),
        cmocka_unit_test(test_cmp_scalar),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_reduce_all),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_linalg),
        cmocka_unit_test(test_tri),
        cmocka_unit_test(test_meshgrid),
        cmocka_unit_test(test_slice_assign),
        cmocka_unit_test(test_nn),
    };
    return cmocka_run_group_tests_name("backend_ops", tests, NULL, teardown);
}
