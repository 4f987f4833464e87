/* CUDA device objects (see cuda_device.h). Without WICK_HAVE_CUDA this file
 * only gives the "not compiled in" answers of its entry points. */
#include "cuda/runtime/cuda_device.h"
#include "base/env.h"
#include "cuda/cuda_kernels.h"
#include <stddef.h>

#ifdef WICK_HAVE_CUDA
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_open_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(wk_cuda_dev *) g_devs[WK_CUDA_MAX_DEVICES];
static atomic_uint_fast64_t g_next_instance = 1; /* the CPU device is instance 0 */

/* ---- lost devices ----
 * A kernel fault (illegal address, launch failure, device-side assert, ...)
 * corrupts the CUDA context: every later call from any thread returns the
 * same error, and only a new process gets a working context. The first
 * sticky error seen on a device is kept here (0: none), per ordinal because
 * the context is the device's primary context, shared by every wk_cuda_dev
 * of that ordinal; from then on every entry fails at once saying so, instead
 * of the fault surfacing as an unexplained error at whichever op waits next. */
static atomic_int g_lost[WK_CUDA_MAX_DEVICES];

bool wk__cuda_error_is_sticky(cudaError_t e) {
    switch (e) {
    /* driver_types.h: "This leaves the process in an inconsistent state and
     * any further CUDA work will return the same error. To continue using
     * CUDA, the process must be terminated and relaunched." */
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    case cudaErrorContained:
    /* uncorrectable hardware faults during execution: the context's memory
     * can no longer be trusted, so treat them as lost as well */
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
        return true;
    default:
        /* e.g. cudaErrorMemoryAllocation, cudaErrorInvalidValue,
         * cudaErrorLaunchOutOfResources: the call failed, the context is fine */
        return false;
    }
}

static bool ordinal_ok(int ordinal) { return ordinal >= 0 && ordinal < WK_CUDA_MAX_DEVICES; }

cudaError_t wk__cuda_lost_error(int ordinal) {
    return ordinal_ok(ordinal) ? (cudaError_t)atomic_load_explicit(&g_lost[ordinal], memory_order_acquire)
                               : cudaSuccess;
}

void wk__cuda_note_error(int ordinal, cudaError_t e) {
    if (!ordinal_ok(ordinal) || !wk__cuda_error_is_sticky(e)) return;
    int none = 0; /* keep the first: later calls report the same error anyway */
    atomic_compare_exchange_strong(&g_lost[ordinal], &none, (int)e);
}

void wk__cuda_test_set_lost(int ordinal, cudaError_t e) {
    if (ordinal_ok(ordinal)) atomic_store(&g_lost[ordinal], (int)e);
}

wk_status wk__cuda_lost_err(const char *op, int ordinal) {
    cudaError_t e = wk__cuda_lost_error(ordinal);
    if (e == cudaSuccess) return WK_OK;
    return wk__err(WK_ERR_DEVICE, op, "cuda:%d: the CUDA context is lost (%s: %s): restart the process", ordinal,
                   cudaGetErrorName(e), cudaGetErrorString(e));
}

wk_status wk__cuda_check(const char *op, wk_cuda_dev *d, cudaError_t e) {
    if (e == cudaSuccess) return WK_OK;
    (void)cudaGetLastError(); /* clear it so later launches do not report it again (sticky ones stay) */
    if (d) {
        wk__cuda_note_error(d->ordinal, e);
        wk_status lost = wk__cuda_lost_err(op, d->ordinal);
        if (lost != WK_OK) return lost;
    }
    wk_status st = e == cudaErrorMemoryAllocation ? WK_ERR_OOM : WK_ERR_DEVICE;
    return wk__err(st, op, "%s: %s (%s)", d ? d->base.name : "cuda", cudaGetErrorName(e), cudaGetErrorString(e));
}

unsigned wk__cuda_blas_math_mode(bool tf32) {
    /* TF32 stays off unless asked for: f32 matmul computes in f32 (the
     * compute type, CUBLAS_COMPUTE_32F_FAST_TF32, is what enables it).
     * Reduced-precision reduction is never allowed: cuBLAS's default may
     * reduce split-K partial sums of f16/bf16 GEMMs in f16/bf16, which breaks
     * "accumulate in f32, round once" (the CPU backend's rule). */
    (void)tf32;
    return (unsigned)CUBLAS_DEFAULT_MATH | (unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
}

wk_status wk__cuda_enter(const char *op, wk_cuda_dev *d) {
    /* a lost context fails every entry at once, before any CUDA call */
    wk_status lost = wk__cuda_lost_err(op, d->ordinal);
    if (lost != WK_OK) return lost;
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == d->ordinal) return WK_OK;
    return wk__cuda_check(op, d, cudaSetDevice(d->ordinal));
}

