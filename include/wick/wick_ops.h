/*
 * wick — the op lists: every elementwise and reduction op, once.
 *
 * Included by <wick/wick.h>, which generates from these lists the public
 * enums (wk_unary_op, wk_binary_op, wk_cmp_op, wk_reduce_op, with their
 * *_COUNT), and the one-op functions (wk_exp, wk_add, wk_sum, ...). Inside
 * the library the same lines generate the op names, the integer rules, the
 * backward-rule table, the count checks and every kernel switch (CPU and
 * CUDA), so a new op is one line here plus its scalar math.
 *
 * The order of each list is the enum's numeric order: append, never
 * reorder. Columns after the first two are read only by the library; they
 * are documented here because they are part of each op's meaning.
 */
#ifndef WICK_WICK_OPS_H
#define WICK_WICK_OPS_H

/* --------------------------------------------------------------- unary
 * X(ENUM, name, integers, backward, exact, cpu_f32)
 *   name      the function wk_<name>(t) and the op's name in errors
 *   integers  INT_NONE: not defined on integer dtypes (WK_ERR_DTYPE);
 *             INT_ID: the identity on integers;
 *             INT_DEF: a defined integer meaning, wrapping like C unsigned
 *             arithmetic (abs/neg of the minimum value give the minimum)
 *   backward  the derivative rule autograd keys on (BW_* in src/tensor/op_lists.h)
 *   exact     EXACT: exactly rounded, bit-identical on every backend;
 *             LIBM: libm-class math, a few ulp apart between backends
 *   cpu_f32   VMATH: the CPU's f32 runs the SIMD kernel wk__v<name>_f32;
 *             SCALAR: the scalar math (wk__op_<name>_f32) in a loop */
#define WK_UNARY_OPS(X)                                                                 \
    X(WK_EXP,      exp,      INT_NONE, BW_EXP,      LIBM,  VMATH)                       \
    X(WK_LOG,      log,      INT_NONE, BW_LOG,      LIBM,  VMATH)                       \
    X(WK_SIN,      sin,      INT_NONE, BW_SIN,      LIBM,  SCALAR)                      \
    X(WK_COS,      cos,      INT_NONE, BW_COS,      LIBM,  SCALAR)                      \
    X(WK_TANH,     tanh,     INT_NONE, BW_TANH,     LIBM,  VMATH)                       \
    X(WK_ABS,      abs,      INT_DEF,  BW_ABS,      EXACT, SCALAR)                      \
    X(WK_NEG,      neg,      INT_DEF,  BW_NEG,      EXACT, SCALAR)                      \
    X(WK_RECIP,    recip,    INT_NONE, BW_RECIP,    EXACT, SCALAR)                      \
    X(WK_SQR,      sqr,      INT_DEF,  BW_SQR,      EXACT, SCALAR)                      \
    X(WK_SQRT,     sqrt,     INT_NONE, BW_SQRT,     EXACT, SCALAR)                      \
    /* gelu: tanh approximation; gelu_erf: the exact erf form */                       \
    X(WK_GELU,     gelu,     INT_NONE, BW_GELU,     LIBM,  VMATH)                       \
    X(WK_GELU_ERF, gelu_erf, INT_NONE, BW_GELU_ERF, LIBM,  VMATH)                       \
    X(WK_ERF,      erf,      INT_NONE, BW_ERF,      LIBM,  VMATH)                       \
    X(WK_RELU,     relu,     INT_DEF,  BW_RELU,     EXACT, SCALAR)                      \
    X(WK_SILU,     silu,     INT_NONE, BW_SILU,     LIBM,  VMATH)                       \
    X(WK_CEIL,     ceil,     INT_ID,   BW_ZERO,     EXACT, SCALAR)                      \
    X(WK_FLOOR,    floor,    INT_ID,   BW_ZERO,     EXACT, SCALAR)                      \
    /* round: half away from zero (C round) */                                         \
    X(WK_ROUND,    round,    INT_ID,   BW_ZERO,     EXACT, SCALAR)                      \
    /* sign: -1, 0 or 1; NaN and -0 pass through */                                    \
    X(WK_SIGN,     sign,     INT_DEF,  BW_ZERO,     EXACT, SCALAR)                      \
    X(WK_SIGMOID,  sigmoid,  INT_NONE, BW_SIGMOID,  LIBM,  VMATH)

