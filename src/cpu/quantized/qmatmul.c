/* The CPU qmatmul entry (backend.h): dst (..., N) = x (..., K) . w^T for w
 * (N, K) block-quantized or f16/bf16.
 *
 * Quantized w, as ggml does: the rows of x are gathered to f32 once and
 * quantized once to w's partner block type (qdot.h), then reused against
 * every weight row. The N weight rows are cut into one contiguous slice per
 * thread; each thread walks its slice in panels of QM_NC rows (a panel of
 * weights stays in L2) and, for each group of up to WK_QDOT_MR activation
 * rows, runs the 1 x MR kernel over the panel. For M <= 8 (decode) there is
 * one group: every weight byte is read exactly once, so the loop streams at
 * memory bandwidth. For M >= 16 (prefill) the weight panel is reused from
 * cache by M / 8 groups, a blocked GEMM rather than M matrix-vector products.
 * On AVX512-VNNI the 32-element types' prefill instead runs the 16 x 8 zmm
 * panel GEMM of qmatmul_panel_avx512vnni.c (about twice the 1 x 8 tile),
 * and q4_K / q5_K / q6_K its super-block twin, qmatmul_panel_k_avx512vnni.c.
 * Nothing is cached between calls: packed panels live for one call.
 *
 * f16/bf16 w: every M takes the dot-form product (cpu/gemm/dotmm.h: one
 * fixed-order chain per output, w widened in registers), so a row of x
 * gets the same bits whatever M (batch invariance, issue 24) and decode
 * reads the weights once. WK_QMM_HALF_DOT_FORM 0 (qdot.h): every M takes
 * the widened panels + f32 GEMM instead (invariant, slow decode).
 * WK_QMM_HALF_INVARIANT 0 as well:
 * decode dots each weight row with the f32 rows of x, widening
 * in registers (on AVX-512, M = 1 takes four weight rows per pass over x,
 * qmatmul_half_avx512.c; x stays f32, so the result keeps f32 accuracy);
 * prefill widens panels of QM_HNC weight rows to f32 and runs wick's f32 GEMM (its packing, micro-kernels and threads) on them, except
 * bf16 weights on AVX512-BF16, where x is rounded to bf16 (as ggml does)
 * and the bf16 GEMM reads the weights as they are (twice the speed). */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm/dotmm.h"
#include "cpu/gemm/gemm.h"
#include "cpu/quantized/qdot.h"
#include "cpu/quantized/qmatmul_half.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define QM_NC 64    /* weight rows per cache panel */
#define QM_HNC 512  /* f16/bf16 prefill: weight rows widened per GEMM call */
#define QM_PREFILL 16
/* f16 / bf16 weights: one path for every M (see wk__cpu_qmatmul) */
#define WK_QMM_HALF_INVARIANT 1

static atomic_int g_mode; /* wk_qmm_mode, wk__qmm_force */

void wk__qmm_force(wk_qmm_mode mode) { atomic_store(&g_mode, (int)mode); }

