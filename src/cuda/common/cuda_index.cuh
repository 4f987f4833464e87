/* Strided indexing and launching shared by the CUDA kernel files.
 *
 * Every kernel is "one thread per output element, grid-stride loop, int64
 * flat index". The operands' views (wk_cu_view, passed by value as part of
 * the kernel's one __grid_constant__ argument: no layout upload) are packed
 * on the host into one wkc_pack: one shared shape, one stride row and offset
 * per operand, size-1 dims dropped and adjacent dims merged where every
 * operand is contiguous across them. A flat index is unravelled once per
 * element for all operands (32-bit divisions when the element count fits in
 * 32 bits, an out-of-line 64-bit version beyond); when every operand is
 * contiguous the pack says so and no unravel is done at all.
 *
 * Each op family is a struct (P holds the pack and the op's arguments;
 * operand 0 is the output) with
 *   L load(const P &p, const int64_t *off)  raw operand loads (off[1..]),
 *   V apply(const P &p, L l)                the computation,
 *   void put(const P &p, int64_t doff, V v) the store;
 * one generic kernel (wkc_kernel -> wkc_body) runs them, loading several
 * elements per thread before computing (see wkc_pass). Kernels whose work
 * is not an elementwise pack (pooling, scans, sorts, RNG) use the second
 * launcher here, wkc_launch_items: independent items, F::item(p, i).
 *
 * Host emulation: with WKC_HOST_EMULATION defined (a host-only test build
 * that #includes the .cu files), wkc_launch runs wkc_body (and
 * wkc_launch_items runs F::item) on the host over a small fake grid
 * (WKC_EMU_THREADS) instead of launching, so the element code, the packing
 * and the grid-stride/ILP loop are checked against the CPU backend without
 * a GPU. Nothing here needs more than sm_80. Must not be compiled with
 * --use_fast_math / -ftz / -prec-div=false: results mirror the CPU's IEEE
 * arithmetic. Checked: compiled; host emulation run. */
#ifndef WICK_CUDA_INDEX_CUH
#define WICK_CUDA_INDEX_CUH
#include <cuda_runtime.h>
#include "cuda/common/cuda_dtype.cuh"
#include "cuda/cuda_kernels.h"

/* #pragma unroll for device code only (the host compiler would warn) */
#ifdef __CUDA_ARCH__
#define WKC_UNROLL _Pragma("unroll")
#else
#define WKC_UNROLL
#endif

template <int NV> struct wkc_pack {
    int32_t rank;   /* >= 1 after packing */
    int32_t contig; /* every operand: rank 1, stride 1 */
    int64_t n;      /* elements */
    int64_t shape[WK_MAX_RANK];
    int64_t stride[NV][WK_MAX_RANK];
    int64_t offset[NV];
};

/* Pack NV views of one shape (the shape of v[0]). Returns the element count,
 * 0 for an empty shape, -1 for a malformed view. */
template <int NV> static inline int64_t wkc_pack_views(wkc_pack<NV> *p, const wk_cu_view *const *v) {
    int rank = v[0]->rank;
    if (rank < 0 || rank > WK_MAX_RANK) return -1;
    for (int k = 1; k < NV; k++)
        if (v[k]->rank != rank) return -1;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (v[0]->shape[d] < 0) return -1;
        for (int k = 1; k < NV; k++)
            if (v[k]->shape[d] != v[0]->shape[d]) return -1;
        n *= v[0]->shape[d];
    }
    memset(p, 0, sizeof *p);
    p->n = n;
    for (int k = 0; k < NV; k++) p->offset[k] = v[k]->offset;
    if (n == 0) return 0;
    /* walk from the innermost dim outwards, building the packed dims at the
     * end of the arrays, then shift them to the front */
    int r = 0; /* packed dims so far; packed dim j lives at index WK_MAX_RANK-1-j */
    for (int d = rank - 1; d >= 0; d--) {
        int64_t sz = v[0]->shape[d];
        if (sz == 1) continue;
        if (r > 0) {
            int in = WK_MAX_RANK - r; /* current outermost packed dim */
            bool merge = true;
            for (int k = 0; k < NV; k++)
                if (v[k]->stride[d] != p->stride[k][in] * p->shape[in]) merge = false;
            if (merge) {
                p->shape[in] *= sz;
                continue;
            }
        }
        r++;
        int at = WK_MAX_RANK - r;
        p->shape[at] = sz;
        for (int k = 0; k < NV; k++) p->stride[k][at] = v[k]->stride[d];
    }
    if (r == 0) { /* one element */
        r = 1;
        p->shape[WK_MAX_RANK - 1] = 1;
        for (int k = 0; k < NV; k++) p->stride[k][WK_MAX_RANK - 1] = 1;
    }
    int base = WK_MAX_RANK - r;
    for (int j = 0; j < r; j++) {
        p->shape[j] = p->shape[base + j];
        for (int k = 0; k < NV; k++) p->stride[k][j] = p->stride[k][base + j];
    }
    for (int j = r; j < WK_MAX_RANK; j++) {
        p->shape[j] = 1;
        for (int k = 0; k < NV; k++) p->stride[k][j] = 0;
    }
    p->rank = r;
    bool c = r == 1;
    for (int k = 0; k < NV; k++) c = c && p->stride[k][0] == 1;
    p->contig = c;
    return n;
}

