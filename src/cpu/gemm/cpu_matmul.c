/* CPU matmul entry: walks the batch dims with each operand's own batch
 * strides (any strides, 0 included: the narrowed 4-D case of seed 002 is
 * simply a different batch offset) and hands each 2-D product to the GEMM
 * chosen for this CPU at run time: f32 / f64 to wick's packed GEMM (or the
 * system BLAS in a -DWICK_BLAS build), f16 / bf16 to the same loop nest with
 * their own packers (widened to f32 strip by strip; bf16 on vdpbf16ps where
 * the CPU has AVX512-BF16), f8 through f32 copies, each result rounded once.
 * f32 products of the linear-layer shape (x . W^T: B's columns and A's rows
 * contiguous along k) take the dot-form product (dotmm.h) at every M: a
 * row's bits do not depend on M (issue 24) and decode reads W once. Other
 * f32 / f64 products with n == 1 take the GEMV path (m == 1 stays on the
 * GEMM); f16 / bf16 with m == 1 or n == 1 a widening GEMV. */
#include "tensor/tensor.h"
#include "cpu/memory/cpu_alloc.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/gemm/dotmm.h"
#include "cpu/gemm/gemm.h"
#include "cpu/gemm/gemv_half.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <stdlib.h>

/* 1 (the default): an f32 product with m == 1 runs the GEMM (transposed),
 * not the GEMV, so a row gets the same bits alone as inside M rows (batch
 * invariance, issue 24), at a decode cost on f32 weights (the GEMV is
 * about 2.7x faster there); 0: the GEMV. */
#define WK_MATMUL_ROW_INVARIANT 1
/* 1 (the default): f32 products of the linear-layer shape (B a transposed
 * view, unit stride along k in both operands) take the dot-form product
 * for every M: batch invariant at GEMV speed for decode. 0: the GEMM. */
#ifndef WK_MATMUL_DOT_FORM
#define WK_MATMUL_DOT_FORM 1
#endif

/* Element offset of batch b for a layout whose last two dims are the matrix. */
static int64_t batch_offset(const wk_layout *l, int64_t b) {
    return l->offset + wk__unravel(l->shape, l->stride, l->rank - 2, b);
}

/* A narrow-float matrix converted to a contiguous f32 copy; rows with unit
 * stride go through the vector conversions (F16C / AVX-512). */
static float *widen(const void *src, int64_t off, int64_t rows, int64_t cols, int64_t rs, int64_t cs, wk_dtype dt) {
    int64_t cnt = rows * cols;
    /* wick's buffer cache: a fresh 64 MiB malloc costs more in page faults
     * than the conversion (f16 32 x 4096 x 4096 ran at a third of f32) */
    float *w = wk__cpu_alloc(sizeof(float) * (size_t)cnt);
    if (!w) return NULL;
    const uint16_t *h = (const uint16_t *)src + off;
    for (int64_t i = 0; i < rows; i++) {
        if (cs == 1 && dt == WK_F16) wk__vcvt_f16_to_f32(w + i * cols, h + i * rs, cols);
        else if (cs == 1 && dt == WK_BF16) wk__vcvt_bf16_to_f32(w + i * cols, h + i * rs, cols);
        else
            for (int64_t j = 0; j < cols; j++) w[i * cols + j] = wk__narrow_load(src, off + i * rs + j * cs, dt);
    }
    return w;
}

/* The f32 result of a narrow-float product rounded once into dst. */
static void narrow_out(void *dst, int64_t off, const float *c, int64_t cnt, wk_dtype dt) {
    if (dt == WK_F16) wk__vcvt_f32_to_f16((uint16_t *)dst + off, c, cnt);
    else if (dt == WK_BF16) wk__vcvt_f32_to_bf16((uint16_t *)dst + off, c, cnt);
    else
        for (int64_t i = 0; i < cnt; i++) wk__narrow_store(dst, off + i, dt, c[i]);
}

/* ---- f16 / bf16 matrix-vector: y[j] = sum_p x[p] * B[p, j], B read once
 * and converted to f32 in L1-sized pieces (no widened copy of the matrix),
 * summed in f32, each output rounded once. */
#define NGEMV_BLOCK 1024