wk_qmm_kernels wk__qmm_choose(wk_dtype wdt) {
    wk_qmm_mode mode = (wk_qmm_mode)atomic_load(&g_mode);
    int level = wk__vmath_level();
    bool simd = mode != WK_QMM_PORTABLE, vnni = simd && mode != WK_QMM_NO_VNNI && wk__cpu_has_avx512vnni();
    wk_qmm_kernels k = {NULL, NULL, 0, false, NULL, false};
    if (wdt == WK_F16 || wdt == WK_BF16) {
        k.hdot = !simd ? wk__hdot_generic
                 : level >= WK_VMATH_AVX512 ? wk__hdot_avx512
                 : level >= WK_VMATH_AVX2   ? wk__hdot_avx2
                                            : wk__hdot_generic;
        k.bf16_gemm = wdt == WK_BF16 && simd && wk__gemm_kernels().bf16_dot;
        return k;
    }
    /* qdot4 always from qdot's level: the two must agree bit for bit */
    if (vnni && level >= WK_VMATH_AVX512) {
        k.qdot = wk__qdot_avx512vnni(wdt);
        if (k.qdot) k.qdot4 = wk__qdot4_avx512vnni(wdt), k.qdot4_mr = WK_QDOT4_MR_VNNI;
    }
    if (!k.qdot && simd && level >= WK_VMATH_AVX2) {
        k.qdot = wk__qdot_avx2(wdt);
        if (k.qdot) k.qdot4 = wk__qdot4_avx2(wdt), k.qdot4_mr = WK_QDOT4_MR_AVX2;
    }
    if (!k.qdot4) k.qdot4_mr = 0;
    if (!k.qdot) k.qdot = wk__qdot_generic(wdt);
    /* The AVX512-VNNI panel GEMMs (M >= QM_PREFILL) sum each output in the
     * order the VNNI qdot kernels use (one f32 sum per output in block
     * order, qdot_simd.inc's QD_CANON), so a row's bits do not depend on M
     * (batch invariance, issue 24). q8_1 weights have no VNNI qdot kernel
     * (the portable one sums otherwise): no panel for them. */
    k.vnni_panel = vnni && wdt != WK_Q8_1 && (wk__qgemm32_supported(wdt) || wk__qgemmK_supported(wdt));
    return k;
}

/* ---- x rows to contiguous f32 ---- */

typedef struct {
    const void *x;
    const wk_layout *lx;
    wk_dtype xdt;
    int64_t k;
    float *X;
} gather_ctx;

void wk__qmm_gather_row(const void *x, const wk_layout *l, wk_dtype xdt, int64_t k, int64_t row, float *y) {
    int r = l->rank;
    int64_t off = l->offset, rem = row, ks = l->stride[r - 1];
    for (int d = r - 2; d >= 0; d--) {
        off += (rem % l->shape[d]) * l->stride[d];
        rem /= l->shape[d];
    }
    if (xdt == WK_F32) {
        const float *s = (const float *)x + off;
        if (ks == 1) memcpy(y, s, sizeof(float) * (size_t)k);
        else for (int64_t p = 0; p < k; p++) y[p] = s[p * ks];
        return;
    }
    const uint16_t *s = (const uint16_t *)x + off;
    bool f16 = xdt == WK_F16;
    if (ks == 1 && f16) wk__vcvt_f16_to_f32(y, s, k);
    else if (ks == 1) wk__vcvt_bf16_to_f32(y, s, k);
    else for (int64_t p = 0; p < k; p++) y[p] = f16 ? wk_f16_to_f32(s[p * ks]) : wk_bf16_to_f32(s[p * ks]);
}

static void gather_rows(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const gather_ctx *c = vc;
    for (int64_t row = b; row < e; row++) wk__qmm_gather_row(c->x, c->lx, c->xdt, c->k, row, c->X + row * c->k);
}

/* ---- activation quantization ---- */

typedef struct {
    const float *X;
    int64_t k;
    wk_qact_kind kind;
    uint8_t *A;
    size_t as;
} quant_ctx;

static void quant_rows(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const quant_ctx *c = vc;
    for (int64_t row = b; row < e; row++) {
        void *dst = c->A + (size_t)row * c->as;
        if (c->kind == WK_QACT_32) wk__qact32_row(c->X + row * c->k, c->k, dst);
        else wk__qactK_row(c->X + row * c->k, c->k, dst);
    }
}

/* ---- the quantized product ---- */

