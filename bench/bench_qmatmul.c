/*
 * bench/qmatmul — wk_qmatmul beside llama.cpp's ggml on the same weights,
 * measured in one run, with the machine's read bandwidth.
 *
 *   bench_qmatmul [--quick] [--threads 1,2] [--types q4_0,q4_1,q8_0,q4_K,q6_K,f16,bf16,q5_0,q5_K]
 *                 [--shapes 4096x4096,576x576,...] [--m 1,128,512] [--rounds N]
 *                 [--min-time SECONDS] [--ggml-lib DIR] [--no-peer] [--clock wall|cpu]
 *
 * Rows: weights N x K = 4096x4096 and SmolLM2-135M's 576x576, 576x1536,
 * 1536x576, 49152x576 (N x K, y = x . W^T), M = 1 (decode) and 128, 512
 * (prefill), types Q4_0 Q4_1 Q8_0 Q4_K Q6_K F16 BF16, 1 and 2 threads.
 * --quick: 576x576, Q4_0, M = 1, one round.
 *
 * Same weights for both: W f32 uniform in [-1, 1) is quantized once per
 * (shape, type) by ggml's ggml_quantize_chunk when the peer is loaded
 * (else by wick: wk_to_dtype from f32); those bytes are wrapped zero-copy as
 * a wick block tensor (wk_from_blob, read-only) and copied into the ggml
 * tensor. x f32 M x K uniform in [-1, 1).
 *  - wick: y = wk_qmatmul(x, w); wk_tensor_free(y) (allocation included),
 *    threads by wk_set_num_threads.
 *  - ggml: y = ggml_mul_mat(W, X) (W ne = [K, N], X ne = [K, M]), graph built
 *    once, computed on a persistent ggml threadpool of T threads (as
 *    llama.cpp's tools run it), work buffer allocated once.
 * The peer is llama-cpp-python 0.3.36's ggml, loaded with dlopen from
 * --ggml-lib DIR (else $WICK_GGML_LIB_DIR, else the project's .bench-venv:
 * scripts/bench-qmatmul.sh installs it). Without it the ggml columns say
 * n/a; nothing of llama.cpp is compiled in (bench/ggml_peer.c).
 *
 * Timing: one call each to size the bursts (a burst is enough calls to take
 * --min-time, 30 ms; 10 ms with --quick), then --rounds rounds (5; 3 when a
 * call takes over 0.3 s; 1 with --quick), each timing one wick burst and
 * one ggml burst, the order swapped every round; medians of the rounds'
 * per-call times. With T > 1 the program sleeps 2 ms after each burst and
 * pauses ggml's threadpool, so neither library's spinning workers take a
 * core from the other.
 *
 * Check: y of rows 0, 1, 127, 511 (those < M) against an f64 product of x
 * and W dequantized from the very bytes both use (src/quant/dequant_block.h);
 * err = max |y - ref| / max |ref|. Both libraries quantize x (Q8_0 / Q8_1 /
 * Q8_K partner blocks; F16 / BF16 for those weights), which costs about
 * 0.5% here; over 2% prints BAD and the exit status is 1.
 *
 * Read bandwidth: the sum of a buffer >= 2x the last-level cache (u64
 * lanes, AVX2 where the CPU has it) on 1 and T threads, best of 5, in the
 * header. Decode is measured twice: M = 1 with the same weights called back
 * to back (from the cache when they fit), beside the read bandwidth of a
 * buffer of their size (small ones summed repeatedly, >= 64 MiB a round);
 * and M = 1c, the calls cycling through copies of the weights that together
 * exceed the cache twice (every call reads them from memory, as a decode
 * step over a model larger than the cache does), beside the header's
 * buffer. The weights' GB/s (bytes / time per call) is given as a share of
 * that bandwidth (re-measured for every row, the highest figure kept).
 *
 * Exit status 0 unless a check printed BAD or ggml failed; a wick call that
 * fails (wk_qmatmul not implemented for that type yet) prints n/a and the
 * reason once, and does not change it.
 */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sysconf's cache sizes */
#endif
#include <wick/nn.h>
#include <wick/wick.h>

#include "ggml_peer.h"
#include "peer.h"
#include "quant/dequant_block.h"

#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* ------------------------------------------------------------ types */

typedef void (*dq_fn)(const void *block, float *out);

#define DQ_ADAPTER(name, type)                                                           \
    static void dq_##name(const void *b, float *y) { wk__dq_##name((const type *)b, y); }
DQ_ADAPTER(q4_0, wk_block_q4_0)
DQ_ADAPTER(q4_1, wk_block_q4_1)
DQ_ADAPTER(q8_0, wk_block_q8_0)
DQ_ADAPTER(q4_K, wk_block_q4_K)
DQ_ADAPTER(q6_K, wk_block_q6_K)
DQ_ADAPTER(q5_0, wk_block_q5_0)
DQ_ADAPTER(q5_K, wk_block_q5_K)
static void dq_f16(const void *b, float *y) {
    uint16_t h;
    memcpy(&h, b, 2);
    *y = wk__q_f16(h);
}
static void dq_bf16(const void *b, float *y) {
    uint16_t h;
    memcpy(&h, b, 2);
    uint32_t u = (uint32_t)h << 16;
    memcpy(y, &u, 4);
}

