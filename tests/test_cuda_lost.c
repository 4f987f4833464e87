/* A lost CUDA context (issue 15, failure modes), without a GPU.
 *
 * A kernel fault (illegal address, launch failure, device assert, ...)
 * leaves the context unusable: every later CUDA call returns the same error.
 * src/cuda/runtime/cuda_device.c classifies those sticky errors, marks the device
 * lost (one atomic per ordinal) and from then on fails every entry at once
 * with WK_ERR_DEVICE "cuda:N: the CUDA context is lost (<error>): restart
 * the process", before any CUDA call.
 *
 * Checked here: the classifier on every code the runtime documents as
 * sticky and on ordinary failures; wk__cuda_check marking the device lost
 * on a sticky error only; and, on a device object that was never opened
 * (no GPU here: any CUDA call it reached would fail with a different
 * message), the backend's entries - from this thread and another - failing
 * fast with the lost message once the test hook marks it lost. Also the
 * cuBLAS math mode every handle gets (reduced-precision reduction off).
 * In the CPU-only build: wk_cuda says the backend is not compiled in. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WICK_HAVE_CUDA
#include "cuda/runtime/cuda_device.h"

/* an ordinal no test process opens (this machine has no GPU, a GPU machine few) */
#define FAKE_ORDINAL 37

static wk_cuda_dev *fake_dev(void) {
    wk_cuda_dev *d = calloc(1, sizeof *d);
    assert_non_null(d);
    d->ordinal = FAKE_ORDINAL;
    d->base.kind = WK_DEVICE_CUDA;
    d->base.ordinal = FAKE_ORDINAL;
    d->base.be = &wk__cuda_backend;
    snprintf(d->base.name, sizeof d->base.name, "cuda:%d#99", FAKE_ORDINAL);
    return d;
}

/* st is the lost-device error, recorded under op, naming the ordinal and err */
static void assert_lost(wk_status st, const char *op, const char *err) {
    assert_int_equal(st, WK_ERR_DEVICE);
    assert_int_equal(wk_last_status(), WK_ERR_DEVICE);
    const char *m = wk_last_error();
    char want[128];
    snprintf(want, sizeof want, "cuda:%d: the CUDA context is lost (%s", FAKE_ORDINAL, err);
    if (!strstr(m, want) || !strstr(m, "restart the process") || !strstr(m, op)) {
        fprintf(stderr, "unexpected error for %s: %s\n", op, m);
        fail();
    }
    wk_clear_error();
}

static void test_sticky_classifier(void **state) {
    (void)state;
    const cudaError_t sticky[] = {
        cudaErrorIllegalAddress,     cudaErrorLaunchFailure,      cudaErrorAssert,
        cudaErrorHardwareStackError, cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
        cudaErrorInvalidAddressSpace, cudaErrorInvalidPc,         cudaErrorLaunchTimeout,
        cudaErrorECCUncorrectable,   cudaErrorNvlinkUncorrectable, cudaErrorTensorMemoryLeak,
        cudaErrorMpsClientTerminated, cudaErrorExternalDevice,    cudaErrorContained,
    };
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++) {
        if (!wk__cuda_error_is_sticky(sticky[i])) {
            fprintf(stderr, "%s is sticky\n", cudaGetErrorName(sticky[i]));
            fail();
        }
    }
    /* the call failed, the context is fine */
    const cudaError_t plain[] = {
        cudaSuccess,          cudaErrorMemoryAllocation, cudaErrorInvalidValue, cudaErrorLaunchOutOfResources,
        cudaErrorNotReady,    cudaErrorInvalidDevice,    cudaErrorNoDevice,     cudaErrorInsufficientDriver,
        cudaErrorInvalidResourceHandle, cudaErrorPeerAccessUnsupported, cudaErrorNotSupported,
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (wk__cuda_error_is_sticky(plain[i])) {
            fprintf(stderr, "%s is not sticky\n", cudaGetErrorName(plain[i]));
            fail();
        }
    }
}

/* wk__cuda_check: a sticky error marks the device lost (the first one is
 * kept); any other error is reported as itself and leaves the device usable. */
