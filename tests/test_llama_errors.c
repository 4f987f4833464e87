/* The llama loader and forward pass on tiny random models written here
 * (wk_gguf_writer, wk_safetensors_save): no model files needed.
 *  - the same weights as an HF directory (rotate-half RoPE, original q/k
 *    rows) and as a GGUF (rows permuted as llama.cpp's converter does,
 *    interleaved RoPE) give the same logits: each layout is paired with its
 *    RoPE variant;
 *  - batched prefill == token-by-token decode; a quantized (Q8_0) copy runs
 *    and stays close;
 *  - config.json and GGUF metadata (GQA, tied / untied head, rope scaling,
 *    chat templates) are read;
 *  - errors: missing file, unknown architecture, a tensor of the wrong
 *    shape or missing, cache overflow, ids out of range: NULL + a message
 *    naming the cause, never a crash. */
#include "llama_testutil.h"
#include "wick/gguf.h"
#include "wick/safetensors.h"
#include "wick/lm.h"
#include "model/lm_internal.h"
#include <math.h>

enum { VOCAB = 40, DIM = 64, HEADS = 4, KV = 2, HD = 16, FFN = 96, LAYERS = 2, CTX = 32 };

typedef struct tiny {
    /* HF layout (original q/k rows) */
    wk_tensor *embd, *norm, *lm_head;
    wk_tensor *w[LAYERS][9]; /* attn_norm q k v o ffn_norm gate up down */
} tiny;

static const char *const GGUF_KIND[9] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                         "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
static const char *const HF_KIND[9] = {"input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                                       "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                                       "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};

static wk_tensor *rnd(int64_t r, int64_t c, double std) {
    int64_t s[2] = {r, c};
    return TU_OK(wk_randn(s, c ? 2 : 1, 0.0, std, WK_F32, wk_cpu()));
}

static wk_tensor *norm_w(void) {
    int64_t s[1] = {DIM};
    return TU_OK(wk_rand(s, 1, 0.8, 1.2, WK_F32, wk_cpu()));
}

static void tiny_make(tiny *t) {
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 1234));
    t->embd = rnd(VOCAB, DIM, 1.0);
    t->norm = norm_w();
    t->lm_head = rnd(VOCAB, DIM, 0.2);
    int64_t qd = HEADS * HD, kvd = KV * HD;
    for (int l = 0; l < LAYERS; l++) {
        t->w[l][0] = norm_w();
        t->w[l][1] = rnd(qd, DIM, 0.2);
        t->w[l][2] = rnd(kvd, DIM, 0.2);
        t->w[l][3] = rnd(kvd, DIM, 0.2);
        t->w[l][4] = rnd(DIM, qd, 0.2);
        t->w[l][5] = norm_w();
        t->w[l][6] = rnd(FFN, DIM, 0.2);
        t->w[l][7] = rnd(FFN, DIM, 0.2);
        t->w[l][8] = rnd(DIM, FFN, 0.2);
    }
}

static void tiny_free(tiny *t) {
    wk_tensor_free(t->embd);
    wk_tensor_free(t->norm);
    wk_tensor_free(t->lm_head);
    for (int l = 0; l < LAYERS; l++)
        for (int k = 0; k < 9; k++) wk_tensor_free(t->w[l][k]);
}

/* llama.cpp's converter permutation: GGUF row h*D + 2i + j holds HF row
 * h*D + j*D/2 + i (pairs of a head's halves become neighbours). */
static wk_tensor *permute_rows(const wk_tensor *w, int64_t heads) {
    int64_t rows = wk_dim(w, 0), d = rows / heads;
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)rows);
    assert_non_null(idx);
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < d / 2; i++)
            for (int64_t j = 0; j < 2; j++) idx[h * d + 2 * i + j] = (int32_t)(h * d + j * (d / 2) + i);
    wk_tensor *it = TU_OK(wk_from_host(idx, sizeof(int32_t) * (size_t)rows, &rows, 1, WK_I32, wk_cpu()));
    wk_tensor *r = TU_OK(wk_index_select(w, it, 0));
    wk_tensor_free(it);
    free(idx);
    return r;
}

typedef struct gguf_opts {
    const char *arch;      /* general.architecture */
    bool tied;             /* no output.weight */
    wk_dtype mat_dtype;    /* matrices stored as (f32 or a block dtype) */
    const char *bad_shape; /* this tensor written one column short */
    const char *omit;      /* this tensor left out */
} gguf_opts;

