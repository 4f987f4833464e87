/* wk__dotmm (dotmm.h): the ISA level's block kernel over slices of N. */
#include "cpu/gemm/dotmm.h"
#include "cpu/cpu_backend.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/vmath/vmath.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* w rows per block: with the 4-row x tile in L1, a block of w stays in L2
 * while every x tile of a prefill passes over it */
#define DOTMM_NB 32
/* f16 / bf16 w with this many x rows or more: the block is widened to f32
 * once (exact, so the same bits as widening in registers) and every x tile
 * reads the copy; widening per tile costs the FMA port a convert per 4 FMAs */
#define DOTMM_WIDEN_M 8

void *wk__dotmm_alloc(size_t bytes) {
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

wk_dotmm_block_fn wk__dotmm_pick(void) {
    const char *isa = wk_cpu_isa();
    return strcmp(isa, "avx512") == 0 ? wk__dotmm_block_avx512
           : strcmp(isa, "avx2") == 0 ? wk__dotmm_block_avx2
                                      : wk__dotmm_block_generic;
}

bool wk__dotmm_range(wk_dotmm_block_fn fn, int64_t m, int64_t k, const float *x, int64_t xs, const void *w,
                     int64_t wrs, wk_dotmm_wtype wt, int64_t b, int64_t e, float *out, int64_t ldo) {
    size_t wes = wt == WK_DOTMM_F32 ? 4 : 2;
    float *wf = NULL;
    if (wt != WK_DOTMM_F32 && m >= DOTMM_WIDEN_M && k > 0) {
        wf = wk__dotmm_alloc(sizeof(float) * (size_t)(DOTMM_NB * k));
        if (!wf) return false;
    }
    for (int64_t j = b; j < e; j += DOTMM_NB) {
        int64_t nb = e - j < DOTMM_NB ? e - j : DOTMM_NB;
        const void *wj = (const char *)w + (size_t)j * (size_t)wrs * wes;
        if (wf) {
            const uint16_t *h = wj;
            for (int64_t r = 0; r < nb; r++) {
                if (wt == WK_DOTMM_F16) wk__vcvt_f16_to_f32(wf + r * k, h + r * wrs, k);
                else wk__vcvt_bf16_to_f32(wf + r * k, h + r * wrs, k);
            }
            fn(k, x, xs, m, wf, k, nb, WK_DOTMM_F32, out + j, ldo);
        } else {
            fn(k, x, xs, m, wj, wrs, nb, wt, out + j, ldo);
        }
    }
    free(wf);
    return true;
}

typedef struct {
    wk_dotmm_block_fn fn;
    int64_t m, k, xs, wrs, ldo;
    const float *x;
    const void *w;
    wk_dotmm_wtype wt;
    float *out;
    atomic_bool oom;
} dotmm_ctx;

static void dotmm_slice(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    dotmm_ctx *c = vc;
    if (!wk__dotmm_range(c->fn, c->m, c->k, c->x, c->xs, c->w, c->wrs, c->wt, b, e, c->out, c->ldo))
        atomic_store(&c->oom, true);
}

bool wk__dotmm(int64_t m, int64_t n, int64_t k, const float *x, int64_t xs, const void *w, int64_t wrs,
               wk_dotmm_wtype wt, float *out, int64_t ldo) {
    dotmm_ctx c = {wk__dotmm_pick(), m, k, xs, wrs, ldo, x, w, wt, out, false};
    /* decode slices of 16 rows as qmatmul's; prefill slices whole blocks.
     * Which thread runs a row never changes its bits, only the speed */
    wk__parallel_for(n, m >= DOTMM_WIDEN_M ? DOTMM_NB : 16, n * k * m >= (1 << 17) ? 0 : INT64_MAX, dotmm_slice, &c);
    return !atomic_load(&c.oom);
}
