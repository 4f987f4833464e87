// The autograd kernels (src/cuda/nn/kernels_grad.cu, the pooling ones in
// src/cuda/conv/kernels_pool_backward.cu) in host emulation, each
// against a plain f64 reference written here: softmax / log_softmax
// backward along every dim of strided views (the contract's formula);
// rms / layer norm backward with and without weight (and bias), dx, dw, db
// against central finite differences of an f64 forward; attention backward
// (dq, dk, dv) against finite differences of an f64 attention: plain,
// causal with q_offset, GQA (groups 2 and 4), additive masks broadcast
// with -inf entries, permuted q / k / v, several 32-row tiles, D = 300
// (two dim chunks), rank 2; every optimizer over several steps (SGD plain,
// momentum with dampening, nesterov, weight decay; Adam with weight decay;
// AdamW), each step against an f64 step from the kernel's own state; max /
// avg pool backward (stride != kernel, padding, ties, count_include_pad
// both ways) against an f64 scatter; nearest / bilinear upsample backward
// (up and down, align_corners both ways) against an f64 scatter through
// the forward's index rules, and in f64 the adjoint identity with the real
// forward kernel (kernels_pool.cu). Every float dtype; tolerances per dtype
// relative to max(1, max |expected|). Then the launchers' refusals.
// Shown to fail (each mutant of kernels_grad.cu compiled against this file,
// 4 to 45 failing checks each): log_softmax's exp(y) dropped, layer norm's
// mean(gw) term dropped, the causal start of the dk / dv walk off by one,
// GQA's kv head h % Hkv instead of h / group, nesterov ignored, AdamW's
// decay ignored, max pool's last maximum instead of the first, a bilinear
// weight lost where both taps hit one cell, a pooling window's last output
// missed, the avg divisor rule inverted, the online sum scaled by 1.001.
#define WKC_HOST_EMULATION 1
#include "cuda/nn/kernels_grad.cu"
#include "cuda/conv/kernels_pool.cu"
#include "cuda/conv/kernels_pool_backward.cu"
#define EMU_RND_SEED 0xBB67AE8584CAA73Bull
#include "emu_harness.cuh"
#include <algorithm>

static const int FDT[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_F8E4M3};
static const int NFDT = 5;

static double tol_of(int dt) {
    switch (dt) {
    case WK_F64: return 1e-6; /* the finite differences' own error */
    case WK_F32: return 1e-4;
    case WK_F16: return 4 * 0x1p-10;
    case WK_BF16: return 4 * 0x1p-7;
    default: return 4 * 0x1p-3;
    }
}

typedef std::vector<double> Vec;

/* A test tensor: a view (dims stored in `order`, padded, offset) over a
 * Buf, and its logical values (row-major) as stored (rounded to dt). */
struct Ten {
    wk_layout l;
    Buf b;
    Vec v;
    int dt;
};
static void fill_view(Ten &t, const Vec &vals) {
    int64_t idx[WK_MAX_RANK];
    t.v.assign(vals.size(), 0);
    for (size_t i = 0; i < vals.size(); i++) {
        int64_t r = (int64_t)i;
        for (int d = t.l.rank - 1; d >= 0; d--) {
            idx[d] = r % t.l.shape[d];
            r /= t.l.shape[d];
        }
        int64_t o = t.l.offset;
        for (int d = 0; d < t.l.rank; d++) o += idx[d] * t.l.stride[d];
        wkc_store_f64(t.b.data(), o, t.dt, vals[i]);
        t.v[i] = wkc_load_f64(t.b.data(), o, t.dt);
    }
}
/* order: storage order of the dims (outermost first; NULL: row-major) */
static Ten mk_view(const int64_t *shape, int rank, int dt, const int *order, int64_t pad, int64_t off) {
    Ten t;
    t.dt = dt;
    t.l = emu_layout(shape, rank);
    int64_t st = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int d = order ? order[i] : i;
        t.l.stride[d] = st;
        st *= shape[d] + pad;
    }
    t.l.offset = off;
    t.b = Buf((size_t)(emu_need(t.l) + 1) * wkc_size(dt));
    return t;
}
static Vec rnd_vec(int64_t n, double lo, double hi) {
    Vec v((size_t)n);
    for (int64_t i = 0; i < n; i++) v[(size_t)i] = lo + (hi - lo) * (double)(rnd() % 1000001) / 1000000.0;
    return v;
}
static Ten mk(const int64_t *shape, int rank, int dt, const int *order, int64_t pad, int64_t off, double lo,
              double hi) {
    Ten t = mk_view(shape, rank, dt, order, pad, off);
    fill_view(t, rnd_vec(numel(t.l), lo, hi));
    return t;
}
static Buf out_buf(int64_t n, int dt) { return Buf((size_t)(n > 0 ? n : 1) * wkc_size(dt)); }
static double ldb(const Buf &b, int64_t i, int dt) { return wkc_load_f64(b.data(), i, dt); }

