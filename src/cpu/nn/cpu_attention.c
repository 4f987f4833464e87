/* The CPU backend's fused attention entry: softmax(q k^T * scale + mask
 * [causal]) v, flash style. Work items are (batch, kv head, tile of query
 * rows); the rows of one kv head are its group of query heads times Lq, so
 * the query heads that share a kv head (GQA) share its key / value reads.
 * Each item loops over tiles of ATT_KT keys: scores S = Q K^T for the tile
 * (wick's GEMM; for a one-row tile, the decode step, cpu_attention.h's
 * per-ISA kernels or GEMV), the mask
 * and the causal limit, the window's start (key tiles wholly before it are
 * never read: a decode step over a long cache reads its window only), an
 * online softmax (running max m and sum l per row;
 * when m grows the accumulator is rescaled by exp(m_old - m_new)), and
 * acc += P V. Memory per thread is O(tile), never O(Lq * Lk). Soft-capping
 * (softcap > 0) maps each row's visible scores through cap * tanh(s / cap)
 * before the mask.
 *
 * f32 and f64 compute in their own type; f16 / bf16 / f8 in f32 (their
 * tiles are widened into buffers; f32 / f64 operands are read in place
 * through their strides). Tile sizes depend on the shapes only, and each
 * output row is computed by one thread in key order, so results do not
 * depend on the thread count.
 *
 * Edge cases, as torch: a row whose keys are all masked is NaN (0 / 0 at
 * the end); Lk = 0 gives zeros (an empty sum, as q k^T @ v does). */
#include "tensor/tensor.h"
#include "cpu/nn/cpu_attention.h"
#include "cpu/cpu_backend.h"
#include "cpu/nn/cpu_rowio.h"
#include "cpu/gemm/gemm.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Keys per tile (fixed: results must not depend on anything but shapes). */
#define ATT_KT 128
/* Query rows per tile, at most. */
#define ATT_QT 32

typedef struct att_ctx {
    const char *q, *k, *v, *mask;
    wk_layout lq, lk, lv, lm;
    wk_dtype dt;
    int rank, nbd;             /* rank, and the batch dims before the head dim */
    int64_t hq, hkv, group;    /* heads */
    int64_t nq, nk, d, dv;     /* Lq, Lk, head dims */
    int64_t hs_q, hs_k, hs_v, hs_m; /* head strides (0 for rank 2) */
    int64_t rows, qt, ntiles;  /* rows per (batch, kv head); rows per tile; tiles per (batch, kv head) */
    double scale;
    bool causal;
    int64_t off, window; /* window > 0: keys before i + off - window + 1 are skipped */
    double softcap;      /* > 0: s = softcap * tanh(s / softcap) before the mask */
    void *dst;
    wk_gemm_kernels gk;
    wk_attn_dots_fn dots; /* f32 one-row scores and p V at this SIMD level, or NULL (GEMV) */
    wk_attn_pv_fn pv;
    /* f16 / bf16 operands: the decode kernels that widen in registers, or
     * NULL (tiles widened into f32 buffers) */
    wk_attn_dots_h_fn dots_h;
    wk_attn_pv_h_fn pv_h;
    atomic_int failed;
} att_ctx;

/* Offset of outer batch index b in layout l (dims before the head dim). */
static inline int64_t batch_off(const att_ctx *c, const wk_layout *l, int64_t b) {
    return l->offset + wk__unravel(l->shape, l->stride, c->nbd, b);
}

/* ---- the per-type row math ---- */

static inline float row_max_f(const float *x, int64_t n) { return wk__vmaxmin_f32(x, n, 0); }
static inline double row_max_d(const double *x, int64_t n) {
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) m = x[j] > m || isnan(x[j]) ? x[j] : m;
    return m;
}
/* p = exp(s - m), in place. */
static inline void row_exp_f(float *s, float m, int64_t n) {
    wk__vbinary_scalar_f32(WK_SUB, s, s, m, n);
    wk__vexp_f32(s, s, n);
}
static inline void row_exp_d(double *s, double m, int64_t n) {
    for (int64_t j = 0; j < n; j++) s[j] = exp(s[j] - m);
}
static inline float row_sum_f(const float *x, int64_t n) { return wk__vsum_f32(x, n); }
static inline double row_sum_d(const double *x, int64_t n) {
    double a = 0;
    for (int64_t j = 0; j < n; j++) a += x[j];
    return a;
}
/* s = cap * tanh(s / cap), in place (Gemma 2's logit soft-capping) */
static inline void row_cap_f(float *s, float cap, int64_t n) {
    wk__vbinary_scalar_f32(WK_MUL, s, s, 1.0f / cap, n);
    wk__vtanh_f32(s, s, n);
    wk__vbinary_scalar_f32(WK_MUL, s, s, cap, n);
}
static inline void row_cap_d(double *s, double cap, int64_t n) {
    for (int64_t j = 0; j < n; j++) s[j] = cap * tanh(s[j] / cap);
}
/* s += mask row */
static inline void row_add_f(float *s, const float *m, int64_t n) { wk__vbinary_f32(WK_ADD, s, s, m, n); }
static inline void row_add_d(double *s, const double *m, int64_t n) {
    for (int64_t j = 0; j < n; j++) s[j] += m[j];
}

