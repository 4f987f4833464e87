/* CUDA kernels of the optional autograd entries (launchers in
 * kernels_grad.h): softmax / log_softmax backward, rms / layer norm
 * backward (dx, dw, db), tiled attention backward and the optimizer step
 * (SGD + momentum / nesterov / weight decay, Adam, AdamW); pool2d and
 * upsample2d backward are in conv/kernels_pool_backward.cu. Row views and
 * the row launcher: common/rowview.cuh.
 *
 * Determinism: no float atomics anywhere. Row ops are one warp per row,
 * lane partial sums met in lane order (kernels_nn.cu's scheme); column sums
 * (dw, db) are one thread per column over the rows in order; attention's
 * dk / dv are owned by the warp of their key row, which walks the query
 * rows in order; pooling / upsampling gather (each input element sums the
 * outputs that read it) instead of scattering.
 *
 * Attention backward (FlashAttention-2's recomputation, without atomics):
 * kernel 1, one warp per (query row i, 256 dims of D): pass 1 over key
 * tiles of 32 (lane j scores key t0 + j) keeps an online (max, sum) and
 * gives lse_i; delta_i = g_i . o_i (lane partials in lane order); pass 2
 * recomputes p_ij = exp(s_ij - lse_i), dp_ij = g_i . v_j, ds_ij = p_ij
 * (dp_ij - delta_i) and each lane adds ds_ij k_j into its dq dims; lse and
 * delta go to a workspace (2 values per row). Kernel 2, one warp per (key
 * row j, 256 dims): for every query head of j's group, query tiles of 32
 * from the causal start (lane t takes query t0 + t) give p and ds again;
 * lanes add p g_i into dv and ds q_i into dk. A window narrows both walks
 * (kernel 1's keys start at i + q_offset - window + 1, kernel 2's queries
 * end before j + window - q_offset); soft-capping multiplies ds by the
 * cap's derivative 1 - tanh^2. Memory: O(rows) workspace.
 * Not yet: shared-memory staging of rows, tensor cores.
 *
 * Host emulation (WKC_HOST_EMULATION, tests/cuda/test_grad_emu.cu): the
 * per-lane steps are __host__ __device__ functions; the launchers run them
 * lane by lane in the kernels' order, with arrays standing in for shared
 * memory. Checked: nvcc compile (sm_80..90, warnings as errors); host
 * emulation against f64 references (finite differences for the norms and
 * attention), with deliberate mutations caught (test_grad_emu.cu's list). */
#include "cuda/common/rowview.cuh"
#include "cuda/nn/kernels_grad.h"

namespace {

#define GR_NA 8    /* accumulators per lane: 8 x 32 = 256 dims per unit */
#define GR_DC (GR_NA * WKC_ROW_LANES)

/* ---- softmax / log_softmax backward ---- */

struct SmbP {
    RowV ry, rg;        /* y's / g's dims but dim */
    int64_t n, sty, stg;  /* length along dim, strides along it */
    int64_t inner, rows;  /* dx's stride along dim */
    int32_t logp;
    const void *y, *g;
    void *dx;
};

template <int DT> struct SmbF {
    typedef typename wkc_t<DT>::C C;
    struct St {
        C s;
    };
    static const int PASSES = 1;
    static WKC_HD St empty() {
        St z;
        z.s = 0;
        return z;
    }
    static WKC_HD St fold(const SmbP &p, int64_t r, int lane, int, const St &) {
        const int64_t by = row_base(p.ry, r), bg = row_base(p.rg, r);
        C acc = 0;
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C gv = row_ld<DT>(p.g, bg + k * p.stg);
            acc += p.logp ? gv : gv * row_ld<DT>(p.y, by + k * p.sty);
        }
        St a;
        a.s = acc;
        return a;
    }
    static WKC_HD St comb(int, St a, St b) {
        a.s += b.s;
        return a;
    }
    static WKC_HD void write(const SmbP &p, int64_t r, int lane, const St &t) {
        const int64_t by = row_base(p.ry, r), bg = row_base(p.rg, r);
        const int64_t o = r / p.inner * p.n * p.inner + r % p.inner;
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C yv = row_ld<DT>(p.y, by + k * p.sty), gv = row_ld<DT>(p.g, bg + k * p.stg);
            C d = p.logp ? gv - row_exp(yv) * t.s : yv * (gv - t.s);
            wkc_t<DT>::store(p.dx, o + k * p.inner, d);
        }
    }
};

/* ---- rms_norm / layer_norm backward ---- */

struct NbP {
    RowV rx, rg; /* x's / g's dims but the last */
    int64_t n, stx, stg, rows;
    int64_t woff, wst;
    int32_t rms, has_w, want_dx;
    double eps;
    const void *x, *w, *g;
    void *dx, *dw, *db;
    void *ws; /* NULL, or per row (mean, rstd) in the compute type */
};

/* Pass 0 sums x (layer) or x^2 (rms); pass 1 (layer) the squares of
 * x - mean; pass 2 sums gw = g * w and gw * xhat. Every lane turns the
 * totals into the same statistics (fixed order). */
