/* Memory the process really holds beside what wick's CPU allocator counts.
 *
 *   bench_rss [--quick] [--seconds S] [--limit-mb M]
 *
 * A create/free loop over a pool of 48 live tensors of mixed sizes, like a
 * model's temporaries: each step frees one slot and fills it with a new f32
 * tensor whose size is log-uniform between 64 bytes and 48 MiB (wk_full, so
 * every page is touched). It runs for S seconds (default 60; --quick 2) and
 * prints, ten times over the run: the time, the resident set (RSS, from
 * /proc/self/statm), bytes_in_use + bytes_cached (wk_cpu_mem_stats_get) and
 * RSS minus the baseline minus that sum, i.e. memory the process holds that
 * the allocator does not account for (freed blocks kept by the C library's
 * heap). Then it frees the pool, calls wk_cpu_cache_release and prints RSS
 * beside the baseline taken before the loop. The cache limit is --limit-mb,
 * else what WICK_CPU_CACHE_MB says (default 1024 MiB). --quick: 2 s, sizes
 * up to 8 MiB and (unless --limit-mb) a 16 MiB limit, so that even on a
 * loaded machine (first-touch page faults dominate) it reaches the limit and
 * evicts. Sizes come from a fixed-seed generator, so runs differ only in how
 * many steps fit in the time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wick/wick.h"

#define POOL 48
#define MiB (1024.0 * 1024.0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident bytes of this process (second field of /proc/self/statm, in pages). */
static double rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    unsigned long size = 0, res = 0;
    int n = fscanf(f, "%lu %lu", &size, &res);
    fclose(f);
    if (n != 2) return -1;
    return (double)res * (double)sysconf(_SC_PAGESIZE);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { /* xorshift64* */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545f4914f6cdd1dull;
}

static double g_max_log2 = 25.58; /* log2(48 MiB) */

/* Element count of a log-uniform size in [64 B, 2^g_max_log2 B] of f32. */
static int64_t random_numel(void) {
    double lo = 6.0, hi = g_max_log2; /* log2(64) */
    double u = (double)(next_u64() >> 11) / 9007199254740992.0;
    double bytes = __builtin_exp2(lo + u * (hi - lo));
    int64_t n = (int64_t)(bytes / 4.0);
    return n < 1 ? 1 : n;
}

static void row(double t0, double base) {
    wk_cpu_mem_stats s;
    wk_cpu_mem_stats_get(&s);
    double rss = rss_bytes() - base;
    double acc = (double)(s.bytes_in_use + s.bytes_cached);
    printf("%7.1f  %10.1f  %10.1f  %9.1f  %9.1f  %9.1f\n", now() - t0, rss / MiB, acc / MiB,
           (double)s.bytes_in_use / MiB, (double)s.bytes_cached / MiB, (rss - acc) / MiB);
}

int main(int argc, char **argv) {
    double seconds = 60, limit_mb = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            seconds = 2;
            g_max_log2 = 23; /* 8 MiB */
            if (limit_mb < 0) limit_mb = 16;
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--limit-mb") && i + 1 < argc) {
            limit_mb = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_rss [--quick] [--seconds S] [--limit-mb M]\n");
            return 2;
        }
    }
    wk_device *cpu = wk_cpu();
    if (limit_mb >= 0 && wk_cpu_cache_set_limit((size_t)(limit_mb * MiB)) != WK_OK) return 1;
    wk_tensor *pool[POOL] = {0};
    wk_cpu_mem_stats s0;
    wk_cpu_mem_stats_get(&s0);
    /* the baseline: the library initialised (thread pool up) before the loop */
    wk_tensor *warm = wk_full((int64_t[]){1024}, 1, 1.0, WK_F32, cpu);
    wk_tensor *warm2 = wk_add(warm, warm);
    wk_tensor_free(warm2);
    wk_tensor_free(warm);
    wk_cpu_cache_release();
    double base = rss_bytes();
    printf("bench_rss: %.0f s, pool %d, sizes 64 B .. %.0f MiB, cache limit %.0f MiB, baseline RSS %.1f MiB\n",
           seconds, POOL, __builtin_exp2(g_max_log2) / MiB, (double)s0.cache_limit / MiB, base / MiB);
    printf("%7s  %10s  %10s  %9s  %9s  %9s\n", "time_s", "rss-base", "used+cach", "in_use", "cached", "excess");
    double t0 = now(), next = t0 + seconds / 10;
    long steps = 0;
    int bad = 0;
    while (now() - t0 < seconds) {
        int slot = (int)(next_u64() % POOL);
        wk_tensor_free(pool[slot]);
        int64_t n = random_numel();
        pool[slot] = wk_full(&n, 1, (double)(steps & 7), WK_F32, cpu);
        if (!pool[slot]) {
            fprintf(stderr, "bench_rss: %s\n", wk_last_error());
            bad = 1;
            break;
        }
        steps++;
        if (now() >= next) {
            row(t0, base);
            next += seconds / 10;
        }
    }
    for (int i = 0; i < POOL; i++) wk_tensor_free(pool[i]);
    row(t0, base);
    wk_cpu_cache_release();
    double after = rss_bytes();
    printf("%ld steps; after wk_cpu_cache_release: RSS %.1f MiB, baseline %.1f MiB, difference %+.1f MiB\n", steps,
           after / MiB, base / MiB, (after - base) / MiB);
    return bad;
}
