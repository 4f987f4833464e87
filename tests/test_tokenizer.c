/* Tokenizers without the Python oracles: a tiny byte-level BPE written as a
 * tokenizer.json in memory (buffers, streaming decode of a split emoji,
 * invalid UTF-8, added tokens), hostile tokenizer.json and GGUF metadata
 * (errors, never crashes), SmolLM2's ids from models.md through the GGUF
 * loader, and llama.cpp's own tokenizer test vectors (WICK_LLAMA_VOCAB_DIR)
 * for every vocab whose kind wick covers. */
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
#include <sys/stat.h>
#include "wick/wick.h"
#include "byte_bpe_testutil.h"

/* ------------------------------------------------------------ tiny BPE */


/* ids 0..255: the bytes in order; 256 "ab", 257 "abc", 258 "Ġab";
 * 259 <|end|> (special), 260 <x> (added, not special). */
static char *tiny_json(void) {
    char *s = malloc(1 << 16);
    size_t n = (size_t)sprintf(s, "{\"version\":\"1.0\",\"added_tokens\":["
                                  "{\"id\":259,\"content\":\"<|end|>\",\"special\":true},"
                                  "{\"id\":260,\"content\":\"<x>\",\"special\":false}],"
                                  "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                                  "\"add_prefix_space\":false,\"use_regex\":true},\"post_processor\":{\"type\":"
                                  "\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<|end|>\"}},"
                                  "{\"Sequence\":{\"id\":\"A\"}}],\"special_tokens\":{\"<|end|>\":{\"ids\":[259]}}},"
                                  "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (unsigned b = 0; b < 256; b++) {
        s[n++] = '"';
        n += put_byte_char(s + n, b);
        n += (size_t)sprintf(s + n, "\":%u,", b);
    }
    n += (size_t)sprintf(s + n, "\"ab\":256,\"abc\":257,\"\xC4\xA0" "ab\":258,\"<|end|>\":259,\"<x>\":260},"
                                "\"merges\":[\"a b\",[\"ab\",\"c\"],\"\xC4\xA0 ab\"]}}");
    s[n] = 0;
    return s;
}

static wk_tokenizer *tiny(void) {
    char *j = tiny_json();
    wk_tokenizer *t = wk_tokenizer_from_json(j, strlen(j));
    if (!t) fprintf(stderr, "tiny: %s\n", wk_last_error());
    free(j);
    return t;
}

static int64_t enc(const wk_tokenizer *t, const char *s, unsigned flags, int32_t *ids, int64_t cap) {
    return wk_tokenizer_encode(t, s, strlen(s), flags, ids, cap);
}

