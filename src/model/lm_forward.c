/* wk_lm_forward and wk_lm_forward_batch: the new tokens of one or several
 * sequences through every layer in one pass, the block composed from the
 * layer kit as the config's features say (one block for every family: the
 * families differ in features, not in code). Every linear layer takes the
 * rows of all sequences as one product; attention runs per sequence over
 * its own cache (contiguous, or paged: src/model/kv_pool.c) and the
 * outputs are concatenated back in order. wk_lm_forward is the batch of
 * one.
 * Activations are f32 (as llama.cpp keeps them); weights go through the
 * kit's wk_linear: wk_qmatmul (blocks, f16, bf16) or a matmul (f32, a
 * transposed view).
 * Tensor parallel (src/model/lm_tp.c): each rank runs its heads and FFN
 * columns; the marked TP hooks sum o's and down's partial products, the
 * embedding rows, and gather the logits over the ranks. */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* An RMSNorm over every head of x (n, heads * D) (Qwen3's and Gemma 3's q
 * and k norms): the rows viewed as (n, heads, D). */
static wk_tensor *head_norm(const wk_norm_layer *nl, const wk_tensor *x, int64_t heads, int64_t D) {
    if (!x) return NULL;
    int64_t n = wk_dim(x, 0), s3[3] = {n, heads, D}, s2[2] = {n, heads * D};
    return wk_reshape(wk_norm_layer_forward(nl, wk_reshape(x, s3, 3)), s2, 2);
}

/* What the pass knows of one sequence: its rows' offset in the batch, and
 * its RoPE rows for each set (positions len .. len+n-1 of its cache). */
typedef struct seq_rows {
    int64_t off, n, pos;
    wk_tensor *cos[WK__LM_ROPE_SETS], *sin[WK__LM_ROPE_SETS];
} seq_rows;

/* One sequence's attention for layer li: q (n, H D), k and v (n, Hkv D)
 * rows of it, rotated, written into its cache at pos and attending over it. */
static wk_tensor *seq_attention(const wk_lm *m, const wk__lm_layer *L, const wk_lm_seq *s, const seq_rows *r,
                                int64_t li, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v) {
    const wk_lm_config *cfg = &m->cfg;
    bool sliding = (L->flags & WK_LM_SLIDING) != 0;
    int rs = wk__lm_rope_set(m, li);
    wk__attn_heads ah = {.q_heads = m->tp.hq, /* this rank's heads (all without TP) */
                         .kv_heads = m->tp.hkv,
                         .head_dim = cfg->head_dim,
                         .interleaved = cfg->rope_interleaved,
                         /* a window as long as the sequence so far changes nothing */
                         .window = sliding && r->pos + r->n > cfg->sliding_window ? cfg->sliding_window : 0,
                         .softcap = cfg->attn_softcap,
                         .scale = cfg->attn_scale,
                         .rope_skip = (L->flags & WK_LM_NO_ROPE) != 0,
                         .rope_dims = cfg->rope_dims};
    wk_kv_cache *c = s->cache;
    /* the cache holds this process's layers only (pipeline parallel: from l0) */
    if (!c->pool)
        return wk__rope_cached_attention(&ah, q, k, v, r->cos[rs], r->sin[rs], &c->kv, li - wk__lm_l0(m), r->pos);
    wk_tensor *qr, *kr, *vv;
    if (wk__rope_qkv(&ah, q, k, v, r->cos[rs], r->sin[rs], wk__kv_attn_dtype(c), &qr, &kr, &vv) != WK_OK)
        return NULL;
    return wk__kv_paged_attend(c, &ah, li, qr, kr, vv, r->pos, wk_tensor_dtype(q));
}

/* x (R, dim), the rows of every sequence -> x + [post_norm](attention(norm(x)))
 * for layer li, writing each sequence's new keys and values into its cache. */
