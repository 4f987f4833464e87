/* The dtype descriptor table (issue 10, section 3) and the storage sizing
 * helpers that use its block geometry, including a synthetic GGML-like
 * block of 32 elements in 18 bytes (no such dtype exists yet). */
#include "testutil.h"
#include "base/dtype.h"
#include <string.h>

static void test_table(void **state) {
    (void)state;
    static const struct { wk_dtype dt; const char *name; uint32_t bytes; bool fl, sg; } want[] = {
        {WK_U8, "u8", 1, false, false},      {WK_U32, "u32", 4, false, false}, {WK_I16, "i16", 2, false, true},
        {WK_I32, "i32", 4, false, true},     {WK_I64, "i64", 8, false, true},  {WK_BF16, "bf16", 2, true, true},
        {WK_F16, "f16", 2, true, true},      {WK_F32, "f32", 4, true, true},   {WK_F64, "f64", 8, true, true},
        {WK_F8E4M3, "f8e4m3", 1, true, true},
    };
    assert_int_equal(sizeof want / sizeof want[0], WK_ELEM_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const wk_dtype_info *di = wk_dtype_info_of(want[i].dt);
        assert_non_null(di);
        assert_string_equal(di->name, want[i].name);
        assert_string_equal(wk_dtype_name(want[i].dt), want[i].name);
        assert_int_equal(di->block_elems, 1);
        assert_int_equal(di->block_bytes, want[i].bytes);
        assert_int_equal(di->align, want[i].bytes);
        assert_int_equal(wk_dtype_size(want[i].dt), want[i].bytes);
        assert_int_equal(di->is_float, want[i].fl);
        assert_int_equal(di->is_int, !want[i].fl);
        assert_int_equal(di->is_signed, want[i].sg);
        assert_int_equal(wk_dtype_is_float(want[i].dt), want[i].fl);
        assert_int_equal(wk_dtype_is_int(want[i].dt), !want[i].fl);
        wk_dtype back = WK_DTYPE_COUNT;
        assert_true(wk_dtype_from_name(want[i].name, &back));
        assert_int_equal(back, want[i].dt);
        assert_int_equal(wk__dtype_elem_bytes(want[i].dt), want[i].bytes);
    }
    /* the GGML block dtypes: ggml's names and block geometry */
    static const struct { wk_dtype dt; const char *name; uint32_t elems, bytes; } blk[] = {
        {WK_Q4_0, "q4_0", 32, 18},   {WK_Q4_1, "q4_1", 32, 20},    {WK_Q5_0, "q5_0", 32, 22},
        {WK_Q5_1, "q5_1", 32, 24},   {WK_Q8_0, "q8_0", 32, 34},    {WK_Q8_1, "q8_1", 32, 36},
        {WK_Q2_K, "q2_K", 256, 84},  {WK_Q3_K, "q3_K", 256, 110},  {WK_Q4_K, "q4_K", 256, 144},
        {WK_Q5_K, "q5_K", 256, 176}, {WK_Q6_K, "q6_K", 256, 210},  {WK_Q8_K, "q8_K", 256, 292},
        {WK_IQ4_NL, "iq4_nl", 32, 18}, {WK_IQ4_XS, "iq4_xs", 256, 136},
    };
    assert_int_equal(WK_ELEM_DTYPE_COUNT + sizeof blk / sizeof blk[0], WK_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
        const wk_dtype_info *di = wk_dtype_info_of(blk[i].dt);
        assert_non_null(di);
        assert_string_equal(di->name, blk[i].name);
        assert_int_equal(di->block_elems, blk[i].elems);
        assert_int_equal(di->block_bytes, blk[i].bytes);
        assert_int_equal(wk_dtype_size(blk[i].dt), 0);
        assert_true(wk_dtype_is_quantized(blk[i].dt));
        wk_dtype back = WK_DTYPE_COUNT;
        assert_true(wk_dtype_from_name(blk[i].name, &back));
        assert_int_equal(back, blk[i].dt);
    }
    assert_null(wk_dtype_info_of(WK_DTYPE_COUNT));
    assert_null(wk_dtype_info_of((wk_dtype)-1));
    assert_int_equal(wk_dtype_size(WK_DTYPE_COUNT), 0);
    assert_int_equal(wk__dtype_elem_bytes(WK_DTYPE_COUNT), 0);
    assert_false(wk_dtype_is_int(WK_DTYPE_COUNT));
}

