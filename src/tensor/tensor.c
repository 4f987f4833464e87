/* Tensor objects: reference counting, metadata queries, scopes, the input
 * checks every op makes (wk__check_in*, block layouts) and the autograd
 * floor's graph hook (wk__graph). */
#include "tensor/tensor.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t g_next_id = 1;

/* Set by the autograd floor (tensor.h); NULL until it records its first node. */
const wk__graph_ops *_Atomic wk__graph = NULL;

/* ---- scopes: a per-thread stack of slots; each slot owns one reference ----
 * No fixed depth: the stack of scope starts grows like the slots do. A begin
 * whose growth fails records WK_ERR_OOM and counts as a "failed" begin; the
 * matching end only uncounts it, so begin/end stay balanced and tensors made
 * meanwhile belong to the enclosing scope (or to the caller at depth 0). */
typedef struct scope_stack {
    wk_tensor **slots;
    int64_t len, cap;
    int64_t *starts;                /* slot index where each open scope begins */
    int64_t depth, starts_cap;
    int64_t failed;                 /* open begins that could not grow the stack */
} scope_stack;
static _Thread_local scope_stack tl_scope;
static _Thread_local int tl_fail_begin_in; /* test hook: the k-th begin from now fails (0: none) */

void wk__scope_fail_next_begin(void) { tl_fail_begin_in = 1; }
void wk__scope_fail_begin_number(int k) { tl_fail_begin_in = k > 0 ? k : 0; }

/* False when the slot array cannot grow: the caller fails with WK_ERR_OOM
 * (a tensor the scope does not own would leak in code that relies on it). */
static bool scope_register(wk_tensor *t) {
    scope_stack *s = &tl_scope;
    if (s->depth == 0) return true;
    if (s->len == s->cap) {
        int64_t nc = s->cap ? s->cap * 2 : 64;
        wk_tensor **n = realloc(s->slots, (size_t)nc * sizeof *n);
        if (!n) return false;
        s->slots = n;
        s->cap = nc;
    }
    t->scope_slot = s->len;
    s->slots[s->len++] = t;
    return true;
}

/* Remove t from its scope slot if it sits in this thread's stack. */
static void scope_unregister(wk_tensor *t) {
    scope_stack *s = &tl_scope;
    int64_t k = t->scope_slot;
    if (k >= 0 && k < s->len && s->slots[k] == t) s->slots[k] = NULL;
    t->scope_slot = -1;
}

void wk_scope_begin(void) {
    scope_stack *s = &tl_scope;
    /* once a begin failed, deeper begins fail too: ends then unwind in order */
    if (s->failed) { s->failed++; return; }
    bool inject = tl_fail_begin_in > 0 && --tl_fail_begin_in == 0;
    if (s->depth == s->starts_cap || inject) {
        int64_t nc = s->starts_cap ? s->starts_cap * 2 : 16;
        int64_t *n = inject ? NULL : realloc(s->starts, (size_t)nc * sizeof *n);
        if (!n) {
            s->failed = 1;
            wk__err(WK_ERR_OOM, "wk_scope_begin", "cannot grow the scope stack past depth %lld; this scope owns "
                    "nothing (its tensors go to the enclosing scope)", (long long)s->depth);
            return;
        }
        s->starts = n;
        s->starts_cap = nc;
    }
    s->starts[s->depth++] = s->len;
}

bool wk__scope_open(void) {
    wk_scope_begin();
    return tl_scope.failed == 0;
}

static void tensor_destroy(wk_tensor *t);

void wk_scope_end(void) {
    scope_stack *s = &tl_scope;
    if (s->failed) { s->failed--; return; }
    if (s->depth == 0) return;
    int64_t start = s->starts[--s->depth];
    for (int64_t i = s->len - 1; i >= start; i--) {
        wk_tensor *t = s->slots[i];
        if (!t) continue;
        t->scope_slot = -1;
        if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) tensor_destroy(t);
    }
    s->len = start;
    if (s->depth == 0) { /* nothing open: give the thread's memory back */
        free(s->slots);
        free(s->starts);
        s->slots = NULL;
        s->starts = NULL;
        s->cap = s->len = s->starts_cap = 0;
    }
}

wk_tensor *wk_keep(wk_tensor *t) {
    if (t) scope_unregister(t);
    return t;
}

/* ---- lifetime ---- */

wk_tensor *wk__tensor_new(wk_storage *s, const wk_layout *l) {
    wk_tensor *t = malloc(sizeof *t);
    if (!t) {
        wk__storage_release(s);
        wk__err(WK_ERR_OOM, "tensor", "cannot allocate a tensor header");
        return NULL;
    }
    atomic_init(&t->refs, 1);
    t->id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    t->storage = s;
    t->layout = *l;
    t->dtype = s->dtype;
    t->scope_slot = -1;
    t->node = NULL;
    if (!scope_register(t)) {
        free(t);
        wk__storage_release(s);
        wk__err(WK_ERR_OOM, "tensor", "cannot grow the scope's slot array");
        return NULL;
    }
    return t;
}

wk_tensor *wk__tensor_view(const wk_tensor *t, const wk_layout *l) {
    atomic_fetch_add_explicit(&t->storage->refs, 1, memory_order_relaxed);
    return wk__tensor_new(t->storage, l);
}

