/* CUDA indexing kernels (launchers wk__cu_index_*, declared in
 * cuda_kernels.h): index_select, gather, scatter (set / add), index_add,
 * mirroring src/cpu/indexing/cpu_index.c.
 *
 * Bad indices, with no host wait (issue 15): every kernel checks each id
 * it uses; a bad one ((unsigned)id >= size, negatives included) is never
 * read or written out of bounds (select / gather store zero bits there)
 * and is reported with ix_report into the device's record (wk_cu_ixrec,
 * cuda_kernels.h): the first launch to meet a bad id owns the record and
 * keeps its smallest row-major position in the ids view (so the first bad
 * position whatever the timing), with the id, the size, the op and dim;
 * the owner sets the device's error word to WK_ERR_INDEX, which the host
 * reads when it next waits and then reads the record (error path only:
 * a clean run costs no extra copy). Only threads that meet a bad id touch
 * the record, under a spin lock (sm_70+ independent thread scheduling
 * makes a lock inside one warp safe; contention happens only on the error
 * path). In-place ops (scatter, index_add) cannot report half-way: the
 * host queues wk__cu_index_check first, which also sets rec->bad_seq to
 * the op's seq when it meets a bad id, and the write kernels (plain,
 * serial and sorted) are launched with gate = 1 and skip every item when
 * bad_seq == their seq - so dst is left untouched, exactly as the CPU
 * leaves it, and nothing waits. (The gate is one word per device: the
 * host queues an op's check and its write kernels under one lock, so no
 * other in-place check runs between them.)
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
 * Serial plan (issue 15): the one-thread fallback is kept - the aliasing
 * writes of an overlapping dst must land in the CPU's order, and splitting
 * them by destination element (sort the (position, id) pairs by dst offset)
 * is not built - but BOUNDED: a serial op may do at most IX_SERIAL_MAX_PAIRS
 * (2^20) (position, id) pairs; beyond that the launcher refuses it and the
 * host reports WK_ERR_ARG before anything is queued (wk__cu_ix_serial_pairs
 * says how many an op would do). One GPU thread does a pair in roughly
 * 0.1 - 1 us (dependent loads; estimated, not measured: nothing has run on a
 * GPU), so the bound caps one such op at about 0.1 - 1 s of one SM's
 * time. It only concerns a dst that overlaps itself (an expanded / 0-stride
 * view written in place), which PyTorch refuses outright.
 * Cost: parallelism is the number of outer positions; a long dim with few
 * outer positions (e.g. a 1-D scatter_add of 1M ids) runs serially - correct
 * but slow. index_add has a second, sorted path for that case
 * (wk__cu_index_add_sorted; the host picks it with
 * wk__cu_index_add_prefers_sorted): the host first sorts the ids stably
 * with wk__cu_sort (sorted ids + i64 original positions), then one work
 * item per (sorted position s, outer position o), o fastest (a warp shares
 * s, so the early exit does not diverge, and dst / src accesses coalesce
 * where o's elements are adjacent, e.g. dim 0 of a row-major dst). An item whose s starts a run of equal ids sums that run in
 * sorted order - the stable sort keeps equal ids in their original
 * increasing order, i.e. the CPU's order - into a register (rounded to the
 * dtype after every addition, as add_elem) and stores once; the other
 * items exit at once. Parallelism = unique ids x outer positions instead of
 * outer positions; per-element additions and their order are the CPU's, so
 * the result is still bit-identical. Only for a non-overlapping dst (the
 * decision reuses ix_may_overlap: distinct (id, o) name distinct elements,
 * so no two items write one element). Still serial within one run: an id
 * repeated k times costs k dependent additions (the CPU's order demands it).
 * Overhead: the sort (3 + ~log2(len/1024)^2/2 launches, 16 bytes of
 * workspace per padded id, plus len * (id size + 8) bytes of sorted ids and
 * positions) and len x outer items of which only run starts work (at most
 * twice the plain path's item visits).
 * scatter / scatter_add have the same kind of sorted path
 * (wk__cu_scatter_sorted, chosen by wk__cu_scatter_prefers_sorted: 64 or
 * more ids along dim, fewer than 65536 lines, the written positions of dst
 * not overlapping - the plain path's serial plan is kept). Their ids differ
 * per line (= per outer position), so the host sorts every line at once
 * (wk__cu_sort along dim: sorted ids + i64 original positions, contiguous
 * with ids' shape), then one work item per id (line, sorted position s),
 * in the row-major order of ids' shape - so neighbouring items read
 * neighbouring sorted ids and positions whatever dim is. scatter_add: an
 * item whose s starts a run of equal ids in its line loads dst once, adds
 * the run's src elements in sorted (= original, by stability) order,
 * rounded as add_elem after each, and stores once; scatter (set): only the
 * item whose s ENDS a run stores - its src element is the run's largest
 * original position, the CPU's last write. Parallelism = numel(ids)
 * instead of the number of lines (a 1-D scatter_add of 1M ids: one thread
 * -> 1M items, one per id, of which the run starts work); the result is
 * bit-identical for the same reason as index_add's. Overhead: the sort
 * (per line padded to P = next power of two >= len; 16 bytes of workspace
 * per padded id for all lines, so less than 32 bytes per id; launches as
 * above for P) plus numel(ids) * (id size + 8) bytes of sorted ids and
 * positions; the host falls back to the plain path when these temporaries
 * cannot be allocated. A run of k equal ids in one line is still k
 * dependent additions (scatter: one store).
 *
 * Additions (as the CPU's add_elem): integers wrap; f32 / f64 in their own
 * precision; bf16 / f16 / f8e4m3 as f32 sum rounded back.
 * Host emulation (WKC_HOST_EMULATION): launchers run the same per-thread
 * bodies on the host over a fake grid of 7 threads.
 * Checked: host emulation against wk__cpu_* (tests/cuda/
 * test_cuda_kernels_emu.cu; the sorted index_add path, sort included, in
 * tests/cuda/test_cuda_ixadd_emu.cu; the sorted scatter / scatter_add path,
 * sort included, in tests/cuda/test_cuda_scadd_emu.cu; the bad-id record,
 * the gate and the serial bound in tests/cuda/test_cuda_ixflag_emu.cu). */
