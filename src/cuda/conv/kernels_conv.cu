/* CUDA convolution kernels (launchers declared in kernels_conv.h), the
 * non-GEMM halves of the convolutions of cuda_conv.c:
 *  - im2col (forward convs): one thread per column element, reading x
 *    through its view (any strides: permuted, narrowed, offset inputs need
 *    no contiguous copy) and copying the element's bits (zero for padding),
 *    so f16 / bf16 columns are exactly what the CPU's f32 im2col holds;
 *  - col2im (transposed convs) as a GATHER: one thread per output element
 *    walks the (ki, kj) taps that reach it, in increasing order, and sums
 *    the matching column entries from 0 - the CPU's col2im adds them in the
 *    same order, so given the same columns the result is bit-identical, and
 *    there are no atomics (deterministic, no float atomics at all). f16 /
 *    bf16 sum in f32 (columns are f32) and round once, as the CPU;
 *  - pack: a contiguous copy of a view, optionally widening f16 / bf16 to
 *    f32 (the transposed convs run their GEMM in f32 for narrow dtypes, as
 *    the CPU does, instead of rounding every column entry to f16).
 * Item indices are unravelled with 32-bit divisions when the launch has
 * fewer than 2^32 items (64-bit otherwise: a column buffer may be larger);
 * element offsets are always 64-bit.
 *
 * Host emulation (WKC_HOST_EMULATION): the launchers run the same per-item
 * code on the host over a fake grid of 7 threads; tests/cuda/
 * test_cuda_conv_emu.cu checks the whole conv (these kernels + matmul with
 * the planned layouts) against wk__cpu_conv*. Checked: compiled for sm_80
 * and sm_90, host emulation. */
#include "cuda/common/cuda_index.cuh"
#include "cuda/conv/kernels_conv.h"

