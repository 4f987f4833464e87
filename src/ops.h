/* The op lists, each op once. X(ENUM, name, int_rule)
 * Unary int_rule: what an integer dtype means for the op:
 *   INT_NONE   - not defined on integers: an error naming op and dtype
 *   INT_ID     - identity on integers (ceil, floor, round)
 *   INT_DEF    - a defined integer meaning (abs, neg, sqr, sign, relu)
 * Everything that keys on an op (names, dtype checks, CPU kernels, later the
 * CUDA kernel names and backward rules) is generated from these lists. */
#ifndef WICK_OPS_H
#define WICK_OPS_H

#define WK_UNARY_OPS(X)              \
    X(WK_EXP, "exp", INT_NONE)       \
    X(WK_LOG, "log", INT_NONE)       \
    X(WK_SIN, "sin", INT_NONE)       \
    X(WK_COS, "cos", INT_NONE)       \
    X(WK_TANH, "tanh", INT_NONE)     \
    X(WK_ABS, "abs", INT_DEF)        \
    X(WK_NEG, "neg", INT_DEF)        \
    X(WK_RECIP, "recip", INT_NONE)   \
    X(WK_SQR, "sqr", INT_DEF)        \
    X(WK_SQRT, "sqrt", INT_NONE)     \
    X(WK_GELU, "gelu", INT_NONE)     \
    X(WK_GELU_ERF, "gelu_erf", INT_NONE) \
    X(WK_ERF, "erf", INT_NONE)       \
    X(WK_RELU, "relu", INT_DEF)      \
    X(WK_SILU, "silu", INT_NONE)     \
    X(WK_CEIL, "ceil", INT_ID)       \
    X(WK_FLOOR, "floor", INT_ID)     \
    X(WK_ROUND, "round", INT_ID)     \
    X(WK_SIGN, "sign", INT_DEF)      \
    X(WK_SIGMOID, "sigmoid", INT_NONE)

/* Binary ops: all defined on every dtype (integer div by zero is an error). */
#define WK_BINARY_OPS(X)        \
    X(WK_ADD, "add")            \
    X(WK_SUB, "sub")            \
    X(WK_MUL, "mul")            \
    X(WK_DIV, "div")            \
    X(WK_MAXIMUM, "maximum")    \
    X(WK_MINIMUM, "minimum")

#define WK_CMP_OPS(X) \
    X(WK_EQ, "eq")    \
    X(WK_NE, "ne")    \
    X(WK_LT, "lt")    \
    X(WK_LE, "le")    \
    X(WK_GT, "gt")    \
    X(WK_GE, "ge")

#define WK_REDUCE_OPS(X)                  \
    X(WK_REDUCE_SUM, "sum")               \
    X(WK_REDUCE_MEAN, "mean")             \
    X(WK_REDUCE_MAX, "max")               \
    X(WK_REDUCE_MIN, "min")               \
    X(WK_REDUCE_ARGMAX, "argmax")         \
    X(WK_REDUCE_ARGMIN, "argmin")         \
    X(WK_REDUCE_PROD, "prod")             \
    X(WK_REDUCE_ANY, "any")               \
    X(WK_REDUCE_ALL, "all")

enum wk_int_rule { INT_NONE = 0, INT_ID, INT_DEF };

extern const int wk__unary_int_rule[];

#endif
