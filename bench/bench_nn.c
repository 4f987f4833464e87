/*
 * bench/nn — wick's fused nn ops beside wick's composites and PyTorch.
 *
 *   bench_nn [--quick] [--threads 1,2] [--no-peers] [--python PATH]
 *
 * Rows (f32, SmolLM2-135M sizes: 9 query heads / 3 kv heads of 64, hidden
 * 576, intermediate 1536):
 *   attention decode: q (1, 9, 1, 64), k / v narrows (1, 3, Lk, 64) of a
 *     (1, 3, 2048, 64) cache, Lk = 128, 512, 2048, q_offset Lk - 1, causal
 *   attention prefill: q (1, 9, L, 64), k / v (1, 3, L, 64), causal, L = 128, 512
 *   rope_thd (interleaved) on (1, 128, 9, 64), cos / sin (128, 32)
 *   rms_norm on (128, 576) and (1, 576); swiglu on (128, 3072)
 *   sliding window: the decode step over a (1, 3, 4096, 64) cache (q_offset
 *     4095), no window and window 512 (Mistral / Gemma 2 local layers); the
 *     fused entry reads only the window's keys, so the line after the table
 *     gives the ratio no window / window (8 would be the key count's; torch
 *     does it by hand by slicing the cache's last 512 keys)
 * Columns: "fused" is the CPU backend's entry (wk_attention, wk_rope_thd, ...
 * as a user calls them: result allocated and freed each call); "composite"
 * the same call with the entry removed from the backend table (src/nn/nn.c's
 * fallback of required ops); torch is PyTorch 1.13 (/usr/bin/python3) doing
 * it by hand, as models do: k / v repeat_interleave'd to the query heads,
 * softmax(q k^T * scale + mask) v with a precomputed causal mask (prefill),
 * rope as x * cos + rotate(x) * sin on the (B, T, H, D) tensor, rms_norm as
 * x * rsqrt(mean(x^2) + eps) * w, swiglu as silu(a) * b. Same thread count
 * (torch.set_num_threads / wk_set_num_threads); medians of repeats.
 * "vs torch" = torch time / fused time, "vs comp" = composite / fused (above
 * 1: fused is faster). --quick: short timings. Exit 1 if a wick call fails.
 *
 * Backward rows (f32; each a forward with the inputs tracked plus a backward
 * from a given output gradient, as a training step runs them): softmax
 * (256, 1024) over the last dim; rms_norm (x, w) and layer_norm (x, w, b) on
 * (128, 576); attention prefill, causal, q (1, 8, L, 64), k / v
 * (1, 4, L, 64), L = 128, 512, gradients to q, k, v. "fused" uses the CPU's
 * backward entries (softmax_backward, norm_backward, attention_backward),
 * "composite" the same with those entries cleared (the rules' public-op
 * fallback; the forward stays fused); torch is the same math by hand with
 * y.backward(G). Then the memory of one attention forward + backward
 * (L = 512 and 2048, same heads), measured first thing in the process: wick's
 * allocator peak above the inputs (and the process's peak RSS growth)
 * beside torch's peak RSS growth in a fresh process.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <wick/wick.h>
#include <wick/autograd.h>
#include "tensor/tensor.h"
#include <sys/resource.h>
#include "peer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_T 8

static struct {
    int quick, no_peers, nthreads, threads[MAX_T];
    const char *python;
    double min_time;
    int repeats;
} opt = {0, 0, 2, {1, 2}, "/usr/bin/python3", 0.2, 5};

enum {
    R_DEC128, R_DEC512, R_DEC2048, R_PRE128, R_PRE512, R_ROPE, R_RMS128, R_RMS1, R_SWIGLU, R_WIN0, R_WIN512, NROWS
};
static const char *const k_rows[NROWS] = {"dec128", "dec512", "dec2048", "pre128", "pre512", "rope",
                                          "rms128", "rms1",   "swiglu",  "win0",   "win512"};
static const char *const k_desc[NROWS] = {
    "attn decode 9/3x64 Lk=128", "attn decode 9/3x64 Lk=512", "attn decode 9/3x64 Lk=2048",
    "attn prefill causal L=128", "attn prefill causal L=512", "rope_thd inter 1x128x9x64",
    "rms_norm 128x576",          "rms_norm 1x576",            "swiglu 128x3072",
    "attn decode Lk=4096 no win", "attn decode Lk=4096 win=512"};

typedef struct row_in {
    wk_tensor *a, *b, *c, *cache_k, *cache_v;
    int64_t off, window;
} row_in;

static wk_tensor *rnd(const int64_t *s, int r) { return wk_rand(s, r, -1, 1, WK_F32, wk_cpu()); }

static bool make_row(int row, row_in *in) {
    memset(in, 0, sizeof *in);
    if (row == R_WIN0 || row == R_WIN512) {
        int64_t sq[4] = {1, 9, 1, 64}, sc[4] = {1, 3, 4096, 64};
        in->a = rnd(sq, 4);
        in->b = rnd(sc, 4);
        in->c = rnd(sc, 4);
        in->off = 4095;
        in->window = row == R_WIN512 ? 512 : 0;
    } else if (row <= R_DEC2048) {
        int64_t lk = row == R_DEC128 ? 128 : row == R_DEC512 ? 512 : 2048;
        int64_t sq[4] = {1, 9, 1, 64}, sc[4] = {1, 3, 2048, 64};
        in->a = rnd(sq, 4);
        in->cache_k = rnd(sc, 4);
        in->cache_v = rnd(sc, 4);
        in->b = wk_narrow(in->cache_k, 2, 0, lk);
        in->c = wk_narrow(in->cache_v, 2, 0, lk);
        in->off = lk - 1;
    } else if (row <= R_PRE512) {
        int64_t l = row == R_PRE128 ? 128 : 512;
        int64_t sq[4] = {1, 9, l, 64}, sk[4] = {1, 3, l, 64};
        in->a = rnd(sq, 4);
        in->b = rnd(sk, 4);
        in->c = rnd(sk, 4);
    } else if (row == R_ROPE) {
        int64_t sx[4] = {1, 128, 9, 64}, st[2] = {128, 32};
        in->a = rnd(sx, 4);
        in->b = rnd(st, 2);
        in->c = rnd(st, 2);
    } else if (row == R_RMS128 || row == R_RMS1) {
        int64_t sx[2] = {row == R_RMS128 ? 128 : 1, 576}, sw[1] = {576};
        in->a = rnd(sx, 2);
        in->b = rnd(sw, 1);
    } else {
        int64_t sx[2] = {128, 3072};
        in->a = rnd(sx, 2);
    }
    return in->a != NULL;
}

static void free_row(row_in *in) {
    wk_tensor *t[5] = {in->a, in->b, in->c, in->cache_k, in->cache_v};
    for (int i = 0; i < 5; i++) wk_tensor_free(t[i]);
}

static wk_tensor *run_row(int row, const row_in *in) {
    if (row <= R_PRE512 || row == R_WIN0 || row == R_WIN512) {
        wk_attention_opts o = {.causal = true, .q_offset = in->off, .window = in->window};
        return wk_attention(in->a, in->b, in->c, &o);
    }
    if (row == R_ROPE) return wk_rope_thd(in->a, in->b, in->c, true);
    if (row == R_RMS128 || row == R_RMS1) return wk_rms_norm(in->a, in->b, 1e-5);
    return wk_swiglu(in->a);
}

/* median seconds per call; < 0 on failure */
static double time_wick(int row, const row_in *in) {
    wk_tensor *r = run_row(row, in);
    if (!r) {
        fprintf(stderr, "bench_nn: %s failed: %s\n", k_rows[row], wk_last_error());
        return -1;
    }
    wk_tensor_free(r);
    int64_t n = 1;
    for (;;) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) wk_tensor_free(run_row(row, in));
        double dt = bench_now() - t0;
        if (dt >= opt.min_time || n >= (1 << 20)) break;
        n *= dt > 0 ? (opt.min_time / dt > 10 ? 10 : 2) : 10;
    }
    double rep[16];
    for (int k = 0; k < opt.repeats; k++) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) wk_tensor_free(run_row(row, in));
        rep[k] = (bench_now() - t0) / (double)n;
    }
    qsort(rep, (size_t)opt.repeats, sizeof(double), bench_cmp_double);
    return rep[opt.repeats / 2];
}

