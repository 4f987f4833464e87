/* The Llama-family model's internals, shared by the src/model files (the public
 * API is include/wick/lm.h). */
#ifndef WICK_MODEL_LM_INTERNAL_H
#define WICK_MODEL_LM_INTERNAL_H
#include "wick/wick.h"
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include "wick/lm.h"
#include "wick/layers.h"
#include "nn/layers.h"

/* The linear layers are the kit's wk_linear (wick/layers.h), weights kept
 * as the file stores them: a block or f16/bf16 weight (N, K) goes through
 * wk_qmatmul with f32 x, an f32 one through a matmul with its transposed
 * view (no copy). No biases. */

typedef struct wk__lm_layer {
    wk_norm_layer attn_norm, ffn_norm; /* rms, (dim) f32 */
    /* with WICK_LLAMA_FUSE=1: q, k and v fused into one (Hq*D + 2*Hkv*D,
     * dim) matrix when the three share a dtype (their rows concatenate,
     * blocks included); otherwise (weight NULL) q, k, v are used */
    wk_linear qkv;
    wk_linear q, k, v;
    wk_linear o;
    /* likewise gate and up as one (2*ffn, dim) matrix for wk_swiglu */
    wk_linear gate_up;
    wk_linear gate, up;
    wk_linear down;
} wk__lm_layer;

struct wk_lm {
    wk_lm_config cfg;
    wk_device *dev;
    wk_embedding_layer tok_embd; /* (vocab, dim): f32 / f16 / bf16 or blocks */
    wk_linear output;            /* the lm head: tok_embd's weight when tied */
    wk_norm_layer out_norm;      /* rms, (dim) f32 */
    wk__lm_layer *layers;
    /* RoPE angles (rows, head_dim/2) f32 for positions 0 .. rows-1, where
     * rows = max_ctx or fewer: what wk__lm_rope_eager_bytes allows (a
     * file's context times its head size is no bound on what wick should
     * allocate at load). A cache longer than rows builds its own. */
    wk_tensor *rope_cos, *rope_sin;
    double *rope_inv;      /* head_dim/2 inverse frequencies the tables are made of */
    wk_tokenizer *tok;     /* NULL when the file has none (no tokenizer.ggml.* / tokenizer.json) */
    char *chat_template;   /* NULL when absent */
};

struct wk_kv_cache {
    const wk_lm *m;
    int64_t len;
    /* per layer (1, Hkv, cap, D) f32, allocated once: the kit's store */
    wk__kv_store kv;
    /* (cap, head_dim/2) RoPE tables when cap exceeds the model's (NULL:
     * the model's serve); smaller than the cache itself */
    wk_tensor *rope_cos, *rope_sin;
};

/* Config from a GGUF reader's llama.* keys (and the token table's shape for
 * the vocabulary size when llama.vocab_size is absent). */
wk_status wk__lm_config_from_gguf(const wk_gguf *g, wk_lm_config *cfg);
/* Config from an HF config.json's text. */
wk_status wk__lm_config_from_json(const char *json, size_t len, const char *path, wk_lm_config *cfg);
/* Every field consistent (heads divide, sizes positive, ...). */
wk_status wk__lm_config_check(const wk_lm_config *cfg, const char *src);

/* cfg's RoPE frequencies for the layer kit's wk__rope_inv_freq. */
wk__rope_freqs wk__lm_rope_freqs(const wk_lm_config *cfg);
/* The most bytes (both tables) the model's RoPE tables take at load
 * (16 MiB: 32768 positions of a 128-wide head); longer caches make their
 * own. A variable so that tests can lower it. */
extern int64_t wk__lm_rope_eager_bytes;

/* Read a whole small file (config.json, tokenizer_config.json) into a
 * NUL-terminated buffer; NULL + WK_ERR_IO. */
char *wk__read_small_file(const char *op, const char *path, size_t *len);

#endif
