/* dtype metadata and the scalar conversions of the narrow float formats.
 * All rounding is to nearest, ties to even, done in integer arithmetic so the
 * result does not depend on the FPU's rounding mode or on F16C being there. */
#include "base/dtype.h"
#include "base/blocks.h"
#include <assert.h>
#include <math.h>
#include <string.h>

/* The one place the dtypes' memory geometry is defined. */
#define ELEM(nm, sz, fl, sg) {.name = nm, .block_elems = 1, .block_bytes = sz, .align = sz, \
                              .is_float = fl, .is_int = !(fl), .is_signed = sg}
#define BLOCK(nm, ne, nb, al) {.name = nm, .block_elems = ne, .block_bytes = nb, .align = al, \
                               .is_float = true, .is_int = false, .is_signed = true}
static const wk_dtype_info k_dtypes[] = {
    [WK_U8] = ELEM("u8", 1, false, false),   [WK_U32] = ELEM("u32", 4, false, false),
    [WK_I16] = ELEM("i16", 2, false, true),  [WK_I32] = ELEM("i32", 4, false, true),
    [WK_I64] = ELEM("i64", 8, false, true),  [WK_BF16] = ELEM("bf16", 2, true, true),
    [WK_F16] = ELEM("f16", 2, true, true),   [WK_F32] = ELEM("f32", 4, true, true),
    [WK_F64] = ELEM("f64", 8, true, true),   [WK_F8E4M3] = ELEM("f8e4m3", 1, true, true),
    /* GGML blocks (names as ggml spells them). align is what the block's
     * widest field needs: the f16 scales, Q8_K's f32 scale. */
    [WK_Q4_0] = BLOCK("q4_0", 32, 18, 2),    [WK_Q4_1] = BLOCK("q4_1", 32, 20, 2),
    [WK_Q5_0] = BLOCK("q5_0", 32, 22, 2),    [WK_Q5_1] = BLOCK("q5_1", 32, 24, 2),
    [WK_Q8_0] = BLOCK("q8_0", 32, 34, 2),    [WK_Q8_1] = BLOCK("q8_1", 32, 36, 2),
    [WK_Q2_K] = BLOCK("q2_K", 256, 84, 2),   [WK_Q3_K] = BLOCK("q3_K", 256, 110, 2),
    [WK_Q4_K] = BLOCK("q4_K", 256, 144, 2),  [WK_Q5_K] = BLOCK("q5_K", 256, 176, 2),
    [WK_Q6_K] = BLOCK("q6_K", 256, 210, 2),  [WK_Q8_K] = BLOCK("q8_K", 256, 292, 4),
    [WK_IQ4_NL] = BLOCK("iq4_nl", 32, 18, 2), [WK_IQ4_XS] = BLOCK("iq4_xs", 256, 136, 2),
};
#undef ELEM
#undef BLOCK
static_assert(sizeof k_dtypes / sizeof k_dtypes[0] == WK_DTYPE_COUNT, "one descriptor per dtype");
/* the descriptor's geometry is the block structs' (base/blocks.h) */
static_assert(sizeof(wk_block_q4_0) == 18 && sizeof(wk_block_q4_K) == 144 && sizeof(wk_block_q6_K) == 210 &&
                  sizeof(wk_block_q8_K) == 292 && sizeof(wk_block_iq4_xs) == 136 && WK_QK_K == 256,
              "block sizes in k_dtypes match base/blocks.h");

static bool valid(wk_dtype dt) { return (unsigned)dt < WK_DTYPE_COUNT; }
const wk_dtype_info *wk_dtype_info_of(wk_dtype dt) { return valid(dt) ? &k_dtypes[dt] : NULL; }
size_t wk_dtype_size(wk_dtype dt) {
    return valid(dt) && k_dtypes[dt].block_elems == 1 ? k_dtypes[dt].block_bytes : 0;
}
const char *wk_dtype_name(wk_dtype dt) { return valid(dt) ? k_dtypes[dt].name : "invalid"; }
bool wk_dtype_is_float(wk_dtype dt) { return valid(dt) && k_dtypes[dt].is_float; }
bool wk_dtype_is_int(wk_dtype dt) { return valid(dt) && k_dtypes[dt].is_int; }
bool wk_dtype_is_quantized(wk_dtype dt) { return valid(dt) && k_dtypes[dt].block_elems > 1; }

wk_status wk__dtype_info_bytes(const wk_dtype_info *di, int64_t numel, size_t *bytes) {
    if (!di || !di->block_elems || !di->block_bytes) return WK_ERR_DTYPE;
    if (numel < 0 || numel % di->block_elems) return WK_ERR_SHAPE;
    uint64_t blocks = (uint64_t)numel / di->block_elems;
    if (blocks > SIZE_MAX / di->block_bytes) return WK_ERR_OOM;
    *bytes = (size_t)blocks * di->block_bytes;
    return WK_OK;
}

