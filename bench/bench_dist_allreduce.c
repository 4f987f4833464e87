/*
 * bench/dist — wick's collectives beside Open MPI's own, on the same buffers
 * in the same run (osu_allreduce-style).
 *
 *   mpirun --oversubscribe -np 2 build/bench/bench_dist_allreduce [--quick]
 *       [--min-bytes B] [--max-bytes B] [--step 2|4] [--rounds R] [--ops LIST]
 *
 * Rows, f32 buffers, 4 KiB .. 64 MiB by powers of 4 (--step 2: of 2):
 *   all_reduce  wk_all_reduce(c, x, WK_DIST_SUM)  vs MPI_Allreduce(sum, out of place)
 *   all_gather  wk_all_gather(c, x, 0)            vs MPI_Allgather
 *   broadcast   wk_broadcast(c, x, 0)             vs MPI_Bcast (root 0)
 * ("bytes" is the result's size, as nccl-tests counts it: an all_gather row
 * of B bytes gathers B/N from each rank.) wick's input is a wk_from_blob
 * view of the very buffer MPI sends from; wick's call returns a new tensor
 * (the API's cost: allocating, packing and the result are part of what is
 * timed), MPI writes into a buffer allocated once.
 *
 * Timing: per size, 2 warm-up calls each, then R rounds (default 5), each
 * round running wick then MPI for k iterations (k gives ~8 MiB of traffic per
 * round, 4 .. 1000 iterations), so both see the same machine state; every
 * iteration is timed on its own after a barrier-free start (as osu does: the
 * ring keeps ranks in step). Per rank: the mean, the median and the best of
 * all its iterations; the table shows the slowest rank's (max over ranks)
 * values. On a loaded machine the mean and median of the larger sizes carry
 * the time a rank waited for a core; the best is the transfer itself.
 *   algbw = bytes / t;  busbw = algbw * 2(N-1)/N (all_reduce), (N-1)/N
 *   (all_gather), 1 (broadcast) — the link bandwidth a ring needs.
 *   wick/MPI = wick median / MPI median (above 1: wick is slower); best:
 *   the same for the best times.
 * Each size's results are checked (integer-valued floats, so exact) against
 * the expected sum / gather / root's values; a mismatch exits 1.
 *
 * Without mpirun it is MPI's singleton (size 1: collectives are copies);
 * without MPI compiled in it runs wick's self communicator and MPI columns
 * say n/a. --quick: 4 KiB .. 1 MiB by powers of 16, 2 rounds (a second).
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
#include "wick/wick.h"
#ifdef WICK_HAVE_MPI
#include <mpi.h>

/* End every rank (MPI_Abort); it returns only without MPI, where this
 * process is the whole job. */
static void abort_job(wk_comm *c, int code) {
    wk_comm_abort(c, code);
    exit(code);
}
#endif

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_BCAST, OP_N };
static const char *const op_names[OP_N] = {"all_reduce", "all_gather", "broadcast"};

static struct {
    int quick, rounds, step;
    size_t min_bytes, max_bytes;
    bool ops[OP_N];
    bool mpi; /* the MPI column runs */
    wk_comm *c;
    int rank, size;
} g = {.rounds = 5, .step = 4, .min_bytes = 4096, .max_bytes = 64u << 20, .ops = {true, true, true}};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Max over ranks of v (bookkeeping through wick itself, so it works in
 * every build; it runs outside the timed region). */
static double max_over_ranks(double v) {
    if (g.size == 1) return v;
    wk_tensor *t = wk_from_host(&v, sizeof v, (int64_t[]){1}, 1, WK_F64, wk_cpu());
    wk_tensor *m = t ? wk_all_reduce(g.c, t, WK_DIST_MAX) : NULL;
    double out = -1;
    if (!m || wk_item(m, &out) != WK_OK) {
        fprintf(stderr, "bench_dist_allreduce: rank %d: %s\n", g.rank, wk_last_error());
        abort_job(g.c, 1);
    }
    wk_tensor_free(m);
    wk_tensor_free(t);
    return out;
}

/* One collective on n f32 elements of result (send: n / size per rank for
 * all_gather). The buffers are shared by wick and MPI. */
typedef struct bufs {
    float *send, *recv;
    size_t n, n_send;
    wk_tensor *x; /* blob view of send */
} bufs;

static bool run_wick(int op, bufs *b, wk_tensor **keep) {
    wk_tensor *r = NULL;
    switch (op) {
    case OP_ALLREDUCE: r = wk_all_reduce(g.c, b->x, WK_DIST_SUM); break;
    case OP_ALLGATHER: r = wk_all_gather(g.c, b->x, 0); break;
    default: r = wk_broadcast(g.c, b->x, 0); break;
    }
    if (!r) return false;
    if (keep) *keep = r;
    else wk_tensor_free(r);
    return true;
}

