/* Autograd of the joins, pads, indexing ops, shape composites and in-place
 * writes (rules_join.c, rules_index.c, the rebase of the in-place writes):
 * every rule against central differences in f64 (with Hessian-vector
 * products: each case's output is squared, so the rules run again on a
 * tracked gradient under create_graph), over strided, broadcast, empty,
 * one-element and rank-0 inputs, negative dims and repeated ids; the exact
 * semantics of the in-place rebase; and PyTorch's gradients
 * (tests/oracle/gen_grad_shape.py) in f64, f32, f16 and bf16. */
#include "testutil.h"
#include "gradcheck.h"
#include "oracle_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wk_tensor *vals(const int64_t *shape, int rank, double scale, double shift) {
    return TU_OK(tu_values(shape, rank, WK_F64, scale, shift));
}
static wk_tensor *ids_of(const int64_t *v, const int64_t *shape, int rank, wk_dtype dt) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double d[64];
    assert_true(n <= 64);
    for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
    return TU_OK(tu_make(d, shape, rank, dt));
}

/* ------------------------------------------------ the finite-difference cases */

enum {
    C_CAT, C_STACK0, C_STACK, C_INDEX_SELECT, C_INDEX_SELECT0, C_EMBEDDING, C_GATHER, C_SCATTER, C_SCATTER_ADD,
    C_INDEX_ADD, C_SLICE_SCATTER, C_SLICE_ASSIGN, C_MASKED_FILL, C_FLIP, C_ROLL, C_REPEAT, C_REPEAT0, C_PAD_ZEROS,
    C_PAD_SAME, C_MESHGRID, C_VIEWS, C_NARROW, C_SLICE_SET_, C_COPY_, C_SCATTER_, C_SCATTER_ADD_, C_SLICE_ASSIGN_,
    C_ONE, C_COUNT
};
static const char *const k_case[C_COUNT] = {
    "cat", "stack rank 0", "stack", "index_select", "index_select rank-0 ids", "embedding", "gather", "scatter",
    "scatter_add", "index_add", "slice_scatter", "slice_assign", "masked_fill", "flip", "roll", "repeat",
    "repeat rank 0", "pad_with_zeros", "pad_with_same", "meshgrid", "split/chunk/flatten/t/broadcast_left",
    "narrow (second order through pad)", "slice_set in place", "copy_ in place", "scatter_ in place",
    "scatter_add_ in place", "slice_assign_ in place", "one element",
};

