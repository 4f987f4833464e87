/* CUDA kernels of the fused nn entries (launchers in kernels_nn.h):
 * softmax / log_softmax along any dim, rms_norm, layer_norm, rope (both
 * pair layouts, both tensor layouts), swiglu and tiled attention.
 *
 * Row ops (softmax, the norms; launcher in common/rowview.cuh): one warp
 * per row, 4 warps per block,
 * grid-stride over rows. Lane l folds elements l, l + 32, ... into a state;
 * the 32 states meet in shared memory and every lane folds them in lane
 * order (so all lanes hold the same total, and the order depends only on
 * the shape), then each lane writes its elements. Softmax's state is an
 * online (max, sum of exp(x - max)): one read to reduce, one to write.
 * layer_norm takes two reduction passes (mean, then the centred squares),
 * as the composite does, rather than E[x^2] - mean^2.
 *
 * Attention: one warp per unit = (query row, key split, chunk of 256 output
 * dims). The query row is staged in shared memory (D <= 256; longer rows
 * are read from global memory); keys run in tiles of 32, lane j scoring key
 * t0 + j (q . k * scale + mask, -inf where causal hides it or past the
 * range); each lane then finds the tile max over the 32 scores, rescales its
 * running sum and its accumulators (output dims lane, lane + 32, ...) by
 * exp(m_old - m_new) and adds p_j v_j over the tile. Causal rows stop at
 * key i + q_offset (tiles past it are never read); with a window, rows
 * start at key i + q_offset - window + 1 (nothing before it is read, and
 * the splits divide only that span). Soft-capping maps q . k * scale
 * through softcap * tanh(s / softcap) before the mask. Decode (few rows, many
 * keys) splits each row's keys over several warps (flash-decoding): each
 * writes (max, sum, partial output) to a workspace and a second kernel
 * merges the splits in order. GQA: the kv head of query head h is
 * h / group, through the strides (k / v are never expanded). Any strides on
 * q, k, v and the mask (0 strides of a broadcast mask included).
 *
 * Host emulation (WKC_HOST_EMULATION, tests/cuda/test_cuda_nn_emu.cu): the
 * per-lane steps are __host__ __device__ functions; the launchers run them
 * lane by lane on the host in the kernels' order, with arrays standing in
 * for shared memory. Only the shared-memory plumbing and __syncwarp
 * barriers are device-only. Not yet: tensor cores (mma) for prefill, K / V
 * tiles shared between the warps of a block, vector loads.
 *
 * Checked: nvcc compile (sm_80..90, warnings as errors); host emulation
 * against f64 references. */
#include "cuda/common/rowview.cuh"
#include "cuda/nn/kernels_nn.h"

namespace {

#define ATT_QMAX 256 /* query rows up to this D are staged in shared memory */
#define ATT_NA 8     /* accumulators per lane: 8 x 32 = 256 output dims per unit */
#define ATT_DVC (ATT_NA * WKC_ROW_LANES)

/* ---- softmax / log_softmax ---- */

struct SmP {
    RowV rv;              /* src's dims but dim */
    int64_t n, st, inner; /* length and stride along dim; dst's stride along dim */
    int64_t rows;
    int32_t logp;
    const void *src;
    void *dst;
};

template <int DT> struct SmF {
    typedef typename wkc_t<DT>::C C;
    struct St {
        C m, s; /* running max, sum of exp(x - m) */
    };
    static const int PASSES = 1;
    static WKC_HD St empty() {
        St z;
        z.m = row_ninf<C>();
        z.s = 0;
        return z;
    }
    /* a state absorbing another at max m2, sum s2; a state at max -inf
     * holds a sum of 0 (or NaN) and is added as is (no -inf - -inf) */
    static WKC_HD St merge(St a, C m2, C s2) {
        C m = m2 > a.m ? m2 : a.m;
        C sa = a.m == row_ninf<C>() ? a.s : a.s * row_exp(a.m - m); /* s is 0 (or NaN) there */
        C sb = m2 == row_ninf<C>() ? s2 : s2 * row_exp(m2 - m);
        St r;
        r.m = m;
        r.s = sa + sb;
        return r;
    }
    static WKC_HD St fold(const SmP &p, int64_t r, int lane, int, const St &) {
        St a = empty();
        int64_t base = row_base(p.rv, r);
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C x = row_ld<DT>(p.src, base + k * p.st);
            if (x != x) { /* NaN: the row's sum becomes NaN */
                a.s = x;
                continue;
            }
            if (x == row_ninf<C>()) continue; /* exp(-inf) = 0 */
            a = merge(a, x, (C)1);
        }
        return a;
    }
    static WKC_HD St comb(int, St a, St b) { return merge(a, b.m, b.s); }
    static WKC_HD void write(const SmP &p, int64_t r, int lane, const St &t) {
        int64_t base = row_base(p.rv, r);
        int64_t o = r / p.inner * p.n * p.inner + r % p.inner;
        C ls = row_log(t.s);
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C x = row_ld<DT>(p.src, base + k * p.st);
            /* all -inf: m = -inf, x - m = NaN: a NaN row, as the composite */
            C y = p.logp ? (x - t.m) - ls : row_exp(x - t.m) / t.s;
            wkc_t<DT>::store(p.dst, o + k * p.inner, y);
        }
    }
};

