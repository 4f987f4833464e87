/* libFuzzer target for the tokenizers (src/text) and their loaders.
 *
 * Build (clang):
 *   CC=clang cmake -S . -B build-fuzz -DWICK_FUZZ=ON -DWICK_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
 *   cmake --build build-fuzz --target fuzz_tokenizer
 *   ./build-fuzz/fuzz/fuzz_tokenizer -max_total_time=60 corpus/
 *
 * The first byte picks the mode: 0 parses the rest as a tokenizer.json,
 * 1 as a GGUF image (its tokenizer.ggml.* metadata); a failure must be a
 * clean WK_ERR_FORMAT (or WK_ERR_IO / WK_ERR_DTYPE from the GGUF reader)
 * with a message, and a tokenizer that loads is run on a short text. Any
 * other first byte encodes the rest as text with three fixed tokenizers
 * (byte-level BPE, SentencePiece-form BPE with byte fallback, WordPiece,
 * built once): byte-level BPE must decode back to exactly the input, and
 * streaming decode must never fail. */
#include <stdio.h>
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include <stdlib.h>
#include <string.h>

#include "wick/wick.h"

static void expect_clean_error(const char *what) {
    wk_status s = wk_last_status();
    if (!(s == WK_ERR_FORMAT || s == WK_ERR_IO || s == WK_ERR_DTYPE) || !wk_last_error()[0]) {
        fprintf(stderr, "%s: unexpected failure %s: %s\n", what, wk_status_name(s), wk_last_error());
        abort();
    }
    wk_clear_error();
}

static void run_text(const wk_tokenizer *t, const char *s, size_t n, bool byte_level) {
    for (unsigned flags = 0; flags < 4; flags++) {
        int64_t k = wk_tokenizer_encode(t, s, n, flags, NULL, 0);
        if (k < 0) abort();
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(k + 1));
        if (!ids || wk_tokenizer_encode(t, s, n, flags, ids, k) != k) abort();
        size_t cap = 3 * (wk_tokenizer_max_token_bytes(t) + 4);
        char *out = malloc(cap > 16 * n + 64 ? cap : 16 * n + 64);
        int64_t m = wk_tokenizer_decode(t, ids, k, false, out, 16 * n + 64);
        if (m < 0) abort();
        if (byte_level && flags == 0 && ((size_t)m != n || memcmp(out, s, n) != 0)) {
            fprintf(stderr, "byte-level BPE does not round-trip\n");
            abort();
        }
        wk_token_stream st = {0};
        for (int64_t i = 0; i < k; i++)
            if (wk_token_stream_put(t, &st, ids[i], flags & 1, out, cap) < 0) abort();
        if (wk_token_stream_flush(&st, out, cap) < 0) abort();
        free(out);
        free(ids);
    }
}

static char *byte_level_json(void) {
    /* vocab: the 256 byte chars plus a few merges, like tests/test_tokenizer.c */
    char *s = malloc(1 << 16);
    size_t n = (size_t)sprintf(s, "{\"added_tokens\":[{\"id\":259,\"content\":\"<|e|>\",\"special\":true,"
                                  "\"lstrip\":true,\"rstrip\":true},{\"id\":260,\"content\":\"ab\",\"single_word\":true}],"
                                  "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\","
                                  "\"individual_digits\":true},{\"type\":\"ByteLevel\",\"add_prefix_space\":false}]},"
                                  "\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (unsigned b = 0; b < 256; b++) {
        unsigned cp = b;
        if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
            unsigned k = 0;
            for (unsigned x = 0; x < b; x++)
                if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) k++;
            cp = 256 + k;
        }
        if (cp == '"' || cp == '\\') n += (size_t)sprintf(s + n, "\"\\%c\":%u,", (char)cp, b);
        else if (cp < 0x80) n += (size_t)sprintf(s + n, "\"%c\":%u,", (char)cp, b);
        else n += (size_t)sprintf(s + n, "\"%c%c\":%u,", (char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F)), b);
    }
    n += (size_t)sprintf(s + n, "\"ab\":256,\"abc\":257,\"\xC4\xA0" "a\":258,\"<|e|>\":259},"
                                "\"merges\":[\"a b\",\"ab c\",\"\xC4\xA0 a\"]}}");
    s[n] = 0;
    return s;
}

