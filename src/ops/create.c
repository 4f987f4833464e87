/* Tensor creation: constant fills, ranges, identity, host copies, random. */
#include "ops/prim_copy.h"
#include "tensor/tensor.h"
#include <math.h>

/* Values can be written only in element dtypes; a block dtype's bytes come
 * from wk_quantize, a model file, or raw bytes (wk_from_host / wk_empty). */
static bool elem_dtype(const char *op, wk_dtype dt) {
    if (!wk_dtype_is_quantized(dt)) return true;
    wk__err(WK_ERR_DTYPE, op, "cannot write values in the block-quantized dtype %s (make f32 and wk_quantize it)",
            wk_dtype_name(dt));
    return false;
}

static wk_tensor *filled(const char *op, const int64_t *shape, int rank, double v, wk_dtype dt, wk_device *dev) {
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    if (!elem_dtype(op, dt)) return NULL;
    wk_tensor *t = wk__tensor_alloc(op, dev, dt, shape, rank);
    if (!t) return NULL;
    if (wk__be(t)->fill(dev, t->storage->buf, &t->layout, dt, v) != WK_OK) {
        wk_tensor_free(t);
        return NULL;
    }
    return t;
}

wk_tensor *wk_zeros(const int64_t *shape, int rank, wk_dtype dt, wk_device *dev) {
    return filled("wk_zeros", shape, rank, 0.0, dt, dev);
}
wk_tensor *wk_ones(const int64_t *shape, int rank, wk_dtype dt, wk_device *dev) {
    return filled("wk_ones", shape, rank, 1.0, dt, dev);
}
wk_tensor *wk_full(const int64_t *shape, int rank, double value, wk_dtype dt, wk_device *dev) {
    return filled("wk_full", shape, rank, value, dt, dev);
}
wk_tensor *wk_zeros_like(const wk_tensor *t) {
    if (!wk__check_in("wk_zeros_like", t)) return NULL;
    return filled("wk_zeros_like", t->layout.shape, t->layout.rank, 0.0, t->dtype, wk__dev(t));
}
wk_tensor *wk_ones_like(const wk_tensor *t) {
    if (!wk__check_in("wk_ones_like", t)) return NULL;
    return filled("wk_ones_like", t->layout.shape, t->layout.rank, 1.0, t->dtype, wk__dev(t));
}
wk_tensor *wk_empty(const int64_t *shape, int rank, wk_dtype dt, wk_device *dev) {
    if (!dev) { wk__err(WK_ERR_ARG, "wk_empty", "NULL device"); return NULL; }
    return wk__tensor_alloc("wk_empty", dev, dt, shape, rank);
}

wk_tensor *wk_arange(double start, double end, double step, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_arange";
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    if (step == 0 || !isfinite(step) || !isfinite(start) || !isfinite(end)) {
        wk__err(WK_ERR_ARG, op, "start %g, end %g, step %g: step must be nonzero and all values finite", start, end, step);
        return NULL;
    }
    double cnt = ceil((end - start) / step);
    if (cnt < 0) cnt = 0;
    if (cnt > 0x1p56) { wk__err(WK_ERR_SHAPE, op, "%g elements is too many", cnt); return NULL; }
    int64_t n = (int64_t)cnt;
    if (!wk_dtype_info_of(dt)) { wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt); return NULL; }
    /* computed in f64 on the host, then cast: exact for every integer range */
    wk_tensor *t64 = wk__tensor_alloc(op, wk_cpu(), WK_F64, &n, 1);
    if (!t64) return NULL;
    double *p = t64->storage->buf;
    for (int64_t i = 0; i < n; i++) p[i] = start + (double)i * step;
    wk_tensor *r = wk__prim_to_device(t64, dev);
    wk_tensor_free(t64);
    if (!r || dt == WK_F64) return r;
    wk_tensor *c = wk__prim_to_dtype(r, dt);
    wk_tensor_free(r);
    return c;
}

