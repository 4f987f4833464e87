/* Quantize / dequantize on the CPU: the row converters of the traits table
 * (quant/quant_traits.c; for dequantization the CPU's SIMD rows,
 * cpu/quantized/dequant_rows.h, where the type has them) applied run by
 * run. The work is split into blocks over the pool (a run never crosses a
 * row, so a thread may start or end in the middle of a row and a single
 * long row still spreads over threads);
 * each run goes through a small f32 buffer when the other side is not
 * contiguous f32. */
#include "cpu/quantized/cpu_quant.h"
#include "tensor/tensor.h"
#include "cpu/runtime/threadpool.h"
#include "cpu/quantized/dequant_rows.h"
#include "cpu/vmath/vmath.h"
#include "quant/quant.h"

enum { RUN_ELEMS = 4096 }; /* f32 staging per run: 16 KiB on the stack */

typedef struct {
    const wk__quant_traits *tr;
    wk__q_to_f32_fn to_f32; /* dequantize: the row for this vmath level */
    const wk_layout *l;   /* the element-dtype side: the block tensor's or the source's layout */
    const char *src;
    char *dst;
    wk_dtype edt;         /* the element dtype (source of quantize, target of dequantize) */
    int64_t bpr;          /* blocks per row */
    int rows_rank;        /* rank of the row index: all dims but the last */
} quant_job;

/* First element offset of row `row` of l. */
static int64_t row_offset(const quant_job *j, int64_t row) {
    return j->l->offset + wk__unravel(j->l->shape, j->l->stride, j->rows_rank, row);
}

static int64_t run_blocks(const quant_job *j, int64_t i, int64_t end) {
    int64_t left_in_row = j->bpr - i % j->bpr, cap = RUN_ELEMS / j->tr->block_elems, n = end - i;
    if (n > left_in_row) n = left_in_row;
    return n < cap ? n : cap;
}

static void store_f32_run(void *dst, wk_dtype dt, const float *x, int64_t n) {
    if (dt == WK_F16) wk__vcvt_f32_to_f16((uint16_t *)dst, x, n);
    else wk__vcvt_f32_to_bf16((uint16_t *)dst, x, n);
}

static void dequant_range(void *ctx, int64_t b0, int64_t b1, int tid) {
    (void)tid;
    const quant_job *j = ctx;
    int64_t be = j->tr->block_elems, bb = j->tr->block_bytes;
    size_t esz = wk_dtype_size(j->edt);
    float tmp[RUN_ELEMS];
    for (int64_t i = b0; i < b1;) {
        int64_t n = run_blocks(j, i, b1), row = i / j->bpr;
        /* a valid block layout: the row starts on a block boundary */
        const char *src = j->src + (row_offset(j, row) / be + i % j->bpr) * bb;
        char *dst = j->dst + i * be * (int64_t)esz;
        if (j->edt == WK_F32) {
            j->to_f32(src, (float *)dst, n * be);
        } else {
            j->to_f32(src, tmp, n * be);
            store_f32_run(dst, j->edt, tmp, n * be);
        }
        i += n;
    }
}

/* n elements from p with element stride s, as f32. */
static void load_f32_run(const char *p, wk_dtype dt, int64_t s, int64_t n, float *y) {
    switch (dt) {
    case WK_F32:
        for (int64_t k = 0; k < n; k++) y[k] = ((const float *)p)[k * s];
        break;
    case WK_F64: /* rounded to f32 first, as gguf-py's astype(float32) */
        for (int64_t k = 0; k < n; k++) y[k] = (float)((const double *)p)[k * s];
        break;
    case WK_F16:
        if (s == 1) wk__vcvt_f16_to_f32(y, (const uint16_t *)p, n);
        else for (int64_t k = 0; k < n; k++) y[k] = wk_f16_to_f32(((const uint16_t *)p)[k * s]);
        break;
    case WK_BF16:
        if (s == 1) wk__vcvt_bf16_to_f32(y, (const uint16_t *)p, n);
        else for (int64_t k = 0; k < n; k++) y[k] = wk_bf16_to_f32(((const uint16_t *)p)[k * s]);
        break;
    case WK_F8E4M3: case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64:
    WK__CASE_BLOCK_DTYPES:
    case WK_DTYPE_COUNT:
        break; /* refused by the tensor layer */
    }
}

static void quant_range(void *ctx, int64_t b0, int64_t b1, int tid) {
    (void)tid;
    const quant_job *j = ctx;
    int64_t be = j->tr->block_elems, bb = j->tr->block_bytes, s = j->l->stride[j->rows_rank];
    size_t esz = wk_dtype_size(j->edt);
    float tmp[RUN_ELEMS];
    for (int64_t i = b0; i < b1;) {
        int64_t n = run_blocks(j, i, b1), row = i / j->bpr;
        const char *src = j->src + (row_offset(j, row) + (i % j->bpr) * be * s) * (int64_t)esz;
        if (j->edt == WK_F32 && s == 1) {
            j->tr->from_f32((const float *)src, j->dst + i * bb, n * be);
        } else {
            load_f32_run(src, j->edt, s, n * be, tmp);
            j->tr->from_f32(tmp, j->dst + i * bb, n * be);
        }
        i += n;
    }
}

static void run_job(quant_job *j, wk_range_fn fn) {
    int r = j->l->rank;
    int64_t rows = 1;
    for (int i = 0; i < r - 1; i++) rows *= j->l->shape[i];
    j->rows_rank = r - 1;
    j->bpr = j->l->shape[r - 1] / j->tr->block_elems;
    int64_t n = rows * j->bpr;
    if (n == 0) return;
    /* stay on the calling thread below ~64 Ki elements (the pool's wake-up costs more) */
    wk__parallel_for(n, 1, WK_PAR_MIN_ELEMS / j->tr->block_elems, fn, j);
}

wk_status wk__cpu_dequantize(wk_device *dev, const void *w, const wk_layout *lw, wk_dtype wdt, void *dst,
                             wk_dtype ddt) {
    (void)dev;
    quant_job j = {.tr = wk__quant_traits_of(wdt), .l = lw, .src = w, .dst = dst, .edt = ddt};
    if (!j.tr || lw->rank < 1 || (ddt != WK_F32 && ddt != WK_F16 && ddt != WK_BF16))
        return wk__err(WK_ERR_DTYPE, "cpu dequantize", "%s -> %s is not a dequantization", wk_dtype_name(wdt),
                       wk_dtype_name(ddt));
    j.to_f32 = wk__cpu_dequant_row(wdt);
    run_job(&j, dequant_range);
    return WK_OK;
}

wk_status wk__cpu_quantize(wk_device *dev, const void *x, const wk_layout *lx, wk_dtype sdt, void *dst,
                           wk_dtype qdt) {
    (void)dev;
    quant_job j = {.tr = wk__quant_traits_of(qdt), .l = lx, .src = x, .dst = dst, .edt = sdt};
    if (!j.tr || lx->rank < 1 || (sdt != WK_F32 && sdt != WK_F64 && sdt != WK_F16 && sdt != WK_BF16))
        return wk__err(WK_ERR_DTYPE, "cpu quantize", "%s -> %s is not a quantization", wk_dtype_name(sdt),
                       wk_dtype_name(qdt));
    if (!j.tr->from_f32)
        return wk__err(WK_ERR_NOT_COMPILED, "cpu quantize", "no quantizer for %s is built", wk_dtype_name(qdt));
    run_job(&j, quant_range);
    return WK_OK;
}
