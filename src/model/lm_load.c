/* wk_lm_load: a decoder model of any family wick knows from a GGUF file
 * (tensors stay zero-copy views of the map, quantized ones stay blocks) or
 * from an HF directory (config.json + safetensors), under the names its
 * family gives (src/model/lm_arch.h). Every tensor's shape is checked
 * against the config before anything runs. Tensor parallel: the marked TP
 * hooks cut each weight to this rank's share (src/model/lm_tp_load.c)
 * before it is placed. */
#include "model/lm_internal.h"
#include "wick/gguf.h"
#include "wick/safetensors.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "base/error.h"
#include "io/json.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *OP = "wk_lm_load";

/* Where the tensors come from: one of the two readers, and the family that
 * names them. */
typedef struct source {
    wk_gguf *g;
    wk_safetensors *st;
    const char *path;
    const wk__lm_arch *arch;
    const wk__lm_tp *tp; /* TP: this rank's shares (lm_tp.c) */
} source;

/* The name of layer l's slot w (suffix "weight" or "bias"); false when the
 * family has no such tensor. */
static bool layer_name(const source *s, int64_t l, wk__lm_slot w, const char *suffix, char *out, size_t cap) {
    const char *n = s->g ? wk__lm_gguf_slot(w) : wk__lm_hf_slot(s->arch, w);
    if (!n || !n[0]) return false;
    if (s->g) snprintf(out, cap, "blk.%lld.%s.%s", (long long)l, n, suffix);
    else snprintf(out, cap, "model.layers.%lld.%s.%s", (long long)l, n, suffix);
    return true;
}

static bool has_tensor(const source *s, const char *name) {
    return s->g ? wk_gguf_find_tensor(s->g, name) >= 0 : wk_safetensors_find(s->st, name) >= 0;
}

/* The tensor called name (a new reference), or NULL + an error naming it. */
static wk_tensor *get_tensor(const source *s, const char *name) {
    if (!has_tensor(s, name)) {
        wk__err(WK_ERR_FORMAT, OP, "%s: tensor %s is missing", s->path, name);
        return NULL;
    }
    return s->g ? wk_gguf_tensor(s->g, name) : wk_safetensors_get(s->st, name);
}

static bool check_shape(const source *s, const char *name, const wk_tensor *t, const int64_t *want, int rank) {
    bool ok = wk_rank(t) == rank;
    for (int i = 0; ok && i < rank; i++) ok = wk_dim(t, i) == want[i];
    if (ok) return true;
    char got[128] = "(", exp[128] = "(";
    for (int i = 0; i < wk_rank(t); i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)wk_dim(t, i));
    for (int i = 0; i < rank; i++)
        snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%lld", i ? ", " : "", (long long)want[i]);
    wk__err(WK_ERR_SHAPE, OP, "%s: tensor %s has shape %s), the config needs %s)", s->path, name, got, exp);
    return false;
}

/* The dtype a float weight is kept in: opts' dtype when it names one of
 * f32 / f16 / bf16, else as the file stores it (f64 as f32). */
static wk_dtype keep_dtype(wk_dtype stored, wk_dtype want) {
    if (want == WK_F32 || want == WK_F16 || want == WK_BF16) return want;
    return stored == WK_F64 ? WK_F32 : stored;
}

/* t converted to dt and moved to dev; consumes t. */
static wk_tensor *place(wk_tensor *t, wk_dtype dt, wk_device *dev) {
    if (!t) return NULL;
    if (wk_tensor_dtype(t) != dt) {
        wk_tensor *c = wk_to_dtype(t, dt);
        wk_tensor_free(t);
        t = c;
    }
    if (t && !wk_same_device(wk_tensor_device(t), dev)) {
        wk_tensor *c = wk_to_device(t, dev);
        wk_tensor_free(t);
        t = c;
    }
    return t;
}

static bool is_float_weight(wk_dtype dt) { return dt == WK_F32 || dt == WK_F16 || dt == WK_BF16 || dt == WK_F64; }

/* TP: t cut to this rank's share (src/model/lm_tp_load.c); consumes t. */
static wk_tensor *tp_cut(const source *s, const char *name, wk_tensor *t, const wk__lm_cut *cut) {
    wk__lm_tp_file f = {.g = s->g, .st = s->st, .path = s->path};
    return wk__lm_tp_cut(&f, name, t, cut);
}

/* A matrix weight (N, K): checked, converted if it is float, kept as blocks
 * if it is quantized. Consumes t. */
