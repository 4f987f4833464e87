/* The backend contract: the C counterpart of candle's BackendStorage +
 * BackendDevice. One table of function pointers per backend, in two parts:
 *  - required entries (tests/test_backend_contract.c fails if one is NULL):
 *    with these alone a new backend runs every op of the library;
 *  - optional entries (after `synchronize`) for fused, quantized and
 *    device-to-device work and backward passes: NULL means the caller runs
 *    a composite of required entries instead (the public nn ops of
 *    src/nn/nn.c, the backward rules), or moves the work through the host
 *    (quantize, dequantize, copy_between); qmatmul alone has no fallback.
 * Each backend also registers a wk_backend_desc (devices, memory counters)
 * with the registry (src/tensor/registry.c); nothing above the backends
 * names one.
 *
 * Rules every entry follows:
 *  - The caller (the untracked primitive ops wk__prim_* of src/ops; for
 *    the backward entries, the rules that call them) has already checked
 *    devices, dtypes, shapes and dims. Backends check only what depends on data
 *    (integer division by zero) and resources (allocation).
 *  - Inputs come as (buffer, layout); layouts are views into the buffer with
 *    element strides and offset, possibly 0-stride (broadcast). Inputs of a
 *    multi-input op are already broadcast to the output shape.
 *  - Outputs are freshly allocated, contiguous, row-major, unless the entry
 *    says it writes in place (copy_strided, fill, scatter, index_add,
 *    optim_step).
 *  - Return WK_OK or record an error with wk__err and return its status.
 *  - A GPU backend may queue the work and return at once; to_host waits for
 *    the work that produced the buffer it reads.
 */
#ifndef WICK_BACKEND_H
#define WICK_BACKEND_H
#include "tensor/layout.h"
#include <stddef.h>

/* Convolution after validation: spatial rank 1 (N, C, L) or 2 (N, C, H, W),
 * forward or transposed, parameters normalized (stride / dilation / groups
 * >= 1). One entry serves the four public convolutions. */
typedef struct wk_conv_args {
    wk_conv_params p;
    int spatial;      /* 1 or 2 */
    bool transposed;
} wk_conv_args;

/* Scaled dot-product attention after validation: q (..., Lq, D), k (..., Lk,
 * D), v (..., Lk, Dv), all with the same batch dims (already broadcast)
 * except the head dim (rank-3) of k / v, which is Hq / group (GQA);
 * mask NULL or an additive mask of q's dtype broadcast to (..., Lq, Lk);
 * causal keeps key j <= query i (top-left aligned, as torch's is_causal).
 * The keys query i may see form one range [lo, hi): lo = max(0, i +
 * q_offset - window + 1) with a window, hi = min(Lk, i + q_offset + 1) when
 * causal; fused entries skip the key tiles outside it. */
typedef struct wk_attention_args {
    double scale;
    double softcap;   /* > 0: each score s (q.k * scale) becomes softcap * tanh(s / softcap), before the mask */
    int64_t q_offset; /* >= 0 */
    int64_t group;    /* Hq / Hkv >= 1: k / v have Hkv heads at dim rank-3, query head h reads h / group */
    int64_t window;   /* > 0: query i sees key j only if i + q_offset - j < window (with causal or not); 0: all */
    bool causal;      /* query i sees key j iff j <= i + q_offset */
} wk_attention_args;

/* An optimizer step (optim_step): the rule and its hyperparameters, with
 * the step-dependent factors worked out on the host. */
typedef enum wk_optim_kind { WK_OPTIM_SGD = 0, WK_OPTIM_ADAM, WK_OPTIM_ADAMW } wk_optim_kind;
typedef struct wk_optim_args {
    wk_optim_kind kind;
    double lr, weight_decay;
    /* SGD: buf = momentum * buf + (1 - dampening) * g (buf = g on the first
     * step, first_step true); nesterov: g + momentum * buf; m is buf */
    double momentum, dampening;
    bool nesterov, first_step;
    /* Adam / AdamW: m, v moments; bias corrections 1 - beta^t precomputed */
    double beta1, beta2, eps, bias_correction1, bias_correction2;
} wk_optim_args;

/* Pooling parameters after validation: kernel, stride, padding per spatial
 * dim (H, W). */
typedef struct wk_pool_params {
    int64_t k[2], s[2], p[2];
    bool is_max, count_include_pad;
} wk_pool_params;

