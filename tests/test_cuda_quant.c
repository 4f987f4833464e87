/* The CUDA backend's block-quantized entries on a real GPU (every test
 * skips, saying why, without one): for all 14 GGML block types, wk_dequantize
 * to f32 / f16 / bf16 against quant/dequant_block.h on the host; wk_qmatmul
 * for decode (M = 1, 3, 8: the mat-vec kernel) and prefill (M = 9, 64:
 * dequantize + cuBLAS) against an f64 product of the host-dequantized
 * weights, with f32 / f16 / bf16 activations; f16 / bf16 weights through
 * the qmatmul entry; block rows gathered by ids (the embedding lookup) and
 * read back through a strided view as raw words; and an upload of a block
 * tensor larger than the whole pinned staging ring, read back byte for byte.
 *
 * Tolerances: the kernels dequantize with dequant_block.h's code, but nvcc
 * contracts d * q - m into an FMA, so the types with a min may differ from
 * the host by an ulp; the mat-vec product sums in f32 (n u |w . x| with n
 * the block size plus the lane tree); prefill rounds x and w to f16 (bf16
 * for a bf16 x) for the tensor cores. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "quant/dequant_block.h"

static const wk_dtype QT[] = {WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q8_0,   WK_Q8_1,   WK_Q2_K,
                              WK_Q3_K, WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_Q8_K, WK_IQ4_NL, WK_IQ4_XS};
#define NQT ((int)(sizeof QT / sizeof QT[0]))

/* the real GPU only: the CPU has no stand-in for these kernels' numerics */
static wk_device *gpu_or_skip(void) {
    wk_clear_error();
    wk_device *d = wk_cuda(0);
    if (!d) {
        printf("skipped (no CUDA device): %s\n", wk_last_error());
        fflush(stdout);
        wk_clear_error();
        skip();
    }
    return d;
}

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static double urand(void) { return (double)(rnd() % 20001) / 10000.0 - 1.0; }

static int qk_of(wk_dtype dt) { return (int)wk_dtype_info_of(dt)->block_elems; }
static int qb_of(wk_dtype dt) { return (int)wk_dtype_info_of(dt)->block_bytes; }

static void ref_dq(wk_dtype dt, const uint8_t *p, float *y) {
    switch (dt) {
    case WK_Q4_0: wk__dq_q4_0((const wk_block_q4_0 *)(const void *)p, y); return;
    case WK_Q4_1: wk__dq_q4_1((const wk_block_q4_1 *)(const void *)p, y); return;
    case WK_Q5_0: wk__dq_q5_0((const wk_block_q5_0 *)(const void *)p, y); return;
    case WK_Q5_1: wk__dq_q5_1((const wk_block_q5_1 *)(const void *)p, y); return;
    case WK_Q8_0: wk__dq_q8_0((const wk_block_q8_0 *)(const void *)p, y); return;
    case WK_Q8_1: wk__dq_q8_1((const wk_block_q8_1 *)(const void *)p, y); return;
    case WK_Q2_K: wk__dq_q2_K((const wk_block_q2_K *)(const void *)p, y); return;
    case WK_Q3_K: wk__dq_q3_K((const wk_block_q3_K *)(const void *)p, y); return;
    case WK_Q4_K: wk__dq_q4_K((const wk_block_q4_K *)(const void *)p, y); return;
    case WK_Q5_K: wk__dq_q5_K((const wk_block_q5_K *)(const void *)p, y); return;
    case WK_Q6_K: wk__dq_q6_K((const wk_block_q6_K *)(const void *)p, y); return;
    case WK_Q8_K: wk__dq_q8_K((const wk_block_q8_K *)(const void *)p, y); return;
    case WK_IQ4_NL: wk__dq_iq4_nl((const wk_block_iq4_nl *)(const void *)p, y); return;
    case WK_IQ4_XS: wk__dq_iq4_xs((const wk_block_iq4_xs *)(const void *)p, y); return;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT: break;
    }
    fail_msg("ref_dq: %s is not a block dtype", wk_dtype_name(dt));
}

