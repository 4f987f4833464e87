/* libFuzzer target for the safetensors header parser and the JSON reader
 * under it.
 *
 * Build (clang):
 *   CC=clang cmake -S . -B build-fuzz -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
 *   cmake --build build-fuzz --target fuzz_safetensors
 *   ./build-fuzz/fuzz/fuzz_safetensors -dict=fuzz/safetensors.dict -max_total_time=60 corpus-st/
 *
 * Each input is tried three ways: as a whole file image; as a JSON header
 * with the length prefix made for it (so mutations reach the JSON without
 * having to keep the prefix right), the input's last byte choosing how many
 * of the bytes before it are the data area; and as a JSON document for the
 * reader alone. A failure must be a clean error (WK_ERR_FORMAT, or
 * WK_ERR_DTYPE for a dtype, with a message); anything else, and any
 * sanitizer report, aborts. An opened file's tensors must all read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "wick/safetensors.h"
#include "wick/wick.h"

static void expect_clean_error(const char *what) {
    wk_status s = wk_last_status();
    if ((s != WK_ERR_FORMAT && s != WK_ERR_DTYPE) || !wk_last_error()[0]) {
        fprintf(stderr, "%s: unexpected failure %s: %s\n", what, wk_status_name(s), wk_last_error());
        abort();
    }
    wk_clear_error();
}

static void exercise(const uint8_t *img, size_t size, const char *what) {
    wk_safetensors *st = wk_safetensors_open_bytes(img, size);
    if (!st) {
        expect_clean_error(what);
        return;
    }
    for (int i = 0; i < wk_safetensors_count(st); i++) {
        wk_safetensors_info in;
        if (wk_safetensors_info_at(st, i, &in) != WK_OK || !in.name) abort();
        if (in.nbytes > size || in.offset > size - in.nbytes) abort(); /* inside the image */
        wk_tensor *t = wk_safetensors_get(st, in.name);
        if (!t) {
            if (in.supported) abort();
            expect_clean_error("get");
            continue;
        }
        size_t nb = (size_t)wk_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
        if (nb != in.nbytes) abort();
        void *b = malloc(nb ? nb : 1);
        if (!b || wk_to_host(t, b, nb) != WK_OK) abort();
        free(b);
        wk_tensor_free(t);
    }
    for (int i = 0; i < wk_safetensors_meta_count(st); i++) {
        const char *k = wk_safetensors_meta_key(st, i);
        if (!k || !wk_safetensors_meta_value(st, k)) abort();
    }
    wk_safetensors_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    exercise(data, size, "image");

    if (size >= 1) {
        size_t dlen = data[size - 1] % size; /* bytes before the last one used as data */
        size_t hlen = size - 1 - dlen;
        uint8_t *img = malloc(8 + size);
        if (!img) return 0;
        for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
        memcpy(img + 8, data, size - 1);
        exercise(img, 8 + size - 1, "header");
        free(img);
    }

    char msg[160];
    bool ok = wk__json_validate(data, size, msg, sizeof msg);
    if (!ok && !msg[0]) abort();
    return 0;
}
