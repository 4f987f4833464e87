/*
 * bench/gpu — wick's CUDA backend beside PyTorch on the same GPU, one run.
 *
 *   bench_gpu [--quick] [--json] [--no-peers] [--python PATH] [--peer-script PATH]
 *             [--cpu-dry-run]
 *
 * What it measures (the experiments of seeds 002/003, on CUDA):
 *  a) queueing: 500 chained adds x = x + y of 1M f32 and 5000 of 1024 f32 —
 *     time until the calls return, then wk_device_synchronize, then the
 *     readback of x (median of 5 rounds after a warm-up chain);
 *  b) first use of each op family right after wk_cuda(0) in this process:
 *     one call + synchronize + readback of one element, in ms (goal < 20 ms:
 *     kernels are compiled ahead of time, nothing is built on first use);
 *  c) the 1024x1024 f32 matmul timeline: when wk_matmul returns, after
 *     synchronize, after reading ONE element (wk_to_host of a 1-element
 *     narrow view), run 0 and the median of runs 1..5;
 *  d) GEMM TFLOP/s, f32 (no TF32) and bf16, 4096^2 and 8192^2: wall clock
 *     around N products + one synchronize, N chosen for >= 50 ms, median of 5
 *     (goal: within 5% of torch), plus a sanity check of two output elements;
 *  e) elementwise add at 256 MB per operand, GB/s counting 3 x bytes, beside
 *     a cudaMemcpyAsync device-to-device copy of 256 MB counting 2 x bytes
 *     (goal: add >= 90% of copy);
 *  f) host cost per queued op: 10000 adds of 16 f32, time until the calls
 *     return, per op in us (goal: below torch);
 *  i) index_select inside a chain of queued ops (issue 15: the id check no
 *     longer waits): h = h + index_select(table, ids, 0), a one-token
 *     embedding lookup per step from a [4096, 576] f32 table, 2000 steps
 *     (200 with --quick); host time until the calls return, per step (two
 *     ops) in us (goal: below torch); the result is checked after one
 *     synchronize. Before issue 15 each step waited for everything queued
 *     before it;
 *  h) the fused nn entries at SmolLM2-135M's sizes (9 query / 3 kv heads,
 *     D 64, hidden 576), f16 (f32 in the dry run): attention decode (Lq 1
 *     over Lk 512 / 2048 keys, k / v narrows of a 4096-position cache),
 *     causal prefill (Lq = Lk = 512), rms_norm (128 x 576) and rope_thd
 *     (1 x 128 x 9 x 64); us per call from N calls + one synchronize,
 *     median of 5; the peer runs the same shapes (torch's
 *     scaled_dot_product_attention where it has one);
 *  g) the device pool's counters after all of that (wk_device_memory_stats).
 *
 * WHY this shape: every GPU op only queues work, so each figure says which
 * clock it stops (call returned / synchronize / readback), and the peer is
 * measured in the same run, on the same GPU, right after wick, by
 * bench/gpu/torch_gpu_peer.py (one JSON object on stdout). The peer runs
 * AFTER wick's experiments, never at the same time, so the two do not share
 * the GPU while timed. Without python/torch/CUDA-in-torch the torch column
 * says n/a. Without a CUDA device (or a build without the backend) the
 * program prints "bench_gpu: no CUDA device: <reason>" and exits 0, so the
 * CI's --quick pass over bench_* stays green on GPU-less machines.
 *
 * Ops another part of the backend does not provide yet (WK_ERR_NOT_COMPILED:
 * conv2d, pooling, cumsum, sort, rand at the time of writing) give a row
 * "n/a (<status>: <message>)", never an abort.
 *
 * Exit status: 0 when every result that is checked was right (and when
 * there is no device); 1 when a wick op that the experiments need failed or
 * gave a wrong value. Goals missed do not change it.
 *
 * Checked here, on a machine WITHOUT a GPU: the no-device path; every
 * experiment, the peer (torch 1.13 on the CPU), its JSON and both outputs
 * through --cpu-dry-run (the same code on wk_cpu(), smaller sizes, no
 * CUDA copy); the weak fallback against a header and library without the
 * pool counters. NOT yet run on a GPU: the CUDA copy and every figure on a
 * device are untested until the device session (scripts/device-check.sh).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <wick/wick.h>

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../peer.h"

/* The device pool's counters: include/wick/wick.h declares them (and
 * defines WK_HAVE_MEMORY_STATS); against an older header they are declared
 * here as weak symbols, so the program still links and prints n/a. */
#ifndef WK_HAVE_MEMORY_STATS
typedef struct wk_memory_stats {
    size_t bytes_in_use, bytes_cached, peak_bytes_in_use;
    uint64_t cache_hits, cache_misses, alloc_failures;
} wk_memory_stats;
extern wk_status wk_device_memory_stats(wk_device *dev, wk_memory_stats *out) __attribute__((weak));
extern wk_status wk_device_release_cache(wk_device *dev, size_t *released) __attribute__((weak));
#define BENCH_STATS_AVAILABLE() (wk_device_memory_stats != NULL)
#define BENCH_RELEASE_AVAILABLE() (wk_device_release_cache != NULL)
#else
#define BENCH_STATS_AVAILABLE() 1
#define BENCH_RELEASE_AVAILABLE() 1
#endif

/* ------------------------------------------------------------- options */

static struct {
    int quick, json, no_peers;
    int cpu_dry_run; /* --cpu-dry-run: every path on wk_cpu(), for machines without a GPU */
    const char *python;
    const char *peer_script;
} opt;

static int g_failed; /* a needed wick op failed or a checked value was wrong */

/* ---------------------------------------------------------------- rows */

enum goal_kind {
    GOAL_NONE,        /* informative row */
    GOAL_UNDER_20MS,  /* first use: wick < 20 ms */
    GOAL_TORCH_5PCT,  /* GEMM: wick >= 0.95 x torch */
    GOAL_COPY_90PCT,  /* add: wick >= 90 (% of copy) */
    GOAL_BELOW_TORCH  /* host cost: wick < torch */
};

typedef struct row {
    char name[64];
    char unit[12];
    char peer_key[48]; /* key in the peer's JSON object ("" = none) */
    double wick;       /* NAN = not measured */
    double torch;      /* NAN = n/a */
    int higher_better; /* 1: throughput; 0: a time; -1: no direction (counters) */
    enum goal_kind goal;
    char err[200];     /* why wick has no figure */
} row;

#define MAX_ROWS 96
static row g_rows[MAX_ROWS];
static int g_nrows;

