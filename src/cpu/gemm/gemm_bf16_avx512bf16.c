/* bf16 x bf16 -> f32 GEMM for CPUs with AVX512-BF16: the vdpbf16ps kernel
 * pair of the GEMM loop nest (gemm_loop.c, contract in gemm.h). Compiled
 * with -mavx512bf16 (CMakeLists.txt filename rule); call only after
 * wk__cpu_has_avx512bf16().
 *
 * Two inner products, one loop nest:
 *  - dp (this file): vdpbf16ps, 32 bf16 products summed pairwise into 16
 *    f32 lanes per instruction. B strips hold k pairs interleaved (per pair
 *    and column two consecutive uint16: b[p][j], b[p+1][j]), A strips one
 *    32-bit word per row and pair (a[i][p] low, a[i][p+1] high) to
 *    broadcast; odd k is zero padded in both (kq = 2).
 *  - fma (wk__ukr_bf16_avx512, gemm_avx512.c): bf16 widened to f32 while
 *    packing (exact: a shift), then the f32 micro-kernel. On Intel
 *    Sapphire/Emerald Rapids vdpbf16ps zmm issues once per 2 cycles on the
 *    FMA port (measured: 4x the reciprocal throughput of vfmadd231ps, so
 *    half the FLOP rate), so that path is the faster one there and the
 *    default on Intel; dp is the default elsewhere (AMD Zen 4/5 run
 *    vdpbf16ps at the FMA rate). WICK_BF16_KERNEL=dp|fma overrides (tests
 *    use it to cover both).
 * The first k slice stores C, later ones add to it, so every C element is
 * summed in the same order whatever the thread split: 1 and 2 threads give
 * bit-identical results.
 *
 * Products of two bf16 are exact in f32, so the only error is the f32
 * summation; the dp path also treats denormal bf16 inputs as zero and flushes
 * denormal results (vdpbf16ps is DAZ/FTZ). */
#include "base/env.h"
#include "cpu/gemm/gemm.h"
#include "cpu/runtime/threadpool.h"
#include "wick/wick.h"

#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MR 14             /* rows of the register tile (28 accumulators) */
#define NR 32             /* columns of the register tile (2 zmm) */
#define KC_DP 512         /* k values per block (even): B strip 32 KiB */
#define MC (MR * 24)      /* rows per packed A block: 336 KiB (L2) */
#define NC 1024           /* columns per packed B panel: 1 MiB (L2) */

/* ------------------------------------------------------------ micro-kernels */

/* Write (first k block) or add the R x 32 tile acc0/acc1 to C rows r < mr,
 * columns j < nr (masked when nr < 32). */
#define STORE_TILE(R)                                                                                        \
    __mmask16 k0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);                               \
    __mmask16 k1 = nr >= NR ? (__mmask16)0xFFFF : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : (__mmask16)0; \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                                  \
        if (r >= mr) break;                                                                                  \
        float *row = c + r * ldc;                                                                            \
        if (!first) {                                                                                        \
            acc0[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(k0, row), acc0[r]);                                \
            acc1[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(k1, row + 16), acc1[r]);                           \
        }                                                                                                    \
        _mm512_mask_storeu_ps(row, k0, acc0[r]);                                                             \
        _mm512_mask_storeu_ps(row + 16, k1, acc1[r]);                                                        \
    }

/* vdpbf16ps: C[mr x nr] (row stride ldc) = or += the R x 32 product of an A
 * strip (kp pairs, `as` words per pair, only the first R used) and a B strip
 * (kp x 64 uint16). R >= mr; rows past mr of the strip are zero and are not
 * stored. */
#define DEF_MICRO(R)                                                                                         \
    static void micro_##R(int64_t kp, const uint32_t *restrict ap, int64_t as, const uint16_t *restrict bp,   \
                          float *restrict c, int64_t ldc, int64_t mr, int64_t nr, bool first) {               \
        __m512 acc0[R], acc1[R];                                                                             \
        for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm512_setzero_ps();                                 \
        for (int64_t q = 0; q < kp; q++) {                                                                   \
            __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)bp);                                    \
            __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(bp + 32));                             \
            for (int r = 0; r < R; r++) {                                                                    \
                __m512bh av = (__m512bh)_mm512_set1_epi32((int)ap[r]);                                       \
                acc0[r] = _mm512_dpbf16_ps(acc0[r], av, b0);                                                 \
                acc1[r] = _mm512_dpbf16_ps(acc1[r], av, b1);                                                 \
            }                                                                                                \
            ap += as;                                                                                        \
            bp += 64;                                                                                        \
        }                                                                                                    \
        STORE_TILE(R)                                                                                        \
    }

