// The CUDA kernels' element code against the CPU backend, op by op, every
// dtype and layout kind. Built by ctest (tests/CMakeLists.txt) in host
// emulation: the kernels' per-element code, packing and grid-stride loops run
// on the CPU over a fake grid, so their semantics are checked on machines
// without a GPU. On a GPU the same file built with -DGPU_MODE (buffers in
// managed memory, a sync after every launch, linked with -lcudart) runs the
// real kernels: nvcc -std=c++17 -O2 -arch=sm_90 -DGPU_MODE -I include -I src
//   tests/cuda/test_cuda_kernels_emu.cu build/libwick.a -lcudart ... 
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/memory/kernels_copy.cu"
#include "cuda/elementwise/kernels_elementwise.cu"
#include "cuda/reduce/kernels_reduce.cu"
#include "cuda/indexing/kernels_index.cu"
#define EMU_RND_SEED 88172645463325252ull
#include "emu_harness.cuh"
#include <string>

extern "C" {
#include "cpu/elementwise/cpu_convert.h"
}

#ifdef GPU_MODE
static int32_t *g_err;
#endif

static const int NDT = WK_ELEM_DTYPE_COUNT;

/* ---------------- conversions ---------------- */
static void test_conversions() {
    long bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = wk_f16_to_f32((uint16_t)h), b = wkc_f16_to_f32((uint16_t)h);
        if (memcmp(&a, &b, 4)) bad++;
        a = wk_bf16_to_f32((uint16_t)h); b = wkc_bf16_to_f32((uint16_t)h);
        if (memcmp(&a, &b, 4)) bad++;
    }
    for (uint32_t h = 0; h < 256; h++) {
        float a = wk_f8e4m3_to_f32((uint8_t)h), b = wkc_f8e4m3_to_f32((uint8_t)h);
        if (memcmp(&a, &b, 4)) bad++;
    }
    CHECK(bad == 0, "narrow->f32 mismatches: %ld", bad);
    bad = 0;
    auto one = [&](uint32_t u) {
        float f; memcpy(&f, &u, 4);
        if (wk_f32_to_f16(f) != wkc_f32_to_f16(f)) bad++;
        if (wk_f32_to_bf16(f) != wkc_f32_to_bf16(f)) bad++;
        if (wk_f32_to_f8e4m3(f) != wkc_f32_to_f8e4m3(f)) bad++;
    };
    static const uint32_t lo[] = {0, 1, 2, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (uint32_t hi = 0; hi < 65536; hi++)
        for (uint32_t l : lo) one((hi << 16) | l);
    for (uint64_t u = 0; u < (1ull << 32); u += 101) one((uint32_t)u);
    CHECK(bad == 0, "f32->narrow mismatches: %ld", bad);
    /* f64 -> every dtype with the store rules (round to odd etc.) */
    bad = 0;
    for (int it = 0; it < 400000; it++) {
        double v;
        uint64_t r = rnd();
        switch (it % 5) {
        case 0: memcpy(&v, &r, 8); break;
        case 1: v = (double)(int64_t)r / (double)(1ull << (r % 60)); break;
        case 2: { float f; uint32_t u = (uint32_t)r; memcpy(&f, &u, 4); v = (double)f + ldexp((double)f, -25 - (int)(r >> 40) % 8) * ((r >> 33) & 1 ? 1 : -1); break; }
        case 3: v = (double)(int64_t)(r >> (r % 64)) * ((r & 1) ? 1 : -1); break;
        default: v = ((int64_t)(r % 2000001) - 1000000) / 4.0; break;
        }
        for (int dt = 0; dt < NDT; dt++) {
            unsigned char a[8] = {0}, b[8] = {0};
            wk__store_f64(a, 0, (wk_dtype)dt, v);
            wkc_store_f64(b, 0, dt, v);
            if (memcmp(a, b, 8)) { if (bad < 5) printf("store_f64 %s %.17g\n", dtn(dt), v); bad++; }
            { unsigned long long bits = wkc_bits_f64(dt, v); unsigned char c[8] = {0}; wkc_put_bits(c, 0, dt, bits);
              if (memcmp(a, c, 8)) { if (bad < 5) printf("bits_f64 %s %.17g\n", dtn(dt), v); bad++; } }
            { long long iv = (long long)rnd(); unsigned char c1[8] = {0}, c2[8] = {0};
              wk__store_i64(c1, 0, (wk_dtype)dt, iv); if (wkc_is_int(dt)) wkc_put_bits(c2, 0, dt, wkc_bits_i64(dt, iv));
              if (memcmp(c1, c2, 8)) bad++; }
            double la = wk__load_f64(a, 0, (wk_dtype)dt), lb = wkc_load_f64(a, 0, dt);
            if (memcmp(&la, &lb, 8) && !(la != la && lb != lb)) bad++;
            if (wk__load_i64(a, 0, (wk_dtype)dt) != wkc_load_i64(a, 0, dt)) bad++;
        }
    }
    static const double sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0x1p63, -0x1p63, 0x1p64, 4294967295.5, 4294967296.0, -0.5, 255.9, 256, -1, 65520, 65519.99, 448, 464, 463.99, 1e-8, 0x1p-24, 0x1p-25, 0x1p-10, 0x1p-9 * 0.5};
    for (double v : sp)
        for (int dt = 0; dt < NDT; dt++) {
            unsigned char a[8] = {0}, b[8] = {0};
            wk__store_f64(a, 0, (wk_dtype)dt, v);
            wkc_store_f64(b, 0, dt, v);
            if (memcmp(a, b, 8)) { printf("store_f64 special %s %.17g\n", dtn(dt), v); bad++; }
        }
    CHECK(bad == 0, "f64 load/store mismatches: %ld", bad);
}

