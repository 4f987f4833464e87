/* CUDA kernels for the GGML block dtypes (launchers in kernels_quant.h):
 * dequantize to f32 / f16 / bf16 and the decode mat-vec product. Prefill
 * (more than WK_CU_QMV_MAX_M activation rows) is dequantize + cuBLAS,
 * composed in cuda_quant.c.
 *
 * Both kernels dequantize with the scalar per-block code of
 * quant/dequant_block.h (via kernels_quant.cuh), the code the CPU backend
 * is checked bit-exact against gguf-py with, so there is one definition of
 * every format. nvcc contracts a * b + c into an FMA, so the types with a
 * min (q4_1, q5_1, q2_K, q4_K, q5_K) may differ from the host in the last
 * bit on a GPU; host emulation gives gguf-py's bits.
 *
 * Mat-vec: x stays f32 and is dotted against the dequantized weights in
 * registers, rather than being quantized to q8_1 and integer-dotted (ggml's
 * mmvq with dp4a). Why: for m <= 8 rows the kernel is bound by reading the
 * weights, the result is the exact product of the dequantized weights with
 * x (no activation rounding, so it checks against an f64 reference with a
 * tight bound and agrees with wk_dequantize + wk_matmul), and every block
 * type needs no second (integer) form of its format. A dp4a path is the
 * next step if a GPU shows the f32 FMAs bounding m = 4..8.
 *
 * Checked: nvcc compile for sm_80/86/89/90 with warnings as errors; the
 * per-item / per-lane code, the butterfly and the launch loops run on the
 * host (WKC_HOST_EMULATION, tests/cuda/test_cuda_quant_emu.cu) against
 * dequant_block.h and an f64 reference for all 14 types. */
#include "cuda/common/cuda_index.cuh"
#include "cuda/quantized/kernels_quant.cuh"
#include "cuda/quantized/kernels_quant.h"