static void write_tiny_gguf(const tiny *t, const char *path, const gguf_opts *o) {
    wk_gguf_writer *w = wk_gguf_writer_new();
    assert_non_null(w);
    const char *tmpl = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
    TU_STATUS_OK(wk_gguf_writer_add_string(w, "general.architecture", o->arch, strlen(o->arch)));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.context_length", CTX));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.embedding_length", DIM));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.block_count", LAYERS));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.feed_forward_length", FFN));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.attention.head_count", HEADS));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.attention.head_count_kv", KV));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.rope.dimension_count", HD));
    TU_STATUS_OK(wk_gguf_writer_add_f32(w, "llama.rope.freq_base", 500.0f));
    TU_STATUS_OK(wk_gguf_writer_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2));
    TU_STATUS_OK(wk_gguf_writer_add_string(w, "tokenizer.chat_template", tmpl, strlen(tmpl)));
    wk_tensor *owned[64];
    int nown = 0;
#define ADD(name, tensor)                                                                                      \
    do {                                                                                                       \
        wk_tensor *x_ = (tensor);                                                                              \
        if (o->omit && !strcmp(o->omit, name)) break;                                                          \
        if (o->bad_shape && !strcmp(o->bad_shape, name)) x_ = owned[nown++] = TU_OK(wk_narrow(x_, -1, 0, wk_dim(x_, -1) - 32)); \
        else if (wk_rank(x_) == 2 && o->mat_dtype != WK_F32) x_ = owned[nown++] = TU_OK(wk_quantize(x_, o->mat_dtype)); \
        TU_STATUS_OK(wk_gguf_writer_add_tensor(w, name, x_));                                                  \
    } while (0)
    ADD("token_embd.weight", t->embd);
    ADD("output_norm.weight", t->norm);
    if (!o->tied) ADD("output.weight", t->lm_head);
    char name[96];
    for (int l = 0; l < LAYERS; l++)
        for (int k = 0; k < 9; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, GGUF_KIND[k]);
            wk_tensor *x = t->w[l][k];
            if (k == 1) x = owned[nown++] = permute_rows(x, HEADS);
            if (k == 2) x = owned[nown++] = permute_rows(x, KV);
            ADD(name, x);
        }
#undef ADD
    TU_STATUS_OK(wk_gguf_writer_write(w, path));
    wk_gguf_writer_free(w);
    for (int i = 0; i < nown; i++) wk_tensor_free(owned[i]);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void write_tiny_hf(const tiny *t, const char *dir, bool tied, const char *model_type) {
    mkdir(dir, 0755);
    char path[4096], cfg[1024];
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(cfg, sizeof cfg,
             "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"%s\", \"vocab_size\": %d,"
             " \"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d,"
             " \"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"max_position_embeddings\": %d,"
             " \"rope_theta\": 500.0, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null,"
             " \"tie_word_embeddings\": %s, \"bos_token_id\": 1, \"eos_token_id\": [2, 3], \"torch_dtype\": \"float32\"}",
             model_type, VOCAB, DIM, FFN, LAYERS, HEADS, KV, CTX, tied ? "true" : "false");
    write_file(path, cfg);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_file(path, "{\"add_bos_token\": false, \"chat_template\": \"<|im_start|>{{ x }}\\n\"}");
    const char *names[3 + LAYERS * 9];
    wk_tensor *ts[3 + LAYERS * 9];
    char buf[LAYERS * 9][96];
    int n = 0;
    names[n] = "model.embed_tokens.weight", ts[n++] = t->embd;
    names[n] = "model.norm.weight", ts[n++] = t->norm;
    if (!tied) names[n] = "lm_head.weight", ts[n++] = t->lm_head;
    for (int l = 0; l < LAYERS; l++)
        for (int k = 0; k < 9; k++) {
            snprintf(buf[l * 9 + k], sizeof buf[0], "model.layers.%d.%s.weight", l, HF_KIND[k]);
            names[n] = buf[l * 9 + k], ts[n++] = t->w[l][k];
        }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    TU_STATUS_OK(wk_safetensors_save(path, n, names, ts, 0, NULL, NULL));
}

static wk_tensor *all_logits(const wk_lm *m, const int32_t *ids, int64_t n) {
    wk_kv_cache *c = wk_kv_cache_new(m, 0);
    if (!c) fail_msg("%s", wk_last_error());
    assert_int_equal(wk_kv_cache_capacity(c), CTX);
    wk_tensor *l = wk_lm_forward(m, c, ids, n, true);
    if (!l) fail_msg("%s", wk_last_error());
    wk_kv_cache_free(c);
    return l;
}