static wk_status wk__cuda_ixrec_take(const char *op, wk_cuda_dev *d, wk_cu_ixrec *out, bool *have);

wk_status wk__cuda_take_flag(const char *op, wk_cuda_dev *d) {
    int32_t v = 0;
    if (d->flag_host) {
        v = __atomic_exchange_n(d->flag_host, 0, __ATOMIC_ACQ_REL);
    } else {
        cudaError_t e = cudaMemcpyAsync(&v, d->flag_dev, sizeof v, cudaMemcpyDeviceToHost, d->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
        if (e == cudaSuccess && v) e = cudaMemsetAsync(d->flag_dev, 0, sizeof v, d->stream);
        if (e != cudaSuccess) return wk__cuda_check(op, d, e);
    }
    if (v == 0) return WK_OK;
    /* error path only: the index record says which op, id and size */
    wk_cu_ixrec rec;
    bool have = false;
    wk_status rs = wk__cuda_ixrec_take(op, d, &rec, &have);
    if (rs != WK_OK) return rs;
    return wk__cuda_flag_status(op, d->base.name, v, have ? &rec : NULL);
}

/* ---- pool callbacks: the device is current (callers enter first) ---- */
static int pool_alloc(void *ctx, size_t n, void **p) {
    (void)ctx;
    if (cudaMalloc(p, n) == cudaSuccess) return 0;
    (void)cudaGetLastError();
    *p = NULL;
    return 1;
}
static void pool_free(void *ctx, void *p, size_t n) {
    (void)ctx;
    (void)n;
    if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}
static void pool_sync(void *ctx) {
    wk_cuda_dev *d = ctx;
    cudaError_t e = cudaStreamSynchronize(d->stream);
    if (e != cudaSuccess) {
        wk__cuda_note_error(d->ordinal, e); /* nothing to report from here; the next entry says it */
        (void)cudaGetLastError();
    }
}

static void close_partial(wk_cuda_dev *d) {
    wk__cuda_staging_free(d);
    if (d->pool) wk__cupool_destroy(d->pool);
    if (d->flag_host) cudaFreeHost(d->flag_host);
    else if (d->flag_dev) cudaFree(d->flag_dev);
    if (d->blas_lt) cublasLtDestroy(d->blas_lt);
    if (d->blas) cublasDestroy(d->blas);
    if (d->stream) cudaStreamDestroy(d->stream);
    (void)cudaGetLastError();
    free(d);
}

static wk_cuda_dev *open_locked(const char *op, int ordinal) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        wk__err(WK_ERR_DEVICE, op, "device cuda:%d requested, but no CUDA device is usable: %s (%s)", ordinal,
                cudaGetErrorName(e), cudaGetErrorString(e));
        return NULL;
    }
    if (count <= 0) {
        wk__err(WK_ERR_DEVICE, op, "device cuda:%d requested, but no CUDA device is present", ordinal);
        return NULL;
    }
    if (ordinal >= count) {
        wk__err(WK_ERR_DEVICE, op, "device cuda:%d requested, but only %d CUDA device(s) are present (0..%d)", ordinal,
                count, count - 1);
        return NULL;
    }
    struct cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, ordinal);
    if (e == cudaSuccess) e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        wk__err(WK_ERR_DEVICE, op, "cannot open cuda:%d: %s (%s)", ordinal, cudaGetErrorName(e), cudaGetErrorString(e));
        return NULL;
    }
    if (prop.major < 8) {
        wk__err(WK_ERR_DEVICE, op,
                "cuda:%d (%s) has compute capability %d.%d; wick's CUDA kernels are built for 8.0 (Ampere) or newer",
                ordinal, prop.name, prop.major, prop.minor);
        return NULL;
    }
    wk_cuda_dev *d = calloc(1, sizeof *d);
    if (!d) {
        wk__err(WK_ERR_OOM, op, "cannot allocate the device object for cuda:%d", ordinal);
        return NULL;
    }
    d->ordinal = ordinal;
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->total_mem = prop.totalGlobalMem;
    snprintf(d->gpu_name, sizeof d->gpu_name, "%s", prop.name);
    uint64_t inst = atomic_fetch_add(&g_next_instance, 1);
    d->base.kind = WK_DEVICE_CUDA;
    d->base.ordinal = ordinal;
    d->base.instance = inst;
    d->base.be = &wk__cuda_backend;
    snprintf(d->base.name, sizeof d->base.name, "cuda:%d#%llu", ordinal, (unsigned long long)inst);
    d->base.desc = &wk__cuda_backend_desc;
    atomic_flag_clear(&d->rng_lock);
    d->base.seed = 0x5eed5eed5eedULL; /* Philox key; counters start at 0 */
    const char *what = "cudaStreamCreateWithFlags";
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) goto cuda_fail;
    cublasStatus_t bs = cublasCreate(&d->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(d->blas, d->stream);
    int64_t tf32;
    d->tf32 = wk__env_get(WK_ENV_CUDA_TF32, &tf32) && tf32 == 1;
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetMathMode(d->blas, (cublasMath_t)wk__cuda_blas_math_mode(d->tf32));
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasLtCreate(&d->blas_lt);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        wk__err(WK_ERR_DEVICE, op, "cannot open cuda:%d: cuBLAS initialisation failed: %s", ordinal,
                cublasGetStatusString(bs));
        close_partial(d);
        return NULL;
    }
    if (prop.canMapHostMemory) {
        void *h = NULL, *dp = NULL;
        if (cudaHostAlloc(&h, sizeof(int32_t), cudaHostAllocMapped | cudaHostAllocPortable) == cudaSuccess) {
            if (cudaHostGetDevicePointer(&dp, h, 0) == cudaSuccess) {
                d->flag_host = h;
                d->flag_dev = dp;
                *d->flag_host = 0;
            } else {
                cudaFreeHost(h);
            }
        }
        (void)cudaGetLastError();
    }
    if (!d->flag_host) {
        what = "cudaMalloc (error flag)";
        e = cudaMalloc((void **)&d->flag_dev, sizeof(int32_t));
        if (e == cudaSuccess) e = cudaMemsetAsync(d->flag_dev, 0, sizeof(int32_t), d->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
        if (e != cudaSuccess) goto cuda_fail;
    }
    d->pool = wk__cupool_new(pool_alloc, pool_free, pool_sync, d);
    if (!d->pool || pthread_mutex_init(&d->blas_lock, NULL) != 0 || pthread_mutex_init(&d->stage_lock, NULL) != 0) {
        wk__err(WK_ERR_OOM, op, "cannot allocate the buffer pool of cuda:%d", ordinal);
        close_partial(d);
        return NULL;
    }
    return d;
cuda_fail:
    (void)cudaGetLastError();
    wk__err(WK_ERR_DEVICE, op, "cannot open cuda:%d: %s failed: %s (%s)", ordinal, what, cudaGetErrorName(e),
            cudaGetErrorString(e));
    close_partial(d);
    return NULL;
}

