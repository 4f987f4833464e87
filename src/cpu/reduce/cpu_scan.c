/* CPU scans (cumsum/cumprod), stable sort and top-k along one dim.
 *
 * A "line" is the 1-D slice along dim; the other dims index the lines. The
 * output is contiguous with src's shape (top-k: shape[dim] = k), so the line
 * at outer index o (dims before dim) and inner index i (dims after) starts at
 * o * m * inner + i and steps by inner.
 *
 * Scans: O(n) per line. Lines sharing an outer index are walked as blocks of
 * inner indices (one accumulator each), so a scan along a leading dim reads
 * rows, not columns. Accumulators: f32/f64 in double, f16/bf16/f8 in float,
 * integers in uint64 (wrapping, then truncated to the dtype). A single long
 * line is cut into fixed chunks (independent of the thread count), whose
 * totals are combined in order, so 1 and N threads give the same bits.
 *
 * Sort and top-k map every element to an unsigned key whose order is the
 * requested order (floats: sign-magnitude flip, -0 == +0, every NaN the
 * largest key; descending: the key complemented), then sort (key, index)
 * pairs stably: LSD radix for long lines (stable by construction), insertion
 * for short ones. Top-k with small k keeps a heap of the k best pairs (O(n
 * log k)); large k sorts the line. Values are copied from the source by
 * index, so they keep their exact bits. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/threadpool.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ line geometry */

typedef struct {
    const char *src;
    wk_dtype dt;
    int64_t es;
    int64_t n, sd;          /* line length and its stride in src */
    int64_t m;              /* output line length */
    int64_t outer, inner;   /* counts of dims before / after dim */
    /* dims before dim and after dim, with src strides */
    int orank, irank;
    int64_t oshape[WK_MAX_RANK], ostride[WK_MAX_RANK];
    int64_t ishape[WK_MAX_RANK], istride[WK_MAX_RANK];
    int64_t offset;
} line_geo;

static void geo_init(line_geo *g, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t m) {
    memset(g, 0, sizeof *g);
    g->src = src;
    g->dt = dt;
    g->es = (int64_t)wk__dtype_elem_bytes(dt);
    g->n = ls->shape[dim];
    g->sd = ls->stride[dim];
    g->m = m;
    g->offset = ls->offset;
    g->outer = 1;
    g->inner = 1;
    for (int i = 0; i < dim; i++) {
        g->oshape[g->orank] = ls->shape[i];
        g->ostride[g->orank++] = ls->stride[i];
        g->outer *= ls->shape[i];
    }
    for (int i = dim + 1; i < ls->rank; i++) {
        g->ishape[g->irank] = ls->shape[i];
        g->istride[g->irank++] = ls->stride[i];
        g->inner *= ls->shape[i];
    }
}

static int64_t outer_off(const line_geo *g, int64_t o) { return g->offset + wk__unravel(g->oshape, g->ostride, g->orank, o); }
static int64_t inner_off(const line_geo *g, int64_t i) { return wk__unravel(g->ishape, g->istride, g->irank, i); }

/* Source element offset of line L (row-major over the non-dim dims). */
static int64_t line_src(const line_geo *g, int64_t L) {
    return outer_off(g, L / g->inner) + inner_off(g, L % g->inner);
}
static int64_t line_dst(const line_geo *g, int64_t L) {
    return (L / g->inner) * g->m * g->inner + L % g->inner;
}

/* ------------------------------------------------------------------- scans */

#define SCAN_BLOCK 256
#define CHUNK_MIN (INT64_C(1) << 20)   /* lines at least this long are chunked */
#define CHUNK (INT64_C(1) << 14)
#define GROUP 4   /* chunks scanned together (independent dependency chains) */

typedef enum { ACC_F64, ACC_F32, ACC_INT } acc_kind;

typedef union {
    double d;
    float f;
    uint64_t u;
} acc_t;

typedef struct {
    line_geo g;
    void *dst;
    bool prod;
    acc_kind kind;
    int64_t nblk;
    /* chunked single lines */
    acc_t *chunk_tot;
    int64_t nchunks, line_s, line_d;
} scan_ctx;

static acc_kind kind_of(wk_dtype dt) {
    if (dt == WK_F32 || dt == WK_F64) return ACC_F64;
    if (wk__is_narrow_float(dt)) return ACC_F32;
    return ACC_INT;
}

