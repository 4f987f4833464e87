/* AVX-512 (F/BW/DQ/VL) level of vmath: the f32 math kernels and binary ops,
 * the contiguous sum and max/min, and the f16 / bf16 <-> f32 conversions.
 * Compiled with -mavx512f/bw/dq/vl -mavx2 -mfma -mf16c (CMakeLists.txt, every
 * *_avx512.c); called only after a run-time cpuid check: through vmath.c's
 * table, and the conversions also directly from gemm_avx512.c.
 *
 * Algorithms (shared with vmath_avx2.c; the coefficients, polynomials and
 * loops are written once in vmath_poly.inc and vmath_loops.inc). The
 * polynomial coefficients are minimax fits made for wick with a Remez
 * exchange; the relative error of each polynomial is given in parentheses.
 *  exp(x): clamp x to [-110, 110] (NaN kept); n = round(x/ln2) by the
 *    1.5*2^23 trick; r = x - n*ln2 with ln2 split in two (Cody-Waite; the
 *    first product is exact inside the FMA); exp(r) = 1 + r*q(r), q of degree
 *    4 (9.2e-8); result = p * 2^n by VSCALEFPS, which rounds once: results in
 *    the subnormal range are correctly rounded from p (gradual underflow, not
 *    flushed), overflow gives +inf, x < -103.97 gives +0, NaN -> NaN.
 *    Exhaustively checked over all 2^32 inputs: <= 1.999 ulp from the exact
 *    value, <= 2 ulp from glibc expf.
 *  Inside the other functions exp uses a degree-6 polynomial, p = 1 + r +
 *    r^2 q(r) (3.6e-9), one FMA more and about 1.5 ulp less error.
 *  tanh: for a = |x| < 0.625: a + a^3 P(a^2) (7.9e-9); else (1-e)/(1+e),
 *    e = exp(-2a); the sign of x is put back last (tanh(-0) = -0).
 *  sigmoid: e = exp(-|x|), (x >= 0 ? 1 : e) / (1 + e): no overflow, full
 *    relative accuracy for x < 0 (subnormal results included).
 *  silu, gelu: x * sigmoid(x) and x * sigmoid(2u), u = sqrt(2/pi)(x +
 *    0.044715x^3) (0.5(1 + tanh u) = sigmoid(2u) avoids the cancellation of
 *    1 + tanh u for x < 0); for x < 0 the factor 2^n of e is applied last so
 *    tiny results round once. silu(-inf) = gelu(-inf) = -0 (the limits).
 *    gelu's 2u is rounded to float, and exp(-|2u|) amplifies that error by
 *    |2u|: gelu is within 3 ulp for x >= -1, within 1e-6 relative for
 *    x >= -3.9, and ~1e-5 relative at x = -10 (absolute error < 1e-10 for
 *    x < -3, where |gelu| < 4e-3).
 *  erf: |x| < 0.875: x P(x^2) (8.6e-9); else 1 - erfc(|x|) with
 *    erfc(a) = t exp(-a^2 + R(t)), t = 2/(2+a), R of degree 9 in t - 0.3
 *    fitted for a in [0.5, 10.7] (1.6e-9 abs); -a^2 goes into the exp
 *    reduction as an exact hi+lo pair, and the rounding error of t is
 *    recovered (2+a and 2 - t(2+a) are exact) and folded into the exponent.
 *  gelu_erf: 0.5x(1 + erf(x/sqrt2)) with the polynomial for -0.5 < x/sqrt2 <
 *    0.875; for x/sqrt2 >= 0.875 it is x - 0.5x erfc(z), for x/sqrt2 <= -0.5
 *    it is 0.5x erfc(|z|) computed directly (relative accuracy kept in the
 *    negative tail), with -x^2/2 exact as hi+lo.
 *  log: x = m 2^e, m in [sqrt(1/2), sqrt(2)) (VGETMANT/VGETEXP, subnormal
 *    inputs included); f = m-1; log(1+f) = f - f^2/2 + f^3 P(f) (5.9e-9);
 *    plus e*ln2 in two parts. log(+-0) = -inf, log(x<0) = NaN, log(inf) = inf.
 * Measured maximum errors against the exact value (dense grids, random bit
 * patterns, specials; tests/test_vmath.c prints them): exp 2.0, log 0.86,
 * tanh 1.5, sigmoid 2.3, silu 3.1, erf 2.5, gelu_erf 4.1 ulp (2.9e-7
 * relative); gelu as above.
 * Division: a real VDIVPS (rcp14 + Newton was not faster on the machine
 * this was tuned on, an Intel Xeon with two 512-bit FMA ports).
 */
