/* Elementwise binary ops per dtype, wick beside PyTorch (same run).
 *
 *   bench_binary [--quick] [--threads N] [--python PATH]
 *
 * Rows: add, mul (same shape), add_row (b[n] broadcast along the rows),
 * add_col (b[m, 1]: a held operand in each run), for f32, bf16, f16, i32 and
 * i64 at 1M (1024 x 1024) and 16M (4096 x 4096) elements (--quick: 16K and
 * 256K), N threads (default 1). Every call allocates its result, which is
 * freed. Timing as bench_select: one warm-up call, the iteration count grows
 * until a batch takes >= 50 ms (2 ms with --quick), then the median of 5
 * batches. "vs torch" = torch time / wick time (above 1: wick is faster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick/wick.h"
#include "peer.h"

enum { OP_ADD, OP_MUL, OP_ADD_ROW, OP_ADD_COL, OP_COUNT };
static const char *k_ops[OP_COUNT] = {"add", "mul", "add_row", "add_col"};
#define NDT 5
static const wk_dtype k_dts[NDT] = {WK_F32, WK_BF16, WK_F16, WK_I32, WK_I64};
static const char *k_dt_names[NDT] = {"f32", "bf16", "f16", "i32", "i64"};
#define NSZ 2
static const int64_t k_side_full[NSZ] = {1024, 4096};
static const int64_t k_side_quick[NSZ] = {128, 512};

typedef struct {
    int op;
    wk_tensor *a, *b, *brow, *bcol;
} bctx;

static bool g_fail;

static void call(void *ctx) {
    bctx *x = ctx;
    wk_tensor *r = NULL;
    switch (x->op) {
    case OP_ADD: r = wk_add(x->a, x->b); break;
    case OP_MUL: r = wk_mul(x->a, x->b); break;
    case OP_ADD_ROW: r = wk_add(x->a, x->brow); break;
    case OP_ADD_COL: r = wk_add(x->a, x->bcol); break;
    }
    if (!r) {
        fprintf(stderr, "bench_binary: %s failed: %s\n", k_ops[x->op], wk_last_error());
        g_fail = true;
    }
    wk_tensor_free(r);
}

/* randn * 4 (integers: truncated) */
static wk_tensor *values(const int64_t *shape, int rank, wk_dtype dt) {
    wk_tensor *f = wk_randn(shape, rank, 0, 4, WK_F32, wk_cpu());
    wk_tensor *r = f ? wk_to_dtype(f, dt) : NULL;
    wk_tensor_free(f);
    return r;
}

static bool setup(bctx *x, int64_t side, wk_dtype dt) {
    int64_t s2[2] = {side, side}, col[2] = {side, 1}, row[1] = {side};
    x->a = values(s2, 2, dt);
    x->b = values(s2, 2, dt);
    x->brow = values(row, 1, dt);
    x->bcol = values(col, 2, dt);
    return x->a && x->b && x->brow && x->bcol;
}
static void teardown(bctx *x) {
    wk_tensor_free(x->a);
    wk_tensor_free(x->b);
    wk_tensor_free(x->brow);
    wk_tensor_free(x->bcol);
}

static const char *k_peer =
    "import sys, time, statistics\n"
    "try:\n"
    "    import torch\n"
    "except Exception:\n"
    "    sys.exit(0)\n"
    "mt = float(sys.argv[1]); T = int(sys.argv[2]); sides = [int(v) for v in sys.argv[3:]]\n"
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
    "dts = {'f32': torch.float32, 'bf16': torch.bfloat16, 'f16': torch.float16,\n"
    "       'i32': torch.int32, 'i64': torch.int64}\n"
    "for s in sides:\n"
    "    for dn, dt in dts.items():\n"
    "        v = lambda *sh: (torch.randn(*sh) * 4).to(dt)\n"
    "        a = v(s, s); b = v(s, s); br = v(s); bc = v(s, 1)\n"
    "        ops = [('add', lambda: a + b), ('mul', lambda: a * b),\n"
    "               ('add_row', lambda: a + br), ('add_col', lambda: a + bc)]\n"
    "        for name, f in ops:\n"
    "            print(name, dn, s, bench(f))\n"
    "        sys.stdout.flush()\n";

/* out[sz][dt][op], -1 where the peer gave nothing */
static void peer(const char *python, double mt, int threads, const int64_t *sides, double out[NSZ][NDT][OP_COUNT]) {
    for (int s = 0; s < NSZ; s++)
        for (int d = 0; d < NDT; d++)
            for (int o = 0; o < OP_COUNT; o++) out[s][d][o] = -1;
    char args[256], env[64];
    snprintf(args, sizeof args, "%g %d %lld %lld", mt, threads, (long long)sides[0], (long long)sides[1]);
    snprintf(env, sizeof env, "OMP_NUM_THREADS=%d", threads);
    bench_peer p;
    if (bench_peer_start(&p, python, k_peer, env, args)) {
        char name[64], dn[16];
        long long side;
        double t;
        while (fscanf(p.out, "%63s %15s %lld %lf", name, dn, &side, &t) == 4)
            for (int s = 0; s < NSZ; s++)
                for (int d = 0; d < NDT; d++)
                    for (int o = 0; o < OP_COUNT; o++)
                        if (side == sides[s] && strcmp(dn, k_dt_names[d]) == 0 && strcmp(name, k_ops[o]) == 0)
                            out[s][d][o] = t;
    }
    bench_peer_finish(&p);
}

int main(int argc, char **argv) {
    bool quick = false;
    int threads = 1;
    const char *python = "/usr/bin/python3";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) python = argv[++i];
        else {
            printf("usage: bench_binary [--quick] [--threads N] [--python PATH]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (threads < 1) threads = 1;
    double mt = quick ? 0.002 : 0.05;
    const int64_t *sides = quick ? k_side_quick : k_side_full;
    if (wk_set_num_threads(threads) != WK_OK) {
        fprintf(stderr, "wk_set_num_threads(%d): %s\n", threads, wk_last_error());
        return 1;
    }
    printf("bench_binary: isa %s, %d thread%s%s\n", wk_cpu_isa(), threads, threads > 1 ? "s" : "",
           quick ? "  [--quick]" : "");
    static double pt[NSZ][NDT][OP_COUNT];
    peer(python, mt, threads, sides, pt);
    printf("%-8s %-5s %-10s %11s %11s %9s\n", "op", "dtype", "size", "wick us", "torch us", "vs torch");
    for (int s = 0; s < NSZ; s++)
        for (int d = 0; d < NDT; d++) {
            bctx x = {0};
            if (!setup(&x, sides[s], k_dts[d])) {
                fprintf(stderr, "bench_binary: setup failed: %s\n", wk_last_error());
                teardown(&x);
                return 1;
            }
            char size[32];
            snprintf(size, sizeof size, "%lldx%lld", (long long)sides[s], (long long)sides[s]);
            for (int o = 0; o < OP_COUNT; o++) {
                x.op = o;
                double w = bench_time_calls(call, &x, mt);
                char pts[32], rs[32];
                double p = pt[s][d][o];
                if (p > 0) {
                    snprintf(pts, sizeof pts, "%.1f", p * 1e6);
                    snprintf(rs, sizeof rs, "%.2f", p / w);
                } else {
                    snprintf(pts, sizeof pts, "n/a");
                    snprintf(rs, sizeof rs, "n/a");
                }
                printf("%-8s %-5s %-10s %11.1f %11s %9s\n", k_ops[o], k_dt_names[d], size, w * 1e6, pts, rs);
                fflush(stdout);
            }
            teardown(&x);
        }
    return g_fail ? 1 : 0;
}
