// The fused nn kernels (src/cuda/nn/kernels_nn.cu) in host emulation, each
// against a plain f64 reference written here: softmax / log_softmax along
// every dim (rows shorter and longer than a warp, -inf, all -inf and NaN
// rows), rms_norm / layer_norm with and without weight / bias (strided),
// rope in its four layouts with strided cos / sin tables, swiglu, and
// attention: decode (Lq = 1, q_offset = Lk - 1) with k / v narrows of a
// bigger KV cache, causal prefill, GQA (groups 1, 3, 4), additive masks
// broadcast from (Lq, Lk) and (B, 1, Lq, Lk) with -inf entries and a fully
// masked row (NaN), q / k / v permuted from (B, T, H, D) storage, rank 2,
// D = 1, 3, 64, 80 and 300 (past the shared-memory q row), Dv = 300 (two
// output chunks), Lk = 0, each with 1 split, 3 splits and the launcher's own
// choice; then 60 random cases (all of these drawn at once, 1-6 splits).
// Every float dtype (the narrow ones compute in f32); tolerances
// per dtype relative to 1 + |expected|. Then the launchers' refusals.
// With -DGPU_MODE (managed buffers, a sync after each launch) the same file
// runs the real kernels.
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/nn/kernels_nn.cu"
#define EMU_RND_SEED 0x6A09E667F3BCC909ull
#include "emu_harness.cuh"

static const int FDT[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_F8E4M3};
static const int NFDT = 5;

/* |got - want| allowed per unit of 1 + |want|: the output's rounding for
 * the narrow floats (they compute in f32), accumulated rounding for f32 /
 * f64 */
static double tol_of(int dt) {
    switch (dt) {
    case WK_F64: return 1e-11;
    case WK_F32: return 3e-5;
    case WK_F16: return 1.5 * 0x1p-10;
    case WK_BF16: return 1.5 * 0x1p-7;
    default: return 1.5 * 0x1p-3;
    }
}

static bool close_to(double got, double want, double tol) {
    if (want != want) return got != got;
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* random values uniform in [lo, hi] stored in dt */
static Buf rnd_buf(int64_t n, int dt, double lo, double hi) {
    Buf b((size_t)(n > 0 ? n : 1) * wkc_size(dt));
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(rnd() % 1000001) / 1000000.0;
        wkc_store_f64(b.data(), i, dt, lo + (hi - lo) * u);
    }
    return b;
}
static inline double ld(const Buf &b, int64_t i, int dt) { return wkc_load_f64(b.data(), i, dt); }

/* A view of `shape` over storage whose dims are laid out in `order`
 * (outermost first), each padded by pad, at offset off. */
static wk_layout strided(const int64_t *shape, int rank, const int *order, int64_t pad, int64_t off) {
    wk_layout l = emu_layout(shape, rank);
    int64_t st = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int d = order ? order[i] : i;
        l.stride[d] = st;
        st *= shape[d] + pad;
    }
    l.offset = off;
    return l;
}
static int64_t off_of(const wk_layout &l, const int64_t *idx) {
    int64_t o = l.offset;
    for (int d = 0; d < l.rank; d++) o += idx[d] * l.stride[d];
    return o;
}
static void unravel(const int64_t *shape, int rank, int64_t i, int64_t *idx) {
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
}

/* ---------------- softmax ---------------- */

