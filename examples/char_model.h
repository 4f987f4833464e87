/*
 * The character-level transformer shared by examples/char_transformer.c and
 * bench/bench_train.c (header-only: static functions).
 *
 *   ids (B, T) bytes -> token embedding (V, d) + learned positions (T, d)
 *   -> L x [ x += proj(attention(split_heads(qkv(ln1(x))), causal))
 *            x += fc2(gelu_erf(fc1(ln2(x)))) ]          (pre-norm, layer norm)
 *   -> ln_f -> head (d -> V, no bias) -> logits (B, T, V)
 *
 * Attention is wk_attention (the fused kernel and its backward). The names
 * are those of the torch.nn.Module in examples/char_transformer_torch.py.
 * Batches: B windows of T + 1 bytes of the text at offsets from splitmix64
 * (char_batch_offsets; the torch side computes the same numbers).
 */
#ifndef WICK_EXAMPLES_CHAR_MODEL_H
#define WICK_EXAMPLES_CHAR_MODEL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wick/train.h"

#define CHAR_MAX_LAYERS 8
#define CHAR_VOCAB 128 /* ASCII: the text must be 7-bit */

typedef struct char_config {
    int64_t dim, heads, layers, ctx; /* ctx: T, the window length */
} char_config;

typedef struct char_block {
    wk_norm_layer ln1, ln2;
    wk_linear qkv, proj, fc1, fc2;
} char_block;

typedef struct char_model {
    char_config cfg;
    wk_embedding_layer tok, pos;
    char_block blocks[CHAR_MAX_LAYERS];
    wk_norm_layer ln_f;
    wk_linear head;
    int nparams;
    wk_tensor *params[4 + 12 * CHAR_MAX_LAYERS]; /* borrowed from the layers */
    char names[4 + 12 * CHAR_MAX_LAYERS][48];
    const char *name_ptrs[4 + 12 * CHAR_MAX_LAYERS];
} char_model;

static inline void char_model_free(char_model *m) {
    wk_embedding_layer_free(&m->tok);
    wk_embedding_layer_free(&m->pos);
    for (int i = 0; i < m->cfg.layers && i < CHAR_MAX_LAYERS; i++) {
        char_block *b = &m->blocks[i];
        wk_norm_layer_free(&b->ln1); wk_norm_layer_free(&b->ln2);
        wk_linear_free(&b->qkv); wk_linear_free(&b->proj); wk_linear_free(&b->fc1); wk_linear_free(&b->fc2);
    }
    wk_norm_layer_free(&m->ln_f);
    wk_linear_free(&m->head);
}

/* Add one named parameter (NULL bias pointers are skipped). */
static inline void char_add(char_model *m, wk_tensor *t, const char *prefix, const char *suffix) {
    if (!t) return;
    snprintf(m->names[m->nparams], sizeof m->names[0], "%s%s", prefix, suffix);
    m->name_ptrs[m->nparams] = m->names[m->nparams];
    m->params[m->nparams++] = t;
}

