/*
 * bench/ops — wick's common ops beside PyTorch and numpy, measured in one run.
 *
 *   bench_ops [--quick] [--threads 1,2] [--no-peers] [--peer-script PATH]
 *             [--python PATH] [--min-time SECONDS] [--repeats N]
 *
 * Rows: add, mul, exp, gelu (tanh form), sum over the last dim, and a
 * softmax-like composite (x - max(x,-1,keepdim) -> exp -> / sum(-1,keepdim)),
 * each at 1K, 64K, 1M and 16M f32 elements laid out as rows of 1024; exp also
 * at 4K (in cache); then tiny ops (2x2 add, 2x2 matmul, 1-element exp).
 *
 * wick is called as a user calls it: c = wk_add(a, b); wk_tensor_free(c) —
 * allocation included. The peers (bench/peer_ops.py through /usr/bin/python3,
 * which sets ATEN_CPU_CAPABILITY from the CPU flags and WICK_ISA) do the same
 * with allocating calls, at the same thread count, in the same run. Timing
 * everywhere is timeit-style: warm-up, an iteration count n with n calls >=
 * --min-time (default 50 ms), then --repeats (default 5) repeats; the median
 * per call is reported.
 *
 * Bandwidth: a plain memcpy of a 16M-float buffer into an existing buffer,
 * best of 10 (bytes read + written), on 1 thread and on the table's thread
 * count. GB/s of an op counts the bytes it must read + write once (see
 * bench/README.md); %copy compares that with the copy for the elementwise
 * ops at 16M (the only size that does not fit in the last-level cache).
 *
 * Exit status: 0 when every wick op ran and matched a scalar reference (a
 * missing python/torch/numpy only prints "n/a"); 1 otherwise.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <wick/wick.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROW 1024           /* row length of every 2-D input */
#define EXP_IN_CACHE 4096  /* extra exp size (fits in L1/L2) */
#define MAX_SIZES 8
#define MAX_THREADS_LIST 8
#define MAX_PEER_RECS 512

/* ------------------------------------------------------------- options */

static struct {
    int quick;
    int no_peers;
    const char *peer_script;
    const char *python;
    double min_time;
    int repeats;
    int threads[MAX_THREADS_LIST];
    int nthreads;
    int cpu_clock; /* --clock cpu: 1-thread tables timed by the thread's CPU time */
} opt;

static int g_use_cpu_clock; /* this table is timed by CPU time (opt.cpu_clock, 1 thread) */

static int g_failed; /* a wick op returned NULL or a wrong value */

/* ------------------------------------------------------------- timing */

/* Wall time; with --clock cpu in a 1-thread table the calling thread's CPU
 * time instead: on a loaded machine that leaves out the time the thread
 * waits for a core (it still pays for caches shared with the neighbours). */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(g_use_cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

typedef int (*bench_fn)(void *ctx); /* returns 0 on success */

/* Median seconds per call; negative if fn failed. */
static double bench(bench_fn fn, void *ctx) {
    if (fn(ctx)) return -1.0; /* warm-up */
    long n = 1;
    for (;;) {
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            if (fn(ctx)) return -1.0;
        double dt = now_s() - t0;
        if (dt >= opt.min_time) break;
        long grow = dt > 0 ? (long)((double)n * opt.min_time / dt * 1.1) : n * 10;
        n = grow > 2 * n ? grow : 2 * n;
    }
    double times[64];
    int reps = opt.repeats < 64 ? opt.repeats : 64;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            if (fn(ctx)) return -1.0;
        times[r] = (now_s() - t0) / (double)n;
    }
    qsort(times, (size_t)reps, sizeof times[0], cmp_double);
    return reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
}

/* ----------------------------------------------------- copy bandwidth */

typedef struct {
    char *dst;
    const char *src;
    size_t n;
} copy_job;

