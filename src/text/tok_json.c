/* Tokenizer from an HF tokenizer.json, read with the strict pull parser
 * (src/io/json.h). Every object's fields are collected before its "type"
 * is looked at (the type key may come last), then the pieces are checked
 * against what wick implements; anything else is WK_ERR_FORMAT naming it
 * rather than a tokenizer that silently differs from HF.
 * Supported: model BPE (byte-level: ByteLevel pre-tokenizer alone, in a
 * Sequence after Digits(individual_digits), or after a Split with the
 * Llama-3 / Qwen2 regex) or WordPiece (BertNormalizer + BertPreTokenizer);
 * post_processor ByteLevel / TemplateProcessing / BertProcessing /
 * RobertaProcessing / a Sequence of them; decoder ByteLevel or WordPiece.
 * truncation and padding are not applied (the caller sizes its batches). */
#include <stdio.h>
#include "wick/tokenizer.h"
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "io/json.h"
#include "io/map_file.h"
#include "text/tok_internal.h"

static const char OP[] = "wk_tokenizer_from_json";

typedef struct jstr { char *s; size_t n; int64_t id; } jstr;
typedef struct jvec { jstr *v; size_t n, cap; } jvec;

typedef struct jadded { jstr content; int64_t id; bool special, lstrip, rstrip, single_word, normalized; } jadded;

enum { MAX_PRE = 8, MAX_POST = 8, MAX_SPECIAL = 16, MAX_NORM = 8, MAX_DEC = 8 };
typedef struct jpre {
    char type[32];
    bool individual_digits, use_regex, add_prefix_space, has_add_prefix_space;
    char *regex;
    char behavior[16];
    bool invert;
    char replacement[8], prepend_scheme[16]; /* Metaspace */
    bool split;
} jpre;
/* A normalizer or decoder part (Sequence flattened): the fields of the
 * kinds wick knows; which ones count depends on type. */
typedef struct jpart {
    char type[32];
    char *pattern, *content, *prepend; /* Replace {pattern: {String}}, content; Prepend */
    int64_t start, stop;                /* Strip */
    char replacement[8], prepend_scheme[16];
    bool add_prefix_space, has_add_prefix_space;
} jpart;
typedef struct jspecial { char *name; int32_t ids[4]; int nids; } jspecial;
typedef struct jpost {
    char type[32];
    char *single[8]; /* template items: NULL is $A, else a special token's name */
    int nsingle;
    char *cls, *sep;
    int64_t cls_id, sep_id;
} jpost;

typedef struct jdoc {
    wk__json p;
    jvec vocab, merges_a, merges_b;
    jadded *added;
    size_t nadded, capadded;
    bool has_norm;
    char norm_type[32];
    jpart norm[MAX_NORM], dec[MAX_DEC];
    int nnorm, ndec;
    bool clean_text, chinese, lowercase;
    int strip_accents; /* -1 null */
    jpre pre[MAX_PRE];
    int npre;
    jpost post[MAX_POST];
    int npost;
    jspecial special[MAX_SPECIAL];
    int nspecial;
    char dec_type[32];
    char dec_prefix[16];
    bool dec_cleanup;
    char model_type[32];
    char *unk;
    char cont_prefix[16];
    bool has_cont_prefix;
    int64_t max_chars;
    bool ignore_merges, byte_fallback, fuse_unk;
    char *end_suffix;
    bool oom;
} jdoc;

static bool jcopy(jdoc *d, char **out, size_t *n) {
    const char *s;
    size_t len;
    if (!wk__json_string(&d->p, &s, &len)) return false;
    char *c = malloc(len + 1);
    if (!c) {
        d->oom = true;
        return wk__json_fail(&d->p, "out of memory");
    }
    memcpy(c, s, len + 1);
    free(*out);
    *out = c;
    if (n) *n = len;
    return true;
}

/* A short string into a fixed buffer (type names, prefixes). */
static bool jsmall(jdoc *d, char *buf, size_t cap) {
    const char *s;
    size_t len;
    if (!wk__json_string(&d->p, &s, &len)) return false;
    if (len >= cap) return wk__json_fail(&d->p, "string \"%.20s...\" is too long here", s);
    memcpy(buf, s, len + 1);
    return true;
}

static bool jbool_or_null(jdoc *d, int *v) {
    if (wk__json_peek(&d->p) == WK__JSON_NULL) {
        *v = -1;
        return wk__json_null(&d->p);
    }
    bool b;
    if (!wk__json_bool(&d->p, &b)) return false;
    *v = b;
    return true;
}

static bool jbool(jdoc *d, bool *v) { return wk__json_bool(&d->p, v); }

static bool vec_push(jdoc *d, jvec *v, char *s, size_t n, int64_t id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        jstr *q = realloc(v->v, cap * sizeof *q);
        if (!q) {
            free(s);
            d->oom = true;
            return wk__json_fail(&d->p, "out of memory");
        }
        v->v = q;
        v->cap = cap;
    }
    v->v[v->n++] = (jstr){s, n, id};
    return true;
}