void wk__qmm_rows(const wk_qmm_kernels *k, int64_t nb, const uint8_t *w, size_t wrs, const uint8_t *A, size_t as,
                  int64_t m, int64_t b, int64_t e, float *out, int64_t ldo) {
    for (int64_t n0 = b; n0 < e; n0 += QM_NC) {
        int64_t n1 = n0 + QM_NC < e ? n0 + QM_NC : e;
        for (int64_t m0 = 0; m0 < m; m0 += WK_QDOT_MR) {
            int mr = (int)(m - m0 < WK_QDOT_MR ? m - m0 : WK_QDOT_MR);
            const uint8_t *a = A + (size_t)m0 * as;
            float *o = out + m0 * ldo;
            int64_t j = n0;
            /* decode: four weight rows per pass over the activations (the
             * per-row setup and horizontal sum amortized); the same bits
             * as the 1-row kernel, which takes the tail */
            if (k->qdot4 && mr <= k->qdot4_mr)
                for (; j + 4 <= n1; j += 4) k->qdot4(nb, w + (size_t)j * wrs, wrs, a, as, mr, o + j, ldo);
            for (; j < n1; j++) k->qdot(nb, w + (size_t)j * wrs, a, as, mr, o + j, ldo);
        }
    }
}

typedef struct {
    wk_qmm_kernels kern;
    const uint8_t *w;
    size_t wrs; /* bytes between weight rows */
    int64_t nb, m, n;
    const uint8_t *A;
    size_t as;
    float *out; /* (m, n) */
} qmm_ctx;

static void qmm_slice(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const qmm_ctx *c = vc;
    wk__qmm_rows(&c->kern, c->nb, c->w, c->wrs, c->A, c->as, c->m, b, e, c->out, c->n);
}

/* ---- f16 / bf16 weights ---- */

typedef struct {
    wk_hdot_fn dot;
    const uint16_t *w;
    int64_t wrs, k, m, n;
    bool f16;
    const float *X;
    float *out;
} hmm_ctx;

static void hmm_slice(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const hmm_ctx *c = vc;
    /* M = 1 (decode) reads each weight row once, front to back: one
     * sequential stream is what the hardware prefetcher follows. A kernel
     * that interleaved four rows per pass over x was 1.5x faster with the
     * weights in cache but reached only ~10 GB/s from DRAM against ~20 GB/s
     * row by row (bench_qmatmul f16 49152x576 M=1c, Zen 4), and a model's
     * decode always streams its weights from DRAM. */
    for (int64_t m0 = 0; m0 < c->m; m0 += WK_QDOT_MR) {
        int mr = (int)(c->m - m0 < WK_QDOT_MR ? c->m - m0 : WK_QDOT_MR);
        for (int64_t j = b; j < e; j++)
            c->dot(c->k, c->w + j * c->wrs, c->f16, c->X + m0 * c->k, c->k, mr, c->out + m0 * c->n + j, c->n);
    }
}

typedef struct {
    const uint16_t *w;
    int64_t wrs, k;
    bool f16;
    float *Wf;
} widen_ctx;

static void widen_rows(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const widen_ctx *c = vc;
    for (int64_t j = b; j < e; j++) {
        if (c->f16) wk__vcvt_f16_to_f32(c->Wf + j * c->k, c->w + j * c->wrs, c->k);
        else wk__vcvt_bf16_to_f32(c->Wf + j * c->k, c->w + j * c->wrs, c->k);
    }
}

