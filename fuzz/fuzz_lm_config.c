/* libFuzzer target for the model floor's config reader: the input is an HF
 * config.json, read by the common reader (every key some family uses), then
 * the named family's rules (finish) and the checks.
 *
 * Build (clang): as the other targets (fuzz/CMakeLists.txt, WICK_FUZZ=ON).
 *   ./build-fuzz/fuzz/fuzz_lm_config -max_total_time=60 corpus/
 *
 * A failure must be a clean error with a message; a success must leave a
 * config the forward could run (sizes positive, heads dividing, flags only
 * where a window exists). Anything else, and any sanitizer report, aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/lm_internal.h"
#include "wick/wick.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wk_lm_config c;
    wk__lm_raw r;
    const wk__lm_arch *a = NULL;
    wk_clear_error();
    wk_status st = wk__lm_config_from_json((const char *)data, size, "fuzz/config.json", &c, &r, &a);
    if (st == WK_OK) st = wk__lm_config_check(&c, "fuzz");
    if (st == WK_OK) {
        if (!a) abort();
        uint8_t *flags = calloc((size_t)c.n_layers, 1);
        if (!flags) abort();
        c.layer_flags = flags;
        st = wk__lm_config_finish(a, &r, &c, flags, "fuzz");
        if (st == WK_OK) {
            if (c.n_heads % c.n_kv_heads || c.rope_dims <= 0 || c.rope_dims > c.head_dim || c.rope_dims % 2) abort();
            for (int64_t i = 0; i < c.n_layers; i++)
                if ((flags[i] & WK_LM_SLIDING) && c.sliding_window <= 0) abort();
        }
        free(flags);
    }
    if (st != WK_OK && (!wk_last_error()[0] || wk_last_status() == WK_OK)) abort();
    wk__lm_raw_free(&r);
    return 0;
}
