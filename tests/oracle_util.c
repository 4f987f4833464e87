/* Helpers shared by the oracle tests; see oracle_util.h. */
#include "oracle_util.h"
#include "testutil.h" /* cmocka: ou_run_manifest skips / fails the running test */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ou_dir(const char *sub, char *out, size_t cap) {
    const char *root = getenv("WICK_ORACLE_DIR");
    if (!root) {
        if (cap) out[0] = 0;
        return false;
    }
    if (sub && *sub) snprintf(out, cap, "%s/%s", root, sub);
    else snprintf(out, cap, "%s", root);
    return true;
}

FILE *ou_open_manifest(const char *dir, char *path, size_t cap) {
    snprintf(path, cap, "%s/manifest.txt", dir);
    return fopen(path, "rb");
}

bool ou_next_line(FILE *f, char *line, size_t cap) {
    while (fgets(line, (int)cap, f))
        if (line[0] != '#' && line[0] != '\n') return true;
    return false;
}

wk_device *ou_device(void) {
    static wk_device *dev;
    if (dev) return dev;
    const char *want = getenv("WICK_ORACLE_DEVICE");
    if (!want || !*want || strcmp(want, "cpu") == 0) return dev = wk_cpu();
    int ordinal = 0;
    if (strncmp(want, "cuda", 4) != 0 || (want[4] && (want[4] != ':' || sscanf(want + 5, "%d", &ordinal) != 1))) {
        fprintf(stderr, "WICK_ORACLE_DEVICE=%s: expected cpu, cuda or cuda:N\n", want);
        exit(2);
    }
    dev = wk_cuda(ordinal);
    if (!dev) {
        /* ctest's SKIP_RETURN_CODE: the suite cannot run here, and says why */
        printf("skipped: WICK_ORACLE_DEVICE=%s but %s\n", want, wk_last_error());
        exit(OU_SKIP);
    }
    return dev;
}

wk_tensor *ou_load(const char *dir, const char *file) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return wk_npy_load(path, ou_device());
}

bool ou_param(const char *params, const char *key, char *out, size_t cap) {
    size_t kl = strlen(key);
    const char *p = params;
    while (p && *p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= cap) vl = cap - 1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = 0;
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

int ou_parse_ints(const char *s, char sep, long long *out, int cap) {
    int n = 0;
    if (!*s) return 0;
    for (;;) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || n >= cap) return -1;
        out[n++] = v;
        if (*end == 0) return n;
        if (*end != sep) return -1;
        s = end + 1;
    }
}

int ou_parse_shape(const char *s, int64_t *shape) {
    if (strcmp(s, "_") == 0) return 0;
    long long v[WK_MAX_RANK];
    int n = ou_parse_ints(s, 'x', v, WK_MAX_RANK);
    for (int i = 0; i < n; i++) shape[i] = (int64_t)v[i];
    return n;
}

bool ou_status_from_name(const char *s, wk_status *st) {
    static const struct { const char *name; wk_status st; } k[] = {
        {"DTYPE", WK_ERR_DTYPE}, {"DIV_ZERO", WK_ERR_DIV_ZERO}, {"SHAPE", WK_ERR_SHAPE},
        {"ARG", WK_ERR_ARG},     {"INDEX", WK_ERR_INDEX},       {"DEVICE", WK_ERR_DEVICE},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(s, k[i].name) == 0) {
            *st = k[i].st;
            return true;
        }
    return false;
}

#define SAY(...) snprintf(why, cap, __VA_ARGS__)
#define WHY(...) (SAY(__VA_ARGS__), false)

bool ou_apply_view(wk_tensor **t, const char *tok, char *why, size_t cap) {
    wk_tensor *r = NULL;
    switch (tok[0]) {
    case 'c': return tok[1] == 0 ? true : WHY("bad view token '%s'", tok);
    case 't': r = wk_transpose(*t, -2, -1); break;
    case 'n': {
        long long v[3];
        if (ou_parse_ints(tok + 1, ':', v, 3) != 3) return WHY("bad view token '%s'", tok);
        r = wk_narrow(*t, (int)v[0], (int64_t)v[1], (int64_t)v[2]);
        break;
    }
    case 'b': {
        int64_t shape[WK_MAX_RANK];
        int rank = ou_parse_shape(tok + 1, shape);
        if (rank < 0) return WHY("bad view token '%s'", tok);
        r = wk_broadcast_as(*t, shape, rank);
        break;
    }
    case 'p': {
        long long v[WK_MAX_RANK];
        int n = ou_parse_ints(tok + 1, ':', v, WK_MAX_RANK);
        if (n < 0) return WHY("bad view token '%s'", tok);
        int dims[WK_MAX_RANK];
        for (int i = 0; i < n; i++) dims[i] = (int)v[i];
        r = wk_permute(*t, dims, n);
        break;
    }
    default: return WHY("bad view token '%s'", tok);
    }
    if (!r) return WHY("building view '%s' failed: %s", tok, wk_last_error());
    *t = r; /* the previous tensor stays owned by the scope */
    return true;
}

