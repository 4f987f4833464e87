/* CUDA random numbers (launchers in kernels_rand.h): uniform in [lo, hi)
 * and normal(mean, std) for f32, f64, f16, bf16 and f8e4m3, mirroring
 * wk__cpu_rand_uniform / wk__cpu_rand_normal (src/cpu/cpu_backend.c).
 *
 * Generator: Philox4x32-10 (Salmon et al., SC'11), written here rather than
 * taken from cuRAND so that the stream is a pure function of
 * (seed, counter) - reproducible across GPUs, grid shapes and library
 * versions, and runnable on the host for the emulation test. Key = the
 * 64-bit seed (low word first), counter = {lo32(c), hi32(c), 0, 0} with
 * c = offset + g. Counter g of a call makes one "group" of output
 * elements: 4 for f32 and narrower (one 32-bit word each), 2 for f64 (two
 * words each), uniform and normal alike. One thread per group (grid-stride
 * loop), so which thread computes a group never changes its value.
 *
 * Uniform: u = 24 random bits * 2^-24 (f64: 53 bits * 2^-53) in [0, 1),
 * v = fma(hi - lo, u, lo) in f32 (f64 for f64; f32 because consumer GPUs
 * run f64 at 1/32..1/64 rate), rounded to dt. The fma is explicit (not left
 * to nvcc's contraction) so the device and the host emulation round
 * identically. For narrow dtypes lo enters as f64 -> f32 rounded to odd, so
 * u = 0 gives lo rounded to dt exactly as the CPU stores it. As on the CPU,
 * a value that rounds to >= hi is replaced by lo rounded to dt (the CPU's
 * rule, not a resample: it keeps one value per element and the counter
 * budget fixed); unlike the CPU the check also runs for f64 (lo + span*u can
 * round up to hi there too, e.g. lo = 1, hi = 1 + 2^-52). An f32 span
 * beyond FLT_MAX (e.g. [-3e38, 3e38)) is computed halved and doubled after
 * (exact), where the CPU computes in f64.
 * Normal: Box-Muller on pairs of uniforms, u1 in (0, 1] (bits + 1, never
 * log 0), u2 in [0, 1): r = sqrt(-2 log u1), z = (r cos 2 pi u2,
 * r sin 2 pi u2), out = fma(std, z, mean) in f32 (f64 for f64), rounded to
 * dt; elements 2k / 2k+1 are the cosine / sine outputs of one pair, as on
 * the CPU. f32 and narrower: 2 pairs per counter (24-bit uniforms; |z| is
 * at most 5.77); f64: 1 pair (53-bit uniforms; |z| at most 8.57).
 *
 * Stores: a full group is one 4/8/16-byte store when dst is aligned for it
 * (checked once per launch); the tail group and unaligned buffers store
 * element by element. Deterministic: no atomics, no shared state.
 *
 * Launch: one work item per group through cuda_index.cuh's
 * wkc_launch_items. Host emulation (WKC_HOST_EMULATION): it runs the same
 * per-group code on the host over a fake grid of wkc_rand_emu_threads
 * threads (default 7; the test also runs 1, 3 and 64). Device and
 * emulation produce identical uniform bits (integer bit extraction, exact
 * int->float, explicit fma, RNE conversions); normal outputs can differ in
 * the last bit or so (CUDA's logf/sincospif vs the host libm).
 * Checked: compiled for sm_80 and sm_90 (warnings as errors); host
 * emulation (tests/cuda/test_cuda_rand_emu.cu: Philox known-answer vectors,
 * ranges, moments and histograms against wk__cpu_rand_*, stream continuity,
 * grid independence). */
#include "cuda/common/cuda_index.cuh"
#include "cuda/random/kernels_rand.h"
#include <float.h>

#ifdef WKC_HOST_EMULATION
static int wkc_rand_emu_threads = WKC_EMU_THREADS; /* fake grid size; the test varies it */
#define WKC_RAND_EMU_THREADS wkc_rand_emu_threads
#else
#define WKC_RAND_EMU_THREADS WKC_EMU_THREADS /* unused on the device */
#endif

/* ---- Philox4x32-10 ---- */

WKC_HD void wkc_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
#ifdef __CUDA_ARCH__
    *hi = __umulhi(a, b);
    *lo = a * b;
#else
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
#endif
}

