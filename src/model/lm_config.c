/* wk_lm_config from a GGUF file's <arch>.* metadata or from an HF
 * config.json: the common reader takes every key some family uses (into
 * the config's common fields and a wk__lm_raw), the family's finish() turns
 * them into its features, and one consistency check follows. */
#include "model/lm_internal.h"
#include "model/lm_arch.h"
#include "wick/gguf.h"
#include "wick/lm.h"
#include "base/error.h"
#include "io/json.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_lm_load";

static void config_defaults(wk_lm_config *c) {
    memset(c, 0, sizeof *c);
    c->rope_theta = 10000.0;
    c->rms_eps = 1e-5;
    snprintf(c->rope_scaling, sizeof c->rope_scaling, "none");
    c->rope_factor = 1.0;
    c->rope_low_freq_factor = 1.0;
    c->rope_high_freq_factor = 4.0;
    c->bos = -1;
    c->eos = -1;
}

static void raw_defaults(wk__lm_raw *r) {
    memset(r, 0, sizeof *r);
    r->use_sliding_window = -1;
    r->max_window_layers = -1;
    r->attention_bias = -1;
    r->mlp_bias = -1;
}

/* ------------------------------------------------------------------ GGUF */

/* Integer metadata of any integer type (converters differ: u32, i32, u64).
 * Returns 1 found, 0 absent, -1 present but not an integer (recorded). */
static int gguf_int(const wk_gguf *g, const char *key, int64_t *out) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return 0;
    wk_status s = WK_ERR_DTYPE;
    switch (wk_gguf_kv_type(g, i)) {
    case WK_GGUF_U8: { uint8_t v; s = wk_gguf_get_u8(g, i, &v); *out = v; break; }
    case WK_GGUF_I8: { int8_t v; s = wk_gguf_get_i8(g, i, &v); *out = v; break; }
    case WK_GGUF_U16: { uint16_t v; s = wk_gguf_get_u16(g, i, &v); *out = v; break; }
    case WK_GGUF_I16: { int16_t v; s = wk_gguf_get_i16(g, i, &v); *out = v; break; }
    case WK_GGUF_U32: { uint32_t v; s = wk_gguf_get_u32(g, i, &v); *out = v; break; }
    case WK_GGUF_I32: { int32_t v; s = wk_gguf_get_i32(g, i, &v); *out = v; break; }
    case WK_GGUF_U64: {
        uint64_t v;
        s = wk_gguf_get_u64(g, i, &v);
        if (s == WK_OK && v > (uint64_t)INT64_MAX) s = WK_ERR_FORMAT;
        *out = (int64_t)v;
        break;
    }
    case WK_GGUF_I64: s = wk_gguf_get_i64(g, i, out); break;
    case WK_GGUF_F32: case WK_GGUF_F64: case WK_GGUF_BOOL: case WK_GGUF_STRING: case WK_GGUF_ARRAY:
    case WK_GGUF_TYPE_COUNT: s = WK_ERR_DTYPE; break;
    }
    if (s != WK_OK) {
        wk__err(WK_ERR_FORMAT, OP, "metadata %s must be an integer (it is %s)", key,
                wk_gguf_type_name(wk_gguf_kv_type(g, i)));
        return -1;
    }
    return 1;
}

static int gguf_float(const wk_gguf *g, const char *key, double *out) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return 0;
    wk_gguf_type t = wk_gguf_kv_type(g, i);
    if (t == WK_GGUF_F32) {
        float v;
        if (wk_gguf_get_f32(g, i, &v) == WK_OK) { *out = v; return 1; }
    } else if (t == WK_GGUF_F64) {
        if (wk_gguf_get_f64(g, i, out) == WK_OK) return 1;
    } else {
        int64_t v;
        int r = gguf_int(g, key, &v);
        if (r == 1) { *out = (double)v; return 1; }
        if (r < 0) wk_clear_error();
    }
    wk__err(WK_ERR_FORMAT, OP, "metadata %s must be a number (it is %s)", key, wk_gguf_type_name(t));
    return -1;
}

/* A string value copied into out (NUL-terminated, truncated to cap). */
static int gguf_str(const wk_gguf *g, const char *key, char *out, size_t cap) {
    int64_t i = wk_gguf_find_key(g, key);
    if (i < 0) return 0;
    const char *s;
    uint64_t n;
    if (wk_gguf_get_string(g, i, &s, &n) != WK_OK) {
        wk__err(WK_ERR_FORMAT, OP, "metadata %s must be a string", key);
        return -1;
    }
    size_t m = n < cap - 1 ? (size_t)n : cap - 1;
    memcpy(out, s, m);
    out[m] = 0;
    return 1;
}

