// The CUDA convolutions (src/cuda/conv/cuda_conv.c's algorithm) against the CPU
// backend's wk__cpu_conv*, without a GPU: the conv kernels (im2col, col2im,
// pack) run in host emulation (WKC_HOST_EMULATION: the per-thread code over
// a fake grid of 7 threads), the GEMMs run as wk__cpu_matmul with EXACTLY the
// layouts cuda_conv_plan.c hands the backend's matmul entry (cuBLAS on a
// GPU), chunk by chunk as cuda_conv.c loops. So this proves the GPU path up
// to cuBLAS itself. Covers 1-d / 2-d, forward / transposed, groups 1/2/4 and
// depthwise, stride, dilation, padding, output_padding, batch 1 and 3,
// permuted / narrowed / offset / 0-stride-batch inputs and weights, 1x1
// kernels (the no-im2col path), forced tiny chunk limits, an empty batch,
// all four dtypes.
// Tolerances: the GEMM here (wk__cpu_matmul) may sum in a different order
// than the CPU conv's GEMM, as cuBLAS will: f32 1e-5 relative to the sum of
// |products| bound, f64 1e-12 likewise, f16 / bf16 one unit in the last
// place of the output (both sides round a nearly equal f32 sum once).
// With -DGPU_MODE (managed buffers, a sync after each launch) the same file
// runs the real im2col / col2im / pack kernels on the GPU; the GEMMs stay
// wk__cpu_matmul on the planned layouts (cuBLAS itself is checked by
// test_cuda and the oracle suite), so a GPU_MODE failure is in the kernels or
// the plan, never in cuBLAS. scripts/device-check.sh builds it so:
//   nvcc -std=c++17 -O1 -arch=sm_90 -DGPU_MODE -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE
//     -I include -I src -c tests/cuda/test_cuda_conv_emu.cu; g++ it with libwick.a
//     libcudart_static.a libcublas.so libcublasLt.so -Wl,-rpath,<their dir> -lm -lpthread -ldl -lrt
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/conv/kernels_conv.cu"
#include "emu_harness.cuh"
#include <math.h>

extern "C" {
#include "cuda/conv/cuda_conv_plan.c" /* compiled in: the reference library may predate it */
#include "cuda/gemm/cuda_mm_plan.h"     /* wk__cumm_plan: from libwick */
}

/* f32 buffers the kernels read or write: managed memory in GPU_MODE */
#ifdef GPU_MODE
typedef std::vector<float, MAlloc<float>> FVec;
#else
typedef std::vector<float> FVec;
#endif

static double urand() { return (double)(rnd() >> 11) * 0x1p-53 * 2.0 - 1.0; } /* [-1, 1) */

static double load(const Buf &b, int64_t i, wk_dtype dt) {
    const void *p = b.data();
    switch (dt) {
    case WK_F32: return ((const float *)p)[i];
    case WK_F64: return ((const double *)p)[i];
    case WK_F16: return wk_f16_to_f32(((const uint16_t *)p)[i]);
    default: return wk_bf16_to_f32(((const uint16_t *)p)[i]);
    }
}
static void store(Buf &b, int64_t i, wk_dtype dt, double v) {
    void *p = b.data();
    switch (dt) {
    case WK_F32: ((float *)p)[i] = (float)v; break;
    case WK_F64: ((double *)p)[i] = v; break;
    case WK_F16: ((uint16_t *)p)[i] = wk_f32_to_f16((float)v); break;
    default: ((uint16_t *)p)[i] = wk_f32_to_bf16((float)v); break;
    }
}

static wk_cu_view to_view(const wk_layout &l) {
    wk_cu_view v;
    memset(&v, 0, sizeof v);
    v.rank = l.rank;
    for (int i = 0; i < l.rank; i++) {
        v.shape[i] = l.shape[i];
        v.stride[i] = l.stride[i];
    }
    v.offset = l.offset;
    return v;
}

/* Layout kinds of an operand: how its logical [d0, d1, (d2,) d3] lies in memory. */
enum { LK_CONTIG, LK_CHANNELS_LAST, LK_SPATIAL_T, LK_NARROW, LK_BCAST0, LK_COUNT };
static const char *lk_name[] = {"contig", "channels_last", "spatial_T", "narrow", "bcast0"};