static bool key_is(const char *k, const char *lit) { return strcmp(k, lit) == 0; }

static bool parse_added(jdoc *d) {
    if (!wk__json_array(&d->p)) return false;
    while (wk__json_item(&d->p)) {
        if (d->nadded == d->capadded) {
            size_t cap = d->capadded ? d->capadded * 2 : 64;
            jadded *q = realloc(d->added, cap * sizeof *q);
            if (!q) {
                d->oom = true;
                return wk__json_fail(&d->p, "out of memory");
            }
            d->added = q;
            d->capadded = cap;
        }
        jadded *a = &d->added[d->nadded++];
        memset(a, 0, sizeof *a);
        a->id = -1;
        if (!wk__json_object(&d->p)) return false;
        const char *k;
        size_t kl;
        while (wk__json_key(&d->p, &k, &kl)) {
            bool ok;
            if (key_is(k, "id")) ok = wk__json_int(&d->p, &a->id);
            else if (key_is(k, "content")) ok = jcopy(d, &a->content.s, &a->content.n);
            else if (key_is(k, "special")) ok = jbool(d, &a->special);
            else if (key_is(k, "lstrip")) ok = jbool(d, &a->lstrip);
            else if (key_is(k, "rstrip")) ok = jbool(d, &a->rstrip);
            else if (key_is(k, "single_word")) ok = jbool(d, &a->single_word);
            else if (key_is(k, "normalized")) ok = jbool(d, &a->normalized);
            else ok = wk__json_skip(&d->p);
            if (!ok) return false;
        }
        if (d->p.failed) return false;
        if (a->id < 0 || a->id >= INT32_MAX || !a->content.s)
            return wk__json_fail(&d->p, "added token %zu needs an id in [0, 2^31) and a content", d->nadded - 1);
    }
    return !d->p.failed;
}

/* {"String": "..."} (a Regex pattern is refused where it is used: kept NULL) */
static bool parse_pattern(jdoc *d, char **out) {
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        bool ok = key_is(k, "String") ? jcopy(d, out, NULL) : wk__json_skip(&d->p);
        if (!ok) return false;
    }
    return !d->p.failed;
}

/* One normalizer / decoder object; a Sequence's parts are appended after it. */
static bool parse_part(jdoc *d, jpart *parts, int *np, int cap, const char *what, int depth) {
    if (*np >= cap || depth > 2) return wk__json_fail(&d->p, "%s nests too many parts", what);
    jpart *q = &parts[(*np)++];
    memset(q, 0, sizeof *q);
    q->start = q->stop = -1;
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        bool ok;
        if (key_is(k, "type")) ok = jsmall(d, q->type, sizeof q->type);
        else if (key_is(k, "clean_text")) ok = jbool(d, &d->clean_text);
        else if (key_is(k, "handle_chinese_chars")) ok = jbool(d, &d->chinese);
        else if (key_is(k, "lowercase")) ok = jbool(d, &d->lowercase);
        else if (key_is(k, "strip_accents")) ok = jbool_or_null(d, &d->strip_accents);
        else if (key_is(k, "prefix")) ok = jsmall(d, d->dec_prefix, sizeof d->dec_prefix);
        else if (key_is(k, "cleanup")) ok = jbool(d, &d->dec_cleanup);
        else if (key_is(k, "pattern")) ok = parse_pattern(d, &q->pattern);
        else if (key_is(k, "content")) ok = jcopy(d, &q->content, NULL);
        else if (key_is(k, "prepend")) ok = jcopy(d, &q->prepend, NULL);
        else if (key_is(k, "start")) ok = wk__json_int(&d->p, &q->start);
        else if (key_is(k, "stop")) ok = wk__json_int(&d->p, &q->stop);
        else if (key_is(k, "replacement")) ok = jsmall(d, q->replacement, sizeof q->replacement);
        else if (key_is(k, "prepend_scheme")) ok = jsmall(d, q->prepend_scheme, sizeof q->prepend_scheme);
        else if (key_is(k, "add_prefix_space")) ok = jbool(d, &q->add_prefix_space), q->has_add_prefix_space = true;
        else if (key_is(k, "normalizers") || key_is(k, "decoders")) {
            ok = wk__json_array(&d->p);
            while (ok && wk__json_item(&d->p)) ok = parse_part(d, parts, np, cap, what, depth + 1);
            ok = ok && !d->p.failed;
        } else ok = wk__json_skip(&d->p);
        if (!ok) return false;
    }
    return !d->p.failed;
}

static bool parse_normalizer(jdoc *d) {
    if (wk__json_peek(&d->p) == WK__JSON_NULL) return wk__json_null(&d->p);
    d->has_norm = true;
    d->strip_accents = -1;
    d->clean_text = d->chinese = d->lowercase = true;
    if (!parse_part(d, d->norm, &d->nnorm, MAX_NORM, "normalizer", 0)) return false;
    memcpy(d->norm_type, d->norm[0].type, sizeof d->norm_type);
    return true;
}

