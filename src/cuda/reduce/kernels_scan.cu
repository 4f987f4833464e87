/* CUDA scans: cumsum / cumprod along one dim (launcher wk__cu_scan and its
 * workspace size wk__cu_scan_workspace, declared in kernels_sort.h), the
 * backend's `scan` entry, mirroring src/cpu/reduce/cpu_scan.c.
 *
 * A line (cuda_lines.cuh) is the 1-D slice along dim; line L (row-major
 * over the other dims) reads src at offset + unravel(other dims, L) +
 * j * stride[dim] and writes dst (contiguous, src's shape) at
 * (L / inner) * n * inner + L % inner + j * inner, inner = product of the
 * dims after dim.
 *
 * Accumulation exactly as the CPU: f32 and f64 in double (each output is
 * the running double rounded once), bf16 / f16 / f8e4m3 in float (each
 * output the running float rounded to the dtype), integers in 64-bit
 * wrapping arithmetic truncated to the dtype.
 *
 * Three plans, chosen from the shape only (so the same every run):
 *  - sequential (the default): one thread per line walks it in order - the
 *    CPU's order, so every dtype is bit-identical to wk__cpu_scan. Adjacent
 *    threads take adjacent lines, which are adjacent in memory when dim is
 *    not the last dim (coalesced).
 *  - the CPU's own chunking (n >= 2^20 and fewer than 64 lines, exactly the
 *    CPU's condition): chunks of 16384, chunk totals computed as the CPU
 *    computes them (f32 lines with unit stride and inner == 1: eight
 *    interleaved double lanes combined in order; else sequentially), an
 *    exclusive scan of the totals per line, each chunk rescanned from its
 *    prefix. Same operations in the same order as the CPU: bit-identical.
 *  - GPU chunking (fewer than 2048 lines and n >= 4096 otherwise): the same
 *    three passes with chunks of 1024 (doubled while a line has more than
 *    8192 chunks) and sequential totals. Integers stay exact (wrapping sums
 *    and products are associative); floats may differ from the CPU's
 *    sequential scan in the last bits (tests compare with a tolerance).
 * The passes are separate launches (totals; per-line exclusive scan of the
 * totals; rescan) with no shared memory or barriers, so the host emulation
 * runs exactly the device code. Workspace: one 8-byte accumulator per
 * (line, chunk).
 *
 * Not done: a block-cooperative scan for one very long line (the chunked
 * plan's pass 2 walks a line's chunk totals on one thread).
 * Host emulation (WKC_HOST_EMULATION): launches run the per-item code on the
 * host over a fake grid of 7 threads, grid-stride.
 * Checked: nvcc compile (sm_80, sm_90, warnings as errors); host emulation
 * against wk__cpu_scan (tests/cuda/test_cuda_sort_emu.cu). */
#include "cuda/common/cuda_index.cuh"
#include "cuda/reduce/cuda_lines.cuh"
#include "cuda/reduce/kernels_sort.h"