static void *copy_worker(void *p) {
    copy_job *j = p;
    memcpy(j->dst, j->src, j->n);
    return NULL;
}

/* Best-of-`reps` GB/s (read + written) of memcpy of `nbytes` into an existing
 * buffer, split over `nthreads` threads. */
static double copy_bandwidth(size_t nbytes, int nthreads, int reps) {
    char *src = malloc(nbytes), *dst = malloc(nbytes);
    if (!src || !dst) {
        free(src);
        free(dst);
        return 0.0;
    }
    memset(src, 1, nbytes);
    memset(dst, 2, nbytes);
    if (nthreads < 1) nthreads = 1;
    if (nthreads > 64) nthreads = 64;
    double best = 1e30;
    size_t chunk = (nbytes / (size_t)nthreads + 4095) & ~(size_t)4095;
    for (int r = 0; r < reps + 1; r++) { /* +1: warm-up */
        pthread_t th[64];
        copy_job jobs[64];
        int started[64] = {0}, njobs = 0;
        for (size_t off = 0; off < nbytes && njobs < nthreads; off += chunk, njobs++)
            jobs[njobs] = (copy_job){dst + off, src + off, off + chunk > nbytes ? nbytes - off : chunk};
        double t0 = now_s();
        for (int i = 1; i < njobs; i++)
            started[i] = pthread_create(&th[i], NULL, copy_worker, &jobs[i]) == 0;
        copy_worker(&jobs[0]); /* the caller takes the first piece */
        for (int i = 1; i < njobs; i++) {
            if (started[i])
                pthread_join(th[i], NULL);
            else
                copy_worker(&jobs[i]);
        }
        double dt = now_s() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    volatile char sink = dst[nbytes / 2];
    (void)sink;
    free(src);
    free(dst);
    return 2.0 * (double)nbytes / best / 1e9;
}

/* ---------------------------------------------------------------- ops */

enum { OP_ADD, OP_MUL, OP_EXP, OP_GELU, OP_SUM, OP_SOFTMAX, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"add", "mul", "exp", "gelu", "sum", "softmax"};
enum { TINY_ADD, TINY_MATMUL, TINY_EXP, TINY_COUNT };
static const char *const tiny_names[TINY_COUNT] = {"tiny_add", "tiny_matmul", "tiny_exp"};
static const char *const tiny_labels[TINY_COUNT] = {"add", "matmul", "exp"};
static const char *const tiny_sizes[TINY_COUNT] = {"2x2", "2x2", "1"};
static const int64_t tiny_numel[TINY_COUNT] = {4, 4, 1};

typedef struct {
    wk_tensor *a, *b;
    int op;
} op_ctx;

static void report_null(const char *what) {
    fprintf(stderr, "bench_ops: %s returned NULL: %s (%s)\n", what, wk_last_error(),
            wk_status_name(wk_last_status()));
    wk_clear_error();
    g_failed = 1;
}

/* The composite a user writes for a softmax over the last dim. */
static wk_tensor *softmax_composite(const wk_tensor *x) {
    int d = -1;
    wk_tensor *m = wk_max(x, &d, 1, true);
    wk_tensor *s = wk_sub(x, m);
    wk_tensor *e = wk_exp(s);
    wk_tensor *z = wk_sum(e, &d, 1, true);
    wk_tensor *y = wk_div(e, z);
    wk_tensor_free(m);
    wk_tensor_free(s);
    wk_tensor_free(e);
    wk_tensor_free(z);
    return y;
}

static wk_tensor *run_op(int op, const wk_tensor *a, const wk_tensor *b) {
    int d = -1;
    switch (op) {
    case OP_ADD: return wk_add(a, b);
    case OP_MUL: return wk_mul(a, b);
    case OP_EXP: return wk_exp(a);
    case OP_GELU: return wk_gelu(a);
    case OP_SUM: return wk_sum(a, &d, 1, false);
    case OP_SOFTMAX: return softmax_composite(a);
    default: return NULL;
    }
}

static int op_once(void *p) {
    op_ctx *c = p;
    wk_tensor *y = run_op(c->op, c->a, c->b);
    if (!y) return 1;
    wk_tensor_free(y);
    return 0;
}

static int tiny_once(void *p) {
    op_ctx *c = p;
    wk_tensor *y = c->op == TINY_ADD ? wk_add(c->a, c->b)
                 : c->op == TINY_MATMUL ? wk_matmul(c->a, c->b)
                                        : wk_exp(c->a);
    if (!y) return 1;
    wk_tensor_free(y);
    return 0;
}

/* Bytes an op must read + write at least once, for GB/s. */
static double op_bytes(int op, int64_t n) {
    switch (op) {
    case OP_ADD:
    case OP_MUL: return 12.0 * (double)n;
    case OP_EXP:
    case OP_GELU:
    case OP_SOFTMAX: return 8.0 * (double)n;
    case OP_SUM: return 4.0 * (double)n + 4.0 * (double)(n / ROW > 0 ? n / ROW : 1);
    default: return 0.0;
    }
}

static void shape_of(int64_t n, int64_t shape[2], int *rank) {
    if (n >= ROW && n % ROW == 0) {
        shape[0] = n / ROW;
        shape[1] = ROW;
        *rank = 2;
    } else {
        shape[0] = n;
        shape[1] = 1;
        *rank = 1;
    }
}

/* ---------------------------------------------------- correctness check */

static double gelu_ref(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* Compares every op at 2 rows of 1024 with a double-precision reference. */
static void check_ops(void) {
    enum { R = 2, N = R * ROW };
    int64_t shape[2] = {R, ROW};
    static float a[N], b[N], y[N], ref[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)(8.0 * ((i * 7919) % N) / N - 4.0);
        b[i] = (float)(8.0 * ((i * 104729 + 17) % N) / N - 4.0);
    }
    wk_tensor *ta = wk_from_host(a, sizeof a, shape, 2, WK_F32, wk_cpu());
    wk_tensor *tb = wk_from_host(b, sizeof b, shape, 2, WK_F32, wk_cpu());
    if (!ta || !tb) {
        report_null("wk_from_host");
        wk_tensor_free(ta);
        wk_tensor_free(tb);
        return;
    }
    for (int op = 0; op < OP_COUNT; op++) {
        int outn = op == OP_SUM ? R : N;
        double tol = 1e-4, scale[R] = {0, 0};
        for (int r = 0; r < R; r++) {
            double mx = -1e30, s = 0;
            for (int j = 0; j < ROW; j++) mx = fmax(mx, a[r * ROW + j]);
            for (int j = 0; j < ROW; j++) s += exp((double)a[r * ROW + j] - mx);
            for (int j = 0; j < ROW; j++) {
                int i = r * ROW + j;
                scale[r] += fabs(a[i]);
                switch (op) {
                case OP_ADD: ref[i] = (float)((double)a[i] + b[i]); break;
                case OP_MUL: ref[i] = (float)((double)a[i] * b[i]); break;
                case OP_EXP: ref[i] = (float)exp(a[i]); break;
                case OP_GELU: ref[i] = (float)gelu_ref(a[i]); break;
                case OP_SOFTMAX: ref[i] = (float)(exp((double)a[i] - mx) / s); break;
                default: break;
                }
            }
            if (op == OP_SUM) {
                double t = 0;
                for (int j = 0; j < ROW; j++) t += a[r * ROW + j];
                ref[r] = (float)t;
            }
        }
        wk_tensor *t = run_op(op, ta, tb);
        if (!t) {
            report_null(op_names[op]);
            continue;
        }
        if (wk_numel(t) != outn || wk_to_host_f32(t, y, (size_t)outn) != WK_OK) {
            fprintf(stderr, "bench_ops: check %s: wrong size %lld or readback failed\n", op_names[op],
                    (long long)wk_numel(t));
            g_failed = 1;
        } else {
            double worst = 0;
            int at = 0;
            for (int i = 0; i < outn; i++) {
                /* relative error; small results are compared on an absolute floor
                 * (1 - tanh cancels in a tanh-form gelu near -4) */
                double den = op == OP_SUM    ? scale[i]
                           : op == OP_GELU   ? fmax(fabs(ref[i]), 1e-2)
                                             : fmax(fabs(ref[i]), 1e-3);
                double e = fabs((double)y[i] - ref[i]) / den;
                if (!(e <= worst)) { /* also catches NaN */
                    worst = isnan(e) ? INFINITY : e;
                    at = i;
                }
            }
            if (!(worst <= tol)) {
                fprintf(stderr, "bench_ops: check %s FAILED: element %d is %g, expected %g (rel err %.3g)\n",
                        op_names[op], at, (double)y[at], (double)ref[at], worst);
                g_failed = 1;
            }
        }
        wk_tensor_free(t);
    }
    wk_tensor_free(ta);
    wk_tensor_free(tb);
}

/* ------------------------------------------------------------- peers */

typedef struct {
    char peer[16];
    char op[24];
    long long n;
    double sec;
} peer_rec;

static peer_rec g_recs[MAX_PEER_RECS];
static int g_nrecs;
static char g_peer_info[4][160];
static int g_npeer_info;
static char g_peer_note[256];

static const char *find_peer_script(char *buf, size_t len) {
    if (opt.peer_script) return access(opt.peer_script, R_OK) == 0 ? opt.peer_script : NULL;
#ifdef WICK_SOURCE_DIR
    snprintf(buf, len, "%s/bench/peer_ops.py", WICK_SOURCE_DIR);
    if (access(buf, R_OK) == 0) return buf;
#endif
    snprintf(buf, len, "bench/peer_ops.py");
    if (access(buf, R_OK) == 0) return buf;
    return NULL;
}

/* Runs the peer script at `threads`; fills g_recs. Never fails the run. */
static void run_peers(int threads) {
    g_nrecs = 0;
    g_npeer_info = 0;
    g_peer_note[0] = 0;
    if (opt.no_peers) {
        snprintf(g_peer_note, sizeof g_peer_note, "peers skipped (--no-peers)");
        return;
    }
    char pathbuf[4096];
    const char *script = find_peer_script(pathbuf, sizeof pathbuf);
    if (!script) {
        snprintf(g_peer_note, sizeof g_peer_note, "peer script %s not found: peers n/a",
                 opt.peer_script ? opt.peer_script : "bench/peer_ops.py");
        return;
    }
    if (access(opt.python, X_OK) != 0) {
        snprintf(g_peer_note, sizeof g_peer_note, "%s not found: peers n/a", opt.python);
        return;
    }
    if (strchr(script, '\'') || strchr(opt.python, '\'')) {
        snprintf(g_peer_note, sizeof g_peer_note, "peer script path contains a quote: peers n/a");
        return;
    }
    char cmd[8400];
    char extra[160] = "";
    if (opt.min_time != (opt.quick ? 0.002 : 0.05) || opt.repeats != (opt.quick ? 3 : 5))
        snprintf(extra, sizeof extra, " --min-time %g --repeats %d", opt.min_time, opt.repeats);
    if (g_use_cpu_clock) strcat(extra, " --clock cpu");
    /* the script picks ATEN_CPU_CAPABILITY from the CPU flags and WICK_ISA
     * (forcing avx512 on a CPU without it kills PyTorch with SIGILL) */
    snprintf(cmd, sizeof cmd, "'%s' '%s' --threads %d%s%s", opt.python, script,
             threads, opt.quick ? " --quick" : "", extra);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(g_peer_note, sizeof g_peer_note, "popen failed: peers n/a");
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, p)) {
        peer_rec r;
        if (strncmp(line, "info ", 5) == 0) {
            if (g_npeer_info < 4) {
                size_t len = strcspn(line + 5, "\n");
                if (len >= sizeof g_peer_info[0]) len = sizeof g_peer_info[0] - 1;
                memcpy(g_peer_info[g_npeer_info], line + 5, len);
                g_peer_info[g_npeer_info++][len] = 0;
            }
        } else if (sscanf(line, "%15s %23s %lld %lf", r.peer, r.op, &r.n, &r.sec) == 4 && r.sec > 0 &&
                   g_nrecs < MAX_PEER_RECS) {
            g_recs[g_nrecs++] = r;
        }
    }
    int st = pclose(p);
    if (st != 0) {
        int code = st < 0 ? st : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        if (g_nrecs == 0)
            snprintf(g_peer_note, sizeof g_peer_note, "peer script failed (exit %d): peers n/a", code);
        else
            snprintf(g_peer_note, sizeof g_peer_note, "peer script exited with %d (partial results)", code);
    }
}

