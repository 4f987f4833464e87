/*
 * wick — a tensor library in C11.
 *
 * The whole public surface. Conventions (docs/ARCHITECTURE.md has the why):
 *  - Every function that returns a tensor returns a NEW reference, or NULL on
 *    failure. The reason is kept per thread: wk_last_status()/wk_last_error().
 *  - A NULL tensor argument makes the call return NULL and keeps the first
 *    error, so expressions compose and are checked once at the end.
 *  - wk_tensor_free drops one reference. Inside wk_scope_begin/wk_scope_end
 *    every tensor created on this thread is owned by the scope unless
 *    wk_keep() takes it out.
 *  - Dims are int; negative dims count from the end (-1 is the last).
 *  - Nothing here aborts the process on bad input.
 */
#ifndef WICK_WICK_H
#define WICK_WICK_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "wick_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WICK_VERSION_MAJOR 0
#define WICK_VERSION_MINOR 1
#define WICK_VERSION_PATCH 0
#define WICK_VERSION_STRING "0.1.0"

/* Highest tensor rank. A higher rank is an error (WK_ERR_SHAPE), never an abort. */
#define WK_MAX_RANK 8

/* ------------------------------------------------------------------ errors */

typedef enum wk_status {
    WK_OK = 0,
    WK_ERR_SHAPE,          /* shapes or ranks that do not fit together      */
    WK_ERR_DTYPE,          /* dtype mismatch, or op not defined on a dtype  */
    WK_ERR_DEVICE,         /* tensors on different devices                  */
    WK_ERR_INDEX,          /* a dim or an index out of range                */
    WK_ERR_ARG,            /* any other bad argument (NULL pointer, step 0) */
    WK_ERR_OOM,            /* allocation failed                              */
    WK_ERR_NOT_COMPILED,   /* backend not compiled into this build          */
    WK_ERR_IO,             /* file could not be opened/read/written          */
    WK_ERR_FORMAT,         /* file content is malformed or hostile           */
    WK_ERR_DIV_ZERO,       /* integer division by zero                       */
    WK_ERR_INTERNAL,       /* an internal invariant failed (a wick bug)      */
    WK_ERR_BUSY,           /* a bounded resource is full (a server's queue, a KV pool): retry later */
    WK_ERR_COMM            /* a peer process failed, vanished or timed out (wick/dist.h) */
} wk_status;

/* The error state is per thread and explicit (errno-like):
 *  - a failing call records its status and message, replacing what was there;
 *  - a successful call never changes it (it does not clear an old error);
 *  - a call that fails only because a tensor argument is NULL records
 *    "op: NULL tensor argument" only if nothing is pending, so the error that
 *    produced the NULL (the first cause in an expression) is kept;
 *  - only wk_clear_error() resets it.
 * So: clear, evaluate an expression, check its result once; the status and
 * message then describe the first failure in it. */
/* Status of the error pending on this thread (WK_OK if none since the last
 * wk_clear_error). */
wk_status   wk_last_status(void);
/* Message of the pending error ("" if none). Valid until the next failing
 * call or wk_clear_error on this thread. */
const char *wk_last_error(void);
void        wk_clear_error(void);
const char *wk_status_name(wk_status s);

/* ------------------------------------------------------------------ dtypes */

typedef enum wk_dtype {
    WK_U8 = 0,
    WK_U32,
    WK_I16,
    WK_I32,
    WK_I64,
    WK_BF16,
    WK_F16,
    WK_F32,
    WK_F64,
    WK_F8E4M3,
    /* GGML block-quantized dtypes, byte-compatible with ggml's blocks: a
     * tensor holds a whole number of blocks per row (last dim contiguous, a
     * multiple of block_elems). Only whole-row views, row gathers, copies,
     * to_dtype / wk_quantize / wk_dequantize and wk_qmatmul take them; every
     * element op answers WK_ERR_DTYPE. */
    WK_Q4_0,   /* 32 elems in 18 bytes: f16 scale, 4-bit values - 8 */
    WK_Q4_1,   /* 32 in 20: f16 scale + f16 min */
    WK_Q5_0,   /* 32 in 22 */
    WK_Q5_1,   /* 32 in 24 */
    WK_Q8_0,   /* 32 in 34: f16 scale, int8 values */
    WK_Q8_1,   /* 32 in 36: f16 scale + f16 scale*sum */
    WK_Q2_K,   /* 256 in 84 */
    WK_Q3_K,   /* 256 in 110 */
    WK_Q4_K,   /* 256 in 144 */
    WK_Q5_K,   /* 256 in 176 */
    WK_Q6_K,   /* 256 in 210 */
    WK_Q8_K,   /* 256 in 292: f32 scale, int8 values, int16 group sums */
    WK_IQ4_NL, /* 32 in 18: f16 scale, 4-bit indices into a non-linear table */
    WK_IQ4_XS, /* 256 in 136 */
    WK_DTYPE_COUNT
} wk_dtype;
/* Element dtypes are the first WK_ELEM_DTYPE_COUNT values; block dtypes follow. */
#define WK_ELEM_DTYPE_COUNT (WK_F8E4M3 + 1)

