/* wk_quantize / wk_dequantize and the block half of wk_to_dtype. The work
 * is the backends' `quantize` / `dequantize` entries; a device without one
 * sends the bytes through the host (the CPU backend's entry) and back, so
 * every device converts every block dtype. The untracked ops
 * (ops/prim_quantize.h); the public ones are src/autograd/tracked_quantize.c. */
#include "ops/prim_quantize.h"
#include "ops/prim_copy.h"
#include "ops/quantize.h"
#include "quant/quant.h"

static bool is_quant_source(wk_dtype dt) { return dt == WK_F32 || dt == WK_F16 || dt == WK_BF16 || dt == WK_F64; }
static bool is_dequant_target(wk_dtype dt) { return dt == WK_F32 || dt == WK_F16 || dt == WK_BF16; }

/* The CPU device, whose entries serve devices that lack them. */
static wk_device *host_for(const char *op, const char *what) {
    wk_device *cpu = wk_cpu();
    if (cpu && !(what[0] == 'q' ? cpu->be->quantize != NULL : cpu->be->dequantize != NULL)) {
        wk__err(WK_ERR_NOT_COMPILED, op, "backend %s has no %s entry", cpu->be->name, what);
        return NULL;
    }
    return cpu;
}

/* op on the host copy of t, the result moved back to t's device. */
static wk_tensor *via_host(const char *op, const wk_tensor *t, wk_dtype dt, const char *what,
                           wk_tensor *(*fn)(const wk_tensor *, wk_dtype)) {
    wk_device *cpu = host_for(op, what);
    if (!cpu) return NULL;
    wk_tensor *h = wk__prim_to_device(t, cpu);
    wk_tensor *hr = h ? fn(h, dt) : NULL;
    wk_tensor *r = hr ? wk__prim_to_device(hr, wk__dev(t)) : NULL;
    wk_tensor_free(hr);
    wk_tensor_free(h);
    return r;
}

static const char *sh(const wk_tensor *t, char *b, size_t n) {
    return wk__shape_str(t->layout.shape, t->layout.rank, b, n);
}

wk_tensor *wk__prim_quantize(const wk_tensor *t, wk_dtype qdt) {
    const char *op = "wk_quantize";
    if (!wk__check_in_blocks(op, t)) return NULL;
    const wk__quant_traits *tr = wk__quant_traits_of(qdt);
    if (!tr) {
        wk__err(WK_ERR_DTYPE, op, "target dtype %s is not a block-quantized dtype (use wk_to_dtype)",
                wk_dtype_name(qdt));
        return NULL;
    }
    if (!tr->from_f32) {
        wk__err(WK_ERR_NOT_COMPILED, op, "no quantizer for %s is built yet", wk_dtype_name(qdt));
        return NULL;
    }
    if (wk_dtype_is_quantized(t->dtype)) { /* requantize through f32 */
        wk_tensor *f = wk__prim_dequantize(t, WK_F32);
        wk_tensor *r = f ? wk__prim_quantize(f, qdt) : NULL;
        wk_tensor_free(f);
        return r;
    }
    if (!is_quant_source(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "quantizes f32, f16, bf16 or f64 values, got %s (wk_to_dtype converts other "
                "dtypes through f32)", wk_dtype_name(t->dtype));
        return NULL;
    }
    int r = t->layout.rank;
    if (r < 1 || t->layout.shape[r - 1] % tr->block_elems) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "%s needs the last dim to be a multiple of %u elements, shape is %s",
                wk_dtype_name(qdt), tr->block_elems, sh(t, b, sizeof b));
        return NULL;
    }
    const wk_backend *be = wk__be(t);
    if (!be->quantize) return via_host(op, t, qdt, "quantize", wk__prim_quantize);
    wk_tensor *out = wk__tensor_alloc(op, wk__dev(t), qdt, t->layout.shape, r);
    if (!out || wk_numel(out) == 0) return out;
    if (be->quantize(wk__dev(t), t->storage->buf, &t->layout, t->dtype, out->storage->buf, qdt) != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}

wk_tensor *wk__prim_dequantize(const wk_tensor *w, wk_dtype dt) {
    const char *op = "wk_dequantize";
    if (!wk__check_in_blocks(op, w)) return NULL;
    if (!wk_dtype_is_quantized(w->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "dtype %s is not a block-quantized dtype", wk_dtype_name(w->dtype));
        return NULL;
    }
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!di || di->block_elems != 1) {
        wk__err(WK_ERR_DTYPE, op, "dequantizes %s to an element dtype, got %s (wk_to_dtype converts between block "
                "dtypes)", wk_dtype_name(w->dtype), di ? wk_dtype_name(dt) : "an invalid dtype");
        return NULL;
    }
    if (!is_dequant_target(dt)) { /* other element dtypes: through f32 */
        wk_tensor *f = wk__prim_dequantize(w, WK_F32);
        wk_tensor *r = f ? wk__prim_to_dtype(f, dt) : NULL;
        wk_tensor_free(f);
        return r;
    }
    const wk_backend *be = wk__be(w);
    if (!be->dequantize) return via_host(op, w, dt, "dequantize", wk__prim_dequantize);
    wk_tensor *out = wk__tensor_alloc(op, wk__dev(w), dt, w->layout.shape, w->layout.rank);
    if (!out || wk_numel(out) == 0) return out;
    if (be->dequantize(wk__dev(w), w->storage->buf, &w->layout, w->dtype, out->storage->buf, dt) != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}

wk_tensor *wk__to_dtype_blocks(const char *op, const wk_tensor *t, wk_dtype dt) {
    (void)op;
    if (!wk_dtype_is_quantized(dt)) return wk__prim_dequantize(t, dt);
    if (wk_dtype_is_quantized(t->dtype) || is_quant_source(t->dtype)) return wk__prim_quantize(t, dt);
    wk_tensor *f = wk__prim_to_dtype(t, WK_F32); /* integers, f8: values through f32 */
    wk_tensor *r = f ? wk__prim_quantize(f, dt) : NULL;
    wk_tensor_free(f);
    return r;
}
