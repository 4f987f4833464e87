/* Hostile GGUF images (src/io/gguf_read.c): every malformed header is a clean
 * WK_ERR_FORMAT (WK_ERR_DTYPE for an unknown tensor type) naming the cause,
 * never a crash, an out-of-bounds read (run under ASan) or an allocation
 * sized by a hostile count; truncation at every byte of a valid image fails. */
#include "testutil.h"
#include <stdio.h>
#include <string.h>

#include "test_gguf_image.h"
#include "wick/gguf.h"

/* Opens and must fail with st and a message containing needle. */
static void expect_fail(gi *g, wk_status st, const char *needle) {
    wk_clear_error();
    wk_gguf *r = wk_gguf_open_bytes(g->b, g->n);
    if (r || wk_last_status() != st || !strstr(wk_last_error(), needle)) {
        fprintf(stderr, "expected %s containing '%s', got %s: '%s'\n", wk_status_name(st), needle,
                r ? "success" : wk_status_name(wk_last_status()), wk_last_error());
        wk_gguf_close(r);
        fail();
    }
    wk_clear_error();
    gi_free(g);
}

static wk_gguf *expect_open(gi *g) {
    wk_clear_error();
    wk_gguf *r = wk_gguf_open_bytes(g->b, g->n);
    if (!r) fprintf(stderr, "open failed: %s\n", wk_last_error());
    assert_non_null(r);
    gi_free(g);
    return r;
}

/* A valid v3 image that ends exactly at its last tensor's last byte: two
 * kvs, a string array, f32 "a" (2, 4) at 0 and q8_0 "b" (1, 32) at 32. */
static void valid_image(gi *g, int version) {
    gi_header(g, version, 2, 3);
    gi_kv_u32(g, "general.alignment", 32);
    gi_kv_str(g, "general.name", "tiny");
    gi_str(g, "tok.list");
    gi_u32(g, 9);
    gi_u32(g, 8);
    gi_len(g, 3);
    gi_str(g, "x");
    gi_str(g, "");
    gi_str(g, "yz");
    gi_tensor(g, "a", 2, (const uint64_t[]){4, 2}, 0, 0);
    gi_tensor(g, "b", 2, (const uint64_t[]){32, 1}, 8, 32);
    gi_pad(g, 32);
    for (int i = 0; i < 8; i++) {
        float f = (float)i;
        gi_put(g, &f, 4);
    }
    for (int i = 0; i < 34; i++) gi_u8(g, (uint8_t)(i * 7));
}

