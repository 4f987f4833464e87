// The block-quantized CUDA kernels (kernels_quant.cu) on the host, for all 14
// GGML block types: dequantize to f32 / f16 / bf16 through contiguous,
// row-narrowed, offset and permuted-batch views, checked bit for bit
// against quant/dequant_block.h called here directly (by name, not through
// the kernels' type table, so a wrong table entry fails); the mat-vec
// product for m = 1..8 against an f64 sum of those dequantized weights
// times x, with more blocks per row than lanes so the lanes wrap; the
// planner's and launchers' refusals; and block rows moved as words
// (wk__cuq_word_layout, cuda_quant.c) through the real copy and
// index_select kernels. Built by ctest in host emulation; with -DGPU_MODE
// (managed buffers, a sync after each launch) it runs the real kernels.
#ifndef GPU_MODE
#define WKC_HOST_EMULATION 1
#endif
#include "cuda/memory/kernels_copy.cu"
#include "cuda/indexing/kernels_index.cu"
#include "cuda/quantized/kernels_quant.cu"
#define EMU_RND_SEED 0x2545F4914F6CDD1Dull
#include "emu_harness.cuh"

extern "C" {
#include "cuda/quantized/cuda_quant_words.h"
}

static const wk_dtype QT[] = {WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q8_0,   WK_Q8_1,   WK_Q2_K,
                              WK_Q3_K, WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_Q8_K, WK_IQ4_NL, WK_IQ4_XS};
static const int NQT = (int)(sizeof QT / sizeof QT[0]);

/* ---------------- reference: dequant_block.h by name ---------------- */

static void ref_dq(wk_dtype dt, const uint8_t *p, float *y) {
    switch (dt) {
    case WK_Q4_0: wk__dq_q4_0((const wk_block_q4_0 *)p, y); return;
    case WK_Q4_1: wk__dq_q4_1((const wk_block_q4_1 *)p, y); return;
    case WK_Q5_0: wk__dq_q5_0((const wk_block_q5_0 *)p, y); return;
    case WK_Q5_1: wk__dq_q5_1((const wk_block_q5_1 *)p, y); return;
    case WK_Q8_0: wk__dq_q8_0((const wk_block_q8_0 *)p, y); return;
    case WK_Q8_1: wk__dq_q8_1((const wk_block_q8_1 *)p, y); return;
    case WK_Q2_K: wk__dq_q2_K((const wk_block_q2_K *)p, y); return;
    case WK_Q3_K: wk__dq_q3_K((const wk_block_q3_K *)p, y); return;
    case WK_Q4_K: wk__dq_q4_K((const wk_block_q4_K *)p, y); return;
    case WK_Q5_K: wk__dq_q5_K((const wk_block_q5_K *)p, y); return;
    case WK_Q6_K: wk__dq_q6_K((const wk_block_q6_K *)p, y); return;
    case WK_Q8_K: wk__dq_q8_K((const wk_block_q8_K *)p, y); return;
    case WK_IQ4_NL: wk__dq_iq4_nl((const wk_block_iq4_nl *)p, y); return;
    case WK_IQ4_XS: wk__dq_iq4_xs((const wk_block_iq4_xs *)p, y); return;
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT: break;
    }
    printf("ref_dq: not a block dtype\n");
    exit(2);
}

static int qk_of(wk_dtype dt) { return (int)wk_dtype_info_of(dt)->block_elems; }
static int qb_of(wk_dtype dt) { return (int)wk_dtype_info_of(dt)->block_bytes; }

/* a small random f16 scale (either sign), as its bits */
static uint16_t rnd_scale(double mag) {
    double u = (double)(rnd() % 20001) / 10000.0 - 1.0;
    return wk_f32_to_f16((float)(u * mag));
}

/* nblocks random blocks of dt: random bytes, then every scale field set to a
 * finite value of a plausible size (random bytes would make infs and NaNs) */
