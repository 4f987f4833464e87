/* The CUDA backend's device-specific checks, the ones that are not one op
 * compared with the CPU: random numbers for every float dtype (range,
 * moments, seeding), uploads through the pinned staging ring (sizes across
 * chunk boundaries, several threads, an upload queued behind long work), the
 * memory-stats API (on the CPU device too, with its argument errors), and
 * moves between two GPUs (skipped with fewer than two). Without a CUDA device
 * everything but the CPU memory stats skips, saying why.
 *
 * The per-op GPU-vs-CPU comparisons that used to live here (convolutions,
 * pooling / upsampling, cumsum / cumprod, sort / topk, f8e4m3 matmul, cat,
 * index_add / scatter over long id lists) are backend cases of the op table
 * now (tests/oracle/op_table.def), run by tests/test_backend_ops.c. */
#include "testutil.h"

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_stats_cpu),
        cmocka_unit_test(test_cuda_random),
        cmocka_unit_test(test_cuda_uploads),
        cmocka_unit_test(test_cuda_memory_stats),
        cmocka_unit_test(test_cuda_two_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
