/* Comparisons and selections, wick beside PyTorch (measured in the same run).
 *
 *   bench_select [--quick] [--python PATH]
 *
 * Rows, each for f32, bf16 and i64 at 1M (1024 x 1024) and 16M
 * (4096 x 4096) elements (--quick: 16K and 256K), 1 and 2 threads:
 *   mul          a * b, same shape (the memory-bound yardstick)
 *   copy         wk_copy(a) / a.clone()
 *   cmp          a < b, same shape
 *   cmp_row      a < b[n]     (b broadcast along the rows)
 *   cmp_col      a < b[m, 1]  (b broadcast along each row: stride 0 runs)
 *   where        where(c, a, b), c u8 (torch: bool) the same shape
 *   where_row    where(c[n], a, b), c broadcast along the rows
 *   masked_fill  masked_fill(a, c, 0), c u8 the same shape
 *   tril         tril(a, 0)
 * Every call allocates its result, which is freed. Timing: one warm-up call,
 * the iteration count grows until a batch takes >= 50 ms (2 ms with
 * --quick), then the median of 5 batches. torch runs under /usr/bin/python3
 * (ATEN_CPU_CAPABILITY=avx512 on AVX-512 CPUs, see peer.h); without it the
 * torch column says n/a. Columns: "x mul" = wick time / wick mul time at the
 * same size and dtype; "vs torch" = torch time / wick time (above 1: wick is
 * faster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wick/wick.h"
#include "peer.h"

enum { OP_MUL, OP_COPY, OP_CMP, OP_CMP_ROW, OP_CMP_COL, OP_WHERE, OP_WHERE_ROW, OP_MASKED_FILL, OP_TRIL, OP_COUNT };
static const char *k_ops[OP_COUNT] = {"mul",   "copy",      "cmp",         "cmp_row", "cmp_col",
                                      "where", "where_row", "masked_fill", "tril"};
#define NDT 3
static const wk_dtype k_dts[NDT] = {WK_F32, WK_BF16, WK_I64};
static const char *k_dt_names[NDT] = {"f32", "bf16", "i64"};
#define NSZ 2
static const int64_t k_side_full[NSZ] = {1024, 4096};
static const int64_t k_side_quick[NSZ] = {128, 512};

typedef struct {
    int op;
    wk_tensor *a, *b, *brow, *bcol, *c, *crow;
} bctx;

static bool g_fail;

static void call(void *ctx) {
    bctx *x = ctx;
    wk_tensor *r = NULL;
    switch (x->op) {
    case OP_MUL: r = wk_mul(x->a, x->b); break;
    case OP_COPY: r = wk_copy(x->a); break;
    case OP_CMP: r = wk_cmp(x->a, x->b, WK_LT); break;
    case OP_CMP_ROW: r = wk_cmp(x->a, x->brow, WK_LT); break;
    case OP_CMP_COL: r = wk_cmp(x->a, x->bcol, WK_LT); break;
    case OP_WHERE: r = wk_where(x->c, x->a, x->b); break;
    case OP_WHERE_ROW: r = wk_where(x->crow, x->a, x->b); break;
    case OP_MASKED_FILL: r = wk_masked_fill(x->a, x->c, 0.0); break;
    case OP_TRIL: r = wk_tril(x->a, 0); break;
    }
    if (!r) {
        fprintf(stderr, "bench_select: %s failed: %s\n", k_ops[x->op], wk_last_error());
        g_fail = true;
    }
    wk_tensor_free(r);
}

/* values from randn * 4 (i64: truncated, so many ties), the u8 masks a
 * comparison of fresh randn with 0 (about half set) */
static wk_tensor *values(const int64_t *shape, int rank, wk_dtype dt) {
    wk_tensor *f = wk_randn(shape, rank, 0, 4, WK_F32, wk_cpu());
    wk_tensor *r = f ? wk_to_dtype(f, dt) : NULL;
    wk_tensor_free(f);
    return r;
}
static wk_tensor *mask(const int64_t *shape, int rank) {
    wk_tensor *f = wk_randn(shape, rank, 0, 1, WK_F32, wk_cpu());
    wk_tensor *r = f ? wk_cmp_scalar(f, 0.0, WK_GT) : NULL;
    wk_tensor_free(f);
    return r;
}

static bool setup(bctx *x, int64_t side, wk_dtype dt) {
    int64_t s2[2] = {side, side}, col[2] = {side, 1}, row[1] = {side};
    x->a = values(s2, 2, dt);
    x->b = values(s2, 2, dt);
    x->brow = values(row, 1, dt);
    x->bcol = values(col, 2, dt);
    x->c = mask(s2, 2);
    x->crow = mask(row, 1);
    return x->a && x->b && x->brow && x->bcol && x->c && x->crow;
}
static void teardown(bctx *x) {
    wk_tensor_free(x->a);
    wk_tensor_free(x->b);
    wk_tensor_free(x->brow);
    wk_tensor_free(x->bcol);
    wk_tensor_free(x->c);
    wk_tensor_free(x->crow);
}

