/* The BERT encoder (bert.h): weights from model.safetensors checked against
 * config.json, the forward pass over padded batches, mean pooling and L2
 * normalisation. Tokenizing texts is bert_text.c's. */
#include <math.h>
#include "wick/safetensors.h"
#include "wick/tokenizer.h"
#include "wick/bert.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "tensor/tensor.h"
#include "model/bert_internal.h"
#include "nn/layers.h"

#define OP "wk_bert_load"

/* ------------------------------------------------------------ loading */

typedef struct loader {
    wk_safetensors *st;
    wk_device *dev;
    const char *prefix; /* "" or "bert." (BertForXxx checkpoints nest the encoder) */
} loader;

/* Tensor prefix+name, f32 on the device, of exactly the given shape. */
static wk_tensor *weight(loader *ld, const char *name, int rank, int64_t d0, int64_t d1) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", ld->prefix, name);
    int i = wk_safetensors_find(ld->st, full);
    if (i < 0) {
        wk__err(WK_ERR_FORMAT, OP, "model.safetensors lacks the tensor '%s'", full);
        return NULL;
    }
    wk_safetensors_info info;
    if (wk_safetensors_info_at(ld->st, i, &info) != WK_OK) return NULL;
    int64_t want[2] = {d0, d1};
    bool ok = info.rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = info.shape[d] == want[d];
    if (!ok) {
        char got[96] = "", exp[64];
        size_t n = 0;
        for (int d = 0; d < info.rank && n < sizeof got - 24; d++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", d ? ", " : "", (long long)info.shape[d]);
        if (rank == 1) snprintf(exp, sizeof exp, "%lld", (long long)d0);
        else snprintf(exp, sizeof exp, "%lld, %lld", (long long)d0, (long long)d1);
        wk__err(WK_ERR_SHAPE, OP, "tensor '%s' has shape [%s], config.json implies [%s]", full, got, exp);
        return NULL;
    }
    if (!info.supported || !wk_dtype_is_float(info.dtype)) {
        wk__err(WK_ERR_DTYPE, OP, "tensor '%s' is %s, not a float dtype", full, info.st_dtype);
        return NULL;
    }
    return wk_safetensors_get_as(ld->st, full, WK_F32, ld->dev);
}

/* position_ids (1, max_pos) or (max_pos) I64, HF's buffer for the position
 * of each token. The forward uses it (positions t -> position_ids[t]); every
 * value must index the position table. Absent: 0, 1, 2, ... */
static wk_tensor *position_ids(loader *ld, int64_t max_pos) {
    char full[256];
    snprintf(full, sizeof full, "%sembeddings.position_ids", ld->prefix);
    int i = wk_safetensors_find(ld->st, full);
    if (i < 0) return wk_arange(0, (double)max_pos, 1, WK_I64, ld->dev);
    wk_safetensors_info info;
    if (wk_safetensors_info_at(ld->st, i, &info) != WK_OK) return NULL;
    int64_t n = info.rank >= 1 ? info.shape[info.rank - 1] : 0;
    bool ok = (info.rank == 1 || (info.rank == 2 && info.shape[0] == 1)) && n == max_pos;
    if (!ok || !info.supported || !wk_dtype_is_int(info.dtype)) {
        wk__err(WK_ERR_FORMAT, OP, "tensor '%s' must be (1, %lld) integers, as max_position_embeddings says", full,
                (long long)max_pos);
        return NULL;
    }
    wk_tensor *t = wk_safetensors_get(ld->st, full);
    int64_t *v = malloc((size_t)max_pos * sizeof *v);
    wk_tensor *flat = t ? wk_to_dtype(t, WK_I64) : NULL;
    wk_tensor *res = NULL;
    if (!v) wk__err(WK_ERR_OOM, OP, "cannot read %lld position ids", (long long)max_pos);
    else if (flat && wk_to_host(flat, v, (size_t)max_pos * sizeof *v) == WK_OK) {
        int64_t bad = -1;
        for (int64_t j = 0; j < max_pos && bad < 0; j++)
            if (v[j] < 0 || v[j] >= max_pos) bad = j;
        if (bad >= 0)
            wk__err(WK_ERR_FORMAT, OP, "tensor '%s' holds %lld at %lld, outside the %lld positions", full,
                    (long long)v[bad], (long long)bad, (long long)max_pos);
        else
            res = wk_from_host(v, (size_t)max_pos * sizeof *v, &max_pos, 1, WK_I64, ld->dev);
    }
    free(v);
    wk_tensor_free(flat);
    wk_tensor_free(t);
    return res;
}

