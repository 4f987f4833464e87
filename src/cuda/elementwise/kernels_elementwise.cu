/* CUDA kernels: unary ops, affine/powf/elu/clamp, binary ops, comparisons
 * and where (launchers declared in cuda_kernels.h). One kernel per op
 * family and dtype (f32, f64, bf16, f16, f8e4m3 each; the five integer
 * dtypes share one that extends to 64 bits and truncates back; where: one
 * per element size); the op itself is a runtime switch, uniform across the
 * grid. 28 kernels, not one per (op, dtype). The transcendental math runs
 * out of line (one copy per file), the cheap ops inline.
 *
 * Semantics mirror the CPU backend (cpu_unary.c, cpu_binary.c, vmath.c):
 *  - bf16/f16/f8e4m3 compute in f32 and round once on store (RNE / sat.);
 *  - f32 ops use the forms of vmath.c's reference level: sigmoid, silu and
 *    gelu (tanh form, as x*sigmoid(2u)) through exp(-|x|), gelu_erf as
 *    0.5x*erfc(-x/sqrt2), silu/gelu/gelu_erf(-inf) = -0; f64 uses the
 *    textbook formulas (0.5x(1+tanh u) etc.): all of it the one copy in
 *    base/op_math.h that the CPU kernels include too;
 *    round is half away from zero (C round). Exact ops (abs neg sqr relu
 *    sign ceil floor round recip sqrt, + - * /, max/min, affine, clamp,
 *    comparisons, where, every integer op) are bit-identical to the CPU;
 *    exp log sin cos tanh erf gelu gelu_erf silu sigmoid powf elu pow are CUDA's
 *    libdevice functions, a few ulp from glibc / wick's SIMD polynomials
 *    (so a bf16/f16 result can differ by one unit where the f32 value sits
 *    near a rounding boundary);
 *  - integers: abs/neg/sqr wrap, relu/sign as on the CPU, ceil/floor/round
 *    identity; + - * wrap; division truncates, MIN / -1 wraps, division by
 *    zero writes 0 and sets *err_flag = WK_ERR_DIV_ZERO;
 *  - maximum/minimum: NaN if either is NaN, else a > b ? a : b (b on ties);
 *  - pow: C pow / powf; integers: the exact power wrapping, a negative
 *    exponent writes 0 and sets *err_flag = WK_ERR_ARG;
 *  - affine is mul then add, each rounded (no FMA contraction, as the CPU);
 *    integer affine/powf/elu compute in double and store saturating; integer
 *    clamp compares exactly with bounds rounded inward;
 *  - comparisons in the compute type -> u8 0/1; where: cond true when it
 *    loads (wk__load_i64 rules) as nonzero; where loads both a and b.
 * Checked: nvcc compile (sm_80/86/89/90 + compute_90 PTX) warning-free with
 * -Wall -Wextra -Wshadow on the host side, gcc and clang as host compiler;
 * the element code, packing and grid loop run on the host
 * (WKC_HOST_EMULATION) against the CPU backend for every dtype, op and
 * layout kind (contiguous, offset, transposed, narrowed, stepped,
 * broadcast, rank 0, rank 8, empty). */
#include "cuda/common/cuda_index.cuh"
#include "base/op_math.h"

