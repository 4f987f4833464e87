/* Prefill GEMM for the 32-element block types (q4_0 q4_1 q5_0 q5_1 q8_0
 * q8_1 iq4_nl) on AVX512-VNNI: a 16 x NR register tile of f32 accumulators
 * over the K blocks, 64 byte products per vpdpbusd.
 *
 * Lanes are 16 ACTIVATION rows. The quantized activations (wk_qa32 rows,
 * made once per call) are repacked once per call into panels of 16 rows
 * where each 4-byte group of a block sits beside the same group of the
 * other 15 rows, stored as u8 (a + 128, vpdpbusd's unsigned operand). The
 * weights need no transpose: each thread unpacks its panel of QG_NC weight
 * rows to signed bytes (the offsets of q4_0 / q5_0 applied, iq4_nl looked
 * up) plus per-block scales, and the micro-kernel broadcasts 4 weight bytes
 * at a time against the activation panel. sum (a + 128) * w is corrected by
 * 128 * sum w, precomputed per weight block (the accumulator starts there).
 * Packed panels live only during the call (the activation panel is a few
 * hundred KB and stays in L2 beside the weight panel). */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/quantized/qdot.h"
#include "cpu/runtime/threadpool.h"
#include "quant/dequant_block.h"

#define QG_MP 16 /* activation rows per panel (zmm lanes) */
#define QG_NR 8  /* weight rows per register tile */
#define QG_NC 64 /* weight rows unpacked per panel */

typedef struct {
    float d[QG_MP], s[QG_MP];
    uint8_t q[WK_QK / 4][QG_MP][4];
} qg_ablk;

/* one weight row unpacked: signed values, 128 * sum, scale, min */
typedef struct {
    int8_t *q; /* nb * 32 */
    int32_t *corr;
    float *d, *m;
} qg_wrow;

static inline int32_t sum_s8_32(__m256i v) { /* sum of 32 signed bytes */
    __m256i s = _mm256_sad_epu8(_mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256());
    __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
    return (int32_t)_mm_cvtsi128_si64(t) - 32 * 128;
}

static inline __m256i nib32(const uint8_t *qs) {
    __m128i raw = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(0xf);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
}

static void unpack_row(wk_dtype wdt, const uint8_t *w, int64_t nb, int64_t j, qg_wrow *o) {
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)wk_iq4nl_values));
    for (int64_t b = 0; b < nb; b++) {
        int8_t *q = o->q + (j * nb + b) * WK_QK;
        int64_t i = j * nb + b;
        __m256i v;
        float m = 0;
        switch (wdt) {
        case WK_Q4_0: {
            const wk_block_q4_0 *x = (const wk_block_q4_0 *)w + b;
            v = _mm256_sub_epi8(nib32(x->qs), _mm256_set1_epi8(8));
            o->d[i] = wk__q_f16(x->d);
            break;
        }
        case WK_Q4_1: {
            const wk_block_q4_1 *x = (const wk_block_q4_1 *)w + b;
            v = nib32(x->qs);
            o->d[i] = wk__q_f16(x->d);
            m = wk__q_f16(x->m);
            break;
        }
        case WK_Q8_0: {
            const wk_block_q8_0 *x = (const wk_block_q8_0 *)w + b;
            v = _mm256_loadu_si256((const __m256i *)x->qs);
            o->d[i] = wk__q_f16(x->d);
            break;
        }
        case WK_Q8_1: {
            const wk_block_q8_1 *x = (const wk_block_q8_1 *)w + b;
            v = _mm256_loadu_si256((const __m256i *)x->qs);
            o->d[i] = wk__q_f16(x->d);
            break;
        }
        case WK_IQ4_NL: {
            const wk_block_iq4_nl *x = (const wk_block_iq4_nl *)w + b;
            v = _mm256_shuffle_epi8(tbl, nib32(x->qs));
            o->d[i] = wk__q_f16(x->d);
            break;
        }
        case WK_Q5_0: case WK_Q5_1: {
            /* the fifth bits: bit j of qh -> element j */
            const uint8_t *qs, *qhb;
            int off;
            if (wdt == WK_Q5_0) {
                const wk_block_q5_0 *x = (const wk_block_q5_0 *)w + b;
                qs = x->qs, qhb = x->qh, off = 16;
                o->d[i] = wk__q_f16(x->d);
            } else {
                const wk_block_q5_1 *x = (const wk_block_q5_1 *)w + b;
                qs = x->qs, qhb = x->qh, off = 0;
                o->d[i] = wk__q_f16(x->d);
                m = wk__q_f16(x->m);
            }
            __m256i hb = _mm256_movm_epi8(wk__q_le32(qhb));
            v = _mm256_or_si256(nib32(qs), _mm256_and_si256(hb, _mm256_set1_epi8(0x10)));
            v = _mm256_sub_epi8(v, _mm256_set1_epi8((char)off));
            break;
        }
        case WK_Q2_K: case WK_Q3_K: case WK_Q4_K: case WK_Q5_K: case WK_Q6_K: case WK_Q8_K: case WK_IQ4_XS:
        case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
        case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
            v = _mm256_setzero_si256();
            o->d[i] = 0;
            break;
        }
        _mm256_storeu_si256((__m256i *)q, v);
        o->corr[i] = 128 * sum_s8_32(v);
        o->m[i] = m;
    }
}

