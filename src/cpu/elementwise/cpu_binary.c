/* CPU binary ops, comparisons and where. Inputs arrive broadcast to the
 * output shape (stride 0 on stretched dims). */
#include "tensor/tensor.h"
#include "base/op_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/cpu_iter.h"
#include "cpu/vmath/vmath.h"
#include <stdatomic.h>

#define BLOCK 256

typedef struct {
    wk_binary_op op;
    const char *a, *b;
    char *dst;
    wk_dtype dt;
    atomic_int err; /* a wk_status from the integer math (division by zero, negative power) */
} bin_ctx;

/* vmath numbers its binary ops as wk_binary_op; the VMATH lines come first. */
_Static_assert(WK_ADD == 0 && WK_SUB == 1 && WK_MUL == 2 && WK_DIV == 3 && WK_MAXIMUM == 4 && WK_MINIMUM == 5,
               "wk__vbinary_f32 op numbers");

/* One loop per op (no switch inside the loop), the math from op_math.h. */
#define F64_CASE(e, n, ...) \
    case e: for (int64_t i = 0; i < cnt; i++) y[i] = wk__op_##n##_f64(a[i * sa], b[i * sb]); break;
static void bin_f64(wk_binary_op op, double *y, const double *a, int64_t sa, const double *b, int64_t sb,
                    int64_t cnt) {
    switch (op) {
        WK_BINARY_OPS(F64_CASE)
    case WK_BINARY_COUNT: break;
    }
}

/* Contiguous f32 (y may alias a or b): vmath's SIMD kernel for the list's
 * VMATH ops, the scalar math for the others. */
#define VMATH_OP_VMATH 1
#define VMATH_OP_SCALAR 0
#define F32_CASE(e, n, bw, ex, k)                                                    \
    case e:                                                                          \
        if (VMATH_OP_##k) wk__vbinary_f32(op, y, a, b, cnt);                         \
        else for (int64_t i = 0; i < cnt; i++) y[i] = wk__op_##n##_f32(a[i], b[i]); \
        break;
static void bin_f32_contig(wk_binary_op op, float *y, const float *a, const float *b, int64_t cnt) {
    switch (op) {
        WK_BINARY_OPS(F32_CASE)
    case WK_BINARY_COUNT: break;
    }
}
#define IS_VMATH(e, n, bw, ex, k) [e] = VMATH_OP_##k,
static const bool k_vmath_op[WK_BINARY_COUNT] = {WK_BINARY_OPS(IS_VMATH)};
/* a VMATH line must be one of the six ops vmath knows */
#define VMATH_KNOWS(e, n, bw, ex, k) _Static_assert(!VMATH_OP_##k || e <= WK_MINIMUM, #n ": not a vmath op");
WK_BINARY_OPS(VMATH_KNOWS)

/* f32: contiguous and scalar-rhs cases go to vmath; others gather blocks. */
static void bin_f32(wk_binary_op op, float *y, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    if (sa == 1 && sb == 1) { bin_f32_contig(op, y, a, b, n); return; }
    if (sa == 1 && sb == 0 && k_vmath_op[op]) { wk__vbinary_scalar_f32(op, y, a, b[0], n); return; }
    float ba[BLOCK], bb[BLOCK];
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t m = n - i < BLOCK ? n - i : BLOCK;
        for (int64_t j = 0; j < m; j++) { ba[j] = a[(i + j) * sa]; bb[j] = b[(i + j) * sb]; }
        bin_f32_contig(op, y + i, ba, bb, m);
    }
}

/* Integers: the math of op_math.h on values extended to 64 bits, truncated
 * back to the dtype (+ - * and pow wrap; division truncates toward zero,
 * MIN / -1 wraps to MIN). An undefined case (division by zero, a negative
 * exponent) is reported, never executed. One loop per op and per stride
 * pattern of the run (both walking, one held, any strides): with unit
 * strides and a held operand in a local the cheap ops vectorise. */
#define INT_LOOP(n, XA, XB) \
    for (int64_t i = 0; i < cnt; i++) y[i] = (elem)wk__op_##n##_int((int64_t)(XA), (int64_t)(XB), &e_);