/* A layout of kind k for a shape; *phys: elements the buffer needs. */
static wk_layout make_layout(const int64_t *shape, int rank, int kind, int64_t *phys) {
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    for (int i = 0; i < rank; i++) l.shape[i] = shape[i];
    int order[4]; /* physical order, outermost first */
    int64_t ext[4], pad[4] = {0, 0, 0, 0}, off[4] = {0, 0, 0, 0};
    for (int i = 0; i < rank; i++) order[i] = i;
    if (kind == LK_CHANNELS_LAST) { /* [0, 2.., 1] */
        int o = 0;
        order[o++] = 0;
        for (int i = 2; i < rank; i++) order[o++] = i;
        order[o++] = 1;
    } else if (kind == LK_SPATIAL_T) { /* last two dims swapped */
        order[rank - 1] = rank - 2;
        order[rank - 2] = rank - 1;
    } else if (kind == LK_NARROW) {
        for (int i = 0; i < rank; i++) {
            pad[i] = 1 + i % 3;
            off[i] = i % 2 ? 1 : 0;
        }
    }
    for (int i = 0; i < rank; i++) ext[i] = shape[i] + pad[i];
    int64_t st = 1;
    for (int j = rank - 1; j >= 0; j--) {
        int d = order[j];
        l.stride[d] = st;
        st *= ext[d];
    }
    *phys = st;
    if (kind == LK_BCAST0) {
        l.stride[0] = 0; /* every batch item is the same image */
        *phys = st / (ext[0] > 0 ? ext[0] : 1);
        if (*phys == 0) *phys = 1;
    }
    for (int i = 0; i < rank; i++) l.offset += off[i] * l.stride[i];
    if (*phys == 0) *phys = 1;
    return l;
}

/* fill every element of the buffer (padding included) */
static Buf rand_buf(int64_t n, wk_dtype dt) {
    Buf b((size_t)n * wk_dtype_size(dt) + 16);
    for (int64_t i = 0; i < n; i++) store(b, i, dt, urand());
    return b;
}

/* Every planned matmul is ONE strided-batched cuBLAS call (no per-batch
 * loop), as cuda_mm_plan.c decides: each operand's batch dims collapse to
 * one stride. */
static void check_one_batch_stride(const wk_layout &la, const wk_layout &lb, const char *what) {
    wk_cumm_call call;
    bool ok = wk__cumm_plan(&la, &lb, &call);
    CHECK(ok && call.strided, "%s: matmul would loop over %lld batches", what, (long long)call.batch);
}

struct Case {
    bool tr;
    int sp;             /* spatial dims: 1 or 2 */
    int64_t n, cin, h, w;
    int64_t cout;       /* output channels (forward and transposed) */
    int64_t kh, kw;
    int64_t pad, stride, dil, groups, opad;
    int xk, wk;         /* layout kinds */
    size_t limit;       /* plan's col limit (bytes) */
};

/* How often each path of the plan ran (every one must run). */
static long g_paths[7];
static const char *path_name[7] = {"forward 1x1 without im2col", "weight packed", "x packed (transposed)",
                                   "several chunks", "one matmul per image (groups)", "forward im2col",
                                   "transposed x used in place"};

