/* wk_lm_config from a GGUF file's llama.* metadata or from an HF
 * config.json, plus the consistency check both go through. */
#include "model/lm_internal.h"
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

wk_status wk__lm_config_from_gguf(const wk_gguf *g, wk_lm_config *c) {
    config_defaults(c);
    char arch[64] = "";
    int r = gguf_str(g, "general.architecture", arch, sizeof arch);
    if (r < 0) return wk_last_status();
    if (r == 0) return wk__err(WK_ERR_FORMAT, OP, "GGUF metadata general.architecture is missing");
    /* llama.cpp runs these through its llama graph unchanged */
    if (strcmp(arch, "llama") != 0 && strcmp(arch, "mistral") != 0)
        return wk__err(WK_ERR_FORMAT, OP, "unknown architecture '%s'", arch);
    if (!need_int(g, arch, "embedding_length", &c->dim) || !need_int(g, arch, "block_count", &c->n_layers) ||
        !need_int(g, arch, "feed_forward_length", &c->ffn_dim) ||
        !need_int(g, arch, "attention.head_count", &c->n_heads))
        return wk_last_status();
    c->n_kv_heads = c->n_heads;
    c->max_ctx = 2048;
    if (!opt_int(g, arch, "attention.head_count_kv", &c->n_kv_heads) || !opt_int(g, arch, "context_length", &c->max_ctx))
        return wk_last_status();
    c->head_dim = c->n_heads > 0 ? c->dim / c->n_heads : 0;
    /* key_length overrides dim / heads; rope.dimension_count must then agree
     * (wick rotates whole heads, as every Llama does) */
    if (!opt_int(g, arch, "attention.key_length", &c->head_dim)) return wk_last_status();
    int64_t rope_dims = c->head_dim, vdim = c->head_dim;
    if (!opt_int(g, arch, "rope.dimension_count", &rope_dims) || !opt_int(g, arch, "attention.value_length", &vdim))
        return wk_last_status();
    if (rope_dims != c->head_dim || vdim != c->head_dim)
        return wk__err(WK_ERR_FORMAT, OP,
                       "%s.rope.dimension_count %lld / value_length %lld differ from the head size %lld "
                       "(partial rotary embeddings are not supported)",
                       arch, (long long)rope_dims, (long long)vdim, (long long)c->head_dim);
    if (!opt_float(g, arch, "rope.freq_base", &c->rope_theta) ||
        !opt_float(g, arch, "attention.layer_norm_rms_epsilon", &c->rms_eps))
        return wk_last_status();
    char key[128], stype[32] = "";
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (gguf_str(g, key, stype, sizeof stype) < 0) return wk_last_status();
    if (stype[0] && strcmp(stype, "none") != 0) {
        if (strcmp(stype, "linear") != 0)
            return wk__err(WK_ERR_FORMAT, OP, "rope scaling type '%s' is not supported (none, linear)", stype);
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "linear");
        if (!opt_float(g, arch, "rope.scaling.factor", &c->rope_factor)) return wk_last_status();
    }
    if (!opt_int(g, arch, "rope.scaling.original_context_length", &c->rope_orig_ctx)) return wk_last_status();
    c->vocab = 0;
    if (!opt_int(g, arch, "vocab_size", &c->vocab)) return wk_last_status();
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
    c->rope_interleaved = true; /* llama.cpp's converter permuted attn_q / attn_k rows for it */
    return wk__lm_config_check(c, "GGUF");
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

