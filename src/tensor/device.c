/* Devices, through the backend registry (tensor/registry.c): wk_cpu() and
 * wk_cuda() open the device of the registered backend of that kind, and
 * memory counters, cache release and seeds go through the backend's
 * descriptor or table. No backend is named here; a kind with no backend in
 * the build answers WK_ERR_NOT_COMPILED. Identity is the instance, and error
 * messages print the instance id so "device mismatch" never shows two equal
 * names. */
#include "tensor/tensor.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static _Atomic(wk_device *) g_cpu;

wk_device *wk_cpu(void) {
    wk_device *d = atomic_load_explicit(&g_cpu, memory_order_acquire);
    if (d) return d;
    const wk_backend_desc *b = wk__backend_of_kind(WK_DEVICE_CPU);
    d = b ? b->open(0) : NULL; /* the backend caches its one instance */
    if (d) atomic_store_explicit(&g_cpu, d, memory_order_release);
    return d;
}

wk_device *wk_cuda(int ordinal) {
    const wk_backend_desc *b = wk__backend_of_kind(WK_DEVICE_CUDA);
    if (!b) {
        wk__err(WK_ERR_NOT_COMPILED, "wk_cuda",
                "device cuda:%d requested, but wick was built without the CUDA backend", ordinal);
        return NULL;
    }
    /* one cached instance per ordinal; NULL + WK_ERR_DEVICE without a usable GPU */
    return b->open(ordinal);
}

int wk_cuda_device_count(void) {
    const wk_backend_desc *b = wk__backend_of_kind(WK_DEVICE_CUDA);
    return b ? b->device_count() : 0;
}

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
    return dev->be->set_seed(dev, seed);
}

uint64_t wk_device_seed(const wk_device *dev) { return dev ? dev->seed : 0; }

wk_status wk_device_memory_stats(wk_device *dev, wk_memory_stats *out) {
    const char *op = "wk_device_memory_stats";
    if (!out) return wk__err(WK_ERR_ARG, op, "NULL output");
    memset(out, 0, sizeof *out);
    if (!dev) return wk__err(WK_ERR_ARG, op, "NULL device");
    if (!dev->desc || !dev->desc->memory_stats) return wk__err(WK_ERR_DEVICE, op, "no memory counters for %s", dev->name);
    return dev->desc->memory_stats(dev, out);
}

uintptr_t wk__device_stream(const wk_device *dev) {
    return dev && dev->desc && dev->desc->stream ? dev->desc->stream(dev) : 0;
}

wk_status wk_device_release_cache(wk_device *dev, size_t *released) {
    const char *op = "wk_device_release_cache";
    if (released) *released = 0;
    if (!dev) return wk__err(WK_ERR_ARG, op, "NULL device");
    if (!dev->desc || !dev->desc->release_cache) return wk__err(WK_ERR_DEVICE, op, "no buffer cache on %s", dev->name);
    return dev->desc->release_cache(dev, released);
}

/* "cpu cuda": the backends compiled in (wk_cuda() says whether a device is
 * usable), built once from the registry. */
static char g_names[128];
static pthread_once_t g_names_once = PTHREAD_ONCE_INIT;

static void build_names(void) {
    size_t used = 0;
    const wk_backend_desc *b;
    for (int i = 0; (b = wk__backend_at(i)) != NULL; i++) {
        int w = snprintf(g_names + used, sizeof g_names - used, "%s%s", i ? " " : "", b->name);
        if (w < 0 || (size_t)w >= sizeof g_names - used) break;
        used += (size_t)w;
    }
}

const char *wk_backends(void) {
    pthread_once(&g_names_once, build_names);
    return g_names;
}
