// scatter / scatter_add's sorted path (kernels_index.cu:
// wk__cu_scatter_sorted and the host's choice wk__cu_scatter_prefers_sorted)
// against the CPU backend's wk__cpu_scatter, in host emulation: the ids are
// sorted along dim, every line at once, with the real sort launcher
// (kernels_sort.cu, wk__cu_sort: values + i64 indices contiguous with ids'
// shape, its workspace sized by wk__cu_sort_workspace) and then scattered
// with the new launcher - exactly the calls cuda_backend.c's cu_scatter
// queues - and the whole dst buffer is compared with the CPU's BIT FOR BIT
// (add: the kernel performs the CPU's additions in the CPU's order, each
// rounded to the dtype, so floats must match exactly, not within a
// tolerance; set: the run's last entry is the CPU's last write). The plain
// path (wk__cu_scatter) runs on the same inputs as a second witness.
// Built like test_cuda_kernels_emu.cu:
//   nvcc -std=c++17 -O1 -arch=sm_80 -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE -I include -I src
//     tests/cuda/test_cuda_scadd_emu.cu build/libwick.a -lcudart_static ...
// With -DGPU_MODE (buffers in managed memory, a sync after every launcher)
// the same file runs the real kernels on a GPU; there NaN results are
// compared as "both NaN" (the GPU's float adds return the canonical NaN, the
// CPU's propagate an input's payload), every other bit exactly.
//
// Covered: add and set; all 10 dtypes (random data with +-0, +-inf, huge
// and tiny values, so a wrong summation order changes bits; NaN inputs in a
// section of their own, where a NaN matches any NaN - see one_case), ids u8 /
// u32 / i32 / i64; dims first / middle / last of rank-3, rank 2 and 1-D (one
// line, up to 100000 ids); ids drawn per line from a set of 3 (long runs),
// all distinct, and random over a small range; line lengths 64 .. 5000;
// ids' shape smaller than dst's off dim; dst contiguous, transposed
// (permuted), narrowed with an offset, stepped; src the same plus 0-stride
// off dim and along dim; ids the same plus 0-stride off dim; empty shapes;
// a dst 0-stride on a dim the ids do not span (not overlapping where it is
// written: sorted path); bad ids planted (skipped, flag set, nothing outside
// dst touched - guard elements); prefers_sorted false for short lines, an
// overlapping dst, 65536 lines, rank mismatch; the launcher refusing an
// overlapping dst and bad arguments.
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/indexing/kernels_index.cu"
#include "cuda/reduce/kernels_sort.cu"
#include <math.h>
#define EMU_RND_SEED 0x5DEECE66D1234567ull
#include "emu_harness.cuh"

static const int IDTS[4] = {WK_U8, WK_U32, WK_I32, WK_I64};

/* ---------------- views ---------------- */

enum { V_CONTIG, V_TRANSPOSED, V_NARROWED, V_STEPPED, V_BCAST_OTHER, V_BCAST_DIM, V_KINDS };
static const char *vname[V_KINDS] = {"contig", "transposed", "narrowed+off", "stepped", "bcast-other", "bcast-dim"};

/* A view of `shape` of kind `kind` (dim: the indexed dim); *need = elements
 * its buffer must hold. */
static wk_layout make_view(const int64_t *shape, int rank, int kind, int dim, int64_t *need) {
    wk_layout l = emu_layout(shape, rank);
    switch (kind) {
    case V_TRANSPOSED: /* column-major storage: every dim permuted */
        emu_col_major(l);
        l.offset = 3;
        break;
    case V_NARROWED: /* a slice of a tensor one larger in every dim */
        emu_row_major(l, 1);
        l.offset = 5;
        break;
    case V_STEPPED: { /* every other element of the innermost dim, every third of the outermost */
        int64_t st = 1;
        for (int d = rank - 1; d >= 0; d--) {
            const int64_t step = d == rank - 1 ? 2 : d == 0 ? 3 : 1;
            l.stride[d] = st * step;
            st *= shape[d] * step;
        }
        l.offset = 2;
        break;
    }
    default: emu_row_major(l, 0); break;
    }
    return emu_view_done(l, kind == V_BCAST_DIM, kind == V_BCAST_OTHER, dim, need);
}