typedef struct {
    int64_t n, k;
    const float *x;                  /* the vector, already f32 */
    const uint16_t *b; int64_t brs, bcs;
    void *y; int64_t yoff;
    wk_dtype dt;
    const wk_gemm_kernels *kk;       /* half_rows / half_dot: fused widen + FMA loops, or NULL */
} ngemv_ctx;

static void cvt_run(float *d, const uint16_t *s, int64_t cnt, wk_dtype dt) {
    if (dt == WK_F16) wk__vcvt_f16_to_f32(d, s, cnt);
    else wk__vcvt_bf16_to_f32(d, s, cnt);
}

static void ngemv_piece(void *vc, int64_t j0, int64_t j1, int tid) {
    (void)tid;
    const ngemv_ctx *v = vc;
    float acc[NGEMV_BLOCK], tmp[4 * NGEMV_BLOCK];
    for (int64_t jb = j0; jb < j1; jb += NGEMV_BLOCK) {
        int64_t w = j1 - jb < NGEMV_BLOCK ? j1 - jb : NGEMV_BLOCK;
        if (v->kk->half_rows && v->bcs == 1) {
            for (int64_t j = 0; j < w; j++) acc[j] = 0;
            v->kk->half_rows(acc, v->x, v->b + jb, v->brs, v->k, w, v->dt == WK_F16);
        } else if (v->kk->half_dot && v->brs == 1) {
            for (int64_t j = 0; j < w; j++)
                acc[j] = v->kk->half_dot(v->x, v->b + (jb + j) * v->bcs, v->k, v->dt == WK_F16);
        } else if (v->bcs == 1) {
            /* rows of B contiguous: scaled converted rows into acc, four
             * rows a pass (2 KiB runs of each: short runs at a large row
             * stride starve the prefetcher; 256-column runs gave 2 GB/s) */
            for (int64_t j = 0; j < w; j++) acc[j] = 0;
            int64_t p = 0;
            for (; p + 4 <= v->k; p += 4) {
                for (int r = 0; r < 4; r++) cvt_run(tmp + r * NGEMV_BLOCK, v->b + (p + r) * v->brs + jb, w, v->dt);
                float x0 = v->x[p], x1 = v->x[p + 1], x2 = v->x[p + 2], x3 = v->x[p + 3];
                const float *restrict t0 = tmp, *restrict t1 = tmp + NGEMV_BLOCK;
                const float *restrict t2 = t1 + NGEMV_BLOCK, *restrict t3 = t2 + NGEMV_BLOCK;
                for (int64_t j = 0; j < w; j++) acc[j] += x0 * t0[j] + x1 * t1[j] + x2 * t2[j] + x3 * t3[j];
            }
            for (; p < v->k; p++) {
                cvt_run(tmp, v->b + p * v->brs + jb, w, v->dt);
                float xp = v->x[p];
                for (int64_t j = 0; j < w; j++) acc[j] += xp * tmp[j];
            }
        } else if (v->brs == 1) {
            /* columns contiguous (x @ W^T of a linear layer): dot products */
            for (int64_t j = 0; j < w; j++) {
                const uint16_t *col = v->b + (jb + j) * v->bcs;
                float lane[16] = {0};
                for (int64_t p0 = 0; p0 < v->k; p0 += NGEMV_BLOCK) {
                    int64_t len = v->k - p0 < NGEMV_BLOCK ? v->k - p0 : NGEMV_BLOCK;
                    cvt_run(tmp, col + p0, len, v->dt);
                    int64_t p = 0;
                    for (; p + 16 <= len; p += 16)
                        for (int l = 0; l < 16; l++) lane[l] += v->x[p0 + p + l] * tmp[p + l];
                    for (; p < len; p++) lane[p % 16] += v->x[p0 + p] * tmp[p];
                }
                float s = 0;
                for (int l = 0; l < 16; l++) s += lane[l];
                acc[j] = s;
            }
        } else {
            for (int64_t j = 0; j < w; j++) {
                float s = 0;
                for (int64_t p = 0; p < v->k; p++) s += v->x[p] * wk__narrow_load(v->b, p * v->brs + (jb + j) * v->bcs, v->dt);
                acc[j] = s;
            }
        }
        narrow_out(v->y, v->yoff + jb, acc, w, v->dt);
    }
}

