/* How the CUDA backend's convolutions map onto the backend's own matmul
 * entry: pure layout arithmetic in plain C, so tests/cuda/
 * test_cuda_conv_emu.cu checks it without a GPU (it runs the conv kernels in
 * host emulation and wk__cpu_matmul with exactly the layouts planned here,
 * then compares with wk__cpu_conv*).
 *
 * Forward (conv1d / conv2d; 1-d convs are 2-d convs with H = 1, as on the
 * CPU): im2col writes col = [nb, G, K, P] (K = cin_g*kh*kw, P = oh*ow) in
 * the data dtype, then ONE matmul
 *     A = W viewed [nb, G, cout_g, K] (batch stride 0 over the images)
 *     B = col [nb, G, K, P]
 * whose contiguous result [nb, G, cout_g, P] IS the NCHW output of the
 * chunk's nb images. A 1x1, stride-1, unpadded conv skips im2col: x itself,
 * viewed [nb, G, cin_g, H*W], is B.
 * Transposed: ONE matmul
 *     A = W^T viewed [nb, G, kt, cin_g] (kt = cout_g*kh*kw; W is
 *         [cin, cout_g, kh, kw], batch stride 0 over the images)
 *     B = x viewed [nb, G, cin_g, H*W]
 * into cols [nb, G, kt, H*W] (compute dtype: f32 for f16/bf16, as the CPU's
 * f32 GEMM + f32 col2im; the data dtype otherwise), then the col2im gather
 * kernel sums each output in a fixed order into dst.
 *
 * Views that cannot be expressed (weight dims that do not merge, x whose
 * H and W do not merge, any operand of a narrow transposed conv that must
 * become f32) are packed first into contiguous buffers by the pack kernel:
 * the plan says which and how big. Temporaries per chunk stay under
 * col_limit bytes by processing the batch in chunks of `chunk` images (at
 * least one image per chunk, whatever its size). */
#ifndef WICK_CUDA_CONV_PLAN_H
#define WICK_CUDA_CONV_PLAN_H
#include "tensor/layout.h"

#define WK_CUCONV_COL_LIMIT ((size_t)256 << 20) /* default bytes of temporaries per chunk */

typedef struct wk_cuconv_plan {
    bool transposed;
    wk_dtype dt;  /* data dtype (x, w, dst) */
    wk_dtype ct;  /* GEMM dtype: dt, or f32 for a narrow transposed conv */
    int64_t n, cin, h, w;                  /* input (h = 1 for 1-d) */
    int64_t cout, kh, kw, oh, ow;          /* output channels, kernel, output */
    int64_t sh, sw, ph, pw, dh, dw;        /* 1-d: sh = dh = 1, ph = 0 */
    int64_t groups, cin_g, cout_g;
    int64_t gm, gn, gk;                    /* per (image, group) GEMM: m x k times k x n */
    bool x_direct;   /* forward 1x1 / stride 1 / unpadded with mergeable H, W: no im2col */
    bool w_pack;     /* weight packed first: contiguous, dtype ct */
    bool x_pack;     /* transposed: x packed first per chunk: contiguous [nb, cin, h, w], dtype ct */
    int64_t chunk;   /* images per chunk (>= 1; n when everything fits) */
    int64_t gemm_imgs;   /* images per matmul call: the chunk with one group; 1 with groups, so each
                          * call is one strided batch over the groups (a [nb, G] batch whose weight
                          * has batch stride 0 over nb has no single batch stride: the matmul entry
                          * would loop nb * G separate GEMMs) */
    int64_t col_img;     /* elements of one image in the col buffer: forward G*gk*gn, transposed G*gm*gn */
    size_t col_bytes;    /* per chunk: im2col buffer (forward, not x_direct) or cols (transposed) */
    size_t xpack_bytes;  /* per chunk (x_pack) */
    size_t wpack_bytes;  /* once (w_pack) */
} wk_cuconv_plan;

/* Plan a conv for the dispatcher's layouts (x: lx, weight: lw, dst: ld,
 * rank 3 or 4) and normalized parameters. col_limit: bytes of per-chunk
 * temporaries (WK_CUCONV_COL_LIMIT in the backend; tests force tiny values
 * to exercise chunking). */
void wk__cuconv_plan(wk_cuconv_plan *pl, const wk_layout *lx, const wk_layout *lw, const wk_layout *ld, wk_dtype dt,
                     const wk_conv_params *p, bool transposed, size_t col_limit);

/* The 4-d [N, C, H, W] view of a conv operand's layout (rank 3: H = 1,
 * stride 0 on it). */
void wk__cuconv_as4d(const wk_layout *l, wk_layout *out);

/* The contiguous layout of the packed weight (lw's shape as 4-d, offset 0). */
void wk__cuconv_wpack_layout(const wk_cuconv_plan *pl, const wk_layout *lw, wk_layout *out);

/* The matmul operands for the chunk of nb images starting at image b0:
 *  la: the weight (lw_used = lw itself, or the packed weight's layout when
 *      w_pack; the batch stride over images is 0);
 *  lb: forward: the col buffer (offset 0), or x itself when x_direct;
 *      transposed: x (lx_used = lx itself with image b0 of it, or, when
 *      x_pack, the packed chunk: pass the wk__cuconv_xpack_layout of the
 *      chunk and b0 = 0).
 * The result of matmul(la, lb) is contiguous [nb, G, gm, gn]: forward, the
 * dst of images [b0, b0 + nb) (write it at element b0 * cout * oh * ow of
 * dst); transposed, the cols for col2im.
 * Calls cover gemm_imgs images at a time: image j of a chunk reads the col
 * buffer from element j * col_img (forward: add it to lb's offset) and
 * writes the cols from element j * col_img (transposed). */
void wk__cuconv_gemm_layouts(const wk_cuconv_plan *pl, const wk_layout *lw_used, const wk_layout *lx_used, int64_t b0,
                             int64_t nb, wk_layout *la, wk_layout *lb);

/* Contiguous 4-d [nb, cin, h, w] (offset 0): the packed x of a chunk. */
void wk__cuconv_xpack_layout(const wk_cuconv_plan *pl, int64_t nb, wk_layout *out);

/* x's 4-d view narrowed to images [b0, b0 + nb) (what im2col / the x pack read). */
void wk__cuconv_x_chunk(const wk_cuconv_plan *pl, const wk_layout *lx, int64_t b0, int64_t nb, wk_layout *out);

#endif
