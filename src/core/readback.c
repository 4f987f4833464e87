/* Readback, copies, casts, device moves and in-place writes. Readback copies
 * exactly the elements of the view (a one-element read moves one element).
 * The copies, casts, moves and the two in-place copies are the untracked
 * ops here (wk__prim_*, core/prim_readback.h); their public tracked forms
 * are src/autograd/tracked_readback.c. */
#include "core/block_bytes.h"
#include "core/quantize.h"
#include "core/tensor.h"
#include "core/prim_quantize.h"
#include "core/prim_readback.h"
#include <stdlib.h>
#include <string.h>

static bool is_cpu(const wk_tensor *t) { return wk__dev(t)->kind == WK_DEVICE_CPU; }

wk_status wk_to_host(const wk_tensor *t, void *buf, size_t nbytes) {
    const char *op = "wk_to_host";
    if (!wk__check_in_blocks(op, t)) return wk_last_status(); /* block dtypes: the raw blocks */
    size_t need;
    if (wk__dtype_bytes_for(op, t->dtype, wk_numel(t), &need) != WK_OK) return wk_last_status();
    if (nbytes < need) return wk__err(WK_ERR_ARG, op, "buffer of %zu bytes, the view needs %zu", nbytes, need);
    if (need == 0) return WK_OK;
    if (!buf) return wk__err(WK_ERR_ARG, op, "NULL buffer");
    wk_dtype bdt;
    wk_layout bl = wk__block_bytes_layout(&t->layout, t->dtype, &bdt);
    return wk__be(t)->to_host(wk__dev(t), t->storage->buf, &bl, bdt, buf);
}

static wk_status to_host_as(const char *op, const wk_tensor *t, void *buf, size_t count, wk_dtype dt) {
    if (!wk__check_in_blocks(op, t)) return wk_last_status();
    if (wk_dtype_is_quantized(t->dtype)) { /* the values: dequantized */
        wk_tensor *f = wk__prim_dequantize(t, WK_F32);
        wk_status fs = f ? to_host_as(op, f, buf, count, dt) : wk_last_status();
        wk_tensor_free(f);
        return fs;
    }
    int64_t n = wk_numel(t);
    if (count < (size_t)n) return wk__err(WK_ERR_ARG, op, "buffer of %zu elements, the view has %lld", count, (long long)n);
    if (n == 0) return WK_OK;
    if (!buf) return wk__err(WK_ERR_ARG, op, "NULL buffer");
    /* a CPU-kind device's buffers are host memory: its own cast writes buf */
    if (is_cpu(t)) return wk__be(t)->cast(wk__dev(t), t->storage->buf, &t->layout, t->dtype, buf, dt);
    wk_tensor *c = wk__prim_to_dtype(t, dt);
    if (!c) return wk_last_status();
    wk_status st = wk_to_host(c, buf, (size_t)n * wk_dtype_size(dt));
    wk_tensor_free(c);
    return st;
}

wk_status wk_to_host_f32(const wk_tensor *t, float *buf, size_t count) {
    return to_host_as("wk_to_host_f32", t, buf, count, WK_F32);
}
wk_status wk_to_host_f64(const wk_tensor *t, double *buf, size_t count) {
    return to_host_as("wk_to_host_f64", t, buf, count, WK_F64);
}

/* Read one element at element offset `off` of t's storage as double. */
static wk_status read_one(const char *op, const wk_tensor *t, int64_t off, double *out) {
    unsigned char raw[8];
    wk_layout one = {.rank = 0, .offset = off};
    wk_status st = wk__be(t)->to_host(wk__dev(t), t->storage->buf, &one, t->dtype, raw);
    if (st != WK_OK) return st;
    wk_layout host = {.rank = 0, .offset = 0};
    wk_device *cpu = wk_cpu(); /* the host's backend converts the raw element */
    if (!cpu) return wk_last_status();
    return cpu->be->cast(cpu, raw, &host, t->dtype, out, WK_F64);
}

wk_status wk_item(const wk_tensor *t, double *out) {
    const char *op = "wk_item";
    if (!wk__check_in(op, t)) return wk_last_status();
    if (!out) return wk__err(WK_ERR_ARG, op, "NULL output");
    if (wk_numel(t) != 1) {
        char s[128];
        return wk__err(WK_ERR_SHAPE, op, "needs exactly one element, shape is %s",
                       wk__shape_str(t->layout.shape, t->layout.rank, s, sizeof s));
    }
    return read_one(op, t, t->layout.offset, out);
}

