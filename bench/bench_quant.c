/* Row quantizers f32 -> every GGML block type, wick beside ggml's own (the
 * reference quantizers llama-quantize runs, ggml_quantize_chunk without an
 * importance matrix), measured in the same run on the same data; then the
 * row dequantizers block type -> f32 beside ggml's dequantize_row_<type>
 * (Melem/s of f32 output; "same values" compares the two f32 outputs).
 *
 *   bench_quant [--quick] [--ref] [--ggml PATH/libggml-base.so]
 *
 * --ref times wick's scalar reference rows (quant/quant_rows.h: the code the
 * fast rows replaced, same source; the dequantizers' fast rows are the CPU
 * backend's, cpu/quantized/dequant_rows.h) instead, for before / after tables.
 *
 * The ggml column needs libggml-base.so (from a llama-cpp-python build; the
 * path may also come from WICK_GGML_BASE); without it, it says n/a. Data: a
 * 576 x 1536 weight-like matrix (normal, sigma 0.02: SmolLM2's down_proj),
 * quantized row by row on one thread. Timing, by the thread's CPU time:
 * one warm-up call, the batch grows until it takes >= 0.2 s (--quick:
 * 10 ms), then the median of 5 batches. MB/s counts the f32 input bytes. "vs ggml" = ggml time / wick
 * time (above 1: wick is faster); "same bytes" says whether the two outputs
 * are identical. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "cpu/vmath/vmath.h"
#include "cpu/quantized/dequant_rows.h"
#include "quant/quant.h"
#include "quant/quant_rows.h"
#include "wick/wick.h"

#include "../tools/quant_vs_ggml.h"

typedef size_t (*ggml_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                int64_t n_per_row, const float *imatrix);
typedef void (*ggml_row_fn)(const float *x, void *y, int64_t n);

static const struct {
    const char *name;
    wk_dtype dt;
    int ggml_type;
    const char *ggml_row; /* types ggml_quantize_chunk has no case for */
} TYPES[] = {
    {"q4_0", WK_Q4_0, 2, NULL},   {"q4_1", WK_Q4_1, 3, NULL},   {"q5_0", WK_Q5_0, 6, NULL},
    {"q5_1", WK_Q5_1, 7, NULL},   {"q8_0", WK_Q8_0, 8, NULL},   {"q8_1", WK_Q8_1, 9, "quantize_row_q8_1_ref"},
    {"q2_K", WK_Q2_K, 10, NULL},  {"q3_K", WK_Q3_K, 11, NULL},  {"q4_K", WK_Q4_K, 12, NULL},
    {"q5_K", WK_Q5_K, 13, NULL},  {"q6_K", WK_Q6_K, 14, NULL},  {"q8_K", WK_Q8_K, 15, "quantize_row_q8_K_ref"},
    {"iq4_nl", WK_IQ4_NL, 20, NULL}, {"iq4_xs", WK_IQ4_XS, 23, NULL},
};

enum { ROWS = 576, COLS = 1536 }; /* COLS a multiple of 256 for the K types */

typedef struct {
    const float *x;
    uint8_t *q;
    const wk__quant_traits *tr;
    ggml_chunk_fn chunk;
    ggml_row_fn row;
    int ggml_type;
} ctx_t;

/* Seconds per call of call(ctx) by this thread's CPU time (the bench is
 * single-threaded; on a shared, loaded machine wall time mostly measures
 * waiting for a core): one warm-up call, the batch doubles until it takes
 * min_time, then the median of 5 batches. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double time_calls_cpu(void (*call)(void *), void *ctx, double min_time) {
    call(ctx);
    int64_t n = 1;
    for (;;) {
        double t0 = cpu_now();
        for (int64_t i = 0; i < n; i++) call(ctx);
        if (cpu_now() - t0 >= min_time || n > (1 << 20)) break;
        n *= 2;
    }
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = cpu_now();
        for (int64_t i = 0; i < n; i++) call(ctx);
        t[r] = (cpu_now() - t0) / (double)n;
    }
    return bench_median(t, 5);
}

static void run_wick(void *p) {
    ctx_t *c = p;
    size_t row_bytes = (size_t)(COLS / c->tr->block_elems) * c->tr->block_bytes;
    for (int r = 0; r < ROWS; r++) c->tr->from_f32(c->x + (size_t)r * COLS, c->q + (size_t)r * row_bytes, COLS);
}

/* The rows the CPU backend runs: the traits' quantizers, the CPU's SIMD
 * row dequantizers (cpu/quantized/dequant_rows.h). */
