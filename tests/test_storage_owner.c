/* Storage over memory wick did not allocate (wk_from_blob, issue 10 section
 * 4): zero copy, the release callback's exactly-once rule, read-only
 * storage, argument errors; and the -1 dim of wk_from_host. */
#include "testutil.h"
#include "tensor/tensor.h" /* wk__from_device_blob, storage->buf */
#include <stdlib.h>
#include <string.h>

typedef struct release_log {
    int calls;
    void *data;
    size_t nbytes;
} release_log;

static void on_release(void *ctx, void *data, size_t nbytes) {
    release_log *r = ctx;
    r->calls++;
    r->data = data;
    r->nbytes = nbytes;
}

static double get2(const wk_tensor *t, int64_t i, int64_t j) {
    double v = -1;
    TU_STATUS_OK(wk_get(t, (int64_t[]){i, j}, &v));
    return v;
}

static void test_zero_copy(void **state) {
    (void)state;
    float buf[6] = {0, 1, 2, 3, 4, 5};
    release_log r = {0};
    wk_tensor *t = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){2, 3}, 2, NULL, WK_F32, wk_cpu(), on_release, &r, 0));
    assert_false(wk_is_read_only(t));
    assert_true(wk_is_contiguous(t));
    tu_assert_close(t, (double[]){0, 1, 2, 3, 4, 5}, 6, 0, 0);
    /* the caller's writes are seen: no copy was made */
    buf[4] = 42;
    assert_true(get2(t, 1, 1) == 42);
    /* and wick's writes land in the caller's buffer */
    wk_tensor *row1 = TU_OK(wk_select(t, 0, 1));
    TU_STATUS_OK(wk_fill_(row1, 7));
    assert_true(buf[3] == 7 && buf[4] == 7 && buf[5] == 7 && buf[2] == 2);
    /* views keep the memory alive; release runs once, after the last one */
    wk_tensor *tr = TU_OK(wk_t(t));
    wk_tensor *rs = TU_OK(wk_reshape(t, (int64_t[]){3, -1}, 2));
    wk_tensor *ct = TU_OK(wk_contiguous(t));
    assert_true(wk_shares_storage(t, rs) && wk_shares_storage(t, ct));
    wk_tensor *cp = TU_OK(wk_copy(t)); /* a copy owns its own storage */
    assert_false(wk_shares_storage(t, cp));
    wk_tensor_free(t);
    wk_tensor_free(row1);
    wk_tensor_free(tr);
    wk_tensor_free(cp);
    assert_int_equal(r.calls, 0);
    assert_true(get2(rs, 2, 1) == 7);
    wk_tensor_free(rs);
    assert_int_equal(r.calls, 0);
    wk_tensor_free(ct);
    assert_int_equal(r.calls, 1);
    assert_ptr_equal(r.data, buf);
    assert_int_equal(r.nbytes, sizeof buf);
}

static void test_release_in_scopes(void **state) {
    (void)state;
    double buf[4] = {1, 2, 3, 4};
    release_log r = {0};
    wk_scope_begin();
    wk_tensor *t = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){4}, 1, NULL, WK_F64, wk_cpu(), on_release, &r, 0));
    wk_tensor *n = TU_OK(wk_narrow(t, 0, 1, 2));
    TU_OK(wk_unsqueeze(n, 0));
    wk_tensor *s = TU_OK(wk_sum_all(n));
    double v;
    TU_STATUS_OK(wk_item(s, &v));
    assert_true(v == 5);
    wk_scope_end();
    assert_int_equal(r.calls, 1);

    /* a kept view outlives the scope, and so does the memory */
    r.calls = 0;
    wk_scope_begin();
    t = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){2, 2}, 2, NULL, WK_F64, wk_cpu(), on_release, &r, 0));
    wk_tensor *kept = wk_keep(TU_OK(wk_transpose(t, 0, 1)));
    wk_tensor_free(t); /* an early free inside the scope: no double release at the end */
    wk_scope_end();
    assert_int_equal(r.calls, 0);
    assert_true(get2(kept, 0, 1) == 3);
    wk_tensor_free(kept);
    assert_int_equal(r.calls, 1);

    /* release may be NULL */
    wk_tensor *u = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){4}, 1, NULL, WK_F64, wk_cpu(), NULL, NULL, 0));
    wk_tensor_free(u);
    /* zero elements: NULL data is fine, release still runs once */
    r.calls = 0;
    wk_tensor *e = TU_OK(wk_from_blob(NULL, 0, (int64_t[]){0, 3}, 2, NULL, WK_F32, wk_cpu(), on_release, &r, 0));
    assert_int_equal(wk_numel(e), 0);
    wk_tensor_free(e);
    assert_int_equal(r.calls, 1);
}

