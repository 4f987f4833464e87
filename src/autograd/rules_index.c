/* Backward rules of the indexing ops. The pairs are each other's adjoints:
 * index_select <-> index_add and gather <-> scatter_add, so a gradient
 * picked by ids is added back at ids (repeated ids add up) and one added at
 * ids is picked back. scatter (set) follows PyTorch: the destination's
 * gradient is g with the scattered positions zeroed, src's is g gathered at
 * ids. The ids (integers, never differentiated) are the one saved value.
 * embedding records through index_select, flip through index_select,
 * masked_fill through where. Dims are kept as given (the public ops the
 * rules call take negative dims too). */
#include "autograd/record.h"

static wk_tensor *zeros_of_edge(const wk__edge *e) { return wk_zeros(e->shape, e->rank, e->dtype, e->dev); }

/* x (ids' shape) padded with zeros at the end of each dim to edge e's shape:
 * the ops allow src larger than ids, and src's elements past ids get none. */
static wk_tensor *pad_to(const wk_tensor *x, const wk__edge *e) {
    const wk_tensor *cur = x;
    for (int d = 0; d < e->rank && cur; d++)
        if (cur->layout.shape[d] < e->shape[d]) cur = wk_pad_with_zeros(cur, d, 0, e->shape[d] - cur->layout.shape[d]);
    return (wk_tensor *)cur;
}

/* ------------------------------------------------------ index_select */

static wk_status index_select_backward(wk__bw_ctx *c) {
    wk_tensor *ids = wk__bw_saved(c, 0);
    if (!ids) return wk_last_status();
    return wk__bw_set(c, 0, wk_index_add(zeros_of_edge(&c->n->in[0]), ids, c->g, c->n->args.index.dim));
}

wk_tensor *wk__ag_index_select(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, int dim) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_INDEX_SELECT, "wk_index_select", index_select_backward, 1, &t);
    if (n) n->args.index.dim = dim;
    wk__node_save(n, ids);
    return wk__node_attach(n, r);
}

/* ------------------------------------------------------------ gather */

static wk_status gather_backward(wk__bw_ctx *c) {
    wk_tensor *ids = wk__bw_saved(c, 0);
    if (!ids) return wk_last_status();
    return wk__bw_set(c, 0, wk_scatter_add(zeros_of_edge(&c->n->in[0]), ids, c->g, c->n->args.index.dim));
}

wk_tensor *wk__ag_gather(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, int dim) {
    if (!r) return NULL;
    wk__node *n = wk__node_new(WK__OP_GATHER, "wk_gather", gather_backward, 1, &t);
    if (n) n->args.index.dim = dim;
    wk__node_save(n, ids);
    return wk__node_attach(n, r);
}

/* --------------------------------------------------------- index_add */

static wk_status index_add_backward(wk__bw_ctx *c) {
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) st = wk__bw_set(c, 0, c->g);
    if (st == WK_OK && wk__bw_need(c, 1)) {
        wk_tensor *ids = wk__bw_saved(c, 0);
        st = ids ? wk__bw_set(c, 1, wk_index_select(c->g, ids, c->n->args.index.dim)) : wk_last_status();
    }
    return st;
}

wk_tensor *wk__ag_index_add(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    if (!r) return NULL;
    const wk_tensor *in[2] = {t, src};
    wk__node *n = wk__node_new(WK__OP_INDEX_ADD, "wk_index_add", index_add_backward, 2, in);
    if (n) n->args.index.dim = dim;
    wk__node_save(n, n && n->in[1].node ? ids : NULL); /* only src's gradient reads ids */
    return wk__node_attach(n, r);
}

/* ------------------------------------------------ scatter, scatter_add */

static wk_status scatter_backward(wk__bw_ctx *c) {
    const wk__node *n = c->n;
    int dim = n->args.index.dim;
    bool add = n->args.index.add;
    wk_tensor *ids = NULL;
    if (((!add && wk__bw_need(c, 0)) || wk__bw_need(c, 1)) && !(ids = wk__bw_saved(c, 0))) return wk_last_status();
    wk_status st = WK_OK;
    if (wk__bw_need(c, 0)) {
        if (add) st = wk__bw_set(c, 0, c->g);
        else {
            const wk_layout *li = &ids->layout;
            wk_tensor *z = wk_zeros(li->shape, li->rank, c->g->dtype, c->g->storage->dev);
            st = wk__bw_set(c, 0, wk_scatter(c->g, ids, z, dim));
        }
    }
    if (st == WK_OK && wk__bw_need(c, 1)) st = wk__bw_set(c, 1, pad_to(wk_gather(c->g, ids, dim), &n->in[1]));
    return st;
}

static wk__node *scatter_node(const char *name, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src,
                              int dim, bool add) {
    const wk_tensor *in[2] = {t, src};
    wk__node *n = wk__node_new(WK__OP_SCATTER, name, scatter_backward, 2, in);
    if (!n) return NULL;
    n->args.index = (wk__args_index){.dim = dim, .add = add};
    /* ids for src's gradient and scatter's destination's; scatter_add's
     * destination gradient is g itself */
    wk__node_save(n, (!add && n->in[0].node) || n->in[1].node ? ids : NULL);
    return n;
}

wk_tensor *wk__ag_scatter(wk_tensor *r, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                          bool add) {
    if (!r) return NULL;
    return wk__node_attach(scatter_node(add ? "wk_scatter_add" : "wk_scatter", t, ids, src, dim, add), r);
}

wk__node *wk__ag_scatter_node(const wk_tensor *dst, const wk_tensor *ids, const wk_tensor *src, int dim, bool add) {
    return scatter_node(add ? "wk_scatter_add_" : "wk_scatter_", dst, ids, src, dim, add);
}