/* The op of case w on the inputs (new tensors belong to the caller's scope). */
static wk_tensor *core(int w, wk_tensor *const *in) {
    switch (w) {
    case C_CAT: return wk_cat((wk_tensor *[]){in[0], in[1], in[2]}, 3, -1);
    case C_STACK0: return wk_stack((wk_tensor *[]){in[0], in[1], in[0]}, 3, 0);
    case C_STACK: return wk_stack((wk_tensor *[]){in[0], in[1]}, 2, -1);
    case C_INDEX_SELECT: return wk_index_select(in[0], in[1], -1);
    case C_INDEX_SELECT0: return wk_index_select(in[0], in[1], 0);
    case C_EMBEDDING: return wk_embedding(in[1], in[0]);
    case C_GATHER: return wk_gather(in[0], in[1], 0);
    case C_SCATTER: return wk_scatter(in[0], in[2], in[1], 0);
    case C_SCATTER_ADD: return wk_scatter_add(in[0], in[2], in[1], -1);
    case C_INDEX_ADD: return wk_index_add(in[0], in[2], in[1], 0);
    case C_SLICE_SCATTER: return wk_slice_scatter(in[0], in[1], -1, 2);
    case C_SLICE_ASSIGN:
        return wk_slice_assign(in[0], (int64_t[]){1, 0}, (int64_t[]){4, 6}, (int64_t[]){2, 3}, 2, in[1]);
    case C_MASKED_FILL: return wk_masked_fill(in[0], in[1], 0.75);
    case C_FLIP: return wk_flip(in[0], (int[]){0, -1}, 2);
    case C_ROLL: return wk_roll(in[0], -4, 1);
    case C_REPEAT: return wk_repeat(in[0], (int64_t[]){2, 1, 3}, 3);
    case C_REPEAT0: return wk_repeat(in[0], (int64_t[]){2, 3}, 2);
    case C_PAD_ZEROS: return wk_pad_with_zeros(in[0], 0, 2, 1);
    case C_PAD_SAME: return wk_pad_with_same(in[0], -1, 1, 2);
    case C_MESHGRID: {
        wk_tensor *o[3];
        if (wk_meshgrid(in, 3, WK_MESHGRID_XY, o) != WK_OK) return NULL;
        return wk_add(wk_mul(o[0], o[1]), o[2]);
    }
    case C_VIEWS: {
        wk_tensor *parts[2], *ch[2];
        int cnt = 0;
        if (wk_split(in[0], (int64_t[]){1, 3}, 2, 0, parts) != WK_OK) return NULL; /* (1, 6), (3, 6) */
        if (wk_chunk(parts[1], 2, -1, ch, &cnt) != WK_OK) return NULL;           /* (3, 3) x 2 */
        wk_tensor *m = wk_add(wk_t(ch[0]), ch[1]);                                /* (3, 3) */
        wk_tensor *f = wk_flatten(m, 0, 1);                                       /* (9) */
        wk_tensor *b = wk_broadcast_left(f, (int64_t[]){2}, 1);                   /* (2, 9) */
        wk_tensor *q[3] = {wk_narrow(parts[0], 1, 0, 3), wk_narrow(parts[0], 1, 3, 3), wk_narrow(parts[0], 1, 1, 3)};
        return wk_mul(b, wk_flatten_all(wk_cat(q, 3, 1)));                       /* (2, 9) */
    }
    case C_NARROW: return wk_narrow(in[0], 1, 1, 2);
    case C_SLICE_SET_: {
        wk_tensor *y = wk_copy(in[0]); /* a tracked non-leaf */
        if (wk_slice_set(y, wk_sqr(in[1]), 0, 1) != WK_OK) return NULL;
        return y;
    }
    case C_COPY_: {
        wk_tensor *z = wk_mul(wk_affine(in[0], 2.0, 0.0), in[0]);
        wk_tensor *y = wk_affine(in[0], 2.0, 0.0); /* a tracked non-leaf, wholly overwritten */
        if (wk_copy_(y, wk_sqr(in[1])) != WK_OK) return NULL;
        return wk_add(z, y);
    }
    case C_SCATTER_: {
        wk_tensor *y = wk_copy(in[0]);
        if (wk_scatter_(y, in[2], wk_sqr(in[1]), 0) != WK_OK) return NULL;
        return y;
    }
    case C_SCATTER_ADD_: {
        wk_tensor *y = wk_copy(in[0]);
        if (wk_scatter_add_(y, in[2], wk_sqr(in[1]), -1) != WK_OK) return NULL;
        return y;
    }
    case C_SLICE_ASSIGN_: {
        /* dst untracked: zeros; it becomes tracked through src */
        wk_tensor *y = wk_zeros(wk_shape(in[0]), wk_rank(in[0]), WK_F64, wk_cpu());
        if (wk_slice_assign_(y, (int64_t[]){1, 0}, (int64_t[]){4, 6}, (int64_t[]){2, 3}, 2, wk_sqr(in[1])) != WK_OK)
            return NULL;
        return wk_add(y, in[0]);
    }
    case C_ONE: return wk_gather(wk_cat((wk_tensor *[]){in[0], in[0]}, 2, 0), in[1], 1);
    }
    return NULL;
}

static wk_tensor *f_case(wk_tensor *const *in, int nin, void *ctx) {
    (void)nin;
    return wk_sqr(core(*(int *)ctx, in)); /* squared: the rules run again under create_graph */
}