/* The 10-round Philox4x32 bijection of counter c under key k. */
WKC_HD uint4 wkc_philox4x32_10(uint4 c, uint2 k) {
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u; /* round multipliers */
    const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u; /* Weyl key increments */
WKC_UNROLL
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k.x += W0;
            k.y += W1;
        }
        uint32_t hi0, lo0, hi1, lo1;
        wkc_mulhilo32(M0, c.x, &hi0, &lo0);
        wkc_mulhilo32(M1, c.z, &hi1, &lo1);
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

/* The 4 random words of counter offset + g under seed. */
WKC_HD uint4 wkc_rand_words(uint64_t seed, uint64_t offset, int64_t g) {
    uint64_t c = offset + (uint64_t)g;
    return wkc_philox4x32_10(make_uint4((uint32_t)c, (uint32_t)(c >> 32), 0u, 0u),
                             make_uint2((uint32_t)seed, (uint32_t)(seed >> 32)));
}

/* ---- bits -> unit floats ---- */

WKC_HD float wkc_unit24(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }            /* [0, 1) */
WKC_HD float wkc_unit24_open0(uint32_t w) { return (float)((w >> 8) + 1) * 0x1p-24f; } /* (0, 1] */
WKC_HD uint64_t wkc_bits53(uint32_t a, uint32_t b) { return ((uint64_t)a << 21) | (b >> 11); }
WKC_HD double wkc_unit53(uint32_t a, uint32_t b) { return (double)wkc_bits53(a, b) * 0x1p-53; }
WKC_HD double wkc_unit53_open0(uint32_t a, uint32_t b) { return (double)(wkc_bits53(a, b) + 1) * 0x1p-53; }

/* (cos, sin) of 2 pi u. Device: sincospi (exact argument reduction); host:
 * libm on 2 pi u (the emulation checks statistics, not last bits). */
WKC_HD void wkc_cossin_2pi(float u, float *c, float *s) {
#ifdef __CUDA_ARCH__
    sincospif(2.0f * u, s, c);
#else
    float th = 6.28318530717958647692f * u;
    *c = cosf(th);
    *s = sinf(th);
#endif
}
WKC_HD void wkc_cossin_2pi(double u, double *c, double *s) {
#ifdef __CUDA_ARCH__
    sincospi(2.0 * u, s, c);
#else
    double th = 6.28318530717958647692 * u;
    *c = cos(th);
    *s = sin(th);
#endif
}

