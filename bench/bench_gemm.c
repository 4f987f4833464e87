/*
 * bench/gemm — wk_matmul GFLOP/s beside OpenBLAS and BLIS, measured in one run.
 *
 *   bench_gemm [--quick] [--threads 1,2] [--no-peers] [--python PATH]
 *              [--openblas LIB] [--blis LIB]
 *
 * Rows (A is M x K, B is K x N, both row-major, C = A @ B):
 *  - f32 square 64 .. 2048 (4096 without --quick) and language-model shapes
 *    M in {1, 32, 128, 512} x K 4096 x N 4096, M in {1, 128} x K 576 x N 1536,
 *    each beside OpenBLAS cblas_sgemm and BLIS cblas_sgemm;
 *  - f64 square 64 .. 1024 beside cblas_dgemm of both;
 *  - f16 square 64 .. 1024 (wick only: neither BLAS has an f16 GEMM);
 *  - bf16 square 64 .. 1024 beside PyTorch torch.matmul on bfloat16 tensors
 *    (/usr/bin/python3 through bench/peer.h, torch.set_num_threads).
 * All at each thread count of --threads (default 1 and 2).
 *
 * wick is called as a user calls it: c = wk_matmul(a, b); wk_tensor_free(c)
 * (allocation of C included). The BLAS peers write into an existing C with
 * beta = 0. Timing: one warm-up call, then an iteration count reaching
 * --min-time, then 5 repeats (3 in --quick; 3 of one call when a call takes
 * over 0.3 s, 2 over 1 s); the median per call is reported.
 *
 * The peers are loaded at run time with dlopen (both export cblas_sgemm, so
 * they cannot be linked into one binary); a library that does not load
 * prints n/a. Before dlopen: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
 * unset (they are exported on the dev machines and force OpenBLAS onto its
 * AVX2 kernels at half speed); a child process checks which core OpenBLAS
 * then detects and, when 0.3.21 does not know the CPU (it calls this Xeon
 * "Prescott"), OPENBLAS_CORETYPE=SkylakeX is set instead. BLIS_ARCH_TYPE=0
 * (Debian's BLIS 0.9 picks generic kernels on Zen 5 without it) is tried in a
 * child too and kept only if BLIS does not abort with it. The header prints
 * the cores both report. Thread counts are set with openblas_set_num_threads
 * / bli_thread_set_num_threads per table; with > 1 thread the program sleeps
 * 150 ms after each peer so its spinning workers go idle.
 *
 * FMA peak: 12 independent zmm (ymm without AVX-512) FMA chains per thread on
 * 1 and N pthreads, measured in the same run; "%peak" is wick's share of it
 * (f64 against half the f32 peak).
 *
 * Exit status 0 when every wick call succeeded and matched the peer (or a
 * naive reference when no peer loaded); 1 otherwise.
 */
#include <wick/wick.h>

#include "peer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS_LIST 8

static struct {
    int quick, no_peers;
    const char *python, *openblas_path, *blis_path;
    double min_time;
    int repeats;
    int threads[MAX_THREADS_LIST];
    int nthreads;
} opt;

static int g_failed;

/* ------------------------------------------------------------- peers */

/* CBLAS enums (cblas.h): row-major, no transpose. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
                         double *, int);

typedef struct blas_lib {
    const char *name;
    void *h;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    void (*set_threads_int)(int);      /* openblas_set_num_threads */
    void (*set_threads_dim)(int64_t);  /* bli_thread_set_num_threads (dim_t) */
    char kernel[128];
    char path[256];
} blas_lib;

static blas_lib g_ob = {.name = "OpenBLAS"}, g_blis = {.name = "BLIS"};

/* dlsym into a function pointer without a void* -> function cast. */
static int load_sym(void *h, const char *name, void *fp_out, size_t fp_size) {
    void *p = dlsym(h, name);
    if (!p) return 0;
    memcpy(fp_out, &p, fp_size);
    return 1;
}

static void *open_first(const char *override, const char *const *cands, char *path, size_t plen) {
    if (override) {
        void *h = dlopen(override, RTLD_NOW | RTLD_LOCAL);
        if (h) snprintf(path, plen, "%s", override);
        return h;
    }
    for (int i = 0; cands[i]; i++) {
        void *h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(path, plen, "%s", cands[i]);
            return h;
        }
    }
    return NULL;
}

/* Debian's BLIS 0.9 aborts the whole process on its first call when
 * BLIS_ARCH_TYPE names an arch whose context it did not register (seen on
 * this Xeon VM for every value). So try BLIS_ARCH_TYPE=0 in a child first and
 * keep it only if the child survives a small sgemm; otherwise leave BLIS to
 * its own detection. Returns a note for the header. */
