/* Vectorized f16 / bf16 <-> f32 conversions (wk__vcvt_* in src/cpu/vmath/vmath.h)
 * at every ISA level this CPU has, bit for bit against wick's scalar
 * conversions (wk_f16_to_f32, wk_bf16_to_f32, wk_f32_to_f16, wk_f32_to_bf16):
 *  - widening: all 65536 codes of each format (signaling NaNs included);
 *  - narrowing: a few million f32 bit patterns (a stride sweep over all 2^32,
 *    every exponent x rounding ties at every bit position, subnormals, NaNs
 *    with payloads, infinities, values around the overflow thresholds,
 *    random patterns), also under other FPU rounding modes;
 *  - lengths 0, 1, 7, 15, 16, 17, 33, 1000 at misaligned offsets: nothing
 *    written outside [0, n);
 *  - the dispatcher: n <= 0 touches nothing, forced levels, restore. */
#include "testutil.h"

#include "cpu/vmath/vmath.h"

#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*widen_fn)(float *, const uint16_t *, int64_t);
typedef void (*narrow_fn)(uint16_t *, const float *, int64_t);

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

static const char *LEVEL_NAMES[] = {"scalar", "avx2", "avx512"};

/* ------------------------------------------------------------- widening */

static void check_widen(widen_fn f, float (*ref)(uint16_t), const char *name) {
    enum { N = 65536 };
    uint16_t *x = malloc(sizeof(uint16_t) * (N + 1));
    float *y = malloc(sizeof(float) * (N + 1));
    assert_non_null(x);
    assert_non_null(y);
    for (int off = 0; off < 2; off++) { /* aligned and misaligned starts */
        for (uint32_t h = 0; h < N; h++) x[off + h] = (uint16_t)h;
        memset(y, 0xa5, sizeof(float) * (N + 1));
        f(y + off, x + off, N);
        int64_t bad = 0;
        for (uint32_t h = 0; h < N; h++) {
            uint32_t got = f2u(y[off + h]), want = f2u(ref((uint16_t)h));
            if (got != want) {
                if (bad < 5)
                    fprintf(stderr, "%s level %s: code 0x%04x -> 0x%08x, scalar 0x%08x\n", name,
                            LEVEL_NAMES[wk__vmath_level()], h, got, want);
                bad++;
            }
        }
        assert_int_equal(bad, 0);
    }
    free(x);
    free(y);
}

static void test_widen_all_codes(void **state) {
    (void)state;
    for (int lv = 0; lv <= wk__vmath_max_level(); lv++) {
        assert_int_equal(wk__vmath_set_level(lv), 0);
        check_widen(wk__vcvt_f16_to_f32, wk_f16_to_f32, "f16->f32");
        check_widen(wk__vcvt_bf16_to_f32, wk_bf16_to_f32, "bf16->f32");
    }
    wk__vmath_set_level(-1);
}

/* ------------------------------------------------------------ narrowing */

typedef struct {
    uint32_t *v;
    int64_t n, cap;
} ulist;

static void push(ulist *l, uint32_t u) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1 << 16;
        l->v = realloc(l->v, sizeof(uint32_t) * (size_t)l->cap);
        assert_non_null(l->v);
    }
    l->v[l->n++] = u;
}

/* The f32 bit patterns the narrowing tests run over. */
static ulist narrow_inputs(void) {
    ulist l = {0};
    /* 1. a sweep over all 2^32 patterns (odd stride: every residue class of
     * the low bits is visited, all exponents, both signs) */
    for (uint64_t u = 0; u < (1ull << 32); u += 2719) push(&l, (uint32_t)u);
    /* 2. every exponent and sign x a tie (and its neighbours) at every bit
     * position of the mantissa, over a few upper mantissas: the RNE ties of
     * f16 normals (bit 12), f16 subnormals (bits 13..23), bf16 (bit 15) */
    static const uint32_t HI[] = {0, 0x400000, 0x7fe000, 0x2a8000, 0x155000, 0x7f0000};
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t e = 0; e < 256; e++)
            for (int b = 0; b < 23; b++)
                for (size_t h = 0; h < sizeof HI / sizeof HI[0]; h++)
                    for (int odd = 0; odd < 2; odd++) {
                        uint32_t half = 1u << b;
                        uint32_t hi = (HI[h] & ~((half << 1) - 1)) | (odd ? half << 1 : 0);
                        hi &= 0x7fffffu;
                        for (int d = -1; d <= 1; d++) {
                            uint32_t m = (hi | half) + (uint32_t)d;
                            if (d < 0 && half == 1 && hi == 0) m = 0;
                            push(&l, (s << 31) | (e << 23) | (m & 0x7fffffu));
                        }
                    }
    /* 3. every f32 around the edges: zero, the smallest subnormals, f16's
     * subnormal/normal boundary, f16 overflow (65504, 65520), bf16's largest
     * finite, inf, NaNs with payloads (in the high, the low, and only the
     * lowest bits; signaling and quiet) */
    static const uint32_t EDGE[] = {0x00000000, 0x33000000, 0x33800000, 0x38800000, 0x387fc000,
                                    0x477fe000, 0x477ff000, 0x47800000, 0x7f7f0000, 0x7f7f7fff,
                                    0x7f7f8000, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0x7fbfffff};
    for (size_t i = 0; i < sizeof EDGE / sizeof EDGE[0]; i++)
        for (int d = -600; d <= 600; d++)
            for (uint32_t s = 0; s < 2; s++) push(&l, (s << 31) | (uint32_t)((int64_t)EDGE[i] + d));
    for (uint32_t p = 1; p < (1u << 23); p = p * 3 + 1)
        for (uint32_t s = 0; s < 2; s++) {
            push(&l, (s << 31) | 0x7f800000u | p);
            push(&l, (s << 31) | 0x7f800000u | (p & 0xffffu ? p & 0xffffu : 1));
            push(&l, (s << 31) | 0x7fc00000u | (p & 0x3fffffu));
        }
    /* 4. random patterns */
    for (int i = 0; i < 1000000; i++) push(&l, rnd32());
    return l;
}