/* The composite: the CPU's table without its fused entries, for one call. */
static double time_composite(int row, const row_in *in) {
    wk_device *dev = wk_cpu();
    const wk_backend *saved = dev->be;
    wk_backend plain = *saved;
    plain.attention = NULL;
    plain.rope = NULL;
    plain.rms_norm = NULL;
    plain.swiglu = NULL;
    dev->be = &plain;
    double t = time_wick(row, in);
    dev->be = saved;
    return t;
}

static const char *k_py =
    "import sys, time, math, torch\n"
    "import torch.nn.functional as F\n"
    "T, MT, R = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(T)\n"
    "def attn(q, k, v, mask):\n"
    "    k = k.repeat_interleave(3, dim=1); v = v.repeat_interleave(3, dim=1)\n"
    "    s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1]))\n"
    "    if mask is not None: s = s + mask\n"
    "    return torch.softmax(s, -1) @ v\n"
    "def rope(x, c, s):\n"
    "    c = c.repeat_interleave(2, -1)[:, None, :]; s = s.repeat_interleave(2, -1)[:, None, :]\n"
    "    x2 = torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)\n"
    "    return x * c + x2 * s\n"
    "def rms(x, w): return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w\n"
    "def swiglu(x): a, b = x.chunk(2, -1); return F.silu(a) * b\n"
    "def r(*s): return torch.rand(*s) * 2 - 1\n"
    "cache = r(1, 3, 2048, 64), r(1, 3, 2048, 64)\n"
    "def causal(l): return torch.full((l, l), float('-inf')).triu(1)\n"
    "rows = []\n"
    "for lk in (128, 512, 2048):\n"
    "    rows.append(('dec%d' % lk, (r(1, 9, 1, 64), cache[0][:, :, :lk], cache[1][:, :, :lk], None), attn))\n"
    "for l in (128, 512):\n"
    "    rows.append(('pre%d' % l, (r(1, 9, l, 64), r(1, 3, l, 64), r(1, 3, l, 64), causal(l)), attn))\n"
    "cache4 = r(1, 3, 4096, 64), r(1, 3, 4096, 64)\n"
    "rows.append(('win0', (r(1, 9, 1, 64), cache4[0], cache4[1], None), attn))\n"
    "rows.append(('win512', (r(1, 9, 1, 64), cache4[0][:, :, -512:], cache4[1][:, :, -512:], None), attn))\n"
    "rows += [('rope', (r(1, 128, 9, 64), r(128, 32), r(128, 32)), rope),\n"
    "         ('rms128', (r(128, 576), r(576)), rms), ('rms1', (r(1, 576), r(576)), rms),\n"
    "         ('swiglu', (r(128, 3072),), swiglu)]\n"
    "with torch.no_grad():\n"
    "    for name, args, fn in rows:\n"
    "        fn(*args)\n"
    "        n = 1\n"
    "        while True:\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(n): fn(*args)\n"
    "            dt = time.perf_counter() - t0\n"
    "            if dt >= MT or n >= 1 << 20: break\n"
    "            n *= 10 if dt <= 0 or MT / dt > 10 else 2\n"
    "        reps = []\n"
    "        for _ in range(R):\n"
    "            t0 = time.perf_counter()\n"
    "            for _ in range(n): fn(*args)\n"
    "            reps.append((time.perf_counter() - t0) / n)\n"
    "        reps.sort()\n"
    "        print(name, reps[len(reps) // 2], flush=True)\n";

