/* The options and model loading `wick generate` and `wick chat` share
 * (tools/wick_lm_args.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tools/wick_cli.h"
#include "tools/wick_lm_args.h"
#include "wick/dist.h"

int wk__cli_lm_fail(const wk__cli_lm_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wick %s: ", a->cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

double wk__cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static bool parse_i64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-') return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_f64(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* ---- loading bar (a terminal only) ---- */

typedef struct {
    int shown; /* columns drawn so far, -1 before the first draw */
    const char *cmd;
} bar;

static void bar_draw(void *ctx, double f) {
    bar *b = ctx;
    int w = 40, n = (int)(f * w + 0.5);
    if (n < 0) n = 0;
    if (n > w) n = w;
    if (n == b->shown) return;
    b->shown = n;
    char line[64];
    memset(line, '#', (size_t)n);
    memset(line + n, '.', (size_t)(w - n));
    line[w] = 0;
    fprintf(stderr, "\rwick %s: loading [%s] %3d%%", b->cmd, line, (int)(f * 100 + 0.5));
    fflush(stderr);
}

static void bar_erase(const bar *b) {
    if (b->shown >= 0) fprintf(stderr, "\r\033[K");
}

/* ---- arguments ---- */

static bool takes_value(const char *f) {
    static const char *flags[] = {"-m",       "--model",  "-p",        "--prompt",         "-n",
                                  "--n-predict", "--temp", "--top-k",  "--top-p",          "--min-p",
                                  "--repeat-penalty", "--repeat-last-n", "--seed", "--system", "--stop",
                                  "--ctx",    "--threads", "--device", "--dtype",
                                  "--kv-type", "--tp",      "--pp"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (!strcmp(f, flags[i])) return true;
    return false;
}

/* The value after flag i, or NULL (the caller reports it). */
static const char *value(int argc, char **argv, int *i) { return *i + 1 < argc ? argv[++*i] : NULL; }

int wk__cli_lm_parse(int argc, char **argv, wk__cli_lm_args *a) {
    a->device = "cpu";
    wk_generate_opts_default(&a->g);
    a->g.stop = a->stops;
    wk_sampler_opts *s = &a->g.sampling;
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            fputs(a->usage, stdout);
            return -1;
        }
        if (!strcmp(f, "--chat") && !a->chat_cmd) {
            a->g.chat = true;
            continue;
        }
        if (!strcmp(f, "--ignore-eos")) {
            a->g.stop_at_eos = false;
            continue;
        }
        if (f[0] != '-') return wk__cli_lm_fail(a, "unexpected argument '%s' (try 'wick %s --help')", f, a->cmd);
        /* pipeline parallel (--pp) runs `wick generate` under mpirun only */
        bool par = !strcmp(f, "--pp");
        if (!takes_value(f) || (a->chat_cmd && (par || !strcmp(f, "-p") || !strcmp(f, "--prompt")))) return wk__cli_lm_fail(a, "unknown option '%s' (try 'wick %s --help')", f, a->cmd);
        if (!(v = value(argc, argv, &i))) return wk__cli_lm_fail(a, "%s needs a value (try 'wick %s --help')", f, a->cmd);
        bool ok = true;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) a->prompt = v;
        else if (!strcmp(f, "-n") || !strcmp(f, "--n-predict")) ok = parse_i64(v, &a->n) && (a->n >= 1 || a->n == -1);
        else if (!strcmp(f, "--temp")) ok = parse_f64(v, &s->temperature);
        else if (!strcmp(f, "--top-k")) ok = parse_i64(v, &s->top_k) && s->top_k >= 0;
        else if (!strcmp(f, "--top-p")) ok = parse_f64(v, &s->top_p) && s->top_p > 0 && s->top_p <= 1;
        else if (!strcmp(f, "--min-p")) ok = parse_f64(v, &s->min_p) && s->min_p >= 0 && s->min_p <= 1;
        else if (!strcmp(f, "--repeat-penalty")) ok = parse_f64(v, &s->repeat_penalty) && s->repeat_penalty > 0;
        else if (!strcmp(f, "--repeat-last-n"))
            ok = parse_i64(v, &s->repeat_last_n) && s->repeat_last_n >= -1;
        else if (!strcmp(f, "--seed")) ok = parse_u64(v, &s->seed);
        else if (!strcmp(f, "--system")) {
            a->g.system = v;
            a->g.chat = !a->chat_cmd;
        } else if (!strcmp(f, "--stop")) {
            if (a->g.n_stop == WK__CLI_MAX_STOPS)
                return wk__cli_lm_fail(a, "more than %d --stop strings", WK__CLI_MAX_STOPS);
            ok = v[0] != 0;
            a->stops[a->g.n_stop++] = v;
        } else if (!strcmp(f, "--ctx")) ok = parse_i64(v, &a->ctx) && a->ctx >= 1;
        else if (!strcmp(f, "--threads")) ok = parse_i64(v, &a->threads) && a->threads >= 1 && a->threads <= 1024;
        else if (!strcmp(f, "--device")) a->device = v;
        else if (!strcmp(f, "--dtype")) {
            a->dtype = v;
            ok = !strcmp(v, "f32") || !strcmp(v, "f16") || !strcmp(v, "bf16");
        } else if (!strcmp(f, "--kv-type")) {
            a->kv_type = v;
            ok = !strcmp(v, "f32") || !strcmp(v, "f16") || !strcmp(v, "bf16");
        }
        else if (!strcmp(f, "--tp")) ok = parse_i64(v, &a->tp) && a->tp >= 1 && a->tp <= 4096;
        else if (!strcmp(f, "--pp")) ok = parse_i64(v, &a->pp) && a->pp >= 1 && a->pp <= 4096;
        if (!ok) return wk__cli_lm_fail(a, "bad value '%s' for %s (try 'wick %s --help')", v, f, a->cmd);
    }
    /* every rank would need the same turns, and only rank 0 has the terminal */
    if (a->chat_cmd && a->tp > 1)
        return wk__cli_lm_fail(a, "--tp %lld: wick chat runs in one process (its turns come from one terminal); "
                                  "use 'mpirun -np %lld wick generate --tp %lld ...'",
                               (long long)a->tp, (long long)a->tp, (long long)a->tp);
    if (!a->model) return wk__cli_lm_fail(a, "-m MODEL is required (a .gguf file or an HF directory)");
    if (!a->prompt && !a->chat_cmd) return wk__cli_lm_fail(a, "-p PROMPT is required");
    if (a->tp && a->pp) return wk__cli_lm_fail(a, "--tp and --pp cannot be used together (one kind of model parallelism)");
    a->g.max_new_tokens = a->n == -1 ? 0 : a->n;
    a->g.max_ctx = a->ctx;
    return 0;
}

