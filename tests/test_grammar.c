/* Constrained sampling (wick/grammar.h) without a model:
 * - the GBNF parser on every construct, each grammar matched against texts
 *   it must accept, texts that are a prefix of a sentence and texts it must
 *   reject (by code points, multi-byte characters included);
 * - errors name line and column (or the undefined / left-recursive rule);
 *   hostile grammars (deep nesting, huge counts, empty loops, random
 *   bytes) are errors, never crashes or hangs;
 * - token masks over a small hand-made byte-level vocabulary equal the
 *   brute-force answer (match the text so far + each token's bytes), and
 *   random walks through the masks always end in a sentence;
 * - JSON schemas compile to grammars that accept and reject the right
 *   documents, and unsupported keywords are named errors. */
#include "testutil.h"
#include "wick/grammar.h"
#include "wick/gguf.h"
#include "wick/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "byte_bpe_testutil.h"

static wk_grammar *gbnf(const char *s) {
    wk_grammar *g = wk_grammar_from_gbnf(s, strlen(s), NULL);
    if (!g) fail_msg("grammar did not compile: %s\n%s", wk_last_error(), s);
    return g;
}

static int match(const wk_grammar *g, const char *s) { return wk_grammar_match(g, s, strlen(s)); }

typedef struct {
    const char *grammar;
    const char *yes[6]; /* complete sentences */
    const char *pre[4]; /* proper prefixes */
    const char *no[6];  /* rejected */
} gcase;

static const gcase CASES[] = {
    {"root ::= \"abc\"", {"abc"}, {"", "ab"}, {"abd", "abcd", "b"}},
    {"root ::= \"a\" | \"b\" | \"cd\"", {"a", "b", "cd"}, {"c"}, {"ab", "d", "cdd"}},
    {"root ::= x y\nx ::= \"1\"\ny ::= \"2\" # comment\n", {"12"}, {"1"}, {"21", "123"}},
    {"root ::= [a-c0-9_]+", {"a", "abc09_", "_"}, {""}, {"d", "a-"}},
    {"root ::= [^\"\\\\]*", {"", "abc", "é😀"}, {}, {"\"", "a\\"}},
    {"root ::= . .", {"ab", "éx", "😀\n"}, {"a"}, {"abc"}},
    {"root ::= \"a\"? \"b\"", {"ab", "b"}, {"a", ""}, {"aab", "ba"}},
    {"root ::= \"x\"{3}", {"xxx"}, {"xx"}, {"xxxx"}},
    {"root ::= \"x\"{2,}", {"xx", "xxxxxxx"}, {"x"}, {"y"}},
    {"root ::= \"x\"{1,3} \"y\"", {"xy", "xxy", "xxxy"}, {"xxx"}, {"y", "xxxxy"}},
    {"root ::= \"x\"{0,2}", {"", "x", "xx"}, {}, {"xxx"}},
    {"root ::= (\"ab\" | \"c\")* \"!\"", {"!", "ab!", "cabc!"}, {"a", "cab"}, {"b!", "ac!"}},
    {"root ::= \"ab\"+", {"ab", "abab"}, {"a", "aba"}, {"b", "abb"}},
    {"root ::= (\n  \"a\"\n  | \"b\"\n)\n", {"a", "b"}, {""}, {"ab"}},
    {"root ::= \"a\"\n  | \"b\"\nother ::= \"z\"", {"a", "b"}, {""}, {"z"}},
    {"root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\\"\"", {"Aé😀\n\t\""}, {"Aé"}, {"A"
                                                                              "e"}},
    {"root ::= [\\x00-\\x1f]", {"\x01", "\n"}, {""}, {" "}},
    {"root ::= [α-ω]+", {"αβγ", "ω"}, {""}, {"a", "Ω"}},
    {"root ::= \"[\" item (\",\" item)* \"]\"\nitem ::= [0-9]+ | \"[\" item \"]\"",
     {"[1]", "[1,22,[3]]", "[[[4]]]"}, {"[", "[1,", "[[4]"}, {"[]", "[1,]", "1"}},
    {"root ::= \"\" | \"a\"", {"", "a"}, {}, {"aa"}},
    {"root ::= e\ne ::= t (\"+\" t)*\nt ::= [0-9] | \"(\" e \")\"", {"1", "1+2", "(1+(2+3))+4"}, {"(1+", "1+"}, {"+", "()", "1)"}},
    {"root   ::=   \"a\"   \"b\"  # spaces\n\n\n", {"ab"}, {"a"}, {"ba"}},
    {"root ::= [-a]+ [a-]", {"-a", "aa-"}, {"-"}, {"b"}},
    {"root ::= [\\]\\[\\-]", {"]", "[", "-"}, {""}, {"a"}},
    {"root ::= rule-with-dash\nrule-with-dash ::= \"ok\"", {"ok"}, {"o"}, {"k"}},
};

