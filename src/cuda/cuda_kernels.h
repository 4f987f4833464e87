/* The C ABI between the CUDA backend's host code (cuda_backend.c, plain C)
 * and its kernels (*.cu, compiled ahead of time by nvcc into the library's
 * fatbin). Views travel to kernels by value as kernel arguments, so a
 * strided launch never uploads its layout separately (candle copies dims +
 * strides to the device for every non-contiguous op).
 *
 * Every launcher queues its work on `stream` and returns at once:
 * 0 on success, else the cudaError_t of the launch (as int). Launchers with
 * zero elements queue nothing and return 0. Integer division by zero is
 * recorded in `*err_flag` (device memory, set to a wk_status code by the
 * kernel; the host reads it when it next waits), out-of-range indices
 * through a wk_cu_ixflag (the same word plus the device's index record, see
 * the indexing section) - never undefined behaviour, never a silent wrong
 * answer. */
#ifndef WICK_CUDA_KERNELS_H
#define WICK_CUDA_KERNELS_H
#include <stdint.h>
#include "wick/wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *wk_cu_stream; /* = cudaStream_t */

/* A view: wk_layout's fields as plain data (element strides, offset). */
typedef struct wk_cu_view {
    int32_t rank;
    int64_t shape[WK_MAX_RANK];
    int64_t stride[WK_MAX_RANK];
    int64_t offset;
} wk_cu_view;

/* dst written through its view */
int wk__cu_fill(wk_cu_stream s, void *dst, wk_cu_view ld, wk_dtype dt, double value);
int wk__cu_copy_strided(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_cu_view ld, wk_dtype dt);
/* dst contiguous from here on */
int wk__cu_cast(wk_cu_stream s, const void *src, wk_cu_view ls, wk_dtype sdt, void *dst, wk_dtype ddt);
int wk__cu_unary(wk_cu_stream s, wk_unary_op op, const void *src, wk_cu_view ls, void *dst, wk_dtype dt);
int wk__cu_affine(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double mul, double add);
int wk__cu_powf(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double e);
int wk__cu_elu(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double alpha);
int wk__cu_clamp(wk_cu_stream s, const void *src, wk_cu_view ls, void *dst, wk_dtype dt, double lo, double hi);
/* a, b already broadcast to the output shape (0 strides) */
int wk__cu_binary(wk_cu_stream s, wk_binary_op op, const void *a, wk_cu_view la, const void *b, wk_cu_view lb,
                  void *dst, wk_dtype dt, int32_t *err_flag);
int wk__cu_cmp(wk_cu_stream s, wk_cmp_op op, const void *a, wk_cu_view la, const void *b, wk_cu_view lb, void *dst,
               wk_dtype dt);
int wk__cu_where(wk_cu_stream s, const void *cond, wk_cu_view lc, wk_dtype cdt, const void *a, wk_cu_view la,
                 const void *b, wk_cu_view lb, void *dst, wk_dtype dt);

/* Reduce the dims of ls with mask[d] set (mask: host array of ls.rank
 * bools, read before the call returns); dst contiguous over the kept dims,
 * in dtype dt (sum/mean/max/min/prod), u32 (argmax/argmin) or u8 (any/all).
 * Deterministic: a fixed per-output tree, independent of timing. */
int wk__cu_reduce(wk_cu_stream s, wk_reduce_op op, const void *src, wk_cu_view ls, wk_dtype dt, const bool *mask,
                  void *dst);

/* Indexing (kernels_index.cu). ids have an integer dtype idt (u8, u32, i32,
 * i64). No launcher waits: a bad id ((unsigned)id >= size, negatives
 * included) is reported through a wk_cu_ixflag into the device's record
 * (wk_cu_ixrec, device memory) and read by the host at the next wait
 * (cuda_device.c). Every kernel checks every id it uses: a bad one is never
 * read or written out of bounds (select / gather store a zero there).
 * In-place ops (scatter, index_add) first queue wk__cu_index_check with the
 * same flag; their write kernels get the flag with gate = 1 and do nothing
 * at all when that check found a bad id, so dst is never half-written -
 * without the host waiting for the check. Deterministic: no atomics on
 * data; scatter / index_add handle the ids along dim of one position in
 * increasing order (one thread per position of the other dims; one thread
 * for the whole op when dst's view overlaps itself: see kernels_index.cu
 * "Serial plan" for its bound). */
typedef enum wk_cu_ixop {
    WK_CU_IX_SELECT = 1,
    WK_CU_IX_GATHER,
    WK_CU_IX_SCATTER,
    WK_CU_IX_SCATTER_ADD,
    WK_CU_IX_INDEX_ADD,
} wk_cu_ixop;

/* One per device, in device memory, zeroed when made. Only threads that
 * meet a bad id touch it. bad_seq first: the host clears the rest after
 * reading it, never bad_seq (an in-place op's write kernel may still be
 * queued behind its check). */
typedef struct wk_cu_ixrec {
    unsigned long long bad_seq; /* seq of the last in-place check that found a bad id (the gate) */
    unsigned long long owner;   /* seq of the launch whose error is recorded; 0 = none */
    unsigned long long pos;     /* its first bad row-major position in the ids view */
    long long id;               /* the id there */
    long long size;             /* the size it is out of range for */
    int32_t op;                 /* wk_cu_ixop */
    int32_t dim;
    int32_t lock;               /* taken by a thread updating owner..dim */
    int32_t pad_;
} wk_cu_ixrec;