static wk_device *open_device(const char *name) {
    if (!strcmp(name, "cpu")) return wk_cpu();
    int ordinal = 0;
    if (!strncmp(name, "cuda", 4) && (name[4] == 0 || name[4] == ':')) {
        int64_t v = 0;
        if (name[4] == ':' && (!parse_i64(name + 5, &v) || v < 0 || v > 1024)) return NULL;
        ordinal = (int)v;
        return wk_cuda(ordinal);
    }
    return NULL;
}


/* --tp N: the MPI job's world, which must be N processes. false after
 * printing why not. */
static bool tp_world(wk__cli_lm_args *a) {
    a->comm = wk_comm_init_mpi(NULL, NULL, NULL);
    if (!a->comm) {
        if (a->tp == 1) { /* nothing to split: one process without MPI is fine */
            wk_clear_error();
            return true;
        }
        wk__cli_lm_fail(a, "--tp %lld: %s", (long long)a->tp, wk_last_error());
        return false;
    }
    int size = wk_comm_size(a->comm);
    a->rank = wk_comm_rank(a->comm);
    if (size == a->tp) return true;
    if (size == 1)
        wk__cli_lm_fail(a, "--tp %lld needs %lld processes: launch it as 'mpirun -np %lld wick %s --tp %lld ...'",
                        (long long)a->tp, (long long)a->tp, (long long)a->tp, a->cmd, (long long)a->tp);
    else if (a->rank == 0)
        wk__cli_lm_fail(a, "--tp %lld, but mpirun started %d processes (use mpirun -np %lld)", (long long)a->tp, size,
                        (long long)a->tp);
    wk__cli_lm_done(a);
    return false;
}

