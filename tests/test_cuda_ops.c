/* The CUDA backend's device-specific checks, the ones that are not one op
 * compared with the CPU: random numbers for every float dtype (range,
 * moments, seeding), uploads through the pinned staging ring (sizes across
 * chunk boundaries, several threads, an upload queued behind long work), the
 * memory-stats API (on the CPU device too, with its argument errors), and
 * moves between two GPUs (skipped with fewer than two). Without a CUDA device
 * everything but the CPU memory stats skips, saying why.
 *
 * Also the fused nn entries (src/cuda/nn/cuda_nn.c) against the CPU in the
 * shapes a model runs them in, which the op table's backend cases cannot
 * spell: decode attention over a narrow of a KV cache (split keys), GQA
 * prefill, q_offset, masks, a (B, T, H, D) cache, rope_thd, swiglu.
 *
 * The per-op GPU-vs-CPU comparisons that used to live here (convolutions,
 * pooling / upsampling, cumsum / cumprod, sort / topk, f8e4m3 matmul, cat,
 * index_add / scatter over long id lists) are backend cases of the op table
 * now (tests/oracle/op_table.def), run by tests/test_backend_ops.c. */
#include "testutil.h"
#include "tensor/tensor.h" /* wk__scatter_alias_copies */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------ runs without a device */

static void test_memory_stats_cpu(void **state) {
    (void)state;
    wk_memory_stats s;
    TU_STATUS_OK(wk_device_memory_stats(wk_cpu(), &s));
    int64_t n = 1 << 16;
    wk_tensor *a = TU_OK(wk_zeros(&n, 1, WK_F32, wk_cpu()));
    wk_memory_stats s2;
    TU_STATUS_OK(wk_device_memory_stats(wk_cpu(), &s2));
    assert_true(s2.bytes_in_use >= s.bytes_in_use + (size_t)n * 4 || s2.bytes_in_use >= (size_t)n * 4);
    assert_true(s2.peak_bytes_in_use >= s2.bytes_in_use);
    wk_tensor_free(a);
    size_t released = 0;
    TU_STATUS_OK(wk_device_release_cache(wk_cpu(), &released));
    TU_STATUS_OK(wk_device_memory_stats(wk_cpu(), &s2));
    assert_int_equal(s2.bytes_cached, 0);
    assert_int_equal(wk_device_memory_stats(NULL, &s), WK_ERR_ARG);
    assert_int_equal(wk_device_memory_stats(wk_cpu(), NULL), WK_ERR_ARG);
    assert_int_equal(wk_device_release_cache(NULL, NULL), WK_ERR_ARG);
    wk_clear_error();
}

/* ------------------------------------------------------- needs a device */

static void test_cuda_random(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_F8E4M3};
    int64_t n = 200001;
    for (int di = 0; di < 5; di++) {
        wk_dtype dt = dts[di];
        TU_STATUS_OK(wk_device_set_seed(g, 1234));
        wk_tensor *u = TU_OK(wk_rand(&n, 1, -2.0, 3.0, dt, g));
        wk_tensor *z = TU_OK(wk_randn(&n, 1, 1.0, 2.0, dt, g));
        double *v = malloc(sizeof(double) * (size_t)n);
        assert_non_null(v);
        TU_STATUS_OK(wk_to_host_f64(u, v, (size_t)n));
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; i++) {
            assert_true(v[i] >= -2.0 && v[i] < 3.0);
            sum += v[i];
            sq += v[i] * v[i];
        }
        double mean = sum / (double)n, var = sq / (double)n - mean * mean;
        double coarse = dt == WK_F8E4M3 ? 0.1 : 0.02; /* f8 rounds to 3 mantissa bits */
        assert_true(fabs(mean - 0.5) < coarse * 5);
        assert_true(fabs(var - 25.0 / 12.0) < 25.0 / 12.0 * coarse * 3);
        TU_STATUS_OK(wk_to_host_f64(z, v, (size_t)n));
        sum = sq = 0;
        for (int64_t i = 0; i < n; i++) {
            assert_true(isfinite(v[i]));
            sum += v[i];
            sq += v[i] * v[i];
        }
        mean = sum / (double)n;
        var = sq / (double)n - mean * mean;
        assert_true(fabs(mean - 1.0) < 0.05 + coarse);
        assert_true(fabs(sqrt(var) - 2.0) < 0.05 + coarse * 2);
        /* the same seed gives the same numbers; the next call differs */
        TU_STATUS_OK(wk_device_set_seed(g, 1234));
        wk_tensor *u2 = TU_OK(wk_rand(&n, 1, -2.0, 3.0, dt, g));
        wk_tensor *u3 = TU_OK(wk_rand(&n, 1, -2.0, 3.0, dt, g));
        assert_true(tu_max_abs_diff(u, u2) == 0.0);
        assert_true(tu_max_abs_diff(u2, u3) > 0.0);
        free(v);
        wk_tensor_free(u);
        wk_tensor_free(u2);
        wk_tensor_free(u3);
        wk_tensor_free(z);
    }
    /* integer dtypes are refused by the dispatcher, on every device */
    TU_FAILS(wk_rand(&n, 1, 0, 1, WK_I32, g), WK_ERR_DTYPE);
}

