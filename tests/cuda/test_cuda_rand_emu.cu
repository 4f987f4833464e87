// The CUDA random-number kernels (src/cuda/random/kernels_rand.cu) in host
// emulation: the launchers run the kernels' per-thread bodies on the CPU over
// a fake grid, so the generator, the value mapping, the stores and the
// grid-stride loop are checked without a GPU. Built by ctest like every
// tests/cuda/test_*_emu.cu. With -DGPU_MODE (buffers in managed memory, a
// sync after every launch, linked with -lcudart) the same checks run the
// real kernels; the grid-size checks then use the one real launch shape.
//
// What is checked, per float dtype (f32, f64, f16, bf16, f8e4m3):
//  - Philox4x32-10 against Random123's published known-answer vectors;
//  - uniform: every value bit-exact against a reference written here from
//    the design (an independent array-based Philox, 24/53-bit units, f32 /
//    f64 fma, rounding and the ">= hi -> lo" rule done with the CPU
//    backend's own wk__store_f64 / wk__load_f64); every value finite and in
//    [lo rounded to dt, hi); mean, variance and a 20-bin histogram against
//    wk__cpu_rand_uniform's output for the same bounds (two-sample bounds:
//    the generators differ, so only distributions can be compared); f32/f64
//    moments against the exact ones too;
//  - normal: every value within a stated tolerance of a double-precision
//    Box-Muller reference from the same bits (not bit-exact: the kernels
//    compute in f32 with libm / CUDA logf, sincospif); mean, std, tails and
//    a histogram against wk__cpu_rand_normal's output and theory;
//  - determinism, grid independence (1, 3, 7 and 64 fake threads), the
//    stream (offset k == skipping k counters; two calls with an advanced
//    offset == one call), prefixes (n = 0..13 write exactly n elements),
//    the unaligned-store path, different seeds (also only in the high 32
//    bits) differ, lo == hi, bounds not representable in dt, an f32 range
//    wider than FLT_MAX, bad arguments.
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/random/kernels_rand.cu"
#define EMU_OWN_BUF 1 /* Buf below: a raw, 64-byte aligned, poisoned allocation */
#include "emu_harness.cuh"
#include <float.h>
#include <algorithm>
#include <cmath>

extern "C" {
#include "cpu/elementwise/cpu_convert.h"
}

/* ---------------- buffers ---------------- */

struct Buf {
    unsigned char *p = nullptr;
    size_t bytes = 0;
    explicit Buf(size_t n) : bytes(n + 64) {
#ifdef GPU_MODE
        p = (unsigned char *)emu_managed_bytes(bytes);
#else
        p = (unsigned char *)aligned_alloc(64, (bytes + 63) / 64 * 64);
#endif
        memset(p, 0xA5, bytes);
    }
    ~Buf() {
#ifdef GPU_MODE
        cudaFree(p);
#else
        free(p);
#endif
    }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
};

#ifdef GPU_MODE
static void set_threads(int) {}
#else
static void set_threads(int t) { wkc_rand_emu_threads = t; }
#endif

static const wk_dtype DTS[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_F8E4M3};
static int per_of(wk_dtype dt) { return dt == WK_F64 ? 2 : 4; }
static size_t esz(wk_dtype dt) { return wk_dtype_size(dt); }

/* one launch into dst (bytes), synced; returns the launcher's code */
static int gen(bool normal, void *dst, int64_t n, wk_dtype dt, double a, double b, uint64_t seed, uint64_t off) {
    int rc = normal ? wk__cu_rand_normal(nullptr, dst, n, dt, a, b, seed, off)
                    : wk__cu_rand_uniform(nullptr, dst, n, dt, a, b, seed, off);
    SYNC();
    return rc;
}
static std::vector<double> values(const void *p, int64_t n, wk_dtype dt) {
    std::vector<double> v((size_t)n);
    for (int64_t i = 0; i < n; i++) v[(size_t)i] = wk__load_f64(p, i, dt);
    return v;
}

/* ---------------- reference generator (independent of the kernel code) ---------------- */