namespace {

/* ---------------------------------------------------------------- unary */

/* The scalar math is base/op_math.h, shared with the CPU. The list's exact
 * column decides what inlines: the exact ops (abs, neg, ..., sqrt) inline;
 * the libm-class ones run out of line, one copy of the f32 (f64) math per
 * file instead of one per dtype and unrolled element (compile time and code
 * size; a call is cheap next to expf/erff). */
__host__ __device__ __noinline__ float unary_f32_ool(int op, float x) { return wk__unary_f32((wk_unary_op)op, x); }
__host__ __device__ __noinline__ double unary_f64_ool(int op, double x) { return wk__unary_f64((wk_unary_op)op, x); }

template <class F> WKC_HD F unary_libm(int op, F x) {
    if constexpr (sizeof(F) == 4) return unary_f32_ool(op, x);
    else return unary_f64_ool(op, x);
}
/* the exact column: the op's own math inline, or the out-of-line call */
#define WKC_CALL_EXACT(n)                                          \
    if constexpr (sizeof(F) == 4) return wk__op_##n##_f32(x);      \
    else return wk__op_##n##_f64(x);
#define WKC_CALL_LIBM(n) return unary_libm<F>(op, x);
#define WKC_UNARY_CASE(e, n, ir, bw, ex, k) case e: { WKC_CALL_##ex(n) }
template <class F> WKC_HD F unary_float(int op, F x) {
    switch ((wk_unary_op)op) {
        WK_UNARY_OPS(WKC_UNARY_CASE)
    case WK_UNARY_COUNT: break;
    }
    return x;
}
#undef WKC_UNARY_CASE

/* ---- integers: one kernel per family for all five integer dtypes ----
 * Elements are loaded as raw bits, sign- or zero-extended to 64 bits, the
 * op computed in 64 bits (op_math.h) and the result truncated to the
 * dtype's width: the CPU's arithmetic exactly (the CPU does the same). */

/* Trait for the merged integer kernels: raw bits in, raw bits out. */
#define WKC_ANY_INT 100

/* Loaded element of dtype DT (raw bits for WKC_ANY_INT) */
template <int DT> struct wkc_el {
    typedef typename wkc_t<DT>::S S; /* what is loaded */
    typedef typename wkc_t<DT>::C C; /* what is computed and stored */
    static WKC_HD S load(const void *p, int64_t i, int) { return ((const S *)p)[i]; }
    static WKC_HD C val(S s) { return wkc_t<DT>::val(s); }
    static WKC_HD void store(void *p, int64_t i, int, C v) { wkc_t<DT>::store(p, i, v); }
};
template <> struct wkc_el<WKC_ANY_INT> {
    typedef unsigned long long S;
    typedef unsigned long long C;
    static WKC_HD S load(const void *p, int64_t i, int dt) { return wkc_raw_load(p, i, dt); }
    static WKC_HD void store(void *p, int64_t i, int dt, C v) { wkc_put_bits(p, i, dt, v); }
};

struct UnaryP {
    wkc_pack<2> pk; /* 0: dst (contiguous), 1: src */
    void *dst;
    const void *src;
    int32_t op, dt;
};

template <int DT> struct UnaryOp {
    typedef wkc_el<DT> el;
    typedef typename el::S L;
    typedef typename el::C V;
    static WKC_HD L load(const UnaryP &p, const int64_t *off) { return el::load(p.src, off[1], p.dt); }
    static WKC_HD V apply(const UnaryP &p, L l) {
        if constexpr (DT == WKC_ANY_INT) return wkc_bits_i64(p.dt, wk__unary_int((wk_unary_op)p.op, wkc_int_ext(p.dt, l)));
        else return unary_float<V>(p.op, el::val(l));
    }
    static WKC_HD void put(const UnaryP &p, int64_t o, V v) { el::store(p.dst, o, p.dt, v); }
};

/* ------------------------------------------- affine, powf, elu, clamp */

enum param_op { P_AFFINE, P_POWF, P_ELU, P_CLAMP };

struct ParamP {
    wkc_pack<2> pk;
    void *dst;
    const void *src;
    int32_t op, dt;
    double a, b;
};

template <class F> WKC_HD F param_apply(int op, F x, F a, F b) {
    switch ((param_op)op) {
    case P_AFFINE: return wkc_add_rn(wkc_mul_rn(x, a), b);
    case P_POWF: return pow(x, a);
    case P_ELU: return x >= 0 ? x : a * (exp(x) - (F)1);
    case P_CLAMP: break;
    }
    return x < a ? a : (x > b ? b : x); /* clamp; NaN passes through */
}
/* float overloads: powf/expf, not the double functions */
template <> WKC_HD float param_apply<float>(int op, float x, float a, float b) {
    switch ((param_op)op) {
    case P_AFFINE: return wkc_add_rn(wkc_mul_rn(x, a), b);
    case P_POWF: return powf(x, a);
    case P_ELU: return x >= 0 ? x : a * (expf(x) - 1.0f);
    case P_CLAMP: break;
    }
    return x < a ? a : (x > b ? b : x);
}

/* out of line (powf/expf/pow/exp), as the unary math */
__host__ __device__ __noinline__ float param_f32_ool(int op, float x, float a, float b) {
    return param_apply<float>(op, x, a, b);
}
__host__ __device__ __noinline__ double param_f64_ool(int op, double x, double a, double b) {
    return param_apply<double>(op, x, a, b);
}
template <class F> WKC_HD F param_any(int op, F x, F a, F b) {
    if (op == P_AFFINE) return wkc_add_rn(wkc_mul_rn(x, a), b);
    if (op == P_CLAMP) return x < a ? a : (x > b ? b : x);
    if constexpr (sizeof(F) == 4) return param_f32_ool(op, x, a, b);
    else return param_f64_ool(op, x, a, b);
}

template <int DT> struct ParamOp {
    typedef wkc_el<DT> el;
    typedef typename el::S L;
    typedef typename el::C V;
    static WKC_HD L load(const ParamP &p, const int64_t *off) { return el::load(p.src, off[1], p.dt); }
    static WKC_HD V apply(const ParamP &p, L l) {
        if constexpr (DT != WKC_ANY_INT) {
            typedef typename el::C F;
            return param_any<F>(p.op, el::val(l), (F)p.a, (F)p.b);
        } else {
            /* integers compute in double and convert back saturating; clamp
             * compares exactly with the bounds rounded inward */
            double x = (double)wkc_int_ext(p.dt, l);
            if (p.op == P_CLAMP) {
                double lo = ceil(p.a), hi = floor(p.b);
                if (x < lo) return wkc_int_bits_f64(p.dt, lo);
                if (x > hi) return wkc_int_bits_f64(p.dt, hi);
                return l;
            }
            return wkc_int_bits_f64(p.dt, param_any<double>(p.op, x, p.a, p.b));
        }
    }
    static WKC_HD void put(const ParamP &p, int64_t o, V v) { el::store(p.dst, o, p.dt, v); }
};

/* --------------------------------------------------------------- binary */

struct BinP {
    wkc_pack<3> pk; /* 0: dst (contiguous), 1: a, 2: b */
    void *dst;
    const void *a, *b;
    int32_t *err;
    int32_t op, dt;
};

/* As the unary ops: exact ops inline, libm-class ones (pow) out of line,
 * so that no per-dtype kernel carries its own copy of powf. */
__host__ __device__ __noinline__ float bin_f32_ool(int op, float x, float y) {
    return wk__binary_f32((wk_binary_op)op, x, y);
}
__host__ __device__ __noinline__ double bin_f64_ool(int op, double x, double y) {
    return wk__binary_f64((wk_binary_op)op, x, y);
}
#define WKC_BCALL_EXACT(n)                                         \
    if constexpr (sizeof(F) == 4) return wk__op_##n##_f32(x, y);   \
    else return wk__op_##n##_f64(x, y);
#define WKC_BCALL_LIBM(n)                                          \
    if constexpr (sizeof(F) == 4) return bin_f32_ool(op, x, y);    \
    else return bin_f64_ool(op, x, y);
#define WKC_BINARY_CASE(e, n, bw, ex, k) case e: { WKC_BCALL_##ex(n) }
template <class F> WKC_HD F bin_float(int op, F x, F y) {
    switch ((wk_binary_op)op) {
        WK_BINARY_OPS(WKC_BINARY_CASE)
    case WK_BINARY_COUNT: break;
    }
    return x;
}
#undef WKC_BINARY_CASE

WKC_HD void set_err(int32_t *err, int32_t code) {
    if (!err) return;
#ifdef __CUDA_ARCH__
    atomicExch((int *)err, (int)code);
#else
    *err = code;
#endif
}

template <int DT> struct BinOp {
    typedef wkc_el<DT> el;
    typedef typename el::S S;
    typedef wkc_ld2<S, S> L;
    typedef typename el::C V;
    static WKC_HD L load(const BinP &p, const int64_t *off) {
        L l = {el::load(p.a, off[1], p.dt), el::load(p.b, off[2], p.dt)};
        return l;
    }
    static WKC_HD V apply(const BinP &p, L l) {
        if constexpr (DT == WKC_ANY_INT) {
            int e = 0;
            long long r = wk__binary_int((wk_binary_op)p.op, wkc_int_ext(p.dt, l.a), wkc_int_ext(p.dt, l.b), &e);
            if (e) set_err(p.err, e); /* division by zero, negative power: the result is 0 */
            return wkc_bits_i64(p.dt, r);
        } else {
            return bin_float<V>(p.op, el::val(l.a), el::val(l.b));
        }
    }
    static WKC_HD void put(const BinP &p, int64_t o, V v) { el::store(p.dst, o, p.dt, v); }
};

/* ---------------------------------------------------------------- cmp */

struct CmpP {
    wkc_pack<3> pk; /* 0: dst (u8, contiguous), 1: a, 2: b */
    uint8_t *dst;
    const void *a, *b;
    int32_t op, dt;
};

WKC_HD uint8_t cmp_vals(int op, long long x, long long y) { return wk__cmp_int((wk_cmp_op)op, x, y) ? 1 : 0; }
WKC_HD uint8_t cmp_vals(int op, float x, float y) { return wk__cmp_f32((wk_cmp_op)op, x, y) ? 1 : 0; }
WKC_HD uint8_t cmp_vals(int op, double x, double y) { return wk__cmp_f64((wk_cmp_op)op, x, y) ? 1 : 0; }

template <int DT> struct CmpOp {
    typedef wkc_el<DT> el;
    typedef typename el::S S;
    typedef wkc_ld2<S, S> L;
    typedef uint8_t V;
    static WKC_HD L load(const CmpP &p, const int64_t *off) {
        L l = {el::load(p.a, off[1], p.dt), el::load(p.b, off[2], p.dt)};
        return l;
    }
    static WKC_HD V apply(const CmpP &p, L l) {
        if constexpr (DT == WKC_ANY_INT)
            return cmp_vals(p.op, wkc_int_ext(p.dt, l.a), wkc_int_ext(p.dt, l.b));
        else
            return cmp_vals(p.op, el::val(l.a), el::val(l.b));
    }
    static WKC_HD void put(const CmpP &p, int64_t o, V v) { p.dst[o] = v; }
};

/* --------------------------------------------------------------- where */

template <class T> struct WhereP {
    wkc_pack<4> pk; /* 0: dst (contiguous), 1: cond, 2: a, 3: b */
    T *dst;
    const void *cond;
    const T *a, *b;
    int32_t cdt;
};

/* wk__load_i64(cond) != 0 from the cond element's bits: integers exactly
 * (any nonzero bit); floats truncated, NaN -> 0 (|x| >= 1 is true) */
__host__ __device__ __noinline__ bool truthy_float(unsigned long long b, int cdt) {
    return wkc_bits_to_i64(cdt, b) != 0;
}
WKC_HD bool truthy(unsigned long long b, int cdt) { return wkc_is_int(cdt) ? b != 0 : truthy_float(b, cdt); }

/* a and b are both loaded (no load waits on cond), as PyTorch's where */
template <class T> struct WhereOp {
    typedef wkc_ld3<unsigned long long, T, T> L;
    typedef T V;
    static WKC_HD L load(const WhereP<T> &p, const int64_t *off) {
        L l = {wkc_raw_load(p.cond, off[1], p.cdt), p.a[off[2]], p.b[off[3]]};
        return l;
    }
    static WKC_HD V apply(const WhereP<T> &p, L l) { return truthy(l.a, p.cdt) ? l.b : l.c; }
    static WKC_HD void put(const WhereP<T> &p, int64_t o, V v) { p.dst[o] = v; }
};

template <class T>
static int where_sized(wk_cu_stream s, const wkc_pack<4> &pk, const void *cond, int cdt, const void *a,
                       const void *b, void *dst) {
    WhereP<T> p;
    p.pk = pk;
    p.dst = (T *)dst;
    p.cond = cond;
    p.a = (const T *)a;
    p.b = (const T *)b;
    p.cdt = cdt;
    return wkc_launch<WhereOp<T>>(s, p);
}

/* Kernel per dtype: the float dtypes each, the integers merged. */
#define WKC_OP_CASES(M)                                                                   \
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: M(WKC_ANY_INT);       \
    case WK_BF16: M(WK_BF16); case WK_F16: M(WK_F16); case WK_F32: M(WK_F32);             \
    case WK_F64: M(WK_F64); case WK_F8E4M3: M(WK_F8E4M3);

/* Pack (dst contiguous of src's shape, src). */
static int64_t pack_unary(wkc_pack<2> *pk, const wk_cu_view *ls) {
    wk_cu_view ld = wkc_contig_view(ls);
    const wk_cu_view *v[2] = {&ld, ls};
    return wkc_pack_views<2>(pk, v);
}

static int param_launch(wk_cu_stream s, int op, const void *src, const wk_cu_view *ls, void *dst, wk_dtype dt,
                        double a, double b) {
    ParamP p;
    int64_t n = pack_unary(&p.pk, ls);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    p.dst = dst;
    p.src = src;
    p.op = op;
    p.dt = dt;
    p.a = a;
    p.b = b;
    switch (dt) {
#define M(D) return wkc_launch<ParamOp<D>>(s, p)
        WKC_OP_CASES(M)
#undef M
    default: return WKC_BAD_ARG;
    }
}

} // namespace