#include "cuda/common/cuda_index.cuh"

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
    wk_cu_ixflag f;  /* where bad ids are reported */
    int32_t op;      /* wk_cu_ixop reported */
};

WKC_HD long long ix_load(const void *p, int64_t i, int idt) {
    switch (idt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I32: return ((const int32_t *)p)[i];
    default: return ((const long long *)p)[i];
    }
}

/* Report bad id `id` at row-major position pos of the ids view (see
 * "Bad indices" above). The fast exit reads the record without the lock:
 * a stale read only costs a trip through the lock, and owner / pos only
 * ever move towards the final answer within one launch. */
WKC_HD void ix_report(const wk_cu_ixflag &f, int op, int dim, int64_t size, int64_t pos, long long id) {
    wk_cu_ixrec *r = f.rec;
    if (!r) {
        if (!f.status) return;
#ifdef __CUDA_ARCH__
        atomicExch((int *)f.status, (int)WK_ERR_INDEX);
#else
        *f.status = WK_ERR_INDEX;
#endif
        return;
    }
    const unsigned long long upos = (unsigned long long)pos;
    bool first = false;
#ifdef __CUDA_ARCH__
    volatile wk_cu_ixrec *vr = r;
    unsigned long long own = vr->owner;
    if (own != 0 && (own != f.seq || vr->pos <= upos)) return;
    while (atomicCAS((int *)&r->lock, 0, 1) != 0) __nanosleep(64);
    __threadfence();
    own = vr->owner;
    if (own == 0 || (own == f.seq && upos < vr->pos)) {
        first = own == 0;
        vr->owner = f.seq;
        vr->pos = upos;
        vr->id = id;
        vr->size = size;
        vr->op = op;
        vr->dim = dim;
    }
    __threadfence();
    atomicExch((int *)&r->lock, 0);
    if (first && f.status) {
        __threadfence_system(); /* the record before the word the host reads */
        atomicExch((int *)f.status, (int)WK_ERR_INDEX);
    }
#else
    const unsigned long long own = r->owner;
    if (own == 0 || (own == f.seq && upos < r->pos)) {
        first = own == 0;
        r->owner = f.seq;
        r->pos = upos;
        r->id = id;
        r->size = size;
        r->op = op;
        r->dim = dim;
    }
    if (first && f.status) *f.status = WK_ERR_INDEX;
#endif
}

