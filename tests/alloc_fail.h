/* The allocation-failure harness shared by test_alloc_fail*.c: counting
 * malloc-family wrappers (the executable links with -Wl,--wrap=...), a trace
 * of each call's result, and the loop that runs a program once clean and
 * then once per allocation with exactly that one failing. */
#ifndef WICK_TESTS_ALLOC_FAIL_H
#define WICK_TESTS_ALLOC_FAIL_H
#include "testutil.h"

#define AF_MAXSTEPS 1024
#define AF_BIG (1 << 17) /* elements a result may have: above WK_PAR_MIN_ELEMS, so the pool threads work */

typedef struct {
    int n;                     /* calls that succeeded */
    double sum[AF_MAXSTEPS];   /* a checksum of each result */
    wk_status st;              /* status of the call that failed (WK_OK if none) */
    char msg[256];             /* its message */
} af_trace;

/* Record the failing call (a NULL without a status is a bug too); returns 0. */
int af_fail_with(af_trace *tr, wk_status st);
/* A tensor result: its elements read back (also a wick call that may fail)
 * and weighted by position, so a wrong order shows. Block dtypes: their bytes. */
int af_step_t(af_trace *tr, wk_tensor *t);
/* A status result. */
int af_step_s(af_trace *tr, wk_status st);
/* A plain value from a query that cannot fail (a count, a length). */
int af_step_v(af_trace *tr, double v);

#define T(var, expr)                            \
    do {                                        \
        var = (expr);                           \
        if (!af_step_t(tr, var)) goto done;     \
    } while (0)
#define S(expr)                                 \
    do {                                        \
        if (!af_step_s(tr, (expr))) goto done;  \
    } while (0)
#define V(expr)                                 \
    do {                                        \
        if (!af_step_v(tr, (double)(expr))) goto done; \
    } while (0)

typedef void (*af_program)(af_trace *tr);

typedef struct {
    int calls;       /* calls of the clean run */
    long allocs;     /* allocations it made (K) */
    long oom_runs;   /* runs that stopped with WK_ERR_OOM */
    long absorbed;   /* runs where a kernel's fallback absorbed the failure */
    long unreached;  /* runs that did not reach the N-th allocation */
} af_result;

/* Run prog clean (twice: the first starts once-only state), then once for
 * every N = 1..K with the N-th allocation failing. Fails the test unless
 * every run stops with WK_ERR_OOM and a message (or runs through with the
 * clean results), the calls before the failure match the clean run, and no
 * tensor bytes or host blocks stay behind. The hook is off afterwards and
 * prog has run clean once more. */
af_result af_fail_each(const char *name, af_program prog);

#endif