/* got (contiguous dt) vs want: max error relative to max(1, max |want|) */
static bool close_all(const Buf &got, const Vec &want, int dt, double tol, double *err_out) {
    double scale = 1, err = 0;
    for (double w : want) scale = fabs(w) > scale ? fabs(w) : scale;
    for (size_t i = 0; i < want.size(); i++) {
        double g = ldb(got, (int64_t)i, dt);
        double e = fabs(g - want[i]);
        if (!(e <= err)) err = e; /* NaN too */
    }
    *err_out = err / scale;
    return err <= tol * scale;
}

/* central finite differences of sum(g * F(x)) along every element of x */
template <class Fn> static Vec fd_vjp(Fn F, Vec &x, const Vec &g) {
    Vec d(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        const double x0 = x[i], h = 1e-6 * (1 + fabs(x0));
        x[i] = x0 + h;
        Vec a = F();
        x[i] = x0 - h;
        Vec b = F();
        x[i] = x0;
        double s = 0;
        for (size_t j = 0; j < g.size(); j++) s += g[j] * (a[j] - b[j]);
        d[i] = s / (2 * h);
    }
    return d;
}

/* ---------------- softmax ---------------- */

static void check_softmax(int dt, const int64_t *shape, int rank, int dim, bool logp, const int *order, int64_t pad) {
    Ten x = mk(shape, rank, WK_F64, nullptr, 0, 0, -3, 3);
    int64_t n = numel(x.l), len = shape[dim], inner = 1;
    for (int d = dim + 1; d < rank; d++) inner *= shape[d];
    Vec y(n);
    for (int64_t r = 0; r < n / len; r++) {
        int64_t base = r / inner * len * inner + r % inner;
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < len; k++) m = fmax(m, x.v[base + k * inner]);
        for (int64_t k = 0; k < len; k++) s += exp(x.v[base + k * inner] - m);
        for (int64_t k = 0; k < len; k++) {
            double e = x.v[base + k * inner] - m;
            y[base + k * inner] = logp ? e - log(s) : exp(e) / s;
        }
    }
    Ten ty = mk_view(shape, rank, dt, order, pad, 3);
    fill_view(ty, y);
    Ten tg = mk(shape, rank, dt, nullptr, pad, 1, -1, 1);
    Vec want(n);
    for (int64_t r = 0; r < n / len; r++) {
        int64_t base = r / inner * len * inner + r % inner;
        double s = 0;
        for (int64_t k = 0; k < len; k++) {
            int64_t i = base + k * inner;
            s += logp ? tg.v[i] : tg.v[i] * ty.v[i];
        }
        for (int64_t k = 0; k < len; k++) {
            int64_t i = base + k * inner;
            want[i] = logp ? tg.v[i] - exp(ty.v[i]) * s : ty.v[i] * (tg.v[i] - s);
        }
    }
    Buf dx = out_buf(n, dt);
    int rc = wk__cu_softmax_backward(nullptr, ty.b.data(), cv(ty.l), tg.b.data(), cv(tg.l), (wk_dtype)dt, dim, logp,
                                     dx.data());
    double err;
    CHECK(rc == 0 && close_all(dx, want, dt, dt == WK_F64 ? 1e-12 : tol_of(dt), &err),
          "softmax_backward %s dim %d logp %d rank %d len %lld: rc %d err %g", dtn(dt), dim, logp, rank,
          (long long)len, rc, err);
}

static void test_softmax() {
    int64_t s3[3] = {3, 5, 70}, s1[1] = {1};
    int ord[3] = {2, 0, 1};
    for (int di = 0; di < NFDT; di++)
        for (int dim = 0; dim < 3; dim++)
            for (int lp = 0; lp < 2; lp++) {
                check_softmax(FDT[di], s3, 3, dim, lp, nullptr, 0);
                check_softmax(FDT[di], s3, 3, dim, lp, ord, 2);
            }
    check_softmax(WK_F32, s1, 1, 0, false, nullptr, 0);
    check_softmax(WK_F32, s1, 1, 0, true, nullptr, 0);
}

/* ---------------- norms ---------------- */

static Vec norm_fwd(const Vec &x, const Vec *w, const Vec *b, int64_t rows, int64_t D, bool rms, double eps) {
    Vec y(x.size());
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = &x[r * D];
        double mu = 0, var = 0;
        if (!rms) {
            for (int64_t k = 0; k < D; k++) mu += xr[k];
            mu /= D;
        }
        for (int64_t k = 0; k < D; k++) var += (xr[k] - mu) * (xr[k] - mu);
        var /= D;
        for (int64_t k = 0; k < D; k++) {
            double v = (xr[k] - mu) / sqrt(var + eps);
            if (w) v *= (*w)[k];
            if (b) v += (*b)[k];
            y[r * D + k] = v;
        }
    }
    return y;
}