static bool parse_pretok(jdoc *d, int depth) {
    if (wk__json_peek(&d->p) == WK__JSON_NULL) return wk__json_null(&d->p);
    if (d->npre >= MAX_PRE || depth > 2) return wk__json_fail(&d->p, "pre_tokenizer nests too many parts");
    jpre *q = &d->pre[d->npre++];
    memset(q, 0, sizeof *q);
    q->use_regex = true;
    q->add_prefix_space = true; /* HF's default for ByteLevel */
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        bool ok;
        if (key_is(k, "type")) ok = jsmall(d, q->type, sizeof q->type);
        else if (key_is(k, "individual_digits")) ok = jbool(d, &q->individual_digits);
        else if (key_is(k, "use_regex")) ok = jbool(d, &q->use_regex);
        else if (key_is(k, "add_prefix_space")) ok = jbool(d, &q->add_prefix_space), q->has_add_prefix_space = true;
        else if (key_is(k, "invert")) ok = jbool(d, &q->invert);
        else if (key_is(k, "replacement")) ok = jsmall(d, q->replacement, sizeof q->replacement);
        else if (key_is(k, "prepend_scheme")) ok = jsmall(d, q->prepend_scheme, sizeof q->prepend_scheme);
        else if (key_is(k, "split")) ok = jbool(d, &q->split);
        else if (key_is(k, "behavior")) ok = jsmall(d, q->behavior, sizeof q->behavior);
        else if (key_is(k, "pattern")) {
            ok = wk__json_object(&d->p);
            while (ok && wk__json_key(&d->p, &k, &kl)) {
                if (key_is(k, "Regex")) ok = jcopy(d, &q->regex, NULL);
                else ok = wk__json_fail(&d->p, "Split pattern kind \"%s\" is not supported (Regex is)", k);
            }
            ok = ok && !d->p.failed;
        } else if (key_is(k, "pretokenizers")) {
            ok = wk__json_array(&d->p);
            while (ok && wk__json_item(&d->p)) ok = parse_pretok(d, depth + 1);
            ok = ok && !d->p.failed;
        } else ok = wk__json_skip(&d->p);
        if (!ok) return false;
    }
    return !d->p.failed;
}

static bool parse_special_tokens(jdoc *d) {
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        if (d->nspecial >= MAX_SPECIAL) return wk__json_fail(&d->p, "too many post_processor special tokens");
        jspecial *s = &d->special[d->nspecial++];
        memset(s, 0, sizeof *s);
        s->name = malloc(kl + 1);
        if (!s->name) {
            d->oom = true;
            return wk__json_fail(&d->p, "out of memory");
        }
        memcpy(s->name, k, kl + 1);
        if (!wk__json_object(&d->p)) return false;
        while (wk__json_key(&d->p, &k, &kl)) {
            bool ok;
            if (key_is(k, "ids")) {
                ok = wk__json_array(&d->p);
                while (ok && wk__json_item(&d->p)) {
                    int64_t v;
                    if (!wk__json_int(&d->p, &v)) return false;
                    if (s->nids >= 4 || v < 0 || v >= INT32_MAX)
                        return wk__json_fail(&d->p, "special token \"%s\": at most 4 ids in [0, 2^31)", s->name);
                    s->ids[s->nids++] = (int32_t)v;
                }
                ok = ok && !d->p.failed;
            } else ok = wk__json_skip(&d->p);
            if (!ok) return false;
        }
        if (d->p.failed) return false;
    }
    return !d->p.failed;
}

/* ["[SEP]", 102] */
static bool parse_tok_pair(jdoc *d, char **name, int64_t *id) {
    if (!wk__json_array(&d->p)) return false;
    if (!wk__json_item(&d->p) || !jcopy(d, name, NULL)) return wk__json_fail(&d->p, "expected [\"token\", id]");
    if (!wk__json_item(&d->p) || !wk__json_int(&d->p, id)) return wk__json_fail(&d->p, "expected [\"token\", id]");
    if (wk__json_item(&d->p)) return wk__json_fail(&d->p, "expected [\"token\", id]");
    return !d->p.failed;
}

static bool parse_template(jdoc *d, jpost *q) {
    if (!wk__json_array(&d->p)) return false;
    while (wk__json_item(&d->p)) {
        if (!wk__json_object(&d->p)) return false;
        const char *k;
        size_t kl;
        while (wk__json_key(&d->p, &k, &kl)) {
            bool special = key_is(k, "SpecialToken"), seq = key_is(k, "Sequence");
            if (!special && !seq) return wk__json_fail(&d->p, "template item \"%s\" is not supported", k);
            if (q->nsingle >= 8) return wk__json_fail(&d->p, "template has more than 8 items");
            int slot = q->nsingle++;
            q->single[slot] = NULL;
            if (!wk__json_object(&d->p)) return false;
            while (wk__json_key(&d->p, &k, &kl)) {
                bool ok;
                if (special && key_is(k, "id")) ok = jcopy(d, &q->single[slot], NULL);
                else ok = wk__json_skip(&d->p);
                if (!ok) return false;
            }
            if (d->p.failed) return false;
            if (special && !q->single[slot]) return wk__json_fail(&d->p, "SpecialToken without an id");
        }
        if (d->p.failed) return false;
    }
    return !d->p.failed;
}