wk_status wk_get(const wk_tensor *t, const int64_t *index, double *out) {
    const char *op = "wk_get";
    if (!wk__check_in(op, t)) return wk_last_status();
    if (!out || (t->layout.rank && !index)) return wk__err(WK_ERR_ARG, op, "NULL index or output");
    int64_t off = t->layout.offset;
    for (int i = 0; i < t->layout.rank; i++) {
        int64_t k = index[i] < 0 ? index[i] + t->layout.shape[i] : index[i];
        if (k < 0 || k >= t->layout.shape[i])
            return wk__err(WK_ERR_INDEX, op, "index %lld out of range for dim %d of size %lld", (long long)index[i], i,
                           (long long)t->layout.shape[i]);
        off += k * t->layout.stride[i];
    }
    return read_one(op, t, off, out);
}

wk_tensor *wk__prim_copy(const wk_tensor *t) {
    const char *op = "wk_copy";
    if (!wk__check_in_blocks(op, t)) return NULL;
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), t->dtype, t->layout.shape, t->layout.rank);
    if (!r) return NULL;
    /* block dtypes copy their rows as bytes */
    wk_dtype bdt;
    wk_layout ls = wk__block_bytes_layout(&t->layout, t->dtype, &bdt);
    wk_layout ld = wk__block_bytes_layout(&r->layout, r->dtype, &bdt);
    if (wk_numel(r) && wk__be(t)->copy_strided(wk__dev(t), t->storage->buf, &ls, r->storage->buf, &ld, bdt) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

wk_tensor *wk__prim_contiguous(const wk_tensor *t) {
    if (!wk__check_in_blocks("wk_contiguous", t)) return NULL;
    if (!wk__layout_is_contiguous(&t->layout)) return wk__prim_copy(t);
    return wk__tensor_view(t, &t->layout);
}

wk_tensor *wk__prim_to_dtype(const wk_tensor *t, wk_dtype dt) {
    const char *op = "wk_to_dtype";
    if (!wk__check_in_blocks(op, t)) return NULL;
    if (!wk_dtype_info_of(dt)) { wk__err(WK_ERR_DTYPE, op, "invalid dtype %d", (int)dt); return NULL; }
    if (dt == t->dtype) return wk__tensor_view(t, &t->layout);
    if (wk_dtype_is_quantized(t->dtype) || wk_dtype_is_quantized(dt)) return wk__to_dtype_blocks(op, t, dt);
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), dt, t->layout.shape, t->layout.rank);
    if (!r) return NULL;
    if (wk_numel(r) && wk__be(t)->cast(wk__dev(t), t->storage->buf, &t->layout, t->dtype, r->storage->buf, dt) != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

/* Moves copy exactly the view's elements once where they can:
 *  - to the CPU: the source backend's to_host gathers the view straight
 *    into the new tensor's storage;
 *  - from a contiguous CPU view: from_host reads the CPU buffer in place;
 *  - between two devices of one backend that has the optional copy_between
 *    entry (CUDA to CUDA): a device-to-device (peer) copy, no host round trip;
 *  - anything else through a host staging buffer.
 * Every step is a contract entry of the backends involved. */
wk_tensor *wk__prim_to_device(const wk_tensor *t, wk_device *dev) {
    const char *op = "wk_to_device";
    if (!wk__check_in_blocks(op, t)) return NULL; /* block dtypes move their bytes */
    if (!dev) { wk__err(WK_ERR_ARG, op, "NULL device"); return NULL; }
    wk_device *src = wk__dev(t);
    if (dev == src) return wk__tensor_view(t, &t->layout);
    /* byte counts through the dtype's block geometry, like every other sizing */
    size_t nb, off;
    if (wk__dtype_bytes_for(op, t->dtype, wk_numel(t), &nb) != WK_OK ||
        wk__dtype_bytes_for(op, t->dtype, t->layout.offset, &off) != WK_OK)
        return NULL;
    if (dev->kind == WK_DEVICE_CPU || (src->kind == WK_DEVICE_CPU && wk__layout_is_contiguous(&t->layout)) ||
        (src->be == dev->be && src->be->copy_between)) {
        wk_tensor *r = wk__tensor_alloc(op, dev, t->dtype, t->layout.shape, t->layout.rank);
        if (!r || nb == 0) return r;
        wk_status st;
        wk_dtype bdt;
        wk_layout bl = wk__block_bytes_layout(&t->layout, t->dtype, &bdt);
        if (dev->kind == WK_DEVICE_CPU)
            st = wk__be(t)->to_host(src, t->storage->buf, &bl, bdt, r->storage->buf);
        else if (src->kind == WK_DEVICE_CPU)
            st = dev->be->from_host(dev, r->storage->buf, 0, (const char *)t->storage->buf + off, nb);
        else
            st = src->be->copy_between(src, t->storage->buf, &bl, bdt, dev, r->storage->buf);
        if (st != WK_OK) {
            wk_tensor_free(r);
            return NULL;
        }
        return r;
    }
    void *tmp = malloc(nb ? nb : 1);
    if (!tmp) { wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of staging memory", nb); return NULL; }
    wk_tensor *r = NULL;
    if (wk_to_host(t, tmp, nb) == WK_OK) r = wk_from_host(tmp, nb, t->layout.shape, t->layout.rank, t->dtype, dev);
    free(tmp);
    return r;
}

/* ---- in-place writes (the only mutation paths, as in candle) ---- */

static wk_status fill_named(const char *op, wk_tensor *t, double value) {
    if (!wk__check_in(op, t)) return wk_last_status();
    wk_status st = wk__check_writable(op, t, &t->layout);
    if (st != WK_OK) return st;
    if (wk_numel(t) == 0) return WK_OK;
    return wk__be(t)->fill(wk__dev(t), t->storage->buf, &t->layout, t->dtype, value);
}
wk_status wk_fill_(wk_tensor *t, double value) { return fill_named("wk_fill_", t, value); }
wk_status wk_zero_(wk_tensor *t) { return fill_named("wk_zero_", t, 0.0); }
wk_status wk_one_(wk_tensor *t) { return fill_named("wk_one_", t, 1.0); }

/* Overlap between src and dst views of the same storage would make the copy
 * order-dependent; copy src out first in that case. */
static wk_status copy_into(const char *op, wk_tensor *dst, const wk_layout *ld, const wk_tensor *src) {
    wk_status ws = wk__check_writable(op, dst, ld);
    if (ws != WK_OK) return ws;
    if (wk__layout_numel(ld) == 0) return WK_OK;
    if (src->storage == dst->storage) {
        wk_tensor *tmp = wk__prim_copy(src);
        if (!tmp) return wk_last_status();
        wk_status st = wk__be(dst)->copy_strided(wk__dev(dst), tmp->storage->buf, &tmp->layout, dst->storage->buf, ld,
                                                  dst->dtype);
        wk_tensor_free(tmp);
        return st;
    }
    return wk__be(dst)->copy_strided(wk__dev(dst), src->storage->buf, &src->layout, dst->storage->buf, ld, dst->dtype);
}

wk_status wk__prim_copy_(wk_tensor *dst, const wk_tensor *src) {
    const char *op = "wk_copy_";
    if (!wk__check_same(op, dst, src)) return wk_last_status();
    if (dst->layout.rank != src->layout.rank ||
        memcmp(dst->layout.shape, src->layout.shape, sizeof(int64_t) * (size_t)dst->layout.rank) != 0) {
        char a[128], b[128];
        return wk__err(WK_ERR_SHAPE, op, "dst %s and src %s differ",
                       wk__shape_str(dst->layout.shape, dst->layout.rank, a, sizeof a),
                       wk__shape_str(src->layout.shape, src->layout.rank, b, sizeof b));
    }
    return copy_into(op, dst, &dst->layout, src);
}

wk_status wk__prim_slice_set(wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset) {
    const char *op = "wk_slice_set";
    if (!wk__check_same(op, dst, src)) return wk_last_status();
    int d;
    if (wk__norm_dim(op, dim, dst->layout.rank, &d) != WK_OK) return wk_last_status();
    bool ok = src->layout.rank == dst->layout.rank;
    for (int i = 0; ok && i < dst->layout.rank; i++)
        if (i != d && src->layout.shape[i] != dst->layout.shape[i]) ok = false;
    if (!ok) {
        char a[128], b[128];
        return wk__err(WK_ERR_SHAPE, op, "src %s does not fit dst %s outside dim %d",
                       wk__shape_str(src->layout.shape, src->layout.rank, a, sizeof a),
                       wk__shape_str(dst->layout.shape, dst->layout.rank, b, sizeof b), d);
    }
    int64_t len = src->layout.shape[d];
    if (offset < 0 || offset > dst->layout.shape[d] - len)
        return wk__err(WK_ERR_INDEX, op, "offset %lld + length %lld exceeds dim %d of size %lld", (long long)offset,
                       (long long)len, d, (long long)dst->layout.shape[d]);
    wk_layout ld = dst->layout;
    ld.offset += offset * ld.stride[d];
    ld.shape[d] = len;
    return copy_into(op, dst, &ld, src);
}