static void test_strides(void **state) {
    (void)state;
    int32_t buf[12];
    for (int i = 0; i < 12; i++) buf[i] = i;
    /* rows of 4, the first 2 columns: a narrowed view of a caller's matrix */
    wk_tensor *a = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){3, 2}, 2, (int64_t[]){4, 1}, WK_I32, wk_cpu(),
                                      NULL, NULL, 0));
    assert_false(wk_is_contiguous(a));
    tu_assert_close(a, (double[]){0, 1, 4, 5, 8, 9}, 6, 0, 0);
    /* column-major 3x4 */
    wk_tensor *b = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){3, 4}, 2, (int64_t[]){1, 3}, WK_I32, wk_cpu(),
                                      NULL, NULL, 0));
    assert_true(get2(b, 2, 3) == 11 && get2(b, 1, 2) == 7);
    /* the last element reached is exactly the last one given */
    wk_tensor *c = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){2, 2}, 2, (int64_t[]){10, 1}, WK_I32, wk_cpu(),
                                      NULL, NULL, 0));
    assert_true(get2(c, 1, 1) == 11);
    /* stride 0: a broadcast read view of one row */
    wk_tensor *d = TU_OK(wk_from_blob(buf, 3 * sizeof(int32_t), (int64_t[]){5, 3}, 2, (int64_t[]){0, 1}, WK_I32,
                                      wk_cpu(), NULL, NULL, 0));
    wk_tensor *ds = TU_OK(wk_sum(d, (int[]){0}, 1, false));
    tu_assert_close(ds, (double[]){0, 5, 10}, 3, 0, 0);
    wk_tensor *xs[] = {a, b, c, d, ds};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

static void expect_blob_error(void *data, size_t nbytes, const int64_t *shape, int rank, const int64_t *strides,
                              wk_dtype dt, wk_device *dev, unsigned flags, wk_status st, const char *needle) {
    release_log r = {0};
    wk_clear_error();
    wk_tensor *t = wk_from_blob(data, nbytes, shape, rank, strides, dt, dev, on_release, &r, flags);
    if (t) fail_msg("wk_from_blob succeeded, expected %s", wk_status_name(st));
    if (wk_last_status() != st)
        fail_msg("got %s (%s), expected %s", wk_status_name(wk_last_status()), wk_last_error(), wk_status_name(st));
    assert_non_null(strstr(wk_last_error(), "wk_from_blob"));
    if (needle && !strstr(wk_last_error(), needle)) fail_msg("'%s' does not say '%s'", wk_last_error(), needle);
    assert_int_equal(r.calls, 0); /* a failed call never releases */
    wk_clear_error();
}

