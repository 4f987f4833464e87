// The CUDA scans (kernels_scan.cu) and sort / top-k (kernels_sort.cu)
// against the CPU backend (wk__cpu_scan, wk__cpu_sort, wk__cpu_topk), in host
// emulation: the kernels' per-item code and every launch of the multi-pass
// plans (chunked scans, bitonic stages) run on the CPU over a fake grid of 7
// threads, so their semantics are checked on machines without a GPU.
// Built like test_cuda_kernels_emu.cu:
//   nvcc -std=c++17 -O1 -arch=sm_80 -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE -I include -I src
//     tests/cuda/test_cuda_sort_emu.cu build/libwick.a -lcudart_static ...
// With -DGPU_MODE (buffers in managed memory, a sync after every launcher)
// the same file runs the real kernels on a GPU.
//
// Covered: every dtype; dims first / middle / last; contiguous, transposed,
// narrowed with an offset, stepped, 0-stride off dim and 0-stride along dim
// sources; line lengths 1 2 3 5 17 64 100 1000 5000; random data with NaN
// (several payloads), +-0, +-inf, and tie-heavy data from a tiny set; both
// directions; top-k with k = 0, 1, a middle k and k = len; values-only and
// indices-only calls; many short lines (several lines per shared-memory tile,
// several tiles, a partial last one) and lines longer than a tile (global
// stages + tile stages); empty tensors; scans on the sequential plan, on the
// GPU-chunked plan (lines of 5000 and 20000) and on the CPU's chunked plan
// (lines of 2^20 + 37).
// Exactness: sort / top-k values and indices, and every scan on the
// sequential and CPU-chunked plans, must be bit-identical to the CPU. The
// GPU-chunked plan sums in a different order than the CPU's sequential scan:
// integers must still be exact (wrapping arithmetic is associative), floats
// on dyadic data whose partial sums/products are exact in the accumulator
// must be exact too, and floats on general data are compared with a bound
// (4 (j + 1) accumulator epsilons times the running sum of |x| at position
// j - or |result| for products - plus two ulps of the output dtype; see
// scan_tol_bad).
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/reduce/kernels_scan.cu"
#include "cuda/reduce/kernels_sort.cu"
#include <math.h>
#include "emu_harness.cuh"

static bool is_float(int dt) { return !wkc_is_int(dt); }

/* ---------------- views ---------------- */

enum { V_CONTIG, V_TRANSPOSED, V_NARROWED, V_STEP, V_BCAST_OTHER, V_BCAST_DIM, V_KINDS };
static const char *vname[V_KINDS] = {"contig", "transposed", "narrowed+off", "step", "bcast-other", "bcast-dim"};

/* A view of kind `kind` with shape `shape`; *need = elements its buffer needs. */
static wk_layout make_view(const int64_t *shape, int rank, int kind, int dim, int64_t *need) {
    wk_layout l = emu_layout(shape, rank);
    switch (kind) {
    case V_TRANSPOSED: /* column-major: the dims in reverse memory order */
        emu_col_major(l);
        l.offset = 2;
        break;
    case V_NARROWED: /* a slice of a tensor two larger in every dim */
        emu_row_major(l, 2);
        l.offset = 5;
        break;
    case V_STEP: { /* every other element along dim, every third elsewhere */
        int64_t st = 1;
        for (int d = rank - 1; d >= 0; d--) { l.stride[d] = st * (d == dim ? 2 : 3); st *= shape[d]; }
        l.offset = 1;
        break;
    }
    default: emu_row_major(l, 0); break;
    }
    return emu_view_done(l, kind == V_BCAST_DIM, kind == V_BCAST_OTHER, dim, need);
}

/* ---------------- data ---------------- */

enum { D_GENERAL, D_TIES, D_BITS, D_DYADIC, D_DYADIC_PROD, D_SMOOTH, D_SMOOTH_PROD, D_CANCEL };

static double special(uint64_t r) {
    static const double sp[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 1.0, -1.0};
    return sp[r % 8];
}

