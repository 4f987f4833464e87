/* Block dtypes in the tensor layer, without the gguf-py oracle (that is
 * test_quant_oracle.c): the traits table, the quantizers gguf-py lacks
 * (q8_1's s field, iq4_nl's fit), round-trip quality of every quantizer,
 * the views, copies, gathers and joins a block tensor takes (each checked
 * against the same op on the dequantized values), the errors for what it
 * does not, a walk of the whole op table with block inputs, threads. */
#include "testutil.h"
#include "op_table.h"
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "base/blocks.h"
#include "quant/quant.h"
#include "wick/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const wk_dtype k_quantizable[] = {WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q8_0, WK_Q8_1, WK_IQ4_NL};
#define NQ (int)(sizeof k_quantizable / sizeof k_quantizable[0])

/* Deterministic normal-ish values (sum of uniforms), with a few outliers. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}
static float nrand(void) { return (float)((urand() + urand() + urand() + urand() - 2.0) * 1.7); }

static wk_tensor *rand_f32(int64_t rows, int64_t cols, bool outliers) {
    float *v = malloc(sizeof(float) * (size_t)(rows * cols));
    assert_non_null(v);
    for (int64_t i = 0; i < rows * cols; i++) v[i] = nrand() * (outliers && i % 97 == 5 ? 60.0f : 1.0f);
    int64_t s[2] = {rows, cols};
    wk_tensor *t = tu_f32(v, s, 2);
    free(v);
    return t;
}

/* A bit-for-bit comparison of two f32 tensors of one shape. */
static void assert_same_f32(const wk_tensor *a, const wk_tensor *b) {
    assert_int_equal(wk_tensor_dtype(a), WK_F32);
    assert_int_equal(wk_tensor_dtype(b), WK_F32);
    assert_int_equal(wk_rank(a), wk_rank(b));
    for (int i = 0; i < wk_rank(a); i++) assert_int_equal(wk_shape(a)[i], wk_shape(b)[i]);
    int64_t n = wk_numel(a);
    float *x = malloc(sizeof(float) * (size_t)(n + 1)), *y = malloc(sizeof(float) * (size_t)(n + 1));
    assert_non_null(x);
    assert_non_null(y);
    TU_STATUS_OK(wk_to_host(a, x, sizeof(float) * (size_t)n));
    TU_STATUS_OK(wk_to_host(b, y, sizeof(float) * (size_t)n));
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&x[i], &y[i], 4) != 0) fail_msg("element %lld: %g vs %g", (long long)i, x[i], y[i]);
    free(x);
    free(y);
}

/* ---- the traits table ---- */

static void test_traits_table(void **state) {
    (void)state;
    for (int d = WK_ELEM_DTYPE_COUNT; d < WK_DTYPE_COUNT; d++) {
        const wk__quant_traits *tr = wk__quant_traits_of((wk_dtype)d);
        const wk_dtype_info *di = wk_dtype_info_of((wk_dtype)d);
        assert_non_null(tr);
        assert_int_equal(tr->dtype, d);
        assert_int_equal(tr->block_elems, di->block_elems);
        assert_int_equal(tr->block_bytes, di->block_bytes);
        assert_non_null(tr->to_f32);
        /* the partner holds blocks of the same length, and is its own partner */
        const wk__quant_traits *p = wk__quant_traits_of(tr->vec_dot_type);
        assert_non_null(p);
        assert_int_equal(p->block_elems, tr->block_elems);
        assert_int_equal(p->vec_dot_type, tr->vec_dot_type);
    }
    for (int d = 0; d < WK_ELEM_DTYPE_COUNT; d++) assert_null(wk__quant_traits_of((wk_dtype)d));
    assert_null(wk__quant_traits_of(WK_DTYPE_COUNT));
    assert_int_equal(wk__quant_traits_of(WK_Q4_0)->vec_dot_type, WK_Q8_0);
    assert_int_equal(wk__quant_traits_of(WK_Q5_0)->vec_dot_type, WK_Q8_0);
    assert_int_equal(wk__quant_traits_of(WK_IQ4_NL)->vec_dot_type, WK_Q8_0);
    assert_int_equal(wk__quant_traits_of(WK_Q4_1)->vec_dot_type, WK_Q8_1);
    assert_int_equal(wk__quant_traits_of(WK_Q5_1)->vec_dot_type, WK_Q8_1);
    assert_int_equal(wk__quant_traits_of(WK_Q4_K)->vec_dot_type, WK_Q8_K);
    assert_int_equal(wk__quant_traits_of(WK_IQ4_XS)->vec_dot_type, WK_Q8_K);
    for (int i = 0; i < NQ; i++) assert_non_null(wk__quant_traits_of(k_quantizable[i])->from_f32);

    float x[64] = {0};
    unsigned char q[64 * 4];
    assert_int_equal(wk__quantize_row(WK_F32, x, q, 32), WK_ERR_DTYPE);
    assert_int_equal(wk__dequantize_row(WK_F16, q, x, 32), WK_ERR_DTYPE);
    assert_int_equal(wk__quantize_row(WK_Q4_0, x, q, 48), WK_ERR_SHAPE);
    assert_int_equal(wk__dequantize_row(WK_Q4_0, q, x, -32), WK_ERR_SHAPE);
    assert_int_equal(wk__quantize_row(WK_Q8_0, x, q, 64), WK_OK);
    for (int i = 0; i < 2; i++) assert_int_equal(q[i * 34] | q[i * 34 + 1], 0); /* d = 0 */
    assert_int_equal(wk__dequantize_row(WK_Q8_0, q, x, 64), WK_OK);
    for (int i = 0; i < 64; i++) assert_true(x[i] == 0.0f);
    /* a type without a quantizer yet says so */
    for (int d = WK_ELEM_DTYPE_COUNT; d < WK_DTYPE_COUNT; d++)
        if (!wk__quant_traits_of((wk_dtype)d)->from_f32) {
            float big[256] = {0};
            unsigned char qb[512];
            assert_int_equal(wk__quantize_row((wk_dtype)d, big, qb, 256), WK_ERR_NOT_COMPILED);
        }
}

