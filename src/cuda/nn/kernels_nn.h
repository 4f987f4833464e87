/* The C ABI of the fused nn kernels (kernels_nn.cu), called by cuda_nn.c.
 * Same rules as cuda_kernels.h: every launcher queues its work on `s` and
 * returns at once, 0 or the cudaError_t of the launch as int
 * (cudaErrorInvalidValue for a malformed call or a dtype that is not
 * f32 / f64 / f16 / bf16 / f8e4m3); nothing to do queues nothing. Inputs are
 * views (any strides, 0 strides included); outputs contiguous. f32 and f64
 * compute in their own type, the narrow floats in f32. */
#ifndef WICK_CUDA_KERNELS_NN_H
#define WICK_CUDA_KERNELS_NN_H
#include "cuda/cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* (log-)softmax of src along dim; dst contiguous with src's shape. One warp
 * per row along dim: each lane keeps an online (max, sum of exp) over its
 * elements, the lanes' states meet in lane order. */
int wk__cu_softmax(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype dt, int dim, bool logp, void *dst);

/* Over the last dim of x; w / b NULL (scale 1 / shift 0) or 1-D views of
 * that size. rms: x / sqrt(mean(x^2) + eps) * w; layer: (x - mean) /
 * sqrt(var + eps) * w + b, biased variance, mean first (two passes). */
int wk__cu_rms_norm(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw, wk_dtype dt,
                    double eps, void *dst);
int wk__cu_layer_norm(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw, const void *b,
                      wk_cu_view lb, wk_dtype dt, double eps, void *dst);

/* Rotary embedding: x (B, H, T, D), or with thd (B, T, H, D); cos / sin
 * (T, D/2) views. Pairs (x[i], x[i + D/2]) or, interleaved,
 * (x[2i], x[2i+1]) -> (a cos - b sin, a sin + b cos). dst contiguous. */
int wk__cu_rope(wk_cu_stream s, const void *x, wk_cu_view lx, const void *cs, wk_cu_view lc, const void *sn,
                wk_cu_view lsn, wk_dtype dt, bool interleaved, bool thd, void *dst);

/* silu(x[..., :h]) * x[..., h:] with h = last / 2 -> dst (..., h) contiguous. */
int wk__cu_swiglu(wk_cu_stream s, const void *x, wk_cu_view lx, wk_dtype dt, void *dst);

/* Attention (src/tensor/backend.h's wk_attention_args, as plain data). */
typedef struct wk_cu_attn_args {
    double scale;
    int32_t causal;   /* query i sees key j iff j <= i + q_offset */
    int64_t q_offset;
    int64_t group;    /* query head h reads kv head h / group (dim rank-3) */
    int64_t window;   /* > 0: query i sees key j only if i + q_offset - j < window; 0: no window */
    double softcap;   /* > 0: scores s * scale become softcap * tanh(s * scale / softcap) before the mask */
} wk_cu_attn_args;

/* How many pieces each query row's keys are split into (flash-decoding):
 * 1 when the rows alone fill the device, more for few rows over many keys
 * (decode, Lq = 1). Pure host decision; lq / lk / lv as for wk__cu_attention. */
int64_t wk__cu_attention_splits(wk_cu_view lq, wk_cu_view lk, wk_cu_view lv, wk_cu_attn_args a);
/* Bytes of workspace wk__cu_attention needs for `splits` (0 for 1). */
size_t wk__cu_attention_workspace(wk_cu_view lq, wk_cu_view lv, wk_dtype dt, int64_t splits);

/* dst (..., Lq, Dv) contiguous = softmax(q k^T * scale + mask [causal]) v:
 * q (..., Lq, D), k (..., Lk, D), v (..., Lk, Dv), rank r >= 2, batch dims
 * equal but dim r-3 of k / v, which is q's / group; mask NULL or a view of
 * q's dtype already broadcast to (..., Lq, Lk). Tiled: one warp per (query
 * row, key split, 256 output dims); keys in tiles of 32 (one per lane)
 * with an online softmax, so memory is O(tile), never O(Lq * Lk). With
 * splits > 1 each split writes (max, sum, partial output) into workspace
 * (wk__cu_attention_workspace bytes, device memory) and a second kernel
 * merges them in split order. Deterministic: no atomics. A row with every
 * key masked (or no key) gives NaN. A window's rows read only their keys
 * [i + q_offset - window + 1, ...): the splits cover that span, not Lk. */
int wk__cu_attention(wk_cu_stream s, const void *q, wk_cu_view lq, const void *k, wk_cu_view lk, const void *v,
                     wk_cu_view lv, const void *mask, wk_cu_view lm, wk_dtype dt, wk_cu_attn_args a, int64_t splits,
                     void *workspace, void *dst);

#ifdef __cplusplus
}
#endif
#endif