static int64_t compare_narrow(narrow_fn f, uint16_t (*ref)(float), const char *name, const float *x, int64_t n,
                              uint16_t *y) {
    f(y, x, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t want = ref(x[i]);
        if (y[i] != want) {
            if (bad < 5)
                fprintf(stderr, "%s level %s: 0x%08x -> 0x%04x, scalar 0x%04x\n", name,
                        LEVEL_NAMES[wk__vmath_level()], f2u(x[i]), y[i], want);
            bad++;
        }
    }
    return bad;
}

static void test_narrow_patterns(void **state) {
    (void)state;
    ulist l = narrow_inputs();
    assert_true(l.n > 2000000);
    float *x = malloc(sizeof(float) * (size_t)l.n);
    uint16_t *y = malloc(sizeof(uint16_t) * (size_t)l.n);
    assert_non_null(x);
    assert_non_null(y);
    for (int64_t i = 0; i < l.n; i++) x[i] = u2f(l.v[i]);
    for (int lv = 0; lv <= wk__vmath_max_level(); lv++) {
        assert_int_equal(wk__vmath_set_level(lv), 0);
        assert_int_equal(compare_narrow(wk__vcvt_f32_to_f16, wk_f32_to_f16, "f32->f16", x, l.n, y), 0);
        assert_int_equal(compare_narrow(wk__vcvt_f32_to_bf16, wk_f32_to_bf16, "f32->bf16", x, l.n, y), 0);
        /* misaligned start */
        assert_int_equal(compare_narrow(wk__vcvt_f32_to_f16, wk_f32_to_f16, "f32->f16", x + 1, l.n - 1, y + 1), 0);
        assert_int_equal(compare_narrow(wk__vcvt_f32_to_bf16, wk_f32_to_bf16, "f32->bf16", x + 1, l.n - 1, y + 1),
                         0);
    }
    wk__vmath_set_level(-1);
    free(l.v);
    free(x);
    free(y);
}

/* The FPU rounding mode (MXCSR.RC) does not change the results: the scalar
 * code is integer arithmetic and VCVTPS2PH takes its mode from the immediate. */
