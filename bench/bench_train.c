/*
 * bench/train — a training step (forward + mean cross-entropy + backward +
 * AdamW step) of the two training examples' models beside PyTorch, and the
 * peak memory of one forward + backward pass.
 *
 *   bench_train [--quick] [--steps N] [--no-peer] [--python PATH]
 *
 * Models (examples/digits_model.h, examples/char_model.h), f32, CPU:
 *   digits: the CNN, batch 32 of 8x8 images (random values)
 *   char:   the transformer, batch 16 x 64 bytes of GPL-3, d 64, 4 heads,
 *           2 layers (--quick: batch 4 x 32, d 32)
 * Step time: median of N steps (20; --quick 3) after 2 warm-up steps, at 1
 * and 2 threads (wk_set_num_threads / torch.set_num_threads); the peer is
 * bench/train_peer.py (Debian's torch 1.13, /usr/bin/python3) started from
 * this program so both run in the same machine state. "vs torch" = torch
 * time / wick time (above 1: wick is faster).
 *
 * Memory: each measurement is a fresh process (this program re-executed
 * with --mem MODEL, and train_peer.py mem MODEL) that builds the model and
 * one batch, reads its resident size (VmRSS), runs one forward + backward
 * (gradients of every parameter kept), and reports its resident high-water
 * mark (VmHWM) minus that: the same method for both, since tracemalloc does
 * not see torch's allocator. wick also reports its allocator's exact peak of
 * live tensor bytes over the pass (wk_cpu_mem_stats_get: peak_in_use minus
 * bytes_in_use before; "fwd alloc" the same by the end of the forward pass,
 * i.e. what the graph saved). "vs torch" = wick RSS delta / torch RSS delta
 * (below 1: wick needs less). Exit 1 if a wick call fails; a missing peer
 * prints n/a.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "peer.h"
#include "wick/train.h"
#include "../examples/char_model.h"
#include "../examples/digits_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif

static struct {
    int quick, no_peer, steps;
    const char *python, *self;
    char_config ccfg;
    int64_t cbatch;
} g = {.steps = 20, .python = "/usr/bin/python3", .ccfg = {64, 4, 2, 64}, .cbatch = 16};

/* One model under test: a step function over fixed inputs. */
typedef struct bench_model {
    const char *name;
    digits_model dm;
    char_model cm;
    wk_tensor *xs, *ys, *ids; /* digits */
    int64_t *cx, *cy;         /* char */
    wk_optimizer *opt;
    wk_grad_store *gs;
} bench_model;

static bool model_setup(bench_model *b, const char *name, bool with_opt) {
    wk_device *dev = wk_cpu();
    memset(b, 0, sizeof *b);
    b->name = name;
    wk_tensor **params;
    int np;
    if (!strcmp(name, "digits")) {
        if (digits_model_init(&b->dm, 0, dev) != WK_OK) return false;
        int64_t xs[4] = {32, 1, 8, 8}, n = 32;
        int64_t y[32], ids[32];
        for (int i = 0; i < 32; i++) y[i] = (i * 7) % 10, ids[i] = i;
        b->xs = wk_rand(xs, 4, 0.0, 1.0, WK_F32, dev);
        b->ys = wk_from_host(y, sizeof y, &n, 1, WK_I64, dev);
        b->ids = wk_from_host(ids, sizeof ids, &n, 1, WK_I64, dev);
        if (!b->xs || !b->ys || !b->ids) return false;
        params = b->dm.params, np = DIGITS_NPARAMS;
    } else {
        if (char_model_init(&b->cm, &g.ccfg, 0, dev) != WK_OK) return false;
        int64_t len = 0, n = g.cbatch * g.ccfg.ctx;
        unsigned char *text = char_read_text("/usr/share/common-licenses/GPL-3", &len);
        b->cx = malloc((size_t)n * sizeof *b->cx);
        b->cy = malloc((size_t)n * sizeof *b->cy);
        if (!text || !b->cx || !b->cy) { free(text); return false; }
        uint64_t rng = 1;
        char_batch(text, len, g.cbatch, g.ccfg.ctx, &rng, b->cx, b->cy);
        free(text);
        params = b->cm.params, np = b->cm.nparams;
    }
    wk_optim_config oc = {.kind = WK_ADAMW, .lr = 1e-3, .weight_decay = 1e-2};
    b->gs = wk_grad_store_new();
    b->opt = with_opt ? wk_optimizer_new(&oc, params, np) : NULL;
    return b->gs && (b->opt || !with_opt);
}

