/* Pipeline parallel on the real SmolLM2 135M Q4_1 GGUF (WICK_SMOLLM2_GGUF;
 * skipped without it): greedy 16 tokens after a prompt that spans several
 * micro-batches (8 positions each), on 1, 2 or 3 ranks, the same ids as
 * the whole model in this process, and the first step's logits within
 * 1e-5 (bit-identical expected: the test says which). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wick/lm.h"
#include "wick/dist.h"
#include "llama_testutil.h"

#define NGEN 16

static wk_comm *g_comm;
static const char *g_path;

static void test_greedy(void **s) {
    (void)s;
    wk_lm *ref = wk_lm_load(g_path, NULL);
    if (!ref) fail_msg("load: %s", wk_last_error());
    wk_lm_load_opts o = {.comm = g_comm, .parallel = WK_LM_PIPELINE_PARALLEL, .pp_microbatch = 8};
    wk_lm *pp = wk_lm_load(g_path, &o);
    if (!pp) fail_msg("PP load: %s", wk_last_error());
    const char *text = "The three primary colors are red, yellow and blue. Mixing two of them gives a secondary "
                       "color, such as";
    int32_t ids[128];
    int64_t n = wk_tokenizer_encode(wk_lm_tokenizer(ref), text, strlen(text), 0, ids, 128);
    assert_true(n > 16 && n <= 128);
    int64_t V = wk_lm_config_of(ref)->vocab;
    float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
    assert_non_null(a);
    assert_non_null(b);
    int32_t want[NGEN], got[NGEN];
    lt_greedy(ref, ids, n, NGEN, want, a);
    lt_greedy(pp, ids, n, NGEN, got, b);
    double worst = 0;
    for (int64_t j = 0; j < V; j++) worst = fmax(worst, fabs((double)a[j] - (double)b[j]));
    print_message("rank %d of %d: prompt %lld tokens, first logits differ by at most %g%s\n", wk_comm_rank(g_comm),
                  wk_comm_size(g_comm), (long long)n, worst, worst == 0 ? " (bit-identical)" : "");
    assert_true(worst <= 1e-5);
    for (int i = 0; i < NGEN; i++)
        if (got[i] != want[i]) fail_msg("token %d: %d under PP, %d whole", i, got[i], want[i]);
    free(a);
    free(b);
    wk_lm_free(pp);
    wk_lm_free(ref);
}

int main(int argc, char **argv) {
    g_path = getenv("WICK_SMOLLM2_GGUF");
    g_comm = wk_dist_has_mpi() ? wk_comm_init_mpi(&argc, &argv, NULL) : wk_comm_self(NULL);
    if (!g_comm) {
        fprintf(stderr, "no communicator: %s\n", wk_last_error());
        return 1;
    }
    int rc = 77;
    if (!g_path || !*g_path) {
        fprintf(stderr, "skipped: WICK_SMOLLM2_GGUF is not set\n");
    } else {
        wk_set_num_threads(1);
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_greedy)};
        rc = cmocka_run_group_tests(tests, NULL, NULL);
    }
    wk_comm_free(g_comm);
    return rc;
}