/* Case w's inputs (f64 values; ids as integers); returns the count. */
static int inputs(int w, wk_tensor **in) {
    switch (w) {
    case C_CAT:
        in[0] = TU_OK(wk_t(vals((int64_t[]){3, 2}, 2, 1.0, 0.1)));                           /* (2, 3) strided */
        in[1] = vals((int64_t[]){2, 0}, 2, 1.0, 0.0);                                        /* empty */
        in[2] = TU_OK(wk_broadcast_as(vals((int64_t[]){1, 4}, 2, 0.5, 0.2), (int64_t[]){2, 4}, 2)); /* stride 0 */
        return 3;
    case C_STACK0:
        in[0] = vals(NULL, 0, 1.0, 0.3);
        in[1] = vals(NULL, 0, 1.0, -0.7);
        return 2;
    case C_STACK:
        in[0] = TU_OK(wk_t(vals((int64_t[]){3, 2}, 2, 1.0, 0.1)));
        in[1] = vals((int64_t[]){2, 3}, 2, 0.8, -0.2);
        return 2;
    case C_INDEX_SELECT:
        in[0] = TU_OK(wk_t(vals((int64_t[]){4, 3}, 2, 1.0, 0.1)));
        in[1] = ids_of((int64_t[]){2, 0, 2, 1, 2}, (int64_t[]){5}, 1, WK_I64);
        return 2;
    case C_INDEX_SELECT0:
        in[0] = vals((int64_t[]){3, 2}, 2, 1.0, 0.1);
        in[1] = ids_of((int64_t[]){1}, NULL, 0, WK_U32);
        return 2;
    case C_EMBEDDING:
        in[0] = vals((int64_t[]){5, 4}, 2, 1.0, 0.1);
        in[1] = ids_of((int64_t[]){4, 0, 4, 2, 0, 4}, (int64_t[]){2, 3}, 2, WK_I32);
        return 2;
    case C_GATHER:
        in[0] = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
        in[1] = ids_of((int64_t[]){3, 0, 3, 3, 1, 0}, (int64_t[]){2, 3}, 2, WK_I64);
        return 2;
    case C_SCATTER: /* positions unique per column: the set is well defined */
        in[0] = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
        in[1] = vals((int64_t[]){3, 4}, 2, 0.7, -0.3); /* larger than ids */
        in[2] = ids_of((int64_t[]){3, 0, 2, 1, 2, 0}, (int64_t[]){2, 3}, 2, WK_I64);
        return 3;
    case C_SCATTER_ADD:
        in[0] = TU_OK(wk_t(vals((int64_t[]){4, 3}, 2, 1.0, 0.1))); /* (3, 4) */
        in[1] = vals((int64_t[]){2, 5}, 2, 0.7, -0.3);
        in[2] = ids_of((int64_t[]){3, 3, 0, 1, 1, 1}, (int64_t[]){2, 3}, 2, WK_I64);
        return 3;
    case C_INDEX_ADD:
        in[0] = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
        in[1] = TU_OK(wk_t(vals((int64_t[]){3, 3}, 2, 0.7, -0.3)));
        in[2] = ids_of((int64_t[]){1, 3, 1}, (int64_t[]){3}, 1, WK_I32);
        return 3;
    case C_SLICE_SCATTER:
        in[0] = vals((int64_t[]){3, 5}, 2, 1.0, 0.1);
        in[1] = TU_OK(wk_t(vals((int64_t[]){2, 3}, 2, 0.7, -0.3)));
        return 2;
    case C_SLICE_ASSIGN:
    case C_SLICE_ASSIGN_:
        in[0] = vals((int64_t[]){4, 6}, 2, 1.0, 0.1);
        in[1] = vals((int64_t[]){2}, 1, 0.7, -0.3); /* broadcast over the slice's 2 rows */
        return 2;
    case C_MASKED_FILL:
        in[0] = TU_OK(wk_t(vals((int64_t[]){4, 3}, 2, 1.0, 0.1)));
        in[1] = ids_of((int64_t[]){1, 0, 0, 1}, (int64_t[]){4}, 1, WK_U8);
        return 2;
    case C_FLIP: in[0] = vals((int64_t[]){2, 3, 4}, 3, 1.0, 0.1); return 1;
    case C_ROLL: in[0] = TU_OK(wk_t(vals((int64_t[]){5, 3}, 2, 1.0, 0.1))); return 1;
    case C_REPEAT: in[0] = TU_OK(wk_t(vals((int64_t[]){3, 2}, 2, 1.0, 0.1))); return 1;
    case C_REPEAT0: in[0] = vals(NULL, 0, 1.0, 0.4); return 1;
    case C_PAD_ZEROS: in[0] = TU_OK(wk_t(vals((int64_t[]){4, 3}, 2, 1.0, 0.1))); return 1;
    case C_PAD_SAME: in[0] = vals((int64_t[]){2, 3}, 2, 1.0, 0.1); return 1;
    case C_MESHGRID:
        in[0] = vals((int64_t[]){3}, 1, 1.0, 0.1);
        in[1] = TU_OK(wk_narrow(vals((int64_t[]){4}, 1, 1.0, -0.2), 0, 1, 2));
        in[2] = vals(NULL, 0, 1.0, 0.5);
        return 3;
    case C_VIEWS: in[0] = vals((int64_t[]){4, 6}, 2, 1.0, 0.1); return 1;
    case C_NARROW: in[0] = vals((int64_t[]){2, 4}, 2, 1.0, 0.1); return 1;
    case C_SLICE_SET_:
        in[0] = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
        in[1] = TU_OK(wk_t(vals((int64_t[]){3, 2}, 2, 0.7, -0.3)));
        return 2;
    case C_COPY_:
        in[0] = vals((int64_t[]){2, 3}, 2, 1.0, 0.1);
        in[1] = TU_OK(wk_broadcast_as(vals((int64_t[]){3}, 1, 0.7, -0.3), (int64_t[]){2, 3}, 2));
        return 2;
    case C_SCATTER_:
    case C_SCATTER_ADD_:
        return inputs(w == C_SCATTER_ ? C_SCATTER : C_SCATTER_ADD, in);
    case C_ONE:
        in[0] = vals((int64_t[]){1, 1}, 2, 1.0, 0.6);
        in[1] = ids_of((int64_t[]){0, 0}, (int64_t[]){2, 1}, 2, WK_I64);
        return 2;
    }
    return 0;
}

static void test_rules_fd(void **state) {
    (void)state;
    for (int w = 0; w < C_COUNT; w++) {
        wk_scope_begin();
        wk_tensor *in[4] = {0};
        int nin = inputs(w, in);
        gc_opts o = {.second_order = true};
        gc_check(k_case[w], f_case, &w, in, nin, &o);
        wk_scope_end();
    }
}

