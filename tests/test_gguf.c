/* GGUF against gguf-py (tests/gguf_oracle.py, the venv's gguf==0.19.0):
 *  - files gguf-py writes (every metadata type, arrays incl. strings,
 *    alignment 32 and 64, element and block tensors) read by wick match,
 *    value by value and byte by byte, what gguf-py's reader sees in them;
 *  - files wick writes (copied from those, and built with the typed adders)
 *    read back identically in gguf-py;
 *  - the real SmolLM2 GGUF: its metadata as models.md states, every value
 *    and every tensor's bytes as gguf-py sees them, all views zero-copy;
 *  - hand-built v1 / v2 images of every scalar type.
 * Tests needing the venv skip, saying so, when WICK_VENV_PYTHON is unset. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor/tensor.h"
#include "io/gguf_internal.h"
#include "test_gguf_image.h"
#include "wick/gguf.h"

static char g_dir[512];    /* generated files */
static char g_script[512]; /* tests/gguf_oracle.py */
static const char *g_py;

static bool have_python(void) {
    if (!g_py) {
        fprintf(stderr, "skipped: WICK_VENV_PYTHON is unset (run ./scripts/setup.sh for the gguf-py oracle)\n");
        return false;
    }
    return true;
}

static int run_py(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s", g_py, g_script, args);
    return system(cmd);
}

static int setup(void **state) {
    (void)state;
    g_py = getenv("WICK_VENV_PYTHON");
    if (g_py && !*g_py) g_py = NULL;
    const char *base = getenv("WICK_ORACLE_DIR") ? getenv("WICK_ORACLE_DIR") : "/tmp";
    mkdir(base, 0755);
    snprintf(g_dir, sizeof g_dir, "%s/gguf", base);
    mkdir(g_dir, 0755);
    /* the script sits beside this file (CMake passes absolute source paths) */
    snprintf(g_script, sizeof g_script, "%s", __FILE__);
    char *slash = strrchr(g_script, '/');
    snprintf(slash ? slash + 1 : g_script, sizeof g_script - (size_t)(slash ? slash + 1 - g_script : 0), "gguf_oracle.py");
    if (g_py) {
        char args[600];
        snprintf(args, sizeof args, "gen '%s'", g_dir);
        if (run_py(args) != 0) return -1;
    }
    return 0;
}

/* ---- the listing format of gguf_oracle.py ---- */

static uint64_t checksum(const uint8_t *b, uint64_t n) {
    uint64_t s = 0;
    for (uint64_t i = 0; i * 8 < n; i++) {
        uint64_t w = 0;
        memcpy(&w, b + i * 8, n - i * 8 < 8 ? n - i * 8 : 8);
        s += w * (2 * i + 1);
    }
    return s ^ (n * 0x9E3779B97F4A7C15ull);
}

static size_t unhex(const char *h, char *out) {
    if (!strcmp(h, "-")) return 0;
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    out[n] = 0;
    return n;
}

