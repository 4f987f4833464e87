/* The CUDA backend.
 *
 * Part 1 always runs (no GPU, no CUDA needed): the buffer pool's bookkeeping
 * (src/cuda/memory/cuda_pool.c) with an injected allocator - size classes and their
 * waste bound, stream-ordered reuse, counters, release, allocation failure
 * with the pool staying usable, many threads - and wk_cuda's error answers.
 *
 * Part 2 needs a CUDA device: every test there calls tu_cuda_or_skip(), which
 * prints why and skips (cmocka skip()) when wk_cuda(0) fails - no CUDA
 * backend compiled in, no driver, no device. With a device: round trips of
 * every dtype, views read back, a one-element readback of a 1024x1024
 * result, elementwise ops, casts and comparisons against the CPU backend,
 * integer division by zero reported at readback, a multi-thread readback
 * hammer, matmul against the CPU (transposed, narrowed, batched, broadcast,
 * the narrowed 4-D batch of seed 002), pool counters and allocation failure
 * on the device. The ops of the second stage (convolutions, pools, scans,
 * sort, random numbers, uploads, moves between GPUs) are in test_cuda_ops.c. */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "cuda/runtime/cuda_device.h"
#include "cuda/gemm/cuda_mm_plan.h"
#include "cuda/memory/cuda_pool.h"

/* ------------------------------------------------------------------ part 1 */

/* A fake device allocator: malloc under a byte budget, with counters. */
typedef struct fake_dev {
    pthread_mutex_t lock;
    size_t budget, used;
    int64_t live, allocs, frees, syncs;
    size_t last_free_size;
} fake_dev;

static int fake_alloc(void *ctx, size_t n, void **p) {
    fake_dev *f = ctx;
    pthread_mutex_lock(&f->lock);
    int rc = 1;
    *p = NULL;
    if (f->used + n <= f->budget && (*p = malloc(n)) != NULL) {
        f->used += n;
        f->live++;
        f->allocs++;
        rc = 0;
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}
static void fake_free(void *ctx, void *p, size_t n) {
    fake_dev *f = ctx;
    pthread_mutex_lock(&f->lock);
    f->used -= n;
    f->live--;
    f->frees++;
    f->last_free_size = n;
    pthread_mutex_unlock(&f->lock);
    free(p);
}
static void fake_sync(void *ctx) {
    fake_dev *f = ctx;
    pthread_mutex_lock(&f->lock);
    f->syncs++;
    pthread_mutex_unlock(&f->lock);
}
static void fake_init(fake_dev *f, size_t budget) {
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
    f->budget = budget;
}

static void test_pool_size_classes(void **state) {
    (void)state;
    assert_int_equal(wk__cupool_class_size(0), 32);
    assert_int_equal(wk__cupool_class_size(1), 32);
    assert_int_equal(wk__cupool_class_size(33), 64);
    assert_int_equal(wk__cupool_class_size(256), 256);
    assert_int_equal(wk__cupool_class_size(257), 288);
    assert_int_equal(wk__cupool_class_size(1000), 1024);
    assert_int_equal(wk__cupool_class_size(1025), 1152);
    assert_int_equal(wk__cupool_class_size(4u << 20), 4u << 20);
    assert_int_equal(wk__cupool_class_size((4u << 20) + 1), (4u << 20) + (512u << 10));
    assert_int_equal(wk__cupool_class_size(SIZE_MAX), 0);
    /* waste bound and monotonicity over small sizes and a pseudo-random sweep */
    size_t prev = 0;
    for (size_t n = 0; n < 70000; n++) {
        size_t c = wk__cupool_class_size(n);
        assert_true(c >= n && c >= prev);
        if (n >= 256) assert_true((c - n) * 8 <= n);
        else assert_true(c - n < 32 || n == 0);
        assert_true(c % 32 == 0);
        prev = c;
    }
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x >> (20 + i % 40));
        size_t c = wk__cupool_class_size(n);
        assert_true(c >= n);
        if (n >= 256) assert_true((c - n) * 8 <= n);
        assert_int_equal(wk__cupool_class_size(c), c); /* classes are fixed points */
    }
    /* 8 classes per octave, not power-of-two rounding */
    for (int k = 9; k < 40; k++) {
        size_t lo = (size_t)1 << k, distinct = 0, last = 0;
        for (size_t j = 1; j <= 64; j++) {
            size_t c = wk__cupool_class_size(lo + j * (lo / 64));
            if (c != last) distinct++, last = c;
        }
        assert_int_equal(distinct, 8);
    }
}

static void test_pool_reuse_and_counters(void **state) {
    (void)state;
    fake_dev f;
    fake_init(&f, (size_t)1 << 30);
    wk_cupool *p = wk__cupool_new(fake_alloc, fake_free, fake_sync, &f);
    assert_non_null(p);
    void *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(wk__cupool_alloc(p, 1000, &a), WK_OK);
    assert_non_null(a);
    wk_cupool_stats s;
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_in_use, 1024);
    assert_int_equal(s.bytes_cached, 0);
    assert_int_equal(s.misses, 1);
    /* freed then requested again (same class): the same block, no device call -
     * stream-ordered reuse, later work on the one stream runs after earlier work */
    wk__cupool_free(p, a, 1000);
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_in_use, 0);
    assert_int_equal(s.bytes_cached, 1024);
    assert_int_equal(f.syncs, 0); /* freeing into the cache never waits */
    assert_int_equal(wk__cupool_alloc(p, 1020, &b), WK_OK);
    assert_ptr_equal(a, b);
    wk__cupool_stats(p, &s);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.bytes_cached, 0);
    assert_int_equal(f.allocs, 1);
    /* another class does not take it */
    wk__cupool_free(p, b, 1020);
    assert_int_equal(wk__cupool_alloc(p, 2000, &c), WK_OK);
    assert_ptr_not_equal(c, b);
    assert_int_equal(f.allocs, 2);
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_in_use, 2048);
    assert_int_equal(s.peak_in_use, 2048);
    assert_int_equal(s.bytes_cached, 1024);
    /* 0-byte requests get a real, distinct block */
    void *z = NULL;
    assert_int_equal(wk__cupool_alloc(p, 0, &z), WK_OK);
    assert_non_null(z);
    wk__cupool_free(p, z, 0);
    wk__cupool_free(p, c, 2000);
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_in_use, 0);
    assert_int_equal(s.bytes_cached, 1024 + 2048 + 32);
    /* release: waits once, returns every cached block with its class size */
    int64_t syncs = f.syncs;
    assert_int_equal(wk__cupool_release(p), 1024 + 2048 + 32);
    assert_int_equal(f.syncs, syncs + 1);
    assert_int_equal(f.live, 0);
    assert_int_equal(f.used, 0);
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_cached, 0);
    assert_int_equal(s.peak_in_use, 2048 + 32); /* c and z were live together */
    assert_int_equal(wk__cupool_release(p), 0); /* nothing cached: no wait */
    assert_int_equal(f.syncs, syncs + 1);
    /* many blocks of one class come back LIFO and all are returned */
    void *blk[100];
    for (int i = 0; i < 100; i++) assert_int_equal(wk__cupool_alloc(p, 5000, &blk[i]), WK_OK);
    for (int i = 0; i < 100; i++) wk__cupool_free(p, blk[i], 5000);
    void *again = NULL;
    assert_int_equal(wk__cupool_alloc(p, 5000, &again), WK_OK);
    assert_ptr_equal(again, blk[99]);
    wk__cupool_free(p, again, 5000);
    wk__cupool_destroy(p); /* returns the cache */
    assert_int_equal(f.live, 0);
    pthread_mutex_destroy(&f.lock);
}

