/* Tokenizers from files: tokenizer.json by path (mapped, then parsed as
 * bytes) and BERT's vocab.txt (one token per line, id = line number). */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include <string.h>
#include "base/error.h"
#include "io/map_file.h"
#include "text/tok_internal.h"

wk_tokenizer *wk_tokenizer_load_json(const char *path) {
    if (!path) {
        wk__err(WK_ERR_ARG, "wk_tokenizer_load_json", "NULL path");
        return NULL;
    }
    wk__map *m = wk__map_open("wk_tokenizer_load_json", path);
    if (!m) return NULL;
    wk_tokenizer *t = wk_tokenizer_from_json((const char *)wk__map_data(m), wk__map_size(m));
    wk__map_release(m);
    return t;
}

wk_tokenizer *wk_tokenizer_load_vocab_txt(const char *path, bool lowercase) {
    static const char op[] = "wk_tokenizer_load_vocab_txt";
    if (!path) {
        wk__err(WK_ERR_ARG, op, "NULL path");
        return NULL;
    }
    wk__map *m = wk__map_open(op, path);
    if (!m) return NULL;
    const char *s = (const char *)wk__map_data(m);
    size_t n = wk__map_size(m);
    int64_t lines = 0;
    for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
    if (n > 0 && s[n - 1] != '\n') lines++;
    wk_tokenizer *t = lines > 0 && lines < INT32_MAX ? wk__tok_new(WK__TOK_WORDPIECE, lines) : NULL;
    if (!t) {
        wk__map_release(m);
        wk__err(lines > 0 ? WK_ERR_OOM : WK_ERR_FORMAT, op, "%s: %s", path,
                lines > 0 ? "out of memory" : "no tokens in the file");
        return NULL;
    }
    int64_t id = 0;
    for (size_t a = 0; a < n && id < lines; id++) {
        const char *nl = memchr(s + a, '\n', n - a);
        size_t e = nl ? (size_t)(nl - s) : n, l = e - a;
        if (l > 0 && s[a + l - 1] == '\r') l--;
        if (!wk__tok_set(t, id, s + a, l, s + a, l)) {
            wk__map_release(m);
            wk_tokenizer_free(t);
            wk__err(WK_ERR_OOM, op, "out of memory");
            return NULL;
        }
        a = e + 1;
    }
    wk__map_release(m);
    if (!wk__tok_index(t, op)) {
        wk_tokenizer_free(t);
        return NULL;
    }
    /* BERT's special tokens: bracketed names are matched with PARSE_SPECIAL. */
    static const char *names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        int32_t k = wk_tokenizer_find(t, names[i]);
        if (k >= 0 && !wk__tok_add_added(t, (wk__added){k, true, false, false, false})) {
            wk_tokenizer_free(t);
            wk__err(WK_ERR_OOM, op, "out of memory");
            return NULL;
        }
    }
    if (!wk__tok_index_added(t)) {
        wk_tokenizer_free(t);
        wk__err(WK_ERR_OOM, op, "out of memory");
        return NULL;
    }
    t->pre = WK__PRE_BERT;
    t->unk = wk_tokenizer_find(t, "[UNK]");
    int32_t cls = wk_tokenizer_find(t, "[CLS]"), sep = wk_tokenizer_find(t, "[SEP]");
    if (cls >= 0) t->prefix[t->nprefix++] = cls;
    if (sep >= 0) t->suffix[t->nsuffix++] = sep;
    t->bos = cls;
    t->eos = sep;
    t->clean_text = t->chinese_chars = true;
    t->lowercase = t->strip_accents = lowercase;
    memcpy(t->cont_prefix, "##", 3);
    t->wp_cleanup = true;
    return t;
}