#include "cpu/vmath/vmath.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__FMA__)
#include <immintrin.h>

typedef __m512 vf;
typedef __mmask16 vm;
#define VL 16

#define C(v) _mm512_set1_ps(v)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define VFMS(a, b, c) _mm512_fmsub_ps(a, b, c)
#define VLOADU(p) _mm512_loadu_ps(p)
#define VSTOREU(p, v) _mm512_storeu_ps(p, v)

static inline vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }

/* -|x| (NaN stays NaN) */
static inline vf neg_abs(vf x) { return _mm512_or_ps(x, C(-0.0f)); }
/* max(lo, x) keeping a NaN x (MAXPS returns its second operand on NaN). */
static inline vf clamp_lo(vf x, float lo) { return _mm512_max_ps(C(lo), x); }
static inline vf clamp_sym(vf x, float b) { return _mm512_min_ps(C(b), _mm512_max_ps(C(-b), x)); }

/* the coefficients, polynomials and exp / erfc reductions every level shares */
#include "cpu/vmath/vmath_poly.inc"

static inline vf k_exp(vf x) {
    /* clamp to [-110, 110]; MAXPS/MINPS return the second operand on NaN,
     * so a NaN x stays NaN (VRANGEPS would turn a quiet NaN into 110). */
    x = _mm512_min_ps(C(EXP_CLAMP), _mm512_max_ps(C(-EXP_CLAMP), x));
    vf t = _mm512_fmadd_ps(x, C(LOG2E), C(MAGIC));
    vf n = _mm512_sub_ps(t, C(MAGIC));
    vf r = _mm512_fnmadd_ps(n, C(LN2_HI), x);
    r = _mm512_fnmadd_ps(n, C(LN2_LO), r);
    return _mm512_scalef_ps(exp_poly(r), n);
}

static inline vf k_tanh(vf x) {
    /* computed for |x|, the sign of x (also of -0) is put back at the end */
    vf a = _mm512_abs_ps(x);
    vf arg = clamp_lo(_mm512_mul_ps(a, C(-2.0f)), -20.0f); /* e < 2^-25 is irrelevant */
    vf n, p = exp_parts(arg, &n);
    vf e = _mm512_scalef_ps(p, n);
    vf big = vdiv(_mm512_sub_ps(C(1.0f), e), _mm512_add_ps(C(1.0f), e));
    vf small = tanh_small(a, _mm512_mul_ps(a, a));
    vm m = _mm512_cmp_ps_mask(a, C(TANH_SMALL), _CMP_LT_OQ);
    vf r = _mm512_mask_blend_ps(m, big, small);
    /* r | (x & signbit) */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(x), _mm512_castps_si512(r),
                                                         _mm512_set1_epi32((int)0x80000000u), 0xEC));
}

static inline vf k_sigmoid(vf x) {
    vf arg = clamp_lo(neg_abs(x), -EXP_CLAMP);
    vf n, p = exp_parts(arg, &n);
    vf e = _mm512_scalef_ps(p, n);
    vm ge = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    vf num = _mm512_mask_blend_ps(ge, e, C(1.0f));
    return vdiv(num, _mm512_add_ps(C(1.0f), e));
}