wk_device *wk__cuda_open(int ordinal) {
    const char *op = "wk_cuda";
    if (ordinal < 0 || ordinal >= WK_CUDA_MAX_DEVICES) {
        wk__err(WK_ERR_DEVICE, op, "device cuda:%d requested: ordinal out of range [0, %d)", ordinal,
                WK_CUDA_MAX_DEVICES);
        return NULL;
    }
    wk_cuda_dev *d = atomic_load_explicit(&g_devs[ordinal], memory_order_acquire);
    if (d) return &d->base;
    pthread_mutex_lock(&g_open_lock);
    d = atomic_load_explicit(&g_devs[ordinal], memory_order_relaxed);
    if (!d) {
        d = open_locked(op, ordinal);
        if (d) atomic_store_explicit(&g_devs[ordinal], d, memory_order_release);
    }
    pthread_mutex_unlock(&g_open_lock);
    return d ? &d->base : NULL;
}

int wk__cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n < 0 ? 0 : n;
}

wk_status wk__cuda_mem_stats(wk_device *dev, wk_cupool_stats *out) {
    const char *op = "wk_device_memory_stats";
    if (!out) return wk__err(WK_ERR_ARG, op, "NULL output");
    memset(out, 0, sizeof *out);
    if (!dev || dev->kind != WK_DEVICE_CUDA)
        return wk__err(WK_ERR_DEVICE, op, "%s is not a CUDA device", wk_device_name(dev));
    wk__cupool_stats(wk__cuda_dev(dev)->pool, out);
    return WK_OK;
}

