/* The CPU backend's qmatmul_multi entry (backend.h), in qmatmul_multi.c. */
#ifndef WICK_CPU_QMATMUL_MULTI_H
#define WICK_CPU_QMATMUL_MULTI_H
#include "tensor/backend.h"

wk_status wk__cpu_qmatmul_multi(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype xdt, int nw,
                                const void *const *w, const wk_layout *lw, wk_dtype wdt, void *dst);

#endif
