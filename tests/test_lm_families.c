/* Every model family wick runs, as a tiny model with random weights and
 * every feature of the family switched on (tests/tiny_models.py writes it
 * at test time from a fixed seed: config.json + f32 safetensors), checked
 * against the logits transformers 5.24 gave on the same model
 * (tests/data/tiny/<arch>.json, made by hand with tools/make_tiny_refs.py):
 *
 *   - HF directory: 4 full logit rows of a 24-token prefill within 1e-4,
 *     8 greedy KV-cache steps equal (or parting at a near-tie of the
 *     reference's top two, < 1e-3);
 *   - the same model as GGUF (tests/tiny_gguf.py writes what llama.cpp's
 *     converter writes, byte for byte): the rows within 1e-4 of
 *     transformers with what the converter drops set as llama.cpp then
 *     computes it ("as_llamacpp": Mistral's window, Gemma's
 *     query_pre_attn_scalar, Gemma 2's rope_theta), and within 2e-3 of
 *     llama.cpp's own logits on that file (<arch>.llamacpp.json: its f32
 *     kernels differ from torch's by up to ~6e-4);
 *   - f16 and bf16 weights (load-time conversion) and the GGUF requantized
 *     to Q8_0 and Q4_0 (every layer matrix through wk_qmatmul) near the
 *     f32 rows.
 * Phi-3 also runs its short-context case (longrope's short factors: a
 * cache no longer than the original context). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wick/lm.h"
#include "wick/gguf.h"
#include "llama_testutil.h"

#define VOCAB 320
#define MAXN 4096

static char *read_facts(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/data/tiny/%s", WICK_TESTS_DIR, name);
    return lt_read_path(path, 0);
}

/* The prefill of ids (cache of cap positions) and rows' logits into out. */
static void prefill_rows(const wk_lm *m, const int32_t *ids, int n, int64_t cap, const int *rows, int nrows,
                         float *out, wk_kv_cache **keep) {
    wk_kv_cache *c = wk_kv_cache_new(m, cap);
    if (!c) fail_msg("cache: %s", wk_last_error());
    wk_tensor *l = wk_lm_forward(m, c, ids, n, true);
    if (!l) fail_msg("forward: %s", wk_last_error());
    float *all = malloc(sizeof(float) * (size_t)n * VOCAB);
    assert_non_null(all);
    assert_int_equal(wk_to_host_f32(l, all, (size_t)n * VOCAB), WK_OK);
    for (int r = 0; r < nrows; r++) memcpy(out + (size_t)r * VOCAB, all + (size_t)rows[r] * VOCAB, sizeof(float) * VOCAB);
    free(all);
    wk_tensor_free(l);
    if (keep) *keep = c;
    else wk_kv_cache_free(c);
}

/* The logits of the last id after a prefill of the others and one decode
 * step (the decode kernels of the attention), into out (VOCAB floats). */
static void two_step_logits(const wk_lm *m, const int32_t *ids, int n, float *out) {
    wk_kv_cache *c = wk_kv_cache_new(m, n);
    if (!c) fail_msg("cache: %s", wk_last_error());
    wk_tensor *l = wk_lm_forward(m, c, ids, n - 1, false);
    if (!l) fail_msg("prefill: %s", wk_last_error());
    wk_tensor_free(l);
    l = wk_lm_forward(m, c, ids + n - 1, 1, false);
    if (!l) fail_msg("decode: %s", wk_last_error());
    assert_int_equal(wk_to_host_f32(l, out, VOCAB), WK_OK);
    wk_tensor_free(l);
    wk_kv_cache_free(c);
}

/* An f16 / bf16 KV cache (wk_lm_load_opts.kv_dtype) under f32 weights: the
 * decode step's logits near the f32 cache's. */
static void check_half_cache(const char *arch, const char *dir, const wk_lm *m, const int32_t *ids, int n) {
    static float ref[VOCAB], got[VOCAB];
    two_step_logits(m, ids, n, ref);
    static const wk_dtype half[2] = {WK_F16, WK_BF16};
    for (int h = 0; h < 2; h++) {
        wk_lm_load_opts o = {.kv_dtype = half[h]};
        wk_lm *mk = wk_lm_load(dir, &o);
        if (!mk) fail_msg("%s kv %s: load: %s", arch, wk_dtype_name(half[h]), wk_last_error());
        two_step_logits(mk, ids, n, got);
        double d = 0, scale = 0;
        for (int i = 0; i < VOCAB; i++) {
            d = fmax(d, fabs((double)got[i] - ref[i]));
            scale = fmax(scale, fabs((double)ref[i]));
        }
        print_message("%-8s kv %-4s vs f32 cache: max |diff| %.2e (logits up to %.2f)\n", arch,
                      wk_dtype_name(half[h]), d, scale);
        if (!(d < (h == 0 ? 0.01 : 0.05) * fmax(scale, 1.0)))
            fail_msg("%s kv %s: decode logits differ from the f32 cache's by %g", arch, wk_dtype_name(half[h]), d);
        wk_lm_free(mk);
    }
}