/* The rules on a stride-0 gradient (sum_all's backward broadcasts one
 * element): the same gradients as from a contiguous grad_output of ones. */
static void test_broadcast_gradient(void **state) {
    (void)state;
    for (int w = 0; w < C_COUNT; w++) {
        wk_scope_begin();
        wk_tensor *in[4] = {0}, *xs[4], *ga[4], *gb[4];
        int nin = inputs(w, in), nx = 0;
        for (int i = 0; i < nin; i++)
            if (wk_dtype_is_float(wk_tensor_dtype(in[i]))) {
                TU_STATUS_OK(wk_requires_grad(in[i], true));
                xs[nx++] = in[i];
            }
        wk_tensor *y = TU_OK(core(w, in));
        TU_STATUS_OK(wk_grad_of(wk_sum_all(y), xs, nx, NULL, ga));
        wk_tensor *y2 = TU_OK(core(w, in));
        wk_backward_opts o = {.grad_output = TU_OK(wk_ones_like(y2))};
        TU_STATUS_OK(wk_grad_of(y2, xs, nx, &o, gb));
        for (int i = 0; i < nx; i++) {
            if (tu_max_abs_diff(ga[i], gb[i]) != 0.0) fail_msg("%s: input %d differs", k_case[w], i);
            wk_tensor_free(ga[i]);
            wk_tensor_free(gb[i]);
        }
        wk_scope_end();
    }
}

/* An empty repeat, a zero-length index list and an empty cat: zero
 * gradients of the right shape, no error. */
static void test_empty(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = vals((int64_t[]){2, 3}, 2, 1.0, 0.1);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *none = TU_OK(wk_zeros((int64_t[]){0}, 1, WK_I64, wk_cpu()));
    wk_tensor *parts[4] = {
        TU_OK(wk_repeat(x, (int64_t[]){0, 2}, 2)),
        TU_OK(wk_index_select(x, none, 1)),
        TU_OK(wk_narrow(x, 0, 1, 0)),
        TU_OK(wk_pad_with_zeros(TU_OK(wk_narrow(x, 1, 0, 0)), 1, 0, 0)),
    };
    for (int i = 0; i < 4; i++) {
        assert_true(wk_is_tracked(parts[i]));
        assert_int_equal(wk_numel(parts[i]), 0);
    }
    wk_tensor *l = TU_OK(wk_add(wk_add(wk_sum_all(parts[0]), wk_sum_all(parts[1])),
                                wk_add(wk_sum_all(parts[2]), wk_sum_all(parts[3]))));
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(l, gs, NULL));
    wk_tensor *g = wk_grad(gs, x);
    assert_non_null(g);
    tu_assert_shape(g, (int64_t[]){2, 3}, 2);
    double v[6];
    TU_STATUS_OK(wk_to_host_f64(g, v, 6));
    for (int i = 0; i < 6; i++) assert_true(v[i] == 0.0);
    wk_grad_store_free(gs);
    wk_scope_end();
}

/* Which node each op records: its own rule, or (composites) its parts'. */
static void test_recording(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = vals((int64_t[]){3, 4}, 2, 1.0, 0.1);
    wk_tensor *ids = ids_of((int64_t[]){2, 0}, (int64_t[]){2}, 1, WK_I64);
    wk_tensor *m = ids_of((int64_t[]){1, 0, 1, 0}, (int64_t[]){4}, 1, WK_U8);
    /* untracked inputs: nothing recorded */
    assert_false(wk_is_tracked(wk_cat((wk_tensor *[]){x, x}, 2, 0)));
    assert_false(wk_is_tracked(wk_pad_with_zeros(x, 0, 1, 1)));
    TU_STATUS_OK(wk_requires_grad(x, true));
    struct {
        wk_tensor *t;
        const char *fn;
    } k[] = {
        {wk_cat((wk_tensor *[]){x, x}, 2, 0), "wk_cat"},
        {wk_stack((wk_tensor *[]){x, x}, 2, 1), "wk_cat"},
        {wk_pad_with_zeros(x, 1, 1, 2), "wk_pad_with_zeros"},
        {wk_pad_with_same(x, 1, 1, 2), "wk_cat"},
        {wk_roll(x, 1, 0), "wk_cat"},
        {wk_repeat(x, (int64_t[]){2, 1}, 2), "wk_repeat"},
        {wk_index_select(x, ids, 0), "wk_index_select"},
        {wk_embedding(ids, x), "wk_reshape"},
        {wk_flip(x, (int[]){1}, 1), "wk_index_select"},
        {wk_masked_fill(x, m, 1.0), "wk_where"},
        {wk_gather(x, ids_of((int64_t[]){1, 2}, (int64_t[]){1, 2}, 2, WK_I64), 1), "wk_gather"},
        {wk_slice_scatter(x, x, 0, 0), "wk_slice_scatter"},
        {wk_index_add(x, ids, wk_narrow(x, 0, 0, 2), 0), "wk_index_add"},
        {wk_scatter_add(x, ids_of((int64_t[]){1}, (int64_t[]){1, 1}, 2, WK_I64), x, 0), "wk_scatter_add"},
        {wk_slice_assign(x, (int64_t[]){0}, (int64_t[]){2}, NULL, 1, x), NULL}, /* shape error */
    };
    for (size_t i = 0; i + 1 < sizeof k / sizeof *k; i++) {
        assert_non_null(k[i].t);
        assert_string_equal(wk_grad_fn_name(k[i].t), k[i].fn);
    }
    assert_null(k[sizeof k / sizeof *k - 1].t);
    wk_clear_error();
    /* integer results stay untracked; ids never get an edge */
    assert_false(wk_is_tracked(wk_index_select(ids, ids, 0)));
    wk_scope_end();
}