/* Element j of array i (j == UINT64_MAX: the scalar value i) equals tok. */
static void check_value(const wk_gguf *r, int64_t i, uint64_t j, wk_gguf_type ty, const char *tok) {
    bool sc = j == UINT64_MAX;
    switch (ty) {
#define INT_CASE(T, CT, GET)                                                               \
    case T: {                                                                              \
        CT v;                                                                              \
        TU_STATUS_OK(sc ? wk_gguf_get_##GET(r, i, &v) : wk_gguf_array_##GET(r, i, j, &v)); \
        if (T == WK_GGUF_U64) assert_true((uint64_t)v == strtoull(tok, NULL, 10));         \
        else assert_true((int64_t)v == strtoll(tok, NULL, 10));                            \
        break;                                                                             \
    }
        INT_CASE(WK_GGUF_U8, uint8_t, u8)
        INT_CASE(WK_GGUF_I8, int8_t, i8)
        INT_CASE(WK_GGUF_U16, uint16_t, u16)
        INT_CASE(WK_GGUF_I16, int16_t, i16)
        INT_CASE(WK_GGUF_U32, uint32_t, u32)
        INT_CASE(WK_GGUF_I32, int32_t, i32)
        INT_CASE(WK_GGUF_U64, uint64_t, u64)
        INT_CASE(WK_GGUF_I64, int64_t, i64)
#undef INT_CASE
    case WK_GGUF_F32: {
        float v;
        TU_STATUS_OK(sc ? wk_gguf_get_f32(r, i, &v) : wk_gguf_array_f32(r, i, j, &v));
        assert_true((double)v == strtod(tok, NULL));
        break;
    }
    case WK_GGUF_F64: {
        double v;
        TU_STATUS_OK(sc ? wk_gguf_get_f64(r, i, &v) : wk_gguf_array_f64(r, i, j, &v));
        assert_true(v == strtod(tok, NULL));
        break;
    }
    case WK_GGUF_BOOL: {
        bool v;
        TU_STATUS_OK(sc ? wk_gguf_get_bool(r, i, &v) : wk_gguf_array_bool(r, i, j, &v));
        assert_int_equal(v, tok[0] == '1');
        break;
    }
    case WK_GGUF_STRING: {
        const char *s;
        uint64_t n;
        TU_STATUS_OK(sc ? wk_gguf_get_string(r, i, &s, &n) : wk_gguf_array_string(r, i, j, &s, &n));
        char *want = malloc(strlen(tok) / 2 + 1);
        size_t wn = unhex(tok, want);
        assert_int_equal(n, wn);
        assert_memory_equal(s, want, wn);
        free(want);
        break;
    }
    case WK_GGUF_ARRAY:
    case WK_GGUF_TYPE_COUNT: fail();
    }
}

/* The bytes of tensor i through its wick view: zero-copy (the view's bytes
 * are the file's), and for element dtypes the same through wk_to_host. */
static uint64_t view_checksum(const wk_gguf *r, int64_t i) {
    wk_tensor *t = TU_OK(wk_gguf_tensor_at(r, i));
    uint64_t nb = wk_gguf_tensor_nbytes(r, i);
    assert_true(wk_is_read_only(t));
    assert_ptr_equal(t->storage->buf, r->data + wk_gguf_tensor_offset(r, i));
    assert_int_equal(t->storage->nbytes, nb);
    uint64_t sum = checksum(t->storage->buf, nb);
    if (!wk_dtype_is_quantized(wk_tensor_dtype(t))) {
        uint8_t *b = malloc(nb ? nb : 1);
        TU_STATUS_OK(wk_to_host(t, b, nb));
        assert_true(checksum(b, nb) == sum);
        free(b);
    }
    wk_tensor_free(t);
    return sum;
}

/* Everything in the listing at txt is what wick reads from r, in order. */
static void check_listing(const wk_gguf *r, const char *txt) {
    FILE *f = fopen(txt, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int64_t kvs = 0, ts = 0;
    char name[4096];
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *save = NULL, *kind = strtok_r(line, " ", &save);
        if (!kind) continue;
        char *hname = strtok_r(NULL, " ", &save);
        assert_true(strlen(hname) / 2 < sizeof name);
        unhex(hname, name);
        if (!strcmp(kind, "kv") || !strcmp(kind, "arr")) {
            int64_t i = wk_gguf_find_key(r, name);
            assert_int_equal(i, kvs); /* file order */
            assert_string_equal(wk_gguf_key(r, i), name);
            kvs++;
            int ty = atoi(strtok_r(NULL, " ", &save));
            if (kind[0] == 'k') {
                assert_int_equal(wk_gguf_kv_type(r, i), ty);
                check_value(r, i, UINT64_MAX, (wk_gguf_type)ty, strtok_r(NULL, " ", &save));
                continue;
            }
            assert_int_equal(wk_gguf_kv_type(r, i), WK_GGUF_ARRAY);
            wk_gguf_type et;
            uint64_t n;
            TU_STATUS_OK(wk_gguf_get_array(r, i, &et, &n));
            assert_int_equal(et, ty);
            assert_int_equal(n, strtoull(strtok_r(NULL, " ", &save), NULL, 10));
            for (uint64_t j = 0; j < n; j++) check_value(r, i, j, et, strtok_r(NULL, " ", &save));
            continue;
        }
        assert_string_equal(kind, "t");
        int64_t i = wk_gguf_find_tensor(r, name);
        assert_int_equal(i, ts);
        ts++;
        assert_int_equal(wk_gguf_tensor_ggml_type(r, i), atoi(strtok_r(NULL, " ", &save)));
        int rank = atoi(strtok_r(NULL, " ", &save));
        int64_t shape[4];
        assert_int_equal(wk_gguf_tensor_shape(r, i, shape), rank);
        for (int d = 0; d < rank; d++) assert_int_equal(shape[d], strtoll(strtok_r(NULL, " ", &save), NULL, 10));
        uint64_t nb = strtoull(strtok_r(NULL, " ", &save), NULL, 10);
        assert_int_equal(wk_gguf_tensor_nbytes(r, i), nb);
        uint64_t sum = strtoull(strtok_r(NULL, " ", &save), NULL, 10);
        wk_dtype dt;
        if (wk_ggml_type_to_dtype(wk_gguf_tensor_ggml_type(r, i), &dt)) {
            assert_true(view_checksum(r, i) == sum);
        } else { /* no wick dtype: refused by name, bytes still where gguf-py sees them */
            wk_clear_error();
            assert_null(wk_gguf_tensor_at(r, i));
            assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
            wk_clear_error();
            assert_true(checksum(r->data + wk_gguf_tensor_offset(r, i), nb) == sum);
        }
    }
    free(line);
    fclose(f);
    assert_int_equal(kvs, wk_gguf_kv_count(r));
    assert_int_equal(ts, wk_gguf_tensor_count(r));
}

static void test_reads_gguf_py_files(void **state) {
    (void)state;
    if (!have_python()) skip();
    const char *names[] = {"types_a32", "types_a64"};
    const uint32_t aligns[] = {32, 64};
    for (int k = 0; k < 2; k++) {
        char path[600], txt[600];
        snprintf(path, sizeof path, "%s/%s.gguf", g_dir, names[k]);
        snprintf(txt, sizeof txt, "%s/%s.txt", g_dir, names[k]);
        uint64_t copied = wk__map_tensor_copied();
        wk_gguf *r = wk_gguf_open(path);
        assert_non_null(r);
        assert_int_equal(wk_gguf_version(r), 3);
        assert_int_equal(wk_gguf_alignment(r), aligns[k]);
        assert_int_equal(wk_gguf_data_offset(r) % aligns[k], 0);
        check_listing(r, txt);
        assert_int_equal(wk__map_tensor_copied(), copied); /* every view zero-copy */
        /* the shapes are wick's (outermost first) and the dtypes wick's */
        wk_tensor *t = TU_OK(wk_gguf_tensor(r, "t.q4_0"));
        const int64_t s[2] = {3, 96};
        tu_assert_shape(t, s, 2);
        assert_int_equal(wk_tensor_dtype(t), WK_Q4_0);
        wk_gguf_close(r); /* the view outlives the reader */
        assert_int_equal(wk_dim(t, 1), 96);
        wk_tensor_free(t);
    }
}

/* wick copies a gguf-py file (all metadata, every tensor it has a dtype
 * for, as mapped views) into a new file; gguf-py sees the same in both. */
static void test_wick_writes_what_gguf_py_reads(void **state) {
    (void)state;
    if (!have_python()) skip();
    char src[600], dst[600], args[1600];
    snprintf(src, sizeof src, "%s/types_a64.gguf", g_dir);
    snprintf(dst, sizeof dst, "%s/types_a64_by_wick.gguf", g_dir);
    wk_gguf *r = wk_gguf_open(src);
    assert_non_null(r);
    wk_gguf_writer *w = wk_gguf_writer_new();
    for (int64_t i = 0; i < wk_gguf_kv_count(r); i++) TU_STATUS_OK(wk_gguf_writer_copy_kv(w, r, i));
    char skipped[1024] = "";
    for (int64_t i = 0; i < wk_gguf_tensor_count(r); i++) {
        wk_dtype dt;
        const char *nm = wk_gguf_tensor_name(r, i);
        if (!wk_ggml_type_to_dtype(wk_gguf_tensor_ggml_type(r, i), &dt)) {
            size_t at = strlen(skipped);
            skipped[at++] = ' ';
            for (const char *p = nm; *p; p++) at += (size_t)snprintf(skipped + at, sizeof skipped - at, "%02x", (uint8_t)*p);
            continue;
        }
        wk_tensor *t = TU_OK(wk_gguf_tensor_at(r, i));
        TU_STATUS_OK(wk_gguf_writer_add_tensor(w, nm, t));
        wk_tensor_free(t); /* the writer keeps the bytes alive */
    }
    wk_gguf_close(r); /* and the map with them */
    TU_STATUS_OK(wk_gguf_writer_write(w, dst));
    wk_gguf_writer_free(w);
    snprintf(args, sizeof args, "compare '%s' '%s'%s", src, dst, skipped);
    assert_int_equal(run_py(args), 0);
    /* the wick-written file reads back in wick too, aligned to 64 */
    wk_gguf *back = wk_gguf_open(dst);
    assert_non_null(back);
    assert_int_equal(wk_gguf_alignment(back), 64);
    for (int64_t i = 0; i < wk_gguf_tensor_count(back); i++) assert_int_equal(wk_gguf_tensor_offset(back, i) % 64, 0);
    wk_gguf_close(back);
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *b = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            cap = cap * 2 + 4096;
            b = realloc(b, cap);
            assert_non_null(b);
        }
        size_t got = fread(b + *n, 1, cap - *n, f);
        if (!got) break;
        *n += got;
    }
    fclose(f);
    return b;
}