typedef struct qtype {
    const char *name; /* as ggml names it */
    wk_dtype dt;
    int ggml;
    dq_fn dq;
} qtype;

static const qtype k_types[] = {
    {"q4_0", WK_Q4_0, GGMLP_Q4_0, dq_q4_0}, {"q4_1", WK_Q4_1, GGMLP_Q4_1, dq_q4_1},
    {"q8_0", WK_Q8_0, GGMLP_Q8_0, dq_q8_0}, {"q4_K", WK_Q4_K, GGMLP_Q4_K, dq_q4_K},
    {"q6_K", WK_Q6_K, GGMLP_Q6_K, dq_q6_K}, {"f16", WK_F16, GGMLP_F16, dq_f16},
    {"bf16", WK_BF16, GGMLP_BF16, dq_bf16},
    /* by --types only (ggml_type numbers 6 and 13): real models' decode
     * also runs q5_0 and q5_K */
    {"q5_0", WK_Q5_0, 6, dq_q5_0}, {"q5_K", WK_Q5_K, 13, dq_q5_K},
};
#define NTYPES ((int)(sizeof k_types / sizeof *k_types))
#define NTYPES_DEFAULT 7

typedef struct shape {
    int64_t n, k;
} shape;
static const shape k_shapes[] = {{4096, 4096}, {576, 576}, {576, 1536}, {1536, 576}, {49152, 576}};
static const int64_t k_ms[] = {1, 128, 512};
static const int64_t k_check_rows[] = {0, 1, 127, 511};
#define NCHECK 4

/* ------------------------------------------------------------ options */

static struct {
    int quick, no_peer, clock_cpu, no_cold;
    int threads[8], nthreads;
    int types[NTYPES], ntypes;
    shape shapes[16];
    int nshapes;
    int64_t ms[8];
    int nms;
    int rounds;
    double min_time;
    const char *lib_dir;
} opt;

static void usage(FILE *f, const char *argv0) {
    fprintf(f,
            "usage: %s [--quick] [--threads 1,2] [--types q4_0,q4_1,q8_0,q4_K,q6_K,f16,bf16,q5_0,q5_K]\n"
            "       [--shapes NxK,...] [--m 1,128,512] [--rounds N] [--min-time SECONDS]\n"
            "       [--ggml-lib DIR] [--no-peer] [--no-cold] [--clock wall|cpu]\n"
            "  --ggml-lib DIR: the directory with libggml-base.so and libggml-cpu.so\n"
            "  (default $WICK_GGML_LIB_DIR, else <source>/.bench-venv/.../llama_cpp/lib;\n"
            "  scripts/bench-qmatmul.sh --install-peer makes that venv)\n"
            "  --clock cpu: 1-thread rows timed by the calling thread's CPU time (both libraries\n"
            "  compute a 1-thread product on the calling thread), for a loaded machine\n"
            "  --no-cold: no M = 1c rows (decode with the weights cycled through copies beyond the cache)\n",
            argv0);
}

static int parse_ints(const char *s, int64_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0) return -1;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

static bool parse_args(int argc, char **argv) {
    opt.threads[0] = 1, opt.threads[1] = 2, opt.nthreads = 2;
    opt.rounds = 0;
    opt.min_time = 0;
    bool types_set = false, shapes_set = false, ms_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) opt.quick = 1;
        else if (strcmp(a, "--no-peer") == 0) opt.no_peer = 1;
        else if (strcmp(a, "--no-cold") == 0) opt.no_cold = 1;
        else if (strcmp(a, "--clock") == 0 && v && (strcmp(v, "cpu") == 0 || strcmp(v, "wall") == 0))
            opt.clock_cpu = strcmp(v, "cpu") == 0, i++;
        else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(stdout, argv[0]); exit(0); }
        else if (!v) { usage(stderr, argv[0]); return false; }
        else if (strcmp(a, "--threads") == 0) {
            int64_t t[8];
            int n = parse_ints(v, t, 8);
            if (n <= 0) return false;
            for (int j = 0; j < n; j++) {
                if (t[j] > 64) return false;
                opt.threads[j] = (int)t[j];
            }
            opt.nthreads = n, i++;
        } else if (strcmp(a, "--m") == 0) {
            opt.nms = parse_ints(v, opt.ms, 8);
            if (opt.nms <= 0) return false;
            ms_set = true, i++;
        } else if (strcmp(a, "--types") == 0) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            opt.ntypes = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int found = -1;
                for (int j = 0; j < NTYPES; j++)
                    if (strcasecmp(tok, k_types[j].name) == 0) found = j;
                if (found < 0 || opt.ntypes == NTYPES) {
                    fprintf(stderr, "unknown type %s\n", tok);
                    return false;
                }
                opt.types[opt.ntypes++] = found;
            }
            types_set = true, i++;
        } else if (strcmp(a, "--shapes") == 0) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            opt.nshapes = 0;
            for (char *tok = strtok(buf, ","); tok && opt.nshapes < 16; tok = strtok(NULL, ",")) {
                long long n, k;
                if (sscanf(tok, "%lldx%lld", &n, &k) != 2 || n <= 0 || k <= 0 || k % 32) {
                    fprintf(stderr, "bad shape %s (NxK, K a multiple of 32)\n", tok);
                    return false;
                }
                opt.shapes[opt.nshapes++] = (shape){n, k};
            }
            shapes_set = true, i++;
        } else if (strcmp(a, "--rounds") == 0) {
            opt.rounds = atoi(v), i++;
            if (opt.rounds < 1 || opt.rounds > 64) return false;
        } else if (strcmp(a, "--min-time") == 0) {
            opt.min_time = atof(v), i++;
            if (!(opt.min_time > 0)) return false;
        } else if (strcmp(a, "--ggml-lib") == 0) {
            opt.lib_dir = v, i++;
        } else {
            usage(stderr, argv[0]);
            return false;
        }
    }
    if (!types_set) {
        opt.ntypes = opt.quick ? 1 : NTYPES_DEFAULT;
        for (int j = 0; j < opt.ntypes; j++) opt.types[j] = j;
    }
    if (!shapes_set) {
        opt.nshapes = opt.quick ? 1 : (int)(sizeof k_shapes / sizeof *k_shapes);
        for (int j = 0; j < opt.nshapes; j++) opt.shapes[j] = k_shapes[opt.quick ? 1 : j];
    }
    if (!ms_set) {
        opt.nms = opt.quick ? 1 : 3;
        for (int j = 0; j < opt.nms; j++) opt.ms[j] = k_ms[j];
    }
    if (!opt.min_time) opt.min_time = opt.quick ? 0.01 : 0.03;
    return true;
}