static double max_diff(const float *a, const double *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* Greedy steps after the prefill in c (its last row's logits in last):
 * equal to want, or parting where the reference's top two are within
 * 1e-3 (then the rest is not compared). */
static void greedy_check(const char *what, const wk_lm *m, wk_kv_cache *c, const float *last, const double *want,
                         const double *top2, int steps) {
    float lg[VOCAB];
    memcpy(lg, last, sizeof lg);
    for (int s = 0; s < steps; s++) {
        int32_t id = lt_argmax(lg, VOCAB);
        if (id != (int32_t)want[s]) {
            double gap = top2[2 * s] - top2[2 * s + 1];
            if (gap < 1e-3) {
                print_message("%s: greedy parts at step %d (%d vs %d) at a near-tie (gap %.2g)\n", what, s, id,
                              (int)want[s], gap);
                return;
            }
            fail_msg("%s: greedy step %d gave %d, the reference %d (its top-2 gap %.3g)", what, s, id, (int)want[s],
                     gap);
        }
        wk_tensor *l = wk_lm_forward(m, c, &id, 1, false);
        if (!l) fail_msg("%s step %d: %s", what, s, wk_last_error());
        assert_int_equal(wk_to_host_f32(l, lg, VOCAB), WK_OK);
        wk_tensor_free(l);
    }
}

/* src requantized into dst: every 2-D blk.* weight as dt (norms, the
 * token table and the rest as they are), the metadata copied. */
static void requantize(const char *src, const char *dst, wk_dtype dt) {
    wk_gguf *g = wk_gguf_open(src);
    assert_non_null(g);
    wk_gguf_writer *w = wk_gguf_writer_new();
    assert_non_null(w);
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) assert_int_equal(wk_gguf_writer_copy_kv(w, g, i), WK_OK);
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        const char *name = wk_gguf_tensor_name(g, i);
        wk_tensor *t = wk_gguf_tensor(g, name);
        assert_non_null(t);
        if (!strncmp(name, "blk.", 4) && wk_rank(t) == 2) {
            wk_tensor *q = wk_to_dtype(t, dt);
            if (!q) fail_msg("%s to %s: %s", name, wk_dtype_name(dt), wk_last_error());
            wk_tensor_free(t);
            t = q;
        }
        assert_int_equal(wk_gguf_writer_add_tensor(w, name, t), WK_OK);
        wk_tensor_free(t);
    }
    assert_int_equal(wk_gguf_writer_write(w, dst), WK_OK);
    wk_gguf_writer_free(w);
    wk_gguf_close(g);
}

static bool run(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) print_message("command failed (%d): %s\n", rc, cmd);
    return rc == 0;
}