/* torch seconds per row for T threads (< 0: n/a). */
static void time_torch(int threads, double *out) {
    for (int i = 0; i < NROWS; i++) out[i] = -1;
    if (opt.no_peers) return;
    char env[64], args[256];
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    snprintf(args, sizeof args, "%d %g %d 2>/dev/null", threads, opt.min_time, opt.repeats);
    bench_peer p;
    if (bench_peer_start(&p, opt.python, k_py, env, args)) {
        char line[256], name[128];
        double s;
        while (fgets(line, sizeof line, p.out))
            if (sscanf(line, "%127s %lf", name, &s) == 2)
                for (int i = 0; i < NROWS; i++)
                    if (strcmp(name, k_rows[i]) == 0) out[i] = s;
    }
    bench_peer_finish(&p);
}

static void print_ms(double s) {
    if (s > 0) printf(" %11.4f", s * 1e3);
    else printf(" %11s", "n/a");
}
static void print_ratio(double num, double den) {
    if (num > 0 && den > 0) printf(" %8.2f", num / den);
    else printf(" %8s", "n/a");
}

/* ---- backward rows ---- */

enum { B_SOFTMAX, B_RMS, B_LN, B_PRE128, B_PRE512, NBROWS };
static const char *const k_brows[NBROWS] = {"bsoftmax", "brms", "bln", "bpre128", "bpre512"};
static const char *const k_bdesc[NBROWS] = {"softmax bwd 256x1024", "rms_norm bwd 128x576", "layer_norm bwd 128x576",
                                            "attn bwd causal 8/4x64 L=128", "attn bwd causal 8/4x64 L=512"};

