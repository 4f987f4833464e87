/* Backward rules of the unary and binary op lists (keyed by their backward
 * column, src/tensor/op_lists.h) and of affine. Written with public ops, so that under
 * create_graph the gradients are recorded and can be differentiated again. */
#include "autograd/record.h"
#include "tensor/op_lists.h"
#include <math.h>

/* What each unary rule reads: the input x, the output y, or nothing. */
enum { SAVE_NONE, SAVE_X, SAVE_Y };
static int unary_saves(wk__backward_rule r) {
    switch (r) {
    case BW_EXP: case BW_TANH: case BW_RECIP: case BW_SQRT: case BW_SIGMOID: return SAVE_Y;
    case BW_NEG: case BW_ZERO: return SAVE_NONE;
    case BW_LOG: case BW_SIN: case BW_COS: case BW_ABS: case BW_SQR: case BW_GELU: case BW_GELU_ERF: case BW_ERF:
    case BW_RELU: case BW_SILU: return SAVE_X;
    case BW_ADD: case BW_SUB: case BW_MUL: case BW_DIV: case BW_MAXIMUM: case BW_MINIMUM: case BW_POW:
    case WK__BW_COUNT: break;
    }
    return SAVE_NONE;
}

/* Float mask (1 where cmp(a, s) holds) in a's dtype: a constant of the graph. */
static wk_tensor *mask_scalar(const wk_tensor *a, double s, wk_cmp_op op) {
    wk_tensor *m = wk_cmp_scalar(a, s, op);
    return m ? wk_to_dtype(m, a->dtype) : NULL;
}
static wk_tensor *mask2(const wk_tensor *a, const wk_tensor *b, wk_cmp_op op) {
    wk_tensor *m = wk_cmp(a, b, op);
    return m ? wk_to_dtype(m, a->dtype) : NULL;
}

static wk_tensor *zeros_of_edge(const wk__edge *e) { return wk_zeros(e->shape, e->rank, e->dtype, e->dev); }

