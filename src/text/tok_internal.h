/* The tokenizer object shared by the loaders (tok_json.c, tok_gguf.c,
 * tok_files.c), the models (bpe.c, wordpiece.c) and the public entry
 * points (tokenizer.c). Built once by a loader, then read-only. */
#ifndef WICK_TEXT_TOK_INTERNAL_H
#define WICK_TEXT_TOK_INTERNAL_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wick/tokenizer.h"

/* WK__TOK_SPM: SentencePiece-style BPE over the characters of a text whose
 * spaces became U+2581 (spm.c), merging by token score (llama.cpp's
 * llm_tokenizer_spm: GGUF model "llama") or by merge rank (HF BPE with
 * byte_fallback; GGUF model "gemma4"); unknown characters fall back to
 * <0xXX> byte tokens. */
typedef enum wk__tok_model { WK__TOK_BPE = 1, WK__TOK_WORDPIECE, WK__TOK_SPM } wk__tok_model;

/* Where an SPM tokenizer puts its U+2581 prefix: never, on every text
 * segment between added tokens (llama.cpp, HF's Prepend normalizer), or only
 * on a segment that starts the text (Metaspace prepend_scheme "first"). */
typedef enum wk__spm_prefix { WK__SPM_PREFIX_NONE = 0, WK__SPM_PREFIX_ALWAYS, WK__SPM_PREFIX_FIRST } wk__spm_prefix;

/* Pre-tokenizers, each a hand-written matcher of the regex named. */
typedef enum wk__pretok {
    WK__PRE_NONE = 0, /* the whole segment is one word */
    WK__PRE_GPT2,     /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    WK__PRE_SMOLLM,   /* every \p{N} alone, then GPT2 (HF Sequence[Digits(individual), ByteLevel]) */
    WK__PRE_LLAMA3,   /* (?i:'s|..)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    WK__PRE_QWEN2,    /* LLAMA3 with \p{N} one at a time */
    WK__PRE_BERT      /* whitespace removed, each punctuation character alone */
} wk__pretok;

typedef struct wk__tok_entry {
    char *text;       /* as stored in the file (byte-level chars for BPE), NUL-terminated */
    char *bytes;      /* what it stands for: the bytes it decodes to and matches */
    uint32_t text_len, nbytes;
    bool special;     /* control / special: skipped by skip_special, matched only with PARSE_SPECIAL */
} wk__tok_entry;

typedef struct wk__added {
    int32_t id;
    bool special, lstrip, rstrip, single_word;
} wk__added;

/* Open-addressing map from a byte string to an id (the strings live in the
 * entries), and from a merge pair to its rank. */
typedef struct wk__strmap { int32_t *slot; uint64_t mask; bool by_text; } wk__strmap;
typedef struct wk__pair_slot { uint64_t key; int32_t rank, merged; } wk__pair_slot;
typedef struct wk__pairmap { wk__pair_slot *slot; uint64_t mask; } wk__pairmap;

struct wk_tokenizer {
    wk__tok_model model;
    wk__pretok pre;
    bool add_prefix_space; /* ByteLevel(add_prefix_space): a space before each segment */
    bool ignore_merges;    /* a word already in the vocab is one token (Llama-3) */
    bool byte_decode;      /* decoder is byte-level (BPE); else WordPiece joining */
    int64_t n;
    wk__tok_entry *tok;
    wk__strmap by_bytes, by_text;
    wk__pairmap merges;
    int32_t byte_id[256];  /* BPE: the token of each single byte, or -1 */
    /* Added tokens, by first byte, longest first: the matcher's buckets. */
    wk__added *added;
    int64_t nadded;
    int32_t *added_order;  /* indices into added, grouped by first byte, longest first */
    int64_t added_start[257];
    int32_t prefix[4], suffix[4];
    int nprefix, nsuffix;
    int32_t bos, eos, unk;
    /* WordPiece and BertNormalizer */
    bool clean_text, chinese_chars, strip_accents, lowercase;
    int max_word_chars;
    char cont_prefix[16];
    bool wp_cleanup;       /* WordPiece decoder's clean-up of spaces before punctuation */
    size_t max_token_bytes;
    /* SPM (spm.c) */
    float *score;          /* by id: merge by score (highest first); NULL: by merge rank */
    wk__spm_prefix spm_prefix;
    bool spm_split_words;  /* Metaspace split: a U+2581 starts a new word */
    bool spm_split_newlines; /* gemma4: runs of '\n' and of other bytes are separate words */
    /* The grammar matcher's byte trie of this vocabulary (grammar_trie.c),
     * built on first use and shared by every grammar state over it; set
     * once with a compare-and-swap, freed with the tokenizer. */
    _Atomic(struct wk__gtrie *) gtrie;
    bool byte_fallback;    /* unknown characters as <0xXX> tokens (else unk) */
    bool fuse_unk;         /* consecutive unknown characters give one unk */
    bool strip_lead_space; /* decode drops one leading space (SentencePiece's prefix) */
};

