/* The oracle suite: every case of $WICK_ORACLE_DIR/manifest.txt (written by
 * tests/oracle/gen_oracle.py from numpy) is run through the public API and
 * compared with numpy's answer.
 *
 * A case loads its inputs with wk_npy_load, converts them to the case dtype
 * with wk_to_dtype, builds its layout variant with wick views (transpose,
 * narrow, broadcast_as, permute), runs the op and compares the result, read
 * back with wk_to_host_f64 (floats) or exactly (integers), with the case's
 * tolerance. Expected errors (!DTYPE, ...) must come back as NULL with that
 * status. The manifest format is described at the top of gen_oracle.py.
 *
 * Every failing case prints its id, op, dtype, variant, max error and the
 * first mismatching index; the run ends with "oracle: N cases, M failed". */
#include "testutil.h"
#include "oracle_util.h"
#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INPUTS 8
#define MAX_FIELDS 11 /* the 11th, the layouts the case covers, is optional */

typedef struct oc_case {
    const char *id, *op, *variant, *params, *inputs, *expected;
    int layouts; /* OT_* bits the case's inputs / result cover (manifest field 11) */
    wk_dtype dt, odt;
    double atol, rtol;
} oc_case;

/* Cases whose failure is a known library bug that would crash or hang the
 * run: skipped with a printed "KNOWN BUG" line. Matched on the id without its
 * leading "NNNN." number. Keep this empty unless a case cannot run at all. */
static const char *const k_known_bugs[] = {NULL};

static char g_dir[4096];
static char *g_text;          /* the manifest, tokenized in place */
static oc_case *g_cases;
static int g_ncases;
static int g_total, g_failed, g_skipped, g_noncontig;
static double g_t0;

/* ------------------------------------------------------------ small helpers */

static double now_s(void) {
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define SAY(...) snprintf(why, cap, __VA_ARGS__)
#define WHY(...) (SAY(__VA_ARGS__), false)

/* ----------------------------------------------------------------- inputs */

/* FILE[@VIEW][#DTYPE] -> a tensor (owned by the current scope). */
static wk_tensor *load_input(const oc_case *c, const char *spec, bool *noncontig, char *why, size_t cap) {
    return ou_load_input(g_dir, spec, c->dt, noncontig, why, cap);
}

/* ---------------------------------------------------------------- the ops */

/* Run the case's op through the op table (tests/oracle/op_table.def). *r is
 * NULL when the call failed (then why is empty and wk_last_status() tells);
 * false only when the case itself is malformed. */
static bool run_op(const oc_case *c, wk_tensor **in, int nin, wk_tensor **r, char *why, size_t cap) {
    *r = NULL;
    const ot_entry *e = ot_find(c->op);
    if (!e) return WHY("op '%s' is not in the op table", c->op);
    ot_ctx x = {.in = in, .nin = nin, .params = c->params, .dt = c->dt, .dev = ou_device()};
    *r = ot_run(e, &x);
    for (int i = 0; i < x.nmore; i++) wk_tensor_free(x.more[i]); /* no manifest op here has a second result */
    if (x.bad) return WHY("%s: %s", c->op, x.why);
    return true;
}

/* ------------------------------------------------------------- comparison */

/* Every element of t (any integer dtype) exactly, as int64 (u32 fits). */
static bool read_ints(const wk_tensor *t, int64_t *out, int64_t n) {
    wk_dtype dt = wk_tensor_dtype(t);
    size_t es = wk_dtype_size(dt);
    unsigned char *raw = malloc((size_t)n * es);
    if (!raw) return false;
    bool ok = wk_to_host(t, raw, (size_t)n * es) == WK_OK;
    for (int64_t i = 0; ok && i < n; i++) {
        const unsigned char *p = raw + (size_t)i * es;
        switch (dt) {
        case WK_U8: out[i] = p[0]; break;
        case WK_U32: { uint32_t v; memcpy(&v, p, 4); out[i] = v; break; }
        case WK_I16: { int16_t v; memcpy(&v, p, 2); out[i] = v; break; }
        case WK_I32: { int32_t v; memcpy(&v, p, 4); out[i] = v; break; }
        case WK_I64: { int64_t v; memcpy(&v, p, 8); out[i] = v; break; }
        default: ok = false; break;
        }
    }
    free(raw);
    return ok;
}

static void format_index(const int64_t *shape, int rank, int64_t flat, char *out, size_t cap) {
    int64_t idx[WK_MAX_RANK];
    for (int i = rank - 1; i >= 0; i--) {
        idx[i] = shape[i] ? flat % shape[i] : 0;
        flat = shape[i] ? flat / shape[i] : 0;
    }
    size_t len = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < rank && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "", (long long)idx[i]);
    if (len < cap) snprintf(out + len, cap - len, "]");
}

