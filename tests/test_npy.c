/* .npy / .npz reading and writing: round trips, files written by numpy
 * (generated at test time with /usr/bin/python3; skipped when numpy is
 * missing), hand-made Fortran-order / big-endian / Zip64 images, and hostile
 * or truncated input. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "io/npy_internal.h"

#define PYTHON "/usr/bin/python3"

static char g_root[256];

/* ---------------------------------------------------------------- helpers */

static int group_setup(void **state) {
    (void)state;
    snprintf(g_root, sizeof g_root, "%s/wick_npy_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(g_root) ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fresh directory for one test: <root>/<name>. */
static void test_dir(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", g_root, name);
    mkdir(out, 0700);
}

static void join(char *out, size_t cap, const char *dir, const char *file) { snprintf(out, cap, "%s/%s", dir, file); }

static bool have_numpy(void) {
    static int have = -1;
    if (have < 0)
        have = access(PYTHON, X_OK) == 0 && system(PYTHON " -c 'import numpy' >/dev/null 2>&1") == 0;
    return have == 1;
}

#define NEED_NUMPY()                                                                 \
    do {                                                                             \
        if (!have_numpy()) {                                                         \
            print_message("skipping: " PYTHON " with numpy is not available\n");     \
            skip();                                                                  \
        }                                                                            \
    } while (0)

/* Common prelude of the generator scripts: ref(name, a) writes a's values as
 * raw little-endian C-order bytes (name.bin) and a manifest line
 * "name wick_dtype rank dims...". */
static const char *PY_PRELUDE =
    "import numpy as np, sys, os, zipfile\n"
    "D = sys.argv[1]\n"
    "WK = {'u1':'u8','b1':'u8','u4':'u32','i2':'i16','i4':'i32','i8':'i64','f2':'f16','f4':'f32','f8':'f64'}\n"
    "man = open(os.path.join(D, 'manifest.txt'), 'w')\n"
    "def P(n): return os.path.join(D, n)\n"
    "def ref(name, a):\n"
    "    a = np.asarray(a)\n"
    "    le = np.ascontiguousarray(a.astype(a.dtype.newbyteorder('<')))\n"
    "    open(P(name + '.bin'), 'wb').write(le.tobytes())\n"
    "    man.write('%s %s %d %s\\n' % (name, WK[a.dtype.str[1:]], a.ndim, ' '.join(str(d) for d in a.shape)))\n"
    "    man.flush()\n"
    "rng = np.random.default_rng(1234)\n";

/* Run a python script (prelude + body) with the directory as argv[1]. */
static void run_python(const char *dir, const char *body) {
    char path[512], cmd[1200];
    join(path, sizeof path, dir, "gen.py");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(PY_PRELUDE, f);
    fputs(body, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, PYTHON " '%s' '%s'", path, dir);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "python script failed (%d):\n%s\n", rc, body);
    assert_int_equal(rc, 0);
}

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_all(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

/* All of t's elements as bytes (malloc'd). */
static uint8_t *tensor_bytes(const wk_tensor *t, size_t *n) {
    *n = (size_t)wk_numel(t) * wk_dtype_size(wk_tensor_dtype(t));
    uint8_t *b = malloc(*n + 1);
    assert_non_null(b);
    TU_STATUS_OK(wk_to_host(t, b, *n));
    return b;
}

/* Same dtype, shape and bytes. */
static void assert_same_tensor(const wk_tensor *a, const wk_tensor *b) {
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(wk_tensor_dtype(a), wk_tensor_dtype(b));
    tu_assert_shape(b, wk_shape(a), wk_rank(a));
    size_t na, nb;
    uint8_t *x = tensor_bytes(a, &na), *y = tensor_bytes(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x);
    free(y);
}

/* Compare t with the reference that the python prelude's ref() wrote. */
static void assert_matches_ref(const char *dir, const wk_tensor *t, const char *name) {
    char path[512], line[512];
    join(path, sizeof path, dir, "manifest.txt");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        char nm[128], dtn[16];
        int rank, pos;
        if (sscanf(line, "%127s %15s %d%n", nm, dtn, &rank, &pos) != 3 || strcmp(nm, name) != 0) continue;
        found = true;
        int64_t shape[WK_MAX_RANK];
        const char *s = line + pos;
        for (int i = 0; i < rank; i++) {
            long long v;
            int k;
            assert_int_equal(sscanf(s, "%lld%n", &v, &k), 1);
            shape[i] = v;
            s += k;
        }
        wk_dtype dt;
        assert_true(wk_dtype_from_name(dtn, &dt));
        if (wk_tensor_dtype(t) != dt) fail_msg("%s: dtype %s, expected %s", name, wk_dtype_name(wk_tensor_dtype(t)), dtn);
        tu_assert_shape(t, shape, rank);
        char bin[512], file[160];
        snprintf(file, sizeof file, "%s.bin", name);
        join(bin, sizeof bin, dir, file);
        size_t rn, tn;
        uint8_t *r = read_all(bin, &rn), *v = tensor_bytes(t, &tn);
        assert_non_null(r);
        assert_int_equal(rn, tn);
        if (memcmp(r, v, rn) != 0) fail_msg("%s: values differ from numpy's", name);
        free(r);
        free(v);
    }
    fclose(f);
    if (!found) fail_msg("%s not in the manifest", name);
}

/* Build an .npy image by hand: magic, version, header dict (padded to 64 with
 * a newline unless raw_header), then data. */
static uint8_t *make_npy(int major, const char *dict, const void *data, size_t dlen, size_t *out_len) {
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict);
    size_t total = (pre + hl + 1 + 63) / 64 * 64;
    uint8_t *b = malloc(total + dlen + 1);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    size_t h = total - pre;
    if (major == 1) {
        b[8] = (uint8_t)h;
        b[9] = (uint8_t)(h >> 8);
    } else {
        b[8] = (uint8_t)h;
        b[9] = (uint8_t)(h >> 8);
        b[10] = (uint8_t)(h >> 16);
        b[11] = (uint8_t)(h >> 24);
    }
    memcpy(b + pre, dict, hl);
    memset(b + pre + hl, ' ', total - pre - hl);
    b[total - 1] = '\n';
    if (dlen) memcpy(b + total, data, dlen);
    *out_len = total + dlen;
    return b;
}

/* Expect wk_npy_load_bytes to fail with st (and the copy in a file too). */
static void expect_npy_fails(const uint8_t *img, size_t len, wk_status st, const char *what) {
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees over-reads */
    assert_non_null(copy);
    memcpy(copy, img, len);
    wk_tensor *t = wk_npy_load_bytes(copy, len, wk_cpu());
    if (t || wk_last_status() != st) {
        fprintf(stderr, "%s: got %s (%s), expected %s\n", what, t ? "a tensor" : wk_status_name(wk_last_status()),
                wk_last_error(), wk_status_name(st));
        wk_tensor_free(t);
        free(copy);
        fail();
    }
    assert_true(strlen(wk_last_error()) > 0);
    wk_clear_error();
    free(copy);
}

/* --------------------------------------------------------- zip building */

typedef struct zmember {
    const char    *name;
    const uint8_t *data;
    size_t         len;
    int            method;  /* 0 or 8 */
    bool           zip64;   /* Zip64 extra fields, saturated sizes and offset */
} zmember;

typedef struct zbuf {
    uint8_t *b;
    size_t   n, cap;
} zbuf;