static void test_tiny_bpe(void **state) {
    (void)state;
    wk_tokenizer *t = tiny();
    assert_non_null(t);
    assert_int_equal(wk_tokenizer_vocab_size(t), 261);
    int32_t ids[64];
    assert_int_equal(enc(t, "abc", 0, ids, 64), 1);
    assert_int_equal(ids[0], 257);
    assert_int_equal(enc(t, "ab ab", 0, ids, 64), 2);
    assert_int_equal(ids[0], 256);
    assert_int_equal(ids[1], 258);
    /* "abd": the merge a+b, then d alone */
    assert_int_equal(enc(t, "abd", 0, ids, 64), 2);
    assert_int_equal(ids[1], 'd');
    /* special token only with PARSE_SPECIAL; non-special added token always */
    assert_int_equal(enc(t, "a<|end|>", 0, ids, 64), 8);
    assert_int_equal(enc(t, "a<|end|>", WK_TOK_PARSE_SPECIAL, ids, 64), 2);
    assert_int_equal(ids[1], 259);
    assert_int_equal(enc(t, "a<x>b", 0, ids, 64), 3);
    assert_int_equal(ids[1], 260);
    /* template: <|end|> first with ADD_SPECIAL */
    assert_int_equal(enc(t, "abc", WK_TOK_ADD_SPECIAL, ids, 64), 2);
    assert_int_equal(ids[0], 259);
    assert_int_equal(wk_tokenizer_bos(t), 259);
    assert_true(wk_tokenizer_is_special(t, 259));
    assert_false(wk_tokenizer_is_special(t, 260));
    assert_int_equal(wk_tokenizer_find(t, "\xC4\xA0" "ab"), 258);
    assert_int_equal(wk_tokenizer_find(t, "nope"), -1);
    /* small buffers: the count needed, only cap written */
    ids[1] = -7;
    assert_int_equal(enc(t, "x y z", 0, ids, 1), 5);
    assert_int_equal(ids[1], -7);
    assert_int_equal(enc(t, "", 0, NULL, 0), 0);
    char out[8];
    int32_t hello[5] = {'h', 'e', 'l', 'l', 'o'};
    assert_int_equal(wk_tokenizer_decode(t, hello, 5, false, out, 3), 5);
    assert_int_equal(wk_tokenizer_decode(t, hello, 5, false, out, sizeof out), 5);
    assert_string_equal(out, "hello");
    int32_t with_special[3] = {259, 'h', 'i'};
    assert_int_equal(wk_tokenizer_decode(t, with_special, 3, true, out, sizeof out), 2);
    assert_string_equal(out, "hi");
    assert_int_equal(wk_tokenizer_decode(t, with_special, 3, false, out, sizeof out), 9);
    int32_t bad[1] = {261};
    assert_int_equal(wk_tokenizer_decode(t, bad, 1, false, out, sizeof out), -1);
    assert_int_equal(wk_last_status(), WK_ERR_INDEX);
    wk_clear_error();
    assert_int_equal(wk_tokenizer_encode(NULL, "a", 1, 0, ids, 64), -1);
    wk_clear_error();
    wk_tokenizer_free(t);
}

/* Invalid UTF-8: each bad byte is its own unit, encoded as its byte token,
 * and decoding gives the bytes back. */
static void test_invalid_utf8(void **state) {
    (void)state;
    wk_tokenizer *t = tiny();
    assert_non_null(t);
    const char s[] = "a\xff\xfe b\x80\xc3 \xe2\x82 \xed\xa0\x80!";
    int32_t ids[64];
    int64_t n = wk_tokenizer_encode(t, s, sizeof s - 1, 0, ids, 64);
    assert_true(n > 0);
    for (int64_t i = 0; i < n; i++) assert_true(ids[i] < 259);
    char out[64];
    assert_int_equal(wk_tokenizer_decode(t, ids, n, false, out, sizeof out), (int64_t)(sizeof s - 1));
    assert_memory_equal(out, s, sizeof s - 1);
    assert_int_equal(ids[1], 0xff);
    wk_tokenizer_free(t);
}

/* An emoji split over byte tokens comes out of the stream whole, once. */
static void test_stream_split_emoji(void **state) {
    (void)state;
    wk_tokenizer *t = tiny();
    assert_non_null(t);
    const char text[] = "a\xF0\x9F\x99\x82\xE2\x9D\xA4\xEF\xB8\x8F b";
    int32_t ids[64];
    int64_t n = enc(t, text, 0, ids, 64);
    wk_token_stream st = {0};
    char all[128], out[64];
    size_t len = 0;
    int held = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = wk_token_stream_put(t, &st, ids[i], false, out, sizeof out);
        assert_true(k >= 0);
        if (k == 0) held++;
        /* what comes out is always whole characters */
        for (int64_t j = 0; j < k; j++) assert_false(j == 0 && ((unsigned char)out[0] & 0xC0) == 0x80);
        memcpy(all + len, out, (size_t)k);
        len += (size_t)k;
    }
    assert_int_equal(wk_token_stream_flush(&st, out, sizeof out), 0);
    assert_int_equal(len, sizeof text - 1);
    assert_memory_equal(all, text, len);
    assert_int_equal(held, 3 + 2 + 2); /* 3 bytes of U+1F642 held, 2 of U+2764, 2 of U+FE0F */
    /* an incomplete tail flushes as one U+FFFD; a stray continuation byte is U+FFFD at once */
    assert_int_equal(wk_token_stream_put(t, &st, 0xF0, false, out, sizeof out), 0);
    assert_int_equal(wk_token_stream_put(t, &st, 0x9F, false, out, sizeof out), 0);
    assert_int_equal(wk_token_stream_flush(&st, out, sizeof out), 3);
    assert_memory_equal(out, "\xEF\xBF\xBD", 3);
    assert_int_equal(wk_token_stream_put(t, &st, 0x80, false, out, sizeof out), 3);
    assert_memory_equal(out, "\xEF\xBF\xBD", 3);
    /* a lead byte followed by a non-continuation: U+FFFD then the char */
    assert_int_equal(wk_token_stream_put(t, &st, 0xE2, false, out, sizeof out), 0);
    assert_int_equal(wk_token_stream_put(t, &st, 'x', false, out, sizeof out), 4);
    assert_memory_equal(out, "\xEF\xBF\xBDx", 4);
    assert_int_equal(wk_token_stream_put(t, &st, 261, false, out, sizeof out), -1);
    wk_clear_error();
    wk_tokenizer_free(t);
}

