/* CUDA pooling and resampling kernels (launchers declared in
 * kernels_pool.h): max / avg pool2d and nearest / bilinear upsample2d on
 * NCHW, the CUDA side of src/cpu/conv/cpu_pool.c.
 *
 * Design: one thread per output element, grid-stride loop over the
 * contiguous output (flat index unravelled into n, c, oh, ow; 32-bit
 * divisions when the output has fewer than 2^32 elements). x is read
 * through its own strides and offset, which travel by value in the one
 * __grid_constant__ kernel argument with the pooling parameters / scales:
 * no layout or index table is uploaded, no contiguous copy is made, no
 * temporary buffer is needed. Each thread recomputes its window bounds or
 * source indices and weights (a few integer / double operations) instead of
 * reading them from per-row tables: cheaper than a second kernel and an
 * allocation for the sizes these ops see. One kernel per dtype for max
 * pool (10), avg pool (5) and bilinear (5); nearest is a copy, so one per
 * element size (4).
 *
 * Semantics mirror cpu_pool.c operation by operation so that results are
 * bit-identical to the CPU backend:
 *  - windows [lo, hi) clipped to the image as its WINDOW macro;
 *  - max: each window column's max over the rows first, then the max over
 *    the columns (the CPU's order, which decides which of +0 / -0 or which
 *    NaN survives); a NaN anywhere in the window gives NaN ((v > m) || v
 *    is NaN takes v); integers compare exactly;
 *  - avg: sum in f32 (f64 for f64; bf16/f16/f8e4m3 widened to f32) over the
 *    window rows in order, divided by kh*kw (count_include_pad) or by the
 *    number of in-image cells, rounded once on store;
 *  - nearest: src = min(floor(dst * (float)in/out), in - 1) in f32, with the
 *    CPU's exact-copy cases out == in and out == 2*in;
 *  - bilinear: scale in f32 (f64 for f64) computed on the host as the CPU
 *    does, source position and fraction in double, weights rounded to f32
 *    (f64), blend lh0 * (lw0 * x00 + lw1 * x01) + lh1 * (lw0 * x10 + lw1 *
 *    x11) in f32 (f64). Every product and sum is rounded separately
 *    (__fmul_rn / __fadd_rn etc.): nvcc would otherwise contract a*b + c
 *    into an FMA, and the CPU (built without -mfma, ISO C) never does.
 * Deliberate difference: none in values. Only NaN bits can differ on a real
 * GPU where arithmetic makes a NaN (avg / bilinear): the GPU's canonical
 * NaN instead of x86's propagated payload; max pool only moves values, so
 * its NaN bits match too.
 *
 * Host emulation (WKC_HOST_EMULATION): the launchers run the same per-item
 * code on the host over a fake grid of 7 threads (grid-stride loop and
 * tails included). Checked: nvcc compile (sm_80/86/89/90 + compute_90 PTX,
 * gcc host, -Wall -Wextra -Wshadow, warnings as errors); the PTX has no
 * fma (products and sums are mul.rn / add.rn); host emulation against
 * wk__cpu_pool2d / wk__cpu_upsample2d (tests/cuda/test_cuda_pool_emu.cu),
 * every dtype, bit-exact, also under ASan/UBSan; the test was shown to catch
 * deliberate bugs (max order, NaN rule, window clipping, avg divisor,
 * nearest in double, bilinear scale / weight precision, an FMA). */
#include "cuda/conv/pool_index.cuh"
#include "cuda/conv/kernels_pool.h"