static void zput(zbuf *z, const void *p, size_t n) {
    if (z->n + n > z->cap) {
        z->cap = (z->n + n) * 2 + 64;
        z->b = realloc(z->b, z->cap);
        assert_non_null(z->b);
    }
    if (n) memcpy(z->b + z->n, p, n);
    z->n += n;
}
static void zput16(zbuf *z, uint32_t v) {
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    zput(z, b, 2);
}
static void zput32(zbuf *z, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    zput(z, b, 4);
}
static void zput64(zbuf *z, uint64_t v) {
    zput32(z, (uint32_t)v);
    zput32(z, (uint32_t)(v >> 32));
}

static uint8_t *raw_deflate(const uint8_t *src, size_t n, size_t *out_n) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n) + 16;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *out_n = zs.total_out;
    deflateEnd(&zs);
    return out;
}

/* A zip archive of the members; zip64_end adds Zip64 end records and
 * saturates the classic end record. */
static uint8_t *build_zip(const zmember *m, int n, bool zip64_end, size_t *out_len) {
    zbuf z = {0};
    uint64_t *offs = calloc((size_t)n + 1, sizeof *offs);
    uint8_t **comp = calloc((size_t)n + 1, sizeof *comp);
    size_t *clen = calloc((size_t)n + 1, sizeof *clen);
    uint32_t *crcs = calloc((size_t)n + 1, sizeof *crcs);
    assert_true(offs && comp && clen && crcs);
    for (int i = 0; i < n; i++) {
        crcs[i] = (uint32_t)crc32(0, m[i].data, (uInt)m[i].len);
        if (m[i].method == 8) {
            comp[i] = raw_deflate(m[i].data, m[i].len, &clen[i]);
        } else {
            comp[i] = malloc(m[i].len + 1);
            memcpy(comp[i], m[i].data, m[i].len);
            clen[i] = m[i].len;
        }
        offs[i] = z.n;
        size_t nl = strlen(m[i].name);
        zput32(&z, 0x04034b50);
        zput16(&z, m[i].zip64 ? 45 : 20);
        zput16(&z, 0);
        zput16(&z, (uint32_t)m[i].method);
        zput16(&z, 0);
        zput16(&z, 0x21);
        zput32(&z, crcs[i]);
        zput32(&z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)clen[i]);
        zput32(&z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)m[i].len);
        zput16(&z, (uint32_t)nl);
        zput16(&z, m[i].zip64 ? 20 : 0);
        zput(&z, m[i].name, nl);
        if (m[i].zip64) {
            zput16(&z, 1);
            zput16(&z, 16);
            zput64(&z, m[i].len);
            zput64(&z, clen[i]);
        }
        zput(&z, comp[i], clen[i]);
    }
    uint64_t cd_off = z.n;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name);
        zput32(&z, 0x02014b50);
        zput16(&z, 0x031e);
        zput16(&z, m[i].zip64 ? 45 : 20);
        zput16(&z, 0);
        zput16(&z, (uint32_t)m[i].method);
        zput16(&z, 0);
        zput16(&z, 0x21);
        zput32(&z, crcs[i]);
        zput32(&z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)clen[i]);
        zput32(&z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)m[i].len);
        zput16(&z, (uint32_t)nl);
        zput16(&z, m[i].zip64 ? 4 + 24 + 4 + 4 : 0); /* an unknown extra first, then Zip64 */
        zput16(&z, 0);
        zput16(&z, 0);
        zput16(&z, 0);
        zput32(&z, 0);
        zput32(&z, m[i].zip64 ? 0xFFFFFFFFu : (uint32_t)offs[i]);
        zput(&z, m[i].name, nl);
        if (m[i].zip64) {
            zput16(&z, 0x5455); /* extended timestamp, skipped by readers */
            zput16(&z, 4);
            zput32(&z, 0);
            zput16(&z, 1);
            zput16(&z, 24);
            zput64(&z, m[i].len);
            zput64(&z, clen[i]);
            zput64(&z, offs[i]);
        }
    }
    uint64_t cd_size = z.n - cd_off;
    if (zip64_end) {
        uint64_t e64 = z.n;
        zput32(&z, 0x06064b50);
        zput64(&z, 44);
        zput16(&z, 45);
        zput16(&z, 45);
        zput32(&z, 0);
        zput32(&z, 0);
        zput64(&z, (uint64_t)n);
        zput64(&z, (uint64_t)n);
        zput64(&z, cd_size);
        zput64(&z, cd_off);
        zput32(&z, 0x07064b50);
        zput32(&z, 0);
        zput64(&z, e64);
        zput32(&z, 1);
    }
    zput32(&z, 0x06054b50);
    zput16(&z, 0);
    zput16(&z, 0);
    zput16(&z, zip64_end ? 0xFFFF : (uint32_t)n);
    zput16(&z, zip64_end ? 0xFFFF : (uint32_t)n);
    zput32(&z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd_size);
    zput32(&z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd_off);
    zput16(&z, 0);
    for (int i = 0; i < n; i++) free(comp[i]);
    free(offs);
    free(comp);
    free(clen);
    free(crcs);
    *out_len = z.n;
    return z.b;
}

static wk_status npz_bytes(const uint8_t *img, size_t len, char ***names, wk_tensor ***ts, int *count) {
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, img, len);
    wk_status st = wk__npz_load_bytes(copy, len, wk_cpu(), names, ts, count, "test", "<memory>");
    free(copy);
    return st;
}

static void expect_npz_fails(const uint8_t *img, size_t len, const char *what) {
    char **names = (char **)1;
    wk_tensor **ts = (wk_tensor **)1;
    int count = 7;
    wk_status st = npz_bytes(img, len, &names, &ts, &count);
    if (st == WK_OK) {
        wk_npz_free(names, ts, count);
        fail_msg("%s: loaded, expected an error", what);
    }
    if (st != WK_ERR_FORMAT) fail_msg("%s: %s (%s), expected WK_ERR_FORMAT", what, wk_status_name(st), wk_last_error());
    assert_int_equal(wk_last_status(), st);
    assert_null(names);
    assert_null(ts);
    assert_int_equal(count, 0);
    wk_clear_error();
}

static const wk_dtype NPY_DTYPES[] = {WK_U8, WK_U32, WK_I16, WK_I32, WK_I64, WK_F16, WK_F32, WK_F64};
#define N_NPY_DTYPES ((int)(sizeof NPY_DTYPES / sizeof NPY_DTYPES[0]))

/* Deterministic test values that every dtype holds exactly. */
static wk_tensor *make_values(const int64_t *shape, int rank, wk_dtype dt, int salt) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_non_null(v);
    bool is_unsigned = dt == WK_U8 || dt == WK_U32;
    for (int64_t i = 0; i < n; i++) {
        double x = (double)((i * 37 + salt * 11) % 101);
        if (!is_unsigned) x -= 50;
        if (wk_dtype_is_float(dt)) x *= 0.25;
        v[i] = x;
    }
    wk_tensor *t = tu_make(v, shape, rank, dt);
    free(v);
    return t;
}

/* ------------------------------------------------------------ round trips */

static void check_saved_preamble(const char *path) {
    size_t n;
    uint8_t *b = read_all(path, &n);
    assert_non_null(b);
    assert_true(n >= 64);
    assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
    size_t pre = 10 + (size_t)(b[8] | (b[9] << 8));
    assert_int_equal(pre % 64, 0);
    assert_true(pre <= n);
    assert_int_equal(b[pre - 1], '\n');
    assert_memory_equal(b + 10, "{'descr': '", 11);
    free(b);
}

