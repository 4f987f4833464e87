/* The public indexing ops. index_select, gather, scatter (out of place and
 * in place), index_add, slice_scatter, repeat and pad_with_zeros are the
 * untracked ops of src/ops/indexing.c with one node each when an input is
 * tracked (src/autograd/rules_index.c, rules_join.c). embedding, flip,
 * roll, pad_with_same and masked_fill are composites that record through
 * their parts (reshape and index_select; copy and index_select; narrow and
 * cat; narrow, broadcast and cat; where). */
#include "autograd/record.h"
#include "ops/prim_indexing.h"
#include <inttypes.h>
#include <stdlib.h>

/* ---------------------------------------------------------- index_select */

wk_tensor *wk_index_select(const wk_tensor *t, const wk_tensor *ids, int dim) {
    if (!wk__ag_on1(t)) return wk__prim_index_select(t, ids, dim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_index_select(t, ids, dim);
    wk__ag_resume();
    return wk__ag_index_select(r, t, ids, dim);
}

/* Records through index_select (the reshapes are of the integer ids and of
 * the rows, both recorded or untracked). */
wk_tensor *wk_embedding(const wk_tensor *ids, const wk_tensor *table) {
    const char *op = "wk_embedding";
    if (!wk__prim_check_ids(op, table, ids, true)) return NULL; /* quantized tables: rows stay blocks */
    if (table->layout.rank != 2) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "table must be 2-D (vocab, hidden), got %s",
                wk__shape_str(table->layout.shape, table->layout.rank, b, sizeof b));
        return NULL;
    }
    if (ids->layout.rank + 1 > WK_MAX_RANK) {
        wk__err(WK_ERR_SHAPE, op, "ids rank %d + 1 exceeds the maximum rank %d", ids->layout.rank, WK_MAX_RANK);
        return NULL;
    }
    int64_t flat = -1;
    wk_tensor *f = wk_reshape(ids, &flat, 1);
    if (!f) return NULL;
    wk_tensor *rows = wk_index_select(table, f, 0);
    wk_tensor_free(f);
    if (!rows) return NULL;
    int64_t shape[WK_MAX_RANK];
    for (int i = 0; i < ids->layout.rank; i++) shape[i] = ids->layout.shape[i];
    shape[ids->layout.rank] = table->layout.shape[1];
    wk_tensor *r = wk_reshape(rows, shape, ids->layout.rank + 1);
    wk_tensor_free(rows);
    return r;
}

/* ------------------------------------------------------------------ gather */

wk_tensor *wk_gather(const wk_tensor *t, const wk_tensor *ids, int dim) {
    if (!wk__ag_on1(t)) return wk__prim_gather(t, ids, dim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_gather(t, ids, dim);
    wk__ag_resume();
    return wk__ag_gather(r, t, ids, dim);
}

/* ----------------------------------------------------------------- scatter */

wk_tensor *wk_scatter(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    if (!wk__ag_on2(t, src)) return wk__prim_scatter(t, ids, src, dim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_scatter(t, ids, src, dim);
    wk__ag_resume();
    return wk__ag_scatter(r, t, ids, src, dim, false);
}
wk_tensor *wk_scatter_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    if (!wk__ag_on2(t, src)) return wk__prim_scatter_add(t, ids, src, dim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_scatter_add(t, ids, src, dim);
    wk__ag_resume();
    return wk__ag_scatter(r, t, ids, src, dim, true);
}
/* The in-place form: the write with recording suspended, then t is
 * rebased onto a scatter node (edge 0: t's old node, edge 1: src). The ids
 * the backward reads must not be in the storage this write changes. */
static wk_status scatter_rebase(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim, bool add) {
    wk_tensor *ids_c = ids->storage == t->storage ? wk_copy(ids) : NULL;
    if (ids->storage == t->storage && !ids_c) return wk_last_status();
    if (ids_c) ids = ids_c;
    wk__node *n = wk__ag_scatter_node(t, ids, src, dim, add);
    wk_status st = n ? WK_OK : wk_last_status();
    if (st == WK_OK) {
        wk__ag_suspend();
        st = add ? wk__prim_scatter_add_(t, ids, src, dim) : wk__prim_scatter_(t, ids, src, dim);
        wk__ag_resume();
        st = wk__ag_rebase(t, n, st);
    }
    wk_tensor_free(ids_c);
    return st;
}

wk_status wk_scatter_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_scatter_";
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return wk_last_status();
    if (wk__ag_inplace_on(t, src)) return scatter_rebase(t, ids, src, dim, false);
    return wk__prim_scatter_(t, ids, src, dim);
}
wk_status wk_scatter_add_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_scatter_add_";
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return wk_last_status();
    if (wk__ag_inplace_on(t, src)) return scatter_rebase(t, ids, src, dim, true);
    return wk__prim_scatter_add_(t, ids, src, dim);
}