namespace {

/* Launch parameters (passed by value). Uniform: a = lo, b = hi - lo;
 * normal: a = mean, b = std. */
struct RandP {
    void *dst;
    int64_t n;      /* elements */
    int64_t groups; /* counters = ceil(n / per) */
    uint64_t seed, offset;
    float a32, b32, scale32; /* f32 computation: (a32 + b32 * u) * scale32 */
    double a64, b64;
    float hi32_ceil;             /* uniform guard: smallest f32 >= hi (or +inf) */
    double hi64;                 /* uniform guard, f64 */
    unsigned long long lo_bits;  /* uniform guard: lo rounded to dt, as its bits */
    int32_t guard;               /* uniform: hi > lo */
    int32_t wide;                /* dst aligned for one store per full group */
};

/* per-dtype storage and the f32 -> storage rounding */
template <int DT> struct RandT {
    typedef typename wkc_t<DT>::S S;
    static const int per = DT == WK_F64 ? 2 : 4;
    static WKC_HD S from_f32(float v) {
        if constexpr (DT == WK_F32) return v;
        else if constexpr (DT == WK_F16) return wkc_f32_to_f16(v);
        else if constexpr (DT == WK_BF16) return wkc_f32_to_bf16(v);
        else if constexpr (DT == WK_F8E4M3) return wkc_f32_to_f8e4m3(v);
        else return (S)v;
    }
    static WKC_HD S from_bits(unsigned long long b) {
        if constexpr (DT == WK_F32) return wkc_u2f((uint32_t)b);
        else if constexpr (DT == WK_F64) return wkc_bits_to_f64(WK_F64, b);
        else return (S)b;
    }
};

/* Store the `per` values of group g: one wide store, or element by element
 * for the tail group / an unaligned dst. */
template <int DT> WKC_HD void wkc_rand_store(const RandP &p, int64_t g, const typename RandT<DT>::S *v) {
    typedef RandT<DT> R;
    typedef typename R::S S;
    S *d = (S *)p.dst + g * R::per;
    int64_t left = p.n - g * R::per;
    if (p.wide && left >= R::per) {
        const int bytes = (int)sizeof(S) * R::per;
#ifdef __CUDA_ARCH__
        if constexpr (sizeof(S) * R::per == 16) {
            uint4 w;
            memcpy(&w, v, 16);
            *(uint4 *)d = w;
        } else if constexpr (sizeof(S) * R::per == 8) {
            uint2 w;
            memcpy(&w, v, 8);
            *(uint2 *)d = w;
        } else {
            uint32_t w;
            memcpy(&w, v, 4);
            *(uint32_t *)d = w;
        }
        (void)bytes;
#else
        memcpy(d, v, bytes);
#endif
        return;
    }
    for (int k = 0; k < R::per && k < left; k++) d[k] = v[k];
}

/* uniform, f32 and narrower: 4 values from the 4 words */
template <int DT> WKC_HD void wkc_uniform_group(const RandP &p, int64_t g) {
    typedef RandT<DT> R;
    uint4 w = wkc_rand_words(p.seed, p.offset, g);
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
    typename R::S v[4];
WKC_UNROLL
    for (int k = 0; k < 4; k++) {
        float x = fmaf(p.b32, wkc_unit24(ws[k]), p.a32) * p.scale32;
        v[k] = R::from_f32(x);
        if (p.guard && wkc_t<DT>::val(v[k]) >= p.hi32_ceil) v[k] = R::from_bits(p.lo_bits);
    }
    wkc_rand_store<DT>(p, g, v);
}

/* uniform, f64: 2 values from the 4 words */
WKC_HD void wkc_uniform_group_f64(const RandP &p, int64_t g) {
    uint4 w = wkc_rand_words(p.seed, p.offset, g);
    double v[2] = {fma(p.b64, wkc_unit53(w.x, w.y), p.a64), fma(p.b64, wkc_unit53(w.z, w.w), p.a64)};
WKC_UNROLL
    for (int k = 0; k < 2; k++)
        if (p.guard && v[k] >= p.hi64) v[k] = p.a64;
    wkc_rand_store<WK_F64>(p, g, v);
}

/* normal, f32 and narrower: 2 Box-Muller pairs -> 4 values */
template <int DT> WKC_HD void wkc_normal_group(const RandP &p, int64_t g) {
    typedef RandT<DT> R;
    uint4 w = wkc_rand_words(p.seed, p.offset, g);
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
    typename R::S v[4];
WKC_UNROLL
    for (int k = 0; k < 2; k++) {
        float r = sqrtf(-2.0f * logf(wkc_unit24_open0(ws[2 * k])));
        float c, s;
        wkc_cossin_2pi(wkc_unit24(ws[2 * k + 1]), &c, &s);
        v[2 * k] = R::from_f32(fmaf(p.b32, r * c, p.a32));
        v[2 * k + 1] = R::from_f32(fmaf(p.b32, r * s, p.a32));
    }
    wkc_rand_store<DT>(p, g, v);
}

/* normal, f64: 1 Box-Muller pair -> 2 values */
WKC_HD void wkc_normal_group_f64(const RandP &p, int64_t g) {
    uint4 w = wkc_rand_words(p.seed, p.offset, g);
    double r = sqrt(-2.0 * log(wkc_unit53_open0(w.x, w.y)));
    double c, s;
    wkc_cossin_2pi(wkc_unit53(w.z, w.w), &c, &s);
    double v[2] = {fma(p.b64, r * c, p.a64), fma(p.b64, r * s, p.a64)};
    wkc_rand_store<WK_F64>(p, g, v);
}

/* One work item = one counter group. */
template <int DT, bool NORMAL> struct RandGroup {
    static WKC_HD void item(const RandP &p, int64_t g) {
        if constexpr (DT == WK_F64) {
            if constexpr (NORMAL) wkc_normal_group_f64(p, g);
            else wkc_uniform_group_f64(p, g);
        } else {
            if constexpr (NORMAL) wkc_normal_group<DT>(p, g);
            else wkc_uniform_group<DT>(p, g);
        }
    }
};

template <int DT, bool NORMAL> int wkc_rand_launch(wk_cu_stream s, const RandP &p) {
    return wkc_launch_items<RandGroup<DT, NORMAL>>(s, p, p.groups, WKC_RAND_EMU_THREADS);
}

template <bool NORMAL> int wkc_rand_dispatch(wk_cu_stream s, const RandP &p, wk_dtype dt) {
    switch (dt) {
    case WK_F32: return wkc_rand_launch<WK_F32, NORMAL>(s, p);
    case WK_F64: return wkc_rand_launch<WK_F64, NORMAL>(s, p);
    case WK_F16: return wkc_rand_launch<WK_F16, NORMAL>(s, p);
    case WK_BF16: return wkc_rand_launch<WK_BF16, NORMAL>(s, p);
    case WK_F8E4M3: return wkc_rand_launch<WK_F8E4M3, NORMAL>(s, p);
    default: return WKC_BAD_ARG;
    }
}

bool wkc_rand_dtype_ok(wk_dtype dt) {
    return dt == WK_F32 || dt == WK_F64 || dt == WK_F16 || dt == WK_BF16 || dt == WK_F8E4M3;
}

/* The fields every call shares; a, b and the guard are the caller's. */
RandP wkc_rand_params(void *dst, int64_t n, wk_dtype dt, uint64_t seed, uint64_t offset) {
    RandP p;
    memset(&p, 0, sizeof p);
    p.dst = dst;
    p.n = n;
    p.groups = (int64_t)wk__cu_rand_counters(n, dt, false);
    p.seed = seed;
    p.offset = offset;
    int group_bytes = wkc_size(dt) * (dt == WK_F64 ? 2 : 4);
    p.wide = group_bytes > 0 && (uintptr_t)dst % (uintptr_t)group_bytes == 0;
    return p;
}

/* x rounded to f32 for a narrow dtype's computation: to odd, so that the
 * later RNE to the narrow dtype rounds x exactly once (as the CPU's store) */
float wkc_rand_f32_arg(double x, wk_dtype dt) { return dt == WK_F32 ? (float)x : wkc_f64_to_f32_odd(x); }

} // namespace