static wk_tensor *attention_block(const wk_lm *m, const wk__lm_layer *L, const wk_lm_seq *seqs,
                                  const seq_rows *rows, int64_t n_seqs, int64_t li, const wk_tensor *x) {
    const wk_lm_config *cfg = &m->cfg;
    int64_t H = m->tp.hq, Hkv = m->tp.hkv, D = cfg->head_dim; /* TP: this rank's heads */
    wk_tensor *h = wk_norm_layer_forward(&L->attn_norm, x);
    if (!h) return NULL;
    wk_tensor *q, *k, *v;
    const wk_linear *qkv3[3] = {&L->q, &L->k, &L->v};
    if (L->qkv.weight || wk__linear_multi_is_one(qkv3, 3, h)) {
        /* q, k, v read h as one product (h quantized once, one parallel
         * region: a decode step's overhead, not its arithmetic), as a
         * fused weight does */
        wk_tensor *qkv = L->qkv.weight ? wk_linear_forward(&L->qkv, h) : wk__linear_multi_forward(qkv3, 3, h);
        q = wk_narrow(qkv, 1, 0, H * D); /* (n, (H + 2 Hkv) D) */
        k = wk_narrow(qkv, 1, H * D, Hkv * D);
        v = wk_narrow(qkv, 1, (H + Hkv) * D, Hkv * D);
    } else {
        q = wk_linear_forward(&L->q, h);
        k = wk_linear_forward(&L->k, h);
        v = wk_linear_forward(&L->v, h);
    }
    if (cfg->qk_norm) {
        q = head_norm(&L->q_norm, q, H, D);
        k = head_norm(&L->k_norm, k, Hkv, D);
    }
    if (!q || !k || !v) return NULL;
    wk_tensor *a;
    if (n_seqs == 1) {
        a = seq_attention(m, L, &seqs[0], &rows[0], li, q, k, v);
    } else {
        /* each sequence's rows (narrows: no copy), then its outputs cat
         * back into (R, H D) in order */
        wk_tensor *parts[WK__LM_BATCH_MAX];
        for (int64_t i = 0; i < n_seqs; i++) {
            const seq_rows *r = &rows[i];
            parts[i] = seq_attention(m, L, &seqs[i], r, li, wk_narrow(q, 0, r->off, r->n),
                                     wk_narrow(k, 0, r->off, r->n), wk_narrow(v, 0, r->off, r->n));
            if (!parts[i]) return NULL;
        }
        a = wk_cat(parts, (int)n_seqs, 0);
    }
    if (!a) return NULL;
    a = wk__lm_tp_reduce(m, wk_linear_forward(&L->o, a)); /* TP: the heads' partial sums */
    if (cfg->post_norms) a = wk_norm_layer_forward(&L->post_attn_norm, a);
    return wk_add(x, a);
}

/* x + [post_norm](down(act)) */
static wk_tensor *ffn_out(const wk_lm *m, const wk__lm_layer *L, const wk_tensor *x, wk_tensor *act) {
    const wk_lm_config *cfg = &m->cfg;
    wk_tensor *d = wk__lm_tp_reduce(m, wk_linear_forward(&L->down, act)); /* TP: the columns' partial sums */
    if (cfg->post_norms) d = wk_norm_layer_forward(&L->post_ffn_norm, d);
    return wk_add(x, d);
}

/* x -> x + [post_norm](down(act(gate(h)) * up(h))), h = norm(x); act SiLU or
 * GELU-tanh */
static wk_tensor *ffn_block(const wk_lm *m, const wk__lm_layer *L, const wk_tensor *x) {
    const wk_lm_config *cfg = &m->cfg;
    wk_tensor *h = wk_norm_layer_forward(&L->ffn_norm, x);
    const wk_linear *gu2[2] = {&L->gate, &L->up};
    wk_tensor *act, *g, *u;
    /* gate and up as one (n, 2F) product where that is one backend call
     * (or the weight is fused), else separately */
    if (L->gate_up.weight || wk__linear_multi_is_one(gu2, 2, h)) {
        wk_tensor *gu = L->gate_up.weight ? wk_linear_forward(&L->gate_up, h) : wk__linear_multi_forward(gu2, 2, h);
        if (!cfg->gelu_mlp) return ffn_out(m, L, x, wk_swiglu(gu));
        int64_t F = gu ? wk_dim(gu, 1) / 2 : 0; /* ffn_dim, or this rank's columns (TP) */
        g = wk_narrow(gu, 1, 0, F);
        u = wk_narrow(gu, 1, F, F);
    } else {
        g = wk_linear_forward(&L->gate, h);
        u = wk_linear_forward(&L->up, h);
    }
    act = wk_mul(cfg->gelu_mlp ? wk_unary(g, WK_GELU) : wk_silu(g), u);
    return ffn_out(m, L, x, act);
}

/* The token rows of every sequence, in order, as f32 (R, dim): the kit's
 * embedding (a block table's rows gathered as blocks, then dequantized),
 * f16 / bf16 rows widened. */
