/* The step API (wk_gen_start / wk_gen_step / wk_gen_stats /
 * wk_gen_stop_reason / wk_gen_free) on the real SmolLM2-135M-Instruct Q4_1
 * GGUF (WICK_SMOLLM2_GGUF; ctest label `model`; the model cases skip
 * without it, the argument checks run anyway). A few tokens per case.
 *
 * - stepping gives the ids of a plain greedy loop and, for several settings,
 *   the text, token count, prompt size and stop reason of wk_generate;
 * - stop strings split across tokens are held back and cut, or released
 *   when they do not complete;
 * - the stop reasons: max tokens, context full (and a limit equal to the
 *   room left), EOS in chat, a callback through wk_generate;
 * - two sessions over one model, stepped in turn, match each run alone;
 * - NULL arguments and a step after the end are errors, never crashes. */
#include "testutil.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "wick/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smollm2_fixture.h"

enum { MAX_IDS = 64, MAX_PIECES = 64 };

/* What a run produced: the text, the ids, each step's text length. */
typedef struct {
    char text[4096];
    size_t n;
    int32_t ids[MAX_IDS];
    size_t piece_len[MAX_PIECES];
    int n_ids, pieces, stop_after;
    wk_stop_reason last_stop;
} run_out;

static void append(run_out *r, const char *b, size_t n) {
    assert_true(r->n + n < sizeof r->text);
    memcpy(r->text + r->n, b, n);
    r->n += n;
    r->text[r->n] = 0;
}

/* One step into r: the id, the text (NUL-terminated as promised). */
static void take(run_out *r, const wk_gen_token *t) {
    assert_non_null(t->text);
    assert_int_equal(t->text[t->n_text], 0);
    assert_true(r->n_ids < MAX_IDS);
    r->ids[r->n_ids] = t->id;
    r->piece_len[r->n_ids++] = t->n_text;
    append(r, t->text, t->n_text);
    r->last_stop = t->stop;
}

/* Steps a session to its end. */
static void run_steps(const char *prompt, const wk_generate_opts *o, run_out *r, wk_generate_stats *st) {
    memset(r, 0, sizeof *r);
    wk_clear_error();
    wk_gen *g = wk_gen_start(g_model, prompt, o);
    if (!g) printf("wk_gen_start: %s\n", wk_last_error());
    assert_non_null(g);
    assert_int_equal(wk_gen_stop_reason(g), WK_STOP_NONE);
    wk_gen_token t;
    do {
        TU_STATUS_OK(wk_gen_step(g, &t));
        take(r, &t);
    } while (t.stop == WK_STOP_NONE);
    assert_int_equal(wk_gen_stop_reason(g), t.stop);
    wk_gen_stats(g, st);
    assert_int_equal(st->stop_reason, t.stop);
    assert_int_equal(st->n_generated, r->n_ids);
    wk_gen_free(g);
}

static int collect(void *ctx, const char *b, size_t n) {
    run_out *r = ctx;
    append(r, b, n);
    return ++r->pieces == r->stop_after;
}

static void run_generate(const char *prompt, wk_generate_opts *o, run_out *r, wk_generate_stats *st) {
    memset(r, 0, sizeof *r);
    o->on_text = collect;
    o->ctx = r;
    wk_clear_error();
    TU_STATUS_OK(wk_generate(g_model, prompt, o, st));
    o->on_text = NULL;
    o->ctx = NULL;
}

static void greedy_opts(wk_generate_opts *o, int64_t n) {
    wk_generate_opts_default(o);
    o->max_new_tokens = n;
    o->sampling.temperature = 0;
}

/* Step and wk_generate agree: text, counts, stop reason. */
static void same_as_generate(const char *prompt, wk_generate_opts *o, run_out *steps, wk_generate_stats *sst) {
    run_out gen;
    wk_generate_stats gst;
    run_steps(prompt, o, steps, sst);
    run_generate(prompt, o, &gen, &gst);
    printf("\"%s\": %d tokens, stop %d\n", steps->text, steps->n_ids, (int)sst->stop_reason);
    assert_string_equal(steps->text, gen.text);
    assert_int_equal(sst->n_prompt, gst.n_prompt);
    assert_int_equal(sst->n_generated, gst.n_generated);
    assert_int_equal(sst->stop_reason, gst.stop_reason);
    assert_true(sst->prefill_ms > 0 && sst->first_token_ms >= sst->prefill_ms);
}