static void test_pool_allocation_failure(void **state) {
    (void)state;
    fake_dev f;
    fake_init(&f, 10000);
    wk_cupool *p = wk__cupool_new(fake_alloc, fake_free, fake_sync, &f);
    assert_non_null(p);
    void *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(wk__cupool_alloc(p, 4096, &a), WK_OK);
    assert_int_equal(wk__cupool_alloc(p, 4096, &b), WK_OK);
    /* too big for what is left, nothing cached: an error, no crash */
    assert_int_equal(wk__cupool_alloc(p, 4096, &c), WK_ERR_OOM);
    assert_null(c);
    wk_cupool_stats s;
    wk__cupool_stats(p, &s);
    assert_int_equal(s.failures, 1);
    assert_int_equal(s.bytes_in_use, 8192);
    /* the pool stays usable: a small block still fits */
    assert_int_equal(wk__cupool_alloc(p, 100, &c), WK_OK);
    wk__cupool_free(p, c, 100);
    /* a cached block of another class is given back to make room, then the
     * allocation is retried and succeeds */
    wk__cupool_free(p, a, 4096);
    int64_t syncs = f.syncs;
    void *big = NULL;
    assert_int_equal(wk__cupool_alloc(p, 5000, &big), WK_OK); /* class 5120 */
    assert_non_null(big);
    assert_true(f.syncs > syncs); /* the cache was released after a wait */
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_cached, 0);
    assert_int_equal(s.bytes_in_use, 4096 + 5120);
    /* impossible sizes are errors too */
    void *huge = NULL;
    assert_int_equal(wk__cupool_alloc(p, SIZE_MAX, &huge), WK_ERR_OOM);
    assert_null(huge);
    wk__cupool_free(p, big, 5000);
    wk__cupool_free(p, b, 4096);
    wk__cupool_destroy(p);
    assert_int_equal(f.live, 0);
    assert_null(wk__cupool_new(NULL, fake_free, NULL, &f));
    pthread_mutex_destroy(&f.lock);
}

typedef struct pool_worker {
    wk_cupool *p;
    unsigned seed;
    int ok;
} pool_worker;

static void *pool_thread(void *arg) {
    pool_worker *w = arg;
    void *mine[16] = {0};
    size_t sizes[16] = {0};
    unsigned x = w->seed;
    w->ok = 1;
    for (int i = 0; i < 20000; i++) {
        x = x * 1103515245u + 12345u;
        int slot = (int)((x >> 16) % 16);
        if (mine[slot]) {
            /* the block is ours alone: its first byte still holds our tag */
            if (*(unsigned char *)mine[slot] != (unsigned char)w->seed) w->ok = 0;
            wk__cupool_free(w->p, mine[slot], sizes[slot]);
            mine[slot] = NULL;
        } else {
            sizes[slot] = 1 + (x >> 8) % 3000;
            if (wk__cupool_alloc(w->p, sizes[slot], &mine[slot]) != WK_OK) w->ok = 0;
            else *(unsigned char *)mine[slot] = (unsigned char)w->seed;
        }
    }
    for (int s = 0; s < 16; s++)
        if (mine[s]) wk__cupool_free(w->p, mine[s], sizes[s]);
    return NULL;
}

static void test_pool_threads(void **state) {
    (void)state;
    fake_dev f;
    fake_init(&f, (size_t)1 << 30);
    wk_cupool *p = wk__cupool_new(fake_alloc, fake_free, fake_sync, &f);
    assert_non_null(p);
    enum { NT = 6 };
    pthread_t th[NT];
    pool_worker w[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = (pool_worker){.p = p, .seed = 17u + (unsigned)i * 31u};
        assert_int_equal(pthread_create(&th[i], NULL, pool_thread, &w[i]), 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        assert_true(w[i].ok);
    }
    wk_cupool_stats s;
    wk__cupool_stats(p, &s);
    assert_int_equal(s.bytes_in_use, 0);
    assert_int_equal(s.bytes_cached, f.used); /* every device byte is accounted for */
    assert_true(s.hits > s.misses);           /* reuse dominates */
    wk__cupool_destroy(p);
    assert_int_equal(f.live, 0);
    pthread_mutex_destroy(&f.lock);
}

/* ---- matmul's cuBLAS mapping, checked on the host ----
 * cuBLAS's GEMM as documented (column-major): C[i + j ldc] = sum_p
 * op(A)[i, p] op(B)[p, j], op(X)[i, p] = X[i + p ld] (N) or X[p + i ld] (T),
 * with its argument checks. Run with exactly the arguments the CUDA backend
 * passes (src/cuda/gemm/cuda_mm_plan.c) on CPU f64 tensors, against wk_matmul. */
static void host_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *A, int64_t lda,
                      const double *B, int64_t ldb, double *C, int64_t ldc) {
    assert_true(lda >= (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)));
    assert_true(ldb >= (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)));
    assert_true(ldc >= (m > 1 ? m : 1));
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++)
                acc += (ta ? A[p + i * lda] : A[i + p * lda]) * (tb ? B[j + p * ldb] : B[p + j * ldb]);
            C[i + j * ldc] = acc;
        }
}

static int plan_paths[3]; /* strided-batched calls, per-batch loops, operand copies */

