/* The CPU thread pool. One process-wide pool of wk_num_threads()-1 workers;
 * the calling thread takes part in every parallel region. */
#ifndef WICK_CPU_THREADPOOL_H
#define WICK_CPU_THREADPOOL_H
#include <stdint.h>

/* Called for [begin, end) of the range; tid in [0, nthreads). */
typedef void (*wk_range_fn)(void *ctx, int64_t begin, int64_t end, int tid);

/* Split [0, n) into at most wk_num_threads() contiguous pieces, aligned to
 * `grain` (except the last), and run fn on each; returns when all are done.
 * If n < min_parallel (elements) or only one thread is configured, fn runs
 * once on the calling thread with [0, n). Nested calls from inside fn run
 * serially on the calling thread. Never fails (falls back to serial). */
void wk__parallel_for(int64_t n, int64_t grain, int64_t min_parallel, wk_range_fn fn, void *ctx);

/* Threshold below which elementwise ops stay on the calling thread. */
#define WK_PAR_MIN_ELEMS (1 << 16)

#endif
