/* The CUDA backend table (src/tensor/backend.h) - first stage.
 *
 * Every op allocates from the device's pool, queues its kernel on the
 * device's one non-blocking stream and returns at once; kernels are built
 * ahead of time by nvcc (the .cu files of src/cuda, declared in
 * cuda_kernels.h and the kernels_*.h headers beside them) and receive their
 * views by value, so a strided launch uploads nothing.
 *
 * Readback (to_host) copies ONLY the bytes of the view: a contiguous view is
 * one cudaMemcpyAsync of exactly its bytes (a one-element read of a
 * 1024x1024 result moves 4 bytes); a strided view is gathered on the device
 * into a pooled temporary by the copy kernel, then copied. It then waits for
 * an event recorded right after that copy - i.e. for the work queued before
 * the copy on this device, not for work other threads queue later - and
 * reports errors the kernels flagged (integer division by zero) since the
 * last wait. Several threads may read back at once: each waits on its own
 * event.
 *
 * matmul goes to cuBLAS (row-major C = A B computed as column-major
 * C^T = B^T A^T): one cublasGemmStridedBatchedEx when each operand's batch
 * dims collapse to one stride and its matrix dims to a leading dimension,
 * else a loop of cublasGemmEx over the batch; an operand whose matrix dims
 * are not expressible (e.g. 0 or non-unit inner strides) is first copied to
 * a contiguous pooled temporary. f16/bf16 accumulate in f32 (the handle's
 * math mode disallows reduced-precision split-K reductions, so the f32 sum is
 * rounded once, as on the CPU; no cuBLASLt GEMM is issued, so no Lt
 * reduction-scheme preference is needed); f32 computes in
 * f32 (TF32 only with WICK_CUDA_TF32=1 in the environment when the device is
 * opened).
 *
 * Indexing (index_select, gather, scatter, index_add) never waits: bad ids
 * are found on the device and reported at the next wait (see the indexing
 * section below).
 *
 * Convolutions live in cuda_conv.c (im2col / col2im + this matmul), uploads
 * in cuda_staging.c; the kernels of every other entry in kernels_*.cu.
 *
 * What has been checked, for the whole backend (the other files' headers
 * say which test covers them, not this again): every file compiles (nvcc
 * for the .cu files, the host compiler for the .c files); the kernels'
 * per-item code, packing and launch loops run on the host against the CPU
 * backend (host emulation, WKC_HOST_EMULATION: the programs
 * tests/cuda/test_<name>_emu.cu, one ctest each, need nvcc but no GPU);
 * the GPU tests' own logic runs with
 * the CPU standing in for the GPU (the dry runs test_backend_ops_dry,
 * test_cuda_ops_dry, test_cuda_grad_dry), and scripts/device-check.sh's
 * stages through its --dry-run (device_check_dry). Not checked: nothing in
 * src/cuda has run on a GPU yet. scripts/device-check.sh (the GPU tests, the
 * emulation tests rebuilt with -DGPU_MODE, bench/bench_gpu) has never been
 * run on one, so device arithmetic, shared memory and barriers, the cuBLAS
 * calls and speed are all unmeasured. */
#include "cuda/runtime/cuda_device.h"

#ifdef WICK_HAVE_CUDA
#include <string.h>
#include "cuda/cuda_kernels.h"
#include "cuda/runtime/cuda_view.h"
#include "cuda/gemm/cuda_mm_plan.h"
#include "cuda/random/kernels_rand.h"
#include "cuda/conv/kernels_pool.h"
#include "cuda/conv/cuda_conv.h"
#include "cuda/reduce/kernels_sort.h"
#include "cuda/quantized/cuda_quant.h"
#include "cuda/nn/cuda_nn.h"
#include "cuda/nn/cuda_grad.h"

/* ---- memory ---- */

static wk_status cu_alloc(wk_device *dev, size_t nbytes, void **buf) {
    const char *op = "alloc";
    *buf = NULL;
    WK__CUDA_ENTER(op);
    if (wk__cupool_alloc(d->pool, nbytes, buf) == WK_OK) return WK_OK;
    wk_cupool_stats s;
    wk__cupool_stats(d->pool, &s);
    return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes on %s (%zu bytes in use, cache released and retried)",
                   nbytes, d->base.name, s.bytes_in_use);
}

static void cu_free(wk_device *dev, void *buf, size_t nbytes) {
    wk_cuda_dev *d = wk__cuda_dev(dev);
    /* the pool may hand blocks back to the driver: be on the right device
     * (no error to report from here, so no wk__err) */
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != d->ordinal) {
        if (cudaSetDevice(d->ordinal) != cudaSuccess) (void)cudaGetLastError();
    }
    /* stream-ordered: later work on the stream may reuse it at once */
    wk__cupool_free(d->pool, buf, nbytes);
}

static wk_status cu_from_host(wk_device *dev, void *buf, size_t off, const void *src, size_t nbytes) {
    const char *op = "from_host";
    WK__CUDA_ENTER(op);
    /* through pinned staging: returns without waiting for the device */
    return wk__cuda_upload(op, d, (char *)buf + off, src, nbytes);
}

/* Wait for everything queued on the stream up to now (an event: not for
 * work other threads queue after this point). */
