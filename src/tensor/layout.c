#include "tensor/layout.h"
#include "base/checked.h"
#include "base/error.h"
#include <stdio.h>
#include <string.h>

void wk__layout_contiguous(wk_layout *l, const int64_t *shape, int rank, int64_t offset) {
    l->rank = rank;
    l->offset = offset;
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        l->shape[i] = shape[i];
        l->stride[i] = s;
        s *= shape[i] ? shape[i] : 1;
    }
}

int64_t wk__layout_numel(const wk_layout *l) {
    int64_t n = 1;
    for (int i = 0; i < l->rank; i++) n *= l->shape[i];
    return n;
}

bool wk__layout_is_contiguous(const wk_layout *l) {
    int64_t s = 1;
    for (int i = l->rank - 1; i >= 0; i--) {
        if (l->shape[i] == 1) continue;
        if (l->shape[i] == 0) return true;
        if (l->stride[i] != s) return false;
        s *= l->shape[i];
    }
    return true;
}

wk_status wk__check_shape(const char *op, const int64_t *shape, int rank, int64_t *numel) {
    if (rank < 0 || rank > WK_MAX_RANK)
        return wk__err(WK_ERR_SHAPE, op, "rank %d out of range [0, %d]", rank, WK_MAX_RANK);
    if (rank > 0 && !shape) return wk__err(WK_ERR_ARG, op, "NULL shape with rank %d", rank);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return wk__err(WK_ERR_SHAPE, op, "negative size %lld in dim %d", (long long)shape[i], i);
        if (!wk__shape_fits(shape, i + 1)) {
            char b[200];
            return wk__err(WK_ERR_SHAPE, op, "shape %s too large (more than 2^56 elements)",
                           wk__shape_str(shape, rank, b, sizeof b));
        }
        n *= shape[i]; /* <= 2^56 (or 0): the check above bounds it */
    }
    if (numel) *numel = n;
    return WK_OK;
}

wk_status wk__norm_dim(const char *op, int dim, int rank, int *out) {
    int d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= rank)
        return wk__err(WK_ERR_INDEX, op, "dim %d out of range for rank %d", dim, rank);
    *out = d;
    return WK_OK;
}

bool wk__layout_merged_stride(const wk_layout *l, int d0, int d1, int64_t *stride) {
    int64_t s = 1, inner = 0;
    for (int i = d1 - 1; i >= d0; i--) {
        if (l->shape[i] == 1) continue;
        if (inner == 0) {
            s = l->stride[i];
            inner = l->shape[i];
        } else if (l->stride[i] != s * inner) {
            return false;
        } else {
            inner *= l->shape[i];
        }
    }
    *stride = s;
    return true;
}

void wk__layout_span(const wk_layout *l, int64_t *lo, int64_t *hi) {
    int64_t a = l->offset, b = l->offset;
    for (int i = 0; i < l->rank; i++) {
        if (l->shape[i] == 0) { *lo = *hi = l->offset; return; }
        int64_t e = (l->shape[i] - 1) * l->stride[i];
        if (e < 0) a += e; else b += e;
    }
    *lo = a;
    *hi = b + 1;
}

wk_status wk__broadcast_shapes(const char *op, const int64_t *a, int ra, const int64_t *b, int rb,
                               int64_t *out, int *rout) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return wk__err(WK_ERR_SHAPE, op, "shapes %s and %s do not broadcast", wk__shape_str(a, ra, sa, sizeof sa),
                           wk__shape_str(b, rb, sb, sizeof sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *rout = r;
    return WK_OK;
}

wk_status wk__layout_broadcast(const char *op, const wk_layout *l, const int64_t *shape, int rank, wk_layout *out) {
    if (rank < l->rank || rank > WK_MAX_RANK) {
        char sa[128], sb[128];
        return wk__err(WK_ERR_SHAPE, op, "cannot broadcast %s to %s", wk__shape_str(l->shape, l->rank, sa, sizeof sa),
                       wk__shape_str(shape, rank, sb, sizeof sb));
    }
    wk_layout r;
    r.rank = rank;
    r.offset = l->offset;
    int lead = rank - l->rank;
    for (int i = 0; i < rank; i++) {
        r.shape[i] = shape[i];
        if (i < lead) { r.stride[i] = 0; continue; }
        int64_t s = l->shape[i - lead];
        if (s == shape[i]) r.stride[i] = l->stride[i - lead];
        else if (s == 1) r.stride[i] = 0;
        else {
            char sa[128], sb[128];
            return wk__err(WK_ERR_SHAPE, op, "cannot broadcast %s to %s", wk__shape_str(l->shape, l->rank, sa, sizeof sa),
                           wk__shape_str(shape, rank, sb, sizeof sb));
        }
    }
    *out = r;
    return WK_OK;
}

const char *wk__shape_str(const int64_t *shape, int rank, char *buf, size_t len) {
    size_t p = 0;
    if (len == 0) return buf;
    buf[0] = 0;
    p += (size_t)snprintf(buf + p, len - p, "[");
    for (int i = 0; i < rank && p < len; i++)
        p += (size_t)snprintf(buf + p, len - p, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (p < len) snprintf(buf + p, len - p, "]");
    return buf;
}

void wk__iter_init(wk_iter *it, int nops, const wk_layout *const *ls) {
    const wk_layout *l0 = ls[0];
    it->nops = nops;
    int r = 0;
    /* drop size-1 dims, then merge dim i into the previous kept one when every
     * operand has stride[prev] == stride[i] * shape[i] */
    for (int i = 0; i < l0->rank; i++) {
        if (l0->shape[i] == 1) continue;
        if (r > 0) {
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (it->stride[k][r - 1] != ls[k]->stride[i] * l0->shape[i]) { merge = false; break; }
            if (merge) {
                it->shape[r - 1] *= l0->shape[i];
                for (int k = 0; k < nops; k++) it->stride[k][r - 1] = ls[k]->stride[i];
                continue;
            }
        }
        it->shape[r] = l0->shape[i];
        for (int k = 0; k < nops; k++) it->stride[k][r] = ls[k]->stride[i];
        r++;
    }
    if (l0->rank > 0) {
        for (int i = 0; i < l0->rank; i++)
            if (l0->shape[i] == 0) { r = 1; it->shape[0] = 0; for (int k = 0; k < nops; k++) it->stride[k][0] = 0; break; }
    }
    if (r == 0) {
        r = 1;
        it->shape[0] = 1;
        for (int k = 0; k < nops; k++) it->stride[k][0] = 1;
    }
    it->rank = r;
    for (int k = 0; k < nops; k++) it->offset[k] = ls[k]->offset;
}

void wk__iter_offsets(const wk_iter *it, int64_t outer, int64_t *offs) {
    for (int k = 0; k < it->nops; k++) offs[k] = it->offset[k];
    for (int i = it->rank - 2; i >= 0; i--) {
        int64_t idx = outer % it->shape[i];
        outer /= it->shape[i];
        for (int k = 0; k < it->nops; k++) offs[k] += idx * it->stride[k][i];
    }
}
