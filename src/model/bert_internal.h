/* What the BERT encoder reads from a sentence-transformers directory besides
 * the weights: config.json (the architecture), 1_Pooling/config.json (how
 * token states become one vector) and sentence_bert_config.json (where
 * texts are cut). bert_config.c parses them; bert.c uses them. */
#ifndef WICK_MODEL_BERT_INTERNAL_H
#define WICK_MODEL_BERT_INTERNAL_H
#include <stdbool.h>
#include "wick/tokenizer.h"
#include <stdint.h>
#include "wick/wick.h"
#include "wick/bert.h"
#include "wick/layers.h"

typedef enum wk__bert_act {
    WK__BERT_GELU_ERF = 0, /* HF "gelu": 0.5 x (1 + erf(x / sqrt 2)) */
    WK__BERT_GELU_TANH     /* HF "gelu_new" / "gelu_pytorch_tanh" */
} wk__bert_act;

typedef struct wk__bert_config {
    int64_t vocab, dim, layers, heads, inter, max_pos, type_vocab;
    int64_t max_tokens; /* texts are cut to this many ids, [CLS] and [SEP] included */
    int32_t pad_id;
    double eps;
    wk__bert_act act;
} wk__bert_config;

/* Parse dir/config.json (required), dir/sentence_bert_config.json and
 * dir/1_Pooling/config.json (both optional; pooling must be mean tokens).
 * Every size must be positive and heads must divide dim. false + a
 * recorded error (op "wk_bert_load", naming the file and key) otherwise. */
bool wk__bert_config_load(const char *dir, wk__bert_config *c);
/* tokenizer_config.json's "do_lower_case" (true when the file or the key is
 * absent), for a tokenizer built from vocab.txt. */
bool wk__bert_lowercase(const char *dir, bool *lower);
/* The same for config.json's text alone (for tests of hostile configs). */
bool wk__bert_config_parse(const char *json, size_t len, const char *what, wk__bert_config *c);

/* One encoder layer's weights (f32, on the model's device), the layer kit's
 * layers (wick/layers.h). Projections are stored transposed
 * (wk__linear_pretranspose); q, k and v are one (3 dim, dim) projection so
 * that a single GEMM makes all three. */
typedef struct wk__bert_layer {
    wk_linear qkv, o, i, f;
    wk_norm_layer ln1, ln2;
} wk__bert_layer;

struct wk_bert {
    wk__bert_config cfg;
    wk_device *dev;
    wk_tokenizer *tok;
    int32_t cls_id, sep_id;
    /* word (vocab, dim); pos (max_pos, dim): row t = the position embedding
     * of position_ids[t] plus token type 0's embedding */
    wk_embedding_layer word;
    wk_tensor *pos;
    wk_norm_layer emb_ln;
    wk__bert_layer *layer;
};

/* bert.c: model.safetensors (a file or a directory) into b->word ... b->layer,
 * shapes checked against b->cfg; false + a recorded error otherwise (nothing
 * left allocated). */
bool wk__bert_load_weights(wk_bert *b, const char *dir);
void wk__bert_free_weights(wk_bert *b);
/* Last hidden state (B, L, dim) for B sequences of ids padded to L (row i
 * real for its first lens[i] ids). Ids already checked. */
wk_tensor *wk__bert_forward(const wk_bert *b, const int32_t *ids, const int64_t *lens, int64_t B, int64_t L);

#endif
