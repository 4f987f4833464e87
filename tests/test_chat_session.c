/* Chat sessions (wk_chat_session_*, wick/generate.h) on the real
 * SmolLM2-135M-Instruct Q4_1 GGUF (WICK_SMOLLM2_GGUF; ctest label `model`;
 * the model cases skip without it, the argument checks run anyway).
 *
 * - two turns: the second reply's prefill runs only the new tokens (far
 *   fewer than the whole conversation), and its text is exactly the reply a
 *   fresh session gives for the same four messages (greedy): the proof that
 *   the kept cache holds what a from-scratch prefill would (the prefill's
 *   batch split differs, and on Q4_1 weights that moves logits by up to ~1:
 *   this conversation has a clear margin, not every one has);
 * - a reply that outgrows the cache (grown mid-reply, refilled) is the
 *   text wk_generate gives for the same prompt with its own cache;
 * - a reply freed early keeps its text so far; pop, reset (the system
 *   message stays, its cached prefix is reused);
 * - a conversation longer than max_ctx is an error naming it, and popping
 *   the turn recovers; a reply while another is open, add while open, no
 *   messages, NULL arguments: errors, never crashes; freeing the session
 *   under an open reply leaves the reply working. */
#include "testutil.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "wick/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smollm2_fixture.h"

typedef struct {
    char text[8192];
    size_t n;
    wk_generate_stats st;
} reply_out;

/* Steps g to its end into r, then frees it. */
static void drain(wk_gen *g, reply_out *r) {
    memset(r, 0, sizeof *r);
    if (!g) printf("reply: %s\n", wk_last_error());
    assert_non_null(g);
    wk_gen_token t;
    do {
        TU_STATUS_OK(wk_gen_step(g, &t));
        assert_true(r->n + t.n_text < sizeof r->text);
        memcpy(r->text + r->n, t.text, t.n_text);
        r->n += t.n_text;
        r->text[r->n] = 0;
    } while (t.stop == WK_STOP_NONE);
    wk_gen_stats(g, &r->st);
    wk_gen_free(g);
}

static void greedy(wk_generate_opts *o, int64_t n) {
    wk_generate_opts_default(o);
    o->sampling.temperature = 0;
    o->max_new_tokens = n;
}

static const char *SYSTEM = "You are a concise assistant.";
static const char *Q1 = "What is the capital of France?", *Q2 = "And what river flows through it?";

static void test_two_turns_reuse_cache(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy(&o, 24);
    o.system = SYSTEM;
    wk_chat_session *s = wk_chat_session_new(g_model, &o);
    assert_non_null(s);
    TU_STATUS_OK(wk_chat_session_add(s, "user", Q1));
    reply_out r1, r2, fresh;
    drain(wk_chat_session_reply(s), &r1);
    printf("turn 1: %lld prompt tokens, %lld prefilled, %lld generated: %s\n", (long long)r1.st.n_prompt,
           (long long)r1.st.n_prefill, (long long)r1.st.n_generated, r1.text);
    assert_int_equal(r1.st.n_prefill, r1.st.n_prompt);
    assert_true(r1.n > 0);
    size_t nm;
    const wk_chat_message *msgs = wk_chat_session_messages(s, &nm);
    assert_int_equal(nm, 3);
    assert_string_equal(msgs[2].role, "assistant");
    assert_string_equal(msgs[2].content, r1.text);

    TU_STATUS_OK(wk_chat_session_add(s, "user", Q2));
    drain(wk_chat_session_reply(s), &r2);
    printf("turn 2: %lld prompt tokens, %lld prefilled, %lld generated: %s\n", (long long)r2.st.n_prompt,
           (long long)r2.st.n_prefill, (long long)r2.st.n_generated, r2.text);
    assert_true(r2.n > 0);
    /* the history (turn 1's prompt and reply) came from the cache */
    assert_true(r2.st.n_prompt > r1.st.n_prompt + r1.st.n_generated - 1);
    assert_true(r2.st.n_prefill < r2.st.n_prompt - r1.st.n_prompt);
    assert_true(r2.st.n_prefill <= 30);
    assert_true(wk_chat_session_cached(s) >= r2.st.n_prompt);

    /* the same conversation from scratch */
    wk_chat_session *f = wk_chat_session_new(g_model, &o);
    assert_non_null(f);
    TU_STATUS_OK(wk_chat_session_add(f, "user", Q1));
    TU_STATUS_OK(wk_chat_session_add(f, "assistant", r1.text));
    TU_STATUS_OK(wk_chat_session_add(f, "user", Q2));
    drain(wk_chat_session_reply(f), &fresh);
    assert_int_equal(fresh.st.n_prompt, r2.st.n_prompt);
    assert_int_equal(fresh.st.n_prefill, fresh.st.n_prompt);
    assert_string_equal(fresh.text, r2.text);
    wk_chat_session_free(f);
    wk_chat_session_free(s);
}

/* 200 tokens past a 256-position first cache: grown mid-reply, its keys
 * and values copied (wk_kv_cache_reserve), nothing run again. */
static void test_growth_matches_generate(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy(&o, 240);
    o.stop_at_eos = false;
    o.system = SYSTEM;
    wk_chat_session *s = wk_chat_session_new(g_model, &o);
    assert_non_null(s);
    TU_STATUS_OK(wk_chat_session_add(s, "user", "Write a long story about a cat."));
    reply_out r;
    drain(wk_chat_session_reply(s), &r);
    assert_int_equal(r.st.n_generated, 240);
    assert_true(wk_chat_session_capacity(s) > 256);
    assert_int_equal(r.st.n_prefill, r.st.n_prompt);
    assert_int_equal(r.st.n_refill, 0); /* copied, not refilled */

    wk_generate_opts g;
    greedy(&g, 240);
    g.stop_at_eos = false;
    g.chat = true;
    g.system = SYSTEM;
    wk_gen *plain = wk_gen_start(g_model, "Write a long story about a cat.", &g);
    reply_out p;
    drain(plain, &p);
    assert_int_equal(p.st.n_prompt, r.st.n_prompt);
    assert_int_equal(p.st.n_prefill, p.st.n_prompt);
    assert_string_equal(p.text, r.text);
    wk_chat_session_free(s);
}

