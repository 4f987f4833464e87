/* Tensor-parallel decoder models (wk_lm_load_opts.comm, WK_LM_TENSOR_PARALLEL)
 * over MPI_COMM_WORLD: run as a singleton (one rank: the whole model) and by
 * ctest under mpirun with 2 and 3 ranks.
 *  - tiny f32 checkpoints of every family (tests/tiny_models.py with 5 KV
 *    heads, so that 2 and 3 ranks split them unevenly): the TP model's
 *    logits for a prompt and several decode steps (and a two-sequence
 *    batch) against the whole model loaded in the same process, max |diff|
 *    <= 1e-4, and bit-identical on every rank;
 *  - what cannot split is WK_ERR_ARG naming it (2 KV heads over 3 ranks),
 *    and the paged pool refuses a TP model;
 *  SmolLM2 is tests/test_mpi_tp_model.c (label model). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tp_testutil.h"

/* A prompt (all its logits), 4 decode steps, and a two-sequence batch: TP vs
 * the whole model. */
static void compare_family(const char *arch) {
    char dir[512];
    tiny_dir(arch, 5, dir, sizeof dir);
    wk_lm *whole = wk_lm_load(dir, NULL);
    if (!whole) fail_msg("%s: load: %s", arch, wk_last_error());
    wk_lm *tp = load_tp(dir);
    int64_t V = wk_lm_config_of(whole)->vocab;
    assert_int_equal(wk_lm_config_of(tp)->vocab, V);
    assert_int_equal(wk_lm_config_of(tp)->n_kv_heads, 5); /* the config is the whole model's */
    wk_kv_cache *cw = wk_kv_cache_new(whole, 32), *ct = wk_kv_cache_new(tp, 32);
    assert_non_null(cw);
    assert_non_null(ct);
    int32_t ids[9] = {1, 17, 250, 3, 99, 318, 42, 7, 160};
    double worst = 0;
    wk_tensor *lw = wk_lm_forward(whole, cw, ids, 9, true), *lt = wk_lm_forward(tp, ct, ids, 9, true);
    if (!lw || !lt) fail_msg("%s: forward: %s", arch, wk_last_error());
    worst = fmax(worst, diff_of(lw, lt));
    same_on_every_rank(lt, arch);
    for (int step = 0; step < 4; step++) {
        int32_t next = argmax_last(lw);
        wk_tensor_free(lw);
        wk_tensor_free(lt);
        lw = wk_lm_forward(whole, cw, &next, 1, false);
        lt = wk_lm_forward(tp, ct, &next, 1, false);
        if (!lw || !lt) fail_msg("%s: decode step %d: %s", arch, step, wk_last_error());
        worst = fmax(worst, diff_of(lw, lt));
        same_on_every_rank(lt, arch);
    }
    wk_tensor_free(lw);
    wk_tensor_free(lt);
    /* a batch: a new sequence beside the one going on */
    wk_kv_cache *bw = wk_kv_cache_new(whole, 16), *bt = wk_kv_cache_new(tp, 16);
    int32_t more[2] = {5, 6};
    wk_lm_seq sw[2] = {{cw, more, 2, true}, {bw, ids + 2, 5, false}};
    wk_lm_seq st[2] = {{ct, more, 2, true}, {bt, ids + 2, 5, false}};
    lw = wk_lm_forward_batch(whole, sw, 2);
    lt = wk_lm_forward_batch(tp, st, 2);
    if (!lw || !lt) fail_msg("%s: batch: %s", arch, wk_last_error());
    assert_int_equal(wk_dim(lt, 0), 3);
    worst = fmax(worst, diff_of(lw, lt));
    same_on_every_rank(lt, arch);
    if (g_rank == 0) print_message("%-8s TP over %d ranks vs the whole model: max |diff| %.2e\n", arch, g_size, worst);
    if (!(worst <= 1e-4)) fail_msg("%s: TP logits differ from the whole model's by %g", arch, worst);
    wk_tensor_free(lw);
    wk_tensor_free(lt);
    wk_kv_cache_free(bw);
    wk_kv_cache_free(bt);
    wk_kv_cache_free(cw);
    wk_kv_cache_free(ct);
    wk_lm_free(tp);
    wk_lm_free(whole);
}

static void tiny_families(void **state) {
    (void)state;
    static const char *archs[] = {"llama", "llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) compare_family(archs[i]);
}

/* 2 KV heads over 3 ranks: WK_ERR_ARG naming n_kv_heads; the pool refuses a
 * TP model. */
static void refusals(void **state) {
    (void)state;
    char dir[512];
    tiny_dir("llama", 2, dir, sizeof dir);
    wk_lm_load_opts o = {.comm = g_world, .parallel = WK_LM_TENSOR_PARALLEL};
    wk_lm *m = wk_lm_load(dir, &o);
    if (g_size > 2) {
        assert_null(m);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "n_kv_heads"));
        return;
    }
    if (!m) fail_msg("load: %s", wk_last_error());
    wk_kv_pool_opts po = {.blocks = 8};
    wk_kv_pool *p = wk_kv_pool_new(m, &po);
    if (g_size > 1) {
        assert_null(p);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "tensor parallel"));
    } else {
        assert_non_null(p); /* one rank: the whole model, nothing parallel */
        wk_kv_pool_free(p);
    }
    o.parallel = 7;
    assert_null(wk_lm_load(dir, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_lm_free(m);
}

int main(int argc, char **argv) {
    if (!tp_init(&argc, &argv)) return 0;
    const struct CMUnitTest tests[] = {cmocka_unit_test(tiny_families), cmocka_unit_test(refusals)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    wk_comm_free(g_world);
    return rc;
}