static acc_t acc_identity(acc_kind k, bool prod) {
    acc_t a;
    if (k == ACC_F64) a.d = prod ? 1.0 : 0.0;
    else if (k == ACC_F32) a.f = prod ? 1.0f : 0.0f;
    else a.u = prod ? 1 : 0;
    return a;
}

static acc_t acc_combine(acc_kind k, bool prod, acc_t a, acc_t b) {
    if (k == ACC_F64) a.d = prod ? a.d * b.d : a.d + b.d;
    else if (k == ACC_F32) a.f = prod ? a.f * b.f : a.f + b.f;
    else a.u = prod ? a.u * b.u : a.u + b.u;
    return a;
}

/* Scan nb lines in lock-step over j in [j0, j1): line b reads src at
 * soff[b] + j*sd and writes dst at doff + j*dstep + b; acc holds the running
 * values (updated). When write is false only the totals are computed. */
static void scan_lines(const scan_ctx *c, const int64_t *soff, int64_t nb, int64_t j0, int64_t j1, int64_t doff,
                       int64_t dstep, acc_t *acc, bool write) {
    const line_geo *g = &c->g;
    wk_dtype dt = g->dt;
    bool prod = c->prod;
    int64_t sd = g->sd;
    bool unit = true;   /* the block's lines are adjacent in src */
    for (int64_t b = 1; b < nb; b++)
        if (soff[b] != soff[0] + b) { unit = false; break; }
    if (dt == WK_F32 || dt == WK_F64) {
        double a[SCAN_BLOCK];
        for (int64_t b = 0; b < nb; b++) a[b] = acc[b].d;
        if (dt == WK_F32) {
            const float *x = (const float *)(const void *)g->src;
            float *y = c->dst;
            if (nb == 1) {
                double s = a[0];
                const float *p = x + soff[0];
                if (!write) {
                    if (prod) for (int64_t j = j0; j < j1; j++) s *= p[j * sd];
                    else for (int64_t j = j0; j < j1; j++) s += p[j * sd];
                } else if (prod) {
                    for (int64_t j = j0; j < j1; j++) { s *= p[j * sd]; y[doff + j * dstep] = (float)s; }
                } else if (sd == 1 && dstep == 1) {
                    float *q = y + doff;
                    for (int64_t j = j0; j < j1; j++) { s += p[j]; q[j] = (float)s; }
                } else {
                    for (int64_t j = j0; j < j1; j++) { s += p[j * sd]; y[doff + j * dstep] = (float)s; }
                }
                a[0] = s;
            } else {
                for (int64_t j = j0; j < j1; j++) {
                    float *q = y + doff + j * dstep;
                    if (unit) {
                        const float *p = x + soff[0] + j * sd;
                        if (prod) for (int64_t b = 0; b < nb; b++) a[b] *= p[b];
                        else for (int64_t b = 0; b < nb; b++) a[b] += p[b];
                    } else {
                        for (int64_t b = 0; b < nb; b++) {
                            double v = x[soff[b] + j * sd];
                            a[b] = prod ? a[b] * v : a[b] + v;
                        }
                    }
                    if (write) for (int64_t b = 0; b < nb; b++) q[b] = (float)a[b];
                }
            }
        } else {
            const double *x = (const double *)(const void *)g->src;
            double *y = c->dst;
            for (int64_t j = j0; j < j1; j++) {
                for (int64_t b = 0; b < nb; b++) {
                    double v = x[soff[b] + j * sd];
                    a[b] = prod ? a[b] * v : a[b] + v;
                }
                if (write) for (int64_t b = 0; b < nb; b++) y[doff + j * dstep + b] = a[b];
            }
        }
        for (int64_t b = 0; b < nb; b++) acc[b].d = a[b];
    } else if (c->kind == ACC_F32) {
        for (int64_t j = j0; j < j1; j++)
            for (int64_t b = 0; b < nb; b++) {
                float v = wk__narrow_load(g->src, soff[b] + j * sd, dt);
                acc[b].f = prod ? acc[b].f * v : acc[b].f + v;
                if (write) wk__narrow_store(c->dst, doff + j * dstep + b, dt, acc[b].f);
            }
    } else {
        for (int64_t j = j0; j < j1; j++)
            for (int64_t b = 0; b < nb; b++) {
                uint64_t v = (uint64_t)wk__load_i64(g->src, soff[b] + j * sd, dt);
                acc[b].u = prod ? acc[b].u * v : acc[b].u + v;
                if (write) wk__store_i64(c->dst, doff + j * dstep + b, dt, (int64_t)acc[b].u);
            }
    }
}

