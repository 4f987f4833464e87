/*
 * bench/conv_backward — forward + backward of convs, pools and upsampling,
 * wick's autograd beside PyTorch's, measured in one run.
 *
 *   bench_conv_backward [--quick] [--threads 1,2] [--no-peers] [--python PATH]
 *
 * Rows: the digits CNN's layers (batch 64, 8x8 images: conv 1->16 3x3 pad 1
 * with the input untracked (dw only), conv 16->32 3x3 pad 1 on 4x4 (dx and
 * dw), max pool 2x2 and avg pool 3x3 / 2 / pad 1 on 16x8x8), a larger conv
 * (batch 8, 64->64, 32x32) and a bilinear 2x upsampling, f32, NCHW. One
 * call: y = op(x, w); backward(y, grad_output R) (wk_backward into a store,
 * zeroed after; torch: y.backward(R), grads set to None). Timing as
 * bench_conv: warm-up, n calls >= min-time (100 ms; 20 ms with --quick),
 * 5 repeats (2 with --quick), median per call; torch through
 * /usr/bin/python3 (ATEN_CPU_CAPABILITY as bench/peer.h picks) in the same run.
 *
 * Exit status: 0 when every wick call ran; 1 otherwise.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <wick/wick.h> /* autograd.h with it */
#include "peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct row {
    const char *name;
    int kind; /* 0 conv dw only, 1 conv dx + dw, 2 max pool, 3 avg pool, 4 bilinear */
    int64_t n, cin, hw, cout;
} row;

static const row k_rows[] = {
    {"conv 1->16 8x8 b64 (dw)", 0, 64, 1, 8, 16},   {"conv 16->32 4x4 b64", 1, 64, 16, 4, 32},
    {"conv 64->64 32x32 b8", 1, 8, 64, 32, 64},     {"max_pool 2x2 16x8x8 b64", 2, 64, 16, 8, 0},
    {"avg_pool 3/2/1 16x8x8 b64", 3, 64, 16, 8, 0}, {"bilinear 2x 16x8x8 b64", 4, 64, 16, 8, 0},
};
#define NROWS ((int)(sizeof k_rows / sizeof *k_rows))

typedef struct state {
    const row *r;
    wk_tensor *x, *w, *R;
    wk_grad_store *gs;
    bool ok;
} state;

static wk_tensor *forward(const state *s) {
    const row *r = s->r;
    wk_conv_params p = {.padding = 1};
    switch (r->kind) {
    case 0: case 1: return wk_conv2d(s->x, s->w, &p);
    case 2: return wk_max_pool2d(s->x, 2, 2, 2, 2, 0, 0);
    case 3: return wk_avg_pool2d(s->x, 3, 3, 2, 2, 1, 1, true);
    default: return wk_upsample_bilinear2d(s->x, 2 * r->hw, 2 * r->hw, false);
    }
}

static void call(void *ctx) {
    state *s = ctx;
    wk_tensor *y = forward(s);
    wk_backward_opts o = {.grad_output = s->R};
    if (!y || wk_backward(y, s->gs, &o) != WK_OK) {
        if (s->ok) fprintf(stderr, "%s: %s\n", s->r->name, wk_last_error());
        s->ok = false;
    }
    wk_tensor_free(y);
    wk_grad_store_zero(s->gs);
}

/* Median seconds per call; negative on failure. */
static double time_wick(const row *r, double min_time, int repeats, bool *correct) {
    int64_t xs[4] = {r->n, r->cin, r->hw, r->hw}, ws[4] = {r->cout, r->cin, 3, 3};
    state s = {r, wk_randn(xs, 4, 0, 1, WK_F32, wk_cpu()), NULL, NULL, wk_grad_store_new(), true};
    if (r->kind <= 1) s.w = wk_randn(ws, 4, 0, 0.1, WK_F32, wk_cpu());
    if (r->kind != 0) wk_requires_grad(s.x, true);
    if (s.w) wk_requires_grad(s.w, true);
    wk_no_grad_begin();
    wk_tensor *y = forward(&s);
    wk_no_grad_end();
    s.R = y ? wk_randn(wk_shape(y), wk_rank(y), 0, 1, WK_F32, wk_cpu()) : NULL;
    wk_tensor_free(y);
    double res = -1;
    if (!s.R) {
        *correct = false;
        goto out;
    }
    call(&s);
    int64_t iters = 1;
    for (;;) {
        double t0 = bench_now();
        for (int64_t i = 0; i < iters; i++) call(&s);
        if (bench_now() - t0 >= min_time || iters > (1 << 20)) break;
        iters *= 2;
    }
    double t[16];
    if (repeats > 16) repeats = 16;
    for (int rep = 0; rep < repeats; rep++) {
        double t0 = bench_now();
        for (int64_t i = 0; i < iters; i++) call(&s);
        t[rep] = (bench_now() - t0) / (double)iters;
    }
    res = bench_median(t, repeats);
    if (!s.ok) *correct = false;
out:
    wk_tensor_free(s.x);
    wk_tensor_free(s.w);
    wk_tensor_free(s.R);
    wk_grad_store_free(s.gs);
    return s.ok ? res : -1;
}