/* In dtype dt (tests/test_mpi_ddp.c trains in f64). */
static inline wk_status char_model_init_dt(char_model *m, const char_config *cfg, uint64_t seed, wk_dtype dt,
                                           wk_device *dev) {
    *m = (char_model){.cfg = *cfg};
    int64_t d = cfg->dim;
    if (cfg->layers < 1 || cfg->layers > CHAR_MAX_LAYERS || d % cfg->heads) return WK_ERR_ARG;
    wk_status st = wk_device_set_seed(dev, seed);
    if (st == WK_OK) st = wk_embedding_layer_init(&m->tok, CHAR_VOCAB, d, dt, dev);
    if (st == WK_OK) st = wk_embedding_layer_init(&m->pos, cfg->ctx, d, dt, dev);
    for (int i = 0; i < cfg->layers && st == WK_OK; i++) {
        char_block *b = &m->blocks[i];
        st = wk_norm_layer_init(&b->ln1, d, false, 1e-5, dt, dev);
        if (st == WK_OK) st = wk_linear_init(&b->qkv, d, 3 * d, true, dt, dev);
        if (st == WK_OK) st = wk_linear_init(&b->proj, d, d, true, dt, dev);
        if (st == WK_OK) st = wk_norm_layer_init(&b->ln2, d, false, 1e-5, dt, dev);
        if (st == WK_OK) st = wk_linear_init(&b->fc1, d, 4 * d, true, dt, dev);
        if (st == WK_OK) st = wk_linear_init(&b->fc2, 4 * d, d, true, dt, dev);
    }
    if (st == WK_OK) st = wk_norm_layer_init(&m->ln_f, d, false, 1e-5, dt, dev);
    if (st == WK_OK) st = wk_linear_init(&m->head, d, CHAR_VOCAB, false, dt, dev);
    if (st != WK_OK) return st;
    char_add(m, m->tok.weight, "tok.weight", "");
    char_add(m, m->pos.weight, "pos.weight", "");
    for (int i = 0; i < cfg->layers; i++) {
        char p[32];
        char_block *b = &m->blocks[i];
        snprintf(p, sizeof p, "blocks.%d.", i);
        char_add(m, b->ln1.weight, p, "ln1.weight"); char_add(m, b->ln1.bias, p, "ln1.bias");
        char_add(m, b->qkv.weight, p, "qkv.weight"); char_add(m, b->qkv.bias, p, "qkv.bias");
        char_add(m, b->proj.weight, p, "proj.weight"); char_add(m, b->proj.bias, p, "proj.bias");
        char_add(m, b->ln2.weight, p, "ln2.weight"); char_add(m, b->ln2.bias, p, "ln2.bias");
        char_add(m, b->fc1.weight, p, "fc1.weight"); char_add(m, b->fc1.bias, p, "fc1.bias");
        char_add(m, b->fc2.weight, p, "fc2.weight"); char_add(m, b->fc2.bias, p, "fc2.bias");
    }
    char_add(m, m->ln_f.weight, "ln_f.weight", ""); char_add(m, m->ln_f.bias, "ln_f.bias", "");
    char_add(m, m->head.weight, "head.weight", "");
    return WK_OK;
}

static inline wk_status char_model_init(char_model *m, const char_config *cfg, uint64_t seed, wk_device *dev) {
    return char_model_init_dt(m, cfg, seed, WK_F32, dev);
}

/* result, after dropping the caller's reference to used: the forward passes
 * free each intermediate once consumed, so only what the recorded nodes saved
 * stays alive (a scope would otherwise hold every intermediate until its
 * end, and the backward could free nothing as it goes). */
static inline wk_tensor *char_then(wk_tensor *used, wk_tensor *result) {
    wk_tensor_free(used);
    return result;
}

/* (B, T, d) -> (B, H, T, d / H), a view. */
static inline wk_tensor *char_heads(wk_tensor *x, int64_t heads) {
    int64_t s[4] = {wk_dim(x, 0), wk_dim(x, 1), heads, wk_dim(x, 2) / heads};
    wk_tensor *r = wk_reshape(x, s, 4);
    return char_then(r, char_then(x, wk_transpose(r, 1, 2)));
}

/* Logits (B, T, V) of ids (B, T) i64 (borrowed); the result is the caller's. */
static inline wk_tensor *char_model_forward(const char_model *m, const wk_tensor *ids) {
    int64_t B = wk_dim(ids, 0), T = wk_dim(ids, 1), d = m->cfg.dim;
    wk_tensor *e = wk_embedding_layer_forward(&m->tok, ids), *p = wk_narrow(m->pos.weight, 0, 0, T);
    wk_tensor *x = char_then(e, char_then(p, wk_add(e, p)));
    wk_attention_opts ao = {.causal = true};
    for (int i = 0; i < m->cfg.layers; i++) {
        const char_block *b = &m->blocks[i];
        wk_tensor *h = wk_norm_layer_forward(&b->ln1, x);
        wk_tensor *qkv = char_then(h, wk_linear_forward(&b->qkv, h));
        wk_tensor *q = char_heads(wk_narrow(qkv, 2, 0, d), m->cfg.heads);
        wk_tensor *k = char_heads(wk_narrow(qkv, 2, d, d), m->cfg.heads);
        wk_tensor *v = char_heads(char_then(qkv, wk_narrow(qkv, 2, 2 * d, d)), m->cfg.heads);
        wk_tensor *o = wk_attention(q, k, v, &ao);
        wk_tensor_free(q); wk_tensor_free(k); wk_tensor_free(v);
        int64_t s[3] = {B, T, d};
        wk_tensor *ot = char_then(o, wk_transpose(o, 1, 2));
        wk_tensor *a = char_then(ot, wk_reshape(ot, s, 3));
        wk_tensor *pa = char_then(a, wk_linear_forward(&b->proj, a));
        x = char_then(x, char_then(pa, wk_add(x, pa)));
        h = wk_norm_layer_forward(&b->ln2, x);
        wk_tensor *f1 = char_then(h, wk_linear_forward(&b->fc1, h));
        wk_tensor *gl = char_then(f1, wk_gelu_erf(f1));
        wk_tensor *f2 = char_then(gl, wk_linear_forward(&b->fc2, gl));
        x = char_then(x, char_then(f2, wk_add(x, f2)));
    }
    wk_tensor *h = char_then(x, wk_norm_layer_forward(&m->ln_f, x));
    return char_then(h, wk_linear_forward(&m->head, h));
}

