/* Readback: a view's elements to host memory (exactly the view's elements;
 * a one-element read moves one element), as its own dtype or cast to
 * f32 / f64, one element by index, and wk_print. */
#include "tensor/block_bytes.h"
#include "ops/quantize.h"
#include "tensor/tensor.h"
#include "ops/prim_quantize.h"
#include "ops/prim_copy.h"
#include <stdio.h>
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

static void print_rec(const double *v, const wk_layout *l, int d, int64_t *pos, bool is_float, int indent) {
    if (d == l->rank) {
        if (is_float) printf("%.6g", v[*pos]);
        else printf("%.0f", v[*pos]);
        (*pos)++;
        return;
    }
    printf("[");
    int64_t n = l->shape[d];
    for (int64_t i = 0; i < n; i++) {
        if (n > 12 && i == 6) {
            /* skip the middle of long dims */
            int64_t inner = 1;
            for (int k = d + 1; k < l->rank; k++) inner *= l->shape[k];
            *pos += (n - 12) * inner;
            i = n - 6;
            printf("..., ");
        }
        print_rec(v, l, d + 1, pos, is_float, indent + 1);
        if (i + 1 < n) {
            if (d + 1 < l->rank) printf(",\n%*s", indent + 1, "");
            else printf(", ");
        }
    }
    printf("]");
}

wk_status wk_print(const wk_tensor *t) {
    if (!wk__check_in("wk_print", t)) return wk_last_status();
    int64_t n = wk_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) return wk__err(WK_ERR_OOM, "wk_print", "cannot allocate %lld doubles", (long long)n);
    wk_status st = wk_to_host_f64(t, v, (size_t)n);
    if (st == WK_OK) {
        char d[300];
        int64_t pos = 0;
        printf("tensor %s\n", wk_tensor_describe(t, d, sizeof d));
        print_rec(v, &t->layout, 0, &pos, wk_dtype_is_float(t->dtype), 0);
        printf("\n");
    }
    free(v);
    return st;
}