static void check_softmax(const int64_t *shape, int rank, int dim, const int *order, int64_t pad, int dt, bool logp,
                          int special) {
    wk_layout l = strided(shape, rank, order, pad, 3);
    int64_t n = numel(l), need = emu_need(l);
    Buf x = rnd_buf(need, dt, -6, 6);
    /* special 1: some -inf; 2: row 0 all -inf; 3: a NaN in row 0 */
    if (special && n > 0) {
        int64_t idx[WK_MAX_RANK] = {0};
        for (int64_t k = 0; k < shape[dim]; k++) {
            idx[dim] = k;
            if (special == 2 || (special == 1 && k % 3 == 1)) wkc_store_f64(x.data(), off_of(l, idx), dt, -INFINITY);
            if (special == 3 && k == shape[dim] / 2) wkc_store_f64(x.data(), off_of(l, idx), dt, NAN);
        }
    }
    Buf y((size_t)(n > 0 ? n : 1) * wkc_size(dt));
    int rc = wk__cu_softmax(nullptr, x.data(), cv(l), (wk_dtype)dt, dim, logp, y.data());
    SYNC();
    CHECK(rc == 0, "softmax rc %d", rc);
    int64_t idx[WK_MAX_RANK];
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        unravel(shape, rank, i, idx);
        int64_t keep = idx[dim];
        double m = -INFINITY;
        bool nan = false;
        for (int64_t k = 0; k < shape[dim]; k++) {
            idx[dim] = k;
            double v = ld(x, off_of(l, idx), dt);
            if (v != v) nan = true;
            if (v > m) m = v;
        }
        double s = 0;
        for (int64_t k = 0; k < shape[dim]; k++) {
            idx[dim] = k;
            s += exp(ld(x, off_of(l, idx), dt) - m);
        }
        idx[dim] = keep;
        double xv = ld(x, off_of(l, idx), dt);
        double want = logp ? (xv - m) - log(s) : exp(xv - m) / s;
        if (nan || m == -INFINITY) want = NAN;
        /* an -inf input: exp gives exactly 0, log_softmax -inf */
        double got = ld(y, i, dt);
        bool ok = close_to(got, want, tol_of(dt));
        if (!ok) bad++;
        CHECK(ok, "%s %s dim %d rank %d special %d elem %lld: got %.9g want %.9g", logp ? "log_softmax" : "softmax",
              dtn(dt), dim, rank, special, (long long)i, got, want);
    }
}

static void test_softmax() {
    static const int64_t s1[] = {3, 5}, s2[] = {2, 3, 4}, s3[] = {2, 70}, s4[] = {4, 1000}, s5[] = {1, 1};
    static const int tr2[] = {1, 0}, perm3[] = {2, 0, 1};
    for (int di = 0; di < NFDT; di++) {
        int dt = FDT[di];
        for (int lp = 0; lp < 2; lp++) {
            check_softmax(s1, 2, 1, nullptr, 0, dt, lp, 0);
            check_softmax(s1, 2, 0, tr2, 1, dt, lp, 0);
            for (int d = 0; d < 3; d++) check_softmax(s2, 3, d, perm3, 0, dt, lp, 0);
            check_softmax(s3, 2, 1, nullptr, 2, dt, lp, 1);
            check_softmax(s3, 2, 1, tr2, 0, dt, lp, 2);
            check_softmax(s3, 2, 1, nullptr, 0, dt, lp, 3);
            check_softmax(s4, 2, 1, tr2, 0, dt, lp, 0);
            check_softmax(s5, 2, 1, nullptr, 0, dt, lp, 0);
        }
    }
}

/* ---------------- norms ---------------- */

