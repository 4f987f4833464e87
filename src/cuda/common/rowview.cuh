/* Row views and the one-warp-per-row launcher shared by the fused nn
 * kernels (nn/kernels_nn.cu) and their backward kernels
 * (nn/kernels_grad.cu), plus the view checks and the float-dtype switch
 * their launchers use.
 *
 * A row op works on the 1-D rows of a view along one dim: RowV holds the
 * view's other dims, row_base(v, r) the element offset of row r. The row
 * launcher runs one warp per row, 4 warps per block, grid-stride over the
 * rows: lane l folds elements l, l + 32, ... into a state, the 32 states
 * meet in shared memory and every lane folds them in lane order (so every
 * lane holds the same total and the order depends only on the shape).
 *
 * Host emulation (WKC_HOST_EMULATION): launch_rows runs fold / comb /
 * write lane by lane on the host in the kernel's order. */
#ifndef WICK_CUDA_COMMON_ROWVIEW_CUH
#define WICK_CUDA_COMMON_ROWVIEW_CUH
#include <cuda_fp16.h>
#include <string.h>
#include "cuda/common/cuda_index.cuh"
#include "base/dtype_cases.h"

#define WKC_ROW_LANES 32
#define WKC_ROW_WARPS 4 /* warps per block */

namespace {

WKC_HD float row_exp(float x) { return expf(x); }
WKC_HD double row_exp(double x) { return exp(x); }
WKC_HD float row_log(float x) { return logf(x); }
WKC_HD double row_log(double x) { return log(x); }
WKC_HD float row_tanh(float x) { return tanhf(x); }
WKC_HD double row_tanh(double x) { return tanh(x); }
WKC_HD float row_sqrt(float x) { return sqrtf(x); }
WKC_HD double row_sqrt(double x) { return sqrt(x); }
template <class C> WKC_HD C row_ninf() { return (C)-INFINITY; }

/* Element i of a DT array in the compute type. f16 widens in one hardware
 * conversion on the device (exact, as wkc_f16_to_f32's integer code, which
 * the host uses) - it sits in attention's inner loops. */
template <int DT> WKC_HD typename wkc_t<DT>::C row_ld(const void *p, int64_t i) {
#ifdef __CUDA_ARCH__
    if (DT == WK_F16) return __half2float(__ushort_as_half(((const unsigned short *)p)[i]));
#endif
    return wkc_t<DT>::load(p, i);
}

/* Row-major positions over up to WK_MAX_RANK dims with strides. */
struct RowV {
    int32_t rank;
    int64_t shape[WK_MAX_RANK], stride[WK_MAX_RANK];
    int64_t offset;
};
WKC_HD int64_t row_base(const RowV &v, int64_t r) {
    int64_t off = v.offset;
    for (int d = v.rank - 1; d >= 0; d--) {
        int64_t q = r / v.shape[d];
        off += (r - q * v.shape[d]) * v.stride[d];
        r = q;
    }
    return off;
}
/* the view's dims but `skip` (-1: none); *rows: their product */
inline RowV row_view(const wk_cu_view &l, int skip, int64_t *rows) {
    RowV v;
    memset(&v, 0, sizeof v);
    v.offset = l.offset;
    *rows = 1;
    for (int d = 0; d < l.rank; d++) {
        if (d == skip) continue;
        v.shape[v.rank] = l.shape[d];
        v.stride[v.rank++] = l.stride[d];
        *rows *= l.shape[d];
    }
    return v;
}

inline bool view_ok(const wk_cu_view &v) {
    if (v.rank < 0 || v.rank > WK_MAX_RANK) return false;
    for (int d = 0; d < v.rank; d++)
        if (v.shape[d] < 0) return false;
    return true;
}
inline bool view_same_shape(const wk_cu_view &a, const wk_cu_view &b) {
    if (a.rank != b.rank) return false;
    for (int d = 0; d < a.rank; d++)
        if (a.shape[d] != b.shape[d]) return false;
    return true;
}
inline int64_t view_numel(const wk_cu_view &v) {
    int64_t n = 1;
    for (int d = 0; d < v.rank; d++) n *= v.shape[d];
    return n;
}
/* The float dtypes' compute sizes (0: not a float dtype these kernels take). */
inline int compute_size(wk_dtype dt) {
    switch (dt) {
    case WK_F64: return 8;
    case WK_F32: case WK_F16: case WK_BF16: case WK_F8E4M3: return 4;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_DTYPE_COUNT:
    WK__CASE_BLOCK_DTYPES:
        return 0;
    }
    return 0;
}

/* ---- the row launcher: one warp per row ----
 * F: typedef St; static const int PASSES; St empty(); St fold(p, row, lane,
 * pass, prev) (prev: the previous pass's total); St comb(pass, a, b); void
 * write(p, row, lane, total). P has int64_t rows. */
template <class F, class P>
__global__ void __launch_bounds__(WKC_ROW_LANES *WKC_ROW_WARPS) rows_kernel(const __grid_constant__ P p) {
    typedef typename F::St St;
    __shared__ St sh[WKC_ROW_WARPS][WKC_ROW_LANES];
    const int lane = (int)threadIdx.x % WKC_ROW_LANES, w = (int)threadIdx.x / WKC_ROW_LANES;
    for (int64_t r = (int64_t)blockIdx.x * WKC_ROW_WARPS + w; r < p.rows; r += (int64_t)gridDim.x * WKC_ROW_WARPS) {
        St tot = F::empty();
        for (int pass = 0; pass < F::PASSES; pass++) {
            St st = F::fold(p, r, lane, pass, tot);
            sh[w][lane] = st;
            __syncwarp();
            tot = sh[w][0];
            for (int j = 1; j < WKC_ROW_LANES; j++) tot = F::comb(pass, tot, sh[w][j]);
            __syncwarp(); /* every lane has read sh before the next pass writes it */
        }
        F::write(p, r, lane, tot);
    }
}

template <class F, class P> int launch_rows(wk_cu_stream s, const P &p) {
    if (p.rows <= 0) return 0;
#ifdef WKC_HOST_EMULATION
    (void)s;
    typedef typename F::St St;
    St st[WKC_ROW_LANES];
    for (int64_t r = 0; r < p.rows; r++) {
        St tot = F::empty();
        for (int pass = 0; pass < F::PASSES; pass++) {
            for (int lane = 0; lane < WKC_ROW_LANES; lane++) st[lane] = F::fold(p, r, lane, pass, tot);
            tot = st[0];
            for (int j = 1; j < WKC_ROW_LANES; j++) tot = F::comb(pass, tot, st[j]);
        }
        for (int lane = 0; lane < WKC_ROW_LANES; lane++) F::write(p, r, lane, tot);
    }
    return 0;
#else
    int64_t blocks = (p.rows + WKC_ROW_WARPS - 1) / WKC_ROW_WARPS;
    if (blocks > WKC_MAX_BLOCKS) blocks = WKC_MAX_BLOCKS;
    P copy = p;
    void *args[] = {&copy};
    void (*k)(const P) = rows_kernel<F, P>;
    return (int)cudaLaunchKernel((const void *)k, dim3((unsigned)blocks), dim3(WKC_ROW_LANES * WKC_ROW_WARPS), args,
                                 0, (cudaStream_t)s);
#endif
}

} // namespace

/* One switch per launcher over the float dtypes: CALL(DT) returns. */
#define WKC_FLOAT_DISPATCH(dt, CALL)                                                                            \
    switch (dt) {                                                                                               \
    case WK_F32: CALL(WK_F32);                                                                                  \
    case WK_F64: CALL(WK_F64);                                                                                  \
    case WK_F16: CALL(WK_F16);                                                                                  \
    case WK_BF16: CALL(WK_BF16);                                                                                \
    case WK_F8E4M3: CALL(WK_F8E4M3);                                                                            \
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_DTYPE_COUNT:                        \
    WK__CASE_BLOCK_DTYPES:                                                                                      \
        break;                                                                                                  \
    }                                                                                                           \
    return WKC_BAD_ARG

#endif
