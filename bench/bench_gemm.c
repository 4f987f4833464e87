/*
 * bench/gemm — wk_matmul GFLOP/s beside OpenBLAS, BLIS and PyTorch, measured
 * in one run, with the machine's FMA peak and read bandwidth.
 *
 *   bench_gemm [--quick] [--threads 1,2] [--dtypes f32,f64,f16,bf16]
 *              [--sizes 64,128,...] [--no-lm] [--no-peers] [--python PATH]
 *              [--openblas LIB] [--blis LIB] [--clock wall|cpu]
 *
 * Rows (A is M x K, B is K x N, both row-major, C = A @ B): square sizes
 * 64 .. 4096 (64, 128, 256 with --quick; --sizes overrides) and the
 * language-model shapes M in {1, 32, 128, 512} x K 4096 x N 4096 and
 * M in {1, 128} x K 576 x N 1536 (--quick: 1 x 512 x 512; --no-lm: none):
 *  - f32 at every shape beside OpenBLAS cblas_sgemm and BLIS cblas_sgemm;
 *  - f64 at the square sizes beside cblas_dgemm of both;
 *  - f16 at every shape (wick only: neither BLAS has an f16 GEMM);
 *  - bf16 at every shape beside PyTorch torch.matmul on bfloat16 tensors
 *    (/usr/bin/python3 through bench/peer.h, torch.set_num_threads);
 *  - f16/bf16 rows also give wick's f32 time / its f16 (bf16) time for the
 *    same shape and thread count (the f32 table's measurement; measured on
 *    the side when --dtypes leaves f32 out);
 *  - a matrix-vector block (the M = 1 rows of every dtype): GB/s of B read
 *    (K*N*sizeof(dtype) / time) beside the read bandwidth of a buffer of the
 *    same size, measured in this program on the same thread count;
 *  - a summary: each goal of the GEMM issue and how many rows met it.
 * All at each thread count of --threads (default 1 and 2).
 *
 * wick is called as a user calls it: c = wk_matmul(a, b); wk_tensor_free(c)
 * (allocation of C included). The BLAS peers write into an existing C with
 * beta = 0. Timing: one warm-up call, then an iteration count reaching
 * --min-time, then 5 repeats (3 in --quick; 3 of one call when a call takes
 * over 0.3 s, 2 over 1 s); the median per call is reported. torch is timed
 * the same way inside its script. --clock cpu times the 1-thread tables'
 * wick and BLAS rows by the calling thread's CPU time (on a shared machine
 * it leaves out the time spent waiting for a core; the header says so).
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
 * 150 ms after each timed row (wick's and each peer's) so spinning workers
 * go idle before the next one is timed.
 * With WICK_ISA=avx2 the peers are lowered to their AVX2 kernels as well
 * (OPENBLAS_CORETYPE=Haswell; BLIS left to its own choice if that is one of
 * its zen2, zen3, haswell or zen contexts, else BLIS_ARCH_TYPE = the id of
 * the first of them a child survives a small sgemm with),
 * so an AVX-512 machine gives the comparison of an AVX2-only CPU.
 *
 * FMA peak: 12 independent zmm (ymm without AVX-512) FMA chains per thread on
 * 1 and N pthreads, best of 7, measured at the start and again before and
 * after each thread count's tables (the highest kept; the summary uses the
 * final figure); "%peak" is wick's share of it
 * (f64 against half the f32 peak, f16/bf16 against the f32 peak).
 * Read bandwidth: the sum of a float buffer (4 zmm/ymm accumulators) split
 * over N pthreads, best of 7, small buffers summed repeatedly (>= 64 MiB a
 * round).
 *
 * Exit status 0 when every wick call succeeded and matched the peer (or a
 * naive reference when no peer loaded); 1 otherwise. Goals missed do not
 * change the exit status.
 */
#include <wick/wick.h>

#include "peer.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
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
    int clock_cpu;       /* --clock cpu: 1-thread rows timed by the thread's CPU time */
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

/* WICK_ISA=avx2: the peers run their AVX2 kernels too (as bench_ops lowers
 * PyTorch), so the tables compare like with like on an AVX-512 machine and
 * stand for an AVX2-only CPU: OpenBLAS as OPENBLAS_CORETYPE=Haswell (what
 * it runs on Zen 1-3), BLIS on its zen2 (else haswell) context. */
static int peers_avx2(void) {
    const char *isa = getenv("WICK_ISA");
    return isa && strcasecmp(isa, "avx2") == 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* In a child: the id of the BLIS context called name (bli_arch_string), or
 * with name NULL the one BLIS picks itself (bli_arch_query_id); -1 if none. */
static int blis_arch_id(const char *const *cands, const char *name) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        char path[256];
        void *h = open_first(opt.blis_path, cands, path, sizeof path);
        const char *(*arch_string)(int) = NULL;
        int (*query_id)(void) = NULL;
        int found = -1;
        if (!name) {
            if (h && load_sym(h, "bli_arch_query_id", &query_id, sizeof query_id)) found = query_id();
        } else if (h && load_sym(h, "bli_arch_string", &arch_string, sizeof arch_string))
            for (int i = 0; i < 24 && found < 0; i++) { /* a bound: the count is not exported */
                const char *nm = arch_string(i);
                if (!nm) break;
                if (strcmp(nm, name) == 0) found = i;
            }
        if (write(fds[1], &found, sizeof found) < 0) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    int id = -1;
    if (read(fds[0], &id, sizeof id) != (ssize_t)sizeof id) id = -1;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return id;
}