/* coordinates of row-major element i of l's shape, and its offset in l */
static int64_t elem_off(const wk_layout &l, int64_t i) {
    int64_t o = l.offset;
    for (int d = l.rank - 1; d >= 0; d--) {
        const int64_t s = l.shape[d], q = i / s;
        o += (i - q * s) * l.stride[d];
        i = q;
    }
    return o;
}

/* ---------------- data (make_data, line_ids: emu_harness.cuh) ---------------- */

/* ids of kind ik (per line) written through view li (a 0-stride view gets
 * the values of the last line written to each element: still valid ids) */
static Buf make_ids(int idt, const wk_layout &li, int64_t need, int dim, int64_t size, int ik) {
    Buf b((size_t)need * wkc_size(idt), 0);
    const int64_t len = li.shape[dim], n = numel(li);
    if (n == 0) return b;
    int64_t inner = 1;
    for (int d = dim + 1; d < li.rank; d++) inner *= li.shape[d];
    std::vector<long long> v;
    for (int64_t line = 0; line < n / len; line++) {
        line_ids(v, len, size, ik);
        const int64_t base = line / inner * len * inner + line % inner; /* row-major position of (line, 0) */
        for (int64_t k = 0; k < len; k++)
            wkc_store_i64(b.data(), elem_off(li, base + k * inner), idt, v[(size_t)k]);
    }
    return b;
}

/* ---------------- the host's sequence ---------------- */

/* What cu_scatter queues on the sorted path: a stable ascending sort of the
 * ids along dim (values in the ids dtype + i64 positions, contiguous with
 * ids' shape), then the sorted scatter. */
static int run_sorted(Buf &dst, const wk_layout &ld, const Buf &ids, const wk_layout &li, int idt, const Buf &src,
                      const wk_layout &ls, int dim, int dt, bool add) {
    SortedIds si = sort_ids(ids, li, idt, dim);
    if (si.rc) return si.rc;
    const int rc = wk__cu_scatter_sorted(nullptr, dst.data(), cv(ld), si.values.data(),
                                         (const int64_t *)(const void *)si.perm.data(), cv(li), (wk_dtype)idt,
                                         src.data(), cv(ls), dim, (wk_dtype)dt, add, ixf(err_flag()));
    SYNC();
    return rc;
}

struct Case {
    int dt, idt, rank, dim;
    int64_t dsh[WK_MAX_RANK]; /* dst's shape */
    int64_t ish[WK_MAX_RANK]; /* ids' = src's shape */
    int ik, dk, sk, ik_view;
    bool add, nan_in, expect_sorted;
    const char *what;
};

/* One case: CPU vs sorted path vs plain path on the same inputs.
 * nan_in: NaN among the inputs, compared as "any NaN" - the NaN an add
 * returns when BOTH operands are NaN is the first operand's on x86, and the
 * CPU's compiled f32 / f64 loops may commute d + s, so the sign / payload of
 * such a NaN is the C compiler's choice, not a property of the order of
 * additions. Without NaN inputs every NaN is generated (inf + -inf: x86's
 * default NaN, whatever the operand order) and everything must match bit for
 * bit. */