static double peer_time(const char *peer, const char *op, int64_t n) {
    for (int i = 0; i < g_nrecs; i++)
        if (g_recs[i].n == n && strcmp(g_recs[i].peer, peer) == 0 && strcmp(g_recs[i].op, op) == 0)
            return g_recs[i].sec;
    return -1.0;
}

/* ------------------------------------------------------------- output */

static void size_label(int64_t n, char *buf, size_t len) {
    if (n >= (1 << 20) && n % (1 << 20) == 0)
        snprintf(buf, len, "%lldM", (long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, len, "%lldK", (long long)(n >> 10));
    else
        snprintf(buf, len, "%lld", (long long)n);
}

static void fmt_us(double sec, char *buf, size_t len) {
    if (sec <= 0)
        snprintf(buf, len, "n/a");
    else if (sec < 1e-3)
        snprintf(buf, len, "%.3f", sec * 1e6);
    else
        snprintf(buf, len, "%.1f", sec * 1e6);
}

static void fmt_ratio(double peer, double wick, char *buf, size_t len) {
    if (peer <= 0 || wick <= 0)
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, "%.2fx", peer / wick);
}

#define HDR_FMT "%-8s %6s %11s %11s %11s %9s %9s %8s %6s %7s\n"

static void print_header(void) {
    printf(HDR_FMT, "op", "size", "wick us", "torch us", "numpy us", "vs torch", "vs numpy", "GB/s", "%copy",
           "Gel/s");
    printf("%.*s\n", 95, "-----------------------------------------------------------------------------------"
                         "----------------------------------------");
}

