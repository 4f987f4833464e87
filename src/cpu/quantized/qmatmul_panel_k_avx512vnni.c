/* Prefill GEMM for the K block types q4_K, q5_K and q6_K on AVX512-VNNI:
 * the 16 x NR zmm register tile of qmatmul_panel_avx512vnni.c, adapted to
 * 256-element super-blocks whose sub-blocks carry integer scales.
 *
 * Lanes are 16 ACTIVATION rows. The q8_K activation rows (made once per
 * call) are repacked once per call into panels of 16 rows, each 4-byte
 * group beside the same group of the other 15 rows, as u8 (a + 128, the
 * unsigned operand of vpdpbusd), plus each row's d and its 8 sub-block
 * sums (of 32, from bsums) as int16 pairs for vpdpwssd. Each thread
 * unpacks its panel of QK_NC weight rows to signed bytes (q6_K's -32
 * applied) with the integer sub-block scales, the mins as int16 pairs and
 * the correction 128 * sum_g sc_g * sum(group g's values), which starts
 * the block's integer accumulator. Per 32 values the tile runs 8 vpdpbusd
 * per weight row and multiplies the group sums by their scale (vpmulld);
 * per super-block the integer sum meets d_w * d_a in f32 and the mins
 * (q4_K / q5_K) come in as dmin * d_a * sum_j m_j * bsum_j. All integer
 * sums fit int32 (|sum| < 256 * 255 * 32 * 128). */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/quantized/qdot.h"
#include "cpu/runtime/threadpool.h"
#include "quant/dequant_block.h"

#define QK_MP 16 /* activation rows per panel (zmm lanes) */
#define QK_NR 8  /* weight rows per register tile */
#define QK_NC 64 /* weight rows unpacked per panel */
#define QK_NG 16 /* scale groups per super-block, at most (q6_K) */

typedef struct {
    float d[QK_MP];
    int16_t bs[4][QK_MP][2];          /* sub-block sums, pair t = sub-blocks 2t, 2t + 1 */
    uint8_t q[WK_QK_K / 4][QK_MP][4]; /* a + 128 */
} qk_ablk;

/* weight rows unpacked: cell i = row * nb + block */
typedef struct {
    int8_t *q;     /* 256 per cell */
    int32_t *sc;   /* QK_NG per cell: group scales (q4_K / q5_K: 8 of 32) */
    int32_t *mn;   /* 4 per cell: mins as int16 pairs (q4_K / q5_K) */
    int32_t *corr; /* 128 * sum_g sc_g * sum of group g's values */
    float *d, *dmin;
} qk_wrow;

/* q4_K / q5_K: the 8 6-bit scales (bytes 0..7 of sm) and mins (8..15) out
 * of 12 bytes, 4 at a time: bytes 0..3 hold scales / mins 0..3 in their low
 * 6 bits and the top 2 bits of 4..7, bytes 8..11 the low nibbles of 4..7 */
static void k_scales(const uint8_t *s12, uint8_t sm[16]) {
    uint32_t u[4];
    memcpy(u, s12, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    uint32_t mins_lo = u[1] & 0x3f3f3f3fu;
    u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    u[2] = mins_lo;
    u[0] &= 0x3f3f3f3fu;
    memcpy(sm, u, 16);
}

static void unpack_q45(const uint8_t *blk, bool q5, int64_t i, qk_wrow *o) {
    const wk_block_q4_K *x = (const wk_block_q4_K *)blk;
    const wk_block_q5_K *x5 = (const wk_block_q5_K *)blk;
    const uint8_t *qs = q5 ? x5->qs : x->qs;
    const __m256i m4 = _mm256_set1_epi8(0xf), s16v = _mm256_set1_epi8(0x10);
    __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)x5->qh) : _mm256_setzero_si256();
    uint8_t sm[16], *sc = sm;
    k_scales(x->scales, sm);
    int8_t *q = o->q + i * WK_QK_K;
    /* 128 * sum_j sc_j * sum(sub-block j): pair sums (maddubs with ones)
     * times the scale (madd), reduced once at the end */
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i cv = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        if (q5) { /* bits 2c and 2c + 1 of qh[l]: the fifth bits of the two sub-blocks */
            __m256i b1 = _mm256_set1_epi8((char)(1 << (2 * c))), b2 = _mm256_set1_epi8((char)(2 << (2 * c)));
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), s16v));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b2), b2), s16v));
        }
        _mm256_storeu_si256((__m256i *)(q + 64 * c), lo);
        _mm256_storeu_si256((__m256i *)(q + 64 * c + 32), hi);
        cv = _mm256_add_epi32(cv, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ones), _mm256_set1_epi16(sc[2 * c])));
        cv = _mm256_add_epi32(cv,
                              _mm256_madd_epi16(_mm256_maddubs_epi16(hi, ones), _mm256_set1_epi16(sc[2 * c + 1])));
    }
    __m128i c4 = _mm_add_epi32(_mm256_castsi256_si128(cv), _mm256_extracti128_si256(cv, 1));
    c4 = _mm_add_epi32(c4, _mm_shuffle_epi32(c4, 0x4e));
    c4 = _mm_add_epi32(c4, _mm_shuffle_epi32(c4, 0xb1));
    int32_t corr = _mm_cvtsi128_si32(c4);
    /* scales 0..7 as int32 (8..15 unused for these types); mins as int16
     * pairs: dword t = (m_2t, m_2t+1), vpdpwssd's layout */
    __m128i smv = _mm_loadu_si128((const __m128i *)sm);
    _mm256_storeu_si256((__m256i *)(o->sc + i * QK_NG), _mm256_cvtepu8_epi32(smv));
    _mm_storeu_si128((__m128i *)(o->mn + i * 4), _mm_cvtepu8_epi16(_mm_srli_si128(smv, 8)));
    o->corr[i] = 128 * corr;
    o->d[i] = wk__q_f16(x->d);
    o->dmin[i] = wk__q_f16(x->dmin);
}