wk_tensor *ou_load_input(const char *dir, const char *spec, wk_dtype dt, bool *noncontig, char *why, size_t cap) {
    char buf[512];
    if (strlen(spec) >= sizeof buf) { SAY("input spec too long"); return NULL; }
    strcpy(buf, spec);
    char *hash = strchr(buf, '#');
    if (hash) {
        *hash = 0;
        if (!wk_dtype_from_name(hash + 1, &dt)) { SAY("bad dtype in input spec '%s'", spec); return NULL; }
    }
    const char *view = "c";
    char *at = strchr(buf, '@');
    if (at) {
        *at = 0;
        view = at + 1;
    }
    wk_tensor *t = ou_load(dir, buf);
    if (!t) { SAY("wk_npy_load(%s) failed: %s", buf, wk_last_error()); return NULL; }
    if (wk_tensor_dtype(t) != dt) {
        t = wk_to_dtype(t, dt);
        if (!t) { SAY("converting input %s to %s failed: %s", buf, wk_dtype_name(dt), wk_last_error()); return NULL; }
    }
    char vbuf[256];
    snprintf(vbuf, sizeof vbuf, "%s", view);
    char *p = vbuf;
    for (;;) {
        char *plus = strchr(p, '+');
        if (plus) *plus = 0;
        if (!ou_apply_view(&t, p, why, cap)) return NULL;
        if (!plus) break;
        p = plus + 1;
    }
    if (!wk_is_contiguous(t)) *noncontig = true;
    return t;
}

bool ou_close(double got, double want, double atol, double rtol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want); /* false for a NaN or an infinite got */
}

bool ou_close_rel(double got, double want, double tol) {
    return (isnan(want) && isnan(got)) || (isinf(want) && got == want) ||
           (!isnan(got) && !isinf(want) && fabs(got - want) <= tol * (1 + fabs(want)));
}

bool ou_same_bits(const wk_tensor *a, const wk_tensor *b) {
    if (!a || !b) return a == b;
    int64_t n = wk_numel(a);
    size_t es = wk_dtype_size(wk_tensor_dtype(a));
    if (n != wk_numel(b) || wk_tensor_dtype(a) != wk_tensor_dtype(b)) return false;
    char *x = malloc((size_t)n * es + 1), *y = malloc((size_t)n * es + 1);
    bool ok = x && y && wk_to_host(a, x, (size_t)n * es) == WK_OK && wk_to_host(b, y, (size_t)n * es) == WK_OK &&
              memcmp(x, y, (size_t)n * es) == 0;
    free(x);
    free(y);
    return ok;
}

void ou_run_manifest(const char *sub, const char *gen, char *dir, size_t cap, void (*run_line)(char *line)) {
    if (!ou_dir(sub, dir, cap)) {
        print_message("WICK_ORACLE_DIR not set: skipping\n");
        skip();
    }
    (void)ou_device(); /* exits with OU_SKIP, saying why, when the device cannot open */
    char path[8192];
    FILE *fp = ou_open_manifest(dir, path, sizeof path);
    if (!fp) fail_msg("cannot open %s (run tests/oracle/%s.py first)", path, gen);
    int saved_threads = wk_num_threads();
    char line[4096];
    while (ou_next_line(fp, line, sizeof line)) run_line(line);
    fclose(fp);
    wk_set_num_threads(saved_threads);
}

/* The element loop of ou_compare_file over want (already the same shape). */
static const char *compare_elements(const wk_tensor *got, const wk_tensor *want, double tol, bool exact_int, char *msg,
                                    size_t cap) {
    int64_t n = wk_numel(want);
    const char *res = NULL;
    if (exact_int) {
        wk_tensor *g64 = wk_to_dtype(got, WK_I64), *w64 = wk_to_dtype(want, WK_I64);
        int64_t *a = malloc(sizeof(int64_t) * (size_t)(n + 1)), *b = malloc(sizeof(int64_t) * (size_t)(n + 1));
        if (!g64 || !w64 || !a || !b || wk_to_host(g64, a, (size_t)n * 8) != WK_OK ||
            wk_to_host(w64, b, (size_t)n * 8) != WK_OK) {
            snprintf(msg, cap, "readback failed: %s", wk_last_error());
            res = msg;
        } else {
            for (int64_t k = 0; k < n && !res; k++)
                if (a[k] != b[k]) {
                    snprintf(msg, cap, "element %lld: got %lld want %lld", (long long)k, (long long)a[k], (long long)b[k]);
                    res = msg;
                }
        }
        free(a);
        free(b);
        wk_tensor_free(g64);
        wk_tensor_free(w64);
        return res;
    }
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

const char *ou_compare_file(const wk_tensor *got, const char *dir, const char *file, double tol, bool exact_int,
                            char *msg, size_t cap) {
    wk_tensor *want = ou_load(dir, file);
    if (!want) {
        snprintf(msg, cap, "cannot load %s: %s", file, wk_last_error());
        return msg;
    }
    const char *res = NULL;
    int rank = wk_rank(want);
    if (wk_rank(got) != rank) {
        snprintf(msg, cap, "rank %d, want %d", wk_rank(got), rank);
        res = msg;
    }
    for (int d = 0; d < rank && !res; d++)
        if (wk_dim(got, d) != wk_dim(want, d)) {
            snprintf(msg, cap, "dim %d is %lld, want %lld", d, (long long)wk_dim(got, d), (long long)wk_dim(want, d));
            res = msg;
        }
    if (!res) res = compare_elements(got, want, tol, exact_int, msg, cap);
    wk_tensor_free(want);
    return res;
}
