/* Allocation-failure injection on the model-file and block-dtype paths
 * (tests/alloc_fail.c's harness: each program runs clean, then once per
 * allocation it makes with exactly that one failing; every run must stop
 * with WK_ERR_OOM and a message, the calls before it giving the clean
 * results, and leave no tensor bytes or host blocks behind):
 *  - gguf_read: a writer-made GGUF (metadata of all 12 value kinds, numeric
 *    and string arrays, element and block tensors; a second file at
 *    alignment 1, whose tensors are misplaced and copied) opened from the
 *    file and from bytes, everything queried, every tensor viewed, a view
 *    used after its reader is closed;
 *  - gguf_write: every metadata kind, a copied kv, contiguous, strided,
 *    rank-0 and block tensors, written;
 *  - safetensors: a file, a sharded index (by path and by directory), an
 *    image in memory; infos, metadata, get / get_as; save from views;
 *  - map: wk__map_from_bytes / wk__map_open / wk__map_tensor, aligned and
 *    misaligned (the private copy), a tensor outliving its map reference;
 *  - quant: wk_quantize / wk_dequantize / wk_to_dtype both ways and through
 *    f32, strided sources, a pool-sized tensor on 2 threads, block views,
 *    index_select and cat of block tensors;
 *  - real_model: the real SmolLM2 GGUF opened and every tensor viewed
 *    (skipped when WICK_SMOLLM2_GGUF is unset).
 * Fixture files are written before the counted runs, into a temp dir. */
#include "alloc_fail.h"

#include "io/map_file.h"
#include "wick/gguf.h"
#include "wick/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[64] = "/tmp/wick_allocfail_io_XXXXXX";
static char g_gguf[256], g_gguf_a1[256], g_gguf_out[256], g_st[256], g_st_out[256], g_sh[256], g_sh_index[256],
    g_empty[256];
static unsigned char *g_img, *g_st_img; /* the GGUF and safetensors files' bytes */
static size_t g_img_n, g_st_img_n;

static const char *path_in(char *buf, const char *name) {
    snprintf(buf, 256, "%s/%s", g_dir, name);
    return buf;
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len > 0);
    rewind(f);
    unsigned char *b = malloc((size_t)len);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
}

/* ---- metadata of every kind, shared by the fixture and gguf_write ---- */

static const uint8_t g_u8s[3] = {1, 2, 250};
static const int8_t g_i8s[2] = {-3, 4};
static const uint16_t g_u16s[2] = {7, 65535};
static const int16_t g_i16s[2] = {-300, 301};
static const uint32_t g_u32s[2] = {70000, 1};
static const int32_t g_i32s[3] = {-1, 0, 1};
static const float g_f32s[2] = {0.5f, -2.25f};
static const uint8_t g_bools[3] = {1, 0, 1};
static const uint64_t g_u64s[1] = {1ull << 40};
static const int64_t g_i64s[2] = {-(1ll << 40), 5};
static const double g_f64s[2] = {3.125, -1e300};
/* more than 16 strings: the sparse string index gets two entries */
static const char *const g_strs[20] = {"a", "bb", "", "dddd", "e", "f", "g", "h", "i", "j",
                                       "k", "l", "m", "n", "o", "p", "q", "r", "s", "tail"};
static const uint64_t g_lens[3] = {2, 0, 3};

