/* The token sampler (src/model/sampler.c): every filter against numpy's
 * reference (tests/oracle/gen_sampler.py: which ids survive, their
 * probabilities, and the ids a seeded draw gives), hand-worked cases,
 * draw frequencies against the filtered distribution (chi-square, fixed
 * seed, so the verdict is deterministic), seeds, and bad options. */
#include "testutil.h"
#include "oracle_util.h"
#include "model/sampler.h"
#include "wick/generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wk_sampler *make(double temp, int64_t top_k, double top_p, double min_p, double rp, int64_t last_n,
                        uint64_t seed) {
    wk_sampler_opts o;
    wk_sampler_opts_default(&o);
    o.temperature = temp;
    o.top_k = top_k;
    o.top_p = top_p;
    o.min_p = min_p;
    o.repeat_penalty = rp;
    o.repeat_last_n = last_n;
    o.seed = seed;
    wk_sampler *s = wk_sampler_new(&o);
    if (!s) fail_msg("wk_sampler_new: %s", wk_last_error());
    return s;
}

/* survivors of the filters, as a compact list */
static int64_t survivors(wk_sampler *s, const float *l, int64_t n, const int32_t *h, int64_t nh, int32_t *ids,
                         double *p) {
    const int32_t *ri;
    const double *rp;
    int64_t k = wk__sampler_filter(s, l, n, h, nh, &ri, &rp);
    if (k < 0) fail_msg("wk__sampler_filter: %s", wk_last_error());
    for (int64_t i = 0; i < k; i++) {
        ids[i] = ri[i];
        if (p) p[i] = rp[i];
    }
    return k;
}

/* ---- numpy's reference ---- */

static void *load_raw(const char *dir, const char *file, wk_dtype want, int64_t *n) {
    wk_tensor *t = ou_load(dir, file);
    if (!t) fail_msg("cannot load %s/%s: %s", dir, file, wk_last_error());
    assert_int_equal(wk_tensor_dtype(t), want);
    *n = wk_numel(t);
    size_t bytes = (size_t)*n * (want == WK_F64 ? 8 : 4) + 8;
    void *buf = malloc(bytes);
    assert_non_null(buf);
    TU_STATUS_OK(wk_to_host(t, buf, (size_t)*n * (want == WK_F64 ? 8 : 4)));
    wk_tensor_free(t);
    return buf;
}

static void test_oracle_cases(void **state) {
    (void)state;
    char dir[4096];
    if (!ou_dir("sampler", dir, sizeof dir)) {
        printf("skip: WICK_ORACLE_DIR is not set (ctest runs tests/oracle/gen_sampler.py first)\n");
        skip();
    }
    char path[4200];
    FILE *f = ou_open_manifest(dir, path, sizeof path);
    if (!f) fail_msg("cannot open %s (written by tests/oracle/gen_sampler.py)", path);
    char line[1024];
    int total = 0, failed = 0;
    while (ou_next_line(f, line, sizeof line)) {
        int id;
        char lf[64], hf[64], idf[64], pf[64], df[64];
        double temp, top_p, min_p, rp;
        long long top_k, last_n;
        if (sscanf(line, "%d %63s %63s %lf %lld %lf %lf %lf %lld %63s %63s %63s", &id, lf, hf, &temp, &top_k, &top_p,
                   &min_p, &rp, &last_n, idf, pf, df) != 12)
            fail_msg("bad manifest line: %s", line);
        total++;
        int64_t n, nh = 0, nw, np, nd;
        float *l = load_raw(dir, lf, WK_F32, &n);
        int32_t *h = strcmp(hf, "-") ? load_raw(dir, hf, WK_I32, &nh) : NULL;
        int32_t *want = load_raw(dir, idf, WK_I32, &nw);
        double *wp = load_raw(dir, pf, WK_F64, &np);
        int32_t *wd = load_raw(dir, df, WK_I32, &nd);
        int32_t *got = malloc((size_t)n * sizeof *got);
        double *gp = malloc((size_t)n * sizeof *gp);
        assert_true(got && gp);
        wk_sampler *s = make(temp, top_k, top_p, min_p, rp, last_n, (uint64_t)(0x5EED + id));
        int64_t k = survivors(s, l, n, h, nh, got, gp);
        bool ok = k == nw;
        for (int64_t i = 0; ok && i < k; i++) ok = got[i] == want[i] && fabs(gp[i] - wp[i]) <= 1e-12 + 1e-9 * wp[i];
        if (!ok) printf("case %d (%s): %lld survivors, want %lld (first %d, want %d)\n", id, line, (long long)k,
                        (long long)nw, k ? got[0] : -1, nw ? want[0] : -1);
        /* the same sampler draws: the filter call above used no randomness */
        for (int64_t i = 0; ok && i < nd; i++) {
            int32_t d = wk_sampler_sample(s, l, n, h, nh);
            if (d != wd[i]) {
                printf("case %d: draw %lld is %d, numpy's xoshiro gives %d\n", id, (long long)i, d, wd[i]);
                ok = false;
            }
        }
        failed += !ok;
        wk_sampler_free(s);
        free(l);
        free(h);
        free(want);
        free(wp);
        free(wd);
        free(got);
        free(gp);
    }
    fclose(f);
    printf("sampler oracle: %d cases, %d failed\n", total, failed);
    assert_true(total >= 50);
    assert_int_equal(failed, 0);
}

