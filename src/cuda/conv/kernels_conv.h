/* The C ABI of the convolution kernels (kernels_conv.cu), called by
 * cuda_conv.c. Same conventions as cuda_kernels.h: views by value (no
 * layout upload), work queued on `s`, 0 or the launch's cudaError_t as int,
 * nothing queued for 0 elements. Deterministic: one thread per output
 * element, no atomics. */
#ifndef WICK_CUDA_KERNELS_CONV_H
#define WICK_CUDA_KERNELS_CONV_H
#include "cuda/cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Geometry of one launch (2-d; 1-d convs have h = kh = oh = 1, sh = dh = 1,
 * ph = 0). n = images of this launch (a chunk of the batch). */
typedef struct wk_cu_conv_geo {
    int64_t n, cin, h, w;
    int64_t cout, kh, kw, oh, ow;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t groups;
} wk_cu_conv_geo;

/* im2col: col = contiguous [n, cin, kh, kw, oh*ow] (= [n, G, cin_g*kh*kw,
 * oh*ow]) in dtype dt from x, a 4-d view [n, cin, h, w] with any strides;
 * padded positions are 0. dt: f32, f64, f16, bf16 (bits copied). */
int wk__cu_conv_im2col(wk_cu_stream s, const void *x, wk_cu_view lx, void *col, wk_dtype dt, wk_cu_conv_geo g);

/* col2im gather for the transposed convs: cols = contiguous [n, G,
 * cout_g*kh*kw, h*w] in the compute dtype (f32 for dt f16 / bf16, else dt);
 * dst = contiguous [n, cout, oh, ow] in dt. Each output sums its
 * contributions in (ki, kj) order from 0 (the CPU's order), in f32 for
 * f16 / bf16 (one rounding at the end), natively for f32 / f64. */
int wk__cu_conv_col2im(wk_cu_stream s, const void *cols, void *dst, wk_dtype dt, wk_cu_conv_geo g);

/* dst = contiguous copy of the view (src, ls) in dtype ddt, where ddt == sdt
 * or (sdt f16 / bf16 and ddt f32, exact widening). */
int wk__cu_conv_pack(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype sdt, void *dst, wk_dtype ddt);

#ifdef __cplusplus
}
#endif
#endif
