/* Backward of the fused nn ops (softmax, log_softmax, rms_norm, layer_norm,
 * rope, rope_thd, swiglu, attention): autograd against central differences
 * in f64 (tests/gradcheck.h) over dims, layouts, masks, causal offsets, GQA
 * groups, head sizes and tiles; second order through the composite rules;
 * the fused CPU backward kernels against the composite ones (create_graph
 * and a backend with the optional entries cleared); f32 / f16 / bf16 against
 * f64; 1 vs 2 threads bit-identical; every SIMD level this CPU has. */
#include "testutil.h"
#include "gradcheck.h"
#include "tensor/tensor.h"
#include "cpu/cpu_backend.h"
#include "cpu/vmath/vmath.h"
#include "wick/autograd.h"
#include "wick/nn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the functions under test ---- */

enum { F_SOFTMAX, F_NORM, F_ROPE, F_SWIGLU, F_ATTN, F_SDPA };
typedef struct fcase {
    int kind;
    int dim;           /* softmax */
    bool logp;         /* softmax */
    bool rms;          /* norm */
    bool interleaved;  /* rope */
    bool thd;          /* rope */
    bool causal;       /* attention */
    int64_t q_offset;  /* attention */
    double scale;      /* attention (0: default) */
} fcase;

static wk_tensor *f_case(wk_tensor *const *in, int nin, void *ctx) {
    const fcase *c = ctx;
    switch (c->kind) {
    case F_SOFTMAX: return c->logp ? wk_log_softmax(in[0], c->dim) : wk_softmax(in[0], c->dim);
    case F_NORM: return c->rms ? wk_rms_norm(in[0], in[1], 1e-5) : wk_layer_norm(in[0], in[1], nin > 2 ? in[2] : NULL, 1e-5);
    case F_ROPE: return c->thd ? wk_rope_thd(in[0], in[1], in[2], c->interleaved) : wk_rope(in[0], in[1], in[2], c->interleaved);
    case F_SWIGLU: return wk_swiglu(in[0]);
    case F_ATTN: {
        wk_attention_opts o = {.mask = nin > 3 ? in[3] : NULL, .scale = c->scale, .causal = c->causal,
                               .q_offset = c->q_offset};
        return wk_attention(in[0], in[1], in[2], &o);
    }
    case F_SDPA: return wk_scaled_dot_product_attention(in[0], in[1], in[2], nin > 3 ? in[3] : NULL, c->scale, c->causal);
    }
    return NULL;
}

static uint64_t g_seed = 1;
/* Uniform [-1, 1] * scale in f64, a fresh seed each call. */
static wk_tensor *rnd(const int64_t *shape, int rank, double scale) {
    wk_tensor *t = TU_OK(gc_weights(shape, rank, WK_F64, g_seed++));
    if (scale == 1.0) return t;
    return TU_OK(wk_affine(t, scale, 0.0));
}
/* The same values through a permuted view: storage in shape[perm], viewed back. */
static wk_tensor *rnd_permuted(const int64_t *shape, int rank, const int *perm) {
    int64_t s[WK_MAX_RANK];
    int inv[WK_MAX_RANK];
    for (int i = 0; i < rank; i++) s[i] = shape[perm[i]];
    for (int i = 0; i < rank; i++) inv[perm[i]] = i;
    wk_tensor *base = rnd(s, rank, 1.0);
    wk_tensor *v = TU_OK(wk_permute(base, inv, rank));
    for (int i = 0; i < rank; i++) assert_int_equal(wk_shape(v)[i], shape[i]);
    return v;
}

/* ---- gradients with or without create_graph (the composite rules) ---- */

/* d sum(f(in) * R) / d in[i] for the inputs track marks (NULL: all), into
 * out (kept references; NULL for untracked). */