static bool shapes_equal(const wk_tensor *a, const wk_tensor *b) {
    if (wk_rank(a) != wk_rank(b)) return false;
    for (int i = 0; i < wk_rank(a); i++)
        if (wk_shape(a)[i] != wk_shape(b)[i]) return false;
    return true;
}

static void shape_str(const wk_tensor *t, char *out, size_t cap) {
    size_t len = (size_t)snprintf(out, cap, "(");
    for (int i = 0; i < wk_rank(t) && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%lld", i ? ", " : "", (long long)wk_shape(t)[i]);
    if (len < cap) snprintf(out + len, cap - len, ")");
}

static bool compare(const oc_case *c, const wk_tensor *got, char *why, size_t cap) {
    char s1[128], s2[128];
    wk_tensor *want = ou_load(g_dir, c->expected);
    if (!want) return WHY("wk_npy_load(%s) failed: %s", c->expected, wk_last_error());
    if (wk_tensor_dtype(got) != c->odt)
        return WHY("result dtype %s, expected %s", wk_dtype_name(wk_tensor_dtype(got)), wk_dtype_name(c->odt));
    if (!shapes_equal(got, want)) {
        shape_str(got, s1, sizeof s1);
        shape_str(want, s2, sizeof s2);
        return WHY("result shape %s, expected %s", s1, s2);
    }
    int64_t n = wk_numel(want);
    if (n == 0) return true;
    int64_t bad = 0, first = -1;
    double maxerr = 0, g_first = 0, w_first = 0;
    bool ok = true;
    if (wk_dtype_is_int(c->odt)) {
        int64_t *g = malloc(sizeof(int64_t) * (size_t)n), *w = malloc(sizeof(int64_t) * (size_t)n);
        if (!g || !w || !read_ints(got, g, n) || !read_ints(want, w, n)) {
            free(g);
            free(w);
            return WHY("reading integer values failed: %s", wk_last_error());
        }
        for (int64_t i = 0; i < n; i++) {
            if (g[i] == w[i]) continue;
            double e = fabs((double)g[i] - (double)w[i]);
            if (e > maxerr) maxerr = e;
            if (first < 0) { first = i; g_first = (double)g[i]; w_first = (double)w[i]; }
            bad++;
        }
        free(g);
        free(w);
    } else {
        double *g = malloc(sizeof(double) * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
        if (!g || !w || wk_to_host_f64(got, g, (size_t)n) != WK_OK || wk_to_host_f64(want, w, (size_t)n) != WK_OK) {
            free(g);
            free(w);
            return WHY("reading values failed: %s", wk_last_error());
        }
        for (int64_t i = 0; i < n; i++) {
            bool good = ou_close(g[i], w[i], c->atol, c->rtol);
            double e = isfinite(g[i]) && isfinite(w[i]) ? fabs(g[i] - w[i]) : good ? 0 : INFINITY;
            if (e > maxerr) maxerr = e;
            if (!good) {
                if (first < 0) { first = i; g_first = g[i]; w_first = w[i]; }
                bad++;
            }
        }
        free(g);
        free(w);
    }
    if (bad) {
        ok = false;
        format_index(wk_shape(want), wk_rank(want), first, s1, sizeof s1);
        shape_str(want, s2, sizeof s2);
        snprintf(why, cap,
                 "max error %.6g (atol %g, rtol %g); %lld of %lld elements off; first mismatch at %s of %s: "
                 "got %.17g, expected %.17g",
                 maxerr, c->atol, c->rtol, (long long)bad, (long long)n, s1, s2, g_first, w_first);
    }
    return ok;
}

/* ---------------------------------------------------------------- one case */

static bool known_bug(const oc_case *c) {
    const char *dot = strchr(c->id, '.');
    const char *name = dot ? dot + 1 : c->id;
    for (int i = 0; k_known_bugs[i]; i++)
        if (strcmp(k_known_bugs[i], name) == 0) return true;
    return false;
}

static bool run_inner(const oc_case *c, bool *noncontig, char *why, size_t cap) {
    wk_tensor *in[MAX_INPUTS];
    int nin = 0;
    if (strcmp(c->inputs, "-") != 0) {
        char list[2048];
        if (strlen(c->inputs) >= sizeof list) return WHY("input list too long");
        strcpy(list, c->inputs);
        char *p = list;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma) *comma = 0;
            if (nin == MAX_INPUTS) return WHY("too many inputs");
            in[nin] = load_input(c, p, noncontig, why, cap);
            if (!in[nin]) return false;
            nin++;
            if (!comma) break;
            p = comma + 1;
        }
    }
    wk_clear_error();
    wk_tensor *r;
    if (!run_op(c, in, nin, &r, why, cap)) return false;
    if (c->expected[0] == '!') {
        wk_status st;
        if (!ou_status_from_name(c->expected + 1, &st)) return WHY("bad expected status '%s'", c->expected);
        if (r) return WHY("succeeded, expected it to fail with %s", wk_status_name(st));
        if (wk_last_status() != st)
            return WHY("failed with %s (%s), expected %s", wk_status_name(wk_last_status()), wk_last_error(),
                       wk_status_name(st));
        return true;
    }
    if (!r) return WHY("returned NULL: %s (%s)", wk_status_name(wk_last_status()), wk_last_error());
    return compare(c, r, why, cap);
}