static const char *g_blis_arch_note = "";
static const char *blis_arch_probe(const char *const *cands) {
    const char *cur = getenv("BLIS_ARCH_TYPE");
    if (cur) return "BLIS_ARCH_TYPE from the environment";
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return "BLIS_ARCH_TYPE unset (fork failed)";
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        setenv("BLIS_ARCH_TYPE", "0", 1);
        char path[256];
        void *h = open_first(opt.blis_path, cands, path, sizeof path);
        sgemm_fn f = NULL;
        int (*query_id)(void) = NULL;
        if (!h || !load_sym(h, "cblas_sgemm", &f, sizeof f)) _exit(3);
        if (load_sym(h, "bli_arch_query_id", &query_id, sizeof query_id)) (void)query_id();
        enum { P = 96 };
        static float a[P * P], c[P * P];
        for (int i = 0; i < P * P; i++) a[i] = (float)(i % 7) - 3.0f;
        f(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, P, P, P, 1.0f, a, P, a, P, 0.0f, c, P);
        float want = 0;
        for (int p = 0; p < P; p++) want += a[p] * a[p * P];
        _exit(c[0] == want ? 0 : 4);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        setenv("BLIS_ARCH_TYPE", "0", 1);
        return "BLIS_ARCH_TYPE=0";
    }
    return "BLIS_ARCH_TYPE unset: with BLIS_ARCH_TYPE=0 this BLIS aborts";
}

/* OpenBLAS reads OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE when it loads. Both are
 * unset for it; but OpenBLAS 0.3.21's DYNAMIC_ARCH does not know every CPU
 * (this Emerald Rapids VM is detected as "Prescott", SSE3 kernels at a sixth
 * of the speed). So load it once in a child with both unset and read the core
 * it picks; if it picked none of its AVX-512 cores on an AVX-512 CPU, force
 * OPENBLAS_CORETYPE=SkylakeX (Haswell on an AVX2-only CPU with an older core).
 * Returns a note for the header. */