static void grads(const fcase *c, wk_tensor *const *in, int nin, const bool *track, bool create_graph,
                  wk_tensor **out) {
    wk_tensor *xs[8];
    int nx = 0;
    for (int i = 0; i < nin; i++) {
        out[i] = NULL;
        if (in[i] && (!track || track[i])) {
            TU_STATUS_OK(wk_requires_grad(in[i], true));
            xs[nx++] = in[i];
        }
    }
    wk_scope_begin();
    wk_tensor *y = TU_OK(f_case(in, nin, (void *)c));
    wk_tensor *r = TU_OK(wk_to_device(gc_weights(wk_shape(y), wk_rank(y), wk_tensor_dtype(y), 777), wk_tensor_device(y)));
    wk_tensor *l = TU_OK(wk_sum_all(wk_mul(y, r)));
    wk_tensor *g[8];
    wk_backward_opts o = {.create_graph = create_graph};
    if (wk_grad_of(l, xs, nx, &o, g) != WK_OK) {
        print_error("backward failed: %s\n", wk_last_error());
        fail();
    }
    for (int i = 0, k = 0; i < nin; i++)
        if (in[i] && (!track || track[i])) {
            out[i] = wk_keep(TU_OK(wk_detach(g[k])));
            wk_tensor_free(g[k]);
            k++;
        }
    wk_scope_end();
    for (int i = 0; i < nin; i++)
        if (out[i]) TU_STATUS_OK(wk_requires_grad(in[i], false));
}

static void free_grads(wk_tensor **g, int n) {
    for (int i = 0; i < n; i++) wk_tensor_free(g[i]);
}

/* Inputs converted to dt (fresh contiguous tensors). */
static void convert(wk_tensor *const *in, int nin, wk_dtype dt, wk_tensor **out) {
    for (int i = 0; i < nin; i++) out[i] = in[i] ? TU_OK(wk_contiguous(wk_to_dtype(in[i], dt))) : NULL;
}

/* Gradients of f in dt (fused) within tol of the f64 gradients. */
static void check_dtype(const char *what, const fcase *c, wk_tensor *const *in, int nin, const bool *track,
                        wk_dtype dt, double tol) {
    wk_tensor *lo[8] = {0}, *g64[8] = {0}, *gl[8] = {0};
    convert(in, nin, dt, lo);
    grads(c, in, nin, track, false, g64);
    grads(c, lo, nin, track, false, gl);
    for (int i = 0; i < nin; i++) {
        if (!g64[i]) continue;
        assert_int_equal(wk_tensor_dtype(gl[i]), dt);
        wk_tensor *a = TU_OK(wk_to_dtype(gl[i], WK_F64));
        char w[128];
        snprintf(w, sizeof w, "%s %s input %d", what, wk_dtype_name(dt), i);
        /* relative to the gradient's scale */
        double m = 0;
        if (wk_numel(g64[i]) > 0) {
            wk_tensor *mx = TU_OK(wk_max(wk_flatten_all(wk_abs(g64[i])), (int[]){0}, 1, false));
            TU_STATUS_OK(wk_item(mx, &m));
        }
        tu_assert_matches(w, a, g64[i], tol * (m > 1 ? m : 1), tol);
        wk_tensor_free(a);
    }
    free_grads(lo, nin);
    free_grads(g64, nin);
    free_grads(gl, nin);
}

/* Fused (plain backward) and composite (create_graph) gradients agree. */
static void check_fused_composite(const char *what, const fcase *c, wk_tensor *const *in, int nin, const bool *track,
                                  wk_dtype dt, double tol) {
    wk_tensor *x[8] = {0}, *gf[8] = {0}, *gc[8] = {0};
    convert(in, nin, dt, x);
    grads(c, x, nin, track, false, gf);
    grads(c, x, nin, track, true, gc);
    for (int i = 0; i < nin; i++) {
        if (!gf[i]) continue;
        char w[128];
        snprintf(w, sizeof w, "%s fused vs composite %s input %d", what, wk_dtype_name(dt), i);
        tu_assert_matches(w, gf[i], gc[i], tol, tol);
    }
    free_grads(x, nin);
    free_grads(gf, nin);
    free_grads(gc, nin);
}

