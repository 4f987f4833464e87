/* CUDA indexing kernels (launchers wk__cu_index_*, declared in
 * cuda_kernels.h): index_select, gather, scatter (set / add), index_add,
 * mirroring src/cpu/cpu_index.c.
 *
 * Bad indices: the host (cuda_backend.c) first runs wk__cu_index_check over
 * the ids view - every id with (unsigned)id >= size (negatives included)
 * lowers a 64-bit slot to its row-major position (atomicMin), so the
 * result is the FIRST bad position whatever the timing - then waits for
 * that slot and returns WK_ERR_INDEX with the op, the id and the size
 * before any write kernel is queued. So in-place ops (scatter, index_add)
 * never half-write, and every error is reported by the op itself, not at a
 * later wait. The write kernels check each id again anyway (defence in
 * depth: a bad id there is skipped - never read or written out of bounds -
 * and WK_ERR_INDEX lands in *err_flag, reported at the next wait).
 *
 * Determinism: no atomics on data. index_select / gather: one thread per
 * output element. scatter / index_add: one thread per position of every
 * dim but `dim` (the "outer" positions), looping over the ids along dim in
 * increasing order - exactly the CPU's order, so duplicate indices give the
 * CPU's result bit for bit (last write wins in row-major order of the ids;
 * additions accumulate in that order, floats included). Outer positions
 * never alias unless dst's view overlaps itself (0 strides, ...; checked
 * over dst's full extent along dim and the ids' extent elsewhere): then the
 * whole op runs on ONE thread in the CPU's exact order (its iterator's
 * runs, ids-innermost or positions-innermost as cpu_index.c chooses), so
 * even aliasing writes resolve as on the CPU.
 * Cost: parallelism is the number of outer positions; a long dim with few
 * outer positions (e.g. a 1-D scatter_add of 1M ids) runs serially - correct
 * but slow; a segmented/sorted scheme is future work.
 *
 * Additions (as the CPU's add_elem): integers wrap; f32 / f64 in their own
 * precision; bf16 / f16 / f8e4m3 as f32 sum rounded back.
 * Host emulation (WKC_HOST_EMULATION): launchers run the same per-thread
 * bodies on the host over a fake grid of 7 threads.
 * Checked: host emulation against wk__cpu_* (tests/cuda/
 * test_cuda_kernels_emu.cu). Never run on a GPU. */
#include "cuda/cuda_index.cuh"

