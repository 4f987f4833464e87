/* Graph nodes: lifetime, recording, saved values, grad mode, and the
 * tracking calls of include/wick/autograd.h. */
#include "autograd/node.h"
#include <stdlib.h>
#include <string.h>

_Thread_local int wk__tl_nograd;

/* What the tensor floor calls for a tracked tensor (tensor/tensor.h). */
static const wk__graph_ops k_graph_ops = {.release = wk__node_release, .check_inplace = wk__ag_check_inplace};

void wk_no_grad_begin(void) { wk__tl_nograd++; }
void wk_no_grad_end(void) {
    if (wk__tl_nograd > 0) wk__tl_nograd--;
}
bool wk_grad_enabled(void) { return wk__tl_nograd == 0; }

bool wk__ag_onn(wk_tensor *const *ts, int n) {
    if (wk__tl_nograd || !ts) return false;
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->node) return true;
    return false;
}

/* ---- lifetime ---- */

void wk__node_retain(wk__node *n) {
    if (n) atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
}

/* Nodes whose last reference went while another node was being freed: a
 * worklist instead of recursion, so freeing a graph a million ops deep is a
 * loop. Per thread (a graph is freed by the thread that drops it). */
static _Thread_local wk__node **tl_dead;
static _Thread_local int64_t tl_dead_len, tl_dead_cap;
static _Thread_local bool tl_draining;

static void node_free_now(wk__node *n) {
    if (n->on_free) n->on_free(n);
    wk__node_release_saved(n);
    for (int i = 0; i < n->nin; i++) wk__node_release(n->in[i].node);
    free(n);
}

void wk__node_release(wk__node *n) {
    if (!n || atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1) return;
    if (tl_dead_len == tl_dead_cap) {
        int64_t nc = tl_dead_cap ? tl_dead_cap * 2 : 64;
        wk__node **g = realloc(tl_dead, (size_t)nc * sizeof *g);
        if (!g) { /* no room to defer: free it here (recursion, bounded by what memory allows) */
            node_free_now(n);
            return;
        }
        tl_dead = g;
        tl_dead_cap = nc;
    }
    tl_dead[tl_dead_len++] = n;
    if (tl_draining) return;
    tl_draining = true;
    while (tl_dead_len > 0) node_free_now(tl_dead[--tl_dead_len]);
    tl_draining = false;
    free(tl_dead);
    tl_dead = NULL;
    tl_dead_cap = 0;
}

void wk__node_release_saved(wk__node *n) {
    for (int i = 0; i < n->nsaved; i++) {
        wk_tensor_free(n->saved[i].t);
        n->saved[i].t = NULL;
    }
    n->nsaved = 0;
}

/* ---- recording ---- */

static wk__node *node_alloc(const char *name, wk__bw_fn fn, int nin) {
    /* every node is made here, before any tensor can hold it: from now on
     * the tensor floor may call the table (tensor/tensor.h) */
    if (!atomic_load_explicit(&wk__graph, memory_order_relaxed))
        atomic_store_explicit(&wk__graph, &k_graph_ops, memory_order_release);
    wk__node *n = calloc(1, sizeof *n + (size_t)nin * sizeof(wk__edge));
    if (!n) {
        wk__err(WK_ERR_OOM, name, "cannot allocate an autograd node");
        return NULL;
    }
    atomic_init(&n->refs, 1);
    n->name = name;
    n->backward = fn;
    n->nin = nin;
    return n;
}

wk__node *wk__node_new(wk__op_id op, const char *name, wk__bw_fn fn, int nin, const wk_tensor *const *in) {
    wk__node *n = node_alloc(name, fn, nin);
    if (!n) return NULL;
    n->op = op;
    for (int i = 0; i < nin; i++) {
        const wk_tensor *t = in[i];
        wk__edge *e = &n->in[i];
        if (!t) continue;
        e->rank = t->layout.rank;
        memcpy(e->shape, t->layout.shape, sizeof(int64_t) * (size_t)t->layout.rank);
        e->dtype = t->dtype;
        e->dev = t->storage->dev;
        if (t->node && wk_dtype_is_float(t->dtype)) {
            e->node = t->node;
            wk__node_retain(t->node);
        }
    }
    return n;
}

wk_tensor *wk__alias(const wk_tensor *t) {
    if (!t) return NULL;
    wk_tensor *v = wk__tensor_view(t, &t->layout);
    if (v && t->node) {
        wk__node_retain(t->node);
        v->node = t->node;
    }
    return v;
}

/* A reference to t's values outside every scope (the node owns it). Not
 * wk_tensor_retain(t): t may belong to the caller's scope, and taking it
 * out (wk_keep) would leave the scope's reference to nobody. */
