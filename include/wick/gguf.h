/* GGUF model files (llama.cpp / ggml): read v1-v3 by memory-mapping, write v3.
 *
 * Reading maps the file and parses only its header: metadata values and
 * tensor infos are indexed in place (no copy of the vocabulary, no per-string
 * allocation), and every tensor is a zero-copy, read-only view of the map,
 * block-quantized ones included. The map lives as long as the reader or any
 * tensor made from it, so a reader may be closed while its tensors are used.
 *
 * Every length, count, dim and offset in the file is checked against the
 * bytes that remain before anything is allocated for it: a hostile file is
 * WK_ERR_FORMAT (or WK_ERR_DTYPE for an unknown tensor type), never a crash
 * or an allocation larger than the file. Rules wick applies (ggml's):
 *  - little-endian only (a byte-swapped header is named as big-endian);
 *  - keys and tensor names are non-empty valid UTF-8 and unique;
 *  - arrays hold scalars or strings, not arrays (ggml refuses nested arrays);
 *  - bool values are 0 or 1;
 *  - general.alignment, if present, is a u32 power of two (default 32);
 *  - at most 4 dims per tensor, ne[0] a whole number of blocks, tensor data
 *    aligned, inside the file and not overlapping another tensor.
 * String values are returned as stored (pointer + length into the map, not
 * NUL-terminated, not checked for UTF-8: vocabularies hold raw byte tokens).
 *
 * Tensor dims in GGUF are innermost-first: ne = [K, N] is a wick tensor of
 * shape (N, K). The wk_gguf_tensor_* accessors report wick's order.
 * Errors: NULL / a status, with wk_last_error naming the op and the cause. */
#ifndef WICK_GGUF_H
#define WICK_GGUF_H
#include <stddef.h>
#include <stdint.h>
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The 13 metadata value types, numbered as in the file. */
typedef enum wk_gguf_type {
    WK_GGUF_U8 = 0,
    WK_GGUF_I8 = 1,
    WK_GGUF_U16 = 2,
    WK_GGUF_I16 = 3,
    WK_GGUF_U32 = 4,
    WK_GGUF_I32 = 5,
    WK_GGUF_F32 = 6,
    WK_GGUF_BOOL = 7,
    WK_GGUF_STRING = 8,
    WK_GGUF_ARRAY = 9,
    WK_GGUF_U64 = 10,
    WK_GGUF_I64 = 11,
    WK_GGUF_F64 = 12,
    WK_GGUF_TYPE_COUNT
} wk_gguf_type;
/* "u8", "string", "array", ...; "invalid" for anything else. */
const char *wk_gguf_type_name(wk_gguf_type t);

/* ---------------------------------------------------------- ggml types */

/* ggml's tensor type ids (GGML_TYPE_*) as stored in a GGUF tensor info. */
enum {
    WK_GGML_F32 = 0, WK_GGML_F16 = 1, WK_GGML_Q4_0 = 2, WK_GGML_Q4_1 = 3, WK_GGML_Q5_0 = 6,
    WK_GGML_Q5_1 = 7, WK_GGML_Q8_0 = 8, WK_GGML_Q8_1 = 9, WK_GGML_Q2_K = 10, WK_GGML_Q3_K = 11,
    WK_GGML_Q4_K = 12, WK_GGML_Q5_K = 13, WK_GGML_Q6_K = 14, WK_GGML_Q8_K = 15, WK_GGML_IQ2_XXS = 16,
    WK_GGML_IQ2_XS = 17, WK_GGML_IQ3_XXS = 18, WK_GGML_IQ1_S = 19, WK_GGML_IQ4_NL = 20, WK_GGML_IQ3_S = 21,
    WK_GGML_IQ2_S = 22, WK_GGML_IQ4_XS = 23, WK_GGML_I8 = 24, WK_GGML_I16 = 25, WK_GGML_I32 = 26,
    WK_GGML_I64 = 27, WK_GGML_F64 = 28, WK_GGML_IQ1_M = 29, WK_GGML_BF16 = 30, WK_GGML_TQ1_0 = 34,
    WK_GGML_TQ2_0 = 35, WK_GGML_MXFP4 = 39, WK_GGML_NVFP4 = 40, WK_GGML_Q1_0 = 41
};
/* ggml's name of a type id ("f32", "q4_0", "q4_K", "iq2_xxs", ...); NULL for
 * an id ggml does not (or no longer) define. */
const char *wk_ggml_type_name(uint32_t ggml_type);
/* Elements per block and bytes per block of a type id (ggml's sizes); false
 * for an unknown id. */
bool wk_ggml_type_block(uint32_t ggml_type, uint32_t *block_elems, uint32_t *block_bytes);
/* The wick dtype of a ggml type; false (no error recorded) when wick has none
 * (i8, the iq1/iq2/iq3/tq/mxfp types, unknown ids). */
bool wk_ggml_type_to_dtype(uint32_t ggml_type, wk_dtype *out);
/* The ggml type of a wick dtype; false for u8, u32 and f8e4m3 (ggml has none). */
bool wk_dtype_to_ggml_type(wk_dtype dt, uint32_t *out);
/* Parse a ggml type name, case-insensitive ("Q4_K", "f16"); false if unknown. */
bool wk_ggml_type_from_name(const char *name, uint32_t *out);