static wk_status unary_backward(wk__bw_ctx *c) {
    const wk_tensor *g = c->g;
    wk_unary_op op = c->n->args.unary.op;
    wk__backward_rule rule = wk__unary_backward[op];
    wk_tensor *v = NULL; /* x or y */
    if (unary_saves(rule) != SAVE_NONE && !(v = wk__bw_saved(c, 0))) return wk_last_status();
    const double k0 = sqrt(2.0 / M_PI), k1 = 0.044715;
    wk_tensor *d = NULL; /* the gradient */
    switch (rule) {
    case BW_ZERO: d = zeros_of_edge(&c->n->in[0]); break;
    case BW_EXP: d = wk_mul(g, v); break;
    case BW_LOG: d = wk_div(g, v); break;
    case BW_SIN: d = wk_mul(g, wk_cos(v)); break;
    case BW_COS: d = wk_neg(wk_mul(g, wk_sin(v))); break;
    case BW_TANH: d = wk_mul(g, wk_affine(wk_sqr(v), -1.0, 1.0)); break;
    case BW_ABS: d = wk_mul(g, wk_sign(v)); break;
    case BW_NEG: d = wk_neg(g); break;
    case BW_RECIP: d = wk_neg(wk_mul(g, wk_sqr(v))); break;
    case BW_SQR: d = wk_mul(g, wk_affine(v, 2.0, 0.0)); break;
    case BW_SQRT: d = wk_div(g, wk_affine(v, 2.0, 0.0)); break;
    case BW_GELU: {
        /* 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2), t = tanh(k0 (x + k1 x^3)) */
        wk_tensor *x2 = wk_sqr(v);
        wk_tensor *t = wk_tanh(wk_affine(wk_mul(v, wk_affine(x2, k1, 1.0)), k0, 0.0));
        wk_tensor *a = wk_affine(t, 0.5, 0.5);
        wk_tensor *b = wk_mul(wk_mul(wk_affine(v, 0.5 * k0, 0.0), wk_affine(wk_sqr(t), -1.0, 1.0)),
                              wk_affine(x2, 3.0 * k1, 1.0));
        d = wk_mul(g, wk_add(a, b));
        break;
    }
    case BW_GELU_ERF: {
        /* Phi(x) + x phi(x) */
        wk_tensor *phi_big = wk_affine(wk_erf(wk_affine(v, M_SQRT1_2, 0.0)), 0.5, 0.5);
        wk_tensor *phi = wk_affine(wk_exp(wk_affine(wk_sqr(v), -0.5, 0.0)), 1.0 / sqrt(2.0 * M_PI), 0.0);
        d = wk_mul(g, wk_add(phi_big, wk_mul(v, phi)));
        break;
    }
    case BW_ERF: d = wk_mul(g, wk_affine(wk_exp(wk_neg(wk_sqr(v))), 2.0 / sqrt(M_PI), 0.0)); break;
    case BW_RELU: {
        /* g where x > 0, else 0 (torch's threshold_backward: a NaN x or an
         * infinite g gives 0, not NaN). A select: the mask's cast to g's
         * dtype cost 15x the rest of the rule. */
        wk_tensor *zero = wk_zeros(NULL, 0, g->dtype, wk_tensor_device(g));
        d = wk_where(wk_cmp_scalar(v, 0.0, WK_GT), g, zero);
        break;
    }
    case BW_SILU: {
        wk_tensor *s = wk_sigmoid(v);
        d = wk_mul(g, wk_mul(s, wk_affine(wk_mul(v, wk_affine(s, -1.0, 1.0)), 1.0, 1.0)));
        break;
    }
    case BW_SIGMOID: d = wk_mul(g, wk_mul(v, wk_affine(v, -1.0, 1.0))); break;
    case BW_ADD: case BW_SUB: case BW_MUL: case BW_DIV: case BW_MAXIMUM: case BW_MINIMUM: case BW_POW:
    case WK__BW_COUNT:
        return wk__err(WK_ERR_INTERNAL, c->n->name, "backward: binary rule on a unary op");
    }
    return wk__bw_set(c, 0, d);
}

wk_tensor *wk__ag_unary(wk_tensor *r, const wk_tensor *x, wk_unary_op op) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_UNARY, wk_unary_name(op), unary_backward, 1, &x);
    if (n) {
        n->args.unary.op = op;
        int s = unary_saves(wk__unary_backward[op]);
        if (s == SAVE_X) wk__node_save(n, x);
        else if (s == SAVE_Y) wk__node_save_out(n, r);
    }
    return wk__node_attach(n, r);
}

/* Binary: saved a (0) and b (1) where a rule reads them; each gradient is
 * summed back over the dims broadcasting expanded. */