namespace {

/* ------------------------------------------------- rounding, geometry */

/* The geometry every kernel shares: x's NCHW view, dst's plane sizes. */
struct PkGeo {
    const void *x;
    void *y;
    int64_t n;                        /* output elements (N*C*OH*OW) */
    int64_t C, H, W, OH, OW;
    int64_t xsn, xsc, xsh, xsw, xoff; /* x's strides and offset (elements) */
    int32_t small;                    /* n < 2^32: 32-bit unravel */
};

/* Output element i: its row / column and the offset of its input plane. */
struct PkPos {
    int64_t oh, ow, plane;
};

WKC_HD PkPos pk_pos(const PkGeo &g, int64_t i) {
    PkPos r;
    int64_t nn, c;
    if (g.small) {
        uint32_t u = (uint32_t)i, ow = (uint32_t)g.OW, oh = (uint32_t)g.OH, cc = (uint32_t)g.C;
        uint32_t q = u / ow;
        r.ow = u - q * ow;
        uint32_t q2 = q / oh;
        r.oh = q - q2 * oh;
        nn = q2 / cc;
        c = q2 - (uint32_t)nn * cc;
    } else {
        int64_t q = i / g.OW;
        r.ow = i - q * g.OW;
        int64_t q2 = q / g.OH;
        r.oh = q - q2 * g.OH;
        nn = q2 / g.C;
        c = q2 - nn * g.C;
    }
    r.plane = g.xoff + nn * g.xsn + c * g.xsc;
    return r;
}

/* ------------------------------------------------------------ pooling */

struct PkPoolArgs {
    PkGeo g;
    wk_pool_params p;
};

/* m or v, whichever the CPU's vmax keeps: v when greater or NaN */
template <class C> WKC_HD C pk_vmax(C m, C v) { return (v > m || pool_isnan(v)) ? v : m; }

template <int DT> struct PkMax {
    typedef PkPoolArgs Args;
    static WKC_HD void item(const Args &a, int64_t i) {
        typedef wkc_t<DT> T;
        typedef typename T::C C;
        const PkGeo &g = a.g;
        PkPos q = pk_pos(g, i);
        int64_t h0, h1, w0, w1;
        pool_window(q.oh, a.p.s[0], a.p.p[0], a.p.k[0], g.H, &h0, &h1);
        pool_window(q.ow, a.p.s[1], a.p.p[1], a.p.k[1], g.W, &w0, &w1);
        /* the launcher guarantees h0 < h1 and w0 < w1 */
        const int64_t r0 = q.plane + h0 * g.xsh;
        C m = 0;
        for (int64_t iw = w0; iw < w1; iw++) {
            const int64_t col = r0 + iw * g.xsw;
            C cm = T::load(g.x, col);
            for (int64_t ih = 1; ih < h1 - h0; ih++) cm = pk_vmax(cm, T::load(g.x, col + ih * g.xsh));
            m = iw == w0 ? cm : pk_vmax(m, cm);
        }
        T::store(g.y, i, m);
    }
};

template <int DT> struct PkAvg {
    typedef PkPoolArgs Args;
    static WKC_HD void item(const Args &a, int64_t i) {
        typedef wkc_t<DT> T;
        typedef typename T::C C;
        const PkGeo &g = a.g;
        PkPos q = pk_pos(g, i);
        int64_t h0, h1, w0, w1;
        pool_window(q.oh, a.p.s[0], a.p.p[0], a.p.k[0], g.H, &h0, &h1);
        pool_window(q.ow, a.p.s[1], a.p.p[1], a.p.k[1], g.W, &w0, &w1);
        C sum = 0;
        for (int64_t ih = h0; ih < h1; ih++) {
            const int64_t row = q.plane + ih * g.xsh;
            for (int64_t iw = w0; iw < w1; iw++) sum = wkc_add_rn(sum, T::load(g.x, row + iw * g.xsw));
        }
        const C div = a.p.count_include_pad ? wkc_mul_rn((C)a.p.k[0], (C)a.p.k[1]) : (C)((h1 - h0) * (w1 - w0));
        T::store(g.y, i, sum / div);
    }
};

/* --------------------------------------------------------- resampling */

struct PkNearestArgs {
    PkGeo g;
    float scale_h, scale_w; /* (float)in / (float)out, computed on the host as the CPU does */
};

/* a copy: S is any type of the dtype's size */
template <class S> struct PkNearest {
    typedef PkNearestArgs Args;
    static WKC_HD void item(const Args &a, int64_t i) {
        const PkGeo &g = a.g;
        PkPos q = pk_pos(g, i);
        const int64_t ih = pool_nearest_src(q.oh, g.H, g.OH, a.scale_h);
        const int64_t iw = pool_nearest_src(q.ow, g.W, g.OW, a.scale_w);
        ((S *)g.y)[i] = ((const S *)g.x)[q.plane + ih * g.xsh + iw * g.xsw];
    }
};

struct PkBilinearArgs {
    PkGeo g;
    double scale_h, scale_w; /* in the accumulator type, widened (the CPU's `scale`) */
    int32_t align_corners;
};

template <int DT> struct PkBilinear {
    typedef PkBilinearArgs Args;
    static WKC_HD void item(const Args &a, int64_t i) {
        typedef wkc_t<DT> T;
        typedef typename T::C AT;
        const PkGeo &g = a.g;
        PkPos q = pk_pos(g, i);
        int64_t h0, h1, w0, w1;
        AT lh0, lh1, lw0, lw1;
        pool_linear_src<AT>(q.oh, g.H, g.OH, a.align_corners != 0, a.scale_h, &h0, &h1, &lh0, &lh1);
        pool_linear_src<AT>(q.ow, g.W, g.OW, a.align_corners != 0, a.scale_w, &w0, &w1, &lw0, &lw1);
        const int64_t r0 = q.plane + h0 * g.xsh, r1 = q.plane + h1 * g.xsh;
        const int64_t c0 = w0 * g.xsw, c1 = w1 * g.xsw;
        const AT x00 = T::load(g.x, r0 + c0), x01 = T::load(g.x, r0 + c1);
        const AT x10 = T::load(g.x, r1 + c0), x11 = T::load(g.x, r1 + c1);
        const AT t0 = wkc_add_rn(wkc_mul_rn(lw0, x00), wkc_mul_rn(lw1, x01));
        const AT t1 = wkc_add_rn(wkc_mul_rn(lw0, x10), wkc_mul_rn(lw1, x11));
        T::store(g.y, i, wkc_add_rn(wkc_mul_rn(lh0, t0), wkc_mul_rn(lh1, t1)));
    }
};

/* ------------------------------------------------------------- launch */

#define PK_THREADS 256

/* Queue Op over the p.g.n output elements (one item each); the launch's own
 * error. */
template <class Op> static int pk_launch(wk_cu_stream s, const typename Op::Args &p) {
    return wkc_launch_items<Op, PK_THREADS>(s, p, p.g.n);
}

/* Geometry of x (NCHW, any strides) and the contiguous dst of ld's shape.
 * 1: ok with work to do; 0: empty output; -1: the views do not fit. */
static int pk_geo(PkGeo *g, const void *x, const wk_cu_view &lx, void *dst, const wk_cu_view &ld) {
    memset(g, 0, sizeof *g);
    if (lx.rank != 4 || ld.rank != 4) return -1;
    for (int d = 0; d < 4; d++)
        if (lx.shape[d] < 0 || ld.shape[d] < 0) return -1;
    if (lx.shape[0] != ld.shape[0] || lx.shape[1] != ld.shape[1]) return -1;
    g->x = x;
    g->y = dst;
    g->C = lx.shape[1];
    g->H = lx.shape[2];
    g->W = lx.shape[3];
    g->OH = ld.shape[2];
    g->OW = ld.shape[3];
    g->xsn = lx.stride[0];
    g->xsc = lx.stride[1];
    g->xsh = lx.stride[2];
    g->xsw = lx.stride[3];
    g->xoff = lx.offset;
    int64_t n = 1;
    for (int d = 0; d < 4; d++) {
        if (ld.shape[d] == 0) return 0;
        if (n > INT64_MAX / ld.shape[d]) return -1;
        n *= ld.shape[d];
    }
    if (g->H < 1 || g->W < 1) return -1; /* something to read for every output */
    g->n = n;
    g->small = n <= (int64_t)UINT32_MAX;
    return 1;
}

/* Every window of `out` outputs over an input of `in` is non-empty and
 * in bounds (true for what ops/pool.c validates: p <= k/2, floor mode). */
static bool pk_windows_ok(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p) {
    if (k < 1 || s < 1 || p < 0 || p >= k || p > INT64_MAX - in) return false;
    return out - 1 <= (in - 1 + p) / s; /* the last window starts inside */
}

template <template <int> class Op> static int pk_pool_dt(wk_cu_stream s, const PkPoolArgs &a, wk_dtype dt) {
    switch (dt) {
    case WK_F32: return pk_launch<Op<WK_F32>>(s, a);
    case WK_F64: return pk_launch<Op<WK_F64>>(s, a);
    case WK_BF16: return pk_launch<Op<WK_BF16>>(s, a);
    case WK_F16: return pk_launch<Op<WK_F16>>(s, a);
    case WK_F8E4M3: return pk_launch<Op<WK_F8E4M3>>(s, a);
    default: return WKC_BAD_ARG;
    }
}

static int pk_max_int(wk_cu_stream s, const PkPoolArgs &a, wk_dtype dt) {
    switch (dt) {
    case WK_U8: return pk_launch<PkMax<WK_U8>>(s, a);
    case WK_U32: return pk_launch<PkMax<WK_U32>>(s, a);
    case WK_I16: return pk_launch<PkMax<WK_I16>>(s, a);
    case WK_I32: return pk_launch<PkMax<WK_I32>>(s, a);
    case WK_I64: return pk_launch<PkMax<WK_I64>>(s, a);
    default: return pk_pool_dt<PkMax>(s, a, dt);
    }
}

} // namespace