static void test_blob_errors(void **state) {
    (void)state;
    _Alignas(8) unsigned char raw[64];
    memset(raw, 0, sizeof raw);
    wk_device *cpu = wk_cpu();
    int64_t s4 = 4, s23[2] = {2, 3};
    /* misaligned for the dtype; aligned enough for u8 */
    expect_blob_error(raw + 1, 16, &s4, 1, NULL, WK_F32, cpu, 0, WK_ERR_ARG, "aligned");
    expect_blob_error(raw + 4, 32, &s4, 1, NULL, WK_F64, cpu, 0, WK_ERR_ARG, "aligned");
    wk_tensor_free(TU_OK(wk_from_blob(raw + 1, 4, &s4, 1, NULL, WK_U8, cpu, NULL, NULL, 0)));
    wk_tensor_free(TU_OK(wk_from_blob(raw + 2, 8, &s4, 1, NULL, WK_F16, cpu, NULL, NULL, 0)));
    /* too few bytes, contiguous or strided */
    expect_blob_error(raw, 23, s23, 2, NULL, WK_F32, cpu, 0, WK_ERR_ARG, "past");
    expect_blob_error(raw, 64, s23, 2, (int64_t[]){14, 1}, WK_F32, cpu, 0, WK_ERR_ARG, "past");
    expect_blob_error(raw, 64, s23, 2, (int64_t[]){1, 8}, WK_F32, cpu, 0, WK_ERR_ARG, "past");
    /* ...exactly enough is fine: element 13 * 4 + 2 ... ends at byte 64 */
    wk_tensor_free(TU_OK(wk_from_blob(raw, 64, s23, 2, (int64_t[]){13, 1}, WK_F32, cpu, NULL, NULL, 0)));
    /* negative strides would reach before data */
    expect_blob_error(raw, 64, s23, 2, (int64_t[]){-3, 1}, WK_F32, cpu, 0, WK_ERR_ARG, "negative");
    /* strides whose extent overflows int64 */
    expect_blob_error(raw, 64, s23, 2, (int64_t[]){INT64_MAX, 1}, WK_F32, cpu, 0, WK_ERR_ARG, NULL);
    expect_blob_error(raw, 64, (int64_t[]){3, 3}, 2, (int64_t[]){INT64_MAX / 2, INT64_MAX / 2}, WK_U8, cpu, 0,
                      WK_ERR_ARG, NULL);
    /* size-1 dims may carry any stride (never used) */
    wk_tensor *one = TU_OK(wk_from_blob(raw, 4, (int64_t[]){1, 4}, 2, (int64_t[]){INT64_MAX, 1}, WK_U8, cpu, NULL,
                                        NULL, 0));
    assert_int_equal(wk_strides(one)[0], 4); /* kept row-major: never used, never a hazard for later views */
    wk_tensor_free(one);
    /* bad shape, dtype, data, flags, device */
    expect_blob_error(raw, 64, (int64_t[]){-2}, 1, NULL, WK_F32, cpu, 0, WK_ERR_SHAPE, NULL);
    expect_blob_error(raw, 64, s23, WK_MAX_RANK + 1, NULL, WK_F32, cpu, 0, WK_ERR_SHAPE, NULL);
    expect_blob_error(raw, 64, s23, 2, NULL, WK_DTYPE_COUNT, cpu, 0, WK_ERR_DTYPE, NULL);
    expect_blob_error(NULL, 24, s23, 2, NULL, WK_F32, cpu, 0, WK_ERR_ARG, "NULL");
    expect_blob_error(raw, 64, s23, 2, NULL, WK_F32, cpu, 0x80, WK_ERR_ARG, "flags");
    expect_blob_error(raw, 64, s23, 2, NULL, WK_F32, NULL, 0, WK_ERR_ARG, "device");
    wk_device *g = wk_cuda_device_count() > 0 ? wk_cuda(0) : NULL;
    wk_clear_error();
    if (g) expect_blob_error(raw, 64, s23, 2, NULL, WK_F32, g, 0, WK_ERR_DEVICE, "CPU");
}

/* Every in-place write into read-only storage fails naming the op and
 * leaves the bytes as they were. */