namespace {

/* byte offset of row r of q */
WKC_HD int64_t qrow_byte(const wk_cu_qrows &q, int64_t r) {
    int64_t off = q.offset;
    for (int d = q.rank - 1; d >= 0; d--) {
        int64_t s = q.shape[d], t = r / s;
        off += (r - t * s) * q.stride[d];
        r = t;
    }
    return off;
}

/* n floats into dst at element o, in ddt (f32 / f16 / bf16: checked by the launchers) */
WKC_HD void qput(void *dst, int64_t o, int ddt, const float *y, int n) {
    if (ddt == WK_F32) {
        float *p = (float *)dst + o;
        for (int j = 0; j < n; j++) p[j] = y[j];
    } else if (ddt == WK_F16) {
        uint16_t *p = (uint16_t *)dst + o;
        for (int j = 0; j < n; j++) p[j] = wkc_f32_to_f16(y[j]);
    } else {
        uint16_t *p = (uint16_t *)dst + o;
        for (int j = 0; j < n; j++) p[j] = wkc_f32_to_bf16(y[j]);
    }
}

bool out_dtype_ok(wk_dtype ddt) { return ddt == WK_F32 || ddt == WK_F16 || ddt == WK_BF16; }

/* ---- dequantize: one item per block ---- */

template <int DT> struct DqP {
    wk_cu_qrows q;
    const uint8_t *w;
    void *dst;
    int32_t ddt;
};
template <int DT> struct DqItem {
    static WKC_HD void item(const DqP<DT> &p, int64_t i) {
        typedef wkc_qblk<DT> B;
        int64_t r = i / p.q.nblk, b = i - r * p.q.nblk;
        float y[B::qk];
        B::dq(p.w + qrow_byte(p.q, r) + b * B::bytes, y);
        qput(p.dst, r * p.q.k + b * B::qk, p.ddt, y, B::qk);
    }
};
template <int DT> int dequant_t(wk_cu_stream s, const wk_cu_qrows &q, const void *w, void *dst, wk_dtype ddt) {
    DqP<DT> p;
    p.q = q;
    p.w = (const uint8_t *)w;
    p.dst = dst;
    p.ddt = ddt;
    return wkc_launch_items<DqItem<DT>>(s, p, q.rows * q.nblk);
}

/* ---- mat-vec: a group of lanes per weight row ----
 * A row of nblk blocks gets g lanes, the smallest power of two >= nblk up
 * to the warp's 32, so a warp serves 32 / g rows at once: a q4_K row of
 * 4096 (16 super-blocks) takes half a warp instead of leaving 16 lanes
 * idle, short rows share a warp further. */

#define QMV_LANES 32
#define QMV_WARPS 4 /* warps per thread block */

template <int DT> struct MvP {
    wk_cu_qrows q;
    const uint8_t *w;
    const float *x; /* m x k, contiguous */
    void *dst;      /* m x rows, contiguous */
    int32_t ddt, m;
    int32_t g;      /* lanes per row: a power of two, 1..32 */
};

/* Lane `lane` (of the row's g)'s partial sums of row n with each row of x:
 * blocks lane, lane + g, ...; each block's dot is summed on its own, then
 * added. */
template <int DT> WKC_HD void mv_lane(const MvP<DT> &p, int64_t n, int lane, float *acc) {
    typedef wkc_qblk<DT> B;
    WKC_UNROLL
    for (int m = 0; m < WK_CU_QMV_MAX_M; m++) acc[m] = 0.0f;
    const uint8_t *row = p.w + qrow_byte(p.q, n);
    for (int64_t b = lane; b < p.q.nblk; b += p.g) {
        float y[B::qk];
        B::dq(row + b * B::bytes, y);
        const float *xb = p.x + b * B::qk;
        WKC_UNROLL
        for (int m = 0; m < WK_CU_QMV_MAX_M; m++) {
            if (m < p.m) {
                const float *xm = xb + m * p.q.k;
                float s = 0.0f;
                for (int j = 0; j < B::qk; j++) s += y[j] * xm[j];
                acc[m] += s;
            }
        }
    }
}

template <int DT> WKC_HD void mv_store(const MvP<DT> &p, int64_t n, const float *acc) {
    for (int m = 0; m < p.m; m++) qput(p.dst, m * p.q.rows + n, p.ddt, &acc[m], 1);
}

/* Thread tid of thread block blk: its warp's first row (*n0), its row (*n)
 * and its lane in the row's group (*sub). */
template <int DT> WKC_HD void mv_where(const MvP<DT> &p, int64_t blk, int tid, int64_t *n0, int64_t *n, int *sub) {
    const int rpw = QMV_LANES / p.g; /* rows per warp */
    int lane = tid % QMV_LANES;
    *n0 = (blk * QMV_WARPS + tid / QMV_LANES) * rpw;
    *n = *n0 + lane / p.g;
    *sub = lane % p.g;
}

template <int DT>
__global__ void __launch_bounds__(QMV_LANES *QMV_WARPS) qmv_kernel(const __grid_constant__ MvP<DT> p) {
    int64_t n0, n;
    int sub;
    mv_where<DT>(p, blockIdx.x, (int)threadIdx.x, &n0, &n, &sub);
    if (n0 >= p.q.rows) return; /* whole warps: the shuffles below see full warps */
    float acc[WK_CU_QMV_MAX_M];
    if (n < p.q.rows) {
        mv_lane<DT>(p, n, sub, acc);
    } else { /* past the last row: still in the shuffles, stores nothing */
        WKC_UNROLL
        for (int m = 0; m < WK_CU_QMV_MAX_M; m++) acc[m] = 0.0f;
    }
    /* xor offsets below g stay inside the row's aligned group of g lanes */
    WKC_UNROLL
    for (int m = 0; m < WK_CU_QMV_MAX_M; m++)
        for (int off = p.g / 2; off > 0; off /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
    if (sub == 0 && n < p.q.rows) mv_store<DT>(p, n, acc);
}

template <int DT> int qmv_t(wk_cu_stream s, const wk_cu_qrows &q, const void *w, const float *x, int64_t m, void *dst,
                            wk_dtype ddt) {
    MvP<DT> p;
    p.q = q;
    p.w = (const uint8_t *)w;
    p.x = x;
    p.dst = dst;
    p.ddt = ddt;
    p.m = (int32_t)m;
    p.g = 1;
    while (p.g < q.nblk && p.g < QMV_LANES) p.g *= 2;
    int64_t rpw = QMV_LANES / p.g, warps = (q.rows + rpw - 1) / rpw;
    int64_t blocks = (warps + QMV_WARPS - 1) / QMV_WARPS;
#ifdef WKC_HOST_EMULATION
    /* every thread of the grid computes its lane's partials where the
     * kernel's mv_where puts it (each (row, lane) exactly once, or the
     * launch fails), then each row's group meets in the device's xor
     * butterfly, in its order */
    (void)s;
    const int64_t per_row = (int64_t)p.g * WK_CU_QMV_MAX_M;
    float *part = (float *)malloc(sizeof(float) * (size_t)(q.rows * per_row));
    unsigned char *seen = (unsigned char *)calloc((size_t)(q.rows * p.g), 1);
    bool ok = part && seen;
    for (int64_t blk = 0; ok && blk < blocks; blk++)
        for (int tid = 0; tid < QMV_LANES * QMV_WARPS; tid++) {
            int64_t n0, n;
            int sub;
            mv_where<DT>(p, blk, tid, &n0, &n, &sub);
            if (n0 >= q.rows || n >= q.rows) continue;
            ok = ok && !seen[n * p.g + sub]++;
            mv_lane<DT>(p, n, sub, part + n * per_row + sub * WK_CU_QMV_MAX_M);
        }
    for (int64_t i = 0; ok && i < q.rows * p.g; i++) ok = seen[i] == 1;
    for (int64_t n = 0; ok && n < q.rows; n++) {
        float v[QMV_LANES][WK_CU_QMV_MAX_M], t[QMV_LANES][WK_CU_QMV_MAX_M];
        memcpy(v, part + n * per_row, sizeof v[0] * (size_t)p.g);
        for (int off = p.g / 2; off > 0; off /= 2) {
            for (int l = 0; l < p.g; l++)
                for (int k = 0; k < WK_CU_QMV_MAX_M; k++) t[l][k] = v[l][k] + v[l ^ off][k];
            memcpy(v, t, sizeof v[0] * (size_t)p.g);
        }
        mv_store<DT>(p, n, v[0]);
    }
    free(part);
    free(seen);
    return ok ? 0 : (int)cudaErrorLaunchFailure;
#else
    if (blocks > 0x7fffffff) return WKC_BAD_ARG;
    void *args[] = {&p};
    void (*k)(const MvP<DT>) = qmv_kernel<DT>;
    return (int)cudaLaunchKernel((const void *)k, dim3((unsigned)blocks), dim3(QMV_LANES * QMV_WARPS), args, 0,
                                 (cudaStream_t)s);
#endif
}

} // namespace

extern "C" bool wk__cu_qrows_plan(wk_cu_view lw, wk_dtype dt, wk_cu_qrows *q) {
    memset(q, 0, sizeof *q);
    if (!wk_dtype_is_quantized(dt)) return false;
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    int r = lw.rank;
    if (!di || r < 1 || r > WK_MAX_RANK) return false;
    int64_t qk = di->block_elems, qb = di->block_bytes, k = lw.shape[r - 1];
    if (k < 0 || k % qk != 0 || (k > 1 && lw.stride[r - 1] != 1) || lw.offset < 0 || lw.offset % qk != 0)
        return false;
    q->dt = dt;
    q->rank = r - 1;
    q->offset = lw.offset / qk * qb;
    q->rows = 1;
    for (int d = 0; d < r - 1; d++) {
        if (lw.shape[d] < 0) return false;
        if (lw.shape[d] > 1 && lw.stride[d] % qk != 0) return false; /* a row off a block boundary */
        q->shape[d] = lw.shape[d];
        q->stride[d] = lw.shape[d] > 1 ? lw.stride[d] / qk * qb : 0;
        q->rows *= lw.shape[d];
    }
    q->k = k;
    q->nblk = k / qk;
    q->qk = (int32_t)qk;
    q->qbytes = (int32_t)qb;
    return true;
}

extern "C" int wk__cu_dequantize(wk_cu_stream s, const void *w, wk_cu_view lw, wk_dtype wdt, void *dst,
                                 wk_dtype ddt) {
    wk_cu_qrows q;
    if (!out_dtype_ok(ddt) || !wk__cu_qrows_plan(lw, wdt, &q)) return WKC_BAD_ARG;
    if (q.rows == 0 || q.nblk == 0) return 0;
    switch (wdt) {
#define DQ_CASE(DT, T, QK, FN) \
    case DT: return dequant_t<DT>(s, q, w, dst, ddt);
        WKC_QUANT_TYPES(DQ_CASE)
#undef DQ_CASE
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    return WKC_BAD_ARG;
}

extern "C" int wk__cu_qmatvec(wk_cu_stream s, const void *w, wk_cu_view lw, wk_dtype wdt, const float *x, int64_t m,
                              void *dst, wk_dtype ddt) {
    wk_cu_qrows q;
    if (!out_dtype_ok(ddt) || m < 1 || m > WK_CU_QMV_MAX_M || lw.rank != 2 || !wk__cu_qrows_plan(lw, wdt, &q))
        return WKC_BAD_ARG;
    if (q.rows == 0) return 0;
    switch (wdt) {
#define MV_CASE(DT, T, QK, FN) \
    case DT: return qmv_t<DT>(s, q, w, x, m, dst, ddt);
        WKC_QUANT_TYPES(MV_CASE)
#undef MV_CASE
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    return WKC_BAD_ARG;
}