static void test_early_free_pop_reset(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy(&o, 16);
    o.system = SYSTEM;
    wk_chat_session *s = wk_chat_session_new(g_model, &o);
    assert_non_null(s);
    TU_STATUS_OK(wk_chat_session_add(s, "user", Q1));
    wk_gen *g = wk_chat_session_reply(s);
    assert_non_null(g);
    /* one open reply at a time; no changes meanwhile */
    assert_null(wk_chat_session_reply(s));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_add(s, "user", "x"), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_pop(s), WK_ERR_ARG);
    char got[1024] = "";
    wk_gen_token t;
    for (int i = 0; i < 4; i++) {
        TU_STATUS_OK(wk_gen_step(g, &t));
        strncat(got, t.text, sizeof got - strlen(got) - 1);
    }
    wk_gen_free(g);
    size_t n;
    const wk_chat_message *m = wk_chat_session_messages(s, &n);
    assert_int_equal(n, 3);
    assert_string_equal(m[2].content, got);
    /* regenerate: pop the reply, reply again, the whole prompt is cached */
    TU_STATUS_OK(wk_chat_session_pop(s));
    reply_out r;
    drain(wk_chat_session_reply(s), &r);
    assert_int_equal(r.st.n_prefill, 1);
    /* (not compared with the first try: a 1-token prefill quantizes the
     * activations as a decode step does, and this prompt's top three
     * logits lie within 0.15 on Q4_1: the split may pick another) */
    assert_true(r.n > 0);
    /* reset keeps the system message, and its cached prefix */
    TU_STATUS_OK(wk_chat_session_reset(s));
    m = wk_chat_session_messages(s, &n);
    assert_int_equal(n, 1);
    assert_string_equal(m[0].role, "system");
    TU_STATUS_OK(wk_chat_session_add(s, "user", Q2));
    drain(wk_chat_session_reply(s), &r);
    assert_true(r.st.n_prefill < r.st.n_prompt);
    /* the session freed under an open reply: the reply goes on alone */
    TU_STATUS_OK(wk_chat_session_add(s, "user", Q1));
    g = wk_chat_session_reply(s);
    assert_non_null(g);
    TU_STATUS_OK(wk_gen_step(g, &t));
    wk_chat_session_free(s);
    do TU_STATUS_OK(wk_gen_step(g, &t));
    while (t.stop == WK_STOP_NONE);
    wk_gen_free(g);
}

static void test_context_full(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy(&o, 8);
    o.max_ctx = 64;
    wk_chat_session *s = wk_chat_session_new(g_model, &o);
    assert_non_null(s);
    TU_STATUS_OK(wk_chat_session_add(s, "user", Q1));
    reply_out r;
    drain(wk_chat_session_reply(s), &r);
    assert_int_equal(wk_chat_session_capacity(s), 64); /* max_ctx given: allocated once */
    char big[2048] = "";
    for (int i = 0; i < 40; i++) strcat(big, "tell me more about it ");
    TU_STATUS_OK(wk_chat_session_add(s, "user", big));
    wk_clear_error();
    assert_null(wk_chat_session_reply(s));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    printf("%s\n", wk_last_error());
    assert_non_null(strstr(wk_last_error(), "conversation"));
    assert_non_null(strstr(wk_last_error(), "context of 64"));
    /* drop the turn that did not fit: the conversation goes on */
    TU_STATUS_OK(wk_chat_session_pop(s));
    TU_STATUS_OK(wk_chat_session_add(s, "user", Q2));
    drain(wk_chat_session_reply(s), &r);
    assert_true(r.st.n_prompt <= 64);
    wk_chat_session_free(s);
}

static void test_bad_arguments(void **state) {
    (void)state;
    assert_null(wk_chat_session_new(NULL, NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_add(NULL, "user", "x"), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_pop(NULL), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_reset(NULL), WK_ERR_ARG);
    assert_null(wk_chat_session_reply(NULL));
    size_t n = 7;
    assert_null(wk_chat_session_messages(NULL, &n));
    assert_int_equal(n, 0);
    assert_int_equal(wk_chat_session_cached(NULL), 0);
    wk_chat_session_free(NULL);
    if (!g_model) return;
    wk_generate_opts o;
    greedy(&o, 4);
    const char *stops[] = {""};
    o.stop = stops;
    o.n_stop = 1;
    assert_null(wk_chat_session_new(g_model, &o));
    o.n_stop = 0;
    o.sampling.top_p = 0;
    assert_null(wk_chat_session_new(g_model, &o));
    greedy(&o, 4);
    wk_chat_session *s = wk_chat_session_new(g_model, &o);
    assert_non_null(s);
    assert_null(wk_chat_session_reply(s)); /* no messages */
    assert_int_equal(wk_chat_session_pop(s), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_add(s, "", "x"), WK_ERR_ARG);
    assert_int_equal(wk_chat_session_add(s, "user", NULL), WK_ERR_ARG);
    wk_chat_session_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_turns_reuse_cache),
        cmocka_unit_test(test_growth_matches_generate),
        cmocka_unit_test(test_early_free_pop_reset),
        cmocka_unit_test(test_context_full),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