/* 32 elements in 18 bytes: GGML's q4_0 geometry. */
static const wk_dtype_info k_q = {.name = "q_test", .block_elems = 32, .block_bytes = 18, .align = 2,
                                  .is_float = true, .is_signed = true};

static void test_block_sizing(void **state) {
    (void)state;
    size_t b = 12345;
    assert_int_equal(wk__dtype_info_bytes(&k_q, 0, &b), WK_OK);
    assert_int_equal(b, 0);
    assert_int_equal(wk__dtype_info_bytes(&k_q, 32, &b), WK_OK);
    assert_int_equal(b, 18);
    assert_int_equal(wk__dtype_info_bytes(&k_q, 4096, &b), WK_OK);
    assert_int_equal(b, 128 * 18);
    /* a row of 11008 elements (344 blocks) */
    assert_int_equal(wk__dtype_info_bytes(&k_q, 11008, &b), WK_OK);
    assert_int_equal(b, 344 * 18);
    b = 777;
    assert_int_equal(wk__dtype_info_bytes(&k_q, 31, &b), WK_ERR_SHAPE);
    assert_int_equal(wk__dtype_info_bytes(&k_q, 33, &b), WK_ERR_SHAPE);
    assert_int_equal(wk__dtype_info_bytes(&k_q, 4095, &b), WK_ERR_SHAPE);
    assert_int_equal(wk__dtype_info_bytes(&k_q, -32, &b), WK_ERR_SHAPE);
    assert_int_equal(b, 777); /* untouched on failure */
    /* the inverse */
    int64_t n = -5;
    assert_int_equal(wk__dtype_info_elems(&k_q, 36, &n), WK_OK);
    assert_int_equal(n, 64);
    assert_int_equal(wk__dtype_info_elems(&k_q, 0, &n), WK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(wk__dtype_info_elems(&k_q, 35, &n), WK_ERR_SHAPE);
    assert_int_equal(wk__dtype_info_elems(&k_q, 17, &n), WK_ERR_SHAPE);
    /* empty or missing descriptors */
    const wk_dtype_info empty = {.name = "empty"};
    assert_int_equal(wk__dtype_info_bytes(&empty, 32, &b), WK_ERR_DTYPE);
    assert_int_equal(wk__dtype_info_bytes(NULL, 32, &b), WK_ERR_DTYPE);
    assert_int_equal(wk__dtype_info_elems(NULL, 32, &n), WK_ERR_DTYPE);
}

static void test_overflow(void **state) {
    (void)state;
    size_t b;
    /* 2^40 blocks of 2^32 - 1 bytes do not fit in size_t (64-bit) */
    const wk_dtype_info huge = {.name = "huge", .block_elems = 32, .block_bytes = UINT32_MAX, .align = 1};
    assert_int_equal(wk__dtype_info_bytes(&huge, (int64_t)32 << 40, &b), WK_ERR_OOM);
    assert_int_equal(wk__dtype_info_bytes(&huge, 32, &b), WK_OK);
    assert_int_equal(b, UINT32_MAX);
    /* a block exactly at the limit: SIZE_MAX / 8 elements of 8 bytes fit, one more does not */
    const wk_dtype_info *f64 = wk_dtype_info_of(WK_F64);
    if (SIZE_MAX / 8 <= (size_t)INT64_MAX) {
        int64_t lim = (int64_t)(SIZE_MAX / 8);
        assert_int_equal(wk__dtype_info_bytes(f64, lim, &b), WK_OK);
        assert_int_equal(b, (size_t)lim * 8);
        assert_int_equal(wk__dtype_info_bytes(f64, lim + 1, &b), WK_ERR_OOM);
    }
    /* elements count past int64 */
    const wk_dtype_info tiny = {.name = "tiny", .block_elems = 1u << 31, .block_bytes = 1, .align = 1};
    int64_t n;
    assert_int_equal(wk__dtype_info_elems(&tiny, (size_t)1 << 40, &n), WK_ERR_SHAPE);
    /* the recording wrapper names the op */
    wk_clear_error();
    assert_int_equal(wk__dtype_bytes_for("my_op", WK_F64, INT64_MAX, &b), WK_ERR_OOM);
    assert_non_null(strstr(wk_last_error(), "my_op"));
    assert_int_equal(wk__dtype_bytes_for("my_op", WK_DTYPE_COUNT, 4, &b), WK_ERR_DTYPE);
    wk_clear_error();
    assert_int_equal(wk__dtype_bytes_for("my_op", WK_I16, 5, &b), WK_OK);
    assert_int_equal(b, 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_block_sizing),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
