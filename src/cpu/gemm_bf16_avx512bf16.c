/* bf16 x bf16 -> f32 GEMM for CPUs with AVX512-BF16. Compiled with
 * -mavx512bf16 (CMakeLists.txt filename rule); call only after
 * wk__cpu_has_avx512bf16().
 *
 * Two inner products, one blocking:
 *  - dp: vdpbf16ps, 32 bf16 products summed pairwise into 16 f32 lanes per
 *    instruction. B strips hold k pairs interleaved (per pair and column two
 *    consecutive uint16: b[p][j], b[p+1][j]), A strips one 32-bit word per
 *    row and pair (a[i][p] low, a[i][p+1] high) to broadcast; odd k is zero
 *    padded in both.
 *  - fma: bf16 widened to f32 while packing (exact: a shift), then
 *    vfmadd231ps. On Intel Sapphire/Emerald Rapids vdpbf16ps zmm issues once
 *    per 2 cycles on the FMA port (measured here: 4x the reciprocal
 *    throughput of vfmadd231ps, so half the FLOP rate), so this path is the
 *    faster one there and the default on Intel; dp is the default elsewhere
 *    (AMD Zen 4/5 run vdpbf16ps at the FMA rate). WICK_BF16_KERNEL=dp|fma
 *    overrides (tests use it to cover both).
 * BLIS-style loops: for jc (NC columns) / pc (KC k values): pack the B panel
 * into NR=32-column strips (split across threads); for ic (MC rows): pack A
 * into MR-row strips; for jr (strips), ir (row strips): micro-kernel, an
 * MR x 32 f32 tile in 2*MR zmm accumulators. The first k block stores C,
 * later ones add to it, so every C element is summed in the same order
 * whatever the thread split (threads take row ranges, or column strips when
 * M is short): 1 and 2 threads give bit-identical results.
 *
 * Products of two bf16 are exact in f32, so the only error is the f32
 * summation; the dp path also treats denormal bf16 inputs as zero and flushes
 * denormal results (vdpbf16ps is DAZ/FTZ). */
#include "core/env.h"
#include "cpu/gemm.h"
#include "cpu/threadpool.h"
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
#define KC_DP 512         /* k values per block, vdpbf16ps path (even): B strip 32 KiB */
#define KC_F 256          /* k values per block, FMA path: B strip 32 KiB of f32 */
#define MC (MR * 24)      /* rows per packed A block: 336 KiB on either path (L2) */
#define NC 1024           /* columns per packed B panel: 1 MiB on either path (L2) */

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

_Static_assert(MR == 14, "micro_14 / microf_14 cover a full row strip");
DEF_MICRO(14)
DEF_MICRO(8)
DEF_MICRO(4)
DEF_MICRO(2)
DEF_MICRO(1)

/* The same tile from f32 strips (bf16 widened exactly while packing): A is
 * [kc][as] floats (first R used), B [kc][32] floats; one FMA per product. */
#define DEF_MICRO_F(R)                                                                                       \
    static void microf_##R(int64_t kc, const float *restrict ap, int64_t as, const float *restrict bp,        \
                           float *restrict c, int64_t ldc, int64_t mr, int64_t nr, bool first) {              \
        __m512 acc0[R], acc1[R];                                                                             \
        for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm512_setzero_ps();                                 \
        for (int64_t p = 0; p < kc; p++) {                                                                   \
            __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);                                  \
            for (int r = 0; r < R; r++) {                                                                    \
                __m512 av = _mm512_set1_ps(ap[r]);                                                           \
                acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);                                                  \
                acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);                                                  \
            }                                                                                                \
            ap += as;                                                                                        \
            bp += 32;                                                                                        \
        }                                                                                                    \
        STORE_TILE(R)                                                                                        \
    }

DEF_MICRO_F(14)
DEF_MICRO_F(8)
DEF_MICRO_F(4)
DEF_MICRO_F(2)
DEF_MICRO_F(1)

/* ------------------------------------------------------------------ context */