static void print_row(const char *op, const char *size, double w, double t, double np, double bytes,
                      int64_t n, double copy_gbs, int show_pct) {
    char ws[32], ts[32], ns[32], rt[32], rn[32], gb[32] = "-", pc[32] = "-", ge[32] = "-";
    fmt_us(w, ws, sizeof ws);
    fmt_us(t, ts, sizeof ts);
    fmt_us(np, ns, sizeof ns);
    fmt_ratio(t, w, rt, sizeof rt);
    fmt_ratio(np, w, rn, sizeof rn);
    if (w > 0 && bytes > 0) {
        snprintf(gb, sizeof gb, "%.1f", bytes / w / 1e9);
        if (show_pct && copy_gbs > 0) snprintf(pc, sizeof pc, "%.0f%%", 100.0 * bytes / w / 1e9 / copy_gbs);
    }
    if (w > 0 && n > 0) snprintf(ge, sizeof ge, "%.2f", (double)n / w / 1e9);
    printf(HDR_FMT, op, size, ws, ts, ns, rt, rn, gb, pc, ge);
}

/* ---------------------------------------------------------------- main */

static int parse_threads(const char *s) {
    opt.nthreads = 0;
    while (*s && opt.nthreads < MAX_THREADS_LIST) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 1024) return -1;
        opt.threads[opt.nthreads++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return opt.nthreads > 0 ? 0 : -1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench_ops [--quick] [--threads 1,2] [--no-peers] [--peer-script PATH]\n"
            "                 [--python PATH] [--min-time SECONDS] [--repeats N] [--clock wall|cpu]\n"
            "  --quick        small sizes (1K, 64K), few iterations: a smoke run of a few seconds\n"
            "  --threads L    thread counts, one table each (default 1,2)\n"
            "  --no-peers     wick only (peer columns n/a)\n"
            "  --peer-script  path of peer_ops.py (default <source>/bench/peer_ops.py)\n"
            "  --python       interpreter for the peers (default /usr/bin/python3)\n"
            "  --min-time     seconds per timed repeat (default 0.05; quick 0.002)\n"
            "  --repeats      timed repeats, median reported (default 5; quick 3)\n"
            "  --clock cpu    time the 1-thread tables (wick and peers) by the calling thread's CPU\n"
            "                 time, not wall time: steadier on a loaded machine (default wall)\n");
}