/* Work item w = (outer index, block of inner indices). */
static void scan_piece(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    const scan_ctx *c = vctx;
    const line_geo *g = &c->g;
    int64_t soff[SCAN_BLOCK];
    acc_t acc[SCAN_BLOCK];
    for (int64_t w = b; w < e; w++) {
        int64_t o = w / c->nblk, i0 = (w % c->nblk) * SCAN_BLOCK;
        int64_t nb = g->inner - i0 < SCAN_BLOCK ? g->inner - i0 : SCAN_BLOCK;
        int64_t ob = outer_off(g, o);
        for (int64_t k = 0; k < nb; k++) {
            soff[k] = ob + inner_off(g, i0 + k);
            acc[k] = acc_identity(c->kind, c->prod);
        }
        scan_lines(c, soff, nb, 0, g->n, o * g->n * g->inner + i0, g->inner, acc, true);
    }
}

/* Chunked long line: pass 1 chunk totals, pass 2 (serial) prefixes, pass 3
 * each chunk rescanned from its prefix. */
static bool fast_f32_line(const scan_ctx *c) { return c->g.dt == WK_F32 && c->g.sd == 1 && c->g.inner == 1; }

static void chunk_total_piece(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    scan_ctx *c = vctx;
    for (int64_t k = b; k < e; k++) {
        int64_t j0 = k * CHUNK, j1 = (k + 1) * CHUNK < c->g.n ? (k + 1) * CHUNK : c->g.n;
        acc_t a = acc_identity(c->kind, c->prod);
        if (fast_f32_line(c)) {
            /* eight independent accumulators, combined in a fixed order */
            const float *x = (const float *)(const void *)c->g.src + c->line_s;
            double t[8];
            for (int q = 0; q < 8; q++) t[q] = c->prod ? 1.0 : 0.0;
            int64_t j = j0;
            if (c->prod)
                for (; j + 8 <= j1; j += 8)
                    for (int q = 0; q < 8; q++) t[q] *= x[j + q];
            else
                for (; j + 8 <= j1; j += 8)
                    for (int q = 0; q < 8; q++) t[q] += x[j + q];
            for (; j < j1; j++) t[0] = c->prod ? t[0] * x[j] : t[0] + x[j];
            double r = t[0];
            for (int q = 1; q < 8; q++) r = c->prod ? r * t[q] : r + t[q];
            a.d = r;
        } else {
            scan_lines(c, &c->line_s, 1, j0, j1, c->line_d, c->g.inner, &a, false);
        }
        c->chunk_tot[k] = a;
    }
}

/* Work item = a group of GROUP consecutive chunks. */
static void chunk_scan_piece(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    scan_ctx *c = vctx;
    int64_t n = c->g.n;
    for (int64_t grp = b; grp < e; grp++) {
        int64_t k0 = grp * GROUP, k1 = k0 + GROUP < c->nchunks ? k0 + GROUP : c->nchunks;
        if (fast_f32_line(c) && k1 - k0 == GROUP && k1 * CHUNK <= n) {
            /* GROUP full chunks interleaved: GROUP chains in flight */
            const float *x = (const float *)(const void *)c->g.src + c->line_s + k0 * CHUNK;
            float *y = (float *)c->dst + c->line_d + k0 * CHUNK;
            double s0 = c->chunk_tot[k0].d, s1 = c->chunk_tot[k0 + 1].d, s2 = c->chunk_tot[k0 + 2].d,
                   s3 = c->chunk_tot[k0 + 3].d;
            if (c->prod) {
                for (int64_t j = 0; j < CHUNK; j++) {
                    s0 *= x[j]; s1 *= x[j + CHUNK]; s2 *= x[j + 2 * CHUNK]; s3 *= x[j + 3 * CHUNK];
                    y[j] = (float)s0; y[j + CHUNK] = (float)s1; y[j + 2 * CHUNK] = (float)s2; y[j + 3 * CHUNK] = (float)s3;
                }
            } else {
                for (int64_t j = 0; j < CHUNK; j++) {
                    s0 += x[j]; s1 += x[j + CHUNK]; s2 += x[j + 2 * CHUNK]; s3 += x[j + 3 * CHUNK];
                    y[j] = (float)s0; y[j + CHUNK] = (float)s1; y[j + 2 * CHUNK] = (float)s2; y[j + 3 * CHUNK] = (float)s3;
                }
            }
            continue;
        }
        for (int64_t k = k0; k < k1; k++) {
            int64_t j1 = (k + 1) * CHUNK < n ? (k + 1) * CHUNK : n;
            acc_t a = c->chunk_tot[k];   /* holds the prefix before chunk k */
            scan_lines(c, &c->line_s, 1, k * CHUNK, j1, c->line_d, c->g.inner, &a, true);
        }
    }
}

