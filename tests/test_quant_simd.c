/* The vectorized block converters against their scalar references, at
 * every SIMD level this CPU has (WICK_ISA levels, as test_vmath):
 *  - quantizers (quantize_simple.c, SSE2) give the reference's bytes on
 *    blocks of every kind: normal data at magnitudes from f32-subnormal to
 *    near FLT_MAX, exact rounding ties, +-0 mixes, equal |max| of both
 *    signs, constant blocks, inf and NaN elements;
 *  - dequantizers (the CPU backend's rows, cpu/quantized/dequant_rows.c
 *    / dequant_rows_avx2.c) give the reference's bits on random block
 *    bytes (so every f16 scale pattern: subnormal, inf, NaN), NaN results
 *    compared as NaN;
 * quantizers through the traits table, dequantizers through
 * wk__cpu_dequant_row (what the CPU backend runs) and the traits table
 * (the portable reference rows). */
#include "testutil.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/vmath/vmath.h"
#include "cpu/quantized/dequant_rows.h"
#include "base/blocks.h"
#include "quant/quant.h"
#include "quant/quant_rows.h"

static uint64_t g_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void) {
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return (uint32_t)(g_state >> 16);
}
static double unif(void) { return (rnd32() + 0.5) / 4294967296.0; }
static float gauss(void) { return (float)(sqrt(-2.0 * log(unif())) * cos(6.283185307179586 * unif())); }

enum { NBLK = 4096, NKIND = 10 };

/* Block b of kind k (32 floats). */
static void fill_block(float *x, int kind) {
    int e = (int)(rnd32() % 270) - 145; /* 2^-145 .. 2^124: f32 subnormal to huge */
    float s = ldexpf(1.0f, e);
    switch (kind) {
    case 0: /* normal data at a random magnitude */
        for (int j = 0; j < 32; j++) x[j] = gauss() * s;
        break;
    case 1: /* integers and halves: exact ties for every rounding step */
        for (int j = 0; j < 32; j++) x[j] = (float)((int)(rnd32() % 511) - 255) * 0.5f;
        break;
    case 2: /* mostly +0 / -0, a few values */
        for (int j = 0; j < 32; j++) x[j] = (rnd32() & 1) ? -0.0f : 0.0f;
        if (rnd32() & 1)
            for (int t = 0; t < 3; t++) x[rnd32() % 32] = gauss() * s;
        break;
    case 3: /* +m and -m both present: which comes first decides the sign */
        for (int j = 0; j < 32; j++) x[j] = gauss() * 0.25f;
        x[rnd32() % 32] = 1.0f;
        x[rnd32() % 32] = -1.0f;
        break;
    case 4: /* constant */
    {
        float c = (rnd32() % 3 == 0) ? 0.0f : gauss() * s;
        for (int j = 0; j < 32; j++) x[j] = c;
        break;
    }
    case 5: /* one infinity */
        for (int j = 0; j < 32; j++) x[j] = gauss();
        x[rnd32() % 32] = (rnd32() & 1) ? INFINITY : -INFINITY;
        break;
    case 6: /* NaN somewhere (also first: the min/max scan starts from x[0]) */
        for (int j = 0; j < 32; j++) x[j] = gauss();
        x[(rnd32() & 1) ? 0 : rnd32() % 32] = NAN;
        break;
    case 7: /* all nonnegative or all nonpositive, min or max exactly zero */
    {
        float sg = (rnd32() & 1) ? 1.0f : -1.0f;
        for (int j = 0; j < 32; j++) x[j] = sg * fabsf(gauss()) * s;
        x[rnd32() % 32] = (rnd32() & 1) ? 0.0f : -0.0f;
        break;
    }
    case 8: /* near FLT_MAX: d and 1/d at the edges of the range */
        for (int j = 0; j < 32; j++) x[j] = gauss() * 1e37f;
        x[rnd32() % 32] = (rnd32() & 1) ? FLT_MAX : -FLT_MAX;
        break;
    default: /* random bit patterns that are not NaN: every magnitude mixed */
        for (int j = 0; j < 32; j++) {
            uint32_t u;
            do u = rnd32(); while ((u & 0x7f800000u) == 0x7f800000u);
            memcpy(&x[j], &u, 4);
        }
        break;
    }
}

static int levels(int *out) {
    int max = wk__vmath_max_level(), n = 0;
    for (int l = 0; l <= max; l++) out[n++] = l;
    return n;
}

typedef void (*qfn)(const float *x, void *y, int64_t n);
static const struct {
    const char *name;
    wk_dtype dt;
    qfn ref;
} QTYPES[] = {
    {"q4_0", WK_Q4_0, wk__quantize_row_q4_0_ref}, {"q4_1", WK_Q4_1, wk__quantize_row_q4_1_ref},
    {"q5_0", WK_Q5_0, wk__quantize_row_q5_0_ref}, {"q5_1", WK_Q5_1, wk__quantize_row_q5_1_ref},
    {"q8_0", WK_Q8_0, wk__quantize_row_q8_0_ref}, {"q8_1", WK_Q8_1, wk__quantize_row_q8_1_ref},
    {"iq4_nl", WK_IQ4_NL, wk__quantize_row_iq4_nl_ref},
};

