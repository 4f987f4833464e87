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
 *   build/quant_vs_ggml /path/to/libggml-base.so --file values.f32
 * (rows of 4096 per data set of tools/quant_vs_ggml.h, default 64; with rows
 * 8 its hashes are the ones tests/test_quantk.c holds; --file: one data set,
 * the little-endian f32 values of a file, e.g. real weights dumped with
 * gguf-py, in rows of 4096)
 * Exit status 0 when every block of every type matches. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/blocks.h"
#include "quant/quant.h"
#include "wick/wick.h"

#include "quant_vs_ggml.h"

typedef size_t (*ggml_chunk_fn)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                int64_t n_per_row, const float *imatrix);
typedef void (*row_fn)(const float *x, void *y, int64_t n);


/* wick's block dtypes and ggml's ids (enum ggml_type) for them. Quantizers
 * and block geometry come from wick's traits table (quant/quant.h). */
typedef struct {
    const char *name;
    wk_dtype dt;
    int ggml_type;
    const char *ggml_row_symbol; /* non-NULL: ggml_quantize_chunk has no case; call this row function */
} qtype;

static const qtype TYPES[] = {
    {"q4_0", WK_Q4_0, 2, NULL},     {"q4_1", WK_Q4_1, 3, NULL},
    {"q5_0", WK_Q5_0, 6, NULL},     {"q5_1", WK_Q5_1, 7, NULL},
    {"q8_0", WK_Q8_0, 8, NULL},     {"q8_1", WK_Q8_1, 9, "quantize_row_q8_1_ref"},
    {"q2_K", WK_Q2_K, 10, NULL},    {"q3_K", WK_Q3_K, 11, NULL},
    {"q4_K", WK_Q4_K, 12, NULL},    {"q5_K", WK_Q5_K, 13, NULL},
    {"q6_K", WK_Q6_K, 14, NULL},    {"q8_K", WK_Q8_K, 15, "quantize_row_q8_K_ref"},
    {"iq4_nl", WK_IQ4_NL, 20, NULL}, {"iq4_xs", WK_IQ4_XS, 23, NULL},
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
    /* rows of the synthetic sets, or --file: one set, a file's floats */
    const int from_file = argc > 3 && !strcmp(argv[2], "--file");
    const int n_sets = from_file ? 1 : QVG_N_SETS;
    const int64_t n_per_row = 4096;
    int64_t rows = argc > 2 && !from_file ? atoll(argv[2]) : 64;
    FILE *fin = NULL;
    if (from_file) {
        fin = fopen(argv[3], "rb");
        if (!fin || fseek(fin, 0, SEEK_END) != 0) {
            fprintf(stderr, "cannot read %s\n", argv[3]);
            return 2;
        }
        rows = ftell(fin) / (long)sizeof(float) / n_per_row;
        rewind(fin);
    }
    if (rows < 1) return 2;
    const int64_t n = rows * n_per_row;
    float *x = malloc((size_t)n * sizeof *x);
    size_t max_bytes = (size_t)n * 2; /* > any block type (q8_K: 292 bytes per 256) */
    uint8_t *qa = malloc(max_bytes), *qb = malloc(max_bytes);
    if (!x || !qa || !qb) return 2;
    if (fin) {
        if (fread(x, sizeof *x, (size_t)n, fin) != (size_t)n) return 2;
        fclose(fin);
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(x[i])) {
                fprintf(stderr, "%s: non-finite value at %lld\n", argv[3], (long long)i);
                return 2;
            }
    }

    int all_ok = 1;
    uint64_t hashes[N_TYPES][2] = {{0}};
    printf("%-8s", "type");
    for (int s = 0; s < n_sets; s++) printf(" %12s", from_file ? "file" : QVG_SET_NAMES[s]);
    printf("   all\n");
    for (size_t t = 0; t < N_TYPES; t++) {
        const qtype *q = &TYPES[t];
        const wk__quant_traits *tr = wk__quant_traits_of(q->dt);
        row_fn ggml_row = NULL;
        if (!tr || !tr->from_f32) {
            printf("%-8s no wick quantizer\n", q->name);
            all_ok = 0;
            continue;
        }
        const size_t block_bytes = tr->block_bytes;
        const int64_t block_elems = tr->block_elems;
        if (q->ggml_row_symbol) {
            *(void **)&ggml_row = dlsym(lib, q->ggml_row_symbol);
            if (!ggml_row) {
                printf("%-8s missing %s\n", q->name, q->ggml_row_symbol);
                all_ok = 0;
                continue;
            }
        }
        int64_t nblk = n / block_elems, total_same = 0;
        uint64_t hash_ggml = QVG_FNV0, hash_wick = QVG_FNV0;
        printf("%-8s", q->name);
        for (int s = 0; s < n_sets; s++) {
            if (!from_file) qvg_fill(s, 1, x, n);
            /* pre-zero both: ggml leaves some bytes (q8_K bsums of an all-zero block) unwritten */
            size_t bytes = (size_t)nblk * block_bytes;
            memset(qa, 0, bytes);
            memset(qb, 0, bytes);
            if (ggml_row) {
                ggml_row(x, qa, n);
            } else {
                chunk(q->ggml_type, x, qa, 0, rows, n_per_row, NULL);
            }
            for (int64_t r = 0; r < rows; r++)
                tr->from_f32(x + r * n_per_row, qb + (size_t)r * (size_t)(n_per_row / block_elems) * block_bytes, n_per_row);
            int64_t same = 0, first_bad = -1;
            for (int64_t b = 0; b < nblk; b++) {
                if (!memcmp(qa + (size_t)b * block_bytes, qb + (size_t)b * block_bytes, block_bytes)) same++;
                else if (first_bad < 0) first_bad = b;
            }
            total_same += same;
            hash_ggml = qvg_fnv(hash_ggml, qa, bytes);
            hash_wick = qvg_fnv(hash_wick, qb, bytes);
            printf(" %5lld/%-6lld", (long long)same, (long long)nblk);
            if (same != nblk) {
                all_ok = 0;
                if (getenv("QUANT_VS_GGML_VERBOSE")) {
                    fprintf(stderr, "%s %s: first differing block %lld, bytes:", q->name, from_file ? "file" : QVG_SET_NAMES[s], (long long)first_bad);
                    for (size_t k = 0; k < block_bytes; k++) {
                        size_t o = (size_t)first_bad * block_bytes + k;
                        if (qa[o] != qb[o]) fprintf(stderr, " [%zu] ggml %02x wick %02x", k, qa[o], qb[o]);
                    }
                    fprintf(stderr, "\n");
                }
            }
        }
        printf("   %s\n", total_same == nblk * n_sets ? "EQUAL" : "DIFFER");
        hashes[t][0] = hash_ggml;
        hashes[t][1] = hash_wick;
    }
    printf("%s\n", all_ok ? "all types byte-identical to ggml" : "some blocks differ");
    /* FNV-1a of all data sets' bytes in order, for tests/test_quantk.c (rows 8) */
    if (!from_file) printf("hashes over the %d data sets, %lld rows of %lld (seed 1):\n", QVG_N_SETS, (long long)rows,
           (long long)n_per_row);
    for (size_t t = 0; t < N_TYPES && !from_file; t++)
        printf("  %-8s ggml 0x%016llxull  wick 0x%016llxull\n", TYPES[t].name, (unsigned long long)hashes[t][0],
               (unsigned long long)hashes[t][1]);
    free(x);
    free(qa);
    free(qb);
    dlclose(lib);
    return all_ok ? 0 : 1;
}