static wk_status add_metadata(wk_gguf_writer *w) {
    wk_status st = WK_OK;
#define ADD(call)                             \
    do {                                      \
        if ((st = (call)) != WK_OK) return st; \
    } while (0)
    ADD(wk_gguf_writer_add_string(w, "general.architecture", "llama", 5));
    ADD(wk_gguf_writer_add_u8(w, "k.u8", 200));
    ADD(wk_gguf_writer_add_i8(w, "k.i8", -100));
    ADD(wk_gguf_writer_add_u16(w, "k.u16", 60000));
    ADD(wk_gguf_writer_add_i16(w, "k.i16", -30000));
    ADD(wk_gguf_writer_add_u32(w, "k.u32", 4000000000u));
    ADD(wk_gguf_writer_add_i32(w, "k.i32", -2000000000));
    ADD(wk_gguf_writer_add_f32(w, "k.f32", 1.5f));
    ADD(wk_gguf_writer_add_bool(w, "k.bool", true));
    ADD(wk_gguf_writer_add_u64(w, "k.u64", 1ull << 50));
    ADD(wk_gguf_writer_add_i64(w, "k.i64", -(1ll << 50)));
    ADD(wk_gguf_writer_add_f64(w, "k.f64", 2.5e-300));
    ADD(wk_gguf_writer_add_string(w, "k.bytes", "x\0y", 3));
    ADD(wk_gguf_writer_add_array(w, "a.u8", WK_GGUF_U8, g_u8s, 3));
    ADD(wk_gguf_writer_add_array(w, "a.i8", WK_GGUF_I8, g_i8s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.u16", WK_GGUF_U16, g_u16s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.i16", WK_GGUF_I16, g_i16s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.u32", WK_GGUF_U32, g_u32s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.i32", WK_GGUF_I32, g_i32s, 3));
    ADD(wk_gguf_writer_add_array(w, "a.f32", WK_GGUF_F32, g_f32s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.bool", WK_GGUF_BOOL, g_bools, 3));
    ADD(wk_gguf_writer_add_array(w, "a.u64", WK_GGUF_U64, g_u64s, 1));
    ADD(wk_gguf_writer_add_array(w, "a.i64", WK_GGUF_I64, g_i64s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.f64", WK_GGUF_F64, g_f64s, 2));
    ADD(wk_gguf_writer_add_array(w, "a.empty", WK_GGUF_F32, NULL, 0));
    ADD(wk_gguf_writer_add_string_array(w, "a.strings", g_strs, NULL, 20));
    ADD(wk_gguf_writer_add_string_array(w, "a.lens", (const char *const[]){"xyz", "", "abcd"}, g_lens, 3));
#undef ADD
    return st;
}

/* The fixture's tensors (made and freed outside the counted runs). */
static void write_fixture_gguf(const char *path, uint32_t alignment) {
    wk_device *cpu = wk_cpu();
    wk_scope_begin(); /* frees the tensors */
    wk_gguf_writer *w = wk_gguf_writer_new();
    assert_non_null(w);
    TU_STATUS_OK(add_metadata(w));
    if (alignment) TU_STATUS_OK(wk_gguf_writer_add_u32(w, "general.alignment", alignment));
    wk_tensor *f = wk_arange(0, 64, 1, WK_F32, cpu);
    wk_tensor *m = wk_reshape(f, (int64_t[]){2, 32}, 2);
    wk_tensor *h = wk_to_dtype(m, WK_F16);
    wk_tensor *i16 = wk_to_dtype(wk_narrow(f, 0, 0, 1), WK_I16);
    wk_tensor *q4 = wk_quantize(m, WK_Q4_0);
    wk_tensor *q8 = wk_quantize(m, WK_Q8_0);
    wk_tensor *big = wk_rand((int64_t[]){2, 256}, 2, -1, 1, WK_F32, cpu);
    wk_tensor *qk = wk_quantize(big, WK_Q4_K);
    assert_non_null(qk);
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t.i16", i16)); /* 2 bytes: what follows is misplaced at alignment 1 */
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t.f32", m));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t.f16", h));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t.q4_0", q4));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t.q8_0", q8));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "t.q4_k", qk));
    TU_STATUS_OK(wk_gguf_writer_write(w, path));
    wk_gguf_writer_free(w);
    wk_scope_end();
}

/* ---- gguf_read ---- */

