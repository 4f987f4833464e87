/* The Jinja-subset interpreter (wick/chat.h): hand cases for the syntax,
 * the whitespace rules and the errors, then every real template of
 * llama.cpp's collection (.cache/chat-templates, scripts/setup.sh) over a
 * set of conversations, byte for byte against jinja2 configured as
 * transformers configures it (tests/chat_template_oracle.py, run with the
 * venv python; skipped, saying so, without the folder or the venv). Where
 * jinja2 raises, wick must fail too. */
#include "testutil.h"
#include "io/json.h"
#include "wick/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(const char *tmpl, const wk_chat_message *m, size_t n, const wk_chat_opts *o) {
    static char out[8192];
    int64_t k = wk_chat_apply(tmpl, m, n, o, out, sizeof out);
    if (k < 0) return NULL;
    return out;
}

static void expect(const char *tmpl, const char *want) {
    wk_chat_message m[2] = {{.role = "system", .content = "S"}, {.role = "user", .content = "U"}};
    wk_chat_opts o = {.bos_token = "<s>", .add_generation_prompt = true, .now = 1721995200};
    char *got = render(tmpl, m, 2, &o);
    if (!got) fail_msg("%s: %s", tmpl, wk_last_error());
    if (strcmp(got, want)) fail_msg("%s:\n got [%s]\nwant [%s]", tmpl, got, want);
}

static void expect_error(const char *tmpl, const char *part) {
    wk_chat_message m[1] = {{.role = "user", .content = "U"}};
    wk_clear_error();
    char *got = render(tmpl, m, 1, NULL);
    if (got) fail_msg("%s: rendered [%s], wanted an error", tmpl, got);
    if (!strstr(wk_last_error(), part)) fail_msg("%s: error [%s] lacks [%s]", tmpl, wk_last_error(), part);
    wk_clear_error();
}

static void test_syntax(void **state) {
    (void)state;
    expect("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ -7 % 3 }}", "7 3 -4 3.5 1024 2");
    expect("{{ [1.0, 1e20, 1.5e-7, \"it's\", none, true, {'k': (1, 2)}] }}",
           "[1.0, 1e+20, 1.5e-07, \"it's\", None, True, {'k': (1, 2)}]");
    expect("{% for m in messages %}{{ loop.index }}{{ m.role[0] }}{{ m['content'] }}{% if not loop.last %},{% endif %}{% endfor %}",
           "1sS,2uU");
    expect("{% set ns = namespace(n=0) %}{% for i in range(5) if i is odd %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "4");
    expect("{% set x = 0 %}{% for i in range(3) %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}", "1110");
    expect("{% macro m(a, b='d') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}", "[1d][23]");
    expect("{{ 'abc'[::-1] }}{{ [1,2,3][1:] }}{{ 'x' ~ 1 ~ none }}", "cba[2, 3]x1None");
    expect("{{ {'b': 1, 'a': [1, 'é']} | tojson }}|{{ {'a': 1} | tojson(indent=2) }}", "{\"b\": 1, \"a\": [1, \"é\"]}|{\n  \"a\": 1\n}");
    expect("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}", "U");
    expect("{{ '  a b  ' | trim }}|{{ 'a,b'.split(',') }}|{{ 'Hi'.upper() }}{{ 'x' if false else 'y' }}", "a b|['a', 'b']|HIy");
    expect("{{ undefined_name }}|{{ undefined_name is defined }}|{{ (messages[0].nope | default('d')) }}", "|False|d");
    expect("{{ strftime_now('%d %b %Y') }}", "26 Jul 2024");
    expect("{{ bos_token }}{% raw %}{{ x }}{% endraw %}", "<s>{{ x }}");
    /* whitespace: trim_blocks, lstrip_blocks, - and + controls; a trailing newline dropped */
    expect("a\n  {% if true %}\n  b\n  {% endif %}\nc\n", "a\n  b\nc");
    expect("a  {{- 'b' -}}  c {# x #}\n{%+ if true %}d{% endif +%}\ne", "abc d\ne");
    expect("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% else %}none{% endfor %}", "a=1;b=2;");
    expect("{% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1,2,3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}", "empty1");
    expect("{% set s %}  in  {% endset %}[{{ s }}]{% filter upper %}up{% endfilter %}", "[  in  ]UP");
}

static void test_errors(void **state) {
    (void)state;
    expect_error("a\n{{ x | nosuch }}", "line 2: filter 'nosuch' is not supported");
    expect_error("{{ raise_exception('no system messages') }}", "no system messages");
    expect_error("{% if %}", "line 1");
    expect_error("{% for x in y %}", "never closed");
    expect_error("{{ a.b }}", "'a' is undefined");
    expect_error("{{ messages.append(1) }}", "unsafe");
    expect_error("{{ 'a' + 1 }}", "unsupported operand");
    expect_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "nest deeper");
    expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "limit");
    expect_error("{{ ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                 "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1", "nest");
    expect_error("{{ 'x' * 100000000 }}", "too large");
    expect_error("{% set ns = namespace(_a=1) %}", "_a");
    expect_error("{{ 'unterminated }}", "unterminated");
    /* the default Undefined in the unknown-filter-in-if case: runs only when taken */
    expect("{% if false %}{{ x | nosuch }}{% endif %}ok", "ok");
    wk_clear_error();
    assert_null(wk_chat_template_compile(NULL));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
}

/* ---- the oracle over the real templates ---- */

typedef struct ocase {
    char *tmpl, *conv, *bos, *eos, *tools, *out;
    bool agp, ok;
    wk_chat_message m[8];
    size_t nm;
} ocase;