static void test_roundtrip_dtypes_ranks(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "roundtrip");
    static const int64_t shapes[5][4] = {{0}, {5}, {2, 3}, {2, 3, 4}, {2, 1, 3, 2}};
    for (int d = 0; d < N_NPY_DTYPES; d++) {
        for (int r = 0; r <= 4; r++) {
            wk_dtype dt = NPY_DTYPES[d];
            wk_tensor *t = make_values(shapes[r], r, dt, d + r);
            char file[64];
            snprintf(file, sizeof file, "%s_r%d.npy", wk_dtype_name(dt), r);
            join(path, sizeof path, dir, file);
            TU_STATUS_OK(wk_npy_save(path, t));
            check_saved_preamble(path);
            wk_tensor *back = TU_OK(wk_npy_load(path, wk_cpu()));
            assert_same_tensor(t, back);
            wk_tensor_free(back);
            /* The same bytes through the in-memory loader. */
            size_t n;
            uint8_t *img = read_all(path, &n);
            back = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
            assert_same_tensor(t, back);
            wk_tensor_free(back);
            free(img);
            wk_tensor_free(t);
        }
    }
}

static void test_roundtrip_empty(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "empty");
    static const int64_t shapes[3][3] = {{0, 3}, {0}, {3, 0, 2}};
    static const int ranks[3] = {2, 1, 3};
    for (int i = 0; i < 3; i++) {
        wk_tensor *t = TU_OK(wk_zeros(shapes[i], ranks[i], WK_F32, wk_cpu()));
        join(path, sizeof path, dir, "e.npy");
        TU_STATUS_OK(wk_npy_save(path, t));
        wk_tensor *back = TU_OK(wk_npy_load(path, wk_cpu()));
        assert_int_equal(wk_numel(back), 0);
        tu_assert_shape(back, shapes[i], ranks[i]);
        assert_int_equal(wk_tensor_dtype(back), WK_F32);
        wk_tensor_free(back);
        wk_tensor_free(t);
    }
}

static void test_save_noncontiguous(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "noncontig");
    int64_t shape[2] = {3, 4};
    wk_tensor *t = make_values(shape, 2, WK_I32, 3);
    wk_tensor *tt = TU_OK(wk_t(t)); /* 4x3 transposed view */
    assert_false(wk_is_contiguous(tt));
    join(path, sizeof path, dir, "t.npy");
    TU_STATUS_OK(wk_npy_save(path, tt));
    wk_tensor *back = TU_OK(wk_npy_load(path, wk_cpu()));
    assert_true(wk_is_contiguous(back));
    assert_same_tensor(tt, back); /* logical values, not storage order */
    wk_tensor_free(back);
    wk_tensor *nv = TU_OK(wk_narrow(tt, 1, 1, 2)); /* 4x2 with an offset */
    TU_STATUS_OK(wk_npy_save(path, nv));
    back = TU_OK(wk_npy_load(path, wk_cpu()));
    assert_same_tensor(nv, back);
    wk_tensor_free(back);
    wk_tensor_free(nv);
    wk_tensor_free(tt);
    wk_tensor_free(t);
}

static void test_save_unsupported_dtypes(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "baddtype");
    int64_t shape[1] = {4};
    const wk_dtype bad[2] = {WK_BF16, WK_F8E4M3};
    for (int i = 0; i < 2; i++) {
        wk_tensor *t = make_values(shape, 1, bad[i], 0);
        join(path, sizeof path, dir, "x.npy");
        assert_int_equal(wk_npy_save(path, t), WK_ERR_DTYPE);
        assert_non_null(strstr(wk_last_error(), wk_dtype_name(bad[i])));
        assert_false(file_exists(path));
        wk_clear_error();
        join(path, sizeof path, dir, "x.npz");
        const char *names[1] = {"a"};
        assert_int_equal(wk_npz_save(path, names, &t, 1), WK_ERR_DTYPE);
        assert_false(file_exists(path));
        wk_clear_error();
        wk_tensor_free(t);
    }
    /* NULL arguments */
    assert_int_equal(wk_npy_save(NULL, NULL), WK_ERR_ARG);
    wk_clear_error();
    join(path, sizeof path, dir, "n.npy");
    assert_int_not_equal(wk_npy_save(path, NULL), WK_OK);
    wk_clear_error();
    TU_FAILS(wk_npy_load(NULL, wk_cpu()), WK_ERR_ARG);
    TU_FAILS(wk_npy_load_bytes(NULL, 10, wk_cpu()), WK_ERR_ARG);
}

/* ------------------------------------------------- hand-made npy images */

static void test_header_variants(void **state) {
    (void)state;
    const int32_t v[6] = {1, 2, 3, 4, 5, 6};
    const double want[6] = {1, 2, 3, 4, 5, 6};
    static const char *dicts[] = {
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
        "{'shape': (2, 3), 'descr': '<i4', 'fortran_order': False}",
        "{ \"fortran_order\" :False ,\"shape\":( 2 ,3 ) ,  \"descr\":\"<i4\" , }",
        "{'descr':'<i4','fortran_order':False,'shape':(2L, 3L)}",
        "\t{'descr': '<i4',\n 'fortran_order': False,\n 'shape': (2,3,),\n}",
    };
    int64_t shape[2] = {2, 3};
    for (int major = 1; major <= 3; major++) {
        for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
            size_t n;
            uint8_t *img = make_npy(major, dicts[i], v, sizeof v, &n);
            wk_tensor *t = wk_npy_load_bytes(img, n, wk_cpu());
            if (!t) fail_msg("v%d header %zu: %s", major, i, wk_last_error());
            tu_assert_shape(t, shape, 2);
            assert_int_equal(wk_tensor_dtype(t), WK_I32);
            tu_assert_close(t, want, 6, 0, 0);
            wk_tensor_free(t);
            free(img);
        }
    }
    /* Rank 0 and (n,) */
    size_t n;
    const double one = 2.5;
    uint8_t *img = make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &one, 8, &n);
    wk_tensor *t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_rank(t), 0);
    tu_assert_close(t, &one, 1, 0, 0);
    wk_tensor_free(t);
    free(img);
    img = make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", v, sizeof v, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    int64_t s6 = 6;
    tu_assert_shape(t, &s6, 1);
    wk_tensor_free(t);
    free(img);
    /* Trailing garbage after the data is ignored. */
    uint8_t more[32];
    memcpy(more, v, sizeof v);
    memset(more + sizeof v, 0xAB, sizeof more - sizeof v);
    img = make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", more, sizeof more, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    tu_assert_close(t, want, 6, 0, 0);
    wk_tensor_free(t);
    free(img);
    /* bool is read as u8 */
    const uint8_t bools[3] = {1, 0, 1};
    const double bw[3] = {1, 0, 1};
    img = make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bools, 3, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_tensor_dtype(t), WK_U8);
    tu_assert_close(t, bw, 3, 0, 0);
    wk_tensor_free(t);
    free(img);
}

