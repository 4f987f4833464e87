/* By-hand check (not built by CI): wick's row quantizers against llama.cpp's
 * own, byte for byte. Loads libggml-base.so (from a llama-cpp-python build)
 * with dlopen, quantizes the same random rows with ggml_quantize_chunk (no
 * importance matrix; q8_K, which ggml_quantize_chunk refuses, through the
 * exported quantize_row_q8_K_ref) and with wick, and prints per type and per
 * data set how many blocks are byte-identical.
 *
 * Build (from the repository root, after building wick_static in build/):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc tools/quant_vs_ggml.c \
 *      build/libwick.a -ldl -lm -lpthread -lz -o build/quant_vs_ggml
 * Run:
 *   build/quant_vs_ggml /path/to/libggml-base.so [rows]
 * Exit status 0 when every block of every type matches. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/quantize_k.h"
#include "wick/wick.h"

typedef size_t (*ggml_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                int64_t n_per_row, const float *imatrix);
typedef void (*row_fn)(const float *x, void *y, int64_t n);

typedef struct {
    const char *name;
    int ggml_type;     /* ggml's enum ggml_type value */
    size_t block_bytes;
    int block_elems;
    row_fn wick;
    const char *ggml_row_symbol; /* non-NULL: call this ggml row function instead of ggml_quantize_chunk */
} qtype;

static const qtype TYPES[] = {
    {"q2_K", 10, sizeof(wk_block_q2_K), WK_QK_K, wk__quantize_row_q2_K, NULL},
    {"q3_K", 11, sizeof(wk_block_q3_K), WK_QK_K, wk__quantize_row_q3_K, NULL},
    {"q4_K", 12, sizeof(wk_block_q4_K), WK_QK_K, wk__quantize_row_q4_K, NULL},
    {"q5_K", 13, sizeof(wk_block_q5_K), WK_QK_K, wk__quantize_row_q5_K, NULL},
    {"q6_K", 14, sizeof(wk_block_q6_K), WK_QK_K, wk__quantize_row_q6_K, NULL},
    {"q8_K", 15, sizeof(wk_block_q8_K), WK_QK_K, wk__quantize_row_q8_K, "quantize_row_q8_K_ref"},
    {"iq4_xs", 23, sizeof(wk_block_iq4_xs), WK_QK_K, wk__quantize_row_iq4_xs, NULL},
};

/* ---- data ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_unif(void) { return (double)(rng_u64() >> 11) * 0x1p-53; }
static double rng_normal(void) {
    double u = rng_unif(), v = rng_unif();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

enum { N_SETS = 13 };
static const char *SET_NAMES[N_SETS] = {"normal",   "uniform",   "outliers", "weights*0.02", "positive", "negative",
                                        "sparse",   "zero+const", "tiny1e-4", "large1e3",    "integers", "mixed-scale",
                                        "f16-grid"};

static void fill(int set, float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (set) {
        case 0: v = rng_normal(); break;
        case 1: v = 2 * rng_unif() - 1; break;
        case 2: v = rng_normal() * (rng_unif() < 0.01 ? 50 : 1); break;
        case 3: v = 0.02 * rng_normal(); break;
        case 4: v = rng_unif(); break;
        case 5: v = -rng_unif() - 0.5; break;
        case 6: v = rng_unif() < 0.8 ? 0 : rng_normal(); break;
        case 7: v = (i / 256) % 3 == 0 ? 0 : (i / 256) % 3 == 1 ? 0.75 : -3.0; break;
        case 8: v = 1e-4 * rng_normal(); break;
        case 9: v = 1e3 * rng_normal(); break;
        case 10: v = (double)((int)(rng_unif() * 9) - 4); break; /* many exact ties */
        case 11: v = rng_normal() * pow(10.0, (double)((i / 16) % 7) - 3); break;
        default: v = (double)wk_f16_to_f32(wk_f32_to_f16((float)rng_normal())); break;
        }
        x[i] = (float)v;
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/libggml-base.so [rows]\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    ggml_chunk_fn chunk;
    *(void **)&chunk = dlsym(lib, "ggml_quantize_chunk");
    if (!chunk) {
        fprintf(stderr, "no ggml_quantize_chunk in %s\n", argv[1]);
        return 2;
    }
    const int64_t rows = argc > 2 ? atoll(argv[2]) : 64, n_per_row = 4096, n = rows * n_per_row;
    float *x = malloc((size_t)n * sizeof *x);
    size_t max_bytes = (size_t)n / 32 * 36 + 4096; /* >= any type's size */
    uint8_t *qa = malloc(max_bytes), *qb = malloc(max_bytes);
    if (!x || !qa || !qb) return 2;

    int all_ok = 1;
    printf("%-8s", "type");
    for (int s = 0; s < N_SETS; s++) printf(" %12s", SET_NAMES[s]);
    printf("   all\n");
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        const qtype *q = &TYPES[t];
        row_fn ggml_row = NULL;
        if (q->ggml_row_symbol) {
            *(void **)&ggml_row = dlsym(lib, q->ggml_row_symbol);
            if (!ggml_row) {
                printf("%-8s missing %s\n", q->name, q->ggml_row_symbol);
                all_ok = 0;
                continue;
            }
        }
        int64_t nblk = n / q->block_elems, total_same = 0;
        printf("%-8s", q->name);
        for (int s = 0; s < N_SETS; s++) {
            rng_state = 0x1234567ull * (uint64_t)(s + 1);
            fill(s, x, n);
            /* pre-zero both: ggml leaves some bytes (q8_K bsums of an all-zero block) unwritten */
            size_t bytes = (size_t)nblk * q->block_bytes;
            memset(qa, 0, bytes);
            memset(qb, 0, bytes);
            if (ggml_row) {
                ggml_row(x, qa, n);
            } else {
                chunk(q->ggml_type, x, qa, 0, rows, n_per_row, NULL);
            }
            for (int64_t r = 0; r < rows; r++)
                q->wick(x + r * n_per_row, qb + (size_t)r * (size_t)(n_per_row / q->block_elems) * q->block_bytes, n_per_row);
            int64_t same = 0, first_bad = -1;
            for (int64_t b = 0; b < nblk; b++) {
                if (!memcmp(qa + (size_t)b * q->block_bytes, qb + (size_t)b * q->block_bytes, q->block_bytes)) same++;
                else if (first_bad < 0) first_bad = b;
            }
            total_same += same;
            printf(" %5lld/%-6lld", (long long)same, (long long)nblk);
            if (same != nblk) {
                all_ok = 0;
                if (getenv("QUANT_VS_GGML_VERBOSE")) {
                    fprintf(stderr, "%s %s: first differing block %lld, bytes:", q->name, SET_NAMES[s], (long long)first_bad);
                    for (size_t k = 0; k < q->block_bytes; k++) {
                        size_t o = (size_t)first_bad * q->block_bytes + k;
                        if (qa[o] != qb[o]) fprintf(stderr, " [%zu] ggml %02x wick %02x", k, qa[o], qb[o]);
                    }
                    fprintf(stderr, "\n");
                }
            }
        }
        printf("   %s\n", total_same == nblk * N_SETS ? "EQUAL" : "DIFFER");
    }
    printf("%s\n", all_ok ? "all types byte-identical to ggml" : "some blocks differ");
    free(x);
    free(qa);
    free(qb);
    dlclose(lib);
    return all_ok ? 0 : 1;
}
