/* Quantizing with an importance matrix (src/quant/quantize_imatrix.c,
 * wk_quantize_imatrix) and reading the matrix files (src/io/imatrix.c).
 *
 * Byte equality with ggml: the hashes below are of ggml_quantize_chunk's
 * output with the seeded matrix qvg_imatrix(3) on the data sets of
 * tools/quant_vs_ggml.h (4 rows of 4096 each, data seed 1), printed by
 * tools/quant_imatrix_vs_ggml.c against libggml-base of llama-cpp-python
 * 0.3.36, where every block of every type matched wick's (64 rows too).
 * Then: the public op gives the same bytes, stacked matrices take their own
 * slice, q8_0 ignores the matrix, bad matrices are errors; the readers on
 * good files of both formats, and every truncation of a legacy file. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant/quant.h"
#include "quant/quantize_imatrix.h"
#include "wick/gguf.h"
#include "wick/imatrix.h"
#include "../tools/quant_vs_ggml.h"

enum { ROWS = 4, COLS = 4096 };

static const struct {
    const char *name;
    uint64_t ggml;
} HASHES[] = {
    {"q4_0", 0x32b929350113eb1eull},   {"q4_1", 0x3a337528f50beb96ull}, {"q5_0", 0xe20cb983d2c09d39ull},
    {"q5_1", 0xbadd6e45585e3c89ull},   {"q8_0", 0xe3ff52eadb8ba401ull}, {"q2_K", 0x5ed64d7920185e66ull},
    {"q3_K", 0x91902c020f8d960eull},   {"q4_K", 0xe1ebb4b85858e68bull}, {"q5_K", 0xd031c7a0edf6e2baull},
    {"q6_K", 0x268bdebfd112913full},   {"iq4_nl", 0x2671351e12a3e71cull}, {"iq4_xs", 0x5b77ef3398ddf229ull},
};
#define N_HASHES (sizeof HASHES / sizeof HASHES[0])

static size_t row_bytes(wk_dtype dt, int64_t n) {
    const wk__quant_traits *tr = wk__quant_traits_of(dt);
    return (size_t)(n / tr->block_elems) * tr->block_bytes;
}

/* the rows through wk__quantize_row_imatrix, and through wk_quantize_imatrix */
static void test_bytes_match_ggml(void **state) {
    (void)state;
    float *x = malloc(sizeof(float) * ROWS * COLS), *qw = malloc(sizeof(float) * COLS);
    uint8_t *q = malloc((size_t)ROWS * COLS * 2), *q2 = malloc((size_t)ROWS * COLS * 2);
    assert_non_null(x && qw && q && q2);
    qvg_imatrix(3, qw, COLS);
    for (size_t t = 0; t < N_HASHES; t++) {
        wk_dtype dt;
        assert_true(wk_dtype_from_name(HASHES[t].name, &dt));
        size_t rb = row_bytes(dt, COLS), bytes = rb * ROWS;
        uint64_t h = QVG_FNV0, h2 = QVG_FNV0;
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 1, x, (int64_t)ROWS * COLS);
            memset(q, 0xAB, bytes);
            for (int r = 0; r < ROWS; r++)
                assert_int_equal(wk__quantize_row_imatrix(dt, x + (size_t)r * COLS, q + r * rb, COLS, qw), WK_OK);
            h = qvg_fnv(h, q, bytes);
            int64_t shape[2] = {ROWS, COLS};
            wk_tensor *tx = TU_OK(wk_from_host(x, sizeof(float) * ROWS * COLS, shape, 2, WK_F32, wk_cpu()));
            wk_tensor *tq = TU_OK(wk_quantize_imatrix(tx, dt, qw, COLS));
            TU_STATUS_OK(wk_to_host(tq, q2, bytes));
            h2 = qvg_fnv(h2, q2, bytes);
            wk_tensor_free(tq);
            wk_tensor_free(tx);
        }
        if (h != HASHES[t].ggml || h2 != h)
            fail_msg("%s: hash 0x%016llx (op 0x%016llx), ggml's 0x%016llx", HASHES[t].name, (unsigned long long)h,
                     (unsigned long long)h2, (unsigned long long)HASHES[t].ggml);
    }
    free(x);
    free(qw);
    free(q);
    free(q2);
}