/* ---- hand-worked cases ---- */

static void test_greedy(void **state) {
    (void)state;
    float l[5] = {1, 3, 3, 2, -INFINITY};
    wk_sampler *s = make(0, 0, 1, 0, 1, 64, 0);
    assert_int_equal(wk_sampler_sample(s, l, 5, NULL, 0), 1); /* tie 1 / 2: the lower id */
    wk_sampler_free(s);
    /* with a penalty: positive logits are divided, others multiplied */
    float a[2] = {2, 1.5f}, b[2] = {-1, -1.5f};
    int32_t h[3] = {0, 0, 0};
    s = make(-1, 0, 1, 0, 2, 64, 0);
    assert_int_equal(wk_sampler_sample(s, a, 2, h, 3), 1); /* 2 / 2 = 1 < 1.5 */
    assert_int_equal(wk_sampler_sample(s, b, 2, h, 3), 1); /* -1 * 2 = -2 < -1.5 */
    assert_int_equal(wk_sampler_sample(s, a, 2, h, 0), 0); /* no history */
    wk_sampler_free(s);
    /* the window: only the last repeat_last_n ids count */
    int32_t h2[3] = {0, 1, 1};
    float c[2] = {1.9f, 2};
    s = make(0, 0, 1, 0, 2, 2, 0);
    assert_int_equal(wk_sampler_sample(s, c, 2, h2, 3), 0); /* 1.9 vs 2 / 2: id 0 is outside the window */
    wk_sampler_free(s);
    s = make(0, 0, 1, 0, 2, 3, 0);
    assert_int_equal(wk_sampler_sample(s, c, 2, h2, 3), 1); /* 0.95 vs 1: id 1 penalised once, not twice */
    wk_sampler_free(s);
    s = make(0, 0, 1, 0, 2, -1, 0);
    assert_int_equal(wk_sampler_sample(s, c, 2, h2, 3), 1); /* < 0: the whole history */
    wk_sampler_free(s);
}

static void test_filters_by_hand(void **state) {
    (void)state;
    /* probabilities 0.1 0.2 0.3 0.4 at temperature 1 */
    float l[4] = {logf(1), logf(2), logf(3), logf(4)};
    int32_t ids[4];
    double p[4];
    wk_sampler *s = make(1, 2, 1, 0, 1, 64, 0); /* top-k 2 */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 2);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 2);
    assert_true(fabs(p[0] - 4.0 / 7) < 1e-6 && fabs(p[1] - 3.0 / 7) < 1e-6);
    wk_sampler_free(s);
    s = make(1, 0, 0.35, 0, 1, 64, 0); /* top-p: 0.4 alone reaches 0.35 */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 1);
    assert_int_equal(ids[0], 3);
    wk_sampler_free(s);
    s = make(1, 0, 0.5, 0, 1, 64, 0); /* 0.4 + 0.3 reaches 0.5 */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 2);
    wk_sampler_free(s);
    s = make(1, 0, 0.75, 0, 1, 64, 0); /* 0.4 + 0.3 + 0.2 */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 3);
    wk_sampler_free(s);
    s = make(1, 0, 1, 0.6, 1, 64, 0); /* min-p: p >= 0.6 * 0.4 = 0.24 */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 2);
    wk_sampler_free(s);
    s = make(1, 0, 1, 1, 1, 64, 0); /* min-p 1: only the max */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 1);
    wk_sampler_free(s);
    /* temperature 0.5 squares the odds: 1 : 4 : 9 : 16 over 30 (no filter
     * is on, so the ids stay in order) */
    s = make(0.5, 0, 1, 0, 1, 64, 0);
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 4);
    assert_int_equal(ids[0], 0);
    assert_true(fabs(p[0] - 1.0 / 30) < 1e-6 && fabs(p[3] - 16.0 / 30) < 1e-6);
    wk_sampler_free(s);
    /* penalty 2 on id 3: log 4 / 2 = log 2 ties id 1; the lower id goes
     * first (a min-p that cuts nothing turns the ordering on) */
    int32_t h[2] = {3, 3};
    s = make(1, 0, 1, 1e-6, 2, 64, 0);
    assert_int_equal(survivors(s, l, 4, h, 2, ids, p), 4);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 1);
    assert_int_equal(ids[2], 3);
    assert_true(fabs(p[1] - p[2]) < 1e-6);
    wk_sampler_free(s);
    /* the filters run in llama.cpp's order: top-p over the top-k survivors
     * (renormalised), so top-k 2 + top-p 0.6 keeps both (0.4/0.7 < 0.6) */
    s = make(1, 2, 0.6, 0, 1, 64, 0);
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 2);
    wk_sampler_free(s);
    s = make(1, 2, 0.55, 0, 1, 64, 0); /* 4/7 = 0.571 reaches 0.55 */
    assert_int_equal(survivors(s, l, 4, NULL, 0, ids, p), 1);
    wk_sampler_free(s);
}

