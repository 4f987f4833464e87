/* One sequence's position in a grammar (wick/grammar.h): the matcher's
 * current stack set plus a partial UTF-8 character (tokens are bytes and
 * may end inside a character), the token mask as a walk over the
 * vocabulary trie, and accept.
 *
 * The mask walk steps the matcher byte by byte down the trie. A subtree is
 * pruned when its first byte is refused, and filled whole (no walk) when
 * every byte under it is ASCII and, depth by depth, every such byte leads
 * to one same live set (all_under): inside a JSON string almost every
 * token is such a subtree, which is what keeps a mask over a 50k
 * vocabulary well under a millisecond once the transitions are memoised. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "text/grammar_match.h"
#include "text/grammar_trie.h"

struct wk_grammar_state {
    const wk_grammar *g;
    const wk_tokenizer *t;
    wk__gm m;
    int32_t set;
    uint32_t ucp; /* partial character: bits so far, bytes to come, its length */
    uint8_t urem, ulen;
    const wk__gtrie *trie; /* the tokenizer's (wk__gtrie_of) */
    int64_t vocab;
};

typedef struct ustate {
    int32_t set;
    uint32_t cp;
    uint8_t rem, len;
} ustate;

static const uint32_t MIN_CP[5] = {0, 0, 0x80, 0x800, 0x10000};

/* One byte: the next state, or set WK__GM_DEAD / WK__GM_ERR. */
static ustate byte_step(wk__gm *m, ustate u, unsigned b) {
    if (u.rem == 0) {
        if (b < 0x80) {
            u.set = wk__gm_next(m, u.set, b);
            return u;
        }
        int len = (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
        if (!len) {
            u.set = WK__GM_DEAD;
            return u;
        }
        u.cp = b & (0x7Fu >> len);
        u.rem = (uint8_t)(len - 1);
        u.len = (uint8_t)len;
    } else {
        if ((b & 0xC0) != 0x80) {
            u.set = WK__GM_DEAD;
            return u;
        }
        u.cp = u.cp << 6 | (b & 0x3F);
        if (--u.rem == 0) {
            if (u.cp < MIN_CP[u.len] || u.cp > 0x10FFFF || (u.cp >= 0xD800 && u.cp <= 0xDFFF)) {
                u.set = WK__GM_DEAD;
                return u;
            }
            u.set = wk__gm_next(m, u.set, u.cp);
            return u;
        }
    }
    /* still partial: some character it can become must be allowed */
    uint32_t lo = u.cp << (6 * u.rem), hi = lo | ((1u << (6 * u.rem)) - 1);
    if (lo < MIN_CP[u.len]) lo = MIN_CP[u.len];
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF) || !wk__gm_can_range(m, u.set, lo, hi)) u.set = WK__GM_DEAD;
    return u;
}

wk_grammar_state *wk_grammar_state_new(const wk_grammar *g, const wk_tokenizer *t) {
    if (!g || !t) return wk__err(WK_ERR_ARG, "wk_grammar_state_new", "NULL grammar or tokenizer"), NULL;
    wk_grammar_state *s = calloc(1, sizeof *s);
    if (!s) return wk__err(WK_ERR_OOM, "wk_grammar_state_new", "out of memory"), NULL;
    s->g = g;
    s->t = t;
    s->vocab = wk_tokenizer_vocab_size(t);
    s->set = wk__gm_init(&s->m, g);
    if (s->set < 0) { /* a start set that is dead: the root matches nothing */
        if (s->set == WK__GM_DEAD)
            wk__err(WK_ERR_FORMAT, "wk_grammar_state_new", "the grammar matches no text at all");
        wk_grammar_state_free(s);
        return NULL;
    }
    if (!(s->trie = wk__gtrie_of(t))) {
        wk_grammar_state_free(s);
        return NULL;
    }
    return s;
}

void wk_grammar_state_free(wk_grammar_state *s) {
    if (!s) return;
    wk__gm_free(&s->m);
    free(s);
}

/* Every token under node is allowed from set: all bytes under it are
 * ASCII, and at each depth every one of them leads to one same live set
 * (a self-loop inside a free string; a counter inside a bounded one), for
 * as many bytes as the longest token below. 1 yes, 0 no, -1 error. */
static int all_under(wk__gm *m, int32_t set, const wk__gt_node *nd) {
    if (nd->below_high) return 0;
    int32_t x = set;
    for (uint32_t d = 0; d < nd->depth_below; d++) {
        int32_t y;
        int r = wk__gm_uniform(m, x, nd->below, &y);
        if (r <= 0) return r;
        if (y == x) return 1; /* a self-loop: every depth is the same */
        x = y;
    }
    return 1;
}

typedef struct walker {
    wk__gm *m;
    const wk__gtrie *tr;
    uint8_t *allowed;
    int64_t count;
    bool failed;
} walker;

static void fill(walker *w, uint32_t lo, uint32_t hi) {
    for (uint32_t i = lo; i < hi; i++) w->allowed[w->tr->ids[i]] = 1;
    w->count += hi - lo;
}

