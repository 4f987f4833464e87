/* What `wick generate` and `wick chat` share: their options (the sampling
 * flags, stop strings, context, device, dtype), loading the model with a
 * loading bar, the stop reasons' names and the one-line error. */
#ifndef WICK_TOOLS_LM_ARGS_H
#define WICK_TOOLS_LM_ARGS_H
#include <stdbool.h>
#include <stdint.h>
#include "wick/generate.h"
#include "wick/lm.h"

#define WK__CLI_MAX_STOPS 16

typedef struct wk__cli_lm_args {
    const char *cmd;   /* "generate" or "chat": error lines start "wick CMD: " */
    const char *usage; /* printed by --help */
    bool chat_cmd;     /* wick chat: no -p / --chat (every turn is a chat turn) */
    const char *model, *prompt, *device, *dtype, *kv_type;
    int64_t n, threads, ctx;
    /* --tp N: tensor parallel over the N processes of an MPI job (0: not
     * asked); comm is the job's world while the model lives, rank its rank
     * (only rank 0 prints the text and the timings); --pp N: pipeline
     * parallel likewise (tools/wick_lm_pp.c) */
    int64_t tp, pp;
    wk_comm *comm;
    int rank;
    wk_generate_opts g;
    const char *stops[WK__CLI_MAX_STOPS];
} wk__cli_lm_args;

/* "wick CMD: ..." and a newline on stderr; returns 1 (the exit status). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int wk__cli_lm_fail(const wk__cli_lm_args *a, const char *fmt, ...);

/* Parse argv (after the subcommand) into a, whose cmd, usage, chat_cmd and
 * n (the default -n) the caller set. 0: go on; -1: --help was printed;
 * 1: an error was printed. */
int wk__cli_lm_parse(int argc, char **argv, wk__cli_lm_args *a);

/* Threads, device and the model (a loading bar on a terminal's stderr);
 * NULL after printing the error. *load_ms: the load's time. */
wk_lm *wk__cli_lm_load(wk__cli_lm_args *a, wk_device **dev, double *load_ms);
/* After the model is freed: the --tp communicator (MPI_Finalize). */
void wk__cli_lm_done(wk__cli_lm_args *a);
/* ---- pipeline parallel (tools/wick_lm_pp.c) ---- */
/* --pp N: the MPI world (its size must be N) into a->comm and the load
 * options; 0 to go on, 1 after printing the error. */
int wk__cli_pp_attach(wk__cli_lm_args *a, wk_lm_load_opts *lo);

const char *wk__cli_stop_name(wk_stop_reason r);
double wk__cli_now_ms(void);

#endif
