/* Tokenizers: byte-level BPE (GPT-2 / SmolLM / Llama-3 style), SentencePiece
 * BPE with byte fallback (Llama 2, Mistral, Phi-3, Gemma) and WordPiece
 * (BERT), loaded from an HF tokenizer.json, a BERT vocab.txt, or a GGUF
 * file's tokenizer.ggml.* metadata. Token-for-token the same as HF
 * `tokenizers` on the same file, and as llama.cpp on the same GGUF.
 *
 * A tokenizer is immutable once loaded: any number of threads may encode
 * and decode with one at once. Ids are int32. Errors: NULL / -1 with
 * wk_last_error naming the op and the cause (a malformed file is
 * WK_ERR_FORMAT, never a crash). */
#ifndef WICK_TOKENIZER_H
#define WICK_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Declared before wick.h is included: wick.h includes this header and
 * lm.h / bert.h, which name wk_tokenizer, so the type must exist first
 * whichever header a program includes first. */
typedef struct wk_tokenizer wk_tokenizer;
typedef struct wk_gguf wk_gguf; /* include/wick/gguf.h (a repeated typedef is valid C11) */

#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HF tokenizer.json (model type "BPE" with a ByteLevel pre-tokenizer; "BPE"
 * with byte_fallback, spaces made U+2581 by the normalizers Replace /
 * Prepend or a Metaspace pre-tokenizer, merged by rank; or "WordPiece"),
 * from a path or from bytes in memory. */
wk_tokenizer *wk_tokenizer_load_json(const char *path);
wk_tokenizer *wk_tokenizer_from_json(const char *json, size_t len);
/* A BERT vocab.txt (one token per line; id = line number), WordPiece with
 * BERT's basic pre-tokenizer (lower-casing and accent stripping when
 * `lowercase`), [CLS] ... [SEP] added by WK_TOK_ADD_SPECIAL. */
wk_tokenizer *wk_tokenizer_load_vocab_txt(const char *path, bool lowercase);
/* tokenizer.ggml.* of a GGUF reader (model "gpt2" = byte-level BPE with the
 * pre-tokenizer named by tokenizer.ggml.pre; "llama" = SentencePiece BPE
 * merging by tokenizer.ggml.scores, with add_space_prefix (default true)
 * and <0xXX> byte fallback, as llama.cpp's SPM tokenizer; "gemma4" = the
 * same text form merged by tokenizer.ggml.merges rank; "bert" = WordPiece).
 * The tokenizer copies what it needs: the reader may be closed afterwards. */
wk_tokenizer *wk_tokenizer_from_gguf(const wk_gguf *g);
void wk_tokenizer_free(wk_tokenizer *t);

enum {
    WK_TOK_ADD_SPECIAL = 1,   /* add BOS / [CLS] ... [SEP] as the file's post-processor says */
    WK_TOK_PARSE_SPECIAL = 2, /* match special / added tokens in the text before BPE */
};
/* Encode len bytes of UTF-8 text into ids[0..cap). Returns the number of
 * ids the text needs, which may exceed cap (then only cap are written: call
 * again with a larger buffer), or -1 on error. text may be NULL when len is
 * 0 (the empty text); NULL with len > 0 is WK_ERR_ARG.
 * Added tokens are matched on the raw text first, longest match at the
 * leftmost position (HF's AddedVocabulary, with its lstrip / rstrip /
 * single_word flags); special ones (HF special, GGUF control) only with
 * WK_TOK_PARSE_SPECIAL (HF always parses them; without the flag wick acts
 * as HF's split_special_tokens=True), non-special ones always.
 * Invalid UTF-8: byte-level BPE treats each invalid byte as one character
 * that is neither letter, digit nor space and encodes it as its byte token,
 * so decode gives the input bytes back exactly; WordPiece replaces it with
 * U+FFFD, which BERT's clean_text drops. truncation / padding sections of a
 * tokenizer.json are not applied. */
int64_t wk_tokenizer_encode(const wk_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t *ids,
                            int64_t cap);
/* Decode n ids to bytes in out[0..cap). Returns the byte count needed
 * (may exceed cap; out is NUL-terminated when it fits), or -1 (an id out of
 * range). skip_special drops control / special tokens. SentencePiece: U+2581
 * is a space, <0xXX> tokens are their bytes, and where the tokenizer adds a
 * prefix space the first piece loses one leading space (HF's Strip /
 * Metaspace decoders). */
int64_t wk_tokenizer_decode(const wk_tokenizer *t, const int32_t *ids, int64_t n, bool skip_special, char *out,
                            size_t cap);

/* Streaming decode: feed ids one at a time; only complete UTF-8 sequences
 * come out, a sequence split across tokens is held until it completes
 * (wk_token_stream_flush emits what remains, invalid bytes as U+FFFD).
 * Zero-initialise the struct to start. WordPiece pieces come out as
 * decode's would after a first token (" word", "##ing" -> "ing"; a
 * SentencePiece piece keeps its leading space), and <0xXX> byte tokens of
 * one character may arrive in separate steps. */
typedef struct wk_token_stream {
    unsigned char pending[8];
    int npending;
} wk_token_stream;
/* Returns bytes written to out, or -1 (a bad id; out too small: a token
 * whose bytes are not UTF-8 comes out as U+FFFD per byte, so
 * cap >= 3 * (wk_tokenizer_max_token_bytes(t) + 4) always suffices; for a
 * vocabulary of valid UTF-8 pieces, 4 + the longest token does). */
int64_t wk_token_stream_put(const wk_tokenizer *t, wk_token_stream *s, int32_t id, bool skip_special, char *out,
                            size_t cap);
int64_t wk_token_stream_flush(wk_token_stream *s, char *out, size_t cap);

int64_t wk_tokenizer_vocab_size(const wk_tokenizer *t);
/* Bytes of the longest token's decoded text (0 for NULL). */
size_t wk_tokenizer_max_token_bytes(const wk_tokenizer *t);
/* The raw bytes one id stands for, as they appear inside a decoded text
 * (byte-level BPE through the GPT-2 byte table; SentencePiece <0xHH> as
 * that byte and U+2581 as a space; a WordPiece "##" continuation without
 * its prefix). Writes min(n, cap) bytes (no NUL) and returns n, the full
 * count; -1 with WK_ERR_ARG for an id out of range. A piece may end inside
 * a UTF-8 character: the bytes are not necessarily valid UTF-8. */
int64_t wk_tokenizer_token_bytes(const wk_tokenizer *t, int32_t id, char *out, size_t cap);
/* The id of a token given its text as stored in the vocabulary (e.g.
 * "<|im_end|>"), or -1. */
int32_t wk_tokenizer_find(const wk_tokenizer *t, const char *token);
/* Special ids from the file, or -1 when it has none. */
int32_t wk_tokenizer_bos(const wk_tokenizer *t);
int32_t wk_tokenizer_eos(const wk_tokenizer *t);
/* Whether WK_TOK_ADD_SPECIAL puts the BOS id first / the EOS id last (GGUF
 * tokenizer.ggml.add_bos_token / add_eos_token, a tokenizer.json
 * TemplateProcessing post-processor); false for NULL. */
bool wk_tokenizer_adds_bos(const wk_tokenizer *t);
bool wk_tokenizer_adds_eos(const wk_tokenizer *t);
/* Whether id is a special / control token (not printed by skip_special). */
bool wk_tokenizer_is_special(const wk_tokenizer *t, int32_t id);

#ifdef __cplusplus
}
#endif
#endif /* WICK_TOKENIZER_H */
