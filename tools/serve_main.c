/* `wick serve -m MODEL [options]`: the options, loading, the engine, and
 * the signals: SIGTERM / SIGINT stop taking requests (503), let the running
 * ones finish (at most --drain-timeout seconds; a second signal cancels
 * them), then exit 0. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <microhttpd.h>
#include "tools/serve.h"
#include "tools/wick_cli.h"
#include "tools/wick_lm_args.h"

static const char USAGE[] =
    "usage: wick serve -m MODEL [options]\n"
    "An OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions, /v1/embeddings;\n"
    "GET /v1/models, /health, /metrics. Prints \"listening on http://HOST:PORT\" when ready.\n"
    "  -m, --model PATH          a .gguf file or an HF directory\n"
    "  --host ADDR               address to bind (default 127.0.0.1: this machine only)\n"
    "  --port N                  TCP port (default 8080; 0: any free port, printed)\n"
    "  --slots N                 sequences decoded together (default 8)\n"
    "  --ctx N                   positions per sequence, prompt + output (default: the model's)\n"
    "  --kv-type f32|f16|q8_0    KV cache storage (default f32)\n"
    "  --kv-blocks N             KV blocks in the pool (default: enough for every slot's full context)\n"
    "  --max-step-tokens N       rows one forward step runs, prefill chunks included (default 512)\n"
    "  --no-prefix-cache         do not reuse the KV blocks of a prompt prefix seen before\n"
    "  --threads N               CPU threads\n"
    "  --device cpu|cuda[:N]     where the model runs (default cpu)\n"
    "  --api-key KEY             require 'Authorization: Bearer KEY' (also $WICK_API_KEY); /health stays open\n"
    "  --embedding-model DIR     a BERT directory (all-MiniLM-L6-v2 ...) for /v1/embeddings\n"
    "  --chat-template FILE      a Jinja chat template instead of the model's\n"
    "  --max-queue N             requests waiting for a slot before 429 (default 64)\n"
    "  --max-body BYTES          largest request body (default 1048576; larger: 413)\n"
    "  --max-prompt TOKENS       longest prompt (default: no limit but the context)\n"
    "  --max-tokens-limit N      largest max_tokens a request may ask (default 4096; also the default\n"
    "                            when a request gives none; 0: no limit but the context)\n"
    "  --max-conns N             open connections at most (default 256)\n"
    "  --timeout S               close connections idle for S seconds (default 30)\n"
    "  --drain-timeout S         on SIGTERM, wait at most S seconds for running requests (default 30)\n";

static int fail(const char *fmt, const char *arg) {
    fprintf(stderr, "wick serve: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

static bool num(const char *v, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return false;
    *out = x;
    return true;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    wk__sbuf b = {0};
    char tmp[4096];
    size_t k;
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0) wk__sbuf_put(&b, tmp, k);
    bool err = ferror(f);
    fclose(f);
    if (err) {
        wk__sbuf_free(&b);
        return NULL;
    }
    return wk__sbuf_take(&b, NULL);
}

/* The id clients name the model by: the file's (or directory's) base name. */
static char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t a = n;
    while (a > 0 && path[a - 1] != '/') a--;
    char *s = malloc(n - a + 1);
    if (s) {
        memcpy(s, path + a, n - a);
        s[n - a] = 0;
    }
    return s;
}

static char *special_text(const wk_tokenizer *t, int32_t id) {
    if (id < 0) return calloc(1, 1);
    int64_t n = wk_tokenizer_decode(t, &id, 1, false, NULL, 0);
    char *s = n >= 0 ? calloc((size_t)n + 1, 1) : calloc(1, 1);
    if (s && n > 0) wk_tokenizer_decode(t, &id, 1, false, s, (size_t)n + 1);
    return s;
}

typedef struct {
    const char *model, *host, *device, *kv_type, *api_key, *bert_dir, *template_file;
    int64_t port, threads, max_conns, timeout, drain;
    wk_engine_opts eo;
    int64_t max_body, max_prompt, max_tokens_limit;
} opts;

