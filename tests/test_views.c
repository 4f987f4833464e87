/* Views: reshape (view or copy), narrow, transpose, t, permute, broadcasts,
 * squeeze/unsqueeze, flatten, select, chunk, split, contiguous, strides and
 * offsets, views of views, rank-0, empty and max-rank tensors, and the
 * errors of each. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* 0, 1, ..., n-1 as f32 in the given shape. */
static wk_tensor *iota(const int64_t *shape, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    wk_tensor *a = TU_OK(wk_arange(0, (double)n, 1, WK_F32, wk_cpu()));
    wk_tensor *r = TU_OK(wk_reshape(a, shape, rank));
    wk_tensor_free(a);
    return r;
}

static void assert_strides(const wk_tensor *t, const int64_t *st, int rank) {
    assert_int_equal(wk_rank(t), rank);
    for (int i = 0; i < rank; i++)
        if (wk_strides(t)[i] != st[i])
            fail_msg("stride %d: got %lld expected %lld", i, (long long)wk_strides(t)[i], (long long)st[i]);
}

static double get(const wk_tensor *t, const int64_t *idx) {
    double v = -12345;
    TU_STATUS_OK(wk_get(t, idx, &v));
    return v;
}

/* ------------------------------------------------------------ reshape */

static void test_reshape_view(void **state) {
    (void)state;
    int64_t s24 = 24, s234[3] = {2, 3, 4};
    wk_tensor *a = TU_OK(wk_arange(0, 24, 1, WK_F32, wk_cpu()));
    wk_tensor *b = TU_OK(wk_reshape(a, s234, 3));
    assert_true(wk_shares_storage(a, b));
    tu_assert_shape(b, s234, 3);
    const int64_t st[3] = {12, 4, 1};
    assert_strides(b, st, 3);
    assert_true(wk_is_contiguous(b));
    int64_t idx[3] = {1, 2, 3};
    assert_true(get(b, idx) == 23);

    /* -1 inference */
    int64_t s4m[2] = {4, -1}, s46[2] = {4, 6};
    wk_tensor *c = TU_OK(wk_reshape(b, s4m, 2));
    tu_assert_shape(c, s46, 2);
    assert_true(wk_shares_storage(a, c));
    int64_t sm1[3] = {-1, 2, 3}, s423[3] = {4, 2, 3};
    wk_tensor *d = TU_OK(wk_reshape(c, sm1, 3));
    tu_assert_shape(d, s423, 3);
    int64_t m1 = -1;
    wk_tensor *e = TU_OK(wk_reshape(d, &m1, 1));
    tu_assert_shape(e, &s24, 1);
    assert_true(wk_shares_storage(a, e));

    /* a row-narrowed view is still reshapeable without a copy */
    wk_tensor *rows = TU_OK(wk_narrow(c, 0, 1, 2)); /* (2, 6), offset 6 */
    int64_t s12 = 12;
    wk_tensor *rf = TU_OK(wk_reshape(rows, &s12, 1));
    assert_true(wk_shares_storage(rf, a));
    assert_int_equal(wk_offset(rf), 6);
    double ex[12];
    for (int i = 0; i < 12; i++) ex[i] = 6 + i;
    tu_assert_close(rf, ex, 12, 0, 0);
    /* split a dim of a column-narrowed view: still a view */
    wk_tensor *cols = TU_OK(wk_narrow(c, 1, 2, 4)); /* (4, 4), strides (6, 1) */
    int64_t s422[3] = {4, 2, 2};
    wk_tensor *cs = TU_OK(wk_reshape(cols, s422, 3));
    assert_true(wk_shares_storage(cs, a));
    const int64_t cst[3] = {6, 2, 1};
    assert_strides(cs, cst, 3);
    int64_t i3[3] = {3, 1, 0};
    assert_true(get(cs, i3) == 3 * 6 + 2 + 2);
    /* merging its dims needs a copy */
    int64_t s16 = 16;
    wk_tensor *cf16 = TU_OK(wk_reshape(cols, &s16, 1));
    assert_false(wk_shares_storage(cf16, a));
    double ex16[16];
    for (int i = 0; i < 16; i++) ex16[i] = (i / 4) * 6 + 2 + (i % 4);
    tu_assert_close(cf16, ex16, 16, 0, 0);
    /* size-1 dims can be added anywhere without a copy */
    int64_t s1461[4] = {1, 4, 6, 1};
    wk_tensor *g = TU_OK(wk_reshape(c, s1461, 4));
    assert_true(wk_shares_storage(g, a));
    assert_true(wk_is_contiguous(g));

    wk_tensor_free(g);
    wk_tensor_free(cf16);
    wk_tensor_free(cs);
    wk_tensor_free(cols);
    wk_tensor_free(rf);
    wk_tensor_free(rows);
    wk_tensor_free(e);
    wk_tensor_free(d);
    wk_tensor_free(c);
    wk_tensor_free(b);
    wk_tensor_free(a);
}

static void test_reshape_copy_of_transposed(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3};
    wk_tensor *a = iota(s23, 2);          /* [[0,1,2],[3,4,5]] */
    wk_tensor *t = TU_OK(wk_t(a));        /* [[0,3],[1,4],[2,5]] */
    assert_false(wk_is_contiguous(t));
    int64_t s6 = 6;
    wk_tensor *f = TU_OK(wk_reshape(t, &s6, 1));
    assert_false(wk_shares_storage(f, a));
    assert_true(wk_is_contiguous(f));
    const double ex[6] = {0, 3, 1, 4, 2, 5};
    tu_assert_close(f, ex, 6, 0, 0);
    int64_t s32[2] = {2, 3};
    wk_tensor *g = TU_OK(wk_reshape(t, s32, 2));
    tu_assert_close(g, ex, 6, 0, 0);
    /* the copy is independent of the original */
    TU_STATUS_OK(wk_fill_(a, 9));
    tu_assert_close(f, ex, 6, 0, 0);
    wk_tensor_free(g);
    wk_tensor_free(f);
    wk_tensor_free(t);
    wk_tensor_free(a);
}