static wk_status make_linear(const source *s, const char *name, wk_tensor *t, int64_t n, int64_t k, wk_dtype want,
                             wk_device *dev, const wk__lm_cut *cut, wk_linear *out) {
    memset(out, 0, sizeof *out);
    if (!t) return wk_last_status();
    int64_t shape[2] = {n, k};
    if (!check_shape(s, name, t, shape, 2)) {
        wk_tensor_free(t);
        return WK_ERR_SHAPE;
    }
    wk_dtype dt = wk_tensor_dtype(t);
    if (is_float_weight(dt)) {
        dt = keep_dtype(dt, want);
    } else if (!wk_dtype_is_quantized(dt)) {
        wk_tensor_free(t);
        return wk__err(WK_ERR_DTYPE, OP, "%s: tensor %s has dtype %s (a weight must be float or block-quantized)",
                       s->path, name, wk_dtype_name(dt));
    }
    if (cut && cut->n_ranges && !(t = tp_cut(s, name, t, cut))) return wk_last_status(); /* TP */
    out->weight = place(t, dt, dev);
    return out->weight ? WK_OK : wk_last_status();
}

/* An RMS norm of weight (dim): f32 always (activations are f32). HF Gemma
 * stores w - 1: the family's rule adds the 1 back (a copy). */
static wk_status make_norm(const source *s, const char *name, int64_t dim, double eps, wk_device *dev,
                           wk_norm_layer *out) {
    *out = (wk_norm_layer){.eps = eps, .rms = true};
    wk_tensor *t = get_tensor(s, name);
    if (!t) return wk_last_status();
    if (!check_shape(s, name, t, &dim, 1)) {
        wk_tensor_free(t);
        return WK_ERR_SHAPE;
    }
    if (!is_float_weight(wk_tensor_dtype(t))) {
        wk_status st = wk__err(WK_ERR_DTYPE, OP, "%s: tensor %s has dtype %s (norm weights must be float)", s->path,
                               name, wk_dtype_name(wk_tensor_dtype(t)));
        wk_tensor_free(t);
        return st;
    }
    out->weight = place(t, WK_F32, dev);
    if (out->weight && !s->g && s->arch->hf_norm_minus_one) {
        wk_tensor *w1 = wk_affine(out->weight, 1.0, 1.0);
        wk_tensor_free(out->weight);
        out->weight = w1;
    }
    return out->weight ? WK_OK : wk_last_status();
}

/* The bias of a projection when the file has one (f32, (n)); required
 * ones missing are an error naming them. */
static wk_status make_bias(const source *s, const char *name, int64_t n, bool required, wk_device *dev,
                           const wk__lm_cut *cut, wk_linear *l) {
    if (!has_tensor(s, name)) {
        if (!required) return WK_OK;
        return wk__err(WK_ERR_FORMAT, OP, "%s: tensor %s is missing (the family has q, k, v biases)", s->path, name);
    }
    wk_tensor *t = get_tensor(s, name);
    if (!t) return wk_last_status();
    if (!check_shape(s, name, t, &n, 1)) {
        wk_tensor_free(t);
        return WK_ERR_SHAPE;
    }
    if (!is_float_weight(wk_tensor_dtype(t))) {
        wk_status st = wk__err(WK_ERR_DTYPE, OP, "%s: tensor %s has dtype %s (biases must be float)", s->path, name,
                               wk_dtype_name(wk_tensor_dtype(t)));
        wk_tensor_free(t);
        return st;
    }
    if (cut && cut->n_ranges && !(t = tp_cut(s, name, t, cut))) return wk_last_status(); /* TP */
    l->bias = place(t, WK_F32, dev);
    return l->bias ? WK_OK : wk_last_status();
}

/* Two or three linear weights of one dtype fused into one matrix (their rows
 * concatenated), so a step runs one matmul instead of several. false (and
 * nothing made) when the dtypes differ. */
static bool fuse(const wk_linear *parts, int n, wk_linear *out, wk_status *st) {
    memset(out, 0, sizeof *out);
    *st = WK_OK;
    wk_tensor *ws[3];
    for (int i = 0; i < n; i++) {
        if (wk_tensor_dtype(parts[i].weight) != wk_tensor_dtype(parts[0].weight)) return false;
        ws[i] = parts[i].weight;
    }
    out->weight = wk_cat(ws, n, 0);
    if (!out->weight) {
        *st = wk_last_status();
        return false;
    }
    return true;
}

