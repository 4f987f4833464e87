/* Pipeline parallel, the loading side: which layers this rank holds
 * (a contiguous range, the split as even as it can be: the first
 * n_layers % ranks ranks take one more), and the agreement at the end of
 * wk_lm_load that every rank loaded its part (so that one rank's failure,
 * a tensor missing from its range, fails every rank's load at once
 * instead of leaving the others waiting in their first forward). */
#include "model/lm_internal.h"
#include "wick/dist.h"
#include "base/error.h"
#include <stdlib.h>

static const char *OP = "wk_lm_load";

wk_status wk__lm_pp_setup(wk_lm *m, const wk_lm_load_opts *o, const char *path) {
    /* (wk_lm_load refused a `parallel` that is neither kind) */
    if (!o->comm) return WK_OK;
    int size = wk_comm_size(o->comm), rank = wk_comm_rank(o->comm);
    if (o->parallel != WK_LM_PIPELINE_PARALLEL || size == 1) return WK_OK;
    if (!wk_comm_ok(o->comm)) return wk__err(WK_ERR_COMM, OP, "the communicator is broken by an earlier error");
    int64_t L = m->cfg.n_layers;
    if (L < size)
        return wk__err(WK_ERR_ARG, OP,
                       "%s: %lld layers cannot be split over %d pipeline ranks (each needs at least one)", path,
                       (long long)L, size);
    wk__lm_pp *pp = calloc(1, sizeof *pp);
    if (!pp) return wk__err(WK_ERR_OOM, OP, "cannot allocate the pipeline state");
    int64_t base = L / size, extra = L % size;
    pp->comm = o->comm;
    pp->rank = rank;
    pp->size = size;
    pp->l0 = rank * base + (rank < extra ? rank : extra);
    pp->l1 = pp->l0 + base + (rank < extra ? 1 : 0);
    pp->microbatch = o->pp_microbatch > 0 ? o->pp_microbatch : 32;
    m->pp = pp;
    return WK_OK;
}

wk_status wk__lm_pp_agree(const wk_lm *m, wk_status st) {
    /* the highest failing rank + 1, or 0: every rank learns whether any failed */
    int32_t mine = st == WK_OK ? 0 : m->pp->rank + 1;
    int64_t shape[1] = {1};
    wk_tensor *t = wk_from_host(&mine, sizeof mine, shape, 1, WK_I32, wk_cpu());
    wk_tensor *r = t ? wk_all_reduce(m->pp->comm, t, WK_DIST_MAX) : NULL;
    wk_tensor_free(t);
    int32_t worst = 0;
    wk_status rs = r ? wk_to_host(r, &worst, sizeof worst) : wk_last_status();
    wk_tensor_free(r);
    if (st != WK_OK) return st; /* this rank's own error, its message kept */
    if (rs != WK_OK) return rs;
    if (worst > 0)
        return wk__err(WK_ERR_ARG, OP, "pipeline rank %d of %d failed to load its layers (see its error)", worst - 1,
                       m->pp->size);
    return WK_OK;
}
