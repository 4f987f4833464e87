/* bench/membw: the DRAM read bandwidth of this machine, the ceiling that
 * decode of a model larger than the caches runs against (bench/generate's
 * "% of DRAM" column divides by it).
 *
 *   bench_membw [--threads "1 2"] [--mib N] [--reps R] [--quick]
 *
 * Per thread count T: a buffer of N MiB (default 1024: many times any L3
 * here) is written once (page faults out of the timing), then read R times
 * (default 7) by T threads, each summing its contiguous slice with 16-byte
 * loads in four independent chains (enough in flight for the hardware
 * prefetcher to stream; wider loads do not read DRAM faster), on huge
 * pages where the kernel gives them (MADV_HUGEPAGE). The figure is
 * the median of the R passes, bytes read / wall time, in GB/s (10^9).
 *
 * --quick (the CI smoke run): 64 MiB, 2 passes, 1 thread.
 *
 * Output: one line per T, "peer=membw threads=T read_gbs=X mib=N reps=R",
 * which bench/generate/table.py picks up from bench-generate.sh's log. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "peer.h"

typedef long long v2i __attribute__((vector_size(16)));

typedef struct {
    const v2i *p;
    size_t n; /* vectors */
    long long sum;
    pthread_barrier_t *start;
} slice;

static void *read_slice(void *arg) {
    slice *s = arg;
    if (s->start) pthread_barrier_wait(s->start);
    v2i a = {0, 0}, b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 4 <= s->n; i += 4) {
        a += s->p[i];
        b += s->p[i + 1];
        c += s->p[i + 2];
        d += s->p[i + 3];
    }
    for (; i < s->n; i++) a += s->p[i];
    v2i t = a + b + c + d;
    s->sum = t[0] + t[1];
    return NULL;
}

/* One pass by nt threads (the caller is thread 0); seconds. */
static double one_pass(const v2i *buf, size_t nvec, int nt, long long *sink) {
    pthread_t th[64];
    slice sl[64];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nt);
    size_t per = nvec / (size_t)nt;
    for (int t = 0; t < nt; t++)
        sl[t] = (slice){buf + per * (size_t)t, t == nt - 1 ? nvec - per * (size_t)t : per, 0, &start};
    int started = 1;
    for (int t = 1; t < nt; t++, started++)
        if (pthread_create(&th[t], NULL, read_slice, &sl[t]) != 0) break;
    if (started < nt) { /* could not start them all: let the others go, report nothing */
        for (int t = started; t < nt; t++) sl[t].start = NULL;
        for (int t = 1; t < started; t++) pthread_barrier_wait(&start);
    }
    double t0 = bench_now();
    sl[0].start = NULL;
    pthread_barrier_wait(&start);
    read_slice(&sl[0]);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    double dt = bench_now() - t0;
    for (int t = 0; t < started; t++) *sink += sl[t].sum;
    pthread_barrier_destroy(&start);
    return started == nt ? dt : -1;
}

int main(int argc, char **argv) {
    const char *threads = "1 2";
    long mib = 1024;
    int reps = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads") && v) threads = argv[++i];
        else if (!strcmp(a, "--mib") && v) mib = atol(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--quick")) threads = "1", mib = 64, reps = 2;
        else {
            fprintf(stderr, "usage: bench_membw [--threads \"1 2\"] [--mib N] [--reps R] [--quick]\n");
            return 2;
        }
    }
    if (mib < 1 || reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_membw: need --mib >= 1 and 1 <= --reps <= 1000\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20;
    v2i *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, bytes) != 0) {
        fprintf(stderr, "bench_membw: cannot allocate %ld MiB\n", mib);
        return 1;
    }
#ifdef MADV_HUGEPAGE
    /* as wick's allocator and the mapped model files ask: 4 KiB pages would
     * measure TLB misses as much as DRAM */
    madvise(buf, bytes, MADV_HUGEPAGE);
#endif
    memset(buf, 1, bytes);
    size_t nvec = bytes / sizeof(v2i);
    long long sink = 0;
    double *dt = malloc(sizeof(double) * (size_t)reps);
    if (!dt) return 1;
    int rc = 0;
    for (const char *p = threads; *p;) {
        char *end;
        long nt = strtol(p, &end, 10);
        if (end == p) break;
        p = end;
        if (nt < 1 || nt > 64) {
            fprintf(stderr, "bench_membw: thread counts must be 1..64\n");
            rc = 2;
            break;
        }
        one_pass(buf, nvec, (int)nt, &sink); /* warm the threads' stacks and the TLB */
        int ok = 0;
        for (int r = 0; r < reps; r++) {
            double t = one_pass(buf, nvec, (int)nt, &sink);
            if (t > 0) dt[ok++] = t;
        }
        if (!ok) {
            fprintf(stderr, "bench_membw: could not start %ld threads\n", nt);
            rc = 1;
            continue;
        }
        double gbs = (double)bytes / bench_median(dt, ok) / 1e9;
        printf("membw: %ld thread%s read %.1f GB/s (median of %d passes over %ld MiB)\n", nt, nt == 1 ? "" : "s",
               gbs, ok, mib);
        printf("peer=membw threads=%ld read_gbs=%.2f mib=%ld reps=%d\n", nt, gbs, mib, ok);
    }
    if (sink == 42) puts(""); /* keep the sums alive */
    free(dt);
    free(buf);
    return rc;
}