#define AT float
#define AS f
#define AT_NATIVE WK_F32
#define AT_GEMM f32
#define AT_GEMV v32
#define AT_EXP expf
#define AT_HAS_DOTS 1
#include "cpu/nn/cpu_attention.inc"

#define AT double
#define AS d
#define AT_NATIVE WK_F64
#define AT_GEMM f64
#define AT_GEMV v64
#define AT_EXP exp
#define AT_HAS_DOTS 0
#include "cpu/nn/cpu_attention.inc"

wk_status wk__cpu_attention(wk_device *dev, const void *q, const wk_layout *lq, const void *k, const wk_layout *lk,
                            const void *v, const wk_layout *lv, const void *mask, const wk_layout *lm, wk_dtype dt,
                            const wk_attention_args *a, void *dst) {
    (void)dev;
    const char *op = "wk_attention";
    if (!wk_dtype_is_float(dt)) return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    int r = lq->rank;
    att_ctx *c = calloc(1, sizeof *c);
    if (!c) return wk__err(WK_ERR_OOM, op, "cannot allocate the attention context");
    c->q = q;
    c->k = k;
    c->v = v;
    c->mask = mask;
    c->lq = *lq;
    c->lk = *lk;
    c->lv = *lv;
    if (mask) c->lm = *lm;
    c->dt = dt;
    c->rank = r;
    c->nbd = r >= 3 ? r - 3 : 0;
    c->hq = r >= 3 ? lq->shape[r - 3] : 1;
    c->group = a->group > 0 ? a->group : 1;
    c->hkv = c->hq / c->group;
    c->hs_q = r >= 3 ? lq->stride[r - 3] : 0;
    c->hs_k = r >= 3 ? lk->stride[r - 3] : 0;
    c->hs_v = r >= 3 ? lv->stride[r - 3] : 0;
    c->hs_m = mask && r >= 3 ? lm->stride[r - 3] : 0;
    c->nq = lq->shape[r - 2];
    c->nk = lk->shape[r - 2];
    c->d = lq->shape[r - 1];
    c->dv = lv->shape[r - 1];
    c->scale = a->scale;
    c->causal = a->causal;
    c->off = a->q_offset;
    c->window = a->window;
    c->softcap = a->softcap;
    c->dst = dst;
    c->gk = wk__gemm_kernels();
    const char *isa = wk_cpu_isa();
    c->dots = strcmp(isa, "avx512") == 0 ? wk__attn_dots_f32_avx512
              : strcmp(isa, "avx2") == 0 ? wk__attn_dots_f32_avx2
                                         : NULL;
    c->pv = strcmp(isa, "avx512") == 0 ? wk__attn_pv_f32_avx512 : strcmp(isa, "avx2") == 0 ? wk__attn_pv_f32_avx2 : NULL;
    bool avx512 = strcmp(isa, "avx512") == 0, avx2 = strcmp(isa, "avx2") == 0;
    int64_t hw = avx512 ? 16 : 8;
    if ((avx512 || avx2) && (dt == WK_F16 || dt == WK_BF16) && c->d % hw == 0 && c->dv % hw == 0) {
        bool h = dt == WK_F16;
        c->dots_h = avx512 ? (h ? wk__attn_dots_f16_avx512 : wk__attn_dots_bf16_avx512)
                           : (h ? wk__attn_dots_f16_avx2 : wk__attn_dots_bf16_avx2);
        c->pv_h = avx512 ? (h ? wk__attn_pv_f16_avx512 : wk__attn_pv_bf16_avx512)
                         : (h ? wk__attn_pv_f16_avx2 : wk__attn_pv_bf16_avx2);
    }
    int64_t nb = 1;
    for (int i = 0; i < c->nbd; i++) nb *= lq->shape[i];
    c->rows = c->group * c->nq;
    /* one row per tile when decoding: GEMV reads K / V in place, and the
     * query heads of a group spread over the threads */
    c->qt = c->nq == 1 ? 1 : (c->rows < ATT_QT ? c->rows : ATT_QT);
    c->ntiles = (c->rows + c->qt - 1) / c->qt;
    int64_t items = nb * c->hkv * c->ntiles;
    atomic_init(&c->failed, 0);
    /* threads pay off once an item set does some ten thousand multiply-adds */
    int64_t work = nb * c->hq * c->nq * (c->nk ? c->nk : 1) * (c->d + c->dv);
    wk_range_fn fn = dt == WK_F64 ? att_range_d : att_range_f;
    wk__parallel_for(items, 1, work >= (1 << 15) ? 0 : INT64_MAX, fn, c);
    int failed = atomic_load(&c->failed);
    free(c);
    if (failed) return wk__err(WK_ERR_OOM, op, "cannot allocate the attention tiles");
    return WK_OK;
}
