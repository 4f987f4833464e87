/* Shared helpers for the cmocka tests. Include after <cmocka.h>'s prerequisites. */
#ifndef WICK_TESTUTIL_H
#define WICK_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "wick/wick.h"

/* A CPU f32 tensor from values (row-major) and a shape. Fails the test on error. */
wk_tensor *tu_f32(const float *v, const int64_t *shape, int rank);
/* Any dtype from doubles (converted like wk_to_dtype from f64). */
wk_tensor *tu_make(const double *v, const int64_t *shape, int rank, wk_dtype dt);
/* A batch x rows x cols matmul operand with values from rnd(), in one of
 * three layouts: 0 row-major, 1 a transposed view of a (cols x rows)
 * tensor, 2 narrowed out of a wider one (row stride cols + 7). */
wk_tensor *tu_matrix_operand(int64_t batch, int64_t rows, int64_t cols, int variant, wk_dtype dt,
                             double (*rnd)(void));
/* Assert t is non-NULL (prints wk_last_error otherwise). */
#define TU_OK(t) tu_ok_((t), #t, __FILE__, __LINE__)
wk_tensor *tu_ok_(wk_tensor *t, const char *expr, const char *file, int line);
/* Assert a call returned WK_OK. */
#define TU_STATUS_OK(s) tu_status_ok_((s), #s, __FILE__, __LINE__)
void tu_status_ok_(wk_status s, const char *expr, const char *file, int line);
/* Assert a tensor-returning call failed with status st (and clear the error). */
#define TU_FAILS(t, st) tu_fails_((t), (st), #t, __FILE__, __LINE__)
void tu_fails_(wk_tensor *t, wk_status st, const char *expr, const char *file, int line);
/* Assert shape equals. */
void tu_assert_shape(const wk_tensor *t, const int64_t *shape, int rank);
/* Assert every element (read as f64) is within atol + rtol*|expected|. */
void tu_assert_close(const wk_tensor *t, const double *expected, int64_t n, double atol, double rtol);
/* Max |a-b| of two tensors of equal shape (read as f64). */
double tu_max_abs_diff(const wk_tensor *a, const wk_tensor *b);

/* wk_cuda(0), or print why there is none and skip the test (cmocka skip()). */
wk_device *tu_cuda_or_skip(void);
/* CPU tensor of a shape with values from a formula (varied signs, fractions). */
wk_tensor *tu_values(const int64_t *shape, int rank, wk_dtype dt, double scale, double shift);
/* wk_to_device that asserts success and the device. */
wk_tensor *tu_to_device(const wk_tensor *t, wk_device *g);
/* Assert a device result equals a CPU reference within atol + rtol*|ref|
 * (NaN matches NaN); shapes and dtypes must agree. */
void tu_assert_matches(const char *what, const wk_tensor *gpu, const wk_tensor *ref, double atol, double rtol);
/* A relative tolerance per float dtype (0 for integers). */
double tu_tol(wk_dtype dt);

/* An operand of an m x n elementwise op, for tests of the kernels' stride
 * patterns: its kind fixes its shape and layout (full m x n, a row (n)
 * broadcast down, a column (m, 1) broadcast across, a rank-0 scalar, or a
 * transposed view of an n x m tensor). host holds the stored elements,
 * written by fill. */
enum { TU_FULL, TU_ROW, TU_COL, TU_SCALAR, TU_TRANSPOSED, TU_NKINDS };
typedef struct {
    int kind;
    void *host;
    wk_tensor *t;
} tu_opnd;
void tu_opnd_make(tu_opnd *o, int kind, int64_t m, int64_t n, wk_dtype dt, void (*fill)(void *, int64_t, wk_dtype));
/* elements stored for a kind (n, m, 1 or m * n) */
int64_t tu_opnd_count(int kind, int64_t m, int64_t n);
/* index into host of element (i, j) of the m x n op */
int64_t tu_opnd_at(const tu_opnd *o, int64_t i, int64_t j, int64_t m, int64_t n);
void tu_opnd_free(tu_opnd *o);

#endif
