// index_add's sorted path (kernels_index.cu: wk__cu_index_add_sorted and
// the host's choice wk__cu_index_add_prefers_sorted) against the CPU
// backend's wk__cpu_index_add, in host emulation: the ids are sorted with
// the real sort launcher (kernels_sort.cu, wk__cu_sort: values + i64
// indices, its workspace sized by wk__cu_sort_workspace) and then added
// with the new launcher - exactly the calls cuda_backend.c's cu_index_add
// queues - and the whole dst buffer is compared with the CPU's BIT FOR BIT
// (the kernel performs the CPU's additions in the CPU's order, each rounded
// to the dtype; so floats must match exactly, not within a tolerance). The
// plain path (wk__cu_index_add) runs on the same inputs as a second witness.
// Built like test_cuda_kernels_emu.cu:
//   nvcc -std=c++17 -O1 -arch=sm_80 -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE -I include -I src
//     tests/cuda/test_cuda_ixadd_emu.cu build/libwick.a -lcudart_static ...
// With -DGPU_MODE (buffers in managed memory, a sync after every launcher)
// the same file runs the real kernels on a GPU; there NaN results are
// compared as "both NaN" (the GPU's float adds return the canonical NaN, the
// CPU's propagate an input's payload), every other bit exactly.
//
// Covered: all 10 dtypes (random data with +-0, +-inf, huge and tiny
// values, so a wrong summation order changes bits; NaN inputs in a section
// of their own, where a NaN matches any NaN - see one_case), ids u8 / u32 / i32 /
// i64; dims first / middle / last of rank-3 dst, plus 1-D dst (one outer
// position) and an embedding-backward shape; ids drawn from a set of 3 (long
// runs), all distinct, and random over a small range; lengths 64 .. 5000;
// dst contiguous, transposed and narrowed with an offset; src the same plus
// 0-stride off dim and 0-stride along dim; ids contiguous and stepped with an
// offset; empty outer shape and zero ids (nothing written); a bad id in the
// sorted list (skipped, flag set); prefers_sorted false for short id lists,
// an overlapping (0-stride) dst, many outer positions, non-1-D ids; the
// launcher refusing an overlapping dst.
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/indexing/kernels_index.cu"
#include "cuda/reduce/kernels_sort.cu"
#include <math.h>
#define EMU_RND_SEED 0x2545F4914F6CDD1Dull
#include "emu_harness.cuh"

static const int IDTS[4] = {WK_U8, WK_U32, WK_I32, WK_I64};

/* ---------------- views ---------------- */

enum { V_CONTIG, V_TRANSPOSED, V_NARROWED, V_BCAST_OTHER, V_BCAST_DIM, V_KINDS };
static const char *vname[V_KINDS] = {"contig", "transposed", "narrowed+off", "bcast-other", "bcast-dim"};

/* A view of `shape` of kind `kind` (dim: the indexed dim); *need = elements
 * its buffer must hold. */
static wk_layout make_view(const int64_t *shape, int rank, int kind, int dim, int64_t *need) {
    wk_layout l = emu_layout(shape, rank);
    switch (kind) {
    case V_TRANSPOSED: /* column-major storage */
        emu_col_major(l);
        l.offset = 3;
        break;
    case V_NARROWED: /* a slice of a tensor one larger in every dim */
        emu_row_major(l, 1);
        l.offset = 5;
        break;
    default: emu_row_major(l, 0); break;
    }
    return emu_view_done(l, kind == V_BCAST_DIM, kind == V_BCAST_OTHER, dim, need);
}

/* 1-D ids view: contiguous (kind 0) or every other element from offset 1 */
static wk_layout ids_view(int64_t len, int kind, int64_t *need) {
    int64_t sh[1] = {len};
    wk_layout l = emu_layout(sh, 1);
    l.stride[0] = kind ? 2 : 1;
    l.offset = kind ? 1 : 0;
    *need = emu_need(l);
    return l;
}

/* ---------------- data (make_data, line_ids: emu_harness.cuh) ---------------- */

/* len ids (values in [0, size)) of kind ik written through view li */
static Buf make_ids(int idt, const wk_layout &li, int64_t need, int64_t size, int ik) {
    Buf b((size_t)need * wkc_size(idt), 0);
    const int64_t len = li.shape[0];
    std::vector<long long> v;
    line_ids(v, len, size, ik);
    for (int64_t i = 0; i < len; i++) wkc_store_i64(b.data(), li.offset + i * li.stride[0], idt, v[(size_t)i]);
    return b;
}

/* ---------------- the host's sequence ---------------- */

/* What cu_index_add queues on the sorted path: stable ascending sort of the
 * 1-D ids (values in the ids dtype + i64 positions), then the sorted add. */