/* The typed adders, a transposed (non-contiguous) view and a scalar give the
 * file gguf_oracle.py's gen_typed_ref writes with gguf-py. */
static void test_typed_writer_matches_gguf_py(void **state) {
    (void)state;
    if (!have_python()) skip();
    wk_gguf_writer *w = wk_gguf_writer_new();
    TU_STATUS_OK(wk_gguf_writer_add_string(w, "general.architecture", "wicktyped", 9));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "general.alignment", 64));
    TU_STATUS_OK(wk_gguf_writer_add_u8(w, "k.u8", 7));
    TU_STATUS_OK(wk_gguf_writer_add_i8(w, "k.i8", -7));
    TU_STATUS_OK(wk_gguf_writer_add_u16(w, "k.u16", 700));
    TU_STATUS_OK(wk_gguf_writer_add_i16(w, "k.i16", -700));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "k.u32", 70000));
    TU_STATUS_OK(wk_gguf_writer_add_i32(w, "k.i32", -70000));
    TU_STATUS_OK(wk_gguf_writer_add_f32(w, "k.f32", 0.125f));
    TU_STATUS_OK(wk_gguf_writer_add_bool(w, "k.bool", true));
    TU_STATUS_OK(wk_gguf_writer_add_u64(w, "k.u64", UINT64_C(1) << 40));
    TU_STATUS_OK(wk_gguf_writer_add_i64(w, "k.i64", -(INT64_C(1) << 40)));
    TU_STATUS_OK(wk_gguf_writer_add_f64(w, "k.f64", 1.0 / 1048576.0));
    TU_STATUS_OK(wk_gguf_writer_add_string(w, "k.str", "wick \xE2\x9C\x93", 8));
    TU_STATUS_OK(wk_gguf_writer_add_array(w, "k.arr_i32", WK_GGUF_I32, (const int32_t[]){1, -2, 3}, 3));
    TU_STATUS_OK(wk_gguf_writer_add_array(w, "k.arr_f32", WK_GGUF_F32, (const float[]){0.5f, 1.5f}, 2));
    TU_STATUS_OK(wk_gguf_writer_add_array(w, "k.arr_bool", WK_GGUF_BOOL, (const uint8_t[]){0, 1}, 2));
    const char *strs[] = {"a", "", "\xC3\xBC"};
    TU_STATUS_OK(wk_gguf_writer_add_string_array(w, "k.arr_str", strs, NULL, 3));
    const float v[6] = {0, 1, 2, 3, 4, 5};
    wk_tensor *a = TU_OK(tu_f32(v, (const int64_t[]){2, 3}, 2));
    wk_tensor *at = TU_OK(wk_t(a));
    assert_false(wk_is_contiguous(at));
    wk_tensor *q = TU_OK(wk_affine(a, 0.25, 0));
    wk_tensor *h = TU_OK(wk_to_dtype(q, WK_F16));
    wk_tensor *ints = TU_OK(wk_arange(-2, 3, 1, WK_I32, wk_cpu()));
    wk_tensor *sc = TU_OK(wk_full(NULL, 0, 3.0, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.f32", a));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.transposed", at));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.f16", h));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.i32", ints));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.scalar", sc));
    wk_tensor *all[] = {a, at, q, h, ints, sc};
    for (int k = 0; k < 6; k++) wk_tensor_free(all[k]);
    char dst[600], args[1400];
    snprintf(dst, sizeof dst, "%s/typed_by_wick.gguf", g_dir);
    TU_STATUS_OK(wk_gguf_writer_write(w, dst));
    wk_gguf_writer_free(w);
    snprintf(args, sizeof args, "compare '%s/typed_ref.gguf' '%s'", g_dir, dst);
    assert_int_equal(run_py(args), 0);
    /* same layout choices as gguf-py (order, padding): the very same bytes */
    char ref[600];
    snprintf(ref, sizeof ref, "%s/typed_ref.gguf", g_dir);
    size_t na = 0, nb = 0;
    uint8_t *x = read_all(ref, &na), *y = read_all(dst, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

/* The writer refuses what would make a bad file, and stays usable. */
static void test_writer_refuses(void **state) {
    (void)state;
    wk_gguf_writer *w = wk_gguf_writer_new();
    wk_clear_error();
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "a", 1));
    assert_int_equal(wk_gguf_writer_add_i8(w, "a", 1), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "duplicate key 'a'"));
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_u32(w, "general.alignment", 48), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_u64(w, "general.alignment", 64), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_u8(w, "", 1), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_u8(w, "\xC0\x80", 1), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_array(w, "b", WK_GGUF_BOOL, (const uint8_t[]){2}, 1), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_array(w, "s", WK_GGUF_STRING, NULL, 0), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor *t = TU_OK(wk_zeros((const int64_t[]){2, 2}, 2, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t", t));
    assert_int_equal(wk_gguf_writer_add_tensor(w, "t", t), WK_ERR_ARG);
    wk_clear_error();
    char longname[80];
    memset(longname, 'x', 64);
    longname[64] = 0;
    assert_int_equal(wk_gguf_writer_add_tensor(w, longname, t), WK_ERR_ARG);
    wk_clear_error();
    wk_tensor *u = TU_OK(wk_zeros((const int64_t[]){2}, 1, WK_U8, wk_cpu()));
    assert_int_equal(wk_gguf_writer_add_tensor(w, "u", u), WK_ERR_DTYPE);
    wk_clear_error();
    wk_tensor *r5 = TU_OK(wk_zeros((const int64_t[]){1, 1, 1, 1, 2}, 5, WK_F32, wk_cpu()));
    assert_int_equal(wk_gguf_writer_add_tensor(w, "r5", r5), WK_ERR_SHAPE);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_add_tensor(w, "null", NULL), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_gguf_writer_write(w, "/nonexistent-dir/x.gguf"), WK_ERR_IO);
    wk_clear_error();
    /* what was accepted is written */
    char dst[600];
    snprintf(dst, sizeof dst, "%s/refuses.gguf", g_dir);
    TU_STATUS_OK(wk_gguf_writer_write(w, dst));
    wk_gguf *r = wk_gguf_open(dst);
    assert_non_null(r);
    assert_int_equal(wk_gguf_kv_count(r), 1);
    assert_int_equal(wk_gguf_tensor_count(r), 1);
    wk_gguf_close(r);
    wk_tensor_free(t);
    wk_tensor_free(u);
    wk_tensor_free(r5);
    wk_gguf_writer_free(w);
}