/* Fusing copies those weights out of the zero-copy map (+44% resident
 * memory on SmolLM2 Q4_1) for fewer, larger matmuls. Measured in CPU time
 * at 1 thread it did not pay (decode +1%, prefill 128 -7%), so it is off
 * unless WICK_LLAMA_FUSE=1 asks for it (e.g. to try more threads, where
 * each matmul's fork/join costs more). */
static bool fusion_wanted(void) {
    const char *e = getenv("WICK_LLAMA_FUSE");
    return e && e[0] == '1';
}

/* A norm of slot w in layer l, over n. */
static wk_status layer_norm_of(const source *s, const wk_lm_config *c, int64_t l, wk__lm_slot w, int64_t n,
                               wk_device *dev, wk_norm_layer *out) {
    char name[160];
    if (!layer_name(s, l, w, "weight", name, sizeof name))
        return wk__err(WK_ERR_FORMAT, OP, "%s: %s has no name for norm slot %d", s->path, c->arch, (int)w);
    return make_norm(s, name, n, c->rms_eps, dev, out);
}

/* A projection of slot w in layer l: (n, k) weight and its bias if the
 * file has one (required: attn_bias families' q, k, v). */
static wk_status layer_linear(const source *s, const wk_lm_config *c, int64_t l, wk__lm_slot w, int64_t n, int64_t k,
                              bool bias_required, wk_dtype want, wk_device *dev, const wk__lm_cut *cut,
                              wk_linear *out) {
    char name[160];
    if (!layer_name(s, l, w, "weight", name, sizeof name))
        return wk__err(WK_ERR_FORMAT, OP, "%s: %s has no name for slot %d", s->path, c->arch, (int)w);
    wk_status st = make_linear(s, name, get_tensor(s, name), n, k, want, dev, cut, out);
    if (st != WK_OK) return st;
    layer_name(s, l, w, "bias", name, sizeof name);
    return make_bias(s, name, n, bias_required, dev, cut, out);
}

/* TP: the elements per block of layer l's down weight (the FFN splits at
 * its blocks); 1 for float weights. */
static wk_status down_block(const source *s, const wk_lm_config *c, int64_t l, int64_t *out) {
    char name[160];
    *out = 1;
    if (!layer_name(s, l, WK__S_DOWN, "weight", name, sizeof name)) return WK_OK;
    wk_tensor *t = get_tensor(s, name);
    if (!t) return wk_last_status();
    *out = wk_dtype_info_of(wk_tensor_dtype(t))->block_elems;
    wk_tensor_free(t);
    (void)c;
    return WK_OK;
}