static row *add_row(const char *name, const char *unit, const char *peer_key, int higher_better, enum goal_kind goal) {
    if (g_nrows == MAX_ROWS) return &g_rows[MAX_ROWS - 1]; /* never reached: fixed row count */
    row *r = &g_rows[g_nrows++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%.63s", name);
    snprintf(r->unit, sizeof r->unit, "%.11s", unit);
    snprintf(r->peer_key, sizeof r->peer_key, "%.47s", peer_key ? peer_key : "");
    r->wick = NAN;
    r->torch = NAN;
    r->higher_better = higher_better;
    r->goal = goal;
    return r;
}

/* Records the pending wick error on row r ("n/a (STATUS: message)") and
 * clears it. `needed`: the experiment depends on the op (a failure). */
static void row_error(row *r, const char *what, int needed) {
    snprintf(r->err, sizeof r->err, "%s: %s: %s", what, wk_status_name(wk_last_status()), wk_last_error());
    wk_clear_error();
    if (needed) g_failed = 1;
}

static void fail_check(const char *fmt, const char *what, double got, double want) {
    fprintf(stderr, "bench_gpu: WRONG RESULT %s: ", what);
    fprintf(stderr, fmt, got, want);
    fputc('\n', stderr);
    g_failed = 1;
}

/* -------------------------------------------------------------- helpers */

/* Deterministic uniform values in [-1, 1) (xorshift64*). */
static void fill_uniform(float *v, size_t n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        uint64_t x = s * 0x2545F4914F6CDD1DULL;
        v[i] = (float)((double)(x >> 40) * (1.0 / 8388608.0) - 1.0);
    }
}

static wk_tensor *from_host_f32(const float *v, const int64_t *shape, int rank, wk_device *dev) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
    return wk_from_host(v, n * sizeof(float), shape, rank, WK_F32, dev);
}

/* A tensor of `value` everywhere: wk_full on the device, else a host buffer. */
static wk_tensor *filled(const int64_t *shape, int rank, double value, wk_dtype dt, wk_device *dev) {
    wk_tensor *t = wk_full(shape, rank, value, dt, dev);
    if (t || dt != WK_F32) return t;
    wk_clear_error();
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
    float *h = malloc(n * sizeof *h);
    if (!h) return NULL;
    for (size_t i = 0; i < n; i++) h[i] = (float)value;
    t = from_host_f32(h, shape, rank, dev);
    free(h);
    return t;
}

/* Reads element `flat` (row-major) of t through a 1-element narrow view:
 * moves only that element. NAN (error kept) on failure. */
static double read_element(const wk_tensor *t, int64_t flat) {
    int rank = wk_rank(t);
    int64_t idx[WK_MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        int64_t n = wk_dim(t, d);
        idx[d] = n > 0 ? flat % n : 0;
        flat = n > 0 ? flat / n : 0;
    }
    wk_tensor *v = wk_tensor_retain((wk_tensor *)t);
    for (int d = 0; d < rank && v; d++) {
        wk_tensor *nv = wk_narrow(v, d, idx[d], 1);
        wk_tensor_free(v);
        v = nv;
    }
    double out = NAN;
    if (v && wk_tensor_dtype(v) == WK_F32) { /* the plain readback: 4 bytes into a float */
        float f;
        if (wk_to_host(v, &f, sizeof f) == WK_OK) out = f;
    } else if (v && wk_to_host_f64(v, &out, 1) != WK_OK) {
        out = NAN;
    }
    wk_tensor_free(v);
    return out;
}

static double first_element(const wk_tensor *t) { return read_element(t, 0); }

static double ms_since(double t0) { return (bench_now() - t0) * 1e3; }

/* ------------------------------------------------- a) queue experiment */

/* One chain: x = x + y, `steps` times, from x = 0, y = 1. Times in ms. */
static int queue_chain(wk_device *dev, int64_t len, int steps, double *t_queue, double *t_sync, double *t_read) {
    int64_t shape[1] = {len};
    wk_tensor *y = filled(shape, 1, 1.0, WK_F32, dev);
    wk_tensor *x = wk_zeros(shape, 1, WK_F32, dev);
    float *host = malloc((size_t)len * sizeof *host);
    int ok = y && x && host && wk_device_synchronize(dev) == WK_OK;
    if (ok) {
        double t0 = bench_now();
        for (int i = 0; i < steps && x; i++) {
            wk_tensor *nx = wk_add(x, y);
            wk_tensor_free(x);
            x = nx;
        }
        *t_queue = ms_since(t0);
        double t1 = bench_now();
        ok = x && wk_device_synchronize(dev) == WK_OK;
        *t_sync = ms_since(t1);
        double t2 = bench_now();
        ok = ok && wk_to_host(x, host, (size_t)len * sizeof *host) == WK_OK;
        *t_read = ms_since(t2);
        if (ok) {
            int64_t probe[3] = {0, len / 2, len - 1};
            for (int i = 0; i < 3; i++)
                if (host[probe[i]] != (float)steps) {
                    fail_check("got %g, want %g", "queue chain x[i]", host[probe[i]], steps);
                    break;
                }
        }
    }
    free(host);
    wk_tensor_free(x);
    wk_tensor_free(y);
    return ok ? 0 : -1;
}

static void exp_queue(wk_device *dev) {
    struct {
        int64_t len;
        int steps;
        const char *key;
    } cases[2] = {
        {1 << 20, opt.quick ? 50 : 500, "queue_big"},
        {1024, opt.quick ? 500 : 5000, "queue_small"},
    };
    for (int c = 0; c < 2; c++) {
        char name[3][64], key[3][48];
        const char *phase[3] = {"queue", "sync", "read"};
        const char *phase_name[3] = {"calls returned", "synchronize", "readback"};
        row *r[3];
        for (int p = 0; p < 3; p++) {
            snprintf(name[p], sizeof name[p], "a) %d x add %s f32: %s", cases[c].steps,
                     cases[c].len == 1024 ? "1024" : "1M", phase_name[p]);
            snprintf(key[p], sizeof key[p], "%s_%s_ms", cases[c].key, phase[p]);
            r[p] = add_row(name[p], "ms", key[p], 0, GOAL_NONE);
        }
        double q, s, rd, tq[5], ts[5], tr[5];
        if (queue_chain(dev, cases[c].len, 10, &q, &s, &rd) != 0) { /* warm-up */
            row_error(r[0], "wk_add chain", 1);
            continue;
        }
        int reps = opt.quick ? 3 : 5, done = 0;
        for (; done < reps; done++)
            if (queue_chain(dev, cases[c].len, cases[c].steps, &tq[done], &ts[done], &tr[done]) != 0) break;
        if (done < reps) {
            row_error(r[0], "wk_add chain", 1);
            continue;
        }
        r[0]->wick = bench_median(tq, reps);
        r[1]->wick = bench_median(ts, reps);
        r[2]->wick = bench_median(tr, reps);
    }
}

/* ------------------------------------------------ b) first use per family */

typedef struct first_ctx {
    wk_device *dev;
    wk_tensor *x;        /* f32 [1024] */
    wk_tensor *m32, *mb; /* f32 / bf16 [256, 256] */
    wk_tensor *table;    /* f32 [64, 32] */
    wk_tensor *ids;      /* u32 [8] */
    wk_tensor *img;      /* f32 [1, 3, 16, 16] */
    wk_tensor *wconv;    /* f32 [8, 3, 3, 3] */
    wk_tensor *fmap;     /* f32 [1, 8, 16, 16] */
} first_ctx;

