/* CUDA devices: one cached instance per ordinal, opened on first use by
 * wk_cuda(ordinal) and kept for the life of the process (as the CPU device).
 * Each holds its own non-blocking stream (every op of the device queues on
 * it, from any host thread), a buffer pool, a cuBLAS handle (plus a cuBLASLt
 * handle), an error flag the kernels set (integer division by zero) and the
 * seed of its random generator. The device structure exists only with
 * WICK_HAVE_CUDA; the entry points below also answer without it. The
 * library reaches all of it through wk__cuda_backend_desc (registry) and
 * the table. */
#ifndef WICK_CUDA_DEVICE_H
#define WICK_CUDA_DEVICE_H
#include "tensor/tensor.h"
#include "cuda/memory/cuda_pool.h"

#ifdef WICK_HAVE_CUDA
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <pthread.h>
#include <stdatomic.h>

#define WK_CUDA_MAX_DEVICES 64
#define WK_CUDA_STAGE_CHUNKS 4
#define WK_CUDA_STAGE_BYTES ((size_t)4 << 20)

typedef struct wk_cuda_dev {
    wk_device base;           /* first: a wk_device * is a wk_cuda_dev * */
    int ordinal;
    cudaStream_t stream;      /* non-blocking: never waits on the legacy default stream */
    wk_cupool *pool;
    cublasHandle_t blas;
    cublasLtHandle_t blas_lt;
    pthread_mutex_t blas_lock; /* cuBLAS handle state is not shared between threads */
    /* error flag written by kernels (a wk_status): host-mapped pinned memory
     * when the device can map it (read after a wait, no copy), else device
     * memory read back with a 4-byte copy */
    int32_t *flag_dev;
    int32_t *flag_host;       /* NULL when not mapped */
    bool tf32;                /* WICK_CUDA_TF32=1 at open: f32 matmul may use TF32 */
    /* pinned staging chunks for uploads (cuda_staging.c), made on first use */
    pthread_mutex_t stage_lock;
    void *stage[WK_CUDA_STAGE_CHUNKS];
    cudaEvent_t stage_done[WK_CUDA_STAGE_CHUNKS]; /* recorded after the last copy out of each chunk */
    size_t stage_used;        /* bytes taken in the current chunk */
    int stage_cur;
    int stage_state;          /* 0 not made yet, 1 ready, -1 pinned memory unavailable */
    /* random generator: counter-based (Philox); each call takes the next
     * counters of the stream given by base.seed, so results depend only on
     * the seed and the sequence of calls */
    _Atomic uint64_t rng_offset;
    atomic_flag rng_lock;     /* guards base.seed + rng_offset */
    int cc_major, cc_minor;
    size_t total_mem;
    char gpu_name[256];
} wk_cuda_dev;

static inline wk_cuda_dev *wk__cuda_dev(wk_device *d) { return (wk_cuda_dev *)d; }

/* Make the device current on the calling thread; WK_OK or a recorded error. */
wk_status wk__cuda_enter(const char *op, wk_cuda_dev *d);
/* The first line of a backend entry taking `wk_device *dev`: declares
 * `wk_cuda_dev *d` and returns the status when the device cannot be entered. */
#define WK__CUDA_ENTER(op)                                 \
    wk_cuda_dev *d = wk__cuda_dev(dev);                    \
    do {                                                   \
        wk_status st_ = wk__cuda_enter((op), d);           \
        if (st_ != WK_OK) return st_;                      \
    } while (0)
/* Record a CUDA error under op and return WK_ERR_DEVICE (WK_ERR_OOM for
 * cudaErrorMemoryAllocation). Clears the runtime's last error. */
wk_status wk__cuda_check(const char *op, wk_cuda_dev *d, cudaError_t e);
/* The status of a kernel launcher's return (0, or a cudaError_t as int). */
static inline wk_status wk__cuda_launched(const char *op, wk_cuda_dev *d, int rc) {
    return rc == 0 ? WK_OK : wk__cuda_check(op, d, (cudaError_t)rc);
}
/* Read and clear the kernels' error flag (call after waiting for the stream):
 * WK_OK, or the recorded status with a message under op. */
wk_status wk__cuda_take_flag(const char *op, wk_cuda_dev *d);

/* Queue a copy of n host bytes to device memory dst and return without
 * waiting for the device: src is first copied into a pinned staging chunk
 * (so the caller may reuse src at once), and the copy runs in stream order.
 * Falls back to a copy + wait when pinned memory is unavailable. */
wk_status wk__cuda_upload(const char *op, wk_cuda_dev *d, void *dst, const void *src, size_t n);
/* Free the staging chunks (device teardown). */
void wk__cuda_staging_free(wk_cuda_dev *d);

extern const wk_backend wk__cuda_backend;