/* random blocks with finite scales of a plausible size (scales are the
 * first f16 field(s) of every type but q2_K/q3_K/q6_K/q8_K, handled apart) */
static void rnd_blocks(wk_dtype dt, uint8_t *p, int64_t nblocks) {
    int qb = qb_of(dt);
    for (int64_t b = 0; b < nblocks; b++) {
        uint8_t *x = p + b * qb;
        for (int i = 0; i < qb; i++) x[i] = (uint8_t)rnd();
        uint16_t s1 = wk_f32_to_f16((float)(urand() * 0.05)), s2 = wk_f32_to_f16((float)(urand() * 0.02));
        switch (dt) {
        case WK_Q2_K: memcpy(x + 80, &s1, 2); memcpy(x + 82, &s2, 2); break;
        case WK_Q3_K: memcpy(x + 108, &s1, 2); break;
        case WK_Q6_K: memcpy(x + 208, &s1, 2); break;
        case WK_Q8_K: { float f = wk_f16_to_f32(s1) * 0.01f; memcpy(x, &f, 4); break; }
        case WK_Q4_1: case WK_Q5_1: case WK_Q8_1: case WK_Q4_K: case WK_Q5_K:
            memcpy(x, &s1, 2); memcpy(x + 2, &s2, 2); break;
        case WK_Q4_0: case WK_Q5_0: case WK_Q8_0: case WK_IQ4_NL: case WK_IQ4_XS: memcpy(x, &s1, 2); break;
        case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
        case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT: break;
        }
    }
}

/* host dequantization of n rows of k (contiguous blocks) */
static float *host_dq(wk_dtype dt, const uint8_t *w, int64_t n, int64_t k) {
    float *y = malloc(sizeof(float) * (size_t)(n * k));
    assert_non_null(y);
    int qk = qk_of(dt), qb = qb_of(dt);
    for (int64_t b = 0; b < n * k / qk; b++) ref_dq(dt, w + b * qb, y + b * qk);
    return y;
}

static double max_abs(const float *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

static void test_dequantize(void **state) {
    (void)state;
    wk_device *g = gpu_or_skip();
    const wk_dtype outs[] = {WK_F32, WK_F16, WK_BF16};
    for (int t = 0; t < NQT; t++) {
        wk_dtype dt = QT[t];
        int64_t n = 67, k = qk_of(dt) == 32 ? 24 * 32 : 3 * 256, nbytes = n * k / qk_of(dt) * qb_of(dt);
        uint8_t *w = malloc((size_t)nbytes);
        assert_non_null(w);
        rnd_blocks(dt, w, nbytes / qb_of(dt));
        float *ref = host_dq(dt, w, n, k);
        int64_t shape[2] = {n, k};
        wk_tensor *wt = TU_OK(wk_from_host(w, (size_t)nbytes, shape, 2, dt, g));
        double scale = max_abs(ref, n * k);
        for (int o = 0; o < 3; o++) {
            wk_tensor *y = TU_OK(wk_dequantize(wt, outs[o]));
            float *got = malloc(sizeof(float) * (size_t)(n * k));
            assert_non_null(got);
            TU_STATUS_OK(wk_to_host_f32(y, got, (size_t)(n * k)));
            double rel = outs[o] == WK_F32 ? 0x1p-23 : outs[o] == WK_F16 ? 0x1p-10 : 0x1p-7;
            int64_t bad = 0;
            for (int64_t i = 0; i < n * k; i++)
                if (fabs((double)got[i] - ref[i]) > rel * fabs(ref[i]) + 0x1p-22 * scale) bad++;
            if (bad) fail_msg("%s -> %s: %lld of %lld values off", wk_dtype_name(dt), wk_dtype_name(outs[o]),
                              (long long)bad, (long long)(n * k));
            free(got);
            wk_tensor_free(y);
        }
        wk_tensor_free(wt);
        free(ref);
        free(w);
    }
}

/* x (m x k) in xdt on g, from the f32 values xv (which are rounded to xdt in place) */
static wk_tensor *x_on(wk_device *g, float *xv, int64_t m, int64_t k, wk_dtype xdt) {
    int64_t shape[2] = {m, k};
    wk_tensor *xf = TU_OK(wk_from_host(xv, sizeof(float) * (size_t)(m * k), shape, 2, WK_F32, g));
    wk_tensor *x = TU_OK(wk_to_dtype(xf, xdt));
    wk_tensor_free(xf);
    if (xdt != WK_F32) TU_STATUS_OK(wk_to_host_f32(x, xv, (size_t)(m * k)));
    return x;
}

/* y (m x n) against the f64 product of x (m x k) and wd (n x k)^T */
static void check_product(const char *what, const wk_tensor *y, const float *xv, const float *wd, int64_t m, int64_t n,
                          int64_t k, double rel) {
    float *got = malloc(sizeof(float) * (size_t)(m * n));
    assert_non_null(got);
    TU_STATUS_OK(wk_to_host_f32(y, got, (size_t)(m * n)));
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int64_t l = 0; l < k; l++) {
                double p = (double)xv[i * k + l] * wd[j * k + l];
                s += p;
                mag += fabs(p);
            }
            if (!(fabs(got[i * n + j] - s) <= rel * mag + 1e-30)) bad++;
        }
    if (bad) fail_msg("%s: %lld of %lld outputs off", what, (long long)bad, (long long)(m * n));
    free(got);
}