static void one_case(const Case &k) {
    int64_t nd, ns, ni;
    const wk_layout ld = make_view(k.dsh, k.rank, k.dk, k.dim, &nd);
    const wk_layout ls = make_view(k.ish, k.rank, k.sk, k.dim, &ns);
    const wk_layout li = make_view(k.ish, k.rank, k.ik_view, k.dim, &ni);
    const Buf ids = make_ids(k.idt, li, ni, k.dim, k.dsh[k.dim], k.ik);
    const Buf src = make_data(ns, k.dt, k.nan_in), dst0 = make_data(nd, k.dt, k.nan_in);
    Buf a = dst0, b = dst0, c = dst0;
    wk_status cst = wk__cpu_scatter(NULL, a.data(), &ld, ids.data(), &li, (wk_dtype)k.idt, src.data(), &ls, k.dim,
                                    (wk_dtype)k.dt, k.add);
    *err_flag() = 0;
    int rc = run_sorted(b, ld, ids, li, k.idt, src, ls, k.dim, k.dt, k.add);
    CHECK(cst == WK_OK && rc == 0 && *err_flag() == 0, "%s rc: cpu %d sorted %d flag %d (%s %s dim %d)", k.what,
          (int)cst, rc, *err_flag(), dtn(k.dt), dtn(k.idt), k.dim);
    CHECK(same_data(a, b, k.dt, k.nan_in),
          "%s %s: sorted != cpu: %s ids %s %s len %lld dim %d rank %d dst %s src %s ids %s", k.what,
          k.add ? "add" : "set", dtn(k.dt), dtn(k.idt), iname[k.ik], (long long)k.ish[k.dim], k.dim, k.rank,
          vname[k.dk], vname[k.sk], vname[k.ik_view]);
    rc = wk__cu_scatter(nullptr, c.data(), cv(ld), ids.data(), cv(li), (wk_dtype)k.idt, src.data(), cv(ls), k.dim,
                        (wk_dtype)k.dt, k.add, ixf(err_flag()));
    SYNC();
    CHECK(rc == 0 && same_data(a, c, k.dt, k.nan_in), "%s: plain != cpu: %s ids %s", k.what, dtn(k.dt), dtn(k.idt));
    CHECK(wk__cu_scatter_prefers_sorted(cv(ld), cv(li), k.dim) == k.expect_sorted, "%s: prefers_sorted != %d (%s)",
          k.what, (int)k.expect_sorted, vname[k.dk]);
}

static Case base_case(int dt, int idt, int rank, int dim, bool add, const char *what) {
    Case k;
    memset(&k, 0, sizeof k);
    k.dt = dt;
    k.idt = idt;
    k.rank = rank;
    k.dim = dim;
    k.add = add;
    k.what = what;
    k.ik = I_RANDOM;
    k.expect_sorted = true;
    return k;
}

/* ---------------- tests ---------------- */

/* every dtype x ids dtype x dim x ids kind x add/set, lengths 64 .. 5000,
 * every dst / src / ids layout kind in rotation */
