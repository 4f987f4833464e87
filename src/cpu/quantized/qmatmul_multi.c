/* The CPU qmatmul_multi entry (backend.h): dst (..., sum N_i) = x (..., K)
 * times nw weights (N_i, K) of one dtype, side by side.
 *
 * Why: at decode (M = 1) a 135M model's step is 30 layers of small
 * products, and q, k, v (and gate, up) read the same x. As separate calls
 * each gathers and quantizes x again and each is its own fork/join of the
 * pool; k and v of a GQA model (192 x 576) are even below the threshold of
 * a parallel region, so at 2 threads one core idles through them. Here x is
 * gathered and quantized once and the rows of all weights are one range
 * [0, sum N_i) cut across the threads: one region.
 *
 * Same values as qmatmul (cpu/quantized/qmatmul.c) bit for bit: the same
 * kernel choice (wk__qmm_choose), the same partner quantization of x and
 * the same loop over weight rows (wk__qmm_rows, qmatmul's own; f16 / bf16:
 * the dot-form product's wk__dotmm_range, at every M); a dot does not
 * depend on which thread or slice runs it. Block weights' prefill (M >= 16) takes
 * qmatmul's panel GEMMs per weight instead and copies each result into its
 * columns: there the per-call cost is small against the GEMM. */
#include "cpu/quantized/qmatmul_multi.h"
#include "tensor/tensor.h"
#include "cpu/gemm/dotmm.h"
#include "cpu/quantized/qdot.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MM_PREFILL 16 /* qmatmul.c's QM_PREFILL: from here it runs panel GEMMs */

typedef struct {
    int nw;
    const uint8_t *w[WK__QMM_MULTI_MAX];
    size_t wrs[WK__QMM_MULTI_MAX]; /* bytes between rows of weight i */
    int64_t off[WK__QMM_MULTI_MAX + 1]; /* weight i's first column; off[nw] = ntot */
    int64_t m, k, nb, ntot;
    wk_qmm_kernels kern; /* block weights: kern.qdot set; f16 / bf16: kern.hdot */
    bool f16;
    const uint8_t *A; /* quantized rows of x, `as` bytes apart (block weights) */
    size_t as;
    const float *X; /* f32 rows of x (half weights) */
    float *out;     /* (m, ntot) */
    wk_dotmm_block_fn dfn; /* f16 / bf16 weights: qmatmul's dot-form kernel */
    wk_dotmm_wtype dwt;
    atomic_bool oom;
} multi_ctx;

/* Global columns [b, e) of weight i (local rows lb .. le-1): block weights
 * through qmatmul's own loop (wk__qmm_rows), f16 / bf16 through the same
 * per-row dot as qmatmul.c's hmm_slice. */
static void run_rows(multi_ctx *c, int i, int64_t lb, int64_t le) {
    float *o0 = c->out + c->off[i];
    if (c->kern.qdot) {
        wk__qmm_rows(&c->kern, c->nb, c->w[i], c->wrs[i], c->A, c->as, c->m, lb, le, o0, c->ntot);
        return;
    }
    if (!wk__dotmm_range(c->dfn, c->m, c->k, c->X, c->k, c->w[i], (int64_t)(c->wrs[i] / sizeof(uint16_t)), c->dwt,
                         lb, le, o0, c->ntot))
        atomic_store(&c->oom, true);
}

static void multi_slice(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    multi_ctx *c = vc;
    for (int i = 0; i < c->nw; i++) {
        int64_t lo = b > c->off[i] ? b : c->off[i], hi = e < c->off[i + 1] ? e : c->off[i + 1];
        if (lo < hi) run_rows(c, i, lo - c->off[i], hi - c->off[i]);
    }
}

/* Row `row` of x (any strides, f32 / f16 / bf16) -> y (k floats). */
/* Prefill: qmatmul per weight into a scratch (m, N_i), then into its columns. */
static wk_status by_weight(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, int nw,
                           const void *const *w, const wk_layout *lw, wk_dtype wdt, void *dst, int64_t m,
                           int64_t ntot) {
    size_t es = wk__dtype_elem_bytes(xdt);
    int64_t nmax = 0;
    for (int i = 0; i < nw; i++) nmax = lw[i].shape[0] > nmax ? lw[i].shape[0] : nmax;
    uint8_t *t = malloc(es * (size_t)(m * nmax));
    if (!t) return wk__err(WK_ERR_OOM, "qmatmul_multi", "cannot allocate %lld x %lld of scratch", (long long)m,
                           (long long)nmax);
    wk_status st = WK_OK;
    int64_t off = 0;
    for (int i = 0; i < nw && st == WK_OK; off += lw[i].shape[0], i++) {
        int64_t ni = lw[i].shape[0];
        if ((st = wk__cpu_qmatmul(dev, x, lx, xdt, w[i], &lw[i], wdt, t)) != WK_OK) break;
        for (int64_t r = 0; r < m; r++)
            memcpy((uint8_t *)dst + es * (size_t)(r * ntot + off), t + es * (size_t)(r * ni), es * (size_t)ni);
    }
    free(t);
    return st;
}