static void test_qmatmul(void **state) {
    (void)state;
    wk_device *g = gpu_or_skip();
    const int64_t ms[] = {1, 3, 8, 9, 64};
    for (int t = 0; t < NQT; t++) {
        wk_dtype dt = QT[t];
        int qk = qk_of(dt);
        int64_t n = 45, k = qk == 32 ? 40 * 32 : 5 * 256, nbytes = n * k / qk * qb_of(dt);
        uint8_t *w = malloc((size_t)nbytes);
        assert_non_null(w);
        rnd_blocks(dt, w, nbytes / qb_of(dt));
        float *wd = host_dq(dt, w, n, k);
        int64_t shape[2] = {n, k};
        wk_tensor *wt = TU_OK(wk_from_host(w, (size_t)nbytes, shape, 2, dt, g));
        for (int mi = 0; mi < 5; mi++) {
            for (int xi = 0; xi < 3; xi++) {
                wk_dtype xdt = xi == 0 ? WK_F32 : xi == 1 ? WK_F16 : WK_BF16;
                if (xdt != WK_F32 && mi != 0 && mi != 4) continue;
                int64_t m = ms[mi];
                float *xv = malloc(sizeof(float) * (size_t)(m * k));
                assert_non_null(xv);
                for (int64_t i = 0; i < m * k; i++) xv[i] = (float)urand();
                wk_tensor *x = x_on(g, xv, m, k, xdt);
                wk_tensor *y = TU_OK(wk_qmatmul(x, wt));
                int64_t oshape[2] = {m, n};
                tu_assert_shape(y, oshape, 2);
                assert_int_equal(wk_tensor_dtype(y), xdt);
                /* decode: f32 sums; prefill: x and w rounded to f16 / bf16 */
                double rel = m <= 8 ? (qk + 16) * 0x1p-23 : xdt == WK_BF16 ? 0x1p-6 : 0x1p-9;
                if (xdt == WK_F16) rel += 0x1p-10;
                if (xdt == WK_BF16) rel += 0x1p-7;
                char what[96];
                snprintf(what, sizeof what, "%s x %s m=%lld", wk_dtype_name(dt), wk_dtype_name(xdt), (long long)m);
                check_product(what, y, xv, wd, m, n, k, rel);
                wk_tensor_free(y);
                wk_tensor_free(x);
                free(xv);
            }
        }
        wk_tensor_free(wt);
        free(wd);
        free(w);
    }
}

/* raw device buffers through the backend table (entries the tensor layer
 * may not reach yet for block dtypes) */
static void *dev_upload(wk_device *g, const void *src, size_t n) {
    void *b = NULL;
    TU_STATUS_OK(g->be->alloc(g, n, &b));
    TU_STATUS_OK(g->be->from_host(g, b, 0, src, n));
    return b;
}