static void fill(Buf &b, int64_t cnt, int dt, int mode) {
    int es = wkc_size(dt);
    b.assign((size_t)(cnt > 0 ? cnt : 1) * es, 0);
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t r = rnd();
        if (mode == D_BITS) { /* raw bits: every NaN payload, subnormals, both zeros */
            wkc_put_bits(b.data(), i, dt, r);
            continue;
        }
        if (wkc_is_int(dt)) {
            long long v;
            if (mode == D_TIES) {
                static const long long t[] = {0, 1, 2, -1, (long long)INT64_MIN, INT64_MAX};
                v = t[r % 6];
            } else if (mode == D_DYADIC_PROD || mode == D_SMOOTH_PROD) {
                v = (r >> 8) % 5 == 0 ? (long long)(r >> 16) : 1 + (long long)((r >> 20) % 3);
            } else {
                v = (long long)r >> ((r >> 56) % 63);
            }
            wkc_store_i64(b.data(), i, dt, v);
            continue;
        }
        double v;
        switch (mode) {
        case D_TIES: v = (r >> 8) % 3 == 0 ? special(r >> 16) : (double)((int)((r >> 24) % 3) - 1) * 0.5; break;
        case D_DYADIC: v = (double)((int64_t)((r >> 8) % 65) - 32) / 8.0; break; /* exact sums in f32 */
        case D_DYADIC_PROD: { /* powers of two near 1: exact products, no over/underflow */
            uint64_t q = (r >> 8) % 100;
            v = q < 2 ? 2.0 : q < 4 ? 0.5 : q < 50 ? -1.0 : 1.0;
            break;
        }
        case D_SMOOTH: v = ((double)((r >> 11) % 2000001) - 1000000.0) * 1e-6 * 3.0; break;
        case D_CANCEL: /* small, +big, -big, small, ...: the running sum keeps returning to small values after
                          rounding at the big ones' scale, so a different summation order shows in the output */
            if (i % 4 == 1 || i % 4 == 2) {
                uint64_t q = rnd();
                double big = ldexp(1.0 + (double)(q % 4096) / 4096.0, 20 + (int)((q >> 20) % 20));
                v = ((q >> 40) & 1) ? big : -big;
                if (i % 4 == 2) { v = -wkc_load_f64(b.data(), i - 1, dt); break; }
            } else {
                v = ((double)((r >> 11) % 2000001) - 1000000.0) * 1e-6;
            }
            break;
        case D_SMOOTH_PROD: v = (0.95 + (double)((r >> 11) % 100001) * 1e-6) * ((r >> 8) & 1 ? -1.0 : 1.0); break;
        default: /* general: reals of several magnitudes, specials sprinkled */
            if ((r >> 8) % 10 == 0) v = special(r >> 16);
            else v = ((double)((int64_t)((r >> 11) % 200001) - 100000)) / (double)(1 << ((r >> 40) % 16));
            break;
        }
        wkc_store_f64(b.data(), i, dt, v);
    }
}

/* ---------------- compare ---------------- */

static int64_t first_diff(const Buf &a, const Buf &b) {
    size_t n = a.size() < b.size() ? a.size() : b.size();
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return (int64_t)i;
    return a.size() == b.size() ? -1 : (int64_t)n;
}

/* output rounding unit of a float dtype */
static double ulp_rel(int dt) {
    switch (dt) {
    case WK_BF16: return 0x1p-7;
    case WK_F16: return 0x1p-10;
    case WK_F8E4M3: return 0x1p-3;
    case WK_F32: return 0x1p-23;
    default: return 0x1p-52;
    }
}
static double tiny_abs(int dt) {
    switch (dt) {
    case WK_BF16: return 0x1p-126;
    case WK_F16: return 0x1p-24;
    case WK_F8E4M3: return 0x1p-9;
    case WK_F32: return 0x1p-149;
    default: return 0x1p-1074;
    }
}

/* Float scan of the GPU-chunked plan vs the CPU's sequential scan.
 * mag[o] = running sum of |x| (sum) or |cpu result| (prod) at output o,
 * which is at position j of its line (n long, outputs inner apart). The
 * value at j is j roundings from the exact one on the CPU's path, and at
 * most chunk + (chunks before) + j <= 2j + 1 on the chunked path (the
 * first chunk is the same sequential walk), so the two differ by at most
 * (3j + 2) eps mag: bound 4 (j + 1) eps mag, plus two output ulps. */