typedef struct {
    int64_t m, n, k;
    const uint16_t *a;
    int64_t ars, acs;
    const uint16_t *b;
    int64_t brs, bcs;
    float *c;
    bool dp;             /* vdpbf16ps path (else f32 FMA path) */
    int64_t kcb;         /* k values per block of this path */
    void *bpk;           /* packed B panel for the current (jc, pc) */
    void **apk;          /* one packed A block per piece */
    int64_t jc, nc, pc, kc, kp;
    int64_t chunk;       /* rows (rows split) or strips (cols split) per piece */
} ctx;

static inline uint32_t pair(uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; }
static inline float widen(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Gathers of 16 columns of a transposed B: int32 indices j * bcs (scaled by
 * 2 bytes) for j < 16, usable while 31 * bcs fits an int32. */
static inline bool gather_ok(int64_t bcs) { return bcs > 0 && bcs <= INT32_MAX / 32; }
static inline __m512i gather_idx(int64_t bcs) {
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32((int)bcs));
}

/* One strip of the dp path: kp pairs x 32 columns x 2 uint16. */
static void pack_b_dp(const ctx *x, uint16_t *dst, int64_t j0, int64_t w) {
    const int64_t kc = x->kc, kp = x->kp;
    const uint16_t *src = x->b + x->pc * x->brs + (x->jc + j0) * x->bcs;
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

/* One strip of the FMA path: kc x 32 floats. */
static void pack_b_f(const ctx *x, float *dst, int64_t j0, int64_t w) {
    const int64_t kc = x->kc;
    const uint16_t *src = x->b + x->pc * x->brs + (x->jc + j0) * x->bcs;
    if (x->bcs == 1) {
        __mmask32 mk = w == NR ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << w) - 1);
        for (int64_t p = 0; p < kc; p++) {
            __m512i v = _mm512_maskz_loadu_epi16(mk, src + p * x->brs);
            __m512i lo = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)), 16);
            __m512i hi = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)), 16);
            _mm512_storeu_si512((void *)(dst + p * 32), lo);
            _mm512_storeu_si512((void *)(dst + p * 32 + 16), hi);
        }
        return;
    }
    if (w == NR && x->brs == 1 && gather_ok(x->bcs)) {
        /* columns contiguous (transposed B): gather the 32-bit word
         * (b[p][j], b[p+1][j]) of 16 columns, split it into two f32 rows */
        const __m512i idx = gather_idx(x->bcs), hi = _mm512_set1_epi32((int)0xFFFF0000u);
        int64_t p = 0;
        for (; p + 1 < kc; p += 2) {
            for (int h = 0; h < 2; h++) {
                __m512i v = _mm512_i32gather_epi32(idx, src + h * 16 * x->bcs + p, 2);
                _mm512_storeu_si512((void *)(dst + p * 32 + 16 * h), _mm512_slli_epi32(v, 16));
                _mm512_storeu_si512((void *)(dst + p * 32 + 32 + 16 * h), _mm512_and_si512(v, hi));
            }
        }
        for (int64_t j = 0; p < kc && j < NR; j++) dst[p * 32 + j] = widen(src[j * x->bcs + p]); /* odd kc */
        return;
    }
    if (w < NR) memset(dst, 0, sizeof(float) * (size_t)(kc * 32));
    for (int64_t j = 0; j < w; j++) {
        const uint16_t *col = src + j * x->bcs;
        for (int64_t p = 0; p < kc; p++) dst[p * 32 + j] = widen(col[p * x->brs]);
    }
}

/* Pack B strips [s0, s1) of the current panel. */
static void pack_b(void *vx, int64_t s0, int64_t s1, int tid) {
    (void)tid;
    const ctx *x = vx;
    for (int64_t s = s0; s < s1; s++) {
        int64_t j0 = s * NR, w = x->nc - j0 < NR ? x->nc - j0 : NR;
        if (x->dp)
            pack_b_dp(x, (uint16_t *)x->bpk + s * x->kp * 64, j0, w);
        else
            pack_b_f(x, (float *)x->bpk + s * x->kc * 32, j0, w);
    }
}

/* Pack A rows [i0, i0+mc) of the current k block into MR-row strips, zero
 * padded: dp path [kp][MR] pair words, FMA path [kc][MR] floats. */
