/* The CPU backend's attention backward (src/tensor/backend.h: attention_backward),
 * flash style: nothing of Lq x Lk is ever kept. Work items are (batch, kv
 * head); an item walks the rows of its query group (group heads x Lq) in
 * tiles of AB_QT rows, and for each tile
 *   - loads Qs = q * scale, dO (the output's gradient) and Di = dO . O per
 *     row (the softmax rule's row sum: sum_j P dP = dO . O),
 *   - pass 1 over key tiles of AB_KT: recomputes S = Qs K^T + mask (with the
 *     causal limit) and the row max m and sum l, an online softmax as the
 *     forward's (which hands nothing over),
 *   - pass 2: recomputes S, P = exp(S - m) / l, dP = dO V^T,
 *     dS = P (dP - Di), then dV += P^T dO, dK += dS^T Qs, dQ += dS K
 *     (wick's GEMM on tiles; dQ scaled at the end).
 * Each row sees one key range [lo, hi) (the window's start, the causal
 * end); key tiles outside every row's range are skipped. With soft-capping
 * the scores are cap * tanh(raw / cap) and dS is carried through the cap:
 * dS_raw = dS * (1 - tanh^2) (tanh kept per tile from the recomputation).
 * dK / dV of a kv head gather over every query head of its group in the
 * item (the GQA sum, in row order). Memory per thread: the tiles and one kv
 * head's dK / dV (Lk x (D + Dv)), never Lq x Lk.
 *
 * Every output element is computed by one item in a fixed order, and tile
 * sizes depend on shapes only, so results are bit-identical across thread
 * counts. f32 / f64 compute in their own type (operands read in place
 * through their strides); f16 / bf16 / f8 in f32 through widened tiles. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/nn/cpu_rowio.h"
#include "cpu/gemm/gemm.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define AB_KT 128 /* keys per tile */
#define AB_QT 64 /* query rows per tile */

typedef struct ab_ctx {
    const char *q, *k, *v, *mask, *o, *g;
    wk_layout lq, lk, lv, lm, lo, lg;
    wk_dtype dt;
    int rank, nbd;
    int64_t hq, hkv, group, nq, nk, d, dv;
    int64_t hs_q, hs_k, hs_v, hs_m, hs_o, hs_g; /* head strides (0 for rank 2) */
    int64_t rows;                                /* group * Lq */
    double scale;
    bool causal;
    int64_t off, window; /* window > 0: row i sees keys from i + off - window + 1 */
    double softcap;      /* > 0: scores capped by softcap * tanh(s / softcap) before the mask */
    void *dq, *dk, *dvo;
    wk_gemm_kernels gk;
    atomic_int failed;
} ab_ctx;

/* row math per compute type: p = exp(s - m) in place, sum, scale */
static inline void ab_exp_f(float *s, float m, int64_t n) {
    wk__vbinary_scalar_f32(WK_SUB, s, s, m, n);
    wk__vexp_f32(s, s, n);
}
static inline void ab_exp_d(double *s, double m, int64_t n) {
    for (int64_t j = 0; j < n; j++) s[j] = exp(s[j] - m);
}
static inline float ab_sum_f(const float *x, int64_t n) { return wk__vsum_f32(x, n); }
static inline double ab_sum_d(const double *x, int64_t n) {
    double a = 0;
    for (int64_t j = 0; j < n; j++) a += x[j];
    return a;
}
/* s = cap * tanh(s / cap) in place; th (n) gets tanh(s / cap) */
static inline void ab_cap_f(float *s, float *th, float cap, int64_t n) {
    wk__vbinary_scalar_f32(WK_MUL, th, s, 1.0f / cap, n);
    wk__vtanh_f32(th, th, n);
    wk__vbinary_scalar_f32(WK_MUL, s, th, cap, n);
}
static inline void ab_cap_d(double *s, double *th, double cap, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        th[j] = tanh(s[j] / cap);
        s[j] = cap * th[j];
    }
}
static inline void ab_scale_f(float *x, float f, int64_t n) { wk__vbinary_scalar_f32(WK_MUL, x, x, f, n); }
static inline void ab_scale_d(double *x, double f, int64_t n) {
    for (int64_t j = 0; j < n; j++) x[j] *= f;
}

#define AT float
#define AS f
#define AT_NATIVE WK_F32
#define AT_GEMM f32
#define AT_EXP expf
#include "cpu/nn/cpu_attention_backward.inc"

#define AT double
#define AS d
#define AT_NATIVE WK_F64
#define AT_GEMM f64
#define AT_EXP exp
#include "cpu/nn/cpu_attention_backward.inc"

wk_status wk__cpu_attention_backward(wk_device *dev, const void *q, const wk_layout *lq, const void *k,
                                     const wk_layout *lk, const void *v, const wk_layout *lv, const void *mask,
                                     const wk_layout *lm, const void *o, const wk_layout *lo, const void *g,
                                     const wk_layout *lg, wk_dtype dt, const wk_attention_args *a, void *dq, void *dk,
                                     void *dv) {
    (void)dev;
    const char *op = "wk_attention";
    if (!wk_dtype_is_float(dt)) return wk__err(WK_ERR_DTYPE, op, "backward: not defined for %s", wk_dtype_name(dt));
    int r = lq->rank;
    ab_ctx *c = calloc(1, sizeof *c);
    if (!c) return wk__err(WK_ERR_OOM, op, "backward: cannot allocate the context");
    c->q = q;
    c->k = k;
    c->v = v;
    c->mask = mask;
    c->o = o;
    c->g = g;
    c->lq = *lq;
    c->lk = *lk;
    c->lv = *lv;
    c->lo = *lo;
    c->lg = *lg;
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
    c->hs_o = r >= 3 ? lo->stride[r - 3] : 0;
    c->hs_g = r >= 3 ? lg->stride[r - 3] : 0;
    c->hs_m = mask && r >= 3 ? lm->stride[r - 3] : 0;
    c->nq = lq->shape[r - 2];
    c->nk = lk->shape[r - 2];
    c->d = lq->shape[r - 1];
    c->dv = lv->shape[r - 1];
    c->rows = c->group * c->nq;
    c->scale = a->scale;
    c->causal = a->causal;
    c->off = a->q_offset;
    c->window = a->window;
    c->softcap = a->softcap;
    c->dq = dq;
    c->dk = dk;
    c->dvo = dv;
    c->gk = wk__gemm_kernels();
    int64_t nb = 1;
    for (int i = 0; i < c->nbd; i++) nb *= lq->shape[i];
    atomic_init(&c->failed, 0);
    int64_t work = nb * c->hq * c->nq * (c->nk ? c->nk : 1) * (c->d + c->dv);
    if (nb * c->hkv > 0 && c->rows > 0)
        wk__parallel_for(nb * c->hkv, 1, work >= (1 << 15) ? 0 : INT64_MAX, dt == WK_F64 ? ab_range_d : ab_range_f,
                         c);
    int failed = atomic_load(&c->failed);
    free(c);
    if (failed) return wk__err(WK_ERR_OOM, op, "backward: cannot allocate the attention tiles");
    return WK_OK;
}
