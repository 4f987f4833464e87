/* The vocabulary: entries, hash maps from token strings to ids, the merge
 * table, the added-token buckets and GPT-2's byte <-> char map. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "base/error.h"
#include "text/tok_internal.h"
#include "text/unicode.h"

/* GPT-2's byte map: printable Latin-1 bytes stand for themselves, the other
 * 68 (0x00-0x20, 0x7F-0xA0, 0xAD) take the code points 256, 257, ... in
 * byte order, so every byte is a visible character. Closed forms, no table. */
static uint32_t byte_cp(unsigned b) {
    if (b <= 0x20) return 256 + b;
    if (b >= 0x7F && b <= 0xA0) return 256 + 33 + (b - 0x7F);
    if (b == 0xAD) return 256 + 67;
    return b;
}

static int cp_byte(uint32_t cp) {
    if (cp < 256) return byte_cp(cp) == cp ? (int)cp : -1;
    uint32_t k = cp - 256;
    if (k < 33) return (int)k;
    if (k < 67) return (int)(0x7F + k - 33);
    if (k == 67) return 0xAD;
    return -1;
}

int wk__bytelevel_char(unsigned b, char out[2]) {
    unsigned char u[4];
    int n = wk__utf8_put(byte_cp(b), u);
    memcpy(out, u, (size_t)n);
    return n;
}

bool wk__bytelevel_decode(const char *text, size_t len, char *out, size_t *outlen) {
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    bool all = true;
    for (size_t i = 0; i < len;) {
        int l;
        uint32_t cp = wk__utf8_next(s + i, len - i, &l);
        int b = cp & WK__UC_RAW ? -1 : cp_byte(cp);
        if (b >= 0) out[o++] = (char)b;
        else {
            memcpy(out + o, s + i, (size_t)l);
            o += (size_t)l;
            all = false;
        }
        i += (size_t)l;
    }
    *outlen = o;
    return all;
}

wk_tokenizer *wk__tok_new(wk__tok_model model, int64_t n) {
    wk_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->model = model;
    t->n = n;
    t->tok = n > 0 ? calloc((size_t)n, sizeof *t->tok) : NULL;
    if (n > 0 && !t->tok) {
        free(t);
        return NULL;
    }
    t->bos = t->eos = t->unk = -1;
    t->max_word_chars = 100;
    t->byte_decode = model != WK__TOK_WORDPIECE; /* BPE and SPM pieces are their bytes */
    return t;
}

bool wk__tok_set(wk_tokenizer *t, int64_t id, const char *text, size_t text_len, const char *bytes,
                 size_t nbytes) {
    wk__tok_entry *e = &t->tok[id];
    char *a = malloc(text_len + 1), *b = malloc(nbytes + 1);
    if (!a || !b) {
        free(a);
        free(b);
        return false;
    }
    memcpy(a, text, text_len);
    a[text_len] = 0;
    memcpy(b, bytes, nbytes);
    b[nbytes] = 0;
    free(e->text);
    free(e->bytes);
    e->text = a;
    e->bytes = b;
    e->text_len = (uint32_t)text_len;
    e->nbytes = (uint32_t)nbytes;
    return true;
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void entry_key(const wk_tokenizer *t, const wk__strmap *m, int32_t id, const char **s, size_t *n) {
    const wk__tok_entry *e = &t->tok[id];
    if (m->by_text) {
        *s = e->text;
        *n = e->text_len;
    } else {
        *s = e->bytes;
        *n = e->nbytes;
    }
}

int32_t wk__strmap_get(const wk_tokenizer *t, const wk__strmap *m, const char *s, size_t n) {
    if (!m->slot) return -1;
    for (uint64_t h = hash_bytes(s, n) & m->mask;; h = (h + 1) & m->mask) {
        int32_t id = m->slot[h];
        if (id < 0) return -1;
        const char *k;
        size_t kn;
        entry_key(t, m, id, &k, &kn);
        if (kn == n && memcmp(k, s, n) == 0) return id;
    }
}

/* First id wins for duplicate strings (a later copy stays reachable by id). */
static bool strmap_build(wk_tokenizer *t, wk__strmap *m, bool by_text) {
    uint64_t cap = 16;
    while (cap < (uint64_t)t->n * 2) cap <<= 1;
    m->by_text = by_text;
    m->mask = cap - 1;
    m->slot = malloc(cap * sizeof *m->slot);
    if (!m->slot) return false;
    memset(m->slot, 0xFF, cap * sizeof *m->slot);
    for (int64_t id = 0; id < t->n; id++) {
        const char *k;
        size_t kn;
        entry_key(t, m, (int32_t)id, &k, &kn);
        uint64_t h = hash_bytes(k, kn) & m->mask;
        bool dup = false;
        for (; m->slot[h] >= 0; h = (h + 1) & m->mask) {
            const char *k2;
            size_t kn2;
            entry_key(t, m, m->slot[h], &k2, &kn2);
            if (kn2 == kn && memcmp(k, k2, kn) == 0) {
                dup = true;
                break;
            }
        }
        if (!dup) m->slot[h] = (int32_t)id;
    }
    return true;
}

bool wk__tok_index(wk_tokenizer *t, const char *op) {
    for (int64_t id = 0; id < t->n; id++) {
        if (!t->tok[id].text) {
            wk__err(WK_ERR_FORMAT, op, "vocabulary has no token with id %lld (ids must run 0..%lld)",
                    (long long)id, (long long)t->n - 1);
            return false;
        }
        if (t->tok[id].nbytes > t->max_token_bytes) t->max_token_bytes = t->tok[id].nbytes;
    }
    if (!strmap_build(t, &t->by_bytes, false) || !strmap_build(t, &t->by_text, true)) {
        wk__err(WK_ERR_OOM, op, "out of memory indexing %lld tokens", (long long)t->n);
        return false;
    }
    for (unsigned b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = wk__strmap_get(t, &t->by_bytes, &c, 1);
    }
    return true;
}

static uint64_t pair_hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

bool wk__tok_merges_reserve(wk_tokenizer *t, int64_t n) {
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2 + 2) cap <<= 1;
    free(t->merges.slot);
    t->merges.slot = malloc(cap * sizeof *t->merges.slot);
    if (!t->merges.slot) return false;
    t->merges.mask = cap - 1;
    for (uint64_t i = 0; i < cap; i++) t->merges.slot[i].rank = -1;
    return true;
}

