/* Indexing ops: hand-checked values, error paths, edge cases (empty, rank 1,
 * duplicates, non-contiguous views, in-place atomicity, threads). */
#include "testutil.h"
#include <stdlib.h>
#include <string.h>

static wk_tensor *ids_i64(const int64_t *v, const int64_t *shape, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return TU_OK(wk_from_host(v, (size_t)n * sizeof *v, shape, rank, WK_I64, wk_cpu()));
}

static wk_tensor *range(int64_t n, const int64_t *shape, int rank, wk_dtype dt) {
    wk_tensor *a = TU_OK(wk_arange(0, (double)n, 1, dt, wk_cpu()));
    return TU_OK(wk_reshape(a, shape, rank));
}

static void expect_err(wk_status want, const char *needle) {
    assert_int_equal(wk_last_status(), want);
    if (needle && !strstr(wk_last_error(), needle)) fail_msg("error '%s' lacks '%s'", wk_last_error(), needle);
    wk_clear_error();
}

static void test_index_select(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[2] = {3, 4};
    wk_tensor *t = range(12, s, 2, WK_F32);
    int64_t iv[4] = {2, 0, 2, 1}, is[1] = {4};
    wk_tensor *ids = ids_i64(iv, is, 1);
    wk_tensor *r = TU_OK(wk_index_select(t, ids, 0));
    int64_t rs[2] = {4, 4};
    tu_assert_shape(r, rs, 2);
    double e0[16] = {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7};
    tu_assert_close(r, e0, 16, 0, 0);
    /* dim 1 on a transposed view, u8 ids */
    wk_tensor *tt = TU_OK(wk_t(t)); /* (4, 3): tt[i][j] = t[j][i] = 4j + i */
    double u8v[2] = {2, 2};
    int64_t u8s[1] = {2};
    wk_tensor *ids8 = tu_make(u8v, u8s, 1, WK_U8);
    wk_tensor *r2 = TU_OK(wk_index_select(tt, ids8, -1));
    double e2[8] = {8, 8, 9, 9, 10, 10, 11, 11};
    tu_assert_close(r2, e2, 8, 0, 0);
    /* every index dtype */
    wk_dtype idts[4] = {WK_U8, WK_U32, WK_I32, WK_I64};
    for (int k = 0; k < 4; k++) {
        double v[1] = {1};
        int64_t one[1] = {1};
        wk_tensor *id = tu_make(v, one, 1, idts[k]);
        wk_tensor *x = TU_OK(wk_index_select(t, id, 1));
        double e[3] = {1, 5, 9};
        tu_assert_close(x, e, 3, 0, 0);
    }
    /* bad index dtype, bad index values, bad shapes */
    double fv[1] = {0};
    int64_t one[1] = {1};
    assert_null(wk_index_select(t, tu_make(fv, one, 1, WK_F32), 0));
    expect_err(WK_ERR_DTYPE, "f32");
    assert_null(wk_index_select(t, tu_make(fv, one, 1, WK_I16), 0));
    expect_err(WK_ERR_DTYPE, "i16");
    int64_t bad[2] = {1, 3};
    assert_null(wk_index_select(t, ids_i64(bad, (int64_t[]){2}, 1), 0));
    expect_err(WK_ERR_INDEX, "index 3");
    int64_t neg[1] = {-1};
    assert_null(wk_index_select(t, ids_i64(neg, one, 1), 1));
    expect_err(WK_ERR_INDEX, "size 4");
    assert_null(wk_index_select(t, ids_i64(iv, (int64_t[]){2, 2}, 2), 0));
    expect_err(WK_ERR_SHAPE, NULL);
    assert_null(wk_index_select(t, ids, 2));
    expect_err(WK_ERR_INDEX, NULL);
    /* NULL propagation */
    assert_null(wk_index_select(NULL, ids, 0));
    assert_int_not_equal(wk_last_status(), WK_OK);
    wk_clear_error();
    /* empty ids, empty table dims */
    wk_tensor *e = ids_i64(NULL, (int64_t[]){0}, 1);
    wk_tensor *r3 = TU_OK(wk_index_select(t, e, 1));
    tu_assert_shape(r3, (int64_t[]){3, 0}, 2);
    wk_tensor *empty_t = TU_OK(wk_zeros((int64_t[]){0, 4}, 2, WK_F32, wk_cpu()));
    wk_tensor *r4 = TU_OK(wk_index_select(empty_t, ids8, 1));
    tu_assert_shape(r4, (int64_t[]){0, 2}, 2);
    assert_null(wk_index_select(empty_t, ids8, 0)); /* index 2 into size 0 */
    expect_err(WK_ERR_INDEX, NULL);
    /* rank-0 ids: one element */
    wk_tensor *id0 = tu_make((double[]){1}, NULL, 0, WK_I32);
    wk_tensor *r5 = TU_OK(wk_index_select(t, id0, 0));
    tu_assert_shape(r5, (int64_t[]){1, 4}, 2);
    wk_scope_end();
}