static void gbnf_constructs(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        const gcase *c = &CASES[i];
        wk_grammar *g = gbnf(c->grammar);
        for (int k = 0; k < 6 && c->yes[k]; k++)
            if (match(g, c->yes[k]) != 2) fail_msg("case %zu: \"%s\" should be accepted", i, c->yes[k]);
        for (int k = 0; k < 4 && c->pre[k]; k++)
            if (match(g, c->pre[k]) != 1) fail_msg("case %zu: \"%s\" should be a prefix", i, c->pre[k]);
        for (int k = 0; k < 6 && c->no[k]; k++)
            if (match(g, c->no[k]) != 0) fail_msg("case %zu: \"%s\" should be rejected", i, c->no[k]);
        wk_grammar_free(g);
    }
    /* another start rule; a multi-byte character split by the byte walk */
    const char *s = "a ::= \"x\" b\nb ::= \"é\"";
    wk_grammar *g = wk_grammar_from_gbnf(s, strlen(s), "a");
    assert_non_null(g);
    assert_int_equal(match(g, "xé"), 2);
    assert_int_equal(wk_grammar_match(g, "x\xc3", 2), 1);
    assert_int_equal(wk_grammar_match(g, "x\xc4", 2), 0); /* no character from U+0100 on is allowed */
    assert_int_equal(wk_grammar_match(g, "x\xff", 2), 0);
    wk_grammar_free(g);
}

static void expect_error(const char *grammar, const char *needle) {
    wk_clear_error();
    wk_grammar *g = wk_grammar_from_gbnf(grammar, strlen(grammar), NULL);
    if (g) fail_msg("grammar should not compile:\n%s", grammar);
    if (wk_last_status() != WK_ERR_FORMAT || !strstr(wk_last_error(), needle))
        fail_msg("grammar:\n%s\nerror %s: \"%s\", expected it to contain \"%s\"", grammar,
                 wk_status_name(wk_last_status()), wk_last_error(), needle);
}

static void gbnf_errors(void **state) {
    (void)state;
    expect_error("root ::= \"abc", "line 1 column 10: unterminated string");
    expect_error("root ::= \"a\"\nx ::= [a-", "line 2 column 7: unterminated character class");
    expect_error("root ::= foo", "undefined rule 'foo'");
    expect_error("root ::= \"a\"\n\n  bar ::= baz", "line 3 column 11: undefined rule 'baz'");
    expect_error("root ::= \"a\" \"b\" c ::= \"d\"", "line 1 column 18: rule 'c' starts in the middle");
    expect_error("root ::= (\"a\"", "expected ')'");
    expect_error("root ::= \"a\")", "line 1 column 13: unexpected ')'");
    expect_error("root = \"a\"", "line 1 column 6: expected '::='");
    expect_error("::= \"a\"", "expected a rule name");
    expect_error("root ::= \"a\"\nroot ::= \"b\"", "line 2 column 1: rule 'root' defined twice");
    expect_error("root ::= \"\\q\"", "unknown escape");
    expect_error("root ::= \"\\x4\"", "needs 2 hex digits");
    expect_error("root ::= \"\\uD800\"", "no Unicode scalar value");
    expect_error("root ::= [z-a]", "out of order");
    expect_error("root ::= \"a\"{3,2}", "n < m");
    expect_error("root ::= \"a\"{99999}", "repetition count above");
    expect_error("root ::= \"a\"{,3}", "needs m");
    expect_error("root ::= \"a\"**", "two repetition operators");
    expect_error("root ::= <[123]>", "token references");
    expect_error("x ::= \"a\"", "no rule named 'root'");
    expect_error("root ::= root \"a\"", "rule 'root' is left recursive");
    expect_error("root ::= a\na ::= b? a \"x\"\nb ::= \"y\"", "rule 'a' is left recursive");
    expect_error("root ::= (\"a\"?)*", "left recursive"); /* an empty loop */
    expect_error("root ::= \"\xff\"", "invalid UTF-8");
    expect_error("", "no rule named 'root'");
}

