/* CPU indexing kernels: index_select, gather, scatter (set / add), index_add.
 *
 * Every index is checked against the size of the indexed dim. Kernels that
 * write in place (scatter, index_add) check all ids in a first pass before
 * writing anything; index_select reads its 1-D ids into a checked array
 * first; gather checks while reading (its output is fresh and the caller
 * frees it on error).
 *
 * gather / scatter / index_add walk the positions of every dim but `dim`
 * (coalesced, in parallel pieces) and, inside each run, loop over `dim` in
 * increasing order. Two positions that differ only along `dim` are always
 * handled by the same thread in that order, so duplicate indices give the
 * same result for any thread count (the last write in row-major order of the
 * ids wins; additions accumulate in that order). */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/cpu_iter.h"
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t load_idx(const void *p, int64_t i, wk_dtype idt) {
    switch (idt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I32: return ((const int32_t *)p)[i];
    case WK_I64: return ((const int64_t *)p)[i];
    default: return -1;
    }
}

static wk_status bad_index(const char *op, int64_t id, int dim, int64_t size) {
    return wk__err(WK_ERR_INDEX, op, "index %" PRId64 " is out of range for dim %d of size %" PRId64, id, dim, size);
}

static bool idx_dtype_ok(const char *op, wk_dtype idt) {
    if (idt == WK_U8 || idt == WK_U32 || idt == WK_I32 || idt == WK_I64) return true;
    wk__err(WK_ERR_DTYPE, op, "index dtype %s is not supported (u8, u32, i32, i64)", wk_dtype_name(idt));
    return false;
}

/* ---------------------------------------------------------------- helpers */

/* Layout l without dim d (rank - 1 dims). */
static void drop_dim(const wk_layout *l, int d, wk_layout *out) {
    out->rank = l->rank - 1;
    out->offset = l->offset;
    for (int i = 0, k = 0; i < l->rank; i++) {
        if (i == d) continue;
        out->shape[k] = l->shape[i];
        out->stride[k] = l->stride[i];
        k++;
    }
}

/* True when two positions of l can name the same element (a stride 0 on a
 * dim longer than 1, or any other overlap we do not try to prove absent). */
static bool may_overlap(const wk_layout *l) {
    /* sort-free check: strides sorted by size must each exceed the span of
     * the smaller ones. Ranks are tiny, so a selection order is fine. */
    int idx[WK_MAX_RANK], n = 0;
    for (int i = 0; i < l->rank; i++) {
        if (l->shape[i] == 0) return false;
        if (l->shape[i] > 1) idx[n++] = i;
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (l->stride[idx[b]] < l->stride[idx[a]]) {
                int t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
            }
    int64_t span = 0; /* max offset reached by the smaller dims */
    for (int a = 0; a < n; a++) {
        int64_t st = l->stride[idx[a]];
        if (st <= span) return true;
        span += st * (l->shape[idx[a]] - 1);
    }
    return false;
}

/* Check every element of the ids view (any rank) against size. */
typedef struct {
    const void *ids;
    wk_dtype idt;
    int64_t size;
    atomic_int bad;
    int64_t bad_id;
} check_ctx;

/* Vectorizable scan: any id with (unsigned)id >= size (negatives included). */
#define CHECK_SCAN(IT)                                                      \
    do {                                                                    \
        const IT *ip = (const IT *)c->ids + offs[0];                        \
        int64_t s0 = st[0];                                                 \
        if (s0 == 1)                                                        \
            for (int64_t i = 0; i < n; i++) bad |= (uint64_t)(int64_t)ip[i] >= size; \
        else                                                                \
            for (int64_t i = 0; i < n; i++) bad |= (uint64_t)(int64_t)ip[i * s0] >= size; \
    } while (0)

static void check_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    check_ctx *c = p;
    uint64_t size = (uint64_t)c->size;
    int bad = 0;
    switch (c->idt) {
    case WK_U8: CHECK_SCAN(uint8_t); break;
    case WK_U32: CHECK_SCAN(uint32_t); break;
    case WK_I32: CHECK_SCAN(int32_t); break;
    default: CHECK_SCAN(int64_t); break;
    }
    if (!bad) return;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = load_idx(c->ids, offs[0] + i * st[0], c->idt);
        if (id < 0 || id >= c->size) {
            int expect = 0;
            if (atomic_compare_exchange_strong(&c->bad, &expect, 1)) c->bad_id = id;
            return;
        }
    }
}