wk_tensor *wk_eye(int64_t n, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_eye";
    int64_t shape[2] = {n, n};
    wk_tensor *t = filled(op, shape, 2, 0.0, dt, dev);
    if (!t || n == 0) return t;
    /* the diagonal is a 1-D view with stride n+1 */
    wk_layout d = {.rank = 1, .shape = {n}, .stride = {n + 1}, .offset = 0};
    if (wk__be(t)->fill(dev, t->storage->buf, &d, dt, 1.0) != WK_OK) {
        wk_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Shape of a host buffer of nbytes with at most one -1 dim, which gets the
 * size that makes the bytes fit exactly. */
static wk_status infer_host_shape(const char *op, size_t nbytes, const int64_t *shape, int rank, wk_dtype dt,
                                  int64_t *out) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!di) return wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt);
    if (rank < 0 || rank > WK_MAX_RANK || (rank && !shape)) return wk__check_shape(op, shape, rank, NULL);
    int hole = -1;
    int64_t known = 1;
    for (int i = 0; i < rank; i++) {
        out[i] = shape[i];
        if (shape[i] != -1) continue;
        if (hole >= 0) return wk__err(WK_ERR_SHAPE, op, "dims %d and %d are both -1; at most one can be inferred", hole, i);
        hole = i;
        out[i] = 1;
    }
    if (hole < 0) return WK_OK;
    char s[128];
    int64_t n;
    if (wk__check_shape(op, out, rank, &known) != WK_OK) return wk_last_status();
    if (known == 0)
        return wk__err(WK_ERR_SHAPE, op, "shape %s: dim %d cannot be inferred, another dim is 0 (any size fits)",
                       wk__shape_str(shape, rank, s, sizeof s), hole);
    if (wk__dtype_info_elems(di, nbytes, &n) != WK_OK || n % known)
        return wk__err(WK_ERR_SHAPE, op, "%zu bytes of %s do not fill shape %s for any size of dim %d", nbytes, di->name,
                       wk__shape_str(shape, rank, s, sizeof s), hole);
    out[hole] = n / known;
    return WK_OK;
}

wk_tensor *wk_from_host(const void *data, size_t nbytes, const int64_t *shape_in, int rank, wk_dtype dt,
                        wk_device *dev) {
    const char *op = "wk_from_host";
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    int64_t shape[WK_MAX_RANK];
    if (infer_host_shape(op, nbytes, shape_in, rank, dt, shape) != WK_OK) return NULL;
    int64_t n;
    if (wk__check_shape(op, shape, rank, &n) != WK_OK) return NULL;
    size_t need;
    if (wk__dtype_bytes_for(op, dt, n, &need) != WK_OK) return NULL;
    if (need != nbytes) {
        char s[128];
        wk__err(WK_ERR_SHAPE, op, "%zu bytes given, shape %s of %s needs %zu", nbytes,
                wk__shape_str(shape, rank, s, sizeof s), wk_dtype_name(dt), need);
        return NULL;
    }
    if (nbytes && !data) { wk__err(WK_ERR_ARG, op, "NULL data"); return NULL; }
    wk_tensor *t = wk__tensor_alloc(op, dev, dt, shape, rank);
    if (!t) return NULL;
    if (nbytes && wk__be(t)->from_host(dev, t->storage->buf, 0, data, nbytes) != WK_OK) {
        wk_tensor_free(t);
        return NULL;
    }
    return t;
}

static wk_tensor *random_tensor(const char *op, const int64_t *shape, int rank, double a, double b, wk_dtype dt,
                                wk_device *dev, bool normal) {
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    if (!elem_dtype(op, dt)) return NULL;
    if (!wk_dtype_is_float(dt)) {
        wk__err(WK_ERR_DTYPE, op, "random numbers need a float dtype, got %s", wk_dtype_name(dt));
        return NULL;
    }
    if (!isfinite(a) || !isfinite(b) || (normal && b < 0) || (!normal && b < a)) {
        wk__err(WK_ERR_ARG, op, normal ? "mean %g, std %g: need finite values and std >= 0"
                                       : "lo %g, hi %g: need finite values and lo <= hi", a, b);
        return NULL;
    }
    wk_tensor *t = wk__tensor_alloc(op, dev, dt, shape, rank);
    if (!t) return NULL;
    int64_t n = wk_numel(t);
    wk_status st = normal ? wk__be(t)->rand_normal(dev, t->storage->buf, n, dt, a, b)
                          : wk__be(t)->rand_uniform(dev, t->storage->buf, n, dt, a, b);
    if (st != WK_OK) { wk_tensor_free(t); return NULL; }
    return t;
}

wk_tensor *wk_rand(const int64_t *shape, int rank, double lo, double hi, wk_dtype dt, wk_device *dev) {
    return random_tensor("wk_rand", shape, rank, lo, hi, dt, dev, false);
}
wk_tensor *wk_randn(const int64_t *shape, int rank, double mean, double std, wk_dtype dt, wk_device *dev) {
    return random_tensor("wk_randn", shape, rank, mean, std, dt, dev, true);
}