wk_status wk__cuda_cache_release(wk_device *dev, size_t *released) {
    const char *op = "wk_device_release_cache";
    if (released) *released = 0;
    if (!dev || dev->kind != WK_DEVICE_CUDA)
        return wk__err(WK_ERR_DEVICE, op, "%s is not a CUDA device", wk_device_name(dev));
    wk_cuda_dev *d = wk__cuda_dev(dev);
    wk_status st = wk__cuda_enter(op, d);
    if (st != WK_OK) return st;
    size_t r = wk__cupool_release(d->pool);
    if (released) *released = r;
    return WK_OK;
}

static wk_status cuda_memory_stats(wk_device *dev, wk_memory_stats *out) {
    wk_cupool_stats s;
    if (wk__cuda_mem_stats(dev, &s) != WK_OK) return wk_last_status();
    out->bytes_in_use = s.bytes_in_use;
    out->bytes_cached = s.bytes_cached;
    out->peak_bytes_in_use = s.peak_in_use;
    out->cache_hits = s.hits;
    out->cache_misses = s.misses;
    out->alloc_failures = s.failures;
    return WK_OK;
}

/* the desc's stream entry: the cudaStream_t every op of dev is queued on */
static uintptr_t cuda_stream_of(const wk_device *dev) {
    return dev->kind == WK_DEVICE_CUDA ? (uintptr_t)((const wk_cuda_dev *)dev)->stream : 0;
}

const wk_backend_desc wk__cuda_backend_desc = {
    .name = "cuda",
    .kind = WK_DEVICE_CUDA,
    .ops = &wk__cuda_backend,
    .open = wk__cuda_open,
    .device_count = wk__cuda_device_count,
    .memory_stats = cuda_memory_stats,
    .release_cache = wk__cuda_cache_release,
    .stream = cuda_stream_of,
};

/* ---- queued index checks (issue 15; see cuda_device.h) ----
 * Kept beside the device object rather than in it, one slot per ordinal
 * (devices live for the process, as g_devs). */
static _Atomic(wk_cu_ixrec *) g_ixrec[WK_CUDA_MAX_DEVICES];
static pthread_mutex_t g_ixrec_make = PTHREAD_MUTEX_INITIALIZER;
/* one lock for all devices: it is held only while an in-place op queues
 * its launches (microseconds, no wait inside) */
static pthread_mutex_t g_ix_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t g_ix_seq = 1; /* 0 means "no owner" in the record */

static wk_cu_ixrec *ixrec_get(const char *op, wk_cuda_dev *d) {
    wk_cu_ixrec *r = atomic_load_explicit(&g_ixrec[d->ordinal], memory_order_acquire);
    if (r) return r;
    pthread_mutex_lock(&g_ixrec_make);
    r = atomic_load_explicit(&g_ixrec[d->ordinal], memory_order_relaxed);
    if (!r) {
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, sizeof(wk_cu_ixrec));
        /* zeroed in stream order: every kernel queued after it sees zeros */
        if (e == cudaSuccess) e = cudaMemsetAsync(p, 0, sizeof(wk_cu_ixrec), d->stream);
        if (e == cudaSuccess) {
            r = p;
            atomic_store_explicit(&g_ixrec[d->ordinal], r, memory_order_release);
        } else {
            if (p) cudaFree(p);
            wk__cuda_check(op, d, e);
        }
    }
    pthread_mutex_unlock(&g_ixrec_make);
    return r;
}

wk_status wk__cuda_ixflag(const char *op, wk_cuda_dev *d, wk_cu_ixflag *out) {
    memset(out, 0, sizeof *out);
    wk_cu_ixrec *r = ixrec_get(op, d);
    if (!r) return wk_last_status();
    out->status = d->flag_dev;
    out->rec = r;
    out->seq = (unsigned long long)atomic_fetch_add_explicit(&g_ix_seq, 1, memory_order_relaxed);
    return WK_OK;
}