static void gbnf_hostile(void **state) {
    (void)state;
    /* nesting far past the limit */
    size_t n = 100000;
    char *s = malloc(2 * n + 32);
    strcpy(s, "root ::= ");
    size_t k = strlen(s);
    for (size_t i = 0; i < n; i++) s[k++] = '(';
    s[k++] = '"';
    s[k++] = 'a';
    s[k++] = '"';
    for (size_t i = 0; i < n; i++) s[k++] = ')';
    s[k] = 0;
    expect_error(s, "nested deeper than");
    free(s);
    /* nesting within the limit works */
    s = malloc(1024);
    strcpy(s, "root ::= ");
    k = strlen(s);
    for (int i = 0; i < 150; i++) s[k++] = '(';
    memcpy(s + k, "\"a\"", 3);
    k += 3;
    for (int i = 0; i < 150; i++) s[k++] = ')';
    s[k] = 0;
    wk_grammar *g = gbnf(s);
    assert_int_equal(match(g, "a"), 2);
    wk_grammar_free(g);
    free(s);
    /* repetition that would expand past the element limit */
    s = malloc(300 * 12 + 16);
    strcpy(s, "root ::= ");
    for (int i = 0; i < 300; i++) strcat(s, "\"a\"{4000} ");
    expect_error(s, "grammar too large");
    free(s);
    /* a group repeated is one reference repeated: nested counts stay small */
    g = gbnf("root ::= ((\"a\"{4000}){4000}){4000}");
    assert_int_equal(match(g, "aaaa"), 1);
    wk_grammar_free(g);
    /* a large but legal count, matched to the end */
    g = gbnf("root ::= \"ab\"{0,4000} \"c\"");
    char *t = malloc(8001 + 2);
    for (int i = 0; i < 4000; i++) memcpy(t + 2 * i, "ab", 2);
    t[8000] = 'c';
    t[8001] = 0;
    assert_int_equal(match(g, t), 2);
    t[8000] = 'a';
    assert_int_equal(match(g, t), 0);
    free(t);
    wk_grammar_free(g);
    /* ambiguity: many stacks at once is an error or works, never a hang */
    g = gbnf("root ::= x*\nx ::= \"a\" | \"a\" \"a\" | [a-z]");
    int r = match(g, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_true(r == 2 || r == -1);
    wk_grammar_free(g);
    /* random bytes and random grammar-ish text: clean result either way */
    static const char alphabet[] = "root::=\"ab|()[]^-*+?{},.#\n\\x0 9az";
    uint64_t seed = 12345;
    char buf[128];
    for (int it = 0; it < 20000; it++) {
        int len = (int)(seed % 100);
        for (int i = 0; i < len; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[i] = (it & 1) ? (char)(seed >> 56) : alphabet[(seed >> 33) % (sizeof alphabet - 1)];
        }
        if (it % 3 == 0 && len > 9) memcpy(buf, "root ::= ", 9);
        buf[len] = 0;
        wk_clear_error();
        g = wk_grammar_from_gbnf(buf, (size_t)len, NULL);
        if (!g) {
            if (wk_last_status() != WK_ERR_FORMAT) fail_msg("random grammar: %s", wk_last_error());
            continue;
        }
        r = wk_grammar_match(g, "ab(a)", 5);
        assert_true(r >= -1 && r <= 2);
        wk_grammar_free(g);
    }
    /* NULL arguments */
    assert_null(wk_grammar_from_gbnf(NULL, 3, NULL));
    wk_grammar_free(NULL);
    wk_grammar_state_free(NULL);
    assert_null(wk_grammar_state_new(NULL, NULL));
    assert_false(wk_grammar_state_complete(NULL));
}

/* ---- masks over a hand-made vocabulary ---- */


/* Multi-byte tokens of the small vocabulary (raw bytes). */
static const char *const PIECES[] = {
    "{\"", "\":", "\",", "\"}", "true", "false", "null", " \"", "ab", "abc", "na", "name", "\": \"", "12", "3.", "é",
    "\xc3",  /* the first byte of é: a token that ends inside a character */
    "\xa9x", /* the rest of é, then more */
    "😀", "}\n", "  ", "\n\n\n\n", "[1", ",2", "]", "\\n", "\\\"", "\"\"",
};
enum { NPIECES = sizeof PIECES / sizeof *PIECES };

static wk_tokenizer *small_vocab(int32_t *eos) {
    char *s = malloc(1 << 15);
    size_t n = (size_t)sprintf(s, "{\"added_tokens\":[{\"id\":%d,\"content\":\"<eos>\",\"single_word\":false,"
                                  "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],"
                                  "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                                  "\"add_prefix_space\":false,\"use_regex\":true},\"post_processor\":null,"
                                  "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{",
                               256 + NPIECES);
    for (unsigned b = 0; b < 256; b++) {
        s[n++] = '"';
        n += put_byte_char(s + n, b);
        n += (size_t)sprintf(s + n, "\":%u,", b);
    }
    for (int i = 0; i < NPIECES; i++) {
        s[n++] = '"';
        for (const char *p = PIECES[i]; *p; p++) n += put_byte_char(s + n, (unsigned char)*p);
        n += (size_t)sprintf(s + n, "\":%d,", 256 + i);
    }
    n += (size_t)sprintf(s + n, "\"<eos>\":%d},\"merges\":[]}}", 256 + NPIECES);
    wk_tokenizer *t = wk_tokenizer_from_json(s, n);
    if (!t) fail_msg("small_vocab: %s", wk_last_error());
    free(s);
    *eos = 256 + NPIECES;
    return t;
}

/* Masks equal brute force at every step of random walks; every walk that
 * ends (only eos allowed or eos drawn) is a sentence. */
static void walk_checks(const wk_grammar *g, const wk_tokenizer *t, int32_t eos, int walks, int max_steps,
                        uint64_t seed) {
    int64_t V = wk_tokenizer_vocab_size(t);
    uint8_t *mask = malloc((size_t)V);
    char text[4096];
    for (int w = 0; w < walks; w++) {
        wk_grammar_state *st = wk_grammar_state_new(g, t);
        if (!st) fail_msg("state: %s", wk_last_error());
        size_t len = 0;
        bool ended = false;
        for (int step = 0; step < max_steps && !ended; step++) {
            int64_t cnt = wk_grammar_state_mask(st, &eos, 1, mask, V);
            if (cnt < 0) fail_msg("mask: %s", wk_last_error());
            int64_t c2 = 0;
            for (int32_t id = 0; id < V; id++) {
                bool want;
                if (id == eos) {
                    want = wk_grammar_match(g, text, len) == 2;
                } else if (wk_tokenizer_is_special(t, id)) {
                    want = false; /* never allowed, whatever its text */
                } else {
                    char b[256];
                    int64_t k = wk_tokenizer_token_bytes(t, id, b, sizeof b);
                    assert_true(k >= 0 && (size_t)k < sizeof b && len + (size_t)k < sizeof text);
                    memcpy(text + len, b, (size_t)k);
                    want = k > 0 && wk_grammar_match(g, text, len + (size_t)k) > 0;
                }
                if (want != (mask[id] != 0))
                    fail_msg("walk %d step %d: token %d (%s) mask %d, brute force %d; text \"%.*s\"", w, step, id,
                             id == eos ? "eos" : "", mask[id], want, (int)len, text);
                c2 += want;
            }
            assert_int_equal(cnt, c2);
            if (cnt == 0) fail_msg("walk %d: dead end after \"%.*s\"", w, (int)len, text);
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int64_t pick = (int64_t)((seed >> 33) % (uint64_t)cnt);
            int32_t id = 0;
            for (; id < V; id++)
                if (mask[id] && pick-- == 0) break;
            if (id == eos) {
                ended = true;
                break;
            }
            /* a token not allowed is refused and changes nothing */
            for (int32_t bad = 0; bad < V; bad++)
                if (!mask[bad] && bad != eos) {
                    assert_int_equal(wk_grammar_state_accept(st, bad), WK_ERR_ARG);
                    break;
                }
            TU_STATUS_OK(wk_grammar_state_accept(st, id));
            len += (size_t)wk_tokenizer_token_bytes(t, id, text + len, sizeof text - len);
            assert_int_equal(wk_grammar_state_complete(st), wk_grammar_match(g, text, len) == 2);
        }
        if (ended) assert_int_equal(wk_grammar_match(g, text, len), 2);
        wk_grammar_state_free(st);
    }
    free(mask);
}

static void masks_small_vocab(void **state) {
    (void)state;
    int32_t eos;
    wk_tokenizer *t = small_vocab(&eos);
    assert_int_equal(wk_tokenizer_vocab_size(t), 256 + NPIECES + 1);
    char b[8];
    assert_int_equal(wk_tokenizer_token_bytes(t, 256 + 16, b, sizeof b), 1);
    assert_int_equal((unsigned char)b[0], 0xc3);
    assert_int_equal(wk_tokenizer_token_bytes(t, -1, b, sizeof b), -1);
    const char *grammars[] = {
        "root ::= \"ab\" [a-c]* \"!\"",
        "root ::= (\"é\" | \"😀\" | [a-z])+ \"\\n\"",
        "root ::= \"{\\\"\" [a-z]+ \"\\\": \" (\"true\" | \"false\" | \"null\" | [0-9]+) \"}\"",
        "root ::= \"[\" [0-9] (\",\" [0-9])* \"]\"",
        "root ::= [^\"]* \"\\\"\"",
        "root ::= [ \\n]{0,3} \"x\"",
    };
    for (size_t i = 0; i < sizeof grammars / sizeof *grammars; i++) {
        wk_grammar *g = gbnf(grammars[i]);
        walk_checks(g, t, eos, 8, 24, 1000 + i);
        wk_grammar_free(g);
    }
    /* argument checks */
    wk_grammar *g = gbnf("root ::= \"a\"");
    wk_grammar_state *st = wk_grammar_state_new(g, t);
    uint8_t mask[300];
    assert_int_equal(wk_grammar_state_mask(st, &eos, 1, mask, 10), -1); /* vocab too small */
    assert_int_equal(wk_grammar_state_mask(NULL, &eos, 1, mask, 300), -1);
    assert_int_equal(wk_grammar_state_accept(st, 100000), WK_ERR_ARG);
    assert_int_equal(wk_grammar_state_accept(st, eos), WK_ERR_ARG); /* special */
    assert_int_equal(wk_grammar_state_mask(st, &eos, 1, mask, 300), 1);
    assert_true(mask['a']);
    TU_STATUS_OK(wk_grammar_state_accept(st, 'a'));
    assert_true(wk_grammar_state_complete(st));
    assert_int_equal(wk_grammar_state_mask(st, &eos, 1, mask, 300), 1);
    assert_true(mask[eos]);
    assert_int_equal(wk_grammar_state_mask(st, NULL, 0, mask, 300), 0); /* complete, nothing more */
    wk_grammar_state_free(st);
    wk_grammar_free(g);
    wk_tokenizer_free(t);
}

/* Real vocabularies (llama.cpp's vocab-only GGUFs, when setup.sh fetched
 * them): SentencePiece (U+2581 spaces, <0xXX> byte tokens) and GPT-2. */
static void masks_real_vocabs(void **state) {
    (void)state;
    const char *dir = getenv("WICK_LLAMA_VOCAB_DIR");
    if (!dir) {
        printf("skip: WICK_LLAMA_VOCAB_DIR is not set (scripts/setup.sh)\n");
        skip();
    }
    const char *files[] = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"};
    const char *schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\",\"maxLength\":6},"
                         "\"v\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":300}},\"required\":[\"n\"]}";
    wk_grammar *g = wk_grammar_from_json_schema(schema, strlen(schema));
    assert_non_null(g);
    for (int f = 0; f < 2; f++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        wk_gguf *gg = wk_gguf_open(path);
        if (!gg) fail_msg("%s: %s", path, wk_last_error());
        wk_tokenizer *t = wk_tokenizer_from_gguf(gg);
        wk_gguf_close(gg);
        if (!t) fail_msg("%s: %s", path, wk_last_error());
        int32_t eos = wk_tokenizer_eos(t);
        walk_checks(g, t, eos, 1, 10, 77 + (uint64_t)f);
        wk_tokenizer_free(t);
    }
    wk_grammar_free(g);
}

