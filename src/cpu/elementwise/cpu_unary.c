/* CPU unary kernels, affine, powf, elu and clamp. f32 runs on the vectorized
 * math of vmath.c; bf16/f16/f8e4m3 go through f32 in blocks; f64 uses libm;
 * integers have the meanings of the op list (include/wick/wick_ops.h); the
 * scalar math is src/base/op_math.h, shared with the CUDA kernels. */
#include "tensor/tensor.h"
#include "base/op_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/cpu_iter.h"
#include "cpu/vmath/vmath.h"
#include "tensor/op_lists.h"

#define BLOCK 256

/* y[i] = op(x[i]) on contiguous f32 (y == x allowed): the list's cpu_f32
 * column picks vmath's SIMD kernel or the shared scalar math. */
#define F32_VMATH(n) wk__v##n##_f32(y, x, n_)
#define F32_SCALAR(n) for (int64_t i = 0; i < n_; i++) y[i] = wk__op_##n##_f32(x[i])
#define F32_CASE(e, n, ir, bw, ex, k) case e: F32_##k(n); break;
static void unary_f32(wk_unary_op op, float *y, const float *x, int64_t n_) {
    switch (op) {
        WK_UNARY_OPS(F32_CASE)
    case WK_UNARY_COUNT: break; /* rejected by wk_unary */
    }
}

/* Integer meanings (op_math.h) on values extended to 64 bits, truncated
 * back: the dtype's own wrap-around (abs/neg of the minimum value wrap to
 * itself, like numpy). One loop per op so the loop has no switch. */
#define INT_CASE(e, name, ir, ...) \
    case e: for (int64_t i = 0; i < cnt; i++) y[i] = (elem)WK__INT_##ir(name, (int64_t)x[i * sx]); break;
#define INT_UNARY(T)                                                               \
    static void unary_##T(wk_unary_op op, T *y, const T *x, int64_t cnt, int64_t sx) { \
        typedef T elem;                                                            \
        switch (op) {                                                              \
            WK_UNARY_OPS(INT_CASE)                                                 \
        case WK_UNARY_COUNT: break;                                                \
        }                                                                          \
    }
INT_UNARY(uint8_t)
INT_UNARY(uint32_t)
INT_UNARY(int16_t)
INT_UNARY(int32_t)
INT_UNARY(int64_t)

typedef struct {
    wk_unary_op op;
    const char *src;
    char *dst;
    wk_dtype dt;
} unary_ctx;

static void unary_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    unary_ctx *c = p;
    size_t es = wk__dtype_elem_bytes(c->dt);
    const void *s = c->src + offs[1] * (int64_t)es;
    void *d = c->dst + offs[0] * (int64_t)es;
    int64_t ss = st[1];
    switch (c->dt) {
    case WK_F32: {
        if (ss == 1) { unary_f32(c->op, d, s, n); break; }
        float buf[BLOCK];
        for (int64_t i = 0; i < n; i += BLOCK) {
            int64_t m = n - i < BLOCK ? n - i : BLOCK;
            for (int64_t j = 0; j < m; j++) buf[j] = ((const float *)s)[(i + j) * ss];
            unary_f32(c->op, (float *)d + i, buf, m);
        }
        break;
    }
    case WK_F64:
        for (int64_t i = 0; i < n; i++) ((double *)d)[i] = wk__unary_f64(c->op, ((const double *)s)[i * ss]);
        break;
    case WK_BF16: case WK_F16: case WK_F8E4M3: {
        float buf[BLOCK];
        for (int64_t i = 0; i < n; i += BLOCK) {
            int64_t m = n - i < BLOCK ? n - i : BLOCK;
            for (int64_t j = 0; j < m; j++) buf[j] = wk__narrow_load(s, (i + j) * ss, c->dt);
            unary_f32(c->op, buf, buf, m);
            for (int64_t j = 0; j < m; j++) wk__narrow_store(d, i + j, c->dt, buf[j]);
        }
        break;
    }
    case WK_U8: unary_uint8_t(c->op, d, s, n, ss); break;
    case WK_U32: unary_uint32_t(c->op, d, s, n, ss); break;
    case WK_I16: unary_int16_t(c->op, d, s, n, ss); break;
    case WK_I32: unary_int32_t(c->op, d, s, n, ss); break;
    case WK_I64: unary_int64_t(c->op, d, s, n, ss); break;
    WK__CASE_BLOCK_DTYPES: case WK_DTYPE_COUNT: break;
    }
}