extern "C" int wk__cu_pool2d(wk_cu_stream s, const void *x, wk_cu_view lx, void *dst, wk_cu_view ld, wk_dtype dt,
                             const wk_pool_params *p) {
    if (!p) return WKC_BAD_ARG;
    if (!p->is_max && !(dt == WK_F32 || dt == WK_F64 || dt == WK_BF16 || dt == WK_F16 || dt == WK_F8E4M3))
        return WKC_BAD_ARG;
    if (wkc_size(dt) == 0) return WKC_BAD_ARG;
    PkPoolArgs a;
    memset(&a, 0, sizeof a);
    int st = pk_geo(&a.g, x, lx, dst, ld);
    if (st <= 0) return st < 0 ? WKC_BAD_ARG : 0;
    a.p = *p;
    if (!pk_windows_ok(a.g.H, a.g.OH, p->k[0], p->s[0], p->p[0]) ||
        !pk_windows_ok(a.g.W, a.g.OW, p->k[1], p->s[1], p->p[1]))
        return WKC_BAD_ARG;
    return p->is_max ? pk_max_int(s, a, dt) : pk_pool_dt<PkAvg>(s, a, dt);
}

extern "C" int wk__cu_upsample2d(wk_cu_stream s, const void *x, wk_cu_view lx, void *dst, wk_cu_view ld, wk_dtype dt,
                                 bool bilinear, bool align_corners) {
    PkGeo g;
    int st = pk_geo(&g, x, lx, dst, ld);
    if (bilinear && !(dt == WK_F32 || dt == WK_F64 || dt == WK_BF16 || dt == WK_F16 || dt == WK_F8E4M3))
        return WKC_BAD_ARG;
    if (wkc_size(dt) == 0 || st < 0) return WKC_BAD_ARG;
    if (st == 0) return 0;
    if (!bilinear) {
        PkNearestArgs a;
        memset(&a, 0, sizeof a);
        a.g = g;
        a.scale_h = (float)g.H / (float)g.OH;
        a.scale_w = (float)g.W / (float)g.OW;
        switch (wkc_size(dt)) {
        case 1: return pk_launch<PkNearest<uint8_t>>(s, a);
        case 2: return pk_launch<PkNearest<uint16_t>>(s, a);
        case 4: return pk_launch<PkNearest<uint32_t>>(s, a);
        default: return pk_launch<PkNearest<unsigned long long>>(s, a);
        }
    }
    PkBilinearArgs a;
    memset(&a, 0, sizeof a);
    a.g = g;
    a.align_corners = align_corners;
    if (dt == WK_F64) {
        a.scale_h = pool_linear_scale<double>(g.H, g.OH, align_corners);
        a.scale_w = pool_linear_scale<double>(g.W, g.OW, align_corners);
    } else {
        a.scale_h = pool_linear_scale<float>(g.H, g.OH, align_corners);
        a.scale_w = pool_linear_scale<float>(g.W, g.OW, align_corners);
    }
    switch (dt) {
    case WK_F32: return pk_launch<PkBilinear<WK_F32>>(s, a);
    case WK_F64: return pk_launch<PkBilinear<WK_F64>>(s, a);
    case WK_BF16: return pk_launch<PkBilinear<WK_BF16>>(s, a);
    case WK_F16: return pk_launch<PkBilinear<WK_F16>>(s, a);
    default: return pk_launch<PkBilinear<WK_F8E4M3>>(s, a);
    }
}