/* Whether BLIS survives a small sgemm with BLIS_ARCH_TYPE=value (a child). */
static int blis_arch_ok(const char *const *cands, const char *value) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        setenv("BLIS_ARCH_TYPE", value, 1);
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
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static const char *blis_arch_probe(const char *const *cands) {
    const char *cur = getenv("BLIS_ARCH_TYPE");
    if (cur) return "BLIS_ARCH_TYPE from the environment";
    if (peers_avx2()) {
        /* BLIS's AVX2 contexts, the Zen 2 one first (Debian's BLIS 0.9
         * registers only some of them: the others abort) */
        static const char *const avx2_archs[] = {"zen2", "zen3", "haswell", "zen"};
        static char note[128];
        /* BLIS 0.9 aborts with BLIS_ARCH_TYPE set to most ids, even the one
         * it detects itself (zen3 on Zen 4): leave it unset if that one is
         * an AVX2 context already */
        int own = blis_arch_id(cands, NULL);
        for (size_t i = 0; own >= 0 && i < sizeof avx2_archs / sizeof avx2_archs[0]; i++)
            if (blis_arch_id(cands, avx2_archs[i]) == own) {
                snprintf(note, sizeof note, "BLIS_ARCH_TYPE unset: it picks %s, an AVX2 context, as WICK_ISA=avx2",
                         avx2_archs[i]);
                return note;
            }
        for (size_t i = 0; i < sizeof avx2_archs / sizeof avx2_archs[0]; i++) {
            int id = blis_arch_id(cands, avx2_archs[i]);
            char value[16];
            snprintf(value, sizeof value, "%d", id);
            if (id >= 0 && blis_arch_ok(cands, value)) {
                setenv("BLIS_ARCH_TYPE", value, 1);
                snprintf(note, sizeof note, "BLIS_ARCH_TYPE=%s (%s): an AVX2 context, as WICK_ISA=avx2", value,
                         avx2_archs[i]);
                return note;
            }
        }
        return "WICK_ISA=avx2 but no AVX2 context of this BLIS runs: BLIS_ARCH_TYPE unset";
    }
    if (blis_arch_ok(cands, "0")) {
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
    if (peers_avx2()) {
        setenv("OPENBLAS_CORETYPE", "Haswell", 1);
        return "OPENBLAS_CORETYPE=Haswell: its AVX2 kernels, as WICK_ISA=avx2";
    }
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
static int g_cpu_clock_now;
static double row_now(void);

static double fma_peak(int nt, long iters) {
    if (!g_fma_lanes || nt < 1 || nt > 64) return 0.0;
    /* on one thread with --clock cpu, in CPU time like the rows it rates */
    int cpu = opt.clock_cpu && nt == 1, was = g_cpu_clock_now;
    g_cpu_clock_now = cpu;
    double best = 1e30, sink = 0;
    for (int r = 0; r < 8; r++) { /* first round: warm-up (clock ramp) */
        pthread_t th[64];
        fma_job jobs[64];
        int started[64] = {0};
        double t0 = row_now();
        for (int i = 0; i < nt; i++) jobs[i] = (fma_job){iters, 0};
        for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, fma_worker, &jobs[i]) == 0;
        fma_worker(&jobs[0]);
        for (int i = 1; i < nt; i++) {
            if (started[i]) pthread_join(th[i], NULL);
            else fma_worker(&jobs[i]);
        }
        double dt = row_now() - t0;
        for (int i = 0; i < nt; i++) sink += jobs[i].sink;
        if (r > 0 && dt < best) best = dt;
    }
    g_cpu_clock_now = was;
    if (sink == 12345.678) puts(""); /* keep the results alive */
    return (double)nt * (double)iters * 12.0 * (double)g_fma_lanes * 2.0 / best * 1e-9;
}

/* ------------------------------------------------------ read bandwidth */

/* Read bandwidth: nt pthreads each sum their slice of one buffer (the size of
 * the matrix a GEMV row reads) with 4 independent vector accumulators. Small
 * buffers are summed several times per round so that a round reads >= 64 MiB
 * (thread start-up stays negligible), just as the GEMV is timed over repeated
 * calls on the same matrix. The buffer is touched first, so it is as cache-
 * resident as the GEMV's matrix (a 64 MiB matrix stays in a 260 MiB L3). */

typedef struct {
    const float *p;
    size_t n; /* floats, a multiple of 64 */
    long passes;
    double sink;
} bw_job;

__attribute__((target("avx512f"))) static double sum_avx512(const float *p, size_t n, long passes) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (long r = 0; r < passes; r++)
        for (size_t i = 0; i < n; i += 64) {
            s0 = _mm512_add_ps(s0, _mm512_loadu_ps(p + i));
            s1 = _mm512_add_ps(s1, _mm512_loadu_ps(p + i + 16));
            s2 = _mm512_add_ps(s2, _mm512_loadu_ps(p + i + 32));
            s3 = _mm512_add_ps(s3, _mm512_loadu_ps(p + i + 48));
        }
    return (double)_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

__attribute__((target("avx2"))) static double sum_avx2(const float *p, size_t n, long passes) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (long r = 0; r < passes; r++)
        for (size_t i = 0; i < n; i += 32) {
            s0 = _mm256_add_ps(s0, _mm256_loadu_ps(p + i));
            s1 = _mm256_add_ps(s1, _mm256_loadu_ps(p + i + 8));
            s2 = _mm256_add_ps(s2, _mm256_loadu_ps(p + i + 16));
            s3 = _mm256_add_ps(s3, _mm256_loadu_ps(p + i + 24));
        }
    float out[8];
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    double t = 0;
    for (int i = 0; i < 8; i++) t += out[i];
    return t;
}

static double sum_plain(const float *p, size_t n, long passes) {
    float s[8] = {0};
    for (long r = 0; r < passes; r++)
        for (size_t i = 0; i < n; i += 8)
            for (int j = 0; j < 8; j++) s[j] += p[i + (size_t)j];
    double t = 0;
    for (int j = 0; j < 8; j++) t += s[j];
    return t;
}