static void emulate_and_check(const char *what, const wk_tensor *a, const wk_tensor *b) {
    wk_tensor *want = TU_OK(wk_matmul(a, b));
    int64_t total = wk_numel(want);
    double *ref = malloc(sizeof(double) * (size_t)(total ? total : 1));
    double *out = calloc((size_t)(total ? total : 1), sizeof(double));
    assert_true(ref && out);
    TU_STATUS_OK(wk_to_host(want, ref, sizeof(double) * (size_t)total));
    wk_layout la = a->layout, lb = b->layout;
    const double *pa = a->storage->buf, *pb = b->storage->buf;
    wk_tensor *ca = NULL, *cb = NULL;
    wk_cumm_call c;
    assert_true(wk__cumm_plan(&la, &lb, &c));
    if (c.copy_a || c.copy_b) {
        plan_paths[2]++;
        if (c.copy_a) {
            ca = TU_OK(wk_copy(a));
            la = ca->layout;
            pa = ca->storage->buf;
        }
        if (c.copy_b) {
            cb = TU_OK(wk_copy(b));
            lb = cb->layout;
            pb = cb->storage->buf;
        }
        assert_true(wk__cumm_plan(&la, &lb, &c));
        assert_false(c.copy_a || c.copy_b);
    }
    plan_paths[c.strided ? 0 : 1]++;
    pa += la.offset;
    pb += lb.offset;
    assert_int_equal(c.batch * c.m * c.n, total);
    for (int64_t i = 0; i < c.batch; i++) {
        const double *bi = c.strided ? pb + i * c.stride_first : pb + wk__cumm_batch_offset(&lb, i);
        const double *ai = c.strided ? pa + i * c.stride_second : pa + wk__cumm_batch_offset(&la, i);
        host_gemm(c.trans_first, c.trans_second, c.m, c.n, c.k, bi, c.ld_first, ai, c.ld_second,
                  out + i * c.stride_c, c.ldc);
    }
    for (int64_t i = 0; i < total; i++) {
        if (fabs(out[i] - ref[i]) > 1e-9 * (1 + fabs(ref[i]))) {
            fprintf(stderr, "%s: element %lld: cuBLAS mapping %.17g, wk_matmul %.17g (strided %d, ops %d%d)\n", what,
                    (long long)i, out[i], ref[i], c.strided, c.trans_first, c.trans_second);
            fail();
        }
    }
    free(ref);
    free(out);
    wk_tensor_free(ca);
    wk_tensor_free(cb);
    wk_tensor_free(want);
}

static wk_tensor *f64_values(const int64_t *shape, int rank, double shift) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) v[i] = shift + sin((double)i * 0.613 + shift) * (1.0 + (double)(i % 5) / 4.0);
    wk_tensor *t = tu_make(v, shape, rank, WK_F64);
    free(v);
    return t;
}

static void test_matmul_cublas_mapping(void **state) {
    (void)state;
    memset(plan_paths, 0, sizeof plan_paths);
    const int64_t dims[][3] = {{5, 7, 3}, {1, 7, 3}, {5, 1, 3}, {5, 7, 1}, {1, 1, 1}, {6, 4, 6}};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        int64_t m = dims[di][0], k = dims[di][1], n = dims[di][2];
        int64_t sa[2] = {m, k}, sat[2] = {k, m}, sb[2] = {k, n}, sbt[2] = {n, k};
        wk_tensor *a = f64_values(sa, 2, 0.1), *at0 = f64_values(sat, 2, 0.2);
        wk_tensor *b = f64_values(sb, 2, 0.3), *bt0 = f64_values(sbt, 2, 0.4);
        wk_tensor *at = TU_OK(wk_t(at0)), *bt = TU_OK(wk_t(bt0));
        emulate_and_check("plain", a, b);
        emulate_and_check("A^T", at, b);
        emulate_and_check("B^T", a, bt);
        emulate_and_check("A^T B^T", at, bt);
        /* narrowed: row stride larger than the row */
        int64_t saw[2] = {m + 2, k + 3}, sbw[2] = {k + 1, n + 4};
        wk_tensor *aw = f64_values(saw, 2, 0.5), *bw = f64_values(sbw, 2, 0.6);
        wk_tensor *an0 = TU_OK(wk_narrow(aw, 0, 1, m)), *an = TU_OK(wk_narrow(an0, 1, 2, k));
        wk_tensor *bn0 = TU_OK(wk_narrow(bw, 0, 1, k)), *bn = TU_OK(wk_narrow(bn0, 1, 3, n));
        emulate_and_check("narrowed", an, bn);
        /* stride-2 operand (select of a trailing dim) and 0-stride rows: copies */
        int64_t s3[3] = {m, k, 2};
        wk_tensor *a3 = f64_values(s3, 3, 0.7);
        wk_tensor *asel = TU_OK(wk_select(a3, 2, 1));
        emulate_and_check("stride-2 operand", asel, b);
        int64_t s1k[2] = {1, k}, smk[2] = {m, k};
        wk_tensor *row = f64_values(s1k, 2, 0.8);
        wk_tensor *rowb = TU_OK(wk_broadcast_as(row, smk, 2));
        emulate_and_check("broadcast rows", rowb, b);
        /* batches: contiguous, broadcast (stride 0), permuted, narrowed 4-D (seed 002), size-1 dims */
        int64_t sba[3] = {3, m, k}, sbb[3] = {3, k, n};
        wk_tensor *ba = f64_values(sba, 3, 0.9), *bb = f64_values(sbb, 3, 1.0);
        emulate_and_check("batched", ba, bb);
        wk_tensor *abc = TU_OK(wk_broadcast_as(a, sba, 3));
        emulate_and_check("broadcast batch", abc, bb);
        int64_t spa[3] = {m, 3, k};
        wk_tensor *pa0 = f64_values(spa, 3, 1.1);
        int perm[3] = {1, 0, 2};
        wk_tensor *pa = TU_OK(wk_permute(pa0, perm, 3));
        emulate_and_check("permuted batch", pa, bb);
        int64_t s4a[4] = {4, 3, m, k}, s4b[4] = {4, 3, k, n};
        wk_tensor *a4 = f64_values(s4a, 4, 1.2), *b4 = f64_values(s4b, 4, 1.3);
        wk_tensor *a4n = TU_OK(wk_narrow(a4, 1, 1, 2)), *b4n = TU_OK(wk_narrow(b4, 1, 0, 2));
        emulate_and_check("narrowed 4-D batch", a4n, b4n);
        wk_tensor *a4s = TU_OK(wk_narrow(a4, 1, 1, 1)), *b4s = TU_OK(wk_narrow(b4, 1, 2, 1));
        emulate_and_check("size-1 batch dim", a4s, b4s);
        int64_t s4bt[4] = {4, 2, n, k};
        wk_tensor *b4t0 = f64_values(s4bt, 4, 1.4);
        wk_tensor *b4t = TU_OK(wk_t(b4t0));
        emulate_and_check("narrowed 4-D batch, B^T", a4n, b4t);
        /* a broadcast outer batch dim over a real inner one: no single stride */
        int64_t s2b[3] = {2, m, k}, s32[4] = {3, 2, m, k}, s32b[4] = {3, 2, k, n};
        wk_tensor *a2 = f64_values(s2b, 3, 1.5);
        wk_tensor *a2b = TU_OK(wk_broadcast_as(a2, s32, 4));
        wk_tensor *b32 = f64_values(s32b, 4, 1.6);
        emulate_and_check("broadcast outer batch", a2b, b32);
        wk_tensor *tofree[] = {a, at0, b, bt0, at, bt, aw, bw, an0, an, bn0, bn, a3, asel, row, rowb, ba, bb, abc,
                               pa0, pa, a4, b4, a4n, b4n, a4s, b4s, b4t0, b4t, a2, a2b, b32};
        for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
    }
    /* every path of the backend was taken */
    assert_true(plan_paths[0] > 0 && plan_paths[1] > 0 && plan_paths[2] > 0);
}