static void ref_philox(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
    uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]}, k[2] = {key_in[0], key_in[1]};
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k[0], n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k[1], n3 = (uint32_t)p0;
        c[0] = n0; c[1] = n1; c[2] = n2; c[3] = n3;
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    memcpy(out, c, sizeof c);
}
/* word j (0..3) of the counter that element i of a call uses */
static void ref_words(uint64_t seed, uint64_t off, int64_t group, uint32_t w[4]) {
    uint64_t c = off + (uint64_t)group;
    uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    ref_philox(ctr, key, w);
}

/* The uniform value the design specifies for element i, stored into dst
 * with the CPU backend's store (the rounding rules the CPU uses). */
static void ref_uniform(void *dst, int64_t n, wk_dtype dt, double lo, double hi, uint64_t seed, uint64_t off) {
    int per = per_of(dt);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        ref_words(seed, off, i / per, w);
        int j = (int)(i % per);
        if (dt == WK_F64) {
            uint64_t bits = ((uint64_t)w[2 * j] << 21) | (w[2 * j + 1] >> 11);
            double v = fma(hi - lo, ldexp((double)bits, -53), lo);
            if (hi > lo && v >= hi) v = lo;
            wk__store_f64(dst, i, dt, v);
        } else {
            double span = hi - lo;
            float scale = fabs(span) > (double)FLT_MAX ? 2.0f : 1.0f;
            float lo32 = dt == WK_F32 ? (float)(lo / scale) : wk__f64_to_f32_odd(lo / scale);
            float v = fmaf((float)(span / scale), ldexpf((float)(w[j] >> 8), -24), lo32) * scale;
            wk__store_f64(dst, i, dt, (double)v); /* exact f32 -> dt rounding once */
            if (hi > lo && wk__load_f64(dst, i, dt) >= hi) wk__store_f64(dst, i, dt, lo);
        }
    }
}
/* The exact (double) normal value of element i for the same bits. */
static double ref_normal(int64_t i, wk_dtype dt, double mean, double std, uint64_t seed, uint64_t off, double *z) {
    int per = per_of(dt);
    uint32_t w[4];
    ref_words(seed, off, i / per, w);
    int j = (int)(i % per);
    double u1, u2;
    if (dt == WK_F64) {
        u1 = ldexp((double)((((uint64_t)w[0] << 21) | (w[1] >> 11)) + 1), -53);
        u2 = ldexp((double)(((uint64_t)w[2] << 21) | (w[3] >> 11)), -53);
    } else {
        int pair = j / 2;
        u1 = ldexp((double)((w[2 * pair] >> 8) + 1), -24);
        u2 = ldexp((double)(w[2 * pair + 1] >> 8), -24);
    }
    double r = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
    *z = (j % 2 == 0) ? r * cos(th) : r * sin(th);
    return mean + std * *z;
}

/* ---------------- statistics ---------------- */

struct Stats {
    double mean, var;
};
static Stats stats(const std::vector<double> &v) {
    double s = 0, s2 = 0;
    for (double x : v) s += x;
    double m = s / (double)v.size();
    for (double x : v) s2 += (x - m) * (x - m);
    return {m, s2 / (double)(v.size() - 1)};
}
static double lag1_corr(const std::vector<double> &v) {
    Stats st = stats(v);
    double c = 0;
    for (size_t i = 0; i + 1 < v.size(); i++) c += (v[i] - st.mean) * (v[i + 1] - st.mean);
    return c / (double)(v.size() - 1) / st.var;
}
static std::vector<long> histogram(const std::vector<double> &v, double lo, double hi, int bins) {
    std::vector<long> h((size_t)bins + 2, 0); /* + below, above */
    for (double x : v) {
        if (x < lo) h[(size_t)bins]++;
        else if (x >= hi) h[(size_t)bins + 1]++;
        else h[(size_t)std::min(bins - 1, (int)((x - lo) / (hi - lo) * bins))]++;
    }
    return h;
}
/* two samples of equal size from one distribution: every bin within 5 sigma */
static bool same_hist(const std::vector<long> &a, const std::vector<long> &b, int *bad_bin) {
    for (size_t k = 0; k < a.size(); k++) {
        double d = fabs((double)a[k] - (double)b[k]), sd = sqrt((double)(a[k] + b[k]) + 1.0);
        if (d > 5.0 * sd + 3.0) { *bad_bin = (int)k; return false; }
    }
    return true;
}
static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
/* Kolmogorov-Smirnov distance of v against a CDF */
template <class F> static double ks(std::vector<double> v, F cdf) {
    std::sort(v.begin(), v.end());
    double d = 0, n = (double)v.size();
    for (size_t i = 0; i < v.size(); i++) {
        double f = cdf(v[i]);
        d = std::max(d, std::max(fabs(f - (double)i / n), fabs((double)(i + 1) / n - f)));
    }
    return d;
}

