/* The K-type and IQ4_XS row quantizers (src/quant/quantize_k.c), on the CPU,
 * without the venv: byte equality with ggml (all 14 block types, through the
 * traits table) via the hashes of ggml's own output on the shared data sets
 * (tools/quant_vs_ggml.h; the tool run against libggml-base produced them),
 * dequantize(quantize(x)) error within bounds a little above what each type
 * gives on each data set, q8_K's bsums and scale, near-idempotence, finite
 * output, zero and constant rows, and every output byte written independent
 * of what the buffer held and of how a row is split into calls.
 *
 * WICK_QUANTK_PRINT=1 prints the observed errors (to re-derive the bounds). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/blocks.h"
#include "quant/dequant_block.h"
#include "quant/quant.h"
#include "quant/quantize_k.h"
#include "../tools/quant_vs_ggml.h"

typedef void (*quant_fn)(const float *x, void *y, int64_t n);
typedef void (*deq_fn)(const void *b, float *y);

#define DQ_WRAP(t) \
    static void deq_##t(const void *b, float *y) { wk__dq_##t((const wk_block_##t *)b, y); }
DQ_WRAP(q2_K)
DQ_WRAP(q3_K)
DQ_WRAP(q4_K)
DQ_WRAP(q5_K)
DQ_WRAP(q6_K)
DQ_WRAP(q8_K)
DQ_WRAP(iq4_xs)

enum { NT = 7 };
typedef struct {
    const char *name;
    size_t bytes;
    quant_fn quant;
    deq_fn deq;
    /* relative RMSE bound per data set (QVG_SET_NAMES order): about 10% above
     * what this implementation (= ggml) gives on set seed 7, 128 blocks (the
     * "tiny" set, |x| ~ 1e-4, loses precision to f16-subnormal block scales,
     * as in ggml) */
    double bound[QVG_N_SETS];
} ktype;

static const ktype TYPES[NT] = {
    {"q2_K", sizeof(wk_block_q2_K), wk__quantize_row_q2_K, deq_q2_K,
     {0.32, 0.26, 0.23, 0.32, 0.15, 0.073, 0.51, 0.0005, 0.32, 0.32, 0.27, 0.32, 0.32}},
    {"q3_K", sizeof(wk_block_q3_K), wk__quantize_row_q3_K, deq_q3_K,
     {0.17, 0.14, 0.092, 0.17, 0.13, 0.098, 0.11, 0.0005, 0.17, 0.17, 0.12, 0.16, 0.17}},
    {"q4_K", sizeof(wk_block_q4_K), wk__quantize_row_q4_K, deq_q4_K,
     {0.076, 0.061, 0.085, 0.076, 0.033, 0.018, 0.061, 0.0005, 0.086, 0.076, 0.054, 0.084, 0.076}},
    {"q5_K", sizeof(wk_block_q5_K), wk__quantize_row_q5_K, deq_q5_K,
     {0.039, 0.031, 0.056, 0.039, 0.016, 0.0091, 0.04, 0.0005, 0.06, 0.039, 0.028, 0.044, 0.039}},
    {"q6_K", sizeof(wk_block_q6_K), wk__quantize_row_q6_K, deq_q6_K,
     {0.019, 0.015, 0.037, 0.019, 0.015, 0.012, 0.012, 0.0005, 0.083, 0.019, 0.013, 0.019, 0.019}},
    {"q8_K", sizeof(wk_block_q8_K), wk__quantize_row_q8_K, deq_q8_K,
     {0.0069, 0.0044, 0.032, 0.0069, 0.0043, 0.0036, 0.006, 0.0005, 0.0069, 0.0069, 0.004, 0.0099, 0.0069}},
    {"iq4_xs", sizeof(wk_block_iq4_xs), wk__quantize_row_iq4_xs, deq_iq4_xs,
     {0.082, 0.072, 0.1, 0.082, 0.067, 0.063, 0.068, 0.0005, 0.17, 0.082, 0.077, 0.084, 0.082}},
};

enum { NBLK = 128, N = NBLK * WK_QK_K };

static void dequant_row(const ktype *t, const void *q, float *y, int64_t nblk) {
    for (int64_t b = 0; b < nblk; b++) t->deq((const uint8_t *)q + (size_t)b * t->bytes, y + b * WK_QK_K);
}

static double rel_rmse(const float *x, const float *y, int64_t n) {
    double e = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)x[i] - y[i];
        e += d * d;
        r += (double)x[i] * x[i];
    }
    return r > 0 ? sqrt(e / r) : sqrt(e / (double)n);
}

typedef struct {
    float *x, *y, *y2;
    uint8_t *q, *q2;
} bufs;