/* The matrix changes the bytes of the types that use it (and not q8_0's),
 * and lowers the importance-weighted error on a matrix with a few heavy
 * columns: what it is for. */
static void test_matrix_matters(void **state) {
    (void)state;
    enum { N = 1024 };
    float x[N], qw[N], y[N];
    uint8_t a[N * 2], b[N * 2];
    qvg_fill(0, 5, x, N);
    for (int i = 0; i < N; i++) qw[i] = (i % 7 == 0) ? 50.f : 0.1f;
    static const wk_dtype uses[] = {WK_Q4_0, WK_Q4_1, WK_Q5_0, WK_Q5_1, WK_Q2_K, WK_Q3_K,
                                    WK_Q4_K, WK_Q5_K, WK_Q6_K, WK_IQ4_NL, WK_IQ4_XS};
    for (size_t t = 0; t < sizeof uses / sizeof uses[0]; t++) {
        assert_true(wk__quant_uses_imatrix(uses[t]));
        assert_int_equal(wk__quantize_row(uses[t], x, a, N), WK_OK);
        assert_int_equal(wk__quantize_row_imatrix(uses[t], x, b, N, qw), WK_OK);
        assert_memory_not_equal(a, b, row_bytes(uses[t], N));
        double ea = 0, eb = 0;
        assert_int_equal(wk__dequantize_row(uses[t], a, y, N), WK_OK);
        for (int i = 0; i < N; i++) ea += qw[i] * (double)(x[i] - y[i]) * (x[i] - y[i]);
        assert_int_equal(wk__dequantize_row(uses[t], b, y, N), WK_OK);
        for (int i = 0; i < N; i++) eb += qw[i] * (double)(x[i] - y[i]) * (x[i] - y[i]);
        if (!(eb < ea)) fail_msg("%s: weighted error %g with the matrix, %g without", wk_dtype_name(uses[t]), eb, ea);
    }
    static const wk_dtype ignores[] = {WK_Q8_0, WK_Q8_1, WK_Q8_K};
    for (size_t t = 0; t < 3; t++) {
        assert_false(wk__quant_uses_imatrix(ignores[t]));
        assert_int_equal(wk__quantize_row(ignores[t], x, a, N), WK_OK);
        assert_int_equal(wk__quantize_row_imatrix(ignores[t], x, b, N, qw), WK_OK);
        assert_memory_equal(a, b, row_bytes(ignores[t], N));
    }
}

/* (2 matrices, 3 rows, 256 cols) with n = 512: matrix e uses qw[256 e ..] */
static void test_stacked_and_errors(void **state) {
    (void)state;
    enum { E = 2, R = 3, C = 256 };
    float x[E * R * C], qw[E * C];
    qvg_fill(0, 9, x, E * R * C);
    qvg_imatrix(4, qw, E * C);
    int64_t shape[3] = {E, R, C};
    wk_tensor *t = TU_OK(wk_from_host(x, sizeof x, shape, 3, WK_F32, wk_cpu()));
    wk_tensor *q = TU_OK(wk_quantize_imatrix(t, WK_Q4_K, qw, E * C));
    size_t rb = row_bytes(WK_Q4_K, C);
    uint8_t got[E * R * 144], want[E * R * 144];
    TU_STATUS_OK(wk_to_host(q, got, sizeof got));
    for (int e = 0; e < E; e++)
        for (int r = 0; r < R; r++)
            assert_int_equal(wk__quantize_row_imatrix(WK_Q4_K, x + (e * R + r) * C, want + (e * R + r) * rb, C,
                                                      qw + e * C),
                             WK_OK);
    assert_memory_equal(got, want, sizeof got);
    wk_tensor_free(q);
    /* one slice for every row: n = C */
    q = TU_OK(wk_quantize_imatrix(t, WK_Q4_K, qw, C));
    wk_tensor_free(q);
    /* errors */
    TU_FAILS(wk_quantize_imatrix(t, WK_Q4_K, qw, C - 1), WK_ERR_SHAPE);
    TU_FAILS(wk_quantize_imatrix(t, WK_Q4_K, qw, 3 * C), WK_ERR_SHAPE);
    TU_FAILS(wk_quantize_imatrix(t, WK_Q4_K, NULL, C), WK_ERR_ARG);
    TU_FAILS(wk_quantize_imatrix(t, WK_F16, qw, C), WK_ERR_DTYPE);
    qw[7] = NAN;
    TU_FAILS(wk_quantize_imatrix(t, WK_Q4_K, qw, C), WK_ERR_ARG);
    qw[7] = 1;
    wk_tensor_free(t);
    int64_t s2[2] = {2, 100};
    float y[200] = {0};
    t = TU_OK(wk_from_host(y, sizeof y, s2, 2, WK_F32, wk_cpu()));
    TU_FAILS(wk_quantize_imatrix(t, WK_Q4_0, qw, 100), WK_ERR_SHAPE); /* 100 is not whole blocks */
    wk_tensor_free(t);
}