/* ------------------------------------------------------ in-place rebase */

static double at(const wk_tensor *t, int64_t i, int64_t j) {
    double v;
    TU_STATUS_OK(wk_get(t, (int64_t[]){i, j}, &v));
    return v;
}

static void test_rebase_slice_set(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = vals((int64_t[]){2, 3}, 2, 1.0, 0.1);
    TU_STATUS_OK(wk_requires_grad(x, true));
    /* y = zeros (untracked); y[1:3] = x makes y tracked */
    wk_tensor *y = TU_OK(wk_zeros((int64_t[]){4, 3}, 2, WK_F64, wk_cpu()));
    TU_STATUS_OK(wk_slice_set(y, x, 0, 1));
    assert_true(wk_is_tracked(y));
    assert_false(wk_is_leaf(y));
    assert_string_equal(wk_grad_fn_name(y), "wk_slice_set");
    wk_tensor *w = vals((int64_t[]){4, 3}, 2, 1.0, 2.0);
    wk_grad_store *gs = wk_grad_store_new();
    TU_STATUS_OK(wk_backward(wk_sum_all(wk_mul(y, w)), gs, NULL));
    wk_tensor *gx = wk_grad(gs, x);
    assert_non_null(gx);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) assert_true(at(gx, i, j) == at(w, i + 1, j));
    wk_grad_store_zero(gs);

    /* a tracked non-leaf dst: its old value gets the gradient outside the region */
    wk_tensor *a = vals((int64_t[]){4, 3}, 2, 1.0, -0.4);
    TU_STATUS_OK(wk_requires_grad(a, true));
    wk_tensor *z = TU_OK(wk_affine(a, 3.0, 0.0));
    wk_tensor *before = TU_OK(wk_narrow(z, 0, 0, 2)); /* a view made before the write */
    TU_STATUS_OK(wk_slice_set(z, x, 0, 2));
    /* the documented limit: another tensor viewing the storage keeps its node */
    assert_string_equal(wk_grad_fn_name(before), "wk_narrow");
    TU_STATUS_OK(wk_backward(wk_sum_all(wk_mul(z, w)), gs, NULL));
    wk_tensor *ga = wk_grad(gs, a);
    gx = wk_grad(gs, x);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            assert_true(at(ga, i, j) == (i >= 2 ? 0.0 : 3.0 * at(w, i, j)));
            if (i < 2) assert_true(at(gx, i, j) == at(w, i + 2, j));
        }
    /* the values: z holds x in rows 2..3 */
    assert_true(at(z, 3, 1) == at(x, 1, 1));
    wk_grad_store_free(gs);
    wk_scope_end();
}

static void test_rebase_leaf_refused(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *leaf = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
    wk_tensor *x = vals((int64_t[]){2, 3}, 2, 1.0, 0.5);
    wk_tensor *xl = vals((int64_t[]){4, 3}, 2, 1.0, 0.5);
    TU_STATUS_OK(wk_requires_grad(leaf, true));
    wk_tensor *ids = ids_of((int64_t[]){0, 1, 2}, (int64_t[]){1, 3}, 2, WK_I64);
    TU_STATUS_OK(wk_requires_grad(x, true)); /* a tracked src does not make it allowed */
    wk_status st[] = {
        wk_slice_set(leaf, x, 0, 0),
        wk_copy_(leaf, xl),
        wk_scatter_(leaf, ids, x, 0),
        wk_scatter_add_(leaf, ids, x, 0),
        wk_slice_assign_(leaf, (int64_t[]){0}, (int64_t[]){2}, NULL, 1, x),
        wk_slice_assign_(leaf, (int64_t[]){0}, (int64_t[]){2}, NULL, 1, wk_detach(x)),
        wk_fill_(leaf, 1.0),
    };
    for (size_t i = 0; i < sizeof st / sizeof *st; i++) {
        assert_int_equal(st[i], WK_ERR_ARG);
    }
    assert_non_null(strstr(wk_last_error(), "leaf"));
    wk_clear_error();
    /* nothing was written, and the leaf is still a leaf */
    assert_true(wk_is_leaf(leaf));
    wk_tensor *fresh = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
    assert_true(tu_max_abs_diff(leaf, fresh) == 0.0);
    /* in a no-grad region the write is allowed (optimizers) and records nothing */
    wk_no_grad_begin();
    TU_STATUS_OK(wk_slice_set(leaf, x, 0, 0));
    wk_no_grad_end();
    assert_true(wk_is_leaf(leaf));
    wk_scope_end();
}

