// The CUDA pooling / resampling kernels (src/cuda/conv/kernels_pool.cu) against
// the CPU backend (wk__cpu_pool2d, wk__cpu_upsample2d), in host emulation:
// kernels_pool.cu is #included with WKC_HOST_EMULATION, so its per-thread
// code, unravelling and grid-stride loop run on the host over a fake grid
// of 7 threads. Every dtype the CPU defines per op, kernel 1..3, stride
// 1..3, padding 0..1 (<= k/2, as ops/pool.c allows), count_include_pad
// both ways, NaN / inf / +-0 inputs, H = 1 (1-d, with the 0 H-stride
// ops/pool.c passes), x contiguous, offset, NHWC-permuted, narrowed inside
// a bigger tensor, H/W-transposed, broadcast over C, stepped W; upsample up
// and down by non-integer factors, the exact 1x / 2x cases, align_corners
// both ways, 1x1 inputs and outputs, empty outputs (nothing written) and
// rejected arguments.
//
// Expected: bit-exact agreement - the kernels do the CPU's operations in the
// CPU's order and precision with no FMA - except the bits of NaNs made by
// arithmetic (avg / bilinear): there a NaN matches any NaN (see compare).
// Max pool and nearest only move values: bit-exact, NaN bits included.
// With -DGPU_MODE (managed buffers, a sync after each launch, linked with
// -lcudart) the same file runs the real kernels.
//   nvcc -std=c++17 -O2 -arch=sm_90 -DGPU_MODE -DWICK_HAVE_CUDA=1 -I include -I src
//     tests/cuda/test_cuda_pool_emu.cu build/libwick.a -lcudart -lm -lpthread -ldl -lrt
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/conv/kernels_pool.cu"
#include "emu_harness.cuh"

static bool is_float_dt(int dt) { return !wkc_is_int(dt); }

/* ------------------------------------------------------------ data */

#define BUFN 8192 /* elements of every input buffer (>= every layout's extent) */

/* random values with NaN, +-inf, +-0 and extremes sprinkled in (every 5th element) */
static Buf make_input(int dt) {
    int es = wkc_size(dt);
    Buf b((size_t)BUFN * es);
    static const double fspecial[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, -NAN, 1.0, -1.0, 0.5, 448, -448, 65504, 1e30, -1e-30};
    for (int i = 0; i < BUFN; i++) {
        uint64_t r = rnd();
        if (wkc_is_int(dt)) {
            long long v = (long long)r;
            if (i % 5 == 0) v = (r >> 8) % 3 == 0 ? 0 : (r >> 8) % 3 == 1 ? -1 : (long long)(1ull << (8 * es - 1));
            else if (i % 2) v = (long long)(r % 41) - 20; /* small values make equal maxima */
            wkc_store_i64(b.data(), i, dt, v);
        } else {
            double v = i % 5 == 0 ? fspecial[(r >> 8) % 14] : ((double)(int64_t)(r % 200001) - 100000) / 1000.0;
            if (i % 5 != 0 && i % 3 == 0) v = (double)((int64_t)(r % 9) - 4); /* ties */
            wkc_store_f64(b.data(), i, dt, v);
        }
    }
    return b;
}

struct Lay { const char *name; wk_layout l; };
static wk_layout mk4(const int64_t s[4], int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t off) {
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = 4;
    l.offset = off;
    const int64_t st[4] = {s0, s1, s2, s3};
    for (int d = 0; d < 4; d++) { l.shape[d] = s[d]; l.stride[d] = st[d]; }
    return l;
}

