/* Indexing ops: shape and dtype checks, then one backend call (index_select,
 * gather, scatter, index_add) or a composition of existing ops (embedding,
 * slice_scatter, flip, roll, repeat, pads, masked_fill). The backends check
 * the index values themselves. */
#include "core/block_bytes.h"
#include "core/checked.h"
#include "core/tensor.h"
#include "autograd/record.h"
#include <inttypes.h>
#include <stdlib.h>

static wk_tensor *finish(wk_tensor *r, wk_status st) {
    if (st != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

static bool same_device(const char *op, const wk_tensor *a, const wk_tensor *b) {
    if (wk__dev(a) != wk__dev(b)) {
        wk__err(WK_ERR_DEVICE, op, "device mismatch: %s vs %s", wk__dev(a)->name, wk__dev(b)->name);
        return false;
    }
    return true;
}

/* t_check: wk__check_in, or wk__check_in_blocks for the row gathers that
 * take block dtypes (index_select, embedding). */
static bool check_ids_with(const char *op, const wk_tensor *t, const wk_tensor *ids,
                           bool (*t_check)(const char *, const wk_tensor *)) {
    if (!t_check(op, t) || !wk__check_in(op, ids)) return false;
    if (!same_device(op, t, ids)) return false;
    wk_dtype d = ids->dtype;
    if (d != WK_U8 && d != WK_U32 && d != WK_I32 && d != WK_I64) {
        wk__err(WK_ERR_DTYPE, op, "index dtype %s is not supported (u8, u32, i32, i64)", wk_dtype_name(d));
        return false;
    }
    return true;
}

static bool check_ids(const char *op, const wk_tensor *t, const wk_tensor *ids) {
    return check_ids_with(op, t, ids, wk__check_in);
}

static bool check_1d(const char *op, const wk_tensor *ids) {
    if (ids->layout.rank > 1) {
        char b[128];
        wk__err(WK_ERR_SHAPE, op, "ids must be 1-D, got shape %s",
                wk__shape_str(ids->layout.shape, ids->layout.rank, b, sizeof b));
        return false;
    }
    return true;
}

/* A 1-D layout of ids (rank 0 becomes one element). */
static wk_layout ids_1d(const wk_tensor *ids) {
    wk_layout l = ids->layout;
    if (l.rank == 0) {
        l.rank = 1;
        l.shape[0] = 1;
        l.stride[0] = 1;
    }
    return l;
}

/* ---------------------------------------------------------- index_select */

static wk_tensor *index_select_impl(const wk_tensor *t, const wk_tensor *ids, int dim);
wk_tensor *wk_index_select(const wk_tensor *t, const wk_tensor *ids, int dim) {
    if (!wk__ag_on1(t)) return index_select_impl(t, ids, dim);
    wk__ag_suspend();
    wk_tensor *r = index_select_impl(t, ids, dim);
    wk__ag_resume();
    return wk__ag_index_select(r, t, ids, dim);
}

static wk_tensor *index_select_impl(const wk_tensor *t, const wk_tensor *ids, int dim) {
    const char *op = "wk_index_select";
    if (!check_ids_with(op, t, ids, wk__check_in_blocks) || !check_1d(op, ids)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    if (wk_dtype_is_quantized(t->dtype) && d == t->layout.rank - 1) {
        wk__err(WK_ERR_SHAPE, op, "cannot pick elements along the last dim of a %s tensor (its blocks); gather whole "
                "rows along another dim, or wk_dequantize first", wk_dtype_name(t->dtype));
        return NULL;
    }
    wk_layout li = ids_1d(ids);
    int64_t shape[WK_MAX_RANK];
    for (int i = 0; i < t->layout.rank; i++) shape[i] = t->layout.shape[i];
    shape[d] = li.shape[0];
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), t->dtype, shape, t->layout.rank);
    if (!r || li.shape[0] == 0) return r;
    /* block dtypes: a gather of whole rows is a gather of their bytes */
    wk_dtype bdt;
    wk_layout lt = wk__block_bytes_layout(&t->layout, t->dtype, &bdt);
    return finish(r, wk__be(t)->index_select(wk__dev(t), t->storage->buf, &lt, ids->storage->buf, &li, ids->dtype, d,
                                             r->storage->buf, bdt));
}

/* Records through index_select (the reshapes are of the integer ids and of
 * the rows, both recorded or untracked). */
wk_tensor *wk_embedding(const wk_tensor *ids, const wk_tensor *table) {
    const char *op = "wk_embedding";
    if (!check_ids_with(op, table, ids, wk__check_in_blocks)) return NULL; /* quantized tables: rows stay blocks */
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

static wk_tensor *gather_impl(const wk_tensor *t, const wk_tensor *ids, int dim);
wk_tensor *wk_gather(const wk_tensor *t, const wk_tensor *ids, int dim) {
    if (!wk__ag_on1(t)) return gather_impl(t, ids, dim);
    wk__ag_suspend();
    wk_tensor *r = gather_impl(t, ids, dim);
    wk__ag_resume();
    return wk__ag_gather(r, t, ids, dim);
}

static wk_tensor *gather_impl(const wk_tensor *t, const wk_tensor *ids, int dim) {
    const char *op = "wk_gather";
    if (!check_ids(op, t, ids)) return NULL;
    const wk_layout *lt = &t->layout, *li = &ids->layout;
    int d;
    if (wk__norm_dim(op, dim, lt->rank, &d) != WK_OK) return NULL;
    bool ok = li->rank == lt->rank;
    for (int i = 0; ok && i < lt->rank; i++)
        if (i != d && li->shape[i] > lt->shape[i]) ok = false;
    if (!ok) {
        char a[128], b[128];
        wk__err(WK_ERR_SHAPE, op, "ids shape %s does not fit t shape %s (same rank, ids sizes <= t's off dim %d)",
                wk__shape_str(li->shape, li->rank, a, sizeof a), wk__shape_str(lt->shape, lt->rank, b, sizeof b), d);
        return NULL;
    }
    wk_tensor *r = wk__tensor_alloc(op, wk__dev(t), t->dtype, li->shape, li->rank);
    if (!r || wk_numel(r) == 0) return r;
    return finish(r, wk__be(t)->gather(wk__dev(t), t->storage->buf, lt, ids->storage->buf, li, ids->dtype, d,
                                       r->storage->buf, t->dtype));
}

/* ----------------------------------------------------------------- scatter */

static atomic_uint_fast64_t g_scatter_alias_copies; /* see wk__scatter_alias_copies */
uint64_t wk__scatter_alias_copies(void) { return (uint64_t)atomic_load(&g_scatter_alias_copies); }

static wk_status scatter_impl(const char *op, wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                              bool add) {
    if (!check_ids(op, t, ids) || !wk__check_same(op, t, src)) return wk_last_status();
    const wk_layout *lt = &t->layout, *li = &ids->layout, *ls = &src->layout;
    int d;
    wk_status st = wk__norm_dim(op, dim, lt->rank, &d);
    if (st != WK_OK) return st;
    bool ok = li->rank == lt->rank && ls->rank == lt->rank;
    for (int i = 0; ok && i < lt->rank; i++) {
        if (li->shape[i] > ls->shape[i]) ok = false;
        if (i != d && li->shape[i] > lt->shape[i]) ok = false;
    }
    if (!ok) {
        char a[128], b[128], c[128];
        return wk__err(WK_ERR_SHAPE, op,
                       "ids %s, src %s and t %s do not fit (same rank; ids sizes <= src's, and <= t's off dim %d)",
                       wk__shape_str(li->shape, li->rank, a, sizeof a), wk__shape_str(ls->shape, ls->rank, b, sizeof b),
                       wk__shape_str(lt->shape, lt->rank, c, sizeof c), d);
    }
    if (wk__layout_numel(li) == 0) return WK_OK;
    wk_layout lsv = *ls; /* src restricted to ids' shape */
    for (int i = 0; i < ls->rank; i++) lsv.shape[i] = li->shape[i];
    return wk__be(t)->scatter(wk__dev(t), t->storage->buf, lt, ids->storage->buf, li, ids->dtype, src->storage->buf,
                              &lsv, d, t->dtype, add);
}

static wk_tensor *scatter_copy_impl(const char *op, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src,
                                    int dim, bool add) {
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return NULL;
    wk_tensor *r = wk_copy(t);
    if (!r) return NULL;
    return finish(r, scatter_impl(op, r, ids, src, dim, add));
}

static wk_tensor *scatter_copy(const char *op, const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                               bool add) {
    if (!wk__ag_on2(t, src)) return scatter_copy_impl(op, t, ids, src, dim, add);
    wk__ag_suspend();
    wk_tensor *r = scatter_copy_impl(op, t, ids, src, dim, add);
    wk__ag_resume();
    return wk__ag_scatter(r, t, ids, src, dim, add);
}

/* The in-place forms write t's own storage: it must be writable with one
 * element per index, and ids/src that share it are read from a copy first
 * (as copy_ does), so the result does not depend on the write order. */
static wk_status scatter_in_place(const char *op, wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                                  bool add) {
    wk_status st = wk__check_writable(op, t, &t->layout);
    if (st != WK_OK) return st;
    wk_tensor *ids_c = ids->storage == t->storage ? wk_copy(ids) : NULL;
    wk_tensor *src_c = src->storage == t->storage ? wk_copy(src) : NULL;
    if ((ids->storage == t->storage && !ids_c) || (src->storage == t->storage && !src_c)) st = wk_last_status();
    else st = scatter_impl(op, t, ids_c ? ids_c : ids, src_c ? src_c : src, dim, add);
    /* counted for the tests: a backend (the GPU's concurrent work items)
     * must never see src / ids in the storage it writes */
    atomic_fetch_add(&g_scatter_alias_copies, (uint_fast64_t)(ids_c != NULL) + (src_c != NULL));
    wk_tensor_free(ids_c);
    wk_tensor_free(src_c);
    return st;
}

wk_tensor *wk_scatter(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    return scatter_copy("wk_scatter", t, ids, src, dim, false);
}
wk_tensor *wk_scatter_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    return scatter_copy("wk_scatter_add", t, ids, src, dim, true);
}
/* Autograd's in-place form: the write with recording suspended, then t is
 * rebased onto a scatter node (edge 0: t's old node, edge 1: src). The ids
 * the backward reads must not be in the storage this write changes. */
static wk_status scatter_rebase(const char *op, wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                                bool add) {
    wk_tensor *ids_c = ids->storage == t->storage ? wk_copy(ids) : NULL;
    if (ids->storage == t->storage && !ids_c) return wk_last_status();
    if (ids_c) ids = ids_c;
    wk__node *n = wk__ag_scatter_node(t, ids, src, dim, add);
    wk_status st = n ? WK_OK : wk_last_status();
    if (st == WK_OK) {
        wk__ag_suspend();
        st = scatter_in_place(op, t, ids, src, dim, add);
        wk__ag_resume();
        st = wk__ag_rebase(t, n, st);
    }
    wk_tensor_free(ids_c);
    return st;
}

wk_status wk_scatter_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_scatter_";
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return wk_last_status();
    if (wk__ag_inplace_on(t, src)) return scatter_rebase(op, t, ids, src, dim, false);
    return scatter_in_place(op, t, ids, src, dim, false);
}
wk_status wk_scatter_add_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_scatter_add_";
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return wk_last_status();
    if (wk__ag_inplace_on(t, src)) return scatter_rebase(op, t, ids, src, dim, true);
    return scatter_in_place(op, t, ids, src, dim, true);
}

