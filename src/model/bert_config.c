/* config.json, sentence_bert_config.json and 1_Pooling/config.json of a
 * sentence-transformers BERT directory (bert_internal.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/error.h"
#include "io/json.h"
#include "io/map_file.h"
#include "model/bert_internal.h"

#define OP "wk_bert_load"
/* Far above any BERT (MiniLM: 384 wide, 6 layers), low enough that products
 * of two sizes cannot overflow anything downstream. */
#define MAX_SIZE ((int64_t)1 << 24)
#define MAX_LAYERS 1024
/* Config files are a few hundred bytes; refuse to parse a huge one. */
#define MAX_CONFIG_BYTES ((size_t)1 << 20)

static bool read_double(wk__json *p, const char *key, double *out) {
    const char *s;
    size_t n;
    if (!wk__json_number_text(p, &s, &n)) return false;
    char buf[64];
    if (n >= sizeof buf) return wk__json_fail(p, "\"%s\": number too long", key);
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    if (*end || errno == ERANGE) return wk__json_fail(p, "\"%s\": %s is out of range", key, buf);
    *out = v;
    return true;
}

/* A string value equal to one of the NULL-terminated names; its index in *which. */
static bool read_choice(wk__json *p, const char *key, const char *const *names, int *which) {
    const char *s;
    size_t n;
    if (wk__json_peek(p) != WK__JSON_STRING) return wk__json_fail(p, "\"%s\" must be a string", key);
    if (!wk__json_string(p, &s, &n)) return false;
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) {
            *which = i;
            return true;
        }
    return wk__json_fail(p, "\"%s\" is '%.40s', which wick's BERT does not support", key, s);
}

typedef struct int_key {
    const char *name;
    int64_t *dst;
    int64_t lo, hi;
    bool required, seen;
} int_key;

bool wk__bert_config_parse(const char *json, size_t len, const char *what, wk__bert_config *c) {
    memset(c, 0, sizeof *c);
    int64_t pad = 0;
    int_key keys[] = {
        {"vocab_size", &c->vocab, 1, MAX_SIZE, true, false},
        {"hidden_size", &c->dim, 1, MAX_SIZE, true, false},
        {"num_hidden_layers", &c->layers, 1, MAX_LAYERS, true, false},
        {"num_attention_heads", &c->heads, 1, MAX_SIZE, true, false},
        {"intermediate_size", &c->inter, 1, MAX_SIZE, true, false},
        {"max_position_embeddings", &c->max_pos, 1, MAX_SIZE, true, false},
        {"type_vocab_size", &c->type_vocab, 1, MAX_SIZE, false, false},
        {"pad_token_id", &pad, 0, MAX_SIZE - 1, false, false},
    };
    const int nkeys = (int)(sizeof keys / sizeof keys[0]);
    c->type_vocab = 2;
    c->eps = 1e-12;
    c->act = WK__BERT_GELU_ERF;
    static const char *const acts[] = {"gelu", "gelu_new", "gelu_pytorch_tanh", NULL};
    static const char *const bert[] = {"bert", NULL};
    static const char *const absolute[] = {"absolute", NULL};

    wk__json p;
    wk__json_init(&p, json, len);
    const char *k;
    size_t kl;
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "the document must be an object");
    else if (wk__json_object(&p)) {
        while (wk__json_key(&p, &k, &kl)) {
            char key[64];
            snprintf(key, sizeof key, "%s", k);
            int i = 0;
            while (i < nkeys && strcmp(keys[i].name, key) != 0) i++;
            int which = 0;
            if (i < nkeys) {
                int64_t v;
                if (wk__json_peek(&p) != WK__JSON_NUMBER) {
                    wk__json_fail(&p, "\"%s\" must be an integer", key);
                    break;
                }
                if (!wk__json_int(&p, &v)) break;
                if (v < keys[i].lo || v > keys[i].hi) {
                    wk__json_fail(&p, "\"%s\" is %lld, outside [%lld, %lld]", key, (long long)v, (long long)keys[i].lo,
                                  (long long)keys[i].hi);
                    break;
                }
                *keys[i].dst = v;
                keys[i].seen = true;
            } else if (strcmp(key, "layer_norm_eps") == 0) {
                if (wk__json_peek(&p) != WK__JSON_NUMBER) {
                    wk__json_fail(&p, "\"layer_norm_eps\" must be a number");
                    break;
                }
                if (!read_double(&p, key, &c->eps)) break;
                if (!(c->eps > 0 && c->eps < 1)) {
                    wk__json_fail(&p, "\"layer_norm_eps\" is %g, not in (0, 1)", c->eps);
                    break;
                }
            } else if (strcmp(key, "hidden_act") == 0) {
                if (!read_choice(&p, key, acts, &which)) break;
                c->act = which == 0 ? WK__BERT_GELU_ERF : WK__BERT_GELU_TANH;
            } else if (strcmp(key, "model_type") == 0) {
                if (!read_choice(&p, key, bert, &which)) break;
            } else if (strcmp(key, "position_embedding_type") == 0) {
                if (!read_choice(&p, key, absolute, &which)) break;
            } else if (!wk__json_skip(&p)) {
                break;
            }
        }
    }
    if (!p.failed) wk__json_finish(&p);
    for (int i = 0; i < nkeys && !p.failed; i++)
        if (keys[i].required && !keys[i].seen) wk__json_fail(&p, "\"%s\" is missing", keys[i].name);
    if (!p.failed && c->dim % c->heads != 0)
        wk__json_fail(&p, "num_attention_heads %lld does not divide hidden_size %lld", (long long)c->heads,
                      (long long)c->dim);
    if (!p.failed && pad >= c->vocab)
        wk__json_fail(&p, "pad_token_id %lld is outside the vocabulary of %lld", (long long)pad, (long long)c->vocab);
    bool ok = !p.failed;
    if (!ok) wk__err(p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s: %s", what, p.msg);
    wk__json_free(&p);
    c->pad_id = (int32_t)pad;
    c->max_tokens = c->max_pos;
    return ok;
}

