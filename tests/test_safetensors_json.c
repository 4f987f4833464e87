/* The strict JSON reader under the safetensors header (src/io/json.c):
 * grammar, escapes and surrogates, UTF-8, int64 limits, depth, and the pull
 * API the header parser walks with. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"

static bool valid(const char *s) { return wk__json_validate(s, strlen(s), NULL, 0); }

static void test_grammar(void **state) {
    (void)state;
    static const char *const good[] = {
        "{}", "[]", " {\"a\": [1, -2, 3.5e-3, 0, -0, 1E+9, true, false, null, \"x\"]} \n", "\"\"", "0", "-12.5",
        "{\"a\":{\"b\":{\"c\":[[[]]]}}}", "[\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\\"\\\\\"]", "\"\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80\"",
    };
    static const char *const bad[] = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "[,1]", "{\"a\" 1}", "{a:1}", "{'a':1}", "[01]", "[+1]", "[1.]",
        "[.5]", "[1e]", "[-]", "[NaN]", "[Infinity]", "[tru]", "[nul]", "{} {}", "[1] x", "[\"a\x01\"]",
        "[\"\\x\"]", "[\"\\u12\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\u0041\"]", "[\"abc]",
        "[\"\xc0\xaf\"]",     /* overlong '/' */
        "[\"\xed\xa0\x80\"]", /* an encoded surrogate */
        "[\"\xf4\x90\x80\x80\"]", /* above U+10FFFF */
        "[\"\xe2\x9c\"]",     /* truncated sequence */
        "[\"\x80\"]", "[\xc3\xa9]", "// c\n{}", "{\"a\":1 \"b\":2}", "[1 2]",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char msg[160];
        if (!wk__json_validate(good[i], strlen(good[i]), msg, sizeof msg)) fail_msg("good[%zu] rejected: %s", i, msg);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (valid(bad[i])) fail_msg("bad[%zu] '%s' accepted", i, bad[i]);
    /* a NUL byte inside the document is data, not an end */
    assert_false(wk__json_validate("[1]\0", 4, NULL, 0));
    assert_true(wk__json_validate("[\"a\\u0000b\"]", 12, NULL, 0));
}

static void test_strings_decode(void **state) {
    (void)state;
    const char *doc = "[\"a\\u00e9\\ud83d\\ude00\\n\\\"\", \"x\\u0000y\"]";
    wk__json p;
    wk__json_init(&p, doc, strlen(doc));
    const char *s;
    size_t len;
    assert_true(wk__json_array(&p));
    assert_true(wk__json_item(&p));
    assert_true(wk__json_string(&p, &s, &len));
    assert_int_equal(len, 1 + 2 + 4 + 2);
    assert_memory_equal(s, "a\xc3\xa9\xf0\x9f\x98\x80\n\"", len);
    assert_true(wk__json_item(&p));
    assert_true(wk__json_string(&p, &s, &len));
    assert_int_equal(len, 3); /* the escaped NUL counts; strlen says 1 */
    assert_int_equal(strlen(s), 1);
    assert_false(wk__json_item(&p));
    assert_false(p.failed);
    assert_true(wk__json_finish(&p));
    wk__json_free(&p);
}

