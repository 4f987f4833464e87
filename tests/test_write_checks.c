/* In-place writes into a layout where two indices reach one element are
 * errors naming the op (issue 10: before it, copy_/fill_ into
 * broadcast_as((1,3) -> (4,3)) succeeded and the last row won). */
#include "testutil.h"
#include "tensor/tensor.h"
#include <stdio.h>
#include <string.h>

static void expect_alias_error(wk_status st, const char *op) {
    if (st != WK_ERR_ARG) fail_msg("%s returned %s, expected bad argument", op, wk_status_name(st));
    char want[64];
    snprintf(want, sizeof want, "%s:", op);
    if (!strstr(wk_last_error(), want)) fail_msg("'%s' does not name %s", wk_last_error(), op);
    if (!strstr(wk_last_error(), "single memory location")) fail_msg("'%s' does not say why", wk_last_error());
    wk_clear_error();
}

static void test_broadcast_destination(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *base = tu_make((double[]){1, 2, 3}, (int64_t[]){1, 3}, 2, WK_F32);
    wk_tensor *b = TU_OK(wk_broadcast_as(base, (int64_t[]){4, 3}, 2));
    wk_tensor *src = tu_make((double[]){10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42}, (int64_t[]){4, 3}, 2, WK_F32);
    expect_alias_error(wk_copy_(b, src), "wk_copy_");
    expect_alias_error(wk_fill_(b, 5), "wk_fill_");
    expect_alias_error(wk_zero_(b), "wk_zero_");
    expect_alias_error(wk_one_(b), "wk_one_");
    wk_tensor *two = TU_OK(wk_narrow(src, 0, 0, 2));
    expect_alias_error(wk_slice_set(b, two, 0, 1), "wk_slice_set");
    wk_tensor *ids = tu_make((double[]){0, 1, 2, 3}, (int64_t[]){4, 1}, 2, WK_I64);
    wk_tensor *col = TU_OK(wk_narrow(src, 1, 0, 1));
    expect_alias_error(wk_scatter_(b, ids, col, 0), "wk_scatter_");
    expect_alias_error(wk_scatter_add_(b, ids, col, 0), "wk_scatter_add_");
    tu_assert_close(base, (double[]){1, 2, 3}, 3, 0, 0); /* nothing was written */
    /* a stretched dim broadcast from a size-1 dim in the middle, and a new leading dim */
    wk_tensor *c = tu_make((double[]){1, 2}, (int64_t[]){2, 1}, 2, WK_F32);
    wk_tensor *cb = TU_OK(wk_broadcast_as(c, (int64_t[]){2, 5}, 2));
    expect_alias_error(wk_fill_(cb, 0), "wk_fill_");
    wk_tensor *lb = TU_OK(wk_broadcast_left(c, (int64_t[]){3}, 1));
    expect_alias_error(wk_fill_(lb, 0), "wk_fill_");
    tu_assert_close(c, (double[]){1, 2}, 2, 0, 0);
    /* only the written region counts: one row of the broadcast view is one
     * element per index (PyTorch allows b[2:3].copy_(x) likewise) */
    wk_tensor *r1 = TU_OK(wk_narrow(src, 0, 3, 1));
    TU_STATUS_OK(wk_slice_set(b, r1, 0, 2));
    tu_assert_close(base, (double[]){40, 41, 42}, 3, 0, 0);
    wk_tensor *brow = TU_OK(wk_narrow(b, 0, 1, 1));
    TU_STATUS_OK(wk_fill_(brow, 6));
    tu_assert_close(base, (double[]){6, 6, 6}, 3, 0, 0);
    /* a broadcast that stretches nothing, and empty views, are writable */
    wk_tensor *same = TU_OK(wk_broadcast_as(base, (int64_t[]){1, 3}, 2));
    TU_STATUS_OK(wk_zero_(same));
    wk_tensor *empty = TU_OK(wk_broadcast_as(base, (int64_t[]){0, 3}, 2));
    TU_STATUS_OK(wk_fill_(empty, 9));
    tu_assert_close(base, (double[]){0, 0, 0}, 3, 0, 0);
    /* reading a broadcast view is unchanged */
    TU_STATUS_OK(wk_copy_(src, b));
    tu_assert_close(src, (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 12, 0, 0);
    wk_scope_end();
}

/* Views wick makes of one storage (transpose, permute, narrow, flip-like
 * negative strides from a blob) stay writable. */
static void test_ordinary_views_writable(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = TU_OK(wk_zeros((int64_t[]){2, 3, 4}, 3, WK_I32, wk_cpu()));
    TU_STATUS_OK(wk_fill_(TU_OK(wk_permute(t, (int[]){2, 0, 1}, 3)), 1));
    TU_STATUS_OK(wk_fill_(TU_OK(wk_narrow(TU_OK(wk_transpose(t, 0, 2)), 0, 1, 2)), 2));
    TU_STATUS_OK(wk_fill_(TU_OK(wk_select(t, 1, 2)), 3));
    TU_STATUS_OK(wk_fill_(TU_OK(wk_reshape(TU_OK(wk_narrow(t, 2, 0, 2)), (int64_t[]){2, 3, 2, 1}, 4)), 4));
    wk_tensor *s = TU_OK(wk_sum_all(t));
    double v;
    TU_STATUS_OK(wk_item(s, &v));
    /* each fill landed where its view points, in order */
    int32_t h[24];
    TU_STATUS_OK(wk_to_host(t, h, sizeof h));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                int32_t want = k < 2 ? 4 : j == 2 ? 3 : k == 2 ? 2 : 1;
                if (h[(i * 3 + j) * 4 + k] != want) fail_msg("t[%d][%d][%d] = %d, want %d", i, j, k, h[(i * 3 + j) * 4 + k], want);
            }
    assert_true(v == 2 * (2 * 3 * 4 + 2 * 3 + 2 * 2 + 1 * 2)); /* 2 * (k<2: 24, j==2: 6, k==2: 4, k==3: 2) */
    wk_scope_end();
}