static wk_status load_layer(const source *s, const wk_lm_config *c, int64_t l, wk_dtype want, wk_device *dev,
                            wk__lm_layer *L) {
    int64_t qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim, D = c->dim, F = c->ffn_dim;
    wk_status st;
    L->flags = c->layer_flags[l];
    /* TP: this rank's rows / columns of each projection (none: whole) */
    wk__lm_layer_cuts cu = {0};
    int64_t db = 1;
    if (s->tp->comm && ((st = down_block(s, c, l, &db)) != WK_OK ||
                        (st = wk__lm_tp_layer_cuts(s->tp, c, l, db, s->path, &cu)) != WK_OK))
        return st;
    if ((st = layer_norm_of(s, c, l, WK__S_ATTN_NORM, D, dev, &L->attn_norm)) != WK_OK ||
        (st = layer_norm_of(s, c, l, WK__S_FFN_NORM, D, dev, &L->ffn_norm)) != WK_OK)
        return st;
    if (c->post_norms &&
        ((st = layer_norm_of(s, c, l, WK__S_POST_ATTN_NORM, D, dev, &L->post_attn_norm)) != WK_OK ||
         (st = layer_norm_of(s, c, l, WK__S_POST_FFN_NORM, D, dev, &L->post_ffn_norm)) != WK_OK))
        return st;
    if (c->qk_norm && ((st = layer_norm_of(s, c, l, WK__S_Q_NORM, c->head_dim, dev, &L->q_norm)) != WK_OK ||
                       (st = layer_norm_of(s, c, l, WK__S_K_NORM, c->head_dim, dev, &L->k_norm)) != WK_OK))
        return st;
    if (c->fused_qkv) {
        if ((st = layer_linear(s, c, l, WK__S_QKV, qd + 2 * kvd, D, c->attn_bias, want, dev, &cu.qkv, &L->qkv)) != WK_OK ||
            (st = layer_linear(s, c, l, WK__S_GATE_UP, 2 * F, D, false, want, dev, &cu.gate_up, &L->gate_up)) != WK_OK)
            return st;
    } else {
        if ((st = layer_linear(s, c, l, WK__S_Q, qd, D, c->attn_bias, want, dev, &cu.q, &L->q)) != WK_OK ||
            (st = layer_linear(s, c, l, WK__S_K, kvd, D, c->attn_bias, want, dev, &cu.k, &L->k)) != WK_OK ||
            (st = layer_linear(s, c, l, WK__S_V, kvd, D, c->attn_bias, want, dev, &cu.v, &L->v)) != WK_OK ||
            (st = layer_linear(s, c, l, WK__S_GATE, F, D, false, want, dev, &cu.gate, &L->gate)) != WK_OK ||
            (st = layer_linear(s, c, l, WK__S_UP, F, D, false, want, dev, &cu.up, &L->up)) != WK_OK)
            return st;
    }
    if ((st = layer_linear(s, c, l, WK__S_O, D, qd, false, want, dev, &cu.o, &L->o)) != WK_OK ||
        (st = layer_linear(s, c, l, WK__S_DOWN, D, F, false, want, dev, &cu.down, &L->down)) != WK_OK)
        return st;
    /* fusing at load (below) concatenates weights only: not with biases
     * (nor with TP shards: the q|k|v split points move) */
    if (c->fused_qkv || !fusion_wanted() || L->q.bias || L->k.bias || L->v.bias || s->tp->comm) return WK_OK;
    wk_linear qkv[3] = {L->q, L->k, L->v};
    if (fuse(qkv, 3, &L->qkv, &st)) {
        wk_linear_free(&L->q);
        wk_linear_free(&L->k);
        wk_linear_free(&L->v);
    } else if (st != WK_OK) {
        return st;
    }
    wk_linear gu[2] = {L->gate, L->up};
    if (fuse(gu, 2, &L->gate_up, &st)) {
        wk_linear_free(&L->gate);
        wk_linear_free(&L->up);
    } else if (st != WK_OK) {
        return st;
    }
    return WK_OK;
}

static const char *embd_name(const source *s) { return s->g ? "token_embd.weight" : "model.embed_tokens.weight"; }
static const char *out_norm_name(const source *s) { return s->g ? "output_norm.weight" : "model.norm.weight"; }
static const char *output_name(const source *s) { return s->g ? "output.weight" : "lm_head.weight"; }

static wk_status load_token_table(const source *s, wk_lm *m, wk_dtype want) {
    const wk_lm_config *c = &m->cfg;
    const char *en = embd_name(s);
    wk_tensor *e = get_tensor(s, en);
    if (!e) return wk_last_status();
    int64_t es[2] = {c->vocab, c->dim};
    if (!check_shape(s, en, e, es, 2)) {
        wk_tensor_free(e);
        return WK_ERR_SHAPE;
    }
    wk_dtype edt = wk_tensor_dtype(e);
    if (!is_float_weight(edt) && !wk_dtype_is_quantized(edt)) {
        wk_tensor_free(e);
        return wk__err(WK_ERR_DTYPE, OP, "%s: tensor %s has dtype %s", s->path, en, wk_dtype_name(edt));
    }
    wk__lm_cut vc = wk__lm_tp_vocab_cut(s->tp); /* TP: this rank's vocabulary rows */
    if (vc.n_ranges && !(e = tp_cut(s, en, e, &vc))) return wk_last_status();
    m->tok_embd.weight = place(e, is_float_weight(edt) ? keep_dtype(edt, want) : edt, m->dev);
    return m->tok_embd.weight ? WK_OK : wk_last_status();
}