wk_status wk__cpu_scan(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, int dim, bool prod) {
    (void)dev;
    scan_ctx c;
    memset(&c, 0, sizeof c);
    geo_init(&c.g, src, ls, dt, dim, ls->shape[dim]);
    c.dst = dst;
    c.prod = prod;
    c.kind = kind_of(dt);
    const line_geo *g = &c.g;
    if (g->n == 0 || g->outer == 0 || g->inner == 0) return WK_OK;
    int64_t nlines = g->outer * g->inner;
    if (g->n >= CHUNK_MIN && nlines < 64) {
        c.nchunks = (g->n + CHUNK - 1) / CHUNK;
        c.chunk_tot = malloc(sizeof(acc_t) * (size_t)c.nchunks);
        if (!c.chunk_tot) return wk__err(WK_ERR_OOM, "scan", "cannot allocate %lld chunk totals", (long long)c.nchunks);
        for (int64_t L = 0; L < nlines; L++) {
            c.line_s = line_src(g, L);
            c.line_d = line_dst(g, L);
            wk__parallel_for(c.nchunks, 1, 0, chunk_total_piece, &c);
            acc_t run = acc_identity(c.kind, prod);
            for (int64_t k = 0; k < c.nchunks; k++) {
                acc_t t = c.chunk_tot[k];
                c.chunk_tot[k] = run;
                run = acc_combine(c.kind, prod, run, t);
            }
            wk__parallel_for((c.nchunks + GROUP - 1) / GROUP, 1, 0, chunk_scan_piece, &c);
        }
        free(c.chunk_tot);
        return WK_OK;
    }
    c.nblk = (g->inner + SCAN_BLOCK - 1) / SCAN_BLOCK;
    int64_t items = g->outer * c.nblk;
    int64_t per = g->n * (g->inner < SCAN_BLOCK ? g->inner : SCAN_BLOCK);
    wk__parallel_for(items, 1, WK_PAR_MIN_ELEMS / (per > 0 ? per : 1) + 1, scan_piece, &c);
    return WK_OK;
}

/* -------------------------------------------------------------- sort keys */

static int key_bytes(wk_dtype dt) {
    switch (dt) {
    case WK_U8: case WK_F8E4M3: return 1;
    case WK_I16: case WK_F16: case WK_BF16: return 2;
    case WK_U32: case WK_I32: case WK_F32: return 4;
    default: return 8;
    }
}

