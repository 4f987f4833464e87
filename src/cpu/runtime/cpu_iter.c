#include "cpu/runtime/cpu_iter.h"
#include "cpu/runtime/threadpool.h"

void wk__iter_runs(const wk_iter *it, int64_t begin, int64_t end, wk_run_fn run, void *ctx) {
    int64_t inner = it->shape[it->rank - 1];
    if (inner == 0 || begin >= end) return;
    int64_t strides[WK_ITER_MAX_OPS], offs[WK_ITER_MAX_OPS];
    for (int k = 0; k < it->nops; k++) strides[k] = it->stride[k][it->rank - 1];
    int64_t pos = begin;
    while (pos < end) {
        int64_t outer = pos / inner, j = pos % inner;
        int64_t n = inner - j;
        if (n > end - pos) n = end - pos;
        wk__iter_offsets(it, outer, offs);
        for (int k = 0; k < it->nops; k++) offs[k] += j * strides[k];
        run(ctx, n, offs, strides);
        pos += n;
    }
}

typedef struct {
    const wk_iter *it;
    wk_run_fn run;
    void *ctx;
} foreach_ctx;

static void foreach_piece(void *p, int64_t b, int64_t e, int tid) {
    (void)tid;
    foreach_ctx *c = p;
    wk__iter_runs(c->it, b, e, c->run, c->ctx);
}

void wk__iter_foreach_min(const wk_iter *it, wk_run_fn run, void *ctx, int64_t min_parallel) {
    int64_t n = 1;
    for (int i = 0; i < it->rank; i++) n *= it->shape[i];
    foreach_ctx c = {it, run, ctx};
    wk__parallel_for(n, 1024, min_parallel, foreach_piece, &c);
}

void wk__iter_foreach(const wk_iter *it, wk_run_fn run, void *ctx) {
    wk__iter_foreach_min(it, run, ctx, WK_PAR_MIN_ELEMS);
}
