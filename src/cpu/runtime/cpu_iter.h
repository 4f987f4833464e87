/* Parallel walk over a coalesced iterator: the flat range [0, numel) is cut
 * into pieces for the thread pool, and each piece is handed to `run` as
 * maximal runs along the innermost dim. */
#ifndef WICK_CPU_ITER_H
#define WICK_CPU_ITER_H
#include "tensor/layout.h"
#include "cpu/runtime/threadpool.h"

/* n elements starting at element offsets offs[k], stepping by strides[k]. */
typedef void (*wk_run_fn)(void *ctx, int64_t n, const int64_t *offs, const int64_t *strides);

/* Walk [begin, end) of the iterator's flat index space. */
void wk__iter_runs(const wk_iter *it, int64_t begin, int64_t end, wk_run_fn run, void *ctx);
/* Walk all of it, in parallel above the element threshold. */
void wk__iter_foreach(const wk_iter *it, wk_run_fn run, void *ctx);
/* Same with an explicit threshold: memory-bound ops (copies, fills, + - *)
 * gain nothing from a second core while their data sits in one core's L2,
 * so they go parallel later than transcendental ones. */
void wk__iter_foreach_min(const wk_iter *it, wk_run_fn run, void *ctx, int64_t min_parallel);
#define WK_PAR_MIN_CHEAP (4 * WK_PAR_MIN_ELEMS)

#endif