static void rnd_blocks(wk_dtype dt, uint8_t *p, int64_t nblocks) {
    const int qb = qb_of(dt);
    for (int64_t b = 0; b < nblocks; b++) {
        uint8_t *x = p + b * qb;
        for (int i = 0; i < qb; i++) x[i] = (uint8_t)rnd();
        uint16_t s1 = rnd_scale(0.05), s2 = rnd_scale(0.02);
        switch (dt) {
        case WK_Q4_0: ((wk_block_q4_0 *)x)->d = s1; break;
        case WK_Q4_1: ((wk_block_q4_1 *)x)->d = s1; ((wk_block_q4_1 *)x)->m = s2; break;
        case WK_Q5_0: ((wk_block_q5_0 *)x)->d = s1; break;
        case WK_Q5_1: ((wk_block_q5_1 *)x)->d = s1; ((wk_block_q5_1 *)x)->m = s2; break;
        case WK_Q8_0: ((wk_block_q8_0 *)x)->d = s1; break;
        case WK_Q8_1: ((wk_block_q8_1 *)x)->d = s1; ((wk_block_q8_1 *)x)->s = s2; break;
        case WK_Q2_K: ((wk_block_q2_K *)x)->d = s1; ((wk_block_q2_K *)x)->dmin = s2; break;
        case WK_Q3_K: ((wk_block_q3_K *)x)->d = s1; break;
        case WK_Q4_K: ((wk_block_q4_K *)x)->d = s1; ((wk_block_q4_K *)x)->dmin = s2; break;
        case WK_Q5_K: ((wk_block_q5_K *)x)->d = s1; ((wk_block_q5_K *)x)->dmin = s2; break;
        case WK_Q6_K: ((wk_block_q6_K *)x)->d = s1; break;
        case WK_Q8_K: ((wk_block_q8_K *)x)->d = wk_f16_to_f32(s1) * 0.01f; break;
        case WK_IQ4_NL: ((wk_block_iq4_nl *)x)->d = s1; break;
        case WK_IQ4_XS: ((wk_block_iq4_xs *)x)->d = s1; break;
        case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
        case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT: break;
        }
    }
}

/* element offset -> byte address of the block holding it (offsets of a block
 * view are multiples of the block) */
static const uint8_t *blk_at(const Buf &w, wk_dtype dt, int64_t elem) {
    return w.data() + elem / qk_of(dt) * qb_of(dt);
}

/* value j of a dequantized f32 / f16 / bf16 output */
static float out_at(const Buf &o, wk_dtype ddt, int64_t j) {
    if (ddt == WK_F32) return ((const float *)(const void *)o.data())[j];
    uint16_t h = ((const uint16_t *)(const void *)o.data())[j];
    return ddt == WK_F16 ? wk_f16_to_f32(h) : wk_bf16_to_f32(h);
}
static uint32_t out_bits(const Buf &o, wk_dtype ddt, int64_t j) {
    if (ddt == WK_F32) return ((const uint32_t *)(const void *)o.data())[j];
    return ((const uint16_t *)(const void *)o.data())[j];
}
static uint32_t want_bits(float v, wk_dtype ddt) {
    if (ddt == WK_F32) {
        uint32_t u;
        memcpy(&u, &v, 4);
        return u;
    }
    return ddt == WK_F16 ? wk_f32_to_f16(v) : wk_f32_to_bf16(v);
}
static size_t out_size(wk_dtype ddt) { return ddt == WK_F32 ? 4 : 2; }

/* ---------------- the table and the traits ---------------- */

