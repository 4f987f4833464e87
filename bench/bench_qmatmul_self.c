/* wick's qmatmul alone (the llama.cpp comparison is bench_qmatmul): GFLOP/s
 * and GB/s of weight bytes for the bench rows, 1 and 2 threads, beside the
 * read bandwidth of a buffer of the weights' size measured in the same run.
 *   bench_qmatmul_self [type ...]     (default: q4_0 q4_1 q8_0 q4_K q6_K f16 bf16)
 * env BENCH_M="1 128 512", BENCH_SHAPES="4096x4096 576x576 ..." (N x K).
 * BENCH_CPUTIME=1 times by the process's CPU time instead of the wall clock
 * (on a machine shared with other jobs: the time this process computed,
 * which for 2 threads is the sum over both). */
#include "peer.h"
#include "base/blocks.h"
#include "wick/nn.h"
#include "wick/wick.h"
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

static int g_cputime;

static double now(void) {
    if (!g_cputime) return bench_now();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* bench_time_calls with the clock chosen above */
static double time_calls(void (*call)(void *), void *ctx, double min_time) {
    call(ctx);
    int64_t n = 1;
    for (;;) {
        double t0 = now();
        for (int64_t i = 0; i < n; i++) call(ctx);
        if (now() - t0 >= min_time || n > (1 << 24)) break;
        n *= 2;
    }
    double t[5];
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (int64_t i = 0; i < n; i++) call(ctx);
        t[r] = (now() - t0) / (double)n;
    }
    return bench_median(t, 5);
}

typedef struct {
    wk_tensor *x, *w;
} qcall;
static void call_qmm(void *p) {
    qcall *c = p;
    wk_tensor *y = wk_qmatmul(c->x, c->w);
    if (!y) {
        fprintf(stderr, "qmatmul failed: %s\n", wk_last_error());
        exit(1);
    }
    wk_tensor_free(y);
}

typedef struct {
    const uint64_t *p;
    size_t n;
    uint64_t sink;
} rcall;
static void call_read(void *p) {
    rcall *c = p;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    __asm__ volatile("" ::: "memory");
    for (size_t i = 0; i + 4 <= c->n; i += 4) {
        s0 += c->p[i];
        s1 += c->p[i + 1];
        s2 += c->p[i + 2];
        s3 += c->p[i + 3];
    }
    c->sink += s0 ^ s1 ^ s2 ^ s3;
    __asm__ volatile("" ::: "memory"); /* the next call must read the buffer again */
}

/* random blocks with a sane f16 scale at the start of every block (all
 * bench types keep d there except q6_K: the values do not change speed,
 * only NaN/inf must be avoided, so every uint16 that could be a scale gets
 * a finite small value) */
static wk_tensor *weights(wk_dtype dt, int64_t n, int64_t k) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    size_t nbytes = (size_t)(n * k / di->block_elems) * di->block_bytes;
    if (!wk_dtype_is_quantized(dt)) nbytes = (size_t)(n * k) * 2;
    uint16_t *b = malloc(nbytes);
    for (size_t i = 0; i < nbytes / 2; i++) b[i] = (uint16_t)(0x2000 + (rand() & 0x0fff)); /* finite f16/bf16 */
    if (wk_dtype_is_quantized(dt)) /* byte noise in the values keeps the kernels honest */
        for (size_t i = 0; i < nbytes; i += 7) ((uint8_t *)b)[i] = (uint8_t)rand();
    if (wk_dtype_is_quantized(dt))
        for (size_t o = 0; o + di->block_bytes <= nbytes; o += di->block_bytes) {
            uint16_t d = 0x2000;
            if (dt == WK_Q6_K) memcpy((uint8_t *)b + o + 208, &d, 2);
            else memcpy((uint8_t *)b + o, &d, 2), memcpy((uint8_t *)b + o + 2, &d, 2);
        }
    wk_tensor *w = wk_from_host(b, nbytes, (int64_t[]){n, k}, 2, dt, wk_cpu());
    free(b);
    return w;
}