/* One conv, the GPU algorithm against wk__cpu_conv*. */
static void run_case(const Case &c, wk_dtype dt) {
    const int rank = c.sp + 2;
    int64_t xs[4], wsh[4], ds[4];
    xs[0] = c.n;
    xs[1] = c.cin;
    wsh[0] = c.tr ? c.cin : c.cout;
    wsh[1] = c.tr ? c.cout / c.groups : c.cin / c.groups;
    ds[0] = c.n;
    ds[1] = c.cout;
    int64_t in[2] = {c.h, c.w}, k[2] = {c.kh, c.kw};
    for (int d = 0; d < c.sp; d++) {
        int64_t i = c.sp == 1 ? in[1] : in[d], kk = c.sp == 1 ? k[1] : k[d];
        xs[2 + d] = i;
        wsh[2 + d] = kk;
        int64_t span = c.dil * (kk - 1) + 1;
        ds[2 + d] = c.tr ? (i - 1) * c.stride - 2 * c.pad + span + c.opad : (i + 2 * c.pad - span) / c.stride + 1;
    }
    int64_t xphys, wphys;
    wk_layout lx = make_layout(xs, rank, c.xk, &xphys);
    wk_layout lw = make_layout(wsh, rank, c.wk, &wphys);
    wk_layout ld;
    wk__layout_contiguous(&ld, ds, rank, 0);
    int64_t nout = wk__layout_numel(&ld);
    size_t es = wk_dtype_size(dt);
    Buf x = rand_buf(xphys, dt), w = rand_buf(wphys, dt);
    Buf ref((size_t)nout * es + 16), got((size_t)nout * es + 16);
    /* poison the GPU output: every element must be written */
    for (int64_t i = 0; i < nout; i++) store(got, i, dt, NAN);
    wk_conv_params p = {c.pad, c.stride, c.dil, c.groups, c.opad};
    char what[256];
    snprintf(what, sizeof what, "%s%dd %s n=%lld cin=%lld %lldx%lld cout=%lld k=%lldx%lld p=%lld s=%lld d=%lld g=%lld op=%lld x=%s w=%s lim=%zu",
             c.tr ? "conv_transpose" : "conv", c.sp, wk_dtype_name(dt), (long long)c.n, (long long)c.cin,
             (long long)c.h, (long long)c.w, (long long)c.cout, (long long)c.kh, (long long)c.kw, (long long)c.pad,
             (long long)c.stride, (long long)c.dil, (long long)c.groups, (long long)c.opad, lk_name[c.xk],
             lk_name[c.wk], c.limit);
    wk_status st;
    if (nout > 0) {
        if (c.sp == 1)
            st = c.tr ? wk__cpu_conv_transpose1d(NULL, x.data(), &lx, w.data(), &lw, ref.data(), &ld, dt, &p)
                      : wk__cpu_conv1d(NULL, x.data(), &lx, w.data(), &lw, ref.data(), &ld, dt, &p);
        else
            st = c.tr ? wk__cpu_conv_transpose2d(NULL, x.data(), &lx, w.data(), &lw, ref.data(), &ld, dt, &p)
                      : wk__cpu_conv2d(NULL, x.data(), &lx, w.data(), &lw, ref.data(), &ld, dt, &p);
        CHECK(st == WK_OK, "%s: cpu status %d", what, (int)st);
    }

    /* ---- the GPU algorithm, as cuda_conv.c runs it ---- */
    wk_cuconv_plan pl;
    wk__cuconv_plan(&pl, &lx, &lw, &ld, dt, &p, c.tr, c.limit);
    /* at least one image per chunk; more only while the chunk's temporaries fit the limit */
    CHECK(pl.chunk >= 1 && (pl.chunk == 1 || pl.col_bytes + pl.xpack_bytes <= c.limit), "%s: chunk %lld col %zu",
          what, (long long)pl.chunk, pl.col_bytes);
    Buf wbuf(pl.wpack_bytes + 16), xbuf(pl.xpack_bytes + 16), col(pl.col_bytes + 16);
    const void *wsrc = w.data();
    wk_layout lw_used = lw;
    int rc;
    if (pl.w_pack) {
        wk_layout w4;
        wk__cuconv_as4d(&lw, &w4);
        rc = wk__cu_conv_pack(NULL, w.data(), to_view(w4), dt, wbuf.data(), pl.ct);
        SYNC(); /* the CPU reads what the kernel wrote (GPU_MODE) */
        CHECK(rc == 0, "%s: pack w rc %d", what, rc);
        wk__cuconv_wpack_layout(&pl, &lw, &lw_used);
        wsrc = wbuf.data();
    }
    g_paths[0] += pl.x_direct;
    g_paths[1] += pl.w_pack;
    g_paths[2] += pl.x_pack;
    g_paths[3] += pl.chunk < pl.n;
    g_paths[4] += pl.gemm_imgs < pl.chunk;
    g_paths[5] += !c.tr && !pl.x_direct;
    g_paths[6] += c.tr && !pl.x_pack;
    int64_t chunks = 0;
    for (int64_t b0 = 0; b0 < pl.n; b0 += pl.chunk, chunks++) {
        int64_t nb = pl.n - b0 < pl.chunk ? pl.n - b0 : pl.chunk;
        wk_cu_conv_geo g = {nb, pl.cin, pl.h, pl.w, pl.cout, pl.kh, pl.kw, pl.oh, pl.ow,
                            pl.sh, pl.sw, pl.ph, pl.pw, pl.dh, pl.dw, pl.groups};
        unsigned char *out = got.data() + (size_t)(b0 * pl.cout * pl.oh * pl.ow) * es;
        wk_layout la, lb, xc;
        wk__cuconv_x_chunk(&pl, &lx, b0, nb, &xc);
        if (!c.tr) {
            const void *bsrc = x.data();
            if (!pl.x_direct) {
                rc = wk__cu_conv_im2col(NULL, x.data(), to_view(xc), col.data(), dt, g);
                SYNC();
                CHECK(rc == 0, "%s: im2col rc %d", what, rc);
                bsrc = col.data();
            }
            for (int64_t j = 0; j < nb; j += pl.gemm_imgs) {
                int64_t m = nb - j < pl.gemm_imgs ? nb - j : pl.gemm_imgs;
                wk__cuconv_gemm_layouts(&pl, &lw_used, &lx, b0 + j, m, &la, &lb);
                if (!pl.x_direct) lb.offset += j * pl.col_img;
                check_one_batch_stride(la, lb, what);
                st = wk__cpu_matmul(NULL, wsrc, &la, bsrc, &lb, out + (size_t)(j * pl.cout * pl.oh * pl.ow) * es, dt);
                CHECK(st == WK_OK, "%s: matmul %d", what, (int)st);
            }
        } else {
            const void *xsrc = x.data();
            wk_layout lxu = lx;
            int64_t xb0 = b0;
            if (pl.x_pack) {
                rc = wk__cu_conv_pack(NULL, x.data(), to_view(xc), dt, xbuf.data(), pl.ct);
                SYNC();
                CHECK(rc == 0, "%s: pack x rc %d", what, rc);
                wk__cuconv_xpack_layout(&pl, nb, &lxu);
                xb0 = 0;
                xsrc = xbuf.data();
            }
            size_t cs = wk_dtype_size(pl.ct);
            for (int64_t j = 0; j < nb; j += pl.gemm_imgs) {
                int64_t m = nb - j < pl.gemm_imgs ? nb - j : pl.gemm_imgs;
                wk__cuconv_gemm_layouts(&pl, &lw_used, &lxu, xb0 + j, m, &la, &lb);
                check_one_batch_stride(la, lb, what);
                st = wk__cpu_matmul(NULL, wsrc, &la, xsrc, &lb, col.data() + (size_t)(j * pl.col_img) * cs, pl.ct);
                CHECK(st == WK_OK, "%s: matmul %d", what, (int)st);
            }
            rc = wk__cu_conv_col2im(NULL, col.data(), out, dt, g);
            SYNC();
            CHECK(rc == 0, "%s: col2im rc %d", what, rc);
        }
    }
    if (c.limit < 64 && pl.n > 1 && pl.col_bytes + pl.xpack_bytes > 0)
        CHECK(chunks == pl.n, "%s: tiny limit should give one image per chunk (%lld chunks)", what, (long long)chunks);

    /* ---- compare ---- */
    double rtol = dt == WK_F64 ? 1e-12 : 1e-5;
    int64_t terms = c.tr ? (c.cin / c.groups) * c.kh * c.kw : (c.cin / c.groups) * c.kh * c.kw;
    long bad = 0;
    for (int64_t i = 0; i < nout; i++) {
        double a = load(got, i, dt), b = load(ref, i, dt);
        bool ok;
        if (dt == WK_F32 || dt == WK_F64) {
            /* inputs in [-1, 1): |products| sum <= terms; a reordered sum differs by ~terms * eps * that */
            ok = fabs(a - b) <= rtol * ((double)terms + fabs(b));
        } else {
            double m = fabs(b) > fabs(a) ? fabs(b) : fabs(a);
            int e;
            frexp(m, &e); /* m in [2^(e-1), 2^e) */
            double ulp = dt == WK_F16 ? ldexp(1.0, (e - 1) - 10 < -24 ? -24 : (e - 1) - 10) : ldexp(1.0, (e - 1) - 7);
            ok = fabs(a - b) <= ulp;
        }
        if (!ok && bad++ < 3) printf("  %s: out[%lld] gpu %.17g cpu %.17g\n", what, (long long)i, a, b);
    }
    CHECK(bad == 0, "%s: %ld of %lld outputs differ", what, bad, (long long)nout);
}