static void test_embedding(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *tab = range(6, (int64_t[]){3, 2}, 2, WK_F16);
    double iv[4] = {2, 0, 1, 2};
    wk_tensor *ids = tu_make(iv, (int64_t[]){2, 2}, 2, WK_U32);
    wk_tensor *r = TU_OK(wk_embedding(ids, tab));
    tu_assert_shape(r, (int64_t[]){2, 2, 2}, 3);
    double e[8] = {4, 5, 0, 1, 2, 3, 4, 5};
    tu_assert_close(r, e, 8, 0, 0);
    assert_null(wk_embedding(ids, TU_OK(wk_reshape(tab, (int64_t[]){6}, 1))));
    expect_err(WK_ERR_SHAPE, NULL);
    assert_null(wk_embedding(tu_make((double[]){3}, (int64_t[]){1}, 1, WK_I64), tab));
    expect_err(WK_ERR_INDEX, "3");
    wk_scope_end();
}

static void test_gather(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = range(6, (int64_t[]){2, 3}, 2, WK_I32);
    double iv[4] = {0, 1, 1, 0};
    wk_tensor *ids = tu_make(iv, (int64_t[]){2, 2}, 2, WK_I64);
    /* dim 0: out[i][j] = t[ids[i][j]][j] */
    wk_tensor *r = TU_OK(wk_gather(t, ids, 0));
    double e0[4] = {0, 4, 3, 1};
    tu_assert_close(r, e0, 4, 0, 0);
    wk_tensor *r1 = TU_OK(wk_gather(t, ids, 1));
    double e1[4] = {0, 1, 4, 3};
    tu_assert_close(r1, e1, 4, 0, 0);
    /* index too large on dim, ids bigger than t off dim */
    wk_tensor *big = tu_make((double[]){2, 0}, (int64_t[]){1, 2}, 2, WK_I64);
    assert_null(wk_gather(t, big, 0));
    expect_err(WK_ERR_INDEX, "index 2");
    wk_tensor *wide = tu_make((double[]){0, 0, 0, 0}, (int64_t[]){1, 4}, 2, WK_I64);
    assert_null(wk_gather(t, wide, 0));
    expect_err(WK_ERR_SHAPE, NULL);
    assert_null(wk_gather(t, tu_make((double[]){0}, (int64_t[]){1}, 1, WK_I64), 0));
    expect_err(WK_ERR_SHAPE, NULL);
    /* empty ids */
    wk_tensor *e = TU_OK(wk_zeros((int64_t[]){0, 3}, 2, WK_I64, wk_cpu()));
    tu_assert_shape(TU_OK(wk_gather(t, e, 0)), (int64_t[]){0, 3}, 2);
    /* broadcast ids (stride 0) */
    wk_tensor *row = tu_make((double[]){2, 0}, (int64_t[]){1, 2}, 2, WK_U8);
    wk_tensor *rb = TU_OK(wk_broadcast_as(row, (int64_t[]){2, 2}, 2));
    double eb[4] = {2, 0, 5, 3};
    tu_assert_close(TU_OK(wk_gather(t, rb, 1)), eb, 4, 0, 0);
    wk_scope_end();
}

