/* Backward of conv1d / conv2d and both transposed convs, written with the
 * public conv ops (so create_graph differentiates them again):
 *
 *   conv           dx = conv_transpose(g, w)   (output_padding brings it
 *                       back to x's size; rows no window read are 0)
 *   conv_transpose dx = conv(g, w)              (narrowed to x's size)
 *   both           dw = a conv of the "sliding" tensor (x for conv, g for the
 *                       transpose) with the other one as its kernel, batch and
 *                       channels swapped: stride and dilation trade places.
 *
 * The weight-gradient conv: dw[o, c, k] = sum_{n, p} K[n, o, p] *
 * S[n, grp(o) * cg + c, p * stride + k * dilation - pad]. As a conv with batch
 * c, channels (group, n), kernel K^T and stride = dilation, dilation =
 * stride, padding = pad, groups = groups, its output is (cg, O, K'...) with
 * K' >= K (the tail past K is what no window reached): narrowed to K and
 * permuted to (O, cg, K...). With groups = 1 the input is a permuted view of
 * S (the CPU conv reads any strides: no copy).
 *
 * Outside create_graph, stride-1 weight gradients with >= 64 weight rows per
 * output channel take an im2col GEMM instead (weight_grad_im2col: faster
 * on the CPU; not recorded, which only create_graph would need), except on
 * small f32 maps whose conv keeps the map size: there the swapped conv has
 * a CPU path of its own (cpu_conv.c, small_out_geometry) that is faster. */
#include "autograd/record.h"

static wk_tensor *conv_op(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p, int sp, bool tr) {
    if (sp == 1) return tr ? wk_conv_transpose1d(x, w, p) : wk_conv1d(x, w, p);
    return tr ? wk_conv_transpose2d(x, w, p) : wk_conv2d(x, w, p);
}

/* t narrowed to want on the spatial dims 2.. (every form below computes at
 * least the input's extent; the tail is what no window reached). */
static wk_tensor *fit_spatial(wk_tensor *t, const int64_t *want, int sp) {
    for (int k = 0; t && k < sp; k++)
        if (wk_shape(t)[2 + k] > want[k]) t = wk_narrow(t, 2 + k, 0, want[k]);
    return t;
}

/* dw[o, c, k...] from the sliding tensor s (N, G*cg, L...) and the kernel
 * side kt (N, O, P...), see the top of the file. ks: the weight's spatial
 * sizes. */
static wk_tensor *weight_grad(const wk_tensor *s, const wk_tensor *kt, const wk_conv_params *p, int sp,
                              const int64_t *ks) {
    const int64_t *ss = wk_shape(s);
    int64_t n = ss[0], g = p->groups, cg = ss[1] / g;
    wk_tensor *in;
    if (g == 1) {
        int perm[4] = {1, 0, 2, 3};
        in = wk_permute(s, perm, sp + 2);
    } else {
        int64_t s5[5] = {n, g, cg, ss[2], sp == 2 ? ss[3] : 0};
        int perm[5] = {2, 1, 0, 3, 4};
        wk_tensor *v = wk_permute(wk_reshape(s, s5, sp + 3), perm, sp + 3);
        int64_t s4[4] = {cg, g * n, ss[2], sp == 2 ? ss[3] : 0};
        in = wk_reshape(v, s4, sp + 2);
    }
    int kperm[4] = {1, 0, 2, 3};
    wk_tensor *k = wk_permute(kt, kperm, sp + 2);
    wk_conv_params q = {.padding = p->padding, .stride = p->dilation, .dilation = p->stride, .groups = g};
    wk_tensor *r = fit_spatial(conv_op(in, k, &q, sp, false), ks, sp);
    int operm[4] = {1, 0, 2, 3};
    return wk_contiguous(wk_permute(r, operm, sp + 2));
}

