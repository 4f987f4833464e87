/* Helpers shared by the bench programs: a monotonic clock, a median, and
 * running an inline PyTorch/numpy peer script in a child process (so the
 * peer is measured in the same run, on the same machine state). */
#ifndef WICK_BENCH_PEER_H
#define WICK_BENCH_PEER_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v and returns its median. */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds per call of call(ctx): doubles the batch until one batch takes
 * min_time, then the median of 5 batches (one warm-up call first). */
static inline double bench_time_calls(void (*call)(void *), void *ctx, double min_time) {
    call(ctx);
    int64_t n = 1;
    for (;;) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) call(ctx);
        if (bench_now() - t0 >= min_time || n > (1 << 24)) break;
        n *= 2;
    }
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) call(ctx);
        t[r] = (bench_now() - t0) / (double)n;
    }
    return bench_median(t, 5);
}

typedef struct bench_peer {
    FILE *out;          /* the peer's stdout, NULL if it could not start */
    char path[64];      /* the script's temporary file */
} bench_peer;

/* The ATEN_CPU_CAPABILITY for the peers: "avx512" only where the CPU has
 * what PyTorch's AVX-512 kernels need (F, BW, VL, DQ; forced elsewhere they
 * die with SIGILL), else "avx2" (AVX2 + FMA), else "default"; WICK_ISA=avx2
 * or scalar lowers it as it lowers wick's kernels (like-for-like columns).
 * NULL off x86: PyTorch chooses. bench/peer_ops.py makes the same choice. */
static inline const char *bench_aten_capability(void) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    int best = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
                   ? 2
               : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
                                                                                 : 0;
    const char *isa = getenv("WICK_ISA");
    if (isa && strcasecmp(isa, "avx2") == 0 && best > 1) best = 1;
    if (isa && strcasecmp(isa, "scalar") == 0) best = 0;
    return best == 2 ? "avx512" : best == 1 ? "avx2" : "default";
#else
    return NULL;
#endif
}

/* Writes `script` to a temporary file and starts
 *   ATEN_CPU_CAPABILITY=<bench_aten_capability()> <env> '<python>' <script file> <args>
 * (PyTorch's AVX-512 kernels where the CPU has them: otherwise PyTorch runs
 * its AVX2 kernels on AVX-512 machines). Returns false (and p->out NULL) if
 * it cannot start; the caller then prints n/a. */
static inline bool bench_peer_start(bench_peer *p, const char *python, const char *script, const char *env,
                                    const char *args) {
    p->out = NULL;
    snprintf(p->path, sizeof p->path, "/tmp/wick_bench_peer_XXXXXX");
    int fd = mkstemp(p->path);
    if (fd < 0) { p->path[0] = 0; return false; }
    FILE *f = fdopen(fd, "w");
    if (!f) { close(fd); remove(p->path); p->path[0] = 0; return false; }
    fputs(script, f);
    fclose(f);
    size_t n = 128 + strlen(python) + strlen(args) + (env ? strlen(env) : 0) + sizeof p->path;
    char *cmd = malloc(n);
    if (!cmd) return false;
    const char *cap = bench_aten_capability();
    snprintf(cmd, n, "%s%s %s '%s' '%s' %s", cap ? "ATEN_CPU_CAPABILITY=" : "", cap ? cap : "", env ? env : "",
             python, p->path, args);
    p->out = popen(cmd, "r");
    free(cmd);
    return p->out != NULL;
}

static inline void bench_peer_finish(bench_peer *p) {
    if (p->out) pclose(p->out);
    p->out = NULL;
    if (p->path[0]) remove(p->path);
    p->path[0] = 0;
}

#endif
