/* BERT encoders (all-MiniLM-L6-v2 and kin) for sentence embeddings: an HF
 * directory (config.json, model.safetensors, tokenizer.json or vocab.txt),
 * WordPiece, the encoder, mean pooling over the attention mask and L2
 * normalisation (sentence-transformers' pipeline). */
#ifndef WICK_BERT_H
#define WICK_BERT_H
#include <stdint.h>
#include "wick/wick.h"
#include "wick/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_bert wk_bert;
/* device NULL: the CPU. */
wk_bert *wk_bert_load(const char *dir, wk_device *device);
void wk_bert_free(wk_bert *b);
int64_t wk_bert_dim(const wk_bert *b);
const wk_tokenizer *wk_bert_tokenizer(const wk_bert *b);
/* Last hidden state (1, L, dim) f32 for n ids (with [CLS] / [SEP]). */
wk_tensor *wk_bert_hidden(const wk_bert *b, const int32_t *ids, int64_t n);
/* Embeddings (n, dim) f32, each row mean-pooled and of L2 norm 1. */
wk_tensor *wk_bert_embed(const wk_bert *b, const char *const *texts, int n);

#ifdef __cplusplus
}
#endif
#endif /* WICK_BERT_H */