/* ---------------- data and layouts ---------------- */
#define BUFN 1024
static Buf make_buf(int dt, bool tame) {
    int es = wkc_size(dt);
    Buf b((size_t)BUFN * es);
    static const double fspecial[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, NAN, INFINITY, -INFINITY, 1e30, -1e30, 1e-30, 65504, 448, 3.0, -7.25, 100.0};
    for (int i = 0; i < BUFN; i++) {
        uint64_t r = rnd();
        if (wkc_is_int(dt)) {
            if (tame && i % 3 == 0) { wkc_store_i64(b.data(), i, dt, (long long)(r % 7) - 3); continue; }
            if (i % 11 == 0) r = 0;
            if (i % 13 == 0) r = ~0ull;
            if (i % 17 == 0) r = 1ull << (8 * es - 1);
            if (i % 19 == 0) r = (1ull << (8 * es - 1)) - 1;
            wkc_store_i64(b.data(), i, dt, (long long)r);
        } else {
            double v;
            if (i % 4 == 0) v = fspecial[(r >> 8) % 20];
            else v = ((double)(int64_t)(r % 200001) - 100000) / (tame ? 20000.0 : 1000.0);
            if (tame && (v != v || v > 50 || v < -50)) v = 0.75;
            wkc_store_f64(b.data(), i, dt, v);
        }
    }
    return b;
}

struct Lay { const char *name; wk_layout l; };
static wk_layout mk(int rank, const int64_t *shape, const int64_t *stride, int64_t off) {
    wk_layout l; memset(&l, 0, sizeof l);
    l.rank = rank; l.offset = off;
    for (int d = 0; d < rank; d++) { l.shape[d] = shape[d]; l.stride[d] = stride[d]; }
    return l;
}

/* groups of layouts sharing one shape */
static std::vector<std::vector<Lay>> layout_groups() {
    std::vector<std::vector<Lay>> g;
    int64_t s3[3] = {3, 4, 5};
    {
        std::vector<Lay> v;
        int64_t c[3] = {20, 5, 1}; v.push_back({"contig", mk(3, s3, c, 0)});
        v.push_back({"contig+off", mk(3, s3, c, 7)});
        int64_t t[3] = {1, 3, 12}; v.push_back({"transposed", mk(3, s3, t, 2)});
        int64_t n[3] = {48, 8, 1}; v.push_back({"narrowed", mk(3, s3, n, 9)});
        int64_t b1[3] = {0, 5, 1}; v.push_back({"bcast0", mk(3, s3, b1, 3)});
        int64_t b2[3] = {5, 0, 1}; v.push_back({"bcast1", mk(3, s3, b2, 1)});
        int64_t b3[3] = {0, 0, 0}; v.push_back({"scalar-bcast", mk(3, s3, b3, 11)});
        int64_t st[3] = {40, 10, 2}; v.push_back({"step2", mk(3, s3, st, 5)});
        g.push_back(v);
    }
    {
        std::vector<Lay> v;
        v.push_back({"rank0", mk(0, NULL, NULL, 0)});
        v.push_back({"rank0+off", mk(0, NULL, NULL, 13)});
        g.push_back(v);
    }
    {
        std::vector<Lay> v;
        int64_t s[3] = {3, 0, 2}, c[3] = {0, 2, 1};
        v.push_back({"empty", mk(3, s, c, 0)});
        g.push_back(v);
    }
    {
        std::vector<Lay> v;
        int64_t s[8] = {2, 1, 3, 1, 2, 2, 1, 2};
        int64_t c[8] = {24, 24, 8, 8, 4, 2, 2, 1}; v.push_back({"r8-contig", mk(8, s, c, 0)});
        int64_t t[8] = {1, 99, 2, 7, 6, 60, 5, 24}; v.push_back({"r8-perm", mk(8, s, t, 1)});
        int64_t b[8] = {0, 3, 100, 0, 1, 0, 0, 300}; v.push_back({"r8-bcast", mk(8, s, b, 4)});
        g.push_back(v);
    }
    {
        std::vector<Lay> v;
        int64_t s[2] = {1, 300}, c[2] = {300, 1}; v.push_back({"row", mk(2, s, c, 0)});
        int64_t t[2] = {1, 3}; v.push_back({"row-step3", mk(2, s, t, 2)});
        g.push_back(v);
    }
    return g;
}

/* equal up to tolerance: exact for ints; floats: both NaN, or bits equal, or within ulps */
static bool close_elem(const unsigned char *a, const unsigned char *b, int dt, int64_t i, bool exact) {
    int es = wkc_size(dt);
    if (!memcmp(a + i * es, b + i * es, es)) return true;
    if (wkc_is_int(dt)) return false;
    double x = wkc_load_f64(a, i, dt), y = wkc_load_f64(b, i, dt);
    if (x != x && y != y) return true;
    if (exact) return false;
    if (dt == WK_F32 || dt == WK_F64) {
        double tol = dt == WK_F32 ? 4e-6 : 1e-13;
        if (isinf(x) || isinf(y)) return x == y;
        return fabs(x - y) <= tol * fmax(fabs(y), 1e-30) || fabs(x - y) < (dt == WK_F32 ? 1e-20 : 1e-300);
    }
    /* narrow: neighbouring codes */
    int64_t ca = es == 1 ? a[i] : (a[2 * i] | a[2 * i + 1] << 8), cb = es == 1 ? b[i] : (b[2 * i] | b[2 * i + 1] << 8);
    return llabs(ca - cb) <= 1;
}

static int compare(const char *what, const Buf &cpu, const Buf &emu,
                   int dt, int64_t n, bool exact) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!close_elem(cpu.data(), emu.data(), dt, i, exact)) {
            if (bad < 2 && g_fail < 40)
                printf("  %s [%lld]: cpu %.9g emu %.9g\n", what, (long long)i, wkc_load_f64(cpu.data(), i, dt), wkc_load_f64(emu.data(), i, dt));
            bad++;
        }
    return bad;
}

/* ---------------- reduce ----------------
 * wk__cu_reduce (emulation: the per-thread folds and the block tree of the
 * kernel, run on the host) against wk__cpu_reduce. Exact for integer ops,
 * max/min (by value: +-0 may come from either side), argmax/argmin, any/all;
 * float sum/mean/prod within a tolerance (different summation order: f32
 * per thread + f64 tree here, f32 lanes folded into f64 on the CPU). */
