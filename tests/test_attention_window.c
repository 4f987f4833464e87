/* Sliding-window attention and logit soft-capping (wk_attention_opts'
 * window / softcap) beyond the torch oracle cases of gen_nn / gen_grad_nn:
 *   - the fused CPU decode step never reads keys outside its window: the
 *     cache holds NaN there, and the result (at every SIMD level, f32 and
 *     f16) must equal the composite's on a clean cache;
 *   - the fused backward (window + cap, GQA, prefill and decode) against the
 *     composite backward (the backend's entries removed), at every level;
 *   - bad options are errors;
 *   - the layer kit's cached attention (src/nn/layers.h) with rope_skip,
 *     partial rotary (rope_dims), window, softcap and scale against numpy
 *     (tests/oracle/gen_attn_kit.py), prefill then decode steps. */
#include "testutil.h"
#include "oracle_util.h"
#include "tensor/tensor.h"
#include "cpu/vmath/vmath.h"
#include "nn/layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* f(ctx) with the CPU backend's fused attention (forward and backward) removed */
static wk_tensor *composite(wk_tensor *(*f)(void *), void *ctx) {
    wk_device *dev = wk_cpu();
    const wk_backend *saved = dev->be;
    wk_backend plain = *saved;
    plain.attention = NULL;
    plain.attention_backward = NULL;
    plain.softmax = NULL;
    dev->be = &plain;
    wk_tensor *r = f(ctx);
    dev->be = saved;
    return r;
}

typedef struct att_case {
    wk_tensor *q, *k, *v, *r; /* r: the loss weights (backward cases) */
    wk_attention_opts o;
} att_case;
static wk_tensor *run_att(void *p) {
    att_case *c = p;
    return wk_attention(c->q, c->k, c->v, &c->o);
}

/* (1, H, T, D) f32 with NaN at every key position outside [lo, hi) */
static wk_tensor *cache_with_nan(int64_t H, int64_t T, int64_t D, int64_t lo, int64_t hi, bool nan, uint32_t seed) {
    size_t n = (size_t)(H * T * D);
    float *b = malloc(n * sizeof *b);
    assert_non_null(b);
    uint32_t x = seed;
    for (int64_t h = 0; h < H; h++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t d = 0; d < D; d++) {
                x = x * 1664525u + 1013904223u;
                float v = (float)((double)(x >> 8) / (double)(1u << 24) * 2 - 1);
                b[(h * T + t) * D + d] = nan && (t < lo || t >= hi) ? NAN : v;
            }
    int64_t s[4] = {1, H, T, D};
    wk_tensor *r = TU_OK(wk_from_host(b, n * sizeof *b, s, 4, WK_F32, wk_cpu()));
    free(b);
    return r;
}

/* Decode over a cache of 4096 with window 512 (the point of a window: the
 * other keys are not read). Keys are a narrow of the cache, GQA 4 / 2. */
static void test_decode_reads_window_only(void **state) {
    (void)state;
    const int64_t T = 4096, L = 4000, W = 512, D = 64, p = L - 1;
    for (int cap = 0; cap < 2; cap++)
        for (int half = 0; half < 2; half++) {
            wk_scope_begin();
            wk_dtype dt = half ? WK_F16 : WK_F32;
            /* the same values (same seeds), with and without NaN outside the window */
            wk_tensor *kn = cache_with_nan(2, T, D, p - W + 1, p + 1, true, 11);
            wk_tensor *vn = cache_with_nan(2, T, D, p - W + 1, p + 1, true, 22);
            wk_tensor *kc = cache_with_nan(2, T, D, 0, 0, false, 11), *vc = cache_with_nan(2, T, D, 0, 0, false, 22);
            int64_t sq[4] = {1, 4, 1, D};
            wk_tensor *q = TU_OK(wk_to_dtype(TU_OK(wk_rand(sq, 4, -2, 2, WK_F32, wk_cpu())), dt));
            att_case nanc = {.q = q,
                             .k = TU_OK(wk_narrow(TU_OK(wk_to_dtype(kn, dt)), 2, 0, L)),
                             .v = TU_OK(wk_narrow(TU_OK(wk_to_dtype(vn, dt)), 2, 0, L)),
                             .o = {.causal = true, .q_offset = p, .window = W, .softcap = cap ? 3.0 : 0}};
            att_case clean = nanc;
            clean.k = TU_OK(wk_narrow(TU_OK(wk_to_dtype(kc, dt)), 2, 0, L));
            clean.v = TU_OK(wk_narrow(TU_OK(wk_to_dtype(vc, dt)), 2, 0, L));
            /* the clean cache's values inside the window are the NaN one's */
            wk_tensor *ref = TU_OK(composite(run_att, &clean));
            wk_tensor *kw = TU_OK(wk_narrow(nanc.k, 2, p - W + 1, W)), *vw = TU_OK(wk_narrow(nanc.v, 2, p - W + 1, W));
            /* the same attention over the window alone (no window needed) */
            att_case only = {.q = q, .k = kw, .v = vw, .o = {.causal = true, .q_offset = W - 1, .softcap = nanc.o.softcap}};
            wk_tensor *want = TU_OK(composite(run_att, &only));
            tu_assert_matches("composite: the window of a clean cache vs the window alone", ref, want, 1e-6, 1e-6);
            int top = wk__vmath_max_level();
            for (int lv = top; lv >= 0; lv--) {
                if (wk__vmath_set_level(lv) != 0) continue;
                wk_tensor *got = TU_OK(run_att(&nanc));
                tu_assert_matches("windowed decode over a NaN cache vs the window alone", got, want,
                                  half ? 2e-3 : 1e-5, half ? 2e-3 : 1e-5);
                wk_tensor_free(got);
            }
            wk__vmath_set_level(-1);
            wk_scope_end();
        }
}

