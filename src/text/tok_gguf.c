/* Tokenizer from a GGUF's tokenizer.ggml.* metadata (llama.cpp's layout):
 * model "gpt2" is byte-level BPE with the pre-tokenizer named by .pre;
 * "llama" / "gemma4" are SentencePiece (tok_gguf_spm.c);
 * "bert" is WordPiece whose vocabulary llama.cpp's converter rewrote to
 * "phantom space" form (a word-initial piece has a U+2581 prefix, a
 * continuation has lost its "##", [BRACKETED] tokens are kept), undone here.
 * token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte;
 * 2/3/4 are added tokens (matched before the model), 2/3 special. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "base/error.h"
#include "text/tok_internal.h"
#include "wick/gguf.h"

static const char OP[] = "wk_tokenizer_from_gguf";

static bool str_eq(const char *s, uint64_t n, const char *lit) { return n == strlen(lit) && memcmp(s, lit, n) == 0; }

static bool get_string(const wk_gguf *g, const char *key, const char **s, uint64_t *n) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return false;
    return wk_gguf_get_string(g, i, s, n) == WK_OK;
}

static int32_t get_id(const wk_gguf *g, const char *key, int64_t n) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return -1;
    uint32_t v;
    int32_t w;
    if (wk_gguf_kv_type(g, i) == WK_GGUF_U32 && wk_gguf_get_u32(g, i, &v) == WK_OK && v < (uint64_t)n)
        return (int32_t)v;
    if (wk_gguf_kv_type(g, i) == WK_GGUF_I32 && wk_gguf_get_i32(g, i, &w) == WK_OK && w >= 0 && w < n) return w;
    return -1;
}

static bool get_bool(const wk_gguf *g, const char *key, bool dflt) {
    int64_t i = wk_gguf_find_key(g, key);
    bool v;
    if (i < 0 || wk_gguf_kv_type(g, i) != WK_GGUF_BOOL || wk_gguf_get_bool(g, i, &v) != WK_OK) return dflt;
    return v;
}

static bool pre_kind(const char *s, uint64_t n, wk__pretok *out) {
    static const char *gpt2[] = {"default", "gpt-2", "gpt2", "mpt", "olmo", "jais"};
    static const char *smollm[] = {"smollm", "starcoder", "refact", "command-r", "codeshell"};
    static const char *llama3[] = {"llama-bpe", "llama3", "smaug-bpe"};
    static const char *qwen2[] = {"qwen2", "deepseek-r1-qwen"};
    for (size_t i = 0; i < sizeof gpt2 / sizeof *gpt2; i++)
        if (str_eq(s, n, gpt2[i])) return *out = WK__PRE_GPT2, true;
    for (size_t i = 0; i < sizeof smollm / sizeof *smollm; i++)
        if (str_eq(s, n, smollm[i])) return *out = WK__PRE_SMOLLM, true;
    for (size_t i = 0; i < sizeof llama3 / sizeof *llama3; i++)
        if (str_eq(s, n, llama3[i])) return *out = WK__PRE_LLAMA3, true;
    for (size_t i = 0; i < sizeof qwen2 / sizeof *qwen2; i++)
        if (str_eq(s, n, qwen2[i])) return *out = WK__PRE_QWEN2, true;
    return false;
}

static wk_tokenizer *fail(wk_tokenizer *t) {
    wk_tokenizer_free(t);
    return NULL;
}

wk_tokenizer *wk_tokenizer_from_gguf(const wk_gguf *g) {
    if (!g) {
        wk__err_null_input(OP);
        return NULL;
    }
    const char *model;
    uint64_t mlen;
    if (!get_string(g, "tokenizer.ggml.model", &model, &mlen)) {
        wk__err(WK_ERR_FORMAT, OP, "no string tokenizer.ggml.model in the file");
        return NULL;
    }
    if (str_eq(model, mlen, "llama")) return wk__tok_from_gguf_spm(g, false);
    if (str_eq(model, mlen, "gemma4")) return wk__tok_from_gguf_spm(g, true);
    bool bert = str_eq(model, mlen, "bert");
    if (!bert && !str_eq(model, mlen, "gpt2")) {
        wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.model '%.*s' is not supported (gpt2, llama, gemma4 and bert are)",
                (int)(mlen > 64 ? 64 : mlen), model);
        return NULL;
    }
    wk__pretok pre = bert ? WK__PRE_BERT : WK__PRE_GPT2;
    const char *ps;
    uint64_t pn;
    if (!bert && get_string(g, "tokenizer.ggml.pre", &ps, &pn) && !pre_kind(ps, pn, &pre)) {
        wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.pre '%.*s' is not supported", (int)(pn > 64 ? 64 : pn), ps);
        return NULL;
    }
    int64_t ti = wk_gguf_find_key(g, "tokenizer.ggml.tokens");
    wk_gguf_type et;
    uint64_t n;
    if (ti < 0 || wk_gguf_get_array(g, ti, &et, &n) != WK_OK || et != WK_GGUF_STRING || n == 0 ||
        n > INT32_MAX) {
        wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.tokens must be a non-empty string array of < 2^31 entries");
        return NULL;
    }
    const int32_t *types = NULL;
    int64_t tyi = wk_gguf_find_key(g, "tokenizer.ggml.token_type");
    if (tyi >= 0) {
        uint64_t tn;
        const void *data;
        size_t nb;
        if (wk_gguf_get_array(g, tyi, &et, &tn) != WK_OK || et != WK_GGUF_I32 || tn != n ||
            wk_gguf_array_data(g, tyi, &data, &nb) != WK_OK) {
            wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.token_type must be an i32 array as long as the tokens (%llu)",
                    (unsigned long long)n);
            return NULL;
        }
        types = data; /* unaligned in the map: read with memcpy below */
    }
    wk_tokenizer *t = wk__tok_new(bert ? WK__TOK_WORDPIECE : WK__TOK_BPE, (int64_t)n);
    if (!t) {
        wk__err(WK_ERR_OOM, OP, "out of memory for %llu tokens", (unsigned long long)n);
        return NULL;
    }
    t->pre = pre;
    t->ignore_merges = pre == WK__PRE_LLAMA3;
    size_t bufcap = 256;
    char *buf = malloc(bufcap);
    if (!buf) goto oom;
    for (uint64_t j = 0; j < n; j++) {
        const char *s;
        uint64_t len;
        if (wk_gguf_array_string(g, ti, j, &s, &len) != WK_OK) {
            free(buf);
            return fail(t);
        }
        int32_t ty = 1;
        if (types) memcpy(&ty, (const char *)types + 4 * j, 4);
        if (len + 3 > bufcap) {
            bufcap = (size_t)len + 3;
            char *nb2 = realloc(buf, bufcap);
            if (!nb2) goto oom_buf;
            buf = nb2;
        }
        size_t bl;
        if (bert) {
            /* undo the phantom space: "\xE2\x96\x81w" -> "w", "w" -> "##w", "[X]" stays */
            if (len >= 3 && memcmp(s, "\xE2\x96\x81", 3) == 0) {
                memcpy(buf, s + 3, (size_t)len - 3);
                bl = (size_t)len - 3;
            } else if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
                memcpy(buf, s, (size_t)len);
                bl = (size_t)len;
            } else {
                memcpy(buf, "##", 2);
                memcpy(buf + 2, s, (size_t)len);
                bl = (size_t)len + 2;
            }
            if (!wk__tok_set(t, (int64_t)j, buf, bl, buf, bl)) goto oom_buf;
        } else if (ty == 2 || ty == 3 || ty == 4) {
            if (!wk__tok_set(t, (int64_t)j, s, (size_t)len, s, (size_t)len)) goto oom_buf;
        } else {
            wk__bytelevel_decode(s, (size_t)len, buf, &bl);
            if (!wk__tok_set(t, (int64_t)j, s, (size_t)len, buf, bl)) goto oom_buf;
        }
    }
    free(buf);
    buf = NULL;
    if (!wk__tok_index(t, OP)) return fail(t);
    for (uint64_t j = 0; j < n; j++) {
        int32_t ty = 1;
        if (types) memcpy(&ty, (const char *)types + 4 * j, 4);
        if (ty == 2 || ty == 3 || ty == 4) {
            wk__added a = {(int32_t)j, ty != 4, false, false, false};
            if (!wk__tok_add_added(t, a)) goto oom;
        }
    }
    if (!wk__tok_index_added(t)) goto oom;
    if (!bert) {
        int64_t mi = wk_gguf_find_key(g, "tokenizer.ggml.merges");
        uint64_t nm = 0;
        if (mi >= 0 && (wk_gguf_get_array(g, mi, &et, &nm) != WK_OK || et != WK_GGUF_STRING || nm > INT32_MAX)) {
            wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.merges must be a string array");
            return fail(t);
        }
        if (!wk__tok_merges_reserve(t, (int64_t)nm)) goto oom;
        for (uint64_t j = 0; j < nm; j++) {
            const char *s;
            uint64_t len;
            if (wk_gguf_array_string(g, mi, j, &s, &len) != WK_OK) return fail(t);
            const char *sp = memchr(s, ' ', (size_t)len);
            if (!sp || sp == s) {
                wk__err(WK_ERR_FORMAT, OP, "merge %llu is not two tokens separated by a space",
                        (unsigned long long)j);
                return fail(t);
            }
            size_t al = (size_t)(sp - s);
            if (!wk__tok_add_merge(t, s, al, sp + 1, (size_t)len - al - 1, (int32_t)j)) goto oom;
        }
    }
    t->bos = get_id(g, "tokenizer.ggml.bos_token_id", t->n);
    t->eos = get_id(g, "tokenizer.ggml.eos_token_id", t->n);
    if (bert) {
        t->unk = get_id(g, "tokenizer.ggml.unknown_token_id", t->n);
        if (t->unk < 0) t->unk = wk_tokenizer_find(t, "[UNK]");
        int32_t cls = get_id(g, "tokenizer.ggml.cls_token_id", t->n), sep = get_id(g, "tokenizer.ggml.seperator_token_id", t->n);
        if (cls < 0) cls = wk_tokenizer_find(t, "[CLS]");
        if (sep < 0) sep = wk_tokenizer_find(t, "[SEP]");
        if (cls >= 0) t->prefix[t->nprefix++] = cls;
        if (sep >= 0) t->suffix[t->nsuffix++] = sep;
        t->clean_text = t->chinese_chars = t->strip_accents = t->lowercase = true;
        memcpy(t->cont_prefix, "##", 3);
        t->wp_cleanup = true;
    } else {
        if (get_bool(g, "tokenizer.ggml.add_bos_token", false) && t->bos >= 0) t->prefix[t->nprefix++] = t->bos;
        if (get_bool(g, "tokenizer.ggml.add_eos_token", false) && t->eos >= 0) t->suffix[t->nsuffix++] = t->eos;
    }
    return t;
oom_buf:
    free(buf);
oom:
    wk__err(WK_ERR_OOM, OP, "out of memory");
    return fail(t);
}
