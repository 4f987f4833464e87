/* Quantize / dequantize against gguf-py 0.19.0 (tests/quant_ref.py, run by
 * the project venv's python: $WICK_VENV_PYTHON; skipped, saying why, when
 * it is unset). On random data of several shapes (one block per row, zero
 * and all-equal rows, outliers, tiny and large values, rows enough for the
 * thread pool):
 *  - wick's quantize bytes == gguf-py's for q4_0 q4_1 q5_0 q5_1 q8_0, from
 *    f32, f16, bf16 and f64 sources, contiguous or not, and via wk_to_dtype;
 *  - wick's dequantize == gguf-py's (bit for bit; NaN matches NaN) for every
 *    type gguf-py dequantizes (all but q8_1 and q8_K), to f32 and rounded to
 *    f16 / bf16, on quantized data and on random block bytes, from whole
 *    tensors and from row / block narrowed views;
 *  - every quantized tensor of the real SmolLM2 GGUF ($WICK_SMOLLM2_GGUF),
 *    read as raw blocks at its offset: dequantized == gguf-py (checksums of
 *    the f32 bits), its first rows requantized to the five types == gguf-py. */
#include "testutil.h"
#include "oracle_util.h"
#include "cpu/vmath/vmath.h"
#include "wick/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_dir[1024];
static bool g_ready;

static int setup(void **state) {
    (void)state;
    const char *py = getenv("WICK_VENV_PYTHON");
    if (!py || !*py) return 0; /* the tests skip */
    if (!ou_dir("quant", g_dir, sizeof g_dir)) snprintf(g_dir, sizeof g_dir, "quant_oracle");
    /* the script sits beside this file */
    char src[1024];
    snprintf(src, sizeof src, "%s", __FILE__);
    char *slash = strrchr(src, '/');
    if (slash) *slash = 0;
    else snprintf(src, sizeof src, ".");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s/quant_ref.py' '%s'", py, src, g_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "quant_ref.py failed: %s\n", cmd);
        return -1;
    }
    g_ready = true;
    return 0;
}

static void need_ref(void) {
    if (!g_ready) {
        print_message("WICK_VENV_PYTHON not set (run scripts/setup.sh): skipping the gguf-py oracle\n");
        skip();
    }
}

static void *read_all(const char *name, size_t *len) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

typedef struct {
    char kind, name[64], type[16];
    int64_t rows, cols;
    wk_dtype qdt;
} qcase;

/* Calls fn on every manifest line of the given kind ('q', 'd' or 0: both). */
static int for_cases(char kind, void (*fn)(const qcase *)) {
    char path[1400], line[256];
    FILE *f = ou_open_manifest(g_dir, path, sizeof path);
    if (!f) fail_msg("no manifest %s", path);
    int n = 0;
    while (ou_next_line(f, line, sizeof line)) {
        qcase c;
        long long r, k;
        if (sscanf(line, " %c %63s %lld %lld %15s", &c.kind, c.name, &r, &k, c.type) != 5)
            fail_msg("bad line %s", line);
        c.rows = r;
        c.cols = k;
        assert_true(wk_dtype_from_name(c.type, &c.qdt));
        assert_true(wk_dtype_is_quantized(c.qdt));
        if (kind && c.kind != kind) continue;
        fn(&c);
        n++;
    }
    fclose(f);
    return n;
}

/* ---- comparisons ---- */

static void expect_bytes(const char *what, const qcase *c, const wk_tensor *q, const char *file) {
    size_t n;
    unsigned char *want = read_all(file, &n);
    unsigned char *got = malloc(n);
    assert_non_null(got);
    TU_STATUS_OK(wk_to_host(q, got, n));
    if (memcmp(got, want, n) != 0) {
        size_t i = 0;
        while (got[i] == want[i]) i++;
        size_t bb = wk_dtype_info_of(c->qdt)->block_bytes;
        fail_msg("%s %s %s: byte %zu (block %zu, byte %zu in it) is %u, gguf-py wrote %u", what, c->name, c->type, i,
                 i / bb, i % bb, got[i], want[i]);
    }
    free(got);
    free(want);
}

static bool is_nan(uint32_t bits, int kind) {
    switch (kind) {
    case 0: return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu);
    case 1: return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu);
    default: return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu);
    }
}

/* got (a contiguous tensor of dt) == the file's values from element `first`
 * on, `runs` runs of `len` elements `pitch` apart (a narrowed view). */