/* --------------------------------------------------------------- index_add */

static wk_tensor *index_add_impl(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_tensor *wk_index_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    if (!wk__ag_on2(t, src)) return index_add_impl(t, ids, src, dim);
    wk__ag_suspend();
    wk_tensor *r = index_add_impl(t, ids, src, dim);
    wk__ag_resume();
    return wk__ag_index_add(r, t, ids, src, dim);
}

static wk_tensor *index_add_impl(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_index_add";
    if (!check_ids(op, t, ids) || !check_1d(op, ids) || !wk__check_same(op, t, src)) return NULL;
    const wk_layout *lt = &t->layout, *ls = &src->layout;
    int d;
    if (wk__norm_dim(op, dim, lt->rank, &d) != WK_OK) return NULL;
    wk_layout li = ids_1d(ids);
    bool ok = ls->rank == lt->rank;
    for (int i = 0; ok && i < lt->rank; i++)
        if (ls->shape[i] != (i == d ? li.shape[0] : lt->shape[i])) ok = false;
    if (!ok) {
        char a[128], b[128];
        wk__err(WK_ERR_SHAPE, op, "src shape %s does not fit t shape %s with %" PRId64 " ids on dim %d",
                wk__shape_str(ls->shape, ls->rank, a, sizeof a), wk__shape_str(lt->shape, lt->rank, b, sizeof b),
                li.shape[0], d);
        return NULL;
    }
    wk_tensor *r = wk_copy(t);
    if (!r || li.shape[0] == 0) return r;
    return finish(r, wk__be(t)->index_add(wk__dev(t), r->storage->buf, &r->layout, ids->storage->buf, &li, ids->dtype,
                                          src->storage->buf, ls, d, t->dtype));
}

