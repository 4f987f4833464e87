/*
 * bench/conv — wick's conv2d beside PyTorch's, measured in one run.
 *
 *   bench_conv [--quick] [--threads 1,2] [--no-peers] [--python PATH]
 *
 * Rows: ResNet-style 3x3 conv2d, padding 1, stride 1, f32, NCHW:
 * 56x56, 64 -> 64 channels and 14x14, 256 -> 256 channels, batch 1 and 8,
 * on 1 and 2 threads (wk_set_num_threads / torch.set_num_threads).
 * wick is called as a user calls it: y = wk_conv2d(x, w, &p); free(y) —
 * allocation included; torch runs F.conv2d(x, w, padding=1) through
 * /usr/bin/python3 (ATEN_CPU_CAPABILITY=avx512 where the CPU has AVX-512, bench/peer.h) in the same run. Timing is
 * timeit-style: warm-up, n calls >= min-time (100 ms; 20 ms with --quick),
 * 5 repeats (2 with --quick), median per call. GFLOP/s counts 2*MACs.
 * --quick runs batch 1 only.
 *
 * Exit status: 0 when every wick conv ran and matched a direct reference on
 * sampled outputs; 1 otherwise.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <wick/wick.h>
#include "peer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct row {
    int64_t hw, c, batch;
} row;

static const row k_rows[] = {{56, 64, 1}, {56, 64, 8}, {14, 256, 1}, {14, 256, 8}};
#define NROWS ((int)(sizeof k_rows / sizeof *k_rows))

static double flops(const row *r) { return 2.0 * (double)(r->batch * r->c * r->hw * r->hw * r->c * 9); }

/* Check a few outputs against a direct sum; false on mismatch. */
static bool check(const wk_tensor *x, const wk_tensor *w, const wk_tensor *y, const row *r) {
    int64_t n = r->batch, c = r->c, hw = r->hw;
    double *xv = malloc(sizeof(double) * (size_t)(n * c * hw * hw)), *wv = malloc(sizeof(double) * (size_t)(c * c * 9)),
           *yv = malloc(sizeof(double) * (size_t)(n * c * hw * hw));
    bool ok = xv && wv && yv && wk_to_host_f64(x, xv, (size_t)(n * c * hw * hw)) == WK_OK &&
              wk_to_host_f64(w, wv, (size_t)(c * c * 9)) == WK_OK &&
              wk_to_host_f64(y, yv, (size_t)(n * c * hw * hw)) == WK_OK;
    for (int s = 0; ok && s < 64; s++) {
        int64_t b = s % n, co = (s * 37) % c, oy = (s * 13) % hw, ox = (s * 7 + (s > 32 ? hw - 1 : 0)) % hw;
        double acc = 0, mag = 0;
        for (int64_t ci = 0; ci < c; ci++)
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++) {
                    int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                    if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
                    double t = wv[((co * c + ci) * 3 + ky) * 3 + kx] * xv[((b * c + ci) * hw + iy) * hw + ix];
                    acc += t;
                    mag += fabs(t);
                }
        double got = yv[((b * c + co) * hw + oy) * hw + ox];
        if (fabs(got - acc) > 1e-5 * mag + 1e-6) ok = false;
    }
    free(xv);
    free(wv);
    free(yv);
    return ok;
}

/* Median seconds per wk_conv2d call; negative on failure. */
static double time_wick(const row *r, double min_time, int repeats, bool *correct) {
    int64_t xs[4] = {r->batch, r->c, r->hw, r->hw}, ws[4] = {r->c, r->c, 3, 3};
    wk_tensor *x = wk_randn(xs, 4, 0, 1, WK_F32, wk_cpu()), *w = wk_randn(ws, 4, 0, 0.1, WK_F32, wk_cpu());
    wk_conv_params p = {.padding = 1};
    double res = -1;
    wk_tensor *y = x && w ? wk_conv2d(x, w, &p) : NULL;
    if (!y) {
        fprintf(stderr, "wk_conv2d failed: %s\n", wk_last_error());
        *correct = false;
        goto out;
    }
    if (!check(x, w, y, r)) *correct = false;
    wk_tensor_free(y);
    int64_t iters = 1;
    for (;;) {
        double t0 = bench_now();
        for (int64_t i = 0; i < iters; i++) wk_tensor_free(wk_conv2d(x, w, &p));
        if (bench_now() - t0 >= min_time || iters > (1 << 20)) break;
        iters *= 2;
    }
    double t[16];
    if (repeats > 16) repeats = 16;
    for (int rep = 0; rep < repeats; rep++) {
        double t0 = bench_now();
        for (int64_t i = 0; i < iters; i++) wk_tensor_free(wk_conv2d(x, w, &p));
        t[rep] = (bench_now() - t0) / (double)iters;
    }
    qsort(t, (size_t)repeats, sizeof(double), bench_cmp_double);
    res = t[repeats / 2];
out:
    wk_tensor_free(x);
    wk_tensor_free(w);
    return res;
}

