/* Helpers shared by the oracle tests (tests/test_oracle*.c): where the
 * generated data lives, reading manifests, loading .npy inputs with their
 * layout variant, the "k=v;k=v" parameter syntax, tolerance rules and
 * bitwise comparison of two results. The manifest formats themselves are
 * described at the top of each tests/oracle/gen_*.py. */
#ifndef WICK_ORACLE_UTIL_H
#define WICK_ORACLE_UTIL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "wick/wick.h"

/* $WICK_ORACLE_DIR (joined with "/sub" unless sub is NULL or "") into out;
 * false when the variable is not set. */
bool ou_dir(const char *sub, char *out, size_t cap);
/* Opens dir/manifest.txt (its path goes to path); NULL if it cannot. */
FILE *ou_open_manifest(const char *dir, char *path, size_t cap);
/* The next line of f that is neither a comment ('#') nor empty; false at EOF. */
bool ou_next_line(FILE *f, char *line, size_t cap);
/* wk_npy_load of dir/file on the CPU (NULL with wick's error on failure). */
wk_tensor *ou_load(const char *dir, const char *file);

/* Value of key in "k=v;k=v" into out (truncated to cap); false if absent. */
bool ou_param(const char *params, const char *key, char *out, size_t cap);
/* "a<sep>b<sep>c" of integers into out (at most cap); the count ("" gives 0), or -1. */
int ou_parse_ints(const char *s, char sep, long long *out, int cap);
/* "2x3x4" (or "_" for rank 0) into shape; the rank or -1. */
int ou_parse_shape(const char *s, int64_t *shape);
/* "DTYPE", "SHAPE", "ARG", "INDEX", "DIV_ZERO", "DEVICE" -> the status. */
bool ou_status_from_name(const char *s, wk_status *st);

/* Applies one view token ("c", "t" = transpose of the last two dims,
 * "nD:S:L" narrow, "bSHAPE" broadcast_as, "pA:B:C" permute) to *t. The
 * previous tensor is left to the current scope. On failure why says why. */
bool ou_apply_view(wk_tensor **t, const char *tok, char *why, size_t cap);
/* FILE[@VIEW+VIEW...][#DTYPE] from dir, converted to dt (or #DTYPE) and
 * viewed; owned by the current scope. *noncontig is set (never cleared)
 * when the result is not contiguous. NULL on failure, with why. */
wk_tensor *ou_load_input(const char *dir, const char *spec, wk_dtype dt, bool *noncontig, char *why, size_t cap);

/* got matches want within atol + rtol*|want|; a NaN wants a NaN and an
 * infinity wants the same infinity. */
bool ou_close(double got, double want, double atol, double rtol);
/* The same rules with the tolerance tol*(1 + |want|). */
bool ou_close_rel(double got, double want, double tol);
/* got against the expected dir/file: the shape, then every element
 * (exact_int: exactly, both read as i64; otherwise as doubles within
 * ou_close_rel's tol). NULL when they match, else msg saying where not. */
const char *ou_compare_file(const wk_tensor *got, const char *dir, const char *file, double tol, bool exact_int,
                            char *msg, size_t cap);
/* Same dtype, element count and bytes (both NULL counts as equal). */
bool ou_same_bits(const wk_tensor *a, const wk_tensor *b);
/* The device the oracle inputs are loaded on: the CPU, or the device named
 * by WICK_ORACLE_DEVICE ("cuda", "cuda:N"), so the whole suite runs against
 * that backend (ctest's oracle_cuda_* tests). Exits with OU_SKIP, saying why,
 * when that device cannot be opened. */
#define OU_SKIP 77
wk_device *ou_device(void);

/* The manifest walk every test_oracle*.c runs inside its cmocka test: dir
 * gets $WICK_ORACLE_DIR/sub (the test is skipped when the variable is not
 * set), the oracle device is opened (ou_device), then each line of
 * dir/manifest.txt that is neither a comment nor empty goes to run_line,
 * and the thread count is set back afterwards. A manifest that cannot be
 * opened fails the test, naming gen (the generator that writes it). */
void ou_run_manifest(const char *sub, const char *gen, char *dir, size_t cap, void (*run_line)(char *line));

#endif