template <int DT> struct NbF {
    typedef typename wkc_t<DT>::C C;
    struct St {
        C s0, s1, s2, s3;
    };
    static const int PASSES = 3;
    static WKC_HD St empty() {
        St z;
        z.s0 = z.s1 = z.s2 = z.s3 = 0;
        return z;
    }
    static WKC_HD void stats(const NbP &p, const St &t, C *mu, C *rstd) {
        *mu = p.rms ? (C)0 : t.s0 / (C)p.n;
        C var = p.rms ? t.s0 / (C)p.n : t.s1 / (C)p.n;
        *rstd = (C)1 / row_sqrt(var + (C)p.eps);
    }
    static WKC_HD St fold(const NbP &p, int64_t r, int lane, int pass, const St &prev) {
        St a = prev;
        if (pass == 1 && p.rms) return a;
        const int64_t bx = row_base(p.rx, r), bg = row_base(p.rg, r);
        C mu, rstd;
        stats(p, prev, &mu, &rstd);
        if (pass == 1) mu = prev.s0 / (C)p.n;
        C acc = 0, acc2 = 0;
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C x = row_ld<DT>(p.x, bx + k * p.stx);
            if (pass == 0) {
                acc += p.rms ? x * x : x;
            } else if (pass == 1) {
                C c = x - mu;
                acc += c * c;
            } else {
                C gw = row_ld<DT>(p.g, bg + k * p.stg);
                if (p.has_w) gw = gw * row_ld<DT>(p.w, p.woff + k * p.wst);
                acc += gw;
                acc2 += gw * ((x - mu) * rstd);
            }
        }
        if (pass == 0) a.s0 = acc;
        else if (pass == 1) a.s1 = acc;
        else {
            a.s2 = acc;
            a.s3 = acc2;
        }
        return a;
    }
    static WKC_HD St comb(int pass, St a, St b) {
        if (pass == 0) a.s0 += b.s0;
        else if (pass == 1) a.s1 += b.s1;
        else {
            a.s2 += b.s2;
            a.s3 += b.s3;
        }
        return a;
    }
    static WKC_HD void write(const NbP &p, int64_t r, int lane, const St &t) {
        C mu, rstd;
        stats(p, t, &mu, &rstd);
        if (p.ws && lane == 0) {
            ((C *)p.ws)[2 * r] = mu;
            ((C *)p.ws)[2 * r + 1] = rstd;
        }
        if (!p.want_dx) return;
        const int64_t bx = row_base(p.rx, r), bg = row_base(p.rg, r), o = r * p.n;
        const C mg = p.rms ? (C)0 : t.s2 / (C)p.n, mgx = t.s3 / (C)p.n;
        for (int64_t k = lane; k < p.n; k += WKC_ROW_LANES) {
            C x = row_ld<DT>(p.x, bx + k * p.stx);
            C gw = row_ld<DT>(p.g, bg + k * p.stg);
            if (p.has_w) gw = gw * row_ld<DT>(p.w, p.woff + k * p.wst);
            C xh = (x - mu) * rstd;
            wkc_t<DT>::store(p.dx, o + k, rstd * (gw - mg - xh * mgx));
        }
    }
};

/* dw[d] = sum_r g xhat, db[d] = sum_r g: one item per column, rows in order */
template <int DT> struct NbCol {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const NbP &p, int64_t d) {
        const C *ws = (const C *)p.ws;
        C sw = 0, sb = 0;
        for (int64_t r = 0; r < p.rows; r++) {
            C gv = row_ld<DT>(p.g, row_base(p.rg, r) + d * p.stg);
            C x = row_ld<DT>(p.x, row_base(p.rx, r) + d * p.stx);
            sw += gv * ((x - ws[2 * r]) * ws[2 * r + 1]);
            sb += gv;
        }
        if (p.dw) wkc_t<DT>::store(p.dw, d, sw);
        if (p.db) wkc_t<DT>::store(p.db, d, sb);
    }
};

template <int DT> int nb_t(wk_cu_stream s, const NbP &p, bool cols) {
    int rc = launch_rows<NbF<DT>>(s, p);
    if (rc != 0 || !cols) return rc;
    return wkc_launch_items<NbCol<DT>>(s, p, p.n);
}

/* ---- attention backward ---- */

struct AbP {
    int32_t nb; /* batch dims (rank - 3, or 0) */
    int64_t bshape[WK_MAX_RANK];
    int64_t qbs[WK_MAX_RANK], kbs[WK_MAX_RANK], vbs[WK_MAX_RANK], mbs[WK_MAX_RANK], obs[WK_MAX_RANK],
        gbs[WK_MAX_RANK];
    int64_t qh, kh, vh, mh, oh, gh;       /* head strides (0 for rank 2) */
    int64_t qi, qd, ki, kd, vi, vd;       /* row / dim strides */
    int64_t mi, mj, oi, od, gi, gd;
    int64_t qoff, koff, voff, moff, ooff, goff;
    int64_t Hq, Hkv, Lq, Lk, D, Dv, nbatch;
    int64_t ndq, ndkv; /* dim chunks of the two kernels (>= 1) */
    int64_t group, q_offset, window;
    int32_t causal, has_mask;
    double scale, softcap;
    const void *q, *k, *v, *m, *o, *g;
    void *dq, *dk, *dv, *ws;
};

