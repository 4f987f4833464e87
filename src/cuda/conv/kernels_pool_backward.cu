/* CUDA kernels of the pooling / resampling backward entries (launchers in
 * kernels_pool.h): pool2d and upsample2d backward on NCHW, the CUDA side of
 * src/cpu/conv/cpu_pool_backward.c.
 *
 * Determinism: no float atomics. Each thread owns one input element and
 * gathers: it sums, in (oh, ow) order, the outputs whose windows hold it
 * (pooling) or that read it with the forward's weights (resampling),
 * instead of scattering. The window bounds, source indices and weights are
 * the forward's (pool_index.cuh, shared with kernels_pool.cu). Max pool's
 * gradient goes to the window's first maximum in row-major order (PyTorch's
 * rule: val > max || isnan(val)).
 *
 * Host emulation (WKC_HOST_EMULATION, tests/cuda/test_grad_emu.cu): the
 * launchers run the per-item code on the host. Checked: nvcc compile
 * (sm_80..90, warnings as errors); host emulation against f64 references. */
#include "cuda/common/rowview.cuh"
#include "cuda/conv/pool_index.cuh"
#include "cuda/conv/kernels_pool.h"

namespace {

struct PbGeo {
    int64_t n;                      /* input elements N*C*H*W */
    int64_t C, H, W, OH, OW;
    int64_t xsn, xsc, xsh, xsw, xoff; /* x (pool) */
    int64_t gsn, gsc, gsh, gsw, goff; /* g */
};
struct PbPos {
    int64_t ih, iw, xplane, gplane;
};
WKC_HD PbPos pb_pos(const PbGeo &g, int64_t i) {
    PbPos r;
    int64_t q = i / g.W;
    r.iw = i - q * g.W;
    int64_t q2 = q / g.H;
    r.ih = q - q2 * g.H;
    int64_t nn = q2 / g.C, c = q2 - nn * g.C;
    r.xplane = g.xoff + nn * g.xsn + c * g.xsc;
    r.gplane = g.goff + nn * g.gsn + c * g.gsc;
    return r;
}
/* outputs whose window holds input index x: [o0, o1) */
WKC_HD void pb_outs(int64_t x, int64_t s, int64_t p, int64_t k, int64_t out, int64_t *o0, int64_t *o1) {
    /* o * s - p <= x < o * s - p + k  <=>  (x + p - k) / s < o <= (x + p) / s */
    int64_t num = x + p - k + 1; /* o >= ceil(num / s) */
    int64_t lo = num <= 0 ? 0 : (num + s - 1) / s;
    int64_t hi = (x + p) / s + 1;
    *o0 = lo;
    *o1 = hi < out ? hi : out;
}

struct PbArgs {
    PbGeo g;
    wk_pool_params p;
    const void *x, *gr;
    void *dx;
};

template <int DT> struct PbMax {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const PbArgs &a, int64_t i) {
        typedef wkc_t<DT> T;
        const PbGeo &g = a.g;
        PbPos q = pb_pos(g, i);
        int64_t oh0, oh1, ow0, ow1;
        pb_outs(q.ih, a.p.s[0], a.p.p[0], a.p.k[0], g.OH, &oh0, &oh1);
        pb_outs(q.iw, a.p.s[1], a.p.p[1], a.p.k[1], g.OW, &ow0, &ow1);
        C acc = 0;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            int64_t h0, h1;
            pool_window(oh, a.p.s[0], a.p.p[0], a.p.k[0], g.H, &h0, &h1);
            for (int64_t ow = ow0; ow < ow1; ow++) {
                int64_t w0, w1;
                pool_window(ow, a.p.s[1], a.p.p[1], a.p.k[1], g.W, &w0, &w1);
                /* the window's first maximum in row-major order, PyTorch's
                 * rule (val > max || isnan(val): the last NaN) */
                int64_t bh = h0, bw = w0;
                C m = T::load(a.x, q.xplane + h0 * g.xsh + w0 * g.xsw);
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = (ih == h0 ? w0 + 1 : w0); iw < w1; iw++) {
                        C v = T::load(a.x, q.xplane + ih * g.xsh + iw * g.xsw);
                        if (v > m || pool_isnan(v)) {
                            m = v;
                            bh = ih;
                            bw = iw;
                        }
                    }
                if (bh == q.ih && bw == q.iw) acc += T::load(a.gr, q.gplane + oh * g.gsh + ow * g.gsw);
            }
        }
        T::store(a.dx, i, acc);
    }
};

