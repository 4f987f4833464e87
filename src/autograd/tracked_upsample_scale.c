/* Resampling by a scale factor, PyTorch's F.interpolate(scale_factor=s) with
 * recompute_scale_factor=None: the output size is floor(in * s), and the
 * coordinate mapping uses 1/s, which is not in/out unless floor() was
 * exact. torch 1.13's general (NCHW, C > 1, and every 1-d) kernels:
 *   nearest   src = min(floor(dst * (float)(1/s)), in - 1), no special cases;
 *   bilinear  (align_corners false) ratio (AT)(1/s) in the accumulator type
 *             AT (double for f64, else float), identity when out == in;
 *             align_corners true ignores s in the mapping.
 * (torch's 2-d nearest kernel for C == 1 also applies out == in -> identity
 * and out == 2 in -> dst / 2 whatever s is; wick follows the general rule.)
 *
 * The backend's upsample2d entry takes sizes and maps with in/out. When that
 * ratio equals the scale's (s = 2, 0.5, ... and every align_corners call) it
 * is called directly: one pass. Otherwise the mapping is applied here, with
 * per-dim index vectors (out_h + out_w values computed on the host, not one
 * per element) through index_select and, for bilinear, two weighted sums in
 * AT, so the backend contract does not change.
 *
 * A composite of public (recorded) ops plus identity aliases, so it lives in
 * the autograd floor (it was src/core/upsample_scale.c): its gradient comes
 * from its recorded parts. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "autograd/record.h"
#include "tensor/tensor.h"

/* floor(in * scale) as the output size; false (error recorded) when the
 * scale or the resulting size is unusable. */
static bool out_size(const char *op, const char *dim, int64_t in, double scale, int64_t *out) {
    if (!isfinite(scale) || scale <= 0) {
        wk__err(WK_ERR_ARG, op, "scale factor %s must be finite and > 0, got %g", dim, scale);
        return false;
    }
    double o = floor((double)in * scale);
    if (in < 1 || o < 1 || o > 0x1p40) {
        wk__err(WK_ERR_SHAPE, op, "input %s %" PRId64 " with scale %g gives output size %.0f (must be in [1, 2^40])",
                dim, in, scale, o);
        return false;
    }
    *out = (int64_t)o;
    return true;
}

static bool check_input(const char *op, const wk_tensor *x, int rank, bool float_only) {
    if (!wk__check_in(op, x)) return false;
    if (x->layout.rank != rank) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "expected a rank-%d %s input, got shape %s", rank, rank == 4 ? "NCHW" : "NCL",
                wk__shape_str(x->layout.shape, x->layout.rank, b, sizeof b));
        return false;
    }
    if (float_only && !wk_dtype_is_float(x->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(x->dtype));
        return false;
    }
    return true;
}

/* A view of t with t's layout that keeps t's recorded graph (an identity
 * step), so gradients flow through the identity shortcuts below. */
static wk_tensor *alias(const wk_tensor *t, const char *op) {
    wk_tensor *v = wk__tensor_view(t, &t->layout);
    return wk__ag_on1(t) ? wk__ag_identity(v, t, op) : v;
}

/* A host vector as a tensor of dtype dt on dev, shape (n) or (n, 1). */
static wk_tensor *upload(const void *v, int64_t n, bool column, wk_dtype dt, wk_device *dev) {
    int64_t shape[2] = {n, 1};
    return wk_from_host(v, (size_t)n * wk_dtype_size(dt), shape, column ? 2 : 1, dt, dev);
}

/* ---- nearest ---- */

static float nearest_ratio(double scale) { return (float)(1.0 / scale); }

/* The backend maps with (float)in / out plus its out == in and out == 2 in
 * shortcuts; true when that gives the same indices as the ratio r. */
static bool nearest_backend_agrees(int64_t in, int64_t out, float r) {
    if (out == in) return r == 1.0f;
    if (out == 2 * in) return r == 0.5f;
    return (float)in / (float)out == r;
}

/* x with dim d resampled to out by nearest index; x itself (a new
 * reference) when the mapping is the identity. */
