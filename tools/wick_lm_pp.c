/* `wick generate --pp N` under `mpirun -np N`: the MPI world as the
 * model's pipeline (wk_lm_load_opts.comm, WK_LM_PIPELINE_PARALLEL). Every
 * rank loads its layers and runs the same generation in step (the logits
 * are the same on every rank, so seeded samplers pick the same tokens);
 * only rank 0 prints the text and the timings. */
#include <stdio.h>
#include "tools/wick_cli.h"
#include "tools/wick_lm_args.h"
#include "wick/dist.h"

int wk__cli_pp_attach(wk__cli_lm_args *a, wk_lm_load_opts *lo) {
    if (!wk_dist_has_mpi()) return wk__cli_lm_fail(a, "--pp needs MPI, and this build has none");
    if (!(a->comm = wk_comm_init_mpi(NULL, NULL, NULL))) return wk__cli_fail(a->cmd);
    a->rank = wk_comm_rank(a->comm);
    int size = wk_comm_size(a->comm);
    if (size != a->pp) {
        /* every rank sees the same sizes: rank 0 alone says so */
        if (a->rank == 0)
            wk__cli_lm_fail(a, "--pp %lld but the job has %d rank%s (run: mpirun -np %lld wick %s --pp %lld ...)",
                            (long long)a->pp, size, size == 1 ? "" : "s", (long long)a->pp, a->cmd, (long long)a->pp);
        wk__cli_lm_done(a);
        return 1;
    }
    lo->comm = a->comm;
    lo->parallel = WK_LM_PIPELINE_PARALLEL;
    return 0;
}