static wk_tensor *embed(const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs, int64_t R) {
    int32_t *all = malloc(sizeof(int32_t) * (size_t)R);
    if (!all) {
        wk__err(WK_ERR_OOM, "wk_lm_forward", "cannot allocate %lld token ids", (long long)R);
        return NULL;
    }
    for (int64_t i = 0, o = 0; i < n_seqs; o += seqs[i].n, i++)
        memcpy(all + o, seqs[i].ids, sizeof(int32_t) * (size_t)seqs[i].n);
    int64_t shape[1] = {R};
    wk_tensor *e;
    if (m->tp.comm) { /* TP: this rank's rows, the others' zero, summed */
        e = wk__lm_tp_embed(m, all, R);
        free(all);
    } else {
        wk_tensor *idt = wk_from_host(all, sizeof(int32_t) * (size_t)R, shape, 1, WK_I32, m->dev);
        free(all);
        e = idt ? wk_embedding_layer_forward(&m->tok_embd, idt) : NULL;
        if (e && wk_tensor_dtype(e) != WK_F32) e = wk_to_dtype(e, WK_F32);
    }
    /* Gemma: times sqrt(dim), rounded to f32 first as transformers does */
    if (e && m->cfg.embed_scale != 1.0) e = wk_affine(e, (double)(float)m->cfg.embed_scale, 0);
    return e;
}

/* Every check before anything runs: op names the public entry. */
static wk_status check_seqs(const char *op, bool numbered, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs) {
    char who[48] = "";
    for (int64_t i = 0; i < n_seqs; i++) {
        const wk_lm_seq *s = &seqs[i];
        wk_kv_cache *c = s->cache;
        if (numbered) snprintf(who, sizeof who, "sequence %lld: ", (long long)i);
        if (!c || !s->ids) return wk__err(WK_ERR_ARG, op, "%smodel, cache and ids must not be NULL", who);
        if (c->m != m) return wk__err(WK_ERR_ARG, op, "%sthe cache was made for another model", who);
        if (s->n <= 0) return wk__err(WK_ERR_ARG, op, "%sneeds at least one token (n = %lld)", who, (long long)s->n);
        if (s->n > c->kv.cap - c->len)
            return wk__err(WK_ERR_ARG, op, "%scache overflow: %lld tokens after %lld do not fit its %lld positions", who,
                           (long long)s->n, (long long)c->len, (long long)c->kv.cap);
        for (int64_t j = 0; j < s->n; j++)
            if (s->ids[j] < 0 || s->ids[j] >= m->cfg.vocab)
                return wk__err(WK_ERR_ARG, op, "%stoken id %d at %lld is out of range (vocab %lld)", who, s->ids[j],
                               (long long)j, (long long)m->cfg.vocab);
        for (int64_t j = 0; j < i; j++)
            if (seqs[j].cache == c)
                return wk__err(WK_ERR_ARG, op, "sequences %lld and %lld share one cache", (long long)j, (long long)i);
    }
    return WK_OK;
}

/* The logits rows asked for (each sequence's last, or all its rows), through
 * the final norm and the lm head as one product. */
static wk_tensor *logits_of(const wk_lm *m, const wk_lm_seq *seqs, const seq_rows *rows, int64_t n_seqs,
                            wk_tensor *x) {
    wk_tensor *sel;
    if (n_seqs == 1) {
        sel = seqs[0].all_logits ? x : wk_narrow(x, 0, rows[0].n - 1, 1);
    } else {
        bool all = true;
        for (int64_t i = 0; i < n_seqs; i++) all = all && seqs[i].all_logits;
        if (all) {
            sel = x;
        } else {
            wk_tensor *parts[WK__LM_BATCH_MAX];
            for (int64_t i = 0; i < n_seqs; i++)
                parts[i] = seqs[i].all_logits ? wk_narrow(x, 0, rows[i].off, rows[i].n)
                                              : wk_narrow(x, 0, rows[i].off + rows[i].n - 1, 1);
            sel = wk_cat(parts, (int)n_seqs, 0);
        }
    }
    return wk__lm_head(m, sel);
}

wk_tensor *wk__lm_head(const wk_lm *m, const wk_tensor *x) {
    const wk_lm_config *cfg = &m->cfg;
    wk_tensor *logits = wk_linear_forward(&m->output, wk_norm_layer_forward(&m->out_norm, x));
    logits = wk__lm_tp_gather_vocab(m, logits); /* TP: every rank's vocabulary columns */
    /* Gemma 2: cap * tanh(logits / cap) */
    if (logits && cfg->final_softcap > 0)
        logits =
            wk_affine(wk_unary(wk_affine(logits, 1.0 / cfg->final_softcap, 0), WK_TANH), cfg->final_softcap, 0);
    return logits;
}

/* The pass itself, the arguments checked. x_in: the rows entering this
 * process's first layer (pipeline parallel, ranks after the first; a
 * reference the caller keeps), else NULL: the token rows. */
