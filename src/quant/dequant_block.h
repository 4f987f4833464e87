/* Dequantize one GGML block to f32, for every block dtype: the scalar
 * reference, written once for the CPU (src/quant) and the CUDA kernels (the
 * same WK_HD trick as base/op_math.h). Values are computed in the order ggml
 * and gguf-py use (scale products first, then times the integer), so a file
 * compiled without FMA contraction gives gguf-py's float32 values bit for
 * bit; nvcc contracts a*b+c by default, so device results may differ in the
 * last bit for the types with a min (q4_1, q5_1, q2_K, q4_K, q5_K).
 * Little-endian bytes, as GGUF stores them. */
#ifndef WICK_QUANT_DEQUANT_BLOCK_H
#define WICK_QUANT_DEQUANT_BLOCK_H
#include <stdint.h>
#include <string.h>
#include "base/blocks.h"

#ifndef WK_HD
#ifdef __CUDACC__
#define WK_HD static __host__ __device__ __forceinline__
#else
#define WK_HD static inline
#endif
#endif

/* f16 bits -> f32, exact (integer ops only, so host and device agree). */
WK_HD float wk__q_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0x1f) {
        u = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {
        if (m == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            e = 113;
            while (!(m & 0x400u)) {
                m <<= 1;
                e--;
            }
            u = sign | (e << 23) | ((m & 0x3ffu) << 13);
        }
    } else {
        u = sign | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

WK_HD uint32_t wk__q_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

WK_HD void wk__dq_q4_0(const wk_block_q4_0 *x, float *y) {
    float d = wk__q_f16(x->d);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((x->qs[j] & 0xf) - 8) * d;
        y[j + 16] = (float)((x->qs[j] >> 4) - 8) * d;
    }
}

WK_HD void wk__dq_q4_1(const wk_block_q4_1 *x, float *y) {
    float d = wk__q_f16(x->d), m = wk__q_f16(x->m);
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(x->qs[j] & 0xf) * d + m;
        y[j + 16] = (float)(x->qs[j] >> 4) * d + m;
    }
}

WK_HD void wk__dq_q5_0(const wk_block_q5_0 *x, float *y) {
    float d = wk__q_f16(x->d);
    uint32_t qh = wk__q_le32(x->qh);
    for (int j = 0; j < 16; j++) {
        int h0 = (int)((qh >> j) << 4) & 0x10, h1 = (int)(qh >> (j + 12)) & 0x10;
        y[j] = (float)(((x->qs[j] & 0xf) | h0) - 16) * d;
        y[j + 16] = (float)(((x->qs[j] >> 4) | h1) - 16) * d;
    }
}

WK_HD void wk__dq_q5_1(const wk_block_q5_1 *x, float *y) {
    float d = wk__q_f16(x->d), m = wk__q_f16(x->m);
    uint32_t qh = wk__q_le32(x->qh);
    for (int j = 0; j < 16; j++) {
        int h0 = (int)((qh >> j) << 4) & 0x10, h1 = (int)(qh >> (j + 12)) & 0x10;
        y[j] = (float)((x->qs[j] & 0xf) | h0) * d + m;
        y[j + 16] = (float)((x->qs[j] >> 4) | h1) * d + m;
    }
}

WK_HD void wk__dq_q8_0(const wk_block_q8_0 *x, float *y) {
    float d = wk__q_f16(x->d);
    for (int j = 0; j < 32; j++) y[j] = (float)x->qs[j] * d;
}

WK_HD void wk__dq_q8_1(const wk_block_q8_1 *x, float *y) {
    float d = wk__q_f16(x->d);
    for (int j = 0; j < 32; j++) y[j] = (float)x->qs[j] * d;
}

WK_HD void wk__dq_q2_K(const wk_block_q2_K *x, float *y) {
    float d = wk__q_f16(x->d), dmin = wk__q_f16(x->dmin);
    const uint8_t *q = x->qs;
    int is = 0;
    for (int n = 0; n < WK_QK_K; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; half++) {
                uint8_t sc = x->scales[is++];
                float dl = d * (float)(sc & 0xf), ml = dmin * (float)(sc >> 4);
                for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[l + 16 * half] >> shift) & 3) - ml;
            }
        }
        q += 32;
    }
}