static void fd(const char *what, const fcase *c, wk_tensor *const *in, int nin, const bool *track, bool second) {
    gc_opts o = {.track = track, .second_order = second, .atol = 1e-6, .rtol = 1e-5};
    gc_check(what, f_case, (void *)c, in, nin, &o);
}

/* ---- softmax / log_softmax ---- */

static void test_softmax(void **state) {
    (void)state;
    wk_scope_begin();
    int64_t s3[] = {3, 4, 5};
    for (int logp = 0; logp < 2; logp++) {
        for (int dim = -1; dim < 3; dim++) {
            fcase c = {.kind = F_SOFTMAX, .dim = dim, .logp = logp};
            wk_tensor *x = rnd(s3, 3, 2.0);
            fd(logp ? "log_softmax" : "softmax", &c, &x, 1, NULL, dim == 1);
        }
        fcase c = {.kind = F_SOFTMAX, .dim = 1, .logp = logp};
        /* a transposed view; a row past the vector chunk; one element; empty */
        wk_tensor *xt = rnd_permuted(s3, 3, (int[]){2, 0, 1});
        fd("softmax permuted", &c, &xt, 1, NULL, false);
        c.dim = -1;
        wk_tensor *xl = rnd((int64_t[]){2, 300}, 2, 3.0);
        gc_opts o = {.atol = 1e-6, .rtol = 1e-5};
        gc_check("softmax long row", f_case, &c, &xl, 1, &o);
        wk_tensor *x1 = rnd((int64_t[]){1}, 1, 1.0);
        fd("softmax one", &c, &x1, 1, NULL, true);
        wk_tensor *x0 = TU_OK(wk_zeros((int64_t[]){0, 3}, 2, WK_F64, wk_cpu()));
        fd("softmax empty", &c, &x0, 1, NULL, false);
        check_fused_composite("softmax", &c, &xl, 1, NULL, WK_F32, 2e-6);
        check_dtype("softmax", &c, &xt, 1, NULL, WK_F32, 1e-5);
        check_dtype("softmax", &c, &xt, 1, NULL, WK_F16, 4e-3);
        check_dtype("softmax", &c, &xt, 1, NULL, WK_BF16, 3e-2);
    }
    wk_scope_end();
}

/* ---- rms_norm / layer_norm ---- */

static void test_norms(void **state) {
    (void)state;
    wk_scope_begin();
    for (int rms = 0; rms < 2; rms++) {
        fcase c = {.kind = F_NORM, .rms = rms};
        const char *name = rms ? "rms_norm" : "layer_norm";
        int64_t s[] = {4, 3, 6}, sw[] = {6};
        wk_tensor *x = rnd_permuted(s, 3, (int[]){1, 2, 0});
        wk_tensor *w = TU_OK(wk_affine(rnd(sw, 1, 0.5), 1.0, 1.0));
        wk_tensor *b = rnd(sw, 1, 0.5);
        int nin = rms ? 2 : 3;
        wk_tensor *in[3] = {x, w, b};
        /* every subset of tracked inputs, weight / bias present or not */
        for (int mask = 1; mask < (1 << nin); mask++) {
            bool track[3] = {mask & 1, (mask >> 1) & 1, (mask >> 2) & 1};
            fd(name, &c, in, nin, track, mask == (1 << nin) - 1);
        }
        wk_tensor *nw[3] = {x, NULL, NULL};
        fd("norm no weight", &c, nw, nin, NULL, true);
        wk_tensor *ow[3] = {x, w, NULL};
        fd("norm weight only", &c, ow, nin, NULL, false);
        /* D = 1, a long row, rank 1, one row of many, empty */
        wk_tensor *d1[3] = {rnd((int64_t[]){5, 1}, 2, 1.0), rnd((int64_t[]){1}, 1, 1.0), rnd((int64_t[]){1}, 1, 1.0)};
        fd("norm D=1", &c, d1, nin, NULL, false);
        wk_tensor *lr[3] = {rnd((int64_t[]){3, 200}, 2, 1.0), rnd((int64_t[]){200}, 1, 1.0), rnd((int64_t[]){200}, 1, 1.0)};
        gc_opts o = {.atol = 1e-6, .rtol = 1e-5};
        gc_check("norm long", f_case, &c, lr, nin, &o);
        wk_tensor *r1[3] = {rnd((int64_t[]){7}, 1, 1.0), rnd((int64_t[]){7}, 1, 1.0), rnd((int64_t[]){7}, 1, 1.0)};
        fd("norm rank 1", &c, r1, nin, NULL, false);
        wk_tensor *e[3] = {TU_OK(wk_zeros((int64_t[]){0, 4}, 2, WK_F64, wk_cpu())), rnd((int64_t[]){4}, 1, 1.0),
                           rnd((int64_t[]){4}, 1, 1.0)};
        fd("norm empty", &c, e, nin, NULL, false);
        /* many rows: the column pass (dw, db) crosses its 64-column blocks */
        wk_tensor *big[3] = {rnd((int64_t[]){70, 130}, 2, 1.0), rnd((int64_t[]){130}, 1, 1.0),
                             rnd((int64_t[]){130}, 1, 1.0)};
        check_fused_composite(name, &c, big, nin, NULL, WK_F64, 1e-10);
        check_fused_composite(name, &c, big, nin, NULL, WK_F32, 2e-5);
        check_dtype(name, &c, in, nin, NULL, WK_F32, 1e-5);
        check_dtype(name, &c, in, nin, NULL, WK_F16, 5e-3);
        check_dtype(name, &c, in, nin, NULL, WK_BF16, 4e-2);
    }
    wk_scope_end();
}