static void test_reshape_errors(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3};
    wk_tensor *a = iota(s23, 2);
    wk_clear_error();
    int64_t two_holes[2] = {-1, -1}, neg[2] = {-2, -3}, bad[2] = {4, 2}, bad_hole[2] = {4, -1}, zero_hole[2] = {0, -1};
    TU_FAILS(wk_reshape(a, two_holes, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, neg, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, bad, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, bad_hole, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, zero_hole, 2), WK_ERR_SHAPE);
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
    TU_FAILS(wk_reshape(a, nine, 9), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, nine, -1), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, NULL, 2), WK_ERR_ARG);
    TU_FAILS(wk_reshape(a, NULL, 0), WK_ERR_SHAPE); /* 6 elements into a scalar */
    TU_FAILS(wk_reshape(NULL, s23, 2), WK_ERR_ARG);
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    TU_FAILS(wk_reshape(a, huge, 2), WK_ERR_SHAPE);
    wk_tensor_free(a);
}

/* ------------------------------------------------------------ narrow, transpose, permute */

static void test_narrow(void **state) {
    (void)state;
    int64_t s46[2] = {4, 6};
    wk_tensor *a = iota(s46, 2);
    wk_tensor *n = TU_OK(wk_narrow(a, 1, 2, 3));
    int64_t s43[2] = {4, 3};
    tu_assert_shape(n, s43, 2);
    assert_int_equal(wk_offset(n), 2);
    const int64_t st[2] = {6, 1};
    assert_strides(n, st, 2);
    assert_true(wk_shares_storage(a, n));
    assert_false(wk_is_contiguous(n));
    double ex[12];
    for (int i = 0; i < 12; i++) ex[i] = (i / 3) * 6 + 2 + i % 3;
    tu_assert_close(n, ex, 12, 0, 0);
    /* negative dim, zero length at the end, full range */
    wk_tensor *z = TU_OK(wk_narrow(a, -1, 6, 0));
    assert_int_equal(wk_numel(z), 0);
    wk_tensor *full = TU_OK(wk_narrow(a, 0, 0, 4));
    assert_true(wk_is_contiguous(full));
    wk_tensor *row = TU_OK(wk_narrow(a, -2, 3, 1));
    assert_int_equal(wk_offset(row), 18);
    assert_true(wk_is_contiguous(row));
    wk_clear_error();
    TU_FAILS(wk_narrow(a, 1, 4, 3), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 1, -1, 2), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 1, 0, -1), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 1, 7, 0), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 1, INT64_MAX, INT64_MAX), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 1, 1, INT64_MAX), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 2, 0, 1), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, -3, 0, 1), WK_ERR_INDEX);
    wk_tensor_free(row);
    wk_tensor_free(full);
    wk_tensor_free(z);
    wk_tensor_free(n);
    wk_tensor_free(a);
}

static void test_transpose_t(void **state) {
    (void)state;
    int64_t s234[3] = {2, 3, 4};
    wk_tensor *a = iota(s234, 3);
    wk_tensor *tr = TU_OK(wk_transpose(a, 0, -1));
    int64_t s432[3] = {4, 3, 2};
    tu_assert_shape(tr, s432, 3);
    const int64_t st[3] = {1, 4, 12};
    assert_strides(tr, st, 3);
    assert_true(wk_shares_storage(a, tr));
    int64_t idx[3] = {3, 1, 1};
    assert_true(get(tr, idx) == 1 * 12 + 1 * 4 + 3);
    wk_tensor *same = TU_OK(wk_transpose(a, 1, 1));
    tu_assert_shape(same, s234, 3);
    assert_true(wk_is_contiguous(same));
    wk_tensor *t = TU_OK(wk_t(a));
    int64_t s243[3] = {2, 4, 3};
    tu_assert_shape(t, s243, 3);
    const int64_t tst[3] = {12, 1, 4};
    assert_strides(t, tst, 3);
    wk_tensor *tt = TU_OK(wk_t(t));
    assert_true(wk_is_contiguous(tt));
    assert_true(tu_max_abs_diff(tt, a) == 0);
    wk_clear_error();
    TU_FAILS(wk_transpose(a, 0, 3), WK_ERR_INDEX);
    TU_FAILS(wk_transpose(a, -4, 0), WK_ERR_INDEX);
    int64_t s3 = 3;
    wk_tensor *v = iota(&s3, 1);
    TU_FAILS(wk_t(v), WK_ERR_SHAPE);
    TU_FAILS(wk_t(NULL), WK_ERR_ARG);
    wk_tensor_free(v);
    wk_tensor_free(tt);
    wk_tensor_free(t);
    wk_tensor_free(same);
    wk_tensor_free(tr);
    wk_tensor_free(a);
}

static void test_permute(void **state) {
    (void)state;
    int64_t s234[3] = {2, 3, 4};
    wk_tensor *a = iota(s234, 3);
    const int p[3] = {2, 0, 1};
    wk_tensor *b = TU_OK(wk_permute(a, p, 3));
    int64_t s423[3] = {4, 2, 3};
    tu_assert_shape(b, s423, 3);
    const int64_t st[3] = {1, 12, 4};
    assert_strides(b, st, 3);
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 2; j++)
            for (int64_t k = 0; k < 3; k++) {
                int64_t idx[3] = {i, j, k};
                assert_true(get(b, idx) == (double)(j * 12 + k * 4 + i));
            }
    const int pn[3] = {-1, -3, -2};
    wk_tensor *c = TU_OK(wk_permute(a, pn, 3));
    assert_true(tu_max_abs_diff(b, c) == 0);
    wk_tensor *cc = TU_OK(wk_contiguous(c));
    double ex[24];
    for (int i = 0; i < 24; i++) ex[i] = (double)(((i / 3) % 2) * 12 + (i % 3) * 4 + i / 6);
    tu_assert_close(cc, ex, 24, 0, 0);
    wk_clear_error();
    const int rep[3] = {0, 0, 1}, oob[3] = {0, 1, 3};
    TU_FAILS(wk_permute(a, rep, 3), WK_ERR_ARG);
    TU_FAILS(wk_permute(a, oob, 3), WK_ERR_INDEX);
    TU_FAILS(wk_permute(a, p, 2), WK_ERR_SHAPE);
    TU_FAILS(wk_permute(a, NULL, 3), WK_ERR_ARG);
    wk_tensor_free(cc);
    wk_tensor_free(c);
    wk_tensor_free(b);
    wk_tensor_free(a);
}

