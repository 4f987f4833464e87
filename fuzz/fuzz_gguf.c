/* libFuzzer target for the GGUF reader (src/io/gguf_read.c, gguf_access.c).
 *
 * Build (clang):
 *   CC=clang cmake -S . -B build-fuzz -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
 *   cmake --build build-fuzz --target fuzz_gguf
 *   ./build-fuzz/fuzz/fuzz_gguf -max_total_time=60 corpus/
 *
 * Each input is parsed from memory. A failure must be a clean error
 * (WK_ERR_FORMAT or WK_ERR_DTYPE with a message); on success every metadata
 * value and array element is read through its typed getter and every tensor
 * is made and all its bytes touched, so ASan sees any read the index would
 * take outside the image. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "wick/gguf.h"

static void expect_clean_error(const char *what, bool dtype_ok) {
    wk_status s = wk_last_status();
    if (!(s == WK_ERR_FORMAT || (dtype_ok && s == WK_ERR_DTYPE)) || !wk_last_error()[0]) {
        fprintf(stderr, "%s: unexpected failure %s: %s\n", what, wk_status_name(s), wk_last_error());
        abort();
    }
    wk_clear_error();
}

static void must(wk_status s) {
    if (s != WK_OK) {
        fprintf(stderr, "getter failed on a parsed file: %s\n", wk_last_error());
        abort();
    }
}

static volatile uint64_t g_sink;

static void touch(const void *p, uint64_t n) {
    const uint8_t *b = p;
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i++) s += b[i];
    g_sink += s;
}

static void walk_value(const wk_gguf *g, int64_t i, size_t size) {
    union {
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
    } v;
    const char *s;
    uint64_t n;
    wk_gguf_type et;
    switch (wk_gguf_kv_type(g, i)) {
    case WK_GGUF_U8: must(wk_gguf_get_u8(g, i, &v.u8)); break;
    case WK_GGUF_I8: must(wk_gguf_get_i8(g, i, &v.i8)); break;
    case WK_GGUF_U16: must(wk_gguf_get_u16(g, i, &v.u16)); break;
    case WK_GGUF_I16: must(wk_gguf_get_i16(g, i, &v.i16)); break;
    case WK_GGUF_U32: must(wk_gguf_get_u32(g, i, &v.u32)); break;
    case WK_GGUF_I32: must(wk_gguf_get_i32(g, i, &v.i32)); break;
    case WK_GGUF_F32: must(wk_gguf_get_f32(g, i, &v.f32)); break;
    case WK_GGUF_BOOL: must(wk_gguf_get_bool(g, i, &v.b)); break;
    case WK_GGUF_U64: must(wk_gguf_get_u64(g, i, &v.u64)); break;
    case WK_GGUF_I64: must(wk_gguf_get_i64(g, i, &v.i64)); break;
    case WK_GGUF_F64: must(wk_gguf_get_f64(g, i, &v.f64)); break;
    case WK_GGUF_STRING:
        must(wk_gguf_get_string(g, i, &s, &n));
        if (n > size) abort();
        touch(s, n);
        break;
    case WK_GGUF_ARRAY:
        must(wk_gguf_get_array(g, i, &et, &n));
        if (n > size) abort(); /* every element takes at least a byte */
        if (et == WK_GGUF_STRING) {
            for (uint64_t j = 0; j < n; j++) {
                uint64_t len;
                must(wk_gguf_array_string(g, i, j, &s, &len));
                if (len > size) abort();
                touch(s, len);
            }
        } else {
            const void *d;
            size_t nb;
            must(wk_gguf_array_data(g, i, &d, &nb));
            touch(d, nb);
            if (n && et == WK_GGUF_BOOL) must(wk_gguf_array_bool(g, i, n - 1, &v.b));
            if (n && et == WK_GGUF_F64) must(wk_gguf_array_f64(g, i, n - 1, &v.f64));
            if (n && et == WK_GGUF_U8) must(wk_gguf_array_u8(g, i, n - 1, &v.u8));
        }
        break;
    case WK_GGUF_TYPE_COUNT: abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wk_gguf *g = wk_gguf_open_bytes(data, size);
    if (!g) {
        expect_clean_error("gguf open", true);
        return 0;
    }
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        const char *k = wk_gguf_key(g, i);
        if (!k || wk_gguf_find_key(g, k) != i) abort();
        walk_value(g, i, size);
    }
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        const char *name = wk_gguf_tensor_name(g, i);
        if (!name || wk_gguf_find_tensor(g, name) != i) abort();
        if (wk_gguf_tensor_nbytes(g, i) > size) abort();
        wk_tensor *t = wk_gguf_tensor_at(g, i);
        if (!t) {
            if (wk_last_status() != WK_ERR_DTYPE) abort(); /* the only refusal after a clean open */
            wk_clear_error();
            continue;
        }
        if (t->storage->nbytes != wk_gguf_tensor_nbytes(g, i)) abort();
        touch(t->storage->buf, t->storage->nbytes);
        wk_tensor_free(t);
    }
    wk_gguf_close(g);
    return 0;
}