/* ---------------- tests ---------------- */

static void test_philox_kat() {
    struct Kat {
        uint32_t c[4], k[2], out[4];
    } kats[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (auto &t : kats) {
        uint4 r = wkc_philox4x32_10(make_uint4(t.c[0], t.c[1], t.c[2], t.c[3]), make_uint2(t.k[0], t.k[1]));
        uint32_t got[4] = {r.x, r.y, r.z, r.w}, ref[4];
        CHECK(memcmp(got, t.out, 16) == 0, "philox KAT %08x: got %08x %08x %08x %08x", t.c[0], got[0], got[1],
              got[2], got[3]);
        ref_philox(t.c, t.k, ref);
        CHECK(memcmp(ref, t.out, 16) == 0, "reference philox KAT %08x", t.c[0]);
    }
    /* the kernel's counter layout against the reference, a 64-bit counter */
    uint64_t seed = 0x0123456789abcdefull, off = 0xfffffffffffffff0ull;
    for (int64_t g = 0; g < 40; g++) {
        uint4 r = wkc_rand_words(seed, off, g);
        uint32_t got[4] = {r.x, r.y, r.z, r.w}, ref[4];
        ref_words(seed, off, g, ref);
        CHECK(memcmp(got, ref, 16) == 0, "counter layout g=%lld", (long long)g);
    }
}

static void test_counters() {
    CHECK(wk__cu_rand_counters(0, WK_F32, false) == 0, "counters n=0");
    CHECK(wk__cu_rand_counters(-3, WK_F32, true) == 0, "counters n<0");
    CHECK(wk__cu_rand_counters(1, WK_F32, false) == 1, "counters 1");
    CHECK(wk__cu_rand_counters(4, WK_F16, true) == 1, "counters 4");
    CHECK(wk__cu_rand_counters(5, WK_F8E4M3, false) == 2, "counters 5");
    CHECK(wk__cu_rand_counters(3, WK_F64, true) == 2, "counters f64 3");
    CHECK(wk__cu_rand_counters(4, WK_F64, false) == 2, "counters f64 4");
    CHECK(wk__cu_rand_counters(10, WK_U8, false) == 0, "counters int dtype");
    CHECK(wk__cu_rand_counters(INT64_MAX, WK_F32, false) == ((uint64_t)INT64_MAX + 3) / 4, "counters huge");
    /* bad arguments queue nothing */
    unsigned char b[16];
    memset(b, 0x5a, sizeof b);
    CHECK(wk__cu_rand_uniform(nullptr, b, 4, WK_I32, 0, 1, 1, 0) != 0, "int dtype rejected");
    CHECK(wk__cu_rand_normal(nullptr, b, 4, WK_U8, 0, 1, 1, 0) != 0, "int dtype rejected (normal)");
    CHECK(wk__cu_rand_uniform(nullptr, b, -1, WK_F32, 0, 1, 1, 0) != 0, "n < 0 rejected");
    CHECK(wk__cu_rand_normal(nullptr, nullptr, 3, WK_F32, 0, 1, 1, 0) != 0, "NULL dst rejected");
    CHECK(wk__cu_rand_uniform(nullptr, nullptr, 0, WK_F32, 0, 1, 1, 0) == 0, "n = 0 with NULL dst is fine");
    bool untouched = true;
    for (unsigned char c : b) untouched = untouched && c == 0x5a;
    CHECK(untouched, "bad calls wrote nothing");
}

/* every structural property of one (dtype, kind) */
static void test_stream(wk_dtype dt, bool normal, double a, double b) {
    const char *nm = wk_dtype_name(dt);
    const char *kind = normal ? "normal" : "uniform";
    const size_t es = esz(dt);
    const int per = per_of(dt);
    const int64_t N = 1003; /* not a multiple of 4 */
    const uint64_t seed = 0x5eed1234abcdull, off = 77;

    Buf base(N * es);
    CHECK(gen(normal, base.p, N, dt, a, b, seed, off) == 0, "%s %s launch", nm, kind);
    /* determinism and grid independence */
    const int threads[] = {1, 3, 7, 64};
    for (int t : threads) {
        set_threads(t);
        Buf o(N * es);
        gen(normal, o.p, N, dt, a, b, seed, off);
        CHECK(memcmp(o.p, base.p, N * es) == 0, "%s %s: %d threads differ", nm, kind, t);
    }
    set_threads(7);
    /* offset k == the same stream k counters on */
    for (uint64_t k : {(uint64_t)1, (uint64_t)2, (uint64_t)5}) {
        Buf o(N * es);
        gen(normal, o.p, N - (int64_t)k * per, dt, a, b, seed, off + k);
        CHECK(memcmp(o.p, base.p + k * per * es, (N - k * per) * es) == 0, "%s %s: offset +%llu", nm, kind,
              (unsigned long long)k);
    }
    /* two calls with the advanced offset == one call (split at 4*per*10, the
     * rest odd), and a split not at a group boundary continues at the next group */
    for (int64_t n1 : {(int64_t)40 * per, (int64_t)37, (int64_t)1}) {
        Buf o(N * es);
        gen(normal, o.p, n1, dt, a, b, seed, off);
        uint64_t used = wk__cu_rand_counters(n1, dt, normal);
        int64_t skip = (int64_t)used * per; /* first element index of the next call in the big stream */
        gen(normal, o.p + n1 * es, N - skip, dt, a, b, seed, off + used);
        bool ok = memcmp(o.p, base.p, n1 * es) == 0 && memcmp(o.p + n1 * es, base.p + skip * es, (N - skip) * es) == 0;
        CHECK(ok, "%s %s: continuation after n1=%lld", nm, kind, (long long)n1);
    }
    /* prefixes: n elements written exactly, nothing past them (tails) */
    for (int64_t n = 0; n <= 13; n++) {
        Buf o(16 * es);
        gen(normal, o.p, n, dt, a, b, seed, off);
        bool ok = memcmp(o.p, base.p, n * es) == 0;
        for (size_t k = n * es; k < o.bytes; k++) ok = ok && o.p[k] == 0xA5;
        CHECK(ok, "%s %s: prefix n=%lld", nm, kind, (long long)n);
    }
    /* unaligned dst: the element-wise store path gives the same values */
    {
        Buf o((N + 1) * es);
        gen(normal, o.p + es, N, dt, a, b, seed, off);
        CHECK(memcmp(o.p + es, base.p, N * es) == 0, "%s %s: unaligned dst", nm, kind);
    }
    /* other seeds (also only in the high word) and other offsets differ */
    for (uint64_t s2 : {(uint64_t)(seed + 1), (uint64_t)(seed ^ (1ull << 40))}) {
        Buf o(N * es);
        gen(normal, o.p, N, dt, a, b, s2, off);
        int64_t same = 0;
        for (int64_t i = 0; i < N; i++) same += memcmp(o.p + i * es, base.p + i * es, es) == 0;
        /* f8e4m3 has few values: chance equality up to ~1/8 */
        CHECK(same < (dt == WK_F8E4M3 ? N / 4 : N / 20), "%s %s: seed %llx too similar (%lld equal)", nm, kind,
              (unsigned long long)s2, (long long)same);
    }
}

/* uniform: bit-exact against the reference, range, distribution vs CPU */
static void test_uniform(wk_dtype dt, double lo, double hi, int64_t n) {
    const char *nm = wk_dtype_name(dt);
    const size_t es = esz(dt);
    const uint64_t seed = 0x1234u + (uint64_t)dt * 977u, off = 3;
    Buf g(n * es), r(n * es), c(n * es);
    CHECK(gen(false, g.p, n, dt, lo, hi, seed, off) == 0, "uniform launch");
    ref_uniform(r.p, n, dt, lo, hi, seed, off);
    int64_t diff = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(g.p + i * es, r.p + i * es, es)) { diff++; if (first < 0) first = i; }
    CHECK(diff == 0, "uniform %s [%g,%g): %lld differ from the reference (first %lld: %.9g vs %.9g)", nm, lo, hi,
          (long long)diff, (long long)first, first >= 0 ? wk__load_f64(g.p, first, dt) : 0.0,
          first >= 0 ? wk__load_f64(r.p, first, dt) : 0.0);

    /* range: [lo rounded to dt as the CPU stores it, hi) */
    unsigned char lob[8];
    wk__store_f64(lob, 0, dt, lo);
    double lo_dt = wk__load_f64(lob, 0, dt);
    std::vector<double> v = values(g.p, n, dt);
    int64_t bad = 0;
    for (double x : v) bad += !(std::isfinite(x) && x >= lo_dt && (x < hi || (lo == hi && x == lo_dt)));
    CHECK(bad == 0, "uniform %s [%g,%g): %lld values out of range", nm, lo, hi, (long long)bad);
    /* distributions only for ranges many ulps wide (a range a few ulps wide
     * is all rounding: checked above bit for bit instead) */
    if (hi - lo < 0x1p-10 * std::max(fabs(lo), fabs(hi)) || n < 10000) return;

    /* against the CPU backend's numbers for the same bounds */
    wk_device_set_seed(wk_cpu(), 42 + (uint64_t)dt);
    wk__cpu_rand_uniform(wk_cpu(), c.p, n, dt, lo, hi);
    std::vector<double> vc = values(c.p, n, dt);
    Stats sg = stats(v), sc = stats(vc);
    double se_mean = sqrt(2.0 * sc.var / (double)n);
    CHECK(fabs(sg.mean - sc.mean) < 5 * se_mean, "uniform %s [%g,%g): mean %.6g vs cpu %.6g", nm, lo, hi, sg.mean,
          sc.mean);
    /* variance of a uniform-like variable: sd(var_hat) ~ var * sqrt(0.8 / n) */
    double se_var = sc.var * sqrt(2 * 0.8 / (double)n) + 1e-12;
    CHECK(fabs(sg.var - sc.var) < 6 * se_var, "uniform %s [%g,%g): var %.6g vs cpu %.6g", nm, lo, hi, sg.var, sc.var);
    int bin = -1;
    CHECK(same_hist(histogram(v, lo, hi, 20), histogram(vc, lo, hi, 20), &bin),
          "uniform %s [%g,%g): histogram bin %d differs from cpu", nm, lo, hi, bin);
    /* how often exactly lo comes out (the ">= hi -> lo" mass for narrow dtypes) */
    long eq_g = 0, eq_c = 0;
    for (int64_t i = 0; i < n; i++) { eq_g += v[(size_t)i] == lo_dt; eq_c += vc[(size_t)i] == lo_dt; }
    CHECK(fabs((double)(eq_g - eq_c)) <= 5 * sqrt((double)(eq_g + eq_c) + 1) + 3,
          "uniform %s [%g,%g): P(lo) %ld vs cpu %ld", nm, lo, hi, eq_g, eq_c);
    CHECK(fabs(lag1_corr(v)) < 5 / sqrt((double)n), "uniform %s: lag-1 correlation %.4g", nm, lag1_corr(v));
    if (dt == WK_F32 || dt == WK_F64) {
        double w = hi - lo, m = (lo + hi) / 2, var = w * w / 12;
        CHECK(fabs(sg.mean - m) < 5 * sqrt(var / (double)n), "uniform %s: mean %.6g, exact %.6g", nm, sg.mean, m);
        CHECK(fabs(sg.var - var) < 5 * var * sqrt(0.8 / (double)n), "uniform %s: var %.6g, exact %.6g", nm, sg.var,
              var);
        double d = ks(v, [&](double x) { return (x - lo) / w; });
        CHECK(d < 1.95 / sqrt((double)n), "uniform %s: KS %.4g", nm, d);
    }
}

