/* Line geometry of the ops that work along one dim (scans in
 * kernels_scan.cu, sort / top-k in kernels_sort.cu).
 *
 * A line is the 1-D slice of a view along `dim`: n elements, src stride sd.
 * Lines are numbered row-major over the other dims (orank of them, their
 * shapes and strides kept in oshape / ostride), nlines in all; inner is the
 * product of the dims after dim, so line L's elements land at
 * (L / inner) * n * inner + L % inner + j * inner in a contiguous output of
 * the view's shape. Both op families fill this once on the host and carry it
 * by value in their kernel parameters (their parameter structs derive from
 * wkc_lines), so the per-line addressing is written once.
 *
 * Checked: compiled into kernels_scan.cu / kernels_sort.cu (sm_80, sm_90,
 * warnings as errors) and their host emulation against wk__cpu_scan /
 * wk__cpu_sort / wk__cpu_topk (tests/cuda/test_cuda_sort_emu.cu). */
#ifndef WICK_CUDA_LINES_CUH
#define WICK_CUDA_LINES_CUH
#include "cuda/common/cuda_index.cuh"

struct wkc_lines {
    int32_t dt;
    int32_t orank; /* dims other than dim */
    int64_t oshape[WK_MAX_RANK], ostride[WK_MAX_RANK];
    int64_t offset;
    int64_t n, sd, inner, nlines; /* line length, its src stride, inner extent, lines */
};

/* The lines of view ls along dim for dtype dt; false for a malformed call
 * (bad rank, dim or dtype, a negative extent). Sets every field. */
static inline bool wkc_lines_plan(wkc_lines &g, const wk_cu_view &ls, int dim, wk_dtype dt) {
    g.dt = dt;
    g.orank = 0;
    for (int d = 0; d < WK_MAX_RANK; d++) g.oshape[d] = g.ostride[d] = 0;
    g.offset = g.n = g.sd = 0;
    g.inner = g.nlines = 1;
    if (ls.rank < 1 || ls.rank > WK_MAX_RANK || dim < 0 || dim >= ls.rank || wkc_size(dt) == 0) return false;
    g.offset = ls.offset;
    g.n = ls.shape[dim];
    g.sd = ls.stride[dim];
    for (int d = 0; d < ls.rank; d++) {
        if (ls.shape[d] < 0) return false;
        if (d == dim) continue;
        g.oshape[g.orank] = ls.shape[d];
        g.ostride[g.orank++] = ls.stride[d];
        g.nlines *= ls.shape[d];
        if (d > dim) g.inner *= ls.shape[d];
    }
    return true;
}

/* src offset of element 0 of line L */
WKC_HD int64_t wkc_line_src(const wkc_lines &g, int64_t L) {
    int64_t off = g.offset;
    for (int d = g.orank - 1; d >= 0; d--) {
        int64_t s = g.oshape[d], q = L / s;
        off += (L - q * s) * g.ostride[d];
        L = q;
    }
    return off;
}

/* offset of element 0 of line L in a contiguous output of the view's shape */
WKC_HD int64_t wkc_line_dst(const wkc_lines &g, int64_t L) { return (L / g.inner) * g.n * g.inner + L % g.inner; }

#endif