/* Uploads through the staging ring: sizes below, at and across its chunk
 * size (4 MiB), each read back byte-exact. */
static void upload_round_trip(wk_device *g, size_t nbytes, unsigned seed) {
    unsigned char *h = malloc(nbytes ? nbytes : 1), *back = malloc(nbytes ? nbytes : 1);
    assert_true(h && back);
    for (size_t i = 0; i < nbytes; i++) h[i] = (unsigned char)((i * 131u + seed * 7u) >> 3);
    int64_t n = (int64_t)nbytes;
    wk_tensor *t = TU_OK(wk_from_host(h, nbytes, &n, 1, WK_U8, g));
    memset(h, 0xAB, nbytes); /* the caller may reuse its buffer at once */
    TU_STATUS_OK(wk_to_host(t, back, nbytes));
    for (size_t i = 0; i < nbytes; i++) {
        if (back[i] != (unsigned char)((i * 131u + seed * 7u) >> 3)) {
            fprintf(stderr, "upload of %zu bytes: byte %zu differs\n", nbytes, i);
            fail();
        }
    }
    wk_tensor_free(t);
    free(h);
    free(back);
}

typedef struct upload_job {
    wk_device *g;
    unsigned id;
} upload_job;

static void *upload_thread(void *arg) {
    const upload_job *j = arg;
    for (unsigned i = 0; i < 20; i++)
        upload_round_trip(j->g, 1000 + (size_t)(j->id * 977u + i * 65537u) % (3u << 20), j->id + i);
    return NULL;
}