int main(int argc, char **argv) {
    const char *deft[] = {"q4_0", "q4_1", "q8_0", "q4_K", "q6_K", "f16", "bf16"};
    /* --quick (CI's smoke run of every bench): one type, one small shape */
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (quick) argc = 1;
    int nt = quick ? 1 : argc > 1 ? argc - 1 : 7;
    g_cputime = getenv("BENCH_CPUTIME") && atoi(getenv("BENCH_CPUTIME"));
    const char *ms_env = quick ? "1 16" : getenv("BENCH_M"), *sh_env = quick ? "576x576" : getenv("BENCH_SHAPES");
    char ms_buf[256], sh_buf[512];
    snprintf(ms_buf, sizeof ms_buf, "%s", ms_env ? ms_env : "1 128 512");
    snprintf(sh_buf, sizeof sh_buf, "%s", sh_env ? sh_env : "4096x4096 576x576 576x1536 1536x576 49152x576");
    int64_t ms[16], sn[16], sk[16];
    int nm = 0, ns = 0;
    for (char *t = strtok(ms_buf, " "); t && nm < 16; t = strtok(NULL, " ")) ms[nm++] = atoll(t);
    for (char *t = strtok(sh_buf, " "); t && ns < 16; t = strtok(NULL, " "))
        if (sscanf(t, "%ldx%ld", &sn[ns], &sk[ns]) == 2) ns++;
    printf("isa %s\n%-5s %6s %6s %4s %3s %10s %9s %9s %9s\n", wk_cpu_isa(), "type", "N", "K", "M", "thr", "ms",
           "GFLOP/s", "wGB/s", "readGB/s");
    for (int ti = 0; ti < nt; ti++) {
        wk_dtype dt;
        if (!wk_dtype_from_name(argc > 1 ? argv[ti + 1] : deft[ti], &dt)) {
            fprintf(stderr, "unknown type %s\n", argc > 1 ? argv[ti + 1] : deft[ti]);
            return 2;
        }
        for (int s = 0; s < ns; s++) {
            if (sk[s] % wk_dtype_info_of(dt)->block_elems) {
                printf("%-5s %6ld %6ld    -   - (K is not a whole number of %u-element blocks)\n", wk_dtype_name(dt),
                       (long)sn[s], (long)sk[s], wk_dtype_info_of(dt)->block_elems);
                continue;
            }
            wk_tensor *w = weights(dt, sn[s], sk[s]);
            if (!w) {
                fprintf(stderr, "%s\n", wk_last_error());
                return 1;
            }
            const wk_dtype_info *di = wk_dtype_info_of(dt);
            size_t wbytes = (size_t)(wk_numel(w) / di->block_elems) * di->block_bytes;
            rcall rc = {malloc(wbytes + 64), wbytes / 8, 0};
            memset((void *)rc.p, 1, wbytes);
            for (int mi = 0; mi < nm; mi++) {
                wk_tensor *x = wk_randn((int64_t[]){ms[mi], sk[s]}, 2, 0, 1, WK_F32, wk_cpu());
                for (int th = 1; th <= 2; th++) {
                    wk_set_num_threads(th);
                    qcall c = {x, w};
                    double t = time_calls(call_qmm, &c, 0.05);
                    double tr = time_calls(call_read, &rc, 0.02);
                    printf("%-5s %6ld %6ld %4ld %3d %10.3f %9.1f %9.1f %9.1f\n", wk_dtype_name(dt), (long)sn[s],
                           (long)sk[s], (long)ms[mi], th, t * 1e3, 2.0 * (double)ms[mi] * (double)sn[s] * (double)sk[s] / t * 1e-9,
                           (double)wbytes / t * 1e-9, (double)wbytes / tr * 1e-9);
                    fflush(stdout);
                }
                wk_tensor_free(x);
            }
            free((void *)rc.p);
            wk_tensor_free(w);
        }
    }
    return 0;
}