/* --------------------------------------------------------------- index_add */

wk_tensor *wk_index_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    if (!wk__ag_on2(t, src)) return wk__prim_index_add(t, ids, src, dim);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_index_add(t, ids, src, dim);
    wk__ag_resume();
    return wk__ag_index_add(r, t, ids, src, dim);
}

/* ---------------------------------------------------------- slice_scatter */

wk_tensor *wk_slice_scatter(const wk_tensor *t, const wk_tensor *src, int dim, int64_t start) {
    if (!wk__ag_on2(t, src)) return wk__prim_slice_scatter(t, src, dim, start);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_slice_scatter(t, src, dim, start);
    wk__ag_resume();
    return wk__ag_slice_scatter(r, t, src, dim, start);
}

/* -------------------------------------------------------------------- flip */

wk_tensor *wk_flip(const wk_tensor *t, const int *dims, int ndims) {
    const char *op = "wk_flip";
    if (!wk__check_in(op, t)) return NULL;
    if (ndims < 0 || (ndims > 0 && !dims)) { wk__err(WK_ERR_ARG, op, "bad dims list (ndims %d)", ndims); return NULL; }
    int r = t->layout.rank;
    bool seen[WK_MAX_RANK] = {false};
    for (int i = 0; i < ndims; i++) {
        int d;
        if (wk__norm_dim(op, dims[i], r, &d) != WK_OK) return NULL;
        if (seen[d]) { wk__err(WK_ERR_ARG, op, "dim %d appears more than once", dims[i]); return NULL; }
        seen[d] = true;
    }
    wk_tensor *cur = wk_copy(t);
    for (int d = 0; cur && d < r; d++) {
        int64_t n = t->layout.shape[d];
        if (!seen[d] || n <= 1) continue;
        int64_t *v = malloc((size_t)n * sizeof *v);
        if (!v) { wk__err(WK_ERR_OOM, op, "cannot allocate %" PRId64 " indices", n); wk_tensor_free(cur); return NULL; }
        for (int64_t i = 0; i < n; i++) v[i] = n - 1 - i;
        wk_tensor *ids = wk_from_host(v, (size_t)n * sizeof *v, &n, 1, WK_I64, wk__dev(t));
        free(v);
        wk_tensor *next = ids ? wk_index_select(cur, ids, d) : NULL;
        wk_tensor_free(ids);
        wk_tensor_free(cur);
        cur = next;
    }
    return cur;
}

/* -------------------------------------------------------------------- roll */

