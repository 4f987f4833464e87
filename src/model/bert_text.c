/* The text side of the BERT encoder (bert.h): loading the model with its
 * WordPiece tokenizer, and texts -> ids -> embeddings. */
#include <stdio.h>
#include "wick/tokenizer.h"
#include "wick/bert.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/error.h"
#include "model/bert_internal.h"

#define OP "wk_bert_load"

static wk_tokenizer *load_tokenizer(const char *dir) {
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (stat(path, &sb) == 0) return wk_tokenizer_load_json(path);
    bool lower = true;
    if (!wk__bert_lowercase(dir, &lower)) return NULL;
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    if (stat(path, &sb) == 0) return wk_tokenizer_load_vocab_txt(path, lower);
    wk__err(WK_ERR_IO, OP, "%s holds neither tokenizer.json nor vocab.txt", dir);
    return NULL;
}

wk_bert *wk_bert_load(const char *dir, wk_device *device) {
    if (!dir) {
        wk__err(WK_ERR_ARG, OP, "dir is NULL");
        return NULL;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        wk__err(WK_ERR_IO, OP, "%s is not a directory", dir);
        return NULL;
    }
    if (strlen(dir) > 3000) {
        wk__err(WK_ERR_ARG, OP, "directory path of %zu bytes is too long", strlen(dir));
        return NULL;
    }
    wk_bert *b = calloc(1, sizeof *b);
    if (!b) {
        wk__err(WK_ERR_OOM, OP, "cannot allocate the model");
        return NULL;
    }
    b->dev = device ? device : wk_cpu();
    if (!wk__bert_config_load(dir, &b->cfg) || !(b->tok = load_tokenizer(dir))) {
        wk_bert_free(b);
        return NULL;
    }
    b->cls_id = wk_tokenizer_find(b->tok, "[CLS]");
    b->sep_id = wk_tokenizer_find(b->tok, "[SEP]");
    if (b->cls_id < 0 || b->sep_id < 0 || b->cls_id >= b->cfg.vocab || b->sep_id >= b->cfg.vocab) {
        wk__err(WK_ERR_FORMAT, OP, "the tokenizer in %s lacks [CLS] or [SEP] inside the model's %lld ids", dir,
                (long long)b->cfg.vocab);
        wk_bert_free(b);
        return NULL;
    }
    if (!wk__bert_load_weights(b, dir)) {
        wk_bert_free(b);
        return NULL;
    }
    return b;
}

void wk_bert_free(wk_bert *b) {
    if (!b) return;
    wk__bert_free_weights(b);
    wk_tokenizer_free(b->tok);
    free(b);
}

wk_tensor *wk_bert_embed(const wk_bert *b, const char *const *texts, int n) {
    const char *op = "wk_bert_embed";
    if (!b || !texts || n <= 0) {
        wk__err(WK_ERR_ARG, op, "needs a model and n >= 1 texts (n = %d)", n);
        return NULL;
    }
    int64_t cap = b->cfg.max_tokens; /* >= 2: config checks it */
    int32_t *buf = malloc((size_t)n * (size_t)cap * sizeof *buf);
    int32_t **ids = malloc((size_t)n * sizeof *ids);
    int64_t *lens = malloc((size_t)n * sizeof *lens);
    wk_tensor *out = NULL;
    bool ok = buf && ids && lens;
    if (!ok) wk__err(WK_ERR_OOM, op, "cannot allocate ids for %d texts of up to %lld tokens", n, (long long)cap);
    for (int i = 0; ok && i < n; i++)
        if (!texts[i]) {
            wk__err(WK_ERR_ARG, op, "text %d is NULL", i);
            ok = false;
        }
    for (int i = 0; ok && i < n; i++) {
        ids[i] = buf + (size_t)i * (size_t)cap;
        /* the text's own ids, then [CLS] ... [SEP] around them; a long text
         * keeps its first cap - 2 ids (HF's truncation of a single text) */
        int64_t m = wk_tokenizer_encode(b->tok, texts[i], strlen(texts[i]), WK_TOK_PARSE_SPECIAL, ids[i] + 1, cap - 2);
        if (m < 0) {
            ok = false;
            break;
        }
        if (m > cap - 2) m = cap - 2;
        ids[i][0] = b->cls_id;
        ids[i][m + 1] = b->sep_id;
        lens[i] = m + 2;
    }
    if (ok) out = wk_bert_embed_ids(b, (const int32_t *const *)ids, lens, n);
    free(buf);
    free(ids);
    free(lens);
    return out;
}
