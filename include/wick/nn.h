/* Fused neural-network ops (included from wick.h). Each runs as one backend
 * kernel where the backend has the optional entry (src/tensor/backend.h), else as
 * a composite of the required entries with the same results up to rounding;
 * f16 / bf16 / f8 inputs compute through f32 either way. Float dtypes only;
 * errors as everywhere (NULL + wk_last_error). */
#ifndef WICK_NN_H
#define WICK_NN_H
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* exp(x - max) / sum(exp(x - max)) along dim (negative dims count from the
 * end); log_softmax = (x - max) - log(sum(exp(x - max))). */
wk_tensor *wk_softmax(const wk_tensor *t, int dim);
wk_tensor *wk_log_softmax(const wk_tensor *t, int dim);

/* Over the last dim; weight / bias 1-D of that size, or NULL (1 / 0).
 * rms_norm: x / sqrt(mean(x^2) + eps) * weight (candle's rms_norm);
 * layer_norm: (x - mean) / sqrt(var + eps) * weight + bias, biased var. */
wk_tensor *wk_rms_norm(const wk_tensor *x, const wk_tensor *weight, double eps);
wk_tensor *wk_layer_norm(const wk_tensor *x, const wk_tensor *weight, const wk_tensor *bias, double eps);

/* Rotary embedding, candle's rope / rope_i layout: x (B, H, T, D), D even,
 * cos and sin (T, D/2). Not interleaved (rope, GPT-NeoX style): the pair
 * (x[i], x[i + D/2]) rotates by angle (t, i); interleaved (rope_i, GPT-J
 * style): the pair (x[2i], x[2i+1]). out = (a cos - b sin, a sin + b cos).
 * For candle's rope_thd (B, T, H, D) layout, wk_rope_thd below. */
wk_tensor *wk_rope(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved);

/* softmax(q k^T * scale + mask) v over the last two dims, as
 * torch.nn.functional.scaled_dot_product_attention: q (..., Lq, D),
 * k (..., Lk, D), v (..., Lk, Dv), batch dims equal; mask NULL or an
 * additive mask of q's dtype broadcastable to (..., Lq, Lk); causal masks
 * key j > query i (top-left aligned, as torch's is_causal); scale <= 0
 * means 1/sqrt(D). A row with every key masked gives NaN (as torch). */
wk_tensor *wk_scaled_dot_product_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v,
                                           const wk_tensor *mask, double scale, bool causal);

/* Rotary embedding on candle's rope_thd layout: x (B, T, H, D), cos / sin
 * (T, D/2), pairs halves or (interleaved) neighbours as wk_rope. The result
 * is contiguous (B, T, H, D). GGUF llama models use interleaved pairs; HF
 * checkpoints rotate halves. cos / sin may be any strided view (a narrow of
 * a precomputed table for the positions being run). */
wk_tensor *wk_rope_thd(const wk_tensor *x, const wk_tensor *cos, const wk_tensor *sin, bool interleaved);

/* Attention for decoding and grouped-query heads. */
typedef struct wk_attention_opts {
    const wk_tensor *mask; /* additive, q's dtype, broadcastable to (..., Hq, Lq, Lk); or NULL */
    double scale;          /* <= 0: 1 / sqrt(D) */
    bool causal;           /* query i sees key j iff j <= i + q_offset */
    int64_t q_offset;      /* position of query 0 among the keys: Lk - Lq when decoding with a cache */
    /* > 0: sliding window. Query i (at position p = i + q_offset) sees key
     * j only if p - j < window: the window most recent keys including its
     * own position (Mistral / Gemma 2 / transformers' sliding_window). Only
     * the past side is cut: without causal, keys after p stay visible.
     * 0: no window; < 0 is an error. */
    int64_t window;
    /* > 0: logit soft-capping (Gemma 2): each score s = q.k * scale becomes
     * softcap * tanh(s / softcap) before the mask and the softmax. 0: off;
     * < 0 is an error. */
    double softcap;
} wk_attention_opts;
/* softmax(q k^T * scale + mask [causal]) v with q (..., Hq, Lq, D),
 * k (..., Hkv, Lk, D), v (..., Hkv, Lk, Dv), rank >= 3, equal batch dims,
 * Hkv dividing Hq: query head h reads kv head h / (Hq / Hkv) (GQA / MQA).
 * Any strides (a narrow of a preallocated KV cache is the usual k / v).
 * opts NULL: no mask, default scale, not causal, offset 0. Result
 * contiguous (..., Hq, Lq, Dv). Fused backends tile over keys with an
 * online softmax (memory O(tile), not O(Lq * Lk)) and never read the keys
 * a window leaves out (a decode step reads window keys, not Lk). A query row with every
 * key masked gives NaN (as torch); no keys at all (Lk = 0) gives zeros. */