/* ------------------------------------------------------------ broadcasting */

static void test_broadcast(void **state) {
    (void)state;
    int64_t s31[2] = {3, 1};
    wk_tensor *a = iota(s31, 2);
    int64_t s234[3] = {2, 3, 4};
    wk_tensor *b = TU_OK(wk_broadcast_as(a, s234, 3));
    tu_assert_shape(b, s234, 3);
    const int64_t st[3] = {0, 1, 0};
    assert_strides(b, st, 3);
    assert_true(wk_shares_storage(a, b));
    assert_false(wk_is_contiguous(b));
    double ex[24];
    for (int i = 0; i < 24; i++) ex[i] = (i / 4) % 3;
    tu_assert_close(b, ex, 24, 0, 0);
    /* broadcast to the same shape is a plain view */
    wk_tensor *same = TU_OK(wk_broadcast_as(a, s31, 2));
    assert_true(wk_is_contiguous(same));
    /* broadcast_left */
    int64_t s3 = 3;
    wk_tensor *v = iota(&s3, 1);
    int64_t left[2] = {2, 5};
    wk_tensor *l = TU_OK(wk_broadcast_left(v, left, 2));
    int64_t s253[3] = {2, 5, 3};
    tu_assert_shape(l, s253, 3);
    const int64_t lst[3] = {0, 0, 1};
    assert_strides(l, lst, 3);
    int64_t idx[3] = {1, 4, 2};
    assert_true(get(l, idx) == 2);
    wk_tensor *l0 = TU_OK(wk_broadcast_left(v, NULL, 0));
    tu_assert_shape(l0, &s3, 1);
    wk_clear_error();
    int64_t s34[2] = {3, 4}, s4 = 4, s1x2x3[3] = {1, 2, 3};
    TU_FAILS(wk_broadcast_as(v, &s4, 1), WK_ERR_SHAPE);       /* 3 -> 4 */
    TU_FAILS(wk_broadcast_as(b, s34, 2), WK_ERR_SHAPE);       /* lower rank */
    TU_FAILS(wk_broadcast_as(a, s1x2x3, 3), WK_ERR_SHAPE);    /* 3 vs 2 */
    int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 3, 1};
    TU_FAILS(wk_broadcast_as(a, s9, 9), WK_ERR_SHAPE);
    int64_t left8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    TU_FAILS(wk_broadcast_left(v, left8, 8), WK_ERR_SHAPE);
    TU_FAILS(wk_broadcast_left(v, left8, -1), WK_ERR_SHAPE);
    int64_t negs[2] = {-1, 3};
    TU_FAILS(wk_broadcast_as(v, negs, 2), WK_ERR_SHAPE);
    wk_tensor_free(l0);
    wk_tensor_free(l);
    wk_tensor_free(v);
    wk_tensor_free(same);
    wk_tensor_free(b);
    wk_tensor_free(a);
}

/* ------------------------------------------------------------ squeeze, unsqueeze, flatten */

static void test_squeeze_unsqueeze(void **state) {
    (void)state;
    int64_t s213[3] = {2, 1, 3};
    wk_tensor *a = iota(s213, 3);
    int64_t s23[2] = {2, 3};
    wk_tensor *q = TU_OK(wk_squeeze(a, 1));
    tu_assert_shape(q, s23, 2);
    assert_true(wk_shares_storage(a, q));
    wk_tensor *qn = TU_OK(wk_squeeze(a, -2));
    tu_assert_shape(qn, s23, 2);
    wk_tensor *noop = TU_OK(wk_squeeze(a, 0)); /* size 2: unchanged */
    tu_assert_shape(noop, s213, 3);
    assert_true(wk_shares_storage(a, noop));
    wk_tensor *noop2 = TU_OK(wk_squeeze(a, -1));
    tu_assert_shape(noop2, s213, 3);
    wk_clear_error();
    TU_FAILS(wk_squeeze(a, 3), WK_ERR_INDEX);
    TU_FAILS(wk_squeeze(a, -4), WK_ERR_INDEX);

    wk_tensor *b = iota(s23, 2);
    int64_t s123[3] = {1, 2, 3}, s213b[3] = {2, 1, 3}, s231[3] = {2, 3, 1};
    wk_tensor *u0 = TU_OK(wk_unsqueeze(b, 0));
    tu_assert_shape(u0, s123, 3);
    wk_tensor *u1 = TU_OK(wk_unsqueeze(b, 1));
    tu_assert_shape(u1, s213b, 3);
    wk_tensor *u2 = TU_OK(wk_unsqueeze(b, 2)); /* at rank */
    tu_assert_shape(u2, s231, 3);
    wk_tensor *um1 = TU_OK(wk_unsqueeze(b, -1));
    tu_assert_shape(um1, s231, 3);
    wk_tensor *um3 = TU_OK(wk_unsqueeze(b, -3));
    tu_assert_shape(um3, s123, 3);
    wk_tensor *um2 = TU_OK(wk_unsqueeze(b, -2));
    tu_assert_shape(um2, s213b, 3);
    wk_tensor *all[] = {u0, u1, u2, um1, um2, um3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_true(wk_is_contiguous(all[i]));
        assert_true(wk_shares_storage(all[i], b));
        assert_true(tu_max_abs_diff(all[i], b) == 0);
    }
    /* unsqueeze of a transposed view keeps the values */
    wk_tensor *bt = TU_OK(wk_t(b));
    wk_tensor *btu = TU_OK(wk_unsqueeze(bt, 1));
    int64_t s312[3] = {3, 1, 2};
    tu_assert_shape(btu, s312, 3);
    int64_t idx[3] = {2, 0, 1};
    assert_true(get(btu, idx) == 5);
    wk_tensor *btus = TU_OK(wk_squeeze(btu, 1));
    assert_true(tu_max_abs_diff(btus, bt) == 0);
    wk_clear_error();
    TU_FAILS(wk_unsqueeze(b, 3), WK_ERR_INDEX);
    TU_FAILS(wk_unsqueeze(b, -4), WK_ERR_INDEX);
    wk_tensor *all2[] = {btus, btu, bt, u0, u1, u2, um1, um2, um3, b, noop2, noop, qn, q, a};
    for (size_t i = 0; i < sizeof all2 / sizeof all2[0]; i++) wk_tensor_free(all2[i]);
}