static void test_scatter(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = TU_OK(wk_zeros((int64_t[]){3, 2}, 2, WK_F32, wk_cpu()));
    wk_tensor *src = range(4, (int64_t[]){2, 2}, 2, WK_F32);
    wk_tensor *src1 = TU_OK(wk_affine(src, 1, 1)); /* 1 2 3 4 */
    double iv[4] = {2, 2, 2, 0};
    wk_tensor *ids = tu_make(iv, (int64_t[]){2, 2}, 2, WK_I32);
    /* duplicates at (2,0): the last (row-major) write wins */
    wk_tensor *r = TU_OK(wk_scatter(t, ids, src1, 0));
    double e[6] = {0, 4, 0, 0, 3, 2};
    tu_assert_close(r, e, 6, 0, 0);
    wk_tensor *ra = TU_OK(wk_scatter_add(t, ids, src1, 0));
    double ea[6] = {0, 4, 0, 0, 4, 2};
    tu_assert_close(ra, ea, 6, 0, 0);
    /* t untouched */
    double z[6] = {0};
    tu_assert_close(t, z, 6, 0, 0);
    /* integer wrap */
    wk_tensor *tu = tu_make((double[]){250, 1}, (int64_t[]){2}, 1, WK_U8);
    wk_tensor *su = tu_make((double[]){10, 20}, (int64_t[]){2}, 1, WK_U8);
    wk_tensor *iu = tu_make((double[]){0, 0}, (int64_t[]){2}, 1, WK_U8);
    tu_assert_close(TU_OK(wk_scatter_add(tu, iu, su, 0)), (double[]){24, 1}, 2, 0, 0);
    wk_tensor *ti = tu_make((double[]){2147483647.0}, (int64_t[]){1}, 1, WK_I32);
    wk_tensor *si = tu_make((double[]){1}, (int64_t[]){1}, 1, WK_I32);
    tu_assert_close(TU_OK(wk_scatter_add(ti, tu_make((double[]){0}, (int64_t[]){1}, 1, WK_I64), si, 0)),
                    (double[]){-2147483648.0}, 1, 0, 0);
    /* in place: a bad index anywhere leaves t untouched */
    wk_tensor *tp = TU_OK(wk_zeros((int64_t[]){3, 2}, 2, WK_F32, wk_cpu()));
    double bv[4] = {0, 1, 2, 3};
    wk_tensor *bad = tu_make(bv, (int64_t[]){2, 2}, 2, WK_I64);
    assert_int_equal(wk_scatter_(tp, bad, src1, 0), WK_ERR_INDEX);
    expect_err(WK_ERR_INDEX, "index 3");
    tu_assert_close(tp, z, 6, 0, 0);
    assert_int_equal(wk_scatter_add_(tp, bad, src1, 0), WK_ERR_INDEX);
    wk_clear_error();
    tu_assert_close(tp, z, 6, 0, 0);
    /* in place into a transposed view: tp^T is (2, 3) */
    wk_tensor *tv = TU_OK(wk_t(tp));
    wk_tensor *i2 = tu_make((double[]){2, 0}, (int64_t[]){2, 1}, 2, WK_I64);
    TU_STATUS_OK(wk_scatter_(tv, i2, src1, 1)); /* tv[0][2] = 1, tv[1][0] = 3 */
    double ep[6] = {0, 3, 0, 0, 1, 0};
    tu_assert_close(tp, ep, 6, 0, 0);
    TU_STATUS_OK(wk_scatter_add_(tv, i2, src1, 1));
    double ep2[6] = {0, 6, 0, 0, 2, 0};
    tu_assert_close(tp, ep2, 6, 0, 0);
    /* errors: dtype mismatch, shape, bad id dtype */
    assert_null(wk_scatter(t, ids, TU_OK(wk_to_dtype(src1, WK_F64)), 0));
    expect_err(WK_ERR_DTYPE, NULL);
    assert_null(wk_scatter(t, TU_OK(wk_reshape(ids, (int64_t[]){4}, 1)), src1, 0));
    expect_err(WK_ERR_SHAPE, NULL);
    assert_null(wk_scatter(t, TU_OK(wk_to_dtype(ids, WK_F32)), src1, 0));
    expect_err(WK_ERR_DTYPE, NULL);
    assert_null(wk_scatter(t, ids, src1, 5));
    expect_err(WK_ERR_INDEX, NULL);
    /* empty ids: a plain copy */
    wk_tensor *e0 = TU_OK(wk_zeros((int64_t[]){0, 2}, 2, WK_I64, wk_cpu()));
    tu_assert_close(TU_OK(wk_scatter(t, e0, src1, 0)), z, 6, 0, 0);
    /* bf16 add through f32 */
    wk_tensor *tb = tu_make((double[]){1, 2}, (int64_t[]){2}, 1, WK_BF16);
    wk_tensor *sb = tu_make((double[]){0.5, 0.25}, (int64_t[]){2}, 1, WK_BF16);
    tu_assert_close(TU_OK(wk_scatter_add(tb, tu_make((double[]){1, 1}, (int64_t[]){2}, 1, WK_U8), sb, 0)),
                    (double[]){1, 2.75}, 2, 0, 0);
    wk_scope_end();
}