#define INT_CASE(e, n, ...)                                                    \
    case e:                                                                    \
        if (sa == 1 && sb == 1) {                                              \
            INT_LOOP(n, a[i], b[i])                                            \
        } else if (sa == 1 && sb == 0) {                                       \
            const elem bv = b[0];                                              \
            INT_LOOP(n, a[i], bv)                                              \
        } else if (sa == 0 && sb == 1) {                                       \
            const elem av = a[0];                                              \
            INT_LOOP(n, av, b[i])                                              \
        } else {                                                               \
            INT_LOOP(n, a[i * sa], b[i * sb])                                  \
        }                                                                      \
        break;
#define INT_BINARY(T)                                                                                          \
    static void bin_##T(wk_binary_op op, T *y, const T *a, int64_t sa, const T *b, int64_t sb, int64_t cnt,   \
                        atomic_int *err) {                                                                     \
        typedef T elem;                                                                                        \
        int e_ = 0;                                                                                            \
        switch (op) {                                                                                          \
            WK_BINARY_OPS(INT_CASE)                                                                            \
        case WK_BINARY_COUNT: break;                                                                           \
        }                                                                                                      \
        if (e_) atomic_store(err, e_);                                                                         \
    }
INT_BINARY(uint8_t)
INT_BINARY(uint32_t)
INT_BINARY(int16_t)
INT_BINARY(int32_t)
INT_BINARY(int64_t)

/* bf16, f16 and f8e4m3: each element computed in f32 and rounded once,
 * in blocks of BLOCK. The blocks are widened with vmath's vectorised
 * conversions (bit-identical to wk_bf16_to_f32 / wk_f16_to_f32; f8e4m3 has
 * none, so its scalar one), computed by the f32 kernel (vmath's SIMD one for
 * the VMATH ops) and rounded back by the vectorised narrowing (bit-identical
 * to wk_f32_to_bf16 / wk_f32_to_f16; f8e4m3: wk_f32_to_f8e4m3). A held
 * operand (stride 0 along the run) is widened once and its block filled
 * once per run; a strided one is gathered into a contiguous block first. */
static void widen_block(float *d, const char *p, int64_t s, int64_t m, wk_dtype dt) {
    if (dt == WK_F8E4M3) {
        const uint8_t *q = (const uint8_t *)p;
        for (int64_t j = 0; j < m; j++) d[j] = wk_f8e4m3_to_f32(q[j * s]);
        return;
    }
    const uint16_t *q = (const uint16_t *)p;
    uint16_t g[BLOCK];
    if (s != 1) {
        for (int64_t j = 0; j < m; j++) g[j] = q[j * s];
        q = g;
    }
    if (dt == WK_BF16) wk__vcvt_bf16_to_f32(d, q, m);
    else wk__vcvt_f16_to_f32(d, q, m);
}
static void narrow_block(char *p, const float *x, int64_t m, wk_dtype dt) {
    if (dt == WK_BF16) wk__vcvt_f32_to_bf16((uint16_t *)p, x, m);
    else if (dt == WK_F16) wk__vcvt_f32_to_f16((uint16_t *)p, x, m);
    else for (int64_t j = 0; j < m; j++) ((uint8_t *)p)[j] = wk_f32_to_f8e4m3(x[j]);
}
static void bin_narrow(wk_binary_op op, char *y, const char *a, int64_t sa, const char *b, int64_t sb, int64_t n,
                       wk_dtype dt) {
    if (n <= 0) return; /* a held operand is read before the loop */
    int64_t es = (int64_t)wk__dtype_elem_bytes(dt);
    float ba[BLOCK], bb[BLOCK], by[BLOCK];
    int64_t fill = n < BLOCK ? n : BLOCK;
    if (sa == 0) {
        widen_block(ba, a, 1, 1, dt);
        for (int64_t j = 1; j < fill; j++) ba[j] = ba[0];
    }
    if (sb == 0) {
        widen_block(bb, b, 1, 1, dt);
        for (int64_t j = 1; j < fill; j++) bb[j] = bb[0];
    }
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t m = n - i < BLOCK ? n - i : BLOCK;
        if (sa != 0) widen_block(ba, a + i * sa * es, sa, m, dt);
        if (sb != 0) widen_block(bb, b + i * sb * es, sb, m, dt);
        bin_f32_contig(op, by, ba, bb, m);
        narrow_block(y + i * es, by, m, dt);
    }
}