static bool parse_post(jdoc *d, int depth) {
    if (wk__json_peek(&d->p) == WK__JSON_NULL) return wk__json_null(&d->p);
    if (d->npost >= MAX_POST || depth > 2) return wk__json_fail(&d->p, "post_processor nests too many parts");
    jpost *q = &d->post[d->npost++];
    memset(q, 0, sizeof *q);
    q->cls_id = q->sep_id = -1;
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        bool ok;
        if (key_is(k, "type")) ok = jsmall(d, q->type, sizeof q->type);
        else if (key_is(k, "single")) ok = parse_template(d, q);
        else if (key_is(k, "special_tokens")) ok = parse_special_tokens(d);
        else if (key_is(k, "cls")) ok = parse_tok_pair(d, &q->cls, &q->cls_id);
        else if (key_is(k, "sep")) ok = parse_tok_pair(d, &q->sep, &q->sep_id);
        else if (key_is(k, "processors")) {
            ok = wk__json_array(&d->p);
            while (ok && wk__json_item(&d->p)) ok = parse_post(d, depth + 1);
            ok = ok && !d->p.failed;
        } else ok = wk__json_skip(&d->p);
        if (!ok) return false;
    }
    return !d->p.failed;
}

static bool parse_decoder(jdoc *d) {
    if (wk__json_peek(&d->p) == WK__JSON_NULL) return wk__json_null(&d->p);
    d->dec_cleanup = true;
    memcpy(d->dec_prefix, "##", 3);
    if (!parse_part(d, d->dec, &d->ndec, MAX_DEC, "decoder", 0)) return false;
    memcpy(d->dec_type, d->dec[0].type, sizeof d->dec_type);
    return true;
}

/* merges: ["a b", ...] (older files) or [["a", "b"], ...] (newer). */
static bool parse_merges(jdoc *d) {
    if (!wk__json_array(&d->p)) return false;
    while (wk__json_item(&d->p)) {
        char *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        if (wk__json_peek(&d->p) == WK__JSON_STRING) {
            char *s = NULL;
            size_t n = 0;
            if (!jcopy(d, &s, &n)) return false;
            char *sp = memchr(s, ' ', n);
            if (!sp || sp == s) {
                free(s);
                return wk__json_fail(&d->p, "merge %zu is not two tokens separated by a space", d->merges_a.n);
            }
            an = (size_t)(sp - s);
            bn = n - an - 1;
            b = malloc(bn + 1);
            if (!b) {
                free(s);
                d->oom = true;
                return wk__json_fail(&d->p, "out of memory");
            }
            memcpy(b, sp + 1, bn + 1);
            s[an] = 0;
            a = s;
        } else {
            bool ok = wk__json_array(&d->p) && wk__json_item(&d->p) && jcopy(d, &a, &an) && wk__json_item(&d->p) &&
                      jcopy(d, &b, &bn) && !wk__json_item(&d->p) && !d->p.failed;
            if (!ok) {
                free(a);
                free(b);
                return wk__json_fail(&d->p, "merge %zu must be \"a b\" or [\"a\", \"b\"]", d->merges_a.n);
            }
        }
        if (!vec_push(d, &d->merges_a, a, an, 0)) {
            free(b);
            return false;
        }
        if (!vec_push(d, &d->merges_b, b, bn, 0)) return false;
    }
    return !d->p.failed;
}

static bool parse_model(jdoc *d) {
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        bool ok;
        if (key_is(k, "type")) ok = jsmall(d, d->model_type, sizeof d->model_type);
        else if (key_is(k, "vocab")) {
            ok = wk__json_object(&d->p);
            while (ok && wk__json_key(&d->p, &k, &kl)) {
                char *s = malloc(kl + 1);
                int64_t id;
                if (!s) {
                    d->oom = true;
                    return wk__json_fail(&d->p, "out of memory");
                }
                memcpy(s, k, kl + 1);
                if (!wk__json_int(&d->p, &id)) {
                    free(s);
                    return false;
                }
                if (id < 0 || id >= INT32_MAX) {
                    free(s);
                    return wk__json_fail(&d->p, "vocab id %lld is outside [0, 2^31)", (long long)id);
                }
                ok = vec_push(d, &d->vocab, s, kl, id);
            }
            ok = ok && !d->p.failed;
        } else if (key_is(k, "merges")) ok = parse_merges(d);
        else if (key_is(k, "unk_token")) {
            if (wk__json_peek(&d->p) == WK__JSON_NULL) ok = wk__json_null(&d->p);
            else ok = jcopy(d, &d->unk, NULL);
        } else if (key_is(k, "continuing_subword_prefix")) {
            if (wk__json_peek(&d->p) == WK__JSON_NULL) ok = wk__json_null(&d->p);
            else ok = jsmall(d, d->cont_prefix, sizeof d->cont_prefix), d->has_cont_prefix = true;
        } else if (key_is(k, "end_of_word_suffix")) {
            if (wk__json_peek(&d->p) == WK__JSON_NULL) ok = wk__json_null(&d->p);
            else ok = jcopy(d, &d->end_suffix, NULL);
        } else if (key_is(k, "max_input_chars_per_word")) ok = wk__json_int(&d->p, &d->max_chars);
        else if (key_is(k, "ignore_merges")) ok = jbool(d, &d->ignore_merges);
        else if (key_is(k, "byte_fallback")) ok = jbool(d, &d->byte_fallback);
        else if (key_is(k, "fuse_unk")) ok = jbool(d, &d->fuse_unk);
        else ok = wk__json_skip(&d->p);
        if (!ok) return false;
    }
    return !d->p.failed;
}

