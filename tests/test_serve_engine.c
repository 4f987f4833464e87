/* The serving engine (include/wick/serve.h) on the real SmolLM2-135M-Instruct
 * Q4_1 GGUF (WICK_SMOLLM2_GGUF; ctest label `model`; those cases skip
 * without it) and on a tiny random llama (tests/tiny_models.py, no
 * tokenizer: ids only). Manual mode (the test drives wk_engine_step) for
 * determinism, plus threaded cases.
 *
 * - a greedy request gives wk_gen's ids and text for the same prompt ids;
 * - 8 requests of different prompts and lengths at once, with
 *   max_step_tokens small enough to chunk every prefill, each == alone;
 * - seeds reproduce, different seeds differ, a sampled request is the same
 *   alone and in company;
 * - stop strings (text and stop reason as wk_gen's), max_tokens;
 * - logprobs / top_logprobs == log_softmax of wk_lm_forward's logits;
 * - cancel (queued, running, from the request's own callback) frees the
 *   slot; queue full and shutdown -> WK_ERR_BUSY; shutdown(drain) finishes
 *   what runs; bad ids / options -> -1 with WK_ERR_ARG;
 * - the engine thread: the same ids as manual mode; wait_idle; free with
 *   requests in flight. */
#include "testutil.h"
#include "wick/serve.h"
#include "wick/tokenizer.h"
#include "cpu/memory/cpu_alloc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smollm2_fixture.h"
#include "llama_testutil.h"

enum { MAX_OUT = 256 };

/* Everything one request's events said. */
typedef struct {
    int32_t ids[MAX_OUT];
    float lp[MAX_OUT];
    int32_t top_ids[MAX_OUT][5];
    float top_lp[MAX_OUT][5];
    int n_top[MAX_OUT];
    int n;
    char text[8192];
    size_t n_text;
    int done, errors, after_end; /* DONE/ERROR events; events after the last one */
    wk_stop_reason stop, last_tok_stop;
    int64_t n_prompt, n_generated, n_cached, request;
    wk_status status;
    /* cancel ourselves after this many tokens (0: never), through this engine */
    int cancel_after;
    wk_engine *engine;
} out_t;

static void on_event(void *ctx, const wk_engine_event *ev) {
    out_t *o = ctx;
    if (o->done || o->errors) o->after_end++;
    if (ev->kind == WK_EV_TOKEN) {
        assert_true(o->n < MAX_OUT);
        o->ids[o->n] = ev->id;
        o->lp[o->n] = ev->logprob;
        o->n_top[o->n] = ev->n_top;
        for (int i = 0; i < ev->n_top && i < 5; i++) {
            o->top_ids[o->n][i] = ev->top_ids[i];
            o->top_lp[o->n][i] = ev->top_logprobs[i];
        }
        o->n++;
        o->last_tok_stop = ev->stop;
        if (o->cancel_after && o->n == o->cancel_after) wk_engine_cancel(o->engine, ev->request);
    } else if (ev->kind == WK_EV_DONE) {
        o->done++;
        o->stop = ev->stop;
        o->n_prompt = ev->n_prompt;
        o->n_generated = ev->n_generated;
        o->n_cached = ev->n_cached;
    } else {
        o->errors++;
        o->status = ev->status;
    }
    if (ev->kind != WK_EV_ERROR && ev->n_text) {
        assert_true(o->n_text + ev->n_text < sizeof o->text);
        memcpy(o->text + o->n_text, ev->text, ev->n_text);
        o->n_text += ev->n_text;
        o->text[o->n_text] = 0;
    }
}

static wk_engine *manual_engine(const wk_lm *m, int slots, int64_t step_tokens, int64_t max_queue) {
    wk_engine_opts eo;
    wk_engine_opts_default(&eo);
    eo.slots = slots;
    eo.max_step_tokens = step_tokens;
    eo.max_queue = max_queue;
    eo.ctx = 512;
    eo.manual = true;
    wk_engine *e = wk_engine_new(m, &eo);
    if (!e) printf("wk_engine_new: %s\n", wk_last_error());
    assert_non_null(e);
    return e;
}

static void run_all(wk_engine *e) {
    int64_t n;
    for (int guard = 0; (n = wk_engine_step(e)) > 0; guard++) assert_true(guard < 100000);
    assert_int_equal(n, 0);
}

static int tokenize(const char *text, int32_t *ids, int cap) {
    const wk_tokenizer *t = wk_lm_tokenizer(g_model);
    int64_t n = wk_tokenizer_encode(t, text, strlen(text), WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, ids, cap);
    assert_true(n > 0 && n <= cap);
    return (int)n;
}