static void bin_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    bin_ctx *c = p;
    int64_t es = (int64_t)wk__dtype_elem_bytes(c->dt);
    void *y = c->dst + offs[0] * es;
    const void *a = c->a + offs[1] * es, *b = c->b + offs[2] * es;
    int64_t sa = st[1], sb = st[2];
    switch (c->dt) {
    case WK_F32: bin_f32(c->op, y, a, sa, b, sb, n); break;
    case WK_F64: bin_f64(c->op, y, a, sa, b, sb, n); break;
    case WK_U8: bin_uint8_t(c->op, y, a, sa, b, sb, n, &c->err); break;
    case WK_U32: bin_uint32_t(c->op, y, a, sa, b, sb, n, &c->err); break;
    case WK_I16: bin_int16_t(c->op, y, a, sa, b, sb, n, &c->err); break;
    case WK_I32: bin_int32_t(c->op, y, a, sa, b, sb, n, &c->err); break;
    case WK_I64: bin_int64_t(c->op, y, a, sa, b, sb, n, &c->err); break;
    case WK_BF16: case WK_F16: case WK_F8E4M3: bin_narrow(c->op, y, a, sa, b, sb, n, c->dt); break;
    WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: break;
    }
}

static void iter3(wk_iter *it, const wk_layout *la, const wk_layout *lb, wk_layout *ld) {
    wk__layout_contiguous(ld, la->shape, la->rank, 0);
    const wk_layout *l3[3] = {ld, la, lb};
    wk__iter_init(it, 3, l3);
}

wk_status wk__cpu_binary(wk_device *dev, wk_binary_op op, const void *a, const wk_layout *la, const void *b,
                         const wk_layout *lb, void *dst, wk_dtype dt) {
    (void)dev;
    wk_layout ld;
    wk_iter it;
    iter3(&it, la, lb, &ld);
    bin_ctx c = {op, a, b, dst, dt, 0};
    /* division and pow are compute-bound enough to split at the default threshold */
    wk__iter_foreach_min(&it, bin_run, &c, op == WK_DIV || op == WK_POW ? WK_PAR_MIN_ELEMS : WK_PAR_MIN_CHEAP);
    int e = atomic_load(&c.err);
    if (e == WK_ERR_DIV_ZERO)
        return wk__err(WK_ERR_DIV_ZERO, wk_binary_name(op), "integer division by zero (%s)", wk_dtype_name(dt));
    if (e != 0)
        return wk__err((wk_status)e, wk_binary_name(op), "integers to negative integer powers are not allowed (%s)",
                       wk_dtype_name(dt));
    return WK_OK;
}

/* ------------------------------------------------------------ comparisons
 * One loop per comparison and per stride pattern of the run: both operands
 * walking (stride 1), one of them held (stride 0: a broadcast scalar along
 * the run) or any strides. The typed loops with the list's C operator and a
 * u8 store vectorise; restrict tells the compiler the u8 output (a char type
 * that may alias anything) is not the input. */
#define CMP_CASE_11(e, n, OP) case e: for (int64_t i = 0; i < cnt; i++) y[i] = (uint8_t)(a[i] OP b[i]); break;
#define CMP_CASE_10(e, n, OP) case e: for (int64_t i = 0; i < cnt; i++) y[i] = (uint8_t)(a[i] OP bv); break;
#define CMP_CASE_01(e, n, OP) case e: for (int64_t i = 0; i < cnt; i++) y[i] = (uint8_t)(av OP b[i]); break;
#define CMP_CASE_SS(e, n, OP) \
    case e: for (int64_t i = 0; i < cnt; i++) y[i] = (uint8_t)(a[i * sa] OP b[i * sb]); break;
#define CMP_SWITCH(CASE)          \
    switch (op) {                 \
        WK_CMP_OPS(CASE)          \
    case WK_CMP_COUNT: break;     \
    }
#define CMP_KERNEL(name, T)                                                                                       \
    static void name(wk_cmp_op op, uint8_t *restrict y, const T *restrict a, int64_t sa, const T *restrict b,    \
                     int64_t sb, int64_t cnt) {                                                                   \
        if (sa == 1 && sb == 1) {                                                                                 \
            CMP_SWITCH(CMP_CASE_11)                                                                               \
        } else if (sa == 1 && sb == 0) {                                                                          \
            const T bv = b[0];                                                                                    \
            CMP_SWITCH(CMP_CASE_10)                                                                               \
        } else if (sa == 0 && sb == 1) {                                                                          \
            const T av = a[0];                                                                                    \
            CMP_SWITCH(CMP_CASE_01)                                                                               \
        } else {                                                                                                  \
            CMP_SWITCH(CMP_CASE_SS)                                                                               \
        }                                                                                                         \
    }