static int parse(int argc, char **argv, opts *o) {
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            fputs(USAGE, stdout);
            return -1;
        }
        if (!strcmp(f, "--no-prefix-cache")) {
            o->eo.prefix_cache = false;
            continue;
        }
        if (f[0] != '-') return fail("unexpected argument '%s' (try 'wick serve --help')", f);
        if (i + 1 >= argc) return fail("%s needs a value", f);
        const char *v = argv[++i];
        bool ok = true;
        int64_t x = 0;
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) o->model = v;
        else if (!strcmp(f, "--host")) o->host = v;
        else if (!strcmp(f, "--port")) ok = num(v, 0, 65535, &o->port);
        else if (!strcmp(f, "--slots")) ok = num(v, 1, 4096, &x), o->eo.slots = (int)x;
        else if (!strcmp(f, "--ctx")) ok = num(v, 1, INT32_MAX, &o->eo.ctx);
        else if (!strcmp(f, "--kv-type")) {
            o->kv_type = v;
            ok = wk_dtype_from_name(v, &o->eo.kv_dtype) &&
                 (o->eo.kv_dtype == WK_F32 || o->eo.kv_dtype == WK_F16 || o->eo.kv_dtype == WK_Q8_0);
            if (!ok) wk_clear_error();
        } else if (!strcmp(f, "--kv-blocks")) ok = num(v, 1, INT32_MAX, &o->eo.kv_blocks);
        else if (!strcmp(f, "--max-step-tokens")) ok = num(v, 1, INT32_MAX, &o->eo.max_step_tokens);
        else if (!strcmp(f, "--threads")) ok = num(v, 1, 1024, &o->threads);
        else if (!strcmp(f, "--device")) o->device = v;
        else if (!strcmp(f, "--api-key")) o->api_key = v;
        else if (!strcmp(f, "--embedding-model")) o->bert_dir = v;
        else if (!strcmp(f, "--chat-template")) o->template_file = v;
        else if (!strcmp(f, "--max-queue")) ok = num(v, 0, INT32_MAX, &o->eo.max_queue);
        else if (!strcmp(f, "--max-body")) ok = num(v, 64, (int64_t)1 << 32, &o->max_body);
        else if (!strcmp(f, "--max-prompt")) ok = num(v, 1, INT32_MAX, &o->max_prompt);
        else if (!strcmp(f, "--max-tokens-limit")) ok = num(v, 0, INT32_MAX, &o->max_tokens_limit);
        else if (!strcmp(f, "--max-conns")) ok = num(v, 1, 65536, &o->max_conns);
        else if (!strcmp(f, "--timeout")) ok = num(v, 1, 86400, &o->timeout);
        else if (!strcmp(f, "--drain-timeout")) ok = num(v, 0, 86400, &o->drain);
        else return fail("unknown option '%s' (try 'wick serve --help')", f);
        if (!ok) {
            fprintf(stderr, "wick serve: bad value '%s' for %s (try 'wick serve --help')\n", v, f);
            return 1;
        }
    }
    if (!o->model) return fail("%s", "-m MODEL is required (a .gguf file or an HF directory)");
    return 0;
}

/* Wait for SIGTERM / SIGINT (blocked in every thread, taken here). */
static int wait_signal(const sigset_t *set, int timeout_ms) {
    if (timeout_ms < 0) {
        int sig = 0;
        return sigwait(set, &sig) == 0 ? sig : -1;
    }
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    return sigtimedwait(set, NULL, &ts);
}

