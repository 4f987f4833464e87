/* The CPU device (one static instance) and the CPU backend's registry
 * descriptor: opening the device, its memory counters (cpu_alloc.c's cache)
 * and cache release. The device's private state is its generator. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/runtime/cpu_rng.h"
#include <pthread.h>
#include <string.h>

#define CPU_DEFAULT_SEED 0x5eed5eed5eedULL

static wk_cpu_rng g_rng = {.lock = ATOMIC_FLAG_INIT};
extern const wk_backend_desc wk__cpu_backend_desc;

static wk_device g_cpu = {
    .kind = WK_DEVICE_CPU, .ordinal = 0, .instance = 0, .be = &wk__cpu_backend, .desc = &wk__cpu_backend_desc,
    .name = "cpu", .seed = CPU_DEFAULT_SEED, .priv = &g_rng,
};
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void seed_once(void) { wk__cpu_rng_init(&g_rng, CPU_DEFAULT_SEED); }

static wk_device *cpu_open(int ordinal) {
    if (ordinal != 0) {
        wk__err(WK_ERR_DEVICE, "wk_cpu", "device cpu:%d requested: the CPU backend has one device, cpu:0", ordinal);
        return NULL;
    }
    pthread_once(&g_once, seed_once);
    return &g_cpu;
}

static int cpu_device_count(void) { return 1; }

static wk_status cpu_memory_stats(wk_device *dev, wk_memory_stats *out) {
    (void)dev;
    wk_cpu_mem_stats c;
    wk_cpu_mem_stats_get(&c);
    out->bytes_in_use = c.bytes_in_use;
    out->bytes_cached = c.bytes_cached;
    out->peak_bytes_in_use = c.peak_in_use;
    out->cache_hits = c.hits;
    out->cache_misses = c.misses;
    return WK_OK;
}

static wk_status cpu_release_cache(wk_device *dev, size_t *released) {
    (void)dev;
    wk_cpu_mem_stats before, after;
    wk_cpu_mem_stats_get(&before);
    wk_cpu_cache_release();
    wk_cpu_mem_stats_get(&after);
    /* other threads may cache blocks meanwhile: never report a wrapped count */
    if (released && before.bytes_cached > after.bytes_cached) *released = before.bytes_cached - after.bytes_cached;
    return WK_OK;
}

const wk_backend_desc wk__cpu_backend_desc = {
    .name = "cpu",
    .kind = WK_DEVICE_CPU,
    .ops = &wk__cpu_backend,
    .open = cpu_open,
    .device_count = cpu_device_count,
    .memory_stats = cpu_memory_stats,
    .release_cache = cpu_release_cache,
};