static void test_tables() {
    for (int i = 0; i < 16; i++)
        CHECK(wkc_iq4nl(i) == wk_iq4nl_values[i], "iq4nl[%d] = %d, table %d", i, wkc_iq4nl(i), wk_iq4nl_values[i]);
    /* each trait's geometry is the dtype descriptor's */
#define GEOM(DT, T, QK, FN)                                                                                        \
    CHECK(wkc_qblk<DT>::qk == qk_of(DT) && wkc_qblk<DT>::bytes == qb_of(DT), "%s traits %d/%d vs %d/%d", dtn(DT), \
          (int)wkc_qblk<DT>::qk, (int)wkc_qblk<DT>::bytes, qk_of(DT), qb_of(DT));
    WKC_QUANT_TYPES(GEOM)
#undef GEOM
    /* q8_0 by hand (independent of dequant_block.h): d * q */
    uint8_t b[34];
    rnd_blocks(WK_Q8_0, b, 1);
    float y[32];
    ref_dq(WK_Q8_0, b, y);
    wk_block_q8_0 *q = (wk_block_q8_0 *)(void *)b;
    for (int j = 0; j < 32; j++)
        CHECK(y[j] == (float)q->qs[j] * wk_f16_to_f32(q->d), "q8_0 by hand %d", j);
}

/* ---------------- dequantize ---------------- */

/* views of an R x K block tensor (K = nb blocks) inside storage of `need` elements */
enum { V_CONTIG, V_NARROW, V_OFFSET, V_BATCH_T, V_NKINDS };
static const char *vname[] = {"contiguous", "narrowed", "offset", "batch-transposed"};

static wk_layout make_view(int kind, int64_t rows, int64_t k, int qk, int64_t *need) {
    int64_t sh2[2] = {rows, k};
    wk_layout l = emu_layout(sh2, 2);
    switch (kind) {
    case V_CONTIG: l.stride[0] = k; l.stride[1] = 1; break;
    case V_NARROW: l.stride[0] = k + 3 * qk; l.stride[1] = 1; break; /* rows of a wider tensor */
    case V_OFFSET: l.stride[0] = k + qk; l.stride[1] = 1; l.offset = 2 * qk; break;
    default: { /* (2, rows/2, k) with the two outer dims transposed in storage */
        int64_t sh3[3] = {2, rows / 2, k};
        l = emu_layout(sh3, 3);
        l.stride[2] = 1;
        l.stride[0] = k;
        l.stride[1] = 2 * k;
        break;
    }
    }
    *need = emu_need(l);
    return l;
}

static void test_dequantize() {
    const wk_dtype outs[] = {WK_F32, WK_F16, WK_BF16};
    for (int t = 0; t < NQT; t++) {
        wk_dtype dt = QT[t];
        int qk = qk_of(dt);
        for (int kind = 0; kind < V_NKINDS; kind++) {
            int64_t rows = 6, nb = qk == 32 ? 5 : 3, k = nb * qk, need;
            wk_layout l = make_view(kind, rows, k, qk, &need);
            Buf w((size_t)(need / qk * qb_of(dt)));
            rnd_blocks(dt, w.data(), need / qk);
            for (int o = 0; o < 3; o++) {
                wk_dtype ddt = outs[o];
                Buf out((size_t)(rows * k) * out_size(ddt), 0xAB);
                int rc = wk__cu_dequantize(NULL, w.data(), cv(l), dt, out.data(), ddt);
                SYNC();
                CHECK(rc == 0, "%s %s -> %s rc %d", dtn(dt), vname[kind], dtn(ddt), rc);
                long bad = 0;
                for (int64_t r = 0; r < rows; r++) {
                    int64_t eo = l.offset;
                    if (l.rank == 2) eo += r * l.stride[0];
                    else eo += (r / (rows / 2)) * l.stride[0] + (r % (rows / 2)) * l.stride[1];
                    for (int64_t b = 0; b < nb; b++) {
                        float y[256];
                        ref_dq(dt, blk_at(w, dt, eo + b * qk), y);
                        for (int j = 0; j < qk; j++) {
                            int64_t i = r * k + b * qk + j;
                            if (out_bits(out, ddt, i) != want_bits(y[j], ddt)) bad++;
                        }
                    }
                }
                CHECK(bad == 0, "%s %s -> %s: %ld values differ", dtn(dt), vname[kind], dtn(ddt), bad);
            }
        }
    }
}

/* ---------------- mat-vec ---------------- */