extern "C" uint64_t wk__cu_rand_counters(int64_t n, wk_dtype dt, bool normal) {
    (void)normal; /* a group holds the same element count for both */
    if (n <= 0 || !wkc_rand_dtype_ok(dt)) return 0;
    uint64_t per = dt == WK_F64 ? 2 : 4;
    return ((uint64_t)n + per - 1) / per;
}

extern "C" int wk__cu_rand_uniform(wk_cu_stream s, void *dst, int64_t n, wk_dtype dt, double lo, double hi,
                                   uint64_t seed, uint64_t offset) {
    if (n < 0 || !wkc_rand_dtype_ok(dt)) return WKC_BAD_ARG;
    if (n == 0) return 0;
    if (!dst) return WKC_BAD_ARG;
    RandP p = wkc_rand_params(dst, n, dt, seed, offset);
    p.a64 = lo;
    p.b64 = hi - lo; /* as the CPU: may overflow to inf for |lo|, |hi| near DBL_MAX */
    /* a span beyond f32's range (f32 only, e.g. [-3e38, 3e38)) is computed
     * halved and doubled after (exact scalings), as the CPU computes it in f64 */
    double span = hi - lo;
    p.scale32 = fabs(span) > (double)FLT_MAX ? 2.0f : 1.0f;
    p.a32 = wkc_rand_f32_arg(lo / p.scale32, dt);
    p.b32 = (float)(span / p.scale32);
    p.guard = hi > lo;
    p.hi64 = hi;
    float h = (float)hi;
    if ((double)h < hi) h = nextafterf(h, INFINITY);
    p.hi32_ceil = h;
    p.lo_bits = wkc_bits_f64(dt, lo);
    return wkc_rand_dispatch<false>(s, p, dt);
}

extern "C" int wk__cu_rand_normal(wk_cu_stream s, void *dst, int64_t n, wk_dtype dt, double mean, double std,
                                  uint64_t seed, uint64_t offset) {
    if (n < 0 || !wkc_rand_dtype_ok(dt)) return WKC_BAD_ARG;
    if (n == 0) return 0;
    if (!dst) return WKC_BAD_ARG;
    RandP p = wkc_rand_params(dst, n, dt, seed, offset);
    p.a64 = mean;
    p.b64 = std;
    p.a32 = wkc_rand_f32_arg(mean, dt);
    p.b32 = (float)std;
    return wkc_rand_dispatch<true>(s, p, dt);
}