/* wk_gen over the same prompt text: ids, text, stop reason */
static void gen_ref(const char *prompt, const wk_generate_opts *o, out_t *r) {
    memset(r, 0, sizeof *r);
    wk_gen *g = wk_gen_start(g_model, prompt, o);
    assert_non_null(g);
    wk_gen_token t;
    do {
        TU_STATUS_OK(wk_gen_step(g, &t));
        r->ids[r->n++] = t.id;
        memcpy(r->text + r->n_text, t.text, t.n_text);
        r->n_text += t.n_text;
    } while (t.stop == WK_STOP_NONE);
    r->stop = t.stop;
    wk_gen_free(g);
}

static void greedy_gen_opts(wk_generate_opts *go, int max_new) {
    wk_generate_opts_default(go);
    go->max_new_tokens = max_new;
    go->sampling.temperature = 0;
}

static void greedy_req_opts(wk_request_opts *ro, int max_new) {
    wk_request_opts_default(ro);
    ro->max_tokens = max_new;
    ro->sampling.temperature = 0;
    ro->end_of_turn = false; /* wk_gen without chat */
}

static void assert_same(const out_t *a, const out_t *b) {
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) assert_int_equal(a->ids[i], b->ids[i]);
    assert_int_equal(a->n_text, b->n_text);
    assert_memory_equal(a->text, b->text, a->n_text);
    assert_int_equal(a->stop, b->stop);
}

static const char *PROMPTS[8] = {
    "The capital of France is",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "1, 2, 3, 4,",
    "def fibonacci(n):",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "Water boils at",
    "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. Again:",
    "Hi",
};

static void test_greedy_matches_gen(void **state) {
    (void)state;
    need_model();
    int32_t ids[256];
    int n = tokenize(PROMPT, ids, 256);
    wk_generate_opts go;
    greedy_gen_opts(&go, 24);
    out_t want, got = {0};
    gen_ref(PROMPT, &go, &want);
    wk_engine *e = manual_engine(g_model, 4, 64, 8);
    wk_request_opts ro;
    greedy_req_opts(&ro, 24);
    int64_t id = wk_engine_submit(e, ids, n, &ro, on_event, &got);
    assert_true(id >= 0);
    run_all(e);
    assert_int_equal(got.done, 1);
    assert_int_equal(got.errors + got.after_end, 0);
    assert_same(&want, &got);
    assert_int_equal(got.stop, WK_STOP_MAX_TOKENS);
    assert_int_equal(got.last_tok_stop, WK_STOP_MAX_TOKENS);
    assert_int_equal(got.n_prompt, n);
    assert_int_equal(got.n_generated, 24);
    wk_engine_stats st;
    wk_engine_get_stats(e, &st);
    assert_int_equal(st.running + st.queued, 0);
    assert_int_equal(st.requests_total, 1);
    assert_int_equal(st.generated_tokens, 24);
    assert_int_equal(st.prompt_tokens, n);
    assert_int_equal(st.steps, 24); /* one prefill, 23 decodes */
    wk_engine_free(e);
}

/* Whether wk_lm_forward gives the same last-row logits for a prompt run
 * in one call and in chunks (helper "inv" makes the kernels so; until
 * then chunked prefill may round differently and pick other ids). */
static bool forward_chunk_invariant(void) {
    int32_t ids[256];
    int n = tokenize(PROMPTS[1], ids, 256);
    const int64_t V = wk_lm_config_of(g_model)->vocab;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    wk_kv_cache *ca = wk_kv_cache_new(g_model, 256), *cb = wk_kv_cache_new(g_model, 256);
    wk_tensor *la = wk_lm_forward(g_model, ca, ids, n, false);
    wk_tensor *lb0 = wk_lm_forward(g_model, cb, ids, 5, false);
    wk_tensor *lb = wk_lm_forward(g_model, cb, ids + 5, n - 5, false);
    assert_true(la && lb0 && lb);
    TU_STATUS_OK(wk_to_host_f32(la, a, (size_t)V));
    TU_STATUS_OK(wk_to_host_f32(lb, b, (size_t)V));
    bool same = memcmp(a, b, (size_t)V * sizeof *a) == 0;
    wk_tensor_free(la);
    wk_tensor_free(lb0);
    wk_tensor_free(lb);
    wk_kv_cache_free(ca);
    wk_kv_cache_free(cb);
    free(a);
    free(b);
    return same;
}