typedef struct wk_backend {
    const char *name;

    /* memory */
    wk_status (*alloc)(wk_device *dev, size_t nbytes, void **buf);
    void (*free)(wk_device *dev, void *buf, size_t nbytes);
    /* host -> device, contiguous bytes at byte offset `off` of buf */
    wk_status (*from_host)(wk_device *dev, void *buf, size_t off, const void *src, size_t nbytes);
    /* gather the view (src, l) into contiguous host memory, dtype unchanged */
    wk_status (*to_host)(wk_device *dev, const void *src, const wk_layout *l, wk_dtype dt, void *dst);

    /* copies and fills; dst written through its layout (same shape as src) */
    wk_status (*copy_strided)(wk_device *dev, const void *src, const wk_layout *ls, void *dst,
                              const wk_layout *ld, wk_dtype dt);
    wk_status (*fill)(wk_device *dev, void *dst, const wk_layout *ld, wk_dtype dt, double value);
    /* dst contiguous in dtype ddt */
    wk_status (*cast)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype sdt, void *dst, wk_dtype ddt);

    /* elementwise; dst contiguous */
    wk_status (*unary)(wk_device *dev, wk_unary_op op, const void *src, const wk_layout *ls, void *dst, wk_dtype dt);
    wk_status (*affine)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double mul,
                        double add);
    wk_status (*powf)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double e);
    wk_status (*elu)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double alpha);
    wk_status (*clamp)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double lo,
                       double hi);
    wk_status (*binary)(wk_device *dev, wk_binary_op op, const void *a, const wk_layout *la, const void *b,
                        const wk_layout *lb, void *dst, wk_dtype dt);
    /* dst is u8 */
    wk_status (*cmp)(wk_device *dev, wk_cmp_op op, const void *a, const wk_layout *la, const void *b,
                     const wk_layout *lb, void *dst, wk_dtype dt);
    /* cond has dtype cdt (the tensor layer passes integer dtypes only; a float
     * cond is true when its value truncated to an integer is nonzero, NaN
     * false); a, b and dst have dtype dt */
    wk_status (*where)(wk_device *dev, const void *cond, const wk_layout *lc, wk_dtype cdt, const void *a,
                       const wk_layout *la, const void *b, const wk_layout *lb, void *dst, wk_dtype dt);

    /* Reduce the dims with mask[d] set. dst is contiguous over the kept dims
     * (in order), dtype = dt for sum/mean/max/min, u32 for argmax/argmin. */
    wk_status (*reduce)(wk_device *dev, wk_reduce_op op, const void *src, const wk_layout *ls, wk_dtype dt,
                        const bool *mask, void *dst);

    /* C[b] = A[b] @ B[b] for the batch dims of la/lb (rank >= 2, identical
     * batch shapes, any strides incl. 0); dst contiguous (batch..., m, n). */
    wk_status (*matmul)(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                        void *dst, wk_dtype dt);

    /* ---- indexing (ids: integer dtype idt; backends check every index
     * against the size and return WK_ERR_INDEX, never read out of bounds) ---- */
    /* dst contiguous: src's shape with shape[dim] = numel(ids); ids 1-D */
    wk_status (*index_select)(wk_device *dev, const void *src, const wk_layout *ls, const void *ids,
                              const wk_layout *lids, wk_dtype idt, int dim, void *dst, wk_dtype dt);
    /* dst contiguous with ids' shape */
    wk_status (*gather)(wk_device *dev, const void *src, const wk_layout *ls, const void *ids, const wk_layout *lids,
                        wk_dtype idt, int dim, void *dst, wk_dtype dt);
    /* in place through ld: dst[.. ids[i] ..] = src[i] (or += when add) */
    wk_status (*scatter)(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                         wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt, bool add);
    /* in place through ld: dst.index_select(dim, ids) += src; ids 1-D */
    wk_status (*index_add)(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                           wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt);

    /* ---- convolution; dst contiguous, shape computed by the dispatcher ---- */
    wk_status (*conv)(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                      void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_args *a);

    /* ---- pooling and resampling (NCHW; 1-d ops arrive with H = 1) ---- */
    wk_status (*pool2d)(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                        wk_dtype dt, const wk_pool_params *p);
    wk_status (*upsample2d)(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                            wk_dtype dt, bool bilinear, bool align_corners);

    /* ---- scans and order along dim; outputs contiguous with src's shape
     * (topk: shape[dim] = k) ---- */
    wk_status (*scan)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, int dim, bool prod);
    /* values (dt) and indices (i64); either may be NULL */
    wk_status (*sort)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, bool descending,
                      void *values, void *indices);
    wk_status (*topk)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t k,
                      bool largest, void *values, void *indices);

    /* random numbers into a contiguous buffer of n elements (float dtypes) */
    wk_status (*rand_uniform)(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double lo, double hi);
    wk_status (*rand_normal)(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double mean, double std);
    wk_status (*set_seed)(wk_device *dev, uint64_t seed);
    wk_status (*synchronize)(wk_device *dev);

    /* ======== optional entries: NULL => the dispatcher's fallback ======== */

    /* (log-)softmax along dim; dst contiguous with src's shape. Float dtypes.
     * Fallback: max, sub, exp, sum, div / log (the composite in src/nn/nn.c). */
    wk_status (*softmax)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst);
    wk_status (*log_softmax)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, void *dst);
    /* Normalize over the last dim; w (and b) 1-D of that size or NULL
     * (scale 1, shift 0). rms: x / sqrt(mean(x^2) + eps) * w;
     * layer: (x - mean) / sqrt(var + eps) * w + b (biased variance). */
    wk_status (*rms_norm)(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                          wk_dtype dt, double eps, void *dst);
    wk_status (*layer_norm)(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                            const void *b, const wk_layout *lb, wk_dtype dt, double eps, void *dst);
    /* Rotary embedding of x (B, H, T, D), or with thd (B, T, H, D), with
     * cos / sin (T, D/2) (any strides): halves (x[i], x[i + D/2]) or,
     * interleaved, pairs (x[2i], x[2i+1]) rotate by angle (t, i). dst
     * contiguous in x's shape. */
    wk_status (*rope)(wk_device *dev, const void *x, const wk_layout *lx, const void *cos, const wk_layout *lc,
                      const void *sin, const wk_layout *lsn, wk_dtype dt, bool interleaved, bool thd, void *dst);
    /* silu(x[..., :D/2]) * x[..., D/2:] -> dst contiguous (..., D/2). */
    wk_status (*swiglu)(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype dt, void *dst);
    /* softmax(cap(q k^T * scale) + mask [causal, window]) v; dst contiguous
     * (..., Lq, Dv). a's window and softcap must be honoured (a NULL entry
     * leaves them to the composite); keys outside a row's window should not
     * be read. */
    wk_status (*attention)(wk_device *dev, const void *q, const wk_layout *lq, const void *k, const wk_layout *lk,
                           const void *v, const wk_layout *lv, const void *mask, const wk_layout *lm, wk_dtype dt,
                           const wk_attention_args *a, void *dst);
    /* Block-quantized work: x (..., K) in dtype xdt (f32/f16/bf16, any
     * strides) times w (N, K) in wdt, a block dtype or f16/bf16, rows
     * contiguous at any row stride -> dst (..., N) contiguous in xdt;
     * dequantize w (wdt) into dst (ddt, contiguous). qmatmul has no
     * composite: with a NULL entry src/ops/qmatmul.c answers
     * WK_ERR_NOT_COMPILED. NULL dequantize: src/ops/quantize.c dequantizes on
     * the host (the CPU backend's entry) and moves the result back. */
    wk_status (*qmatmul)(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, const void *w,
                         const wk_layout *lw, wk_dtype wdt, void *dst);
    /* One x times nw weights w[i] (N_i, K) of one dtype wdt, laid out as
     * qmatmul's: dst (..., N_0 + ... + N_{nw-1}) contiguous in xdt, weight
     * i's columns after weight i-1's, the same values as nw qmatmul calls
     * concatenated along the last dim. What it saves is per-call work (a
     * decode step's q, k, v or gate, up: x converted once, one parallel
     * region), not arithmetic. NULL: src/ops/qmatmul_multi.c runs qmatmul
     * per weight and concatenates. */