static void *bw_worker(void *q) {
    bw_job *j = q;
    j->sink = g_fma_lanes == 16 ? sum_avx512(j->p, j->n, j->passes)
              : __builtin_cpu_supports("avx2") ? sum_avx2(j->p, j->n, j->passes)
                                                : sum_plain(j->p, j->n, j->passes);
    return NULL;
}

/* Best-of-7 GB/s reading a buffer of `bytes` on nt threads. Memoized, so the
 * summary reuses the matrix-vector table's figure; fresh = measure again
 * (each thread count's matrix-vector table does, right after its rows). */
static double read_bw(size_t bytes, int nt, int fresh) {
    static struct { size_t bytes; int nt; double gbs; } memo[32];
    static int nmemo;
    int slot = -1;
    for (int i = 0; i < nmemo; i++)
        if (memo[i].bytes == bytes && memo[i].nt == nt) slot = i;
    if (slot >= 0 && !fresh) return memo[slot].gbs;
    if (nt < 1 || nt > 64 || bytes < 4096) return 0.0;
    size_t chunk = (size_t)nt * 64; /* floats: each slice a multiple of 64 */
    size_t n = bytes / sizeof(float) / chunk * chunk;
    float *buf = aligned_alloc(64, n * sizeof(float));
    if (!buf) return 0.0;
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 7);
    size_t per = n / (size_t)nt;
    long passes = (long)((64u << 20) / (n * sizeof(float))) + 1;
    double best = 1e30, sink = 0;
    for (int r = 0; r < 8; r++) { /* first round: warm-up */
        pthread_t th[64];
        bw_job jobs[64];
        int started[64] = {0};
        for (int i = 0; i < nt; i++) jobs[i] = (bw_job){buf + (size_t)i * per, per, passes, 0};
        double t0 = bench_now();
        for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, bw_worker, &jobs[i]) == 0;
        bw_worker(&jobs[0]);
        for (int i = 1; i < nt; i++) {
            if (started[i]) pthread_join(th[i], NULL);
            else bw_worker(&jobs[i]);
        }
        double dt = bench_now() - t0;
        for (int i = 0; i < nt; i++) sink += jobs[i].sink;
        if (r > 0 && dt < best) best = dt;
    }
    free(buf);
    if (sink == 12345.678) puts("");
    double gbs = (double)n * sizeof(float) * (double)passes / best * 1e-9;
    if (slot < 0 && nmemo < 32) slot = nmemo++;
    if (slot >= 0) memo[slot].bytes = bytes, memo[slot].nt = nt, memo[slot].gbs = gbs;
    return gbs;
}

/* ------------------------------------------------------------- timing */

typedef int (*call_fn)(void *ctx); /* 0 on success */

/* The clock of the current table: wall time, or with --clock cpu on a
 * 1-thread table the calling thread's CPU time (wick, OpenBLAS and BLIS
 * then all compute on this thread; time spent waiting for a core on a
 * shared machine is left out; torch times itself in its script). */