static void test_fortran_and_big_endian(void **state) {
    (void)state;
    size_t n;
    /* 2x3 Fortran: memory holds columns (1,4) (2,5) (3,6). */
    const int32_t colmajor[6] = {1, 4, 2, 5, 3, 6};
    const double want[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3};
    uint8_t *img = make_npy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", colmajor, 24, &n);
    wk_tensor *t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    tu_assert_shape(t, s23, 2);
    tu_assert_close(t, want, 6, 0, 0);
    wk_tensor_free(t);
    free(img);

    /* Big-endian scalars of every width. */
    const uint8_t be_i2[4] = {0x01, 0x02, 0xFF, 0xFE};             /* 258, -2 */
    const double w_i2[2] = {258, -2};
    img = make_npy(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }", be_i2, 4, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_tensor_dtype(t), WK_I16);
    tu_assert_close(t, w_i2, 2, 0, 0);
    wk_tensor_free(t);
    free(img);
    const uint8_t be_f4[4] = {0x3F, 0xC0, 0x00, 0x00};             /* 1.5 */
    const double w_f4 = 1.5;
    img = make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", be_f4, 4, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    tu_assert_close(t, &w_f4, 1, 0, 0);
    wk_tensor_free(t);
    free(img);
    const uint8_t be_u4[4] = {0x01, 0x00, 0x00, 0x02};
    const double w_u4 = 16777218.0;
    img = make_npy(1, "{'descr': '>u4', 'fortran_order': False, 'shape': (), }", be_u4, 4, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_tensor_dtype(t), WK_U32);
    tu_assert_close(t, &w_u4, 1, 0, 0);
    wk_tensor_free(t);
    free(img);
    const uint8_t be_f8[8] = {0xC0, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18}; /* -pi */
    const double w_f8 = -3.141592653589793;
    img = make_npy(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1, 1), }", be_f8, 8, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    tu_assert_close(t, &w_f8, 1, 0, 0);
    wk_tensor_free(t);
    free(img);
    const uint8_t be_f2[2] = {0x3C, 0x00}; /* 1.0 */
    const double w_f2 = 1.0;
    img = make_npy(1, "{'descr': '>f2', 'fortran_order': False, 'shape': (1,), }", be_f2, 2, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_tensor_dtype(t), WK_F16);
    tu_assert_close(t, &w_f2, 1, 0, 0);
    wk_tensor_free(t);
    free(img);

    /* Fortran + big-endian, rank 3 (2x3x2): element (i,j,k) at i + 2j + 6k. */
    int64_t s[3] = {2, 3, 2};
    uint8_t data[12 * 8];
    double w[12];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) {
                int64_t v = (int64_t)(100 * i + 10 * j + k) - 7;
                w[i * 6 + j * 2 + k] = (double)v;
                int pos = i + 2 * j + 6 * k;
                for (int b = 0; b < 8; b++) data[pos * 8 + b] = (uint8_t)((uint64_t)v >> (56 - 8 * b));
            }
    img = make_npy(1, "{'descr': '>i8', 'fortran_order': True, 'shape': (2, 3, 2), }", data, sizeof data, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    tu_assert_shape(t, s, 3);
    assert_int_equal(wk_tensor_dtype(t), WK_I64);
    tu_assert_close(t, w, 12, 0, 0);
    wk_tensor_free(t);
    free(img);
    /* Fortran-order empty and rank-1 arrays. */
    img = make_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (0, 4), }", NULL, 0, &n);
    t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_numel(t), 0);
    wk_tensor_free(t);
    free(img);
}

/* ------------------------------------------------------- files by numpy */

static void test_numpy_npy_files(void **state) {
    (void)state;
    NEED_NUMPY();
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "numpy_npy");
    run_python(dir,
               "arrs = {\n"
               " 'u1': rng.integers(0, 256, (3, 4), dtype=np.uint8),\n"
               " 'b1': rng.integers(0, 2, (5,)).astype(bool),\n"
               " 'u4': rng.integers(0, 2**32, (2, 2, 3), dtype=np.uint32),\n"
               " 'i2': rng.integers(-2**15, 2**15, (7,), dtype=np.int16),\n"
               " 'i4': rng.integers(-2**31, 2**31, (3, 5), dtype=np.int32),\n"
               " 'i8': rng.integers(-2**63, 2**63 - 1, (2, 3), dtype=np.int64),\n"
               " 'f2': rng.standard_normal((4, 3)).astype(np.float16),\n"
               " 'f4': rng.standard_normal((2, 3, 4, 5)).astype(np.float32),\n"
               " 'f8': rng.standard_normal((6,)),\n"
               " 'scalar': np.float64(3.25),\n"
               " 'empty': np.zeros((0, 3), np.float32),\n"
               " 'fortran2': np.asfortranarray(rng.standard_normal((3, 5)).astype(np.float32)),\n"
               " 'fortran4': np.asfortranarray(rng.integers(-99, 99, (2, 3, 4, 5), dtype=np.int32)),\n"
               " 'be_f4': rng.standard_normal((3, 4)).astype('>f4'),\n"
               " 'be_i8': rng.integers(-2**40, 2**40, (5,)).astype('>i8'),\n"
               " 'be_u4': rng.integers(0, 2**32, (2, 2), dtype=np.uint32).astype('>u4'),\n"
               " 'be_f2': rng.standard_normal((3,)).astype('>f2'),\n"
               " 'be_fortran': np.asfortranarray(rng.standard_normal((4, 3, 2))).astype('>f8', order='F'),\n"
               "}\n"
               "for k, a in arrs.items():\n"
               "    np.save(P(k + '.npy'), a)\n"
               "    ref(k, a)\n"
               "assert np.load(P('fortran2.npy')).flags.f_contiguous\n"
               "a = rng.standard_normal((3, 4)).astype(np.float32)\n"
               "for v in [(2, 0), (3, 0)]:\n"
               "    name = 'v%d' % v[0]\n"
               "    with open(P(name + '.npy'), 'wb') as f:\n"
               "        np.lib.format.write_array(f, a, version=v)\n"
               "    ref(name, a)\n"
               "np.save(P('u8.npy'), np.arange(4, dtype=np.uint64))\n"
               "np.save(P('i1.npy'), np.arange(4, dtype=np.int8))\n"
               "np.save(P('c8.npy'), np.arange(4, dtype=np.complex64))\n"
               "np.save(P('rec.npy'), np.zeros(3, dtype=[('a', '<f4'), ('b', '<i4')]))\n");
    static const char *names[] = {"u1", "b1", "u4", "i2", "i4", "i8", "f2", "f4", "f8", "scalar", "empty",
                                  "fortran2", "fortran4", "be_f4", "be_i8", "be_u4", "be_f2", "be_fortran",
                                  "v2", "v3"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.npy", names[i]);
        join(path, sizeof path, dir, file);
        wk_tensor *t = wk_npy_load(path, wk_cpu());
        if (!t) fail_msg("%s: %s", names[i], wk_last_error());
        assert_matches_ref(dir, t, names[i]);
        wk_tensor_free(t);
    }
    static const char *unsupported[] = {"u8", "i1", "c8", "rec"};
    for (size_t i = 0; i < 4; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.npy", unsupported[i]);
        join(path, sizeof path, dir, file);
        TU_FAILS(wk_npy_load(path, wk_cpu()), WK_ERR_FORMAT);
    }
    join(path, sizeof path, dir, "u8.npy");
    assert_null(wk_npy_load(path, wk_cpu()));
    assert_non_null(strstr(wk_last_error(), "unsupported dtype"));
    wk_clear_error();
}

