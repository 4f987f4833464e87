/* Checked size arithmetic: every place that sums or multiplies sizes taken
 * from user input (cat, stack, pad, repeat, conv/pool output sizes, reshape,
 * matmul batches) goes through these, so a hostile shape becomes a clean
 * WK_ERR_SHAPE instead of a wrapped size and a write past a buffer. */
#ifndef WICK_CORE_CHECKED_H
#define WICK_CORE_CHECKED_H
#include <stdbool.h>
#include <stdint.h>

/* The most elements a shape may describe (product of its nonzero dims; the
 * rule of wk__check_shape). 2^56 keeps every stride, element offset and byte
 * count (x 8 bytes) computed from such a shape far inside int64. */
#define WK__MAX_NUMEL (INT64_C(1) << 56)

/* *out = a + b; true if the exact result does not fit in int64. */
static inline bool wk__add_overflow_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_add_overflow(a, b, out);
}
/* *out = a * b; true if the exact result does not fit in int64. */
static inline bool wk__mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_mul_overflow(a, b, out);
}

/* True when a shape's dims are all >= 0 and the product of its nonzero dims
 * is at most WK__MAX_NUMEL (so numel and numel * 8 bytes fit in int64 and
 * size_t). The error-recording form is wk__check_shape (tensor/layout.h). */
static inline bool wk__shape_fits(const int64_t *shape, int rank) {
    int64_t nz = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return false;
        if (shape[i] == 0) continue;
        if (wk__mul_overflow_i64(nz, shape[i], &nz) || nz > WK__MAX_NUMEL) return false;
    }
    return true;
}

#endif