static bool red_close(const Buf &cpu, const Buf &emu, int odt, int64_t i, int op) {
    const unsigned char *a = cpu.data(), *b = emu.data();
    int es = wkc_size(odt);
    if (!memcmp(a + i * es, b + i * es, es)) return true;
    if (wkc_is_int(odt)) return false;
    double x = wkc_load_f64(a, i, odt), y = wkc_load_f64(b, i, odt);
    if (x != x && y != y) return true;
    if (op == WK_REDUCE_MAX || op == WK_REDUCE_MIN) return x == y;
    if (isinf(x) || isinf(y)) return x == y;
    double d = fabs(x - y), m = fmax(fabs(x), fabs(y));
    switch (odt) {
    case WK_F64: return d <= 1e-12 * m + 1e-12;
    case WK_F32: return d <= 2e-6 * m + 1e-4;
    default: {
        if (d <= 1e-2 * m + 2e-2) return true;
        int64_t ca = es == 1 ? a[i] : (a[2 * i] | a[2 * i + 1] << 8), cb = es == 1 ? b[i] : (b[2 * i] | b[2 * i + 1] << 8);
        return llabs(ca - cb) <= 1;
    }
    }
}

static void test_reduce(const std::vector<std::vector<Lay>> &groups, Buf *bufs, Buf *tame) {
    wk_cu_stream s = nullptr;
    std::vector<Lay> lays;
    for (auto &g : groups) for (auto &L : g) lays.push_back(L);
    /* longer reductions: more elements than threads per output */
    {
        int64_t s1[1] = {1000}, c1[1] = {1}; lays.push_back({"long1d", mk(1, s1, c1, 3)});
        int64_t s2[2] = {4, 250}, t2[2] = {1, 4}; lays.push_back({"long-transposed", mk(2, s2, t2, 0)});
        int64_t s3[3] = {2, 300, 3}, c3[3] = {1, 3, 0}; lays.push_back({"long-bcast", mk(3, s3, c3, 5)});
        int64_t s4[2] = {3, 333}, c4[2] = {1, 3}; lays.push_back({"long-narrow", mk(2, s4, c4, 1)});
        int64_t s5[1] = {1}, c5[1] = {1}; lays.push_back({"one", mk(1, s5, c5, 17)});
        int64_t s6[2] = {0, 4}, c6[2] = {4, 1}; lays.push_back({"empty0", mk(2, s6, c6, 0)});
    }
    long before = g_checks, fails = g_fail;
    for (auto &L : lays) {
        const wk_layout &l = L.l;
        int r = l.rank;
        /* masks: none, each single dim, all, and a few multi-dim patterns */
        std::vector<unsigned> masks;
        masks.push_back(0);
        for (int d = 0; d < r; d++) masks.push_back(1u << d);
        if (r > 0) masks.push_back((1u << r) - 1);
        if (r >= 2) { masks.push_back(1u | (1u << (r - 1))); masks.push_back(((1u << r) - 1) & ~1u); }
        if (r >= 4) { masks.push_back(0x55u & ((1u << r) - 1)); masks.push_back(0xaau & ((1u << r) - 1)); }
        for (unsigned mk_ : masks) {
            bool mask[WK_MAX_RANK] = {false};
            int64_t nout = 1;
            for (int d = 0; d < r; d++) { mask[d] = (mk_ >> d) & 1; if (!mask[d]) nout *= l.shape[d]; }
            for (int dt = 0; dt < NDT; dt++)
                for (int op = 0; op < WK_REDUCE_COUNT; op++) {
                    int odt = op == WK_REDUCE_ARGMAX || op == WK_REDUCE_ARGMIN ? WK_U32
                            : op == WK_REDUCE_ANY || op == WK_REDUCE_ALL ? WK_U8 : dt;
                    if (op == WK_REDUCE_MEAN && wkc_is_int(dt)) continue; /* rejected by the dispatcher */
                    bool arith = op == WK_REDUCE_SUM || op == WK_REDUCE_MEAN || op == WK_REDUCE_PROD;
                    /* float sums/products on tame data (order-dependent overflow/cancellation otherwise) */
                    const Buf &src = (arith && !wkc_is_int(dt)) ? tame[dt] : bufs[dt];
                    int es = wkc_size(odt);
                    Buf a((size_t)(nout + 1) * es, 0x5a), b((size_t)(nout + 1) * es, 0x5a);
                    wk__cpu_reduce(NULL, (wk_reduce_op)op, src.data(), &l, (wk_dtype)dt, mask, a.data());
                    CHECK(wk__cu_reduce(s, (wk_reduce_op)op, src.data(), cv(l), (wk_dtype)dt, mask, b.data()) == 0, "reduce rc");
                    SYNC();
                    int bad = 0;
                    for (int64_t i = 0; i < nout; i++)
                        if (!red_close(a, b, odt, i, op)) {
                            if (bad < 2 && g_fail < 40)
                                printf("  reduce[%lld]: cpu %.9g emu %.9g\n", (long long)i, wkc_load_f64(a.data(), i, odt), wkc_load_f64(b.data(), i, odt));
                            bad++;
                        }
                    CHECK(bad == 0, "reduce op %d %s mask %#x %s: %d mismatches", op, L.name, mk_, dtn(dt), bad);
                    CHECK(!memcmp(a.data() + nout * es, b.data() + nout * es, es), "reduce wrote past its output");
                }
        }
    }
    /* ties: argmax/argmin pick the first index, also across threads/tree */
    {
        for (int dt = 0; dt < NDT; dt++) {
            int es = wkc_size(dt);
            Buf x(1000 * es);
            for (int i = 0; i < 1000; i++) wkc_store_f64(x.data(), i, dt, (i % 97 == 0 || i == 777) ? 3.0 : (i % 5 == 0 ? -2.0 : 1.0));
            if (!wkc_is_int(dt)) { wkc_store_f64(x.data(), 700, dt, NAN); wkc_store_f64(x.data(), 300, dt, NAN); }
            int64_t s1[1] = {1000}, c1[1] = {1};
            wk_layout l = mk(1, s1, c1, 0);
            bool mask[1] = {true};
            for (int op = WK_REDUCE_MAX; op <= WK_REDUCE_ARGMIN; op++) {
                int odt = op >= WK_REDUCE_ARGMAX ? WK_U32 : dt;
                Buf a(8, 0), b(8, 0);
                wk__cpu_reduce(NULL, (wk_reduce_op)op, x.data(), &l, (wk_dtype)dt, mask, a.data());
                CHECK(wk__cu_reduce(s, (wk_reduce_op)op, x.data(), cv(l), (wk_dtype)dt, mask, b.data()) == 0, "reduce rc");
                SYNC();
                CHECK(red_close(a, b, odt, 0, op), "ties op %d %s: cpu %.9g emu %.9g", op, dtn(dt), wkc_load_f64(a.data(), 0, odt), wkc_load_f64(b.data(), 0, odt));
            }
            /* without NaNs the first 3.0 (index 0) / first -2.0 (index 5) */
            if (!wkc_is_int(dt)) { wkc_store_f64(x.data(), 700, dt, 1.0); wkc_store_f64(x.data(), 300, dt, 1.0); }
            Buf b(8, 0);
            wk__cu_reduce(s, WK_REDUCE_ARGMAX, x.data(), cv(l), (wk_dtype)dt, mask, b.data()); SYNC();
            CHECK(*(uint32_t *)b.data() == 0, "argmax first tie %s: %u", dtn(dt), *(uint32_t *)b.data());
            wk__cu_reduce(s, WK_REDUCE_ARGMIN, x.data(), cv(l), (wk_dtype)dt, mask, b.data()); SYNC();
            CHECK(*(uint32_t *)b.data() == 5, "argmin first tie %s: %u", dtn(dt), *(uint32_t *)b.data());
        }
    }
    /* bad arguments */
    {
        wk_cu_view v = cv(groups[0][0].l);
        bool mask[3] = {true, false, false};
        CHECK(wk__cu_reduce(s, (wk_reduce_op)99, NULL, v, WK_F32, mask, NULL) != 0, "bad reduce op");
        CHECK(wk__cu_reduce(s, WK_REDUCE_SUM, NULL, v, (wk_dtype)99, mask, NULL) != 0, "bad reduce dtype");
        CHECK(wk__cu_reduce(s, WK_REDUCE_SUM, NULL, v, WK_F32, NULL, NULL) != 0, "no mask");
    }
    printf("reduce: %ld checks, %ld failures\n", g_checks - before, g_fail - fails);
}