/* Growable arrays for the encoder's scratch. */
/* The encoder's output: ids go to out[0..out_cap) and n counts them all. */
typedef struct wk__ids { int32_t *out; int64_t out_cap, n; bool oom; } wk__ids;
void wk__ids_push(wk__ids *o, int32_t id);

/* Build helpers for loaders. */
wk_tokenizer *wk__tok_new(wk__tok_model model, int64_t n);
/* Set entry id (copies both strings). false on OOM. */
bool wk__tok_set(wk_tokenizer *t, int64_t id, const char *text, size_t text_len, const char *bytes, size_t nbytes);
/* Byte-level BPE text ("Ġt") to bytes; false when a char is outside the
 * byte map (then the bytes are the text's own UTF-8). Writes <= len bytes. */
bool wk__bytelevel_decode(const char *text, size_t len, char *out, size_t *outlen);
/* Byte b as its byte-level char (UTF-8, <= 2 bytes). */
int wk__bytelevel_char(unsigned b, char out[2]);
/* Index the vocab (maps, byte ids, longest token); call after all entries. */
bool wk__tok_index(wk_tokenizer *t, const char *op);
/* Add a merge "a b" (byte-level text of both sides); unknown sides or a
 * merged token missing from the vocab make it ignored (llama.cpp's rule). */
bool wk__tok_add_merge(wk_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, int32_t rank);
bool wk__tok_merges_reserve(wk_tokenizer *t, int64_t n);
/* Register id as an added token; call wk__tok_index_added after all. */
bool wk__tok_add_added(wk_tokenizer *t, wk__added a);
bool wk__tok_index_added(wk_tokenizer *t);

int32_t wk__strmap_get(const wk_tokenizer *t, const wk__strmap *m, const char *s, size_t n);

/* Encoding parts. */
void wk__bpe_word(const wk_tokenizer *t, const unsigned char *w, size_t n, wk__ids *out);
void wk__pretok_bpe(const wk_tokenizer *t, const unsigned char *s, size_t n, wk__ids *out);
/* One text segment (between added tokens) through the SPM model; at_start:
 * the segment begins the text (for WK__SPM_PREFIX_FIRST). */
void wk__spm_segment(const wk_tokenizer *t, const unsigned char *s, size_t n, bool at_start, wk__ids *out);
/* "<0xXX>" (X upper- or lower-case hex) -> the byte; -1 if text is not one. */
int wk__spm_byte_token(const char *text, size_t n);
/* A SentencePiece piece's bytes: U+2581 as a space (out holds <= n bytes). */
size_t wk__spm_unescape(const char *text, size_t n, char *out);
/* After wk__tok_index: byte_id[] from the <0xXX> tokens, and a check that
 * unknown characters have somewhere to go. */
bool wk__spm_index(wk_tokenizer *t, const char *op);
/* GGUF "llama" (by_rank false) or "gemma4" (true): tok_gguf_spm.c. */
wk_tokenizer *wk__tok_from_gguf_spm(const wk_gguf *g, bool by_rank);
void wk__wordpiece_segment(const wk_tokenizer *t, const unsigned char *s, size_t n, wk__ids *out);
/* Candidate pieces WordPiece has considered on this thread (for the tests'
 * check that a long word stays O(n * longest token)). */
extern _Thread_local unsigned long long wk__wordpiece_steps;

/* The merge of the pair (a, b) in t's merge table, or NULL (bpe.c; the
 * SentencePiece form's rank-ordered vocabularies use it too). */
const wk__pair_slot *wk__find_merge(const wk_tokenizer *t, int32_t a, int32_t b);

#endif