static bufs bufs_new(void) {
    bufs b = {malloc(N * sizeof(float)), malloc(N * sizeof(float)), malloc(N * sizeof(float)),
              malloc((size_t)NBLK * sizeof(wk_block_q8_K)), malloc((size_t)NBLK * sizeof(wk_block_q8_K))};
    assert_non_null(b.x);
    assert_non_null(b.y);
    assert_non_null(b.y2);
    assert_non_null(b.q);
    assert_non_null(b.q2);
    return b;
}
static void bufs_free(bufs *b) {
    free(b->x);
    free(b->y);
    free(b->y2);
    free(b->q);
    free(b->q2);
}

/* FNV-1a of ggml's bytes for the QVG_N_SETS data sets, 8 rows of 4096, seed
 * 1: tools/quant_vs_ggml against libggml-base 0.25.3 from llama-cpp-python
 * 0.3.36 (ggml_quantize_chunk without imatrix; q8_1 and q8_K, which it has
 * no case for, through quantize_row_q8_1_ref / quantize_row_q8_K_ref). The
 * 32-element types are wip/quant's (quantize_simple.c); all go through the
 * traits table, as wk_quantize does. */
static const struct {
    wk_dtype dt;
    const char *name;
    uint64_t ggml_hash;
} GGML_HASHES[] = {
    {WK_Q4_0, "q4_0", 0xd704c0fdfb6ce6e1ull},   {WK_Q4_1, "q4_1", 0xd976a1cebef472d7ull},
    {WK_Q5_0, "q5_0", 0xb94a6ed6092cac0dull},   {WK_Q5_1, "q5_1", 0x388c5339b45e3cfdull},
    {WK_Q8_0, "q8_0", 0xefd3a1ed36cf25a5ull},   {WK_Q8_1, "q8_1", 0x79657460af85af63ull},
    {WK_Q2_K, "q2_K", 0xe5bf963b95a19dcbull},   {WK_Q3_K, "q3_K", 0x36780b2c42408353ull},
    {WK_Q4_K, "q4_K", 0xba250583a3b36574ull},   {WK_Q5_K, "q5_K", 0x534af85c20c8f027ull},
    {WK_Q6_K, "q6_K", 0xd3cf3272c8542c5full},   {WK_Q8_K, "q8_K", 0x799d4f271cd54a24ull},
    {WK_IQ4_NL, "iq4_nl", 0xd1b06d5060a7ab79ull}, {WK_IQ4_XS, "iq4_xs", 0x69062c1784385077ull},
};

/* wick's bytes hash to ggml's on the tool's data sets: the CI stand-in for
 * tools/quant_vs_ggml (which needs libggml-base). Any change to a rounding,
 * an operation order or a packing shows here. */
static void test_bytes_match_ggml_hashes(void **state) {
    (void)state;
    const int64_t rows = 8, per_row = 4096, n = rows * per_row;
    float *x = malloc((size_t)n * sizeof *x);
    uint8_t *q = malloc((size_t)n / WK_QK_K * sizeof(wk_block_q8_K));
    assert_non_null(x);
    assert_non_null(q);
    for (size_t t = 0; t < sizeof GGML_HASHES / sizeof GGML_HASHES[0]; t++) {
        const wk__quant_traits *tr = wk__quant_traits_of(GGML_HASHES[t].dt);
        assert_non_null(tr);
        assert_non_null(tr->from_f32);
        uint64_t h = QVG_FNV0;
        size_t row_bytes = (size_t)(per_row / tr->block_elems) * tr->block_bytes;
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 1, x, n);
            for (int64_t r = 0; r < rows; r++)
                assert_int_equal(wk__quantize_row(GGML_HASHES[t].dt, x + r * per_row, q + (size_t)r * row_bytes, per_row),
                                 WK_OK);
            h = qvg_fnv(h, q, (size_t)rows * row_bytes);
        }
        if (h != GGML_HASHES[t].ggml_hash)
            fail_msg("%s: bytes hash 0x%016llx, ggml's 0x%016llx", GGML_HASHES[t].name, (unsigned long long)h,
                     (unsigned long long)GGML_HASHES[t].ggml_hash);
    }
    free(x);
    free(q);
}

/* The traits table routes the K types and iq4_xs to these quantizers. */
static void test_traits_slots(void **state) {
    (void)state;
    static const wk_dtype dts[NT] = {WK_Q2_K, WK_Q3_K, WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_Q8_K, WK_IQ4_XS};
    for (int t = 0; t < NT; t++) {
        const wk__quant_traits *tr = wk__quant_traits_of(dts[t]);
        assert_non_null(tr);
        assert_true(tr->from_f32 == TYPES[t].quant);
        assert_int_equal(tr->block_elems, WK_QK_K);
        assert_int_equal(tr->block_bytes, TYPES[t].bytes);
    }
}