void wk__cuda_ix_lock(wk_cuda_dev *d) {
    (void)d;
    pthread_mutex_lock(&g_ix_lock);
}
void wk__cuda_ix_unlock(wk_cuda_dev *d) {
    (void)d;
    pthread_mutex_unlock(&g_ix_lock);
}

/* Read the record and clear it (all but bad_seq, see wk_cu_ixrec) in stream
 * order, so a launch queued after the clear starts a fresh record; waits
 * for the copy (its own event). *have = false when no record was made. */
static wk_status wk__cuda_ixrec_take(const char *op, wk_cuda_dev *d, wk_cu_ixrec *out, bool *have) {
    *have = false;
    wk_cu_ixrec *r = atomic_load_explicit(&g_ixrec[d->ordinal], memory_order_acquire);
    if (!r) return WK_OK;
    const size_t keep = offsetof(wk_cu_ixrec, owner);
    cudaEvent_t ev = NULL;
    cudaError_t e = cudaMemcpyAsync(out, r, sizeof *out, cudaMemcpyDeviceToHost, d->stream);
    if (e == cudaSuccess) e = cudaMemsetAsync((char *)r + keep, 0, sizeof *out - keep, d->stream);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(ev, d->stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(ev);
    if (ev) (void)cudaEventDestroy(ev);
    if (e != cudaSuccess) return wk__cuda_check(op, d, e);
    *have = true;
    return WK_OK;
}

#else /* !WICK_HAVE_CUDA */

wk_device *wk__cuda_open(int ordinal) {
    wk__err(WK_ERR_NOT_COMPILED, "wk_cuda", "device cuda:%d requested, but wick was built without the CUDA backend",
            ordinal);
    return NULL;
}

int wk__cuda_device_count(void) { return 0; }

wk_status wk__cuda_mem_stats(wk_device *dev, wk_cupool_stats *out) {
    (void)dev;
    if (out) *out = (wk_cupool_stats){0};
    return wk__err(WK_ERR_NOT_COMPILED, "wk_device_memory_stats", "wick was built without the CUDA backend");
}

wk_status wk__cuda_cache_release(wk_device *dev, size_t *released) {
    (void)dev;
    if (released) *released = 0;
    return wk__err(WK_ERR_NOT_COMPILED, "wk_device_release_cache", "wick was built without the CUDA backend");
}

wk_status wk__cuda_copy_between(wk_device *sdev, const void *src, const wk_layout *ls, wk_dtype dt, wk_device *ddev,
                                void *dst) {
    /* unreachable: no CUDA device can exist in this build */
    (void)sdev, (void)src, (void)ls, (void)dt, (void)ddev, (void)dst;
    return wk__err(WK_ERR_NOT_COMPILED, "wk_to_device", "wick was built without the CUDA backend");
}

#endif

/* ---- queued index checks: the report (pure host, both builds) ---- */
const char *wk__cuda_ixop_name(int op) {
    switch (op) {
    case WK_CU_IX_SELECT: return "wk_index_select";
    case WK_CU_IX_GATHER: return "wk_gather";
    case WK_CU_IX_SCATTER: return "wk_scatter";
    case WK_CU_IX_SCATTER_ADD: return "wk_scatter_add";
    case WK_CU_IX_INDEX_ADD: return "wk_index_add";
    default: return "indexing";
    }
}

wk_status wk__cuda_flag_status(const char *wait_op, const char *dev_name, int32_t v, const wk_cu_ixrec *rec) {
    if (rec && rec->owner != 0)
        /* the CPU's message, then where and when it surfaced */
        return wk__err(WK_ERR_INDEX, wk__cuda_ixop_name(rec->op),
                       "index %lld is out of range for dim %d of size %lld (position %llu of the ids; queued on %s, "
                       "found on the device, reported by the next wait: %s)",
                       (long long)rec->id, (int)rec->dim, (long long)rec->size, (unsigned long long)rec->pos, dev_name,
                       wait_op);
    if (v == 0) return WK_OK;
    wk_status st = (v > 0 && v <= (int32_t)WK_ERR_COMM) ? (wk_status)v : WK_ERR_INTERNAL;
    return wk__err(st, wait_op,
                   "an op queued earlier on %s failed on the device: %s (kernels report errors when the stream "
                   "is next waited for)",
                   dev_name, st == WK_ERR_DIV_ZERO ? "integer division by zero" : wk_status_name(st));
}