static cudaError_t wait_here(wk_cuda_dev *d) {
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e != cudaSuccess) return cudaStreamSynchronize(d->stream);
    e = cudaEventRecord(ev, d->stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(ev);
    cudaError_t e2 = cudaEventDestroy(ev);
    return e != cudaSuccess ? e : e2;
}

/* Gather the view (src, l) of nb bytes into a pooled contiguous temporary
 * *tmp (queued on d's stream; the caller frees it, stream-ordered). */
static wk_status gather(const char *op, wk_cuda_dev *d, const void *src, const wk_layout *l, wk_dtype dt, size_t nb,
                        void **tmp) {
    *tmp = NULL;
    if (wk__cupool_alloc(d->pool, nb, tmp) != WK_OK)
        return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes on %s to gather a strided view", nb, d->base.name);
    int rc = wk__cu_copy_strided(d->stream, src, wk__cu_view(l), *tmp, wk__cu_contig_view(l), dt);
    if (rc != 0) {
        wk__cupool_free(d->pool, *tmp, nb);
        *tmp = NULL;
    }
    return wk__cuda_launched(op, d, rc);
}

static wk_status cu_to_host(wk_device *dev, const void *src, const wk_layout *l, wk_dtype dt, void *dst) {
    const char *op = "to_host";
    WK__CUDA_ENTER(op);
    wk_layout words; /* block rows move as raw words */
    wk_status qs = wk__cuq_word_layout(op, dt, l, &words, &dt);
    if (qs != WK_OK) return qs;
    l = &words;
    int64_t n = wk__layout_numel(l);
    if (n == 0) return WK_OK;
    size_t es = wk__dtype_elem_bytes(dt), nb = (size_t)n * es;
    void *tmp = NULL;
    cudaError_t e;
    if (wk__layout_is_contiguous(l)) {
        e = cudaMemcpyAsync(dst, (const char *)src + (size_t)l->offset * es, nb, cudaMemcpyDeviceToHost, d->stream);
    } else {
        wk_status st = gather(op, d, src, l, dt, nb, &tmp);
        if (st != WK_OK) return st;
        e = cudaMemcpyAsync(dst, tmp, nb, cudaMemcpyDeviceToHost, d->stream);
    }
    if (e == cudaSuccess) e = wait_here(d);
    if (tmp) wk__cupool_free(d->pool, tmp, nb);
    if (e != cudaSuccess) return wk__cuda_check(op, d, e);
    return wk__cuda_take_flag(op, d);
}

/* ---- moves between two CUDA devices ---- */

wk_status wk__cuda_copy_between(wk_device *sdev, const void *src, const wk_layout *ls, wk_dtype dt, wk_device *ddev,
                                void *dst) {
    const char *op = "wk_to_device";
    wk_cuda_dev *s = wk__cuda_dev(sdev), *t = wk__cuda_dev(ddev);
    wk_layout words; /* block rows move as raw words */
    wk_status qs = wk__cuq_word_layout(op, dt, ls, &words, &dt);
    if (qs != WK_OK) return qs;
    ls = &words;
    int64_t n = wk__layout_numel(ls);
    if (n == 0) return WK_OK;
    size_t es = wk__dtype_elem_bytes(dt), nb = (size_t)n * es;
    wk_status st = wk__cuda_enter(op, s);
    if (st == WK_OK) st = wk__cuda_lost_err(op, t->ordinal); /* the destination's context too */
    if (st != WK_OK) return st;
    const char *from = (const char *)src + (size_t)ls->offset * es;
    void *tmp = NULL;
    if (!wk__layout_is_contiguous(ls)) {
        /* gather the view on the source device first: the peer copy moves exactly n elements */
        st = gather(op, s, src, ls, dt, nb, &tmp);
        if (st != WK_OK) return st;
        from = tmp;
    }
    /* The copy runs on the source's stream, after (1) the source's queued
     * work and (2) the destination's queued work (dst came from its pool and
     * earlier work there may still use the block); later work on the
     * destination waits for the copy. Events only: the host never waits. */
    cudaEvent_t dst_ready = NULL, copied = NULL;
    cudaError_t e = cudaSetDevice(t->ordinal);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&dst_ready, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(dst_ready, t->stream);
    if (e == cudaSuccess) e = cudaSetDevice(s->ordinal);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(s->stream, dst_ready, 0);
    if (e == cudaSuccess) e = cudaMemcpyPeerAsync(dst, t->ordinal, from, s->ordinal, nb, s->stream);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&copied, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(copied, s->stream);
    if (e == cudaSuccess) e = cudaSetDevice(t->ordinal);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(t->stream, copied, 0);
    /* destroying a recorded event is legal: it is released once complete */
    if (dst_ready) cudaEventDestroy(dst_ready);
    if (copied) cudaEventDestroy(copied);
    if (tmp) wk__cupool_free(s->pool, tmp, nb); /* stream-ordered after the copy */
    return wk__cuda_check(op, s, e);
}

/* ---- copies and elementwise: the launchers of cuda_kernels.h ---- */

