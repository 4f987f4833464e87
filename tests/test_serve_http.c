/* `wick serve`'s request parsing and JSON writing (tools/serve_req.c,
 * tools/serve_json.c), without a server: every wrong type is refused
 * naming its field; written JSON is valid (wick's strict reader accepts
 * it) whatever bytes a token holds. The server end to end:
 * tests/python/test_serve_openai.py. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "tools/serve_json.h"
#include "tools/serve_req.h"

static bool valid_json(const wk__sbuf *b) { return wk__json_validate(b->p, b->n, NULL, 0); }

static void test_writer(void **state) {
    (void)state;
    wk__sbuf b = {0};
    wk__json_w_str(&b, "a\"b\\c\n\t\x01\x1f/\xc3\xa9", 12);
    assert_string_equal(b.p, "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f/\xc3\xa9\"");
    assert_true(valid_json(&b));
    wk__sbuf_free(&b);
    /* a token cut inside a character, a lone continuation byte, an encoded surrogate: U+FFFD each byte */
    wk__json_w_str(&b, "x\xe2\x9c", 3);
    assert_string_equal(b.p, "\"x\xef\xbf\xbd\xef\xbf\xbd\"");
    wk__sbuf_free(&b);
    wk__json_w_str(&b, "\x80\xed\xa0\x80\xf4\x90\x80\x80", 8);
    assert_true(valid_json(&b));
    wk__sbuf_free(&b);
    /* NUL inside a string is escaped, not cut */
    wk__json_w_str(&b, "a\0b", 3);
    assert_string_equal(b.p, "\"a\\u0000b\"");
    wk__sbuf_free(&b);
    /* numbers: non-finite never written as text JSON cannot hold */
    wk__sbuf_put(&b, "[", 1);
    wk__json_w_num(&b, NAN);
    wk__sbuf_put(&b, ",", 1);
    wk__json_w_f32(&b, INFINITY);
    wk__sbuf_put(&b, ",", 1);
    wk__json_w_f32(&b, -1.25e-7f);
    wk__sbuf_put(&b, ",", 1);
    wk__json_w_num(&b, 0.1);
    wk__sbuf_put(&b, ",", 1);
    wk__json_w_int(&b, INT64_MIN);
    wk__sbuf_put(&b, "]", 1);
    assert_true(valid_json(&b));
    assert_non_null(strstr(b.p, "[null,null,-1.25e-07,0.10000000000000001,-9223372036854775808]"));
    wk__sbuf_free(&b);
    /* f32 round trip */
    float v = 0.1f;
    wk__json_w_f32(&b, v);
    assert_true(strtof(b.p, NULL) == v);
    wk__sbuf_free(&b);
    /* a long printf grows the buffer */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    wk__sbuf_printf(&b, "<%s>", big);
    assert_int_equal(b.n, sizeof big + 1);
    size_t n;
    char *p = wk__sbuf_take(&b, &n);
    assert_int_equal(n, sizeof big + 1);
    assert_null(b.p);
    free(p);
}

static bool parse(wk__hreq *q, wk__hreq_kind k, const char *body, char *msg, char *param) {
    return wk__hreq_parse(q, k, body, strlen(body), msg, 512, param, 64);
}

static void test_chat_request(void **state) {
    (void)state;
    wk__hreq q;
    char msg[512], param[64];
    const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \"},{\"type\":\"text\",\"text\":\"there\"}]},"
        "{\"role\":\"assistant\",\"content\":null},{\"role\":\"user\",\"content\":\"\\u00e9\"}],"
        "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"stop\":[\"\\n\\n\",\"END\"],"
        "\"max_tokens\":7,\"temperature\":0,\"top_p\":0.5,\"seed\":-1,\"n\":2,\"logprobs\":true,\"top_logprobs\":3,"
        "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"object\"}}},"
        "\"unknown\":{\"deep\":[1,2,{\"x\":null}]},\"presence_penalty\":0}";
    assert_true(parse(&q, WK__HREQ_CHAT, body, msg, param));
    assert_int_equal(q.n_msgs, 4);
    assert_string_equal(q.msgs[1].content, "Hi there");
    assert_string_equal(q.msgs[2].content, "");
    assert_string_equal(q.msgs[3].content, "\xc3\xa9");
    assert_true(q.stream && q.include_usage && q.logprobs);
    assert_int_equal(q.n_stops, 2);
    assert_string_equal(q.stops[1], "END");
    assert_int_equal(q.max_tokens, 7);
    assert_true(q.temperature == 0 && q.top_p == 0.5);
    assert_true(q.has_seed && q.seed == UINT64_MAX);
    assert_int_equal(q.n, 2);
    assert_int_equal(q.top_logprobs, 3);
    assert_int_equal(q.format, WK__FMT_JSON_SCHEMA);
    assert_string_equal(q.schema, "{\"type\":\"object\"}");
    wk__hreq_free(&q);

    /* defaults */
    assert_true(parse(&q, WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":\"s\"}", msg, param));
    assert_true(q.max_tokens == -1 && q.temperature == 1 && q.n == 1 && !q.stream && q.n_stops == 1);
    wk__hreq_free(&q);
}