static wk_tensor *fu_zeros(first_ctx *c) {
    int64_t s[1] = {1024};
    return wk_zeros(s, 1, WK_F32, c->dev);
}
static wk_tensor *fu_fill(first_ctx *c) {
    int64_t s[1] = {1024};
    return wk_full(s, 1, 2.5, WK_F32, c->dev);
}
static wk_tensor *fu_cast(first_ctx *c) { return wk_to_dtype(c->x, WK_BF16); }
static wk_tensor *fu_unary(first_ctx *c) { return wk_exp(c->x); }
static wk_tensor *fu_binary(first_ctx *c) { return wk_add(c->x, c->x); }
static wk_tensor *fu_reduce(first_ctx *c) {
    int d = -1;
    return wk_sum(c->x, &d, 1, false);
}
static wk_tensor *fu_mm_f32(first_ctx *c) { return wk_matmul(c->m32, c->m32); }
static wk_tensor *fu_mm_bf16(first_ctx *c) { return c->mb ? wk_matmul(c->mb, c->mb) : NULL; }
static wk_tensor *fu_index_select(first_ctx *c) { return wk_index_select(c->table, c->ids, 0); }
static wk_tensor *fu_conv2d(first_ctx *c) {
    wk_conv_params p = {.padding = 1, .stride = 1, .dilation = 1, .groups = 1};
    return wk_conv2d(c->img, c->wconv, &p);
}
static wk_tensor *fu_max_pool2d(first_ctx *c) { return wk_max_pool2d(c->fmap, 2, 2, 2, 2, 0, 0); }
static wk_tensor *fu_cumsum(first_ctx *c) { return wk_cumsum(c->x, 0); }
static wk_tensor *fu_sort(first_ctx *c) {
    wk_tensor *v = NULL, *i = NULL;
    if (wk_sort(c->x, 0, false, &v, &i) != WK_OK) return NULL;
    wk_tensor_free(i);
    return v;
}
static wk_tensor *fu_rand(first_ctx *c) {
    int64_t s[1] = {1024};
    return wk_rand(s, 1, 0.0, 1.0, WK_F32, c->dev);
}

typedef struct first_op {
    const char *name, *key;
    wk_tensor *(*fn)(first_ctx *);
} first_op;

static const first_op k_first_ops[] = {
    {"zeros", "first_zeros_ms", fu_zeros},
    {"fill (wk_full)", "first_fill_ms", fu_fill},
    {"cast f32->bf16", "first_cast_ms", fu_cast},
    {"unary (exp)", "first_unary_ms", fu_unary},
    {"binary (add)", "first_binary_ms", fu_binary},
    {"reduce (sum)", "first_reduce_ms", fu_reduce},
    {"matmul f32 256", "first_matmul_f32_ms", fu_mm_f32},
    {"matmul bf16 256", "first_matmul_bf16_ms", fu_mm_bf16},
    {"index_select", "first_index_select_ms", fu_index_select},
    {"conv2d 3x3", "first_conv2d_ms", fu_conv2d},
    {"max_pool2d 2x2", "first_max_pool2d_ms", fu_max_pool2d},
    {"cumsum", "first_cumsum_ms", fu_cumsum},
    {"sort", "first_sort_ms", fu_sort},
    {"rand", "first_rand_ms", fu_rand},
};
#define N_FIRST_OPS ((int)(sizeof k_first_ops / sizeof k_first_ops[0]))

/* Inputs from the host (an H2D copy, no kernel), made before any timing. */
static int first_inputs(first_ctx *c) {
    float *h = malloc(256 * 256 * sizeof *h);
    if (!h) return -1;
    fill_uniform(h, 256 * 256, 7);
    int64_t sx[1] = {1024}, sm[2] = {256, 256}, st[2] = {64, 32}, si[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3},
            sf[4] = {1, 8, 16, 16};
    c->x = from_host_f32(h, sx, 1, c->dev);
    c->m32 = from_host_f32(h, sm, 2, c->dev);
    c->table = from_host_f32(h, st, 2, c->dev);
    c->img = from_host_f32(h, si, 4, c->dev);
    c->wconv = from_host_f32(h + 1000, sw, 4, c->dev);
    c->fmap = from_host_f32(h + 3000, sf, 4, c->dev);
    /* bf16 from host-rounded values: the cast kernel is a row of its own */
    uint16_t *hb = malloc(256 * 256 * sizeof *hb);
    if (hb) {
        for (int i = 0; i < 256 * 256; i++) hb[i] = wk_f32_to_bf16(h[i]);
        c->mb = wk_from_host(hb, 256 * 256 * sizeof *hb, sm, 2, WK_BF16, c->dev);
    }
    free(hb);
    uint32_t ids[8] = {3, 0, 63, 7, 7, 12, 40, 1};
    int64_t sids[1] = {8};
    c->ids = wk_from_host(ids, sizeof ids, sids, 1, WK_U32, c->dev);
    free(h);
    int ok = c->x && c->m32 && c->mb && c->table && c->ids && c->img && c->wconv && c->fmap;
    return ok && wk_device_synchronize(c->dev) == WK_OK ? 0 : -1;
}

static void first_free(first_ctx *c) {
    wk_tensor *all[] = {c->x, c->m32, c->mb, c->table, c->ids, c->img, c->wconv, c->fmap};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wk_tensor_free(all[i]);
}

static void exp_first_use(wk_device *dev, double open_ms) {
    row *ro = add_row("b) wk_cuda(0) open (context, cuBLAS)", "ms", "open_ms", 0, GOAL_NONE);
    ro->wick = open_ms;
    first_ctx c = {.dev = dev};
    row *rows[N_FIRST_OPS];
    for (int i = 0; i < N_FIRST_OPS; i++) {
        char name[64];
        snprintf(name, sizeof name, "b) first use: %s", k_first_ops[i].name);
        rows[i] = add_row(name, "ms", k_first_ops[i].key, 0, GOAL_UNDER_20MS);
    }
    /* zeros and fill come first: they need no input tensors */
    int have_inputs = 0;
    for (int i = 0; i < N_FIRST_OPS; i++) {
        if (i == 2) {
            have_inputs = first_inputs(&c) == 0;
            if (!have_inputs) {
                for (int j = 2; j < N_FIRST_OPS; j++) row_error(rows[j], "creating the inputs", 1);
                break;
            }
        }
        double t0 = bench_now();
        wk_tensor *out = k_first_ops[i].fn(&c);
        double v = NAN;
        if (out && wk_device_synchronize(dev) == WK_OK) v = first_element(out);
        double ms = ms_since(t0);
        if (!out || isnan(v)) {
            /* core families are needed; the others may not be written yet */
            int needed = i <= 7 && wk_last_status() != WK_ERR_NOT_COMPILED;
            row_error(rows[i], k_first_ops[i].name, needed);
        } else {
            rows[i]->wick = ms;
        }
        wk_tensor_free(out);
    }
    first_free(&c);
}

/* ------------------------------------------- c) 1024^2 matmul timeline */

