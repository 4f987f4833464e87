/* The CUDA backend's convolutions: host glue between the backend table
 * (cuda_conv.h), the layout plan (cuda_conv_plan.h), the conv kernels
 * (kernels_conv.h) and the backend's own matmul entry (cuBLAS).
 *
 * Why this shape: the GEMM is the whole cost of a convolution, and the
 * matmul entry already maps any strided batch of GEMMs onto cuBLAS
 * (f16 / bf16 accumulating in f32). So a forward conv is im2col into a
 * pooled column buffer plus ONE matmul call whose contiguous result is the
 * NCHW output itself (no transpose pass); a transposed conv is ONE matmul
 * into pooled columns plus a deterministic col2im gather (no atomics).
 * Grouped convs make one matmul call per image instead (one strided batch
 * over the groups each: a weight shared by the images at batch stride 0
 * over [images, groups] has no single batch stride, and the matmul entry
 * would issue images * groups separate GEMMs - thousands for a depthwise
 * conv). The
 * batch is processed in chunks of images so the temporaries stay under
 * WK_CUCONV_COL_LIMIT bytes (dst is then written chunk by chunk).
 *
 * Numerics mirror src/cpu/conv/cpu_conv.c: forward f16 / bf16 columns hold the
 * input's exact values and cuBLAS sums in f32 with one rounding at the end
 * (the CPU: f32 GEMM, one rounding); transposed f16 / bf16 run their GEMM in
 * f32 on widened copies of x and w and sum col2im in f32, rounding once (as
 * the CPU). Results differ from the CPU only by the GEMM's summation order.
 *
 * Everything is queued on the device's stream; temporaries go back to the
 * pool right after their last use is queued (stream-ordered reuse, see
 * cuda_pool.h). Nothing waits.
 * Checked: the plan + kernels + matmul layouts in host emulation against
 * wk__cpu_conv* (tests/cuda/test_cuda_conv_emu.cu); this file compiled with
 * gcc and clang. */
#include "cuda/runtime/cuda_device.h"

#ifdef WICK_HAVE_CUDA
#include <string.h>
#include "cuda/conv/cuda_conv.h"
#include "cuda/conv/cuda_conv_plan.h"
#include "cuda/conv/kernels_conv.h"
#include "cuda/runtime/cuda_view.h"

static wk_cu_conv_geo conv_geo(const wk_cuconv_plan *pl, int64_t nb) {
    wk_cu_conv_geo g = {nb,     pl->cin, pl->h,  pl->w,  pl->cout, pl->kh, pl->kw, pl->oh,
                        pl->ow, pl->sh,  pl->sw, pl->ph, pl->pw,   pl->dh, pl->dw, pl->groups};
    return g;
}

/* The pooled temporaries of one conv. */
typedef struct conv_temps {
    void *w, *x, *col;
    size_t w_bytes, x_bytes, col_bytes;
} conv_temps;

static void temps_free(wk_cuda_dev *d, conv_temps *t) {
    if (t->w) wk__cupool_free(d->pool, t->w, t->w_bytes);
    if (t->x) wk__cupool_free(d->pool, t->x, t->x_bytes);
    if (t->col) wk__cupool_free(d->pool, t->col, t->col_bytes);
}

static wk_status temps_alloc(const char *op, wk_cuda_dev *d, const wk_cuconv_plan *pl, conv_temps *t) {
    memset(t, 0, sizeof *t);
    t->w_bytes = pl->wpack_bytes;
    t->x_bytes = pl->xpack_bytes;
    t->col_bytes = pl->col_bytes;
    bool ok = true;
    if (t->w_bytes && wk__cupool_alloc(d->pool, t->w_bytes, &t->w) != WK_OK) ok = false;
    if (ok && t->x_bytes && wk__cupool_alloc(d->pool, t->x_bytes, &t->x) != WK_OK) ok = false;
    if (ok && t->col_bytes && wk__cupool_alloc(d->pool, t->col_bytes, &t->col) != WK_OK) ok = false;
    if (ok) return WK_OK;
    temps_free(d, t);
    memset(t, 0, sizeof *t);
    return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of convolution temporaries on %s",
                   pl->wpack_bytes + pl->xpack_bytes + pl->col_bytes, d->base.name);
}

/* Images [b0, b0 + nb) of a forward conv: im2col (unless x is the GEMM's B
 * as it lies), then matmul straight into dst, gemm_imgs images per call. */
