/* Backward rules of the scans. cumsum's adjoint is the reversed cumsum
 * (sum over the positions at and after each one); cumprod's is built from
 * it, exact where the line holds zeros (no division by them). The reversed
 * cumsum is an op of this file with its own node (its adjoint is cumsum), so
 * gradients of gradients stay recorded without leaning on flip's rule. */
#include "autograd/record.h"

/* ---- the reversed cumsum: r_i = sum_{k >= i} v_k along dim ---- */

static wk_tensor *rev_cumsum(const wk_tensor *v, int dim);

static wk_status rev_cumsum_backward(wk__bw_ctx *c) { return wk__bw_set(c, 0, wk_cumsum(c->g, c->n->args.scan.dim)); }

/* flip, cumsum, flip: as exact as the forward cumsum (no "total minus
 * prefix" cancellation). */
static wk_tensor *rev_cumsum(const wk_tensor *v, int dim) {
    if (!v) return NULL;
    if (v->layout.rank == 0) return wk_contiguous(v); /* a view: scope-owned like any result */
    bool ag = wk__ag_on1(v);
    if (ag) wk__ag_suspend();
    wk_tensor *f = wk_flip(v, &dim, 1);
    wk_tensor *s = f ? wk_cumsum(f, dim) : NULL;
    wk_tensor *r = s ? wk_flip(s, &dim, 1) : NULL;
    wk_tensor_free(f);
    wk_tensor_free(s);
    if (ag) wk__ag_resume();
    if (!ag || !r) return r;
    wk__node *n = wk__node_new(WK__OP_CUMSUM_REVERSE, "wk_cumsum_reverse", rev_cumsum_backward, 1, &v);
    if (n) n->args.scan.dim = dim;
    return wk__node_attach(n, r);
}

/* ---- cumsum ---- */

static wk_status cumsum_backward(wk__bw_ctx *c) {
    if (c->n->in[0].rank == 0) return wk__bw_set(c, 0, c->g);
    return wk__bw_set(c, 0, rev_cumsum(c->g, c->n->args.scan.dim));
}

wk_tensor *wk__ag_cumsum(wk_tensor *r, const wk_tensor *x, int dim) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_CUMSUM, "wk_cumsum", cumsum_backward, 1, &x);
    if (n) n->args.scan.dim = dim;
    return wk__node_attach(n, r);
}

/* ---- cumprod ----
 * dL/dx_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j. With z the first
 * zero of the line:
 *   i < z: revcumsum(g y)_i / x_i     (y_k = 0 for k >= z, x_i != 0)
 *   i = z: revcumsum(g y')_z          (y' = cumprod of x with x_z set to 1)
 *   i > z: 0, written x_z revcumsum(g y')_i / x_i so that its derivative
 *          along x_z is right (second order exact with one zero per line)
 * A tensor without zeros takes the first line everywhere (PyTorch's rule). */
static wk_status cumprod_backward(wk__bw_ctx *c) {
    int d = c->n->args.scan.dim;
    const wk__edge *e = &c->n->in[0];
    if (e->rank == 0 || e->shape[d] <= 1) return wk__bw_set(c, 0, c->g); /* y = x */
    wk_tensor *x = wk__bw_saved(c, 0), *y = wk__bw_saved(c, 1);
    if (!x || !y) return wk_last_status();
    const wk_tensor *g = c->g;
    wk_tensor *z = wk_cmp_scalar(x, 0.0, WK_EQ);
    int all[WK_MAX_RANK];
    for (int i = 0; i < e->rank; i++) all[i] = i;
    wk_tensor *anyz = z ? wk_any(z, all, e->rank, false) : NULL;
    double has_zero = 0;
    if (!anyz || wk_item(anyz, &has_zero) != WK_OK) return wk_last_status();
    if (has_zero == 0) return wk__bw_set(c, 0, wk_div(rev_cumsum(wk_mul(g, y), d), x));

    wk_tensor *one = wk_ones(NULL, 0, x->dtype, wk__dev(x)), *nil = wk_zeros(NULL, 0, x->dtype, wk__dev(x));
    wk_tensor *zf = wk_to_dtype(z, WK_F32);
    wk_tensor *zc = wk_cumsum(zf, d); /* zeros so far, counted exactly in f32 */
    wk_tensor *before = wk_cmp_scalar(zc, 0.0, WK_EQ);
    wk_tensor *first = wk_cmp_scalar(wk_mul(wk_to_dtype(wk_cmp_scalar(zc, 1.0, WK_EQ), WK_F32), zf), 0.5, WK_GT);
    wk_tensor *xs = wk_where(z, one, x); /* a safe divisor */
    wk_tensor *a = wk_div(rev_cumsum(wk_mul(g, y), d), xs);
    wk_tensor *y1 = wk_cumprod(wk_where(first, one, x), d);
    wk_tensor *b = rev_cumsum(wk_mul(g, y1), d);
    wk_tensor *xz = wk_sum(wk_where(first, x, nil), &d, 1, true); /* x_z: 0, with slope 1 */
    wk_tensor *cc = wk_div(wk_mul(xz, b), xs);
    return wk__bw_set(c, 0, wk_where(before, a, wk_where(first, b, cc)));
}

wk_tensor *wk__ag_cumprod(wk_tensor *r, const wk_tensor *x, int dim) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_CUMPROD, "wk_cumprod", cumprod_backward, 1, &x);
    if (n) n->args.scan.dim = dim;
    wk__node_save(n, x);
    wk__node_save_out(n, r);
    return wk__node_attach(n, r);
}
