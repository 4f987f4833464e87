/* safetensors without the Python oracle (that is test_safetensors_oracle.c):
 * save -> open round trips from views of every layout, zero-copy and
 * lifetime, get_as, metadata, sharded indexes and directories, save's
 * refusals, hand-made hostile headers, and truncation / corruption at every
 * byte of a valid file. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/tensor.h"
#include "io/map_file.h"
#include "io/safetensors_internal.h"
#include "wick/safetensors.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static int setup_dir(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/wick_st_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void write_all(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* The tensor's bytes are inside its shard's map: a zero-copy view. */
static void assert_zero_copy(const wk_safetensors *st, const char *name, const wk_tensor *t) {
    wk_safetensors_info in;
    TU_STATUS_OK(wk_safetensors_info_at(st, wk_safetensors_find(st, name), &in));
    const uint8_t *base = wk__map_data(st->shards[in.shard].map);
    assert_true((const uint8_t *)t->storage->buf == base + in.offset);
    assert_true(wk_is_read_only(t));
}

static void assert_same_values(const wk_tensor *a, const wk_tensor *b) {
    assert_int_equal(wk_tensor_dtype(a), wk_tensor_dtype(b));
    assert_int_equal(wk_rank(a), wk_rank(b));
    for (int d = 0; d < wk_rank(a); d++) assert_int_equal(wk_dim(a, d), wk_dim(b, d));
    size_t n = (size_t)wk_numel(a) * wk_dtype_size(wk_tensor_dtype(a));
    uint8_t *x = malloc(n + 1), *y = malloc(n + 1);
    TU_STATUS_OK(wk_to_host(a, x, n));
    TU_STATUS_OK(wk_to_host(b, y, n));
    assert_memory_equal(x, y, n);
    free(x);
    free(y);
}

/* Tensors of every element dtype in assorted layouts (the caller frees). */
enum { NSRC = 13 };
static const char *const g_names[NSRC] = {"w.f32", "t.transposed", "b.broadcast", "n.narrowed", "s.scalar", "e.empty",
                                          "f16", "bf16", "f8", "u8", "u32", "i16", "i64"};
static void make_sources(wk_tensor **t) {
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)i * 0.25f - 1.0f;
    int64_t s34[2] = {3, 4}, s3[1] = {3}, s43[2] = {4, 3}, s45[2] = {4, 5}, s03[2] = {0, 3}, s5[1] = {5};
    wk_tensor *base = TU_OK(tu_f32(v, s34, 2));
    t[0] = base;
    t[1] = TU_OK(wk_t(base));
    wk_tensor *row = TU_OK(wk_arange(0, 3, 1, WK_F64, wk_cpu()));
    t[2] = TU_OK(wk_broadcast_as(row, s43, 2));
    wk_tensor_free(row);
    wk_tensor *flat = TU_OK(wk_arange(0, 20, 1, WK_I32, wk_cpu()));
    wk_tensor *m = TU_OK(wk_reshape(flat, s45, 2));
    wk_tensor_free(flat);
    wk_tensor *n1 = TU_OK(wk_narrow(m, 0, 1, 2));
    t[3] = TU_OK(wk_narrow(n1, 1, 1, 3));
    wk_tensor_free(n1);
    wk_tensor_free(m);
    t[4] = TU_OK(wk_full(NULL, 0, 1.5, WK_F32, wk_cpu()));
    t[5] = TU_OK(wk_zeros(s03, 2, WK_I64, wk_cpu()));
    t[6] = TU_OK(wk_to_dtype(t[1], WK_F16));
    t[7] = TU_OK(wk_to_dtype(t[1], WK_BF16));
    t[8] = TU_OK(wk_to_dtype(base, WK_F8E4M3));
    double u8v[5] = {12, 9, 6, 3, 0}, u32v[3] = {7, 4000000000.0, 1}, i16v[3] = {-300, 300, 0};
    t[9] = TU_OK(tu_make(u8v, s5, 1, WK_U8));
    t[10] = TU_OK(tu_make(u32v, s3, 1, WK_U32));
    t[11] = TU_OK(tu_make(i16v, s3, 1, WK_I16));
    t[12] = TU_OK(wk_to_dtype(t[3], WK_I64));
}

static void free_all(wk_tensor **t, int n) {
    for (int i = 0; i < n; i++) wk_tensor_free(t[i]);
}