static wk_status half_prefill(const hmm_ctx *h) {
    int64_t nc = h->n < QM_HNC ? h->n : QM_HNC;
    float *Wf = malloc(sizeof(float) * (size_t)(nc * h->k));
    float *C = malloc(sizeof(float) * (size_t)(h->m * nc));
    wk_gemm_kernels kk = wk__gemm_kernels();
    wk_status st = WK_OK;
    if (!Wf || !C) st = WK_ERR_OOM;
    for (int64_t n0 = 0; st == WK_OK && n0 < h->n; n0 += nc) {
        int64_t w = h->n - n0 < nc ? h->n - n0 : nc;
        widen_ctx wc = {h->w + n0 * h->wrs, h->wrs, h->k, h->f16, Wf};
        wk__parallel_for(w, 8, w * h->k >= (1 << 15) ? 0 : INT64_MAX, widen_rows, &wc);
        if (h->m < QM_PREFILL) {
            /* few rows: C^T (w, m) = Wf . X^T, the weights as the GEMM's A
             * operand (no 8-row tile of mostly padding). Every element is
             * the same chain of fmas over the same k slices either way
             * round, so the bits do not depend on M (issue 24) */
            if (!kk.f32(w, h->m, h->k, Wf, h->k, 1, h->X, 1, h->k, C)) {
                st = WK_ERR_OOM;
                break;
            }
            for (int64_t j = 0; j < w; j++)
                for (int64_t i = 0; i < h->m; i++) h->out[i * h->n + n0 + j] = C[j * h->m + i];
            continue;
        }
        /* C (m, w) = X (m, k) . Wf^T: B = Wf^T read with strides (1, k) */
        if (!kk.f32(h->m, w, h->k, h->X, h->k, 1, Wf, 1, h->k, C)) {
            st = WK_ERR_OOM;
            break;
        }
        for (int64_t i = 0; i < h->m; i++) memcpy(h->out + i * h->n + n0, C + i * w, sizeof(float) * (size_t)w);
    }
    free(Wf);
    free(C);
    return st;
}