static void *open_thread(void *arg) {
    wk_device **out = arg;
    *out = wk_cuda(0);
    return NULL;
}

static void test_cuda_open_answers(void **state) {
    (void)state;
    bool compiled = strstr(wk_backends(), "cuda") != NULL;
#ifdef WICK_HAVE_CUDA
    assert_true(compiled);
#else
    assert_false(compiled);
#endif
    wk_status absent = compiled ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED;
    int bad[] = {-1, -100, 64, 1000000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wk_clear_error();
        assert_null(wk_cuda(bad[i]));
        assert_int_equal(wk_last_status(), absent);
        assert_non_null(strstr(wk_last_error(), "cuda"));
    }
    wk_clear_error();
    wk_device *d = wk_cuda(0);
    if (!d) {
        assert_int_equal(wk_last_status(), absent);
        printf("note: wk_cuda(0): %s\n", wk_last_error());
    }
    /* the count agrees with what opens, and is never an error */
    wk_clear_error();
    int count = wk_cuda_device_count();
    if (d) assert_true(count >= 1);
    if (!compiled) assert_int_equal(count, 0); /* (a GPU too old to open still counts) */
    assert_int_equal(wk_last_status(), WK_OK);
    assert_null(wk_cuda(count)); /* one past the last ordinal */
    wk_clear_error();
    /* opening from many threads at once gives one instance (or the same error) */
    enum { NT = 8 };
    pthread_t th[NT];
    wk_device *got[NT];
    for (int i = 0; i < NT; i++) assert_int_equal(pthread_create(&th[i], NULL, open_thread, &got[i]), 0);
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        assert_ptr_equal(got[i], d);
    }
    wk_clear_error();
    wk_cupool_stats s;
    assert_int_equal(wk__cuda_mem_stats(wk_cpu(), &s), compiled ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED);
    assert_int_equal(s.bytes_in_use, 0);
    assert_int_equal(wk__cuda_cache_release(wk_cpu(), NULL), compiled ? WK_ERR_DEVICE : WK_ERR_NOT_COMPILED);
    wk_clear_error();
}

/* ------------------------------------------------------------------ part 2 */

static const wk_dtype all_dtypes[] = {WK_U8,  WK_U32, WK_I16, WK_I32, WK_I64,
                                      WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3};
#define N_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

static void test_cuda_device_identity(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    assert_ptr_equal(g, wk_cuda(0));
    assert_int_equal(wk_device_kind_of(g), WK_DEVICE_CUDA);
    assert_true(strncmp(wk_device_name(g), "cuda:0#", 7) == 0);
    assert_false(wk_same_device(g, wk_cpu()));
    TU_STATUS_OK(wk_device_synchronize(g));
    TU_STATUS_OK(wk_device_set_seed(g, 1234));
    assert_int_equal(wk_device_seed(g), 1234);
    /* a tensor on the GPU with a CPU tensor: device error naming both */
    int64_t s = 3;
    wk_tensor *a = TU_OK(wk_ones(&s, 1, WK_F32, wk_cpu()));
    wk_tensor *b = tu_to_device(a, g);
    TU_FAILS(wk_add(a, b), WK_ERR_DEVICE);
    wk_tensor_free(a);
    wk_tensor_free(b);
}

static void test_cuda_round_trips(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    for (int di = 0; di < N_DTYPES; di++) {
        wk_dtype dt = all_dtypes[di];
        size_t es = wk_dtype_size(dt);
        int64_t counts[] = {0, 1, 7, 1000, 65537};
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            int64_t n = counts[ci];
            size_t nb = (size_t)n * es;
            unsigned char *src = malloc(nb + 1), *dst = malloc(nb + 1);
            assert_true(src && dst);
            for (size_t i = 0; i < nb; i++) src[i] = (unsigned char)(i * 131u + 7u + (unsigned)di);
            if (dt == WK_F8E4M3 || dt == WK_F16 || dt == WK_BF16 || dt == WK_F32 || dt == WK_F64)
                for (size_t i = 0; i < nb; i++) src[i] &= 0x3f; /* no NaN payloads */
            wk_tensor *t = wk_from_host(src, nb, &n, 1, dt, g);
            assert_non_null(t);
            memset(dst, 0xee, nb + 1);
            TU_STATUS_OK(wk_to_host(t, dst, nb));
            assert_memory_equal(src, dst, nb);
            assert_int_equal(dst[nb], 0xee); /* nothing past the view */
            /* CPU -> CUDA -> CPU through wk_to_device */
            wk_tensor *c = wk_from_host(src, nb, &n, 1, dt, wk_cpu());
            wk_tensor *gc = tu_to_device(c, g);
            wk_tensor *back = TU_OK(wk_to_device(gc, wk_cpu()));
            memset(dst, 0, nb + 1);
            TU_STATUS_OK(wk_to_host(back, dst, nb));
            assert_memory_equal(src, dst, nb);
            wk_tensor_free(t);
            wk_tensor_free(c);
            wk_tensor_free(gc);
            wk_tensor_free(back);
            free(src);
            free(dst);
        }
    }
}

/* Views read back: transposed, narrowed, broadcast, selected, permuted - each
 * equals the CPU's view of the same data. */
static void test_cuda_views_readback(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    for (int di = 0; di < N_DTYPES; di++) {
        wk_dtype dt = all_dtypes[di];
        int64_t shape[3] = {5, 6, 7};
        wk_tensor *c = tu_values(shape, 3, dt, 50.0, 60.0);
        wk_tensor *gt = tu_to_device(c, g);
        const wk_tensor *srcs[2] = {c, gt};
        wk_tensor *v[2][6];
        for (int k = 0; k < 2; k++) {
            const wk_tensor *x = srcs[k];
            v[k][0] = TU_OK(wk_t(x));
            v[k][1] = TU_OK(wk_narrow(x, 1, 2, 3));
            v[k][2] = TU_OK(wk_select(x, 2, 4));
            int perm[3] = {2, 0, 1};
            v[k][3] = TU_OK(wk_permute(x, perm, 3));
            int64_t bs[4] = {2, 5, 6, 7};
            v[k][4] = TU_OK(wk_broadcast_as(x, bs, 4));
            v[k][5] = TU_OK(wk_narrow(v[k][0], 0, 1, 1)); /* one row of a transposed view */
        }
        for (int j = 0; j < 6; j++) {
            tu_assert_matches("view readback", v[1][j], v[0][j], 0, 0);
            /* a contiguous copy on the device too */
            wk_tensor *cc = TU_OK(wk_contiguous(v[1][j]));
            assert_true(wk_is_contiguous(cc));
            tu_assert_matches("contiguous copy", cc, v[0][j], 0, 0);
            wk_tensor_free(cc);
            wk_tensor_free(v[0][j]);
            wk_tensor_free(v[1][j]);
        }
        wk_tensor_free(c);
        wk_tensor_free(gt);
    }
}