static wk_tensor *nearest_dim(const char *op, const wk_tensor *x, int d, int64_t out, float r) {
    int64_t in = x->layout.shape[d];
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)out);
    if (!ids) { wk__err(WK_ERR_OOM, op, "cannot allocate %" PRId64 " indices", out); return NULL; }
    bool identity = out == in;
    for (int64_t i = 0; i < out; i++) {
        float f = floorf((float)i * r);
        ids[i] = f >= (float)(in - 1) ? in - 1 : (int64_t)f;
        identity = identity && ids[i] == i;
    }
    wk_tensor *res;
    if (identity) res = alias(x, op);
    else {
        wk_tensor *t = upload(ids, out, false, WK_I64, wk__dev(x));
        res = t ? wk_index_select(x, t, d) : NULL;
        wk_tensor_free(t);
    }
    free(ids);
    return res;
}

/* nsp spatial dims (1: NCL, 2: NCHW), starting at dim 2. */
static wk_tensor *nearest_scaled(const char *op, const wk_tensor *x, int nsp, const double *scales) {
    int64_t out[2];
    float r[2];
    bool backend = true;
    for (int i = 0; i < nsp; i++) {
        int d = 2 + i;
        if (!out_size(op, nsp == 1 ? "L" : i == 0 ? "H" : "W", x->layout.shape[d], scales[i], &out[i])) return NULL;
        r[i] = nearest_ratio(scales[i]);
        backend = backend && nearest_backend_agrees(x->layout.shape[d], out[i], r[i]);
    }
    if (backend)
        return nsp == 1 ? wk_upsample_nearest1d(x, out[0]) : wk_upsample_nearest2d(x, out[0], out[1]);
    wk_tensor *cur = alias(x, op);
    for (int i = 0; i < nsp && cur; i++) {
        wk_tensor *next = nearest_dim(op, cur, 2 + i, out[i], r[i]);
        wk_tensor_free(cur);
        cur = next;
    }
    if (cur && cur->storage == x->storage) {
        /* every dim was the identity: still a fresh tensor, as the backend gives */
        wk_tensor *c = wk_copy(cur);
        wk_tensor_free(cur);
        return c;
    }
    return cur;
}

wk_tensor *wk_upsample_nearest1d_scale(const wk_tensor *x, double scale) {
    const char *op = "wk_upsample_nearest1d_scale";
    if (!check_input(op, x, 3, false)) return NULL;
    return nearest_scaled(op, x, 1, &scale);
}

wk_tensor *wk_upsample_nearest2d_scale(const wk_tensor *x, double scale_h, double scale_w) {
    const char *op = "wk_upsample_nearest2d_scale";
    if (!check_input(op, x, 4, false)) return NULL;
    return nearest_scaled(op, x, 2, (double[2]){scale_h, scale_w});
}

/* ---- bilinear (align_corners false) ---- */

/* The ratio 1/s rounded to the accumulator type, widened back. */
static double linear_ratio(double scale, bool at_f64) { return at_f64 ? 1.0 / scale : (double)(float)(1.0 / scale); }

static bool linear_backend_agrees(int64_t in, int64_t out, double r, bool at_f64) {
    if (out == in) return true;
    double rb = at_f64 ? (double)in / (double)out : (double)((float)in / (float)out);
    return rb == r;
}

/* cur (dtype AT) with dim d resampled to out: w0 * cur[i0] + w1 * cur[i1],
 * the source positions and weights computed as the backend computes them
 * (position in double, weights rounded to AT), with the ratio r. */