static void test_index_add(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = TU_OK(wk_ones((int64_t[]){3, 2}, 2, WK_F64, wk_cpu()));
    wk_tensor *src = range(6, (int64_t[]){3, 2}, 2, WK_F64);
    wk_tensor *ids = tu_make((double[]){0, 2, 0}, (int64_t[]){3}, 1, WK_I64);
    wk_tensor *r = TU_OK(wk_index_add(t, ids, src, 0));
    double e[6] = {1 + 0 + 4, 1 + 1 + 5, 1, 1, 1 + 2, 1 + 3};
    tu_assert_close(r, e, 6, 0, 0);
    /* along dim 1 with a transposed src */
    wk_tensor *srcT = TU_OK(wk_t(range(2, (int64_t[]){1, 2}, 2, WK_F64))); /* (2,1) */
    wk_tensor *src2 = TU_OK(wk_broadcast_as(TU_OK(wk_t(srcT)), (int64_t[]){3, 2}, 2));
    wk_tensor *r2 = TU_OK(wk_index_add(t, tu_make((double[]){1, 1}, (int64_t[]){2}, 1, WK_U32), src2, 1));
    double e2[6] = {1, 2, 1, 2, 1, 2};
    tu_assert_close(r2, e2, 6, 0, 0);
    assert_null(wk_index_add(t, tu_make((double[]){3}, (int64_t[]){1}, 1, WK_I64),
                             TU_OK(wk_ones((int64_t[]){1, 2}, 2, WK_F64, wk_cpu())), 0));
    expect_err(WK_ERR_INDEX, "index 3");
    assert_null(wk_index_add(t, ids, TU_OK(wk_ones((int64_t[]){2, 2}, 2, WK_F64, wk_cpu())), 0));
    expect_err(WK_ERR_SHAPE, NULL);
    /* integer wrap in i64 */
    wk_tensor *ti = TU_OK(wk_full((int64_t[]){1}, 1, 0, WK_I64, wk_cpu()));
    int64_t mx = INT64_MAX;
    wk_tensor *tmax = TU_OK(wk_from_host(&mx, 8, (int64_t[]){1}, 1, WK_I64, wk_cpu()));
    wk_tensor *one = TU_OK(wk_ones((int64_t[]){1}, 1, WK_I64, wk_cpu()));
    (void)ti;
    wk_tensor *w = TU_OK(wk_index_add(tmax, tu_make((double[]){0}, (int64_t[]){1}, 1, WK_I64), one, 0));
    int64_t got;
    TU_STATUS_OK(wk_to_host(w, &got, 8));
    assert_true(got == INT64_MIN);
    wk_scope_end();
}