static void test_error_bounds(void **state) {
    (void)state;
    bufs b = bufs_new();
    int print = getenv("WICK_QUANTK_PRINT") != NULL;
    for (int t = 0; t < NT; t++) {
        if (print) fprintf(stderr, "%-7s", TYPES[t].name);
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 7, b.x, N);
            TYPES[t].quant(b.x, b.q, N);
            dequant_row(&TYPES[t], b.q, b.y, NBLK);
            double e = rel_rmse(b.x, b.y, N);
            if (print) fprintf(stderr, " %.5f", e);
            else if (!(e <= TYPES[t].bound[s]))
                fail_msg("%s on %s: relative RMSE %.5f above %.5f", TYPES[t].name, QVG_SET_NAMES[s], e,
                         TYPES[t].bound[s]);
        }
        if (print) fprintf(stderr, "\n");
    }
    bufs_free(&b);
}

/* q8_K: the largest magnitude maps to -127 exactly (d = -max / 127), every
 * value rounds to its nearest level, and bsums are the sums of 16 qs; an
 * all-zero block is all zero, bsums included. */
static void test_q8_K_scale_and_bsums(void **state) {
    (void)state;
    bufs b = bufs_new();
    for (int s = 0; s < QVG_N_SETS; s++) {
        qvg_fill(s, 3, b.x, N);
        wk__quantize_row_q8_K(b.x, b.q, N);
        const wk_block_q8_K *blk = (const wk_block_q8_K *)b.q;
        for (int i = 0; i < NBLK; i++) {
            const float *x = b.x + i * WK_QK_K;
            int arg = 0;
            for (int j = 1; j < WK_QK_K; j++)
                if (fabsf(x[j]) > fabsf(x[arg])) arg = j;
            for (int j = 0; j < WK_QK_K / 16; j++) {
                int sum = 0;
                for (int l = 0; l < 16; l++) sum += blk[i].qs[16 * j + l];
                assert_int_equal(blk[i].bsums[j], sum);
            }
            if (x[arg] == 0) {
                assert_true(blk[i].d == 0);
                for (int j = 0; j < WK_QK_K; j++) assert_int_equal(blk[i].qs[j], 0);
                continue;
            }
            assert_int_equal(blk[i].qs[arg], -127);
            assert_true(fabs((double)blk[i].d * -127 - x[arg]) <= 1e-6 * fabsf(x[arg]));
            double half = 0.5 * fabs((double)blk[i].d) * (1 + 1e-5);
            for (int j = 0; j < WK_QK_K; j++) {
                assert_true(blk[i].qs[j] >= -127);
                if (!(fabs((double)blk[i].d * blk[i].qs[j] - x[j]) <= half))
                    fail_msg("set %s block %d [%d]: %g -> %d * %g", QVG_SET_NAMES[s], i, j, x[j], blk[i].qs[j],
                             blk[i].d);
            }
        }
    }
    bufs_free(&b);
}

/* Re-quantizing a dequantized row: q8_K gives it back (to the last bits of
 * its f32 scale); the fitted types (whose fits reweight by the new
 * values, so bytes may move) change the row by well under the first
 * quantization error. */
static void test_requantize_dequantized(void **state) {
    (void)state;
    bufs b = bufs_new();
    for (int t = 0; t < NT; t++) {
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 5, b.x, N);
            TYPES[t].quant(b.x, b.q, N);
            dequant_row(&TYPES[t], b.q, b.y, NBLK);
            TYPES[t].quant(b.y, b.q2, N);
            dequant_row(&TYPES[t], b.q2, b.y2, NBLK);
            double e1 = rel_rmse(b.x, b.y, N), e2 = rel_rmse(b.y, b.y2, N);
            if (!(e2 <= 0.6 * e1 + 1e-6))
                fail_msg("%s on %s: requantizing moves %.5f (first error %.5f)", TYPES[t].name, QVG_SET_NAMES[s], e2,
                         e1);
            if (TYPES[t].quant != wk__quantize_row_q8_K) continue;
            /* values, not bytes: where +max and -max tie, the sign of d may flip */
            for (int i = 0; i < NBLK; i++) {
                const float *y = b.y + i * WK_QK_K, *y2 = b.y2 + i * WK_QK_K;
                float amax = 0;
                for (int j = 0; j < WK_QK_K; j++) amax = fmaxf(amax, fabsf(y[j]));
                for (int j = 0; j < WK_QK_K; j++)
                    if (!(fabsf(y2[j] - y[j]) <= 3e-7f * amax))
                        fail_msg("q8_K on %s: requantized %g -> %g", QVG_SET_NAMES[s], y[j], y2[j]);
            }
        }
    }
    bufs_free(&b);
}