/* Seed 003: reading one element of a 1024x1024 result must not move 4 MB.
 * The contiguous path is one copy of exactly the element's bytes and no
 * temporary; the pool counters show no allocation for it. */
static void test_cuda_one_element_readback(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    int64_t shape[2] = {1024, 1024};
    wk_tensor *c = tu_values(shape, 2, WK_F32, 1.0, 0.0);
    wk_tensor *a = tu_to_device(c, g);
    wk_tensor *r = TU_OK(wk_add(a, a));
    wk_cupool_stats before, after;
    TU_STATUS_OK(wk__cuda_mem_stats(g, &before));
    int64_t idx[2] = {513, 7};
    double got = 0, want = 0;
    TU_STATUS_OK(wk_get(r, idx, &got));
    TU_STATUS_OK(wk_get(c, idx, &want));
    assert_true(got == (double)(float)(2.0 * want));
    wk_tensor *last_row = TU_OK(wk_select(r, 0, 1023));
    wk_tensor *one = TU_OK(wk_narrow(last_row, 0, 1023, 1));
    float f = 0;
    TU_STATUS_OK(wk_to_host(one, &f, sizeof f));
    TU_STATUS_OK(wk_get(c, (int64_t[]){1023, 1023}, &want));
    assert_true(f == (float)(2.0 * want));
    TU_STATUS_OK(wk__cuda_mem_stats(g, &after));
    assert_int_equal(after.misses, before.misses);
    assert_int_equal(after.hits, before.hits); /* no temporary for a contiguous view */
    /* a strided one-column read gathers 1024 elements on the device first */
    wk_tensor *col = TU_OK(wk_select(r, 1, 5));
    float *buf = malloc(1024 * sizeof(float));
    assert_non_null(buf);
    TU_STATUS_OK(wk_to_host(col, buf, 1024 * sizeof(float)));
    for (int i = 0; i < 1024; i += 97) {
        TU_STATUS_OK(wk_get(c, (int64_t[]){i, 5}, &want));
        assert_true(buf[i] == (float)(2.0 * want));
    }
    free(buf);
    wk_tensor_free(col);
    wk_tensor_free(one);
    wk_tensor_free(last_row);
    wk_tensor_free(r);
    wk_tensor_free(a);
    wk_tensor_free(c);
}

