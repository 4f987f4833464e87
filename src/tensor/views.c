/* Views: new layouts over the same storage. Nothing here touches data except
 * reshape of a layout that cannot be expressed as a view (a copy). These are
 * the untracked ops (wk__prim_*, tensor/prim_views.h); the public tracked ones
 * are src/autograd/tracked_views.c, the ones made of other views
 * (wk_t, wk_flatten, wk_split, ...) composite_views.c. */
#include "base/checked.h"
#include "tensor/tensor.h"
#include "tensor/copy.h"
#include "tensor/prim_views.h"
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

wk_tensor *wk__prim_reshape(const wk_tensor *t, const int64_t *shape, int rank) {
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
    if (n == 0) {
        wk__layout_contiguous(&l, s, rank, t->layout.offset);
        return view_of(op, t, &l);
    }
    if (reshape_view(&t->layout, s, rank, &l)) return view_of(op, t, &l);
    wk_tensor *c = wk__prim_copy(t);
    if (!c) return NULL;
    wk__layout_contiguous(&l, s, rank, 0);
    wk_tensor *r = wk__tensor_view(c, &l);
    wk_tensor_free(c);
    return r;
}

wk_tensor *wk__prim_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len) {
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
    return view_of(op, t, &l);
}

wk_tensor *wk__prim_transpose(const wk_tensor *t, int d0, int d1) {
    const char *op = "wk_transpose";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int a, b;
    if (wk__norm_dim(op, d0, t->layout.rank, &a) != WK_OK || wk__norm_dim(op, d1, t->layout.rank, &b) != WK_OK) return NULL;
    wk_layout l = t->layout;
    l.shape[a] = t->layout.shape[b];
    l.shape[b] = t->layout.shape[a];
    l.stride[a] = t->layout.stride[b];
    l.stride[b] = t->layout.stride[a];
    return view_of(op, t, &l);
}

wk_tensor *wk__prim_permute(const wk_tensor *t, const int *dims, int rank) {
    const char *op = "wk_permute";
    if (!wk__check_in_blocks(op, t)) return NULL;
    if (rank != t->layout.rank) { wk__err(WK_ERR_SHAPE, op, "%d dims given for a rank-%d tensor", rank, t->layout.rank); return NULL; }
    if (rank && !dims) { wk__err(WK_ERR_ARG, op, "NULL dims"); return NULL; }
    bool seen[WK_MAX_RANK] = {false};
    wk_layout l = t->layout;
    for (int i = 0; i < rank; i++) {
        int d;
        if (wk__norm_dim(op, dims[i], rank, &d) != WK_OK) return NULL;
        if (seen[d]) { wk__err(WK_ERR_ARG, op, "dim %d repeated", d); return NULL; }
        seen[d] = true;
        l.shape[i] = t->layout.shape[d];
        l.stride[i] = t->layout.stride[d];
    }
    return view_of(op, t, &l);
}

wk_tensor *wk__prim_broadcast_as(const wk_tensor *t, const int64_t *shape, int rank) {
    const char *op = "wk_broadcast_as";
    if (!wk__check_in(op, t)) return NULL;
    if (wk__check_shape(op, shape, rank, NULL) != WK_OK) return NULL;
    wk_layout l;
    if (wk__layout_broadcast(op, &t->layout, shape, rank, &l) != WK_OK) return NULL;
    return wk__tensor_view(t, &l);
}

wk_tensor *wk__prim_squeeze(const wk_tensor *t, int dim) {
    const char *op = "wk_squeeze";
    if (!wk__check_in_blocks(op, t)) return NULL;
    int d;
    if (wk__norm_dim(op, dim, t->layout.rank, &d) != WK_OK) return NULL;
    if (t->layout.shape[d] != 1) return wk__tensor_view(t, &t->layout);
    wk_layout l = t->layout;
    for (int i = d; i < l.rank - 1; i++) { l.shape[i] = l.shape[i + 1]; l.stride[i] = l.stride[i + 1]; }
    l.rank--;
    return view_of(op, t, &l);
}

wk_tensor *wk__prim_unsqueeze(const wk_tensor *t, int dim) {
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
    return view_of(op, t, &l);
}

wk_tensor *wk__prim_select(const wk_tensor *t, int dim, int64_t index) {
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
    return view_of(op, t, &l);
}
