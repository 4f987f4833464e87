/* The backward pass and gradient stores.
 *
 * A pass collects the nodes reachable from the root (an explicit stack: a
 * graph a million ops deep is a loop, not a recursion), counts for each how
 * many edges reach it, and then runs each node's rule once every node that
 * feeds it a gradient has run, so each rule sees the full sum of its
 * output's gradient exactly once. Gradients are summed per node as they
 * arrive; a node's is freed as soon as its rule has run, so the pass holds
 * only the gradients of the frontier, not of the whole graph. */
#include "autograd/node.h"
#include <stdlib.h>
#include <string.h>

/* ---- gradient stores: open addressing keyed by node ---- */

typedef struct gs_entry {
    wk__node *key;      /* a reference the store owns */
    wk_tensor *grad;    /* a reference the store owns */
} gs_entry;

struct wk_grad_store {
    gs_entry *e;
    int64_t cap, count;
};

wk_grad_store *wk_grad_store_new(void) {
    wk_grad_store *gs = calloc(1, sizeof *gs);
    if (!gs) wk__err(WK_ERR_OOM, "wk_grad_store_new", "cannot allocate a gradient store");
    return gs;
}

void wk_grad_store_zero(wk_grad_store *gs) {
    if (!gs) return;
    for (int64_t i = 0; i < gs->cap; i++)
        if (gs->e[i].key) {
            wk_tensor_free(gs->e[i].grad);
            wk__node_release(gs->e[i].key);
            gs->e[i].key = NULL;
            gs->e[i].grad = NULL;
        }
    gs->count = 0;
}

void wk_grad_store_free(wk_grad_store *gs) {
    if (!gs) return;
    wk_grad_store_zero(gs);
    free(gs->e);
    free(gs);
}

int64_t wk_grad_store_count(const wk_grad_store *gs) { return gs ? gs->count : 0; }

static uint64_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static gs_entry *gs_find(const wk_grad_store *gs, const wk__node *key) {
    if (!gs || !gs->cap || !key) return NULL;
    for (uint64_t i = hash_ptr(key) & (uint64_t)(gs->cap - 1);; i = (i + 1) & (uint64_t)(gs->cap - 1)) {
        gs_entry *e = &gs->e[i];
        if (e->key == key) return e;
        if (!e->key) return NULL;
    }
}

/* The entry for key, inserted (grad NULL) when absent; NULL on OOM. */
static gs_entry *gs_slot(wk_grad_store *gs, wk__node *key) {
    gs_entry *e = gs_find(gs, key);
    if (e) return e;
    if ((gs->count + 1) * 2 > gs->cap) {
        int64_t nc = gs->cap ? gs->cap * 2 : 64;
        gs_entry *ne = calloc((size_t)nc, sizeof *ne);
        if (!ne) {
            wk__err(WK_ERR_OOM, "wk_backward", "cannot grow the gradient store");
            return NULL;
        }
        for (int64_t i = 0; i < gs->cap; i++) {
            if (!gs->e[i].key) continue;
            uint64_t j = hash_ptr(gs->e[i].key) & (uint64_t)(nc - 1);
            while (ne[j].key) j = (j + 1) & (uint64_t)(nc - 1);
            ne[j] = gs->e[i];
        }
        free(gs->e);
        gs->e = ne;
        gs->cap = nc;
    }
    uint64_t j = hash_ptr(key) & (uint64_t)(gs->cap - 1);
    while (gs->e[j].key) j = (j + 1) & (uint64_t)(gs->cap - 1);
    wk__node_retain(key);
    gs->e[j].key = key;
    gs->e[j].grad = NULL;
    gs->count++;
    return &gs->e[j];
}

/* Add g into the store's gradient for key (takes nothing; keeps its own). */
static wk_status gs_add(wk_grad_store *gs, wk__node *key, wk_tensor *g) {
    gs_entry *e = gs_slot(gs, key);
    if (!e) return wk_last_status();
    if (!e->grad) {
        e->grad = wk_tensor_retain(g);
        return WK_OK;
    }
    wk_tensor *s = wk_add(e->grad, g);
    if (!s) return wk_last_status();
    wk_keep(s);
    wk_tensor_free(e->grad);
    e->grad = s;
    return WK_OK;
}

/* Drop an entry (e may be NULL) and its references. Backward-shift deletion
 * keeps the table tombstone-free: every later entry of the probe run that
 * could have been placed in the hole moves into it, so lookups still stop
 * at the first empty slot and a store whose keys come and go (a loop making
 * fresh leaves and dropping their gradients) stays as small as what it
 * holds. */