/* weight_grad for stride 1 outside create_graph (training's case): an
 * im2col GEMM with the long N*P reduction, dw = col x kt^T per group.
 * Implicit padded width: the columns of window (i, j) for one (n, c) are
 * the ph*Wp consecutive elements of the padded plane (width Wp) from row
 * i*d, column j*d, so the whole im2col is ONE overlapping strided view of
 * the padded input and ONE copy with long contiguous runs (the plane gets
 * one extra zero row so the last window's run stays inside it). The Wp - pw
 * extra columns per row meet zeros in kt (padded to width Wp): they add
 * nothing. Measured several times faster on the CPU than the swapped conv
 * of weight_grad, whose im2col has kernel-sized windows and runs of only K'
 * outputs. Not recorded: create_graph takes weight_grad. */
static wk_tensor *weight_grad_im2col(const wk_tensor *s, const wk_tensor *kt, const wk_conv_params *p, int sp,
                                     const int64_t *ks) {
    const int64_t *ss = wk_shape(s), *kk = wk_shape(kt);
    int64_t n = ss[0], ch = ss[1], g = p->groups, cg = ch / g, o = kk[1], og = o / g, d = p->dilation;
    int64_t pad = p->padding, padh = sp == 2 ? pad : 0;
    int64_t ph = sp == 2 ? kk[2] : 1, pw = kk[sp + 1], kh = sp == 2 ? ks[0] : 1, kw = ks[sp - 1];
    wk_tensor *s4 = sp == 2 ? (wk_tensor *)s : wk_unsqueeze(s, 2), *k4 = sp == 2 ? (wk_tensor *)kt : wk_unsqueeze(kt, 2);
    if (pad > 0) s4 = wk_pad_with_zeros(s4, 3, pad, pad);
    s4 = wk_contiguous(wk_pad_with_zeros(s4, 2, padh, padh + 1));
    if (!s4 || !k4) return NULL;
    int64_t hq = wk_shape(s4)[2], wp = wk_shape(s4)[3], run = ph * wp, plane = hq * wp;
    wk_layout lv = {.rank = 5,
                    .shape = {ch, kh, kw, n, run},
                    .stride = {plane, d * wp, d, ch * plane, 1},
                    .offset = s4->layout.offset};
    wk_tensor *view = wk__tensor_view(s4, &lv);
    int64_t cs[3] = {g, cg * kh * kw, n * run};
    wk_tensor *col = view ? wk_reshape(wk_contiguous(view), cs, 3) : NULL;
    /* kt (N, O, ph, pw) -> zeros to width wp -> (G, N*ph*wp, og) */
    wk_tensor *kp = wp > pw ? wk_pad_with_zeros(k4, 3, 0, wp - pw) : k4;
    int64_t k5[5] = {n, g, og, ph, wp}, ts[3] = {g, n * run, og};
    int tperm[5] = {1, 0, 3, 4, 2};
    wk_tensor *kt3 = wk_reshape(wk_contiguous(wk_permute(wk_reshape(kp, k5, 5), tperm, 5)), ts, 3);
    wk_tensor *r = wk_matmul(col, kt3); /* (G, cg*KH*KW, og) */
    int rperm[3] = {0, 2, 1};
    int64_t ws[4] = {o, cg, kh, kw}, w3[3] = {o, cg, kw};
    return wk_contiguous(wk_reshape(wk_permute(r, rperm, 3), sp == 2 ? ws : w3, sp + 2));
}