static void test_valid_image_every_version(void **state) {
    (void)state;
    for (int v = 1; v <= 3; v++) {
        gi g = {0};
        valid_image(&g, v);
        wk_gguf *r = expect_open(&g);
        assert_int_equal(wk_gguf_version(r), v);
        assert_int_equal(wk_gguf_tensor_count(r), 2);
        assert_int_equal(wk_gguf_kv_count(r), 3);
        const char *s;
        uint64_t n;
        assert_int_equal(wk_gguf_array_string(r, wk_gguf_find_key(r, "tok.list"), 2, &s, &n), WK_OK);
        assert_int_equal(n, 2);
        assert_memory_equal(s, "yz", 2);
        wk_tensor *a = TU_OK(wk_gguf_tensor(r, "a"));
        const double want[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        tu_assert_close(a, want, 8, 0, 0);
        wk_tensor_free(a);
        wk_tensor *b = TU_OK(wk_gguf_tensor(r, "b"));
        assert_int_equal(wk_tensor_dtype(b), WK_Q8_0);
        wk_tensor_free(b);
        wk_gguf_close(r);
    }
}

static void test_truncation_at_every_byte(void **state) {
    (void)state;
    for (int v = 1; v <= 3; v++) {
        gi g = {0};
        valid_image(&g, v);
        for (size_t cut = 0; cut < g.n; cut++) {
            wk_clear_error();
            wk_gguf *r = wk_gguf_open_bytes(g.b, cut);
            if (r || wk_last_status() != WK_ERR_FORMAT || !wk_last_error()[0]) {
                fprintf(stderr, "v%d cut at %zu of %zu: %s '%s'\n", v, cut, g.n, r ? "opened" : "", wk_last_error());
                fail();
            }
        }
        wk_clear_error();
        gi_free(&g);
    }
}

static void test_bad_magic_version_endianness(void **state) {
    (void)state;
    gi g = {0};
    gi_put(&g, "GGML", 4);
    gi_u32(&g, 3);
    expect_fail(&g, WK_ERR_FORMAT, "magic");
    gi_header(&g, 0, 0, 0);
    expect_fail(&g, WK_ERR_FORMAT, "version 0");
    gi_header(&g, 4, 0, 0);
    expect_fail(&g, WK_ERR_FORMAT, "version 4");
    /* a big-endian v3 header: the version reads as 0x03000000 */
    gi_put(&g, "GGUF", 4);
    gi_u32(&g, 0x03000000u);
    gi_u64(&g, 0);
    gi_u64(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "big-endian");
    /* an empty, valid v3 file opens */
    gi_header(&g, 3, 0, 0);
    wk_gguf *r = expect_open(&g);
    assert_int_equal(wk_gguf_kv_count(r), 0);
    wk_gguf_close(r);
}

static void test_hostile_counts_and_lengths(void **state) {
    (void)state;
    gi g = {0};
    gi_header(&g, 3, UINT64_MAX, 1);
    expect_fail(&g, WK_ERR_FORMAT, "cannot fit");
    gi_header(&g, 3, 0, UINT64_MAX / 2);
    expect_fail(&g, WK_ERR_FORMAT, "cannot fit");
    gi_header(&g, 1, 0xFFFFFFFFu, 0xFFFFFFFFu);
    expect_fail(&g, WK_ERR_FORMAT, "cannot fit");
    /* a key whose length is 2^64 - 1 */
    gi_header(&g, 3, 0, 1);
    gi_u64(&g, UINT64_MAX);
    gi_put(&g, "abcdefgh", 8);
    expect_fail(&g, WK_ERR_FORMAT, "truncated");
    /* a string value longer than the file */
    gi_header(&g, 3, 0, 1);
    gi_str(&g, "k");
    gi_u32(&g, 8);
    gi_u64(&g, 1000);
    gi_put(&g, "short", 5);
    expect_fail(&g, WK_ERR_FORMAT, "truncated");
    /* numeric and string arrays with hostile lengths */
    uint32_t elems[] = {4, 12, 8};
    for (int k = 0; k < 3; k++) {
        gi_header(&g, 3, 0, 1);
        gi_str(&g, "arr");
        gi_u32(&g, 9);
        gi_u32(&g, elems[k]);
        gi_u64(&g, UINT64_MAX / 3);
        gi_u64(&g, 0);
        expect_fail(&g, WK_ERR_FORMAT, "does not fit");
    }
}

static void test_bad_keys_and_types(void **state) {
    (void)state;
    gi g = {0};
    const char *bad[] = {"\xC0\x80", "a\xED\xA0\x80", "ab\xE2\x82", "\xF5\x80\x80\x80", "\xFF", "a\0b"};
    const size_t badlen[] = {2, 4, 4, 4, 1, 3};
    for (int k = 0; k < 6; k++) {
        gi_header(&g, 3, 0, 1);
        gi_strn(&g, bad[k], badlen[k]);
        gi_u32(&g, 0);
        gi_u8(&g, 1);
        expect_fail(&g, WK_ERR_FORMAT, "UTF-8");
    }
    gi_header(&g, 3, 0, 1); /* empty key */
    gi_str(&g, "");
    gi_u32(&g, 0);
    gi_u8(&g, 1);
    gi_u8(&g, 0); /* the count bound assumes a 1-byte key: pass it */
    expect_fail(&g, WK_ERR_FORMAT, "empty");
    gi_header(&g, 3, 0, 2);
    gi_kv_u32(&g, "dup", 1);
    gi_kv_u32(&g, "dup", 2);
    expect_fail(&g, WK_ERR_FORMAT, "duplicate key 'dup'");
    gi_header(&g, 3, 0, 1);
    gi_str(&g, "k");
    gi_u32(&g, 13);
    gi_u64(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "unknown value type 13");
    gi_header(&g, 3, 0, 1);
    gi_str(&g, "k");
    gi_u32(&g, 9);
    gi_u32(&g, 77);
    gi_u64(&g, 1);
    gi_u64(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "unknown element type 77");
    gi_header(&g, 3, 0, 1); /* an array of arrays */
    gi_str(&g, "k");
    gi_u32(&g, 9);
    gi_u32(&g, 9);
    gi_u64(&g, 1);
    gi_u32(&g, 4);
    gi_u64(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "nested");
    gi_header(&g, 3, 0, 1);
    gi_str(&g, "flag");
    gi_u32(&g, 7);
    gi_u8(&g, 2);
    expect_fail(&g, WK_ERR_FORMAT, "0 or 1");
    gi_header(&g, 3, 0, 1);
    gi_str(&g, "flags");
    gi_u32(&g, 9);
    gi_u32(&g, 7);
    gi_u64(&g, 2);
    gi_u8(&g, 1);
    gi_u8(&g, 9);
    expect_fail(&g, WK_ERR_FORMAT, "0 or 1");
}

static void test_bad_alignment(void **state) {
    (void)state;
    gi g = {0};
    uint32_t aligns[] = {0, 3, 48, 0x80000001u};
    for (int k = 0; k < 4; k++) {
        gi_header(&g, 3, 0, 1);
        gi_kv_u32(&g, "general.alignment", aligns[k]);
        expect_fail(&g, WK_ERR_FORMAT, "power of two");
    }
    gi_header(&g, 3, 0, 1);
    gi_kv_str(&g, "general.alignment", "32");
    expect_fail(&g, WK_ERR_FORMAT, "must be u32");
    /* alignment 64 is honoured: a tensor at offset 32 is then misaligned */
    gi_header(&g, 3, 1, 1);
    gi_kv_u32(&g, "general.alignment", 64);
    gi_tensor(&g, "t", 1, (const uint64_t[]){8}, 0, 32);
    gi_pad(&g, 64);
    for (int i = 0; i < 64; i++) gi_u8(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "not aligned to 64");
}

/* One tensor of n_dims dims ne and type at off, then data_bytes of data. */
static void one_tensor(gi *g, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off,
                       size_t data_bytes) {
    gi_header(g, 3, 1, 0);
    gi_tensor(g, name, n_dims, ne, type, off);
    gi_pad(g, 32);
    for (size_t i = 0; i < data_bytes; i++) gi_u8(g, (uint8_t)i);
}

static void test_hostile_tensor_infos(void **state) {
    (void)state;
    gi g = {0};
    one_tensor(&g, "t", 5, (const uint64_t[]){1, 1, 1, 1, 1}, 0, 0, 4);
    expect_fail(&g, WK_ERR_FORMAT, "5 dims");
    one_tensor(&g, "t", 4, (const uint64_t[]){1u << 20, 1u << 20, 1u << 20, 1u << 20}, 0, 0, 4);
    expect_fail(&g, WK_ERR_FORMAT, "overflow");
    one_tensor(&g, "t", 2, (const uint64_t[]){UINT64_MAX, 1}, 0, 0, 4);
    expect_fail(&g, WK_ERR_FORMAT, "overflow");
    one_tensor(&g, "t", 1, (const uint64_t[]){8}, 0, 32, 32);
    expect_fail(&g, WK_ERR_FORMAT, "outside");
    one_tensor(&g, "t", 1, (const uint64_t[]){8}, 0, UINT64_MAX - 31, 32);
    expect_fail(&g, WK_ERR_FORMAT, "outside");
    one_tensor(&g, "t", 1, (const uint64_t[]){8}, 0, 4, 64);
    expect_fail(&g, WK_ERR_FORMAT, "not aligned");
    one_tensor(&g, "t", 1, (const uint64_t[]){16}, 2, 0, 64); /* half a q4_0 block */
    expect_fail(&g, WK_ERR_FORMAT, "not whole q4_0 blocks");
    one_tensor(&g, "t", 1, (const uint64_t[]){8}, 4, 0, 64); /* q4_2, removed from ggml */
    expect_fail(&g, WK_ERR_DTYPE, "unknown ggml type 4");
    one_tensor(&g, "t", 1, (const uint64_t[]){8}, 1000, 0, 64);
    expect_fail(&g, WK_ERR_DTYPE, "unknown ggml type 1000");
    one_tensor(&g, "\xC3\x28", 1, (const uint64_t[]){8}, 0, 0, 32);
    expect_fail(&g, WK_ERR_FORMAT, "UTF-8");

    /* overlapping and duplicate tensors */
    gi_header(&g, 3, 2, 0);
    gi_tensor(&g, "a", 1, (const uint64_t[]){16}, 0, 0);
    gi_tensor(&g, "b", 1, (const uint64_t[]){8}, 0, 32);
    gi_pad(&g, 32);
    for (int i = 0; i < 96; i++) gi_u8(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "overlap");
    gi_header(&g, 3, 2, 0);
    gi_tensor(&g, "a", 1, (const uint64_t[]){8}, 0, 0);
    gi_tensor(&g, "a", 1, (const uint64_t[]){8}, 0, 32);
    gi_pad(&g, 32);
    for (int i = 0; i < 64; i++) gi_u8(&g, 0);
    expect_fail(&g, WK_ERR_FORMAT, "duplicate tensor name 'a'");
    /* tensors listed out of offset order are fine when disjoint */
    gi_header(&g, 3, 2, 0);
    gi_tensor(&g, "late", 1, (const uint64_t[]){8}, 0, 32);
    gi_tensor(&g, "early", 1, (const uint64_t[]){8}, 0, 0);
    gi_pad(&g, 32);
    for (int i = 0; i < 64; i++) gi_u8(&g, 0);
    wk_gguf *r = expect_open(&g);
    assert_int_equal(wk_gguf_tensor_offset(r, 0), wk_gguf_data_offset(r) + 32);
    wk_gguf_close(r);
}

/* ggml types wick has no dtype for open; only those tensors are refused. */
static void test_unsupported_types_leave_file_usable(void **state) {
    (void)state;
    gi g = {0};
    gi_header(&g, 3, 3, 0);
    gi_tensor(&g, "iq2", 1, (const uint64_t[]){256}, WK_GGML_IQ2_XXS, 0);
    gi_tensor(&g, "i8", 1, (const uint64_t[]){4}, WK_GGML_I8, 96);
    gi_tensor(&g, "ok", 1, (const uint64_t[]){4}, WK_GGML_I32, 128);
    gi_pad(&g, 32);
    for (int i = 0; i < 144; i++) gi_u8(&g, (uint8_t)i);
    wk_gguf *r = expect_open(&g);
    assert_int_equal(wk_gguf_tensor_nbytes(r, 0), 66);
    wk_clear_error();
    assert_null(wk_gguf_tensor(r, "iq2"));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_non_null(strstr(wk_last_error(), "iq2_xxs"));
    wk_clear_error();
    assert_null(wk_gguf_tensor(r, "i8"));
    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
    assert_non_null(strstr(wk_last_error(), "i8"));
    wk_clear_error();
    wk_tensor *t = TU_OK(wk_gguf_tensor(r, "ok"));
    int32_t v[4];
    TU_STATUS_OK(wk_to_host(t, v, sizeof v));
    int32_t want;
    memcpy(&want, (const uint8_t[]){128, 129, 130, 131}, 4);
    assert_int_equal(v[0], want);
    wk_tensor_free(t);
    wk_gguf_close(r);
}

/* Wrong-type getters and bad indices are errors, not reads of other bytes. */
static void test_getters_refuse(void **state) {
    (void)state;
    gi g = {0};
    valid_image(&g, 3);
    wk_gguf *r = expect_open(&g);
    int64_t ia = wk_gguf_find_key(r, "general.alignment"), in = wk_gguf_find_key(r, "general.name"),
            il = wk_gguf_find_key(r, "tok.list");
    assert_true(ia >= 0 && in >= 0 && il >= 0);
    assert_int_equal(wk_gguf_find_key(r, "absent"), -1);
    uint64_t u64;
    int32_t i32;
    const char *s;
    uint64_t n;
    wk_clear_error();
    assert_int_equal(wk_gguf_get_u64(r, ia, &u64), WK_ERR_DTYPE);
    assert_non_null(strstr(wk_last_error(), "u32"));
    wk_clear_error();
    assert_int_equal(wk_gguf_get_string(r, ia, &s, &n), WK_ERR_DTYPE);
    wk_clear_error();
    assert_int_equal(wk_gguf_get_u32(r, 99, (uint32_t *)&i32), WK_ERR_INDEX);
    wk_clear_error();
    assert_int_equal(wk_gguf_get_u32(r, -1, (uint32_t *)&i32), WK_ERR_INDEX);
    wk_clear_error();
    assert_int_equal(wk_gguf_array_i32(r, il, 0, &i32), WK_ERR_DTYPE);
    wk_clear_error();
    assert_int_equal(wk_gguf_array_string(r, il, 3, &s, &n), WK_ERR_INDEX);
    wk_clear_error();
    assert_int_equal(wk_gguf_array_string(r, in, 0, &s, &n), WK_ERR_DTYPE);
    wk_clear_error();
    const void *d;
    size_t nb;
    assert_int_equal(wk_gguf_array_data(r, il, &d, &nb), WK_ERR_DTYPE);
    wk_clear_error();
    assert_null(wk_gguf_tensor(r, "nope"));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    assert_null(wk_gguf_tensor_at(r, 2));
    assert_int_equal(wk_last_status(), WK_ERR_INDEX);
    wk_clear_error();
    assert_null(wk_gguf_key(r, 3));
    assert_null(wk_gguf_tensor_name(r, -1));
    int64_t shape[4];
    assert_int_equal(wk_gguf_tensor_shape(r, 5, shape), -1);
    wk_gguf_close(r);
    /* NULL readers */
    assert_int_equal(wk_gguf_kv_count(NULL), 0);
    assert_int_equal(wk_gguf_find_tensor(NULL, "a"), -1);
    wk_clear_error();
    assert_null(wk_gguf_open(NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    assert_null(wk_gguf_open("/nonexistent/wick.gguf"));
    assert_int_equal(wk_last_status(), WK_ERR_IO);
    wk_clear_error();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_image_every_version),
        cmocka_unit_test(test_truncation_at_every_byte),
        cmocka_unit_test(test_bad_magic_version_endianness),
        cmocka_unit_test(test_hostile_counts_and_lengths),
        cmocka_unit_test(test_bad_keys_and_types),
        cmocka_unit_test(test_bad_alignment),
        cmocka_unit_test(test_hostile_tensor_infos),
        cmocka_unit_test(test_unsupported_types_leave_file_usable),
        cmocka_unit_test(test_getters_refuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