/* ---- queued index checks (issue 15, "No hidden waits") ----
 * Indexing ops never wait: a bad id is recorded by the kernels in the
 * device's index record (wk_cu_ixrec, device memory, made on first use) and
 * the owner sets the device's error word (flag_dev) to WK_ERR_INDEX. "The
 * next wait" = the next call that waits for this device's stream and reads
 * that word: wk_device_synchronize and every readback of a tensor of the
 * device (to_host: wk_tensor_to_host, item, moves to the CPU, ...), from any
 * thread. It reports the error once, as WK_ERR_INDEX under the indexing
 * op's own name, with the id, the dim and its size (see
 * wk__cuda_index_error). Nothing else reports it: later ops keep running
 * (an out-of-place op wrote zeros where its ids were bad; an in-place op
 * wrote nothing) and return WK_OK until a wait. */
#include "cuda/cuda_kernels.h"
/* The report for a launch: d's record (made on first use, NULL + error on
 * failure) and error word, a fresh seq; gate 0. Thread-safe. */
wk_status wk__cuda_ixflag(const char *op, wk_cuda_dev *d, wk_cu_ixflag *out);
/* Held while an in-place op queues its check and its write kernels, so no
 * other in-place check lands between them (the gate is one word). */
void wk__cuda_ix_lock(wk_cuda_dev *d);
void wk__cuda_ix_unlock(wk_cuda_dev *d);
#endif

/* Pure host (tested directly): the status a wait reports for the error word
 * v it read and, when v != 0 and the device has a record, the record rec
 * read after it (NULL: none). v == WK_ERR_INDEX with an owned record:
 * WK_ERR_INDEX under the indexing op's name, naming the id, the dim, its
 * size, the position, the device and the wait (wait_op). v == 0 with no
 * owned record: WK_OK. Other codes: the kernels' generic message. */
struct wk_cu_ixrec;
wk_status wk__cuda_flag_status(const char *wait_op, const char *dev_name, int32_t v, const struct wk_cu_ixrec *rec);
/* The public name of a wk_cu_ixop ("wk_index_select", ...; "indexing" for
 * an unknown code). */
const char *wk__cuda_ixop_name(int op);
/* The registry descriptor (cuda_device.c); listed in the generated backend
 * table only in builds with WICK_HAVE_CUDA. */
extern const wk_backend_desc wk__cuda_backend_desc;

/* Open (once) and return CUDA device `ordinal`; NULL + WK_ERR_DEVICE when no
 * driver, no device or a bad ordinal; NULL + WK_ERR_NOT_COMPILED without
 * WICK_HAVE_CUDA. Thread-safe. Called by wk_cuda(). */
wk_device *wk__cuda_open(int ordinal);
/* Devices the runtime reports (0 on any error, or without WICK_HAVE_CUDA). */
int wk__cuda_device_count(void);

/* Memory of a CUDA device's pool (pool counters; all zero for a non-CUDA
 * device). Internal until the public API grows a CUDA section. */
wk_status wk__cuda_mem_stats(wk_device *dev, wk_cupool_stats *out);
/* Wait for the device's stream, then return every cached block to the
 * driver; *released (may be NULL) gets the bytes freed. */
wk_status wk__cuda_cache_release(wk_device *dev, size_t *released);

/* Copy the view (src, ls) of CUDA device sdev into the contiguous buffer dst
 * of CUDA device ddev: gathered on sdev if strided, then one peer copy
 * ordered after the work queued on both devices (events, no host wait).
 * Only called with two different CUDA devices (the table's copy_between). */
wk_status wk__cuda_copy_between(wk_device *sdev, const void *src, const wk_layout *ls, wk_dtype dt, wk_device *ddev,
                                void *dst);

/* ---- BEGIN cu_fail (issue 15, failure modes): lost devices, cuBLAS math mode ---- */
#ifdef WICK_HAVE_CUDA
/* True for the errors after which the CUDA context is unusable (a kernel
 * fault: illegal address, launch failure, device assert, ...; the set the
 * runtime documents as "the process must be terminated and relaunched",
 * plus uncorrectable ECC / NVLink errors). */
bool wk__cuda_error_is_sticky(cudaError_t e);
/* Mark device `ordinal` lost when e is sticky (keeps the first such error);
 * for the paths that swallow errors (frees, pool syncs). wk__cuda_check
 * calls it for every error it records. */
void wk__cuda_note_error(int ordinal, cudaError_t e);
/* The sticky error device `ordinal` was lost to, or cudaSuccess. */
cudaError_t wk__cuda_lost_error(int ordinal);
/* WK_OK, or (lost device) WK_ERR_DEVICE recorded under op: "cuda:N: the
 * CUDA context is lost (<error>): restart the process". wk__cuda_enter
 * checks it first, so every entry of a lost device fails at once. */
wk_status wk__cuda_lost_err(const char *op, int ordinal);
/* Test-only hook: set (or, with cudaSuccess, clear) the lost state of
 * `ordinal` as a kernel fault would. */
void wk__cuda_test_set_lost(int ordinal, cudaError_t e);
/* The cuBLAS math mode every device's handle gets (a cublasMath_t):
 * default math with reduced-precision reduction disallowed. */
unsigned wk__cuda_blas_math_mode(bool tf32);
#endif
/* ---- END cu_fail ---- */

#endif