typedef struct brow_in {
    wk_tensor *in[3], *grad;
    int nin;
} brow_in;

static bool make_brow(int row, brow_in *b) {
    memset(b, 0, sizeof *b);
    if (row == B_SOFTMAX) {
        b->in[0] = rnd((int64_t[]){256, 1024}, 2);
        b->nin = 1;
    } else if (row == B_RMS || row == B_LN) {
        b->in[0] = rnd((int64_t[]){128, 576}, 2);
        b->in[1] = rnd((int64_t[]){576}, 1);
        b->in[2] = rnd((int64_t[]){576}, 1);
        b->nin = row == B_RMS ? 2 : 3;
    } else {
        int64_t l = row == B_PRE128 ? 128 : 512;
        b->in[0] = rnd((int64_t[]){1, 8, l, 64}, 4);
        b->in[1] = rnd((int64_t[]){1, 4, l, 64}, 4);
        b->in[2] = rnd((int64_t[]){1, 4, l, 64}, 4);
        b->nin = 3;
    }
    for (int i = 0; i < b->nin; i++)
        if (!b->in[i] || wk_requires_grad(b->in[i], true) != WK_OK) return false;
    return true;
}

static wk_tensor *run_brow_fwd(int row, const brow_in *b) {
    if (row == B_SOFTMAX) return wk_softmax(b->in[0], -1);
    if (row == B_RMS) return wk_rms_norm(b->in[0], b->in[1], 1e-5);
    if (row == B_LN) return wk_layer_norm(b->in[0], b->in[1], b->in[2], 1e-5);
    wk_attention_opts o = {.causal = true};
    return wk_attention(b->in[0], b->in[1], b->in[2], &o);
}

/* One forward + backward; false on failure. */
static bool run_brow(int row, brow_in *b, wk_grad_store *gs) {
    wk_tensor *y = run_brow_fwd(row, b);
    if (!y) return false;
    if (!b->grad) b->grad = rnd(wk_shape(y), wk_rank(y));
    wk_backward_opts o = {.grad_output = b->grad};
    wk_status st = b->grad ? wk_backward(y, gs, &o) : wk_last_status();
    wk_tensor_free(y);
    wk_grad_store_zero(gs);
    return st == WK_OK;
}