/* The peer's directory: --ggml-lib, $WICK_GGML_LIB_DIR, else the project's
 * .bench-venv (any python3.x). */
static const char *default_lib_dir(char *buf, size_t len) {
    if (opt.lib_dir) return opt.lib_dir;
    const char *env = getenv("WICK_GGML_LIB_DIR");
    if (env && env[0]) return env;
#ifdef WICK_SOURCE_DIR
    char pat[1024];
    snprintf(pat, sizeof pat, "%s/.bench-venv/lib/python3*/site-packages/llama_cpp/lib", WICK_SOURCE_DIR);
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        snprintf(buf, len, "%s", g.gl_pathv[0]);
        globfree(&g);
        return buf;
    }
    globfree(&g);
#endif
    (void)buf, (void)len;
    return NULL;
}

/* ------------------------------------------------------------ clocks */

/* Wall time, or with --clock cpu on one thread the calling thread's CPU time
 * (time spent waiting for a core left out). Both libraries compute a
 * 1-thread product on the calling thread, and so does read_bw on 1 thread. */
static double clock_for(int threads) {
    if (opt.clock_cpu && threads == 1) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
    return bench_now();
}

/* ------------------------------------------------------------ read bandwidth */

typedef struct bw_job {
    const uint64_t *p;
    size_t n;    /* u64 words */
    long passes;
    uint64_t sink;
} bw_job;

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static uint64_t sum_u64_avx2(const uint64_t *p, size_t n, long passes) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (long r = 0; r < passes; r++)
        for (size_t i = 0; i < n; i += 16) {
            s0 = _mm256_add_epi64(s0, _mm256_loadu_si256((const __m256i *)(p + i)));
            s1 = _mm256_add_epi64(s1, _mm256_loadu_si256((const __m256i *)(p + i + 4)));
            s2 = _mm256_add_epi64(s2, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
            s3 = _mm256_add_epi64(s3, _mm256_loadu_si256((const __m256i *)(p + i + 12)));
        }
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
    return out[0] + out[1] + out[2] + out[3];
}
#endif

static uint64_t sum_u64(const uint64_t *p, size_t n, long passes) {
    uint64_t s[8] = {0};
    for (long r = 0; r < passes; r++)
        for (size_t i = 0; i < n; i += 8)
            for (int j = 0; j < 8; j++) s[j] += p[i + (size_t)j];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static void *bw_worker(void *q) {
    bw_job *j = q;
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2")) {
        j->sink = sum_u64_avx2(j->p, j->n, j->passes);
        return NULL;
    }
#endif
    j->sink = sum_u64(j->p, j->n, j->passes);
    return NULL;
}

/* Best-of-5 GB/s summing a buffer of `bytes` split over nt threads (small
 * buffers summed repeatedly, >= 64 MiB a round), measured on every call;
 * the highest figure so far for (bytes, nt) is returned (the neighbours'
 * load only ever lowers it). */