/* Required integer key "<arch>.<suffix>". */
static bool need_int(const wk_gguf *g, const char *arch, const char *suffix, int64_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int r = gguf_int(g, key, out);
    if (r == 0) wk__err(WK_ERR_FORMAT, OP, "GGUF metadata %s is missing", key);
    return r == 1;
}

static bool opt_int(const wk_gguf *g, const char *arch, const char *suffix, int64_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_int(g, key, out) >= 0;
}

static bool opt_float(const wk_gguf *g, const char *arch, const char *suffix, double *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_float(g, key, out) >= 0;
}

wk_status wk__lm_config_from_gguf(const wk_gguf *g, wk_lm_config *c, wk__lm_raw *r, const wk__lm_arch **arch) {
    config_defaults(c);
    raw_defaults(r);
    r->gguf = true;
    char arch_name[64] = "";
    int rs = gguf_str(g, "general.architecture", arch_name, sizeof arch_name);
    if (rs < 0) return wk_last_status();
    if (rs == 0) return wk__err(WK_ERR_FORMAT, OP, "GGUF metadata general.architecture is missing");
    snprintf(r->model_type, sizeof r->model_type, "%s", arch_name);
    if (!(*arch = wk__lm_arch_find(arch_name, true))) return wk_last_status();
    const char *A = arch_name;
    if (!need_int(g, A, "embedding_length", &c->dim) || !need_int(g, A, "block_count", &c->n_layers) ||
        !need_int(g, A, "feed_forward_length", &c->ffn_dim) || !need_int(g, A, "attention.head_count", &c->n_heads))
        return wk_last_status();
    c->n_kv_heads = c->n_heads;
    c->max_ctx = 2048;
    if (!opt_int(g, A, "attention.head_count_kv", &c->n_kv_heads) || !opt_int(g, A, "context_length", &c->max_ctx))
        return wk_last_status();
    c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    /* key_length overrides dim / heads (Qwen3, Gemma); value_length must agree */
    if (!opt_int(g, A, "attention.key_length", &c->head_dim)) return wk_last_status();
    int64_t vdim = c->head_dim;
    if (!opt_int(g, A, "rope.dimension_count", &r->rope_dims) || !opt_int(g, A, "attention.value_length", &vdim))
        return wk_last_status();
    if (vdim != c->head_dim)
        return wk__err(WK_ERR_FORMAT, OP, "%s.attention.value_length %lld differs from the key length %lld", A,
                       (long long)vdim, (long long)c->head_dim);
    if (!opt_float(g, A, "rope.freq_base", &c->rope_theta) ||
        !opt_float(g, A, "attention.layer_norm_rms_epsilon", &c->rms_eps))
        return wk_last_status();
    char key[128], stype[32] = "";
    snprintf(key, sizeof key, "%s.rope.scaling.type", A);
    if (gguf_str(g, key, stype, sizeof stype) < 0) return wk_last_status();
    if (stype[0] && strcmp(stype, "none") != 0) {
        if (strcmp(stype, "linear") != 0)
            return wk__err(WK_ERR_FORMAT, OP, "rope scaling type '%s' is not supported (none, linear)", stype);
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "linear");
        if (!opt_float(g, A, "rope.scaling.factor", &c->rope_factor)) return wk_last_status();
    }
    if (!opt_int(g, A, "rope.scaling.original_context_length", &c->rope_orig_ctx) ||
        !opt_float(g, A, "rope.scaling.attn_factor", &r->rope_attn_factor))
        return wk_last_status();
    /* the family keys: absent ones stay 0 */
    if (!opt_int(g, A, "attention.sliding_window", &r->sliding_window) ||
        !opt_int(g, A, "attention.sliding_window_pattern", &r->sliding_window_pattern) ||
        !opt_float(g, A, "attn_logit_softcapping", &r->attn_softcap) ||
        !opt_float(g, A, "final_logit_softcapping", &r->final_softcap) ||
        !opt_float(g, A, "attention.query_pre_attn_scalar", &r->query_pre_attn_scalar))
        return wk_last_status();
    c->vocab = 0;
    if (!opt_int(g, A, "vocab_size", &c->vocab)) return wk_last_status();
    if (c->vocab == 0) {
        int64_t ti = wk_gguf_find_tensor(g, "token_embd.weight");
        int64_t sh[4];
        if (ti >= 0 && wk_gguf_tensor_shape(g, ti, sh) == 2) c->vocab = sh[0];
    }
    int64_t bos = -1, eos = -1;
    if (gguf_int(g, "tokenizer.ggml.bos_token_id", &bos) < 0 || gguf_int(g, "tokenizer.ggml.eos_token_id", &eos) < 0)
        return wk_last_status();
    c->bos = bos >= 0 && bos < c->vocab ? (int32_t)bos : -1;
    c->eos = eos >= 0 && eos < c->vocab ? (int32_t)eos : -1;
    c->tied_embeddings = wk_gguf_find_tensor(g, "output.weight") < 0;
    /* Phi-3's LongRoPE lives in two factor tensors */
    if (wk_gguf_find_tensor(g, "rope_factors_long.weight") >= 0 ||
        wk_gguf_find_tensor(g, "rope_factors_short.weight") >= 0)
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "longrope");
    return WK_OK;
}