static void test_matvec() {
    const wk_dtype outs[] = {WK_F32, WK_F16, WK_BF16};
    for (int t = 0; t < NQT; t++) {
        wk_dtype dt = QT[t];
        int qk = qk_of(dt);
        /* one block, fewer blocks than lanes, more (lanes wrap) */
        const int64_t nbs[3] = {1, qk == 32 ? 13 : 5, qk == 32 ? 70 : 35};
        for (int ni = 0; ni < 3; ni++) {
            int64_t nb = nbs[ni], k = nb * qk, n = 37, need;
            wk_layout l = make_view(ni == 1 ? V_OFFSET : V_CONTIG, n, k, qk, &need);
            Buf w((size_t)(need / qk * qb_of(dt)));
            rnd_blocks(dt, w.data(), need / qk);
            /* the dequantized weights, row by row, in double */
            std::vector<double> wd((size_t)(n * k));
            for (int64_t r = 0; r < n; r++)
                for (int64_t b = 0; b < nb; b++) {
                    float y[256];
                    ref_dq(dt, blk_at(w, dt, l.offset + r * l.stride[0] + b * qk), y);
                    for (int j = 0; j < qk; j++) wd[(size_t)(r * k + b * qk + j)] = y[j];
                }
            Buf x((size_t)(WK_CU_QMV_MAX_M * k) * 4);
            float *xf = (float *)(void *)x.data();
            for (int64_t i = 0; i < WK_CU_QMV_MAX_M * k; i++) xf[i] = (float)((double)(rnd() % 20001) / 10000.0 - 1.0);
            for (int m = 1; m <= WK_CU_QMV_MAX_M; m++) {
                for (int o = 0; o < 3; o++) {
                    wk_dtype ddt = outs[o];
                    if (ddt != WK_F32 && m != 3 && m != WK_CU_QMV_MAX_M) continue;
                    Buf out((size_t)(m * n) * out_size(ddt), 0xCD);
                    int rc = wk__cu_qmatvec(NULL, w.data(), cv(l), dt, xf, m, out.data(), ddt);
                    SYNC();
                    CHECK(rc == 0, "%s matvec m=%d rc %d", dtn(dt), m, rc);
                    long bad = 0;
                    double worst = 0;
                    for (int mi = 0; mi < m; mi++)
                        for (int64_t r = 0; r < n; r++) {
                            double ref = 0, mag = 0;
                            for (int64_t j = 0; j < k; j++) {
                                double p = wd[(size_t)(r * k + j)] * (double)xf[mi * k + j];
                                ref += p;
                                mag += fabs(p);
                            }
                            /* f32 sums of qk-element block dots, then of a lane's few
                             * partials and the 5 butterfly levels: n*u of |w.x| */
                            double tol = (qk + 16) * 0x1p-24 * mag + 1e-30;
                            if (ddt == WK_F16) tol += fabs(ref) * 0x1p-11 + 0x1p-24;
                            if (ddt == WK_BF16) tol += fabs(ref) * 0x1p-8 + 1e-38;
                            double got = out_at(out, ddt, mi * n + r), e = fabs(got - ref);
                            if (!(e <= tol)) bad++;
                            if (mag > 0 && e / mag > worst) worst = e / mag;
                        }
                    CHECK(bad == 0, "%s matvec k=%lld m=%d -> %s: %ld of %lld off (worst rel %.3g)", dtn(dt),
                          (long long)k, m, dtn(ddt), bad, (long long)(m * n), worst);
                }
            }
            /* a row's result does not depend on how many x rows ride along */
            Buf o1((size_t)n * 4), o8((size_t)(WK_CU_QMV_MAX_M * n) * 4);
            wk__cu_qmatvec(NULL, w.data(), cv(l), dt, xf, 1, o1.data(), WK_F32);
            wk__cu_qmatvec(NULL, w.data(), cv(l), dt, xf, WK_CU_QMV_MAX_M, o8.data(), WK_F32);
            SYNC();
            CHECK(!memcmp(o1.data(), o8.data(), (size_t)n * 4), "%s matvec: row 0 of m=8 != m=1", dtn(dt));
        }
    }
}