/* Where a launch reports (by value, part of the kernel's argument). The
 * first launch that meets a bad id since the record was last read owns it
 * and keeps its smallest bad position (later launches' errors are dropped
 * until the host reads it: the first error is the one reported); the
 * owner, and only it, also sets *status = WK_ERR_INDEX, the device's error
 * word that every wait reads. rec NULL: only *status is set (tests).
 * seq: unique per op and non-zero. gate: in-place write kernels after
 * their wk__cu_index_check. */
typedef struct wk_cu_ixflag {
    int32_t *status;
    wk_cu_ixrec *rec;
    unsigned long long seq;
    int32_t gate;
    int32_t pad_;
} wk_cu_ixflag;

/* Check every id of the view against size and report the first bad
 * row-major position as op (wk_cu_ixop) over dim; also sets rec->bad_seq =
 * f.seq (the gate of the in-place write queued next with the same f). */
int wk__cu_index_check(wk_cu_stream s, const void *ids, wk_cu_view lids, wk_dtype idt, int64_t size, int op, int dim,
                       wk_cu_ixflag f);
/* dst contiguous: src's shape with shape[dim] = numel(ids); ids 1-D */
int wk__cu_index_select(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids,
                        wk_dtype idt, int dim, void *dst, wk_dtype dt, wk_cu_ixflag flag);
/* dst contiguous with ids' shape */
int wk__cu_gather(wk_cu_stream s, const void *src, wk_cu_view ls, const void *ids, wk_cu_view lids, wk_dtype idt,
                  int dim, void *dst, wk_dtype dt, wk_cu_ixflag flag);
/* in place through ld: dst[.. ids[i] ..] = src[i] (or += when add) */
int wk__cu_scatter(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids, wk_dtype idt,
                   const void *src, wk_cu_view lsrc, int dim, wk_dtype dt, bool add, wk_cu_ixflag flag);
/* in place through ld: dst.index_select(dim, ids) += src; ids 1-D */
int wk__cu_index_add(wk_cu_stream s, void *dst, wk_cu_view ld, const void *ids, wk_cu_view lids, wk_dtype idt,
                     const void *src, wk_cu_view lsrc, int dim, wk_dtype dt, wk_cu_ixflag flag);
/* index_add with parallelism (unique ids) x (outer positions), same bits as
 * wk__cu_index_add: sorted_ids (len ids of dtype idt, ascending, contiguous)
 * and perm (len i64 original positions) are the output of a STABLE
 * ascending sort of the 1-D ids (wk__cu_sort, dim 0); each run of equal ids
 * is summed in sorted = original order. ld must not overlap itself
 * (returns cudaErrorInvalidValue otherwise): call it only when
 * wk__cu_index_add_prefers_sorted(ld, lids, dim). */
int wk__cu_index_add_sorted(wk_cu_stream s, void *dst, wk_cu_view ld, const void *sorted_ids, const int64_t *perm,
                            wk_dtype idt, int64_t len, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt,
                            wk_cu_ixflag flag);
/* Pure host decision: true when the sorted path should be used (1-D ids of
 * 64 or more, fewer than 65536 positions of dst's dims but dim, dst not
 * overlapping itself; see kernels_index.cu for why these thresholds). */
bool wk__cu_index_add_prefers_sorted(wk_cu_view ld, wk_cu_view lids, int dim);
/* scatter / scatter_add (add) with parallelism numel(ids) instead of the
 * number of lines (positions of ids' dims but dim), same bits as
 * wk__cu_scatter: sorted_ids (dtype idt) and perm (i64 original positions
 * along dim), both contiguous with lids' shape, are the output of a STABLE
 * ascending sort of the ids along dim (wk__cu_sort(ids, lids, idt, dim)).
 * Add: each run of equal ids in a line is summed into dst in sorted =
 * original order; set: the run's last entry (the CPU's last write) is
 * stored. dst's written positions must not overlap (returns
 * cudaErrorInvalidValue otherwise): call it only when
 * wk__cu_scatter_prefers_sorted(ld, lids, dim). */
int wk__cu_scatter_sorted(wk_cu_stream s, void *dst, wk_cu_view ld, const void *sorted_ids, const int64_t *perm,
                          wk_cu_view lids, wk_dtype idt, const void *src, wk_cu_view lsrc, int dim, wk_dtype dt,
                          bool add, wk_cu_ixflag flag);
/* Pure host: the (position, id) pairs the one-thread serial plan of
 * wk__cu_scatter (index_add false) / wk__cu_index_add (true) would do for
 * these views - 0 when the op runs in parallel - and in *bound (may be
 * NULL) the most it accepts; beyond it the launcher refuses the op
 * (cudaErrorInvalidValue). See kernels_index.cu "Serial plan". */
int64_t wk__cu_ix_serial_pairs(wk_cu_view ld, wk_cu_view lids, int dim, bool index_add, int64_t *bound);
/* Pure host decision: true when the sorted scatter path should be used
 * (64 or more ids along dim, fewer than 65536 lines, dst's written
 * positions not overlapping; see kernels_index.cu). */
bool wk__cu_scatter_prefers_sorted(wk_cu_view ld, wk_cu_view lids, int dim);

#ifdef __cplusplus
}
#endif
#endif