static wk_status cu_copy_strided(wk_device *dev, const void *src, const wk_layout *ls, void *dst, const wk_layout *ld,
                                 wk_dtype dt) {
    WK__CUDA_ENTER("copy_strided");
    wk_layout ws, wd; /* block rows move as raw words */
    wk_dtype wdt = dt;
    wk_status qs = wk__cuq_word_layout("copy_strided", dt, ls, &ws, &wdt);
    if (qs == WK_OK) qs = wk__cuq_word_layout("copy_strided", dt, ld, &wd, &wdt);
    if (qs != WK_OK) return qs;
    return wk__cuda_launched("copy_strided", d, wk__cu_copy_strided(d->stream, src, wk__cu_view(&ws), dst, wk__cu_view(&wd), wdt));
}

static wk_status cu_fill(wk_device *dev, void *dst, const wk_layout *ld, wk_dtype dt, double value) {
    WK__CUDA_ENTER("fill");
    return wk__cuda_launched("fill", d, wk__cu_fill(d->stream, dst, wk__cu_view(ld), dt, value));
}

static wk_status cu_cast(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype sdt, void *dst, wk_dtype ddt) {
    WK__CUDA_ENTER("cast");
    return wk__cuda_launched("cast", d, wk__cu_cast(d->stream, src, wk__cu_view(ls), sdt, dst, ddt));
}

static wk_status cu_unary(wk_device *dev, wk_unary_op op, const void *src, const wk_layout *ls, void *dst,
                          wk_dtype dt) {
    WK__CUDA_ENTER("unary");
    return wk__cuda_launched("unary", d, wk__cu_unary(d->stream, op, src, wk__cu_view(ls), dst, dt));
}

static wk_status cu_affine(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double mul,
                           double add) {
    WK__CUDA_ENTER("affine");
    return wk__cuda_launched("affine", d, wk__cu_affine(d->stream, src, wk__cu_view(ls), dst, dt, mul, add));
}

static wk_status cu_powf(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double e) {
    WK__CUDA_ENTER("powf");
    return wk__cuda_launched("powf", d, wk__cu_powf(d->stream, src, wk__cu_view(ls), dst, dt, e));
}

static wk_status cu_elu(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double alpha) {
    WK__CUDA_ENTER("elu");
    return wk__cuda_launched("elu", d, wk__cu_elu(d->stream, src, wk__cu_view(ls), dst, dt, alpha));
}

static wk_status cu_clamp(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double lo,
                          double hi) {
    WK__CUDA_ENTER("clamp");
    return wk__cuda_launched("clamp", d, wk__cu_clamp(d->stream, src, wk__cu_view(ls), dst, dt, lo, hi));
}

static wk_status cu_binary(wk_device *dev, wk_binary_op op, const void *a, const wk_layout *la, const void *b,
                           const wk_layout *lb, void *dst, wk_dtype dt) {
    WK__CUDA_ENTER("binary");
    /* integer division by zero lands in the device's flag; reported at the next wait */
    return wk__cuda_launched("binary", d,
                    wk__cu_binary(d->stream, op, a, wk__cu_view(la), b, wk__cu_view(lb), dst, dt, d->flag_dev));
}

static wk_status cu_cmp(wk_device *dev, wk_cmp_op op, const void *a, const wk_layout *la, const void *b,
                        const wk_layout *lb, void *dst, wk_dtype dt) {
    WK__CUDA_ENTER("cmp");
    return wk__cuda_launched("cmp", d, wk__cu_cmp(d->stream, op, a, wk__cu_view(la), b, wk__cu_view(lb), dst, dt));
}

static wk_status cu_where(wk_device *dev, const void *cond, const wk_layout *lc, wk_dtype cdt, const void *a,
                          const wk_layout *la, const void *b, const wk_layout *lb, void *dst, wk_dtype dt) {
    WK__CUDA_ENTER("where");
    return wk__cuda_launched("where", d,
                    wk__cu_where(d->stream, cond, wk__cu_view(lc), cdt, a, wk__cu_view(la), b, wk__cu_view(lb), dst, dt));
}

/* ---- matmul through cuBLAS ---- */

/* A wick operand of matmul: its data and layout, replaced by a pooled
 * contiguous copy when its matrix dims have no leading dimension. */
typedef struct mm_operand {
    const void *buf;
    wk_layout l;
    void *tmp;
    size_t tmp_bytes;
} mm_operand;

static wk_status mm_copy(const char *op, wk_cuda_dev *d, wk_dtype dt, mm_operand *o) {
    o->tmp_bytes = (size_t)wk__layout_numel(&o->l) * wk__dtype_elem_bytes(dt);
    wk_status st = gather(op, d, o->buf, &o->l, dt, o->tmp_bytes, &o->tmp);
    if (st != WK_OK) return st;
    wk_layout lc;
    wk__layout_contiguous(&lc, o->l.shape, o->l.rank, 0);
    o->buf = o->tmp;
    o->l = lc;
    return WK_OK;
}

static wk_status blas_status(const char *op, wk_cuda_dev *d, cublasStatus_t s) {
    if (s == CUBLAS_STATUS_SUCCESS) return WK_OK;
    /* a failed GEMM launch may be a lost context underneath: say so if it is */
    cudaError_t e = cudaGetLastError();
    wk__cuda_note_error(d->ordinal, e);
    wk_status lost = wk__cuda_lost_err(op, d->ordinal);
    if (lost != WK_OK) return lost;
    return wk__err(s == CUBLAS_STATUS_ALLOC_FAILED ? WK_ERR_OOM : WK_ERR_DEVICE, op, "%s: cuBLAS: %s", d->base.name,
                   cublasGetStatusString(s));
}

