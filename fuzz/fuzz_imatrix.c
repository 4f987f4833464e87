/* libFuzzer target for the importance-matrix reader (src/io/imatrix.c):
 * the legacy .dat parser, and the GGUF form through the GGUF reader.
 *
 * Build (clang): as fuzz_gguf.c, target fuzz_imatrix.
 *
 * Each input is parsed from memory. A failure must be a clean error
 * (WK_ERR_FORMAT, or WK_ERR_DTYPE from the GGUF reader, with a message); on
 * success every entry's name and weights are read, so ASan sees any read
 * outside what the reader owns. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wick/imatrix.h"

static volatile float g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wk_imatrix *m = wk_imatrix_load_bytes(data, size);
    if (!m) {
        wk_status s = wk_last_status();
        if (!(s == WK_ERR_FORMAT || s == WK_ERR_DTYPE) || !wk_last_error()[0]) {
            fprintf(stderr, "unexpected failure %s: %s\n", wk_status_name(s), wk_last_error());
            abort();
        }
        wk_clear_error();
        return 0;
    }
    float acc = 0;
    for (int64_t i = 0; i < wk_imatrix_count(m); i++) {
        int64_t n = 0;
        const char *name = wk_imatrix_name(m, i);
        const float *w = wk_imatrix_values(m, i, &n);
        if (!name || !w || n < 1 || wk_imatrix_find(m, name, NULL) != w) abort();
        acc += (float)strlen(name);
        for (int64_t j = 0; j < n; j++) acc += w[j];
    }
    const char *ds = wk_imatrix_dataset(m);
    if (ds) acc += (float)strlen(ds);
    g_sink = acc;
    wk_imatrix_free(m);
    return 0;
}