static wk_tensor *forward(const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs, seq_rows *rows, int64_t R,
                          wk_tensor *x_in) {
    for (int64_t i = 0; i < n_seqs; i++) {
        /* the positions' rows of each RoPE set: the cache's own tables when
         * it has them (longer than the model's, or longrope's long factors) */
        const wk_kv_cache *c = seqs[i].cache;
        for (int k = 0; k < WK__LM_ROPE_SETS; k++) {
            const wk__lm_rope *r = c->rope[k].cos ? &c->rope[k] : &m->rope[k];
            if (!r->cos) continue;
            rows[i].cos[k] = wk_narrow(r->cos, 0, rows[i].pos, rows[i].n);
            rows[i].sin[k] = wk_narrow(r->sin, 0, rows[i].pos, rows[i].n);
            if (!rows[i].cos[k] || !rows[i].sin[k]) return NULL;
        }
    }
    wk_tensor *x = x_in ? wk_tensor_retain(x_in) : wk_keep(embed(m, seqs, n_seqs, R));
    for (int64_t l = wk__lm_l0(m); x && l < wk__lm_l1(m); l++) {
        /* one scope per layer: its temporaries are freed before the next */
        const wk__lm_layer *L = &m->layers[l];
        wk_tensor *y = NULL;
        if (wk__scope_open()) {
            y = attention_block(m, L, seqs, rows, n_seqs, l, x);
            y = wk_keep(y ? ffn_block(m, L, y) : NULL);
        }
        wk_scope_end();
        wk_tensor_free(x);
        x = y;
    }
    if (m->pp) return x; /* pipeline parallel: the activations go on (lm_pp.c) */
    wk_tensor *out = x ? wk_keep(logits_of(m, seqs, rows, n_seqs, x)) : NULL;
    wk_tensor_free(x);
    return out;
}

wk_status wk__lm_forward_check(const char *op, bool numbered, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs) {
    if (!m || !seqs) return wk__err(WK_ERR_ARG, op, "model, cache and ids must not be NULL");
    if (n_seqs < 1 || n_seqs > WK__LM_BATCH_MAX)
        return wk__err(WK_ERR_ARG, op, "needs 1 to %d sequences, got %lld", WK__LM_BATCH_MAX, (long long)n_seqs);
    return check_seqs(op, numbered, m, seqs, n_seqs);
}

static wk_tensor *forward_seqs(const char *op, bool numbered, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs,
                               wk_tensor *x_in) {
    if (wk__lm_forward_check(op, numbered, m, seqs, n_seqs) != WK_OK) return NULL;
    seq_rows *rows = calloc((size_t)n_seqs, sizeof *rows);
    if (!rows) {
        wk__err(WK_ERR_OOM, op, "cannot allocate %lld sequences", (long long)n_seqs);
        return NULL;
    }
    int64_t R = 0;
    for (int64_t i = 0; i < n_seqs; i++) {
        rows[i].off = R;
        rows[i].n = seqs[i].n;
        rows[i].pos = seqs[i].cache->len;
        R += seqs[i].n;
    }
    /* the paged caches' blocks first: all or none (WK_ERR_BUSY) */
    if (wk__kv_paged_prepare(seqs, n_seqs) != WK_OK) {
        free(rows);
        return NULL;
    }
    wk_tensor *out = NULL;
    /* a scope that could not open would leave every temporary to nobody:
     * fail instead (the OOM is recorded) */
    if (wk__scope_open()) out = forward(m, seqs, n_seqs, rows, R, x_in);
    wk_scope_end();
    if (out) {
        for (int64_t i = 0; i < n_seqs; i++) seqs[i].cache->len = rows[i].pos + rows[i].n;
        wk__kv_paged_commit(seqs, n_seqs);
    } else {
        wk__kv_paged_rollback(seqs, n_seqs);
    }
    free(rows);
    return out;
}

wk_tensor *wk__lm_forward_stage(const char *op, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs,
                                wk_tensor *x_in) {
    return forward_seqs(op, true, m, seqs, n_seqs, x_in);
}

wk_tensor *wk_lm_forward_batch(const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs) {
    if (m && m->pp) return wk__lm_pp_forward("wk_lm_forward_batch", true, m, seqs, n_seqs); /* pipeline parallel */
    return forward_seqs("wk_lm_forward_batch", true, m, seqs, n_seqs, NULL);
}

wk_tensor *wk_lm_forward(const wk_lm *m, wk_kv_cache *c, const int32_t *ids, int64_t n, bool all_logits) {
    wk_lm_seq s = {.cache = c, .ids = ids, .n = n, .all_logits = all_logits};
    if (!c || !ids) {
        wk__err(WK_ERR_ARG, "wk_lm_forward", "model, cache and ids must not be NULL");
        return NULL;
    }
    if (m && m->pp) return wk__lm_pp_forward("wk_lm_forward", false, m, &s, 1); /* pipeline parallel */
    return forward_seqs("wk_lm_forward", false, m, &s, 1, NULL);
}