static wk_status load_weights(const source *s, wk_lm *m, const wk_lm_load_opts *o) {
    const wk_lm_config *c = &m->cfg;
    wk_dtype want = o->dtype;
    wk_status st;
    /* pipeline parallel: only this rank's parts are read (the token table on
     * the first rank and, as a tied head, the last; the head on the last) */
    bool head = wk__lm_has_head(m);
    if ((wk__lm_has_embd(m) || (head && c->tied_embeddings)) && (st = load_token_table(s, m, want)) != WK_OK)
        return st;
    wk__lm_cut vc = wk__lm_tp_vocab_cut(s->tp); /* TP: this rank's vocabulary rows */
    if (head) {
        if ((st = make_norm(s, out_norm_name(s), c->dim, c->rms_eps, m->dev, &m->out_norm)) != WK_OK) return st;
        if (c->tied_embeddings) {
            /* the lm head is the token table itself: one more reference */
            m->output.weight = wk_tensor_retain(m->tok_embd.weight);
        } else if ((st = make_linear(s, output_name(s), get_tensor(s, output_name(s)), c->vocab, c->dim, want,
                                     m->dev, &vc, &m->output)) != WK_OK) {
            return st;
        }
    }
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return wk__err(WK_ERR_OOM, OP, "cannot allocate %lld layers", (long long)c->n_layers);
    int64_t l0 = wk__lm_l0(m), l1 = wk__lm_l1(m); /* pipeline parallel: this rank's layers */
    for (int64_t l = l0; l < l1; l++) {
        if ((st = load_layer(s, c, l, want, m->dev, &m->layers[l])) != WK_OK) return st;
        if (o->progress) o->progress(o->progress_ctx, (double)(l + 1 - l0) / (double)(l1 - l0));
    }
    return WK_OK;
}

/* A GGUF tensor of rope_dims/2 frequency divisors (Llama 3.1's
 * rope_freqs.weight, llama.cpp's form of the llama3 scaling; Phi-3's
 * rope_factors_short / _long.weight) into *out; NULL when absent. */
static wk_status gguf_freq_factors(const source *s, const wk_lm_config *c, const char *name, float **out) {
    *out = NULL;
    if (!s->g || wk_gguf_find_tensor(s->g, name) < 0) return WK_OK;
    wk_tensor *t = wk_gguf_tensor(s->g, name);
    int64_t half = c->rope_dims / 2;
    if (!t) return wk_last_status();
    if (!check_shape(s, name, t, &half, 1)) {
        wk_tensor_free(t);
        return WK_ERR_SHAPE;
    }
    float *f = malloc(sizeof(float) * (size_t)half);
    wk_status st = f ? wk_to_host_f32(t, f, (size_t)half) : wk__err(WK_ERR_OOM, OP, "%s", name);
    wk_tensor_free(t);
    if (st != WK_OK) {
        free(f);
        return st;
    }
    *out = f;
    return WK_OK;
}

/* The divisors are positive and there are rope_dims/2 of them. */
static wk_status check_factors(const source *s, const char *name, const float *f, int64_t n, int64_t half) {
    if (n != half)
        return wk__err(WK_ERR_FORMAT, OP, "%s: %s has %lld entries, the rotary half needs %lld", s->path, name,
                       (long long)n, (long long)half);
    for (int64_t i = 0; i < n; i++)
        if (!(f[i] > 0) || !isfinite(f[i]))
            return wk__err(WK_ERR_FORMAT, OP, "%s: %s[%lld] = %g is not a positive number", s->path, name,
                           (long long)i, (double)f[i]);
    return WK_OK;
}

/* A float list owned by the caller: a copy of n floats (NULL + OOM). */
static float *copy_floats(const float *f, int64_t n) {
    float *c = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (c && n > 0) memcpy(c, f, sizeof(float) * (size_t)n);
    return c;
}

/* The RoPE tables the model keeps: the global set (llama3's rope_freqs or
 * longrope's short factors as divisors), the local set when sliding layers
 * have their own base, and longrope's long frequencies for long caches. */