namespace {

enum { SC_SEQ, SC_TOTALS, SC_PREFIX, SC_RESCAN };

#define SC_CPU_CHUNK_MIN (INT64_C(1) << 20) /* cpu_scan.c: CHUNK_MIN */
#define SC_CPU_CHUNK (INT64_C(1) << 14)     /* cpu_scan.c: CHUNK */
#define SC_CPU_MAX_LINES 64                 /* cpu_scan.c: chunked when nlines < 64 */
#define SC_GPU_MAX_LINES 2048
#define SC_GPU_MIN_LEN 4096
#define SC_GPU_CHUNK 1024
#define SC_GPU_MAX_CHUNKS 8192

/* One running value: double (f32 / f64), float (narrow floats) or wrapping
 * 64-bit integer, like cpu_scan.c's acc_t. */
union ScAcc {
    double d;
    float f;
    unsigned long long u;
};

/* the lines (cuda_lines.cuh) and the scan's plan */
struct ScanP : wkc_lines {
    int32_t prod, pass, lanes8;
    int64_t chunk, nchunks, items;   /* items: work items of this pass */
    const void *src;
    void *dst;
    ScAcc *ws;                       /* (line, chunk) -> accumulator, line-major */
};

/* Per-dtype accumulation: A the accumulator type, load one element as A,
 * store A rounded to the dtype. */
template <int DT> struct sc_ty {
    typedef unsigned long long A; /* integers */
    static WKC_HD A load(const void *p, int64_t i) { return (A)(long long)wkc_t<DT>::load(p, i); }
    static WKC_HD void store(void *p, int64_t i, A a) { wkc_put_bits(p, i, DT, a); }
    static WKC_HD A get(const ScAcc &s) { return s.u; }
    static WKC_HD void set(ScAcc &s, A a) { s.u = a; }
};
template <> struct sc_ty<WK_F32> {
    typedef double A;
    static WKC_HD A load(const void *p, int64_t i) { return ((const float *)p)[i]; }
    static WKC_HD void store(void *p, int64_t i, A a) { ((float *)p)[i] = (float)a; }
    static WKC_HD A get(const ScAcc &s) { return s.d; }
    static WKC_HD void set(ScAcc &s, A a) { s.d = a; }
};
template <> struct sc_ty<WK_F64> {
    typedef double A;
    static WKC_HD A load(const void *p, int64_t i) { return ((const double *)p)[i]; }
    static WKC_HD void store(void *p, int64_t i, A a) { ((double *)p)[i] = a; }
    static WKC_HD A get(const ScAcc &s) { return s.d; }
    static WKC_HD void set(ScAcc &s, A a) { s.d = a; }
};
#define SC_NARROW(DT)                                                                         \
    template <> struct sc_ty<DT> {                                                            \
        typedef float A;                                                                      \
        static WKC_HD A load(const void *p, int64_t i) { return wkc_t<DT>::load(p, i); }      \
        static WKC_HD void store(void *p, int64_t i, A a) { wkc_t<DT>::store(p, i, a); }      \
        static WKC_HD A get(const ScAcc &s) { return s.f; }                                   \
        static WKC_HD void set(ScAcc &s, A a) { s.f = a; }                                    \
    };
SC_NARROW(WK_BF16)
SC_NARROW(WK_F16)
SC_NARROW(WK_F8E4M3)
#undef SC_NARROW

template <class A> WKC_HD A sc_identity(bool prod) { return prod ? (A)1 : (A)0; }
template <class A> WKC_HD A sc_combine(bool prod, A a, A b) { return prod ? a * b : a + b; }

/* Positions [j0, j1) of the line at (soff, doff) from running value a;
 * writes the outputs when `write`. Returns the running value after j1. */
template <int DT>
WKC_HD typename sc_ty<DT>::A sc_run(const ScanP &p, int64_t soff, int64_t doff, int64_t j0, int64_t j1,
                                    typename sc_ty<DT>::A a, bool write) {
    typedef sc_ty<DT> T;
    const bool prod = p.prod != 0;
    for (int64_t j = j0; j < j1; j++) {
        a = sc_combine(prod, a, T::load(p.src, soff + j * p.sd));
        if (write) T::store(p.dst, doff + j * p.inner, a);
    }
    return a;
}

/* cpu_scan.c's chunk_total_piece fast path (f32, unit stride, inner 1):
 * eight double lanes, the tail into lane 0, lanes combined in order. */
WKC_HD double sc_total_lanes8(const ScanP &p, int64_t soff, int64_t j0, int64_t j1) {
    const float *x = (const float *)p.src + soff;
    const bool prod = p.prod != 0;
    double t[8];
    for (int q = 0; q < 8; q++) t[q] = prod ? 1.0 : 0.0;
    int64_t j = j0;
    for (; j + 8 <= j1; j += 8)
        for (int q = 0; q < 8; q++) t[q] = prod ? t[q] * x[j + q] : t[q] + x[j + q];
    for (; j < j1; j++) t[0] = prod ? t[0] * x[j] : t[0] + x[j];
    double r = t[0];
    for (int q = 1; q < 8; q++) r = prod ? r * t[q] : r + t[q];
    return r;
}

template <int DT> WKC_HD void sc_item_t(const ScanP &p, int64_t i) {
    typedef sc_ty<DT> T;
    typedef typename T::A A;
    const bool prod = p.prod != 0;
    if (p.pass == SC_SEQ) {
        sc_run<DT>(p, wkc_line_src(p, i), wkc_line_dst(p, i), 0, p.n, sc_identity<A>(prod), true);
        return;
    }
    if (p.pass == SC_PREFIX) { /* exclusive scan of line i's chunk totals, in place */
        ScAcc *w = p.ws + i * p.nchunks;
        A run = sc_identity<A>(prod);
        for (int64_t c = 0; c < p.nchunks; c++) {
            A t = T::get(w[c]);
            T::set(w[c], run);
            run = sc_combine(prod, run, t);
        }
        return;
    }
    /* TOTALS / RESCAN: item = chunk-major, so adjacent threads take adjacent lines */
    const int64_t c = i / p.nlines, L = i - c * p.nlines;
    const int64_t j0 = c * p.chunk, j1 = j0 + p.chunk < p.n ? j0 + p.chunk : p.n;
    const int64_t soff = wkc_line_src(p, L);
    ScAcc &slot = p.ws[L * p.nchunks + c];
    if (p.pass == SC_TOTALS) {
        if (p.lanes8) slot.d = sc_total_lanes8(p, soff, j0, j1);
        else T::set(slot, sc_run<DT>(p, soff, 0, j0, j1, sc_identity<A>(prod), false));
        return;
    }
    sc_run<DT>(p, soff, wkc_line_dst(p, L), j0, j1, T::get(slot), true);
}

WKC_HD void sc_item(const ScanP &p, int64_t i) {
    switch (p.dt) {
    case WK_U8: sc_item_t<WK_U8>(p, i); break;
    case WK_U32: sc_item_t<WK_U32>(p, i); break;
    case WK_I16: sc_item_t<WK_I16>(p, i); break;
    case WK_I32: sc_item_t<WK_I32>(p, i); break;
    case WK_I64: sc_item_t<WK_I64>(p, i); break;
    case WK_BF16: sc_item_t<WK_BF16>(p, i); break;
    case WK_F16: sc_item_t<WK_F16>(p, i); break;
    case WK_F32: sc_item_t<WK_F32>(p, i); break;
    case WK_F64: sc_item_t<WK_F64>(p, i); break;
    default: sc_item_t<WK_F8E4M3>(p, i); break;
    }
}

#define SC_THREADS 256

struct ScItem {
    static WKC_HD void item(const ScanP &p, int64_t i) { sc_item(p, i); }
};

/* Queue the p.items work items of the current pass. */
static int sc_launch(wk_cu_stream s, const ScanP &p) { return wkc_launch_items<ScItem, SC_THREADS>(s, p, p.items); }

/* The geometry and plan of a scan; false for a malformed call. */
static bool sc_plan(ScanP &p, const wk_cu_view &ls, int dim, wk_dtype dt) {
    memset(&p, 0, sizeof p);
    if (!wkc_lines_plan(p, ls, dim, dt)) return false;
    if (p.n == 0 || p.nlines == 0) return true;
    if (p.n >= SC_CPU_CHUNK_MIN && p.nlines < SC_CPU_MAX_LINES) {
        p.chunk = SC_CPU_CHUNK;
        p.lanes8 = dt == WK_F32 && p.sd == 1 && p.inner == 1;
    } else if (p.nlines < SC_GPU_MAX_LINES && p.n >= SC_GPU_MIN_LEN) {
        p.chunk = SC_GPU_CHUNK;
        while ((p.n + p.chunk - 1) / p.chunk > SC_GPU_MAX_CHUNKS) p.chunk *= 2;
    }
    if (p.chunk) p.nchunks = (p.n + p.chunk - 1) / p.chunk;
    return true;
}

} // namespace

