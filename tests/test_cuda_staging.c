/* The pinned staging ring of uploads (src/cuda/memory/cuda_staging.c) without a
 * GPU: the file is compiled into this test with the CUDA runtime calls it
 * makes renamed to a model of one stream. The model queues every
 * cudaMemcpyAsync and runs it only when the stream gets that far (an event
 * wait past it, a stream sync, or the end), reading the pinned chunk THEN,
 * as the DMA engine does. So a ring that reused a chunk before the copies
 * out of it had run, or an upload that returned before the caller's bytes
 * were in pinned memory (the caller overwrites its buffer at once here),
 * ends with wrong device bytes.
 *
 * Checked: uploads of 0 / 1 / 255 / 256 / 257 bytes, chunk-sized and
 * chunk +- 1, a 40 MiB tensor of q8_0 blocks (2.5 rings: how a model file's
 * tensors stream onto the GPU), several uploads packed into one chunk, and
 * the fallback when pinned memory cannot be had. In the CPU-only build
 * there is no staging to test: the test skips. */
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WICK_HAVE_CUDA
#include "cuda/runtime/cuda_device.h"

/* ---- the model of one stream ---- */

typedef struct pending {
    char *dst;
    const char *src;
    size_t n;
} pending;

static pending *g_q;       /* queued copies */
static size_t g_nq, g_cap; /* queued so far (ever) */
static size_t g_done;      /* copies that have run */
static size_t g_events[64]; /* queue position each event was recorded at */
static int g_nev;
static int g_fail_host_alloc;
static size_t g_pinned_bytes;

static void run_until(size_t pos) {
    for (; g_done < pos; g_done++) memcpy(g_q[g_done].dst, g_q[g_done].src, g_q[g_done].n);
}

static cudaError_t fake_host_alloc(void **p, size_t n, unsigned flags) {
    (void)flags;
    if (g_fail_host_alloc) return cudaErrorMemoryAllocation;
    *p = malloc(n);
    g_pinned_bytes += n;
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static cudaError_t fake_free_host(void *p) {
    free(p);
    return cudaSuccess;
}
static cudaError_t fake_event_create(cudaEvent_t *ev, unsigned flags) {
    (void)flags;
    if (g_nev >= 64) return cudaErrorMemoryAllocation;
    g_events[g_nev] = 0;
    *ev = (cudaEvent_t)(uintptr_t)(++g_nev); /* a handle, never dereferenced */
    return cudaSuccess;
}
static cudaError_t fake_event_destroy(cudaEvent_t ev) {
    (void)ev;
    return cudaSuccess;
}
static cudaError_t fake_event_record(cudaEvent_t ev, cudaStream_t s) {
    (void)s;
    g_events[(uintptr_t)ev - 1] = g_nq;
    return cudaSuccess;
}
static cudaError_t fake_event_sync(cudaEvent_t ev) {
    run_until(g_events[(uintptr_t)ev - 1]);
    return cudaSuccess;
}
static cudaError_t fake_memcpy_async(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s) {
    (void)s;
    if (k != cudaMemcpyHostToDevice) return cudaErrorInvalidValue;
    if (g_nq == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 1024;
        g_q = realloc(g_q, g_cap * sizeof *g_q);
        if (!g_q) return cudaErrorMemoryAllocation;
    }
    g_q[g_nq++] = (pending){(char *)dst, (const char *)src, n};
    return cudaSuccess;
}
static cudaError_t fake_stream_sync(cudaStream_t s) {
    (void)s;
    run_until(g_nq);
    return cudaSuccess;
}
static cudaError_t fake_get_last_error(void) { return cudaSuccess; }
static wk_status fake_cuda_check(const char *op, wk_cuda_dev *d, cudaError_t e) {
    (void)op;
    (void)d;
    return e == cudaSuccess ? WK_OK : WK_ERR_DEVICE;
}

#undef cudaMemcpyAsync
#define cudaHostAlloc fake_host_alloc
#define cudaFreeHost fake_free_host
#define cudaEventCreateWithFlags fake_event_create
#define cudaEventDestroy fake_event_destroy
#define cudaEventRecord fake_event_record
#define cudaEventSynchronize fake_event_sync
#define cudaMemcpyAsync fake_memcpy_async
#define cudaStreamSynchronize fake_stream_sync
#define cudaGetLastError fake_get_last_error
/* the file's entry points get test names, so the library's copies (linked
 * in for the rest of the backend) stay apart */
#define wk__cuda_check fake_cuda_check
#define wk__cuda_upload emu_cuda_upload
#define wk__cuda_staging_free emu_cuda_staging_free
wk_status emu_cuda_upload(const char *op, wk_cuda_dev *d, void *dst, const void *src, size_t n);
void emu_cuda_staging_free(wk_cuda_dev *d);
#include "cuda/memory/cuda_staging.c"

static void model_reset(wk_cuda_dev *d) {
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->stage_lock, NULL);
    d->stream = (cudaStream_t)(uintptr_t)1;
    g_nq = g_done = 0;
    g_nev = 0;
    g_pinned_bytes = 0;
}