/* ----------------------------------------------------------- config.json */

static bool json_number(wk__json *p, double *out) {
    const char *s;
    size_t n;
    if (!wk__json_number_text(p, &s, &n)) return false;
    char buf[64];
    if (n >= sizeof buf) return wk__json_fail(p, "number too long");
    memcpy(buf, s, n);
    buf[n] = 0;
    *out = strtod(buf, NULL);
    return true;
}

/* The one conversion of a config number to an integer (config.json's
 * numbers are doubles: 8192 and 8192.0 both occur): d must be a whole
 * number in [lo, hi]. NaN, infinities, fractions and values out of range
 * are refused naming the key; a cast of them to int64_t would be undefined. */
#define JSON_INT_MAX ((int64_t)1 << 53) /* every integer up to here is exact in a double */
static bool json_to_int(wk__json *p, const char *key, double d, int64_t lo, int64_t hi, int64_t *out) {
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return wk__json_fail(p, "\"%s\" is %g, not an integer in [%lld, %lld]", key, d, (long long)lo,
                             (long long)hi);
    *out = (int64_t)d;
    return true;
}

static bool json_int(wk__json *p, const char *key, int64_t *out) {
    double d = 0;
    if (wk__json_peek(p) != WK__JSON_NUMBER) return wk__json_fail(p, "\"%s\" must be a number", key);
    if (!json_number(p, &d)) return false;
    return json_to_int(p, key, d, -JSON_INT_MAX, JSON_INT_MAX, out);
}

/* A number or null (null leaves *out as it is). */
static bool json_opt_number(wk__json *p, const char *key, double *out) {
    if (wk__json_peek(p) == WK__JSON_NULL) return wk__json_null(p);
    if (wk__json_peek(p) != WK__JSON_NUMBER) return wk__json_fail(p, "\"%s\" must be a number", key);
    return json_number(p, out);
}

/* An integer, the first integer of an array (eos_token_id may be a list), or null. */
static bool json_token_id(wk__json *p, const char *key, int32_t *out) {
    wk__json_type t = wk__json_peek(p);
    if (t == WK__JSON_NULL) return wk__json_null(p);
    if (t == WK__JSON_ARRAY) {
        bool first = true;
        if (!wk__json_array(p)) return false;
        while (wk__json_item(p)) {
            int64_t v;
            if (first) {
                if (!json_int(p, key, &v)) return false;
                *out = v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
                first = false;
            } else if (!wk__json_skip(p)) {
                return false;
            }
        }
        return !p->failed;
    }
    int64_t v;
    if (!json_int(p, key, &v)) return false;
    *out = v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
    return true;
}

static bool json_str(wk__json *p, const char *key, char *out, size_t cap) {
    const char *s;
    size_t n;
    if (wk__json_peek(p) != WK__JSON_STRING) return wk__json_fail(p, "\"%s\" must be a string", key);
    if (!wk__json_string(p, &s, &n)) return false;
    snprintf(out, cap, "%.*s", (int)n, s);
    return true;
}