/* The 16 6-bit sub-block scales of q3_K, unpacked from their 12 bytes. */
WK_HD void wk__q3k_scales(const uint8_t *s, int8_t *out) {
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
        int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

WK_HD void wk__dq_q3_K(const wk_block_q3_K *x, float *y) {
    float d = wk__q_f16(x->d);
    int8_t sc[16];
    wk__q3k_scales(x->scales, sc);
    const uint8_t *q = x->qs;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < WK_QK_K; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; half++) {
                float dl = d * (float)sc[is++];
                for (int l = 0; l < 16; l++) {
                    int i = l + 16 * half;
                    int v = ((q[i] >> shift) & 3) - ((x->hmask[i] & m) ? 0 : 4);
                    *y++ = dl * (float)v;
                }
            }
            m = (uint8_t)(m << 1);
        }
        q += 32;
    }
}

/* Scale and min j (0..7) of the 12 packed bytes of q4_K / q5_K. */
WK_HD void wk__q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        *mn = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

WK_HD void wk__dq_q4_K(const wk_block_q4_K *x, float *y) {
    float d = wk__q_f16(x->d), dmin = wk__q_f16(x->dmin);
    const uint8_t *q = x->qs;
    for (int is = 0; is < 8; is += 2) {
        uint8_t s1, m1, s2, m2;
        wk__q4k_scale_min(is, x->scales, &s1, &m1);
        wk__q4k_scale_min(is + 1, x->scales, &s2, &m2);
        float d1 = d * (float)s1, dm1 = dmin * (float)m1, d2 = d * (float)s2, dm2 = dmin * (float)m2;
        for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xf) - dm1;
        for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - dm2;
        q += 32;
    }
}

WK_HD void wk__dq_q5_K(const wk_block_q5_K *x, float *y) {
    float d = wk__q_f16(x->d), dmin = wk__q_f16(x->dmin);
    const uint8_t *ql = x->qs;
    uint8_t u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2) {
        uint8_t s1, m1, s2, m2;
        wk__q4k_scale_min(is, x->scales, &s1, &m1);
        wk__q4k_scale_min(is + 1, x->scales, &s2, &m2);
        float d1 = d * (float)s1, dm1 = dmin * (float)m1, d2 = d * (float)s2, dm2 = dmin * (float)m2;
        for (int l = 0; l < 32; l++) *y++ = d1 * (float)((ql[l] & 0xf) + ((x->qh[l] & u1) ? 16 : 0)) - dm1;
        for (int l = 0; l < 32; l++) *y++ = d2 * (float)((ql[l] >> 4) + ((x->qh[l] & u2) ? 16 : 0)) - dm2;
        ql += 32;
        u1 = (uint8_t)(u1 << 2);
        u2 = (uint8_t)(u2 << 2);
    }
}

WK_HD void wk__dq_q6_K(const wk_block_q6_K *x, float *y) {
    float d = wk__q_f16(x->d);
    const uint8_t *ql = x->ql, *qh = x->qh;
    const int8_t *sc = x->scales;
    for (int n = 0; n < WK_QK_K; n += 128) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

WK_HD void wk__dq_q8_K(const wk_block_q8_K *x, float *y) {
    for (int j = 0; j < WK_QK_K; j++) y[j] = x->d * (float)x->qs[j];
}

WK_HD void wk__dq_iq4_nl(const wk_block_iq4_nl *x, float *y) {
    float d = wk__q_f16(x->d);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)wk_iq4nl_values[x->qs[j] & 0xf];
        y[j + 16] = d * (float)wk_iq4nl_values[x->qs[j] >> 4];
    }
}

WK_HD void wk__dq_iq4_xs(const wk_block_iq4_xs *x, float *y) {
    float d = wk__q_f16(x->d);
    for (int ib = 0; ib < 8; ib++) {
        int ls = ((x->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((x->scales_h >> (2 * ib)) & 3) << 4);
        float dl = d * (float)(ls - 32);
        const uint8_t *qs = x->qs + 16 * ib;
        for (int j = 0; j < 16; j++) {
            y[j] = dl * (float)wk_iq4nl_values[qs[j] & 0xf];
            y[j + 16] = dl * (float)wk_iq4nl_values[qs[j] >> 4];
        }
        y += 32;
    }
}

#endif