/* splitmix64: the batch offsets' generator (char_transformer_torch.py has the same). */
static inline uint64_t char_splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Inputs (B, T) and targets (B, T) (the next byte) as i64 host arrays. */
static inline void char_batch(const unsigned char *text, int64_t len, int64_t B, int64_t T, uint64_t *rng, int64_t *x,
                       int64_t *y) {
    for (int64_t b = 0; b < B; b++) {
        int64_t off = (int64_t)(char_splitmix(rng) % (uint64_t)(len - T - 1));
        for (int64_t t = 0; t < T; t++) {
            x[b * T + t] = text[off + t];
            y[b * T + t] = text[off + t + 1];
        }
    }
}

/* One step: forward, mean cross-entropy over the B * T positions, backward
 * into gs (zeroed first; with ddp not NULL, wk_ddp_backward: averaged over
 * the ranks), optimizer step; *loss gets the loss of these B rows. */
static inline wk_status char_train_step_ddp(const char_model *m, wk_optimizer *opt, wk_grad_store *gs, wk_ddp *ddp,
                                           const int64_t *x, const int64_t *y, int64_t B, double *loss) {
    int64_t T = m->cfg.ctx, s[2] = {B, T}, n = B * T;
    wk_device *dev = wk_tensor_device(m->head.weight);
    wk_scope_begin();
    wk_tensor *ids = wk_from_host(x, (size_t)n * sizeof *x, s, 2, WK_I64, dev);
    wk_tensor *tgt = wk_from_host(y, (size_t)n * sizeof *y, &n, 1, WK_I64, dev);
    int64_t flat[2] = {n, CHAR_VOCAB};
    wk_tensor *logits = char_model_forward(m, ids), *lf = wk_reshape(logits, flat, 2);
    wk_tensor *l = wk_cross_entropy(lf, tgt, NULL);
    wk_tensor_free(lf);
    wk_tensor_free(logits);
    wk_grad_store_zero(gs);
    wk_status st = !l ? WK_ERR_ARG : ddp ? wk_ddp_backward(ddp, l, gs, NULL) : wk_backward(l, gs, NULL);
    if (st == WK_OK) st = wk_item(l, loss);
    if (st == WK_OK && opt) st = wk_optimizer_step(opt, gs);
    wk_scope_end();
    return st;
}

static inline wk_status char_train_step(const char_model *m, wk_optimizer *opt, wk_grad_store *gs, const int64_t *x,
                                 const int64_t *y, int64_t B, double *loss) {
    return char_train_step_ddp(m, opt, gs, NULL, x, y, B, loss);
}

/* The text, checked to be 7-bit (CHAR_VOCAB); NULL on error. */
static inline unsigned char *char_read_text(const char *path, int64_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, r;
    do {
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
            if (!nb) { free(buf); fclose(f); return NULL; }
            buf = nb;
        }
        r = fread(buf + n, 1, cap - n, f);
        n += r;
    } while (r > 0);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] >= CHAR_VOCAB) { free(buf); return NULL; }
    *len = (int64_t)n;
    return buf;
}

#endif