static wk_status fwd_chunk(const char *op, wk_device *dev, wk_cuda_dev *d, const wk_cuconv_plan *pl,
                           const conv_temps *t, const void *x, const wk_layout *lx, const void *wsrc,
                           const wk_layout *lw_used, void *dst, int64_t b0, int64_t nb) {
    const void *bsrc = x;
    if (!pl->x_direct) {
        wk_layout xc;
        wk__cuconv_x_chunk(pl, lx, b0, nb, &xc);
        wk_status st = wk__cuda_launched(op, d, wk__cu_conv_im2col(d->stream, x, wk__cu_view(&xc), t->col, pl->dt,
                                                          conv_geo(pl, nb)));
        if (st != WK_OK) return st;
        bsrc = t->col;
    }
    size_t es = wk__dtype_elem_bytes(pl->dt);
    for (int64_t j = 0; j < nb; j += pl->gemm_imgs) {
        int64_t m = nb - j < pl->gemm_imgs ? nb - j : pl->gemm_imgs;
        wk_layout la, lb;
        wk__cuconv_gemm_layouts(pl, lw_used, lx, b0 + j, m, &la, &lb);
        if (!pl->x_direct) lb.offset += j * pl->col_img;
        char *out = (char *)dst + (size_t)((b0 + j) * pl->cout * pl->oh * pl->ow) * es;
        wk_status st = wk__cuda_backend.matmul(dev, wsrc, &la, bsrc, &lb, out, pl->dt);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

/* Images [b0, b0 + nb) of a transposed conv: (pack x), matmul into the
 * columns (gemm_imgs images per call), col2im into dst. */
static wk_status tr_chunk(const char *op, wk_device *dev, wk_cuda_dev *d, const wk_cuconv_plan *pl,
                          const conv_temps *t, const void *x, const wk_layout *lx, const void *wsrc,
                          const wk_layout *lw_used, void *dst, int64_t b0, int64_t nb) {
    const void *xsrc = x;
    wk_layout lxu = *lx;
    int64_t xb0 = b0;
    if (pl->x_pack) {
        wk_layout xc;
        wk__cuconv_x_chunk(pl, lx, b0, nb, &xc);
        wk_status st = wk__cuda_launched(op, d, wk__cu_conv_pack(d->stream, x, wk__cu_view(&xc), pl->dt, t->x, pl->ct));
        if (st != WK_OK) return st;
        wk__cuconv_xpack_layout(pl, nb, &lxu);
        xb0 = 0;
        xsrc = t->x;
    }
    size_t cs = wk__dtype_elem_bytes(pl->ct);
    for (int64_t j = 0; j < nb; j += pl->gemm_imgs) {
        int64_t m = nb - j < pl->gemm_imgs ? nb - j : pl->gemm_imgs;
        wk_layout la, lb;
        wk__cuconv_gemm_layouts(pl, lw_used, &lxu, xb0 + j, m, &la, &lb);
        char *cols = (char *)t->col + (size_t)(j * pl->col_img) * cs;
        wk_status st = wk__cuda_backend.matmul(dev, wsrc, &la, xsrc, &lb, cols, pl->ct);
        if (st != WK_OK) return st;
    }
    size_t es = wk__dtype_elem_bytes(pl->dt);
    char *out = (char *)dst + (size_t)(b0 * pl->cout * pl->oh * pl->ow) * es;
    return wk__cuda_launched(op, d, wk__cu_conv_col2im(d->stream, t->col, out, pl->dt, conv_geo(pl, nb)));
}

static wk_status conv_run(const char *op, wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                          const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p,
                          bool transposed) {
    wk_cuda_dev *d = wk__cuda_dev(dev);
    wk_status st = wk__cuda_enter(op, d);
    if (st != WK_OK) return st;
    if (dt != WK_F32 && dt != WK_F64 && dt != WK_F16 && dt != WK_BF16)
        return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    int64_t nout = wk__layout_numel(ld);
    if (nout == 0) return WK_OK;
    if (wk__layout_numel(lx) == 0 || wk__layout_numel(lw) == 0) /* no products at all */
        return wk__cuda_check(op, d, cudaMemsetAsync(dst, 0, (size_t)nout * wk__dtype_elem_bytes(dt), d->stream));
    wk_cuconv_plan pl;
    wk__cuconv_plan(&pl, lx, lw, ld, dt, p, transposed, WK_CUCONV_COL_LIMIT);
    conv_temps t;
    st = temps_alloc(op, d, &pl, &t);
    if (st != WK_OK) return st;
    const void *wsrc = w;
    wk_layout lw_used = *lw;
    if (pl.w_pack) {
        wk_layout w4;
        wk__cuconv_as4d(lw, &w4);
        st = wk__cuda_launched(op, d, wk__cu_conv_pack(d->stream, w, wk__cu_view(&w4), dt, t.w, pl.ct));
        wk__cuconv_wpack_layout(&pl, lw, &lw_used);
        wsrc = t.w;
    }
    for (int64_t b0 = 0; st == WK_OK && b0 < pl.n; b0 += pl.chunk) {
        int64_t nb = pl.n - b0 < pl.chunk ? pl.n - b0 : pl.chunk;
        st = transposed ? tr_chunk(op, dev, d, &pl, &t, x, lx, wsrc, &lw_used, dst, b0, nb)
                        : fwd_chunk(op, dev, d, &pl, &t, x, lx, wsrc, &lw_used, dst, b0, nb);
    }
    /* stream-ordered: the work queued above runs before any later user of these blocks */
    temps_free(d, &t);
    return st;
}

/* The backend table's one conv entry (spatial rank and direction in the
 * arguments; 1-d convs run as 2-d convs with H = 1 inside conv_run). */
wk_status wk__cuda_conv(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                        void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_args *a) {
    const char *op = a->spatial == 1 ? (a->transposed ? "conv_transpose1d" : "conv1d")
                                     : (a->transposed ? "conv_transpose2d" : "conv2d");
    if ((a->spatial != 1 && a->spatial != 2) || lx->rank != a->spatial + 2)
        return wk__err(WK_ERR_ARG, op, "spatial rank %d does not match a rank-%d input", a->spatial, lx->rank);
    return conv_run(op, dev, x, lx, w, lw, dst, ld, dt, &a->p, a->transposed);
}

#else
typedef int wk__cuda_conv_not_built; /* keeps the translation unit non-empty */
#endif