CMP_KERNEL(cmp_f32, float)
CMP_KERNEL(cmp_f64, double)
CMP_KERNEL(cmp_u8, uint8_t)
CMP_KERNEL(cmp_u32, uint32_t)
CMP_KERNEL(cmp_i16, int16_t)
CMP_KERNEL(cmp_i32, int32_t)
CMP_KERNEL(cmp_i64, int64_t)

/* bf16, f16 and f8e4m3 compare by their float values without converting:
 * all three are sign-magnitude with the magnitude's bits ordered like its
 * value, so the signed integer +-magnitude (it fits int16) orders like the
 * value, and -0 and +0 both map to 0. NaN (unordered: only != holds) maps
 * to KEY_NAN, below every other key, and gets the NaN answer. Exhaustively
 * checked against the float comparison by tests/test_select_paths.c. */
#define KEY_NAN INT16_MIN
typedef struct {
    int16_t mag, nan_above; /* magnitude mask (the sign is the bit above), NaN iff magnitude > nan_above */
} key_fmt;
static key_fmt key_fmt_of(wk_dtype dt) {
    if (dt == WK_BF16) return (key_fmt){0x7fff, 0x7f80};
    if (dt == WK_F16) return (key_fmt){0x7fff, 0x7c00};
    return (key_fmt){0x7f, 0x7e}; /* f8e4m3: only S.1111.111 is NaN, no infinities */
}
/* Everything in 16-bit lanes (8 keys per SSE2 op): s is 0 or -1 from the
 * sign bit (bit sb), (m ^ s) - s is m or -m. */
static inline int16_t key_of(uint16_t bits, int sb, key_fmt f) {
    int16_t m = (int16_t)(bits & f.mag);
    int16_t s = (int16_t)-(int16_t)((bits >> sb) & 1u);
    int16_t k = (int16_t)((m ^ s) - s);
    return m > f.nan_above ? (int16_t)KEY_NAN : k;
}
#define KEY_LOADER(name, T, SB)                                                                     \
    static void name(int16_t *restrict k, const T *restrict p, int64_t s, int64_t cnt, key_fmt f) { \
        if (s == 1)                                                                                 \
            for (int64_t i = 0; i < cnt; i++) k[i] = key_of(p[i], SB, f);                           \
        else if (s == 0) {                                                                          \
            int16_t k0 = key_of(p[0], SB, f);                                                       \
            for (int64_t i = 0; i < cnt; i++) k[i] = k0;                                            \
        } else                                                                                      \
            for (int64_t i = 0; i < cnt; i++) k[i] = key_of(p[i * s], SB, f);                       \
    }
KEY_LOADER(keys_u16, uint16_t, 15)
KEY_LOADER(keys_u8, uint8_t, 7)

#define CMP_CASE_KEY(e, n, OP)                                                                     \
    case e:                                                                                        \
        for (int64_t j = 0; j < m; j++) {                                                          \
            int16_t x = ka[j], z = kb[j];                                                          \
            y[j] = ((x == KEY_NAN) | (z == KEY_NAN)) ? (uint8_t)(e == WK_NE) : (uint8_t)(x OP z);  \
        }                                                                                          \
        break;
static void cmp_keys(wk_cmp_op op, uint8_t *restrict y, const int16_t *restrict ka, const int16_t *restrict kb,
                     int64_t m) {
    CMP_SWITCH(CMP_CASE_KEY)
}

static void cmp_narrow(wk_cmp_op op, uint8_t *y, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n,
                       wk_dtype dt) {
    key_fmt f = key_fmt_of(dt);
    int16_t ka[BLOCK], kb[BLOCK];
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t m = n - i < BLOCK ? n - i : BLOCK;
        if (dt == WK_F8E4M3) {
            keys_u8(ka, (const uint8_t *)a + i * sa, sa, m, f);
            keys_u8(kb, (const uint8_t *)b + i * sb, sb, m, f);
        } else {
            keys_u16(ka, (const uint16_t *)a + i * sa, sa, m, f);
            keys_u16(kb, (const uint16_t *)b + i * sb, sb, m, f);
        }
        cmp_keys(op, y + i, ka, kb, m);
    }
}

typedef struct {
    wk_cmp_op op;
    const char *a, *b;
    uint8_t *dst;
    wk_dtype dt;
} cmp_ctx;