/* normal: close to the double reference from the same bits, distribution vs CPU and theory */
static void test_normal(wk_dtype dt, double mean, double std, int64_t n) {
    const char *nm = wk_dtype_name(dt);
    const size_t es = esz(dt);
    const uint64_t seed = 0xabcdefu + (uint64_t)dt * 131u, off = 11;
    Buf g(n * es), c(n * es);
    CHECK(gen(true, g.p, n, dt, mean, std, seed, off) == 0, "normal launch");
    std::vector<double> v = values(g.p, n, dt);
    /* tolerance: f32 math (logf, sqrtf, cos/sin of an f32 angle: a few f32
     * ulps of |mean| + std*(|z|+1)), then one rounding to dt */
    double rel = dt == WK_F64 ? 1e-13 : 8e-7, ulp_dt = dt == WK_F64 ? 0x1p-52 : dt == WK_F32 ? 0x1p-23
                                                               : dt == WK_F16  ? 0x1p-10
                                                               : dt == WK_BF16 ? 0x1p-7
                                                                               : 0x1p-3;
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double z, ref = ref_normal(i, dt, mean, std, seed, off, &z);
        double tol = rel * 4 * (fabs(mean) + std * (fabs(z) + 1)) + ulp_dt * fabs(ref) + 1e-300;
        if (dt == WK_F16 || dt == WK_F8E4M3) tol += dt == WK_F16 ? 0x1p-24 : 0x1p-9; /* subnormal spacing */
        double e = fabs(v[(size_t)i] - ref);
        if (!(e <= tol)) { bad++; if (first < 0) first = i; }
        worst = std::max(worst, e / tol);
    }
    double z_first = 0, ref_first = first >= 0 ? ref_normal(first, dt, mean, std, seed, off, &z_first) : 0.0;
    CHECK(bad == 0, "normal %s: %lld values off the reference (first %lld: %.9g vs %.9g; worst error/tol %.3g)", nm,
          (long long)bad, (long long)first, first >= 0 ? v[(size_t)first] : 0.0, ref_first, worst);
    int64_t nonfinite = 0;
    for (double x : v) nonfinite += !std::isfinite(x);
    CHECK(nonfinite == 0, "normal %s: %lld non-finite values", nm, (long long)nonfinite);
    if (n < 10000 || std == 0) return; /* distributions: large samples only */

    wk_device_set_seed(wk_cpu(), 4242 + (uint64_t)dt);
    wk__cpu_rand_normal(wk_cpu(), c.p, n, dt, mean, std);
    std::vector<double> vc = values(c.p, n, dt);
    Stats sg = stats(v), sc = stats(vc);
    CHECK(fabs(sg.mean - sc.mean) < 5 * sqrt(2 * sc.var / (double)n), "normal %s: mean %.6g vs cpu %.6g", nm, sg.mean,
          sc.mean);
    /* normal: sd(var_hat) = var * sqrt(2 / n) */
    CHECK(fabs(sg.var - sc.var) < 5 * sc.var * sqrt(4.0 / (double)n), "normal %s: var %.6g vs cpu %.6g", nm, sg.var,
          sc.var);
    CHECK(fabs(sg.mean - mean) < 5 * std / sqrt((double)n), "normal %s: mean %.6g, exact %.6g", nm, sg.mean, mean);
    /* rounding to dt adds about spacing^2/12 of variance: allowed for */
    double q = dt == WK_F8E4M3 ? 0.5 * (fabs(mean) + 2 * std) * 0.125 : 0;
    CHECK(fabs(sg.var - std * std) < 5 * std * std * sqrt(2.0 / (double)n) + q * q / 6,
          "normal %s: var %.6g, exact %.6g", nm, sg.var, std * std);
    int bin = -1;
    CHECK(same_hist(histogram(v, mean - 4 * std, mean + 4 * std, 24), histogram(vc, mean - 4 * std, mean + 4 * std, 24),
                    &bin),
          "normal %s: histogram bin %d differs from cpu", nm, bin);
    long tg = 0, tc = 0;
    for (int64_t i = 0; i < n; i++) {
        tg += fabs(v[(size_t)i] - mean) > 2 * std;
        tc += fabs(vc[(size_t)i] - mean) > 2 * std;
    }
    double pt = 2 * normal_cdf(-2.0) * (double)n;
    CHECK(fabs((double)tg - pt) < 5 * sqrt(pt) + (dt == WK_F8E4M3 ? 0.02 * (double)n : 0),
          "normal %s: %ld beyond 2 sigma, expected %.0f (cpu %ld)", nm, tg, pt, tc);
    CHECK(fabs(lag1_corr(v)) < 5 / sqrt((double)n), "normal %s: lag-1 correlation %.4g", nm, lag1_corr(v));
    if (dt == WK_F32 || dt == WK_F64) {
        double d = ks(v, [&](double x) { return normal_cdf((x - mean) / std); });
        CHECK(d < 1.95 / sqrt((double)n), "normal %s: KS %.4g", nm, d);
    }
}

