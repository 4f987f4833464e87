/* Cache sizes from the C library (glibc reads cpuid leaf 4 / 0x8000001D) and
 * GEMM block sizes derived from them. */
#include "cpu/memory/cpu_cache.h"
#include "base/env.h"
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static wk_cpu_caches g_caches;
static int64_t g_env_kc, g_env_mc, g_env_nc; /* WICK_GEMM_* overrides, 0 = none */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int64_t conf(int name, int64_t fallback) {
    long v = sysconf(name);
    return v > 0 ? (int64_t)v : fallback;
}

static int64_t env_pos(wk_env_id id) {
    int64_t x;
    return wk__env_get(id, &x) ? x : 0; /* the range [1, 2^20] is env.c's */
}

static void detect(void) {
    g_env_kc = env_pos(WK_ENV_GEMM_KC);
    g_env_mc = env_pos(WK_ENV_GEMM_MC);
    g_env_nc = env_pos(WK_ENV_GEMM_NC);
    wk_cpu_caches c = {32 << 10, 1 << 20, 2 << 20};
#ifdef _SC_LEVEL1_DCACHE_SIZE
    c.l1d = conf(_SC_LEVEL1_DCACHE_SIZE, c.l1d);
    c.l2 = conf(_SC_LEVEL2_CACHE_SIZE, c.l2);
    int64_t l3 = conf(_SC_LEVEL3_CACHE_SIZE, 0), cpus = conf(_SC_NPROCESSORS_CONF, 1);
    if (l3 > 0) c.l3_per_core = l3 / cpus;
#endif
    /* guard against nonsense (some hypervisors report 0 or huge values) */
    if (c.l1d < (16 << 10) || c.l1d > (1 << 20)) c.l1d = 32 << 10;
    if (c.l2 < (128 << 10) || c.l2 > (64 << 20)) c.l2 = 1 << 20;
    if (c.l3_per_core < c.l2) c.l3_per_core = c.l2;
    g_caches = c;
}

const wk_cpu_caches *wk__cpu_caches(void) {
    pthread_once(&g_once, detect);
    return &g_caches;
}


static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void wk__gemm_blocking(int64_t mr, int64_t nr, int64_t esize, int64_t *kc, int64_t *mc, int64_t *nc) {
    const wk_cpu_caches *c = wk__cpu_caches();
    /* kc: a packed B strip (kc x nr) about the size of the L1; the A strip
     * (kc x mr) and the C tile stream past it (measured on a 48 KiB L1:
     * kc 384 for 8 x 32 f32 tiles beats 256 by ~10% once C is prefetched) */
    int64_t k = clamp(c->l1d / (nr * esize), 64, 1024) / 8 * 8;
    if (g_env_kc) k = g_env_kc;
    int64_t m = clamp(c->l2 / 2 / (k * esize), mr, 4096) / mr * mr;
    if (g_env_mc) m = g_env_mc;
    int64_t n = clamp(c->l3_per_core / 2 / (k * esize), nr * 4, 8192) / nr * nr;
    if (g_env_nc) n = g_env_nc;
    *kc = k;
    *mc = m < mr ? mr : m / mr * mr;
    *nc = n < nr ? nr : n / nr * nr;
}