static void cmp_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    cmp_ctx *c = p;
    int64_t es = (int64_t)wk__dtype_elem_bytes(c->dt);
    uint8_t *y = c->dst + offs[0];
    const void *a = c->a + offs[1] * es, *b = c->b + offs[2] * es;
    int64_t sa = st[1], sb = st[2];
    switch (c->dt) {
    case WK_F32: cmp_f32(c->op, y, a, sa, b, sb, n); break;
    case WK_F64: cmp_f64(c->op, y, a, sa, b, sb, n); break;
    case WK_U8: cmp_u8(c->op, y, a, sa, b, sb, n); break;
    case WK_U32: cmp_u32(c->op, y, a, sa, b, sb, n); break;
    case WK_I16: cmp_i16(c->op, y, a, sa, b, sb, n); break;
    case WK_I32: cmp_i32(c->op, y, a, sa, b, sb, n); break;
    case WK_I64: cmp_i64(c->op, y, a, sa, b, sb, n); break;
    case WK_BF16: case WK_F16: case WK_F8E4M3: cmp_narrow(c->op, y, a, sa, b, sb, n, c->dt); break;
    WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: break;
    }
}

wk_status wk__cpu_cmp(wk_device *dev, wk_cmp_op op, const void *a, const wk_layout *la, const void *b,
                      const wk_layout *lb, void *dst, wk_dtype dt) {
    (void)dev;
    wk_layout ld;
    wk_iter it;
    iter3(&it, la, lb, &ld);
    cmp_ctx c = {op, a, b, dst, dt};
    wk__iter_foreach_min(&it, cmp_run, &c, WK_PAR_MIN_CHEAP);
    return WK_OK;
}

/* ------------------------------------------------------------------ where
 * A selection moves bits, so values are copied as unsigned integers of the
 * element's width (NaN payloads and -0 kept) and one kernel per width serves
 * every dtype. The condition arrives as u8 (0 / not 0); other integer
 * conditions are first turned into u8 blocks. Both candidates are loaded
 * before the choice so the loop is branch-free and vectorises. */
/* c ? a : b as a bit mask of T: widening the u8 condition to a full-width
 * mask vectorises for every width even on baseline x86-64 (the ?: form does
 * not for 64-bit values there). */
#define PICK(cv, av, bv) (word)(((av) & (word)(0 - (word)((cv) != 0))) | ((bv) & (word)~(word)(0 - (word)((cv) != 0))))
#define WHERE_KERNEL(name, T)                                                                                    \
    static void name(T *restrict y, const uint8_t *restrict c, int64_t sc, const T *restrict a, int64_t sa,     \
                     const T *restrict b, int64_t sb, int64_t n) {                                               \
        typedef T word;                                                                                          \
        if (sc == 0) { /* one choice for the whole run: a copy (or fill) of one side */                         \
            const T *s = c[0] ? a : b;                                                                           \
            int64_t ss = c[0] ? sa : sb;                                                                         \
            if (ss == 1) memcpy(y, s, (size_t)n * sizeof(T));                                                    \
            else if (ss == 0) { const T v = s[0]; for (int64_t i = 0; i < n; i++) y[i] = v; }                    \
            else for (int64_t i = 0; i < n; i++) y[i] = s[i * ss];                                               \
        } else if (sc == 1 && sa == 1 && sb == 1) {                                                              \
            for (int64_t i = 0; i < n; i++) { T av = a[i], bv = b[i]; y[i] = PICK(c[i], av, bv); }                   \
        } else if (sc == 1 && sa == 0 && sb == 1) {                                                              \
            const T av = a[0];                                                                                   \
            for (int64_t i = 0; i < n; i++) { T bv = b[i]; y[i] = PICK(c[i], av, bv); }                              \
        } else if (sc == 1 && sa == 1 && sb == 0) {                                                              \
            const T bv = b[0];                                                                                   \
            for (int64_t i = 0; i < n; i++) { T av = a[i]; y[i] = PICK(c[i], av, bv); }                              \
        } else if (sc == 1 && sa == 0 && sb == 0) {                                                              \
            const T av = a[0], bv = b[0];                                                                        \
            for (int64_t i = 0; i < n; i++) y[i] = PICK(c[i], av, bv);                                               \
        } else {                                                                                                 \
            for (int64_t i = 0; i < n; i++) { T av = a[i * sa], bv = b[i * sb]; y[i] = PICK(c[i * sc], av, bv); }    \
        }                                                                                                        \
    }
WHERE_KERNEL(where_w8, uint8_t)
WHERE_KERNEL(where_w16, uint16_t)
WHERE_KERNEL(where_w32, uint32_t)
WHERE_KERNEL(where_w64, uint64_t)