/* ---- rope / rope_thd ---- */

static void test_rope(void **state) {
    (void)state;
    wk_scope_begin();
    for (int thd = 0; thd < 2; thd++)
        for (int il = 0; il < 2; il++) {
            fcase c = {.kind = F_ROPE, .thd = thd, .interleaved = il};
            char w[64];
            snprintf(w, sizeof w, "rope%s%s", thd ? "_thd" : "", il ? " interleaved" : "");
            int64_t s[] = {2, 3, 4, 6}; /* (B, H, T, D) or (B, T, H, D) */
            int64_t t = thd ? s[1] : s[2];
            wk_tensor *x = rnd_permuted(s, 4, (int[]){0, 2, 1, 3});
            wk_tensor *cs = rnd((int64_t[]){t, 3}, 2, 1.0), *sn = rnd((int64_t[]){t, 3}, 2, 1.0);
            wk_tensor *in[3] = {x, cs, sn};
            bool only_x[3] = {true, false, false};
            fd(w, &c, in, 3, only_x, false);
            fd(w, &c, in, 3, NULL, true); /* cos and sin tracked: through public ops */
            check_dtype(w, &c, in, 3, only_x, WK_F32, 1e-5);
            check_dtype(w, &c, in, 3, only_x, WK_BF16, 3e-2);
        }
    wk_scope_end();
}

/* ---- swiglu ---- */

static void test_swiglu(void **state) {
    (void)state;
    wk_scope_begin();
    fcase c = {.kind = F_SWIGLU};
    wk_tensor *x = rnd_permuted((int64_t[]){3, 8}, 2, (int[]){1, 0});
    fd("swiglu", &c, &x, 1, NULL, true);
    wk_tensor *e = TU_OK(wk_zeros((int64_t[]){0, 4}, 2, WK_F64, wk_cpu()));
    fd("swiglu empty", &c, &e, 1, NULL, false);
    check_dtype("swiglu", &c, &x, 1, NULL, WK_F16, 4e-3);
    wk_scope_end();
}

/* ---- attention ---- */

typedef struct att_shape {
    int64_t b, hq, hkv, lq, lk, d, dv;
} att_shape;

