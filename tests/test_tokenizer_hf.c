/* The tokenizers against HF `tokenizers` 0.23.3 (project venv), token for
 * token, on a seeded corpus of hard strings made at test time by
 * tests/tok_oracle.py: SmolLM2's tokenizer.json (made from the GGUF by
 * tests/make_tokenizer_json.py) and MiniLM's (WordPiece). Also: byte-level
 * BPE round-trips every string, wick's decode equals HF's, and the GGUF
 * loader gives the same ids as the JSON loader on SmolLM2.
 * SentencePiece: llama.cpp's llama-spm, phi-3 (model "llama", by score) and
 * gemma-4 ("gemma4", by rank) vocab GGUFs, each turned into a tokenizer.json
 * at test time: wick's JSON loader equals HF on it, and wick's GGUF loader
 * equals HF too (so the two wick paths agree).
 * Skips, saying why, without WICK_VENV_PYTHON / WICK_SMOLLM2_GGUF /
 * WICK_MINILM_DIR / WICK_LLAMA_VOCAB_DIR. */
#include <setjmp.h>
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "wick/wick.h"

static char g_dir[512], g_src[512];
static const char *g_py;

typedef struct tcase {
    int flag;
    char *text, *dec;
    size_t len, dec_len;
    int32_t *ids;
    int64_t nids;
} tcase;

static int unhex(const char *s, size_t n, char **out, size_t *len) {
    *out = malloc(n / 2 + 1);
    for (size_t i = 0; i + 1 < n + 1 && i < n; i += 2) {
        unsigned v;
        if (sscanf(s + i, "%2x", &v) != 1) return -1;
        (*out)[i / 2] = (char)v;
    }
    *len = n / 2;
    (*out)[*len] = 0;
    return 0;
}

/* Read the oracle's cases (format in tests/tok_oracle.py). */
static tcase *read_cases(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    tcase *c = NULL;
    int cnt = 0, cap = 0;
    static char line[1 << 20];
    while (fgets(line, sizeof line, f)) {
        if (cnt == cap) {
            cap = cap ? cap * 2 : 256;
            c = realloc(c, (size_t)cap * sizeof *c);
        }
        tcase *t = &c[cnt++];
        char *f1 = strchr(line, '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL, *f3 = f2 ? strchr(f2 + 1, '\t') : NULL;
        assert_non_null(f3);
        t->flag = line[0] == '1';
        assert_int_equal(unhex(f1 + 1, (size_t)(f2 - f1 - 1), &t->text, &t->len), 0);
        char *nl = strchr(f3 + 1, '\n');
        assert_int_equal(unhex(f3 + 1, (size_t)((nl ? nl : f3 + 1 + strlen(f3 + 1)) - f3 - 1), &t->dec, &t->dec_len), 0);
        t->ids = malloc(sizeof(int32_t) * (strlen(f2) + 1));
        t->nids = 0;
        for (char *p = f2 + 1; p < f3;) {
            t->ids[t->nids++] = (int32_t)strtol(p, &p, 10);
            if (*p == ',') p++;
        }
    }
    fclose(f);
    *n = cnt;
    return c;
}

static void free_cases(tcase *c, int n) {
    for (int i = 0; i < n; i++) {
        free(c[i].text);
        free(c[i].dec);
        free(c[i].ids);
    }
    free(c);
}

static void print_case(const tcase *c, const int32_t *got, int64_t k) {
    fprintf(stderr, "text (%zu bytes): \"", c->len);
    for (size_t i = 0; i < c->len; i++) {
        unsigned char ch = (unsigned char)c->text[i];
        if (ch < 32 || ch == '"') fprintf(stderr, "\\x%02x", ch);
        else fputc(ch, stderr);
    }
    fprintf(stderr, "\"\n  want:");
    for (int64_t i = 0; i < c->nids; i++) fprintf(stderr, " %d", c->ids[i]);
    fprintf(stderr, "\n  got: ");
    for (int64_t i = 0; i < k; i++) fprintf(stderr, " %d", got[i]);
    fprintf(stderr, "\n");
}

static int run(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Compare one tokenizer with the cases; returns the number of mismatches. */
static int check_cases(const wk_tokenizer *t, const tcase *c, int n, bool byte_level, const char *what) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        unsigned flags = WK_TOK_PARSE_SPECIAL | (c[i].flag ? WK_TOK_ADD_SPECIAL : 0);
        int64_t need = wk_tokenizer_encode(t, c[i].text, c[i].len, flags, NULL, 0);
        assert_true(need >= 0);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(need + 1));
        assert_int_equal(wk_tokenizer_encode(t, c[i].text, c[i].len, flags, ids, need), need);
        bool same = need == c[i].nids && memcmp(ids, c[i].ids, sizeof(int32_t) * (size_t)need) == 0;
        if (!same) {
            if (bad < 5) {
                fprintf(stderr, "%s: case %d differs from HF\n", what, i);
                print_case(&c[i], ids, need);
            }
            bad++;
        }
        /* decode: HF's skip_special_tokens=True text; byte-level also round-trips exactly */
        size_t cap = 16 * (c[i].len + 64);
        char *out = malloc(cap);
        int64_t m = wk_tokenizer_decode(t, c[i].ids, c[i].nids, true, out, cap);
        if (m != (int64_t)c[i].dec_len || memcmp(out, c[i].dec, c[i].dec_len) != 0) {
            if (bad < 5) fprintf(stderr, "%s: case %d decode \"%.*s\" != HF \"%s\"\n", what, i, (int)m, out, c[i].dec);
            bad++;
        }
        if (byte_level && !c[i].flag) {
            m = wk_tokenizer_decode(t, ids, need, false, out, cap);
            if (m != (int64_t)c[i].len || memcmp(out, c[i].text, c[i].len) != 0) {
                if (bad < 5) fprintf(stderr, "%s: case %d does not round-trip\n", what, i);
                bad++;
            }
        }
        free(out);
        free(ids);
    }
    fprintf(stderr, "%s: %d of %d strings match HF\n", what, n - bad, n);
    return bad;
}