static bool run_case(const oc_case *c) {
    g_total++;
    if (known_bug(c)) {
        g_skipped++;
        printf("KNOWN BUG (skipped, see the report): %s op=%s dtype=%s variant=%s\n", c->id, c->op,
               wk_dtype_name(c->dt), c->variant);
        return true;
    }
    char why[1024] = "";
    bool noncontig = false;
    wk_clear_error();
    wk_scope_begin();
    bool ok = run_inner(c, &noncontig, why, sizeof why);
    wk_scope_end();
    wk_clear_error();
    if (noncontig) g_noncontig++;
    if (!ok) {
        g_failed++;
        printf("FAIL %s op=%s dtype=%s variant=%s: %s\n", c->id, c->op, wk_dtype_name(c->dt), c->variant, why);
        fflush(stdout);
    }
    return ok;
}

/* ------------------------------------------------------------- the manifest */

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap) break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) buf[len] = 0;
    return buf;
}

static int parse_manifest(char *text) {
    int lines = 1;
    for (char *p = text; *p; p++) lines += *p == '\n';
    g_cases = calloc((size_t)lines, sizeof *g_cases);
    if (!g_cases) return -1;
    int lineno = 0;
    char *p = text;
    while (*p) {
        char *line = p;
        char *nl = strchr(p, '\n');
        if (nl) { *nl = 0; p = nl + 1; } else p += strlen(p);
        lineno++;
        if (line[0] == '#' || line[0] == 0) continue;
        char *f[MAX_FIELDS];
        int nf = 0;
        char *q = line;
        while (*q && nf < MAX_FIELDS) {
            while (*q == ' ' || *q == '\t' || *q == '\r') *q++ = 0;
            if (!*q) break;
            f[nf++] = q;
            while (*q && *q != ' ' && *q != '\t' && *q != '\r') q++;
        }
        while (*q == ' ' || *q == '\t' || *q == '\r') *q++ = 0;
        oc_case *c = &g_cases[g_ncases];
        char *end1, *end2;
        if (nf < MAX_FIELDS - 1 || *q || !wk_dtype_from_name(f[2], &c->dt) || !wk_dtype_from_name(f[3], &c->odt)) {
            fprintf(stderr, "manifest line %d is malformed\n", lineno);
            return -1;
        }
        c->id = f[0];
        c->op = f[1];
        c->variant = f[4];
        c->params = f[5];
        c->inputs = f[6];
        c->expected = f[7];
        c->layouts = 0;
        if (nf == MAX_FIELDS) {
            char lay[64];
            snprintf(lay, sizeof lay, "%s", f[10]);
            for (char *z = lay; *z; z++)
                if (*z == ',') *z = ' ';
            c->layouts = ot_parse_layouts(lay);
            if (c->layouts < 0) {
                fprintf(stderr, "manifest line %d: bad layouts '%s'\n", lineno, f[10]);
                return -1;
            }
        }
        c->atol = strtod(f[8], &end1);
        c->rtol = strtod(f[9], &end2);
        if (*end1 || *end2) {
            fprintf(stderr, "manifest line %d: bad tolerance\n", lineno);
            return -1;
        }
        g_ncases++;
    }
    return 0;
}