_Static_assert(MR == 14, "micro_14 covers a full row strip");
DEF_MICRO(14)
DEF_MICRO(8)
DEF_MICRO(4)
DEF_MICRO(2)
DEF_MICRO(1)

/* ------------------------------------------------------------------ packers */

static inline uint32_t pair(uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; }
/* Gathers of 16 columns of a transposed B: int32 indices j * bcs (scaled by
 * 2 bytes) for j < 16, usable while 31 * bcs fits an int32. */
static inline bool gather_ok(int64_t bcs) { return bcs > 0 && bcs <= INT32_MAX / 32; }
static inline __m512i gather_idx(int64_t bcs) {
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32((int)bcs));
}

/* One B strip (columns [j0, j0+w), k values [p0, p0+kc)): kp pairs x 32
 * columns x 2 uint16, columns past w zero. */
static void pack_b_dp(const wk_gemm_args *g, int64_t j0, int64_t w, int64_t p0, int64_t kc, void *vdst) {
    const wk_gemm_args *x = g;
    uint16_t *dst = vdst;
    const int64_t kp = (kc + 1) / 2;
    const uint16_t *src = (const uint16_t *)x->b + p0 * x->brs + j0 * x->bcs;
    if (x->bcs == 1) {
        /* rows contiguous: two 32-column rows -> 2 vectors of 16 interleaved pairs */
        const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38,
                                            6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
        const __m512i hi = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24, 55, 23,
                                            54, 22, 53, 21, 52, 20, 51, 19, 50, 18, 49, 17, 48, 16);
        __mmask32 mk = w == NR ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << w) - 1);
        for (int64_t q = 0; q < kp; q++) {
            const uint16_t *r0 = src + 2 * q * x->brs;
            __m512i v0 = _mm512_maskz_loadu_epi16(mk, r0);
            __m512i v1 = 2 * q + 1 < kc ? _mm512_maskz_loadu_epi16(mk, r0 + x->brs) : _mm512_setzero_si512();
            _mm512_storeu_si512((void *)(dst + q * 64), _mm512_permutex2var_epi16(v0, lo, v1));
            _mm512_storeu_si512((void *)(dst + q * 64 + 32), _mm512_permutex2var_epi16(v0, hi, v1));
        }
        return;
    }
    if (w == NR && x->brs == 1 && gather_ok(x->bcs)) {
        /* columns contiguous (transposed B): the pair (b[p][j], b[p+1][j]) is
         * one 32-bit word, already in packed order; gather 16 columns at once */
        const __m512i idx = gather_idx(x->bcs);
        int64_t q = 0;
        for (; q < kc / 2; q++) {
            _mm512_storeu_si512((void *)(dst + q * 64), _mm512_i32gather_epi32(idx, src + 2 * q, 2));
            _mm512_storeu_si512((void *)(dst + q * 64 + 32), _mm512_i32gather_epi32(idx, src + 16 * x->bcs + 2 * q, 2));
        }
        for (int64_t j = 0; q < kp && j < NR; j++) { /* odd kc */
            dst[q * 64 + 2 * j] = src[j * x->bcs + 2 * q];
            dst[q * 64 + 2 * j + 1] = 0;
        }
        return;
    }
    if (w < NR) memset(dst, 0, sizeof(uint16_t) * (size_t)(kp * 64));
    for (int64_t j = 0; j < w; j++) {
        const uint16_t *col = src + j * x->bcs;
        uint16_t *d = dst + 2 * j;
        int64_t q = 0;
        if (x->brs == 1) {
            /* columns contiguous: a pair is one 32-bit word */
            for (; q < kc / 2; q++) memcpy(d + q * 64, col + 2 * q, 4);
        } else {
            for (; q < kc / 2; q++) {
                d[q * 64] = col[2 * q * x->brs];
                d[q * 64 + 1] = col[(2 * q + 1) * x->brs];
            }
        }
        if (q < kp) { /* odd kc: the pair's second value is zero */
            d[q * 64] = col[2 * q * x->brs];
            d[q * 64 + 1] = 0;
        }
    }
}

/* One A strip (rows [i0, i0+mr), k values [p0, p0+kc)): [kp][MR] pair
 * words, rows past mr zero. */