static void test_edges(wk_dtype dt) {
    const char *nm = wk_dtype_name(dt);
    const size_t es = esz(dt);
    /* std = 0: every value is mean rounded to dt */
    {
        const int64_t n = 9;
        Buf g(n * es);
        gen(true, g.p, n, dt, 0.3, 0.0, 5, 0);
        unsigned char m[8];
        wk__store_f64(m, 0, dt, 0.3);
        bool ok = true;
        for (int64_t i = 0; i < n; i++) ok = ok && memcmp(g.p + i * es, m, es) == 0;
        CHECK(ok, "normal %s std=0 gives mean", nm);
    }
    /* n = 1 */
    {
        Buf g(es), h(8 * es);
        gen(false, g.p, 1, dt, -1, 1, 9, 4);
        gen(false, h.p, 8, dt, -1, 1, 9, 4);
        CHECK(memcmp(g.p, h.p, es) == 0 && g.p[es] == 0xA5, "uniform %s n=1", nm);
        double x = wk__load_f64(g.p, 0, dt);
        CHECK(x >= -1 && x < 1, "uniform %s n=1 in range", nm);
    }
}

/* the f32-only wide range: the span does not fit in f32 */
static void test_wide_f32() {
    const int64_t n = 20001;
    Buf g(n * 4);
    double lo = -3e38, hi = 3.2e38;
    gen(false, g.p, n, WK_F32, lo, hi, 77, 0);
    std::vector<double> v = values(g.p, n, WK_F32);
    int64_t bad = 0, neg = 0;
    for (double x : v) { bad += !(std::isfinite(x) && x >= (double)(float)lo && x < hi); neg += x < 0; }
    CHECK(bad == 0, "f32 wide range: %lld out of range", (long long)bad);
    double pn = (double)n * 3.0 / 6.2; /* P(x < 0) = 3 / 6.2 */
    CHECK(fabs((double)neg - pn) < 5 * sqrt(pn), "f32 wide range: %lld negative, expected %.0f", (long long)neg, pn);
    Buf r(n * 4);
    ref_uniform(r.p, n, WK_F32, lo, hi, 77, 0);
    CHECK(memcmp(g.p, r.p, n * 4) == 0, "f32 wide range against the reference");
}