#define WK__QMM_MULTI_MAX 8 /* nw: at most this many weights */
    wk_status (*qmatmul_multi)(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, int nw,
                               const void *const *w, const wk_layout *lw, wk_dtype wdt, void *dst);
    wk_status (*dequantize)(wk_device *dev, const void *w, const wk_layout *lw, wk_dtype wdt, void *dst,
                            wk_dtype ddt);
    /* Quantize x (sdt: f32 f16 bf16 f64, any layout, last dim whole blocks)
     * into dst (qdt, contiguous). NULL: the tensor layer quantizes on the
     * host (the CPU backend's entry) and moves the blocks over. */
    wk_status (*quantize)(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype sdt, void *dst,
                          wk_dtype qdt);
    /* Copy the view (src, ls) of sdev into the contiguous buffer dst of ddev,
     * a device of the same backend (peer copy). NULL => through the host. */
    wk_status (*copy_between)(wk_device *sdev, const void *src, const wk_layout *ls, wk_dtype dt, wk_device *ddev,
                              void *dst);

    /* ---- autograd (optional; NULL => a composite of public ops: the
     * backward rules of src/nn/rules_nn.c (softmax, norms, attention) and
     * src/autograd/rules_pool.c (pool2d, upsample2d), the optimizer step of
     * src/train/optim.c). Gradients come as (buffer, layout) of
     * the forward output's shape; results are fresh contiguous buffers. */
    /* (log-)softmax along dim from its output y and the gradient g:
     * softmax dx = y * (g - sum(g * y)); log_softmax dx = g - exp(y) * sum(g). */
    wk_status (*softmax_backward)(wk_device *dev, const void *y, const wk_layout *ly, const void *g,
                                  const wk_layout *lg, wk_dtype dt, int dim, bool logp, void *dx);
    /* rms_norm (rms) / layer_norm over the last dim D from x, w (NULL: 1)
     * and g: dx (x's shape); dw and db (D, contiguous, summed over rows;
     * each NULL when not wanted, db only for layer_norm) are written, not
     * accumulated. */
    wk_status (*norm_backward)(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                               const wk_layout *lw, const void *g, const wk_layout *lg, wk_dtype dt, double eps,
                               bool rms, void *dx, void *dw, void *db);
    /* The attention entry's backward (window and softcap as the forward's:
     * d raw score = d capped * (1 - tanh^2)): q k v (mask) as the forward got them,
     * its output o and g (o's shape): dq, dk, dv contiguous in q / k / v's
     * shapes (each kv head's summed over its query group). Tiles like the
     * forward (recomputes the scores; memory O(tile), not O(Lq * Lk)). */
    wk_status (*attention_backward)(wk_device *dev, const void *q, const wk_layout *lq, const void *k,
                                    const wk_layout *lk, const void *v, const wk_layout *lv, const void *mask,
                                    const wk_layout *lm, const void *o, const wk_layout *lo, const void *g,
                                    const wk_layout *lg, wk_dtype dt, const wk_attention_args *a, void *dq, void *dk,
                                    void *dv);
    /* One optimizer step over n contiguous elements, in place: param, and
     * the state buffers m / v (NULL where the rule has none), from grad.
     * Allocates nothing. */
    wk_status (*optim_step)(wk_device *dev, const wk_optim_args *a, void *param, const void *grad, void *m, void *v,
                            int64_t n, wk_dtype dt);
    /* pool2d's backward: x as the forward read it and g (the output's
     * gradient, lg's shape) -> dx contiguous in x's shape. max: each
     * window's gradient goes to its first maximum (PyTorch's index rule);
     * avg: spread over the window as the forward counted it (x is NULL
     * for avg: nothing is saved; lx still gives x's shape). */
    wk_status (*pool2d_backward)(wk_device *dev, const void *x, const wk_layout *lx, const void *g,
                                 const wk_layout *lg, wk_dtype dt, const wk_pool_params *p, void *dx);
    /* upsample2d's backward: g (N, C, OH, OW) -> dx contiguous (N, C, H, W)
     * (ldx gives the shape): each input element gets the sum of the
     * gradients of the outputs that read it, with the forward's weights. */
    wk_status (*upsample2d_backward)(wk_device *dev, const void *g, const wk_layout *lg, void *dx,
                                     const wk_layout *ldx, wk_dtype dt, bool bilinear, bool align_corners);
} wk_backend;

