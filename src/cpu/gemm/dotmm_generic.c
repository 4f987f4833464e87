/* Portable dot-form block (dotmm.h): each element by the same function, 8
 * lane partial sums over k in order, lanes added 0..7 at the end. */
#include "cpu/gemm/dotmm.h"
#include "tensor/tensor.h"
#include <stddef.h>

static float w_at(const void *w, int64_t p, wk_dotmm_wtype wt) {
    if (wt == WK_DOTMM_F32) return ((const float *)w)[p];
    uint16_t h = ((const uint16_t *)w)[p];
    return wt == WK_DOTMM_F16 ? wk_f16_to_f32(h) : wk_bf16_to_f32(h);
}

static float dot1(int64_t k, const float *x, const void *w, wk_dotmm_wtype wt) {
    float lane[8] = {0};
    int64_t p = 0;
    for (; p + 8 <= k; p += 8)
        for (int l = 0; l < 8; l++) lane[l] += x[p + l] * w_at(w, p + l, wt);
    for (int l = 0; p < k; p++, l++) lane[l] += x[p] * w_at(w, p, wt);
    float s = 0;
    for (int l = 0; l < 8; l++) s += lane[l];
    return s;
}

void wk__dotmm_block_generic(int64_t k, const float *x, int64_t xs, int64_t m, const void *w, int64_t wrs,
                             int64_t n, wk_dotmm_wtype wt, float *out, int64_t ldo) {
    size_t es = wt == WK_DOTMM_F32 ? 4 : 2;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            out[i * ldo + j] = dot1(k, x + i * xs, (const char *)w + (size_t)j * (size_t)wrs * es, wt);
}