/* ----------------------------------------------------- hostile documents */

static void expect_format_error(const char *doc) {
    wk_clear_error();
    wk_tokenizer *t = wk_tokenizer_from_json(doc, strlen(doc));
    if (t) fprintf(stderr, "accepted: %s\n", doc);
    assert_null(t);
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    assert_non_null(strstr(wk_last_error(), "wk_tokenizer_from_json"));
    wk_clear_error();
}

#define BL "\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
static void test_hostile_json(void **state) {
    (void)state;
    static const char *docs[] = {
        "",
        "nope",
        "{}",
        "[1,2]",
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{}}}",
        "{" BL "\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":5},\"merges\":[]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":2147483647},\"merges\":[]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":99999999999999999999}}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"ab\"]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[[\"a\"]]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[[\"a\",\"a\",\"a\"]]}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[7]}}",
        "{\"pre_tokenizer\":{\"type\":\"Metaspace\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{\"normalizer\":{\"type\":\"NFC\"}," BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{\"a\":0}}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}} trailing",
        "{" BL "\"added_tokens\":[{\"id\":9,\"content\":\"x\"}],\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"added_tokens\":[{\"content\":\"x\"}],\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"added_tokens\":{},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\"}}]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Bogus\":{}}]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"post_processor\":{\"type\":\"BertProcessing\",\"cls\":[\"a\",7],\"sep\":[\"a\",0]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"a\"}}],"
        "\"special_tokens\":{\"a\":{\"ids\":[0,0,0,0,0]}}},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"decoder\":{\"type\":\"Metaspace\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{\"normalizer\":{\"type\":\"BertNormalizer\"},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
        "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"vocab\":{\"a\":0}}}",
        "{\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"a\","
        "\"vocab\":{\"a\":0}}}",
        "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Sequence\",\"pretokenizers\":["
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Sequence\",\"pretokenizers\":[]}]}]}]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Isolated\"},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
        "\"\\\\s+\"},\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\",\"use_regex\":false}]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}",
        "{" BL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"a\\u0000\":1}}",
        "{\"model\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]"
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) expect_format_error(docs[i]);
    /* every prefix of a valid document fails cleanly */
    char *j = tiny_json();
    size_t n = strlen(j);
    for (size_t k = 0; k < n; k += 7) {
        wk_tokenizer *t = wk_tokenizer_from_json(j, k);
        assert_null(t);
        wk_clear_error();
    }
    wk_tokenizer *t = wk_tokenizer_from_json(j, n);
    assert_non_null(t);
    wk_tokenizer_free(t);
    free(j);
    assert_null(wk_tokenizer_load_json("/nonexistent/tokenizer.json"));
    assert_int_equal(wk_last_status(), WK_ERR_IO);
    wk_clear_error();
    assert_null(wk_tokenizer_load_vocab_txt("/nonexistent/vocab.txt", true));
    wk_clear_error();
}

