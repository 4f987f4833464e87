/* The one GEMM loop nest (contract in gemm.h): blocking, packing order and
 * threading for every operand type, with the type's packers and
 * micro-kernel called through its wk_gemm_ukr. Compiled for the baseline
 * target: nothing here is a hot inner loop (the micro-kernel runs kc
 * k steps per call, the packers a whole strip), so the indirect calls cost
 * nothing measurable and every ISA shares this code.
 *
 * KC / MC / NC come from the cache sizes (cpu_cache.c) unless the type
 * fixes them. k is cut into equal slices, so every C element is summed in
 * an order that depends only on k: results are identical for any thread
 * count. */
#include "cpu/memory/cpu_alloc.h"
#include "cpu/memory/cpu_cache.h"
#include "cpu/gemm/gemm.h"
#include "cpu/runtime/threadpool.h"

#include <stdatomic.h>
#include <string.h>

typedef struct {
    const wk_gemm_ukr *u;
    const wk_gemm_args *g;
    char *bp;                   /* packed B panel for the current (jc, pc) */
    int64_t jc, nc, pc, kc;
    int64_t mcb;                /* rows of A per packed block */
    size_t astrip, bstrip;      /* bytes of one packed A / B strip at this kc */
    bool direct_b;              /* try b_direct for full strips (short M) */
    bool jit_b;                 /* pack each strip just before its use, per thread */
    atomic_bool oom;            /* a piece could not get its A buffer */
} loop_ctx;

static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Rows [i0, i1) x NR-strips [s0, s1) of C for the current B panel, packing
 * A blocks into ap (room for min(mcb, i1 - i0) rows, rounded up to MR). */
static void block(loop_ctx *x, int64_t i0, int64_t i1, int64_t s0, int64_t s1, char *ap, char *bj) {
    const wk_gemm_ukr *u = x->u;
    const wk_gemm_args *g = x->g;
    const int64_t MR = u->mr, NR = u->nr, csz = u->c_size;
    const bool first = x->pc == 0;
    for (int64_t ic = i0; ic < i1; ic += x->mcb) {
        int64_t mc = min64(i1 - ic, x->mcb);
        for (int64_t ir = 0; ir < mc; ir += MR)
            u->pack_a(g, ic + ir, min64(mc - ir, MR), x->pc, x->kc, ap + (size_t)(ir / MR) * x->astrip);
        for (int64_t jr = s0 * NR; jr < x->nc && jr < s1 * NR; jr += NR) {
            int64_t nr = min64(x->nc - jr, NR);
            const void *bs = NULL;
            int64_t ldb = u->b_packed_ld;
            if (x->jit_b) {
                u->pack_b(g, x->jc + jr, nr, x->pc, x->kc, bj);
                bs = bj;
            } else if (x->direct_b && nr == NR) {
                bs = u->b_direct(g, x->jc + jr, x->pc, &ldb);
                if (!bs) ldb = u->b_packed_ld;
            }
            if (!bs) bs = x->bp + (size_t)(jr / NR) * x->bstrip;
            for (int64_t ir = 0; ir < mc; ir += MR) {
                char *c = (char *)g->c + ((ic + ir) * g->n + x->jc + jr) * csz;
                u->micro(x->kc, ap + (size_t)(ir / MR) * x->astrip, bs, ldb, c, g->n, min64(mc - ir, MR), nr,
                         first);
            }
        }
    }
}

/* One thread's piece with its own A buffer, and its own B strip when strips
 * are packed just in time (from wick's buffer cache, so repeated products
 * do not fault fresh pages in). The strip starts on a cache line: a
 * misaligned one splits every vector load of the micro-kernel in two. */
static void piece(loop_ctx *x, int64_t i0, int64_t i1, int64_t s0, int64_t s1) {
    int64_t strips = ceil_div(min64(i1 - i0, x->mcb), x->u->mr);
    size_t abytes = (x->astrip * (size_t)strips + 63) / 64 * 64;
    size_t bytes = abytes + (x->jit_b ? x->bstrip : 0);
    char *ap = wk__cpu_alloc(bytes);
    if (!ap) {
        atomic_store(&x->oom, true);
        return;
    }
    block(x, i0, i1, s0, s1, ap, ap + abytes);
    wk__cpu_free(ap, bytes);
}

/* Thread pieces: a range of rows (all strips), or a range of strips (all
 * rows; each thread packs the few rows of A itself) when M is short. */
static void rows_piece(void *vctx, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    loop_ctx *x = vctx;
    piece(x, i0, i1, 0, ceil_div(x->nc, x->u->nr));
}
static void cols_piece(void *vctx, int64_t s0, int64_t s1, int tid) {
    (void)tid;
    loop_ctx *x = vctx;
    piece(x, 0, x->g->m, s0, s1);
}

/* Pack NR-column strips [s0, s1) of the current B panel. */
static void pack_b_strips(void *vctx, int64_t s0, int64_t s1, int tid) {
    (void)tid;
    loop_ctx *x = vctx;
    const int64_t NR = x->u->nr;
    for (int64_t s = s0; s < s1; s++) {
        int64_t jr = s * NR;
        x->u->pack_b(x->g, x->jc + jr, min64(x->nc - jr, NR), x->pc, x->kc, x->bp + (size_t)s * x->bstrip);
    }
}

