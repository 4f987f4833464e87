/*
 * bench/dist — a data-parallel training step (wk_ddp, train.h): the same
 * global batch over 1 or N ranks.
 *
 *   mpirun --oversubscribe -np 2 build/bench/bench_dist_ddp [--quick]
 *       [--batch B] [--width W] [--steps S] [--threads T] [--bucket-mb M]
 *
 * Model: an f32 MLP  x (b, W/2) -> linear W/2->W -> relu -> linear W->W ->
 * relu -> linear W->10, mean cross-entropy, SGD (lr 0.01); default W 1024
 * (1.6 M parameters, 6.3 MiB of gradients), global batch B 64, split evenly
 * (rank r takes rows r*B/N ..): each rank's data are fixed random values
 * from a seed of its own.
 *
 * Rows (median over S steps, default 20, after 2 warm-up steps, the rows
 * taking turns step by step; every row ends with the optimizer step; ranks
 * start each step together, after a barrier outside the timed region):
 *   local       forward + backward + step on this rank's shard, no
 *               communication: the compute a rank does
 *   ddp         the same with wk_ddp_backward (bucketed gradient all_reduce
 *               overlapping backward)
 *   naive       wk_backward, then one blocking wk_all_reduce(avg) per
 *               gradient afterwards (no overlap, no buckets): what wk_ddp
 *               improves on
 * "comm" = row - local: the time communication adds. Shown: the slowest
 * rank. Compare a 1-rank run (local = the whole batch) with an N-rank run:
 * bench/dist/run.sh runs both (1 x 2 threads, 2 x 1 thread).
 *
 * wk_ddp is helper "ddp"'s (wip/ddp); in a build without it (CMake finds no
 * definition of wk_ddp_new in src/train) the ddp row says n/a.
 * --quick: W 128, batch 16, 3 steps (CI's smoke run, about a second).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick/dist.h"
#include "wick/train.h"
#include "wick/wick.h"

#define NP 6

static struct {
    wk_comm *c;
    int rank, size;
    int64_t width, batch, local;
    int steps;
    double bucket_mb;
    wk_linear l1, l2, l3;
    wk_tensor *params[NP];
    wk_tensor *x, *y;
    wk_optimizer *opt;
    wk_grad_store *gs;
#ifdef WICK_BENCH_HAVE_DDP
    wk_ddp *ddp;
#endif
} g = {.width = 1024, .batch = 64, .steps = 20};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_dist_ddp: rank %d: %s: %s\n", g.rank, what, wk_last_error());
    if (g.size > 1) wk_comm_abort(g.c, 1); /* returns for a size-1 world */
    exit(1);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double max_over_ranks(double v) {
    if (g.size == 1) return v;
    wk_tensor *t = wk_from_host(&v, sizeof v, (int64_t[]){1}, 1, WK_F64, wk_cpu());
    wk_tensor *m = t ? wk_all_reduce(g.c, t, WK_DIST_MAX) : NULL;
    double out = -1;
    if (!m || wk_item(m, &out) != WK_OK) die("max over ranks");
    wk_tensor_free(m);
    wk_tensor_free(t);
    return out;
}

static wk_tensor *loss_of(void) {
    wk_tensor *h = wk_linear_forward(&g.l1, g.x);
    wk_tensor *a = wk_relu(h);
    wk_tensor_free(h);
    h = wk_linear_forward(&g.l2, a);
    wk_tensor_free(a);
    a = wk_relu(h);
    wk_tensor_free(h);
    h = wk_linear_forward(&g.l3, a);
    wk_tensor_free(a);
    wk_tensor *l = h ? wk_cross_entropy(h, g.y, NULL) : NULL;
    wk_tensor_free(h);
    return l;
}

enum { ROW_LOCAL, ROW_DDP, ROW_NAIVE, ROW_N };
static const char *const row_names[ROW_N] = {"local", "ddp", "naive"};

static wk_status step(int row) {
    wk_scope_begin();
    wk_grad_store_zero(g.gs);
    wk_tensor *l = loss_of();
    wk_status st = l ? WK_OK : wk_last_status();
    if (st == WK_OK) {
        if (row == ROW_DDP) {
#ifdef WICK_BENCH_HAVE_DDP
            st = wk_ddp_backward(g.ddp, l, g.gs, NULL);
#else
            st = WK_ERR_NOT_COMPILED;
#endif
        } else {
            st = wk_backward(l, g.gs, NULL);
        }
    }
    for (int i = 0; st == WK_OK && row == ROW_NAIVE && g.size > 1 && i < NP; i++) {
        wk_tensor *r = wk_all_reduce(g.c, wk_grad(g.gs, g.params[i]), WK_DIST_AVG);
        st = r ? wk_grad_set(g.gs, g.params[i], r) : wk_last_status();
        wk_tensor_free(r);
    }
    if (st == WK_OK) st = wk_optimizer_step(g.opt, g.gs);
    wk_scope_end();
    return st;
}

/* Median step time of each row (slowest rank; -1 where the row cannot
 * run). The rows take turns step by step, so a change in the machine's load
 * hits them alike. */