static void test_cuda_elementwise_vs_cpu(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype fdt[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    int64_t shape[2] = {37, 29};
    for (size_t di = 0; di < sizeof fdt / sizeof fdt[0]; di++) {
        wk_dtype dt = fdt[di];
        double tol = tu_tol(dt);
        wk_tensor *c = tu_values(shape, 2, dt, 2.0, 0.1);
        wk_tensor *cp = tu_values(shape, 2, dt, 1.0, 3.0); /* positive for log/sqrt/recip */
        wk_tensor *g1 = tu_to_device(c, g), *gp = tu_to_device(cp, g);
        wk_tensor *ct = TU_OK(wk_t(c)), *gt = TU_OK(wk_t(g1));
        for (int op = 0; op < WK_UNARY_COUNT; op++) {
            bool pos = op == WK_LOG || op == WK_SQRT || op == WK_RECIP;
            const wk_tensor *xc = pos ? cp : (op % 2 ? ct : c), *xg = pos ? gp : (op % 2 ? gt : g1);
            wk_tensor *rc = TU_OK(wk_unary(xc, (wk_unary_op)op));
            wk_tensor *rg = TU_OK(wk_unary(xg, (wk_unary_op)op));
            char what[64];
            snprintf(what, sizeof what, "unary %s", wk_unary_name((wk_unary_op)op));
            tu_assert_matches(what, rg, rc, tol, tol);
            wk_tensor_free(rc);
            wk_tensor_free(rg);
        }
        wk_tensor *pairs[5][2] = {
            {TU_OK(wk_affine(c, 1.5, -0.25)), TU_OK(wk_affine(g1, 1.5, -0.25))},
            {TU_OK(wk_powf(cp, 1.7)), TU_OK(wk_powf(gp, 1.7))},
            {TU_OK(wk_elu(ct, 0.5)), TU_OK(wk_elu(gt, 0.5))},
            {TU_OK(wk_clamp(ct, -1.0, 0.75)), TU_OK(wk_clamp(gt, -1.0, 0.75))},
            {TU_OK(wk_copy(ct)), TU_OK(wk_copy(gt))},
        };
        for (int i = 0; i < 5; i++) {
            tu_assert_matches("affine/powf/elu/clamp/copy", pairs[i][1], pairs[i][0], tol, tol);
            wk_tensor_free(pairs[i][0]);
            wk_tensor_free(pairs[i][1]);
        }
        /* binary with broadcasting: (37, 29) op (1, 29) row and a transposed view */
        wk_tensor *rowc = TU_OK(wk_narrow(cp, 0, 3, 1)), *rowg = TU_OK(wk_narrow(gp, 0, 3, 1));
        wk_tensor *ctt = TU_OK(wk_contiguous(ct)), *gtt = TU_OK(wk_contiguous(gt));
        wk_tensor *cT = TU_OK(wk_t(ctt)), *gT = TU_OK(wk_t(gtt)); /* (37, 29), strided */
        for (int op = 0; op < WK_BINARY_COUNT; op++) {
            wk_tensor *rc = TU_OK(wk_binary(c, rowc, (wk_binary_op)op));
            wk_tensor *rg = TU_OK(wk_binary(g1, rowg, (wk_binary_op)op));
            tu_assert_matches(wk_binary_name((wk_binary_op)op), rg, rc, tol, tol);
            wk_tensor *sc = TU_OK(wk_binary(cT, cp, (wk_binary_op)op));
            wk_tensor *sg = TU_OK(wk_binary(gT, gp, (wk_binary_op)op));
            tu_assert_matches(wk_binary_name((wk_binary_op)op), sg, sc, tol, tol);
            wk_tensor_free(rc);
            wk_tensor_free(rg);
            wk_tensor_free(sc);
            wk_tensor_free(sg);
        }
        for (int op = 0; op < WK_CMP_COUNT; op++) {
            wk_tensor *rc = TU_OK(wk_cmp(c, rowc, (wk_cmp_op)op));
            wk_tensor *rg = TU_OK(wk_cmp(g1, rowg, (wk_cmp_op)op));
            tu_assert_matches(wk_cmp_name((wk_cmp_op)op), rg, rc, 0, 0);
            wk_tensor *wc = TU_OK(wk_where(rc, c, cT)), *wg = TU_OK(wk_where(rg, g1, gT));
            tu_assert_matches("where", wg, wc, 0, 0);
            wk_tensor_free(rc);
            wk_tensor_free(rg);
            wk_tensor_free(wc);
            wk_tensor_free(wg);
        }
        wk_tensor *tofree[] = {c, cp, g1, gp, ct, gt, rowc, rowg, ctt, gtt, cT, gT};
        for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
    }
}

static void test_cuda_integer_ops_and_casts(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    int64_t shape[2] = {19, 23};
    /* casts between every pair: exact (same conversion rules as the CPU) */
    for (int si = 0; si < N_DTYPES; si++) {
        wk_tensor *c = tu_values(shape, 2, all_dtypes[si], 300.0, 20.0);
        wk_tensor *gc = tu_to_device(c, g);
        wk_tensor *ct = TU_OK(wk_t(c)), *gt = TU_OK(wk_t(gc));
        for (int di = 0; di < N_DTYPES; di++) {
            wk_tensor *rc = TU_OK(wk_to_dtype(ct, all_dtypes[di]));
            wk_tensor *rg = TU_OK(wk_to_dtype(gt, all_dtypes[di]));
            char what[64];
            snprintf(what, sizeof what, "cast %s->%s", wk_dtype_name(all_dtypes[si]), wk_dtype_name(all_dtypes[di]));
            tu_assert_matches(what, rg, rc, 0, 0);
            wk_tensor_free(rc);
            wk_tensor_free(rg);
        }
        /* fill through a strided view */
        wk_tensor *fc = TU_OK(wk_copy(c)), *fg = TU_OK(wk_copy(gc));
        wk_tensor *nc = TU_OK(wk_narrow(fc, 1, 3, 5)), *ng = TU_OK(wk_narrow(fg, 1, 3, 5));
        TU_STATUS_OK(wk_fill_(nc, 7.0));
        TU_STATUS_OK(wk_fill_(ng, 7.0));
        tu_assert_matches("fill_", fg, fc, 0, 0);
        wk_tensor *tofree[] = {c, gc, ct, gt, fc, fg, nc, ng};
        for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
    }
    /* integer arithmetic, exact */
    const wk_dtype idt[] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64};
    for (size_t k = 0; k < sizeof idt / sizeof idt[0]; k++) {
        wk_tensor *a = tu_values(shape, 2, idt[k], 100.0, 120.0);
        wk_tensor *b = tu_values(shape, 2, idt[k], 3.0, 12.0); /* in [3, 21]: no zero */
        wk_tensor *ga = tu_to_device(a, g), *gb = tu_to_device(b, g);
        for (int op = 0; op < WK_BINARY_COUNT; op++) {
            wk_tensor *rc = TU_OK(wk_binary(a, b, (wk_binary_op)op));
            wk_tensor *rg = TU_OK(wk_binary(ga, gb, (wk_binary_op)op));
            tu_assert_matches(wk_binary_name((wk_binary_op)op), rg, rc, 0, 0);
            wk_tensor_free(rc);
            wk_tensor_free(rg);
        }
        for (int op = 0; op < WK_UNARY_COUNT; op++) {
            wk_tensor *rc = wk_unary(a, (wk_unary_op)op);
            if (!rc) { /* not defined on integers: the same answer on the GPU */
                wk_status st = wk_last_status();
                wk_clear_error();
                TU_FAILS(wk_unary(ga, (wk_unary_op)op), st);
                continue;
            }
            wk_tensor *rg = TU_OK(wk_unary(ga, (wk_unary_op)op));
            tu_assert_matches(wk_unary_name((wk_unary_op)op), rg, rc, 0, 0);
            wk_tensor_free(rc);
            wk_tensor_free(rg);
        }
        /* integer division by zero: reported when the result is read back */
        wk_tensor *z = TU_OK(wk_zeros(shape, 2, idt[k], g));
        wk_clear_error();
        wk_tensor *q = wk_div(ga, z);
        if (q) {
            char *buf = malloc(19 * 23 * 8);
            assert_non_null(buf);
            wk_status st = wk_to_host(q, buf, 19 * 23 * 8);
            free(buf);
            assert_int_equal(st, WK_ERR_DIV_ZERO);
            assert_non_null(strstr(wk_last_error(), "division by zero"));
            wk_clear_error();
            TU_STATUS_OK(wk_device_synchronize(g)); /* reported once */
            wk_tensor_free(q);
        } else {
            assert_int_equal(wk_last_status(), WK_ERR_DIV_ZERO);
            wk_clear_error();
        }
        /* and through wk_device_synchronize */
        q = wk_div(ga, z);
        if (q) {
            assert_int_equal(wk_device_synchronize(g), WK_ERR_DIV_ZERO);
            wk_clear_error();
            wk_tensor_free(q);
        }
        wk_clear_error();
        TU_STATUS_OK(wk_device_synchronize(g));
        wk_tensor *tofree[] = {a, b, ga, gb, z};
        for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
    }
}

/* Several threads queue work and read results back at once on one device
 * (candle's readback race, seed 002). */
typedef struct hammer_arg {
    wk_device *g;
    const wk_tensor *shared;   /* a GPU result every thread reads */
    const float *shared_ref;
    int id, ok;
    char msg[256];
} hammer_arg;

static void *hammer_thread(void *p) {
    hammer_arg *h = p;
    h->ok = 1;
    enum { N = 4096 };
    float *host = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    float *sh = malloc((size_t)wk_numel(h->shared) * sizeof(float));
    if (!host || !back || !sh) {
        h->ok = 0;
        goto out;
    }
    for (int it = 0; it < 60 && h->ok; it++) {
        for (int i = 0; i < N; i++) host[i] = (float)(i % 251) + (float)h->id * 1000.0f + (float)it;
        int64_t n = N;
        wk_tensor *x = wk_from_host(host, sizeof(float) * N, &n, 1, WK_F32, h->g);
        wk_tensor *y = x ? wk_affine(x, 2.0, 1.0) : NULL;
        wk_tensor *z = y ? wk_add(y, x) : NULL; /* 3x + 1 */
        double one = 0;
        int64_t idx = (it * 37) % N;
        if (!z || wk_to_host(z, back, sizeof(float) * N) != WK_OK || wk_get(z, &idx, &one) != WK_OK) {
            snprintf(h->msg, sizeof h->msg, "thread %d: %s", h->id, wk_last_error());
            h->ok = 0;
        } else {
            for (int i = 0; i < N; i++)
                if (back[i] != 3.0f * host[i] + 1.0f) {
                    snprintf(h->msg, sizeof h->msg, "thread %d it %d: element %d = %g, want %g", h->id, it, i,
                             back[i], 3.0f * host[i] + 1.0f);
                    h->ok = 0;
                    break;
                }
            if (h->ok && one != 3.0 * host[idx] + 1.0) {
                snprintf(h->msg, sizeof h->msg, "thread %d: wk_get %g", h->id, one);
                h->ok = 0;
            }
        }
        if (h->ok && wk_to_host(h->shared, sh, (size_t)wk_numel(h->shared) * sizeof(float)) != WK_OK) {
            snprintf(h->msg, sizeof h->msg, "thread %d: shared: %s", h->id, wk_last_error());
            h->ok = 0;
        }
        if (h->ok && memcmp(sh, h->shared_ref, (size_t)wk_numel(h->shared) * sizeof(float)) != 0) {
            snprintf(h->msg, sizeof h->msg, "thread %d: the shared result read back wrong", h->id);
            h->ok = 0;
        }
        wk_tensor_free(z);
        wk_tensor_free(y);
        wk_tensor_free(x);
    }
out:
    free(host);
    free(back);
    free(sh);
    return NULL;
}