static int run_sorted(Buf &dst, const wk_layout &ld, const Buf &ids, const wk_layout &li, int idt, const Buf &src,
                      const wk_layout &ls, int dim, int dt) {
    SortedIds si = sort_ids(ids, li, idt, 0);
    if (si.rc) return si.rc;
    const int rc = wk__cu_index_add_sorted(nullptr, dst.data(), cv(ld), si.values.data(),
                                           (const int64_t *)(const void *)si.perm.data(), (wk_dtype)idt, li.shape[0],
                                           src.data(), cv(ls), dim, (wk_dtype)dt, ixf(err_flag()));
    SYNC();
    return rc;
}

/* One case: CPU vs sorted path vs plain path on the same inputs.
 * nan_in: NaN among the inputs, compared as "any NaN" - the NaN an add
 * returns when BOTH operands are NaN is the first operand's on x86, and the
 * CPU's compiled f32 loops may commute d + s (its vectorised contiguous
 * loop does), so the sign / payload of such a NaN is the C compiler's
 * choice, not a property of the order of additions. Without NaN inputs
 * every NaN is generated (inf + -inf: x86's default NaN, whatever the
 * operand order) and everything must match bit for bit. */
static void one_case(int dt, int idt, int rank, const int64_t *dsh, int dim, int64_t len, int ik, int dk, int sk,
                     int idk, const char *what, bool nan_in = false) {
    int64_t ssh[WK_MAX_RANK], nd, ns, ni;
    for (int d = 0; d < rank; d++) ssh[d] = d == dim ? len : dsh[d];
    const wk_layout ld = make_view(dsh, rank, dk, dim, &nd);
    const wk_layout ls = make_view(ssh, rank, sk, dim, &ns);
    const wk_layout li = ids_view(len, idk, &ni);
    const Buf ids = make_ids(idt, li, ni, dsh[dim], ik);
    const Buf src = make_data(ns, dt, nan_in), dst0 = make_data(nd, dt, nan_in);
    Buf a = dst0, b = dst0, c = dst0;
    wk_status cst = wk__cpu_index_add(NULL, a.data(), &ld, ids.data(), &li, (wk_dtype)idt, src.data(), &ls, dim,
                                      (wk_dtype)dt);
    *err_flag() = 0;
    int rc = run_sorted(b, ld, ids, li, idt, src, ls, dim, dt);
    CHECK(cst == WK_OK && rc == 0 && *err_flag() == 0, "%s rc: cpu %d sorted %d flag %d (%s %s dim %d)", what, (int)cst,
          rc, *err_flag(), dtn(dt), dtn(idt), dim);
    CHECK(same_data(a, b, dt, nan_in), "%s: sorted != cpu: %s ids %s %s len %lld dim %d rank %d dst %s src %s ids-step %d", what,
          dtn(dt), dtn(idt), iname[ik], (long long)len, dim, rank, vname[dk], vname[sk], idk);
    rc = wk__cu_index_add(nullptr, c.data(), cv(ld), ids.data(), cv(li), (wk_dtype)idt, src.data(), cv(ls), dim,
                          (wk_dtype)dt, ixf(err_flag()));
    SYNC();
    CHECK(rc == 0 && same_data(a, c, dt, nan_in), "%s: plain != cpu: %s ids %s", what, dtn(dt), dtn(idt));
}

/* ---------------- tests ---------------- */

/* every dtype x ids dtype x dim x ids kind, lengths 64 .. 5000, every
 * dst / src / ids layout kind in rotation */