/* For gather / scatter: ids[pos] < size_of(dim) for every pos. */
static wk_status check_all(const char *op, const void *ids, const wk_layout *lids, wk_dtype idt, int dim,
                           int64_t size) {
    if (wk__layout_numel(lids) == 0) return WK_OK;
    const wk_layout *ls[1] = {lids};
    wk_iter it;
    wk__iter_init(&it, 1, ls);
    check_ctx c = {ids, idt, size, 0, 0};
    wk__iter_foreach_min(&it, check_run, &c, WK_PAR_MIN_CHEAP);
    if (atomic_load(&c.bad)) return bad_index(op, c.bad_id, dim, size);
    return WK_OK;
}

/* 1-D ids read into a fresh int64 array (checked); *out NULL when n == 0. */
static wk_status read_ids_1d(const char *op, const void *ids, const wk_layout *lids, wk_dtype idt, int dim,
                             int64_t size, int64_t **out, int64_t *nout) {
    int64_t n = wk__layout_numel(lids);
    int64_t st = lids->rank ? lids->stride[0] : 0;
    *out = NULL;
    *nout = n;
    if (n == 0) return WK_OK;
    int64_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return wk__err(WK_ERR_OOM, op, "cannot allocate %" PRId64 " indices", n);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = load_idx(ids, lids->offset + i * st, idt);
        if (id < 0 || id >= size) {
            free(v);
            return bad_index(op, id, dim, size);
        }
        v[i] = id;
    }
    *out = v;
    return WK_OK;
}

/* Loop over dim innermost when the ids step along dim is the smaller one. */
static inline bool inner_is_dim(int64_t idim, int64_t irun, int64_t cnt) {
    int64_t a = idim < 0 ? -idim : idim, b = irun < 0 ? -irun : irun;
    return cnt > 1 && a < b;
}

/* ------------------------------------------------------ element operations */

static inline void copy_elem(char *d, const char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
    }
}

/* *d += *s in dtype dt: integers wrap (unsigned arithmetic), narrow floats
 * through f32. */
static inline void add_elem(void *dst, int64_t i, const void *src, int64_t j, wk_dtype dt) {
    switch (dt) {
    case WK_U8: ((uint8_t *)dst)[i] = (uint8_t)(((const uint8_t *)src)[j] + ((uint8_t *)dst)[i]); break;
    case WK_U32: ((uint32_t *)dst)[i] += ((const uint32_t *)src)[j]; break;
    case WK_I16: {
        uint16_t a = (uint16_t)((int16_t *)dst)[i], b = (uint16_t)((const int16_t *)src)[j];
        uint16_t s = (uint16_t)(a + b);
        ((int16_t *)dst)[i] = (int16_t)(s >= 0x8000u ? (int)s - 0x10000 : (int)s);
        break;
    }
    case WK_I32: {
        uint32_t s = (uint32_t)((int32_t *)dst)[i] + (uint32_t)((const int32_t *)src)[j];
        int32_t r;
        memcpy(&r, &s, 4);
        ((int32_t *)dst)[i] = r;
        break;
    }
    case WK_I64: {
        uint64_t s = (uint64_t)((int64_t *)dst)[i] + (uint64_t)((const int64_t *)src)[j];
        int64_t r;
        memcpy(&r, &s, 8);
        ((int64_t *)dst)[i] = r;
        break;
    }
    case WK_F32: ((float *)dst)[i] += ((const float *)src)[j]; break;
    case WK_F64: ((double *)dst)[i] += ((const double *)src)[j]; break;
    case WK_BF16:
    case WK_F16:
    case WK_F8E4M3: wk__narrow_store(dst, i, dt, wk__narrow_load(dst, i, dt) + wk__narrow_load(src, j, dt)); break;
    default: break;
    }
}

/* Walk an iterator over the dims other than `dim` where every position
 * carries `per` elements of work (the loop along dim): pieces for the thread
 * pool are sized in positions, so a few long positions still split. */
typedef struct {
    const wk_iter *it;
    wk_run_fn run;
    void *ctx;
} outer_ctx;

static void outer_piece(void *p, int64_t b, int64_t e, int tid) {
    (void)tid;
    outer_ctx *c = p;
    wk__iter_runs(c->it, b, e, c->run, c->ctx);
}

static void foreach_outer(const wk_iter *it, wk_run_fn run, void *ctx, int64_t per, int64_t min_work) {
    int64_t n = 1;
    for (int i = 0; i < it->rank; i++) n *= it->shape[i];
    if (per < 1) per = 1;
    int64_t grain = 1024 / per, minp = min_work / per;
    outer_ctx c = {it, run, ctx};
    wk__parallel_for(n, grain < 1 ? 1 : grain, minp < 1 ? 1 : minp, outer_piece, &c);
}