static void test_cuda_readback_hammer(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    int64_t shape[2] = {256, 512};
    wk_tensor *c = tu_values(shape, 2, WK_F32, 3.0, 1.0);
    wk_tensor *gc = tu_to_device(c, g);
    wk_tensor *shared = TU_OK(wk_mul(gc, gc));
    wk_tensor *ref = TU_OK(wk_mul(c, c));
    float *refv = malloc(256 * 512 * sizeof(float));
    assert_non_null(refv);
    TU_STATUS_OK(wk_to_host(ref, refv, 256 * 512 * sizeof(float)));
    enum { NT = 8 };
    pthread_t th[NT];
    hammer_arg h[NT];
    for (int i = 0; i < NT; i++) {
        h[i] = (hammer_arg){.g = g, .shared = shared, .shared_ref = refv, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, hammer_thread, &h[i]), 0);
    }
    int bad = 0;
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        if (!h[i].ok) {
            fprintf(stderr, "%s\n", h[i].msg);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
    free(refv);
    wk_tensor *tofree[] = {c, gc, shared, ref};
    for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
}

static void check_mm(const char *what, const wk_tensor *ac, const wk_tensor *bc, wk_device *g, bool bcast) {
    wk_tensor *ag = tu_to_device(ac, g), *bg = tu_to_device(bc, g); /* contiguous copies */
    wk_tensor *rc = TU_OK(bcast ? wk_broadcast_matmul(ac, bc) : wk_matmul(ac, bc));
    wk_tensor *rg = TU_OK(bcast ? wk_broadcast_matmul(ag, bg) : wk_matmul(ag, bg));
    double tol = tu_tol(wk_tensor_dtype(ac));
    tu_assert_matches(what, rg, rc, tol * 64, tol * 8);
    wk_tensor_free(ag);
    wk_tensor_free(bg);
    wk_tensor_free(rc);
    wk_tensor_free(rg);
}

/* The same view built on the CPU and the GPU from one base (so the GPU
 * operand has the strided layout, not a contiguous copy). */
typedef wk_tensor *(*view_fn)(const wk_tensor *);
static void check_mm_views(const char *what, const wk_tensor *abase, view_fn av, const wk_tensor *bbase, view_fn bv,
                           wk_device *g, bool bcast) {
    wk_tensor *abg = tu_to_device(abase, g), *bbg = tu_to_device(bbase, g);
    wk_tensor *ac = TU_OK(av(abase)), *bc = TU_OK(bv(bbase));
    wk_tensor *ag = TU_OK(av(abg)), *bg = TU_OK(bv(bbg));
    wk_tensor *rc = TU_OK(bcast ? wk_broadcast_matmul(ac, bc) : wk_matmul(ac, bc));
    wk_tensor *rg = bcast ? wk_broadcast_matmul(ag, bg) : wk_matmul(ag, bg);
    if (!rg) fprintf(stderr, "%s: %s\n", what, wk_last_error());
    assert_non_null(rg);
    double tol = tu_tol(wk_tensor_dtype(ac));
    tu_assert_matches(what, rg, rc, tol * 64, tol * 8);
    wk_tensor *tofree[] = {abg, bbg, ac, bc, ag, bg, rc, rg};
    for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
}

static wk_tensor *v_id(const wk_tensor *t) { return wk_contiguous(t); }
static wk_tensor *v_t(const wk_tensor *t) { return wk_t(t); }
static wk_tensor *v_narrow_cols(const wk_tensor *t) { return wk_narrow(t, wk_rank(t) - 1, 2, wk_dim(t, -1) - 5); }
static wk_tensor *v_narrow_rows(const wk_tensor *t) { return wk_narrow(t, wk_rank(t) - 2, 1, wk_dim(t, -2) - 3); }
/* (4, 3, m, k) -> narrowed batch (4, 2, m, k): no single batch stride (seed 002) */
static wk_tensor *v_narrow_batch(const wk_tensor *t) { return wk_narrow(t, 1, 1, 2); }
/* (m, k, 2) -> select the last dim: both matrix strides are 2 (needs a copy) */
static wk_tensor *v_select_last(const wk_tensor *t) { return wk_select(t, 2, 1); }
/* (1, k) -> (m, k) with a 0 row stride */
static wk_tensor *v_bcast_rows(const wk_tensor *t) {
    int64_t s[2] = {33, wk_dim(t, 1)};
    return wk_broadcast_as(t, s, 2);
}
/* (3, k, n) batch transposed to (k... ) : permute batch to the middle and back */
static wk_tensor *v_batch_perm(const wk_tensor *t) {
    int p[3] = {1, 0, 2};
    return wk_permute(t, p, 3); /* (m, B, k) -> (B, m, k) with batch stride k */
}