/* A list of numbers into a new float array (NULL on failure). */
static bool json_floats(wk__json *p, const char *key, float **out, int64_t *n) {
    free(*out);
    *out = NULL;
    *n = 0;
    if (wk__json_peek(p) != WK__JSON_ARRAY) return wk__json_fail(p, "\"%s\" must be a list of numbers", key);
    if (!wk__json_array(p)) return false;
    int64_t cap = 0;
    while (wk__json_item(p)) {
        double d = 0;
        if (wk__json_peek(p) != WK__JSON_NUMBER) return wk__json_fail(p, "\"%s\" must be a list of numbers", key);
        if (!json_number(p, &d)) return false;
        if (*n == cap) {
            if (cap >= (1 << 20)) return wk__json_fail(p, "\"%s\" is longer than 2^20 entries", key);
            cap = cap ? cap * 2 : 64;
            float *nf = realloc(*out, sizeof(float) * (size_t)cap);
            if (!nf) {
                p->oom = true;
                return wk__json_fail(p, "out of memory");
            }
            *out = nf;
        }
        (*out)[(*n)++] = (float)d;
    }
    return !p->failed;
}

/* A list of per-layer values into bytes: strings (layer_types: 1 for
 * "sliding_attention") or integers (no_rope_layers: the value != 0). */
static bool json_layer_list(wk__json *p, const char *key, uint8_t **out, int64_t *n) {
    free(*out);
    *out = NULL;
    *n = 0;
    if (wk__json_peek(p) == WK__JSON_NULL) return wk__json_null(p);
    if (wk__json_peek(p) != WK__JSON_ARRAY) return wk__json_fail(p, "\"%s\" must be a list", key);
    if (!wk__json_array(p)) return false;
    int64_t cap = 0;
    while (wk__json_item(p)) {
        uint8_t v;
        wk__json_type t = wk__json_peek(p);
        if (t == WK__JSON_STRING) {
            const char *sv;
            size_t sl;
            if (!wk__json_string(p, &sv, &sl)) return false;
            if (!strcmp(sv, "sliding_attention")) v = 1;
            else if (!strcmp(sv, "full_attention")) v = 0;
            else return wk__json_fail(p, "\"%s\": layer type '%s' is not supported (sliding_attention, full_attention)", key, sv);
        } else if (t == WK__JSON_NUMBER) {
            int64_t iv;
            if (!json_int(p, key, &iv)) return false;
            v = iv != 0;
        } else {
            return wk__json_fail(p, "\"%s\" must be a list of strings or integers", key);
        }
        if (*n == cap) {
            if (cap >= (1 << 16)) return wk__json_fail(p, "\"%s\" is longer than 65536 entries", key);
            cap = cap ? cap * 2 : 64;
            uint8_t *nb = realloc(*out, (size_t)cap);
            if (!nb) {
                p->oom = true;
                return wk__json_fail(p, "out of memory");
            }
            *out = nb;
        }
        (*out)[(*n)++] = v;
    }
    return !p->failed;
}

static bool json_rope(wk__json *p, wk_lm_config *c, wk__lm_raw *r, bool sliding);

/* rope_parameters keyed by layer type (transformers 5's Gemma 3): the
 * full-attention entry is the model's RoPE, the sliding one the local base. */
static bool json_rope_by_layer(wk__json *p, wk_lm_config *c, wk__lm_raw *r) {
    const char *key;
    size_t kl;
    while (wk__json_key(p, &key, &kl)) {
        bool ok;
        if (!strcmp(key, "full_attention")) ok = json_rope(p, c, r, false);
        else if (!strcmp(key, "sliding_attention")) ok = json_rope(p, c, r, true);
        else ok = wk__json_fail(p, "rope_parameters: layer type '%s' is not supported", key);
        if (!ok) return false;
    }
    return !p->failed;
}

/* rope_scaling / rope_parameters: {"rope_type"|"type": ..., "factor": ..., ...}
 * (sliding: the entry for the local layers, whose base is all wick takes:
 * any scaling there is refused) */