int wk__cli_serve(int argc, char **argv) {
    opts o = {.host = "127.0.0.1", .device = "cpu", .port = 8080, .max_conns = 256, .timeout = 30, .drain = 30,
              .max_body = 1 << 20, .max_tokens_limit = 4096};
    wk_engine_opts_default(&o.eo);
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    if (!o.api_key) {
        const char *k = getenv("WICK_API_KEY");
        if (k && k[0]) o.api_key = k;
    }
    /* the signals go to sigwait below, never to a thread that happens to run */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    static wk__srv s; /* static: its metrics table is large */
    pthread_mutex_init(&s.bert_mu, NULL);
    pthread_mutex_init(&s.metrics_mu, NULL);
    atomic_init(&s.state, WK__SRV_LOADING);
    s.api_key = o.api_key;
    s.max_body = o.max_body;
    s.max_prompt = o.max_prompt;
    s.max_tokens_limit = o.max_tokens_limit;
    s.created = (int64_t)time(NULL);
    s.model_id = base_name(o.model);
    if (o.bert_dir) s.bert_id = base_name(o.bert_dir);

    /* listen first: /health answers 503 while the weights load */
    int port = (int)o.port;
    struct MHD_Daemon *d = wk__srv_listen(&s, o.host, &port, (int)o.max_conns, (int)o.timeout);
    if (!d) return 1;
    rc = 1;
    wk__cli_lm_args la = {.cmd = "serve", .model = o.model, .device = o.device, .threads = o.threads};
    wk_device *dev;
    double load_ms;
    if (!(s.lm = wk__cli_lm_load(&la, &dev, &load_ms))) goto out;
    s.tok = wk_lm_tokenizer(s.lm);
    const char *tsrc = wk_lm_chat_template(s.lm);
    char *own_tsrc = NULL;
    if (o.template_file && !(tsrc = own_tsrc = read_file(o.template_file))) {
        fail("cannot read the chat template '%s'", o.template_file);
        goto out;
    }
    if (tsrc && !(s.tmpl = wk_chat_template_compile(tsrc))) {
        fprintf(stderr, "wick serve: the chat template does not compile: %s\n", wk_last_error());
        free(own_tsrc);
        goto out;
    }
    free(own_tsrc);
    if (!s.tmpl) fprintf(stderr, "wick serve: the model has no chat template: /v1/chat/completions will answer 400\n");
    s.bos_text = special_text(s.tok, wk_tokenizer_bos(s.tok));
    s.eos_text = special_text(s.tok, wk_tokenizer_eos(s.tok));
    const wk_lm_config *cfg = wk_lm_config_of(s.lm);
    s.ctx = o.eo.ctx > 0 && o.eo.ctx < cfg->max_ctx ? o.eo.ctx : cfg->max_ctx;
    if (o.bert_dir && !(s.bert = wk_bert_load(o.bert_dir, dev))) {
        fprintf(stderr, "wick serve: --embedding-model %s: %s\n", o.bert_dir, wk_last_error());
        goto out;
    }
    if (!(s.engine = wk_engine_new(s.lm, &o.eo))) {
        fprintf(stderr, "wick serve: cannot start the engine: %s\n", wk_last_error());
        goto out;
    }
    atomic_store(&s.state, WK__SRV_READY);
    fprintf(stderr, "wick serve: %s loaded in %.0f ms (%lld layers, context %lld, %d slots, %d threads)\n", s.model_id,
            load_ms, (long long)cfg->n_layers, (long long)s.ctx, o.eo.slots, wk_num_threads());
    printf("listening on http://%s:%d\n", o.host, port);
    fflush(stdout);

    int sig = wait_signal(&set, -1);
    fprintf(stderr, "wick serve: %s: draining (new requests get 503)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&s.state, WK__SRV_DRAINING);
    wk_engine_shutdown(s.engine, true);
    /* wait for the engine, then for the replies still being written, at most --drain-timeout */
    int64_t left = o.drain * 1000;
    bool cancelled = false;
    while (left > 0 && (!wk_engine_wait_idle(s.engine, 0) || atomic_load(&s.active) > 0)) {
        if (wait_signal(&set, 100) > 0 && !cancelled) {
            fprintf(stderr, "wick serve: second signal: cancelling the running requests\n");
            wk_engine_shutdown(s.engine, false);
            cancelled = true;
        }
        left -= 100;
    }
    if (left <= 0) {
        fprintf(stderr, "wick serve: drain timeout: cancelling what still runs\n");
        wk_engine_shutdown(s.engine, false);
        wk_engine_wait_idle(s.engine, 5000);
    }
    rc = 0;
out:
    MHD_stop_daemon(d); /* joins the connection threads: nothing reads the engine after this */
    wk_engine_free(s.engine);
    wk_bert_free(s.bert);
    wk_chat_template_free(s.tmpl);
    wk_lm_free(s.lm);
    free(s.bos_text);
    free(s.eos_text);
    free(s.model_id);
    free(s.bert_id);
    if (rc == 0) fprintf(stderr, "wick serve: stopped\n");
    return rc;
}
