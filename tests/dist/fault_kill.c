/* Fault: a rank killed in the middle of a large all_reduce (run by
 * killed_rank.py under mpirun -np 2). Rank 1 starts an asynchronous
 * all_reduce of 32 MiB and raise(SIGKILL)s itself while it runs; rank 0
 * keeps issuing the same all_reduce. The launcher must end the job (or our
 * polling sees MPI's error first and names the peer): never a hang. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "wick/dist.h"

/* End every rank (MPI_Abort); it returns only without MPI, where this
 * process is the whole job. */
static void abort_job(wk_comm *c, int code) {
    wk_comm_abort(c, code);
    exit(code);
}

int main(int argc, char **argv) {
    wk_comm *w = wk_comm_init_mpi(&argc, &argv, NULL);
    if (!w) {
        fprintf(stderr, "fault_kill: %s\n", wk_last_error());
        return 1;
    }
    int64_t shape[1] = {8 << 20}; /* 32 MiB of f32: the ring path, many messages */
    wk_tensor *x = wk_ones(shape, 1, WK_F32, wk_cpu());
    if (!x) return 1;
    if (wk_comm_rank(w) == 1) {
        wk_dist_work *pending = wk_all_reduce_async(w, x, WK_DIST_SUM);
        (void)pending;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        fprintf(stderr, "fault_kill: rank 1 kills itself mid all_reduce\n");
        raise(SIGKILL);
    }
    for (int i = 0; i < 1000; i++) {
        wk_tensor *y = wk_all_reduce(w, x, WK_DIST_SUM);
        if (!y) {
            fprintf(stderr, "fault_kill: rank %d: %s\n", wk_comm_rank(w), wk_last_error());
            abort_job(w, 3);
        }
        wk_tensor_free(y);
    }
    fprintf(stderr, "fault_kill: rank 0 finished 1000 all_reduces without rank 1\n");
    return 2;
}
