/* The parsed form of a GGUF file (gguf_read.c builds it, gguf_access.c
 * answers the public getters from it). Everything points into the map:
 * values are file offsets, never copies, except keys and tensor names, which
 * are copied once into one NUL-terminated arena so they can be returned as C
 * strings. */
#ifndef WICK_IO_GGUF_INTERNAL_H
#define WICK_IO_GGUF_INTERNAL_H
#include <stdint.h>
#include "io/map_file.h"
#include "wick/gguf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader and writer copy little-endian file values as host values"
#endif

#define WK__GGUF_MAX_DIMS 4 /* GGML_MAX_DIMS */
#define WK__GGUF_DEFAULT_ALIGNMENT 32u

typedef struct wk__gguf_kv {
    const char *key;        /* in the arena */
    uint64_t key_off, key_len; /* where the key lies in the file */
    wk_gguf_type type;
    wk_gguf_type elem_type; /* arrays only */
    uint64_t n;             /* array: element count; string: byte length */
    uint64_t off;           /* file offset of the scalar / string bytes / first array element */
    /* string arrays: offset of each element's length field from off
     * (32-bit when the array spans under 4 GiB, the usual case) */
    uint32_t *sidx32;
    uint64_t *sidx64;
} wk__gguf_kv;

typedef struct wk__gguf_tensor {
    const char *name; /* in the arena */
    uint64_t name_off, name_len;
    uint32_t ggml_type;
    int rank;
    int64_t ne[WK__GGUF_MAX_DIMS]; /* innermost first, as in the file */
    uint64_t off;                  /* absolute file offset */
    uint64_t nbytes;
} wk__gguf_tensor;

struct wk_gguf {
    wk__map *map;
    const uint8_t *data;
    uint64_t size;
    uint32_t version;
    uint32_t alignment;
    uint32_t len_bytes; /* 4 in v1 (32-bit counts and lengths), else 8 */
    uint64_t data_offset;
    int64_t n_kv, n_tensors;
    wk__gguf_kv *kv;
    wk__gguf_tensor *tensors;
    char *arena;
    /* open-addressing tables of indices (-1 empty), sizes powers of two */
    int64_t *kv_hash, *t_hash;
    uint64_t kv_hmask, t_hmask;
};

/* Size in bytes of a scalar value type; 0 for string, array and invalid ids. */
uint32_t wk__gguf_scalar_size(wk_gguf_type t);
/* A key or tensor name: strict UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF) without NUL bytes. */
bool wk__gguf_valid_name(const uint8_t *s, uint64_t n);
/* Index of a key / tensor name through the hash tables, or -1. */
int64_t wk__gguf_kv_lookup(const wk_gguf *g, const char *key);
int64_t wk__gguf_tensor_lookup(const wk_gguf *g, const char *name);

#endif