/* ---- rms_norm / layer_norm ---- */

struct NormP {
    RowV rv; /* x's dims but the last */
    int64_t n, st, rows;
    int64_t woff, wst, boff, bst;
    int32_t rms, has_w, has_b;
    double eps;
    const void *x, *w, *b;
    void *dst;
};

/* Pass 0 sums x (layer) or x^2 (rms); pass 1 (layer only) sums the squares
 * of x - mean. The states hold sums; every lane turns the totals into the
 * same statistics. */
template <int DT> struct NormF {
    typedef typename wkc_t<DT>::C C;
    struct St {
        C sum, sq;
    };
    static const int PASSES = 2;
    static WKC_HD St empty() {
        St z;
        z.sum = 0;
        z.sq = 0;
        return z;
    }
    static WKC_HD St fold(const NormP &p, int64_t r, int lane, int pass, const St &prev) {
        St a = prev;
        if (pass == 1 && p.rms) return a;
        const int64_t base = row_base(p.rv, r);
        const C mu = prev.sum / (C)p.n;
        C acc = 0;
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C x = row_ld<DT>(p.x, base + k * p.st);
            if (pass == 0) {
                acc += p.rms ? x * x : x;
            } else {
                C c = x - mu;
                acc += c * c;
            }
        }
        if (pass == 0) a.sum = acc;
        else a.sq = acc;
        return a;
    }
    static WKC_HD St comb(int pass, St a, St b) {
        if (pass == 0) a.sum += b.sum;
        else a.sq += b.sq;
        return a;
    }
    static WKC_HD void write(const NormP &p, int64_t r, int lane, const St &t) {
        const int64_t base = row_base(p.rv, r), o = r * p.n;
        const C mu = p.rms ? (C)0 : t.sum / (C)p.n;
        const C var = p.rms ? t.sum / (C)p.n : t.sq / (C)p.n;
        const C den = row_sqrt(var + (C)p.eps);
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C x = row_ld<DT>(p.x, base + k * p.st);
            C y = (x - mu) / den;
            if (p.has_w) y = y * row_ld<DT>(p.w, p.woff + k * p.wst);
            if (p.has_b) y = y + row_ld<DT>(p.b, p.boff + k * p.bst);
            wkc_t<DT>::store(p.dst, o + k, y);
        }
    }
};

/* ---- rope: one item per rotated pair ---- */

