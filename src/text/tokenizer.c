/* Public entry points: encode (added tokens split out first, then the
 * model on each segment between them), decode, streaming decode, queries. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "base/error.h"
#include "text/grammar_trie.h"
#include "text/tok_internal.h"
#include "text/unicode.h"

void wk_tokenizer_free(wk_tokenizer *t) {
    if (!t) return;
    for (int64_t i = 0; i < t->n; i++) {
        free(t->tok[i].text);
        free(t->tok[i].bytes);
    }
    free(t->tok);
    free(t->by_bytes.slot);
    free(t->by_text.slot);
    free(t->merges.slot);
    free(t->added);
    free(t->added_order);
    free(t->score);
    wk__gtrie_release(atomic_load(&t->gtrie));
    free(t);
}

static bool ascii_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A word character for single_word added tokens: letters, digits, '_'. */
static bool word_char_before(const unsigned char *s, size_t i) {
    if (i == 0) return false;
    size_t k = i - 1;
    while (k > 0 && (s[k] & 0xC0) == 0x80) k--;
    int l;
    uint32_t c = wk__utf8_next(s + k, i - k, &l);
    return c == '_' || wk__uc_is_letter(c) || wk__uc_is_number(c);
}
static bool word_char_at(const unsigned char *s, size_t i, size_t n) {
    if (i >= n) return false;
    int l;
    uint32_t c = wk__utf8_next(s + i, n - i, &l);
    return c == '_' || wk__uc_is_letter(c) || wk__uc_is_number(c);
}

/* The longest added token at s[i], or NULL. */
static const wk__added *match_added(const wk_tokenizer *t, const unsigned char *s, size_t i, size_t n,
                                    unsigned flags) {
    unsigned char b = s[i];
    for (int64_t k = t->added_start[b]; k < t->added_start[b + 1]; k++) {
        const wk__added *a = &t->added[t->added_order[k]];
        const wk__tok_entry *e = &t->tok[a->id];
        if (e->nbytes > n - i || memcmp(s + i, e->bytes, e->nbytes) != 0) continue;
        if (a->special && !(flags & WK_TOK_PARSE_SPECIAL)) continue;
        if (a->single_word && (word_char_before(s, i) || word_char_at(s, i + e->nbytes, n))) continue;
        return a;
    }
    return NULL;
}

static void encode_segment(const wk_tokenizer *t, const unsigned char *s, size_t n, bool at_start, wk__ids *o) {
    if (n == 0) return;
    if (t->model == WK__TOK_SPM) {
        wk__spm_segment(t, s, n, at_start, o);
        return;
    }
    if (t->model == WK__TOK_WORDPIECE) {
        wk__wordpiece_segment(t, s, n, o);
        return;
    }
    if (t->add_prefix_space && s[0] != ' ') {
        unsigned char *p = malloc(n + 1);
        if (!p) {
            o->oom = true;
            return;
        }
        p[0] = ' ';
        memcpy(p + 1, s, n);
        wk__pretok_bpe(t, p, n + 1, o);
        free(p);
        return;
    }
    wk__pretok_bpe(t, s, n, o);
}

int64_t wk_tokenizer_encode(const wk_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t *ids,
                            int64_t cap) {
    static const char op[] = "wk_tokenizer_encode";
    if (!t || (!text && len) || cap < 0 || (!ids && cap > 0)) {
        wk__err(WK_ERR_ARG, op, "NULL tokenizer, text or ids, or cap < 0");
        return -1;
    }
    /* NULL text with len 0 is the empty text: s stays a valid pointer (no
     * NULL + 0 below) */
    const unsigned char *s = text ? (const unsigned char *)text : (const unsigned char *)"";
    wk__ids o = {ids, cap, 0, false};
    if (flags & WK_TOK_ADD_SPECIAL)
        for (int i = 0; i < t->nprefix; i++) wk__ids_push(&o, t->prefix[i]);
    size_t seg = 0;
    for (size_t i = 0; i < len && !o.oom;) {
        const wk__added *a = t->nadded ? match_added(t, s, i, len, flags) : NULL;
        if (!a) {
            i++;
            continue;
        }
        size_t end = i;
        if (a->lstrip)
            while (end > seg && ascii_space(s[end - 1])) end--;
        encode_segment(t, s + seg, end - seg, seg == 0, &o);
        wk__ids_push(&o, a->id);
        i += t->tok[a->id].nbytes;
        if (a->rstrip)
            while (i < len && ascii_space(s[i])) i++;
        seg = i;
    }
    if (!o.oom) encode_segment(t, s + seg, len - seg, seg == 0, &o);
    if (flags & WK_TOK_ADD_SPECIAL)
        for (int i = 0; i < t->nsuffix; i++) wk__ids_push(&o, t->suffix[i]);
    if (o.oom) {
        wk__err(WK_ERR_OOM, op, "out of memory encoding %zu bytes", len);
        return -1;
    }
    return o.n;
}

