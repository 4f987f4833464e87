/* `wick generate -m MODEL -p PROMPT [options]`: text from a llama-family
 * model (a .gguf file or an HF directory) through wk_generate.
 *
 * stdout gets only the generated text, streamed and flushed piece by piece
 * (plus one newline at the end when stdout is a terminal). stderr gets a
 * loading bar while the weights are read (only when stderr is a terminal;
 * it is erased afterwards) and, after the text, the timings. Every error is
 * one line "wick generate: ..." on stderr, exit status 1, nothing on stdout:
 * the timings are printed only after generation succeeded. */
#include <errno.h>
#include "wick/lm.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tools/wick_cli.h"
#include "wick/generate.h"

#define DEFAULT_N 128
#define MAX_STOPS 16

static const char USAGE[] =
    "usage: wick generate -m MODEL -p PROMPT [options]\n"
    "  -m, --model PATH        a .gguf file or an HF directory (config.json, *.safetensors, tokenizer.json)\n"
    "  -p, --prompt TEXT       the prompt (special tokens such as <|im_start|> are parsed)\n"
    "  -n, --n-predict N       tokens to generate (default 128; -1: until EOS or the context is full)\n"
    "  --temp T                temperature (default 0.8; <= 0: greedy)\n"
    "  --top-k K               keep the K most likely (default 40; 0: off)\n"
    "  --top-p P               nucleus sampling, P in (0, 1] (default 0.95; 1: off)\n"
    "  --min-p P               keep p >= P * p_max, P in [0, 1] (default 0.05; 0: off)\n"
    "  --repeat-penalty R      llama.cpp's repetition penalty (default 1: off)\n"
    "  --repeat-last-n N       ids the penalty looks back over (default 64; -1: all)\n"
    "  --seed S                the same seed gives the same text (default 0)\n"
    "  --chat                  wrap the prompt in the model's chat template (ChatML)\n"
    "  --system TEXT           the chat's system message (implies --chat)\n"
    "  --stop STR              stop before STR (not printed); up to 16\n"
    "  --ignore-eos            do not stop at the end-of-sequence token\n"
    "  --ctx N                 use at most N positions of the context\n"
    "  --dtype f32|f16|bf16    dtype of the unquantized weights and activations (default f32)\n"
    "  --threads N             CPU threads\n"
    "  --device cpu|cuda[:N]   where the model runs (default cpu)\n"
    "\n"
    "Generation stops at -n tokens, at the end-of-sequence token, before a --stop string, or when\n"
    "the prompt and the new tokens fill the context (the model's, or --ctx); stderr then ends with\n"
    "\"stopped: context full\" and the exit status is still 0: that is a normal end, not an error.\n"
    "Exit status: 0 when the text was generated (whatever stopped it), 1 on any error.\n";

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("wick generate: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static double now_ms(void) {
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
    fprintf(stderr, "\rwick generate: loading [%s] %3d%%", line, (int)(f * 100 + 0.5));
    fflush(stderr);
}

static void bar_erase(const bar *b) {
    if (b->shown >= 0) fprintf(stderr, "\r\033[K");
}

/* ---- output ---- */

typedef struct {
    bool wrote, failed;
} out_state;

static int on_text(void *ctx, const char *bytes, size_t n) {
    out_state *o = ctx;
    if (fwrite(bytes, 1, n, stdout) != n || fflush(stdout) != 0) {
        o->failed = true;
        return 1;
    }
    o->wrote = true;
    return 0;
}