static void check_family(const char *arch) {
    char dir[512], cmd[2048], facts_name[128];
    lt_tmp_path(dir, sizeof dir, "tiny_");
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%s_%d", arch, (int)getpid());
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tiny_models.py %s %s", WICK_TESTS_DIR, arch, dir);
    if (!run(cmd)) fail_msg("tiny_models.py %s failed (Debian's python3-numpy is needed)", arch);
    snprintf(facts_name, sizeof facts_name, "%s.json", arch);
    char *facts = read_facts(facts_name);
    double idsd[64], rowsd[8], greedy[16], top2[32];
    static double want[8 * VOCAB];
    int n = lt_json_flat_numbers(facts, NULL, "ids", idsd, 64), nrows = lt_json_flat_numbers(facts, NULL, "rows", rowsd, 8);
    int ng = lt_json_flat_numbers(facts, NULL, "greedy", greedy, 16);
    assert_true(n > 0 && n <= 64 && nrows > 0 && nrows <= 8 && ng > 0 && ng <= 16);
    assert_int_equal(lt_json_flat_numbers(facts, NULL, "greedy_top2", top2, 32), 2 * ng);
    assert_int_equal(lt_json_flat_numbers(facts, NULL, "logits_rows", want, 8 * VOCAB), nrows * VOCAB);
    int32_t ids[64];
    int rows[8];
    for (int i = 0; i < n; i++) ids[i] = (int32_t)idsd[i];
    for (int i = 0; i < nrows; i++) rows[i] = (int)rowsd[i];
    float *got = malloc(sizeof(float) * (size_t)nrows * VOCAB);
    assert_non_null(got);

    /* HF directory */
    wk_lm *m = wk_lm_load(dir, NULL);
    if (!m) fail_msg("%s: load: %s", arch, wk_last_error());
    assert_string_equal(wk_lm_config_of(m)->arch, !strcmp(arch, "llama3") ? "llama" : arch);
    wk_kv_cache *c = NULL;
    prefill_rows(m, ids, n, n + ng, rows, nrows, got, &c);
    double d = max_diff(got, want, nrows * VOCAB);
    print_message("%-8s HF   vs transformers: max |diff| %.2e\n", arch, d);
    if (!(d < 1e-4)) fail_msg("%s HF: logits differ from transformers by %g", arch, d);
    greedy_check(arch, m, c, got + (size_t)(nrows - 1) * VOCAB, greedy, top2, ng);
    wk_kv_cache_free(c);
    check_half_cache(arch, dir, m, ids, n);
    /* f16 / bf16 weights: the same model, rounded */
    static const wk_dtype half[2] = {WK_F16, WK_BF16};
    for (int h = 0; h < 2; h++) {
        wk_lm_load_opts o = {.dtype = half[h]};
        wk_lm *mh = wk_lm_load(dir, &o);
        if (!mh) fail_msg("%s %s: load: %s", arch, wk_dtype_name(half[h]), wk_last_error());
        float *gh = malloc(sizeof(float) * (size_t)nrows * VOCAB);
        assert_non_null(gh);
        prefill_rows(mh, ids, n, n, rows, nrows, gh, NULL);
        double dh = 0, scale = 0;
        for (int i = 0; i < nrows * VOCAB; i++) {
            dh = fmax(dh, fabs((double)gh[i] - got[i]));
            scale = fmax(scale, fabs((double)got[i]));
        }
        print_message("%-8s %-4s vs f32: max |diff| %.2e (logits up to %.2f)\n", arch, wk_dtype_name(half[h]), dh,
                      scale);
        if (!(dh < (h == 0 ? 0.02 : 0.1) * fmax(scale, 1.0)))
            fail_msg("%s %s: logits differ from f32 by %g", arch, wk_dtype_name(half[h]), dh);
        free(gh);
        wk_lm_free(mh);
    }
    /* Phi-3's short context: longrope's short factors */
    double sid[64], srow[8];
    static double swant[8 * VOCAB];
    int sn = lt_json_flat_numbers(facts, "short", "ids", sid, 64), snr = lt_json_flat_numbers(facts, "short", "rows", srow, 8);
    if (sn > 0) {
        int32_t s_ids[64];
        int s_rows[8] = {0};
        for (int i = 0; i < sn; i++) s_ids[i] = (int32_t)sid[i];
        for (int i = 0; i < snr; i++) s_rows[i] = (int)srow[i];
        assert_int_equal(lt_json_flat_numbers(facts, "short", "logits_rows", swant, 8 * VOCAB), snr * VOCAB);
        float *sg = malloc(sizeof(float) * (size_t)snr * VOCAB);
        assert_non_null(sg);
        prefill_rows(m, s_ids, sn, sn, s_rows, snr, sg, NULL);
        double ds = max_diff(sg, swant, snr * VOCAB);
        print_message("%-8s HF short context vs transformers: max |diff| %.2e\n", arch, ds);
        if (!(ds < 1e-4)) fail_msg("%s short: logits differ from transformers by %g", arch, ds);
        free(sg);
    }
    wk_lm_free(m);

    /* GGUF, as llama.cpp's converter writes it */
    const char *py = getenv("WICK_VENV_PYTHON");
    if (!py || !*py) {
        print_message("%s: GGUF part skipped: WICK_VENV_PYTHON unset (scripts/setup.sh makes the venv)\n", arch);
    } else {
        char gguf[700];
        snprintf(gguf, sizeof gguf, "%s.gguf", dir);
        snprintf(cmd, sizeof cmd, "%s %s/tiny_gguf.py %s %s", py, WICK_TESTS_DIR, dir, gguf);
        if (!run(cmd)) fail_msg("tiny_gguf.py %s failed", arch);
        wk_lm *mg = wk_lm_load(gguf, NULL);
        if (!mg) fail_msg("%s GGUF: load: %s", arch, wk_last_error());
        static double as_ll[8 * VOCAB], ll[8 * VOCAB];
        const double *ref = want;
        if (lt_json_flat_numbers(facts, "as_llamacpp", "logits_rows", as_ll, 8 * VOCAB) == nrows * VOCAB) ref = as_ll;
        prefill_rows(mg, ids, n, n + ng, rows, nrows, got, &c);
        double dg = max_diff(got, ref, nrows * VOCAB);
        print_message("%-8s GGUF vs transformers%s: max |diff| %.2e\n", arch,
                      ref == as_ll ? " (as llama.cpp reads the file)" : "", dg);
        if (!(dg < 1e-4)) fail_msg("%s GGUF: logits differ from transformers by %g", arch, dg);
        snprintf(facts_name, sizeof facts_name, "%s.llamacpp.json", arch);
        char *llf = read_facts(facts_name);
        assert_int_equal(lt_json_flat_numbers(llf, NULL, "logits_rows", ll, 8 * VOCAB), nrows * VOCAB);
        double dl = max_diff(got, ll, nrows * VOCAB);
        print_message("%-8s GGUF vs llama.cpp: max |diff| %.2e\n", arch, dl);
        if (!(dl < 2e-3)) fail_msg("%s GGUF: logits differ from llama.cpp's by %g", arch, dl);
        double lg[16], lt2[32];
        int lng = lt_json_flat_numbers(llf, NULL, "greedy", lg, 16);
        assert_int_equal(lt_json_flat_numbers(llf, NULL, "greedy_top2", lt2, 32), 2 * lng);
        char what[64];
        snprintf(what, sizeof what, "%s GGUF", arch);
        greedy_check(what, mg, c, got + (size_t)(nrows - 1) * VOCAB, lg, lt2, lng);
        wk_kv_cache_free(c);
        /* block weights: the same file requantized, near the f32 rows */
        static const wk_dtype blocks[2] = {WK_Q8_0, WK_Q4_0};
        for (int b = 0; b < 2; b++) {
            char qpath[760];
            snprintf(qpath, sizeof qpath, "%s.%s.gguf", dir, wk_dtype_name(blocks[b]));
            requantize(gguf, qpath, blocks[b]);
            wk_lm *mq = wk_lm_load(qpath, NULL);
            if (!mq) fail_msg("%s %s: load: %s", arch, wk_dtype_name(blocks[b]), wk_last_error());
            float *gq = malloc(sizeof(float) * (size_t)nrows * VOCAB);
            assert_non_null(gq);
            prefill_rows(mq, ids, n, n, rows, nrows, gq, NULL);
            double dq = 0, scale = 0;
            for (int i = 0; i < nrows * VOCAB; i++) {
                dq = fmax(dq, fabs((double)gq[i] - got[i]));
                scale = fmax(scale, fabs((double)got[i]));
            }
            print_message("%-8s %-4s vs f32: max |diff| %.2e (logits up to %.2f)\n", arch, wk_dtype_name(blocks[b]),
                          dq, scale);
            if (!(dq < (b == 0 ? 0.1 : 0.5) * fmax(scale, 1.0)))
                fail_msg("%s %s: logits differ from f32 by %g", arch, wk_dtype_name(blocks[b]), dq);
            free(gq);
            wk_lm_free(mq);
            unlink(qpath);
        }
        free(llf);
        wk_lm_free(mg);
        unlink(gguf);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run(cmd);
    free(got);
    free(facts);
}

#define FAMILY(a) \
    static void family_##a(void **state) { \
        (void)state; \
        check_family(#a); \
    }
FAMILY(llama)
FAMILY(llama3)
FAMILY(mistral)
FAMILY(qwen2)
FAMILY(qwen3)
FAMILY(gemma2)
FAMILY(gemma3)
FAMILY(phi3)
FAMILY(smollm3)

/* A family feature the file asks for and wick does not run is an error
 * naming it, never ignored. */
static void refused_keys(void **state) {
    (void)state;
    char dir[512], cmd[2048], cfg[700];
    lt_tmp_path(dir, sizeof dir, "tiny_refused_");
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tiny_models.py qwen2 %s", WICK_TESTS_DIR, dir);
    assert_true(run(cmd));
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    static const struct {
        const char *from, *to, *msg;
    } cases[] = {
        {"\"use_sliding_window\": false", "\"use_sliding_window\": true", "use_sliding_window"},
        {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"relu\"", "hidden activation 'relu'"},
        {"\"model_type\": \"qwen2\"", "\"model_type\": \"gpt_neox\"", "unknown architecture 'gpt_neox'"},
    };
    char *orig = NULL;
    {
        FILE *f = fopen(cfg, "rb");
        assert_non_null(f);
        orig = calloc(1, 1 << 16);
        assert_non_null(orig);
        size_t got = fread(orig, 1, (1 << 16) - 1, f);
        (void)got;
        fclose(f);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *at = strstr(orig, cases[i].from);
        if (!at) fail_msg("config.json has no %s", cases[i].from);
        FILE *f = fopen(cfg, "wb");
        assert_non_null(f);
        fwrite(orig, 1, (size_t)(at - orig), f);
        fputs(cases[i].to, f);
        fputs(at + strlen(cases[i].from), f);
        fclose(f);
        wk_clear_error();
        wk_lm *m = wk_lm_load(dir, NULL);
        assert_null(m);
        if (!strstr(wk_last_error(), cases[i].msg))
            fail_msg("case %zu: error '%s' does not name '%s'", i, wk_last_error(), cases[i].msg);
        print_message("refused: %s\n", wk_last_error());
    }
    free(orig);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run(cmd);
}

/* wk_kv_cache_reserve keeps what the cache holds: 10 tokens, grown, then 5
 * more give the very logits of a cache that was that large from the start
 * (the same batches), and what cannot be grown is refused. */
static void cache_reserve(void **state) {
    (void)state;
    char dir[512], cmd[2048];
    lt_tmp_path(dir, sizeof dir, "tiny_reserve_");
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%d", (int)getpid());
    const char *archs[2] = {"gemma3", "phi3"};
    for (int a = 0; a < 2; a++) {
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tiny_models.py %s %s", WICK_TESTS_DIR, archs[a], dir);
        assert_true(run(cmd));
        wk_lm *m = wk_lm_load(dir, NULL);
        assert_non_null(m);
        int32_t ids[15];
        for (int i = 0; i < 15; i++) ids[i] = 3 + (i * 37) % 300;
        /* gemma3: 10 -> 30 positions; phi3 stays within its original context (16) */
        int64_t small = 10, big = a == 0 ? 30 : 16;
        wk_kv_cache *grown = wk_kv_cache_new(m, small), *whole = wk_kv_cache_new(m, big);
        assert_non_null(grown);
        assert_non_null(whole);
        wk_tensor *t = wk_lm_forward(m, grown, ids, 10, false);
        wk_tensor_free(t);
        t = wk_lm_forward(m, whole, ids, 10, false);
        wk_tensor_free(t);
        assert_null(wk_lm_forward(m, grown, ids + 10, 5, false)); /* full */
        wk_clear_error();
        assert_int_equal(wk_kv_cache_reserve(grown, big), WK_OK);
        assert_int_equal(wk_kv_cache_capacity(grown), big);
        assert_int_equal(wk_kv_cache_len(grown), 10);
        wk_tensor *lg = wk_lm_forward(m, grown, ids + 10, 5, true), *lw = wk_lm_forward(m, whole, ids + 10, 5, true);
        assert_non_null(lg);
        assert_non_null(lw);
        assert_true(tu_max_abs_diff(lg, lw) == 0.0);
        wk_tensor_free(lg);
        wk_tensor_free(lw);
        /* past the context: refused, the cache unchanged */
        assert_int_equal(wk_kv_cache_reserve(grown, 1 << 20), WK_ERR_ARG);
        assert_int_equal(wk_kv_cache_capacity(grown), big);
        if (a == 1) {
            /* Phi-3 longrope: the stored keys were rotated with the short
             * factors; past the original context they would need the long */
            wk_clear_error();
            assert_int_equal(wk_kv_cache_reserve(grown, 32), WK_ERR_ARG);
            assert_non_null(strstr(wk_last_error(), "longrope"));
        }
        wk_kv_cache_free(grown);
        wk_kv_cache_free(whole);
        wk_lm_free(m);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        run(cmd);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(family_llama),  cmocka_unit_test(family_llama3), cmocka_unit_test(family_mistral),
        cmocka_unit_test(family_qwen2),  cmocka_unit_test(family_qwen3),  cmocka_unit_test(family_gemma2),
        cmocka_unit_test(family_gemma3), cmocka_unit_test(family_phi3),   cmocka_unit_test(family_smollm3),
        cmocka_unit_test(refused_keys),  cmocka_unit_test(cache_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