static wk_status binary_backward(wk__bw_ctx *c) {
    const wk_tensor *g = c->g;
    wk_binary_op op = c->n->args.binary.op;
    bool na = wk__bw_need(c, 0), nb = wk__bw_need(c, 1);
    wk__backward_rule rule = wk__binary_backward[op];
    wk_tensor *a = NULL, *b = NULL;
    if (rule == BW_MUL) { /* each side reads the other only */
        if ((nb && !(a = wk__bw_saved(c, 0))) || (na && !(b = wk__bw_saved(c, 1)))) return wk_last_status();
    } else if (rule == BW_DIV) { /* d/da reads b; d/db reads a and b */
        if ((nb && !(a = wk__bw_saved(c, 0))) || !(b = wk__bw_saved(c, 1))) return wk_last_status();
    } else if (rule != BW_ADD && rule != BW_SUB) {
        if (!(a = wk__bw_saved(c, 0)) || !(b = wk__bw_saved(c, 1))) return wk_last_status();
    }
    wk_status st = WK_OK;
    switch (rule) {
    case BW_ADD:
        if (na) st = wk__bw_set_sum(c, 0, g);
        if (st == WK_OK && nb) st = wk__bw_set_sum(c, 1, g);
        break;
    case BW_SUB:
        if (na) st = wk__bw_set_sum(c, 0, g);
        if (st == WK_OK && nb) st = wk__bw_set_sum(c, 1, wk_neg(g));
        break;
    case BW_MUL:
        if (na) st = wk__bw_set_sum(c, 0, wk_mul(g, b));
        if (st == WK_OK && nb) st = wk__bw_set_sum(c, 1, wk_mul(g, a));
        break;
    case BW_DIV:
        if (na) st = wk__bw_set_sum(c, 0, wk_div(g, b));
        if (st == WK_OK && nb) st = wk__bw_set_sum(c, 1, wk_neg(wk_div(wk_mul(g, a), wk_sqr(b))));
        break;
    case BW_MAXIMUM:
    case BW_MINIMUM: {
        /* ties split the gradient in half between a and b (PyTorch) */
        wk_cmp_op wins = rule == BW_MAXIMUM ? WK_GT : WK_LT, loses = rule == BW_MAXIMUM ? WK_LT : WK_GT;
        wk_tensor *half = wk_affine(mask2(a, b, WK_EQ), 0.5, 0.0);
        if (na) st = wk__bw_set_sum(c, 0, wk_mul(g, wk_add(mask2(a, b, wins), half)));
        if (st == WK_OK && nb) st = wk__bw_set_sum(c, 1, wk_mul(g, wk_add(mask2(a, b, loses), half)));
        break;
    }
    case BW_POW: {
        /* PyTorch's masks: d/da is 0 where b == 0; d/db is 0 where a == 0 and b >= 0 */
        if (na) {
            wk_tensor *da = wk_mul(b, wk_pow(a, wk_binary_scalar(b, 1.0, WK_SUB)));
            da = wk_where(wk_cmp_scalar(b, 0.0, WK_EQ), wk_zeros_like(da), da);
            st = wk__bw_set_sum(c, 0, wk_mul(g, da));
        }
        if (st == WK_OK && nb) {
            wk_tensor *db = wk_mul(wk_pow(a, b), wk_log(a));
            wk_tensor *z = wk_mul(mask_scalar(a, 0.0, WK_EQ), mask_scalar(b, 0.0, WK_GE));
            db = wk_where(wk_cmp_scalar(z, 0.5, WK_GT), wk_zeros_like(db), db);
            st = wk__bw_set_sum(c, 1, wk_mul(g, db));
        }
        break;
    }
    default:
        return wk__err(WK_ERR_INTERNAL, c->n->name, "backward: unary rule on a binary op");
    }
    return st;
}

wk_tensor *wk__ag_binary(wk_tensor *r, const wk_tensor *a, const wk_tensor *b, wk_binary_op op) {
    if (!r) return NULL;
    const wk_tensor *in[2] = {a, b};
    wk__node *n = wk__node_new(WK__OP_BINARY, wk_binary_name(op), binary_backward, 2, in);
    if (n) {
        n->args.binary.op = op;
        wk__backward_rule rule = wk__binary_backward[op];
        bool na = n->in[0].node, nb = n->in[1].node;
        if (rule == BW_MUL) {
            wk__node_save(n, nb ? a : NULL);
            wk__node_save(n, na ? b : NULL);
        } else if (rule == BW_DIV) {
            wk__node_save(n, nb ? a : NULL);
            wk__node_save(n, b);
        } else if (rule != BW_ADD && rule != BW_SUB) {
            wk__node_save(n, a);
            wk__node_save(n, b);
        }
    }
    return wk__node_attach(n, r);
}

static wk_status affine_backward(wk__bw_ctx *c) {
    return wk__bw_set(c, 0, wk_affine(c->g, c->n->args.affine.mul, 0.0));
}

wk_tensor *wk__ag_affine(wk_tensor *r, const wk_tensor *x, double mul) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_AFFINE, "wk_affine", affine_backward, 1, &x);
    if (n) n->args.affine.mul = mul;
    return wk__node_attach(n, r);
}