static bool load_layer(loader *ld, const wk__bert_config *c, int li, wk__bert_layer *l) {
    char n[128];
    int64_t D = c->dim, I = c->inter;
#define W2(dst, name, a, b) (snprintf(n, sizeof n, "encoder.layer.%d.%s", li, name), (dst) = weight(ld, n, 2, a, b))
#define W1(dst, name, a) (snprintf(n, sizeof n, "encoder.layer.%d.%s", li, name), (dst) = weight(ld, n, 1, a, 0))
    wk_tensor *qw, *kw, *vw, *qb, *kb, *vb;
    if (!W2(qw, "attention.self.query.weight", D, D) || !W1(qb, "attention.self.query.bias", D) ||
        !W2(kw, "attention.self.key.weight", D, D) || !W1(kb, "attention.self.key.bias", D) ||
        !W2(vw, "attention.self.value.weight", D, D) || !W1(vb, "attention.self.value.bias", D) ||
        !W2(l->o.weight, "attention.output.dense.weight", D, D) || !W1(l->o.bias, "attention.output.dense.bias", D) ||
        !W1(l->ln1.weight, "attention.output.LayerNorm.weight", D) ||
        !W1(l->ln1.bias, "attention.output.LayerNorm.bias", D) ||
        !W2(l->i.weight, "intermediate.dense.weight", I, D) || !W1(l->i.bias, "intermediate.dense.bias", I) ||
        !W2(l->f.weight, "output.dense.weight", D, I) || !W1(l->f.bias, "output.dense.bias", D) ||
        !W1(l->ln2.weight, "output.LayerNorm.weight", D) || !W1(l->ln2.bias, "output.LayerNorm.bias", D))
        return false;
#undef W1
#undef W2
    l->ln1.eps = l->ln2.eps = c->eps;
    l->ln1.rms = l->ln2.rms = false;
    /* one (3D, D) projection: a single GEMM per layer makes q, k and v */
    wk_tensor *w[3] = {qw, kw, vw}, *b[3] = {qb, kb, vb};
    l->qkv.weight = wk_cat(w, 3, 0);
    l->qkv.bias = wk_cat(b, 3, 0);
    if (!l->qkv.weight || !l->qkv.bias) return false;
    /* stored transposed, (in, out) row-major: the GEMM then reads a short
     * batch's weights in place instead of repacking all of them on every
     * call (8-token sentences spent more time packing than in FMAs) */
    wk_linear *ls[4] = {&l->qkv, &l->o, &l->i, &l->f};
    for (int j = 0; j < 4; j++)
        if (wk__linear_pretranspose(ls[j]) != WK_OK) return false;
    return true;
}

/* Every tensor of the model's layers (12 per encoder layer). */
static int layer_tensors(wk__bert_layer *l, wk_tensor ***out) {
    wk_tensor **t[] = {&l->qkv.weight, &l->qkv.bias, &l->o.weight,   &l->o.bias,  &l->ln1.weight, &l->ln1.bias,
                       &l->i.weight,   &l->i.bias,   &l->f.weight,   &l->f.bias,  &l->ln2.weight, &l->ln2.bias};
    for (int j = 0; j < 12; j++) out[j] = t[j];
    return 12;
}

/* Take every weight out of the loader's scope: the model owns them. */
static void keep_all(wk_bert *b) {
    wk_tensor **t[] = {&b->word.weight, &b->pos, &b->emb_ln.weight, &b->emb_ln.bias};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) wk_keep(*t[i]);
    for (int64_t i = 0; i < b->cfg.layers; i++) {
        wk_tensor **lt[12];
        for (int j = 0, n = layer_tensors(&b->layer[i], lt); j < n; j++) wk_keep(*lt[j]);
    }
}

static void free_weights(wk_bert *b) {
    wk_embedding_layer_free(&b->word);
    wk_tensor_free(b->pos);
    b->pos = NULL;
    wk_norm_layer_free(&b->emb_ln);
    for (int64_t i = 0; b->layer && i < b->cfg.layers; i++) {
        wk__bert_layer *l = &b->layer[i];
        wk_linear_free(&l->qkv);
        wk_linear_free(&l->o);
        wk_linear_free(&l->i);
        wk_linear_free(&l->f);
        wk_norm_layer_free(&l->ln1);
        wk_norm_layer_free(&l->ln2);
    }
    free(b->layer);
    b->layer = NULL;
}

