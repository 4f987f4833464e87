/* CPU binary ops, comparisons and where. Inputs arrive broadcast to the
 * output shape (stride 0 on stretched dims). */
#include "core/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_convert.h"
#include "cpu/cpu_iter.h"
#include "cpu/vmath.h"
#include <stdatomic.h>

#define BLOCK 256

typedef struct {
    int op;
    const char *a, *b;
    char *dst;
    wk_dtype dt;
    atomic_int div_zero;
} bin_ctx;

static inline double fmax_nan(double x, double y) { return (x != x || y != y) ? x + y : (x > y ? x : y); }
static inline double fmin_nan(double x, double y) { return (x != x || y != y) ? x + y : (x < y ? x : y); }

static void bin_f64(int op, double *y, const double *a, int64_t sa, const double *b, int64_t sb, int64_t n) {
    switch (op) {
    case WK_ADD: for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] + b[i * sb]; break;
    case WK_SUB: for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] - b[i * sb]; break;
    case WK_MUL: for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] * b[i * sb]; break;
    case WK_DIV: for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] / b[i * sb]; break;
    case WK_MAXIMUM: for (int64_t i = 0; i < n; i++) y[i] = fmax_nan(a[i * sa], b[i * sb]); break;
    default: for (int64_t i = 0; i < n; i++) y[i] = fmin_nan(a[i * sa], b[i * sb]); break;
    }
}

/* f32: contiguous and scalar-rhs cases go to vmath; others gather blocks. */
static void bin_f32(int op, float *y, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n) {
    if (sa == 1 && sb == 1) { wk__vbinary_f32(op, y, a, b, n); return; }
    if (sa == 1 && sb == 0) { wk__vbinary_scalar_f32(op, y, a, b[0], n); return; }
    float ba[BLOCK], bb[BLOCK];
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t m = n - i < BLOCK ? n - i : BLOCK;
        for (int64_t j = 0; j < m; j++) { ba[j] = a[(i + j) * sa]; bb[j] = b[(i + j) * sb]; }
        wk__vbinary_f32(op, y + i, ba, bb, m);
    }
}

/* Integers: + - * wrap (computed unsigned); division truncates toward zero;
 * MIN / -1 wraps to MIN; division by zero is reported, never executed. */
#define INT_BINARY(T, UT, SIGNED, TMIN)                                                                      \
    static void bin_##T(int op, T *y, const T *a, int64_t sa, const T *b, int64_t sb, int64_t n, atomic_int *dz) { \
        switch (op) {                                                                                        \
        case WK_ADD: for (int64_t i = 0; i < n; i++) y[i] = (T)((UT)a[i * sa] + (UT)b[i * sb]); break;       \
        case WK_SUB: for (int64_t i = 0; i < n; i++) y[i] = (T)((UT)a[i * sa] - (UT)b[i * sb]); break;       \
        case WK_MUL: for (int64_t i = 0; i < n; i++) y[i] = (T)((UT)a[i * sa] * (UT)b[i * sb]); break;       \
        case WK_DIV:                                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                                \
                T x = a[i * sa], z = b[i * sb];                                                              \
                if (z == 0) { atomic_store(dz, 1); y[i] = 0; }                                               \
                else if (SIGNED && z == (T)-1) y[i] = (T)(0u - (UT)x);                                       \
                else y[i] = (T)(x / z);                                                                      \
            }                                                                                                \
            break;                                                                                           \
        case WK_MAXIMUM: for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] > b[i * sb] ? a[i * sa] : b[i * sb]; break; \
        default: for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] < b[i * sb] ? a[i * sa] : b[i * sb]; break; \
        }                                                                                                    \
        (void)(TMIN);                                                                                        \
    }
INT_BINARY(uint8_t, uint32_t, 0, 0)
INT_BINARY(uint32_t, uint32_t, 0, 0)
INT_BINARY(int16_t, uint32_t, 1, INT16_MIN)
INT_BINARY(int32_t, uint32_t, 1, INT32_MIN)
INT_BINARY(int64_t, uint64_t, 1, INT64_MIN)