static void gs_remove(wk_grad_store *gs, gs_entry *e) {
    if (!e) return;
    wk__node *key = e->key;
    wk_tensor *grad = e->grad;
    uint64_t mask = (uint64_t)(gs->cap - 1), hole = (uint64_t)(e - gs->e);
    e->key = NULL;
    e->grad = NULL;
    gs->count--;
    for (uint64_t j = (hole + 1) & mask; gs->e[j].key; j = (j + 1) & mask) {
        uint64_t home = hash_ptr(gs->e[j].key) & mask;
        /* entry j stays when its home lies cyclically in (hole, j] */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays) continue;
        gs->e[hole] = gs->e[j];
        gs->e[j].key = NULL;
        gs->e[j].grad = NULL;
        hole = j;
    }
    /* freed last: the table is consistent whatever these releases run */
    wk_tensor_free(grad);
    wk__node_release(key);
}

int64_t wk_grad_store_prune(wk_grad_store *gs) {
    if (!gs) return 0;
    int64_t n = 0;
    /* A node only the store holds has no tensor and no graph left: nobody can
     * read its gradient or add to it (reaching it needs one of them), so the
     * test cannot race with a new reference. Removal may move a later entry
     * of the probe run into slot i (or a wrapped, already kept one): look at
     * slot i again. Entries not yet visited never move below i. */
    for (int64_t i = 0; i < gs->cap;) {
        gs_entry *e = &gs->e[i];
        if (e->key && atomic_load_explicit(&e->key->refs, memory_order_acquire) == 1) {
            gs_remove(gs, e);
            n++;
        } else {
            i++;
        }
    }
    return n;
}

wk_tensor *wk_grad(const wk_grad_store *gs, const wk_tensor *t) {
    if (!gs || !t || !t->node) return NULL;
    gs_entry *e = gs_find(gs, t->node);
    return e ? e->grad : NULL;
}

wk_status wk_grad_set(wk_grad_store *gs, const wk_tensor *t, wk_tensor *g) {
    const char *op = "wk_grad_set";
    if (!gs) return wk__err(WK_ERR_ARG, op, "NULL store");
    if (!wk__check_in(op, t)) return wk_last_status();
    if (!t->node) return wk__err(WK_ERR_ARG, op, "t is not tracked");
    if (!g) {
        gs_remove(gs, gs_find(gs, t->node));
        return WK_OK;
    }
    if (!wk__check_same(op, t, g)) return wk_last_status();
    bool ok = g->layout.rank == t->layout.rank;
    for (int d = 0; ok && d < t->layout.rank; d++) ok = g->layout.shape[d] == t->layout.shape[d];
    if (!ok) return wk__err(WK_ERR_SHAPE, op, "the gradient's shape differs from the tensor's");
    gs_entry *e = gs_slot(gs, t->node);
    if (!e) return wk_last_status();
    wk_tensor *mine = wk_keep(wk__alias(g)); /* g may be in the caller's scope */
    if (!mine) return wk_last_status();
    wk_tensor_free(e->grad);
    e->grad = mine;
    return WK_OK;
}

/* ---- the pass ---- */

typedef struct pass_node {
    wk__node *n;
    int64_t deps;       /* edges from nodes of this pass not yet run */
    wk_tensor *acc;     /* the summed gradient so far (a reference the pass owns) */
} pass_node;

/* The pass's own node -> slot map (open addressing). Nothing per pass is
 * written into the nodes: graphs share nodes (every step's graph reaches
 * the same parameter leaves), and two threads may run backward passes over
 * graphs that share them at the same time. */
typedef struct pass {
    pass_node *v;
    int64_t len, cap;
    wk__node **stack;
    int64_t sp, scap;
    int64_t *map;       /* slot + 1 per bucket, 0 empty */
    int64_t mcap;
} pass;

static int64_t slot_of(const pass *p, const wk__node *n) {
    for (uint64_t i = hash_ptr(n) & (uint64_t)(p->mcap - 1);; i = (i + 1) & (uint64_t)(p->mcap - 1)) {
        int64_t k = p->map[i];
        if (!k) return -1;
        if (p->v[k - 1].n == n) return k - 1;
    }
}

static bool map_grow(pass *p) {
    int64_t nc = p->mcap ? p->mcap * 2 : 256;
    int64_t *m = calloc((size_t)nc, sizeof *m);
    if (!m) return false;
    for (int64_t s = 0; s < p->len; s++) {
        uint64_t i = hash_ptr(p->v[s].n) & (uint64_t)(nc - 1);
        while (m[i]) i = (i + 1) & (uint64_t)(nc - 1);
        m[i] = s + 1;
    }
    free(p->map);
    p->map = m;
    p->mcap = nc;
    return true;
}