int main() {
    if (emu_no_device()) return 0;
    long before = g_checks;
    test_philox_kat();
    test_counters();
    printf("philox + counters: %ld checks\n", g_checks - before);

    before = g_checks;
    for (wk_dtype dt : DTS) {
        test_stream(dt, false, -1.5, 2.5);
        test_stream(dt, true, 0.25, 3.0);
        test_edges(dt);
    }
    printf("stream (determinism, grid, offsets, tails): %ld checks\n", g_checks - before);

    before = g_checks;
    const double ranges[][2] = {{0, 1}, {-2, 3}, {0.1, 0.7}, {-1000, 1000.5}, {1, 1 + 0x1p-20}, {0.5, 0.5}};
    for (wk_dtype dt : DTS)
        for (auto &rg : ranges) {
            if (dt != WK_F64 && dt != WK_F32 && rg[1] - rg[0] < 1e-3 && rg[1] != rg[0]) continue; /* sub-ulp */
            test_uniform(dt, rg[0], rg[1], 100003);
        }
    /* f64: lo + span*u can round up to hi (lo = 1, hi = 1 + 2^-52): the guard */
    test_uniform(WK_F64, 1, 1 + 0x1p-52, 30001);
    test_uniform(WK_F64, 1, 1 + 0x1p-51, 30001);
    test_wide_f32();
    printf("uniform: %ld checks\n", g_checks - before);

    before = g_checks;
    for (wk_dtype dt : DTS) {
        test_normal(dt, 0.0, 1.0, 100002);
        test_normal(dt, 0.5, 2.0, 100001);
        test_normal(dt, -3.0, 0.01, 2001);
    }
    printf("normal: %ld checks\n", g_checks - before);

    return emu_summary();
}
