/* Run-time CPU feature checks that gate ISA-specific kernels. Compiled with
 * no ISA flags, so it is safe to call on any CPU. */
#include "cpu/gemm/gemm.h"
#include "cpu/quantized/qdot.h"
#include "cpu/vmath/vmath.h"

#include <stdbool.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdatomic.h>

/* AVX512-BF16 is reported by cpuid leaf 7 subleaf 1, EAX bit 5. It is only
 * usable when the AVX-512 foundation is present and the OS saves the ZMM and
 * opmask state; __builtin_cpu_supports checks XCR0 for that. */
static bool detect_avx512bf16(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
        !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d) || a < 7) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || a < 1) return false; /* subleaf 1 not reported */
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    if (!(a & (1u << 5))) return false;
    /* F16C (used by the conversion helpers compiled into the same file) */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) return false;
    return true;
}

bool wk__cpu_has_avx512bf16(void) {
    /* cached; two first callers may both detect, storing the same value */
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = detect_avx512bf16() ? 1 : 0;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 1;
}

/* AVX512-VNNI: cpuid leaf 7 subleaf 0, ECX bit 11, on top of the AVX-512
 * foundation (with the OS saving ZMM state, which __builtin_cpu_supports
 * checks). The 256-bit form used by the quantized dot products also needs
 * AVX512VL. */
static bool detect_avx512vnni(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
        !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d) || a < 7) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!(c & (1u << 11))) return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) return false; /* F16C */
    return true;
}

bool wk__cpu_has_avx512vnni(void) {
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = detect_avx512vnni() ? 1 : 0;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    /* the extension rides on the AVX-512 level: WICK_ISA=avx2 / generic
     * (or a test forcing a lower level) turns it off */
    return v == 1 && wk__vmath_level() >= WK_VMATH_AVX512;
}

#else

bool wk__cpu_has_avx512bf16(void) { return false; }
bool wk__cpu_has_avx512vnni(void) { return false; }

#endif