/* --------------------------------------------------------------- reading */

typedef struct wk_gguf wk_gguf;

/* Map and parse a file. NULL + WK_ERR_IO (cannot open), WK_ERR_FORMAT (not a
 * GGUF, bad header), WK_ERR_DTYPE (a tensor of a type id ggml does not define). */
wk_gguf *wk_gguf_open(const char *path);
/* Parse an image in memory (copied first; for tests and fuzzing). */
wk_gguf *wk_gguf_open_bytes(const void *data, size_t size);
/* NULL is fine. Tensors made from g stay valid. */
void     wk_gguf_close(wk_gguf *g);

uint32_t wk_gguf_version(const wk_gguf *g);     /* 1, 2 or 3 */
uint32_t wk_gguf_alignment(const wk_gguf *g);   /* general.alignment or 32 */
uint64_t wk_gguf_data_offset(const wk_gguf *g); /* file offset of the tensor data */
uint64_t wk_gguf_file_size(const wk_gguf *g);

/* Metadata. Indices run 0 .. count-1 in file order. */
int64_t      wk_gguf_kv_count(const wk_gguf *g);
/* NUL-terminated key (valid while g is open); NULL for a bad index. */
const char  *wk_gguf_key(const wk_gguf *g, int64_t i);
/* Index of key, or -1 (no error recorded) when absent. */
int64_t      wk_gguf_find_key(const wk_gguf *g, const char *key);
/* Type of value i; WK_GGUF_TYPE_COUNT for a bad index. */
wk_gguf_type wk_gguf_kv_type(const wk_gguf *g, int64_t i);

/* Typed getters: WK_ERR_DTYPE (naming key and both types) when value i is of
 * another type, WK_ERR_INDEX for a bad i; no conversions. */
wk_status wk_gguf_get_u8(const wk_gguf *g, int64_t i, uint8_t *out);
wk_status wk_gguf_get_i8(const wk_gguf *g, int64_t i, int8_t *out);
wk_status wk_gguf_get_u16(const wk_gguf *g, int64_t i, uint16_t *out);
wk_status wk_gguf_get_i16(const wk_gguf *g, int64_t i, int16_t *out);
wk_status wk_gguf_get_u32(const wk_gguf *g, int64_t i, uint32_t *out);
wk_status wk_gguf_get_i32(const wk_gguf *g, int64_t i, int32_t *out);
wk_status wk_gguf_get_f32(const wk_gguf *g, int64_t i, float *out);
wk_status wk_gguf_get_bool(const wk_gguf *g, int64_t i, bool *out);
wk_status wk_gguf_get_u64(const wk_gguf *g, int64_t i, uint64_t *out);
wk_status wk_gguf_get_i64(const wk_gguf *g, int64_t i, int64_t *out);
wk_status wk_gguf_get_f64(const wk_gguf *g, int64_t i, double *out);
/* *s points into the map (valid while g is open), *len bytes, not NUL-terminated. */
wk_status wk_gguf_get_string(const wk_gguf *g, int64_t i, const char **s, uint64_t *len);

/* Arrays: element type (a scalar type or WK_GGUF_STRING) and length. */
wk_status wk_gguf_get_array(const wk_gguf *g, int64_t i, wk_gguf_type *elem_type, uint64_t *n);
/* The raw little-endian elements of a numeric array (n * element size bytes
 * in the map; bools one byte each), for bulk reads such as token scores.
 * Not for string arrays (WK_ERR_DTYPE). Alignment is whatever the file has. */
wk_status wk_gguf_array_data(const wk_gguf *g, int64_t i, const void **data, size_t *nbytes);
/* Element j of array i, typed as the scalar getters (WK_ERR_INDEX for j >= n). */
wk_status wk_gguf_array_u8(const wk_gguf *g, int64_t i, uint64_t j, uint8_t *out);
wk_status wk_gguf_array_i8(const wk_gguf *g, int64_t i, uint64_t j, int8_t *out);
wk_status wk_gguf_array_u16(const wk_gguf *g, int64_t i, uint64_t j, uint16_t *out);
wk_status wk_gguf_array_i16(const wk_gguf *g, int64_t i, uint64_t j, int16_t *out);
wk_status wk_gguf_array_u32(const wk_gguf *g, int64_t i, uint64_t j, uint32_t *out);
wk_status wk_gguf_array_i32(const wk_gguf *g, int64_t i, uint64_t j, int32_t *out);
wk_status wk_gguf_array_f32(const wk_gguf *g, int64_t i, uint64_t j, float *out);
wk_status wk_gguf_array_bool(const wk_gguf *g, int64_t i, uint64_t j, bool *out);
wk_status wk_gguf_array_u64(const wk_gguf *g, int64_t i, uint64_t j, uint64_t *out);
wk_status wk_gguf_array_i64(const wk_gguf *g, int64_t i, uint64_t j, int64_t *out);
wk_status wk_gguf_array_f64(const wk_gguf *g, int64_t i, uint64_t j, double *out);
/* String j of a string array, O(1) (an offset index built at open). */
wk_status wk_gguf_array_string(const wk_gguf *g, int64_t i, uint64_t j, const char **s, uint64_t *len);