static char g_dir[512];

typedef void (*gguf_fill)(wk_gguf_writer *w);
static const char *const TOKS[] = {"a", "b", "ab", "<s>"};
static void g_no_model(wk_gguf_writer *w) { wk_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", TOKS, NULL, 4); }
static void g_llama_model(wk_gguf_writer *w) {
    wk_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama", 5);
    g_no_model(w);
}
static void g_no_tokens(wk_gguf_writer *w) { wk_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2", 4); }
static void g_tokens_not_strings(wk_gguf_writer *w) {
    int32_t v[4] = {1, 2, 3, 4};
    g_no_tokens(w);
    wk_gguf_writer_add_array(w, "tokenizer.ggml.tokens", WK_GGUF_I32, v, 4);
}
static void g_types_short(wk_gguf_writer *w) {
    int32_t v[3] = {1, 1, 1};
    g_no_tokens(w);
    g_no_model(w);
    wk_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WK_GGUF_I32, v, 3);
}
static void g_types_u8(wk_gguf_writer *w) {
    uint8_t v[4] = {1, 1, 1, 3};
    g_no_tokens(w);
    g_no_model(w);
    wk_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WK_GGUF_U8, v, 4);
}
static void g_bad_merge(wk_gguf_writer *w) {
    static const char *const m[] = {"ab"};
    g_no_tokens(w);
    g_no_model(w);
    wk_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", m, NULL, 1);
}
static void g_merges_numbers(wk_gguf_writer *w) {
    int32_t v[1] = {0};
    g_no_tokens(w);
    g_no_model(w);
    wk_gguf_writer_add_array(w, "tokenizer.ggml.merges", WK_GGUF_I32, v, 1);
}
static void g_bad_pre(wk_gguf_writer *w) {
    g_no_tokens(w);
    g_no_model(w);
    wk_gguf_writer_add_string(w, "tokenizer.ggml.pre", "no-such-pre", 11);
}
static void g_model_not_string(wk_gguf_writer *w) {
    wk_gguf_writer_add_u32(w, "tokenizer.ggml.model", 2);
    g_no_model(w);
}

static wk_tokenizer *from_gguf_fill(gguf_fill f) {
    wk_gguf_writer *w = wk_gguf_writer_new();
    f(w);
    char path[700];
    snprintf(path, sizeof path, "%s/hostile_tok.gguf", g_dir);
    assert_int_equal(wk_gguf_writer_write(w, path), WK_OK);
    wk_gguf_writer_free(w);
    wk_gguf *g = wk_gguf_open(path);
    assert_non_null(g);
    wk_tokenizer *t = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    return t;
}

static void test_hostile_gguf(void **state) {
    (void)state;
    gguf_fill bad[] = {g_no_model, g_llama_model, g_no_tokens, g_tokens_not_strings, g_types_short,
                       g_types_u8, g_bad_merge, g_merges_numbers, g_bad_pre, g_model_not_string};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        wk_clear_error();
        wk_tokenizer *t = from_gguf_fill(bad[i]);
        if (t) fprintf(stderr, "hostile gguf %zu accepted\n", i);
        assert_null(t);
        assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
        wk_clear_error();
    }
    /* the minimal good one: byte-level "a" "b" + merge "a b" */
    static const char *const m[] = {"a b"};
    wk_gguf_writer *w = wk_gguf_writer_new();
    g_no_tokens(w);
    g_no_model(w);
    wk_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", m, NULL, 1);
    char path[700];
    snprintf(path, sizeof path, "%s/good_tok.gguf", g_dir);
    assert_int_equal(wk_gguf_writer_write(w, path), WK_OK);
    wk_gguf_writer_free(w);
    wk_gguf *g = wk_gguf_open(path);
    wk_tokenizer *t = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    assert_non_null(t);
    int32_t ids[8];
    assert_int_equal(enc(t, "abba", 0, ids, 8), 3); /* ab, b, a */
    assert_int_equal(ids[0], 2);
    assert_null(wk_tokenizer_from_gguf(NULL));
    wk_clear_error();
    wk_tokenizer_free(t);
}