/* 8 requests at once, prompts of different lengths, different max_tokens:
 * each == wk_gen alone. step_tokens 8 chunks every prefill (8 rows a
 * step, shared with the decode rows): strict only where wk_lm_forward is
 * chunk-invariant. Then one that meets EOS (the chat prompt, end_of_turn
 * on, as wk_gen with chat). */
static void concurrent(int64_t step_tokens) {
    /* the forward is chunk-invariant (test_batch_invariance): chunked
     * prefill must give wk_gen's ids exactly */
    const bool strict = true;
    assert_true(forward_chunk_invariant());
    wk_engine *e = manual_engine(g_model, 8, step_tokens, 16);
    static out_t got[8], want[8];
    memset(got, 0, sizeof got);
    for (int i = 0; i < 8; i++) {
        int32_t ids[256];
        int n = tokenize(PROMPTS[i], ids, 256);
        wk_generate_opts go;
        greedy_gen_opts(&go, 8 + 3 * i);
        wk_request_opts ro;
        greedy_req_opts(&ro, 8 + 3 * i);
        gen_ref(PROMPTS[i], &go, &want[i]);
        assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &got[i]) >= 0);
    }
    run_all(e);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(got[i].done, 1);
        assert_int_equal(got[i].errors + got[i].after_end, 0);
        if (strict) assert_same(&want[i], &got[i]);
    }
    /* the chat prompt with end_of_turn stops at <|im_end|> as wk_gen's chat EOS does */
    {
        out_t w, g = {0};
        wk_generate_opts go;
        greedy_gen_opts(&go, 64);
        go.chat = true;
        gen_ref("What is 2+2?", &go, &w);
        int32_t ids[256];
        char text[1024];
        int64_t nt = wk_chat_render(wk_lm_chat_template(g_model), NULL, "What is 2+2?", text, sizeof text);
        assert_true(nt > 0 && nt < (int64_t)sizeof text);
        int64_t n = wk_tokenizer_encode(wk_lm_tokenizer(g_model), text, (size_t)nt, WK_TOK_PARSE_SPECIAL, ids, 256);
        assert_true(n > 0);
        wk_request_opts ro;
        greedy_req_opts(&ro, 64);
        ro.end_of_turn = true;
        assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &g) >= 0);
        run_all(e);
        if (strict) assert_same(&w, &g);
        if (g.stop == WK_STOP_EOS) assert_int_equal(g.last_tok_stop, WK_STOP_EOS);
    }
    wk_engine_free(e);
}

static void test_concurrent_match_alone(void **state) {
    (void)state;
    need_model();
    concurrent(512);
    concurrent(8);
}

static void sampled(wk_engine *e, uint64_t seed, out_t *o, bool company) {
    memset(o, 0, sizeof *o);
    int32_t ids[256];
    int n = tokenize(PROMPTS[1], ids, 256);
    wk_request_opts ro;
    wk_request_opts_default(&ro);
    ro.max_tokens = 20;
    ro.sampling.seed = seed;
    ro.sampling.temperature = 1.0;
    ro.sampling.repeat_penalty = 1.1;
    ro.end_of_turn = false;
    static out_t others[3];
    if (company)
        for (int i = 0; i < 3; i++) {
            memset(&others[i], 0, sizeof others[i]);
            int32_t oi[256];
            int on = tokenize(PROMPTS[2 + i], oi, 256);
            wk_request_opts oo = ro;
            oo.sampling.seed = seed + 100 + (uint64_t)i;
            assert_true(wk_engine_submit(e, oi, on, &oo, on_event, &others[i]) >= 0);
        }
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, o) >= 0);
    run_all(e);
    assert_int_equal(o->done, 1);
}

static void test_seeds(void **state) {
    (void)state;
    need_model();
    wk_engine *e = manual_engine(g_model, 4, 512, 8);
    out_t a, b, c, d;
    sampled(e, 7, &a, false);
    sampled(e, 7, &b, false);
    sampled(e, 8, &c, false);
    sampled(e, 7, &d, true);
    assert_same(&a, &b);
    assert_same(&a, &d);
    bool differ = a.n != c.n;
    for (int i = 0; !differ && i < a.n; i++) differ = a.ids[i] != c.ids[i];
    assert_true(differ);
    wk_engine_free(e);
}