/* ---- q8_1 and iq4_nl (no gguf-py quantizer) ---- */

static void test_q8_1_matches_q8_0_and_sum(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = rand_f32(6, 128, true);
    wk_tensor *a = TU_OK(wk_quantize(x, WK_Q8_0)), *b = TU_OK(wk_quantize(x, WK_Q8_1));
    enum { NB = 6 * 4 };
    wk_block_q8_0 qa[NB];
    wk_block_q8_1 qb[NB];
    TU_STATUS_OK(wk_to_host(a, qa, sizeof qa));
    TU_STATUS_OK(wk_to_host(b, qb, sizeof qb));
    float xv[6 * 128];
    TU_STATUS_OK(wk_to_host(x, xv, sizeof xv));
    for (int i = 0; i < NB; i++) {
        /* same scale and values as q8_0 (gguf-py-checked), plus s = d * sum(q)
         * with ggml's f32 d = amax / 127 (before its rounding to f16) */
        assert_int_equal(qa[i].d, qb[i].d);
        assert_memory_equal(qa[i].qs, qb[i].qs, 32);
        int sum = 0;
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            sum += qb[i].qs[j];
            amax = fmaxf(amax, fabsf(xv[i * 32 + j]));
        }
        assert_int_equal(qb[i].s, wk_f32_to_f16((float)sum * (amax / 127.0f)));
    }
    /* dequantized q8_1 == dequantized q8_0 */
    assert_same_f32(TU_OK(wk_dequantize(a, WK_F32)), TU_OK(wk_dequantize(b, WK_F32)));
    wk_scope_end();
}

/* Relative RMS error of quantize -> dequantize on normal-ish data. */
static double rel_rmse(const wk_tensor *x, wk_dtype q) {
    wk_tensor *y = TU_OK(wk_dequantize(TU_OK(wk_quantize(x, q)), WK_F32));
    int64_t n = wk_numel(x);
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    assert_non_null(a);
    assert_non_null(b);
    TU_STATUS_OK(wk_to_host_f32(x, a, (size_t)n));
    TU_STATUS_OK(wk_to_host_f32(y, b, (size_t)n));
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        s += (double)a[i] * a[i];
    }
    free(a);
    free(b);
    return sqrt(e / s);
}

static void test_round_trip_quality(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = rand_f32(64, 256, false);
    /* bits per value set the error: 4-bit ~ 1/15 of the range per step,
     * 5-bit ~ 1/31, 8-bit ~ 1/255 (bounds with margin over measured values) */
    double e40 = rel_rmse(x, WK_Q4_0), e41 = rel_rmse(x, WK_Q4_1), e50 = rel_rmse(x, WK_Q5_0);
    double e51 = rel_rmse(x, WK_Q5_1), e80 = rel_rmse(x, WK_Q8_0), e81 = rel_rmse(x, WK_Q8_1);
    double enl = rel_rmse(x, WK_IQ4_NL);
    print_message("relative rmse: q4_0 %.4f q4_1 %.4f q5_0 %.4f q5_1 %.4f q8_0 %.5f q8_1 %.5f iq4_nl %.4f\n", e40, e41,
                  e50, e51, e80, e81, enl);
    assert_true(e40 < 0.12 && e41 < 0.11 && e50 < 0.06 && e51 < 0.055 && e80 < 0.006 && e81 < 0.006);
    assert_true(e50 < e40 && e51 < e41 && e80 < e50);
    /* iq4_nl's fitted scale and non-linear grid beat q4_0's at 4 bits */
    assert_true(enl < 0.105 && enl < e40);
    wk_scope_end();
}

/* Zero rows give zeros, all-equal rows give (close to) the value; outliers
 * keep their magnitude. */