static int64_t scan_tol_bad(const Buf &cpu, const Buf &gpu, int64_t cnt, int dt, const std::vector<double> &mag,
                            int64_t n, int64_t inner) {
    double acc_eps = (dt == WK_F32 || dt == WK_F64) ? 0x1p-52 : 0x1p-23;
    int64_t bad = 0;
    for (int64_t o = 0; o < cnt; o++) {
        double c = wkc_load_f64(cpu.data(), o, dt), g = wkc_load_f64(gpu.data(), o, dt);
        if (c != c || g != g) { bad += (c != c) != (g != g); continue; }
        if (isinf(c) || isinf(g)) { bad += c != g; continue; }
        const int64_t j = (o / inner) % n;
        double acc_err = 4.0 * (double)(j + 1) * acc_eps * mag[o];
        double tol = acc_err + 2.0 * ulp_rel(dt) * (fabs(c) + acc_err) + tiny_abs(dt);
        if (fabs(c - g) > tol) {
            if (bad < 2 && g_fail < 40) printf("  [%lld] cpu %.17g gpu %.17g tol %g\n", (long long)o, c, g, tol);
            bad++;
        }
    }
    return bad;
}

/* running magnitude per output element (contiguous output of view l along dim) */
static std::vector<double> scan_mag(const Buf &src, const wk_layout &l, int dim, int dt, bool prod, const Buf &cpu) {
    int64_t cnt = numel(l);
    std::vector<double> m((size_t)cnt, 0.0);
    if (prod) {
        for (int64_t o = 0; o < cnt; o++) m[o] = fabs(wkc_load_f64(cpu.data(), o, dt));
        return m;
    }
    int64_t n = l.shape[dim], inner = 1, outer = 1;
    for (int d = dim + 1; d < l.rank; d++) inner *= l.shape[d];
    for (int d = 0; d < dim; d++) outer *= l.shape[d];
    for (int64_t L = 0; L < outer * inner; L++) {
        /* source offset of line L */
        int64_t o = L / inner, i = L % inner, off = l.offset;
        for (int d = l.rank - 1; d > dim; d--) { off += (i % l.shape[d]) * l.stride[d]; i /= l.shape[d]; }
        for (int d = dim - 1; d >= 0; d--) { off += (o % l.shape[d]) * l.stride[d]; o /= l.shape[d]; }
        double s = 0;
        for (int64_t j = 0; j < n; j++) {
            s += fabs(wkc_load_f64(src.data(), off + j * l.stride[dim], dt));
            m[(size_t)((L / inner) * n * inner + L % inner + j * inner)] = s;
        }
    }
    return m;
}

/* ---------------- sort / top-k ---------------- */

static Buf make_ws(size_t bytes) {
    Buf w(bytes ? bytes : 1);
    memset(w.data(), 0xA5, w.size()); /* the kernels must not rely on a cleared workspace */
    return w;
}