/* where(cond, a, b): the gradient goes to the side each element came from. */
static wk_status where_backward(wk__bw_ctx *c) {
    wk_tensor *cond = wk__bw_saved(c, 0);
    if (!cond) return wk_last_status();
    wk_tensor *z = wk_zeros_like(c->g);
    wk_status st = WK_OK;
    if (wk__bw_need(c, 1)) st = wk__bw_set_sum(c, 1, wk_where(cond, c->g, z));
    if (st == WK_OK && wk__bw_need(c, 2)) st = wk__bw_set_sum(c, 2, wk_where(cond, z, c->g));
    return st;
}

wk_tensor *wk__ag_where(wk_tensor *r, const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b) {
    if (!r) return NULL;
    const wk_tensor *in[3] = {NULL, a, b}; /* the condition is an integer: no edge */
    wk__node *n = wk__node_new(WK__OP_WHERE, "wk_where", where_backward, 3, in);
    wk__node_save(n, cond);
    return wk__node_attach(n, r);
}

/* ---- powf, elu, clamp (the ops with a scalar parameter) ---- */

/* d/dx x^e = e x^(e-1); e == 0 gives 0 everywhere (x^-1 would be inf at 0),
 * as PyTorch masks it. */
static wk_status powf_backward(wk__bw_ctx *c) {
    double e = c->n->args.power.e;
    if (e == 0.0) return wk__bw_set(c, 0, zeros_of_edge(&c->n->in[0]));
    if (e == 1.0) return wk__bw_set(c, 0, c->g);
    wk_tensor *x = wk__bw_saved(c, 0);
    if (!x) return wk_last_status();
    return wk__bw_set(c, 0, wk_mul(c->g, wk_affine(wk_powf(x, e - 1.0), e, 0.0)));
}

wk_tensor *wk__ag_powf(wk_tensor *r, const wk_tensor *x, double e) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_POWF, "wk_powf", powf_backward, 1, &x);
    if (n) {
        n->args.power.e = e;
        if (e != 0.0 && e != 1.0) wk__node_save(n, x);
        else wk__node_save(n, NULL);
    }
    return wk__node_attach(n, r);
}

/* elu'(x) = 1 for x > 0, alpha exp(x) for x <= 0 (PyTorch's side of the
 * kink). exp reads min(x, 0): the branch where() drops must stay finite, or
 * its zero weight times inf would be NaN under create_graph. */
static wk_status elu_backward(wk__bw_ctx *c) {
    wk_tensor *x = wk__bw_saved(c, 0);
    if (!x) return wk_last_status();
    double alpha = c->n->args.elu.alpha;
    wk_tensor *neg = wk_affine(wk_exp(wk_clamp(x, -INFINITY, 0.0)), alpha, 0.0);
    wk_tensor *d = wk_where(wk_cmp_scalar(x, 0.0, WK_GT), c->g, wk_mul(c->g, neg));
    return wk__bw_set(c, 0, d);
}

wk_tensor *wk__ag_elu(wk_tensor *r, const wk_tensor *x, double alpha) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_ELU, "wk_elu", elu_backward, 1, &x);
    if (n) n->args.elu.alpha = alpha;
    wk__node_save(n, x);
    return wk__node_attach(n, r);
}

/* clamp passes the gradient where lo <= x <= hi (both bounds included, as
 * PyTorch: a value sitting on a bound still moves the output); NaN gets 0. */
static wk_status clamp_backward(wk__bw_ctx *c) {
    wk_tensor *x = wk__bw_saved(c, 0);
    if (!x) return wk_last_status();
    wk_tensor *in = wk_mul(mask_scalar(x, c->n->args.clamp.lo, WK_GE), mask_scalar(x, c->n->args.clamp.hi, WK_LE));
    return wk__bw_set(c, 0, wk_mul(c->g, in));
}

wk_tensor *wk__ag_clamp(wk_tensor *r, const wk_tensor *x, double lo, double hi) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_CLAMP, "wk_clamp", clamp_backward, 1, &x);
    if (n) {
        n->args.clamp.lo = lo;
        n->args.clamp.hi = hi;
    }
    wk__node_save(n, x);
    return wk__node_attach(n, r);
}