static const char *g_ob_core_note = "";
static const char *openblas_core_probe(const char *const *cands) {
    int fds[2];
    if (pipe(fds) != 0) return "auto-detected core (pipe failed)";
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return "auto-detected core (fork failed)";
    }
    if (pid == 0) {
        close(fds[0]);
        char path[256];
        void *h = open_first(opt.openblas_path, cands, path, sizeof path);
        char *(*corename)(void) = NULL;
        if (h && load_sym(h, "openblas_get_corename", &corename, sizeof corename)) {
            const char *nm = corename();
            if (nm && write(fds[1], nm, strlen(nm)) < 0) _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    char name[64] = {0};
    ssize_t got = read(fds[0], name, sizeof name - 1);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    if (got <= 0) return "auto-detected core";
    static char note[160];
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    int is512 = strcasestr(name, "skylakex") || strcasestr(name, "cooperlake") || strcasestr(name, "sapphire") ||
                strcasestr(name, "zen") /* Zen 4+ uses the SkylakeX kernels under its own name */;
    int is256 = is512 || strcasestr(name, "haswell") || strcasestr(name, "zen") || strcasestr(name, "excavator");
    if (avx512 && !is512) {
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
        snprintf(note, sizeof note, "OPENBLAS_CORETYPE=SkylakeX forced: auto-detection picks %s here", name);
    } else if (!avx512 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !is256) {
        setenv("OPENBLAS_CORETYPE", "Haswell", 1);
        snprintf(note, sizeof note, "OPENBLAS_CORETYPE=Haswell forced: auto-detection picks %s here", name);
    } else {
        snprintf(note, sizeof note, "auto-detected core");
    }
    return note;
}

static void load_peers(void) {
    /* OpenBLAS reads these when it loads: unset them first. */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");

    static const char *const ob_cands[] = {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                                           "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
                                           "libopenblas.so.0", NULL};
    static const char *const blis_cands[] = {"/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4",
                                             "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4",
                                             "/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4",
                                             "libblis.so.4", NULL};
    g_ob_core_note = openblas_core_probe(ob_cands);
    g_ob.h = open_first(opt.openblas_path, ob_cands, g_ob.path, sizeof g_ob.path);
    if (g_ob.h) {
        load_sym(g_ob.h, "cblas_sgemm", &g_ob.sgemm, sizeof g_ob.sgemm);
        load_sym(g_ob.h, "cblas_dgemm", &g_ob.dgemm, sizeof g_ob.dgemm);
        load_sym(g_ob.h, "openblas_set_num_threads", &g_ob.set_threads_int, sizeof g_ob.set_threads_int);
        char *(*corename)(void) = NULL, *(*config)(void) = NULL;
        load_sym(g_ob.h, "openblas_get_corename", &corename, sizeof corename);
        load_sym(g_ob.h, "openblas_get_config", &config, sizeof config);
        snprintf(g_ob.kernel, sizeof g_ob.kernel, "core %s; %s", corename ? corename() : "?",
                 config ? config() : "?");
    }
    g_blis_arch_note = blis_arch_probe(blis_cands);
    g_blis.h = open_first(opt.blis_path, blis_cands, g_blis.path, sizeof g_blis.path);
    if (g_blis.h) {
        load_sym(g_blis.h, "cblas_sgemm", &g_blis.sgemm, sizeof g_blis.sgemm);
        load_sym(g_blis.h, "cblas_dgemm", &g_blis.dgemm, sizeof g_blis.dgemm);
        load_sym(g_blis.h, "bli_thread_set_num_threads", &g_blis.set_threads_dim, sizeof g_blis.set_threads_dim);
        int (*query_id)(void) = NULL;
        const char *(*arch_string)(int) = NULL, *(*version)(void) = NULL;
        load_sym(g_blis.h, "bli_arch_query_id", &query_id, sizeof query_id);
        load_sym(g_blis.h, "bli_arch_string", &arch_string, sizeof arch_string);
        load_sym(g_blis.h, "bli_info_get_version_str", &version, sizeof version);
        int id = query_id ? query_id() : -1;
        snprintf(g_blis.kernel, sizeof g_blis.kernel, "version %s; arch id %d (%s)", version ? version() : "?", id,
                 arch_string && id >= 0 ? arch_string(id) : "?");
    }
}

static void peers_set_threads(int nt) {
    if (g_ob.set_threads_int) g_ob.set_threads_int(nt);
    if (g_blis.set_threads_dim) g_blis.set_threads_dim(nt);
}

/* ----------------------------------------------------------- FMA peak */

typedef struct {
    long iters;
    double sink;
} fma_job;

#define FMA12(T, FMA)                                                                                              \
    a0 = FMA(a0, m, c); a1 = FMA(a1, m, c); a2 = FMA(a2, m, c); a3 = FMA(a3, m, c);                                \
    a4 = FMA(a4, m, c); a5 = FMA(a5, m, c); a6 = FMA(a6, m, c); a7 = FMA(a7, m, c);                                \
    a8 = FMA(a8, m, c); a9 = FMA(a9, m, c); a10 = FMA(a10, m, c); a11 = FMA(a11, m, c)

__attribute__((target("avx512f,fma"))) static double fma_chains_avx512(long iters) {
    __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
    __m512 a0 = _mm512_set1_ps(0.1f), a1 = _mm512_set1_ps(0.2f), a2 = _mm512_set1_ps(0.3f),
           a3 = _mm512_set1_ps(0.4f), a4 = _mm512_set1_ps(0.5f), a5 = _mm512_set1_ps(0.6f),
           a6 = _mm512_set1_ps(0.7f), a7 = _mm512_set1_ps(0.8f), a8 = _mm512_set1_ps(0.9f),
           a9 = _mm512_set1_ps(1.1f), a10 = _mm512_set1_ps(1.2f), a11 = _mm512_set1_ps(1.3f);
    for (long i = 0; i < iters; i++) { FMA12(__m512, _mm512_fmadd_ps); }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    float out[16];
    _mm512_storeu_ps(out, s);
    double t = 0;
    for (int i = 0; i < 16; i++) t += out[i];
    return t;
}

__attribute__((target("avx2,fma"))) static double fma_chains_avx2(long iters) {
    __m256 m = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
    __m256 a0 = _mm256_set1_ps(0.1f), a1 = _mm256_set1_ps(0.2f), a2 = _mm256_set1_ps(0.3f),
           a3 = _mm256_set1_ps(0.4f), a4 = _mm256_set1_ps(0.5f), a5 = _mm256_set1_ps(0.6f),
           a6 = _mm256_set1_ps(0.7f), a7 = _mm256_set1_ps(0.8f), a8 = _mm256_set1_ps(0.9f),
           a9 = _mm256_set1_ps(1.1f), a10 = _mm256_set1_ps(1.2f), a11 = _mm256_set1_ps(1.3f);
    for (long i = 0; i < iters; i++) { FMA12(__m256, _mm256_fmadd_ps); }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    double t = 0;
    for (int i = 0; i < 8; i++) t += out[i];
    return t;
}

static int g_fma_lanes; /* 16 (zmm), 8 (ymm), 0 (no FMA: no peak) */

static void *fma_worker(void *p) {
    fma_job *j = p;
    j->sink = g_fma_lanes == 16 ? fma_chains_avx512(j->iters) : fma_chains_avx2(j->iters);
    return NULL;
}

/* Best-of-7 f32 GFLOP/s of nt threads each running the 12-chain loop. */
static double fma_peak(int nt, long iters) {
    if (!g_fma_lanes || nt < 1 || nt > 64) return 0.0;
    double best = 1e30, sink = 0;
    for (int r = 0; r < 8; r++) { /* first round: warm-up (clock ramp) */
        pthread_t th[64];
        fma_job jobs[64];
        int started[64] = {0};
        double t0 = bench_now();
        for (int i = 0; i < nt; i++) jobs[i] = (fma_job){iters, 0};
        for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, fma_worker, &jobs[i]) == 0;
        fma_worker(&jobs[0]);
        for (int i = 1; i < nt; i++) {
            if (started[i]) pthread_join(th[i], NULL);
            else fma_worker(&jobs[i]);
        }
        double dt = bench_now() - t0;
        for (int i = 0; i < nt; i++) sink += jobs[i].sink;
        if (r > 0 && dt < best) best = dt;
    }
    if (sink == 12345.678) puts(""); /* keep the results alive */
    return (double)nt * (double)iters * 12.0 * (double)g_fma_lanes * 2.0 / best * 1e-9;
}