/* What one dtype looks like in memory. Storage is a sequence of blocks:
 * block_elems elements packed into block_bytes bytes. Every dtype today is
 * an element dtype (block_elems == 1, block_bytes == the element size); block
 * dtypes (e.g. GGML's 32 elements in 18 bytes) fit the same descriptor, so
 * code that sizes or indexes storage through it needs no change for them.
 * A tensor of a block dtype holds a whole number of blocks per row. */
typedef struct wk_dtype_info {
    const char *name;        /* "f32", ... (wk_dtype_name) */
    uint32_t block_elems;    /* elements per block; 1 for element dtypes */
    uint32_t block_bytes;    /* bytes per block */
    uint32_t align;          /* byte alignment a block needs in memory */
    bool is_float;           /* floating point values (incl. bf16, f8) */
    bool is_int;             /* integer values */
    bool is_signed;          /* can hold negative values */
} wk_dtype_info;
/* The descriptor of dt (one static table); NULL if dt is not a dtype. */
const wk_dtype_info *wk_dtype_info_of(wk_dtype dt);

/* Bytes per element of an element dtype; 0 if dt is invalid OR a block dtype
 * (whose elements have no byte size of their own: size storage with
 * wk_dtype_info_of's block geometry instead). */
size_t      wk_dtype_size(wk_dtype dt);
const char *wk_dtype_name(wk_dtype dt);       /* "f32", ...; "invalid" */
bool        wk_dtype_is_float(wk_dtype dt);
bool        wk_dtype_is_int(wk_dtype dt);
/* A GGML block-quantized dtype (block_elems > 1). */
bool        wk_dtype_is_quantized(wk_dtype dt);
/* Parse "f32", "q4_K" etc. (ggml's names for block dtypes; case-insensitive).
 * Returns false for an unknown name. */
bool        wk_dtype_from_name(const char *name, wk_dtype *out);

/* Scalar conversions used by casts (exposed for tests and users).
 * f32 -> f16/bf16 round to nearest even; NaN stays NaN; overflow -> inf.
 * f32 -> f8e4m3 rounds to nearest even and SATURATES to +-448; NaN -> NaN. */
uint16_t wk_f32_to_f16(float x);
float    wk_f16_to_f32(uint16_t h);
uint16_t wk_f32_to_bf16(float x);
float    wk_bf16_to_f32(uint16_t h);
uint8_t  wk_f32_to_f8e4m3(float x);
float    wk_f8e4m3_to_f32(uint8_t v);

/* ----------------------------------------------------------------- devices */

typedef struct wk_device wk_device;

typedef enum wk_device_kind { WK_DEVICE_CPU = 0, WK_DEVICE_CUDA, WK_DEVICE_METAL } wk_device_kind;

/* The CPU device (one shared instance; never NULL, never freed). */
wk_device     *wk_cpu(void);
/* GPU devices: NULL + WK_ERR_NOT_COMPILED when the backend is not built in. */
wk_device     *wk_cuda(int ordinal);
/* CUDA devices usable here: 0 without the backend, a driver or a GPU (never
 * an error; use it to choose between wk_cuda(0) and wk_cpu()). */
int            wk_cuda_device_count(void);
wk_device     *wk_metal(int ordinal);
wk_device_kind wk_device_kind_of(const wk_device *dev);
/* "cpu", "cuda:0#1" — kind, ordinal and instance id (identity is the instance). */
const char    *wk_device_name(const wk_device *dev);
bool           wk_same_device(const wk_device *a, const wk_device *b);
/* Wait for all queued work on the device (a no-op on the CPU). */
wk_status      wk_device_synchronize(wk_device *dev);
/* Seed the device's random generator; the same seed gives the same numbers. */
wk_status      wk_device_set_seed(wk_device *dev, uint64_t seed);
uint64_t       wk_device_seed(const wk_device *dev);

/* ----------------------------------------------------------------- tensors */

typedef struct wk_tensor wk_tensor;

/* Take an extra reference (returns t). Use it for tensors you own (outside
 * any scope, or after wk_keep): inside a scope the reference an op returned
 * belongs to the scope, and wk_tensor_free on a scope-owned tensor releases
 * THAT reference early, so a retain/free pair on it would leave the tensor
 * owned by nobody. Inside a scope, take a view (e.g. wk_contiguous) instead. */
wk_tensor *wk_tensor_retain(wk_tensor *t);
/* Drop one reference; NULL is fine. */
void       wk_tensor_free(wk_tensor *t);