static wk_tensor *own(const wk_tensor *t) { return wk_keep(wk__alias(t)); }

wk__node *wk__node_save(wk__node *n, const wk_tensor *t) {
    if (!n) return n;
    if (n->nsaved == WK__MAX_SAVED) return n; /* a rule saving more is a bug the rule's test shows */
    wk__saved *s = &n->saved[n->nsaved++];
    s->is_output = false;
    if (!t) { /* an empty slot: keeps the indices of the values after it */
        s->t = NULL;
        return n;
    }
    /* an alias with t's node, which create_graph needs; no cycle: t is an
     * input, older than n */
    s->t = own(t);
    if (!s->t) return n; /* OOM: wk__bw_saved reports the missing value */
    s->version = atomic_load_explicit(&t->storage->version, memory_order_relaxed);
    return n;
}

wk__node *wk__node_save_out(wk__node *n, const wk_tensor *out) {
    if (!n || !out) return n;
    if (n->nsaved == WK__MAX_SAVED) return n;
    /* an alias without a node: the output's node is n, and n holding its own
     * output would be a cycle that keeps the graph alive forever */
    wk_tensor *alias = wk__tensor_view(out, &out->layout);
    if (!alias) return n; /* OOM: wk__bw_saved reports the missing value */
    wk_keep(alias);
    wk__saved *s = &n->saved[n->nsaved++];
    s->t = alias;
    s->version = atomic_load_explicit(&out->storage->version, memory_order_relaxed);
    s->is_output = true;
    return n;
}

wk_tensor *wk__node_attach(wk__node *n, wk_tensor *out) {
    if (!out) {
        wk__node_release(n);
        return NULL;
    }
    if (!n) {
        wk_tensor_free(out);
        return NULL;
    }
    if (!wk_dtype_is_float(out->dtype)) { /* integer results are never tracked */
        wk__node_release(n);
        return out;
    }
    n->rank = out->layout.rank;
    memcpy(n->shape, out->layout.shape, sizeof(int64_t) * (size_t)out->layout.rank);
    n->dtype = out->dtype;
    n->dev = out->storage->dev;
    if (out->node) wk__node_release(out->node);
    out->node = n;
    return out;
}

bool wk__ag_check_inplace(const char *op, const wk_tensor *t) {
    if (wk__tl_nograd) return true;
    wk__err(WK_ERR_ARG, op,
            "in-place write into a tensor autograd tracks (%s) while grad mode is on: its recorded graph would no "
            "longer describe it; use the out-of-place form, wk_detach, or a wk_no_grad_begin region",
            t->node->backward ? t->node->name : "a leaf that requires grad");
    return false;
}

/* ---- inside rules ---- */

wk_tensor *wk__bw_saved(wk__bw_ctx *c, int i) {
    wk__node *n = c->n;
    if (i >= n->nsaved || !n->saved[i].t) {
        wk__err(WK_ERR_INTERNAL, n->name, "backward: a value this rule reads was not saved (a wick bug)");
        return NULL;
    }
    wk__saved *s = &n->saved[i];
    if (atomic_load_explicit(&s->t->storage->version, memory_order_relaxed) != s->version) {
        wk__err(WK_ERR_ARG, n->name,
                "backward: a tensor this op saved for its gradient was modified in place since (storage version "
                "%u, saved at %u); the gradient would be wrong. Write into a copy instead",
                atomic_load_explicit(&s->t->storage->version, memory_order_relaxed), s->version);
        return NULL;
    }
    if (s->is_output && c->create_graph) {
        /* higher order: the output again, with its node, so gradients that
         * read it are differentiated through this op */
        wk_tensor *v = wk__tensor_view(s->t, &s->t->layout);
        if (!v) return NULL;
        wk__node_retain(n);
        v->node = n;
        return v; /* scope-owned: the rule's scope frees it */
    }
    return s->t;
}

wk_status wk__bw_set(wk__bw_ctx *c, int i, const wk_tensor *t) {
    wk__node *n = c->n;
    if (!t) return wk_last_status() != WK_OK ? wk_last_status() : wk__err(WK_ERR_INTERNAL, n->name, "backward: no gradient");
    const wk__edge *e = &n->in[i];
    bool ok = t->layout.rank == e->rank && t->dtype == e->dtype && t->storage->dev == e->dev;
    for (int d = 0; ok && d < e->rank; d++) ok = t->layout.shape[d] == e->shape[d];
    if (!ok) {
        char a[160], b[160];
        return wk__err(WK_ERR_INTERNAL, n->name, "backward: input %d's gradient is %s %s, the input is %s %s (a wick bug)",
                       i, wk_dtype_name(t->dtype), wk__shape_str(t->layout.shape, t->layout.rank, a, sizeof a),
                       wk_dtype_name(e->dtype), wk__shape_str(e->shape, e->rank, b, sizeof b));
    }
    wk_tensor *mine = wk_keep(wk__alias(t)); /* ours, whatever scope t is in */
    if (!mine) return wk_last_status();
    if (c->gin[i]) { /* a rule that sets one input twice (a + a): the sum */
        wk_tensor *s = wk_add(c->gin[i], mine);
        wk_tensor_free(mine);
        if (!s) return wk_last_status();
        wk_keep(s);
        mine = s;
        wk_tensor_free(c->gin[i]);
    }
    c->gin[i] = mine;
    return WK_OK;
}