void wk__cli_lm_done(wk__cli_lm_args *a) {
    wk_comm_free(a->comm);
    a->comm = NULL;
}

/* TP: every rank learns whether all loaded, so that none waits in a
 * collective for a rank that failed. */
static bool tp_all_ok(wk__cli_lm_args *a, bool ok) {
    if (!a->comm || wk_comm_size(a->comm) == 1) return ok;
    int32_t v = ok ? 1 : 0;
    int64_t one = 1;
    wk_tensor *t = wk_from_host(&v, sizeof v, &one, 1, WK_I32, wk_cpu());
    wk_tensor *r = t ? wk_all_reduce(a->comm, t, WK_DIST_MIN) : NULL;
    int32_t all = 0;
    if (!r || wk_to_host(r, &all, sizeof all) != WK_OK) all = 0;
    wk_tensor_free(t);
    wk_tensor_free(r);
    if (ok && !all) wk__cli_lm_fail(a, "another rank could not load the model");
    return all != 0;
}

wk_lm *wk__cli_lm_load(wk__cli_lm_args *a, wk_device **devp, double *load_ms) {
    wk_clear_error();
    if (a->threads && wk_set_num_threads((int)a->threads) != WK_OK) {
        wk__cli_fail(a->cmd);
        return NULL;
    }
    wk_device *dev = open_device(a->device);
    if (!dev) {
        if (wk_last_status() != WK_OK)
            fprintf(stderr, "wick %s: --device %s: %s\n", a->cmd, a->device, wk_last_error());
        else fprintf(stderr, "wick %s: --device must be cpu or cuda[:N], got '%s'\n", a->cmd, a->device);
        return NULL;
    }
    struct stat sb;
    if (stat(a->model, &sb) != 0) {
        wk__cli_lm_fail(a, "cannot open model '%s': %s", a->model, strerror(errno));
        return NULL;
    }
    if (a->tp && !tp_world(a)) return NULL;
    wk_lm_load_opts lo = {.device = dev, .dtype = WK_F32, .comm = a->comm, .parallel = WK_LM_TENSOR_PARALLEL};
    if (a->dtype) wk_dtype_from_name(a->dtype, &lo.dtype);
    if (a->kv_type) wk_dtype_from_name(a->kv_type, &lo.kv_dtype);
    if (a->pp && wk__cli_pp_attach(a, &lo) != 0) return NULL; /* pipeline parallel */
    bar b = {-1, a->cmd};
    if (isatty(STDERR_FILENO) && a->rank == 0) {
        lo.progress = bar_draw;
        lo.progress_ctx = &b;
    }
    double t0 = wk__cli_now_ms();
    wk_lm *m = wk_lm_load(a->model, &lo);
    *load_ms = wk__cli_now_ms() - t0;
    bar_erase(&b);
    if (!m) wk__cli_fail(a->cmd);
    if (!tp_all_ok(a, m != NULL)) {
        wk_lm_free(m);
        wk__cli_lm_done(a);
        return NULL;
    }
    *devp = dev;
    return m;
}

const char *wk__cli_stop_name(wk_stop_reason r) {
    switch (r) {
    case WK_STOP_MAX_TOKENS: return "token limit";
    case WK_STOP_EOS: return "end of sequence";
    case WK_STOP_STRING: return "stop string";
    case WK_STOP_CALLBACK: return "output closed";
    case WK_STOP_CONTEXT_FULL: return "context full";
    case WK_STOP_NONE: break;
    }
    return "?";
}