static bool json_rope(wk__json *p, wk_lm_config *c, wk__lm_raw *r, bool sliding) {
    if (wk__json_peek(p) == WK__JSON_NULL) return wk__json_null(p);
    if (wk__json_peek(p) != WK__JSON_OBJECT) return wk__json_fail(p, "rope scaling must be an object or null");
    if (!wk__json_object(p)) return false;
    const char *key;
    size_t kl;
    char type[32] = "";
    bool first = true;
    double local_theta = 0;
    while (wk__json_key(p, &key, &kl)) {
        char k[64];
        snprintf(k, sizeof k, "%s", key);
        if (first && !sliding && (!strcmp(k, "full_attention") || !strcmp(k, "sliding_attention"))) {
            /* re-dispatch this key inside the per-layer-type form */
            bool ok = !strcmp(k, "full_attention") ? json_rope(p, c, r, false) : json_rope(p, c, r, true);
            return ok && json_rope_by_layer(p, c, r);
        }
        first = false;
        bool ok;
        if (!strcmp(k, "rope_type") || !strcmp(k, "type")) ok = json_str(p, k, type, sizeof type);
        else if (!strcmp(k, "rope_theta")) ok = json_opt_number(p, k, sliding ? &local_theta : &c->rope_theta);
        else if (sliding) ok = wk__json_skip(p);
        else if (!strcmp(k, "factor")) ok = json_opt_number(p, k, &c->rope_factor);
        else if (!strcmp(k, "low_freq_factor")) ok = json_opt_number(p, k, &c->rope_low_freq_factor);
        else if (!strcmp(k, "high_freq_factor")) ok = json_opt_number(p, k, &c->rope_high_freq_factor);
        else if (!strcmp(k, "attention_factor")) ok = json_opt_number(p, k, &r->rope_attn_factor);
        else if (!strcmp(k, "partial_rotary_factor")) ok = json_opt_number(p, k, &r->partial_rotary);
        else if (!strcmp(k, "long_factor")) ok = json_floats(p, k, &r->long_factor, &r->n_long);
        else if (!strcmp(k, "short_factor")) ok = json_floats(p, k, &r->short_factor, &r->n_short);
        else if (!strcmp(k, "original_max_position_embeddings")) {
            double d = 0; /* null: 0, "not given" */
            ok = json_opt_number(p, k, &d) && json_to_int(p, k, d, 0, JSON_INT_MAX, &c->rope_orig_ctx);
        } else ok = wk__json_skip(p);
        if (!ok) return false;
    }
    if (p->failed) return false;
    bool plain = !type[0] || !strcmp(type, "default") || !strcmp(type, "none");
    if (sliding) {
        if (!plain) return wk__json_fail(p, "rope scaling type '%s' on sliding layers is not supported", type);
        if (local_theta > 0) r->rope_local_theta = local_theta;
        return true;
    }
    if (plain) {
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "none");
    } else if (!strcmp(type, "linear") || !strcmp(type, "llama3") || !strcmp(type, "longrope")) {
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "%s", type);
    } else if (!strcmp(type, "su")) {
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "longrope");
    } else {
        return wk__json_fail(p, "rope scaling type '%s' is not supported (default, linear, llama3, longrope)", type);
    }
    return true;
}

/* null or an integer (null: 0) */
static bool json_opt_int(wk__json *p, const char *key, int64_t *out) {
    if (wk__json_peek(p) == WK__JSON_NULL) {
        *out = 0;
        return wk__json_null(p);
    }
    return json_int(p, key, out);
}

/* true / false / null (null: absent, -1) */
static bool json_tristate(wk__json *p, int *out) {
    if (wk__json_peek(p) == WK__JSON_NULL) return wk__json_null(p);
    bool b;
    if (!wk__json_bool(p, &b)) return false;
    *out = b;
    return true;
}

