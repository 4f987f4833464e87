/* The op lists' tables (include/wick/wick_ops.h lists the ops, op_lists.h
 * gives the library's columns their meaning): each op's name, the integer
 * rule of the unary ops, the backward rule of each unary and binary op and
 * the rules' formulas. In the tensor floor because every floor above reads
 * them: the ops for errors and dtype rules, the backends for their names,
 * autograd for the rules. */
#include "tensor/tensor.h"
#include "tensor/op_lists.h"

#define NAME_ENTRY(e, n, ...) [e] = #n,
const char *const wk__unary_names[] = {WK_UNARY_OPS(NAME_ENTRY)};
const char *const wk__binary_names[] = {WK_BINARY_OPS(NAME_ENTRY)};
const char *const wk__cmp_names[] = {WK_CMP_OPS(NAME_ENTRY)};
#define RULE_ENTRY(e, n, r, ...) [e] = r,
const int wk__unary_int_rule[] = {WK_UNARY_OPS(RULE_ENTRY)};
#define UNARY_BW_ENTRY(e, n, r, bw, ...) [e] = bw,
const wk__backward_rule wk__unary_backward[WK_UNARY_COUNT] = {WK_UNARY_OPS(UNARY_BW_ENTRY)};
#define BINARY_BW_ENTRY(e, n, bw, ...) [e] = bw,
const wk__backward_rule wk__binary_backward[WK_BINARY_COUNT] = {WK_BINARY_OPS(BINARY_BW_ENTRY)};
#define FORMULA_ENTRY(e, f) [e] = f,
const char *const wk__backward_formula[WK__BW_COUNT] = {WK_BACKWARD_RULES(FORMULA_ENTRY)};

/* One entry per op in every table: an op added to a list without its
 * columns fails here (or at the X macro's arity) rather than at run time.
 * The backward tables have their size fixed by the declaration, so these
 * count the lines instead. */
#define COUNT_ONE(...) +1
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(ARRAY_LEN(wk__unary_names) == WK_UNARY_COUNT, "one name per unary op");
_Static_assert(ARRAY_LEN(wk__binary_names) == WK_BINARY_COUNT, "one name per binary op");
_Static_assert(ARRAY_LEN(wk__cmp_names) == WK_CMP_COUNT, "one name per comparison");
_Static_assert(ARRAY_LEN(wk__unary_int_rule) == WK_UNARY_COUNT, "one integer rule per unary op");
_Static_assert(0 WK_UNARY_OPS(COUNT_ONE) == WK_UNARY_COUNT, "one backward rule per unary op");
_Static_assert(0 WK_BINARY_OPS(COUNT_ONE) == WK_BINARY_COUNT, "one backward rule per binary op");
_Static_assert(0 WK_BACKWARD_RULES(COUNT_ONE) == WK__BW_COUNT, "one formula per backward rule");

const char *wk_unary_name(wk_unary_op op) { return (unsigned)op < WK_UNARY_COUNT ? wk__unary_names[op] : "invalid"; }
const char *wk_binary_name(wk_binary_op op) { return (unsigned)op < WK_BINARY_COUNT ? wk__binary_names[op] : "invalid"; }
const char *wk_cmp_name(wk_cmp_op op) { return (unsigned)op < WK_CMP_COUNT ? wk__cmp_names[op] : "invalid"; }

static const char *const k_reduce_names[] = {WK_REDUCE_OPS(NAME_ENTRY)};
_Static_assert(sizeof k_reduce_names / sizeof k_reduce_names[0] == WK_REDUCE_COUNT, "one name per reduce op");

const char *wk__reduce_name(wk_reduce_op op) { return (unsigned)op < WK_REDUCE_COUNT ? k_reduce_names[op] : "wk_reduce"; }
