/* Regression tests for defects found by hostile use of the model loaders,
 * the forward passes and the training layer (each test names its defect):
 *  - a rope_freqs.weight value <= 0 or NaN: the message reads the value
 *    after the array was freed;
 *  - config.json numbers converted to integers unchecked (1e300 cast to
 *    int64_t);
 *  - RoPE tables for a file's whole context at load: a small GGUF with
 *    context 2^20 and head size 4096 asked for 16 GiB;
 *  - wk_scope_begin failures ignored by the forward passes and the training
 *    layer: every temporary leaked and the call returned success;
 *  - a checkpoint's optim.steps = INT64_MAX accepted, then the step count
 *    overflowed and the parameters became NaN;
 *  - a tokenizer with more ids than the token embedding has rows accepted
 *    at load (generation then failed mid-text).
 * The models are tiny GGUFs written here (wk_gguf_writer). */
#include "llama_testutil.h"
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "tensor/tensor.h"
#include "model/lm_internal.h"
#include "wick/bert.h"
#include "wick/safetensors.h"
#include "wick/train.h"
#include <math.h>
#include <sys/resource.h>

/* Out-of-memory must be a clean error here, also under ASan. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static size_t in_use(void) {
    wk_cpu_mem_stats s;
    wk_cpu_mem_stats_get(&s);
    return s.bytes_in_use;
}

/* ------------------------------------------------------------ tiny GGUFs */

typedef struct spec {
    int64_t vocab, dim, heads, kv, hd, ffn, ctx;
    wk_dtype dt;             /* the matrices' dtype */
    const float *rope_freqs; /* hd/2 values (rope_freqs.weight), or NULL */
    int ntok;                /* > 0: a gpt2 tokenizer with ntok ids */
} spec;

static const spec TINY = {8, 16, 2, 1, 8, 16, 16, WK_F32, NULL, 0};

static wk_tensor *rnd(int64_t r, int64_t c, wk_dtype dt) {
    int64_t s[2] = {r, c};
    wk_tensor *t = TU_OK(wk_randn(s, c ? 2 : 1, 0.0, 0.3, WK_F32, wk_cpu()));
    if (dt == WK_F32) return t;
    wk_tensor *d = TU_OK(wk_to_dtype(t, dt));
    wk_tensor_free(t);
    return d;
}

static wk_tensor *ones(int64_t n) {
    int64_t s[1] = {n};
    return TU_OK(wk_ones(s, 1, WK_F32, wk_cpu()));
}

static void add(wk_gguf_writer *w, const char *name, wk_tensor *t) {
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, name, t));
    wk_tensor_free(t); /* the writer keeps its own reference */
}

