/* BERT: BertNormalizer (clean text, space around CJK ideographs, strip
 * accents = NFD then drop Mn, lower case, in HF's order), BertPreTokenizer
 * (split on whitespace, each punctuation character its own word) and the
 * WordPiece model (greedy longest match first, "##" continuations, [UNK] for
 * a word with no match or longer than max_input_chars_per_word).
 * An invalid UTF-8 byte becomes U+FFFD, which clean_text drops. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "text/tok_internal.h"
#include "text/unicode.h"

typedef struct cpbuf { uint32_t *c; size_t n, cap; bool oom; } cpbuf;

static void put(cpbuf *b, uint32_t c) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        uint32_t *p = realloc(b->c, cap * sizeof *p);
        if (!p) {
            b->oom = true;
            return;
        }
        b->c = p;
        b->cap = cap;
    }
    b->c[b->n++] = c;
}

static bool is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool bert_space(uint32_t c) { return c == '\t' || c == '\n' || c == '\r' || wk__uc_is_space(c); }

static bool bert_control(uint32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    wk__uc_cat k = wk__uc_category(c);
    return k == WK__UC_Cc || k == WK__UC_Cf || k == WK__UC_Cs || k == WK__UC_Co || k == WK__UC_Cn;
}

static bool bert_punct(uint32_t c) {
    if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
    return wk__uc_is_punct(c);
}

static void normalize(const wk_tokenizer *t, const unsigned char *s, size_t n, cpbuf *o) {
    for (size_t i = 0; i < n;) {
        int l;
        uint32_t c = wk__utf8_next(s + i, n - i, &l);
        i += (size_t)l;
        if (c & WK__UC_RAW) c = 0xFFFD;
        if (t->clean_text) {
            if (c == 0 || c == 0xFFFD || bert_control(c)) continue;
            if (bert_space(c)) c = ' ';
        }
        if (t->chinese_chars && is_chinese(c)) {
            put(o, ' ');
            put(o, c);
            put(o, ' ');
            continue;
        }
        uint32_t d[4];
        int nd = 1;
        d[0] = c;
        if (t->strip_accents) nd = wk__uc_nfd(c, d, 4);
        for (int k = 0; k < nd; k++) {
            if (t->strip_accents && wk__uc_category(d[k]) == WK__UC_Mn) continue;
            if (t->lowercase) {
                uint32_t lo[3];
                int nl = wk__uc_lower(d[k], lo);
                for (int q = 0; q < nl; q++) put(o, lo[q]);
            } else {
                put(o, d[k]);
            }
        }
    }
}

_Thread_local unsigned long long wk__wordpiece_steps;

static void wordpiece(const wk_tokenizer *t, const uint32_t *c, size_t n, wk__ids *out) {
    if ((int64_t)n > t->max_word_chars) {
        if (t->unk >= 0) wk__ids_push(out, t->unk);
        return;
    }
    size_t plen = strlen(t->cont_prefix);
    size_t cap = plen + 4 * n;
    char stack[512], *buf = cap <= sizeof stack ? stack : malloc(cap);
    size_t offs_stack[129], *off = n < 128 ? offs_stack : malloc((n + 1) * sizeof *off);
    if (!buf || !off) {
        out->oom = true;
        goto done;
    }
    /* The word's UTF-8 after the prefix, with each char's offset. */
    memcpy(buf, t->cont_prefix, plen);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        off[i] = len;
        len += (size_t)wk__utf8_put(c[i], (unsigned char *)buf + plen + len);
    }
    off[n] = len;
    int64_t mark = out->n;
    for (size_t a = 0; a < n;) {
        int32_t found = -1;
        /* No piece is longer than the longest token, and a character is at
         * least one byte: the first candidate ends at most max_token_bytes
         * characters on, then steps back while its bytes are too many (both
         * bounded by the longest token, so a long word is O(n * longest),
         * not O(n^2) however large max_input_chars_per_word is). */
        size_t b = n - a > t->max_token_bytes ? a + t->max_token_bytes : n;
        while (b > a && off[b] - off[a] + (a > 0 ? plen : 0) > t->max_token_bytes) b--, wk__wordpiece_steps++;
        /* the prefix must sit right before the piece: move it there (over
         * the characters already consumed) */
        if (a > 0) memmove(buf + off[a], t->cont_prefix, plen);
        for (; b > a; b--) {
            wk__wordpiece_steps++;
            const char *p = buf + plen + off[a] - (a > 0 ? plen : 0);
            size_t l = off[b] - off[a] + (a > 0 ? plen : 0);
            found = wk__strmap_get(t, &t->by_bytes, p, l);
            if (found >= 0) break;
        }
        if (found < 0) {
            out->n = mark; /* the whole word is [UNK] */
            if (t->unk >= 0) wk__ids_push(out, t->unk);
            goto done;
        }
        wk__ids_push(out, found);
        a = b;
    }
done:
    if (buf != stack) free(buf);
    if (off != offs_stack) free(off);
}

void wk__wordpiece_segment(const wk_tokenizer *t, const unsigned char *s, size_t n, wk__ids *out) {
    cpbuf b = {0};
    normalize(t, s, n, &b);
    if (b.oom) {
        out->oom = true;
        free(b.c);
        return;
    }
    size_t a = 0;
    for (size_t i = 0; i <= b.n; i++) {
        bool end = i == b.n, sp = !end && bert_space(b.c[i]), pu = !end && bert_punct(b.c[i]);
        if (!end && !sp && !pu) continue;
        if (i > a) wordpiece(t, b.c + a, i - a, out);
        if (pu) wordpiece(t, b.c + i, 1, out);
        a = i + 1;
    }
    free(b.c);
}
