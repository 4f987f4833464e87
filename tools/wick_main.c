/* The wick command-line tool: `wick info`, `wick demo` (the seeds'
 * experiments replayed on this machine), `wick inspect`, `wick quantize`,
 * `wick generate`, `wick chat`, `wick embed` and `wick perplexity` (tools/wick_inspect.c,
 * tools/wick_quantize.c, tools/wick_generate.c, tools/wick_chat.c,
 * tools/wick_embed.c, tools/wick_perplexity.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick/wick.h"
#include "tools/wick_cli.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *fmt_time(double s, char *buf, size_t n) {
    if (s < 1e-3) snprintf(buf, n, "%.1f µs", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.3f ms", s * 1e3);
    else snprintf(buf, n, "%.3f s", s);
    return buf;
}

/* Print a failed call and exit the demo with an error. */
#define CHECK(x)                                                                     \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "wick demo: %s failed: %s\n", #x, wk_last_error());      \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static int cmd_info(void) {
    wk_cpu_mem_stats ms;
    wk_cpu_mem_stats_get(&ms);
    printf("wick %s\n", WICK_VERSION_STRING);
    printf("  isa:       %s (chosen at run time; WICK_ISA=avx2|scalar lowers it)\n", wk_cpu_isa());
    printf("  threads:   %d (WICK_NUM_THREADS)\n", wk_num_threads());
    printf("  backends:  %s\n", wk_backends());
    printf("  cpu cache: limit %zu MiB (WICK_CPU_CACHE_MB)\n", ms.cache_limit >> 20);
    printf("  max rank:  %d\n", WK_MAX_RANK);
    return 0;
}

static void show_err(const char *what, wk_tensor *t) {
    if (t) {
        char d[128];
        printf("  %-28s Ok(%s)\n", what, wk_tensor_describe(t, d, sizeof d));
        wk_tensor_free(t);
    } else {
        printf("  %-28s Err(%s: %s)\n", what, wk_status_name(wk_last_status()), wk_last_error());
        wk_clear_error();
    }
}

static int demo_walk(void) {
    char b1[32], b2[32];
    wk_device *cpu = wk_cpu();
    printf("== 1. the 2x2 matmul walk (seed 003) ==\n");
    wk_scope_begin();
    int64_t s22[2] = {2, 2};
    wk_tensor *a = wk_reshape(wk_arange(0, 4, 1, WK_F32, cpu), s22, 2);
    CHECK(a);
    double t0 = now_s();
    wk_tensor *c = wk_matmul(a, a);
    double t_mm = now_s() - t0;
    float v[4];
    CHECK(c && wk_to_host_f32(c, v, 4) == WK_OK);
    double t_read = now_s() - t0;
    printf("  cpu: [[%g, %g], [%g, %g]]; matmul returned after %s, to_host returned after %s\n", v[0], v[1], v[2], v[3],
           fmt_time(t_mm, b1, sizeof b1), fmt_time(t_read, b2, sizeof b2));
    printf("  (the CPU computes inside matmul; a GPU backend would return at once and wait in to_host)\n\n");
    wk_scope_end();
    return 0;
}

static int demo_time(void) {
    char b1[32], b2[32], b3[32];
    wk_device *cpu = wk_cpu();
    printf("== 2. 1024x1024 f32 matmul, six runs (seed 003), %d threads, %s ==\n", wk_num_threads(), wk_cpu_isa());
    wk_scope_begin();
    int64_t s[2] = {1024, 1024};
    wk_device_set_seed(cpu, 42);
    wk_tensor *a = wk_randn(s, 2, 0, 1, WK_F32, cpu), *b = wk_randn(s, 2, 0, 1, WK_F32, cpu);
    CHECK(a && b);
    wk_device_synchronize(cpu);
    for (int run = 0; run < 6; run++) {
        double t0 = now_s();
        wk_tensor *c = wk_matmul(a, b);
        double t_mm = now_s() - t0;
        CHECK(c);
        wk_device_synchronize(cpu);
        double t_sync = now_s() - t0;
        double c00;
        int64_t idx[2] = {0, 0};
        CHECK(wk_get(c, idx, &c00) == WK_OK);
        double t_read = now_s() - t0;
        printf("  run %d: matmul returned %s, after synchronize %s (%.1f GFLOP/s), after reading c[0][0] %s (=%.3f)\n",
               run, fmt_time(t_mm, b1, sizeof b1), fmt_time(t_sync, b2, sizeof b2), 2.0 * 1024 * 1024 * 1024 / t_sync * 1e-9,
               fmt_time(t_read, b3, sizeof b3), c00);
        wk_tensor_free(c);
    }
    printf("\n");
    wk_scope_end();
    return 0;
}

static int demo_errors(void) {
    wk_device *cpu = wk_cpu();
    printf("== 3. errors, never panics (seed 000) ==\n");
    wk_scope_begin();
    int64_t s[2] = {2, 2};
    wk_tensor *a = wk_ones(s, 2, WK_F32, cpu);
    wk_device *gpu = wk_cuda(0);
    if (gpu) {
        wk_tensor *b = wk_ones(s, 2, WK_F32, gpu);
        show_err("cpu + cuda:", wk_add(a, b));
        show_err("cpu matmul cuda:", wk_matmul(a, b));
    } else {
        printf("  %-28s Err(%s: %s)\n", "wk_cuda(0):", wk_status_name(wk_last_status()), wk_last_error());
        wk_clear_error();
        show_err("wk_metal(0):", (wk_tensor *)wk_metal(0));
    }
    wk_tensor *h = wk_ones(s, 2, WK_F16, cpu);
    show_err("f32 + f16:", wk_add(a, h));
    int64_t s3[1] = {3};
    wk_tensor *u = wk_arange(1, 4, 1, WK_U32, cpu);
    show_err("u32 exp:", wk_exp(u));
    show_err("u32 exp as f32:", wk_exp(wk_to_dtype(u, WK_F32)));
    wk_tensor *z = wk_zeros(s3, 1, WK_I32, cpu);
    show_err("i32 / 0:", wk_div(wk_to_dtype(u, WK_I32), z));
    show_err("matmul (2,2)@(3,):", wk_matmul(a, wk_ones(s3, 1, WK_F32, cpu)));
    show_err("exp(NULL) keeps 1st error:", wk_exp(wk_add(a, h)));
    printf("\n");
    wk_scope_end();
    return 0;
}