static void test_stop_strings(void **state) {
    (void)state;
    need_model();
    /* the text wk_gen produces, then stop strings cut from it (one split
     * across tokens) and one that never completes */
    wk_generate_opts go;
    greedy_gen_opts(&go, 32);
    out_t full;
    gen_ref(PROMPTS[1], &go, &full);
    assert_true(full.n_text > 20);
    char cut[8] = {0}, never[] = "\x01zz";
    memcpy(cut, full.text + full.n_text / 2, 5);
    const char *stops[2] = {cut, never};
    go.stop = stops;
    go.n_stop = 2;
    out_t want, got = {0};
    gen_ref(PROMPTS[1], &go, &want);
    assert_int_equal(want.stop, WK_STOP_STRING);
    wk_engine *e = manual_engine(g_model, 2, 512, 8);
    int32_t ids[256];
    int n = tokenize(PROMPTS[1], ids, 256);
    wk_request_opts ro;
    greedy_req_opts(&ro, 32);
    ro.stop = stops;
    ro.n_stop = 2;
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &got) >= 0);
    run_all(e);
    assert_same(&want, &got);
    assert_null(strstr(got.text, cut));
    /* a stop string that never completes: the held text comes out at the end */
    const char *nostop[1] = {"\x01"};
    memset(&got, 0, sizeof got);
    ro.stop = nostop;
    ro.n_stop = 1;
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &got) >= 0);
    run_all(e);
    assert_same(&full, &got);
    wk_engine_free(e);
}

/* logprobs and top_logprobs == log_softmax of wk_lm_forward's logits */
static void test_logprobs(void **state) {
    (void)state;
    need_model();
    int32_t ids[256];
    int n = tokenize(PROMPT, ids, 250);
    wk_engine *e = manual_engine(g_model, 2, 16, 8);
    wk_request_opts ro;
    greedy_req_opts(&ro, 4);
    ro.logprobs = true;
    ro.top_logprobs = 5;
    out_t got = {0};
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &got) >= 0);
    run_all(e);
    assert_int_equal(got.n, 4);
    wk_kv_cache *c = wk_kv_cache_new(g_model, 512);
    const int64_t V = wk_lm_config_of(g_model)->vocab;
    float *l = malloc((size_t)V * sizeof *l);
    for (int t = 0; t < 4; t++) {
        wk_tensor *lt = t == 0 ? wk_lm_forward(g_model, c, ids, n, false) : wk_lm_forward(g_model, c, &got.ids[t - 1], 1, false);
        assert_non_null(lt);
        TU_STATUS_OK(wk_to_host_f32(lt, l, (size_t)V));
        wk_tensor_free(lt);
        double mx = -INFINITY, sum = 0;
        int64_t arg = 0;
        for (int64_t i = 0; i < V; i++)
            if (l[i] > mx) mx = l[i], arg = i;
        for (int64_t i = 0; i < V; i++) sum += exp((double)l[i] - mx);
        const double lse = mx + log(sum);
        assert_int_equal(got.ids[t], arg);
        assert_float_equal(got.lp[t], (float)(l[arg] - lse), 1e-5);
        assert_int_equal(got.n_top[t], 5);
        assert_int_equal(got.top_ids[t][0], arg);
        for (int k = 0; k < 5; k++) {
            assert_float_equal(got.top_lp[t][k], (float)(l[got.top_ids[t][k]] - lse), 1e-5);
            if (k) assert_true(got.top_lp[t][k] <= got.top_lp[t][k - 1]);
        }
        /* nothing outside the top 5 beats the 5th */
        int beat = 0;
        for (int64_t i = 0; i < V; i++) beat += l[i] - lse > got.top_lp[t][4] + 1e-6;
        assert_true(beat <= 4);
    }
    free(l);
    wk_kv_cache_free(c);
    wk_engine_free(e);
}