static bool run_mpi(int op, bufs *b) {
#ifdef WICK_HAVE_MPI
    int rc;
    switch (op) {
    case OP_ALLREDUCE: rc = MPI_Allreduce(b->send, b->recv, (int)b->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case OP_ALLGATHER:
        rc = MPI_Allgather(b->send, (int)b->n_send, MPI_FLOAT, b->recv, (int)b->n_send, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    default: rc = MPI_Bcast(b->send, (int)b->n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    }
    return rc == MPI_SUCCESS;
#else
    (void)op, (void)b;
    return false;
#endif
}

/* Expected element i of the result: rank r's send buffer holds (r+1)*(i%97+1). */
static float expect(int op, size_t i, size_t n_send) {
    float v = (float)(i % 97 + 1);
    switch (op) {
    case OP_ALLREDUCE: return v * (float)(g.size * (g.size + 1) / 2);
    case OP_ALLGATHER: return (float)(i / n_send + 1) * (float)((i % n_send) % 97 + 1);
    default: return v; /* root 0 */
    }
}

static void fill(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (float)(g.rank + 1) * (float)(i % 97 + 1);
}

static bool check(int op, const float *got, size_t n, size_t n_send, const char *who, size_t bytes) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != expect(op, i, n_send)) {
            fprintf(stderr, "bench_dist_allreduce: rank %d: %s %s at %zu bytes: element %zu is %g, expected %g\n", g.rank,
                    who, op_names[op], bytes, i, (double)got[i], (double)expect(op, i, n_send));
            return false;
        }
    return true;
}

/* Iterations per round: ~8 MiB of result per round, 4 .. 1000 (quick: 2 .. 50). */
static int iters_for(size_t bytes) {
    size_t k = (8u << 20) / bytes, lo = g.quick ? 2 : 4;
    int hi = g.quick ? 50 : 1000;
    return k < lo ? (int)lo : k > (size_t)hi ? hi : (int)k;
}

typedef struct stat3 { double mean, median, best; } stat3;

static stat3 summarise(double *t, int n) {
    stat3 s = {0, 0, 0};
    for (int i = 0; i < n; i++) s.mean += t[i];
    s.mean /= n;
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    s.best = max_over_ranks(t[0]);
    s.mean = max_over_ranks(s.mean);
    s.median = max_over_ranks(s.median);
    return s;
}

static int bench_op(int op) {
    int N = g.size;
    double busf = op == OP_ALLREDUCE ? 2.0 * (N - 1) / N : op == OP_ALLGATHER ? (double)(N - 1) / N : 1.0;
    if (g.rank == 0) {
        printf("\n%s, f32, %d rank%s: time per call (us, slowest rank), bandwidth (GB/s = 1e9 B/s)\n", op_names[op], N,
               N > 1 ? "s" : "");
        printf("%9s %5s | %9s %8s %8s %6s %6s | %9s %8s %8s %6s | %8s %6s\n", "bytes", "iters", "wick mean", "median",
               "best", "algbw", "busbw", "MPI mean", "median", "best", "busbw", "wick/MPI", "best");
    }
    int bad = 0;
    for (size_t bytes = g.min_bytes; bytes <= g.max_bytes; bytes *= (size_t)g.step) {
        bufs b = {0};
        b.n = bytes / sizeof(float);
        b.n_send = op == OP_ALLGATHER ? b.n / (size_t)N : b.n;
        if (b.n_send == 0) continue;
        b.n = op == OP_ALLGATHER ? b.n_send * (size_t)N : b.n;
        size_t rbytes = b.n * sizeof(float);
        b.send = malloc(b.n_send * sizeof(float));
        b.recv = malloc(rbytes);
        if (!b.send || !b.recv) {
            fprintf(stderr, "bench_dist_allreduce: out of memory at %zu bytes\n", rbytes);
            free(b.send), free(b.recv);
            return 1;
        }
        fill(b.send, b.n_send);
        memset(b.recv, 0, rbytes);
        b.x = wk_from_blob(b.send, b.n_send * sizeof(float), (int64_t[]){(int64_t)b.n_send}, 1, NULL, WK_F32, wk_cpu(),
                           NULL, NULL, 0);
        if (!b.x) {
            fprintf(stderr, "bench_dist_allreduce: %s\n", wk_last_error());
            return 1;
        }
        /* warm-up + correctness, wick then MPI */
        wk_tensor *res = NULL;
        bool ok = run_wick(op, &b, &res);
        float *got = ok ? malloc(rbytes) : NULL;
        ok = ok && got && wk_to_host(res, got, rbytes) == WK_OK;
        ok = ok && check(op, got, b.n, b.n_send, "wick", rbytes);
        wk_tensor_free(res);
        free(got);
        ok = ok && run_wick(op, &b, NULL);
        if (!ok) {
            fprintf(stderr, "bench_dist_allreduce: rank %d: wick %s failed at %zu bytes: %s\n", g.rank, op_names[op],
                    rbytes, wk_last_error());
            abort_job(g.c, 1);
        }
        if (g.mpi) {
            ok = run_mpi(op, &b) && check(op, op == OP_BCAST ? b.send : b.recv, b.n, b.n_send, "MPI", rbytes) &&
                 run_mpi(op, &b);
            if (!ok) bad = 1;
        }
        int k = iters_for(rbytes), total = k * g.rounds;
        double *tw = malloc(sizeof *tw * (size_t)total), *tm = malloc(sizeof *tm * (size_t)total);
        if (!tw || !tm) return 1;
        for (int r = 0; r < g.rounds; r++) {
            for (int i = 0; i < k; i++) {
                double t0 = now();
                if (!run_wick(op, &b, NULL)) {
                    fprintf(stderr, "bench_dist_allreduce: rank %d: %s\n", g.rank, wk_last_error());
                    abort_job(g.c, 1);
                }
                tw[r * k + i] = now() - t0;
            }
            for (int i = 0; g.mpi && i < k; i++) {
                double t0 = now();
                run_mpi(op, &b);
                tm[r * k + i] = now() - t0;
            }
        }
        stat3 sw = summarise(tw, total), sm = {0, 0, 0};
        if (g.mpi) sm = summarise(tm, total);
        if (g.rank == 0) {
            double alg = (double)rbytes / sw.median / 1e9;
            printf("%9zu %5d | %9.1f %8.1f %8.1f %6.2f %6.2f |", rbytes, k, sw.mean * 1e6, sw.median * 1e6, sw.best * 1e6,
                   alg, alg * busf);
            if (g.mpi)
                printf(" %9.1f %8.1f %8.1f %6.2f | %8.2f %6.2f\n", sm.mean * 1e6, sm.median * 1e6, sm.best * 1e6,
                       (double)rbytes / sm.median / 1e9 * busf, sw.median / sm.median, sw.best / sm.best);
            else
                printf(" %9s %8s %8s %6s | %8s %6s\n", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a");
            fflush(stdout);
        }
        free(tw), free(tm);
        wk_tensor_free(b.x);
        free(b.send), free(b.recv);
    }
    return bad;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_dist_allreduce [--quick] [--min-bytes B] [--max-bytes B] [--step 2|4] [--rounds R]\n"
                    "       [--ops all_reduce,all_gather,broadcast]\n"
                    "run it under mpirun --oversubscribe -np N for N ranks\n");
    return 2;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            g.quick = 1;
            g.rounds = 2;
            g.step = 16;
            g.max_bytes = 1u << 20;
        } else if (!strcmp(argv[i], "--min-bytes") && i + 1 < argc) {
            g.min_bytes = (size_t)atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            g.max_bytes = (size_t)atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--step") && i + 1 < argc) {
            g.step = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            g.rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            const char *l = argv[++i];
            for (int o = 0; o < OP_N; o++) g.ops[o] = strstr(l, op_names[o]) != NULL;
        } else {
            return usage();
        }
    }
    if (g.step < 2 || g.rounds < 1 || g.min_bytes < 4 || g.max_bytes < g.min_bytes) return usage();
    g.c = wk_dist_has_mpi() ? wk_comm_init_mpi(&argc, &argv, NULL) : wk_comm_self(NULL);
    if (!g.c) {
        fprintf(stderr, "bench_dist_allreduce: %s\n", wk_last_error());
        return 1;
    }
    g.mpi = wk_comm_backend_of(g.c) == WK_COMM_MPI;
    g.rank = wk_comm_rank(g.c);
    g.size = wk_comm_size(g.c);
    if (g.rank == 0)
        printf("bench_dist_allreduce: %d rank%s (%s), wick %d thread%s per rank, %d rounds%s\n", g.size,
               g.size > 1 ? "s" : "", g.mpi ? "MPI" : "self, no MPI column", wk_num_threads(),
               wk_num_threads() > 1 ? "s" : "", g.rounds, g.quick ? " (quick)" : "");
    int bad = 0;
    for (int o = 0; o < OP_N; o++)
        if (g.ops[o]) bad |= bench_op(o);
    wk_comm_free(g.c);
    return bad;
}
