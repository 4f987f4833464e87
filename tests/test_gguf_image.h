/* Hand-built GGUF images for the GGUF tests (test_gguf*.c): a growing byte
 * buffer with the file's encodings, 32-bit counts/lengths/dims in v1 and
 * 64-bit after, so a test can write exactly the (hostile) bytes it means. */
#ifndef WICK_TEST_GGUF_IMAGE_H
#define WICK_TEST_GGUF_IMAGE_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gi {
    uint8_t *b;
    size_t n, cap;
    int version;
} gi;

static inline void gi_put(gi *g, const void *p, size_t n) {
    if (g->n + n > g->cap) {
        g->cap = (g->n + n) * 2 + 64;
        g->b = realloc(g->b, g->cap);
        if (!g->b) abort();
    }
    if (n) memcpy(g->b + g->n, p, n);
    g->n += n;
}
static inline void gi_u8(gi *g, uint8_t v) { gi_put(g, &v, 1); }
static inline void gi_u32(gi *g, uint32_t v) { gi_put(g, &v, 4); }
static inline void gi_u64(gi *g, uint64_t v) { gi_put(g, &v, 8); }
static inline void gi_len(gi *g, uint64_t v) {
    if (g->version == 1) gi_u32(g, (uint32_t)v);
    else gi_u64(g, v);
}
static inline void gi_strn(gi *g, const char *s, size_t n) {
    gi_len(g, n);
    gi_put(g, s, n);
}
static inline void gi_str(gi *g, const char *s) { gi_strn(g, s, strlen(s)); }
static inline void gi_free(gi *g) {
    free(g->b);
    memset(g, 0, sizeof *g);
}

static inline void gi_header(gi *g, int version, uint64_t n_tensors, uint64_t n_kv) {
    g->version = version;
    gi_put(g, "GGUF", 4);
    gi_u32(g, (uint32_t)version);
    gi_len(g, n_tensors);
    gi_len(g, n_kv);
}
static inline void gi_kv_u32(gi *g, const char *key, uint32_t v) {
    gi_str(g, key);
    gi_u32(g, 4);
    gi_u32(g, v);
}
static inline void gi_kv_str(gi *g, const char *key, const char *v) {
    gi_str(g, key);
    gi_u32(g, 8);
    gi_str(g, v);
}
/* A tensor info; ne innermost first, as in the file. */
static inline void gi_tensor(gi *g, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                             uint64_t off) {
    gi_str(g, name);
    gi_u32(g, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gi_len(g, ne[d]);
    gi_u32(g, type);
    gi_u64(g, off);
}
static inline void gi_pad(gi *g, size_t align) {
    while (g->n % align) gi_u8(g, 0);
}

#endif