/* Value i of g (any kind) as a number, through the typed getters. */
static wk_status kv_value(const wk_gguf *g, int64_t i, double *out) {
    wk_status st = WK_OK;
    switch (wk_gguf_kv_type(g, i)) {
    case WK_GGUF_U8: { uint8_t v; st = wk_gguf_get_u8(g, i, &v); *out = v; break; }
    case WK_GGUF_I8: { int8_t v; st = wk_gguf_get_i8(g, i, &v); *out = v; break; }
    case WK_GGUF_U16: { uint16_t v; st = wk_gguf_get_u16(g, i, &v); *out = v; break; }
    case WK_GGUF_I16: { int16_t v; st = wk_gguf_get_i16(g, i, &v); *out = v; break; }
    case WK_GGUF_U32: { uint32_t v; st = wk_gguf_get_u32(g, i, &v); *out = v; break; }
    case WK_GGUF_I32: { int32_t v; st = wk_gguf_get_i32(g, i, &v); *out = v; break; }
    case WK_GGUF_F32: { float v; st = wk_gguf_get_f32(g, i, &v); *out = v; break; }
    case WK_GGUF_BOOL: { bool v; st = wk_gguf_get_bool(g, i, &v); *out = v; break; }
    case WK_GGUF_U64: { uint64_t v; st = wk_gguf_get_u64(g, i, &v); *out = (double)v; break; }
    case WK_GGUF_I64: { int64_t v; st = wk_gguf_get_i64(g, i, &v); *out = (double)v; break; }
    case WK_GGUF_F64: { double v; st = wk_gguf_get_f64(g, i, &v); *out = v; break; }
    case WK_GGUF_STRING: {
        const char *s;
        uint64_t len;
        st = wk_gguf_get_string(g, i, &s, &len);
        *out = st == WK_OK ? (double)len * 1000 + (len ? (unsigned char)s[len - 1] : 0) : 0;
        break;
    }
    case WK_GGUF_ARRAY: {
        wk_gguf_type et;
        uint64_t n;
        if ((st = wk_gguf_get_array(g, i, &et, &n)) != WK_OK) return st;
        double s = (double)n;
        for (uint64_t j = 0; j < n && st == WK_OK; j++) {
            double v = 0;
            switch (et) {
            case WK_GGUF_U8: { uint8_t x; st = wk_gguf_array_u8(g, i, j, &x); v = x; break; }
            case WK_GGUF_I8: { int8_t x; st = wk_gguf_array_i8(g, i, j, &x); v = x; break; }
            case WK_GGUF_U16: { uint16_t x; st = wk_gguf_array_u16(g, i, j, &x); v = x; break; }
            case WK_GGUF_I16: { int16_t x; st = wk_gguf_array_i16(g, i, j, &x); v = x; break; }
            case WK_GGUF_U32: { uint32_t x; st = wk_gguf_array_u32(g, i, j, &x); v = x; break; }
            case WK_GGUF_I32: { int32_t x; st = wk_gguf_array_i32(g, i, j, &x); v = x; break; }
            case WK_GGUF_F32: { float x; st = wk_gguf_array_f32(g, i, j, &x); v = x; break; }
            case WK_GGUF_BOOL: { bool x; st = wk_gguf_array_bool(g, i, j, &x); v = x; break; }
            case WK_GGUF_U64: { uint64_t x; st = wk_gguf_array_u64(g, i, j, &x); v = (double)x; break; }
            case WK_GGUF_I64: { int64_t x; st = wk_gguf_array_i64(g, i, j, &x); v = (double)x; break; }
            case WK_GGUF_F64: { double x; st = wk_gguf_array_f64(g, i, j, &x); v = x; break; }
            case WK_GGUF_STRING: {
                const char *x;
                uint64_t len;
                st = wk_gguf_array_string(g, i, j, &x, &len);
                v = st == WK_OK ? (double)len + (len ? (unsigned char)x[0] : 0) : 0;
                break;
            }
            case WK_GGUF_ARRAY: case WK_GGUF_TYPE_COUNT:
                return WK_ERR_INTERNAL;
            }
            s += v * (double)(j + 2);
        }
        if (st == WK_OK && et != WK_GGUF_STRING) {
            const void *data;
            size_t nb;
            if ((st = wk_gguf_array_data(g, i, &data, &nb)) == WK_OK) s += (double)nb;
        }
        *out = s;
        break;
    }
    case WK_GGUF_TYPE_COUNT:
        return WK_ERR_INTERNAL;
    }
    return st;
}