struct RopeP {
    int64_t sh[4], st[4], off; /* x */
    int64_t coff, cst0, cst1, soff, sst0, sst1;
    int64_t half;
    int32_t inter, thd;
    const void *x, *c, *s;
    void *dst;
};
template <int DT> struct RopeItem {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const RopeP &p, int64_t i) {
        int64_t j = i % p.half, rest = i / p.half;
        int64_t d2 = rest % p.sh[2];
        rest /= p.sh[2];
        int64_t d1 = rest % p.sh[1], b = rest / p.sh[1];
        int64_t t = p.thd ? d1 : d2;
        int64_t xb = p.off + b * p.st[0] + d1 * p.st[1] + d2 * p.st[2];
        int64_t ob = ((b * p.sh[1] + d1) * p.sh[2] + d2) * p.sh[3];
        int64_t ia = p.inter ? 2 * j : j, ib = p.inter ? 2 * j + 1 : j + p.half;
        C a = row_ld<DT>(p.x, xb + ia * p.st[3]), bb = row_ld<DT>(p.x, xb + ib * p.st[3]);
        C c = row_ld<DT>(p.c, p.coff + t * p.cst0 + j * p.cst1);
        C s = row_ld<DT>(p.s, p.soff + t * p.sst0 + j * p.sst1);
        /* each product rounded on its own (no FMA), as the composite */
        wkc_t<DT>::store(p.dst, ob + ia, wkc_add_rn(wkc_mul_rn(a, c), -wkc_mul_rn(bb, s)));
        wkc_t<DT>::store(p.dst, ob + ib, wkc_add_rn(wkc_mul_rn(a, s), wkc_mul_rn(bb, c)));
    }
};

/* ---- swiglu: one item per output element ---- */

struct SwP {
    RowV rv;
    int64_t half, st;
    const void *x;
    void *dst;
};
template <int DT> struct SwItem {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const SwP &p, int64_t i) {
        int64_t r = i / p.half, j = i - r * p.half, base = row_base(p.rv, r);
        C a = row_ld<DT>(p.x, base + j * p.st), b = row_ld<DT>(p.x, base + (j + p.half) * p.st);
        C silu = a / ((C)1 + row_exp(-a));
        wkc_t<DT>::store(p.dst, i, silu * b);
    }
};

/* ---- attention ---- */

struct AttP {
    int32_t nrd;  /* row dims: q's dims but the last (batch..., head, Lq) */
    int32_t hdim; /* index of the head dim among them (rank - 3), -1 for rank 2 */
    int64_t rshape[WK_MAX_RANK];
    int64_t qs[WK_MAX_RANK], ks[WK_MAX_RANK], vs[WK_MAX_RANK], ms[WK_MAX_RANK];
    int64_t qoff, koff, voff, moff;
    int64_t qd, kj, kd, vj, vd, mj; /* strides: q along D, k along keys / D, v along keys / Dv, mask along keys */
    int64_t D, Dv, Lk;
    int64_t rows, splits, chunk, ndvc;
    int64_t group, q_offset, window;
    int32_t causal, has_mask;
    double scale, softcap;
    const void *q, *k, *v, *m;
    void *dst;
    void *ws; /* splits > 1: per (row, split) max, sum, Dv partial outputs, in the compute type */
};

/* A unit's addresses: row, split, output chunk, key range [k0, k1). */
struct AttU {
    int64_t row, sp, dvc, dv0, ndv;
    int64_t qb, kb, vb, mb;
    int64_t k0, k1;
};

WKC_HD AttU att_unit(const AttP &p, int64_t u) {
    AttU U;
    U.dvc = u % p.ndvc;
    int64_t rest = u / p.ndvc;
    U.sp = rest % p.splits;
    U.row = rest / p.splits;
    U.qb = p.qoff;
    U.kb = p.koff;
    U.vb = p.voff;
    U.mb = p.moff;
    int64_t r = U.row, i = 0;
    for (int d = p.nrd - 1; d >= 0; d--) {
        int64_t q = r / p.rshape[d], idx = r - q * p.rshape[d];
        r = q;
        if (d == p.nrd - 1) i = idx;
        int64_t kvi = d == p.hdim ? idx / p.group : idx;
        U.qb += idx * p.qs[d];
        U.mb += idx * p.ms[d];
        U.kb += kvi * p.ks[d];
        U.vb += kvi * p.vs[d];
    }
    int64_t kend = p.Lk, kbeg = 0;
    if (p.causal) {
        int64_t lim = i + p.q_offset + 1; /* keys 0 .. i + q_offset */
        if (lim < kend) kend = lim < 0 ? 0 : lim;
    }
    if (p.window > 0) { /* keys from i + q_offset - window + 1: the splits cover only those */
        kbeg = i + p.q_offset - p.window + 1;
        if (kbeg < 0) kbeg = 0;
        if (kbeg > kend) kbeg = kend;
    }
    U.k0 = kbeg + U.sp * p.chunk;
    U.k1 = U.k0 + p.chunk < kend ? U.k0 + p.chunk : kend;
    if (U.k1 < U.k0) U.k1 = U.k0;
    U.dv0 = U.dvc * ATT_DVC;
    U.ndv = p.Dv - U.dv0 < ATT_DVC ? p.Dv - U.dv0 : ATT_DVC;
    return U;
}