/* ------------------------------------------------------------ index_select */

typedef struct {
    const char *src;
    char *dst;
    size_t es;
    const int64_t *ids;
    int64_t n, inner, sdim;   /* ids count, elements per block, src stride of dim */
    /* outer dims (before dim) of src */
    int orank;
    int64_t oshape[WK_MAX_RANK], ostride[WK_MAX_RANK], off;
} isel_ctx;

/* Contiguous-inner fast path: one memcpy per (outer, j) block. */
static void isel_blocks(void *p, int64_t b, int64_t e, int tid) {
    (void)tid;
    isel_ctx *c = p;
    size_t bytes = (size_t)c->inner * c->es;
    for (int64_t blk = b; blk < e; blk++) {
        int64_t o = blk / c->n, j = blk % c->n;
        int64_t off = c->off + wk__unravel(c->oshape, c->ostride, c->orank, o) + c->ids[j] * c->sdim;
        memcpy(c->dst + blk * (int64_t)bytes, c->src + off * (int64_t)c->es, bytes);
    }
}

typedef struct {
    const char *src;
    char *dst;
    size_t es;
    const int64_t *ids;
    int64_t n, sdim, ddim;
} isel_gen_ctx;

static void isel_run(void *p, int64_t cnt, const int64_t *offs, const int64_t *st) {
    isel_gen_ctx *c = p;
    size_t es = c->es;
    if (cnt > 1 && c->ddim < st[0]) {
        /* the selected dim is the faster one in dst (e.g. columns): walk it innermost */
#define ISEL_COLS(ES)                                                                               \
    for (int64_t i = 0; i < cnt; i++) {                                                             \
        const char *s = c->src + (offs[1] + i * st[1]) * ES;                                        \
        char *d = c->dst + (offs[0] + i * st[0]) * ES;                                              \
        for (int64_t j = 0; j < n; j++) memcpy(d + j * ddim * ES, s + ids[j] * sdim * ES, ES);      \
    }
        const int64_t n = c->n, ddim = c->ddim, sdim = c->sdim, *ids = c->ids;
        switch (es) {
        case 1: ISEL_COLS(1) break;
        case 2: ISEL_COLS(2) break;
        case 4: ISEL_COLS(4) break;
        default: ISEL_COLS(8) break;
        }
#undef ISEL_COLS
        return;
    }
    for (int64_t j = 0; j < c->n; j++) {
        const char *s = c->src + (offs[1] + c->ids[j] * c->sdim) * (int64_t)es;
        char *d = c->dst + (offs[0] + j * c->ddim) * (int64_t)es;
        if (st[0] == 1 && st[1] == 1) {
            memcpy(d, s, (size_t)cnt * es);
            continue;
        }
        for (int64_t i = 0; i < cnt; i++) copy_elem(d + i * st[0] * (int64_t)es, s + i * st[1] * (int64_t)es, es);
    }
}

wk_status wk__cpu_index_select(wk_device *dev, const void *src, const wk_layout *ls, const void *ids,
                               const wk_layout *lids, wk_dtype idt, int dim, void *dst, wk_dtype dt) {
    (void)dev;
    const char *op = "wk_index_select";
    if (!idx_dtype_ok(op, idt)) return WK_ERR_DTYPE;
    int64_t *v, n;
    wk_status st = read_ids_1d(op, ids, lids, idt, dim, ls->shape[dim], &v, &n);
    if (st != WK_OK || n == 0) return st;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < dim; i++) outer *= ls->shape[i];
    for (int i = dim + 1; i < ls->rank; i++) inner *= ls->shape[i];
    size_t es = wk__dtype_elem_bytes(dt);
    if (outer * inner == 0) { free(v); return WK_OK; }
    /* inner dims contiguous in src? */
    bool contig = true;
    int64_t expect = 1;
    for (int i = ls->rank - 1; i > dim; i--) {
        if (ls->shape[i] != 1 && ls->stride[i] != expect) contig = false;
        expect *= ls->shape[i];
    }
    if (contig && inner >= 16) {
        isel_ctx c = {src, dst, es, v, n, inner, ls->stride[dim], dim, {0}, {0}, ls->offset};
        for (int i = 0; i < dim; i++) {
            c.oshape[i] = ls->shape[i];
            c.ostride[i] = ls->stride[i];
        }
        int64_t blocks = outer * n;
        int64_t grain = inner >= 1024 ? 1 : 1024 / inner;
        int64_t minp = WK_PAR_MIN_CHEAP / inner;
        wk__parallel_for(blocks, grain, minp < 1 ? 1 : minp, isel_blocks, &c);
    } else {
        wk_layout lsd, lod, lout;
        int64_t oshape[WK_MAX_RANK];
        for (int i = 0; i < ls->rank; i++) oshape[i] = ls->shape[i];
        oshape[dim] = n;
        wk__layout_contiguous(&lout, oshape, ls->rank, 0);
        drop_dim(ls, dim, &lsd);
        drop_dim(&lout, dim, &lod);
        const wk_layout *l2[2] = {&lod, &lsd};
        wk_iter it;
        wk__iter_init(&it, 2, l2);
        isel_gen_ctx c = {src, dst, es, v, n, ls->stride[dim], lout.stride[dim]};
        foreach_outer(&it, isel_run, &c, n, WK_PAR_MIN_CHEAP);
    }
    free(v);
    return WK_OK;
}

