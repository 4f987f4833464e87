/* SmolLM2-135M with f32 weights against transformers (tests/data/
 * smollm2_transformers.json, from ../shared/reference/models.md): the HF
 * directory tests/make_hf_dir.py made (rotate-half RoPE) and an f32 GGUF of
 * the same weights (interleaved RoPE, written here from the package file)
 * give the reference's 20 greedy ids and its top-5 logits within 1e-2; a
 * batched prefill gives the logits of token-by-token decoding (the KV
 * cache). Label `model`. */
#include "llama_testutil.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include <math.h>

/* An optimised build checks all 20 reference ids; an unoptimised one (the
 * Debug + sanitizer run, whose kernels are -O0) checks the first 4, enough
 * for its purpose (memory errors and leaks on every path) in seconds. */
#ifdef NDEBUG
#define NGEN 20
#else
#define NGEN 4
#endif
#define NREF 20

static void check_reference(const char *path, const wk_lm_load_opts *o) {
    char *facts = lt_read_data("smollm2_transformers.json");
    double d_ids[8], d_top[5], d_logit[5], d_gen[NREF];
    int n = lt_json_numbers(facts, "capital", "ids", d_ids, 8);
    assert_int_equal(lt_json_numbers(facts, "capital", "top5_ids", d_top, 5), 5);
    assert_int_equal(lt_json_numbers(facts, "capital", "top5_logits", d_logit, 5), 5);
    assert_int_equal(lt_json_numbers(facts, "capital", "greedy", d_gen, NREF), NREF);
    free(facts);
    int32_t ids[8], gen[NGEN];
    for (int i = 0; i < n; i++) ids[i] = (int32_t)d_ids[i];
    wk_lm *m = wk_lm_load(path, o);
    if (!m) fail_msg("wk_lm_load(%s): %s", path, wk_last_error());
    const wk_lm_config *c = wk_lm_config_of(m);
    assert_int_equal(c->vocab, 49152);
    assert_int_equal(c->n_layers, 30);
    assert_int_equal(c->n_kv_heads, 3);
    assert_true(c->tied_embeddings);
    float *first = malloc(sizeof(float) * (size_t)c->vocab);
    assert_non_null(first);
    lt_greedy(m, ids, n, NGEN, gen, first);
    int32_t top[5];
    float vals[5];
    lt_topk(first, c->vocab, 5, top, vals);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(top[i], (int32_t)d_top[i]);
        if (fabs(vals[i] - d_logit[i]) > 1e-2)
            fail_msg("%s: top-%d logit %.5f, transformers %.5f", path, i + 1, (double)vals[i], d_logit[i]);
    }
    for (int i = 0; i < NGEN; i++)
        if (gen[i] != (int32_t)d_gen[i]) fail_msg("%s: greedy id %d is %d, transformers %d", path, i, gen[i], (int)d_gen[i]);
    free(first);
    wk_lm_free(m);
}

static void hf_f32_matches_transformers(void **state) {
    (void)state;
    check_reference(lt_hf_dir_or_skip(), NULL);
}

/* the directory's tokenizer.json and tokenizer_config.json come with it */
static void hf_tokenizer_and_template(void **state) {
    (void)state;
    wk_lm *m = wk_lm_load(lt_hf_dir_or_skip(), NULL);
    if (!m) fail_msg("%s", wk_last_error());
    const wk_tokenizer *t = wk_lm_tokenizer(m);
    assert_non_null(t);
    const char *text = "The capital of France is";
    int32_t ids[16];
    assert_int_equal(wk_tokenizer_encode(t, text, strlen(text), 0, ids, 16), 5);
    const int32_t want[5] = {504, 3575, 282, 4649, 314};
    for (int i = 0; i < 5; i++) assert_int_equal(ids[i], want[i]);
    assert_non_null(wk_lm_chat_template(m));
    assert_non_null(strstr(wk_lm_chat_template(m), "<|im_start|>"));
    wk_lm_free(m);
}

static void gguf_f32_matches_transformers(void **state) {
    (void)state;
    const char *src = lt_q4_gguf_or_skip();
    char path[4096];
    lt_tmp_path(path, sizeof path, "smollm2-f32.gguf");
    lt_write_gguf_as(src, path, WK_F32, -1);
    check_reference(path, NULL);
    remove(path);
}

/* all_logits of one batch == the logits of the same tokens fed one at a
 * time, at every position */
static void prefill_equals_decode(void **state) {
    (void)state;
    wk_lm *m = wk_lm_load(lt_hf_dir_or_skip(), NULL);
    if (!m) fail_msg("%s", wk_last_error());
    int32_t ids[7] = {504, 3575, 282, 4649, 314, 7042, 30};
#ifdef NDEBUG
    int64_t V = wk_lm_config_of(m)->vocab, n = 7;
#else
    int64_t V = wk_lm_config_of(m)->vocab, n = 4; /* -O0 kernels: keep it short */
#endif
    wk_kv_cache *c = wk_kv_cache_new(m, 16);
    assert_non_null(c);
    wk_tensor *all = wk_lm_forward(m, c, ids, n, true);
    if (!all) fail_msg("%s", wk_last_error());
    assert_int_equal(wk_dim(all, 0), n);
    assert_int_equal(wk_kv_cache_len(c), n);
    float *a = malloc(sizeof(float) * (size_t)(V * n)), *b = malloc(sizeof(float) * (size_t)V);
    assert_non_null(a);
    assert_non_null(b);
    TU_STATUS_OK(wk_to_host_f32(all, a, (size_t)(V * n)));
    wk_tensor_free(all);
    TU_STATUS_OK(wk_kv_cache_truncate(c, 0));
    double worst = 0;
    for (int64_t p = 0; p < n; p++) {
        lt_step(m, c, &ids[p], 1, b);
        for (int64_t i = 0; i < V; i++) worst = fmax(worst, fabs((double)a[p * V + i] - b[i]));
    }
    /* the same sums in another order (GEMM vs GEMV tiles, attention over a
     * longer key block): f32 rounding only */
    if (worst > 2e-3) fail_msg("prefill vs decode logits differ by %g", worst);
    /* truncating and re-running a suffix gives the same as well */
    TU_STATUS_OK(wk_kv_cache_truncate(c, 3));
    wk_tensor *tail = wk_lm_forward(m, c, &ids[3], n - 3, true);
    assert_non_null(tail);
    float *t = malloc(sizeof(float) * (size_t)(V * (n - 3)));
    assert_non_null(t);
    TU_STATUS_OK(wk_to_host_f32(tail, t, (size_t)(V * (n - 3))));
    for (int64_t i = 0; i < V * (n - 3); i++) assert_true(fabs((double)t[i] - a[3 * V + i]) <= 2e-3);
    wk_tensor_free(tail);
    free(t);
    free(a);
    free(b);
    wk_kv_cache_free(c);
    wk_lm_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hf_f32_matches_transformers),
        cmocka_unit_test(hf_tokenizer_and_template),
        cmocka_unit_test(gguf_f32_matches_transformers),
        cmocka_unit_test(prefill_equals_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