static void foreach_unary(const void *src, const wk_layout *ls, void *dst, wk_run_fn run, void *ctx) {
    (void)src; (void)dst;
    wk_layout ld;
    wk__layout_contiguous(&ld, ls->shape, ls->rank, 0);
    const wk_layout *l2[2] = {&ld, ls};
    wk_iter it;
    wk__iter_init(&it, 2, l2);
    wk__iter_foreach(&it, run, ctx);
}

wk_status wk__cpu_unary(wk_device *dev, wk_unary_op op, const void *src, const wk_layout *ls, void *dst, wk_dtype dt) {
    (void)dev;
    unary_ctx c = {op, src, dst, dt};
    foreach_unary(src, ls, dst, unary_run, &c);
    return WK_OK;
}

/* ---- parametric unary ops: affine, powf, elu, clamp ---- */

typedef enum { P_AFFINE, P_POWF, P_ELU, P_CLAMP } param_op;
typedef struct {
    param_op op;
    const char *src;
    char *dst;
    wk_dtype dt;
    double a, b;
} param_ctx;

static inline double param_apply(param_op op, double x, double a, double b) {
    switch (op) {
    case P_AFFINE: return x * a + b;
    case P_POWF: return wk__op_pow_f64(x, a);
    case P_ELU: return x >= 0 ? x : a * (exp(x) - 1.0);
    case P_CLAMP: break;
    }
    return x < a ? a : (x > b ? b : x); /* clamp; NaN passes through */
}

static inline float param_apply_f(param_op op, float x, float a, float b) {
    switch (op) {
    case P_AFFINE: return x * a + b;
    case P_POWF: return wk__op_pow_f32(x, a);
    case P_ELU: return x >= 0 ? x : a * (expf(x) - 1.0f);
    case P_CLAMP: break;
    }
    return x < a ? a : (x > b ? b : x);
}

static void param_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    param_ctx *c = p;
    size_t es = wk__dtype_elem_bytes(c->dt);
    const void *s = c->src + offs[1] * (int64_t)es;
    void *d = c->dst + offs[0] * (int64_t)es;
    int64_t ss = st[1];
    if (c->dt == WK_F32) {
        const float *x = s;
        float *y = d, a = (float)c->a, b = (float)c->b;
        if (c->op == P_AFFINE && ss == 1)
            for (int64_t i = 0; i < n; i++) y[i] = x[i] * a + b;
        else
            for (int64_t i = 0; i < n; i++) y[i] = param_apply_f(c->op, x[i * ss], a, b);
    } else if (c->dt == WK_F64) {
        for (int64_t i = 0; i < n; i++) ((double *)d)[i] = param_apply(c->op, ((const double *)s)[i * ss], c->a, c->b);
    } else if (wk__is_narrow_float(c->dt)) {
        for (int64_t i = 0; i < n; i++)
            wk__narrow_store(d, i, c->dt,
                             param_apply_f(c->op, wk__narrow_load(s, i * ss, c->dt), (float)c->a, (float)c->b));
    } else if (c->op == P_CLAMP) {
        /* integers: compare exactly, clamp bounds rounded inward */
        double lo = ceil(c->a), hi = floor(c->b);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = wk__load_i64(s, i * ss, c->dt);
            double dv = (double)v;
            if (dv < lo) wk__store_f64(d, i, c->dt, lo);
            else if (dv > hi) wk__store_f64(d, i, c->dt, hi);
            else wk__store_i64(d, i, c->dt, v);
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            wk__store_f64(d, i, c->dt, param_apply(c->op, (double)wk__load_i64(s, i * ss, c->dt), c->a, c->b));
    }
}

static wk_status param(param_op op, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double a, double b) {
    param_ctx c = {op, src, dst, dt, a, b};
    foreach_unary(src, ls, dst, param_run, &c);
    return WK_OK;
}

wk_status wk__cpu_affine(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double mul,
                         double add) {
    (void)dev;
    return param(P_AFFINE, src, ls, dst, dt, mul, add);
}
wk_status wk__cpu_powf(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double e) {
    (void)dev;
    return param(P_POWF, src, ls, dst, dt, e, 0);
}
wk_status wk__cpu_elu(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double alpha) {
    (void)dev;
    return param(P_ELU, src, ls, dst, dt, alpha, 0);
}
wk_status wk__cpu_clamp(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double lo,
                        double hi) {
    (void)dev;
    return param(P_CLAMP, src, ls, dst, dt, lo, hi);
}