/* ---------------- refusals ---------------- */

static void test_refusals() {
    int64_t sh[2] = {4, 64};
    wk_layout l = emu_layout(sh, 2);
    l.stride[0] = 64;
    l.stride[1] = 1;
    wk_cu_qrows q;
    CHECK(wk__cu_qrows_plan(cv(l), WK_Q4_0, &q) && q.rows == 4 && q.nblk == 2 && q.stride[0] == 36,
          "plan of a contiguous q4_0 (4, 64)");
    CHECK(!wk__cu_qrows_plan(cv(l), WK_F32, &q), "plan of f32");
    CHECK(!wk__cu_qrows_plan(cv(l), WK_Q4_K, &q), "q4_K rows of 64 elements");
    wk_layout b = l;
    b.stride[1] = 2;
    CHECK(!wk__cu_qrows_plan(cv(b), WK_Q4_0, &q), "last dim not contiguous");
    b = l;
    b.offset = 16;
    CHECK(!wk__cu_qrows_plan(cv(b), WK_Q4_0, &q), "offset inside a block");
    b = l;
    b.stride[0] = 48;
    CHECK(!wk__cu_qrows_plan(cv(b), WK_Q4_0, &q), "row stride inside a block");
    Buf w(4 * 36), out(4 * 64 * 8), x(9 * 64 * 4);
    CHECK(wk__cu_dequantize(NULL, w.data(), cv(l), WK_Q4_0, out.data(), WK_F64) == WKC_BAD_ARG, "dequantize to f64");
    CHECK(wk__cu_dequantize(NULL, w.data(), cv(l), WK_F16, out.data(), WK_F32) == WKC_BAD_ARG, "dequantize f16");
    const float *xf = (const float *)(const void *)x.data();
    CHECK(wk__cu_qmatvec(NULL, w.data(), cv(l), WK_Q4_0, xf, 0, out.data(), WK_F32) == WKC_BAD_ARG, "matvec m=0");
    CHECK(wk__cu_qmatvec(NULL, w.data(), cv(l), WK_Q4_0, xf, 9, out.data(), WK_F32) == WKC_BAD_ARG, "matvec m=9");
    CHECK(wk__cu_qmatvec(NULL, w.data(), cv(l), WK_Q4_0, xf, 1, out.data(), WK_I32) == WKC_BAD_ARG, "matvec to i32");
    int64_t sh3[3] = {2, 2, 64};
    wk_layout l3 = emu_layout(sh3, 3);
    emu_row_major(l3, 0);
    CHECK(wk__cu_qmatvec(NULL, w.data(), cv(l3), WK_Q4_0, xf, 1, out.data(), WK_F32) == WKC_BAD_ARG, "matvec rank 3");
    /* empty: nothing queued, success */
    int64_t sh0[2] = {0, 64};
    wk_layout l0 = emu_layout(sh0, 2);
    l0.stride[0] = 64;
    l0.stride[1] = 1;
    CHECK(wk__cu_dequantize(NULL, w.data(), cv(l0), WK_Q4_0, out.data(), WK_F32) == 0, "dequantize 0 rows");
    /* the word layout refuses what the planner refuses */
    wk_layout wl;
    wk_dtype wd;
    CHECK(wk__cuq_word_layout("t", WK_Q4_0, &b, &wl, &wd) == WK_ERR_SHAPE, "word layout of a split row");
    wk_clear_error();
}

/* ---------------- block rows as words: copy and index_select ---------------- */