/* The KV cache's pattern: untracked writes into an untracked cache stay
 * untracked (the fast path), also with a tracked src inside no-grad. */
static void test_kv_cache_untracked(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *cache = TU_OK(wk_zeros((int64_t[]){2, 8, 4}, 3, WK_F32, wk_cpu()));
    for (int pos = 0; pos < 8; pos++) {
        wk_tensor *k = TU_OK(tu_values((int64_t[]){2, 1, 4}, 3, WK_F32, 1.0, (double)pos));
        TU_STATUS_OK(wk_slice_set(cache, k, 1, pos));
        assert_false(wk_is_tracked(cache));
    }
    double v;
    TU_STATUS_OK(wk_get(cache, (int64_t[]){1, 5, 2}, &v));
    wk_tensor *k5 = TU_OK(tu_values((int64_t[]){2, 1, 4}, 3, WK_F32, 1.0, 5.0));
    double want;
    TU_STATUS_OK(wk_get(k5, (int64_t[]){1, 0, 2}, &want));
    assert_true(v == want);
    wk_tensor *kt = TU_OK(tu_values((int64_t[]){2, 1, 4}, 3, WK_F32, 1.0, 0.0));
    TU_STATUS_OK(wk_requires_grad(kt, true));
    wk_no_grad_begin();
    TU_STATUS_OK(wk_slice_set(cache, kt, 1, 3));
    TU_STATUS_OK(wk_copy_(wk_narrow(cache, 1, 0, 1), kt));
    wk_no_grad_end();
    assert_false(wk_is_tracked(cache));
    wk_scope_end();
}

/* A value saved for a backward, then overwritten in place: backward refuses
 * (PyTorch's version counter) rather than give a wrong gradient. */
static void test_rebase_saved_value_written(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = vals((int64_t[]){3, 2}, 2, 1.0, 0.1);
    wk_tensor *s = vals((int64_t[]){1, 2}, 2, 1.0, 0.3);
    TU_STATUS_OK(wk_requires_grad(x, true));
    wk_tensor *y = TU_OK(wk_exp(x)); /* saves its output */
    TU_STATUS_OK(wk_slice_set(y, s, 0, 1));
    wk_grad_store *gs = wk_grad_store_new();
    assert_int_equal(wk_backward(wk_sum_all(y), gs, NULL), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "modified in place"));
    wk_clear_error();
    wk_grad_store_zero(gs);
    /* a rule that saves nothing of dst (affine): fine */
    wk_tensor *z = TU_OK(wk_affine(x, 2.0, 1.0));
    TU_STATUS_OK(wk_slice_set(z, s, 0, 1));
    TU_STATUS_OK(wk_backward(wk_sum_all(z), gs, NULL));
    double g[6];
    TU_STATUS_OK(wk_to_host_f64(wk_grad(gs, x), g, 6));
    for (int i = 0; i < 6; i++) assert_true(g[i] == (i / 2 == 1 ? 0.0 : 2.0));
    wk_grad_store_free(gs);
    wk_scope_end();
}

/* In-place rebase of each write, against the out-of-place form's gradient. */
static void test_rebase_matches_out_of_place(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *t = vals((int64_t[]){4, 3}, 2, 1.0, 0.1);
    wk_tensor *src = vals((int64_t[]){3, 4}, 2, 0.7, -0.3);
    wk_tensor *ids = ids_of((int64_t[]){3, 0, 2, 1, 2, 0}, (int64_t[]){2, 3}, 2, WK_I64);
    wk_tensor *w = vals((int64_t[]){4, 3}, 2, 1.0, 1.5);
    TU_STATUS_OK(wk_requires_grad(t, true));
    TU_STATUS_OK(wk_requires_grad(src, true));
    for (int add = 0; add < 2; add++) {
        wk_tensor *out = TU_OK(add ? wk_scatter_add(t, ids, src, 0) : wk_scatter(t, ids, src, 0));
        wk_tensor *in = TU_OK(wk_affine(t, 1.0, 0.0));
        TU_STATUS_OK(add ? wk_scatter_add_(in, ids, src, 0) : wk_scatter_(in, ids, src, 0));
        assert_string_equal(wk_grad_fn_name(in), add ? "wk_scatter_add_" : "wk_scatter_");
        assert_true(tu_max_abs_diff(out, in) == 0.0);
        wk_grad_store *g1 = wk_grad_store_new(), *g2 = wk_grad_store_new();
        TU_STATUS_OK(wk_backward(wk_sum_all(wk_mul(out, w)), g1, NULL));
        TU_STATUS_OK(wk_backward(wk_sum_all(wk_mul(in, w)), g2, NULL));
        assert_true(tu_max_abs_diff(wk_grad(g1, t), wk_grad(g2, t)) == 0.0);
        assert_true(tu_max_abs_diff(wk_grad(g1, src), wk_grad(g2, src)) == 0.0);
        wk_grad_store_free(g1);
        wk_grad_store_free(g2);
    }
    wk_scope_end();
}