/* ------------------------------------------------------- SentencePiece */

/* A tiny "llama" vocabulary: merges by score, <0xC3> <0xA9> byte tokens
 * (so "é" falls back to bytes) and unk for anything else. */
#define U2581 "\xE2\x96\x81"
static const char *const SPM_TOKS[] = {"<unk>", "<s>", "</s>", U2581, "a", "b", U2581 "a", "ab", U2581 "ab", "<0xC3>",
                                       "<0xA9>", "<sep>"};
enum { SPM_N = 12 };
static void g_spm_tokens(wk_gguf_writer *w, int ntypes, int nscores, const char *byte_tok, bool with_unk) {
    static const char *toks[SPM_N];
    memcpy(toks, SPM_TOKS, sizeof toks);
    if (byte_tok) toks[9] = byte_tok;
    int32_t types[SPM_N] = {with_unk ? 2 : 1, 3, 3, 1, 1, 1, 1, 1, 1, 6, 6, 4};
    float scores[SPM_N] = {0, 0, 0, -3, -4, -5, -1, -2, -0.5f, 0, 0, 0};
    wk_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama", 5);
    wk_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", toks, NULL, SPM_N);
    wk_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WK_GGUF_I32, types, (uint64_t)ntypes);
    wk_gguf_writer_add_array(w, "tokenizer.ggml.scores", WK_GGUF_F32, scores, (uint64_t)nscores);
    wk_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 1);
    wk_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2);
}
static void g_spm_good(wk_gguf_writer *w) { g_spm_tokens(w, SPM_N, SPM_N, NULL, true); }
static void g_spm_scores_short(wk_gguf_writer *w) { g_spm_tokens(w, SPM_N, SPM_N - 1, NULL, true); }
static void g_spm_types_short(wk_gguf_writer *w) { g_spm_tokens(w, SPM_N - 2, SPM_N, NULL, true); }
static void g_spm_bad_hex(wk_gguf_writer *w) { g_spm_tokens(w, SPM_N, SPM_N, "<0xG3>", true); }
static void g_spm_bad_byte(wk_gguf_writer *w) { g_spm_tokens(w, SPM_N, SPM_N, "<0xC3", true); }
static void g_spm_no_unk(wk_gguf_writer *w) { g_spm_tokens(w, SPM_N, SPM_N, NULL, false); }
static void g_spm_unk_out(wk_gguf_writer *w) {
    g_spm_good(w);
    wk_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 99);
}
static void g_spm_empty(wk_gguf_writer *w) {
    wk_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama", 5);
    wk_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", SPM_TOKS, NULL, 0);
}
static void g_gemma4_no_merges(wk_gguf_writer *w) {
    wk_gguf_writer_add_string(w, "tokenizer.ggml.model", "gemma4", 6);
    wk_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", SPM_TOKS, NULL, SPM_N);
}
static wk_tokenizer *from_gguf_fill(gguf_fill f);

