/* wk_generate on the real SmolLM2-135M-Instruct Q4_1 GGUF (WICK_SMOLLM2_GGUF;
 * ctest label `model`; skipped without the package). A few tokens per case:
 * this also runs under ASan in Debug.
 *
 * Greedy text must equal the text decoded from the ids of a plain loop
 * written here (wk_lm_forward + argmax, lowest id on ties), so
 * generation adds nothing and loses nothing between the model and the
 * callback; then seeds, stop strings, the chat template with its EOS, the
 * context limit and the callback's stop. */
#include "testutil.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "wick/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smollm2_fixture.h"

typedef struct {
    char text[4096];
    size_t n;
    int pieces, stop_after;
    bool bad_utf8;
} sink;

/* a piece must hold whole UTF-8 sequences only */
static bool whole_utf8(const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n;) {
        int len = b[i] < 0x80 ? 1 : (b[i] & 0xE0) == 0xC0 ? 2 : (b[i] & 0xF0) == 0xE0 ? 3 : (b[i] & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || i + (size_t)len > n) return false;
        for (int k = 1; k < len; k++)
            if ((b[i + k] & 0xC0) != 0x80) return false;
        i += (size_t)len;
    }
    return true;
}

static int collect(void *ctx, const char *b, size_t n) {
    sink *s = ctx;
    if (!whole_utf8((const unsigned char *)b, n)) s->bad_utf8 = true;
    if (s->n + n < sizeof s->text) {
        memcpy(s->text + s->n, b, n);
        s->n += n;
        s->text[s->n] = 0;
    }
    return ++s->pieces == s->stop_after;
}

static wk_status run(const char *prompt, wk_generate_opts *o, sink *k, wk_generate_stats *st) {
    memset(k, 0, sizeof *k);
    o->on_text = collect;
    o->ctx = k;
    wk_clear_error();
    wk_status s = wk_generate(g_model, prompt, o, st);
    if (s != WK_OK) printf("wk_generate: %s\n", wk_last_error());
    assert_false(k->bad_utf8);
    return s;
}

static void greedy_opts(wk_generate_opts *o, int64_t n) {
    wk_generate_opts_default(o);
    o->max_new_tokens = n;
    o->sampling.temperature = 0;
}

/* The reference: tokenize, one prefill, argmax, one token at a time. */
static int64_t plain_greedy(const char *prompt, int64_t n, int32_t *out) {
    const wk_tokenizer *tok = wk_lm_tokenizer(g_model);
    const wk_lm_config *c = wk_lm_config_of(g_model);
    int32_t ids[64];
    int64_t np = wk_tokenizer_encode(tok, prompt, strlen(prompt), WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, ids, 64);
    assert_true(np > 0 && np <= 64);
    wk_kv_cache *cache = wk_kv_cache_new(g_model, np + n);
    assert_non_null(cache);
    float *l = malloc((size_t)c->vocab * sizeof *l);
    assert_non_null(l);
    wk_tensor *t = TU_OK(wk_lm_forward(g_model, cache, ids, np, false));
    for (int64_t i = 0; i < n; i++) {
        TU_STATUS_OK(wk_to_host_f32(t, l, (size_t)c->vocab));
        wk_tensor_free(t);
        int32_t best = 0;
        for (int32_t v = 1; v < c->vocab; v++)
            if (l[v] > l[best]) best = v;
        out[i] = best;
        t = TU_OK(wk_lm_forward(g_model, cache, &best, 1, false));
    }
    wk_tensor_free(t);
    free(l);
    wk_kv_cache_free(cache);
    return np;
}

static void test_greedy_matches_plain_loop(void **state) {
    (void)state;
    need_model();
    enum { N = 8 };
    int32_t ids[N];
    int64_t np = plain_greedy(PROMPT, N, ids);
    assert_int_equal(np, 5); /* [504, 3575, 282, 4649, 314] (models.md) */
    char want[1024];
    int64_t len = wk_tokenizer_decode(wk_lm_tokenizer(g_model), ids, N, true, want, sizeof want);
    assert_true(len > 0 && len < (int64_t)sizeof want);

    wk_generate_opts o;
    greedy_opts(&o, N);
    sink k;
    wk_generate_stats st;
    TU_STATUS_OK(run(PROMPT, &o, &k, &st));
    printf("greedy: \"%s\"\n", k.text);
    assert_string_equal(k.text, want);
    /* transformers' f32 greedy ids begin 7042 30 (" Paris."); llama.cpp on
     * this Q4_1 file agrees for the first 5 tokens (models.md) */
    assert_int_equal(ids[0], 7042);
    assert_int_equal(ids[1], 30);
    assert_int_equal(strncmp(k.text, " Paris.", 7), 0);
    assert_int_equal(st.n_prompt, 5);
    assert_int_equal(st.n_generated, N);
    assert_int_equal(st.stop_reason, 0);
    assert_true(st.prefill_ms > 0 && st.decode_ms > 0 && st.first_token_ms >= st.prefill_ms);
}