/* element offsets of batch index b (flat over the batch dims) */
struct AbB {
    int64_t q, k, v, m, o, g;
};
WKC_HD AbB ab_batch(const AbP &p, int64_t b) {
    AbB r;
    r.q = p.qoff;
    r.k = p.koff;
    r.v = p.voff;
    r.m = p.moff;
    r.o = p.ooff;
    r.g = p.goff;
    for (int d = p.nb - 1; d >= 0; d--) {
        int64_t qq = b / p.bshape[d], idx = b - qq * p.bshape[d];
        b = qq;
        r.q += idx * p.qbs[d];
        r.k += idx * p.kbs[d];
        r.v += idx * p.vbs[d];
        r.m += idx * p.mbs[d];
        r.o += idx * p.obs[d];
        r.g += idx * p.gbs[d];
    }
    return r;
}

/* One query row's addresses: q / g / o / mask at the row, k / v of its kv head. */
struct AbQ {
    int64_t row, i;
    int64_t qb, gb, ob, mb, kb, vb;
};
WKC_HD AbQ ab_qrow(const AbP &p, int64_t row) {
    AbQ U;
    U.row = row;
    U.i = row % p.Lq;
    int64_t t = row / p.Lq, h = t % p.Hq, b = t / p.Hq;
    AbB B = ab_batch(p, b);
    U.qb = B.q + h * p.qh + U.i * p.qi;
    U.gb = B.g + h * p.gh + U.i * p.gi;
    U.ob = B.o + h * p.oh + U.i * p.oi;
    U.mb = B.m + h * p.mh + U.i * p.mi;
    U.kb = B.k + (h / p.group) * p.kh;
    U.vb = B.v + (h / p.group) * p.vh;
    return U;
}
/* keys query i sees: [ab_kbeg, ab_kend) */
WKC_HD int64_t ab_kend(const AbP &p, int64_t i) {
    if (!p.causal) return p.Lk;
    int64_t lim = i + p.q_offset + 1;
    return lim < p.Lk ? (lim < 0 ? 0 : lim) : p.Lk;
}
WKC_HD int64_t ab_kbeg(const AbP &p, int64_t i) {
    if (p.window <= 0) return 0;
    int64_t b = i + p.q_offset - p.window + 1, e = ab_kend(p, i);
    b = b < 0 ? 0 : b;
    return b > e ? e : b;
}