template <int DT> struct Att {
    typedef typename wkc_t<DT>::C C;

    /* q's row into qs (lane's share) when it fits */
    static WKC_HD void stage_q(const AttP &p, const AttU &U, int lane, C *qs) {
        if (p.D > ATT_QMAX) return;
        for (int64_t d = lane; d < p.D; d += WKC_ROW_LANES) qs[d] = row_ld<DT>(p.q, U.qb + d * p.qd);
    }
    /* lane's score: key t0 + lane, -inf past the range */
    static WKC_HD C score(const AttP &p, const AttU &U, const C *qs, int64_t t0, int lane) {
        int64_t j = t0 + lane;
        if (j >= U.k1) return row_ninf<C>();
        const int64_t kb = U.kb + j * p.kj;
        C s = 0;
        if (p.D <= ATT_QMAX) {
            for (int64_t d = 0; d < p.D; d++) s += qs[d] * row_ld<DT>(p.k, kb + d * p.kd);
        } else {
            for (int64_t d = 0; d < p.D; d++)
                s += row_ld<DT>(p.q, U.qb + d * p.qd) * row_ld<DT>(p.k, kb + d * p.kd);
        }
        s = s * (C)p.scale;
        if (p.softcap > 0) s = (C)p.softcap * row_tanh(s / (C)p.softcap);
        if (p.has_mask) s += row_ld<DT>(p.m, U.mb + j * p.mj);
        return s;
    }
    /* From the tile's 32 scores and the running max m: the new max, the
     * factor alpha = exp(m - m_new) for what was summed so far, and lane's
     * probability exp(s_lane - m_new) (0 for a -inf score). Every lane
     * computes the same max and alpha (same scores, same order). */
    static WKC_HD C probs(const C *sc, C m, C *m_new, C *alpha, int lane) {
        C mn = m;
        for (int j = 0; j < WKC_ROW_LANES; j++)
            if (sc[j] > mn) mn = sc[j];
        *m_new = mn;
        *alpha = m == row_ninf<C>() ? (C)0 : row_exp(m - mn);
        C s = sc[lane];
        return s == row_ninf<C>() ? (C)0 : row_exp(s - mn);
    }
    /* Rescale by alpha and add the tile's p_j v_j (jn valid keys from t0)
     * into lane's accumulators (output dims dv0 + lane + 32 a). */
    static WKC_HD void accum(const AttP &p, const AttU &U, const C *pb, int jn, int64_t t0, int lane, C alpha, C &l,
                             C *acc) {
        C ps = 0;
        for (int j = 0; j < jn; j++) ps += pb[j];
        l = l * alpha + ps;
        WKC_UNROLL
        for (int a = 0; a < ATT_NA; a++) {
            int64_t dv = lane + (int64_t)a * WKC_ROW_LANES;
            if (dv < U.ndv) {
                const int64_t vb = U.vb + (U.dv0 + dv) * p.vd + t0 * p.vj;
                C o = acc[a] * alpha;
                for (int j = 0; j < jn; j++) o += pb[j] * row_ld<DT>(p.v, vb + j * p.vj);
                acc[a] = o;
            }
        }
    }
    static WKC_HD void finish(const AttP &p, const AttU &U, int lane, C m, C l, const C *acc) {
        if (p.splits == 1) {
            WKC_UNROLL
            for (int a = 0; a < ATT_NA; a++) {
                int64_t dv = lane + (int64_t)a * WKC_ROW_LANES;
                if (dv < U.ndv) wkc_t<DT>::store(p.dst, U.row * p.Dv + U.dv0 + dv, acc[a] / l);
            }
            return;
        }
        C *w = (C *)p.ws + (U.row * p.splits + U.sp) * (p.Dv + 2);
        if (U.dvc == 0 && lane == 0) {
            w[0] = m;
            w[1] = l;
        }
        WKC_UNROLL
        for (int a = 0; a < ATT_NA; a++) {
            int64_t dv = lane + (int64_t)a * WKC_ROW_LANES;
            if (dv < U.ndv) w[2 + U.dv0 + dv] = acc[a];
        }
    }
};