static void test_round_trip(void **state) {
    (void)state;
    wk_tensor *src[NSRC];
    make_sources(src);
    const char *keys[2] = {"format", "n\xc3\xb6te"}, *vals[2] = {"pt", "line\n\"two\"\t\x01"};
    const char *path = tmp_path("rt.safetensors");
    TU_STATUS_OK(wk_safetensors_save(path, NSRC, g_names, src, 2, keys, vals));

    /* the layout promised: 8-aligned header, wider elements first */
    size_t fsz;
    uint8_t *raw = read_all(path, &fsz);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | raw[i];
    assert_int_equal(hlen % 8, 0);
    free(raw);

    uint64_t copied = wk__map_tensor_copied();
    wk_safetensors *st = wk_safetensors_open(path);
    assert_non_null(st);
    assert_int_equal(wk_safetensors_count(st), NSRC);
    for (int i = 1; i < NSRC; i++) assert_true(strcmp(wk_safetensors_name(st, i - 1), wk_safetensors_name(st, i)) < 0);
    assert_null(wk_safetensors_name(st, NSRC));
    assert_int_equal(wk_safetensors_shard_count(st), 1);
    assert_string_equal(wk_safetensors_shard_path(st, 0), path);
    assert_int_equal(wk_safetensors_meta_count(st), 2);
    assert_string_equal(wk_safetensors_meta_key(st, 0), "format");
    assert_string_equal(wk_safetensors_meta_value(st, "n\xc3\xb6te"), vals[1]);
    assert_null(wk_safetensors_meta_value(st, "absent"));
    assert_int_equal(wk_safetensors_find(st, "absent"), -1);

    wk_tensor *got[NSRC];
    uint64_t off[NSRC];
    size_t esz[NSRC];
    for (int i = 0; i < NSRC; i++) {
        got[i] = wk_safetensors_get(st, g_names[i]);
        assert_non_null(got[i]);
        assert_zero_copy(st, g_names[i], got[i]);
        wk_safetensors_info in;
        TU_STATUS_OK(wk_safetensors_info_at(st, wk_safetensors_find(st, g_names[i]), &in));
        assert_true(in.supported);
        assert_int_equal(in.dtype, wk_tensor_dtype(src[i]));
        assert_int_equal(in.rank, wk_rank(src[i]));
        assert_true(in.nbytes == (uint64_t)wk_numel(src[i]) * wk_dtype_size(in.dtype));
        assert_int_equal(in.offset % wk_dtype_size(in.dtype), 0);
        off[i] = in.offset;
        esz[i] = wk_dtype_size(in.dtype);
    }
    /* wider elements first in the data area */
    for (int i = 0; i < NSRC; i++)
        for (int j = 0; j < NSRC; j++)
            if (off[i] < off[j] && esz[i] < esz[j]) fail_msg("%s lies before the wider %s", g_names[i], g_names[j]);
    assert_int_equal(wk__map_tensor_copied(), copied); /* all aligned: nothing copied */
    wk_safetensors_close(st); /* the tensors keep the map */
    for (int i = 0; i < NSRC; i++) assert_same_values(got[i], src[i]);
    /* read-only: an in-place write is refused */
    wk_tensor *z = TU_OK(wk_zeros_like(got[0]));
    assert_int_equal(wk_copy_(got[0], z), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor_free(z);
    free_all(got, NSRC);
    free_all(src, NSRC);
}

static void test_get_as(void **state) {
    (void)state;
    wk_tensor *src[NSRC];
    make_sources(src);
    const char *path = tmp_path("as.safetensors");
    TU_STATUS_OK(wk_safetensors_save(path, NSRC, g_names, src, 0, NULL, NULL));
    wk_safetensors *st = wk_safetensors_open(path);
    assert_non_null(st);
    /* same dtype and device: the zero-copy view */
    wk_tensor *v = TU_OK(wk_safetensors_get_as(st, "f16", WK_F16, wk_cpu()));
    assert_zero_copy(st, "f16", v);
    wk_tensor_free(v);
    /* another dtype: one conversion, equal to wk_to_dtype */
    v = TU_OK(wk_safetensors_get_as(st, "f16", WK_F32, wk_cpu()));
    assert_false(wk_is_read_only(v));
    wk_tensor *ref = TU_OK(wk_to_dtype(src[6], WK_F32));
    assert_same_values(v, ref);
    wk_tensor_free(ref);
    wk_tensor_free(v);
    TU_FAILS(wk_safetensors_get_as(st, "f16", WK_F32, NULL), WK_ERR_ARG);
    TU_FAILS(wk_safetensors_get_as(st, "absent", WK_F32, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_safetensors_get(st, "absent"), WK_ERR_ARG);
    TU_FAILS(wk_safetensors_get(NULL, "f16"), WK_ERR_ARG);
    wk_safetensors_info in;
    assert_int_equal(wk_safetensors_info_at(st, NSRC, &in), WK_ERR_INDEX);
    wk_clear_error();
    wk_safetensors_close(st);
    free_all(src, NSRC);
}

static void test_save_refusals(void **state) {
    (void)state;
    wk_tensor *src[NSRC];
    make_sources(src);
    const char *path = tmp_path("bad.safetensors");
    const char *dup[2] = {"a", "a"}, *meta_names[1] = {"__metadata__"}, *empty[1] = {""}, *bad8[1] = {"x\xff"};
    assert_int_equal(wk_safetensors_save(path, 2, dup, src, 0, NULL, NULL), WK_ERR_ARG);
    assert_int_equal(wk_safetensors_save(path, 1, meta_names, src, 0, NULL, NULL), WK_ERR_ARG);
    assert_int_equal(wk_safetensors_save(path, 1, empty, src, 0, NULL, NULL), WK_ERR_ARG);
    assert_int_equal(wk_safetensors_save(path, 1, bad8, src, 0, NULL, NULL), WK_ERR_ARG);
    const char *k2[2] = {"k", "k"}, *v2[2] = {"1", "2"};
    assert_int_equal(wk_safetensors_save(path, 1, g_names, src, 2, k2, v2), WK_ERR_ARG);
    wk_tensor *nul[1] = {NULL};
    wk_clear_error();
    assert_int_equal(wk_safetensors_save(path, 1, g_names, nul, 0, NULL, NULL), WK_ERR_ARG);
    /* a block dtype: safetensors has none */
    uint8_t blk[34] = {0};
    wk__map *m = wk__map_from_bytes("test", blk, sizeof blk);
    int64_t s32[1] = {32};
    wk_tensor *q[1] = {wk__map_tensor("test", "q", m, 0, WK_Q8_0, s32, 1)};
    wk__map_release(m);
    assert_non_null(q[0]);
    wk_clear_error();
    assert_int_equal(wk_safetensors_save(path, 1, g_names, q, 0, NULL, NULL), WK_ERR_DTYPE);
    assert_non_null(strstr(wk_last_error(), "q8_0"));
    wk_tensor_free(q[0]);
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0); /* nothing left behind */
    assert_int_equal(wk_safetensors_save("/nonexistent-dir/x.safetensors", 1, g_names, src, 0, NULL, NULL), WK_ERR_IO);
    wk_clear_error();
    /* zero tensors is a valid (empty) file */
    TU_STATUS_OK(wk_safetensors_save(path, 0, NULL, NULL, 0, NULL, NULL));
    wk_safetensors *st = wk_safetensors_open(path);
    assert_non_null(st);
    assert_int_equal(wk_safetensors_count(st), 0);
    wk_safetensors_close(st);
    free_all(src, NSRC);
}

/* ------------------------------------------------------------ hostile */

/* A file image: 8-byte length, header, then data_len bytes of data. */
static uint8_t *image(const char *header, uint64_t hlen_field, size_t data_len, size_t *n) {
    size_t h = strlen(header);
    *n = 8 + h + data_len;
    uint8_t *b = calloc(1, *n);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(hlen_field >> (8 * i));
    memcpy(b + 8, header, h);
    return b;
}

static void expect_open(const char *header, size_t data_len, wk_status want, const char *needle) {
    size_t n;
    uint8_t *b = image(header, strlen(header), data_len, &n);
    wk_clear_error();
    wk_safetensors *st = wk_safetensors_open_bytes(b, n);
    free(b);
    if (want == WK_OK) {
        if (!st) fail_msg("'%s' rejected: %s", header, wk_last_error());
        wk_safetensors_close(st);
        return;
    }
    if (st) fail_msg("'%s' accepted", header);
    if (wk_last_status() != want)
        fail_msg("'%s': status %s (%s), want %s", header, wk_status_name(wk_last_status()), wk_last_error(),
                 wk_status_name(want));
    if (needle && !strstr(wk_last_error(), needle)) fail_msg("'%s': message '%s' lacks '%s'", header, wk_last_error(), needle);
    wk_clear_error();
}

#define T1(dt, shape, a, b) "{\"x\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #a "," #b "]}}"

static void test_hostile_headers(void **state) {
    (void)state;
    expect_open(T1("F32", "[2]", 0, 8), 8, WK_OK, NULL);
    expect_open("{}", 0, WK_OK, NULL);
    expect_open("{\"__metadata__\":null}", 0, WK_OK, NULL);
    expect_open("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":{\"k\":[1]}}}", 8, WK_OK, NULL);
    /* offsets and sizes */
    expect_open(T1("F32", "[2]", 0, 8), 4, WK_ERR_FORMAT, "data area");
    expect_open(T1("F32", "[2]", 8, 0), 8, WK_ERR_FORMAT, "reversed");
    expect_open(T1("F32", "[3]", 0, 8), 8, WK_ERR_FORMAT, "need 12 bytes");
    expect_open(T1("F32", "[2]", 0, 8), 12, WK_ERR_FORMAT, "after the last");
    expect_open(T1("F32", "[2]", 4, 12), 12, WK_ERR_FORMAT, "unused");
    expect_open(T1("F32", "[2]", 0, 99999999999999999999), 8, WK_ERR_FORMAT, "64 bits");
    expect_open(T1("F32", "[2]", 0, -8), 8, WK_ERR_FORMAT, "negative");
    expect_open(T1("F32", "[2]", 0, 8.0), 8, WK_ERR_FORMAT, "integer");
    expect_open(T1("F32", "[4294967296,4294967296,16]", 0, 8), 8, WK_ERR_FORMAT, "too many");
    expect_open(T1("F64", "[1099511627776,1099511627776]", 0, 8), 8, WK_ERR_FORMAT, "too many");
    expect_open(T1("F32", "[1,1,1,1,1,1,1,1,2]", 0, 8), 8, WK_ERR_FORMAT, "rank");
    expect_open(T1("F32", "[-2]", 0, 8), 8, WK_ERR_FORMAT, "negative");
    expect_open(T1("F32", "2", 0, 8), 8, WK_ERR_FORMAT, NULL);
    expect_open("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, WK_ERR_FORMAT, "not 2");
    expect_open("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}}", 8, WK_ERR_FORMAT, "more than 2");
    expect_open("{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, WK_ERR_FORMAT, "data_offsets");
    expect_open("{\"x\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, WK_ERR_FORMAT, "dtype");
    expect_open("{\"x\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, WK_ERR_FORMAT,
                "twice");
    expect_open("{\"x\":[]}", 0, WK_ERR_FORMAT, "object");
    /* overlap and duplicates */
    expect_open("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                12, WK_ERR_FORMAT, "overlaps");
    expect_open("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                8, WK_ERR_FORMAT, "overlaps");
    expect_open("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                16, WK_ERR_FORMAT, "twice");
    /* empty tensors may share an offset */
    expect_open("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
                "\"b\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[0,0]},"
                "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                4, WK_OK, NULL);
    /* dtypes */
    expect_open(T1("Q4_0", "[2]", 0, 8), 8, WK_ERR_DTYPE, "Q4_0");
    expect_open(T1("f32", "[2]", 0, 8), 8, WK_ERR_DTYPE, "'x'");
    expect_open(T1("F4", "[3]", 0, 2), 2, WK_ERR_FORMAT, "whole bytes");
    expect_open(T1("F4", "[4]", 0, 2), 2, WK_OK, NULL);
    expect_open(T1("F6_E2M3", "[4]", 0, 3), 3, WK_OK, NULL);
    /* metadata */
    expect_open("{\"__metadata__\":{\"a\":1}}", 0, WK_ERR_FORMAT, "not a string");
    expect_open("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0, WK_ERR_FORMAT, "twice");
    expect_open("{\"__metadata__\":{},\"__metadata__\":{}}", 0, WK_ERR_FORMAT, "twice");
    expect_open("{\"__metadata__\":[]}", 0, WK_ERR_FORMAT, "object");
    expect_open("{\"__metadata__\":{\"a\":\"x\\u0000y\"}}", 0, WK_ERR_FORMAT, "NUL");
    /* JSON and UTF-8 */
    expect_open("[]", 0, WK_ERR_FORMAT, "object");
    expect_open("", 0, WK_ERR_FORMAT, NULL);
    expect_open("{", 0, WK_ERR_FORMAT, NULL);
    expect_open("{\"\xff\":{}}", 0, WK_ERR_FORMAT, "UTF-8");
    expect_open("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, WK_ERR_FORMAT, "NUL");
    expect_open("{} x", 0, WK_ERR_FORMAT, "after");
    expect_open("{}   \t\n ", 0, WK_OK, NULL); /* trailing blanks (the reference pads with spaces) */

    /* header length field */
    size_t n;
    uint8_t *b = image("{}", UINT64_C(100000001), 0, &n);
    assert_null(wk_safetensors_open_bytes(b, n));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    assert_non_null(strstr(wk_last_error(), "100 MB"));
    free(b);
    b = image("{}", 3, 0, &n);
    assert_null(wk_safetensors_open_bytes(b, n));
    assert_non_null(strstr(wk_last_error(), "past the end"));
    free(b);
    b = image("{}", UINT64_MAX, 0, &n);
    assert_null(wk_safetensors_open_bytes(b, n));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    free(b);
    wk_clear_error();
    assert_null(wk_safetensors_open_bytes("abc", 3));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    assert_null(wk_safetensors_open(tmp_path("does-not-exist.safetensors")));
    assert_int_equal(wk_last_status(), WK_ERR_IO);
    wk_clear_error();
}

static void test_unsupported_dtypes(void **state) {
    (void)state;
    const char *h = "{\"i8\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                    "\"u16\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[2,4]},"
                    "\"ok\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[4,8]}}";
    size_t n;
    uint8_t *b = image(h, strlen(h), 8, &n);
    uint8_t *data = b + 8 + strlen(h);
    data[4] = 1, data[7] = 1;
    wk_safetensors *st = wk_safetensors_open_bytes(b, n);
    free(b);
    assert_non_null(st);
    assert_int_equal(wk_safetensors_count(st), 3);
    wk_safetensors_info in;
    TU_STATUS_OK(wk_safetensors_info_at(st, wk_safetensors_find(st, "i8"), &in));
    assert_false(in.supported);
    assert_string_equal(in.st_dtype, "I8");
    TU_FAILS(wk_safetensors_get(st, "i8"), WK_ERR_DTYPE);
    wk_tensor *t = wk_safetensors_get(st, "u16");
    assert_null(t);
    assert_non_null(strstr(wk_last_error(), "U16"));
    assert_non_null(strstr(wk_last_error(), "'u16'"));
    wk_clear_error();
    TU_FAILS(wk_safetensors_get_as(st, "u16", WK_F32, wk_cpu()), WK_ERR_DTYPE);
    /* BOOL reads as u8 */
    TU_STATUS_OK(wk_safetensors_info_at(st, wk_safetensors_find(st, "ok"), &in));
    assert_string_equal(in.st_dtype, "BOOL");
    assert_int_equal(in.dtype, WK_U8);
    t = TU_OK(wk_safetensors_get(st, "ok"));
    uint8_t v[4];
    TU_STATUS_OK(wk_to_host(t, v, 4));
    assert_true(v[0] == 1 && v[1] == 0 && v[2] == 0 && v[3] == 1);
    wk_tensor_free(t);
    wk_safetensors_close(st);
}

/* Every proper prefix of a valid file is a clean WK_ERR_FORMAT, and every
 * single-byte corruption is a clean error or a file whose tensors read. */
static void test_truncation_and_corruption(void **state) {
    (void)state;
    wk_tensor *src[NSRC];
    make_sources(src);
    const char *keys[1] = {"format"}, *vals[1] = {"pt"};
    const char *path = tmp_path("trunc.safetensors");
    TU_STATUS_OK(wk_safetensors_save(path, NSRC, g_names, src, 1, keys, vals));
    free_all(src, NSRC);
    size_t n;
    uint8_t *full = read_all(path, &n);
    for (size_t len = 0; len < n; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        memcpy(cut, full, len);
        wk_clear_error();
        wk_safetensors *st = wk_safetensors_open_bytes(cut, len);
        free(cut);
        if (st) fail_msg("a prefix of %zu of %zu bytes opened", len, n);
        if (wk_last_status() != WK_ERR_FORMAT || !wk_last_error()[0])
            fail_msg("prefix %zu: %s %s", len, wk_status_name(wk_last_status()), wk_last_error());
    }
    int opened = 0;
    for (size_t i = 0; i < n; i++) {
        static const uint8_t flips[] = {0xff, 0x01, 0x80};
        for (size_t f = 0; f < sizeof flips; f++) {
            full[i] ^= flips[f];
            wk_clear_error();
            wk_safetensors *st = wk_safetensors_open_bytes(full, n);
            full[i] ^= flips[f];
            if (!st) {
                wk_status s = wk_last_status();
                if ((s != WK_ERR_FORMAT && s != WK_ERR_DTYPE) || !wk_last_error()[0])
                    fail_msg("byte %zu ^ %02x: %s %s", i, flips[f], wk_status_name(s), wk_last_error());
                continue;
            }
            opened++;
            for (int k = 0; k < wk_safetensors_count(st); k++) {
                wk_tensor *t = wk_safetensors_get(st, wk_safetensors_name(st, k));
                if (!t) {
                    assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
                    continue;
                }
                size_t nb = (size_t)wk_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
                uint8_t *buf = malloc(nb + 1);
                TU_STATUS_OK(wk_to_host(t, buf, nb));
                free(buf);
                wk_tensor_free(t);
            }
            wk_safetensors_close(st);
        }
    }
    assert_true(opened > 0); /* flips in the data area keep the file valid */
    wk_clear_error();
    free(full);
}

/* ------------------------------------------------------------ shards */

static void save_shard(const char *file, int n, const char *const *names, wk_tensor *const *t, const char *mv) {
    const char *k[1] = {"shard"}, *v[1] = {mv};
    TU_STATUS_OK(wk_safetensors_save(tmp_path(file), n, names, t, 1, k, v));
}

static void write_text(const char *file, const char *text) { write_all(tmp_path(file), text, strlen(text)); }

static void test_sharded(void **state) {
    (void)state;
    wk_tensor *src[NSRC];
    make_sources(src);
    assert_int_equal(mkdir(tmp_path("sh"), 0700), 0);
    save_shard("sh/b-2.safetensors", 3, g_names, src, "two");
    save_shard("sh/a-1.safetensors", 3, g_names + 3, src + 3, "one");
    write_text("sh/model.safetensors.index.json",
               "{\"metadata\": {\"total_size\": 1234, \"ok\": true, \"skip\": [1], \"name\": \"m\", \"shard\": \"index\"},"
               " \"weight_map\": {\"w.f32\": \"b-2.safetensors\", \"t.transposed\": \"b-2.safetensors\","
               " \"n.narrowed\": \"a-1.safetensors\", \"e.empty\": \"a-1.safetensors\", \"s.scalar\": \"a-1.safetensors\"},"
               " \"extra\": {}}");
    const char *opens[2] = {tmp_path("sh"), tmp_path("sh/model.safetensors.index.json")};
    for (int o = 0; o < 2; o++) {
        wk_safetensors *st = wk_safetensors_open(opens[o]);
        if (!st) fail_msg("%s: %s", opens[o], wk_last_error());
        /* b.broadcast is in shard b-2 but not in the weight map: not exposed */
        assert_int_equal(wk_safetensors_count(st), 5);
        assert_int_equal(wk_safetensors_find(st, "b.broadcast"), -1);
        assert_int_equal(wk_safetensors_shard_count(st), 2);
        assert_non_null(strstr(wk_safetensors_shard_path(st, 0), "a-1.safetensors"));
        assert_non_null(strstr(wk_safetensors_shard_path(st, 1), "b-2.safetensors"));
        assert_string_equal(wk_safetensors_meta_value(st, "total_size"), "1234");
        assert_string_equal(wk_safetensors_meta_value(st, "ok"), "true");
        assert_string_equal(wk_safetensors_meta_value(st, "name"), "m");
        assert_string_equal(wk_safetensors_meta_value(st, "shard"), "index"); /* the index wins */
        assert_null(wk_safetensors_meta_value(st, "skip"));
        assert_int_equal(wk_safetensors_meta_count(st), 4);
        const int idx[5] = {0, 1, 3, 4, 5};
        wk_tensor *got[5];
        for (int i = 0; i < 5; i++) {
            got[i] = TU_OK(wk_safetensors_get(st, g_names[idx[i]]));
            assert_zero_copy(st, g_names[idx[i]], got[i]);
            wk_safetensors_info in;
            TU_STATUS_OK(wk_safetensors_info_at(st, wk_safetensors_find(st, g_names[idx[i]]), &in));
            assert_int_equal(in.shard, idx[i] < 3 ? 1 : 0);
        }
        wk_safetensors_close(st);
        for (int i = 0; i < 5; i++) assert_same_values(got[i], src[idx[i]]);
        free_all(got, 5);
    }

    /* hostile indexes */
    struct {
        const char *json;
        wk_status want;
        const char *needle;
    } bad[] = {
        {"{\"weight_map\": {\"w.f32\": \"../sh/b-2.safetensors\"}}", WK_ERR_FORMAT, "plain file name"},
        {"{\"weight_map\": {\"w.f32\": \"/etc/passwd\"}}", WK_ERR_FORMAT, "plain file name"},
        {"{\"weight_map\": {\"w.f32\": \"..\"}}", WK_ERR_FORMAT, "plain file name"},
        {"{\"weight_map\": {\"w.f32\": \"\"}}", WK_ERR_FORMAT, "plain file name"},
        {"{\"weight_map\": {\"w.f32\": 3}}", WK_ERR_FORMAT, "not a file name"},
        {"{\"weight_map\": {\"zzz\": \"b-2.safetensors\"}}", WK_ERR_FORMAT, "does not hold"},
        {"{\"weight_map\": {\"w.f32\": \"missing.safetensors\"}}", WK_ERR_IO, "missing.safetensors"},
        {"{\"metadata\": {}}", WK_ERR_FORMAT, "weight_map"},
        {"{\"weight_map\": {}, \"weight_map\": {}}", WK_ERR_FORMAT, "twice"},
        {"{\"weight_map\": {\"w.f32\": \"b-2.safetensors\", \"w.f32\": \"b-2.safetensors\"}}", WK_ERR_FORMAT, "twice"},
        {"{\"weight_map\": []}", WK_ERR_FORMAT, "object"},
        {"[", WK_ERR_FORMAT, "JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text("sh/bad.index.json", bad[i].json);
        wk_clear_error();
        wk_safetensors *st = wk_safetensors_open(tmp_path("sh/bad.index.json"));
        if (st) fail_msg("index %zu accepted", i);
        if (wk_last_status() != bad[i].want || !strstr(wk_last_error(), bad[i].needle))
            fail_msg("index %zu: %s %s", i, wk_status_name(wk_last_status()), wk_last_error());
    }
    wk_clear_error();
    /* a shard that is itself hostile fails the open */
    write_text("sh/c-3.safetensors", "garbage");
    write_text("sh/bad.index.json", "{\"weight_map\": {\"x\": \"c-3.safetensors\"}}");
    assert_null(wk_safetensors_open(tmp_path("sh/bad.index.json")));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    wk_clear_error();
    free_all(src, NSRC);
}

static void test_directory_choice(void **state) {
    (void)state;
    wk_tensor *src[NSRC];
    make_sources(src);
    assert_int_equal(mkdir(tmp_path("d"), 0700), 0);
    assert_null(wk_safetensors_open(tmp_path("d")));
    assert_int_equal(wk_last_status(), WK_ERR_IO);
    wk_clear_error();
    TU_STATUS_OK(wk_safetensors_save(tmp_path("d/only.safetensors"), 1, g_names, src, 0, NULL, NULL));
    wk_safetensors *st = wk_safetensors_open(tmp_path("d"));
    assert_non_null(st);
    assert_int_equal(wk_safetensors_count(st), 1);
    wk_safetensors_close(st);
    TU_STATUS_OK(wk_safetensors_save(tmp_path("d/other.safetensors"), 2, g_names, src, 0, NULL, NULL));
    assert_null(wk_safetensors_open(tmp_path("d")));
    assert_int_equal(wk_last_status(), WK_ERR_IO);
    wk_clear_error();
    /* model.safetensors is preferred over the rest */
    TU_STATUS_OK(wk_safetensors_save(tmp_path("d/model.safetensors"), 3, g_names, src, 0, NULL, NULL));
    st = wk_safetensors_open(tmp_path("d"));
    assert_non_null(st);
    assert_int_equal(wk_safetensors_count(st), 3);
    wk_safetensors_close(st);
    free_all(src, NSRC);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_get_as),
        cmocka_unit_test(test_save_refusals),
        cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_unsupported_dtypes),
        cmocka_unit_test(test_truncation_and_corruption),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_directory_choice),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
