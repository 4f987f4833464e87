/* Allocation-failure injection: a small program touching most of wick
 * (creation, views, elementwise and broadcasting ops, reductions, a GEMM
 * that packs, conv2d, cat, index ops, sort, cumsum, casts, .npy and .npz
 * files, nested scopes with wk_keep, 2 pool threads) runs once counting the
 * allocations it makes (K), then once for every N = 1..K with exactly the
 * N-th allocation failing. Each run must stop at the first failing call with
 * WK_ERR_OOM, every call before it having given the same result as the
 * clean run (or, where a kernel has a fallback for its scratch buffer --
 * max_pool2d's and upsample_bilinear2d's row buffers -- run through with
 * every result identical), and leave nothing behind: the CPU allocator's bytes_in_use and
 * the count of live host blocks return to what they were (and, in the
 * sanitizer build, LeakSanitizer reports nothing at exit).
 *
 * The wrappers and the loop are tests/alloc_fail.c's (shared with
 * test_alloc_fail_io.c, the model-file and block-dtype paths). */
#include "alloc_fail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the program ---- */

#define BIG AF_BIG

static char g_npy[4096], g_npz[4096];

static void program(af_trace *tr) {
    memset(tr, 0, sizeof *tr);
    wk_device *cpu = wk_cpu();
    wk_tensor *kept = NULL, **arrs = NULL;
    char **names = NULL;
    int count = 0, inner = 0;
    wk_clear_error();
    wk_device_set_seed(cpu, 1234);
    /* a begin that cannot grow the scope stack records WK_ERR_OOM (it
     * returns nothing); its end below still balances it */
    wk_scope_begin();
    S(wk_last_status());
    wk_tensor *a, *r, *v, *e, *x, *ma, *mb, *mm, *cx, *cw, *cy, *c, *ids, *y, *gi, *g, *z, *sc, *sv = NULL, *si = NULL;
    wk_tensor *cs, *h, *big, *bs, *bc, *l, *t1, *t2, *p, *m, *tv = NULL, *ti = NULL, *parts[2] = {0};
    T(a, wk_arange(0, 24, 1, WK_F32, cpu));
    T(a, wk_reshape(a, (int64_t[]){2, 3, 4}, 3));
    T(r, wk_rand((int64_t[]){3, 4}, 2, -1, 1, WK_F32, cpu));
    /* views, then a copy of a strided one */
    T(v, wk_transpose(a, 0, 2));
    T(v, wk_narrow(v, 0, 1, 2));
    T(v, wk_permute(v, (int[]){2, 0, 1}, 3));
    T(v, wk_contiguous(v));
    /* elementwise, broadcasting binary, reduction */
    T(e, wk_exp(r));
    T(e, wk_mul(e, r));
    T(x, wk_add(a, r));
    T(x, wk_sum(x, (int[]){1}, 1, false));
    /* a GEMM that packs B (B a transposed view) on both threads */
    T(ma, wk_rand((int64_t[]){128, 96}, 2, -1, 1, WK_F32, cpu));
    T(mb, wk_rand((int64_t[]){96, 96}, 2, -1, 1, WK_F32, cpu));
    T(mb, wk_t(mb));
    T(mm, wk_matmul(ma, mb));
    T(mm, wk_to_dtype(mm, WK_F16));
    T(mm, wk_matmul(mm, wk_to_dtype(mb, WK_F16))); /* f16: widened copies + f32 scratch */
    T(cx, wk_rand((int64_t[]){1, 3, 12, 12}, 4, -1, 1, WK_F32, cpu));
    T(cw, wk_rand((int64_t[]){4, 3, 3, 3}, 4, -1, 1, WK_F32, cpu));
    T(cy, wk_conv2d(cx, cw, &(wk_conv_params){.padding = 1}));
    T(c, wk_narrow(a, 0, 1, 1));
    T(c, wk_cat((wk_tensor *[]){a, c, a}, 3, 0));
    /* index_select, gather, scatter */
    T(ids, wk_from_host((int64_t[]){3, 0, 1, 1}, 4 * sizeof(int64_t), (int64_t[]){4}, 1, WK_I64, cpu));
    T(y, wk_index_select(a, ids, 2));
    T(gi, wk_narrow(wk_broadcast_as(ids, (int64_t[]){2, 3, 4}, 3), 2, 1, 2));
    T(g, wk_gather(a, gi, 2));
    T(z, wk_zeros((int64_t[]){2, 3, 4}, 3, WK_F32, cpu));
    T(sc, wk_scatter(z, gi, g, 2));
    S(wk_sort(r, -1, false, &sv, &si));
    T(sv, sv);
    T(si, si);
    T(cs, wk_cumsum(a, 1));
    T(h, wk_to_dtype(r, WK_BF16));
    T(h, wk_to_dtype(h, WK_I32));
    /* more of the op surface: pooling, resampling, transposed and 1-d
     * convs, top-k, more reductions, joins, selections, paddings */
    T(p, wk_max_pool2d(cx, 2, 2, 2, 2, 0, 0));
    T(p, wk_avg_pool2d(cx, 3, 3, 1, 1, 1, 1, false));
    T(p, wk_upsample_bilinear2d(cx, 7, 9, false));
    T(p, wk_upsample_nearest2d(cx, 5, 20));
    T(p, wk_conv_transpose2d(cy, wk_narrow(cw, 1, 0, 2), &(wk_conv_params){.stride = 2}));
    T(p, wk_conv1d(wk_reshape(cx, (int64_t[]){1, 3, 144}, 3), wk_reshape(wk_narrow(cw, 3, 0, 1), (int64_t[]){4, 3, 3}, 3),
                   &(wk_conv_params){.dilation = 2}));
    S(wk_topk(wk_reshape(cx, (int64_t[]){3, 144}, 2), 5, 1, true, &tv, &ti));
    T(tv, tv);
    T(ti, ti);
    T(m, wk_var(cx, (int[]){2, 3}, 2, false, true));
    T(m, wk_max(cx, (int[]){1}, 1, true));
    T(m, wk_argmax(cx, -1, false));
    T(m, wk_log_sum_exp(e, (int[]){0}, 1, false));
    T(m, wk_prod(e, (int[]){1}, 1, true));
    S(wk_split(a, (int64_t[]){2, 2}, 2, 2, parts));
    T(m, wk_stack(parts, 2, 1));
    T(m, wk_where(wk_cmp_scalar(a, 10, WK_GT), a, wk_neg(a)));
    T(m, wk_masked_fill(a, wk_cmp(a, wk_full((int64_t[]){4}, 1, 5, WK_F32, cpu), WK_LT), -1));
    T(m, wk_embedding(ids, wk_reshape(a, (int64_t[]){6, 4}, 2)));
    T(m, wk_index_add(a, ids, wk_ones((int64_t[]){2, 3, 4}, 3, WK_F32, cpu), 2));
    T(m, wk_scatter_add(z, gi, g, 2));
    T(m, wk_repeat(r, (int64_t[]){2, 1, 3}, 3));
    T(m, wk_roll(a, -5, 2));
    T(m, wk_pad_with_same(wk_pad_with_zeros(r, 1, 2, 1), 0, 1, 3));
    T(m, wk_matmul(wk_to_dtype(wk_narrow(ma, 0, 0, 1), WK_BF16), wk_to_dtype(mb, WK_BF16))); /* bf16 row x matrix */
    T(m, wk_matmul(wk_to_dtype(ma, WK_BF16), wk_to_dtype(mb, WK_BF16)));
    T(m, wk_matmul(wk_to_dtype(ma, WK_F64), wk_to_dtype(mb, WK_F64)));
    /* a big vector: reduce, scan and sort on the pool */
    T(big, wk_rand((int64_t[]){BIG}, 1, -1, 1, WK_F32, cpu));
    T(bs, wk_sum(big, (int[]){0}, 1, true));
    T(bc, wk_cumsum(big, 0));
    T(bc, wk_argsort(wk_reshape(big, (int64_t[]){64, BIG / 64}, 2), 1, true));
    /* files */
    S(wk_npy_save(g_npy, c));
    T(l, wk_npy_load(g_npy, cpu));
    S(wk_npz_save(g_npz, (const char *const[]){"a", "cy"}, (wk_tensor *const[]){a, cy}, 2));
    S(wk_npz_load(g_npz, cpu, &names, &arrs, &count));
    if (count != 2) {
        af_fail_with(tr, WK_ERR_INTERNAL);
        goto done;
    }
    T(l, arrs[0]);
    T(l, arrs[1]);
    /* a nested scope: one result kept, the rest freed at its end */
    wk_scope_begin();
    inner = 1;
    S(wk_last_status());
    T(t1, wk_mul(a, a));
    T(t2, wk_sub(t1, wk_add(a, a)));
    kept = wk_keep(t2);
    wk_scope_end();
    inner = 0;
    T(kept, kept);
done:
    if (inner) wk_scope_end();
    wk_npz_free(names, arrs, count); /* before the scope ends: it drops the scope's references */
    wk_scope_end();
    wk_tensor_free(kept);
}

static void test_every_allocation_fails_cleanly(void **state) {
    (void)state;
    char dir[] = "/tmp/wick_allocfail_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(g_npy, sizeof g_npy, "%s/t.npy", dir);
    snprintf(g_npz, sizeof g_npz, "%s/t.npz", dir);
    TU_STATUS_OK(wk_set_num_threads(2));
    af_result r = af_fail_each("ops", program);
    assert_true(r.allocs > 50);
    assert_true(r.absorbed <= 4); /* max_pool2d's and upsample_bilinear2d's row buffers, two pieces on two threads */
    assert_true(r.unreached <= r.allocs / 20);
    unlink(g_npy);
    unlink(g_npz);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