namespace {

#define CV_THREADS 256

struct CvIm2col {
    wk_cu_conv_geo g;
    wk_cu_view x;
    const void *src;
    void *dst;
    int64_t n; /* column elements */
};

struct CvCol2im {
    wk_cu_conv_geo g;
    const void *src;
    void *dst;
    int64_t n; /* output elements */
};

struct CvPack {
    wkc_pack<2> pk; /* operand 0: dst (contiguous), 1: src */
    const void *src;
    void *dst;
};

/* Column element i of [n, cin, kh, kw, oh, ow]: the input element it copies,
 * or 0 where the tap falls into the padding. T: the element's bits. */
template <class T, class I> WKC_HD void im2col_item(const CvIm2col &p, int64_t i) {
    const wk_cu_conv_geo &g = p.g;
    I t = (I)i; /* I: uint32_t when the launch has < 2^32 items (cheap divisions), else uint64_t */
    const int64_t ox = (int64_t)(t % (I)g.ow);
    t /= (I)g.ow;
    const int64_t oy = (int64_t)(t % (I)g.oh);
    t /= (I)g.oh;
    const int64_t kj = (int64_t)(t % (I)g.kw);
    t /= (I)g.kw;
    const int64_t ki = (int64_t)(t % (I)g.kh);
    t /= (I)g.kh;
    const int64_t ch = (int64_t)(t % (I)g.cin), b = (int64_t)(t / (I)g.cin);
    const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
    T v = 0;
    if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
        v = ((const T *)p.src)[p.x.offset + b * p.x.stride[0] + ch * p.x.stride[1] + iy * p.x.stride[2] +
                               ix * p.x.stride[3]];
    ((T *)p.dst)[i] = v;
}

/* Output element i of [n, cout, oh, ow]: the sum over the taps (ki, kj)
 * with oy = iy*sh - ph + ki*dh and ox = ix*sw - pw + kj*dw for an input
 * position (iy, ix), in increasing (ki, kj) order, from 0. */
template <int DT, class I> WKC_HD void col2im_item(const CvCol2im &p, int64_t i) {
    typedef typename wkc_t<DT>::C C; /* f32 for f16 / bf16: the columns' dtype */
    const wk_cu_conv_geo &g = p.g;
    I t = (I)i; /* as in im2col_item */
    const int64_t ox = (int64_t)(t % (I)g.ow);
    t /= (I)g.ow;
    const int64_t oy = (int64_t)(t % (I)g.oh);
    t /= (I)g.oh;
    const int64_t co = (int64_t)(t % (I)g.cout), b = (int64_t)(t / (I)g.cout);
    const int64_t cout_g = g.cout / g.groups, gi = co / cout_g, cl = co % cout_g;
    const int64_t hw = g.h * g.w, kt = cout_g * g.kh * g.kw;
    const C *col = (const C *)p.src + ((b * g.groups + gi) * kt + cl * g.kh * g.kw) * hw;
    C acc = 0;
    for (int64_t ki = 0; ki < g.kh; ki++) {
        const int64_t ty = oy + g.ph - ki * g.dh;
        if (ty < 0) break; /* ty only decreases with ki */
        const int64_t iy = ty / g.sh;
        if (iy * g.sh != ty || iy >= g.h) continue;
        for (int64_t kj = 0; kj < g.kw; kj++) {
            const int64_t tx = ox + g.pw - kj * g.dw;
            if (tx < 0) break;
            const int64_t ix = tx / g.sw;
            if (ix * g.sw != tx || ix >= g.w) continue;
            acc += col[(ki * g.kw + kj) * hw + iy * g.w + ix];
        }
    }
    wkc_t<DT>::store(p.dst, i, acc);
}

/* Element i of the packed copy: widened (SDT -> DDT) or copied. */
template <int SDT, int DDT> WKC_HD void pack_item(const CvPack &p, int64_t i) {
    int64_t off[2];
    wkc_offsets(p.pk, i, off);
    if constexpr (SDT == DDT) { /* the bits as they are (NaN payloads included) */
        typedef typename wkc_t<SDT>::S S;
        ((S *)p.dst)[off[0]] = ((const S *)p.src)[off[1]];
    } else {
        typename wkc_t<SDT>::C v = wkc_t<SDT>::load(p.src, off[1]);
        wkc_t<DDT>::store(p.dst, off[0], (typename wkc_t<DDT>::C)v);
    }
}

template <class T, class I>
__global__ void __launch_bounds__(CV_THREADS) im2col_kernel(const __grid_constant__ CvIm2col p) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += step) im2col_item<T, I>(p, i);
}
template <int DT, class I>
__global__ void __launch_bounds__(CV_THREADS) col2im_kernel(const __grid_constant__ CvCol2im p) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += step) col2im_item<DT, I>(p, i);
}
template <int SDT, int DDT> __global__ void __launch_bounds__(CV_THREADS) pack_kernel(const __grid_constant__ CvPack p) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.pk.n; i += step) pack_item<SDT, DDT>(p, i);
}

/* Queue kernel k over n items with argument p (or, in host emulation, run
 * item(p, i) over a fake grid of 7 threads, grid-stride order). */
template <class P> static int cv_launch(wk_cu_stream s, void (*k)(const P), void (*item)(const P &, int64_t),
                                        const P &p, int64_t n) {
    if (n <= 0) return 0;
#ifdef WKC_HOST_EMULATION
    (void)s;
    (void)k;
    const int64_t step = 7;
    for (int64_t t = 0; t < step; t++)
        for (int64_t i = t; i < n; i += step) item(p, i);
    return 0;
#else
    (void)item;
    int64_t blocks = (n + CV_THREADS - 1) / CV_THREADS;
    if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
    P copy = p;
    void *args[] = {&copy};
    return (int)cudaLaunchKernel((const void *)k, dim3((unsigned)blocks), dim3(CV_THREADS), args, 0, (cudaStream_t)s);
#endif
}

static bool conv_dtype(int dt) { return dt == WK_F32 || dt == WK_F64 || dt == WK_F16 || dt == WK_BF16; }

static bool geo_ok(const wk_cu_conv_geo &g) {
    return g.n >= 0 && g.cin >= 0 && g.h >= 0 && g.w >= 0 && g.cout >= 0 && g.kh >= 1 && g.kw >= 1 && g.oh >= 0 &&
           g.ow >= 0 && g.sh >= 1 && g.sw >= 1 && g.dh >= 1 && g.dw >= 1 && g.ph >= 0 && g.pw >= 0 && g.groups >= 1 &&
           g.cin % g.groups == 0 && g.cout % g.groups == 0;
}

