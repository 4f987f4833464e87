/* Real files of the families beyond Llama, against llama.cpp on the same
 * file (tests/data/llama_cpp_gemma3_270m.json, llama_cpp_qwen25_coder_05b.json:
 * llama-cpp-python 0.3.36, f32 KV cache, made by hand with
 * tools/make_real_refs.py; see tests/data/README.md):
 *
 *   - the prompt's ids from the file's own tokenizer (Gemma 3's
 *     SentencePiece, Qwen's byte-level BPE) equal llama.cpp's;
 *   - the last position's top-10: the top id equal, the logits within 0.8
 *     each and 0.4 on average (both quantize activations for their block
 *     dot products differently: the SmolLM2 Q4_1 test's bounds);
 *   - 16 greedy tokens equal, or parting at a near-tie: the two top logits
 *     within 0.5 of each other on both sides (quantized paths part there);
 *   - Gemma 3 on a 661-token prompt, longer than its 512-token sliding
 *     window (its local layers see the last 512 positions only);
 *   - perplexity over the first 20 KB of GPL-3 at context 512, computed as
 *     llama-perplexity does, within 0.5% of llama.cpp's (Qwen's only with
 *     WICK_TEST_SLOW=1: a minute of prefill on two cores).
 * Label model: each part skips, saying so, when its file is absent
 * (WICK_GEMMA3_GGUF, WICK_QWEN05_GGUF; scripts/setup.sh installs both into
 * .cache/models). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wick/lm.h"
#include "wick/generate.h"
#include "llama_testutil.h"

/* "key": number after section */
static double number(const char *doc, const char *section, const char *key) {
    const char *p = strstr(doc, section);
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = p ? strstr(p, pat) : NULL;
    if (!p) fail_msg("facts: no %s in %s", key, section);
    return strtod(p + strlen(pat), NULL);
}

static char *facts_of(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/data/%s", WICK_TESTS_DIR, name);
    return lt_read_path(path, 0);
}

/* The model at env var `var`, or NULL after saying why the part is skipped. */
static wk_lm *load_or_skip(const char *var) {
    const char *p = getenv(var);
    if (!p || !*p) {
        print_message("skipped: %s is not set (scripts/setup.sh installs the file into .cache/models)\n", var);
        return NULL;
    }
    wk_lm *m = wk_lm_load(p, NULL);
    if (!m) fail_msg("%s: %s", p, wk_last_error());
    return m;
}

static int32_t *encode(const wk_lm *m, const char *text, int64_t *n) {
    const wk_tokenizer *t = wk_lm_tokenizer(m);
    assert_non_null(t);
    size_t len = strlen(text);
    int32_t *ids = malloc(sizeof(int32_t) * (len + 8));
    assert_non_null(ids);
    *n = wk_tokenizer_encode(t, text, len, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, ids, (int64_t)len + 8);
    if (*n < 0) fail_msg("encode: %s", wk_last_error());
    return ids;
}

/* One prompt of the facts: ids, top-10, greedy. */
static void check_prompt(const wk_lm *m, const char *facts, const char *name, const char *text, int64_t ctx) {
    int64_t n;
    int32_t *ids = encode(m, text, &n);
    static double want_ids[4096];
    int nw = lt_json_flat_numbers(facts, name, "ids", want_ids, 4096);
    assert_true(nw > 0 && nw <= 4096);
    if (n != nw) fail_msg("%s: %lld ids, llama.cpp %d", name, (long long)n, nw);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] != (int32_t)want_ids[i]) fail_msg("%s: id %lld is %d, llama.cpp %d", name, (long long)i, ids[i],
                                                     (int)want_ids[i]);
    const int64_t V = wk_lm_config_of(m)->vocab;
    float *lg = malloc(sizeof(float) * (size_t)V);
    assert_non_null(lg);
    wk_kv_cache *c = wk_kv_cache_new(m, ctx);
    assert_non_null(c);
    lt_step(m, c, ids, n, lg);
    double tid[10], tl[10];
    assert_int_equal(lt_json_flat_numbers(facts, name, "top10_ids", tid, 10), 10);
    assert_int_equal(lt_json_flat_numbers(facts, name, "top10_logits", tl, 10), 10);
    if (lt_argmax(lg, V) != (int32_t)tid[0])
        fail_msg("%s: top id %d, llama.cpp %d", name, lt_argmax(lg, V), (int)tid[0]);
    double worst = 0, sum = 0;
    for (int i = 0; i < 10; i++) {
        double d = fabs((double)lg[(int32_t)tid[i]] - tl[i]);
        worst = fmax(worst, d);
        sum += d;
    }
    print_message("%s: top-10 logits vs llama.cpp: max |diff| %.3f, mean %.3f\n", name, worst, sum / 10);
    if (worst > 0.8 || sum / 10 > 0.4) fail_msg("%s: top-10 logits differ (max %.3f, mean %.3f)", name, worst, sum / 10);
    double greedy[32], top2[64];
    int ng = lt_json_flat_numbers(facts, name, "greedy", greedy, 32);
    assert_true(ng > 0 && ng <= 32);
    assert_int_equal(lt_json_flat_numbers(facts, name, "greedy_top2", top2, 64), 2 * ng);
    int same = 0;
    for (int s = 0; s < ng; s++) {
        int32_t id = lt_argmax(lg, V);
        if (id != (int32_t)greedy[s]) {
            int32_t k2[2];
            float v2[2];
            lt_topk(lg, V, 2, k2, v2);
            double ref_gap = top2[2 * s] - top2[2 * s + 1], our_gap = (double)v2[0] - v2[1];
            if (ref_gap < 0.5 && our_gap < 0.5) {
                print_message("%s: greedy parts at step %d at a near-tie (gaps %.3f / %.3f)\n", name, s, ref_gap,
                              our_gap);
                break;
            }
            fail_msg("%s: greedy step %d gave %d, llama.cpp %d (gaps %.3f / %.3f)", name, s, id, (int)greedy[s],
                     ref_gap, our_gap);
        }
        same++;
        lt_step(m, c, &id, 1, lg);
    }
    print_message("%s: %d of %d greedy tokens as llama.cpp\n", name, same, ng);
    wk_kv_cache_free(c);
    free(lg);
    free(ids);
}

