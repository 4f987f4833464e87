/* CUDA reductions (launcher wk__cu_reduce, declared in cuda_kernels.h): the
 * backend's `reduce` entry (cu_reduce in cuda_backend.c), mirroring
 * src/cpu/reduce/cpu_reduce.c.
 *
 * Plan (host): the view is split into kept dims (output order) and reduced
 * dims (size-1 dims dropped, adjacent reduced dims merged where contiguous),
 * i.e. the view is permuted so the reduced dims are innermost; output o
 * reduces indices k in [0, rcount) of the reduced unravel at base
 * offset + unravel(kept, o).
 *
 * Kernel: one output per block (grid-stride over outputs), blockDim a power
 * of two in 32..256 chosen from the reduction length. Thread t folds
 * k = t, t + T, t + 2T, ... in increasing order into a per-thread state
 * (red_fold), then the block combines the states with a fixed shared-memory
 * tree (red_combine: state t absorbs state t + s for s = T/2 .. 1). The order
 * depends only on the shape, never on timing: results are deterministic run
 * to run.
 *
 * Semantics (as cpu_reduce.c):
 *  - sum/mean: integers in 64-bit wrapping arithmetic; f64 in f64; f32 and
 *    f16/bf16/f8e4m3 accumulate in f32 per thread, the tree combines in f64
 *    (the CPU folds f32 lanes into f64 per run: f32 results may differ from
 *    the CPU's in the last bits; tests use a tolerance). mean = sum / count
 *    stored with the f64 store rules (an integer mean, rejected by the
 *    dispatcher, stores 0 like the CPU).
 *  - prod: floats in f64, integers 64-bit wrapping; empty -> 1.
 *  - max/min/argmax/argmin: NaN wins (the first NaN); otherwise strict
 *    comparison, and on ties (equal values, or two NaNs) the combine keeps
 *    the smaller index: the CPU's first index on ties. argmax/argmin store
 *    the index as u32; an empty max/min stores 0 (the dispatcher rejects it).
 *  - any/all -> u8 (NaN is nonzero).
 * Host emulation (WKC_HOST_EMULATION): the fake grid has no shared memory or
 * __syncthreads, so the launcher runs the same per-thread folds
 * (red_fold) and the same tree (red_combine, same T, same pairing) on the
 * host, output by output; only the kernel's shared-memory plumbing and
 * barriers are not exercised there.
 * Performance notes (first stage): the dtype is a runtime switch and every
 * element's offset is a 64-bit unravel; short reductions still take a block
 * each (no warp-per-output path yet).
 * Checked: nvcc compile warning-free; host emulation against
 * wk__cpu_reduce (tests/cuda/test_cuda_kernels_emu.cu). */
#include "cuda/common/cuda_index.cuh"

namespace {

#define WKC_RED_MAX_T 256

struct RedP {
    int32_t op, dt;
    int32_t krank, rrank;
    int64_t kshape[WK_MAX_RANK], kstride[WK_MAX_RANK];
    int64_t rshape[WK_MAX_RANK], rstride[WK_MAX_RANK];
    int64_t offset, nout, rcount;
    const void *src;
    void *dst;
};

struct RedSt {
    double f;               /* float sum / product / best */
    unsigned long long i;   /* integer sum / product; best for integer max/min */
    long long idx;          /* arg index (reduction index) */
    int32_t any;            /* max/min: a value was seen; any/all: bit0 nonzero seen, bit1 zero seen */
};

WKC_HD int64_t red_unravel(const int64_t *shape, const int64_t *stride, int rank, int64_t i) {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        int64_t q = i / shape[d];
        off += (i - q * shape[d]) * stride[d];
        i = q;
    }
    return off;
}

WKC_HD bool red_wants_max(int op) { return op == WK_REDUCE_MAX || op == WK_REDUCE_ARGMAX; }
WKC_HD bool red_is_sum(int op) { return op == WK_REDUCE_SUM || op == WK_REDUCE_MEAN; }

WKC_HD RedSt red_empty(const RedP &p) {
    RedSt s;
    s.f = p.op == WK_REDUCE_PROD ? 1.0 : 0.0;
    s.i = p.op == WK_REDUCE_PROD ? 1ull : 0ull;
    s.idx = 0;
    s.any = 0;
    return s;
}

/* b (reduction index kb) better than a (index ka) for max/min/arg*: NaN wins,
 * then strict comparison, ties to the smaller index. Only called with
 * a.any && b.any. */
WKC_HD bool red_better_f(int op, double a, long long ka, double b, long long kb) {
    bool an = a != a, bn = b != b;
    if (an || bn) {
        if (an && bn) return kb < ka;
        return bn;
    }
    if (a == b) return kb < ka;
    return red_wants_max(op) ? b > a : b < a;
}
WKC_HD bool red_better_i(int op, long long a, long long ka, long long b, long long kb) {
    if (a == b) return kb < ka;
    return red_wants_max(op) ? b > a : b < a;
}