/* A contiguous view of a shape (the dst of most ops). */
static inline wk_cu_view wkc_contig_view(const wk_cu_view *shape_of) {
    wk_cu_view v;
    memset(&v, 0, sizeof v);
    v.rank = shape_of->rank;
    int64_t st = 1;
    for (int d = (int)v.rank - 1; d >= 0 && d < WK_MAX_RANK; d--) {
        v.shape[d] = shape_of->shape[d];
        v.stride[d] = st;
        st *= v.shape[d];
    }
    return v;
}

/* Unravel with 64-bit divisions (more than 2^32 elements): out of line,
 * one copy per pack size rather than one per kernel and unrolled element;
 * the offsets come back by value (no local array escapes into a call). */
template <int NV> struct wkc_offs {
    int64_t o[NV];
};
template <int NV> __host__ __device__ __noinline__ wkc_offs<NV> wkc_offsets64(const wkc_pack<NV> &p, int64_t i) {
    wkc_offs<NV> r;
    for (int k = 0; k < NV; k++) r.o[k] = p.offset[k];
    int64_t idx = i;
    for (int d = p.rank - 1; d >= 1; d--) {
        int64_t s = p.shape[d];
        int64_t q = idx / s, m = idx - q * s;
        for (int k = 0; k < NV; k++) r.o[k] += m * p.stride[k][d];
        idx = q;
    }
    for (int k = 0; k < NV; k++) r.o[k] += idx * p.stride[k][0];
    return r;
}

/* Element offsets of flat index i for every operand. */
template <int NV> WKC_HD void wkc_offsets(const wkc_pack<NV> &p, int64_t i, int64_t *off) {
    if (p.contig) {
WKC_UNROLL
        for (int k = 0; k < NV; k++) off[k] = p.offset[k] + i;
        return;
    }
WKC_UNROLL
    for (int k = 0; k < NV; k++) off[k] = p.offset[k];
    if (p.n <= (int64_t)UINT32_MAX) {
        uint32_t idx = (uint32_t)i;
        for (int d = p.rank - 1; d >= 1; d--) {
            uint32_t s = (uint32_t)p.shape[d];
            uint32_t q = idx / s, r = idx - q * s;
WKC_UNROLL
            for (int k = 0; k < NV; k++) off[k] += (int64_t)r * p.stride[k][d];
            idx = q;
        }
WKC_UNROLL
        for (int k = 0; k < NV; k++) off[k] += (int64_t)idx * p.stride[k][0];
    } else {
        wkc_offs<NV> r = wkc_offsets64(p, i);
WKC_UNROLL
        for (int k = 0; k < NV; k++) off[k] = r.o[k];
    }
}

#define WKC_THREADS 256
#define WKC_ILP 4 /* elements per thread per pass, contiguous */
#ifndef WKC_ILP_STRIDED
#define WKC_ILP_STRIDED 2 /* strided and broadcast */
#endif
#define WKC_MAX_BLOCKS 65536
#define WKC_EMU_THREADS 7 /* host emulation: the fake grid's thread count */

/* The one kernel. Each thread first computes the offsets and loads the
 * operands of WKC_ILP elements (a grid-stride apart, so every load is
 * coalesced), then computes and stores them: several loads in flight per
 * thread, which a load-compute-store loop cannot have (the compiler must
 * assume dst may alias the inputs, and the op switch sits between). */
