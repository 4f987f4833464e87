/* SentencePiece-style BPE (WK__TOK_SPM). A segment's spaces become U+2581
 * ("▁"), a "▁" may be put in front, the result is split into UTF-8
 * characters, and adjacent symbols are merged until no candidate is left:
 *   by score (t->score, GGUF "llama"): any adjacent pair whose concatenation
 *     is a token, the token with the highest score first (llama.cpp's SPM);
 *   by rank (t->score NULL: tokenizer.json BPE, GGUF "gemma4"): the pair
 *     with the lowest merge rank first (HF's BPE model).
 * Ties go to the leftmost pair. A symbol left that is no token falls back
 * to its bytes as <0xXX> tokens (byte_fallback) or to unk.
 * Symbols are byte ranges of one escaped buffer kept in a linked list, and
 * candidates sit in a binary heap (stale ones are skipped when popped), so a
 * long text is O(n log n), not quadratic. Heap bound: m symbols give <= m-1
 * first candidates, each of the k <= m-1 merges pops one and pushes <= 2, so
 * at most m - 1 + k < 2m are queued at once. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "base/error.h"
#include "text/merge_queue.h"
#include "text/tok_internal.h"

static const char ESC[3] = {'\xE2', '\x96', '\x81'}; /* U+2581 */

int wk__spm_byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

size_t wk__spm_unescape(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && memcmp(s + i, ESC, 3) == 0) {
            out[o++] = ' ';
            i += 3;
        } else {
            out[o++] = s[i++];
        }
    }
    return o;
}

bool wk__spm_index(wk_tokenizer *t, const char *op) {
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    int nbytes = 0;
    for (int64_t id = 0; id < t->n; id++) {
        const wk__tok_entry *e = &t->tok[id];
        int b = wk__spm_byte_token(e->text, e->text_len);
        if (b >= 0 && t->byte_id[b] < 0) {
            t->byte_id[b] = (int32_t)id;
            nbytes++;
        }
    }
    if (t->unk < 0 && (!t->byte_fallback || nbytes < 256)) {
        wk__err(WK_ERR_FORMAT, op, "a SentencePiece vocabulary needs an unknown token or all 256 <0xXX> byte "
                "tokens (it has %d and %s)", nbytes, t->byte_fallback ? "no unk" : "no byte fallback or unk");
        return false;
    }
    return true;
}

typedef wk__merge_cand cand; /* x: the merged id, y: the pair's bytes when queued (a different sum: stale) */

typedef struct word {
    const unsigned char *buf;
    int32_t *start, *len, *id, *prev, *next;
    cand *heap;
    int32_t nh;
} word;

static void try_pair(const wk_tokenizer *t, word *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    cand c = {0, l, -1, w->len[l] + w->len[r]};
    if (t->score) {
        /* the highest score first */
        c.x = wk__strmap_get(t, &t->by_text, (const char *)w->buf + w->start[l], (size_t)c.y);
        if (c.x < 0) return;
        c.key = -(double)t->score[c.x];
    } else {
        if (w->id[l] < 0 || w->id[r] < 0) return;
        const wk__pair_slot *p = wk__find_merge(t, w->id[l], w->id[r]);
        if (!p) return;
        c.x = p->merged;
        c.key = p->rank;
    }
    wk__merge_push(w->heap, &w->nh, c);
}

/* A symbol that is no token: its bytes' <0xXX> tokens, or unk. */
static void fallback(const wk_tokenizer *t, const unsigned char *s, int32_t n, bool *last_unk, wk__ids *out) {
    bool all = t->byte_fallback;
    for (int32_t i = 0; all && i < n; i++) all = t->byte_id[s[i]] >= 0;
    if (all) {
        for (int32_t i = 0; i < n; i++) wk__ids_push(out, t->byte_id[s[i]]);
        *last_unk = false;
        return;
    }
    if (t->unk < 0) return; /* nothing to stand for it (refused at load unless bytes cover it) */
    if (!(t->fuse_unk && *last_unk)) wk__ids_push(out, t->unk);
    *last_unk = true;
}

