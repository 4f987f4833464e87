/* Decoder language models of every family wick knows, behind one handle:
 * config, weights, a preallocated KV cache and the forward pass.
 *
 * wk_lm_load opens a GGUF file (by its general.architecture) or an HF
 * directory (config.json's model_type): llama (Llama 2/3, SmolLM2), mistral,
 * qwen2, qwen3, gemma2, gemma3, phi3 and smollm3. Each family is one small
 * file in src/model (arch_*.c) that states its rules: which keys it reads,
 * how its tensors are named, which features its layers have. A key or
 * field that changes the maths and that wick does not implement is an error
 * naming it, never ignored. Unknown architectures are refused by name.
 *
 * Weights: quantized layers stay quantized and run through wk_qmatmul; GGUF
 * llama rows are permuted for interleaved-pair RoPE (llama.cpp's converter
 * does that for the llama family only; every other GGUF family and every HF
 * checkpoint rotates halves). Every tensor's shape is checked against the
 * config first (a wrong one is WK_ERR_SHAPE naming the tensor). GGUF and
 * safetensors tensors are zero-copy views of the mapped file unless a dtype
 * conversion, a device move or a family's own rule (Gemma's HF norms are
 * stored as w - 1) asks for a copy. WICK_LLAMA_FUSE=1 in the environment
 * fuses q/k/v and gate/up into one matrix each at load.
 *
 * A model is immutable once loaded (it may be shared by threads); all state
 * of a sequence lives in its wk_kv_cache. Errors: NULL / a status with
 * wk_last_error ("wk_lm_load: unknown architecture 'gpt2'", ...). */
#ifndef WICK_LM_H
#define WICK_LM_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
/* Declared before wick.h, which includes generate.h (naming wk_lm) at its
 * end: either header may be included first. */
typedef struct wk_lm wk_lm;
typedef struct wk_kv_cache wk_kv_cache;
typedef struct wk_comm wk_comm; /* wick/dist.h */
#include "wick/wick.h"
#include "wick/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-layer flags (wk_lm_config.layer_flags). */
enum {
    WK_LM_SLIDING = 1, /* attends to the last sliding_window positions only */
    WK_LM_NO_ROPE = 2  /* no rotary embedding on this layer (SmolLM3) */
};

/* What a decoder model is. The first block is what every family has; the
 * second is what the architecture file (src/model/arch_*.c) sets from its
 * family's rules and the file's keys. */
typedef struct wk_lm_config {
    char arch[32];          /* "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3" */
    int64_t vocab, dim, ffn_dim, n_layers, n_heads, n_kv_heads, head_dim, max_ctx;
    double rope_theta, rms_eps;
    /* rope scaling: "none", "linear" (positions / factor), "llama3" or
     * "longrope" (Phi-3: per-frequency short / long factors) */
    char rope_scaling[16];
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int64_t rope_orig_ctx;
    bool tied_embeddings;   /* no separate output matrix */
    bool rope_interleaved;  /* pairs (2i, 2i+1): llama.cpp's permuted llama rows; else halves */
    int32_t bos, eos;       /* -1 when none */

    /* --- family features --- */
    bool attn_bias;         /* q, k and v projections have biases (Qwen2) */
    bool qk_norm;           /* RMSNorm of every q and k head before RoPE (Qwen3, Gemma 3) */
    bool post_norms;        /* a norm after attention and after the MLP as well (Gemma 2/3) */
    bool gelu_mlp;          /* the gated MLP's gate goes through GELU-tanh, not SiLU (Gemma) */
    bool fused_qkv;         /* the file stores q, k, v as one matrix, and gate, up as one (Phi-3) */
    double embed_scale;     /* token rows are multiplied by this (Gemma: sqrt(dim)); 1: none */
    double attn_scale;      /* the q.k scale: 1/sqrt(head_dim) unless the family says otherwise */
    double attn_softcap;    /* > 0: scores -> cap * tanh(scores / cap) (Gemma 2) */
    double final_softcap;   /* > 0: the same on the logits */
    int64_t sliding_window; /* keys a WK_LM_SLIDING layer sees (the query's own included); 0: none */
    int64_t rope_dims;      /* leading dims of each head that rotate (partial rotary); head_dim: all */
    double rope_local_theta;    /* RoPE base of the sliding layers (Gemma 3); 0: rope_theta */
    double rope_attn_factor;    /* longrope: cos and sin scaled by this; 1 otherwise */
    /* n_layers WK_LM_* flags, owned by the model (NULL in a config no model owns) */
    const uint8_t *layer_flags;
} wk_lm_config;