static void unpack_q6(const uint8_t *blk, int64_t i, qk_wrow *o) {
    const wk_block_q6_K *x = (const wk_block_q6_K *)blk;
    const __m256i m4 = _mm256_set1_epi8(0xf), m2 = _mm256_set1_epi8(3), o32 = _mm256_set1_epi8(32);
    int8_t *q = o->q + i * WK_QK_K;
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i cv = _mm256_setzero_si256();
    for (int c = 0; c < 2; c++) {
        __m256i l0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * c));
        __m256i l1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * c + 32));
        __m256i h = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * c));
        __m256i v[4];
        v[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
        v[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
        v[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
        v[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
        for (int t = 0; t < 4; t++) {
            int g = 8 * c + 2 * t; /* groups g, g + 1: the two halves of v[t] */
            __m256i sv = _mm256_sub_epi8(v[t], o32);
            _mm256_storeu_si256((__m256i *)(q + 128 * c + 32 * t), sv);
            /* signed pair sums (ones as maddubs' unsigned side), times the
             * group's scale: int16 lanes 0..7 group g, 8..15 group g + 1 */
            __m256i scv = _mm256_set_m128i(_mm_set1_epi16(x->scales[g + 1]), _mm_set1_epi16(x->scales[g]));
            cv = _mm256_add_epi32(cv, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, sv), scv));
        }
    }
    __m128i c4 = _mm_add_epi32(_mm256_castsi256_si128(cv), _mm256_extracti128_si256(cv, 1));
    c4 = _mm_add_epi32(c4, _mm_shuffle_epi32(c4, 0x4e));
    c4 = _mm_add_epi32(c4, _mm_shuffle_epi32(c4, 0xb1));
    int32_t corr = _mm_cvtsi128_si32(c4);
    for (int g = 0; g < QK_NG; g++) o->sc[i * QK_NG + g] = x->scales[g];
    for (int t = 0; t < 4; t++) o->mn[i * 4 + t] = 0;
    o->corr[i] = 128 * corr;
    o->d[i] = wk__q_f16(x->d);
    o->dmin[i] = 0;
}

static void unpack_row(wk_dtype wdt, const uint8_t *w, int64_t nb, int64_t j, qk_wrow *o) {
    for (int64_t b = 0; b < nb; b++) {
        int64_t i = j * nb + b;
        switch (wdt) {
        case WK_Q4_K: unpack_q45(w + (size_t)b * sizeof(wk_block_q4_K), false, i, o); break;
        case WK_Q5_K: unpack_q45(w + (size_t)b * sizeof(wk_block_q5_K), true, i, o); break;
        case WK_Q6_K: unpack_q6(w + (size_t)b * sizeof(wk_block_q6_K), i, o); break;
        case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0: case WK_Q8_1: case WK_IQ4_NL:
        case WK_Q2_K: case WK_Q3_K: case WK_Q8_K: case WK_IQ4_XS: case WK_U8: case WK_U32: case WK_I16:
        case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32: case WK_F64: case WK_F8E4M3:
        case WK_DTYPE_COUNT:
            /* never called for these (wk__qgemmK_supported) */
            memset(o->q + i * WK_QK_K, 0, WK_QK_K);
            memset(o->sc + i * QK_NG, 0, sizeof(int32_t) * QK_NG);
            memset(o->mn + i * 4, 0, sizeof(int32_t) * 4);
            o->corr[i] = 0;
            o->d[i] = o->dmin[i] = 0;
            break;
        }
    }
}