static void test_spm_gguf(void **state) {
    (void)state;
    gguf_fill bad[] = {g_spm_scores_short, g_spm_types_short, g_spm_bad_hex, g_spm_bad_byte,
                       g_spm_no_unk,       g_spm_unk_out,     g_spm_empty,   g_gemma4_no_merges};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        wk_clear_error();
        wk_tokenizer *t = from_gguf_fill(bad[i]);
        if (t) fprintf(stderr, "hostile spm gguf %zu accepted\n", i);
        assert_null(t);
        assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
        wk_clear_error();
    }
    wk_tokenizer *t = from_gguf_fill(g_spm_good);
    if (!t) fprintf(stderr, "%s\n", wk_last_error());
    assert_non_null(t);
    assert_true(wk_tokenizer_adds_bos(t)); /* llama.cpp's default for SPM */
    assert_false(wk_tokenizer_adds_eos(t));
    int32_t ids[32];
    /* "▁ab▁ab▁é": "▁a" (-1) beats "ab" (-2), then "▁ab" (-0.5); é as bytes */
    const char *s = "ab ab \xC3\xA9";
    int64_t n = enc(t, s, WK_TOK_ADD_SPECIAL, ids, 32);
    static const int32_t want[] = {1, 8, 8, 3, 9, 10};
    assert_int_equal(n, 6);
    assert_memory_equal(ids, want, sizeof want);
    char out[64];
    assert_int_equal(wk_tokenizer_decode(t, ids, n, true, out, sizeof out), (int64_t)strlen(s));
    assert_string_equal(out, s); /* the prefix space goes */
    /* no byte token for 'x': unk; the user-defined <sep> splits and is followed by a prefix again */
    n = enc(t, "x<sep>a", 0, ids, 32);
    static const int32_t want2[] = {3, 0, 11, 6};
    assert_int_equal(n, 4);
    assert_memory_equal(ids, want2, sizeof want2);
    /* the stream holds the first byte of "é" until the second arrives */
    wk_token_stream st = {0};
    assert_int_equal(wk_token_stream_put(t, &st, 9, false, out, sizeof out), 0);
    assert_int_equal(wk_token_stream_put(t, &st, 10, false, out, sizeof out), 2);
    assert_memory_equal(out, "\xC3\xA9", 2);
    assert_int_equal(wk_token_stream_put(t, &st, 8, false, out, sizeof out), 3);
    assert_memory_equal(out, " ab", 3);
    /* a long text stays fast (heap + linked symbols, not quadratic) */
    size_t big = 1 << 20;
    char *long_text = malloc(big + 1);
    for (size_t i = 0; i < big; i++) long_text[i] = "ab "[i % 3];
    long_text[big] = 0;
    n = wk_tokenizer_encode(t, long_text, big, 0, NULL, 0);
    assert_true(n > 0 && n <= (int64_t)big);
    free(long_text);
    wk_tokenizer_free(t);
}

static void test_spm_json(void **state) {
    (void)state;
#define SPM_MODEL                                                                                          \
    "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"unk_token\":\"<unk>\",\"vocab\":{\"<unk>\":0,\"" U2581 \
    "\":1,\"a\":2,\"" U2581 "a\":3,\"<0xC3>\":4,\"<0xA9>\":5},\"merges\":[[\"" U2581 "\",\"a\"]]}"
#define SPM_NORM "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"" U2581 \
    "\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"" U2581 "\"}]},"
#define SPM_DEC "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"" U2581 \
    "\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \"," \
    "\"start\":1,\"stop\":0}]},"
    const char *good = "{" SPM_NORM SPM_DEC SPM_MODEL "}";
    wk_tokenizer *t = wk_tokenizer_from_json(good, strlen(good));
    if (!t) fprintf(stderr, "%s\n", wk_last_error());
    assert_non_null(t);
    int32_t ids[16];
    assert_int_equal(enc(t, "a a\xC3\xA9", 0, ids, 16), 4); /* ▁a ▁a <0xC3> <0xA9> */
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[2], 4);
    char out[32];
    assert_int_equal(wk_tokenizer_decode(t, ids, 4, false, out, sizeof out), 5);
    assert_string_equal(out, "a a\xC3\xA9");
    wk_tokenizer_free(t);
    /* Metaspace (older files), prepend_scheme first: no prefix after an added token */
    const char *meta = "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true}],\"pre_tokenizer\":{\"type\":"
                       "\"Metaspace\",\"replacement\":\"" U2581 "\",\"prepend_scheme\":\"first\",\"split\":false},"
                       "\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"" U2581 "\",\"prepend_scheme\":\"first\"},"
                       SPM_MODEL "}";
    t = wk_tokenizer_from_json(meta, strlen(meta));
    if (!t) fprintf(stderr, "%s\n", wk_last_error());
    assert_non_null(t);
    assert_int_equal(enc(t, "a<unk>a", WK_TOK_PARSE_SPECIAL, ids, 16), 3);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 0);
    assert_int_equal(ids[2], 2);
    wk_tokenizer_free(t);
    /* hostile: no U+2581 anywhere, an unknown normalizer / decoder, unk missing */
    expect_format_error("{" SPM_DEC SPM_MODEL "}");
    expect_format_error("{\"normalizer\":{\"type\":\"NFKC\"}," SPM_DEC SPM_MODEL "}");
    expect_format_error("{" SPM_NORM "\"decoder\":{\"type\":\"ByteLevel\"}," SPM_MODEL "}");
    const char *nounk = "{" SPM_NORM SPM_DEC "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"unk_token\":\"<x>\","
                        "\"vocab\":{\"a\":0},\"merges\":[]}}";
    expect_format_error(nounk);
    const char *nobytes = "{" SPM_NORM SPM_DEC "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,"
                          "\"vocab\":{\"a\":0},\"merges\":[]}}";
    expect_format_error(nobytes);
}