typedef struct wk_lm_load_opts {
    wk_device *device;  /* NULL: the CPU */
    /* The dtype float weight matrices are kept in: WK_F32, WK_F16 or WK_BF16
     * converts every unquantized matrix (and the token table) to it at load;
     * anything else (the zero-initialised default, WK_U8, or opts NULL)
     * keeps them as the file stores them (f64 as f32). Block-quantized
     * weights always stay blocks; norm weights are f32. Activations (and
     * the KV cache, unless kv_dtype says otherwise) are f32 whatever this
     * says: f16 / bf16 and block weights run through wk_qmatmul with f32 x (x quantized to the
     * weight's partner block type for blocks), f32 weights through
     * wk_matmul with a transposed view (no copy). */
    wk_dtype dtype;
    /* The dtype of the KV caches made for this model: WK_F16 or WK_BF16
     * stores keys and values in it (half the bytes a decode step reads over
     * a long context; llama.cpp's default is f16), and attention then runs
     * in it, q rounded as the keys are; anything else (the zero-initialised
     * default) keeps them f32, the exact choice. */
    wk_dtype kv_dtype;
    /* called with 0..1 while tensors are read (may be NULL) */
    void (*progress)(void *ctx, double fraction);
    void *progress_ctx;
    /* Model parallelism over the ranks of comm (wick/dist.h); NULL, or a
     * communicator of size 1: this process holds the whole model. Every rank
     * loads the same path with the same options, then runs the same
     * forwards (same ids, same caches' histories) in step; each gets the
     * full logits, bit-identical on every rank, so samplers seeded alike
     * pick the same tokens. See WK_LM_TENSOR_PARALLEL / _PIPELINE_PARALLEL.
     * The model borrows comm: free the communicator after the model. */
    wk_comm *comm;
    int parallel;       /* WK_LM_TENSOR_PARALLEL (0, the default) or WK_LM_PIPELINE_PARALLEL */
    /* pipeline parallel: prompt positions per micro-batch of a prefill
     * (rank r runs micro-batch i while rank r+1 runs i-1); <= 0: 32 */
    int64_t pp_microbatch;
} wk_lm_load_opts;

/* Tensor parallel (Megatron-style): rank r holds its share of every layer's
 * attention heads (q, k, v rows of its KV-head groups: column-parallel)
 * and of the FFN's columns (gate, up rows), and the matching columns of o
 * and down (row-parallel, one all_reduce after each), plus its share of the
 * vocabulary's rows of the token table (lookups all_reduced) and of the
 * lm head (logits all_gathered). Shards are contiguous ranges split as
 * evenly as the granularity allows: KV heads (each with its query group)
 * across ranks, FFN columns and vocabulary rows at quantized-block
 * boundaries (256 or 32 elements); a model must have n_kv_heads >= ranks
 * (and as many FFN blocks and vocabulary rows), else WK_ERR_ARG naming what
 * does not split. Each rank reads only its own shard's bytes from the file.
 * Pipeline parallel: rank r holds a contiguous range of layers (rank 0 also
 * the token table, the last rank the final norm and lm head), activations
 * pass down the ranks, the last rank's logits are broadcast; any model with
 * n_layers >= ranks; a prefill runs in micro-batches of pp_microbatch rows
 * (the same arithmetic as one pass: bit-identical in the tests). Arguments
 * are checked alike on every rank before any message (a refused forward is
 * refused everywhere); a failure on one rank mid-pass reaches the others
 * as WK_ERR_COMM after the communicator's timeout (the communicator is then
 * broken); its forwards run one at a time (their messages are one
 * sequence), not one per cache. KV caches (wk_kv_cache_new) then hold
 * this rank's heads (TP) or layers (PP) only; the paged pool and the
 * serving engine are single-process (WK_ERR_ARG on a parallel model). */