/* UTF-8 length from the lead byte (a stray continuation byte is 1). */
static int32_t char_len(unsigned char c) {
    static const unsigned char L[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return L[c >> 4];
}

static void spm_word(const wk_tokenizer *t, const unsigned char *s, size_t n, wk__ids *out) {
    if (n == 0) return;
    if (t->spm_split_newlines && s[0] == '\n') { /* gemma4: a run of newlines that is a token is that token */
        int32_t id = wk__strmap_get(t, &t->by_text, (const char *)s, n);
        if (id >= 0) {
            wk__ids_push(out, id);
            return;
        }
    }
    if (n > (size_t)INT32_MAX / 2) {
        out->oom = true;
        return;
    }
    word w = {s, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    enum { STACK = 64 };
    int32_t st[5][STACK];
    cand sheap[2 * STACK];
    if (n <= STACK) {
        w.start = st[0], w.len = st[1], w.id = st[2], w.prev = st[3], w.next = st[4];
        w.heap = sheap;
    } else {
        w.start = malloc(5 * n * sizeof(int32_t));
        w.heap = malloc(2 * n * sizeof *w.heap);
        if (!w.start || !w.heap) {
            free(w.start);
            free(w.heap);
            out->oom = true;
            return;
        }
        w.len = w.start + n, w.id = w.len + n, w.prev = w.id + n, w.next = w.prev + n;
    }
    int32_t m = 0;
    for (size_t i = 0; i < n; m++) {
        int32_t l = char_len(s[i]);
        if ((size_t)l > n - i) l = (int32_t)(n - i);
        w.start[m] = (int32_t)i;
        w.len[m] = l;
        w.id[m] = wk__strmap_get(t, &t->by_text, (const char *)s + i, (size_t)l);
        w.prev[m] = m - 1;
        w.next[m] = m + 1;
        i += (size_t)l;
    }
    w.next[m - 1] = -1;
    for (int32_t i = 0; i + 1 < m; i++) try_pair(t, &w, i, i + 1);
    while (w.nh > 0) {
        cand c = wk__merge_pop(w.heap, &w.nh);
        int32_t l = c.left, r = w.next[l];
        if (w.len[l] == 0 || r < 0 || w.len[l] + w.len[r] != c.y) continue; /* stale */
        w.len[l] += w.len[r];
        w.len[r] = 0;
        w.id[l] = c.x;
        w.next[l] = w.next[r];
        if (w.next[r] >= 0) w.prev[w.next[r]] = l;
        if (w.nh + 2 > 2 * m) { /* cannot happen (the bound at the top) */
            out->oom = true;
            break;
        }
        try_pair(t, &w, w.prev[l], l);
        try_pair(t, &w, l, w.next[l]);
    }
    bool last_unk = false;
    for (int32_t i = 0; i >= 0 && !out->oom; i = w.next[i]) {
        if (w.id[i] >= 0) {
            wk__ids_push(out, w.id[i]);
            last_unk = false;
        } else {
            fallback(t, s + w.start[i], w.len[i], &last_unk, out);
        }
    }
    if (n > STACK) {
        free(w.start);
        free(w.heap);
    }
}

void wk__spm_segment(const wk_tokenizer *t, const unsigned char *s, size_t n, bool at_start, wk__ids *out) {
    if (n == 0) return;
    bool prefix = t->spm_prefix == WK__SPM_PREFIX_ALWAYS || (t->spm_prefix == WK__SPM_PREFIX_FIRST && at_start);
    if (n > (SIZE_MAX - 3) / 3) {
        out->oom = true;
        return;
    }
    unsigned char *buf = malloc(3 * n + 3);
    if (!buf) {
        out->oom = true;
        return;
    }
    size_t k = 0;
    if (prefix) memcpy(buf, ESC, 3), k = 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(buf + k, ESC, 3), k += 3;
        else buf[k++] = s[i];
    }
    /* words: the whole segment, or split before each "▁" (Metaspace split),
     * or into runs of '\n' and of anything else (gemma4) */
    size_t w0 = 0;
    for (size_t i = 0; i < k && !out->oom;) {
        size_t step = 1;
        bool cut = false;
        if (t->spm_split_words && i + 3 <= k && memcmp(buf + i, ESC, 3) == 0) {
            cut = i > w0;
            step = 3;
        } else if (t->spm_split_newlines && i > w0) {
            cut = (buf[i] == '\n') != (buf[i - 1] == '\n');
        }
        if (cut) {
            spm_word(t, buf + w0, i - w0, out);
            w0 = i;
        }
        i += step;
    }
    if (!out->oom) spm_word(t, buf + w0, k - w0, out);
    free(buf);
}
