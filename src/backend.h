/* The backend contract: the C counterpart of candle's BackendStorage +
 * BackendDevice. One table of function pointers per backend; every entry is
 * required (tests/test_backend_contract.c fails if one is NULL).
 *
 * Rules every entry follows:
 *  - The dispatch layer (src/core/storage.c) has already checked devices,
 *    dtypes, shapes and dims. Backends check only what depends on data
 *    (integer division by zero) and resources (allocation).
 *  - Inputs come as (buffer, layout); layouts are views into the buffer with
 *    element strides and offset, possibly 0-stride (broadcast). Inputs of a
 *    multi-input op are already broadcast to the output shape.
 *  - Outputs are freshly allocated, contiguous, row-major, unless the entry
 *    says it writes through a layout (copy_strided, fill).
 *  - Return WK_OK or record an error with wk__err and return its status.
 *  - A GPU backend may queue the work and return at once; to_host waits for
 *    the work that produced the buffer it reads.
 */
#ifndef WICK_BACKEND_H
#define WICK_BACKEND_H
#include "core/layout.h"

/* Pooling parameters after validation: kernel, stride, padding per spatial
 * dim (H, W). */
typedef struct wk_pool_params {
    int64_t k[2], s[2], p[2];
    bool is_max, count_include_pad;
} wk_pool_params;

typedef struct wk_backend {
    const char *name;

    /* memory */
    wk_status (*alloc)(wk_device *dev, size_t nbytes, void **buf);
    void (*free)(wk_device *dev, void *buf, size_t nbytes);
    /* host -> device, contiguous bytes at byte offset `off` of buf */
    wk_status (*from_host)(wk_device *dev, void *buf, size_t off, const void *src, size_t nbytes);
    /* gather the view (src, l) into contiguous host memory, dtype unchanged */
    wk_status (*to_host)(wk_device *dev, const void *src, const wk_layout *l, wk_dtype dt, void *dst);

    /* copies and fills; dst written through its layout (same shape as src) */
    wk_status (*copy_strided)(wk_device *dev, const void *src, const wk_layout *ls, void *dst,
                              const wk_layout *ld, wk_dtype dt);
    wk_status (*fill)(wk_device *dev, void *dst, const wk_layout *ld, wk_dtype dt, double value);
    /* dst contiguous in dtype ddt */
    wk_status (*cast)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype sdt, void *dst, wk_dtype ddt);

    /* elementwise; dst contiguous */
    wk_status (*unary)(wk_device *dev, wk_unary_op op, const void *src, const wk_layout *ls, void *dst, wk_dtype dt);
    wk_status (*affine)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double mul,
                        double add);
    wk_status (*powf)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double e);
    wk_status (*elu)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double alpha);
    wk_status (*clamp)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, double lo,
                       double hi);
    wk_status (*binary)(wk_device *dev, wk_binary_op op, const void *a, const wk_layout *la, const void *b,
                        const wk_layout *lb, void *dst, wk_dtype dt);
    /* dst is u8 */
    wk_status (*cmp)(wk_device *dev, wk_cmp_op op, const void *a, const wk_layout *la, const void *b,
                     const wk_layout *lb, void *dst, wk_dtype dt);
    /* cond has an integer dtype cdt; a, b and dst have dtype dt */
    wk_status (*where)(wk_device *dev, const void *cond, const wk_layout *lc, wk_dtype cdt, const void *a,
                       const wk_layout *la, const void *b, const wk_layout *lb, void *dst, wk_dtype dt);

    /* Reduce the dims with mask[d] set. dst is contiguous over the kept dims
     * (in order), dtype = dt for sum/mean/max/min, u32 for argmax/argmin. */
    wk_status (*reduce)(wk_device *dev, wk_reduce_op op, const void *src, const wk_layout *ls, wk_dtype dt,
                        const bool *mask, void *dst);

    /* C[b] = A[b] @ B[b] for the batch dims of la/lb (rank >= 2, identical
     * batch shapes, any strides incl. 0); dst contiguous (batch..., m, n). */
    wk_status (*matmul)(wk_device *dev, const void *a, const wk_layout *la, const void *b, const wk_layout *lb,
                        void *dst, wk_dtype dt);

    /* ---- indexing (ids: integer dtype idt; backends check every index
     * against the size and return WK_ERR_INDEX, never read out of bounds) ---- */
    /* dst contiguous: src's shape with shape[dim] = numel(ids); ids 1-D */
    wk_status (*index_select)(wk_device *dev, const void *src, const wk_layout *ls, const void *ids,
                              const wk_layout *lids, wk_dtype idt, int dim, void *dst, wk_dtype dt);
    /* dst contiguous with ids' shape */
    wk_status (*gather)(wk_device *dev, const void *src, const wk_layout *ls, const void *ids, const wk_layout *lids,
                        wk_dtype idt, int dim, void *dst, wk_dtype dt);
    /* in place through ld: dst[.. ids[i] ..] = src[i] (or += when add) */
    wk_status (*scatter)(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                         wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt, bool add);
    /* in place through ld: dst.index_select(dim, ids) += src; ids 1-D */
    wk_status (*index_add)(wk_device *dev, void *dst, const wk_layout *ld, const void *ids, const wk_layout *lids,
                           wk_dtype idt, const void *src, const wk_layout *lsrc, int dim, wk_dtype dt);

    /* ---- convolutions; dst contiguous, shape computed by the dispatcher ---- */
    wk_status (*conv1d)(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                        void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p);
    wk_status (*conv2d)(wk_device *dev, const void *x, const wk_layout *lx, const void *w, const wk_layout *lw,
                        void *dst, const wk_layout *ld, wk_dtype dt, const wk_conv_params *p);
    wk_status (*conv_transpose1d)(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                  const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                  const wk_conv_params *p);
    wk_status (*conv_transpose2d)(wk_device *dev, const void *x, const wk_layout *lx, const void *w,
                                  const wk_layout *lw, void *dst, const wk_layout *ld, wk_dtype dt,
                                  const wk_conv_params *p);

    /* ---- pooling and resampling (NCHW; 1-d ops arrive with H = 1) ---- */
    wk_status (*pool2d)(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                        wk_dtype dt, const wk_pool_params *p);
    wk_status (*upsample2d)(wk_device *dev, const void *x, const wk_layout *lx, void *dst, const wk_layout *ld,
                            wk_dtype dt, bool bilinear, bool align_corners);

    /* ---- scans and order along dim; outputs contiguous with src's shape
     * (topk: shape[dim] = k) ---- */
    wk_status (*scan)(wk_device *dev, const void *src, const wk_layout *ls, void *dst, wk_dtype dt, int dim, bool prod);
    /* values (dt) and indices (i64); either may be NULL */
    wk_status (*sort)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, bool descending,
                      void *values, void *indices);
    wk_status (*topk)(wk_device *dev, const void *src, const wk_layout *ls, wk_dtype dt, int dim, int64_t k,
                      bool largest, void *values, void *indices);

    /* random numbers into a contiguous buffer of n elements (float dtypes) */
    wk_status (*rand_uniform)(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double lo, double hi);
    wk_status (*rand_normal)(wk_device *dev, void *dst, int64_t n, wk_dtype dt, double mean, double std);
    wk_status (*set_seed)(wk_device *dev, uint64_t seed);
    wk_status (*synchronize)(wk_device *dev);
} wk_backend;

/* Number of entries after `name`, for the contract test. */
#define WK_BACKEND_NUM_ENTRIES ((sizeof(wk_backend) - sizeof(const char *)) / sizeof(void (*)(void)))

extern const wk_backend wk__cpu_backend;

#endif
