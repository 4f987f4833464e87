/*
 * safetensors files (Hugging Face's format) mapped from disk.
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON
 * naming every tensor's dtype, shape and byte range ("data_offsets",
 * relative to the data area after the header) plus an optional
 * "__metadata__" string map, then the data. wick maps the file read-only;
 * each tensor is a zero-copy, read-only CPU view of the map (a tensor whose
 * bytes are misaligned for its dtype is copied instead). The map lives as
 * long as the loader or any tensor made from it, so tensors outlive
 * wk_safetensors_close.
 *
 * The header is checked whole at open, as strictly as the reference reader:
 * header length <= 100 MB and inside the file, strict JSON (UTF-8, escapes,
 * nesting <= 64), unique names, shapes of rank <= WK_MAX_RANK whose byte
 * size equals their data_offsets, and tensors that tile the data area
 * exactly (sorted by offset, each starting where the previous one ends, the
 * last ending at the end of the file: no overlaps, gaps or trailing bytes).
 * Anything else is WK_ERR_FORMAT naming the file and the tensor; an unknown
 * dtype string is WK_ERR_DTYPE. Unknown keys in a tensor's entry are ignored.
 *
 * dtypes: F64 F32 F16 BF16 F8_E4M3 I64 I32 I16 U8 U32 map to wick's dtypes,
 * BOOL reads as WK_U8 (0/1 bytes). The other safetensors dtypes (I8, U16,
 * U64, F8_E5M2, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, F4, F6_E2M3, F6_E3M2,
 * C64) open and are listed (info.supported == false), but getting them is
 * WK_ERR_DTYPE naming the dtype and the tensor.
 *
 * Errors follow wick.h: NULL / a status, reason in wk_last_error(). Lookups
 * (find, meta_value) answer "absent" without recording an error. Strings
 * returned are valid until wk_safetensors_close. Little-endian hosts only
 * (the format is little-endian and tensors are views of its bytes).
 */
#ifndef WICK_SAFETENSORS_H
#define WICK_SAFETENSORS_H

#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_safetensors wk_safetensors;

/* path is one of:
 *  - a .safetensors file;
 *  - a sharded checkpoint's index (a name ending in ".json", e.g.
 *    model.safetensors.index.json): {"weight_map": {tensor: shard file}}
 *    ("metadata" and other keys are read as below). Every shard is mapped
 *    and checked at open; shard names must be plain file names in the
 *    index's directory (no '/', '\\' or ".."), and every tensor the
 *    weight_map lists must be in its shard (tensors a shard holds that the
 *    map does not list are not exposed);
 *  - a directory holding model.safetensors.index.json or model.safetensors
 *    (tried in that order), or else exactly one *.safetensors.index.json or
 *    exactly one *.safetensors file.
 * Mapping costs no resident memory: pages are read when a tensor is read. */
wk_safetensors *wk_safetensors_open(const char *path);
/* The same from a file image in memory (copied once; tensors are views of
 * the copy, which lives as long as they do). */
wk_safetensors *wk_safetensors_open_bytes(const void *data, size_t size);
/* Drops the loader's reference to the maps; tensors already taken stay
 * valid. NULL is a no-op. */
void wk_safetensors_close(wk_safetensors *st);

/* Tensors, sorted by name (strcmp order, like the Python library's keys()). */
int         wk_safetensors_count(const wk_safetensors *st);
const char *wk_safetensors_name(const wk_safetensors *st, int i); /* NULL if i is out of range */
/* Index of the tensor called name, or -1 (not an error). */
int         wk_safetensors_find(const wk_safetensors *st, const char *name);

typedef struct wk_safetensors_info {
    const char *name;
    const char *st_dtype;  /* the file's dtype name: "F32", "BOOL", "I8", ... */
    bool supported;        /* wick has a dtype for it (dtype is meaningful) */
    wk_dtype dtype;        /* BOOL -> WK_U8 */
    int rank;
    int64_t shape[WK_MAX_RANK];
    uint64_t nbytes;       /* bytes in the file */
    uint64_t offset;       /* absolute byte offset of the data in its shard */
    int shard;             /* index for wk_safetensors_shard_path */
} wk_safetensors_info;
wk_status wk_safetensors_info_at(const wk_safetensors *st, int i, wk_safetensors_info *out);

/* The files the tensors live in: 1 for a single file, the distinct shard
 * files (sorted) for an index. "<memory>" for wk_safetensors_open_bytes. */
int         wk_safetensors_shard_count(const wk_safetensors *st);
const char *wk_safetensors_shard_path(const wk_safetensors *st, int i);

/* A zero-copy, read-only CPU view (wk_is_read_only) of the tensor's bytes.
 * NULL + WK_ERR_ARG for an unknown name, WK_ERR_DTYPE for a dtype wick
 * lacks. A new reference: free it with wk_tensor_free. */
wk_tensor *wk_safetensors_get(wk_safetensors *st, const char *name);
/* The tensor in dtype dt on dev: the zero-copy view when both already
 * match, else one conversion / transfer (wk_to_dtype, then wk_to_device). */
wk_tensor *wk_safetensors_get_as(wk_safetensors *st, const char *name, wk_dtype dt, wk_device *dev);

/* "__metadata__" (string -> string), sorted by key. For an index: its
 * "metadata" object (string values as they are, numbers and booleans as
 * their JSON text; null, objects and arrays left out), then each shard's
 * __metadata__ keys the index did not set (first shard first). */
int         wk_safetensors_meta_count(const wk_safetensors *st);
const char *wk_safetensors_meta_key(const wk_safetensors *st, int i);   /* NULL if out of range */
const char *wk_safetensors_meta_value(const wk_safetensors *st, const char *key); /* NULL if absent */

/* Write one .safetensors file. tensors may have any layout (views,
 * transposes, broadcasts) and live on any device: each is written as its
 * row-major elements. Element dtypes only (a block-quantized dtype is
 * WK_ERR_DTYPE: safetensors has no block types). names must be unique,
 * non-empty UTF-8 and not "__metadata__" (WK_ERR_ARG); meta keys/values
 * are UTF-8 strings (nmeta may be 0 with NULL arrays; keys unique).
 * Layout: the header lists the tensors in the given order except that
 * wider elements come first (a stable sort by element size, 8 bytes down to
 * 1), so that every tensor's data is aligned for its dtype; the header is
 * padded with spaces to a multiple of 8 bytes, as the reference writer
 * does. On failure nothing is left at path. */
wk_status wk_safetensors_save(const char *path, int n, const char *const *names, wk_tensor *const *tensors,
                              int nmeta, const char *const *meta_keys, const char *const *meta_values);

#ifdef __cplusplus
}
#endif
#endif