/* x * sigmoid(s) given s (same sign as x) and xc = x clamped from below so
 * that |xc| * exp(-110) underflows. */
static inline vf x_sigmoid(vf x, vf xc, vf s) {
    vf arg = clamp_lo(neg_abs(s), -EXP_CLAMP);
    vf n, p = exp_parts(arg, &n);
    vf e = _mm512_scalef_ps(p, n);
    vm neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    vf num = _mm512_mask_mul_ps(x, neg, xc, p);
    vf q = vdiv(num, _mm512_add_ps(C(1.0f), e));
    return _mm512_mask_scalef_ps(q, neg, q, n);
}

static inline vf k_erf(vf x) {
    vf xc = clamp_sym(x, 4.0f); /* erf(|x| >= 3.92) = 1; avoids subnormal work */
    vf a = _mm512_abs_ps(xc);
    vf x2 = _mm512_mul_ps(xc, xc);
    vf small = _mm512_mul_ps(xc, erf_small(x2));
    vf x2l = _mm512_fmsub_ps(xc, xc, x2);
    vf n, tp = erfc_parts(a, _mm512_sub_ps(_mm512_setzero_ps(), x2), _mm512_sub_ps(_mm512_setzero_ps(), x2l), &n);
    vf big = _mm512_sub_ps(C(1.0f), _mm512_scalef_ps(tp, n));
    big = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(x), _mm512_castps_si512(big),
                                                         _mm512_set1_epi32((int)0x80000000u), 0xEC));
    vm m = _mm512_cmp_ps_mask(a, C(ERF_SMALL), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(m, big, small);
}

static inline vf k_gelu_erf(vf x) {
    /* x > 6: x - 0.5x erfc(x/sqrt2) = x; x < -15: 0.5x erfc(..) = -0 */
    vf xc = _mm512_min_ps(C(6.0f), _mm512_max_ps(C(-15.0f), x));
    vf hxc = _mm512_mul_ps(xc, C(0.5f));
    vf z = _mm512_mul_ps(xc, C(0x1.6a09e6p-1f)); /* x/sqrt2 */
    vf a = _mm512_abs_ps(z);
    vf erfz = _mm512_mul_ps(z, erf_small(_mm512_mul_ps(z, z)));
    vf small = _mm512_fmadd_ps(hxc, erfz, hxc);
    vf x2 = _mm512_mul_ps(xc, xc);
    vf x2l = _mm512_fmsub_ps(xc, xc, x2);
    vf n, tp = erfc_parts(a, _mm512_mul_ps(x2, C(-0.5f)), _mm512_mul_ps(x2l, C(-0.5f)), &n);
    vm neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    /* x >= 0: x - 0.5x erfc; x < 0: 0.5x erfc, scaled last */
    vf pos = _mm512_fnmadd_ps(hxc, _mm512_scalef_ps(tp, n), x);
    vf negv = _mm512_scalef_ps(_mm512_mul_ps(hxc, tp), n);
    vf big = _mm512_mask_blend_ps(neg, pos, negv);
    /* the polynomial for -0.5 < z < 0.875; below -0.5, 1+erf(z) would cancel */
    vm m = _mm512_cmp_ps_mask(z, C(-ERFC_MIN), _CMP_GT_OQ);
    m = _mm512_mask_cmp_ps_mask(m, z, C(ERF_SMALL), _CMP_LT_OQ);
    vf r = _mm512_mask_blend_ps(m, big, small);
    /* the result has the sign of x (gives -0 for -0) */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(x), _mm512_castps_si512(r),
                                                         _mm512_set1_epi32((int)0x80000000u), 0xEC));
}