static void test_composites(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = range(6, (int64_t[]){2, 3}, 2, WK_I64);
    /* flip */
    tu_assert_close(TU_OK(wk_flip(t, (int[]){1}, 1)), (double[]){2, 1, 0, 5, 4, 3}, 6, 0, 0);
    tu_assert_close(TU_OK(wk_flip(t, (int[]){0, -1}, 2)), (double[]){5, 4, 3, 2, 1, 0}, 6, 0, 0);
    tu_assert_close(TU_OK(wk_flip(t, NULL, 0)), (double[]){0, 1, 2, 3, 4, 5}, 6, 0, 0);
    assert_null(wk_flip(t, (int[]){1, -1}, 2));
    expect_err(WK_ERR_ARG, NULL);
    assert_null(wk_flip(t, (int[]){2}, 1));
    expect_err(WK_ERR_INDEX, NULL);
    /* roll */
    tu_assert_close(TU_OK(wk_roll(t, 1, 1)), (double[]){2, 0, 1, 5, 3, 4}, 6, 0, 0);
    tu_assert_close(TU_OK(wk_roll(t, -4, 1)), (double[]){1, 2, 0, 4, 5, 3}, 6, 0, 0);
    tu_assert_close(TU_OK(wk_roll(t, INT64_MIN, 0)), (double[]){0, 1, 2, 3, 4, 5}, 6, 0, 0);
    /* repeat */
    wk_tensor *rp = TU_OK(wk_repeat(t, (int64_t[]){2, 1, 2}, 3));
    tu_assert_shape(rp, (int64_t[]){2, 2, 6}, 3);
    double erp[24] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5};
    tu_assert_close(rp, erp, 24, 0, 0);
    tu_assert_shape(TU_OK(wk_repeat(t, (int64_t[]){0, 2}, 2)), (int64_t[]){0, 6}, 2);
    wk_tensor *same = TU_OK(wk_repeat(t, (int64_t[]){1, 1}, 2));
    assert_false(wk_shares_storage(same, t));
    assert_null(wk_repeat(t, (int64_t[]){2}, 1));
    expect_err(WK_ERR_ARG, NULL);
    assert_null(wk_repeat(t, (int64_t[]){-1, 1}, 2));
    expect_err(WK_ERR_ARG, NULL);
    assert_null(wk_repeat(t, (int64_t[]){INT64_MAX / 2, 4}, 2));
    assert_int_not_equal(wk_last_status(), WK_OK);
    wk_clear_error();
    /* pads */
    tu_assert_close(TU_OK(wk_pad_with_zeros(t, 1, 1, 2)), (double[]){0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0}, 12, 0, 0);
    tu_assert_close(TU_OK(wk_pad_with_same(t, 1, 2, 1)), (double[]){0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5}, 12, 0, 0);
    tu_assert_close(TU_OK(wk_pad_with_same(t, 0, 0, 1)), (double[]){0, 1, 2, 3, 4, 5, 3, 4, 5}, 9, 0, 0);
    assert_null(wk_pad_with_zeros(t, 0, -1, 0));
    expect_err(WK_ERR_ARG, NULL);
    wk_tensor *emp = TU_OK(wk_zeros((int64_t[]){2, 0}, 2, WK_F32, wk_cpu()));
    assert_null(wk_pad_with_same(emp, 1, 1, 0));
    expect_err(WK_ERR_SHAPE, NULL);
    tu_assert_shape(TU_OK(wk_pad_with_zeros(emp, 1, 1, 0)), (int64_t[]){2, 1}, 2);
    /* masked_fill */
    wk_tensor *m = tu_make((double[]){1, 0, 1}, (int64_t[]){3}, 1, WK_U8);
    tu_assert_close(TU_OK(wk_masked_fill(t, m, -7)), (double[]){-7, 1, -7, -7, 4, -7}, 6, 0, 0);
    assert_null(wk_masked_fill(t, TU_OK(wk_to_dtype(m, WK_F32)), 0));
    expect_err(WK_ERR_DTYPE, NULL);
    assert_null(wk_masked_fill(t, TU_OK(wk_ones((int64_t[]){3, 2, 3}, 3, WK_U8, wk_cpu())), 0));
    expect_err(WK_ERR_SHAPE, NULL);
    /* slice_scatter */
    wk_tensor *s = tu_make((double[]){9, 9}, (int64_t[]){2, 1}, 2, WK_I64);
    tu_assert_close(TU_OK(wk_slice_scatter(t, s, 1, 1)), (double[]){0, 9, 2, 3, 9, 5}, 6, 0, 0);
    tu_assert_close(t, (double[]){0, 1, 2, 3, 4, 5}, 6, 0, 0);
    assert_null(wk_slice_scatter(t, s, 1, 3));
    assert_int_not_equal(wk_last_status(), WK_OK);
    wk_clear_error();
    wk_scope_end();
}