/* ---------------------------------------------------------- slice_scatter */

static wk_tensor *slice_scatter_impl(const wk_tensor *t, const wk_tensor *src, int dim, int64_t start) {
    const char *op = "wk_slice_scatter";
    if (!wk__check_same(op, t, src)) return NULL;
    wk_tensor *r = wk_copy(t);
    if (!r) return NULL;
    return finish(r, wk_slice_set(r, src, dim, start));
}

wk_tensor *wk_slice_scatter(const wk_tensor *t, const wk_tensor *src, int dim, int64_t start) {
    if (!wk__ag_on2(t, src)) return slice_scatter_impl(t, src, dim, start);
    wk__ag_suspend();
    wk_tensor *r = slice_scatter_impl(t, src, dim, start);
    wk__ag_resume();
    return wk__ag_slice_scatter(r, t, src, dim, start);
}

/* -------------------------------------------------------------------- flip */

/* flip, roll and masked_fill record through their parts (copy and
 * index_select; narrow and cat; where). */

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

static wk_tensor *repeat_impl(const wk_tensor *t, const int64_t *reps, int nreps);
wk_tensor *wk_repeat(const wk_tensor *t, const int64_t *reps, int nreps) {
    if (!wk__ag_on1(t)) return repeat_impl(t, reps, nreps);
    wk__ag_suspend();
    wk_tensor *r = repeat_impl(t, reps, nreps);
    wk__ag_resume();
    return wk__ag_repeat(r, t, reps, nreps);
}