static bool parse_doc(jdoc *d) {
    if (!wk__json_object(&d->p)) return false;
    const char *k;
    size_t kl;
    while (wk__json_key(&d->p, &k, &kl)) {
        bool ok;
        if (key_is(k, "added_tokens")) ok = parse_added(d);
        else if (key_is(k, "normalizer")) ok = parse_normalizer(d);
        else if (key_is(k, "pre_tokenizer")) ok = parse_pretok(d, 0);
        else if (key_is(k, "post_processor")) ok = parse_post(d, 0);
        else if (key_is(k, "decoder")) ok = parse_decoder(d);
        else if (key_is(k, "model")) ok = parse_model(d);
        else ok = wk__json_skip(&d->p);
        if (!ok) return false;
    }
    return !d->p.failed && wk__json_finish(&d->p);
}

static void jdoc_free(jdoc *d) {
    for (size_t i = 0; i < d->vocab.n; i++) free(d->vocab.v[i].s);
    for (size_t i = 0; i < d->merges_a.n; i++) free(d->merges_a.v[i].s);
    for (size_t i = 0; i < d->merges_b.n; i++) free(d->merges_b.v[i].s);
    free(d->vocab.v);
    free(d->merges_a.v);
    free(d->merges_b.v);
    for (size_t i = 0; i < d->nadded; i++) free(d->added[i].content.s);
    free(d->added);
    for (int i = 0; i < d->npre; i++) free(d->pre[i].regex);
    for (int i = 0; i < d->nnorm; i++) free(d->norm[i].pattern), free(d->norm[i].content), free(d->norm[i].prepend);
    for (int i = 0; i < d->ndec; i++) free(d->dec[i].pattern), free(d->dec[i].content), free(d->dec[i].prepend);
    for (int i = 0; i < d->npost; i++) {
        for (int j = 0; j < d->post[i].nsingle; j++) free(d->post[i].single[j]);
        free(d->post[i].cls);
        free(d->post[i].sep);
    }
    for (int i = 0; i < d->nspecial; i++) free(d->special[i].name);
    free(d->unk);
    free(d->end_suffix);
    wk__json_free(&d->p);
}