/* sum(attention(q, k, v) * r) and its gradients in g[0..2] */
typedef struct bw_case {
    att_case a;
    wk_tensor *g[3];
} bw_case;
static wk_tensor *run_bw(void *p) {
    bw_case *c = p;
    wk_tensor *y = wk_attention(c->a.q, c->a.k, c->a.v, &c->a.o);
    wk_tensor *l = y ? wk_sum_all(wk_mul(y, c->a.r)) : NULL;
    wk_tensor *xs[3] = {c->a.q, c->a.k, c->a.v};
    if (!l || wk_grad_of(l, xs, 3, NULL, c->g) != WK_OK) return NULL;
    return l;
}

static void check_backward(int64_t hq, int64_t hkv, int64_t lq, int64_t lk, int64_t d, int64_t off, int64_t w,
                           double cap, bool causal) {
    int64_t sq[4] = {1, hq, lq, d}, sk[4] = {1, hkv, lk, d};
    bw_case c = {.a = {.q = TU_OK(wk_rand(sq, 4, -2, 2, WK_F32, wk_cpu())),
                       .k = TU_OK(wk_rand(sk, 4, -2, 2, WK_F32, wk_cpu())),
                       .v = TU_OK(wk_rand(sk, 4, -1, 1, WK_F32, wk_cpu())),
                       .r = TU_OK(wk_rand(sq, 4, -1, 1, WK_F32, wk_cpu())),
                       .o = {.causal = causal, .q_offset = off, .window = w, .softcap = cap}}};
    TU_STATUS_OK(wk_requires_grad(c.a.q, true));
    TU_STATUS_OK(wk_requires_grad(c.a.k, true));
    TU_STATUS_OK(wk_requires_grad(c.a.v, true));
    bw_case ref = c;
    TU_OK(composite(run_bw, &ref));
    int top = wk__vmath_max_level();
    for (int lv = top; lv >= 0; lv--) {
        if (wk__vmath_set_level(lv) != 0) continue;
        TU_OK(run_bw(&c));
        for (int i = 0; i < 3; i++) {
            tu_assert_matches("fused attention backward vs composite", c.g[i], ref.g[i], 1e-4, 1e-4);
            wk_tensor_free(c.g[i]);
        }
    }
    wk__vmath_set_level(-1);
    for (int i = 0; i < 3; i++) wk_tensor_free(ref.g[i]);
}

static void test_backward_fused_vs_composite(void **state) {
    (void)state;
    wk_scope_begin();
    check_backward(4, 2, 150, 150, 16, 0, 40, 2.0, true); /* prefill over two key tiles, window and cap */
    check_backward(4, 1, 1, 700, 16, 699, 512, 0.0, true); /* decode with a cache */
    check_backward(4, 2, 70, 300, 8, 230, 64, 5.0, true);  /* chunked prefill: key tiles skipped */
    check_backward(2, 2, 9, 30, 8, 10, 7, 0.0, false);     /* window without causal */
    check_backward(2, 1, 8, 8, 4, 0, 1, 1.5, true);        /* window 1 */
    check_backward(2, 1, 8, 8, 4, 0, 100, 0.0, true);      /* window past Lk */
    wk_scope_end();
}