template <int DT> struct PbAvg {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const PbArgs &a, int64_t i) {
        typedef wkc_t<DT> T;
        const PbGeo &g = a.g;
        PbPos q = pb_pos(g, i);
        int64_t oh0, oh1, ow0, ow1;
        pb_outs(q.ih, a.p.s[0], a.p.p[0], a.p.k[0], g.OH, &oh0, &oh1);
        pb_outs(q.iw, a.p.s[1], a.p.p[1], a.p.k[1], g.OW, &ow0, &ow1);
        C acc = 0;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            int64_t h0, h1;
            pool_window(oh, a.p.s[0], a.p.p[0], a.p.k[0], g.H, &h0, &h1);
            for (int64_t ow = ow0; ow < ow1; ow++) {
                int64_t w0, w1;
                pool_window(ow, a.p.s[1], a.p.p[1], a.p.k[1], g.W, &w0, &w1);
                const C div = a.p.count_include_pad ? (C)a.p.k[0] * (C)a.p.k[1] : (C)((h1 - h0) * (w1 - w0));
                acc += T::load(a.gr, q.gplane + oh * g.gsh + ow * g.gsw) / div;
            }
        }
        T::store(a.dx, i, acc);
    }
};

struct UbArgs {
    PbGeo g;
    float nscale_h, nscale_w;   /* nearest: (float)in / (float)out */
    double lscale_h, lscale_w;  /* bilinear: the forward's scale */
    int32_t align_corners;
    const void *gr;
    void *dx;
};

/* A conservative range [o0, o1) of the outputs that can read input x (the
 * exact test is made per output): out / in outputs per input, two of
 * margin each side for the rounding of the source positions and for the
 * bilinear neighbour; the edges take everything clamped onto them. */
WKC_HD void ub_range(int64_t x, int64_t in, int64_t out, int64_t *o0, int64_t *o1) {
    if (in == out) {
        *o0 = x;
        *o1 = x + 1;
        return;
    }
    double r = (double)out / (double)in;
    int64_t lo = (int64_t)floor((double)(x - 1) * r) - 2, hi = (int64_t)ceil((double)(x + 2) * r) + 2;
    if (x <= 1 || lo < 0) lo = 0;
    if (x >= in - 2 || hi > out) hi = out;
    *o0 = lo;
    *o1 = hi;
}

template <int DT> struct UbNearest {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const UbArgs &a, int64_t i) {
        typedef wkc_t<DT> T;
        const PbGeo &g = a.g;
        PbPos q = pb_pos(g, i);
        int64_t oh0, oh1, ow0, ow1;
        ub_range(q.ih, g.H, g.OH, &oh0, &oh1);
        ub_range(q.iw, g.W, g.OW, &ow0, &ow1);
        C acc = 0;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            if (pool_nearest_src(oh, g.H, g.OH, a.nscale_h) != q.ih) continue;
            for (int64_t ow = ow0; ow < ow1; ow++)
                if (pool_nearest_src(ow, g.W, g.OW, a.nscale_w) == q.iw)
                    acc += T::load(a.gr, q.gplane + oh * g.gsh + ow * g.gsw);
        }
        T::store(a.dx, i, acc);
    }
};

template <int DT> struct UbBilinear {
    typedef typename wkc_t<DT>::C C;
    /* the weight output o gives input x along one axis */
    static WKC_HD C weight(int64_t o, int64_t x, int64_t in, int64_t out, bool ac, double scale) {
        int64_t s0, s1;
        C w0, w1;
        pool_linear_src<C>(o, in, out, ac, scale, &s0, &s1, &w0, &w1);
        return (s0 == x ? w0 : (C)0) + (s1 == x ? w1 : (C)0);
    }
    static WKC_HD void item(const UbArgs &a, int64_t i) {
        typedef wkc_t<DT> T;
        const PbGeo &g = a.g;
        PbPos q = pb_pos(g, i);
        const bool ac = a.align_corners != 0;
        int64_t oh0, oh1, ow0, ow1;
        ub_range(q.ih, g.H, g.OH, &oh0, &oh1);
        ub_range(q.iw, g.W, g.OW, &ow0, &ow1);
        C acc = 0;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            C wh = weight(oh, q.ih, g.H, g.OH, ac, a.lscale_h);
            if (wh == (C)0) continue;
            C row = 0;
            for (int64_t ow = ow0; ow < ow1; ow++) {
                C ww = weight(ow, q.iw, g.W, g.OW, ac, a.lscale_w);
                if (ww != (C)0) row += ww * T::load(a.gr, q.gplane + oh * g.gsh + ow * g.gsw);
            }
            acc += wh * row;
        }
        T::store(a.dx, i, acc);
    }
};