static inline vf k_log(vf x) {
    vf m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    vf e = _mm512_getexp_ps(x);
    vm big = _mm512_cmp_ps_mask(m, C(SQRT2), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, C(0.5f));
    e = _mm512_mask_add_ps(e, big, e, C(1.0f));
    vf r = log_reduced(_mm512_sub_ps(m, C(1.0f)), e);
    vm ok = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
    ok = _mm512_mask_cmp_ps_mask(ok, x, C(__builtin_inff()), _CMP_LT_OQ);
    if (ok != (vm)0xFFFF) {
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), C(-__builtin_inff()));
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, C(__builtin_inff()), _CMP_EQ_OQ), x);
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), C(__builtin_nanf("")));
        vm nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        r = _mm512_mask_add_ps(r, nan, x, x); /* quiet the input NaN */
    }
    return r;
}

/* ------------------------------------------------------------- loops */

/* maximum/minimum: NaN if either is NaN, else MAXPS/MINPS (second operand on ties). */
static inline vf b_max(vf a, vf b) {
    return _mm512_mask_add_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), a, b);
}
static inline vf b_min(vf a, vf b) {
    return _mm512_mask_add_ps(_mm512_min_ps(a, b), _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), a, b);
}

/* tails: masked loads and stores */
#define VM_TAIL_MASK ((vm)((1u << (unsigned)(n - i)) - 1u))
#define VM_UNARY_TAIL(kern)                                                                 \
    do {                                                                                    \
        vm k = VM_TAIL_MASK;                                                                \
        _mm512_mask_storeu_ps(y + i, k, kern(_mm512_maskz_loadu_ps(k, x + i)));             \
    } while (0)
#define VM_BIN_TAIL(op)                                                                     \
    do {                                                                                    \
        vm k = VM_TAIL_MASK;                                                                \
        _mm512_mask_storeu_ps(y + i, k, op(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i))); \
    } while (0)
#define VM_BINS_TAIL(op)                                                                    \
    do {                                                                                    \
        vm k = VM_TAIL_MASK;                                                                \
        _mm512_mask_storeu_ps(y + i, k, op(_mm512_maskz_loadu_ps(k, a + i), bs));           \
    } while (0)

#define VM_ISA _avx512
#include "cpu/vmath/vmath_loops.inc"

#else
/* Without the AVX-512 flags the kernels above are left out; the reductions
 * and conversions below still need them (CMake always passes them). */
typedef int wk_vmath_avx512_unused;
#endif

/* contiguous reductions: the shared plain-C lanes, vectorized for this target */
#define VRED(x) vred_##x
#define VRED_NO_MAXMIN
#include "cpu/vmath/vreduce.inc"
#undef VRED
float wk__vsum_f32_avx512(const float *x, int64_t n) { return vred_sum(x, n); }

/* NaN lanes are collected in a mask; MAXPS/MINPS alone would drop them. */
#define MAXMIN_LOOP(OP, RED)                                                          \
    do {                                                                              \
        for (; i + 2 * VL <= n; i += 2 * VL) {                                        \
            vf a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + VL);          \
            nanm |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q); \
            acc0 = OP(acc0, a);                                                       \
            acc1 = OP(acc1, b);                                                       \
        }                                                                             \
        for (; i < n; i += VL) {                                                      \
            vm k = n - i >= VL ? (vm)0xffff : (vm)((1u << (unsigned)(n - i)) - 1u);  \
            vf a = _mm512_mask_loadu_ps(first, k, x + i);                             \
            nanm |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);                           \
            acc0 = OP(acc0, a);                                                       \
        }                                                                             \
        r = RED(OP(acc0, acc1));                                                      \
    } while (0)

float wk__vmaxmin_f32_avx512(const float *x, int64_t n, int want_min) {
    vf first = _mm512_set1_ps(x[0]), acc0 = first, acc1 = first;
    vm nanm = 0;
    int64_t i = 0;
    float r;
    if (want_min) MAXMIN_LOOP(_mm512_min_ps, _mm512_reduce_min_ps);
    else MAXMIN_LOOP(_mm512_max_ps, _mm512_reduce_max_ps);
    return nanm ? (float)NAN : r;
}