/* 32-bit index arithmetic when every item index fits (the usual case) */
template <class T> static int im2col_run(wk_cu_stream s, const CvIm2col &p) {
    if (p.n <= (int64_t)UINT32_MAX)
        return cv_launch<CvIm2col>(s, im2col_kernel<T, uint32_t>, im2col_item<T, uint32_t>, p, p.n);
    return cv_launch<CvIm2col>(s, im2col_kernel<T, uint64_t>, im2col_item<T, uint64_t>, p, p.n);
}
template <int DT> static int col2im_run(wk_cu_stream s, const CvCol2im &p) {
    if (p.n <= (int64_t)UINT32_MAX)
        return cv_launch<CvCol2im>(s, col2im_kernel<DT, uint32_t>, col2im_item<DT, uint32_t>, p, p.n);
    return cv_launch<CvCol2im>(s, col2im_kernel<DT, uint64_t>, col2im_item<DT, uint64_t>, p, p.n);
}
template <int SDT, int DDT> static int pack_run(wk_cu_stream s, const CvPack &p) {
    return cv_launch<CvPack>(s, pack_kernel<SDT, DDT>, pack_item<SDT, DDT>, p, p.pk.n);
}

} // namespace

extern "C" int wk__cu_conv_im2col(wk_cu_stream s, const void *x, wk_cu_view lx, void *col, wk_dtype dt,
                                  wk_cu_conv_geo g) {
    if (!geo_ok(g) || lx.rank != 4 || !conv_dtype(dt)) return WKC_BAD_ARG;
    CvIm2col p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.x = lx;
    p.src = x;
    p.dst = col;
    p.n = g.n * g.cin * g.kh * g.kw * g.oh * g.ow;
    if (p.n == 0) return 0;
    switch (dt) {
    case WK_F16:
    case WK_BF16: return im2col_run<uint16_t>(s, p);
    case WK_F32: return im2col_run<uint32_t>(s, p);
    case WK_F64: return im2col_run<unsigned long long>(s, p);
    default: return WKC_BAD_ARG;
    }
}

extern "C" int wk__cu_conv_col2im(wk_cu_stream s, const void *cols, void *dst, wk_dtype dt, wk_cu_conv_geo g) {
    if (!geo_ok(g) || !conv_dtype(dt)) return WKC_BAD_ARG;
    CvCol2im p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.src = cols;
    p.dst = dst;
    p.n = g.n * g.cout * g.oh * g.ow;
    if (p.n == 0) return 0;
    switch (dt) {
    case WK_F16: return col2im_run<WK_F16>(s, p);
    case WK_BF16: return col2im_run<WK_BF16>(s, p);
    case WK_F32: return col2im_run<WK_F32>(s, p);
    case WK_F64: return col2im_run<WK_F64>(s, p);
    default: return WKC_BAD_ARG;
    }
}

extern "C" int wk__cu_conv_pack(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype sdt, void *dst,
                                wk_dtype ddt) {
    const bool narrow = sdt == WK_F16 || sdt == WK_BF16;
    if (!conv_dtype(sdt) || !(ddt == sdt || (narrow && ddt == WK_F32))) return WKC_BAD_ARG;
    CvPack p;
    memset(&p, 0, sizeof p);
    wk_cu_view ld = wkc_contig_view(&ls);
    const wk_cu_view *v[2] = {&ld, &ls};
    int64_t n = wkc_pack_views<2>(&p.pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    p.src = src;
    p.dst = dst;
    if (sdt == ddt) {
        switch (sdt) {
        case WK_F16: return pack_run<WK_F16, WK_F16>(s, p);
        case WK_BF16: return pack_run<WK_BF16, WK_BF16>(s, p);
        case WK_F32: return pack_run<WK_F32, WK_F32>(s, p);
        case WK_F64: return pack_run<WK_F64, WK_F64>(s, p);
        default: return WKC_BAD_ARG;
        }
    }
    if (ddt != WK_F32) return WKC_BAD_ARG;
    switch (sdt) {
    case WK_F16: return pack_run<WK_F16, WK_F32>(s, p);
    case WK_BF16: return pack_run<WK_BF16, WK_F32>(s, p);
    default: return WKC_BAD_ARG;
    }
}