/* Thread t of T folds reduction indices t, t+T, ... of the output at base. */
__host__ __device__ __noinline__ RedSt red_fold(const RedP &p, int64_t base, int64_t t, int64_t T) {
    RedSt s = red_empty(p);
    const int dt = p.dt, op = p.op;
    const bool isint = wkc_is_int(dt);
    const int64_t n = p.rcount;
    if (red_is_sum(op)) {
        if (isint) {
            unsigned long long acc = 0;
            for (int64_t k = t; k < n; k += T)
                acc += (unsigned long long)wkc_int_ext(
                    dt, wkc_raw_load(p.src, base + red_unravel(p.rshape, p.rstride, p.rrank, k), dt));
            s.i = acc;
        } else if (dt == WK_F64) {
            double acc = 0;
            for (int64_t k = t; k < n; k += T)
                acc += ((const double *)p.src)[base + red_unravel(p.rshape, p.rstride, p.rrank, k)];
            s.f = acc;
        } else {
            float acc = 0; /* f32, f16, bf16, f8e4m3: f32 accumulation */
            for (int64_t k = t; k < n; k += T)
                acc += (float)wkc_bits_to_f64(
                    dt, wkc_raw_load(p.src, base + red_unravel(p.rshape, p.rstride, p.rrank, k), dt));
            s.f = acc;
        }
        return s;
    }
    if (op == WK_REDUCE_PROD) {
        if (isint) {
            unsigned long long acc = 1;
            for (int64_t k = t; k < n; k += T)
                acc *= (unsigned long long)wkc_int_ext(
                    dt, wkc_raw_load(p.src, base + red_unravel(p.rshape, p.rstride, p.rrank, k), dt));
            s.i = acc;
        } else {
            double acc = 1;
            for (int64_t k = t; k < n; k += T)
                acc *= wkc_bits_to_f64(dt,
                                       wkc_raw_load(p.src, base + red_unravel(p.rshape, p.rstride, p.rrank, k), dt));
            s.f = acc;
        }
        return s;
    }
    if (op == WK_REDUCE_ANY || op == WK_REDUCE_ALL) {
        int32_t fl = 0;
        for (int64_t k = t; k < n; k += T) {
            unsigned long long b = wkc_raw_load(p.src, base + red_unravel(p.rshape, p.rstride, p.rrank, k), dt);
            bool nz = isint ? wkc_int_ext(dt, b) != 0 : wkc_bits_to_f64(dt, b) != 0;
            fl |= nz ? 1 : 2;
        }
        s.any = fl;
        return s;
    }
    /* max/min/argmax/argmin: indices ascend within a thread, so a sequential
     * fold with strict comparison keeps the first index on ties */
    for (int64_t k = t; k < n; k += T) {
        unsigned long long b = wkc_raw_load(p.src, base + red_unravel(p.rshape, p.rstride, p.rrank, k), dt);
        if (isint) {
            long long v = wkc_int_ext(dt, b);
            if (!s.any || red_better_i(op, (long long)s.i, s.idx, v, k)) { s.i = (unsigned long long)v; s.idx = k; }
        } else {
            double v = wkc_bits_to_f64(dt, b);
            if (!s.any || red_better_f(op, s.f, s.idx, v, k)) { s.f = v; s.idx = k; }
        }
        s.any = 1;
    }
    return s;
}

/* a absorbs b (b's indices interleave with a's: ties go by index). */
WKC_HD void red_combine(const RedP &p, RedSt &a, const RedSt &b) {
    const int op = p.op;
    if (red_is_sum(op)) { a.f += b.f; a.i += b.i; return; }
    if (op == WK_REDUCE_PROD) { a.f *= b.f; a.i *= b.i; return; }
    if (op == WK_REDUCE_ANY || op == WK_REDUCE_ALL) { a.any |= b.any; return; }
    if (!b.any) return;
    bool take = !a.any || (wkc_is_int(p.dt) ? red_better_i(op, (long long)a.i, a.idx, (long long)b.i, b.idx)
                                           : red_better_f(op, a.f, a.idx, b.f, b.idx));
    if (take) a = b;
}