static int demo_batch(void) {
    wk_device *cpu = wk_cpu();
    printf("== 4. narrowed 4-D batch matmul (seed 002) ==\n");
    wk_scope_begin();
    wk_device_set_seed(cpu, 7);
    int64_t sx[4] = {2, 4, 3, 5}, sy[4] = {2, 2, 5, 6};
    wk_tensor *x = wk_randn(sx, 4, 0, 1, WK_F32, cpu), *y = wk_randn(sy, 4, 0, 1, WK_F32, cpu);
    wk_tensor *xn = wk_narrow(x, 1, 0, 2);
    CHECK(xn);
    const int64_t *st = wk_strides(xn);
    printf("  xn dims [2, 2, 3, 5] stride [%lld, %lld, %lld, %lld]\n", (long long)st[0], (long long)st[1],
           (long long)st[2], (long long)st[3]);
    wk_tensor *ref = wk_matmul(wk_contiguous(xn), y);
    wk_tensor *got = wk_matmul(xn, y);
    CHECK(ref && got);
    double worst = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            wk_tensor *d = wk_max_all(wk_abs(wk_sub(wk_select(wk_select(got, 0, i), 0, j),
                                                    wk_select(wk_select(ref, 0, i), 0, j))));
            double v;
            CHECK(d && wk_item(d, &v) == WK_OK);
            if (v > worst) worst = v;
            printf("  cpu batch (%d,%d) max |diff| = %.8f\n", i, j, v);
        }
    printf("  %s: strided batches read at their own offsets (candle 0.11: CPU errors, Metal is silently wrong)\n\n",
           worst < 1e-5 ? "OK" : "WRONG");
    wk_scope_end();
    return worst < 1e-5 ? 0 : 1;
}

static int demo_copy(void) {
    wk_device *cpu = wk_cpu();
    printf("== 5. copy independence (seed 002) ==\n");
    wk_scope_begin();
    int64_t s4[1] = {4}, s2[1] = {2};
    wk_tensor *orig = wk_zeros(s4, 1, WK_F32, cpu);
    wk_tensor *copied = wk_copy(orig);
    wk_tensor *src = wk_ones(s2, 1, WK_F32, cpu);
    CHECK(orig && copied && src && wk_slice_set(orig, src, 0, 0) == WK_OK);
    float o[4], c[4];
    CHECK(wk_to_host_f32(orig, o, 4) == WK_OK && wk_to_host_f32(copied, c, 4) == WK_OK);
    printf("  cpu: orig=[%g, %g, %g, %g] copy=[%g, %g, %g, %g]  (%s)\n\n", o[0], o[1], o[2], o[3], c[0], c[1], c[2], c[3],
           c[0] == 0 ? "independent" : "SHARED");
    wk_scope_end();
    return c[0] == 0 ? 0 : 1;
}

static int cmd_demo(void) {
    cmd_info();
    printf("\n");
    int rc = 0;
    rc |= demo_walk();
    rc |= demo_time();
    rc |= demo_errors();
    rc |= demo_batch();
    rc |= demo_copy();
    printf("demo %s\n", rc ? "FAILED" : "finished");
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        printf("usage: wick <command>\n  info       version, SIMD level, threads, backends\n"
               "  demo       replay the seeds' experiments on this machine\n"
               "  inspect FILE           a GGUF / safetensors file's metadata and tensors\n"
               "  quantize IN OUT TYPE   write a GGUF with its weights in TYPE (q4_0 ... f16)\n"
               "  generate -m MODEL -p PROMPT [...]   text from a decoder model (--help for options)\n"
               "  chat -m MODEL [...]    a conversation on stdin/stdout, history kept in the KV cache\n"
               "  embed -m DIR TEXT...   sentence embeddings from a BERT directory, one line per text\n"
               "  perplexity -m MODEL -f TEXT [...]   perplexity as llama-perplexity measures it\n"
               "  serve -m MODEL [...]   an OpenAI-compatible HTTP server (--help for options)\n");
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "info") == 0) return cmd_info();
    if (strcmp(argv[1], "demo") == 0) return cmd_demo();
    if (strcmp(argv[1], "inspect") == 0) return wk__cli_inspect(argc - 2, argv + 2);
    if (strcmp(argv[1], "quantize") == 0) return wk__cli_quantize(argc - 2, argv + 2);
    if (strcmp(argv[1], "generate") == 0) return wk__cli_generate(argc - 2, argv + 2);
    if (strcmp(argv[1], "chat") == 0) return wk__cli_chat(argc - 2, argv + 2);
    if (strcmp(argv[1], "embed") == 0) return wk__cli_embed(argc - 2, argv + 2);
    if (strcmp(argv[1], "perplexity") == 0) return wk__cli_perplexity(argc - 2, argv + 2);
    if (strcmp(argv[1], "serve") == 0) return wk__cli_serve(argc - 2, argv + 2);
    fprintf(stderr, "wick: unknown command '%s' (try 'wick help')\n", argv[1]);
    return 2;
}
