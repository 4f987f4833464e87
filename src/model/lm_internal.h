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

#include "model/lm_arch.h"
#include "model/lm_tp.h"

/* The linear layers are the kit's wk_linear (wick/layers.h), weights kept
 * as the file stores them: a block or f16/bf16 weight (N, K) goes through
 * wk_qmatmul with f32 x, an f32 one through a matmul with its transposed
 * view (no copy). Biases where the file has them (f32). */

typedef struct wk__lm_layer {
    wk_norm_layer attn_norm, ffn_norm;  /* rms, (dim) f32 */
    wk_norm_layer post_attn_norm, post_ffn_norm; /* cfg.post_norms only */
    wk_norm_layer q_norm, k_norm;       /* cfg.qk_norm only: (head_dim) */
    /* q, k and v as one (Hq*D + 2*Hkv*D, dim) matrix: the file's (Phi-3),
     * or fused at load with WICK_LLAMA_FUSE=1 when the three share a dtype
     * (their rows concatenate, blocks included); otherwise (weight NULL)
     * q, k, v are used */
    wk_linear qkv;
    wk_linear q, k, v;
    wk_linear o;
    /* likewise gate and up as one (2*ffn, dim) matrix, gate first */
    wk_linear gate_up;
    wk_linear gate, up;
    wk_linear down;
    uint8_t flags; /* WK_LM_SLIDING, WK_LM_NO_ROPE */
} wk__lm_layer;

/* One set of RoPE angles: (rows, rope_dims/2) f32 cos and sin for
 * positions 0 .. rows-1, and the frequencies they are made of. */
typedef struct wk__lm_rope {
    double *inv;          /* rope_dims/2 inverse frequencies (NULL in a cache: the model's) */
    wk_tensor *cos, *sin;
} wk__lm_rope;

/* Which rope set a layer uses: 1 for Gemma 3's local layers, else 0. */
#define WK__LM_ROPE_SETS 2

/* ---- BEGIN pipeline parallel (src/model/lm_pp*.c) ---- */
/* This rank's part of a pipeline-parallel model: layers l0 .. l1-1 (the
 * others' slots in wk_lm.layers stay zeroed), the token table on rank 0,
 * the final norm and lm head on the last rank. */
typedef struct wk__lm_pp {
    wk_comm *comm;      /* borrowed from the load options */
    int rank, size;
    int64_t l0, l1;
    int64_t microbatch; /* prefill positions per micro-batch (> 0) */
} wk__lm_pp;
/* ---- END pipeline parallel ---- */

struct wk_lm {
    wk_lm_config cfg;
    const wk__lm_arch *arch;
    uint8_t *layer_flags; /* cfg.layer_flags points here */
    wk_device *dev;
    wk_dtype kv_dtype;           /* the caches' dtype (wk_lm_load_opts.kv_dtype): f32, f16 or bf16 */
    wk_embedding_layer tok_embd; /* (vocab, dim): f32 / f16 / bf16 or blocks */
    wk_linear output;            /* the lm head: tok_embd's weight when tied */
    wk_norm_layer out_norm;      /* rms, (dim) f32 */
    wk__lm_layer *layers;
    /* RoPE tables for the first positions (max_ctx or fewer: what
     * wk__lm_rope_eager_bytes allows; a file's context times its head size
     * is no bound on what wick should allocate at load). A cache longer
     * than that builds its own. [1] is used only when local layers have
     * their own base (cfg.rope_local_theta). */
    wk__lm_rope rope[WK__LM_ROPE_SETS];
    /* longrope: the long factors' frequencies, for caches longer than the
     * original context (llama.cpp's rule: the context decides, once) */
    double *rope_inv_long;
    wk_tokenizer *tok;     /* NULL when the file has none (no tokenizer.ggml.* / tokenizer.json) */
    char *chat_template;   /* NULL when absent */
    /* tensor parallel: this rank's shares (comm NULL: the whole model;
     * src/model/lm_tp.c). tp.hq / tp.hkv are the heads this process runs. */
    wk__lm_tp tp;
    wk__lm_pp *pp;         /* pipeline parallel: this rank's part; NULL: the whole model */
};

struct wk_kv_cache {
    const wk_lm *m;
    int64_t len;
    /* per layer (1, Hkv, cap, D) f32, allocated once: the kit's store. A
     * paged cache has no tensors here (layers 0), only kv.cap, its capacity */
    wk__kv_store kv;
    /* the cache's own RoPE tables when it is longer than the model's or
     * takes longrope's long factors (cos NULL: the model's serve) */
    wk__lm_rope rope[WK__LM_ROPE_SETS];

    /* --- paged caches only (pool != NULL; src/model/kv_pool.c) --- */
    wk_kv_pool *pool;
    int64_t *table;   /* ceil(cap / block) slots; the first n_table hold block ids */
    int64_t n_table;
    int32_t *ids;     /* cap token ids: position i's (the prefix cache's keys) */
    int64_t n_reg;    /* the first n_reg blocks of the table are registered in the prefix cache */
    /* undo of the forward in flight (wk__kv_paged_prepare): the table's length
     * before it, and the shared block a copy-on-write replaced (-1: none) */
    int64_t undo_n_table, undo_cow_slot, undo_cow_block;
};

/* The most sequences one wk_lm_forward_batch takes. */
#define WK__LM_BATCH_MAX 1024

/* ---- the paged KV pool's side of a forward (src/model/kv_pool.c) ---- */
/* Take the blocks positions len .. len+n[i]-1 of every paged cache need
 * (and a private copy of a shared block about to be written), all or none:
 * WK_ERR_BUSY naming the shortfall, no cache changed. Contiguous caches are
 * skipped. */