static void test_seeds(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    wk_generate_opts_default(&o);
    o.max_new_tokens = 6;
    o.sampling.temperature = 1.0;
    o.sampling.top_k = 0;
    o.sampling.top_p = 1;
    o.sampling.min_p = 0;
    sink a, b, c;
    wk_generate_stats st;
    o.sampling.seed = 1;
    TU_STATUS_OK(run(PROMPT, &o, &a, &st));
    TU_STATUS_OK(run(PROMPT, &o, &b, &st));
    o.sampling.seed = 2;
    TU_STATUS_OK(run(PROMPT, &o, &c, &st));
    printf("seed 1: \"%s\"\nseed 2: \"%s\"\n", a.text, c.text);
    assert_string_equal(a.text, b.text);
    assert_string_not_equal(a.text, c.text);
}

static void test_stop_string(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 8);
    const char *stops[] = {"is:", "."}; /* greedy goes " Paris." */
    o.stop = stops;
    o.n_stop = 2;
    sink k;
    wk_generate_stats st;
    TU_STATUS_OK(run(PROMPT, &o, &k, &st));
    assert_string_equal(k.text, " Paris");
    assert_int_equal(st.stop_reason, 2);
    assert_int_equal(st.n_generated, 2);
}

static void test_chat(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 12);
    o.chat = true;
    sink k;
    wk_generate_stats st;
    TU_STATUS_OK(run("What is the capital of France? One word.", &o, &k, &st));
    printf("chat: \"%s\" (%lld prompt tokens, stop %d)\n", k.text, (long long)st.n_prompt, st.stop_reason);
    /* the template's default system message makes the prompt long */
    assert_true(st.n_prompt > 25);
    assert_non_null(strstr(k.text, "Paris"));
    assert_null(strstr(k.text, "<|im"));
    /* the answer is short: the model ends its turn with <|im_end|> */
    assert_int_equal(st.stop_reason, 1);
    assert_true(st.n_generated < 12);
    /* a system message is used instead of the default */
    wk_generate_stats st2;
    o.system = "Hi.";
    o.max_new_tokens = 1;
    TU_STATUS_OK(run("What is the capital of France? One word.", &o, &k, &st2));
    assert_true(st2.n_prompt < st.n_prompt);
}

static void test_context_limits(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 10);
    sink k;
    wk_generate_stats st;
    o.max_ctx = 4; /* the prompt is 5 tokens */
    memset(&k, 0, sizeof k);
    wk_clear_error();
    assert_int_equal(wk_generate(g_model, PROMPT, &o, &st), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "5 tokens"));
    assert_int_equal(st.n_prompt, 0);
    /* 7 positions: the prompt, then 3 tokens (the last is never run) */
    o.max_ctx = 7;
    TU_STATUS_OK(run(PROMPT, &o, &k, &st));
    assert_int_equal(st.n_generated, 3);
    assert_int_equal(st.stop_reason, 4);
    /* the callback stops it */
    o.max_ctx = 0;
    memset(&k, 0, sizeof k);
    k.stop_after = 1;
    o.on_text = collect;
    o.ctx = &k;
    TU_STATUS_OK(wk_generate(g_model, PROMPT, &o, &st));
    assert_int_equal(st.stop_reason, 3);
    assert_int_equal(st.n_generated, 1);
    assert_int_equal(k.pieces, 1);
    /* bad options */
    const char *empty[] = {""};
    o.stop = empty;
    o.n_stop = 1;
    wk_clear_error();
    assert_int_equal(wk_generate(g_model, PROMPT, &o, &st), WK_ERR_ARG);
    o.n_stop = 0;
    o.sampling.top_p = 0;
    wk_clear_error();
    assert_int_equal(wk_generate(g_model, PROMPT, &o, &st), WK_ERR_ARG);
    o.sampling.top_p = 1;
    wk_clear_error();
    assert_int_equal(wk_generate(g_model, "", &o, &st), WK_ERR_ARG);
    wk_clear_error();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_matches_plain_loop),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_stop_string),
        cmocka_unit_test(test_chat),
        cmocka_unit_test(test_context_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