/* Save with wick, check numpy reads the same values. */
static void test_numpy_reads_wick_files(void **state) {
    (void)state;
    NEED_NUMPY();
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "numpy_reads");
    int64_t shape[3] = {2, 3, 4};
    wk_tensor *ts[N_NPY_DTYPES];
    const char *names[N_NPY_DTYPES];
    for (int d = 0; d < N_NPY_DTYPES; d++) {
        ts[d] = make_values(shape, 1 + d % 3, NPY_DTYPES[d], d);
        names[d] = wk_dtype_name(NPY_DTYPES[d]);
        char file[64];
        snprintf(file, sizeof file, "%s.npy", names[d]);
        join(path, sizeof path, dir, file);
        TU_STATUS_OK(wk_npy_save(path, ts[d]));
    }
    join(path, sizeof path, dir, "all.npz");
    TU_STATUS_OK(wk_npz_save(path, names, ts, N_NPY_DTYPES));
    const char *utf8[1] = {"w\xc3\xa9ight"}; /* UTF-8 name: flag bit 11 */
    join(path, sizeof path, dir, "utf8.npz");
    TU_STATUS_OK(wk_npz_save(path, utf8, ts, 1));
    /* numpy re-exports each array (from the .npy files and from the .npz)
     * as raw bytes; zipfile's testzip() checks every CRC. */
    run_python(dir,
               "z = zipfile.ZipFile(P('all.npz'))\n"
               "assert z.testzip() is None\n"
               "npz = np.load(P('all.npz'))\n"
               "for k in ['u8', 'u32', 'i16', 'i32', 'i64', 'f16', 'f32', 'f64']:\n"
               "    a = np.load(P(k + '.npy'))\n"
               "    ref(k, a)\n"
               "    b = npz[k]\n"
               "    assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all(), k\n"
               "assert sorted(npz.files) == sorted(['u8', 'u32', 'i16', 'i32', 'i64', 'f16', 'f32', 'f64'])\n"
               "assert np.load(P('utf8.npz')).files == ['w\\u00e9ight']\n");
    for (int d = 0; d < N_NPY_DTYPES; d++) {
        assert_matches_ref(dir, ts[d], names[d]);
        wk_tensor_free(ts[d]);
    }
}

static void test_numpy_npz_files(void **state) {
    (void)state;
    NEED_NUMPY();
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "numpy_npz");
    run_python(dir,
               "arrs = dict(a=rng.standard_normal((2, 3)).astype(np.float32),\n"
               "            b=np.int64(-5),\n"
               "            c=np.zeros((0,), np.uint8),\n"
               "            d=np.asfortranarray(rng.standard_normal((3, 4))),\n"
               "            e=rng.integers(-1000, 1000, (4, 5)).astype('>i4'),\n"
               "            big=np.arange(70000, dtype=np.float32).reshape(700, 100))\n"
               "for k, a in arrs.items(): ref(k, a)\n"
               "np.savez(P('plain.npz'), **arrs)\n"
               "np.savez_compressed(P('comp.npz'), **arrs)\n"
               "np.savez(P('pos.npz'), np.arange(3, dtype=np.int16), np.ones((2, 2), np.float16))\n"
               "ref('arr_0', np.arange(3, dtype=np.int16))\n"
               "ref('arr_1', np.ones((2, 2), np.float16))\n"
               "np.savez(P('none.npz'))\n");
    static const char *files[] = {"plain.npz", "comp.npz"};
    static const char *expect[] = {"a", "b", "c", "d", "e", "big"};
    for (int f = 0; f < 2; f++) {
        char **names;
        wk_tensor **ts;
        int count;
        join(path, sizeof path, dir, files[f]);
        TU_STATUS_OK(wk_npz_load(path, wk_cpu(), &names, &ts, &count));
        assert_int_equal(count, 6);
        for (int i = 0; i < count; i++) {
            assert_string_equal(names[i], expect[i]);
            assert_matches_ref(dir, ts[i], names[i]);
        }
        wk_npz_free(names, ts, count);
    }
    char **names;
    wk_tensor **ts;
    int count;
    join(path, sizeof path, dir, "pos.npz");
    TU_STATUS_OK(wk_npz_load(path, wk_cpu(), &names, &ts, &count));
    assert_int_equal(count, 2);
    for (int i = 0; i < count; i++) assert_matches_ref(dir, ts[i], names[i]);
    wk_npz_free(names, ts, count);
    join(path, sizeof path, dir, "none.npz");
    TU_STATUS_OK(wk_npz_load(path, wk_cpu(), &names, &ts, &count));
    assert_int_equal(count, 0);
    wk_npz_free(names, ts, count);

    /* A corrupted deflate stream in the compressed archive. */
    size_t n;
    join(path, sizeof path, dir, "comp.npz");
    uint8_t *img = read_all(path, &n);
    size_t data0 = 30 + (size_t)(img[26] | img[27] << 8) + (size_t)(img[28] | img[29] << 8);
    for (size_t k = 0; k < 24; k += 3) { /* inside the first member's deflate stream */
        uint8_t *bad = malloc(n);
        memcpy(bad, img, n);
        bad[data0 + k] ^= 0x5A;
        expect_npz_fails(bad, n, "corrupted savez_compressed");
        free(bad);
    }
    free(img);
}

/* ---------------------------------------------------------------- npz */

static void test_npz_roundtrip(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "npz_rt");
    int64_t s0[1] = {0}, s2[2] = {3, 4}, s4[4] = {2, 1, 2, 3};
    wk_tensor *a = make_values(s2, 2, WK_F32, 1);
    wk_tensor *ts[5] = {
        a,
        TU_OK(wk_t(a)),                       /* non-contiguous */
        make_values(NULL, 0, WK_I64, 2),      /* rank 0 */
        TU_OK(wk_zeros(s0, 1, WK_U8, wk_cpu())),
        make_values(s4, 4, WK_F16, 3),
    };
    const char *names[5] = {"weights", "w.T", "step", "empty", "x/y"};
    join(path, sizeof path, dir, "m.npz");
    TU_STATUS_OK(wk_npz_save(path, names, ts, 5));
    char **ln;
    wk_tensor **lt;
    int count;
    TU_STATUS_OK(wk_npz_load(path, wk_cpu(), &ln, &lt, &count));
    assert_int_equal(count, 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(ln[i], names[i]);
        assert_same_tensor(ts[i], lt[i]);
    }
    wk_npz_free(ln, lt, count);
    /* Empty archive */
    TU_STATUS_OK(wk_npz_save(path, NULL, NULL, 0));
    TU_STATUS_OK(wk_npz_load(path, wk_cpu(), &ln, &lt, &count));
    assert_int_equal(count, 0);
    wk_npz_free(ln, lt, count);
    /* Bad names */
    const char *empty_name[1] = {""};
    assert_int_equal(wk_npz_save(path, empty_name, ts, 1), WK_ERR_ARG);
    wk_clear_error();
    const char *null_name[1] = {NULL};
    assert_int_equal(wk_npz_save(path, null_name, ts, 1), WK_ERR_ARG);
    wk_clear_error();
    const char *dup[2] = {"a", "a"};
    assert_int_equal(wk_npz_save(path, dup, ts, 2), WK_ERR_ARG);
    wk_clear_error();
    assert_int_equal(wk_npz_save(path, names, ts, -1), WK_ERR_ARG);
    wk_clear_error();
    char *long_name = malloc(70000);
    memset(long_name, 'n', 69999);
    long_name[69999] = '\0';
    const char *ln1[1] = {long_name};
    assert_int_equal(wk_npz_save(path, ln1, ts, 1), WK_ERR_ARG);
    wk_clear_error();
    free(long_name);
    wk_tensor *null_t[1] = {NULL};
    assert_int_not_equal(wk_npz_save(path, names, null_t, 1), WK_OK);
    wk_clear_error();
    /* Over 4 GiB would need Zip64: refused before anything is written (a
     * broadcast view has the logical size without the memory). */
    int64_t huge[2] = {(int64_t)1 << 28, 5};
    wk_tensor *big = TU_OK(wk_broadcast_as(ts[2], huge, 2));
    char bigpath[400];
    join(bigpath, sizeof bigpath, dir, "big.npz");
    const char *bn[1] = {"big"};
    assert_int_equal(wk_npz_save(bigpath, bn, &big, 1), WK_ERR_ARG);
    assert_non_null(strstr(wk_last_error(), "Zip64"));
    assert_false(file_exists(bigpath));
    wk_clear_error();
    wk_tensor_free(big);
    assert_int_equal(wk_npz_load(path, wk_cpu(), NULL, &lt, &count), WK_ERR_ARG);
    wk_clear_error();
    for (int i = 0; i < 5; i++) wk_tensor_free(ts[i]);
}