static const int32_t IDS[9] = {3, 17, 5, 39, 0, 22, 8, 8, 11};

static void gguf_and_hf_layouts_agree(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char gpath[4096], hdir[4096];
    for (int tied = 0; tied < 2; tied++) {
        lt_tmp_path(gpath, sizeof gpath, tied ? "tiny-tied.gguf" : "tiny.gguf");
        lt_tmp_path(hdir, sizeof hdir, tied ? "tiny-hf-tied" : "tiny-hf");
        gguf_opts o = {.arch = "llama", .tied = tied, .mat_dtype = WK_F32};
        write_tiny_gguf(&t, gpath, &o);
        write_tiny_hf(&t, hdir, tied, "llama");
        wk_lm *g = wk_lm_load(gpath, NULL), *h = wk_lm_load(hdir, NULL);
        if (!g || !h) fail_msg("%s", wk_last_error());
        const wk_lm_config *cg = wk_lm_config_of(g), *ch = wk_lm_config_of(h);
        assert_true(cg->rope_interleaved);
        assert_false(ch->rope_interleaved);
        assert_int_equal(cg->tied_embeddings, tied);
        assert_int_equal(ch->tied_embeddings, tied);
        assert_int_equal(cg->n_kv_heads, KV);
        assert_int_equal(ch->n_kv_heads, KV);
        assert_int_equal(ch->head_dim, HD);
        assert_int_equal(ch->max_ctx, CTX);
        assert_int_equal(ch->eos, 2); /* first of the list */
        assert_int_equal(cg->eos, 2);
        assert_true(fabs(ch->rope_theta - 500.0) < 1e-9 && fabs(cg->rope_theta - 500.0) < 1e-9);
        assert_string_equal(wk_lm_chat_template(g), "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}");
        assert_string_equal(wk_lm_chat_template(h), "<|im_start|>{{ x }}\n");
        wk_tensor *lg = all_logits(g, IDS, 9), *lh = all_logits(h, IDS, 9);
        int64_t shape[2] = {9, VOCAB};
        tu_assert_shape(lg, shape, 2);
        double d = tu_max_abs_diff(lg, lh);
        if (!(d < 1e-4)) fail_msg("GGUF (interleaved) vs HF (halves) logits differ by %g (tied %d)", d, tied);
        /* and the two RoPE variants do differ: the pairing matters (a
         * model with the wrong variant would not match) */
        wk_tensor_free(lg);
        wk_tensor_free(lh);
        wk_lm_free(g);
        wk_lm_free(h);
        remove(gpath);
    }
    tiny_free(&t);
}

/* feeding the HF layout's weights with interleaved RoPE must NOT give the
 * same logits: otherwise the test above could not catch a mispairing */
static void rope_variant_matters(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char gpath[4096], hdir[4096];
    lt_tmp_path(gpath, sizeof gpath, "tiny-unpermuted.gguf");
    lt_tmp_path(hdir, sizeof hdir, "tiny-hf-ref");
    write_tiny_hf(&t, hdir, false, "llama");
    gguf_opts o = {.arch = "llama", .mat_dtype = WK_F32};
    write_tiny_gguf(&t, gpath, &o);
    wk_lm *g = wk_lm_load(gpath, NULL), *h = wk_lm_load(hdir, NULL);
    assert_non_null(g);
    assert_non_null(h);
    /* flip the GGUF model's RoPE variant (white-box) */
    g->cfg.rope_interleaved = false;
    wk_tensor *lg = all_logits(g, IDS, 9), *lh = all_logits(h, IDS, 9);
    assert_true(tu_max_abs_diff(lg, lh) > 1e-2);
    wk_tensor_free(lg);
    wk_tensor_free(lh);
    wk_lm_free(g);
    wk_lm_free(h);
    remove(gpath);
    tiny_free(&t);
}

