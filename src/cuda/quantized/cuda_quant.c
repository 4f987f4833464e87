/* Block-quantized work on the CUDA backend: the dequantize and qmatmul
 * entries, and the word views that let the generic entries move block rows.
 *
 * qmatmul, y (..., N) = x (..., K) . w^T with w (N, K):
 *  - decode, M = rows of x <= WK_CU_QMV_MAX_M (8): the mat-vec kernel
 *    (kernels_quant.cu) reads each weight block once for all M rows; x is
 *    made contiguous f32 first (a cast kernel, M x K, small).
 *  - prefill, M > 8: w is dequantized into a pooled scratch buffer (N x K;
 *    f16, or bf16 when x is bf16, since a bf16 x would not survive f16's
 *    range) and x cast to the same type, then one cublasGemmEx accumulating
 *    in f32 writes y in x's dtype. The scratch comes from the device pool,
 *    so repeated prefills of a model reuse the same blocks. An f32 x is
 *    rounded to f16 for the tensor cores, as ggml's cuBLAS path does: values
 *    beyond f16's range (65504) would overflow.
 *  - f16 / bf16 weights: straight to cublasGemmEx (x cast to the weights'
 *    dtype when it differs); a row-strided w is used in place.
 * Every temporary is freed stream-ordered right after the work is queued.
 *
 * Checked: compiled; the kernels in host emulation
 * (tests/cuda/test_cuda_quant_emu.cu); this file's cuBLAS calls and
 * dispatch only by tests/test_cuda_quant.c, which needs a GPU. */
#include "cuda/quantized/cuda_quant.h"

#ifdef WICK_HAVE_CUDA
#include <limits.h>
#include <string.h>
#include "cuda/runtime/cuda_view.h"
#include "cuda/quantized/kernels_quant.h"

static bool float_out(wk_dtype dt) { return dt == WK_F32 || dt == WK_F16 || dt == WK_BF16; }

wk_status wk__cuda_dequantize(wk_device *dev, const void *w, const wk_layout *lw, wk_dtype wdt, void *dst,
                              wk_dtype ddt) {
    const char *op = "wk_dequantize";
    wk_cuda_dev *d = wk__cuda_dev(dev);
    wk_status st = wk__cuda_enter(op, d);
    if (st != WK_OK) return st;
    if (!wk_dtype_is_quantized(wdt))
        return wk__err(WK_ERR_DTYPE, op, "%s is not a block-quantized dtype", wk_dtype_name(wdt));
    if (!float_out(ddt))
        return wk__err(WK_ERR_DTYPE, op, "dequantizes to f32, f16 or bf16, not %s", wk_dtype_name(ddt));
    wk_cu_qrows q;
    if (!wk__cu_qrows_plan(wk__cu_view(lw), wdt, &q))
        return wk__err(WK_ERR_SHAPE, op, "the %s view is not whole blocks per contiguous row", wk_dtype_name(wdt));
    return wk__cuda_launched(op, d, wk__cu_dequantize(d->stream, w, wk__cu_view(lw), wdt, dst, ddt));
}

/* A pooled temporary of n bytes, freed by tmp_free (stream-ordered). */
typedef struct tmp_buf {
    void *p;
    size_t n;
} tmp_buf;

static wk_status tmp_alloc(const char *op, wk_cuda_dev *d, size_t n, tmp_buf *t, const char *what) {
    t->n = n;
    t->p = NULL;
    if (wk__cupool_alloc(d->pool, n ? n : 1, &t->p) == WK_OK) return WK_OK;
    t->p = NULL;
    return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes on %s for %s", n, d->base.name, what);
}

static void tmp_free(wk_cuda_dev *d, tmp_buf *t) {
    if (t->p) wk__cupool_free(d->pool, t->p, t->n ? t->n : 1);
    t->p = NULL;
}

/* x (any layout, xdt) as contiguous values of dtype to: x itself when it
 * already is, else a cast into *t. */