/* Ascending-order key of element i (see the top of the file). */
static inline uint64_t elem_key(const void *p, int64_t i, wk_dtype dt) {
    switch (dt) {
    case WK_U8: return ((const uint8_t *)p)[i];
    case WK_U32: return ((const uint32_t *)p)[i];
    case WK_I16: return (uint16_t)((uint16_t)((const int16_t *)p)[i] ^ 0x8000u);
    case WK_I32: return (uint32_t)((uint32_t)((const int32_t *)p)[i] ^ 0x80000000u);
    case WK_I64: return (uint64_t)((const int64_t *)p)[i] ^ (UINT64_C(1) << 63);
    case WK_F32: {
        float f = ((const float *)p)[i];
        if (f != f) return UINT32_MAX;
        if (f == 0) f = 0;   /* -0 sorts with +0 */
        uint32_t u;
        memcpy(&u, &f, 4);
        return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    }
    case WK_F64: {
        double f = ((const double *)p)[i];
        if (f != f) return UINT64_MAX;
        if (f == 0) f = 0;
        uint64_t u;
        memcpy(&u, &f, 8);
        return (u >> 63) ? ~u : (u | (UINT64_C(1) << 63));
    }
    case WK_F16: case WK_BF16: {
        uint16_t u = ((const uint16_t *)p)[i];
        float f = wk__narrow_load(p, i, dt);
        if (f != f) return UINT16_MAX;
        if (f == 0) u = 0;
        return (u & 0x8000u) ? (uint16_t)~u : (uint16_t)(u | 0x8000u);
    }
    default: { /* f8e4m3 */
        uint8_t u = ((const uint8_t *)p)[i];
        if ((u & 0x7F) == 0x7F) return UINT8_MAX;
        if ((u & 0x7F) == 0) u = 0;
        return (u & 0x80u) ? (uint8_t)~u : (uint8_t)(u | 0x80u);
    }
    }
}

/* Branch-free (vectorizable) f32 key from the bits. */
static inline uint32_t key_f32_bits(uint32_t u) {
    u = u == 0x80000000u ? 0 : u;   /* -0 sorts with +0 */
    uint32_t r = u ^ ((uint32_t)(-(int32_t)(u >> 31)) | 0x80000000u);
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? UINT32_MAX : r;   /* every NaN last */
}
static inline uint32_t key_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return key_f32_bits(u);
}

/* Keys of one line (complemented within the key width when descending). */
static void line_keys(const line_geo *g, int64_t soff, bool desc, uint64_t *key) {
    int kb = key_bytes(g->dt);
    uint64_t mask = kb == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * kb)) - 1;
    uint64_t flip = desc ? mask : 0;
    const char *p = g->src;
    int64_t sd = g->sd, n = g->n;
    if (g->dt == WK_F32) {
        const float *x = (const float *)(const void *)p + soff;
        uint32_t fl = (uint32_t)flip;
        if (sd == 1)
            for (int64_t j = 0; j < n; j++) key[j] = key_f32(x[j]) ^ fl;
        else
            for (int64_t j = 0; j < n; j++) key[j] = key_f32(x[j * sd]) ^ fl;
        return;
    }
    for (int64_t j = 0; j < n; j++) key[j] = elem_key(p, soff + j * sd, g->dt) ^ flip;
}

static void insertion_pairs(uint64_t *key, int64_t *idx, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        uint64_t k = key[i];
        int64_t x = idx[i], j = i;
        while (j > 0 && key[j - 1] > k) { key[j] = key[j - 1]; idx[j] = idx[j - 1]; j--; }
        key[j] = k;
        idx[j] = x;
    }
}

/* Bottom-up merge sort (stable: the left run wins ties), for mid-sized
 * lines where radix histograms cost more than comparisons. */
static void merge_pairs(uint64_t *key, int64_t *idx, int64_t n, uint64_t *tk, int64_t *ti) {
    const int64_t run = 16;
    for (int64_t b = 0; b < n; b += run) insertion_pairs(key + b, idx + b, n - b < run ? n - b : run);
    uint64_t *ka = key, *kb = tk;
    int64_t *ia = idx, *ib = ti;
    for (int64_t w = run; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                if (ka[j] < ka[i]) { kb[o] = ka[j]; ib[o++] = ia[j++]; }
                else { kb[o] = ka[i]; ib[o++] = ia[i++]; }
            }
            while (i < mid) { kb[o] = ka[i]; ib[o++] = ia[i++]; }
            while (j < hi) { kb[o] = ka[j]; ib[o++] = ia[j++]; }
        }
        uint64_t *t1 = ka; ka = kb; kb = t1;
        int64_t *t2 = ia; ia = ib; ib = t2;
    }
    if (ka != key) {
        memcpy(key, ka, sizeof *key * (size_t)n);
        memcpy(idx, ia, sizeof *idx * (size_t)n);
    }
}

/* Stable sort of (key, idx) pairs, n of them, keys of kb bytes. tk/ti are
 * scratch of n entries. Result in key/idx. */