int            wk_rank(const wk_tensor *t);
/* Size of dim d (negative counts from the end); -1 if t is NULL or d out of range. */
int64_t        wk_dim(const wk_tensor *t, int d);
/* Pointer to rank() sizes / strides (in elements). Valid while t lives. */
const int64_t *wk_shape(const wk_tensor *t);
const int64_t *wk_strides(const wk_tensor *t);
int64_t        wk_offset(const wk_tensor *t);          /* start offset, elements */
int64_t        wk_numel(const wk_tensor *t);
wk_dtype       wk_tensor_dtype(const wk_tensor *t);
wk_device     *wk_tensor_device(const wk_tensor *t);
bool           wk_is_contiguous(const wk_tensor *t);   /* row-major, size-1 dims ignored */
/* True when both views use the same storage object. */
bool           wk_shares_storage(const wk_tensor *a, const wk_tensor *b);
/* Unique id of the tensor object (for debugging and graphs). */
uint64_t       wk_tensor_id(const wk_tensor *t);
/* "f32[2, 3] cpu" into buf; returns buf. */
char          *wk_tensor_describe(const wk_tensor *t, char *buf, size_t len);
/* Pretty-print the values to stdout (small tensors in full). */
wk_status      wk_print(const wk_tensor *t);

/* ---------------------------------------------------------------- creation */

wk_tensor *wk_zeros(const int64_t *shape, int rank, wk_dtype dt, wk_device *dev);
wk_tensor *wk_ones(const int64_t *shape, int rank, wk_dtype dt, wk_device *dev);
wk_tensor *wk_full(const int64_t *shape, int rank, double value, wk_dtype dt, wk_device *dev);
wk_tensor *wk_zeros_like(const wk_tensor *t);
wk_tensor *wk_ones_like(const wk_tensor *t);
/* Uninitialised contents (fast); every element must be written before read. */
wk_tensor *wk_empty(const int64_t *shape, int rank, wk_dtype dt, wk_device *dev);
/* [start, end) by step; float steps allowed; step 0 is WK_ERR_ARG.
 * The element count is ceil((end-start)/step). */
wk_tensor *wk_arange(double start, double end, double step, wk_dtype dt, wk_device *dev);
wk_tensor *wk_eye(int64_t n, wk_dtype dt, wk_device *dev);
/* Copy `nbytes` from a host buffer laid out row-major in dtype dt. nbytes must
 * equal numel * dtype size exactly. One dim of shape may be -1: it is
 * inferred from nbytes (an error if no whole size fits, if another dim is 0,
 * or if two dims are -1). */
wk_tensor *wk_from_host(const void *data, size_t nbytes, const int64_t *shape, int rank,
                        wk_dtype dt, wk_device *dev);
/* Zero-copy: a tensor over memory wick did not allocate (a caller's buffer, a
 * memory-mapped file). CPU device only (any other device: WK_ERR_DEVICE).
 *  - data holds nbytes; the view starts at data, with the given strides in
 *    elements (NULL: row-major contiguous). Every element the view can reach
 *    must lie inside [data, data + nbytes) (negative strides therefore
 *    cannot be used) and data must be aligned for dt; otherwise the call
 *    fails (WK_ERR_ARG), it never reads out of bounds.
 *  - Lifetime: data must stay valid, and must not be freed, until release
 *    is called. wick calls release(ctx, data, nbytes) exactly once, when the
 *    last tensor sharing this memory (the returned one and every view,
 *    reshape or wk_contiguous of it, scope-owned or not) is freed. release
 *    may be NULL (the caller then decides when the memory may go, and must
 *    keep it until every such tensor is freed). release runs on the thread
 *    that frees the last reference. If wk_from_blob returns NULL, release
 *    is never called and data stays the caller's.
 *  - Writes by the caller into data are seen by the tensor and its views
 *    (after any queued op that reads them has finished; CPU ops finish
 *    before they return).
 *  - flags: WK_BLOB_READ_ONLY makes every in-place write into the tensor or
 *    its views (wk_copy_, wk_fill_, wk_zero_, wk_one_, wk_slice_set,
 *    wk_scatter_, wk_scatter_add_) fail with WK_ERR_ARG, leaving data
 *    untouched; reads, copies and ops taking it as an input work. */
#define WK_BLOB_READ_ONLY 1u
typedef void (*wk_release_fn)(void *ctx, void *data, size_t nbytes);
wk_tensor *wk_from_blob(void *data, size_t nbytes, const int64_t *shape, int rank, const int64_t *strides,
                        wk_dtype dt, wk_device *dev, wk_release_fn release, void *ctx, unsigned flags);
/* True when t's storage may not be written (wk_from_blob's WK_BLOB_READ_ONLY,
 * read-only mapped files); false for NULL. */
bool       wk_is_read_only(const wk_tensor *t);
/* Uniform in [lo, hi) and normal(mean, std), float dtypes only, from the
 * device's seedable generator. */