static wk_status make_rope(const source *s, wk_lm *m, const wk__lm_raw *r) {
    const wk_lm_config *c = &m->cfg;
    int64_t half = c->rope_dims / 2;
    float *global = NULL, *lng = NULL;
    wk_status st = WK_OK;
    bool longrope = !strcmp(c->rope_scaling, "longrope");
    if (s->g) {
        if ((st = gguf_freq_factors(s, c, longrope ? "rope_factors_short.weight" : "rope_freqs.weight", &global)) ||
            (longrope && (st = gguf_freq_factors(s, c, "rope_factors_long.weight", &lng))))
            goto out;
        if (longrope && (!global || !lng)) {
            st = wk__err(WK_ERR_FORMAT, OP, "%s: longrope needs both rope_factors_short and rope_factors_long",
                         s->path);
            goto out;
        }
    } else if (longrope) {
        if (!r->short_factor || !r->long_factor) {
            st = wk__err(WK_ERR_FORMAT, OP, "%s: longrope scaling needs short_factor and long_factor", s->path);
            goto out;
        }
        if ((st = check_factors(s, "short_factor", r->short_factor, r->n_short, half)) ||
            (st = check_factors(s, "long_factor", r->long_factor, r->n_long, half)))
            goto out;
        global = copy_floats(r->short_factor, half);
        lng = copy_floats(r->long_factor, half);
        if (!global || !lng) {
            st = wk__err(WK_ERR_OOM, OP, "rope factors");
            goto out;
        }
    }
    if ((global && (st = check_factors(s, longrope ? "rope_factors_short" : "rope_freqs.weight", global, half, half))) ||
        (lng && (st = check_factors(s, "rope_factors_long", lng, half, half))))
        goto out;
    wk__rope_freqs rf = wk__lm_rope_freqs(c, false);
    if ((st = wk__rope_inv_freq(OP, &rf, global, &m->rope[0].inv)) != WK_OK) goto out;
    if (lng && (st = wk__rope_inv_freq(OP, &rf, lng, &m->rope_inv_long)) != WK_OK) goto out;
    bool local = false;
    for (int64_t l = 0; l < c->n_layers; l++) local |= (c->layer_flags[l] & WK_LM_SLIDING) != 0;
    if (local && c->rope_local_theta > 0) {
        wk__rope_freqs lf = wk__lm_rope_freqs(c, true);
        if ((st = wk__rope_inv_freq(OP, &lf, NULL, &m->rope[1].inv)) != WK_OK) goto out;
    }
    /* the tables for the first positions only (see wk__lm_rope_eager_bytes) */
    int64_t rows = wk__lm_rope_eager_bytes / (half * 2 * (int64_t)sizeof(float));
    if (rows < 1) rows = 1;
    if (rows > c->max_ctx) rows = c->max_ctx;
    for (int i = 0; i < WK__LM_ROPE_SETS && st == WK_OK; i++)
        if (m->rope[i].inv) st = wk__lm_rope_build(m, m->rope[i].inv, rows, &m->rope[i]);
out:
    free(global);
    free(lng);
    return st;
}