static const char *k_peer =
    "import sys, time, statistics, torch, torch.nn.functional as F\n"
    "nt, mt, reps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(nt)\n"
    "for i, spec in enumerate(sys.argv[4:]):\n"
    "    kind, n, cin, hw, cout = (int(v) for v in spec.split(':'))\n"
    "    x = torch.randn(n, cin, hw, hw)\n"
    "    w = (torch.randn(cout, cin, 3, 3) * 0.1).requires_grad_(True) if kind <= 1 else None\n"
    "    if kind != 0: x.requires_grad_(True)\n"
    "    def fwd():\n"
    "        if kind <= 1: return F.conv2d(x, w, padding=1)\n"
    "        if kind == 2: return F.max_pool2d(x, 2, 2)\n"
    "        if kind == 3: return F.avg_pool2d(x, 3, 2, 1)\n"
    "        return F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)\n"
    "    with torch.no_grad(): R = torch.randn(fwd().shape)\n"
    "    def step():\n"
    "        fwd().backward(R)\n"
    "        x.grad = None\n"
    "        if w is not None: w.grad = None\n"
    "    step()\n"
    "    it = 1\n"
    "    while True:\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(it): step()\n"
    "        if time.perf_counter() - t0 >= mt or it > 1 << 20: break\n"
    "        it *= 2\n"
    "    ts = []\n"
    "    for _ in range(reps):\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(it): step()\n"
    "        ts.append((time.perf_counter() - t0) / it)\n"
    "    print(i, statistics.median(ts), flush=True)\n";

static void time_torch(const char *python, int nt, const row *rows, int nrows, double min_time, int repeats,
                       double *out) {
    for (int i = 0; i < nrows; i++) out[i] = -1;
    char args[2048];
    int len = snprintf(args, sizeof args, "%d %g %d", nt, min_time, repeats);
    for (int i = 0; i < nrows && len > 0 && len < (int)sizeof args - 64; i++)
        len += snprintf(args + len, sizeof args - (size_t)len, " %d:%lld:%lld:%lld:%lld", rows[i].kind,
                        (long long)rows[i].n, (long long)rows[i].cin, (long long)rows[i].hw, (long long)rows[i].cout);
    bench_peer p;
    if (bench_peer_start(&p, python, k_peer, NULL, args)) {
        char line[256];
        while (fgets(line, sizeof line, p.out)) {
            int i;
            double t;
            if (sscanf(line, "%d %lf", &i, &t) == 2 && i >= 0 && i < nrows) out[i] = t;
        }
    }
    bench_peer_finish(&p);
}

int main(int argc, char **argv) {
    bool quick = false, peers = true;
    const char *python = "/usr/bin/python3";
    int threads[8] = {1, 2}, nthreads = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (strcmp(argv[i], "--no-peers") == 0) peers = false;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) python = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            nthreads = 0;
            for (char *s = argv[++i]; *s && nthreads < 8;) {
                char *end;
                long v = strtol(s, &end, 10);
                if (end == s) break;
                if (v >= 1 && v <= 256) threads[nthreads++] = (int)v;
                s = *end == ',' ? end + 1 : end;
            }
            if (nthreads == 0) { fprintf(stderr, "bad --threads\n"); return 2; }
        } else {
            fprintf(stderr, "usage: %s [--quick] [--threads 1,2] [--no-peers] [--python PATH]\n", argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    double min_time = quick ? 0.02 : 0.1;
    int repeats = quick ? 2 : 5;
    bool correct = true;
    printf("bench_conv_backward: forward + backward, f32, NCHW; ISA %s; median of %d repeats\n", wk_cpu_isa(),
           repeats);
    for (int ti = 0; ti < nthreads; ti++) {
        int nt = threads[ti];
        wk_set_num_threads(nt);
        double tt[NROWS];
        if (peers) time_torch(python, nt, k_rows, NROWS, min_time, repeats, tt);
        else for (int i = 0; i < NROWS; i++) tt[i] = -1;
        printf("\nthreads %d\n", nt);
        printf("| %-26s | %10s | %10s | %11s |\n", "row", "wick ms", "torch ms", "torch/wick");
        printf("|%s|%s|%s|%s|\n", "----------------------------", "------------", "------------", "-------------");
        for (int i = 0; i < NROWS; i++) {
            double tw = time_wick(&k_rows[i], min_time, repeats, &correct);
            char ts[32], ratio[32];
            if (tt[i] > 0) {
                snprintf(ts, sizeof ts, "%.3f", tt[i] * 1e3);
                snprintf(ratio, sizeof ratio, "%.2f", tw > 0 ? tt[i] / tw : 0.0);
            } else {
                snprintf(ts, sizeof ts, "n/a");
                snprintf(ratio, sizeof ratio, "n/a");
            }
            printf("| %-26s | %10.3f | %10s | %11s |\n", k_rows[i].name, tw * 1e3, ts, ratio);
            fflush(stdout);
        }
    }
    printf("\ntorch/wick > 1 means wick is faster. wick runs: %s\n", correct ? "ok" : "FAILED");
    return correct ? 0 : 1;
}