/* In-place writes through a broadcast (stride 0) view are refused, as in
 * PyTorch (issue 10: several indices alias one element). Until issue 10 this
 * test asserted that they ran serially (scatter_add_ gave {0, 0, 10},
 * scatter_ the last write {0, 0, 4}); now both are WK_ERR_ARG and the
 * storage is untouched. */
static void test_inplace_broadcast(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *base = TU_OK(wk_zeros((int64_t[]){1, 3}, 2, WK_I32, wk_cpu()));
    wk_tensor *bv = TU_OK(wk_broadcast_as(base, (int64_t[]){4, 3}, 2)); /* 4 aliases of one row */
    wk_tensor *ids = tu_make((double[]){2, 2, 2, 2}, (int64_t[]){4, 1}, 2, WK_I64);
    wk_tensor *src = tu_make((double[]){1, 2, 3, 4}, (int64_t[]){4, 1}, 2, WK_I32);
    assert_int_equal(wk_scatter_add_(bv, ids, src, 1), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_scatter_add_"));
    assert_int_equal(wk_scatter_(bv, ids, src, 1), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_scatter_"));
    wk_clear_error();
    tu_assert_close(base, (double[]){0, 0, 0}, 3, 0, 0);
    /* the out-of-place forms read the broadcast view and write a fresh tensor */
    wk_tensor *sa = TU_OK(wk_scatter_add(bv, ids, src, 1));
    tu_assert_close(sa, (double[]){0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4}, 12, 0, 0);
    /* index_add on a broadcast input gives a fresh contiguous result */
    wk_tensor *r = TU_OK(wk_index_add(bv, tu_make((double[]){0}, (int64_t[]){1}, 1, WK_U8),
                                      TU_OK(wk_ones((int64_t[]){4, 1}, 2, WK_I32, wk_cpu())), 1));
    tu_assert_close(r, (double[]){1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}, 12, 0, 0);
    wk_scope_end();
}

/* Large cases: 1 and 2 threads give identical results. */
static void test_threads(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t n = 600, m = 700;
    wk_tensor *t = TU_OK(wk_randn((int64_t[]){n, m}, 2, 0, 1, WK_F32, wk_cpu()));
    int64_t *iv = malloc((size_t)(n * m) * sizeof *iv);
    for (int64_t i = 0; i < n * m; i++) iv[i] = (i * 7919) % n;
    wk_tensor *ids = TU_OK(wk_from_host(iv, (size_t)(n * m) * 8, (int64_t[]){n, m}, 2, WK_I64, wk_cpu()));
    wk_tensor *ids1 = TU_OK(wk_from_host(iv, (size_t)n * 8, (int64_t[]){n}, 1, WK_I64, wk_cpu()));
    free(iv);
    wk_tensor *out[2][5];
    int saved = wk_num_threads();
    for (int th = 1; th <= 2; th++) {
        wk_set_num_threads(th);
        out[th - 1][0] = TU_OK(wk_index_select(t, ids1, 0));
        out[th - 1][1] = TU_OK(wk_gather(t, ids, 0));
        out[th - 1][2] = TU_OK(wk_scatter_add(t, ids, t, 0));
        out[th - 1][3] = TU_OK(wk_index_add(t, ids1, t, 0));
        out[th - 1][4] = TU_OK(wk_index_select(TU_OK(wk_t(t)), ids1, 1));
    }
    TU_STATUS_OK(wk_set_num_threads(saved));
    for (int k = 0; k < 5; k++) assert_true(tu_max_abs_diff(out[0][k], out[1][k]) == 0.0);
    /* index_select of a transposed table equals the transposed select */
    assert_true(tu_max_abs_diff(out[0][4], TU_OK(wk_t(out[0][0]))) == 0.0);
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_select), cmocka_unit_test(test_embedding), cmocka_unit_test(test_gather),
        cmocka_unit_test(test_scatter),      cmocka_unit_test(test_index_add), cmocka_unit_test(test_composites),
        cmocka_unit_test(test_inplace_broadcast), cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