static void test_bad_requests(void **state) {
    (void)state;
    static const struct {
        wk__hreq_kind k;
        const char *body, *param, *needle;
    } cases[] = {
        {WK__HREQ_CHAT, "{\"messages\":", "", "not valid JSON"},
        {WK__HREQ_CHAT, "[1]", "", "JSON object"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]} x", "", "not valid JSON"},
        {WK__HREQ_CHAT, "{}", "messages", "required"},
        {WK__HREQ_CHAT, "{\"messages\":\"hi\"}", "messages", "must be an array"},
        {WK__HREQ_CHAT, "{\"messages\":[]}", "messages", "empty"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\"}]}", "messages[].content", "content"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "messages[].role", "robot"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[].content", "got a number"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", "content[].type",
         "image_url"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}", "messages[].content", "NUL"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":\"5\"}", "max_tokens",
         "got a string"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1.5}", "max_tokens",
         "integer"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}", "max_tokens", "from 1"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":3}", "temperature", "0 to 2"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}", "stream", "boolean"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[1]}", "stop", "string"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":\"\"}", "stop", "empty"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":100}", "n", "from 1"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":2}", "top_logprobs",
         "logprobs"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"xml\"}}",
         "response_format.type", "xml"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_schema\"}}",
         "response_format.json_schema.schema", "schema"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"grammar\":7}", "grammar", "string"},
        {WK__HREQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"frequency_penalty\":1}",
         "frequency_penalty", "not supported"},
        {WK__HREQ_COMPLETION, "{\"prompt\":[\"a\",\"b\"]}", "prompt", "one prompt"},
        {WK__HREQ_COMPLETION, "{\"prompt\":{}}", "prompt", "got an object"},
        {WK__HREQ_COMPLETION, "{\"prompt\":\"x\",\"logprobs\":true}", "logprobs", "got a boolean"},
        {WK__HREQ_COMPLETION, "{\"model\":3,\"prompt\":\"x\"}", "model", "string"},
        {WK__HREQ_EMBEDDING, "{\"input\":[\"a\",2]}", "input", "got a number"},
        {WK__HREQ_EMBEDDING, "{\"input\":[]}", "input", "empty"},
        {WK__HREQ_EMBEDDING, "{\"input\":\"a\",\"encoding_format\":\"hex\"}", "encoding_format", "hex"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wk__hreq q;
        char msg[512], param[64];
        bool ok = parse(&q, cases[i].k, cases[i].body, msg, param);
        if (ok || strcmp(param, cases[i].param) || !strstr(msg, cases[i].needle))
            fail_msg("case %zu (%s): ok %d, param '%s', message '%s'", i, cases[i].body, ok, param, msg);
    }
}

static void test_completion_and_embedding(void **state) {
    (void)state;
    wk__hreq q;
    char msg[512], param[64];
    assert_true(parse(&q, WK__HREQ_COMPLETION, "{\"prompt\":[\"Once\"],\"logprobs\":2,\"echo\":false,\"max_tokens\":null}",
                      msg, param));
    assert_string_equal(q.prompt, "Once");
    assert_true(q.logprobs && q.top_logprobs == 2 && q.max_tokens == -1);
    wk__hreq_free(&q);
    assert_true(parse(&q, WK__HREQ_EMBEDDING, "{\"input\":[\"a\",\"b c\"],\"model\":\"x\",\"encoding_format\":\"float\"}",
                      msg, param));
    assert_int_equal(q.n_inputs, 2);
    assert_string_equal(q.inputs[1], "b c");
    wk__hreq_free(&q);
    assert_true(parse(&q, WK__HREQ_EMBEDDING, "{\"input\":\"solo\"}", msg, param));
    assert_int_equal(q.n_inputs, 1);
    wk__hreq_free(&q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer),
        cmocka_unit_test(test_chat_request),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_completion_and_embedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