/* y (n outputs at element yoff of dst) = x (k elements, stride xs) @ B. */
static bool narrow_gemv(const wk_gemm_kernels *kk, int64_t n, int64_t k, const void *xbuf, int64_t xoff, int64_t xs,
                        const void *bbuf, int64_t boff, int64_t brs, int64_t bcs, void *dst, int64_t yoff,
                        wk_dtype dt) {
    float *x = malloc(sizeof(float) * (size_t)(k > 0 ? k : 1));
    if (!x) return false;
    for (int64_t p = 0; p < k; p++) x[p] = wk__narrow_load(xbuf, xoff + p * xs, dt);
    ngemv_ctx v = {n, k, x, (const uint16_t *)bbuf + boff, brs, bcs, dst, yoff, dt, kk};
    wk__parallel_for(n, NGEMV_BLOCK, n * k >= (1 << 16) ? 0 : INT64_MAX, ngemv_piece, &v);
    free(x);
    return true;
}

/* f32 / f64 products: the system BLAS when wick was built with one and the
 * strides fit it, else wick's GEMM. */
static bool gemm_f32(const wk_gemm_kernels *kk, int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
                     const float *b, int64_t brs, int64_t bcs, float *c) {
    return wk__blas_gemm_f32(m, n, k, a, ars, acs, b, brs, bcs, c) || kk->f32(m, n, k, a, ars, acs, b, brs, bcs, c);
}
static bool gemm_f64(const wk_gemm_kernels *kk, int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs,
                     const double *b, int64_t brs, int64_t bcs, double *c) {
    return wk__blas_gemm_f64(m, n, k, a, ars, acs, b, brs, bcs, c) || kk->f64(m, n, k, a, ars, acs, b, brs, bcs, c);
}

