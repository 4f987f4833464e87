/* `wick chat` (tools/wick_chat.c) run as a program through a pipe on the
 * real SmolLM2 Q4_1 GGUF (WICK_SMOLLM2_GGUF; the binary is WICK_CLI; ctest
 * label `model`; skipped without either):
 *
 * - two lines in, two non-empty replies out (one line each), two lines of
 *   statistics on stderr; the second turn's prefill is smaller than its
 *   whole prompt (the first turn and its reply came from the cache), and
 *   the first turn's prompt and reply are all cached;
 * - /reset and an unknown command; end of input ends the program, status 0;
 * - a conversation that outgrows --ctx: the turn fails with a message on
 *   stderr, the next turn still gets a reply, the status is 1;
 * - bad flags (-p, no -m) exit 1 with one line on stderr, nothing on stdout. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_testutil.h"

static int setup(void **state) {
    (void)state;
    return cli_setup("wick_chat_cli_");
}

/* input (written to a file) | wick chat ARGS > stdout 2> stderr */
static void run(result *r, const char *input, const char *args) {
    char in[600], cmd[4096];
    snprintf(in, sizeof in, "%s/stdin", g_dir);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    fputs(input, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' chat %s < '%s/stdin' > '%s/stdout' 2> '%s/stderr'", g_cli, args, g_dir, g_dir,
             g_dir);
    int st = system(cmd);
    r->rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char p[600];
    snprintf(p, sizeof p, "%s/stdout", g_dir);
    slurp(p, r->out, sizeof r->out);
    snprintf(p, sizeof p, "%s/stderr", g_dir);
    slurp(p, r->err, sizeof r->err);
    printf("--- rc %d\n--- stdout:\n%s--- stderr:\n%s", r->rc, r->out, r->err);
}

/* "turn K: prompt P tokens (C cached, prefill N in" of the n-th stats line */
static bool turn_stats(const char *err, int nth, long *prompt, long *cached, long *prefill) {
    const char *p = err;
    for (int i = 0; i <= nth; i++) {
        p = strstr(p, ": turn ");
        if (!p) return false;
        p += 7;
    }
    int k;
    return sscanf(p, "%d: prompt %ld tokens (%ld cached, prefill %ld in", &k, prompt, cached, prefill) == 4;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static char g_args[1024];
static const char *args(const char *extra) {
    snprintf(g_args, sizeof g_args, "-m '%s' --temp 0 -n 24 %s", g_gguf, extra);
    return g_args;
}

static void test_two_turns(void **state) {
    (void)state;
    need_both();
    result r;
    run(&r, "What is the capital of France?\nAnd what river flows through it?\n",
        args("--system 'You are a concise assistant.'"));
    assert_int_equal(r.rc, 0);
    /* two replies, each a non-empty line */
    assert_int_equal(count_lines(r.out), 2);
    char *nl = strchr(r.out, '\n');
    assert_true(nl > r.out);
    assert_true(nl[1] != '\n' && nl[1] != 0);
    long p1, c1, f1, p2, c2, f2;
    assert_true(turn_stats(r.err, 0, &p1, &c1, &f1));
    assert_true(turn_stats(r.err, 1, &p2, &c2, &f2));
    assert_int_equal(c1, 0);
    assert_int_equal(f1, p1);
    assert_true(p2 > p1);
    assert_true(f2 < p2);      /* the history came from the cache */
    assert_true(c2 > p1);      /* the first prompt and (part of) its reply */
    assert_true(f2 < p2 - p1); /* fewer than what turn 2 added to the conversation */
}

static void test_commands(void **state) {
    (void)state;
    need_both();
    result r;
    run(&r, "Hi\n/bogus\n/reset\n\nHi\n/exit\nnever read\n", args(""));
    assert_int_equal(r.rc, 0);
    assert_int_equal(count_lines(r.out), 2);
    assert_non_null(strstr(r.err, "unknown command '/bogus'"));
    assert_non_null(strstr(r.err, "reset"));
    long p1, c1, f1, p2, c2, f2;
    assert_true(turn_stats(r.err, 0, &p1, &c1, &f1));
    assert_true(turn_stats(r.err, 1, &p2, &c2, &f2));
    assert_int_equal(p1, p2);     /* after /reset: the same first turn */
    assert_int_equal(f2, 1);      /* ... all in the cache but the last token */
}

static void test_context_full(void **state) {
    (void)state;
    need_both();
    char in[4096] = "Hi\n";
    for (int i = 0; i < 30; i++) strcat(in, "tell me more about it ");
    strcat(in, "\nBye\n");
    result r;
    run(&r, in, args("--ctx 80 -n 8"));
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "more than the context of 80"));
    assert_int_equal(count_lines(r.out), 2); /* Hi's and Bye's replies */
}

static void test_bad_flags(void **state) {
    (void)state;
    need_both();
    result r;
    run(&r, "", args("-p hello"));
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "wick chat: unknown option '-p'"));
    run(&r, "", "--temp 0");
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "wick chat: -m MODEL is required"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_turns),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_context_full),
        cmocka_unit_test(test_bad_flags),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
