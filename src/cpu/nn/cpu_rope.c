/* The CPU backend's rope entry: rotary embedding of x (B, H, T, D) or, thd,
 * (B, T, H, D) with cos / sin (T, D/2) of any strides. Threads split the
 * rows (one row: D values of one (b, h, t)); each row is read through x's
 * strides (in place when it is a contiguous row of the compute type),
 * rotated pair by pair and written to its place in the contiguous dst.
 * f32 / f64 compute in their own type, f16 / bf16 / f8 in f32. The
 * products are rounded one by one (a cos, then b sin, then the difference),
 * as the composite of src/nn/nn.c computes them. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/nn/cpu_rowio.h"
#include "cpu/runtime/threadpool.h"
#include <stdatomic.h>
#include <stdlib.h>

typedef struct rope_ctx {
    const void *x, *cs, *sn;
    wk_layout lx, lc, ls;
    wk_dtype dt;
    bool inter, thd;
    void *dst;
    atomic_int failed;
} rope_ctx;

/* One compute type T with row helpers SFX (f / d) and its native dtype. */
#define ROPE_RANGE(T, SFX, NATIVE)                                                                                 \
    static void rope_range_##SFX(void *vc, int64_t begin, int64_t end, int tid) {                                 \
        (void)tid;                                                                                                  \
        rope_ctx *c = vc;                                                                                           \
        const int64_t *sh = c->lx.shape, D = sh[3], H = D / 2;                                                      \
        /* x row | cos row | sin row | out row */                                                                   \
        T *buf = malloc(sizeof(T) * (size_t)(3 * D) + 1);                                                           \
        if (!buf) {                                                                                                 \
            atomic_store(&c->failed, 1);                                                                            \
            return;                                                                                                 \
        }                                                                                                           \
        T *xb = buf, *cb = buf + D, *sb = cb + H, *ob = sb + H;                                                     \
        bool native = c->dt == NATIVE;                                                                              \
        for (int64_t i = begin; i < end; i++) {                                                                     \
            int64_t i2 = i % sh[2], i1 = (i / sh[2]) % sh[1], i0 = i / (sh[2] * sh[1]);                             \
            int64_t t = c->thd ? i1 : i2;                                                                           \
            const T *x = wk__row_view_##SFX(c->x, c->dt,                                                            \
                                            c->lx.offset + i0 * c->lx.stride[0] + i1 * c->lx.stride[1] +            \
                                                i2 * c->lx.stride[2],                                               \
                                            c->lx.stride[3], D, xb);                                                \
            const T *cs = wk__row_view_##SFX(c->cs, c->dt, c->lc.offset + t * c->lc.stride[0], c->lc.stride[1], H,  \
                                             cb);                                                                   \
            const T *sn = wk__row_view_##SFX(c->sn, c->dt, c->ls.offset + t * c->ls.stride[0], c->ls.stride[1], H,  \
                                             sb);                                                                   \
            T *restrict o = native ? (T *)c->dst + i * D : ob;                                                      \
            if (c->inter) {                                                                                         \
                for (int64_t p = 0; p < H; p++) {                                                                   \
                    T a = x[2 * p], b = x[2 * p + 1], ac = a * cs[p], bs = b * sn[p], as = a * sn[p],               \
                      bc = b * cs[p];                                                                               \
                    o[2 * p] = ac - bs;                                                                             \
                    o[2 * p + 1] = as + bc;                                                                         \
                }                                                                                                   \
            } else {                                                                                                \
                for (int64_t p = 0; p < H; p++) {                                                                   \
                    T a = x[p], b = x[p + H], ac = a * cs[p], bs = b * sn[p], as = a * sn[p], bc = b * cs[p];       \
                    o[p] = ac - bs;                                                                                 \
                    o[p + H] = as + bc;                                                                             \
                }                                                                                                   \
            }                                                                                                       \
            if (!native) wk__row_store_##SFX(c->dst, c->dt, i * D, 1, D, o);                                        \
        }                                                                                                           \
        free(buf);                                                                                                  \
    }

ROPE_RANGE(float, f, WK_F32)
ROPE_RANGE(double, d, WK_F64)

wk_status wk__cpu_rope(wk_device *dev, const void *x, const wk_layout *lx, const void *cos, const wk_layout *lc,
                       const void *sin, const wk_layout *lsn, wk_dtype dt, bool interleaved, bool thd, void *dst) {
    (void)dev;
    if (!wk_dtype_is_float(dt)) return wk__err(WK_ERR_DTYPE, "wk_rope", "not defined for dtype %s", wk_dtype_name(dt));
    rope_ctx c = {.x = x, .cs = cos, .sn = sin, .lx = *lx, .lc = *lc, .ls = *lsn, .dt = dt, .inter = interleaved,
                  .thd = thd, .dst = dst};
    atomic_init(&c.failed, 0);
    int64_t rows = lx->shape[0] * lx->shape[1] * lx->shape[2], d = lx->shape[3];
    if (rows == 0 || d == 0) return WK_OK;
    int64_t min_rows = WK_PAR_MIN_ELEMS / d;
    wk__parallel_for(rows, 1, min_rows < 1 ? 1 : min_rows, dt == WK_F64 ? rope_range_d : rope_range_f, &c);
    if (atomic_load(&c.failed)) return wk__err(WK_ERR_OOM, "wk_rope", "cannot allocate a row buffer");
    return WK_OK;
}
