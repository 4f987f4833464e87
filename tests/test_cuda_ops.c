/* The CUDA backend's second stage, op by op against the CPU backend (as
 * ggml's test-backend-ops checks every backend against its CPU): the same
 * inputs on both devices, the CUDA result read back and compared.
 *
 * Runs here without a GPU: the public memory-stats API on the CPU device and
 * its argument errors. Everything else needs a CUDA device and skips, saying
 * why, when wk_cuda(0) does not open: convolutions (and transposed) on the
 * four float dtypes with groups/stride/dilation/padding and strided inputs,
 * pooling and upsampling, cumsum/cumprod, sort/argsort/topk (indices exact),
 * random numbers for every float dtype (range, moments, seeding), f8e4m3
 * matmul, cat, index_add over a long id list (the sorted path), uploads through the pinned staging ring (sizes across chunk
 * boundaries, several threads, an upload queued behind long work), the
 * memory-stats API on the device, and moves between two GPUs (skipped with
 * fewer than two). */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const wk_dtype float_dtypes[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
#define N_FLOAT ((int)(sizeof float_dtypes / sizeof float_dtypes[0]))

/* CUDA result vs CPU result of the same op; frees both. Tolerance scaled by
 * the dtype (accumulation orders differ between cuBLAS and wick's GEMM). */
static void check_pair(const char *what, wk_tensor *gpu, wk_tensor *cpu, wk_dtype dt, double scale) {
    if (!gpu) fprintf(stderr, "%s: cuda: %s\n", what, wk_last_error());
    assert_non_null(gpu);
    assert_non_null(cpu);
    double t = tu_tol(dt) * scale;
    tu_assert_matches(what, gpu, cpu, t, t);
    wk_tensor_free(gpu);
    wk_tensor_free(cpu);
}

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

/* x on both devices: the CPU tensor and its copy on g, optionally as a
 * permuted (non-contiguous) view with the same logical values. */
typedef struct pair {
    wk_tensor *c, *g;
} pair;

static pair make_pair(wk_device *g, const int64_t *shape, int rank, wk_dtype dt, double scale, bool strided) {
    pair p;
    if (!strided) {
        p.c = tu_values(shape, rank, dt, scale, 0.0);
        p.g = tu_to_device(p.c, g);
        return p;
    }
    /* the same values stored with the last two dims swapped, viewed back */
    int64_t sw[8];
    memcpy(sw, shape, sizeof(int64_t) * (size_t)rank);
    sw[rank - 1] = shape[rank - 2];
    sw[rank - 2] = shape[rank - 1];
    wk_tensor *base = tu_values(sw, rank, dt, scale, 0.0);
    wk_tensor *gb = tu_to_device(base, g);
    p.c = TU_OK(wk_transpose(base, rank - 2, rank - 1));
    p.g = TU_OK(wk_transpose(gb, rank - 2, rank - 1));
    wk_tensor_free(base);
    wk_tensor_free(gb);
    return p;
}

static void free_pair(pair p) {
    wk_tensor_free(p.c);
    wk_tensor_free(p.g);
}

static void test_cuda_conv(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    struct {
        int64_t n, cin, h, w, cout, kh, kw;
        wk_conv_params p;
    } cases[] = {
        {2, 4, 9, 11, 6, 3, 3, {.padding = 1}},
        {1, 4, 8, 8, 8, 3, 3, {.padding = 1, .stride = 2, .groups = 2}},
        {3, 6, 10, 7, 6, 3, 2, {.padding = 2, .dilation = 2, .groups = 6}},
        {2, 3, 5, 5, 5, 1, 1, {0}},
        {1, 16, 14, 14, 32, 3, 3, {.padding = 1}},
    };
    for (int di = 0; di < N_FLOAT; di++) {
        wk_dtype dt = float_dtypes[di];
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            for (int strided = 0; strided < 2; strided++) {
                int64_t g_ = cases[i].p.groups ? cases[i].p.groups : 1;
                int64_t xs[4] = {cases[i].n, cases[i].cin, cases[i].h, cases[i].w};
                int64_t ws[4] = {cases[i].cout, cases[i].cin / g_, cases[i].kh, cases[i].kw};
                pair x = make_pair(g, xs, 4, dt, 1.0, strided);
                pair w = make_pair(g, ws, 4, dt, 0.5, false);
                check_pair("conv2d", wk_conv2d(x.g, w.g, &cases[i].p), TU_OK(wk_conv2d(x.c, w.c, &cases[i].p)), dt,
                           8.0);
                /* the 1-d version over the last dim of one row */
                wk_tensor *x1c = TU_OK(wk_narrow(x.c, 2, 0, 1)), *x1g = TU_OK(wk_narrow(x.g, 2, 0, 1));
                int64_t s3[3] = {xs[0], xs[1], xs[3]};
                wk_tensor *x3c = TU_OK(wk_reshape(x1c, s3, 3)), *x3g = TU_OK(wk_reshape(x1g, s3, 3));
                int64_t w3[3] = {ws[0], ws[1], ws[3]};
                pair w1 = make_pair(g, w3, 3, dt, 0.5, false);
                check_pair("conv1d", wk_conv1d(x3g, w1.g, &cases[i].p), TU_OK(wk_conv1d(x3c, w1.c, &cases[i].p)),
                           dt, 8.0);
                /* transposed: weight [Cin, Cout/groups, kh, kw] */
                int64_t wt[4] = {cases[i].cin, cases[i].cout / g_, cases[i].kh, cases[i].kw};
                pair wT = make_pair(g, wt, 4, dt, 0.5, false);
                wk_conv_params tp = cases[i].p;
                if ((tp.stride ? tp.stride : 1) > 1) tp.output_padding = 1;
                check_pair("conv_transpose2d", wk_conv_transpose2d(x.g, wT.g, &tp),
                           TU_OK(wk_conv_transpose2d(x.c, wT.c, &tp)), dt, 8.0);
                int64_t wt3[3] = {wt[0], wt[1], wt[3]};
                pair wT1 = make_pair(g, wt3, 3, dt, 0.5, false);
                check_pair("conv_transpose1d", wk_conv_transpose1d(x3g, wT1.g, &tp),
                           TU_OK(wk_conv_transpose1d(x3c, wT1.c, &tp)), dt, 8.0);
                wk_tensor_free(x1c);
                wk_tensor_free(x1g);
                wk_tensor_free(x3c);
                wk_tensor_free(x3g);
                free_pair(x);
                free_pair(w);
                free_pair(w1);
                free_pair(wT);
                free_pair(wT1);
            }
        }
    }
}

