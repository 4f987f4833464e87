/* Indexing ops, untracked: shape and dtype checks, then one backend call
 * (index_select, gather, scatter, index_add) or a composition of untracked
 * steps (slice_scatter, repeat, pad_with_zeros). The backends check the
 * index values themselves. The public ops and the composites that record
 * through their parts (embedding, flip, roll, pad_with_same, masked_fill)
 * are in src/autograd/tracked_indexing.c. */
#include "tensor/block_bytes.h"
#include "base/checked.h"
#include "ops/prim_indexing.h"
#include "ops/prim_join.h"
#include "ops/prim_copy.h"
#include "tensor/prim_views.h"
#include <inttypes.h>

static wk_tensor *finish(wk_tensor *r, wk_status st) {
    if (st != WK_OK) {
        wk_tensor_free(r);
        return NULL;
    }
    return r;
}

bool wk__prim_same_device(const char *op, const wk_tensor *a, const wk_tensor *b) {
    if (wk__dev(a) != wk__dev(b)) {
        wk__err(WK_ERR_DEVICE, op, "device mismatch: %s vs %s", wk__dev(a)->name, wk__dev(b)->name);
        return false;
    }
    return true;
}

bool wk__prim_check_ids(const char *op, const wk_tensor *t, const wk_tensor *ids, bool blocks) {
    if (!(blocks ? wk__check_in_blocks(op, t) : wk__check_in(op, t)) || !wk__check_in(op, ids)) return false;
    if (!wk__prim_same_device(op, t, ids)) return false;
    wk_dtype d = ids->dtype;
    if (d != WK_U8 && d != WK_U32 && d != WK_I32 && d != WK_I64) {
        wk__err(WK_ERR_DTYPE, op, "index dtype %s is not supported (u8, u32, i32, i64)", wk_dtype_name(d));
        return false;
    }
    return true;
}

static bool check_ids(const char *op, const wk_tensor *t, const wk_tensor *ids) {
    return wk__prim_check_ids(op, t, ids, false);
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

wk_tensor *wk__prim_index_select(const wk_tensor *t, const wk_tensor *ids, int dim) {
    const char *op = "wk_index_select";
    if (!wk__prim_check_ids(op, t, ids, true) || !check_1d(op, ids)) return NULL;
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

/* ------------------------------------------------------------------ gather */

wk_tensor *wk__prim_gather(const wk_tensor *t, const wk_tensor *ids, int dim) {
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
    wk_tensor *r = wk__prim_copy(t);
    if (!r) return NULL;
    return finish(r, scatter_impl(op, r, ids, src, dim, add));
}

/* The in-place forms write t's own storage: it must be writable with one
 * element per index, and ids/src that share it are read from a copy first
 * (as copy_ does), so the result does not depend on the write order. */
static wk_status scatter_in_place(const char *op, wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim,
                                  bool add) {
    wk_status st = wk__check_writable(op, t, &t->layout);
    if (st != WK_OK) return st;
    wk_tensor *ids_c = ids->storage == t->storage ? wk__prim_copy(ids) : NULL;
    wk_tensor *src_c = src->storage == t->storage ? wk__prim_copy(src) : NULL;
    if ((ids->storage == t->storage && !ids_c) || (src->storage == t->storage && !src_c)) st = wk_last_status();
    else st = scatter_impl(op, t, ids_c ? ids_c : ids, src_c ? src_c : src, dim, add);
    /* counted for the tests: a backend (the GPU's concurrent work items)
     * must never see src / ids in the storage it writes */
    atomic_fetch_add(&g_scatter_alias_copies, (uint_fast64_t)(ids_c != NULL) + (src_c != NULL));
    wk_tensor_free(ids_c);
    wk_tensor_free(src_c);
    return st;
}

wk_tensor *wk__prim_scatter(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    return scatter_copy_impl("wk_scatter", t, ids, src, dim, false);
}
wk_tensor *wk__prim_scatter_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    return scatter_copy_impl("wk_scatter_add", t, ids, src, dim, true);
}
wk_status wk__prim_scatter_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_scatter_";
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return wk_last_status();
    return scatter_in_place(op, t, ids, src, dim, false);
}
wk_status wk__prim_scatter_add_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
    const char *op = "wk_scatter_add_";
    if (!wk__check_in(op, t) || !wk__check_in(op, ids) || !wk__check_in(op, src)) return wk_last_status();
    return scatter_in_place(op, t, ids, src, dim, true);
}