wk_tensor *wk_rand(const int64_t *shape, int rank, double lo, double hi, wk_dtype dt, wk_device *dev);
wk_tensor *wk_randn(const int64_t *shape, int rank, double mean, double std, wk_dtype dt, wk_device *dev);

/* ---------------------------------------------------------------- readback */

/* Copy exactly the view's elements, row-major, in its dtype, into buf.
 * nbytes must be at least numel * dtype size. Waits only for what it reads. */
wk_status wk_to_host(const wk_tensor *t, void *buf, size_t nbytes);
/* Same, converting every element to f32 / f64 (any dtype). */
wk_status wk_to_host_f32(const wk_tensor *t, float *buf, size_t count);
wk_status wk_to_host_f64(const wk_tensor *t, double *buf, size_t count);
/* A one-element tensor (any rank) as double; moves only that element. */
wk_status wk_item(const wk_tensor *t, double *out);
/* One element at a full index (rank() entries, negatives allowed). */
wk_status wk_get(const wk_tensor *t, const int64_t *index, double *out);

/* Always allocates a new storage with a contiguous copy (even if t already is). */
wk_tensor *wk_copy(const wk_tensor *t);
/* t itself (new reference) if contiguous, else a contiguous copy. */
wk_tensor *wk_contiguous(const wk_tensor *t);
wk_tensor *wk_to_dtype(const wk_tensor *t, wk_dtype dt);
wk_tensor *wk_to_device(const wk_tensor *t, wk_device *dev);

/* ------------------------------------------------------ views (no copying) */

/* One dim may be -1 (inferred). A view when the layout allows, else a copy. */
wk_tensor *wk_reshape(const wk_tensor *t, const int64_t *shape, int rank);
wk_tensor *wk_narrow(const wk_tensor *t, int dim, int64_t start, int64_t len);
wk_tensor *wk_transpose(const wk_tensor *t, int d0, int d1);
wk_tensor *wk_t(const wk_tensor *t);                     /* swap last two dims */
wk_tensor *wk_permute(const wk_tensor *t, const int *dims, int rank);
/* numpy rules: right-aligned, size-1 dims stretch (stride 0). */
wk_tensor *wk_broadcast_as(const wk_tensor *t, const int64_t *shape, int rank);
wk_tensor *wk_broadcast_left(const wk_tensor *t, const int64_t *left, int nleft);
/* Removes dim if its size is 1; otherwise returns the same view (as PyTorch). */
wk_tensor *wk_squeeze(const wk_tensor *t, int dim);
/* dim in [-(rank+1), rank]. */
wk_tensor *wk_unsqueeze(const wk_tensor *t, int dim);
/* Merge dims start..end (inclusive) into one; a copy if they are not mergeable. */
wk_tensor *wk_flatten(const wk_tensor *t, int start_dim, int end_dim);
wk_tensor *wk_flatten_all(const wk_tensor *t);
/* Index i of dim, dim removed. */
wk_tensor *wk_select(const wk_tensor *t, int dim, int64_t index);
/* Split dim into n chunks of ceil(size/n) (the last may be smaller; fewer
 * chunks when size < n). out must hold n pointers; *count (not NULL)
 * receives how many. */
wk_status  wk_chunk(const wk_tensor *t, int n, int dim, wk_tensor **out, int *count);
/* Split dim into pieces of the given sizes (must sum to the dim size). */
wk_status  wk_split(const wk_tensor *t, const int64_t *sizes, int n, int dim, wk_tensor **out);

/* ----------------------------------------------------------- elementwise */

/* The ops and their meanings: the lists in wick_ops.h. */
typedef enum wk_unary_op { WK_UNARY_OPS(WK__OP_ENUM) WK_UNARY_COUNT } wk_unary_op;

wk_tensor *wk_unary(const wk_tensor *t, wk_unary_op op);
const char *wk_unary_name(wk_unary_op op);
/* wk_exp(t), wk_log(t), ...: one per WK_UNARY_OPS line */
WK_UNARY_OPS(WK__UNARY_PROTO)

/* y = x * mul + add. Integer dtypes compute in double and convert back. */
wk_tensor *wk_affine(const wk_tensor *t, double mul, double add);
wk_tensor *wk_powf(const wk_tensor *t, double e);          /* float only */
wk_tensor *wk_elu(const wk_tensor *t, double alpha);       /* float only */
wk_tensor *wk_clamp(const wk_tensor *t, double lo, double hi);

typedef enum wk_binary_op { WK_BINARY_OPS(WK__OP_ENUM) WK_BINARY_COUNT } wk_binary_op;