static void check_norm(int dt, bool rms, bool has_w, bool has_b, bool want_dx, int64_t rows0, int64_t D) {
    const double eps = 1e-5;
    int64_t xs[3] = {2, rows0, D}, ws[1] = {D};
    int ord[3] = {1, 0, 2};
    Ten x = mk(xs, 3, dt, ord, 1, 2, -2, 2);
    Ten g = mk(xs, 3, dt, nullptr, 0, 0, -1, 1);
    Ten w = mk(ws, 1, dt, nullptr, 2, 1, 0.5, 1.5);
    w.l.stride[0] = 2; /* a strided weight */
    w.b = Buf((size_t)(2 * D + 4) * wkc_size(dt));
    fill_view(w, rnd_vec(D, 0.5, 1.5));
    Ten b = mk(ws, 1, dt, nullptr, 0, 0, -1, 1);
    const int64_t rows = 2 * rows0;
    Vec xv = x.v, wv = w.v, bv = b.v;
    auto F = [&]() { return norm_fwd(xv, has_w ? &wv : nullptr, has_b ? &bv : nullptr, rows, D, rms, eps); };
    Vec wdx = fd_vjp(F, xv, g.v), wdw = fd_vjp(F, wv, g.v), wdb = fd_vjp(F, bv, g.v);
    Buf dx = out_buf(rows * D, dt), dw = out_buf(D, dt), db = out_buf(D, dt);
    size_t wsn = wk__cu_norm_backward_workspace(cv(x.l), (wk_dtype)dt, true);
    Buf wsb(wsn + 8);
    /* dw / db asked for the parameters the model has */
    const bool want_db = !rms && has_b;
    int rc = wk__cu_norm_backward(nullptr, x.b.data(), cv(x.l), has_w ? w.b.data() : nullptr, cv(w.l), g.b.data(),
                                  cv(g.l), (wk_dtype)dt, eps, rms, want_dx ? dx.data() : nullptr,
                                  has_w ? dw.data() : nullptr, want_db ? db.data() : nullptr, wsb.data());
    double e1 = 0, e2 = 0, e3 = 0;
    bool ok = rc == 0 && (!want_dx || close_all(dx, wdx, dt, tol_of(dt), &e1)) &&
              (!has_w || close_all(dw, wdw, dt, tol_of(dt), &e2)) && (!want_db || close_all(db, wdb, dt, tol_of(dt), &e3));
    CHECK(ok, "norm_backward %s rms %d w %d b %d rows %lld D %lld: rc %d err dx %g dw %g db %g", dtn(dt), rms, has_w,
          has_b, (long long)rows, (long long)D, rc, e1, e2, e3);
    /* dx alone (no workspace) gives the same dx */
    if (want_dx) {
        Buf dx2 = out_buf(rows * D, dt);
        rc = wk__cu_norm_backward(nullptr, x.b.data(), cv(x.l), has_w ? w.b.data() : nullptr, cv(w.l), g.b.data(),
                                  cv(g.l), (wk_dtype)dt, eps, rms, dx2.data(), nullptr, nullptr, nullptr);
        CHECK(rc == 0 && memcmp(dx.data(), dx2.data(), (size_t)(rows * D) * wkc_size(dt)) == 0,
              "norm_backward dx only %s", dtn(dt));
    }
}

static void test_norms() {
    for (int di = 0; di < NFDT; di++)
        for (int rms = 0; rms < 2; rms++) {
            check_norm(FDT[di], rms, false, false, true, 3, 37);
            check_norm(FDT[di], rms, true, !rms, true, 2, 70);
        }
    check_norm(WK_F32, false, true, true, false, 5, 8);
    check_norm(WK_F32, false, false, true, true, 4, 33); /* bias without weight */
    check_norm(WK_BF16, false, false, true, true, 4, 33);
    check_norm(WK_F64, true, true, false, true, 1, 1);
}

/* ---------------- attention ---------------- */

struct AttCase {
    int64_t B, Hq, Hkv, Lq, Lk, D, Dv;
    bool causal;
    int64_t q_offset;
    int mask;   /* 0 none, 1 (Lq, Lk) broadcast, 2 (B, 1, Lq, Lk) broadcast over heads, with -inf */
    bool perm;  /* q / k / v stored as (B, L, H, D) */
    int rank;   /* 4, or 2 (B = H = 1) */
    int64_t window; /* > 0: keys with i + q_offset - j >= window masked */
    double softcap; /* > 0: scores capped by softcap * tanh(s / softcap) before the mask */
};

