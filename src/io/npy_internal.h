/* Private helpers shared by src/io/npy.c and src/io/npz.c (and the fuzz/unit
 * tests, which include this header to reach the in-memory npz parser).
 *
 * Everything here works on byte images in memory and never trusts them: every
 * length, offset and product is checked before it is used or allocated. */
#ifndef WICK_IO_NPY_INTERNAL_H
#define WICK_IO_NPY_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wick/wick.h"

/* Largest .npy header (the Python dict) we accept. numpy itself refuses
 * headers over 10000 bytes unless told otherwise. */
#define WK_NPY_MAX_HEADER (1u << 20)

/* Most elements an array may have (the product of its non-zero dims), the
 * same bound base/checked.h puts on shapes (WK__MAX_NUMEL). */
#define WK_NPY_MAX_ELEMS ((uint64_t)1 << 56)

/* What a .npy preamble says about the array that follows it. */
typedef struct wk__npy_info {
    wk_dtype dtype;
    size_t   itemsize;
    bool     swap;                  /* stored in the non-host byte order       */
    bool     fortran;               /* column-major data                      */
    int      rank;
    int64_t  shape[WK_MAX_RANK];
    uint64_t numel;
    uint64_t nbytes;                /* numel * itemsize (checked)              */
    size_t   data_offset;           /* bytes from the start of the image       */
} wk__npy_info;

/* Size of the whole preamble (magic + version + length field + header) from
 * the first bytes of an image; len must be at least 12 for version >= 2 (10
 * is enough for 1.0). Checks magic, version and the header size limit.
 * Errors: WK_ERR_FORMAT (recorded as "op: what: message"). */
wk_status wk__npy_preamble_size(const uint8_t *p, size_t len, size_t *out,
                                const char *op, const char *what);

/* Parse the preamble (magic, version, header length, header dict) of an .npy
 * image. Only the first data_offset bytes are needed; the data size is NOT
 * checked against len here. Errors: WK_ERR_FORMAT. */
wk_status wk__npy_parse_header(const uint8_t *p, size_t len, wk__npy_info *info,
                               const char *op, const char *what);

/* Turn the raw data described by info into a row-major tensor on dev.
 * data holds at least info->nbytes bytes. If owned is true, data was malloc'd
 * by the caller, may be rewritten in place, and is freed here either way. */
wk_tensor *wk__npy_make_tensor(const wk__npy_info *info, uint8_t *data, bool owned,
                               wk_device *dev, const char *op, const char *what);

/* A whole .npy image in memory -> tensor (trailing bytes are ignored). */
wk_tensor *wk__npy_from_bytes(const void *data, size_t len, wk_device *dev,
                              const char *op, const char *what);

/* The .npy descr for a wick dtype ("<f4"), or NULL (bf16, f8e4m3, invalid). */
const char *wk__npy_descr(wk_dtype dt);

/* Build the saving preamble (version 1.0, or 2.0 if the header would not fit
 * in 65535 bytes) for t into a malloc'd buffer. Fails with WK_ERR_DTYPE for
 * dtypes numpy cannot express. */
wk_status wk__npy_preamble(const wk_tensor *t, uint8_t **out, size_t *out_len, const char *op);

/* The tensor's logical elements, row-major, little-endian, in a malloc'd
 * buffer of *out_len = numel * itemsize bytes (a 1-byte buffer when empty). */
wk_status wk__npy_tensor_bytes(const wk_tensor *t, uint8_t **out, size_t *out_len, const char *op);

/* Read a whole regular file into memory (its size, from fstat, bounds the
 * allocation; anything else, e.g. a pipe or /dev/zero, is refused).
 * Errors: WK_ERR_IO with the path and strerror, WK_ERR_OOM. */
wk_status wk__read_file(const char *path, uint8_t **out, size_t *out_len, const char *op);

/* The npz parser on a zip image in memory. Same contract as wk_npz_load:
 * on success the arrays are malloc'd (free with wk_npz_free); on error
 * everything created is freed and *names = *tensors = NULL, *count = 0.
 * `what` names the source in error messages (a path, or "<memory>"). */
wk_status wk__npz_load_bytes(const void *data, size_t len, wk_device *dev, char ***names,
                             wk_tensor ***tensors, int *count, const char *op, const char *what);

/* Little-endian readers (no alignment assumptions). */
static inline uint16_t wk__rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t wk__rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t wk__rd64(const uint8_t *p) {
    return (uint64_t)wk__rd32(p) | ((uint64_t)wk__rd32(p + 4) << 32);
}
static inline void wk__wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wk__wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

#endif