template <int DT> struct Ab {
    typedef typename wkc_t<DT>::C C;
    /* score of query (at qb / mb) and key j (k at kb); no visibility test.
     * *dcap: d score / d (q.k * scale), 1 - tanh^2 with soft-capping, else 1 */
    static WKC_HD C score(const AbP &p, int64_t qb, int64_t mb, int64_t kb, C *dcap) {
        C s = 0;
        for (int64_t d = 0; d < p.D; d++) s += row_ld<DT>(p.q, qb + d * p.qd) * row_ld<DT>(p.k, kb + d * p.kd);
        s = s * (C)p.scale;
        *dcap = 1;
        if (p.softcap > 0) {
            C t = row_tanh(s / (C)p.softcap);
            s = (C)p.softcap * t;
            *dcap = 1 - t * t;
        }
        if (p.has_mask) s += row_ld<DT>(p.m, mb);
        return s;
    }
    /* g_i . v_j */
    static WKC_HD C gdotv(const AbP &p, int64_t gb, int64_t vb) {
        C s = 0;
        for (int64_t d = 0; d < p.Dv; d++) s += row_ld<DT>(p.g, gb + d * p.gd) * row_ld<DT>(p.v, vb + d * p.vd);
        return s;
    }
    static WKC_HD C prob(C s, C lse) { return (s == row_ninf<C>() || lse == row_ninf<C>()) ? (C)0 : row_exp(s - lse); }

    /* kernel 1, pass 1: lane's score of key t0 + lane (-inf past kend) */
    static WKC_HD C q_score(const AbP &p, const AbQ &U, int64_t t0, int64_t kend, int lane) {
        int64_t j = t0 + lane;
        if (j >= kend) return row_ninf<C>();
        C dcap;
        return score(p, U.qb, U.mb + j * p.mj, U.kb + j * p.ki, &dcap);
    }
    /* fold a tile's scores into the running (m, l); same on every lane */
    static WKC_HD void q_online(const C *sc, C &m, C &l) {
        C mn = m;
        for (int j = 0; j < WKC_ROW_LANES; j++)
            if (sc[j] > mn) mn = sc[j];
        if (mn == row_ninf<C>()) return;
        C ps = 0;
        for (int j = 0; j < WKC_ROW_LANES; j++) ps += sc[j] == row_ninf<C>() ? (C)0 : row_exp(sc[j] - mn);
        l = (m == row_ninf<C>() ? (C)0 : l * row_exp(m - mn)) + ps;
        m = mn;
    }
    static WKC_HD C q_lse(C m, C l) { return m == row_ninf<C>() ? m : m + row_log(l); }
    /* lane's share of delta = g . o */
    static WKC_HD C q_delta_part(const AbP &p, const AbQ &U, int lane) {
        C s = 0;
        for (int64_t d = lane; d < p.Dv; d += WKC_ROW_LANES) s += row_ld<DT>(p.g, U.gb + d * p.gd) * row_ld<DT>(p.o, U.ob + d * p.od);
        return s;
    }
    /* kernel 1, pass 2: lane's ds for key t0 + lane (0 past kend) */
    static WKC_HD C q_ds(const AbP &p, const AbQ &U, int64_t t0, int64_t kend, int lane, C lse, C delta) {
        int64_t j = t0 + lane;
        if (j >= kend) return 0;
        C dcap, pr = prob(score(p, U.qb, U.mb + j * p.mj, U.kb + j * p.ki, &dcap), lse);
        if (pr == (C)0) return 0;
        return pr * (gdotv(p, U.gb, U.vb + j * p.vi) - delta) * dcap;
    }
    /* dq dims dc * 256 + lane + 32 a += sum_j ds_j k_j */
    static WKC_HD void q_accum(const AbP &p, const AbQ &U, int64_t dc, const C *ds, int jn, int64_t t0, int lane,
                               C *acc) {
        WKC_UNROLL
        for (int a = 0; a < GR_NA; a++) {
            int64_t d = dc * GR_DC + lane + (int64_t)a * WKC_ROW_LANES;
            if (d < p.D) {
                C s = acc[a];
                for (int j = 0; j < jn; j++) s += ds[j] * row_ld<DT>(p.k, U.kb + (t0 + j) * p.ki + d * p.kd);
                acc[a] = s;
            }
        }
    }
    static WKC_HD void q_finish(const AbP &p, const AbQ &U, int64_t dc, int lane, const C *acc, C lse, C delta) {
        WKC_UNROLL
        for (int a = 0; a < GR_NA; a++) {
            int64_t d = dc * GR_DC + lane + (int64_t)a * WKC_ROW_LANES;
            if (d < p.D) wkc_t<DT>::store(p.dq, U.row * p.D + d, acc[a] * (C)p.scale);
        }
        if (dc == 0 && lane == 0) {
            ((C *)p.ws)[2 * U.row] = lse;
            ((C *)p.ws)[2 * U.row + 1] = delta;
        }
    }

    /* kernel 2: lane's (p, ds) for query t0 + lane (< qend) of query head h
     * (qrow0: that head's row 0; base offsets at i = 0) and key row (kb, vb, j) */
    static WKC_HD void kv_pds(const AbP &p, int64_t qrow0, const AbQ &H, int64_t kb, int64_t vb, int64_t j,
                              int64_t t0, int64_t qend, int lane, C *pr, C *ds) {
        int64_t i = t0 + lane;
        *pr = 0;
        *ds = 0;
        if (i >= qend) return;
        const C *ws = (const C *)p.ws;
        C lse = ws[2 * (qrow0 + i)], delta = ws[2 * (qrow0 + i) + 1];
        C dcap, s = score(p, H.qb + i * p.qi, H.mb + i * p.mi + j * p.mj, kb, &dcap);
        C pv = prob(s, lse);
        if (pv == (C)0) return;
        *pr = pv;
        *ds = pv * (gdotv(p, H.gb + i * p.gi, vb) - delta) * dcap;
    }
    static WKC_HD void kv_accum(const AbP &p, const AbQ &H, int64_t dc, const C *pr, const C *ds, int tn, int64_t t0,
                                int lane, C *ak, C *av) {
        WKC_UNROLL
        for (int a = 0; a < GR_NA; a++) {
            int64_t d = dc * GR_DC + lane + (int64_t)a * WKC_ROW_LANES;
            if (d < p.Dv) {
                C s = av[a];
                for (int t = 0; t < tn; t++) s += pr[t] * row_ld<DT>(p.g, H.gb + (t0 + t) * p.gi + d * p.gd);
                av[a] = s;
            }
            if (d < p.D) {
                C s = ak[a];
                for (int t = 0; t < tn; t++) s += ds[t] * row_ld<DT>(p.q, H.qb + (t0 + t) * p.qi + d * p.qd);
                ak[a] = s;
            }
        }
    }
    static WKC_HD void kv_finish(const AbP &p, int64_t kvrow, int64_t dc, int lane, const C *ak, const C *av) {
        WKC_UNROLL
        for (int a = 0; a < GR_NA; a++) {
            int64_t d = dc * GR_DC + lane + (int64_t)a * WKC_ROW_LANES;
            if (d < p.D) wkc_t<DT>::store(p.dk, kvrow * p.D + d, ak[a] * (C)p.scale);
            if (d < p.Dv) wkc_t<DT>::store(p.dv, kvrow * p.Dv + d, av[a]);
        }
    }
};

/* kernel 2's unit: kv row -> its batch, kv head, key index and addresses */
struct AbK {
    int64_t kvrow, j, hk, b, kb, vb;
};
WKC_HD AbK ab_kvrow(const AbP &p, int64_t kvrow) {
    AbK K;
    K.kvrow = kvrow;
    K.j = kvrow % p.Lk;
    int64_t t = kvrow / p.Lk;
    K.hk = t % p.Hkv;
    K.b = t / p.Hkv;
    AbB B = ab_batch(p, K.b);
    K.kb = B.k + K.hk * p.kh + K.j * p.ki;
    K.vb = B.v + K.hk * p.vh + K.j * p.vi;
    return K;
}
/* query head h's row 0 (addresses at i = 0) */
WKC_HD AbQ ab_head(const AbP &p, int64_t b, int64_t h) { return ab_qrow(p, (b * p.Hq + h) * p.Lq); }
WKC_HD int64_t ab_qstart(const AbP &p, int64_t j) {
    if (!p.causal) return 0;
    int64_t s = j - p.q_offset;
    return s < 0 ? 0 : s;
}
/* queries that see key j end before ab_qend: the window's i + q_offset - j < window */
WKC_HD int64_t ab_qend(const AbP &p, int64_t j) {
    if (p.window <= 0) return p.Lq;
    int64_t e = j + p.window - p.q_offset;
    return e < 0 ? 0 : (e < p.Lq ? e : p.Lq);
}