/* Equal slices of len no longer than cap, rounded up to a multiple of q:
 * a k of 400 with KC 384 becomes 2 x 200, not 384 + 16. */
static int64_t even_slices(int64_t len, int64_t cap, int64_t q) {
    if (cap < q) cap = q;
    int64_t parts = ceil_div(len, cap);
    if (parts < 1) parts = 1;
    int64_t s = ceil_div(ceil_div(len, parts), q) * q;
    return s < q ? q : s;
}

bool wk__gemm_run(const wk_gemm_ukr *u, const wk_gemm_args *g) {
    const int64_t m = g->m, n = g->n, k = g->k, MR = u->mr, NR = u->nr, kq = u->kq;
    if (m <= 0 || n <= 0) return true;
    if (k <= 0) {
        memset(g->c, 0, (size_t)(m * n) * (size_t)u->c_size);
        return true;
    }
    /* blocking from the caches, sized by the bytes a packed k value takes */
    int64_t KC, MC, NC;
    int64_t esize = ceil_div(u->b_unit, kq);
    wk__gemm_blocking(MR, NR, esize < 1 ? 1 : esize, &KC, &MC, &NC);
    if (u->kc) KC = u->kc;
    if (u->mc) MC = u->mc;
    if (u->nc) NC = u->nc;
    /* KC a multiple of kq and of 8 (packed strips stay 32-byte aligned) */
    int64_t kround = kq;
    while (kround % 8) kround += kq;
    KC = even_slices(k, KC, kround);
    NC = even_slices(n, NC, NR);
    MC = even_slices(m, MC, MR);
    /* How B reaches the micro-kernel (measured on Zen 4, 1 thread, f32,
     * M x 4096 x 4096; the packed values are the same every way, so the
     * choice never changes a result):
     *  - in place (b_direct) when each strip feeds few row strips (the
     *    type's direct_b_max_m: two on AVX2) or all of B fits in half the
     *    L2: packing would cost as much as the arithmetic (AVX2 M = 8:
     *    33 GFLOP/s in place, 29 packed per strip, 21 as a panel). Not
     *    beyond: B rows a power of two apart fall in a few L1 / L2 sets,
     *    so a strip read in place is fetched again from L3 by every row
     *    strip (AVX2 M = 32: 45-60 in place, by where the pages land, 65
     *    packed per strip);
     *  - packed per strip, just before its row strips use it, into the
     *    thread's own L1-sized buffer, when A fits one MC block (each strip
     *    is packed once per slice) and threads split the strips (none packs
     *    another's): AVX2 M = 32 / 128: 65 / 92 vs 54 / 85 as a panel,
     *    AVX-512 66 / 91 vs 63 / 86;
     *  - else the whole panel up front, threads splitting the strips
     *    (squares: AVX2 1024^3 109 vs 106 packed per strip). */
    loop_ctx x = {.u = u, .g = g, .mcb = MC};
    int64_t bbytes_all = ceil_div(k, kq) * n * u->b_unit;
    int64_t strips_max = ceil_div(min64(n, NC), NR);
    x.direct_b = u->b_direct && (m <= u->direct_b_max_m || bbytes_all <= wk__cpu_caches()->l2 / 2);
    x.jit_b = !x.direct_b && m <= MC && ceil_div(m, MR) < strips_max;
    /* the panel buffer (not needed when each thread packs its own strips),
     * sized to this product, not to the block maxima */
    size_t bbytes = x.jit_b ? 0 : (size_t)(NR * ceil_div(min64(k, KC), kq) * u->b_unit) * (size_t)strips_max;
    if (bbytes) {
        x.bp = wk__cpu_alloc(bbytes);
        if (!x.bp) return false;
    }
    atomic_init(&x.oom, false);
    for (int64_t jc = 0; jc < n && !atomic_load(&x.oom); jc += NC) {
        int64_t nc = min64(n - jc, NC);
        for (int64_t pc = 0; pc < k && !atomic_load(&x.oom); pc += KC) {
            int64_t kc = min64(k - pc, KC);
            x.jc = jc; x.nc = nc; x.pc = pc; x.kc = kc;
            x.astrip = (size_t)(MR * ceil_div(kc, kq) * u->a_unit);
            x.bstrip = (size_t)(NR * ceil_div(kc, kq) * u->b_unit);
            int64_t strips = ceil_div(nc, NR);
            if (x.direct_b) {
                /* strips the type reads in place are not packed at all */
                for (int64_t s = 0; s < strips; s++) {
                    int64_t ld;
                    if (s * NR + NR > nc || !u->b_direct(g, jc + s * NR, pc, &ld)) pack_b_strips(&x, s, s + 1, 0);
                }
            } else if (!x.jit_b) {
                /* split across threads: with a small M this copy rivals the FLOPs */
                wk__parallel_for(strips, 1, kc * nc >= (1 << 16) ? 0 : INT64_MAX, pack_b_strips, &x);
            }
            /* threads only when the slice is worth waking a core for (~1M MACs) */
            int64_t work = m * nc * kc, serial = work >= (1 << 20) ? 0 : INT64_MAX;
            if (ceil_div(m, MR) >= strips)
                wk__parallel_for(m, MR, serial, rows_piece, &x);
            else
                wk__parallel_for(strips, 1, serial, cols_piece, &x);
        }
    }
    wk__cpu_free(x.bp, bbytes);
    return !atomic_load(&x.oom);
}