template <int DT> __global__ void __launch_bounds__(WKC_ROW_LANES *WKC_ROW_WARPS) att_kernel(const __grid_constant__ AttP p) {
    typedef typename wkc_t<DT>::C C;
    typedef Att<DT> A;
    __shared__ C qsh[WKC_ROW_WARPS][ATT_QMAX];
    __shared__ C sc[WKC_ROW_WARPS][WKC_ROW_LANES];
    __shared__ C pb[WKC_ROW_WARPS][WKC_ROW_LANES];
    const int lane = (int)threadIdx.x % WKC_ROW_LANES, w = (int)threadIdx.x / WKC_ROW_LANES;
    const int64_t units = p.rows * p.splits * p.ndvc;
    for (int64_t u = (int64_t)blockIdx.x * WKC_ROW_WARPS + w; u < units; u += (int64_t)gridDim.x * WKC_ROW_WARPS) {
        const AttU U = att_unit(p, u);
        A::stage_q(p, U, lane, qsh[w]);
        __syncwarp();
        C m = row_ninf<C>(), l = 0, acc[ATT_NA];
        WKC_UNROLL
        for (int a = 0; a < ATT_NA; a++) acc[a] = 0;
        for (int64_t t0 = U.k0; t0 < U.k1; t0 += WKC_ROW_LANES) {
            sc[w][lane] = A::score(p, U, qsh[w], t0, lane);
            __syncwarp();
            C mn, al;
            pb[w][lane] = A::probs(sc[w], m, &mn, &al, lane);
            __syncwarp();
            int jn = U.k1 - t0 < WKC_ROW_LANES ? (int)(U.k1 - t0) : WKC_ROW_LANES;
            A::accum(p, U, pb[w], jn, t0, lane, al, l, acc);
            m = mn;
            __syncwarp(); /* sc and pb are read before the next tile writes them */
        }
        A::finish(p, U, lane, m, l, acc);
        __syncwarp(); /* qsh is read before the next unit stages its row */
    }
}

/* merging the splits: one item per (row, output dim), splits in order */
template <int DT> struct AttMerge {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const AttP &p, int64_t i) {
        int64_t row = i / p.Dv, dv = i - row * p.Dv;
        const C *w = (const C *)p.ws + row * p.splits * (p.Dv + 2);
        C m = row_ninf<C>();
        for (int64_t s = 0; s < p.splits; s++)
            if (w[s * (p.Dv + 2)] > m) m = w[s * (p.Dv + 2)];
        C l = 0, o = 0;
        for (int64_t s = 0; s < p.splits; s++) {
            const C *ws = w + s * (p.Dv + 2);
            if (ws[0] == row_ninf<C>()) continue; /* no visible key in this split */
            C f = row_exp(ws[0] - m);
            l += ws[1] * f;
            o += ws[2 + dv] * f;
        }
        wkc_t<DT>::store(p.dst, i, o / l);
    }
};

