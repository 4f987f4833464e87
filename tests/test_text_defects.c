/* Regression tests for text-layer defects found by hostile use:
 *  - BPE: a word of <= 64 bytes whose merge queue outgrows 64 entries (the
 *    queue's stack array was 64 entries, its bound 128): ordinary long words
 *    with the gpt-2, llama-bpe and starcoder vocabularies (ids from HF
 *    tokenizers on the same vocabularies) and a tiny vocabulary that needs
 *    93 queue entries for a 64-byte word (no vocab files needed);
 *  - WordPiece: a 200k-character word with a large max_input_chars_per_word
 *    is O(n * longest token), counted by wick's per-thread step counter, not
 *    timed;
 *  - wk_tokenizer_encode(t, NULL, 0) is an empty encoding, not NULL + 0 (run
 *    it under the sanitizer build), and NULL with a length is WK_ERR_ARG;
 *    the streaming decoder with a NULL, 0-byte output and no output ready;
 *  - a tokenizer_config.json chat_template entry whose "name" / "template"
 *    is not a string is reported as such, not as a JSON syntax error. */
#include <setjmp.h>
#include "wick/gguf.h"
#include "wick/safetensors.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "text/tok_internal.h"
#include "wick/wick.h"
#include "byte_bpe_testutil.h"

static const char *const LONG_WORDS[3] = {
    "Supercalifragilisticexpialidociousnessfulnesslessnessishnessly",
    "thisisaverylongidentifierwithoutanyseparatorsinsidecodebase",
    "hahahahahahahahahahahahahahahahahahahahahahahahahahahahahaha",
};

/* HF tokenizers 0.23.3 on tokenizer.json files made from llama.cpp's
 * ggml-vocab-*.gguf by tests/make_tokenizer_json.py (starcoder with the
 * smollm pre-tokenizer, llama-bpe with ignore_merges as Llama-3's file has). */
typedef struct expect { const char *vocab; int n[3]; int32_t ids[3][32]; } expect;
static const expect EXPECT[3] = {
    {"gpt-2",
     {17, 13, 16},
     {{12442, 9948, 361, 22562, 346, 396, 501, 42372, 498, 312, 32346, 1108, 15538, 17587, 680, 1108, 306},
      {5661, 9160, 548, 6511, 738, 7483, 19419, 1092, 25512, 2024, 48787, 8189, 8692},
      {71, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225, 36225,
       12236}}},
    {"llama-bpe",
     {17, 13, 29},
     {{10254, 3035, 278, 333, 4193, 321, 4633, 4683, 532, 307, 78287, 2136, 31514, 33028, 819, 2136, 398},
      {576, 285, 25727, 4930, 16288, 30096, 3852, 325, 1768, 3046, 42450, 1889, 3231},
      {71,   1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494,
       1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 1494, 74635}}},
    {"starcoder",
     {19, 12, 30},
     {{11086, 1299, 344, 2471, 354, 5440, 2858, 583, 333, 561, 2424, 4342, 2812, 4342, 2290, 4342, 1729, 4342, 651},
      {597, 13664, 2274, 3239, 7907, 12670, 1831, 17655, 4079, 20030, 707, 1460},
      {109,  2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389,
       2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 2389, 17097}}},
};

static void roundtrip(const wk_tokenizer *t, const char *s, const int32_t *ids, int64_t n) {
    char out[512];
    int64_t k = wk_tokenizer_decode(t, ids, n, false, out, sizeof out);
    if (k < 0) fail_msg("decode: %s", wk_last_error());
    assert_int_equal(k, (int64_t)strlen(s));
    assert_string_equal(out, s);
}

