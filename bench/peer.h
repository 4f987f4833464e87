/* Helpers shared by the bench programs: a monotonic clock, a median, and
 * running an inline PyTorch/numpy peer script in a child process (so the
 * peer is measured in the same run, on the same machine state). */
#ifndef WICK_BENCH_PEER_H
#define WICK_BENCH_PEER_H
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

typedef struct bench_peer {
    FILE *out;          /* the peer's stdout, NULL if it could not start */
    char path[64];      /* the script's temporary file */
} bench_peer;

/* True when this CPU runs PyTorch's AVX-512 kernels (its avx512 level needs
 * F, BW, DQ and VL). Elsewhere forcing ATEN_CPU_CAPABILITY=avx512 makes
 * PyTorch die with SIGILL, and every peer column would read n/a. */
static inline bool bench_cpu_has_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

/* Writes `script` to a temporary file and starts
 *   [ATEN_CPU_CAPABILITY=avx512] <env> '<python>' <script file> <args>
 * The capability is forced only where the CPU has AVX-512 (PyTorch's fast
 * setting there: by default it runs its AVX2 kernels); other CPUs get
 * PyTorch's own choice. Returns false (and p->out NULL) if it cannot start;
 * the caller then prints n/a. */
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
    snprintf(cmd, n, "%s%s '%s' '%s' %s", bench_cpu_has_avx512() ? "ATEN_CPU_CAPABILITY=avx512 " : "", env ? env : "",
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