static double time_brow(int row, brow_in *b, bool composite) {
    wk_device *dev = wk_cpu();
    const wk_backend *saved = dev->be;
    wk_backend plain = *saved;
    plain.softmax_backward = NULL;
    plain.norm_backward = NULL;
    plain.attention_backward = NULL;
    if (composite) dev->be = &plain;
    wk_grad_store *gs = wk_grad_store_new();
    double res = -1;
    if (!gs || !run_brow(row, b, gs)) {
        fprintf(stderr, "bench_nn: %s failed: %s\n", k_brows[row], wk_last_error());
        goto done;
    }
    int64_t n = 1;
    for (;;) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) run_brow(row, b, gs);
        double dt = bench_now() - t0;
        if (dt >= opt.min_time || n >= (1 << 20)) break;
        n *= dt > 0 ? (opt.min_time / dt > 10 ? 10 : 2) : 10;
    }
    double rep[16];
    for (int k = 0; k < opt.repeats; k++) {
        double t0 = bench_now();
        for (int64_t i = 0; i < n; i++) run_brow(row, b, gs);
        rep[k] = (bench_now() - t0) / (double)n;
    }
    qsort(rep, (size_t)opt.repeats, sizeof(double), bench_cmp_double);
    res = rep[opt.repeats / 2];
done:
    wk_grad_store_free(gs);
    dev->be = saved;
    return res;
}

static const char *k_bpy =
    "import sys, time, math, torch\n"
    "T, MT, R = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])\n"
    "torch.set_num_threads(T)\n"
    "def attn(q, k, v, mask):\n"
    "    k = k.repeat_interleave(2, dim=1); v = v.repeat_interleave(2, dim=1)\n"
    "    s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1])) + mask\n"
    "    return torch.softmax(s, -1) @ v\n"
    "def rms(x, w): return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w\n"
    "def ln(x, w, b): return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)\n"
    "def r(*s): return (torch.rand(*s) * 2 - 1).requires_grad_()\n"
    "def causal(l): return torch.full((l, l), float('-inf')).triu(1)\n"
    "rows = [('bsoftmax', (r(256, 1024),), lambda x: torch.softmax(x, -1)),\n"
    "        ('brms', (r(128, 576), r(576)), rms), ('bln', (r(128, 576), r(576), r(576)), ln)]\n"
    "for l in (128, 512):\n"
    "    m = causal(l)\n"
    "    rows.append(('bpre%d' % l, (r(1, 8, l, 64), r(1, 4, l, 64), r(1, 4, l, 64)),\n"
    "                 lambda q, k, v, m=m: attn(q, k, v, m)))\n"
    "for name, args, fn in rows:\n"
    "    g = torch.rand(fn(*args).shape)\n"
    "    def step():\n"
    "        for a in args: a.grad = None\n"
    "        fn(*args).backward(g)\n"
    "    step()\n"
    "    n = 1\n"
    "    while True:\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(n): step()\n"
    "        dt = time.perf_counter() - t0\n"
    "        if dt >= MT or n >= 1 << 20: break\n"
    "        n *= 10 if dt <= 0 or MT / dt > 10 else 2\n"
    "    reps = []\n"
    "    for _ in range(R):\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(n): step()\n"
    "        reps.append((time.perf_counter() - t0) / n)\n"
    "    reps.sort()\n"
    "    print(name, reps[len(reps) // 2], flush=True)\n";

static void time_torch_bwd(int threads, double *out) {
    for (int i = 0; i < NBROWS; i++) out[i] = -1;
    if (opt.no_peers) return;
    char env[64], args[256];
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    snprintf(args, sizeof args, "%d %g %d 2>/dev/null", threads, opt.min_time, opt.repeats);
    bench_peer p;
    if (bench_peer_start(&p, opt.python, k_bpy, env, args)) {
        char line[256], name[128];
        double s;
        while (fgets(line, sizeof line, p.out))
            if (sscanf(line, "%127s %lf", name, &s) == 2)
                for (int i = 0; i < NBROWS; i++)
                    if (strcmp(name, k_brows[i]) == 0) out[i] = s;
    }
    bench_peer_finish(&p);
}