/* k < 0: sort; else top-k. which: 3 values and indices, 1 values only, 2 indices only. */
static void one_order(const char *what, const Buf &src, const wk_layout &l, int dt, int dim, bool desc, int64_t k,
                      int which) {
    int es = wkc_size(dt);
    int64_t m = k < 0 ? l.shape[dim] : k;
    int64_t cnt = numel(l) / (l.shape[dim] ? l.shape[dim] : 1) * m;
    if (l.shape[dim] == 0) cnt = 0;
    Buf cv_(cnt * es + 8, 0x5a), gv(cnt * es + 8, 0x5a), ci(cnt * 8 + 8, 0x5a), gi(cnt * 8 + 8, 0x5a);
    void *cvp = which & 1 ? cv_.data() : NULL, *cip = which & 2 ? ci.data() : NULL;
    void *gvp = which & 1 ? gv.data() : NULL, *gip = which & 2 ? gi.data() : NULL;
    wk_status st = k < 0 ? wk__cpu_sort(NULL, src.data(), &l, (wk_dtype)dt, dim, desc, cvp, cip)
                         : wk__cpu_topk(NULL, src.data(), &l, (wk_dtype)dt, dim, k, desc, cvp, cip);
    CHECK(st == WK_OK, "cpu %s status", what);
    size_t wsb = wk__cu_sort_workspace(cv(l), dim, (wk_dtype)dt);
    Buf ws = make_ws(wsb);
    int rc = k < 0 ? wk__cu_sort(nullptr, src.data(), cv(l), (wk_dtype)dt, dim, desc, gvp, gip, ws.data())
                   : wk__cu_topk(nullptr, src.data(), cv(l), (wk_dtype)dt, dim, k, desc, gvp, gip, ws.data());
    SYNC();
    CHECK(rc == 0, "%s rc %d", what, rc);
    int64_t dv = first_diff(cv_, gv), di = first_diff(ci, gi);
    CHECK(dv < 0, "%s %s values differ at byte %lld", what, dtn(dt), (long long)dv);
    CHECK(di < 0, "%s %s indices differ at byte %lld (cpu %lld gpu %lld)", what, dtn(dt), (long long)di,
          di >= 0 && di / 8 < cnt ? (long long)((int64_t *)ci.data())[di / 8] : -1LL,
          di >= 0 && di / 8 < cnt ? (long long)((int64_t *)gi.data())[di / 8] : -1LL);
}

struct Shape {
    int rank;
    int64_t s[3];
    int dim;
};

static void shapes_for(int64_t len, std::vector<Shape> &out, bool many) {
    out.push_back({1, {len, 0, 0}, 0});
    out.push_back({2, {3, len, 0}, 1});
    if (many) {
        out.push_back({2, {len, 3, 0}, 0});
        out.push_back({3, {2, len, 3}, 1});
    }
}

static void test_sort() {
    static const int64_t lens[] = {1, 2, 3, 5, 17, 64, 100, 1000, 5000};
    char what[160];
    for (int64_t len : lens) {
        bool big = len >= 1000;
        std::vector<Shape> shapes;
        shapes_for(len, shapes, !big);
        for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
            for (const Shape &sh : shapes)
                for (int kind = 0; kind < V_KINDS; kind++) {
                    if (big && kind != V_CONTIG && kind != V_TRANSPOSED && kind != V_BCAST_DIM) continue;
                    int64_t need;
                    wk_layout l = make_view(sh.s, sh.rank, kind, sh.dim, &need);
                    static const int modes[] = {D_GENERAL, D_TIES, D_BITS};
                    for (int mode : modes) {
                        if (big && mode == D_GENERAL && is_float(dt)) continue; /* bits cover it */
                        Buf src;
                        fill(src, need, dt, mode);
                        for (int desc = 0; desc < 2; desc++) {
                            snprintf(what, sizeof what, "sort len %lld rank %d dim %d %s mode %d %s", (long long)len,
                                     sh.rank, sh.dim, vname[kind], mode, desc ? "desc" : "asc");
                            one_order(what, src, l, dt, sh.dim, desc, -1, 3);
                            if (big) continue;
                            int64_t ks[4] = {0, 1, (len + 1) / 2, len};
                            for (int64_t k : ks) {
                                snprintf(what, sizeof what, "topk k %lld len %lld rank %d dim %d %s mode %d %s",
                                         (long long)k, (long long)len, sh.rank, sh.dim, vname[kind], mode,
                                         desc ? "largest" : "smallest");
                                one_order(what, src, l, dt, sh.dim, desc, k, 3);
                            }
                        }
                    }
                }
        /* big lines: top-k on a few configurations */
        if (big)
            for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
                int64_t need;
                Shape sh = {2, {3, len, 0}, 1};
                wk_layout l = make_view(sh.s, sh.rank, V_NARROWED, sh.dim, &need);
                Buf src;
                fill(src, need, dt, D_TIES);
                for (int64_t k : {(int64_t)1, (int64_t)7, len}) {
                    snprintf(what, sizeof what, "topk big k %lld len %lld", (long long)k, (long long)len);
                    one_order(what, src, l, dt, sh.dim, k & 1, k, 3);
                }
            }
    }
    /* many short lines: several lines per shared-memory tile, several
     * tiles, a partial last tile */
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
        int64_t a[2] = {300, 17}, b[2] = {45, 300}, need;
        wk_layout la = make_view(a, 2, V_NARROWED, 1, &need);
        Buf src;
        fill(src, need, dt, D_TIES);
        one_order("sort 300 lines of 17", src, la, dt, 1, dt & 1, -1, 3);
        one_order("topk 3 of 300 lines of 17", src, la, dt, 1, !(dt & 1), 3, 3);
        wk_layout lb = make_view(b, 2, V_TRANSPOSED, 0, &need);
        fill(src, need, dt, D_BITS);
        one_order("sort 300 lines of 45 dim 0", src, lb, dt, 0, dt & 1, -1, 3);
    }
    /* values only / indices only */
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
        int64_t shape[2] = {4, 33}, need;
        wk_layout l = make_view(shape, 2, V_TRANSPOSED, 1, &need);
        Buf src;
        fill(src, need, dt, D_TIES);
        one_order("sort values only", src, l, dt, 1, true, -1, 1);
        one_order("sort indices only", src, l, dt, 1, false, -1, 2);
        one_order("topk values only", src, l, dt, 1, true, 5, 1);
        one_order("topk indices only", src, l, dt, 1, false, 5, 2);
    }
}

