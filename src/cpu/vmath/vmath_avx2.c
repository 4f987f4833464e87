/* AVX2+FMA level of vmath: the f32 math kernels and binary ops, the
 * contiguous sum and max/min, and the f16 / bf16 <-> f32 conversions.
 * Compiled with -mavx2 -mfma -mf16c; called only after a run-time cpuid
 * check: through vmath.c's table, and the conversions also directly from
 * gemm_avx2.c.
 *
 * Same algorithms and coefficients as vmath_avx512.c (see the comment there);
 * the coefficients, polynomials and loops are written once for both levels
 * in vmath_poly.inc and vmath_loops.inc, this file holds AVX2's own parts.
 * Differences: AVX2 has no VSCALEFPS, so p * 2^n is two multiplications by
 * normal powers of two, 2^(n/2) and 2^(n - n/2) (exact, then one rounding);
 * results in the subnormal range are therefore correctly rounded from p for
 * exp/sigmoid/tanh/erf, and at most one extra subnormal rounding for the
 * products scaled last in silu/gelu/gelu_erf. exp itself takes a fast path
 * when every lane has |x| <= 86: the scaling is then an integer add to the
 * exponent field (about 1.5x faster); so do tanh (always: its exp argument is
 * >= -20) and sigmoid/silu/gelu when every lane's exp argument is within
 * +-80 (SCALE_FAST; gelu ~1.3x, silu ~1.45x faster, the same bits). log
 * takes the exponent and mantissa from the bits (subnormal inputs are scaled
 * by 2^23 first). Tails shorter than 8 go through a zero-padded stack buffer.
 */
#include "cpu/vmath/vmath.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <string.h>
#include <math.h>

typedef __m256 vf;
typedef __m256i vi;
#define VL 8

#define C(v) _mm256_set1_ps(v)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define VFMS(a, b, c) _mm256_fmsub_ps(a, b, c)
#define VLOADU(p) _mm256_loadu_ps(p)
#define VSTOREU(p, v) _mm256_storeu_ps(p, v)

/* v * 2^n for integral n in [-252, 252] (NaN n gives garbage, callers only
 * pass NaN n together with a NaN v). */
static inline vf vscale(vf v, vf n) {
    vi ni = _mm256_cvtps_epi32(n);
    vi n1 = _mm256_srai_epi32(ni, 1);
    vi n2 = _mm256_sub_epi32(ni, n1);
    vf s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    vf s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(v, s1), s2);
}

/* v * 2^n by an integer add to the exponent field: exact, and the same
 * result as vscale, when v and v * 2^n are both normal (or n == 0, or v is
 * NaN: CVTPS2DQ of a NaN n gives 0x80000000, which shifts to 0). Six
 * instructions fewer than vscale; callers check the range first. */
static inline vf vscale_normal(vf v, vf n) {
    vi e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(v), e));
}

/* all lanes |s| <= b (a NaN lane fails) */
static inline int all_within(vf s, float b) {
    return _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(C(-0.0f), s), C(b), _CMP_NLE_UQ)) == 0;
}

static inline vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vabs(vf x) { return _mm256_andnot_ps(C(-0.0f), x); }
static inline vf neg_abs(vf x) { return _mm256_or_ps(x, C(-0.0f)); }
static inline vf signbit_of(vf x) { return _mm256_and_ps(x, C(-0.0f)); }
/* MAXPS/MINPS return the second operand when either is NaN: keep x's NaN. */
static inline vf clamp_lo(vf x, float lo) { return _mm256_max_ps(C(lo), x); }
static inline vf clamp_sym(vf x, float b) { return _mm256_min_ps(C(b), _mm256_max_ps(C(-b), x)); }
static inline vf blend(vf a, vf b, vf m) { return _mm256_blendv_ps(a, b, m); } /* m ? b : a */

/* the coefficients, polynomials and exp / erfc reductions every level shares */
#include "cpu/vmath/vmath_poly.inc"