/* ---- the readers ---- */

/* TU_OK / TU_FAILS for a reader: non-NULL, or NULL with status st and a message */
static wk_imatrix *im_ok(wk_imatrix *m) {
    if (!m) fail_msg("imatrix load failed: %s", wk_last_error());
    return m;
}
static void im_fails(wk_imatrix *m, wk_status st, int line) {
    if (m || wk_last_status() != st || !wk_last_error()[0])
        fail_msg("line %d: expected %s, got %s (%s)", line, wk_status_name(st), m ? "a reader" : wk_status_name(wk_last_status()),
                 wk_last_error());
    wk_clear_error();
}
#define IM_FAILS(e, st) im_fails((e), (st), __LINE__)

typedef struct {
    uint8_t b[4096];
    size_t n;
} buf;

static void put(buf *f, const void *p, size_t n) {
    memcpy(f->b + f->n, p, n);
    f->n += n;
}
static void put_i32(buf *f, int32_t v) { put(f, &v, 4); }

/* two entries, then the trailer */
static void legacy_file(buf *f) {
    f->n = 0;
    put_i32(f, 2);
    put_i32(f, 14);
    put(f, "blk.0.a.weight", 14);
    put_i32(f, 4); /* ncall */
    put_i32(f, 3);
    float v[3] = {4, 8, 2};
    put(f, v, sizeof v);
    put_i32(f, 1);
    put(f, "b", 1);
    put_i32(f, 0); /* ncall 0: the values as they are */
    put_i32(f, 2);
    float u[2] = {5, 7};
    put(f, u, sizeof u);
    put_i32(f, 10); /* chunks */
    put_i32(f, 4);
    put(f, "wiki", 4);
}

static void test_legacy_reader(void **state) {
    (void)state;
    buf f;
    legacy_file(&f);
    wk_imatrix *m = im_ok(wk_imatrix_load_bytes(f.b, f.n));
    assert_int_equal(wk_imatrix_count(m), 2);
    assert_int_equal(wk_imatrix_is_legacy(m), 1);
    assert_int_equal(wk_imatrix_chunk_count(m), 10);
    assert_string_equal(wk_imatrix_dataset(m), "wiki");
    assert_string_equal(wk_imatrix_name(m, 0), "blk.0.a.weight");
    int64_t n;
    const float *w = wk_imatrix_find(m, "blk.0.a.weight", &n);
    assert_non_null(w);
    assert_int_equal(n, 3);
    assert_true(w[0] == 1.f && w[1] == 2.f && w[2] == 0.5f);
    w = wk_imatrix_find(m, "b", &n);
    assert_true(n == 2 && w[0] == 5.f && w[1] == 7.f);
    assert_null(wk_imatrix_find(m, "c", &n));
    assert_null(wk_imatrix_name(m, 2));
    wk_imatrix_free(m);
    /* every truncation: the entries' part is an error, the trailer optional */
    size_t entries_end = f.n - 12;
    for (size_t k = 0; k < f.n; k++) {
        m = wk_imatrix_load_bytes(f.b, k);
        if (k < entries_end) {
            assert_null(m);
            assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
            wk_clear_error();
        } else {
            assert_non_null(m);
            wk_imatrix_free(m);
        }
    }
    /* hostile counts and lengths */
    int32_t bad[][5] = {{0, 0, 0, 0, 0}, {-1, 0, 0, 0, 0}, {1, -5, 0, 0, 0}, {1, 0x7fffffff, 0, 0, 0}};
    for (size_t i = 0; i < 4; i++) IM_FAILS(wk_imatrix_load_bytes(bad[i], sizeof bad[i]), WK_ERR_FORMAT);
    buf g = {.n = 0};
    put_i32(&g, 1);
    put_i32(&g, 1);
    put(&g, "x", 1);
    put_i32(&g, 1);
    put_i32(&g, 0x40000000); /* nval far beyond the file */
    IM_FAILS(wk_imatrix_load_bytes(g.b, g.n), WK_ERR_FORMAT);
    g.n = 0; /* one name twice */
    put_i32(&g, 2);
    for (int k = 0; k < 2; k++) {
        put_i32(&g, 1);
        put(&g, "x", 1);
        put_i32(&g, 1);
        put_i32(&g, 1);
        put(&g, "\0\0\0\0", 4);
    }
    IM_FAILS(wk_imatrix_load_bytes(g.b, g.n), WK_ERR_FORMAT);
    IM_FAILS(wk_imatrix_load("/nonexistent/imatrix.dat"), WK_ERR_IO);
}

