/* Fault: a rank that never arrives. Under mpirun -np 2 with a 1 s timeout,
 * rank 1 sleeps through an all_reduce that rank 0 issues; rank 0 must get
 * WK_ERR_COMM within about 1-2 s naming the collective and both ranks, the
 * communicator must then refuse at once, and both processes must exit
 * (MPI_Finalize after a broken communicator must not hang). Exit 0 on
 * success, 1 on a failed check, 77 (skip) with fewer than 2 ranks. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wick/dist.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "fault_timeout: rank 0: " __VA_ARGS__);     \
            fprintf(stderr, "\n");                                      \
            bad = 1;                                                    \
        }                                                               \
    } while (0)

int main(int argc, char **argv) {
    wk_comm *w = wk_comm_init_mpi(&argc, &argv, &(wk_comm_opts){.timeout_s = 1.0});
    if (!w) {
        fprintf(stderr, "fault_timeout: %s\n", wk_last_error());
        return 1;
    }
    if (wk_comm_size(w) != 2) {
        printf("fault_timeout: needs exactly 2 ranks (mpirun -np 2), skipped\n");
        wk_comm_free(w);
        return 77;
    }
    int bad = 0;
    int64_t shape[1] = {1 << 20}; /* 4 MiB: the ring path, rendezvous-sized sends left pending */
    wk_tensor *x = wk_ones(shape, 1, WK_F32, wk_cpu());
    if (wk_comm_rank(w) == 1) {
        sleep(2); /* skips the all_reduce, past rank 0's 1 s timeout */
    } else {
        double t0 = now();
        wk_tensor *y = wk_all_reduce(w, x, WK_DIST_SUM);
        double dt = now() - t0;
        const char *msg = wk_last_error();
        printf("rank 0: after %.2f s: %s\n", dt, msg);
        CHECK(!y, "the all_reduce succeeded without rank 1");
        CHECK(wk_last_status() == WK_ERR_COMM, "status %d, not WK_ERR_COMM", (int)wk_last_status());
        CHECK(dt >= 0.9 && dt <= 2.5, "the timeout took %.2f s (want about 1 s)", dt);
        CHECK(strstr(msg, "wk_all_reduce") && strstr(msg, "rank 0") && strstr(msg, "rank 1"),
              "the message should name wk_all_reduce, rank 0 and rank 1: %s", msg);
        CHECK(!wk_comm_ok(w), "the communicator is still ok after a timeout");
        wk_clear_error();
        /* later calls fail at once */
        t0 = now();
        wk_status st = wk_barrier(w);
        wk_tensor *z = wk_all_reduce(w, x, WK_DIST_SUM);
        dt = now() - t0;
        CHECK(st == WK_ERR_COMM && !z && wk_last_status() == WK_ERR_COMM, "a later call did not fail with WK_ERR_COMM");
        CHECK(dt < 0.1, "a later call took %.2f s to fail", dt);
        CHECK(strstr(wk_last_error(), "broken") != NULL, "the later error should say the communicator is broken: %s",
              wk_last_error());
        wk_dist_work *a = wk_all_gather_async(w, x, 0); /* refused at issue: no handle */
        CHECK(!a && wk_last_status() == WK_ERR_COMM, "an async call on a broken communicator did not fail");
        wk_clear_error();
    }
    int me = wk_comm_rank(w);
    wk_tensor_free(x);
    wk_comm_free(w); /* MPI_Finalize at exit: must not hang on rank 0's dead requests */
    if (!bad) printf("rank %d: ok\n", me);
    return bad;
}