static double read_bw(size_t bytes, int nt) {
    static struct { size_t bytes; int nt; double gbs; } memo[128];
    static int nmemo;
    int slot = -1;
    for (int i = 0; i < nmemo; i++)
        if (memo[i].bytes == bytes && memo[i].nt == nt) slot = i;
    if (nt < 1 || nt > 64) return 0;
    size_t chunk = (size_t)nt * 16; /* words: every slice a multiple of 16 */
    size_t n = bytes / sizeof(uint64_t) / chunk * chunk;
    if (n == 0) n = chunk;
    uint64_t *buf = aligned_alloc(64, n * sizeof(uint64_t));
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i;
    size_t per = n / (size_t)nt;
    long passes = (long)((64u << 20) / (n * sizeof(uint64_t))) + 1;
    double best = 1e30;
    uint64_t sink = 0;
    for (int r = 0; r < 6; r++) { /* round 0 warms up */
        pthread_t th[64];
        bw_job jobs[64];
        bool started[64] = {0};
        for (int i = 0; i < nt; i++) jobs[i] = (bw_job){buf + (size_t)i * per, per, passes, 0};
        double t0 = clock_for(nt);
        for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, bw_worker, &jobs[i]) == 0;
        bw_worker(&jobs[0]);
        for (int i = 1; i < nt; i++) {
            if (started[i]) pthread_join(th[i], NULL);
            else bw_worker(&jobs[i]);
        }
        double dt = clock_for(nt) - t0;
        for (int i = 0; i < nt; i++) sink += jobs[i].sink;
        if (r > 0 && dt < best) best = dt;
    }
    free(buf);
    if (sink == 42) puts("");
    double gbs = (double)n * sizeof(uint64_t) * (double)passes / best * 1e-9;
    if (slot < 0 && nmemo < 128) slot = nmemo++, memo[slot].bytes = bytes, memo[slot].nt = nt, memo[slot].gbs = 0;
    if (slot < 0) return gbs;
    if (gbs > memo[slot].gbs) memo[slot].gbs = gbs;
    return memo[slot].gbs;
}

/* The last-level cache: sysfs first (a VM's CPUID may report the host
 * socket's L3: 320 MiB on the development VMs, whose effective L3 is 32 MiB),
 * else sysconf. */
static size_t llc_bytes(void) {
    for (int idx = 3; idx >= 2; idx--) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned long v = 0;
        char unit = 0;
        int got = fscanf(f, "%lu%c", &v, &unit);
        fclose(f);
        if (got >= 1 && v > 0)
            return (size_t)v * (unit == 'K' ? 1024u : unit == 'M' ? 1048576u : 1u);
    }
    long l3 = -1, l2 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return (size_t)(l3 > 0 ? l3 : l2 > 0 ? l2 : 0);
}

static size_t g_llc; /* last-level cache bytes */
static size_t g_big; /* the header's buffer, >= 2x g_llc */

/* ------------------------------------------------------------ data */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float rand_unit(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 40) * (1.0 / 8388608.0) - 1.0);
}

static size_t row_bytes(const qtype *t, int64_t k) {
    const wk_dtype_info *info = wk_dtype_info_of(t->dt);
    return (size_t)(k / info->block_elems) * info->block_bytes;
}

/* ref[c][n] = sum_k x[row c][k] * W[n][k] in f64, W dequantized from wq.
 * False when out of memory (the rows then go unchecked). */
static bool reference(const qtype *t, const void *wq, int64_t n, int64_t k, const float *x, int64_t mmax,
                      double *ref) {
    const wk_dtype_info *info = wk_dtype_info_of(t->dt);
    float *wrow = malloc((size_t)k * sizeof(float));
    if (!wrow) return false;
    size_t rb = row_bytes(t, k);
    for (int64_t r = 0; r < n; r++) {
        const uint8_t *src = (const uint8_t *)wq + (size_t)r * rb;
        for (int64_t b = 0; b < k / info->block_elems; b++)
            t->dq(src + (size_t)b * info->block_bytes, wrow + b * info->block_elems);
        for (int c = 0; c < NCHECK; c++) {
            if (k_check_rows[c] >= mmax) continue;
            const float *xr = x + k_check_rows[c] * k;
            double s = 0;
            for (int64_t j = 0; j < k; j++) s += (double)xr[j] * (double)wrow[j];
            ref[(size_t)c * (size_t)n + (size_t)r] = s;
        }
    }
    free(wrow);
    return true;
}

/* max |y - ref| / max |ref| over the checked rows < m. */
static double rel_err(const float *y, const double *ref, int64_t n, int64_t m) {
    double maxd = 0, maxr = 0;
    for (int c = 0; c < NCHECK; c++) {
        if (k_check_rows[c] >= m) continue;
        const float *yr = y + k_check_rows[c] * n;
        const double *rr = ref + (size_t)c * (size_t)n;
        for (int64_t j = 0; j < n; j++) {
            double d = fabs((double)yr[j] - rr[j]);
            if (!(d <= maxd)) maxd = d; /* NaN propagates */
            if (fabs(rr[j]) > maxr) maxr = fabs(rr[j]);
        }
    }
    return maxr > 0 ? maxd / maxr : maxd;
}

/* ------------------------------------------------------------ timing */

typedef bool (*call_fn)(void *ctx);

/* A side's calls cycle through `copies` copies of the weights: 1 for the
 * hot rows, enough to exceed the last-level cache for the cold ones. */
typedef struct wick_call {
    wk_tensor *x, **w;
    int copies, next;
} wick_call;

