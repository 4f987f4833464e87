/* The safetensors loader's internals, shared by safetensors_header.c (one
 * file's header), safetensors.c (open, index, the public lookups) and
 * safetensors_write.c. */
#ifndef WICK_IO_SAFETENSORS_INTERNAL_H
#define WICK_IO_SAFETENSORS_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "io/map_file.h"
#include "wick/safetensors.h"

/* The reference reader's limit on the JSON header (and ours on an index). */
#define WK__ST_MAX_HEADER UINT64_C(100000000)

/* One safetensors dtype: its name, its bits per element, and wick's dtype
 * (-1 when wick has none). */
typedef struct wk__st_dtype {
    const char *name;
    uint8_t bits;
    int8_t wk; /* a wk_dtype, or -1 */
} wk__st_dtype;
/* The table entry named name[0, len), or NULL. */
const wk__st_dtype *wk__st_dtype_named(const char *name, size_t len);
/* The safetensors name for an element dtype; NULL for a block dtype. */
const char *wk__st_dtype_name_of(wk_dtype dt);

typedef struct wk__st_tensor {
    size_t name_off;  /* into the string pool */
    const char *name; /* resolved by wk__st_finalize */
    const wk__st_dtype *dt;
    int shard;
    int rank;
    int64_t shape[WK_MAX_RANK];
    uint64_t begin, end; /* absolute byte range in the shard file */
} wk__st_tensor;

typedef struct wk__st_meta {
    size_t key_off, val_off;
    const char *key, *val; /* resolved by wk__st_finalize */
    size_t seq;            /* insertion order: first-wins merges */
} wk__st_meta;

typedef struct wk__st_shard {
    wk__map *map;
} wk__st_shard;

struct wk_safetensors {
    wk__st_shard *shards;
    int nshards;
    wk__st_tensor *t; /* sorted by name after wk__st_finalize */
    size_t n, cap;
    wk__st_meta *meta; /* sorted by key after wk__st_finalize */
    size_t nmeta, meta_cap;
    char *pool; /* every name, key and value, NUL-terminated */
    size_t pool_len, pool_cap;
};

/* Copy s[0, len) + NUL into st's pool; its offset in *off. */
bool wk__st_pool_add(const char *op, wk_safetensors *st, const char *s, size_t len, size_t *off);
wk__st_tensor *wk__st_push_tensor(const char *op, wk_safetensors *st);
bool wk__st_push_meta(const char *op, wk_safetensors *st, size_t key_off, size_t val_off);
/* Add a shard (takes the caller's reference to m); its index in *idx. */
bool wk__st_add_shard(const char *op, wk_safetensors *st, wk__map *m, int *idx);

/* Parse and check the header of the file mapped as shard `shard` of st,
 * appending its tensors and __metadata__ (rules in safetensors.h). Errors
 * are recorded under op (WK_ERR_FORMAT, WK_ERR_DTYPE for an unknown dtype
 * string, WK_ERR_OOM). */
wk_status wk__st_parse_file(const char *op, wk_safetensors *st, int shard);

/* Resolve pool pointers, sort tensors by name and metadata by key. Duplicate
 * tensor names are WK_ERR_FORMAT; duplicate metadata keys are an error too
 * unless meta_first_wins (an index merging its shards' metadata), where the
 * earliest one is kept. */
wk_status wk__st_finalize(const char *op, wk_safetensors *st, bool meta_first_wins, const char *what);

/* An empty loader (NULL + WK_ERR_OOM). */
wk_safetensors *wk__st_new(const char *op);

#endif