static int all_finite(const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(y[i])) return 0;
    return 1;
}

/* Finite input gives finite blocks across magnitudes from f32-subnormal to
 * |x| < 4e5 (beyond about 65504 * 15 / 3 q2_K's f16 super-scale overflows,
 * as ggml's does). */
static void test_finite_output(void **state) {
    (void)state;
    static const float mags[] = {1e-40f, 1e-30f, 1e-10f, 1e-6f, 1e-2f, 1.f, 3e4f, 1e5f};
    bufs b = bufs_new();
    for (int t = 0; t < NT; t++) {
        for (size_t m = 0; m < sizeof mags / sizeof mags[0]; m++) {
            for (int s = 0; s < 2; s++) { /* normal, uniform: then scaled */
                qvg_fill(s, 11, b.x, N);
                for (int i = 0; i < N; i++) b.x[i] *= mags[m];
                TYPES[t].quant(b.x, b.q, N);
                dequant_row(&TYPES[t], b.q, b.y, NBLK);
                if (!all_finite(b.y, N)) fail_msg("%s: non-finite output at magnitude %g (set %d)", TYPES[t].name, mags[m], s);
            }
        }
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 11, b.x, N);
            TYPES[t].quant(b.x, b.q, N);
            dequant_row(&TYPES[t], b.q, b.y, NBLK);
            if (!all_finite(b.y, N)) fail_msg("%s: non-finite output on %s", TYPES[t].name, QVG_SET_NAMES[s]);
        }
    }
    bufs_free(&b);
}

/* An all-zero row dequantizes to exact zeros; a constant row to the constant
 * (up to the f16 rounding of the block scales: relative 2^-11, or where a
 * scale falls in f16's subnormal range half its step, 2^-25, times the
 * largest sub-scale * level product, 32 * 127 for iq4_xs). */
static void test_zero_and_constant_rows(void **state) {
    (void)state;
    static const float consts[] = {0.75f, -3.f, 1e-2f, -1e-2f, 100.f, 7.f};
    bufs b = bufs_new();
    for (int t = 0; t < NT; t++) {
        memset(b.x, 0, N * sizeof(float));
        TYPES[t].quant(b.x, b.q, N);
        dequant_row(&TYPES[t], b.q, b.y, NBLK);
        for (int i = 0; i < N; i++)
            if (b.y[i] != 0) fail_msg("%s: zero row gives %g at %d", TYPES[t].name, b.y[i], i);
        for (size_t c = 0; c < sizeof consts / sizeof consts[0]; c++) {
            for (int i = 0; i < N; i++) b.x[i] = consts[c];
            TYPES[t].quant(b.x, b.q, N);
            dequant_row(&TYPES[t], b.q, b.y, NBLK);
            for (int i = 0; i < N; i++)
                if (!(fabsf(b.y[i] - consts[c]) <= 1e-3f * fabsf(consts[c]) + 1.5e-4f))
                    fail_msg("%s: constant %g gives %g at %d", TYPES[t].name, consts[c], b.y[i], i);
        }
    }
    bufs_free(&b);
}

/* Every output byte is written (the result does not depend on what the
 * buffer held), blocks are independent (one call per block gives the same
 * bytes as one call per row), and two runs agree. */
static void test_deterministic_and_complete(void **state) {
    (void)state;
    bufs b = bufs_new();
    for (int t = 0; t < NT; t++) {
        size_t bytes = (size_t)NBLK * TYPES[t].bytes;
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 13, b.x, N);
            memset(b.q, 0x00, bytes);
            TYPES[t].quant(b.x, b.q, N);
            memset(b.q2, 0xA5, bytes);
            for (int i = 0; i < NBLK; i++)
                TYPES[t].quant(b.x + i * WK_QK_K, b.q2 + (size_t)i * TYPES[t].bytes, WK_QK_K);
            if (memcmp(b.q, b.q2, bytes)) fail_msg("%s on %s: bytes depend on the buffer or the split", TYPES[t].name,
                                                   QVG_SET_NAMES[s]);
            memset(b.q2, 0xFF, bytes);
            TYPES[t].quant(b.x, b.q2, N);
            assert_memory_equal(b.q, b.q2, bytes);
        }
    }
    bufs_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_match_ggml_hashes),
        cmocka_unit_test(test_traits_slots),
        cmocka_unit_test(test_error_bounds),
        cmocka_unit_test(test_q8_K_scale_and_bsums),
        cmocka_unit_test(test_requantize_dequantized),
        cmocka_unit_test(test_finite_output),
        cmocka_unit_test(test_zero_and_constant_rows),
        cmocka_unit_test(test_deterministic_and_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