/* ---------------- indexing ----------------
 * index_select / gather / scatter (set, add) / index_add against wk__cpu_*:
 * every dtype, index dtypes u8/u32/i32/i64, every dim of a rank-3 shape,
 * src / dst / ids contiguous, transposed, narrowed (offset, padded strides)
 * and broadcast (a 0 stride), duplicates in the ids, empty ids; whole
 * buffers compared bit for bit (the CUDA order equals the CPU's, additions
 * included). Bad ids: wk__cu_index_check records the first bad row-major
 * position (with the id, size, op, dim and its gate) in the record, the CPU rejects the same ids with WK_ERR_INDEX leaving dst
 * untouched, and the write kernels run anyway skip the bad ids (no out of
 * bounds access, err flag = WK_ERR_INDEX). */
static const int IDTS[4] = {WK_U8, WK_U32, WK_I32, WK_I64};

/* kind: 0 contiguous, 1 transposed (column-major storage), 2 narrowed
 * (padded storage, offset), 3 broadcast (0 stride on dim bdim) */
static wk_layout ix_view3(const int64_t *sh, int kind, int bdim) {
    int64_t st[3], off = 0;
    switch (kind) {
    case 1: st[0] = 1; st[1] = sh[0]; st[2] = sh[0] * sh[1]; break;
    case 2: st[2] = 2; st[1] = 2 * (sh[2] + 1); st[0] = st[1] * (sh[1] + 2); off = 5; break;
    default: st[2] = 1; st[1] = sh[2]; st[0] = sh[1] * sh[2]; break;
    }
    if (kind == 3) st[bdim] = 0;
    return mk(3, sh, st, off);
}
static wk_layout ix_view1(int64_t n, int kind) {
    int64_t sh[1] = {n}, st[1] = {kind == 2 ? 3 : kind == 3 ? 0 : 1};
    return mk(1, sh, st, kind == 2 ? 4 : 0);
}
static Buf ix_ids(int idt, int64_t size) {
    Buf b((size_t)BUFN * wkc_size(idt));
    for (int i = 0; i < BUFN; i++) wkc_store_i64(b.data(), i, idt, size > 0 ? (long long)(rnd() % (uint64_t)size) : 0);
    return b;
}
static int32_t *ix_flag() {
#ifdef GPU_MODE
    return g_err;
#else
    static int32_t f;
    return &f;
#endif
}
static bool same_buf(const Buf &a, const Buf &b) { return a.size() == b.size() && !memcmp(a.data(), b.data(), a.size()); }