static wk_status conv_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    wk_conv_params p = n->args.conv.p;
    int sp = n->args.conv.spatial;
    bool tr = n->args.conv.transposed;
    const wk__edge *ex = &n->in[0], *ew = &n->in[1];
    const wk_tensor *g = c->g;
    bool empty = wk_numel(g) == 0;
    int64_t nx = 1, nw = 1;
    for (int d = 0; d < ex->rank; d++) nx *= ex->shape[d];
    for (int d = 0; d < ew->rank; d++) nw *= ew->shape[d];
    empty = empty || nx == 0 || nw == 0; /* the forward wrote zeros: no products, zero gradients */
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) {
        wk_tensor *dx;
        if (empty) dx = wk_zeros(ex->shape, ex->rank, ex->dtype, ex->dev);
        else {
            wk_tensor *w = wk__bw_saved(c, 1);
            if (!w) return wk_last_status();
            wk_conv_params q = p;
            q.output_padding = 0;
            if (!tr) {
                /* output_padding brings back the input rows past the last
                 * window start's reach (real gradient: the windows read
                 * them). One value serves every spatial dim: the largest
                 * need, and the dims that need less are narrowed back. */
                int64_t opad = 0;
                for (int d = 0; d < sp; d++) {
                    int64_t o = g->layout.shape[2 + d], k = ew->shape[2 + d];
                    int64_t base = (o - 1) * p.stride - 2 * p.padding + p.dilation * (k - 1) + 1;
                    int64_t need = ex->shape[2 + d] - base;
                    if (need > opad) opad = need;
                }
                q.output_padding = opad;
            }
            dx = fit_spatial(conv_op(g, w, &q, sp, !tr), ex->shape + 2, sp);
        }
        st = wk__bw_set(c, 0, dx);
    }
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *dw;
        if (empty) dw = wk_zeros(ew->shape, ew->rank, ew->dtype, ew->dev);
        else {
            wk_tensor *x = wk__bw_saved(c, 0);
            if (!x) return wk_last_status();
            /* conv: x slides under g; transpose: g slides under x */
            const wk_tensor *sl = tr ? g : x, *kt = tr ? x : g;
            /* the im2col GEMM wins once its rows (cg * kernel) fill the
             * GEMM's tiles; a one-channel first layer (9 rows) is faster
             * as the swapped conv (measured: 64x1x8x8 -> 16, 3x3: 0.21 vs
             * 0.55 ms; 8x64x32x32 -> 64: 20 vs 11 ms, 1 thread) */
            int64_t rows = ew->shape[1];
            for (int k = 0; k < sp; k++) rows *= ew->shape[2 + k];
            /* a stride-1, dilation-1 conv that keeps the map size (3x3 pad
             * 1) on f32: the swapped conv's kernel then covers its input and
             * the CPU conv runs it as long shifted rows (cpu_conv.c,
             * small_out_geometry): faster than the im2col GEMM's copies */
            bool keeps = p.stride == 1 && p.dilation == 1 && ex->dtype == WK_F32 && ew->shape[2] <= 8 &&
                         ew->shape[sp + 1] <= 8;
            int64_t map = 1;
            for (int k = 0; k < sp; k++) {
                keeps = keeps && g->layout.shape[2 + k] == ex->shape[2 + k];
                map *= ex->shape[2 + k];
            }
            keeps = keeps && map <= 256; /* larger maps: the im2col GEMM's wide N wins */
            bool im2col = p.stride == 1 && !c->create_graph && rows >= 64 && !keeps;
            dw = im2col ? weight_grad_im2col(sl, kt, &p, sp, ew->shape + 2) : weight_grad(sl, kt, &p, sp, ew->shape + 2);
        }
        st = wk__bw_set(c, 1, dw);
    }
    return st;
}

wk_tensor *wk__ag_conv(wk_tensor *r, const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p, int spatial,
                       bool transposed, const char *op) {
    if (!r) return NULL;
    const wk_tensor *in[2] = {x, w};
    wk__node *n = wk__node_new(WK__OP_CONV, op, conv_backward, 2, in);
    if (n) {
        n->args.conv = (wk__args_conv){.p = *p, .spatial = spatial, .transposed = transposed};
        /* dx reads w only, dw reads x only */
        wk__node_save(n, n->in[1].node ? x : NULL);
        wk__node_save(n, n->in[0].node ? w : NULL);
    }
    return wk__node_attach(n, r);
}