/* In-place write kernels: true when this op's wk__cu_index_check met a bad
 * id, so the whole op must write nothing. A plain load: bad_seq was written
 * by an earlier kernel on the stream, so it is visible and does not change
 * while this kernel runs. */
WKC_HD bool ix_gated(const wk_cu_ixflag &f) { return f.gate && f.rec && f.rec->bad_seq == f.seq; }

/* row-major position in view v of coordinates c, with c[dim] replaced by k */
WKC_HD int64_t ix_rowmajor(const wk_cu_view &v, const int64_t *c, int dim, int64_t k) {
    int64_t pos = 0;
    for (int d = 0; d < v.rank; d++) pos = pos * v.shape[d] + (d == dim ? k : c[d]);
    return pos;
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
            /* the gate first: the write kernel queued next reads it */
            if (p.f.rec) {
#ifdef __CUDA_ARCH__
                *(volatile unsigned long long *)&p.f.rec->bad_seq = p.f.seq;
#else
                p.f.rec->bad_seq = p.f.seq;
#endif
            }
            ix_report(p.f, p.op, p.dim, p.size, i, id);
        }
        break;
    }
    case IX_SELECT: {
        /* it = output shape (src's with shape[dim] = numel(ids)), ids 1-D */
        ix_coords(p.it, i, c);
        long long id = ix_load(p.idp, p.ids.offset + c[p.dim] * (p.ids.rank ? p.ids.stride[0] : 0), p.idt);
        if ((uint64_t)id >= usize) {
            wkc_put_bits(p.dst, i, p.dt, 0);
            ix_report(p.f, p.op, p.dim, p.size, c[p.dim], id);
            break;
        }
        int64_t so = ix_off(p.a, c, p.dim) + (int64_t)id * p.a.stride[p.dim];
        wkc_put_bits(p.dst, i, p.dt, wkc_raw_load(p.src, so, p.dt));
        break;
    }
    case IX_GATHER: {
        /* it = ids' shape = output shape */
        ix_coords(p.it, i, c);
        long long id = ix_load(p.idp, ix_off(p.ids, c, -1), p.idt);
        if ((uint64_t)id >= usize) {
            wkc_put_bits(p.dst, i, p.dt, 0);
            ix_report(p.f, p.op, p.dim, p.size, i, id);
            break;
        }
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
        if (ix_gated(p.f)) break; /* this op's check met a bad id: write nothing */
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
                if ((uint64_t)id >= usize) { /* checked before (gate): defence in depth */
                    ix_report(p.f, p.op, p.dim, p.size,
                              p.kind == IX_SCATTER ? ix_rowmajor(p.ids, c, p.dim, k) : k, id);
                    continue;
                }
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

/* the bound of the serial plan (see "Serial plan" above) */
#define IX_SERIAL_MAX_PAIRS (INT64_C(1) << 20)

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

extern "C" int64_t wk__cu_ix_serial_pairs(wk_cu_view ld, wk_cu_view lids, int dim, bool index_add,
                                          int64_t *bound) {
    if (bound) *bound = IX_SERIAL_MAX_PAIRS;
    if (!ix_view_ok(ld) || !ix_view_ok(lids) || dim < 0 || dim >= ld.rank) return 0;
    if (index_add) {
        if (lids.rank > 1 || !ix_may_overlap(ld)) return 0;
        int64_t outer = 1;
        for (int d = 0; d < ld.rank; d++)
            if (d != dim) outer *= ld.shape[d];
        const int64_t len = ix_numel(lids);
        if (len == 0 || outer == 0) return 0;
        return len > INT64_MAX / outer ? INT64_MAX : len * outer;
    }
    if (lids.rank != ld.rank || ix_numel(lids) == 0) return 0;
    wk_cu_view w = ld;
    for (int d = 0; d < ld.rank; d++) w.shape[d] = d == dim ? ld.shape[d] : lids.shape[d];
    return ix_may_overlap(w) ? ix_numel(lids) : 0;
}

extern "C" int wk__cu_index_check(wk_cu_stream s, const void *ids, wk_cu_view lids, wk_dtype idt, int64_t size, int op,
                                  int dim, wk_cu_ixflag f) {
    if (!ix_view_ok(lids) || !ix_idt_ok(idt) || size < 0) return WKC_BAD_ARG;
    IxP p = ix_base(IX_CHECK, WK_U8, idt, dim, ids, lids);
    p.it = lids;
    p.n = ix_numel(lids);
    p.size = size;
    p.f = f;
    p.op = op;
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_index_select(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids,
                                   wk_dtype idt, int dim, void *dst, wk_dtype dt, wk_cu_ixflag flag) {
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
    p.f = flag;
    p.op = WK_CU_IX_SELECT;
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_gather(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids,
                             wk_dtype idt, int dim, void *dst, wk_dtype dt, wk_cu_ixflag flag) {
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
    p.f = flag;
    p.op = WK_CU_IX_GATHER;
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_scatter(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids,
                              wk_dtype idt, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt, bool add,
                              wk_cu_ixflag flag) {
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
    p.f = flag;
    p.op = add ? WK_CU_IX_SCATTER_ADD : WK_CU_IX_SCATTER;
    /* the positions off dim that will be written: dst viewed with ids' shape */
    wk_cu_view w = ld;
    for (int d = 0; d < ld.rank; d++) w.shape[d] = d == dim ? ld.shape[d] : lids.shape[d];
    if (ix_may_overlap(w)) {
        if (ix_numel(lids) > IX_SERIAL_MAX_PAIRS) return WKC_BAD_ARG; /* the host said why first */
        const wk_cu_view *v[3] = {&ld, &lsrc, &lids};
        ix_serial_plan(p, lids, v, 3, lids.stride[dim], 2);
        return ix_launch(s, p, true);
    }
    return ix_launch(s, p, false);
}

extern "C" int wk__cu_index_add(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids,
                                wk_dtype idt, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt,
                                wk_cu_ixflag flag) {
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
    p.f = flag;
    p.op = WK_CU_IX_INDEX_ADD;
    if (ix_may_overlap(ld)) {
        if (p.len > IX_SERIAL_MAX_PAIRS / (p.n > 0 ? p.n : 1)) return WKC_BAD_ARG; /* the host said why first */
        const wk_cu_view *v[2] = {&ld, &lsrc};
        ix_serial_plan(p, ld, v, 2, 0, -1);
        return ix_launch(s, p, true);
    }
    return ix_launch(s, p, false);
}

/* ---- index_add, sorted path (see "Cost:" above) ---- */

namespace {

/* Thresholds of wk__cu_index_add_prefers_sorted.
 * IX_SORTED_MIN_LEN: below 64 ids the plain path's loop per outer position
 * is short, and the sort (>= 3 launches plus a workspace of 16 bytes per
 * padded id) would cost more than it saves.
 * IX_SORTED_MAX_OUTER: from 65536 outer positions on, the plain path
 * already has 65536 threads - a quarter or more of a large GPU's resident
 * threads, with coalesced accesses along the outer positions - so the sort
 * buys little; below it (the embedding backward: [vocab, 4096] with a few
 * thousand tokens) the plain path leaves most of the GPU idle while each
 * thread walks every id, and the sorted path multiplies the parallelism by
 * the number of unique ids. Both are performance choices only: the two
 * paths give the same bits. */
#define IX_SORTED_MIN_LEN 64
#define IX_SORTED_MAX_OUTER 65536
/* the sort's own bound on a line's length (kernels_sort.cu so_plan) */
#define IX_SORTED_MAX_LEN (INT64_C(1) << 40)

struct IxSortedP {
    int32_t idt, dim;
    int32_t narrow;  /* items < 2^32: 32-bit item division */
    int64_t len;     /* ids */
    int64_t nouter;  /* outer positions (dst's dims but dim) */
    int64_t size;    /* dst.shape[dim], every id's bound */
    wk_cu_view d, s; /* dst, src */
    wk_cu_view it;   /* dst's shape with shape[dim] = 1: the outer positions */
    const void *sorted;      /* ids sorted ascending, dtype idt, contiguous */
    const long long *perm;   /* perm[k]: original position of sorted[k] */
    const void *src;
    void *dst;
    wk_cu_ixflag f;
};

/* a + b on raw element bits in dtype DT, exactly as ix_add / the CPU's
 * add_elem: integers wrap, f32 / f64 in their own precision, bf16 / f16 /
 * f8e4m3 as an f32 sum rounded back to the dtype (every call rounds). */
template <int DT> WKC_HD unsigned long long ix_sum_bits(unsigned long long a, unsigned long long b) {
    switch (DT) {
    case WK_U8: return (uint8_t)(a + b);
    case WK_I16: return (uint16_t)(a + b);
    case WK_U32:
    case WK_I32: return (uint32_t)(a + b);
    case WK_I64: return a + b;
    case WK_F32: return wkc_f2u(wkc_u2f((uint32_t)a) + wkc_u2f((uint32_t)b));
    case WK_F64: return wkc_bits_f64(WK_F64, wkc_bits_to_f64(WK_F64, a) + wkc_bits_to_f64(WK_F64, b));
    case WK_BF16: return wkc_f32_to_bf16(wkc_bf16_to_f32((uint16_t)a) + wkc_bf16_to_f32((uint16_t)b));
    case WK_F16: return wkc_f32_to_f16(wkc_f16_to_f32((uint16_t)a) + wkc_f16_to_f32((uint16_t)b));
    default: return wkc_f32_to_f8e4m3(wkc_f8e4m3_to_f32((uint8_t)a) + wkc_f8e4m3_to_f32((uint8_t)b));
    }
}

/* item -> (sorted position, outer position), outer fastest */
WKC_HD void ix_sorted_split(const IxSortedP &p, int64_t i, int64_t *k, int64_t *o) {
    if (p.narrow) {
        const uint32_t u = (uint32_t)i, n = (uint32_t)p.nouter, q = u / n;
        *k = q;
        *o = u - q * n;
    } else {
        *k = i / p.nouter;
        *o = i - *k * p.nouter;
    }
}

/* Work item i = (k, o). Only the first sorted position of a run of equal
 * ids does work: dst[id, o] += src[perm[k'], o] for the run's k' in sorted
 * (= original) order, accumulated in a register, stored once. */
template <int DT> WKC_HD void ix_sorted_item(const IxSortedP &p, int64_t i) {
    int64_t k, o;
    ix_sorted_split(p, i, &k, &o);
    if (ix_gated(p.f)) return; /* this op's check met a bad id: write nothing */
    const long long id = ix_load(p.sorted, k, p.idt);
    if (k > 0 && ix_load(p.sorted, k - 1, p.idt) == id) return; /* not a run start */
    if ((uint64_t)id >= (uint64_t)p.size) { /* checked before (gate): defence in depth */
        ix_report(p.f, WK_CU_IX_INDEX_ADD, p.dim, p.size, (int64_t)p.perm[k], id);
        return;
    }
    int64_t c[WK_MAX_RANK];
    ix_coords(p.it, o, c);
    const int64_t di = ix_off(p.d, c, p.dim) + (int64_t)id * p.d.stride[p.dim];
    const int64_t sb = ix_off(p.s, c, p.dim), ss = p.s.stride[p.dim];
    unsigned long long acc = wkc_raw_load(p.dst, di, DT);
    for (int64_t r = k; r < p.len && ix_load(p.sorted, r, p.idt) == id; r++)
        acc = ix_sum_bits<DT>(acc, wkc_raw_load(p.src, sb + (int64_t)p.perm[r] * ss, DT));
    wkc_put_bits(p.dst, di, DT, acc);
}

template <int DT> struct IxSortedItem {
    static WKC_HD void item(const IxSortedP &p, int64_t i) { ix_sorted_item<DT>(p, i); }
};

template <int DT> static int ix_sorted_launch(wk_cu_stream s, const IxSortedP &p) {
    return wkc_launch_items<IxSortedItem<DT>, IX_THREADS>(s, p, p.len * p.nouter);
}

/* outer positions of dst: the product of its dims but dim */
static int64_t ix_outer(const wk_cu_view &ld, int dim) {
    int64_t n = 1;
    for (int d = 0; d < ld.rank; d++)
        if (d != dim) n *= ld.shape[d];
    return n;
}

} // namespace

extern "C" bool wk__cu_index_add_prefers_sorted(wk_cu_view ld, wk_cu_view lids, int dim) {
    if (!ix_view_ok(ld) || !ix_view_ok(lids) || dim < 0 || dim >= ld.rank || lids.rank != 1) return false;
    const int64_t len = lids.shape[0], nouter = ix_outer(ld, dim);
    if (len < IX_SORTED_MIN_LEN || len > IX_SORTED_MAX_LEN) return false;
    if (nouter <= 0 || nouter >= IX_SORTED_MAX_OUTER) return false;
    return !ix_may_overlap(ld); /* the plain path's serial plan: keep it */
}

extern "C" int wk__cu_index_add_sorted(wk_cu_stream s, void *dst, wk_cu_view ld, const void *sorted_ids,
                                       const int64_t *perm, wk_dtype idt, int64_t len, const void *src,
                                       wk_cu_view lsrc, int dim, wk_dtype dt, wk_cu_ixflag flag) {
    if (!ix_view_ok(ld) || !ix_view_ok(lsrc) || !ix_idt_ok(idt) || wkc_size(dt) == 0 || dim < 0 ||
        dim >= ld.rank || lsrc.rank != ld.rank || len < 0 || len > IX_SORTED_MAX_LEN)
        return WKC_BAD_ARG;
    const int64_t nouter = ix_outer(ld, dim);
    if (len == 0 || nouter == 0) return 0;
    if (nouter > INT64_MAX / len) return WKC_BAD_ARG; /* items would overflow */
    /* distinct (id, outer position) must name distinct elements */
    if (ix_may_overlap(ld)) return WKC_BAD_ARG;
    IxSortedP p;
    memset(&p, 0, sizeof p);
    p.idt = (int32_t)idt;
    p.dim = dim;
    p.len = len;
    p.nouter = nouter;
    p.narrow = len * nouter <= (int64_t)UINT32_MAX;
    p.size = ld.shape[dim];
    p.d = ld;
    p.s = lsrc;
    p.it = ld;
    p.it.shape[dim] = 1;
    p.sorted = sorted_ids;
    p.perm = (const long long *)perm;
    p.src = src;
    p.dst = dst;
    p.f = flag;
    switch (dt) {
    case WK_U8: return ix_sorted_launch<WK_U8>(s, p);
    case WK_U32: return ix_sorted_launch<WK_U32>(s, p);
    case WK_I16: return ix_sorted_launch<WK_I16>(s, p);
    case WK_I32: return ix_sorted_launch<WK_I32>(s, p);
    case WK_I64: return ix_sorted_launch<WK_I64>(s, p);
    case WK_BF16: return ix_sorted_launch<WK_BF16>(s, p);
    case WK_F16: return ix_sorted_launch<WK_F16>(s, p);
    case WK_F32: return ix_sorted_launch<WK_F32>(s, p);
    case WK_F64: return ix_sorted_launch<WK_F64>(s, p);
    case WK_F8E4M3: return ix_sorted_launch<WK_F8E4M3>(s, p);
    default: return WKC_BAD_ARG;
    }
}

/* ---- scatter / scatter_add, sorted path (see "Cost:" above) ---- */

namespace {

/* Thresholds of wk__cu_scatter_prefers_sorted: the same reasoning, and the
 * same numbers, as index_add's (IX_SORTED_MIN_LEN / IX_SORTED_MAX_OUTER
 * above), with "outer positions" = lines = the positions of ids' dims but
 * dim, each one thread of the plain path: a line shorter than 64 ids is
 * cheaper to walk than to sort, and 65536 or more lines already keep the
 * GPU busy on the plain path. Performance choices only: same bits. */
#define SC_SORTED_MIN_LEN IX_SORTED_MIN_LEN
#define SC_SORTED_MAX_LINES IX_SORTED_MAX_OUTER

struct ScSortedP {
    int32_t idt, dim;
    int32_t narrow;  /* items < 2^32: 32-bit item division */
    int64_t len;     /* ids along dim (a line) */
    int64_t inner;   /* product of ids' dims after dim: the sorted arrays' stride along dim */
    int64_t items;   /* numel(ids) */
    int64_t size;    /* dst.shape[dim], every id's bound */
    wk_cu_view d, s; /* dst, src */
    wk_cu_view it;   /* ids' shape: the sorted arrays are contiguous with it */
    const void *sorted;    /* per line ids sorted ascending (stable), dtype idt */
    const long long *perm; /* original position along dim of each sorted id */
    const void *src;
    void *dst;
    wk_cu_ixflag f;
    int32_t op;            /* WK_CU_IX_SCATTER or WK_CU_IX_SCATTER_ADD */
};

/* position along dim of item i (= row-major position in ids' shape) */
WKC_HD int64_t sc_sorted_pos(const ScSortedP &p, int64_t i) {
    if (p.narrow) {
        const uint32_t q = (uint32_t)i / (uint32_t)p.inner, n = (uint32_t)p.len;
        return (int64_t)(q - q / n * n);
    }
    const int64_t q = i / p.inner;
    return q - q / p.len * p.len;
}

/* dst element of id at item i's line, src's line base; false (flag set) for a bad id */
WKC_HD bool sc_sorted_addr(const ScSortedP &p, int64_t i, long long id, int64_t *di, int64_t *sb) {
    if ((uint64_t)id >= (uint64_t)p.size) { /* checked before (gate): defence in depth */
        /* item i's row-major position in ids, with its original position along dim */
        const int64_t s = sc_sorted_pos(p, i);
        ix_report(p.f, p.op, p.dim, p.size, i + ((int64_t)p.perm[i] - s) * p.inner, id);
        return false;
    }
    int64_t c[WK_MAX_RANK];
    ix_coords(p.it, i, c);
    *di = ix_off(p.d, c, p.dim) + (int64_t)id * p.d.stride[p.dim];
    *sb = ix_off(p.s, c, p.dim);
    return true;
}

/* scatter_add, item i: only the first sorted position of a run of equal ids
 * in its line works: acc = dst[id]; acc += src[perm[r]] for the run's r in
 * sorted (= original, by stability) order, rounded as add_elem each step;
 * one store. */
template <int DT> WKC_HD void sc_sorted_add_item(const ScSortedP &p, int64_t i) {
    if (ix_gated(p.f)) return; /* this op's check met a bad id: write nothing */
    const int64_t s = sc_sorted_pos(p, i);
    const long long id = ix_load(p.sorted, i, p.idt);
    if (s > 0 && ix_load(p.sorted, i - p.inner, p.idt) == id) return; /* not a run start */
    int64_t di, sb;
    if (!sc_sorted_addr(p, i, id, &di, &sb)) return;
    const int64_t ss = p.s.stride[p.dim];
    unsigned long long acc = wkc_raw_load(p.dst, di, DT);
    for (int64_t r = s, j = i; r < p.len && ix_load(p.sorted, j, p.idt) == id; r++, j += p.inner)
        acc = ix_sum_bits<DT>(acc, wkc_raw_load(p.src, sb + (int64_t)p.perm[j] * ss, DT));
    wkc_put_bits(p.dst, di, DT, acc);
}

/* scatter (set), item i: only the LAST sorted position of a run writes -
 * the largest original position, i.e. the CPU's last write. */
template <int DT> WKC_HD void sc_sorted_set_item(const ScSortedP &p, int64_t i) {
    if (ix_gated(p.f)) return; /* this op's check met a bad id: write nothing */
    const int64_t s = sc_sorted_pos(p, i);
    const long long id = ix_load(p.sorted, i, p.idt);
    if (s + 1 < p.len && ix_load(p.sorted, i + p.inner, p.idt) == id) return; /* not a run end */
    int64_t di, sb;
    if (!sc_sorted_addr(p, i, id, &di, &sb)) return;
    wkc_put_bits(p.dst, di, DT, wkc_raw_load(p.src, sb + (int64_t)p.perm[i] * p.s.stride[p.dim], DT));
}

template <int DT> struct ScSortedAdd {
    static WKC_HD void item(const ScSortedP &p, int64_t i) { sc_sorted_add_item<DT>(p, i); }
};
template <int DT> struct ScSortedSet {
    static WKC_HD void item(const ScSortedP &p, int64_t i) { sc_sorted_set_item<DT>(p, i); }
};

template <int DT> static int sc_sorted_launch(wk_cu_stream s, const ScSortedP &p, bool add) {
    if (add) return wkc_launch_items<ScSortedAdd<DT>, IX_THREADS>(s, p, p.items);
    return wkc_launch_items<ScSortedSet<DT>, IX_THREADS>(s, p, p.items);
}

/* the positions of dst the op writes: dst viewed with ids' shape off dim,
 * its full extent along dim (as wk__cu_scatter's overlap test) */
static wk_cu_view sc_written(const wk_cu_view &ld, const wk_cu_view &lids, int dim) {
    wk_cu_view w = ld;
    for (int d = 0; d < ld.rank; d++) w.shape[d] = d == dim ? ld.shape[d] : lids.shape[d];
    return w;
}

} // namespace

extern "C" bool wk__cu_scatter_prefers_sorted(wk_cu_view ld, wk_cu_view lids, int dim) {
    if (!ix_view_ok(ld) || !ix_view_ok(lids) || dim < 0 || dim >= ld.rank || lids.rank != ld.rank) return false;
    const int64_t len = lids.shape[dim], lines = ix_outer(lids, dim);
    if (len < SC_SORTED_MIN_LEN || len > IX_SORTED_MAX_LEN) return false;
    if (lines <= 0 || lines >= SC_SORTED_MAX_LINES) return false;
    return !ix_may_overlap(sc_written(ld, lids, dim)); /* the plain path's serial plan: keep it */
}

extern "C" int wk__cu_scatter_sorted(wk_cu_stream s, void *dst, wk_cu_view ld, const void *sorted_ids,
                                     const int64_t *perm, wk_cu_view lids, wk_dtype idt, const void *src,
                                     wk_cu_view lsrc, int dim, wk_dtype dt, bool add, wk_cu_ixflag flag) {
    if (!ix_view_ok(ld) || !ix_view_ok(lids) || !ix_view_ok(lsrc) || !ix_idt_ok(idt) || wkc_size(dt) == 0 ||
        dim < 0 || dim >= ld.rank || lids.rank != ld.rank || lsrc.rank != ld.rank ||
        lids.shape[dim] > IX_SORTED_MAX_LEN)
        return WKC_BAD_ARG;
    const int64_t items = ix_numel(lids);
    if (items == 0) return 0;
    /* distinct (line, id) must name distinct elements */
    if (ix_may_overlap(sc_written(ld, lids, dim))) return WKC_BAD_ARG;
    ScSortedP p;
    memset(&p, 0, sizeof p);
    p.idt = (int32_t)idt;
    p.dim = dim;
    p.len = lids.shape[dim];
    p.inner = 1;
    for (int d = dim + 1; d < lids.rank; d++) p.inner *= lids.shape[d];
    p.items = items;
    p.narrow = items <= (int64_t)UINT32_MAX;
    p.size = ld.shape[dim];
    p.d = ld;
    p.s = lsrc;
    p.it = lids;
    p.sorted = sorted_ids;
    p.perm = (const long long *)perm;
    p.src = src;
    p.dst = dst;
    p.f = flag;
    p.op = add ? WK_CU_IX_SCATTER_ADD : WK_CU_IX_SCATTER;
    switch (dt) {
    case WK_U8: return sc_sorted_launch<WK_U8>(s, p, add);
    case WK_U32: return sc_sorted_launch<WK_U32>(s, p, add);
    case WK_I16: return sc_sorted_launch<WK_I16>(s, p, add);
    case WK_I32: return sc_sorted_launch<WK_I32>(s, p, add);
    case WK_I64: return sc_sorted_launch<WK_I64>(s, p, add);
    case WK_BF16: return sc_sorted_launch<WK_BF16>(s, p, add);
    case WK_F16: return sc_sorted_launch<WK_F16>(s, p, add);
    case WK_F32: return sc_sorted_launch<WK_F32>(s, p, add);
    case WK_F64: return sc_sorted_launch<WK_F64>(s, p, add);
    case WK_F8E4M3: return sc_sorted_launch<WK_F8E4M3>(s, p, add);
    default: return WKC_BAD_ARG;
    }
}
