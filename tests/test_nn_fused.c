/* The CPU's fused nn entries against the composites of src/nn/nn.c (the
 * same calls with the entries removed from the backend table), on shapes
 * the oracle suite keeps small: SmolLM2's decode step on a 1000-key cache,
 * a chunked prefill with a mask and permuted q, softmax rows whose max or
 * -inf / +inf values fall in later chunks of the online max. Each at every
 * SIMD level the CPU has; attention also bit-identical over 1, 2 and 3
 * threads. */
#include "testutil.h"
#include "tensor/tensor.h"
#include "cpu/vmath/vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* f(ctx) with the CPU backend's fused entries removed. */
static wk_tensor *composite(wk_tensor *(*f)(void *), void *ctx) {
    wk_device *dev = wk_cpu();
    const wk_backend *saved = dev->be;
    wk_backend plain = *saved;
    plain.softmax = NULL;
    plain.log_softmax = NULL;
    plain.attention = NULL;
    plain.rope = NULL;
    plain.swiglu = NULL;
    dev->be = &plain;
    wk_tensor *r = f(ctx);
    dev->be = saved;
    return r;
}

static bool same_bits(const wk_tensor *a, const wk_tensor *b) {
    size_t n = (size_t)wk_numel(a) * wk_dtype_size(wk_tensor_dtype(a));
    if (wk_numel(a) != wk_numel(b)) return false;
    char *x = malloc(n + 1), *y = malloc(n + 1);
    bool same = x && y && wk_to_host(a, x, n) == WK_OK && wk_to_host(b, y, n) == WK_OK && memcmp(x, y, n) == 0;
    free(x);
    free(y);
    return same;
}

typedef struct att_case {
    wk_tensor *q, *k, *v;
    wk_attention_opts o;
} att_case;
static wk_tensor *run_att(void *p) {
    att_case *c = p;
    return wk_attention(c->q, c->k, c->v, &c->o);
}

/* fused vs composite at every level, and 1 / 2 / 3 threads alike */
static void check_attention(att_case *c, double atol, double rtol) {
    int top = wk__vmath_max_level();
    for (int lv = top; lv >= 0; lv--) {
        if (wk__vmath_set_level(lv) != 0) continue;
        wk_set_num_threads(1);
        wk_tensor *f1 = TU_OK(run_att(c));
        wk_tensor *ref = TU_OK(composite(run_att, c));
        tu_assert_matches("fused attention vs composite", f1, ref, atol, rtol);
        for (int t = 2; t <= 3; t++) {
            wk_set_num_threads(t);
            wk_tensor *ft = TU_OK(run_att(c));
            assert_true(same_bits(f1, ft));
            wk_tensor_free(ft);
        }
        wk_tensor_free(f1);
        wk_tensor_free(ref);
    }
    wk__vmath_set_level(-1);
    wk_set_num_threads(1);
}

/* SmolLM2's decode step: 9 query heads on 3 kv heads of 64, the keys a
 * narrow of a preallocated cache, eight key tiles and a partial one */
static void test_decode_cache(void **state) {
    (void)state;
    int64_t sq[4] = {1, 9, 1, 64}, sc[4] = {1, 3, 1100, 64};
    wk_tensor *cache_k = TU_OK(wk_rand(sc, 4, -1, 1, WK_F32, wk_cpu()));
    wk_tensor *cache_v = TU_OK(wk_rand(sc, 4, -1, 1, WK_F32, wk_cpu()));
    att_case c = {.q = TU_OK(wk_rand(sq, 4, -2, 2, WK_F32, wk_cpu())),
                  .k = TU_OK(wk_narrow(cache_k, 2, 0, 1000)),
                  .v = TU_OK(wk_narrow(cache_v, 2, 0, 1000)),
                  .o = {.causal = true, .q_offset = 999}};
    check_attention(&c, 1e-5, 1e-4);
    /* f16 and bf16 tensors: computed in f32 either way */
    wk_dtype half[2] = {WK_F16, WK_BF16};
    for (int i = 0; i < 2; i++) {
        att_case h = {.q = TU_OK(wk_to_dtype(c.q, half[i])), .k = TU_OK(wk_to_dtype(c.k, half[i])),
                      .v = TU_OK(wk_to_dtype(c.v, half[i])), .o = c.o};
        check_attention(&h, 1e-2, 2e-2);
        wk_tensor_free(h.q);
        wk_tensor_free(h.k);
        wk_tensor_free(h.v);
    }
    wk_tensor_free(c.q);
    wk_tensor_free(c.k);
    wk_tensor_free(c.v);
    wk_tensor_free(cache_k);
    wk_tensor_free(cache_v);
}

/* A prefill chunk after 130 cached positions: q a (B, T, H, D) tensor seen
 * as (B, H, T, D), a (B, 1, Lq, Lk) mask, 40 rows (a partial row tile), GQA 3 */