static bool overlaps(const int64_t *shape, const int64_t *stride, int rank) {
    wk_layout l = {.rank = rank, .offset = 0};
    for (int i = 0; i < rank; i++) {
        l.shape[i] = shape[i];
        l.stride[i] = stride[i];
    }
    return wk__layout_self_overlaps(&l);
}

static void test_overlap_rule(void **state) {
    (void)state;
    assert_false(overlaps((int64_t[]){4, 3}, (int64_t[]){3, 1}, 2));
    assert_true(overlaps((int64_t[]){4, 3}, (int64_t[]){0, 1}, 2));
    assert_false(overlaps((int64_t[]){1, 3}, (int64_t[]){0, 1}, 2)); /* size-1: stride unused */
    assert_false(overlaps((int64_t[]){0, 3}, (int64_t[]){0, 0}, 2)); /* no elements */
    assert_false(overlaps((int64_t[]){3, 4}, (int64_t[]){1, 3}, 2)); /* column major */
    assert_false(overlaps((int64_t[]){5}, (int64_t[]){-1}, 1));      /* reversed */
    assert_false(overlaps((int64_t[]){2, 3}, (int64_t[]){-3, 1}, 2));
    assert_true(overlaps((int64_t[]){2, 2}, (int64_t[]){1, 1}, 2));   /* 0 1 1 2 */
    assert_true(overlaps((int64_t[]){3, 2}, (int64_t[]){1, 2}, 2));   /* 0 2 1 3 2 4 */
    assert_true(overlaps((int64_t[]){2, 2}, (int64_t[]){-1, 1}, 2));  /* 0 1 -1 0 */
    /* interleaved strides that never collide: 0 3 2 5 4 7 (the cheap
     * sorted-stride test cannot prove it, the exact one does) */
    assert_false(overlaps((int64_t[]){3, 2}, (int64_t[]){2, 3}, 2));
    assert_false(overlaps((int64_t[]){4, 2}, (int64_t[]){2, 3}, 2));  /* 0 3 2 5 4 7 6 9 */
    assert_true(overlaps((int64_t[]){4, 3}, (int64_t[]){2, 3}, 2));   /* (3, 0) and (0, 2) both reach 6 */
    assert_false(overlaps((int64_t[]){2, 3, 4}, (int64_t[]){1, 2, 6}, 3)); /* a permutation of row-major */
    assert_true(overlaps((int64_t[]){2, 3, 4}, (int64_t[]){1, 2, 5}, 3));
    assert_false(overlaps(NULL, NULL, 0));                              /* a scalar */
}

/* A blob with interleaving strides is written exactly once per element;
 * one whose strides fold back is refused. */
static void test_blob_strides(void **state) {
    (void)state;
    float buf[8] = {0};
    wk_tensor *ok = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){3, 2}, 2, (int64_t[]){2, 3}, WK_F32, wk_cpu(),
                                       NULL, NULL, 0));
    wk_tensor *val = tu_make((double[]){1, 2, 3, 4, 5, 6}, (int64_t[]){3, 2}, 2, WK_F32);
    TU_STATUS_OK(wk_copy_(ok, val));
    const float want[8] = {1, 0, 3, 2, 5, 4, 0, 6};
    assert_memory_equal(buf, want, sizeof buf);
    wk_tensor *bad = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){3, 2}, 2, (int64_t[]){1, 2}, WK_F32, wk_cpu(),
                                        NULL, NULL, 0));
    expect_alias_error(wk_fill_(bad, 0), "wk_fill_");
    assert_memory_equal(buf, want, sizeof buf);
    wk_tensor_free(ok);
    wk_tensor_free(val);
    wk_tensor_free(bad);
}

/* scatter_ whose src shares the destination's storage reads it as it was
 * before the call (like copy_), not half-updated. */
static void test_scatter_self_source(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = tu_make((double[]){0, 1, 2, 3, 4, 5}, (int64_t[]){6}, 1, WK_I32);
    wk_tensor *ids = tu_make((double[]){1, 2, 3, 4, 5}, (int64_t[]){5}, 1, WK_I64);
    wk_tensor *src = TU_OK(wk_narrow(t, 0, 0, 5));
    TU_STATUS_OK(wk_scatter_(t, ids, src, 0));
    tu_assert_close(t, (double[]){0, 0, 1, 2, 3, 4}, 6, 0, 0);
    wk_tensor *u = tu_make((double[]){1, 1, 1}, (int64_t[]){3}, 1, WK_I64);
    wk_tensor *uids = TU_OK(wk_narrow(u, 0, 0, 2)); /* ids from the destination itself */
    TU_STATUS_OK(wk_scatter_add_(u, uids, tu_make((double[]){5, 7}, (int64_t[]){2}, 1, WK_I64), 0));
    tu_assert_close(u, (double[]){1, 13, 1}, 3, 0, 0);
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broadcast_destination), cmocka_unit_test(test_ordinary_views_writable),
        cmocka_unit_test(test_overlap_rule),          cmocka_unit_test(test_blob_strides),
        cmocka_unit_test(test_scatter_self_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