wk_status wk__cpu_qmatmul(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, const void *w,
                          const wk_layout *lw, wk_dtype wdt, void *dst) {
    (void)dev;
    const char *op = "qmatmul";
    int r = lx->rank;
    int64_t k = lx->shape[r - 1], n = lw->shape[0], m = 1;
    for (int i = 0; i < r - 1; i++) m *= lx->shape[i];
    if (m == 0 || n == 0) return WK_OK;
    const wk_dtype_info *wi = wk_dtype_info_of(wdt);
    bool quant = wk_dtype_is_quantized(wdt);
    const wk_qmm_kernels kern = wk__qmm_choose(wdt); /* every kernel choice below */
    float *out = xdt == WK_F32 ? dst : malloc(sizeof(float) * (size_t)(m * n));
    /* 64-byte aligned: the dot-form kernels' zmm loads of x then split no
     * cache lines (30% of an f16 prefill when they did) */
    float *X = wk__dotmm_alloc(sizeof(float) * (size_t)(m * (k ? k : 1)));
    uint8_t *A = NULL;
    wk_status st = WK_OK;
    if (!out || !X) {
        st = wk__err(WK_ERR_OOM, op, "cannot allocate %lld x %lld floats of scratch", (long long)m, (long long)k);
        goto done;
    }
    gather_ctx g = {x, lx, xdt, k, X};
    wk__parallel_for(m, 1, m * k >= (1 << 15) ? 0 : INT64_MAX, gather_rows, &g);
    if (quant) {
        wk_qact_kind kind = wk__qact_kind(wdt);
        int64_t bel = kind == WK_QACT_32 ? WK_QK : WK_QK_K;
        size_t abytes = kind == WK_QACT_32 ? sizeof(wk_qa32) : sizeof(wk_block_q8_K);
        int64_t nb = k / bel;
        size_t as = (size_t)(nb ? nb : 1) * abytes;
        A = malloc(as * (size_t)m);
        if (!A) {
            st = wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of quantized activations", as * (size_t)m);
            goto done;
        }
        quant_ctx qc = {X, k, kind, A, as};
        wk__parallel_for(m, 1, m * k >= (1 << 15) ? 0 : INT64_MAX, quant_rows, &qc);
        const uint8_t *wp = (const uint8_t *)w + (size_t)(lw->offset / wi->block_elems) * wi->block_bytes;
        size_t wrs = (size_t)(lw->stride[0] / wi->block_elems) * wi->block_bytes;
        if (m >= QM_PREFILL && nb > 0 && kern.vnni_panel) {
            bool ok = wk__qgemm32_supported(wdt) ? wk__qgemm32_avx512vnni(wdt, m, n, nb, wp, wrs, A, as, out)
                                                 : wk__qgemmK_avx512vnni(wdt, m, n, nb, wp, wrs, A, as, out);
            if (!ok)
                st = wk__err(WK_ERR_OOM, op, "cannot allocate the packed panels (%lld x %lld blocks)", (long long)m,
                             (long long)nb);
            goto convert;
        }
        qmm_ctx c = {kern,
                     (const uint8_t *)w + (size_t)(lw->offset / wi->block_elems) * wi->block_bytes,
                     (size_t)(lw->stride[0] / wi->block_elems) * wi->block_bytes,
                     nb, m, n, A, as, out};
        /* decode slices are 16 rows, prefill slices whole panels */
        wk__parallel_for(n, m >= QM_PREFILL ? QM_NC : 16, n * k * m >= (1 << 17) ? 0 : INT64_MAX, qmm_slice, &c);
    } else {
        hmm_ctx h = {kern.hdot, (const uint16_t *)w + lw->offset, lw->stride[0], k, m, n, wdt == WK_F16, X, out};
        /* Batch invariance (issue 24): every M takes the same path, the
         * widened panels through the f32 GEMM (whose rows are summed in an
         * order that depends only on k). The row dot (hdot) of a small M
         * and the bf16 GEMM (x rounded to bf16) would give a row other bits
         * than the same row inside a prefill. */
        if (WK_QMM_HALF_DOT_FORM && WK_QMM_HALF_INVARIANT && k > 0) {
            if (!wk__dotmm(m, n, k, X, k, h.w, h.wrs, wdt == WK_F16 ? WK_DOTMM_F16 : WK_DOTMM_BF16, out, n)) {
                st = wk__err(WK_ERR_OOM, op, "cannot allocate a widened weight block (%lld floats)", (long long)k);
                goto done;
            }
        } else if (WK_QMM_HALF_INVARIANT && k > 0) {
            st = half_prefill(&h);
            if (st != WK_OK) {
                wk__err(st, op, "cannot allocate the widened weight panel (%lld x %lld floats)",
                        (long long)(n < QM_HNC ? n : QM_HNC), (long long)k);
                goto done;
            }
        } else if (m >= QM_PREFILL && k > 0 && kern.bf16_gemm) {
            /* AVX512-BF16: x rounded to bf16 (as ggml's bf16 vec_dot_type)
             * and vdpbf16ps straight on the weights, sums in f32 */
            uint16_t *Xb = malloc(sizeof(uint16_t) * (size_t)(m * k));
            if (!Xb || (wk__vcvt_f32_to_bf16(Xb, X, m * k),
                        !wk__gemm_bf16_avx512bf16(m, n, k, Xb, k, 1, h.w, 1, h.wrs, out)))
                st = wk__err(WK_ERR_OOM, op, "cannot allocate %lld x %lld bf16 activations", (long long)m,
                             (long long)k);
            free(Xb);
            if (st != WK_OK) goto done;
        } else if (m >= QM_PREFILL && k > 0) {
            st = half_prefill(&h);
            if (st != WK_OK) {
                wk__err(st, op, "cannot allocate the widened weight panel (%lld x %lld floats)",
                        (long long)(n < QM_HNC ? n : QM_HNC), (long long)k);
                goto done;
            }
        } else {
            wk__parallel_for(n, 16, n * k * m >= (1 << 17) ? 0 : INT64_MAX, hmm_slice, &h);
        }
    }
convert:
    if (st != WK_OK) goto done;
    if (xdt == WK_F16) wk__vcvt_f32_to_f16(dst, out, m * n);
    else if (xdt == WK_BF16) wk__vcvt_f32_to_bf16(dst, out, m * n);
done:
    if (out != dst) free(out);
    free(X);
    free(A);
    return st;
}