static void check_attention(const AttCase &c, int dt) {
    const int r = c.rank;
    int64_t qs[4] = {c.B, c.Hq, c.Lq, c.D}, ks[4] = {c.B, c.Hkv, c.Lk, c.D}, vs[4] = {c.B, c.Hkv, c.Lk, c.Dv};
    int64_t os[4] = {c.B, c.Hq, c.Lq, c.Dv}, ms[4] = {c.B, c.Hq, c.Lq, c.Lk};
    int perm[4] = {0, 2, 1, 3};
    const int64_t *Q = r == 4 ? qs : qs + 2, *K = r == 4 ? ks : ks + 2, *V = r == 4 ? vs : vs + 2;
    const int64_t *O = r == 4 ? os : os + 2, *M = r == 4 ? ms : ms + 2;
    const int *ord = c.perm && r == 4 ? perm : nullptr;
    Ten q = mk(Q, r, dt, ord, 0, 1, -1, 1), k = mk(K, r, dt, ord, 1, 0, -1, 1), v = mk(V, r, dt, ord, 0, 2, -1, 1);
    Ten m = mk_view(M, r, dt, nullptr, 0, 0);
    Vec mv((size_t)(c.B * c.Hq * c.Lq * c.Lk), 0);
    if (c.mask) {
        /* storage of the broadcast source, then 0 strides */
        int64_t src = c.mask == 1 ? c.Lq * c.Lk : c.B * c.Lq * c.Lk;
        Vec sv = rnd_vec(src, -1, 1);
        for (int64_t i = 0; i < src; i++)
            if (rnd() % 7 == 0 && (i % c.Lk) != 0) sv[i] = -INFINITY; /* key 0 stays visible */
        m.b = Buf((size_t)(src + 1) * wkc_size(dt));
        for (int64_t i = 0; i < src; i++) wkc_store_f64(m.b.data(), i, dt, sv[i]);
        for (int d = 0; d < r; d++) m.l.stride[d] = 0;
        m.l.offset = 0;
        m.l.stride[r - 1] = 1;
        m.l.stride[r - 2] = c.Lk;
        if (c.mask == 2 && r == 4) m.l.stride[0] = c.Lq * c.Lk;
        for (int64_t b = 0; b < c.B; b++)
            for (int64_t h = 0; h < c.Hq; h++)
                for (int64_t i = 0; i < c.Lq; i++)
                    for (int64_t j = 0; j < c.Lk; j++) {
                        int64_t o = (c.mask == 2 ? b * c.Lq * c.Lk : 0) + i * c.Lk + j;
                        mv[((b * c.Hq + h) * c.Lq + i) * c.Lk + j] = wkc_load_f64(m.b.data(), o, dt);
                    }
    }
    const double scale = 1.0 / sqrt((double)c.D + 0.5);
    const int64_t group = c.Hq / c.Hkv;
    Vec qv = q.v, kv = k.v, vv = v.v;
    auto F = [&]() {
        Vec o((size_t)(c.B * c.Hq * c.Lq * c.Dv), 0), s((size_t)c.Lk);
        for (int64_t b = 0; b < c.B; b++)
            for (int64_t h = 0; h < c.Hq; h++)
                for (int64_t i = 0; i < c.Lq; i++) {
                    const int64_t hk = h / group, qi = ((b * c.Hq + h) * c.Lq + i);
                    double mx = -INFINITY;
                    for (int64_t j = 0; j < c.Lk; j++) {
                        double t = 0;
                        for (int64_t d = 0; d < c.D; d++)
                            t += qv[qi * c.D + d] * kv[((b * c.Hkv + hk) * c.Lk + j) * c.D + d];
                        t = t * scale;
                        if (c.softcap > 0) t = c.softcap * tanh(t / c.softcap);
                        t += mv[qi * c.Lk + j];
                        if (c.causal && j > i + c.q_offset) t = -INFINITY;
                        if (c.window > 0 && i + c.q_offset - j >= c.window) t = -INFINITY;
                        s[j] = t;
                        mx = fmax(mx, t);
                    }
                    double sum = 0;
                    for (int64_t j = 0; j < c.Lk; j++) sum += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
                    for (int64_t j = 0; j < c.Lk; j++) {
                        double p = s[j] == -INFINITY ? 0 : exp(s[j] - mx) / sum;
                        for (int64_t d = 0; d < c.Dv; d++)
                            o[qi * c.Dv + d] += p * vv[((b * c.Hkv + hk) * c.Lk + j) * c.Dv + d];
                    }
                }
        return o;
    };
    Ten o = mk_view(O, r, dt, nullptr, 0, 0);
    fill_view(o, F());
    Ten g = mk(O, r, dt, ord, 1, 3, -1, 1);
    Vec wq = fd_vjp(F, qv, g.v), wk = fd_vjp(F, kv, g.v), wv = fd_vjp(F, vv, g.v);
    Buf dq = out_buf(numel(q.l), dt), dk = out_buf(numel(k.l), dt), dv = out_buf(numel(v.l), dt);
    Buf ws(wk__cu_attention_backward_workspace(cv(q.l), (wk_dtype)dt) + 8);
    wk_cu_attn_args a = {scale, c.causal, c.q_offset, group, c.window, c.softcap};
    int rc = wk__cu_attention_backward(nullptr, q.b.data(), cv(q.l), k.b.data(), cv(k.l), v.b.data(), cv(v.l),
                                       c.mask ? m.b.data() : nullptr, cv(m.l), o.b.data(), cv(o.l), g.b.data(),
                                       cv(g.l), (wk_dtype)dt, a, ws.data(), dq.data(), dk.data(), dv.data());
    double e1 = 0, e2 = 0, e3 = 0;
    const double tol = tol_of(dt) * (dt == WK_F64 || dt == WK_F32 ? 1 : 2);
    bool ok = rc == 0 && close_all(dq, wq, dt, tol, &e1) && close_all(dk, wk, dt, tol, &e2) &&
              close_all(dv, wv, dt, tol, &e3);
    CHECK(ok,
          "attention_backward %s B%lld Hq%lld Hkv%lld Lq%lld Lk%lld D%lld Dv%lld causal %d off %lld mask %d perm %d "
          "rank %d window %lld softcap %g: rc %d err dq %g dk %g dv %g",
          dtn(dt), (long long)c.B, (long long)c.Hq, (long long)c.Hkv, (long long)c.Lq, (long long)c.Lk,
          (long long)c.D, (long long)c.Dv, c.causal, (long long)c.q_offset, c.mask, c.perm, r, (long long)c.window,
          c.softcap, rc, e1, e2, e3);
}