/* ---------------- scans ---------------- */

/* First element (of cnt, then the guard bytes) whose bits differ, NaN ==
 * NaN: a NaN's sign and payload are not part of the contract - the CPU's
 * come from whichever operand its compiler put first (x86 keeps the first
 * NaN operand; gcc may swap the operands of a commutative + or *), a GPU's
 * arithmetic returns the canonical NaN. -1 when equal. */
static int64_t first_scan_diff(const Buf &c, const Buf &g, int64_t cnt, int dt) {
    int es = wkc_size(dt);
    for (int64_t o = 0; o < cnt; o++) {
        if (!memcmp(c.data() + o * es, g.data() + o * es, es)) continue;
        if (is_float(dt)) {
            double a = wkc_load_f64(c.data(), o, dt), b = wkc_load_f64(g.data(), o, dt);
            if (a != a && b != b) continue;
        }
        return o;
    }
    return memcmp(c.data() + cnt * es, g.data() + cnt * es, c.size() - (size_t)cnt * es) ? cnt : -1;
}

enum { EXACT, DYADIC_EXACT, TOLERANT };

static void one_scan(const char *what, const Buf &src, const wk_layout &l, int dt, int dim, bool prod, int how) {
    int es = wkc_size(dt);
    int64_t cnt = numel(l);
    Buf c(cnt * es + 8, 0x5a), g(cnt * es + 8, 0x5a);
    CHECK(wk__cpu_scan(NULL, src.data(), &l, c.data(), (wk_dtype)dt, dim, prod) == WK_OK, "cpu scan");
    size_t wsb = wk__cu_scan_workspace(cv(l), dim, (wk_dtype)dt);
    Buf ws = make_ws(wsb);
    int rc = wk__cu_scan(nullptr, src.data(), cv(l), g.data(), (wk_dtype)dt, dim, prod, wsb ? ws.data() : NULL);
    SYNC();
    CHECK(rc == 0, "%s rc %d", what, rc);
    if (how == TOLERANT && is_float(dt)) {
        int64_t inner = 1;
        for (int d = dim + 1; d < l.rank; d++) inner *= l.shape[d];
        int64_t bad = scan_tol_bad(c, g, cnt, dt, scan_mag(src, l, dim, dt, prod, c), l.shape[dim], inner);
        CHECK(bad == 0, "%s %s %s: %lld elements beyond tolerance", what, dtn(dt), prod ? "cumprod" : "cumsum",
              (long long)bad);
        CHECK(!memcmp(c.data() + cnt * es, g.data() + cnt * es, 8), "%s: wrote past the end", what);
        return;
    }
    int64_t d = first_scan_diff(c, g, cnt, dt);
    CHECK(d < 0, "%s %s %s differ at element %lld (cpu %.17g gpu %.17g)", what, dtn(dt), prod ? "cumprod" : "cumsum",
          (long long)d, d >= 0 && d < cnt ? wkc_load_f64(c.data(), d, dt) : 0.0,
          d >= 0 && d < cnt ? wkc_load_f64(g.data(), d, dt) : 0.0);
}

