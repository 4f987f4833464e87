/* CPU binary ops, comparisons and where. Inputs arrive broadcast to the
 * output shape (stride 0 on stretched dims). */
#include "core/tensor.h"
#include "core/op_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_convert.h"
#include "cpu/cpu_iter.h"
#include "cpu/vmath.h"
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
 * exponent) is reported, never executed. */
#define INT_CASE(e, n, ...)                                                                      \
    case e:                                                                                      \
        for (int64_t i = 0; i < cnt; i++)                                                        \
            y[i] = (elem)wk__op_##n##_int((int64_t)a[i * sa], (int64_t)b[i * sb], &e_);          \
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
    case WK_BF16: case WK_F16: case WK_F8E4M3: { /* through f32 blocks */
        float ba[BLOCK], bb[BLOCK];
        for (int64_t i = 0; i < n; i += BLOCK) {
            int64_t m = n - i < BLOCK ? n - i : BLOCK;
            for (int64_t j = 0; j < m; j++) {
                ba[j] = wk__narrow_load(a, (i + j) * sa, c->dt);
                bb[j] = wk__narrow_load(b, (i + j) * sb, c->dt);
            }
            bin_f32_contig(c->op, ba, ba, bb, m);
            for (int64_t j = 0; j < m; j++) wk__narrow_store(y, i + j, c->dt, ba[j]);
        }
        break;
    }
    case WK_DTYPE_COUNT: break;
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

typedef struct {
    wk_cmp_op op;
    const char *a, *b;
    uint8_t *dst;
    wk_dtype dt;
} cmp_ctx;

/* One loop per comparison, the list's C operator on the loaded values. */
#define CMP_CASE(e, n, OP) case e: for (int64_t i = 0; i < n_; i++) y[i] = LOAD(a, i * sa) OP LOAD(b, i * sb); break;
#define CMP_LOOPS()                 \
    switch (c->op) {                \
        WK_CMP_OPS(CMP_CASE)        \
    case WK_CMP_COUNT: break;       \
    }

static void cmp_run(void *p, int64_t n_, const int64_t *offs, const int64_t *st) {
    cmp_ctx *c = p;
    int64_t es = (int64_t)wk__dtype_elem_bytes(c->dt);
    uint8_t *y = c->dst + offs[0];
    const void *a = c->a + offs[1] * es, *b = c->b + offs[2] * es;
    int64_t sa = st[1], sb = st[2];
    wk_dtype dt = c->dt;
    if (dt == WK_F32) {
#define LOAD(p, i) (((const float *)(p))[i])
        CMP_LOOPS()
#undef LOAD
    } else if (wk_dtype_is_int(dt)) {
#define LOAD(p, i) wk__load_i64((p), (i), dt)
        CMP_LOOPS()
#undef LOAD
    } else {
#define LOAD(p, i) wk__load_f64((p), (i), dt)
        CMP_LOOPS()
#undef LOAD
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

typedef struct {
    const char *cond, *a, *b;
    char *dst;
    wk_dtype cdt;
    size_t es;
} where_ctx;

static void where_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    where_ctx *c = p;
    int64_t es = (int64_t)c->es, ces = (int64_t)wk__dtype_elem_bytes(c->cdt);
    char *y = c->dst + offs[0] * es;
    const char *cd = c->cond + offs[1] * ces, *a = c->a + offs[2] * es, *b = c->b + offs[3] * es;
    for (int64_t i = 0; i < n; i++) {
        bool t = wk__load_i64(cd, i * st[1], c->cdt) != 0;
        memcpy(y + i * es, t ? a + i * st[2] * es : b + i * st[3] * es, (size_t)es);
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
    wk__iter_foreach(&it, where_run, &c);
    return WK_OK;
}