static void write_gguf(const spec *s, const char *path) {
    TU_STATUS_OK(wk_device_set_seed(wk_cpu(), 77));
    wk_gguf_writer *w = wk_gguf_writer_new();
    assert_non_null(w);
    TU_STATUS_OK(wk_gguf_writer_add_string(w, "general.architecture", "llama", 5));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.context_length", (uint32_t)s->ctx));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.embedding_length", (uint32_t)s->dim));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.block_count", 1));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.feed_forward_length", (uint32_t)s->ffn));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.attention.head_count", (uint32_t)s->heads));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.attention.head_count_kv", (uint32_t)s->kv));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.attention.key_length", (uint32_t)s->hd));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.attention.value_length", (uint32_t)s->hd));
    TU_STATUS_OK(wk_gguf_writer_add_u32(w, "llama.rope.dimension_count", (uint32_t)s->hd));
    TU_STATUS_OK(wk_gguf_writer_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
    if (s->ntok > 0) {
        /* byte-level tokens: "a", "b", "ab", then single letters c, d, ... */
        assert_true(s->ntok >= 3 && s->ntok <= 26);
        char store[26][3];
        const char *toks[26];
        for (int i = 0; i < s->ntok; i++) {
            if (i < 2) snprintf(store[i], sizeof store[i], "%c", 'a' + i);
            else if (i == 2) snprintf(store[i], sizeof store[i], "ab");
            else snprintf(store[i], sizeof store[i], "%c", 'a' + i - 1);
            toks[i] = store[i];
        }
        static const char *const merges[] = {"a b"};
        TU_STATUS_OK(wk_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2", 4));
        TU_STATUS_OK(wk_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", toks, NULL, (uint64_t)s->ntok));
        TU_STATUS_OK(wk_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", merges, NULL, 1));
    }
    add(w, "token_embd.weight", rnd(s->vocab, s->dim, WK_F32));
    add(w, "output_norm.weight", ones(s->dim));
    add(w, "blk.0.attn_norm.weight", ones(s->dim));
    add(w, "blk.0.attn_q.weight", rnd(s->heads * s->hd, s->dim, s->dt));
    add(w, "blk.0.attn_k.weight", rnd(s->kv * s->hd, s->dim, s->dt));
    add(w, "blk.0.attn_v.weight", rnd(s->kv * s->hd, s->dim, s->dt));
    add(w, "blk.0.attn_output.weight", rnd(s->dim, s->heads * s->hd, s->dt));
    add(w, "blk.0.ffn_norm.weight", ones(s->dim));
    add(w, "blk.0.ffn_gate.weight", rnd(s->ffn, s->dim, s->dt));
    add(w, "blk.0.ffn_up.weight", rnd(s->ffn, s->dim, s->dt));
    add(w, "blk.0.ffn_down.weight", rnd(s->dim, s->ffn, s->dt));
    if (s->rope_freqs) {
        int64_t half = s->hd / 2;
        add(w, "rope_freqs.weight",
            TU_OK(wk_from_host(s->rope_freqs, sizeof(float) * (size_t)half, &half, 1, WK_F32, wk_cpu())));
    }
    TU_STATUS_OK(wk_gguf_writer_write(w, path));
    wk_gguf_writer_free(w);
}

static wk_lm *load_or_fail(const char *path) {
    wk_lm *m = wk_lm_load(path, NULL);
    if (!m) fail_msg("wk_lm_load %s: %s", path, wk_last_error());
    return m;
}

static void expect_load_error(const char *path, wk_status st, const char *needle) {
    wk_clear_error();
    wk_lm *m = wk_lm_load(path, NULL);
    if (m) fail_msg("loading %s should fail (%s)", path, needle);
    if (wk_last_status() != st || !strstr(wk_last_error(), needle))
        fail_msg("status %s, message '%s': wanted %s and '%s'", wk_status_name(wk_last_status()), wk_last_error(),
                 wk_status_name(st), needle);
    wk_clear_error();
}

/* all positions' logits of ids through a fresh cache of cap positions */
static wk_tensor *logits_of(const wk_lm *m, int64_t cap, const int32_t *ids, int64_t n) {
    wk_kv_cache *c = wk_kv_cache_new(m, cap);
    if (!c) fail_msg("wk_kv_cache_new: %s", wk_last_error());
    wk_tensor *l = wk_lm_forward(m, c, ids, n, true);
    if (!l) fail_msg("wk_lm_forward: %s", wk_last_error());
    wk_kv_cache_free(c);
    return l;
}

static const int32_t IDS[10] = {3, 1, 7, 0, 5, 5, 2, 6, 4, 1};

/* ---- defect 2: rope_freqs.weight <= 0 or NaN read after the free ---- */

static void rope_freqs_bad_value(void **state) {
    (void)state;
    char path[4096];
    lt_tmp_path(path, sizeof path, "defects-rope-freqs.gguf");
    /* the bad value at index 1: a freed block's first bytes are the first
     * the allocator reuses, so a read after the free shows another number */
    const float bad[3] = {0.0f, NAN, -1.0f};
    const char *shown[3] = {"rope_freqs.weight[1] = 0 is not a positive number",
                            "rope_freqs.weight[1] = nan is not a positive number",
                            "rope_freqs.weight[1] = -1 is not a positive number"};
    for (int k = 0; k < 3; k++) {
        float f[4] = {1.0f, bad[k], 1.0f, 1.0f};
        spec s = TINY;
        s.rope_freqs = f;
        write_gguf(&s, path);
        expect_load_error(path, WK_ERR_FORMAT, shown[k]);
    }
    /* good factors load */
    float f[4] = {1.0f, 2.0f, 4.0f, 8.0f};
    spec s = TINY;
    s.rope_freqs = f;
    write_gguf(&s, path);
    wk_lm_free(load_or_fail(path));
    remove(path);
}

/* ---- defect 3: config.json numbers to integers, checked ---- */

static void expect_config_error(const char *json, const char *needle) {
    wk_lm_config c;
    wk__lm_raw r;
    const wk__lm_arch *a;
    wk_clear_error();
    wk_status st = wk__lm_config_from_json(json, strlen(json), "config.json", &c, &r, &a);
    wk__lm_raw_free(&r);
    if (st != WK_ERR_FORMAT || wk_last_status() != WK_ERR_FORMAT || !strstr(wk_last_error(), needle))
        fail_msg("config %s: status %s, message '%s': wanted WK_ERR_FORMAT and '%s'", json, wk_status_name(st),
                 wk_last_error(), needle);
    wk_clear_error();
}

#define CFG_HEAD                                                                                                  \
    "{\"model_type\": \"llama\", \"vocab_size\": 40, \"hidden_size\": 64, \"intermediate_size\": 96,"               \
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"rope_theta\": 500000.0, "
#define LLAMA3(orig)                                                                                              \
    CFG_HEAD "\"num_hidden_layers\": 2, \"max_position_embeddings\": 32, \"rope_scaling\": {\"factor\": 8.0,"       \
             " \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": " orig    \
             ", \"rope_type\": \"llama3\"}}"

static void config_float_to_int(void **state) {
    (void)state;
    /* the reported one: undefined behaviour before */
    expect_config_error(LLAMA3("1e300"), "\"original_max_position_embeddings\" is 1e+300, not an integer in [0, ");
    expect_config_error(LLAMA3("-1e300"), "\"original_max_position_embeddings\" is -1e+300, not an integer");
    expect_config_error(LLAMA3("1e999"), "\"original_max_position_embeddings\" is inf, not an integer");
    expect_config_error(LLAMA3("8.5"), "\"original_max_position_embeddings\" is 8.5, not an integer");
    expect_config_error(LLAMA3("-8"), "\"original_max_position_embeddings\" is -8, not an integer");
    /* every other integer key goes through the same check */
    expect_config_error(CFG_HEAD "\"num_hidden_layers\": 1e300, \"max_position_embeddings\": 32}",
                        "\"num_hidden_layers\" is 1e+300, not an integer");
    expect_config_error(CFG_HEAD "\"num_hidden_layers\": 2, \"max_position_embeddings\": 1e19}",
                        "\"max_position_embeddings\" is 1e+19, not an integer");
    expect_config_error(CFG_HEAD "\"num_hidden_layers\": 2.5, \"max_position_embeddings\": 32}",
                        "\"num_hidden_layers\" is 2.5, not an integer");
    expect_config_error(CFG_HEAD "\"num_hidden_layers\": 2, \"max_position_embeddings\": 32, \"head_dim\": -1e300}",
                        "\"head_dim\" is -1e+300, not an integer");
    /* whole numbers written as floats are fine */
    const char *ok = LLAMA3("8.0");
    wk_lm_config c;
    wk__lm_raw r;
    const wk__lm_arch *a;
    TU_STATUS_OK(wk__lm_config_from_json(ok, strlen(ok), "config.json", &c, &r, &a));
    wk__lm_raw_free(&r);
    assert_int_equal(c.rope_orig_ctx, 8);
    assert_int_equal(c.max_ctx, 32);
}

/* ---- defect 4: the RoPE tables' size at load ---- */

/* A small file (about 300 KB) whose context (2^20) times head size (4096)
 * made the load build 2 x 8 GiB of tables. */
static void rope_tables_bounded(void **state) {
    (void)state;
    char path[4096];
    lt_tmp_path(path, sizeof path, "defects-rope-huge.gguf");
    spec s = {4, 8, 1, 1, 4096, 8, (int64_t)1 << 20, WK_F16, NULL, 0};
    write_gguf(&s, path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(sb.st_size < (1 << 20));
#ifndef UNDER_ASAN
    /* keep a regression from touching 16 GiB on a shared machine: past
     * 4 GiB of address space allocations fail (ASan reserves terabytes of
     * shadow, so not under it) */
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)4 << 30;
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur) lim.rlim_cur = old.rlim_cur;
    assert_int_equal(setrlimit(RLIMIT_AS, &lim), 0);
#endif
    size_t base = in_use();
    wk_clear_error();
    wk_lm *m = wk_lm_load(path, NULL);
#ifndef UNDER_ASAN
    assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
#endif
    if (!m) fail_msg("the load should work: %s", wk_last_error());
    /* the tables at load stay within their budget, the whole model small */
    int64_t rows = wk_dim(m->rope[0].cos, 0), half = wk_dim(m->rope[0].cos, 1);
    assert_int_equal(half, 2048);
    assert_true(rows >= 1 && rows < s.ctx);
    assert_true(rows * half * 8 <= wk__lm_rope_eager_bytes);
    assert_true(in_use() - base < ((size_t)64 << 20));
    /* and it runs: a short cache uses the model's tables */
    int32_t ids[2] = {1, 3};
    wk_tensor *l = logits_of(m, 4, ids, 2);
    float v[8];
    TU_STATUS_OK(wk_to_host_f32(l, v, 8));
    for (int i = 0; i < 8; i++) assert_true(isfinite(v[i]));
    wk_tensor_free(l);
    wk_lm_free(m);
    remove(path);
}

/* A cache longer than the model's tables builds its own: the same logits
 * as a model whose tables cover the whole context. */
static void rope_tables_grow_with_cache(void **state) {
    (void)state;
    char path[4096];
    lt_tmp_path(path, sizeof path, "defects-rope-grow.gguf");
    write_gguf(&TINY, path);
    wk_lm *full = load_or_fail(path);
    assert_int_equal(wk_dim(full->rope[0].cos, 0), TINY.ctx);
    int64_t saved = wk__lm_rope_eager_bytes;
    wk__lm_rope_eager_bytes = 4 * (TINY.hd / 2) * 8; /* 4 positions */
    wk_lm *small = wk_lm_load(path, NULL);
    wk__lm_rope_eager_bytes = saved;
    if (!small) fail_msg("%s", wk_last_error());
    assert_int_equal(wk_dim(small->rope[0].cos, 0), 4);
    wk_tensor *a = logits_of(full, 0, IDS, 10), *b = logits_of(small, 0, IDS, 10);
    assert_true(tu_max_abs_diff(a, b) == 0.0);
    wk_tensor_free(b);
    /* a cache within the model's tables: the model's serve */
    wk_kv_cache *c = wk_kv_cache_new(small, 3);
    assert_non_null(c);
    assert_null(c->rope[0].cos);
    wk_tensor *l = wk_lm_forward(small, c, IDS, 3, true);
    assert_non_null(l);
    wk_tensor *a3 = logits_of(full, 3, IDS, 3);
    assert_true(tu_max_abs_diff(a3, l) == 0.0);
    wk_tensor_free(a3);
    wk_tensor_free(l);
    wk_tensor_free(a);
    wk_kv_cache_free(c);
    wk_lm_free(full);
    wk_lm_free(small);
    remove(path);
}

/* ---- defect 6: a scope that did not open ---- */

/* Run call with its k-th scope begin failing, for k = 1, 2, ... until a
 * run reaches no k-th begin. Each failed run: NULL (or an error status),
 * WK_ERR_OOM recorded, no tensor bytes left behind. Returns the runs. */
typedef bool (*scoped_call)(void *ctx); /* true: success (its results freed) */
static int fail_each_begin(const char *what, scoped_call call, void *ctx) {
    int k = 1;
    for (;; k++) {
        size_t base = in_use();
        wk_clear_error();
        wk__scope_fail_begin_number(k);
        bool ok = call(ctx);
        wk__scope_fail_begin_number(0);
        if (ok) {
            if (wk_last_status() != WK_OK) break; /* an OOM left pending by a call that succeeded */
            assert_int_equal(in_use(), base);
            return k;
        }
        if (wk_last_status() != WK_ERR_OOM || !strstr(wk_last_error(), "wk_scope_begin"))
            fail_msg("%s, begin %d failing: status %s, '%s'", what, k, wk_status_name(wk_last_status()),
                     wk_last_error());
        if (in_use() != base)
            fail_msg("%s, begin %d failing: %zu bytes left behind", what, k, in_use() - base);
    }
    fail_msg("%s, begin %d failing: the call succeeded with '%s' pending", what, k, wk_last_error());
    return k;
}

typedef struct fwd_ctx {
    wk_lm *m;
    wk_kv_cache *c;
} fwd_ctx;

static bool llama_step(void *p) {
    fwd_ctx *f = p;
    TU_STATUS_OK(wk_kv_cache_truncate(f->c, 0));
    wk_tensor *l = wk_lm_forward(f->m, f->c, IDS, 5, false);
    if (!l) {
        assert_int_equal(wk_kv_cache_len(f->c), 0); /* a failed step leaves the cache as it was */
        return false;
    }
    assert_int_equal(wk_kv_cache_len(f->c), 5);
    wk_tensor_free(l);
    return true;
}

static void llama_forward_scope_failure(void **state) {
    (void)state;
    char path[4096];
    lt_tmp_path(path, sizeof path, "defects-scope.gguf");
    write_gguf(&TINY, path);
    fwd_ctx f = {load_or_fail(path), NULL};
    f.c = wk_kv_cache_new(f.m, 8);
    assert_non_null(f.c);
    /* the outer scope and the layer's */
    assert_true(fail_each_begin("wk_lm_forward", llama_step, &f) >= 3);
    /* still usable */
    assert_true(llama_step(&f));
    wk_kv_cache_free(f.c);
    wk_lm_free(f.m);
    remove(path);
}

/* BERT: the load's scope, the forward's and the layers' (the real MiniLM,
 * when the venv has it) */
static bool bert_embed(void *p) {
    wk_bert *b = wk_bert_load(p, NULL);
    if (!b) return false;
    const char *texts[2] = {"a short one", "and a somewhat longer sentence here"};
    wk_tensor *e = wk_bert_embed(b, texts, 2);
    wk_bert_free(b);
    if (!e) return false;
    wk_tensor_free(e);
    return true;
}

static void bert_scope_failure(void **state) {
    (void)state;
    const char *dir = getenv("WICK_MINILM_DIR");
    if (!dir || !*dir) {
        fprintf(stderr, "skipped: WICK_MINILM_DIR is unset (run ./scripts/setup.sh)\n");
        skip();
    }
    assert_true(fail_each_begin("wk_bert_load + wk_bert_embed", bert_embed, (void *)dir) >= 4);
}

/* the training layer's composites and the backward pass */
typedef struct train_ctx {
    wk_tensor *p, *x, *t, *ids;
    wk_linear lin;
    wk_conv2d_layer conv;
    wk_tensor *img;
    int which;
} train_ctx;

static bool train_call(void *p) {
    train_ctx *c = p;
    wk_tensor *r = NULL;
    switch (c->which) {
    case 0: r = wk_mse_loss(c->x, c->t, WK_REDUCE_MEAN_LOSS); break;
    case 1: r = wk_huber_loss(c->x, c->t, 0.5, WK_REDUCE_MEAN_LOSS); break;
    case 2: r = wk_bce_with_logits(c->x, c->t, WK_REDUCE_SUM_LOSS); break;
    case 3: r = wk_cross_entropy(c->x, c->ids, NULL); break;
    case 4: r = wk_linear_forward(&c->lin, c->x); break;
    case 5: r = wk_conv2d_layer_forward(&c->conv, c->img); break;
    case 6: {
        /* backward (one scope per rule), then clipping (one per norm and
         * per scaled gradient) */
        wk_grad_store *gs = wk_grad_store_new();
        assert_non_null(gs);
        wk_tensor *sq = TU_OK(wk_mul(c->p, c->p)), *l = TU_OK(wk_sum_all(sq));
        wk_status st = wk_backward(l, gs, NULL);
        double norm = 0;
        if (st == WK_OK) st = wk_clip_grad_norm(gs, &c->p, 1, 0.01, &norm);
        wk_tensor_free(l);
        wk_tensor_free(sq);
        wk_grad_store_free(gs);
        return st == WK_OK;
    }
    }
    if (!r) return false;
    wk_tensor_free(r);
    return true;
}

static void train_scope_failure(void **state) {
    (void)state;
    train_ctx c = {0};
    int64_t s2[2] = {4, 3}, s1[1] = {4}, s4[4] = {1, 2, 5, 5};
    c.x = TU_OK(wk_randn(s2, 2, 0.0, 1.0, WK_F32, wk_cpu()));
    c.t = TU_OK(wk_rand(s2, 2, 0.0, 1.0, WK_F32, wk_cpu()));
    const int64_t idv[4] = {0, 2, 1, 2};
    c.ids = TU_OK(wk_from_host(idv, sizeof idv, s1, 1, WK_I64, wk_cpu()));
    c.p = TU_OK(wk_param_new(c.x));
    c.img = TU_OK(wk_randn(s4, 4, 0.0, 1.0, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_linear_init(&c.lin, 3, 2, true, WK_F32, wk_cpu()));
    TU_STATUS_OK(wk_conv2d_layer_init(&c.conv, 2, 3, 3, 3, NULL, true, WK_F32, wk_cpu()));
    const char *names[7] = {"wk_mse_loss", "wk_huber_loss", "wk_bce_with_logits", "wk_cross_entropy",
                            "wk_linear_forward", "wk_conv2d_layer_forward", "wk_backward + wk_clip_grad_norm"};
    for (c.which = 0; c.which < 7; c.which++) fail_each_begin(names[c.which], train_call, &c);
    wk_linear_free(&c.lin);
    wk_conv2d_layer_free(&c.conv);
    wk_tensor_free(c.x);
    wk_tensor_free(c.t);
    wk_tensor_free(c.ids);
    wk_tensor_free(c.p);
    wk_tensor_free(c.img);
}

/* ---- defect 9: optim.steps near INT64_MAX ---- */

static void checkpoint_steps_bounded(void **state) {
    (void)state;
    char path[4096], bad[4096];
    lt_tmp_path(path, sizeof path, "defects-ckpt.safetensors");
    lt_tmp_path(bad, sizeof bad, "defects-ckpt-bad.safetensors");
    int64_t s[1] = {4};
    const float init[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    wk_tensor *x = TU_OK(wk_from_host(init, sizeof init, s, 1, WK_F32, wk_cpu()));
    wk_tensor *p = TU_OK(wk_param_new(x));
    wk_optim_config cfg = {.kind = WK_ADAM, .lr = 0.1};
    wk_optimizer *opt = wk_optimizer_new(&cfg, &p, 1);
    assert_non_null(opt);
    wk_grad_store *gs = wk_grad_store_new();
    wk_tensor *sq = TU_OK(wk_mul(p, p)), *l = TU_OK(wk_sum_all(sq));
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    wk_tensor_free(l);
    wk_tensor_free(sq);
    TU_STATUS_OK(wk_optimizer_step(opt, gs));
    const char *names[1] = {"w"};
    TU_STATUS_OK(wk_checkpoint_save(path, names, &p, 1, opt));
    /* the same file with optim.steps (and w's step) rewritten */
    const char *counts[3] = {"9223372036854775807", "9007199254740993", "9007199254740992"};
    for (int k = 0; k < 3; k++) {
        wk_safetensors *st = wk_safetensors_open(path);
        assert_non_null(st);
        int nm = wk_safetensors_meta_count(st);
        const char *keys[64], *vals[64];
        assert_true(nm <= 64);
        for (int i = 0; i < nm; i++) {
            keys[i] = wk_safetensors_meta_key(st, i);
            vals[i] = wk_safetensors_meta_value(st, keys[i]);
            if (!strcmp(keys[i], "optim.steps") || !strcmp(keys[i], "optim.w.step")) vals[i] = counts[k];
        }
        const char *tn[3] = {"w", "optim.w.m", "optim.w.v"};
        wk_tensor *ts[3];
        for (int i = 0; i < 3; i++) ts[i] = TU_OK(wk_safetensors_get(st, tn[i]));
        TU_STATUS_OK(wk_safetensors_save(bad, 3, tn, ts, nm, keys, vals));
        for (int i = 0; i < 3; i++) wk_tensor_free(ts[i]);
        wk_safetensors_close(st);
        wk_clear_error();
        wk_status r = wk_checkpoint_load(bad, names, &p, 1, opt);
        if (k < 2) {
            /* above 2^53: refused, naming the key; nothing changed */
            assert_int_equal(r, WK_ERR_FORMAT);
            assert_non_null(strstr(wk_last_error(), "\"optim.steps\""));
            assert_int_equal(wk_optimizer_steps(opt), 1);
            wk_clear_error();
            continue;
        }
        /* the largest count loads; the next step is refused, and leaves the
         * parameter as it was (finite) */
        TU_STATUS_OK(r);
        float before[4], after[4];
        TU_STATUS_OK(wk_to_host_f32(p, before, 4));
        wk_clear_error();
        assert_int_equal(wk_optimizer_step(opt, gs), WK_ERR_ARG);
        assert_non_null(strstr(wk_last_error(), "steps"));
        wk_clear_error();
        TU_STATUS_OK(wk_to_host_f32(p, after, 4));
        for (int i = 0; i < 4; i++) {
            assert_true(isfinite(after[i]));
            assert_true(after[i] == before[i]);
        }
    }
    wk_grad_store_free(gs);
    wk_optimizer_free(opt);
    wk_tensor_free(p);
    wk_tensor_free(x);
    remove(path);
    remove(bad);
}

/* ---- defect 11: the tokenizer's ids against the embedding's rows ---- */

static void tokenizer_vocab_vs_embedding(void **state) {
    (void)state;
    char path[4096];
    lt_tmp_path(path, sizeof path, "defects-tok.gguf");
    spec s = TINY;
    s.ntok = (int)TINY.vocab + 2; /* 10 ids, 8 rows */
    write_gguf(&s, path);
    expect_load_error(path, WK_ERR_FORMAT, "the tokenizer has 10 ids but the token embedding has 8 rows");
    /* as many ids as rows, or fewer (padding rows): fine */
    for (int n = (int)TINY.vocab - 3; n <= (int)TINY.vocab; n += 3) {
        s.ntok = n;
        write_gguf(&s, path);
        wk_lm *m = load_or_fail(path);
        assert_int_equal(wk_tokenizer_vocab_size(wk_lm_tokenizer(m)), n);
        wk_lm_free(m);
    }
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rope_freqs_bad_value),
        cmocka_unit_test(config_float_to_int),
        cmocka_unit_test(rope_tables_bounded),
        cmocka_unit_test(rope_tables_grow_with_cache),
        cmocka_unit_test(llama_forward_scope_failure),
        cmocka_unit_test(bert_scope_failure),
        cmocka_unit_test(train_scope_failure),
        cmocka_unit_test(checkpoint_steps_bounded),
        cmocka_unit_test(tokenizer_vocab_vs_embedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