static const char LLAMA3_RE[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_RE[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static bool is_type(const char *t, const char *lit) { return strcmp(t, lit) == 0; }

/* Which of wick's pre-tokenizers the parts describe; false if none. */
static bool classify_pre(const jdoc *d, wk__pretok *pre, bool *prefix_space) {
    const jpre *p = d->pre;
    int n = d->npre;
    *prefix_space = false;
    if (n > 0 && is_type(p[0].type, "Sequence")) {
        p++;
        n--;
    }
    if (n == 1 && is_type(p[0].type, "BertPreTokenizer")) return *pre = WK__PRE_BERT, true;
    if (n == 1 && is_type(p[0].type, "ByteLevel") && p[0].use_regex) {
        *prefix_space = p[0].add_prefix_space;
        return *pre = WK__PRE_GPT2, true;
    }
    if (n == 2 && is_type(p[0].type, "Digits") && p[0].individual_digits && is_type(p[1].type, "ByteLevel") &&
        p[1].use_regex) {
        *prefix_space = p[1].add_prefix_space;
        return *pre = WK__PRE_SMOLLM, true;
    }
    if (n == 2 && is_type(p[0].type, "Split") && p[0].regex && !p[0].invert &&
        is_type(p[0].behavior, "Isolated") && is_type(p[1].type, "ByteLevel") && !p[1].use_regex) {
        *prefix_space = p[1].add_prefix_space;
        if (strcmp(p[0].regex, LLAMA3_RE) == 0) return *pre = WK__PRE_LLAMA3, true;
        if (strcmp(p[0].regex, QWEN2_RE) == 0) return *pre = WK__PRE_QWEN2, true;
    }
    return false;
}

static int32_t special_id(const jdoc *d, const wk_tokenizer *t, const char *name, int *nids, int32_t ids[4]) {
    for (int i = 0; i < d->nspecial; i++)
        if (strcmp(d->special[i].name, name) == 0) {
            *nids = d->special[i].nids;
            memcpy(ids, d->special[i].ids, sizeof d->special[i].ids);
            return 0;
        }
    int32_t id = wk_tokenizer_find(t, name);
    if (id < 0) return -1;
    *nids = 1;
    ids[0] = id;
    return 0;
}

static bool add_template(const jdoc *d, wk_tokenizer *t, const jpost *q) {
    bool after = false;
    for (int i = 0; i < q->nsingle; i++) {
        if (!q->single[i]) {
            after = true;
            continue;
        }
        int nids;
        int32_t ids[4];
        if (special_id(d, t, q->single[i], &nids, ids) < 0) {
            wk__err(WK_ERR_FORMAT, OP, "post_processor names special token \"%.64s\", which has no id",
                    q->single[i]);
            return false;
        }
        int *cnt = after ? &t->nsuffix : &t->nprefix;
        int32_t *dst = after ? t->suffix : t->prefix;
        for (int j = 0; j < nids; j++) {
            if (*cnt >= 4 || ids[j] >= t->n) {
                wk__err(WK_ERR_FORMAT, OP, "post_processor adds too many tokens or an id outside the vocabulary");
                return false;
            }
            dst[(*cnt)++] = ids[j];
        }
    }
    return true;
}


/* ---- SentencePiece-form BPE: spaces become U+2581 (normalizer Replace,
 * optionally after Prepend, or a Metaspace pre-tokenizer), merges by rank,
 * <0xXX> byte fallback; decoder Replace + ByteFallback + Fuse (+ Strip) or
 * Metaspace. */
typedef struct spm_form {
    wk__spm_prefix prefix;
    bool escape, split_words, split_newlines, strip_lead_space;
} spm_form;

static const char SPACE_ESC[] = "\xE2\x96\x81";
static const char NEWLINE_RUNS_RE[] = "[^\n]+|[\n]+";

static bool is_str(const char *s, const char *lit) { return s && strcmp(s, lit) == 0; }

/* Metaspace's prefix rule: prepend_scheme, or the older add_prefix_space. */
static bool metaspace_prefix(const char *scheme, bool has_aps, bool aps, wk__spm_prefix *out) {
    if (!scheme[0]) return *out = has_aps && !aps ? WK__SPM_PREFIX_NONE : WK__SPM_PREFIX_ALWAYS, true;
    if (is_type(scheme, "always")) return *out = WK__SPM_PREFIX_ALWAYS, true;
    if (is_type(scheme, "first")) return *out = WK__SPM_PREFIX_FIRST, true;
    if (is_type(scheme, "never")) return *out = WK__SPM_PREFIX_NONE, true;
    return false;
}

static bool spm_bad(const char *what, const char *type) {
    wk__err(WK_ERR_FORMAT, OP, "%s %s is not supported with a SentencePiece-form BPE (Replace(\" \", \"\u2581\"), "
            "Prepend(\"\u2581\"), Metaspace, ByteFallback, Fuse, Strip are)", what, type);
    return false;
}

static bool classify_spm(const jdoc *d, spm_form *f) {
    memset(f, 0, sizeof *f);
    for (int i = 0; i < d->nnorm; i++) {
        const jpart *q = &d->norm[i];
        if (is_type(q->type, "Sequence")) continue;
        if (is_type(q->type, "Prepend") && is_str(q->prepend, SPACE_ESC)) f->prefix = WK__SPM_PREFIX_ALWAYS;
        else if (is_type(q->type, "Replace") && is_str(q->pattern, " ") && is_str(q->content, SPACE_ESC))
            f->escape = true;
        else return spm_bad("normalizer", q->type);
    }
    for (int i = 0; i < d->npre; i++) {
        const jpre *q = &d->pre[i];
        if (is_type(q->type, "Sequence")) continue;
        if (is_type(q->type, "Metaspace") && is_type(q->replacement, SPACE_ESC) && !f->escape &&
            metaspace_prefix(q->prepend_scheme, q->has_add_prefix_space, q->add_prefix_space, &f->prefix)) {
            f->escape = true;
            f->split_words = q->split;
        } else if (is_type(q->type, "Split") && q->regex && strcmp(q->regex, NEWLINE_RUNS_RE) == 0 && !q->invert &&
                   is_type(q->behavior, "Isolated")) {
            f->split_newlines = true;
        } else {
            return spm_bad("pre_tokenizer", q->type);
        }
    }
    if (!f->escape) {
        wk__err(WK_ERR_FORMAT, OP, "a BPE with byte_fallback needs spaces replaced by U+2581 (a Replace "
                "normalizer or a Metaspace pre-tokenizer)");
        return false;
    }
    bool replace = false;
    for (int i = 0; i < d->ndec; i++) {
        const jpart *q = &d->dec[i];
        if (is_type(q->type, "Sequence") || is_type(q->type, "ByteFallback") || is_type(q->type, "Fuse")) continue;
        if (is_type(q->type, "Replace") && is_str(q->pattern, SPACE_ESC) && is_str(q->content, " ")) replace = true;
        else if (is_type(q->type, "Strip") && is_str(q->content, " ") && q->start == 1 && q->stop == 0)
            f->strip_lead_space = true;
        else if (is_type(q->type, "Metaspace") && is_type(q->replacement, SPACE_ESC)) {
            wk__spm_prefix p;
            if (!metaspace_prefix(q->prepend_scheme, q->has_add_prefix_space, q->add_prefix_space, &p))
                return spm_bad("decoder", q->type);
            replace = true;
            f->strip_lead_space = p != WK__SPM_PREFIX_NONE;
        } else return spm_bad("decoder", q->type);
    }
    if (!replace) return spm_bad("decoder", d->ndec ? d->dec[0].type : "null");
    return true;
}

static wk_tokenizer *build(jdoc *d) {
    bool bpe = is_type(d->model_type, "BPE") || (!d->model_type[0] && d->merges_a.n > 0);
    bool wp = is_type(d->model_type, "WordPiece");
    if (!bpe && !wp) {
        wk__err(WK_ERR_FORMAT, OP, "model type \"%s\" is not supported (BPE and WordPiece are)", d->model_type);
        return NULL;
    }
    /* SentencePiece form: byte fallback, or spaces made U+2581 */
    bool spm = bpe && (d->byte_fallback || d->has_norm || (d->npre && !classify_pre(d, &(wk__pretok){0}, &(bool){0})));
    spm_form form;
    if (spm && !classify_spm(d, &form)) return NULL;
    wk__pretok pre = WK__PRE_NONE;
    bool prefix_space = false;
    if (!spm && (!classify_pre(d, &pre, &prefix_space) || (bpe && pre == WK__PRE_BERT) ||
                 (wp && pre != WK__PRE_BERT))) {
        wk__err(WK_ERR_FORMAT, OP, "pre_tokenizer %s%s%s is not supported with model %s (ByteLevel kinds for BPE, "
                "BertPreTokenizer for WordPiece)", d->npre ? d->pre[0].type : "null",
                d->npre > 1 ? " / " : "", d->npre > 1 ? d->pre[1].type : "", bpe ? "BPE" : "WordPiece");
        return NULL;
    }
    if (d->has_norm && !spm && !(wp && is_type(d->norm_type, "BertNormalizer"))) {
        wk__err(WK_ERR_FORMAT, OP, "normalizer %s is not supported%s", d->norm_type,
                wp ? " (BertNormalizer is)" : " with a BPE model");
        return NULL;
    }
    if (wp && !d->has_norm) {
        wk__err(WK_ERR_FORMAT, OP, "a WordPiece model needs a BertNormalizer");
        return NULL;
    }
    if (bpe && (d->end_suffix || (d->has_cont_prefix && d->cont_prefix[0]))) {
        wk__err(WK_ERR_FORMAT, OP, "BPE with end_of_word_suffix or continuing_subword_prefix is not supported");
        return NULL;
    }
    int64_t n = 0;
    for (size_t i = 0; i < d->vocab.n; i++)
        if (d->vocab.v[i].id + 1 > n) n = d->vocab.v[i].id + 1;
    for (size_t i = 0; i < d->nadded; i++)
        if (d->added[i].id + 1 > n) n = d->added[i].id + 1;
    if (n == 0 || (uint64_t)n > d->vocab.n + d->nadded) {
        wk__err(WK_ERR_FORMAT, OP, "vocabulary ids must run 0..n-1 without gaps (largest id %lld, %zu tokens)",
                (long long)n - 1, d->vocab.n + d->nadded);
        return NULL;
    }
    wk_tokenizer *t = wk__tok_new(spm ? WK__TOK_SPM : bpe ? WK__TOK_BPE : WK__TOK_WORDPIECE, n);
    if (!t) {
        wk__err(WK_ERR_OOM, OP, "out of memory");
        return NULL;
    }
    t->pre = pre;
    t->add_prefix_space = prefix_space;
    t->ignore_merges = d->ignore_merges;
    char *buf = NULL;
    size_t bufcap = 0;
    for (size_t i = 0; i < d->vocab.n; i++) {
        const jstr *v = &d->vocab.v[i];
        size_t bl = v->n;
        const char *bytes = v->s;
        if (bpe) {
            if (v->n + 1 > bufcap) {
                bufcap = v->n + 64;
                char *nb = realloc(buf, bufcap);
                if (!nb) goto oom;
                buf = nb;
            }
            int b = spm && d->byte_fallback ? wk__spm_byte_token(v->s, v->n) : -1;
            if (b >= 0) buf[0] = (char)b, bl = 1; /* ByteFallback decodes <0xXX> to its byte */
            else if (spm) bl = wk__spm_unescape(v->s, v->n, buf);
            else wk__bytelevel_decode(v->s, v->n, buf, &bl);
            bytes = buf;
        }
        if (!wk__tok_set(t, v->id, v->s, v->n, bytes, bl)) goto oom;
    }
    free(buf);
    buf = NULL;
    for (size_t i = 0; i < d->nadded; i++) {
        const jadded *a = &d->added[i];
        if (!wk__tok_set(t, a->id, a->content.s, a->content.n, a->content.s, a->content.n)) goto oom;
    }
    if (!wk__tok_index(t, OP)) goto fail;
    for (size_t i = 0; i < d->nadded; i++) {
        const jadded *a = &d->added[i];
        if (!wk__tok_add_added(t, (wk__added){(int32_t)a->id, a->special, a->lstrip, a->rstrip, a->single_word}))
            goto oom;
    }
    if (!wk__tok_index_added(t)) goto oom;
    if (bpe) {
        if (!wk__tok_merges_reserve(t, (int64_t)d->merges_a.n)) goto oom;
        for (size_t i = 0; i < d->merges_a.n; i++)
            if (!wk__tok_add_merge(t, d->merges_a.v[i].s, d->merges_a.v[i].n, d->merges_b.v[i].s,
                                   d->merges_b.v[i].n, (int32_t)i))
                goto oom;
    } else {
        snprintf(t->cont_prefix, sizeof t->cont_prefix, "%s", d->has_cont_prefix ? d->cont_prefix : "##");
        t->max_word_chars = d->max_chars > 0 ? (d->max_chars > INT32_MAX ? INT32_MAX : (int)d->max_chars) : 100;
        t->clean_text = d->clean_text;
        t->chinese_chars = d->chinese;
        t->lowercase = d->lowercase;
        t->strip_accents = d->strip_accents < 0 ? d->lowercase : d->strip_accents;
    }
    if (d->unk) t->unk = wk_tokenizer_find(t, d->unk);
    if ((wp || spm) && t->unk < 0 && d->unk) {
        wk__err(WK_ERR_FORMAT, OP, "unk_token \"%.64s\" is missing from the vocabulary", d->unk);
        goto fail;
    }
    if (wp && t->unk < 0) {
        wk__err(WK_ERR_FORMAT, OP, "WordPiece unk_token is missing from the vocabulary");
        goto fail;
    }
    if (spm) {
        t->spm_prefix = form.prefix;
        t->spm_split_words = form.split_words;
        t->spm_split_newlines = form.split_newlines;
        t->strip_lead_space = form.strip_lead_space;
        t->byte_fallback = d->byte_fallback;
        t->fuse_unk = d->fuse_unk;
        if (!wk__spm_index(t, OP)) goto fail;
    } else if (d->dec_type[0] && !is_type(d->dec_type, "ByteLevel") && !is_type(d->dec_type, "WordPiece")) {
        wk__err(WK_ERR_FORMAT, OP, "decoder %s is not supported (ByteLevel and WordPiece are)", d->dec_type);
        goto fail;
    }
    t->byte_decode = bpe;
    t->wp_cleanup = d->dec_cleanup;
    for (int i = 0; i < d->npost; i++) {
        const jpost *q = &d->post[i];
        if (is_type(q->type, "TemplateProcessing")) {
            if (!add_template(d, t, q)) goto fail;
        } else if (is_type(q->type, "BertProcessing") || is_type(q->type, "RobertaProcessing")) {
            if (q->cls_id < 0 || q->cls_id >= t->n || q->sep_id < 0 || q->sep_id >= t->n || t->nprefix || t->nsuffix) {
                wk__err(WK_ERR_FORMAT, OP, "%s needs cls and sep ids inside the vocabulary", q->type);
                goto fail;
            }
            t->prefix[t->nprefix++] = (int32_t)q->cls_id;
            t->suffix[t->nsuffix++] = (int32_t)q->sep_id;
        } else if (!is_type(q->type, "ByteLevel") && !is_type(q->type, "Sequence")) {
            wk__err(WK_ERR_FORMAT, OP, "post_processor %s is not supported", q->type);
            goto fail;
        }
    }
    /* bos / eos: the first template token, and the usual names */
    if (t->nprefix) t->bos = t->prefix[0];
    if (wp && t->nsuffix) t->eos = t->suffix[0];
    static const char *eos_names[] = {"<|endoftext|>", "<|im_end|>", "<|end_of_text|>", "</s>", "<eos>"};
    for (size_t i = 0; t->eos < 0 && i < sizeof eos_names / sizeof *eos_names; i++)
        t->eos = wk_tokenizer_find(t, eos_names[i]);
    return t;
oom:
    wk__err(WK_ERR_OOM, OP, "out of memory");
fail:
    free(buf);
    wk_tokenizer_free(t);
    return NULL;
}

wk_tokenizer *wk_tokenizer_from_json(const char *json, size_t len) {
    if (!json) {
        wk__err(WK_ERR_ARG, OP, "NULL json");
        return NULL;
    }
    jdoc *d = calloc(1, sizeof *d);
    if (!d) {
        wk__err(WK_ERR_OOM, OP, "out of memory");
        return NULL;
    }
    wk__json_init(&d->p, json, len);
    wk_tokenizer *t = NULL;
    if (!parse_doc(d)) wk__err(d->oom || d->p.oom ? WK_ERR_OOM : WK_ERR_FORMAT, OP, "%s", d->p.msg);
    else t = build(d);
    jdoc_free(d);
    free(d);
    return t;
}
