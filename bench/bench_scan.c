/* Scans and order: wick beside PyTorch, measured in the same run.
 *
 *   bench_scan [--quick] [--python PATH]
 *
 * Rows (f32, inputs uniform in [-1, 1)):
 *   topk32 dim0   top-32 along dim 0 of a 32000 x 8 tensor
 *   topk32 last   top-32 along the last dim of an 8 x 32000 tensor
 *   cumsum 16M    cumsum of 16 M elements (one line)
 *   sort 1M       sort (values + i64 indices) of 1 M elements
 * For 1 and 2 threads (wk_set_num_threads / torch.set_num_threads). Timing,
 * both sides alike: one warm-up call, the iteration count grown until the
 * calls take >= min_time, then the median of 5 repeats per call. Every call
 * allocates its results and frees them. PyTorch runs in /usr/bin/python3
 * (ATEN_CPU_CAPABILITY=avx512 on AVX-512 CPUs) through popen; --quick shrinks the sizes
 * and the timing so the whole run takes a few seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick/wick.h"
#include "peer.h"

static double g_min_time = 0.05;
static int g_repeats = 5;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    int kind;   /* 0 topk, 1 cumsum, 2 sort */
    wk_tensor *x;
    int dim;
    int64_t k;
} job;

static int run_once(const job *j) {
    wk_tensor *v = NULL, *i = NULL;
    wk_status st = WK_OK;
    if (j->kind == 0) st = wk_topk(j->x, j->k, j->dim, true, &v, &i);
    else if (j->kind == 1) v = wk_cumsum(j->x, j->dim);
    else st = wk_sort(j->x, j->dim, false, &v, &i);
    if (st != WK_OK || !v) {
        fprintf(stderr, "bench_scan: %s\n", wk_last_error());
        return -1;
    }
    wk_tensor_free(v);
    wk_tensor_free(i);
    return 0;
}

/* Median seconds per call. */
static double time_job(const job *j) {
    if (run_once(j)) return -1;
    long n = 1;
    for (;;) {
        double t0 = now();
        for (long k = 0; k < n; k++) run_once(j);
        double t = now() - t0;
        if (t >= g_min_time || n > (1L << 24)) break;
        n *= t > 0 ? (long)(g_min_time / t * 1.2) + 1 : 10;
    }
    double r[16];
    for (int rep = 0; rep < g_repeats; rep++) {
        double t0 = now();
        for (long k = 0; k < n; k++) run_once(j);
        r[rep] = (now() - t0) / (double)n;
    }
    qsort(r, (size_t)g_repeats, sizeof r[0], bench_cmp_double);
    return r[g_repeats / 2];
}

static const char *k_torch_script =
    "import sys, time, torch\n"
    "T=int(sys.argv[1]); q=int(sys.argv[2]); mt=float(sys.argv[3]); reps=int(sys.argv[4])\n"
    "torch.set_num_threads(T)\n"
    "def tm(f):\n"
    "    f(); n=1\n"
    "    while True:\n"
    "        t0=time.perf_counter()\n"
    "        for _ in range(n): f()\n"
    "        t=time.perf_counter()-t0\n"
    "        if t>=mt or n>(1<<24): break\n"
    "        n*= int(mt/t*1.2)+1 if t>0 else 10\n"
    "    r=[]\n"
    "    for _ in range(reps):\n"
    "        t0=time.perf_counter()\n"
    "        for _ in range(n): f()\n"
    "        r.append((time.perf_counter()-t0)/n)\n"
    "    r.sort(); return r[len(r)//2]\n"
    "R=32000 if not q else 4000; C=16*1024*1024 if not q else 1<<20; S=1<<20 if not q else 1<<16\n"
    "a=torch.rand(R,8)*2-1; b=torch.rand(8,R)*2-1; c=torch.rand(C)*2-1; s=torch.rand(S)*2-1\n"
    "print(tm(lambda: torch.topk(a,32,dim=0)))\n"
    "print(tm(lambda: torch.topk(b,32,dim=-1)))\n"
    "print(tm(lambda: torch.cumsum(c,0)))\n"
    "print(tm(lambda: torch.sort(s,stable=True)))\n"
    "sys.stdout.flush()\n";

static int torch_times(const char *python, int threads, int quick, double *out, int n) {
    char env[64], args[256];
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    snprintf(args, sizeof args, "%d %d %g %d 2>/dev/null", threads, quick, g_min_time, g_repeats);
    bench_peer p;
    int got = 0;
    if (bench_peer_start(&p, python, k_torch_script, env, args))
        while (got < n && fscanf(p.out, "%lf", &out[got]) == 1) got++;
    bench_peer_finish(&p);
    return got == n ? 0 : -1;
}

int main(int argc, char **argv) {
    int quick = 0;
    const char *python = "/usr/bin/python3";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) python = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--python PATH]\n", argv[0]);
            return 2;
        }
    }
    if (quick) { g_min_time = 0.01; g_repeats = 3; }
    int64_t R = quick ? 4000 : 32000, C = quick ? (1 << 20) : 16 * 1024 * 1024, S = quick ? (1 << 16) : (1 << 20);
    wk_device_set_seed(wk_cpu(), 1);
    int64_t sa[] = {R, 8}, sb[] = {8, R};
    wk_tensor *a = wk_rand(sa, 2, -1, 1, WK_F32, wk_cpu());
    wk_tensor *b = wk_rand(sb, 2, -1, 1, WK_F32, wk_cpu());
    wk_tensor *c = wk_rand(&C, 1, -1, 1, WK_F32, wk_cpu());
    wk_tensor *s = wk_rand(&S, 1, -1, 1, WK_F32, wk_cpu());
    if (!a || !b || !c || !s) {
        fprintf(stderr, "bench_scan: %s\n", wk_last_error());
        return 1;
    }
    char rn[4][48];
    snprintf(rn[0], sizeof rn[0], "topk32 %lldx8 dim0", (long long)R);
    snprintf(rn[1], sizeof rn[1], "topk32 8x%lld last", (long long)R);
    snprintf(rn[2], sizeof rn[2], "cumsum %lldM", (long long)(C >> 20));
    snprintf(rn[3], sizeof rn[3], "sort %lldK (+idx)", (long long)(S >> 10));
    job jobs[4] = {{0, a, 0, 32}, {0, b, -1, 32}, {1, c, 0, 0}, {2, s, 0, 0}};
    printf("bench_scan%s: wick (isa %s) vs torch, median per call\n", quick ? " --quick" : "", wk_cpu_isa());
    for (int T = 1; T <= 2; T++) {
        wk_set_num_threads(T);
        double tt[4];
        int have = torch_times(python, T, quick, tt, 4) == 0;
        printf("\n=== %d thread%s\n%-22s %12s %12s %8s\n", T, T > 1 ? "s" : "", "row", "wick ms", "torch ms",
               "w/t");
        for (int r = 0; r < 4; r++) {
            double w = time_job(&jobs[r]);
            if (have)
                printf("%-22s %12.3f %12.3f %8.2f\n", rn[r], w * 1e3, tt[r] * 1e3, w / tt[r]);
            else
                printf("%-22s %12.3f %12s %8s\n", rn[r], w * 1e3, "n/a", "-");
        }
    }
    wk_tensor_free(a);
    wk_tensor_free(b);
    wk_tensor_free(c);
    wk_tensor_free(s);
    return 0;
}