static int query_gguf(af_trace *tr, const wk_gguf *g, wk_tensor **keep) {
    wk_tensor *t;
    V(wk_gguf_version(g));
    V(wk_gguf_alignment(g));
    V(wk_gguf_data_offset(g));
    V(wk_gguf_file_size(g));
    V(wk_gguf_kv_count(g));
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        V(wk_gguf_find_key(g, wk_gguf_key(g, i)) == i);
        double v = 0;
        S(kv_value(g, i, &v));
        V(v);
    }
    V(wk_gguf_tensor_count(g));
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        const char *name = wk_gguf_tensor_name(g, i);
        int64_t shape[4];
        V(wk_gguf_find_tensor(g, name) == i);
        V(wk_gguf_tensor_ggml_type(g, i));
        V(wk_gguf_tensor_shape(g, i, shape));
        V(wk_gguf_tensor_offset(g, i));
        V(wk_gguf_tensor_nbytes(g, i));
        T(t, wk_gguf_tensor_at(g, i));
        wk_tensor_free(t);
        t = NULL;
        T(t, wk_gguf_tensor(g, name));
        if (i == 1) *keep = t; /* used after the reader is closed */
        else wk_tensor_free(t);
    }
    return 1;
done:
    return 0;
}

static void prog_gguf_read(af_trace *tr) {
    wk_gguf *g = NULL;
    wk_tensor *keep = NULL;
    const char *files[2] = {g_gguf, g_gguf_a1};
    for (int f = 0; f < 2; f++) {
        if (!(g = wk_gguf_open(files[f]))) {
            af_fail_with(tr, wk_last_status());
            goto done;
        }
        if (!query_gguf(tr, g, &keep)) goto done;
        wk_gguf_close(g);
        g = NULL;
        T(keep, keep);
        wk_tensor_free(keep);
        keep = NULL;
    }
    if (!(g = wk_gguf_open_bytes(g_img, g_img_n))) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    if (!query_gguf(tr, g, &keep)) goto done;
done:
    wk_gguf_close(g);
    wk_tensor_free(keep);
}

/* ---- gguf_write ---- */

static wk_gguf *g_copy_src; /* a reader opened outside the runs, for copy_kv */

static void prog_gguf_write(af_trace *tr) {
    wk_device *cpu = wk_cpu();
    wk_gguf_writer *w = NULL;
    wk_tensor *a = NULL, *at = NULL, *h = NULL, *s = NULL, *q = NULL, *q3 = NULL, *qt = NULL;
    wk_scope_begin();
    S(wk_last_status());
    if (!(w = wk_gguf_writer_new())) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    S(add_metadata(w));
    S(wk_gguf_writer_add_u32(w, "general.alignment", 64));
    T(a, wk_arange(0, 96, 1, WK_F32, cpu));
    T(a, wk_reshape(a, (int64_t[]){3, 32}, 2));
    S(wk_gguf_writer_add_tensor(w, "contig", a));
    T(at, wk_transpose(a, 0, 1));
    S(wk_gguf_writer_add_tensor(w, "strided", at));
    T(h, wk_to_dtype(wk_narrow(a, 1, 3, 5), WK_F16));
    S(wk_gguf_writer_add_tensor(w, "f16", h));
    T(s, wk_full(NULL, 0, 7, WK_F32, cpu));
    S(wk_gguf_writer_add_tensor(w, "scalar", s));
    T(q, wk_quantize(a, WK_Q8_0));
    S(wk_gguf_writer_add_tensor(w, "q8_0", q));
    T(q3, wk_quantize(wk_reshape(wk_arange(0, 192, 1, WK_F32, cpu), (int64_t[]){2, 3, 32}, 3), WK_Q4_1));
    T(qt, wk_transpose(q3, 0, 1)); /* rows out of order: written as a contiguous copy */
    S(wk_gguf_writer_add_tensor(w, "q4_1.t", qt));
    S(wk_gguf_writer_write(w, g_gguf_out));
    /* a second writer copies every kv of a reader (all kinds) */
    wk_gguf_writer_free(w);
    if (!(w = wk_gguf_writer_new())) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    for (int64_t i = 0; i < wk_gguf_kv_count(g_copy_src); i++) S(wk_gguf_writer_copy_kv(w, g_copy_src, i));
    S(wk_gguf_writer_add_tensor(w, "q", q));
    S(wk_gguf_writer_write(w, g_gguf_out));
done:
    wk_gguf_writer_free(w);
    wk_scope_end();
}

/* ---- gguf_write_retry: a failed add leaves the writer as it was ---- */

static wk_tensor *g_wt[4]; /* made in setup: contiguous, strided, block, rank 0 */