/* ---- f16 / bf16 <-> f32 conversions, bit-identical to wick's scalar
 * wk_f16_to_f32, wk_bf16_to_f32, wk_f32_to_f16 and wk_f32_to_bf16
 * (src/base/dtype.c) for every input; the same method as vmath_avx2.c
 * (VCVTPH2PS with the signaling-NaN bit restored, VCVTPS2PH with RNE in the
 * immediate, bf16 by integer shifts with the RNE bias and a NaN fixup; no
 * AVX512-BF16 needed). Tails use masked loads and stores. */

static inline __mmask16 cvt_tail_mask(int64_t m) { return (__mmask16)((1u << (unsigned)m) - 1u); }

static inline __m512 cvt_h2f_16(__m256i h) {
    __m512i r = _mm512_castps_si512(_mm512_cvtph_ps(h));
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(r, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    if (!nan) return _mm512_castsi512_ps(r); /* no NaN: the usual case */
    /* NaN lanes: bit 22 = f16 quiet bit 9 (VCVTPH2PS always sets it) */
    __m512i q = _mm512_and_si512(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 13), _mm512_set1_epi32(0x00400000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_andnot_si512(_mm512_set1_epi32(0x00400000), r), q);
    return _mm512_castsi512_ps(r);
}

static inline __m256i cvt_f2h_16(__m512 x) { return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

static inline __m512i cvt_f2bf_16(__m512 x) { /* results in the low 16 bits of each 32-bit lane */
    __m512i u = _mm512_castps_si512(x);
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    r = _mm512_srli_epi32(r, 16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
}

static inline __m512 cvt_bf2f_16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

void wk__vcvt_f16_to_f32_avx512(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 a = cvt_h2f_16(_mm256_loadu_si256((const __m256i *)(x + i)));
        __m512 b = cvt_h2f_16(_mm256_loadu_si256((const __m256i *)(x + i + 16)));
        _mm512_storeu_ps(y + i, a);
        _mm512_storeu_ps(y + i + 16, b);
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : cvt_tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, cvt_h2f_16(_mm256_maskz_loadu_epi16(k, x + i)));
    }
}

void wk__vcvt_bf16_to_f32_avx512(float *y, const uint16_t *x, int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 a = cvt_bf2f_16(_mm256_loadu_si256((const __m256i *)(x + i)));
        __m512 b = cvt_bf2f_16(_mm256_loadu_si256((const __m256i *)(x + i + 16)));
        _mm512_storeu_ps(y + i, a);
        _mm512_storeu_ps(y + i + 16, b);
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : cvt_tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, k, cvt_bf2f_16(_mm256_maskz_loadu_epi16(k, x + i)));
    }
}

void wk__vcvt_f32_to_f16_avx512(uint16_t *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i a = cvt_f2h_16(_mm512_loadu_ps(x + i));
        __m256i b = cvt_f2h_16(_mm512_loadu_ps(x + i + 16));
        _mm256_storeu_si256((__m256i *)(y + i), a);
        _mm256_storeu_si256((__m256i *)(y + i + 16), b);
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : cvt_tail_mask(n - i);
        _mm256_mask_storeu_epi16(y + i, k, cvt_f2h_16(_mm512_maskz_loadu_ps(k, x + i)));
    }
}

void wk__vcvt_f32_to_bf16_avx512(uint16_t *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i a = cvt_f2bf_16(_mm512_loadu_ps(x + i));
        __m512i b = cvt_f2bf_16(_mm512_loadu_ps(x + i + 16));
        /* packus works per 128-bit lane (a0-3 b0-3 a4-7 b4-7 ...); the
         * qword permutation puts the 32 results back in order */
        __m512i p = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), _mm512_packus_epi32(a, b));
        _mm512_storeu_si512((void *)(y + i), p);
    }
    for (; i < n; i += 16) {
        __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : cvt_tail_mask(n - i);
        _mm512_mask_cvtepi32_storeu_epi16(y + i, k, cvt_f2bf_16(_mm512_maskz_loadu_ps(k, x + i)));
    }
}