static double row_now(void) {
    if (!g_cpu_clock_now) return bench_now();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Median seconds per call, negative on failure. */
static double time_call(call_fn fn, void *ctx) {
    double t0 = row_now();
    if (fn(ctx)) return -1.0;
    double t1 = row_now() - t0;
    int reps = opt.repeats;
    long iters = 1;
    if (t1 > 1.0) reps = 2;
    else if (t1 > 0.3) reps = 3;
    else {
        t0 = row_now(); /* a second warm-up: the first touched fresh pages */
        if (fn(ctx)) return -1.0;
        t1 = row_now() - t0;
        if (t1 < opt.min_time) iters = (long)(opt.min_time / (t1 > 1e-9 ? t1 : 1e-9)) + 1;
    }
    double times[16];
    if (reps > 16) reps = 16;
    for (int r = 0; r < reps; r++) {
        t0 = row_now();
        for (long i = 0; i < iters; i++)
            if (fn(ctx)) return -1.0;
        times[r] = (row_now() - t0) / (double)iters;
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
    const char *label; /* NULL: "M x K x N" */
    int square;
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

static void shape_label(char *buf, size_t len, const shape *s) {
    if (s->label) snprintf(buf, len, "%s", s->label);
    else snprintf(buf, len, "%d x %d x %d", s->m, s->k, s->n);
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

/* ------------------------------------------------------------ results */

enum { D_F32, D_F64, D_F16, D_BF16, ND };
static const wk_dtype k_dt[ND] = {WK_F32, WK_F64, WK_F16, WK_BF16};
static const char *const k_dt_name[ND] = {"f32", "f64", "f16", "bf16"};
static const size_t k_dt_size[ND] = {4, 8, 2, 2};

#define MAX_SHAPES 32
static shape g_shapes[MAX_SHAPES];
static int g_nshapes;

/* Median seconds per call; <= 0: not measured / failed. */
typedef struct {
    double wick, ob, blis, torch;
} row_times;
static row_times g_res[ND][MAX_THREADS_LIST][MAX_SHAPES];
static double g_peak[MAX_THREADS_LIST]; /* f32 FMA peak used for each thread count's tables */
static int g_dt_on[ND];

/* Shapes a dtype is measured at: f64 only the square sizes. */
static int dtype_has_shape(int d, const shape *s) { return d != D_F64 || s->square; }

/* A peer's time at > 1 thread that is over 4x its own 1-thread time for the
 * same row: an OpenMP peer whose spinning barrier lost a time slice to
 * another process (seen on shared 2-vCPU VMs). Marked '!' in the tables and
 * left out of the summary's counts. which: 0 OpenBLAS, 1 BLIS, 2 torch. */
static int peer_suspect(int d, int ti, int i, int which) {
    int t1 = -1;
    for (int t = 0; t < opt.nthreads; t++)
        if (opt.threads[t] == 1) t1 = t;
    if (t1 < 0 || opt.threads[ti] <= 1) return 0;
    const row_times *r = &g_res[d][ti][i], *r1 = &g_res[d][t1][i];
    double a = which == 0 ? r->ob : which == 1 ? r->blis : r->torch;
    double b = which == 0 ? r1->ob : which == 1 ? r1->blis : r1->torch;
    return a > 0 && b > 0 && a > 4.0 * b;
}

static double pct_peak(int d, const shape *s, double t, double peak) {
    double ref = d == D_F64 ? peak / 2 : peak;
    return t > 0 && ref > 0 ? 100.0 * gflops(s, t) / ref : -1;
}

static void fmt_pct(char *buf, size_t len, double pct) {
    if (pct >= 0) snprintf(buf, len, "%.0f%%", pct);
    else snprintf(buf, len, "n/a");
}

/* f32 / f64 table: wick, OpenBLAS, BLIS. */
static void blas_table(int d, int ti, int nt, int check) {
    wk_dtype dt = k_dt[d];
    double peak = g_peak[ti];
    printf("\n%s, %d thread%s (peak %.0f GFLOP/s%s)\n", k_dt_name[d], nt, nt > 1 ? "s" : "",
           d == D_F64 ? peak / 2 : peak, d == D_F64 ? ": half the f32 FMA peak" : "");
    printf("| %-22s | %8s | %6s | %9s | %9s | %8s | %9s |%s\n", "M x K x N", "wick", "%peak", "OpenBLAS", "BLIS",
           "wick/OB", "wick/BLIS", check ? " max|wick-OB| |" : "");
    printf("|------------------------|----------|--------|-----------|-----------|----------|-----------|%s\n",
           check ? "---------------|" : "");
    for (int i = 0; i < g_nshapes; i++) {
        const shape *s = &g_shapes[i];
        if (!dtype_has_shape(d, s)) continue;
        gemm_ctx c;
        if (ctx_init(&c, dt, s->m, s->k, s->n)) {
            g_failed = 1;
            ctx_free(&c);
            continue;
        }
        double tw = time_call(call_wick, &c);
        if (tw < 0) report_null("wk_matmul");
        settle(nt); /* wick's pool spins a little after a region too */
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
        g_res[d][ti][i] = (row_times){tw, to, tb, -1};
        char label[64], gw[32], go[32], gb[32], ro[32], rb[32], pk[32], ck[48] = "";
        shape_label(label, sizeof label, s);
        fmt_gf(gw, sizeof gw, s, tw);
        fmt_gf(go, sizeof go, s, to);
        fmt_gf(gb, sizeof gb, s, tb);
        fmt_ratio(ro, sizeof ro, tw, to);
        fmt_ratio(rb, sizeof rb, tw, tb);
        if (peer_suspect(d, ti, i, 0)) strcat(go, "!");
        if (peer_suspect(d, ti, i, 1)) strcat(gb, "!");
        fmt_pct(pk, sizeof pk, pct_peak(d, s, tw, peak));
        if (check) {
            int naive_ok = (double)s->m * s->k * s->n <= 3e8;
            if (to > 0 || naive_ok) {
                double df = check_wick(&c, to > 0);
                double tol = tol_for(dt) * sqrt((double)s->k);
                if (df < 0 || !(df <= tol)) g_failed = 1;
                snprintf(ck, sizeof ck, " %9.2e%s%s |", df, to > 0 ? "" : " (naive)",
                         df >= 0 && df <= tol ? "" : " BAD");
            } else {
                snprintf(ck, sizeof ck, " %13s |", "n/a");
            }
        }
        printf("| %-22s | %8s | %6s | %9s | %9s | %8s | %9s |%s\n", label, gw, pk, go, gb, ro, rb, ck);
        fflush(stdout);
        ctx_free(&c);
    }
}

/* wick's f32 time at shape i: the f32 table's, or (when --dtypes left f32
 * out) measured here, wick only, for the bf16/f32 and f16/f32 columns. */
static double f32_wick_time(int ti, int i, int nt) {
    row_times *r = &g_res[D_F32][ti][i];
    if (r->wick > 0 || g_dt_on[D_F32]) return r->wick;
    const shape *s = &g_shapes[i];
    gemm_ctx c;
    if (ctx_init(&c, WK_F32, s->m, s->k, s->n) == 0) {
        r->wick = time_call(call_wick, &c);
        if (r->wick < 0) report_null("wk_matmul");
        settle(nt);
    } else {
        g_failed = 1;
    }
    ctx_free(&c);
    return r->wick;
}

/* f16 / bf16 table: wick, torch (bf16), ratio to wick's own f32 of the same
 * shape and thread count (from the f32 table). */
static void half_table(int d, int ti, int nt, const double *torch_t) {
    wk_dtype dt = k_dt[d];
    double peak = g_peak[ti];
    char hdr_ratio[16];
    snprintf(hdr_ratio, sizeof hdr_ratio, "%s/f32", k_dt_name[d]);
    printf("\n%s, %d thread%s (%%peak of the f32 FMA peak %.0f GFLOP/s)\n", k_dt_name[d], nt, nt > 1 ? "s" : "",
           peak);
    printf("| %-22s | %8s | %6s |", "M x K x N", "wick", "%peak");
    if (torch_t) printf(" %9s | %10s |", "torch", "wick/torch");
    printf(" %8s |\n", hdr_ratio);
    printf("|------------------------|----------|--------|%s----------|\n",
           torch_t ? "-----------|------------|" : "");
    for (int i = 0; i < g_nshapes; i++) {
        const shape *s = &g_shapes[i];
        gemm_ctx c;
        if (ctx_init(&c, dt, s->m, s->k, s->n)) {
            g_failed = 1;
            ctx_free(&c);
            continue;
        }
        double tw = time_call(call_wick, &c);
        if (tw < 0) report_null("wk_matmul");
        settle(nt);
        ctx_free(&c);
        double t32 = f32_wick_time(ti, i, nt);
        double tt = torch_t ? torch_t[i] : -1;
        g_res[d][ti][i] = (row_times){tw, -1, -1, tt};
        char label[64], gw[32], pk[32], gt[32], rt[32], rf[32];
        shape_label(label, sizeof label, s);
        fmt_gf(gw, sizeof gw, s, tw);
        fmt_pct(pk, sizeof pk, pct_peak(d, s, tw, peak));
        fmt_ratio(rf, sizeof rf, tw, t32);
        printf("| %-22s | %8s | %6s |", label, gw, pk);
        if (torch_t) {
            fmt_gf(gt, sizeof gt, s, tt);
            if (peer_suspect(d, ti, i, 2)) strcat(gt, "!");
            fmt_ratio(rt, sizeof rt, tw, tt);
            printf(" %9s | %10s |", gt, rt);
        }
        printf(" %8s |\n", rf);
        fflush(stdout);
    }
}

/* Matrix-vector rows (M = 1) of every dtype at this thread count, from the
 * tables above: bytes of B read per second beside a read of the same size. */
static void gemv_table(int ti, int nt) {
    int any = 0;
    for (int i = 0; i < g_nshapes; i++) any |= g_shapes[i].m == 1;
    if (!any) return;
    printf("\nmatrix-vector (M = 1), %d thread%s: GB/s = K*N*sizeof(dtype) / time (B read once per call);\n"
           "read bw = the sum micro-benchmark on a buffer of the same size, %d thread%s\n",
           nt, nt > 1 ? "s" : "", nt, nt > 1 ? "s" : "");
    printf("| %-5s | %-22s | %8s | %9s | %7s | %6s | %8s | %8s | %8s |\n", "dtype", "M x K x N", "MiB", "read bw",
           "wick", "%bw", "OpenBLAS", "BLIS", "torch");
    printf("|-------|------------------------|----------|-----------|---------|--------|----------|----------|"
           "----------|\n");
    size_t seen[16];
    int nseen = 0;
    for (int d = 0; d < ND; d++) {
        if (!g_dt_on[d]) continue;
        for (int i = 0; i < g_nshapes; i++) {
            const shape *s = &g_shapes[i];
            if (s->m != 1 || !dtype_has_shape(d, s)) continue;
            const row_times *r = &g_res[d][ti][i];
            double bytes = (double)s->k * s->n * (double)k_dt_size[d];
            int fresh = 1; /* measure each buffer size once per table */
            for (int j = 0; j < nseen; j++) fresh &= seen[j] != (size_t)bytes;
            if (fresh && nseen < 16) seen[nseen++] = (size_t)bytes;
            double bw = read_bw((size_t)bytes, nt, fresh);
            char label[64], w[32], pc[32], o[32], b[32], t[32];
#define GBS(buf, tm)                                                                                               \
    do {                                                                                                           \
        if ((tm) > 0) snprintf(buf, sizeof buf, "%.1f", bytes / (tm) * 1e-9);                                      \
        else snprintf(buf, sizeof buf, "%s", "n/a");                                                               \
    } while (0)
            GBS(w, r->wick);
            GBS(o, r->ob);
            GBS(b, r->blis);
            GBS(t, r->torch);
#undef GBS
            fmt_pct(pc, sizeof pc, r->wick > 0 && bw > 0 ? 100.0 * bytes / r->wick * 1e-9 / bw : -1);
            shape_label(label, sizeof label, s);
            char bws[32];
            if (bw > 0) snprintf(bws, sizeof bws, "%.1f", bw);
            else snprintf(bws, sizeof bws, "n/a");
            printf("| %-5s | %-22s | %8.1f | %9s | %7s | %6s | %8s | %8s | %8s |\n", k_dt_name[d], label,
                   bytes / 1048576.0, bws, w, pc, o, b, t);
        }
    }
    fflush(stdout);
}

/* ------------------------------------------------------------- torch */

static const char *k_torch_peer =
    "import sys, time, statistics, torch\n"
    "nt, mt, reps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(nt)\n"
    "torch.manual_seed(0)\n"
    "for spec in sys.argv[4:]:\n"
    "    m, k, n = (int(v) for v in spec.split('x'))\n"
    "    a = (torch.rand(m, k) * 2 - 1).to(torch.bfloat16)\n"
    "    b = (torch.rand(k, n) * 2 - 1).to(torch.bfloat16)\n"
    "    with torch.no_grad():\n"
    "        t0 = time.perf_counter(); torch.matmul(a, b); t1 = time.perf_counter() - t0\n"
    "        it, r = 1, reps\n"
    "        if t1 > 1.0: r = 2\n"
    "        elif t1 > 0.3: r = 3\n"
    "        else:\n"
    "            t0 = time.perf_counter(); torch.matmul(a, b); t1 = time.perf_counter() - t0\n"
    "            if t1 < mt: it = int(mt / max(t1, 1e-9)) + 1\n"
    "        ts = []\n"
    "        for _ in range(r):\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(it): torch.matmul(a, b)\n"
    "            ts.append((time.perf_counter() - t0) / it)\n"
    "    print(spec, statistics.median(ts), flush=True)\n";

/* torch bf16 matmul at every shape: out[i] seconds, -1 = n/a. */
static void time_torch(int nt, double *out) {
    for (int i = 0; i < g_nshapes; i++) out[i] = -1;
    if (opt.no_peers) return;
    char args[1024];
    int len = snprintf(args, sizeof args, "%d %g %d", nt, opt.min_time, opt.repeats);
    for (int i = 0; i < g_nshapes && len > 0 && len < (int)sizeof args - 40; i++)
        len += snprintf(args + len, sizeof args - (size_t)len, " %dx%dx%d", g_shapes[i].m, g_shapes[i].k,
                        g_shapes[i].n);
    bench_peer p;
    if (bench_peer_start(&p, opt.python, k_torch_peer, NULL, args)) {
        char line[256];
        while (fgets(line, sizeof line, p.out)) {
            int m, k, n;
            double t;
            if (sscanf(line, "%dx%dx%d %lf", &m, &k, &n, &t) != 4) continue;
            for (int i = 0; i < g_nshapes; i++)
                if (g_shapes[i].m == m && g_shapes[i].k == k && g_shapes[i].n == n) out[i] = t;
        }
    }
    bench_peer_finish(&p);
}

/* ----------------------------------------------------------- summary */

typedef struct {
    int met, of, excluded;
    char miss[512];
} tally;

static void tally_add(tally *t, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tally_add(tally *t, int ok, const char *fmt, ...) {
    t->of++;
    if (ok) {
        t->met++;
        return;
    }
    size_t len = strlen(t->miss);
    if (len + 4 >= sizeof t->miss) return;
    if (len) t->miss[len++] = ',', t->miss[len++] = ' ', t->miss[len] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->miss + len, sizeof t->miss - len, fmt, ap);
    va_end(ap);
}

/* One goal line: "<goal>: a/b rows at 1 thread (misses ...); c/d at 2 (...)". */
static void print_goal(const char *goal, tally *per_t) {
    printf("- %s:", goal);
    int any = 0;
    for (int ti = 0; ti < opt.nthreads; ti++) {
        if (!per_t[ti].of) continue;
        printf("%s %d/%d rows at %d thread%s", any ? ";" : "", per_t[ti].met, per_t[ti].of, opt.threads[ti],
               opt.threads[ti] > 1 ? "s" : "");
        if (per_t[ti].miss[0]) printf(" (missed: %s)", per_t[ti].miss);
        if (per_t[ti].excluded) printf(" [%d row%s left out: peer marked !]", per_t[ti].excluded,
                                       per_t[ti].excluded > 1 ? "s" : "");
        any = 1;
    }
    if (!any) {
        int ex = 0;
        for (int ti = 0; ti < opt.nthreads; ti++) ex += per_t[ti].excluded;
        printf(ex ? " no usable row (%d left out: peer marked !)" : " not measured in this run", ex);
    }
    printf("\n");
}

static int cpu_has_avx512bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1;
}

static void short_label(char *buf, size_t len, const shape *s) {
    if (s->square) snprintf(buf, len, "%d", s->m);
    else snprintf(buf, len, "%dx%dx%d", s->m, s->k, s->n);
}

static void summary(void) {
    tally ob[MAX_THREADS_LIST], bl[MAX_THREADS_LIST], pk[MAX_THREADS_LIST], tq[MAX_THREADS_LIST],
        r18[MAX_THREADS_LIST], gv[MAX_THREADS_LIST];
    memset(ob, 0, sizeof ob), memset(bl, 0, sizeof bl), memset(pk, 0, sizeof pk);
    memset(tq, 0, sizeof tq), memset(r18, 0, sizeof r18), memset(gv, 0, sizeof gv);
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int nt = opt.threads[ti];
        for (int i = 0; i < g_nshapes; i++) {
            const shape *s = &g_shapes[i];
            char sl[48];
            short_label(sl, sizeof sl, s);
            const row_times *f = &g_res[D_F32][ti][i], *h = &g_res[D_BF16][ti][i];
            if (g_dt_on[D_F32] && f->wick > 0) {
                if (f->ob > 0 && peer_suspect(D_F32, ti, i, 0)) ob[ti].excluded++;
                else if (f->ob > 0) tally_add(&ob[ti], f->wick <= f->ob, "%s %.2f", sl, f->ob / f->wick);
                if (f->blis > 0 && peer_suspect(D_F32, ti, i, 1)) bl[ti].excluded++;
                else if (f->blis > 0) tally_add(&bl[ti], f->wick <= f->blis, "%s %.2f", sl, f->blis / f->wick);
                if (s->square && s->m >= 1024) {
                    double p = pct_peak(D_F32, s, f->wick, g_peak[ti]);
                    tally_add(&pk[ti], p >= 90.0, "%s %.0f%%", sl, p);
                }
            }
            if (g_dt_on[D_BF16] && h->wick > 0) {
                if (h->torch > 0 && peer_suspect(D_BF16, ti, i, 2)) tq[ti].excluded++;
                else if (h->torch > 0) tally_add(&tq[ti], h->wick <= h->torch, "%s %.2f", sl, h->torch / h->wick);
                if (f->wick > 0)
                    tally_add(&r18[ti], f->wick / h->wick >= 1.8, "%s %.2f", sl, f->wick / h->wick);
            }
            if (s->m == 1)
                for (int d = 0; d < ND; d++) {
                    const row_times *r = &g_res[d][ti][i];
                    if (!g_dt_on[d] || !dtype_has_shape(d, s) || r->wick <= 0) continue;
                    double bytes = (double)s->k * s->n * (double)k_dt_size[d];
                    double bw = read_bw((size_t)bytes, nt, 0);
                    if (bw <= 0) continue; /* under 4 KiB: no bandwidth figure */
                    double p = 100.0 * bytes / r->wick * 1e-9 / bw;
                    tally_add(&gv[ti], p >= 85.0, "%s %s %.0f%%", k_dt_name[d], sl, p);
                }
        }
    }
    printf("\nsummary (goals of the GEMM issue, this run; missed rows in parentheses with wick's\n"
           "speed-up over the peer, its bf16/f32 ratio or its percentage;\n"
           "FMA peak");
    for (int ti = 0; ti < opt.nthreads; ti++)
        printf("%s %.1f GFLOP/s on %d", ti ? "," : "", g_peak[ti], opt.threads[ti]);
    printf(")\n");
    print_goal("f32 >= OpenBLAS (wick/OB >= 1)", ob);
    print_goal("f32 >= BLIS (for reference)", bl);
    print_goal("f32 >= 90% of the FMA peak at square >= 1024", pk);
    print_goal("bf16 >= torch bf16 (wick/torch >= 1)", tq);
    char g18[128];
    snprintf(g18, sizeof g18, "bf16 >= 1.8x wick's f32 (bf16/f32 >= 1.8; this CPU %s AVX512-BF16)",
             cpu_has_avx512bf16() ? "has" : "lacks");
    print_goal(g18, r18);
    print_goal("GEMV (M = 1) >= 85% of the read bandwidth of a buffer of its size", gv);
}

/* -------------------------------------------------------------- main */

static int parse_int_list(char *s, int *out, int max, int lo, int hi) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < lo || v > hi) return 0;
        out[n++] = (int)v;
        if (*end == ',') s = end + 1;
        else if (*end == 0) s = end;
        else return 0;
    }
    return n;
}

