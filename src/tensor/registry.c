/* The backend registry: the only way the library reaches a backend's devices.
 * Built-in backends are listed in wk__builtin_backends, a NULL-terminated
 * table that CMake generates into the build tree (wick_backends.c) from the
 * backends in the build; the first lookup registers them. Referencing the
 * table from here is what links each backend's descriptor into programs
 * that use the static library (no constructor the linker could drop). */
#include "tensor/tensor.h"
#include <pthread.h>
#include <string.h>

extern const wk_backend_desc *const wk__builtin_backends[];

#define MAX_BACKENDS 16

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* append-only: an entry, once published by the count, never changes */
static const wk_backend_desc *g_list[MAX_BACKENDS];
static atomic_int g_count;

static wk_status add_locked(const wk_backend_desc *d) {
    int n = atomic_load_explicit(&g_count, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (strcmp(g_list[i]->name, d->name) == 0)
            return wk__err(WK_ERR_ARG, "wk__backend_register", "a backend named '%s' is already registered", d->name);
    if (n == MAX_BACKENDS)
        return wk__err(WK_ERR_ARG, "wk__backend_register", "cannot register '%s': %d backends already", d->name,
                       MAX_BACKENDS);
    g_list[n] = d;
    atomic_store_explicit(&g_count, n + 1, memory_order_release);
    return WK_OK;
}

static void add_builtins(void) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; wk__builtin_backends[i]; i++) (void)add_locked(wk__builtin_backends[i]);
    pthread_mutex_unlock(&g_lock);
}

static int count(void) {
    pthread_once(&g_once, add_builtins);
    return atomic_load_explicit(&g_count, memory_order_acquire);
}

wk_status wk__backend_register(const wk_backend_desc *d) {
    const char *op = "wk__backend_register";
    if (!d || !d->name || !d->ops || !d->open || !d->device_count)
        return wk__err(WK_ERR_ARG, op, "descriptor %s lacks a name, table, open or device_count",
                       d && d->name ? d->name : "(unnamed)");
    (void)count();
    pthread_mutex_lock(&g_lock);
    wk_status st = add_locked(d);
    pthread_mutex_unlock(&g_lock);
    return st;
}

const wk_backend_desc *wk__backend_at(int i) {
    int n = count();
    return i >= 0 && i < n ? g_list[i] : NULL;
}

const wk_backend_desc *wk__backend_find(const char *name) {
    int n = count();
    for (int i = 0; name && i < n; i++)
        if (strcmp(g_list[i]->name, name) == 0) return g_list[i];
    return NULL;
}

const wk_backend_desc *wk__backend_of_kind(wk_device_kind kind) {
    int n = count();
    for (int i = 0; i < n; i++)
        if (g_list[i]->kind == kind) return g_list[i];
    return NULL;
}