static void exp_matmul_timeline(wk_device *dev) {
    const int64_t n = 1024;
    const char *names[6] = {"c) mm 1024 f32 run 0: matmul returned", "c) mm 1024 f32 run 0: after synchronize",
                            "c) mm 1024 f32 run 0: after 1-elem read", "c) mm 1024 f32 runs 1-5: returned",
                            "c) mm 1024 f32 runs 1-5: after sync", "c) mm 1024 f32 runs 1-5: after 1-elem read"};
    const char *keys[6] = {"mm1024_run0_ret_ms", "mm1024_run0_sync_ms", "mm1024_run0_read_ms",
                           "mm1024_ret_ms",      "mm1024_sync_ms",      "mm1024_read_ms"};
    row *r[6];
    for (int i = 0; i < 6; i++) r[i] = add_row(names[i], "ms", keys[i], 0, GOAL_NONE);
    float *h = malloc((size_t)(n * n) * sizeof *h);
    if (!h) return;
    int64_t shape[2] = {n, n};
    fill_uniform(h, (size_t)(n * n), 11);
    wk_tensor *a = from_host_f32(h, shape, 2, dev);
    fill_uniform(h, (size_t)(n * n), 12);
    wk_tensor *b = from_host_f32(h, shape, 2, dev);
    free(h);
    if (!a || !b || wk_device_synchronize(dev) != WK_OK) {
        row_error(r[0], "inputs", 1);
        wk_tensor_free(a);
        wk_tensor_free(b);
        return;
    }
    enum { RUNS = 6 };
    double ret[RUNS], syn[RUNS], rd[RUNS];
    for (int run = 0; run < RUNS; run++) {
        double t0 = bench_now();
        wk_tensor *cm = wk_matmul(a, b);
        ret[run] = ms_since(t0);
        wk_status st = cm ? wk_device_synchronize(dev) : WK_ERR_INTERNAL;
        syn[run] = ms_since(t0);
        double v = st == WK_OK ? first_element(cm) : NAN;
        rd[run] = ms_since(t0);
        wk_tensor_free(cm);
        if (isnan(v)) {
            row_error(r[0], "wk_matmul 1024 f32", 1);
            wk_tensor_free(a);
            wk_tensor_free(b);
            return;
        }
    }
    r[0]->wick = ret[0];
    r[1]->wick = syn[0];
    r[2]->wick = rd[0];
    r[3]->wick = bench_median(ret + 1, RUNS - 1);
    r[4]->wick = bench_median(syn + 1, RUNS - 1);
    r[5]->wick = bench_median(rd + 1, RUNS - 1);
    wk_tensor_free(a);
    wk_tensor_free(b);
}

/* ----------------------------------------------------- d) GEMM TFLOP/s */

/* Checks c[i][j] against a double dot product of the host inputs. */
static void check_gemm_element(const wk_tensor *c, const float *ha, const float *hb, int64_t n, int64_t i, int64_t j,
                               double rel_tol, const char *what) {
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < n; k++) {
        double p = (double)ha[i * n + k] * (double)hb[k * n + j];
        ref += p;
        mag += fabs(p);
    }
    double got = read_element(c, i * n + j);
    if (!(fabs(got - ref) <= rel_tol * mag + 1e-6)) fail_check("got %.9g, want %.9g", what, got, ref);
}

static void gemm_one(wk_device *dev, int64_t n, wk_dtype dt, row *r) {
    size_t count = (size_t)(n * n);
    float *ha = malloc(count * sizeof *ha), *hb = malloc(count * sizeof *hb);
    if (!ha || !hb) {
        free(ha);
        free(hb);
        snprintf(r->err, sizeof r->err, "host out of memory");
        return;
    }
    fill_uniform(ha, count, 21 + (uint64_t)n);
    fill_uniform(hb, count, 22 + (uint64_t)n);
    int64_t shape[2] = {n, n};
    wk_tensor *a = NULL, *b = NULL;
    if (dt == WK_F32) {
        a = from_host_f32(ha, shape, 2, dev);
        b = from_host_f32(hb, shape, 2, dev);
    } else { /* bf16: round on the host, keep the rounded values for the check */
        uint16_t *t = malloc(count * sizeof *t);
        if (t) {
            for (size_t i = 0; i < count; i++) {
                t[i] = wk_f32_to_bf16(ha[i]);
                ha[i] = wk_bf16_to_f32(t[i]);
            }
            a = wk_from_host(t, count * sizeof *t, shape, 2, dt, dev);
            for (size_t i = 0; i < count; i++) {
                t[i] = wk_f32_to_bf16(hb[i]);
                hb[i] = wk_bf16_to_f32(t[i]);
            }
            b = wk_from_host(t, count * sizeof *t, shape, 2, dt, dev);
            free(t);
        }
    }
    double flop = 2.0 * (double)n * (double)n * (double)n;
    if (!a || !b || wk_device_synchronize(dev) != WK_OK) {
        row_error(r, "inputs", 1);
        goto done;
    }
    /* warm-up (2 products), then the time of one product sets N */
    double t1 = 0;
    for (int w = 0; w < 3; w++) {
        double t0 = bench_now();
        wk_tensor *c = wk_matmul(a, b);
        if (!c || wk_device_synchronize(dev) != WK_OK) {
            wk_tensor_free(c);
            row_error(r, "wk_matmul", 1);
            goto done;
        }
        t1 = bench_now() - t0;
        if (w == 0) {
            char what[48];
            snprintf(what, sizeof what, "matmul %s %lld", wk_dtype_name(dt), (long long)n);
            double tol = dt == WK_F32 ? 1e-4 : 1e-2;
            check_gemm_element(c, ha, hb, n, 0, 0, tol, what);
            check_gemm_element(c, ha, hb, n, n - 1, n - 2, tol, what);
        }
        wk_tensor_free(c);
    }
    double target = opt.quick ? 0.02 : 0.05;
    int iters = t1 > 0 ? (int)ceil(target / t1) : 10;
    if (iters < 1) iters = 1;
    if (iters > 500) iters = 500;
    int reps = opt.quick ? 2 : 5;
    double tf[8];
    for (int rep = 0; rep < reps; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < iters; i++) {
            wk_tensor *c = wk_matmul(a, b);
            if (!c) {
                row_error(r, "wk_matmul", 1);
                goto done;
            }
            wk_tensor_free(c);
        }
        if (wk_device_synchronize(dev) != WK_OK) {
            row_error(r, "wk_device_synchronize", 1);
            goto done;
        }
        tf[rep] = flop * iters / (bench_now() - t0) / 1e12;
    }
    r->wick = bench_median(tf, reps);
done:
    wk_tensor_free(a);
    wk_tensor_free(b);
    free(ha);
    free(hb);
}

static int64_t g_gemm_sizes[2] = {4096, 8192};

static void exp_gemm(wk_device *dev) {
    const int64_t *sizes = g_gemm_sizes;
    wk_dtype dts[2] = {WK_BF16, WK_F32};
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 2; s++) {
            char name[64], key[48];
            snprintf(name, sizeof name, "d) GEMM %s %lld^2", wk_dtype_name(dts[d]), (long long)sizes[s]);
            snprintf(key, sizeof key, "gemm_%s_%lld_tflops", wk_dtype_name(dts[d]), (long long)sizes[s]);
            row *r = add_row(name, "TFLOP/s", key, 1, GOAL_TORCH_5PCT);
            gemm_one(dev, sizes[s], dts[d], r);
        }
}

