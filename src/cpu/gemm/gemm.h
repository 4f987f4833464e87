/* wick's GEMM: one loop nest (gemm_loop.c) for every operand type, driven
 * by a per-type pack + micro-kernel pair (wk_gemm_ukr, BLIS's "context"),
 * and the per-ISA f32 / f64 entry points built on it (gemm_kernel.inc).
 * C = A @ B with C contiguous (row stride n); A, B read through element
 * strides. false = out of memory. */
#ifndef WICK_CPU_GEMM_H
#define WICK_CPU_GEMM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------
 * The loop nest and the contract a type's kernels follow.
 *
 * wk__gemm_run(u, g) computes C[m x n] = A[m x k] @ B[k x n] in BLIS's
 * loop order:
 *   for jc: NC-column panels of B
 *     for pc: KC-deep slices of k (k cut into equal slices, multiples of kq)
 *       each NR-column strip of the panel is read in place (u->b_direct,
 *         very short M), or packed by u->pack_b: all strips up front into
 *         the shared panel buffer (threads split them), or, when A fits
 *         one MC block and threads split the strips, each strip just
 *         before its use into the thread's own L1-sized buffer
 *       threads take row ranges, or strip ranges when M is short; each:
 *         for ic: MC-row blocks: u->pack_a each MR-row strip into its own
 *           buffer, then for each B strip x A strip: u->micro, which stores
 *           (first slice, pc == 0) or adds to an MR x NR tile of C.
 * Every C element is the sum of its k slices in slice order, each slice
 * summed by the micro-kernel in k order: the result depends on k (and the
 * type's kc), never on the thread count or which thread ran a tile.
 *
 * Packed layouts are the type's own; the loop nest only sizes them: a
 * packed A strip is mr * ceil(kc / kq) units of a_unit bytes, a packed B
 * strip nr * ceil(kc / kq) units of b_unit bytes (a "unit" is kq
 * consecutive k values of one row of A / one column of B). kc is a
 * multiple of kq on every slice but the last, which may be short (odd k on
 * a pair type); packers zero-pad it and the rows / columns past the edge
 * of A / B, and the micro-kernel never writes C outside [mr x nr].
 *
 * Plugging in a quantized weight type (y = x . W^T, W an N x K block
 * matrix, x f32 / f16 / bf16 M x K; the wk_matmul B is W^T):
 *  - kq = the block's k span (32 for Q4_0 / Q8_0, 256 for the K types),
 *    kc a multiple of it; k must be a multiple of kq (the caller checks).
 *  - A: quantize each activation row once to the 8-bit partner block
 *    (Q8_0 / Q8_1 / Q8_K) before wk__gemm_run, pass those rows as g->a
 *    (ars = bytes per quantized row, acs unused) and let pack_a interleave
 *    MR rows' blocks for one slice (a_unit = bytes of one partner block);
 *    or quantize inside pack_a (then it runs again for every column
 *    panel, k slice and thread).
 *  - B: W's rows are B's columns. pack_b may repack NR rows of W into an
 *    interleaved strip (b_unit = bytes of one weight block), or b_direct
 *    may return W itself (row j0's block p0 / kq, *ldb = W's row stride in
 *    bytes) when the micro-kernel reads NR weight rows in place
 *    (direct_b_max_m = INT64_MAX: always); weights repacked once at load
 *    come in the same way, through g->b.
 *  - micro: integer dot products of the A strip's and the B strip's blocks,
 *    scaled per block pair, summed into an f32 MR x NR tile in block order,
 *    stored to C (c_size 4) on the first slice and added on later ones.
 *  - g->extra carries anything else the type needs (a table, W's layout).
 * ------------------------------------------------------------------------ */
typedef struct wk_gemm_args {
    int64_t m, n, k;
    /* A[i][p] at a + i*ars + p*acs, B[p][j] at b + p*brs + j*bcs, counted
     * in elements for the float types; only the type's packers read these,
     * so a block type gives them its own meaning (bytes per row, say) */
    const void *a; int64_t ars, acs;
    const void *b; int64_t brs, bcs;
    void *c;                         /* m x n, contiguous, c_size-byte elements */
    const void *extra;               /* type-specific extras; NULL for the float types */
} wk_gemm_args;

/* One MR-row strip of A: rows [i0, i0 + mr) (mr <= MR, rows past mr zero),
 * k values [p0, p0 + kc), packed into dst. */
typedef void (*wk_gemm_pack_a_fn)(const wk_gemm_args *g, int64_t i0, int64_t mr, int64_t p0, int64_t kc, void *dst);
/* One NR-column strip of B: columns [j0, j0 + nr) (nr <= NR, columns past nr
 * zero), k values [p0, p0 + kc), packed into dst. */
typedef void (*wk_gemm_pack_b_fn)(const wk_gemm_args *g, int64_t j0, int64_t nr, int64_t p0, int64_t kc, void *dst);
/* A full strip (NR columns from j0, k from p0) read where it lies, or NULL
 * to pack it; *ldb is passed on to the micro-kernel. */
typedef const void *(*wk_gemm_b_direct_fn)(const wk_gemm_args *g, int64_t j0, int64_t p0, int64_t *ldb);
/* C[mr x nr] (row stride ldc elements) = (first) or += A strip x B strip
 * over kc k values; bp is a packed strip (ldb = b_packed_ld) or a direct
 * one (ldb from b_direct). */
typedef void (*wk_gemm_micro_fn)(int64_t kc, const void *ap, const void *bp, int64_t ldb, void *c, int64_t ldc,
                                 int64_t mr, int64_t nr, bool first);

typedef struct wk_gemm_ukr {
    const char *name;          /* "f32 avx2 6x16", for benches and errors */
    int mr, nr;                /* register tile */
    int kq;                    /* k values per packed unit; kc is a multiple */
    int a_unit, b_unit;        /* bytes of one packed unit of A / B */
    int c_size;                /* bytes of one C element */
    int64_t kc, mc, nc;        /* fixed blocking, or 0: from the caches (wk__gemm_blocking) */
    int64_t b_packed_ld;       /* ldb handed to micro for a packed strip */
    wk_gemm_pack_a_fn pack_a;
    wk_gemm_pack_b_fn pack_b;
    wk_gemm_b_direct_fn b_direct; /* NULL: always pack */
    int64_t direct_b_max_m;       /* b_direct is tried for m <= this, and when B fits half the L2 */
    wk_gemm_micro_fn micro;
} wk_gemm_ukr;

/* The loop nest (gemm_loop.c). k == 0 zeroes C. false = out of memory. */
bool wk__gemm_run(const wk_gemm_ukr *u, const wk_gemm_args *g);

/* The registered kernels of each ISA file (f32, f64, and f16 / bf16 widened
 * to f32 while packing, with the f32 micro-kernel; C is f32 for those). */
extern const wk_gemm_ukr wk__ukr_f32_generic, wk__ukr_f64_generic, wk__ukr_f16_generic, wk__ukr_bf16_generic;
extern const wk_gemm_ukr wk__ukr_f32_avx2, wk__ukr_f64_avx2, wk__ukr_f16_avx2, wk__ukr_bf16_avx2;
extern const wk_gemm_ukr wk__ukr_f32_avx512, wk__ukr_f64_avx512, wk__ukr_f16_avx512, wk__ukr_bf16_avx512;
/* bf16 x bf16 -> f32 with vdpbf16ps (gemm_bf16_avx512bf16.c). */
extern const wk_gemm_ukr wk__ukr_bf16dp_avx512bf16;

/* gemv: y[j] = sum_p x[p*xs] * b[p*brs + j*bcs], j < n (y contiguous). */
#define WK_GEMM_DECL(T, sfx)                                                                                  \
    bool wk__gemm_##sfx(int64_t m, int64_t n, int64_t k, const T *a, int64_t ars, int64_t acs, const T *b, \
                        int64_t brs, int64_t bcs, T *c);                                                      \
    void wk__gemv_##sfx(int64_t n, int64_t k, const T *x, int64_t xs, const T *b, int64_t brs, int64_t bcs, T *y);
WK_GEMM_DECL(float, f32_generic)
WK_GEMM_DECL(double, f64_generic)
WK_GEMM_DECL(float, f32_avx2)
WK_GEMM_DECL(double, f64_avx2)
WK_GEMM_DECL(float, f32_avx512)
WK_GEMM_DECL(double, f64_avx512)

typedef bool (*wk_gemm_f32_fn)(int64_t, int64_t, int64_t, const float *, int64_t, int64_t, const float *, int64_t,
                               int64_t, float *);
typedef bool (*wk_gemm_f64_fn)(int64_t, int64_t, int64_t, const double *, int64_t, int64_t, const double *, int64_t,
                               int64_t, double *);
typedef void (*wk_gemv_f32_fn)(int64_t, int64_t, const float *, int64_t, const float *, int64_t, int64_t, float *);
typedef void (*wk_gemv_f64_fn)(int64_t, int64_t, const double *, int64_t, const double *, int64_t, int64_t, double *);

/* The kernels for the SIMD level in force (vmath's run-time choice, which
 * honours WICK_ISA); looked up per call so there is no shared mutable state.
 * matmul and the convolutions both take their GEMM from here. */
typedef struct wk_gemm_kernels {
    wk_gemm_f32_fn f32;
    wk_gemm_f64_fn f64;
    wk_gemv_f32_fn v32;
    wk_gemv_f64_fn v64;
    bool bf16_dot; /* AVX512-BF16: bf16 products without widening */
    const wk_gemm_ukr *f16, *bf16; /* f16 / bf16 GEMM into an f32 C */
    /* f16 / bf16 GEMV loops widening in registers (gemv_half.h), or NULL */
    void (*half_rows)(float *acc, const float *x, const uint16_t *b, int64_t brs, int64_t k, int64_t w, bool f16);
    float (*half_dot)(const float *x, const uint16_t *col, int64_t k, bool f16);
} wk_gemm_kernels;
wk_gemm_kernels wk__gemm_kernels(void);

/* bf16 x bf16 -> f32 on AVX512-BF16: C[m x n] (f32, contiguous, row stride
 * n) = A @ B, A and B bf16 bit patterns read through element strides;
 * products summed in f32, no rounding until the caller narrows C. The
 * kernel pair is wk__gemm_bf16_avx512bf16_ukr()'s (vdpbf16ps, or widening
 * to f32 + FMA on Intel cores; WICK_BF16_KERNEL=dp|fma overrides).
 * Call only when wk__cpu_has_avx512bf16(). false = out of memory. */
const wk_gemm_ukr *wk__gemm_bf16_avx512bf16_ukr(void);
bool wk__gemm_bf16_avx512bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t ars, int64_t acs,
                              const uint16_t *b, int64_t brs, int64_t bcs, float *c);
/* cpuid: AVX512-BF16 present (and AVX-512 state enabled by the OS). */
bool wk__cpu_has_avx512bf16(void);

/* Optional system BLAS (cmake -DWICK_BLAS=openblas|blis; off by default).
 * Returns true when it computed C (contiguous, row stride n); false when
 * wick was built without BLAS or the strides cannot be expressed as a
 * BLAS leading dimension, and the caller runs wick's own GEMM. */
bool wk__blas_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                       int64_t brs, int64_t bcs, float *c);
bool wk__blas_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs,
                       const double *b, int64_t brs, int64_t bcs, double *c);
/* "openblas", "blis" or NULL (built without). */
const char *wk__blas_name(void);

#endif