static void test_cancel_queue_busy(void **state) {
    (void)state;
    need_model();
    int32_t ids[256];
    int n = tokenize(PROMPT, ids, 256);
    wk_engine *e = manual_engine(g_model, 1, 16, 2);
    wk_request_opts ro;
    greedy_req_opts(&ro, 50);
    out_t a = {0}, b = {0}, c = {0}, d = {0};
    int64_t ra = wk_engine_submit(e, ids, n, &ro, on_event, &a);
    int64_t rb = wk_engine_submit(e, ids, n, &ro, on_event, &b);
    assert_true(ra >= 0 && rb > ra);
    /* the queue holds 2: a third is refused */
    assert_int_equal(wk_engine_submit(e, ids, n, &ro, on_event, &c), -1);
    assert_int_equal(wk_last_status(), WK_ERR_BUSY);
    assert_true(wk_engine_step(e) > 0); /* a runs, b waits for the one slot */
    assert_int_equal(a.n, 1);
    wk_engine_stats st;
    wk_engine_get_stats(e, &st);
    assert_int_equal(st.running, 1);
    assert_int_equal(st.queued, 1);
    assert_int_equal(st.kv_blocks_total, 512 / 16); /* one slot of ctx 512, 16 positions a block */
    assert_int_equal(st.kv_blocks_used, (n + 50 - 1 + 15) / 16); /* what a may fill */
    assert_false(wk_engine_wait_idle(e, 0));
    assert_false(wk_engine_wait_idle(e, 5)); /* manual: nobody steps */
    wk_engine_cancel(e, rb); /* queued */
    wk_engine_cancel(e, ra); /* running */
    wk_engine_cancel(e, 12345);
    assert_int_equal(wk_engine_step(e), 0);
    assert_int_equal(a.done + b.done, 2);
    assert_int_equal(a.stop, WK_STOP_CALLBACK);
    assert_int_equal(b.stop, WK_STOP_CALLBACK);
    assert_int_equal(b.n, 0);
    assert_int_equal(a.n, 1);
    wk_engine_get_stats(e, &st);
    assert_int_equal(st.requests_cancelled, 2);
    assert_int_equal(st.running + st.queued, 0);
    /* the slot is free again: a new one runs to its end */
    ro.max_tokens = 3;
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &c) >= 0);
    run_all(e);
    assert_int_equal(c.n, 3);
    /* a callback that cancels its own request after 2 tokens */
    ro.max_tokens = 20;
    d.cancel_after = 2;
    d.engine = e;
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &d) >= 0);
    run_all(e);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.done, 1);
    assert_int_equal(d.stop, WK_STOP_CALLBACK);
    assert_int_equal(a.after_end + b.after_end + c.after_end + d.after_end, 0);
    wk_engine_free(e);
}

static void test_shutdown_drain(void **state) {
    (void)state;
    need_model();
    int32_t ids[256];
    int n = tokenize(PROMPT, ids, 256);
    wk_engine *e = manual_engine(g_model, 1, 16, 4);
    wk_request_opts ro;
    greedy_req_opts(&ro, 5);
    out_t a = {0}, b = {0}, c = {0};
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &a) >= 0);
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &b) >= 0);
    wk_engine_step(e);
    wk_engine_shutdown(e, true);
    assert_int_equal(wk_engine_submit(e, ids, n, &ro, on_event, &c), -1);
    assert_int_equal(wk_last_status(), WK_ERR_BUSY);
    run_all(e);
    assert_int_equal(a.stop, WK_STOP_MAX_TOKENS);
    assert_int_equal(b.stop, WK_STOP_MAX_TOKENS);
    assert_true(wk_engine_wait_idle(e, 0));
    wk_engine_free(e);
    /* without drain: both end cancelled */
    e = manual_engine(g_model, 1, 16, 4);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &a) >= 0);
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &b) >= 0);
    wk_engine_step(e);
    wk_engine_shutdown(e, false);
    run_all(e);
    assert_int_equal(a.stop, WK_STOP_CALLBACK);
    assert_int_equal(b.stop, WK_STOP_CALLBACK);
    /* free with requests still in: they get DONE (cancelled) */
    wk_engine_free(e);
    e = manual_engine(g_model, 1, 16, 4);
    memset(&a, 0, sizeof a);
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &a) >= 0);
    wk_engine_free(e);
    assert_int_equal(a.done, 1);
    assert_int_equal(a.stop, WK_STOP_CALLBACK);
}