static void check_norm(const int64_t *shape, int rank, const int *order, int64_t pad, int dt, bool rms, bool has_w,
                       bool has_b, double eps) {
    wk_layout l = strided(shape, rank, order, pad, 1);
    int64_t n = numel(l), len = shape[rank - 1];
    Buf x = rnd_buf(emu_need(l), dt, -4, 4);
    /* weight / bias with stride 2 at an offset: a strided 1-D view */
    wk_layout lw = emu_layout(&len, 1), lb = lw;
    lw.stride[0] = 2;
    lw.offset = 1;
    lb.stride[0] = 3;
    Buf w = rnd_buf(2 * len + 2, dt, -2, 2), b = rnd_buf(3 * len + 1, dt, -1, 1);
    Buf y((size_t)(n > 0 ? n : 1) * wkc_size(dt));
    int rc = rms ? wk__cu_rms_norm(nullptr, x.data(), cv(l), has_w ? w.data() : nullptr, cv(lw), (wk_dtype)dt, eps,
                                   y.data())
                 : wk__cu_layer_norm(nullptr, x.data(), cv(l), has_w ? w.data() : nullptr, cv(lw),
                                     has_b ? b.data() : nullptr, cv(lb), (wk_dtype)dt, eps, y.data());
    SYNC();
    CHECK(rc == 0, "norm rc %d", rc);
    int64_t idx[WK_MAX_RANK];
    int bad = 0;
    for (int64_t r = 0; r < n / (len ? len : 1) && bad < 3; r++) {
        double mu = 0, var = 0;
        unravel(shape, rank, r * len, idx);
        for (int64_t k = 0; k < len; k++) {
            idx[rank - 1] = k;
            mu += ld(x, off_of(l, idx), dt);
        }
        mu /= (double)len;
        for (int64_t k = 0; k < len; k++) {
            idx[rank - 1] = k;
            double c = ld(x, off_of(l, idx), dt) - (rms ? 0 : mu);
            var += c * c;
        }
        var /= (double)len;
        for (int64_t k = 0; k < len; k++) {
            idx[rank - 1] = k;
            double want = (ld(x, off_of(l, idx), dt) - (rms ? 0 : mu)) / sqrt(var + eps);
            if (has_w) want *= ld(w, 1 + 2 * k, dt);
            if (has_b && !rms) want += ld(b, 3 * k, dt);
            double got = ld(y, r * len + k, dt);
            bool ok = close_to(got, want, tol_of(dt) * (dt == WK_F32 ? 2 : 1));
            if (!ok) bad++;
            CHECK(ok, "%s %s len %lld w %d b %d row %lld k %lld: got %.9g want %.9g", rms ? "rms_norm" : "layer_norm",
                  dtn(dt), (long long)len, has_w, has_b, (long long)r, (long long)k, got, want);
        }
    }
}

static void test_norms() {
    static const int64_t s1[] = {4, 16}, s2[] = {2, 3, 80}, s3[] = {3, 1}, s4[] = {5, 1000};
    static const int tr2[] = {1, 0}, perm3[] = {1, 2, 0};
    for (int di = 0; di < NFDT; di++) {
        int dt = FDT[di];
        for (int rms = 0; rms < 2; rms++)
            for (int wb = 0; wb < 4; wb++) {
                bool hw = wb & 1, hb = wb & 2;
                if (rms && hb) continue;
                check_norm(s1, 2, nullptr, 0, dt, rms, hw, hb, 1e-5);
                check_norm(s2, 3, perm3, 1, dt, rms, hw, hb, 1e-6);
                check_norm(s3, 2, nullptr, 0, dt, rms, hw, hb, 0.01);
                check_norm(s4, 2, tr2, 0, dt, rms, hw, hb, 1e-5);
            }
    }
}

/* ---------------- rope ---------------- */

static void check_rope(const int64_t *shape, const int *order, int dt, bool inter, bool thd, bool ctrans) {
    wk_layout l = strided(shape, 4, order, 1, 2);
    int64_t n = numel(l), T = shape[thd ? 1 : 2], h = shape[3] / 2;
    Buf x = rnd_buf(emu_need(l), dt, -2, 2);
    /* cos / sin: rows 3 .. 3+T of a (T + 5, h) table (a narrow), or the
     * transpose of a (h, T + 5) one */
    int64_t cs[2] = {T, h};
    wk_layout lc = emu_layout(cs, 2);
    if (ctrans) {
        lc.stride[0] = 1;
        lc.stride[1] = T + 5;
    } else {
        lc.stride[0] = h;
        lc.stride[1] = 1;
    }
    lc.offset = 3 * lc.stride[0];
    wk_layout lsn = lc;
    lsn.offset += 1;
    Buf c = rnd_buf((T + 5) * h + 2, dt, -1, 1), sn = rnd_buf((T + 5) * h + 2, dt, -1, 1);
    Buf y((size_t)(n > 0 ? n : 1) * wkc_size(dt));
    int rc = wk__cu_rope(nullptr, x.data(), cv(l), c.data(), cv(lc), sn.data(), cv(lsn), (wk_dtype)dt, inter, thd,
                         y.data());
    SYNC();
    CHECK(rc == 0, "rope rc %d", rc);
    int64_t idx[4];
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        unravel(shape, 4, i, idx);
        int64_t d = idx[3], t = idx[thd ? 1 : 2];
        int64_t j = inter ? d / 2 : d % h;
        bool first = inter ? d % 2 == 0 : d < h;
        int64_t ia = inter ? 2 * j : j, ib = inter ? 2 * j + 1 : j + h;
        idx[3] = ia;
        double a = ld(x, off_of(l, idx), dt);
        idx[3] = ib;
        double b = ld(x, off_of(l, idx), dt);
        double cv_ = ld(c, lc.offset + t * lc.stride[0] + j * lc.stride[1], dt);
        double sv = ld(sn, lsn.offset + t * lsn.stride[0] + j * lsn.stride[1], dt);
        double want = first ? a * cv_ - b * sv : a * sv + b * cv_;
        double got = ld(y, i, dt);
        bool ok = close_to(got, want, tol_of(dt));
        if (!ok) bad++;
        CHECK(ok, "rope %s inter %d thd %d elem %lld: got %.9g want %.9g", dtn(dt), inter, thd, (long long)i, got,
              want);
    }
}