static char *dup(const char *s) {
    char *d = malloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

static char *jstr(wk__json *p) {
    const char *s;
    size_t n;
    if (wk__json_peek(p) == WK__JSON_NULL) {
        wk__json_null(p);
        return NULL;
    }
    if (!wk__json_string(p, &s, &n)) return NULL;
    return dup(s);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t k = fread(s, 1, (size_t)n, f);
    s[k] = 0;
    fclose(f);
    if (len) *len = k;
    return s;
}

static void free_case(ocase *c) {
    free(c->tmpl); free(c->conv); free(c->bos); free(c->eos); free(c->tools); free(c->out);
    for (size_t i = 0; i < c->nm; i++) {
        free((char *)c->m[i].role); free((char *)c->m[i].content); free((char *)c->m[i].tool_calls_json);
        free((char *)c->m[i].tool_call_id); free((char *)c->m[i].name);
    }
}

static void test_real_templates(void **state) {
    (void)state;
    const char *dir = getenv("WICK_CHAT_TEMPLATES_DIR"), *py = getenv("WICK_VENV_PYTHON");
    const char *odir = getenv("WICK_ORACLE_DIR");
    if (!dir || !py) {
        printf("skip: %s is unset (scripts/setup.sh makes .cache/chat-templates and the venv with jinja2; re-run cmake)\n",
               !dir ? "WICK_CHAT_TEMPLATES_DIR" : "WICK_VENV_PYTHON");
        skip();
    }
    char out_path[1024], cmd[4096];
    snprintf(out_path, sizeof out_path, "%s/chat_templates.json", odir ? odir : ".");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && '%s' '%s/chat_template_oracle.py' '%s' '%s'", odir ? odir : ".", py,
             WICK_TESTS_DIR, dir, out_path);
    if (system(cmd) != 0) fail_msg("the oracle failed: %s", cmd);
    size_t len = 0;
    char *doc = read_file(out_path, &len);
    assert_non_null(doc);
    wk__json p;
    wk__json_init(&p, doc, len);
    const char *k;
    size_t kn;
    int64_t now = 0;
    int total = 0, match = 0, both_fail = 0, bad = 0;
    char last_bad[256] = "";
    assert_true(wk__json_object(&p));
    while (wk__json_key(&p, &k, &kn)) {
        if (!strcmp(k, "now")) {
            wk__json_int(&p, &now);
            continue;
        }
        assert_true(wk__json_array(&p));
        while (wk__json_item(&p)) {
            ocase c = {0};
            wk__json_object(&p);
            while (wk__json_key(&p, &k, &kn)) {
                if (!strcmp(k, "template")) c.tmpl = jstr(&p);
                else if (!strcmp(k, "conv")) c.conv = jstr(&p);
                else if (!strcmp(k, "bos")) c.bos = jstr(&p);
                else if (!strcmp(k, "eos")) c.eos = jstr(&p);
                else if (!strcmp(k, "tools")) c.tools = jstr(&p);
                else if (!strcmp(k, "out")) c.out = jstr(&p);
                else if (!strcmp(k, "agp")) wk__json_bool(&p, &c.agp);
                else if (!strcmp(k, "ok")) wk__json_bool(&p, &c.ok);
                else if (!strcmp(k, "messages")) {
                    wk__json_array(&p);
                    while (wk__json_item(&p)) {
                        wk_chat_message *m = &c.m[c.nm++];
                        wk__json_object(&p);
                        while (wk__json_key(&p, &k, &kn)) {
                            char *v;
                            if (!strcmp(k, "role")) m->role = jstr(&p);
                            else if (!strcmp(k, "content")) m->content = jstr(&p);
                            else if (!strcmp(k, "tool_calls")) m->tool_calls_json = jstr(&p);
                            else if (!strcmp(k, "tool_call_id")) m->tool_call_id = jstr(&p);
                            else if (!strcmp(k, "name")) m->name = jstr(&p);
                            else if ((v = jstr(&p))) free(v);
                        }
                    }
                } else wk__json_skip(&p);
            }
            assert_false(p.failed);
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, c.tmpl);
            char *src = read_file(path, NULL);
            assert_non_null(src);
            wk_chat_opts o = {.bos_token = c.bos, .eos_token = c.eos, .add_generation_prompt = c.agp,
                              .tools_json = c.tools, .now = now};
            wk_clear_error();
            int64_t n = wk_chat_apply(src, c.m, c.nm, &o, NULL, 0);
            char *got = NULL;
            if (n >= 0) {
                got = malloc((size_t)n + 1);
                wk_chat_apply(src, c.m, c.nm, &o, got, (size_t)n + 1);
            }
            total++;
            bool same = c.ok ? (got && !strcmp(got, c.out)) : !got;
            if (same) {
                match++;
                both_fail += !c.ok;
            } else {
                bad++;
                char line[256];
                snprintf(line, sizeof line, "%s [%s%s]", c.tmpl, c.conv, c.agp ? ", gen" : "");
                if (strcmp(last_bad, c.tmpl))
                    printf("MISMATCH %s: %s\n", line,
                           got ? (c.ok ? "output differs" : "jinja2 raised, wick rendered") : wk_last_error());
                if (got && c.ok && getenv("WICK_CHAT_DIFF")) printf("--- jinja2\n%s\n--- wick\n%s\n---\n", c.out, got);
                snprintf(last_bad, sizeof last_bad, "%s", c.tmpl);
            }
            free(got);
            free(src);
            free_case(&c);
        }
    }
    wk__json_free(&p);
    free(doc);
    printf("chat templates: %d of %d template x conversation cases match jinja2 (%d where both refuse), %d differ\n",
           match, total, both_fail, bad);
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_real_templates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