/* numpy broadcasting in every binary op; same dtype and device required. */
wk_tensor *wk_binary(const wk_tensor *a, const wk_tensor *b, wk_binary_op op);
const char *wk_binary_name(wk_binary_op op);
/* wk_add(a, b), ..., wk_pow(a, b): one per WK_BINARY_OPS line */
WK_BINARY_OPS(WK__BINARY_PROTO)
/* Scalar right-hand side (converted to a's dtype first). */
wk_tensor *wk_binary_scalar(const wk_tensor *a, double s, wk_binary_op op);

typedef enum wk_cmp_op { WK_CMP_OPS(WK__OP_ENUM) WK_CMP_COUNT } wk_cmp_op;

/* -> u8 (0/1), with broadcasting. */
wk_tensor *wk_cmp(const wk_tensor *a, const wk_tensor *b, wk_cmp_op op);
wk_tensor *wk_cmp_scalar(const wk_tensor *a, double s, wk_cmp_op op);
const char *wk_cmp_name(wk_cmp_op op);
/* cond (any integer dtype, nonzero = true) ? a : b, all three broadcast. */
wk_tensor *wk_where(const wk_tensor *cond, const wk_tensor *a, const wk_tensor *b);

/* -------------------------------------------------------------- reductions */

typedef enum wk_reduce_op { WK_REDUCE_OPS(WK__OP_ENUM) WK_REDUCE_COUNT } wk_reduce_op;

/* Reduce over ndims dims (any order, no repeats). keepdim keeps them as size 1.
 * sum/mean of f16/bf16 accumulate in f32; of ints accumulate in i64/u64 and
 * return the input dtype (wrapping like C unsigned arithmetic); mean of an int
 * dtype is an error. argmax/argmin take exactly one dim and return u32; ties
 * give the first index. max/min of an empty reduction is an error. */
wk_tensor *wk_reduce(const wk_tensor *t, wk_reduce_op op, const int *dims, int ndims, bool keepdim);
/* wk_sum, wk_mean, wk_max, wk_min (dims list) with their _all forms over every
 * element (rank-0 result), wk_argmax and wk_argmin (one dim): the list's form column. */
WK_REDUCE_OPS(WK__REDUCE_PROTO)

/* ---------------------------------------------------- joining and filling */

/* All tensors same dtype/device and same shape except along dim. */
wk_tensor *wk_cat(wk_tensor *const *ts, int n, int dim);
/* All same shape; a new dim is inserted at dim. */
wk_tensor *wk_stack(wk_tensor *const *ts, int n, int dim);
/* In-place writes (these, wk_scatter_ and wk_scatter_add_) fail with
 * WK_ERR_ARG, writing nothing, when the destination is read-only
 * (wk_is_read_only) or when two of its indices reach one element (a stride-0
 * broadcast dim, as in PyTorch); only the region written counts.
 * In place: dst.narrow(dim, offset, src.dim(dim)) = src. dst may be any view;
 * its storage is written (every view sharing it sees the change). */
wk_status  wk_slice_set(wk_tensor *dst, const wk_tensor *src, int dim, int64_t offset);
/* In place fill of every element of the view. */
wk_status  wk_fill_(wk_tensor *t, double value);
wk_status  wk_zero_(wk_tensor *t);
wk_status  wk_one_(wk_tensor *t);
/* In place: dst (any view) = src (same shape, dtype, device). */
wk_status  wk_copy_(wk_tensor *dst, const wk_tensor *src);

/* ------------------------------------------------------------------ matmul */

/* (..., m, k) @ (..., k, n). Same rank >= 2, equal batch products. Any
 * strides, any batch strides. f16/bf16 accumulate in f32. Integer: error. */
wk_tensor *wk_matmul(const wk_tensor *a, const wk_tensor *b);
/* Batch dims broadcast (numpy rules); ranks may differ. */
wk_tensor *wk_broadcast_matmul(const wk_tensor *a, const wk_tensor *b);

/* ---------------------------------------------------------------- indexing
 * Index tensors have dtype u8, u32, i32 or i64. Negative or out-of-range
 * indices are WK_ERR_INDEX naming the op, the index and the size, on every
 * backend (no padding sentinel: candle's "id == type max gives zeros" rule is
 * not kept). On the CPU the op itself fails; on CUDA the op is queued without
 * a host wait and the next wait (wk_device_synchronize, any readback) reports
 * it, once; an in-place op with a bad id writes nothing on either. */

/* Rows of dim picked by a 1-D ids: out.shape[dim] = ids.numel. */
wk_tensor *wk_index_select(const wk_tensor *t, const wk_tensor *ids, int dim);
/* table (vocab, hidden)[ids]: out shape = ids.shape + (hidden). */
wk_tensor *wk_embedding(const wk_tensor *ids, const wk_tensor *table);
/* out[i][j][k] = t[ids[i][j][k]][j][k] for dim 0 (numpy take_along_axis):
 * ids has t's rank; its sizes may be <= t's on dims other than dim. */