static void test_cuda_uploads(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const size_t sizes[] = {1, 255, 256, 4096, (4u << 20) - 1, 4u << 20, (4u << 20) + 3, 10u << 20, 33u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) upload_round_trip(g, sizes[i], (unsigned)i);
    /* many small uploads: more than a chunk's worth, so the ring wraps */
    for (unsigned i = 0; i < 3000; i++) upload_round_trip(g, 4000 + i % 300, i);
    pthread_t th[4];
    upload_job jobs[4];
    for (unsigned i = 0; i < 4; i++) {
        jobs[i] = (upload_job){g, i};
        assert_int_equal(pthread_create(&th[i], NULL, upload_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    /* an upload queued behind long device work is still ordered after it */
    int64_t big = 1 << 24;
    wk_tensor *a = TU_OK(wk_ones(&big, 1, WK_F32, g));
    for (int i = 0; i < 20; i++) {
        wk_tensor *b = TU_OK(wk_add(a, a));
        wk_tensor_free(a);
        a = b;
    }
    upload_round_trip(g, 12345, 99);
    double first;
    int64_t zero = 0;
    TU_STATUS_OK(wk_get(a, &zero, &first));
    assert_true(first == 1048576.0);
    wk_tensor_free(a);
}

static void test_cuda_memory_stats(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    TU_STATUS_OK(wk_device_synchronize(g));
    wk_memory_stats s, s2;
    TU_STATUS_OK(wk_device_memory_stats(g, &s));
    int64_t n = 3 << 20;
    wk_tensor *a = TU_OK(wk_zeros(&n, 1, WK_F32, g));
    TU_STATUS_OK(wk_device_memory_stats(g, &s2));
    assert_true(s2.bytes_in_use >= s.bytes_in_use + (size_t)n * 4);
    assert_true(s2.bytes_in_use <= s.bytes_in_use + (size_t)n * 4 + (size_t)n * 4 / 8); /* waste <= 1/8 */
    assert_true(s2.peak_bytes_in_use >= s2.bytes_in_use);
    wk_tensor_free(a);
    size_t released = 0;
    TU_STATUS_OK(wk_device_release_cache(g, &released));
    assert_true(released >= (size_t)n * 4);
    TU_STATUS_OK(wk_device_memory_stats(g, &s2));
    assert_int_equal(s2.bytes_cached, 0);
}

static void test_cuda_two_devices(void **state) {
    (void)state;
    wk_device *g0 = tu_cuda_or_skip();
    wk_device *g1 = wk_cuda(1);
    if (!g1) {
        printf("skipped (needs two CUDA devices): %s\n", wk_last_error());
        wk_clear_error();
        skip();
    }
    int64_t s[2] = {33, 65};
    wk_tensor *c = tu_values(s, 2, WK_F32, 1.0, 0.5);
    wk_tensor *a = tu_to_device(c, g0);
    wk_tensor *at = TU_OK(wk_transpose(a, 0, 1));
    wk_tensor *ct = TU_OK(wk_transpose(c, 0, 1));
    wk_tensor *b = tu_to_device(at, g1); /* strided view, gathered on g0 then copied peer to peer */
    wk_tensor *b2 = TU_OK(wk_add(b, b));
    wk_tensor *want = TU_OK(wk_add(ct, ct));
    tu_assert_matches("cuda:0 -> cuda:1", b2, want, 0, 0);
    wk_tensor *back = tu_to_device(b2, g0);
    tu_assert_matches("cuda:1 -> cuda:0", back, want, 0, 0);
    wk_tensor *list[] = {c, a, at, ct, b, b2, want, back};
    for (int i = 0; i < 8; i++) wk_tensor_free(list[i]);
}

/* -------------------------------------- fused nn ops, GPU against CPU */

/* A CPU tensor of shape with deterministic values (scale, shift), and the
 * same on the device g. */
typedef struct pair {
    wk_tensor *c, *g;
} pair;

static pair pair_make(wk_device *g, const int64_t *shape, int rank, wk_dtype dt, double scale, double shift) {
    pair p;
    p.c = tu_values(shape, rank, dt, scale, shift);
    p.g = tu_to_device(p.c, g);
    return p;
}
static pair pair_narrow(pair a, int dim, int64_t start, int64_t len) {
    pair p = {TU_OK(wk_narrow(a.c, dim, start, len)), TU_OK(wk_narrow(a.g, dim, start, len))};
    return p;
}
static pair pair_transpose(pair a, int d0, int d1) {
    pair p = {TU_OK(wk_transpose(a.c, d0, d1)), TU_OK(wk_transpose(a.g, d0, d1))};
    return p;
}
static void pair_free(pair *p) {
    wk_tensor_free(p->c);
    wk_tensor_free(p->g);
}
/* the device result against the CPU's, tolerance k * tu_tol(dt) (rel and abs) */
static void pair_check(const char *what, wk_tensor *gpu, wk_tensor *cpu, double k) {
    assert_non_null(gpu);
    assert_non_null(cpu);
    double t = k * tu_tol(wk_tensor_dtype(cpu));
    tu_assert_matches(what, gpu, cpu, t, t);
    wk_tensor_free(gpu);
    wk_tensor_free(cpu);
}

/* One attention case: q (B, Hq, Lq, D); k / v the first Lk positions of a
 * cache of tmax, stored (B, Hkv, tmax, D) or, thd, (B, tmax, Hkv, D). */
static void attention_case(wk_device *g, wk_dtype dt, int64_t B, int64_t hq, int64_t hkv, int64_t lq, int64_t lk,
                           int64_t d, int64_t tmax, bool thd, bool causal, int64_t off, bool mask) {
    int64_t qs[4] = {B, hq, lq, d};
    int64_t cs[4] = {B, thd ? tmax : hkv, thd ? hkv : tmax, d};
    pair q = pair_make(g, qs, 4, dt, 1.0, 0.1);
    pair kc = pair_make(g, cs, 4, dt, 1.0, -0.2), vc = pair_make(g, cs, 4, dt, 1.5, 0.3);
    pair kt = thd ? pair_transpose(kc, 1, 2) : kc, vt = thd ? pair_transpose(vc, 1, 2) : vc;
    pair k = pair_narrow(kt, 2, 0, lk), v = pair_narrow(vt, 2, 0, lk);
    int64_t ms[2] = {lq, lk};
    pair m = {NULL, NULL};
    if (mask) m = pair_make(g, ms, 2, dt, 2.0, 0.0);
    wk_attention_opts oc = {.mask = m.c, .scale = 0, .causal = causal, .q_offset = off};
    wk_attention_opts og = oc;
    og.mask = m.g;
    char what[160];
    snprintf(what, sizeof what, "attention %s B%lld Hq%lld Hkv%lld Lq%lld Lk%lld D%lld%s%s off %lld%s",
             wk_dtype_name(dt), (long long)B, (long long)hq, (long long)hkv, (long long)lq, (long long)lk,
             (long long)d, thd ? " thd" : "", causal ? " causal" : "", (long long)off, mask ? " mask" : "");
    pair_check(what, wk_attention(q.g, k.g, v.g, &og), wk_attention(q.c, k.c, v.c, &oc), 16);
    pair_free(&q);
    pair_free(&k);
    pair_free(&v);
    if (thd) {
        pair_free(&kt);
        pair_free(&vt);
    }
    pair_free(&kc);
    pair_free(&vc);
    if (mask) pair_free(&m);
}

static void test_cuda_fused_nn(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (int di = 0; di < 4; di++) {
        wk_dtype dt = dts[di];
        /* decode with a cache (split keys), SmolLM2's heads */
        attention_case(g, dt, 1, 9, 3, 1, 300, 64, 512, false, true, 299, false);
        attention_case(g, dt, 1, 9, 3, 1, 1500, 64, 2048, true, true, 1499, false);
        /* causal prefill with GQA, a q_offset, masks, odd head dims */
        attention_case(g, dt, 2, 4, 2, 37, 37, 80, 64, false, true, 0, false);
        attention_case(g, dt, 1, 8, 2, 5, 70, 3, 96, true, true, 65, true);
        attention_case(g, dt, 2, 3, 3, 6, 40, 1, 40, false, false, 0, true);
        attention_case(g, dt, 1, 2, 1, 3, 20, 300, 20, false, false, 0, false);

        /* softmax / log_softmax along a middle dim and a long last dim */
        int64_t s3[3] = {4, 33, 5}, sl[2] = {6, 3000};
        pair a = pair_make(g, s3, 3, dt, 3.0, 0.0), b = pair_make(g, sl, 2, dt, 4.0, 0.5);
        pair at = pair_transpose(a, 0, 2);
        pair_check("softmax dim 1", wk_softmax(at.g, 1), wk_softmax(at.c, 1), 8);
        pair_check("log_softmax dim 0", wk_log_softmax(at.g, 0), wk_log_softmax(at.c, 0), 8);
        pair_check("softmax last", wk_softmax(b.g, -1), wk_softmax(b.c, -1), 8);
        pair_check("log_softmax last", wk_log_softmax(b.g, -1), wk_log_softmax(b.c, -1), 8);

        /* norms over SmolLM2's hidden size, with and without weight / bias */
        int64_t sx[2] = {5, 576}, sw = 576;
        pair x = pair_make(g, sx, 2, dt, 2.0, 0.2), w = pair_make(g, &sw, 1, dt, 0.5, 1.0),
             bb = pair_make(g, &sw, 1, dt, 0.3, 0.0);
        pair_check("rms_norm", wk_rms_norm(x.g, w.g, 1e-5), wk_rms_norm(x.c, w.c, 1e-5), 8);
        pair_check("rms_norm no weight", wk_rms_norm(x.g, NULL, 1e-6), wk_rms_norm(x.c, NULL, 1e-6), 8);
        pair_check("layer_norm", wk_layer_norm(x.g, w.g, bb.g, 1e-5), wk_layer_norm(x.c, w.c, bb.c, 1e-5), 8);
        pair_check("layer_norm bare", wk_layer_norm(x.g, NULL, NULL, 1e-5), wk_layer_norm(x.c, NULL, NULL, 1e-5), 8);

        /* rope: cos / sin a narrow of a table; both layouts, both pairings */
        int64_t sb[4] = {2, 3, 7, 64}, st[4] = {2, 7, 3, 64}, tab[2] = {40, 32};
        pair xr = pair_make(g, sb, 4, dt, 1.0, 0.0), xt = pair_make(g, st, 4, dt, 1.0, 0.1);
        pair ct = pair_make(g, tab, 2, dt, 0.4, 0.0), sn = pair_make(g, tab, 2, dt, 0.4, 0.1);
        pair c7 = pair_narrow(ct, 0, 11, 7), s7 = pair_narrow(sn, 0, 11, 7);
        for (int inter = 0; inter < 2; inter++) {
            pair_check(inter ? "rope interleaved" : "rope", wk_rope(xr.g, c7.g, s7.g, inter),
                       wk_rope(xr.c, c7.c, s7.c, inter), 4);
            pair_check(inter ? "rope_thd interleaved" : "rope_thd", wk_rope_thd(xt.g, c7.g, s7.g, inter),
                       wk_rope_thd(xt.c, c7.c, s7.c, inter), 4);
        }

        /* swiglu on a transposed view */
        int64_t ss[2] = {3072, 4};
        pair sg = pair_make(g, ss, 2, dt, 3.0, 0.0), sgt = pair_transpose(sg, 0, 1);
        pair_check("swiglu", wk_swiglu(sgt.g), wk_swiglu(sgt.c), 4);

        pair all[] = {a, b, at, x, w, bb, xr, xt, ct, sn, c7, s7, sg, sgt};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pair_free(&all[i]);
    }
}

/* ------------------------- in-place scatter with an aliasing src / ids */

/* f64 values of a small tensor, read back */
static void values_of(const wk_tensor *t, double *out, size_t n) { TU_STATUS_OK(wk_to_host_f64(t, out, n)); }

static void expect_values(const char *what, const wk_tensor *t, const double *want, size_t n) {
    double got[16];
    assert_true(n <= 16);
    values_of(t, got, n);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "%s: element %zu is %g, want %g\n", what, i, got[i], want[i]);
            fail();
        }
}

/* A tensor of its own storage on g with c's values (wk_to_device onto
 * c's own device may share c's storage: the dry run's case). Frees c. */
static wk_tensor *fresh_on(wk_tensor *c, wk_device *g) {
    wk_tensor *r = tu_to_device(c, g);
    wk_tensor *x = TU_OK(wk_copy(r));
    wk_tensor_free(r);
    wk_tensor_free(c);
    return x;
}

/* wk_scatter_ / wk_scatter_add_ whose src or ids are views of the
 * destination itself: the result is the scatter of the values as they were
 * before the call (the dispatcher copies the aliasing input out first; a GPU
 * would otherwise run reads and writes of one buffer concurrently). The
 * small cases are built so that reading as you write gives another answer
 * (or, for ids, another index): they fail on the CPU too if the copy goes. */
static void test_cuda_scatter_alias(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    int64_t n6 = 6, n3 = 3, n4 = 4, n2 = 2;
    const double t6[6] = {0, 1, 2, 3, 4, 5};
    const int64_t i123[3] = {1, 2, 3};
    wk_tensor *ids = fresh_on(TU_OK(wk_from_host(i123, sizeof i123, &n3, 1, WK_I64, wk_cpu())), g);
    for (int add = 0; add < 2; add++) {
        uint64_t before = wk__scatter_alias_copies();
        wk_tensor *tc = TU_OK(wk_from_host(t6, sizeof t6, &n6, 1, WK_F64, wk_cpu()));
        wk_tensor *t = fresh_on(TU_OK(wk_to_dtype(tc, WK_F32)), g);
        wk_tensor *src = TU_OK(wk_narrow(t, 0, 0, 3)); /* t[0..2], written at t[1..3] */
        TU_STATUS_OK(add ? wk_scatter_add_(t, ids, src, 0) : wk_scatter_(t, ids, src, 0));
        /* set: t[1], t[2], t[3] = 0, 1, 2 (reading as it writes: 0, 0, 0);
         * add: t[1..3] += 0, 1, 2 (reading as it writes: 1, 3, 6) */
        const double want_set[6] = {0, 0, 1, 2, 4, 5}, want_add[6] = {0, 1, 3, 5, 4, 5};
        expect_values(add ? "scatter_add_ with src aliasing t" : "scatter_ with src aliasing t", t,
                      add ? want_add : want_set, 6);
        assert_true(wk__scatter_alias_copies() == before + 1);
        wk_tensor *list[] = {tc, t, src};
        for (int i = 0; i < 3; i++) wk_tensor_free(list[i]);
    }
    /* ids a view of the (i64) destination: t = [1, 2, 0, 0], ids = t[0..1],
     * src = [0, 3]: t[1] = 0, t[2] = 3 (reading the ids as it writes would
     * take id t[1] = 0 for the second write: [3, 0, 0, 0]) */
    {
        uint64_t before = wk__scatter_alias_copies();
        const int64_t tv[4] = {1, 2, 0, 0}, sv[2] = {0, 3};
        wk_tensor *t = fresh_on(TU_OK(wk_from_host(tv, sizeof tv, &n4, 1, WK_I64, wk_cpu())), g);
        wk_tensor *sr = fresh_on(TU_OK(wk_from_host(sv, sizeof sv, &n2, 1, WK_I64, wk_cpu())), g);
        wk_tensor *iv = TU_OK(wk_narrow(t, 0, 0, 2));
        TU_STATUS_OK(wk_scatter_(t, iv, sr, 0));
        const double want[4] = {1, 0, 3, 0};
        expect_values("scatter_ with ids aliasing t", t, want, 4);
        assert_true(wk__scatter_alias_copies() == before + 1);
        wk_tensor_free(iv);
        wk_tensor_free(sr);
        wk_tensor_free(t);
    }
    /* no alias, no copy */
    {
        uint64_t before = wk__scatter_alias_copies();
        wk_tensor *t = fresh_on(TU_OK(wk_zeros(&n6, 1, WK_F32, wk_cpu())), g);
        wk_tensor *sr = fresh_on(TU_OK(wk_ones(&n3, 1, WK_F32, wk_cpu())), g);
        TU_STATUS_OK(wk_scatter_add_(t, ids, sr, 0));
        assert_true(wk__scatter_alias_copies() == before);
        wk_tensor_free(sr);
        wk_tensor_free(t);
    }
    /* a wide case for the GPU's concurrency: t (64, 128) f32 scattered into
     * itself along dim 0 by a permutation of each column (no duplicate
     * targets, so exact); the reference scatters an explicit copy */
    {
        int64_t s2[2] = {64, 128};
        int64_t *iv = malloc(sizeof(int64_t) * 64 * 128);
        assert_non_null(iv);
        for (int64_t i = 0; i < 64; i++)
            for (int64_t j = 0; j < 128; j++) iv[i * 128 + j] = (i * 7 + j) % 64;
        wk_tensor *ic = TU_OK(wk_from_host(iv, sizeof(int64_t) * 64 * 128, s2, 2, WK_I64, wk_cpu()));
        free(iv);
        wk_tensor *tc = tu_values(s2, 2, WK_F32, 1.0, 0.25);
        for (int add = 0; add < 2; add++) {
            wk_tensor *t = fresh_on(TU_OK(wk_copy(tc)), g), *ref = fresh_on(TU_OK(wk_copy(tc)), g);
            wk_tensor *ig = tu_to_device(ic, g);
            wk_tensor *src = TU_OK(wk_copy(ref));
            TU_STATUS_OK(add ? wk_scatter_add_(t, ig, t, 0) : wk_scatter_(t, ig, t, 0));
            TU_STATUS_OK(add ? wk_scatter_add_(ref, ig, src, 0) : wk_scatter_(ref, ig, src, 0));
            tu_assert_matches(add ? "scatter_add_ (64, 128) into itself" : "scatter_ (64, 128) into itself", t, ref,
                              0, 0);
            wk_tensor *list[] = {t, ref, ig, src};
            for (int i = 0; i < 4; i++) wk_tensor_free(list[i]);
        }
        wk_tensor_free(ic);
        wk_tensor_free(tc);
    }
    wk_tensor_free(ids);
}

/* f16 / bf16 GEMM with a long k: cuBLAS must accumulate in f32 and round
 * once (reduced-precision split-K reduction disallowed), so the result is
 * within a unit or two of the CPU's (which accumulates in f32). With f16
 * partial sums each split would add its own f16 rounding. */
static void test_cuda_half_gemm_long_k(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F16, WK_BF16};
    for (int di = 0; di < 2; di++) {
        int64_t sa[2] = {32, 8192}, sb[2] = {8192, 48};
        wk_tensor *ac = tu_values(sa, 2, dts[di], 0.5, 0.1), *bc = tu_values(sb, 2, dts[di], 0.5, -0.2);
        wk_tensor *ag = tu_to_device(ac, g), *bg = tu_to_device(bc, g);
        wk_tensor *rc = TU_OK(wk_matmul(ac, bc)), *rg = TU_OK(wk_matmul(ag, bg));
        double t = 2 * tu_tol(dts[di]);
        tu_assert_matches(dts[di] == WK_F16 ? "f16 matmul k=8192" : "bf16 matmul k=8192", rg, rc, t, t);
        wk_tensor *list[] = {ac, bc, ag, bg, rc, rg};
        for (int i = 0; i < 6; i++) wk_tensor_free(list[i]);
    }
}