/* ---- JSON schema ---- */

typedef struct {
    const char *schema;
    const char *yes[6];
    const char *no[6];
} scase;

static const scase SCHEMAS[] = {
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
     "\"required\":[\"a\"]}",
     {"{\"a\":1}", "{\"a\": -12, \"b\": \"x\"}", "{\n  \"a\": 0,\n  \"b\": \"\\u00e9\\n\"\n}", "{ \"a\":5 }"},
     {"{}", "{\"b\":\"x\"}", "{\"b\":\"x\",\"a\":1}", "{\"a\":01}", "{\"a\":1,\"c\":2}", "{\"a\":1}  "}},
    {"{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"boolean\"},\"y\":{\"type\":\"null\"},\"z\":{}}}",
     {"{}", "{\"y\":null}", "{\"x\":true,\"z\":[1,{\"k\":\"v\"}]}", "{\"z\":\"s\"}"},
     {"{\"y\":1}", "{\"z\":1,\"x\":true}", "{,}", "{\"x\":true,}"}},
    {"{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":1,\"maxItems\":3}",
     {"[1]", "[1.5, -2e10, 0]", "[ 3 ]"}, {"[]", "[1,2,3,4]", "[1,]", "[01]", "[1.]"}},
    {"{\"enum\":[\"red\",\"green\",3,null,{\"a\":[1]}]}", {"\"red\"", "3", "null", "{\"a\":[1]}"},
     {"\"blue\"", "\"Red\"", "4", "{\"a\": [1]}"}},
    {"{\"const\":\"x\\\"y\"}", {"\"x\\\"y\""}, {"\"xy\""}},
    {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\",\"minimum\":10,\"maximum\":205}]}",
     {"\"s\"", "10", "99", "205", "150"}, {"9", "206", "-1", "1000", "true"}},
    {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":7}", {"-15", "-1", "0", "6"}, {"-16", "7", "-0", "100"}},
    {"{\"type\":\"integer\",\"minimum\":1000}", {"1000", "99999", "123456789012"}, {"999", "-5", "0"}},
    {"{\"type\":\"integer\",\"maximum\":-3}", {"-3", "-1000"}, {"-2", "0", "5"}},
    {"{\"type\":[\"string\",\"null\"],\"maxLength\":3}", {"null", "\"abc\"", "\"\""}, {"\"abcd\"", "1"}},
    {"{\"type\":\"string\",\"format\":\"date\"}", {"\"2024-02-29\""}, {"\"2024-13-01\"", "\"24-01-01\""}},
    {"{\"type\":\"string\",\"format\":\"date-time\"}", {"\"2024-02-29T12:30:00Z\"", "\"2024-02-29T23:59:59.123+02:00\""},
     {"\"2024-02-29 12:30:00Z\"", "\"2024-02-29T24:00:00Z\""}},
    {"{\"type\":\"string\",\"format\":\"uuid\"}", {"\"123e4567-e89b-12d3-a456-426614174000\""}, {"\"123e4567\""}},
    {"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
     "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"]}},"
     "\"$ref\":\"#/$defs/node\"}",
     {"{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}"}, {"{\"v\":1,\"kids\":[{}]}"}},
    {"{\"definitions\":{\"a/b\":{\"type\":\"boolean\"}},\"properties\":{\"f\":{\"$ref\":\"#/definitions/a~1b\"}},"
     "\"required\":[\"f\"],\"additionalProperties\":false}",
     {"{\"f\":false}"}, {"{\"f\":0}", "{}"}},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}",
     {"{}", "{\"a\":1,\"x\":\"y\"}", "{\"x\":\"y\",\"z\":\"w\"}"}, {"{\"x\":1}", "{\"x\":\"y\",\"a\":1}"}},
    {"{\"type\":\"object\"}", {"{}", "{\"k\":[1,2,{\"a\":null}],\"m\":\"\"}"}, {"[]", "{\"k\"}"}},
    {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", {"[1,\"a\"]"},
     {"[1]", "[1,\"a\",2]", "[\"a\",1]"}},
    {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
     "{\"properties\":{\"b\":{\"type\":\"integer\"}},\"required\":[\"b\"]}]}",
     {"{\"a\":1,\"b\":2}"}, {"{\"a\":1}", "{\"b\":2}"}},
    {"{\"type\":\"number\",\"minimum\":0}", {"0", "1.5", "3e2"}, {"-1", "-0.5"}},
    {"{\"type\":\"string\"}", {"\"\"", "\"a\\\\b\\u12aF\"", "\"😀\""}, {"\"\n\"", "\"\\x\"", "\"a"}},
    {"true", {"1", "\"x\"", "[]"}, {"", "x"}},
};