/* The children of node q from state u (depth <= WK__GT_MAX_TOKEN). */
static void walk(walker *w, uint32_t q, ustate u) {
    const wk__gt_node *nd = &w->tr->nodes[q];
    for (uint32_t c = nd->child; c < nd->child + nd->nchild && !w->failed; c++) {
        const wk__gt_node *ch = &w->tr->nodes[c];
        ustate v = byte_step(w->m, u, ch->byte);
        if (v.set == WK__GM_DEAD) continue;
        if (v.set == WK__GM_ERR) {
            w->failed = true;
            return;
        }
        fill(w, ch->lo, ch->mid);
        if (ch->mid == ch->hi) continue;
        if (v.rem == 0) {
            int r = all_under(w->m, v.set, ch);
            if (r < 0) {
                w->failed = true;
                return;
            }
            if (r) {
                fill(w, ch->mid, ch->hi);
                continue;
            }
        }
        walk(w, c, v);
    }
}

static bool maybe_rebase(wk_grammar_state *s) {
    if (!wk__gm_big(&s->m)) return true;
    int32_t r = wk__gm_rebase(&s->m, s->set);
    if (r < 0) return false;
    s->set = r;
    return true;
}

int64_t wk_grammar_state_mask(wk_grammar_state *s, const int32_t *eos, int n_eos, uint8_t *allowed, int64_t vocab) {
    static const char OP[] = "wk_grammar_state_mask";
    if (!s || !allowed || (n_eos > 0 && !eos) || n_eos < 0)
        return wk__err(WK_ERR_ARG, OP, "NULL state or mask, or a bad eos list"), -1;
    if (vocab < s->vocab) return wk__err(WK_ERR_ARG, OP, "vocab %lld < the tokenizer's %lld", (long long)vocab,
                                         (long long)s->vocab), -1;
    memset(allowed, 0, (size_t)vocab);
    if (!maybe_rebase(s)) return -1;
    walker w = {&s->m, s->trie, allowed, 0, false};
    ustate u = {s->set, s->ucp, s->urem, s->ulen};
    walk(&w, 0, u);
    if (w.failed) return -1;
    bool end = s->urem == 0 && wk__gm_complete(&s->m, s->set);
    for (int i = 0; i < n_eos; i++) {
        int32_t id = eos[i];
        if (id < 0 || id >= vocab) continue;
        if (allowed[id] != end) {
            allowed[id] = end;
            w.count += end ? 1 : -1;
        }
    }
    return w.count;
}

wk_status wk_grammar_state_accept(wk_grammar_state *s, int32_t id) {
    static const char OP[] = "wk_grammar_state_accept";
    if (!s) return wk__err(WK_ERR_ARG, OP, "NULL state");
    if (id < 0 || id >= s->vocab) return wk__err(WK_ERR_ARG, OP, "token id %ld out of range", (long)id);
    if (wk_tokenizer_is_special(s->t, id))
        return wk__err(WK_ERR_ARG, OP, "token %ld is a special token (only an end of text may follow, and ends it)",
                       (long)id);
    int64_t n = wk_tokenizer_token_bytes(s->t, id, NULL, 0);
    if (n <= 0 || n > WK__GT_MAX_TOKEN) return wk__err(WK_ERR_ARG, OP, "token %ld is not allowed here", (long)id);
    char buf[WK__GT_MAX_TOKEN];
    wk_tokenizer_token_bytes(s->t, id, buf, sizeof buf);
    if (!maybe_rebase(s)) return wk_last_status();
    ustate u = {s->set, s->ucp, s->urem, s->ulen};
    for (int64_t i = 0; i < n; i++) {
        u = byte_step(&s->m, u, (unsigned char)buf[i]);
        if (u.set == WK__GM_ERR) return wk_last_status();
        if (u.set == WK__GM_DEAD) return wk__err(WK_ERR_ARG, OP, "token %ld is not allowed here", (long)id);
    }
    s->set = u.set;
    s->ucp = u.cp;
    s->urem = u.rem;
    s->ulen = u.len;
    return WK_OK;
}

bool wk_grammar_state_complete(const wk_grammar_state *s) {
    return s && s->urem == 0 && wk__gm_complete(&s->m, s->set);
}

int wk_grammar_match(const wk_grammar *g, const char *text, size_t len) {
    if (!g || (!text && len)) return wk__err(WK_ERR_ARG, "wk_grammar_match", "NULL grammar or text"), -1;
    wk__gm m;
    ustate u = {wk__gm_init(&m, g), 0, 0, 0};
    for (size_t i = 0; i < len && u.set >= 0; i++) {
        if (wk__gm_big(&m)) u.set = wk__gm_rebase(&m, u.set);
        if (u.set >= 0) u = byte_step(&m, u, (unsigned char)text[i]);
    }
    int r = u.set == WK__GM_ERR ? -1 : u.set == WK__GM_DEAD ? 0 : (u.rem == 0 && wk__gm_complete(&m, u.set)) ? 2 : 1;
    wk__gm_free(&m);
    return r;
}