static void test_rope() {
    static const int64_t s1[] = {2, 3, 5, 8}, s2[] = {1, 2, 7, 2}, s3[] = {1, 4, 3, 64};
    static const int perm[] = {0, 2, 1, 3}, rev[] = {3, 2, 1, 0};
    for (int di = 0; di < NFDT; di++)
        for (int m = 0; m < 8; m++) {
            bool inter = m & 1, thd = m & 2, ct = m & 4;
            check_rope(s1, nullptr, FDT[di], inter, thd, ct);
            check_rope(s2, perm, FDT[di], inter, thd, ct);
            check_rope(s3, ct ? rev : nullptr, FDT[di], inter, thd, ct);
        }
}

/* ---------------- swiglu ---------------- */

static void check_swiglu(const int64_t *shape, int rank, const int *order, int dt) {
    wk_layout l = strided(shape, rank, order, 1, 5);
    int64_t h = shape[rank - 1] / 2, rows = numel(l) / shape[rank - 1];
    Buf x = rnd_buf(emu_need(l), dt, -5, 5);
    Buf y((size_t)(rows * h > 0 ? rows * h : 1) * wkc_size(dt));
    int rc = wk__cu_swiglu(nullptr, x.data(), cv(l), (wk_dtype)dt, y.data());
    SYNC();
    CHECK(rc == 0, "swiglu rc %d", rc);
    int64_t idx[WK_MAX_RANK];
    int bad = 0;
    for (int64_t i = 0; i < rows * h && bad < 3; i++) {
        unravel(shape, rank, i / h * shape[rank - 1], idx);
        idx[rank - 1] = i % h;
        double a = ld(x, off_of(l, idx), dt);
        idx[rank - 1] += h;
        double b = ld(x, off_of(l, idx), dt);
        double want = a / (1 + exp(-a)) * b, got = ld(y, i, dt);
        bool ok = close_to(got, want, tol_of(dt));
        if (!ok) bad++;
        CHECK(ok, "swiglu %s elem %lld: got %.9g want %.9g", dtn(dt), (long long)i, got, want);
    }
}

static void test_swiglu() {
    static const int64_t s1[] = {3, 8}, s2[] = {2, 3, 160}, s3[] = {1, 2};
    static const int tr2[] = {1, 0}, perm3[] = {2, 0, 1};
    for (int di = 0; di < NFDT; di++) {
        check_swiglu(s1, 2, nullptr, FDT[di]);
        check_swiglu(s1, 2, tr2, FDT[di]);
        check_swiglu(s2, 3, perm3, FDT[di]);
        check_swiglu(s3, 2, nullptr, FDT[di]);
    }
}

/* ---------------- attention ---------------- */

struct AttCase {
    const char *name;
    int64_t B, Hq, Hkv, Lq, Lk, D, Dv;
    int rank;       /* 4 (B, H, L, D) or 2 (L, D: B = H = 1) */
    bool causal;
    int64_t q_offset;
    int mask;       /* 0 none, 1 (Lq, Lk) broadcast, 2 (B, 1, Lq, Lk), 3 as 1 with a fully masked row */
    bool thd;       /* q / k / v permuted from (B, T, H, D) storage */
    int64_t tmax;   /* k / v: a narrow of the first Lk of tmax positions */
    int64_t window; /* > 0: sliding window (keys i + q_offset - j < window) */
    double softcap; /* > 0: scores capped by softcap * tanh(s / softcap) */
};