/* The copies go straight to the backend: a node of its own (wk__ag_repeat). */
static wk_tensor *repeat_impl(const wk_tensor *t, const int64_t *reps, int nreps) {
    const char *op = "wk_repeat";
    if (!wk__check_in(op, t)) return NULL;
    int r = t->layout.rank;
    if (nreps < r || nreps > WK_MAX_RANK || (nreps > 0 && !reps)) {
        wk__err(WK_ERR_ARG, op, "needs between rank %d and %d repeats, got %d", r, WK_MAX_RANK, nreps);
        return NULL;
    }
    int64_t s[WK_MAX_RANK], out[WK_MAX_RANK], numel;
    for (int i = 0; i < nreps; i++) {
        if (reps[i] < 0) { wk__err(WK_ERR_ARG, op, "repeat %d is negative (%" PRId64 ")", i, reps[i]); return NULL; }
        s[i] = i < nreps - r ? 1 : t->layout.shape[i - (nreps - r)];
        if (wk__mul_overflow_i64(s[i], reps[i], &out[i])) {
            wk__err(WK_ERR_SHAPE, op, "repeated size of dim %d overflows", i);
            return NULL;
        }
    }
    if (wk__check_shape(op, out, nreps, &numel) != WK_OK) return NULL;
    wk_tensor *cur = wk_reshape(t, s, nreps);
    if (!cur) return NULL;
    if (numel == 0) {
        wk_tensor_free(cur);
        return wk__tensor_alloc(op, wk__dev(t), t->dtype, out, nreps);
    }
    for (int i = 0; i < nreps && cur; i++) {
        if (reps[i] == 1) continue;
        int64_t shape[WK_MAX_RANK];
        for (int k = 0; k < nreps; k++) shape[k] = cur->layout.shape[k];
        shape[i] = out[i];
        wk_tensor *nx = wk__tensor_alloc(op, wk__dev(t), t->dtype, shape, nreps);
        wk_status st = nx ? WK_OK : wk_last_status();
        for (int64_t k = 0; st == WK_OK && k < reps[i]; k++) {
            wk_layout ld = nx->layout;
            ld.shape[i] = s[i];
            ld.offset = k * s[i] * ld.stride[i];
            st = wk__be(t)->copy_strided(wk__dev(t), cur->storage->buf, &cur->layout, nx->storage->buf, &ld, t->dtype);
        }
        wk_tensor_free(cur);
        cur = finish(nx, st);
    }
    if (cur && cur->storage == t->storage) { /* every rep was 1: still return a copy */
        wk_tensor *c = wk_copy(cur);
        wk_tensor_free(cur);
        cur = c;
    }
    return cur;
}