static void sort_pairs(uint64_t *key, int64_t *idx, int64_t n, int kb, uint64_t *tk, int64_t *ti) {
    if (n <= 32) { insertion_pairs(key, idx, n); return; }
    if (n <= 64 * kb) { merge_pairs(key, idx, n, tk, ti); return; }
    uint64_t *ka = key, *kb2 = tk;
    int64_t *ia = idx, *ib = ti;
    int64_t cnt[256];
    for (int pass = 0; pass < kb; pass++) {
        int sh = 8 * pass;
        memset(cnt, 0, sizeof cnt);
        for (int64_t i = 0; i < n; i++) cnt[(ka[i] >> sh) & 0xFF]++;
        if (cnt[(ka[0] >> sh) & 0xFF] == n) continue;   /* every key has this digit */
        int64_t s = 0;
        for (int d = 0; d < 256; d++) { int64_t c = cnt[d]; cnt[d] = s; s += c; }
        for (int64_t i = 0; i < n; i++) {
            int64_t pos = cnt[(ka[i] >> sh) & 0xFF]++;
            kb2[pos] = ka[i];
            ib[pos] = ia[i];
        }
        uint64_t *t1 = ka; ka = kb2; kb2 = t1;
        int64_t *t2 = ia; ia = ib; ib = t2;
    }
    if (ka != key) {
        memcpy(key, ka, sizeof *key * (size_t)n);
        memcpy(idx, ia, sizeof *idx * (size_t)n);
    }
}

typedef struct {
    line_geo g;
    bool desc;
    int64_t k;        /* top-k: how many; sort: n */
    void *values;
    int64_t *indices;
    atomic_bool oom;
} order_ctx;

static void emit(const order_ctx *c, int64_t L, int64_t soff, const int64_t *idx, int64_t cnt) {
    const line_geo *g = &c->g;
    int64_t d0 = line_dst(g, L), ds = g->inner;
    if (c->indices)
        for (int64_t j = 0; j < cnt; j++) c->indices[d0 + j * ds] = idx[j];
    if (c->values) {
        char *v = c->values;
        const char *s = g->src;
        size_t es = (size_t)g->es;
        if (es == 4)
            for (int64_t j = 0; j < cnt; j++)
                memcpy(v + (d0 + j * ds) * 4, s + (soff + idx[j] * g->sd) * 4, 4);
        else
            for (int64_t j = 0; j < cnt; j++)
                memcpy(v + (d0 + j * ds) * (int64_t)es, s + (soff + idx[j] * g->sd) * (int64_t)es, es);
    }
}

static void sort_piece(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    order_ctx *c = vctx;
    const line_geo *g = &c->g;
    int64_t n = g->n;
    size_t bytes = (size_t)n * 2 * (sizeof(uint64_t) + sizeof(int64_t));
    char *buf = malloc(bytes ? bytes : 1);
    if (!buf) { atomic_store(&c->oom, true); return; }
    uint64_t *key = (uint64_t *)(void *)buf, *tk = key + n;
    int64_t *idx = (int64_t *)(void *)(tk + n), *ti = idx + n;
    int kb = key_bytes(g->dt);
    for (int64_t L = b; L < e; L++) {
        int64_t soff = line_src(g, L);
        line_keys(g, soff, c->desc, key);
        for (int64_t j = 0; j < n; j++) idx[j] = j;
        sort_pairs(key, idx, n, kb, tk, ti);
        emit(c, L, soff, idx, n);
    }
    free(buf);
}

wk_status wk__cpu_sort(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, bool descending,
                       void *values, void *indices) {
    (void)dev;
    order_ctx *c = malloc(sizeof *c);
    if (!c) return wk__err(WK_ERR_OOM, "sort", "cannot allocate sort state");
    geo_init(&c->g, src, ls, dt, dim, ls->shape[dim]);
    c->desc = descending;
    c->k = c->g.n;
    c->values = values;
    c->indices = indices;
    atomic_init(&c->oom, false);
    int64_t nlines = c->g.outer * c->g.inner;
    if (c->g.n > 0 && nlines > 0)
        wk__parallel_for(nlines, 1, WK_PAR_MIN_ELEMS / (c->g.n * 8) + 1, sort_piece, c);
    bool oom = atomic_load(&c->oom);
    free(c);
    if (oom) return wk__err(WK_ERR_OOM, "sort", "cannot allocate sort scratch");
    return WK_OK;
}

