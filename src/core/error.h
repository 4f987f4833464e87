/* Per-thread error state. Every failing path calls wk__err() once with the op
 * name and a message; callers return NULL / the status. */
#ifndef WICK_CORE_ERROR_H
#define WICK_CORE_ERROR_H
#include "wick/wick.h"

#if defined(__GNUC__)
#define WK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define WK_PRINTF(a, b)
#endif

/* Record an error ("op: message") and return the status, for `return wk__err(...)`. */
wk_status wk__err(wk_status s, const char *op, const char *fmt, ...) WK_PRINTF(3, 4);
/* Record an error only if none is pending since the last success; used when a
 * NULL input arrives so that the FIRST cause is kept. */
void wk__err_null_input(const char *op);
/* True if a call on this thread failed and nobody cleared it. */
bool wk__err_pending(void);

#endif