static void test_half_weights(void **state) {
    (void)state;
    wk_device *g = gpu_or_skip();
    for (int h = 0; h < 2; h++) {
        wk_dtype wdt = h ? WK_BF16 : WK_F16;
        int64_t n = 33, k = 100, m = 12, ldw = 128; /* rows of a wider matrix */
        uint16_t *w = calloc((size_t)(n * ldw), 2);
        float *wd = malloc(sizeof(float) * (size_t)(n * k)), *xv = malloc(sizeof(float) * (size_t)(m * k));
        assert_true(w && wd && xv);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < k; j++) {
                float v = (float)urand();
                w[i * ldw + j] = h ? wk_f32_to_bf16(v) : wk_f32_to_f16(v);
                wd[i * k + j] = h ? wk_bf16_to_f32(w[i * ldw + j]) : wk_f16_to_f32(w[i * ldw + j]);
            }
        for (int64_t i = 0; i < m * k; i++) xv[i] = (float)urand();
        void *wb = dev_upload(g, w, (size_t)(n * ldw) * 2);
        wk_layout lw;
        int64_t ws[2] = {n, k};
        wk__layout_contiguous(&lw, ws, 2, 0);
        lw.stride[0] = ldw;
        wk_tensor *x = x_on(g, xv, m, k, WK_F32);
        int64_t os[2] = {m, n};
        wk_tensor *y = TU_OK(wk_empty(os, 2, WK_F32, g));
        TU_STATUS_OK(g->be->qmatmul(g, x->storage->buf, &x->layout, WK_F32, wb, &lw, wdt, y->storage->buf));
        /* x is rounded to the weights' dtype: 2^-9 of each |w x| for bf16, 2^-11 for f16 */
        check_product(h ? "bf16 weights" : "f16 weights", y, xv, wd, m, n, k, h ? 0x1p-7 : 0x1p-9);
        g->be->free(g, wb, (size_t)(n * ldw) * 2);
        wk_tensor_free(x);
        wk_tensor_free(y);
        free(w);
        free(wd);
        free(xv);
    }
}