/* Zip64 extras and end records, deflated and stored members, an extra field
 * before the Zip64 one, a directory entry, a member not ending in .npy. */
static void test_npz_handmade_zip(void **state) {
    (void)state;
    size_t n1, n2, zn;
    const float f[4] = {1, 2, 3, 4};
    const int16_t s[3] = {-1, 0, 1};
    uint8_t *m1 = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f, sizeof f, &n1);
    uint8_t *m2 = make_npy(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", s, sizeof s, &n2);
    for (int variant = 0; variant < 4; variant++) {
        bool z64 = variant & 1, deflate = variant & 2;
        zmember m[3] = {
            {"first.npy", m1, n1, deflate ? 8 : 0, z64},
            {"dir/", (const uint8_t *)"", 0, 0, false},
            {"second", m2, n2, deflate ? 0 : 8, !z64},
        };
        uint8_t *zip = build_zip(m, 3, z64, &zn);
        char **names;
        wk_tensor **ts;
        int count;
        wk_status st = npz_bytes(zip, zn, &names, &ts, &count);
        if (st != WK_OK) fail_msg("variant %d: %s", variant, wk_last_error());
        assert_int_equal(count, 2);
        assert_string_equal(names[0], "first");
        assert_string_equal(names[1], "second");
        const double w1[4] = {1, 2, 3, 4}, w2[3] = {-1, 0, 1};
        tu_assert_close(ts[0], w1, 4, 0, 0);
        tu_assert_close(ts[1], w2, 3, 0, 0);
        wk_npz_free(names, ts, count);

        /* Every truncation fails cleanly. */
        for (size_t cut = 0; cut < zn; cut++) expect_npz_fails(zip, cut, "truncated zip");
        free(zip);
    }
    /* Two directory entries sharing one member (the "overlapping files" zip
     * bomb) are refused. */
    zmember two[2] = {{"a.npy", m1, n1, 0, false}, {"b.npy", m1, n1, 0, false}};
    uint8_t *zip = build_zip(two, 2, false, &zn);
    {
        char **names;
        wk_tensor **ts;
        int count;
        TU_STATUS_OK(npz_bytes(zip, zn, &names, &ts, &count));
        assert_int_equal(count, 2);
        wk_npz_free(names, ts, count);
    }
    size_t cd = (size_t)(zip[zn - 6] | zip[zn - 5] << 8 | zip[zn - 4] << 16 | (size_t)zip[zn - 3] << 24);
    size_t second = cd + 46 + 5;
    zip[second + 42] = 0; /* local header offset of "b.npy" -> 0, same as "a.npy" */
    zip[second + 43] = 0;
    expect_npz_fails(zip, zn, "two entries, one member");
    free(zip);
    /* A member whose content is not an .npy: the npy error, everything freed. */
    zmember bad[2] = {{"ok.npy", m1, n1, 0, false}, {"junk.npy", (const uint8_t *)"not an npy file", 15, 0, false}};
    zip = build_zip(bad, 2, false, &zn);
    expect_npz_fails(zip, zn, "second member is not .npy");
    free(zip);
    free(m1);
    free(m2);
}

/* Member names the writer would refuse are refused by the reader too: two
 * members of one name (also "a.npy" next to "a", both loaded as "a"), and a
 * name with an embedded NUL (a C string would cut "a\0b" to "a"). */
static void test_npz_hostile_names(void **state) {
    (void)state;
    size_t n1, zn;
    const float f[4] = {1, 2, 3, 4};
    uint8_t *m1 = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f, sizeof f, &n1);
    const char *pairs[3][2] = {{"a.npy", "a.npy"}, {"a.npy", "a"}, {"x", "x"}};
    for (int i = 0; i < 3; i++) {
        zmember two[3] = {{pairs[i][0], m1, n1, 0, false}, {"other.npy", m1, n1, 8, false}, {pairs[i][1], m1, n1, 8, false}};
        uint8_t *zip = build_zip(two, 3, false, &zn);
        expect_npz_fails(zip, zn, "duplicate member names");
        char **names;
        wk_tensor **ts;
        int count;
        assert_int_equal(npz_bytes(zip, zn, &names, &ts, &count), WK_ERR_FORMAT);
        if (!strstr(wk_last_error(), "duplicate")) fail_msg("message: %s", wk_last_error());
        wk_clear_error();
        free(zip);
    }
    /* distinct names still load (the check is not over-eager) */
    zmember ok[2] = {{"a.npy", m1, n1, 0, false}, {"ab.npy", m1, n1, 0, false}};
    uint8_t *zip = build_zip(ok, 2, false, &zn);
    {
        char **names;
        wk_tensor **ts;
        int count;
        TU_STATUS_OK(npz_bytes(zip, zn, &names, &ts, &count));
        assert_int_equal(count, 2);
        wk_npz_free(names, ts, count);
    }
    free(zip);
    /* "aXb.npy" with X patched to NUL in the local and central headers */
    zmember nul[1] = {{"aXb.npy", m1, n1, 0, false}};
    zip = build_zip(nul, 1, false, &zn);
    int patched = 0;
    for (size_t i = 0; i + 7 <= zn; i++)
        if (memcmp(zip + i, "aXb.npy", 7) == 0) { zip[i + 1] = 0; patched++; }
    assert_int_equal(patched, 2);
    expect_npz_fails(zip, zn, "embedded NUL in a name");
    {
        char **names;
        wk_tensor **ts;
        int count;
        assert_int_equal(npz_bytes(zip, zn, &names, &ts, &count), WK_ERR_FORMAT);
        if (!strstr(wk_last_error(), "NUL")) fail_msg("message: %s", wk_last_error());
        wk_clear_error();
    }
    free(zip);
    free(m1);
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void test_npz_corrupt(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "npz_bad");
    int64_t shape[2] = {4, 5};
    wk_tensor *ts[2] = {make_values(shape, 2, WK_F32, 0), make_values(shape, 1, WK_I32, 1)};
    const char *names[2] = {"a", "b"};
    join(path, sizeof path, dir, "ok.npz");
    TU_STATUS_OK(wk_npz_save(path, names, ts, 2));
    size_t n;
    uint8_t *img = read_all(path, &n);
    assert_non_null(img);
    /* Layout: local "a.npy" at 0, data at 35; EOCD at n-22. */
    size_t eocd = n - 22;
    assert_int_equal(rd32(img + eocd), 0x06054b50);
    uint32_t cd = rd32(img + eocd + 16);
    uint8_t *b = malloc(n);