static void check_attention(const AttCase &c, int dt, int64_t splits_mode) {
    const int r = c.rank;
    const int64_t group = c.Hq / c.Hkv;
    int64_t qs[4], ks[4], vs[4], ms[4], ks_full[4];
    if (r == 4) {
        int64_t a[4] = {c.B, c.Hq, c.Lq, c.D}, b[4] = {c.B, c.Hkv, c.Lk, c.D}, e[4] = {c.B, c.Hkv, c.Lk, c.Dv},
                m[4] = {c.B, c.Hq, c.Lq, c.Lk};
        memcpy(qs, a, sizeof a);
        memcpy(ks, b, sizeof b);
        memcpy(vs, e, sizeof e);
        memcpy(ms, m, sizeof m);
    } else {
        int64_t a[2] = {c.Lq, c.D}, b[2] = {c.Lk, c.D}, e[2] = {c.Lk, c.Dv}, m[2] = {c.Lq, c.Lk};
        memcpy(qs, a, sizeof a);
        memcpy(ks, b, sizeof b);
        memcpy(vs, e, sizeof e);
        memcpy(ms, m, sizeof m);
    }
    static const int bthd[] = {0, 2, 1, 3};
    const int *ord = r == 4 && c.thd ? bthd : nullptr;
    wk_layout lq = strided(qs, r, ord, 0, 1);
    /* k / v: the first Lk positions of a cache of tmax (padded dim = keys) */
    memcpy(ks_full, ks, sizeof ks);
    auto cache_view = [&](const int64_t *shape, int64_t off) {
        int64_t full[4];
        memcpy(full, shape, sizeof full);
        full[r - 2] = c.tmax;
        wk_layout lf = strided(full, r, ord, 0, off);
        lf.shape[r - 2] = shape[r - 2];
        return lf;
    };
    wk_layout lk = cache_view(ks, 2), lv = cache_view(vs, 0);
    Buf q = rnd_buf(emu_need(lq), dt, -2, 2), k = rnd_buf(emu_need(lk), dt, -2, 2), v = rnd_buf(emu_need(lv), dt, -2, 2);
    wk_layout lm;
    memset(&lm, 0, sizeof lm);
    Buf m;
    if (c.mask) {
        int64_t mshape[4];
        memcpy(mshape, ms, sizeof ms);
        if (c.mask == 2) mshape[1] = 1;
        wk_layout base;
        if (c.mask == 2) {
            base = strided(mshape, r, nullptr, 0, 0);
            base.stride[1] = 0;
            base.shape[1] = c.Hq;
        } else { /* (Lq, Lk) broadcast over the batch dims */
            base = strided(mshape, r, nullptr, 0, 0);
            for (int d = 0; d < r - 2; d++) base.stride[d] = 0;
        }
        lm = base;
        int64_t mn = emu_need(lm);
        m = rnd_buf(mn, dt, -1, 1);
        for (int64_t i = 0; i < mn; i++)
            if (rnd() % 5 == 0) wkc_store_f64(m.data(), i, dt, -INFINITY);
        if (c.mask == 3) /* query row 0 sees nothing */
            for (int64_t j = 0; j < c.Lk; j++) wkc_store_f64(m.data(), j * lm.stride[r - 1], dt, -INFINITY);
    }
    const double scale = 1.0 / sqrt((double)(c.D ? c.D : 1));
    wk_cu_attn_args a = {scale, c.causal, c.q_offset, group, c.window, c.softcap};
    int64_t splits = splits_mode > 0 ? splits_mode : wk__cu_attention_splits(cv(lq), cv(lk), cv(lv), a);
    size_t wsn = wk__cu_attention_workspace(cv(lq), cv(lv), (wk_dtype)dt, splits);
    Buf ws(wsn + 8);
    int64_t nrows = 1;
    for (int d = 0; d < r - 1; d++) nrows *= qs[d];
    Buf y((size_t)(nrows * c.Dv > 0 ? nrows * c.Dv : 1) * wkc_size(dt));
    int rc = wk__cu_attention(nullptr, q.data(), cv(lq), k.data(), cv(lk), v.data(), cv(lv), c.mask ? m.data() : nullptr,
                              cv(lm), (wk_dtype)dt, a, splits, splits > 1 ? ws.data() : nullptr, y.data());
    SYNC();
    CHECK(rc == 0, "attention %s rc %d", c.name, rc);
    int bad = 0;
    std::vector<double> sc((size_t)(c.Lk > 0 ? c.Lk : 1));
    for (int64_t row = 0; row < nrows && bad < 3; row++) {
        int64_t qi[4] = {0}, ki[4] = {0}, mi[4] = {0};
        unravel(qs, r - 1, row, qi);
        const int64_t i = qi[r - 2];
        memcpy(ki, qi, sizeof qi);
        if (r == 4) ki[1] = qi[1] / group;
        memcpy(mi, qi, sizeof qi);
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.Lk; j++) {
            double s = 0;
            for (int64_t d = 0; d < c.D; d++) {
                qi[r - 1] = d;
                ki[r - 2] = j;
                ki[r - 1] = d;
                s += ld(q, off_of(lq, qi), dt) * ld(k, off_of(lk, ki), dt);
            }
            s *= scale;
            if (c.softcap > 0) s = c.softcap * tanh(s / c.softcap);
            if (c.mask) {
                mi[r - 1] = j;
                s += ld(m, off_of(lm, mi), dt);
            }
            if (c.causal && j > i + c.q_offset) s = -INFINITY;
            if (c.window > 0 && i + c.q_offset - j >= c.window) s = -INFINITY;
            sc[(size_t)j] = s;
            if (s > mx) mx = s;
        }
        for (int64_t dv = 0; dv < c.Dv; dv++) {
            double l = 0, o = 0;
            for (int64_t j = 0; j < c.Lk; j++) {
                double p = sc[(size_t)j] == -INFINITY ? 0 : exp(sc[(size_t)j] - mx);
                ki[r - 2] = j;
                ki[r - 1] = dv;
                l += p;
                o += p * ld(v, off_of(lv, ki), dt);
            }
            double want = mx == -INFINITY ? NAN : o / l;
            double got = ld(y, row * c.Dv + dv, dt);
            bool ok = close_to(got, want, tol_of(dt) * (dt == WK_F32 ? 2 : 1));
            if (!ok) bad++;
            CHECK(ok, "attention %s %s splits %lld row %lld dv %lld: got %.9g want %.9g", c.name, dtn(dt),
                  (long long)splits, (long long)row, (long long)dv, got, want);
        }
    }
}