static bool call_wick(void *p) {
    wick_call *c = p;
    wk_tensor *w = c->w[c->next];
    c->next = (c->next + 1) % c->copies;
    wk_tensor *y = wk_qmatmul(c->x, w);
    if (!y) return false;
    wk_tensor_free(y);
    return true;
}

typedef struct ggml_call {
    ggml_peer_mm **mm;
    int copies, next, threads;
} ggml_call;

static bool call_ggml(void *p) {
    ggml_call *c = p;
    ggml_peer_mm *mm = c->mm[c->next];
    c->next = (c->next + 1) % c->copies;
    return ggml_peer_mm_run(mm, c->threads);
}

typedef struct side {
    call_fn fn;
    void *ctx;
    bool ok;
    long iters;
    double t[64];
} side;

static void settle(int threads) {
    ggml_peer_pause();
    if (threads > 1) nanosleep(&(struct timespec){0, 2000000}, NULL);
}

static int g_clock_threads;
static double burst_now(void) { return clock_for(g_clock_threads); }

/* One burst: iters calls, seconds per call; negative on failure. */
static double burst(side *s) {
    double t0 = burst_now();
    for (long i = 0; i < s->iters; i++)
        if (!s->fn(s->ctx)) return -1;
    return (burst_now() - t0) / (double)s->iters;
}

/* Alternates the sides' bursts; returns the rounds run. A side that is not
 * ok is skipped; one that fails in a burst becomes not ok. */
static int time_sides(side *sides, int nsides, int threads) {
    g_clock_threads = threads;
    double slowest = 0;
    for (int i = 0; i < nsides; i++) {
        if (!sides[i].ok) continue;
        double t0 = bench_now();
        sides[i].ok = sides[i].fn(sides[i].ctx); /* warm-up, sizes the burst */
        double t1 = bench_now() - t0;
        settle(threads);
        if (t1 > slowest) slowest = t1;
        sides[i].iters = t1 >= opt.min_time ? 1 : (long)ceil(opt.min_time / (t1 > 1e-7 ? t1 : 1e-7));
    }
    int rounds = opt.rounds ? opt.rounds : opt.quick ? 1 : slowest > 0.3 ? 3 : 5;
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < nsides; j++) {
            side *s = &sides[r % 2 ? nsides - 1 - j : j];
            if (!s->ok) continue;
            double t = burst(s);
            settle(threads);
            if (t < 0) s->ok = false;
            else s->t[r] = t;
        }
    return rounds;
}

/* ------------------------------------------------------------ table */

static int g_bad, g_rows, g_wick_na, g_ggml_na, g_both, g_wins, g_decode[2], g_decode_ok[2]; /* [cold] */
static char g_missed[16384], g_decode_missed[2][8192];
static size_t g_missed_len, g_decode_missed_len[2];
static char g_wick_reasons[8][256];
static int g_nreasons;

static void note_wick_failure(const char *why) {
    for (int i = 0; i < g_nreasons; i++)
        if (strcmp(g_wick_reasons[i], why) == 0) return;
    if (g_nreasons < 8) snprintf(g_wick_reasons[g_nreasons++], sizeof g_wick_reasons[0], "%s", why);
    printf("  (wick n/a: %s)\n", why);
}

static void fmt(char *buf, size_t len, const char *f, double v, bool have) {
    if (have) snprintf(buf, len, f, v);
    else snprintf(buf, len, "n/a");
}

static void print_header(void) {
    printf("%-11s %-5s %4s %2s %10s %10s %8s %8s %9s %7s %7s %7s %5s %5s %8s %8s\n", "N x K", "type", "M", "T",
           "wick us", "ggml us", "wick GF", "ggml GF", "wick/ggml", "wick GB", "ggml GB", "rd GB", "%w", "%g",
           "err wick", "err ggml");
}

static void append(char *dst, size_t cap, size_t *len, const char *s) {
    if (*len + strlen(s) + 1 < cap) *len += (size_t)snprintf(dst + *len, cap - *len, "%s", s);
}

/* Runs and prints the rows of one (shape, type, M) for every thread count.
 * cold: M = 1 with the calls cycling through copies of the weights that
 * together exceed the last-level cache twice, so every call reads them from
 * memory, as a decode step reads a model larger than the cache. */