/* ----------------------------------------- e) add bandwidth vs D2D copy */

static double copy_gbs(size_t bytes, int iters, int reps, char *err, size_t errlen) {
    void *src = NULL, *dst = NULL;
    cudaStream_t s = NULL;
    double best = NAN, v[8];
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess) e = cudaMalloc(&src, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&dst, bytes);
    if (e == cudaSuccess) e = cudaMemset(src, 1, bytes);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s); /* warm-up */
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    for (int rep = 0; rep < reps && e == cudaSuccess; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < iters && e == cudaSuccess; i++)
            e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        v[rep] = 2.0 * (double)bytes * iters / (bench_now() - t0) / 1e9;
    }
    if (e == cudaSuccess) best = bench_median(v, reps);
    else snprintf(err, errlen, "D2D copy: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
    if (s) cudaStreamDestroy(s);
    if (src) cudaFree(src);
    if (dst) cudaFree(dst);
    (void)cudaGetLastError();
    return best;
}

static void exp_bandwidth(wk_device *dev) {
    size_t bytes = opt.quick ? ((size_t)16 << 20) : ((size_t)256 << 20);
    int64_t n = (int64_t)(bytes / sizeof(float));
    int iters = opt.quick ? 10 : 20, reps = opt.quick ? 3 : 5;
    char name[64];
    snprintf(name, sizeof name, "e) add f32 %zu MB/operand (3 x bytes)", bytes >> 20);
    row *ra = add_row(name, "GB/s", "add_gbs", 1, GOAL_NONE);
    snprintf(name, sizeof name, "e) D2D copy %zu MB (2 x bytes)", bytes >> 20);
    row *rc = add_row(name, "GB/s", "copy_gbs", 1, GOAL_NONE);
    row *rp = add_row("e) add as % of copy bandwidth", "%", "add_pct_copy", 1, GOAL_COPY_90PCT);

    if (opt.cpu_dry_run) snprintf(rc->err, sizeof rc->err, "--cpu-dry-run: no CUDA copy");
    else rc->wick = copy_gbs(bytes, iters, reps, rc->err, sizeof rc->err);

    int64_t shape[1] = {n};
    wk_tensor *a = filled(shape, 1, 1.0, WK_F32, dev), *b = filled(shape, 1, 2.0, WK_F32, dev);
    if (!a || !b || wk_device_synchronize(dev) != WK_OK) {
        row_error(ra, "inputs", 1);
        goto done;
    }
    wk_tensor *c = wk_add(a, b); /* warm-up, and the pool then holds a block of this size */
    if (!c || wk_device_synchronize(dev) != WK_OK) {
        wk_tensor_free(c);
        row_error(ra, "wk_add", 1);
        goto done;
    }
    double v0 = first_element(c), v1 = read_element(c, n - 1);
    if (v0 != 3.0 || v1 != 3.0) fail_check("got %g, want %g", "add 1 + 2", v0 != 3.0 ? v0 : v1, 3.0);
    wk_tensor_free(c);
    double gbs[8];
    for (int rep = 0; rep < reps; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < iters; i++) {
            c = wk_add(a, b);
            if (!c) {
                row_error(ra, "wk_add", 1);
                goto done;
            }
            wk_tensor_free(c);
        }
        if (wk_device_synchronize(dev) != WK_OK) {
            row_error(ra, "wk_device_synchronize", 1);
            goto done;
        }
        gbs[rep] = 3.0 * (double)bytes * iters / (bench_now() - t0) / 1e9;
    }
    ra->wick = bench_median(gbs, reps);
    if (!isnan(rc->wick)) rp->wick = 100.0 * ra->wick / rc->wick;
done:
    wk_tensor_free(a);
    wk_tensor_free(b);
}

/* ------------------------------- i) index_select in a queued chain */

static void exp_index_chain(wk_device *dev) {
    const int steps = opt.quick ? 200 : 2000, reps = opt.quick ? 3 : 5, nids = 4;
    char name[96];
    snprintf(name, sizeof name, "i) queued index_select + add, per step (x%d)", steps);
    row *r = add_row(name, "us", "ix_chain_us", 0, GOAL_BELOW_TORCH);
    int64_t tshape[2] = {4096, 576}, hshape[2] = {1, 576}, ishape[1] = {1};
    wk_tensor *table = filled(tshape, 2, 1.0, WK_F32, dev), *h = NULL, *ids[4] = {NULL, NULL, NULL, NULL};
    double per[8];
    int ok = table != NULL;
    for (int i = 0; i < nids && ok; i++) { /* a few token ids, on the device before the clock starts */
        int64_t v = 17 + 1000 * i;
        ids[i] = wk_from_host(&v, sizeof v, ishape, 1, WK_I64, dev);
        ok = ids[i] != NULL;
    }
    if (!ok) {
        row_error(r, "inputs", 1);
        goto done;
    }
    for (int rep = -1; rep < reps; rep++) { /* rep -1: warm-up */
        wk_tensor_free(h);
        h = wk_zeros(hshape, 2, WK_F32, dev);
        if (!h || wk_device_synchronize(dev) != WK_OK) {
            row_error(r, "wk_zeros", 1);
            goto done;
        }
        const int n = rep < 0 ? 20 : steps;
        double t0 = bench_now();
        for (int i = 0; i < n; i++) {
            wk_tensor *row_t = wk_index_select(table, ids[i % nids], 0);
            wk_tensor *nh = row_t ? wk_add(h, row_t) : NULL;
            wk_tensor_free(row_t);
            if (!nh) {
                row_error(r, "wk_index_select / wk_add", 1);
                goto done;
            }
            wk_tensor_free(h);
            h = nh;
        }
        if (rep >= 0) per[rep] = (bench_now() - t0) * 1e6 / n;
        if (wk_device_synchronize(dev) != WK_OK) { /* not timed: also reports a bad id */
            row_error(r, "wk_device_synchronize", 1);
            goto done;
        }
        double got = first_element(h);
        if (got != (double)n) {
            fail_check("got %g, want %g", "index_select chain h[0]", got, (double)n);
            goto done;
        }
    }
    r->wick = bench_median(per, reps);
done:
    wk_tensor_free(h);
    for (int i = 0; i < nids; i++) wk_tensor_free(ids[i]);
    wk_tensor_free(table);
}

/* ------------------------------------------ f) host cost per tiny op */

