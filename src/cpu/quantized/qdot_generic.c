/* Portable quantized dot products, every weight block type (qdot.h).
 * Each block is unpacked once into small integers plus float scales, then
 * dotted in integers with each activation row:
 *   32-element types:  w = d * q + m           -> d*da*sum(q*a) + m*s_a
 *   256-element types: w = d*sc[g]*q - dmin*mn[g] per 16-element group g
 *                      -> d*da*sum_g sc[g]*sum(q*a) - dmin*da*sum_g mn[g]*bsum[g]
 * The integer sums are exact, so every SIMD kernel whose integer sums agree
 * differs from these only in float summation order. */
#include "cpu/quantized/qdot.h"
#include "quant/dequant_block.h"

/* ---- 32-element types: q[32] signed values, w = d * q + m ---- */

typedef struct {
    int8_t q[WK_QK];
    float d, m;
} un32;

static void un_q4_0(const void *p, un32 *u) {
    const wk_block_q4_0 *x = p;
    u->d = wk__q_f16(x->d);
    u->m = 0;
    for (int j = 0; j < 16; j++) {
        u->q[j] = (int8_t)((x->qs[j] & 0xf) - 8);
        u->q[j + 16] = (int8_t)((x->qs[j] >> 4) - 8);
    }
}
static void un_q4_1(const void *p, un32 *u) {
    const wk_block_q4_1 *x = p;
    u->d = wk__q_f16(x->d);
    u->m = wk__q_f16(x->m);
    for (int j = 0; j < 16; j++) {
        u->q[j] = (int8_t)(x->qs[j] & 0xf);
        u->q[j + 16] = (int8_t)(x->qs[j] >> 4);
    }
}
static void un_q5(const uint8_t *qs, const uint8_t *qhb, int off, un32 *u) {
    uint32_t qh = wk__q_le32(qhb);
    for (int j = 0; j < 16; j++) {
        int h0 = (int)((qh >> j) << 4) & 0x10, h1 = (int)(qh >> (j + 12)) & 0x10;
        u->q[j] = (int8_t)(((qs[j] & 0xf) | h0) - off);
        u->q[j + 16] = (int8_t)(((qs[j] >> 4) | h1) - off);
    }
}
static void un_q5_0(const void *p, un32 *u) {
    const wk_block_q5_0 *x = p;
    u->d = wk__q_f16(x->d);
    u->m = 0;
    un_q5(x->qs, x->qh, 16, u);
}
static void un_q5_1(const void *p, un32 *u) {
    const wk_block_q5_1 *x = p;
    u->d = wk__q_f16(x->d);
    u->m = wk__q_f16(x->m);
    un_q5(x->qs, x->qh, 0, u);
}
static void un_q8_0(const void *p, un32 *u) {
    const wk_block_q8_0 *x = p;
    u->d = wk__q_f16(x->d);
    u->m = 0;
    for (int j = 0; j < 32; j++) u->q[j] = x->qs[j];
}
static void un_q8_1(const void *p, un32 *u) { /* s is redundant for a weight: d * q */
    const wk_block_q8_1 *x = p;
    u->d = wk__q_f16(x->d);
    u->m = 0;
    for (int j = 0; j < 32; j++) u->q[j] = x->qs[j];
}
static void un_iq4_nl(const void *p, un32 *u) {
    const wk_block_iq4_nl *x = p;
    u->d = wk__q_f16(x->d);
    u->m = 0;
    for (int j = 0; j < 16; j++) {
        u->q[j] = wk_iq4nl_values[x->qs[j] & 0xf];
        u->q[j + 16] = wk_iq4nl_values[x->qs[j] >> 4];
    }
}

static inline void dot32(int64_t nb, const uint8_t *w, size_t bb, void (*un)(const void *, un32 *), const void *a,
                         size_t as, int mr, float *out, int64_t ldo) {
    float acc[WK_QDOT_MR] = {0};
    un32 u;
    for (int64_t b = 0; b < nb; b++) {
        un(w + (size_t)b * bb, &u);
        for (int i = 0; i < mr; i++) {
            const wk_qa32 *ab = (const wk_qa32 *)((const uint8_t *)a + (size_t)i * as) + b;
            int32_t s = 0;
            for (int j = 0; j < WK_QK; j++) s += (int32_t)u.q[j] * ab->qs[j];
            acc[i] += u.d * ab->d * (float)s + u.m * ab->s;
        }
    }
    for (int i = 0; i < mr; i++) out[i * ldo] = acc[i];
}

#define DOT32_FN(name, T)                                                                                      \
    static void qd_##name(int64_t nb, const void *w, const void *a, size_t as, int mr, float *out, int64_t ldo) { \
        dot32(nb, w, sizeof(T), un_##name, a, as, mr, out, ldo);                                              \
    }
