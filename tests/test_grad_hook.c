/* wk_backward_opts.on_grad_ready and wk_grad_key: called once per stored
 * gradient (each leaf), in an order fixed by the graph, with the gradient
 * already final; a failing hook stops the pass with its status. */
#include "testutil.h"
#include "base/error.h"
#include <string.h>

typedef struct rec {
    const void *keys[16];
    double seen[16];       /* wk_grad(gs, leaf)'s first element at call time */
    const wk_tensor *leaves[4];
    int n, fail_at;
} rec;

static wk_status hook(void *ctx, wk_grad_store *gs, const void *key) {
    rec *r = ctx;
    if (r->n == r->fail_at) return wk__err(WK_ERR_ARG, "test_hook", "refused on purpose");
    r->seen[r->n] = -1;
    for (int i = 0; i < 4; i++)
        if (r->leaves[i] && wk_grad_key(r->leaves[i]) == key) {
            double v;
            wk_tensor *g = wk_grad(gs, r->leaves[i]);
            assert_non_null(g);
            wk_tensor *f = wk_flatten_all(g);
            TU_STATUS_OK(wk_item(wk_narrow(f, 0, 0, 1), &v));
            wk_tensor_free(f);
            r->seen[r->n] = v;
        }
    r->keys[r->n++] = key;
    return WK_OK;
}

/* L = sum((a * b) @ c) + sum(a): a reaches the loss twice, so its
 * gradient is only final after both paths ran. */
static wk_tensor *graph(wk_tensor **a, wk_tensor **b, wk_tensor **c) {
    int64_t s[2] = {2, 3}, sc[2] = {3, 2};
    *a = TU_OK(tu_values(s, 2, WK_F64, 1.0, 0.5));
    *b = TU_OK(tu_values(s, 2, WK_F64, 0.5, -0.25));
    *c = TU_OK(tu_values(sc, 2, WK_F64, 2.0, 0.125));
    TU_STATUS_OK(wk_requires_grad(*a, true));
    TU_STATUS_OK(wk_requires_grad(*b, true));
    TU_STATUS_OK(wk_requires_grad(*c, true));
    return TU_OK(wk_add(wk_sum_all(wk_matmul(wk_mul(*a, *b), *c)), wk_sum_all(*a)));
}

static void test_hook_calls(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *a, *b, *c;
    const void *first_order[3];
    for (int run = 0; run < 2; run++) {
        wk_tensor *l = graph(&a, &b, &c);
        assert_null(wk_grad_key(TU_OK(wk_zeros((int64_t[]){2}, 1, WK_F64, wk_cpu()))));
        assert_true(wk_grad_key(a) != NULL && wk_grad_key(a) != wk_grad_key(b));
        rec r = {.leaves = {a, b, c}, .fail_at = -1};
        wk_grad_store *gs = wk_grad_store_new();
        wk_backward_opts o = {.on_grad_ready = hook, .on_grad_ready_ctx = &r};
        TU_STATUS_OK(wk_backward(l, gs, &o));
        /* once per leaf, nothing else (no intermediate is stored) */
        assert_int_equal(r.n, 3);
        int hits[3] = {0};
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 3; i++) hits[i] += r.keys[k] == wk_grad_key(r.leaves[i]);
        assert_int_equal(hits[0], 1);
        assert_int_equal(hits[1], 1);
        assert_int_equal(hits[2], 1);
        /* final at call time: what the store holds after the pass */
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 3; i++)
                if (r.keys[k] == wk_grad_key(r.leaves[i])) {
                    double v;
                    wk_tensor *f = wk_flatten_all(wk_grad(gs, r.leaves[i]));
                    TU_STATUS_OK(wk_item(wk_narrow(f, 0, 0, 1), &v));
                    assert_true(v == r.seen[k]);
                }
        /* deterministic: the same graph built again gives the same order */
        for (int k = 0; k < 3; k++) {
            int idx = -1;
            for (int i = 0; i < 3; i++)
                if (r.keys[k] == wk_grad_key(r.leaves[i])) idx = i;
            if (run == 0) first_order[k] = (const void *)(intptr_t)idx;
            else assert_true(first_order[k] == (const void *)(intptr_t)idx);
        }
        wk_grad_store_free(gs);
    }
    wk_scope_end();
}

static void test_hook_all_grads_and_error(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *a, *b, *c;
    wk_tensor *l = graph(&a, &b, &c);
    rec r = {.leaves = {a, b, c}, .fail_at = -1};
    wk_grad_store *gs = wk_grad_store_new();
    wk_backward_opts o = {.keep_graph = true, .all_grads = true, .on_grad_ready = hook, .on_grad_ready_ctx = &r};
    TU_STATUS_OK(wk_backward(l, gs, &o));
    /* every tracked tensor reached: the stored count */
    assert_int_equal(r.n, (int)wk_grad_store_count(gs));
    assert_true(r.n > 3);
    /* a failing hook stops the pass with its status and message */
    wk_grad_store_zero(gs);
    rec f = {.leaves = {a, b, c}, .fail_at = 1};
    o.all_grads = false;
    o.on_grad_ready_ctx = &f;
    assert_int_equal(wk_backward(l, gs, &o), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "refused on purpose"));
    assert_int_equal(f.n, 1);
    /* the hook's store: with a NULL hook nothing is called */
    wk_grad_store_zero(gs);
    o.on_grad_ready = NULL;
    TU_STATUS_OK(wk_backward(l, gs, &o));
    assert_int_equal(wk_grad_store_count(gs), 3);
    wk_grad_store_free(gs);
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hook_calls),
        cmocka_unit_test(test_hook_all_grads_and_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