/* ------------------------------------------------------------- timing */

typedef int (*call_fn)(void *ctx); /* 0 on success */

/* Median seconds per call, negative on failure. */
static double time_call(call_fn fn, void *ctx) {
    double t0 = bench_now();
    if (fn(ctx)) return -1.0;
    double t1 = bench_now() - t0;
    int reps = opt.repeats;
    long iters = 1;
    if (t1 > 1.0) reps = 2;
    else if (t1 > 0.3) reps = 3;
    else {
        t0 = bench_now(); /* a second warm-up: the first touched fresh pages */
        if (fn(ctx)) return -1.0;
        t1 = bench_now() - t0;
        if (t1 < opt.min_time) iters = (long)(opt.min_time / (t1 > 1e-9 ? t1 : 1e-9)) + 1;
    }
    double times[16];
    if (reps > 16) reps = 16;
    for (int r = 0; r < reps; r++) {
        t0 = bench_now();
        for (long i = 0; i < iters; i++)
            if (fn(ctx)) return -1.0;
        times[r] = (bench_now() - t0) / (double)iters;
    }
    return bench_median(times, reps);
}

/* --------------------------------------------------------------- rows */

typedef struct {
    wk_dtype dt;
    int m, k, n;
    /* wick operands */
    wk_tensor *a, *b;
    /* host operands for the peers */
    float *af, *bf, *cf;
    double *ad, *bd, *cd;
    const blas_lib *lib; /* peer to call, NULL = wick */
} gemm_ctx;

static int call_wick(void *p) {
    gemm_ctx *c = p;
    wk_tensor *y = wk_matmul(c->a, c->b);
    if (!y) return 1;
    wk_tensor_free(y);
    return 0;
}

static int call_peer(void *p) {
    gemm_ctx *c = p;
    if (c->dt == WK_F64)
        c->lib->dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, c->m, c->n, c->k, 1.0, c->ad, c->k, c->bd,
                      c->n, 0.0, c->cd, c->n);
    else
        c->lib->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, c->m, c->n, c->k, 1.0f, c->af, c->k, c->bf,
                      c->n, 0.0f, c->cf, c->n);
    return 0;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static void report_null(const char *what) {
    fprintf(stderr, "bench_gemm: %s failed: %s (%s)\n", what, wk_last_error(), wk_status_name(wk_last_status()));
    wk_clear_error();
    g_failed = 1;
}

/* Sets up host and wick operands for dtype dt (f16/bf16 are rounded from
 * the f32 values). Returns 0 on success. */
