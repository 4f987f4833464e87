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
/* dir holds config.json (model_type "bert", hidden_act "gelu" = the erf
 * form, or "gelu_new"), model.safetensors (F32 / F16 / BF16 weights,
 * converted to f32; the I64 embeddings.position_ids is read and used as the
 * position of each token), tokenizer.json (else vocab.txt), and optionally
 * sentence_bert_config.json (max_seq_length cuts texts) and
 * 1_Pooling/config.json (must pool by the mean of the tokens). Tensor
 * names with or without a "bert." prefix. Shapes are checked against the
 * config (WK_ERR_SHAPE naming the tensor); a missing file is WK_ERR_IO, a
 * malformed or unsupported one WK_ERR_FORMAT. device NULL: the CPU.
 * The model is immutable: threads may run it at once. */
wk_bert *wk_bert_load(const char *dir, wk_device *device);
void wk_bert_free(wk_bert *b);
int64_t wk_bert_dim(const wk_bert *b);
/* The most ids a text becomes ([CLS] and [SEP] included): longer texts are
 * cut there by wk_bert_embed (sentence-transformers' max_seq_length, else
 * the model's positions). */
int64_t wk_bert_max_tokens(const wk_bert *b);
const wk_tokenizer *wk_bert_tokenizer(const wk_bert *b);
/* Last hidden state (1, L, dim) f32 for n ids (with [CLS] / [SEP]); n at
 * most the model's positions (WK_ERR_SHAPE), ids inside the vocabulary
 * (WK_ERR_INDEX). */
wk_tensor *wk_bert_hidden(const wk_bert *b, const int32_t *ids, int64_t n);
/* Embeddings (n, dim) f32, each row mean-pooled and of L2 norm 1. Texts are
 * UTF-8, NUL-terminated; all n run in padded batches (sorted by length, a
 * few thousand tokens each) with an attention mask, so a text's embedding
 * does not depend on its neighbours beyond rounding. */
wk_tensor *wk_bert_embed(const wk_bert *b, const char *const *texts, int n);
/* The same from token ids: n sequences, ids[i] of lens[i] ids (with [CLS] /
 * [SEP]); no cutting (a sequence longer than the positions is WK_ERR_SHAPE). */
wk_tensor *wk_bert_embed_ids(const wk_bert *b, const int32_t *const *ids, const int64_t *lens, int n);

#ifdef __cplusplus
}
#endif
#endif /* WICK_BERT_H */
