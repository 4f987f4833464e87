/* libFuzzer target for the .npy and .npz parsers.
 *
 * Build (clang):
 *   CC=clang cmake -S . -B build-fuzz -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
 *   cmake --build build-fuzz --target fuzz_npy
 *   ./build-fuzz/fuzz/fuzz_npy -max_total_time=60 corpus/
 *
 * Each input is tried as an .npy image and as an .npz archive. A failure
 * must be a clean error (WK_ERR_FORMAT with a message); anything else, and
 * any sanitizer report, aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/npy_internal.h"
#include "wick/wick.h"

static void check(const wk_tensor *t) {
    int rank = wk_rank(t);
    if (rank < 0 || rank > WK_MAX_RANK) abort();
    int64_t n = wk_numel(t);
    size_t nb = (size_t)n * wk_dtype_size(wk_tensor_dtype(t));
    if (nb > (1u << 26)) abort(); /* never more than the input could hold */
    void *b = malloc(nb ? nb : 1);
    if (!b || wk_to_host(t, b, nb) != WK_OK) abort();
    free(b);
}

static void expect_clean_error(const char *what) {
    if (wk_last_status() != WK_ERR_FORMAT || !wk_last_error()[0]) {
        fprintf(stderr, "%s: unexpected failure %s: %s\n", what, wk_status_name(wk_last_status()), wk_last_error());
        abort();
    }
    wk_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exactly sized copy: libFuzzer's buffer is already exact, but keep
     * the contract explicit. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);

    wk_tensor *t = wk_npy_load_bytes(copy, size, wk_cpu());
    if (t) {
        check(t);
        wk_tensor_free(t);
    } else {
        expect_clean_error("npy");
    }

    char **names;
    wk_tensor **ts;
    int count;
    if (wk__npz_load_bytes(copy, size, wk_cpu(), &names, &ts, &count, "fuzz", "<fuzz>") == WK_OK) {
        for (int i = 0; i < count; i++) {
            if (!names[i]) abort();
            check(ts[i]);
        }
        wk_npz_free(names, ts, count);
    } else {
        if (names || ts || count) abort();
        expect_clean_error("npz");
    }
    free(copy);
    return 0;
}