bool wk__bert_load_weights(wk_bert *b, const char *dir) {
    const wk__bert_config *c = &b->cfg;
    wk_safetensors *st = wk_safetensors_open(dir);
    if (!st) return false;
    b->layer = calloc((size_t)c->layers, sizeof *b->layer);
    if (!b->layer) {
        wk_safetensors_close(st);
        wk__err(WK_ERR_OOM, OP, "cannot allocate %lld layers", (long long)c->layers);
        return false;
    }
    loader ld = {st, b->dev, ""};
    if (wk_safetensors_find(st, "embeddings.word_embeddings.weight") < 0 &&
        wk_safetensors_find(st, "bert.embeddings.word_embeddings.weight") >= 0)
        ld.prefix = "bert.";
    int64_t D = c->dim;
    bool ok = false;
    /* no scope: the weights made below would belong to nobody on failure */
    if (!wk__scope_open()) {
        wk_scope_end();
        wk_safetensors_close(st);
        free_weights(b);
        return false;
    }
    wk_tensor *pos = weight(&ld, "embeddings.position_embeddings.weight", 2, c->max_pos, D);
    wk_tensor *typ = weight(&ld, "embeddings.token_type_embeddings.weight", 2, c->type_vocab, D);
    wk_tensor *pid = pos && typ ? position_ids(&ld, c->max_pos) : NULL;
    b->word.weight = pid ? weight(&ld, "embeddings.word_embeddings.weight", 2, c->vocab, D) : NULL;
    b->emb_ln.weight = b->word.weight ? weight(&ld, "embeddings.LayerNorm.weight", 1, D, 0) : NULL;
    b->emb_ln.bias = b->emb_ln.weight ? weight(&ld, "embeddings.LayerNorm.bias", 1, D, 0) : NULL;
    b->emb_ln.eps = c->eps;
    b->emb_ln.rms = false;
    /* position row t of the table already holds position_ids[t]'s embedding
     * plus token type 0's (single-sentence inputs are all type 0): the
     * forward adds one table instead of gathering and adding two */
    if (b->emb_ln.bias) b->pos = wk_add(wk_embedding(pid, pos), wk_narrow(typ, 0, 0, 1));
    if (b->pos) {
        ok = true;
        for (int64_t i = 0; ok && i < c->layers; i++) ok = load_layer(&ld, c, (int)i, &b->layer[i]);
    }
    if (ok) keep_all(b);
    else memset(b->layer, 0, (size_t)c->layers * sizeof *b->layer);
    if (!ok) b->word.weight = b->pos = b->emb_ln.weight = b->emb_ln.bias = NULL; /* the scope frees them */
    wk_scope_end();
    wk_safetensors_close(st);
    if (!ok) free_weights(b);
    return ok;
}

void wk__bert_free_weights(wk_bert *b) { free_weights(b); }

/* ------------------------------------------------------------ forward */

/* One encoder layer on x (B * L, D); mask (B, 1, 1, L) or NULL. */
static wk_tensor *layer_forward(const wk_bert *b, const wk__bert_layer *l, wk_tensor *x, int64_t B, int64_t L,
                                const wk_tensor *mask) {
    const wk__bert_config *c = &b->cfg;
    int64_t D = c->dim, H = c->heads, hd = D / H;
    int64_t s5[5] = {B, L, 3, H, hd}, s2[2] = {B * L, D};
    wk_tensor *qkv = wk_reshape(wk_linear_forward(&l->qkv, x), s5, 5);
    /* (B, L, H, hd) views -> (B, H, L, hd): attention takes any strides */
    wk_tensor *q = wk_transpose(wk_select(qkv, 2, 0), 1, 2);
    wk_tensor *k = wk_transpose(wk_select(qkv, 2, 1), 1, 2);
    wk_tensor *v = wk_transpose(wk_select(qkv, 2, 2), 1, 2);
    wk_attention_opts o = {.mask = mask, .scale = 0, .causal = false, .q_offset = 0};
    wk_tensor *a = wk_reshape(wk_transpose(wk_attention(q, k, v, &o), 1, 2), s2, 2);
    x = wk_norm_layer_forward(&l->ln1, wk_add(wk_linear_forward(&l->o, a), x));
    wk_tensor *h = wk_linear_forward(&l->i, x);
    h = c->act == WK__BERT_GELU_ERF ? wk_gelu_erf(h) : wk_gelu(h);
    return wk_norm_layer_forward(&l->ln2, wk_add(wk_linear_forward(&l->f, h), x));
}