static void test_bad_args(void **state) {
    (void)state;
    wk_engine_opts eo;
    wk_engine_opts_default(&eo);
    assert_null(wk_engine_new(NULL, &eo));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_int_equal(wk_engine_submit(NULL, NULL, 0, NULL, NULL, NULL), -1);
    assert_int_equal(wk_engine_step(NULL), -1);
    wk_engine_cancel(NULL, 0);
    wk_engine_shutdown(NULL, true);
    assert_true(wk_engine_wait_idle(NULL, 0));
    wk_engine_free(NULL);
    need_model();
    eo.slots = 0;
    assert_null(wk_engine_new(g_model, &eo));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    eo.slots = 8;
    eo.max_step_tokens = 4;
    assert_null(wk_engine_new(g_model, &eo));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    eo.max_step_tokens = 64;
    eo.ctx = 1 << 30;
    assert_null(wk_engine_new(g_model, &eo));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_engine *e = manual_engine(g_model, 2, 16, 4);
    wk_request_opts ro;
    wk_request_opts_default(&ro);
    int32_t ids[3] = {1, 2, 3}, bad[2] = {1, 1 << 30};
    out_t o = {0};
    assert_int_equal(wk_engine_submit(e, NULL, 3, &ro, on_event, &o), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_int_equal(wk_engine_submit(e, ids, 0, &ro, on_event, &o), -1);
    assert_int_equal(wk_engine_submit(e, bad, 2, &ro, on_event, &o), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    static int32_t longp[600];
    assert_int_equal(wk_engine_submit(e, longp, 600, &ro, on_event, &o), -1); /* ctx 512 */
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    ro.top_logprobs = 21;
    assert_int_equal(wk_engine_submit(e, ids, 3, &ro, on_event, &o), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    ro.top_logprobs = 0;
    ro.n_stop = 1;
    const char *empty[1] = {""};
    ro.stop = empty;
    assert_int_equal(wk_engine_submit(e, ids, 3, &ro, on_event, &o), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    ro.n_stop = 0;
    ro.sampling.top_p = 0;
    assert_int_equal(wk_engine_submit(e, ids, 3, &ro, on_event, &o), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    /* the engine still serves */
    wk_request_opts_default(&ro);
    ro.max_tokens = 2;
    assert_true(wk_engine_submit(e, ids, 3, &ro, on_event, &o) >= 0);
    run_all(e);
    assert_int_equal(o.n, 2);
    wk_engine_free(e);
}

static int fail_all(size_t nbytes) {
    (void)nbytes;
    return 1;
}

/* A forward that fails (every tensor allocation refused) fails the
 * requests of that step with WK_EV_ERROR, frees their slots, and the
 * engine serves the next ones. */
static void test_forward_error(void **state) {
    (void)state;
    need_model();
    int32_t ids[256];
    int n = tokenize(PROMPT, ids, 256);
    wk_engine *e = manual_engine(g_model, 2, 512, 4);
    wk_request_opts ro;
    greedy_req_opts(&ro, 8);
    out_t a = {0}, b = {0}, c = {0};
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &a) >= 0);
    assert_true(wk_engine_step(e) > 0);
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &b) >= 0);
    wk__cpu_alloc_set_fail_hook(fail_all);
    int64_t r = wk_engine_step(e);
    wk__cpu_alloc_set_fail_hook(NULL);
    assert_int_equal(r, -1);
    assert_int_equal(wk_last_status(), WK_ERR_OOM);
    assert_int_equal(a.errors + b.errors, 2);
    assert_int_equal(a.status, WK_ERR_OOM);
    assert_int_equal(a.done + b.done, 0);
    wk_engine_stats st;
    wk_engine_get_stats(e, &st);
    assert_int_equal(st.requests_failed, 2);
    assert_int_equal(st.running + st.queued, 0);
    assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &c) >= 0);
    run_all(e);
    assert_int_equal(c.n, 8);
    assert_int_equal(a.after_end + b.after_end, 0);
    wk_engine_free(e);
}

/* A grammar: only its sentences come out, and the request ends when the
 * grammar is complete with nothing but EOS to follow. Skipped while the
 * grammar is the placeholder (src/text/grammar_stub.c). */
static void test_grammar(void **state) {
    (void)state;
    need_model();
    const char *gbnf = "root ::= (\"yes\" | \"no\") \".\"";
    wk_grammar *g = wk_grammar_from_gbnf(gbnf, strlen(gbnf), NULL);
    if (!g && wk_last_status() == WK_ERR_NOT_COMPILED) {
        printf("skip: %s\n", wk_last_error());
        skip();
    }
    assert_non_null(g);
    wk_engine *e = manual_engine(g_model, 2, 512, 4);
    int32_t ids[256];
    int n = tokenize("<|im_start|>user\nIs water wet? Answer yes or no.<|im_end|>\n<|im_start|>assistant\n", ids, 256);
    for (int greedy = 0; greedy < 2; greedy++) {
        wk_request_opts ro;
        wk_request_opts_default(&ro);
        if (greedy) ro.sampling.temperature = 0;
        ro.max_tokens = 16;
        ro.grammar = g;
        ro.logprobs = true;
        out_t o = {0};
        assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &o) >= 0);
        run_all(e);
        assert_int_equal(o.done, 1);
        assert_int_equal(o.errors, 0);
        assert_true(!strcmp(o.text, "yes.") || !strcmp(o.text, "no."));
        assert_int_equal(o.stop, WK_STOP_EOS);
        for (int i = 0; i < o.n; i++) assert_true(o.lp[i] <= 0 && o.lp[i] > -INFINITY);
    }
    wk_engine_free(e);
    wk_grammar_free(g);
}