static wk_status cu_matmul(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                           void *dst, wk_dtype dt);

/* f8e4m3 (no cuBLAS type without per-tensor scales): widen both operands to
 * f32 with the cast kernel, multiply in f32, round the product once - the
 * CPU backend's rule for narrow floats. */
static wk_status mm_widened(wk_device *dev, wk_cuda_dev *d, const void *a, const wk_layout *la, const void *b,
                            const wk_layout *lb, void *dst, wk_dtype dt) {
    const char *op = "matmul";
    wk_layout lca, lcb, lco;
    wk__layout_contiguous(&lca, la->shape, la->rank, 0);
    wk__layout_contiguous(&lcb, lb->shape, lb->rank, 0);
    int64_t oshape[WK_MAX_RANK];
    memcpy(oshape, la->shape, sizeof(int64_t) * (size_t)la->rank);
    oshape[la->rank - 1] = lb->shape[lb->rank - 1];
    wk__layout_contiguous(&lco, oshape, la->rank, 0);
    size_t na = (size_t)wk__layout_numel(la) * 4, nb = (size_t)wk__layout_numel(lb) * 4,
           no = (size_t)wk__layout_numel(&lco) * 4;
    void *ta = NULL, *tb = NULL, *to = NULL;
    wk_status st = WK_OK;
    if (wk__cupool_alloc(d->pool, na, &ta) != WK_OK || wk__cupool_alloc(d->pool, nb, &tb) != WK_OK ||
        wk__cupool_alloc(d->pool, no, &to) != WK_OK)
        st = wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes on %s to widen %s operands", na + nb + no,
                     d->base.name, wk_dtype_name(dt));
    if (st == WK_OK) st = wk__cuda_launched(op, d, wk__cu_cast(d->stream, a, wk__cu_view(la), dt, ta, WK_F32));
    if (st == WK_OK) st = wk__cuda_launched(op, d, wk__cu_cast(d->stream, b, wk__cu_view(lb), dt, tb, WK_F32));
    if (st == WK_OK) st = cu_matmul(dev, ta, &lca, tb, &lcb, to, WK_F32);
    if (st == WK_OK) st = wk__cuda_launched(op, d, wk__cu_cast(d->stream, to, wk__cu_view(&lco), WK_F32, dst, dt));
    /* stream-ordered frees: the kernels queued above run first */
    if (ta) wk__cupool_free(d->pool, ta, na);
    if (tb) wk__cupool_free(d->pool, tb, nb);
    if (to) wk__cupool_free(d->pool, to, no);
    return st;
}

static wk_status cu_matmul(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                           void *dst, wk_dtype dt) {
    const char *op = "matmul";
    WK__CUDA_ENTER(op);
    if (dt == WK_F8E4M3) return mm_widened(dev, d, a, la, b, lb, dst, dt);
    cudaDataType_t ct;
    cublasComputeType_t comp = CUBLAS_COMPUTE_32F;
    switch (dt) {
    case WK_F32: ct = CUDA_R_32F; comp = d->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; break;
    case WK_F64: ct = CUDA_R_64F; comp = CUBLAS_COMPUTE_64F; break;
    case WK_F16: ct = CUDA_R_16F; break;
    case WK_BF16: ct = CUDA_R_16BF; break;
    default: /* integers: the dispatcher refuses them (as on the CPU); f8e4m3 was widened above */
        return wk__err(WK_ERR_DTYPE, op, "not defined for dtype %s", wk_dtype_name(dt));
    }
    size_t es = wk__dtype_elem_bytes(dt);
    wk_cumm_call c;
    if (!wk__cumm_plan(la, lb, &c))
        return wk__err(WK_ERR_SHAPE, op, "m=%lld n=%lld k=%lld exceed cuBLAS's 32-bit sizes",
                       (long long)la->shape[la->rank - 2], (long long)lb->shape[lb->rank - 1],
                       (long long)la->shape[la->rank - 1]);
    if (c.batch == 0 || c.m == 0 || c.n == 0) return WK_OK;
    if (c.k == 0) return wk__cuda_check(op, d, cudaMemsetAsync(dst, 0, (size_t)(c.batch * c.m * c.n) * es, d->stream));
    mm_operand A = {.buf = a, .l = *la}, B = {.buf = b, .l = *lb};
    wk_status st = WK_OK;
    if (c.copy_a) st = mm_copy(op, d, dt, &A);
    if (st == WK_OK && c.copy_b) st = mm_copy(op, d, dt, &B);
    if (st == WK_OK && (c.copy_a || c.copy_b) && (!wk__cumm_plan(&A.l, &B.l, &c) || c.copy_a || c.copy_b))
        st = wk__err(WK_ERR_SHAPE, op, "a matrix dim exceeds cuBLAS's 32-bit leading dimension");
    if (st == WK_OK) {
        float one32 = 1.0f, zero32 = 0.0f;
        double one64 = 1.0, zero64 = 0.0;
        const void *alpha = dt == WK_F64 ? (const void *)&one64 : (const void *)&one32;
        const void *beta = dt == WK_F64 ? (const void *)&zero64 : (const void *)&zero32;
        cublasOperation_t op1 = c.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t op2 = c.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
        const char *pa = (const char *)A.buf + (size_t)A.l.offset * es;
        const char *pb = (const char *)B.buf + (size_t)B.l.offset * es;
        cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
        pthread_mutex_lock(&d->blas_lock);
        if (c.strided) {
            /* column-major C^T (n x m) = op(B^T) (n x k) * op(A^T) (k x m) */
            bs = cublasGemmStridedBatchedEx(d->blas, op1, op2, (int)c.m, (int)c.n, (int)c.k, alpha, pb, ct,
                                            (int)c.ld_first, c.stride_first, pa, ct, (int)c.ld_second,
                                            c.stride_second, beta, dst, ct, (int)c.ldc, c.stride_c, (int)c.batch,
                                            comp, CUBLAS_GEMM_DEFAULT);
        } else {
            /* batch strides that no single stride expresses: one GEMM per batch */
            for (int64_t i = 0; i < c.batch && bs == CUBLAS_STATUS_SUCCESS; i++) {
                const char *bi = pb + (size_t)wk__cumm_batch_offset(&B.l, i) * es;
                const char *ai = pa + (size_t)wk__cumm_batch_offset(&A.l, i) * es;
                bs = cublasGemmEx(d->blas, op1, op2, (int)c.m, (int)c.n, (int)c.k, alpha, bi, ct, (int)c.ld_first, ai,
                                  ct, (int)c.ld_second, beta, (char *)dst + (size_t)(i * c.stride_c) * es, ct,
                                  (int)c.ldc, comp, CUBLAS_GEMM_DEFAULT);
            }
        }
        pthread_mutex_unlock(&d->blas_lock);
        st = blas_status(op, d, bs);
    }
    /* stream-ordered: the GEMMs queued above run before any later user of these blocks */
    if (A.tmp) wk__cupool_free(d->pool, A.tmp, A.tmp_bytes);
    if (B.tmp) wk__cupool_free(d->pool, B.tmp, B.tmp_bytes);
    return st;
}