static void test_attention() {
    static const AttCase cases[] = {
        /* name           B  Hq Hkv Lq  Lk   D   Dv  rank causal off mask thd tmax */
        {"decode",        1, 9, 3,  1,  300, 64, 64, 4, true, 299, 0, false, 400},
        {"decode-thd",    1, 9, 3,  1,  77,  64, 64, 4, true, 76,  0, true,  128},
        {"prefill",       2, 2, 2,  37, 37,  80, 80, 4, true, 0,   0, false, 37},
        {"gqa4-offset",   1, 8, 2,  5,  70,  3,  3,  4, true, 65,  0, true,  90},
        {"mask-2d-D1",    2, 3, 3,  6,  40,  1,  5,  4, false, 0,  1, false, 40},
        {"mask-b1-thd",   2, 4, 2,  7,  33,  16, 8,  4, false, 0,  2, true,  50},
        {"mask-allinf",   1, 2, 1,  4,  9,   8,  8,  4, true, 5,   3, false, 9},
        {"rank2",         1, 1, 1,  6,  45,  16, 7,  2, false, 0,  1, false, 60},
        {"wide-D300",     1, 2, 1,  3,  20,  300, 300, 4, false, 0, 0, false, 20},
        {"no-keys",       1, 2, 2,  2,  0,   4,  4,  4, false, 0,  0, false, 3},
        {"causal-lq>lk",  1, 1, 1,  6,  4,   8,  8,  4, true, 0,   0, false, 4},
        /* sliding window and soft-capping (window, softcap last) */
        {"win-decode",    1, 4, 1,  1,  700, 16, 16, 4, true, 699, 0, false, 800, 512, 0},
        {"win-decode-cap",1, 4, 2,  1,  300, 8,  8,  4, true, 299, 0, true,  320, 70, 5.0},
        {"win-prefill",   1, 2, 1,  40, 40,  8,  8,  4, true, 0,   0, false, 40, 7, 0},
        {"win-chunk-mask",1, 2, 2,  9,  60,  8,  4,  4, true, 51,  1, false, 64, 20, 2.0},
        {"win-noncausal", 2, 2, 1,  6,  30,  4,  4,  4, false, 10, 0, false, 30, 9, 0},
        {"win-1",         1, 2, 1,  5,  12,  4,  4,  4, true, 7,   0, false, 12, 1, 0},
        {"win-wide",      1, 2, 1,  3,  10,  4,  4,  4, true, 7,   0, false, 10, 100, 0},
        {"win-past-keys", 1, 1, 1,  3,  10,  4,  4,  4, true, 15,  0, false, 10, 4, 0},
        {"cap-only",      2, 3, 3,  6,  40,  8,  5,  4, false, 0,  2, false, 40, 0, 0.5},
    };
    for (const AttCase &c : cases)
        for (int di = 0; di < NFDT; di++) {
            int dt = FDT[di];
            if (dt != WK_F32 && dt != WK_F64 && (c.Lk > 100 || c.D > 100)) continue; /* time */
            check_attention(c, dt, 1);
            check_attention(c, dt, 3);
            check_attention(c, dt, 0);
        }
}