template <int DT> __global__ void __launch_bounds__(WKC_ROW_LANES *WKC_ROW_WARPS) ab_q_kernel(const __grid_constant__ AbP p) {
    typedef typename wkc_t<DT>::C C;
    typedef Ab<DT> A;
    __shared__ C sc[WKC_ROW_WARPS][WKC_ROW_LANES];
    const int lane = (int)threadIdx.x % WKC_ROW_LANES, w = (int)threadIdx.x / WKC_ROW_LANES;
    const int64_t units = p.nbatch * p.Hq * p.Lq * p.ndq;
    for (int64_t u = (int64_t)blockIdx.x * WKC_ROW_WARPS + w; u < units; u += (int64_t)gridDim.x * WKC_ROW_WARPS) {
        const int64_t dc = u % p.ndq;
        const AbQ U = ab_qrow(p, u / p.ndq);
        const int64_t kend = ab_kend(p, U.i), kbeg = ab_kbeg(p, U.i);
        C m = row_ninf<C>(), l = 0;
        for (int64_t t0 = kbeg; t0 < kend; t0 += WKC_ROW_LANES) {
            sc[w][lane] = A::q_score(p, U, t0, kend, lane);
            __syncwarp();
            A::q_online(sc[w], m, l);
            __syncwarp();
        }
        const C lse = A::q_lse(m, l);
        sc[w][lane] = A::q_delta_part(p, U, lane);
        __syncwarp();
        C delta = 0;
        for (int j = 0; j < WKC_ROW_LANES; j++) delta += sc[w][j];
        __syncwarp();
        C acc[GR_NA];
        WKC_UNROLL
        for (int a = 0; a < GR_NA; a++) acc[a] = 0;
        for (int64_t t0 = kbeg; t0 < kend; t0 += WKC_ROW_LANES) {
            sc[w][lane] = A::q_ds(p, U, t0, kend, lane, lse, delta);
            __syncwarp();
            int jn = kend - t0 < WKC_ROW_LANES ? (int)(kend - t0) : WKC_ROW_LANES;
            A::q_accum(p, U, dc, sc[w], jn, t0, lane, acc);
            __syncwarp();
        }
        A::q_finish(p, U, dc, lane, acc, lse, delta);
    }
}

template <int DT> __global__ void __launch_bounds__(WKC_ROW_LANES *WKC_ROW_WARPS) ab_kv_kernel(const __grid_constant__ AbP p) {
    typedef typename wkc_t<DT>::C C;
    typedef Ab<DT> A;
    __shared__ C pr[WKC_ROW_WARPS][WKC_ROW_LANES];
    __shared__ C ds[WKC_ROW_WARPS][WKC_ROW_LANES];
    const int lane = (int)threadIdx.x % WKC_ROW_LANES, w = (int)threadIdx.x / WKC_ROW_LANES;
    const int64_t units = p.nbatch * p.Hkv * p.Lk * p.ndkv;
    for (int64_t u = (int64_t)blockIdx.x * WKC_ROW_WARPS + w; u < units; u += (int64_t)gridDim.x * WKC_ROW_WARPS) {
        const int64_t dc = u % p.ndkv;
        const AbK K = ab_kvrow(p, u / p.ndkv);
        C ak[GR_NA], av[GR_NA];
        WKC_UNROLL
        for (int a = 0; a < GR_NA; a++) ak[a] = av[a] = 0;
        for (int64_t gq = 0; gq < p.group; gq++) {
            const int64_t h = K.hk * p.group + gq, qrow0 = (K.b * p.Hq + h) * p.Lq;
            const AbQ H = ab_head(p, K.b, h);
            const int64_t qend = ab_qend(p, K.j);
            for (int64_t t0 = ab_qstart(p, K.j); t0 < qend; t0 += WKC_ROW_LANES) {
                C a, b;
                A::kv_pds(p, qrow0, H, K.kb, K.vb, K.j, t0, qend, lane, &a, &b);
                pr[w][lane] = a;
                ds[w][lane] = b;
                __syncwarp();
                int tn = qend - t0 < WKC_ROW_LANES ? (int)(qend - t0) : WKC_ROW_LANES;
                A::kv_accum(p, H, dc, pr[w], ds[w], tn, t0, lane, ak, av);
                __syncwarp();
            }
        }
        A::kv_finish(p, K.kvrow, dc, lane, ak, av);
    }
}