/* --------------------------------------------------------------- index_add */

wk_tensor *wk__prim_index_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim) {
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
    wk_tensor *r = wk__prim_copy(t);
    if (!r || li.shape[0] == 0) return r;
    return finish(r, wk__be(t)->index_add(wk__dev(t), r->storage->buf, &r->layout, ids->storage->buf, &li, ids->dtype,
                                          src->storage->buf, ls, d, t->dtype));
}

/* ---------------------------------------------------------- slice_scatter */

wk_tensor *wk__prim_slice_scatter(const wk_tensor *t, const wk_tensor *src, int dim, int64_t start) {
    const char *op = "wk_slice_scatter";
    if (!wk__check_same(op, t, src)) return NULL;
    wk_tensor *r = wk__prim_copy(t);
    if (!r) return NULL;
    return finish(r, wk__prim_slice_set(r, src, dim, start));
}

/* ------------------------------------------------------------------ repeat */

/* The copies go straight to the backend (autograd: a node of its own). */
wk_tensor *wk__prim_repeat(const wk_tensor *t, const int64_t *reps, int nreps) {
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
    wk_tensor *cur = wk__prim_reshape(t, s, nreps);
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
        wk_tensor *c = wk__prim_copy(cur);
        wk_tensor_free(cur);
        cur = c;
    }
    return cur;
}

/* -------------------------------------------------------------------- pads */

bool wk__prim_pad_check(const char *op, const wk_tensor *t, int dim, int64_t left, int64_t right, bool same, int *dp) {
    if (!wk__check_in(op, t)) return false;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return false;
    if (left < 0 || right < 0) {
        wk__err(WK_ERR_ARG, op, "pads must be >= 0, got left %" PRId64 " right %" PRId64, left, right);
        return false;
    }
    int64_t n = t->layout.shape[d], padded;
    if (wk__add_overflow_i64(n, left, &padded) || wk__add_overflow_i64(padded, right, &padded)) {
        wk__err(WK_ERR_SHAPE, op, "padded size overflows");
        return false;
    }
    int64_t shape[WK_MAX_RANK], numel;
    int r = t->layout.rank;
    for (int i = 0; i < r; i++) shape[i] = t->layout.shape[i];
    shape[d] = padded;
    if (wk__check_shape(op, shape, r, &numel) != WK_OK) return false;
    if (same && n == 0 && left + right > 0) {
        wk__err(WK_ERR_SHAPE, op, "cannot replicate the edge of an empty dim %d", d);
        return false;
    }
    *dp = d;
    return true;
}

/* [zeros(left), t, zeros(right)] along d, one untracked cat. */
wk_tensor *wk__prim_pad_with_zeros(const wk_tensor *t, int dim, int64_t left, int64_t right) {
    int d;
    if (!wk__prim_pad_check("wk_pad_with_zeros", t, dim, left, right, false, &d)) return NULL;
    int r = t->layout.rank;
    int64_t n = t->layout.shape[d], shape[WK_MAX_RANK];
    wk_tensor *parts[3] = {NULL, NULL, NULL};
    int np = 0;
    bool ok = true;
    for (int side = 0; side < 3 && ok; side++) {
        int64_t len = side == 0 ? left : side == 2 ? right : 0;
        wk_tensor *p = NULL;
        if (side == 1) p = wk__prim_narrow(t, d, 0, n); /* a new view: freeing it never touches t's scope slot */
        else if (len == 0) continue;
        else {
            for (int i = 0; i < r; i++) shape[i] = t->layout.shape[i];
            shape[d] = len;
            p = wk_zeros(shape, r, t->dtype, wk__dev(t));
        }
        if (!p) ok = false;
        else parts[np++] = p;
    }
    wk_tensor *res = ok ? wk__prim_cat(parts, np, d) : NULL;
    for (int i = 0; i < np; i++) wk_tensor_free(parts[i]);
    return res;
}