static wk_tensor *linear_dim(const char *op, const wk_tensor *cur, int d, int64_t out, double r, bool at_f64) {
    int64_t in = cur->layout.shape[d];
    if (out == in) return alias(cur, op);
    int64_t *ids = malloc(sizeof(int64_t) * 2 * (size_t)out);
    double *w = malloc(sizeof(double) * 2 * (size_t)out);
    if (!ids || !w) {
        free(ids);
        free(w);
        wk__err(WK_ERR_OOM, op, "cannot allocate %" PRId64 " indices", out);
        return NULL;
    }
    for (int64_t i = 0; i < out; i++) {
        double src = r * ((double)i + 0.5) - 0.5;
        if (src < 0) src = 0;
        int64_t a = src >= (double)(in - 1) ? in - 1 : (int64_t)src;
        double f = src - (double)a;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        ids[i] = a;
        ids[out + i] = a + (a < in - 1 ? 1 : 0);
        w[out + i] = at_f64 ? f : (double)(float)f;
        w[i] = at_f64 ? 1.0 - f : (double)(1.0f - (float)f);
    }
    wk_device *dev = wk__dev(cur);
    wk_dtype at = at_f64 ? WK_F64 : WK_F32;
    bool column = d == 2 && cur->layout.rank == 4; /* H weights broadcast over W */
    wk_tensor *i0 = upload(ids, out, false, WK_I64, dev), *i1 = upload(ids + out, out, false, WK_I64, dev);
    wk_tensor *w64a = upload(w, out, column, WK_F64, dev), *w64b = upload(w + out, out, column, WK_F64, dev);
    free(ids);
    free(w);
    wk_tensor *w0 = w64a ? wk_to_dtype(w64a, at) : NULL, *w1 = w64b ? wk_to_dtype(w64b, at) : NULL;
    if (column) {
        /* (out, W) weight planes instead of an (out, 1) column: the products
         * then broadcast only over N and C, the elementwise fast path (a
         * stride-0 innermost dim measured 4x slower) */
        int64_t plane[2] = {out, cur->layout.shape[3]};
        wk_tensor *b0 = w0 ? wk_broadcast_as(w0, plane, 2) : NULL, *b1 = w1 ? wk_broadcast_as(w1, plane, 2) : NULL;
        wk_tensor_free(w0);
        wk_tensor_free(w1);
        w0 = b0 ? wk_copy(b0) : NULL;
        w1 = b1 ? wk_copy(b1) : NULL;
        wk_tensor_free(b0);
        wk_tensor_free(b1);
    }
    wk_tensor *g0 = i0 ? wk_index_select(cur, i0, d) : NULL, *g1 = i1 ? wk_index_select(cur, i1, d) : NULL;
    wk_tensor *p0 = g0 && w0 ? wk_mul(w0, g0) : NULL, *p1 = g1 && w1 ? wk_mul(w1, g1) : NULL;
    wk_tensor *res = p0 && p1 ? wk_add(p0, p1) : NULL;
    wk_tensor *tmp[] = {i0, i1, w64a, w64b, w0, w1, g0, g1, p0, p1};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++) wk_tensor_free(tmp[k]);
    return res;
}

wk_tensor *wk_upsample_bilinear2d_scale(const wk_tensor *x, double scale_h, double scale_w, bool align_corners) {
    const char *op = "wk_upsample_bilinear2d_scale";
    if (!check_input(op, x, 4, true)) return NULL;
    int64_t oh, ow;
    if (!out_size(op, "H", x->layout.shape[2], scale_h, &oh) || !out_size(op, "W", x->layout.shape[3], scale_w, &ow))
        return NULL;
    if (align_corners) return wk_upsample_bilinear2d(x, oh, ow, true);
    bool at_f64 = x->dtype == WK_F64;
    double rh = linear_ratio(scale_h, at_f64), rw = linear_ratio(scale_w, at_f64);
    if (linear_backend_agrees(x->layout.shape[2], oh, rh, at_f64) &&
        linear_backend_agrees(x->layout.shape[3], ow, rw, at_f64))
        return wk_upsample_bilinear2d(x, oh, ow, false);
    /* W first, then H: the backend's order (each row blended along W, then
     * two rows along H), all in AT, rounded to x's dtype once */
    wk_tensor *xa = wk_to_dtype(x, at_f64 ? WK_F64 : WK_F32);
    wk_tensor *tw = xa ? linear_dim(op, xa, 3, ow, rw, at_f64) : NULL;
    wk_tensor_free(xa);
    wk_tensor *th = tw ? linear_dim(op, tw, 2, oh, rh, at_f64) : NULL;
    wk_tensor_free(tw);
    if (!th || th->dtype == x->dtype) return th;
    wk_tensor *r = wk_to_dtype(th, x->dtype);
    wk_tensor_free(th);
    return r;
}
