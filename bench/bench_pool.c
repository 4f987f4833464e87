/*
 * bench/pool — wick's pooling and resampling beside PyTorch, in one run.
 *
 *   bench_pool [--quick] [--threads 1,2] [--no-peers] [--python PATH]
 *
 * Rows (f32, NCHW, contiguous):
 *   max_pool2d 3x3 stride 2 pad 1 on 8x64x112x112
 *   avg_pool2d 2x2 stride 2       on 8x256x28x28
 *   upsample_bilinear2d 2x (align_corners=False) on 8x64x56x56
 * --quick uses batch 1 and short timings (a few seconds in all).
 *
 * wick is called as a user calls it (result allocated and freed each call);
 * PyTorch 1.13 (/usr/bin/python3; ATEN_CPU_CAPABILITY=avx512 on AVX-512 CPUs) runs the same
 * calls at the same thread count (torch.set_num_threads / wk_set_num_threads)
 * in a child started with popen before wick's measurements. Timing: warm-up,
 * then n calls with n grown until they take >= min-time, then repeats; the
 * median per call is reported. "vs torch" = torch time / wick time (above 1:
 * wick is faster). Exit status 1 if a wick call fails.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <wick/wick.h>
#include "peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NROWS 3
#define MAX_T 8

static struct {
    int quick, no_peers, nthreads, threads[MAX_T];
    const char *python;
    double min_time;
    int repeats;
} opt = {0, 0, 2, {1, 2}, "/usr/bin/python3", 0.2, 5};

static const char *const k_rows[NROWS] = {"max_pool2d_3x3s2p1", "avg_pool2d_2x2", "upsample_bilinear2d_2x"};
static const char *const k_desc[NROWS] = {"max_pool2d 3x3 s2 p1  Nx64x112x112", "avg_pool2d 2x2 s2     Nx256x28x28",
                                          "bilinear2d 2x (ac=0)  Nx64x56x56"};

static int64_t g_batch;

static wk_tensor *run_row(int row, const wk_tensor *x) {
    switch (row) {
    case 0: return wk_max_pool2d(x, 3, 3, 2, 2, 1, 1);
    case 1: return wk_avg_pool2d(x, 2, 2, 2, 2, 0, 0, true);
    default: return wk_upsample_bilinear2d(x, wk_shape(x)[2] * 2, wk_shape(x)[3] * 2, false);
    }
}

static void row_shape(int row, int64_t *s) {
    static const int64_t c[NROWS][3] = {{64, 112, 112}, {256, 28, 28}, {64, 56, 56}};
    s[0] = g_batch, s[1] = c[row][0], s[2] = c[row][1], s[3] = c[row][2];
}

/* median seconds per call; < 0 on failure */
static double time_wick(int row) {
    int64_t s[4];
    row_shape(row, s);
    wk_tensor *x = wk_rand(s, 4, -1, 1, WK_F32, wk_cpu());
    if (!x) return -1;
    wk_tensor *r = run_row(row, x);
    if (!r) {
        fprintf(stderr, "bench_pool: %s failed: %s\n", k_rows[row], wk_last_error());
        wk_tensor_free(x);
        return -1;
    }
    wk_tensor_free(r);
    int64_t n = 1;
    for (;;) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) wk_tensor_free(run_row(row, x));
        double dt = bench_now() - t0;
        if (dt >= opt.min_time || n >= (1 << 20)) break;
        n *= dt > 0 ? (opt.min_time / dt > 10 ? 10 : 2) : 10;
    }
    double rep[16];
    for (int k = 0; k < opt.repeats; k++) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) wk_tensor_free(run_row(row, x));
        rep[k] = (bench_now() - t0) / (double)n;
    }
    wk_tensor_free(x);
    qsort(rep, (size_t)opt.repeats, sizeof(double), bench_cmp_double);
    return rep[opt.repeats / 2];
}