extern "C" int wk__cu_unary(wk_cu_stream s, wk_unary_op op, const void *src, wk_cu_view ls, void *dst, wk_dtype dt) {
    if ((unsigned)op >= WK_UNARY_COUNT) return WKC_BAD_ARG;
    UnaryP p;
    int64_t n = pack_unary(&p.pk, &ls);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    p.dst = dst;
    p.src = src;
    p.op = op;
    p.dt = dt;
    switch (dt) {
#define M(D) return wkc_launch<UnaryOp<D>>(s, p)
        WKC_OP_CASES(M)
#undef M
    default: return WKC_BAD_ARG;
    }
}

extern "C" int wk__cu_affine(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double mul,
                             double add) {
    return param_launch(s, P_AFFINE, src, &ls, dst, dt, mul, add);
}
extern "C" int wk__cu_powf(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double e) {
    return param_launch(s, P_POWF, src, &ls, dst, dt, e, 0);
}
extern "C" int wk__cu_elu(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double alpha) {
    return param_launch(s, P_ELU, src, &ls, dst, dt, alpha, 0);
}
extern "C" int wk__cu_clamp(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double lo,
                            double hi) {
    return param_launch(s, P_CLAMP, src, &ls, dst, dt, lo, hi);
}

extern "C" int wk__cu_binary(wk_cu_stream s, wk_binary_op op, const void *a, wk_cu_view la, const void *b,
                             wk_cu_view lb, void *dst, wk_dtype dt, int32_t *err_flag) {
    if ((unsigned)op >= WK_BINARY_COUNT) return WKC_BAD_ARG;
    wk_cu_view ld = wkc_contig_view(&la);
    const wk_cu_view *v[3] = {&ld, &la, &lb};
    BinP p;
    int64_t n = wkc_pack_views<3>(&p.pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    p.dst = dst;
    p.a = a;
    p.b = b;
    p.err = err_flag;
    p.op = op;
    p.dt = dt;
    switch (dt) {
#define M(D) return wkc_launch<BinOp<D>>(s, p)
        WKC_OP_CASES(M)
#undef M
    default: return WKC_BAD_ARG;
    }
}

extern "C" int wk__cu_cmp(wk_cu_stream s, wk_cmp_op op, const void *a, wk_cu_view la, const void *b, wk_cu_view lb,
                          void *dst, wk_dtype dt) {
    if ((unsigned)op >= WK_CMP_COUNT) return WKC_BAD_ARG;
    wk_cu_view ld = wkc_contig_view(&la);
    const wk_cu_view *v[3] = {&ld, &la, &lb};
    CmpP p;
    int64_t n = wkc_pack_views<3>(&p.pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    p.dst = (uint8_t *)dst;
    p.a = a;
    p.b = b;
    p.op = op;
    p.dt = dt;
    switch (dt) {
#define M(D) return wkc_launch<CmpOp<D>>(s, p)
        WKC_OP_CASES(M)
#undef M
    default: return WKC_BAD_ARG;
    }
}

extern "C" int wk__cu_where(wk_cu_stream s, const void *cond, wk_cu_view lc, wk_dtype cdt, const void *a,
                            wk_cu_view la, const void *b, wk_cu_view lb, void *dst, wk_dtype dt) {
    int es = wkc_size(dt);
    if (es == 0 || wkc_size(cdt) == 0) return WKC_BAD_ARG;
    wk_cu_view ld = wkc_contig_view(&la);
    const wk_cu_view *v[4] = {&ld, &lc, &la, &lb};
    wkc_pack<4> pk;
    int64_t n = wkc_pack_views<4>(&pk, v);
    if (n < 0) return WKC_BAD_ARG;
    if (n == 0) return 0;
    switch (es) {
    case 1: return where_sized<uint8_t>(s, pk, cond, cdt, a, b, dst);
    case 2: return where_sized<uint16_t>(s, pk, cond, cdt, a, b, dst);
    case 4: return where_sized<uint32_t>(s, pk, cond, cdt, a, b, dst);
    default: return where_sized<unsigned long long>(s, pk, cond, cdt, a, b, dst);
    }
}