static void test_flatten(void **state) {
    (void)state;
    int64_t s2345[4] = {2, 3, 4, 5};
    wk_tensor *a = iota(s2345, 4);
    wk_tensor *f = TU_OK(wk_flatten(a, 1, 2));
    int64_t s2125[3] = {2, 12, 5};
    tu_assert_shape(f, s2125, 3);
    assert_true(wk_shares_storage(a, f));
    wk_tensor *g = TU_OK(wk_flatten(a, 0, -1));
    int64_t s120 = 120;
    tu_assert_shape(g, &s120, 1);
    wk_tensor *h = TU_OK(wk_flatten(a, -2, -1));
    int64_t s2320[3] = {2, 3, 20};
    tu_assert_shape(h, s2320, 3);
    wk_tensor *one = TU_OK(wk_flatten(a, 2, 2));
    tu_assert_shape(one, s2345, 4);
    wk_tensor *all = TU_OK(wk_flatten_all(a));
    tu_assert_shape(all, &s120, 1);
    assert_true(wk_shares_storage(a, all));
    /* not mergeable: a copy with the right values */
    wk_tensor *tr = TU_OK(wk_transpose(a, 1, 2)); /* (2,4,3,5) */
    wk_tensor *tf = TU_OK(wk_flatten(tr, 1, 2));  /* (2,12,5) */
    tu_assert_shape(tf, s2125, 3);
    assert_false(wk_shares_storage(tf, a));
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 12; j++)
            for (int64_t k = 0; k < 5; k++) {
                int64_t idx[3] = {i, j, k};
                int64_t orig = i * 60 + (j % 3) * 20 + (j / 3) * 5 + k;
                assert_true(get(tf, idx) == (double)orig);
            }
    /* mergeable part of a non-contiguous view: dims 2..3 of the transpose are (3,5) strides (20,1): no */
    wk_tensor *tall = TU_OK(wk_flatten_all(tr));
    assert_false(wk_shares_storage(tall, a));
    assert_true(wk_is_contiguous(tall));
    wk_clear_error();
    TU_FAILS(wk_flatten(a, 2, 1), WK_ERR_ARG);
    TU_FAILS(wk_flatten(a, 0, 4), WK_ERR_INDEX);
    TU_FAILS(wk_flatten(a, -5, 0), WK_ERR_INDEX);
    TU_FAILS(wk_flatten_all(NULL), WK_ERR_ARG);
    wk_tensor *xs[] = {tall, tf, tr, all, one, h, g, f, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

/* ------------------------------------------------------------ select, chunk, split */

static void test_select(void **state) {
    (void)state;
    int64_t s234[3] = {2, 3, 4};
    wk_tensor *a = iota(s234, 3);
    wk_tensor *s = TU_OK(wk_select(a, 1, -1)); /* a[:, 2, :] */
    int64_t s24[2] = {2, 4};
    tu_assert_shape(s, s24, 2);
    assert_int_equal(wk_offset(s), 8);
    const int64_t st[2] = {12, 1};
    assert_strides(s, st, 2);
    const double ex[8] = {8, 9, 10, 11, 20, 21, 22, 23};
    tu_assert_close(s, ex, 8, 0, 0);
    wk_tensor *s0 = TU_OK(wk_select(a, 0, 1));
    assert_int_equal(wk_offset(s0), 12);
    assert_true(wk_is_contiguous(s0));
    wk_tensor *s00 = TU_OK(wk_select(s0, -1, 3)); /* (3,) */
    const double ex2[3] = {15, 19, 23};
    tu_assert_close(s00, ex2, 3, 0, 0);
    wk_tensor *sc = TU_OK(wk_select(s00, 0, 2)); /* rank 0 */
    assert_int_equal(wk_rank(sc), 0);
    double v;
    TU_STATUS_OK(wk_item(sc, &v));
    assert_true(v == 23);
    wk_clear_error();
    TU_FAILS(wk_select(a, 1, 3), WK_ERR_INDEX);
    TU_FAILS(wk_select(a, 1, -4), WK_ERR_INDEX);
    TU_FAILS(wk_select(a, 3, 0), WK_ERR_INDEX);
    TU_FAILS(wk_select(a, 0, INT64_MIN), WK_ERR_INDEX);
    TU_FAILS(wk_select(a, 0, INT64_MAX), WK_ERR_INDEX);
    TU_FAILS(wk_select(sc, 0, 0), WK_ERR_INDEX);
    wk_tensor_free(sc);
    wk_tensor_free(s00);
    wk_tensor_free(s0);
    wk_tensor_free(s);
    wk_tensor_free(a);
}

static void check_chunks(int64_t size, int n, const int64_t *want, int nwant) {
    int64_t shape[2] = {3, size};
    wk_tensor *a = TU_OK(wk_zeros(shape, 2, WK_F32, wk_cpu()));
    wk_tensor *out[64];
    int count = -1;
    TU_STATUS_OK(wk_chunk(a, n, -1, out, &count));
    if (count != nwant) fail_msg("chunk(%lld, %d): %d chunks, expected %d", (long long)size, n, count, nwant);
    int64_t off = 0;
    for (int i = 0; i < count; i++) {
        assert_int_equal(wk_dim(out[i], 0), 3);
        if (wk_dim(out[i], 1) != want[i])
            fail_msg("chunk(%lld, %d) piece %d: size %lld, expected %lld", (long long)size, n, i,
                     (long long)wk_dim(out[i], 1), (long long)want[i]);
        assert_true(wk_shares_storage(out[i], a));
        if (want[i]) assert_int_equal(wk_offset(out[i]), off);
        off += want[i];
        wk_tensor_free(out[i]);
    }
    wk_tensor_free(a);
}

static void test_chunk(void **state) {
    (void)state;
    const int64_t c10_3[] = {4, 4, 2}, c10_4[] = {3, 3, 3, 1}, c6_3[] = {2, 2, 2}, c2_5[] = {1, 1},
                  c9_4[] = {3, 3, 3}, c5_1[] = {5}, c7_7[] = {1, 1, 1, 1, 1, 1, 1}, c0_3[] = {0};
    check_chunks(10, 3, c10_3, 3);
    check_chunks(10, 4, c10_4, 4);
    check_chunks(6, 3, c6_3, 3);
    check_chunks(2, 5, c2_5, 2);  /* fewer chunks when size < n */
    check_chunks(9, 4, c9_4, 3);  /* ceil(9/4) = 3: three chunks */
    check_chunks(5, 1, c5_1, 1);
    check_chunks(7, 7, c7_7, 7);
    check_chunks(0, 3, c0_3, 1);
    /* values */
    int64_t s10 = 10;
    wk_tensor *a = iota(&s10, 1);
    wk_tensor *out[4];
    int count = 0;
    TU_STATUS_OK(wk_chunk(a, 3, 0, out, &count));
    assert_int_equal(count, 3);
    const double e2[2] = {8, 9};
    tu_assert_close(out[2], e2, 2, 0, 0);
    for (int i = 0; i < count; i++) wk_tensor_free(out[i]);
    wk_clear_error();
    assert_int_equal(wk_chunk(a, 0, 0, out, &count), WK_ERR_ARG);
    assert_true(strlen(wk_last_error()) > 0);
    assert_int_equal(wk_chunk(a, -1, 0, out, &count), WK_ERR_ARG);
    assert_int_equal(wk_chunk(a, 2, 1, out, &count), WK_ERR_INDEX);
    assert_int_equal(wk_chunk(a, 2, 0, NULL, &count), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_chunk(NULL, 2, 0, out, &count), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor_free(a);
}

static void test_split(void **state) {
    (void)state;
    int64_t s26[2] = {2, 6};
    wk_tensor *a = iota(s26, 2);
    const int64_t sizes[3] = {1, 2, 3};
    wk_tensor *out[3] = {NULL, NULL, NULL};
    TU_STATUS_OK(wk_split(a, sizes, 3, 1, out));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(wk_dim(out[i], 0), 2);
        assert_int_equal(wk_dim(out[i], 1), sizes[i]);
        assert_true(wk_shares_storage(out[i], a));
    }
    const double e1[4] = {1, 2, 7, 8}, e2[6] = {3, 4, 5, 9, 10, 11};
    tu_assert_close(out[1], e1, 4, 0, 0);
    tu_assert_close(out[2], e2, 6, 0, 0);
    for (int i = 0; i < 3; i++) wk_tensor_free(out[i]);
    /* zero-size pieces are fine */
    const int64_t z[3] = {0, 6, 0};
    TU_STATUS_OK(wk_split(a, z, 3, -1, out));
    assert_int_equal(wk_numel(out[0]), 0);
    assert_int_equal(wk_numel(out[1]), 12);
    assert_int_equal(wk_numel(out[2]), 0);
    for (int i = 0; i < 3; i++) wk_tensor_free(out[i]);
    wk_clear_error();
    const int64_t bad_sum[2] = {2, 3}, neg[3] = {-1, 4, 3}, big[2] = {INT64_MAX, 1};
    assert_int_equal(wk_split(a, bad_sum, 2, 1, out), WK_ERR_SHAPE);
    assert_int_equal(wk_split(a, neg, 3, 1, out), WK_ERR_ARG);
    assert_int_equal(wk_split(a, sizes, 3, 2, out), WK_ERR_INDEX);
    assert_int_equal(wk_split(a, sizes, 0, 1, out), WK_ERR_ARG);
    assert_int_equal(wk_split(a, NULL, 3, 1, out), WK_ERR_ARG);
    assert_int_equal(wk_split(a, sizes, 3, 1, NULL), WK_ERR_ARG);
    wk_clear_error();
    wk_status st = wk_split(a, big, 2, 1, out); /* the sum overflows int64 */
    assert_int_not_equal(st, WK_OK);
    assert_int_equal(wk_last_status(), st);
    wk_clear_error();
    wk_tensor_free(a);
}

/* ------------------------------------------------------------ contiguity */

static void test_contiguous(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3};
    wk_tensor *a = iota(s23, 2);
    wk_tensor *c = TU_OK(wk_contiguous(a));
    assert_true(wk_shares_storage(a, c));
    assert_int_equal(wk_offset(c), 0);
    wk_tensor *t = TU_OK(wk_t(a));
    wk_tensor *tc = TU_OK(wk_contiguous(t));
    assert_false(wk_shares_storage(tc, a));
    assert_true(wk_is_contiguous(tc));
    const double ex[6] = {0, 3, 1, 4, 2, 5};
    tu_assert_close(tc, ex, 6, 0, 0);
    const int64_t st[2] = {2, 1};
    assert_strides(tc, st, 2);
    /* a contiguous view with an offset stays a view */
    wk_tensor *row = TU_OK(wk_select(a, 0, 1));
    wk_tensor *rc = TU_OK(wk_contiguous(row));
    assert_true(wk_shares_storage(rc, a));
    assert_int_equal(wk_offset(rc), 3);
    wk_tensor *xs[] = {rc, row, tc, t, c, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_is_contiguous_size1(void **state) {
    (void)state;
    int64_t s354[3] = {3, 5, 4};
    wk_tensor *a = iota(s354, 3);
    /* (3,1,4) with strides (20,4,1): contiguous when size-1 dims are ignored */
    wk_tensor *n = TU_OK(wk_narrow(a, 1, 2, 1));
    const int64_t st[3] = {20, 4, 1};
    assert_strides(n, st, 3);
    assert_false(wk_is_contiguous(n)); /* stride 20 != 4 */
    wk_tensor *s = TU_OK(wk_narrow(a, 0, 1, 1)); /* (1,5,4) strides (20,4,1) */
    assert_true(wk_is_contiguous(s));
    wk_tensor *s2 = TU_OK(wk_narrow(s, 2, 1, 1)); /* (1,5,1) strides (20,4,1): not contiguous */
    assert_false(wk_is_contiguous(s2));
    wk_tensor *s3 = TU_OK(wk_narrow(s2, 1, 3, 1)); /* (1,1,1): contiguous */
    assert_true(wk_is_contiguous(s3));
    /* transpose of (4,1) -> (1,4) with strides (1,1): contiguous */
    int64_t s41[2] = {4, 1};
    wk_tensor *b = iota(s41, 2);
    wk_tensor *bt = TU_OK(wk_t(b));
    assert_true(wk_is_contiguous(bt));
    /* a selected middle slice: (3,4) strides (20,1) */
    wk_tensor *col = TU_OK(wk_select(a, 1, 0));
    assert_false(wk_is_contiguous(col));
    wk_tensor *b0 = TU_OK(wk_broadcast_as(b, s41, 2));
    assert_true(wk_is_contiguous(b0));
    int64_t s44[2] = {4, 4};
    wk_tensor *bb = TU_OK(wk_broadcast_as(b, s44, 2));
    assert_false(wk_is_contiguous(bb));
    assert_false(wk_is_contiguous(NULL));
    wk_tensor *xs[] = {bb, b0, col, bt, b, s3, s2, s, n, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

/* ------------------------------------------------------------ strides, offsets, views of views */

static void test_views_of_views(void **state) {
    (void)state;
    int64_t s456[3] = {4, 5, 6};
    wk_tensor *a = iota(s456, 3);
    const int64_t st[3] = {30, 6, 1};
    assert_strides(a, st, 3);
    assert_int_equal(wk_offset(a), 0);
    wk_tensor *v1 = TU_OK(wk_narrow(a, 0, 1, 3));      /* (3,5,6) off 30 */
    wk_tensor *v2 = TU_OK(wk_transpose(v1, 1, 2));     /* (3,6,5) strides (30,1,6) */
    wk_tensor *v3 = TU_OK(wk_narrow(v2, 1, 2, 3));     /* (3,3,5) off 32 */
    wk_tensor *v4 = TU_OK(wk_select(v3, 2, 4));        /* (3,3) off 56 strides (30,1) */
    wk_tensor *v5 = TU_OK(wk_unsqueeze(v4, 0));        /* (1,3,3) */
    int64_t s333[3] = {3, 3, 3};
    wk_tensor *v6 = TU_OK(wk_broadcast_as(v5, s333, 3));
    assert_int_equal(wk_offset(v3), 32);
    assert_int_equal(wk_offset(v4), 56);
    const int64_t st4[2] = {30, 1};
    assert_strides(v4, st4, 2);
    wk_tensor *views[] = {v1, v2, v3, v4, v5, v6};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) assert_true(wk_shares_storage(views[i], a));
    /* drop the base and the intermediate views: v6 keeps the storage alive */
    wk_tensor_free(a);
    wk_tensor_free(v1);
    wk_tensor_free(v2);
    wk_tensor_free(v3);
    wk_tensor_free(v5);
    for (int64_t b = 0; b < 3; b++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t j = 0; j < 3; j++) {
                int64_t idx[3] = {b, i, j};
                /* a[1 + i, 4, 2 + j] */
                assert_true(get(v6, idx) == (double)((1 + i) * 30 + 4 * 6 + 2 + j));
            }
    /* writes through a view are seen by other views */
    int64_t z2[2] = {0, 2};
    TU_STATUS_OK(wk_fill_(v4, -1));
    int64_t z3[3] = {2, 0, 2};
    assert_true(get(v6, z3) == -1);
    assert_true(get(v4, z2) == -1);
    wk_tensor_free(v6);
    wk_tensor_free(v4);
}

/* ------------------------------------------------------------ rank 0, empty, max rank */

static void test_rank0(void **state) {
    (void)state;
    wk_tensor *s = TU_OK(wk_full(NULL, 0, 3.5, WK_F32, wk_cpu()));
    assert_int_equal(wk_rank(s), 0);
    assert_int_equal(wk_numel(s), 1);
    assert_true(wk_is_contiguous(s));
    double v;
    TU_STATUS_OK(wk_item(s, &v));
    assert_true(v == 3.5);
    TU_STATUS_OK(wk_get(s, NULL, &v));
    assert_true(v == 3.5);
    int64_t s111[3] = {1, 1, 1};
    wk_tensor *r = TU_OK(wk_reshape(s, s111, 3));
    tu_assert_shape(r, s111, 3);
    assert_true(wk_shares_storage(r, s));
    wk_tensor *back = TU_OK(wk_reshape(r, NULL, 0));
    assert_int_equal(wk_rank(back), 0);
    int64_t m1 = -1, one = 1;
    wk_tensor *h = TU_OK(wk_reshape(s, &m1, 1));
    tu_assert_shape(h, &one, 1);
    wk_tensor *u = TU_OK(wk_unsqueeze(s, 0));
    tu_assert_shape(u, &one, 1);
    wk_tensor *um = TU_OK(wk_unsqueeze(s, -1));
    tu_assert_shape(um, &one, 1);
    wk_tensor *f = TU_OK(wk_flatten(s, 0, -1));
    tu_assert_shape(f, &one, 1);
    wk_tensor *fa = TU_OK(wk_flatten_all(s));
    tu_assert_shape(fa, &one, 1);
    int64_t s23[2] = {2, 3};
    wk_tensor *bc = TU_OK(wk_broadcast_as(s, s23, 2));
    const double ex[6] = {3.5, 3.5, 3.5, 3.5, 3.5, 3.5};
    tu_assert_close(bc, ex, 6, 0, 0);
    wk_tensor *c = TU_OK(wk_contiguous(s));
    assert_true(wk_shares_storage(c, s));
    wk_tensor *p = TU_OK(wk_permute(s, NULL, 0));
    assert_int_equal(wk_rank(p), 0);
    assert_int_equal(wk_dim(s, 0), -1);
    assert_int_equal(wk_dim(s, -1), -1);
    wk_clear_error();
    TU_FAILS(wk_squeeze(s, 0), WK_ERR_INDEX);
    TU_FAILS(wk_transpose(s, 0, 0), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(s, 0, 0, 1), WK_ERR_INDEX);
    TU_FAILS(wk_select(s, 0, 0), WK_ERR_INDEX);
    TU_FAILS(wk_t(s), WK_ERR_SHAPE);
    TU_FAILS(wk_unsqueeze(s, 1), WK_ERR_INDEX);
    TU_FAILS(wk_unsqueeze(s, -2), WK_ERR_INDEX);
    wk_tensor *xs[] = {p, c, bc, fa, f, um, u, h, back, r, s};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_empty_tensors(void **state) {
    (void)state;
    int64_t s03[2] = {0, 3};
    wk_tensor *a = TU_OK(wk_zeros(s03, 2, WK_F32, wk_cpu()));
    assert_int_equal(wk_numel(a), 0);
    assert_true(wk_is_contiguous(a));
    TU_STATUS_OK(wk_to_host(a, NULL, 0));
    TU_STATUS_OK(wk_to_host_f64(a, NULL, 0));
    int64_t s30[2] = {3, 0};
    wk_tensor *r = TU_OK(wk_reshape(a, s30, 2));
    tu_assert_shape(r, s30, 2);
    int64_t sm[2] = {-1, 3};
    wk_tensor *r2 = TU_OK(wk_reshape(a, sm, 2));
    tu_assert_shape(r2, s03, 2);
    wk_tensor *t = TU_OK(wk_t(a));
    tu_assert_shape(t, s30, 2);
    wk_tensor *n = TU_OK(wk_narrow(a, 0, 0, 0));
    tu_assert_shape(n, s03, 2);
    wk_tensor *n2 = TU_OK(wk_narrow(a, 1, 1, 2));
    assert_int_equal(wk_dim(n2, 1), 2);
    assert_int_equal(wk_numel(n2), 0);
    wk_tensor *s = TU_OK(wk_select(a, 1, 2));
    assert_int_equal(wk_rank(s), 1);
    assert_int_equal(wk_numel(s), 0);
    wk_tensor *c = TU_OK(wk_contiguous(t));
    assert_int_equal(wk_numel(c), 0);
    wk_tensor *cp = TU_OK(wk_copy(t));
    assert_int_equal(wk_numel(cp), 0);
    wk_tensor *fl = TU_OK(wk_flatten_all(t));
    assert_int_equal(wk_dim(fl, 0), 0);
    int64_t s203[3] = {2, 0, 3};
    wk_tensor *b = TU_OK(wk_broadcast_as(a, s203, 3));
    tu_assert_shape(b, s203, 3);
    int64_t s1[1] = {1};
    wk_tensor *one = TU_OK(wk_zeros(s1, 1, WK_F32, wk_cpu()));
    int64_t s0 = 0;
    wk_tensor *b0 = TU_OK(wk_broadcast_as(one, &s0, 1)); /* size 1 stretches to 0 */
    assert_int_equal(wk_numel(b0), 0);
    TU_STATUS_OK(wk_fill_(a, 1));
    wk_clear_error();
    TU_FAILS(wk_select(a, 0, 0), WK_ERR_INDEX);
    TU_FAILS(wk_narrow(a, 0, 0, 1), WK_ERR_INDEX);
    int64_t s2 = 2;
    TU_FAILS(wk_reshape(a, &s2, 1), WK_ERR_SHAPE);
    /* zero elements, but dims whose product (and strides) would overflow */
    int64_t huge0[3] = {0, INT64_C(1) << 40, INT64_C(1) << 40}, huge1[3] = {INT64_C(1) << 40, 0, INT64_C(1) << 40};
    TU_FAILS(wk_zeros(huge0, 3, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_empty(huge1, 3, WK_U8, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, huge0, 3), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, huge1, 3), WK_ERR_SHAPE);
    TU_FAILS(wk_broadcast_as(a, huge1, 3), WK_ERR_SHAPE);
    /* large but representable empty shapes are fine */
    int64_t big0[3] = {INT64_C(1) << 20, 0, INT64_C(1) << 20};
    wk_tensor *bz = TU_OK(wk_zeros(big0, 3, WK_F32, wk_cpu()));
    assert_int_equal(wk_numel(bz), 0);
    wk_tensor *bzt = TU_OK(wk_transpose(bz, 0, 2));
    wk_tensor *bzu = TU_OK(wk_unsqueeze(bzt, 1));
    wk_tensor *bzr = TU_OK(wk_reshape(bzu, big0, 3));
    wk_tensor_free(bzr);
    wk_tensor_free(bzu);
    wk_tensor_free(bzt);
    wk_tensor_free(bz);
    wk_tensor *xs[] = {b0, one, b, fl, cp, c, s, n2, n, t, r2, r, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_max_rank(void **state) {
    (void)state;
    int64_t s8[WK_MAX_RANK] = {1, 2, 1, 2, 1, 2, 1, 3};
    wk_tensor *a = TU_OK(wk_zeros(s8, WK_MAX_RANK, WK_F32, wk_cpu()));
    assert_int_equal(wk_rank(a), WK_MAX_RANK);
    assert_int_equal(wk_numel(a), 24);
    wk_tensor *io = iota(s8, WK_MAX_RANK);
    const int rev[WK_MAX_RANK] = {7, 6, 5, 4, 3, 2, 1, 0};
    wk_tensor *p = TU_OK(wk_permute(io, rev, WK_MAX_RANK));
    int64_t idx[WK_MAX_RANK] = {2, 0, 1, 0, 1, 0, 1, 0}; /* io[0,1,0,1,0,1,0,2] */
    assert_true(get(p, idx) == 1 * 12 + 1 * 6 + 1 * 3 + 2);
    wk_tensor *pc = TU_OK(wk_contiguous(p));
    assert_true(tu_max_abs_diff(pc, p) == 0);
    int64_t s24 = 24;
    wk_tensor *f = TU_OK(wk_reshape(pc, &s24, 1));
    wk_tensor *back = TU_OK(wk_reshape(f, s8, WK_MAX_RANK));
    tu_assert_shape(back, s8, WK_MAX_RANK);
    wk_tensor *sq = TU_OK(wk_squeeze(a, 0));
    assert_int_equal(wk_rank(sq), WK_MAX_RANK - 1);
    wk_tensor *un = TU_OK(wk_unsqueeze(sq, 7));
    assert_int_equal(wk_rank(un), WK_MAX_RANK);
    int64_t s7[7] = {2, 2, 2, 2, 2, 2, 2};
    wk_tensor *r7 = TU_OK(wk_zeros(s7, 7, WK_F32, wk_cpu()));
    int64_t left1 = 3;
    wk_tensor *bl = TU_OK(wk_broadcast_left(r7, &left1, 1));
    assert_int_equal(wk_rank(bl), WK_MAX_RANK);
    /* rank 9: clean errors */
    int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    wk_clear_error();
    TU_FAILS(wk_zeros(s9, 9, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_ones(s9, 9, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_empty(s9, 9, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_full(s9, 9, 1.0, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    float one = 1;
    TU_FAILS(wk_from_host(&one, sizeof one, s9, 9, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_rand(s9, 9, 0, 1, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_reshape(a, s9, 9), WK_ERR_SHAPE);
    TU_FAILS(wk_unsqueeze(a, 0), WK_ERR_SHAPE);
    TU_FAILS(wk_unsqueeze(a, -1), WK_ERR_SHAPE);
    TU_FAILS(wk_broadcast_as(a, s9, 9), WK_ERR_SHAPE);
    TU_FAILS(wk_broadcast_left(a, &left1, 1), WK_ERR_SHAPE);
    const int rev9[9] = {8, 7, 6, 5, 4, 3, 2, 1, 0};
    TU_FAILS(wk_permute(a, rev9, 9), WK_ERR_SHAPE);
    TU_FAILS(wk_zeros(s9, -1, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    wk_tensor *xs[] = {bl, r7, un, sq, back, f, pc, p, io, a};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void test_metadata_queries(void **state) {
    (void)state;
    int64_t s23[2] = {2, 3};
    wk_tensor *a = iota(s23, 2);
    assert_int_equal(wk_dim(a, 0), 2);
    assert_int_equal(wk_dim(a, -1), 3);
    assert_int_equal(wk_dim(a, 2), -1);
    assert_int_equal(wk_dim(a, -3), -1);
    assert_int_equal(wk_dim(NULL, 0), -1);
    assert_int_equal(wk_rank(NULL), -1);
    assert_null(wk_shape(NULL));
    assert_null(wk_strides(NULL));
    assert_int_equal(wk_numel(NULL), 0);
    assert_false(wk_shares_storage(a, NULL));
    assert_false(wk_shares_storage(NULL, NULL));
    wk_tensor *b = TU_OK(wk_t(a));
    assert_int_not_equal(wk_tensor_id(a), wk_tensor_id(b));
    assert_int_equal(wk_tensor_id(NULL), 0);
    assert_ptr_equal(wk_tensor_device(a), wk_cpu());
    assert_null(wk_tensor_device(NULL));
    char buf[64];
    wk_tensor_describe(a, buf, sizeof buf);
    assert_non_null(strstr(buf, "f32"));
    assert_non_null(strstr(buf, "[2, 3]"));
    assert_non_null(strstr(buf, "cpu"));
    char tiny[4];
    wk_tensor_describe(a, tiny, sizeof tiny);
    assert_true(strlen(tiny) < sizeof tiny);
    wk_tensor_describe(NULL, buf, sizeof buf);
    assert_non_null(wk_tensor_describe(a, buf, 0));
    wk_tensor_free(b);
    wk_tensor_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape_view),
        cmocka_unit_test(test_reshape_copy_of_transposed),
        cmocka_unit_test(test_reshape_errors),
        cmocka_unit_test(test_narrow),
        cmocka_unit_test(test_transpose_t),
        cmocka_unit_test(test_permute),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_squeeze_unsqueeze),
        cmocka_unit_test(test_flatten),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_chunk),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_contiguous),
        cmocka_unit_test(test_is_contiguous_size1),
        cmocka_unit_test(test_views_of_views),
        cmocka_unit_test(test_rank0),
        cmocka_unit_test(test_empty_tensors),
        cmocka_unit_test(test_max_rank),
        cmocka_unit_test(test_metadata_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
