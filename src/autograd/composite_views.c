/* Views made of the recorded public views (their parts record): wk_t,
 * wk_broadcast_left, wk_flatten, wk_flatten_all, wk_split, wk_chunk. */
#include "autograd/node.h"
#include <stdlib.h>

wk_tensor *wk_t(const wk_tensor *t) {
    if (!wk__check_in_blocks("wk_t", t)) return NULL;
    if (t->layout.rank < 2) { wk__err(WK_ERR_SHAPE, "wk_t", "needs rank >= 2, got %d", t->layout.rank); return NULL; }
    return wk_transpose(t, -2, -1);
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