/* x layouts of NCHW shape s: every kind of view the ops may get */
static std::vector<Lay> x_layouts(const int64_t s[4]) {
    const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
    std::vector<Lay> v;
    v.push_back({"contig", mk4(s, C * H * W, H * W, W, 1, 0)});
    v.push_back({"contig+off", mk4(s, C * H * W, H * W, W, 1, 5)});
    v.push_back({"nhwc", mk4(s, H * W * C, 1, W * C, C, 3)});
    const int64_t PC = C + 1, PH = H + 2, PW = W + 3; /* narrowed out of (N, C+1, H+2, W+3) at (0,1,1,2) */
    v.push_back({"narrowed", mk4(s, PC * PH * PW, PH * PW, PW, 1, PH * PW + PW + 2)});
    v.push_back({"hw-transposed", mk4(s, C * H * W, H * W, 1, H, 0)});
    v.push_back({"bcast-c", mk4(s, H * W, 0, W, 1, 2)});
    v.push_back({"step-w", mk4(s, 2 * C * H * W, 2 * H * W, 2 * W, 2, 1)});
    if (H == 1) v.push_back({"1d-h0", mk4(s, C * W, W, 0, 1, 4)}); /* as ops/pool.c's 1-d view */
    (void)N;
    return v;
}

static wk_layout contig4(const int64_t s[4]) { return mk4(s, s[1] * s[2] * s[3], s[2] * s[3], s[3], 1, 0); }

/* bit-exact, except that in ops that compute (avg, bilinear) any NaN
 * matches any NaN: for NaN + NaN, x86 keeps the NaN of the instruction's
 * first operand, and which one that is the compiler picks (addition
 * commutes), so the sign of such a NaN differs between cpu_pool.c and this
 * build (seen for f8e4m3 avg); a GPU makes its canonical NaN anyway. */
static int compare(const Buf &cpu, const Buf &emu, int dt, int64_t n, bool arith, const char *what) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (emu_same_elem(cpu.data(), emu.data(), i, dt, arith)) continue;
        if (bad < 2 && g_fail < 40)
            printf("  %s [%lld]: cpu %.9g emu %.9g\n", what, (long long)i, wkc_load_f64(cpu.data(), i, dt),
                   wkc_load_f64(emu.data(), i, dt));
        bad++;
    }
    return bad;
}

/* ops/pool.c's output length (floor mode), or -1 where it rejects */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p) {
    if (p > k / 2) return -1;
    int64_t num = in - (k - 2 * p);
    return num < 0 ? -1 : num / s + 1;
}

/* ------------------------------------------------------------ pooling */

static const int64_t g_shapes[][4] = {
    {1, 1, 1, 1}, {2, 3, 5, 7}, {1, 2, 1, 9}, {2, 1, 6, 4}, {1, 1, 4, 13}, {3, 2, 7, 1}, {1, 1, 8, 8},
};

static long g_nan_max = 0, g_negzero_max = 0; /* f32 max pool outputs that are NaN / -0 */