enum { WK_LM_TENSOR_PARALLEL = 0, WK_LM_PIPELINE_PARALLEL = 1 };

/* path: a .gguf file or an HF directory; opts NULL: defaults. */
wk_lm *wk_lm_load(const char *path, const wk_lm_load_opts *opts);
void wk_lm_free(wk_lm *m);
const wk_lm_config *wk_lm_config_of(const wk_lm *m);
/* Borrowed; lives as long as the model. NULL when the file has none (a
 * GGUF without tokenizer.ggml.*, a directory without tokenizer.json); a
 * tokenizer that is present but cannot be loaded fails wk_lm_load. */
const wk_tokenizer *wk_lm_tokenizer(const wk_lm *m);
/* The chat template from the file (tokenizer.chat_template /
 * tokenizer_config.json), NUL-terminated, or NULL. */
const char *wk_lm_chat_template(const wk_lm *m);

/* One sequence's keys and values for every layer, allocated once for
 * max_tokens positions (<= max_ctx; <= 0: max_ctx) on the model's device. */
wk_kv_cache *wk_kv_cache_new(const wk_lm *m, int64_t max_tokens);
void wk_kv_cache_free(wk_kv_cache *c);
int64_t wk_kv_cache_len(const wk_kv_cache *c);      /* positions filled */
int64_t wk_kv_cache_capacity(const wk_kv_cache *c);
/* Forget positions >= n (0 clears). */
wk_status wk_kv_cache_truncate(wk_kv_cache *c, int64_t n);
/* Make room for max_tokens positions (<= max_ctx), keeping the filled ones
 * (their keys and values are copied into the larger cache; nothing is run
 * again). A cache already that large is unchanged. WK_ERR_ARG, the cache
 * unchanged, when max_tokens exceeds the context or when growing would
 * change the RoPE of keys already stored (Phi-3's longrope takes its long
 * factors past the original context: make a new cache and run the tokens
 * again). */
wk_status wk_kv_cache_reserve(wk_kv_cache *c, int64_t max_tokens);

/* ---- the paged KV pool: caches as block tables over one shared pool ----
 *
 * A pool holds, per layer, keys and values for `blocks` blocks of `block`
 * positions each, on the model's device. A paged cache (a block table, its
 * len and capacity) takes blocks as its positions fill; a forward over a
 * paged cache writes the new keys and values into its blocks and gathers
 * them for attention, so its logits are bit-identical to a contiguous
 * cache's of the same dtype. With prefix_cache, every full block is kept
 * under its token prefix (a hash chain over the ids, the ids compared too):
 * a new cache attaches the blocks of a prefix it shares (refcounted, never
 * written: a write into a shared block copies it first), and blocks no
 * cache holds stay cached until the pool needs them (least recently used
 * first). A pool and its caches are used by one thread at a time. */
typedef struct wk_kv_pool wk_kv_pool;
typedef struct wk_kv_pool_opts {
    int64_t block;      /* positions per block (<= 0: 16) */
    int64_t blocks;     /* blocks in the pool (required > 0) */
    /* WK_F32, WK_F16, WK_BF16 or WK_Q8_0 (head_dim % 32 == 0, attention in
     * f32 over the dequantized keys and values); 0 (WK_U8, the
     * zero-initialised default): the model's kv_dtype (f32 unless its load
     * options said otherwise). Anything else: WK_ERR_ARG. */
    wk_dtype dtype;
    bool prefix_cache;  /* keep and reuse full blocks by their token prefix */
} wk_kv_pool_opts;
wk_kv_pool *wk_kv_pool_new(const wk_lm *m, const wk_kv_pool_opts *o);
/* Frees the pool; with paged caches of it still alive it frees nothing and
 * records WK_ERR_ARG (free the caches first). NULL: nothing. */