static void exp_tiny(wk_device *dev) {
    int n_ops = opt.quick ? 1000 : 10000, reps = opt.quick ? 3 : 5;
    char name[64];
    snprintf(name, sizeof name, "f) host time per queued add, 16 f32 (x%d)", n_ops);
    row *r = add_row(name, "us", "tiny_add_us", 0, GOAL_BELOW_TORCH);
    int64_t shape[1] = {16};
    wk_tensor *a = filled(shape, 1, 1.0, WK_F32, dev), *b = filled(shape, 1, 2.0, WK_F32, dev);
    double per[8];
    if (!a || !b) {
        row_error(r, "inputs", 1);
        goto done;
    }
    for (int i = 0; i < 100; i++) wk_tensor_free(wk_add(a, b)); /* warm-up */
    if (wk_device_synchronize(dev) != WK_OK) {
        row_error(r, "wk_add", 1);
        goto done;
    }
    for (int rep = 0; rep < reps; rep++) {
        double t0 = bench_now();
        for (int i = 0; i < n_ops; i++) {
            wk_tensor *c = wk_add(a, b);
            if (!c) {
                row_error(r, "wk_add", 1);
                goto done;
            }
            wk_tensor_free(c);
        }
        per[rep] = (bench_now() - t0) * 1e6 / n_ops;
        if (wk_device_synchronize(dev) != WK_OK) { /* not timed */
            row_error(r, "wk_device_synchronize", 1);
            goto done;
        }
    }
    r->wick = bench_median(per, reps);
done:
    wk_tensor_free(a);
    wk_tensor_free(b);
}

/* ------------------------------------------ h) fused nn ops, SmolLM2 sizes */

typedef struct nn_ctx {
    wk_tensor *q1, *qp, *kc, *vc, *k512, *v512, *k2048, *v2048, *x, *w, *xr, *cs, *sn;
} nn_ctx;

static wk_tensor *nn_dec512(nn_ctx *c) {
    wk_attention_opts o = {.causal = true, .q_offset = 511};
    return wk_attention(c->q1, c->k512, c->v512, &o);
}
static wk_tensor *nn_dec2048(nn_ctx *c) {
    wk_attention_opts o = {.causal = true, .q_offset = 2047};
    return wk_attention(c->q1, c->k2048, c->v2048, &o);
}
static wk_tensor *nn_pre512(nn_ctx *c) {
    wk_attention_opts o = {.causal = true};
    return wk_attention(c->qp, c->k512, c->v512, &o);
}
static wk_tensor *nn_rms(nn_ctx *c) { return wk_rms_norm(c->x, c->w, 1e-5); }
static wk_tensor *nn_rope(nn_ctx *c) { return wk_rope_thd(c->xr, c->cs, c->sn, false); }

/* A tensor of uniform values in [-scale, scale) of dtype dt on dev. */
static wk_tensor *nn_rand(const int64_t *shape, int rank, double scale, wk_dtype dt, wk_device *dev, uint64_t seed) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
    float *h = malloc(n * sizeof *h);
    if (!h) return NULL;
    fill_uniform(h, n, seed);
    for (size_t i = 0; i < n; i++) h[i] *= (float)scale;
    wk_tensor *f = from_host_f32(h, shape, rank, dev);
    free(h);
    if (!f || dt == WK_F32) return f;
    wk_tensor *t = wk_to_dtype(f, dt);
    wk_tensor_free(f);
    return t;
}

static void exp_nn(wk_device *dev) {
    static const struct {
        const char *name, *key;
        wk_tensor *(*fn)(nn_ctx *);
    } ops[] = {
        {"h) attention decode Lk 512 (us/call)", "nn_att_dec512_us", nn_dec512},
        {"h) attention decode Lk 2048 (us/call)", "nn_att_dec2048_us", nn_dec2048},
        {"h) attention causal prefill 512 (us/call)", "nn_att_pre512_us", nn_pre512},
        {"h) rms_norm 128 x 576 (us/call)", "nn_rms_us", nn_rms},
        {"h) rope_thd 1x128x9x64 (us/call)", "nn_rope_us", nn_rope},
    };
    const int nops = (int)(sizeof ops / sizeof ops[0]);
    row *r[8];
    for (int i = 0; i < nops; i++) r[i] = add_row(ops[i].name, "us", ops[i].key, 0, GOAL_NONE);
    const wk_dtype dt = opt.cpu_dry_run ? WK_F32 : WK_F16;
    nn_ctx c;
    memset(&c, 0, sizeof c);
    int64_t s_q1[4] = {1, 9, 1, 64}, s_qp[4] = {1, 9, 512, 64}, s_c[4] = {1, 3, 4096, 64};
    int64_t s_x[2] = {128, 576}, s_w[1] = {576}, s_r[4] = {1, 128, 9, 64}, s_t[2] = {4096, 32};
    c.q1 = nn_rand(s_q1, 4, 1.0, dt, dev, 1);
    c.qp = nn_rand(s_qp, 4, 1.0, dt, dev, 2);
    c.kc = nn_rand(s_c, 4, 1.0, dt, dev, 3);
    c.vc = nn_rand(s_c, 4, 1.0, dt, dev, 4);
    c.x = nn_rand(s_x, 2, 2.0, dt, dev, 5);
    c.w = nn_rand(s_w, 1, 1.0, dt, dev, 6);
    c.xr = nn_rand(s_r, 4, 1.0, dt, dev, 7);
    wk_tensor *ct = nn_rand(s_t, 2, 1.0, dt, dev, 8), *st = nn_rand(s_t, 2, 1.0, dt, dev, 9);
    if (c.kc && c.vc) {
        c.k512 = wk_narrow(c.kc, 2, 0, 512);
        c.v512 = wk_narrow(c.vc, 2, 0, 512);
        c.k2048 = wk_narrow(c.kc, 2, 0, 2048);
        c.v2048 = wk_narrow(c.vc, 2, 0, 2048);
    }
    if (ct && st) { /* positions 1000.. of a precomputed table */
        c.cs = wk_narrow(ct, 0, 1000, 128);
        c.sn = wk_narrow(st, 0, 1000, 128);
    }
    wk_tensor **all = (wk_tensor **)&c;
    bool ok = true;
    for (size_t i = 0; i < sizeof c / sizeof(wk_tensor *); i++) ok = ok && all[i];
    if (!ok) {
        for (int i = 0; i < nops; i++) row_error(r[i], "inputs", 1);
        goto done;
    }
    for (int i = 0; i < nops; i++) {
        int n = opt.cpu_dry_run ? 3 : opt.quick ? 20 : 200, reps = opt.quick ? 3 : 5;
        double per[8];
        bool good = true;
        for (int w = 0; w < 3 && good; w++) { /* warm-up */
            wk_tensor *y = ops[i].fn(&c);
            good = y != NULL;
            wk_tensor_free(y);
        }
        good = good && wk_device_synchronize(dev) == WK_OK;
        for (int rep = 0; rep < reps && good; rep++) {
            double t0 = bench_now();
            for (int k = 0; k < n && good; k++) {
                wk_tensor *y = ops[i].fn(&c);
                good = y != NULL;
                wk_tensor_free(y);
            }
            good = good && wk_device_synchronize(dev) == WK_OK;
            per[rep] = (bench_now() - t0) * 1e6 / n;
        }
        if (!good) {
            row_error(r[i], ops[i].name, 1);
            continue;
        }
        r[i]->wick = bench_median(per, reps);
    }
done:
    for (size_t i = 0; i < sizeof c / sizeof(wk_tensor *); i++) wk_tensor_free(all[i]);
    wk_tensor_free(ct);
    wk_tensor_free(st);
}