static void json_schemas(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof SCHEMAS / sizeof *SCHEMAS; i++) {
        const scase *c = &SCHEMAS[i];
        wk_grammar *g = wk_grammar_from_json_schema(c->schema, strlen(c->schema));
        if (!g) fail_msg("schema %zu: %s", i, wk_last_error());
        for (int k = 0; k < 6 && c->yes[k]; k++)
            if (match(g, c->yes[k]) != 2) fail_msg("schema %zu: %s should be accepted (%d)", i, c->yes[k], match(g, c->yes[k]));
        for (int k = 0; k < 6 && c->no[k]; k++)
            if (match(g, c->no[k]) == 2) fail_msg("schema %zu: %s should be rejected", i, c->no[k]);
        wk_grammar_free(g);
    }
    wk_grammar *g = wk_grammar_json_object();
    assert_non_null(g);
    assert_int_equal(match(g, "{\"a\": {\"b\": [true, false, null, -0.5e3]}}"), 2);
    assert_int_equal(match(g, "[1]"), 0);
    assert_int_equal(match(g, "{\"a\":1}\n"), 0); /* nothing after the value */
    assert_int_equal(match(g, "{\"a\":      1}"), 0); /* one blank run at most: a space or a newline + indent */
    wk_grammar_free(g);
}