/* NCHW geometry: inputs shape in (x / dx), outputs shape out (g). 1: work
 * to do, 0: nothing, -1: malformed. */
static int pb_geo(PbGeo *g, const wk_cu_view &in, const wk_cu_view &out) {
    memset(g, 0, sizeof *g);
    if (in.rank != 4 || out.rank != 4 || !view_ok(in) || !view_ok(out)) return -1;
    if (in.shape[0] != out.shape[0] || in.shape[1] != out.shape[1]) return -1;
    g->C = in.shape[1];
    g->H = in.shape[2];
    g->W = in.shape[3];
    g->OH = out.shape[2];
    g->OW = out.shape[3];
    g->n = view_numel(in);
    return g->n > 0 ? 1 : 0;
}

} // namespace

extern "C" int wk__cu_pool2d_backward(wk_cu_stream s, const void *x, wk_cu_view lx, const void *g, wk_cu_view lg,
                                      wk_dtype dt, const wk_pool_params *p, void *dx) {
    if (!p || compute_size(dt) == 0) return WKC_BAD_ARG;
    PbArgs a;
    memset(&a, 0, sizeof a);
    int st = pb_geo(&a.g, lx, lg);
    if (st < 0) return WKC_BAD_ARG;
    for (int d = 0; d < 2; d++)
        if (p->k[d] < 1 || p->s[d] < 1 || p->p[d] < 0 || p->p[d] >= p->k[d]) return WKC_BAD_ARG;
    if (st == 0) return 0;
    a.g.xsn = lx.stride[0];
    a.g.xsc = lx.stride[1];
    a.g.xsh = lx.stride[2];
    a.g.xsw = lx.stride[3];
    a.g.xoff = lx.offset;
    a.g.gsn = lg.stride[0];
    a.g.gsc = lg.stride[1];
    a.g.gsh = lg.stride[2];
    a.g.gsw = lg.stride[3];
    a.g.goff = lg.offset;
    a.p = *p;
    a.x = x;
    a.gr = g;
    a.dx = dx;
#define PBM_CALL(DT) return wkc_launch_items<PbMax<DT>>(s, a, a.g.n)
#define PBA_CALL(DT) return wkc_launch_items<PbAvg<DT>>(s, a, a.g.n)
    if (p->is_max) {
        WKC_FLOAT_DISPATCH(dt, PBM_CALL);
    }
    WKC_FLOAT_DISPATCH(dt, PBA_CALL);
#undef PBM_CALL
#undef PBA_CALL
}

extern "C" int wk__cu_upsample2d_backward(wk_cu_stream s, const void *g, wk_cu_view lg, void *dx, wk_cu_view ldx,
                                          wk_dtype dt, bool bilinear, bool align_corners) {
    if (compute_size(dt) == 0) return WKC_BAD_ARG;
    UbArgs a;
    memset(&a, 0, sizeof a);
    int st = pb_geo(&a.g, ldx, lg);
    if (st < 0) return WKC_BAD_ARG;
    if (st == 0) return 0;
    a.g.gsn = lg.stride[0];
    a.g.gsc = lg.stride[1];
    a.g.gsh = lg.stride[2];
    a.g.gsw = lg.stride[3];
    a.g.goff = lg.offset;
    a.gr = g;
    a.dx = dx;
    a.align_corners = align_corners;
    if (a.g.OH == 0 || a.g.OW == 0) {
        /* no outputs: every input's gradient is 0 (the sum over nothing) */
#define UBN_CALL(DT) return wkc_launch_items<UbNearest<DT>>(s, a, a.g.n)
        WKC_FLOAT_DISPATCH(dt, UBN_CALL);
    }
    if (!bilinear) {
        a.nscale_h = (float)a.g.H / (float)a.g.OH;
        a.nscale_w = (float)a.g.W / (float)a.g.OW;
        WKC_FLOAT_DISPATCH(dt, UBN_CALL);
    }
    if (dt == WK_F64) {
        a.lscale_h = pool_linear_scale<double>(a.g.H, a.g.OH, align_corners);
        a.lscale_w = pool_linear_scale<double>(a.g.W, a.g.OW, align_corners);
    } else {
        a.lscale_h = pool_linear_scale<float>(a.g.H, a.g.OH, align_corners);
        a.lscale_w = pool_linear_scale<float>(a.g.W, a.g.OW, align_corners);
    }
#define UBB_CALL(DT) return wkc_launch_items<UbBilinear<DT>>(s, a, a.g.n)
    WKC_FLOAT_DISPATCH(dt, UBB_CALL);
#undef UBN_CALL
#undef UBB_CALL
}