static int ctx_init(gemm_ctx *c, wk_dtype dt, int m, int k, int n) {
    memset(c, 0, sizeof *c);
    c->dt = dt;
    c->m = m, c->k = k, c->n = n;
    size_t na = (size_t)m * (size_t)k, nb = (size_t)k * (size_t)n, nc = (size_t)m * (size_t)n;
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    if (dt == WK_F64) {
        c->ad = malloc(na * sizeof(double));
        c->bd = malloc(nb * sizeof(double));
        c->cd = calloc(nc, sizeof(double));
        if (!c->ad || !c->bd || !c->cd) return 1;
        for (size_t i = 0; i < na; i++) c->ad[i] = urand();
        for (size_t i = 0; i < nb; i++) c->bd[i] = urand();
        c->a = wk_from_host(c->ad, na * sizeof(double), sa, 2, WK_F64, wk_cpu());
        c->b = wk_from_host(c->bd, nb * sizeof(double), sb, 2, WK_F64, wk_cpu());
    } else {
        c->af = malloc(na * sizeof(float));
        c->bf = malloc(nb * sizeof(float));
        c->cf = calloc(nc, sizeof(float));
        if (!c->af || !c->bf || !c->cf) return 1;
        for (size_t i = 0; i < na; i++) c->af[i] = (float)urand();
        for (size_t i = 0; i < nb; i++) c->bf[i] = (float)urand();
        wk_tensor *a32 = wk_from_host(c->af, na * sizeof(float), sa, 2, WK_F32, wk_cpu());
        wk_tensor *b32 = wk_from_host(c->bf, nb * sizeof(float), sb, 2, WK_F32, wk_cpu());
        if (dt == WK_F32) {
            c->a = a32, c->b = b32;
        } else {
            c->a = wk_to_dtype(a32, dt);
            c->b = wk_to_dtype(b32, dt);
            wk_tensor_free(a32);
            wk_tensor_free(b32);
        }
    }
    if (!c->a || !c->b) {
        report_null("creating operands");
        return 1;
    }
    return 0;
}

static void ctx_free(gemm_ctx *c) {
    wk_tensor_free(c->a);
    wk_tensor_free(c->b);
    free(c->af), free(c->bf), free(c->cf);
    free(c->ad), free(c->bd), free(c->cd);
}

/* max |wick - ref| where ref is the peer's C just computed (or a naive
 * reference in double when no peer ran). Negative on failure. */
static double check_wick(gemm_ctx *c, int have_peer_c) {
    size_t nc = (size_t)c->m * (size_t)c->n;
    wk_tensor *y = wk_matmul(c->a, c->b);
    if (!y) {
        report_null("wk_matmul");
        return -1;
    }
    double *got = malloc(nc * sizeof(double)), *ref = malloc(nc * sizeof(double));
    double diff = -1;
    if (got && ref && wk_to_host_f64(y, got, nc) == WK_OK) {
        if (have_peer_c) {
            for (size_t i = 0; i < nc; i++) ref[i] = c->dt == WK_F64 ? c->cd[i] : (double)c->cf[i];
        } else {
            for (int i = 0; i < c->m; i++)
                for (int j = 0; j < c->n; j++) {
                    double s = 0;
                    for (int p = 0; p < c->k; p++)
                        s += c->dt == WK_F64 ? c->ad[(size_t)i * c->k + p] * c->bd[(size_t)p * c->n + j]
                                             : (double)c->af[(size_t)i * c->k + p] * c->bf[(size_t)p * c->n + j];
                    ref[(size_t)i * c->n + j] = s;
                }
        }
        diff = 0;
        for (size_t i = 0; i < nc; i++) {
            double d = fabs(got[i] - ref[i]);
            if (d != d) { diff = INFINITY; break; } /* NaN: fail */
            if (d > diff) diff = d;
        }
    }
    free(got);
    free(ref);
    wk_tensor_free(y);
    return diff;
}

typedef struct {
    int m, k, n;
    const char *label;
} shape;

static double gflops(const shape *s, double t) {
    return t > 0 ? 2.0 * s->m * (double)s->k * s->n / t * 1e-9 : 0.0;
}

static void fmt_gf(char *buf, size_t len, const shape *s, double t) {
    if (t > 0) snprintf(buf, len, "%.1f", gflops(s, t));
    else snprintf(buf, len, "n/a");
}

static void fmt_ratio(char *buf, size_t len, double t_wick, double t_peer) {
    if (t_wick > 0 && t_peer > 0) snprintf(buf, len, "%.2f", t_peer / t_wick);
    else snprintf(buf, len, "n/a");
}

/* Tolerance for the check: |diff| <= tol * sqrt(k) (inputs in [-1, 1)). */
static double tol_for(wk_dtype dt) { return dt == WK_F64 ? 1e-12 : 1e-4; }

