/* Dot-form products for linear layers: out[i][j] = dot(x_i, w_j) for x (M,
 * K) f32 rows and w (N, K) rows of f32, f16 or bf16, both unit stride along
 * K (issue 24's batch invariance without the decode cost).
 *
 * Why a product of its own: the GEMM sums an element in an order that
 * depends only on k, but packs (and for f16 / bf16 widens) the whole weight
 * every call; decode (M = 1) is memory bound and paid 2.7x (f32) / 4.7x
 * (f16) for it. Here every element is ONE accumulator chain over k in
 * fixed vector chunks (16 lanes AVX-512, 8 lanes AVX2, a plain loop on the
 * portable level), the masked / zero-padded tail last, then one fixed
 * horizontal reduction. A register tile of several x rows and w rows
 * shares the loads but never changes an element's arithmetic, so a row's
 * bits do not depend on M, on the tile it landed in, or on the thread that
 * ran it (threads split N, never K). Bits differ between ISA levels. */
#ifndef WICK_CPU_DOTMM_H
#define WICK_CPU_DOTMM_H
#include <stdbool.h>
#include <stdint.h>

typedef enum { WK_DOTMM_F32 = 0, WK_DOTMM_F16 = 1, WK_DOTMM_BF16 = 2 } wk_dotmm_wtype;

/* One block: all m rows of x against w rows [0, n) (w: wrs elements between
 * rows), out[i * ldo + j]. */
typedef void (*wk_dotmm_block_fn)(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs,
                                  int64_t n, wk_dotmm_wtype wt, float *out, int64_t ldo);
void wk__dotmm_block_generic(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs,
                             int64_t n, wk_dotmm_wtype wt, float *out, int64_t ldo);
void wk__dotmm_block_avx2(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs, int64_t n,
                          wk_dotmm_wtype wt, float *out, int64_t ldo);
void wk__dotmm_block_avx512(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs,
                            int64_t n, wk_dotmm_wtype wt, float *out, int64_t ldo);

/* The whole product at this CPU's ISA level (wk_cpu_isa), threads over N. */
void wk__dotmm(int64_t m, int64_t n, int64_t k, const float *x, int64_t xs, const void *w, int64_t wrs,
               wk_dotmm_wtype wt, float *out, int64_t ldo);
#endif