static void expect_values(const char *what, const qcase *c, const wk_tensor *got, const char *file, int64_t first,
                          int64_t runs, int64_t len, int64_t pitch) {
    wk_dtype dt = wk_tensor_dtype(got);
    int kind = dt == WK_F32 ? 0 : dt == WK_F16 ? 1 : 2;
    size_t esz = wk_dtype_size(dt), n;
    unsigned char *want = read_all(file, &n);
    assert_int_equal(wk_numel(got), runs * len);
    unsigned char *g = malloc((size_t)(runs * len) * esz);
    assert_non_null(g);
    TU_STATUS_OK(wk_to_host(got, g, (size_t)(runs * len) * esz));
    for (int64_t r = 0; r < runs; r++)
        for (int64_t i = 0; i < len; i++) {
            uint32_t a = 0, b = 0;
            memcpy(&a, g + (size_t)(r * len + i) * esz, esz);
            size_t at = (size_t)(first + r * pitch + i) * esz;
            assert_true(at + esz <= n);
            memcpy(&b, want + at, esz);
            if (a != b && !(is_nan(a, kind) && is_nan(b, kind)))
                fail_msg("%s %s %s: element %lld of run %lld is bits 0x%x, gguf-py 0x%x", what, c->name, c->type,
                         (long long)i, (long long)r, a, b);
        }
    free(g);
    free(want);
}

static wk_tensor *load(const qcase *c, const char *suffix, wk_dtype dt) {
    char name[128];
    snprintf(name, sizeof name, "%s%s", c->name, suffix);
    size_t n;
    void *buf = read_all(name, &n);
    int64_t shape[2] = {c->rows, c->cols};
    wk_tensor *t = TU_OK(wk_from_host(buf, n, shape, 2, dt, wk_cpu()));
    free(buf);
    return t;
}

static void stem(const qcase *c, const char *suffix, char *out, size_t cap) {
    snprintf(out, cap, "%s.%s%s", c->name, c->type, suffix);
}

/* ---- quantize ---- */

static void quantize_case(const qcase *c) {
    char f[160];
    wk_tensor *x = load(c, ".f32", WK_F32);
    stem(c, ".q", f, sizeof f);
    wk_tensor *q = TU_OK(wk_quantize(x, c->qdt));
    assert_int_equal(wk_tensor_dtype(q), c->qdt);
    tu_assert_shape(q, wk_shape(x), 2);
    expect_bytes("quantize f32", c, q, f);
    wk_tensor *q2 = TU_OK(wk_to_dtype(x, c->qdt));
    expect_bytes("to_dtype f32", c, q2, f);
    /* f64 holds the f32 values exactly */
    wk_tensor *x64 = TU_OK(wk_to_dtype(x, WK_F64));
    wk_tensor *q3 = TU_OK(wk_quantize(x64, c->qdt));
    expect_bytes("quantize f64", c, q3, f);
    /* a transposed view: the last dim strided */
    wk_tensor *xt = TU_OK(wk_contiguous(TU_OK(wk_t(x))));
    wk_tensor *xv = TU_OK(wk_t(xt));
    if (c->rows > 1) assert_false(wk_is_contiguous(xv));
    wk_tensor *q4 = TU_OK(wk_quantize(xv, c->qdt));
    expect_bytes("quantize transposed view", c, q4, f);
    /* f16 and bf16 sources */
    wk_tensor *h = load(c, ".f16", WK_F16), *b = load(c, ".bf16", WK_BF16);
    stem(c, ".q16", f, sizeof f);
    wk_tensor *qh = TU_OK(wk_quantize(h, c->qdt));
    expect_bytes("quantize f16", c, qh, f);
    stem(c, ".qb16", f, sizeof f);
    wk_tensor *qb = TU_OK(wk_quantize(b, c->qdt));
    expect_bytes("quantize bf16", c, qb, f);
    wk_tensor *hv = TU_OK(wk_t(TU_OK(wk_contiguous(TU_OK(wk_t(b))))));
    wk_tensor *qbv = TU_OK(wk_quantize(hv, c->qdt));
    expect_bytes("quantize bf16 transposed view", c, qbv, f);
}

static void test_quantize_bytes(void **state) {
    (void)state;
    need_ref();
    int n = 0;
    /* every SIMD level: the f16 / bf16 rows convert through vmath */
    for (int lv = 0; lv <= wk__vmath_max_level(); lv++) {
        assert_int_equal(wk__vmath_set_level(lv), 0);
        wk_scope_begin();
        n = for_cases('q', quantize_case);
        wk_scope_end();
    }
    wk__vmath_set_level(-1);
    print_message("quantize: %d cases (x 7 sources / layouts, x %d SIMD levels) byte-exact with gguf-py\n", n,
                  wk__vmath_max_level() + 1);
    assert_true(n >= 30);
}