static void test_scan() {
    static const int64_t lens[] = {1, 2, 3, 5, 17, 64, 100, 1000, 5000};
    char what[160];
    /* short and mid lines: sequential plan (5000 on few lines: GPU-chunked) */
    for (int64_t len : lens) {
        std::vector<Shape> shapes;
        shapes_for(len, shapes, true);
        for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
            for (const Shape &sh : shapes)
                for (int kind = 0; kind < V_KINDS; kind++)
                    for (int prod = 0; prod < 2; prod++) {
                        int64_t need;
                        wk_layout l = make_view(sh.s, sh.rank, kind, sh.dim, &need);
                        bool chunked = wk__cu_scan_workspace(cv(l), sh.dim, (wk_dtype)dt) != 0;
                        Buf src;
                        fill(src, need, dt, chunked ? (prod ? D_DYADIC_PROD : D_DYADIC) : D_GENERAL);
                        snprintf(what, sizeof what, "scan len %lld rank %d dim %d %s%s", (long long)len, sh.rank,
                                 sh.dim, vname[kind], chunked ? " (chunked)" : "");
                        one_scan(what, src, l, dt, sh.dim, prod, chunked ? DYADIC_EXACT : EXACT);
                        if (chunked && is_float(dt)) {
                            fill(src, need, dt, prod ? D_SMOOTH_PROD : D_SMOOTH);
                            one_scan(what, src, l, dt, sh.dim, prod, TOLERANT);
                        }
                    }
    }
    /* many lines of 5000 (>= 2048 lines): the sequential plan on long lines */
    for (int dt : {(int)WK_F32, (int)WK_BF16, (int)WK_I16}) {
        int64_t shape[2] = {2048, 4100}, need;
        wk_layout l = make_view(shape, 2, V_TRANSPOSED, 1, &need);
        CHECK(wk__cu_scan_workspace(cv(l), 1, (wk_dtype)dt) == 0, "2048 lines: sequential plan expected");
        Buf src;
        fill(src, need, dt, D_GENERAL);
        one_scan("scan 2048 x 4100 dim 1", src, l, dt, 1, dt == WK_BF16, EXACT);
    }
    /* GPU-chunked: 20000 long lines, dims first and last, strided */
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
        for (int prod = 0; prod < 2; prod++) {
            int64_t a[2] = {20000, 3}, b[2] = {2, 20011}, need;
            wk_layout la = make_view(a, 2, V_STEP, 0, &need);
            Buf src;
            fill(src, need, dt, prod ? D_DYADIC_PROD : D_DYADIC);
            one_scan("scan 20000 x 3 dim 0 step (chunked)", src, la, dt, 0, prod, DYADIC_EXACT);
            if (is_float(dt)) {
                fill(src, need, dt, prod ? D_SMOOTH_PROD : D_SMOOTH);
                one_scan("scan 20000 x 3 dim 0 step (chunked)", src, la, dt, 0, prod, TOLERANT);
            }
            wk_layout lb = make_view(b, 2, V_CONTIG, 1, &need);
            fill(src, need, dt, prod ? D_DYADIC_PROD : D_DYADIC);
            one_scan("scan 2 x 20011 dim 1 (chunked)", src, lb, dt, 1, prod, DYADIC_EXACT);
        }
    /* the CPU's chunked plan: bit-identical */
    const int64_t N = (INT64_C(1) << 20) + 37;
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
        for (int prod = 0; prod < 2; prod++) {
            int64_t need;
            int64_t s1[1] = {N}, s2[2] = {N, 2}, s3[2] = {2, N};
            struct { const char *name; wk_layout l; int dim; } cases[3];
            cases[0] = {"scan 2^20+37 contig (cpu chunks)", make_view(s1, 1, V_CONTIG, 0, &need), 0};
            cases[1] = {"scan 2^20+37 x 2 dim 0 (cpu chunks)", make_view(s2, 2, V_CONTIG, 0, &need), 0};
            cases[2] = {"scan 2 x 2^20+37 dim 1 step (cpu chunks)", make_view(s3, 2, V_STEP, 1, &need), 1};
            for (int c = 0; c < 3; c++) {
                if (c != 0 && dt != WK_F32 && dt != WK_I32) continue;
                make_view(cases[c].l.shape, cases[c].l.rank, c == 2 ? V_STEP : V_CONTIG, cases[c].dim, &need);
                Buf src;
                fill(src, need, dt, prod ? D_SMOOTH_PROD : D_CANCEL);
                one_scan(cases[c].name, src, cases[c].l, dt, cases[c].dim, prod, EXACT);
            }
        }
}