static void pack_a_dp(const wk_gemm_args *g, int64_t i0, int64_t mr, int64_t p0, int64_t kc, void *vdst) {
    const int64_t kp = (kc + 1) / 2, ars = g->ars, acs = g->acs;
    const uint16_t *src = (const uint16_t *)g->a + i0 * ars + p0 * acs;
    uint32_t *d = vdst;
    if (acs != 1 && ars == 1) {
        /* transposed A: rows consecutive in memory */
        for (int64_t q = 0; q < kp; q++) {
            const uint16_t *c0 = src + 2 * q * acs, *c1 = c0 + acs;
            bool full = 2 * q + 1 < kc;
            for (int64_t r = 0; r < mr; r++) d[q * MR + r] = pair(c0[r], full ? c1[r] : 0);
            for (int64_t r = mr; r < MR; r++) d[q * MR + r] = 0;
        }
        return;
    }
    for (int64_t r = 0; r < mr; r++) {
        const uint16_t *row = src + r * ars;
        int64_t q = 0;
        if (acs == 1)
            for (; q < kc / 2; q++) memcpy(d + q * MR + r, row + 2 * q, 4);
        else
            for (; q < kc / 2; q++) d[q * MR + r] = pair(row[2 * q * acs], row[(2 * q + 1) * acs]);
        if (q < kp) d[q * MR + r] = pair(row[2 * q * acs], 0);
    }
    for (int64_t r = mr; r < MR; r++)
        for (int64_t q = 0; q < kp; q++) d[q * MR + r] = 0;
}

/* The smallest kernel that covers mr rows: per element the arithmetic is the
 * same whichever kernel runs, so the choice never changes a result. */
static void micro_dp(int64_t kc, const void *ap, const void *bp, int64_t ldb, void *vc, int64_t ldc, int64_t mr,
                     int64_t nr, bool first) {
    (void)ldb; /* strips are always packed */
    const int64_t kp = (kc + 1) / 2;
    const uint32_t *a = ap;
    const uint16_t *b = bp;
    float *c = vc;
    if (mr > 8)
        micro_14(kp, a, MR, b, c, ldc, mr, nr, first);
    else if (mr > 4)
        micro_8(kp, a, MR, b, c, ldc, mr, nr, first);
    else if (mr > 2)
        micro_4(kp, a, MR, b, c, ldc, mr, nr, first);
    else if (mr == 2)
        micro_2(kp, a, MR, b, c, ldc, mr, nr, first);
    else
        micro_1(kp, a, MR, b, c, ldc, mr, nr, first);
}

const wk_gemm_ukr wk__ukr_bf16dp_avx512bf16 = {
    .name = "bf16 vdpbf16ps 14x32", .mr = MR, .nr = NR, .kq = 2, .a_unit = 4, .b_unit = 4, .c_size = 4,
    .kc = KC_DP, .mc = MC, .nc = NC, .b_packed_ld = 2 * NR,
    .pack_a = pack_a_dp, .pack_b = pack_b_dp, .b_direct = NULL, .micro = micro_dp};

/* Which inner product: vdpbf16ps does 32 products per 512-bit instruction
 * but on Intel cores (Sapphire/Emerald Rapids) issues at half the rate of
 * vfmadd231ps, so widening bf16 to f32 while packing and using FMAs is
 * faster there; on other vendors' AVX512-BF16 cores (AMD Zen 4/5) vdpbf16ps
 * runs at the FMA rate and wins. WICK_BF16_KERNEL=dp|fma overrides. */
static bool use_dp(void) {
    int64_t kern; /* read once (env.c), not on every call */
    if (wk__env_get(WK_ENV_BF16_KERNEL, &kern)) return kern == WK_ENV_BF16_DP;
    static atomic_int vendor_intel = -1;
    int v = atomic_load_explicit(&vendor_intel, memory_order_relaxed);
    if (v < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        __get_cpuid(0, &a, &b, &c, &d);
        v = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu; /* "GenuineIntel" */
        atomic_store_explicit(&vendor_intel, v, memory_order_relaxed);
    }
    return v == 0;
}

const wk_gemm_ukr *wk__gemm_bf16_avx512bf16_ukr(void) {
    return use_dp() ? &wk__ukr_bf16dp_avx512bf16 : &wk__ukr_bf16_avx512;
}

bool wk__gemm_bf16_avx512bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t ars, int64_t acs,
                              const uint16_t *b, int64_t brs, int64_t bcs, float *c) {
    wk_gemm_args g = {m, n, k, a, ars, acs, b, brs, bcs, c, NULL};
    return wk__gemm_run(wk__gemm_bf16_avx512bf16_ukr(), &g);
}