template <int DT> int ab_t(wk_cu_stream s, const AbP &p) {
    typedef typename wkc_t<DT>::C C;
    typedef Ab<DT> A;
#ifdef WKC_HOST_EMULATION
    (void)s;
    const int64_t uq = p.nbatch * p.Hq * p.Lq * p.ndq;
    for (int64_t u = 0; u < uq; u++) {
        const int64_t dc = u % p.ndq;
        const AbQ U = ab_qrow(p, u / p.ndq);
        const int64_t kend = ab_kend(p, U.i), kbeg = ab_kbeg(p, U.i);
        C sc[WKC_ROW_LANES], m[WKC_ROW_LANES], l[WKC_ROW_LANES], acc[WKC_ROW_LANES][GR_NA];
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) {
            m[lane] = row_ninf<C>();
            l[lane] = 0;
            for (int a = 0; a < GR_NA; a++) acc[lane][a] = 0;
        }
        for (int64_t t0 = kbeg; t0 < kend; t0 += WKC_ROW_LANES) {
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) sc[lane] = A::q_score(p, U, t0, kend, lane);
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) A::q_online(sc, m[lane], l[lane]);
        }
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) sc[lane] = A::q_delta_part(p, U, lane);
        C delta = 0;
        for (int j = 0; j < WKC_ROW_LANES; j++) delta += sc[j];
        const C lse = A::q_lse(m[0], l[0]);
        for (int64_t t0 = kbeg; t0 < kend; t0 += WKC_ROW_LANES) {
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) sc[lane] = A::q_ds(p, U, t0, kend, lane, A::q_lse(m[lane], l[lane]), delta);
            int jn = kend - t0 < WKC_ROW_LANES ? (int)(kend - t0) : WKC_ROW_LANES;
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) A::q_accum(p, U, dc, sc, jn, t0, lane, acc[lane]);
        }
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) A::q_finish(p, U, dc, lane, acc[lane], lse, delta);
    }
    const int64_t ukv = p.nbatch * p.Hkv * p.Lk * p.ndkv;
    for (int64_t u = 0; u < ukv; u++) {
        const int64_t dc = u % p.ndkv;
        const AbK K = ab_kvrow(p, u / p.ndkv);
        C pr[WKC_ROW_LANES], ds[WKC_ROW_LANES], ak[WKC_ROW_LANES][GR_NA], av[WKC_ROW_LANES][GR_NA];
        for (int lane = 0; lane < WKC_ROW_LANES; lane++)
            for (int a = 0; a < GR_NA; a++) ak[lane][a] = av[lane][a] = 0;
        for (int64_t gq = 0; gq < p.group; gq++) {
            const int64_t h = K.hk * p.group + gq, qrow0 = (K.b * p.Hq + h) * p.Lq;
            const AbQ H = ab_head(p, K.b, h);
            const int64_t qend = ab_qend(p, K.j);
            for (int64_t t0 = ab_qstart(p, K.j); t0 < qend; t0 += WKC_ROW_LANES) {
                for (int lane = 0; lane < WKC_ROW_LANES; lane++)
                    A::kv_pds(p, qrow0, H, K.kb, K.vb, K.j, t0, qend, lane, &pr[lane], &ds[lane]);
                int tn = qend - t0 < WKC_ROW_LANES ? (int)(qend - t0) : WKC_ROW_LANES;
                for (int lane = 0; lane < WKC_ROW_LANES; lane++) A::kv_accum(p, H, dc, pr, ds, tn, t0, lane, ak[lane], av[lane]);
            }
        }
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) A::kv_finish(p, K.kvrow, dc, lane, ak[lane], av[lane]);
    }
    return 0;
#else
    const int64_t uq = p.nbatch * p.Hq * p.Lq * p.ndq, ukv = p.nbatch * p.Hkv * p.Lk * p.ndkv;
    AbP copy = p;
    void *args[] = {&copy};
    int rc = 0;
    if (uq > 0) {
        int64_t blocks = (uq + WKC_ROW_WARPS - 1) / WKC_ROW_WARPS;
        if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
        void (*k1)(const AbP) = ab_q_kernel<DT>;
        rc = (int)cudaLaunchKernel((const void *)k1, dim3((unsigned)blocks), dim3(WKC_ROW_LANES * WKC_ROW_WARPS), args, 0,
                                   (cudaStream_t)s);
        if (rc != 0) return rc;
    }
    if (ukv > 0) {
        int64_t blocks = (ukv + WKC_ROW_WARPS - 1) / WKC_ROW_WARPS;
        if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
        void (*k2)(const AbP) = ab_kv_kernel<DT>;
        rc = (int)cudaLaunchKernel((const void *)k2, dim3((unsigned)blocks), dim3(WKC_ROW_LANES * WKC_ROW_WARPS), args, 0,
                                   (cudaStream_t)s);
    }
    return rc;
#endif
}

/* ---- optimizer step: one item per element ---- */

struct OptP {
    int32_t kind, nesterov, first_step, has_m, has_v;
    double lr, wd, momentum, dampening, beta1, beta2, eps, bc1, bc2;
    void *param, *m, *v;
    const void *grad;
};

template <int DT> struct OptItem {
    typedef typename wkc_t<DT>::C C;
    static WKC_HD void item(const OptP &p, int64_t i) {
        typedef wkc_t<DT> T;
        C w = T::load(p.param, i), g = T::load(p.grad, i);
        if (p.kind == WK_OPTIM_SGD) {
            if (p.wd != 0) g = g + (C)p.wd * w;
            if (p.momentum != 0 && p.has_m) {
                C buf = p.first_step ? g : (C)p.momentum * T::load(p.m, i) + (C)(1 - p.dampening) * g;
                T::store(p.m, i, buf);
                g = p.nesterov ? g + (C)p.momentum * buf : buf;
            }
            T::store(p.param, i, w - (C)p.lr * g);
            return;
        }
        if (p.kind == WK_OPTIM_ADAMW) w = w * (C)(1 - p.lr * p.wd);
        else if (p.wd != 0) g = g + (C)p.wd * w;
        /* torch.optim's forms (m.lerp_(g, 1 - beta1), v * beta2 + (1 - beta2) g^2),
         * as the CPU's entry: trajectories agree to rounding */
        const C m0 = T::load(p.m, i);
        C m = m0 + (C)(1 - p.beta1) * (g - m0);
        C v = T::load(p.v, i) * (C)p.beta2 + (C)(1 - p.beta2) * g * g;
        T::store(p.m, i, m);
        T::store(p.v, i, v);
        /* PyTorch's form: p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps) */
        C den = row_sqrt(v) / (C)sqrt(p.bc2) + (C)p.eps;
        T::store(p.param, i, w - (C)(p.lr / p.bc1) * (m / den));
    }
};

} // namespace