static int group_setup(void **state) {
    (void)state;
    if (!ou_dir(NULL, g_dir, sizeof g_dir) || !g_dir[0]) {
        fprintf(stderr, "test_oracle: WICK_ORACLE_DIR is not set (run through ctest, after oracle_generate, or set it "
                        "to the output of tests/oracle/gen_oracle.py)\n");
        return -1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.txt", g_dir);
    g_text = read_file(path);
    if (!g_text) {
        fprintf(stderr, "test_oracle: cannot read %s (run tests/oracle/gen_oracle.py first)\n", path);
        return -1;
    }
    if (parse_manifest(g_text) != 0 || g_ncases == 0) {
        fprintf(stderr, "test_oracle: %s has no usable cases\n", path);
        free(g_cases);
        g_cases = NULL;
        return -1;
    }
    printf("oracle: %d cases from %s (cpu isa %s, %d threads)\n", g_ncases, path, wk_cpu_isa(), wk_num_threads());
    g_t0 = now_s();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    if (!g_cases) {
        printf("oracle: no cases ran (setup failed)\n");
        free(g_text);
        g_text = NULL;
        return 0;
    }
    printf("oracle: %d cases ran on at least one non-contiguous view; %.2f s\n", g_noncontig, now_s() - g_t0);
    if (g_skipped) printf("oracle: %d cases skipped as KNOWN BUG\n", g_skipped);
    printf("oracle: %d cases, %d failed\n", g_total, g_failed);
    fflush(stdout);
    free(g_cases);
    free(g_text);
    g_cases = NULL;
    g_text = NULL;
    return 0;
}

/* ------------------------------------------------------------------ groups */

typedef struct group {
    const char *name;
    const char *const *kinds; /* op-table kinds; a case with variant "random" goes to the random group only */
    bool random;
} group;

static bool in_group(const group *g, const oc_case *c) {
    bool is_random = strcmp(c->variant, "random") == 0;
    if (g->random) return is_random;
    if (is_random) return false;
    const ot_entry *e = ot_find(c->op);
    if (!e) return false;
    for (int i = 0; g->kinds[i]; i++)
        if (strcmp(e->kind, g->kinds[i]) == 0) return true;
    return false;
}

static void run_group(const group *g) {
    int total = 0, failed = 0;
    for (int i = 0; i < g_ncases; i++) {
        if (!in_group(g, &g_cases[i])) continue;
        total++;
        if (!run_case(&g_cases[i])) failed++;
    }
    printf("oracle[%s]: %d cases, %d failed\n", g->name, total, failed);
    fflush(stdout);
    if (failed) fail_msg("%d of %d %s cases failed (the FAIL lines above say which)", failed, total, g->name);
}

static const char *const k_unary_kinds[] = {"unary", "param", NULL};
static const char *const k_binary_kinds[] = {"binary", "binary_scalar", NULL};
static const char *const k_compare_kinds[] = {"cmp", "cmp_scalar", "where", NULL};
static const char *const k_reduce_kinds[] = {"reduce", "reduce_all", NULL};
static const char *const k_cast_kinds[] = {"cast", NULL};
static const char *const k_join_kinds[] = {"join", NULL};
static const char *const k_matmul_kinds[] = {"matmul", NULL};
static const char *const k_create_kinds[] = {"create", NULL};
static const char *const k_no_kinds[] = {NULL};

static const group k_groups[] = {
    {"unary", k_unary_kinds, false},   {"binary", k_binary_kinds, false}, {"compare", k_compare_kinds, false},
    {"reduce", k_reduce_kinds, false}, {"cast", k_cast_kinds, false},     {"join", k_join_kinds, false},
    {"matmul", k_matmul_kinds, false}, {"create", k_create_kinds, false}, {"random", k_no_kinds, true},
};

static void test_unary(void **state) { (void)state; run_group(&k_groups[0]); }
static void test_binary(void **state) { (void)state; run_group(&k_groups[1]); }
static void test_compare(void **state) { (void)state; run_group(&k_groups[2]); }
static void test_reduce(void **state) { (void)state; run_group(&k_groups[3]); }
static void test_cast(void **state) { (void)state; run_group(&k_groups[4]); }
static void test_join(void **state) { (void)state; run_group(&k_groups[5]); }
static void test_matmul(void **state) { (void)state; run_group(&k_groups[6]); }
static void test_create(void **state) { (void)state; run_group(&k_groups[7]); }
static void test_random(void **state) { (void)state; run_group(&k_groups[8]); }

/* Every case belongs to exactly one group (a manifest op the table does not know is a failure). */
static void test_all_cases_grouped(void **state) {
    (void)state;
    int orphans = 0;
    for (int i = 0; i < g_ncases; i++) {
        int k = 0;
        for (size_t j = 0; j < sizeof k_groups / sizeof k_groups[0]; j++) k += in_group(&k_groups[j], &g_cases[i]);
        if (k != 1) {
            printf("FAIL %s op=%s: belongs to %d test groups%s\n", g_cases[i].id, g_cases[i].op, k,
                   ot_find(g_cases[i].op) ? "" : " (not in tests/oracle/op_table.def)");
            orphans++;
        }
    }
    if (orphans) {
        g_total += orphans;
        g_failed += orphans;
        fail_msg("%d manifest cases are not run by exactly one group", orphans);
    }
}

/* The manifest against the op table: a case that must succeed runs on a
 * declared dtype, and every (op, declared dtype, declared layout) of the
 * ops whose oracle is gen_oracle has at least one case that must succeed.
 * So a layout or dtype added to the table without an oracle case fails here
 * (gen_oracle.py's table sweep writes those cases). */
static void test_table_coverage(void **state) {
    (void)state;
    int problems = 0, with_layouts = 0;
    for (int i = 0; i < g_ncases; i++) {
        const oc_case *c = &g_cases[i];
        const ot_entry *e = ot_find(c->op);
        if (c->layouts) with_layouts++;
        if (!e || c->expected[0] == '!') continue;
        ot_cover(e, c->dt, c->layouts); /* the manifest's own layouts field (gen_oracle.py's Oracle.layouts) */
        if (!(ot_dtype_mask(e) & (1u << c->dt))) {
            printf("FAIL %s op=%s dtype=%s: must succeed, but the op table does not declare that dtype\n", c->id,
                   c->op, wk_dtype_name(c->dt));
            problems++;
        }
    }
    if (with_layouts == 0) {
        printf("FAIL the manifest has no layouts field (field 11): regenerate it with tests/oracle/gen_oracle.py\n");
        fail_msg("manifest without layouts");
    }
    ot_coverage_test("oracle", "gen_oracle", g_ncases, problems);
}

/* The gradient-check hook: the ops the table marks grad-checkable, listed so
 * the finite-difference check has its worklist; each must be defined on f64
 * (the check differentiates in f64) or f32. */
static void test_grad_hook(void **state) {
    (void)state;
    int n = 0, bad = 0;
    char missing[512] = "";
    printf("oracle: grad-checkable ops:");
    for (int k = 0; k < ot_count; k++) {
        const ot_entry *e = &ot_table[k];
        if (!e->grad) continue;
        n++;
        printf(" %s", e->name);
        if (!(ot_dtype_mask(e) & ((1u << WK_F64) | (1u << WK_F32)))) {
            bad++;
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, " %s", e->name);
        }
    }
    printf("\noracle: %d of %d table ops grad-checkable\n", n, ot_count);
    if (bad) {
        printf("FAIL marked grad-checkable but defined on neither f64 nor f32:%s\n", missing);
        fail_msg("%d grad-checkable ops without a float dtype to differentiate in", bad);
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--list") == 0) { /* the op table as JSON (tests/oracle/check_table.py) */
        ot_print_json(stdout);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_cases_grouped),
        cmocka_unit_test(test_table_coverage),
        cmocka_unit_test(test_grad_hook),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests_name("oracle", tests, group_setup, group_teardown);
}