/* Every scalar type in hand-built v1 (32-bit lengths) and v2 images, an i16
 * array and an empty array; copied into a v3 file, the same values. */
static void build_scalars(gi *g, int version) {
    gi_header(g, version, 1, 14);
    const struct {
        const char *k;
        uint32_t ty;
        uint64_t bits;
        int sz;
    } sc[] = {{"u8", 0, 250, 1}, {"i8", 1, 0x80, 1}, {"u16", 2, 65000, 2}, {"i16", 3, 0x8001, 2},
              {"u32", 4, 4000000000u, 4}, {"i32", 5, 0xFFFFFFFEu, 4}, {"f32", 6, 0x40490FDBu, 4}, {"bool", 7, 1, 1},
              {"u64", 10, UINT64_MAX - 1, 8}, {"i64", 11, (uint64_t)INT64_MIN, 8}, {"f64", 12, 0x400921FB54442D18ull, 8}};
    for (int k = 0; k < 11; k++) {
        gi_str(g, sc[k].k);
        gi_u32(g, sc[k].ty);
        gi_put(g, &sc[k].bits, (size_t)sc[k].sz);
    }
    gi_kv_str(g, "str", "v1 string");
    gi_str(g, "arr16");
    gi_u32(g, 9);
    gi_u32(g, 3);
    gi_len(g, 3);
    for (int16_t v = -1; v <= 1; v++) gi_put(g, &v, 2);
    gi_str(g, "empty");
    gi_u32(g, 9);
    gi_u32(g, 8);
    gi_len(g, 0);
    gi_tensor(g, "w", 2, (const uint64_t[]){3, 2}, 0, 0);
    gi_pad(g, 32);
    for (int i = 0; i < 6; i++) {
        float f = (float)i - 2.5f;
        gi_put(g, &f, 4);
    }
}