static wk_status model_step(bench_model *b) {
    double loss;
    if (!strcmp(b->name, "digits"))
        return digits_train_step(&b->dm, b->opt, b->gs, b->xs, b->ys, b->ids, &loss);
    return char_train_step(&b->cm, b->opt, b->gs, b->cx, b->cy, g.cbatch, &loss);
}

static void model_free(bench_model *b) {
    wk_optimizer_free(b->opt);
    wk_grad_store_free(b->gs);
    if (!strcmp(b->name, "digits")) {
        digits_model_free(&b->dm);
        wk_tensor_free(b->xs); wk_tensor_free(b->ys); wk_tensor_free(b->ids);
    } else {
        char_model_free(&b->cm);
        free(b->cx); free(b->cy);
    }
}

static long status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') v = atol(line + kl + 1) * 1024;
    if (f) fclose(f);
    return v;
}

/* The loss of b's fixed batch (inside a scope). */
static wk_tensor *model_loss(bench_model *b) {
    if (!strcmp(b->name, "digits")) {
        wk_tensor *logits = digits_model_forward(&b->dm, b->xs), *l = wk_cross_entropy(logits, b->ys, NULL);
        wk_tensor_free(logits);
        return l;
    }
    int64_t T = b->cm.cfg.ctx, s[2] = {g.cbatch, T}, n = g.cbatch * T, flat[2] = {n, CHAR_VOCAB};
    wk_tensor *ids = wk_from_host(b->cx, (size_t)n * sizeof *b->cx, s, 2, WK_I64, wk_cpu());
    wk_tensor *tgt = wk_from_host(b->cy, (size_t)n * sizeof *b->cy, &n, 1, WK_I64, wk_cpu());
    wk_tensor *logits = char_model_forward(&b->cm, ids), *lf = wk_reshape(logits, flat, 2);
    wk_tensor *l = wk_cross_entropy(lf, tgt, NULL);
    wk_tensor_free(lf);
    wk_tensor_free(logits);
    return l;
}

/* The child of a memory measurement: prints "rss_delta_bytes N
 * alloc_peak_bytes M alloc_fwd_bytes F" (F: the allocator's peak by the end
 * of the forward pass, i.e. the graph's saved values plus the loss). */
static int mem_child(const char *name) {
    wk_set_num_threads(1);
    bench_model b;
    if (!model_setup(&b, name, false)) return 1;
    wk_cpu_mem_stats s0, s1, s2;
    wk_cpu_mem_stats_get(&s0);
    long before = status_bytes("VmRSS");
    wk_scope_begin();
    wk_tensor *l = model_loss(&b);
    wk_cpu_mem_stats_get(&s1);
    wk_status st = l ? wk_backward(l, b.gs, NULL) : WK_ERR_ARG;
    wk_scope_end();
    if (st != WK_OK) return 1;
    long hwm = status_bytes("VmHWM");
    wk_cpu_mem_stats_get(&s2);
    printf("rss_delta_bytes %ld alloc_peak_bytes %zu alloc_fwd_bytes %zu\n", hwm - before,
           s2.peak_in_use - s0.bytes_in_use, s1.peak_in_use - s0.bytes_in_use);
    model_free(&b);
    return 0;
}

static char *char_args(char *buf, size_t n) {
    snprintf(buf, n, "%lld %lld %lld %lld %lld", (long long)g.cbatch, (long long)g.ccfg.ctx,
             (long long)g.ccfg.dim, (long long)g.ccfg.heads, (long long)g.ccfg.layers);
    return buf;
}

/* Runs a command and parses "key value" from its first line; -1 if it fails. */
static double run_get(const char *cmd, const char *key, double *second, const char *key2, double *third,
                      const char *key3) {
    FILE *p = popen(cmd, "r");
    char line[512] = {0};
    double v = -1;
    if (!p) return -1;
    if (fgets(line, sizeof line, p)) {
        char *at = strstr(line, key);
        if (at) v = atof(at + strlen(key));
        if (second && key2 && (at = strstr(line, key2))) *second = atof(at + strlen(key2));
        if (third && key3 && (at = strstr(line, key3))) *third = atof(at + strlen(key3));
    }
    if (pclose(p) != 0) v = -1;
    return v;
}

/* The peer's step times (ms), [model][threads - 1]; -1 where it failed. */
static void peer_times(double out[2][2]) {
    out[0][0] = out[0][1] = out[1][0] = out[1][1] = -1;
    if (g.no_peer) return;
    char cmd[1024], cfg[128], line[256];
    const char *cap = bench_aten_capability();
    snprintf(cmd, sizeof cmd, "%s%s '%s' '%s/bench/train_peer.py' time %d %s 2>/dev/null",
             cap ? "ATEN_CPU_CAPABILITY=" : "", cap ? cap : "", g.python, WICK_SOURCE_DIR, g.steps,
             char_args(cfg, sizeof cfg));
    FILE *p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p)) {
        char model[16];
        int threads;
        double ms;
        if (sscanf(line, "%15s %d %lf", model, &threads, &ms) == 3 && threads >= 1 && threads <= 2)
            out[strcmp(model, "digits") ? 1 : 0][threads - 1] = ms;
    }
    pclose(p);
}