static void test_attention() {
    const AttCase cases[] = {
        {1, 2, 2, 5, 7, 8, 6, false, 0, 0, false, 4},
        {2, 4, 2, 6, 6, 5, 7, true, 0, 1, false, 4},   /* GQA 2, causal, mask */
        {1, 4, 1, 3, 9, 4, 4, true, 6, 2, true, 4},    /* GQA 4, q_offset, per-batch mask, permuted */
        {1, 1, 1, 40, 45, 6, 5, true, 5, 0, false, 4}, /* several tiles both ways */
        {1, 1, 1, 4, 5, 3, 2, false, 0, 1, false, 2},  /* rank 2 */
        {1, 1, 1, 1, 1, 1, 1, false, 0, 0, false, 4},
        /* sliding window, soft-capping, both (window, softcap last) */
        {1, 2, 1, 40, 45, 4, 3, true, 5, 0, false, 4, 7, 0},       /* several tiles, window 7 */
        {1, 4, 2, 6, 9, 5, 4, true, 3, 1, true, 4, 3, 1.5},        /* GQA, mask, window 3, cap */
        {1, 2, 2, 5, 8, 4, 4, false, 2, 0, false, 4, 4, 0},        /* window without causal */
        {2, 2, 1, 4, 6, 3, 3, false, 0, 2, false, 4, 0, 0.7},      /* cap only */
        {1, 1, 1, 3, 6, 4, 4, true, 3, 0, false, 4, 1, 2.0},       /* window 1: the query's own key */
    };
    for (int di = 0; di < NFDT; di++)
        for (const AttCase &c : cases) check_attention(c, FDT[di]);
    const AttCase wide = {1, 1, 1, 3, 4, 300, 270, true, 1, 0, false, 4}; /* two dim chunks */
    check_attention(wide, WK_F32);
    check_attention(wide, WK_F64);
}

/* ---------------- optimizers ---------------- */

static void ref_step(const wk_optim_args &a, double &w, double g, double &m, double &v) {
    if (a.kind == WK_OPTIM_SGD) {
        g += a.weight_decay * w;
        if (a.momentum != 0) {
            m = a.first_step ? g : a.momentum * m + (1 - a.dampening) * g;
            g = a.nesterov ? g + a.momentum * m : m;
        }
        w -= a.lr * g;
        return;
    }
    if (a.kind == WK_OPTIM_ADAMW) w *= 1 - a.lr * a.weight_decay;
    else g += a.weight_decay * w;
    m = a.beta1 * m + (1 - a.beta1) * g;
    v = a.beta2 * v + (1 - a.beta2) * g * g;
    w -= a.lr / a.bias_correction1 * m / (sqrt(v) / sqrt(a.bias_correction2) + a.eps);
}

