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
#include <stddef.h>
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

/* 64-byte aligned scratch (free() releases it): x rows and widened w
 * whose vector loads split no cache lines. */
void *wk__dotmm_alloc(size_t bytes);
/* The block kernel of this CPU's ISA level (wk_cpu_isa). */
wk_dotmm_block_fn wk__dotmm_pick(void);
/* w rows [b, e) against all m rows of x on the calling thread, in blocks
 * (f16 / bf16 blocks widened to a scratch copy when m is large: the same
 * bits). out points at column 0. false = out of memory. */
bool wk__dotmm_range(wk_dotmm_block_fn fn, int64_t m, int64_t k, const float *x, int64_t xs, const void *w,
                     int64_t wrs, wk_dotmm_wtype wt, int64_t b, int64_t e, float *out, int64_t ldo);
/* The whole product at this CPU's ISA level, threads over N. false = out
 * of memory (f16 / bf16 scratch). */
bool wk__dotmm(int64_t m, int64_t n, int64_t k, const float *x, int64_t xs, const void *w, int64_t wrs,
               wk_dotmm_wtype wt, float *out, int64_t ldo);
#endif