/* ------------------------------------------------------------------ gather */

typedef struct {
    const char *src;
    char *dst;
    const void *ids;
    wk_dtype idt;
    size_t es;
    int64_t len, ddim, sdim, idim; /* len: ids.shape[dim] */
    int64_t size;                  /* src.shape[dim]: ids are checked while reading */
    atomic_int bad;
    int64_t bad_id;
} gather_ctx;

static void gather_bad(gather_ctx *c, int64_t id) {
    int expect = 0;
    if (atomic_compare_exchange_strong(&c->bad, &expect, 1)) c->bad_id = id;
}

/* One loop nest per (index type, element size): `kin` walks dim innermost.
 * IT: index C type; ES: element bytes (copied with a fixed-size memcpy). */
#define GATHER_NEST(IT, ES)                                                                             \
    do {                                                                                              \
        const IT *ip = (const IT *)c->ids;                                                            \
        const char *sp = c->src;                                                                      \
        char *dp = c->dst;                                                                            \
        if (kin) {                                                                                    \
            for (int64_t i = 0; i < cnt; i++) {                                                       \
                int64_t io = offs[2] + i * st[2], so = offs[1] + i * st[1], dof = offs[0] + i * st[0]; \
                for (int64_t k = 0; k < len; k++) {                                                   \
                    int64_t id = (int64_t)ip[io + k * idim];                                          \
                    if ((uint64_t)id >= usize) { gather_bad(c, id); return; }                         \
                    memcpy(dp + (dof + k * ddim) * ES, sp + (so + id * sdim) * ES, ES);               \
                }                                                                                     \
            }                                                                                         \
        } else {                                                                                      \
            for (int64_t k = 0; k < len; k++)                                                         \
                for (int64_t i = 0; i < cnt; i++) {                                                   \
                    int64_t id = (int64_t)ip[offs[2] + i * st[2] + k * idim];                         \
                    if ((uint64_t)id >= usize) { gather_bad(c, id); return; }                         \
                    memcpy(dp + (offs[0] + i * st[0] + k * ddim) * ES, sp + (offs[1] + i * st[1] + id * sdim) * ES, \
                           ES);                                                                       \
                }                                                                                     \
        }                                                                                             \
    } while (0)

#define BY_ES(NEST, IT)                     \
    switch (c->es) {                        \
    case 1: NEST(IT, 1); break;             \
    case 2: NEST(IT, 2); break;             \
    case 4: NEST(IT, 4); break;             \
    default: NEST(IT, 8); break;            \
    }

#define BY_IDT(NEST)                                \
    switch (c->idt) {                               \
    case WK_U8: BY_ES(NEST, uint8_t) break;         \
    case WK_U32: BY_ES(NEST, uint32_t) break;       \
    case WK_I32: BY_ES(NEST, int32_t) break;        \
    default: BY_ES(NEST, int64_t) break;            \
    }

/* offs/st: 0 dst, 1 src, 2 ids */
static void gather_run(void *p, int64_t cnt, const int64_t *offs, const int64_t *st) {
    gather_ctx *c = p;
    const int64_t len = c->len, idim = c->idim, ddim = c->ddim, sdim = c->sdim;
    const uint64_t usize = (uint64_t)c->size;
    /* walk the operand with the smaller stride innermost (cache friendly) */
    const bool kin = inner_is_dim(idim, st[2], cnt);
    BY_IDT(GATHER_NEST)
}