static void test_block_rows(void **state) {
    (void)state;
    wk_device *g = gpu_or_skip();
    for (int t = 0; t < NQT; t++) {
        wk_dtype dt = QT[t];
        int qk = qk_of(dt), qb = qb_of(dt);
        int64_t n = 21, nb = 4, k = nb * qk, rowb = nb * qb, nbytes = n * rowb;
        uint8_t *w = malloc((size_t)nbytes);
        assert_non_null(w);
        rnd_blocks(dt, w, n * nb);
        void *wb = dev_upload(g, w, (size_t)nbytes);
        wk_layout lw;
        int64_t ws[2] = {n, k};
        wk__layout_contiguous(&lw, ws, 2, 0);
        /* embedding lookup: rows by ids */
        const int64_t ids[6] = {20, 0, 7, 7, 13, 1};
        void *ib = dev_upload(g, ids, sizeof ids);
        wk_layout li;
        int64_t ns = 6;
        wk__layout_contiguous(&li, &ns, 1, 0);
        void *gb = NULL;
        TU_STATUS_OK(g->be->alloc(g, (size_t)(6 * rowb), &gb));
        TU_STATUS_OK(g->be->index_select(g, wb, &lw, ib, &li, WK_I64, 0, gb, dt));
        wk_layout lg;
        int64_t gs[2] = {6, k};
        wk__layout_contiguous(&lg, gs, 2, 0);
        uint8_t *back = malloc((size_t)(6 * rowb));
        assert_non_null(back);
        TU_STATUS_OK(g->be->to_host(g, gb, &lg, dt, back));
        for (int i = 0; i < 6; i++)
            if (memcmp(back + i * rowb, w + ids[i] * rowb, (size_t)rowb))
                fail_msg("%s: gathered row %d is not row %lld", wk_dtype_name(dt), i, (long long)ids[i]);
        /* the gathered rows dequantize like the originals */
        float *y = malloc(sizeof(float) * (size_t)(6 * k));
        assert_non_null(y);
        void *yb = NULL;
        TU_STATUS_OK(g->be->alloc(g, sizeof(float) * (size_t)(6 * k), &yb));
        TU_STATUS_OK(g->be->dequantize(g, gb, &lg, dt, yb, WK_F32));
        wk_layout ly;
        wk__layout_contiguous(&ly, gs, 2, 0);
        TU_STATUS_OK(g->be->to_host(g, yb, &ly, WK_F32, y));
        float *ref = host_dq(dt, back, 6, k);
        double scale = max_abs(ref, 6 * k);
        for (int64_t i = 0; i < 6 * k; i++)
            if (fabs((double)y[i] - ref[i]) > 0x1p-23 * fabs(ref[i]) + 0x1p-22 * scale)
                fail_msg("%s: embedding value %lld off", wk_dtype_name(dt), (long long)i);
        /* a strided view (every other row from row 1) read back: gathered as words */
        wk_layout lv = lw;
        lv.shape[0] = n / 2;
        lv.stride[0] = 2 * k;
        lv.offset = k;
        uint8_t *sv = malloc((size_t)(n / 2 * rowb));
        assert_non_null(sv);
        TU_STATUS_OK(g->be->to_host(g, wb, &lv, dt, sv));
        for (int64_t i = 0; i < n / 2; i++)
            if (memcmp(sv + i * rowb, w + (2 * i + 1) * rowb, (size_t)rowb))
                fail_msg("%s: strided readback row %lld", wk_dtype_name(dt), (long long)i);
        /* selecting along the last dim splits blocks: refused */
        assert_int_equal(g->be->index_select(g, wb, &lw, ib, &li, WK_I64, 1, gb, dt), WK_ERR_DTYPE);
        wk_clear_error();
        g->be->free(g, wb, (size_t)nbytes);
        g->be->free(g, ib, sizeof ids);
        g->be->free(g, gb, (size_t)(6 * rowb));
        g->be->free(g, yb, sizeof(float) * (size_t)(6 * k));
        free(w);
        free(back);
        free(y);
        free(ref);
        free(sv);
    }
}

/* An upload bigger than the whole staging ring (4 x 4 MiB) goes through it
 * in pieces, waiting for chunks a ring ago: the bytes must all arrive. */
static void test_big_upload(void **state) {
    (void)state;
    wk_device *g = gpu_or_skip();
    int64_t n = 1200, k = 32 * 1024; /* q8_0: 1200 rows x 34 KiB = 40 MiB */
    size_t nbytes = (size_t)(n * k / 32 * 34);
    uint8_t *w = malloc(nbytes), *back = malloc(nbytes);
    assert_true(w && back);
    for (size_t i = 0; i < nbytes; i++) w[i] = (uint8_t)(i * 2654435761u >> 13);
    int64_t shape[2] = {n, k};
    wk_tensor *t = TU_OK(wk_from_host(w, nbytes, shape, 2, WK_Q8_0, g));
    TU_STATUS_OK(g->be->to_host(g, t->storage->buf, &t->layout, WK_Q8_0, back));
    assert_memory_equal(w, back, nbytes);
    /* the same from a CPU tensor with wk_to_device, once the tensor layer moves block tensors */
    wk_tensor *c = wk_from_host(w, nbytes, shape, 2, WK_Q8_0, wk_cpu());
    wk_tensor *d = c ? wk_to_device(c, g) : NULL;
    if (d) {
        memset(back, 0, nbytes);
        TU_STATUS_OK(g->be->to_host(g, d->storage->buf, &d->layout, WK_Q8_0, back));
        assert_memory_equal(w, back, nbytes);
    } else {
        printf("wk_to_device of a block tensor not taken by the tensor layer here: %s\n", wk_last_error());
        wk_clear_error();
    }
    wk_tensor_free(d);
    wk_tensor_free(c);
    wk_tensor_free(t);
    free(w);
    free(back);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequantize), cmocka_unit_test(test_qmatmul),  cmocka_unit_test(test_half_weights),
        cmocka_unit_test(test_block_rows), cmocka_unit_test(test_big_upload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