wk_tensor *wk__bert_forward(const wk_bert *b, const int32_t *ids, const int64_t *lens, int64_t B, int64_t L) {
    const wk__bert_config *c = &b->cfg;
    int64_t D = c->dim;
    bool padded = false;
    for (int64_t i = 0; i < B; i++) padded |= lens[i] < L;
    wk_tensor *out = NULL;
    if (!wk__scope_open()) {
        wk_scope_end();
        return NULL;
    }
    int64_t sid[2] = {B, L}, s2[2] = {B * L, D}, s3[3] = {B, L, D};
    wk_tensor *idt = wk_from_host(ids, (size_t)(B * L) * sizeof *ids, sid, 2, WK_I32, b->dev);
    wk_tensor *x = wk_add(wk_embedding_layer_forward(&b->word, idt), wk_narrow(b->pos, 0, 0, L));
    x = wk_reshape(wk_norm_layer_forward(&b->emb_ln, x), s2, 2);
    wk_tensor *mask = NULL;
    if (padded) {
        /* additive key mask (B, 1, 1, L): -inf on padding, so no real token
         * attends to it; padded query rows still see their real keys */
        mask = wk__key_padding_mask(lens, B, L, b->dev);
        if (!mask) x = NULL;
    }
    for (int64_t i = 0; x && i < c->layers; i++) {
        /* each layer's temporaries go at its end; only its output survives */
        wk_tensor *y = wk__scope_open() ? wk_keep(layer_forward(b, &b->layer[i], x, B, L, mask)) : NULL;
        wk_scope_end();
        wk_tensor_free(x); /* the previous layer's output (kept) or the embeddings (scope-owned) */
        x = y;
        if (x && i + 1 < c->layers) continue;
        if (x) out = wk_keep(wk_reshape(x, s3, 3));
        wk_tensor_free(x);
        x = NULL;
        break;
    }
    wk_scope_end();
    return out;
}

/* ------------------------------------------------------------ public */

int64_t wk_bert_dim(const wk_bert *b) { return b ? b->cfg.dim : -1; }
const wk_tokenizer *wk_bert_tokenizer(const wk_bert *b) { return b ? b->tok : NULL; }
int64_t wk_bert_max_tokens(const wk_bert *b) { return b ? b->cfg.max_tokens : -1; }

/* ids[0..n) must fit the positions and the vocabulary. */
static bool check_ids(const char *op, const wk_bert *b, const int32_t *ids, int64_t n) {
    if (!b || !ids || n <= 0) {
        wk__err(WK_ERR_ARG, op, "needs a model and at least one id (got %s, %lld ids)", b ? "a model" : "NULL",
                (long long)n);
        return false;
    }
    if (n > b->cfg.max_pos) {
        wk__err(WK_ERR_SHAPE, op, "%lld ids exceed the model's %lld positions", (long long)n,
                (long long)b->cfg.max_pos);
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= b->cfg.vocab) {
            wk__err(WK_ERR_INDEX, op, "id %d at position %lld is outside the vocabulary of %lld", (int)ids[i],
                    (long long)i, (long long)b->cfg.vocab);
            return false;
        }
    return true;
}

wk_tensor *wk_bert_hidden(const wk_bert *b, const int32_t *ids, int64_t n) {
    if (!check_ids("wk_bert_hidden", b, ids, n)) return NULL;
    return wk__bert_forward(b, ids, &n, 1, n);
}

/* Sequences longest first, then a batch is cut whenever it would hold more
 * than this many (padded) tokens: short texts share a batch, one long text
 * does not pad a hundred short ones to its length. */
#define BATCH_TOKENS 4096
#define BATCH_MAX 64

typedef struct by_len {
    int64_t len;
    int idx;
} by_len;

