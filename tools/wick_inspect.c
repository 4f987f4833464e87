/* `wick inspect FILE`: a safetensors file / sharded checkpoint or a GGUF
 * file's metadata and every tensor (name, dtype, shape, bytes). Nothing is
 * read but the headers: the tensors stay in the map. */
#include <stdio.h>
#include <string.h>
#include "tools/wick_cli.h"
#include "wick/gguf.h"
#include "wick/safetensors.h"

static void print_shape(const int64_t *shape, int rank) {
    char buf[160];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "[");
    for (int i = 0; i < rank && n < sizeof buf - 24; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    snprintf(buf + n, sizeof buf - n, "]");
    printf("%-22s", buf);
}

/* A printable prefix of a string value (metadata can hold anything). */
static void print_str(const char *s, uint64_t len, uint64_t max) {
    putchar('"');
    for (uint64_t i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
    putchar('"');
    if (len > max) printf("... (%llu bytes)", (unsigned long long)len);
}

static void print_scalar(const wk_gguf *g, int64_t i, wk_gguf_type t, bool in_array, uint64_t j) {
#define GET(fn, T, fmt, cast)                                                  \
    do {                                                                       \
        T v = 0;                                                               \
        if (in_array) wk_gguf_array_##fn(g, i, j, &v);                         \
        else wk_gguf_get_##fn(g, i, &v);                                       \
        printf(fmt, cast v);                                                   \
    } while (0)
    switch (t) {
    case WK_GGUF_U8: GET(u8, uint8_t, "%u", (unsigned)); break;
    case WK_GGUF_I8: GET(i8, int8_t, "%d", (int)); break;
    case WK_GGUF_U16: GET(u16, uint16_t, "%u", (unsigned)); break;
    case WK_GGUF_I16: GET(i16, int16_t, "%d", (int)); break;
    case WK_GGUF_U32: GET(u32, uint32_t, "%u", (unsigned)); break;
    case WK_GGUF_I32: GET(i32, int32_t, "%d", (int)); break;
    case WK_GGUF_F32: GET(f32, float, "%g", (double)); break;
    case WK_GGUF_BOOL: {
        bool v = false;
        if (in_array) wk_gguf_array_bool(g, i, j, &v);
        else wk_gguf_get_bool(g, i, &v);
        fputs(v ? "true" : "false", stdout);
        break;
    }
    case WK_GGUF_U64: GET(u64, uint64_t, "%llu", (unsigned long long)); break;
    case WK_GGUF_I64: GET(i64, int64_t, "%lld", (long long)); break;
    case WK_GGUF_F64: GET(f64, double, "%g", (double)); break;
    case WK_GGUF_STRING: {
        const char *s = NULL;
        uint64_t len = 0;
        if (in_array) wk_gguf_array_string(g, i, j, &s, &len);
        else wk_gguf_get_string(g, i, &s, &len);
        print_str(s ? s : "", s ? len : 0, in_array ? 24 : 72);
        break;
    }
    case WK_GGUF_ARRAY: case WK_GGUF_TYPE_COUNT: fputs("?", stdout); break;
    }
#undef GET
}

static int inspect_gguf(const char *path) {
    wk_gguf *g = wk_gguf_open(path);
    if (!g) return wk__cli_fail("inspect");
    printf("%s: GGUF v%u, alignment %u, %lld metadata keys, %lld tensors, data at byte %llu of %llu\n", path,
           wk_gguf_version(g), wk_gguf_alignment(g), (long long)wk_gguf_kv_count(g),
           (long long)wk_gguf_tensor_count(g), (unsigned long long)wk_gguf_data_offset(g),
           (unsigned long long)wk_gguf_file_size(g));
    printf("\nmetadata:\n");
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        wk_gguf_type t = wk_gguf_kv_type(g, i);
        printf("  %-40s %-7s ", wk_gguf_key(g, i), wk_gguf_type_name(t));
        if (t == WK_GGUF_ARRAY) {
            wk_gguf_type et = WK_GGUF_TYPE_COUNT;
            uint64_t n = 0;
            wk_gguf_get_array(g, i, &et, &n);
            printf("%s[%llu] [", wk_gguf_type_name(et), (unsigned long long)n);
            for (uint64_t j = 0; j < n && j < 6; j++) {
                if (j) fputs(", ", stdout);
                if (et == WK_GGUF_ARRAY) fputs("[...]", stdout);
                else print_scalar(g, i, et, true, j);
            }
            printf("%s]\n", n > 6 ? ", ..." : "");
        } else {
            print_scalar(g, i, t, false, 0);
            putchar('\n');
        }
    }
    printf("\ntensors:\n  %-36s %-8s %-22s %12s %12s\n", "name", "dtype", "shape", "bytes", "offset");
    uint64_t total = 0;
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        int64_t shape[4];
        int rank = wk_gguf_tensor_shape(g, i, shape);
        uint64_t nb = wk_gguf_tensor_nbytes(g, i);
        total += nb;
        printf("  %-36s %-8s ", wk_gguf_tensor_name(g, i), wk_ggml_type_name(wk_gguf_tensor_ggml_type(g, i)));
        print_shape(shape, rank < 0 ? 0 : rank);
        printf(" %12llu %12llu\n", (unsigned long long)nb, (unsigned long long)wk_gguf_tensor_offset(g, i));
    }
    printf("\n%lld tensors, %llu bytes of tensor data\n", (long long)wk_gguf_tensor_count(g),
           (unsigned long long)total);
    wk_gguf_close(g);
    return 0;
}