/* ---------------- empty and malformed ---------------- */

static void test_edges() {
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
        int64_t shapes[3][2] = {{0, 4}, {3, 0}, {0, 0}};
        for (auto &sh : shapes)
            for (int dim = 0; dim < 2; dim++) {
                int64_t need;
                wk_layout l = make_view(sh, 2, V_CONTIG, dim, &need);
                Buf src(64, 1), out(64, 0x5a), idx(64, 0x5a), ref(64, 0x5a);
                CHECK(wk__cu_scan_workspace(cv(l), dim, (wk_dtype)dt) == 0, "empty scan ws");
                CHECK(wk__cu_sort_workspace(cv(l), dim, (wk_dtype)dt) == 0, "empty sort ws");
                CHECK(wk__cu_scan(nullptr, src.data(), cv(l), out.data(), (wk_dtype)dt, dim, false, NULL) == 0,
                      "empty scan rc");
                CHECK(wk__cu_sort(nullptr, src.data(), cv(l), (wk_dtype)dt, dim, false, out.data(), idx.data(),
                                  NULL) == 0, "empty sort rc");
                CHECK(wk__cu_topk(nullptr, src.data(), cv(l), (wk_dtype)dt, dim, 0, true, out.data(), idx.data(),
                                  NULL) == 0, "empty topk rc");
                SYNC();
                CHECK(out == ref && idx == ref, "empty: something was written");
            }
        /* k = 0 on a non-empty tensor writes nothing; k > len is refused */
        int64_t shape[2] = {3, 5}, need;
        wk_layout l = make_view(shape, 2, V_CONTIG, 1, &need);
        Buf src;
        fill(src, need, dt, D_GENERAL);
        Buf out(64, 0x5a), idx(64, 0x5a), ref(64, 0x5a);
        Buf ws = make_ws(wk__cu_sort_workspace(cv(l), 1, (wk_dtype)dt));
        CHECK(wk__cu_topk(nullptr, src.data(), cv(l), (wk_dtype)dt, 1, 0, true, out.data(), idx.data(), ws.data()) == 0,
              "k=0 rc");
        SYNC();
        CHECK(out == ref && idx == ref, "k=0 wrote");
        CHECK(wk__cu_topk(nullptr, src.data(), cv(l), (wk_dtype)dt, 1, 6, true, out.data(), idx.data(), ws.data()) != 0,
              "k > len accepted");
        CHECK(wk__cu_sort(nullptr, src.data(), cv(l), (wk_dtype)dt, 2, true, out.data(), idx.data(), ws.data()) != 0,
              "dim out of range accepted");
        CHECK(wk__cu_scan(nullptr, src.data(), cv(l), out.data(), (wk_dtype)dt, -1, true, NULL) != 0,
              "scan dim -1 accepted");
    }
}

int main() {
    if (emu_no_device()) return 0;
    clock_t t0 = clock();
    long c0 = g_checks;
    test_edges();
    printf("edges: %ld checks (%.1f s)\n", g_checks - c0, (double)(clock() - t0) / CLOCKS_PER_SEC);
    c0 = g_checks;
    test_sort();
    printf("sort/topk: %ld checks (%.1f s)\n", g_checks - c0, (double)(clock() - t0) / CLOCKS_PER_SEC);
    c0 = g_checks;
    test_scan();
    printf("scan: %ld checks (%.1f s)\n", g_checks - c0, (double)(clock() - t0) / CLOCKS_PER_SEC);
    return emu_summary(t0);
}
