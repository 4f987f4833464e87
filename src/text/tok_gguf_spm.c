/* SentencePiece vocabularies from a GGUF's tokenizer.ggml.* (llama.cpp's
 * layout): model "llama" merges by tokenizer.ggml.scores (llama.cpp's SPM
 * tokenizer), "gemma4" by tokenizer.ggml.merges rank over the same U+2581
 * text, split into runs of newlines and of other text first.
 * token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
 * 6 byte ("<0xXX>", which must parse). 2/3/4 are added tokens matched on the
 * raw text before the model (2/3 only with WK_TOK_PARSE_SPECIAL) and decode
 * to their text; the others decode with U+2581 as a space. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "base/error.h"
#include "text/tok_internal.h"
#include "wick/gguf.h"

static const char OP[] = "wk_tokenizer_from_gguf";

static int32_t get_id(const wk_gguf *g, const char *key, int64_t n, bool *bad) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return -1;
    uint32_t v;
    int32_t w;
    if (wk_gguf_kv_type(g, i) == WK_GGUF_U32 && wk_gguf_get_u32(g, i, &v) == WK_OK && v < (uint64_t)n)
        return (int32_t)v;
    if (wk_gguf_kv_type(g, i) == WK_GGUF_I32 && wk_gguf_get_i32(g, i, &w) == WK_OK && w >= 0 && w < n) return w;
    if (wk_gguf_kv_type(g, i) == WK_GGUF_I32 && wk_gguf_get_i32(g, i, &w) == WK_OK && w == -1) return -1;
    *bad = true;
    wk__err(WK_ERR_FORMAT, OP, "%s is not a token id inside the vocabulary (%lld tokens)", key, (long long)n);
    return -1;
}

static bool get_bool(const wk_gguf *g, const char *key, bool dflt) {
    int64_t i = wk_gguf_find_key(g, key);
    bool v;
    if (i < 0 || wk_gguf_kv_type(g, i) != WK_GGUF_BOOL || wk_gguf_get_bool(g, i, &v) != WK_OK) return dflt;
    return v;
}

/* The i32 / f32 array under key with exactly n entries (unaligned in the
 * map: read with memcpy), or NULL with the error set. */
static const void *get_array(const wk_gguf *g, const char *key, wk_gguf_type want, uint64_t n, bool required) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) {
        if (required) wk__err(WK_ERR_FORMAT, OP, "%s is missing", key);
        return NULL;
    }
    wk_gguf_type et;
    uint64_t m;
    const void *data;
    size_t nb;
    if (wk_gguf_get_array(g, i, &et, &m) != WK_OK || et != want || m != n ||
        wk_gguf_array_data(g, i, &data, &nb) != WK_OK || nb < 4 * n) {
        wk__err(WK_ERR_FORMAT, OP, "%s must be a%s array as long as the tokens (%llu)", key,
                want == WK_GGUF_F32 ? "n f32" : "n i32", (unsigned long long)n);
        return NULL;
    }
    return data;
}

static wk_tokenizer *fail(wk_tokenizer *t) {
    wk_tokenizer_free(t);
    return NULL;
}