/* ---- frequencies ---- */

/* The chi-square statistic of counts against probabilities. */
static double chi2(const long *count, const double *p, int k, long n) {
    double x = 0;
    for (int i = 0; i < k; i++) {
        double e = p[i] * (double)n;
        x += ((double)count[i] - e) * ((double)count[i] - e) / e;
    }
    return x;
}

/* Upper 0.1% point of chi-square with df degrees (Wilson-Hilferty). */
static double chi2_crit(int df) {
    double a = 2.0 / (9.0 * df), z = 3.0902;
    return df * pow(1 - a + z * sqrt(a), 3);
}

static void test_frequencies(void **state) {
    (void)state;
    enum { N = 12, DRAWS = 60000 };
    float l[N];
    for (int i = 0; i < N; i++) l[i] = (float)(0.37 * ((i * 7) % N) - 1.5);
    wk_sampler *s = make(0.7, 8, 0.9, 0.02, 1, 64, 2024);
    int32_t ids[N];
    double p[N];
    int k = (int)survivors(s, l, N, NULL, 0, ids, p);
    assert_true(k >= 3 && k < N); /* the filters cut something, and leave a choice */
    long count[N] = {0};
    for (int d = 0; d < DRAWS; d++) {
        int32_t id = wk_sampler_sample(s, l, N, NULL, 0);
        int j = 0;
        while (j < k && ids[j] != id) j++;
        if (j == k) fail_msg("drew id %d, which the filters removed", id);
        count[j]++;
    }
    double x = chi2(count, p, k, DRAWS), crit = chi2_crit(k - 1);
    printf("chi-square %.2f over %d survivors (0.1%% point %.2f)\n", x, k, crit);
    assert_true(x < crit);
    /* the statistic does see a wrong distribution: the survivors at
     * temperature 1 instead of 0.7 */
    double q[N], z = 0;
    for (int j = 0; j < k; j++) z += q[j] = exp(l[ids[j]] - l[ids[0]]);
    for (int j = 0; j < k; j++) q[j] /= z;
    assert_true(chi2(count, q, k, DRAWS) > 10 * crit);
    wk_sampler_free(s);
}

/* ---- seeds ---- */