static wk_status cu_reduce(wk_device *dev, wk_reduce_op op, const void *src, const wk_layout *ls, wk_dtype dt,
                           const bool *mask, void *dst) {
    WK__CUDA_ENTER("reduce");
    return wk__cuda_launched("reduce", d, wk__cu_reduce(d->stream, op, src, wk__cu_view(ls), dt, mask, dst));
}
/* ---- indexing (kernels_index.cu) ----
 * No host wait (issue 15): each op takes a wk_cu_ixflag (the device's index
 * record + error word, a fresh seq) and queues its kernels like any op. A
 * bad id is found by the kernels and reported by the next wait on the
 * device (wk_device_synchronize, a readback; cuda_device.h) as WK_ERR_INDEX
 * under this op's name (the CPU backend's names), with the id, the dim and
 * its size. index_select / gather: the one kernel checks as it reads (zero
 * bits where an id is bad). scatter / scatter_add / index_add write in
 * place and must not half-write: they queue wk__cu_index_check first and
 * their write kernels are gated on it on the device (dst untouched when
 * any id is bad), so there is no synchronous check left to wait for. Check
 * and writes are queued under wk__cuda_ix_lock (the gate is one word per
 * device). Before issue 15 every op waited for its check, i.e. for all work
 * queued before it: an embedding lookup per token stalled the pipeline. */

static bool idx_dtype_ok(const char *op, wk_dtype idt) {
    if (idt == WK_U8 || idt == WK_U32 || idt == WK_I32 || idt == WK_I64) return true;
    wk__err(WK_ERR_DTYPE, op, "index dtype %s is not supported (u8, u32, i32, i64)", wk_dtype_name(idt));
    return false;
}

/* The one-thread plan of an overlapping dst is bounded (kernels_index.cu
 * "Serial plan"): say so before anything is queued. */
static wk_status serial_bound(const char *op, wk_cuda_dev *d, const wk_layout *ld, const wk_layout *lids, int dim,
                              bool index_add) {
    int64_t bound = 0, pairs = wk__cu_ix_serial_pairs(wk__cu_view(ld), wk__cu_view(lids), dim, index_add, &bound);
    if (pairs <= bound) return WK_OK;
    return wk__err(WK_ERR_ARG, op,
                   "the destination view overlaps itself, so its %lld writes would run in order on one thread of %s "
                   "(at most %lld are accepted); write into a contiguous copy instead",
                   (long long)pairs, d->base.name, (long long)bound);
}

static wk_status ix_flag(const char *op, wk_cuda_dev *d, wk_dtype idt, wk_cu_ixflag *f) {
    if (!idx_dtype_ok(op, idt)) return WK_ERR_DTYPE;
    return wk__cuda_ixflag(op, d, f);
}

/* In-place ops, called under wk__cuda_ix_lock: a fresh flag, the check of
 * every id queued (no wait), then gate = 1 for the write kernels. */