static void test_narrow_rounding_modes(void **state) {
    (void)state;
    enum { N = 200000 };
    float *x = malloc(sizeof(float) * N);
    uint16_t *y = malloc(sizeof(uint16_t) * N), *want16 = malloc(sizeof(uint16_t) * N),
             *wantb = malloc(sizeof(uint16_t) * N);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(want16);
    assert_non_null(wantb);
    for (int i = 0; i < N; i++) {
        x[i] = u2f(rnd32());
        want16[i] = wk_f32_to_f16(x[i]);
        wantb[i] = wk_f32_to_bf16(x[i]);
    }
    static const int MODES[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    int saved = fegetround();
    for (size_t m = 0; m < sizeof MODES / sizeof MODES[0]; m++) {
        for (int lv = 0; lv <= wk__vmath_max_level(); lv++) {
            assert_int_equal(wk__vmath_set_level(lv), 0);
            assert_int_equal(fesetround(MODES[m]), 0);
            wk__vcvt_f32_to_f16(y, x, N);
            int same16 = memcmp(y, want16, sizeof(uint16_t) * N) == 0;
            wk__vcvt_f32_to_bf16(y, x, N);
            int sameb = memcmp(y, wantb, sizeof(uint16_t) * N) == 0;
            fesetround(saved);
            assert_true(same16);
            assert_true(sameb);
        }
    }
    wk__vmath_set_level(-1);
    free(x);
    free(y);
    free(want16);
    free(wantb);
}

/* ---------------------------------------------------- lengths and tails */

#define GUARD 40
static const int64_t LENS[] = {0, 1, 7, 15, 16, 17, 31, 32, 33, 1000};

static void test_lengths(void **state) {
    (void)state;
    uint32_t src32[1000 + 2 * GUARD];
    uint16_t src16[1000 + 2 * GUARD];
    for (int i = 0; i < 1000 + 2 * GUARD; i++) {
        src32[i] = rnd32();
        src16[i] = (uint16_t)rnd32();
    }
    /* a few specials in the first elements, which every length sees */
    src32[GUARD + 0] = 0x7f800001u; /* signaling NaN, payload in the low bits only */
    src32[GUARD + 2] = 0x477ff000u; /* 65520: f16 overflow */
    src32[GUARD + 3] = 0x7f7fffffu; /* rounds to bf16 inf */
    src16[GUARD + 0] = 0x7c01;      /* f16 signaling NaN */
    src16[GUARD + 4] = 0xff81;      /* bf16 signaling NaN */
    float xf[1000 + 2 * GUARD];
    for (int i = 0; i < 1000 + 2 * GUARD; i++) xf[i] = u2f(src32[i]);

    for (int lv = 0; lv <= wk__vmath_max_level(); lv++) {
        assert_int_equal(wk__vmath_set_level(lv), 0);
        for (size_t li = 0; li < sizeof LENS / sizeof LENS[0]; li++) {
            int64_t n = LENS[li];
            for (int off = 0; off < 3; off++) { /* output offset: misaligned stores */
                float yf[1000 + 2 * GUARD];
                uint16_t y16[1000 + 2 * GUARD];
                /* widening */
                for (int dir = 0; dir < 2; dir++) {
                    memset(yf, 0x5a, sizeof yf);
                    (dir ? wk__vcvt_bf16_to_f32 : wk__vcvt_f16_to_f32)(yf + GUARD + off, src16 + GUARD, n);
                    for (int64_t i = 0; i < 1000 + 2 * GUARD; i++) {
                        int64_t j = i - GUARD - off;
                        uint32_t got = f2u(yf[i]);
                        if (j >= 0 && j < n) {
                            float w = dir ? wk_bf16_to_f32(src16[GUARD + j]) : wk_f16_to_f32(src16[GUARD + j]);
                            assert_int_equal(got, f2u(w));
                        } else {
                            assert_int_equal(got, 0x5a5a5a5au);
                        }
                    }
                }
                /* narrowing */
                for (int dir = 0; dir < 2; dir++) {
                    memset(y16, 0x5a, sizeof y16);
                    (dir ? wk__vcvt_f32_to_bf16 : wk__vcvt_f32_to_f16)(y16 + GUARD + off, xf + GUARD, n);
                    for (int64_t i = 0; i < 1000 + 2 * GUARD; i++) {
                        int64_t j = i - GUARD - off;
                        if (j >= 0 && j < n) {
                            uint16_t w = dir ? wk_f32_to_bf16(xf[GUARD + j]) : wk_f32_to_f16(xf[GUARD + j]);
                            assert_int_equal(y16[i], w);
                        } else {
                            assert_int_equal(y16[i], 0x5a5a);
                        }
                    }
                }
            }
        }
    }
    wk__vmath_set_level(-1);
}

/* ------------------------------------------------------------ dispatcher */

static void test_dispatch(void **state) {
    (void)state;
    /* n <= 0: nothing read or written (NULL pointers are not touched) */
    wk__vcvt_f16_to_f32(NULL, NULL, 0);
    wk__vcvt_bf16_to_f32(NULL, NULL, -5);
    wk__vcvt_f32_to_f16(NULL, NULL, 0);
    wk__vcvt_f32_to_bf16(NULL, NULL, -1);
    int def = wk__vmath_level();
    /* an unsupported level is refused and changes nothing */
    if (wk__vmath_max_level() < WK_VMATH_AVX512) {
        assert_int_equal(wk__vmath_set_level(WK_VMATH_AVX512), -1);
        assert_int_equal(wk__vmath_level(), def);
    }
    assert_int_equal(wk__vmath_set_level(3), -1);
    /* documented values at the forced scalar level and the default one */
    static const uint32_t IN[] = {0x3f800000u, 0xc0000000u, 0x7f800000u, 0xff800000u, 0x7f800001u,
                                  0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u, 0x7f7fffffu};
    static const uint16_t F16[] = {0x3c00, 0xc000, 0x7c00, 0xfc00, 0x7e00, 0x7c00, 0x7bff, 0x0000, 0x0001, 0x7c00};
    static const uint16_t BF16[] = {0x3f80, 0xc000, 0x7f80, 0xff80, 0x7fc0, 0x4780, 0x4780, 0x3300, 0x3300, 0x7f80};
    float x[10];
    for (int i = 0; i < 10; i++) x[i] = u2f(IN[i]);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) assert_int_equal(wk__vmath_set_level(WK_VMATH_SCALAR), 0);
        else wk__vmath_set_level(-1);
        uint16_t y[10];
        wk__vcvt_f32_to_f16(y, x, 10);
        for (int i = 0; i < 10; i++) assert_int_equal(y[i], F16[i]);
        wk__vcvt_f32_to_bf16(y, x, 10);
        for (int i = 0; i < 10; i++) assert_int_equal(y[i], BF16[i]);
    }
    assert_int_equal(wk__vmath_level(), def);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_widen_all_codes),
        cmocka_unit_test(test_narrow_patterns),
        cmocka_unit_test(test_narrow_rounding_modes),
        cmocka_unit_test(test_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