wk_tensor *wk_gather(const wk_tensor *t, const wk_tensor *ids, int dim);
/* A copy of t with t[ids[i][j]][j] = src[i][j] (dim 0), src and ids of one
 * shape (<= t's off dim). Duplicate indices: the last write in row-major
 * order of ids wins. */
wk_tensor *wk_scatter(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
/* Same with += (duplicates accumulate). */
wk_tensor *wk_scatter_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
/* In-place forms (t may be any view). */
wk_status  wk_scatter_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
wk_status  wk_scatter_add_(wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
/* A copy of t with t.index_select(dim, ids) += src (ids 1-D; src has t's
 * shape except src.shape[dim] == ids.numel). */
wk_tensor *wk_index_add(const wk_tensor *t, const wk_tensor *ids, const wk_tensor *src, int dim);
/* A copy of t with t.narrow(dim, start, src.shape[dim]) = src. */
wk_tensor *wk_slice_scatter(const wk_tensor *t, const wk_tensor *src, int dim, int64_t start);
wk_tensor *wk_flip(const wk_tensor *t, const int *dims, int ndims);
/* torch.roll along one dim (shift may be negative or larger than the size). */
wk_tensor *wk_roll(const wk_tensor *t, int64_t shift, int dim);
/* torch.repeat: nreps >= rank; leading extra reps add dims. */
wk_tensor *wk_repeat(const wk_tensor *t, const int64_t *reps, int nreps);
wk_tensor *wk_pad_with_zeros(const wk_tensor *t, int dim, int64_t left, int64_t right);
/* Pads by repeating the edge element (replicate). */
wk_tensor *wk_pad_with_same(const wk_tensor *t, int dim, int64_t left, int64_t right);
/* where(mask, value, t); mask has an integer dtype and broadcasts to t. */
wk_tensor *wk_masked_fill(const wk_tensor *t, const wk_tensor *mask, double value);

/* ------------------------------------------------------------ convolutions
 * NCL / NCHW layouts, float dtypes. Weights: conv (c_out, c_in/groups, k...),
 * transposed conv (c_in, c_out/groups, k...). Padding, stride, dilation and
 * output_padding apply to every spatial dim; output_padding < max(stride,
 * dilation) as in PyTorch. Any input strides are accepted. */
typedef struct wk_conv_params {
    int64_t padding;         /* default 0 */
    int64_t stride;          /* default 1 (0 means 1) */
    int64_t dilation;        /* default 1 (0 means 1) */
    int64_t groups;          /* default 1 (0 means 1) */
    int64_t output_padding;  /* transposed convs only, default 0 */
} wk_conv_params;

wk_tensor *wk_conv1d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p);
wk_tensor *wk_conv2d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p);
wk_tensor *wk_conv_transpose1d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p);
wk_tensor *wk_conv_transpose2d(const wk_tensor *x, const wk_tensor *w, const wk_conv_params *p);

/* ------------------------------------------------- pooling and resampling
 * NCHW (NCL for 1-d). Semantics of PyTorch's F.avg_pool2d / F.max_pool2d
 * (floor mode; padding <= kernel/2; avg counts padded cells when
 * count_include_pad) and F.interpolate. */
wk_tensor *wk_avg_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         bool count_include_pad);
wk_tensor *wk_max_pool2d(const wk_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw);
wk_tensor *wk_upsample_nearest1d(const wk_tensor *x, int64_t out_l);
wk_tensor *wk_upsample_nearest2d(const wk_tensor *x, int64_t out_h, int64_t out_w);
wk_tensor *wk_upsample_bilinear2d(const wk_tensor *x, int64_t out_h, int64_t out_w, bool align_corners);

/* ------------------------------------------------------- scans and order */

/* Inclusive scans along dim, O(n). Integers wrap; f16/bf16 accumulate in f32. */
wk_tensor *wk_cumsum(const wk_tensor *t, int dim);
wk_tensor *wk_cumprod(const wk_tensor *t, int dim);
/* Stable sort along dim (NaN sorts last ascending, first descending).
 * values and/or indices may be NULL if not wanted; indices are i64. */
wk_status  wk_sort(const wk_tensor *t, int dim, bool descending, wk_tensor **values, wk_tensor **indices);
wk_tensor *wk_argsort(const wk_tensor *t, int dim, bool descending);
/* The k largest (or smallest) along dim, sorted, ties by lower index; i64 indices. */
wk_status  wk_topk(const wk_tensor *t, int64_t k, int dim, bool largest, wk_tensor **values, wk_tensor **indices);
/* Float dtypes; unbiased divides by N-1. */
wk_tensor *wk_var(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased);
wk_tensor *wk_std(const wk_tensor *t, const int *dims, int ndims, bool keepdim, bool unbiased);
wk_tensor *wk_log_sum_exp(const wk_tensor *t, const int *dims, int ndims, bool keepdim);
wk_tensor *wk_prod(const wk_tensor *t, const int *dims, int ndims, bool keepdim);
/* -> u8: any / all elements nonzero. */
wk_tensor *wk_any(const wk_tensor *t, const int *dims, int ndims, bool keepdim);
wk_tensor *wk_all(const wk_tensor *t, const int *dims, int ndims, bool keepdim);