static const char WP_JSON[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"[UNK]\",\"special\":true},{\"id\":1,\"content\":\"[CLS]\","
    "\"special\":true},{\"id\":2,\"content\":\"[SEP]\",\"special\":true}],\"normalizer\":{\"type\":\"BertNormalizer\","
    "\"lowercase\":true},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},\"post_processor\":{\"type\":"
    "\"BertProcessing\",\"sep\":[\"[SEP]\",2],\"cls\":[\"[CLS]\",1]},\"decoder\":{\"type\":\"WordPiece\"},"
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"max_input_chars_per_word\":12,\"vocab\":{"
    "\"[UNK]\":0,\"[CLS]\":1,\"[SEP]\":2,\"a\":3,\"##a\":4,\"b\":5,\"##b\":6,\"ab\":7,\"##ab\":8,\"e\":9,\"!\":10}}}";

/* SentencePiece form: the 256 <0xXX> byte tokens, a few pieces merged by
 * rank, Prepend + Replace normalizers, an unk and a user-defined token. */
static char *spm_json(void) {
    char *s = malloc(1 << 15);
    size_t n = (size_t)sprintf(s, "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},{\"id\":1,"
                                  "\"content\":\"<sep>\",\"special\":false}],\"normalizer\":{\"type\":\"Sequence\","
                                  "\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\u2581\"},{\"type\":\"Replace\","
                                  "\"pattern\":{\"String\":\" \"},\"content\":\"\u2581\"}]},\"decoder\":{\"type\":"
                                  "\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\u2581\"},"
                                  "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\","
                                  "\"content\":\" \",\"start\":1,\"stop\":0}]},\"model\":{\"type\":\"BPE\","
                                  "\"byte_fallback\":true,\"fuse_unk\":true,\"unk_token\":\"<unk>\",\"vocab\":{"
                                  "\"<unk>\":0,\"<sep>\":1,");
    for (unsigned b = 0; b < 256; b++) n += (size_t)sprintf(s + n, "\"<0x%02X>\":%u,", b, 2 + b);
    n += (size_t)sprintf(s + n, "\"\u2581\":258,\"a\":259,\"b\":260,\"\u2581a\":261,\"ab\":262,\"\u2581ab\":263},"
                                "\"merges\":[\"\u2581 a\",\"a b\",\"\u2581a b\"]}}");
    s[n] = 0;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static wk_tokenizer *bl, *wp, *sp;
    if (!bl) {
        char *j = byte_level_json();
        bl = wk_tokenizer_from_json(j, strlen(j));
        free(j);
        j = spm_json();
        sp = wk_tokenizer_from_json(j, strlen(j));
        free(j);
        wp = wk_tokenizer_from_json(WP_JSON, sizeof WP_JSON - 1);
        if (!bl || !wp || !sp) {
            fprintf(stderr, "fixed tokenizers: %s\n", wk_last_error());
            abort();
        }
    }
    if (size == 0) return 0;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] == 0 || data[0] == 1) {
        wk_tokenizer *t = NULL;
        if (data[0] == 0) {
            t = wk_tokenizer_from_json(rest, n);
            if (!t) expect_clean_error("tokenizer.json");
        } else {
            wk_gguf *g = wk_gguf_open_bytes(rest, n);
            if (!g) {
                expect_clean_error("gguf");
                return 0;
            }
            t = wk_tokenizer_from_gguf(g);
            wk_gguf_close(g);
            if (!t) expect_clean_error("gguf tokenizer");
        }
        if (t) {
            run_text(t, "Hello  world 123 <|x|>\n\xff", 25, false);
            wk_tokenizer_free(t);
        }
        return 0;
    }
    run_text(bl, rest, n, true);
    run_text(sp, rest, n, false);
    run_text(wp, rest, n, false);
    return 0;
}