/* ---- memory of one attention forward + backward ---- */

static double maxrss_mib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0;
}

static const char *k_mpy =
    "import sys, math, resource, torch\n"
    "torch.set_num_threads(int(sys.argv[1]))\n"
    "l = int(sys.argv[2])\n"
    "def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0\n"
    "def r(*s): return (torch.rand(*s) * 2 - 1).requires_grad_()\n"
    "q, k, v = r(1, 8, l, 64), r(1, 4, l, 64), r(1, 4, l, 64)\n"
    "m = torch.full((l, l), float('-inf')).triu(1)\n"
    "g = torch.rand(1, 8, l, 64)\n"
    "base = rss()\n"
    "kk = k.repeat_interleave(2, dim=1); vv = v.repeat_interleave(2, dim=1)\n"
    "s = q @ kk.transpose(-1, -2) * (1.0 / math.sqrt(64)) + m\n"
    "(torch.softmax(s, -1) @ vv).backward(g)\n"
    "print('mem', rss() - base, flush=True)\n";

/* wick's allocator peak above the inputs and the RSS growth (MiB) of one
 * attention forward + backward at L; call before anything else allocates. */
static void attention_memory(int64_t l, double *peak, double *rss) {
    *peak = *rss = -1;
    wk_tensor *q = rnd((int64_t[]){1, 8, l, 64}, 4), *k = rnd((int64_t[]){1, 4, l, 64}, 4);
    wk_tensor *v = rnd((int64_t[]){1, 4, l, 64}, 4), *g = rnd((int64_t[]){1, 8, l, 64}, 4);
    wk_grad_store *gs = wk_grad_store_new();
    if (!q || !k || !v || !g || !gs) return;
    wk_requires_grad(q, true);
    wk_requires_grad(k, true);
    wk_requires_grad(v, true);
    wk_cpu_mem_stats s0, s1;
    wk_cpu_mem_stats_get(&s0);
    double r0 = maxrss_mib();
    wk_attention_opts o = {.causal = true};
    wk_tensor *y = wk_attention(q, k, v, &o);
    wk_backward_opts bo = {.grad_output = g};
    if (y && wk_backward(y, gs, &bo) == WK_OK) {
        wk_cpu_mem_stats_get(&s1);
        *peak = (double)(s1.peak_in_use - s0.bytes_in_use) / (1024.0 * 1024.0);
        *rss = maxrss_mib() - r0;
    }
    wk_tensor_free(y);
    wk_grad_store_free(gs);
    wk_tensor *t[4] = {q, k, v, g};
    for (int i = 0; i < 4; i++) wk_tensor_free(t[i]);
}