wk_status wk__lm_config_from_json(const char *json, size_t len, const char *path, wk_lm_config *c, wk__lm_raw *r,
                                  const wk__lm_arch **arch) {
    config_defaults(c);
    raw_defaults(r);
    r->src = path;
    c->rms_eps = 1e-6; /* transformers' LlamaConfig default */
    c->max_ctx = 2048;
    c->tied_embeddings = false;
    int64_t head_dim = 0, kv_heads = -1;
    wk__json p;
    wk__json_init(&p, json, len);
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "config must be a JSON object");
    else if (wk__json_object(&p)) {
        const char *key;
        size_t kl;
        while (wk__json_key(&p, &key, &kl)) {
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            bool ok;
            if (!strcmp(k, "model_type")) ok = json_str(&p, k, r->model_type, sizeof r->model_type);
            else if (!strcmp(k, "vocab_size")) ok = json_int(&p, k, &c->vocab);
            else if (!strcmp(k, "hidden_size")) ok = json_int(&p, k, &c->dim);
            else if (!strcmp(k, "intermediate_size")) ok = json_int(&p, k, &c->ffn_dim);
            else if (!strcmp(k, "num_hidden_layers")) ok = json_int(&p, k, &c->n_layers);
            else if (!strcmp(k, "num_attention_heads")) ok = json_int(&p, k, &c->n_heads);
            else if (!strcmp(k, "num_key_value_heads")) {
                if (wk__json_peek(&p) == WK__JSON_NULL) ok = wk__json_null(&p);
                else ok = json_int(&p, k, &kv_heads);
            } else if (!strcmp(k, "head_dim")) ok = json_opt_int(&p, k, &head_dim);
            else if (!strcmp(k, "max_position_embeddings")) ok = json_int(&p, k, &c->max_ctx);
            else if (!strcmp(k, "rope_theta")) ok = json_opt_number(&p, k, &c->rope_theta);
            else if (!strcmp(k, "rms_norm_eps")) ok = json_opt_number(&p, k, &c->rms_eps);
            else if (!strcmp(k, "rope_scaling") || !strcmp(k, "rope_parameters")) ok = json_rope(&p, c, r, false);
            else if (!strcmp(k, "tie_word_embeddings")) ok = wk__json_bool(&p, &c->tied_embeddings);
            else if (!strcmp(k, "bos_token_id")) ok = json_token_id(&p, k, &c->bos);
            else if (!strcmp(k, "eos_token_id")) ok = json_token_id(&p, k, &c->eos);
            else if (!strcmp(k, "hidden_act") || !strcmp(k, "hidden_activation")) {
                if (wk__json_peek(&p) == WK__JSON_NULL) ok = wk__json_null(&p);
                else ok = json_str(&p, k, r->act, sizeof r->act);
            } else if (!strcmp(k, "sliding_window")) ok = json_opt_int(&p, k, &r->sliding_window);
            else if (!strcmp(k, "use_sliding_window")) ok = json_tristate(&p, &r->use_sliding_window);
            else if (!strcmp(k, "max_window_layers")) ok = json_opt_int(&p, k, &r->max_window_layers);
            else if (!strcmp(k, "sliding_window_pattern")) ok = json_opt_int(&p, k, &r->sliding_window_pattern);
            else if (!strcmp(k, "layer_types")) ok = json_layer_list(&p, k, &r->layer_sliding, &r->n_layer_types);
            else if (!strcmp(k, "no_rope_layers")) ok = json_layer_list(&p, k, &r->rope_layers, &r->n_rope_layers);
            else if (!strcmp(k, "no_rope_layer_interval")) ok = json_opt_int(&p, k, &r->no_rope_interval);
            else if (!strcmp(k, "attention_bias")) ok = json_tristate(&p, &r->attention_bias);
            else if (!strcmp(k, "mlp_bias")) ok = json_tristate(&p, &r->mlp_bias);
            else if (!strcmp(k, "query_pre_attn_scalar")) ok = json_opt_number(&p, k, &r->query_pre_attn_scalar);
            else if (!strcmp(k, "attn_logit_softcapping")) ok = json_opt_number(&p, k, &r->attn_softcap);
            else if (!strcmp(k, "final_logit_softcapping")) ok = json_opt_number(&p, k, &r->final_softcap);
            else if (!strcmp(k, "rope_local_base_freq")) ok = json_opt_number(&p, k, &r->rope_local_theta);
            else if (!strcmp(k, "partial_rotary_factor")) ok = json_opt_number(&p, k, &r->partial_rotary);
            else if (!strcmp(k, "original_max_position_embeddings")) ok = json_opt_int(&p, k, &r->orig_ctx_top);
            else if (!strcmp(k, "use_bidirectional_attention")) {
                /* Gemma 3's encoder use: no causal mask; wick's decoders are causal */
                bool bidi = false;
                ok = wk__json_peek(&p) == WK__JSON_NULL ? wk__json_null(&p) : wk__json_bool(&p, &bidi);
                if (ok && bidi) ok = wk__json_fail(&p, "use_bidirectional_attention true is not supported by wick");
            }
            else ok = wk__json_skip(&p);
            if (!ok) break;
        }
        if (!p.failed) wk__json_finish(&p);
    }
    if (p.failed) {
        wk_status s = wk__err(p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s: %s", path, p.msg);
        wk__json_free(&p);
        return s;
    }
    wk__json_free(&p);
    if (!r->model_type[0]) return wk__err(WK_ERR_FORMAT, OP, "%s has no model_type", path);
    if (!(*arch = wk__lm_arch_find(r->model_type, false))) return wk_last_status();
    c->n_kv_heads = kv_heads > 0 ? kv_heads : c->n_heads;
    c->head_dim = head_dim > 0 ? head_dim : (c->n_heads > 0 ? c->dim / c->n_heads : 0);
    if (r->partial_rotary > 0 && r->partial_rotary != 1.0) {
        double d = (double)c->head_dim * r->partial_rotary;
        r->rope_dims = (int64_t)d;
        if ((double)r->rope_dims != d || r->rope_dims <= 0 || r->rope_dims > c->head_dim)
            return wk__err(WK_ERR_FORMAT, OP, "%s: partial_rotary_factor %g of head dim %lld is not a whole size",
                           path, r->partial_rotary, (long long)c->head_dim);
    }
    if (!c->rope_orig_ctx && r->orig_ctx_top > 0) c->rope_orig_ctx = r->orig_ctx_top;
    return WK_OK;
}