/* The text of one token in a decoded sequence: its bytes for byte-level
 * decoding; for WordPiece, " tok" or (a continuation) the piece without "##",
 * then HF's clean-up of a space before punctuation. */
static size_t piece(const wk_tokenizer *t, int32_t id, bool first, char *buf, size_t cap, const char **p) {
    const wk__tok_entry *e = &t->tok[id];
    if (t->byte_decode) {
        *p = e->bytes;
        return e->nbytes;
    }
    size_t pl = strlen(t->cont_prefix);
    const char *s = e->bytes;
    size_t n = e->nbytes;
    size_t o = 0;
    if (!first && pl && n >= pl && memcmp(s, t->cont_prefix, pl) == 0) {
        s += pl;
        n -= pl;
    } else if (!first) {
        if (t->wp_cleanup && n == 1 && (s[0] == '.' || s[0] == '?' || s[0] == '!' || s[0] == ',')) {
            /* " ." -> "." */
        } else if (o < cap) {
            buf[o++] = ' ';
        }
    }
    if (o + n > cap) n = cap - o;
    memcpy(buf + o, s, n);
    *p = buf;
    return o + n;
}

int64_t wk_tokenizer_decode(const wk_tokenizer *t, const int32_t *ids, int64_t n, bool skip_special, char *out,
                            size_t cap) {
    static const char op[] = "wk_tokenizer_decode";
    if (!t || (!ids && n > 0) || n < 0 || (!out && cap > 0)) {
        wk__err(WK_ERR_ARG, op, "NULL tokenizer, ids or out, or n < 0");
        return -1;
    }
    size_t need = 0;
    bool first = true;
    char *buf = malloc(t->max_token_bytes + 2);
    if (!buf) {
        wk__err(WK_ERR_OOM, op, "out of memory");
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n) {
            free(buf);
            wk__err(WK_ERR_INDEX, op, "id %d at position %lld is outside the vocabulary (size %lld)", (int)ids[i],
                    (long long)i, (long long)t->n);
            return -1;
        }
        if (skip_special && t->tok[ids[i]].special) continue;
        const char *p;
        size_t k = piece(t, ids[i], first, buf, t->max_token_bytes + 2, &p);
        /* SentencePiece: the prefix space of the text's first piece goes */
        if (first && t->strip_lead_space && k > 0 && p[0] == ' ') p++, k--;
        first = false;
        if (need < cap) memcpy(out + need, p, k <= cap - need ? k : cap - need);
        need += k;
    }
    free(buf);
    if (need < cap) out[need] = 0;
    return (int64_t)need;
}

/* s[0..r) could start a valid UTF-8 sequence longer than r. */
static bool utf8_prefix(const unsigned char *s, size_t r) {
    unsigned c = s[0];
    size_t need;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) need = 3;
    else if (c >= 0xF0 && c <= 0xF4) need = 4;
    else return false;
    if (r >= need) return false;
    for (size_t i = 1; i < r; i++)
        if ((s[i] & 0xC0) != 0x80) return false;
    if (r >= 2) {
        unsigned d = s[1];
        if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) || (c == 0xF4 && d > 0x8F))
            return false;
    }
    return true;
}