/* ----------------------------------------------------- g) pool counters */

static void exp_pool(wk_device *dev) {
    row *r[7];
    r[0] = add_row("g) pool: bytes in use", "MB", "", -1, GOAL_NONE);
    r[1] = add_row("g) pool: bytes cached", "MB", "cached_mb", -1, GOAL_NONE);
    r[2] = add_row("g) pool: peak bytes in use", "MB", "peak_mb", -1, GOAL_NONE);
    r[3] = add_row("g) pool: cache hits", "count", "", -1, GOAL_NONE);
    r[4] = add_row("g) pool: cache misses (device allocs)", "count", "device_allocs", -1, GOAL_NONE);
    r[5] = add_row("g) pool: allocation failures", "count", "alloc_failures", -1, GOAL_NONE);
    r[6] = add_row("g) pool: released by release_cache", "MB", "", -1, GOAL_NONE);
    if (!BENCH_STATS_AVAILABLE()) {
        for (int i = 0; i < 6; i++) snprintf(r[i]->err, sizeof r[i]->err, "wk_device_memory_stats not in this library");
    } else {
        wk_memory_stats s;
        memset(&s, 0, sizeof s);
        if (wk_device_synchronize(dev) != WK_OK || wk_device_memory_stats(dev, &s) != WK_OK) {
            row_error(r[0], "wk_device_memory_stats", 1);
        } else {
            r[0]->wick = (double)s.bytes_in_use / 1048576.0;
            r[1]->wick = (double)s.bytes_cached / 1048576.0;
            r[2]->wick = (double)s.peak_bytes_in_use / 1048576.0;
            r[3]->wick = (double)s.cache_hits;
            r[4]->wick = (double)s.cache_misses;
            r[5]->wick = (double)s.alloc_failures;
        }
    }
    if (!BENCH_RELEASE_AVAILABLE()) {
        snprintf(r[6]->err, sizeof r[6]->err, "wk_device_release_cache not in this library");
    } else {
        size_t released = 0;
        if (wk_device_release_cache(dev, &released) != WK_OK) row_error(r[6], "wk_device_release_cache", 1);
        else r[6]->wick = (double)released / 1048576.0;
    }
}

/* ------------------------------------------------------------- the peer */

static char g_peer_json[16384];
static char g_peer_note[256];

static const char *default_peer_script(void) {
    static char path[1024];
#ifdef WICK_SOURCE_DIR
    snprintf(path, sizeof path, "%s/bench/gpu/torch_gpu_peer.py", WICK_SOURCE_DIR);
    if (access(path, R_OK) == 0) return path;
#endif
    snprintf(path, sizeof path, "bench/gpu/torch_gpu_peer.py");
    return path;
}

/* Runs the peer to completion (after wick's experiments: the GPU is not
 * shared while either side is timed) and keeps its last JSON line. */
static void run_peer(void) {
    g_peer_json[0] = 0;
    const char *script = opt.peer_script ? opt.peer_script : default_peer_script();
    if (access(script, R_OK) != 0) {
        snprintf(g_peer_note, sizeof g_peer_note, "peer script %.200s not found", script);
        return;
    }
    char cmd[2400];
    /* timeout: a hung peer must not hang the device check (its budget for
     * the whole benchmark is 120 s; the peer needs ~15 s on an H200) */
    snprintf(cmd, sizeof cmd, "timeout 90 '%s' '%s' --gemm-sizes %lld,%lld%s%s", opt.python, script,
             (long long)g_gemm_sizes[0], (long long)g_gemm_sizes[1], opt.quick ? " --quick" : "",
             opt.cpu_dry_run ? " --device cpu" : "");
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(g_peer_note, sizeof g_peer_note, "cannot start %s", opt.python);
        return;
    }
    char line[16384];
    while (fgets(line, sizeof line, p))
        if (line[0] == '{') snprintf(g_peer_json, sizeof g_peer_json, "%s", line);
    int st = pclose(p);
    if (!g_peer_json[0])
        snprintf(g_peer_note, sizeof g_peer_note,
                 "peer printed no result (exit status %d%s; is %.100s a python with torch?)",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFEXITED(st) && WEXITSTATUS(st) == 124 ? ", timed out" : "",
                 opt.python);
}

/* Number value of "key" in the flat JSON object; NAN when absent or null. */
static double peer_number(const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(g_peer_json, pat);
    if (!p) return NAN;
    p += strlen(pat);
    while (*p == ' ') p++;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

/* String value of "key" into out ("" when absent). */
static void peer_string(const char *key, char *out, size_t len) {
    out[0] = 0;
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(g_peer_json, pat);
    if (!p) return;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != '"') return;
    p++;
    size_t i = 0;
    while (*p && *p != '"' && i + 1 < len) {
        if (*p == '\\' && p[1]) p++;
        out[i++] = *p++;
    }
    out[i] = 0;
}

/* --------------------------------------------------------------- output */

static const char *goal_text(enum goal_kind g) {
    switch (g) {
    case GOAL_UNDER_20MS: return "< 20 ms";
    case GOAL_TORCH_5PCT: return ">= 95% of torch";
    case GOAL_COPY_90PCT: return ">= 90% of copy";
    case GOAL_BELOW_TORCH: return "< torch";
    default: return "-";
    }
}

/* "yes", "NO", "n/a" (no figure to judge) or "-" (no goal). */
static const char *goal_met(const row *r) {
    if (r->goal == GOAL_NONE) return "-";
    if (isnan(r->wick)) return "n/a";
    switch (r->goal) {
    case GOAL_UNDER_20MS: return r->wick < 20.0 ? "yes" : "NO";
    case GOAL_COPY_90PCT: return r->wick >= 90.0 ? "yes" : "NO";
    case GOAL_TORCH_5PCT: return isnan(r->torch) ? "n/a" : r->wick >= 0.95 * r->torch ? "yes" : "NO";
    case GOAL_BELOW_TORCH: return isnan(r->torch) ? "n/a" : r->wick < r->torch ? "yes" : "NO";
    default: return "-";
    }
}

/* > 1: wick is faster / better. NAN when there is no direction or figure. */
static double speedup(const row *r) {
    if (r->higher_better < 0 || isnan(r->wick) || isnan(r->torch) || r->wick <= 0 || r->torch <= 0) return NAN;
    return r->higher_better ? r->wick / r->torch : r->torch / r->wick;
}

static void fmt_value(char *buf, size_t len, double v) {
    if (isnan(v)) snprintf(buf, len, "n/a");
    else if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, len, "%.0f", v);
    else if (fabs(v) >= 1000) snprintf(buf, len, "%.0f", v);
    else if (fabs(v) >= 100) snprintf(buf, len, "%.1f", v);
    else if (fabs(v) >= 1) snprintf(buf, len, "%.2f", v);
    else snprintf(buf, len, "%.4f", v);
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch < 0x20) putchar(' ');
        else putchar(ch);
    }
    putchar('"');
}

static void json_number(double v) {
    if (isnan(v) || isinf(v)) printf("null");
    else printf("%.6g", v);
}