wk_tensor *wk_roll(const wk_tensor *t, int64_t shift, int dim) {
    const char *op = "wk_roll";
    if (!wk__check_in(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    int64_t n = t->layout.shape[d];
    if (n == 0) return wk_copy(t);
    int64_t s = shift % n;
    if (s < 0) s += n;
    if (s == 0) return wk_copy(t);
    wk_tensor *parts[2] = {wk_narrow(t, d, n - s, s), wk_narrow(t, d, 0, n - s)};
    wk_tensor *r = (parts[0] && parts[1]) ? wk_cat(parts, 2, d) : NULL;
    wk_tensor_free(parts[0]);
    wk_tensor_free(parts[1]);
    return r;
}

/* ------------------------------------------------------------------ repeat */

/* The copies go straight to the backend: a node of its own (wk__ag_repeat). */
wk_tensor *wk_repeat(const wk_tensor *t, const int64_t *reps, int nreps) {
    if (!wk__ag_on1(t)) return wk__prim_repeat(t, reps, nreps);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_repeat(t, reps, nreps);
    wk__ag_resume();
    return wk__ag_repeat(r, t, reps, nreps);
}

/* -------------------------------------------------------------------- pads */

/* One node of its own (narrow's backward is a pad: a short graph for the
 * second order). */
wk_tensor *wk_pad_with_zeros(const wk_tensor *t, int dim, int64_t left, int64_t right) {
    if (!wk__ag_on1(t)) return wk__prim_pad_with_zeros(t, dim, left, right);
    wk__ag_suspend();
    wk_tensor *r = wk__prim_pad_with_zeros(t, dim, left, right);
    wk__ag_resume();
    return wk__ag_pad_zeros(r, t, dim, left);
}

/* [edge broadcast to left, t, edge broadcast to right]: records through
 * narrow, broadcast and cat. */
wk_tensor *wk_pad_with_same(const wk_tensor *t, int dim, int64_t left, int64_t right) {
    int d;
    if (!wk__prim_pad_check("wk_pad_with_same", t, dim, left, right, true, &d)) return NULL;
    int r = t->layout.rank;
    int64_t n = t->layout.shape[d], shape[WK_MAX_RANK];
    wk_tensor *parts[3] = {NULL, NULL, NULL};
    int np = 0;
    bool ok = true;
    for (int side = 0; side < 3 && ok; side++) {
        int64_t len = side == 0 ? left : side == 2 ? right : 0;
        wk_tensor *p = NULL;
        if (side == 1) p = wk_narrow(t, d, 0, n); /* a new view: freeing it never touches t's scope slot */
        else if (len == 0) continue;
        else {
            for (int i = 0; i < r; i++) shape[i] = t->layout.shape[i];
            shape[d] = len;
            wk_tensor *edge = wk_narrow(t, d, side == 0 ? 0 : n - 1, 1);
            p = edge ? wk_broadcast_as(edge, shape, r) : NULL;
            wk_tensor_free(edge);
        }
        if (!p) ok = false;
        else parts[np++] = p;
    }
    wk_tensor *res = ok ? wk_cat(parts, np, d) : NULL;
    for (int i = 0; i < np; i++) wk_tensor_free(parts[i]);
    return res;
}

/* ------------------------------------------------------------- masked_fill */

wk_tensor *wk_masked_fill(const wk_tensor *t, const wk_tensor *mask, double value) {
    const char *op = "wk_masked_fill";
    if (!wk__check_in(op, t) || !wk__check_in(op, mask)) return NULL;
    if (!wk__prim_same_device(op, t, mask)) return NULL;
    if (!wk_dtype_is_int(mask->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "mask must have an integer dtype, got %s", wk_dtype_name(mask->dtype));
        return NULL;
    }
    int64_t shape[WK_MAX_RANK];
    int rank;
    if (wk__broadcast_shapes(op, t->layout.shape, t->layout.rank, mask->layout.shape, mask->layout.rank, shape,
                             &rank) != WK_OK)
        return NULL;
    bool same = rank == t->layout.rank;
    for (int i = 0; same && i < rank; i++) same = shape[i] == t->layout.shape[i];
    if (!same) {
        char a[128], b[128];
        wk__err(WK_ERR_SHAPE, op, "mask shape %s does not broadcast to t shape %s",
                wk__shape_str(mask->layout.shape, mask->layout.rank, a, sizeof a),
                wk__shape_str(t->layout.shape, t->layout.rank, b, sizeof b));
        return NULL;
    }
    wk_tensor *v = wk_full(NULL, 0, value, t->dtype, wk__dev(t));
    if (!v) return NULL;
    wk_tensor *r = wk_where(mask, v, t);
    wk_tensor_free(v);
    return r;
}