bool wk__tok_add_merge(wk_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, int32_t rank) {
    int32_t ia = wk__strmap_get(t, &t->by_text, a, alen), ib = wk__strmap_get(t, &t->by_text, b, blen);
    if (ia < 0 || ib < 0) return true;
    size_t n = t->tok[ia].text_len + t->tok[ib].text_len;
    char stack[256], *buf = n <= sizeof stack ? stack : malloc(n);
    if (!buf) return false;
    memcpy(buf, t->tok[ia].text, t->tok[ia].text_len);
    memcpy(buf + t->tok[ia].text_len, t->tok[ib].text, t->tok[ib].text_len);
    int32_t im = wk__strmap_get(t, &t->by_text, buf, n);
    if (buf != stack) free(buf);
    if (im < 0) return true;
    uint64_t key = ((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib;
    for (uint64_t h = pair_hash(key) & t->merges.mask;; h = (h + 1) & t->merges.mask) {
        wk__pair_slot *s = &t->merges.slot[h];
        if (s->rank < 0) {
            s->key = key;
            s->rank = rank;
            s->merged = im;
            return true;
        }
        if (s->key == key) return true; /* the first (lowest-rank) copy of a merge counts */
    }
}

bool wk__tok_add_added(wk_tokenizer *t, wk__added a) {
    if (t->nadded % 64 == 0) {
        wk__added *p = realloc(t->added, (size_t)(t->nadded + 64) * sizeof *p);
        if (!p) return false;
        t->added = p;
    }
    t->added[t->nadded++] = a;
    if (a.special) t->tok[a.id].special = true;
    return true;
}

typedef struct added_key { unsigned char first; uint32_t len; int32_t id, idx; } added_key;
static int cmp_added(const void *x, const void *y) {
    const added_key *a = x, *b = y;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1; /* longest first: leftmost-longest matching */
    return a->id < b->id ? -1 : a->id > b->id;
}

bool wk__tok_index_added(wk_tokenizer *t) {
    /* Empty added tokens can never match; drop them from the buckets. */
    int64_t k = 0;
    for (int64_t i = 0; i < t->nadded; i++)
        if (t->tok[t->added[i].id].nbytes > 0) t->added[k++] = t->added[i];
    t->nadded = k;
    free(t->added_order);
    t->added_order = malloc((size_t)(k > 0 ? k : 1) * sizeof *t->added_order);
    if (!t->added_order) return false;
    added_key *keys = malloc((size_t)(k > 0 ? k : 1) * sizeof *keys);
    if (!keys) return false;
    for (int64_t i = 0; i < k; i++) {
        const wk__tok_entry *e = &t->tok[t->added[i].id];
        keys[i] = (added_key){(unsigned char)e->bytes[0], e->nbytes, t->added[i].id, (int32_t)i};
    }
    qsort(keys, (size_t)k, sizeof *keys, cmp_added);
    for (int64_t i = 0; i < k; i++) t->added_order[i] = keys[i].idx;
    free(keys);
    int64_t pos = 0;
    for (unsigned b = 0; b <= 256; b++) {
        while (pos < k && (unsigned char)t->tok[t->added[t->added_order[pos]].id].bytes[0] < b) pos++;
        t->added_start[b] = pos;
    }
    return true;
}

void wk__ids_push(wk__ids *o, int32_t id) {
    if (o->out && o->n < o->out_cap) o->out[o->n] = id;
    o->n++;
}
