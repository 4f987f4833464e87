/* Indexing ops, wick beside PyTorch (measured in the same run).
 *
 *   bench_indexing [--quick] [--python PATH]
 *
 * Rows (f32, ids i64 (i * 7919) mod size, the same in both libraries):
 *   index_select  2 048 rows of a 32 000 x 4 096 table, dim 0
 *                 (wk_index_select vs torch.index_select)
 *   gather        1024 x 1024 from 1024 x 1024 along dim 1 (torch.gather)
 *   scatter_add   1024 x 1024 into 1024 x 1024 along dim 1 (Tensor.scatter_add)
 *   index_add     2 048 rows of 4 096 added into a 4 096 x 4 096 tensor, dim 0
 *                 (Tensor.index_add)
 * for 1 and 2 threads (wk_set_num_threads / torch.set_num_threads). Every
 * call allocates its result, which is freed. Timing: one warm-up call, the
 * iteration count grows until a batch takes >= 50 ms (5 ms with --quick),
 * then the median of 5 batches. --quick shrinks every size (a few seconds).
 * torch runs under /usr/bin/python3 (ATEN_CPU_CAPABILITY=avx512 on AVX-512 CPUs); without
 * it the torch column says n/a. Ratio = torch time / wick time (above 1:
 * wick is faster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick/wick.h"
#include "peer.h"

typedef struct {
    int op;
    wk_tensor *a, *ids, *src;
} bctx;

static bool g_fail;

static void call(void *ctx) {
    bctx *c = ctx;
    wk_tensor *r = NULL;
    switch (c->op) {
    case 0: r = wk_index_select(c->a, c->ids, 0); break;
    case 1: r = wk_gather(c->a, c->ids, 1); break;
    case 2: r = wk_scatter_add(c->a, c->ids, c->src, 1); break;
    default: r = wk_index_add(c->a, c->ids, c->src, 0); break;
    }
    if (!r) {
        fprintf(stderr, "bench_indexing: op %d failed: %s\n", c->op, wk_last_error());
        g_fail = true;
    }
    wk_tensor_free(r);
}

static const char *k_names[4] = {"index_select", "gather", "scatter_add", "index_add"};

/* sizes per op: {rows, cols, n_ids} */
static void sizes(int op, bool quick, int64_t *s) {
    static const int64_t full[4][3] = {{32000, 4096, 2048}, {1024, 1024, 1024}, {1024, 1024, 1024}, {4096, 4096, 2048}};
    static const int64_t small[4][3] = {{4000, 1024, 256}, {256, 256, 256}, {256, 256, 256}, {512, 512, 256}};
    memcpy(s, quick ? small[op] : full[op], sizeof full[op]);
}

static const char *k_peer =
    "import sys, time, statistics\n"
    "try:\n"
    "    import torch\n"
    "except Exception:\n"
    "    sys.exit(0)\n"
    "T = int(sys.argv[1]); mt = float(sys.argv[2]); sz = [int(v) for v in sys.argv[3:]]\n"
    "torch.set_num_threads(T)\n"
    "def bench(f):\n"
    "    f(); n = 1\n"
    "    while True:\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(n): f()\n"
    "        if time.perf_counter() - t0 >= mt or n > (1 << 24): break\n"
    "        n *= 2\n"
    "    ts = []\n"
    "    for _ in range(5):\n"
    "        t0 = time.perf_counter()\n"
    "        for _ in range(n): f()\n"
    "        ts.append((time.perf_counter() - t0) / n)\n"
    "    return statistics.median(ts)\n"
    "def ids(n, m): return (torch.arange(n, dtype=torch.int64) * 7919) % m\n"
    "r, c, k = sz[0:3]\n"
    "a = torch.randn(r, c); i = ids(k, r)\n"
    "print('index_select', bench(lambda: torch.index_select(a, 0, i)))\n"
    "del a\n"
    "r, c, k = sz[3:6]\n"
    "a = torch.randn(r, c); i = ids(r * k, c).reshape(r, k)\n"
    "print('gather', bench(lambda: torch.gather(a, 1, i)))\n"
    "r, c, k = sz[6:9]\n"
    "a = torch.randn(r, c); i = ids(r * k, c).reshape(r, k); s = torch.randn(r, k)\n"
    "print('scatter_add', bench(lambda: a.scatter_add(1, i, s)))\n"
    "r, c, k = sz[9:12]\n"
    "a = torch.randn(r, c); i = ids(k, r); s = torch.randn(k, c)\n"
    "print('index_add', bench(lambda: a.index_add(0, i, s)))\n"
    "sys.stdout.flush()\n";

