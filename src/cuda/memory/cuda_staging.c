/* Uploads through pinned staging memory, so from_host returns without
 * waiting for the device.
 *
 * Why: cudaMemcpyAsync from pageable memory is not asynchronous - the driver
 * stages it itself and the call returns only once the stream has reached the
 * copy, i.e. after all work queued before it (a host upload behind a long
 * queue would wait for the whole queue). Copying into our own page-locked
 * chunk first costs one host memcpy and lets the DMA run in stream order
 * while the host goes on.
 *
 * Layout: WK_CUDA_STAGE_CHUNKS chunks of WK_CUDA_STAGE_BYTES, used as a
 * ring. Uploads are packed into the current chunk (256-byte aligned) and
 * the chunk's event is recorded after each copy out of it; when a chunk is
 * full the next one is taken after waiting for ITS event - i.e. for copies
 * queued a whole ring ago, normally long finished. An upload larger than a
 * chunk goes through in chunk-sized pieces. One mutex per device orders the
 * uploads of several threads. If pinned memory cannot be had, uploads fall
 * back to cudaMemcpyAsync + a wait (correct, just not asynchronous).
 * Checked: compiled. */
#include "cuda/runtime/cuda_device.h"

#ifdef WICK_HAVE_CUDA
#include <string.h>

/* under stage_lock */
static void make_chunks(wk_cuda_dev *d) {
    int i;
    for (i = 0; i < WK_CUDA_STAGE_CHUNKS; i++) {
        if (cudaHostAlloc(&d->stage[i], WK_CUDA_STAGE_BYTES, cudaHostAllocPortable) != cudaSuccess) break;
        if (cudaEventCreateWithFlags(&d->stage_done[i], cudaEventDisableTiming) != cudaSuccess) {
            cudaFreeHost(d->stage[i]);
            d->stage[i] = NULL;
            break;
        }
    }
    (void)cudaGetLastError();
    if (i < WK_CUDA_STAGE_CHUNKS) {
        for (int j = 0; j < i; j++) {
            cudaEventDestroy(d->stage_done[j]);
            cudaFreeHost(d->stage[j]);
            d->stage[j] = NULL;
        }
        (void)cudaGetLastError();
        d->stage_state = -1;
        return;
    }
    d->stage_cur = 0;
    d->stage_used = 0;
    d->stage_state = 1;
}

void wk__cuda_staging_free(wk_cuda_dev *d) {
    if (d->stage_state != 1) return;
    for (int i = 0; i < WK_CUDA_STAGE_CHUNKS; i++) {
        cudaEventSynchronize(d->stage_done[i]);
        cudaEventDestroy(d->stage_done[i]);
        cudaFreeHost(d->stage[i]);
        d->stage[i] = NULL;
    }
    (void)cudaGetLastError();
    d->stage_state = 0;
}

/* under stage_lock, stage_state == 1 */
static cudaError_t upload_staged(wk_cuda_dev *d, char *dst, const char *src, size_t n) {
    while (n > 0) {
        size_t room = WK_CUDA_STAGE_BYTES - d->stage_used;
        if (room < 256 || (room < n && d->stage_used > 0)) {
            /* next chunk: its last copies were queued a ring ago */
            d->stage_cur = (d->stage_cur + 1) % WK_CUDA_STAGE_CHUNKS;
            d->stage_used = 0;
            cudaError_t e = cudaEventSynchronize(d->stage_done[d->stage_cur]);
            if (e != cudaSuccess) return e;
            room = WK_CUDA_STAGE_BYTES;
        }
        size_t piece = n < room ? n : room;
        char *host = (char *)d->stage[d->stage_cur] + d->stage_used;
        memcpy(host, src, piece);
        cudaError_t e = cudaMemcpyAsync(dst, host, piece, cudaMemcpyHostToDevice, d->stream);
        if (e == cudaSuccess) e = cudaEventRecord(d->stage_done[d->stage_cur], d->stream);
        if (e != cudaSuccess) return e;
        d->stage_used += (piece + 255) & ~(size_t)255;
        if (d->stage_used > WK_CUDA_STAGE_BYTES) d->stage_used = WK_CUDA_STAGE_BYTES;
        dst += piece;
        src += piece;
        n -= piece;
    }
    return cudaSuccess;
}

wk_status wk__cuda_upload(const char *op, wk_cuda_dev *d, void *dst, const void *src, size_t n) {
    if (n == 0) return WK_OK;
    pthread_mutex_lock(&d->stage_lock);
    if (d->stage_state == 0) make_chunks(d);
    cudaError_t e;
    if (d->stage_state == 1) {
        e = upload_staged(d, dst, src, n);
    } else {
        e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, d->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream); /* src may be reused when we return */
    }
    pthread_mutex_unlock(&d->stage_lock);
    return wk__cuda_check(op, d, e);
}

#else
typedef int wk__cuda_staging_not_built;
#endif