/* llama-perplexity's recipe (tests/data/README.md) through
 * wk_lm_perplexity. */
static void check_perplexity(const wk_lm *m, const char *facts) {
    char *text = lt_read_path("/usr/share/common-licenses/GPL-3", 20480);
    int64_t n;
    int32_t *ids = encode(m, text, &n);
    int64_t want_n = (int64_t)number(facts, "\"perplexity\"", "n_tokens");
    if (n != want_n) fail_msg("perplexity text: %lld tokens, llama.cpp %lld", (long long)n, (long long)want_n);
    const wk_tokenizer *t = wk_lm_tokenizer(m);
    wk_perplexity p;
    if (wk_lm_perplexity(m, ids, n, 512, wk_tokenizer_adds_bos(t) ? wk_tokenizer_bos(t) : -1, &p) != WK_OK)
        fail_msg("perplexity: %s", wk_last_error());
    double want = number(facts, "\"perplexity\"", "ppl");
    assert_int_equal(p.chunks, (int64_t)number(facts, "\"perplexity\"", "n_chunk"));
    assert_int_equal(p.scored, p.chunks * (int64_t)number(facts, "\"perplexity\"", "scored_per_chunk"));
    print_message("perplexity: %.4f over %lld chunks (llama.cpp %.4f, %+.3f%%)\n", p.ppl, (long long)p.chunks, want,
                  100 * (p.ppl / want - 1));
    if (fabs(p.ppl / want - 1) > 0.005) fail_msg("perplexity %.4f is not within 0.5%% of llama.cpp's %.4f", p.ppl, want);
    free(ids);
    free(text);
}

static void gemma3(void **state) {
    (void)state;
    wk_lm *m = load_or_skip("WICK_GEMMA3_GGUF");
    if (!m) {
        skip();
        return;
    }
    assert_string_equal(wk_lm_config_of(m)->arch, "gemma3");
    char *facts = facts_of("llama_cpp_gemma3_270m.json");
    check_prompt(m, facts, "capital", "The capital of France is", 64);
    char *gpl = lt_read_path("/usr/share/common-licenses/GPL-3", 3000);
    check_prompt(m, facts, "long", gpl, 1024);
    free(gpl);
    check_perplexity(m, facts);
    free(facts);
    wk_lm_free(m);
}

static void qwen25(void **state) {
    (void)state;
    wk_lm *m = load_or_skip("WICK_QWEN05_GGUF");
    if (!m) {
        skip();
        return;
    }
    assert_string_equal(wk_lm_config_of(m)->arch, "qwen2");
    char *facts = facts_of("llama_cpp_qwen25_coder_05b.json");
    check_prompt(m, facts, "capital", "The capital of France is", 64);
    check_prompt(m, facts, "fibonacci", "def fibonacci(n):", 64);
    const char *slow = getenv("WICK_TEST_SLOW");
    if (slow && *slow == '1') check_perplexity(m, facts);
    else print_message("qwen2.5 perplexity skipped (WICK_TEST_SLOW=1 runs it)\n");
    free(facts);
    wk_lm_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(gemma3), cmocka_unit_test(qwen25)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