/* random shapes: heads, groups, lengths, head dims, causal offsets, mask
 * kinds, cache layouts and split counts drawn together */
static void test_attention_random() {
    static const int64_t dims[] = {1, 2, 3, 5, 8, 16, 31, 33, 64, 80, 100};
    for (int t = 0; t < 60; t++) {
        AttCase c;
        memset(&c, 0, sizeof c);
        c.name = "random";
        c.rank = 4;
        c.B = 1 + (int64_t)(rnd() % 2);
        c.Hkv = 1 + (int64_t)(rnd() % 3);
        c.Hq = c.Hkv * (1 + (int64_t)(rnd() % 4));
        c.Lq = 1 + (int64_t)(rnd() % 9);
        c.Lk = (int64_t)(rnd() % 150);
        c.D = dims[rnd() % 11];
        c.Dv = dims[rnd() % 11];
        c.causal = rnd() % 2;
        c.q_offset = c.causal ? (int64_t)(rnd() % (c.Lk + 2)) : 0;
        c.mask = (int)(rnd() % 4);
        c.thd = rnd() % 2;
        c.tmax = c.Lk + (int64_t)(rnd() % 20);
        c.window = rnd() % 3 == 0 ? 1 + (int64_t)(rnd() % 40) : 0;
        c.softcap = rnd() % 3 == 0 ? 3.0 : 0.0;
        int dt = FDT[rnd() % NFDT];
        check_attention(c, dt, 1 + (int64_t)(rnd() % 6));
    }
}

/* the launcher splits decode rows and leaves prefill alone */
static void test_attention_splits() {
    int64_t q[4] = {1, 9, 1, 64}, k[4] = {1, 3, 512, 64}, qp[4] = {1, 9, 512, 64};
    wk_layout lq = strided(q, 4, nullptr, 0, 0), lk = strided(k, 4, nullptr, 0, 0), lqp = strided(qp, 4, nullptr, 0, 0);
    int64_t sd = wk__cu_attention_splits(cv(lq), cv(lk), cv(lk), wk_cu_attn_args{1.0, 0, 0, 1, 0, 0.0});
    int64_t sp = wk__cu_attention_splits(cv(lqp), cv(lk), cv(lk), wk_cu_attn_args{1.0, 0, 0, 1, 0, 0.0});
    CHECK(sd > 1 && sd <= 512 / 32, "decode splits %lld", (long long)sd);
    CHECK(sp == 1, "prefill splits %lld", (long long)sp);
    /* a causal window of 128 over 4096 keys: the splits divide the window */
    int64_t kl[4] = {1, 3, 4096, 64};
    wk_layout lkl = strided(kl, 4, nullptr, 0, 0);
    int64_t sw = wk__cu_attention_splits(cv(lq), cv(lkl), cv(lkl), wk_cu_attn_args{1.0, 1, 4095, 1, 128, 0.0});
    CHECK(sw >= 1 && sw <= 128 / 32, "window decode splits %lld", (long long)sw);
    CHECK(wk__cu_attention_workspace(cv(lq), cv(lk), WK_F16, sd) == (size_t)(9 * sd * 66 * 4), "workspace");
    CHECK(wk__cu_attention_workspace(cv(lq), cv(lk), WK_F16, 1) == 0, "no workspace for 1 split");
}