static bool push_stack(pass *p, wk__node *n) {
    if (p->sp == p->scap) {
        int64_t nc = p->scap ? p->scap * 2 : 64;
        wk__node **s = realloc(p->stack, (size_t)nc * sizeof *s);
        if (!s) return false;
        p->stack = s;
        p->scap = nc;
    }
    p->stack[p->sp++] = n;
    return true;
}

static bool add_node(pass *p, wk__node *n) {
    if (p->len == p->cap) {
        int64_t nc = p->cap ? p->cap * 2 : 64;
        pass_node *v = realloc(p->v, (size_t)nc * sizeof *v);
        if (!v) return false;
        p->v = v;
        p->cap = nc;
    }
    if ((p->len + 1) * 2 > p->mcap && !map_grow(p)) return false;
    p->v[p->len] = (pass_node){n, 0, NULL};
    uint64_t i = hash_ptr(n) & (uint64_t)(p->mcap - 1);
    while (p->map[i]) i = (i + 1) & (uint64_t)(p->mcap - 1);
    p->map[i] = ++p->len;
    return true;
}

/* Add g (a reference handed over) into node slot s's gradient. */
static wk_status accumulate(pass *p, int64_t s, wk_tensor *g) {
    pass_node *pn = &p->v[s];
    if (!pn->acc) {
        pn->acc = g;
        return WK_OK;
    }
    wk_tensor *sum = wk_add(pn->acc, g);
    wk_tensor_free(g);
    if (!sum) return wk_last_status();
    wk_keep(sum);
    wk_tensor_free(pn->acc);
    pn->acc = sum;
    return WK_OK;
}

static bool is_captured(wk__node *n, wk__node *const *cap, int ncap) {
    for (int i = 0; i < ncap; i++)
        if (cap[i] == n) return true;
    return false;
}

/* cap / ncap: with only_cap, store exactly these nodes' gradients
 * (wk_grad_of); otherwise leaves, retained nodes (and all, with all_grads). */
static wk_status run_pass(const char *op, const wk_tensor *root, wk_grad_store *gs, const wk_backward_opts *o,
                          wk__node *const *cap, int ncap, bool only_cap) {
    if (!wk__check_in(op, root)) return wk_last_status();
    if (!root->node)
        return wk__err(WK_ERR_ARG, op, "the root is not tracked: no input of the ops that made it requires grad "
                                       "(wk_requires_grad), or they ran in a no-grad region");
    if (!gs) return wk__err(WK_ERR_ARG, op, "NULL gradient store");
    wk_backward_opts d = {0};
    if (o) d = *o;
    if (d.create_graph) d.keep_graph = true;

    wk_tensor *g0;
    if (d.grad_output) {
        const wk_tensor *go = d.grad_output;
        if (!wk__check_same(op, root, go)) return wk_last_status();
        bool ok = go->layout.rank == root->layout.rank;
        for (int i = 0; ok && i < go->layout.rank; i++) ok = go->layout.shape[i] == root->layout.shape[i];
        if (!ok) {
            char a[160], b[160];
            return wk__err(WK_ERR_SHAPE, op, "grad_output %s does not match the root %s",
                           wk__shape_str(go->layout.shape, go->layout.rank, a, sizeof a),
                           wk__shape_str(root->layout.shape, root->layout.rank, b, sizeof b));
        }
        g0 = wk_keep(wk__alias(go)); /* go may be in the caller's scope: an alias of our own */
        if (!g0) return wk_last_status();
    } else {
        if (wk_numel(root) != 1) {
            char a[160];
            return wk__err(WK_ERR_SHAPE, op, "the root %s has %lld elements: give grad_output (only a one-element "
                                             "root gets an implicit gradient of 1)",
                           wk__shape_str(root->layout.shape, root->layout.rank, a, sizeof a), (long long)wk_numel(root));
        }
        wk__ag_suspend();
        g0 = wk_ones_like(root);
        wk__ag_resume();
        if (!g0) return wk_last_status();
        wk_keep(g0);
    }

    bool suspended = !d.create_graph;
    if (suspended) wk__ag_suspend();
    pass p = {0};
    wk_status st = WK_OK;

    /* 1. collect the reachable nodes and count the edges into each */
    if (!add_node(&p, root->node) || !push_stack(&p, root->node)) goto oom;
    while (p.sp > 0) {
        wk__node *n = p.stack[--p.sp];
        for (int i = 0; i < n->nin; i++) {
            wk__node *c = n->in[i].node;
            if (!c) continue;
            int64_t k = slot_of(&p, c);
            if (k < 0) {
                if (!add_node(&p, c) || !push_stack(&p, c)) goto oom;
                k = p.len - 1;
            }
            p.v[k].deps++;
        }
    }

    /* 2. run the rules, each once all its gradient has arrived */
    p.v[0].acc = g0;
    g0 = NULL;
    p.sp = 0;
    push_stack(&p, root->node); /* capacity is there: the stack held it before */
    while (p.sp > 0 && st == WK_OK) {
        wk__node *n = p.stack[--p.sp];
        pass_node *pn = &p.v[slot_of(&p, n)];
        wk_tensor *g = pn->acc;
        pn->acc = NULL;
        if (g) {
            bool store = only_cap ? is_captured(n, cap, ncap)
                                  : (!n->backward || n->retain || d.all_grads || is_captured(n, cap, ncap));
            if (store) st = gs_add(gs, n, g);
            /* n's gradient is final here: every node that feeds it has run
             * (its deps reached zero before it was pushed). The hook sees
             * it stored, before n's own rule runs, so a reduction it starts
             * overlaps the rest of the pass. */
            if (store && st == WK_OK && d.on_grad_ready) st = d.on_grad_ready(d.on_grad_ready_ctx, gs, n);
            if (st == WK_OK && n->backward) {
                if (n->released) {
                    st = wk__err(WK_ERR_ARG, n->name,
                                 "backward through a graph whose saved values an earlier backward freed; run the "
                                 "first backward with keep_graph");
                } else {
                    wk_tensor **gin = calloc((size_t)(n->nin ? n->nin : 1), sizeof *gin);
                    if (!gin) st = wk__err(WK_ERR_OOM, op, "cannot allocate gradient slots");
                    else {
                        wk__bw_ctx c = {n, g, gin, d.create_graph};
                        st = wk__scope_open() ? n->backward(&c) : wk_last_status();
                        wk_scope_end();
                        for (int i = 0; i < n->nin; i++) {
                            wk__node *child = n->in[i].node;
                            if (st == WK_OK && gin[i] && child) st = accumulate(&p, slot_of(&p, child), gin[i]);
                            else wk_tensor_free(gin[i]);
                        }
                        free(gin);
                        if (st == WK_OK && !d.keep_graph) {
                            wk__node_release_saved(n);
                            n->released = true;
                        }
                    }
                }
            }
            wk_tensor_free(g);
        }
        for (int i = 0; i < n->nin; i++) {
            wk__node *c = n->in[i].node;
            if (c && --p.v[slot_of(&p, c)].deps == 0 && !push_stack(&p, c)) goto oom;
        }
    }
    goto done;
oom:
    st = wk__err(WK_ERR_OOM, op, "cannot grow the backward pass's node list");
done:
    for (int64_t i = 0; i < p.len; i++) wk_tensor_free(p.v[i].acc);
    free(p.map);
    wk_tensor_free(g0);
    free(p.v);
    free(p.stack);
    if (suspended) wk__ag_resume();
    return st;
}