static void test_smollm2_json_and_gguf(void **state) {
    (void)state;
    const char *gguf = getenv("WICK_SMOLLM2_GGUF");
    if (!g_py || !gguf) {
        fprintf(stderr, "skipped: needs WICK_VENV_PYTHON and WICK_SMOLLM2_GGUF (scripts/setup.sh)\n");
        skip();
    }
    char json[700], cases[700], cmd[4096];
    snprintf(json, sizeof json, "%s/smollm2_tokenizer.json", g_dir);
    snprintf(cases, sizeof cases, "%s/smollm2.cases", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s/make_tokenizer_json.py' '%s' '%s' && '%s' '%s/tok_oracle.py' '%s' '%s' 12",
             g_py, g_src, gguf, json, g_py, g_src, json, cases);
    assert_int_equal(run(cmd), 0);
    int n;
    tcase *c = read_cases(cases, &n);
    assert_true(n > 300);
    wk_tokenizer *tj = wk_tokenizer_load_json(json);
    assert_non_null(tj);
    assert_int_equal(check_cases(tj, c, n, true, "smollm2 tokenizer.json"), 0);
    wk_gguf *g = wk_gguf_open(gguf);
    assert_non_null(g);
    wk_tokenizer *tg = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    assert_non_null(tg);
    assert_int_equal(check_cases(tg, c, n, true, "smollm2 GGUF"), 0);
    assert_int_equal(wk_tokenizer_vocab_size(tg), wk_tokenizer_vocab_size(tj));
    assert_int_equal(wk_tokenizer_eos(tg), 2);
    assert_int_equal(wk_tokenizer_find(tj, "<|im_end|>"), 2);
    wk_tokenizer_free(tg);
    wk_tokenizer_free(tj);
    free_cases(c, n);
}