static void test_bpe_long_words_llama_vocabs(void **state) {
    (void)state;
    const char *dir = getenv("WICK_LLAMA_VOCAB_DIR");
    if (!dir) {
        fprintf(stderr, "skipped: WICK_LLAMA_VOCAB_DIR is unset (scripts/setup.sh)\n");
        skip();
    }
    for (int v = 0; v < 3; v++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/ggml-vocab-%s.gguf", dir, EXPECT[v].vocab);
        wk_gguf *g = wk_gguf_open(p);
        if (!g) fail_msg("%s: %s", p, wk_last_error());
        wk_tokenizer *t = wk_tokenizer_from_gguf(g);
        if (!t) fail_msg("%s: %s", p, wk_last_error());
        for (int w = 0; w < 3; w++) {
            const char *s = LONG_WORDS[w];
            int32_t ids[128];
            int64_t n = wk_tokenizer_encode(t, s, strlen(s), 0, ids, 128);
            if (n != EXPECT[v].n[w]) fail_msg("%s, word %d: %lld ids, HF gives %d", EXPECT[v].vocab, w, (long long)n,
                                              EXPECT[v].n[w]);
            for (int i = 0; i < n; i++)
                if (ids[i] != EXPECT[v].ids[w][i])
                    fail_msg("%s, word %d: id %d is %d, HF gives %d", EXPECT[v].vocab, w, i, (int)ids[i],
                             (int)EXPECT[v].ids[w][i]);
            roundtrip(t, s, ids, n);
            /* the same word inside a sentence, and a prefix of each length */
            char buf[256];
            snprintf(buf, sizeof buf, "say %s, twice: %s!", s, s);
            int64_t m = wk_tokenizer_encode(t, buf, strlen(buf), 0, ids, 128);
            assert_true(m > 0 && m <= 128);
            roundtrip(t, buf, ids, m);
            for (size_t len = 1; len <= strlen(s); len++) {
                memcpy(buf, s, len);
                buf[len] = 0;
                m = wk_tokenizer_encode(t, buf, len, 0, ids, 128);
                assert_true(m > 0 && m <= 128);
                roundtrip(t, buf, ids, m);
            }
        }
        wk_tokenizer_free(t);
        wk_gguf_close(g);
    }
}


/* Bytes 0..255, then 256 "ab", 257 "abab", 258 "aba", 259 "ba"; merges in
 * rank order "a b", "ab ab", "ab a", "b a". On "abab...ab" (64 bytes) the
 * 32 "a b" merges each queue "ab ab" and "ab a" while the 31 "b a" pairs
 * wait: 93 entries at the peak. HF's answer: 16 x "abab". */
static wk_tokenizer *queue_bpe(void) {
    char *s = malloc(1 << 14);
    size_t n = (size_t)sprintf(s, "{\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                                  "\"add_prefix_space\":false,\"use_regex\":true},\"post_processor\":null,"
                                  "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (unsigned b = 0; b < 256; b++) {
        s[n++] = '"';
        n += put_byte_char(s + n, b);
        n += (size_t)sprintf(s + n, "\":%u,", b);
    }
    n += (size_t)sprintf(s + n, "\"ab\":256,\"abab\":257,\"aba\":258,\"ba\":259},"
                                "\"merges\":[\"a b\",\"ab ab\",\"ab a\",\"b a\"]}}");
    wk_tokenizer *t = wk_tokenizer_from_json(s, n);
    if (!t) fail_msg("queue_bpe: %s", wk_last_error());
    free(s);
    return t;
}

static void test_bpe_queue_outgrows_word(void **state) {
    (void)state;
    wk_tokenizer *t = queue_bpe();
    char s[65];
    for (int i = 0; i < 64; i += 2) memcpy(s + i, "ab", 2);
    s[64] = 0;
    int32_t ids[80];
    assert_int_equal(wk_tokenizer_encode(t, s, 64, 0, ids, 80), 16);
    for (int i = 0; i < 16; i++) assert_int_equal(ids[i], 257);
    roundtrip(t, s, ids, 16);
    /* every shorter word, odd ones end in "aba"; and 65+ bytes (the heap path) */
    for (size_t len = 1; len <= 64; len++) {
        char w[80];
        memcpy(w, s, len);
        w[len] = 0;
        int64_t m = wk_tokenizer_encode(t, w, len, 0, ids, 80);
        assert_true(m > 0 && m <= 80);
        roundtrip(t, w, ids, m);
    }
    char big[131];
    for (int i = 0; i < 130; i += 2) memcpy(big + i, "ab", 2);
    big[130] = 0;
    int32_t bids[80];
    assert_int_equal(wk_tokenizer_encode(t, big, 130, 0, bids, 80), 33);
    for (int i = 0; i < 32; i++) assert_int_equal(bids[i], 257);
    assert_int_equal(bids[32], 256);
    wk_tokenizer_free(t);
}

