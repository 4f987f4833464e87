/* WICK_* environment variables (base/env.c): one parser for all of them.
 * Each case runs this binary again (--probe) with some variables set and
 * reads back what it printed: the value each variable resolved to, what the
 * library then did (SIMD level, threads, cache limit, GEMM blocking), and
 * the "wick: ... ignored: ..." lines on stderr. In process: a variable is
 * read once (changing it later has no effect until wk__env_reload). */
#include "testutil.h"

#include "base/env.h"
#include "cpu/memory/cpu_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_self[4096];

/* The child: every variable's resolved value, twice (queries after the
 * first must not report again), and the behaviour it drives. */
static int probe(void) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < WK_ENV_COUNT; i++) {
            int64_t v = -1;
            bool set = wk__env_get((wk_env_id)i, &v);
            if (pass == 0) printf("var %s %s %lld\n", wk__env_name((wk_env_id)i), set ? "set" : "unset", (long long)v);
        }
    printf("isa %s\n", wk_cpu_isa());
    printf("threads %d\n", wk_num_threads());
    wk_cpu_mem_stats ms;
    wk_cpu_mem_stats_get(&ms);
    printf("cache_mb %zu\n", ms.cache_limit >> 20);
    int64_t kc, mc, nc;
    wk__gemm_blocking(8, 16, 4, &kc, &mc, &nc);
    printf("gemm %lld %lld %lld\n", (long long)kc, (long long)mc, (long long)nc);
    return 0;
}

typedef struct child_out {
    char text[16384]; /* stdout and stderr, in order */
    int warnings;     /* lines starting "wick: " */
} child_out;

/* Run the probe with `assign` (e.g. "WICK_ISA=bogus WICK_GEMM_KC=-5") and
 * every other WICK_* variable removed. */
static void run_child(const char *assign, child_out *o) {
    char cmd[8192];
    size_t p = (size_t)snprintf(cmd, sizeof cmd, "env");
    for (int i = 0; i < WK_ENV_COUNT; i++) p += (size_t)snprintf(cmd + p, sizeof cmd - p, " -u %s", wk__env_name((wk_env_id)i));
    snprintf(cmd + p, sizeof cmd - p, " %s '%s' --probe 2>&1", assign, g_self);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    o->text[0] = 0;
    o->warnings = 0;
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "wick: ", 6) == 0) o->warnings++;
        size_t l = strlen(line);
        if (n + l < sizeof o->text) { memcpy(o->text + n, line, l + 1); n += l; }
    }
    assert_int_equal(pclose(f), 0);
}

/* The value the child printed for a line "key ..." (the rest of the line). */
static const char *field(const child_out *o, const char *key, char *buf, size_t cap) {
    char pat[128];
    snprintf(pat, sizeof pat, "\n%s ", key);
    char all[sizeof o->text + 1];
    snprintf(all, sizeof all, "\n%s", o->text);
    const char *s = strstr(all, pat);
    if (!s) fail_msg("child printed no '%s':\n%s", key, o->text);
    s += strlen(pat);
    size_t i = 0;
    while (s[i] && s[i] != '\n' && i + 1 < cap) { buf[i] = s[i]; i++; }
    buf[i] = 0;
    return buf;
}

static void expect_field(const child_out *o, const char *key, const char *want) {
    char b[256];
    if (strcmp(field(o, key, b, sizeof b), want) != 0)
        fail_msg("%s: got '%s', want '%s'\n%s", key, b, want, o->text);
}

static child_out g_default; /* nothing set */

static void test_defaults_are_quiet(void **state) {
    (void)state;
    if (!g_self[0]) skip();
    run_child("", &g_default);
    assert_int_equal(g_default.warnings, 0);
    for (int i = 0; i < WK_ENV_COUNT; i++) {
        char key[64];
        snprintf(key, sizeof key, "var %s", wk__env_name((wk_env_id)i));
        expect_field(&g_default, key, "unset -1");
    }
    expect_field(&g_default, "cache_mb", "1024");
    /* an empty value is "unset", not an error */
    child_out o;
    run_child("WICK_ISA= WICK_GEMM_KC= WICK_NUM_THREADS=", &o);
    assert_int_equal(o.warnings, 0);
    expect_field(&o, "var WICK_ISA", "unset -1");
}

/* The two values of the issue, with the exact message. */
static void test_issue_values_reported(void **state) {
    (void)state;
    if (!g_self[0]) skip();
    child_out o;
    run_child("WICK_ISA=bogus WICK_GEMM_KC=-5", &o);
    if (!strstr(o.text, "wick: WICK_ISA=bogus ignored: must be one of avx512, avx2, scalar, auto\n"))
        fail_msg("no WICK_ISA message:\n%s", o.text);
    if (!strstr(o.text, "wick: WICK_GEMM_KC=-5 ignored: must be an integer in [1, 1048576]\n"))
        fail_msg("no WICK_GEMM_KC message:\n%s", o.text);
    assert_int_equal(o.warnings, 2); /* once each, though queried twice */
    char b[256], d[256];
    /* the defaults apply */
    assert_string_equal(field(&o, "isa", b, sizeof b), field(&g_default, "isa", d, sizeof d));
    assert_string_equal(field(&o, "gemm", b, sizeof b), field(&g_default, "gemm", d, sizeof d));
    expect_field(&o, "var WICK_ISA", "unset -1");
    expect_field(&o, "var WICK_GEMM_KC", "unset -1");
}