void wk_kv_pool_free(wk_kv_pool *p);
/* A paged cache for up to max_tokens positions (<= 0: the model's context;
 * at most the positions the model's RoPE tables cover, and no further than
 * the original context under longrope: WK_ERR_ARG). It takes no block yet.
 * wk_kv_cache_len / capacity / truncate / reserve / free and wk_lm_forward
 * take it like a contiguous cache: reserve(c, n) also TAKES the blocks for
 * positions < n now (and makes a shared block it will write private):
 * WK_ERR_BUSY, the cache unchanged, when the pool cannot; truncate(c, n)
 * gives back every block past position n (and any reservation); a forward
 * that needs a block and finds none free or evictable is WK_ERR_BUSY, every
 * cache unchanged. */
wk_kv_cache *wk_kv_cache_new_paged(wk_kv_pool *p, int64_t max_tokens);
/* Attach the longest run of full cached blocks matching ids' prefix,
 * leaving at least one id to run (for its logits). The cache must be paged,
 * empty and hold no block (call it before reserve). Returns the positions
 * reused (its new len; 0 without prefix_cache), or -1 (WK_ERR_ARG). */
int64_t wk_kv_cache_reuse_prefix(wk_kv_cache *c, const int32_t *ids, int64_t n);
/* blocks = used (held by a cache) + cached (kept for their prefix, held by
 * none: evictable) + free; reused_tokens: positions reuse_prefix attached,
 * in total. (The brief named the function wk_kv_pool_stats: C cannot give
 * a function and a typedef one name.) */
typedef struct wk_kv_pool_stats {
    int64_t blocks, used, cached, free, reused_tokens;
} wk_kv_pool_stats;
void wk_kv_pool_get_stats(const wk_kv_pool *p, wk_kv_pool_stats *st);

/* Run n tokens at positions len .. len+n-1 of the cache (one batched pass
 * through the GEMM paths), appending their keys and values. Returns f32
 * logits (n, vocab) when all_logits, else (1, vocab) for the last token, on
 * the model's device (a new reference: free it). WK_ERR_ARG when the cache
 * cannot hold n more tokens ("cache overflow"), an id is out of range or n
 * <= 0; the cache is then unchanged. Not thread-safe per cache; any number
 * of caches may run on one model at once. */
wk_tensor *wk_lm_forward(const wk_lm *m, wk_kv_cache *c, const int32_t *ids, int64_t n, bool all_logits);

/* ---- ragged batches: several sequences in one forward pass ----
 *
 * One sequence of a batch: n >= 1 new tokens for its cache, run at
 * positions len .. len+n-1 of it; all_logits: n rows of logits, else the
 * last token's row only. */
typedef struct wk_lm_seq {
    wk_kv_cache *cache;
    const int32_t *ids;
    int64_t n;
    bool all_logits;
} wk_lm_seq;
/* Run every sequence's new tokens in one forward pass: the rows of all
 * sequences go through each linear layer as one product; attention runs
 * per sequence over its own cache. Returns f32 logits (rows, vocab), the
 * sequences' rows in order (n or 1 each), on the model's device (a new
 * reference). Batch-invariant: each row is bit-identical to what
 * wk_lm_forward gives for that cache and ids alone, whatever else is in the
 * batch. WK_ERR_ARG for NULL arguments, n_seqs < 1 or > 1024, one cache twice, or any
 * sequence wk_lm_forward would refuse; WK_ERR_BUSY when the paged caches'
 * pool cannot supply the blocks the batch needs; every cache is then
 * unchanged. */
wk_tensor *wk_lm_forward_batch(const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs);

#ifdef __cplusplus
}
#endif
#endif /* WICK_LM_H */
