/* Pipeline-parallel models (wk_lm_load_opts.comm, WK_LM_PIPELINE_PARALLEL)
 * on tiny f32 models (tests/tiny_models.py, written at test time by every
 * rank into its own folder), run as MPI's singleton and under mpirun with
 * 2 and 3 ranks: every rank's logits against the same model loaded whole
 * in this process, for prefills cut into micro-batches of 1, 5 and more
 * positions than the prompt, decode steps after them, a growing cache and
 * a ragged batch. PP runs the same arithmetic (the kernels are batch
 * invariant, and causal attention over the cache makes a chunked prefill
 * exact), so the rows must agree within 1e-5 and are expected to be
 * bit-identical: the test counts the rows that are not and prints it.
 * Errors: more ranks than layers, the paged pool, a bad `parallel`. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wick/lm.h"
#include "wick/dist.h"
#include "llama_testutil.h"

#define VOCAB 320
#define NP 24 /* prompt positions */

static wk_comm *g_comm;
static int g_rank, g_size;
static long g_inexact_rows; /* rows that matched within 1e-5 but not bit for bit */

/* The tiny model of arch in this rank's own folder. */
static void tiny_model(const char *arch, char *dir, size_t cap) {
    char cmd[2048];
    lt_tmp_path(dir, cap, "pp_tiny_");
    snprintf(dir + strlen(dir), cap - strlen(dir), "%s_%d", arch, (int)getpid());
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tiny_models.py %s %s", WICK_TESTS_DIR, arch, dir);
    if (system(cmd) != 0) fail_msg("tiny_models.py %s failed (Debian's python3-numpy is needed)", arch);
}

static void rm_dir(const char *dir) {
    char cmd[2100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) print_message("could not remove %s\n", dir);
}

static wk_lm *load_pp(const char *dir, int64_t mb) {
    wk_lm_load_opts o = {.comm = g_comm, .parallel = WK_LM_PIPELINE_PARALLEL, .pp_microbatch = mb};
    wk_lm *m = wk_lm_load(dir, &o);
    if (!m) fail_msg("PP load of %s: %s", dir, wk_last_error());
    return m;
}

/* rows x VOCAB logits of l, equal to want's within 1e-5 (and counted when
 * not bit-identical); frees l. */
static void expect_rows(wk_tensor *l, const float *want, int64_t rows, const char *what) {
    if (!l) fail_msg("%s: %s", what, wk_last_error());
    assert_int_equal(wk_dim(l, 0), rows);
    assert_int_equal(wk_dim(l, 1), VOCAB);
    float *got = malloc(sizeof(float) * (size_t)(rows * VOCAB));
    assert_non_null(got);
    assert_int_equal(wk_to_host_f32(l, got, (size_t)(rows * VOCAB)), WK_OK);
    wk_tensor_free(l);
    for (int64_t r = 0; r < rows; r++) {
        double worst = 0;
        for (int64_t j = 0; j < VOCAB; j++) {
            double d = fabs((double)got[r * VOCAB + j] - (double)want[r * VOCAB + j]);
            if (d > worst) worst = d;
        }
        if (worst > 1e-5) fail_msg("%s: rank %d row %lld differs by %g", what, g_rank, (long long)r, worst);
        if (worst > 0) g_inexact_rows++;
    }
    free(got);
}

static float *host_logits(wk_tensor *l, int64_t rows) {
    if (!l) fail_msg("reference forward: %s", wk_last_error());
    float *v = malloc(sizeof(float) * (size_t)(rows * VOCAB));
    assert_non_null(v);
    assert_int_equal(wk_to_host_f32(l, v, (size_t)(rows * VOCAB)), WK_OK);
    wk_tensor_free(l);
    return v;
}

/* Prompt (all rows) then 3 decode steps, the cache grown (reserve) before
 * the last: PP with micro-batches of mb against the whole model. */
static void check_prefill_decode(const wk_lm *ref, const wk_lm *pp, const int32_t *ids, int64_t mb) {
    char what[64];
    wk_kv_cache *rc = wk_kv_cache_new(ref, NP + 2), *pc = wk_kv_cache_new(pp, NP + 2);
    assert_non_null(rc);
    assert_non_null(pc);
    float *want = host_logits(wk_lm_forward(ref, rc, ids, NP, true), NP);
    snprintf(what, sizeof what, "prefill (micro-batch %lld)", (long long)mb);
    expect_rows(wk_lm_forward(pp, pc, ids, NP, true), want, NP, what);
    free(want);
    assert_int_equal(wk_kv_cache_len(pc), NP);
    for (int s = 0; s < 3; s++) {
        int32_t id = (int32_t)((ids[s] * 7 + 3) % VOCAB);
        if (s == 2) { /* full: grow both, the stored keys copied */
            assert_int_equal(wk_kv_cache_reserve(rc, NP + 8), WK_OK);
            assert_int_equal(wk_kv_cache_reserve(pc, NP + 8), WK_OK);
        }
        want = host_logits(wk_lm_forward(ref, rc, &id, 1, false), 1);
        snprintf(what, sizeof what, "decode step %d (micro-batch %lld)", s, (long long)mb);
        expect_rows(wk_lm_forward(pp, pc, &id, 1, false), want, 1, what);
        free(want);
    }
    /* a forward that does not fit is refused on every rank, the cache unchanged */
    int32_t many[16] = {0};
    assert_null(wk_lm_forward(pp, pc, many, 16, false));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_int_equal(wk_kv_cache_len(pc), NP + 3);
    wk_kv_cache_free(rc);
    wk_kv_cache_free(pc);
}