/* Every variable: good values apply, bad values are reported and ignored. */
static void test_every_variable(void **state) {
    (void)state;
    if (!g_self[0]) skip();
    child_out o;
    char b[256], d[256];
    run_child("WICK_ISA=scalar WICK_NUM_THREADS=3 WICK_CPU_CACHE_MB=' 7 ' WICK_GEMM_KC=256 WICK_GEMM_MC=64 "
              "WICK_GEMM_NC=512 WICK_BF16_KERNEL=FMA WICK_CUDA_TF32=1",
              &o);
    assert_int_equal(o.warnings, 0);
    expect_field(&o, "isa", "scalar");
    expect_field(&o, "threads", "3");
    expect_field(&o, "cache_mb", "7");
    expect_field(&o, "gemm", "256 64 512");
    expect_field(&o, "var WICK_ISA", "set 2");
    expect_field(&o, "var WICK_BF16_KERNEL", "set 1");
    expect_field(&o, "var WICK_CUDA_TF32", "set 1");
    run_child("WICK_BF16_KERNEL=dp WICK_CUDA_TF32=0 WICK_CPU_CACHE_MB=0", &o);
    assert_int_equal(o.warnings, 0);
    expect_field(&o, "var WICK_BF16_KERNEL", "set 0");
    expect_field(&o, "var WICK_CUDA_TF32", "set 0");
    expect_field(&o, "cache_mb", "0");

    static const struct { const char *var, *value, *rule; } bad[] = {
        {"WICK_NUM_THREADS", "0", "an integer in [1, 1024]"},
        {"WICK_NUM_THREADS", "1025", "an integer in [1, 1024]"},
        {"WICK_NUM_THREADS", "4x", "an integer in [1, 1024]"},
        {"WICK_CPU_CACHE_MB", "-1", "an integer in [0, 1099511627776]"},
        {"WICK_CPU_CACHE_MB", "99999999999999999999", "an integer in [0, 1099511627776]"},
        {"WICK_ISA", "avx", "one of avx512, avx2, scalar, auto"},
        {"WICK_GEMM_KC", "0", "an integer in [1, 1048576]"},
        {"WICK_GEMM_MC", "12abc", "an integer in [1, 1048576]"},
        {"WICK_GEMM_NC", "1048577", "an integer in [1, 1048576]"},
        {"WICK_GEMM_NC", "1e3", "an integer in [1, 1048576]"},
        {"WICK_BF16_KERNEL", "dpx", "one of dp, fma"},
        {"WICK_CUDA_TF32", "yes", "0 or 1"},
        {"WICK_CUDA_TF32", "2", "0 or 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char assign[256], want[256], key[64];
        snprintf(assign, sizeof assign, "%s='%s'", bad[i].var, bad[i].value);
        run_child(assign, &o);
        snprintf(want, sizeof want, "wick: %s=%s ignored: must be %s\n", bad[i].var, bad[i].value, bad[i].rule);
        if (!strstr(o.text, want)) fail_msg("%s: no '%s' in:\n%s", assign, want, o.text);
        assert_int_equal(o.warnings, 1);
        snprintf(key, sizeof key, "var %s", bad[i].var);
        expect_field(&o, key, "unset -1");
        /* behaviour is the default one */
        static const char *keys[] = {"isa", "threads", "cache_mb", "gemm"};
        for (int k = 0; k < 4; k++)
            if (strcmp(field(&o, keys[k], b, sizeof b), field(&g_default, keys[k], d, sizeof d)) != 0)
                fail_msg("%s: %s is '%s', default '%s'", assign, keys[k], b, d);
    }
    /* several bad at once: each reported once */
    run_child("WICK_ISA=x WICK_GEMM_KC=x WICK_GEMM_MC=x WICK_BF16_KERNEL=x WICK_CUDA_TF32=x", &o);
    assert_int_equal(o.warnings, 5);
}

/* Read once: a later setenv changes nothing until the table is re-read. */
static void test_read_once(void **state) {
    (void)state;
    int64_t v = -1;
    setenv("WICK_BF16_KERNEL", "dp", 1);
    wk__env_reload();
    assert_true(wk__env_get(WK_ENV_BF16_KERNEL, &v));
    assert_int_equal(v, WK_ENV_BF16_DP);
    setenv("WICK_BF16_KERNEL", "fma", 1);
    assert_true(wk__env_get(WK_ENV_BF16_KERNEL, &v));
    assert_int_equal(v, WK_ENV_BF16_DP); /* still the first value */
    wk__env_reload();
    assert_true(wk__env_get(WK_ENV_BF16_KERNEL, &v));
    assert_int_equal(v, WK_ENV_BF16_FMA);
    unsetenv("WICK_BF16_KERNEL");
    wk__env_reload();
    assert_false(wk__env_get(WK_ENV_BF16_KERNEL, &v));
    assert_false(wk__env_get(WK_ENV_COUNT, &v));
    assert_string_equal(wk__env_name(WK_ENV_GEMM_KC), "WICK_GEMM_KC");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) return probe();
    ssize_t len = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    g_self[len > 0 ? len : 0] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_quiet),
        cmocka_unit_test(test_issue_values_reported),
        cmocka_unit_test(test_every_variable),
        cmocka_unit_test(test_read_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
