/* One sequence's next id from its logits row: the grammar's mask first
 * (ids it forbids get -inf, so neither the sampler nor the logprobs see
 * them), then the logprobs asked for, then the request's own sampler over
 * its history (the prompt then its ids, as wk_generate's).
 *
 * Logprobs convention: log softmax of the model's logits as they came out
 * of the forward pass (after the grammar mask, before the repetition
 * penalty, temperature, top-k / top-p / min-p): the model's distribution,
 * which is what OpenAI's API reports, the same for greedy and sampled
 * requests. Computed in double. */
#include "serve/engine_internal.h"
#include "base/error.h"
#include <math.h>

static const char *OP = "wk_engine_step";

static void log_softmax(const float *x, int64_t n, double *lp) {
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    const double lse = mx + log(sum);
    for (int64_t i = 0; i < n; i++) lp[i] = (double)x[i] - lse;
}

/* The k largest of lp (most likely first, the lower id first on ties):
 * insertion into a sorted list of k, k <= 20. */
static int top_k(const double *lp, int64_t n, int k, int32_t *ids, float *out) {
    int have = 0;
    double best[WK__ENGINE_MAX_TOP];
    for (int64_t i = 0; i < n; i++) {
        if (have == k && !(lp[i] > best[k - 1])) continue;
        int p = have < k ? have++ : k - 1;
        while (p > 0 && lp[i] > best[p - 1]) {
            best[p] = best[p - 1];
            ids[p] = ids[p - 1];
            p--;
        }
        best[p] = lp[i];
        ids[p] = (int32_t)i;
    }
    for (int i = 0; i < have; i++) out[i] = (float)best[i];
    return have;
}

int32_t wk__engine_sample(wk_engine *e, wk__req *r, float *logits, wk_engine_event *ev, int32_t *top_ids,
                          float *top_lp) {
    if (r->gs) {
        if (r->n_allowed < 0) r->n_allowed = wk_grammar_state_mask(r->gs, r->eos, r->n_eos, r->allowed, e->vocab);
        if (r->n_allowed < 0) return -1;
        if (r->n_allowed == 0) {
            wk__err(WK_ERR_ARG, OP, "request %lld: the grammar allows no id here", (long long)r->id);
            return -1;
        }
        for (int64_t i = 0; i < e->vocab; i++)
            if (!r->allowed[i]) logits[i] = -INFINITY;
    }
    const bool want_lp = r->o.logprobs || r->o.top_logprobs > 0;
    if (want_lp) log_softmax(logits, e->vocab, e->lp);
    int32_t id = wk_sampler_sample(r->sampler, logits, e->vocab, r->ids, r->nh);
    if (id < 0) return -1;
    if (want_lp) {
        ev->logprob = (float)e->lp[id];
        if (r->o.top_logprobs > 0) {
            ev->n_top = top_k(e->lp, e->vocab, r->o.top_logprobs, top_ids, top_lp);
            ev->top_ids = top_ids;
            ev->top_logprobs = top_lp;
        }
    }
    return id;
}
