/* The matmul mapping of the CUDA convolutions (see cuda_conv_plan.h).
 * Plain C, built in every configuration; checked by host emulation in
 * tests/cuda/test_cuda_conv_emu.cu (wk__cpu_matmul run with these exact
 * layouts against wk__cpu_conv*). */
#include "cuda/conv/cuda_conv_plan.h"
#include "base/dtype.h"
#include <string.h>

void wk__cuconv_as4d(const wk_layout *l, wk_layout *out) {
    memset(out, 0, sizeof *out);
    out->rank = 4;
    out->offset = l->offset;
    if (l->rank == 4) {
        for (int i = 0; i < 4; i++) {
            out->shape[i] = l->shape[i];
            out->stride[i] = l->stride[i];
        }
        return;
    }
    /* [N, C, L] -> [N, C, 1, L] */
    out->shape[0] = l->shape[0];
    out->stride[0] = l->stride[0];
    out->shape[1] = l->shape[1];
    out->stride[1] = l->stride[1];
    out->shape[2] = 1;
    out->stride[2] = 0;
    out->shape[3] = l->shape[2];
    out->stride[3] = l->stride[2];
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* a * b for sizes >= 0, saturating at 2^62 (a temporary that large fails
 * to allocate and is reported as out of memory, never wrapped). */
#define SAT_MAX ((int64_t)1 << 62)
static int64_t mul_sat(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    if (a > SAT_MAX / b) return SAT_MAX;
    return a * b;
}

void wk__cuconv_plan(wk_cuconv_plan *pl, const wk_layout *lx, const wk_layout *lw, const wk_layout *ld, wk_dtype dt,
                     const wk_conv_params *p, bool transposed, size_t col_limit) {
    wk_layout x4, w4, d4;
    wk__cuconv_as4d(lx, &x4);
    wk__cuconv_as4d(lw, &w4);
    wk__cuconv_as4d(ld, &d4);
    bool two = lx->rank == 4;
    memset(pl, 0, sizeof *pl);
    pl->transposed = transposed;
    pl->dt = dt;
    pl->ct = transposed && (dt == WK_F16 || dt == WK_BF16) ? WK_F32 : dt;
    pl->n = x4.shape[0];
    pl->cin = x4.shape[1];
    pl->h = x4.shape[2];
    pl->w = x4.shape[3];
    pl->kh = w4.shape[2];
    pl->kw = w4.shape[3];
    pl->cout = d4.shape[1];
    pl->oh = d4.shape[2];
    pl->ow = d4.shape[3];
    pl->sw = p->stride;
    pl->pw = p->padding;
    pl->dw = p->dilation;
    pl->sh = two ? p->stride : 1;
    pl->ph = two ? p->padding : 0;
    pl->dh = two ? p->dilation : 1;
    pl->groups = p->groups;
    pl->cin_g = pl->cin / pl->groups;
    pl->cout_g = pl->cout / pl->groups;
    if (!transposed) {
        pl->gm = pl->cout_g;
        pl->gk = pl->cin_g * pl->kh * pl->kw;
        pl->gn = pl->oh * pl->ow;
    } else {
        pl->gm = pl->cout_g * pl->kh * pl->kw;
        pl->gk = pl->cin_g;
        pl->gn = pl->h * pl->w;
    }
    int64_t st;
    bool w_merges = wk__layout_merged_stride(&w4, 1, 4, &st);
    bool x_hw_merges = wk__layout_merged_stride(&x4, 2, 4, &st);
    pl->w_pack = !w_merges || pl->ct != dt;
    pl->x_direct = !transposed && pl->kh == 1 && pl->kw == 1 && pl->sh == 1 && pl->sw == 1 && pl->ph == 0 &&
                   pl->pw == 0 && x_hw_merges;
    pl->x_pack = transposed && (pl->ct != dt || !x_hw_merges);
    int64_t csz = (int64_t)wk__dtype_elem_bytes(pl->ct);
    int64_t col_img = 0, xpack_img = 0;
    if (!transposed) col_img = pl->x_direct ? 0 : mul_sat(mul_sat(pl->groups * pl->gk, pl->gn), csz);
    else col_img = mul_sat(mul_sat(pl->groups * pl->gm, pl->gn), csz);
    if (pl->x_pack) xpack_img = pl->cin * pl->h * pl->w * csz; /* x's own bytes (widened) */
    int64_t per = col_img + xpack_img, n1 = max64(pl->n, 1);
    pl->chunk = per == 0 ? n1 : (int64_t)(col_limit / (size_t)per);
    if (pl->chunk < 1) pl->chunk = 1;
    if (pl->chunk > n1) pl->chunk = n1;
    pl->gemm_imgs = pl->groups > 1 ? 1 : pl->chunk;
    pl->col_img = (transposed ? pl->gm : pl->gk) * pl->groups * pl->gn;
    pl->col_bytes = (size_t)mul_sat(col_img, pl->chunk);
    pl->xpack_bytes = (size_t)mul_sat(xpack_img, pl->chunk);
    pl->wpack_bytes = pl->w_pack ? (size_t)(w4.shape[0] * w4.shape[1] * w4.shape[2] * w4.shape[3] * csz) : 0;
}

void wk__cuconv_wpack_layout(const wk_cuconv_plan *pl, const wk_layout *lw, wk_layout *out) {
    (void)pl;
    wk_layout w4;
    wk__cuconv_as4d(lw, &w4);
    wk__layout_contiguous(out, w4.shape, 4, 0);
}

void wk__cuconv_xpack_layout(const wk_cuconv_plan *pl, int64_t nb, wk_layout *out) {
    int64_t shape[4] = {nb, pl->cin, pl->h, pl->w};
    wk__layout_contiguous(out, shape, 4, 0);
}

void wk__cuconv_x_chunk(const wk_cuconv_plan *pl, const wk_layout *lx, int64_t b0, int64_t nb, wk_layout *out) {
    (void)pl;
    wk__cuconv_as4d(lx, out);
    out->offset += b0 * out->stride[0];
    out->shape[0] = nb;
}

void wk__cuconv_gemm_layouts(const wk_cuconv_plan *pl, const wk_layout *lw_used, const wk_layout *lx_used, int64_t b0,
                             int64_t nb, wk_layout *la, wk_layout *lb) {
    wk_layout w4;
    wk__cuconv_as4d(lw_used, &w4);
    int64_t s0 = w4.stride[0], sk = 1;
    (void)wk__layout_merged_stride(&w4, 1, 4, &sk); /* the plan packed the weight when this fails */
    memset(la, 0, sizeof *la);
    la->rank = 4;
    la->shape[0] = nb;
    la->shape[1] = pl->groups;
    la->shape[2] = pl->gm;
    la->shape[3] = pl->gk;
    la->stride[0] = 0; /* every image uses the same weight */
    la->offset = w4.offset;
    if (!pl->transposed) {
        /* W [cout, cin_g, kh, kw] = [G, cout_g, K] */
        la->stride[1] = pl->gm * s0;
        la->stride[2] = s0;
        la->stride[3] = sk;
    } else {
        /* W [cin, cout_g, kh, kw] = [G, cin_g, kt]; A = its per-group transpose [kt, cin_g] */
        la->stride[1] = pl->gk * s0;
        la->stride[2] = sk;
        la->stride[3] = s0;
    }
    memset(lb, 0, sizeof *lb);
    lb->rank = 4;
    lb->shape[0] = nb;
    lb->shape[1] = pl->groups;
    lb->shape[2] = pl->gk;
    lb->shape[3] = pl->gn;
    if (!pl->transposed && !pl->x_direct) {
        /* the chunk's col buffer, contiguous */
        lb->stride[3] = 1;
        lb->stride[2] = pl->gn;
        lb->stride[1] = pl->gk * pl->gn;
        lb->stride[0] = pl->groups * pl->gk * pl->gn;
        return;
    }
    /* x [N, cin, h, w] = [N, G, cin_g, h*w] */
    wk_layout x4;
    wk__cuconv_as4d(lx_used, &x4);
    int64_t shw = 1;
    (void)wk__layout_merged_stride(&x4, 2, 4, &shw); /* the plan packed x (transposed) or did im2col (forward) when this fails */
    lb->stride[0] = x4.stride[0];
    lb->stride[1] = pl->cin_g * x4.stride[1];
    lb->stride[2] = x4.stride[1];
    lb->stride[3] = shw;
    lb->offset = x4.offset + b0 * x4.stride[0];
}