static void test_int64_limits(void **state) {
    (void)state;
    struct {
        const char *doc;
        bool ok;
        int64_t v;
    } cases[] = {
        {"9223372036854775807", true, INT64_MAX},   {"-9223372036854775808", true, INT64_MIN},
        {"9223372036854775808", false, 0},          {"-9223372036854775809", false, 0},
        {"99999999999999999999999", false, 0},      {"1.0", false, 0},
        {"1e3", false, 0},                          {"0", true, 0},
        {"-0", true, 0},                            {"18446744073709551616", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wk__json p;
        int64_t v;
        wk__json_init(&p, cases[i].doc, strlen(cases[i].doc));
        bool ok = wk__json_int(&p, &v) && wk__json_finish(&p);
        if (ok != cases[i].ok) fail_msg("case %zu (%s): ok %d, msg %s", i, cases[i].doc, ok, p.msg);
        if (ok) assert_true(v == cases[i].v);
        else assert_true(p.msg[0] != '\0');
        wk__json_free(&p);
    }
    /* but any number is a valid JSON value */
    assert_true(valid("[99999999999999999999999, 1.0, 1e3]"));
}

static void test_depth_limit(void **state) {
    (void)state;
    /* WK__JSON_MAX_DEPTH levels are fine, one more is an error; a million
     * levels are an error found without recursion */
    size_t n = 1000000;
    char *b = malloc(2 * n + 1);
    assert_non_null(b);
    for (int depth = WK__JSON_MAX_DEPTH; depth <= WK__JSON_MAX_DEPTH + 1; depth++) {
        for (int i = 0; i < depth; i++) b[i] = '[', b[2 * depth - 1 - i] = ']';
        char msg[160] = "";
        bool ok = wk__json_validate(b, 2 * (size_t)depth, msg, sizeof msg);
        assert_int_equal(ok, depth <= WK__JSON_MAX_DEPTH);
        if (!ok) assert_non_null(strstr(msg, "nesting"));
    }
    memset(b, '[', n);
    memset(b + n, ']', n);
    assert_false(wk__json_validate(b, 2 * n, NULL, 0));
    for (size_t i = 0; i < n; i++) b[2 * i] = '{', b[2 * i + 1] = '"'; /* {"{"{"... */
    assert_false(wk__json_validate(b, 2 * n, NULL, 0));
    free(b);
}

static void test_pull_walk(void **state) {
    (void)state;
    const char *doc = "{\"a\": 1, \"skip\": {\"x\": [1, {\"y\": null}], \"z\": \"w\"}, \"b\": [true, -3]}";
    wk__json p;
    wk__json_init(&p, doc, strlen(doc));
    const char *k;
    size_t kl;
    int64_t v;
    bool bv;
    int seen = 0;
    assert_true(wk__json_object(&p));
    while (wk__json_key(&p, &k, &kl)) {
        if (strcmp(k, "a") == 0) {
            assert_true(wk__json_int(&p, &v));
            assert_true(v == 1);
            seen |= 1;
        } else if (strcmp(k, "b") == 0) {
            assert_true(wk__json_array(&p));
            assert_true(wk__json_item(&p));
            assert_true(wk__json_bool(&p, &bv));
            assert_true(bv);
            assert_true(wk__json_item(&p));
            assert_true(wk__json_int(&p, &v));
            assert_true(v == -3);
            assert_false(wk__json_item(&p));
            seen |= 2;
        } else {
            assert_true(wk__json_skip(&p));
            seen |= 4;
        }
    }
    assert_false(p.failed);
    assert_int_equal(seen, 7);
    assert_true(wk__json_finish(&p));
    wk__json_free(&p);
    /* a type mismatch is an error with a position, and it sticks */
    wk__json_init(&p, "[\"s\"]", 5);
    assert_true(wk__json_array(&p));
    assert_true(wk__json_item(&p));
    assert_false(wk__json_int(&p, &v));
    assert_true(p.failed);
    assert_non_null(strstr(p.msg, "at byte"));
    assert_false(wk__json_item(&p));
    wk__json_free(&p);
}

static void test_utf8_helper(void **state) {
    (void)state;
    assert_true(wk__json_utf8_valid("abc\xc3\xa9", 5));
    assert_false(wk__json_utf8_valid("\xc3", 1));
    assert_false(wk__json_utf8_valid("\xff", 1));
    assert_false(wk__json_utf8_valid("\xe0\x80\x80", 3)); /* overlong NUL */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grammar),     cmocka_unit_test(test_strings_decode), cmocka_unit_test(test_int64_limits),
        cmocka_unit_test(test_depth_limit), cmocka_unit_test(test_pull_walk),      cmocka_unit_test(test_utf8_helper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
