/* Helpers shared by the tests/test_llama*.c programs: the model files they
 * run on (found through ctest's environment, skipped with a reason when
 * absent), GGUF copies with other dtypes written by wk_gguf_writer, greedy
 * decoding and the small JSON facts in tests/data. Static functions: each
 * test program includes this once. */
#ifndef WICK_LLAMA_TESTUTIL_H
#define WICK_LLAMA_TESTUTIL_H
#include <stdio.h>
#include "wick/gguf.h"
#include "wick/lm.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"

/* The package's Q4_1 GGUF, or skip. */
static inline const char *lt_q4_gguf_or_skip(void) {
    const char *p = getenv("WICK_SMOLLM2_GGUF");
    if (!p || !*p) {
        fprintf(stderr, "skipped: WICK_SMOLLM2_GGUF is unset (run ./scripts/setup.sh)\n");
        skip();
    }
    return p;
}

/* The HF f32 directory tests/make_hf_dir.py made (the llama_hf_dir ctest
 * fixture), or skip. */
static inline const char *lt_hf_dir_or_skip(void) {
    const char *p = getenv("WICK_LM_HF_DIR");
    char cfg[4096];
    struct stat sb;
    if (p && *p) snprintf(cfg, sizeof cfg, "%s/config.json", p);
    if (!p || !*p || stat(cfg, &sb) != 0) {
        fprintf(stderr, "skipped: no HF directory (WICK_LM_HF_DIR unset or not made: needs the venv and the "
                        "llama_hf_dir fixture)\n");
        skip();
    }
    return p;
}

/* A scratch path in the build tree for files a test writes. */
static inline void lt_tmp_path(char *out, size_t cap, const char *name) {
    const char *d = getenv("WICK_LLAMA_TMP");
    if (!d || !*d) d = "/tmp";
    mkdir(d, 0755);
    snprintf(out, cap, "%s/%s", d, name);
}

/* Write a copy of the GGUF src at dst with every tensor of more than one
 * dim converted to dt (blocks dequantized; norms stay f32), metadata as is.
 * keep_layers >= 0 keeps only the first blocks (block_count rewritten). */
static inline void lt_write_gguf_as(const char *src, const char *dst, wk_dtype dt, int64_t keep_layers) {
    wk_gguf *g = wk_gguf_open(src);
    assert_non_null(g);
    wk_gguf_writer *w = wk_gguf_writer_new();
    assert_non_null(w);
    const char *arch_key = "llama.block_count";
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        if (keep_layers >= 0 && strcmp(wk_gguf_key(g, i), arch_key) == 0) {
            TU_STATUS_OK(wk_gguf_writer_add_u32(w, arch_key, (uint32_t)keep_layers));
            continue;
        }
        TU_STATUS_OK(wk_gguf_writer_copy_kv(w, g, i));
    }
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        const char *name = wk_gguf_tensor_name(g, i);
        long long l;
        if (keep_layers >= 0 && sscanf(name, "blk.%lld.", &l) == 1 && l >= keep_layers) continue;
        wk_tensor *t = TU_OK(wk_gguf_tensor_at(g, i));
        wk_tensor *c = t;
        if (wk_rank(t) > 1 && wk_tensor_dtype(t) != dt) {
            c = wk_dtype_is_quantized(wk_tensor_dtype(t)) ? wk_dequantize(t, dt) : wk_to_dtype(t, dt);
            TU_OK(c);
            wk_tensor_free(t);
        }
        TU_STATUS_OK(wk_gguf_writer_add_tensor(w, name, c));
        wk_tensor_free(c);
    }
    TU_STATUS_OK(wk_gguf_writer_write(w, dst));
    wk_gguf_writer_free(w);
    wk_gguf_close(g);
}

static inline int32_t lt_argmax(const float *v, int64_t n) {
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return (int32_t)b;
}

/* The k largest logits (ids descending by value, lowest id first on ties). */
static inline void lt_topk(const float *v, int64_t n, int k, int32_t *ids, float *vals) {
    for (int j = 0; j < k; j++) {
        int64_t b = -1;
        for (int64_t i = 0; i < n; i++) {
            bool taken = false;
            for (int q = 0; q < j; q++) taken |= ids[q] == i;
            if (!taken && (b < 0 || v[i] > v[b])) b = i;
        }
        ids[j] = (int32_t)b;
        vals[j] = v[b];
    }
}