template <class Op, class P, int ILP, bool CONTIG> WKC_HD void wkc_pass(const P &p, int64_t tid, int64_t step) {
    typedef typename Op::L L;
    const int NV = sizeof(p.pk.offset) / sizeof(p.pk.offset[0]);
    int64_t n = p.pk.n;
    for (int64_t base = tid; base < n; base += ILP * step) {
        L l[ILP];
        int64_t doff[ILP];
        WKC_UNROLL
        for (int u = 0; u < ILP; u++) {
            int64_t i = base + u * step, off[NV];
            if (i < n) {
                if (CONTIG) {
                    WKC_UNROLL
                    for (int k = 0; k < NV; k++) off[k] = p.pk.offset[k] + i;
                } else {
                    wkc_offsets(p.pk, i, off);
                }
                doff[u] = off[0];
                l[u] = Op::load(p, off);
            }
        }
        WKC_UNROLL
        for (int u = 0; u < ILP; u++)
            if (base + u * step < n) Op::put(p, doff[u], Op::apply(p, l[u]));
    }
}

template <class Op, class P> WKC_HD void wkc_body(const P &p, int64_t tid, int64_t step) {
    if (p.pk.contig) wkc_pass<Op, P, WKC_ILP, true>(p, tid, step);
    else wkc_pass<Op, P, WKC_ILP_STRIDED, false>(p, tid, step);
}

template <class Op, class P> __global__ void __launch_bounds__(WKC_THREADS) wkc_kernel(const __grid_constant__ P p) {
    wkc_body<Op, P>(p, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x);
}

/* Queue Op over p.pk.n elements on stream s. Returns the launch's own error
 * (cudaLaunchKernel's result, not an older error left in the thread's
 * last-error state), 0 for nothing to do. */
template <class Op, class P> static int wkc_launch(wk_cu_stream s, const P &p) {
    int64_t n = p.pk.n;
    if (n <= 0) return 0;
#ifdef WKC_HOST_EMULATION
    /* a small fake grid, thread by thread: covers the ILP passes, the
     * grid-stride loop and the tails */
    (void)s;
    const int64_t step = WKC_EMU_THREADS;
    for (int64_t tid = 0; tid < step; tid++) wkc_body<Op, P>(p, tid, step);
    return 0;
#else
    int64_t blocks = (n + WKC_THREADS * WKC_ILP - 1) / (WKC_THREADS * WKC_ILP);
    if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
    P copy = p;
    void *args[] = {&copy};
    void (*k)(const P) = wkc_kernel<Op, P>;
    return (int)cudaLaunchKernel((const void *)k, dim3((unsigned)blocks), dim3(WKC_THREADS), args, 0,
                                 (cudaStream_t)s);
#endif
}

/* ---- independent work items ----
 * For kernels that are not "one output element of a strided pack" (pooling
 * windows, scan lines and chunks, sort stages, RNG groups): items 0 ..
 * items-1, each computed by F::item(p, i) with nothing shared between items,
 * one thread per item, grid-stride. Use wkc_launch when the op maps operand
 * elements to output elements through a wkc_pack (it adds packing, unravel
 * and ILP); use wkc_launch_items when the op computes its own addressing
 * from p. P travels by value as the kernel's __grid_constant__ argument. */

template <class F, class P, int THREADS>
__global__ void __launch_bounds__(THREADS) wkc_items_kernel(const __grid_constant__ P p, int64_t items) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < items; i += step) F::item(p, i);
}

/* Queue F::item over items 0 .. items-1 on stream s, THREADS per block.
 * Returns the launch's own error, 0 for nothing to do. emu_threads: the
 * fake grid size under host emulation (a test may vary it to show the
 * result does not depend on the grid); ignored on the device. */
template <class F, int THREADS = WKC_THREADS, class P>
static int wkc_launch_items(wk_cu_stream s, const P &p, int64_t items, int64_t emu_threads = WKC_EMU_THREADS) {
    if (items <= 0) return 0;
#ifdef WKC_HOST_EMULATION
    (void)s;
    const int64_t step = emu_threads > 0 ? emu_threads : 1;
    for (int64_t t = 0; t < step; t++)
        for (int64_t i = t; i < items; i += step) F::item(p, i);
    return 0;
#else
    (void)emu_threads;
    int64_t blocks = (items + THREADS - 1) / THREADS;
    if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
    P copy = p;
    int64_t n = items;
    void *args[] = {&copy, &n};
    void (*k)(const P, int64_t) = wkc_items_kernel<F, P, THREADS>;
    return (int)cudaLaunchKernel((const void *)k, dim3((unsigned)blocks), dim3(THREADS), args, 0, (cudaStream_t)s);
#endif
}

/* loaded operands of two- and three-input ops */
template <class A, class B> struct wkc_ld2 {
    A a;
    B b;
};
template <class A, class B, class C> struct wkc_ld3 {
    A a;
    B b;
    C c;
};

#define WKC_BAD_ARG ((int)cudaErrorInvalidValue)

#endif
