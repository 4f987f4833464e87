// What every tests/cuda/test_*_emu.cu shares: the check counters and CHECK,
// the byte buffer Buf, SYNC, the xorshift test-data generator, the CPU
// backend's reference entries (wk__cpu_*, from cpu/cpu_backend.h) and the
// "total: N checks, F failures" summary that ctest and scripts/device-check.sh
// read. Each test keeps its own checks; this is only the scaffolding.
//
// Include order: a test #defines WKC_HOST_EMULATION (unless GPU_MODE) and
// #includes the kernel .cu files it tests FIRST, then this header, so the
// kernels see nothing of the test.
//
// Host emulation (the default, what ctest builds): Buf is a plain
// std::vector, SYNC does nothing, the launchers run their per-thread code on
// the host. GPU_MODE (-DGPU_MODE, linked with the CUDA runtime): the same
// file runs the real kernels; Buf lives in managed memory (so the CPU
// reference and the checks read what the GPU wrote), SYNC waits for the
// device after each launch and stops on a CUDA error, and emu_no_device()
// (false in host emulation) lets main skip when there is no GPU.
//
// Options, #defined before this header: EMU_RND_SEED (the generator's start,
// default 0x9E3779B97F4A7C15), EMU_OWN_BUF (the test defines its own Buf).
#ifndef WICK_EMU_HARNESS_CUH
#define WICK_EMU_HARNESS_CUH
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

extern "C" {
#include "core/layout.h"
#include "cpu/cpu_backend.h" /* the reference: every wk__cpu_* entry */
}

/* ---------------- buffers and synchronisation ---------------- */

#ifdef GPU_MODE
/* n bytes of managed memory (+16 spare); exits on failure */
static inline void *emu_managed_bytes(size_t n) {
    void *p = NULL;
    if (cudaMallocManaged(&p, n + 16) != cudaSuccess) {
        printf("cudaMallocManaged failed\n");
        exit(2);
    }
    return p;
}
template <class T> struct MAlloc {
    typedef T value_type;
    MAlloc() {}
    template <class U> MAlloc(const MAlloc<U> &) {}
    T *allocate(size_t n) { return (T *)emu_managed_bytes(n * sizeof(T)); }
    void deallocate(T *p, size_t) { cudaFree(p); }
    template <class U> bool operator==(const MAlloc<U> &) const { return true; }
    template <class U> bool operator!=(const MAlloc<U> &) const { return false; }
};
#ifndef EMU_OWN_BUF
typedef std::vector<unsigned char, MAlloc<unsigned char>> Buf;
#endif
#define SYNC()                                                                                                         \
    do {                                                                                                               \
        cudaError_t e_ = cudaDeviceSynchronize();                                                                      \
        if (e_ != cudaSuccess) {                                                                                       \
            printf("CUDA error %s at %d\n", cudaGetErrorString(e_), __LINE__);                                        \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)
/* true (and says so) when there is no usable CUDA device: main returns 0 */
static inline bool emu_no_device() {
    void *probe = NULL;
    if (cudaMallocManaged(&probe, 16) != cudaSuccess) {
        printf("no CUDA device: skipped\n");
        return true;
    }
    cudaFree(probe);
    return false;
}
#else
#ifndef EMU_OWN_BUF
typedef std::vector<unsigned char> Buf;
#endif
#define SYNC()                                                                                                         \
    do {                                                                                                               \
    } while (0)
static inline bool emu_no_device() { return false; }
#endif

/* ---------------- checks ---------------- */

static long g_checks = 0, g_fail = 0;
/* count one check; on failure print where and why (the first 39 only) */
#define CHECK(c, ...)                                                                                                  \
    do {                                                                                                               \
        g_checks++;                                                                                                    \
        if (!(c)) {                                                                                                    \
            g_fail++;                                                                                                  \
            if (g_fail < 40) {                                                                                         \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
                printf(__VA_ARGS__);                                                                                   \
                printf("\n");                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

/* main's last line and exit status */
static inline int emu_summary() {
    printf("total: %ld checks, %ld failures\n", g_checks, g_fail);
    return g_fail != 0;
}
/* the same with the CPU seconds since t0 */
static inline int emu_summary(clock_t t0) {
    printf("total: %ld checks, %ld failures (%.1f s)\n", g_checks, g_fail, (double)(clock() - t0) / CLOCKS_PER_SEC);
    return g_fail != 0;
}

/* ---------------- test data ---------------- */

#ifndef EMU_RND_SEED
#define EMU_RND_SEED 0x9E3779B97F4A7C15ull
#endif
static uint64_t rs = EMU_RND_SEED;
/* xorshift64: the same sequence on every run */
static inline uint64_t rnd() {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static inline const char *dtn(int dt) { return wk_dtype_name((wk_dtype)dt); }

#endif