wk_status wk__dtype_info_elems(const wk_dtype_info *di, size_t nbytes, int64_t *numel) {
    if (!di || !di->block_elems || !di->block_bytes) return WK_ERR_DTYPE;
    if (nbytes % di->block_bytes) return WK_ERR_SHAPE;
    uint64_t blocks = nbytes / di->block_bytes;
    if (blocks > (uint64_t)INT64_MAX / di->block_elems) return WK_ERR_SHAPE;
    *numel = (int64_t)(blocks * di->block_elems);
    return WK_OK;
}

wk_status wk__dtype_bytes_for(const char *op, wk_dtype dt, int64_t numel, size_t *bytes) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!di) return wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt);
    wk_status st = wk__dtype_info_bytes(di, numel, bytes);
    if (st == WK_ERR_SHAPE)
        return wk__err(st, op, "%lld elements of %s are not a whole number of %u-element blocks", (long long)numel,
                       di->name, (unsigned)di->block_elems);
    if (st == WK_ERR_OOM) return wk__err(st, op, "%lld elements of %s do not fit in memory", (long long)numel, di->name);
    return st;
}

/* ggml's names mix cases ("q4_K"); users type any ("Q4_K", "q4_k"). */
static bool ascii_iequal(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a + 32) : *a, y = (*b >= 'A' && *b <= 'Z') ? (char)(*b + 32) : *b;
        if (x != y) return false;
    }
    return *a == *b;
}

bool wk_dtype_from_name(const char *name, wk_dtype *out) {
    if (!name) return false;
    for (int i = 0; i < WK_DTYPE_COUNT; i++)
        if (k_dtypes[i].block_elems > 1 ? ascii_iequal(name, k_dtypes[i].name) : strcmp(name, k_dtypes[i].name) == 0) {
            if (out) *out = (wk_dtype)i;
            return true;
        }
    return false;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t wk_f32_to_bf16(float x) {
    uint32_t u = f2u(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);                                         /* RNE; overflow -> inf */
    return (uint16_t)(u >> 16);
}

float wk_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t wk_f32_to_f16(float x) {
    uint32_t u = f2u(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x1ffu); /* NaN stays NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;      /* >= 65520 rounds to inf (incl. inf) */
    if (a < 0x38800000u) {                             /* below 2^-14: subnormal f16 or zero */
        if (a < 0x33000000u) return sign;              /* < 2^-25: rounds to 0 (tie at 2^-25 -> even 0) */
        uint32_t e = a >> 23;
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;                      /* 14 + (127-e-1)...: value = m * 2^(e-150) */
        /* f16 subnormal unit is 2^-24: result = m * 2^(e-150+24) = m >> (126 - e) */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return sign | (uint16_t)q;
    }
    /* normal: rebias exponent 127 -> 15 and round the mantissa to 10 bits */
    uint32_t r = a - 0x38000000u;                      /* (127-15) << 23 */
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

float wk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return u2f(sign);
        float v = (float)m * 0x1p-24f;                 /* exact */
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

/* f8e4m3 (the "fn" variant used by candle/PyTorch): bias 7, no infinities,
 * S.1111.111 is NaN, max finite 448. Out-of-range values saturate to +-448
 * (inf included); NaN maps to NaN. */
uint8_t wk_f32_to_f8e4m3(float x) {
    uint32_t u = f2u(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7f;
    float ax = u2f(a);
    if (ax >= 464.0f) return sign | 0x7e;              /* 448 is 0x7e; >= 464 would round past it */
    if (ax < 0x1p-6f) {                                /* subnormal range: unit 2^-9 */
        float q = ax * 512.0f;                         /* exact scaling */
        /* ties to even by hand, independent of the FPU rounding mode */
        float fl = floorf(q), diff = q - fl;
        float r = diff > 0.5f ? fl + 1 : diff < 0.5f ? fl : (fmodf(fl, 2.0f) == 0 ? fl : fl + 1);
        return sign | (uint8_t)r;                      /* r == 8 encodes 2^-6, the smallest normal */
    }
    uint32_t e = (a >> 23) - 127 + 7;                  /* 1..15 */
    uint32_t m = a & 0x7fffffu;
    uint32_t v = (e << 23) | m;                        /* rebias, then round 23 -> 3 bits */
    v += 0x7ffffu + ((v >> 20) & 1u);
    uint32_t out = v >> 20;
    if (out > 0x7e) out = 0x7e;                        /* saturate (e.g. 448 < x < 464 rounding up) */
    return sign | (uint8_t)out;
}

float wk_f8e4m3_to_f32(uint8_t v) {
    uint32_t sign = v & 0x80u;
    uint32_t e = (v >> 3) & 0xfu, m = v & 7u;
    if (e == 0xf && m == 7) return u2f((sign << 24) | 0x7fc00000u);
    float r = e == 0 ? (float)m * 0x1p-9f : ldexpf(1.0f + (float)m / 8.0f, (int)e - 7);
    return sign ? -r : r;
}