static int inspect_safetensors(const char *path) {
    wk_safetensors *st = wk_safetensors_open(path);
    if (!st) return wk__cli_fail("inspect");
    printf("%s: safetensors, %d shard(s), %d tensors, %d metadata entries\n", path, wk_safetensors_shard_count(st),
           wk_safetensors_count(st), wk_safetensors_meta_count(st));
    if (wk_safetensors_meta_count(st)) printf("\nmetadata:\n");
    for (int i = 0; i < wk_safetensors_meta_count(st); i++) {
        const char *k = wk_safetensors_meta_key(st, i), *v = wk_safetensors_meta_value(st, k);
        printf("  %-40s ", k);
        print_str(v, strlen(v), 72);
        putchar('\n');
    }
    bool sharded = wk_safetensors_shard_count(st) > 1;
    printf("\ntensors:\n  %-44s %-8s %-22s %12s%s\n", "name", "dtype", "shape", "bytes", sharded ? "  shard" : "");
    uint64_t total = 0;
    for (int i = 0; i < wk_safetensors_count(st); i++) {
        wk_safetensors_info inf;
        if (wk_safetensors_info_at(st, i, &inf) != WK_OK) {
            wk_safetensors_close(st);
            return wk__cli_fail("inspect");
        }
        total += inf.nbytes;
        printf("  %-44s %-8s ", inf.name, inf.st_dtype);
        print_shape(inf.shape, inf.rank);
        printf(" %12llu", (unsigned long long)inf.nbytes);
        if (sharded) printf("  %d", inf.shard);
        if (!inf.supported) printf("  (no wick dtype)");
        putchar('\n');
    }
    printf("\n%d tensors, %llu bytes of tensor data\n", wk_safetensors_count(st), (unsigned long long)total);
    wk_safetensors_close(st);
    return 0;
}

int wk__cli_inspect(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: wick inspect FILE   (a .gguf, a .safetensors, an index .json or a directory)\n");
        return 2;
    }
    int fmt = wk__cli_sniff(argv[0]);
    if (fmt == WK__CLI_GGUF) return inspect_gguf(argv[0]);
    if (fmt == WK__CLI_SAFETENSORS) return inspect_safetensors(argv[0]);
    fprintf(stderr, "wick inspect: %s is neither a GGUF nor a safetensors file or directory\n", argv[0]);
    return 1;
}