/* The file's bytes, weighted by position (read with open/read: no stream to fail). */
static double file_sum(const char *path) {
    static unsigned char b[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    double s = (double)n;
    for (ssize_t i = 0; i < n; i++) s += (double)b[i] * (double)(1 + i % 13);
    return s;
}

/* Retried once when the one failing allocation hit it. */
#define R(expr)                                  \
    do {                                         \
        wk_status st_ = (expr);                  \
        if (st_ == WK_ERR_OOM) st_ = (expr);     \
        if (!af_step_s(tr, st_)) goto done;      \
    } while (0)

/* Every add that fails is made again: the file must come out byte for byte
 * as in the clean run, so a failed add must roll back whatever it began. */
static void prog_gguf_write_retry(af_trace *tr) {
    wk_gguf_writer *w = wk_gguf_writer_new();
    if (!w) w = wk_gguf_writer_new();
    if (!w) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    R(wk_gguf_writer_add_string(w, "general.architecture", "llama", 5));
    R(wk_gguf_writer_add_u32(w, "general.alignment", 16));
    R(wk_gguf_writer_add_string_array(w, "a.strings", g_strs, NULL, 20));
    R(wk_gguf_writer_add_array(w, "a.f64", WK_GGUF_F64, g_f64s, 2));
    R(wk_gguf_writer_copy_kv(w, g_copy_src, wk_gguf_find_key(g_copy_src, "a.lens")));
    R(wk_gguf_writer_add_tensor(w, "contig", g_wt[0]));
    R(wk_gguf_writer_add_tensor(w, "strided", g_wt[1]));
    R(wk_gguf_writer_add_tensor(w, "q8_0", g_wt[2]));
    R(wk_gguf_writer_add_tensor(w, "scalar", g_wt[3]));
    R(wk_gguf_writer_write(w, g_gguf_out));
    V(file_sum(g_gguf_out));
done:
    wk_gguf_writer_free(w);
}

/* ---- safetensors ---- */

static int query_st(af_trace *tr, wk_safetensors *st) {
    wk_tensor *t;
    V(wk_safetensors_count(st));
    V(wk_safetensors_shard_count(st));
    V(wk_safetensors_meta_count(st));
    for (int i = 0; i < wk_safetensors_meta_count(st); i++)
        V(strlen(wk_safetensors_meta_value(st, wk_safetensors_meta_key(st, i))));
    for (int i = 0; i < wk_safetensors_count(st); i++) {
        const char *name = wk_safetensors_name(st, i);
        wk_safetensors_info info;
        V(wk_safetensors_find(st, name) == i);
        S(wk_safetensors_info_at(st, i, &info));
        V(info.nbytes * 100 + (uint64_t)info.rank * 10 + (uint64_t)info.shard);
        T(t, wk_safetensors_get(st, name));
        wk_tensor_free(t);
        t = NULL;
        T(t, wk_safetensors_get_as(st, name, WK_F16, wk_cpu()));
        wk_tensor_free(t);
        t = NULL;
        T(t, wk_safetensors_get_as(st, name, info.dtype, wk_cpu()));
        wk_tensor_free(t);
        t = NULL;
    }
    return 1;
done:
    return 0;
}

static void prog_safetensors(af_trace *tr) {
    wk_device *cpu = wk_cpu();
    wk_safetensors *st = NULL;
    wk_tensor *a = NULL, *v[3] = {0};
    int inner = 0;
    const char *opens[3] = {g_st, g_sh_index, g_sh};
    for (int o = 0; o < 3; o++) {
        if (!(st = wk_safetensors_open(opens[o]))) {
            af_fail_with(tr, wk_last_status());
            goto done;
        }
        if (!query_st(tr, st)) goto done;
        wk_safetensors_close(st);
        st = NULL;
    }
    if (!(st = wk_safetensors_open_bytes(g_st_img, g_st_img_n))) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    if (!query_st(tr, st)) goto done;
    /* save from views: a transpose, a narrow, a broadcast */
    wk_scope_begin();
    inner = 1;
    S(wk_last_status());
    T(a, wk_reshape(wk_arange(0, 12, 1, WK_F32, cpu), (int64_t[]){3, 4}, 2));
    T(v[0], wk_transpose(a, 0, 1));
    T(v[1], wk_to_dtype(wk_narrow(a, 1, 1, 2), WK_I64));
    T(v[2], wk_broadcast_as(wk_narrow(a, 0, 0, 1), (int64_t[]){2, 4}, 2));
    S(wk_safetensors_save(g_st_out, 3, (const char *const[]){"t", "n", "b"}, v, 2,
                          (const char *const[]){"format", "x"}, (const char *const[]){"pt", "y"}));
done:
    if (inner) wk_scope_end();
    wk_safetensors_close(st);
}

/* ---- map ---- */

static void prog_map(af_trace *tr) {
    wk__map *m = NULL, *e = NULL;
    wk_tensor *t = NULL;
    const char *op = "alloc_fail_io";
    static const float vals[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    unsigned char bytes[1 + sizeof vals];
    bytes[0] = 0xAB;
    memcpy(bytes + 1, vals, sizeof vals);
    if (!(m = wk__map_from_bytes(op, bytes, sizeof bytes))) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    V(wk__map_size(m));
    T(t, wk__map_tensor(op, "misaligned", m, 1, WK_F32, (int64_t[]){2, 4}, 2)); /* the private copy */
    wk_tensor_free(t);
    t = NULL;
    T(t, wk__map_tensor(op, "bytes", m, 0, WK_U8, (int64_t[]){37}, 1));
    wk_tensor_free(t);
    t = NULL;
    T(t, wk__map_tensor(op, "empty", m, 0, WK_F32, (int64_t[]){0}, 1));
    wk_tensor_free(t);
    t = NULL;
    wk__map_release(m);
    m = NULL;
    if (!(m = wk__map_from_bytes(op, NULL, 0))) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    V(wk__map_size(m));
    wk__map_release(m);
    m = NULL;
    if (!(e = wk__map_open(op, g_empty))) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    V(wk__map_size(e));
    if (!(m = wk__map_open(op, g_gguf))) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    V(wk__map_size(m));
    T(t, wk__map_tensor(op, "aligned", m, 64, WK_F32, (int64_t[]){4, 4}, 2));
    wk_tensor_free(t);
    t = NULL;
    T(t, wk__map_tensor(op, "odd", m, 67, WK_F16, (int64_t[]){5}, 1)); /* misaligned: copied */
    wk_tensor_free(t);
    t = NULL;
    T(t, wk__map_tensor(op, "q8_0", m, 34, WK_Q8_0, (int64_t[]){2, 32}, 2));
    wk__map_release(m); /* t keeps the map alive */
    m = NULL;
    T(t, t);
done:
    wk_tensor_free(t);
    t = NULL;
    wk__map_release(m);
    wk__map_release(e);
}

/* ---- quant ---- */

static void prog_quant(af_trace *tr) {
    wk_device *cpu = wk_cpu();
    wk_tensor *x, *q, *k, *d, *r, *big, *bq, *ids, *v;
    wk_device_set_seed(cpu, 99);
    wk_scope_begin();
    S(wk_last_status());
    T(x, wk_rand((int64_t[]){4, 256}, 2, -1, 1, WK_F32, cpu));
    T(q, wk_quantize(x, WK_Q4_0));
    T(d, wk_dequantize(q, WK_F32));
    T(d, wk_dequantize(q, WK_F16));
    T(d, wk_dequantize(q, WK_BF16));
    T(d, wk_dequantize(q, WK_F64)); /* through f32 */
    T(k, wk_quantize(x, WK_Q4_K));
    T(r, wk_quantize(k, WK_Q8_0)); /* requantize through f32 */
    T(r, wk_to_dtype(k, WK_Q6_K));
    T(r, wk_to_dtype(q, WK_I32));
    T(r, wk_to_dtype(x, WK_IQ4_NL));
    T(r, wk_to_dtype(wk_to_dtype(x, WK_I32), WK_Q8_0)); /* integers through f32 */
    T(r, wk_quantize(wk_to_dtype(x, WK_F16), WK_Q5_0));
    T(r, wk_quantize(wk_to_dtype(x, WK_BF16), WK_Q5_1));
    T(r, wk_quantize(wk_to_dtype(x, WK_F64), WK_Q8_1));
    T(r, wk_quantize(wk_transpose(wk_reshape(x, (int64_t[]){32, 32}, 2), 0, 1), WK_Q4_1)); /* strided source */
    /* pool-sized: the work spreads over both threads */
    T(big, wk_rand((int64_t[]){64, AF_BIG / 64}, 2, -1, 1, WK_F32, cpu));
    T(bq, wk_quantize(big, WK_Q8_0));
    T(d, wk_dequantize(bq, WK_F32));
    /* block views, gathers, joins */
    T(v, wk_narrow(q, 0, 1, 2));
    T(d, wk_dequantize(v, WK_F32));
    T(v, wk_contiguous(v));
    T(v, wk_transpose(wk_reshape(q, (int64_t[]){2, 2, 256}, 3), 0, 1));
    T(v, wk_contiguous(v));
    T(ids, wk_from_host((int64_t[]){3, 0, 3}, 3 * sizeof(int64_t), (int64_t[]){3}, 1, WK_I64, cpu));
    T(v, wk_index_select(q, ids, 0));
    T(v, wk_cat((wk_tensor *[]){q, wk_narrow(q, 0, 2, 1)}, 2, 0));
    T(v, wk_cat((wk_tensor *[]){q, q}, 2, 1));
    T(v, wk_to_device(v, cpu));
done:
    wk_scope_end();
}

/* ---- the tests ---- */

static int setup(void **state) {
    (void)state;
    if (!mkdtemp(g_dir)) return -1;
    path_in(g_gguf, "m.gguf");
    path_in(g_gguf_a1, "a1.gguf");
    path_in(g_gguf_out, "out.gguf");
    path_in(g_st, "a.safetensors");
    path_in(g_st_out, "out.safetensors");
    path_in(g_sh, "sh");
    path_in(g_sh_index, "sh/model.safetensors.index.json");
    path_in(g_empty, "empty");
    write_fixture_gguf(g_gguf, 0);
    write_fixture_gguf(g_gguf_a1, 1);
    g_img = read_all(g_gguf, &g_img_n);
    write_text(g_empty, "");

    wk_device *cpu = wk_cpu();
    wk_scope_begin(); /* frees the fixture's tensors */
    wk_tensor *f = wk_reshape(wk_arange(0, 24, 1, WK_F32, cpu), (int64_t[]){2, 3, 4}, 3);
    wk_tensor *ts[4] = {f, wk_to_dtype(f, WK_BF16), wk_to_dtype(wk_transpose(f, 0, 2), WK_I64),
                        wk_to_dtype(wk_narrow(f, 2, 0, 1), WK_U8)};
    const char *names[4] = {"w.f32", "w.bf16", "w.i64", "w.u8"};
    const char *mk[2] = {"format", "note"}, *mv[2] = {"pt", "fixture"};
    TU_STATUS_OK(wk_safetensors_save(g_st, 4, names, ts, 2, mk, mv));
    g_st_img = read_all(g_st, &g_st_img_n);
    if (mkdir(g_sh, 0700)) return -1;
    char p[256];
    TU_STATUS_OK(wk_safetensors_save(path_in(p, "sh/b-2.safetensors"), 2, names, ts, 1, mk, mv));
    TU_STATUS_OK(wk_safetensors_save(path_in(p, "sh/a-1.safetensors"), 2, names + 2, ts + 2, 0, NULL, NULL));
    write_text(g_sh_index, "{\"metadata\": {\"total_size\": 99, \"ok\": true, \"name\": \"m\"},"
                           " \"weight_map\": {\"w.f32\": \"b-2.safetensors\", \"w.bf16\": \"b-2.safetensors\","
                           " \"w.i64\": \"a-1.safetensors\", \"w.u8\": \"a-1.safetensors\"}}");
    wk_scope_end();
    if (!(g_copy_src = wk_gguf_open(g_gguf))) return -1;
    wk_scope_begin(); /* frees the temporaries; the four are kept */
    g_wt[0] = wk_reshape(wk_arange(0, 96, 1, WK_F32, cpu), (int64_t[]){3, 32}, 2);
    g_wt[1] = wk_transpose(g_wt[0], 0, 1);
    g_wt[2] = wk_quantize(g_wt[0], WK_Q8_0);
    g_wt[3] = wk_full(NULL, 0, 7, WK_F32, cpu);
    for (int i = 0; i < 4; i++) g_wt[i] = wk_keep(g_wt[i]);
    wk_scope_end();
    TU_STATUS_OK(wk_set_num_threads(2));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    wk_gguf_close(g_copy_src);
    for (int i = 0; i < 4; i++) wk_tensor_free(g_wt[i]);
    free(g_img);
    free(g_st_img);
    char p[256];
    const char *files[] = {g_gguf, g_gguf_a1, g_gguf_out, g_st, g_st_out, g_sh_index, g_empty,
                           path_in(p, "sh/b-2.safetensors")};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) unlink(files[i]);
    unlink(path_in(p, "sh/a-1.safetensors"));
    rmdir(g_sh);
    rmdir(g_dir);
    return 0;
}

/* Each scenario must reach a real number of failure points and may absorb
 * none: no path here has a fallback for a failed allocation. */
static void check(const char *name, af_program prog, long min_allocs) {
    af_result r = af_fail_each(name, prog);
    if (r.allocs < min_allocs) fail_msg("%s: only %ld allocations (expected at least %ld)", name, r.allocs, min_allocs);
    assert_int_equal(r.absorbed, 0);
    assert_true(r.unreached <= r.allocs / 20);
}

/* The misplaced tensors of the alignment-1 file and the map scenario's
 * odd offsets really took the copy path. */
static void test_gguf_read(void **state) {
    (void)state;
    uint64_t c0 = wk__map_tensor_copied();
    check("gguf_read", prog_gguf_read, 20);
    assert_true(wk__map_tensor_copied() > c0);
}
static void test_gguf_write(void **state) { (void)state; check("gguf_write", prog_gguf_write, 40); }
/* Every failure is absorbed by the retry (the final write's checksum equals
 * the clean run's); none is left. */
static void test_gguf_write_retry(void **state) {
    (void)state;
    af_result r = af_fail_each("gguf_write_retry", prog_gguf_write_retry);
    assert_true(r.allocs >= 20);
    assert_int_equal(r.absorbed, r.allocs);
}
static void test_safetensors(void **state) { (void)state; check("safetensors", prog_safetensors, 40); }
static void test_map(void **state) {
    (void)state;
    uint64_t c0 = wk__map_tensor_copied();
    check("map", prog_map, 8);
    assert_true(wk__map_tensor_copied() > c0);
}

/* The real SmolLM2 GGUF (49152-token vocabulary, 272 tensors): opened, its
 * metadata's types and lengths read, a string of every array at its end
 * (the sparse index), every tensor viewed (not read: its numel recorded). */
static const char *g_model;

static void prog_model(af_trace *tr) {
    wk_gguf *g = wk_gguf_open(g_model);
    wk_tensor *t = NULL;
    if (!g) {
        af_fail_with(tr, wk_last_status());
        goto done;
    }
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        V(wk_gguf_kv_type(g, i));
        wk_gguf_type et;
        uint64_t n;
        if (wk_gguf_kv_type(g, i) != WK_GGUF_ARRAY) continue;
        S(wk_gguf_get_array(g, i, &et, &n));
        V(n);
        if (et == WK_GGUF_STRING && n) {
            const char *s;
            uint64_t len;
            S(wk_gguf_array_string(g, i, n - 1, &s, &len));
            V(len);
        }
    }
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        if (!(t = wk_gguf_tensor_at(g, i))) {
            af_fail_with(tr, wk_last_status());
            goto done;
        }
        V(wk_numel(t));
        wk_tensor_free(t);
        t = NULL;
    }
done:
    wk_tensor_free(t);
    wk_gguf_close(g);
}

static void test_real_model(void **state) {
    (void)state;
    g_model = getenv("WICK_SMOLLM2_GGUF");
    if (!g_model || access(g_model, R_OK) != 0) {
        print_message("skipped: WICK_SMOLLM2_GGUF is not set or not readable (scripts/setup.sh provides it)\n");
        skip();
    }
    check("real_model", prog_model, 272);
}
static void test_quant(void **state) { (void)state; check("quant", prog_quant, 50); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gguf_read),  cmocka_unit_test(test_gguf_write), cmocka_unit_test(test_gguf_write_retry),
        cmocka_unit_test(test_safetensors),
        cmocka_unit_test(test_map),        cmocka_unit_test(test_quant),      cmocka_unit_test(test_real_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