static wk__quant_traits cpu_traits(const wk__quant_traits *tr) {
    wk__quant_traits r = *tr;
    r.to_f32 = wk__cpu_dequant_row(tr->dtype);
    return r;
}

/* The scalar references of the rows that have fast versions (--ref). */
static wk__quant_traits ref_traits(const wk__quant_traits *tr) {
    wk__quant_traits r = *tr;
    wk_dtype d = tr->dtype;
    if (d == WK_Q4_0) r.from_f32 = wk__quantize_row_q4_0_ref, r.to_f32 = wk__dequant_row_q4_0_ref;
    if (d == WK_Q4_1) r.from_f32 = wk__quantize_row_q4_1_ref, r.to_f32 = wk__dequant_row_q4_1_ref;
    if (d == WK_Q5_0) r.from_f32 = wk__quantize_row_q5_0_ref, r.to_f32 = wk__dequant_row_q5_0_ref;
    if (d == WK_Q5_1) r.from_f32 = wk__quantize_row_q5_1_ref, r.to_f32 = wk__dequant_row_q5_1_ref;
    if (d == WK_Q8_0) r.from_f32 = wk__quantize_row_q8_0_ref, r.to_f32 = wk__dequant_row_q8_0_ref;
    if (d == WK_Q8_1) r.from_f32 = wk__quantize_row_q8_1_ref;
    if (d == WK_IQ4_NL) r.from_f32 = wk__quantize_row_iq4_nl_ref;
    if (d == WK_Q4_K) r.to_f32 = wk__dequant_row_q4_K_ref;
    if (d == WK_Q5_K) r.to_f32 = wk__dequant_row_q5_K_ref;
    if (d == WK_Q6_K) r.to_f32 = wk__dequant_row_q6_K_ref;
    return r;
}
static int g_ref = 0;

typedef void (*ggml_dq_fn)(const void *x, float *y, int64_t k);
typedef struct {
    const uint8_t *q;
    float *y;
    const wk__quant_traits *tr;
    ggml_dq_fn dq;
} dctx_t;

static void run_wick_dq(void *p) {
    dctx_t *c = p;
    size_t row_bytes = (size_t)(COLS / c->tr->block_elems) * c->tr->block_bytes;
    for (int r = 0; r < ROWS; r++) c->tr->to_f32(c->q + (size_t)r * row_bytes, c->y + (size_t)r * COLS, COLS);
}

static void run_ggml_dq(void *p) {
    dctx_t *c = p;
    size_t row_bytes = (size_t)(COLS / c->tr->block_elems) * c->tr->block_bytes;
    for (int r = 0; r < ROWS; r++) c->dq(c->q + (size_t)r * row_bytes, c->y + (size_t)r * COLS, COLS);
}

/* The dequantize table: blocks made by wick's quantizer from x. */
static void bench_dequant(void *lib, const float *x, uint8_t *q, double min_time) {
    const size_t n = (size_t)ROWS * COLS;
    float *ya = malloc(n * sizeof *ya), *yb = malloc(n * sizeof *yb);
    if (!ya || !yb) {
        free(ya);
        free(yb);
        return;
    }
    printf("\nrow dequantizers to f32, same matrix, 1 thread, CPU time (ISA %s)\n", wk__vmath_isa());
    printf("%-8s %12s %12s %9s %12s\n", "type", "wick Mel/s", "ggml Mel/s", "vs ggml", "same values");
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        const wk__quant_traits *tr0 = wk__quant_traits_of(TYPES[t].dt);
        if (!tr0 || !tr0->from_f32) continue;
        wk__quant_traits trc = g_ref ? ref_traits(tr0) : cpu_traits(tr0);
        const wk__quant_traits *tr = &trc;
        size_t row_bytes = (size_t)(COLS / tr->block_elems) * tr->block_bytes;
        for (int r = 0; r < ROWS; r++) tr->from_f32(x + (size_t)r * COLS, q + (size_t)r * row_bytes, COLS);
        dctx_t c = {q, yb, tr, NULL};
        double tw = time_calls_cpu(run_wick_dq, &c, min_time);
        double mw = (double)n / tw / 1e6;
        char sym[64];
        snprintf(sym, sizeof sym, "dequantize_row_%s", TYPES[t].name);
        if (lib) *(void **)&c.dq = dlsym(lib, sym);
        if (!c.dq) {
            printf("%-8s %12.1f %12s\n", TYPES[t].name, mw, "n/a");
            continue;
        }
        c.y = ya;
        double tg = time_calls_cpu(run_ggml_dq, &c, min_time);
        c.y = yb;
        run_wick_dq(&c);
        printf("%-8s %12.1f %12.1f %8.2fx %12s\n", TYPES[t].name, mw, (double)n / tg / 1e6, tg / tw,
               memcmp(ya, yb, n * sizeof *ya) ? "NO" : "yes");
    }
    free(ya);
    free(yb);
}