/* ------------------------------------------------------------------- top-k */

/* Max-heap on (key, idx): the root is the worst of the kept pairs. */
static inline bool pair_gt(uint64_t ka, int64_t ia, uint64_t kb, int64_t ib) { return ka > kb || (ka == kb && ia > ib); }

static void sift_down(uint64_t *hk, int64_t *hi, int64_t n, int64_t i) {
    uint64_t k = hk[i];
    int64_t x = hi[i];
    for (;;) {
        int64_t l = 2 * i + 1;
        if (l >= n) break;
        int64_t r = l + 1, m = l;
        if (r < n && pair_gt(hk[r], hi[r], hk[l], hi[l])) m = r;
        if (!pair_gt(hk[m], hi[m], k, x)) break;
        hk[i] = hk[m];
        hi[i] = hi[m];
        i = m;
    }
    hk[i] = k;
    hi[i] = x;
}

/* Heap of the k best (key, index) pairs -> ascending order, in place. */
static void heap_finish(uint64_t *hk, int64_t *hi, int64_t k) {
    for (int64_t m = k - 1; m > 0; m--) {
        uint64_t tkey = hk[0];
        int64_t tidx = hi[0];
        hk[0] = hk[m];
        hi[0] = hi[m];
        hk[m] = tkey;
        hi[m] = tidx;
        sift_down(hk, hi, m, 0);
    }
}

/* Offer pair (kj, j) to a heap whose indices are all below j: it enters only
 * when strictly better than the root (a tie loses: its index is higher). */
#define HEAP_OFFER(hk, hi, k, top, kj, j)            \
    do {                                             \
        if ((kj) < (top)) {                          \
            (hk)[0] = (kj);                          \
            (hi)[0] = (j);                           \
            sift_down((hk), (hi), (k), 0);           \
            (top) = (hk)[0];                         \
        }                                            \
    } while (0)

#define TOPK_LANES 16

