/* Devices. The CPU device is one static instance. GPU constructors return a
 * clean "not compiled in" error until their backend is in the build (issue:
 * CUDA backend; with WICK_HAVE_CUDA wk_cuda opens src/cuda/cuda_device.c's
 * cached device). Identity is the instance, and error messages print the
 * instance id so "device mismatch" never shows two equal names. */
#include "core/tensor.h"
#include "cuda/cuda_device.h"
#include <stdio.h>
#include <string.h>

static wk_device g_cpu = {
    .kind = WK_DEVICE_CPU, .ordinal = 0, .instance = 0, .be = &wk__cpu_backend, .name = "cpu",
    .seed = 0x5eed5eed5eedULL, .rng = {0}, .rng_lock = ATOMIC_FLAG_INIT,
};
static atomic_int g_cpu_seeded;

void wk__rng_seed(wk_device *dev, uint64_t seed);

wk_device *wk_cpu(void) {
    if (!atomic_load_explicit(&g_cpu_seeded, memory_order_acquire)) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&g_cpu_seeded, &expected, 1)) {
            wk__rng_seed(&g_cpu, g_cpu.seed);
            atomic_store_explicit(&g_cpu_seeded, 2, memory_order_release);
        }
        while (atomic_load_explicit(&g_cpu_seeded, memory_order_acquire) != 2) { /* another thread seeds */ }
    }
    return &g_cpu;
}

wk_device *wk_cuda(int ordinal) {
#ifdef WICK_HAVE_CUDA
    /* one cached instance per ordinal; NULL + WK_ERR_DEVICE without a usable GPU */
    return wk__cuda_open(ordinal);
#else
    wk__err(WK_ERR_NOT_COMPILED, "wk_cuda", "device cuda:%d requested, but wick was built without the CUDA backend",
            ordinal);
    return NULL;
#endif
}

int wk_cuda_device_count(void) { return wk__cuda_device_count(); }

wk_device *wk_metal(int ordinal) {
    wk__err(WK_ERR_NOT_COMPILED, "wk_metal", "device metal:%d requested, but wick has no Metal backend on this platform",
            ordinal);
    return NULL;
}

wk_device_kind wk_device_kind_of(const wk_device *dev) { return dev ? dev->kind : WK_DEVICE_CPU; }
const char *wk_device_name(const wk_device *dev) { return dev ? dev->name : "(null device)"; }
bool wk_same_device(const wk_device *a, const wk_device *b) { return a && b && a == b; }

wk_status wk_device_synchronize(wk_device *dev) {
    if (!dev) return wk__err(WK_ERR_ARG, "wk_device_synchronize", "NULL device");
    return dev->be->synchronize(dev);
}

wk_status wk_device_set_seed(wk_device *dev, uint64_t seed) {
    if (!dev) return wk__err(WK_ERR_ARG, "wk_device_set_seed", "NULL device");
    if (dev == &g_cpu) wk_cpu();
    return dev->be->set_seed(dev, seed);
}

uint64_t wk_device_seed(const wk_device *dev) { return dev ? dev->seed : 0; }

wk_status wk_device_memory_stats(wk_device *dev, wk_memory_stats *out) {
    const char *op = "wk_device_memory_stats";
    if (!out) return wk__err(WK_ERR_ARG, op, "NULL output");
    memset(out, 0, sizeof *out);
    if (!dev) return wk__err(WK_ERR_ARG, op, "NULL device");
    if (dev->kind == WK_DEVICE_CPU) {
        wk_cpu_mem_stats c;
        wk_cpu_mem_stats_get(&c);
        out->bytes_in_use = c.bytes_in_use;
        out->bytes_cached = c.bytes_cached;
        out->peak_bytes_in_use = c.peak_in_use;
        out->cache_hits = c.hits;
        out->cache_misses = c.misses;
        return WK_OK;
    }
    if (dev->kind != WK_DEVICE_CUDA) return wk__err(WK_ERR_DEVICE, op, "no memory counters for %s", dev->name);
    wk_cupool_stats s;
    if (wk__cuda_mem_stats(dev, &s) != WK_OK) return wk_last_status();
    out->bytes_in_use = s.bytes_in_use;
    out->bytes_cached = s.bytes_cached;
    out->peak_bytes_in_use = s.peak_in_use;
    out->cache_hits = s.hits;
    out->cache_misses = s.misses;
    out->alloc_failures = s.failures;
    return WK_OK;
}

wk_status wk_device_release_cache(wk_device *dev, size_t *released) {
    const char *op = "wk_device_release_cache";
    if (released) *released = 0;
    if (!dev) return wk__err(WK_ERR_ARG, op, "NULL device");
    if (dev->kind == WK_DEVICE_CPU) {
        wk_cpu_mem_stats before, after;
        wk_cpu_mem_stats_get(&before);
        wk_cpu_cache_release();
        wk_cpu_mem_stats_get(&after);
        /* other threads may cache blocks meanwhile: never report a wrapped count */
        if (released && before.bytes_cached > after.bytes_cached) *released = before.bytes_cached - after.bytes_cached;
        return WK_OK;
    }
    if (dev->kind != WK_DEVICE_CUDA) return wk__err(WK_ERR_DEVICE, op, "no buffer cache on %s", dev->name);
    return wk__cuda_cache_release(dev, released);
}

const char *wk_backends(void) {
#ifdef WICK_HAVE_CUDA
    return "cpu cuda"; /* compiled in; wk_cuda() says whether a device is usable */
#else
    return "cpu";
#endif
}
