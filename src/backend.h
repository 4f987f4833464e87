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