static void run_rows(const shape *sh, const qtype *t, int64_t m, const void *wq, const float *x,
                     const double *ref, bool have_ref, bool cold) {
    int64_t n = sh->n, k = sh->k;
    size_t wbytes = row_bytes(t, k) * (size_t)n;
    double flop = 2.0 * (double)m * (double)n * (double)k;
    size_t wstride = (wbytes + 63) / 64 * 64;
    int copies = 1;
    if (cold) {
        size_t want = 2 * (g_llc ? g_llc : (size_t)32 << 20) / wstride + 2;
        copies = want > 512 ? 512 : (int)want;
    }

    /* wick: the same bytes, zero-copy (the cold copies in one buffer) */
    wk_clear_error();
    int64_t wshape[2] = {n, k}, xshape[2] = {m, k};
    uint8_t *wbuf = copies > 1 ? aligned_alloc(64, wstride * (size_t)copies) : NULL;
    wk_tensor **w = calloc((size_t)copies, sizeof *w);
    bool w_ok = w && (copies == 1 || wbuf);
    for (int i = 0; w_ok && i < copies; i++) {
        const void *src = wq;
        if (wbuf) {
            memcpy(wbuf + (size_t)i * wstride, wq, wbytes);
            src = wbuf + (size_t)i * wstride;
        }
        w[i] = wk_from_blob((void *)src, wbytes, wshape, 2, NULL, t->dt, wk_cpu(), NULL, NULL, WK_BLOB_READ_ONLY);
        w_ok = w[i] != NULL;
    }
    wk_tensor *xt = wk_from_host(x, (size_t)(m * k) * sizeof(float), xshape, 2, WK_F32, wk_cpu());
    char wick_why[256] = "";
    if (!w_ok || !xt)
        snprintf(wick_why, sizeof wick_why, "%s",
                 !w || (copies > 1 && !wbuf) ? "out of memory for the weights' copies" : wk_last_error());

    /* ggml: its own copies of the bytes */
    ggml_peer_mm **mm = calloc((size_t)copies, sizeof *mm);
    bool mm_ok = ggml_peer_loaded() && mm;
    for (int i = 0; mm_ok && i < copies; i++) {
        mm[i] = ggml_peer_mm_new(t->ggml, n, k, m);
        if (mm[i] && ggml_peer_mm_weight_bytes(mm[i]) == wbytes) {
            memcpy(ggml_peer_mm_weights(mm[i]), wq, wbytes);
            memcpy(ggml_peer_mm_x(mm[i]), x, (size_t)(m * k) * sizeof(float));
        } else {
            printf("  ggml: could not set up %s %lldx%lld M=%lld\n", t->name, (long long)n, (long long)k,
                   (long long)m);
            g_bad = 1;
            mm_ok = false;
        }
    }
    float *y = malloc((size_t)(m * n) * sizeof(float));

    for (int ti = 0; ti < opt.nthreads; ti++) {
        int T = opt.threads[ti];
        wk_set_num_threads(T);
        wick_call wc = {xt, w, copies, 0};
        ggml_call gc = {mm, copies, 0, T};
        side sides[2] = {{call_wick, &wc, w_ok && xt, 0, {0}}, {call_ggml, &gc, mm_ok, 0, {0}}};

        /* correctness first (also the warm-up) */
        double err_w = -1, err_g = -1;
        if (sides[0].ok) {
            wk_clear_error();
            wk_tensor *yt = wk_qmatmul(xt, w[0]);
            if (!yt) {
                snprintf(wick_why, sizeof wick_why, "%s", wk_last_error());
                sides[0].ok = false;
            } else {
                if (y && have_ref && wk_to_host_f32(yt, y, (size_t)(m * n)) == WK_OK) err_w = rel_err(y, ref, n, m);
                else if (y && have_ref) snprintf(wick_why, sizeof wick_why, "readback: %s", wk_last_error());
                wk_tensor_free(yt);
            }
        }
        if (sides[1].ok) {
            if (!ggml_peer_mm_run(mm[0], T)) {
                printf("  ggml: graph compute failed\n");
                sides[1].ok = false;
                g_bad = 1;
            } else if (have_ref) {
                err_g = rel_err(ggml_peer_mm_y(mm[0]), ref, n, m);
            }
            settle(T);
        }
        if (!sides[0].ok && wick_why[0]) note_wick_failure(wick_why);

        int rounds = time_sides(sides, 2, T);
        double tw = sides[0].ok ? bench_median(sides[0].t, rounds) : 0;
        double tg = sides[1].ok ? bench_median(sides[1].t, rounds) : 0;

        char c[16][32];
        char name[24];
        snprintf(name, sizeof name, "%lldx%lld", (long long)n, (long long)k);
        fmt(c[0], 32, "%.1f", tw * 1e6, sides[0].ok);
        fmt(c[1], 32, "%.1f", tg * 1e6, sides[1].ok);
        fmt(c[2], 32, "%.1f", flop / tw * 1e-9, sides[0].ok);
        fmt(c[3], 32, "%.1f", flop / tg * 1e-9, sides[1].ok);
        fmt(c[4], 32, "%.2f", tg / tw, sides[0].ok && sides[1].ok);
        /* decode: against a buffer of the weights' size (hot) or one beyond
         * the cache (cold), measured again now at T threads */
        double rd = m == 1 ? read_bw(cold ? g_big : wbytes, T) : 0;
        bool dec = m == 1;
        char mname[16];
        snprintf(mname, sizeof mname, "%lld%s", (long long)m, cold ? "c" : "");
        if (dec) {
            fmt(c[5], 32, "%.1f", (double)wbytes / tw * 1e-9, sides[0].ok);
            fmt(c[6], 32, "%.1f", (double)wbytes / tg * 1e-9, sides[1].ok);
            fmt(c[7], 32, "%.1f", rd, rd > 0);
            fmt(c[8], 32, "%.0f", 100.0 * (double)wbytes / tw * 1e-9 / rd, sides[0].ok && rd > 0);
            fmt(c[9], 32, "%.0f", 100.0 * (double)wbytes / tg * 1e-9 / rd, sides[1].ok && rd > 0);
        } else {
            for (int i = 5; i < 10; i++) snprintf(c[i], 32, "-");
        }
        bool bad_w = err_w > 0.02 || err_w != err_w, bad_g = err_g > 0.02 || err_g != err_g;
        if (err_w >= 0 || err_w != err_w) snprintf(c[10], 32, "%.1e%s", err_w, bad_w ? " BAD" : "");
        else snprintf(c[10], 32, "n/a");
        if (err_g >= 0 || err_g != err_g) snprintf(c[11], 32, "%.1e%s", err_g, bad_g ? " BAD" : "");
        else snprintf(c[11], 32, "n/a");
        if (bad_w || bad_g) g_bad = 1;
        printf("%-11s %-5s %4s %2d %10s %10s %8s %8s %9s %7s %7s %7s %5s %5s %8s %8s\n", name, t->name,
               mname, T, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11]);
        fflush(stdout);

        /* summary bookkeeping */
        g_rows++;
        g_wick_na += !sides[0].ok;
        g_ggml_na += !sides[1].ok;
        char item[96];
        if (sides[0].ok && sides[1].ok) {
            g_both++;
            if (tg / tw >= 1.0) g_wins++;
            else {
                snprintf(item, sizeof item, "%s%s %s M%s T%d %.2f", g_missed_len ? ", " : "", name, t->name,
                         mname, T, tg / tw);
                append(g_missed, sizeof g_missed, &g_missed_len, item);
            }
        }
        if (dec && sides[0].ok && rd > 0) {
            double pct = 100.0 * (double)wbytes / tw * 1e-9 / rd;
            g_decode[cold]++;
            if (pct >= 85.0) g_decode_ok[cold]++;
            else {
                snprintf(item, sizeof item, "%s%s %s T%d %.0f%%", g_decode_missed_len[cold] ? ", " : "", name,
                         t->name, T, pct);
                append(g_decode_missed[cold], sizeof g_decode_missed[cold], &g_decode_missed_len[cold], item);
            }
        }
    }
    free(y);
    for (int i = 0; w && i < copies; i++) wk_tensor_free(w[i]);
    free(w);
    free(wbuf);
    wk_tensor_free(xt);
    for (int i = 0; mm && i < copies; i++) ggml_peer_mm_free(mm[i]);
    free(mm);
}