static void test_index(Buf *bufs) {
    wk_cu_stream s = nullptr;
    const int64_t SH[3] = {4, 5, 6};
    long before = g_checks;
    for (int dt = 0; dt < NDT; dt++) {
        const int es = wkc_size(dt);
        if (es == 0) continue;
        for (int ii = 0; ii < 4; ii++) {
            const int idt = IDTS[ii];
            for (int dim = 0; dim < 3; dim++) {
                Buf ids = ix_ids(idt, SH[dim]);
                /* index_select: src kinds x ids kinds x lengths (0, 1, 7) */
                for (int sk = 0; sk < 4; sk++)
                    for (int ik = 0; ik < 4; ik++)
                        for (int64_t m : {(int64_t)0, (int64_t)1, (int64_t)7}) {
                            wk_layout ls = ix_view3(SH, sk, (dim + 1) % 3), li = ix_view1(m, ik);
                            int64_t osh[3] = {SH[0], SH[1], SH[2]};
                            osh[dim] = m;
                            int64_t n = osh[0] * osh[1] * osh[2];
                            Buf a((size_t)BUFN * es, 0xAB), b((size_t)BUFN * es, 0xAB);
                            wk_status cst = wk__cpu_index_select(NULL, bufs[dt].data(), &ls, ids.data(), &li, (wk_dtype)idt, dim, a.data(), (wk_dtype)dt);
                            *ix_flag() = 0;
                            int rc = wk__cu_index_select(s, bufs[dt].data(), cv(ls), ids.data(), cv(li), (wk_dtype)idt, dim, b.data(), (wk_dtype)dt, ixf(ix_flag()));
                            SYNC();
                            CHECK(cst == WK_OK && rc == 0 && *ix_flag() == 0, "index_select rc %s %s dim %d sk %d ik %d", dtn(dt), dtn(idt), dim, sk, ik);
                            CHECK(same_buf(a, b), "index_select %s %s dim %d sk %d ik %d m %lld (n %lld)", dtn(dt), dtn(idt), dim, sk, ik, (long long)m, (long long)n);
                        }
                /* gather: ids shape = src's with dim -> 3 and the next dim narrower */
                for (int sk = 0; sk < 4; sk++)
                    for (int ik = 0; ik < 4; ik++)
                        for (int empty = 0; empty < 2; empty++) {
                            int64_t ish[3] = {SH[0], SH[1], SH[2]};
                            ish[dim] = empty ? 0 : 3;
                            ish[(dim + 1) % 3] -= 1;
                            wk_layout ls = ix_view3(SH, sk, (dim + 2) % 3), li = ix_view3(ish, ik, (dim + 1 + ik) % 3);
                            Buf a((size_t)BUFN * es, 0xCD), b((size_t)BUFN * es, 0xCD);
                            wk_status cst = wk__cpu_gather(NULL, bufs[dt].data(), &ls, ids.data(), &li, (wk_dtype)idt, dim, a.data(), (wk_dtype)dt);
                            *ix_flag() = 0;
                            int rc = wk__cu_gather(s, bufs[dt].data(), cv(ls), ids.data(), cv(li), (wk_dtype)idt, dim, b.data(), (wk_dtype)dt, ixf(ix_flag()));
                            SYNC();
                            CHECK(cst == WK_OK && rc == 0 && *ix_flag() == 0, "gather rc %s %s dim %d", dtn(dt), dtn(idt), dim);
                            CHECK(same_buf(a, b), "gather %s %s dim %d sk %d ik %d empty %d", dtn(dt), dtn(idt), dim, sk, ik, empty);
                        }
                /* scatter / scatter_add: dst kinds (broadcast dst = overlapping: one thread) x src kinds x ids kinds */
                for (int add = 0; add < 2; add++)
                    for (int dk = 0; dk < 4; dk++)
                        for (int sk = 0; sk < 4; sk++)
                            for (int ik = 0; ik < 4; ik++) {
                                if (sk != 0 && ik != 0 && dk != 0 && sk != ik) continue; /* keep the count sane */
                                int64_t ish[3] = {SH[0], SH[1], SH[2]};
                                ish[dim] = 5;
                                ish[(dim + 2) % 3] -= 1;
                                wk_layout ld = ix_view3(SH, dk, (dim + 1) % 3);
                                wk_layout li = ix_view3(ish, ik, (dim + 1) % 3);
                                wk_layout lsrc = ix_view3(ish, sk, (dim + 2) % 3);
                                Buf a = bufs[dt], b = bufs[dt];
                                wk_status cst = wk__cpu_scatter(NULL, a.data(), &ld, ids.data(), &li, (wk_dtype)idt, bufs[dt].data() + 64 * es, &lsrc, dim, (wk_dtype)dt, add);
                                *ix_flag() = 0;
                                int rc = wk__cu_scatter(s, b.data(), cv(ld), ids.data(), cv(li), (wk_dtype)idt, bufs[dt].data() + 64 * es, cv(lsrc), dim, (wk_dtype)dt, add, ixf(ix_flag()));
                                SYNC();
                                CHECK(cst == WK_OK && rc == 0 && *ix_flag() == 0, "scatter rc %s %s dim %d", dtn(dt), dtn(idt), dim);
                                CHECK(same_buf(a, b), "scatter add %d %s %s dim %d dk %d sk %d ik %d", add, dtn(dt), dtn(idt), dim, dk, sk, ik);
                            }
                /* index_add: dst kinds x src kinds x ids kinds, lengths 0 and 9 (duplicates) */
                for (int dk = 0; dk < 4; dk++)
                    for (int sk = 0; sk < 4; sk++)
                        for (int ik = 0; ik < 4; ik++)
                            for (int64_t m : {(int64_t)0, (int64_t)9}) {
                                int64_t ssh[3] = {SH[0], SH[1], SH[2]};
                                ssh[dim] = m;
                                wk_layout ld = ix_view3(SH, dk, (dim + 2) % 3);
                                wk_layout lsrc = ix_view3(ssh, sk, (dim + 1) % 3);
                                wk_layout li = ix_view1(m, ik);
                                Buf a = bufs[dt], b = bufs[dt];
                                wk_status cst = wk__cpu_index_add(NULL, a.data(), &ld, ids.data(), &li, (wk_dtype)idt, bufs[dt].data() + 32 * es, &lsrc, dim, (wk_dtype)dt);
                                *ix_flag() = 0;
                                int rc = wk__cu_index_add(s, b.data(), cv(ld), ids.data(), cv(li), (wk_dtype)idt, bufs[dt].data() + 32 * es, cv(lsrc), dim, (wk_dtype)dt, ixf(ix_flag()));
                                SYNC();
                                CHECK(cst == WK_OK && rc == 0 && *ix_flag() == 0, "index_add rc %s %s dim %d", dtn(dt), dtn(idt), dim);
                                CHECK(same_buf(a, b), "index_add %s %s dim %d dk %d sk %d ik %d m %lld", dtn(dt), dtn(idt), dim, dk, sk, ik, (long long)m);
                            }
            }
        }
    }
    /* bad indices: size itself, -1 (signed), 255 (u8) at a chosen position */
    for (int ii = 0; ii < 4; ii++) {
        const int idt = IDTS[ii], dt = WK_F32, es = 4;
        for (int dim = 0; dim < 3; dim++)
            for (int ik = 0; ik < 3; ik++)
                for (int which = 0; which < 2; which++) {
                    long long badv = which == 0 ? SH[dim] : (idt == WK_U8 ? 255 : idt == WK_U32 ? 0xFFFFFFFFll : -1);
                    /* 3-D ids for gather / scatter */
                    int64_t ish[3] = {SH[0], SH[1], SH[2]};
                    ish[dim] = 3;
                    wk_layout li = ix_view3(ish, ik, 0);
                    Buf ids = ix_ids(idt, SH[dim]);
                    int64_t n = ish[0] * ish[1] * ish[2], pos = (int64_t)(rnd() % (uint64_t)n), pos2 = pos + 1 < n ? pos + 1 : pos;
                    int64_t off = li.offset + wk__unravel(li.shape, li.stride, 3, pos);
                    int64_t off2 = li.offset + wk__unravel(li.shape, li.stride, 3, pos2);
                    wkc_store_i64(ids.data(), off2, idt, badv); /* a later bad one too: the first is reported */
                    wkc_store_i64(ids.data(), off, idt, badv);
                    /* the record (managed in GPU_MODE): first bad position, its id, size, op, dim, the gate */
                    Buf recb(sizeof(wk_cu_ixrec), 0);
                    wk_cu_ixrec *rec = (wk_cu_ixrec *)(void *)recb.data();
                    wk_cu_ixflag fl = ixf(ix_flag());
                    fl.rec = rec;
                    fl.seq = 41;
                    *ix_flag() = 0;
                    int rc = wk__cu_index_check(s, ids.data(), cv(li), (wk_dtype)idt, SH[dim], WK_CU_IX_SCATTER, dim, fl);
                    SYNC();
                    unsigned long long got = rec->pos;
                    CHECK(rc == 0 && rec->owner == 41 && got == (unsigned long long)pos, "index_check %s dim %d ik %d: pos %lld got %llu", dtn(idt), dim, ik, (long long)pos, got);
                    CHECK(rec->id == badv && rec->size == SH[dim] && rec->op == WK_CU_IX_SCATTER && rec->dim == dim && rec->bad_seq == 41 && *ix_flag() == WK_ERR_INDEX,
                          "index_check record %s: id %lld size %lld op %d dim %d gate %llu flag %d", dtn(idt), rec->id, rec->size, rec->op, rec->dim, rec->bad_seq, *ix_flag());
                    CHECK(wkc_load_i64(ids.data(), off, idt) == badv, "bad id stored");
                    /* the CPU rejects the ids and leaves dst untouched; the backend (check first, then write) launches nothing */
                    wk_layout ld = ix_view3(SH, 0, 0), lsrc = ix_view3(ish, 0, 0);
                    for (int add = 0; add < 2; add++) {
                        Buf a = bufs[dt], b = bufs[dt];
                        wk_clear_error();
                        CHECK(wk__cpu_scatter(NULL, a.data(), &ld, ids.data(), &li, (wk_dtype)idt, bufs[dt].data(), &lsrc, dim, (wk_dtype)dt, add) == WK_ERR_INDEX, "cpu scatter bad");
                        CHECK(same_buf(a, bufs[dt]), "cpu scatter bad: dst touched");
                        /* the write kernel alone: skips the bad ids, flags them */
                        *ix_flag() = 0;
                        rc = wk__cu_scatter(s, b.data(), cv(ld), ids.data(), cv(li), (wk_dtype)idt, bufs[dt].data(), cv(lsrc), dim, (wk_dtype)dt, add, ixf(ix_flag()));
                        SYNC();
                        CHECK(rc == 0 && *ix_flag() == WK_ERR_INDEX, "scatter kernel flag %s", dtn(idt));
                    }
                    Buf g((size_t)BUFN * es, 0);
                    *ix_flag() = 0;
                    rc = wk__cu_gather(s, bufs[dt].data(), cv(ld), ids.data(), cv(li), (wk_dtype)idt, dim, g.data(), (wk_dtype)dt, ixf(ix_flag()));
                    SYNC();
                    CHECK(rc == 0 && *ix_flag() == WK_ERR_INDEX, "gather kernel flag %s", dtn(idt));
                    CHECK(wk__cpu_gather(NULL, bufs[dt].data(), &ld, ids.data(), &li, (wk_dtype)idt, dim, g.data(), (wk_dtype)dt) == WK_ERR_INDEX, "cpu gather bad");
                    /* 1-D ids: index_select / index_add */
                    wk_layout l1 = ix_view1(6, ik);
                    Buf ids1 = ix_ids(idt, SH[dim]);
                    int64_t p1 = (int64_t)(rnd() % 6);
                    wkc_store_i64(ids1.data(), l1.offset + p1 * l1.stride[0], idt, badv);
                    memset(recb.data(), 0, sizeof(wk_cu_ixrec));
                    rc = wk__cu_index_check(s, ids1.data(), cv(l1), (wk_dtype)idt, SH[dim], WK_CU_IX_INDEX_ADD, dim, fl);
                    SYNC();
                    got = rec->pos;
                    int64_t want = ik == 3 ? 0 : p1;
                    CHECK(rc == 0 && got == (unsigned long long)want, "index_check 1-D %s ik %d: %llu want %lld", dtn(idt), ik, got, (long long)want);
                    int64_t osh[3] = {SH[0], SH[1], SH[2]};
                    osh[dim] = 6;
                    wk_layout ls6 = ix_view3(osh, 0, 0);
                    Buf a = bufs[dt], b = bufs[dt];
                    CHECK(wk__cpu_index_add(NULL, a.data(), &ld, ids1.data(), &l1, (wk_dtype)idt, bufs[dt].data(), &ls6, dim, (wk_dtype)dt) == WK_ERR_INDEX, "cpu index_add bad");
                    CHECK(same_buf(a, bufs[dt]), "cpu index_add bad: dst touched");
                    *ix_flag() = 0;
                    rc = wk__cu_index_add(s, b.data(), cv(ld), ids1.data(), cv(l1), (wk_dtype)idt, bufs[dt].data(), cv(ls6), dim, (wk_dtype)dt, ixf(ix_flag()));
                    SYNC();
                    CHECK(rc == 0 && *ix_flag() == WK_ERR_INDEX, "index_add kernel flag");
                    *ix_flag() = 0;
                    rc = wk__cu_index_select(s, bufs[dt].data(), cv(ld), ids1.data(), cv(l1), (wk_dtype)idt, dim, g.data(), (wk_dtype)dt, ixf(ix_flag()));
                    SYNC();
                    CHECK(rc == 0 && *ix_flag() == WK_ERR_INDEX, "index_select kernel flag");
                }
    }
    /* bad arguments */
    {
        wk_layout l = ix_view3(SH, 0, 0), l1 = ix_view1(3, 0);
        CHECK(wk__cu_index_select(s, NULL, cv(l), NULL, cv(l1), WK_F32, 0, NULL, WK_F32, ixf(NULL)) != 0, "bad idt");
        CHECK(wk__cu_gather(s, NULL, cv(l), NULL, cv(l), WK_I64, 3, NULL, WK_F32, ixf(NULL)) != 0, "bad dim");
        CHECK(wk__cu_index_check(s, NULL, cv(l1), WK_F16, 3, WK_CU_IX_SELECT, 0, ixf(NULL)) != 0, "bad check idt");
    }
    wk_clear_error();
    printf("indexing: %ld checks\n", g_checks - before);
}

