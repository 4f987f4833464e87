/* Convolutions: parameter and shape checks, output shape, one backend call.
 * The backend receives the normalized parameters (stride / dilation / groups
 * >= 1) and a contiguous output of the shape computed here. */
#include "ops/prim_conv.h"

/* Upper bounds for parameters and dims: every size formula below stays far
 * from int64 overflow (products < 2^61). */
#define CONV_MAX ((int64_t)1 << 30)
#define CONV_DIM_MAX ((int64_t)1 << 31)

static bool conv_check(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *pin, int sp,
                       bool transposed, wk_conv_params *p, int64_t *oshape) {
    if (!wk__check_same(op, x, w)) return false;
    wk_dtype dt = x->dtype;
    if (dt != WK_F32 && dt != WK_F64 && dt != WK_F16 && dt != WK_BF16) {
        wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s (f32, f64, f16, bf16 only)", wk_dtype_name(dt));
        return false;
    }
    const wk_layout *lx = &x->layout, *lw = &w->layout;
    char bx[128], bw[128];
    if (lx->rank != sp + 2 || lw->rank != sp + 2) {
        wk__err(WK_ERR_SHAPE, op, "needs rank-%d input and weight: input %s, weight %s", sp + 2,
                wk__shape_str(lx->shape, lx->rank, bx, sizeof bx), wk__shape_str(lw->shape, lw->rank, bw, sizeof bw));
        return false;
    }
    wk_conv_params q = {0, 1, 1, 1, 0};
    if (pin) q = *pin;
    if (q.stride == 0) q.stride = 1;
    if (q.dilation == 0) q.dilation = 1;
    if (q.groups == 0) q.groups = 1;
    if (q.stride < 1 || q.stride > CONV_MAX || q.dilation < 1 || q.dilation > CONV_MAX || q.groups < 1 ||
        q.groups > CONV_MAX || q.padding < 0 || q.padding > CONV_MAX || q.output_padding < 0 ||
        q.output_padding > CONV_MAX) {
        wk__err(WK_ERR_ARG, op,
                "bad parameters: padding %lld, stride %lld, dilation %lld, groups %lld, output_padding %lld "
                "(need padding >= 0, stride/dilation/groups >= 1 or 0 for the default, output_padding >= 0)",
                (long long)q.padding, (long long)q.stride, (long long)q.dilation, (long long)q.groups,
                (long long)q.output_padding);
        return false;
    }
    if (!transposed && q.output_padding != 0) {
        wk__err(WK_ERR_ARG, op, "output_padding %lld is for transposed convolutions only", (long long)q.output_padding);
        return false;
    }
    if (transposed) {
        int64_t lim = q.stride > q.dilation ? q.stride : q.dilation;
        if (q.output_padding >= lim) {
            wk__err(WK_ERR_ARG, op, "output_padding %lld must be smaller than max(stride %lld, dilation %lld)",
                    (long long)q.output_padding, (long long)q.stride, (long long)q.dilation);
            return false;
        }
    }
    for (int i = 0; i < lx->rank; i++) {
        if (lx->shape[i] > CONV_DIM_MAX || lw->shape[i] > CONV_DIM_MAX) {
            wk__err(WK_ERR_SHAPE, op, "dims too large: input %s, weight %s",
                    wk__shape_str(lx->shape, lx->rank, bx, sizeof bx), wk__shape_str(lw->shape, lw->rank, bw, sizeof bw));
            return false;
        }
    }
    int64_t n = lx->shape[0], cin = lx->shape[1], g = q.groups, cout;
    wk__shape_str(lx->shape, lx->rank, bx, sizeof bx);
    wk__shape_str(lw->shape, lw->rank, bw, sizeof bw);
    if (cin % g != 0) {
        wk__err(WK_ERR_SHAPE, op, "input channels %lld not divisible by groups %lld (input %s)", (long long)cin,
                (long long)g, bx);
        return false;
    }
    if (!transposed) {
        cout = lw->shape[0];
        if (cout % g != 0) {
            wk__err(WK_ERR_SHAPE, op, "output channels %lld (weight %s) not divisible by groups %lld", (long long)cout,
                    bw, (long long)g);
            return false;
        }
        if (lw->shape[1] != cin / g) {
            wk__err(WK_ERR_SHAPE, op, "weight %s needs dim 1 = input channels / groups = %lld (input %s, groups %lld)",
                    bw, (long long)(cin / g), bx, (long long)g);
            return false;
        }
    } else {
        if (lw->shape[0] != cin) {
            wk__err(WK_ERR_SHAPE, op, "weight %s needs dim 0 = input channels %lld (input %s)", bw, (long long)cin, bx);
            return false;
        }
        cout = lw->shape[1] * g;
    }
    oshape[0] = n;
    oshape[1] = cout;
    for (int d = 0; d < sp; d++) {
        int64_t in = lx->shape[2 + d], k = lw->shape[2 + d], o;
        if (k < 1) {
            wk__err(WK_ERR_SHAPE, op, "kernel size %lld must be >= 1 (weight %s)", (long long)k, bw);
            return false;
        }
        int64_t span = q.dilation * (k - 1) + 1;
        if (!transposed) {
            int64_t padded = in + 2 * q.padding;
            o = padded >= span ? (padded - span) / q.stride + 1 : 0;
            if (o < 1) {
                wk__err(WK_ERR_SHAPE, op,
                        "output size %lld < 1 on spatial dim %d: input %lld + 2*padding %lld < dilation %lld*(kernel "
                        "%lld-1)+1 (input %s, weight %s)",
                        (long long)o, d, (long long)in,
                        (long long)q.padding, (long long)q.dilation, (long long)k, bx, bw);
                return false;
            }
        } else {
            o = (in - 1) * q.stride - 2 * q.padding + span + q.output_padding;
            if (o < 1) {
                wk__err(WK_ERR_SHAPE, op,
                        "output size %lld < 1 on spatial dim %d: (input %lld-1)*stride %lld - 2*padding %lld + "
                        "dilation %lld*(kernel %lld-1) + output_padding %lld + 1 (input %s, weight %s)",
                        (long long)o, d, (long long)in, (long long)q.stride, (long long)q.padding,
                        (long long)q.dilation, (long long)k, (long long)q.output_padding, bx, bw);
                return false;
            }
        }
        oshape[2 + d] = o;
    }
    *p = q;
    return true;
}