static const wk_dtype DTS[4] = {WK_F32, WK_F64, WK_F16, WK_BF16};

static void run_all(const Case &c) {
    for (int i = 0; i < 4; i++) run_case(c, DTS[i]);
}

static Case mk(bool tr, int sp, int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t kh, int64_t kw,
               int64_t pad, int64_t stride, int64_t dil, int64_t groups, int64_t opad) {
    Case c = {tr, sp, n, cin, sp == 1 ? 1 : h, w, cout, sp == 1 ? 1 : kh, kw, pad, stride, dil, groups, opad,
              LK_CONTIG, LK_CONTIG, WK_CUCONV_COL_LIMIT};
    return c;
}

static void test_family(bool tr, const char *name) {
    long before = g_checks;
    std::vector<Case> cases;
    for (int sp = 1; sp <= 2; sp++) {
        cases.push_back(mk(tr, sp, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0));           /* one element */
        cases.push_back(mk(tr, sp, 3, 4, 5, 7, 6, 3, 3, 1, 1, 1, 1, 0));           /* plain 3x3, padding */
        cases.push_back(mk(tr, sp, 1, 4, 6, 9, 8, 3, 2, 0, 2, 1, 2, tr ? 1 : 0));  /* stride 2, groups 2 */
        cases.push_back(mk(tr, sp, 3, 8, 7, 6, 8, 3, 3, 2, 1, 2, 4, 0));           /* dilation 2, groups 4 */
        cases.push_back(mk(tr, sp, 2, 6, 5, 5, 6, 3, 3, 1, 2, 1, 6, tr ? 1 : 0));  /* depthwise */
        cases.push_back(mk(tr, sp, 3, 5, 4, 7, 3, 1, 1, 0, 1, 1, 1, 0));           /* 1x1: no im2col */
        cases.push_back(mk(tr, sp, 2, 4, 6, 6, 4, 1, 1, 1, 2, 1, 2, tr ? 1 : 0));  /* 1x1 padded, strided */
        cases.push_back(mk(tr, sp, 3, 3, 5, 11, 5, 2, 4, 3, 3, 2, 1, tr ? 2 : 0)); /* odd everything */
        cases.push_back(mk(tr, sp, 0, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 0));           /* empty batch */
    }
    for (const Case &c0 : cases) {
        run_all(c0);
        /* the same conv through non-contiguous inputs and weights */
        for (int xk = 1; xk < LK_COUNT; xk++) {
            Case c = c0;
            c.xk = xk;
            c.wk = (xk % 3 == 0) ? LK_NARROW : (xk % 2 ? LK_CHANNELS_LAST : LK_SPATIAL_T);
            run_all(c);
        }
        /* chunked: a limit below one image's columns -> one image per chunk */
        Case c = c0;
        c.limit = 1;
        run_all(c);
        c.xk = LK_SPATIAL_T;
        c.limit = 600; /* a few images per chunk for some shapes */
        run_all(c);
    }
    /* a larger one: tails of the fake grid, several chunks */
    {
        Case c = mk(tr, 2, 3, 6, 13, 17, 9, 3, 5, 2, 2, 1, 3, tr ? 1 : 0);
        c.xk = LK_NARROW;
        c.wk = LK_CHANNELS_LAST;
        c.limit = 4096;
        run_all(c);
    }
    printf("%s: %ld checks\n", name, g_checks - before);
}