static int parse_dtypes(const char *s) {
    memset(g_dt_on, 0, sizeof g_dt_on);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    int any = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int d = 0; d < ND; d++)
            if (strcmp(tok, k_dt_name[d]) == 0) g_dt_on[d] = found = 1;
        if (!found) return 0;
        any = 1;
    }
    return any;
}

static void usage(FILE *f, const char *argv0) {
    fprintf(f,
            "usage: %s [--quick] [--threads 1,2] [--dtypes f32,f64,f16,bf16] [--sizes 64,128,...] [--no-lm]\n"
            "          [--no-peers] [--python PATH] [--openblas LIB] [--blis LIB] [--clock wall|cpu]\n",
            argv0);
}

int main(int argc, char **argv) {
    opt.python = "/usr/bin/python3";
    opt.threads[0] = 1, opt.threads[1] = 2, opt.nthreads = 2;
    for (int d = 0; d < ND; d++) g_dt_on[d] = 1;
    int sizes[16], nsizes = 0, no_lm = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) opt.quick = 1;
        else if (strcmp(argv[i], "--no-peers") == 0) opt.no_peers = 1;
        else if (strcmp(argv[i], "--no-lm") == 0) no_lm = 1;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) opt.python = argv[++i];
        else if (strcmp(argv[i], "--openblas") == 0 && i + 1 < argc) opt.openblas_path = argv[++i];
        else if (strcmp(argv[i], "--blis") == 0 && i + 1 < argc) opt.blis_path = argv[++i];
        else if (strcmp(argv[i], "--clock") == 0 && i + 1 < argc && (strcmp(argv[i + 1], "cpu") == 0 ||
                                                                     strcmp(argv[i + 1], "wall") == 0))
            opt.clock_cpu = strcmp(argv[++i], "cpu") == 0;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            opt.nthreads = parse_int_list(argv[++i], opt.threads, MAX_THREADS_LIST, 1, 64);
            if (!opt.nthreads) {
                fprintf(stderr, "bad --threads %s (e.g. 1,2)\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = parse_int_list(argv[++i], sizes, 16, 1, 16384);
            if (!nsizes) {
                fprintf(stderr, "bad --sizes %s (e.g. 256,1024; at most 16, each 1..16384)\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--dtypes") == 0 && i + 1 < argc) {
            if (!parse_dtypes(argv[++i])) {
                fprintf(stderr, "bad --dtypes %s (a comma list of f32, f64, f16, bf16)\n", argv[i]);
                return 2;
            }
        } else {
            int help = strcmp(argv[i], "--help") == 0;
            usage(help ? stdout : stderr, argv[0]);
            return help ? 0 : 2;
        }
    }
    opt.min_time = opt.quick ? 0.01 : 0.05;
    opt.repeats = opt.quick ? 3 : 5;

    if (!opt.no_peers) load_peers();

    __builtin_cpu_init();
    g_fma_lanes = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("fma") ? 8 : 0;

    if (!nsizes) {
        static const int sq_full[] = {64, 128, 256, 512, 1024, 2048, 4096};
        static const int sq_quick[] = {64, 128, 256};
        nsizes = opt.quick ? 3 : 7;
        memcpy(sizes, opt.quick ? sq_quick : sq_full, (size_t)nsizes * sizeof(int));
    }
    for (int i = 0; i < nsizes; i++) g_shapes[g_nshapes++] = (shape){sizes[i], sizes[i], sizes[i], NULL, 1};
    if (no_lm) {
    } else if (opt.quick) {
        g_shapes[g_nshapes++] = (shape){1, 512, 512, "LM 1 x 512 x 512", 0};
    } else {
        static const int lm_m[] = {1, 32, 128, 512};
        static const char *const lm_labels[] = {"LM 1 x 4096 x 4096", "LM 32 x 4096 x 4096", "LM 128 x 4096 x 4096",
                                                "LM 512 x 4096 x 4096"};
        for (int i = 0; i < 4; i++) g_shapes[g_nshapes++] = (shape){lm_m[i], 4096, 4096, lm_labels[i], 0};
        g_shapes[g_nshapes++] = (shape){1, 576, 1536, "LM 1 x 576 x 1536", 0};
        g_shapes[g_nshapes++] = (shape){128, 576, 1536, "LM 128 x 576 x 1536", 0};
    }

    printf("bench_gemm: C = A @ B, row-major, A M x K, B K x N; GFLOP/s = 2MKN / median time; wick ISA %s\n",
           wk_cpu_isa());
    if (opt.clock_cpu)
        printf("clock: 1-thread tables' wick and BLAS rows in the calling thread's CPU time (--clock cpu); "
               "the 1-thread FMA peak too; torch, bandwidths and other thread counts in wall time\n");
    printf("wick: c = wk_matmul(a, b) + free (allocation included); peers: cblas_?gemm into an existing C, beta 0;\n"
           "torch: torch.matmul on bfloat16 tensors (/usr/bin/python3, ATEN_CPU_CAPABILITY=%s)\n",
           bench_aten_capability() ? bench_aten_capability() : "unset");
    if (opt.no_peers) {
        printf("peers: off (--no-peers)\n");
    } else {
        if (g_ob.h) printf("OpenBLAS: %s: %s (OPENBLAS_L2_SIZE unset; %s)\n", g_ob.path, g_ob.kernel, g_ob_core_note);
        else printf("OpenBLAS: n/a (could not dlopen: %s)\n", dlerror());
        if (g_blis.h) printf("BLIS: %s: %s (%s)\n", g_blis.path, g_blis.kernel, g_blis_arch_note);
        else printf("BLIS: n/a (could not dlopen)\n");
    }

    long fma_iters = opt.quick ? 2000000 : 10000000;
    double peak1 = fma_peak(1, fma_iters);
    printf("FMA peak (12 independent %s FMA chains per thread): %.1f GFLOP/s f32 on 1 thread",
           g_fma_lanes == 16 ? "zmm" : g_fma_lanes == 8 ? "ymm" : "(none)", peak1);
    for (int t = 0; t < opt.nthreads; t++) {
        g_peak[t] = opt.threads[t] == 1 ? peak1 : fma_peak(opt.threads[t], fma_iters);
        if (opt.threads[t] != 1) printf(", %.1f on %d", g_peak[t], opt.threads[t]);
    }
    /* Read bandwidth on the largest matrix a GEMV row reads (f32). */
    size_t bw_bytes = 0;
    for (int i = 0; i < g_nshapes; i++)
        if (g_shapes[i].m == 1 && (size_t)g_shapes[i].k * (size_t)g_shapes[i].n * 4 > bw_bytes)
            bw_bytes = (size_t)g_shapes[i].k * (size_t)g_shapes[i].n * 4;
    if (bw_bytes < 4096) bw_bytes = 64u << 20; /* no GEMV row big enough: 64 MiB */
    printf("\nread bandwidth (sum of a %.1f MiB buffer, the largest f32 GEMV matrix, else 64 MiB): ",
           bw_bytes / 1048576.0);
    for (int t = 0; t < opt.nthreads; t++)
        printf("%s%.1f GB/s on %d thread%s", t ? ", " : "", read_bw(bw_bytes, opt.threads[t], 0), opt.threads[t],
               opt.threads[t] > 1 ? "s" : "");
    printf("\nratios wick/peer = peer time / wick time: > 1 means wick is faster. %%peak: wick's GFLOP/s / FMA peak\n");
    printf("(f64 against half the f32 peak; f16/bf16 against the f32 peak). bf16/f32, f16/f32: wick's f32 time / its\n"
           "bf16 (f16) time for the same shape and thread count. max|wick-OB|: wick vs OpenBLAS's C (naive double\n"
           "reference if n/a). GEMV rows: GB/s of the matrix B read, %%bw against the read bandwidth of a buffer of\n"
           "the same size measured here; this CPU's L3 (260 MiB on the dev VMs) holds a 64 MiB matrix after the first\n"
           "touch, so both are L3 (or L2) bandwidths, not DRAM ones. The FMA peak is re-measured before and after\n"
           "each thread count's tables; the highest figure is kept (noise only lowers it); the summary uses it.\n"
           "A peer figure marked ! took over 4x its own 1-thread time on more threads (an OpenMP barrier that lost\n"
           "a time slice to another process on a shared VM): the summary leaves those rows out.\n");
    fflush(stdout);

    static double torch_t[MAX_SHAPES];
    for (int t = 0; t < opt.nthreads; t++) {
        int nt = opt.threads[t];
        wk_set_num_threads(nt);
        if (!opt.no_peers) peers_set_threads(nt);
        g_cpu_clock_now = opt.clock_cpu && nt == 1;
        double again = fma_peak(nt, fma_iters);
        if (again > g_peak[t]) g_peak[t] = again;
        printf("\n=== threads %d (FMA peak %.1f GFLOP/s f32) ===\n", nt, g_peak[t]);
        if (g_dt_on[D_F32]) blas_table(D_F32, t, nt, t == 0);
        if (g_dt_on[D_F64]) blas_table(D_F64, t, nt, t == 0);
        if (g_dt_on[D_F16]) half_table(D_F16, t, nt, NULL);
        if (g_dt_on[D_BF16]) {
            time_torch(nt, torch_t);
            half_table(D_BF16, t, nt, torch_t);
        }
        gemv_table(t, nt);
        again = fma_peak(nt, fma_iters);
        if (again > g_peak[t]) {
            printf("\n(FMA peak on %d thread%s re-measured after the tables: %.1f GFLOP/s; the summary uses it)\n", nt,
                   nt > 1 ? "s" : "", again);
            g_peak[t] = again;
        }
    }
    summary();
    printf("\nwick result check: %s\n", g_failed ? "FAILED" : "ok");
    return g_failed ? 1 : 0;
}