static void test_pool(Buf *in) {
    long before = g_checks;
    wk_cu_stream s = nullptr;
    for (auto &sh : g_shapes) {
        auto lays = x_layouts(sh);
        for (auto &L : lays) {
            CHECK(emu_need(L.l) <= BUFN, "buffer too small for %s", L.name);
            for (int kh = 1; kh <= 3; kh++)
            for (int kw = 1; kw <= 3; kw++)
            for (int sh_ = 1; sh_ <= 3; sh_++)
            for (int sw = 1; sw <= 3; sw++)
            for (int ph = 0; ph <= kh / 2; ph++)
            for (int pw = 0; pw <= kw / 2; pw++) {
                const int64_t OH = pool_out(sh[2], kh, sh_, ph), OW = pool_out(sh[3], kw, sw, pw);
                if (OH < 0 || OW < 0) continue;
                const int64_t os[4] = {sh[0], sh[1], OH, OW};
                const wk_layout ld = contig4(os);
                const int64_t n = os[0] * os[1] * OH * OW;
                for (int mode = 0; mode < 3; mode++) { /* max, avg, avg count_include_pad */
                    wk_pool_params p = {{kh, kw}, {sh_, sw}, {ph, pw}, mode == 0, mode == 2};
                    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
                        if (mode > 0 && !is_float_dt(dt)) continue;
                        const int es = wkc_size(dt);
                        Buf a((size_t)n * es + 8, 0x5a), b((size_t)n * es + 8, 0x5a);
                        wk_status st = wk__cpu_pool2d(NULL, in[dt].data(), &L.l, a.data(), &ld, (wk_dtype)dt, &p);
                        CHECK(st == WK_OK, "cpu pool2d status %d", (int)st);
                        int rc = wk__cu_pool2d(s, in[dt].data(), cv(L.l), b.data(), cv(ld), (wk_dtype)dt, &p);
                        SYNC();
                        CHECK(rc == 0, "pool2d rc %d", rc);
                        int bad = compare(a, b, dt, n, mode > 0, mode ? "avg" : "max");
                        if (mode == 0 && dt == WK_F32)
                            for (int64_t i = 0; i < n; i++) {
                                float v;
                                memcpy(&v, a.data() + i * 4, 4);
                                g_nan_max += v != v;
                                g_negzero_max += v == 0 && signbit(v);
                            }
                        CHECK(bad == 0 && !memcmp(a.data() + n * es, b.data() + n * es, 8),
                              "%s pool %s %s shape %lldx%lldx%lldx%lld k %dx%d s %dx%d p %dx%d: %d mismatches",
                              mode == 0 ? "max" : mode == 1 ? "avg" : "avg(cip)", L.name, dtn(dt), (long long)sh[0],
                              (long long)sh[1], (long long)sh[2], (long long)sh[3], kh, kw, sh_, sw, ph, pw, bad);
                    }
                }
            }
        }
    }
    /* empty outputs: nothing queued, nothing written */
    {
        const int64_t xs[4] = {0, 3, 5, 5}, os[4] = {0, 3, 2, 2};
        const wk_layout lx = contig4(xs), ld = contig4(os);
        wk_pool_params p = {{3, 3}, {2, 2}, {1, 1}, true, false};
        Buf b(16, 0x77), ref(16, 0x77);
        for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
            CHECK(wk__cu_pool2d(s, in[dt].data(), cv(lx), b.data(), cv(ld), (wk_dtype)dt, &p) == 0, "empty max rc");
            SYNC();
            CHECK(b == ref, "empty max wrote");
        }
        const int64_t xs2[4] = {2, 0, 4, 4}, os2[4] = {2, 0, 4, 4};
        const wk_layout lx2 = contig4(xs2), ld2 = contig4(os2);
        p.is_max = false;
        CHECK(wk__cu_pool2d(s, in[WK_F32].data(), cv(lx2), b.data(), cv(ld2), WK_F32, &p) == 0, "empty avg rc");
        SYNC();
        CHECK(b == ref, "empty avg wrote");
    }
    /* rejected: integer avg, bad rank, mismatched N, empty window, NULL params */
    {
        const int64_t xs[4] = {1, 1, 4, 4}, os[4] = {1, 1, 2, 2}, bad_os[4] = {2, 1, 2, 2}, far[4] = {1, 1, 9, 2};
        const wk_layout lx = contig4(xs), ld = contig4(os);
        wk_pool_params avg = {{2, 2}, {2, 2}, {0, 0}, false, false};
        Buf b(64, 0);
        for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
            if (!is_float_dt(dt))
                CHECK(wk__cu_pool2d(s, in[dt].data(), cv(lx), b.data(), cv(ld), (wk_dtype)dt, &avg) != 0,
                      "avg %s accepted", dtn(dt));
        wk_cu_view r3 = cv(lx);
        r3.rank = 3;
        CHECK(wk__cu_pool2d(s, in[WK_F32].data(), r3, b.data(), cv(ld), WK_F32, &avg) != 0, "rank 3 accepted");
        CHECK(wk__cu_pool2d(s, in[WK_F32].data(), cv(lx), b.data(), cv(contig4(bad_os)), WK_F32, &avg) != 0,
              "N mismatch accepted");
        CHECK(wk__cu_pool2d(s, in[WK_F32].data(), cv(lx), b.data(), cv(contig4(far)), WK_F32, &avg) != 0,
              "window past the image accepted");
        wk_pool_params pk = {{2, 2}, {2, 2}, {2, 0}, true, false};
        CHECK(wk__cu_pool2d(s, in[WK_F32].data(), cv(lx), b.data(), cv(ld), WK_F32, &pk) != 0, "padding >= k accepted");
        CHECK(wk__cu_pool2d(s, in[WK_F32].data(), cv(lx), b.data(), cv(ld), WK_F32, NULL) != 0, "NULL params accepted");
    }
    CHECK(g_nan_max > 0 && g_negzero_max > 0, "inputs never gave a NaN (%ld) or -0 (%ld) maximum", g_nan_max,
          g_negzero_max);
    printf("pool2d: %ld checks\n", g_checks - before);
}

