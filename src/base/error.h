/* Per-thread error state (semantics in wick.h, "errors"). Every failing path
 * calls wk__err() once with the op name and a message; callers return NULL /
 * the status. Successful paths never touch the state. */
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
/* Record "op: NULL tensor argument" only if no error is pending (none since
 * the last wk_clear_error: successes do not clear); used when a NULL input
 * arrives, so the error that produced the NULL, the FIRST cause, is kept. */
void wk__err_null_input(const char *op);
/* Set the state to a status and a whole message recorded elsewhere (an
 * error carried from another thread, e.g. a communicator's progress thread). */
wk_status wk__err_restore(wk_status s, const char *msg);
/* True if a call on this thread failed and wk_clear_error was not called since. */
bool wk__err_pending(void);

#endif