static wk_tensor *conv_impl(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *pin,
                            int sp, bool transposed, wk_conv_params *pout) {
    wk_conv_params p;
    int64_t oshape[WK_MAX_RANK];
    if (!conv_check(op, x, w, pin, sp, transposed, &p, oshape)) return NULL;
    *pout = p;
    wk_tensor *out = wk__tensor_alloc(op, wk__dev(x), x->dtype, oshape, sp + 2);
    if (!out || wk_numel(out) == 0) return out;
    const wk_backend *be = wk__be(x);
    wk_status st;
    if (wk_numel(x) == 0 || wk_numel(w) == 0) {
        /* no products at all (zero input channels or an empty spatial input) */
        st = be->fill(wk__dev(x), out->storage->buf, &out->layout, x->dtype, 0.0);
    } else {
        wk_conv_args a = {.p = p, .spatial = sp, .transposed = transposed};
        st = be->conv(wk__dev(x), x->storage->buf, &x->layout, w->storage->buf, &w->layout, out->storage->buf,
                      &out->layout, x->dtype, &a);
    }
    if (st != WK_OK) {
        wk_tensor_free(out);
        return NULL;
    }
    return out;
}

/* The untracked op (src/autograd/tracked_conv.c records it): one backend
 * call, norm (when not NULL) gets the normalized parameters. */
wk_tensor *wk__prim_conv(const char *op, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p, int spatial,
                         bool transposed, wk_conv_params *norm) {
    wk_conv_params q;
    return conv_impl(op, x, w, p, spatial, transposed, norm ? norm : &q);
}