/* ---- dequantize ---- */

static const char *dq_suffix(wk_dtype dt) { return dt == WK_F32 ? ".dq" : dt == WK_F16 ? ".dq16" : ".dqb16"; }

static void dequantize_case(const qcase *c) {
    static const wk_dtype outs[3] = {WK_F32, WK_F16, WK_BF16};
    char f[160];
    bool rnd = c->kind == 'd';
    wk_tensor *q = rnd ? load(c, ".q", c->qdt) : NULL;
    if (!rnd) {
        stem(c, ".q", f, sizeof f);
        size_t n;
        void *buf = read_all(f, &n);
        int64_t shape[2] = {c->rows, c->cols};
        q = TU_OK(wk_from_host(buf, n, shape, 2, c->qdt, wk_cpu()));
        free(buf);
    }
    for (int k = 0; k < 3; k++) {
        if (rnd) snprintf(f, sizeof f, "%s%s", c->name, dq_suffix(outs[k]));
        else stem(c, dq_suffix(outs[k]), f, sizeof f);
        wk_tensor *y = TU_OK(wk_dequantize(q, outs[k]));
        expect_values("dequantize", c, y, f, 0, 1, c->rows * c->cols, 0);
        wk_tensor *y2 = TU_OK(wk_to_dtype(q, outs[k]));
        expect_values("to_dtype", c, y2, f, 0, 1, c->rows * c->cols, 0);
        /* views: rows 1.. and (each row) all blocks but the first */
        int64_t be = wk_dtype_info_of(c->qdt)->block_elems;
        if (c->rows >= 2) {
            wk_tensor *v = TU_OK(wk_narrow(q, 0, 1, c->rows - 1));
            wk_tensor *yv = TU_OK(wk_dequantize(v, outs[k]));
            expect_values("dequantize row view", c, yv, f, c->cols, 1, (c->rows - 1) * c->cols, 0);
        }
        if (c->cols >= 2 * be) {
            wk_tensor *v = TU_OK(wk_narrow(q, 1, be, c->cols - be));
            assert_false(wk_is_contiguous(v));
            wk_tensor *yv = TU_OK(wk_dequantize(v, outs[k]));
            expect_values("dequantize block view", c, yv, f, be, c->rows, c->cols - be, c->cols);
        }
    }
}

static void test_dequantize_values(void **state) {
    (void)state;
    need_ref();
    int n = 0;
    for (int lv = 0; lv <= wk__vmath_max_level(); lv++) {
        assert_int_equal(wk__vmath_set_level(lv), 0);
        wk_scope_begin();
        n = for_cases(0, dequantize_case);
        wk_scope_end();
    }
    wk__vmath_set_level(-1);
    print_message("dequantize: %d cases (x 3 output dtypes, whole and narrowed, x %d SIMD levels) bit-exact with "
                  "gguf-py\n", n, wk__vmath_max_level() + 1);
    assert_true(n >= 40);
}

/* The f32 values read straight off a quantized tensor are the dequantized ones. */
static void host_f32_case(const qcase *c) {
    char f[160];
    wk_tensor *q = load(c, ".q", c->qdt);
    int64_t n = c->rows * c->cols;
    float *v = malloc((size_t)n * sizeof *v);
    assert_non_null(v);
    TU_STATUS_OK(wk_to_host_f32(q, v, (size_t)n));
    snprintf(f, sizeof f, "%s.dq", c->name);
    size_t len;
    float *want = read_all(f, &len);
    assert_int_equal(len, (size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&v[i], &want[i], 4) != 0 && !(v[i] != v[i] && want[i] != want[i]))
            fail_msg("wk_to_host_f32 %s: element %lld is %g, gguf-py %g", c->name, (long long)i, v[i], want[i]);
    free(v);
    free(want);
}

static void test_to_host_f32_dequantizes(void **state) {
    (void)state;
    need_ref();
    wk_scope_begin();
    int n = for_cases('d', host_f32_case);
    wk_scope_end();
    assert_true(n >= 12);
}

/* ---- the real model file ---- */

/* quant_ref.py's checksums: sums of the bit patterns (u32 of f32 values, or
 * bytes), plain and weighted by position % 65521 + 1, wrapping. */
static void checksums(const void *p, size_t n, int esz, uint64_t *s1, uint64_t *s2) {
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        if (esz == 4) {
            uint32_t v;
            memcpy(&v, (const char *)p + 4 * i, 4);
            u = v;
        } else {
            u = ((const unsigned char *)p)[i];
        }
        a += u;
        b += u * (uint64_t)(i % 65521 + 1);
    }
    *s1 = a;
    *s2 = b;
}