static void test_cuda_pool_upsample(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (int di = 0; di < 4; di++) {
        wk_dtype dt = dts[di];
        for (int strided = 0; strided < 2; strided++) {
            int64_t xs[4] = {2, 3, 9, 13};
            pair x = make_pair(g, xs, 4, dt, 1.0, strided);
            check_pair("max_pool2d", wk_max_pool2d(x.g, 3, 3, 2, 2, 1, 1), TU_OK(wk_max_pool2d(x.c, 3, 3, 2, 2, 1, 1)),
                       dt, 0.0);
            check_pair("max_pool2d 2x2", wk_max_pool2d(x.g, 2, 2, 2, 2, 0, 0),
                       TU_OK(wk_max_pool2d(x.c, 2, 2, 2, 2, 0, 0)), dt, 0.0);
            for (int cip = 0; cip < 2; cip++)
                check_pair("avg_pool2d", wk_avg_pool2d(x.g, 3, 2, 1, 2, 1, 1, cip),
                           TU_OK(wk_avg_pool2d(x.c, 3, 2, 1, 2, 1, 1, cip)), dt, 2.0);
            check_pair("upsample_nearest2d", wk_upsample_nearest2d(x.g, 20, 7),
                       TU_OK(wk_upsample_nearest2d(x.c, 20, 7)), dt, 0.0);
            for (int ac = 0; ac < 2; ac++)
                check_pair("upsample_bilinear2d", wk_upsample_bilinear2d(x.g, 17, 29, ac),
                           TU_OK(wk_upsample_bilinear2d(x.c, 17, 29, ac)), dt, 2.0);
            free_pair(x);
        }
    }
}

static void test_cuda_scans_and_order(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16, WK_I32, WK_I64, WK_U8, WK_U32, WK_I16};
    int64_t shapes[][2] = {{7, 300}, {3, 5000}, {1, 1}, {64, 17}, {2, 70000}};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        wk_dtype dt = dts[di];
        bool is_float = wk_dtype_is_float(dt);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            for (int strided = 0; strided < 2; strided++) {
                /* few distinct values: many ties, so the tie order is checked */
                pair x = make_pair(g, shapes[si], 2, dt, is_float ? 3.0 : 5.0, strided);
                for (int dim = 0; dim < 2; dim++) {
                    double loose = is_float ? 64.0 : 0.0; /* long float scans may sum in chunks on the GPU */
                    check_pair("cumsum", wk_cumsum(x.g, dim), TU_OK(wk_cumsum(x.c, dim)), dt, loose);
                    if (shapes[si][dim] <= 300)
                        check_pair("cumprod", wk_cumprod(x.g, dim), TU_OK(wk_cumprod(x.c, dim)), dt, loose);
                    for (int desc = 0; desc < 2; desc++) {
                        wk_tensor *vg = NULL, *ig = NULL, *vc = NULL, *ic = NULL;
                        TU_STATUS_OK(wk_sort(x.g, dim, desc, &vg, &ig));
                        TU_STATUS_OK(wk_sort(x.c, dim, desc, &vc, &ic));
                        check_pair("sort values", vg, vc, dt, 0.0);
                        check_pair("sort indices", ig, ic, WK_I64, 0.0);
                        int64_t k = shapes[si][dim] < 5 ? shapes[si][dim] : 5;
                        TU_STATUS_OK(wk_topk(x.g, k, dim, !desc, &vg, &ig));
                        TU_STATUS_OK(wk_topk(x.c, k, dim, !desc, &vc, &ic));
                        check_pair("topk values", vg, vc, dt, 0.0);
                        check_pair("topk indices", ig, ic, WK_I64, 0.0);
                    }
                }
                free_pair(x);
            }
        }
    }
}

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

