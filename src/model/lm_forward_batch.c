/* wk_lm_forward_batch: several sequences' new tokens in one call.
 *
 * This first version runs the sequences one after another through
 * wk_lm_forward and stacks their logits: the contract (rows in order,
 * caches unchanged on error, batch invariance) holds trivially; the one
 * pass over all rows replaces it. */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "base/error.h"
#include <stdlib.h>

static const char *OP = "wk_lm_forward_batch";

wk_tensor *wk_lm_forward_batch(const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs) {
    if (!m || !seqs || n_seqs < 1) {
        wk__err(WK_ERR_ARG, OP, "needs a model and at least one sequence");
        return NULL;
    }
    for (int64_t i = 0; i < n_seqs; i++) {
        const wk_lm_seq *s = &seqs[i];
        if (!s->cache || !s->ids || s->n < 1) {
            wk__err(WK_ERR_ARG, OP, "sequence %lld: needs a cache and n >= 1 ids", (long long)i);
            return NULL;
        }
        if (s->cache->m != m) {
            wk__err(WK_ERR_ARG, OP, "sequence %lld: the cache was made for another model", (long long)i);
            return NULL;
        }
        if (s->n > s->cache->kv.cap - s->cache->len) {
            wk__err(WK_ERR_ARG, OP, "sequence %lld: cache overflow: %lld tokens after %lld do not fit its %lld positions",
                    (long long)i, (long long)s->n, (long long)s->cache->len, (long long)s->cache->kv.cap);
            return NULL;
        }
        for (int64_t j = 0; j < i; j++)
            if (seqs[j].cache == s->cache) {
                wk__err(WK_ERR_ARG, OP, "sequences %lld and %lld share one cache", (long long)j, (long long)i);
                return NULL;
            }
    }
    wk_tensor **parts = calloc((size_t)n_seqs, sizeof *parts);
    int64_t *lens = calloc((size_t)n_seqs, sizeof *lens);
    if (!parts || !lens) {
        free(parts);
        free(lens);
        wk__err(WK_ERR_OOM, OP, "cannot allocate %lld sequences", (long long)n_seqs);
        return NULL;
    }
    wk_tensor *out = NULL;
    int64_t done = 0;
    for (; done < n_seqs; done++) {
        lens[done] = seqs[done].cache->len;
        parts[done] = wk_lm_forward(m, seqs[done].cache, seqs[done].ids, seqs[done].n, seqs[done].all_logits);
        if (!parts[done]) break;
    }
    if (done == n_seqs && n_seqs == 1) {
        out = parts[0];
        parts[0] = NULL;
    } else if (done == n_seqs) {
        out = wk_keep(wk_cat(parts, (int)n_seqs, 0)); /* not the caller's scope's: theirs to free */
    }
    if (!out) /* every cache as it was */
        for (int64_t i = 0; i < done; i++) seqs[i].cache->len = lens[i];
    for (int64_t i = 0; i < done; i++) wk_tensor_free(parts[i]);
    free(parts);
    free(lens);
    return out;
}