static void topk_piece(void *vctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    order_ctx *c = vctx;
    const line_geo *g = &c->g;
    int64_t n = g->n, k = c->k, sd = g->sd;
    bool heap = k * 16 <= n;
    bool f32 = g->dt == WK_F32;
    /* the f32 heap path computes keys on the fly: no key array */
    int64_t nkeys = heap && f32 ? 0 : n;
    size_t bytes = heap ? (size_t)nkeys * sizeof(uint64_t) + (size_t)k * TOPK_LANES * (sizeof(uint64_t) + sizeof(int64_t))
                        : (size_t)n * 2 * (sizeof(uint64_t) + sizeof(int64_t));
    char *buf = malloc(bytes ? bytes : 1);
    if (!buf) { atomic_store(&c->oom, true); return; }
    int kb = key_bytes(g->dt);
    bool desc = c->desc;   /* largest: descending keys */
    uint64_t *key = (uint64_t *)(void *)buf;
    for (int64_t L = b; L < e;) {
        int64_t soff = line_src(g, L);
        if (!heap) {
            uint64_t *tk = key + n;
            int64_t *idx = (int64_t *)(void *)(tk + n), *ti = idx + n;
            line_keys(g, soff, desc, key);
            for (int64_t j = 0; j < n; j++) idx[j] = j;
            sort_pairs(key, idx, n, kb, tk, ti);
            emit(c, L, soff, idx, k);
            L++;
            continue;
        }
        uint64_t *hk = key + nkeys;
        int64_t *hi = (int64_t *)(void *)(hk + k * TOPK_LANES);
        if (f32) {
            /* up to TOPK_LANES lines of one outer index walked row by row,
             * so a top-k along a leading dim reads memory once */
            int64_t nb = g->inner - L % g->inner;
            if (nb > e - L) nb = e - L;
            if (nb > TOPK_LANES) nb = TOPK_LANES;
            const float *x = (const float *)(const void *)g->src;
            uint32_t fl = desc ? UINT32_MAX : 0;
            int64_t so[TOPK_LANES];
            uint64_t top[TOPK_LANES];
            for (int64_t q = 0; q < nb; q++) {
                so[q] = q ? line_src(g, L + q) : soff;
                uint64_t *qk = hk + q * k;
                int64_t *qi = hi + q * k;
                for (int64_t j = 0; j < k; j++) { qk[j] = key_f32(x[so[q] + j * sd]) ^ fl; qi[j] = j; }
                for (int64_t j = k / 2 - 1; j >= 0; j--) sift_down(qk, qi, k, j);
                top[q] = qk[0];
            }
            bool adjacent = true;
            for (int64_t q = 1; q < nb; q++) adjacent = adjacent && so[q] == so[0] + q;
            int64_t j = k;
            if (nb == 1 && sd == 1) {
                /* blocks of 16 keys; the heap is visited only when one beats the root */
                const float *p = x + so[0];
                for (; j + 16 <= n; j += 16) {
                    uint32_t kk[16], mn = UINT32_MAX;
                    for (int q = 0; q < 16; q++) {
                        uint32_t u;
                        memcpy(&u, p + j + q, 4);
                        kk[q] = key_f32_bits(u) ^ fl;
                        mn = kk[q] < mn ? kk[q] : mn;
                    }
                    if (mn < top[0])
                        for (int q = 0; q < 16; q++) HEAP_OFFER(hk, hi, k, top[0], (uint64_t)kk[q], j + q);
                }
                for (; j < n; j++) {
                    uint64_t kj = key_f32(p[j]) ^ fl;
                    HEAP_OFFER(hk, hi, k, top[0], kj, j);
                }
            } else if (adjacent) {
                /* the lanes are one contiguous run of each row */
                uint32_t tp[TOPK_LANES];
                for (int64_t q = 0; q < nb; q++) tp[q] = (uint32_t)top[q];
                for (; j < n; j++) {
                    const float *row = x + so[0] + j * sd;
                    uint32_t kk[TOPK_LANES];
                    int hit = 0;
                    for (int64_t q = 0; q < nb; q++) {
                        uint32_t u;
                        memcpy(&u, row + q, 4);
                        kk[q] = key_f32_bits(u) ^ fl;
                        hit |= kk[q] < tp[q];
                    }
                    if (hit)
                        for (int64_t q = 0; q < nb; q++) {
                            HEAP_OFFER(hk + q * k, hi + q * k, k, top[q], (uint64_t)kk[q], j);
                            tp[q] = (uint32_t)top[q];
                        }
                }
            } else {
                for (; j < n; j++)
                    for (int64_t q = 0; q < nb; q++) {
                        uint64_t kj = key_f32(x[so[q] + j * sd]) ^ fl;
                        HEAP_OFFER(hk + q * k, hi + q * k, k, top[q], kj, j);
                    }
            }
            for (int64_t q = 0; q < nb; q++) {
                heap_finish(hk + q * k, hi + q * k, k);
                emit(c, L + q, so[q], hi + q * k, k);
            }
            L += nb;
            continue;
        }
        line_keys(g, soff, desc, key);
        for (int64_t j = 0; j < k; j++) { hk[j] = key[j]; hi[j] = j; }
        for (int64_t j = k / 2 - 1; j >= 0; j--) sift_down(hk, hi, k, j);
        uint64_t t0 = hk[0];
        for (int64_t j = k; j < n; j++) HEAP_OFFER(hk, hi, k, t0, key[j], j);
        heap_finish(hk, hi, k);
        emit(c, L, soff, hi, k);
        L++;
    }
    free(buf);
}

wk_status wk__cpu_topk(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t k,
                       bool largest, void *values, void *indices) {
    (void)dev;
    order_ctx *c = malloc(sizeof *c);
    if (!c) return wk__err(WK_ERR_OOM, "topk", "cannot allocate top-k state");
    geo_init(&c->g, src, ls, dt, dim, k);
    c->desc = largest;
    c->k = k;
    c->values = values;
    c->indices = indices;
    atomic_init(&c->oom, false);
    int64_t nlines = c->g.outer * c->g.inner;
    if (k > 0 && nlines > 0)
        wk__parallel_for(nlines, 1, WK_PAR_MIN_ELEMS / (c->g.n * 4) + 1, topk_piece, c);
    bool oom = atomic_load(&c->oom);
    free(c);
    if (oom) return wk__err(WK_ERR_OOM, "topk", "cannot allocate top-k scratch");
    return WK_OK;
}