static wk_status x_as(const char *op, wk_cuda_dev *d, const void *x, const wk_layout *lx, wk_dtype xdt, wk_dtype to,
                      tmp_buf *t, const void **out) {
    t->p = NULL;
    if (xdt == to && wk__layout_is_contiguous(lx)) {
        *out = (const char *)x + (size_t)lx->offset * wk__dtype_elem_bytes(xdt);
        return WK_OK;
    }
    wk_status st = tmp_alloc(op, d, (size_t)wk__layout_numel(lx) * wk__dtype_elem_bytes(to), t, "the activations");
    if (st != WK_OK) return st;
    *out = t->p;
    return wk__cuda_launched(op, d, wk__cu_cast(d->stream, x, wk__cu_view(lx), xdt, t->p, to));
}

static cudaDataType_t cuda_type(wk_dtype dt) {
    return dt == WK_F32 ? CUDA_R_32F : dt == WK_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* dst (M x N, odt, contiguous) = x (M x K, contiguous) . w^T, w rows of K
 * with row stride ldw, both of dtype cdt (f16 / bf16), f32 accumulation */
static wk_status gemm_xwt(const char *op, wk_cuda_dev *d, const void *w, int64_t ldw, const void *x, wk_dtype cdt,
                          int64_t m, int64_t n, int64_t k, void *dst, wk_dtype odt) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || ldw > INT_MAX)
        return wk__err(WK_ERR_SHAPE, op, "m=%lld n=%lld k=%lld exceed cuBLAS's 32-bit sizes", (long long)m,
                       (long long)n, (long long)k);
    float one = 1.0f, zero = 0.0f;
    pthread_mutex_lock(&d->blas_lock);
    /* column-major: y^T (n x m, ld n) = (w as k x n, ld ldw)^T . (x^T as k x m, ld k) */
    cublasStatus_t bs = cublasGemmEx(d->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, w,
                                     cuda_type(cdt), (int)ldw, x, cuda_type(cdt), (int)k, &zero, dst, cuda_type(odt),
                                     (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    pthread_mutex_unlock(&d->blas_lock);
    if (bs == CUBLAS_STATUS_SUCCESS) return WK_OK;
    /* a failed GEMM launch may be a lost context underneath: say so if it is */
    wk__cuda_note_error(d->ordinal, cudaGetLastError());
    wk_status lost = wk__cuda_lost_err(op, d->ordinal);
    if (lost != WK_OK) return lost;
    return wk__err(bs == CUBLAS_STATUS_ALLOC_FAILED ? WK_ERR_OOM : WK_ERR_DEVICE, op, "%s: cuBLAS: %s",
                   d->base.name, cublasGetStatusString(bs));
}

/* block weights */
static wk_status qmm_blocks(const char *op, wk_cuda_dev *d, const void *x, const wk_layout *lx, wk_dtype xdt,
                            const void *w, const wk_layout *lw, wk_dtype wdt, void *dst, int64_t m, int64_t n,
                            int64_t k) {
    wk_cu_qrows q;
    if (!wk__cu_qrows_plan(wk__cu_view(lw), wdt, &q))
        return wk__err(WK_ERR_SHAPE, op, "the %s weight view is not whole blocks per contiguous row",
                       wk_dtype_name(wdt));
    tmp_buf tx = {0}, tw = {0};
    const void *xc = NULL;
    wk_status st;
    if (m <= WK_CU_QMV_MAX_M) {
        st = x_as(op, d, x, lx, xdt, WK_F32, &tx, &xc);
        if (st == WK_OK)
            st = wk__cuda_launched(op, d,
                                   wk__cu_qmatvec(d->stream, w, wk__cu_view(lw), wdt, (const float *)xc, m, dst, xdt));
    } else {
        wk_dtype cdt = xdt == WK_BF16 ? WK_BF16 : WK_F16;
        st = tmp_alloc(op, d, (size_t)(n * k) * 2, &tw, "the dequantized weights");
        if (st == WK_OK)
            st = wk__cuda_launched(op, d, wk__cu_dequantize(d->stream, w, wk__cu_view(lw), wdt, tw.p, cdt));
        if (st == WK_OK) st = x_as(op, d, x, lx, xdt, cdt, &tx, &xc);
        if (st == WK_OK) st = gemm_xwt(op, d, tw.p, k, xc, cdt, m, n, k, dst, xdt);
    }
    tmp_free(d, &tx);
    tmp_free(d, &tw);
    return st;
}

/* f16 / bf16 weights */
static wk_status qmm_half(const char *op, wk_cuda_dev *d, const void *x, const wk_layout *lx, wk_dtype xdt,
                          const void *w, const wk_layout *lw, wk_dtype wdt, void *dst, int64_t m, int64_t n,
                          int64_t k) {
    tmp_buf tx = {0}, tw = {0};
    const void *xc = NULL, *wc = NULL;
    int64_t ldw = k;
    wk_status st = WK_OK;
    if ((k <= 1 || lw->stride[1] == 1) && (n <= 1 || lw->stride[0] >= k) && lw->stride[0] >= 0) {
        wc = (const char *)w + (size_t)lw->offset * 2; /* rows in place */
        if (n > 1) ldw = lw->stride[0];
    } else {
        st = x_as(op, d, w, lw, wdt, wdt, &tw, &wc); /* gathered contiguous */
    }
    if (st == WK_OK) st = x_as(op, d, x, lx, xdt, wdt, &tx, &xc);
    if (st == WK_OK) st = gemm_xwt(op, d, wc, ldw < 1 ? 1 : ldw, xc, wdt, m, n, k, dst, xdt);
    tmp_free(d, &tx);
    tmp_free(d, &tw);
    return st;
}

wk_status wk__cuda_qmatmul(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, const void *w,
                           const wk_layout *lw, wk_dtype wdt, void *dst) {
    const char *op = "wk_qmatmul";
    wk_cuda_dev *d = wk__cuda_dev(dev);
    wk_status st = wk__cuda_enter(op, d);
    if (st != WK_OK) return st;
    if (!float_out(xdt))
        return wk__err(WK_ERR_DTYPE, op, "activations must be f32, f16 or bf16, not %s", wk_dtype_name(xdt));
    if (!wk_dtype_is_quantized(wdt) && wdt != WK_F16 && wdt != WK_BF16)
        return wk__err(WK_ERR_DTYPE, op, "weights must be a block dtype, f16 or bf16, not %s", wk_dtype_name(wdt));
    if (lw->rank != 2 || lx->rank < 1 || lx->shape[lx->rank - 1] != lw->shape[1])
        return wk__err(WK_ERR_SHAPE, op, "x (..., %lld) times w^T needs w of shape (N, %lld), got rank %d",
                       lx->rank >= 1 ? (long long)lx->shape[lx->rank - 1] : 0LL,
                       lx->rank >= 1 ? (long long)lx->shape[lx->rank - 1] : 0LL, lw->rank);
    int64_t n = lw->shape[0], k = lw->shape[1], m = 1;
    for (int i = 0; i < lx->rank - 1; i++) m *= lx->shape[i];
    if (m == 0 || n == 0) return WK_OK;
    if (k == 0)
        return wk__cuda_check(op, d, cudaMemsetAsync(dst, 0, (size_t)(m * n) * wk__dtype_elem_bytes(xdt), d->stream));
    if (wk_dtype_is_quantized(wdt)) return qmm_blocks(op, d, x, lx, xdt, w, lw, wdt, dst, m, n, k);
    return qmm_half(op, d, x, lx, xdt, w, lw, wdt, dst, m, n, k);
}

#else
typedef int wk__cuda_quant_not_built;
#endif
