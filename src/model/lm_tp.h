/* Tensor parallelism of the decoder models (lm.h's WK_LM_TENSOR_PARALLEL):
 * which share of the heads, FFN columns and vocabulary this rank holds,
 * how a weight is cut to that share at load (lm_tp_load.c) and the
 * collectives the forward runs (lm_tp.c). A model without a communicator
 * (or with one of size 1) has comm NULL and every count whole, so the
 * forward's hooks are no-ops for it. */
#ifndef WICK_MODEL_LM_TP_H
#define WICK_MODEL_LM_TP_H
#include "wick/wick.h"
#include "wick/gguf.h"
#include "wick/safetensors.h"

typedef struct wk_comm wk_comm;
typedef struct wk_lm wk_lm;
typedef struct wk_lm_config wk_lm_config;
typedef struct wk_lm_seq wk_lm_seq;

typedef struct wk__lm_tp {
    wk_comm *comm;          /* borrowed (the caller's; must outlive the model); NULL: one process */
    int rank, size;
    int64_t kv_lo, hkv;     /* this rank's KV heads: [kv_lo, kv_lo + hkv) */
    int64_t hq;             /* its query heads: hkv * (n_heads / n_kv_heads) */
    int64_t vocab_lo, vocab_n; /* its rows of the token table and of the lm head */
} wk__lm_tp;

/* The part [lo, lo + n) of `units` units that rank r of size gets: as even
 * as possible, the first (units % size) ranks one more. */
void wk__lm_tp_share(int64_t units, int size, int rank, int64_t *lo, int64_t *n);

/* Fill tp for comm (NULL or size 1: the whole model) from the config; heads
 * and vocabulary must split (WK_ERR_ARG naming what does not). */
wk_status wk__lm_tp_init(wk__lm_tp *tp, wk_comm *comm, const wk_lm_config *cfg, wk_device *dev, const char *path);

/* A cut of a weight to this rank's share: up to 3 row ranges (dim 0,
 * concatenated in order: Phi-3's fused q|k|v or gate|up) or one column
 * range (dim 1: row-parallel o and down). n_ranges 0: the whole tensor. */
typedef struct wk__lm_cut {
    int dim;
    int n_ranges;
    int64_t lo[3], n[3];
} wk__lm_cut;

/* Where the tensors come from, for reading a column cut's bytes only. */
typedef struct wk__lm_tp_file {
    const wk_gguf *g;
    const wk_safetensors *st;
    const char *path;
} wk__lm_tp_file;

/* The cuts of layer l's slots for this rank: q/k/v rows (qkv: the three
 * parts), o's columns, gate/up rows and down's columns (at down_block
 * elements: its dtype's block), and the biases' rows alike. */
typedef struct wk__lm_layer_cuts {
    wk__lm_cut q, k, v, qkv, o, gate, up, gate_up, down;
} wk__lm_layer_cuts;
wk_status wk__lm_tp_layer_cuts(const wk__lm_tp *tp, const wk_lm_config *cfg, int64_t l, int64_t down_block,
                               const char *path, wk__lm_layer_cuts *out);
/* The vocabulary rows' cut (token table, lm head). */
wk__lm_cut wk__lm_tp_vocab_cut(const wk__lm_tp *tp);

/* t (the whole tensor `name`, a zero-copy view: not read here) cut to c;
 * consumes t. Row cuts are views of the map (one range) or a copy of the
 * ranges only; a column cut reads just its bytes of every row from the
 * file (pread) into the rank's own buffer, so pages of the other ranks'
 * columns are never touched. A cut that splits a quantized block:
 * WK_ERR_ARG naming the tensor. */
wk_tensor *wk__lm_tp_cut(const wk__lm_tp_file *f, const char *name, wk_tensor *t, const wk__lm_cut *c);

/* ---- the forward's collectives (no-ops without a communicator) ---- */
/* The partial sums of a row-parallel product summed over the ranks. */
wk_tensor *wk__lm_tp_reduce(const wk_lm *m, wk_tensor *x);
/* Every rank's logits columns (its vocabulary rows) gathered, in order. */
wk_tensor *wk__lm_tp_gather_vocab(const wk_lm *m, wk_tensor *logits);
/* The token rows of ids (R of them) as f32 (R, dim): this rank's table rows
 * for its ids, zero rows for the others, summed over the ranks. */
wk_tensor *wk__lm_tp_embed(const wk_lm *m, const int32_t *ids, int64_t R);

#endif