static const char *k_peer =
    "import sys, time, statistics\n"
    "try:\n"
    "    import torch\n"
    "except Exception:\n"
    "    sys.exit(0)\n"
    "mt = float(sys.argv[1]); sides = [int(v) for v in sys.argv[2:]]\n"
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
    "dts = {'f32': torch.float32, 'bf16': torch.bfloat16, 'i64': torch.int64}\n"
    "for T, s, dn in [(T, s, dn) for T in (1, 2) for s in sides for dn in dts]:\n"
    "        torch.set_num_threads(T); dt = dts[dn]\n"
    "        v = lambda *sh: (torch.randn(*sh) * 4).to(dt)\n"
    "        a = v(s, s); b = v(s, s); br = v(s); bc = v(s, 1)\n"
    "        c = torch.randn(s, s) > 0; cr = torch.randn(s) > 0\n"
    "        ops = [('mul', lambda: a * b), ('copy', lambda: a.clone()),\n"
    "               ('cmp', lambda: a < b), ('cmp_row', lambda: a < br), ('cmp_col', lambda: a < bc),\n"
    "               ('where', lambda: torch.where(c, a, b)), ('where_row', lambda: torch.where(cr, a, b)),\n"
    "               ('masked_fill', lambda: a.masked_fill(c, 0)), ('tril', lambda: torch.tril(a))]\n"
    "        for name, f in ops:\n"
    "            print(T, name, dn, s, bench(f))\n"
    "        sys.stdout.flush()\n";

/* out[threads - 1][sz][dt][op], -1 where the peer gave nothing. One peer
 * process for both thread counts: importing torch is most of --quick. */
static void peer(const char *python, double mt, const int64_t *sides, double out[2][NSZ][NDT][OP_COUNT]) {
    for (int T = 0; T < 2; T++)
        for (int s = 0; s < NSZ; s++)
            for (int d = 0; d < NDT; d++)
                for (int o = 0; o < OP_COUNT; o++) out[T][s][d][o] = -1;
    char args[256];
    snprintf(args, sizeof args, "%g %lld %lld", mt, (long long)sides[0], (long long)sides[1]);
    bench_peer p;
    if (bench_peer_start(&p, python, k_peer, "OMP_NUM_THREADS=2", args)) {
        char name[64], dn[16];
        long long side;
        int T;
        double t;
        while (fscanf(p.out, "%d %63s %15s %lld %lf", &T, name, dn, &side, &t) == 5)
            for (int s = 0; s < NSZ; s++)
                for (int d = 0; d < NDT; d++)
                    for (int o = 0; o < OP_COUNT; o++)
                        if ((T == 1 || T == 2) && side == sides[s] && strcmp(dn, k_dt_names[d]) == 0 &&
                            strcmp(name, k_ops[o]) == 0)
                            out[T - 1][s][d][o] = t;
    }
    bench_peer_finish(&p);
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *python = "/usr/bin/python3";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) python = argv[++i];
        else {
            printf("usage: bench_select [--quick] [--python PATH]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    double mt = quick ? 0.002 : 0.05;
    const int64_t *sides = quick ? k_side_quick : k_side_full;
    printf("bench_select: isa %s%s\n", wk_cpu_isa(), quick ? "  [--quick]" : "");
    static double pt[2][NSZ][NDT][OP_COUNT];
    peer(python, mt, sides, pt);
    for (int T = 1; T <= 2; T++) {
        if (wk_set_num_threads(T) != WK_OK) {
            fprintf(stderr, "wk_set_num_threads(%d): %s\n", T, wk_last_error());
            return 1;
        }
        printf("\n=== %d thread%s ===\n", T, T > 1 ? "s" : "");
        printf("%-12s %-5s %-10s %11s %7s %11s %9s\n", "op", "dtype", "size", "wick us", "x mul", "torch us",
               "vs torch");
        for (int s = 0; s < NSZ; s++)
            for (int d = 0; d < NDT; d++) {
                bctx x = {0};
                if (!setup(&x, sides[s], k_dts[d])) {
                    fprintf(stderr, "bench_select: setup failed: %s\n", wk_last_error());
                    teardown(&x);
                    return 1;
                }
                char size[32];
                snprintf(size, sizeof size, "%lldx%lld", (long long)sides[s], (long long)sides[s]);
                double tmul = 0;
                for (int o = 0; o < OP_COUNT; o++) {
                    x.op = o;
                    double w = bench_time_calls(call, &x, mt);
                    if (o == OP_MUL) tmul = w;
                    char pts[32], rs[32];
                    double p = pt[T - 1][s][d][o];
                    if (p > 0) {
                        snprintf(pts, sizeof pts, "%.1f", p * 1e6);
                        snprintf(rs, sizeof rs, "%.2f", p / w);
                    } else {
                        snprintf(pts, sizeof pts, "n/a");
                        snprintf(rs, sizeof rs, "n/a");
                    }
                    printf("%-12s %-5s %-10s %11.1f %7.2f %11s %9s\n", k_ops[o], k_dt_names[d], size, w * 1e6,
                           w / tmul, pts, rs);
                }
                teardown(&x);
            }
    }
    return g_fail ? 1 : 0;
}