static void check_optim(int dt, wk_optim_kind kind, double mom, double damp, bool nest, double wd) {
    const int64_t n = 37;
    Buf w = out_buf(n, dt), m = out_buf(n, dt), v = out_buf(n, dt), g = out_buf(n, dt);
    for (int64_t i = 0; i < n; i++) {
        wkc_store_f64(w.data(), i, dt, -1 + 2.0 * (double)(rnd() % 1001) / 1000);
        wkc_store_f64(m.data(), i, dt, 0);
        wkc_store_f64(v.data(), i, dt, 0);
    }
    wk_optim_args a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.lr = 0.05;
    a.weight_decay = wd;
    a.momentum = mom;
    a.dampening = damp;
    a.nesterov = nest;
    a.beta1 = 0.9;
    a.beta2 = 0.999;
    a.eps = 1e-8;
    bool sgd_plain = kind == WK_OPTIM_SGD && mom == 0;
    for (int step = 1; step <= 4; step++) {
        for (int64_t i = 0; i < n; i++) wkc_store_f64(g.data(), i, dt, -1 + 2.0 * (double)(rnd() % 1001) / 1000);
        a.first_step = step == 1;
        a.bias_correction1 = 1 - pow(a.beta1, step);
        a.bias_correction2 = 1 - pow(a.beta2, step);
        Vec ww(n), wm(n), wv(n);
        for (int64_t i = 0; i < n; i++) {
            double wi = ldb(w, i, dt), mi = ldb(m, i, dt), vi = ldb(v, i, dt);
            ref_step(a, wi, ldb(g, i, dt), mi, vi);
            ww[i] = wi;
            wm[i] = mi;
            wv[i] = vi;
        }
        int rc = wk__cu_optim_step(nullptr, &a, w.data(), g.data(), sgd_plain ? nullptr : m.data(),
                                   kind == WK_OPTIM_SGD ? nullptr : v.data(), n, (wk_dtype)dt);
        const double tol = dt == WK_F64 ? 1e-13 : tol_of(dt);
        double e1 = 0, e2 = 0, e3 = 0;
        bool ok = rc == 0 && close_all(w, ww, dt, tol, &e1) && (sgd_plain || close_all(m, wm, dt, tol, &e2)) &&
                  (kind == WK_OPTIM_SGD || close_all(v, wv, dt, tol, &e3));
        CHECK(ok, "optim %s kind %d mom %g damp %g nest %d wd %g step %d: rc %d err %g %g %g", dtn(dt), (int)kind, mom,
              damp, nest, wd, step, rc, e1, e2, e3);
    }
}

static void test_optim() {
    for (int di = 0; di < NFDT; di++) {
        int dt = FDT[di];
        check_optim(dt, WK_OPTIM_SGD, 0, 0, false, 0);
        check_optim(dt, WK_OPTIM_SGD, 0, 0, false, 0.1);
        check_optim(dt, WK_OPTIM_SGD, 0.9, 0.3, false, 0.01);
        check_optim(dt, WK_OPTIM_SGD, 0.9, 0, true, 0.05);
        /* Adam's second moment underflows f8e4m3 (g^2 / 1000 < its
         * smallest subnormal): no meaningful state in that dtype */
        if (dt == WK_F8E4M3) continue;
        check_optim(dt, WK_OPTIM_ADAM, 0, 0, false, 0);
        check_optim(dt, WK_OPTIM_ADAM, 0, 0, false, 0.1);
        check_optim(dt, WK_OPTIM_ADAMW, 0, 0, false, 0.1);
    }
}

/* ---------------- pool2d ---------------- */

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; }

static void check_pool(int dt, bool is_max, bool cip, int64_t H, int64_t W, const int64_t *k, const int64_t *s,
                       const int64_t *pd, bool ties) {
    wk_pool_params p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < 2; d++) {
        p.k[d] = k[d];
        p.s[d] = s[d];
        p.p[d] = pd[d];
    }
    p.is_max = is_max;
    p.count_include_pad = cip;
    const int64_t OH = pool_out(H, k[0], s[0], pd[0]), OW = pool_out(W, k[1], s[1], pd[1]);
    int64_t xs[4] = {2, 3, H, W}, gs[4] = {2, 3, OH, OW};
    int ord[4] = {1, 0, 3, 2};
    Ten x = mk_view(xs, 4, dt, ord, 1, 2);
    Vec xv = rnd_vec(numel(x.l), -2, 2);
    if (ties)
        for (double &e : xv) e = (double)(int)(e * 2) / 2; /* few values: many ties */
    fill_view(x, xv);
    Ten g = mk(gs, 4, dt, nullptr, 1, 1, -1, 1);
    Vec want((size_t)numel(x.l), 0);
    for (int64_t nc = 0; nc < 6; nc++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t h0 = oh * s[0] - pd[0], w0 = ow * s[1] - pd[1];
                int64_t h1 = std::min(h0 + k[0], H), w1 = std::min(w0 + k[1], W);
                h0 = std::max<int64_t>(h0, 0);
                w0 = std::max<int64_t>(w0, 0);
                double gv = g.v[(nc * OH + oh) * OW + ow];
                if (is_max) {
                    double mx = -INFINITY;
                    int64_t at = (nc * H + h0) * W + w0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            double e = x.v[(nc * H + ih) * W + iw];
                            if (e > mx || e != e) {
                                mx = e;
                                at = (nc * H + ih) * W + iw;
                            }
                        }
                    want[at] += gv;
                } else {
                    double div = cip ? (double)(k[0] * k[1]) : (double)((h1 - h0) * (w1 - w0));
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) want[(nc * H + ih) * W + iw] += gv / div;
                }
            }
    Buf dx = out_buf(numel(x.l), dt);
    int rc = wk__cu_pool2d_backward(nullptr, x.b.data(), cv(x.l), g.b.data(), cv(g.l), (wk_dtype)dt, &p, dx.data());
    double err;
    CHECK(rc == 0 && close_all(dx, want, dt, dt == WK_F64 ? 1e-12 : tol_of(dt), &err),
          "pool2d_backward %s max %d cip %d %lldx%lld k %lld,%lld s %lld,%lld p %lld,%lld: rc %d err %g", dtn(dt),
          is_max, cip, (long long)H, (long long)W, (long long)k[0], (long long)k[1], (long long)s[0], (long long)s[1],
          (long long)pd[0], (long long)pd[1], rc, err);
}