static char g_tmp[256];

/* A GGUF imatrix: entry "w" of 2 matrices x 4 columns, counts {2, 0}. */
static const char *write_gguf(bool with_meta, bool with_counts, wk_dtype counts_dt) {
    static int k;
    snprintf(g_tmp, sizeof g_tmp, "%s/wick_imatrix_%d_%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid(), k++);
    wk_gguf_writer *w = wk_gguf_writer_new();
    assert_non_null(w);
    if (with_meta) {
        const char *ds[] = {"calib.txt"};
        TU_STATUS_OK(wk_gguf_writer_add_u32(w, "imatrix.chunk_count", 7));
        TU_STATUS_OK(wk_gguf_writer_add_u32(w, "imatrix.chunk_size", 512));
        TU_STATUS_OK(wk_gguf_writer_add_string_array(w, "imatrix.datasets", ds, NULL, 1));
    }
    float sums[8] = {2, 4, 6, 8, 1, 1, 1, 1}, counts[2] = {2.2f, 0};
    int64_t s1[2] = {2, 4}, s2[2] = {2, 1};
    wk_tensor *a = TU_OK(wk_from_host(sums, sizeof sums, s1, 2, WK_F32, wk_cpu()));
    wk_tensor *c = TU_OK(wk_from_host(counts, sizeof counts, s2, 2, WK_F32, wk_cpu()));
    wk_tensor *c2 = TU_OK(wk_to_dtype(c, counts_dt));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.in_sum2", a));
    if (with_counts) TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "w.counts", c2));
    TU_STATUS_OK(wk_gguf_writer_add_tensor(w, "other.weight", a)); /* not an entry */
    TU_STATUS_OK(wk_gguf_writer_write(w, g_tmp));
    wk_gguf_writer_free(w);
    wk_tensor_free(a);
    wk_tensor_free(c);
    wk_tensor_free(c2);
    return g_tmp;
}

static void test_gguf_reader(void **state) {
    (void)state;
    wk_imatrix *m = im_ok(wk_imatrix_load(write_gguf(true, true, WK_F32)));
    unlink(g_tmp);
    assert_int_equal(wk_imatrix_count(m), 1);
    assert_int_equal(wk_imatrix_is_legacy(m), 0);
    assert_int_equal(wk_imatrix_chunk_count(m), 7);
    assert_string_equal(wk_imatrix_dataset(m), "calib.txt");
    int64_t n;
    const float *v = wk_imatrix_find(m, "w", &n);
    assert_non_null(v);
    assert_int_equal(n, 8);
    /* count 2.2 rounds to 2; count 0 gives ones */
    const float want[8] = {1, 2, 3, 4, 1, 1, 1, 1};
    assert_memory_equal(v, want, sizeof want);
    wk_imatrix_free(m);
    IM_FAILS(wk_imatrix_load(write_gguf(false, true, WK_F32)), WK_ERR_FORMAT);
    unlink(g_tmp);
    IM_FAILS(wk_imatrix_load(write_gguf(true, false, WK_F32)), WK_ERR_FORMAT);
    unlink(g_tmp);
    IM_FAILS(wk_imatrix_load(write_gguf(true, true, WK_F16)), WK_ERR_FORMAT);
    unlink(g_tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_match_ggml),
        cmocka_unit_test(test_matrix_matters),
        cmocka_unit_test(test_stacked_and_errors),
        cmocka_unit_test(test_legacy_reader),
        cmocka_unit_test(test_gguf_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