template <int DT> int att_t(wk_cu_stream s, const AttP &p) {
    typedef typename wkc_t<DT>::C C;
    typedef Att<DT> A;
    const int64_t units = p.rows * p.splits * p.ndvc;
#ifdef WKC_HOST_EMULATION
    for (int64_t u = 0; u < units; u++) {
        const AttU U = att_unit(p, u);
        C qs[ATT_QMAX], sc[WKC_ROW_LANES], pb[WKC_ROW_LANES], m[WKC_ROW_LANES], l[WKC_ROW_LANES], mn[WKC_ROW_LANES], al[WKC_ROW_LANES];
        C acc[WKC_ROW_LANES][ATT_NA];
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) {
            A::stage_q(p, U, lane, qs);
            m[lane] = row_ninf<C>();
            l[lane] = 0;
            for (int a = 0; a < ATT_NA; a++) acc[lane][a] = 0;
        }
        for (int64_t t0 = U.k0; t0 < U.k1; t0 += WKC_ROW_LANES) {
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) sc[lane] = A::score(p, U, qs, t0, lane);
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) pb[lane] = A::probs(sc, m[lane], &mn[lane], &al[lane], lane);
            int jn = U.k1 - t0 < WKC_ROW_LANES ? (int)(U.k1 - t0) : WKC_ROW_LANES;
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) {
                A::accum(p, U, pb, jn, t0, lane, al[lane], l[lane], acc[lane]);
                m[lane] = mn[lane];
            }
        }
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) A::finish(p, U, lane, m[lane], l[lane], acc[lane]);
    }
    if (p.splits > 1) return wkc_launch_items<AttMerge<DT>>(s, p, p.rows * p.Dv);
    return 0;
#else
    int64_t blocks = (units + WKC_ROW_WARPS - 1) / WKC_ROW_WARPS;
    if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
    AttP copy = p;
    void *args[] = {&copy};
    void (*k)(const AttP) = att_kernel<DT>;
    int rc = (int)cudaLaunchKernel((const void *)k, dim3((unsigned)blocks), dim3(WKC_ROW_LANES * WKC_ROW_WARPS), args, 0,
                                   (cudaStream_t)s);
    if (rc != 0 || p.splits == 1) return rc;
    return wkc_launch_items<AttMerge<DT>>(s, p, p.rows * p.Dv);
#endif
}

} // namespace


extern "C" int wk__cu_softmax(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype dt, int dim, bool logp,
                              void *dst) {
    if (!view_ok(ls) || dim < 0 || dim >= ls.rank) return WKC_BAD_ARG;
    SmP p;
    memset(&p, 0, sizeof p);
    p.rv = row_view(ls, dim, &p.rows);
    p.n = ls.shape[dim];
    p.st = ls.stride[dim];
    p.inner = 1;
    for (int d = dim + 1; d < ls.rank; d++) p.inner *= ls.shape[d];
    p.logp = logp;
    p.src = src;
    p.dst = dst;
    if (p.n == 0 || p.rows == 0) return 0;
#define SM_CALL(DT) return launch_rows<SmF<DT>>(s, p)
    WKC_FLOAT_DISPATCH(dt, SM_CALL);
#undef SM_CALL
}

static int norm_launch(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw, const void *b,
                       wk_cu_view lb, wk_dtype dt, double eps, bool rms, void *dst) {
    if (!view_ok(lx) || lx.rank < 1) return WKC_BAD_ARG;
    NormP p;
    memset(&p, 0, sizeof p);
    p.rv = row_view(lx, lx.rank - 1, &p.rows);
    p.n = lx.shape[lx.rank - 1];
    p.st = lx.stride[lx.rank - 1];
    if (w) {
        if (lw.rank != 1 || lw.shape[0] != p.n) return WKC_BAD_ARG;
        p.has_w = 1;
        p.woff = lw.offset;
        p.wst = lw.stride[0];
    }
    if (b) {
        if (lb.rank != 1 || lb.shape[0] != p.n) return WKC_BAD_ARG;
        p.has_b = 1;
        p.boff = lb.offset;
        p.bst = lb.stride[0];
    }
    p.rms = rms;
    p.eps = eps;
    p.x = x;
    p.w = w;
    p.b = b;
    p.dst = dst;
    if (p.n == 0 || p.rows == 0) return 0;
#define NORM_CALL(DT) return launch_rows<NormF<DT>>(s, p)
    WKC_FLOAT_DISPATCH(dt, NORM_CALL);
#undef NORM_CALL
}

extern "C" int wk__cu_rms_norm(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw,
                               wk_dtype dt, double eps, void *dst) {
    wk_cu_view none;
    memset(&none, 0, sizeof none);
    return norm_launch(s, x, lx, w, lw, NULL, none, dt, eps, true, dst);
}

extern "C" int wk__cu_layer_norm(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw,
                                 const void *b, wk_cu_view lb, wk_dtype dt, double eps, void *dst) {
    return norm_launch(s, x, lx, w, lw, b, lb, dt, eps, false, dst);
}