static void check_scalars(const wk_gguf *r) {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    float f32;
    bool b;
    uint64_t u64;
    int64_t i64;
    double f64;
    TU_STATUS_OK(wk_gguf_get_u8(r, wk_gguf_find_key(r, "u8"), &u8));
    TU_STATUS_OK(wk_gguf_get_i8(r, wk_gguf_find_key(r, "i8"), &i8));
    TU_STATUS_OK(wk_gguf_get_u16(r, wk_gguf_find_key(r, "u16"), &u16));
    TU_STATUS_OK(wk_gguf_get_i16(r, wk_gguf_find_key(r, "i16"), &i16));
    TU_STATUS_OK(wk_gguf_get_u32(r, wk_gguf_find_key(r, "u32"), &u32));
    TU_STATUS_OK(wk_gguf_get_i32(r, wk_gguf_find_key(r, "i32"), &i32));
    TU_STATUS_OK(wk_gguf_get_f32(r, wk_gguf_find_key(r, "f32"), &f32));
    TU_STATUS_OK(wk_gguf_get_bool(r, wk_gguf_find_key(r, "bool"), &b));
    TU_STATUS_OK(wk_gguf_get_u64(r, wk_gguf_find_key(r, "u64"), &u64));
    TU_STATUS_OK(wk_gguf_get_i64(r, wk_gguf_find_key(r, "i64"), &i64));
    TU_STATUS_OK(wk_gguf_get_f64(r, wk_gguf_find_key(r, "f64"), &f64));
    assert_int_equal(u8, 250);
    assert_int_equal(i8, -128);
    assert_int_equal(u16, 65000);
    assert_int_equal(i16, -32767);
    assert_true(u32 == 4000000000u);
    assert_int_equal(i32, -2);
    assert_true(f32 == 3.14159274f);
    assert_true(b);
    assert_true(u64 == UINT64_MAX - 1);
    assert_true(i64 == INT64_MIN);
    assert_true(f64 == 3.141592653589793);
    const char *s;
    uint64_t n;
    TU_STATUS_OK(wk_gguf_get_string(r, wk_gguf_find_key(r, "str"), &s, &n));
    assert_int_equal(n, 9);
    assert_memory_equal(s, "v1 string", 9);
    int64_t ia = wk_gguf_find_key(r, "arr16");
    wk_gguf_type et;
    TU_STATUS_OK(wk_gguf_get_array(r, ia, &et, &n));
    assert_int_equal(et, WK_GGUF_I16);
    assert_int_equal(n, 3);
    TU_STATUS_OK(wk_gguf_array_i16(r, ia, 0, &i16));
    assert_int_equal(i16, -1);
    const void *d;
    size_t nb;
    TU_STATUS_OK(wk_gguf_array_data(r, ia, &d, &nb));
    assert_int_equal(nb, 6);
    TU_STATUS_OK(wk_gguf_get_array(r, wk_gguf_find_key(r, "empty"), &et, &n));
    assert_int_equal(et, WK_GGUF_STRING);
    assert_int_equal(n, 0);
    wk_tensor *w = TU_OK(wk_gguf_tensor(r, "w"));
    const double want[6] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5};
    tu_assert_shape(w, (const int64_t[]){2, 3}, 2);
    tu_assert_close(w, want, 6, 0, 0);
    wk_tensor_free(w);
}