static void prefill_equals_decode_tiny(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char path[4096];
    lt_tmp_path(path, sizeof path, "tiny-pd.gguf");
    gguf_opts o = {.arch = "llama", .mat_dtype = WK_F32};
    write_tiny_gguf(&t, path, &o);
    wk_lm *m = wk_lm_load(path, NULL);
    assert_non_null(m);
    wk_tensor *all = all_logits(m, IDS, 9);
    float a[9 * VOCAB], b[VOCAB];
    TU_STATUS_OK(wk_to_host_f32(all, a, 9 * VOCAB));
    wk_tensor_free(all);
    wk_kv_cache *c = wk_kv_cache_new(m, 9);
    for (int p = 0; p < 9; p++) {
        lt_step(m, c, &IDS[p], 1, b);
        assert_int_equal(wk_kv_cache_len(c), p + 1);
        for (int i = 0; i < VOCAB; i++) assert_true(fabs(a[p * VOCAB + i] - b[i]) < 1e-4);
    }
    /* two tokens at a time, from a truncated cache */
    TU_STATUS_OK(wk_kv_cache_truncate(c, 1));
    for (int p = 1; p + 2 <= 9; p += 2) {
        wk_tensor *l = wk_lm_forward(m, c, &IDS[p], 2, true);
        assert_non_null(l);
        float two[2 * VOCAB];
        TU_STATUS_OK(wk_to_host_f32(l, two, 2 * VOCAB));
        wk_tensor_free(l);
        for (int i = 0; i < 2 * VOCAB; i++) assert_true(fabs(a[p * VOCAB + i] - two[i]) < 1e-4);
    }
    wk_kv_cache_free(c);
    wk_lm_free(m);
    remove(path);
    tiny_free(&t);
}

static void quantized_tiny_runs(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char fpath[4096], qpath[4096];
    lt_tmp_path(fpath, sizeof fpath, "tiny-f.gguf");
    lt_tmp_path(qpath, sizeof qpath, "tiny-q8.gguf");
    gguf_opts of = {.arch = "llama", .mat_dtype = WK_F32}, oq = {.arch = "llama", .mat_dtype = WK_Q8_0};
    write_tiny_gguf(&t, fpath, &of);
    write_tiny_gguf(&t, qpath, &oq);
    wk_lm *f = wk_lm_load(fpath, NULL), *q = wk_lm_load(qpath, NULL);
    assert_non_null(f);
    assert_non_null(q);
    wk_tensor *lf = all_logits(f, IDS, 9), *lq = all_logits(q, IDS, 9);
    double d = tu_max_abs_diff(lf, lq);
    wk_tensor *ab = TU_OK(wk_abs(lf)), *mx = TU_OK(wk_max_all(ab));
    double scale;
    TU_STATUS_OK(wk_item(mx, &scale));
    /* Q8_0 weights and activations: near f32, not equal (a random net
     * amplifies the ~0.7% error of one Q8_0 matmul through two layers) */
    if (!(d < 0.1 * scale && d > 0)) fail_msg("Q8_0 vs f32 logits differ by %g (largest %g)", d, scale);
    wk_tensor_free(mx);
    wk_tensor_free(ab);
    wk_tensor_free(lf);
    wk_tensor_free(lq);
    wk_lm_free(f);
    wk_lm_free(q);
    remove(fpath);
    remove(qpath);
    tiny_free(&t);
}

/* WICK_LLAMA_FUSE=1: q/k/v and gate/up fused at load (f32 and block
 * rows) give the logits of the separate matrices */
static void fused_weights_agree(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char path[4096];
    lt_tmp_path(path, sizeof path, "tiny-fuse.gguf");
    const wk_dtype dts[2] = {WK_F32, WK_Q8_0};
    for (int i = 0; i < 2; i++) {
        gguf_opts o = {.arch = "llama", .mat_dtype = dts[i]};
        write_tiny_gguf(&t, path, &o);
        unsetenv("WICK_LLAMA_FUSE");
        wk_lm *a = wk_lm_load(path, NULL);
        setenv("WICK_LLAMA_FUSE", "1", 1);
        wk_lm *b = wk_lm_load(path, NULL);
        unsetenv("WICK_LLAMA_FUSE");
        assert_non_null(a);
        assert_non_null(b);
        assert_null(a->layers[0].qkv.weight);
        assert_non_null(b->layers[1].qkv.weight);
        assert_non_null(b->layers[1].gate_up.weight);
        assert_null(b->layers[1].q.weight);
        int64_t want[2] = {HEADS * HD + 2 * KV * HD, DIM};
        tu_assert_shape(b->layers[1].qkv.weight, want, 2);
        assert_int_equal(wk_tensor_dtype(b->layers[1].qkv.weight), dts[i]);
        wk_tensor *la = all_logits(a, IDS, 9), *lb = all_logits(b, IDS, 9);
        double d = tu_max_abs_diff(la, lb);
        if (!(d < 1e-4)) fail_msg("fused vs separate weights (%s): logits differ by %g", wk_dtype_name(dts[i]), d);
        wk_tensor_free(la);
        wk_tensor_free(lb);
        wk_lm_free(a);
        wk_lm_free(b);
    }
    remove(path);
    tiny_free(&t);
}

