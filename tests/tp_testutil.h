/* What the tensor-parallel tests (tests/test_mpi_tp*.c) share: the world
 * communicator, scratch checkpoints every rank reads, and comparisons of
 * logits between the TP model and the whole one. Static functions: each
 * test program includes this once. */
#ifndef WICK_TP_TESTUTIL_H
#define WICK_TP_TESTUTIL_H
#include <math.h>
#include <unistd.h>
#include "wick/dist.h"
#include "wick/lm.h"
#include "llama_testutil.h"

static wk_comm *g_world;
static int g_rank, g_size;
static long long g_job; /* rank 0's pid: names the scratch directories every rank reads */

__attribute__((unused)) static bool run(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) print_message("command failed (%d): %s\n", rc, cmd);
    return rc == 0;
}

/* Rank 0 writes the tiny checkpoint of arch with kv KV heads; every rank
 * then gets its directory in dir. */
__attribute__((unused)) static void tiny_dir(const char *arch, int kv, char *dir, size_t cap) {
    char name[128], cmd[2048];
    snprintf(name, sizeof name, "tp_%s_kv%d_%lld", arch, kv, g_job);
    lt_tmp_path(dir, cap, name);
    int ok = 1;
    if (g_rank == 0) {
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tiny_models.py %s %s --kv-heads %d", WICK_TESTS_DIR, arch, dir,
                 kv);
        ok = run(cmd);
    }
    /* every rank learns whether rank 0 made it (no rank left waiting) */
    int64_t one = 1;
    wk_tensor *t = wk_from_host(&ok, sizeof ok, &one, 1, WK_I32, wk_cpu());
    wk_tensor *b = wk_broadcast(g_world, t, 0);
    assert_non_null(b);
    int32_t got = 0;
    assert_int_equal(wk_to_host(b, &got, sizeof got), WK_OK);
    wk_tensor_free(t);
    wk_tensor_free(b);
    if (!got) fail_msg("tiny_models.py %s failed (Debian's python3-numpy is needed)", arch);
}

__attribute__((unused)) static wk_lm *load_tp(const char *path) {
    wk_lm_load_opts o = {.comm = g_world, .parallel = WK_LM_TENSOR_PARALLEL};
    wk_lm *m = wk_lm_load(path, &o);
    if (!m) fail_msg("TP load of %s: %s", path, wk_last_error());
    return m;
}

/* |a - b| over two logits tensors of one shape. */
__attribute__((unused)) static double diff_of(const wk_tensor *a, const wk_tensor *b) {
    assert_int_equal(wk_rank(a), 2);
    assert_int_equal(wk_dim(a, 0), wk_dim(b, 0));
    assert_int_equal(wk_dim(a, 1), wk_dim(b, 1));
    return tu_max_abs_diff(a, b);
}

/* t is bit-identical on every rank: rank 0's copy equals this rank's. */
__attribute__((unused)) static void same_on_every_rank(const wk_tensor *t, const char *what) {
    wk_tensor *r0 = wk_broadcast(g_world, t, 0);
    assert_non_null(r0);
    double d = tu_max_abs_diff(t, r0);
    if (d != 0) fail_msg("%s: rank %d's logits differ from rank 0's by %g", what, g_rank, d);
    wk_tensor_free(r0);
}

__attribute__((unused)) static int32_t argmax_last(const wk_tensor *l) {
    int64_t V = wk_dim(l, 1), r = wk_dim(l, 0);
    float *v = malloc(sizeof(float) * (size_t)(V * r));
    assert_non_null(v);
    assert_int_equal(wk_to_host_f32(l, v, (size_t)(V * r)), WK_OK);
    int32_t a = lt_argmax(v + (r - 1) * V, V);
    free(v);
    return a;
}

/* The world communicator and rank 0's pid on every rank; false (after
 * saying so) without MPI. */
static bool tp_init(int *argc, char ***argv) {
    g_world = wk_comm_init_mpi(argc, argv, NULL);
    if (!g_world) {
        fprintf(stderr, "skipped: no MPI communicator: %s\n", wk_last_error());
        return false;
    }
    g_rank = wk_comm_rank(g_world);
    g_size = wk_comm_size(g_world);
    int64_t one = 1, pid = getpid(), job = 0;
    wk_tensor *t = wk_from_host(&pid, sizeof pid, &one, 1, WK_I64, wk_cpu());
    wk_tensor *b = wk_broadcast(g_world, t, 0);
    assert_non_null(b);
    assert_int_equal(wk_to_host(b, &job, sizeof job), WK_OK);
    g_job = (long long)job;
    wk_tensor_free(t);
    wk_tensor_free(b);
    return true;
}

#endif