bool wk__qgemm32_supported(wk_dtype wdt) {
    switch (wdt) {
    case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0: case WK_Q8_1: case WK_IQ4_NL:
        return true;
    case WK_Q2_K: case WK_Q3_K: case WK_Q4_K: case WK_Q5_K: case WK_Q6_K: case WK_Q8_K: case WK_IQ4_XS:
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    return false;
}

/* The micro-kernel: c[r * ldc + j] = sum over blocks for activation rows
 * r < mvalid of the panel ap and weight rows j < NR of wr (from row j0). */
static inline __attribute__((always_inline)) void tile(int64_t nb, const qg_ablk *ap, const qg_wrow *wr, int64_t j0,
                                                       const int NR, bool has_m, float *c, int64_t ldc, int mvalid) {
    __m512 acc[QG_NR];
    for (int j = 0; j < NR; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const qg_ablk *A = ap + b;
        __m512i a[8];
        for (int g = 0; g < 8; g++) a[g] = _mm512_loadu_si512(A->q[g]);
        __m512 da = _mm512_loadu_ps(A->d), sa = has_m ? _mm512_loadu_ps(A->s) : _mm512_setzero_ps();
        for (int j = 0; j < NR; j++) {
            int64_t i = (j0 + j) * nb + b;
            const int8_t *w = wr->q + i * WK_QK;
            __m512i s = _mm512_set1_epi32(-wr->corr[i]);
            for (int g = 0; g < 8; g++) {
                int32_t w4;
                memcpy(&w4, w + 4 * g, 4);
                s = _mm512_dpbusd_epi32(s, a[g], _mm512_set1_epi32(w4));
            }
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(da, _mm512_set1_ps(wr->d[i])), acc[j]);
            if (has_m) acc[j] = _mm512_fmadd_ps(sa, _mm512_set1_ps(wr->m[i]), acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) {
        float t[QG_MP];
        _mm512_storeu_ps(t, acc[j]);
        for (int r = 0; r < mvalid; r++) c[r * ldc + j] = t[r];
    }
}

static void tile_n(int64_t nb, const qg_ablk *ap, const qg_wrow *wr, int64_t j0, int nr, bool has_m, float *c,
                   int64_t ldc, int mvalid) {
#define QG_T(N)                                                      \
    case N:                                                          \
        if (has_m) tile(nb, ap, wr, j0, N, true, c, ldc, mvalid);    \
        else tile(nb, ap, wr, j0, N, false, c, ldc, mvalid);         \
        break;
    switch (nr) {
        QG_T(1) QG_T(2) QG_T(3) QG_T(4) QG_T(5) QG_T(6) QG_T(7)
    default:
        if (has_m) tile(nb, ap, wr, j0, QG_NR, true, c, ldc, mvalid);
        else tile(nb, ap, wr, j0, QG_NR, false, c, ldc, mvalid);
        break;
    }
#undef QG_T
}

typedef struct {
    wk_dtype wdt;
    int64_t m, n, nb;
    const uint8_t *w;
    size_t wrs;
    const qg_ablk *ap; /* panels of nb blocks */
    float *out;
    bool has_m;
    _Atomic int failed;
} qg_ctx;

static void qg_slice(void *vc, int64_t b0, int64_t e0, int tid) {
    (void)tid;
    qg_ctx *c = vc;
    int64_t nb = c->nb, np = (c->m + QG_MP - 1) / QG_MP;
    qg_wrow wr;
    size_t cells = (size_t)(QG_NC * (nb ? nb : 1));
    wr.q = malloc(cells * WK_QK);
    wr.corr = malloc(cells * sizeof(int32_t));
    wr.d = malloc(cells * sizeof(float));
    wr.m = malloc(cells * sizeof(float));
    if (!wr.q || !wr.corr || !wr.d || !wr.m) {
        c->failed = 1;
    } else {
        for (int64_t n0 = b0; n0 < e0; n0 += QG_NC) {
            int64_t nc = e0 - n0 < QG_NC ? e0 - n0 : QG_NC;
            for (int64_t j = 0; j < nc; j++) unpack_row(c->wdt, c->w + (size_t)(n0 + j) * c->wrs, nb, j, &wr);
            for (int64_t p = 0; p < np; p++) {
                int mvalid = (int)(c->m - p * QG_MP < QG_MP ? c->m - p * QG_MP : QG_MP);
                const qg_ablk *ap = c->ap + p * nb;
                for (int64_t j0 = 0; j0 < nc; j0 += QG_NR) {
                    int nr = (int)(nc - j0 < QG_NR ? nc - j0 : QG_NR);
                    tile_n(nb, ap, &wr, j0, nr, c->has_m, c->out + p * QG_MP * c->n + n0 + j0, c->n, mvalid);
                }
            }
        }
    }
    free(wr.q);
    free(wr.corr);
    free(wr.d);
    free(wr.m);
}

bool wk__qgemm32_avx512vnni(wk_dtype wdt, int64_t m, int64_t n, int64_t nb, const uint8_t *w, size_t wrs,
                            const uint8_t *A, size_t as, float *out) {
    int64_t np = (m + QG_MP - 1) / QG_MP;
    qg_ablk *ap = malloc(sizeof(qg_ablk) * (size_t)(np * (nb ? nb : 1)));
    if (!ap) return false;
    /* repack the activation rows: 16 rows per panel, 4-byte groups side by
     * side, a + 128; missing rows are zeros (d = 0) */
    for (int64_t p = 0; p < np; p++)
        for (int64_t b = 0; b < nb; b++) {
            qg_ablk *o = &ap[p * nb + b];
            for (int r = 0; r < QG_MP; r++) {
                int64_t row = p * QG_MP + r;
                if (row < m) {
                    const wk_qa32 *x = (const wk_qa32 *)(A + (size_t)row * as) + b;
                    o->d[r] = x->d;
                    o->s[r] = x->s;
                    for (int g = 0; g < 8; g++)
                        for (int t = 0; t < 4; t++) o->q[g][r][t] = (uint8_t)(x->qs[4 * g + t] ^ 0x80);
                } else {
                    o->d[r] = o->s[r] = 0;
                    for (int g = 0; g < 8; g++) memset(o->q[g][r], 0x80, 4);
                }
            }
        }
    qg_ctx c = {wdt, m, n, nb, w, wrs, ap, out, wdt == WK_Q4_1 || wdt == WK_Q5_1, 0};
    wk__parallel_for(n, QG_NC, 0, qg_slice, &c);
    free(ap);
    return !c.failed;
}