static void expect_load_error(const char *path, wk_status st, const char *needle) {
    wk_clear_error();
    wk_lm *m = wk_lm_load(path, NULL);
    if (m) fail_msg("loading %s should fail", path);
    assert_int_equal(wk_last_status(), st);
    if (!strstr(wk_last_error(), needle)) fail_msg("message '%s' lacks '%s'", wk_last_error(), needle);
    wk_clear_error();
}

static void load_errors(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char path[4096], dir[2048];
    expect_load_error("/nonexistent/model.gguf", WK_ERR_IO, "/nonexistent/model.gguf");
    lt_tmp_path(path, sizeof path, "tiny-bad.gguf");
    gguf_opts o = {.arch = "gpt2", .mat_dtype = WK_F32};
    write_tiny_gguf(&t, path, &o);
    expect_load_error(path, WK_ERR_FORMAT, "wk_lm_load: unknown architecture 'gpt2'");
    o = (gguf_opts){.arch = "llama", .mat_dtype = WK_F32, .bad_shape = "blk.1.attn_q.weight"};
    write_tiny_gguf(&t, path, &o);
    expect_load_error(path, WK_ERR_SHAPE, "blk.1.attn_q.weight has shape (64, 32), the config needs (64, 64)");
    o = (gguf_opts){.arch = "llama", .mat_dtype = WK_F32, .omit = "blk.0.ffn_down.weight"};
    write_tiny_gguf(&t, path, &o);
    expect_load_error(path, WK_ERR_FORMAT, "blk.0.ffn_down.weight is missing");
    remove(path);
    lt_tmp_path(dir, sizeof dir, "tiny-hf-bad");
    write_tiny_hf(&t, dir, true, "bert");
    expect_load_error(dir, WK_ERR_FORMAT, "unknown architecture 'bert'");
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, "{\"model_type\": \"llama\", \"hidden_size\": 64,");
    expect_load_error(dir, WK_ERR_FORMAT, "config.json");
    write_file(path, "{\"model_type\": \"llama\", \"vocab_size\": 40, \"hidden_size\": 64, \"intermediate_size\": 96,"
                     " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 3}");
    expect_load_error(dir, WK_ERR_FORMAT, "kv heads 3 do not divide heads 4");
    expect_load_error(NULL, WK_ERR_ARG, "path");
    tiny_free(&t);
}

static void forward_errors(void **state) {
    (void)state;
    tiny t;
    tiny_make(&t);
    char path[4096];
    lt_tmp_path(path, sizeof path, "tiny-fe.gguf");
    gguf_opts o = {.arch = "llama", .mat_dtype = WK_F32};
    write_tiny_gguf(&t, path, &o);
    wk_lm *m = wk_lm_load(path, NULL);
    assert_non_null(m);
    wk_clear_error();
    assert_null(wk_kv_cache_new(m, CTX + 1));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk_clear_error();
    wk_kv_cache *c = wk_kv_cache_new(m, 4);
    assert_non_null(c);
    wk_tensor *l = wk_lm_forward(m, c, IDS, 3, false);
    assert_non_null(l);
    wk_tensor_free(l);
    assert_null(wk_lm_forward(m, c, IDS, 2, false));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "cache overflow"));
    assert_int_equal(wk_kv_cache_len(c), 3); /* unchanged */
    wk_clear_error();
    int32_t bad[2] = {1, VOCAB};
    TU_STATUS_OK(wk_kv_cache_truncate(c, 0));
    assert_null(wk_lm_forward(m, c, bad, 2, false));
    assert_non_null(strstr(wk_last_error(), "token id 40 at 1 is out of range (vocab 40)"));
    bad[1] = -1;
    assert_null(wk_lm_forward(m, c, bad, 2, false));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    assert_int_equal(wk_kv_cache_len(c), 0);
    assert_null(wk_lm_forward(m, c, bad, 0, false));
    assert_null(wk_lm_forward(m, NULL, bad, 1, false));
    assert_int_not_equal(wk_kv_cache_truncate(c, -1), WK_OK);
    wk_clear_error();
    /* still usable after the errors */
    l = wk_lm_forward(m, c, IDS, 4, false);
    assert_non_null(l);
    wk_tensor_free(l);
    wk_kv_cache_free(c);
    wk_lm_free(m);
    remove(path);
    tiny_free(&t);
}