/* q k v (and a mask of rank mrank: 0 none, 2 (Lq, Lk), 4 (B, 1, Lq, Lk)) */
static int att_inputs(const att_shape *s, int mrank, bool permuted, wk_tensor **in) {
    int64_t sq[] = {s->b, s->hq, s->lq, s->d}, sk[] = {s->b, s->hkv, s->lk, s->d}, sv[] = {s->b, s->hkv, s->lk, s->dv};
    int perm[] = {0, 2, 1, 3}; /* stored (B, L, H, D), as a projection writes them */
    in[0] = permuted ? rnd_permuted(sq, 4, perm) : rnd(sq, 4, 1.0);
    in[1] = permuted ? rnd_permuted(sk, 4, perm) : rnd(sk, 4, 1.0);
    in[2] = permuted ? rnd_permuted(sv, 4, perm) : rnd(sv, 4, 1.0);
    if (mrank == 2) in[3] = rnd((int64_t[]){s->lq, s->lk}, 2, 1.0);
    else if (mrank == 4) in[3] = rnd((int64_t[]){s->b, 1, s->lq, s->lk}, 4, 1.0);
    return mrank ? 4 : 3;
}

static void test_attention_fd(void **state) {
    (void)state;
    struct {
        att_shape s;
        int mrank;
        bool causal, permuted, second;
        int64_t off;
    } cases[] = {
        {{1, 2, 2, 3, 4, 3, 3}, 0, false, false, true, 0},
        {{2, 2, 1, 3, 5, 4, 2}, 2, false, true, false, 0},  /* MQA, a 2-D mask, permuted */
        {{1, 4, 2, 3, 3, 3, 3}, 4, true, false, true, 0},   /* GQA 2, 4-D broadcast mask, causal */
        {{1, 4, 1, 2, 5, 2, 3}, 0, true, false, false, 3},  /* GQA 4, causal Lq < Lk with q_offset */
        {{1, 2, 2, 2, 4, 1, 1}, 0, true, true, false, 1},   /* D = 1 */
        {{1, 1, 1, 2, 3, 64, 5}, 0, false, false, false, 0}, /* D = 64 */
        {{1, 2, 1, 2, 3, 80, 4}, 2, true, true, false, 1},  /* D = 80 */
        {{1, 1, 1, 2, 150, 2, 2}, 2, true, false, false, 148}, /* Lk past two key tiles */
        {{1, 1, 1, 1, 1, 1, 1}, 0, false, false, true, 0},  /* one element */
        {{1, 2, 1, 0, 3, 2, 2}, 0, false, false, false, 0}, /* Lq = 0 */
        {{1, 2, 1, 2, 0, 2, 2}, 0, false, false, false, 0}, /* Lk = 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wk_scope_begin();
        wk_tensor *in[4] = {0};
        int nin = att_inputs(&cases[i].s, cases[i].mrank, cases[i].permuted, in);
        fcase c = {.kind = F_ATTN, .causal = cases[i].causal, .q_offset = cases[i].off, .scale = i == 1 ? 0.7 : 0};
        char w[64];
        snprintf(w, sizeof w, "attention case %zu", i);
        /* an untracked mask (the fused kernel reads it), then a tracked one (the composite) */
        bool qkv[4] = {true, true, true, false};
        fd(w, &c, in, nin, qkv, false);
        if (nin == 4 || cases[i].second) fd(w, &c, in, nin, NULL, cases[i].second);
        if (cases[i].s.lq > 0 && cases[i].s.lk > 0) {
            check_fused_composite(w, &c, in, nin, qkv, WK_F64, 1e-10);
            check_fused_composite(w, &c, in, nin, qkv, WK_F32, 1e-5);
        }
        wk_scope_end();
    }
    /* scaled_dot_product_attention: rank 3 and rank 2, no GQA */
    wk_scope_begin();
    fcase c = {.kind = F_SDPA, .causal = true};
    wk_tensor *in3[3] = {rnd((int64_t[]){2, 3, 4}, 3, 1.0), rnd((int64_t[]){2, 5, 4}, 3, 1.0),
                         rnd((int64_t[]){2, 5, 3}, 3, 1.0)};
    fd("sdpa rank 3", &c, in3, 3, NULL, false);
    wk_tensor *in2[4] = {rnd((int64_t[]){3, 2}, 2, 1.0), rnd((int64_t[]){4, 2}, 2, 1.0), rnd((int64_t[]){4, 2}, 2, 1.0),
                         rnd((int64_t[]){3, 4}, 2, 1.0)};
    c.causal = false;
    fd("sdpa rank 2", &c, in2, 4, NULL, false);
    wk_scope_end();
}