wk_status wk__kv_paged_prepare(const wk_lm_seq *seqs, int64_t n_seqs);
/* After a failed forward: give back what prepare took, every table as before. */
void wk__kv_paged_rollback(const wk_lm_seq *seqs, int64_t n_seqs);
/* After a successful one (len already advanced): register the blocks it filled. */
void wk__kv_paged_commit(const wk_lm_seq *seqs, int64_t n_seqs);
/* Attention of one layer li for a paged cache: kr, vv (1, Hkv, n, D) in the
 * attention dtype go into the cache's blocks at pos (rounded / quantized to
 * the pool's dtype), then qr attends over the positions 0 .. pos+n-1
 * gathered from the blocks. (n, Hq*D) in adt. */
wk_tensor *wk__kv_paged_attend(wk_kv_cache *c, const wk__attn_heads *h, int64_t li, const wk_tensor *qr,
                               const wk_tensor *kr, const wk_tensor *vv, int64_t pos, wk_dtype adt);
/* The dtype attention runs in for this cache (the store's, or the pool's
 * float dtype; f32 for a q8_0 pool). */
wk_dtype wk__kv_attn_dtype(const wk_kv_cache *c);
/* Paged caches: reserve, truncate and free (kv_cache.c dispatches). */
wk_status wk__kv_paged_reserve(wk_kv_cache *c, int64_t max_tokens);
wk_status wk__kv_paged_truncate(wk_kv_cache *c, int64_t n);
void wk__kv_paged_free(wk_kv_cache *c);

/* ---- BEGIN pipeline parallel (src/model/lm_pp*.c) ---- */
/* The layers this process runs and holds caches for: [l0, l1). */
static inline int64_t wk__lm_l0(const wk_lm *m) { return m->pp ? m->pp->l0 : 0; }
static inline int64_t wk__lm_l1(const wk_lm *m) { return m->pp ? m->pp->l1 : m->cfg.n_layers; }
/* Which parts this process holds. */
static inline bool wk__lm_has_embd(const wk_lm *m) { return !m->pp || m->pp->rank == 0; }
static inline bool wk__lm_has_head(const wk_lm *m) { return !m->pp || m->pp->rank == m->pp->size - 1; }
/* wk_lm_load's part (lm_pp_load.c): m->pp from the options when they ask
 * for pipeline parallelism over more than one rank (m->pp stays NULL
 * otherwise); WK_ERR_ARG when the model has fewer layers than ranks. */
wk_status wk__lm_pp_setup(wk_lm *m, const wk_lm_load_opts *o, const char *path);
/* After this rank's load (st): every rank's outcome; WK_ERR_ARG naming a
 * rank that failed when this one did not, st when it did. Collective. */
wk_status wk__lm_pp_agree(const wk_lm *m, wk_status st);
/* wk_lm_forward_batch on a pipeline-parallel model (lm_pp.c). */
wk_tensor *wk__lm_pp_forward(const char *op, bool numbered, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs);
/* lm_forward.c's pieces it runs: the argument checks of a forward (NULLs,
 * counts, caches, ids); one pass of seqs through this process's layers,
 * from x_in (R, dim) f32 or (x_in NULL) the token rows, returning the
 * activations (R, dim) after the last local layer (the caches advance as
 * in any forward); and the final norm + lm head (+ soft-cap) of rows x. */
wk_status wk__lm_forward_check(const char *op, bool numbered, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs);
wk_tensor *wk__lm_forward_stage(const char *op, const wk_lm *m, const wk_lm_seq *seqs, int64_t n_seqs,
                                wk_tensor *x_in);
wk_tensor *wk__lm_head(const wk_lm *m, const wk_tensor *x);
/* ---- END pipeline parallel ---- */

/* The rope set layer l uses. */
static inline int wk__lm_rope_set(const wk_lm *m, int64_t l) {
    return (m->layers[l].flags & WK_LM_SLIDING) && m->cfg.rope_local_theta > 0 ? 1 : 0;
}

/* Build the (rows, rope_dims/2) tables of inv on m's device, scaled by the
 * config's longrope attention factor. */
wk_status wk__lm_rope_build(const wk_lm *m, const double *inv, int64_t rows, wk__lm_rope *out);

/* Config from a GGUF reader's <arch>.* keys (and the token table's shape for
 * the vocabulary size when <arch>.vocab_size is absent), the raw family
 * keys, and the family the file names. */
wk_status wk__lm_config_from_gguf(const wk_gguf *g, wk_lm_config *cfg, wk__lm_raw *r, const wk__lm_arch **arch);
/* Config from an HF config.json's text. */
wk_status wk__lm_config_from_json(const char *json, size_t len, const char *path, wk_lm_config *cfg, wk__lm_raw *r,
                                  const wk__lm_arch **arch);
/* The family's rules, then the checks; flags: cfg->n_layers zeroed bytes. */
wk_status wk__lm_config_finish(const wk__lm_arch *a, const wk__lm_raw *r, wk_lm_config *cfg, uint8_t *flags,
                               const char *src);
/* Every common field consistent (heads divide, sizes positive, ...). */
wk_status wk__lm_config_check(const wk_lm_config *cfg, const char *src);

/* cfg's RoPE frequencies (local: Gemma 3's sliding layers) for the layer
 * kit's wk__rope_inv_freq. */
wk__rope_freqs wk__lm_rope_freqs(const wk_lm_config *cfg, bool local);
/* The most bytes (both tables) the model's RoPE tables take at load
 * (16 MiB: 32768 positions of a 128-wide head); longer caches make their
 * own. A variable so that tests can lower it. */
extern int64_t wk__lm_rope_eager_bytes;

/* Read a whole small file (config.json, tokenizer_config.json) into a
 * NUL-terminated buffer; NULL + WK_ERR_IO. */
char *wk__read_small_file(const char *op, const char *path, size_t *len);

#endif