static void test_cuda_matmul_f8_and_cat(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    int64_t as[3] = {2, 17, 9}, bs[3] = {2, 9, 13};
    pair a = make_pair(g, as, 3, WK_F8E4M3, 1.0, false), b = make_pair(g, bs, 3, WK_F8E4M3, 1.0, true);
    check_pair("matmul f8e4m3", wk_matmul(a.g, b.g), TU_OK(wk_matmul(a.c, b.c)), WK_F8E4M3, 1.0);
    free_pair(a);
    free_pair(b);
    const wk_dtype dts[] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3};
    for (int di = 0; di < 10; di++) {
        int64_t s1[2] = {5, 7}, s2[2] = {5, 3};
        pair x = make_pair(g, s1, 2, dts[di], 4.0, true), y = make_pair(g, s2, 2, dts[di], 4.0, false);
        for (int dim = 0; dim < 2; dim++) {
            wk_tensor *yc = dim ? wk_tensor_retain(y.c) : TU_OK(wk_transpose(x.c, 0, 1));
            wk_tensor *yg = dim ? wk_tensor_retain(y.g) : TU_OK(wk_transpose(x.g, 0, 1));
            wk_tensor *xc = dim ? wk_tensor_retain(x.c) : TU_OK(wk_transpose(y.c, 0, 1));
            wk_tensor *xg = dim ? wk_tensor_retain(x.g) : TU_OK(wk_transpose(y.g, 0, 1));
            wk_tensor *lc[2] = {xc, yc}, *lg[2] = {xg, yg};
            check_pair("cat", wk_cat(lg, 2, dim), TU_OK(wk_cat(lc, 2, dim)), dts[di], 0.0);
            wk_tensor_free(xc);
            wk_tensor_free(yc);
            wk_tensor_free(xg);
            wk_tensor_free(yg);
        }
        free_pair(x);
        free_pair(y);
    }
}

/* index_add with a long id list over few outer positions, and scatter /
 * scatter_add along one long line, take the sorted paths on the GPU (sort
 * the ids, one item per run): bit-identical to the CPU. */
static void test_cuda_index_add_scatter_long(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F32, WK_BF16, WK_I32, WK_F64};
    int64_t len = 5000, rows = 50, cols = 96;
    int64_t *idv = malloc(sizeof(int64_t) * (size_t)len);
    assert_non_null(idv);
    for (int64_t i = 0; i < len; i++) idv[i] = (i * 7919 + (i % 13) * 31) % rows;
    wk_tensor *ids = TU_OK(wk_from_host(idv, sizeof(int64_t) * (size_t)len, &len, 1, WK_I64, wk_cpu()));
    wk_tensor *gids = tu_to_device(ids, g);
    for (int di = 0; di < 4; di++) {
        int64_t ts[2] = {rows, cols}, ss[2] = {len, cols};
        pair t = make_pair(g, ts, 2, dts[di], 2.0, false), src = make_pair(g, ss, 2, dts[di], 3.0, di % 2 == 1);
        check_pair("index_add (long ids)", wk_index_add(t.g, gids, src.g, 0), TU_OK(wk_index_add(t.c, ids, src.c, 0)),
                   dts[di], 0.0);
        free_pair(t);
        free_pair(src);
    }
    /* scatter_add / scatter along one long line (1-D): the sorted path too */
    int64_t rows1 = 37;
    for (int64_t i = 0; i < len; i++) idv[i] %= rows1;
    wk_tensor *ids1 = TU_OK(wk_from_host(idv, sizeof(int64_t) * (size_t)len, &len, 1, WK_I64, wk_cpu()));
    wk_tensor *gids1 = tu_to_device(ids1, g);
    for (int di = 0; di < 4; di++) {
        pair t = make_pair(g, &rows1, 1, dts[di], 2.0, false), src = make_pair(g, &len, 1, dts[di], 3.0, false);
        check_pair("scatter_add (long line)", wk_scatter_add(t.g, gids1, src.g, 0),
                   TU_OK(wk_scatter_add(t.c, ids1, src.c, 0)), dts[di], 0.0);
        check_pair("scatter (long line)", wk_scatter(t.g, gids1, src.g, 0), TU_OK(wk_scatter(t.c, ids1, src.c, 0)),
                   dts[di], 0.0);
        free_pair(t);
        free_pair(src);
    }
    wk_tensor_free(ids1);
    wk_tensor_free(gids1);
    wk_tensor_free(ids);
    wk_tensor_free(gids);
    free(idv);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_stats_cpu),
        cmocka_unit_test(test_cuda_conv),
        cmocka_unit_test(test_cuda_pool_upsample),
        cmocka_unit_test(test_cuda_scans_and_order),
        cmocka_unit_test(test_cuda_random),
        cmocka_unit_test(test_cuda_matmul_f8_and_cat),
        cmocka_unit_test(test_cuda_index_add_scatter_long),
        cmocka_unit_test(test_cuda_uploads),
        cmocka_unit_test(test_cuda_memory_stats),
        cmocka_unit_test(test_cuda_two_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