/* rope_scaling / rope_parameters: {"rope_type"|"type": ..., "factor": ..., ...} */
static bool json_rope(wk__json *p, wk_lm_config *c) {
    if (wk__json_peek(p) == WK__JSON_NULL) return wk__json_null(p);
    if (wk__json_peek(p) != WK__JSON_OBJECT) return wk__json_fail(p, "rope scaling must be an object or null");
    if (!wk__json_object(p)) return false;
    const char *key;
    size_t kl;
    char type[32] = "";
    while (wk__json_key(p, &key, &kl)) {
        char k[64];
        snprintf(k, sizeof k, "%s", key);
        bool ok;
        if (!strcmp(k, "rope_type") || !strcmp(k, "type")) ok = json_str(p, k, type, sizeof type);
        else if (!strcmp(k, "factor")) ok = json_opt_number(p, k, &c->rope_factor);
        else if (!strcmp(k, "low_freq_factor")) ok = json_opt_number(p, k, &c->rope_low_freq_factor);
        else if (!strcmp(k, "high_freq_factor")) ok = json_opt_number(p, k, &c->rope_high_freq_factor);
        else if (!strcmp(k, "rope_theta")) ok = json_opt_number(p, k, &c->rope_theta);
        else if (!strcmp(k, "original_max_position_embeddings")) {
            double d = 0; /* null: 0, "not given" */
            ok = json_opt_number(p, k, &d) && json_to_int(p, k, d, 0, JSON_INT_MAX, &c->rope_orig_ctx);
        } else ok = wk__json_skip(p);
        if (!ok) return false;
    }
    if (p->failed) return false;
    if (!type[0] || !strcmp(type, "default") || !strcmp(type, "none")) {
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "none");
    } else if (!strcmp(type, "linear") || !strcmp(type, "llama3")) {
        snprintf(c->rope_scaling, sizeof c->rope_scaling, "%s", type);
    } else {
        return wk__json_fail(p, "rope scaling type '%s' is not supported (default, linear, llama3)", type);
    }
    return true;
}

wk_status wk__lm_config_from_json(const char *json, size_t len, const char *path, wk_lm_config *c) {
    config_defaults(c);
    c->rms_eps = 1e-6; /* transformers' LlamaConfig default */
    c->max_ctx = 2048;
    c->tied_embeddings = false;
    c->rope_interleaved = false;
    int64_t head_dim = 0, kv_heads = -1;
    char model_type[64] = "";
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
            if (!strcmp(k, "model_type")) ok = json_str(&p, k, model_type, sizeof model_type);
            else if (!strcmp(k, "vocab_size")) ok = json_int(&p, k, &c->vocab);
            else if (!strcmp(k, "hidden_size")) ok = json_int(&p, k, &c->dim);
            else if (!strcmp(k, "intermediate_size")) ok = json_int(&p, k, &c->ffn_dim);
            else if (!strcmp(k, "num_hidden_layers")) ok = json_int(&p, k, &c->n_layers);
            else if (!strcmp(k, "num_attention_heads")) ok = json_int(&p, k, &c->n_heads);
            else if (!strcmp(k, "num_key_value_heads")) {
                if (wk__json_peek(&p) == WK__JSON_NULL) ok = wk__json_null(&p);
                else ok = json_int(&p, k, &kv_heads);
            } else if (!strcmp(k, "head_dim")) {
                if (wk__json_peek(&p) == WK__JSON_NULL) ok = wk__json_null(&p);
                else ok = json_int(&p, k, &head_dim);
            } else if (!strcmp(k, "max_position_embeddings")) ok = json_int(&p, k, &c->max_ctx);
            else if (!strcmp(k, "rope_theta")) ok = json_opt_number(&p, k, &c->rope_theta);
            else if (!strcmp(k, "rms_norm_eps")) ok = json_opt_number(&p, k, &c->rms_eps);
            else if (!strcmp(k, "rope_scaling") || !strcmp(k, "rope_parameters")) ok = json_rope(&p, c);
            else if (!strcmp(k, "tie_word_embeddings")) ok = wk__json_bool(&p, &c->tied_embeddings);
            else if (!strcmp(k, "bos_token_id")) ok = json_token_id(&p, k, &c->bos);
            else if (!strcmp(k, "eos_token_id")) ok = json_token_id(&p, k, &c->eos);
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
    if (strcmp(model_type, "llama") != 0 && strcmp(model_type, "mistral") != 0)
        return wk__err(WK_ERR_FORMAT, OP, "unknown architecture '%s' (%s model_type)", model_type, path);
    c->n_kv_heads = kv_heads > 0 ? kv_heads : c->n_heads;
    c->head_dim = head_dim > 0 ? head_dim : (c->n_heads > 0 ? c->dim / c->n_heads : 0);
    return wk__lm_config_check(c, path);
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

wk__rope_freqs wk__lm_rope_freqs(const wk_lm_config *c) {
    wk__rope_freqs p = {.head_dim = c->head_dim,
                        .theta = c->rope_theta,
                        .scaling = !strcmp(c->rope_scaling, "linear")   ? WK__ROPE_LINEAR
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