DOT32_FN(q4_0, wk_block_q4_0)
DOT32_FN(q4_1, wk_block_q4_1)
DOT32_FN(q5_0, wk_block_q5_0)
DOT32_FN(q5_1, wk_block_q5_1)
DOT32_FN(q8_0, wk_block_q8_0)
DOT32_FN(q8_1, wk_block_q8_1)
DOT32_FN(iq4_nl, wk_block_iq4_nl)

/* ---- 256-element types: per 16-group integer scale and min ---- */

typedef struct {
    int8_t q[WK_QK_K];
    int16_t sc[16], mn[16];
    float d, dmin;
} un256;

static void un_q2_K(const void *p, un256 *u) {
    const wk_block_q2_K *x = p;
    u->d = wk__q_f16(x->d);
    u->dmin = wk__q_f16(x->dmin);
    for (int g = 0; g < 16; g++) {
        u->sc[g] = (int16_t)(x->scales[g] & 0xf);
        u->mn[g] = (int16_t)(x->scales[g] >> 4);
    }
    for (int c = 0; c < 2; c++)
        for (int s = 0; s < 4; s++)
            for (int h = 0; h < 2; h++)
                for (int l = 0; l < 16; l++)
                    u->q[128 * c + 32 * s + 16 * h + l] = (int8_t)((x->qs[32 * c + 16 * h + l] >> (2 * s)) & 3);
}
static void un_q3_K(const void *p, un256 *u) {
    const wk_block_q3_K *x = p;
    int8_t sc[16];
    wk__q3k_scales(x->scales, sc);
    u->d = wk__q_f16(x->d);
    u->dmin = 0;
    for (int g = 0; g < 16; g++) {
        u->sc[g] = sc[g];
        u->mn[g] = 0;
    }
    for (int c = 0; c < 2; c++)
        for (int s = 0; s < 4; s++) {
            uint8_t m = (uint8_t)(1u << (4 * c + s));
            for (int i = 0; i < 32; i++)
                u->q[128 * c + 32 * s + i] =
                    (int8_t)(((x->qs[32 * c + i] >> (2 * s)) & 3) - ((x->hmask[i] & m) ? 0 : 4));
        }
}
static void un_q45_K_scales(const uint8_t *scales, un256 *u) {
    for (int j = 0; j < 8; j++) {
        uint8_t s, m;
        wk__q4k_scale_min(j, scales, &s, &m);
        u->sc[2 * j] = u->sc[2 * j + 1] = s;
        u->mn[2 * j] = u->mn[2 * j + 1] = m;
    }
}
static void un_q4_K(const void *p, un256 *u) {
    const wk_block_q4_K *x = p;
    u->d = wk__q_f16(x->d);
    u->dmin = wk__q_f16(x->dmin);
    un_q45_K_scales(x->scales, u);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            u->q[64 * c + l] = (int8_t)(x->qs[32 * c + l] & 0xf);
            u->q[64 * c + 32 + l] = (int8_t)(x->qs[32 * c + l] >> 4);
        }
}
static void un_q5_K(const void *p, un256 *u) {
    const wk_block_q5_K *x = p;
    u->d = wk__q_f16(x->d);
    u->dmin = wk__q_f16(x->dmin);
    un_q45_K_scales(x->scales, u);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int h1 = (x->qh[l] >> (2 * c)) & 1, h2 = (x->qh[l] >> (2 * c + 1)) & 1;
            u->q[64 * c + l] = (int8_t)((x->qs[32 * c + l] & 0xf) | (h1 << 4));
            u->q[64 * c + 32 + l] = (int8_t)((x->qs[32 * c + l] >> 4) | (h2 << 4));
        }
}
static void un_q6_K(const void *p, un256 *u) {
    const wk_block_q6_K *x = p;
    u->d = wk__q_f16(x->d);
    u->dmin = 0;
    for (int g = 0; g < 16; g++) {
        u->sc[g] = x->scales[g];
        u->mn[g] = 0;
    }
    for (int c = 0; c < 2; c++) {
        const uint8_t *ql = x->ql + 64 * c, *qh = x->qh + 32 * c;
        int8_t *q = u->q + 128 * c;
        for (int l = 0; l < 32; l++) {
            q[l] = (int8_t)(((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = (int8_t)(((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}
static void un_q8_K(const void *p, un256 *u) {
    const wk_block_q8_K *x = p;
    u->d = x->d;
    u->dmin = 0;
    for (int g = 0; g < 16; g++) {
        u->sc[g] = 1;
        u->mn[g] = 0;
    }
    for (int j = 0; j < WK_QK_K; j++) u->q[j] = x->qs[j];
}
static void un_iq4_xs(const void *p, un256 *u) {
    const wk_block_iq4_xs *x = p;
    u->d = wk__q_f16(x->d);
    u->dmin = 0;
    for (int ib = 0; ib < 8; ib++) {
        int ls = ((x->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((x->scales_h >> (2 * ib)) & 3) << 4);
        u->sc[2 * ib] = u->sc[2 * ib + 1] = (int16_t)(ls - 32);
        u->mn[2 * ib] = u->mn[2 * ib + 1] = 0;
        const uint8_t *qs = x->qs + 16 * ib;
        for (int j = 0; j < 16; j++) {
            u->q[32 * ib + j] = wk_iq4nl_values[qs[j] & 0xf];
            u->q[32 * ib + j + 16] = wk_iq4nl_values[qs[j] >> 4];
        }
    }
}

static inline void dot256(int64_t nb, const uint8_t *w, size_t bb, void (*un)(const void *, un256 *),
                          const void *a, size_t as, int mr, float *out, int64_t ldo) {
    float acc[WK_QDOT_MR] = {0};
    un256 u;
    for (int64_t b = 0; b < nb; b++) {
        un(w + (size_t)b * bb, &u);
        for (int i = 0; i < mr; i++) {
            const wk_block_q8_K *ab = (const wk_block_q8_K *)((const uint8_t *)a + (size_t)i * as) + b;
            int32_t s = 0, smin = 0;
            for (int g = 0; g < 16; g++) {
                int32_t sg = 0;
                for (int j = 0; j < 16; j++) sg += (int32_t)u.q[16 * g + j] * ab->qs[16 * g + j];
                s += sg * u.sc[g];
                smin += (int32_t)u.mn[g] * ab->bsums[g];
            }
            acc[i] += u.d * ab->d * (float)s - u.dmin * ab->d * (float)smin;
        }
    }
    for (int i = 0; i < mr; i++) out[i * ldo] = acc[i];
}

#define DOT256_FN(name, T)                                                                                     \
    static void qd_##name(int64_t nb, const void *w, const void *a, size_t as, int mr, float *out, int64_t ldo) { \
        dot256(nb, w, sizeof(T), un_##name, a, as, mr, out, ldo);                                             \
    }
DOT256_FN(q2_K, wk_block_q2_K)
DOT256_FN(q3_K, wk_block_q3_K)
DOT256_FN(q4_K, wk_block_q4_K)
DOT256_FN(q5_K, wk_block_q5_K)
DOT256_FN(q6_K, wk_block_q6_K)
DOT256_FN(q8_K, wk_block_q8_K)
DOT256_FN(iq4_xs, wk_block_iq4_xs)

wk_qdot_fn wk__qdot_generic(wk_dtype wdt) {
    switch (wdt) {
    case WK_Q4_0: return qd_q4_0;
    case WK_Q4_1: return qd_q4_1;
    case WK_Q5_0: return qd_q5_0;
    case WK_Q5_1: return qd_q5_1;
    case WK_Q8_0: return qd_q8_0;
    case WK_Q8_1: return qd_q8_1;
    case WK_IQ4_NL: return qd_iq4_nl;
    case WK_Q2_K: return qd_q2_K;
    case WK_Q3_K: return qd_q3_K;
    case WK_Q4_K: return qd_q4_K;
    case WK_Q5_K: return qd_q5_K;
    case WK_Q6_K: return qd_q6_K;
    case WK_Q8_K: return qd_q8_K;
    case WK_IQ4_XS: return qd_iq4_xs;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    return NULL;
}

/* ---- f16 / bf16 weights: widen a chunk of the row, dot with each x row ---- */

void wk__hdot_generic(int64_t k, const uint16_t *w, bool f16, const float *x, int64_t xs, int mr, float *out,
                      int64_t ldo) {
    float acc[WK_QDOT_MR] = {0}, wf[256];
    for (int64_t p0 = 0; p0 < k; p0 += 256) {
        int64_t n = k - p0 < 256 ? k - p0 : 256;
        for (int64_t p = 0; p < n; p++) wf[p] = f16 ? wk_f16_to_f32(w[p0 + p]) : wk_bf16_to_f32(w[p0 + p]);
        for (int i = 0; i < mr; i++) {
            const float *xi = x + i * xs + p0;
            float s = 0;
            for (int64_t p = 0; p < n; p++) s += wf[p] * xi[p];
            acc[i] += s;
        }
    }
    for (int i = 0; i < mr; i++) out[i * ldo] = acc[i];
}
