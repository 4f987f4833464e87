/* The BPE model on one pre-tokenized word: start from its bytes' tokens and
 * apply the lowest-ranked merge of adjacent symbols until none applies
 * (ties: leftmost first, as HF and llama.cpp do). A binary heap of candidate
 * pairs keeps long words O(n log n); stale entries are skipped on pop.
 * Heap bound: m symbols give <= m - 1 initial pairs, and each of the k <= m - 1
 * merges pops its own entry and pushes <= 2, so at most m - 1 + k <= 2(m - 1)
 * entries are ever queued: 2n entries, on the stack for words of <= STACK bytes. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "text/merge_queue.h"
#include "text/tok_internal.h"

typedef wk__merge_cand cand; /* x, y: the pair's ids when queued */

const wk__pair_slot *wk__find_merge(const wk_tokenizer *t, int32_t a, int32_t b) {
    if (!t->merges.slot) return NULL;
    uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    uint64_t k = key;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    for (uint64_t h = k & t->merges.mask;; h = (h + 1) & t->merges.mask) {
        const wk__pair_slot *s = &t->merges.slot[h];
        if (s->rank < 0) return NULL;
        if (s->key == key) return s;
    }
}

void wk__bpe_word(const wk_tokenizer *t, const unsigned char *w, size_t n, wk__ids *out) {
    if (n == 0) return;
    if (t->ignore_merges || n == 1) {
        int32_t id = wk__strmap_get(t, &t->by_bytes, (const char *)w, n);
        if (id >= 0) {
            wk__ids_push(out, id);
            return;
        }
    }
    /* int32 symbol indices and a 2n queue: a word over 1 GiB (48 bytes of
     * scratch per byte) is refused as out of memory rather than overflowed */
    if (n > (size_t)INT32_MAX / 2) {
        out->oom = true;
        return;
    }
    enum { STACK = 64 };
    int32_t s_id[STACK], s_prev[STACK], s_next[STACK];
    cand s_heap[2 * STACK]; /* the queue needs 2n entries (see the top) */
    int32_t *id = s_id, *prev = s_prev, *next = s_next;
    cand *heap = s_heap;
    if (n > STACK) {
        id = malloc(n * sizeof *id);
        prev = malloc(n * sizeof *prev);
        next = malloc(n * sizeof *next);
        heap = malloc(2 * n * sizeof *heap);
        if (!id || !prev || !next || !heap) {
            out->oom = true;
            goto done;
        }
    }
    /* Symbols: one per byte that has a token; a byte without one (a vocab
     * lacking some of the 256) is dropped, the unknown-token rule of a BPE
     * model without unk_token. */
    int32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t b = t->byte_id[w[i]];
        if (b < 0) {
            if (t->unk >= 0) b = t->unk;
            else continue;
        }
        id[m] = b;
        prev[m] = m - 1;
        next[m] = m + 1;
        m++;
    }
    if (m == 0) goto done;
    next[m - 1] = -1;
    int32_t nh = 0;
    const int32_t cap = 2 * m; /* <= 2n entries allocated, both on the stack and the heap path */
    for (int32_t i = 0; i + 1 < m; i++) {
        const wk__pair_slot *p = wk__find_merge(t, id[i], id[i + 1]);
        if (p) wk__merge_push(heap, &nh, (cand){p->rank, i, id[i], id[i + 1]});
    }
    while (nh > 0) {
        cand c = wk__merge_pop(heap, &nh);
        int32_t l = c.left, r = next[l];
        /* stale: the left symbol was merged away or changed, or its right neighbour changed */
        if (id[l] != c.x || r < 0 || id[r] != c.y) continue;
        const wk__pair_slot *p = wk__find_merge(t, c.x, c.y);
        id[l] = p->merged;
        id[r] = -1;
        next[l] = next[r];
        if (next[r] >= 0) prev[next[r]] = l;
        if (nh + 2 > cap) { /* cannot happen (the bound at the top): fail rather than write past the queue */
            out->oom = true;
            goto done;
        }
        if (prev[l] >= 0) {
            const wk__pair_slot *q = wk__find_merge(t, id[prev[l]], id[l]);
            if (q) wk__merge_push(heap, &nh, (cand){q->rank, prev[l], id[prev[l]], id[l]});
        }
        if (next[l] >= 0) {
            const wk__pair_slot *q = wk__find_merge(t, id[l], id[next[l]]);
            if (q) wk__merge_push(heap, &nh, (cand){q->rank, l, id[l], id[next[l]]});
        }
    }
    for (int32_t i = 0; i >= 0; i = next[i]) wk__ids_push(out, id[i]);
done:
    if (id != s_id) {
        free(id);
        free(prev);
        free(next);
        free(heap);
    }
}
