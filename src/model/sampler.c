/* Token sampling: greedy, or llama.cpp's chain of filters (repetition
 * penalty, top-k, top-p, min-p, temperature) then a seeded draw.
 *
 * Every step works in double on a copy of the logits, so the input is never
 * modified. The candidates are kept in one total order (logit descending,
 * the lower id first on ties), which makes every cut a prefix of that order
 * and the whole result independent of the sorting algorithm: the same seed
 * and logits give the same id on every machine. Only as much of the order
 * as the filters look at is sorted (a top-k of 40 sorts 40 of 49152). */
#include <math.h>
#include "wick/generate.h"
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "model/sampler.h"

typedef struct {
    double logit;
    int32_t id;
} cand;

struct wk_sampler {
    wk_sampler_opts o;
    uint64_t rng[4];
    cand *c;
    double *p;
    int32_t *ids;
    unsigned char *seen; /* ids already penalised in this call (cleared after) */
    int64_t cap;
};

/* ---- PRNG: xoshiro256** (Blackman and Vigna), state from splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

double wk__sampler_uniform(wk_sampler *s) { return (double)(next_u64(s->rng) >> 11) * 0x1p-53; }

/* ---- options ---- */

void wk_sampler_opts_default(wk_sampler_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->temperature = 0.8;
    o->top_k = 40;
    o->top_p = 0.95;
    o->min_p = 0.05;
    o->repeat_penalty = 1.0;
    o->repeat_last_n = 64;
    o->seed = 0;
}

wk_sampler *wk_sampler_new(const wk_sampler_opts *o) {
    const char *op = "wk_sampler_new";
    if (!o) {
        wk__err(WK_ERR_ARG, op, "options are NULL");
        return NULL;
    }
    if (isnan(o->temperature)) {
        wk__err(WK_ERR_ARG, op, "temperature is NaN");
        return NULL;
    }
    if (!(o->top_p > 0)) { /* also NaN */
        wk__err(WK_ERR_ARG, op, "top_p %g must be > 0 (>= 1 turns it off)", o->top_p);
        return NULL;
    }
    if (isnan(o->min_p) || o->min_p > 1) {
        wk__err(WK_ERR_ARG, op, "min_p %g must be <= 1 (<= 0 turns it off)", o->min_p);
        return NULL;
    }
    if (!(o->repeat_penalty > 0) || isinf(o->repeat_penalty)) {
        wk__err(WK_ERR_ARG, op, "repeat_penalty %g must be finite and > 0 (1 turns it off)", o->repeat_penalty);
        return NULL;
    }
    wk_sampler *s = calloc(1, sizeof *s);
    if (!s) {
        wk__err(WK_ERR_OOM, op, "no memory for the sampler");
        return NULL;
    }
    s->o = *o;
    uint64_t x = o->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    return s;
}

void wk_sampler_free(wk_sampler *s) {
    if (!s) return;
    free(s->c);
    free(s->p);
    free(s->ids);
    free(s->seen);
    free(s);
}

static bool reserve(wk_sampler *s, int64_t n) {
    if (n <= s->cap) return true;
    cand *c = malloc((size_t)n * sizeof *c);
    double *p = malloc((size_t)n * sizeof *p);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    unsigned char *seen = calloc((size_t)n, 1);
    if (!c || !p || !ids || !seen) {
        free(c);
        free(p);
        free(ids);
        free(seen);
        return false;
    }
    free(s->c);
    free(s->p);
    free(s->ids);
    free(s->seen);
    s->c = c;
    s->p = p;
    s->ids = ids;
    s->seen = seen;
    s->cap = n;
    return true;
}

/* ---- the candidate order ---- */

static bool better(const cand *a, const cand *b) { return a->logit > b->logit || (a->logit == b->logit && a->id < b->id); }

