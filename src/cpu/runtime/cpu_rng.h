/* The CPU device's private state (wk_device.priv, see cpu_device.c): its
 * generator, xoshiro256** seeded through splitmix64 (cpu_backend.c), behind
 * a spin lock. C only (kept out of cpu_backend.h, which C++ tests include). */
#ifndef WICK_CPU_RNG_H
#define WICK_CPU_RNG_H
#include <stdatomic.h>
#include <stdint.h>

typedef struct wk_cpu_rng {
    uint64_t s[4];
    atomic_flag lock;
} wk_cpu_rng;

void wk__cpu_rng_init(wk_cpu_rng *r, uint64_t seed);

#endif