/* Tensor infos. Indices run 0 .. count-1 in file order. */
int64_t     wk_gguf_tensor_count(const wk_gguf *g);
const char *wk_gguf_tensor_name(const wk_gguf *g, int64_t i); /* NUL-terminated; NULL for a bad i */
int64_t     wk_gguf_find_tensor(const wk_gguf *g, const char *name); /* -1 when absent */
uint32_t    wk_gguf_tensor_ggml_type(const wk_gguf *g, int64_t i);  /* UINT32_MAX for a bad i */
/* wick's shape (outermost first, ne reversed) into shape[4]; returns the
 * rank (0..4), -1 for a bad i. */
int         wk_gguf_tensor_shape(const wk_gguf *g, int64_t i, int64_t shape[4]);
uint64_t    wk_gguf_tensor_offset(const wk_gguf *g, int64_t i); /* file offset of its bytes */
uint64_t    wk_gguf_tensor_nbytes(const wk_gguf *g, int64_t i);
/* Zero-copy, read-only CPU view of tensor i (a private copy only if the file
 * misplaces it for the dtype's alignment). WK_ERR_DTYPE naming the ggml type
 * when wick has no dtype for it (i8, iq2_xxs, ...); other tensors still load. */
wk_tensor  *wk_gguf_tensor_at(const wk_gguf *g, int64_t i);
/* The same by name; WK_ERR_ARG naming it when absent. */
wk_tensor  *wk_gguf_tensor(const wk_gguf *g, const char *name);

/* --------------------------------------------------------------- writing */

/* Builds a GGUF v3 file: metadata in the order added, then tensor infos, then
 * each tensor's bytes at general.alignment (default 32; set it with
 * wk_gguf_writer_add_u32(w, "general.alignment", a), a power of two).
 * Keys and tensor names must be unique, non-empty valid UTF-8 (tensor names
 * under 64 bytes, ggml's limit): WK_ERR_ARG otherwise. */
typedef struct wk_gguf_writer wk_gguf_writer;

wk_gguf_writer *wk_gguf_writer_new(void);
void            wk_gguf_writer_free(wk_gguf_writer *w); /* NULL is fine */

wk_status wk_gguf_writer_add_u8(wk_gguf_writer *w, const char *key, uint8_t v);
wk_status wk_gguf_writer_add_i8(wk_gguf_writer *w, const char *key, int8_t v);
wk_status wk_gguf_writer_add_u16(wk_gguf_writer *w, const char *key, uint16_t v);
wk_status wk_gguf_writer_add_i16(wk_gguf_writer *w, const char *key, int16_t v);
wk_status wk_gguf_writer_add_u32(wk_gguf_writer *w, const char *key, uint32_t v);
wk_status wk_gguf_writer_add_i32(wk_gguf_writer *w, const char *key, int32_t v);
wk_status wk_gguf_writer_add_f32(wk_gguf_writer *w, const char *key, float v);
wk_status wk_gguf_writer_add_bool(wk_gguf_writer *w, const char *key, bool v);
wk_status wk_gguf_writer_add_u64(wk_gguf_writer *w, const char *key, uint64_t v);
wk_status wk_gguf_writer_add_i64(wk_gguf_writer *w, const char *key, int64_t v);
wk_status wk_gguf_writer_add_f64(wk_gguf_writer *w, const char *key, double v);
/* len bytes of s (any bytes; NUL not required). */
wk_status wk_gguf_writer_add_string(wk_gguf_writer *w, const char *key, const char *s, uint64_t len);
/* A numeric array: n elements of elem_type (a scalar type other than
 * string), host-endian values in data (bools as one byte, 0 or 1). */
wk_status wk_gguf_writer_add_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type, const void *data,
                                   uint64_t n);
/* n strings; lens may be NULL (then each is NUL-terminated). */
wk_status wk_gguf_writer_add_string_array(wk_gguf_writer *w, const char *key, const char *const *strs,
                                          const uint64_t *lens, uint64_t n);
/* Copy value i of a reader under its key (e.g. all metadata of a model being
 * re-quantized); general.alignment is copied like any key. */
wk_status wk_gguf_writer_copy_kv(wk_gguf_writer *w, const wk_gguf *g, int64_t i);

/* Add a tensor of any dtype ggml has (block dtypes included), any layout and
 * device: its bytes are taken as a contiguous copy (none for a contiguous
 * CPU tensor, whose storage the writer keeps a reference to until freed).
 * Rank 1..4. The written ggml type is the dtype's (wk_dtype_to_ggml_type). */
wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, const wk_tensor *t);
/* Write everything added so far to path (created or truncated). */
wk_status wk_gguf_writer_write(wk_gguf_writer *w, const char *path);

#ifdef __cplusplus
}
#endif
#endif
