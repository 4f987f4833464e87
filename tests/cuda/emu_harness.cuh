// What every tests/cuda/test_*_emu.cu shares: the check counters and CHECK,
// the byte buffer Buf, SYNC, the xorshift test-data generator, the CPU
// backend's reference entries (wk__cpu_*, from cpu/cpu_backend.h) and the
// "total: N checks, F failures" summary that ctest and scripts/device-check.sh
// read. Each test keeps its own checks; this is only the scaffolding.
//
// Also the helpers that several tests had written alike, moved here so
// that one copy serves them all, each doing exactly what the copies did (the
// same rnd() draws in the same order, so every test's data and check counts
// are unchanged):
//   views: cv (a wk_layout as the kernels' by-value wk_cu_view), numel, and
//   the pieces of the tests' view builders - emu_layout (shape, no strides),
//   emu_row_major (contiguous, or padded = narrowed), emu_col_major (every
//   dim permuted), emu_need (the elements a buffer needs for a view) and
//   emu_view_done (the broadcast kinds' 0 strides, then the need). Each
//   test keeps its own view kinds: offsets, paddings and steps differ.
//   compare: emu_same_elem (one element: the same bits, or optionally NaN
//   vs NaN).
//   on Buf (absent with EMU_OWN_BUF), for the index tests (index_add,
//   scatter): same_data (whole buffers as emu_same_elem; NaN vs NaN always
//   in GPU_MODE), make_data (random data of a dtype with specials), the id
//   kinds I_SET3 / I_DISTINCT / I_RANDOM and line_ids (one line of ids of a
//   kind), err_flag (the kernels' flag), matrix_len_size (a matrix turn's
//   id count and range), overlapping_view (the decision tests' overlapping
//   dsts) and - when the test #included kernels_sort.cu - sort_ids (the
//   stable id sort the host queues before a sorted index path).
//
// Include order: a test #defines WKC_HOST_EMULATION (unless GPU_MODE) and
// #includes the kernel .cu files it tests FIRST, then this header, so the
// kernels see nothing of the test (and this header sees cuda_dtype.cuh and
// wk_cu_view, which every kernel .cu brings in).
//
// Host emulation (the default, what ctest builds): Buf is a plain
// std::vector, SYNC does nothing, the launchers run their per-thread code on
// the host. GPU_MODE (-DGPU_MODE, linked with the CUDA runtime): the same
// file runs the real kernels; Buf lives in managed memory (so the CPU
// reference and the checks read what the GPU wrote), SYNC waits for the
// device after each launch and stops on a CUDA error, and emu_no_device()
// (false in host emulation) lets main skip when there is no GPU.
//
// Options, #defined before this header: EMU_RND_SEED (the generator's start,
// default 0x9E3779B97F4A7C15), EMU_OWN_BUF (the test defines its own Buf).
#ifndef WICK_EMU_HARNESS_CUH
#define WICK_EMU_HARNESS_CUH
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

extern "C" {
#include "tensor/layout.h"
#include "cpu/cpu_backend.h" /* the reference: every wk__cpu_* entry */
}

/* ---------------- buffers and synchronisation ---------------- */

