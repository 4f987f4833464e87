/* The real Gemma 3 270M GGUF's SentencePiece vocabulary (262,144 tokens,
 * scores, user-defined whitespace tokens, <0xXX> byte fallback) against
 * llama.cpp: tests/data/gemma3_tokens.json holds llama-cpp-python's ids for
 * a few strings (made by hand with tests/gemma3_tok_ref_llama_cpp.py).
 * Label `model`. The file comes from WICK_GEMMA3_GGUF, which CMake sets to
 * <repo>/.cache/models/gemma3-270m-Q4_K_M.gguf when that exists; without it
 * the test skips, saying so. */
#include <setjmp.h>
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/json.h"
#include "wick/wick.h"

static char *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long l = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)l + 1);
    *n = fread(b, 1, (size_t)l, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

/* Encode, compare with want, and check decode / streaming give the text
 * back (Gemma adds no prefix space, so decode is exact). */
static int check_case(const wk_tokenizer *t, const char *text, size_t len, bool bos, bool special,
                      const int32_t *want, int64_t nwant) {
    unsigned flags = (bos ? WK_TOK_ADD_SPECIAL : 0) | (special ? WK_TOK_PARSE_SPECIAL : 0);
    int32_t ids[512];
    int64_t n = wk_tokenizer_encode(t, text, len, flags, ids, 512);
    assert_true(n >= 0 && n <= 512);
    if (n != nwant || memcmp(ids, want, sizeof(int32_t) * (size_t)n) != 0) {
        fprintf(stderr, "\"%s\": wick", text);
        for (int64_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n  llama.cpp");
        for (int64_t i = 0; i < nwant; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
        return 1;
    }
    char out[4096];
    int64_t m = wk_tokenizer_decode(t, ids, n, false, out, sizeof out);
    size_t skip = bos ? strlen("<bos>") : 0;
    assert_true(m >= 0 && (size_t)m == skip + len);
    assert_memory_equal(out + skip, text, len);
    if (special) return 0; /* the stream skips the parsed control tokens */
    wk_token_stream st = {0};
    size_t o = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = wk_token_stream_put(t, &st, ids[i], true, out + o, sizeof out - o);
        assert_true(k >= 0);
        o += (size_t)k;
    }
    assert_int_equal(wk_token_stream_flush(&st, out + o, sizeof out - o), 0);
    assert_int_equal(o, len);
    assert_memory_equal(out, text, len);
    return 0;
}

static void test_gemma3_llama_cpp(void **state) {
    (void)state;
    const char *path = getenv("WICK_GEMMA3_GGUF");
    const char *data = getenv("WICK_TOK_DATA");
    if (!path || !*path || !data) {
        fprintf(stderr, "skipped: WICK_GEMMA3_GGUF is unset (the Gemma 3 270M GGUF: scripts/setup.sh puts it in "
                        ".cache/models/gemma3-270m-Q4_K_M.gguf)\n");
        skip();
    }
    wk_gguf *g = wk_gguf_open(path);
    assert_non_null(g);
    wk_tokenizer *t = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    if (!t) fprintf(stderr, "%s\n", wk_last_error());
    assert_non_null(t);
    assert_int_equal(wk_tokenizer_vocab_size(t), 262144);
    assert_int_equal(wk_tokenizer_bos(t), 2);
    assert_int_equal(wk_tokenizer_eos(t), 1);
    assert_true(wk_tokenizer_adds_bos(t));
    assert_false(wk_tokenizer_adds_eos(t));

    char file[1024];
    snprintf(file, sizeof file, "%s/gemma3_tokens.json", data);
    size_t n = 0;
    char *doc = slurp(file, &n);
    assert_non_null(doc);
    wk__json p;
    wk__json_init(&p, doc, n);
    const char *k;
    size_t kl;
    int bad = 0, cases = 0;
    assert_true(wk__json_object(&p));
    while (wk__json_key(&p, &k, &kl)) {
        if (strcmp(k, "cases") != 0) {
            assert_true(wk__json_skip(&p));
            continue;
        }
        assert_true(wk__json_array(&p));
        while (wk__json_item(&p)) {
            char *text = NULL;
            size_t len = 0;
            bool bos = false, special = false;
            int32_t want[512];
            int64_t nwant = 0;
            assert_true(wk__json_object(&p));
            while (wk__json_key(&p, &k, &kl)) {
                if (strcmp(k, "text") == 0) {
                    const char *s;
                    assert_true(wk__json_string(&p, &s, &len));
                    text = malloc(len + 1);
                    memcpy(text, s, len + 1);
                } else if (strcmp(k, "add_bos") == 0) {
                    assert_true(wk__json_bool(&p, &bos));
                } else if (strcmp(k, "special") == 0) {
                    assert_true(wk__json_bool(&p, &special));
                } else if (strcmp(k, "ids") == 0) {
                    assert_true(wk__json_array(&p));
                    while (wk__json_item(&p)) {
                        int64_t v;
                        assert_true(wk__json_int(&p, &v) && nwant < 512);
                        want[nwant++] = (int32_t)v;
                    }
                } else {
                    assert_true(wk__json_skip(&p));
                }
            }
            assert_false(p.failed);
            assert_non_null(text);
            bad += check_case(t, text, len, bos, special, want, nwant);
            cases++;
            free(text);
        }
    }
    assert_false(p.failed);
    wk__json_free(&p);
    free(doc);
    fprintf(stderr, "gemma3: %d of %d llama.cpp cases match\n", cases - bad, cases);
    assert_true(cases >= 10);
    assert_int_equal(bad, 0);
    wk_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemma3_llama_cpp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