namespace {

enum { IX_CHECK, IX_SELECT, IX_GATHER, IX_SCATTER, IX_ADD };

struct IxP {
    int32_t kind, dt, idt, dim;
    int32_t add;
    int32_t serial;  /* SCATTER/ADD on an overlapping dst: one thread; work item = one run */
    int32_t kin;     /* serial: loop the ids along dim inside each position (else positions inside) */
    int64_t run;     /* serial: positions per run (the CPU iterator's innermost merged extent) */
    int64_t n;       /* threads' work items */
    int64_t size;    /* size of the indexed dim (the bound of every id) */
    int64_t len;     /* scatter / index_add: ids along dim */
    wk_cu_view a;    /* CHECK/SELECT/GATHER: src; SCATTER/ADD: dst */
    wk_cu_view b;    /* SCATTER/ADD: src */
    wk_cu_view ids;
    wk_cu_view it;   /* the shape walked: output (SELECT/GATHER), outer positions (SCATTER/ADD: dim's size 1), ids (CHECK) */
    const void *src;
    void *dst;
    const void *idp;
    int32_t *err;
    unsigned long long *slot;
};

WKC_HD long long ix_load(const void *p, int64_t i, int idt) {
    switch (idt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I32: return ((const int32_t *)p)[i];
    default: return ((const long long *)p)[i];
    }
}

WKC_HD void ix_err(int32_t *err) {
    if (!err) return;
#ifdef __CUDA_ARCH__
    atomicExch((int *)err, (int)WK_ERR_INDEX);
#else
    *err = WK_ERR_INDEX;
#endif
}

/* coordinates of row-major element i of shape v */
WKC_HD void ix_coords(const wk_cu_view &v, int64_t i, int64_t *c) {
    for (int d = v.rank - 1; d >= 0; d--) {
        int64_t s = v.shape[d];
        int64_t q = s > 0 ? i / s : 0;
        c[d] = i - q * s;
        i = q;
    }
}

/* element offset of coordinates c in view v, dim `skip` left out (-1: none) */
WKC_HD int64_t ix_off(const wk_cu_view &v, const int64_t *c, int skip) {
    int64_t o = v.offset;
    for (int d = 0; d < v.rank; d++)
        if (d != skip) o += c[d] * v.stride[d];
    return o;
}

WKC_HD void ix_add(void *d, int64_t di, const void *s, int64_t si, int dt) {
    switch (dt) {
    case WK_U8: ((uint8_t *)d)[di] = (uint8_t)(((uint8_t *)d)[di] + ((const uint8_t *)s)[si]); break;
    case WK_U32: ((uint32_t *)d)[di] = ((uint32_t *)d)[di] + ((const uint32_t *)s)[si]; break;
    case WK_I16:
        ((uint16_t *)d)[di] = (uint16_t)(((uint16_t *)d)[di] + ((const uint16_t *)s)[si]);
        break;
    case WK_I32: ((uint32_t *)d)[di] = ((uint32_t *)d)[di] + ((const uint32_t *)s)[si]; break;
    case WK_I64:
        ((unsigned long long *)d)[di] = ((unsigned long long *)d)[di] + ((const unsigned long long *)s)[si];
        break;
    case WK_F32: ((float *)d)[di] = ((float *)d)[di] + ((const float *)s)[si]; break;
    case WK_F64: ((double *)d)[di] = ((double *)d)[di] + ((const double *)s)[si]; break;
    case WK_BF16:
        ((uint16_t *)d)[di] =
            wkc_f32_to_bf16(wkc_bf16_to_f32(((uint16_t *)d)[di]) + wkc_bf16_to_f32(((const uint16_t *)s)[si]));
        break;
    case WK_F16:
        ((uint16_t *)d)[di] =
            wkc_f32_to_f16(wkc_f16_to_f32(((uint16_t *)d)[di]) + wkc_f16_to_f32(((const uint16_t *)s)[si]));
        break;
    case WK_F8E4M3:
        ((uint8_t *)d)[di] =
            wkc_f32_to_f8e4m3(wkc_f8e4m3_to_f32(((uint8_t *)d)[di]) + wkc_f8e4m3_to_f32(((const uint8_t *)s)[si]));
        break;
    default: break;
    }
}

WKC_HD void ix_item(const IxP &p, int64_t i) {
    int64_t c[WK_MAX_RANK];
    const uint64_t usize = (uint64_t)p.size;
    switch (p.kind) {
    case IX_CHECK: {
        ix_coords(p.it, i, c);
        long long id = ix_load(p.idp, ix_off(p.ids, c, -1), p.idt);
        if ((uint64_t)id >= usize) {
#ifdef __CUDA_ARCH__
            atomicMin(p.slot, (unsigned long long)i);
#else
            if ((unsigned long long)i < *p.slot) *p.slot = (unsigned long long)i;
#endif
        }
        break;
    }
    case IX_SELECT: {
        /* it = output shape (src's with shape[dim] = numel(ids)), ids 1-D */
        ix_coords(p.it, i, c);
        long long id = ix_load(p.idp, p.ids.offset + c[p.dim] * (p.ids.rank ? p.ids.stride[0] : 0), p.idt);
        if ((uint64_t)id >= usize) { ix_err(p.err); break; }
        int64_t so = ix_off(p.a, c, p.dim) + (int64_t)id * p.a.stride[p.dim];
        wkc_put_bits(p.dst, i, p.dt, wkc_raw_load(p.src, so, p.dt));
        break;
    }
    case IX_GATHER: {
        /* it = ids' shape = output shape */
        ix_coords(p.it, i, c);
        long long id = ix_load(p.idp, ix_off(p.ids, c, -1), p.idt);
        if ((uint64_t)id >= usize) { ix_err(p.err); break; }
        int64_t so = ix_off(p.a, c, p.dim) + (int64_t)id * p.a.stride[p.dim];
        wkc_put_bits(p.dst, i, p.dt, wkc_raw_load(p.src, so, p.dt));
        break;
    }
    case IX_SCATTER:
    default: {
        /* SCATTER: it = ids' shape with shape[dim] = 1, ids along dim of p.len;
         * ADD: it = dst's shape with shape[dim] = 1, ids 1-D of p.len. a = dst, b = src.
         * Parallel: item i = one outer position, ids in increasing order.
         * Serial (overlapping dst, one thread): item i = run i of p.run
         * positions, in the CPU's order (kin: per position all ids; else per
         * id all positions of the run). */
        const int64_t first = p.serial ? i * p.run : i, cnt = p.serial ? p.run : 1;
        const bool kin = !p.serial || p.kin;
        const int64_t ni = kin ? cnt : p.len, nk = kin ? p.len : cnt;
        for (int64_t u = 0; u < ni; u++)
            for (int64_t v = 0; v < nk; v++) {
                const int64_t pos = first + (kin ? u : v), k = kin ? v : u;
                ix_coords(p.it, pos, c);
                const int64_t so = ix_off(p.b, c, p.dim), dof = ix_off(p.a, c, p.dim);
                const int64_t ss = p.b.stride[p.dim], ds = p.a.stride[p.dim];
                long long id;
                if (p.kind == IX_SCATTER) id = ix_load(p.idp, ix_off(p.ids, c, p.dim) + k * p.ids.stride[p.dim], p.idt);
                else id = ix_load(p.idp, p.ids.offset + k * (p.ids.rank ? p.ids.stride[0] : 0), p.idt);
                if ((uint64_t)id >= usize) { ix_err(p.err); continue; }
                const int64_t di = dof + (int64_t)id * ds, si = so + k * ss;
                if (p.kind == IX_ADD || p.add) ix_add(p.dst, di, p.src, si, p.dt);
                else wkc_put_bits(p.dst, di, p.dt, wkc_raw_load(p.src, si, p.dt));
            }
        break;
    }
    }
}

#define IX_THREADS 256

__global__ void __launch_bounds__(IX_THREADS) ix_kernel(const __grid_constant__ IxP p) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += step) ix_item(p, i);
}