static void test_bad_options(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s[4] = {1, 2, 3, 4};
    wk_tensor *x = TU_OK(wk_rand(s, 4, -1, 1, WK_F32, wk_cpu()));
    wk_attention_opts o = {.window = -1};
    assert_null(wk_attention(x, x, x, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    o = (wk_attention_opts){.softcap = -1};
    assert_null(wk_attention(x, x, x, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    o = (wk_attention_opts){.softcap = NAN};
    assert_null(wk_attention(x, x, x, &o));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    /* the layer kit: rope_dims odd or past the head */
    wk__kv_store st;
    TU_STATUS_OK(wk__kv_store_init(&st, 1, 2, 4, 4, WK_F32, wk_cpu()));
    int64_t sr[2] = {1, 8};
    wk_tensor *r = TU_OK(wk_rand(sr, 2, -1, 1, WK_F32, wk_cpu()));
    wk__attn_heads h = {.q_heads = 2, .kv_heads = 2, .head_dim = 4, .rope_dims = 3};
    assert_null(wk__rope_cached_attention(&h, r, r, r, NULL, NULL, &st, 0, 0));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    h.rope_dims = 6;
    assert_null(wk__rope_cached_attention(&h, r, r, r, NULL, NULL, &st, 0, 0));
    assert_int_equal(wk_last_status(), WK_ERR_ARG);
    wk__kv_store_free(&st);
    wk_scope_end();
}

/* ---- the layer kit against numpy (gen_attn_kit.py) ---- */

static void test_layer_kit(void **state) {
    (void)state;
    char dir[512], path[600], line[2048];
    if (!ou_dir("attn_kit", dir, sizeof dir)) {
        print_message("WICK_ORACLE_DIR not set: run through ctest (the gen_attn_kit fixture)\n");
        skip();
    }
    FILE *f = ou_open_manifest(dir, path, sizeof path);
    if (!f) {
        print_error("cannot open %s\n", path);
        fail();
    }
    int ncases = 0;
    while (ou_next_line(f, line, sizeof line)) {
        char name[64], fq[32], fk[32], fv[32], fc[32], fs[32], fo[32];
        int inter, skip_rope;
        long long rdims, window, H, Hkv, D, n1, n2;
        double softcap, scale;
        if (sscanf(line, "%63s %d %d %lld %lld %lf %lf %lld %lld %lld %lld %lld %31s %31s %31s %31s %31s %31s", name,
                   &inter, &skip_rope, &rdims, &window, &softcap, &scale, &H, &Hkv, &D, &n1, &n2, fq, fk, fv, fc, fs,
                   fo) != 18) {
            print_error("bad manifest line: %s\n", line);
            fail();
        }
        wk_scope_begin();
        wk_tensor *q = TU_OK(ou_load(dir, fq)), *k = TU_OK(ou_load(dir, fk)), *v = TU_OK(ou_load(dir, fv));
        wk_tensor *cs = TU_OK(ou_load(dir, fc)), *sn = TU_OK(ou_load(dir, fs));
        wk__attn_heads h = {.q_heads = H,
                            .kv_heads = Hkv,
                            .head_dim = D,
                            .interleaved = inter != 0,
                            .window = window,
                            .softcap = softcap,
                            .scale = scale,
                            .rope_skip = skip_rope != 0,
                            .rope_dims = rdims};
        wk__kv_store st;
        TU_STATUS_OK(wk__kv_store_init(&st, 1, Hkv, n1 + n2 + 3, D, WK_F32, wk_cpu()));
        wk_tensor *outs[64];
        int no = 0;
        /* a prefill of n1, then one position at a time */
        for (int64_t pos = 0, n = n1; pos < n1 + n2; pos += n, n = 1) {
            wk_tensor *c = skip_rope ? NULL : TU_OK(wk_narrow(cs, 0, pos, n));
            wk_tensor *s = skip_rope ? NULL : TU_OK(wk_narrow(sn, 0, pos, n));
            outs[no++] = TU_OK(wk__rope_cached_attention(&h, TU_OK(wk_narrow(q, 0, pos, n)),
                                                         TU_OK(wk_narrow(k, 0, pos, n)),
                                                         TU_OK(wk_narrow(v, 0, pos, n)), c, s, &st, 0, pos));
        }
        wk_tensor *got = TU_OK(wk_cat(outs, no, 0));
        char msg[512];
        const char *bad = ou_compare_file(got, dir, fo, 2e-5, false, msg, sizeof msg);
        if (bad) {
            print_error("layer kit case %s: %s\n", name, bad);
            fail();
        }
        wk__kv_store_free(&st);
        wk_scope_end();
        ncases++;
    }
    fclose(f);
    print_message("attn_kit oracle: %d cases\n", ncases);
    assert_true(ncases >= 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_reads_window_only),
        cmocka_unit_test(test_backward_fused_vs_composite),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layer_kit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