/* Issue 15: a bad id does not make the indexing op wait. On a GPU the op
 * returns at once and the next wait (wk_device_synchronize) reports
 * WK_ERR_INDEX under the op's name with the id and the size; in the dry run
 * (the CPU stands in) the op itself reports it. Either way the message is
 * the same and an in-place scatter_ leaves its destination untouched. */
static void expect_index_error(wk_device *g, wk_tensor *out, wk_status op_st, const char *opname, const char *what) {
    wk_status st = op_st;
    if (st == WK_OK) st = wk_device_synchronize(g); /* queued: reported by the next wait */
    const char *m = wk_last_error();
    if (st != WK_ERR_INDEX || !m || !strstr(m, opname) || !strstr(m, "index 9 is out of range") ||
        !strstr(m, "of size 4"))
        fail_msg("%s: want WK_ERR_INDEX from %s naming index 9 and size 4, got %s: %s", what, opname,
                 wk_status_name(st), m ? m : "(null)");
    wk_tensor_free(out);
    wk_clear_error();
    assert_int_equal(wk_device_synchronize(g), WK_OK); /* reported once */
}

static void test_cuda_index_queued(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    float tv[12];
    for (int i = 0; i < 12; i++) tv[i] = (float)i;
    int64_t tsh[2] = {4, 3}, ish[1] = {3}, ish2[2] = {3, 3};
    int64_t bad[3] = {1, 9, 2}, bad2[9] = {0, 1, 2, 3, 9, 1, 0, 0, 0};
    wk_tensor *t = wk_from_host(tv, sizeof tv, tsh, 2, WK_F32, g);
    wk_tensor *ids = wk_from_host(bad, sizeof bad, ish, 1, WK_I64, g);
    wk_tensor *ids2 = wk_from_host(bad2, sizeof bad2, ish2, 2, WK_I64, g);
    assert_non_null(t);
    assert_non_null(ids);
    assert_non_null(ids2);
    wk_tensor *r = wk_index_select(t, ids, 0);
    expect_index_error(g, r, r ? WK_OK : wk_last_status(), "wk_index_select", "index_select");
    r = wk_gather(t, ids2, 0);
    expect_index_error(g, r, r ? WK_OK : wk_last_status(), "wk_gather", "gather");
    wk_tensor *src = wk_ones(ish2, 2, WK_F32, g);
    assert_non_null(src);
    wk_status st = wk_scatter_(t, ids2, src, 0);
    expect_index_error(g, NULL, st, "wk_scatter", "scatter_");
    float back[12];
    assert_int_equal(wk_to_host(t, back, sizeof back), WK_OK);
    for (int i = 0; i < 12; i++)
        if (back[i] != tv[i]) fail_msg("scatter_ with a bad id wrote element %d: %g", i, back[i]);
    /* a clean op after the error runs and reads back normally */
    int64_t good[3] = {3, 0, 3};
    wk_tensor *gids = wk_from_host(good, sizeof good, ish, 1, WK_I64, g);
    r = gids ? wk_index_select(t, gids, 0) : NULL;
    assert_non_null(r);
    float sel[9];
    assert_int_equal(wk_to_host(r, sel, sizeof sel), WK_OK);
    assert_true(sel[0] == 9.0f && sel[3] == 0.0f && sel[8] == 11.0f);
    wk_tensor_free(r);
    wk_tensor_free(gids);
    wk_tensor_free(src);
    wk_tensor_free(ids2);
    wk_tensor_free(ids);
    wk_tensor_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_stats_cpu),
        cmocka_unit_test(test_cuda_random),
        cmocka_unit_test(test_cuda_uploads),
        cmocka_unit_test(test_cuda_memory_stats),
        cmocka_unit_test(test_cuda_two_devices),
        cmocka_unit_test(test_cuda_fused_nn),
        cmocka_unit_test(test_cuda_scatter_alias),
        cmocka_unit_test(test_cuda_half_gemm_long_k),
        cmocka_unit_test(test_cuda_index_queued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
