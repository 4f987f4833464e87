/* Case labels for switches over wk_dtype. Switches never use `default:`, so
 * -Wswitch names every switch a new dtype must reach; the block dtypes reach
 * no element kernel (the tensor layer refuses element ops on them), so those
 * switches list them with one label. Plain C: included by .c and .cu alike. */
#ifndef WICK_CORE_DTYPE_CASES_H
#define WICK_CORE_DTYPE_CASES_H
#include "wick/wick.h"

#define WK__CASE_BLOCK_DTYPES                                                                           \
    case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0: case WK_Q8_1: case WK_Q2_K: \
    case WK_Q3_K: case WK_Q4_K: case WK_Q5_K: case WK_Q6_K: case WK_Q8_K: case WK_IQ4_NL: case WK_IQ4_XS

#endif
