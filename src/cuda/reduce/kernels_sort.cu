/* CUDA sort / argsort and top-k along one dim (launchers wk__cu_sort,
 * wk__cu_topk and their workspace size wk__cu_sort_workspace, declared in
 * kernels_sort.h): the backend's `sort` and `topk` entries, mirroring
 * src/cpu/reduce/cpu_scan.c so that values AND indices are identical to
 * wk__cpu_sort / wk__cpu_topk.
 *
 * Order (as the CPU): every element maps to an unsigned key whose integer
 * order is the requested order - integers with the sign bit flipped;
 * floats sign-magnitude flipped with -0 keyed as +0 (so -0 and +0 tie) and
 * every NaN the largest key; descending complements the key within its
 * width (so NaN comes first when descending) - and the lines are sorted by
 * (key, original index). The index breaks every tie, so the order is a
 * total order: the result is the CPU's stable sort, and unique, whatever
 * the algorithm. Top-k is the first k of that order (the CPU's heap keeps
 * the same k: on a tie the lower index wins). Values are copied from src by
 * index, so they keep their exact bits (NaN payloads, -0).
 *
 * Algorithm: a bitonic sort of (key, index) pairs per line in the
 * workspace, each line padded to P = the next power of two with pairs
 * (UINT64_MAX, n + j) that order after every real pair (a real key may be
 * UINT64_MAX, but its index is below n). The workspace is one flat array of
 * lines * P pairs; a stage's direction comes from the position within the
 * line, so every stage runs over ALL lines at once:
 *  - stages with distance j < SO_TILE (1024) run in the tile kernel: a
 *    block loads SO_TILE consecutive pairs (several whole lines when
 *    P < SO_TILE) into shared memory and runs a range of stages there, one
 *    compare-exchange per thread and stage, __syncthreads between stages;
 *  - stages with j >= SO_TILE (lines longer than SO_TILE) run in global
 *    memory, one launch per stage, one thread per compare-exchange.
 * Launches: 1 tile launch for all k <= SO_TILE, then per k = 2048 .. P the
 * log2(k / 1024) global stages and one tile launch (P = 8192: 10 launches;
 * P = 2^20: 66). The host emulation runs the tile kernel's per-thread code
 * over all threads of a tile between its barriers (each barrier = the end
 * of a loop over the threads), and the global stages over a fake grid.
 * Then one kernel writes the first m (= n, or k for top-k) pairs of each
 * line as values and i64 indices, one thread per output element in
 * row-major order (coalesced writes).
 * Workspace: lines * P * 16 bytes (keys, then indices).
 * Not done (performance only): a selection path for small k (top-k sorts
 * whole lines), fusing the key computation into the first tile launch,
 * 32-bit indices for the pairs.
 * Host emulation (WKC_HOST_EMULATION): item launches run the per-item code
 * on the host over a fake grid of 7 threads, grid-stride; tile launches as
 * described above (the real shared memory and barriers are not exercised).
 * Checked: nvcc compile (sm_80, sm_90, warnings as errors); host emulation
 * against wk__cpu_sort / wk__cpu_topk (tests/cuda/test_cuda_sort_emu.cu). */
#include "cuda/common/cuda_index.cuh"
#include "cuda/reduce/cuda_lines.cuh"
#include "cuda/reduce/kernels_sort.h"

