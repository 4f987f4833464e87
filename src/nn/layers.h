/* The layer kit's internals (src/nn/layers.c), for the floors above nn:
 * the models (src/model), training (src/train). The public half, the layer
 * structs and their forwards, is include/wick/layers.h. */
#ifndef WICK_NN_LAYERS_H
#define WICK_NN_LAYERS_H
#include "wick/layers.h"

/* x through nw (1..8) linears of one input size at once: (..., out_0 + ...
 * + out_{nw-1}), layer i's outputs after layer i-1's, the values of wk_cat
 * of their wk_linear_forward results. Untracked, block or f16 / bf16
 * weights of one dtype, no biases (a decode step's q, k, v or gate, up): one
 * wk__prim_qmatmul_multi, x converted once and one parallel region, the
 * weights left where they are (no concatenated copy). Otherwise the
 * separate forwards, concatenated. */
wk_tensor *wk__linear_multi_forward(const wk_linear *const *ls, int nw, const wk_tensor *x);
/* Whether wk__linear_multi_forward(ls, nw, x) runs as that one backend
 * call (the conditions above, and the backend has the qmatmul_multi entry):
 * a caller with a cheaper form of the separate products (narrows of them,
 * no cat) takes that form otherwise. */
bool wk__linear_multi_is_one(const wk_linear *const *ls, int nw, const wk_tensor *x);

/* A composite's result made inside its own scope and kept, handed to the
 * caller as a new result: registered in the caller's scope like any op's
 * (a header of its own; the kept one is dropped). NULL passes through. */
wk_tensor *wk__hand_over(wk_tensor *kept);

/* a and b (either may be NULL) as a layer's *_params lists them. */
int wk__list_params(wk_tensor *a, wk_tensor *b, wk_tensor **out, int cap);

/* Store a float weight transposed: l->weight becomes an (out, in) view of a
 * contiguous (in, out) copy, so that the forward's GEMM reads a short
 * batch's weights in place instead of repacking them on every call (BERT's
 * 8-token sentences spent more time packing than in FMAs). Same values; a
 * block weight is left as it is. The new weight belongs where a fresh
 * result would (the open scope, else l): call it where the old one was made. */
wk_status wk__linear_pretranspose(wk_linear *l);


/* ------------------------------------------------------------------ RoPE */

typedef enum wk__rope_scaling {
    WK__ROPE_PLAIN = 0, /* theta^(-2i/D) */
    WK__ROPE_LINEAR,    /* divided by factor */
    WK__ROPE_LLAMA3     /* Llama 3.1: long wavelengths / factor, short kept, a blend between */
} wk__rope_scaling;

typedef struct wk__rope_freqs {
    int64_t head_dim;
    double theta;
    wk__rope_scaling scaling;
    double factor;                             /* linear, llama3 */
    double low_freq_factor, high_freq_factor; /* llama3 */
    int64_t orig_ctx;                          /* llama3: the original context */
} wk__rope_freqs;

/* The head_dim/2 inverse frequencies of p (in double, as transformers
 * computes them; freq_factors: head_dim/2 divisors, a GGUF rope_freqs
 * tensor, or NULL) into *inv (malloc'd). op names errors. */
wk_status wk__rope_inv_freq(const char *op, const wk__rope_freqs *p, const float *freq_factors, double **inv);
/* The (positions, half) f32 cos and sin tables of those frequencies on dev
 * (angle t * inv[i] in f32, as transformers). */
wk_status wk__rope_tables(const char *op, const double *inv, int64_t half, int64_t positions, wk_device *dev,
                          wk_tensor **cos, wk_tensor **sin);

/* ------------------------------------------------------ KV cache, attention */

/* One sequence's keys and values: per layer (1, kv_heads, cap, head_dim)
 * of dtype dt (f32, or f16 / bf16: half the bytes a decode step reads over
 * a long context), allocated once (zeros); attention writes new positions
 * in place and reads a narrow of the filled part. */
typedef struct wk__kv_store {
    int64_t layers, cap;
    wk_tensor **k, **v;
} wk__kv_store;
wk_status wk__kv_store_init(wk__kv_store *s, int64_t layers, int64_t kv_heads, int64_t cap, int64_t head_dim,
                            wk_dtype dt, wk_device *dev);
void wk__kv_store_free(wk__kv_store *s);

/* Causal self-attention with rotary embedding and a KV cache for the n new
 * positions pos .. pos+n-1 of one sequence: q (n, Hq*D), k and v (n, Hkv*D)
 * rows, any strides (narrows of a fused projection are fine); cos / sin
 * (n, R/2) the RoPE rows of those positions (interleaved pairs or halves,
 * as wk_rope_thd; R = rope_dims, or D); layer li of s receives the rotated
 * keys and the values at pos, then every query attends to positions 0 ..
 * its own, or its last window (GQA: query head h reads kv head h / (Hq /
 * Hkv)). Returns (n, Hq*D) in q's dtype. A cache of another float dtype
 * than q (an f16 cache under f32 activations) receives k and v rounded to
 * it, and attention runs in it: q is rounded too (as llama.cpp's CPU
 * attention over an f16 cache does), and the output widened back. A
 * zero-initialised struct but the head counts
 * is plain Llama attention. */
typedef struct wk__attn_heads {
    int64_t q_heads, kv_heads, head_dim;
    bool interleaved;
    int64_t window;    /* > 0: sliding window (Mistral, Gemma 2's local layers), as wk_attention_opts */
    double softcap;    /* > 0: attention logit soft-capping (Gemma 2) */
    double scale;      /* <= 0: 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar^-1/2) */
    bool rope_skip;    /* no RoPE on this layer (SmolLM3's NoPE layers): cos / sin unused, may be NULL */
    int64_t rope_dims; /* partial rotary: only the first rope_dims (even) of each head rotate, the rest
                        * pass through; 0: the whole head */
} wk__attn_heads;
wk_tensor *wk__rope_cached_attention(const wk__attn_heads *h, const wk_tensor *q, const wk_tensor *k,
                                     const wk_tensor *v, const wk_tensor *cos, const wk_tensor *sin,
                                     wk__kv_store *s, int64_t li, int64_t pos);

/* The two halves of wk__rope_cached_attention, for a cache that is not one
 * wk__kv_store (the paged KV pool, src/model/kv_pool.c): q, k, v as above,
 * rotated and rounded to cdt, as (1, heads, n, D) views (*qo, *ko, *vo);
 * then attention of those queries (positions pos .. pos+n-1) over kc, vc
 * (1, Hkv, pos+n, D) keys and values, any strides, returned as (n, Hq*D)
 * in adt. The composition with a store write between is bit for bit
 * wk__rope_cached_attention. */
wk_status wk__rope_qkv(const wk__attn_heads *h, const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                       const wk_tensor *cos, const wk_tensor *sin, wk_dtype cdt, wk_tensor **qo, wk_tensor **ko,
                       wk_tensor **vo);
wk_tensor *wk__cached_attend(const wk__attn_heads *h, const wk_tensor *qr, const wk_tensor *kc, const wk_tensor *vc,
                             int64_t pos, wk_dtype adt);

/* An additive key-padding mask (B, 1, 1, L) f32 on dev: 0 on the first
 * lens[i] keys of row i, -inf after, so no query attends to padding. */
wk_tensor *wk__key_padding_mask(const int64_t *lens, int64_t B, int64_t L, wk_device *dev);

#endif