int main(int argc, char **argv) {
    opt.python = "/usr/bin/python3";
    opt.min_time = -1;
    opt.repeats = -1;
    opt.threads[0] = 1;
    opt.threads[1] = 2;
    opt.nthreads = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            opt.quick = 1;
        } else if (strcmp(a, "--no-peers") == 0) {
            opt.no_peers = 1;
        } else if (strcmp(a, "--peer-script") == 0 && v) {
            opt.peer_script = v;
            i++;
        } else if (strcmp(a, "--python") == 0 && v) {
            opt.python = v;
            i++;
        } else if (strcmp(a, "--min-time") == 0 && v) {
            opt.min_time = atof(v);
            i++;
        } else if (strcmp(a, "--clock") == 0 && v && (strcmp(v, "cpu") == 0 || strcmp(v, "wall") == 0)) {
            opt.cpu_clock = strcmp(v, "cpu") == 0;
            i++;
        } else if (strcmp(a, "--repeats") == 0 && v) {
            opt.repeats = atoi(v);
            i++;
        } else if (strcmp(a, "--threads") == 0 && v) {
            if (parse_threads(v)) {
                usage(stderr);
                return 2;
            }
            i++;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_ops: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (opt.min_time <= 0) opt.min_time = opt.quick ? 0.002 : 0.05;
    if (opt.repeats < 1) opt.repeats = opt.quick ? 3 : 5;

    static const int64_t full_sizes[] = {1024, 65536, 1 << 20, 16 << 20};
    static const int64_t quick_sizes[] = {1024, 65536};
    const int64_t *sizes = opt.quick ? quick_sizes : full_sizes;
    int nsizes = opt.quick ? 2 : 4;

    int default_threads = wk_num_threads();
    printf("wick %s ops benchmark: isa %s, backends %s, default threads %d%s\n", WICK_VERSION_STRING,
           wk_cpu_isa(), wk_backends(), default_threads, opt.quick ? "  [--quick]" : "");
    printf("timing: median of %d repeats, each >= %.0f ms of calls, after warm-up; allocating ops "
           "(result allocated and freed every call)\n",
           opt.repeats, opt.min_time * 1e3);

    size_t copy_bytes = opt.quick ? (size_t)(1 << 20) * 4 : (size_t)(16 << 20) * 4;
    int copy_reps = opt.quick ? 3 : 10;
    double copy1 = copy_bandwidth(copy_bytes, 1, copy_reps);
    printf("copy bandwidth (memcpy %zu MiB into an existing buffer, best of %d, read+written): "
           "%.1f GB/s on 1 thread",
           copy_bytes >> 20, copy_reps, copy1);
    double copy_t[MAX_THREADS_LIST];
    for (int ti = 0; ti < opt.nthreads; ti++) {
        copy_t[ti] = opt.threads[ti] == 1 ? copy1 : copy_bandwidth(copy_bytes, opt.threads[ti], copy_reps);
        if (opt.threads[ti] != 1) printf(", %.1f GB/s on %d threads", copy_t[ti], opt.threads[ti]);
    }
    printf("\n");
    if (opt.quick) printf("(quick: the copy is of 4 MiB, in cache; GB/s figures are not meaningful)\n");

    if (wk_set_num_threads(1) != WK_OK) report_null("wk_set_num_threads");
    check_ops();
    printf("correctness check (2x1024, vs double reference): %s\n", g_failed ? "FAILED" : "ok");

    double exp1_cache = -1, exp1_big = -1, exp1_cache_t = -1, exp1_cache_np = -1, exp1_big_t = -1,
           exp1_big_np = -1;
    int64_t big = sizes[nsizes - 1];
    char bigl[24];
    size_label(big, bigl, sizeof bigl);

    for (int ti = 0; ti < opt.nthreads; ti++) {
        int T = opt.threads[ti];
        if (wk_set_num_threads(T) != WK_OK) {
            fprintf(stderr, "bench_ops: wk_set_num_threads(%d): %s\n", T, wk_last_error());
            wk_clear_error();
        }
        g_use_cpu_clock = opt.cpu_clock && T == 1;
        run_peers(T);

        /* wick, after the peers (so both run on a quiet process) */
        double wt[OP_COUNT][MAX_SIZES];
        double wexp_cache = -1;
        double copy_table = copy_t[ti];
        for (int si = 0; si < nsizes; si++) {
            int64_t shape[2];
            int rank;
            shape_of(sizes[si], shape, &rank);
            /* the copy again, just before the size it is compared with (the
             * host's bandwidth drifts by tens of % over a run) */
            if (si == nsizes - 1) copy_table = copy_bandwidth(copy_bytes, T, copy_reps);
            op_ctx c = {wk_rand(shape, rank, -4, 4, WK_F32, wk_cpu()), wk_rand(shape, rank, -4, 4, WK_F32, wk_cpu()),
                        0};
            for (int op = 0; op < OP_COUNT; op++) {
                c.op = op;
                wt[op][si] = c.a && c.b ? bench(op_once, &c) : -1;
                if (wt[op][si] < 0) report_null(op_names[op]);
            }
            wk_tensor_free(c.a);
            wk_tensor_free(c.b);
        }
        {
            int64_t shape[1] = {EXP_IN_CACHE};
            op_ctx c = {wk_rand(shape, 1, -4, 4, WK_F32, wk_cpu()), NULL, OP_EXP};
            wexp_cache = c.a ? bench(op_once, &c) : -1;
            if (wexp_cache < 0) report_null("exp 4K");
            wk_tensor_free(c.a);
        }
        double wtiny[TINY_COUNT];
        {
            int64_t s22[2] = {2, 2}, s1[1] = {1};
            wk_tensor *a2 = wk_rand(s22, 2, 0, 1, WK_F32, wk_cpu());
            wk_tensor *b2 = wk_rand(s22, 2, 0, 1, WK_F32, wk_cpu());
            wk_tensor *a1 = wk_rand(s1, 1, 0, 1, WK_F32, wk_cpu());
            for (int k = 0; k < TINY_COUNT; k++) {
                op_ctx c = {k == TINY_EXP ? a1 : a2, b2, k};
                wtiny[k] = c.a && c.b ? bench(tiny_once, &c) : -1;
                if (wtiny[k] < 0) report_null(tiny_names[k]);
            }
            wk_tensor_free(a2);
            wk_tensor_free(b2);
            wk_tensor_free(a1);
        }

        printf("\n=== %d thread%s (wk_set_num_threads(%d), torch.set_num_threads(%d); numpy elementwise is "
               "single-threaded) ===\n",
               T, T == 1 ? "" : "s", T, T);
        if (opt.cpu_clock)
            printf("clock: %s\n", g_use_cpu_clock ? "CPU time of the calling thread (--clock cpu), wick and peers"
                                                  : "wall (--clock cpu applies to 1-thread tables only)");
        for (int i = 0; i < g_npeer_info; i++) printf("peer: %s\n", g_peer_info[i]);
        if (g_peer_note[0]) printf("peer: %s\n", g_peer_note);
        printf("vs torch / vs numpy = peer time / wick time (> 1: wick faster). GB/s = bytes read + written "
               "once / wick time;\n%%copy = that / %.1f GB/s (the %d-thread copy, measured again just before "
               "wick's %s rows; elementwise ops only).\nGel/s = G elements/s of wick (per thread at 1 thread).\n",
               copy_table, T, bigl);
        print_header();
        for (int op = 0; op < OP_COUNT; op++) {
            for (int si = 0; si < nsizes; si++) {
                int64_t n = sizes[si];
                char sl[24];
                if (op == OP_EXP && si == 1) { /* the in-cache 4K row sits between 1K and 64K */
                    size_label(EXP_IN_CACHE, sl, sizeof sl);
                    print_row("exp", sl, wexp_cache, peer_time("torch", "exp", EXP_IN_CACHE),
                              peer_time("numpy", "exp", EXP_IN_CACHE), op_bytes(OP_EXP, EXP_IN_CACHE),
                              EXP_IN_CACHE, copy_table, 0);
                }
                size_label(n, sl, sizeof sl);
                print_row(op_names[op], sl, wt[op][si], peer_time("torch", op_names[op], n),
                          peer_time("numpy", op_names[op], n), op_bytes(op, n), n, copy_table,
                          n >= (16 << 20) && op <= OP_GELU);
            }
        }
        for (int k = 0; k < TINY_COUNT; k++)
            print_row(tiny_labels[k], tiny_sizes[k], wtiny[k], peer_time("torch", tiny_names[k], tiny_numel[k]),
                      peer_time("numpy", tiny_names[k], tiny_numel[k]), 0, 0, 0, 0);
        printf("(tiny rows: us per op; softmax = the composite x-max -> exp -> /sum, 5 allocating calls in every "
               "column");
        {
            char ts[32];
            fmt_us(peer_time("torch", "softmax_fused", big), ts, sizeof ts);
            printf("; torch.softmax fused at %lld: %s us)\n", (long long)big, ts);
        }
        if (T == 1) {
            exp1_cache = wexp_cache;
            exp1_big = wt[OP_EXP][nsizes - 1];
            exp1_cache_t = peer_time("torch", "exp", EXP_IN_CACHE);
            exp1_cache_np = peer_time("numpy", "exp", EXP_IN_CACHE);
            exp1_big_t = peer_time("torch", "exp", big);
            exp1_big_np = peer_time("numpy", "exp", big);
        }
    }

    if (exp1_cache > 0 && exp1_big > 0) {
        printf("\nexp, 1 thread: wick %.2f G elem/s/thread at 4K (in cache; goal >= 8)",
               EXP_IN_CACHE / exp1_cache / 1e9);
        if (exp1_cache_t > 0) printf(", torch %.2f", EXP_IN_CACHE / exp1_cache_t / 1e9);
        if (exp1_cache_np > 0) printf(", numpy %.2f", EXP_IN_CACHE / exp1_cache_np / 1e9);
        printf("; at %s: wick %.2f", bigl, (double)big / exp1_big / 1e9);
        if (exp1_big_t > 0) printf(", torch %.2f", (double)big / exp1_big_t / 1e9);
        if (exp1_big_np > 0) printf(", numpy %.2f", (double)big / exp1_big_np / 1e9);
        printf("\n");
    }
    if (g_failed) printf("\nbench_ops: some wick ops failed (see stderr)\n");
    return g_failed ? 1 : 0;
}