static void bin_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    bin_ctx *c = p;
    int64_t es = (int64_t)wk__dtype_elem_bytes(c->dt);
    void *y = c->dst + offs[0] * es;
    const void *a = c->a + offs[1] * es, *b = c->b + offs[2] * es;
    int64_t sa = st[1], sb = st[2];
    switch (c->dt) {
    case WK_F32: bin_f32(c->op, y, a, sa, b, sb, n); break;
    case WK_F64: bin_f64(c->op, y, a, sa, b, sb, n); break;
    case WK_U8: bin_uint8_t(c->op, y, a, sa, b, sb, n, &c->div_zero); break;
    case WK_U32: bin_uint32_t(c->op, y, a, sa, b, sb, n, &c->div_zero); break;
    case WK_I16: bin_int16_t(c->op, y, a, sa, b, sb, n, &c->div_zero); break;
    case WK_I32: bin_int32_t(c->op, y, a, sa, b, sb, n, &c->div_zero); break;
    case WK_I64: bin_int64_t(c->op, y, a, sa, b, sb, n, &c->div_zero); break;
    default: { /* bf16, f16, f8e4m3 through f32 blocks */
        float ba[BLOCK], bb[BLOCK];
        for (int64_t i = 0; i < n; i += BLOCK) {
            int64_t m = n - i < BLOCK ? n - i : BLOCK;
            for (int64_t j = 0; j < m; j++) {
                ba[j] = wk__narrow_load(a, (i + j) * sa, c->dt);
                bb[j] = wk__narrow_load(b, (i + j) * sb, c->dt);
            }
            wk__vbinary_f32(c->op, ba, ba, bb, m);
            for (int64_t j = 0; j < m; j++) wk__narrow_store(y, i + j, c->dt, ba[j]);
        }
    }
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
    /* division is compute-bound enough to split at the default threshold */
    wk__iter_foreach_min(&it, bin_run, &c, op == WK_DIV ? WK_PAR_MIN_ELEMS : WK_PAR_MIN_CHEAP);
    if (atomic_load(&c.div_zero))
        return wk__err(WK_ERR_DIV_ZERO, "div", "integer division by zero (%s)", wk_dtype_name(dt));
    return WK_OK;
}

typedef struct {
    int op;
    const char *a, *b;
    uint8_t *dst;
    wk_dtype dt;
} cmp_ctx;

#define CMP_LOOP(LOAD)                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                        \
        __typeof__(LOAD(a, i * sa)) x = LOAD(a, i * sa), z = LOAD(b, i * sb);               \
        bool r;                                                                              \
        switch (c->op) {                                                                     \
        case WK_EQ: r = x == z; break;                                                       \
        case WK_NE: r = x != z; break;                                                       \
        case WK_LT: r = x < z; break;                                                        \
        case WK_LE: r = x <= z; break;                                                       \
        case WK_GT: r = x > z; break;                                                        \
        default: r = x >= z; break;                                                          \
        }                                                                                    \
        y[i] = r;                                                                            \
    }

static void cmp_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    cmp_ctx *c = p;
    int64_t es = (int64_t)wk__dtype_elem_bytes(c->dt);
    uint8_t *y = c->dst + offs[0];
    const void *a = c->a + offs[1] * es, *b = c->b + offs[2] * es;
    int64_t sa = st[1], sb = st[2];
    wk_dtype dt = c->dt;
#define LOAD_F32(p, i) (((const float *)(p))[i])
#define LOAD_INT(p, i) wk__load_i64((p), (i), dt)
#define LOAD_DBL(p, i) wk__load_f64((p), (i), dt)
    if (dt == WK_F32) { CMP_LOOP(LOAD_F32) }
    else if (wk_dtype_is_int(dt)) { CMP_LOOP(LOAD_INT) }
    else { CMP_LOOP(LOAD_DBL) }
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