/* ------------------------------------------------------ PyTorch's gradients */

static wk_dtype dtype_of(const char *s) {
    if (!strcmp(s, "f64")) return WK_F64;
    if (!strcmp(s, "f32")) return WK_F32;
    if (!strcmp(s, "f16")) return WK_F16;
    return WK_BF16;
}

static double tol_of(wk_dtype dt) {
    switch (dt) {
    case WK_F64: return 1e-12;
    case WK_F32: return 2e-6;
    case WK_F16: return 4e-3;
    default: return 3e-2;
    }
}

static long long pi(const char *params, const char *key) {
    char v[64];
    assert_true(ou_param(params, key, v, sizeof v));
    return atoll(v);
}
static int plist(const char *params, const char *key, long long *out) {
    char v[128];
    assert_true(ou_param(params, key, v, sizeof v));
    return ou_parse_ints(v, '|', out, 8);
}

/* Runs op on x (the inputs after views / dtype). */
static wk_tensor *torch_case(const char *op, const char *p, wk_tensor *const *x, int nx) {
    long long a[8], b[8], c[8];
    if (!strcmp(op, "cat")) return wk_cat(x, nx, (int)pi(p, "dim"));
    if (!strcmp(op, "stack")) return wk_stack(x, nx, (int)pi(p, "dim"));
    if (!strcmp(op, "index_select")) return wk_index_select(x[0], x[1], (int)pi(p, "dim"));
    if (!strcmp(op, "embedding")) return wk_embedding(x[1], x[0]);
    if (!strcmp(op, "gather")) return wk_gather(x[0], x[1], (int)pi(p, "dim"));
    if (!strcmp(op, "scatter")) return wk_scatter(x[0], x[1], x[2], (int)pi(p, "dim"));
    if (!strcmp(op, "scatter_add")) return wk_scatter_add(x[0], x[1], x[2], (int)pi(p, "dim"));
    if (!strcmp(op, "index_add")) return wk_index_add(x[0], x[1], x[2], (int)pi(p, "dim"));
    if (!strcmp(op, "slice_scatter")) return wk_slice_scatter(x[0], x[1], (int)pi(p, "dim"), pi(p, "start"));
    if (!strcmp(op, "masked_fill")) {
        char v[64];
        assert_true(ou_param(p, "value", v, sizeof v));
        return wk_masked_fill(x[0], x[1], atof(v));
    }
    if (!strcmp(op, "flip")) {
        int n = plist(p, "dims", a), d[8];
        for (int i = 0; i < n; i++) d[i] = (int)a[i];
        return wk_flip(x[0], d, n);
    }
    if (!strcmp(op, "roll")) return wk_roll(x[0], pi(p, "shift"), (int)pi(p, "dim"));
    if (!strcmp(op, "repeat")) {
        int n = plist(p, "reps", a);
        int64_t r[8];
        for (int i = 0; i < n; i++) r[i] = a[i];
        return wk_repeat(x[0], r, n);
    }
    if (!strcmp(op, "pad_zeros")) return wk_pad_with_zeros(x[0], (int)pi(p, "dim"), pi(p, "left"), pi(p, "right"));
    if (!strcmp(op, "pad_same")) return wk_pad_with_same(x[0], (int)pi(p, "dim"), pi(p, "left"), pi(p, "right"));
    if (!strcmp(op, "meshgrid")) {
        wk_tensor *o[8];
        if (wk_meshgrid(x, nx, pi(p, "xy") ? WK_MESHGRID_XY : WK_MESHGRID_IJ, o) != WK_OK) return NULL;
        return wk_stack(o, nx, 0);
    }
    bool sa = !strcmp(op, "slice_assign") || !strcmp(op, "slice_assign_");
    if (sa) {
        int n = plist(p, "starts", a);
        plist(p, "ends", b);
        plist(p, "steps", c);
        int64_t s[8], e[8], k[8];
        for (int i = 0; i < n; i++) s[i] = a[i], e[i] = b[i], k[i] = c[i];
        if (!strcmp(op, "slice_assign")) return wk_slice_assign(x[0], s, e, k, n, x[1]);
        wk_tensor *y = wk_copy(x[0]);
        return y && wk_slice_assign_(y, s, e, k, n, x[1]) == WK_OK ? y : NULL;
    }
    /* the in-place writes into a tracked copy of input 0 */
    wk_tensor *y = wk_copy(x[0]);
    if (!y) return NULL;
    wk_status st = WK_ERR_ARG;
    if (!strcmp(op, "slice_set")) st = wk_slice_set(y, x[1], (int)pi(p, "dim"), pi(p, "start"));
    else if (!strcmp(op, "copy_")) st = wk_copy_(y, x[1]);
    else if (!strcmp(op, "scatter_")) st = wk_scatter_(y, x[1], x[2], (int)pi(p, "dim"));
    else if (!strcmp(op, "scatter_add_")) st = wk_scatter_add_(y, x[1], x[2], (int)pi(p, "dim"));
    else fail_msg("unknown op %s", op);
    return st == WK_OK ? y : NULL;
}

