/* round_to exactly as candle writes it: (t * 10^d).round() * (1 / 10^d),
 * both products as affine ops in t's dtype (the multiplier converted to it
 * the way affine converts), round half away from zero. The factor is
 * computed as candle's 10f64.powi(d). A composite of recorded public ops (its
 * parts record): the autograd floor (moved from src/core/round_to.c). */
#include "autograd/node.h"

/* 10^d by binary exponentiation, then 1 / r for d < 0: the arithmetic of
 * the powi that candle's 10f64.powi(d) compiles to. */
static double powi10(int d) {
    double a = 10.0, r = 1.0;
    for (int b = d;;) {
        if (b & 1) r *= a;
        b /= 2;
        if (b == 0) break;
        a *= a;
    }
    return d < 0 ? 1.0 / r : r;
}

wk_tensor *wk_round_to(const wk_tensor *t, int decimals) {
    const char *op = "wk_round_to";
    if (!wk__check_in(op, t)) return NULL;
    if (!wk_dtype_is_float(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(t->dtype));
        return NULL;
    }
    double mult = powi10(decimals);
    wk_tensor *a = wk_affine(t, mult, 0.0);
    wk_tensor *r = a ? wk_round(a) : NULL;
    wk_tensor_free(a);
    wk_tensor *out = r ? wk_affine(r, 1.0 / mult, 0.0) : NULL;
    wk_tensor_free(r);
    return out;
}