extern "C" int wk__cu_rope(wk_cu_stream s, const void *x, wk_cu_view lx, const void *cs, wk_cu_view lc,
                           const void *sn, wk_cu_view lsn, wk_dtype dt, bool interleaved, bool thd, void *dst) {
    if (!view_ok(lx) || lx.rank != 4 || lx.shape[3] % 2 != 0 || lc.rank != 2 || lsn.rank != 2) return WKC_BAD_ARG;
    int64_t T = lx.shape[thd ? 1 : 2], h = lx.shape[3] / 2;
    if (lc.shape[0] != T || lc.shape[1] != h || lsn.shape[0] != T || lsn.shape[1] != h) return WKC_BAD_ARG;
    RopeP p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < 4; d++) {
        p.sh[d] = lx.shape[d];
        p.st[d] = lx.stride[d];
    }
    p.off = lx.offset;
    p.coff = lc.offset;
    p.cst0 = lc.stride[0];
    p.cst1 = lc.stride[1];
    p.soff = lsn.offset;
    p.sst0 = lsn.stride[0];
    p.sst1 = lsn.stride[1];
    p.half = h;
    p.inter = interleaved;
    p.thd = thd;
    p.x = x;
    p.c = cs;
    p.s = sn;
    p.dst = dst;
    int64_t items = view_numel(lx) / 2;
    if (items == 0) return 0;
#define ROPE_CALL(DT) return wkc_launch_items<RopeItem<DT>>(s, p, items)
    WKC_FLOAT_DISPATCH(dt, ROPE_CALL);
#undef ROPE_CALL
}

extern "C" int wk__cu_swiglu(wk_cu_stream s, const void *x, wk_cu_view lx, wk_dtype dt, void *dst) {
    if (!view_ok(lx) || lx.rank < 1 || lx.shape[lx.rank - 1] % 2 != 0) return WKC_BAD_ARG;
    SwP p;
    memset(&p, 0, sizeof p);
    int64_t rows;
    p.rv = row_view(lx, lx.rank - 1, &rows);
    p.half = lx.shape[lx.rank - 1] / 2;
    p.st = lx.stride[lx.rank - 1];
    p.x = x;
    p.dst = dst;
    int64_t items = rows * p.half;
    if (items == 0) return 0;
#define SW_CALL(DT) return wkc_launch_items<SwItem<DT>>(s, p, items)
    WKC_FLOAT_DISPATCH(dt, SW_CALL);
#undef SW_CALL
}

/* The rows (q's numel / D) and output chunks of a call. */
static int64_t att_rows(const wk_cu_view &lq) {
    int64_t r = 1;
    for (int d = 0; d < lq.rank - 1; d++) r *= lq.shape[d];
    return r;
}

/* The most keys one row reads: Lk, or with a causal window the window. */
static int64_t att_span(int64_t lk_n, const wk_cu_attn_args &a) {
    return a.window > 0 && a.causal && a.window < lk_n ? a.window : lk_n;
}

extern "C" int64_t wk__cu_attention_splits(wk_cu_view lq, wk_cu_view lk, wk_cu_view lv, wk_cu_attn_args a) {
    if (lq.rank < 2 || lk.rank != lq.rank || lv.rank != lq.rank) return 1;
    const int64_t lk_n = att_span(lk.shape[lk.rank - 2], a), dv = lv.shape[lv.rank - 1];
    const int64_t units = att_rows(lq) * ((dv + ATT_DVC - 1) / ATT_DVC > 0 ? (dv + ATT_DVC - 1) / ATT_DVC : 1);
    /* about 2048 warps fill a large GPU (132 SMs x 16); split only rows of
     * more than 128 keys, in pieces of at least 64 keys */
    const int64_t want = 2048;
    if (lk_n <= 128 || units >= want) return 1;
    int64_t sp = (want + units - 1) / units, most = (lk_n + 63) / 64;
    if (sp > most) sp = most;
    if (sp > 256) sp = 256;
    /* pieces a whole number of 32-key tiles */
    int64_t chunk = ((lk_n + sp - 1) / sp + WKC_ROW_LANES - 1) / WKC_ROW_LANES * WKC_ROW_LANES;
    return (lk_n + chunk - 1) / chunk;
}