wk_tokenizer *wk__tok_from_gguf_spm(const wk_gguf *g, bool by_rank) {
    int64_t ti = wk_gguf_find_key(g, "tokenizer.ggml.tokens");
    wk_gguf_type et;
    uint64_t n;
    if (ti < 0 || wk_gguf_get_array(g, ti, &et, &n) != WK_OK || et != WK_GGUF_STRING || n == 0 ||
        n > INT32_MAX) {
        wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.tokens must be a non-empty string array of < 2^31 entries");
        return NULL;
    }
    const char *types = get_array(g, "tokenizer.ggml.token_type", WK_GGUF_I32, n, false);
    if (!types && wk_gguf_find_key(g, "tokenizer.ggml.token_type") >= 0) return NULL;
    const char *scores = get_array(g, "tokenizer.ggml.scores", WK_GGUF_F32, n, !by_rank);
    if (!scores && (!by_rank || wk_gguf_find_key(g, "tokenizer.ggml.scores") >= 0)) return NULL;
    wk_tokenizer *t = wk__tok_new(WK__TOK_SPM, (int64_t)n);
    if (!t) {
        wk__err(WK_ERR_OOM, OP, "out of memory for %llu tokens", (unsigned long long)n);
        return NULL;
    }
    if (!by_rank) {
        t->score = malloc(n * sizeof *t->score);
        if (!t->score) goto oom;
        memcpy(t->score, scores, n * sizeof *t->score);
    }
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
        if (types) memcpy(&ty, types + 4 * j, 4);
        if (len > bufcap) {
            bufcap = (size_t)len;
            char *nb = realloc(buf, bufcap);
            if (!nb) goto oom_buf;
            buf = nb;
        }
        size_t bl;
        if (ty == 6) {
            int b = wk__spm_byte_token(s, (size_t)len);
            if (b < 0) {
                free(buf);
                wk__err(WK_ERR_FORMAT, OP, "byte token %llu is \"%.*s\", not <0xXX>", (unsigned long long)j,
                        (int)(len > 16 ? 16 : len), s);
                return fail(t);
            }
            buf[0] = (char)b;
            bl = 1;
        } else if (ty == 2 || ty == 3 || ty == 4) {
            memcpy(buf, s, (size_t)len);
            bl = (size_t)len;
        } else {
            bl = wk__spm_unescape(s, (size_t)len, buf);
        }
        if (!wk__tok_set(t, (int64_t)j, s, (size_t)len, buf, bl)) goto oom_buf;
    }
    free(buf);
    buf = NULL;
    if (!wk__tok_index(t, OP)) return fail(t);
    for (uint64_t j = 0; j < n; j++) {
        int32_t ty = 1;
        if (types) memcpy(&ty, types + 4 * j, 4);
        if (ty == 2 || ty == 3 || ty == 4) {
            wk__added a = {(int32_t)j, ty != 4, false, false, false};
            if (!wk__tok_add_added(t, a)) goto oom;
        }
    }
    if (!wk__tok_index_added(t)) goto oom;
    if (by_rank) {
        int64_t mi = wk_gguf_find_key(g, "tokenizer.ggml.merges");
        uint64_t nm = 0;
        if (mi < 0 || wk_gguf_get_array(g, mi, &et, &nm) != WK_OK || et != WK_GGUF_STRING || nm > INT32_MAX) {
            wk__err(WK_ERR_FORMAT, OP, "tokenizer.ggml.merges must be a string array (model gemma4)");
            return fail(t);
        }
        if (!wk__tok_merges_reserve(t, (int64_t)nm)) goto oom;
        for (uint64_t j = 0; j < nm; j++) {
            const char *s;
            uint64_t len;
            if (wk_gguf_array_string(g, mi, j, &s, &len) != WK_OK) return fail(t);
            /* the separator is the first space after the first byte: a
             * side may itself be a space (llama.cpp's find(' ', 1)) */
            const char *sp = len > 1 ? memchr(s + 1, ' ', (size_t)len - 1) : NULL;
            if (!sp) {
                wk__err(WK_ERR_FORMAT, OP, "merge %llu is not two tokens separated by a space",
                        (unsigned long long)j);
                return fail(t);
            }
            size_t al = (size_t)(sp - s);
            if (!wk__tok_add_merge(t, s, al, sp + 1, (size_t)len - al - 1, (int32_t)j)) goto oom;
        }
        t->spm_split_newlines = true;
    }
    bool bad = false;
    t->bos = get_id(g, "tokenizer.ggml.bos_token_id", t->n, &bad);
    t->eos = get_id(g, "tokenizer.ggml.eos_token_id", t->n, &bad);
    t->unk = get_id(g, "tokenizer.ggml.unknown_token_id", t->n, &bad);
    if (bad) return fail(t);
    for (int64_t j = 0; t->unk < 0 && types && j < t->n; j++) {
        int32_t ty;
        memcpy(&ty, types + 4 * j, 4);
        if (ty == 2) t->unk = (int32_t)j;
    }
    t->byte_fallback = true;
    if (!wk__spm_index(t, OP)) return fail(t);
    /* llama.cpp: SPM vocabularies add BOS and a prefix space unless the file
     * says otherwise; gemma4 always adds BOS and never the prefix */
    bool prefix = get_bool(g, "tokenizer.ggml.add_space_prefix", !by_rank);
    t->spm_prefix = prefix ? WK__SPM_PREFIX_ALWAYS : WK__SPM_PREFIX_NONE;
    t->strip_lead_space = prefix;
    bool add_bos = by_rank || get_bool(g, "tokenizer.ggml.add_bos_token", true);
    if (add_bos && t->bos >= 0) t->prefix[t->nprefix++] = t->bos;
    if (get_bool(g, "tokenizer.ggml.add_eos_token", false) && t->eos >= 0) t->suffix[t->nsuffix++] = t->eos;
    return t;
oom_buf:
    free(buf);
oom:
    wk__err(WK_ERR_OOM, OP, "out of memory");
    return fail(t);
}