static int cmp_cand(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* Heap with the worst candidate on top (index 0). */
static void sift_down(cand *h, int64_t m, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < m && better(&h[w], &h[l])) w = l;
        if (r < m && better(&h[w], &h[r])) w = r;
        if (w == i) return;
        cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* Make c[0..m) the best m of c[0..n), in order; the rest stays a
 * permutation of the others. A heap of m scans the array once. */
static void sort_prefix(cand *c, int64_t n, int64_t m) {
    if (m >= n / 4) {
        qsort(c, (size_t)n, sizeof *c, cmp_cand);
        return;
    }
    for (int64_t i = m / 2; i-- > 0;) sift_down(c, m, i);
    for (int64_t i = m; i < n; i++)
        if (better(&c[i], &c[0])) {
            cand t = c[0];
            c[0] = c[i];
            c[i] = t;
            sift_down(c, m, 0);
        }
    qsort(c, (size_t)m, sizeof *c, cmp_cand);
}

/* The sorted prefix grows in steps (x4) as a filter walks past its end. */
typedef struct {
    cand *c;
    int64_t n, sorted;
} order;

static void need_sorted(order *o, int64_t i) {
    if (i < o->sorted) return;
    int64_t m = o->sorted < 64 ? 64 : o->sorted * 4;
    if (m <= i) m = i + 1;
    if (m > o->n) m = o->n;
    sort_prefix(o->c, o->n, m);
    o->sorted = m == o->n || m >= o->n / 4 ? o->n : m;
}

/* ---- the filters ---- */

static int penalise(wk_sampler *s, int64_t n, const int32_t *history, int64_t nh) {
    const wk_sampler_opts *o = &s->o;
    if (o->repeat_penalty == 1 || o->repeat_last_n == 0 || nh <= 0) return 0;
    if (!history) return wk__err(WK_ERR_ARG, "wk_sampler_sample", "history is NULL with nh = %lld", (long long)nh);
    int64_t start = o->repeat_last_n < 0 || o->repeat_last_n >= nh ? 0 : nh - o->repeat_last_n;
    for (int64_t j = start; j < nh; j++)
        if (history[j] < 0 || history[j] >= n)
            return wk__err(WK_ERR_INDEX, "wk_sampler_sample", "history id %lld out of range for %lld logits",
                           (long long)history[j], (long long)n);
    /* llama.cpp's rule, once per distinct id: a positive logit is divided by
     * the penalty, any other multiplied, so both move away from being picked */
    for (int64_t j = start; j < nh; j++) {
        int32_t id = history[j];
        if (s->seen[id]) continue;
        s->seen[id] = 1;
        double *l = &s->c[id].logit;
        if (*l > 0) *l /= o->repeat_penalty;
        else *l *= o->repeat_penalty;
    }
    for (int64_t j = start; j < nh; j++) s->seen[history[j]] = 0;
    return 0;
}

/* Temperature and softmax over the first k candidates. */
static int64_t finish(wk_sampler *s, int64_t k, double max, const int32_t **ids, const double **probs) {
    double z = 0;
    for (int64_t i = 0; i < k; i++) {
        s->p[i] = exp((s->c[i].logit - max) / s->o.temperature);
        s->ids[i] = s->c[i].id;
        z += s->p[i];
    }
    for (int64_t i = 0; i < k; i++) s->p[i] /= z;
    *ids = s->ids;
    *probs = s->p;
    return k;
}

/* Greedy with no penalty, most decode steps: one pass over the logits
 * (the checks and the argmax), no candidate copy; the same answers and
 * errors as the general path. */
static int64_t greedy(wk_sampler *s, const float *logits, int64_t n, const int32_t **ids, const double **probs) {
    const char *op = "wk_sampler_sample";
    int64_t best = 0;
    for (int64_t i = 0; i < n; i++) {
        float l = logits[i];
        if (isnan(l) || l == INFINITY) {
            wk__err(WK_ERR_ARG, op, "logit %lld is %s (logits must be finite or -inf)", (long long)i,
                    isnan(l) ? "NaN" : "+inf");
            return -1;
        }
        if (l > logits[best]) best = i; /* strict: the lowest id of a tie */
    }
    if (logits[best] == -INFINITY) {
        wk__err(WK_ERR_ARG, op, "every logit is -inf");
        return -1;
    }
    s->ids[0] = (int32_t)best;
    s->p[0] = 1;
    *ids = s->ids;
    *probs = s->p;
    return 1;
}

int64_t wk__sampler_filter(wk_sampler *s, const float *logits, int64_t n, const int32_t *history, int64_t nh,
                           const int32_t **ids, const double **probs) {
    const char *op = "wk_sampler_sample";
    if (!s || !logits || n <= 0) {
        wk__err(WK_ERR_ARG, op, "%s (n = %lld)", !s ? "sampler is NULL" : !logits ? "logits are NULL" : "no logits",
                (long long)n);
        return -1;
    }
    if (!reserve(s, n)) {
        wk__err(WK_ERR_OOM, op, "no memory for %lld candidates", (long long)n);
        return -1;
    }
    const wk_sampler_opts *o = &s->o;
    if (o->temperature <= 0 && (o->repeat_penalty == 1 || o->repeat_last_n == 0 || nh <= 0))
        return greedy(s, logits, n, ids, probs);
    for (int64_t i = 0; i < n; i++) {
        float l = logits[i];
        if (isnan(l) || l == INFINITY) {
            wk__err(WK_ERR_ARG, op, "logit %lld is %s (logits must be finite or -inf)", (long long)i,
                    isnan(l) ? "NaN" : "+inf");
            return -1;
        }
        s->c[i].logit = l;
        s->c[i].id = (int32_t)i;
    }
    if (penalise(s, n, history, nh)) return -1;

    if (o->temperature <= 0) { /* greedy: strict > keeps the lowest id of a tie */
        int64_t best = 0;
        for (int64_t i = 1; i < n; i++)
            if (s->c[i].logit > s->c[best].logit) best = i;
        if (s->c[best].logit == -INFINITY) {
            wk__err(WK_ERR_ARG, op, "every logit is -inf");
            return -1;
        }
        s->ids[0] = (int32_t)best;
        s->p[0] = 1;
        *ids = s->ids;
        *probs = s->p;
        return 1;
    }

    /* -inf candidates can never be drawn: drop them first */
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (s->c[i].logit > -INFINITY) s->c[m++] = s->c[i];
    if (m == 0) {
        wk__err(WK_ERR_ARG, op, "every logit is -inf");
        return -1;
    }
    double max = -INFINITY;
    for (int64_t i = 0; i < m; i++)
        if (s->c[i].logit > max) max = s->c[i].logit;
    int64_t keep = o->top_k > 0 && o->top_k < m ? o->top_k : m;
    if (keep == m && !(o->top_p < 1) && !(o->min_p > 0)) {
        /* no filter can cut anything: the candidates stay in id order, and
         * the full sort (most of the time of a call) is skipped */
        return finish(s, m, max, ids, probs);
    }
    order ord = {s->c, m, 0};
    if (keep < m) {
        sort_prefix(s->c, m, keep);
        ord.n = keep; /* the rest is gone */
        ord.sorted = keep;
    }
    need_sorted(&ord, 0);

    if (o->top_p < 1) {
        /* nucleus over the top-k survivors at temperature 1: the shortest
         * prefix whose probability reaches top_p (at least one) */
        double z = 0;
        for (int64_t i = 0; i < keep; i++) z += exp(s->c[i].logit - max);
        double cum = 0;
        int64_t i = 0;
        while (i < keep) {
            need_sorted(&ord, i);
            cum += exp(s->c[i].logit - max) / z;
            i++;
            if (cum >= o->top_p) break;
        }
        keep = i;
    }
    if (o->min_p > 0) {
        /* p_i >= min_p * p_max; the normalisation cancels */
        int64_t i = 1;
        while (i < keep) {
            need_sorted(&ord, i);
            if (!(exp(s->c[i].logit - max) >= o->min_p)) break;
            i++;
        }
        keep = i;
    }
    if (keep > 1) need_sorted(&ord, keep - 1);
    return finish(s, keep, max, ids, probs);
}

int32_t wk_sampler_sample(wk_sampler *s, const float *logits, int64_t n, const int32_t *history, int64_t nh) {
    const int32_t *ids;
    const double *p;
    int64_t k = wk__sampler_filter(s, logits, n, history, nh, &ids, &p);
    if (k < 0) return -1;
    if (k == 1) return ids[0];
    double u = wk__sampler_uniform(s), acc = 0;
    for (int64_t i = 0; i < k; i++) {
        acc += p[i];
        if (u < acc) return ids[i];
    }
    return ids[k - 1]; /* u just under 1 past a rounded-down sum */
}