/* --------------------------------------------------------- resampling */

struct UpCase { int64_t n, c, h, w, oh, ow; };
static const UpCase g_up[] = {
    {2, 3, 5, 7, 8, 11},  /* up, non-integer */
    {2, 3, 5, 7, 3, 4},   /* down, non-integer */
    {1, 2, 4, 6, 8, 12},  /* exactly 2x (nearest's shift case) */
    {1, 2, 4, 6, 4, 6},   /* same size */
    {1, 1, 1, 1, 3, 5},   /* 1x1 input */
    {1, 2, 3, 5, 1, 1},   /* 1x1 output */
    {1, 1, 1, 1, 1, 1},
    {2, 1, 6, 1, 13, 2},  /* W = 1 */
    {1, 3, 1, 9, 1, 20},  /* 1-d up */
    {1, 3, 1, 9, 1, 4},   /* 1-d down */
    {1, 1, 7, 13, 29, 31},
    {1, 1, 10, 3, 7, 5},  /* mixed: H down, W up */
    {1, 1, 1, 333, 1, 1000}, /* long rows: float index precision */
    {1, 1, 1, 1000, 1, 333},
    {1, 1, 37, 50, 100, 77},
    {1, 2, 2, 6, 82, 74}, /* f32 floor(o * (float)(in/out)) != exact floor(o * in / out) at o = 41 / 37 */
};

