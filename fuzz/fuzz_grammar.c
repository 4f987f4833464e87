/* libFuzzer target for constrained sampling (src/text/grammar_*.c).
 *
 * Build (clang): see fuzz_tokenizer.c; then
 *   ./build-fuzz/fuzz/fuzz_grammar -max_total_time=60 corpus/
 *
 * The first byte picks the mode: even parses the rest as GBNF, odd as a
 * JSON schema. A failure must be a clean WK_ERR_FORMAT (or WK_ERR_BUSY from
 * a matcher limit) with a message; a grammar that compiles is matched
 * against a few texts and walked for a few steps of token masks over a
 * small byte-level vocabulary (built once), taking the first allowed id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick/grammar.h"
#include "wick/tokenizer.h"
#include "wick/wick.h"

static void expect_clean_error(const char *what) {
    wk_status s = wk_last_status();
    if (!(s == WK_ERR_FORMAT || s == WK_ERR_BUSY) || !wk_last_error()[0]) {
        fprintf(stderr, "%s: unexpected failure %s: %s\n", what, wk_status_name(s), wk_last_error());
        abort();
    }
    wk_clear_error();
}

/* Byte tokens (GPT-2 chars of the printable ASCII range stand for
 * themselves; the rest are left out) plus a few words. */
static wk_tokenizer *vocab(void) {
    static char s[8192];
    size_t n = (size_t)snprintf(s, sizeof s,
                                "{\"model\":{\"type\":\"BPE\",\"merges\":[],\"vocab\":{\"<eos>\":0,\"true\":1,"
                                "\"{\\\"\":2,\"\\\":\":3,\"null\":4,\"ab\":5,\"12\":6");
    int id = 7;
    for (int c = 0x21; c < 0x7f; c++) {
        if (c == '"' || c == '\\') n += (size_t)snprintf(s + n, sizeof s - n, ",\"\\%c\":%d", c, id++);
        else n += (size_t)snprintf(s + n, sizeof s - n, ",\"%c\":%d", c, id++);
    }
    n += (size_t)snprintf(s + n, sizeof s - n,
                          "}},\"added_tokens\":[{\"id\":0,\"content\":\"<eos>\",\"special\":true}],"
                          "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
                          "\"decoder\":{\"type\":\"ByteLevel\"}}");
    wk_tokenizer *t = wk_tokenizer_from_json(s, n);
    if (!t) {
        fprintf(stderr, "fuzz_grammar vocabulary: %s\n", wk_last_error());
        abort();
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static wk_tokenizer *tok;
    if (!tok) tok = vocab();
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    wk_grammar *g = (data[0] & 1) ? wk_grammar_from_json_schema(text, n) : wk_grammar_from_gbnf(text, n, NULL);
    if (!g) {
        expect_clean_error("compile");
        return 0;
    }
    static const char *const texts[] = {"", "a", "{\"a\":1}", "[1, \"x\", null]", "\xc3\xa9", "root"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        int r = wk_grammar_match(g, texts[i], strlen(texts[i]));
        if (r < 0) expect_clean_error("match");
    }
    wk_grammar_state *st = wk_grammar_state_new(g, tok);
    if (!st) {
        expect_clean_error("state");
    } else {
        int64_t V = wk_tokenizer_vocab_size(tok);
        uint8_t mask[256];
        int32_t eos = 0;
        for (int step = 0; step < 8 && V <= 256; step++) {
            int64_t cnt = wk_grammar_state_mask(st, &eos, 1, mask, V);
            if (cnt < 0) {
                expect_clean_error("mask");
                break;
            }
            int32_t id = 1;
            while (id < V && !mask[id]) id++;
            if (id >= V) break;
            if (wk_grammar_state_accept(st, id) != WK_OK) {
                fprintf(stderr, "an allowed id was refused: %s\n", wk_last_error());
                abort();
            }
        }
        wk_grammar_state_free(st);
    }
    wk_grammar_free(g);
    return 0;
}
