/* `wick embed -m DIR [--threads N] [--device cpu|cuda] [-v] TEXT...`:
 * sentence embeddings from a BERT directory (all-MiniLM-L6-v2 and kin), one
 * line per text, its dim values separated by spaces, each printed %.7g
 * (enough to tell f32 values apart to 1e-7 relative). All texts run in one
 * wk_bert_embed call (padded batches). -v prints load and embedding times to
 * stderr. Errors: one line on stderr, exit 1. */
#include <stdio.h>
#include "wick/bert.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/wick_cli.h"
#include "wick/wick.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage_fail(const char *msg) {
    fprintf(stderr, "wick embed: %s (usage: wick embed -m DIR [--threads N] [--device cpu|cuda] [-v] TEXT...)\n", msg);
    return 1;
}

int wk__cli_embed(int argc, char **argv) {
    const char *dir = NULL, *device = "cpu";
    int threads = 0, first = -1;
    bool verbose = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (first < 0 && (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "--threads") ||
                          !strcmp(a, "--device"))) {
            if (i + 1 >= argc) return usage_fail("an option lacks its value");
            const char *v = argv[++i];
            if (!strcmp(a, "-m") || !strcmp(a, "--model")) dir = v;
            else if (!strcmp(a, "--device")) device = v;
            else {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > 4096) return usage_fail("--threads wants a count from 1 to 4096");
                threads = (int)n;
            }
        } else if (first < 0 && !strcmp(a, "-v")) {
            verbose = true;
        } else if (first < 0 && !strcmp(a, "--")) {
            first = i + 1;
        } else if (first < 0) {
            first = i;
        }
    }
    if (!dir) return usage_fail("no model directory (-m DIR)");
    if (first < 0 || first >= argc) return usage_fail("no text to embed");
    wk_device *dev = NULL;
    if (!strcmp(device, "cpu")) dev = wk_cpu();
    else if (!strcmp(device, "cuda")) dev = wk_cuda(0);
    else return usage_fail("--device is cpu or cuda");
    if (!dev) return wk__cli_fail("embed");
    if (threads > 0 && wk_set_num_threads(threads) != WK_OK) return wk__cli_fail("embed");
    double t0 = now_s();
    wk_bert *b = wk_bert_load(dir, dev);
    if (!b) return wk__cli_fail("embed");
    double t1 = now_s();
    int n = argc - first;
    wk_tensor *e = wk_bert_embed(b, (const char *const *)(argv + first), n);
    int64_t dim = wk_bert_dim(b);
    float *v = e ? malloc((size_t)n * (size_t)dim * sizeof *v) : NULL;
    if (e && !v) fprintf(stderr, "wick embed: cannot allocate %d embeddings\n", n);
    int rc = 1;
    if (v && wk_to_host_f32(e, v, (size_t)n * (size_t)dim) == WK_OK) {
        double t2 = now_s();
        for (int i = 0; i < n; i++)
            for (int64_t j = 0; j < dim; j++) printf(j + 1 < dim ? "%.7g " : "%.7g\n", (double)v[(size_t)i * (size_t)dim + (size_t)j]);
        rc = fflush(stdout) == 0 ? 0 : 1;
        if (rc) fprintf(stderr, "wick embed: cannot write the embeddings\n");
        if (verbose)
            fprintf(stderr, "wick embed: load %.1f ms, %d texts in %.1f ms (%.1f texts/s), %d threads, %s\n",
                    (t1 - t0) * 1e3, n, (t2 - t1) * 1e3, n / (t2 - t1), wk_num_threads(), wk_cpu_isa());
    } else if (!(e && !v)) {
        rc = wk__cli_fail("embed");
    }
    free(v);
    wk_tensor_free(e);
    wk_bert_free(b);
    return rc;
}