wk_tensor *wk_attention(const wk_tensor *q, const wk_tensor *k, const wk_tensor *v, const wk_attention_opts *opts);

/* silu(a) * b where a, b are the first and second halves of the last dim
 * (candle's swiglu); last dim even, result (..., D/2) contiguous. */
wk_tensor *wk_swiglu(const wk_tensor *x);

/* Quantized matmul y = x @ w^T: x (..., K) f32/f16/bf16 with any batch dims
 * and strides, w (N, K) of a GGML block dtype or f16/bf16, rows contiguous
 * (any row stride), same device. y (..., N) in x's dtype. On the CPU, as
 * ggml does, the rows of x are quantized once to w's partner block type
 * (q8_0 / q8_1 / q8_K) and dotted in integers; f16/bf16 weights are widened
 * and x stays f32 (except bf16 prefill on AVX512-BF16, where x is rounded to
 * bf16). On CUDA, decode dots f32 x with the dequantized weights and
 * prefill dequantizes to f16 / bf16 for cuBLAS (an f32 x rounded to f16).
 * Errors: WK_ERR_DTYPE (x not float, w neither blocks nor f16/bf16),
 * WK_ERR_SHAPE (w not 2-D, K differs, w rows not contiguous),
 * WK_ERR_DEVICE, WK_ERR_NOT_COMPILED (a backend without the entry). */
wk_tensor *wk_qmatmul(const wk_tensor *x, const wk_tensor *w);
/* Dequantize a block tensor w (any valid block view) into a new contiguous
 * tensor of element dtype dt (f32, f16, bf16 directly; other element dtypes
 * through f32), same shape and device. Bit-exact with gguf-py's f32 values. */
wk_tensor *wk_dequantize(const wk_tensor *w, wk_dtype dt);
/* Quantize t (f32, f16, bf16 or f64; any layout, rank >= 1, last dim a
 * multiple of qdt's block) into a new contiguous tensor of the block dtype
 * qdt, same shape and device (a device without a quantize entry goes
 * through the host). ggml's reference quantizers, byte-exact with gguf-py
 * 0.19.0 for q4_0 q4_1 q5_0 q5_1 q8_0 (the others follow ggml's reference
 * quantizers the same way). A block-dtype t is requantized through f32. */
wk_tensor *wk_quantize(const wk_tensor *t, wk_dtype qdt);
/* wk_quantize with an importance matrix (llama.cpp's imatrix; see
 * wick/imatrix.h to read one): imatrix[n] holds one weight per column (the
 * mean squared activation that column meets), n = t's last dim, or for a
 * stack of matrices (rank >= 3, shape (..., rows, cols)) n = cols times the
 * number of matrices, one slice each. The bytes are ggml_quantize_chunk's
 * with that matrix. It steers q4_0 q4_1 q5_0 q5_1 q2_K..q6_K iq4_nl iq4_xs;
 * q8_0 q8_1 q8_K quantize as wk_quantize. A wrong n is WK_ERR_SHAPE, a NULL
 * or non-finite matrix WK_ERR_ARG. Quantizes on the host, one thread. */
wk_tensor *wk_quantize_imatrix(const wk_tensor *t, wk_dtype qdt, const float *imatrix, int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* WICK_NN_H */