/* f32 / f16 / bf16 gradients against f64 on a prefill-sized case, at every
 * SIMD level this CPU has (vmath's level drives the GEMM and row kernels). */
static void test_attention_dtypes_isa(void **state) {
    (void)state;
    int maxl = wk__vmath_max_level();
    for (int lvl = 0; lvl <= maxl; lvl++) {
        assert_int_equal(wk__vmath_set_level(lvl), 0);
        wk_scope_begin();
        att_shape s = {1, 4, 2, 70, 70, 16, 16};
        wk_tensor *in[4];
        int nin = att_inputs(&s, 4, true, in);
        fcase c = {.kind = F_ATTN, .causal = true};
        bool qkv[4] = {true, true, true, false};
        check_dtype("attention", &c, in, nin, qkv, WK_F32, 2e-5);
        check_dtype("attention", &c, in, nin, qkv, WK_F16, 1e-2);
        check_dtype("attention", &c, in, nin, qkv, WK_BF16, 6e-2);
        fcase sm = {.kind = F_SOFTMAX, .dim = -1};
        check_dtype("softmax", &sm, in, 1, NULL, WK_F32, 1e-5);
        fcase nm = {.kind = F_NORM, .rms = true};
        wk_tensor *nin_[2] = {in[0], TU_OK(wk_affine(rnd((int64_t[]){16}, 1, 0.3), 1.0, 1.0))};
        check_dtype("rms_norm", &nm, nin_, 2, NULL, WK_F32, 1e-5);
        wk_scope_end();
    }
    wk__vmath_set_level(-1);
}

/* 1 and 2 threads give bit-identical gradients (f32: the order of every sum
 * is fixed by the shapes). */
static void test_threads_bitwise(void **state) {
    (void)state;
    wk_scope_begin();
    att_shape s = {2, 4, 2, 67, 131, 32, 24};
    wk_tensor *in[4], *x[4];
    int nin = att_inputs(&s, 2, false, in);
    convert(in, nin, WK_F32, x);
    fcase cases[3] = {{.kind = F_ATTN, .causal = true, .q_offset = 64}, {.kind = F_SOFTMAX, .dim = 2},
                      {.kind = F_NORM, .rms = false}};
    wk_tensor *nw[3] = {x[0], TU_OK(wk_contiguous(wk_to_dtype(rnd((int64_t[]){32}, 1, 1.0), WK_F32))),
                        TU_OK(wk_contiguous(wk_to_dtype(rnd((int64_t[]){32}, 1, 1.0), WK_F32)))};
    wk_tensor *const *ins[3] = {x, x, nw};
    int nins[3] = {nin, 1, 3};
    bool qkv[4] = {true, true, true, false};
    const bool *tr[3] = {qkv, NULL, NULL};
    int saved = wk_num_threads();
    for (int k = 0; k < 3; k++) {
        wk_tensor *g1[4], *g2[4];
        TU_STATUS_OK(wk_set_num_threads(1));
        grads(&cases[k], ins[k], nins[k], tr[k], false, g1);
        TU_STATUS_OK(wk_set_num_threads(2));
        grads(&cases[k], ins[k], nins[k], tr[k], false, g2);
        for (int i = 0; i < nins[k]; i++) {
            if (!g1[i]) continue;
            int64_t n = wk_numel(g1[i]);
            float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
            TU_STATUS_OK(wk_to_host(g1[i], a, sizeof(float) * (size_t)n));
            TU_STATUS_OK(wk_to_host(g2[i], b, sizeof(float) * (size_t)n));
            if (memcmp(a, b, sizeof(float) * (size_t)n) != 0) {
                print_error("case %d input %d: 1 and 2 threads differ\n", k, i);
                fail();
            }
            free(a);
            free(b);
        }
        free_grads(g1, nins[k]);
        free_grads(g2, nins[k]);
    }
    wk_set_num_threads(saved);
    free_grads(x, nin);
    wk_scope_end();
}