static void test_quantize_bytes(void **state) {
    (void)state;
    const int64_t n = (int64_t)NBLK * 32;
    float *x = malloc(sizeof(float) * (size_t)n);
    uint8_t *a = malloc((size_t)n * 2), *b = malloc((size_t)n * 2);
    assert_true(x && a && b);
    for (int i = 0; i < NBLK; i++) fill_block(x + 32 * i, i % NKIND);
    int lv[3], nl = levels(lv);
    for (int li = 0; li < nl; li++) {
        assert_int_equal(wk__vmath_set_level(lv[li]), 0);
        for (size_t t = 0; t < sizeof QTYPES / sizeof QTYPES[0]; t++) {
            const wk__quant_traits *tr = wk__quant_traits_of(QTYPES[t].dt);
            assert_non_null(tr);
            size_t bytes = (size_t)NBLK * tr->block_bytes;
            memset(a, 0xa5, bytes);
            memset(b, 0x5a, bytes);
            QTYPES[t].ref(x, a, n);
            /* one long row, then the same data in rows of 1, 3 and 37 blocks */
            tr->from_f32(x, b, n);
            int bad = -1;
            for (int i = 0; i < NBLK && bad < 0; i++)
                if (memcmp(a + (size_t)i * tr->block_bytes, b + (size_t)i * tr->block_bytes, tr->block_bytes)) bad = i;
            if (bad >= 0) fail_msg("%s level %d: block %d (kind %d) differs from the reference", QTYPES[t].name, lv[li],
                                   bad, bad % NKIND);
            memset(b, 0x5a, bytes);
            for (int64_t i = 0, k = 0; i < NBLK; k++) {
                static const int64_t rows[3] = {1, 3, 37};
                int64_t r = rows[k % 3] < NBLK - i ? rows[k % 3] : NBLK - i;
                tr->from_f32(x + i * 32, b + i * (int64_t)tr->block_bytes, r * 32);
                i += r;
            }
            assert_memory_equal(a, b, bytes);
        }
    }
    wk__vmath_set_level(-1);
    free(x);
    free(a);
    free(b);
}

typedef void (*dfn)(const void *src, float *dst, int64_t n);
static const struct {
    const char *name;
    wk_dtype dt;
    dfn ref;
} DTYPES[] = {
    {"q4_0", WK_Q4_0, wk__dequant_row_q4_0_ref}, {"q4_1", WK_Q4_1, wk__dequant_row_q4_1_ref},
    {"q5_0", WK_Q5_0, wk__dequant_row_q5_0_ref}, {"q5_1", WK_Q5_1, wk__dequant_row_q5_1_ref},
    {"q8_0", WK_Q8_0, wk__dequant_row_q8_0_ref}, {"q4_K", WK_Q4_K, wk__dequant_row_q4_K_ref},
    {"q5_K", WK_Q5_K, wk__dequant_row_q5_K_ref}, {"q6_K", WK_Q6_K, wk__dequant_row_q6_K_ref},
};

static int same_value(float p, float q) {
    if (isnan(p) || isnan(q)) return isnan(p) && isnan(q);
    uint32_t u, v;
    memcpy(&u, &p, 4);
    memcpy(&v, &q, 4);
    return u == v;
}

static void test_dequantize_bits(void **state) {
    (void)state;
    enum { NB = 1024 };
    int lv[3], nl = levels(lv);
    for (size_t t = 0; t < sizeof DTYPES / sizeof DTYPES[0]; t++) {
        const wk__quant_traits *tr = wk__quant_traits_of(DTYPES[t].dt);
        assert_non_null(tr);
        size_t bytes = (size_t)NB * tr->block_bytes;
        int64_t n = (int64_t)NB * tr->block_elems;
        uint8_t *q = malloc(bytes);
        float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
        assert_true(q && a && b);
        for (size_t i = 0; i < bytes; i++) q[i] = (uint8_t)rnd32();
        DTYPES[t].ref(q, a, n);
        int64_t nan = 0;
        for (int64_t i = 0; i < n; i++) nan += isnan(a[i]) != 0;
        assert_true(nan < n / 8); /* random f16 scales: about 1 in 32 blocks is inf / NaN */
        for (int li = 0; li < nl; li++) {
            assert_int_equal(wk__vmath_set_level(lv[li]), 0);
            wk__q_to_f32_fn row = wk__cpu_dequant_row(DTYPES[t].dt);
            assert_non_null(row);
            memset(b, 0xff, sizeof(float) * (size_t)n);
            row(q, b, n);
            for (int64_t i = 0; i < n; i++)
                if (!same_value(a[i], b[i]))
                    fail_msg("%s level %d: element %lld: %a, reference %a", DTYPES[t].name, lv[li], (long long)i,
                             (double)b[i], (double)a[i]);
            /* a single block at a time as well (no block-pair shortcuts) */
            memset(b, 0xff, sizeof(float) * (size_t)n);
            for (int i = 0; i < 5; i++)
                row(q + (size_t)i * tr->block_bytes, b + (int64_t)i * tr->block_elems, tr->block_elems);
            for (int64_t i = 0; i < 5 * (int64_t)tr->block_elems; i++) assert_true(same_value(a[i], b[i]));
            /* the traits table's portable row too */
            memset(b, 0xff, sizeof(float) * (size_t)n);
            tr->to_f32(q, b, n);
            for (int64_t i = 0; i < n; i++) assert_true(same_value(a[i], b[i]));
        }
        wk__vmath_set_level(-1);
        printf("  %-5s dequantize: %d levels, bits equal (%lld NaN)\n", DTYPES[t].name, nl, (long long)nan);
        free(q);
        free(a);
        free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_bytes),
        cmocka_unit_test(test_dequantize_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