static int ix_launch(wk_cu_stream s, const IxP &p, bool one_thread) {
    if (p.n <= 0) return 0;
#ifdef WKC_HOST_EMULATION
    (void)s;
    const int64_t step = one_thread ? 1 : 7;
    for (int64_t t = 0; t < step; t++)
        for (int64_t i = t; i < p.n; i += step) ix_item(p, i);
    return 0;
#else
    int64_t blocks = one_thread ? 1 : (p.n + IX_THREADS - 1) / IX_THREADS;
    if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
    IxP copy = p;
    void *args[] = {&copy};
    return (int)cudaLaunchKernel((const void *)ix_kernel, dim3((unsigned)blocks), dim3(one_thread ? 1 : IX_THREADS),
                                 args, 0, (cudaStream_t)s);
#endif
}

static bool ix_view_ok(const wk_cu_view &v) {
    if (v.rank < 0 || v.rank > WK_MAX_RANK) return false;
    for (int d = 0; d < v.rank; d++)
        if (v.shape[d] < 0) return false;
    return true;
}
static int64_t ix_numel(const wk_cu_view &v) {
    int64_t n = 1;
    for (int d = 0; d < v.rank; d++) n *= v.shape[d];
    return n;
}
static bool ix_idt_ok(int idt) { return idt == WK_U8 || idt == WK_U32 || idt == WK_I32 || idt == WK_I64; }

/* As cpu_index.c's may_overlap: can two positions of v name one element? */
static bool ix_may_overlap(const wk_cu_view &v) {
    int idx[WK_MAX_RANK], n = 0;
    for (int i = 0; i < v.rank; i++) {
        if (v.shape[i] == 0) return false;
        if (v.shape[i] > 1) idx[n++] = i;
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (v.stride[idx[b]] < v.stride[idx[a]]) {
                int t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
            }
    int64_t span = 0;
    for (int a = 0; a < n; a++) {
        int64_t st = v.stride[idx[a]];
        if (st <= span) return true;
        span += st * (v.shape[idx[a]] - 1);
    }
    return false;
}

/* The CPU's run for an overlapping dst (cpu_index.c walks the views without
 * dim with wk__iter: size-1 dims dropped, dims merged where every view is
 * contiguous across them; a run = the innermost merged dim). Sets p.run and
 * p.kin (the CPU's inner_is_dim: ids along dim innermost when their stride
 * is the smaller), p.n = runs, p.serial. */
static void ix_serial_plan(IxP &p, const wk_cu_view &shape_of, const wk_cu_view *const *v, int nv, int64_t idim,
                           int ids_k) {
    int64_t cnt = 1, st[3] = {1, 1, 1};
    bool any = false;
    for (int i = 0; i < shape_of.rank; i++) {
        if (i == p.dim || shape_of.shape[i] == 1) continue;
        bool merge = any;
        for (int k = 0; k < nv && merge; k++)
            if (st[k] != v[k]->stride[i] * shape_of.shape[i]) merge = false;
        cnt = merge ? cnt * shape_of.shape[i] : shape_of.shape[i];
        for (int k = 0; k < nv; k++) st[k] = v[k]->stride[i];
        any = true;
    }
    p.serial = 1;
    p.run = cnt > 0 ? cnt : 1;
    p.n = cnt > 0 ? p.n / cnt : 0;
    int64_t a = idim < 0 ? -idim : idim, b = ids_k >= 0 ? (st[ids_k] < 0 ? -st[ids_k] : st[ids_k]) : 0;
    p.kin = ids_k >= 0 && cnt > 1 && a < b;
}

static IxP ix_base(int kind, int dt, wk_dtype idt, int dim, const void *ids, wk_cu_view lids) {
    IxP p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.dt = dt;
    p.idt = (int32_t)idt;
    p.dim = dim;
    p.idp = ids;
    p.ids = lids;
    return p;
}

} // namespace