static void peer(const char *python, int threads, double mt, bool quick, double *out) {
    for (int k = 0; k < 4; k++) out[k] = -1;
    char env[64], args[1024];
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    int len = snprintf(args, sizeof args, "%d %g", threads, mt);
    for (int op = 0; op < 4; op++) {
        int64_t s[3];
        sizes(op, quick, s);
        len += snprintf(args + len, sizeof args - (size_t)len, " %lld %lld %lld", (long long)s[0], (long long)s[1],
                        (long long)s[2]);
    }
    bench_peer p;
    if (bench_peer_start(&p, python, k_peer, env, args)) {
        char name[64];
        double t;
        while (fscanf(p.out, "%63s %lf", name, &t) == 2)
            for (int k = 0; k < 4; k++)
                if (strcmp(name, k_names[k]) == 0) out[k] = t;
    }
    bench_peer_finish(&p);
}

static wk_tensor *ids_tensor(int64_t n, int64_t mod, const int64_t *shape, int rank) {
    int64_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) v[i] = (i * 7919) % mod;
    wk_tensor *t = wk_from_host(v, (size_t)n * sizeof *v, shape, rank, WK_I64, wk_cpu());
    free(v);
    return t;
}

static bool setup(int op, bool quick, bctx *c) {
    int64_t s[3];
    sizes(op, quick, s);
    c->op = op;
    c->a = wk_randn((int64_t[]){s[0], s[1]}, 2, 0, 1, WK_F32, wk_cpu());
    c->src = NULL;
    switch (op) {
    case 0: c->ids = ids_tensor(s[2], s[0], (int64_t[]){s[2]}, 1); break;
    case 1:
    case 2:
        c->ids = ids_tensor(s[0] * s[2], s[1], (int64_t[]){s[0], s[2]}, 2);
        if (op == 2) c->src = wk_randn((int64_t[]){s[0], s[2]}, 2, 0, 1, WK_F32, wk_cpu());
        break;
    default:
        c->ids = ids_tensor(s[2], s[0], (int64_t[]){s[2]}, 1);
        c->src = wk_randn((int64_t[]){s[2], s[1]}, 2, 0, 1, WK_F32, wk_cpu());
        break;
    }
    return c->a && c->ids && (op < 2 || c->src);
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *python = "/usr/bin/python3";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) python = argv[++i];
        else {
            printf("usage: bench_indexing [--quick] [--python PATH]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    double mt = quick ? 0.005 : 0.05;
    printf("bench_indexing: isa %s%s\n", wk_cpu_isa(), quick ? "  [--quick]" : "");
    for (int T = 1; T <= 2; T++) {
        double pt[4];
        peer(python, T, mt, quick, pt);
        if (wk_set_num_threads(T) != WK_OK) {
            fprintf(stderr, "wk_set_num_threads(%d): %s\n", T, wk_last_error());
            return 1;
        }
        printf("\n=== %d thread%s ===\n", T, T > 1 ? "s" : "");
        printf("%-14s %-34s %12s %12s %9s\n", "op", "size", "wick us", "torch us", "vs torch");
        for (int op = 0; op < 4; op++) {
            bctx c;
            int64_t s[3];
            sizes(op, quick, s);
            char desc[64];
            if (op == 0) snprintf(desc, sizeof desc, "%lld rows of %lldx%lld", (long long)s[2], (long long)s[0], (long long)s[1]);
            else if (op == 3) snprintf(desc, sizeof desc, "%lldx%lld into %lldx%lld", (long long)s[2], (long long)s[1], (long long)s[0], (long long)s[1]);
            else snprintf(desc, sizeof desc, "%lldx%lld ids, dim 1", (long long)s[0], (long long)s[2]);
            if (!setup(op, quick, &c)) {
                fprintf(stderr, "bench_indexing: setup failed: %s\n", wk_last_error());
                return 1;
            }
            double w = bench_time_calls(call, &c, mt);
            wk_tensor_free(c.a);
            wk_tensor_free(c.ids);
            wk_tensor_free(c.src);
            char pts[32], rs[32];
            if (pt[op] > 0) {
                snprintf(pts, sizeof pts, "%.1f", pt[op] * 1e6);
                snprintf(rs, sizeof rs, "%.2f", pt[op] / w);
            } else {
                snprintf(pts, sizeof pts, "n/a");
                snprintf(rs, sizeof rs, "n/a");
            }
            printf("%-14s %-34s %12.1f %12s %9s\n", k_names[op], desc, w * 1e6, pts, rs);
        }
    }
    return g_fail ? 1 : 0;
}