static void test_pool() {
    const int64_t k33[2] = {3, 3}, s22[2] = {2, 2}, p11[2] = {1, 1}, k23[2] = {2, 3}, s31[2] = {3, 1},
                  p10[2] = {1, 0}, k22[2] = {2, 2}, p00[2] = {0, 0}, s12[2] = {1, 2};
    for (int di = 0; di < NFDT; di++) {
        int dt = FDT[di];
        for (int mx = 0; mx < 2; mx++)
            for (int cip = 0; cip < 2; cip++) {
                check_pool(dt, mx, cip, 7, 9, k33, s22, p11, mx);
                check_pool(dt, mx, cip, 8, 5, k23, s31, p10, false);
            }
        check_pool(dt, true, false, 6, 6, k22, s22, p00, true);
        check_pool(dt, false, false, 5, 6, k33, s12, p11, false);
    }
}

/* ---------------- upsample2d ---------------- */

/* PyTorch's index rules in f64 (the forward's, as kernels_pool.cu states
 * them): nearest floor(o * (float)in / out) in f32 with the exact cases;
 * linear source (o + 0.5) * in / out - 0.5 clamped at 0, or o * (in - 1) /
 * (out - 1) with align_corners */
static int64_t ref_nearest(int64_t o, int64_t in, int64_t out) {
    if (out == in) return o;
    if (out == 2 * in) return o / 2;
    float f = floorf((float)o * ((float)in / (float)out));
    return f >= (float)(in - 1) ? in - 1 : (int64_t)f;
}
static void ref_linear(int64_t o, int64_t in, int64_t out, bool ac, int dt, int64_t *a, int64_t *b, double *w0,
                       double *w1) {
    if (in == out) {
        *a = *b = o;
        *w0 = 1;
        *w1 = 0;
        return;
    }
    double sc = dt == WK_F64 ? (ac ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0) : (double)in / (double)out)
                             : (double)(ac ? (out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f)
                                           : (float)in / (float)out);
    double src = ac ? sc * (double)o : fmax(sc * ((double)o + 0.5) - 0.5, 0.0);
    int64_t i0 = src >= (double)(in - 1) ? in - 1 : (int64_t)src;
    double f = fmin(fmax(src - (double)i0, 0.0), 1.0);
    *a = i0;
    *b = i0 < in - 1 ? i0 + 1 : i0;
    *w1 = dt == WK_F64 ? f : (double)(float)f;
    *w0 = dt == WK_F64 ? 1 - *w1 : (double)(1.0f - (float)*w1);
}

static void check_upsample(int dt, bool bil, bool ac, int64_t H, int64_t W, int64_t OH, int64_t OW) {
    int64_t xs[4] = {2, 2, H, W}, gs[4] = {2, 2, OH, OW};
    int ord[4] = {0, 1, 3, 2};
    Ten g = mk(gs, 4, dt, ord, 1, 3, -1, 1);
    Vec want((size_t)(4 * H * W), 0);
    for (int64_t nc = 0; nc < 4; nc++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double gv = g.v[(nc * OH + oh) * OW + ow];
                if (!bil) {
                    want[(nc * H + ref_nearest(oh, H, OH)) * W + ref_nearest(ow, W, OW)] += gv;
                    continue;
                }
                int64_t h0, h1, w0, w1;
                double lh0, lh1, lw0, lw1;
                ref_linear(oh, H, OH, ac, dt, &h0, &h1, &lh0, &lh1);
                ref_linear(ow, W, OW, ac, dt, &w0, &w1, &lw0, &lw1);
                want[(nc * H + h0) * W + w0] += gv * lh0 * lw0;
                want[(nc * H + h0) * W + w1] += gv * lh0 * lw1;
                want[(nc * H + h1) * W + w0] += gv * lh1 * lw0;
                want[(nc * H + h1) * W + w1] += gv * lh1 * lw1;
            }
    wk_layout ldx = emu_layout(xs, 4);
    emu_row_major(ldx, 0);
    Buf dx = out_buf(4 * H * W, dt);
    int rc = wk__cu_upsample2d_backward(nullptr, g.b.data(), cv(g.l), dx.data(), cv(ldx), (wk_dtype)dt, bil, ac);
    double err;
    CHECK(rc == 0 && close_all(dx, want, dt, dt == WK_F64 ? 1e-12 : tol_of(dt), &err),
          "upsample2d_backward %s bilinear %d ac %d %lldx%lld -> %lldx%lld: rc %d err %g", dtn(dt), bil, ac,
          (long long)H, (long long)W, (long long)OH, (long long)OW, rc, err);
    if (dt != WK_F64) return;
    /* adjoint: <up(x), g> == <x, up_backward(g)> with the real forward */
    Ten x = mk(xs, 4, WK_F64, nullptr, 0, 0, -1, 1);
    wk_layout lo = emu_layout(gs, 4);
    emu_row_major(lo, 0);
    Buf y = out_buf(4 * OH * OW, WK_F64);
    rc = wk__cu_upsample2d(nullptr, x.b.data(), cv(x.l), y.data(), cv(lo), WK_F64, bil, ac);
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < 4 * OH * OW; i++) lhs += ldb(y, i, WK_F64) * g.v[i];
    for (int64_t i = 0; i < 4 * H * W; i++) rhs += x.v[i] * ldb(dx, i, WK_F64);
    CHECK(rc == 0 && fabs(lhs - rhs) <= 1e-11 * (1 + fabs(lhs)), "upsample adjoint bilinear %d ac %d: %g vs %g", bil,
          ac, lhs, rhs);
}

