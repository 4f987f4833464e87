/* wk__dotmm (dotmm.h): the ISA level's block kernel over slices of N. */
#include "cpu/gemm/dotmm.h"
#include "cpu/cpu_backend.h"
#include "cpu/runtime/threadpool.h"
#include <string.h>

/* w rows per block: with the 4-row x tile in L1, a block of w stays in L2
 * while every x tile of a prefill passes over it */
#define DOTMM_NB 32

typedef struct {
    wk_dotmm_block_fn fn;
    int64_t m, k, xs, wrs, ldo;
    const float *x;
    const char *w;
    size_t wes; /* bytes per w element */
    wk_dotmm_wtype wt;
    float *out;
} dotmm_ctx;

static void dotmm_slice(void *vc, int64_t b, int64_t e, int tid) {
    (void)tid;
    const dotmm_ctx *c = vc;
    for (int64_t j = b; j < e; j += DOTMM_NB) {
        int64_t nb = e - j < DOTMM_NB ? e - j : DOTMM_NB;
        c->fn(c->k, c->x, c->xs, c->m, c->w + (size_t)j * (size_t)c->wrs * c->wes, c->wrs, nb, c->wt, c->out + j,
              c->ldo);
    }
}

void wk__dotmm(int64_t m, int64_t n, int64_t k, const float *x, int64_t xs, const void *w, int64_t wrs,
               wk_dotmm_wtype wt, float *out, int64_t ldo) {
    const char *isa = wk_cpu_isa();
    wk_dotmm_block_fn fn = strcmp(isa, "avx512") == 0 ? wk__dotmm_block_avx512
                           : strcmp(isa, "avx2") == 0 ? wk__dotmm_block_avx2
                                                      : wk__dotmm_block_generic;
    dotmm_ctx c = {fn, m, k, xs, wrs, ldo, x, w, wt == WK_DOTMM_F32 ? 4 : 2, wt, out};
    /* the same slicing rule as qmatmul's decode region: which thread runs
     * a row never changes its bits, only the speed */
    wk__parallel_for(n, 16, n * k * m >= (1 << 17) ? 0 : INT64_MAX, dotmm_slice, &c);
}