extern "C" int wk__cu_index_check(wk_cu_stream s, const void *ids, wk_cu_view lids, wk_dtype idt, int64_t size,
                                  unsigned long long *first_bad) {
    if (!ix_view_ok(lids) || !ix_idt_ok(idt) || size < 0) return WKC_BAD_ARG;
    IxP p = ix_base(IX_CHECK, WK_U8, idt, 0, ids, lids);
    p.it = lids;
    p.n = ix_numel(lids);
    p.size = size;
    p.slot = first_bad;
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_index_select(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids,
                                   wk_dtype idt, int dim, void *dst, wk_dtype dt, int32_t *err_flag) {
    if (!ix_view_ok(ls) || !ix_view_ok(lids) || !ix_idt_ok(idt) || wkc_size(dt) == 0 || dim < 0 ||
        dim >= ls.rank || lids.rank > 1)
        return WKC_BAD_ARG;
    IxP p = ix_base(IX_SELECT, dt, idt, dim, ids, lids);
    p.a = ls;
    p.it = ls;
    p.it.shape[dim] = ix_numel(lids);
    p.n = ix_numel(p.it);
    p.size = ls.shape[dim];
    p.src = src;
    p.dst = dst;
    p.err = err_flag;
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_gather(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids,
                             wk_dtype idt, int dim, void *dst, wk_dtype dt, int32_t *err_flag) {
    if (!ix_view_ok(ls) || !ix_view_ok(lids) || !ix_idt_ok(idt) || wkc_size(dt) == 0 || dim < 0 ||
        dim >= ls.rank || lids.rank != ls.rank)
        return WKC_BAD_ARG;
    IxP p = ix_base(IX_GATHER, dt, idt, dim, ids, lids);
    p.a = ls;
    p.it = lids;
    p.n = ix_numel(lids);
    p.size = ls.shape[dim];
    p.src = src;
    p.dst = dst;
    p.err = err_flag;
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_scatter(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids,
                              wk_dtype idt, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt, bool add,
                              int32_t *err_flag) {
    if (!ix_view_ok(ld) || !ix_view_ok(lids) || !ix_view_ok(lsrc) || !ix_idt_ok(idt) || wkc_size(dt) == 0 ||
        dim < 0 || dim >= ld.rank || lids.rank != ld.rank || lsrc.rank != ld.rank)
        return WKC_BAD_ARG;
    if (ix_numel(lids) == 0) return 0;
    IxP p = ix_base(IX_SCATTER, dt, idt, dim, ids, lids);
    p.a = ld;
    p.b = lsrc;
    p.it = lids;
    p.it.shape[dim] = 1;
    p.len = lids.shape[dim];
    p.n = ix_numel(p.it);
    p.size = ld.shape[dim];
    p.add = add;
    p.src = src;
    p.dst = dst;
    p.err = err_flag;
    /* the positions off dim that will be written: dst viewed with ids' shape */
    wk_cu_view w = ld;
    for (int d = 0; d < ld.rank; d++) w.shape[d] = d == dim ? ld.shape[d] : lids.shape[d];
    if (ix_may_overlap(w)) {
        const wk_cu_view *v[3] = {&ld, &lsrc, &lids};
        ix_serial_plan(p, lids, v, 3, lids.stride[dim], 2);
        return ix_launch(s, p, true);
    }
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_index_add(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids,
                                wk_dtype idt, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt,
                                int32_t *err_flag) {
    if (!ix_view_ok(ld) || !ix_view_ok(lids) || !ix_view_ok(lsrc) || !ix_idt_ok(idt) || wkc_size(dt) == 0 ||
        dim < 0 || dim >= ld.rank || lids.rank > 1 || lsrc.rank != ld.rank)
        return WKC_BAD_ARG;
    if (ix_numel(lids) == 0) return 0;
    IxP p = ix_base(IX_ADD, dt, idt, dim, ids, lids);
    p.a = ld;
    p.b = lsrc;
    p.it = ld;
    p.it.shape[dim] = 1;
    p.len = ix_numel(lids);
    p.n = ix_numel(p.it);
    p.size = ld.shape[dim];
    p.src = src;
    p.dst = dst;
    p.err = err_flag;
    if (ix_may_overlap(ld)) {
        const wk_cu_view *v[2] = {&ld, &lsrc};
        ix_serial_plan(p, ld, v, 2, 0, -1);
        return ix_launch(s, p, true);
    }
    return ix_launch(s, p, false);
}