/* ------------------------------------------------------- real vocabularies */

static void test_smollm2_table(void **state) {
    (void)state;
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    if (!path) {
        fprintf(stderr, "skipped: WICK_SMOLLM2_GGUF is unset (scripts/setup.sh)\n");
        skip();
    }
    wk_gguf *g = wk_gguf_open(path);
    assert_non_null(g);
    wk_tokenizer *t = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    assert_non_null(t);
    /* models.md: HF tokenizers and llama.cpp agree on these */
    static const struct { const char *s; int32_t ids[24]; int n; } table[] = {
        {"Hello world", {19556, 905}, 2},
        {"In 2024, 12345 apples cost $3.50!",
         {788, 216, 34, 32, 34, 36, 28, 216, 33, 34, 35, 36, 37, 13855, 1708, 1885, 35, 30, 37, 32, 17}, 21},
        {"na\xc3\xafve caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x99\x82",
         {3546, 46494, 37366, 17097, 241, 115, 40993, 179, 120, 248, 47526}, 11},
        {"I'm can't won't they'll", {57, 5248, 416, 982, 3763, 982, 502, 3060}, 8},
        {"<|im_start|>user\nhi<|im_end|>", {1, 4093, 198, 6004, 2}, 5},
        {"   ", {333}, 1},
        {"\n", {198}, 1},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        int32_t ids[64];
        int64_t n = enc(t, table[i].s, WK_TOK_PARSE_SPECIAL | WK_TOK_ADD_SPECIAL, ids, 64);
        assert_int_equal(n, table[i].n);
        assert_memory_equal(ids, table[i].ids, sizeof(int32_t) * (size_t)n);
    }
    int32_t ids[64];
    /* without PARSE_SPECIAL the control tokens are plain text */
    int64_t n = enc(t, "<|im_start|>", 0, ids, 64);
    assert_true(n > 1);
    for (int64_t i = 0; i < n; i++) assert_true(ids[i] > 16);
    assert_int_equal(wk_tokenizer_eos(t), 2);
    assert_int_equal(wk_tokenizer_bos(t), 1);
    assert_true(wk_tokenizer_is_special(t, 2));
    assert_false(wk_tokenizer_is_special(t, 905));
    /* the stream puts "🙂" (split over tokens in " 日本語 🙂") out whole */
    const char *s = " \xf0\x9f\x99\x82\xf0\x9f\xa4\xa6\xf0\x9f\x8f\xbc\xe2\x80\x8d\xe2\x99\x82\xef\xb8\x8f!";
    n = enc(t, s, 0, ids, 64);
    wk_token_stream st = {0};
    char all[256], out[256];
    size_t len = 0;
    int held = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = wk_token_stream_put(t, &st, ids[i], false, out, sizeof out);
        assert_true(k >= 0);
        held += k == 0;
        memcpy(all + len, out, (size_t)k);
        len += (size_t)k;
    }
    assert_true(held > 0);
    assert_int_equal(len, strlen(s));
    assert_memory_equal(all, s, len);
    wk_tokenizer_free(t);
}

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