static void test_special_rows(void **state) {
    (void)state;
    wk_scope_begin();
    float v[4 * 64];
    for (int j = 0; j < 64; j++) {
        v[j] = 0.0f;
        v[64 + j] = 0.37f;
        v[128 + j] = -2.5f;
        v[192 + j] = j == 7 ? 1000.0f : 0.01f * (float)(j % 5);
    }
    int64_t s[2] = {4, 64};
    wk_tensor *x = tu_f32(v, s, 2);
    for (int i = 0; i < NQ; i++) {
        float y[4 * 64];
        TU_STATUS_OK(wk_to_host_f32(TU_OK(wk_quantize(x, k_quantizable[i])), y, 4 * 64));
        for (int j = 0; j < 64; j++) {
            assert_true(y[j] == 0.0f);
            assert_true(fabsf(y[64 + j] - 0.37f) < 2e-3f);
            assert_true(fabsf(y[128 + j] + 2.5f) < 4e-3f);
        }
        assert_true(fabsf(y[192 + 7] - 1000.0f) < 1.0f);
    }
    wk_scope_end();
}

/* ---- public API errors ---- */

static void test_quantize_errors(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = rand_f32(2, 64, false);
    TU_FAILS(wk_quantize(x, WK_F16), WK_ERR_DTYPE);
    TU_FAILS(wk_quantize(x, WK_DTYPE_COUNT), WK_ERR_DTYPE);
    TU_FAILS(wk_quantize(TU_OK(wk_narrow(x, 1, 0, 48)), WK_Q4_0), WK_ERR_SHAPE);
    TU_FAILS(wk_quantize(TU_OK(wk_flatten_all(TU_OK(wk_narrow(x, 1, 0, 1)))), WK_Q4_0), WK_ERR_SHAPE);
    int64_t one = 32;
    wk_tensor *i32 = TU_OK(wk_zeros(&one, 1, WK_I32, wk_cpu()));
    TU_FAILS(wk_quantize(i32, WK_Q8_0), WK_ERR_DTYPE);
    TU_FAILS(wk_quantize(NULL, WK_Q8_0), WK_ERR_ARG);
    wk_tensor *q = TU_OK(wk_quantize(x, WK_Q8_0));
    TU_FAILS(wk_dequantize(x, WK_F32), WK_ERR_DTYPE);
    TU_FAILS(wk_dequantize(q, WK_Q4_0), WK_ERR_DTYPE);
    TU_FAILS(wk_dequantize(q, WK_DTYPE_COUNT), WK_ERR_DTYPE);
    TU_FAILS(wk_dequantize(NULL, WK_F32), WK_ERR_ARG);
    /* wk_to_dtype goes through f32 where the entries do not: ints and f64 */
    wk_tensor *qi = TU_OK(wk_to_dtype(i32, WK_Q8_0));
    assert_int_equal(wk_tensor_dtype(qi), WK_Q8_0);
    wk_tensor *d64 = TU_OK(wk_to_dtype(q, WK_F64)), *d32 = TU_OK(wk_dequantize(q, WK_F32));
    assert_true(tu_max_abs_diff(d64, d32) == 0.0);
    wk_tensor *di = TU_OK(wk_dequantize(q, WK_I64));
    assert_int_equal(wk_tensor_dtype(di), WK_I64);
    /* element values of a block tensor: no element ops, no wk_get */
    int64_t idx[2] = {0, 0};
    double out;
    assert_int_equal(wk_get(q, idx, &out), WK_ERR_DTYPE);
    wk_clear_error();
    TU_FAILS(wk_unary(q, WK_EXP), WK_ERR_DTYPE);
    TU_FAILS(wk_zeros(idx, 0, WK_Q4_0, wk_cpu()), WK_ERR_DTYPE);
    wk_scope_end();
}

/* block -> block: through f32 */
static void test_to_dtype_block_to_block(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = rand_f32(3, 96, true);
    wk_tensor *a = TU_OK(wk_quantize(x, WK_Q8_0));
    wk_tensor *b = TU_OK(wk_to_dtype(a, WK_Q4_1));
    wk_tensor *c = TU_OK(wk_quantize(TU_OK(wk_dequantize(a, WK_F32)), WK_Q4_1));
    assert_int_equal(wk_tensor_dtype(b), WK_Q4_1);
    assert_same_f32(TU_OK(wk_dequantize(b, WK_F32)), TU_OK(wk_dequantize(c, WK_F32)));
    wk_tensor *same = TU_OK(wk_to_dtype(a, WK_Q8_0));
    assert_true(wk_shares_storage(same, a));
    wk_tensor *re = TU_OK(wk_quantize(a, WK_Q5_0)); /* wk_quantize of a block tensor requantizes */
    assert_same_f32(TU_OK(wk_dequantize(re, WK_F32)),
                    TU_OK(wk_dequantize(TU_OK(wk_quantize(TU_OK(wk_dequantize(a, WK_F32)), WK_Q5_0)), WK_F32)));
    wk_scope_end();
}

