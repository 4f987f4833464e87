/* What ddp.c shares with ddp_checkpoint.c and the tests: the parameters a
 * wk_ddp holds and counters that show whether the buckets' all_reduces
 * started while backward was still running (the overlap). */
#ifndef WICK_TRAIN_DDP_INTERNAL_H
#define WICK_TRAIN_DDP_INTERNAL_H
#include <stdint.h>
#include "wick/train.h"

typedef struct wk__ddp_stats {
    int64_t buckets;          /* all_reduces started, over every wk_ddp_backward so far */
    int64_t started_in_pass;  /* ... of which from the backward hook, before the pass ended */
    int64_t done_in_pass;     /* ... of which had already completed when the pass ended (overlap seen) */
} wk__ddp_stats;

void wk__ddp_get_stats(const wk_ddp *d, wk__ddp_stats *s);
int  wk__ddp_bucket_count(const wk_ddp *d);
/* The parameters (borrowed), *n their count. */
wk_tensor *const *wk__ddp_params(const wk_ddp *d, int *n);

#endif