static wk_status queue_check(const char *op, wk_cuda_dev *d, const void *ids, const wk_layout *lids, wk_dtype idt,
                             int ixop, int dim, int64_t size, wk_cu_ixflag *f) {
    wk_status st = ix_flag(op, d, idt, f);
    if (st != WK_OK) return st;
    f->gate = 1;
    if (wk__layout_numel(lids) == 0) return WK_OK;
    return wk__cuda_launched(op, d, wk__cu_index_check(d->stream, ids, wk__cu_view(lids), idt, size, ixop, dim, *f));
}

static wk_status cu_index_select(wk_device *dev, const void *src, const wk_layout *ls, const void *ids,
                                 const wk_layout *lids, wk_dtype idt, int dim, void *dst, wk_dtype dt) {
    const char *op = "wk_index_select";
    WK__CUDA_ENTER(op);
    /* block rows (any dim but the last) are gathered as raw words */
    if (wk_dtype_is_quantized(dt) && dim == ls->rank - 1)
        return wk__err(WK_ERR_DTYPE, op, "selects whole rows of %s, not elements of the last dim", wk_dtype_name(dt));
    wk_layout words;
    wk_status st = wk__cuq_word_layout(op, dt, ls, &words, &dt);
    if (st != WK_OK) return st;
    wk_cu_ixflag f;
    st = ix_flag(op, d, idt, &f);
    if (st != WK_OK) return st;
    return wk__cuda_launched(op, d,
                    wk__cu_index_select(d->stream, src, wk__cu_view(&words), ids, wk__cu_view(lids), idt, dim, dst, dt,
                                        f));
}
static wk_status cu_gather(wk_device *dev, const void *src, const wk_layout *ls, const void *ids, const wk_layout *lids,
                           wk_dtype idt, int dim, void *dst, wk_dtype dt) {
    const char *op = "wk_gather";
    WK__CUDA_ENTER(op);
    wk_cu_ixflag f;
    wk_status st = ix_flag(op, d, idt, &f);
    if (st != WK_OK) return st;
    return wk__cuda_launched(op, d,
                    wk__cu_gather(d->stream, src, wk__cu_view(ls), ids, wk__cu_view(lids), idt, dim, dst, dt, f));
}
/* The sorted index paths (kernels_index.cu: scatter / scatter_add over long
 * lines, index_add over a long id list): the validated ids sorted stably
 * along dim, every line at once, into pooled sorted ids + i64 original
 * positions (contiguous with the ids' shape). */
typedef struct sorted_ids {
    void *ids, *perm, *ws;
    size_t nids, nperm, nws;
} sorted_ids;

static void sorted_ids_free(wk_cuda_dev *d, sorted_ids *s) {
    /* stream-ordered: the kernels queued with them run first */
    if (s->ids) wk__cupool_free(d->pool, s->ids, s->nids);
    if (s->perm) wk__cupool_free(d->pool, s->perm, s->nperm);
    if (s->ws) wk__cupool_free(d->pool, s->ws, s->nws);
}

/* Queue the sort. Returns its launch rc (0 = ok), or -1 with nothing queued
 * when the temporaries cannot be allocated: the caller then takes the plain
 * path (same result, only slower). Free with sorted_ids_free either way. */
static int sort_ids(wk_cuda_dev *d, const void *ids, const wk_layout *lids, wk_dtype idt, int dim, sorted_ids *s) {
    const wk_cu_view v = wk__cu_view(lids);
    const int64_t n = wk__layout_numel(lids);
    memset(s, 0, sizeof *s);
    s->nids = (size_t)n * wk__dtype_elem_bytes(idt);
    s->nperm = (size_t)n * sizeof(int64_t);
    s->nws = wk__cu_sort_workspace(v, dim, idt);
    if (wk__cupool_alloc(d->pool, s->nids, &s->ids) != WK_OK || wk__cupool_alloc(d->pool, s->nperm, &s->perm) != WK_OK ||
        (s->nws > 0 && wk__cupool_alloc(d->pool, s->nws, &s->ws) != WK_OK))
        return -1;
    return wk__cu_sort(d->stream, ids, v, idt, dim, false, s->ids, s->perm, s->ws);
}