static const char *k_peer =
    "import sys, time, statistics, torch, torch.nn.functional as F\n"
    "nt, mt, reps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(nt)\n"
    "for spec in sys.argv[4:]:\n"
    "    hw, c, n = (int(v) for v in spec.split(':'))\n"
    "    x = torch.randn(n, c, hw, hw); w = torch.randn(c, c, 3, 3) * 0.1\n"
    "    with torch.no_grad():\n"
    "        F.conv2d(x, w, padding=1)\n"
    "        it = 1\n"
    "        while True:\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(it): F.conv2d(x, w, padding=1)\n"
    "            if time.perf_counter() - t0 >= mt or it > 1 << 20: break\n"
    "            it *= 2\n"
    "        ts = []\n"
    "        for _ in range(reps):\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(it): F.conv2d(x, w, padding=1)\n"
    "            ts.append((time.perf_counter() - t0) / it)\n"
    "    print(spec, statistics.median(ts), flush=True)\n";

/* torch seconds per call for each row (negative = n/a). */
static void time_torch(const char *python, int nt, const row *rows, int nrows, double min_time, int repeats,
                       double *out) {
    for (int i = 0; i < nrows; i++) out[i] = -1;
    char args[2048];
    int len = snprintf(args, sizeof args, "%d %g %d", nt, min_time, repeats);
    for (int i = 0; i < nrows && len > 0 && len < (int)sizeof args - 64; i++)
        len += snprintf(args + len, sizeof args - (size_t)len, " %lld:%lld:%lld", (long long)rows[i].hw,
                        (long long)rows[i].c, (long long)rows[i].batch);
    bench_peer p;
    if (bench_peer_start(&p, python, k_peer, NULL, args)) {
        char line[256];
        while (fgets(line, sizeof line, p.out)) {
            long long hw, c, n;
            double t;
            if (sscanf(line, "%lld:%lld:%lld %lf", &hw, &c, &n, &t) != 4) continue;
            for (int i = 0; i < nrows; i++)
                if (rows[i].hw == hw && rows[i].c == c && rows[i].batch == n) out[i] = t;
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
    row rows[NROWS];
    int nrows = 0;
    for (int i = 0; i < NROWS; i++)
        if (!quick || k_rows[i].batch == 1) rows[nrows++] = k_rows[i];
    bool correct = true;
    printf("bench_conv: 3x3 conv2d, padding 1, stride 1, f32, NCHW; ISA %s; median of %d repeats\n", wk_cpu_isa(),
           repeats);
    for (int ti = 0; ti < nthreads; ti++) {
        int nt = threads[ti];
        wk_set_num_threads(nt);
        double tt[NROWS];
        if (peers) time_torch(python, nt, rows, nrows, min_time, repeats, tt);
        else for (int i = 0; i < nrows; i++) tt[i] = -1;
        printf("\nthreads %d\n", nt);
        printf("| %-22s | %10s | %10s | %12s | %12s | %11s |\n", "shape (N,C,H,W)->C", "wick ms", "torch ms",
               "wick GFLOP/s", "torch GFLOP/s", "torch/wick");
        printf("|%s|%s|%s|%s|%s|%s|\n", "------------------------", "------------", "------------", "--------------",
               "--------------", "-------------");
        for (int i = 0; i < nrows; i++) {
            const row *r = &rows[i];
            double tw = time_wick(r, min_time, repeats, &correct);
            char shape[64], ts[32], tg[32], ratio[32];
            snprintf(shape, sizeof shape, "(%lld,%lld,%lld,%lld)->%lld", (long long)r->batch, (long long)r->c,
                     (long long)r->hw, (long long)r->hw, (long long)r->c);
            if (tt[i] > 0) {
                snprintf(ts, sizeof ts, "%.3f", tt[i] * 1e3);
                snprintf(tg, sizeof tg, "%.1f", flops(r) / tt[i] * 1e-9);
                snprintf(ratio, sizeof ratio, "%.2f", tw > 0 ? tt[i] / tw : 0.0);
            } else {
                snprintf(ts, sizeof ts, "n/a");
                snprintf(tg, sizeof tg, "n/a");
                snprintf(ratio, sizeof ratio, "n/a");
            }
            printf("| %-22s | %10.3f | %10s | %12.1f | %13s | %11s |\n", shape, tw * 1e3, ts,
                   tw > 0 ? flops(r) / tw * 1e-9 : 0.0, tg, ratio);
            fflush(stdout);
        }
    }
    printf("\ntorch/wick > 1 means wick is faster. wick result check: %s\n", correct ? "ok" : "FAILED");
    return correct ? 0 : 1;
}