/* The 64-bit index variants (used past 2^32 items, too big to emulate)
 * give the same elements as the 32-bit ones the launchers pick here. */
static void test_wide_index() {
    long before = g_checks;
    wk_cu_conv_geo g = {2, 4, 5, 7, 6, 3, 2, 4, 3, 2, 3, 1, 2, 1, 1, 2};
    int64_t xs[4] = {2, 4, 5, 7}, phys;
    wk_layout lx = make_layout(xs, 4, LK_NARROW, &phys);
    Buf x = rand_buf(phys, WK_F32);
    int64_t ncol = g.n * g.cin * g.kh * g.kw * g.oh * g.ow;
    FVec a((size_t)ncol), b((size_t)ncol);
    CHECK(wk__cu_conv_im2col(NULL, x.data(), to_view(lx), a.data(), WK_F32, g) == 0, "im2col");
    SYNC();
    CvIm2col p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.x = to_view(lx);
    p.src = x.data();
    p.dst = b.data();
    p.n = ncol;
    for (int64_t i = 0; i < ncol; i++) im2col_item<uint32_t, uint64_t>(p, i);
    CHECK(memcmp(a.data(), b.data(), a.size() * 4) == 0, "im2col 64-bit indices differ");
    /* col2im: geometry of a transposed conv (cols [n, G, cout_g*kh*kw, h*w]) */
    wk_cu_conv_geo t = {2, 4, 3, 4, 6, 3, 2, 7, 9, 2, 3, 1, 1, 1, 1, 2};
    int64_t ncols = t.n * t.groups * (t.cout / t.groups) * t.kh * t.kw * t.h * t.w, nout = t.n * t.cout * t.oh * t.ow;
    FVec cols((size_t)ncols), o1((size_t)nout), o2((size_t)nout);
    for (auto &v : cols) v = (float)urand();
    CHECK(wk__cu_conv_col2im(NULL, cols.data(), o1.data(), WK_F32, t) == 0, "col2im");
    SYNC();
    CvCol2im q;
    memset(&q, 0, sizeof q);
    q.g = t;
    q.src = cols.data();
    q.dst = o2.data();
    q.n = nout;
    for (int64_t i = 0; i < nout; i++) col2im_item<WK_F32, uint64_t>(q, i);
    CHECK(memcmp(o1.data(), o2.data(), o1.size() * 4) == 0, "col2im 64-bit indices differ");
    printf("wide indices: %ld checks\n", g_checks - before);
}

