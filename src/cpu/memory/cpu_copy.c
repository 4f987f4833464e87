/* CPU copies, fills and casts. Copies move raw elements by size, so one
 * kernel serves every dtype. */
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/cpu_iter.h"
#include <string.h>

typedef struct {
    const char *src;
    char *dst;
    size_t es;
} copy_ctx;

static void copy_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    copy_ctx *c = p;
    size_t es = c->es;
    char *d = c->dst + offs[0] * (int64_t)es;
    const char *s = c->src + offs[1] * (int64_t)es;
    if (st[0] == 1 && st[1] == 1) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
    int64_t sd = st[0] * (int64_t)es, ss = st[1] * (int64_t)es;
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) d[i * sd] = s[i * ss]; break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, 2); break;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, 4); break;
    default: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, 8); break;
    }
}

wk_status wk__cpu_copy_strided(wk_device *dev, const void *src, const wk_layout *ls, void *dst, const wk_layout *ld,
                               wk_dtype dt) {
    (void)dev;
    const wk_layout *ls2[2] = {ld, ls};
    wk_iter it;
    wk__iter_init(&it, 2, ls2);
    copy_ctx c = {src, dst, wk__dtype_elem_bytes(dt)};
    wk__iter_foreach_min(&it, copy_run, &c, WK_PAR_MIN_CHEAP);
    return WK_OK;
}

wk_status wk__cpu_to_host(wk_device *dev, const void *src, const wk_layout *l, wk_dtype dt, void *dst) {
    wk_layout ld;
    wk__layout_contiguous(&ld, l->shape, l->rank, 0);
    return wk__cpu_copy_strided(dev, src, l, dst, &ld, dt);
}

wk_status wk__cpu_from_host(wk_device *dev, void *buf, size_t off, const void *src, size_t nbytes) {
    (void)dev;
    memcpy((char *)buf + off, src, nbytes);
    return WK_OK;
}

typedef struct {
    char *dst;
    size_t es;
    unsigned char val[8];
} fill_ctx;

static void fill_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    fill_ctx *c = p;
    size_t es = c->es;
    char *d = c->dst + offs[0] * (int64_t)es;
    int64_t sd = st[0] * (int64_t)es;
    if (es == 1 && st[0] == 1) { memset(d, c->val[0], (size_t)n); return; }
    switch (es) {
    case 2: { uint16_t v; memcpy(&v, c->val, 2);
        if (st[0] == 1) { uint16_t *q = (uint16_t *)(void *)d; for (int64_t i = 0; i < n; i++) q[i] = v; }
        else for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, &v, 2);
        break; }
    case 4: { uint32_t v; memcpy(&v, c->val, 4);
        if (st[0] == 1) { uint32_t *q = (uint32_t *)(void *)d; for (int64_t i = 0; i < n; i++) q[i] = v; }
        else for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, &v, 4);
        break; }
    case 8: { uint64_t v; memcpy(&v, c->val, 8);
        if (st[0] == 1) { uint64_t *q = (uint64_t *)(void *)d; for (int64_t i = 0; i < n; i++) q[i] = v; }
        else for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, &v, 8);
        break; }
    default: for (int64_t i = 0; i < n; i++) d[i * sd] = (char)c->val[0]; break;
    }
}

wk_status wk__cpu_fill(wk_device *dev, void *dst, const wk_layout *ld, wk_dtype dt, double value) {
    (void)dev;
    fill_ctx c = {dst, wk__dtype_elem_bytes(dt), {0}};
    wk__store_f64(c.val, 0, dt, value);
    const wk_layout *ls[1] = {ld};
    wk_iter it;
    wk__iter_init(&it, 1, ls);
    wk__iter_foreach_min(&it, fill_run, &c, WK_PAR_MIN_CHEAP);
    return WK_OK;
}

typedef struct {
    const char *src;
    char *dst;
    wk_dtype sdt, ddt;
} cast_ctx;

static void cast_run(void *p, int64_t n, const int64_t *offs, const int64_t *st) {
    cast_ctx *c = p;
    const void *s = c->src + offs[1] * (int64_t)wk__dtype_elem_bytes(c->sdt);
    void *d = c->dst + offs[0] * (int64_t)wk__dtype_elem_bytes(c->ddt);
    int64_t ss = st[1], sd = st[0];
    /* hot pairs get straight loops */
    if (c->sdt == WK_F32 && c->ddt == WK_F16) {
        for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i * sd] = wk_f32_to_f16(((const float *)s)[i * ss]);
    } else if (c->sdt == WK_F16 && c->ddt == WK_F32) {
        for (int64_t i = 0; i < n; i++) ((float *)d)[i * sd] = wk_f16_to_f32(((const uint16_t *)s)[i * ss]);
    } else if (c->sdt == WK_F32 && c->ddt == WK_BF16) {
        for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i * sd] = wk_f32_to_bf16(((const float *)s)[i * ss]);
    } else if (c->sdt == WK_BF16 && c->ddt == WK_F32) {
        for (int64_t i = 0; i < n; i++) ((float *)d)[i * sd] = wk_bf16_to_f32(((const uint16_t *)s)[i * ss]);
    } else if (c->sdt == WK_F32 && c->ddt == WK_F64) {
        for (int64_t i = 0; i < n; i++) ((double *)d)[i * sd] = ((const float *)s)[i * ss];
    } else if (wk_dtype_is_int(c->sdt) && wk_dtype_is_int(c->ddt)) {
        for (int64_t i = 0; i < n; i++) wk__store_i64(d, i * sd, c->ddt, wk__load_i64(s, i * ss, c->sdt));
    } else if (c->sdt == WK_I64 && c->ddt == WK_F32) {
        /* one correct rounding, not i64 -> f64 -> f32 */
        for (int64_t i = 0; i < n; i++) ((float *)d)[i * sd] = (float)((const int64_t *)s)[i * ss];
    } else if (c->sdt == WK_I64 && wk_dtype_is_float(c->ddt)) {
        /* exact i64 -> double first (rounds once), not via a saturating path */
        for (int64_t i = 0; i < n; i++) wk__store_f64(d, i * sd, c->ddt, (double)((const int64_t *)s)[i * ss]);
    } else {
        for (int64_t i = 0; i < n; i++) wk__store_f64(d, i * sd, c->ddt, wk__load_f64(s, i * ss, c->sdt));
    }
}

wk_status wk__cpu_cast(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype sdt, void *dst, wk_dtype ddt) {
    (void)dev;
    wk_layout ld;
    wk__layout_contiguous(&ld, ls->shape, ls->rank, 0);
    const wk_layout *l2[2] = {&ld, ls};
    wk_iter it;
    wk__iter_init(&it, 2, l2);
    cast_ctx c = {src, dst, sdt, ddt};
    wk__iter_foreach(&it, cast_run, &c);
    return WK_OK;
}