/* -------------------------------------------------------------- binary
 * numpy broadcasting; same dtype and device. Integers: + - * wrap, / and
 * pow as below. X(ENUM, name, backward, exact, cpu_f32)
 *   exact     as for unary ops (EXACT / LIBM)
 *   cpu_f32   VMATH: wk__vbinary_f32 (numbers ops as this enum);
 *             SCALAR: the scalar math (wk__op_<name>_f32) in a loop */
#define WK_BINARY_OPS(X)                                                                \
    X(WK_ADD,     add,     BW_ADD,     EXACT, VMATH)                                    \
    X(WK_SUB,     sub,     BW_SUB,     EXACT, VMATH)                                    \
    X(WK_MUL,     mul,     BW_MUL,     EXACT, VMATH)                                    \
    /* div: integers truncate toward zero, MIN / -1 wraps to MIN, division   */        \
    /* by zero is WK_ERR_DIV_ZERO */                                                    \
    X(WK_DIV,     div,     BW_DIV,     EXACT, VMATH)                                    \
    /* maximum/minimum: NaN if either is NaN (numpy) */                                 \
    X(WK_MAXIMUM, maximum, BW_MAXIMUM, EXACT, VMATH)                                    \
    X(WK_MINIMUM, minimum, BW_MINIMUM, EXACT, VMATH)                                    \
    /* pow: a^b elementwise. Floats: C pow (bf16/f16/f8 through f32 powf).   */        \
    /* Integers: the exact power wrapping like *, 0^0 = 1; a negative        */        \
    /* exponent is WK_ERR_ARG (numpy: "Integers to negative integer powers   */        \
    /* are not allowed"), checked on the data. */                                      \
    X(WK_POW,     pow,     BW_POW,     LIBM,  SCALAR)

/* --------------------------------------------------------- comparisons
 * -> u8 0/1, broadcasting, compared in the compute type. X(ENUM, name, C operator) */
#define WK_CMP_OPS(X)   \
    X(WK_EQ, eq, ==)    \
    X(WK_NE, ne, !=)    \
    X(WK_LT, lt, <)     \
    X(WK_LE, le, <=)    \
    X(WK_GT, gt, >)     \
    X(WK_GE, ge, >=)

/* ---------------------------------------------------------- reductions
 * X(ENUM, name, form): which one-op functions wick.h declares
 *   DIMS  wk_<name>(t, dims, ndims, keepdim) and wk_<name>_all(t)
 *   ARG   wk_<name>(t, dim, keepdim), -> u32 indices
 *   ONLY  none: through wk_reduce(t, op, ...) (any/all return u8) */
#define WK_REDUCE_OPS(X)                    \
    X(WK_REDUCE_SUM,    sum,    DIMS)       \
    X(WK_REDUCE_MEAN,   mean,   DIMS)       \
    X(WK_REDUCE_MAX,    max,    DIMS)       \
    X(WK_REDUCE_MIN,    min,    DIMS)       \
    X(WK_REDUCE_ARGMAX, argmax, ARG)        \
    X(WK_REDUCE_ARGMIN, argmin, ARG)        \
    X(WK_REDUCE_PROD,   prod,   ONLY)       \
    X(WK_REDUCE_ANY,    any,    ONLY)       \
    X(WK_REDUCE_ALL,    all,    ONLY)

/* ---- generators used by wick.h and the library ---- */
#define WK__OP_ENUM(e, ...) e,
#define WK__UNARY_PROTO(e, n, ...) wk_tensor *wk_##n(const wk_tensor *t);
#define WK__BINARY_PROTO(e, n, ...) wk_tensor *wk_##n(const wk_tensor *a, const wk_tensor *b);
#define WK__REDUCE_PROTO(e, n, form) WK__REDUCE_PROTO_##form(n)
#define WK__REDUCE_PROTO_DIMS(n)                                                       \
    wk_tensor *wk_##n(const wk_tensor *t, const int *dims, int ndims, bool keepdim);   \
    wk_tensor *wk_##n##_all(const wk_tensor *t);
#define WK__REDUCE_PROTO_ARG(n) wk_tensor *wk_##n(const wk_tensor *t, int dim, bool keepdim);
#define WK__REDUCE_PROTO_ONLY(n)

#endif
