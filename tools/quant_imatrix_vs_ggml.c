/* By-hand check (not built by CI): wick's importance-matrix quantizers
 * (src/quant/quantize_imatrix.c) against ggml_quantize_chunk with the same
 * imatrix, byte for byte. Loads libggml-base.so (from a llama-cpp-python
 * build) with dlopen, quantizes the data sets of tools/quant_vs_ggml.h with
 * the seeded matrix qvg_imatrix(seed 3) on both sides, and prints per type
 * and data set how many blocks are identical, then FNV-1a hashes of ggml's
 * bytes over all sets: with rows 4 they are the ones
 * tests/test_quant_imatrix.c holds.
 *
 * Build (from the repository root, after building wick_static in build/):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc tools/quant_imatrix_vs_ggml.c \
 *      build/libwick.a -ldl -lm -lpthread -lz -o build/quant_imatrix_vs_ggml
 * Run:
 *   build/quant_imatrix_vs_ggml /path/to/libggml-base.so [rows]
 * Exit status 0 when every block of every type matches. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quantize_imatrix.h"
#include "wick/wick.h"

#include "quant_vs_ggml.h"

typedef size_t (*ggml_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                int64_t n_per_row, const float *imatrix);

typedef struct {
    const char *name;
    wk_dtype dt;
    int ggml_type; /* enum ggml_type */
} qtype;

static const qtype TYPES[] = {
    {"q4_0", WK_Q4_0, 2},  {"q4_1", WK_Q4_1, 3},  {"q5_0", WK_Q5_0, 6},    {"q5_1", WK_Q5_1, 7},
    {"q8_0", WK_Q8_0, 8},  {"q2_K", WK_Q2_K, 10}, {"q3_K", WK_Q3_K, 11},   {"q4_K", WK_Q4_K, 12},
    {"q5_K", WK_Q5_K, 13}, {"q6_K", WK_Q6_K, 14}, {"iq4_nl", WK_IQ4_NL, 20}, {"iq4_xs", WK_IQ4_XS, 23},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

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
    const int64_t n_per_row = 4096;
    int64_t rows = argc > 2 ? atoll(argv[2]) : 16;
    if (rows < 1) return 2;
    const int64_t n = rows * n_per_row;
    float *x = malloc((size_t)n * sizeof *x), *qw = malloc((size_t)n_per_row * sizeof *qw);
    size_t max_bytes = (size_t)n * 2;
    uint8_t *qa = malloc(max_bytes), *qb = malloc(max_bytes);
    if (!x || !qw || !qa || !qb) return 2;
    qvg_imatrix(3, qw, n_per_row);

    int all_ok = 1;
    uint64_t hashes[N_TYPES];
    printf("%-8s", "type");
    for (int s = 0; s < QVG_N_SETS; s++) printf(" %12s", QVG_SET_NAMES[s]);
    printf("   all\n");
    for (size_t t = 0; t < N_TYPES; t++) {
        const qtype *q = &TYPES[t];
        const wk__quant_traits *tr = wk__quant_traits_of(q->dt);
        const size_t row_bytes = (size_t)(n_per_row / tr->block_elems) * tr->block_bytes;
        const int64_t nblk = n / tr->block_elems;
        int64_t total_same = 0;
        uint64_t h = QVG_FNV0;
        printf("%-8s", q->name);
        for (int s = 0; s < QVG_N_SETS; s++) {
            qvg_fill(s, 1, x, n);
            size_t bytes = (size_t)rows * row_bytes;
            memset(qa, 0, bytes);
            memset(qb, 0xAB, bytes); /* every byte must be written */
            chunk(q->ggml_type, x, qa, 0, rows, n_per_row, qw);
            for (int64_t r = 0; r < rows; r++)
                if (wk__quantize_row_imatrix(q->dt, x + r * n_per_row, qb + (size_t)r * row_bytes, n_per_row, qw) !=
                    WK_OK)
                    return 2;
            int64_t same = 0, first_bad = -1;
            for (int64_t b = 0; b < nblk; b++) {
                if (!memcmp(qa + (size_t)b * tr->block_bytes, qb + (size_t)b * tr->block_bytes, tr->block_bytes))
                    same++;
                else if (first_bad < 0)
                    first_bad = b;
            }
            total_same += same;
            h = qvg_fnv(h, qa, bytes);
            printf(" %5lld/%-6lld", (long long)same, (long long)nblk);
            if (same != nblk) {
                all_ok = 0;
                if (getenv("QUANT_VS_GGML_VERBOSE")) {
                    fprintf(stderr, "%s %s: first differing block %lld:", q->name, QVG_SET_NAMES[s],
                            (long long)first_bad);
                    for (size_t k = 0; k < tr->block_bytes; k++) {
                        size_t o = (size_t)first_bad * tr->block_bytes + k;
                        if (qa[o] != qb[o]) fprintf(stderr, " [%zu] ggml %02x wick %02x", k, qa[o], qb[o]);
                    }
                    fprintf(stderr, "\n");
                }
            }
        }
        printf("   %s\n", total_same == nblk * QVG_N_SETS ? "EQUAL" : "DIFFER");
        hashes[t] = h;
    }
    printf("%s\n", all_ok ? "all types byte-identical to ggml" : "some blocks differ");
    printf("ggml's hashes over the %d data sets, %lld rows of %lld (data seed 1, imatrix seed 3):\n", QVG_N_SETS,
           (long long)rows, (long long)n_per_row);
    for (size_t t = 0; t < N_TYPES; t++)
        printf("    {\"%s\", 0x%016llxull},\n", TYPES[t].name, (unsigned long long)hashes[t]);
    free(x);
    free(qw);
    free(qa);
    free(qb);
    dlclose(lib);
    return all_ok ? 0 : 1;
}