/* The weights' bytes of type t: ggml's quantizer when loaded, else wick's
 * (wk_to_dtype). NULL (and why) when neither can. */
static void *quantize_weights(const qtype *t, const float *wf, int64_t n, int64_t k, char *why, size_t len) {
    size_t wbytes = row_bytes(t, k) * (size_t)n;
    void *wq = aligned_alloc(64, (wbytes + 63) / 64 * 64);
    if (!wq) { snprintf(why, len, "out of memory"); return NULL; }
    if (ggml_peer_loaded()) {
        size_t got = ggml_peer_quantize(t->ggml, wf, wq, n, k);
        if (got == wbytes && ggml_peer_row_size(t->ggml, k) * (size_t)n == wbytes) return wq;
        snprintf(why, len, "ggml wrote %zu bytes, wick's dtype table says %zu", got, wbytes);
        free(wq);
        return NULL;
    }
    wk_clear_error();
    int64_t s[2] = {n, k};
    wk_tensor *f = wk_from_blob((void *)wf, (size_t)(n * k) * sizeof(float), s, 2, NULL, WK_F32, wk_cpu(), NULL,
                                NULL, WK_BLOB_READ_ONLY);
    wk_tensor *q = wk_to_dtype(f, t->dt);
    wk_status st = q ? wk_to_host(q, wq, wbytes) : wk_last_status();
    if (st != WK_OK) snprintf(why, len, "wick quantize: %s", wk_last_error());
    wk_tensor_free(q);
    wk_tensor_free(f);
    if (st != WK_OK) { free(wq); return NULL; }
    return wq;
}