/* llama.cpp's test-tokenizer-0 format: inputs each followed by
 * "\n__ggml_vocab_test__\n" in NAME.gguf.inp; NAME.gguf.out has one line of
 * space-separated ids per input (no BOS/EOS added, specials not parsed). */
static int check_vocab(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/ggml-vocab-%s.gguf", dir, name);
    wk_gguf *g = wk_gguf_open(p);
    assert_non_null(g);
    wk_tokenizer *t = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    if (!t) fprintf(stderr, "%s: %s\n", name, wk_last_error());
    assert_non_null(t);
    size_t ni, no;
    snprintf(p, sizeof p, "%s/ggml-vocab-%s.gguf.inp", dir, name);
    char *inp = slurp(p, &ni);
    snprintf(p, sizeof p, "%s/ggml-vocab-%s.gguf.out", dir, name);
    char *outs = slurp(p, &no);
    assert_non_null(inp);
    assert_non_null(outs);
    const char *sep = "\n__ggml_vocab_test__\n";
    char *s = inp, *o = outs;
    int bad = 0, total = 0;
    for (;;) {
        char *e = strstr(s, sep), *oe = strchr(o, '\n');
        if (!e || !oe) break;
        *oe = 0;
        int64_t need = wk_tokenizer_encode(t, s, (size_t)(e - s), 0, NULL, 0);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(need + 1));
        assert_int_equal(wk_tokenizer_encode(t, s, (size_t)(e - s), 0, ids, need), need);
        int64_t k = 0;
        bool same = true;
        for (char *q = o; *q;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            same = same && k < need && ids[k] == v;
            k++;
            q = end;
        }
        same = same && k == need;
        if (!same) {
            fprintf(stderr, "%s: input %d \"%.*s\" differs from llama.cpp\n", name, total, (int)(e - s), s);
            bad++;
        }
        free(ids);
        total++;
        s = e + strlen(sep);
        o = oe + 1;
    }
    fprintf(stderr, "%s: %d of %d llama.cpp vectors match\n", name, total - bad, total);
    assert_true(total >= 30);
    free(inp);
    free(outs);
    wk_tokenizer_free(t);
    return bad;
}

static void test_llama_vocab_vectors(void **state) {
    (void)state;
    const char *dir = getenv("WICK_LLAMA_VOCAB_DIR");
    if (!dir) {
        fprintf(stderr, "skipped: WICK_LLAMA_VOCAB_DIR is unset (scripts/setup.sh)\n");
        skip();
    }
    /* every vocab with test vectors whose pre-tokenizer wick implements */
    static const char *names[] = {"gpt-2",     "starcoder", "refact",   "command-r", "mpt",
                                  "llama-bpe", "qwen2",     "bert-bge", "llama-spm", "phi-3", "gemma-4"};
    int bad = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) bad += check_vocab(dir, names[i]);
    assert_int_equal(bad, 0);
    /* the rest are refused by name, not tokenized differently */
    static const char *refused[] = {"deepseek-coder", "deepseek-llm", "falcon"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/ggml-vocab-%s.gguf", dir, refused[i]);
        wk_gguf *g = wk_gguf_open(p);
        assert_non_null(g);
        assert_null(wk_tokenizer_from_gguf(g));
        assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
        wk_clear_error();
        wk_gguf_close(g);
    }
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("WICK_ORACLE_DIR") ? getenv("WICK_ORACLE_DIR") : "/tmp";
    mkdir(base, 0755);
    snprintf(g_dir, sizeof g_dir, "%s/tokenizer", base);
    mkdir(g_dir, 0755);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_bpe),          cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_stream_split_emoji), cmocka_unit_test(test_hostile_json),
        cmocka_unit_test(test_hostile_gguf),      cmocka_unit_test(test_smollm2_table),
        cmocka_unit_test(test_llama_vocab_vectors), cmocka_unit_test(test_spm_gguf),
        cmocka_unit_test(test_spm_json),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
