/* Constrained sampling on the real SmolLM2-135M-Instruct Q4_1 (label
 * `model`; WICK_SMOLLM2_GGUF, skipped without it):
 * - masks over its 49152-token vocabulary while walking a JSON document's
 *   own tokens: each token is allowed where it stands, and the mask time
 *   per step is printed (median / p90 / max; the goal is a median < 2 ms);
 * - random walks through the masks (uniform over allowed ids) always end in
 *   text the grammar accepts;
 * - 50 JSON schemas (tests/data/grammar_schemas.jsonl, each with a prompt)
 *   generated with the model's logits masked (-inf where not allowed) and
 *   wk_sampler at temperature 0.7: every output that completed within the
 *   token budget must parse and validate with Python's jsonschema
 *   (tests/grammar_validate.py in the venv); the completion rate and the
 *   mask times are printed. */
#include "testutil.h"
#include "wick/generate.h"
#include "wick/grammar.h"
#include "wick/lm.h"
#include "wick/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smollm2_fixture.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *t, int n) {
    if (!n) return;
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("%s: %d masks, median %.3f ms, p90 %.3f ms, max %.3f ms\n", what, n, t[n / 2], t[n * 9 / 10], t[n - 1]);
}

static const char PERSON[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":150},\"email\":{\"type\":\"string\",\"format\":\"email\"},\"tags\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"string\"}},\"address\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
    "\"zip\":{\"type\":\"string\"}},\"required\":[\"city\"]}},\"required\":[\"name\",\"age\"]}";
static const char DOC[] = "{\"name\": \"Ada Lovelace, née Byron\", \"age\": 36, \"email\": \"ada@example.org\", "
                          "\"tags\": [\"math\", \"poetry \\\"science\\\"\", \"😀\"], \"address\": {\"city\": "
                          "\"London\", \"zip\": \"W1\"}}";

/* The mask after ids[0, k) equals matching the text + each token's bytes
 * (the whole vocabulary, through wk_grammar_match: no trie, no memo). */
static void brute_force(const wk_grammar *g, const wk_tokenizer *t, const int32_t *ids, int64_t k,
                        const uint8_t *mask, int64_t V) {
    char text[4096];
    int64_t len = wk_tokenizer_decode(t, ids, k, false, text, sizeof text);
    assert_true(len >= 0 && len < 2048);
    int64_t allowed = 0;
    for (int32_t id = 0; id < V; id++) {
        if (wk_tokenizer_is_special(t, id)) continue;
        int64_t n = wk_tokenizer_token_bytes(t, id, text + len, sizeof text - (size_t)len);
        assert_true(n >= 0 && len + n < (int64_t)sizeof text);
        bool want = n > 0 && wk_grammar_match(g, text, (size_t)(len + n)) > 0;
        if (want != (mask[id] != 0))
            fail_msg("after %lld tokens: id %d mask %d, brute force %d", (long long)k, id, mask[id], want);
        allowed += want;
    }
    printf("brute force after %lld tokens: %lld ids allowed, as the mask says\n", (long long)k, (long long)allowed);
}

static void masks_along_a_document(void **state) {
    (void)state;
    need_model();
    const wk_tokenizer *t = wk_lm_tokenizer(g_model);
    int64_t V = wk_tokenizer_vocab_size(t);
    int32_t eos[2] = {wk_tokenizer_find(t, "<|im_end|>"), wk_tokenizer_eos(t)};
    wk_grammar *g = wk_grammar_from_json_schema(PERSON, strlen(PERSON));
    if (!g) fail_msg("%s", wk_last_error());
    assert_int_equal(wk_grammar_match(g, DOC, strlen(DOC)), 2);
    int32_t ids[256];
    int64_t n = wk_tokenizer_encode(t, DOC, strlen(DOC), 0, ids, 256);
    assert_true(n > 10 && n <= 256);
    uint8_t *mask = malloc((size_t)V);
    double times[260];
    int nt = 0;
    double t0 = now_ms();
    wk_grammar_state *st = wk_grammar_state_new(g, t);
    if (!st) fail_msg("%s", wk_last_error());
    printf("state (vocabulary trie) built in %.2f ms\n", now_ms() - t0);
    for (int rep = 0; rep < 2; rep++) { /* the second pass: a fresh state again (first-use costs twice) */
        if (rep) {
            wk_grammar_state_free(st);
            st = wk_grammar_state_new(g, t);
            nt = 0;
        }
        for (int64_t i = 0; i <= n; i++) {
            double a = now_ms();
            int64_t cnt = wk_grammar_state_mask(st, eos, 2, mask, V);
            times[nt++] = now_ms() - a;
            if (cnt <= 0) fail_msg("mask at token %lld: %lld (%s)", (long long)i, (long long)cnt, wk_last_error());
            if (i == n) {
                assert_true(mask[eos[0]]);
                assert_true(wk_grammar_state_complete(st));
                assert_int_equal(cnt, 1 + (eos[1] != eos[0])); /* the object is closed: only the end */
                break;
            }
            if (!mask[ids[i]]) fail_msg("token %lld (id %d) of the document not allowed", (long long)i, ids[i]);
            if (rep == 0 && (i == 0 || i == 7 || i == 24 || i == 45)) brute_force(g, t, ids, i, mask, V);
            TU_STATUS_OK(wk_grammar_state_accept(st, ids[i]));
        }
        report(rep ? "document walk (fresh state)" : "document walk", times, nt);
    }
    wk_grammar_state_free(st);
    free(mask);
    wk_grammar_free(g);
}

static void random_walks(void **state) {
    (void)state;
    need_model();
    const wk_tokenizer *t = wk_lm_tokenizer(g_model);
    int64_t V = wk_tokenizer_vocab_size(t);
    int32_t eos = wk_tokenizer_find(t, "<|im_end|>");
    const char *grammars[] = {
        "root ::= \"{\" ws \"\\\"k\\\"\" ws \":\" ws ( [0-9]+ | \"true\" ) ws \"}\"\nws ::= \" \"?",
        "root ::= [a-z ]{1,12} \".\"",
        "root ::= \"é\" [^\\x00-\\x7f]{0,3} \"!\"",
    };
    uint8_t *mask = malloc((size_t)V);
    char text[8192];
    uint64_t seed = 7;
    int ended = 0;
    for (size_t gi = 0; gi < sizeof grammars / sizeof *grammars; gi++) {
        wk_grammar *g = wk_grammar_from_gbnf(grammars[gi], strlen(grammars[gi]), NULL);
        if (!g) fail_msg("%s", wk_last_error());
        for (int w = 0; w < 10; w++) {
            wk_grammar_state *st = wk_grammar_state_new(g, t);
            size_t len = 0;
            for (int step = 0; step < 40; step++) {
                int64_t cnt = wk_grammar_state_mask(st, &eos, 1, mask, V);
                assert_true(cnt > 0);
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                int64_t pick = (int64_t)((seed >> 33) % (uint64_t)cnt);
                int32_t id = 0;
                for (; id < V; id++)
                    if (mask[id] && pick-- == 0) break;
                if (id == eos) {
                    if (wk_grammar_match(g, text, len) != 2) fail_msg("walk ended on \"%.*s\"", (int)len, text);
                    ended++;
                    break;
                }
                TU_STATUS_OK(wk_grammar_state_accept(st, id));
                int64_t k = wk_tokenizer_token_bytes(t, id, text + len, sizeof text - len);
                len += (size_t)k;
                if (wk_grammar_match(g, text, len) < 1) fail_msg("walk left the grammar: \"%.*s\"", (int)len, text);
            }
            wk_grammar_state_free(st);
        }
        wk_grammar_free(g);
    }
    printf("random walks: %d of 30 ended\n", ended);
    free(mask);
}

/* ---- generation over 50 schemas ---- */

enum { BUDGET = 96, MAX_PROMPT = 1024 };

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* JSON string body (no quotes) of s into out. */
static void put_json_str(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void schemas_generate(void **state) {
    (void)state;
    need_model();
    const char *py = getenv("WICK_VENV_PYTHON");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/grammar_schemas.jsonl", WICK_TESTS_DIR);
    char *lines = read_file(path);
    if (!lines) fail_msg("cannot read %s", path);
    const wk_tokenizer *t = wk_lm_tokenizer(g_model);
    int64_t V = wk_lm_config_of(g_model)->vocab;
    int32_t eos[2] = {wk_tokenizer_find(t, "<|im_end|>"), wk_tokenizer_eos(t)};
    float *logits = malloc(sizeof(float) * (size_t)V);
    uint8_t *mask = malloc((size_t)V);
    int32_t *ids = malloc(sizeof(int32_t) * MAX_PROMPT);
    char *prompt = malloc(16384);
    static double times[50 * BUDGET + 64];
    int nt = 0, ncase = 0, ncomplete = 0;
    char outpath[1024];
    const char *odir = getenv("WICK_ORACLE_DIR");
    snprintf(outpath, sizeof outpath, "%s/grammar_outputs.jsonl", odir && *odir ? odir : ".");
    char mk[1100];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", odir && *odir ? odir : ".");
    if (system(mk) != 0) fail_msg("%s failed", mk);
    FILE *out = fopen(outpath, "w");
    if (!out) fail_msg("cannot write %s", outpath);
    double t_start = now_ms();
    /* WICK_GRAMMAR_CASES=n: only the first n (a sanitized run) */
    int max_cases = getenv("WICK_GRAMMAR_CASES") ? atoi(getenv("WICK_GRAMMAR_CASES")) : 0;
    for (char *line = lines; *line; ncase++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        /* {"prompt": "...", "schema": <schema>} as written by hand, one per line */
        char *pq = strstr(line, "\"prompt\": \"") + 11, *pe = strstr(pq, "\", \"schema\": ");
        assert_non_null(pe);
        char *schema = pe + 13;
        size_t slen = strlen(schema) - 1; /* the line's closing brace */
        wk_grammar *g = wk_grammar_from_json_schema(schema, slen);
        if (!g) fail_msg("case %d: %s", ncase, wk_last_error());
        int pn = snprintf(prompt, 16384,
                          "<|im_start|>system\nYou are a helpful assistant. Answer with JSON only, matching this JSON "
                          "schema: %.*s<|im_end|>\n<|im_start|>user\n%.*s<|im_end|>\n<|im_start|>assistant\n",
                          (int)slen, schema, (int)(pe - pq), pq);
        int64_t np = wk_tokenizer_encode(t, prompt, (size_t)pn, WK_TOK_PARSE_SPECIAL, ids, MAX_PROMPT);
        assert_true(np > 0 && np <= MAX_PROMPT);
        wk_kv_cache *cache = wk_kv_cache_new(g_model, np + BUDGET + 1);
        wk_tensor *lt = TU_OK(wk_lm_forward(g_model, cache, ids, np, false));
        wk_sampler_opts so;
        wk_sampler_opts_default(&so);
        so.temperature = 0.7;
        so.seed = (uint64_t)ncase;
        wk_sampler *smp = wk_sampler_new(&so);
        wk_grammar_state *st = wk_grammar_state_new(g, t);
        if (!st) fail_msg("%s", wk_last_error());
        char text[BUDGET * 64];
        size_t len = 0;
        bool complete = false;
        for (int step = 0; step < BUDGET; step++) {
            TU_STATUS_OK(wk_to_host_f32(lt, logits, (size_t)V));
            wk_tensor_free(lt);
            lt = NULL;
            double a = now_ms();
            int64_t cnt = wk_grammar_state_mask(st, eos, 2, mask, V);
            times[nt++] = now_ms() - a;
            if (getenv("WICK_GRAMMAR_SLOW") && times[nt - 1] > 5)
                printf("slow mask %.1f ms: case %d step %d after \"%.*s\"\n", times[nt - 1], ncase, step, (int)len, text);
            if (cnt < 0) fail_msg("case %d: mask: %s", ncase, wk_last_error());
            if (cnt == 0) fail_msg("case %d: dead end after \"%.*s\"", ncase, (int)len, text);
            for (int64_t i = 0; i < V; i++)
                if (!mask[i]) logits[i] = -INFINITY;
            int32_t id = wk_sampler_sample(smp, logits, V, NULL, 0);
            assert_true(id >= 0 && mask[id]);
            if (id == eos[0] || id == eos[1]) {
                complete = true;
                break;
            }
            TU_STATUS_OK(wk_grammar_state_accept(st, id));
            len += (size_t)wk_tokenizer_token_bytes(t, id, text + len, sizeof text - len);
            assert_true(len < sizeof text);
            if (step + 1 < BUDGET) lt = TU_OK(wk_lm_forward(g_model, cache, &id, 1, false));
        }
        wk_tensor_free(lt);
        if (complete) {
            ncomplete++;
            assert_int_equal(wk_grammar_match(g, text, len), 2);
        }
        fprintf(out, "{\"schema\": %.*s, \"complete\": %s, \"output\": ", (int)slen, schema,
                complete ? "true" : "false");
        put_json_str(out, text, len);
        fprintf(out, "}\n");
        printf("case %2d %s %.*s\n", ncase, complete ? "ok  " : "open", (int)(len > 110 ? 110 : len), text);
        wk_grammar_state_free(st);
        wk_sampler_free(smp);
        wk_kv_cache_free(cache);
        wk_grammar_free(g);
        if (!nl || (max_cases > 0 && ncase + 1 >= max_cases)) {
            ncase++;
            break;
        }
        line = nl + 1;
    }
    fclose(out);
    printf("completed %d of %d within %d tokens; %.1f s in all\n", ncomplete, ncase, BUDGET,
           (now_ms() - t_start) / 1e3);
    report("generation masks", times, nt);
    if (max_cases <= 0) assert_int_equal(ncase, 50);
    if (py) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' '%s/grammar_validate.py' '%s'", py, WICK_TESTS_DIR, outpath);
        if (system(cmd) != 0) fail_msg("jsonschema refused an output: %s", cmd);
    } else {
        printf("skip validation: WICK_VENV_PYTHON is not set\n");
    }
    free(lines);
    free(logits);
    free(mask);
    free(ids);
    free(prompt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(masks_along_a_document),
        cmocka_unit_test(random_walks),
        cmocka_unit_test(schemas_generate),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