/* Map dir/name when it exists; *m NULL (and true) when it does not. */
static bool open_optional(const char *dir, const char *name, bool required, wk__map **m, char *path, size_t plen) {
    *m = NULL;
    int n = snprintf(path, plen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= plen) {
        wk__err(WK_ERR_ARG, OP, "path too long: %s/%s", dir, name);
        return false;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (!required) return true;
        wk__err(WK_ERR_IO, OP, "%s: %s", path, strerror(errno));
        return false;
    }
    if (!S_ISREG(sb.st_mode) || (size_t)sb.st_size > MAX_CONFIG_BYTES) {
        wk__err(WK_ERR_FORMAT, OP, "%s: not a regular file of at most %zu bytes", path, MAX_CONFIG_BYTES);
        return false;
    }
    *m = wk__map_open(OP, path);
    return *m != NULL;
}

/* sentence_bert_config.json: "max_seq_length" cuts texts (sentence-transformers
 * truncates there, 256 for MiniLM, below the 512 positions). */
static bool parse_st_config(const char *json, size_t len, const char *what, wk__bert_config *c) {
    wk__json p;
    wk__json_init(&p, json, len);
    const char *k;
    size_t kl;
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "the document must be an object");
    else if (wk__json_object(&p)) {
        while (wk__json_key(&p, &k, &kl)) {
            if (strcmp(k, "max_seq_length") == 0) {
                int64_t v;
                if (wk__json_peek(&p) != WK__JSON_NUMBER) {
                    wk__json_fail(&p, "\"max_seq_length\" must be an integer");
                    break;
                }
                if (!wk__json_int(&p, &v)) break;
                if (v < 2) {
                    wk__json_fail(&p, "\"max_seq_length\" %lld leaves no room for [CLS] and [SEP]", (long long)v);
                    break;
                }
                if (v < c->max_tokens) c->max_tokens = v;
            } else if (!wk__json_skip(&p)) {
                break;
            }
        }
    }
    if (!p.failed) wk__json_finish(&p);
    bool ok = !p.failed;
    if (!ok) wk__err(p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s: %s", what, p.msg);
    wk__json_free(&p);
    return ok;
}

/* 1_Pooling/config.json: wick pools by the mean over real tokens only, so any
 * other mode switched on is refused rather than silently ignored. */
static bool parse_pooling(const char *json, size_t len, const char *what) {
    wk__json p;
    wk__json_init(&p, json, len);
    const char *k;
    size_t kl;
    bool mean = false;
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "the document must be an object");
    else if (wk__json_object(&p)) {
        while (wk__json_key(&p, &k, &kl)) {
            if (strncmp(k, "pooling_mode_", 13) == 0 && wk__json_peek(&p) == WK__JSON_BOOL) {
                char key[64];
                snprintf(key, sizeof key, "%s", k);
                bool v;
                if (!wk__json_bool(&p, &v)) break;
                if (strcmp(key, "pooling_mode_mean_tokens") == 0) mean = v;
                else if (v) {
                    wk__json_fail(&p, "\"%s\" is on; wick pools by the mean of the tokens only", key);
                    break;
                }
            } else if (!wk__json_skip(&p)) {
                break;
            }
        }
    }
    if (!p.failed) wk__json_finish(&p);
    if (!p.failed && !mean) wk__json_fail(&p, "\"pooling_mode_mean_tokens\" is not true");
    bool ok = !p.failed;
    if (!ok) wk__err(p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s: %s", what, p.msg);
    wk__json_free(&p);
    return ok;
}

bool wk__bert_config_load(const char *dir, wk__bert_config *c) {
    char path[4096];
    wk__map *m;
    if (!open_optional(dir, "config.json", true, &m, path, sizeof path)) return false;
    bool ok = wk__bert_config_parse((const char *)wk__map_data(m), wk__map_size(m), path, c);
    wk__map_release(m);
    if (ok && (ok = open_optional(dir, "sentence_bert_config.json", false, &m, path, sizeof path)) && m) {
        ok = parse_st_config((const char *)wk__map_data(m), wk__map_size(m), path, c);
        wk__map_release(m);
    }
    if (ok && (ok = open_optional(dir, "1_Pooling/config.json", false, &m, path, sizeof path)) && m) {
        ok = parse_pooling((const char *)wk__map_data(m), wk__map_size(m), path);
        wk__map_release(m);
    }
    return ok;
}

bool wk__bert_lowercase(const char *dir, bool *lower) {
    char path[4096];
    wk__map *m;
    *lower = true;
    if (!open_optional(dir, "tokenizer_config.json", false, &m, path, sizeof path)) return false;
    if (!m) return true;
    wk__json p;
    wk__json_init(&p, wk__map_data(m), wk__map_size(m));
    const char *k;
    size_t kl;
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "the document must be an object");
    else if (wk__json_object(&p)) {
        while (wk__json_key(&p, &k, &kl)) {
            if (strcmp(k, "do_lower_case") == 0 && wk__json_peek(&p) == WK__JSON_BOOL) {
                if (!wk__json_bool(&p, lower)) break;
            } else if (!wk__json_skip(&p)) {
                break;
            }
        }
    }
    if (!p.failed) wk__json_finish(&p);
    bool ok = !p.failed;
    if (!ok) wk__err(p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s: %s", path, p.msg);
    wk__json_free(&p);
    wk__map_release(m);
    return ok;
}