static void schema_error(const char *schema, const char *needle) {
    wk_clear_error();
    wk_grammar *g = wk_grammar_from_json_schema(schema, strlen(schema));
    if (g) fail_msg("schema should be refused: %s", schema);
    if (!strstr(wk_last_error(), needle))
        fail_msg("schema %s: error \"%s\", expected \"%s\"", schema, wk_last_error(), needle);
}

static void json_schema_errors(void **state) {
    (void)state;
    schema_error("{\"type\":", "not JSON");
    schema_error("{\"type\":\"string\",\"pattern\":\"^a+$\"}", "keyword \"pattern\" is not supported");
    schema_error("{\"type\":\"object\",\"minProperties\":1}", "minProperties");
    schema_error("{\"not\":{}}", "\"not\"");
    schema_error("{\"type\":\"strin\"}", "unknown type \"strin\"");
    schema_error("{\"$ref\":\"#/$defs/missing\"}", "names no definition");
    schema_error("{\"$ref\":\"http://x/y.json\"}", "only \"#\"");
    schema_error("false", "matches nothing");
    schema_error("3", "must be an object or a boolean");
    schema_error("{\"type\":\"array\",\"maxItems\":1000000}", "above the limit");
    schema_error("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "is empty");
    schema_error("{\"type\":\"number\",\"maximum\":1}", "not supported");
    schema_error("{\"enum\":[]}", "non-empty");
    schema_error("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "only object schemas");
    schema_error("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", "left recursive");
    /* deep nesting: the JSON reader's depth limit or the schema's */
    char *s = malloc(200 * 30 + 64);
    size_t n = 0;
    for (int i = 0; i < 200; i++) n += (size_t)sprintf(s + n, "{\"items\":");
    n += (size_t)sprintf(s + n, "{}");
    for (int i = 0; i < 200; i++) s[n++] = '}';
    s[n] = 0;
    wk_clear_error();
    assert_null(wk_grammar_from_json_schema(s, n));
    assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
    free(s);
    /* a recursive chain of definitions through properties is fine */
    const char *rec = "{\"$defs\":{\"a\":{\"properties\":{\"b\":{\"$ref\":\"#/$defs/b\"}}},"
                      "\"b\":{\"properties\":{\"a\":{\"$ref\":\"#/$defs/a\"}}}},\"$ref\":\"#/$defs/a\"}";
    wk_grammar *g = wk_grammar_from_json_schema(rec, strlen(rec));
    assert_non_null(g);
    assert_int_equal(match(g, "{\"b\":{\"a\":{\"b\":{}}}}"), 2);
    wk_grammar_free(g);
    /* a big enum */
    s = malloc(20000 * 12 + 32);
    n = (size_t)sprintf(s, "{\"enum\":[");
    for (int i = 0; i < 20000; i++) n += (size_t)sprintf(s + n, "%s\"v%d\"", i ? "," : "", i);
    n += (size_t)sprintf(s + n, "]}");
    g = wk_grammar_from_json_schema(s, n);
    assert_non_null(g);
    assert_int_equal(match(g, "\"v19999\""), 2);
    assert_int_equal(match(g, "\"v20000\""), 0);
    wk_grammar_free(g);
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gbnf_constructs),
        cmocka_unit_test(gbnf_errors),
        cmocka_unit_test(gbnf_hostile),
        cmocka_unit_test(masks_small_vocab),
        cmocka_unit_test(masks_real_vocabs),
        cmocka_unit_test(json_schemas),
        cmocka_unit_test(json_schema_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