static void test_read_only(void **state) {
    (void)state;
    float buf[6] = {1, 2, 3, 4, 5, 6}, saved[6];
    memcpy(saved, buf, sizeof buf);
    release_log r = {0};
    wk_tensor *ro = TU_OK(wk_from_blob(buf, sizeof buf, (int64_t[]){2, 3}, 2, NULL, WK_F32, wk_cpu(), on_release, &r,
                                       WK_BLOB_READ_ONLY));
    wk_tensor *view = TU_OK(wk_narrow(ro, 1, 1, 2));
    assert_true(wk_is_read_only(ro) && wk_is_read_only(view));
    assert_false(wk_is_read_only(NULL));
    wk_tensor *src = TU_OK(wk_zeros((int64_t[]){2, 3}, 2, WK_F32, wk_cpu()));
    wk_tensor *src2 = TU_OK(wk_zeros((int64_t[]){2, 2}, 2, WK_F32, wk_cpu()));
    wk_tensor *row = TU_OK(wk_zeros((int64_t[]){1, 3}, 2, WK_F32, wk_cpu()));
    wk_tensor *ids = tu_make((double[]){0, 1, 0}, (int64_t[]){1, 3}, 2, WK_I64);
    for (int v = 0; v < 2; v++) {
        wk_tensor *d = v ? view : ro;
        wk_tensor *s = v ? src2 : src;
        struct { const char *op; wk_status st; } got[] = {
            {"wk_fill_", wk_fill_(d, 9)},
            {"wk_zero_", wk_zero_(d)},
            {"wk_one_", wk_one_(d)},
            {"wk_copy_", wk_copy_(d, s)},
            {"wk_slice_set", wk_slice_set(ro, row, 0, 1)},
            {"wk_scatter_", wk_scatter_(d, ids, row, 0)},
            {"wk_scatter_add_", wk_scatter_add_(d, ids, row, 0)},
        };
        for (size_t i = 0; i < sizeof got / sizeof got[0]; i++)
            if (got[i].st != WK_ERR_ARG) fail_msg("%s returned %s", got[i].op, wk_status_name(got[i].st));
        /* each message names its op and the cause (checked one at a time) */
        wk_clear_error();
        assert_int_equal(wk_scatter_add_(d, ids, row, 0), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "wk_scatter_add_"));
        assert_non_null(strstr(wk_last_error(), "read-only"));
        wk_clear_error();
        assert_int_equal(wk_one_(d), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "wk_one_:"));
        wk_clear_error();
        assert_int_equal(wk_slice_set(d, row, 0, 1), v ? WK_ERR_SHAPE : WK_ERR_ARG);
        wk_clear_error();
        assert_memory_equal(buf, saved, sizeof buf);
    }
    /* reads, copies and ops with a read-only input all work */
    tu_assert_close(ro, (double[]){1, 2, 3, 4, 5, 6}, 6, 0, 0);
    wk_tensor *sum = TU_OK(wk_add(ro, ro));
    tu_assert_close(sum, (double[]){2, 4, 6, 8, 10, 12}, 6, 0, 0);
    wk_tensor *rt = TU_OK(wk_t(ro));
    wk_tensor *mm = TU_OK(wk_matmul(ro, rt));
    tu_assert_close(mm, (double[]){14, 32, 32, 77}, 4, 0, 0);
    wk_tensor *cp = TU_OK(wk_copy(view));
    assert_false(wk_is_read_only(cp));
    TU_STATUS_OK(wk_fill_(cp, 0)); /* the copy is writable */
    TU_STATUS_OK(wk_copy_(src, ro)); /* read-only as a source */
    tu_assert_close(src, (double[]){1, 2, 3, 4, 5, 6}, 6, 0, 0);
    wk_tensor *sc = TU_OK(wk_scatter(ro, ids, row, 0)); /* out of place: a fresh result */
    tu_assert_close(sc, (double[]){0, 2, 0, 4, 0, 6}, 6, 0, 0);
    wk_tensor *h = TU_OK(wk_to_dtype(ro, WK_F16));
    tu_assert_close(h, (double[]){1, 2, 3, 4, 5, 6}, 6, 0, 0);
    wk_tensor *g = NULL, *back = NULL;
    if (wk_cuda_device_count() > 0) { /* read-only host memory can be copied to a GPU */
        g = TU_OK(wk_to_device(view, wk_cuda(0)));
        back = TU_OK(wk_to_device(g, wk_cpu()));
        tu_assert_close(back, (double[]){2, 3, 5, 6}, 4, 0, 0);
    }
    wk_clear_error();
    assert_memory_equal(buf, saved, sizeof buf);
    wk_tensor *xs[] = {ro, view, src, src2, row, ids, sum, rt, mm, cp, sc, h, g, back};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
    assert_int_equal(r.calls, 1);
}