int main() {
    if (emu_no_device()) return 0; /* GPU_MODE without a GPU: says so (device-check.sh fails that row) */
    clock_t t0 = clock();
    test_family(false, "conv (conv1d/conv2d)");
    test_family(true, "conv_transpose (conv_transpose1d/conv_transpose2d)");
    test_wide_index();
    /* launchers reject bad dtypes and queue nothing for 0 elements */
    {
        wk_cu_conv_geo g = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1};
        wk_cu_view v;
        memset(&v, 0, sizeof v);
        v.rank = 4;
        CHECK(wk__cu_conv_im2col(NULL, NULL, v, NULL, WK_F32, g) == 0, "im2col with 0 images");
        CHECK(wk__cu_conv_col2im(NULL, NULL, NULL, WK_F32, g) == 0, "col2im with 0 images");
        g.n = 1;
        CHECK(wk__cu_conv_im2col(NULL, NULL, v, NULL, WK_I32, g) != 0, "im2col rejects i32");
        CHECK(wk__cu_conv_col2im(NULL, NULL, NULL, WK_U8, g) != 0, "col2im rejects u8");
        CHECK(wk__cu_conv_pack(NULL, NULL, v, WK_F32, NULL, WK_F64) != 0, "pack rejects f32 -> f64");
        printf("launcher args: 5 checks\n");
    }
    for (int i = 0; i < 7; i++) {
        printf("  path %-32s %ld convs\n", path_name[i], g_paths[i]);
        CHECK(g_paths[i] > 0, "path '%s' never ran", path_name[i]);
    }
    return emu_summary(t0);
}
