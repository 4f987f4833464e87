/* Activation quantizers: rows of x to the partner block types (qdot.h).
 * Scalar on purpose: they are O(M*K) against the matmul's O(M*N*K) and run
 * once per call; the compiler vectorizes the max and scale loops. The same
 * code is the tests' reference, so every kernel sees identical inputs. */
#include "cpu/quantized/qdot.h"
#include "quant/dequant_block.h"
#include <math.h>
#include <string.h>

/* round half to even for |v| < 2^22, independent of the FPU mode (ggml's
 * nearest_int trick) */
static inline int nearest_even(float v) {
    float t = v + 12582912.f;
    int32_t i;
    memcpy(&i, &t, 4);
    i = (i & 0x007fffff) - 0x00400000;
    return i > 127 ? 127 : i < -127 ? -127 : i;
}

void wk__qact32_row(const float *x, int64_t k, wk_qa32 *out) {
    for (int64_t b = 0; b < k / WK_QK; b++, x += WK_QK) {
        float amax = 0;
        for (int j = 0; j < WK_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.f, id = d != 0 ? 1.f / d : 0.f;
        int32_t sum = 0;
        for (int j = 0; j < WK_QK; j++) {
            int q = nearest_even(x[j] * id);
            out[b].qs[j] = (int8_t)q;
            sum += q;
        }
        /* ggml stores d as f16; the products use that stored value */
        float ds = wk__q_f16(wk_f32_to_f16(d));
        if (!(ds == ds) || isinf(ds)) ds = 0; /* non-finite x: no meaningful scale */
        out[b].d = ds;
        out[b].isum = sum;
        out[b].s = ds * (float)sum;
        out[b].pad_ = 0;
    }
}

void wk__qactK_row(const float *x, int64_t k, wk_block_q8_K *out) {
    for (int64_t b = 0; b < k / WK_QK_K; b++, x += WK_QK_K) {
        float amax = 0, max = 0;
        for (int j = 0; j < WK_QK_K; j++) {
            float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        wk_block_q8_K *y = &out[b];
        if (amax == 0 || isinf(amax)) {
            memset(y, 0, sizeof *y);
            continue;
        }
        /* as ggml: the largest magnitude maps to -127 exactly */
        float iscale = -127.f / max;
        for (int j = 0; j < WK_QK_K; j++) y->qs[j] = (int8_t)nearest_even(iscale * x[j]);
        for (int g = 0; g < WK_QK_K / 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += y->qs[16 * g + j];
            y->bsums[g] = (int16_t)s;
        }
        y->d = 1.f / iscale;
    }
}

wk_qact_kind wk__qact_kind(wk_dtype wdt) {
    switch (wdt) {
    case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0: case WK_Q8_1: case WK_IQ4_NL:
        return WK_QACT_32;
    case WK_Q2_K: case WK_Q3_K: case WK_Q4_K: case WK_Q5_K: case WK_Q6_K: case WK_Q8_K: case WK_IQ4_XS:
        return WK_QACT_K;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    return WK_QACT_32;
}
