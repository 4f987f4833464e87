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

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INPUTS 8
#define MAX_FIELDS 10

typedef struct oc_case {
    const char *id, *op, *variant, *params, *inputs, *expected;
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

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Value of key in the case's "k=v;k=v" into out; false if absent. */
static bool param(const oc_case *c, const char *key, char *out, size_t cap) {
    return ou_param(c->params, key, out, cap);
}

static bool param_f64(const oc_case *c, const char *key, double *v) {
    char buf[64];
    if (!param(c, key, buf, sizeof buf)) return false;
    char *end;
    *v = strtod(buf, &end);
    return end != buf && *end == 0;
}

static bool param_int(const oc_case *c, const char *key, long long *v) {
    char buf[64];
    if (!param(c, key, buf, sizeof buf)) return false;
    char *end;
    *v = strtoll(buf, &end, 10);
    return end != buf && *end == 0;
}

#define SAY(...) snprintf(why, cap, __VA_ARGS__)
#define WHY(...) (SAY(__VA_ARGS__), false)

/* ----------------------------------------------------------------- inputs */

/* FILE[@VIEW][#DTYPE] -> a tensor (owned by the current scope). */
static wk_tensor *load_input(const oc_case *c, const char *spec, bool *noncontig, char *why, size_t cap) {
    return ou_load_input(g_dir, spec, c->dt, noncontig, why, cap);
}

/* ---------------------------------------------------------------- the ops */

static int name_index(const char *name, const char *(*fn)(int), int count) {
    for (int i = 0; i < count; i++)
        if (strcmp(fn(i), name) == 0) return i;
    return -1;
}
static const char *unary_name_i(int i) { return wk_unary_name((wk_unary_op)i); }
static const char *binary_name_i(int i) { return wk_binary_name((wk_binary_op)i); }
static const char *cmp_name_i(int i) { return wk_cmp_name((wk_cmp_op)i); }
static const char *const k_reduce_names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
static const char *reduce_name_i(int i) { return k_reduce_names[i]; }

static bool need(int have, int want, char *why, size_t cap) {
    return have == want ? true : WHY("op needs %d inputs, the manifest gives %d", want, have);
}

/* Run the case's op. *r is NULL when the call failed (then why is empty and
 * wk_last_status() tells); false only when the case itself is malformed. */
static bool run_op(const oc_case *c, wk_tensor **in, int nin, wk_tensor **r, char *why, size_t cap) {
    const char *op = c->op;
    const char *dot = strchr(op, '.');
    const char *sub = dot ? dot + 1 : "";
    double a = 0, b = 0;
    long long n = 0;
    char buf[128];
    *r = NULL;
    if (starts_with(op, "unary.")) {
        int k = name_index(sub, unary_name_i, WK_UNARY_COUNT);
        if (k < 0) return WHY("unknown unary op '%s'", sub);
        if (!need(nin, 1, why, cap)) return false;
        *r = wk_unary(in[0], (wk_unary_op)k);
    } else if (strcmp(op, "affine") == 0) {
        if (!need(nin, 1, why, cap) || !param_f64(c, "mul", &a) || !param_f64(c, "add", &b))
            return WHY("affine needs mul, add");
        *r = wk_affine(in[0], a, b);
    } else if (strcmp(op, "powf") == 0) {
        if (!need(nin, 1, why, cap) || !param_f64(c, "e", &a)) return WHY("powf needs e");
        *r = wk_powf(in[0], a);
    } else if (strcmp(op, "elu") == 0) {
        if (!need(nin, 1, why, cap) || !param_f64(c, "alpha", &a)) return WHY("elu needs alpha");
        *r = wk_elu(in[0], a);
    } else if (strcmp(op, "clamp") == 0) {
        if (!need(nin, 1, why, cap) || !param_f64(c, "lo", &a) || !param_f64(c, "hi", &b))
            return WHY("clamp needs lo, hi");
        *r = wk_clamp(in[0], a, b);
    } else if (starts_with(op, "binary.")) {
        int k = name_index(sub, binary_name_i, WK_BINARY_COUNT);
        if (k < 0) return WHY("unknown binary op '%s'", sub);
        if (!need(nin, 2, why, cap)) return false;
        *r = wk_binary(in[0], in[1], (wk_binary_op)k);
    } else if (starts_with(op, "binary_scalar.")) {
        int k = name_index(sub, binary_name_i, WK_BINARY_COUNT);
        if (k < 0) return WHY("unknown binary op '%s'", sub);
        if (!need(nin, 1, why, cap) || !param_f64(c, "s", &a)) return WHY("binary_scalar needs s");
        *r = wk_binary_scalar(in[0], a, (wk_binary_op)k);
    } else if (starts_with(op, "cmp.")) {
        int k = name_index(sub, cmp_name_i, WK_CMP_COUNT);
        if (k < 0) return WHY("unknown comparison '%s'", sub);
        if (!need(nin, 2, why, cap)) return false;
        *r = wk_cmp(in[0], in[1], (wk_cmp_op)k);
    } else if (starts_with(op, "cmp_scalar.")) {
        int k = name_index(sub, cmp_name_i, WK_CMP_COUNT);
        if (k < 0) return WHY("unknown comparison '%s'", sub);
        if (!need(nin, 1, why, cap) || !param_f64(c, "s", &a)) return WHY("cmp_scalar needs s");
        *r = wk_cmp_scalar(in[0], a, (wk_cmp_op)k);
    } else if (strcmp(op, "where") == 0) {
        if (!need(nin, 3, why, cap)) return false;
        *r = wk_where(in[0], in[1], in[2]);
    } else if (starts_with(op, "reduce.")) {
        int k = name_index(sub, reduce_name_i, WK_REDUCE_COUNT);
        long long dl[WK_MAX_RANK], keep = 0;
        if (k < 0) return WHY("unknown reduction '%s'", sub);
        if (!need(nin, 1, why, cap)) return false;
        int nd = param(c, "dims", buf, sizeof buf) ? ou_parse_ints(buf, '|', dl, WK_MAX_RANK) : -1;
        if (nd < 0 || !param_int(c, "keep", &keep)) return WHY("reduce needs dims, keep");
        int dims[WK_MAX_RANK];
        for (int i = 0; i < nd; i++) dims[i] = (int)dl[i];
        switch ((wk_reduce_op)k) {
        case WK_REDUCE_SUM: *r = wk_sum(in[0], dims, nd, keep != 0); break;
        case WK_REDUCE_MEAN: *r = wk_mean(in[0], dims, nd, keep != 0); break;
        case WK_REDUCE_MAX: *r = wk_max(in[0], dims, nd, keep != 0); break;
        case WK_REDUCE_MIN: *r = wk_min(in[0], dims, nd, keep != 0); break;
        case WK_REDUCE_ARGMAX:
        case WK_REDUCE_ARGMIN:
            if (nd == 1)
                *r = k == WK_REDUCE_ARGMAX ? wk_argmax(in[0], dims[0], keep != 0) : wk_argmin(in[0], dims[0], keep != 0);
            else
                *r = wk_reduce(in[0], (wk_reduce_op)k, dims, nd, keep != 0);
            break;
        default: break;
        }
    } else if (starts_with(op, "reduce_all.")) {
        if (!need(nin, 1, why, cap)) return false;
        if (strcmp(sub, "sum") == 0) *r = wk_sum_all(in[0]);
        else if (strcmp(sub, "mean") == 0) *r = wk_mean_all(in[0]);
        else if (strcmp(sub, "max") == 0) *r = wk_max_all(in[0]);
        else if (strcmp(sub, "min") == 0) *r = wk_min_all(in[0]);
        else return WHY("unknown reduce_all '%s'", sub);
    } else if (strcmp(op, "cast") == 0) {
        wk_dtype to;
        if (!need(nin, 1, why, cap) || !param(c, "to", buf, sizeof buf) || !wk_dtype_from_name(buf, &to))
            return WHY("cast needs to=DTYPE");
        *r = wk_to_dtype(in[0], to);
    } else if (strcmp(op, "cat") == 0 || strcmp(op, "stack") == 0) {
        if (!param_int(c, "dim", &n)) return WHY("%s needs dim", op);
        *r = op[0] == 'c' ? wk_cat(in, nin, (int)n) : wk_stack(in, nin, (int)n);
    } else if (strcmp(op, "matmul") == 0) {
        if (!need(nin, 2, why, cap)) return false;
        *r = wk_matmul(in[0], in[1]);
    } else if (strcmp(op, "bmatmul") == 0) {
        if (!need(nin, 2, why, cap)) return false;
        *r = wk_broadcast_matmul(in[0], in[1]);
    } else if (strcmp(op, "arange") == 0) {
        double step;
        if (!param_f64(c, "start", &a) || !param_f64(c, "end", &b) || !param_f64(c, "step", &step))
            return WHY("arange needs start, end, step");
        *r = wk_arange(a, b, step, c->dt, ou_device());
    } else if (strcmp(op, "eye") == 0) {
        if (!param_int(c, "n", &n)) return WHY("eye needs n");
        *r = wk_eye((int64_t)n, c->dt, ou_device());
    } else if (strcmp(op, "zeros") == 0 || strcmp(op, "ones") == 0 || strcmp(op, "full") == 0) {
        int64_t shape[WK_MAX_RANK];
        int rank = param(c, "shape", buf, sizeof buf) ? ou_parse_shape(buf, shape) : -1;
        if (rank < 0) return WHY("%s needs shape", op);
        if (op[0] == 'z') *r = wk_zeros(shape, rank, c->dt, ou_device());
        else if (op[0] == 'o') *r = wk_ones(shape, rank, c->dt, ou_device());
        else if (param_f64(c, "value", &a)) *r = wk_full(shape, rank, a, c->dt, ou_device());
        else return WHY("full needs value");
    } else {
        return WHY("unknown op '%s'", op);
    }
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
        if (nf != MAX_FIELDS || *q || !wk_dtype_from_name(f[2], &c->dt) || !wk_dtype_from_name(f[3], &c->odt)) {
            fprintf(stderr, "manifest line %d is malformed\n", lineno);
            return -1;
        }
        c->id = f[0];
        c->op = f[1];
        c->variant = f[4];
        c->params = f[5];
        c->inputs = f[6];
        c->expected = f[7];
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
    const char *const *ops; /* op prefixes; a case with variant "random" goes to the random group only */
    bool random;
} group;

static bool in_group(const group *g, const oc_case *c) {
    bool is_random = strcmp(c->variant, "random") == 0;
    if (g->random) return is_random;
    if (is_random) return false;
    for (int i = 0; g->ops[i]; i++) {
        size_t len = strlen(g->ops[i]);
        if (strncmp(c->op, g->ops[i], len) == 0 && (c->op[len] == 0 || c->op[len] == '.')) return true;
    }
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

static const char *const k_unary_ops[] = {"unary", "affine", "powf", "elu", "clamp", NULL};
static const char *const k_binary_ops[] = {"binary", "binary_scalar", NULL};
static const char *const k_compare_ops[] = {"cmp", "cmp_scalar", "where", NULL};
static const char *const k_reduce_ops[] = {"reduce", "reduce_all", NULL};
static const char *const k_cast_ops[] = {"cast", NULL};
static const char *const k_join_ops[] = {"cat", "stack", NULL};
static const char *const k_matmul_ops[] = {"matmul", "bmatmul", NULL};
static const char *const k_create_ops[] = {"arange", "eye", "zeros", "ones", "full", NULL};
static const char *const k_no_ops[] = {NULL};

static void test_unary(void **state) { (void)state; run_group(&(group){"unary", k_unary_ops, false}); }
static void test_binary(void **state) { (void)state; run_group(&(group){"binary", k_binary_ops, false}); }
static void test_compare(void **state) { (void)state; run_group(&(group){"compare", k_compare_ops, false}); }
static void test_reduce(void **state) { (void)state; run_group(&(group){"reduce", k_reduce_ops, false}); }
static void test_cast(void **state) { (void)state; run_group(&(group){"cast", k_cast_ops, false}); }
static void test_join(void **state) { (void)state; run_group(&(group){"join", k_join_ops, false}); }
static void test_matmul(void **state) { (void)state; run_group(&(group){"matmul", k_matmul_ops, false}); }
static void test_create(void **state) { (void)state; run_group(&(group){"create", k_create_ops, false}); }
static void test_random(void **state) { (void)state; run_group(&(group){"random", k_no_ops, true}); }

/* Every case belongs to exactly one group (a manifest op no group knows is a failure). */
static void test_all_cases_grouped(void **state) {
    (void)state;
    static const group groups[] = {
        {"unary", k_unary_ops, false},   {"binary", k_binary_ops, false}, {"compare", k_compare_ops, false},
        {"reduce", k_reduce_ops, false}, {"cast", k_cast_ops, false},     {"join", k_join_ops, false},
        {"matmul", k_matmul_ops, false}, {"create", k_create_ops, false}, {"random", k_no_ops, true},
    };
    int orphans = 0;
    for (int i = 0; i < g_ncases; i++) {
        int k = 0;
        for (size_t j = 0; j < sizeof groups / sizeof groups[0]; j++) k += in_group(&groups[j], &g_cases[i]);
        if (k != 1) {
            printf("FAIL %s op=%s: belongs to %d test groups\n", g_cases[i].id, g_cases[i].op, k);
            orphans++;
        }
    }
    if (orphans) {
        g_total += orphans;
        g_failed += orphans;
        fail_msg("%d manifest cases are not run by exactly one group", orphans);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_cases_grouped),
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
