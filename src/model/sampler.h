/* Internals of the sampler (src/model/sampler.c) that the tests check
 * directly: which ids survive the filters and with what probability. */
#ifndef WICK_MODEL_SAMPLER_H
#define WICK_MODEL_SAMPLER_H
#include <stdint.h>
#include "wick/generate.h"

/* Runs every filter of wk_sampler_sample (repetition penalty, top-k, top-p,
 * min-p, temperature, softmax) without drawing. *ids and *probs point into
 * the sampler's buffers (valid until its next call): the survivors in
 * sampling order (logit descending, lower id first on ties; ascending ids
 * when no filter is on: top_k off, top_p >= 1, min_p <= 0) and their final
 * probabilities (summing to 1). Greedy (temperature <= 0) leaves the one
 * argmax with probability 1. Returns the count (>= 1), or -1 on error. */
int64_t wk__sampler_filter(wk_sampler *s, const float *logits, int64_t n, const int32_t *history, int64_t nh,
                           const int32_t **ids, const double **probs);

/* The sampler's PRNG (xoshiro256**, seeded through splitmix64): the next
 * double in [0, 1) with 53 random bits. Exposed so a test can pin the
 * stream: the same seed must give the same numbers on every machine. */
double wk__sampler_uniform(wk_sampler *s);

#endif