static const char *k_py =
    "import sys, time, torch\n"
    "import torch.nn.functional as F\n"
    "T, B, MT, R = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])\n"
    "torch.set_num_threads(T)\n"
    "rows = [('max_pool2d_3x3s2p1', (B, 64, 112, 112), lambda x: F.max_pool2d(x, 3, 2, 1)),\n"
    "        ('avg_pool2d_2x2', (B, 256, 28, 28), lambda x: F.avg_pool2d(x, 2, 2)),\n"
    "        ('upsample_bilinear2d_2x', (B, 64, 56, 56),\n"
    "         lambda x: F.interpolate(x, size=(x.shape[2] * 2, x.shape[3] * 2), mode='bilinear', align_corners=False))]\n"
    "with torch.no_grad():\n"
    "    for name, shape, fn in rows:\n"
    "        x = torch.rand(shape) * 2 - 1\n"
    "        fn(x)\n"
    "        n = 1\n"
    "        while True:\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(n): fn(x)\n"
    "            dt = time.perf_counter() - t0\n"
    "            if dt >= MT or n >= 1 << 20: break\n"
    "            n *= 10 if dt <= 0 or MT / dt > 10 else 2\n"
    "        reps = []\n"
    "        for _ in range(R):\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(n): fn(x)\n"
    "            reps.append((time.perf_counter() - t0) / n)\n"
    "        reps.sort()\n"
    "        print(name, reps[len(reps) // 2], flush=True)\n";

/* torch seconds per row for T threads (< 0: n/a). */
static void time_torch(int threads, double *out) {
    for (int i = 0; i < NROWS; i++) out[i] = -1;
    if (opt.no_peers) return;
    char env[64], args[256];
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    snprintf(args, sizeof args, "%d %lld %g %d 2>/dev/null", threads, (long long)g_batch, opt.min_time, opt.repeats);
    bench_peer p;
    if (bench_peer_start(&p, opt.python, k_py, env, args)) {
        char line[256], name[128];
        double s;
        while (fgets(line, sizeof line, p.out))
            if (sscanf(line, "%127s %lf", name, &s) == 2)
                for (int i = 0; i < NROWS; i++)
                    if (strcmp(name, k_rows[i]) == 0) out[i] = s;
    }
    bench_peer_finish(&p);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) opt.quick = 1;
        else if (strcmp(argv[i], "--no-peers") == 0) opt.no_peers = 1;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) opt.python = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            opt.nthreads = 0;
            for (char *s = argv[++i]; *s && opt.nthreads < MAX_T;) {
                opt.threads[opt.nthreads++] = (int)strtol(s, &s, 10);
                if (*s == ',') s++;
                else break;
            }
        } else {
            fprintf(stderr, "usage: %s [--quick] [--threads 1,2] [--no-peers] [--python PATH]\n", argv[0]);
            return 2;
        }
    }
    g_batch = opt.quick ? 1 : 8;
    if (opt.quick) opt.min_time = 0.01, opt.repeats = 3;
    int fail = 0;
    printf("bench_pool: f32 NCHW, N = %lld, isa %s%s\n", (long long)g_batch, wk_cpu_isa(),
           opt.quick ? " (quick)" : "");
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int T = opt.threads[ti];
        double tt[NROWS];
        time_torch(T, tt);
        if (wk_set_num_threads(T) != WK_OK) {
            fprintf(stderr, "bench_pool: wk_set_num_threads(%d): %s\n", T, wk_last_error());
            return 1;
        }
        printf("\nthreads %d\n%-36s %12s %12s %9s\n", T, "op", "wick ms", "torch ms", "vs torch");
        for (int r = 0; r < NROWS; r++) {
            double w = time_wick(r);
            if (w < 0) {
                fail = 1;
                printf("%-36s %12s\n", k_desc[r], "FAILED");
                continue;
            }
            if (tt[r] > 0) printf("%-36s %12.3f %12.3f %9.2f\n", k_desc[r], w * 1e3, tt[r] * 1e3, tt[r] / w);
            else printf("%-36s %12.3f %12s %9s\n", k_desc[r], w * 1e3, "n/a", "n/a");
        }
    }
    return fail;
}