/* ------------------- more ops (linear algebra, triangles, grids, slices)
 * Composites of the ops above (no backend entries of their own), so they run
 * on every backend. */

/* candle's round_to: round(t * 10^decimals) * (1 / 10^decimals), round half
 * away from zero, computed in t's dtype (float dtypes only; decimals may be
 * negative). Where t * 10^decimals overflows the dtype the result is inf or
 * NaN, as in candle. */
wk_tensor *wk_round_to(const wk_tensor *t, int decimals);

/* torch.linalg.vector_norm over ndims dims (dims NULL or ndims 0: all dims):
 * p > 0 or < 0: sum(|x|^p)^(1/p) (p = 1: sum |x|, p = 2: sqrt(sum x^2));
 * p = INFINITY: max |x|; -INFINITY: min |x|; p = 0: count of nonzero x.
 * Float dtypes; f16/bf16/f8e4m3 are computed in f32, f32 sums accumulate in
 * f32 lanes folded into f64; the result has t's dtype. p < 0 or +-inf over
 * an empty reduction is WK_ERR_SHAPE (no identity); p NaN is WK_ERR_ARG. */
wk_tensor *wk_norm(const wk_tensor *t, double p, const int *dims, int ndims, bool keepdim);
/* (k) . (k) -> rank 0; (n, k) @ (k) -> (n). Views reshaped to matmul (the
 * matrix-vector path), so any strides; matmul's dtype rules (integer dtypes:
 * WK_ERR_DTYPE); no broadcasting. */
wk_tensor *wk_dot(const wk_tensor *a, const wk_tensor *b);
wk_tensor *wk_mv(const wk_tensor *m, const wk_tensor *v);

/* torch.tril / torch.triu over the last two dims of a rank >= 2 tensor (any
 * leading batch dims, any dtype): keep t[..., i, j] where j - i <= k (tril)
 * or j - i >= k (triu), zeros elsewhere. A new contiguous tensor. */
wk_tensor *wk_tril(const wk_tensor *t, int64_t k);
wk_tensor *wk_triu(const wk_tensor *t, int64_t k);

/* torch.meshgrid of n rank-0 or rank-1 tensors (same dtype and device,
 * 1 <= n <= WK_MAX_RANK): out[i] has shape (N0, N1, ...) with Nj = numel of
 * ts[j] ("xy" swaps the first two dims when n >= 2) and out[i][..., a_i, ...]
 * = ts[i][a_i]. The outputs are broadcast VIEWS of the inputs (stride 0 on
 * every other dim, like torch's expand): read them, or wk_contiguous them
 * before writing. out must hold n pointers; on failure all n are NULL (out
 * is not touched when n itself is out of range). */
typedef enum wk_meshgrid_indexing { WK_MESHGRID_IJ = 0, WK_MESHGRID_XY } wk_meshgrid_indexing;
wk_status  wk_meshgrid(wk_tensor *const *ts, int n, wk_meshgrid_indexing indexing, wk_tensor **out);

/* Assignment into a multi-dim slice (numpy's t[s0:e0:k0, s1:e1:k1, ...] =
 * src, candle's slice_assign): the first n dims (n <= rank) are sliced
 * [starts[i], ends[i]) by steps[i] (steps NULL: all 1; a step must be >= 1),
 * the remaining dims are taken whole. Negative starts / ends count from the
 * end of the dim; after that 0 <= start <= end <= size is required
 * (WK_ERR_INDEX otherwise, no clamping). src has t's dtype and device and is
 * broadcast (numpy rules) to the slice's shape, so an exact shape, a size-1
 * dim or a rank-0 value all work. wk_slice_assign returns a new tensor (t is
 * unchanged, as candle); wk_slice_assign_ writes into dst's storage through
 * its view (every view sharing it sees the change). */
wk_tensor *wk_slice_assign(const wk_tensor *t, const int64_t *starts, const int64_t *ends, const int64_t *steps,
                           int n, const wk_tensor *src);
wk_status  wk_slice_assign_(wk_tensor *dst, const int64_t *starts, const int64_t *ends, const int64_t *steps, int n,
                            const wk_tensor *src);

/* Resampling by a scale factor (PyTorch's F.interpolate(scale_factor=s,
 * recompute_scale_factor=None)): output size floor(in * s) (must be >= 1),
 * and the coordinate mapping uses 1/s, not in/out:
 * nearest src = min(floor(dst * (float)(1/s)), in - 1);
 * bilinear (align_corners false) src = max((dst + 0.5) / s - 0.5, 0), with
 * out == in the identity; align_corners true ignores s in the mapping (as
 * torch does). s must be finite and > 0. Nearest: any dtype; bilinear:
 * float dtypes. */
