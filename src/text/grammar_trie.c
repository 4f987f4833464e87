/* The vocabulary trie (grammar_trie.h), built breadth first from the
 * sorted token strings, so the children of a node are adjacent and no
 * recursion follows the token length. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "text/grammar_trie.h"
#include "text/tok_internal.h"

typedef struct tok_ref {
    const char *s;
    uint32_t n;
    int32_t id;
} tok_ref;

static int cmp_tok(const void *a, const void *b) {
    const tok_ref *x = a, *y = b;
    uint32_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

bool wk__gtrie_build(wk__gtrie *tr, const wk_tokenizer *t) {
    static const char OP[] = "wk_grammar_state_new";
    memset(tr, 0, sizeof *tr);
    int64_t nv = wk_tokenizer_vocab_size(t);
    size_t maxb = wk_tokenizer_max_token_bytes(t);
    if (maxb > WK__GT_MAX_TOKEN) maxb = WK__GT_MAX_TOKEN;
    tok_ref *refs = malloc(sizeof *refs * (size_t)(nv > 0 ? nv : 1));
    char *bytes = NULL;
    uint32_t *depth = NULL;
    size_t total = 0;
    /* first pass: sizes */
    for (int64_t id = 0; id < nv; id++) {
        int64_t k = wk_tokenizer_is_special(t, (int32_t)id) ? 0 : wk_tokenizer_token_bytes(t, (int32_t)id, NULL, 0);
        if (k > 0 && (size_t)k <= maxb) total += (size_t)k;
    }
    bytes = malloc(total ? total : 1);
    if (!refs || !bytes) goto oom;
    uint32_t n = 0;
    size_t off = 0;
    for (int64_t id = 0; id < nv; id++) {
        if (wk_tokenizer_is_special(t, (int32_t)id)) continue;
        int64_t k = wk_tokenizer_token_bytes(t, (int32_t)id, NULL, 0);
        if (k <= 0 || (size_t)k > maxb) continue;
        wk_tokenizer_token_bytes(t, (int32_t)id, bytes + off, (size_t)k);
        refs[n++] = (tok_ref){bytes + off, (uint32_t)k, (int32_t)id};
        off += (size_t)k;
    }
    qsort(refs, n, sizeof *refs, cmp_tok);
    tr->ids = malloc(sizeof *tr->ids * (n ? n : 1));
    if (!tr->ids) goto oom;
    for (uint32_t i = 0; i < n; i++) tr->ids[i] = refs[i].id;
    tr->nids = n;
    /* nodes <= 1 + total bytes */
    size_t capn = total + 1;
    tr->nodes = calloc(capn, sizeof *tr->nodes);
    depth = malloc(sizeof *depth * capn);
    if (!tr->nodes || !depth) goto oom;
    tr->nodes[0] = (wk__gt_node){.lo = 0, .hi = n};
    depth[0] = 0;
    uint32_t nn = 1;
    for (uint32_t q = 0; q < nn; q++) {
        wk__gt_node *nd = &tr->nodes[q];
        uint32_t d = depth[q], i = nd->lo;
        while (i < nd->hi && refs[i].n == d) i++;
        nd->mid = i;
        nd->child = nn;
        while (i < nd->hi) {
            unsigned char b = (unsigned char)refs[i].s[d];
            uint32_t j = i;
            while (j < nd->hi && (unsigned char)refs[j].s[d] == b) j++;
            tr->nodes[nn] = (wk__gt_node){.lo = i, .hi = j, .byte = b};
            depth[nn++] = d + 1;
            i = j;
        }
        nd->nchild = nn - nd->child;
    }
    tr->nnodes = nn;
    /* children come after their parent: summaries bottom up */
    for (uint32_t q = nn; q-- > 0;) {
        wk__gt_node *nd = &tr->nodes[q];
        for (uint32_t c = nd->child; c < nd->child + nd->nchild; c++) {
            const wk__gt_node *ch = &tr->nodes[c];
            nd->below[0] |= ch->below[0];
            nd->below[1] |= ch->below[1];
            nd->below_high |= ch->below_high;
            if (ch->depth_below + 1 > nd->depth_below) nd->depth_below = ch->depth_below + 1;
            if (ch->byte >= 128) nd->below_high = true;
            else nd->below[ch->byte >> 6] |= 1ull << (ch->byte & 63);
        }
    }
    free(depth);
    free(refs);
    free(bytes);
    return true;
oom:
    free(depth);
    free(refs);
    free(bytes);
    wk__gtrie_free(tr);
    wk__err(WK_ERR_OOM, OP, "out of memory building the vocabulary trie");
    return false;
}

void wk__gtrie_free(wk__gtrie *tr) {
    free(tr->nodes);
    free(tr->ids);
    memset(tr, 0, sizeof *tr);
}

const wk__gtrie *wk__gtrie_of(const wk_tokenizer *t) {
    wk_tokenizer *mt = (wk_tokenizer *)t; /* only the atomic cache field is written */
    wk__gtrie *tr = atomic_load(&mt->gtrie);
    if (tr) return tr;
    tr = malloc(sizeof *tr);
    if (!tr) {
        wk__err(WK_ERR_OOM, "wk_grammar_state_new", "out of memory");
        return NULL;
    }
    if (!wk__gtrie_build(tr, t)) {
        free(tr);
        return NULL;
    }
    wk__gtrie *expected = NULL;
    if (!atomic_compare_exchange_strong(&mt->gtrie, &expected, tr)) {
        wk__gtrie_release(tr); /* another thread's trie won */
        return expected;
    }
    return tr;
}

void wk__gtrie_release(wk__gtrie *tr) {
    if (!tr) return;
    wk__gtrie_free(tr);
    free(tr);
}