/* The engine thread: 6 requests from this thread, wait_idle, the ids of
 * manual mode; then free while requests still run. */
/* Prefix reuse through the pool: a second request that shares a long
 * prompt prefix with a finished one attaches its full blocks (n_cached > 0,
 * a multiple of the block size) and still gives wk_gen's ids exactly; the
 * stats count them. Then the KV dtypes the pool stores: f16 and q8_0 run
 * (q8_0 rounds keys and values, so only the f32 and the f16-free runs are
 * compared with wk_gen). */
static void test_prefix_reuse_and_kv_types(void **state) {
    (void)state;
    need_model();
    static const char *SYS = "You are a careful assistant. You answer in short sentences, you never invent facts, "
                             "and you say so when you do not know. The user is a student of geography. ";
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%sQuestion: what is the capital of France?", SYS);
    snprintf(p2, sizeof p2, "%sQuestion: what is the capital of Italy?", SYS);
    wk_engine *e = manual_engine(g_model, 2, 64, 8);
    out_t got1 = {0}, got2 = {0}, want2;
    int32_t ids[256];
    wk_request_opts ro;
    greedy_req_opts(&ro, 12);
    int n1 = tokenize(p1, ids, 256);
    assert_true(wk_engine_submit(e, ids, n1, &ro, on_event, &got1) >= 0);
    run_all(e);
    assert_int_equal(got1.n_cached, 0);
    int n2 = tokenize(p2, ids, 256);
    assert_true(wk_engine_submit(e, ids, n2, &ro, on_event, &got2) >= 0);
    run_all(e);
    wk_generate_opts go;
    greedy_gen_opts(&go, 12);
    gen_ref(p2, &go, &want2);
    assert_same(&want2, &got2);
    printf("prefix reuse: %lld of %d prompt ids from the cache\n", (long long)got2.n_cached, n2);
    assert_true(got2.n_cached >= 16 && got2.n_cached % 16 == 0 && got2.n_cached < n2);
    wk_engine_stats st;
    wk_engine_get_stats(e, &st);
    assert_int_equal(st.cached_prompt_tokens, got2.n_cached);
    assert_true(st.kv_blocks_cached > 0 && st.kv_blocks_used == 0);
    wk_engine_free(e);
    /* the other KV dtypes: they run, end as asked, and reuse prefixes too */
    const wk_dtype kts[2] = {WK_F16, WK_Q8_0};
    for (int k = 0; k < 2; k++) {
        wk_engine_opts eo;
        wk_engine_opts_default(&eo);
        eo.slots = 2;
        eo.max_step_tokens = 64;
        eo.ctx = 256;
        eo.manual = true;
        eo.kv_dtype = kts[k];
        wk_engine *ek = wk_engine_new(g_model, &eo);
        assert_non_null(ek);
        out_t a = {0}, b = {0};
        n1 = tokenize(p1, ids, 256);
        assert_true(wk_engine_submit(ek, ids, n1, &ro, on_event, &a) >= 0);
        run_all(ek);
        n2 = tokenize(p2, ids, 256);
        assert_true(wk_engine_submit(ek, ids, n2, &ro, on_event, &b) >= 0);
        run_all(ek);
        assert_int_equal(a.done + b.done, 2);
        assert_true(a.n >= 1 && a.n <= 12 && b.n >= 1 && b.n <= 12); /* 12, or an EOS first */
        assert_int_equal(a.errors + b.errors, 0);
        assert_true(b.n_cached > 0);
        printf("kv %s: %d + %d tokens, \"%s\" / \"%s\"\n", wk_dtype_name(kts[k]), a.n, b.n, a.text, b.text);
        wk_engine_free(ek);
    }
}