/* scatter's writes, after its check (f: gate = 1) */
static wk_status scatter_write(const char *op, wk_cuda_dev *d, void *dst, const wk_layout *ld, const void *ids,
                               const wk_layout *lids, wk_dtype idt, const void *src, const wk_layout *lsrc, int dim,
                               wk_dtype dt, bool add, wk_cu_ixflag f) {
    /* long lines, few of them: sort the ids of every line, same bits */
    if (wk__cu_scatter_prefers_sorted(wk__cu_view(ld), wk__cu_view(lids), dim)) {
        sorted_ids so;
        int rc = sort_ids(d, ids, lids, idt, dim, &so);
        if (rc == 0)
            rc = wk__cu_scatter_sorted(d->stream, dst, wk__cu_view(ld), so.ids, (const int64_t *)so.perm,
                                       wk__cu_view(lids), idt, src, wk__cu_view(lsrc), dim, dt, add, f);
        sorted_ids_free(d, &so);
        if (rc >= 0) return wk__cuda_launched(op, d, rc);
    }
    return wk__cuda_launched(op, d,
                    wk__cu_scatter(d->stream, dst, wk__cu_view(ld), ids, wk__cu_view(lids), idt, src, wk__cu_view(lsrc), dim, dt,
                                   add, f));
}
static wk_status cu_scatter(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                            wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt, bool add) {
    const char *op = add ? "wk_scatter_add" : "wk_scatter";
    WK__CUDA_ENTER(op);
    /* src / ids never share dst's storage here: the dispatcher
     * (ops/indexing.c) copies an aliasing input out first, since the
     * kernel's work items run concurrently */
    /* checked on the device, the writes gated on it: never a half-written dst, no wait */
    wk_status st = serial_bound(op, d, ld, lids, dim, false);
    if (st != WK_OK) return st;
    wk_cu_ixflag f;
    wk__cuda_ix_lock(d);
    st = queue_check(op, d, ids, lids, idt, add ? WK_CU_IX_SCATTER_ADD : WK_CU_IX_SCATTER, dim, ld->shape[dim], &f);
    if (st == WK_OK) st = scatter_write(op, d, dst, ld, ids, lids, idt, src, lsrc, dim, dt, add, f);
    wk__cuda_ix_unlock(d);
    return st;
}
/* index_add's writes, after its check (f: gate = 1) */
static wk_status index_add_write(const char *op, wk_cuda_dev *d, void *dst, const wk_layout *ld, const void *ids,
                                 const wk_layout *lids, wk_dtype idt, const void *src, const wk_layout *lsrc, int dim,
                                 wk_dtype dt, wk_cu_ixflag f) {
    /* long id lists over few outer positions: sort the ids, same bits */
    if (wk__cu_index_add_prefers_sorted(wk__cu_view(ld), wk__cu_view(lids), dim)) {
        sorted_ids so;
        int rc = sort_ids(d, ids, lids, idt, 0, &so);
        if (rc == 0)
            rc = wk__cu_index_add_sorted(d->stream, dst, wk__cu_view(ld), so.ids, (const int64_t *)so.perm, idt,
                                         lids->shape[0], src, wk__cu_view(lsrc), dim, dt, f);
        sorted_ids_free(d, &so);
        if (rc >= 0) return wk__cuda_launched(op, d, rc);
    }
    return wk__cuda_launched(op, d,
                    wk__cu_index_add(d->stream, dst, wk__cu_view(ld), ids, wk__cu_view(lids), idt, src, wk__cu_view(lsrc), dim,
                                     dt, f));
}
static wk_status cu_index_add(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                              wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt) {
    const char *op = "wk_index_add";
    WK__CUDA_ENTER(op);
    wk_status st = serial_bound(op, d, ld, lids, dim, true);
    if (st != WK_OK) return st;
    wk_cu_ixflag f;
    wk__cuda_ix_lock(d);
    st = queue_check(op, d, ids, lids, idt, WK_CU_IX_INDEX_ADD, dim, ld->shape[dim], &f);
    if (st == WK_OK) st = index_add_write(op, d, dst, ld, ids, lids, idt, src, lsrc, dim, dt, f);
    wk__cuda_ix_unlock(d);
    return st;
}
static wk_status cu_pool2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                           wk_dtype dt, const wk_pool_params *p) {
    const char *op = p->is_max ? "max_pool2d" : "avg_pool2d";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d, wk__cu_pool2d(d->stream, x, wk__cu_view(lx), dst, wk__cu_contig_view(ld), dt, p));
}
static wk_status cu_upsample2d(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                               wk_dtype dt, bool bilinear, bool align_corners) {
    const char *op = bilinear ? "upsample_bilinear2d" : "upsample_nearest2d";
    WK__CUDA_ENTER(op);
    return wk__cuda_launched(op, d,
                    wk__cu_upsample2d(d->stream, x, wk__cu_view(lx), dst, wk__cu_contig_view(ld), dt, bilinear, align_corners));
}
/* Scans, sort and topk take a pooled workspace sized by the kernels; it is
 * freed right after the launches are queued (stream-ordered reuse). */
static wk_status with_workspace(const char *op, wk_cuda_dev *d, size_t bytes, void **ws) {
    *ws = NULL;
    if (bytes && wk__cupool_alloc(d->pool, bytes, ws) != WK_OK)
        return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes of workspace on %s", bytes, d->base.name);
    return WK_OK;
}

static wk_status cu_scan(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, int dim,
                         bool prod) {
    const char *op = prod ? "wk_cumprod" : "wk_cumsum";
    WK__CUDA_ENTER(op);
    wk_cu_view v = wk__cu_view(ls);
    size_t wsb = wk__cu_scan_workspace(v, dim, dt);
    void *ws;
    wk_status st = with_workspace(op, d, wsb, &ws);
    if (st != WK_OK) return st;
    int rc = wk__cu_scan(d->stream, src, v, dst, dt, dim, prod, ws);
    if (ws) wk__cupool_free(d->pool, ws, wsb);
    return wk__cuda_launched(op, d, rc);
}
/* sort (k < 0: the whole dim, `first` = descending) and topk (k entries,
 * `first` = largest) share the bitonic sort and its workspace */
