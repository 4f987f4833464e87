/* `wick chat -m MODEL [--system TEXT] [options]`: a conversation on
 * stdin / stdout through a chat session (wk_chat_session_*, wick/generate.h),
 * whose KV cache keeps the history: each turn runs only its new tokens.
 *
 * Each line read is one user turn; the reply is streamed to stdout and
 * ended with a newline. On a terminal a "> " prompt is shown; from a pipe
 * stdout gets the replies only, one per turn. Commands: /reset (forget the
 * conversation, keep --system), /exit (or end of input). After each reply
 * stderr gets one line of statistics. Ctrl-C during a reply stops it (what
 * was said stays in the history); at the prompt it ends the program.
 *
 * A turn that fails (the conversation no longer fits the context, say) is
 * reported on stderr and dropped; the conversation goes on, and the exit
 * status is then 1. Options that make no chat session (a bad model, bad
 * flags) exit 1 at once with one line "wick chat: ..." on stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/wick_cli.h"
#include "tools/wick_lm_args.h"
#include "wick/generate.h"
#include "wick/lm.h"

#define DEFAULT_N 1024

static const char USAGE[] =
    "usage: wick chat -m MODEL [options]\n"
    "  -m, --model PATH        a .gguf file or an HF directory with a chat template\n"
    "  --system TEXT           the system message (kept by /reset)\n"
    "  -n, --n-predict N       at most N tokens per reply (default 1024; -1: until the end of the turn)\n"
    "  --temp T                temperature (default 0.8; <= 0: greedy)\n"
    "  --top-k K               keep the K most likely (default 40; 0: off)\n"
    "  --top-p P               nucleus sampling, P in (0, 1] (default 0.95; 1: off)\n"
    "  --min-p P               keep p >= P * p_max, P in [0, 1] (default 0.05; 0: off)\n"
    "  --repeat-penalty R      llama.cpp's repetition penalty (default 1: off)\n"
    "  --repeat-last-n N       ids the penalty looks back over (default 64; -1: all)\n"
    "  --seed S                every reply samples with this seed (default 0)\n"
    "  --stop STR              end a reply before STR (not printed); up to 16\n"
    "  --ignore-eos            do not end a reply at the end-of-turn token\n"
    "  --ctx N                 the conversation uses at most N positions, allocated at once\n"
    "                          (default: the model's context, the cache growing as needed)\n"
    "  --dtype f32|f16|bf16    dtype of the unquantized weights (default f32)\n"
    "  --kv-type f32|f16|bf16  dtype of the KV cache (default f32; f16 halves what decode reads\n"
    "                          over a long context, as llama.cpp's default cache does)\n"
    "  --threads N             CPU threads\n"
    "  --device cpu|cuda[:N]   where the model runs (default cpu)\n"
    "\n"
    "Each line of input is a user turn; the reply goes to stdout, a line of statistics to stderr.\n"
    "Commands: /reset forgets the conversation (not --system), /exit (or end of input) quits.\n"
    "The KV cache keeps the conversation: a turn costs its new tokens, not the history. When the\n"
    "conversation no longer fits the context the turn fails with a message: /reset to go on.\n"
    "Exit status: 0, or 1 when the model could not be loaded or a turn failed.\n";

static volatile sig_atomic_t g_in_reply, g_interrupted;

/* Ctrl-C: stop the reply being written; at the prompt, the usual exit */
static void on_sigint(int sig) {
    if (!g_in_reply) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_interrupted = 1;
}

/* One reply streamed to stdout; its statistics on stderr. 0, or 1 when it
 * failed (reported, and its user turn dropped). */
static int reply(wk_chat_session *s, int turn) {
    wk_gen *g = wk_chat_session_reply(s);
    if (!g) {
        fprintf(stderr, "wick chat: %s\n", wk_last_error());
        wk_chat_session_pop(s); /* the turn that failed */
        return 1;
    }
    g_interrupted = 0;
    g_in_reply = 1;
    wk_gen_token t = {.stop = WK_STOP_NONE};
    wk_status st = WK_OK;
    bool wrote = false, out_failed = false;
    while (!g_interrupted) {
        if ((st = wk_gen_step(g, &t)) != WK_OK) break;
        if (t.n_text) {
            if (fwrite(t.text, 1, t.n_text, stdout) != t.n_text || fflush(stdout) != 0) {
                out_failed = true;
                break;
            }
            wrote = true;
        }
        if (t.stop != WK_STOP_NONE) break;
    }
    g_in_reply = 0;
    (void)wrote;
    fputc('\n', stdout);
    fflush(stdout);
    wk_generate_stats gs;
    wk_gen_stats(g, &gs);
    wk_gen_free(g); /* the reply (also a stopped one) joins the history */
    if (st != WK_OK) {
        fprintf(stderr, "wick chat: %s\n", wk_last_error());
        wk_chat_session_pop(s); /* the user turn the failed reply answered */
        return 1;
    }
    if (out_failed) {
        fprintf(stderr, "wick chat: writing the reply failed: %s\n", strerror(errno));
        return 1;
    }
    int64_t nd = gs.n_generated > 0 ? gs.n_generated - 1 : 0;
    fprintf(stderr,
            "wick chat: turn %d: prompt %lld tokens (%lld cached, prefill %lld in %.1f ms), %lld generated "
            "(%.1f tok/s%s), stopped: %s\n",
            turn, (long long)gs.n_prompt, (long long)(gs.n_prompt - gs.n_prefill), (long long)gs.n_prefill,
            gs.prefill_ms, (long long)gs.n_generated, gs.decode_ms > 0 ? nd * 1e3 / gs.decode_ms : 0.0,
            gs.n_refill ? ", the cache grew and was refilled" : "",
            g_interrupted ? "interrupted" : wk__cli_stop_name(gs.stop_reason));
    return 0;
}

int wk__cli_chat(int argc, char **argv) {
    wk__cli_lm_args a = {.cmd = "chat", .usage = USAGE, .chat_cmd = true, .n = DEFAULT_N};
    int rc = wk__cli_lm_parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    wk_device *dev;
    double load_ms;
    wk_lm *m = wk__cli_lm_load(&a, &dev, &load_ms);
    if (!m) return 1;
    wk_chat_session *s = wk_chat_session_new(m, &a.g);
    if (!s) {
        rc = wk__cli_fail("chat");
        wk_lm_free(m);
        wk__cli_lm_done(&a);
        return rc;
    }
    const bool tty = isatty(STDIN_FILENO);
    if (tty)
        fprintf(stderr, "wick chat: %s loaded in %.1f ms on %s; /reset forgets, /exit quits\n", a.model, load_ms,
                wk_device_name(dev));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    char *line = NULL;
    size_t cap = 0;
    int turn = 0;
    for (;;) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break; /* end of input */
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) break;
        if (!strcmp(line, "/reset")) {
            wk_chat_session_reset(s);
            turn = 0;
            fprintf(stderr, "wick chat: the conversation was reset\n");
            continue;
        }
        if (line[0] == '/' && line[1] != '/' && line[1] != ' ') {
            fprintf(stderr, "wick chat: unknown command '%s' (/reset, /exit; start a line with // to send a '/')\n",
                    line);
            continue;
        }
        const char *text = line[0] == '/' && line[1] == '/' ? line + 1 : line;
        if (wk_chat_session_add(s, "user", text) != WK_OK) {
            rc = wk__cli_fail("chat");
            break;
        }
        rc |= reply(s, ++turn);
    }
    free(line);
    wk_chat_session_free(s);
    wk_lm_free(m);
    wk__cli_lm_done(&a); /* --tp 1 under MPI */
    return rc;
}
