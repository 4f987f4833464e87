/* libFuzzer target for the chat-template interpreter (src/text/jinja_*.c).
 *
 * Build (clang):
 *   CC=clang cmake -S . -B build-fuzz -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
 *   cmake --build build-fuzz --target fuzz_chat_template
 *   ./build-fuzz/fuzz/fuzz_chat_template -max_total_time=60 corpus/
 *
 * The input is a template. It must compile and render, or fail with a
 * message (WK_ERR_FORMAT, WK_ERR_ARG from raise_exception, WK_ERR_OOM);
 * never crash, hang past the limits, or leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wick/chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    wk_chat_message m[3] = {{.role = "system", .content = "sys"}, {.role = "user", .content = "hi"},
                            {.role = "assistant", .content = NULL, .tool_calls_json = "[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]"}};
    wk_chat_opts o = {.bos_token = "<s>", .eos_token = "</s>", .add_generation_prompt = true,
                      .tools_json = "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", .now = 1721995200};
    char out[256];
    if (wk_chat_apply(src, m, 3, &o, out, sizeof out) < 0) {
        wk_status s = wk_last_status();
        if (!(s == WK_ERR_FORMAT || s == WK_ERR_ARG || s == WK_ERR_OOM) || !wk_last_error()[0]) {
            fprintf(stderr, "unexpected failure %s: %s\n", wk_status_name(s), wk_last_error());
            abort();
        }
        wk_clear_error();
    }
    free(src);
    return 0;
}