static const char *reason_name(wk_stop_reason r) {
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

/* ---- arguments ---- */

typedef struct {
    const char *model, *prompt, *device, *dtype;
    int64_t n, threads, ctx;
    wk_generate_opts g;
    const char *stops[MAX_STOPS];
} args;

static bool takes_value(const char *f) {
    static const char *flags[] = {"-m",       "--model",  "-p",        "--prompt",         "-n",
                                  "--n-predict", "--temp", "--top-k",  "--top-p",          "--min-p",
                                  "--repeat-penalty", "--repeat-last-n", "--seed", "--system", "--stop",
                                  "--ctx",    "--threads", "--device", "--dtype"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (!strcmp(f, flags[i])) return true;
    return false;
}

/* The value after flag i, or NULL (the caller reports it). */
static const char *value(int argc, char **argv, int *i) { return *i + 1 < argc ? argv[++*i] : NULL; }

static int parse_args(int argc, char **argv, args *a) {
    memset(a, 0, sizeof *a);
    a->n = DEFAULT_N;
    a->device = "cpu";
    wk_generate_opts_default(&a->g);
    a->g.stop = a->stops;
    wk_sampler_opts *s = &a->g.sampling;
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            fputs(USAGE, stdout);
            return -1;
        }
        if (!strcmp(f, "--chat")) {
            a->g.chat = true;
            continue;
        }
        if (!strcmp(f, "--ignore-eos")) {
            a->g.stop_at_eos = false;
            continue;
        }
        if (f[0] != '-') return fail("unexpected argument '%s' (try 'wick generate --help')", f);
        if (!takes_value(f)) return fail("unknown option '%s' (try 'wick generate --help')", f);
        if (!(v = value(argc, argv, &i))) return fail("%s needs a value (try 'wick generate --help')", f);
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
            a->g.chat = true;
        } else if (!strcmp(f, "--stop")) {
            if (a->g.n_stop == MAX_STOPS) return fail("more than %d --stop strings", MAX_STOPS);
            ok = v[0] != 0;
            a->stops[a->g.n_stop++] = v;
        } else if (!strcmp(f, "--ctx")) ok = parse_i64(v, &a->ctx) && a->ctx >= 1;
        else if (!strcmp(f, "--threads")) ok = parse_i64(v, &a->threads) && a->threads >= 1 && a->threads <= 1024;
        else if (!strcmp(f, "--device")) a->device = v;
        else if (!strcmp(f, "--dtype")) {
            a->dtype = v;
            ok = !strcmp(v, "f32") || !strcmp(v, "f16") || !strcmp(v, "bf16");
        }
        if (!ok) return fail("bad value '%s' for %s (try 'wick generate --help')", v, f);
    }
    if (!a->model) return fail("-m MODEL is required (a .gguf file or an HF directory)");
    if (!a->prompt) return fail("-p PROMPT is required");
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

int wk__cli_generate(int argc, char **argv) {
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    wk_clear_error();
    if (a.threads && wk_set_num_threads((int)a.threads) != WK_OK) return wk__cli_fail("generate");
    wk_device *dev = open_device(a.device);
    if (!dev) {
        if (wk_last_status() != WK_OK)
            fprintf(stderr, "wick generate: --device %s: %s\n", a.device, wk_last_error());
        else fprintf(stderr, "wick generate: --device must be cpu or cuda[:N], got '%s'\n", a.device);
        return 1;
    }
    struct stat sb;
    if (stat(a.model, &sb) != 0) return fail("cannot open model '%s': %s", a.model, strerror(errno));

    wk_lm_load_opts lo = {.device = dev, .dtype = WK_F32};
    if (a.dtype) wk_dtype_from_name(a.dtype, &lo.dtype);
    bar b = {-1};
    if (isatty(STDERR_FILENO)) {
        lo.progress = bar_draw;
        lo.progress_ctx = &b;
    }
    double t0 = now_ms();
    wk_lm *m = wk_lm_load(a.model, &lo);
    double load_ms = now_ms() - t0;
    bar_erase(&b);
    if (!m) return wk__cli_fail("generate");

    out_state os = {0};
    a.g.on_text = on_text;
    a.g.ctx = &os;
    wk_generate_stats st;
    wk_status s = wk_generate(m, a.prompt, &a.g, &st);
    if (s != WK_OK) {
        rc = wk__cli_fail("generate");
    } else if (os.failed) {
        rc = fail("writing the text failed: %s", strerror(errno));
    } else {
        if (os.wrote && isatty(STDOUT_FILENO)) fputc('\n', stdout);
        fflush(stdout);
        const wk_lm_config *c = wk_lm_config_of(m);
        int64_t nd = st.n_generated > 0 ? st.n_generated - 1 : 0;
        fprintf(stderr, "wick generate: load %.1f ms (%lld layers, %s, %d threads)\n", load_ms, (long long)c->n_layers,
                wk_device_name(dev), wk_num_threads());
        fprintf(stderr, "wick generate: prompt %lld tokens, prefill %.1f ms (%.1f tok/s), first token after %.1f ms\n",
                (long long)st.n_prompt, st.prefill_ms, st.prefill_ms > 0 ? st.n_prompt * 1e3 / st.prefill_ms : 0.0,
                st.first_token_ms);
        fprintf(stderr, "wick generate: %lld tokens, decode %lld in %.1f ms (%.1f tok/s), stopped: %s\n",
                (long long)st.n_generated, (long long)nd, st.decode_ms,
                st.decode_ms > 0 ? nd * 1e3 / st.decode_ms : 0.0, reason_name(st.stop_reason));
    }
    wk_lm_free(m);
    return rc;
}