bool wk__check_block_layout(const char *op, wk_dtype dt, const wk_layout *l) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!di || di->block_elems == 1) return true;
    int64_t be = di->block_elems;
    int r = l->rank;
    bool ok = r >= 1 && l->shape[r - 1] % be == 0 && (l->stride[r - 1] == 1 || l->shape[r - 1] == 0) &&
              l->offset % be == 0;
    for (int i = 0; ok && i < r - 1; i++) ok = l->shape[i] <= 1 || l->stride[i] % be == 0;
    if (!ok)
        wk__err(WK_ERR_SHAPE, op,
                "a %s tensor needs rows of whole %lld-element blocks (rank >= 1, last dim a multiple of %lld and "
                "contiguous, rows starting on block boundaries)",
                di->name, (long long)be, (long long)be);
    return ok;
}

wk_tensor *wk__tensor_alloc(const char *op, wk_device *dev, wk_dtype dt, const int64_t *shape, int rank) {
    int64_t n;
    if (wk__check_shape(op, shape, rank, &n) != WK_OK) return NULL;
    if (wk_dtype_is_quantized(dt)) {
        wk_layout bl;
        wk__layout_contiguous(&bl, shape, rank, 0);
        if (!wk__check_block_layout(op, dt, &bl)) return NULL;
    }
    wk_storage *s = wk__storage_new(op, dev, dt, n);
    if (!s) return NULL;
    wk_layout l;
    wk__layout_contiguous(&l, shape, rank, 0);
    return wk__tensor_new(s, &l);
}

static void tensor_destroy(wk_tensor *t) {
    if (t->node) wk__graph_get()->release(t->node);
    wk__storage_release(t->storage);
    free(t);
}

wk_tensor *wk_tensor_retain(wk_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void wk_tensor_free(wk_tensor *t) {
    if (!t) return;
    /* A user free of a scope-owned tensor takes the scope's reference, so the
     * scope does not drop it a second time. */
    if (t->scope_slot >= 0) scope_unregister(t);
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) tensor_destroy(t);
}

/* ---- checks ---- */

bool wk__check_in_blocks(const char *op, const wk_tensor *t) {
    if (!t) {
        wk__err_null_input(op);
        return false;
    }
    return true;
}

bool wk__check_in(const char *op, const wk_tensor *t) {
    if (!wk__check_in_blocks(op, t)) return false;
    if (wk_dtype_is_quantized(t->dtype)) {
        wk__err(WK_ERR_DTYPE, op, "%s is not defined on the block-quantized dtype %s (wk_dequantize it first)", op,
                wk_dtype_name(t->dtype));
        return false;
    }
    return true;
}

bool wk__check_same(const char *op, const wk_tensor *a, const wk_tensor *b) {
    if (!wk__check_in(op, a) || !wk__check_in(op, b)) return false;
    if (wk__dev(a) != wk__dev(b)) {
        wk__err(WK_ERR_DEVICE, op, "device mismatch: lhs on %s (instance %" PRIu64 "), rhs on %s (instance %" PRIu64 ")",
                wk__dev(a)->name, wk__dev(a)->instance, wk__dev(b)->name, wk__dev(b)->instance);
        return false;
    }
    if (a->dtype != b->dtype) {
        wk__err(WK_ERR_DTYPE, op, "dtype mismatch: lhs %s, rhs %s (no implicit casts; use wk_to_dtype)",
                wk_dtype_name(a->dtype), wk_dtype_name(b->dtype));
        return false;
    }
    return true;
}

/* ---- queries ---- */

int wk_rank(const wk_tensor *t) { return t ? t->layout.rank : -1; }
int64_t wk_dim(const wk_tensor *t, int d) {
    if (!t) return -1;
    int r = t->layout.rank, k = d < 0 ? d + r : d;
    return (k < 0 || k >= r) ? -1 : t->layout.shape[k];
}
const int64_t *wk_shape(const wk_tensor *t) { return t ? t->layout.shape : NULL; }
const int64_t *wk_strides(const wk_tensor *t) { return t ? t->layout.stride : NULL; }
int64_t wk_offset(const wk_tensor *t) { return t ? t->layout.offset : 0; }
int64_t wk_numel(const wk_tensor *t) { return t ? wk__layout_numel(&t->layout) : 0; }
wk_dtype wk_tensor_dtype(const wk_tensor *t) { return t ? t->dtype : WK_DTYPE_COUNT; }
wk_device *wk_tensor_device(const wk_tensor *t) { return t ? t->storage->dev : NULL; }
bool wk_is_contiguous(const wk_tensor *t) { return t && wk__layout_is_contiguous(&t->layout); }
bool wk_shares_storage(const wk_tensor *a, const wk_tensor *b) { return a && b && a->storage == b->storage; }
uint64_t wk_tensor_id(const wk_tensor *t) { return t ? t->id : 0; }

char *wk_tensor_describe(const wk_tensor *t, char *buf, size_t len) {
    if (!buf || !len) return buf;
    if (!t) {
        snprintf(buf, len, "(null)");
        return buf;
    }
    char s[256];
    snprintf(buf, len, "%s%s %s", wk_dtype_name(t->dtype), wk__shape_str(t->layout.shape, t->layout.rank, s, sizeof s),
             t->storage->dev->name);
    return buf;
}