/* ---- a backend with the optional entries cleared: the composite rules on
 * the composite forward ---- */

static wk_backend g_req_table;
static wk_backend_desc g_req_desc;
static wk_device g_req_dev;
static wk_device *req_open(int ordinal) { return ordinal == 0 ? &g_req_dev : NULL; }
static int req_count(void) { return 1; }
static wk_device *req_dev(void) {
    static bool done;
    if (!done) {
        done = true;
        g_req_table = wk__cpu_backend;
        g_req_table.name = "cpu-required-grad";
        memset((char *)&g_req_table + offsetof(wk_backend, softmax), 0,
               sizeof(wk_backend) - offsetof(wk_backend, softmax));
        g_req_desc = (wk_backend_desc){.name = "cpu-required-grad", .kind = WK_DEVICE_CPU, .ops = &g_req_table,
                                       .open = req_open, .device_count = req_count};
        g_req_dev = (wk_device){.kind = WK_DEVICE_CPU, .ordinal = 0, .instance = 1001, .be = &g_req_table,
                                .desc = &g_req_desc, .name = "cpu-required-grad", .seed = 0,
                                .priv = wk_cpu()->priv};
        assert_int_equal(wk__backend_register(&g_req_desc), WK_OK);
    }
    return &g_req_dev;
}

static void test_required_only_backend(void **state) {
    (void)state;
    wk_scope_begin();
    att_shape s = {1, 4, 2, 5, 7, 6, 4};
    wk_tensor *in[4];
    int nin = att_inputs(&s, 2, true, in);
    wk_tensor *w = TU_OK(wk_affine(rnd((int64_t[]){6}, 1, 0.3), 1.0, 1.0)), *b = rnd((int64_t[]){6}, 1, 0.3);
    fcase cs[4] = {{.kind = F_ATTN, .causal = true, .q_offset = 2}, {.kind = F_SOFTMAX, .dim = 1, .logp = true},
                   {.kind = F_NORM, .rms = false}, {.kind = F_NORM, .rms = true}};
    wk_tensor *ni[3] = {in[0], w, b};
    wk_tensor *const *ins[4] = {in, in, ni, ni};
    int nins[4] = {nin, 1, 3, 2};
    for (int k = 0; k < 4; k++) {
        wk_tensor *r[4], *gc[4], *gr[4];
        for (int i = 0; i < nins[k]; i++) r[i] = TU_OK(wk_to_device(ins[k][i], req_dev()));
        /* the attention mask untracked: the CPU takes its fused kernel */
        bool qkv[4] = {true, true, true, k != 0};
        grads(&cs[k], ins[k], nins[k], qkv, false, gc);
        grads(&cs[k], r, nins[k], qkv, false, gr);
        for (int i = 0; i < nins[k]; i++) {
            if (!gc[i]) continue;
            assert_true(wk_tensor_device(gr[i]) == req_dev());
            wk_tensor *back = TU_OK(wk_to_device(gr[i], wk_cpu()));
            char what[64];
            snprintf(what, sizeof what, "required-only case %d input %d", k, i);
            tu_assert_matches(what, back, gc[i], 1e-10, 1e-10);
            wk_tensor_free(back);
        }
        free_grads(gc, nins[k]);
        free_grads(gr, nins[k]);
    }
    wk_scope_end();
}