static void test_matrix() {
    long before = g_checks, fails = g_fail;
    int turn = 0;
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
        for (int ii = 0; ii < 4; ii++) {
            const int idt = IDTS[ii];
            for (int dim = 0; dim < 3; dim++)
                for (int ik = 0; ik < I_KINDS; ik++)
                    for (int rep = 0; rep < 6; rep++, turn++) {
                        int64_t len, size;
                        matrix_len_size(turn, rep, ik, idt, &len, &size);
                        int64_t dsh[3] = {3, 4, 7};
                        dsh[(dim + 1) % 3] = 2 + turn % 3; /* 2..4: odd and even outer sizes */
                        dsh[dim] = size;
                        const int dk = (turn + rep) % 3;           /* contig, transposed, narrowed */
                        const int sk = (turn / 3 + rep) % V_KINDS; /* every src kind */
                        one_case(dt, idt, 3, dsh, dim, len, ik, dk, sk, (turn >> 1) & 1, "matrix");
                        /* the host's choice agrees: short outer, long ids, no overlap */
                        const wk_layout ld = make_view(dsh, 3, dk, dim, &size);
                        int64_t ni;
                        const wk_layout li = ids_view(len, 0, &ni);
                        CHECK(wk__cu_index_add_prefers_sorted(cv(ld), cv(li), dim), "prefers_sorted false (%s)",
                              vname[dk]);
                    }
        }
    printf("matrix: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* shapes off the matrix: 1-D dst (one outer position, one long run), an
 * embedding backward, rank 4, single-element outer, empty outer, no ids */
static void test_shapes() {
    long before = g_checks, fails = g_fail;
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++) {
        const int idt = IDTS[dt % 4];
        { const int64_t sh[1] = {50}; one_case(dt, idt, 1, sh, 0, 5000, I_SET3, V_CONTIG, V_CONTIG, 0, "1-D set3"); }
        { const int64_t sh[1] = {50}; one_case(dt, idt, 1, sh, 0, 3000, I_RANDOM, V_NARROWED, V_NARROWED, 1, "1-D random"); }
        { const int64_t sh[1] = {7}; one_case(dt, idt, 1, sh, 0, 64, I_SET3, V_CONTIG, V_BCAST_DIM, 0, "1-D bcast src"); }
        { const int64_t sh[2] = {200, 33}; one_case(dt, idt, 2, sh, 0, 1500, I_RANDOM, V_CONTIG, V_CONTIG, 0, "embedding"); }
        { const int64_t sh[2] = {33, 200}; one_case(dt, idt, 2, sh, 1, 700, I_RANDOM, V_TRANSPOSED, V_CONTIG, 1, "dim last 2-D"); }
        { const int64_t sh[4] = {2, 3, 9, 5}; one_case(dt, idt, 4, sh, 2, 150, I_RANDOM, V_NARROWED, V_TRANSPOSED, 0, "rank 4"); }
        { const int64_t sh[3] = {1, 40, 1}; one_case(dt, idt, 3, sh, 1, 99, I_RANDOM, V_CONTIG, V_CONTIG, 1, "one outer"); }
        { const int64_t sh[3] = {9, 0, 3}; one_case(dt, idt, 3, sh, 0, 80, I_RANDOM, V_CONTIG, V_CONTIG, 0, "empty outer"); }
        { const int64_t sh[2] = {9, 3}; one_case(dt, idt, 2, sh, 0, 0, I_RANDOM, V_CONTIG, V_CONTIG, 0, "no ids"); }
    }
    printf("shapes: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* NaN inputs (see one_case): the float dtypes over the layout kinds */
static void test_nan_inputs() {
    long before = g_checks, fails = g_fail;
    static const int FDT[5] = {WK_BF16, WK_F16, WK_F32, WK_F64, WK_F8E4M3};
    int turn = 0;
    for (int f = 0; f < 5; f++)
        for (int dim = 0; dim < 3; dim++)
            for (int dk = 0; dk < 3; dk++, turn++) {
                int64_t dsh[3] = {3, 4, 5};
                dsh[dim] = 6;
                one_case(FDT[f], IDTS[turn % 4], 3, dsh, dim, 1000, turn % 2 ? I_RANDOM : I_SET3, dk, (dk + turn) % V_KINDS,
                         turn & 1, "nan inputs", true);
            }
    printf("nan inputs: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* the decision, refusals and the kernel's own id check */
static void test_decision() {
    long before = g_checks, fails = g_fail;
    int64_t n;
    const int64_t sh[3] = {10, 6, 5};
    const wk_cu_view ld = cv(make_view(sh, 3, V_CONTIG, 0, &n));
    const wk_cu_view ids64 = cv(ids_view(64, 0, &n)), ids63 = cv(ids_view(63, 0, &n)), ids5k = cv(ids_view(5000, 1, &n));
    CHECK(wk__cu_index_add_prefers_sorted(ld, ids64, 0), "len 64 should prefer sorted");
    CHECK(wk__cu_index_add_prefers_sorted(ld, ids5k, 2), "len 5000 dim 2 should prefer sorted");
    CHECK(!wk__cu_index_add_prefers_sorted(ld, ids63, 0), "len 63 must not prefer sorted");
    wk_cu_view ids0 = ids64;
    ids0.rank = 0;
    CHECK(!wk__cu_index_add_prefers_sorted(ld, ids0, 0), "0-D ids");
    wk_cu_view ids2 = ids64;
    ids2.rank = 2;
    ids2.shape[1] = 1;
    CHECK(!wk__cu_index_add_prefers_sorted(ld, ids2, 0), "2-D ids");
    CHECK(!wk__cu_index_add_prefers_sorted(ld, ids64, 3) && !wk__cu_index_add_prefers_sorted(ld, ids64, -1), "bad dim");
    /* overlapping dst: 0 stride off dim, or along dim, or strides that collide */
    for (int k = 0; k < 3; k++) {
        const wk_cu_view o = overlapping_view(ld, k);
        CHECK(!wk__cu_index_add_prefers_sorted(o, ids5k, 0), "overlapping dst %d must not prefer sorted", k);
        CHECK(wk__cu_index_add_sorted(nullptr, NULL, o, NULL, NULL, WK_I64, 64, NULL, ld, 0, WK_F32, ixf(NULL)) != 0,
              "launcher must refuse overlapping dst %d", k);
    }
    /* many outer positions: the plain path */
    wk_cu_view big = ld;
    big.shape[1] = 65536;
    big.shape[2] = 1;
    big.stride[0] = 65536;
    big.stride[1] = 1;
    CHECK(!wk__cu_index_add_prefers_sorted(big, ids5k, 0), "65536 outer must not prefer sorted");
    big.shape[1] = 65535;
    CHECK(wk__cu_index_add_prefers_sorted(big, ids5k, 0), "65535 outer should prefer sorted");
    /* bad arguments */
    CHECK(wk__cu_index_add_sorted(nullptr, NULL, ld, NULL, NULL, WK_F32, 64, NULL, ld, 0, WK_F32, ixf(NULL)) != 0, "ids dtype");
    CHECK(wk__cu_index_add_sorted(nullptr, NULL, ld, NULL, NULL, WK_I64, 64, NULL, ld, 3, WK_F32, ixf(NULL)) != 0, "dim");
    CHECK(wk__cu_index_add_sorted(nullptr, NULL, ld, NULL, NULL, WK_I64, -1, NULL, ld, 0, WK_F32, ixf(NULL)) != 0, "len");
    CHECK(wk__cu_index_add_sorted(nullptr, NULL, ld, NULL, NULL, WK_I64, 64, NULL, ld, 0, (wk_dtype)99, ixf(NULL)) != 0, "dtype");
    CHECK(wk__cu_index_add_sorted(nullptr, NULL, ld, NULL, NULL, WK_I64, 0, NULL, ld, 0, WK_F32, ixf(NULL)) == 0, "len 0: nothing");
    /* a bad id reaching the kernel (the host validates first; defence in
     * depth): skipped, flag set, the good runs still added as the CPU
     * would with the bad ids removed */
    for (int ii = 0; ii < 4; ii++) {
        const int idt = IDTS[ii], dt = WK_F32;
        const int64_t len = 100;
        wk_layout li = ids_view(len, 0, &n);
        Buf ids = make_ids(idt, li, n, 10, I_RANDOM), good = ids;
        const long long bad = idt == WK_U8 ? 200 : idt == WK_U32 ? 10 : -1;
        wkc_store_i64(ids.data(), 17, idt, bad);
        wkc_store_i64(ids.data(), 60, idt, bad);
        int64_t ns;
        const int64_t ssh[3] = {len, 6, 5};
        const wk_layout ls = make_view(ssh, 3, V_CONTIG, 0, &ns);
        Buf src = make_data(ns, dt, false), zsrc = src;
        for (int64_t j = 0; j < 30; j++) {
            wkc_store_f64(zsrc.data(), 17 * 30 + j, dt, 0.0); /* the CPU reference: bad rows add +0 ... */
            wkc_store_f64(zsrc.data(), 60 * 30 + j, dt, 0.0);
        }
        wkc_store_i64(good.data(), 17, idt, 0); /* ... to row 0 */
        wkc_store_i64(good.data(), 60, idt, 0);
        const wk_layout ldl = make_view(sh, 3, V_CONTIG, 0, &n);
        Buf dst0 = make_data(n, dt, false);
        for (int64_t j = 0; j < 30; j++) wkc_store_f64(dst0.data(), j, dt, 1.0); /* row 0: +0 changes nothing */
        Buf a = dst0, b = dst0;
        CHECK(wk__cpu_index_add(NULL, a.data(), &ldl, good.data(), &li, (wk_dtype)idt, zsrc.data(), &ls, 0, (wk_dtype)dt) == WK_OK, "cpu");
        *err_flag() = 0;
        int rc = run_sorted(b, ldl, ids, li, idt, src, ls, 0, dt);
        CHECK(rc == 0 && *err_flag() == WK_ERR_INDEX, "bad id: rc %d flag %d (%s)", rc, *err_flag(), dtn(idt));
        CHECK(same_data(a, b, dt, false), "bad id: the good runs (%s)", dtn(idt));
    }
    printf("decision: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

int main() {
    if (emu_no_device()) return 0;
    clock_t t0 = clock();
    test_decision();
    test_shapes();
    test_matrix();
    test_nan_inputs();
    return emu_summary(t0);
}