extern "C" size_t wk__cu_attention_workspace(wk_cu_view lq, wk_cu_view lv, wk_dtype dt, int64_t splits) {
    if (splits <= 1 || lq.rank < 2 || lv.rank != lq.rank) return 0;
    return (size_t)(att_rows(lq) * splits * (lv.shape[lv.rank - 1] + 2)) * (size_t)compute_size(dt);
}

extern "C" int wk__cu_attention(wk_cu_stream s, const void *q, wk_cu_view lq, const void *k, wk_cu_view lk,
                                const void *v, wk_cu_view lv, const void *mask, wk_cu_view lm, wk_dtype dt,
                                wk_cu_attn_args a, int64_t splits, void *workspace, void *dst) {
    const int r = lq.rank;
    if (!view_ok(lq) || !view_ok(lk) || !view_ok(lv) || r < 2 || lk.rank != r || lv.rank != r || splits < 1 ||
        a.group < 1 || a.q_offset < 0 || a.window < 0 || !(a.softcap >= 0) || (splits > 1 && !workspace))
        return WKC_BAD_ARG;
    if (mask && (!view_ok(lm) || lm.rank != r)) return WKC_BAD_ARG;
    AttP p;
    memset(&p, 0, sizeof p);
    p.nrd = r - 1;
    p.hdim = r >= 3 ? r - 3 : -1;
    p.D = lq.shape[r - 1];
    p.Lk = lk.shape[r - 2];
    p.Dv = lv.shape[r - 1];
    if (lk.shape[r - 1] != p.D || lv.shape[r - 2] != p.Lk) return WKC_BAD_ARG;
    for (int d = 0; d < r - 1; d++) {
        p.rshape[d] = lq.shape[d];
        p.qs[d] = lq.stride[d];
        if (d < r - 2) {
            int64_t want = d == p.hdim ? lq.shape[d] / a.group : lq.shape[d];
            if (lk.shape[d] != want || lv.shape[d] != want || (d == p.hdim && want * a.group != lq.shape[d]))
                return WKC_BAD_ARG;
            p.ks[d] = lk.stride[d];
            p.vs[d] = lv.stride[d];
        }
        if (mask) {
            if (lm.shape[d] != lq.shape[d]) return WKC_BAD_ARG;
            p.ms[d] = lm.stride[d];
        }
    }
    if (mask && lm.shape[r - 1] != p.Lk) return WKC_BAD_ARG;
    p.qoff = lq.offset;
    p.koff = lk.offset;
    p.voff = lv.offset;
    p.moff = mask ? lm.offset : 0;
    p.qd = lq.stride[r - 1];
    p.kj = lk.stride[r - 2];
    p.kd = lk.stride[r - 1];
    p.vj = lv.stride[r - 2];
    p.vd = lv.stride[r - 1];
    p.mj = mask ? lm.stride[r - 1] : 0;
    p.rows = att_rows(lq);
    p.ndvc = (p.Dv + ATT_DVC - 1) / ATT_DVC;
    p.splits = splits;
    const int64_t span = att_span(p.Lk, a); /* each row's keys: at most span from its first */
    p.chunk = (span + splits - 1) / splits;
    if (splits > 1) p.chunk = (p.chunk + WKC_ROW_LANES - 1) / WKC_ROW_LANES * WKC_ROW_LANES;
    if (p.chunk < 1) p.chunk = 1;
    p.group = a.group;
    p.q_offset = a.q_offset;
    p.window = a.window;
    p.causal = a.causal != 0;
    p.has_mask = mask != NULL;
    p.scale = a.scale;
    p.softcap = a.softcap;
    p.q = q;
    p.k = k;
    p.v = v;
    p.m = mask;
    p.dst = dst;
    p.ws = workspace;
    if (p.rows == 0 || p.Dv == 0) return 0;
#define ATT_CALL(DT) return att_t<DT>(s, p)
    WKC_FLOAT_DISPATCH(dt, ATT_CALL);
#undef ATT_CALL
}