/* WordPiece: [UNK] 0, "a" 1, "##a" 2, "##aaa" 3, "aaaa" 4. */
static wk_tokenizer *long_wordpiece(long long max_chars) {
    char j[1024];
    int n = snprintf(j, sizeof j,
                     "{\"added_tokens\":[],\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
                     "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
                     "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":null,"
                     "\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true},"
                     "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
                     "\"max_input_chars_per_word\":%lld,\"vocab\":{\"[UNK]\":0,\"a\":1,\"##a\":2,\"##aaa\":3,"
                     "\"aaaa\":4}}}",
                     max_chars);
    wk_tokenizer *t = wk_tokenizer_from_json(j, (size_t)n);
    if (!t) fail_msg("long_wordpiece: %s", wk_last_error());
    return t;
}

static void test_wordpiece_long_word_is_linear(void **state) {
    (void)state;
    wk_tokenizer *t = long_wordpiece(1000000);
    enum { N = 200000 };
    char *s = malloc(N + 1);
    memset(s, 'a', N);
    s[N] = 0;
    int64_t cap = N;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    wk__wordpiece_steps = 0;
    int64_t n = wk_tokenizer_encode(t, s, N, 0, ids, cap);
    /* "aaaa", then (N - 4) / 3 x "##aaa", then "##a" */
    assert_int_equal(n, 2 + (N - 4) / 3);
    assert_int_equal(ids[0], 4);
    for (int64_t i = 1; i + 1 < n; i++)
        if (ids[i] != 3) fail_msg("id %lld is %d, expected 3", (long long)i, (int)ids[i]);
    assert_int_equal(ids[n - 1], 2);
    /* each piece tries at most (longest token) candidate ends: O(n) here,
     * where stepping down from the word's end was ~n^2 / 6 = 6.7e9 */
    if (wk__wordpiece_steps > 10ull * N)
        fail_msg("%llu WordPiece steps for a %d-character word", (unsigned long long)wk__wordpiece_steps, N);
    /* a word over the limit is [UNK]; a non-matching tail makes it [UNK] */
    wk_tokenizer *small = long_wordpiece(N - 1);
    assert_int_equal(wk_tokenizer_encode(small, s, N, 0, ids, cap), 1);
    assert_int_equal(ids[0], 0);
    s[N - 1] = 'b';
    wk__wordpiece_steps = 0;
    assert_int_equal(wk_tokenizer_encode(t, s, N, 0, ids, cap), 1);
    assert_int_equal(ids[0], 0);
    assert_true(wk__wordpiece_steps <= 10ull * N);
    /* multi-byte characters: the bound is in bytes, the steps in characters */
    char w[64];
    snprintf(w, sizeof w, "aaaa\xC3\xA9"); /* "aaaaé": é has no piece */
    assert_int_equal(wk_tokenizer_encode(t, w, strlen(w), 0, ids, cap), 1);
    assert_int_equal(ids[0], 0);
    wk_tokenizer_free(small);
    wk_tokenizer_free(t);
    free(ids);
    free(s);
}