int main() {
#ifdef GPU_MODE
    if (cudaMallocManaged((void **)&g_err, sizeof(int32_t)) != cudaSuccess) { printf("no CUDA device: skipped\n"); return 0; }
#endif
    setenv("WICK_ISA", "scalar", 1); /* CPU f32 math = libm rounded once, the closest to CUDA's */
    test_conversions();
    printf("conversions: %ld checks, %ld failures\n", g_checks, g_fail);
    auto groups = layout_groups();
    wk_cu_stream s = nullptr;
    Buf bufs[NDT], tame[NDT];
    for (int dt = 0; dt < NDT; dt++) { bufs[dt] = make_buf(dt, false); tame[dt] = make_buf(dt, true); }

    for (auto &grp : groups)
        for (auto &L : grp) {
            const wk_layout &l = L.l;
            int64_t n = numel(l);
            wk_layout lc; wk__layout_contiguous(&lc, l.shape, l.rank, 0);
            /* fill through the view and copy into a narrowed-ish dst view (use l as dst, contiguous as src) */
            for (int dt = 0; dt < NDT; dt++) {
                int es = wkc_size(dt);
                static const double fv[] = {1.5, -3.7, 1e10, NAN, -INFINITY, 300, 65520, -0.0, 2.5};
                for (double v : fv) {
                    Buf a(BUFN * es, 0x5a), b(BUFN * es, 0x5a);
                    wk__cpu_fill(NULL, a.data(), &l, (wk_dtype)dt, v);
                    CHECK(wk__cu_fill(s, b.data(), cv(l), (wk_dtype)dt, v) == 0, "fill rc");
                    SYNC();
                    CHECK(a == b, "fill %s %s %g", L.name, dtn(dt), v);
                }
                if (grp.size() && l.stride[0] != 0 && strcmp(L.name, "r8-bcast") && strcmp(L.name, "bcast0") && strcmp(L.name, "bcast1") && strcmp(L.name, "scalar-bcast")) {
                    Buf a(BUFN * es, 0x33), b(BUFN * es, 0x33);
                    for (auto &S : grp) { /* src any layout of the group, dst l */
                        wk__cpu_copy_strided(NULL, bufs[dt].data(), &S.l, a.data(), &l, (wk_dtype)dt);
                        CHECK(wk__cu_copy_strided(s, bufs[dt].data(), cv(S.l), b.data(), cv(l), (wk_dtype)dt) == 0, "copy rc");
                        SYNC();
                        CHECK(a == b, "copy %s <- %s %s", L.name, S.name, dtn(dt));
                    }
                }
                /* cast to every dtype */
                for (int dd = 0; dd < NDT; dd++) {
                    int ds = wkc_size(dd);
                    Buf a(BUFN * ds, 0), b(BUFN * ds, 0);
                    wk__cpu_cast(NULL, bufs[dt].data(), &l, (wk_dtype)dt, a.data(), (wk_dtype)dd);
                    CHECK(wk__cu_cast(s, bufs[dt].data(), cv(l), (wk_dtype)dt, b.data(), (wk_dtype)dd) == 0, "cast rc");
                    SYNC();
                    CHECK(a == b, "cast %s %s->%s", L.name, dtn(dt), dtn(dd));
                }
                /* unary */
                for (int op = 0; op < WK_UNARY_COUNT; op++) {
                    if (wkc_is_int(dt) && !(op == WK_ABS || op == WK_NEG || op == WK_SQR || op == WK_RELU || op == WK_SIGN ||
                                            op == WK_CEIL || op == WK_FLOOR || op == WK_ROUND))
                        continue;
                    bool exact = op == WK_ABS || op == WK_NEG || op == WK_SQR || op == WK_RELU || op == WK_SIGN ||
                                 op == WK_CEIL || op == WK_FLOOR || op == WK_ROUND || op == WK_RECIP || op == WK_SQRT;
                    Buf a(BUFN * es, 0), b(BUFN * es, 0);
                    wk__cpu_unary(NULL, (wk_unary_op)op, bufs[dt].data(), &l, a.data(), (wk_dtype)dt);
                    CHECK(wk__cu_unary(s, (wk_unary_op)op, bufs[dt].data(), cv(l), b.data(), (wk_dtype)dt) == 0, "unary rc");
                    SYNC();
                    int bad = compare(wk_unary_name((wk_unary_op)op), a, b, dt, n, exact);
                    CHECK(bad == 0, "unary %s %s %s: %d mismatches", wk_unary_name((wk_unary_op)op), L.name, dtn(dt), bad);
                }
                /* param ops */
                {
                    struct { int op; double a, b; bool exact; const char *nm; } P[] = {
                        {0, 1.75, -3.25, true, "affine"}, {0, -0.1, 1e3, true, "affine2"}, {0, 1e12, 5, true, "affine3"},
                        {1, 2.0, 0, false, "powf2"}, {1, 0.5, 0, false, "powf.5"}, {1, -1.3, 0, false, "powf-1.3"},
                        {2, 0.7, 0, false, "elu"}, {3, -2.5, 3.5, true, "clamp"}, {3, 0.5, 0.7, true, "clamp2"},
                        {3, -1e20, 1e20, true, "clamp3"}, {3, 3, -3, true, "clamp-inv"}};
                    for (auto &q : P) {
                        Buf a(BUFN * es, 0), b(BUFN * es, 0);
                        const void *src = (q.op == 1 && wkc_is_int(dt)) ? tame[dt].data() : bufs[dt].data();
                        int rc;
                        switch (q.op) {
                        case 0: wk__cpu_affine(NULL, src, &l, a.data(), (wk_dtype)dt, q.a, q.b); rc = wk__cu_affine(s, src, cv(l), b.data(), (wk_dtype)dt, q.a, q.b); break;
                        case 1: wk__cpu_powf(NULL, src, &l, a.data(), (wk_dtype)dt, q.a); rc = wk__cu_powf(s, src, cv(l), b.data(), (wk_dtype)dt, q.a); break;
                        case 2: wk__cpu_elu(NULL, src, &l, a.data(), (wk_dtype)dt, q.a); rc = wk__cu_elu(s, src, cv(l), b.data(), (wk_dtype)dt, q.a); break;
                        default: wk__cpu_clamp(NULL, src, &l, a.data(), (wk_dtype)dt, q.a, q.b); rc = wk__cu_clamp(s, src, cv(l), b.data(), (wk_dtype)dt, q.a, q.b); break;
                        }
                        SYNC();
                        CHECK(rc == 0, "param rc");
                        int bad = compare(q.nm, a, b, dt, n, q.exact);
                        CHECK(bad == 0, "%s %s %s: %d mismatches", q.nm, L.name, dtn(dt), bad);
                    }
                }
                /* binary, cmp, where: every pair of layouts in the group */
                for (auto &B : grp) {
                    for (int op = 0; op < WK_BINARY_COUNT; op++) {
                        Buf a(BUFN * es, 0), b(BUFN * es, 0);
                        const void *y = (op == WK_DIV && wkc_is_int(dt)) ? tame[dt].data() : bufs[dt].data();
                        wk_status st = wk__cpu_binary(NULL, (wk_binary_op)op, bufs[dt].data(), &l, y, &B.l, a.data(), (wk_dtype)dt);
#ifdef GPU_MODE
                        int32_t &err = *g_err;
#else
                        int32_t err;
#endif
                        err = 0;
                        CHECK(wk__cu_binary(s, (wk_binary_op)op, bufs[dt].data(), cv(l), y, cv(B.l), b.data(), (wk_dtype)dt, &err) == 0, "binary rc");
                        SYNC();
                        CHECK((int)st == err, "error flag %s %s %s %s: cpu %d emu %d", wk_binary_name((wk_binary_op)op), L.name, B.name, dtn(dt), (int)st, err);
                        CHECK(err == 0 || err == (op == WK_POW ? WK_ERR_ARG : WK_ERR_DIV_ZERO), "err value");
                        /* pow is libm-class (powf on a GPU is a few ulp from glibc) */
                        int bad = compare(wk_binary_name((wk_binary_op)op), a, b, dt, n, op != WK_POW);
                        CHECK(bad == 0, "binary %s %s,%s %s: %d mismatches", wk_binary_name((wk_binary_op)op), L.name, B.name, dtn(dt), bad);
                    }
                    for (int op = 0; op < WK_CMP_COUNT; op++) {
                        Buf a(BUFN, 7), b(BUFN, 7);
                        wk__cpu_cmp(NULL, (wk_cmp_op)op, bufs[dt].data(), &l, tame[dt].data(), &B.l, a.data(), (wk_dtype)dt);
                        CHECK(wk__cu_cmp(s, (wk_cmp_op)op, bufs[dt].data(), cv(l), tame[dt].data(), cv(B.l), b.data(), (wk_dtype)dt) == 0, "cmp rc");
                        SYNC();
                        CHECK(a == b, "cmp %s %s,%s %s", wk_cmp_name((wk_cmp_op)op), L.name, B.name, dtn(dt));
                    }
                    for (auto &C : grp)
                        for (int cdt = 0; cdt < NDT; cdt++) {
                            if (&C != &grp[0] && cdt != WK_U8 && cdt != WK_F32 && cdt != WK_I64) continue;
                            Buf a(BUFN * es, 1), b(BUFN * es, 1);
                            wk__cpu_where(NULL, tame[cdt].data(), &C.l, (wk_dtype)cdt, bufs[dt].data(), &l, tame[dt].data(), &B.l, a.data(), (wk_dtype)dt);
                            CHECK(wk__cu_where(s, tame[cdt].data(), cv(C.l), (wk_dtype)cdt, bufs[dt].data(), cv(l), tame[dt].data(), cv(B.l), b.data(), (wk_dtype)dt) == 0, "where rc");
                            SYNC();
                            CHECK(a == b, "where c=%s(%s) a=%s b=%s %s", C.name, dtn(cdt), L.name, B.name, dtn(dt));
                        }
                }
            }
        }
    test_reduce(groups, bufs, tame);
    test_index(bufs);
    /* 64-bit unravel path agrees with the 32-bit one */
    {
        auto &grp = groups[3];
        for (auto &L : grp) {
            wk_layout lc; wk__layout_contiguous(&lc, L.l.shape, L.l.rank, 0);
            wk_cu_view a = cv(lc), b = cv(L.l);
            const wk_cu_view *v[2] = {&a, &b};
            wkc_pack<2> p32, p64;
            int64_t n = wkc_pack_views<2>(&p32, v);
            p64 = p32; p64.n = (int64_t)1 << 40;
            for (int64_t i = 0; i < n; i++) {
                int64_t o1[2], o2[2];
                wkc_offsets(p32, i, o1); wkc_offsets(p64, i, o2);
                CHECK(o1[0] == o2[0] && o1[1] == o2[1] && o1[0] == i && o1[1] == wk__unravel(L.l.shape, L.l.stride, L.l.rank, i) + L.l.offset, "unravel %s %lld", L.name, (long long)i);
            }
        }
    }
    /* bad arguments */
    {
        wk_cu_view v = cv(groups[0][0].l);
        CHECK(wk__cu_unary(s, (wk_unary_op)99, NULL, v, NULL, WK_F32) != 0, "bad op");
        CHECK(wk__cu_unary(s, WK_EXP, NULL, v, NULL, (wk_dtype)99) != 0, "bad dtype");
        CHECK(wk__cu_binary(s, (wk_binary_op)99, NULL, v, NULL, v, NULL, WK_F32, NULL) != 0, "bad binop");
        CHECK(wk__cu_cmp(s, (wk_cmp_op)99, NULL, v, NULL, v, NULL, WK_F32) != 0, "bad cmp");
        wk_cu_view w = v; w.rank = 9;
        CHECK(wk__cu_fill(s, NULL, w, WK_F32, 0) != 0, "bad rank");
        wk_cu_view x = v; x.shape[1] = 5;
        CHECK(wk__cu_binary(s, WK_ADD, NULL, v, NULL, x, NULL, WK_F32, NULL) != 0, "shape mismatch");
        SYNC();
        CHECK(wk__cu_cast(s, NULL, v, WK_F32, NULL, (wk_dtype)-1) != 0, "bad cast dtype");
    }
    return emu_summary();
}