static wk_status order_op(const char *op, wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim,
                          int64_t k, bool first, void *values, void *indices) {
    WK__CUDA_ENTER(op);
    wk_cu_view v = wk__cu_view(ls);
    size_t wsb = wk__cu_sort_workspace(v, dim, dt);
    void *ws;
    wk_status st = with_workspace(op, d, wsb, &ws);
    if (st != WK_OK) return st;
    int rc = k < 0 ? wk__cu_sort(d->stream, src, v, dt, dim, first, values, indices, ws)
                   : wk__cu_topk(d->stream, src, v, dt, dim, k, first, values, indices, ws);
    if (ws) wk__cupool_free(d->pool, ws, wsb);
    return wk__cuda_launched(op, d, rc);
}
static wk_status cu_sort(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, bool descending,
                         void *values, void *indices) {
    return order_op("wk_sort", dev, src, ls, dt, dim, -1, descending, values, indices);
}
static wk_status cu_topk(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t k,
                         bool largest, void *values, void *indices) {
    return order_op("wk_topk", dev, src, ls, dt, dim, k, largest, values, indices);
}

/* Philox counters: each call takes the next wk__cu_rand_counters of the
 * device's stream under the generator lock, so values depend only on the
 * seed and the order of the calls (never on the grid). */
static wk_status cu_rand(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double a, double b, bool normal) {
    const char *op = normal ? "wk_randn" : "wk_rand";
    WK__CUDA_ENTER(op);
    if (n <= 0) return WK_OK;
    while (atomic_flag_test_and_set_explicit(&d->rng_lock, memory_order_acquire)) {
    }
    uint64_t seed = dev->seed, off = atomic_load(&d->rng_offset);
    atomic_store(&d->rng_offset, off + wk__cu_rand_counters(n, dt, normal));
    atomic_flag_clear_explicit(&d->rng_lock, memory_order_release);
    int rc = normal ? wk__cu_rand_normal(d->stream, dst, n, dt, a, b, seed, off)
                    : wk__cu_rand_uniform(d->stream, dst, n, dt, a, b, seed, off);
    return wk__cuda_launched(op, d, rc);
}
static wk_status cu_rand_uniform(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double lo, double hi) {
    return cu_rand(dev, dst, n, dt, lo, hi, false);
}
static wk_status cu_rand_normal(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double mean, double std) {
    return cu_rand(dev, dst, n, dt, mean, std, true);
}

/* ---- device control ---- */

static wk_status cu_set_seed(wk_device *dev, uint64_t seed) {
    /* the Philox stream restarts at counter 0 of the new key; seed and
     * offset change together under the device's generator lock */
    wk_cuda_dev *d = wk__cuda_dev(dev);
    while (atomic_flag_test_and_set_explicit(&d->rng_lock, memory_order_acquire)) {
    }
    dev->seed = seed;
    atomic_store(&d->rng_offset, 0);
    atomic_flag_clear_explicit(&d->rng_lock, memory_order_release);
    return WK_OK;
}

static wk_status cu_synchronize(wk_device *dev) {
    const char *op = "wk_device_synchronize";
    WK__CUDA_ENTER(op);
    wk_status st = wk__cuda_check(op, d, cudaStreamSynchronize(d->stream));
    if (st != WK_OK) return st;
    return wk__cuda_take_flag(op, d);
}

const wk_backend wk__cuda_backend = {
    .name = "cuda",
    .alloc = cu_alloc,
    .free = cu_free,
    .from_host = cu_from_host,
    .to_host = cu_to_host,
    .copy_strided = cu_copy_strided,
    .fill = cu_fill,
    .cast = cu_cast,
    .unary = cu_unary,
    .affine = cu_affine,
    .powf = cu_powf,
    .elu = cu_elu,
    .clamp = cu_clamp,
    .binary = cu_binary,
    .cmp = cu_cmp,
    .where = cu_where,
    .reduce = cu_reduce,
    .matmul = cu_matmul,
    .index_select = cu_index_select,
    .gather = cu_gather,
    .scatter = cu_scatter,
    .index_add = cu_index_add,
    .conv = wk__cuda_conv,
    .pool2d = cu_pool2d,
    .upsample2d = cu_upsample2d,
    .scan = cu_scan,
    .sort = cu_sort,
    .topk = cu_topk,
    .rand_uniform = cu_rand_uniform,
    .rand_normal = cu_rand_normal,
    .set_seed = cu_set_seed,
    .synchronize = cu_synchronize,
    /* fused nn ops (cuda_nn.c) */
    .softmax = wk__cuda_softmax,
    .log_softmax = wk__cuda_log_softmax,
    .rms_norm = wk__cuda_rms_norm,
    .layer_norm = wk__cuda_layer_norm,
    .rope = wk__cuda_rope,
    .swiglu = wk__cuda_swiglu,
    .attention = wk__cuda_attention,
    /* block-quantized dtypes (cuda_quant.c) */
    .qmatmul = wk__cuda_qmatmul,
    .dequantize = wk__cuda_dequantize,
    /* peer copies between GPUs */
    .copy_between = wk__cuda_copy_between,
    /* autograd: fused backward and optimizer steps (cuda_grad.c) */
    .softmax_backward = wk__cuda_softmax_backward,
    .norm_backward = wk__cuda_norm_backward,
    .attention_backward = wk__cuda_attention_backward,
    .optim_step = wk__cuda_optim_step,
    .pool2d_backward = wk__cuda_pool2d_backward,
    .upsample2d_backward = wk__cuda_upsample2d_backward,
};

#else
typedef int wk__cuda_backend_not_built; /* keeps the translation unit non-empty */
#endif