wk_tensor *wk_upsample_nearest1d_scale(const wk_tensor *x, double scale);
wk_tensor *wk_upsample_nearest2d_scale(const wk_tensor *x, double scale_h, double scale_w);
wk_tensor *wk_upsample_bilinear2d_scale(const wk_tensor *x, double scale_h, double scale_w, bool align_corners);

/* ------------------------------------------------------------------ scopes */

/* Every tensor created on this thread between begin and end is freed at end,
 * unless wk_keep() took it. Scopes nest to any depth. If a begin cannot
 * allocate, it records WK_ERR_OOM and opens no scope (tensors made until the
 * matching end belong to the enclosing scope, or to the caller); the matching
 * end is still required and balances it. An end with no open scope does
 * nothing. */
void       wk_scope_begin(void);
void       wk_scope_end(void);
/* Take t out of the innermost scope that owns it; the caller now owns it. */
wk_tensor *wk_keep(wk_tensor *t);

/* --------------------------------------------------------------------- I/O */

/* .npy: dtypes u1,u4,i2,i4,i8,f2,f4,f8 (and bf16/f8 via descr 'V2'/'V1' is
 * not supported). Fortran order is read. Hostile files give WK_ERR_FORMAT. */
wk_tensor *wk_npy_load(const char *path, wk_device *dev);
wk_status  wk_npy_save(const char *path, const wk_tensor *t);
/* .npz (zip; stored or deflated members). On success *names and *tensors are
 * arrays of *count entries allocated with malloc; free them with wk_npz_free. */
wk_status  wk_npz_load(const char *path, wk_device *dev, char ***names, wk_tensor ***tensors, int *count);
void       wk_npz_free(char **names, wk_tensor **tensors, int count);
wk_status  wk_npz_save(const char *path, const char *const *names, wk_tensor *const *tensors, int count);
/* In-memory variants (used by fuzzing). */
wk_tensor *wk_npy_load_bytes(const void *data, size_t len, wk_device *dev);

/* ------------------------------------------------------------ runtime info */

/* Threads used by CPU ops (WICK_NUM_THREADS or the CPUs the process may use). */
int         wk_num_threads(void);
wk_status   wk_set_num_threads(int n);
/* "avx512", "avx2", "scalar": the SIMD level chosen at run time. */
const char *wk_cpu_isa(void);
/* Backends compiled in, e.g. "cpu" or "cpu cuda". */
const char *wk_backends(void);

/* CPU buffer cache: freed buffers are kept by size for reuse. */
typedef struct wk_cpu_mem_stats {
    size_t bytes_in_use;     /* live tensor storage */
    size_t bytes_cached;     /* freed, kept for reuse */
    size_t peak_in_use;
    size_t cache_limit;      /* WICK_CPU_CACHE_MB, default 1024 MiB */
    uint64_t hits, misses;
} wk_cpu_mem_stats;
void      wk_cpu_mem_stats_get(wk_cpu_mem_stats *out);
/* Return every cached buffer to the system. */
void      wk_cpu_cache_release(void);
wk_status wk_cpu_cache_set_limit(size_t bytes);

/* Memory of any device's allocator: the CPU's buffer cache or a CUDA
 * device's pool (both round requests to size classes wasting at most 1/8
 * and keep freed blocks for reuse). Byte counts are class sizes. */
#define WK_HAVE_MEMORY_STATS 1
typedef struct wk_memory_stats {
    size_t bytes_in_use;        /* blocks held by live storage */
    size_t bytes_cached;        /* freed blocks kept for reuse */
    size_t peak_bytes_in_use;   /* highest bytes_in_use so far */
    uint64_t cache_hits;        /* allocations served from the cache */
    uint64_t cache_misses;      /* allocations that went to the system / driver */
    uint64_t alloc_failures;    /* driver allocations that failed (each retried once after a release) */
} wk_memory_stats;
wk_status wk_device_memory_stats(wk_device *dev, wk_memory_stats *out);
/* Hand every cached block back to the system / driver (a GPU first waits for
 * its queued work, which may still use them); *released (may be NULL) gets
 * the bytes freed. Live tensors are untouched. */
wk_status wk_device_release_cache(wk_device *dev, size_t *released);

#ifdef __cplusplus
}
#endif

/* The tensor core's other halves: the fused nn ops and the gradient API.
 * Files (gguf.h, safetensors.h), text (tokenizer.h), training (train.h)
 * and models (lm.h, generate.h, bert.h) stand alone above the core;
 * wick/all.h includes everything. */
#include "wick/nn.h"
#include "wick/autograd.h"
#endif /* WICK_WICK_H */
