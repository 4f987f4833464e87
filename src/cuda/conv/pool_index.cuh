/* The index maths of pooling and resampling on NCHW, shared by the forward
 * kernels (kernels_pool.cu) and the backward ones (kernels_pool_backward.cu):
 * a pooling window, max pool's NaN rule, nearest and bilinear source
 * indices and weights, each operation by operation as cpu/conv/cpu_pool.c
 * so that results are bit-identical to the CPU backend. */
#ifndef WICK_CUDA_CONV_POOL_INDEX_CUH
#define WICK_CUDA_CONV_POOL_INDEX_CUH
#include "cuda/common/cuda_index.cuh"

namespace {

/* cpu_pool.c's WINDOW: [lo, hi) of output index o, clipped to [0, n) */
WKC_HD void pool_window(int64_t o, int64_t s, int64_t p, int64_t k, int64_t n, int64_t *lo_out, int64_t *hi_out) {
    int64_t lo = o * s - p, hi;
    if (lo < 0) {
        hi = lo + k;
        lo = 0;
    } else {
        hi = k > n - lo ? n : lo + k;
    }
    if (hi > n) hi = n;
    *lo_out = lo;
    *hi_out = hi;
}

template <class C> WKC_HD bool pool_isnan(C) { return false; } /* integers */
WKC_HD bool pool_isnan(float v) { return v != v; }
WKC_HD bool pool_isnan(double v) { return v != v; }

/* torch's legacy nearest source index (cpu_pool.c's nearest_index) */
WKC_HD int64_t pool_nearest_src(int64_t o, int64_t in, int64_t out, float scale) {
    if (out == in) return o;
    if (out == 2 * in) return o >> 1;
    float f = floorf((float)o * scale);
    return f >= (float)(in - 1) ? in - 1 : (int64_t)f;
}

/* cpu_pool.c's linear_index for one output index: source indices a, b and
 * their weights w0, w1 (AT: float, or double for f64) */
template <class AT>
WKC_HD void pool_linear_src(int64_t o, int64_t in, int64_t out, bool ac, double scale, int64_t *a, int64_t *b, AT *w0,
                            AT *w1) {
    if (in == out) {
        *a = *b = o;
        *w0 = 1;
        *w1 = 0;
        return;
    }
    double src;
    if (ac) {
        src = wkc_mul_rn(scale, (double)o);
    } else {
        src = wkc_add_rn(wkc_mul_rn(scale, wkc_add_rn((double)o, 0.5)), -0.5);
        if (src < 0) src = 0;
    }
    const int64_t i0 = src >= (double)(in - 1) ? in - 1 : (int64_t)src;
    const double f = src - (double)i0;
    *a = i0;
    *b = i0 + (i0 < in - 1 ? 1 : 0);
    *w1 = (AT)(f < 0 ? 0 : f > 1 ? 1 : f);
    *w0 = (AT)1 - *w1;
}

/* the CPU's bilinear scale: computed in AT, then widened */
template <class AT> inline double pool_linear_scale(int64_t in, int64_t out, bool ac) {
    return (double)(ac ? (out > 1 ? (AT)(in - 1) / (AT)(out - 1) : (AT)0) : (AT)in / (AT)out);
}

} // namespace

#endif