static void test_cuda_matmul_vs_cpu(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    const wk_dtype dts[] = {WK_F32, WK_F64, WK_F16, WK_BF16};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        wk_dtype dt = dts[di];
        int64_t sa[2] = {33, 40}, sb[2] = {40, 27}, sat[2] = {40, 33}, sbt[2] = {27, 40};
        wk_tensor *a = tu_values(sa, 2, dt, 1.0, 0.0), *b = tu_values(sb, 2, dt, 1.0, 0.1);
        wk_tensor *at = tu_values(sat, 2, dt, 1.0, 0.0), *bt = tu_values(sbt, 2, dt, 1.0, 0.1);
        check_mm("matmul plain", a, b, g, false);
        check_mm_views("matmul A^T", at, v_t, b, v_id, g, false);
        check_mm_views("matmul B^T", a, v_id, bt, v_t, g, false);
        check_mm_views("matmul A^T B^T", at, v_t, bt, v_t, g, false);
        int64_t sbw[2] = {40, 32}, sah[2] = {36, 40};
        wk_tensor *bw = tu_values(sbw, 2, dt, 1.0, 0.0), *ah = tu_values(sah, 2, dt, 1.0, 0.3);
        check_mm_views("matmul narrowed cols of B", a, v_id, bw, v_narrow_cols, g, false);
        check_mm_views("matmul narrowed rows of A", ah, v_narrow_rows, b, v_id, g, false);
        /* batched: 3-D contiguous, the narrowed 4-D batch, a permuted batch */
        int64_t s3a[3] = {3, 33, 40}, s3b[3] = {3, 40, 27};
        wk_tensor *a3 = tu_values(s3a, 3, dt, 1.0, 0.0), *b3 = tu_values(s3b, 3, dt, 1.0, 0.2);
        check_mm("matmul batched", a3, b3, g, false);
        int64_t s4a[4] = {4, 3, 9, 40}, s4b[4] = {4, 3, 40, 11};
        wk_tensor *a4 = tu_values(s4a, 4, dt, 1.0, 0.0), *b4 = tu_values(s4b, 4, dt, 1.0, 0.2);
        check_mm_views("matmul narrowed 4-D batch (seed 002)", a4, v_narrow_batch, b4, v_narrow_batch, g, false);
        int64_t s4bt[4] = {4, 2, 11, 40};
        wk_tensor *b4t = tu_values(s4bt, 4, dt, 1.0, 0.2);
        check_mm_views("matmul narrowed 4-D batch, B transposed", a4, v_narrow_batch, b4t, v_t, g, false);
        int64_t spa[3] = {33, 3, 40};
        wk_tensor *apm = tu_values(spa, 3, dt, 1.0, 0.0);
        check_mm_views("matmul permuted batch", apm, v_batch_perm, b3, v_id, g, false);
        /* operands that need a device copy first */
        int64_t ssel[3] = {33, 40, 2};
        wk_tensor *asel = tu_values(ssel, 3, dt, 1.0, 0.0);
        check_mm_views("matmul stride-2 operand", asel, v_select_last, b, v_id, g, false);
        int64_t srow[2] = {1, 40};
        wk_tensor *arow = tu_values(srow, 2, dt, 1.0, 0.0);
        check_mm_views("matmul broadcast rows", arow, v_bcast_rows, b, v_id, g, false);
        /* broadcast batch (stride 0): (33, 40) x (3, 40, 27) */
        check_mm("broadcast_matmul", a, b3, g, true);
        /* vector shapes */
        int64_t s1k[2] = {1, 40}, sk1[2] = {40, 1};
        wk_tensor *r1 = tu_values(s1k, 2, dt, 1.0, 0.0), *c1 = tu_values(sk1, 2, dt, 1.0, 0.0);
        check_mm("matmul 1xk kx1", r1, c1, g, false);
        check_mm("matmul kx1 1xk", c1, r1, g, false);
        wk_tensor *tofree[] = {a, b, at, bt, bw, ah, a3, b3, a4, b4, b4t, apm, asel, arow, r1, c1};
        for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
    }
    /* empty and k = 0 */
    int64_t s0[2] = {0, 4}, s4[2] = {4, 5}, sk0a[2] = {3, 0}, sk0b[2] = {0, 5};
    wk_tensor *e0 = TU_OK(wk_zeros(s0, 2, WK_F32, g)), *e4 = TU_OK(wk_ones(s4, 2, WK_F32, g));
    wk_tensor *r = TU_OK(wk_matmul(e0, e4));
    assert_int_equal(wk_numel(r), 0);
    wk_tensor *k0a = TU_OK(wk_zeros(sk0a, 2, WK_F32, g)), *k0b = TU_OK(wk_zeros(sk0b, 2, WK_F32, g));
    wk_tensor *rk = TU_OK(wk_matmul(k0a, k0b));
    float z[15];
    TU_STATUS_OK(wk_to_host(rk, z, sizeof z));
    for (int i = 0; i < 15; i++) assert_true(z[i] == 0.0f);
    /* integer matmul: a dtype error from the dispatcher, f8e4m3 not yet */
    wk_tensor *i4 = TU_OK(wk_ones(s4, 2, WK_I32, g));
    int64_t s54[2] = {5, 4};
    wk_tensor *i5 = TU_OK(wk_ones(s54, 2, WK_I32, g));
    TU_FAILS(wk_matmul(i4, i5), WK_ERR_DTYPE);
    wk_tensor *tofree[] = {e0, e4, r, k0a, k0b, rk, i4, i5};
    for (size_t i = 0; i < sizeof tofree / sizeof tofree[0]; i++) wk_tensor_free(tofree[i]);
}

static void test_cuda_pool_on_device(void **state) {
    (void)state;
    wk_device *g = tu_cuda_or_skip();
    TU_STATUS_OK(wk_device_synchronize(g));
    int64_t n = 1 << 20;
    wk_tensor *a = TU_OK(wk_zeros(&n, 1, WK_F32, g));
    wk_cupool_stats s;
    TU_STATUS_OK(wk__cuda_mem_stats(g, &s));
    assert_true(s.bytes_in_use >= (size_t)n * 4);
    assert_true(s.peak_in_use >= s.bytes_in_use);
    size_t in_use = s.bytes_in_use;
    wk_tensor_free(a);
    TU_STATUS_OK(wk__cuda_mem_stats(g, &s));
    assert_int_equal(s.bytes_in_use, in_use - (size_t)n * 4);
    assert_true(s.bytes_cached >= (size_t)n * 4);
    /* the same size again comes from the cache */
    uint64_t hits = s.hits;
    a = TU_OK(wk_zeros(&n, 1, WK_F32, g));
    TU_STATUS_OK(wk__cuda_mem_stats(g, &s));
    assert_true(s.hits > hits);
    wk_tensor_free(a);
    size_t released = 0;
    TU_STATUS_OK(wk__cuda_cache_release(g, &released));
    assert_true(released >= (size_t)n * 4);
    TU_STATUS_OK(wk__cuda_mem_stats(g, &s));
    assert_int_equal(s.bytes_cached, 0);
    /* an allocation the device cannot hold: an error, and the device stays usable */
    int64_t huge = (int64_t)1 << 50;
    TU_FAILS(wk_empty(&huge, 1, WK_F32, g), WK_ERR_OOM);
    int64_t three = 3;
    wk_tensor *x = TU_OK(wk_full(&three, 1, 2.5, WK_F32, g));
    wk_tensor *y = TU_OK(wk_add(x, x));
    float v[3];
    TU_STATUS_OK(wk_to_host(y, v, sizeof v));
    assert_true(v[0] == 5.0f && v[2] == 5.0f);
    wk_tensor_free(x);
    wk_tensor_free(y);
    TU_STATUS_OK(wk_device_synchronize(g));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_size_classes),
        cmocka_unit_test(test_pool_reuse_and_counters),
        cmocka_unit_test(test_pool_allocation_failure),
        cmocka_unit_test(test_pool_threads),
        cmocka_unit_test(test_matmul_cublas_mapping),
        cmocka_unit_test(test_cuda_open_answers),
        cmocka_unit_test(test_cuda_device_identity),
        cmocka_unit_test(test_cuda_round_trips),
        cmocka_unit_test(test_cuda_views_readback),
        cmocka_unit_test(test_cuda_one_element_readback),
        cmocka_unit_test(test_cuda_elementwise_vs_cpu),
        cmocka_unit_test(test_cuda_integer_ops_and_casts),
        cmocka_unit_test(test_cuda_readback_hammer),
        cmocka_unit_test(test_cuda_matmul_vs_cpu),
        cmocka_unit_test(test_cuda_pool_on_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