/* -------------------------------------------------------------------- pads */

static wk_tensor *pad_impl(const char *op, const wk_tensor *t, int dim, int64_t left, int64_t right, bool same) {
    if (!wk__check_in(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    if (left < 0 || right < 0) {
        wk__err(WK_ERR_ARG, op, "pads must be >= 0, got left %" PRId64 " right %" PRId64, left, right);
        return NULL;
    }
    int64_t n = t->layout.shape[d], padded;
    if (wk__add_overflow_i64(n, left, &padded) || wk__add_overflow_i64(padded, right, &padded)) {
        wk__err(WK_ERR_SHAPE, op, "padded size overflows");
        return NULL;
    }
    int64_t shape[WK_MAX_RANK], numel;
    int r = t->layout.rank;
    for (int i = 0; i < r; i++) shape[i] = t->layout.shape[i];
    shape[d] = padded;
    if (wk__check_shape(op, shape, r, &numel) != WK_OK) return NULL;
    if (same && n == 0 && left + right > 0) {
        wk__err(WK_ERR_SHAPE, op, "cannot replicate the edge of an empty dim %d", d);
        return NULL;
    }
    wk_tensor *parts[3] = {NULL, NULL, NULL};
    int np = 0;
    bool ok = true;
    for (int side = 0; side < 3 && ok; side++) {
        int64_t len = side == 0 ? left : side == 2 ? right : 0;
        wk_tensor *p = NULL;
        if (side == 1) p = wk_narrow(t, d, 0, n); /* a new view: freeing it never touches t's scope slot */
        else if (len == 0) continue;
        else if (same) {
            for (int i = 0; i < r; i++) shape[i] = t->layout.shape[i];
            shape[d] = len;
            wk_tensor *edge = wk_narrow(t, d, side == 0 ? 0 : n - 1, 1);
            p = edge ? wk_broadcast_as(edge, shape, r) : NULL;
            wk_tensor_free(edge);
        } else {
            for (int i = 0; i < r; i++) shape[i] = t->layout.shape[i];
            shape[d] = len;
            p = wk_zeros(shape, r, t->dtype, wk__dev(t));
        }
        if (!p) ok = false;
        else parts[np++] = p;
    }
    wk_tensor *res = ok ? wk_cat(parts, np, d) : NULL;
    for (int i = 0; i < np; i++) wk_tensor_free(parts[i]);
    return res;
}

/* One node of its own (narrow's backward is a pad: a short graph for the
 * second order); pad_with_same records through narrow, broadcast and cat. */
wk_tensor *wk_pad_with_zeros(const wk_tensor *t, int dim, int64_t left, int64_t right) {
    if (!wk__ag_on1(t)) return pad_impl("wk_pad_with_zeros", t, dim, left, right, false);
    wk__ag_suspend();
    wk_tensor *r = pad_impl("wk_pad_with_zeros", t, dim, left, right, false);
    wk__ag_resume();
    return wk__ag_pad_zeros(r, t, dim, left);
}
wk_tensor *wk_pad_with_same(const wk_tensor *t, int dim, int64_t left, int64_t right) {
    return pad_impl("wk_pad_with_same", t, dim, left, right, true);
}

/* ------------------------------------------------------------- masked_fill */

wk_tensor *wk_masked_fill(const wk_tensor *t, const wk_tensor *mask, double value) {
    const char *op = "wk_masked_fill";
    if (!wk__check_in(op, t) || !wk__check_in(op, mask)) return NULL;
    if (!same_device(op, t, mask)) return NULL;
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