static void test_chunked_prefill(void **state) {
    (void)state;
    int64_t sq[4] = {2, 40, 6, 80}, sc[4] = {2, 2, 200, 80}, sm[4] = {2, 1, 40, 170};
    wk_tensor *qt = TU_OK(wk_rand(sq, 4, -1, 1, WK_F32, wk_cpu()));
    wk_tensor *ck = TU_OK(wk_rand(sc, 4, -1, 1, WK_F32, wk_cpu()));
    wk_tensor *cv = TU_OK(wk_rand(sc, 4, -1, 1, WK_F32, wk_cpu()));
    wk_tensor *mask = TU_OK(wk_rand(sm, 4, -3, 0, WK_F32, wk_cpu()));
    att_case c = {.q = TU_OK(wk_transpose(qt, 1, 2)),
                  .k = TU_OK(wk_narrow(ck, 2, 0, 170)),
                  .v = TU_OK(wk_narrow(cv, 2, 0, 170)),
                  .o = {.mask = mask, .causal = true, .q_offset = 130, .scale = 0.2}};
    check_attention(&c, 1e-5, 1e-4);
    wk_tensor *t[7] = {qt, ck, cv, mask, c.q, c.k, c.v};
    for (int i = 0; i < 7; i++) wk_tensor_free(t[i]);
}

typedef struct sm_case {
    wk_tensor *x;
    bool logp;
} sm_case;
static wk_tensor *run_sm(void *p) {
    sm_case *c = p;
    return c->logp ? wk_log_softmax(c->x, -1) : wk_softmax(c->x, -1);
}

/* Rows of 700 (three chunks of the online max): the max in the last chunk,
 * the first 300 values -inf, a +inf in the second chunk, only -inf. */
static void test_softmax_chunks(void **state) {
    (void)state;
    enum { N = 700 };
    double *v = malloc(sizeof(double) * 4 * N);
    assert_non_null(v);
    for (int j = 0; j < 4 * N; j++) v[j] = sin(0.37 * j) * 4.0;
    v[0 * N + 650] = 30.0;                                /* a late max */
    for (int j = 0; j < 300; j++) v[1 * N + j] = -INFINITY; /* a -inf run first */
    v[2 * N + 400] = INFINITY;                            /* NaN row, as the composite */
    for (int j = 0; j < N; j++) v[3 * N + j] = -INFINITY; /* NaN row */
    int64_t shape[2] = {4, N};
    wk_dtype dts[2] = {WK_F32, WK_F64};
    for (int di = 0; di < 2; di++) {
        wk_tensor *x = TU_OK(tu_make(v, shape, 2, dts[di]));
        for (int lv = wk__vmath_max_level(); lv >= 0; lv--) {
            if (wk__vmath_set_level(lv) != 0) continue;
            for (int logp = 0; logp < 2; logp++) {
                sm_case c = {x, logp != 0};
                wk_tensor *f = TU_OK(run_sm(&c)), *ref = TU_OK(composite(run_sm, &c));
                tu_assert_matches("fused softmax vs composite", f, ref, 1e-6, 1e-5);
                double out[4 * N];
                TU_STATUS_OK(wk_to_host_f64(f, out, 4 * N));
                assert_true(isnan(out[2 * N]) && isnan(out[3 * N + 5]));
                if (!logp) {
                    assert_true(out[1 * N + 10] == 0.0 && out[0 * N + 650] > 0.99);
                    double s = 0;
                    for (int j = 0; j < N; j++) s += out[1 * N + j];
                    assert_true(fabs(s - 1.0) < 1e-5);
                }
                wk_tensor_free(f);
                wk_tensor_free(ref);
            }
        }
        wk__vmath_set_level(-1);
        wk_tensor_free(x);
    }
    free(v);
}

/* NULL inputs propagate as NULL with the first error kept. */
static void test_null_inputs(void **state) {
    (void)state;
    int64_t s[4] = {1, 1, 2, 4}, st[2] = {2, 2};
    wk_tensor *x = TU_OK(tu_values(s, 4, WK_F32, 1, 0)), *cs = TU_OK(tu_values(st, 2, WK_F32, 1, 0));
    assert_null(wk_swiglu(NULL));
    assert_null(wk_rope_thd(NULL, cs, cs, true));
    assert_null(wk_rope_thd(x, NULL, cs, false));
    assert_null(wk_attention(x, NULL, x, NULL));
    assert_null(wk_attention(NULL, x, x, NULL));
    wk_clear_error();
    wk_tensor_free(x);
    wk_tensor_free(cs);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_decode_cache), cmocka_unit_test(test_chunked_prefill),
                                       cmocka_unit_test(test_softmax_chunks), cmocka_unit_test(test_null_inputs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