/* Upload `sizes` back to back into one device buffer, scribbling over the
 * caller's source right after each call; the device bytes must be the
 * original ones once the stream has run. */
static void upload_sequence(const size_t *sizes, int count, int fail_pinned) {
    wk_cuda_dev d;
    model_reset(&d);
    g_fail_host_alloc = fail_pinned;
    size_t total = 0;
    for (int i = 0; i < count; i++) total += sizes[i];
    char *dev = calloc(total + 1, 1), *want = malloc(total + 1), *src = malloc(total + 1);
    assert_true(dev && want && src);
    for (size_t i = 0; i < total; i++) want[i] = (char)(i * 2654435761u >> 11);
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        memcpy(src, want + at, sizes[i]);
        assert_int_equal(emu_cuda_upload("t", &d, dev + at, src, sizes[i]), WK_OK);
        memset(src, 0x5A, sizes[i]); /* the caller may reuse its buffer at once */
        at += sizes[i];
    }
    if (!fail_pinned) {
        assert_true(g_done < g_nq); /* the last copy is still queued: nobody waited for it */
        assert_int_equal(d.stage_state, 1);
        assert_int_equal(g_pinned_bytes, WK_CUDA_STAGE_CHUNKS * WK_CUDA_STAGE_BYTES);
    } else {
        assert_int_equal(d.stage_state, -1);
    }
    run_until(g_nq);
    assert_memory_equal(dev, want, total);
    emu_cuda_staging_free(&d);
    pthread_mutex_destroy(&d.stage_lock);
    free(dev);
    free(want);
    free(src);
}

static void test_small_and_edges(void **state) {
    (void)state;
    const size_t C = WK_CUDA_STAGE_BYTES;
    const size_t sizes[] = {1, 255, 256, 257, 0, 3, C - 1, 1, C, C + 1, 7, 2 * C + 5, 100};
    upload_sequence(sizes, (int)(sizeof sizes / sizeof sizes[0]), 0);
}

static void test_many_packed(void **state) {
    (void)state;
    /* 3000 small uploads: many per chunk, the ring wrapped several times */
    size_t sizes[3000];
    for (int i = 0; i < 3000; i++) sizes[i] = 1 + (size_t)(i * 7919) % 20000;
    upload_sequence(sizes, 3000, 0);
}

static void test_big_tensor(void **state) {
    (void)state;
    /* a 1200 x 32768 q8_0 tensor: 40 MiB of 34-byte blocks, 2.5 rings */
    size_t nb;
    assert_int_equal(wk__dtype_bytes_for("t", WK_Q8_0, (int64_t)1200 * 32768, &nb), WK_OK);
    assert_int_equal(nb, (size_t)1200 * 32768 / 32 * 34);
    const size_t sizes[] = {nb, 18, nb / 3};
    upload_sequence(sizes, 3, 0);
    /* the ring is what bounds pinned memory, not the tensor */
    assert_true(g_pinned_bytes < nb);
}

static void test_no_pinned_memory(void **state) {
    (void)state;
    const size_t sizes[] = {10, WK_CUDA_STAGE_BYTES + 3, 1000};
    upload_sequence(sizes, 3, 1);
    g_fail_host_alloc = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_and_edges),
        cmocka_unit_test(test_many_packed),
        cmocka_unit_test(test_big_tensor),
        cmocka_unit_test(test_no_pinned_memory),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_q);
    return rc;
}
#else
static void test_not_built(void **state) {
    (void)state;
    printf("skipped: built without the CUDA backend (no staging ring)\n");
    skip();
}
int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_not_built)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