static int g_torch_cases;

/* id op dtype params inputs grad_output grads: inputs ','-joined
 * FILE[@VIEW][#DTYPE]; grads ','-joined, one per input ('-' for the
 * integer ones). */
static void torch_line(char *line) {
    char id[32], op[32], dts[8], params[256], ins[512], gos[64], grads[512];
    assert_int_equal(sscanf(line, "%31s %31s %7s %255s %511s %63s %511s", id, op, dts, params, ins, gos, grads), 7);
    char dir[1024];
    assert_true(ou_dir("grad_shape", dir, sizeof dir));
    wk_dtype dt = dtype_of(dts);
    wk_scope_begin();
    wk_tensor *x[8];
    int nx = 0;
    char why[256];
    bool nc = false;
    for (char *tok = strtok(ins, ","); tok; tok = strtok(NULL, ",")) {
        assert_true(nx < 8);
        x[nx] = ou_load_input(dir, tok, dt, &nc, why, sizeof why);
        if (!x[nx]) fail_msg("%s: input %s: %s", id, tok, why);
        if (wk_dtype_is_float(wk_tensor_dtype(x[nx]))) TU_STATUS_OK(wk_requires_grad(x[nx], true));
        nx++;
    }
    wk_tensor *y = torch_case(op, params, x, nx);
    if (!y) fail_msg("%s %s %s: %s", id, op, dts, wk_last_error());
    wk_tensor *go = ou_load_input(dir, gos, dt, &nc, why, sizeof why);
    if (!go) fail_msg("%s: grad_output: %s", id, why);
    wk_grad_store *gs = wk_grad_store_new();
    wk_backward_opts o = {.grad_output = go};
    if (wk_backward(y, gs, &o) != WK_OK) fail_msg("%s %s %s: backward: %s", id, op, dts, wk_last_error());
    int k = 0;
    char msg[512];
    for (char *tok = strtok(grads, ","); tok; tok = strtok(NULL, ","), k++) {
        assert_true(k < nx);
        if (!strcmp(tok, "-")) continue;
        wk_tensor *g = wk_grad(gs, x[k]);
        if (!g) fail_msg("%s %s %s: no gradient for input %d", id, op, dts, k);
        if (wk_tensor_dtype(g) != dt) fail_msg("%s: gradient %d has dtype %s", id, k, wk_dtype_name(wk_tensor_dtype(g)));
        const char *bad = ou_compare_file(g, dir, tok, tol_of(dt), false, msg, sizeof msg);
        if (bad) fail_msg("%s %s %s: gradient of input %d: %s", id, op, dts, k, bad);
    }
    wk_grad_store_free(gs);
    wk_scope_end();
    g_torch_cases++;
}

static void test_torch_oracle(void **state) {
    (void)state;
    char dir[1024];
    if (!ou_dir("grad_shape", dir, sizeof dir)) {
        print_message("WICK_ORACLE_DIR is not set: run through ctest (gen_grad_shape.py is its fixture)\n");
        skip();
    }
    char path[1100];
    FILE *f = ou_open_manifest(dir, path, sizeof path);
    if (!f) fail_msg("cannot open %s (tests/oracle/gen_grad_shape.py writes it)", path);
    char line[2048];
    while (ou_next_line(f, line, sizeof line)) torch_line(line);
    fclose(f);
    print_message("torch oracle: %d cases\n", g_torch_cases);
    assert_true(g_torch_cases >= 60);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_fd),
        cmocka_unit_test(test_broadcast_gradient),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_recording),
        cmocka_unit_test(test_rebase_slice_set),
        cmocka_unit_test(test_rebase_leaf_refused),
        cmocka_unit_test(test_kv_cache_untracked),
        cmocka_unit_test(test_rebase_saved_value_written),
        cmocka_unit_test(test_rebase_matches_out_of_place),
        cmocka_unit_test(test_torch_oracle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