static void print_json(const char *device, const char *torch_ver) {
    printf("{\"bench\":\"gpu\",\"device\":");
    json_string(device);
    printf(",\"torch\":");
    json_string(torch_ver);
    printf(",\"quick\":%s}\n", opt.quick ? "true" : "false");
    for (int i = 0; i < g_nrows; i++) {
        const row *r = &g_rows[i];
        printf("{\"row\":");
        json_string(r->name);
        printf(",\"unit\":");
        json_string(r->unit);
        printf(",\"wick\":");
        json_number(r->wick);
        printf(",\"torch\":");
        json_number(r->torch);
        printf(",\"speedup\":");
        json_number(speedup(r));
        printf(",\"goal\":");
        json_string(goal_text(r->goal));
        printf(",\"met\":");
        json_string(goal_met(r));
        if (r->err[0]) {
            printf(",\"error\":");
            json_string(r->err);
        }
        printf("}\n");
    }
}

static void print_table(const char *device, const char *torch_ver) {
    printf("bench_gpu%s: %s; torch %s\n", opt.quick ? " --quick" : "", device, torch_ver);
    if (g_peer_note[0]) printf("torch column: n/a: %s\n", g_peer_note);
    printf("x torch: > 1 means wick is faster (torch time / wick time, or wick rate / torch rate)\n\n");
    printf("%-46s %-8s %10s %10s %8s  %-16s %s\n", "row", "unit", "wick", "torch", "x torch", "goal", "met");
    for (int i = 0; i < g_nrows; i++) {
        const row *r = &g_rows[i];
        char w[48], t[32], s[32];
        if (isnan(r->wick) && r->err[0]) {
            snprintf(w, sizeof w, "n/a");
        } else {
            fmt_value(w, sizeof w, r->wick);
        }
        fmt_value(t, sizeof t, r->torch);
        fmt_value(s, sizeof s, speedup(r));
        if (isnan(speedup(r))) snprintf(s, sizeof s, "-");
        printf("%-46s %-8s %10s %10s %8s  %-16s %s\n", r->name, r->unit, w, t, s, goal_text(r->goal), goal_met(r));
        if (isnan(r->wick) && r->err[0]) printf("    n/a (%.150s)\n", r->err);
    }
    int met = 0, judged = 0;
    for (int i = 0; i < g_nrows; i++) {
        const char *m = goal_met(&g_rows[i]);
        if (!strcmp(m, "yes") || !strcmp(m, "NO")) judged++;
        if (!strcmp(m, "yes")) met++;
    }
    printf("\ngoals met: %d of %d judged rows%s\n", met, judged, g_failed ? "; WRONG RESULTS or failed ops (see above)" : "");
}

/* ----------------------------------------------------------------- main */

/* wick's figures so far, to stderr as they come: if the program dies later
 * (or the peer hangs), the log still has them. */
static void progress(void) {
    static int done;
    for (; done < g_nrows; done++) {
        const row *r = &g_rows[done];
        if (r->err[0] && isnan(r->wick)) fprintf(stderr, "bench_gpu: %s: n/a (%s)\n", r->name, r->err);
        else fprintf(stderr, "bench_gpu: %s: %.6g %s\n", r->name, r->wick, r->unit);
    }
    fflush(stderr);
}

static void usage(void) {
    puts("usage: bench_gpu [--quick] [--json] [--no-peers] [--python PATH] [--peer-script PATH]\n"
         "  --quick        small sizes and few iterations (< 20 s on an H200)\n"
         "  --json         one JSON object per line (a header, then one per row)\n"
         "  --no-peers     do not run the PyTorch peer (torch column n/a)\n"
         "  --python PATH  python with torch for the peer (default: python3)\n"
         "  --peer-script  the peer script (default: <source>/bench/gpu/torch_gpu_peer.py)\n"
         "  --cpu-dry-run  run every experiment on the CPU device (implies --quick, smaller GEMMs;\n"
         "                 the peer on torch's CPU): checks the program itself where there is no GPU");
}

int main(int argc, char **argv) {
    opt.python = "python3";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) opt.quick = 1;
        else if (!strcmp(argv[i], "--json")) opt.json = 1;
        else if (!strcmp(argv[i], "--no-peers")) opt.no_peers = 1;
        else if (!strcmp(argv[i], "--cpu-dry-run")) opt.cpu_dry_run = opt.quick = 1;
        else if (!strcmp(argv[i], "--python") && i + 1 < argc) opt.python = argv[++i];
        else if (!strcmp(argv[i], "--peer-script") && i + 1 < argc) opt.peer_script = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        } else {
            fprintf(stderr, "bench_gpu: unknown option %s\n", argv[i]);
            usage();
            return 2;
        }
    }

    if (opt.quick) {
        g_gemm_sizes[0] = opt.cpu_dry_run ? 256 : 1024;
        g_gemm_sizes[1] = opt.cpu_dry_run ? 512 : 2048;
    }
    double t0 = bench_now();
    wk_device *dev = opt.cpu_dry_run ? wk_cpu() : wk_cuda(0);
    double open_ms = ms_since(t0);
    if (!dev) {
        printf("bench_gpu: no CUDA device: %s\n", wk_last_error());
        return 0;
    }
    char device[320];
    struct cudaDeviceProp prop;
    if (opt.cpu_dry_run)
        snprintf(device, sizeof device, "CPU DRY RUN (wick %s; figures are not GPU figures)", wk_device_name(dev));
    else if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(device, sizeof device, "%s (cc %d.%d, %.0f GiB), wick %s", prop.name, prop.major, prop.minor,
                 (double)prop.totalGlobalMem / 1073741824.0, wk_device_name(dev));
    else
        snprintf(device, sizeof device, "%s", wk_device_name(dev));
    (void)cudaGetLastError();

    /* first use must come first: nothing else may warm the kernels up */
    exp_first_use(dev, open_ms);
    progress();
    exp_queue(dev);
    progress();
    exp_matmul_timeline(dev);
    progress();
    exp_gemm(dev);
    progress();
    exp_bandwidth(dev);
    progress();
    exp_tiny(dev);
    progress();
    exp_index_chain(dev);
    progress();
    exp_nn(dev);
    progress();
    exp_pool(dev);
    progress();

    char torch_ver[128] = "n/a";
    if (opt.no_peers) {
        snprintf(g_peer_note, sizeof g_peer_note, "--no-peers");
    } else {
        run_peer();
        char err[256];
        peer_string("error", err, sizeof err);
        if (err[0]) snprintf(g_peer_note, sizeof g_peer_note, "%s", err);
        peer_string("torch", torch_ver, sizeof torch_ver);
        if (!torch_ver[0]) snprintf(torch_ver, sizeof torch_ver, "n/a");
    }
    for (int i = 0; i < g_nrows; i++)
        if (g_rows[i].peer_key[0]) g_rows[i].torch = peer_number(g_rows[i].peer_key);

    if (opt.json) print_json(device, torch_ver);
    else print_table(device, torch_ver);
    return g_failed ? 1 : 0;
}