/* The last-position logits of a forward step, on the host (vocab floats). */
static inline void lt_step(const wk_lm *m, wk_kv_cache *c, const int32_t *ids, int64_t n, float *logits) {
    wk_tensor *l = wk_lm_forward(m, c, ids, n, false);
    if (!l) fail_msg("wk_lm_forward: %s", wk_last_error());
    int64_t V = wk_lm_config_of(m)->vocab;
    assert_int_equal(wk_dim(l, 0), 1);
    assert_int_equal(wk_dim(l, 1), V);
    TU_STATUS_OK(wk_to_host_f32(l, logits, (size_t)V));
    wk_tensor_free(l);
}

/* Prefill ids in one batch, then greedy-decode ngen ids into out; the
 * first step's logits go to first (vocab floats) if not NULL. */
static inline void lt_greedy(const wk_lm *m, const int32_t *ids, int64_t n, int ngen, int32_t *out, float *first) {
    int64_t V = wk_lm_config_of(m)->vocab;
    float *lg = malloc(sizeof(float) * (size_t)V);
    assert_non_null(lg);
    wk_kv_cache *c = wk_kv_cache_new(m, n + ngen + 1);
    if (!c) fail_msg("wk_kv_cache_new: %s", wk_last_error());
    lt_step(m, c, ids, n, lg);
    if (first) memcpy(first, lg, sizeof(float) * (size_t)V);
    for (int i = 0; i < ngen; i++) {
        out[i] = lt_argmax(lg, V);
        if (i + 1 < ngen) lt_step(m, c, &out[i], 1, lg);
    }
    wk_kv_cache_free(c);
    free(lg);
}

/* ---- the JSON facts: tests/data/<file> (WICK_LLAMA_DATA) ---- */

/* The first limit bytes of a file (all of it when limit <= 0),
 * NUL-terminated; fails the test when it cannot be read. */
static inline char *lt_read_path(const char *path, long limit) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (limit > 0 && n > limit) n = limit;
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static inline char *lt_read_data(const char *file) {
    const char *d = getenv("WICK_LLAMA_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d && *d ? d : "tests/data", file);
    return lt_read_path(path, 0);
}

/* The numbers of the array under "key" in the object named section (or
 * anywhere when section is NULL): the facts files are flat and written by
 * the scripts beside them, so a key search is enough. Returns the count. */
static inline int lt_json_numbers(const char *doc, const char *section, const char *key, double *out, int cap) {
    const char *p = doc;
    char pat[128];
    if (section) {
        snprintf(pat, sizeof pat, "\"%s\"", section);
        p = strstr(p, pat);
        if (!p) fail_msg("facts: no section %s", section);
    }
    snprintf(pat, sizeof pat, "\"%s\"", key);
    p = strstr(p, pat);
    if (!p) fail_msg("facts: no key %s in %s", key, section ? section : "the file");
    p = strchr(p, '[');
    assert_non_null(p);
    p++;
    int n = 0;
    while (*p && *p != ']') {
        char *end;
        double v = strtod(p, &end);
        if (end == p) {
            p++;
            continue;
        }
        if (n < cap) out[n] = v;
        n++;
        p = end;
    }
    return n;
}

/* Every number under "key" (after "section" when given), nested lists
 * flattened (rows of logits); -1 when the key is absent. */
static inline int lt_json_flat_numbers(const char *doc, const char *section, const char *key, double *out, int cap) {
    const char *p = doc;
    char pat[128];
    if (section) {
        snprintf(pat, sizeof pat, "\"%s\"", section);
        if (!(p = strstr(p, pat))) return -1;
    }
    snprintf(pat, sizeof pat, "\"%s\"", key);
    if (!(p = strstr(p, pat))) return -1;
    p = strchr(p + strlen(pat), '[');
    if (!p) return -1;
    int depth = 0, n = 0;
    do {
        if (*p == '[') depth++, p++;
        else if (*p == ']') depth--, p++;
        else {
            char *end;
            double v = strtod(p, &end);
            if (end == p) {
                p++;
                continue;
            }
            if (n < cap) out[n] = v;
            n++;
            p = end;
        }
    } while (*p && depth > 0);
    return n;
}

#endif