static void time_rows(double *med) {
    bool run[ROW_N];
    double *t[ROW_N];
    for (int r = 0; r < ROW_N; r++) {
        run[r] = true;
#ifndef WICK_BENCH_HAVE_DDP
        run[r] = r != ROW_DDP;
#endif
        t[r] = malloc(sizeof *t[r] * (size_t)g.steps);
        if (!t[r]) die("out of memory");
    }
    for (int s = -2; s < g.steps; s++)
        for (int r = 0; r < ROW_N; r++) {
            if (!run[r]) continue;
            if (g.size > 1 && wk_barrier(g.c) != WK_OK) die("barrier");
            double t0 = now();
            if (step(r) != WK_OK) die(row_names[r]);
            if (s >= 0) t[r][s] = now() - t0;
        }
    for (int r = 0; r < ROW_N; r++) {
        qsort(t[r], (size_t)g.steps, sizeof *t[r], cmp_d);
        double m = g.steps % 2 ? t[r][g.steps / 2] : 0.5 * (t[r][g.steps / 2 - 1] + t[r][g.steps / 2]);
        med[r] = run[r] ? max_over_ranks(m) : -1;
        free(t[r]);
    }
}

static int usage(void) {
    fprintf(stderr, "usage: bench_dist_ddp [--quick] [--batch B] [--width W] [--steps S] [--threads T] [--bucket-mb M]\n"
                    "run it under mpirun --oversubscribe -np N for N ranks\n");
    return 2;
}

int main(int argc, char **argv) {
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) g.width = 128, g.batch = 16, g.steps = 3;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) g.batch = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--width") && i + 1 < argc) g.width = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) g.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bucket-mb") && i + 1 < argc) g.bucket_mb = atof(argv[++i]);
        else return usage();
    }
    if (g.batch < 1 || g.width < 2 || g.steps < 1 || threads < 0) return usage();
    if (threads && wk_set_num_threads(threads) != WK_OK) die("wk_set_num_threads");
    g.c = wk_dist_has_mpi() ? wk_comm_init_mpi(&argc, &argv, NULL) : wk_comm_self(NULL);
    if (!g.c) die("communicator");
    g.rank = wk_comm_rank(g.c);
    g.size = wk_comm_size(g.c);
    if (g.batch % g.size) {
        if (g.rank == 0) fprintf(stderr, "bench_dist_ddp: batch %lld does not split over %d ranks\n", (long long)g.batch, g.size);
        wk_comm_free(g.c);
        return 2;
    }
    g.local = g.batch / g.size;

    wk_device *cpu = wk_cpu();
    int64_t in = g.width / 2;
    if (wk_device_set_seed(cpu, 1234) != WK_OK || wk_linear_init(&g.l1, in, g.width, true, WK_F32, cpu) != WK_OK ||
        wk_linear_init(&g.l2, g.width, g.width, true, WK_F32, cpu) != WK_OK ||
        wk_linear_init(&g.l3, g.width, 10, true, WK_F32, cpu) != WK_OK)
        die("model");
    int n = wk_linear_params(&g.l1, g.params, NP);
    n += wk_linear_params(&g.l2, g.params + n, NP - n);
    n += wk_linear_params(&g.l3, g.params + n, NP - n);
    if (n != NP) die("model parameters");
    /* this rank's shard: its own seed, so shards differ */
    if (wk_device_set_seed(cpu, 99 + (uint64_t)g.rank) != WK_OK) die("seed");
    g.x = wk_randn((int64_t[]){g.local, in}, 2, 0.0, 1.0, WK_F32, cpu);
    wk_tensor *u = wk_rand((int64_t[]){g.local}, 1, 0.0, 10.0, WK_F32, cpu);
    g.y = u ? wk_to_dtype(u, WK_I64) : NULL;
    wk_tensor_free(u);
    if (!g.x || !g.y) die("data");
    g.opt = wk_optimizer_new(&(wk_optim_config){.kind = WK_SGD, .lr = 0.01}, g.params, NP);
    g.gs = wk_grad_store_new();
    if (!g.opt || !g.gs) die("optimizer");
#ifdef WICK_BENCH_HAVE_DDP
    g.ddp = wk_ddp_new(g.c, g.params, NP, &(wk_ddp_opts){.bucket_mb = g.bucket_mb});
    if (!g.ddp) die("wk_ddp_new");
#endif
    int64_t np = 0;
    for (int i = 0; i < NP; i++) np += wk_numel(g.params[i]);
    if (g.rank == 0) {
        printf("bench_dist_ddp: MLP %lld-%lld-%lld-10 f32 (%.2f M parameters, %.1f MiB of gradients), SGD\n",
               (long long)in, (long long)g.width, (long long)g.width, (double)np / 1e6, (double)np * 4 / 1048576.0);
        printf("global batch %lld = %d rank%s x %lld, %d thread%s per rank, median of %d steps (slowest rank)\n",
               (long long)g.batch, g.size, g.size > 1 ? "s" : "", (long long)g.local, wk_num_threads(),
               wk_num_threads() > 1 ? "s" : "", g.steps);
        printf("%-7s %10s %10s %12s\n", "row", "step ms", "comm ms", "samples/s");
    }
    double t[ROW_N];
    time_rows(t);
    if (g.rank == 0)
        for (int r = 0; r < ROW_N; r++) {
            if (t[r] < 0) printf("%-7s %10s %10s %12s  (wk_ddp is not in this build)\n", row_names[r], "n/a", "n/a", "n/a");
            else
                printf("%-7s %10.2f %10.2f %12.0f\n", row_names[r], t[r] * 1e3, r ? (t[r] - t[0]) * 1e3 : 0.0,
                       (double)g.batch / t[r]);
        }
#ifdef WICK_BENCH_HAVE_DDP
    wk_ddp_free(g.ddp);
#endif
    wk_grad_store_free(g.gs);
    wk_optimizer_free(g.opt);
    wk_tensor_free(g.x);
    wk_tensor_free(g.y);
    wk_linear_free(&g.l1);
    wk_linear_free(&g.l2);
    wk_linear_free(&g.l3);
    wk_comm_free(g.c);
    return 0;
}