static void test_matrix() {
    long before = g_checks, fails = g_fail;
    int turn = 0;
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
        for (int ii = 0; ii < 4; ii++)
            for (int dim = 0; dim < 3; dim++)
                for (int ik = 0; ik < I_KINDS; ik++)
                    for (int rep = 0; rep < 4; rep++, turn++) {
                        Case k = base_case(dt, IDTS[ii], 3, dim, rep % 2 == 0, "matrix");
                        int64_t len, size;
                        matrix_len_size(turn, rep, ik, IDTS[ii], &len, &size);
                        const int64_t sh0[3] = {3, 4, 5};
                        for (int d = 0; d < 3; d++) k.dsh[d] = k.ish[d] = sh0[d];
                        k.dsh[(dim + 1) % 3] = 2 + turn % 3; /* 2..4: odd and even line counts */
                        k.ish[(dim + 1) % 3] = k.dsh[(dim + 1) % 3];
                        if (turn % 3 == 0) k.ish[(dim + 2) % 3] = k.dsh[(dim + 2) % 3] - 1; /* ids smaller off dim */
                        k.dsh[dim] = size;
                        k.ish[dim] = len;
                        k.ik = ik;
                        k.dk = (turn + rep) % 4;                                      /* contig .. stepped */
                        k.sk = (turn / 3 + rep) % V_KINDS;                            /* every src kind */
                        k.ik_view = (turn / 2 + rep) % 5;                             /* contig .. bcast-other */
                        if (k.ik_view == V_BCAST_OTHER && ik == I_DISTINCT) k.ik_view = V_STEPPED;
                        one_case(k);
                    }
    printf("matrix: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* shapes off the matrix: 1-D (one line), rank 2 both dims, one line of a
 * rank 3, a dst 0-stride where the ids do not reach, empty shapes */
static void test_shapes() {
    long before = g_checks, fails = g_fail;
    for (int dt = 0; dt < WK_ELEM_DTYPE_COUNT; dt++)
        for (int add = 0; add < 2; add++) {
            const int idt = IDTS[(dt + add) % 4];
            {
                Case k = base_case(dt, idt, 1, 0, add, "1-D set3 100000");
                k.dsh[0] = 50;
                k.ish[0] = 100000;
                k.ik = I_SET3;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 1, 0, add, "1-D random");
                k.dsh[0] = 50;
                k.ish[0] = 3000;
                k.dk = V_NARROWED;
                k.sk = V_STEPPED;
                k.ik_view = V_STEPPED;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 1, 0, add, "1-D bcast src");
                k.dsh[0] = 7;
                k.ish[0] = 64;
                k.ik = I_SET3;
                k.sk = V_BCAST_DIM;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 2, 0, add, "2-D dim 0");
                k.dsh[0] = 200, k.dsh[1] = 33;
                k.ish[0] = 1500, k.ish[1] = 31;
                k.dk = V_TRANSPOSED;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 2, 1, add, "2-D dim last");
                k.dsh[0] = 5, k.dsh[1] = 300;
                k.ish[0] = 5, k.ish[1] = 700;
                k.dk = V_STEPPED;
                k.ik_view = V_TRANSPOSED;
                k.sk = V_NARROWED;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 3, 1, add, "one line");
                k.dsh[0] = 1, k.dsh[1] = 40, k.dsh[2] = 1;
                k.ish[0] = 1, k.ish[1] = 99, k.ish[2] = 1;
                one_case(k);
            }
            {
                /* dst 0-stride on dim 1, which the ids span with extent 1:
                 * the written positions do not overlap (sorted path) */
                Case k = base_case(dt, idt, 2, 0, add, "dst bcast unused");
                k.dsh[0] = 30, k.dsh[1] = 4;
                k.ish[0] = 80, k.ish[1] = 1;
                k.dk = V_BCAST_OTHER;
                one_case(k);
            }
            {
                /* overlapping dst: not the sorted path (and the launcher refuses it) */
                Case k = base_case(dt, idt, 2, 0, add, "dst overlapping");
                k.dsh[0] = 30, k.dsh[1] = 4;
                k.ish[0] = 80, k.ish[1] = 3;
                k.dk = V_BCAST_OTHER;
                k.expect_sorted = false;
                int64_t nd, ni;
                const wk_layout ld = make_view(k.dsh, 2, k.dk, 0, &nd), li = make_view(k.ish, 2, V_CONTIG, 0, &ni);
                CHECK(!wk__cu_scatter_prefers_sorted(cv(ld), cv(li), 0), "overlapping dst must not prefer sorted");
                CHECK(wk__cu_scatter_sorted(nullptr, NULL, cv(ld), NULL, NULL, cv(li), (wk_dtype)idt, NULL, cv(li), 0,
                                            (wk_dtype)dt, add, ixf(NULL)) != 0,
                      "launcher must refuse an overlapping dst");
            }
            {
                /* short lines: the plain path (the sorted one still agrees) */
                Case k = base_case(dt, idt, 2, 1, add, "short lines");
                k.dsh[0] = 6, k.dsh[1] = 20;
                k.ish[0] = 6, k.ish[1] = 63;
                k.expect_sorted = false;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 3, 2, add, "empty lines");
                k.dsh[0] = 9, k.dsh[1] = 0, k.dsh[2] = 3;
                k.ish[0] = 9, k.ish[1] = 0, k.ish[2] = 80;
                k.expect_sorted = false;
                one_case(k);
            }
            {
                Case k = base_case(dt, idt, 2, 0, add, "no ids");
                k.dsh[0] = 9, k.dsh[1] = 3;
                k.ish[0] = 0, k.ish[1] = 3;
                k.expect_sorted = false;
                one_case(k);
            }
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
            for (int dk = 0; dk < 4; dk++, turn++) {
                Case k = base_case(FDT[f], IDTS[turn % 4], 3, dim, turn % 3 != 0, "nan inputs");
                const int64_t sh0[3] = {3, 4, 5};
                for (int d = 0; d < 3; d++) k.dsh[d] = k.ish[d] = sh0[d];
                k.dsh[dim] = 6;
                k.ish[dim] = 1000;
                k.ik = turn % 2 ? I_RANDOM : I_SET3;
                k.dk = dk;
                k.sk = (dk + turn) % V_KINDS;
                k.ik_view = turn % 4;
                k.nan_in = true;
                one_case(k);
            }
    printf("nan inputs: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* the decision and the launcher's refusals */
static void test_decision() {
    long before = g_checks, fails = g_fail;
    int64_t n;
    const int64_t dsh[3] = {10, 6, 5}, ish64[3] = {64, 6, 5}, ish63[3] = {63, 6, 5}, ishl[3] = {10, 6, 64};
    const wk_cu_view ld = cv(make_view(dsh, 3, V_CONTIG, 0, &n));
    const wk_cu_view i64v = cv(make_view(ish64, 3, V_STEPPED, 0, &n)), i63 = cv(make_view(ish63, 3, V_CONTIG, 0, &n));
    const wk_cu_view ilast = cv(make_view(ishl, 3, V_TRANSPOSED, 2, &n));
    CHECK(wk__cu_scatter_prefers_sorted(ld, i64v, 0), "len 64 should prefer sorted");
    CHECK(!wk__cu_scatter_prefers_sorted(ld, i63, 0), "len 63 must not prefer sorted");
    CHECK(wk__cu_scatter_prefers_sorted(ld, ilast, 2), "len 64 along dim 2 should prefer sorted");
    CHECK(!wk__cu_scatter_prefers_sorted(ld, ilast, 0), "len 10 along dim 0 must not prefer sorted");
    wk_cu_view ir = i64v;
    ir.rank = 2;
    CHECK(!wk__cu_scatter_prefers_sorted(ld, ir, 0), "rank mismatch");
    CHECK(!wk__cu_scatter_prefers_sorted(ld, i64v, 3) && !wk__cu_scatter_prefers_sorted(ld, i64v, -1), "bad dim");
    /* overlapping dst: 0 stride off dim, or along dim, or strides that collide */
    for (int k = 0; k < 3; k++) {
        const wk_cu_view o = overlapping_view(ld, k);
        CHECK(!wk__cu_scatter_prefers_sorted(o, i64v, 0), "overlapping dst %d must not prefer sorted", k);
        CHECK(wk__cu_scatter_sorted(nullptr, NULL, o, NULL, NULL, i64v, WK_I64, NULL, i64v, 0, WK_F32, true, ixf(NULL)) != 0,
              "launcher must refuse overlapping dst %d", k);
    }
    /* many lines: the plain path */
    wk_cu_view big = ld, ibig = i64v;
    big.shape[1] = ibig.shape[1] = 65536;
    big.shape[2] = ibig.shape[2] = 1;
    big.stride[0] = 65536;
    big.stride[1] = 1;
    CHECK(!wk__cu_scatter_prefers_sorted(big, ibig, 0), "65536 lines must not prefer sorted");
    ibig.shape[1] = 65535;
    CHECK(wk__cu_scatter_prefers_sorted(big, ibig, 0), "65535 lines should prefer sorted");
    /* bad arguments */
    CHECK(wk__cu_scatter_sorted(nullptr, NULL, ld, NULL, NULL, i64v, WK_F32, NULL, i64v, 0, WK_F32, true, ixf(NULL)) != 0,
          "ids dtype");
    CHECK(wk__cu_scatter_sorted(nullptr, NULL, ld, NULL, NULL, i64v, WK_I64, NULL, i64v, 3, WK_F32, true, ixf(NULL)) != 0,
          "dim");
    CHECK(wk__cu_scatter_sorted(nullptr, NULL, ld, NULL, NULL, ir, WK_I64, NULL, i64v, 0, WK_F32, true, ixf(NULL)) != 0,
          "ids rank");
    CHECK(wk__cu_scatter_sorted(nullptr, NULL, ld, NULL, NULL, i64v, WK_I64, NULL, ir, 0, WK_F32, false, ixf(NULL)) != 0,
          "src rank");
    CHECK(wk__cu_scatter_sorted(nullptr, NULL, ld, NULL, NULL, i64v, WK_I64, NULL, i64v, 0, (wk_dtype)99, true,
                                ixf(NULL)) != 0,
          "dtype");
    wk_cu_view iempty = i64v;
    iempty.shape[1] = 0;
    CHECK(wk__cu_scatter_sorted(nullptr, NULL, ld, NULL, NULL, iempty, WK_I64, NULL, iempty, 0, WK_F32, true, ixf(NULL)) ==
              0,
          "no ids: nothing");
    printf("decision: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* Bad ids reaching the kernel (the host validates first; defence in depth):
 * skipped, flag set, nothing outside dst's buffer touched, the rest as the
 * CPU. Reference: the bad entry's id replaced by 79, a row no good id
 * reaches (good ids < 40), with a src value that leaves dst unchanged there
 * (set: dst's own value; add: 0 in an integer dtype, exact). */
static void test_bad_ids() {
    long before = g_checks, fails = g_fail;
    for (int ii = 0; ii < 4; ii++)
        for (int add = 0; add < 2; add++) {
            const int idt = IDTS[ii], dt = add ? WK_I32 : (ii % 2 ? WK_F32 : WK_F16);
            const int64_t dsh[2] = {80, 3}, ish[2] = {64, 3};
            int64_t nd, ni, ns;
            const wk_layout ld = make_view(dsh, 2, V_CONTIG, 0, &nd), li = make_view(ish, 2, V_CONTIG, 0, &ni);
            const wk_layout ls = make_view(ish, 2, V_CONTIG, 0, &ns);
            Buf ids = make_ids(idt, li, ni, 0, 40, I_RANDOM), good = ids;
            Buf src = make_data(ns, dt, false), rsrc = src;
            const int64_t guard = 16;
            Buf dst0 = make_data(nd + guard, dt, false); /* dst + guard elements after it */
            const long long bad = idt == WK_U8 ? 200 : idt == WK_U32 ? 80 : -1;
            static const int64_t spots[3][2] = {{5, 0}, {40, 0}, {63, 2}}; /* (k, line) */
            for (int s = 0; s < 3; s++) {
                const int64_t e = spots[s][0] * 3 + spots[s][1];
                wkc_store_i64(ids.data(), e, idt, bad);
                wkc_store_i64(good.data(), e, idt, 79);
                wkc_put_bits(rsrc.data(), e, dt, add ? 0 : wkc_raw_load(dst0.data(), 79 * 3 + spots[s][1], dt));
            }
            Buf a = dst0, b = dst0;
            const wk_status cst = wk__cpu_scatter(NULL, a.data(), &ld, good.data(), &li, (wk_dtype)idt, rsrc.data(),
                                                  &ls, 0, (wk_dtype)dt, add);
            CHECK(cst == WK_OK, "cpu");
            *err_flag() = 0;
            int rc = run_sorted(b, ld, ids, li, idt, src, ls, 0, dt, add);
            CHECK(rc == 0 && *err_flag() == WK_ERR_INDEX, "bad id: rc %d flag %d (%s)", rc, *err_flag(), dtn(idt));
            CHECK(same_data(a, b, dt, false), "bad id: the good entries (%s %s %s)", dtn(idt), dtn(dt),
                  add ? "add" : "set");
            CHECK(!memcmp(b.data() + nd * wkc_size(dt), dst0.data() + nd * wkc_size(dt), (size_t)guard * wkc_size(dt)),
                  "bad id: guard elements changed (%s)", dtn(idt));
        }
    printf("bad ids: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

int main() {
    if (emu_no_device()) return 0;
    clock_t t0 = clock();
    test_decision();
    test_bad_ids();
    test_shapes();
    test_matrix();
    test_nan_inputs();
    return emu_summary(t0);
}
