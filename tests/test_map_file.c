/* The mapped-file helper under the model loaders (src/io/map_file.c): tensors
 * are zero-copy, read-only views that keep the map alive after the loader
 * lets go; misaligned data is copied; out-of-file ranges, partial blocks and
 * overflowing shapes are WK_ERR_FORMAT, never a crash. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/map_file.h"
#include "base/blocks.h"

static char g_path[256];

static void write_file(const void *p, size_t n) {
    snprintf(g_path, sizeof g_path, "%s/wick_map_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(g_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
}

static void test_zero_copy_outlives_loader(void **state) {
    (void)state;
    float v[9] = {0};
    for (int i = 0; i < 9; i++) v[i] = (float)i * 1.5f;
    write_file(v, sizeof v);
    wk__map *m = wk__map_open("test", g_path);
    assert_non_null(m);
    assert_int_equal(wk__map_size(m), sizeof v);
    int64_t shape[2] = {2, 4};
    uint64_t copied = wk__map_tensor_copied();
    wk_tensor *t = wk__map_tensor("test", "t", m, 4, WK_F32, shape, 2); /* floats 1..8 */
    assert_non_null(t);
    assert_int_equal(wk__map_tensor_copied(), copied);
    assert_true(wk_is_read_only(t));
    wk__map_release(m); /* the loader lets go; the tensor keeps the map */
    unlink(g_path);
    float out[8];
    assert_int_equal(wk_to_host(t, out, sizeof out), WK_OK);
    for (int i = 0; i < 8; i++) assert_true(out[i] == (float)(i + 1) * 1.5f);
    wk_tensor *one = wk_ones(shape, 2, WK_F32, wk_cpu());
    assert_int_equal(wk_copy_(t, one), WK_ERR_ARG); /* read-only */
    wk_clear_error();
    wk_tensor_free(one);
    wk_tensor_free(t);
}

static void test_misaligned_is_copied(void **state) {
    (void)state;
    uint8_t buf[1 + 3 * 8];
    double d[3] = {1.25, -2.5, 3.75};
    buf[0] = 7;
    memcpy(buf + 1, d, sizeof d);
    write_file(buf, sizeof buf);
    wk__map *m = wk__map_open("test", g_path);
    assert_non_null(m);
    int64_t shape[1] = {3};
    uint64_t copied = wk__map_tensor_copied();
    wk_tensor *t = wk__map_tensor("test", "d", m, 1, WK_F64, shape, 1);
    assert_non_null(t);
    assert_int_equal(wk__map_tensor_copied(), copied + 1);
    wk__map_release(m);
    unlink(g_path);
    double out[3];
    assert_int_equal(wk_to_host(t, out, sizeof out), WK_OK);
    assert_memory_equal(out, d, sizeof d);
    wk_tensor_free(t);
}

static void test_hostile_ranges(void **state) {
    (void)state;
    uint8_t buf[64] = {0};
    write_file(buf, sizeof buf);
    wk__map *m = wk__map_open("test", g_path);
    assert_non_null(m);
    int64_t s1[1] = {17};
    assert_null(wk__map_tensor("test", "x", m, 0, WK_F32, s1, 1)); /* 68 > 64 bytes */
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    int64_t s2[1] = {1};
    assert_null(wk__map_tensor("test", "x", m, UINT64_MAX - 1, WK_F32, s2, 1)); /* offset wraps */
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    int64_t big[3] = {INT64_MAX / 2, 4, 2};
    assert_null(wk__map_tensor("test", "x", m, 0, WK_U8, big, 3));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    int64_t neg[1] = {-4};
    assert_null(wk__map_tensor("test", "x", m, 0, WK_U8, neg, 1));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    int64_t part[2] = {1, 16}; /* half a q8_0 block per row */
    assert_null(wk__map_tensor("test", "x", m, 0, WK_Q8_0, part, 2));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    int64_t rows[2] = {1, 32}; /* one whole q8_0 block: 34 bytes */
    wk_tensor *q = wk__map_tensor("test", "q", m, 0, WK_Q8_0, rows, 2);
    assert_non_null(q);
    assert_int_equal(wk_tensor_dtype(q), WK_Q8_0);
    /* element ops refuse block dtypes */
    assert_null(wk_exp(q));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    wk_clear_error();
    wk_tensor_free(q);
    wk__map_release(m);
    unlink(g_path);
    assert_null(wk__map_open("test", "/nonexistent/wick.gguf"));
    assert_int_equal(wk_last_status(), WK_ERR_IO);
    wk_clear_error();
}

static void test_block_dtype_names(void **state) {
    (void)state;
    wk_dtype dt;
    assert_true(wk_dtype_from_name("Q4_K", &dt) && dt == WK_Q4_K);
    assert_true(wk_dtype_from_name("q4_k", &dt) && dt == WK_Q4_K);
    assert_true(wk_dtype_from_name("IQ4_NL", &dt) && dt == WK_IQ4_NL);
    assert_false(wk_dtype_from_name("F32", &dt)); /* element names stay exact */
    assert_string_equal(wk_dtype_name(WK_Q6_K), "q6_K");
    assert_true(wk_dtype_is_quantized(WK_Q8_0));
    assert_false(wk_dtype_is_quantized(WK_F8E4M3));
    assert_int_equal(wk_dtype_size(WK_Q4_0), 0);
    assert_int_equal(wk_dtype_info_of(WK_Q5_K)->block_bytes, sizeof(wk_block_q5_K));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_copy_outlives_loader),
        cmocka_unit_test(test_misaligned_is_copied),
        cmocka_unit_test(test_hostile_ranges),
        cmocka_unit_test(test_block_dtype_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