static double wick_time(const char *name, int threads, bool *failed) {
    wk_set_num_threads(threads);
    bench_model b;
    if (!model_setup(&b, name, true)) { *failed = true; return -1; }
    double *t = malloc((size_t)g.steps * sizeof *t), ms = -1;
    bool ok = t != NULL;
    for (int s = 0; ok && s < g.steps + 2; s++) {
        double t0 = bench_now();
        ok = model_step(&b) == WK_OK;
        if (s >= 2) t[s - 2] = bench_now() - t0;
    }
    if (ok) ms = 1e3 * bench_median(t, g.steps);
    else *failed = true;
    if (!ok) fprintf(stderr, "bench_train: %s: %s\n", name, wk_last_error());
    free(t);
    model_free(&b);
    return ms;
}

static void print_ratio(double num, double den) {
    if (num > 0 && den > 0) printf(" %9.2fx", num / den);
    else printf(" %10s", "n/a");
}

int main(int argc, char **argv) {
    const char *mem_model = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mem") && i + 1 < argc) mem_model = argv[++i];
        else if (!strcmp(argv[i], "--quick")) g.quick = 1;
        else if (!strcmp(argv[i], "--no-peer")) g.no_peer = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) g.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) g.python = argv[++i];
        else {
            fprintf(stderr, "usage: bench_train [--quick] [--steps N] [--no-peer] [--python PATH]\n");
            return 2;
        }
    }
    if (g.quick) {
        g.steps = 3;
        g.ccfg = (char_config){32, 4, 2, 32};
        g.cbatch = 4;
    }
    if (g.steps < 1) g.steps = 1;
    if (mem_model) return mem_child(mem_model);
    g.self = argv[0];
    const char *models[2] = {"digits", "char"};
    int threads[2] = {1, 2};
    bool failed = false;
    double peer[2][2];
    peer_times(peer);
    printf("bench/train: forward + backward + AdamW step, f32, isa %s (char: batch %lld x %lld, d %lld, %lld "
           "layers)\n", wk_cpu_isa(), (long long)g.cbatch, (long long)g.ccfg.ctx, (long long)g.ccfg.dim,
           (long long)g.ccfg.layers);
    printf("%-8s %7s %12s %12s %10s\n", "model", "threads", "wick ms", "torch ms", "vs torch");
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 2; t++) {
            double w = wick_time(models[m], threads[t], &failed), p = peer[m][t];
            printf("%-8s %7d %12.3f ", models[m], threads[t], w);
            if (p > 0) printf("%12.3f", p);
            else printf("%12s", "n/a");
            print_ratio(p, w);
            printf("\n");
        }
    printf("\npeak memory of one forward + backward (1 thread, fresh process each; RSS high-water delta)\n");
    printf("%-8s %14s %16s %14s %14s %10s\n", "model", "wick RSS KiB", "wick alloc KiB", "(fwd alloc)", "torch RSS KiB",
           "vs torch");
    for (int m = 0; m < 2; m++) {
        char cmd[1024], cfg[128];
        double alloc = -1;
        snprintf(cmd, sizeof cmd, "'%s' --mem %s %s", g.self, models[m], g.quick ? "--quick" : "");
        double fwd = -1, w = run_get(cmd, "rss_delta_bytes", &alloc, "alloc_peak_bytes", &fwd, "alloc_fwd_bytes"), p = -1;
        if (w < 0) failed = true;
        if (!g.no_peer) {
            const char *cap = bench_aten_capability();
            snprintf(cmd, sizeof cmd, "%s%s '%s' '%s/bench/train_peer.py' mem %s %s 2>/dev/null",
                     cap ? "ATEN_CPU_CAPABILITY=" : "", cap ? cap : "", g.python, WICK_SOURCE_DIR, models[m],
                     char_args(cfg, sizeof cfg));
            p = run_get(cmd, "rss_delta_bytes", NULL, NULL, NULL, NULL);
        }
        printf("%-8s %14.0f %16.0f %14.0f ", models[m], w / 1024, alloc / 1024, fwd / 1024);
        if (p > 0) printf("%14.0f", p / 1024);
        else printf("%14s", "n/a");
        print_ratio(w, p);
        printf("\n");
    }
    return failed ? 1 : 0;
}