extern "C" size_t wk__cu_scan_workspace(wk_cu_view ls, int dim, wk_dtype dt) {
    ScanP p;
    if (!sc_plan(p, ls, dim, dt) || p.n == 0 || p.nlines == 0) return 0;
    return (size_t)p.nlines * (size_t)p.nchunks * sizeof(ScAcc);
}

extern "C" int wk__cu_scan(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, int dim, bool prod,
                           void *ws) {
    ScanP p;
    if (!sc_plan(p, ls, dim, dt)) return WKC_BAD_ARG;
    if (p.n == 0 || p.nlines == 0) return 0;
    p.prod = prod;
    p.src = src;
    p.dst = dst;
    if (!p.nchunks) {
        p.pass = SC_SEQ;
        p.items = p.nlines;
        return sc_launch(s, p);
    }
    if (!ws) return WKC_BAD_ARG;
    p.ws = (ScAcc *)ws;
    static const int passes[3] = {SC_TOTALS, SC_PREFIX, SC_RESCAN};
    for (int k = 0; k < 3; k++) {
        p.pass = passes[k];
        p.items = p.pass == SC_PREFIX ? p.nlines : p.nlines * p.nchunks;
        int rc = sc_launch(s, p);
        if (rc) return rc;
    }
    return 0;
}