static void test_upsample() {
    const int64_t sz[][4] = {{3, 4, 6, 8}, {3, 4, 7, 11}, {5, 7, 3, 4}, {4, 4, 4, 4}, {2, 3, 1, 1}, {1, 1, 3, 5},
                             {6, 5, 13, 2}};
    for (int di = 0; di < NFDT; di++)
        for (const auto &s : sz)
            for (int bil = 0; bil < 2; bil++)
                for (int ac = 0; ac < (bil ? 2 : 1); ac++) check_upsample(FDT[di], bil, ac, s[0], s[1], s[2], s[3]);
}

/* ---------------- refusals ---------------- */

static void test_refusals() {
    int64_t s2[2] = {3, 4}, s4[4] = {1, 2, 3, 4};
    wk_layout l2 = emu_layout(s2, 2), l4 = emu_layout(s4, 4);
    emu_row_major(l2, 0);
    emu_row_major(l4, 0);
    Buf b(4096);
    CHECK(wk__cu_softmax_backward(nullptr, b.data(), cv(l2), b.data(), cv(l2), WK_I32, 1, false, b.data()) ==
              WKC_BAD_ARG, "softmax_backward i32");
    CHECK(wk__cu_softmax_backward(nullptr, b.data(), cv(l2), b.data(), cv(l4), WK_F32, 1, false, b.data()) ==
              WKC_BAD_ARG, "softmax_backward shapes");
    CHECK(wk__cu_norm_backward(nullptr, b.data(), cv(l2), nullptr, cv(l2), b.data(), cv(l2), WK_F32, 1e-5, true,
                               b.data(), b.data(), nullptr, nullptr) == WKC_BAD_ARG, "norm dw without workspace");
    CHECK(wk__cu_norm_backward(nullptr, b.data(), cv(l2), nullptr, cv(l2), b.data(), cv(l2), WK_F32, 1e-5, true,
                               b.data(), nullptr, b.data(), b.data()) == WKC_BAD_ARG, "rms db");
    wk_optim_args a;
    memset(&a, 0, sizeof a);
    a.kind = WK_OPTIM_ADAM;
    CHECK(wk__cu_optim_step(nullptr, &a, b.data(), b.data(), b.data(), nullptr, 4, WK_F32) == WKC_BAD_ARG,
          "adam without v");
    CHECK(wk__cu_optim_step(nullptr, &a, b.data(), b.data(), b.data(), b.data(), 4, WK_Q4_0) == WKC_BAD_ARG,
          "optim q4_0");
    wk_pool_params p;
    memset(&p, 0, sizeof p);
    p.k[0] = p.k[1] = 2;
    p.s[0] = p.s[1] = 0;
    CHECK(wk__cu_pool2d_backward(nullptr, b.data(), cv(l4), b.data(), cv(l4), WK_F32, &p, b.data()) == WKC_BAD_ARG,
          "pool stride 0");
    CHECK(wk__cu_upsample2d_backward(nullptr, b.data(), cv(l2), b.data(), cv(l4), WK_F32, true, false) == WKC_BAD_ARG,
          "upsample rank 2");
    int64_t q[4] = {1, 3, 2, 4}, k[4] = {1, 2, 5, 4};
    wk_layout lq = emu_layout(q, 4), lk = emu_layout(k, 4);
    emu_row_major(lq, 0);
    emu_row_major(lk, 0);
    wk_cu_attn_args aa = {0.5, 0, 0, 2}; /* 3 heads are not 2 x 2 */
    CHECK(wk__cu_attention_backward(nullptr, b.data(), cv(lq), b.data(), cv(lk), b.data(), cv(lk), nullptr, cv(lq),
                                    b.data(), cv(lq), b.data(), cv(lq), WK_F32, aa, b.data(), b.data(), b.data(),
                                    b.data()) == WKC_BAD_ARG, "attention_backward group");
}

int main() {
    clock_t t0 = clock();
    test_softmax();
    test_norms();
    test_attention();
    test_optim();
    test_pool();
    test_upsample();
    test_refusals();
    return emu_summary(t0);
}