int main(int argc, char **argv) {
    if (!parse_args(argc, argv)) {
        usage(stderr, argv[0]);
        return 2;
    }
    double t_start = bench_now();
    char dirbuf[1024], why[512] = "";
    const char *dir = opt.no_peer ? NULL : default_lib_dir(dirbuf, sizeof dirbuf);
    bool peer = !opt.no_peer && ggml_peer_open(dir, why, sizeof why);

    printf("bench_qmatmul: y = x . W^T, W N x K quantized, x f32 M x K; wick ISA %s\n", wk_cpu_isa());
    if (peer)
        printf("peer: %s from %s; CPU features %s\n", ggml_peer_version()[0] ? ggml_peer_version() : "ggml", dir,
               ggml_peer_cpu_features()[0] ? ggml_peer_cpu_features() : "(none reported)");
    else if (opt.no_peer)
        printf("peer: ggml n/a (--no-peer)\n");
    else
        printf("peer: ggml n/a (%s)%s\n", why,
               dir ? "" : "; scripts/bench-qmatmul.sh --install-peer, or --ggml-lib DIR / WICK_GGML_LIB_DIR");

    if (opt.clock_cpu) printf("1-thread rows and bandwidth timed by the calling thread's CPU time (--clock cpu)\n");
    size_t llc = g_llc = llc_bytes();
    size_t big = opt.quick ? (size_t)64 << 20 : (size_t)256 << 20;
    while (big < 2 * llc) big *= 2;
    g_big = big;
    printf("read bandwidth (sum of a %.0f MiB buffer, LLC %.0f MiB):", (double)big / (1 << 20),
           (double)llc / (1 << 20));
    bool one_done = false;
    for (int ti = 0; ti < opt.nthreads; ti++) {
        if (opt.threads[ti] == 1) one_done = true;
        printf("%s %.1f GB/s on %d thread%s", ti ? "," : "", read_bw(big, opt.threads[ti]), opt.threads[ti],
               opt.threads[ti] > 1 ? "s" : "");
    }
    if (!one_done) printf(", %.1f GB/s on 1 thread", read_bw(big, 1));
    printf("\n");
    printf("columns: us per call (median of rounds), GF = GFLOP/s (2MNK), wick/ggml = ggml time / wick time\n"
           "(> 1: wick faster); M = 1: GB = weight bytes / time, rd GB = read bandwidth of a buffer of the\n"
           "weights' size, %%w %%g = wick's / ggml's share of it; M = 1c: the same with the calls cycling through\n"
           "copies of the weights > 2x the LLC (read from memory), rd GB = the buffer above; err = max|y - ref| /\n"
           "max|ref|, ref in f64 from the dequantized weights (x unquantized)\n\n");
    print_header();

    int64_t mmax = 1;
    for (int i = 0; i < opt.nms; i++)
        if (opt.ms[i] > mmax) mmax = opt.ms[i];

    for (int si = 0; si < opt.nshapes; si++) {
        const shape *sh = &opt.shapes[si];
        int64_t n = sh->n, k = sh->k;
        float *wf = malloc((size_t)(n * k) * sizeof(float));
        float *x = malloc((size_t)(mmax * k) * sizeof(float));
        double *ref = malloc((size_t)NCHECK * (size_t)n * sizeof(double));
        if (!wf || !x || !ref) {
            fprintf(stderr, "out of memory for %lldx%lld\n", (long long)n, (long long)k);
            return 1;
        }
        for (int64_t i = 0; i < n * k; i++) wf[i] = rand_unit();
        for (int64_t i = 0; i < mmax * k; i++) x[i] = rand_unit();
        for (int ty = 0; ty < opt.ntypes; ty++) {
            const qtype *t = &k_types[opt.types[ty]];
            uint32_t be = wk_dtype_info_of(t->dt)->block_elems;
            if (k % be) {
                /* llama.cpp's quantizer gives such tensors another type (for
                 * SmolLM2's K = 576 its Q4_K_M falls back to q5_0 / q8_0) */
                char name[24];
                snprintf(name, sizeof name, "%lldx%lld", (long long)n, (long long)k);
                printf("%-11s %-5s  -- not a row: K %lld is not a multiple of its %u-element block\n", name, t->name,
                       (long long)k, be);
                continue;
            }
            char qwhy[512] = "";
            void *wq = quantize_weights(t, wf, n, k, qwhy, sizeof qwhy);
            if (!wq) {
                printf("%lldx%lld %s: no weights (%s)\n", (long long)n, (long long)k, t->name, qwhy);
                continue;
            }
            bool have_ref = reference(t, wq, n, k, x, mmax, ref);
            for (int mi = 0; mi < opt.nms; mi++) {
                run_rows(sh, t, opt.ms[mi], wq, x, ref, have_ref, false);
                if (opt.ms[mi] == 1 && !opt.no_cold) run_rows(sh, t, 1, wq, x, ref, have_ref, true);
            }
            free(wq);
        }
        free(wf);
        free(x);
        free(ref);
    }

    printf("\nsummary (goals of issue 11, this run):\n");
    if (g_both)
        printf("- wick >= ggml (wick/ggml >= 1): %d/%d rows%s%s%s\n", g_wins, g_both, g_missed_len ? " (missed: " : "",
               g_missed, g_missed_len ? ")" : "");
    else
        printf("- wick >= ggml: no row had both figures (%d rows: wick n/a on %d, ggml n/a on %d)\n", g_rows, g_wick_na,
               g_ggml_na);
    static const char *const what[2] = {
        "hot (M = 1, the weights read back to back: a buffer of their size)",
        "cold (M = 1c, copies beyond the cache: a buffer beyond it)"};
    for (int c = 0; c < 2; c++) {
        if (g_decode[c])
            printf("- decode %s >= 85%% of the read bandwidth: %d/%d rows%s%s%s\n", what[c], g_decode_ok[c],
                   g_decode[c], g_decode_missed_len[c] ? " (missed: " : "", g_decode_missed[c],
                   g_decode_missed_len[c] ? ")" : "");
        else
            printf("- decode %s >= 85%% of the read bandwidth: no wick figures\n", what[c]);
    }
    for (int i = 0; i < g_nreasons; i++) printf("- wick n/a: %s\n", g_wick_reasons[i]);
    printf("total time %.1f s\n", bench_now() - t_start);
    ggml_peer_close();
    return g_bad ? 1 : 0;
}