#define MUTATE(stmt, what)          \
    do {                            \
        memcpy(b, img, n);          \
        stmt;                       \
        expect_npz_fails(b, n, what); \
    } while (0)

    MUTATE(b[35 + 128 + 3] ^= 1, "bad CRC (data byte flipped)");
    MUTATE(wr32(b + cd + 16, rd32(b + cd + 16) ^ 1), "bad CRC in central directory");
    MUTATE(wr32(b + eocd + 16, (uint32_t)n), "central directory offset past the end");
    MUTATE(wr32(b + eocd + 16, 0xFFFFFFF0u), "huge central directory offset");
    MUTATE(wr32(b + eocd + 12, 0x7FFFFFFF), "huge central directory size");
    MUTATE(wr16(b + eocd + 10, 0xFFFE); wr16(b + eocd + 8, 0xFFFE), "too many entries");
    MUTATE(wr16(b + eocd + 10, 3), "entries on disk != total");
    MUTATE(wr32(b + cd + 42, (uint32_t)n - 10), "local header offset near the end");
    MUTATE(wr32(b + cd + 42, 0xFFFFFFF0u), "local header offset huge (no Zip64 extra)");
    MUTATE(wr32(b + cd + 42, 7), "local header offset inside data");
    MUTATE(wr32(b + cd + 20, 0x7FFFFFFF); wr32(b + cd + 24, 0x7FFFFFFF), "member size past the end");
    MUTATE(wr32(b + cd + 24, 3), "stored sizes differ");
    MUTATE(wr16(b + cd + 10, 12), "bzip2 method");
    MUTATE(wr16(b + cd + 8, 1), "encrypted");
    MUTATE(wr16(b + cd + 28, 0xFFFF), "name length past the directory");
    MUTATE(wr16(b + cd + 30, 20), "extra field past the directory");
    MUTATE(wr32(b + cd, 0x12345678), "central signature");
    MUTATE(wr32(b + 0, 0x12345678), "local signature");
    MUTATE(wr16(b + 26, 0xFFFF), "local name length past the end");
    MUTATE(wr32(b + eocd, 0), "no end record");
    /* The local header's CRC and sizes are not used (numpy's are 0xFFFFFFFF). */
    memcpy(b, img, n);
    b[14] ^= 1;
    wr32(b + 18, 0xFFFFFFFFu);
    {
        char **ln;
        wk_tensor **lt;
        int count;
        TU_STATUS_OK(npz_bytes(b, n, &ln, &lt, &count));
        assert_int_equal(count, 2);
        assert_same_tensor(ts[0], lt[0]);
        wk_npz_free(ln, lt, count);
    }
    /* Member content corrupted with a fixed CRC: the npy parser's error. */
    memcpy(b, img, n);
    b[35] = 'X';
    uint32_t crc = (uint32_t)crc32(0, b + 35, rd32(b + cd + 24));
    wr32(b + cd + 16, crc);
    expect_npz_fails(b, n, "not an npy with a good CRC");
    /* Zip64 saturated CD fields with no extra field. */
    MUTATE(wr32(b + cd + 24, 0xFFFFFFFFu), "saturated size without Zip64 extra");
    MUTATE(wr16(b + eocd + 10, 0xFFFF); wr16(b + eocd + 8, 0xFFFF), "saturated count without Zip64 locator");
#undef MUTATE
    /* Every truncation fails; garbage after the archive is fine only if the
     * comment length says so, else the record is still found (bounded search). */
    for (size_t cut = 0; cut < n; cut++) expect_npz_fails(img, cut, "truncated npz");
    free(b);
    /* Files: missing, a directory, not a zip. */
    char **ln;
    wk_tensor **lt;
    int count;
    join(path, sizeof path, dir, "missing.npz");
    assert_int_equal(wk_npz_load(path, wk_cpu(), &ln, &lt, &count), WK_ERR_IO);
    assert_non_null(strstr(wk_last_error(), "missing.npz"));
    assert_null(ln);
    assert_null(lt);
    assert_int_equal(count, 0);
    wk_clear_error();
    assert_int_equal(wk_npz_load(dir, wk_cpu(), &ln, &lt, &count), WK_ERR_IO);
    wk_clear_error();
    join(path, sizeof path, dir, "text.npz");
    write_all(path, "hello", 5);
    assert_int_equal(wk_npz_load(path, wk_cpu(), &ln, &lt, &count), WK_ERR_FORMAT);
    wk_clear_error();
    /* Unwritable destination. */
    join(path, sizeof path, dir, "no/such/dir/x.npz");
    assert_int_equal(wk_npz_save(path, names, ts, 2), WK_ERR_IO);
    assert_non_null(strstr(wk_last_error(), "no/such/dir"));
    wk_clear_error();
    free(img);
    wk_tensor_free(ts[0]);
    wk_tensor_free(ts[1]);
}

/* ------------------------------------------------------- npy errors */

static void test_npy_missing_and_truncated(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "npy_trunc");
    join(path, sizeof path, dir, "missing.npy");
    TU_FAILS(wk_npy_load(path, wk_cpu()), WK_ERR_IO);
    assert_null(wk_npy_load(path, wk_cpu()));
    assert_non_null(strstr(wk_last_error(), "missing.npy"));
    assert_non_null(strstr(wk_last_error(), strerror(ENOENT)));
    wk_clear_error();
    TU_FAILS(wk_npy_load(dir, wk_cpu()), WK_ERR_IO);
    join(path, sizeof path, dir, "no/such/dir/x.npy");
    wk_tensor *t = make_values(NULL, 0, WK_F32, 0);
    assert_int_equal(wk_npy_save(path, t), WK_ERR_IO);
    wk_clear_error();
    wk_tensor_free(t);

    /* Devices: no size to check against; the magic is checked first. */
    if (access("/dev/zero", R_OK) == 0) {
        TU_FAILS(wk_npy_load("/dev/zero", wk_cpu()), WK_ERR_FORMAT);
        TU_FAILS(wk_npy_load("/dev/null", wk_cpu()), WK_ERR_FORMAT);
        char **ln;
        wk_tensor **lt;
        int count;
        assert_int_equal(wk_npz_load("/dev/zero", wk_cpu(), &ln, &lt, &count), WK_ERR_IO);
        wk_clear_error();
    }

    /* Every prefix of a valid file (f32 2x3, v1 and v2 headers) fails. */
    int64_t shape[2] = {2, 3};
    t = make_values(shape, 2, WK_F32, 0);
    join(path, sizeof path, dir, "ok.npy");
    TU_STATUS_OK(wk_npy_save(path, t));
    size_t n;
    uint8_t *img = read_all(path, &n);
    char cut_path[400];
    join(cut_path, sizeof cut_path, dir, "cut.npy");
    for (size_t cut = 0; cut < n; cut++) {
        write_all(cut_path, img, cut);
        wk_tensor *r = wk_npy_load(cut_path, wk_cpu());
        wk_status st = wk_last_status();
        if (r || (st != WK_ERR_FORMAT && st != WK_ERR_IO))
            fail_msg("prefix %zu of %zu: %s (%s)", cut, n, r ? "loaded" : wk_status_name(st), wk_last_error());
        wk_clear_error();
        expect_npy_fails(img, cut, WK_ERR_FORMAT, "truncated image");
    }
    free(img);
    float v[6] = {0};
    size_t m;
    uint8_t *v2 = make_npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v, sizeof v, &m);
    for (size_t cut = 0; cut < m; cut++) {
        write_all(cut_path, v2, cut);
        wk_tensor *r = wk_npy_load(cut_path, wk_cpu());
        wk_status st = wk_last_status();
        if (r || (st != WK_ERR_FORMAT && st != WK_ERR_IO)) fail_msg("v2 prefix %zu: %s", cut, r ? "loaded" : wk_last_error());
        wk_clear_error();
        expect_npy_fails(v2, cut, WK_ERR_FORMAT, "truncated v2 image");
    }
    free(v2);
    wk_tensor_free(t);
}