wk_status wk__cpu_matmul(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                         void *dst, wk_dtype dt) {
    (void)dev;
    wk_gemm_kernels kk = wk__gemm_kernels();
    bool blas = wk__blas_name() != NULL;
    int r = la->rank;
    int64_t m = la->shape[r - 2], k = la->shape[r - 1], n = lb->shape[r - 1];
    int64_t ars = la->stride[r - 2], acs = la->stride[r - 1], brs = lb->stride[r - 2], bcs = lb->stride[r - 1];
    int64_t nb = 1;
    for (int i = 0; i < r - 2; i++) nb *= la->shape[i];
    if (dt == WK_F32 && !blas && WK_MATMUL_DOT_FORM && brs == 1 && acs == 1 && n > 1) {
        /* the linear-layer shape, x . W^T with W's rows (B's columns) and
         * x's rows contiguous along k: the dot-form product (dotmm.h) for
         * every M, tiny ones included. A row's bits do not depend on M
         * (batch invariance, issue 24) and decode reads W once, unpacked */
        for (int64_t bi = 0; bi < nb; bi++)
            (void)wk__dotmm(/* f32: no scratch, cannot fail */ m, n, k, (const float *)a + batch_offset(la, bi), ars, (const float *)b + batch_offset(lb, bi),
                      bcs, WK_DOTMM_F32, (float *)dst + bi * m * n, n);
        return WK_OK;
    }
    if (m * n * k <= 512 && (dt == WK_F32 || dt == WK_F64)) {
        /* tiny products: packing costs more than the arithmetic */
        for (int64_t bi = 0; bi < nb; bi++) {
            int64_t ao = batch_offset(la, bi), bo = batch_offset(lb, bi);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double acc = 0;
                    for (int64_t p = 0; p < k; p++)
                        acc += wk__load_f64(a, ao + i * ars + p * acs, dt) * wk__load_f64(b, bo + p * brs + j * bcs, dt);
                    wk__store_f64(dst, bi * m * n + i * n + j, dt, acc);
                }
        }
        return WK_OK;
    }
    if ((n == 1 || (m == 1 && !WK_MATMUL_ROW_INVARIANT)) && (dt == WK_F32 || dt == WK_F64) && !blas) {
        /* matrix-vector: read the matrix once, no packing. For n == 1 the
         * product is the transpose view: y = b^T A^T. m == 1 (n > 1) takes
         * the GEMM below, whose rows are summed in an order that depends
         * only on k: a row of x gives the same bits alone as inside M rows
         * (batch invariance, issue 24; the GEMV sums in another order). */
        for (int64_t bi = 0; bi < nb; bi++) {
            int64_t ao = batch_offset(la, bi), bo = batch_offset(lb, bi);
            if (dt == WK_F32) {
                const float *A = (const float *)a + ao, *B = (const float *)b + bo;
                float *y = (float *)dst + bi * m * n;
                if (m == 1) kk.v32(n, k, A, acs, B, brs, bcs, y);
                else kk.v32(m, k, B, brs, A, acs, ars, y);
            } else {
                const double *A = (const double *)a + ao, *B = (const double *)b + bo;
                double *y = (double *)dst + bi * m * n;
                if (m == 1) kk.v64(n, k, A, acs, B, brs, bcs, y);
                else kk.v64(m, k, B, brs, A, acs, ars, y);
            }
        }
        return WK_OK;
    }
    if ((m == 1 || n == 1) && (dt == WK_F16 || dt == WK_BF16)) {
        for (int64_t bi = 0; bi < nb; bi++) {
            int64_t ao = batch_offset(la, bi), bo = batch_offset(lb, bi);
            bool ok = m == 1 ? narrow_gemv(&kk, n, k, a, ao, acs, b, bo, brs, bcs, dst, bi * m * n, dt)
                             : narrow_gemv(&kk, m, k, b, bo, brs, a, ao, acs, ars, dst, bi * m * n, dt);
            if (!ok) return wk__err(WK_ERR_OOM, "matmul", "cannot allocate %lld floats of scratch", (long long)k);
        }
        return WK_OK;
    }
    float *cw = NULL;
    if (wk__is_narrow_float(dt)) {
        cw = wk__cpu_alloc(sizeof(float) * (size_t)(m * n));
        if (!cw) return wk__err(WK_ERR_OOM, "matmul", "cannot allocate %lld floats of scratch", (long long)(m * n));
    }
    for (int64_t bi = 0; bi < nb; bi++) {
        int64_t ao = batch_offset(la, bi), bo = batch_offset(lb, bi);
        bool ok;
        if (dt == WK_F32 && m == 1 && !blas && WK_MATMUL_ROW_INVARIANT) {
            /* one row: the transposed product y^T (n x 1) = B^T a^T, the
             * GEMM with B as its A operand (its rows packed, no 8-row tile
             * of which 7 are padding). Each element is the same chain of
             * fmas over the same k slices as a row of an m > 1 product
             * (fma(a, b, c) == fma(b, a, c)): the same bits */
            ok = gemm_f32(&kk, n, 1, k, (const float *)b + bo, bcs, brs, (const float *)a + ao, acs, 1,
                          (float *)dst + bi * n);
        } else if (dt == WK_F32) {
            ok = gemm_f32(&kk, m, n, k, (const float *)a + ao, ars, acs, (const float *)b + bo, brs, bcs,
                          (float *)dst + bi * m * n);
        } else if (dt == WK_F64) {
            ok = gemm_f64(&kk, m, n, k, (const double *)a + ao, ars, acs, (const double *)b + bo, brs, bcs,
                          (double *)dst + bi * m * n);
        } else if (dt == WK_F16 || dt == WK_BF16) {
            /* the loop nest with the type's packers: widened to f32 strip by
             * strip (or read as bf16 pairs by vdpbf16ps), never copied whole */
            wk_gemm_args g = {m, n, k, (const uint16_t *)a + ao, ars, acs, (const uint16_t *)b + bo, brs, bcs, cw, NULL};
            ok = wk__gemm_run(dt == WK_F16 ? kk.f16 : kk.bf16, &g);
            if (ok) narrow_out(dst, bi * m * n, cw, m * n, dt);
        } else {
            float *aw = widen(a, ao, m, k, ars, acs, dt), *bw = widen(b, bo, k, n, brs, bcs, dt);
            ok = aw && bw && gemm_f32(&kk, m, n, k, aw, k, 1, bw, n, 1, cw);
            if (ok) narrow_out(dst, bi * m * n, cw, m * n, dt);
            wk__cpu_free(aw, sizeof(float) * (size_t)(m * k));
            wk__cpu_free(bw, sizeof(float) * (size_t)(k * n));
        }
        if (!ok) {
            wk__cpu_free(cw, sizeof(float) * (size_t)(m * n));
            return wk__err(WK_ERR_OOM, "matmul", "cannot allocate GEMM packing buffers");
        }
    }
    wk__cpu_free(cw, sizeof(float) * (size_t)(m * n));
    return WK_OK;
}