extern "C" int wk__cu_softmax_backward(wk_cu_stream s, const void *y, wk_cu_view ly, const void *g, wk_cu_view lg,
                                       wk_dtype dt, int dim, bool logp, void *dx) {
    if (!view_ok(ly) || !view_same_shape(ly, lg) || dim < 0 || dim >= ly.rank) return WKC_BAD_ARG;
    SmbP p;
    memset(&p, 0, sizeof p);
    int64_t rows2;
    p.ry = row_view(ly, dim, &p.rows);
    p.rg = row_view(lg, dim, &rows2);
    p.n = ly.shape[dim];
    p.sty = ly.stride[dim];
    p.stg = lg.stride[dim];
    p.inner = 1;
    for (int d = dim + 1; d < ly.rank; d++) p.inner *= ly.shape[d];
    p.logp = logp;
    p.y = y;
    p.g = g;
    p.dx = dx;
    if (compute_size(dt) == 0) return WKC_BAD_ARG;
    if (p.n == 0 || p.rows == 0) return 0;
#define SMB_CALL(DT) return launch_rows<SmbF<DT>>(s, p)
    WKC_FLOAT_DISPATCH(dt, SMB_CALL);
#undef SMB_CALL
}

extern "C" size_t wk__cu_norm_backward_workspace(wk_cu_view lx, wk_dtype dt, bool want_dw_db) {
    if (!want_dw_db || !view_ok(lx) || lx.rank < 1) return 0;
    return (size_t)(view_numel(lx) / (lx.shape[lx.rank - 1] > 0 ? lx.shape[lx.rank - 1] : 1)) * 2 *
           (size_t)compute_size(dt);
}

extern "C" int wk__cu_norm_backward(wk_cu_stream s, const void *x, wk_cu_view lx, const void *w, wk_cu_view lw,
                                    const void *g, wk_cu_view lg, wk_dtype dt, double eps, bool rms, void *dx,
                                    void *dw, void *db, void *ws) {
    if (!view_ok(lx) || lx.rank < 1 || !view_same_shape(lx, lg) || compute_size(dt) == 0) return WKC_BAD_ARG;
    if (rms && db) return WKC_BAD_ARG;
    NbP p;
    memset(&p, 0, sizeof p);
    int64_t rows2;
    p.rx = row_view(lx, lx.rank - 1, &p.rows);
    p.rg = row_view(lg, lg.rank - 1, &rows2);
    p.n = lx.shape[lx.rank - 1];
    p.stx = lx.stride[lx.rank - 1];
    p.stg = lg.stride[lg.rank - 1];
    if (w) {
        if (lw.rank != 1 || lw.shape[0] != p.n) return WKC_BAD_ARG;
        p.has_w = 1;
        p.woff = lw.offset;
        p.wst = lw.stride[0];
    }
    p.rms = rms;
    p.want_dx = dx != NULL;
    p.eps = eps;
    p.x = x;
    p.w = w;
    p.g = g;
    p.dx = dx;
    p.dw = dw;
    p.db = db;
    p.ws = (dw || db) ? ws : NULL;
    if (p.n == 0) return 0;
    if ((dw || db) && !ws && p.rows > 0) return WKC_BAD_ARG;
#define NB_CALL(DT) return nb_t<DT>(s, p, dw || db)
    WKC_FLOAT_DISPATCH(dt, NB_CALL);
#undef NB_CALL
}

extern "C" size_t wk__cu_attention_backward_workspace(wk_cu_view lq, wk_dtype dt) {
    if (!view_ok(lq) || lq.rank < 2) return 0;
    int64_t rows = 1;
    for (int d = 0; d < lq.rank - 1; d++) rows *= lq.shape[d];
    return (size_t)rows * 2 * (size_t)compute_size(dt);
}