/* Write n bytes of img into a FIFO from a child process while the parent
 * loads it (the stream path: no file size to check against). */
static wk_tensor *load_through_fifo(const char *fifo, const uint8_t *img, size_t n) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(fifo, "wb");
        if (!f) _exit(1);
        size_t w = n ? fwrite(img, 1, n, f) : 0;
        fclose(f);
        _exit(w == n ? 0 : 1);
    }
    wk_tensor *t = wk_npy_load(fifo, wk_cpu());
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return t;
}

static void test_npy_from_pipe(void **state) {
    (void)state;
    char dir[300], fifo[400];
    test_dir(dir, sizeof dir, "pipe");
    join(fifo, sizeof fifo, dir, "fifo");
    if (mkfifo(fifo, 0600) != 0) {
        print_message("skipping: mkfifo failed: %s\n", strerror(errno));
        skip();
    }
    /* Big enough that the stream reader has to grow its buffer. */
    int64_t shape[2] = {700, 1000};
    wk_tensor *t = make_values(shape, 2, WK_F64, 5);
    uint8_t *pre, *dat;
    size_t pl, dl;
    TU_STATUS_OK(wk__npy_preamble(t, &pre, &pl, "test"));
    TU_STATUS_OK(wk__npy_tensor_bytes(t, &dat, &dl, "test"));
    uint8_t *img = malloc(pl + dl);
    memcpy(img, pre, pl);
    memcpy(img + pl, dat, dl);
    wk_tensor *back = load_through_fifo(fifo, img, pl + dl);
    if (!back) fail_msg("fifo: %s", wk_last_error());
    assert_same_tensor(t, back);
    wk_tensor_free(back);
    /* Cut short: in the data, in the header, in the magic. */
    const size_t cuts[4] = {pl + dl - 1, pl + 5, 30, 3};
    for (int i = 0; i < 4; i++) {
        back = load_through_fifo(fifo, img, cuts[i]);
        assert_null(back);
        assert_int_equal(wk_last_status(), WK_ERR_FORMAT);
        wk_clear_error();
    }
    free(img);
    free(pre);
    free(dat);
    wk_tensor_free(t);
}

static void test_npy_corrupt_headers(void **state) {
    (void)state;
    char dir[300], path[400];
    test_dir(dir, sizeof dir, "npy_bad");
    uint8_t data[64];
    memset(data, 0, sizeof data);
    static const struct {
        const char *dict;
        const char *why;
    } bad[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", "huge shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", "product overflow"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", "zero dim but huge"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "dim over int64"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000,), }", "data missing"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", "negative dim"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", "rank 9"},
        {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", "uint64"},
        {"{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }", "int8"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "complex"},
        {"{'descr': 'f4', 'fortran_order': False, 'shape': (1,), }", "no byte order"},
        {"{'descr': '', 'fortran_order': False, 'shape': (1,), }", "empty descr"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", "fortran_order 0"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "fortran_order Maybe"},
        {"{'descr': '<f4', 'shape': (1,), }", "missing key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unknown key"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate key"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", "unterminated string"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "shape list"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", "double comma"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1 2)}", "missing comma"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "no closing brace"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", "junk after dict"},
        {"('descr', '<f4')", "not a dict"},
        {"", "empty header"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n;
        uint8_t *img = make_npy(1, bad[i].dict, data, sizeof data, &n);
        expect_npy_fails(img, n, WK_ERR_FORMAT, bad[i].why);
        /* and through a file */
        join(path, sizeof path, dir, "bad.npy");
        write_all(path, img, n);
        wk_tensor *t = wk_npy_load(path, wk_cpu());
        if (t || wk_last_status() != WK_ERR_FORMAT) fail_msg("file %s: %s", bad[i].why, wk_last_error());
        assert_non_null(strstr(wk_last_error(), "bad.npy"));
        wk_clear_error();
        free(img);
    }
    /* Rank 8 is fine. */
    size_t n;
    uint8_t *img = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 1, 1, 1, 1, 3), }", data,
                            24, &n);
    wk_tensor *t = TU_OK(wk_npy_load_bytes(img, n, wk_cpu()));
    assert_int_equal(wk_rank(t), 8);
    wk_tensor_free(t);
    /* Magic, version and header length. */
    uint8_t *b = malloc(n);
    memcpy(b, img, n);
    b[0] = 0x92;
    expect_npy_fails(b, n, WK_ERR_FORMAT, "bad magic");
    memcpy(b, img, n);
    b[3] = 'n';
    expect_npy_fails(b, n, WK_ERR_FORMAT, "bad magic 2");
    memcpy(b, img, n);
    b[6] = 4;
    expect_npy_fails(b, n, WK_ERR_FORMAT, "version 4");
    memcpy(b, img, n);
    b[6] = 0;
    expect_npy_fails(b, n, WK_ERR_FORMAT, "version 0");
    memcpy(b, img, n);
    b[7] = 1;
    expect_npy_fails(b, n, WK_ERR_FORMAT, "version 1.1");
    memcpy(b, img, n);
    b[8] = 0xFF;
    b[9] = 0xFF;
    expect_npy_fails(b, n, WK_ERR_FORMAT, "header_len past EOF");
    memcpy(b, img, n);
    b[6] = 2; /* 2.0: the u32 length reads the first dict bytes -> huge */
    expect_npy_fails(b, n, WK_ERR_FORMAT, "v2 length huge");
    memcpy(b, img, n);
    b[8] = 10;
    b[9] = 0;
    expect_npy_fails(b, n, WK_ERR_FORMAT, "header_len cuts the dict");
    join(path, sizeof path, dir, "bad.npy");
    memcpy(b, img, n);
    b[8] = 0xFF;
    b[9] = 0xFF;
    write_all(path, b, n);
    TU_FAILS(wk_npy_load(path, wk_cpu()), WK_ERR_FORMAT);
    free(b);
    free(img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_dtypes_ranks),
        cmocka_unit_test(test_roundtrip_empty),
        cmocka_unit_test(test_save_noncontiguous),
        cmocka_unit_test(test_save_unsupported_dtypes),
        cmocka_unit_test(test_header_variants),
        cmocka_unit_test(test_fortran_and_big_endian),
        cmocka_unit_test(test_numpy_npy_files),
        cmocka_unit_test(test_numpy_reads_wick_files),
        cmocka_unit_test(test_numpy_npz_files),
        cmocka_unit_test(test_npz_roundtrip),
        cmocka_unit_test(test_npz_handmade_zip),
        cmocka_unit_test(test_npz_hostile_names),
        cmocka_unit_test(test_npz_corrupt),
        cmocka_unit_test(test_npy_missing_and_truncated),
        cmocka_unit_test(test_npy_from_pipe),
        cmocka_unit_test(test_npy_corrupt_headers),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
