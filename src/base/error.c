/* Per-thread error state (the Lua/errno discipline): a failing call records
 * one message naming op, shapes, dtypes and devices; callers read it with
 * wk_last_error(). A NULL input keeps the first cause instead of hiding it. */
#include "base/error.h"
#include <stdarg.h>
#include <stdio.h>

static _Thread_local wk_status tl_status = WK_OK;
static _Thread_local char tl_msg[1024];

wk_status wk__err(wk_status s, const char *op, const char *fmt, ...) {
    tl_status = s;
    int n = snprintf(tl_msg, sizeof tl_msg, "%s: ", op ? op : "wick");
    if (n < 0) n = 0;
    if ((size_t)n < sizeof tl_msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tl_msg + n, sizeof tl_msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return s;
}

wk_status wk__err_restore(wk_status s, const char *msg) {
    tl_status = s;
    snprintf(tl_msg, sizeof tl_msg, "%s", msg ? msg : "");
    return s;
}

void wk__err_null_input(const char *op) {
    if (tl_status == WK_OK) wk__err(WK_ERR_ARG, op, "NULL tensor argument");
}

bool wk__err_pending(void) { return tl_status != WK_OK; }

wk_status wk_last_status(void) { return tl_status; }
const char *wk_last_error(void) { return tl_status == WK_OK ? "" : tl_msg; }
void wk_clear_error(void) {
    tl_status = WK_OK;
    tl_msg[0] = 0;
}

const char *wk_status_name(wk_status s) {
    switch (s) {
    case WK_OK: return "ok";
    case WK_ERR_SHAPE: return "shape error";
    case WK_ERR_DTYPE: return "dtype error";
    case WK_ERR_DEVICE: return "device error";
    case WK_ERR_INDEX: return "index error";
    case WK_ERR_ARG: return "bad argument";
    case WK_ERR_OOM: return "out of memory";
    case WK_ERR_NOT_COMPILED: return "not compiled in";
    case WK_ERR_IO: return "i/o error";
    case WK_ERR_FORMAT: return "format error";
    case WK_ERR_DIV_ZERO: return "division by zero";
    case WK_ERR_INTERNAL: return "internal error";
    case WK_ERR_BUSY: return "busy";
    case WK_ERR_COMM: return "comm";
    }
    return "unknown status";
}