static void test_from_host_infer(void **state) {
    (void)state;
    const float v[6] = {0, 1, 2, 3, 4, 5};
    wk_tensor *a = TU_OK(wk_from_host(v, sizeof v, (int64_t[]){-1, 3}, 2, WK_F32, wk_cpu()));
    tu_assert_shape(a, (int64_t[]){2, 3}, 2);
    tu_assert_close(a, (double[]){0, 1, 2, 3, 4, 5}, 6, 0, 0);
    wk_tensor *b = TU_OK(wk_from_host(v, sizeof v, (int64_t[]){1, -1, 2}, 3, WK_F32, wk_cpu()));
    tu_assert_shape(b, (int64_t[]){1, 3, 2}, 3);
    wk_tensor *c = TU_OK(wk_from_host(v, sizeof v, (int64_t[]){-1}, 1, WK_U8, wk_cpu()));
    tu_assert_shape(c, (int64_t[]){24}, 1);
    wk_tensor *e = TU_OK(wk_from_host(NULL, 0, (int64_t[]){-1, 3}, 2, WK_F32, wk_cpu()));
    tu_assert_shape(e, (int64_t[]){0, 3}, 2);
    /* no whole size fits, two holes, a zero dim beside the hole, other negatives */
    TU_FAILS(wk_from_host(v, sizeof v, (int64_t[]){-1, 4}, 2, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, 22, (int64_t[]){-1}, 1, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, sizeof v, (int64_t[]){-1, -1}, 2, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, 0, (int64_t[]){0, -1}, 2, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, sizeof v, (int64_t[]){-2, 3}, 2, WK_F32, wk_cpu()), WK_ERR_SHAPE);
    TU_FAILS(wk_from_host(v, sizeof v, (int64_t[]){-1, 3}, 2, WK_DTYPE_COUNT, wk_cpu()), WK_ERR_DTYPE);
    TU_FAILS(wk_from_host(v, sizeof v, (int64_t[]){6}, 1, WK_F64, wk_cpu()), WK_ERR_SHAPE); /* no hole: exact */
    TU_FAILS(wk_from_host(v, sizeof v, NULL, 2, WK_F32, wk_cpu()), WK_ERR_ARG);
    wk_tensor *xs[] = {a, b, c, e};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) wk_tensor_free(xs[i]);
}

/* wk__from_device_blob (internal; the Python binding's DLPack import):
 * wk_from_blob over a GPU's memory. Without a GPU only its refusals run. */
static void test_device_blob(void **state) {
    (void)state;
    float host[6] = {0, 1, 2, 3, 4, 5};
    release_log r = {0};
    const int64_t s23[] = {2, 3};
    TU_FAILS(wk__from_device_blob(host, sizeof host, s23, 2, NULL, WK_F32, wk_cpu(), on_release, &r, 0),
             WK_ERR_DEVICE);
    TU_FAILS(wk__from_device_blob(host, sizeof host, s23, 2, NULL, WK_F32, NULL, on_release, &r, 0), WK_ERR_ARG);
    wk_clear_error();
    if (wk_cuda_device_count() > 0) {
        wk_device *g = wk_cuda(0);
        wk_tensor *own = TU_OK(wk_from_host(host, sizeof host, s23, 2, WK_F32, g));
        /* the transpose of wick's own device memory, wrapped as foreign */
        wk_tensor *b = TU_OK(wk__from_device_blob(own->storage->buf, sizeof host, (int64_t[]){3, 2}, 2,
                                                  (int64_t[]){1, 3}, WK_F32, g, on_release, &r, 0));
        tu_assert_close(b, (double[]){0, 3, 1, 4, 2, 5}, 6, 0, 0);
        wk_tensor *col = TU_OK(wk_select(b, 1, 1)); /* own's row 1 */
        TU_STATUS_OK(wk_fill_(col, 9));
        tu_assert_close(own, (double[]){0, 1, 2, 9, 9, 9}, 6, 0, 0);
        TU_FAILS(wk__from_device_blob(own->storage->buf, 8, s23, 2, NULL, WK_F32, g, on_release, &r, 0), WK_ERR_ARG);
        wk_tensor_free(b);
        assert_int_equal(r.calls, 0);
        wk_tensor_free(col);
        assert_int_equal(r.calls, 1);
        assert_ptr_equal(r.data, own->storage->buf);
        wk_tensor_free(own);
    }
    assert_int_equal(r.calls, wk_cuda_device_count() > 0 ? 1 : 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_copy),  cmocka_unit_test(test_release_in_scopes),
        cmocka_unit_test(test_strides),    cmocka_unit_test(test_blob_errors),
        cmocka_unit_test(test_read_only),  cmocka_unit_test(test_from_host_infer),
        cmocka_unit_test(test_device_blob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