wk_status wk__cpu_gather(wk_device *dev, const void *src, const wk_layout *ls, const void *ids, const wk_layout *lids,
                         wk_dtype idt, int dim, void *dst, wk_dtype dt) {
    (void)dev;
    const char *op = "wk_gather";
    if (!idx_dtype_ok(op, idt)) return WK_ERR_DTYPE;
    if (wk__layout_numel(lids) == 0) return WK_OK;
    /* the output is fresh and freed by the caller on error: check while reading */
    wk_layout lout, lod, lsd, lid;
    wk__layout_contiguous(&lout, lids->shape, lids->rank, 0);
    /* src viewed with ids' shape on the other dims */
    wk_layout lsv = *ls;
    for (int i = 0; i < ls->rank; i++) lsv.shape[i] = lids->shape[i];
    drop_dim(&lout, dim, &lod);
    drop_dim(&lsv, dim, &lsd);
    drop_dim(lids, dim, &lid);
    const wk_layout *l3[3] = {&lod, &lsd, &lid};
    wk_iter it;
    wk__iter_init(&it, 3, l3);
    int64_t len = lids->shape[dim];
    gather_ctx c = {src, dst, ids, idt, wk__dtype_elem_bytes(dt), len, lout.stride[dim], ls->stride[dim], lids->stride[dim],
                    ls->shape[dim], 0, 0};
    foreach_outer(&it, gather_run, &c, len, WK_PAR_MIN_ELEMS);
    if (atomic_load(&c.bad)) return bad_index(op, c.bad_id, dim, ls->shape[dim]);
    return WK_OK;
}

/* ----------------------------------------------------------------- scatter */

typedef struct {
    char *dst;
    const char *src;
    const void *ids;
    wk_dtype idt, dt;
    size_t es;
    bool add;
    int64_t len, ddim, sdim, idim;
} scatter_ctx;

/* ELEM(di, si): the update of dst element di from src element si. */
#define SCATTER_NEST(IT, ELEM)                                                                        \
    do {                                                                                              \
        const IT *ip = (const IT *)c->ids;                                                            \
        if (kin) {                                                                                    \
            for (int64_t i = 0; i < cnt; i++) {                                                       \
                int64_t io = offs[2] + i * st[2], so = offs[1] + i * st[1], dof = offs[0] + i * st[0]; \
                for (int64_t k = 0; k < len; k++) {                                                   \
                    int64_t id = (int64_t)ip[io + k * idim];                                          \
                    ELEM(dof + id * ddim, so + k * sdim);                                             \
                }                                                                                     \
            }                                                                                         \
        } else {                                                                                      \
            for (int64_t k = 0; k < len; k++)                                                         \
                for (int64_t i = 0; i < cnt; i++) {                                                   \
                    int64_t id = (int64_t)ip[offs[2] + i * st[2] + k * idim];                         \
                    ELEM(offs[0] + i * st[0] + id * ddim, offs[1] + i * st[1] + k * sdim);            \
                }                                                                                     \
        }                                                                                             \
    } while (0)

#define SC_SET1(di, si) memcpy(c->dst + (di), c->src + (si), 1)
#define SC_SET2(di, si) memcpy(c->dst + (di) * 2, c->src + (si) * 2, 2)
#define SC_SET4(di, si) memcpy(c->dst + (di) * 4, c->src + (si) * 4, 4)
#define SC_SET8(di, si) memcpy(c->dst + (di) * 8, c->src + (si) * 8, 8)
#define SC_ADDF32(di, si) ((float *)(void *)c->dst)[di] += ((const float *)(const void *)c->src)[si]
#define SC_ADDF64(di, si) ((double *)(void *)c->dst)[di] += ((const double *)(const void *)c->src)[si]
#define SC_ADD(di, si) add_elem(c->dst, di, c->src, si, c->dt)

#define SC_BY_IDT(ELEM)                                  \
    switch (c->idt) {                                    \
    case WK_U8: SCATTER_NEST(uint8_t, ELEM); break;      \
    case WK_U32: SCATTER_NEST(uint32_t, ELEM); break;    \
    case WK_I32: SCATTER_NEST(int32_t, ELEM); break;     \
    default: SCATTER_NEST(int64_t, ELEM); break;         \
    }

/* offs/st: 0 dst, 1 src, 2 ids. Per dst element the updates come in
 * increasing k either way (positions off dim never alias on this path). */