/* Two sequences in one ragged batch (one wants every row, one its last),
 * cut across micro-batches of 5: rows as the whole model's batch. */
static void check_batch(const wk_lm *ref, const wk_lm *pp, const int32_t *ids) {
    wk_kv_cache *r[2] = {wk_kv_cache_new(ref, NP), wk_kv_cache_new(ref, NP)};
    wk_kv_cache *p[2] = {wk_kv_cache_new(pp, NP), wk_kv_cache_new(pp, NP)};
    wk_lm_seq rs[2] = {{r[0], ids, 7, true}, {r[1], ids + 7, 11, false}};
    wk_lm_seq ps[2] = {{p[0], ids, 7, true}, {p[1], ids + 7, 11, false}};
    float *want = host_logits(wk_lm_forward_batch(ref, rs, 2), 8);
    expect_rows(wk_lm_forward_batch(pp, ps, 2), want, 8, "ragged batch");
    free(want);
    assert_int_equal(wk_kv_cache_len(p[0]), 7);
    assert_int_equal(wk_kv_cache_len(p[1]), 11);
    /* then one decode row each, in one batch */
    int32_t next[2] = {5, 9};
    wk_lm_seq rd[2] = {{r[0], &next[0], 1, false}, {r[1], &next[1], 1, false}};
    wk_lm_seq pd[2] = {{p[0], &next[0], 1, false}, {p[1], &next[1], 1, false}};
    want = host_logits(wk_lm_forward_batch(ref, rd, 2), 2);
    expect_rows(wk_lm_forward_batch(pp, pd, 2), want, 2, "batched decode");
    free(want);
    for (int i = 0; i < 2; i++) {
        wk_kv_cache_free(r[i]);
        wk_kv_cache_free(p[i]);
    }
}

static void check_arch(const char *arch, int64_t n_layers) {
    char dir[512];
    tiny_model(arch, dir, sizeof dir);
    if (n_layers < g_size) {
        /* more ranks than layers: refused, on every rank */
        wk_lm_load_opts o = {.comm = g_comm, .parallel = WK_LM_PIPELINE_PARALLEL};
        assert_null(wk_lm_load(dir, &o));
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "pipeline ranks"));
        rm_dir(dir);
        return;
    }
    wk_lm *ref = wk_lm_load(dir, NULL);
    if (!ref) fail_msg("load %s: %s", dir, wk_last_error());
    int32_t ids[NP];
    for (int i = 0; i < NP; i++) ids[i] = (int32_t)((i * 37 + 11) % VOCAB);
    int64_t mbs[3] = {1, 5, 64};
    for (int k = 0; k < 3; k++) {
        wk_lm *pp = load_pp(dir, mbs[k]);
        check_prefill_decode(ref, pp, ids, mbs[k]);
        if (k == 1) check_batch(ref, pp, ids);
        if (g_size > 1) {
            /* the paged pool (and so the serving engine) is single-process */
            wk_kv_pool_opts po = {.blocks = 4};
            assert_null(wk_kv_pool_new(pp, &po));
            assert_int_equal(wk_last_status(), WK_ERR_ARG);
        }
        wk_lm_free(pp);
    }
    wk_lm_free(ref);
    rm_dir(dir);
}

static void test_llama(void **s) { (void)s; check_arch("llama", 2); }     /* untied head */
static void test_qwen2(void **s) { (void)s; check_arch("qwen2", 2); }     /* tied, q/k/v biases */
static void test_smollm3(void **s) { (void)s; check_arch("smollm3", 4); } /* a layer without RoPE */
static void test_gemma3(void **s) { (void)s; check_arch("gemma3", 6); }   /* sliding + local RoPE set, softcaps off */

static void test_bad_parallel(void **s) {
    (void)s;
    char dir[512];
    tiny_model("llama", dir, sizeof dir);
    wk_lm_load_opts o = {.comm = g_comm, .parallel = 7};
    assert_null(wk_lm_load(dir, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "parallel"));
    rm_dir(dir);
}

int main(int argc, char **argv) {
    /* without MPI compiled in: a world of one (the size-1 cases) */
    g_comm = wk_dist_has_mpi() ? wk_comm_init_mpi(&argc, &argv, NULL) : wk_comm_self(NULL);
    if (!g_comm) {
        fprintf(stderr, "no communicator: %s\n", wk_last_error());
        return 1;
    }
    g_rank = wk_comm_rank(g_comm);
    g_size = wk_comm_size(g_comm);
    /* one thread per rank: ranks share the machine's cores */
    wk_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),   cmocka_unit_test(test_qwen2),       cmocka_unit_test(test_smollm3),
        cmocka_unit_test(test_gemma3),  cmocka_unit_test(test_bad_parallel),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("rank %d of %d: %ld rows matched within 1e-5 but not bit for bit\n", g_rank, g_size, g_inexact_rows);
    wk_comm_free(g_comm);
    return rc;
}