static void pack_a(const ctx *x, void *vdst, int64_t i0, int64_t mc) {
    const int64_t kc = x->kc, kp = x->kp, ars = x->ars, acs = x->acs;
    const bool colmajor = acs != 1 && ars == 1; /* transposed A: rows consecutive in memory */
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t mr = mc - ir < MR ? mc - ir : MR;
        const uint16_t *src = x->a + (i0 + ir) * ars + x->pc * acs;
        if (!x->dp) {
            float *d = (float *)vdst + ir * kc;
            if (colmajor) {
                for (int64_t p = 0; p < kc; p++) {
                    const uint16_t *cp = src + p * acs;
                    for (int64_t r = 0; r < mr; r++) d[p * MR + r] = widen(cp[r]);
                    for (int64_t r = mr; r < MR; r++) d[p * MR + r] = 0;
                }
                continue;
            }
            for (int64_t r = 0; r < mr; r++) {
                const uint16_t *row = src + r * ars;
                for (int64_t p = 0; p < kc; p++) d[p * MR + r] = widen(row[p * acs]);
            }
            for (int64_t r = mr; r < MR; r++)
                for (int64_t p = 0; p < kc; p++) d[p * MR + r] = 0;
            continue;
        }
        uint32_t *d = (uint32_t *)vdst + ir * kp;
        if (colmajor) {
            for (int64_t q = 0; q < kp; q++) {
                const uint16_t *c0 = src + 2 * q * acs, *c1 = c0 + acs;
                bool full = 2 * q + 1 < kc;
                for (int64_t r = 0; r < mr; r++) d[q * MR + r] = pair(c0[r], full ? c1[r] : 0);
                for (int64_t r = mr; r < MR; r++) d[q * MR + r] = 0;
            }
            continue;
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
}

/* The smallest kernel that covers mr rows: per element the arithmetic is the
 * same whichever kernel runs, so the choice never changes a result. */
static void micro(const ctx *x, const void *ap, const void *bp, float *c, int64_t mr, int64_t nr, bool first) {
    const int64_t ldc = x->n;
    if (x->dp) {
        const int64_t kp = x->kp;
        const uint32_t *a = ap;
        const uint16_t *b = bp;
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
        return;
    }
    const int64_t kc = x->kc;
    const float *a = ap, *b = bp;
    if (mr > 8)
        microf_14(kc, a, MR, b, c, ldc, mr, nr, first);
    else if (mr > 4)
        microf_8(kc, a, MR, b, c, ldc, mr, nr, first);
    else if (mr > 2)
        microf_4(kc, a, MR, b, c, ldc, mr, nr, first);
    else if (mr == 2)
        microf_2(kc, a, MR, b, c, ldc, mr, nr, first);
    else
        microf_1(kc, a, MR, b, c, ldc, mr, nr, first);
}

/* Rows [i0, i1) x strips [s0, s1) of the current panel, A packed into ap. */
static void block(const ctx *x, void *ap, int64_t i0, int64_t i1, int64_t s0, int64_t s1) {
    /* 32-bit units per k step of a strip: dp path pairs, FMA path values */
    const int64_t ku = x->dp ? x->kp : x->kc;
    const bool first = x->pc == 0;
    for (int64_t ic = i0; ic < i1; ic += MC) {
        int64_t mc = i1 - ic < MC ? i1 - ic : MC;
        pack_a(x, ap, ic, mc);
        for (int64_t s = s0; s < s1; s++) {
            int64_t j0 = s * NR, nr = x->nc - j0 < NR ? x->nc - j0 : NR;
            const uint32_t *bp = (const uint32_t *)x->bpk + s * ku * 32;
            float *cc = x->c + ic * x->n + x->jc + j0;
            for (int64_t ir = 0; ir < mc; ir += MR) {
                int64_t mr = mc - ir < MR ? mc - ir : MR;
                micro(x, (const uint32_t *)ap + ir * ku, bp, cc + ir * x->n, mr, nr, first);
            }
        }
    }
}

/* Thread pieces: piece p takes a range of rows (all strips) or a range of
 * strips (all rows, each piece packs A itself) and uses its own A buffer. */
static void rows_piece(void *vx, int64_t p0, int64_t p1, int tid) {
    (void)tid;
    const ctx *x = vx;
    int64_t strips = (x->nc + NR - 1) / NR;
    for (int64_t p = p0; p < p1; p++) {
        int64_t i0 = p * x->chunk, i1 = i0 + x->chunk < x->m ? i0 + x->chunk : x->m;
        if (i0 < i1) block(x, x->apk[p0], i0, i1, 0, strips);
    }
}
static void cols_piece(void *vx, int64_t p0, int64_t p1, int tid) {
    (void)tid;
    const ctx *x = vx;
    int64_t strips = (x->nc + NR - 1) / NR;
    for (int64_t p = p0; p < p1; p++) {
        int64_t s0 = p * x->chunk, s1 = s0 + x->chunk < strips ? s0 + x->chunk : strips;
        if (s0 < s1) block(x, x->apk[p0], 0, x->m, s0, s1);
    }
}

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

bool wk__gemm_bf16_avx512bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t ars, int64_t acs,
                              const uint16_t *b, int64_t brs, int64_t bcs, float *c) {
    if (m <= 0 || n <= 0) return true;
    if (k <= 0) {
        memset(c, 0, sizeof(float) * (size_t)(m * n));
        return true;
    }
    const bool dp = use_dp();
    const int64_t kcb = dp ? KC_DP : KC_F;
    int nt = wk_num_threads();
    if (nt < 1) nt = 1;
    /* buffers in 32-bit units: per k step of a strip, dp packs pairs, FMA values */
    const int64_t kcmax = k < kcb ? k : kcb, kumax = dp ? (kcmax + 1) / 2 : kcmax;
    const int64_t ncmax = n < NC ? n : NC, stripsmax = (ncmax + NR - 1) / NR;
    const int64_t mrows = (m + MR - 1) / MR * MR, mcmax = mrows < MC ? mrows : MC;
    /* pieces: one per thread, but only when the product is big enough */
    const int64_t rstrips = (m + MR - 1) / MR;
    const bool by_rows = rstrips >= stripsmax;
    int64_t np = by_rows ? rstrips : stripsmax;
    if (np > nt) np = nt;
    if (m * ncmax * kcmax < ((int64_t)1 << 20)) np = 1;

    void *bpk = malloc(sizeof(uint32_t) * (size_t)(stripsmax * kumax * 32));
    void **apk = calloc((size_t)np, sizeof *apk);
    bool ok = bpk && apk;
    for (int64_t p = 0; ok && p < np; p++) {
        apk[p] = malloc(sizeof(uint32_t) * (size_t)(mcmax * kumax));
        ok = apk[p] != NULL;
    }
    if (ok) {
        ctx x = {m, n, k, a, ars, acs, b, brs, bcs, c, dp, kcb, bpk, apk, 0, 0, 0, 0, 0, 0};
        for (int64_t jc = 0; jc < n; jc += NC) {
            x.jc = jc;
            x.nc = n - jc < NC ? n - jc : NC;
            int64_t strips = (x.nc + NR - 1) / NR;
            for (int64_t pc = 0; pc < k; pc += kcb) {
                x.pc = pc;
                x.kc = k - pc < kcb ? k - pc : kcb;
                x.kp = (x.kc + 1) / 2;
                /* B packing is split too: with a short M it rivals the FLOPs */
                wk__parallel_for(strips, 1, np > 1 ? 0 : INT64_MAX, pack_b, &x);
                if (np == 1) {
                    block(&x, apk[0], 0, m, 0, strips);
                } else if (by_rows) {
                    x.chunk = (rstrips + np - 1) / np * MR;
                    wk__parallel_for(np, 1, 0, rows_piece, &x);
                } else {
                    x.chunk = (strips + np - 1) / np;
                    wk__parallel_for(np, 1, 0, cols_piece, &x);
                }
            }
        }
    }
    if (apk)
        for (int64_t p = 0; p < np; p++) free(apk[p]);
    free(apk);
    free(bpk);
    return ok;
}