static void scatter_run(void *p, int64_t cnt, const int64_t *offs, const int64_t *st) {
    scatter_ctx *c = p;
    const int64_t len = c->len, idim = c->idim, ddim = c->ddim, sdim = c->sdim;
    const bool kin = inner_is_dim(idim, st[2], cnt);
    if (c->add) {
        if (c->dt == WK_F32) SC_BY_IDT(SC_ADDF32)
        else if (c->dt == WK_F64) SC_BY_IDT(SC_ADDF64)
        else SC_BY_IDT(SC_ADD)
        return;
    }
    switch (c->es) {
    case 1: SC_BY_IDT(SC_SET1) break;
    case 2: SC_BY_IDT(SC_SET2) break;
    case 4: SC_BY_IDT(SC_SET4) break;
    default: SC_BY_IDT(SC_SET8) break;
    }
}

wk_status wk__cpu_scatter(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                          wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt, bool add) {
    (void)dev;
    const char *op = add ? "wk_scatter_add" : "wk_scatter";
    if (!idx_dtype_ok(op, idt)) return WK_ERR_DTYPE;
    wk_status st = check_all(op, ids, lids, idt, dim, ld->shape[dim]);
    if (st != WK_OK || wk__layout_numel(lids) == 0) return st;
    wk_layout ldv = *ld, lod, lsd, lid;
    for (int i = 0; i < ld->rank; i++) ldv.shape[i] = lids->shape[i];
    drop_dim(&ldv, dim, &lod);
    drop_dim(lsrc, dim, &lsd);
    drop_dim(lids, dim, &lid);
    const wk_layout *l3[3] = {&lod, &lsd, &lid};
    wk_iter it;
    wk__iter_init(&it, 3, l3);
    int64_t len = lids->shape[dim];
    scatter_ctx c = {dst, src, ids, idt, dt, wk__dtype_elem_bytes(dt), add, len, ld->stride[dim], lsrc->stride[dim],
                     lids->stride[dim]};
    if (may_overlap(ld)) {
        /* positions off dim may alias: one thread, row-major order */
        wk__iter_runs(&it, 0, wk__layout_numel(&lod), scatter_run, &c);
        return WK_OK;
    }
    foreach_outer(&it, scatter_run, &c, len, WK_PAR_MIN_ELEMS);
    return WK_OK;
}

/* --------------------------------------------------------------- index_add */

typedef struct {
    char *dst;
    const char *src;
    const int64_t *ids;
    wk_dtype dt;
    int64_t n, ddim, sdim;
} iadd_ctx;

/* offs/st: 0 dst, 1 src */
static void iadd_run(void *p, int64_t cnt, const int64_t *offs, const int64_t *st) {
    iadd_ctx *c = p;
    for (int64_t j = 0; j < c->n; j++) {
        int64_t db = offs[0] + c->ids[j] * c->ddim, sb = offs[1] + j * c->sdim;
        if (c->dt == WK_F32 && st[0] == 1 && st[1] == 1) {
            float *d = (float *)(void *)c->dst + db;
            const float *s = (const float *)(const void *)c->src + sb;
            for (int64_t i = 0; i < cnt; i++) d[i] += s[i];
            continue;
        }
        for (int64_t i = 0; i < cnt; i++) add_elem(c->dst, db + i * st[0], c->src, sb + i * st[1], c->dt);
    }
}

wk_status wk__cpu_index_add(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                            wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt) {
    (void)dev;
    const char *op = "wk_index_add";
    if (!idx_dtype_ok(op, idt)) return WK_ERR_DTYPE;
    int64_t *v, n;
    wk_status st = read_ids_1d(op, ids, lids, idt, dim, ld->shape[dim], &v, &n);
    if (st != WK_OK || n == 0) return st;
    wk_layout lod, lsd;
    drop_dim(ld, dim, &lod);
    drop_dim(lsrc, dim, &lsd);
    if (wk__layout_numel(&lod) == 0) { free(v); return WK_OK; }
    const wk_layout *l2[2] = {&lod, &lsd};
    wk_iter it;
    wk__iter_init(&it, 2, l2);
    iadd_ctx c = {dst, src, v, dt, n, ld->stride[dim], lsrc->stride[dim]};
    if (may_overlap(ld)) {
        wk__iter_runs(&it, 0, wk__layout_numel(&lod), iadd_run, &c);
    } else {
        foreach_outer(&it, iadd_run, &c, n, WK_PAR_MIN_ELEMS);
    }
    free(v);
    return WK_OK;
}