/* The family's rules on top of the common keys: feature defaults, longrope's
 * attention factor, finish(), then the checks. flags: n_layers bytes. */
wk_status wk__lm_config_finish(const wk__lm_arch *a, const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags,
                               const char *src) {
    snprintf(c->arch, sizeof c->arch, "%s", a->name);
    c->embed_scale = 1.0;
    c->attn_scale = c->head_dim > 0 ? 1.0 / sqrt((double)c->head_dim) : 1.0;
    c->rope_dims = r->rope_dims > 0 ? r->rope_dims : c->head_dim;
    c->rope_attn_factor = 1.0;
    c->rope_interleaved = r->gguf && a->gguf_interleaved;
    wk_status st = wk__lm_config_check(c, src);
    if (st != WK_OK) return st;
    if (!strcmp(c->rope_scaling, "longrope")) {
        if (a != &wk__arch_phi3) return wk__lm_refuse(r, "rope_scaling", "longrope outside Phi-3");
        if (c->rope_orig_ctx <= 0)
            return wk__err(WK_ERR_FORMAT, OP, "%s: longrope needs original_max_position_embeddings", src);
        double factor = (double)c->max_ctx / (double)c->rope_orig_ctx;
        if (r->rope_attn_factor > 0) c->rope_attn_factor = r->rope_attn_factor;
        else if (factor > 1) c->rope_attn_factor = sqrt(1 + log(factor) / log((double)c->rope_orig_ctx));
    }
    if ((st = wk__lm_shared_rules(a, r, c)) != WK_OK || (st = a->finish(r, c, flags)) != WK_OK) return st;
    if (c->rope_dims <= 0 || c->rope_dims > c->head_dim || c->rope_dims % 2)
        return wk__err(WK_ERR_FORMAT, OP, "%s: rope dimensions %lld must be even and at most the head size %lld", src,
                       (long long)c->rope_dims, (long long)c->head_dim);
    if (c->sliding_window < 0 || !(c->attn_softcap >= 0) || !(c->final_softcap >= 0) || !isfinite(c->attn_softcap) ||
        !isfinite(c->final_softcap) || !(c->attn_scale > 0) || !isfinite(c->attn_scale))
        return wk__err(WK_ERR_FORMAT, OP, "%s: sliding window %lld, soft-caps %g / %g and attention scale %g must be "
                       "finite and not negative", src, (long long)c->sliding_window, c->attn_softcap,
                       c->final_softcap, c->attn_scale);
    bool any_sliding = false;
    for (int64_t i = 0; i < c->n_layers; i++) any_sliding |= (flags[i] & WK_LM_SLIDING) != 0;
    if (any_sliding && c->sliding_window <= 0)
        return wk__err(WK_ERR_FORMAT, OP, "%s: %s has sliding-window layers but no window size", src, a->name);
    return WK_OK;
}

/* ---------------------------------------------------------------- checks */