static void test_encode_null_text(void **state) {
    (void)state;
    wk_tokenizer *t = queue_bpe();
    int32_t ids[4] = {-7, -7, -7, -7};
    assert_int_equal(wk_tokenizer_encode(t, NULL, 0, 0, ids, 4), 0);
    assert_int_equal(wk_tokenizer_encode(t, NULL, 0, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, ids, 4), 0);
    assert_int_equal(wk_tokenizer_encode(t, NULL, 0, 0, NULL, 0), 0);
    assert_int_equal(ids[0], -7);
    assert_int_equal(wk_tokenizer_encode(t, "", 0, 0, ids, 4), 0);
    wk_clear_error();
    assert_int_equal(wk_tokenizer_encode(t, NULL, 3, 0, ids, 4), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    /* and a WordPiece tokenizer, with its [CLS]/[SEP]-less template */
    wk_tokenizer *w = long_wordpiece(100);
    assert_int_equal(wk_tokenizer_encode(w, NULL, 0, WK_TOK_ADD_SPECIAL, ids, 4), 0);
    assert_int_equal(wk_tokenizer_encode(w, NULL, 1, 0, ids, 4), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    /* decode of nothing into nothing */
    assert_int_equal(wk_tokenizer_decode(t, NULL, 0, false, NULL, 0), 0);
    /* a stream given the first byte of "é" has nothing to write yet: a
     * NULL, 0-byte output is fine */
    wk_token_stream st = {0};
    assert_int_equal(wk_token_stream_put(t, &st, 0xC3, false, NULL, 0), 0);
    char out[8];
    assert_int_equal(wk_token_stream_put(t, &st, 0xA9, false, out, sizeof out), 2);
    assert_memory_equal(out, "\xC3\xA9", 2);
    assert_int_equal(wk_token_stream_flush(&st, NULL, 0), 0);
    wk_tokenizer_free(w);
    wk_tokenizer_free(t);
}

/* ------------------------------------------------ chat_template entries */

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A directory with a valid config.json and safetensors (one tensor: the
 * loader reads the chat template before it looks for the weights). */
static void hf_dir_with_config(const char *dir, const char *tokenizer_config) {
    char path[4096];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"vocab_size\": 8,"
                     " \"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 1,"
                     " \"num_attention_heads\": 2, \"num_key_value_heads\": 2, \"max_position_embeddings\": 16,"
                     " \"rope_theta\": 10000.0, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": true,"
                     " \"bos_token_id\": 1, \"eos_token_id\": 2, \"torch_dtype\": \"float32\"}");
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_file(path, tokenizer_config);
    int64_t shape[2] = {8, 8};
    wk_tensor *e = wk_zeros(shape, 2, WK_F32, wk_cpu());
    assert_non_null(e);
    const char *names[1] = {"model.embed_tokens.weight"};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(wk_safetensors_save(path, 1, names, &e, 0, NULL, NULL), WK_OK);
    wk_tensor_free(e);
}

static void remove_dir(const char *dir) {
    static const char *files[] = {"config.json", "tokenizer_config.json", "model.safetensors"};
    char path[4096];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
    rmdir(dir);
}

static void expect_chat_error(const char *base, const char *tokenizer_config, const char *msg) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%.900s/chat", base);
    hf_dir_with_config(dir, tokenizer_config);
    wk_clear_error();
    wk_lm *m = wk_lm_load(dir, NULL);
    if (m) fail_msg("loaded with tokenizer_config %s", tokenizer_config);
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    if (!strstr(wk_last_error(), msg)) fail_msg("error \"%s\" does not say \"%s\"", wk_last_error(), msg);
    wk_clear_error();
    remove_dir(dir);
}

static void test_chat_template_entry_types(void **state) {
    (void)state;
    char base[] = "/tmp/wick_text_defects_XXXXXX";
    assert_non_null(mkdtemp(base));
    expect_chat_error(base, "{\"chat_template\": [{\"name\": 5, \"template\": \"{{ x }}\"}]}",
                      "chat_template entry 0: \"name\" must be a string");
    expect_chat_error(base,
                      "{\"chat_template\": [{\"name\": \"default\", \"template\": \"a\"},"
                      " {\"name\": \"tool_use\", \"template\": [\"b\"]}]}",
                      "chat_template entry 1: \"template\" must be a string");
    expect_chat_error(base, "{\"chat_template\": [{\"template\": null, \"name\": \"default\"}]}",
                      "chat_template entry 0: \"template\" must be a string");
    expect_chat_error(base, "{\"chat_template\": [\"{{ x }}\"]}", "chat_template entry 0 must be an object");
    /* a real syntax error still says where */
    expect_chat_error(base, "{\"chat_template\": [{\"name\": \"default\" \"template\": \"a\"}]}", "expected");
    rmdir(base);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_queue_outgrows_word),
        cmocka_unit_test(test_bpe_long_words_llama_vocabs),
        cmocka_unit_test(test_wordpiece_long_word_is_linear),
        cmocka_unit_test(test_encode_null_text),
        cmocka_unit_test(test_chat_template_entry_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