/* ---------------- refusals ---------------- */

static void test_refusals() {
    int64_t s2[2] = {3, 4}, s4[4] = {1, 2, 3, 5}, c2[2] = {3, 2};
    wk_layout l2 = strided(s2, 2, nullptr, 0, 0), l4 = strided(s4, 4, nullptr, 0, 0), lc = strided(c2, 2, nullptr, 0, 0);
    Buf b(4096);
    CHECK(wk__cu_softmax(nullptr, b.data(), cv(l2), WK_I32, 1, false, b.data()) == WKC_BAD_ARG, "softmax i32");
    CHECK(wk__cu_softmax(nullptr, b.data(), cv(l2), WK_F32, 2, false, b.data()) == WKC_BAD_ARG, "softmax dim");
    CHECK(wk__cu_swiglu(nullptr, b.data(), cv(lc), WK_Q4_0, b.data()) == WKC_BAD_ARG, "swiglu q4_0");
    wk_layout l3 = strided(c2, 1, nullptr, 0, 0); /* shape (3): odd */
    CHECK(wk__cu_swiglu(nullptr, b.data(), cv(l3), WK_F32, b.data()) == WKC_BAD_ARG, "swiglu odd");
    CHECK(wk__cu_rope(nullptr, b.data(), cv(l4), b.data(), cv(lc), b.data(), cv(lc), WK_F32, false, false,
                      b.data()) == WKC_BAD_ARG, "rope odd D");
    wk_layout lw = strided(c2, 1, nullptr, 0, 0);
    CHECK(wk__cu_rms_norm(nullptr, b.data(), cv(l2), b.data(), cv(lw), WK_F32, 1e-5, b.data()) == WKC_BAD_ARG,
          "rms weight size");
    int64_t q[4] = {1, 3, 2, 4}, k[4] = {1, 2, 5, 4};
    wk_layout lq = strided(q, 4, nullptr, 0, 0), lk = strided(k, 4, nullptr, 0, 0);
    wk_cu_attn_args a = {0.5, 0, 0, 2}; /* 3 heads are not 2 x 2 */
    CHECK(wk__cu_attention(nullptr, b.data(), cv(lq), b.data(), cv(lk), b.data(), cv(lk), nullptr, cv(lq), WK_F32, a,
                           1, nullptr, b.data()) == WKC_BAD_ARG, "attention group");
    int64_t q2[4] = {1, 4, 2, 4};
    wk_layout lq2 = strided(q2, 4, nullptr, 0, 0);
    CHECK(wk__cu_attention(nullptr, b.data(), cv(lq2), b.data(), cv(lk), b.data(), cv(lk), nullptr, cv(lq), WK_F32, a,
                           2, nullptr, b.data()) == WKC_BAD_ARG, "attention splits without workspace");
    a.q_offset = -1;
    CHECK(wk__cu_attention(nullptr, b.data(), cv(lq2), b.data(), cv(lk), b.data(), cv(lk), nullptr, cv(lq), WK_F32, a,
                           1, nullptr, b.data()) == WKC_BAD_ARG, "attention negative offset");
}

int main() {
    if (emu_no_device()) return 0;
    clock_t t0 = clock();
    test_softmax();
    test_norms();
    test_rope();
    test_swiglu();
    test_attention();
    test_attention_random();
    test_attention_splits();
    test_refusals();
    return emu_summary(t0);
}