int64_t wk_token_stream_put(const wk_tokenizer *t, wk_token_stream *st, int32_t id, bool skip_special, char *out,
                            size_t cap) {
    static const char op[] = "wk_token_stream_put";
    if (!t || !st || (!out && cap > 0) || st->npending < 0 || st->npending > 3) {
        wk__err(WK_ERR_ARG, op, "NULL tokenizer, stream or out, or a corrupt stream");
        return -1;
    }
    if (id < 0 || id >= t->n) {
        wk__err(WK_ERR_INDEX, op, "id %d is outside the vocabulary (size %lld)", (int)id, (long long)t->n);
        return -1;
    }
    if (skip_special && t->tok[id].special) return 0;
    size_t m = (size_t)st->npending + t->tok[id].nbytes + 1;
    unsigned char *in = malloc(m + 1);
    char *res = malloc(3 * m + 1);
    if (!in || !res) {
        free(in);
        free(res);
        wk__err(WK_ERR_OOM, op, "out of memory");
        return -1;
    }
    memcpy(in, st->pending, (size_t)st->npending);
    const char *p;
    /* first = false: WordPiece pieces keep their leading space in a stream */
    size_t k = piece(t, id, false, (char *)in + st->npending, m - (size_t)st->npending, &p);
    if (p != (const char *)in + st->npending) memcpy(in + st->npending, p, k);
    size_t n = (size_t)st->npending + k, o = 0, i = 0;
    while (i < n) {
        int l;
        uint32_t c = wk__utf8_next(in + i, n - i, &l);
        if (!(c & WK__UC_RAW)) {
            memcpy(res + o, in + i, (size_t)l);
            o += (size_t)l;
            i += (size_t)l;
        } else if (utf8_prefix(in + i, n - i)) {
            break; /* an incomplete sequence at the end: wait for the next token */
        } else {
            memcpy(res + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    if (o > cap) {
        free(in);
        free(res);
        wk__err(WK_ERR_ARG, op, "output buffer of %zu bytes is too small for %zu", cap, o);
        return -1;
    }
    if (o) memcpy(out, res, o); /* out may be NULL when cap and o are 0 */
    st->npending = (int)(n - i);
    memcpy(st->pending, in + i, n - i);
    free(in);
    free(res);
    return (int64_t)o;
}

int64_t wk_token_stream_flush(wk_token_stream *st, char *out, size_t cap) {
    if (!st || (!out && cap > 0) || st->npending < 0 || st->npending > 3) {
        wk__err(WK_ERR_ARG, "wk_token_stream_flush", "NULL stream or out, or a corrupt stream");
        return -1;
    }
    if (st->npending == 0) return 0;
    if (cap < 3) {
        wk__err(WK_ERR_ARG, "wk_token_stream_flush", "output buffer of %zu bytes is too small for 3", cap);
        return -1;
    }
    memcpy(out, "\xEF\xBF\xBD", 3); /* the incomplete sequence is one U+FFFD */
    st->npending = 0;
    return 3;
}

int64_t wk_tokenizer_vocab_size(const wk_tokenizer *t) {
    if (!t) {
        wk__err(WK_ERR_ARG, "wk_tokenizer_vocab_size", "NULL tokenizer");
        return -1;
    }
    return t->n;
}

int32_t wk_tokenizer_find(const wk_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    return wk__strmap_get(t, &t->by_text, token, strlen(token));
}

int32_t wk_tokenizer_bos(const wk_tokenizer *t) { return t ? t->bos : -1; }
int32_t wk_tokenizer_eos(const wk_tokenizer *t) { return t ? t->eos : -1; }
bool wk_tokenizer_adds_bos(const wk_tokenizer *t) { return t && t->bos >= 0 && t->nprefix > 0 && t->prefix[0] == t->bos; }
bool wk_tokenizer_adds_eos(const wk_tokenizer *t) {
    return t && t->eos >= 0 && t->nsuffix > 0 && t->suffix[t->nsuffix - 1] == t->eos;
}
bool wk_tokenizer_is_special(const wk_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n && t->tok[id].special;
}
size_t wk_tokenizer_max_token_bytes(const wk_tokenizer *t) { return t ? t->max_token_bytes : 0; }
/* The entry's bytes are what decode emits for the id in the middle of a
 * text (GPT-2 byte table undone, <0xHH> a byte, U+2581 a space), which is
 * what a grammar must match; decode's first-piece space strip is not. */
int64_t wk_tokenizer_token_bytes(const wk_tokenizer *t, int32_t id, char *out, size_t cap) {
    if (!t || id < 0 || id >= t->n) {
        wk__err(WK_ERR_ARG, "wk_tokenizer_token_bytes", "id %ld out of range", (long)id);
        return -1;
    }
    const wk__tok_entry *e = &t->tok[id];
    if (out && cap && e->nbytes) memcpy(out, e->bytes, e->nbytes < cap ? e->nbytes : cap);
    return e->nbytes;
}