wk_status wk_backward(const wk_tensor *root, wk_grad_store *gs, const wk_backward_opts *opts) {
    return run_pass("wk_backward", root, gs, opts, NULL, 0, false);
}

wk_status wk_grad_of(const wk_tensor *y, wk_tensor *const *xs, int n, const wk_backward_opts *opts, wk_tensor **out) {
    const char *op = "wk_grad_of";
    if (n < 0 || (n > 0 && (!xs || !out))) return wk__err(WK_ERR_ARG, op, "bad xs / out arrays");
    for (int i = 0; i < n; i++) out[i] = NULL;
    wk__node *stack_cap[16];
    wk__node **cap = n <= 16 ? stack_cap : malloc(sizeof *cap * (size_t)n);
    if (!cap) return wk__err(WK_ERR_OOM, op, "cannot allocate %d node slots", n);
    for (int i = 0; i < n; i++) {
        if (!wk__check_in(op, xs[i])) {
            if (cap != stack_cap) free(cap);
            return wk_last_status();
        }
        cap[i] = xs[i]->node;
    }
    wk_grad_store *gs = wk_grad_store_new();
    wk_status st = gs ? run_pass(op, y, gs, opts, cap, n, true) : wk_last_status();
    for (int i = 0; st == WK_OK && i < n; i++) {
        wk_tensor *g = wk_grad(gs, xs[i]);
        if (g) {
            out[i] = wk__alias(g); /* a new result, in the caller's scope like any */
            if (!out[i]) st = wk_last_status();
        } else {
            bool cg = opts && opts->create_graph;
            if (!cg) wk__ag_suspend();
            out[i] = wk_zeros_like(xs[i]);
            if (!cg) wk__ag_resume();
            if (!out[i]) st = wk_last_status();
        }
    }
    if (st != WK_OK)
        for (int i = 0; i < n; i++) {
            wk_tensor_free(out[i]);
            out[i] = NULL;
        }
    wk_grad_store_free(gs);
    if (cap != stack_cap) free(cap);
    return st;
}