static double torch_attention_memory(int64_t l) {
    if (opt.no_peers) return -1;
    char args[128];
    snprintf(args, sizeof args, "1 %lld 2>/dev/null", (long long)l);
    bench_peer p;
    double mem = -1;
    if (bench_peer_start(&p, opt.python, k_mpy, "OMP_NUM_THREADS=1", args)) {
        char line[256];
        double s;
        while (fgets(line, sizeof line, p.out))
            if (sscanf(line, "mem %lf", &s) == 1) mem = s;
    }
    bench_peer_finish(&p);
    return mem;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) opt.quick = 1;
        else if (strcmp(argv[i], "--no-peers") == 0) opt.no_peers = 1;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) opt.python = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            opt.nthreads = 0;
            for (char *s = argv[++i]; *s && opt.nthreads < MAX_T;) {
                opt.threads[opt.nthreads++] = (int)strtol(s, &s, 10);
                if (*s == ',') s++;
                else break;
            }
        } else {
            fprintf(stderr, "usage: %s [--quick] [--threads 1,2] [--no-peers] [--python PATH]\n", argv[0]);
            return 2;
        }
    }
    if (opt.quick) opt.min_time = 0.01, opt.repeats = 3;
    int fail = 0;
    /* memory first: the allocator's peak only grows */
    double mpeak[2], mrss[2], mtorch[2];
    int64_t mls[2] = {512, 2048};
    wk_set_num_threads(1);
    for (int i = 0; i < 2; i++) {
        attention_memory(mls[i], &mpeak[i], &mrss[i]);
        mtorch[i] = torch_attention_memory(mls[i]);
    }
    printf("bench_nn: f32, SmolLM2-135M sizes, isa %s%s\n", wk_cpu_isa(), opt.quick ? " (quick)" : "");
    row_in in[NROWS];
    for (int r = 0; r < NROWS; r++)
        if (!make_row(r, &in[r])) {
            fprintf(stderr, "bench_nn: cannot make the inputs: %s\n", wk_last_error());
            return 1;
        }
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int T = opt.threads[ti];
        double tt[NROWS];
        time_torch(T, tt);
        if (wk_set_num_threads(T) != WK_OK) {
            fprintf(stderr, "bench_nn: wk_set_num_threads(%d): %s\n", T, wk_last_error());
            return 1;
        }
        printf("\nthreads %d\n%-30s %11s %11s %11s %8s %8s\n", T, "op", "fused ms", "comp ms", "torch ms", "vs comp",
               "vs torch");
        double wt[NROWS], ct[NROWS];
        for (int r = 0; r < NROWS; r++) {
            double w = wt[r] = time_wick(r, &in[r]), c = ct[r] = time_composite(r, &in[r]);
            if (w < 0 || c < 0) fail = 1;
            printf("%-30s", k_desc[r]);
            print_ms(w);
            print_ms(c);
            print_ms(tt[r]);
            print_ratio(c, w);
            print_ratio(tt[r], w);
            printf("\n");
        }
        printf("%-30s", "window 512 speedup over 4096");
        print_ratio(wt[R_WIN0], wt[R_WIN512]);
        printf(" fused,");
        print_ratio(ct[R_WIN0], ct[R_WIN512]);
        printf(" composite (no window / window)\n");
    }
    for (int r = 0; r < NROWS; r++) free_row(&in[r]);
    brow_in bin[NBROWS];
    for (int r = 0; r < NBROWS; r++)
        if (!make_brow(r, &bin[r])) {
            fprintf(stderr, "bench_nn: cannot make the backward inputs: %s\n", wk_last_error());
            return 1;
        }
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int T = opt.threads[ti];
        double tt[NBROWS];
        time_torch_bwd(T, tt);
        if (wk_set_num_threads(T) != WK_OK) return 1;
        printf("\nbackward (forward + backward), threads %d\n%-30s %11s %11s %11s %8s %8s\n", T, "op", "fused ms",
               "comp ms", "torch ms", "vs comp", "vs torch");
        for (int r = 0; r < NBROWS; r++) {
            double w = time_brow(r, &bin[r], false), c = time_brow(r, &bin[r], true);
            if (w < 0 || c < 0) fail = 1;
            printf("%-30s", k_bdesc[r]);
            print_ms(w);
            print_ms(c);
            print_ms(tt[r]);
            print_ratio(c, w);
            print_ratio(tt[r], w);
            printf("\n");
        }
    }
    for (int r = 0; r < NBROWS; r++) {
        for (int i = 0; i < bin[r].nin; i++) wk_tensor_free(bin[r].in[i]);
        wk_tensor_free(bin[r].grad);
    }
    printf("\nmemory of one attention forward + backward, causal 8/4x64, 1 thread (MiB)\n%-10s %14s %14s %14s %9s\n",
           "L", "wick peak", "wick rss", "torch rss", "torch/wk");
    for (int i = 0; i < 2; i++) {
        printf("%-10lld", (long long)mls[i]);
        printf(" %14.2f %14.2f", mpeak[i], mrss[i]);
        if (mtorch[i] >= 0) printf(" %14.2f", mtorch[i]);
        else printf(" %14s", "n/a");
        print_ratio(mtorch[i], mrss[i] > mpeak[i] ? mrss[i] : mpeak[i]);
        printf("\n");
    }
    return fail;
}
