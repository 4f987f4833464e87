/* Optional system BLAS for f32/f64 GEMM (cmake -DWICK_BLAS=openblas|blis;
 * OFF by default). cpu_matmul.c tries wk__blas_gemm_* first and runs wick's
 * own GEMM when they return false: in a build without BLAS (each then
 * declines at once), or when an operand's strides cannot be written as a CBLAS
 * leading dimension (broadcast stride 0, element step > 1 in both
 * directions, negative strides) or a size does not fit BLAS's 32-bit ints.
 *
 * Threads: C is cut into fixed 128 x 256 tiles, each one single-threaded
 * BLAS call, spread over wick's thread pool (wk_num_threads()). The BLAS's
 * own threading is set to 1 (process-wide: it also applies to any other
 * user of that BLAS in the process). Reason: OpenBLAS 0.3.21's results
 * change in the last bits with its own thread count (seen for f32 and f64,
 * e.g. 300x1000x200 and 16x900x2000), while tiles whose sizes do not depend
 * on the thread count keep wick's rule that 1 and N threads give identical
 * results. It also keeps one thread pool (OpenBLAS's workers spin after
 * each call) and measured within noise of OpenBLAS's own threading. */
#include "cpu/gemm/gemm.h"
#include <stddef.h>

#ifndef WICK_HAVE_BLAS

bool wk__blas_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                       int64_t brs, int64_t bcs, float *c) {
    (void)m, (void)n, (void)k, (void)a, (void)ars, (void)acs, (void)b, (void)brs, (void)bcs, (void)c;
    return false;
}

bool wk__blas_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs,
                       const double *b, int64_t brs, int64_t bcs, double *c) {
    (void)m, (void)n, (void)k, (void)a, (void)ars, (void)acs, (void)b, (void)brs, (void)bcs, (void)c;
    return false;
}

const char *wk__blas_name(void) { return NULL; }

#else /* WICK_HAVE_BLAS */

#include "cpu/runtime/threadpool.h"
#include "wick/wick.h"
#include <limits.h>
#include <string.h>

/* From the include dir CMake found (Debian's /usr/include/<arch>/cblas.h
 * may belong to another BLAS). */
#if defined(WICK_BLAS_OPENBLAS)
#include <cblas.h> /* OpenBLAS's: CBLAS and openblas_*_num_threads */
static void blas_single_threaded(void) {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}
#elif defined(WICK_BLAS_BLIS)
#include <blis.h> /* BLIS's typed API, bli_thread_*, and its CBLAS */
static void blas_single_threaded(void) {
    if (bli_thread_get_num_threads() != 1) bli_thread_set_num_threads(1);
}
#else
#error "WICK_HAVE_BLAS needs WICK_BLAS_OPENBLAS or WICK_BLAS_BLIS"
#endif

/* Tile of C per BLAS call; fixed, so the work split never depends on the thread count. */
#define TILE_M 128
#define TILE_N 256
/* Below this many multiply-adds: one call on the calling thread. */
#define PAR_MIN_MNK (1 << 18)

/* An r x c operand (r, c >= 1) at element strides (rs, cs) as a CBLAS
 * row-major operand: NoTrans, element (i,j) at i*ld + j (ld >= c), or
 * Trans, element (i,j) at j*ld + i (ld >= r). A stride that is never
 * stepped (r == 1 or c == 1) does not matter. false = not expressible. */
static bool as_blas(int64_t r, int64_t c, int64_t rs, int64_t cs, enum CBLAS_TRANSPOSE *tr, int *ld) {
    int64_t l;
    if ((c == 1 || cs == 1) && (r == 1 || rs >= c)) {
        *tr = CblasNoTrans;
        l = r == 1 ? c : rs;
    } else if ((r == 1 || rs == 1) && (c == 1 || cs >= r)) {
        *tr = CblasTrans;
        l = c == 1 ? r : cs;
    } else {
        return false;
    }
    if (l > INT_MAX) return false;
    *ld = (int)l;
    return true;
}

