/* Views: new layouts over the same storage. Nothing here touches data except
 * reshape/flatten of a layout that cannot be expressed as a view (a copy). */
#include "core/checked.h"
#include "core/tensor.h"
#include "autograd/record.h"
#include <stdlib.h>
#include <string.h>

static char *shp(const wk_tensor *t, char *b, size_t n) { return (char *)wk__shape_str(t->layout.shape, t->layout.rank, b, n); }

/* A view of t with layout l. Block dtypes take the views that keep rows of
 * whole blocks (WK_ERR_SHAPE naming op for the rest: a transpose of the
 * last dim, a narrow or select inside a block). */
static wk_tensor *view_of(const char *op, const wk_tensor *t, const wk_layout *l) {
    if (!wk__check_block_layout(op, t->dtype, l)) return NULL;
    return wk__tensor_view(t, l);
}

/* Try to express `shape` over layout l without copying (numpy's attempt_nocopy_reshape). */
static bool reshape_view(const wk_layout *l, const int64_t *shape, int rank, wk_layout *out) {
    /* drop size-1 dims of the source */
    int64_t os[WK_MAX_RANK], ost[WK_MAX_RANK];
    int on = 0;
    for (int i = 0; i < l->rank; i++)
        if (l->shape[i] != 1) { os[on] = l->shape[i]; ost[on] = l->stride[i]; on++; }
    out->rank = rank;
    out->offset = l->offset;
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < rank && oi < on) {
        int64_t np = shape[ni], op = os[oi];
        while (np != op) {
            if (np < op) np *= shape[nj++];
            else op *= os[oj++];
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (ost[ok] != os[ok + 1] * ost[ok + 1]) return false;
        out->stride[nj - 1] = ost[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--) out->stride[nk - 1] = out->stride[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    int64_t last = ni > 0 ? out->stride[ni - 1] : 1;
    for (int nk = ni; nk < rank; nk++) out->stride[nk] = last; /* trailing size-1 dims */
    for (int i = 0; i < rank; i++) out->shape[i] = shape[i];
    return true;
}

wk_tensor *wk_reshape(const wk_tensor *t, const int64_t *shape, int rank) {
    const char *op = "wk_reshape";
    if (!wk__check_in_blocks(op, t)) return NULL;
    if (rank < 0 || rank > WK_MAX_RANK) { wk__err(WK_ERR_SHAPE, op, "rank %d out of range [0, %d]", rank, WK_MAX_RANK); return NULL; }
    if (rank && !shape) { wk__err(WK_ERR_ARG, op, "NULL shape"); return NULL; }
    int64_t s[WK_MAX_RANK], known = 1, nz = 1, n = wk_numel(t);
    int hole = -1;
    for (int i = 0; i < rank; i++) {
        s[i] = shape[i];
        if (s[i] == -1) {
            if (hole >= 0) { wk__err(WK_ERR_SHAPE, op, "more than one -1 in the new shape"); return NULL; }
            hole = i;
        } else if (s[i] < 0) {
            wk__err(WK_ERR_SHAPE, op, "negative size %lld in dim %d", (long long)s[i], i);
            return NULL;
        } else {
            if (s[i] && nz > WK__MAX_NUMEL / s[i]) { /* keeps `known` (a product of these) from wrapping */
                wk__err(WK_ERR_SHAPE, op, "shape too large (more than 2^56 elements)");
                return NULL;
            }
            if (s[i]) nz *= s[i];
            known *= s[i];
        }
    }
    if (hole >= 0) {
        if (known == 0 || n % known) {
            char a[128];
            wk__err(WK_ERR_SHAPE, op, "cannot infer the -1 dim: %lld elements of %s", (long long)n, shp(t, a, sizeof a));
            return NULL;
        }
        s[hole] = n / known;
        known = n;
    }
    if (known != n) {
        char a[128], b[128];
        wk__err(WK_ERR_SHAPE, op, "cannot reshape %s (%lld elements) to %s", shp(t, a, sizeof a), (long long)n,
                wk__shape_str(s, rank, b, sizeof b));
        return NULL;
    }
    wk_layout l;
    /* block dtypes: the new shape must hold rows of whole blocks */
    wk__layout_contiguous(&l, s, rank, 0);
    if (!wk__check_block_layout(op, t->dtype, &l)) return NULL;
    bool ag = wk__ag_on1(t);
    if (n == 0) {
        wk__layout_contiguous(&l, s, rank, t->layout.offset);
        return ag ? wk__ag_reshape(view_of(op, t, &l), t) : view_of(op, t, &l);
    }
    if (reshape_view(&t->layout, s, rank, &l)) return ag ? wk__ag_reshape(view_of(op, t, &l), t) : view_of(op, t, &l);
    if (ag) wk__ag_suspend();
    wk_tensor *c = wk_copy(t);
    if (ag) wk__ag_resume();
    if (!c) return NULL;
    wk__layout_contiguous(&l, s, rank, 0);
    wk_tensor *r = wk__tensor_view(c, &l);
    wk_tensor_free(c);
    return ag ? wk__ag_reshape(r, t) : r;
}

wk_tensor *wk_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len) {
    const char *op = "wk_narrow";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    int64_t size = t->layout.shape[d];
    if (start < 0 || len < 0 || start > size || len > size - start) {
        char a[128];
        wk__err(WK_ERR_INDEX, op, "start %lld, length %lld out of range for dim %d of %s", (long long)start,
                (long long)len, d, shp(t, a, sizeof a));
        return NULL;
    }
    wk_layout l = t->layout;
    l.offset += start * l.stride[d];
    l.shape[d] = len;
    if (wk__ag_on1(t)) return wk__ag_narrow(view_of(op, t, &l), t, d, start, len);
    return view_of(op, t, &l);
}

wk_tensor *wk_transpose(const wk_tensor *t, int d0, int d1) {
    const char *op = "wk_transpose";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int a, b;
    if (wk__norm_dim(op, d0, t->layout.rank, &a) != WK_OK || wk__norm_dim(op, d1, t->layout.rank, &b) != WK_OK) return NULL;
    wk_layout l = t->layout;
    l.shape[a] = t->layout.shape[b];
    l.shape[b] = t->layout.shape[a];
    l.stride[a] = t->layout.stride[b];
    l.stride[b] = t->layout.stride[a];
    if (wk__ag_on1(t)) {
        int perm[WK_MAX_RANK];
        for (int i = 0; i < t->layout.rank; i++) perm[i] = i;
        perm[a] = b;
        perm[b] = a;
        return wk__ag_permute(view_of(op, t, &l), t, perm);
    }
    return view_of(op, t, &l);
}

wk_tensor *wk_t(const wk_tensor *t) {
    if (!wk__check_in_blocks("wk_t", t)) return NULL;
    if (t->layout.rank < 2) { wk__err(WK_ERR_SHAPE, "wk_t", "needs rank >= 2, got %d", t->layout.rank); return NULL; }
    return wk_transpose(t, -2, -1);
}

wk_tensor *wk_permute(const wk_tensor *t, const int *dims, int rank) {
    const char *op = "wk_permute";
    if (!wk__check_in_blocks(op, t)) return NULL;
    if (rank != t->layout.rank) { wk__err(WK_ERR_SHAPE, op, "%d dims given for a rank-%d tensor", rank, t->layout.rank); return NULL; }
    if (rank && !dims) { wk__err(WK_ERR_ARG, op, "NULL dims"); return NULL; }
    bool seen[WK_MAX_RANK] = {false};
    int nd[WK_MAX_RANK];
    wk_layout l = t->layout;
    for (int i = 0; i < rank; i++) {
        int d;
        if (wk__norm_dim(op, dims[i], rank, &d) != WK_OK) return NULL;
        if (seen[d]) { wk__err(WK_ERR_ARG, op, "dim %d repeated", d); return NULL; }
        seen[d] = true;
        nd[i] = d;
        l.shape[i] = t->layout.shape[d];
        l.stride[i] = t->layout.stride[d];
    }
    if (wk__ag_on1(t)) return wk__ag_permute(view_of(op, t, &l), t, nd);
    return view_of(op, t, &l);
}

wk_tensor *wk_broadcast_as(const wk_tensor *t, const int64_t *shape, int rank) {
    const char *op = "wk_broadcast_as";
    if (!wk__check_in(op, t)) return NULL;
    if (wk__check_shape(op, shape, rank, NULL) != WK_OK) return NULL;
    wk_layout l;
    if (wk__layout_broadcast(op, &t->layout, shape, rank, &l) != WK_OK) return NULL;
    if (wk__ag_on1(t)) return wk__ag_broadcast(wk__tensor_view(t, &l), t);
    return wk__tensor_view(t, &l);
}

wk_tensor *wk_broadcast_left(const wk_tensor *t, const int64_t *left, int nleft) {
    const char *op = "wk_broadcast_left";
    if (!wk__check_in(op, t)) return NULL;
    if (nleft < 0 || nleft + t->layout.rank > WK_MAX_RANK) {
        wk__err(WK_ERR_SHAPE, op, "rank %d + %d exceeds %d", t->layout.rank, nleft, WK_MAX_RANK);
        return NULL;
    }
    if (nleft > 0 && !left) { wk__err(WK_ERR_ARG, op, "NULL left dims with nleft = %d", nleft); return NULL; }
    int64_t s[WK_MAX_RANK];
    for (int i = 0; i < nleft; i++) s[i] = left[i];
    for (int i = 0; i < t->layout.rank; i++) s[nleft + i] = t->layout.shape[i];
    return wk_broadcast_as(t, s, nleft + t->layout.rank);
}

wk_tensor *wk_squeeze(const wk_tensor *t, int dim) {
    const char *op = "wk_squeeze";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    if (t->layout.shape[d] != 1)
        return wk__ag_on1(t) ? wk__ag_identity(wk__tensor_view(t, &t->layout), t, op) : wk__tensor_view(t, &t->layout);
    wk_layout l = t->layout;
    for (int i = d; i < l.rank - 1; i++) { l.shape[i] = l.shape[i + 1]; l.stride[i] = l.stride[i + 1]; }
    l.rank--;
    if (wk__ag_on1(t)) return wk__ag_reshape(view_of(op, t, &l), t);
    return view_of(op, t, &l);
}

wk_tensor *wk_unsqueeze(const wk_tensor *t, int dim) {
    const char *op = "wk_unsqueeze";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int r = t->layout.rank, d;
    if (r == WK_MAX_RANK) { wk__err(WK_ERR_SHAPE, op, "rank would exceed %d", WK_MAX_RANK); return NULL; }
    if (wk__norm_dim(op, dim, r + 1, &d) != WK_OK) return NULL;
    wk_layout l = t->layout;
    for (int i = r; i > d; i--) { l.shape[i] = l.shape[i - 1]; l.stride[i] = l.stride[i - 1]; }
    l.shape[d] = 1;
    l.stride[d] = d < r ? t->layout.stride[d] * t->layout.shape[d] : 1;
    l.rank = r + 1;
    if (wk__ag_on1(t)) return wk__ag_reshape(view_of(op, t, &l), t);
    return view_of(op, t, &l);
}

wk_tensor *wk_flatten(const wk_tensor *t, int start_dim, int end_dim) {
    const char *op = "wk_flatten";
    if (!wk__check_in_blocks(op, t)) return NULL;
    if (t->layout.rank == 0) { int64_t one = 1; return wk_reshape(t, &one, 1); }
    int a, b;
    if (wk__norm_dim(op, start_dim, t->layout.rank, &a) != WK_OK || wk__norm_dim(op, end_dim, t->layout.rank, &b) != WK_OK)
        return NULL;
    if (a > b) { wk__err(WK_ERR_ARG, op, "start dim %d after end dim %d", a, b); return NULL; }
    int64_t s[WK_MAX_RANK];
    int r = 0;
    for (int i = 0; i < a; i++) s[r++] = t->layout.shape[i];
    int64_t m = 1;
    for (int i = a; i <= b; i++) m *= t->layout.shape[i];
    s[r++] = m;
    for (int i = b + 1; i < t->layout.rank; i++) s[r++] = t->layout.shape[i];
    return wk_reshape(t, s, r);
}

wk_tensor *wk_flatten_all(const wk_tensor *t) {
    if (!wk__check_in_blocks("wk_flatten_all", t)) return NULL;
    int64_t n = wk_numel(t);
    return wk_reshape(t, &n, 1);
}

wk_tensor *wk_select(const wk_tensor *t, int dim, int64_t index) {
    const char *op = "wk_select";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    int64_t size = t->layout.shape[d], k = index < 0 ? index + size : index;
    if (k < 0 || k >= size) {
        wk__err(WK_ERR_INDEX, op, "index %lld out of range for dim %d of size %lld", (long long)index, d, (long long)size);
        return NULL;
    }
    wk_layout l = t->layout;
    l.offset += k * l.stride[d];
    for (int i = d; i < l.rank - 1; i++) { l.shape[i] = l.shape[i + 1]; l.stride[i] = l.stride[i + 1]; }
    l.rank--;
    if (wk__ag_on1(t)) return wk__ag_select(view_of(op, t, &l), t, d, k);
    return view_of(op, t, &l);
}

wk_status wk_split(const wk_tensor *t, const int64_t *sizes, int n, int dim, wk_tensor **out) {
    const char *op = "wk_split";
    if (!wk__check_in_blocks(op, t)) return wk_last_status();
    if (n < 1 || !sizes || !out) return wk__err(WK_ERR_ARG, op, "need n >= 1 sizes and an output array");
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return wk_last_status();
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) return wk__err(WK_ERR_ARG, op, "negative size %lld", (long long)sizes[i]);
        if (sizes[i] > t->layout.shape[d] - total) /* also keeps the sum from overflowing */
            return wk__err(WK_ERR_SHAPE, op, "sizes sum to more than dim %d's %lld", d, (long long)t->layout.shape[d]);
        total += sizes[i];
    }
    if (total != t->layout.shape[d])
        return wk__err(WK_ERR_SHAPE, op, "sizes sum to %lld, dim %d has %lld", (long long)total, d,
                       (long long)t->layout.shape[d]);
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        out[i] = wk_narrow(t, d, start, sizes[i]);
        if (!out[i]) {
            for (int k = 0; k < i; k++) { wk_tensor_free(out[k]); out[k] = NULL; }
            return wk_last_status();
        }
        start += sizes[i];
    }
    return WK_OK;
}

wk_status wk_chunk(const wk_tensor *t, int n, int dim, wk_tensor **out, int *count) {
    const char *op = "wk_chunk";
    if (!wk__check_in_blocks(op, t)) return wk_last_status();
    if (n < 1 || !out) return wk__err(WK_ERR_ARG, op, "need n >= 1 and an output array");
    /* without the count the caller cannot know which outputs to free */
    if (!count) return wk__err(WK_ERR_ARG, op, "NULL count");
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return wk_last_status();
    int64_t size = t->layout.shape[d];
    int64_t each = (size + n - 1) / n;
    int k = size == 0 ? 1 : (int)((size + each - 1) / each);   /* <= n */
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)k);
    if (!sizes) return wk__err(WK_ERR_OOM, op, "cannot allocate %d chunk sizes", k);
    for (int i = 0; i < k; i++) sizes[i] = size == 0 ? 0 : (size - i * each < each ? size - i * each : each);
    *count = k;
    wk_status st = wk_split(t, sizes, k, d, out);
    free(sizes);
    return st;
}