/* ---- views and copies ---- */

/* v (a block view) dequantizes to the same view of the dequantized whole. */
static void same_view(const wk_tensor *v, const wk_tensor *fv) {
    assert_same_f32(TU_OK(wk_dequantize(v, WK_F32)), TU_OK(wk_contiguous(fv)));
}

static void test_row_views(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s3[3] = {3, 4, 64};
    wk_tensor *x = TU_OK(wk_reshape(rand_f32(12, 64, true), s3, 3));
    wk_tensor *q = TU_OK(wk_quantize(x, WK_Q4_0));
    wk_tensor *f = TU_OK(wk_dequantize(q, WK_F32));
    /* narrow / select / split / chunk along non-last dims: views */
    wk_tensor *n = TU_OK(wk_narrow(q, 1, 1, 2));
    assert_true(wk_shares_storage(n, q));
    same_view(n, TU_OK(wk_narrow(f, 1, 1, 2)));
    wk_tensor *sl = TU_OK(wk_select(q, 0, 2));
    assert_true(wk_shares_storage(sl, q));
    same_view(sl, TU_OK(wk_select(f, 0, 2)));
    same_view(TU_OK(wk_select(q, 1, -1)), TU_OK(wk_select(f, 1, -1)));
    wk_tensor *parts[4];
    int cnt = 0;
    TU_STATUS_OK(wk_chunk(q, 2, 1, parts, &cnt));
    assert_int_equal(cnt, 2);
    same_view(parts[1], TU_OK(wk_narrow(f, 1, 2, 2)));
    for (int i = 0; i < cnt; i++) wk_tensor_free(parts[i]);
    int64_t sz[2] = {1, 2};
    TU_STATUS_OK(wk_split(q, sz, 2, 0, parts));
    same_view(parts[1], TU_OK(wk_narrow(f, 0, 1, 2)));
    wk_tensor_free(parts[0]);
    wk_tensor_free(parts[1]);
    /* the last dim at block boundaries */
    wk_tensor *nb = TU_OK(wk_narrow(q, 2, 32, 32));
    same_view(nb, TU_OK(wk_narrow(f, 2, 32, 32)));
    TU_FAILS(wk_narrow(q, 2, 16, 32), WK_ERR_SHAPE);
    TU_FAILS(wk_narrow(q, 2, 0, 48), WK_ERR_SHAPE);
    TU_FAILS(wk_select(q, 2, 0), WK_ERR_SHAPE);
    /* reshape / flatten / unsqueeze / squeeze that keep rows of whole blocks */
    int64_t r2[2] = {12, 64}, r4[2] = {24, 32}, bad[2] = {64, 12};
    same_view(TU_OK(wk_reshape(q, r2, 2)), TU_OK(wk_reshape(f, r2, 2)));
    same_view(TU_OK(wk_reshape(q, r4, 2)), TU_OK(wk_reshape(f, r4, 2)));
    TU_FAILS(wk_reshape(q, bad, 2), WK_ERR_SHAPE);
    same_view(TU_OK(wk_flatten(q, 0, 1)), TU_OK(wk_flatten(f, 0, 1)));
    same_view(TU_OK(wk_flatten_all(q)), TU_OK(wk_flatten_all(f)));
    same_view(TU_OK(wk_flatten(q, 1, 2)), TU_OK(wk_flatten(f, 1, 2)));
    wk_tensor *u = TU_OK(wk_unsqueeze(q, 0));
    assert_int_equal(wk_rank(u), 4);
    same_view(TU_OK(wk_squeeze(u, 0)), f);
    TU_FAILS(wk_unsqueeze(q, 3), WK_ERR_SHAPE);
    /* a flatten of a view with whole-block gaps copies */
    same_view(TU_OK(wk_flatten_all(nb)), TU_OK(wk_flatten_all(TU_OK(wk_narrow(f, 2, 32, 32)))));
    /* transposes that keep the last dim: views; the last dim: refused */
    wk_tensor *t01 = TU_OK(wk_transpose(q, 0, 1));
    same_view(t01, TU_OK(wk_transpose(f, 0, 1)));
    int perm[3] = {1, 0, 2}, perm_bad[3] = {0, 2, 1};
    same_view(TU_OK(wk_permute(q, perm, 3)), TU_OK(wk_permute(f, perm, 3)));
    TU_FAILS(wk_transpose(q, 1, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_t(q), WK_ERR_SHAPE);
    TU_FAILS(wk_permute(q, perm_bad, 3), WK_ERR_SHAPE);
    int64_t bs[4] = {2, 3, 4, 64};
    TU_FAILS(wk_broadcast_as(q, bs, 4), WK_ERR_DTYPE);
    /* contiguous / copy of a non-contiguous view: block bytes moved */
    assert_false(wk_is_contiguous(t01));
    wk_tensor *c = TU_OK(wk_contiguous(t01));
    assert_true(wk_is_contiguous(c));
    assert_int_equal(wk_tensor_dtype(c), WK_Q4_0);
    same_view(c, TU_OK(wk_transpose(f, 0, 1)));
    wk_tensor *cp = TU_OK(wk_copy(q));
    assert_false(wk_shares_storage(cp, q));
    same_view(cp, f);
    wk_tensor *cv = TU_OK(wk_contiguous(q));
    assert_true(wk_shares_storage(cv, q));
    wk_scope_end();
}

/* Raw bytes in and out; device moves; cat / stack. */
static void test_bytes_moves_and_joins(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = rand_f32(4, 64, false);
    wk_tensor *q = TU_OK(wk_quantize(x, WK_Q5_1));
    enum { NBYTES = 4 * 2 * 24 };
    unsigned char raw[NBYTES], raw2[NBYTES];
    assert_int_equal(wk_to_host(q, raw, NBYTES - 1), WK_ERR_ARG);
    wk_clear_error();
    TU_STATUS_OK(wk_to_host(q, raw, NBYTES));
    wk_tensor *back = TU_OK(wk_from_host(raw, NBYTES, wk_shape(q), 2, WK_Q5_1, wk_cpu()));
    TU_STATUS_OK(wk_to_host(back, raw2, NBYTES));
    assert_memory_equal(raw, raw2, NBYTES);
    /* a row view's bytes are its rows' */
    TU_STATUS_OK(wk_to_host(TU_OK(wk_narrow(q, 0, 2, 2)), raw2, NBYTES / 2));
    assert_memory_equal(raw + NBYTES / 2, raw2, NBYTES / 2);
    /* the second block of each row */
    TU_STATUS_OK(wk_to_host(TU_OK(wk_narrow(q, 1, 32, 32)), raw2, NBYTES / 2));
    for (int r = 0; r < 4; r++) assert_memory_equal(raw + r * 48 + 24, raw2 + r * 24, 24);
    wk_tensor *moved = TU_OK(wk_to_device(TU_OK(wk_narrow(q, 1, 32, 32)), wk_cpu()));
    assert_int_equal(wk_tensor_dtype(moved), WK_Q5_1);
    /* cat along rows and along the last dim (whole blocks); stack */
    wk_tensor *f = TU_OK(wk_dequantize(q, WK_F32));
    wk_tensor *qs[2] = {q, TU_OK(wk_narrow(q, 0, 1, 2))}, *fs[2] = {f, TU_OK(wk_narrow(f, 0, 1, 2))};
    same_view(TU_OK(wk_cat(qs, 2, 0)), TU_OK(wk_cat(fs, 2, 0)));
    wk_tensor *qc[2] = {TU_OK(wk_narrow(q, 1, 32, 32)), q}, *fc[2] = {TU_OK(wk_narrow(f, 1, 32, 32)), f};
    same_view(TU_OK(wk_cat(qc, 2, -1)), TU_OK(wk_cat(fc, 2, -1)));
    wk_tensor *qq[2] = {q, q}, *ff[2] = {f, f};
    same_view(TU_OK(wk_stack(qq, 2, 1)), TU_OK(wk_stack(ff, 2, 1)));
    TU_FAILS(wk_stack(qq, 2, 2), WK_ERR_SHAPE);
    wk_tensor *mixed[2] = {q, TU_OK(wk_quantize(x, WK_Q8_0))};
    TU_FAILS(wk_cat(mixed, 2, 0), WK_ERR_DTYPE);
    wk_tensor *mixed2[2] = {q, f};
    TU_FAILS(wk_cat(mixed2, 2, 0), WK_ERR_DTYPE);
    wk_scope_end();
}

/* Embedding lookup straight from quantized rows == dequantized rows gathered. */
static void test_embedding_lookup(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *table = rand_f32(50, 96, true);
    static const wk_dtype id_types[4] = {WK_I64, WK_I32, WK_U32, WK_U8};
    for (int i = 0; i < NQ; i++) {
        wk_tensor *q = TU_OK(wk_quantize(table, k_quantizable[i]));
        wk_tensor *f = TU_OK(wk_dequantize(q, WK_F32));
        double ids[7] = {3, 0, 49, 3, 17, 17, 1};
        int64_t n = 7;
        wk_tensor *id = TU_OK(tu_make(ids, &n, 1, id_types[i % 4]));
        wk_tensor *rows = TU_OK(wk_index_select(q, id, 0));
        assert_int_equal(wk_tensor_dtype(rows), k_quantizable[i]);
        same_view(rows, TU_OK(wk_index_select(f, id, 0)));
        /* wk_embedding keeps the ids' shape */
        int64_t s2[2] = {7, 1};
        wk_tensor *e = TU_OK(wk_embedding(TU_OK(wk_reshape(id, s2, 2)), q));
        int64_t es[3] = {7, 1, 96};
        tu_assert_shape(e, es, 3);
        same_view(e, TU_OK(wk_embedding(TU_OK(wk_reshape(id, s2, 2)), f)));
        /* gathers from a view, and along a leading dim of rank 3 */
        wk_tensor *v = TU_OK(wk_narrow(q, 1, 32, 64));
        same_view(TU_OK(wk_index_select(v, id, 0)), TU_OK(wk_index_select(TU_OK(wk_narrow(f, 1, 32, 64)), id, 0)));
        TU_FAILS(wk_index_select(q, id, 1), WK_ERR_SHAPE);
        double oob[1] = {50};
        int64_t one = 1;
        TU_FAILS(wk_index_select(q, TU_OK(tu_make(oob, &one, 1, WK_I64)), 0), WK_ERR_INDEX);
    }
    int64_t s3[3] = {5, 10, 96};
    wk_tensor *q3 = TU_OK(wk_quantize(TU_OK(wk_reshape(table, s3, 3)), WK_Q8_0));
    double ids[3] = {9, 0, 4};
    int64_t n = 3;
    wk_tensor *id = TU_OK(tu_make(ids, &n, 1, WK_I64));
    same_view(TU_OK(wk_index_select(q3, id, 1)), TU_OK(wk_index_select(TU_OK(wk_dequantize(q3, WK_F32)), id, 1)));
    wk_scope_end();
}

/* The pool splits big tensors by blocks: 1 and 2 threads agree, long single
 * rows included; f16 / bf16 outputs are the f32 values rounded. */
static void test_threads_agree(void **state) {
    (void)state;
    wk_scope_begin();
    int before = wk_num_threads();
    wk_tensor *x = rand_f32(3, 65536 + 256, true); /* rows longer than the pool's threshold */
    for (int i = 0; i < NQ; i++) {
        TU_STATUS_OK(wk_set_num_threads(1));
        wk_tensor *q1 = TU_OK(wk_quantize(x, k_quantizable[i]));
        wk_tensor *d1 = TU_OK(wk_dequantize(q1, WK_F32)), *h1 = TU_OK(wk_dequantize(q1, WK_BF16));
        TU_STATUS_OK(wk_set_num_threads(2));
        wk_tensor *q2 = TU_OK(wk_quantize(x, k_quantizable[i]));
        wk_tensor *d2 = TU_OK(wk_dequantize(q2, WK_F32)), *h2 = TU_OK(wk_dequantize(q2, WK_BF16));
        size_t nb = (size_t)wk_numel(x) / 32 * wk_dtype_info_of(k_quantizable[i])->block_bytes;
        unsigned char *a = malloc(nb), *b = malloc(nb);
        assert_non_null(a);
        assert_non_null(b);
        TU_STATUS_OK(wk_to_host(q1, a, nb));
        TU_STATUS_OK(wk_to_host(q2, b, nb));
        assert_memory_equal(a, b, nb);
        free(a);
        free(b);
        assert_same_f32(d1, d2);
        assert_true(tu_max_abs_diff(h1, h2) == 0.0);
        assert_true(tu_max_abs_diff(h1, TU_OK(wk_to_dtype(d1, WK_BF16))) == 0.0);
    }
    TU_STATUS_OK(wk_set_num_threads(before));
    wk_scope_end();
}

/* ---- a device without quantize / dequantize entries ---- */

/* The CPU's table with every optional entry cleared, on a CPU-kind device
 * of its own (as test_backend_contract's required-only backend). */
static wk_backend g_bare_table;
static wk_backend_desc g_bare_desc;
static wk_device g_bare_dev;
static wk_device *bare_open(int ordinal) {
    if (ordinal != 0) {
        wk__err(WK_ERR_DEVICE, "bare_open", "cpu-noquant has one device");
        return NULL;
    }
    return &g_bare_dev;
}
static int bare_count(void) { return 1; }
static wk_device *bare_dev(void) {
    static bool done;
    if (!done) {
        done = true;
        g_bare_table = wk__cpu_backend;
        g_bare_table.name = "cpu-noquant";
        memset((char *)&g_bare_table + offsetof(wk_backend, softmax), 0,
               sizeof(wk_backend) - offsetof(wk_backend, softmax));
        g_bare_desc = (wk_backend_desc){.name = "cpu-noquant", .kind = WK_DEVICE_CPU, .ops = &g_bare_table,
                                        .open = bare_open, .device_count = bare_count};
        g_bare_dev = (wk_device){.kind = WK_DEVICE_CPU, .instance = 2000, .be = &g_bare_table, .desc = &g_bare_desc,
                                 .name = "cpu-noquant", .priv = wk_cpu()->priv};
        assert_int_equal(wk__backend_register(&g_bare_desc), WK_OK);
    }
    return &g_bare_dev;
}

/* quantize / dequantize there go through the host and come back: same
 * bytes and values as on the CPU, results on the bare device. */
static void test_device_without_entries(void **state) {
    (void)state;
    wk_scope_begin();
    wk_device *dev = bare_dev();
    assert_null(dev->be->quantize);
    assert_null(dev->be->dequantize);
    wk_tensor *x = rand_f32(5, 96, true);
    wk_tensor *xd = TU_OK(wk_to_device(x, dev));
    for (int i = 0; i < NQ; i++) {
        wk_tensor *qc = TU_OK(wk_quantize(x, k_quantizable[i]));
        wk_tensor *qd = TU_OK(wk_quantize(TU_OK(wk_narrow(xd, 0, 0, 5)), k_quantizable[i]));
        assert_true(wk_tensor_device(qd) == dev);
        size_t nb = 5 * 3 * wk_dtype_info_of(k_quantizable[i])->block_bytes;
        unsigned char a[5 * 3 * 36], b[5 * 3 * 36];
        TU_STATUS_OK(wk_to_host(qc, a, nb));
        TU_STATUS_OK(wk_to_host(qd, b, nb));
        assert_memory_equal(a, b, nb);
        wk_tensor *fd = TU_OK(wk_dequantize(TU_OK(wk_narrow(qd, 1, 32, 64)), WK_BF16));
        assert_true(wk_tensor_device(fd) == dev);
        wk_tensor *fc = TU_OK(wk_dequantize(TU_OK(wk_narrow(qc, 1, 32, 64)), WK_BF16));
        assert_true(tu_max_abs_diff(TU_OK(wk_to_device(fd, wk_cpu())), fc) == 0.0);
        /* its row gathers and copies need no entry: they move bytes */
        double ids[2] = {4, 1};
        int64_t n = 2;
        wk_tensor *id = TU_OK(wk_to_device(TU_OK(tu_make(ids, &n, 1, WK_I64)), dev));
        wk_tensor *rows = TU_OK(wk_index_select(qd, id, 0));
        wk_tensor *rc = TU_OK(wk_index_select(qc, TU_OK(tu_make(ids, &n, 1, WK_I64)), 0));
        assert_same_f32(TU_OK(wk_to_device(TU_OK(wk_dequantize(rows, WK_F32)), wk_cpu())),
                        TU_OK(wk_dequantize(rc, WK_F32)));
    }
    wk_scope_end();
}

/* Empty block tensors: every path handles zero rows. */
static void test_empty_block_tensors(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[2] = {0, 64};
    wk_tensor *x = TU_OK(wk_zeros(s, 2, WK_F32, wk_cpu()));
    wk_tensor *q = TU_OK(wk_quantize(x, WK_Q4_0));
    tu_assert_shape(q, s, 2);
    tu_assert_shape(TU_OK(wk_dequantize(q, WK_F16)), s, 2);
    tu_assert_shape(TU_OK(wk_copy(q)), s, 2);
    tu_assert_shape(TU_OK(wk_narrow(q, 1, 32, 32)), (int64_t[]){0, 32}, 2);
    TU_STATUS_OK(wk_to_host(q, NULL, 0));
    int64_t one = 0;
    wk_tensor *noids = TU_OK(wk_zeros(&one, 1, WK_I64, wk_cpu()));
    wk_tensor *full = TU_OK(wk_quantize(rand_f32(3, 64, false), WK_Q4_0));
    tu_assert_shape(TU_OK(wk_index_select(full, noids, 0)), s, 2);
    wk_tensor *both[2] = {q, full};
    same_view(TU_OK(wk_cat(both, 2, 0)), TU_OK(wk_dequantize(full, WK_F32)));
    wk_scope_end();
}

/* ---- the whole op table with block inputs ---- */

/* Ops defined on block tensors (their results checked against the op on the
 * dequantized values); every other op must fail with DTYPE or SHAPE. */
static bool allowed(const char *name) {
    static const char *ok[] = {"cast", "cat", "stack", "index_select", "embedding"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strcmp(name, ok[i]) == 0) return true;
    return false;
}

/* One input per SHAPE[#DTYPE] token of a bk case: integer dtypes get small
 * valid ids of the token's shape, the rest the block tensor q (or f). */
static int make_inputs(const char *spec, wk_tensor *q, wk_tensor **in, int cap) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    char *bar = strchr(buf, '|');
    if (bar) *bar = 0;
    int n = 0;
    for (char *tok = strtok(buf, ","); tok && n < cap; tok = strtok(NULL, ",")) {
        char *hash = strchr(tok, '#');
        wk_dtype dt;
        if (hash) {
            char dn[16];
            snprintf(dn, sizeof dn, "%.*s", (int)strcspn(hash + 1, "~@"), hash + 1);
            if (wk_dtype_from_name(dn, &dt) && !wk_dtype_is_float(dt)) {
                int64_t shape[WK_MAX_RANK];
                int r = 0;
                for (char *p = tok; r < WK_MAX_RANK && *p && *p != '#';) {
                    shape[r++] = strtoll(p, &p, 10);
                    if (*p == 'x') p++;
                }
                int64_t num = 1;
                for (int i = 0; i < r; i++) num *= shape[i];
                double *v = calloc((size_t)num + 1, sizeof *v);
                assert_non_null(v);
                for (int64_t i = 0; i < num; i++) v[i] = (double)(i % 2);
                in[n++] = TU_OK(tu_make(v, shape, r, dt));
                free(v);
                continue;
            }
        }
        in[n++] = q;
    }
    return n;
}