static void test_seeds(void **state) {
    (void)state;
    /* the PRNG stream is pinned (numpy's xoshiro256** in gen_sampler.py
     * gives the same numbers), so a seed means the same on every machine */
    wk_sampler *s = make(1, 0, 1, 0, 1, 64, 12345);
    assert_true(wk__sampler_uniform(s) == 0x1.7cd46c6e82c1ap-1);
    assert_true(wk__sampler_uniform(s) == 0x1.0a555031bd344p-3);
    assert_true(wk__sampler_uniform(s) == 0x1.ed3a2dbd32a9ap-1);
    wk_sampler_free(s);

    enum { N = 64, DRAWS = 200 };
    float l[N];
    for (int i = 0; i < N; i++) l[i] = (float)sin(i * 1.7) * 2;
    int32_t a[DRAWS], b[DRAWS], c[DRAWS];
    wk_sampler *sa = make(1, 0, 1, 0, 1, 64, 42), *sb = make(1, 0, 1, 0, 1, 64, 42), *sc = make(1, 0, 1, 0, 1, 64, 43);
    for (int i = 0; i < DRAWS; i++) {
        a[i] = wk_sampler_sample(sa, l, N, NULL, 0);
        b[i] = wk_sampler_sample(sb, l, N, NULL, 0);
        c[i] = wk_sampler_sample(sc, l, N, NULL, 0);
    }
    assert_memory_equal(a, b, sizeof a);
    int differ = 0;
    for (int i = 0; i < DRAWS; i++) differ += a[i] != c[i];
    assert_true(differ > DRAWS / 2);
    wk_sampler_free(sa);
    wk_sampler_free(sb);
    wk_sampler_free(sc);
}

/* ---- errors ---- */

static void bad_opts(double temp, int64_t top_k, double top_p, double min_p, double rp) {
    wk_sampler_opts o;
    wk_sampler_opts_default(&o);
    o.temperature = temp;
    o.top_k = top_k;
    o.top_p = top_p;
    o.min_p = min_p;
    o.repeat_penalty = rp;
    wk_clear_error();
    wk_sampler *s = wk_sampler_new(&o);
    if (s) fail_msg("options temp %g top_k %lld top_p %g min_p %g rp %g were accepted", temp, (long long)top_k, top_p,
                    min_p, rp);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_sampler_new"));
}

static void test_errors(void **state) {
    (void)state;
    bad_opts(0.8, 40, 0, 0.05, 1);
    bad_opts(0.8, 40, -0.5, 0.05, 1);
    bad_opts(0.8, 40, NAN, 0.05, 1);
    bad_opts(NAN, 40, 0.9, 0.05, 1);
    bad_opts(0.8, 40, 0.9, 1.5, 1);
    bad_opts(0.8, 40, 0.9, NAN, 1);
    bad_opts(0.8, 40, 0.9, 0.05, 0);
    bad_opts(0.8, 40, 0.9, 0.05, -1);
    bad_opts(0.8, 40, 0.9, 0.05, NAN);
    bad_opts(0.8, 40, 0.9, 0.05, INFINITY);
    wk_clear_error();
    assert_null(wk_sampler_new(NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);

    for (int greedy = 0; greedy < 2; greedy++) {
        wk_sampler *s = make(greedy ? 0 : 0.8, 40, 0.95, 0.05, 1.1, 64, 0);
        float nan_l[3] = {1, NAN, 2}, inf_l[3] = {1, INFINITY, 2};
        float none[3] = {-INFINITY, -INFINITY, -INFINITY}, ok[3] = {1, 2, 3};
        wk_clear_error();
        assert_int_equal(wk_sampler_sample(s, nan_l, 3, NULL, 0), -1);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "NaN"));
        wk_clear_error();
        assert_int_equal(wk_sampler_sample(s, inf_l, 3, NULL, 0), -1);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        wk_clear_error();
        assert_int_equal(wk_sampler_sample(s, none, 3, NULL, 0), -1);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        wk_clear_error();
        int32_t h[2] = {1, 3};
        assert_int_equal(wk_sampler_sample(s, ok, 3, h, 2), -1);
        assert_int_equal(wk_last_status(), WK_ERR_INDEX);
        wk_clear_error();
        assert_int_equal(wk_sampler_sample(s, ok, 3, NULL, 2), -1);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        wk_clear_error();
        assert_int_equal(wk_sampler_sample(s, NULL, 3, NULL, 0), -1);
        assert_int_equal(wk_sampler_sample(s, ok, 0, NULL, 0), -1);
        assert_int_equal(wk_sampler_sample(NULL, ok, 3, NULL, 0), -1);
        /* still usable after the errors, and the penalty marks were cleared:
         * id 1 unpenalised here */
        wk_clear_error();
        int32_t h1[1] = {2};
        int32_t id = wk_sampler_sample(s, ok, 3, h1, 1);
        assert_true(id >= 0 && id < 3);
        if (greedy) assert_int_equal(id, 2); /* 3 / 1.1 still the largest */
        wk_sampler_free(s);
    }
    wk_sampler_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oracle_cases), cmocka_unit_test(test_greedy), cmocka_unit_test(test_filters_by_hand),
        cmocka_unit_test(test_frequencies),  cmocka_unit_test(test_seeds),  cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