static void test_check_marks_lost(void **state) {
    (void)state;
    wk_cuda_dev *d = fake_dev();
    wk__cuda_test_set_lost(FAKE_ORDINAL, cudaSuccess);
    assert_int_equal(wk__cuda_check("some_op", d, cudaSuccess), WK_OK);
    assert_int_equal(wk__cuda_check("alloc", d, cudaErrorMemoryAllocation), WK_ERR_OOM);
    assert_null(strstr(wk_last_error(), "lost"));
    assert_int_equal(wk__cuda_check("fill", d, cudaErrorInvalidValue), WK_ERR_DEVICE);
    assert_null(strstr(wk_last_error(), "lost"));
    assert_int_equal(wk__cuda_lost_error(FAKE_ORDINAL), cudaSuccess);
    wk_clear_error();

    assert_lost(wk__cuda_check("matmul", d, cudaErrorIllegalAddress), "matmul", "cudaErrorIllegalAddress");
    assert_int_equal(wk__cuda_lost_error(FAKE_ORDINAL), cudaErrorIllegalAddress);
    /* later errors of any kind report the loss, with the first fault */
    assert_lost(wk__cuda_check("to_host", d, cudaErrorLaunchFailure), "to_host", "cudaErrorIllegalAddress");
    assert_lost(wk__cuda_check("alloc", d, cudaErrorMemoryAllocation), "alloc", "cudaErrorIllegalAddress");
    /* the swallowing paths (frees, pool syncs) mark it too */
    wk__cuda_test_set_lost(FAKE_ORDINAL, cudaSuccess);
    wk__cuda_note_error(FAKE_ORDINAL, cudaErrorInvalidValue);
    assert_int_equal(wk__cuda_lost_error(FAKE_ORDINAL), cudaSuccess);
    wk__cuda_note_error(FAKE_ORDINAL, cudaErrorAssert);
    assert_int_equal(wk__cuda_lost_error(FAKE_ORDINAL), cudaErrorAssert);
    /* out-of-range ordinals are never lost (and never crash) */
    wk__cuda_note_error(-1, cudaErrorAssert);
    wk__cuda_note_error(WK_CUDA_MAX_DEVICES, cudaErrorAssert);
    assert_int_equal(wk__cuda_lost_error(-1), cudaSuccess);
    assert_int_equal(wk__cuda_lost_error(WK_CUDA_MAX_DEVICES), cudaSuccess);
    wk__cuda_test_set_lost(FAKE_ORDINAL, cudaSuccess);
    free(d);
}

/* Every kind of entry of a lost device fails at once (none reaches CUDA: no
 * device exists here, so a CUDA call would fail with another message). */
static void call_entries(wk_cuda_dev *d, const char *err) {
    const wk_backend *be = &wk__cuda_backend;
    wk_device *dev = &d->base;
    int64_t shape[2] = {4, 4};
    wk_layout l;
    wk__layout_contiguous(&l, shape, 2, 0);
    char host[64];
    void *buf = NULL;
    void *fake = (void *)0x1000; /* never dereferenced: the entries stop first */
    assert_lost(be->alloc(dev, 64, &buf), "alloc", err);
    assert_null(buf);
    assert_lost(be->from_host(dev, fake, 0, host, 64), "from_host", err);
    assert_lost(be->to_host(dev, fake, &l, WK_F32, host), "to_host", err);
    assert_lost(be->fill(dev, fake, &l, WK_F32, 1.0), "fill", err);
    assert_lost(be->unary(dev, WK_EXP, fake, &l, fake, WK_F32), "unary", err);
    assert_lost(be->binary(dev, WK_ADD, fake, &l, fake, &l, fake, WK_F32), "binary", err);
    assert_lost(be->matmul(dev, fake, &l, fake, &l, fake, WK_F16), "matmul", err);
    assert_lost(be->index_select(dev, fake, &l, fake, &l, WK_I64, 0, fake, WK_F32), "wk_index_select", err);
    assert_lost(be->scatter(dev, fake, &l, fake, &l, WK_I64, fake, &l, 0, WK_F32, true), "wk_scatter_add", err);
    assert_lost(be->softmax(dev, fake, &l, WK_F32, 1, fake), "wk_softmax", err);
    assert_lost(be->synchronize(dev), "wk_device_synchronize", err);
}

typedef struct entry_job {
    wk_cuda_dev *d;
    const char *err;
} entry_job;

static void *entries_thread(void *arg) {
    const entry_job *j = arg;
    call_entries(j->d, j->err);
    return NULL;
}

static void test_lost_device_fails_fast(void **state) {
    (void)state;
    wk_cuda_dev *d = fake_dev();
    wk__cuda_test_set_lost(FAKE_ORDINAL, cudaErrorLaunchFailure);
    call_entries(d, "cudaErrorLaunchFailure");
    /* any thread: the flag is per device, not per thread */
    entry_job j = {d, "cudaErrorLaunchFailure"};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, entries_thread, &j), 0);
    pthread_join(th, NULL);
    /* marked by a sticky error seen through wk__cuda_check, as a failed wait would */
    wk__cuda_test_set_lost(FAKE_ORDINAL, cudaSuccess);
    assert_lost(wk__cuda_check("to_host", d, cudaErrorMisalignedAddress), "to_host", "cudaErrorMisalignedAddress");
    call_entries(d, "cudaErrorMisalignedAddress");
    wk__cuda_test_set_lost(FAKE_ORDINAL, cudaSuccess);
    free(d);
}

/* f16/bf16 GEMMs must accumulate in f32 and round once: reduced-precision
 * split-K reductions are disallowed, with or without TF32 (which the compute
 * type, not the math mode, turns on). */
static void test_blas_math_mode(void **state) {
    (void)state;
    for (int tf32 = 0; tf32 < 2; tf32++) {
        unsigned m = wk__cuda_blas_math_mode(tf32 != 0);
        assert_true(m & (unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
        assert_int_equal(m & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, CUBLAS_DEFAULT_MATH);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sticky_classifier),
        cmocka_unit_test(test_check_marks_lost),
        cmocka_unit_test(test_lost_device_fails_fast),
        cmocka_unit_test(test_blas_math_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* !WICK_HAVE_CUDA */

static void test_not_compiled(void **state) {
    (void)state;
    assert_null(wk_cuda(0));
    assert_int_equal(wk_last_status(), WK_ERR_NOT_COMPILED);
    wk_clear_error();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_not_compiled)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