static void test_minilm_json(void **state) {
    (void)state;
    const char *dir = getenv("WICK_MINILM_DIR");
    if (!g_py || !dir) {
        fprintf(stderr, "skipped: needs WICK_VENV_PYTHON and WICK_MINILM_DIR (scripts/setup.sh)\n");
        skip();
    }
    char json[700], cases[700], cmd[4096], vocab[700];
    snprintf(json, sizeof json, "%s/tokenizer.json", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    snprintf(cases, sizeof cases, "%s/minilm.cases", g_dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s/tok_oracle.py' '%s' '%s' 34", g_py, g_src, json, cases);
    assert_int_equal(run(cmd), 0);
    int n;
    tcase *c = read_cases(cases, &n);
    assert_true(n > 300);
    wk_tokenizer *t = wk_tokenizer_load_json(json);
    assert_non_null(t);
    assert_int_equal(check_cases(t, c, n, false, "minilm tokenizer.json"), 0);
    wk_tokenizer_free(t);
    /* vocab.txt + lowercase is the same tokenizer as MiniLM's tokenizer.json */
    t = wk_tokenizer_load_vocab_txt(vocab, true);
    assert_non_null(t);
    assert_int_equal(check_cases(t, c, n, false, "minilm vocab.txt"), 0);
    wk_tokenizer_free(t);
    free_cases(c, n);
}

static void check_spm_vocab(const char *dir, const char *name, bool round_trip) {
    char gguf[700], json[700], cases[700], cmd[4096];
    snprintf(gguf, sizeof gguf, "%s/ggml-vocab-%s.gguf", dir, name);
    snprintf(json, sizeof json, "%s/spm-%s.json", g_dir, name);
    snprintf(cases, sizeof cases, "%s/spm-%s.cases", g_dir, name);
    snprintf(cmd, sizeof cmd, "'%s' '%s/make_tokenizer_json.py' '%s' '%s' && '%s' '%s/tok_oracle.py' '%s' '%s' 56",
             g_py, g_src, gguf, json, g_py, g_src, json, cases);
    assert_int_equal(run(cmd), 0);
    int n;
    tcase *c = read_cases(cases, &n);
    assert_true(n > 300);
    char what[128];
    wk_tokenizer *tj = wk_tokenizer_load_json(json);
    if (!tj) fprintf(stderr, "%s: %s\n", json, wk_last_error());
    assert_non_null(tj);
    snprintf(what, sizeof what, "%s tokenizer.json", name);
    int bad = check_cases(tj, c, n, round_trip, what);
    wk_gguf *g = wk_gguf_open(gguf);
    assert_non_null(g);
    wk_tokenizer *tg = wk_tokenizer_from_gguf(g);
    wk_gguf_close(g);
    assert_non_null(tg);
    snprintf(what, sizeof what, "%s GGUF", name);
    bad += check_cases(tg, c, n, round_trip, what);
    assert_int_equal(wk_tokenizer_vocab_size(tg), wk_tokenizer_vocab_size(tj));
    assert_int_equal(wk_tokenizer_bos(tg), wk_tokenizer_bos(tj));
    assert_true(wk_tokenizer_adds_bos(tg) && wk_tokenizer_adds_bos(tj));
    assert_false(wk_tokenizer_adds_eos(tg) || wk_tokenizer_adds_eos(tj));
    wk_tokenizer_free(tg);
    wk_tokenizer_free(tj);
    free_cases(c, n);
    assert_int_equal(bad, 0);
}

static void test_spm_vocabs(void **state) {
    (void)state;
    const char *dir = getenv("WICK_LLAMA_VOCAB_DIR");
    if (!g_py || !dir) {
        fprintf(stderr, "skipped: needs WICK_VENV_PYTHON and WICK_LLAMA_VOCAB_DIR (scripts/setup.sh)\n");
        skip();
    }
    /* with a prefix space, "a<added>b" decodes as "a<added> b" (the space
     * SentencePiece puts after every added token): no exact round trip */
    check_spm_vocab(dir, "llama-spm", false);
    check_spm_vocab(dir, "phi-3", false);
    check_spm_vocab(dir, "gemma-4", true);
}

static int setup(void **state) {
    (void)state;
    g_py = getenv("WICK_VENV_PYTHON");
    if (g_py && !*g_py) g_py = NULL;
    const char *base = getenv("WICK_ORACLE_DIR") ? getenv("WICK_ORACLE_DIR") : "/tmp";
    mkdir(base, 0755);
    snprintf(g_dir, sizeof g_dir, "%s/tokenizer", base);
    mkdir(g_dir, 0755);
    snprintf(g_src, sizeof g_src, "%s", __FILE__); /* the scripts sit beside this file */
    char *slash = strrchr(g_src, '/');
    if (slash) *slash = 0;
    else snprintf(g_src, sizeof g_src, ".");
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smollm2_json_and_gguf),
        cmocka_unit_test(test_minilm_json),
        cmocka_unit_test(test_spm_vocabs),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