static void test_v1_v2_images_and_copy_to_v3(void **state) {
    (void)state;
    for (int v = 1; v <= 2; v++) {
        gi g = {0};
        build_scalars(&g, v);
        wk_gguf *r = wk_gguf_open_bytes(g.b, g.n);
        gi_free(&g);
        assert_non_null(r);
        assert_int_equal(wk_gguf_version(r), v);
        check_scalars(r);
        wk_gguf_writer *w = wk_gguf_writer_new();
        for (int64_t i = 0; i < wk_gguf_kv_count(r); i++) TU_STATUS_OK(wk_gguf_writer_copy_kv(w, r, i));
        wk_tensor *t = TU_OK(wk_gguf_tensor(r, "w"));
        TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w", t));
        wk_tensor_free(t);
        wk_gguf_close(r);
        char dst[600];
        snprintf(dst, sizeof dst, "%s/from_v%d.gguf", g_dir, v);
        TU_STATUS_OK(wk_gguf_writer_write(w, dst));
        wk_gguf_writer_free(w);
        wk_gguf *b = wk_gguf_open(dst);
        assert_non_null(b);
        assert_int_equal(wk_gguf_version(b), 3);
        check_scalars(b);
        wk_gguf_close(b);
    }
}

static void test_ggml_type_table(void **state) {
    (void)state;
    uint32_t be, bb, id;
    wk_dtype dt;
    /* every wick dtype ggml has maps both ways with the same block geometry */
    for (int d = 0; d < WK_DTYPE_COUNT; d++) {
        if (!wk_dtype_to_ggml_type((wk_dtype)d, &id)) {
            assert_true(d == WK_U8 || d == WK_U32 || d == WK_F8E4M3);
            continue;
        }
        assert_true(wk_ggml_type_to_dtype(id, &dt));
        assert_int_equal(dt, d);
        assert_true(wk_ggml_type_block(id, &be, &bb));
        assert_int_equal(be, wk_dtype_info_of(dt)->block_elems);
        assert_int_equal(bb, wk_dtype_info_of(dt)->block_bytes);
        assert_true(wk_ggml_type_from_name(wk_ggml_type_name(id), &id));
        assert_int_equal(id, wk_dtype_to_ggml_type(dt, &be) ? be : 0);
    }
    assert_true(wk_ggml_type_from_name("Q4_K", &id) && id == WK_GGML_Q4_K);
    assert_true(wk_ggml_type_from_name("IQ2_XXS", &id) && id == WK_GGML_IQ2_XXS);
    assert_false(wk_ggml_type_from_name("q4_2", &id));
    assert_false(wk_ggml_type_to_dtype(WK_GGML_I8, &dt));
    assert_false(wk_ggml_type_to_dtype(WK_GGML_MXFP4, &dt));
    assert_null(wk_ggml_type_name(4));
    assert_null(wk_ggml_type_name(1000));
    assert_false(wk_ggml_type_block(31, &be, &bb));
    assert_true(wk_ggml_type_block(WK_GGML_IQ1_M, &be, &bb) && be == 256 && bb == 56);
    assert_string_equal(wk_gguf_type_name(WK_GGUF_STRING), "string");
    assert_string_equal(wk_gguf_type_name(WK_GGUF_TYPE_COUNT), "invalid");
}