static void test_threaded(void **state) {
    (void)state;
    need_model();
    wk_engine_opts eo;
    wk_engine_opts_default(&eo);
    eo.slots = 4;
    eo.max_step_tokens = 512; /* no chunking: see concurrent() */
    eo.ctx = 512;
    wk_engine *e = wk_engine_new(g_model, &eo);
    assert_non_null(e);
    static out_t got[6], want[6];
    memset(got, 0, sizeof got);
    for (int i = 0; i < 6; i++) {
        int32_t ids[256];
        int n = tokenize(PROMPTS[i], ids, 256);
        wk_generate_opts go;
        greedy_gen_opts(&go, 6 + i);
        gen_ref(PROMPTS[i], &go, &want[i]);
        wk_request_opts ro;
        greedy_req_opts(&ro, 6 + i);
        assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &got[i]) >= 0);
    }
    assert_true(wk_engine_wait_idle(e, -1));
    for (int i = 0; i < 6; i++) assert_same(&want[i], &got[i]);
    wk_engine_stats st;
    wk_engine_get_stats(e, &st);
    assert_int_equal(st.requests_total, 6);
    assert_int_equal(st.running + st.queued, 0);
    /* free with work in flight: everything ends with one DONE */
    memset(got, 0, sizeof got);
    for (int i = 0; i < 3; i++) {
        int32_t ids[256];
        int n = tokenize(PROMPTS[i], ids, 256);
        wk_request_opts ro;
        greedy_req_opts(&ro, 200);
        assert_true(wk_engine_submit(e, ids, n, &ro, on_event, &got[i]) >= 0);
    }
    usleep(20000);
    wk_engine_free(e);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(got[i].done, 1);
        assert_int_equal(got[i].after_end, 0);
    }
}

/* A tiny random llama without a tokenizer: ids only. Greedy requests at
 * once, chunked, == a plain wk_lm_forward argmax loop. */
static void test_tiny(void **state) {
    (void)state;
    char dir[512], cmd[1024];
    lt_tmp_path(dir, sizeof dir, "serve_tiny_");
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tiny_models.py llama %s >/dev/null", WICK_TESTS_DIR, dir);
    assert_int_equal(system(cmd), 0);
    wk_lm *m = wk_lm_load(dir, NULL);
    assert_non_null(m);
    const int64_t V = wk_lm_config_of(m)->vocab;
    wk_engine_opts eo;
    wk_engine_opts_default(&eo);
    eo.slots = 3;
    eo.max_step_tokens = 5;
    eo.ctx = 64;
    eo.manual = true;
    wk_engine *e = wk_engine_new(m, &eo);
    assert_non_null(e);
    static out_t got[5];
    memset(got, 0, sizeof got);
    int32_t prompts[5][20];
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 20; j++) prompts[i][j] = (int32_t)((i * 37 + j * 11 + 3) % V);
        wk_request_opts ro;
        greedy_req_opts(&ro, 10);
        ro.stop_at_eos = false;
        assert_true(wk_engine_submit(e, prompts[i], 4 + 3 * i, &ro, on_event, &got[i]) >= 0);
    }
    run_all(e);
    float *l = malloc((size_t)V * sizeof *l);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(got[i].n, 10);
        assert_int_equal(got[i].n_text, 0);
        wk_kv_cache *c = wk_kv_cache_new(m, 64);
        int32_t last = 0;
        for (int t = 0; t < 10; t++) {
            wk_tensor *lt = t == 0 ? wk_lm_forward(m, c, prompts[i], 4 + 3 * i, false) : wk_lm_forward(m, c, &last, 1, false);
            assert_non_null(lt);
            TU_STATUS_OK(wk_to_host_f32(lt, l, (size_t)V));
            wk_tensor_free(lt);
            int64_t arg = 0;
            for (int64_t k = 1; k < V; k++)
                if (l[k] > l[arg]) arg = k;
            assert_int_equal(got[i].ids[t], arg);
            last = (int32_t)arg;
        }
        wk_kv_cache_free(c);
    }
    /* stop strings need a tokenizer */
    wk_request_opts ro;
    wk_request_opts_default(&ro);
    const char *stops[1] = {"x"};
    ro.stop = stops;
    ro.n_stop = 1;
    assert_int_equal(wk_engine_submit(e, prompts[0], 3, &ro, on_event, &got[0]), -1);
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    free(l);
    wk_engine_free(e);
    wk_lm_free(m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_tiny),
        cmocka_unit_test(test_greedy_matches_gen),
        cmocka_unit_test(test_concurrent_match_alone),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_stop_strings),
        cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_cancel_queue_busy),
        cmocka_unit_test(test_shutdown_drain),
        cmocka_unit_test(test_forward_error),
        cmocka_unit_test(test_grammar),
        cmocka_unit_test(test_prefix_reuse_and_kv_types),
        cmocka_unit_test(test_threaded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
