/* Pooling and resampling: argument checks, output shapes, backend dispatch.
 * Semantics of PyTorch 1.13's F.avg_pool2d / F.max_pool2d (floor mode,
 * padding <= kernel/2) and F.interpolate (nearest, bilinear). 1-d ops are
 * passed to the backend as NCHW with H = 1 (a layout view, no copy).
 * Untracked: the public ops (src/autograd/tracked_pool.c) record. */
#include <inttypes.h>

#include "ops/prim_pool.h"

static bool check_rank(const char *op, const wk_tensor *x, int want) {
    if (x->layout.rank != want) {
        char b[160];
        wk__err(WK_ERR_SHAPE, op, "expected a rank-%d %s input, got shape %s", want, want == 4 ? "NCHW" : "NCL",
                wk__shape_str(x->layout.shape, x->layout.rank, b, sizeof b));
        return false;
    }
    return true;
}

/* Output length of one pooled dim (floor mode); false (error recorded) if the
 * parameters are invalid or the output would be empty. */
static bool pool_out(const char *op, const char *dim, int64_t in, int64_t k, int64_t s, int64_t p, int64_t *out) {
    if (k < 1) { wk__err(WK_ERR_ARG, op, "kernel %s must be >= 1, got %" PRId64, dim, k); return false; }
    if (s < 1) { wk__err(WK_ERR_ARG, op, "stride %s must be >= 1, got %" PRId64, dim, s); return false; }
    if (p < 0 || p > k / 2) {
        wk__err(WK_ERR_ARG, op, "padding %s must be in [0, kernel/2] = [0, %" PRId64 "], got %" PRId64, dim, k / 2, p);
        return false;
    }
    /* in + 2p - k without overflow: k - 2p is in [0, k] */
    if (in < 1) {
        wk__err(WK_ERR_SHAPE, op, "input %s is %" PRId64 ", must be >= 1", dim, in);
        return false;
    }
    int64_t num = in - (k - 2 * p);
    if (num < 0) {
        wk__err(WK_ERR_SHAPE, op,
                "output size too small: input %s %" PRId64 " with kernel %" PRId64 ", padding %" PRId64
                " gives an empty output",
                dim, in, k, p);
        return false;
    }
    *out = num / s + 1;
    return true;
}

static wk_tensor *pool2d(const char *op, const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                         int64_t ph, int64_t pw, bool is_max, bool cip) {
    if (!wk__check_in(op, x)) return NULL;
    if (!check_rank(op, x, 4)) return NULL;
    wk_dtype dt = x->dtype;
    if (!is_max && !wk_dtype_is_float(dt)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(dt));
        return NULL;
    }
    const int64_t *xs = x->layout.shape;
    int64_t oh, ow;
    if (!pool_out(op, "H", xs[2], kh, sh, ph, &oh) || !pool_out(op, "W", xs[3], kw, sw, pw, &ow)) return NULL;
    int64_t shape[4] = {xs[0], xs[1], oh, ow};
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(x), dt, shape, 4);
    if (!r) return r;
    wk_pool_params p = {{kh, kw}, {sh, sw}, {ph, pw}, is_max, cip};
    if (wk_numel(r) == 0) return r;
    if (wk__be(x)->pool2d(wk__dev(x), x->storage->buf, &x->layout, r->storage->buf, &r->layout, dt, &p) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

wk_tensor *wk__prim_avg_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                               int64_t pw, bool count_include_pad) {
    return pool2d("wk_avg_pool2d", x, kh, kw, sh, sw, ph, pw, false, count_include_pad);
}

wk_tensor *wk__prim_max_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                               int64_t pw) {
    return pool2d("wk_max_pool2d", x, kh, kw, sh, sw, ph, pw, true, false);
}

/* rank is 3 (1-d: H = 1 inserted) or 4. */
static wk_tensor *upsample(const char *op, const wk_tensor *x, int rank, int64_t out_h, int64_t out_w, bool bilinear,
                           bool align_corners) {
    if (!wk__check_in(op, x)) return NULL;
    if (!check_rank(op, x, rank)) return NULL;
    wk_dtype dt = x->dtype;
    if (bilinear && !wk_dtype_is_float(dt)) {
        wk__err(WK_ERR_DTYPE, op, "not defined for integer dtype %s", wk_dtype_name(dt));
        return NULL;
    }
    const int64_t *xs = x->layout.shape;
    wk_layout lx = x->layout;
    if (rank == 3) {
        lx.rank = 4;
        lx.shape[0] = xs[0], lx.shape[1] = xs[1], lx.shape[2] = 1, lx.shape[3] = xs[2];
        lx.stride[0] = x->layout.stride[0], lx.stride[1] = x->layout.stride[1], lx.stride[2] = 0;
        lx.stride[3] = x->layout.stride[2];
    }
    if (lx.shape[2] < 1 || lx.shape[3] < 1 || out_h < 1 || out_w < 1) {
        char b[160];
        if (rank == 3)
            wk__err(WK_ERR_SHAPE, op, "input and output sizes must be >= 1: input shape %s, output size %" PRId64,
                    wk__shape_str(xs, rank, b, sizeof b), out_w);
        else
            wk__err(WK_ERR_SHAPE, op,
                    "input and output sizes must be >= 1: input shape %s, output size [%" PRId64 ", %" PRId64 "]",
                    wk__shape_str(xs, rank, b, sizeof b), out_h, out_w);
        return NULL;
    }
    int64_t shape[4] = {xs[0], xs[1], out_h, out_w};
    wk_tensor *r = rank == 3 ? wk__tensor_alloc(op, wk__dev(x), dt, (int64_t[3]){xs[0], xs[1], out_w}, 3)
                             : wk__tensor_alloc(op, wk__dev(x), dt, shape, 4);
    if (!r) return r;
    if (wk_numel(r) == 0) return r;
    wk_layout ld;
    wk__layout_contiguous(&ld, shape, 4, 0);
    if (wk__be(x)->upsample2d(wk__dev(x), x->storage->buf, &lx, r->storage->buf, &ld, dt, bilinear, align_corners) !=
        WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

wk_tensor *wk__prim_upsample_nearest1d(const wk_tensor *x, int64_t out_l) {
    return upsample("wk_upsample_nearest1d", x, 3, 1, out_l, false, false);
}

wk_tensor *wk__prim_upsample_nearest2d(const wk_tensor *x, int64_t out_h, int64_t out_w) {
    return upsample("wk_upsample_nearest2d", x, 4, out_h, out_w, false, false);
}

wk_tensor *wk__prim_upsample_bilinear2d(const wk_tensor *x, int64_t out_h, int64_t out_w, bool align_corners) {
    return upsample("wk_upsample_bilinear2d", x, 4, out_h, out_w, true, align_corners);
}