/* Inputs and parameters of the kinds whose entries leave "bk" empty (as
 * test_backend_ops does; only the arity and the parameters matter here). */
static const char *default_cases(const char *kind) {
    if (strcmp(kind, "reduce") == 0) return "4x64|dims=1;keep=0 / 4x64|dims=0;keep=1";
    if (strcmp(kind, "binary") == 0 || strcmp(kind, "cmp") == 0) return "4x64,4x64";
    return "4x64";
}

static void test_op_table_walk(void **state) {
    (void)state;
    int worked = 0, refused = 0, cases = 0, malformed = 0;
    for (int k = 0; k < ot_count; k++) {
        const ot_entry *e = &ot_table[k];
        const char *bk = e->bk[0] ? e->bk : default_cases(e->kind);
        int ran_before = cases - malformed;
        for (const char *p = bk; *p;) {
            const char *sep = strstr(p, " / ");
            size_t len = sep ? (size_t)(sep - p) : strlen(p);
            char one[1024];
            snprintf(one, sizeof one, "%.*s", (int)len, p);
            p += len + (sep ? 3 : 0);
            wk_scope_begin();
            wk_tensor *q = TU_OK(wk_quantize(rand_f32(4, 64, false), WK_Q8_0));
            wk_tensor *f = TU_OK(wk_dequantize(q, WK_F32));
            wk_tensor *in[8], *fin[8];
            int nin = make_inputs(one, q, in, 8);
            for (int i = 0; i < nin; i++) fin[i] = in[i] == q ? f : in[i];
            const char *bar = strchr(one, '|');
            ot_ctx x = {.in = in, .nin = nin, .params = bar ? bar + 1 : "", .dt = WK_Q8_0, .dev = wk_cpu()};
            wk_clear_error();
            wk_tensor *r = ot_run(e, &x);
            cases++;
            if (x.bad) { /* a default case of the wrong arity for this op */
                malformed++;
                wk_clear_error();
                wk_scope_end();
                continue;
            }
            if (r) {
                if (!allowed(e->name)) fail_msg("%s [%s] accepted a q8_0 input", e->name, one);
                for (int i = 0; i < x.nmore; i++) wk_tensor_free(x.more[i]);
                ot_ctx fx = {.in = fin, .nin = nin, .params = x.params, .dt = WK_F32, .dev = wk_cpu()};
                wk_tensor *want = TU_OK(ot_run(e, &fx));
                for (int i = 0; i < fx.nmore; i++) wk_tensor_free(fx.more[i]);
                wk_tensor *got = wk_dtype_is_quantized(wk_tensor_dtype(r)) ? TU_OK(wk_dequantize(r, WK_F32)) : r;
                if (wk_dtype_is_quantized(wk_tensor_dtype(r))) assert_same_f32(got, want);
                else assert_true(tu_max_abs_diff(got, want) == 0.0);
                worked++;
            } else {
                wk_status st = wk_last_status();
                if (st != WK_ERR_DTYPE && st != WK_ERR_SHAPE)
                    fail_msg("%s [%s]: status %s (%s), expected DTYPE or SHAPE", e->name, one, wk_status_name(st),
                             wk_last_error());
                if (!wk_last_error()[0]) fail_msg("%s: empty error message", e->name);
                /* refusals for the dtype name it */
                if (st == WK_ERR_DTYPE && !strstr(wk_last_error(), "q8_0") && !allowed(e->name))
                    fail_msg("%s: the error does not name q8_0: %s", e->name, wk_last_error());
                refused++;
            }
            wk_clear_error();
            wk_scope_end();
        }
        if (cases - malformed == ran_before) fail_msg("%s: no case of the right arity ran", e->name);
    }
    print_message("op table with q8_0 inputs: %d cases, %d worked (checked against f32), %d refused, %d of the wrong "
                  "arity\n", cases, worked, refused, malformed);
    assert_true(worked >= 10);
    assert_true(refused > 100);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traits_table),        cmocka_unit_test(test_q8_1_matches_q8_0_and_sum),
        cmocka_unit_test(test_round_trip_quality),  cmocka_unit_test(test_special_rows),
        cmocka_unit_test(test_quantize_errors),     cmocka_unit_test(test_to_dtype_block_to_block),
        cmocka_unit_test(test_row_views),           cmocka_unit_test(test_bytes_moves_and_joins),
        cmocka_unit_test(test_embedding_lookup),    cmocka_unit_test(test_threads_agree),
        cmocka_unit_test(test_device_without_entries), cmocka_unit_test(test_empty_block_tensors),
        cmocka_unit_test(test_op_table_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