static void test_bad_args(void **state) {
    (void)state;
    wk_gen_token t = {.id = 7};
    wk_generate_stats st = {.n_prompt = 9};
    wk_clear_error();
    assert_null(wk_gen_start(NULL, PROMPT, NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_gen_start"));
    wk_clear_error();
    assert_int_equal(wk_gen_step(NULL, &t), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_gen_step"));
    assert_int_equal(t.id, -1);
    assert_int_equal(t.n_text, 0);
    assert_int_equal(t.stop, WK_STOP_NONE);
    assert_int_equal(wk_gen_step(NULL, NULL), WK_ERR_ARG);
    wk_gen_stats(NULL, &st);
    assert_int_equal(st.n_prompt, 0);
    assert_int_equal(st.stop_reason, WK_STOP_NONE);
    wk_gen_stats(NULL, NULL);
    assert_int_equal(wk_gen_stop_reason(NULL), WK_STOP_NONE);
    wk_gen_free(NULL);
    wk_clear_error();
    /* the old numbers of wk_generate_stats.stop_reason stay */
    assert_int_equal(WK_STOP_MAX_TOKENS, 0);
    assert_int_equal(WK_STOP_EOS, 1);
    assert_int_equal(WK_STOP_STRING, 2);
    assert_int_equal(WK_STOP_CALLBACK, 3);
    assert_int_equal(WK_STOP_CONTEXT_FULL, 4);
}

static void test_bad_args_model(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 2);
    wk_clear_error();
    assert_null(wk_gen_start(g_model, NULL, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    const char *empty[] = {""};
    o.stop = empty;
    o.n_stop = 1;
    wk_clear_error();
    assert_null(wk_gen_start(g_model, PROMPT, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    o.stop = NULL;
    wk_clear_error();
    assert_null(wk_gen_start(g_model, PROMPT, &o)); /* one stop string, no array */
    o.n_stop = 0;
    o.max_ctx = 4; /* the prompt is 5 tokens */
    wk_clear_error();
    assert_null(wk_gen_start(g_model, PROMPT, &o));
    assert_non_null(strstr(wk_last_error(), "5 tokens"));
    o.max_ctx = 0;
    o.sampling.top_p = 0;
    wk_clear_error();
    assert_null(wk_gen_start(g_model, PROMPT, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    o.sampling.top_p = 1;
    wk_clear_error();
    assert_null(wk_gen_start(g_model, "", &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);

    /* o NULL: the defaults; out NULL is an error that leaves the session as it was */
    wk_clear_error();
    wk_gen *g = wk_gen_start(g_model, PROMPT, NULL);
    assert_non_null(g);
    assert_int_equal(wk_gen_step(g, NULL), WK_ERR_ARG);
    wk_generate_stats st;
    wk_gen_stats(g, &st);
    assert_int_equal(st.n_prompt, 5);
    assert_int_equal(st.n_generated, 0);
    wk_gen_free(g);

    /* a step after the end: an error, the session keeps its reason */
    greedy_opts(&o, 2);
    g = wk_gen_start(g_model, PROMPT, &o);
    assert_non_null(g);
    wk_gen_token t;
    TU_STATUS_OK(wk_gen_step(g, &t));
    assert_int_equal(t.stop, WK_STOP_NONE);
    TU_STATUS_OK(wk_gen_step(g, &t));
    assert_int_equal(t.stop, WK_STOP_MAX_TOKENS);
    wk_clear_error();
    assert_int_equal(wk_gen_step(g, &t), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "ended"));
    assert_int_equal(t.id, -1);
    assert_int_equal(t.n_text, 0);
    assert_int_equal(wk_gen_step(g, &t), WK_ERR_ARG);
    assert_int_equal(wk_gen_stop_reason(g), WK_STOP_MAX_TOKENS);
    wk_gen_stats(g, &st);
    assert_int_equal(st.n_generated, 2);
    wk_gen_free(g);
    wk_clear_error();
}

/* The reference ids: tokenize, one prefill, argmax, one token at a time. */
static void plain_greedy(const char *prompt, int64_t n, int32_t *out) {
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
}

static void test_same_as_generate(void **state) {
    (void)state;
    need_model();
    enum { N = 20 };
    wk_generate_opts o;
    greedy_opts(&o, N);
    run_out r;
    wk_generate_stats st;
    same_as_generate(PROMPT, &o, &r, &st);
    /* the CLI's greedy text on this file (README), its 20th token a space */
    assert_string_equal(r.text, " Paris.\n\nThe answer is: 2018-01-22 ");
    assert_int_equal(st.stop_reason, WK_STOP_MAX_TOKENS);
    assert_int_equal(r.n_ids, N);
    int32_t want[N];
    plain_greedy(PROMPT, N, want);
    assert_memory_equal(r.ids, want, sizeof want);
    /* the ids decode to the text, piece by piece as they came */
    char dec[1024];
    int64_t len = wk_tokenizer_decode(wk_lm_tokenizer(g_model), r.ids, N, true, dec, sizeof dec);
    assert_true(len > 0 && len < (int64_t)sizeof dec);
    assert_string_equal(dec, r.text);
    assert_int_equal(r.piece_len[0], 6); /* " Paris" */

    /* sampled, with a repetition penalty */
    wk_generate_opts_default(&o);
    o.max_new_tokens = 12;
    o.sampling.temperature = 0.9;
    o.sampling.seed = 5;
    o.sampling.repeat_penalty = 1.3;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_int_equal(st.n_generated, r.n_ids);
    /* no stop at EOS, a stop string that never completes */
    greedy_opts(&o, 6);
    o.stop_at_eos = false;
    const char *never[] = {"zzz"};
    o.stop = never;
    o.n_stop = 1;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_string_equal(r.text, " Paris.\n\nThe answer");
}

static void test_stop_strings_across_tokens(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 20);
    /* " Paris" "." "\n\n": "s.\n" starts in the first token, ends in the third */
    const char *stops[] = {"s.\n"};
    o.stop = stops;
    o.n_stop = 1;
    run_out r;
    wk_generate_stats st;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_string_equal(r.text, " Pari");
    assert_int_equal(st.stop_reason, WK_STOP_STRING);
    assert_int_equal(r.n_ids, 3);
    assert_int_equal(r.piece_len[0], 5); /* "s" held back */
    assert_int_equal(r.piece_len[1], 0); /* "s." held back */
    assert_int_equal(r.piece_len[2], 0); /* complete: cut */

    /* a prefix that never completes is held, then released whole */
    const char *almost[] = {"answer is: 2019"};
    o.stop = almost;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_string_equal(r.text, " Paris.\n\nThe answer is: 2018-01-22 ");
    assert_int_equal(st.stop_reason, WK_STOP_MAX_TOKENS);
    size_t total = 0;
    for (int i = 0; i < r.n_ids; i++) total += r.piece_len[i];
    assert_int_equal(total, strlen(r.text));

    /* the earliest of several stop strings; the text ends before it */
    const char *two[] = {"answer", "The"};
    o.stop = two;
    o.n_stop = 2;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_string_equal(r.text, " Paris.\n\n");
    assert_int_equal(st.stop_reason, WK_STOP_STRING);
}

static void test_limits(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 10);
    run_out r;
    wk_generate_stats st;
    /* 7 positions: the prompt (5), then 3 tokens (the last is never run) */
    o.max_ctx = 7;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_int_equal(st.stop_reason, WK_STOP_CONTEXT_FULL);
    assert_int_equal(r.n_ids, 3);
    assert_int_equal(r.last_stop, WK_STOP_CONTEXT_FULL);
    /* no limit of the caller's: the context again */
    o.max_new_tokens = 0;
    o.max_ctx = 8;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_int_equal(st.stop_reason, WK_STOP_CONTEXT_FULL);
    assert_int_equal(r.n_ids, 4);
    /* the caller's limit equal to the room: the caller's limit it is */
    o.max_new_tokens = 3;
    o.max_ctx = 7;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_int_equal(st.stop_reason, WK_STOP_MAX_TOKENS);
    assert_int_equal(r.n_ids, 3);
    /* max tokens */
    o.max_new_tokens = 4;
    o.max_ctx = 0;
    same_as_generate(PROMPT, &o, &r, &st);
    assert_int_equal(st.stop_reason, WK_STOP_MAX_TOKENS);
    assert_int_equal(r.n_ids, 4);
    assert_string_equal(r.text, " Paris.\n\n"); /* " Paris" "." "\n" "\n" */
}

static void test_eos_in_chat(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 24);
    o.chat = true;
    run_out r;
    wk_generate_stats st;
    same_as_generate("What is the capital of France? One word.", &o, &r, &st);
    assert_int_equal(st.stop_reason, WK_STOP_EOS);
    assert_non_null(strstr(r.text, "Paris"));
    assert_null(strstr(r.text, "<|im"));
    /* the last step hands back the end-of-turn id, with no text */
    assert_int_equal(r.ids[r.n_ids - 1], wk_tokenizer_find(wk_lm_tokenizer(g_model), "<|im_end|>"));
    assert_int_equal(r.piece_len[r.n_ids - 1], 0);
}

static void test_callback_stop(void **state) {
    (void)state;
    need_model();
    wk_generate_opts o;
    greedy_opts(&o, 10);
    run_out r;
    memset(&r, 0, sizeof r);
    r.stop_after = 2;
    o.on_text = collect;
    o.ctx = &r;
    wk_generate_stats st;
    TU_STATUS_OK(wk_generate(g_model, PROMPT, &o, &st));
    assert_int_equal(st.stop_reason, WK_STOP_CALLBACK);
    assert_int_equal(st.n_generated, 2);
    assert_string_equal(r.text, " Paris.");
    /* on the last token too: the callback's stop wins */
    memset(&r, 0, sizeof r);
    r.stop_after = 1;
    o.max_new_tokens = 1;
    TU_STATUS_OK(wk_generate(g_model, PROMPT, &o, &st));
    assert_int_equal(st.stop_reason, WK_STOP_CALLBACK);
    /* wk_gen_start ignores on_text: the step hands the text back */
    memset(&r, 0, sizeof r);
    r.stop_after = 1;
    o.max_new_tokens = 3;
    run_out s;
    run_steps(PROMPT, &o, &s, &st);
    assert_int_equal(r.pieces, 0);
    assert_int_equal(st.stop_reason, WK_STOP_MAX_TOKENS);
}

/* No global state: two sessions stepped in turn give what each gives alone. */
static void test_sessions_interleaved(void **state) {
    (void)state;
    need_model();
    wk_generate_opts oa, ob;
    greedy_opts(&oa, 8);
    wk_generate_opts_default(&ob);
    ob.max_new_tokens = 10;
    ob.sampling.temperature = 1.0;
    ob.sampling.seed = 3;
    run_out a1, b1, a2, b2;
    wk_generate_stats st;
    run_steps(PROMPT, &oa, &a1, &st);
    run_steps("Once upon a time", &ob, &b1, &st);
    memset(&a2, 0, sizeof a2);
    memset(&b2, 0, sizeof b2);
    wk_gen *ga = wk_gen_start(g_model, PROMPT, &oa), *gb = wk_gen_start(g_model, "Once upon a time", &ob);
    assert_non_null(ga);
    assert_non_null(gb);
    wk_gen_token t;
    while (wk_gen_stop_reason(ga) == WK_STOP_NONE || wk_gen_stop_reason(gb) == WK_STOP_NONE) {
        if (wk_gen_stop_reason(ga) == WK_STOP_NONE) {
            TU_STATUS_OK(wk_gen_step(ga, &t));
            take(&a2, &t);
        }
        if (wk_gen_stop_reason(gb) == WK_STOP_NONE) {
            TU_STATUS_OK(wk_gen_step(gb, &t));
            take(&b2, &t);
        }
    }
    wk_gen_free(ga);
    wk_gen_free(gb);
    assert_string_equal(a1.text, a2.text);
    assert_string_equal(b1.text, b2.text);
    assert_int_equal(a1.n_ids, a2.n_ids);
    assert_int_equal(b1.n_ids, b2.n_ids);
    assert_memory_equal(a1.ids, a2.ids, (size_t)a1.n_ids * sizeof *a1.ids);
    assert_memory_equal(b1.ids, b2.ids, (size_t)b1.n_ids * sizeof *b1.ids);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_bad_args_model),
        cmocka_unit_test(test_same_as_generate),
        cmocka_unit_test(test_stop_strings_across_tokens),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_eos_in_chat),
        cmocka_unit_test(test_callback_stop),
        cmocka_unit_test(test_sessions_interleaved),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