wk_tensor *wk__sum_to(const wk_tensor *g, const int64_t *shape, int rank) {
    if (!g) return NULL;
    int gr = g->layout.rank, lead = gr - rank;
    if (lead < 0) {
        wk__err(WK_ERR_INTERNAL, "autograd", "sum_to: gradient of rank %d for an input of rank %d", gr, rank);
        return NULL;
    }
    int dims[WK_MAX_RANK], nd = 0;
    for (int d = 0; d < gr; d++) {
        int k = d - lead;
        if (k < 0 || (shape[k] == 1 && g->layout.shape[d] != 1)) dims[nd++] = d;
    }
    if (nd == 0) return wk__alias(g);
    wk_tensor *s = wk_sum(g, dims, nd, true);
    if (!s) return NULL;
    wk_tensor *r = wk_reshape(s, shape, rank);
    wk_tensor_free(s);
    return r;
}

wk_status wk__bw_set_sum(wk__bw_ctx *c, int i, const wk_tensor *t) {
    if (!t) return wk__bw_set(c, i, NULL);
    const wk__edge *e = &c->n->in[i];
    bool same = t->layout.rank == e->rank;
    for (int d = 0; same && d < e->rank; d++) same = t->layout.shape[d] == e->shape[d];
    if (same) return wk__bw_set(c, i, t);
    wk_tensor *s = wk__sum_to(t, e->shape, e->rank);
    if (!s) return wk_last_status();
    wk_status st = wk__bw_set(c, i, s);
    wk_tensor_free(s);
    return st;
}

/* ---- the public tracking calls ---- */

wk_status wk_requires_grad(wk_tensor *t, bool on) {
    const char *op = "wk_requires_grad";
    if (!wk__check_in(op, t)) return wk_last_status();
    if (!on) {
        if (t->node && t->node->backward)
            return wk__err(WK_ERR_ARG, op, "t is the result of %s, not a leaf; wk_detach it to stop tracking",
                           t->node->name);
        wk__node_release(t->node);
        t->node = NULL;
        return WK_OK;
    }
    if (t->node) {
        if (t->node->backward)
            return wk__err(WK_ERR_ARG, op, "t is the result of %s, not a leaf (it is tracked already; "
                                           "wk_retain_grad keeps its gradient)", t->node->name);
        return WK_OK;
    }
    if (!wk_dtype_is_float(t->dtype))
        return wk__err(WK_ERR_DTYPE, op, "only float tensors can require gradients, got %s", wk_dtype_name(t->dtype));
    wk__node *n = node_alloc("leaf", NULL, 0);
    if (!n) return wk_last_status();
    n->rank = t->layout.rank;
    memcpy(n->shape, t->layout.shape, sizeof(int64_t) * (size_t)t->layout.rank);
    n->dtype = t->dtype;
    n->dev = t->storage->dev;
    t->node = n;
    return WK_OK;
}

bool wk_is_tracked(const wk_tensor *t) { return t && t->node; }
bool wk_is_leaf(const wk_tensor *t) { return t && t->node && !t->node->backward; }

/* The node is what the store keys a gradient by and what the pass reports
 * to on_grad_ready: the same pointer for every alias of t, alive as long as
 * t (or its graph) is. */
const void *wk_grad_key(const wk_tensor *t) { return t ? (const void *)t->node : NULL; }

const char *wk_grad_fn_name(const wk_tensor *t) {
    if (!t || !t->node) return NULL;
    return t->node->backward ? t->node->name : "leaf";
}

wk_tensor *wk_detach(const wk_tensor *t) {
    if (!wk__check_in_blocks("wk_detach", t)) return NULL;
    return wk__tensor_view(t, &t->layout);
}

wk_status wk_retain_grad(wk_tensor *t) {
    if (!wk__check_in("wk_retain_grad", t)) return wk_last_status();
    if (!t->node) return wk__err(WK_ERR_ARG, "wk_retain_grad", "t is not tracked (no recorded op made it)");
    t->node->retain = true;
    return WK_OK;
}