static int cmp_len_desc(const void *a, const void *b) {
    const by_len *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? 1 : -1;
    return x->idx - y->idx;
}

/* mean over the first lens[i] rows of hidden (B, L, D), then / L2 norm */
static wk_tensor *pool(const wk_bert *b, wk_tensor *hidden, const int64_t *lens, int64_t B, int64_t L) {
    float *m = malloc((size_t)(B * L) * sizeof *m);
    if (!m) {
        wk__err(WK_ERR_OOM, "wk_bert_embed", "cannot allocate a %lld x %lld mask", (long long)B, (long long)L);
        return NULL;
    }
    for (int64_t i = 0; i < B; i++)
        for (int64_t j = 0; j < L; j++) m[i * L + j] = j < lens[i] ? 1.0f / (float)lens[i] : 0.0f;
    int64_t sm[3] = {B, L, 1};
    wk_tensor *w = wk_from_host(m, (size_t)(B * L) * sizeof *m, sm, 3, WK_F32, b->dev);
    free(m);
    int d1 = 1, d2 = -1;
    wk_tensor *mean = wk_sum(wk_mul(hidden, w), &d1, 1, false);
    /* torch.nn.functional.normalize: x / max(|x|, 1e-12) */
    return wk_div(mean, wk_clamp(wk_norm(mean, 2, &d2, 1, true), 1e-12, INFINITY));
}

wk_tensor *wk_bert_embed_ids(const wk_bert *b, const int32_t *const *ids, const int64_t *lens, int n) {
    const char *op = "wk_bert_embed_ids";
    if (!b || n <= 0 || !ids || !lens) {
        wk__err(WK_ERR_ARG, op, "needs a model and n >= 1 id arrays (n = %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!check_ids(op, b, ids[i], lens[i])) return NULL;
    int64_t D = b->cfg.dim;
    by_len *order = malloc((size_t)n * sizeof *order);
    float *res = malloc((size_t)n * (size_t)D * sizeof *res);
    int32_t *pad = malloc((size_t)BATCH_TOKENS * sizeof *pad > (size_t)b->cfg.max_pos * sizeof *pad
                              ? (size_t)BATCH_TOKENS * sizeof *pad
                              : (size_t)b->cfg.max_pos * sizeof *pad);
    int64_t blen[BATCH_MAX];
    bool ok = order && res && pad;
    if (!ok) wk__err(WK_ERR_OOM, op, "cannot allocate buffers for %d sequences", n);
    for (int i = 0; ok && i < n; i++) order[i] = (by_len){lens[i], i};
    if (ok) qsort(order, (size_t)n, sizeof *order, cmp_len_desc);
    for (int s = 0; ok && s < n;) {
        int64_t L = order[s].len;
        int cnt = 1;
        while (s + cnt < n && cnt < BATCH_MAX && (cnt + 1) * L <= BATCH_TOKENS) cnt++;
        for (int i = 0; i < cnt; i++) {
            const by_len *e = &order[s + i];
            blen[i] = e->len;
            memcpy(pad + i * L, ids[e->idx], (size_t)e->len * sizeof *pad);
            for (int64_t j = e->len; j < L; j++) pad[i * L + j] = b->cfg.pad_id;
        }
        wk_tensor *h = wk__scope_open() ? wk__bert_forward(b, pad, blen, cnt, L) : NULL;
        wk_tensor *e = h ? pool(b, h, blen, cnt, L) : NULL;
        float *tmp = e ? malloc((size_t)cnt * (size_t)D * sizeof *tmp) : NULL;
        ok = tmp && wk_to_host_f32(e, tmp, (size_t)cnt * (size_t)D) == WK_OK;
        if (e && !tmp) wk__err(WK_ERR_OOM, op, "cannot allocate %d embeddings", cnt);
        for (int i = 0; ok && i < cnt; i++)
            memcpy(res + (size_t)order[s + i].idx * (size_t)D, tmp + (size_t)i * (size_t)D, (size_t)D * sizeof *res);
        free(tmp);
        wk_tensor_free(h);
        wk_scope_end();
        s += cnt;
    }
    wk_tensor *out = NULL;
    if (ok) {
        int64_t so[2] = {n, D};
        out = wk_from_host(res, (size_t)n * (size_t)D * sizeof *res, so, 2, WK_F32, b->dev);
    }
    free(order);
    free(res);
    free(pad);
    return out;
}