static inline vf k_exp(vf x) {
    vf t, n, r;
    /* fast path: |x| <= 86 (no NaN), so p * 2^n is normal and the scaling is
     * an integer add to the exponent field */
    if (__builtin_expect(_mm256_movemask_ps(_mm256_cmp_ps(vabs(x), C(86.0f), _CMP_NLE_UQ)) == 0, 1)) {
        t = _mm256_fmadd_ps(x, C(LOG2E), C(MAGIC));
        n = _mm256_sub_ps(t, C(MAGIC));
        r = _mm256_fnmadd_ps(n, C(LN2_HI), x);
        r = _mm256_fnmadd_ps(n, C(LN2_LO), r);
        vi ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(C(MAGIC)));
        return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(exp_poly(r)), _mm256_slli_epi32(ni, 23)));
    }
    x = clamp_sym(x, EXP_CLAMP);
    t = _mm256_fmadd_ps(x, C(LOG2E), C(MAGIC));
    n = _mm256_sub_ps(t, C(MAGIC));
    r = _mm256_fnmadd_ps(n, C(LN2_HI), x);
    r = _mm256_fnmadd_ps(n, C(LN2_LO), r);
    return vscale(exp_poly(r), n);
}

static inline vf k_tanh(vf x) {
    /* computed for |x|, the sign of x (also of -0) is put back at the end */
    vf a = vabs(x);
    vf arg = clamp_lo(_mm256_mul_ps(a, C(-2.0f)), -20.0f); /* e < 2^-25 is irrelevant */
    vf n, p = exp_parts(arg, &n);
    vf e = vscale_normal(p, n); /* arg >= -20: e >= 2^-29, normal */
    vf big = vdiv(_mm256_sub_ps(C(1.0f), e), _mm256_add_ps(C(1.0f), e));
    vf small = tanh_small(a, _mm256_mul_ps(a, a));
    vf r = blend(big, small, _mm256_cmp_ps(a, C(TANH_SMALL), _CMP_LT_OQ));
    return _mm256_or_ps(r, signbit_of(x));
}

/* Range of the exp argument s below which the composite functions scale by
 * integer adds (vscale_normal): |s| <= 80 gives n >= -116, so e = p 2^n
 * (p in [0.7, 1.42]) is normal, and a quotient q = x p / (1 + e) scaled by
 * 2^n (x < 0 only; n != 0 needs |s| >= ln2/2, so |x| >= 0.2 for silu and
 * gelu and |q| >= 2^-4) stays normal too. Same results as vscale. */
#define SCALE_FAST 80.0f