bool wk__qgemmK_supported(wk_dtype wdt) {
    switch (wdt) {
    case WK_Q4_K: case WK_Q5_K: case WK_Q6_K:
        return true;
    case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0: case WK_Q8_1: case WK_IQ4_NL:
    case WK_Q2_K: case WK_Q3_K: case WK_Q8_K: case WK_IQ4_XS: case WK_U8: case WK_U32: case WK_I16:
    case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32: case WK_F64: case WK_F8E4M3:
    case WK_DTYPE_COUNT:
        break;
    }
    return false;
}

/* 4 weight bytes to every lane (folds into vpdpbusd's {1to16} operand) */
static inline __m512i bcast4(const int8_t *w) {
    int32_t v;
    memcpy(&v, w, 4);
    return _mm512_set1_epi32(v);
}

/* The micro-kernel: c[r * ldc + j] = sum over super-blocks for activation
 * rows r < mvalid of the panel ap and weight rows j < NR of wr (from row
 * j0). Q6: scale groups of 16 and no mins; else groups of 32 with mins. */
static inline __attribute__((always_inline)) void tile(int64_t nb, const qk_ablk *ap, const qk_wrow *wr, int64_t j0,
                                                       const int NR, const bool Q6, float *c, int64_t ldc,
                                                       int mvalid) {
    __m512 acc[QK_NR];
    for (int j = 0; j < NR; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const qk_ablk *A = ap + b;
        __m512i isum[QK_NR];
        #pragma GCC unroll 8
        for (int j = 0; j < NR; j++) isum[j] = _mm512_set1_epi32(-wr->corr[(j0 + j) * nb + b]);
        for (int ch = 0; ch < 8; ch++) { /* 32 values at a time */
            __m512i a[8];
            for (int g = 0; g < 8; g++) a[g] = _mm512_loadu_si512(A->q[8 * ch + g]);
            #pragma GCC unroll 8 /* isum[] and acc[] must stay in registers */
            for (int j = 0; j < NR; j++) {
                int64_t i = (j0 + j) * nb + b;
                const int8_t *w = wr->q + i * WK_QK_K + 32 * ch;
                if (Q6) {
                    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
                    for (int g = 0; g < 4; g++) {
                        s0 = _mm512_dpbusd_epi32(s0, a[g], bcast4(w + 4 * g));
                        s1 = _mm512_dpbusd_epi32(s1, a[g + 4], bcast4(w + 16 + 4 * g));
                    }
                    const int32_t *sc = wr->sc + i * QK_NG + 2 * ch;
                    isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(s0, _mm512_set1_epi32(sc[0])));
                    isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(s1, _mm512_set1_epi32(sc[1])));
                } else {
                    /* two chains of 4: vpdpbusd's latency hides behind 16, not 8 */
                    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
                    for (int g = 0; g < 4; g++) {
                        s0 = _mm512_dpbusd_epi32(s0, a[g], bcast4(w + 4 * g));
                        s1 = _mm512_dpbusd_epi32(s1, a[g + 4], bcast4(w + 16 + 4 * g));
                    }
                    isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(_mm512_add_epi32(s0, s1),
                                                                           _mm512_set1_epi32(wr->sc[i * QK_NG + ch])));
                }
            }
        }
        __m512 da = _mm512_loadu_ps(A->d);
        __m512i bs[4]; /* the activation sub-block sums, shared by the NR rows */
        for (int t = 0; t < 4; t++) bs[t] = Q6 ? _mm512_setzero_si512() : _mm512_loadu_si512(A->bs[t]);
        #pragma GCC unroll 8
        for (int j = 0; j < NR; j++) {
            int64_t i = (j0 + j) * nb + b;
            /* d_w * isum - dmin_w * sum_j m_j * bsum_j, then times d_a */
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[j]), _mm512_set1_ps(wr->d[i]));
            if (!Q6) {
                __m512i ms = _mm512_setzero_si512();
                for (int t = 0; t < 4; t++)
                    ms = _mm512_dpwssd_epi32(ms, bs[t], _mm512_set1_epi32(wr->mn[i * 4 + t]));
                f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_set1_ps(wr->dmin[i]), f);
            }
            acc[j] = _mm512_fmadd_ps(f, da, acc[j]);
        }
    }
    for (int j = 0; j < NR; j++) {
        float t[QK_MP];
        _mm512_storeu_ps(t, acc[j]);
        for (int r = 0; r < mvalid; r++) c[r * ldc + j] = t[r];
    }
}

static void tile_n(int64_t nb, const qk_ablk *ap, const qk_wrow *wr, int64_t j0, int nr, bool q6, float *c,
                   int64_t ldc, int mvalid) {
#define QK_T(N)                                                   \
    case N:                                                       \
        if (q6) tile(nb, ap, wr, j0, N, true, c, ldc, mvalid);    \
        else tile(nb, ap, wr, j0, N, false, c, ldc, mvalid);      \
        break;
    switch (nr) {
        QK_T(1) QK_T(2) QK_T(3) QK_T(4) QK_T(5) QK_T(6) QK_T(7)
    default:
        if (q6) tile(nb, ap, wr, j0, QK_NR, true, c, ldc, mvalid);
        else tile(nb, ap, wr, j0, QK_NR, false, c, ldc, mvalid);
        break;
    }
#undef QK_T
}