#ifdef GPU_MODE
/* n bytes of managed memory (+16 spare); exits on failure */
static inline void *emu_managed_bytes(size_t n) {
    void *p = NULL;
    if (cudaMallocManaged(&p, n + 16) != cudaSuccess) {
        printf("cudaMallocManaged failed\n");
        exit(2);
    }
    return p;
}
template <class T> struct MAlloc {
    typedef T value_type;
    MAlloc() {}
    template <class U> MAlloc(const MAlloc<U> &) {}
    T *allocate(size_t n) { return (T *)emu_managed_bytes(n * sizeof(T)); }
    void deallocate(T *p, size_t) { cudaFree(p); }
    template <class U> bool operator==(const MAlloc<U> &) const { return true; }
    template <class U> bool operator!=(const MAlloc<U> &) const { return false; }
};
#ifndef EMU_OWN_BUF
typedef std::vector<unsigned char, MAlloc<unsigned char>> Buf;
#endif
#define SYNC()                                                                                                         \
    do {                                                                                                               \
        cudaError_t e_ = cudaDeviceSynchronize();                                                                      \
        if (e_ != cudaSuccess) {                                                                                       \
            printf("CUDA error %s at %d\n", cudaGetErrorString(e_), __LINE__);                                        \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)
/* true (and says so) when there is no usable CUDA device: main returns 0 */
static inline bool emu_no_device() {
    void *probe = NULL;
    if (cudaMallocManaged(&probe, 16) != cudaSuccess) {
        printf("no CUDA device: skipped\n");
        return true;
    }
    cudaFree(probe);
    return false;
}
#else
#ifndef EMU_OWN_BUF
typedef std::vector<unsigned char> Buf;
#endif
#define SYNC()                                                                                                         \
    do {                                                                                                               \
    } while (0)
static inline bool emu_no_device() { return false; }
#endif

/* ---------------- checks ---------------- */

static long g_checks = 0, g_fail = 0;
/* count one check; on failure print where and why (the first 39 only) */
#define CHECK(c, ...)                                                                                                  \
    do {                                                                                                               \
        g_checks++;                                                                                                    \
        if (!(c)) {                                                                                                    \
            g_fail++;                                                                                                  \
            if (g_fail < 40) {                                                                                         \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
                printf(__VA_ARGS__);                                                                                   \
                printf("\n");                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

/* main's last line and exit status */
static inline int emu_summary() {
    printf("total: %ld checks, %ld failures\n", g_checks, g_fail);
    return g_fail != 0;
}
/* the same with the CPU seconds since t0 */
static inline int emu_summary(clock_t t0) {
    printf("total: %ld checks, %ld failures (%.1f s)\n", g_checks, g_fail, (double)(clock() - t0) / CLOCKS_PER_SEC);
    return g_fail != 0;
}

/* ---------------- test data ---------------- */

#ifndef EMU_RND_SEED
#define EMU_RND_SEED 0x9E3779B97F4A7C15ull
#endif
static uint64_t rs = EMU_RND_SEED;
/* xorshift64: the same sequence on every run */
static inline uint64_t rnd() {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static inline const char *dtn(int dt) { return wk_dtype_name((wk_dtype)dt); }

/* ---------------- views ---------------- */

/* l as the kernels' by-value view (every dim's shape and stride copied) */
static inline wk_cu_view cv(const wk_layout &l) {
    wk_cu_view v;
    memset(&v, 0, sizeof v);
    v.rank = l.rank;
    v.offset = l.offset;
    for (int d = 0; d < WK_MAX_RANK; d++) { v.shape[d] = l.shape[d]; v.stride[d] = l.stride[d]; }
    return v;
}

static inline int64_t numel(const wk_layout &l) {
    int64_t n = 1;
    for (int d = 0; d < l.rank; d++) n *= l.shape[d];
    return n;
}

/* a layout of `shape`, offset 0 and every stride 0: a view builder's start */
static inline wk_layout emu_layout(const int64_t *shape, int rank) {
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    for (int d = 0; d < rank; d++) l.shape[d] = shape[d];
    return l;
}

/* row-major strides over a storage `pad` larger in every dim: 0 is
 * contiguous, more is a slice of a bigger tensor (narrowed) */
static inline void emu_row_major(wk_layout &l, int64_t pad) {
    int64_t st = 1;
    for (int d = l.rank - 1; d >= 0; d--) { l.stride[d] = st; st *= l.shape[d] + pad; }
}

/* column-major strides: every dim permuted (transposed storage) */
static inline void emu_col_major(wk_layout &l) {
    int64_t st = 1;
    for (int d = 0; d < l.rank; d++) { l.stride[d] = st; st *= l.shape[d]; }
}

/* elements a buffer needs for l: the farthest element + 1 (offset + 1 when
 * l is empty) */
static inline int64_t emu_need(const wk_layout &l) {
    int64_t hi = l.offset;
    bool empty = false;
    for (int d = 0; d < l.rank; d++) {
        if (l.shape[d] == 0) empty = true;
        else hi += (l.shape[d] - 1) * l.stride[d];
    }
    return empty ? l.offset + 1 : hi + 1;
}

/* A view builder's last step: the broadcast kinds' 0 stride - bcast_dim
 * along dim, bcast_other on the first other dim longer than 1 - then
 * *need = emu_need. */
static inline wk_layout emu_view_done(wk_layout l, bool bcast_dim, bool bcast_other, int dim, int64_t *need) {
    if (bcast_dim) l.stride[dim] = 0;
    if (bcast_other)
        for (int d = 0; d < l.rank; d++)
            if (d != dim && l.shape[d] > 1) { l.stride[d] = 0; break; }
    *need = emu_need(l);
    return l;
}

/* ---------------- compare ---------------- */

/* element i of a and b: the same bits, or with nan_any (float dtypes) both NaN */
static inline bool emu_same_elem(const unsigned char *a, const unsigned char *b, int64_t i, int dt, bool nan_any) {
    if (wkc_raw_load(a, i, dt) == wkc_raw_load(b, i, dt)) return true;
    if (!nan_any || wkc_is_int(dt)) return false;
    const double x = wkc_load_f64(a, i, dt), y = wkc_load_f64(b, i, dt);
    return x != x && y != y;
}

/* ---------------- on Buf (not with EMU_OWN_BUF): index tests ---------------- */

#ifndef EMU_OWN_BUF
/* cnt random elements of dt (one rnd() each): integers over their full
 * range (wrapping sums), floats of mixed magnitudes (so summation order
 * shows in the low bits) with some +-0, +-inf (inf + -inf makes NaNs),
 * huge values and, with nan_in, NaN inputs. At least one element's bytes. */
static inline Buf make_data(int64_t cnt, int dt, bool nan_in) {
    static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, 1e30, -1e30, 65504.0, 448.0, 3e-5, NAN};
    const int es = wkc_size(dt);
    Buf b((size_t)(cnt > 0 ? cnt : 1) * es, 0);
    for (int64_t i = 0; i < cnt; i++) {
        uint64_t r = rnd();
        if (wkc_is_int(dt)) {
            wkc_put_bits(b.data(), i, dt, r);
            continue;
        }
        double v;
        if (r % 97 == 0) v = sp[(r >> 8) % (nan_in ? 10 : 9)];
        else v = ((double)(int64_t)((r >> 8) % 2000001) - 1000000) / (double)(1ull << ((r >> 40) % 24));
        wkc_store_f64(b.data(), i, dt, v);
    }
    return b;
}

/* kinds of index lists: a set of 3 values (long runs of equal ids), all
 * distinct, random over the range */
enum { I_SET3, I_DISTINCT, I_RANDOM, I_KINDS };
static const char *const iname[I_KINDS] = {"set-of-3", "distinct", "random"};

/* one line of len ids in [0, size) of kind ik into v */
static inline void line_ids(std::vector<long long> &v, int64_t len, int64_t size, int ik) {
    v.resize((size_t)len);
    if (ik == I_DISTINCT) { /* the first len of a random permutation of 0 .. size-1 */
        std::vector<long long> all((size_t)size);
        for (int64_t i = 0; i < size; i++) all[(size_t)i] = i;
        for (int64_t i = size - 1; i > 0; i--) {
            int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1));
            long long t = all[(size_t)i];
            all[(size_t)i] = all[(size_t)j];
            all[(size_t)j] = t;
        }
        for (int64_t i = 0; i < len; i++) v[(size_t)i] = all[(size_t)i];
    } else if (ik == I_SET3) {
        long long set[3];
        for (int k = 0; k < 3; k++) set[k] = (long long)(rnd() % (uint64_t)size);
        for (int64_t i = 0; i < len; i++) v[(size_t)i] = set[rnd() % 3];
    } else {
        for (int64_t i = 0; i < len; i++) v[(size_t)i] = (long long)(rnd() % (uint64_t)size);
    }
}

/* the index kernels' error flag: one int32 in a Buf (managed in GPU_MODE) */
static inline int32_t *err_flag() {
    static Buf f(sizeof(int32_t), 0);
    return (int32_t *)(void *)f.data();
}
/* the index kernels' report with no record: only the error word is set */
static inline wk_cu_ixflag ixf(int32_t *status) {
    wk_cu_ixflag f;
    memset(&f, 0, sizeof f);
    f.status = status;
    return f;
}

/* a and b equal bit for bit; with nan_any (and always in GPU_MODE, whose
 * float arithmetic makes the canonical NaN) a NaN equals any NaN, every
 * other element still bit for bit */
static inline bool same_data(const Buf &a, const Buf &b, int dt, bool nan_any) {
    if (a.size() != b.size()) return false;
    if (!memcmp(a.data(), b.data(), a.size())) return true;
#ifdef GPU_MODE
    nan_any = true;
#endif
    if (!nan_any || wkc_is_int(dt)) return false;
    const int64_t n = (int64_t)a.size() / wkc_size(dt);
    for (int64_t i = 0; i < n; i++)
        if (!emu_same_elem(a.data(), b.data(), i, dt, true)) return false;
    return true;
}

/* The index matrices' id list length and id range for a turn: lengths
 * 64 .. 5000 (5000 one turn in 4, to keep the time down), ids in
 * [0, size); distinct ids need size > len (u8 ids: at most 256). */
static inline void matrix_len_size(int turn, int rep, int ik, int idt, int64_t *len, int64_t *size) {
    static const int64_t LENS[] = {64, 65, 100, 257, 1000, 5000};
    *len = LENS[(turn * 7 + rep) % 6];
    if (*len == 5000 && (turn % 4)) *len = 1000;
    if (ik == I_DISTINCT) {
        if (idt == WK_U8 && *len > 256) *len = 200;
        *size = *len + 3 + (turn % 5);
        if (idt == WK_U8 && *size > 256) *size = 256;
    } else {
        *size = 5 + turn % 40;
    }
}

/* the contiguous [10, 6, 5] view v made overlapping three ways: k = 0 a 0
 * stride off dim 0, k = 1 a 0 stride along dim 0, k = 2 strides that
 * collide */
static inline wk_cu_view overlapping_view(const wk_cu_view &v, int k) {
    wk_cu_view o = v;
    if (k == 0) o.stride[1] = 0;
    if (k == 1) o.stride[0] = 0;
    if (k == 2) o.stride[2] = 2; /* 5 elements step 2 reach 8 >= stride 5 of dim 1: collide */
    return o;
}

#ifdef WICK_CUDA_KERNELS_SORT_H
/* What the host queues before a sorted index path (the test #included
 * kernels_sort.cu): a stable ascending sort of the ids li along dim with
 * wk__cu_sort - values in the ids dtype and i64 positions, contiguous with
 * ids' shape (at least one element each) - in a workspace of
 * wk__cu_sort_workspace bytes. rc: the launcher's status. */
struct SortedIds {
    Buf values, perm;
    int rc;
};
static inline SortedIds sort_ids(const Buf &ids, const wk_layout &li, int idt, int dim) {
    const int64_t n = numel(li) > 0 ? numel(li) : 1;
    const wk_cu_view vids = cv(li);
    SortedIds r = {Buf((size_t)n * wkc_size(idt)), Buf((size_t)n * 8), 0};
    Buf ws(wk__cu_sort_workspace(vids, dim, (wk_dtype)idt) + 1);
    r.rc = wk__cu_sort(nullptr, ids.data(), vids, (wk_dtype)idt, dim, false, r.values.data(), r.perm.data(), ws.data());
    SYNC();
    return r;
}
#endif
#endif /* EMU_OWN_BUF */

#endif