static inline vf k_sigmoid(vf x) {
    vf arg = clamp_lo(neg_abs(x), -EXP_CLAMP);
    vf n, p = exp_parts(arg, &n);
    vf e = all_within(x, SCALE_FAST) ? vscale_normal(p, n) : vscale(p, n);
    vf num = blend(e, C(1.0f), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
    return vdiv(num, _mm256_add_ps(C(1.0f), e));
}

static inline vf x_sigmoid(vf x, vf xc, vf s) {
    vf arg = clamp_lo(neg_abs(s), -EXP_CLAMP);
    vf n, p = exp_parts(arg, &n);
    vf neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    vf num = blend(x, _mm256_mul_ps(xc, p), neg);
    vf nneg = _mm256_and_ps(n, neg); /* 2^n for x < 0, 2^0 else */
    if (__builtin_expect(all_within(s, SCALE_FAST), 1)) /* the usual case (|x| < ~10 for gelu) */
        return vscale_normal(vdiv(num, _mm256_add_ps(C(1.0f), vscale_normal(p, n))), nneg);
    vf q = vdiv(num, _mm256_add_ps(C(1.0f), vscale(p, n)));
    return vscale(q, nneg);
}

static inline vf k_erf(vf x) {
    vf xc = clamp_sym(x, 4.0f); /* erf(|x| >= 3.92) = 1; avoids subnormal work */
    vf a = vabs(xc);
    vf x2 = _mm256_mul_ps(xc, xc);
    vf small = _mm256_mul_ps(xc, erf_small(x2));
    vf x2l = _mm256_fmsub_ps(xc, xc, x2);
    vf n, tp = erfc_parts(a, _mm256_sub_ps(_mm256_setzero_ps(), x2), _mm256_sub_ps(_mm256_setzero_ps(), x2l), &n);
    vf big = _mm256_sub_ps(C(1.0f), vscale(tp, n));
    big = _mm256_or_ps(big, signbit_of(x));
    return blend(big, small, _mm256_cmp_ps(a, C(ERF_SMALL), _CMP_LT_OQ));
}

static inline vf k_gelu_erf(vf x) {
    /* x > 6: x - 0.5x erfc(x/sqrt2) = x; x < -15: 0.5x erfc(..) = -0 */
    vf xc = _mm256_min_ps(C(6.0f), _mm256_max_ps(C(-15.0f), x));
    vf hxc = _mm256_mul_ps(xc, C(0.5f));
    vf z = _mm256_mul_ps(xc, C(0x1.6a09e6p-1f));
    vf a = vabs(z);
    vf erfz = _mm256_mul_ps(z, erf_small(_mm256_mul_ps(z, z)));
    vf small = _mm256_fmadd_ps(hxc, erfz, hxc);
    vf x2 = _mm256_mul_ps(xc, xc);
    vf x2l = _mm256_fmsub_ps(xc, xc, x2);
    vf n, tp = erfc_parts(a, _mm256_mul_ps(x2, C(-0.5f)), _mm256_mul_ps(x2l, C(-0.5f)), &n);
    vf neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    vf pos = _mm256_fnmadd_ps(hxc, vscale(tp, n), x);
    vf negv = vscale(_mm256_mul_ps(hxc, tp), n);
    vf big = blend(pos, negv, neg);
    /* the polynomial for -0.5 < z < 0.875; below -0.5, 1+erf(z) would cancel */
    vf m = _mm256_and_ps(_mm256_cmp_ps(z, C(-ERFC_MIN), _CMP_GT_OQ), _mm256_cmp_ps(z, C(ERF_SMALL), _CMP_LT_OQ));
    /* the result has the sign of x (gives -0 for -0) */
    return _mm256_or_ps(blend(big, small, m), signbit_of(x));
}

static inline vf k_log(vf x) {
    /* subnormals: scale by 2^23 first */
    vf den = _mm256_cmp_ps(x, C(0x1p-126f), _CMP_LT_OQ);
    vf xs = blend(x, _mm256_mul_ps(x, C(0x1p23f)), den);
    vi bits = _mm256_castps_si256(xs);
    vi ei = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(0xff)),
                             _mm256_set1_epi32(127));
    vf e = _mm256_sub_ps(_mm256_cvtepi32_ps(ei), _mm256_and_ps(den, C(23.0f)));
    vf m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)),
                                               _mm256_set1_epi32(0x3f800000)));
    vf big = _mm256_cmp_ps(m, C(SQRT2), _CMP_GT_OQ);
    m = blend(m, _mm256_mul_ps(m, C(0.5f)), big);
    e = _mm256_add_ps(e, _mm256_and_ps(big, C(1.0f)));
    vf r = log_reduced(_mm256_sub_ps(m, C(1.0f)), e);
    vf inf = C(__builtin_inff());
    vf ok = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_cmp_ps(x, inf, _CMP_LT_OQ));
    if (_mm256_movemask_ps(ok) != 0xff) {
        r = blend(r, C(-__builtin_inff()), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
        r = blend(r, inf, _mm256_cmp_ps(x, inf, _CMP_EQ_OQ));
        r = blend(r, C(__builtin_nanf("")), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
        r = blend(r, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
    return r;
}

/* ------------------------------------------------------------- loops */

/* maximum/minimum: NaN if either is NaN (a + b), else MAXPS/MINPS. */
static inline vf b_max(vf a, vf b) {
    return blend(_mm256_max_ps(a, b), _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
static inline vf b_min(vf a, vf b) {
    return blend(_mm256_min_ps(a, b), _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}

/* tails: through zero-padded stack buffers */
#define VM_UNARY_TAIL(kern)                                                    \
    do {                                                                       \
        float buf[VL] = {0};                                                   \
        size_t rem = (size_t)(n - i);                                          \
        memcpy(buf, x + i, rem * sizeof(float));                               \
        _mm256_storeu_ps(buf, kern(_mm256_loadu_ps(buf)));                     \
        memcpy(y + i, buf, rem * sizeof(float));                               \
    } while (0)
#define VM_BIN_TAIL(op)                                                        \
    do {                                                                       \
        float ba[VL] = {0}, bb[VL] = {0};                                      \
        size_t rem = (size_t)(n - i);                                          \
        memcpy(ba, a + i, rem * sizeof(float));                                \
        memcpy(bb, b + i, rem * sizeof(float));                                \
        _mm256_storeu_ps(ba, op(_mm256_loadu_ps(ba), _mm256_loadu_ps(bb)));    \
        memcpy(y + i, ba, rem * sizeof(float));                                \
    } while (0)
#define VM_BINS_TAIL(op)                                                       \
    do {                                                                       \
        float ba[VL] = {0};                                                    \
        size_t rem = (size_t)(n - i);                                          \
        memcpy(ba, a + i, rem * sizeof(float));                                \
        _mm256_storeu_ps(ba, op(_mm256_loadu_ps(ba), bs));                     \
        memcpy(y + i, ba, rem * sizeof(float));                                \
    } while (0)

#define VM_ISA _avx2
#include "cpu/vmath/vmath_loops.inc"

#else
typedef int wk_vmath_avx2_unused;
#endif

/* Contiguous sum: vred_sum (cpu/vmath/vreduce.inc, used by the other levels)
 * written out in intrinsics: the same 64 lanes (lane j of accumulator k sums
 * x[64i + 8k + j]), the same zero-padded tail and the same tree in double, so
 * the same bits as the other levels (tests/test_reduce_fast.c checks). */

/* lanes past n add +0, as the zero-padded tail of vred_sum does */
static inline vf sum_tail_load(const float *x, int64_t left) {
    int m = left > 8 ? 8 : left < 0 ? 0 : (int)left;
    return _mm256_maskload_ps(x, _mm256_cmpgt_epi32(_mm256_set1_epi32(m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

static inline __m256d lo_pd(vf v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
static inline __m256d hi_pd(vf v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

float wk__vsum_f32_avx2(const float *x, int64_t n) {
    /* eight named accumulators: an array of them was kept on the stack */
    vf a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_loadu_ps(x + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_loadu_ps(x + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_loadu_ps(x + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_loadu_ps(x + i + 56));
    }
    if (i < n) {
        int64_t left = n - i;
        a0 = _mm256_add_ps(a0, sum_tail_load(x + i, left));
        a1 = _mm256_add_ps(a1, sum_tail_load(x + i + 8, left - 8));
        a2 = _mm256_add_ps(a2, sum_tail_load(x + i + 16, left - 16));
        a3 = _mm256_add_ps(a3, sum_tail_load(x + i + 24, left - 24));
        a4 = _mm256_add_ps(a4, sum_tail_load(x + i + 32, left - 32));
        a5 = _mm256_add_ps(a5, sum_tail_load(x + i + 40, left - 40));
        a6 = _mm256_add_ps(a6, sum_tail_load(x + i + 48, left - 48));
        a7 = _mm256_add_ps(a7, sum_tail_load(x + i + 56, left - 56));
    }
    /* the tree in double, lane j + lane j + w for w = 32, 16, 8, 4, 2, 1
     * (a_k holds lanes 8k..8k+7; lo_pd/hi_pd its lanes 8k..8k+3, 8k+4..8k+7) */
    __m256d l0 = _mm256_add_pd(lo_pd(a0), lo_pd(a4)), h0 = _mm256_add_pd(hi_pd(a0), hi_pd(a4));
    __m256d l1 = _mm256_add_pd(lo_pd(a1), lo_pd(a5)), h1 = _mm256_add_pd(hi_pd(a1), hi_pd(a5));
    __m256d l2 = _mm256_add_pd(lo_pd(a2), lo_pd(a6)), h2 = _mm256_add_pd(hi_pd(a2), hi_pd(a6));
    __m256d l3 = _mm256_add_pd(lo_pd(a3), lo_pd(a7)), h3 = _mm256_add_pd(hi_pd(a3), hi_pd(a7));
    l0 = _mm256_add_pd(l0, l2); /* w = 16 */
    h0 = _mm256_add_pd(h0, h2);
    l1 = _mm256_add_pd(l1, l3);
    h1 = _mm256_add_pd(h1, h3);
    l0 = _mm256_add_pd(l0, l1); /* w = 8 */
    h0 = _mm256_add_pd(h0, h1);
    l0 = _mm256_add_pd(l0, h0); /* w = 4 */
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(l0), _mm256_extractf128_pd(l0, 1)); /* w = 2 */
    return (float)_mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));        /* w = 1 */
}

/* NaN lanes are OR-ed into a mask vector; MAXPS/MINPS alone would drop them. */
float wk__vmaxmin_f32_avx2(const float *x, int64_t n, int want_min) {
    __m256 acc0 = _mm256_set1_ps(x[0]), acc1 = acc0, nanv = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        nanv = _mm256_or_ps(nanv, _mm256_or_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q)));
        acc0 = want_min ? _mm256_min_ps(acc0, a) : _mm256_max_ps(acc0, a);
        acc1 = want_min ? _mm256_min_ps(acc1, b) : _mm256_max_ps(acc1, b);
    }
    float lanes[16];
    _mm256_storeu_ps(lanes, acc0);
    _mm256_storeu_ps(lanes + 8, acc1);
    int anynan = _mm256_movemask_ps(nanv) != 0;
    float r = lanes[0];
    for (int j = 1; j < 16; j++) r = want_min ? (lanes[j] < r ? lanes[j] : r) : (lanes[j] > r ? lanes[j] : r);
    for (; i < n; i++) {
        float v = x[i];
        anynan |= v != v;
        r = want_min ? (v < r ? v : r) : (v > r ? v : r);
    }
    return anynan ? (float)NAN : r;
}

/* ---- f16 / bf16 <-> f32 conversions, bit-identical to wick's scalar
 * wk_f16_to_f32, wk_bf16_to_f32, wk_f32_to_f16 and wk_f32_to_bf16
 * (src/base/dtype.c) for every input.
 *  - f16 -> f32: VCVTPH2PS (exact), except that it quiets a signaling NaN
 *    (sets bit 22) while the scalar code keeps the payload bits as they are:
 *    NaN lanes get bit 22 = f16 bit 9.
 *  - f32 -> f16: VCVTPS2PH with round-to-nearest-even in the immediate (the
 *    MXCSR rounding mode is not used); its NaN result (sign, quiet bit, the
 *    top 9 payload bits) and overflow to inf match the scalar code.
 *  - bf16 -> f32: zero-extend and shift left 16.
 *  - f32 -> bf16: (u + 0x7fff + ((u >> 16) & 1)) >> 16 (RNE; overflow
 *    carries into inf), NaN lanes (u >> 16) | 0x40 (quiet, sign kept).
 * Tails shorter than a vector go through a zero-padded stack buffer. */

static inline __m256 cvt_h2f_8(__m128i h) {
    __m256i r = _mm256_castps_si256(_mm256_cvtph_ps(h));
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    if (_mm256_testz_si256(nan, nan)) return _mm256_castsi256_ps(r); /* no NaN: the usual case */
    __m256i q = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 13); /* f16 quiet bit 9 -> bit 22 */
    __m256i clear = _mm256_andnot_si256(q, _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000)));
    return _mm256_castsi256_ps(_mm256_xor_si256(r, clear));
}

static inline __m128i cvt_f2h_8(__m256 x) { return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

static inline __m256i cvt_f2bf_8(__m256 x) { /* 8 results in the low 16 bits of each 32-bit lane */
    __m256i u = _mm256_castps_si256(x);
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1))));
    r = _mm256_srli_epi32(r, 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}

static inline __m128i pack_lo16(__m256i v) { /* 8 x u32 < 65536 -> 8 x u16 */
    return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

static inline __m256 cvt_bf2f_8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

void wk__vcvt_f16_to_f32_avx2(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = cvt_h2f_8(_mm_loadu_si128((const __m128i *)(x + i)));
        __m256 b = cvt_h2f_8(_mm_loadu_si128((const __m128i *)(x + i + 8)));
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
    }
    for (; i < n; i += 8) {
        int64_t m = n - i < 8 ? n - i : 8;
        uint16_t in[8] = {0};
        float out[8];
        memcpy(in, x + i, (size_t)m * sizeof *in);
        _mm256_storeu_ps(out, cvt_h2f_8(_mm_loadu_si128((const __m128i *)in)));
        memcpy(y + i, out, (size_t)m * sizeof *out);
    }
}

void wk__vcvt_bf16_to_f32_avx2(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = cvt_bf2f_8(_mm_loadu_si128((const __m128i *)(x + i)));
        __m256 b = cvt_bf2f_8(_mm_loadu_si128((const __m128i *)(x + i + 8)));
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
    }
    for (; i < n; i += 8) {
        int64_t m = n - i < 8 ? n - i : 8;
        uint16_t in[8] = {0};
        float out[8];
        memcpy(in, x + i, (size_t)m * sizeof *in);
        _mm256_storeu_ps(out, cvt_bf2f_8(_mm_loadu_si128((const __m128i *)in)));
        memcpy(y + i, out, (size_t)m * sizeof *out);
    }
}

void wk__vcvt_f32_to_f16_avx2(uint16_t *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = cvt_f2h_8(_mm256_loadu_ps(x + i));
        __m128i b = cvt_f2h_8(_mm256_loadu_ps(x + i + 8));
        _mm_storeu_si128((__m128i *)(y + i), a);
        _mm_storeu_si128((__m128i *)(y + i + 8), b);
    }
    for (; i < n; i += 8) {
        int64_t m = n - i < 8 ? n - i : 8;
        float in[8] = {0};
        uint16_t out[8];
        memcpy(in, x + i, (size_t)m * sizeof *in);
        _mm_storeu_si128((__m128i *)out, cvt_f2h_8(_mm256_loadu_ps(in)));
        memcpy(y + i, out, (size_t)m * sizeof *out);
    }
}

void wk__vcvt_f32_to_bf16_avx2(uint16_t *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = cvt_f2bf_8(_mm256_loadu_ps(x + i));
        __m256i b = cvt_f2bf_8(_mm256_loadu_ps(x + i + 8));
        /* packus interleaves the 128-bit lanes: a0-3 b0-3 a4-7 b4-7; put them back in order */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
        _mm256_storeu_si256((__m256i *)(y + i), p);
    }
    for (; i < n; i += 8) {
        int64_t m = n - i < 8 ? n - i : 8;
        float in[8] = {0};
        uint16_t out[8];
        memcpy(in, x + i, (size_t)m * sizeof *in);
        _mm_storeu_si128((__m128i *)out, pack_lo16(cvt_f2bf_8(_mm256_loadu_ps(in))));
        memcpy(y + i, out, (size_t)m * sizeof *out);
    }
}