typedef struct {
    wk_dtype wdt;
    int64_t m, n, nb;
    const uint8_t *w;
    size_t wrs;
    const qk_ablk *ap; /* panels of nb super-blocks */
    float *out;
    _Atomic int failed;
} qk_ctx;

static void qk_slice(void *vc, int64_t b0, int64_t e0, int tid) {
    (void)tid;
    qk_ctx *c = vc;
    int64_t nb = c->nb, np = (c->m + QK_MP - 1) / QK_MP;
    bool q6 = c->wdt == WK_Q6_K;
    qk_wrow wr;
    size_t cells = (size_t)(QK_NC * (nb ? nb : 1));
    wr.q = malloc(cells * WK_QK_K);
    wr.sc = malloc(cells * QK_NG * sizeof(int32_t));
    wr.mn = malloc(cells * 4 * sizeof(int32_t));
    wr.corr = malloc(cells * sizeof(int32_t));
    wr.d = malloc(cells * sizeof(float));
    wr.dmin = malloc(cells * sizeof(float));
    if (!wr.q || !wr.sc || !wr.mn || !wr.corr || !wr.d || !wr.dmin) {
        c->failed = 1;
    } else {
        for (int64_t n0 = b0; n0 < e0; n0 += QK_NC) {
            int64_t nc = e0 - n0 < QK_NC ? e0 - n0 : QK_NC;
            for (int64_t j = 0; j < nc; j++) unpack_row(c->wdt, c->w + (size_t)(n0 + j) * c->wrs, nb, j, &wr);
            for (int64_t p = 0; p < np; p++) {
                int mvalid = (int)(c->m - p * QK_MP < QK_MP ? c->m - p * QK_MP : QK_MP);
                const qk_ablk *ap = c->ap + p * nb;
                for (int64_t j0 = 0; j0 < nc; j0 += QK_NR) {
                    int nr = (int)(nc - j0 < QK_NR ? nc - j0 : QK_NR);
                    tile_n(nb, ap, &wr, j0, nr, q6, c->out + p * QK_MP * c->n + n0 + j0, c->n, mvalid);
                }
            }
        }
    }
    free(wr.q);
    free(wr.sc);
    free(wr.mn);
    free(wr.corr);
    free(wr.d);
    free(wr.dmin);
}

bool wk__qgemmK_avx512vnni(wk_dtype wdt, int64_t m, int64_t n, int64_t nb, const uint8_t *w, size_t wrs,
                           const uint8_t *A, size_t as, float *out) {
    int64_t np = (m + QK_MP - 1) / QK_MP;
    qk_ablk *ap = malloc(sizeof(qk_ablk) * (size_t)(np * (nb ? nb : 1)));
    if (!ap) return false;
    /* repack the activation rows: 16 rows per panel, 4-byte groups side by
     * side, a + 128; missing rows are zeros (d = 0) */
    for (int64_t p = 0; p < np; p++)
        for (int64_t b = 0; b < nb; b++) {
            qk_ablk *o = &ap[p * nb + b];
            for (int r = 0; r < QK_MP; r++) {
                int64_t row = p * QK_MP + r;
                if (row < m) {
                    const wk_block_q8_K *x = (const wk_block_q8_K *)(A + (size_t)row * as) + b;
                    o->d[r] = x->d;
                    for (int t = 0; t < 4; t++) {
                        o->bs[t][r][0] = (int16_t)(x->bsums[4 * t] + x->bsums[4 * t + 1]);
                        o->bs[t][r][1] = (int16_t)(x->bsums[4 * t + 2] + x->bsums[4 * t + 3]);
                    }
                    for (int g = 0; g < WK_QK_K / 4; g++) { /* 4 bytes at a time, + 128 each */
                        uint32_t v;
                        memcpy(&v, x->qs + 4 * g, 4);
                        v ^= 0x80808080u;
                        memcpy(o->q[g][r], &v, 4);
                    }
                } else {
                    o->d[r] = 0;
                    for (int t = 0; t < 4; t++) o->bs[t][r][0] = o->bs[t][r][1] = 0;
                    for (int g = 0; g < WK_QK_K / 4; g++) memset(o->q[g][r], 0x80, 4);
                }
            }
        }
    qk_ctx c = {wdt, m, n, nb, w, wrs, ap, out, 0};
    wk__parallel_for(n, QK_NC, 0, qk_slice, &c);
    free(ap);
    return !c.failed;
}