static void run_ggml(void *p) {
    ctx_t *c = p;
    if (c->row) c->row(c->x, c->q, (int64_t)ROWS * COLS);
    else c->chunk(c->ggml_type, c->x, c->q, 0, ROWS, COLS, NULL);
}

int main(int argc, char **argv) {
    int quick = 0;
    const char *ggml_path = getenv("WICK_GGML_BASE");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--ref")) g_ref = 1;
        else if (!strcmp(argv[i], "--ggml") && i + 1 < argc) ggml_path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--ref] [--ggml PATH/libggml-base.so]\n", argv[0]);
            return 2;
        }
    }
    double min_time = quick ? 0.01 : 0.2;
    void *lib = ggml_path ? dlopen(ggml_path, RTLD_NOW | RTLD_LOCAL) : NULL;
    ggml_chunk_fn chunk = NULL;
    if (lib) *(void **)&chunk = dlsym(lib, "ggml_quantize_chunk");
    if (ggml_path && !chunk) fprintf(stderr, "bench_quant: no ggml from %s (%s)\n", ggml_path, dlerror());

    const size_t n = (size_t)ROWS * COLS;
    float *x = malloc(n * sizeof *x);
    uint8_t *qa = malloc(n * 2), *qb = malloc(n * 2);
    if (!x || !qa || !qb) return 1;
    qvg_fill(3, 1, x, (int64_t)n); /* "weights": 0.02 * normal */

    printf("row quantizers%s, %d x %d f32 (%.1f MB), 1 thread, CPU time; ggml: %s\n",
           g_ref ? " (wick: scalar references, --ref)" : "", ROWS, COLS, (double)n * 4 / 1e6, chunk ? ggml_path : "n/a");
    printf("%-8s %12s %12s %9s %11s\n", "type", "wick MB/s", "ggml MB/s", "vs ggml", "same bytes");
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        const wk__quant_traits *tr0 = wk__quant_traits_of(TYPES[t].dt);
        if (!tr0 || !tr0->from_f32) {
            printf("%-8s %12s\n", TYPES[t].name, "none");
            continue;
        }
        wk__quant_traits trc = g_ref ? ref_traits(tr0) : cpu_traits(tr0);
        const wk__quant_traits *tr = &trc;
        ctx_t c = {x, qb, tr, chunk, NULL, TYPES[t].ggml_type};
        double tw = time_calls_cpu(run_wick, &c, min_time);
        double mbw = (double)n * 4 / tw / 1e6;
        if (!chunk) {
            printf("%-8s %12.1f %12s %9s %11s\n", TYPES[t].name, mbw, "n/a", "n/a", "n/a");
            continue;
        }
        if (TYPES[t].ggml_row) *(void **)&c.row = dlsym(lib, TYPES[t].ggml_row);
        if (TYPES[t].ggml_row && !c.row) {
            printf("%-8s %12.1f %12s\n", TYPES[t].name, mbw, "missing");
            continue;
        }
        c.q = qa;
        double tg = time_calls_cpu(run_ggml, &c, min_time);
        size_t bytes = n / tr->block_elems * tr->block_bytes;
        memset(qa, 0, bytes); /* ggml leaves q8_K bsums of zero blocks unwritten */
        memset(qb, 0, bytes);
        run_ggml(&c);
        c.q = qb;
        run_wick(&c);
        printf("%-8s %12.1f %12.1f %8.2fx %11s\n", TYPES[t].name, mbw, (double)n * 4 / tg / 1e6, tg / tw,
               memcmp(qa, qb, bytes) ? "NO" : "yes");
    }
    bench_dequant(chunk ? lib : NULL, x, qa, min_time);
    free(x);
    free(qa);
    free(qb);
    if (lib) dlclose(lib);
    return 0;
}