wk_status wk__cpu_qmatmul_multi(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, int nw,
                                const void *const *w, const wk_layout *lw, wk_dtype wdt, void *dst) {
    const char *op = "qmatmul_multi";
    if (nw < 1 || nw > WK__QMM_MULTI_MAX)
        return wk__err(WK_ERR_ARG, op, "%d weights (1..%d)", nw, WK__QMM_MULTI_MAX);
    int r = lx->rank;
    int64_t k = lx->shape[r - 1], m = 1, ntot = 0;
    for (int i = 0; i < r - 1; i++) m *= lx->shape[i];
    for (int i = 0; i < nw; i++) ntot += lw[i].shape[0];
    if (m == 0 || ntot == 0) return WK_OK;
    /* block weights at prefill: qmatmul's panel GEMMs per weight. f16 /
     * bf16: qmatmul's dot-form product for every M, here in one region */
    if (nw == 1 || (m >= MM_PREFILL && wk_dtype_is_quantized(wdt)) || (!wk_dtype_is_quantized(wdt) && !WK_QMM_HALF_DOT_FORM))
        return by_weight(dev, x, lx, xdt, nw, w, lw, wdt, dst, m, ntot);

    const wk_dtype_info *wi = wk_dtype_info_of(wdt);
    bool quant = wk_dtype_is_quantized(wdt);
    const wk_qmm_kernels kern = wk__qmm_choose(wdt);
    multi_ctx c = {.nw = nw, .m = m, .k = k, .ntot = ntot, .kern = kern, .f16 = wdt == WK_F16,
                   .dfn = quant ? NULL : wk__dotmm_pick(), .dwt = wdt == WK_F16 ? WK_DOTMM_F16 : WK_DOTMM_BF16};
    for (int i = 0; i < nw; i++) {
        c.off[i + 1] = c.off[i] + lw[i].shape[0];
        if (quant) {
            c.w[i] = (const uint8_t *)w[i] + (size_t)(lw[i].offset / wi->block_elems) * wi->block_bytes;
            c.wrs[i] = (size_t)(lw[i].stride[0] / wi->block_elems) * wi->block_bytes;
        } else {
            c.w[i] = (const uint8_t *)((const uint16_t *)w[i] + lw[i].offset);
            c.wrs[i] = sizeof(uint16_t) * (size_t)lw[i].stride[0];
        }
    }
    float *out = xdt == WK_F32 ? dst : malloc(sizeof(float) * (size_t)(m * ntot));
    /* 64-byte aligned: the dot-form kernels' zmm loads of x then split no
     * cache lines (30% of an f16 prefill when they did) */
    float *X = wk__dotmm_alloc(sizeof(float) * (size_t)(m * (k ? k : 1)));
    uint8_t *A = NULL;
    wk_status st = WK_OK;
    if (!out || !X) {
        st = wk__err(WK_ERR_OOM, op, "cannot allocate %lld x %lld floats of scratch", (long long)m, (long long)k);
        goto done;
    }
    /* M < 16 rows of at most a few thousand: no region for these (f16 /
     * bf16 prefills gather serially too: a small part of their product) */
    for (int64_t row = 0; row < m; row++) wk__qmm_gather_row(x, lx, xdt, k, row, X + row * k);
    if (quant) {
        wk_qact_kind kind = wk__qact_kind(wdt);
        int64_t bel = kind == WK_QACT_32 ? WK_QK : WK_QK_K;
        size_t abytes = kind == WK_QACT_32 ? sizeof(wk_qa32) : sizeof(wk_block_q8_K);
        c.nb = k / bel;
        c.as = (size_t)(c.nb ? c.nb : 1) * abytes;
        if (!(A = malloc(c.as * (size_t)m))) {
            st = wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of quantized activations", c.as * (size_t)m);
            goto done;
        }
        for (int64_t row = 0; row < m; row++) {
            void *a = A + (size_t)row * c.as;
            if (kind == WK_QACT_32) wk__qact32_row(X + row * k, k, a);
            else wk__qactK_row(X + row * k, k, a);
        }
        c.A = A;
    }
    c.X = X;
    c.out = out;
    /* the threshold and slice size of qmatmul's decode region, over all rows */
    wk__parallel_for(ntot, 16, ntot * k * m >= (1 << 17) ? 0 : INT64_MAX, multi_slice, &c);
    if (atomic_load(&c.oom)) {
        st = wk__err(WK_ERR_OOM, op, "cannot allocate a widened weight block (%lld floats)", (long long)k);
        goto done;
    }
    if (xdt == WK_F16) wk__vcvt_f32_to_f16(dst, out, m * ntot);
    else if (xdt == WK_BF16) wk__vcvt_f32_to_bf16(dst, out, m * ntot);
done:
    if (out != dst) free(out);
    free(X);
    free(A);
    return st;
}