/* The recorded graph: one node per fused op, named after it. */
static void test_one_node(void **state) {
    (void)state;
    wk_scope_begin();
    wk_tensor *x = rnd((int64_t[]){2, 4}, 2, 1.0);
    TU_STATUS_OK(wk_requires_grad(x, true));
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_softmax(x, 1))), "wk_softmax");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_log_softmax(x, 0))), "wk_log_softmax");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_rms_norm(x, NULL, 1e-5))), "wk_rms_norm");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_layer_norm(x, NULL, NULL, 1e-5))), "wk_layer_norm");
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_swiglu(x))), "wk_swiglu");
    wk_tensor *q = TU_OK(wk_reshape(x, (int64_t[]){1, 2, 4}, 3));
    assert_string_equal(wk_grad_fn_name(TU_OK(wk_attention(q, q, q, NULL))), "wk_attention");
    /* untracked inputs record nothing */
    wk_tensor *u = rnd((int64_t[]){2, 4}, 2, 1.0);
    assert_false(wk_is_tracked(TU_OK(wk_softmax(u, 1))));
    wk_no_grad_begin();
    assert_false(wk_is_tracked(TU_OK(wk_softmax(x, 1))));
    wk_no_grad_end();
    wk_scope_end();
}

/* Plain sums as losses: the output's gradient reaches each rule as a
 * broadcast view (stride 0), which the fused kernels read through their
 * strides; fused and composite agree, and softmax's rows (sum 1) get 0. */
static wk_tensor *loss_sum(const fcase *c, wk_tensor *const *in, int nin) { return wk_sum_all(f_case(in, nin, (void *)c)); }

static void test_broadcast_grad_output(void **state) {
    (void)state;
    wk_scope_begin();
    att_shape s = {1, 4, 2, 5, 9, 8, 8};
    wk_tensor *in[4];
    att_inputs(&s, 2, true, in);
    wk_tensor *w = TU_OK(wk_affine(rnd((int64_t[]){8}, 1, 0.3), 1.0, 1.0)), *b = rnd((int64_t[]){8}, 1, 0.3);
    wk_tensor *ni[3] = {in[0], w, b};
    wk_tensor *ri[3] = {in[0], rnd((int64_t[]){5, 4}, 2, 1.0), rnd((int64_t[]){5, 4}, 2, 1.0)};
    fcase cs[5] = {{.kind = F_ATTN, .causal = true, .q_offset = 4}, {.kind = F_SOFTMAX, .dim = 2},
                   {.kind = F_NORM, .rms = false}, {.kind = F_ROPE}, {.kind = F_SOFTMAX, .dim = -1, .logp = true}};
    wk_tensor *const *ins[5] = {in, in, ni, ri, in};
    int nins[5] = {3, 1, 3, 1, 1};
    for (int k = 0; k < 5; k++) {
        wk_tensor *xs[3];
        for (int i = 0; i < nins[k]; i++) {
            xs[i] = ins[k][i];
            TU_STATUS_OK(wk_requires_grad(xs[i], true));
        }
        wk_tensor *gf[3], *gc[3];
        wk_backward_opts cg = {.create_graph = true};
        TU_STATUS_OK(wk_grad_of(TU_OK(loss_sum(&cs[k], ins[k], k == 3 ? 3 : nins[k])), xs, nins[k], NULL, gf));
        TU_STATUS_OK(wk_grad_of(TU_OK(loss_sum(&cs[k], ins[k], k == 3 ? 3 : nins[k])), xs, nins[k], &cg, gc));
        for (int i = 0; i < nins[k]; i++) {
            char what[64];
            snprintf(what, sizeof what, "sum loss case %d input %d", k, i);
            tu_assert_matches(what, gf[i], TU_OK(wk_detach(gc[i])), 1e-11, 1e-11);
            if (k == 1) assert_true(tu_max_abs_diff(gf[i], TU_OK(wk_zeros_like(gf[i]))) < 1e-12);
            wk_tensor_free(gf[i]);
            wk_tensor_free(gc[i]);
        }
        for (int i = 0; i < nins[k]; i++) TU_STATUS_OK(wk_requires_grad(xs[i], false));
    }
    wk_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_node),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_swiglu),
        cmocka_unit_test(test_attention_fd),
        cmocka_unit_test(test_attention_dtypes_isa),
        cmocka_unit_test(test_threads_bitwise),
        cmocka_unit_test(test_required_only_backend),
        cmocka_unit_test(test_broadcast_grad_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