/* Entry counts, for the contract test: all entries after `name`, the
 * required ones (up to synchronize) and the optional rest. */
#define WK_BACKEND_NUM_ENTRIES ((sizeof(wk_backend) - sizeof(const char *)) / sizeof(void (*)(void)))
#define WK_BACKEND_NUM_REQUIRED \
    ((offsetof(wk_backend, synchronize) + sizeof(void (*)(void)) - sizeof(const char *)) / sizeof(void (*)(void)))

/* ---- the backend registry (src/tensor/registry.c) ----
 * Each backend describes itself once. The list of built-in descriptors is a
 * table generated by CMake (wick_backends.c in the build tree) from the
 * backends in the build, so no source file above the backends names one. */
typedef struct wk_backend_desc {
    const char *name;                /* "cpu", "cuda": wk_backends() lists these */
    wk_device_kind kind;
    const wk_backend *ops;
    /* the cached device of an ordinal (opened on first call; thread-safe),
     * or NULL with a recorded error */
    wk_device *(*open)(int ordinal);
    int (*device_count)(void);       /* 0 on any error */
    /* optional (NULL: "no counters" / "no cache" errors) */
    wk_status (*memory_stats)(wk_device *dev, wk_memory_stats *out);
    wk_status (*release_cache)(wk_device *dev, size_t *released);
    /* optional: the queue a device's work runs on, as an integer (CUDA: its
     * cudaStream_t), for a producer that must order its own writes before
     * wick's reads (the DLPack stream protocol); NULL: 0, no queue */
    uintptr_t (*stream)(const wk_device *dev);
} wk_backend_desc;

/* Add a backend (built-ins are added on first use). WK_ERR_ARG if the
 * descriptor lacks a required field or names a registered backend. */
wk_status wk__backend_register(const wk_backend_desc *d);
/* The registered backend of a name or of a device kind (first registered),
 * or NULL (no error recorded). */
const wk_backend_desc *wk__backend_find(const char *name);
const wk_backend_desc *wk__backend_of_kind(wk_device_kind kind);
/* Registered backends in order; NULL past the end. */
const wk_backend_desc *wk__backend_at(int i);

#endif