/* With > 1 thread, the peers' idle workers spin after a call (OpenBLAS's
 * for ~2^28 cycles, libgomp's for a while): sleep that out, so they do not
 * steal a core from whatever is timed next. */
static void settle(int nt) {
    if (nt > 1) {
        struct timespec ts = {0, 150 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* f32 / f64 table: wick, OpenBLAS, BLIS. */
static void blas_table(wk_dtype dt, const shape *shapes, int nshapes, int nt, double peak, int check) {
    printf("\n%s, %d thread%s (peak %.0f GFLOP/s)\n", wk_dtype_name(dt), nt, nt > 1 ? "s" : "", peak);
    printf("| %-22s | %8s | %6s | %9s | %9s | %8s | %8s |%s\n", "M x K x N", "wick", "%peak", "OpenBLAS", "BLIS",
           "wick/OB", "wick/BLIS", check ? " max|wick-OB| |" : "");
    printf("|------------------------|----------|--------|-----------|-----------|----------|-----------|%s\n",
           check ? "---------------|" : "");
    for (int i = 0; i < nshapes; i++) {
        const shape *s = &shapes[i];
        gemm_ctx c;
        if (ctx_init(&c, dt, s->m, s->k, s->n)) {
            g_failed = 1;
            ctx_free(&c);
            continue;
        }
        double tw = time_call(call_wick, &c);
        if (tw < 0) report_null("wk_matmul");
        double to = -1, tb = -1;
        if (!opt.no_peers) {
            if (g_blis.h && (dt == WK_F64 ? g_blis.dgemm != NULL : g_blis.sgemm != NULL)) {
                c.lib = &g_blis;
                tb = time_call(call_peer, &c);
                settle(nt);
            }
            if (g_ob.h && (dt == WK_F64 ? g_ob.dgemm != NULL : g_ob.sgemm != NULL)) {
                c.lib = &g_ob; /* last, so its C is the reference below */
                to = time_call(call_peer, &c);
                settle(nt);
            }
        }
        char label[64], gw[32], go[32], gb[32], ro[32], rb[32], pk[32], ck[48] = "";
        if (s->label) snprintf(label, sizeof label, "%s", s->label);
        else snprintf(label, sizeof label, "%d x %d x %d", s->m, s->k, s->n);
        fmt_gf(gw, sizeof gw, s, tw);
        fmt_gf(go, sizeof go, s, to);
        fmt_gf(gb, sizeof gb, s, tb);
        fmt_ratio(ro, sizeof ro, tw, to);
        fmt_ratio(rb, sizeof rb, tw, tb);
        double pk_ref = dt == WK_F64 ? peak / 2 : peak;
        if (tw > 0 && pk_ref > 0) snprintf(pk, sizeof pk, "%.0f%%", 100.0 * gflops(s, tw) / pk_ref);
        else snprintf(pk, sizeof pk, "n/a");
        if (check) {
            int naive_ok = (double)s->m * s->k * s->n <= 3e8;
            if (to > 0 || naive_ok) {
                double d = check_wick(&c, to > 0);
                double tol = tol_for(dt) * sqrt((double)s->k);
                if (d < 0 || !(d <= tol)) g_failed = 1;
                snprintf(ck, sizeof ck, " %9.2e%s%s |", d, to > 0 ? "" : " (naive)", d >= 0 && d <= tol ? "" : " BAD");
            } else {
                snprintf(ck, sizeof ck, " %13s |", "n/a");
            }
        }
        printf("| %-22s | %8s | %6s | %9s | %9s | %8s | %9s |%s\n", label, gw, pk, go, gb, ro, rb, ck);
        fflush(stdout);
        ctx_free(&c);
    }
}

/* f16 / bf16 table: wick (and torch for bf16). torch_t[i] <= 0 = n/a. */
static void half_table(wk_dtype dt, const int *sizes, int nsizes, int nt, double peak, const double *torch_t) {
    printf("\n%s, %d thread%s (%%peak of the f32 FMA peak %.0f GFLOP/s)\n", wk_dtype_name(dt), nt, nt > 1 ? "s" : "",
           peak);
    if (torch_t) {
        printf("| %-22s | %8s | %6s | %9s | %10s |\n", "M x K x N", "wick", "%peak", "torch", "wick/torch");
        printf("|------------------------|----------|--------|-----------|------------|\n");
    } else {
        printf("| %-22s | %8s | %6s |\n", "M x K x N", "wick", "%peak");
        printf("|------------------------|----------|--------|\n");
    }
    for (int i = 0; i < nsizes; i++) {
        shape s = {sizes[i], sizes[i], sizes[i], NULL};
        gemm_ctx c;
        if (ctx_init(&c, dt, s.m, s.k, s.n)) {
            g_failed = 1;
            ctx_free(&c);
            continue;
        }
        double tw = time_call(call_wick, &c);
        if (tw < 0) report_null("wk_matmul");
        char label[64], gw[32], pk[32], gt[32], rt[32];
        snprintf(label, sizeof label, "%d x %d x %d", s.m, s.k, s.n);
        fmt_gf(gw, sizeof gw, &s, tw);
        if (tw > 0 && peak > 0) snprintf(pk, sizeof pk, "%.0f%%", 100.0 * gflops(&s, tw) / peak);
        else snprintf(pk, sizeof pk, "n/a");
        if (torch_t) {
            fmt_gf(gt, sizeof gt, &s, torch_t[i]);
            fmt_ratio(rt, sizeof rt, tw, torch_t[i]);
            printf("| %-22s | %8s | %6s | %9s | %10s |\n", label, gw, pk, gt, rt);
        } else {
            printf("| %-22s | %8s | %6s |\n", label, gw, pk);
        }
        fflush(stdout);
        ctx_free(&c);
    }
}

/* ------------------------------------------------------------- torch */

static const char *k_torch_peer =
    "import sys, time, statistics, torch\n"
    "nt, mt, reps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(nt)\n"
    "torch.manual_seed(0)\n"
    "for spec in sys.argv[4:]:\n"
    "    n = int(spec)\n"
    "    a = (torch.rand(n, n) * 2 - 1).to(torch.bfloat16)\n"
    "    b = (torch.rand(n, n) * 2 - 1).to(torch.bfloat16)\n"
    "    with torch.no_grad():\n"
    "        t0 = time.perf_counter(); torch.matmul(a, b); t1 = time.perf_counter() - t0\n"
    "        it = 1\n"
    "        t0 = time.perf_counter(); torch.matmul(a, b); t1 = time.perf_counter() - t0\n"
    "        if t1 < mt: it = int(mt / max(t1, 1e-9)) + 1\n"
    "        ts = []\n"
    "        for _ in range(reps):\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(it): torch.matmul(a, b)\n"
    "            ts.append((time.perf_counter() - t0) / it)\n"
    "    print(n, statistics.median(ts), flush=True)\n";

static void time_torch(int nt, const int *sizes, int nsizes, double *out) {
    for (int i = 0; i < nsizes; i++) out[i] = -1;
    if (opt.no_peers) return;
    char args[512];
    int len = snprintf(args, sizeof args, "%d %g %d", nt, opt.min_time, opt.repeats);
    for (int i = 0; i < nsizes && len > 0 && len < (int)sizeof args - 16; i++)
        len += snprintf(args + len, sizeof args - (size_t)len, " %d", sizes[i]);
    bench_peer p;
    if (bench_peer_start(&p, opt.python, k_torch_peer, NULL, args)) {
        char line[256];
        while (fgets(line, sizeof line, p.out)) {
            int n;
            double t;
            if (sscanf(line, "%d %lf", &n, &t) != 2) continue;
            for (int i = 0; i < nsizes; i++)
                if (sizes[i] == n) out[i] = t;
        }
    }
    bench_peer_finish(&p);
}

/* -------------------------------------------------------------- main */

static int parse_threads(char *s) {
    opt.nthreads = 0;
    while (*s && opt.nthreads < MAX_THREADS_LIST) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        if (v >= 1 && v <= 64) opt.threads[opt.nthreads++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return opt.nthreads > 0;
}

int main(int argc, char **argv) {
    opt.python = "/usr/bin/python3";
    opt.threads[0] = 1, opt.threads[1] = 2, opt.nthreads = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) opt.quick = 1;
        else if (strcmp(argv[i], "--no-peers") == 0) opt.no_peers = 1;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) opt.python = argv[++i];
        else if (strcmp(argv[i], "--openblas") == 0 && i + 1 < argc) opt.openblas_path = argv[++i];
        else if (strcmp(argv[i], "--blis") == 0 && i + 1 < argc) opt.blis_path = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if (!parse_threads(argv[++i])) {
                fprintf(stderr, "bad --threads\n");
                return 2;
            }
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--threads 1,2] [--no-peers] [--python PATH] [--openblas LIB] [--blis LIB]\n",
                    argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    opt.min_time = opt.quick ? 0.01 : 0.05;
    opt.repeats = opt.quick ? 3 : 5;

    if (!opt.no_peers) load_peers();

    __builtin_cpu_init();
    g_fma_lanes = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("fma") ? 8 : 0;

    static const int sq_full[] = {64, 128, 256, 512, 1024, 2048, 4096};
    static const int sq_quick[] = {64, 128, 256};
    const int *sq = opt.quick ? sq_quick : sq_full;
    int nsq_f32 = opt.quick ? 3 : 7;
    int nsq_small = opt.quick ? 3 : 5; /* f64/f16/bf16: up to 1024 */

    shape f32_shapes[16];
    int nf32 = 0;
    for (int i = 0; i < nsq_f32; i++) f32_shapes[nf32++] = (shape){sq[i], sq[i], sq[i], NULL};
    if (opt.quick) {
        f32_shapes[nf32++] = (shape){1, 512, 512, "LM 1 x 512 x 512"};
    } else {
        static const int lm_m[] = {1, 32, 128, 512};
        static const char *const lm_labels[] = {"LM 1 x 4096 x 4096", "LM 32 x 4096 x 4096", "LM 128 x 4096 x 4096",
                                                "LM 512 x 4096 x 4096"};
        for (int i = 0; i < 4; i++) f32_shapes[nf32++] = (shape){lm_m[i], 4096, 4096, lm_labels[i]};
        f32_shapes[nf32++] = (shape){1, 576, 1536, "LM 1 x 576 x 1536"};
        f32_shapes[nf32++] = (shape){128, 576, 1536, "LM 128 x 576 x 1536"};
    }
    shape small_shapes[8];
    for (int i = 0; i < nsq_small; i++) small_shapes[i] = (shape){sq[i], sq[i], sq[i], NULL};

    printf("bench_gemm: C = A @ B, row-major, A M x K, B K x N; GFLOP/s = 2MKN / median time; wick ISA %s\n",
           wk_cpu_isa());
    printf("wick: c = wk_matmul(a, b) + free (allocation included); peers: cblas_?gemm into an existing C, beta 0\n");
    if (opt.no_peers) {
        printf("peers: off (--no-peers)\n");
    } else {
        if (g_ob.h) printf("OpenBLAS: %s: %s (OPENBLAS_L2_SIZE unset; %s)\n", g_ob.path, g_ob.kernel, g_ob_core_note);
        else printf("OpenBLAS: n/a (could not dlopen: %s)\n", dlerror());
        if (g_blis.h) printf("BLIS: %s: %s (%s)\n", g_blis.path, g_blis.kernel, g_blis_arch_note);
        else printf("BLIS: n/a (could not dlopen)\n");
    }

    long fma_iters = opt.quick ? 2000000 : 10000000;
    int max_nt = 1;
    for (int i = 0; i < opt.nthreads; i++)
        if (opt.threads[i] > max_nt) max_nt = opt.threads[i];
    double peak1 = fma_peak(1, fma_iters);
    printf("FMA peak (12 independent %s FMA chains per thread): %.1f GFLOP/s f32 on 1 thread", 
           g_fma_lanes == 16 ? "zmm" : g_fma_lanes == 8 ? "ymm" : "(none)", peak1);
    double peaks[MAX_THREADS_LIST];
    for (int t = 0; t < opt.nthreads; t++) {
        peaks[t] = opt.threads[t] == 1 ? peak1 : fma_peak(opt.threads[t], fma_iters);
        if (opt.threads[t] != 1) printf(", %.1f on %d", peaks[t], opt.threads[t]);
    }
    printf("\nratios wick/peer = peer time / wick time: > 1 means wick is faster. %%peak: wick's GFLOP/s / FMA peak\n");
    printf("(f64 against half the f32 peak). max|wick-OB|: wick vs OpenBLAS's C (naive double reference if n/a).\n");
    fflush(stdout);

    for (int t = 0; t < opt.nthreads; t++) {
        int nt = opt.threads[t];
        wk_set_num_threads(nt);
        if (!opt.no_peers) peers_set_threads(nt);
        printf("\n=== threads %d ===\n", nt);
        blas_table(WK_F32, f32_shapes, nf32, nt, peaks[t], t == 0);
        blas_table(WK_F64, small_shapes, nsq_small, nt, peaks[t], t == 0);
        half_table(WK_F16, sq, nsq_small, nt, peaks[t], NULL);
        double torch_t[8];
        time_torch(nt, sq, nsq_small, torch_t);
        half_table(WK_BF16, sq, nsq_small, nt, peaks[t], torch_t);
    }
    printf("\nwick result check: %s\n", g_failed ? "FAILED" : "ok");
    return g_failed ? 1 : 0;
}