wk_status wk__lm_config_check(const wk_lm_config *c, const char *src) {
    if (c->vocab <= 0 || c->dim <= 0 || c->ffn_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->head_dim <= 0 || c->max_ctx <= 0)
        return wk__err(WK_ERR_FORMAT, OP,
                       "%s: sizes must be positive (vocab %lld, dim %lld, ffn %lld, layers %lld, heads %lld, "
                       "kv heads %lld, head dim %lld, context %lld)",
                       src, (long long)c->vocab, (long long)c->dim, (long long)c->ffn_dim, (long long)c->n_layers,
                       (long long)c->n_heads, (long long)c->n_kv_heads, (long long)c->head_dim, (long long)c->max_ctx);
    /* bounds that keep every product below far below int64 and every tensor
     * allocatable; real models are orders of magnitude inside them */
    if (c->vocab > (1 << 24) || c->dim > (1 << 20) || c->ffn_dim > (1 << 22) || c->n_layers > 4096 ||
        c->n_heads > 4096 || c->head_dim > 4096 || c->max_ctx > (1 << 24))
        return wk__err(WK_ERR_FORMAT, OP, "%s: implausible sizes (vocab %lld, dim %lld, ffn %lld, layers %lld, "
                       "heads %lld, head dim %lld, context %lld)", src, (long long)c->vocab, (long long)c->dim,
                       (long long)c->ffn_dim, (long long)c->n_layers, (long long)c->n_heads, (long long)c->head_dim,
                       (long long)c->max_ctx);
    if (c->n_heads % c->n_kv_heads != 0)
        return wk__err(WK_ERR_FORMAT, OP, "%s: kv heads %lld do not divide heads %lld", src,
                       (long long)c->n_kv_heads, (long long)c->n_heads);
    if (c->head_dim % 2 != 0)
        return wk__err(WK_ERR_FORMAT, OP, "%s: head dim %lld must be even for RoPE", src, (long long)c->head_dim);
    if (!(c->rope_theta > 0) || !(c->rms_eps > 0) || !isfinite(c->rope_theta) || !isfinite(c->rms_eps))
        return wk__err(WK_ERR_FORMAT, OP, "%s: rope theta %g and rms eps %g must be positive", src, c->rope_theta,
                       c->rms_eps);
    if (strcmp(c->rope_scaling, "none") != 0 && (!(c->rope_factor > 0) || !isfinite(c->rope_factor)))
        return wk__err(WK_ERR_FORMAT, OP, "%s: rope scaling factor %g must be positive", src, c->rope_factor);
    if (!strcmp(c->rope_scaling, "llama3") &&
        (c->rope_orig_ctx <= 0 || !(c->rope_high_freq_factor > c->rope_low_freq_factor) ||
         !(c->rope_low_freq_factor > 0)))
        return wk__err(WK_ERR_FORMAT, OP,
                       "%s: llama3 rope scaling needs original_max_position_embeddings > 0 and "
                       "high_freq_factor > low_freq_factor > 0 (got %lld, %g, %g)",
                       src, (long long)c->rope_orig_ctx, c->rope_high_freq_factor, c->rope_low_freq_factor);
    return WK_OK;
}

/* ------------------------------------------------------------ rope tables */

int64_t wk__lm_rope_eager_bytes = (int64_t)16 << 20;

wk__rope_freqs wk__lm_rope_freqs(const wk_lm_config *c, bool local) {
    /* local (sliding) layers of Gemma 3: their own base, no scaling;
     * longrope's factors come as divisors (the loader's freq_factors) */
    wk__rope_freqs p = {.head_dim = c->rope_dims,
                        .theta = local && c->rope_local_theta > 0 ? c->rope_local_theta : c->rope_theta,
                        .scaling = local                                ? WK__ROPE_PLAIN
                                   : !strcmp(c->rope_scaling, "linear") ? WK__ROPE_LINEAR
                                   : !strcmp(c->rope_scaling, "llama3") ? WK__ROPE_LLAMA3
                                                                        : WK__ROPE_PLAIN,
                        .factor = c->rope_factor,
                        .low_freq_factor = c->rope_low_freq_factor,
                        .high_freq_factor = c->rope_high_freq_factor,
                        .orig_ctx = c->rope_orig_ctx};
    return p;
}

char *wk__read_small_file(const char *op, const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        wk__err(WK_ERR_IO, op, "cannot open %s", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            if (cap > ((size_t)1 << 30)) {
                free(buf);
                buf = NULL;
                fclose(f);
                wk__err(WK_ERR_FORMAT, op, "%s is larger than 1 GiB", path);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a buffer for %s", path);
        return NULL;
    }
    if (err) {
        free(buf);
        wk__err(WK_ERR_IO, op, "cannot read %s", path);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}
