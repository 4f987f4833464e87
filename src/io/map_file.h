/* A model file mapped read-only into memory, shared by the tensors made from
 * it (safetensors.c, gguf_read.c / gguf_access.c). The map is reference
 * counted: the loader holds one reference, every tensor made by
 * wk__map_tensor holds one through its storage's release callback, so the
 * map lives exactly as long as anything uses it and a loader can be closed
 * while its tensors are still in use. Pages are only read when touched:
 * mapping costs no resident memory. */
#ifndef WICK_IO_MAP_FILE_H
#define WICK_IO_MAP_FILE_H
#include <stddef.h>
#include <stdint.h>
#include "wick/wick.h"

typedef struct wk__map wk__map;

/* Map path read-only (an empty file maps to a NULL-data, 0-byte map).
 * NULL + WK_ERR_IO (naming op and path) when it cannot be opened or mapped. */
wk__map *wk__map_open(const char *op, const char *path);
/* A map over a private copy of bytes already in memory (the fuzz targets and
 * tests parse images this way; the parsers see no difference). */
wk__map *wk__map_from_bytes(const char *op, const void *data, size_t size);
void wk__map_retain(wk__map *m);
void wk__map_release(wk__map *m); /* NULL is a no-op */
const uint8_t *wk__map_data(const wk__map *m);
size_t wk__map_size(const wk__map *m);
const char *wk__map_path(const wk__map *m);

/* A contiguous, read-only CPU tensor over bytes [offset, offset + nbytes) of
 * the map, where nbytes is what dt and shape need (checked: a whole number
 * of blocks per row for block dtypes, no overflow, inside the map, else
 * WK_ERR_FORMAT naming op and what). Zero-copy when the bytes are aligned
 * for dt; otherwise (a file may place data anywhere) a private aligned copy,
 * which is still correct and reported by wk__map_tensor_copied. */
wk_tensor *wk__map_tensor(const char *op, const char *what, wk__map *m, uint64_t offset, wk_dtype dt,
                          const int64_t *shape, int rank);
/* Tensors wk__map_tensor had to copy because their bytes were misaligned
 * (process-wide count; for tests and `wick inspect`). */
uint64_t wk__map_tensor_copied(void);

#endif