/* c != 0 of an integer condition run of cnt elements, stride s, as u8 */
#define COND_LOADER(name, T)                                                                  \
    static void name(uint8_t *restrict m, const T *restrict p, int64_t s, int64_t cnt) {     \
        if (s == 1) for (int64_t i = 0; i < cnt; i++) m[i] = p[i] != 0;                       \
        else for (int64_t i = 0; i < cnt; i++) m[i] = p[i * s] != 0;                          \
    }
COND_LOADER(cond_u32, uint32_t)
COND_LOADER(cond_i16, int16_t)
COND_LOADER(cond_i32, int32_t)
COND_LOADER(cond_i64, int64_t)

typedef struct {
    const char *cond, *a, *b;
    char *dst;
    wk_dtype cdt;
    size_t es;
} where_ctx;

static void where_u8(const where_ctx *c, char *y, const uint8_t *cd, int64_t sc, const char *a, int64_t sa,
                     const char *b, int64_t sb, int64_t n) {
    switch (c->es) {
    case 1: where_w8((uint8_t *)y, cd, sc, (const uint8_t *)a, sa, (const uint8_t *)b, sb, n); break;
    case 2: where_w16((uint16_t *)y, cd, sc, (const uint16_t *)a, sa, (const uint16_t *)b, sb, n); break;
    case 4: where_w32((uint32_t *)y, cd, sc, (const uint32_t *)a, sa, (const uint32_t *)b, sb, n); break;
    case 8: where_w64((uint64_t *)y, cd, sc, (const uint64_t *)a, sa, (const uint64_t *)b, sb, n); break;
    }
}

static void where_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    where_ctx *c = p;
    int64_t es = (int64_t)c->es, ces = (int64_t)wk__dtype_elem_bytes(c->cdt);
    char *y = c->dst + offs[0] * es;
    const char *cd = c->cond + offs[1] * ces, *a = c->a + offs[2] * es, *b = c->b + offs[3] * es;
    int64_t sc = st[1], sa = st[2], sb = st[3];
    if (c->cdt == WK_U8) { where_u8(c, y, (const uint8_t *)cd, sc, a, sa, b, sb, n); return; }
    /* a held condition is one value: no block needed */
    int64_t step = sc == 0 ? n : BLOCK;
    uint8_t mb[BLOCK];
    for (int64_t i = 0; i < n; i += step) {
        int64_t m = n - i < step ? n - i : step;
        int64_t mc = sc == 0 ? 1 : m;
        const char *ci = cd + i * sc * ces;
        switch (c->cdt) {
        case WK_U32: cond_u32(mb, (const uint32_t *)ci, sc, mc); break;
        case WK_I16: cond_i16(mb, (const int16_t *)ci, sc, mc); break;
        case WK_I32: cond_i32(mb, (const int32_t *)ci, sc, mc); break;
        case WK_I64: cond_i64(mb, (const int64_t *)ci, sc, mc); break;
        case WK_BF16: case WK_F16: case WK_F32: case WK_F64: case WK_F8E4M3:
            /* the tensor layer admits only integer conditions; a backend
             * caller passing a float one gets the contract's general rule
             * (the value as an integer, truncated, NaN -> 0, is nonzero),
             * which the CUDA kernel shares */
            for (int64_t k = 0; k < mc; k++) mb[k] = wk__load_i64(ci, k * sc, c->cdt) != 0;
            break;
        case WK_U8: WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT:
            break; /* u8 went the direct way */
        }
        where_u8(c, y + i * es, mb, sc == 0 ? 0 : 1, a + i * sa * es, sa, b + i * sb * es, sb, m);
    }
}

wk_status wk__cpu_where(wk_device *dev, const void *cond, const wk_layout *lc, wk_dtype cdt, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb, void *dst, wk_dtype dt) {
    (void)dev;
    wk_layout ld;
    wk__layout_contiguous(&ld, la->shape, la->rank, 0);
    const wk_layout *l4[4] = {&ld, lc, la, lb};
    wk_iter it;
    wk__iter_init(&it, 4, l4);
    where_ctx c = {cond, a, b, dst, cdt, wk__dtype_elem_bytes(dt)};
    /* memory-bound like a copy: the copy's threshold */
    wk__iter_foreach_min(&it, where_run, &c, WK_PAR_MIN_CHEAP);
    return WK_OK;
}