WKC_HD void red_store(const RedP &p, int64_t o, const RedSt &s) {
    const int dt = p.dt;
    const bool isint = wkc_is_int(dt);
    switch ((wk_reduce_op)p.op) {
    case WK_REDUCE_SUM: case WK_REDUCE_PROD:
        if (isint) wkc_store_i64(p.dst, o, dt, (long long)s.i);
        else wkc_store_f64(p.dst, o, dt, s.f);
        break;
    case WK_REDUCE_MEAN: wkc_store_f64(p.dst, o, dt, (isint ? 0.0 : s.f) / (double)p.rcount); break;
    case WK_REDUCE_MAX: case WK_REDUCE_MIN:
        if (isint) wkc_store_i64(p.dst, o, dt, (long long)s.i);
        else wkc_store_f64(p.dst, o, dt, s.f);
        break;
    case WK_REDUCE_ANY: ((uint8_t *)p.dst)[o] = (s.any & 1) != 0; break;
    case WK_REDUCE_ALL: ((uint8_t *)p.dst)[o] = (s.any & 2) == 0; break;
    case WK_REDUCE_ARGMAX: case WK_REDUCE_ARGMIN: ((uint32_t *)p.dst)[o] = (uint32_t)s.idx; break;
    case WK_REDUCE_COUNT: break; /* rejected by the launcher */
    }
}

WKC_HD int64_t red_out_base(const RedP &p, int64_t o) {
    return p.offset + red_unravel(p.kshape, p.kstride, p.krank, o);
}

/* threads per output: a power of two, 32..256, about the reduction length */
static int red_threads(int64_t rcount) {
    int T = 32;
    while (T < WKC_RED_MAX_T && T < rcount) T *= 2;
    return T;
}

__global__ void __launch_bounds__(WKC_RED_MAX_T) red_kernel(const __grid_constant__ RedP p) {
    __shared__ RedSt sh[WKC_RED_MAX_T];
    const int T = (int)blockDim.x, t = (int)threadIdx.x;
    for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
        int64_t base = red_out_base(p, o);
        sh[t] = red_fold(p, base, t, T);
        __syncthreads();
        for (int s = T / 2; s > 0; s /= 2) {
            if (t < s) {
                RedSt a = sh[t];
                red_combine(p, a, sh[t + s]);
                sh[t] = a;
            }
            __syncthreads();
        }
        if (t == 0) red_store(p, o, sh[0]);
        __syncthreads(); /* sh[0] read before the next output overwrites it */
    }
}

} // namespace

extern "C" int wk__cu_reduce(wk_cu_stream s, wk_reduce_op op, const void *src, wk_cu_view ls, wk_dtype dt,
                             const bool *mask, void *dst) {
    if ((int)op < 0 || (int)op >= (int)WK_REDUCE_COUNT || wkc_size(dt) == 0) return WKC_BAD_ARG;
    if (ls.rank < 0 || ls.rank > WK_MAX_RANK || (ls.rank > 0 && !mask)) return WKC_BAD_ARG;
    RedP p;
    memset(&p, 0, sizeof p);
    p.op = (int32_t)op;
    p.dt = (int32_t)dt;
    p.offset = ls.offset;
    p.src = src;
    p.dst = dst;
    p.nout = 1;
    p.rcount = 1;
    for (int i = 0; i < ls.rank; i++) {
        int64_t sz = ls.shape[i], st = ls.stride[i];
        if (sz < 0) return WKC_BAD_ARG;
        if (mask[i]) {
            p.rcount *= sz;
            if (sz == 1) continue;
            if (p.rrank > 0 && p.rstride[p.rrank - 1] == st * sz) { /* contiguous to the previous reduced dim */
                p.rshape[p.rrank - 1] *= sz;
                p.rstride[p.rrank - 1] = st;
            } else {
                p.rshape[p.rrank] = sz;
                p.rstride[p.rrank++] = st;
            }
        } else {
            p.kshape[p.krank] = sz;
            p.kstride[p.krank++] = st;
            p.nout *= sz;
        }
    }
    if (p.nout == 0) return 0;
    if (p.rcount == 0) p.rrank = 0; /* no element is read */
    int T = red_threads(p.rcount);
#ifdef WKC_HOST_EMULATION
    (void)s;
    RedSt st[WKC_RED_MAX_T];
    for (int64_t o = 0; o < p.nout; o++) {
        int64_t base = red_out_base(p, o);
        for (int t = 0; t < T; t++) st[t] = red_fold(p, base, t, T);
        for (int h = T / 2; h > 0; h /= 2)
            for (int t = 0; t < h; t++) red_combine(p, st[t], st[t + h]);
        red_store(p, o, st[0]);
    }
    return 0;
#else
    int64_t blocks = p.nout < WKC_MAX_BLOCKS ? p.nout : WKC_MAX_BLOCKS;
    void *args[] = {&p};
    return (int)cudaLaunchKernel((const void *)red_kernel, dim3((unsigned)blocks), dim3((unsigned)T), args, 0,
                                 (cudaStream_t)s);
#endif
}