extern "C" int wk__cu_attention_backward(wk_cu_stream s, const void *q, wk_cu_view lq, const void *k, wk_cu_view lk,
                                         const void *v, wk_cu_view lv, const void *mask, wk_cu_view lm,
                                         const void *o, wk_cu_view lo, const void *g, wk_cu_view lg, wk_dtype dt,
                                         wk_cu_attn_args a, void *ws, void *dq, void *dk, void *dv) {
    const int r = lq.rank;
    if (!view_ok(lq) || !view_ok(lk) || !view_ok(lv) || !view_ok(lo) || !view_ok(lg) || r < 2 ||
        lk.rank != r || lv.rank != r || a.group < 1 || a.q_offset < 0 || a.window < 0 || !(a.softcap >= 0) ||
        compute_size(dt) == 0)
        return WKC_BAD_ARG;
    if (r == 2 && a.group != 1) return WKC_BAD_ARG;
    if (mask && (!view_ok(lm) || lm.rank != r)) return WKC_BAD_ARG;
    AbP p;
    memset(&p, 0, sizeof p);
    p.D = lq.shape[r - 1];
    p.Lq = lq.shape[r - 2];
    p.Lk = lk.shape[r - 2];
    p.Dv = lv.shape[r - 1];
    if (lk.shape[r - 1] != p.D || lv.shape[r - 2] != p.Lk) return WKC_BAD_ARG;
    if (!view_same_shape(lo, lg) || lo.rank != r || lo.shape[r - 2] != p.Lq || lo.shape[r - 1] != p.Dv)
        return WKC_BAD_ARG;
    if (mask && (lm.shape[r - 2] != p.Lq || lm.shape[r - 1] != p.Lk)) return WKC_BAD_ARG;
    p.nb = r >= 3 ? r - 3 : 0;
    p.nbatch = 1;
    for (int d = 0; d < p.nb; d++) {
        if (lk.shape[d] != lq.shape[d] || lv.shape[d] != lq.shape[d] || lo.shape[d] != lq.shape[d] ||
            (mask && lm.shape[d] != lq.shape[d]))
            return WKC_BAD_ARG;
        p.bshape[d] = lq.shape[d];
        p.nbatch *= lq.shape[d];
        p.qbs[d] = lq.stride[d];
        p.kbs[d] = lk.stride[d];
        p.vbs[d] = lv.stride[d];
        p.mbs[d] = mask ? lm.stride[d] : 0;
        p.obs[d] = lo.stride[d];
        p.gbs[d] = lg.stride[d];
    }
    p.Hq = 1;
    p.Hkv = 1;
    if (r >= 3) {
        const int h = r - 3;
        p.Hq = lq.shape[h];
        p.Hkv = lk.shape[h];
        if (lv.shape[h] != p.Hkv || p.Hkv * a.group != p.Hq || lo.shape[h] != p.Hq || (mask && lm.shape[h] != p.Hq))
            return WKC_BAD_ARG;
        p.qh = lq.stride[h];
        p.kh = lk.stride[h];
        p.vh = lv.stride[h];
        p.mh = mask ? lm.stride[h] : 0;
        p.oh = lo.stride[h];
        p.gh = lg.stride[h];
    }
    p.qi = lq.stride[r - 2];
    p.qd = lq.stride[r - 1];
    p.ki = lk.stride[r - 2];
    p.kd = lk.stride[r - 1];
    p.vi = lv.stride[r - 2];
    p.vd = lv.stride[r - 1];
    p.mi = mask ? lm.stride[r - 2] : 0;
    p.mj = mask ? lm.stride[r - 1] : 0;
    p.oi = lo.stride[r - 2];
    p.od = lo.stride[r - 1];
    p.gi = lg.stride[r - 2];
    p.gd = lg.stride[r - 1];
    p.qoff = lq.offset;
    p.koff = lk.offset;
    p.voff = lv.offset;
    p.moff = mask ? lm.offset : 0;
    p.ooff = lo.offset;
    p.goff = lg.offset;
    p.ndq = p.D > GR_DC ? (p.D + GR_DC - 1) / GR_DC : 1;
    const int64_t dmax = p.D > p.Dv ? p.D : p.Dv;
    p.ndkv = dmax > GR_DC ? (dmax + GR_DC - 1) / GR_DC : 1;
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
    p.o = o;
    p.g = g;
    p.dq = dq;
    p.dk = dk;
    p.dv = dv;
    p.ws = ws;
    if (p.nbatch * p.Hq * p.Lq == 0 && p.nbatch * p.Hkv * p.Lk == 0) return 0;
    if (!ws && p.nbatch * p.Hq * p.Lq > 0) return WKC_BAD_ARG;
#define AB_CALL(DT) return ab_t<DT>(s, p)
    WKC_FLOAT_DISPATCH(dt, AB_CALL);
#undef AB_CALL
}

extern "C" int wk__cu_optim_step(wk_cu_stream s, const wk_optim_args *a, void *param, const void *grad, void *m,
                                 void *v, int64_t n, wk_dtype dt) {
    if (!a || n < 0 || compute_size(dt) == 0) return WKC_BAD_ARG;
    if ((a->kind == WK_OPTIM_ADAM || a->kind == WK_OPTIM_ADAMW) && (!m || !v)) return WKC_BAD_ARG;
    if (a->kind == WK_OPTIM_SGD && a->momentum != 0 && !m) return WKC_BAD_ARG;
    OptP p;
    memset(&p, 0, sizeof p);
    p.kind = (int32_t)a->kind;
    p.nesterov = a->nesterov;
    p.first_step = a->first_step;
    p.has_m = m != NULL;
    p.has_v = v != NULL;
    p.lr = a->lr;
    p.wd = a->weight_decay;
    p.momentum = a->momentum;
    p.dampening = a->dampening;
    p.beta1 = a->beta1;
    p.beta2 = a->beta2;
    p.eps = a->eps;
    p.bc1 = a->bias_correction1;
    p.bc2 = a->bias_correction2;
    p.param = param;
    p.grad = grad;
    p.m = m;
    p.v = v;
    if (n == 0) return 0;
#define OPT_CALL(DT) return wkc_launch_items<OptItem<DT>>(s, p, n)
    WKC_FLOAT_DISPATCH(dt, OPT_CALL);
#undef OPT_CALL
}
