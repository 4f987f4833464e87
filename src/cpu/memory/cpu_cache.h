/* Cache sizes of this CPU, read once at first use, for GEMM blocking. */
#ifndef WICK_CPU_CACHE_H
#define WICK_CPU_CACHE_H
#include <stdint.h>

typedef struct {
    int64_t l1d;         /* bytes of L1 data cache per core */
    int64_t l2;          /* bytes of L2 per core */
    int64_t l3_per_core; /* bytes of L3 divided by the CPUs configured */
} wk_cpu_caches;

/* Never fails: unknown sizes fall back to 32 KiB / 1 MiB / 2 MiB. */
const wk_cpu_caches *wk__cpu_caches(void);

/* GEMM block sizes for a micro-tile of mr x nr elements of `esize` bytes:
 * kc so that one packed B strip (kc x nr) fills about the L1, mc so that
 * the packed A block (mc x kc) takes about half the L2, nc so that the
 * packed B panel (kc x nc) takes about half of this core's L3 share.
 * WICK_GEMM_KC / WICK_GEMM_MC / WICK_GEMM_NC override (for tuning). */
void wk__gemm_blocking(int64_t mr, int64_t nr, int64_t esize, int64_t *kc, int64_t *mc, int64_t *nc);

#endif