namespace {

enum { SO_INIT, SO_STAGE, SO_EMIT };

/* the lines (cuda_lines.cuh) and the sort's plan */
struct SortP : wkc_lines {
    int32_t pass, desc, logp;         /* P = 2^logp padded line length */
    int64_t m;                        /* output line length (n, or k) */
    int64_t items;                    /* work items of this pass */
    int64_t k, j;                     /* bitonic stage (SO_STAGE) */
    int64_t klo, khi;                 /* tile kernel: its stages k in [klo, khi] */
    int64_t total;                    /* nlines * P pairs in the workspace */
    const void *src;
    void *values;                     /* dtype dt, may be NULL */
    long long *indices;               /* i64, may be NULL */
    unsigned long long *key;          /* workspace: nlines * P keys */
    long long *idx;                   /* then nlines * P indices */
};

/* cpu_scan.c's elem_key from the element's raw bits: ascending order. */
WKC_HD unsigned long long so_key(int dt, unsigned long long b) {
    switch (dt) {
    case WK_U8:
    case WK_U32: return b;
    case WK_I16: return (uint16_t)(b ^ 0x8000u);
    case WK_I32: return (uint32_t)(b ^ 0x80000000u);
    case WK_I64: return b ^ (1ull << 63);
    case WK_F32: {
        uint32_t u = (uint32_t)b;
        float f = wkc_u2f(u);
        if (f != f) return UINT32_MAX;
        if (f == 0) u = 0; /* -0 sorts with +0 */
        return (u & 0x80000000u) ? (uint32_t)~u : (u | 0x80000000u);
    }
    case WK_F64: {
        if ((b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return UINT64_MAX; /* NaN */
        if ((b & 0x7fffffffffffffffull) == 0) b = 0;
        return (b >> 63) ? ~b : (b | (1ull << 63));
    }
    case WK_F16:
    case WK_BF16: {
        uint16_t u = (uint16_t)b;
        float f = dt == WK_F16 ? wkc_f16_to_f32(u) : wkc_bf16_to_f32(u);
        if (f != f) return UINT16_MAX;
        if (f == 0) u = 0;
        return (u & 0x8000u) ? (uint16_t)~u : (uint16_t)(u | 0x8000u);
    }
    default: { /* f8e4m3: 0x7f / 0xff are its NaNs */
        uint8_t u = (uint8_t)b;
        if ((u & 0x7F) == 0x7F) return UINT8_MAX;
        if ((u & 0x7F) == 0) u = 0;
        return (u & 0x80u) ? (uint8_t)~u : (uint8_t)(u | 0x80u);
    }
    }
}

/* all ones over the key's width (cpu_scan.c's key_bytes) */
WKC_HD unsigned long long so_key_mask(int dt) {
    int bytes = wkc_size(dt);
    return bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
}

/* Pair i of the workspace: key and index of element j of line L, or padding. */
WKC_HD void so_init(const SortP &p, int64_t i) {
    const int64_t L = i >> p.logp, j = i & ((INT64_C(1) << p.logp) - 1);
    if (j < p.n) {
        unsigned long long b = wkc_raw_load(p.src, wkc_line_src(p, L) + j * p.sd, p.dt);
        p.key[i] = so_key(p.dt, b) ^ (p.desc ? so_key_mask(p.dt) : 0ull);
    } else {
        p.key[i] = ~0ull; /* with index j >= n: after every real pair */
    }
    p.idx[i] = j;
}

/* Order the pairs a < b of one line: ascending (up) or descending. */
WKC_HD void so_cx(unsigned long long *key, long long *idx, int64_t a, int64_t b, bool up) {
    const unsigned long long ka = key[a], kb = key[b];
    const long long ia = idx[a], ib = idx[b];
    const bool a_after_b = ka > kb || (ka == kb && ia > ib);
    if (a_after_b == up) {
        key[a] = kb;
        key[b] = ka;
        idx[a] = ib;
        idx[b] = ia;
    }
}

/* Position of compare-exchange q of a stage with distance j: the lower
 * element of the q-th pair (i, i + j), i with bit j clear. */
WKC_HD int64_t so_pair_lo(int64_t q, int64_t j) { return ((q & ~(j - 1)) << 1) | (q & (j - 1)); }

/* Direction of a pair of stage k whose lower element is pair g of the
 * workspace: ascending where bit k of its position in its line is clear. */
WKC_HD bool so_up(const SortP &p, int64_t g, int64_t k) {
    return ((g & ((INT64_C(1) << p.logp) - 1)) & k) == 0;
}

/* Compare-exchange q of stage (k, j) over the whole workspace. Lines are P
 * pairs long and j < k <= P, so a pair never spans two lines. */
WKC_HD void so_stage(const SortP &p, int64_t q) {
    const int64_t a = so_pair_lo(q, p.j);
    so_cx(p.key, p.idx, a, a + p.j, so_up(p, a, p.k));
}

/* ---- tile kernel: the stages with j < SO_TILE in shared memory ----
 * A tile is SO_TILE consecutive workspace pairs (several whole lines when
 * P < SO_TILE, else part of one line); SO_TILE / 2 threads, thread t does
 * compare-exchange t of every stage, with a barrier between stages. The
 * host emulation runs the same load / stage / store code over all threads
 * of a tile in that order (a barrier = the end of a loop over threads). */
#define SO_TILE 1024
#define SO_TILE_THREADS (SO_TILE / 2)

WKC_HD void so_tile_load(const SortP &p, unsigned long long *sk, long long *si, int64_t base, int e) {
    if (base + e < p.total) {
        sk[e] = p.key[base + e];
        si[e] = p.idx[base + e];
    }
}
WKC_HD void so_tile_store(const SortP &p, const unsigned long long *sk, const long long *si, int64_t base, int e) {
    if (base + e < p.total) {
        p.key[base + e] = sk[e];
        p.idx[base + e] = si[e];
    }
}
/* Pairs of a partial last tile past the workspace are skipped (whole lines:
 * when the lower element exists, so does its partner). */
WKC_HD void so_tile_cx(const SortP &p, unsigned long long *sk, long long *si, int64_t base, int t, int64_t k,
                       int64_t j) {
    const int64_t lo = so_pair_lo(t, j);
    if (base + lo < p.total) so_cx(sk, si, lo, lo + j, so_up(p, base + lo, k));
}
/* first j of stage k in the tile kernel */
WKC_HD int64_t so_tile_j0(int64_t k) { return (k >> 1) < SO_TILE / 2 ? (k >> 1) : SO_TILE / 2; }

/* Output element o (row-major over src's shape with shape[dim] = m). */
WKC_HD void so_emit(const SortP &p, int64_t o) {
    const int64_t ii = o % p.inner, t = o / p.inner;
    const int64_t jj = t % p.m, outer = t / p.m;
    const int64_t L = outer * p.inner + ii;
    const long long id = p.idx[(L << p.logp) + jj];
    if (p.indices) p.indices[o] = id;
    if (p.values)
        wkc_put_bits(p.values, o, p.dt, wkc_raw_load(p.src, wkc_line_src(p, L) + (int64_t)id * p.sd, p.dt));
}

WKC_HD void so_item(const SortP &p, int64_t i) {
    switch (p.pass) {
    case SO_INIT: so_init(p, i); break;
    case SO_STAGE: so_stage(p, i); break;
    default: so_emit(p, i); break;
    }
}

#define SO_THREADS 256

__global__ void __launch_bounds__(SO_TILE_THREADS) so_tile_kernel(const __grid_constant__ SortP p) {
    __shared__ unsigned long long sk[SO_TILE];
    __shared__ long long si[SO_TILE];
    const int t = (int)threadIdx.x;
    const int64_t ntiles = (p.total + SO_TILE - 1) / SO_TILE;
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const int64_t base = tile * SO_TILE;
        so_tile_load(p, sk, si, base, t);
        so_tile_load(p, sk, si, base, t + SO_TILE_THREADS);
        __syncthreads();
        for (int64_t k = p.klo; k <= p.khi; k <<= 1)
            for (int64_t j = so_tile_j0(k); j > 0; j >>= 1) {
                so_tile_cx(p, sk, si, base, t, k, j);
                __syncthreads();
            }
        so_tile_store(p, sk, si, base, t);
        so_tile_store(p, sk, si, base, t + SO_TILE_THREADS);
        __syncthreads(); /* the next tile's loads overwrite sk / si */
    }
}

static int so_tile_launch(wk_cu_stream s, const SortP &p) {
    const int64_t ntiles = (p.total + SO_TILE - 1) / SO_TILE;
    if (ntiles <= 0) return 0;
#ifdef WKC_HOST_EMULATION
    (void)s;
    static unsigned long long sk[SO_TILE];
    static long long si[SO_TILE];
    for (int64_t tile = 0; tile < ntiles; tile++) {
        const int64_t base = tile * SO_TILE;
        for (int t = 0; t < SO_TILE_THREADS; t++) {
            so_tile_load(p, sk, si, base, t);
            so_tile_load(p, sk, si, base, t + SO_TILE_THREADS);
        }
        for (int64_t k = p.klo; k <= p.khi; k <<= 1)
            for (int64_t j = so_tile_j0(k); j > 0; j >>= 1)
                for (int t = 0; t < SO_TILE_THREADS; t++) so_tile_cx(p, sk, si, base, t, k, j);
        for (int t = 0; t < SO_TILE_THREADS; t++) {
            so_tile_store(p, sk, si, base, t);
            so_tile_store(p, sk, si, base, t + SO_TILE_THREADS);
        }
    }
    return 0;
#else
    const int64_t blocks = ntiles < WKC_MAX_BLOCKS ? ntiles : WKC_MAX_BLOCKS;
    SortP copy = p;
    void *args[] = {&copy};
    return (int)cudaLaunchKernel((const void *)so_tile_kernel, dim3((unsigned)blocks), dim3(SO_TILE_THREADS), args,
                                 0, (cudaStream_t)s);
#endif
}

struct SoItem {
    static WKC_HD void item(const SortP &p, int64_t i) { so_item(p, i); }
};

/* Queue the p.items work items of the current pass (not the tile kernel). */
static int so_launch(wk_cu_stream s, const SortP &p) { return wkc_launch_items<SoItem, SO_THREADS>(s, p, p.items); }

/* Geometry and padding of a sort; false for a malformed call. */
static bool so_plan(SortP &p, const wk_cu_view &ls, int dim, wk_dtype dt) {
    memset(&p, 0, sizeof p);
    if (!wkc_lines_plan(p, ls, dim, dt)) return false;
    if (p.n > (INT64_C(1) << 40)) return false;
    while ((INT64_C(1) << p.logp) < p.n) p.logp++;
    return true;
}

static size_t so_ws_bytes(const SortP &p) {
    if (p.n == 0 || p.nlines == 0) return 0;
    return (size_t)p.nlines * ((size_t)1 << p.logp) * (sizeof(unsigned long long) + sizeof(long long));
}

/* sort (m = n) or top-k (m = k) of the planned lines */
static int so_run(wk_cu_stream s, SortP &p, const void *src, bool desc, int64_t m, void *values, void *indices,
                  void *ws) {
    if (p.n == 0 || p.nlines == 0 || m == 0 || (!values && !indices)) return 0;
    if (!ws) return WKC_BAD_ARG;
    const int64_t P = INT64_C(1) << p.logp;
    p.src = src;
    p.desc = desc;
    p.m = m;
    p.values = values;
    p.indices = (long long *)indices;
    p.key = (unsigned long long *)ws;
    p.idx = (long long *)(p.key + p.nlines * P);
    p.pass = SO_INIT;
    p.items = p.nlines * P;
    int rc = so_launch(s, p);
    if (rc) return rc;
    p.total = p.nlines * P;
    if (P >= 2) {
        /* stages k <= SO_TILE: one tile launch; then per k, the stages with
         * j >= SO_TILE in global memory and the rest in one tile launch */
        p.klo = 2;
        p.khi = P < SO_TILE ? P : SO_TILE;
        if ((rc = so_tile_launch(s, p))) return rc;
        for (int64_t k = 2 * SO_TILE; k <= P; k <<= 1) {
            p.pass = SO_STAGE;
            p.items = p.nlines * P / 2;
            p.k = k;
            for (int64_t j = k >> 1; j >= SO_TILE; j >>= 1) {
                p.j = j;
                if ((rc = so_launch(s, p))) return rc;
            }
            p.klo = p.khi = k;
            if ((rc = so_tile_launch(s, p))) return rc;
        }
    }
    p.pass = SO_EMIT;
    p.items = p.nlines * m;
    return so_launch(s, p);
}

} // namespace

extern "C" size_t wk__cu_sort_workspace(wk_cu_view ls, int dim, wk_dtype dt) {
    SortP p;
    if (!so_plan(p, ls, dim, dt)) return 0;
    return so_ws_bytes(p);
}

extern "C" int wk__cu_sort(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype dt, int dim, bool descending,
                           void *values, void *indices, void *ws) {
    SortP p;
    if (!so_plan(p, ls, dim, dt)) return WKC_BAD_ARG;
    return so_run(s, p, src, descending, p.n, values, indices, ws);
}

extern "C" int wk__cu_topk(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype dt, int dim, int64_t k,
                           bool largest, void *values, void *indices, void *ws) {
    SortP p;
    if (!so_plan(p, ls, dim, dt) || k < 0 || k > p.n) return WKC_BAD_ARG;
    return so_run(s, p, src, largest, k, values, indices, ws);
}
