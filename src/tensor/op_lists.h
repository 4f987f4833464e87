/* The library's side of the op lists. The lists themselves are public
 * (include/wick/wick_ops.h: wick.h generates the enums and the one-op
 * functions from them, so they must be visible to users); this header
 * gives meaning to the columns only the library reads, and declares the
 * tables tensor/op_lists.c generates from them. One list
 * line per op, not a public list plus a private one, so that the columns
 * cannot drift apart and a new op is one line. */
#ifndef WICK_OPS_H
#define WICK_OPS_H
#include "wick/wick.h"

/* Unary "integers" column: what an integer dtype means for the op. */
enum wk_int_rule { INT_NONE = 0, INT_ID, INT_DEF };

extern const int wk__unary_int_rule[];

/* The derivative rules, keyed by the lists' backward column (x: input,
 * y: output, g: the incoming gradient; binary: the gradients of a and b).
 * src/autograd/rules_elementwise.c implements one case per rule; an op
 * whose line names a rule not listed here does not compile. */
#define WK_BACKWARD_RULES(X)                                              \
    X(BW_ZERO, "0 (piecewise constant)")                                  \
    X(BW_EXP, "g * y")                                                    \
    X(BW_LOG, "g / x")                                                    \
    X(BW_SIN, "g * cos(x)")                                               \
    X(BW_COS, "-g * sin(x)")                                              \
    X(BW_TANH, "g * (1 - y^2)")                                           \
    X(BW_ABS, "g * sign(x)")                                              \
    X(BW_NEG, "-g")                                                       \
    X(BW_RECIP, "-g * y^2")                                               \
    X(BW_SQR, "2 * g * x")                                                \
    X(BW_SQRT, "g / (2 * y)")                                             \
    X(BW_GELU, "g * d/dx[0.5x(1 + tanh(k0(x + k1 x^3)))]")                \
    X(BW_GELU_ERF, "g * (Phi(x) + x * phi(x))")                           \
    X(BW_ERF, "g * 2/sqrt(pi) * exp(-x^2)")                               \
    X(BW_RELU, "g * (x > 0)")                                             \
    X(BW_SILU, "g * s * (1 + x * (1 - s)), s = sigmoid(x)")               \
    X(BW_SIGMOID, "g * y * (1 - y)")                                      \
    X(BW_ADD, "g, g")                                                     \
    X(BW_SUB, "g, -g")                                                    \
    X(BW_MUL, "g * b, g * a")                                             \
    X(BW_DIV, "g / b, -g * a / b^2")                                      \
    X(BW_MAXIMUM, "g * (a >= b), g * (a < b)")                            \
    X(BW_MINIMUM, "g * (a <= b), g * (a > b)")                            \
    X(BW_POW, "g * b * a^(b-1), g * y * log(a)")

#define WK__BW_ENUM(e, formula) e,
typedef enum wk__backward_rule { WK_BACKWARD_RULES(WK__BW_ENUM) WK__BW_COUNT } wk__backward_rule;
#undef WK__BW_ENUM

/* Per op: its rule (op_lists.c; sizes checked there against the lists). */
extern const wk__backward_rule wk__unary_backward[WK_UNARY_COUNT];
extern const wk__backward_rule wk__binary_backward[WK_BINARY_COUNT];
/* Per rule: the formula above, as text (tests/test_op_lists.c reads it). */
extern const char *const wk__backward_formula[WK__BW_COUNT];

/* Each op's name ("wk_exp", ...; op_lists.c), indexed by an op already
 * range-checked: the ops read them on every call, so no function call and
 * no second check (wk_unary_name & co. are the checked public forms). */
extern const char *const wk__unary_names[];
extern const char *const wk__binary_names[];
extern const char *const wk__cmp_names[];
/* The name of a reduce op for errors ("wk_sum", ...; op_lists.c). */
const char *wk__reduce_name(wk_reduce_op op);
#endif