static void rope_scaling_config(void **state) {
    (void)state;
    char dir[2048], path[4096];
    tiny t;
    tiny_make(&t);
    lt_tmp_path(dir, sizeof dir, "tiny-hf-llama3");
    write_tiny_hf(&t, dir, true, "llama");
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, "{\"model_type\": \"llama\", \"vocab_size\": 40, \"hidden_size\": 64, \"intermediate_size\": 96,"
                     " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                     " \"max_position_embeddings\": 32, \"rope_theta\": 500000.0, \"tie_word_embeddings\": true,"
                     " \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
                     " \"original_max_position_embeddings\": 8, \"rope_type\": \"llama3\"}}");
    wk_lm *m = wk_lm_load(dir, NULL);
    if (!m) fail_msg("%s", wk_last_error());
    const wk_lm_config *c = wk_lm_config_of(m);
    assert_string_equal(c->rope_scaling, "llama3");
    assert_true(fabs(c->rope_factor - 8.0) < 1e-12);
    assert_int_equal(c->rope_orig_ctx, 8);
    assert_int_equal(c->bos, -1);
    /* the rope table at position 1: frequency 0 (wavelength 2 pi, between
     * 8 / high_freq_factor and 8 / low_freq_factor) is blended,
     * f = (1 - s) / 8 + s with s = (8 / (2 pi) - 1) / 3; the lowest one
     * (wavelength >> 8) is divided by 8 */
    float cs[CTX * (HD / 2)];
    TU_STATUS_OK(wk_to_host_f32(m->rope[0].cos, cs, CTX * (HD / 2)));
    double sm = (8.0 / (2.0 * 3.14159265358979) - 1.0) / 3.0, f0 = (1.0 - sm) / 8.0 + sm;
    double flow = pow(500000.0, -(double)(HD - 2) / HD) / 8.0;
    assert_true(fabs(cs[HD / 2 + 0] - cos(f0)) < 1e-6);
    assert_true(fabs(cs[HD / 2 + HD / 2 - 1] - cos(flow)) < 1e-6);
    assert_true(fabs(cs[0] - 1.0) < 1e-7);
    wk_tensor *l = all_logits(m, IDS, 3);
    wk_tensor_free(l);
    wk_lm_free(m);
    tiny_free(&t);
}

/* the same model on wk_cuda(0) gives the CPU's logits (skipped without a
 * GPU): every step is a library op, so the model runs wherever they do */
static void cuda_matches_cpu(void **state) {
    (void)state;
    wk_device *gpu = tu_cuda_or_skip();
    tiny t;
    tiny_make(&t);
    char path[4096];
    lt_tmp_path(path, sizeof path, "tiny-cuda.gguf");
    gguf_opts o = {.arch = "llama", .mat_dtype = WK_Q8_0};
    write_tiny_gguf(&t, path, &o);
    wk_lm_load_opts og = {.device = gpu};
    wk_lm *c = wk_lm_load(path, NULL), *g = wk_lm_load(path, &og);
    if (!c || !g) fail_msg("%s", wk_last_error());
    wk_tensor *lc = all_logits(c, IDS, 9), *lg = all_logits(g, IDS, 9);
    assert_true(wk_same_device(wk_tensor_device(lg), gpu));
    wk_tensor *lgh = TU_OK(wk_to_device(lg, wk_cpu()));
    assert_true(tu_max_abs_diff(lc, lgh) < 2e-2);
    wk_tensor_free(lc);
    wk_tensor_free(lg);
    wk_tensor_free(lgh);
    wk_lm_free(c);
    wk_lm_free(g);
    remove(path);
    tiny_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gguf_and_hf_layouts_agree),
        cmocka_unit_test(rope_variant_matters),
        cmocka_unit_test(prefill_equals_decode_tiny),
        cmocka_unit_test(quantized_tiny_runs),
        cmocka_unit_test(fused_weights_agree),
        cmocka_unit_test(load_errors),
        cmocka_unit_test(forward_errors),
        cmocka_unit_test(rope_scaling_config),
        cmocka_unit_test(cuda_matches_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