/* Every quantized tensor of the SmolLM2 GGUF (read at its offset, as raw
 * blocks): wick's dequantization == gguf-py's, and requantizing its first
 * rows to each of the five types == gguf-py's bytes. */
static void test_real_model(void **state) {
    (void)state;
    need_ref();
    const char *gguf = getenv("WICK_SMOLLM2_GGUF"), *py = getenv("WICK_VENV_PYTHON");
    if (!gguf || !*gguf) {
        print_message("WICK_SMOLLM2_GGUF not set (run scripts/setup.sh): skipping the real model\n");
        skip();
    }
    char list[1200], cmd[4096], src[1024];
    snprintf(list, sizeof list, "%s/model.txt", g_dir);
    snprintf(src, sizeof src, "%s", __FILE__);
    char *slash = strrchr(src, '/');
    if (slash) *slash = 0;
    snprintf(cmd, sizeof cmd, "'%s' '%s/quant_ref.py' --model '%s' '%s'", py, src, gguf, list);
    assert_int_equal(system(cmd), 0);
    FILE *lf = fopen(list, "r"), *mf = fopen(gguf, "rb");
    assert_non_null(lf);
    assert_non_null(mf);
    static char line[4096];
    int tensors = 0, requant = 0;
    int64_t elems = 0;
    while (fgets(line, sizeof line, lf)) {
        char name[128], type[16];
        long long rows, cols, off, nbytes, qrows;
        unsigned long long w1, w2;
        int used = 0;
        if (sscanf(line, "t %127s %15s %lld %lld %lld %lld %llu %llu %lld%n", name, type, &rows, &cols, &off, &nbytes,
                   &w1, &w2, &qrows, &used) != 9)
            fail_msg("bad line %s", line);
        wk_dtype qdt;
        assert_true(wk_dtype_from_name(type, &qdt));
        void *raw = malloc((size_t)nbytes);
        assert_non_null(raw);
        assert_int_equal(fseek(mf, (long)off, SEEK_SET), 0);
        assert_int_equal(fread(raw, 1, (size_t)nbytes, mf), (size_t)nbytes);
        wk_scope_begin();
        int64_t shape[2] = {rows, cols};
        wk_tensor *q = TU_OK(wk_from_host(raw, (size_t)nbytes, shape, 2, qdt, wk_cpu()));
        free(raw);
        wk_tensor *f = TU_OK(wk_dequantize(q, WK_F32));
        size_t n = (size_t)(rows * cols);
        float *v = malloc(n * 4);
        assert_non_null(v);
        TU_STATUS_OK(wk_to_host(f, v, n * 4));
        uint64_t s1, s2;
        checksums(v, n, 4, &s1, &s2);
        free(v);
        if (s1 != w1 || s2 != w2)
            fail_msg("%s (%s %lldx%lld): dequantized values differ from gguf-py's", name, type, rows, cols);
        /* requantize the first rows to the five types gguf-py quantizes */
        wk_tensor *head = TU_OK(wk_narrow(f, 0, 0, qrows));
        const char *p = line + used;
        char tn[16];
        int adv;
        while (sscanf(p, " %15s %llu %llu%n", tn, &w1, &w2, &adv) == 3) {
            p += adv;
            wk_dtype t2;
            assert_true(wk_dtype_from_name(tn, &t2));
            wk_tensor *r = TU_OK(wk_quantize(head, t2));
            size_t nb = (size_t)(qrows * cols) / 32 * wk_dtype_info_of(t2)->block_bytes;
            unsigned char *b = malloc(nb);
            assert_non_null(b);
            TU_STATUS_OK(wk_to_host(r, b, nb));
            checksums(b, nb, 1, &s1, &s2);
            free(b);
            if (s1 != w1 || s2 != w2)
                fail_msg("%s rows 0..%lld requantized to %s: bytes differ from gguf-py's", name, qrows, tn);
            requant++;
        }
        wk_scope_end();
        tensors++;
        elems += rows * cols;
    }
    fclose(lf);
    fclose(mf);
    print_message("real model: %d quantized tensors (%lld values) dequantized as gguf-py does; %d requantizations "
                  "byte-exact\n", tensors, (long long)elems, requant);
    assert_true(tensors >= 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_bytes),
        cmocka_unit_test(test_dequantize_values),
        cmocka_unit_test(test_to_host_f32_dequantizes),
        cmocka_unit_test(test_real_model),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