wk_status wk__lm_rope_build(const wk_lm *m, const double *inv, int64_t rows, wk__lm_rope *out) {
    wk_status st = wk__rope_tables(OP, inv, m->cfg.rope_dims / 2, rows, m->dev, &out->cos, &out->sin);
    if (st != WK_OK || m->cfg.rope_attn_factor == 1.0) return st;
    /* longrope's attention factor scales both tables (transformers' and
     * llama.cpp's mscale) */
    wk_tensor *c = wk_affine(out->cos, m->cfg.rope_attn_factor, 0), *sn = wk_affine(out->sin, m->cfg.rope_attn_factor, 0);
    wk_tensor_free(out->cos);
    wk_tensor_free(out->sin);
    out->cos = c;
    out->sin = sn;
    return c && sn ? WK_OK : wk_last_status();
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static wk_status gguf_chat_template(const wk_gguf *g, char **out) {
    *out = NULL;
    int64_t i = wk_gguf_find_key(g, "tokenizer.chat_template");
    if (i < 0 || wk_gguf_kv_type(g, i) != WK_GGUF_STRING) return WK_OK;
    const char *s;
    uint64_t n;
    if (wk_gguf_get_string(g, i, &s, &n) != WK_OK) return wk_last_status();
    if (!(*out = dup_n(s, (size_t)n))) return wk__err(WK_ERR_OOM, OP, "chat template");
    return WK_OK;
}

/* tokenizer_config.json's "chat_template": a string, or a list of
 * {"name", "template"} where the "default" one is taken. Absent file or
 * key: none. */
static wk_status hf_chat_template(const char *dir, char **out) {
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return WK_OK;
    size_t len;
    char *txt = wk__read_small_file(OP, path, &len);
    if (!txt) return wk_last_status();
    wk__json p;
    wk__json_init(&p, txt, len);
    const char *key, *s;
    size_t kl, sl;
    if (wk__json_object(&p)) {
        while (wk__json_key(&p, &key, &kl)) {
            if (strcmp(key, "chat_template") != 0) {
                if (!wk__json_skip(&p)) break;
                continue;
            }
            if (wk__json_peek(&p) == WK__JSON_STRING) {
                if (wk__json_string(&p, &s, &sl) && !*out && !(*out = dup_n(s, sl))) {
                    p.oom = true;
                    wk__json_fail(&p, "out of memory");
                }
            } else if (wk__json_peek(&p) == WK__JSON_ARRAY && wk__json_array(&p)) {
                for (size_t entry = 0; wk__json_item(&p); entry++) {
                    char *tmpl = NULL;
                    bool is_default = false;
                    if (wk__json_peek(&p) != WK__JSON_OBJECT) {
                        wk__json_fail(&p, "chat_template entry %zu must be an object {\"name\", \"template\"}", entry);
                        break;
                    }
                    if (!wk__json_object(&p)) break;
                    while (wk__json_key(&p, &key, &kl)) {
                        bool name = !strcmp(key, "name"), tm = !strcmp(key, "template");
                        if (!name && !tm) {
                            if (!wk__json_skip(&p)) break;
                            continue;
                        }
                        /* the value must be read (or the parse fails at the
                         * next key with a misleading syntax error) */
                        if (wk__json_peek(&p) != WK__JSON_STRING) {
                            wk__json_fail(&p, "chat_template entry %zu: \"%s\" must be a string", entry,
                                          name ? "name" : "template");
                            break;
                        }
                        if (!wk__json_string(&p, &s, &sl)) break;
                        if (name) is_default = !strcmp(s, "default");
                        else if (!tmpl && !(tmpl = dup_n(s, sl))) {
                            p.oom = true;
                            wk__json_fail(&p, "out of memory");
                            break;
                        }
                    }
                    if (!p.failed && is_default && tmpl && !*out) *out = tmpl;
                    else free(tmpl);
                    if (p.failed) break;
                }
            } else if (!wk__json_skip(&p)) {
                break;
            }
        }
    }
    wk_status st = WK_OK;
    if (p.failed) {
        st = wk__err(p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s: %s", path, p.msg);
        free(*out);
        *out = NULL;
    }
    wk__json_free(&p);
    free(txt);
    return st;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

wk_lm *wk_lm_load(const char *path, const wk_lm_load_opts *opts) {
    if (!path) {
        wk__err(WK_ERR_ARG, OP, "path is NULL");
        return NULL;
    }
    wk_lm_load_opts o = {0};
    if (opts) o = *opts;
    wk_lm *m = calloc(1, sizeof *m);
    if (!m) {
        wk__err(WK_ERR_OOM, OP, "cannot allocate the model");
        return NULL;
    }
    m->dev = o.device ? o.device : wk_cpu();
    m->kv_dtype = o.kv_dtype == WK_F16 || o.kv_dtype == WK_BF16 ? o.kv_dtype : WK_F32;
    source s = {.path = path};
    wk__lm_raw raw;
    memset(&raw, 0, sizeof raw);
    wk_status st = WK_OK;
    /* raw.src points here: it must live as long as raw */
    char cpath[4096];
    if (is_dir(path)) {
        snprintf(cpath, sizeof cpath, "%s/config.json", path);
        size_t len;
        char *txt = wk__read_small_file(OP, cpath, &len);
        if (!txt) goto fail;
        st = wk__lm_config_from_json(txt, len, cpath, &m->cfg, &raw, &s.arch);
        free(txt);
        if (st != WK_OK) goto fail;
        if (!(s.st = wk_safetensors_open(path))) goto fail;
        /* a checkpoint without lm_head ties it to the embeddings whatever
         * the config says (transformers does the same when loading) */
        m->cfg.tied_embeddings = !has_tensor(&s, "lm_head.weight");
        if ((st = hf_chat_template(path, &m->chat_template)) != WK_OK) goto fail;
        /* tokenizer.json when the directory has one (ids only otherwise) */
        char tpath[4096];
        snprintf(tpath, sizeof tpath, "%s/tokenizer.json", path);
        struct stat sb;
        if (stat(tpath, &sb) == 0 && !(m->tok = wk_tokenizer_load_json(tpath))) goto fail;
    } else {
        if (!(s.g = wk_gguf_open(path))) goto fail;
        if ((st = wk__lm_config_from_gguf(s.g, &m->cfg, &raw, &s.arch)) != WK_OK) goto fail;
        raw.src = path;
        if ((st = gguf_chat_template(s.g, &m->chat_template)) != WK_OK) goto fail;
        /* a file without tokenizer metadata loads without a tokenizer (ids
         * only); one with metadata wick cannot read is an error */
        if (wk_gguf_find_key(s.g, "tokenizer.ggml.model") >= 0 && !(m->tok = wk_tokenizer_from_gguf(s.g))) goto fail;
    }
    m->arch = s.arch;
    /* the common sizes first: the per-layer flags are allocated from them */
    if ((st = wk__lm_config_check(&m->cfg, path)) != WK_OK) goto fail;
    if (!(m->layer_flags = calloc((size_t)m->cfg.n_layers, 1))) {
        st = wk__err(WK_ERR_OOM, OP, "cannot allocate %lld layer flags", (long long)m->cfg.n_layers);
        goto fail;
    }
    m->cfg.layer_flags = m->layer_flags;
    if ((st = wk__lm_config_finish(s.arch, &raw, &m->cfg, m->layer_flags, path)) != WK_OK) goto fail;
    /* every id the tokenizer can produce must have an embedding row; more
     * rows than ids is common (padded tables: HF configs round vocab_size
     * up), more ids than rows would fail only mid-generation */
    if (m->tok && wk_tokenizer_vocab_size(m->tok) > m->cfg.vocab) {
        st = wk__err(WK_ERR_FORMAT, OP,
                     "%s: the tokenizer has %lld ids but the token embedding has %lld rows (vocab); ids from "
                     "%lld up could not be embedded",
                     path, (long long)wk_tokenizer_vocab_size(m->tok), (long long)m->cfg.vocab,
                     (long long)m->cfg.vocab);
        goto fail;
    }
    if (o.parallel != WK_LM_TENSOR_PARALLEL && o.parallel != WK_LM_PIPELINE_PARALLEL) {
        st = wk__err(WK_ERR_ARG, OP, "parallel = %d is neither WK_LM_TENSOR_PARALLEL nor WK_LM_PIPELINE_PARALLEL",
                     o.parallel);
        goto fail;
    }
    /* TP: this rank's shares (whole without a communicator of size > 1) */
    if ((st = wk__lm_tp_init(&m->tp, o.parallel == WK_LM_TENSOR_PARALLEL ? o.comm : NULL, &m->cfg, m->dev, path)) != WK_OK)
        goto fail;
    s.tp = &m->tp;
    if ((st = wk__lm_pp_setup(m, &o, path)) != WK_OK) goto fail; /* pipeline parallel */
    st = load_weights(&s, m, &o);
    if (st == WK_OK) st = make_rope(&s, m, &raw);
    if (m->pp) st = wk__lm_pp_agree(m, st); /* pipeline parallel: every rank loaded its part, or all fail */
    if (st != WK_OK) goto fail;
    wk__lm_raw_free(&raw);
    wk_gguf_close(s.g);
    wk_safetensors_close(s.st);
    return m;
fail:
    wk__lm_raw_free(&raw);
    wk_gguf_close(s.g);
    wk_safetensors_close(s.st);
    wk_lm_free(m);
    return NULL;
}

void wk_lm_free(wk_lm *m) {
    if (!m) return;
    if (m->layers)
        for (int64_t l = 0; l < m->cfg.n_layers; l++) {
            wk__lm_layer *L = &m->layers[l];
            wk_norm_layer *ns[] = {&L->attn_norm, &L->ffn_norm, &L->post_attn_norm, &L->post_ffn_norm,
                                   &L->q_norm, &L->k_norm};
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) wk_norm_layer_free(ns[i]);
            wk_linear *ls[] = {&L->qkv, &L->q, &L->k, &L->v, &L->o, &L->gate_up, &L->gate, &L->up, &L->down};
            for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) wk_linear_free(ls[i]);
        }
    free(m->layers);
    wk_linear_free(&m->output);
    wk_embedding_layer_free(&m->tok_embd);
    wk_norm_layer_free(&m->out_norm);
    for (int i = 0; i < WK__LM_ROPE_SETS; i++) {
        wk_tensor_free(m->rope[i].cos);
        wk_tensor_free(m->rope[i].sin);
        free(m->rope[i].inv);
    }
    free(m->rope_inv_long);
    free(m->layer_flags);
    wk_tokenizer_free(m->tok);
    free(m->chat_template);
    free(m->pp);
    free(m);
}

const wk_lm_config *wk_lm_config_of(const wk_lm *m) { return m ? &m->cfg : NULL; }
const wk_tokenizer *wk_lm_tokenizer(const wk_lm *m) { return m ? m->tok : NULL; }
const char *wk_lm_chat_template(const wk_lm *m) { return m ? m->chat_template : NULL; }