/* ---- the real model ---- */

static void expect_u32(const wk_gguf *r, const char *key, uint32_t want) {
    uint32_t v;
    TU_STATUS_OK(wk_gguf_get_u32(r, wk_gguf_find_key(r, key), &v));
    assert_int_equal(v, want);
}

static void expect_str(const wk_gguf *r, const char *key, const char *want) {
    const char *s;
    uint64_t n;
    TU_STATUS_OK(wk_gguf_get_string(r, wk_gguf_find_key(r, key), &s, &n));
    assert_int_equal(n, strlen(want));
    assert_memory_equal(s, want, n);
}

static void test_smollm2(void **state) {
    (void)state;
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    if (!path || !*path) {
        fprintf(stderr, "skipped: WICK_SMOLLM2_GGUF is unset (run ./scripts/setup.sh)\n");
        skip();
    }
    uint64_t copied = wk__map_tensor_copied();
    wk_gguf *r = wk_gguf_open(path);
    assert_non_null(r);
    assert_int_equal(wk_gguf_version(r), 3);
    assert_int_equal(wk_gguf_file_size(r), 98362432);
    expect_str(r, "general.architecture", "llama");
    expect_u32(r, "llama.block_count", 30);
    expect_u32(r, "llama.embedding_length", 576);
    expect_u32(r, "llama.feed_forward_length", 1536);
    expect_u32(r, "llama.attention.head_count", 9);
    expect_u32(r, "llama.attention.head_count_kv", 3);
    expect_u32(r, "llama.context_length", 8192);
    expect_u32(r, "llama.vocab_size", 49152);
    expect_u32(r, "tokenizer.ggml.eos_token_id", 2);
    expect_str(r, "tokenizer.ggml.model", "gpt2");
    expect_str(r, "tokenizer.ggml.pre", "smollm");
    float f;
    TU_STATUS_OK(wk_gguf_get_f32(r, wk_gguf_find_key(r, "llama.rope.freq_base"), &f));
    assert_true(f == 100000.0f);
    TU_STATUS_OK(wk_gguf_get_f32(r, wk_gguf_find_key(r, "llama.attention.layer_norm_rms_epsilon"), &f));
    assert_true(f == 1e-5f);
    wk_gguf_type et;
    uint64_t n;
    int64_t tok = wk_gguf_find_key(r, "tokenizer.ggml.tokens");
    TU_STATUS_OK(wk_gguf_get_array(r, tok, &et, &n));
    assert_int_equal(et, WK_GGUF_STRING);
    assert_int_equal(n, 49152);
    const char *specials[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    for (int k = 0; k < 3; k++) {
        const char *s;
        uint64_t len;
        TU_STATUS_OK(wk_gguf_array_string(r, tok, (uint64_t)k, &s, &len));
        assert_int_equal(len, strlen(specials[k]));
        assert_memory_equal(s, specials[k], len);
    }
    TU_STATUS_OK(wk_gguf_get_array(r, wk_gguf_find_key(r, "tokenizer.ggml.merges"), &et, &n));
    assert_int_equal(et, WK_GGUF_STRING);
    assert_int_equal(n, 48900);
    TU_STATUS_OK(wk_gguf_get_array(r, wk_gguf_find_key(r, "tokenizer.ggml.token_type"), &et, &n));
    assert_int_equal(et, WK_GGUF_I32);
    assert_int_equal(n, 49152);
    assert_true(wk_gguf_find_key(r, "tokenizer.chat_template") >= 0);

    assert_int_equal(wk_gguf_tensor_count(r), 272);
    int q41 = 0, f32 = 0, q80 = 0;
    for (int64_t i = 0; i < 272; i++) {
        uint32_t ty = wk_gguf_tensor_ggml_type(r, i);
        q41 += ty == WK_GGML_Q4_1;
        f32 += ty == WK_GGML_F32;
        q80 += ty == WK_GGML_Q8_0;
    }
    assert_int_equal(q41, 210);
    assert_int_equal(f32, 61);
    assert_int_equal(q80, 1);
    assert_int_equal(wk_gguf_find_tensor(r, "output.weight"), -1); /* tied embeddings */
    wk_tensor *emb = TU_OK(wk_gguf_tensor(r, "token_embd.weight"));
    assert_int_equal(wk_tensor_dtype(emb), WK_Q8_0);
    tu_assert_shape(emb, (const int64_t[]){49152, 576}, 2);
    wk_tensor_free(emb);

    /* every metadata value and tensor byte as gguf-py sees them */
    if (have_python()) {
        char txt[600], args[1400];
        snprintf(txt, sizeof txt, "%s/smollm2.txt", g_dir);
        snprintf(args, sizeof args, "dump '%s' '%s'", path, txt);
        assert_int_equal(run_py(args), 0);
        check_listing(r, txt);
    }
    assert_int_equal(wk__map_tensor_copied(), copied);
    wk_gguf_close(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ggml_type_table),
        cmocka_unit_test(test_v1_v2_images_and_copy_to_v3),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_reads_gguf_py_files),
        cmocka_unit_test(test_wick_writes_what_gguf_py_reads),
        cmocka_unit_test(test_typed_writer_matches_gguf_py),
        cmocka_unit_test(test_smollm2),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