static void test_upsample(Buf *in) {
    long before = g_checks;
    wk_cu_stream s = nullptr;
    for (auto &u : g_up) {
        const int64_t xs[4] = {u.n, u.c, u.h, u.w}, os[4] = {u.n, u.c, u.oh, u.ow};
        const wk_layout ld = contig4(os);
        const int64_t n = u.n * u.c * u.oh * u.ow;
        auto lays = x_layouts(xs);
        for (auto &L : lays) {
            CHECK(emu_need(L.l) <= BUFN, "buffer too small for %s", L.name);
            for (int mode = 0; mode < 3; mode++) { /* nearest, bilinear, bilinear align_corners */
                const bool bil = mode > 0, ac = mode == 2;
                for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
                    if (bil && !is_float_dt(dt)) continue;
                    const int es = wkc_size(dt);
                    Buf a((size_t)n * es + 8, 0x5a), b((size_t)n * es + 8, 0x5a);
                    wk_status st = wk__cpu_upsample2d(NULL, in[dt].data(), &L.l, a.data(), &ld, (wk_dtype)dt, bil, ac);
                    CHECK(st == WK_OK, "cpu upsample2d status %d", (int)st);
                    int rc = wk__cu_upsample2d(s, in[dt].data(), cv(L.l), b.data(), cv(ld), (wk_dtype)dt, bil, ac);
                    SYNC();
                    CHECK(rc == 0, "upsample2d rc %d", rc);
                    int bad = compare(a, b, dt, n, bil, bil ? "bilinear" : "nearest");
                    CHECK(bad == 0 && !memcmp(a.data() + n * es, b.data() + n * es, 8),
                          "%s %s %s %lldx%lldx%lldx%lld -> %lldx%lld: %d mismatches",
                          mode == 0 ? "nearest" : mode == 1 ? "bilinear" : "bilinear(ac)", L.name, dtn(dt),
                          (long long)u.n, (long long)u.c, (long long)u.h, (long long)u.w, (long long)u.oh,
                          (long long)u.ow, bad);
                }
            }
        }
    }
    /* empty outputs: nothing queued, nothing written */
    {
        const int64_t xs[4] = {0, 2, 3, 3}, os[4] = {0, 2, 6, 6}, xs2[4] = {1, 0, 3, 3}, os2[4] = {1, 0, 5, 2};
        Buf b(16, 0x77), ref(16, 0x77);
        for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
            for (int mode = 0; mode < 3; mode++) {
                if (mode && !is_float_dt(dt)) continue;
                CHECK(wk__cu_upsample2d(s, in[dt].data(), cv(contig4(xs)), b.data(), cv(contig4(os)), (wk_dtype)dt,
                                        mode > 0, mode == 2) == 0, "empty rc");
                CHECK(wk__cu_upsample2d(s, in[dt].data(), cv(contig4(xs2)), b.data(), cv(contig4(os2)), (wk_dtype)dt,
                                        mode > 0, mode == 2) == 0, "empty rc");
                SYNC();
                CHECK(b == ref, "empty upsample wrote");
            }
    }
    /* rejected: integer bilinear, bad rank, mismatched C, empty input plane with outputs */
    {
        const int64_t xs[4] = {1, 2, 3, 3}, os[4] = {1, 2, 5, 5}, bad_os[4] = {1, 3, 5, 5}, hole[4] = {1, 2, 0, 3};
        const wk_layout lx = contig4(xs), ld = contig4(os);
        Buf b(256, 0);
        for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
            if (!is_float_dt(dt))
                CHECK(wk__cu_upsample2d(s, in[dt].data(), cv(lx), b.data(), cv(ld), (wk_dtype)dt, true, false) != 0,
                      "bilinear %s accepted", dtn(dt));
        wk_cu_view r3 = cv(lx);
        r3.rank = 3;
        CHECK(wk__cu_upsample2d(s, in[WK_F32].data(), r3, b.data(), cv(ld), WK_F32, false, false) != 0, "rank 3");
        CHECK(wk__cu_upsample2d(s, in[WK_F32].data(), cv(lx), b.data(), cv(contig4(bad_os)), WK_F32, true, false) != 0,
              "C mismatch accepted");
        CHECK(wk__cu_upsample2d(s, in[WK_F32].data(), cv(contig4(hole)), b.data(), cv(ld), WK_F32, false, false) != 0,
              "H = 0 input with outputs accepted");
    }
    printf("upsample2d: %ld checks\n", g_checks - before);
}

/* The 64-bit unravel (outputs of 2^32 elements and more, too big to run
 * here) against the 32-bit one the tests above use. */
static void test_unravel() {
    long before = g_checks;
    static const int64_t geos[][3] = {{3, 5, 7}, {1, 1, 1}, {17, 1, 9}, {2, 13, 1}, {5, 3, 11}};
    for (auto &q : geos) {
        PkGeo g;
        memset(&g, 0, sizeof g);
        g.C = q[0], g.OH = q[1], g.OW = q[2];
        g.xsn = 1000003, g.xsc = 1009, g.xoff = 11;
        const int64_t n = 4 * g.C * g.OH * g.OW;
        long bad = 0;
        for (int64_t i = 0; i < n; i++) {
            g.small = 1;
            PkPos a = pk_pos(g, i);
            g.small = 0;
            PkPos b = pk_pos(g, i);
            const int64_t ow = i % g.OW, oh = i / g.OW % g.OH, c = i / (g.OW * g.OH) % g.C, nn = i / (g.OW * g.OH * g.C);
            if (a.oh != b.oh || a.ow != b.ow || a.plane != b.plane || a.ow != ow || a.oh != oh ||
                a.plane != 11 + nn * 1000003 + c * 1009)
                bad++;
        }
        CHECK(bad == 0, "unravel %lldx%lldx%lld: %ld mismatches", (long long)q[0], (long long)q[1], (long long)q[2], bad);
    }
    printf("unravel: %ld checks\n", g_checks - before);
}

int main() {
    if (emu_no_device()) return 0;
    Buf in[WK_ELEM_DTYPE_COUNT];
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) in[dt] = make_input(dt);
    test_pool(in);
    test_upsample(in);
    test_unravel();
    wk_clear_error();
    return emu_summary();
}
