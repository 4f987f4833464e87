/* Importance-matrix files, as llama.cpp's llama-imatrix writes them, read
 * into the per-column weights wk_quantize_imatrix (wick/nn.h) takes.
 *
 * Two formats, told apart by the first four bytes:
 *  - GGUF (llama.cpp since 2025): for each weight tensor NAME a tensor
 *    NAME.in_sum2 (f32, the sums of squared activations, ne0 columns times
 *    ne1 stacked matrices) and NAME.counts (f32, the tokens behind each
 *    matrix's sums), plus the keys imatrix.datasets, imatrix.chunk_count and
 *    imatrix.chunk_size (required, as llama-quantize requires them). A
 *    matrix's weights are in_sum2 / round(count), or 1 where its count is 0.
 *  - the legacy binary .dat: int32 entry count, then per entry int32 name
 *    length, the name, int32 ncall, int32 nval, nval f32; then optionally
 *    int32 chunk count, int32 length and the dataset's name (all
 *    little-endian). The weights are the values / ncall (as they are when
 *    ncall is 0).
 * Either way the weights are what llama-quantize hands ggml, so a model
 * quantized with them is byte-identical to llama-quantize's.
 *
 * A malformed, truncated or hostile file is WK_ERR_FORMAT naming what is
 * wrong (WK_ERR_IO when it cannot be read); it never reads out of bounds. */
#ifndef WICK_IMATRIX_H
#define WICK_IMATRIX_H
#include <stddef.h>
#include <stdint.h>
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_imatrix wk_imatrix;

/* Read a file (either format). NULL + the error on failure. */
wk_imatrix *wk_imatrix_load(const char *path);
/* The same from bytes in memory (copied first; tests and fuzzing). */
wk_imatrix *wk_imatrix_load_bytes(const void *data, size_t size);
void        wk_imatrix_free(wk_imatrix *m); /* NULL is fine */

/* Entries in file order (for GGUF: the order of the .in_sum2 tensors). */
int64_t      wk_imatrix_count(const wk_imatrix *m);
const char  *wk_imatrix_name(const wk_imatrix *m, int64_t i); /* NULL for a bad i */
/* The weights of entry i / of the tensor called name: *n of them (columns
 * times stacked matrices). NULL (no error recorded) when absent. */
const float *wk_imatrix_values(const wk_imatrix *m, int64_t i, int64_t *n);
const float *wk_imatrix_find(const wk_imatrix *m, const char *name, int64_t *n);

/* What the file says about itself: 1 for the legacy format, 0 for GGUF;
 * the number of chunks it was computed on (0 when not given); its first
 * dataset's name (NULL when none). */
int         wk_imatrix_is_legacy(const wk_imatrix *m);
int64_t     wk_imatrix_chunk_count(const wk_imatrix *m);
const char *wk_imatrix_dataset(const wk_imatrix *m);

#ifdef __cplusplus
}
#endif
#endif