/* Common checks; returns 1 = call the BLAS, 0 = done (empty), -1 = not expressible. */
static int plan(int64_t m, int64_t n, int64_t k, int64_t ars, int64_t acs, int64_t brs, int64_t bcs,
                enum CBLAS_TRANSPOSE *ta, int *lda, enum CBLAS_TRANSPOSE *tb, int *ldb) {
    if (m < 0 || n < 0 || k < 0) return -1;
    if (m == 0 || n == 0 || k == 0) return 0;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return -1;
    if (!as_blas(m, k, ars, acs, ta, lda) || !as_blas(k, n, brs, bcs, tb, ldb)) return -1;
    return 1;
}

typedef struct {
    int64_t m, n, k, tiles_n;
    enum CBLAS_TRANSPOSE ta, tb;
    int lda, ldb;
    const void *a, *b;
    void *c;
    bool f64;
} gemm_job;

/* A's rows i0.., B's columns j0..: NoTrans steps by ld, Trans by 1 (and the
 * reverse for B); a never-stepped index (m == 1, n == 1) stays 0. */
static void tiles(void *ctx, int64_t t0, int64_t t1, int tid) {
    (void)tid;
    const gemm_job *j = ctx;
    for (int64_t t = t0; t < t1; t++) {
        int64_t i0 = t / j->tiles_n * TILE_M, j0 = t % j->tiles_n * TILE_N;
        int mm = (int)(j->m - i0 < TILE_M ? j->m - i0 : TILE_M), nn = (int)(j->n - j0 < TILE_N ? j->n - j0 : TILE_N);
        int64_t ao = j->ta == CblasNoTrans ? i0 * j->lda : i0, bo = j->tb == CblasNoTrans ? j0 : j0 * j->ldb;
        if (j->f64)
            cblas_dgemm(CblasRowMajor, j->ta, j->tb, mm, nn, (int)j->k, 1.0, (const double *)j->a + ao, j->lda,
                        (const double *)j->b + bo, j->ldb, 0.0, (double *)j->c + i0 * j->n + j0, (int)j->n);
        else
            cblas_sgemm(CblasRowMajor, j->ta, j->tb, mm, nn, (int)j->k, 1.0f, (const float *)j->a + ao, j->lda,
                        (const float *)j->b + bo, j->ldb, 0.0f, (float *)j->c + i0 * j->n + j0, (int)j->n);
    }
}

static bool gemm(int64_t m, int64_t n, int64_t k, const void *a, int64_t ars, int64_t acs, const void *b,
                 int64_t brs, int64_t bcs, void *c, bool f64) {
    gemm_job j = {.m = m, .n = n, .k = k, .a = a, .b = b, .c = c, .f64 = f64};
    int p = plan(m, n, k, ars, acs, brs, bcs, &j.ta, &j.lda, &j.tb, &j.ldb);
    if (p < 0) return false;
    if (p == 0) {
        if (m > 0 && n > 0) memset(c, 0, (f64 ? sizeof(double) : sizeof(float)) * (size_t)m * (size_t)n);
        return true; /* k == 0: C = 0 */
    }
    blas_single_threaded();
    j.tiles_n = (n + TILE_N - 1) / TILE_N;
    int64_t nt = (m + TILE_M - 1) / TILE_M * j.tiles_n;
    bool small = (double)m * (double)n * (double)k < PAR_MIN_MNK;
    wk__parallel_for(nt, 1, small ? INT64_MAX : 2, tiles, &j);
    return true;
}

bool wk__blas_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                       int64_t brs, int64_t bcs, float *c) {
    return gemm(m, n, k, a, ars, acs, b, brs, bcs, c, false);
}

bool wk__blas_gemm_f64(int64_t m, int64_t n, int64_t k, const double *a, int64_t ars, int64_t acs,
                       const double *b, int64_t brs, int64_t bcs, double *c) {
    return gemm(m, n, k, a, ars, acs, b, brs, bcs, c, true);
}

const char *wk__blas_name(void) { return WICK_BLAS_NAME; }

#endif /* WICK_HAVE_BLAS */