static void test_word_moves() {
    for (int t = 0; t < NQT; t++) {
        wk_dtype dt = QT[t];
        int qk = qk_of(dt), qb = qb_of(dt);
        int64_t rows = 9, nb = 3, k = nb * qk, need;
        wk_layout l = make_view(V_OFFSET, rows, k, qk, &need); /* rows of a wider tensor, offset */
        Buf w((size_t)(need / qk * qb));
        rnd_blocks(dt, w.data(), need / qk);
        wk_layout wl;
        wk_dtype wdt;
        CHECK(wk__cuq_word_layout("t", dt, &l, &wl, &wdt) == WK_OK, "%s word layout", dtn(dt));
        int ws = wkc_size(wdt);
        CHECK(ws > 0 && qb % ws == 0 && (ws == 4 || qb % 4 != 0), "%s word size %d for %d-byte blocks", dtn(dt), ws,
              qb);
        /* gather the view contiguous: row r must be the bytes of the view's row r */
        wk_layout wc;
        wk__layout_contiguous(&wc, wl.shape, wl.rank, 0);
        Buf c((size_t)(rows * nb * qb), 0);
        CHECK(wk__cu_copy_strided(NULL, w.data(), cv(wl), c.data(), cv(wc), wdt) == 0, "%s copy", dtn(dt));
        SYNC();
        long bad = 0;
        for (int64_t r = 0; r < rows; r++)
            if (memcmp(c.data() + r * nb * qb, blk_at(w, dt, l.offset + r * l.stride[0]), (size_t)(nb * qb))) bad++;
        CHECK(bad == 0, "%s copy of block rows: %ld rows differ", dtn(dt), bad);
        /* embedding lookup: rows by ids (repeats, reverse order), then dequantize */
        const int32_t idv[5] = {8, 0, 3, 3, 5};
        Buf ids(sizeof idv);
        memcpy(ids.data(), idv, sizeof idv);
        int64_t nid = 5;
        wk_layout lids = emu_layout(&nid, 1);
        lids.stride[0] = 1;
        Buf g((size_t)(nid * nb * qb), 0);
        int rc = wk__cu_index_select(NULL, w.data(), cv(wl), ids.data(), cv(lids), WK_I32, 0, g.data(), wdt,
                                     ixf(err_flag()));
        CHECK(rc == 0, "%s index_select", dtn(dt));
        SYNC();
        bad = 0;
        for (int i = 0; i < nid; i++)
            if (memcmp(g.data() + i * nb * qb, blk_at(w, dt, l.offset + idv[i] * l.stride[0]), (size_t)(nb * qb)))
                bad++;
        CHECK(bad == 0, "%s index_select of block rows: %ld rows differ", dtn(dt), bad);
        int64_t gs[2] = {nid, k};
        wk_layout lg = emu_layout(gs, 2);
        lg.stride[0] = k;
        lg.stride[1] = 1;
        Buf e((size_t)(nid * k) * 4);
        CHECK(wk__cu_dequantize(NULL, g.data(), cv(lg), dt, e.data(), WK_F32) == 0, "%s embedding dequantize", dtn(dt));
        SYNC();
        bad = 0;
        for (int i = 0; i < nid; i++)
            for (int64_t b = 0; b < nb; b++) {
                float y[256];
                ref_dq(dt, blk_at(w, dt, l.offset + idv[i] * l.stride[0] + b * qk), y);
                for (int j = 0; j < qk; j++)
                    if (out_bits(e, WK_F32, i * k + b * qk + j) != want_bits(y[j], WK_F32)) bad++;
            }
        CHECK(bad == 0, "%s embedding rows: %ld values differ", dtn(dt), bad);
    }
    /* an element dtype passes through unchanged */
    int64_t sh[2] = {3, 5};
    wk_layout l = emu_layout(sh, 2);
    l.stride[0] = 7;
    l.stride[1] = 1;
    wk_layout o;
    wk_dtype wd;
    CHECK(wk__cuq_word_layout("t", WK_F32, &l, &o, &wd) == WK_OK && wd == WK_F32 && !memcmp(&o, &l, sizeof l),
          "f32 layout unchanged");
}

int main() {
    if (emu_no_device()) return 0;
    clock_t t0 = clock();
    test_tables();
    test_dequantize();
    test_matvec();
    test_refusals();
    test_word_moves();
    return emu_summary(t0);
}
