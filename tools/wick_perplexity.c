/* `wick perplexity -m MODEL -f TEXT [--ctx N] [--bytes B] [--threads T]`:
 * a decoder model's perplexity over a text file, measured as llama.cpp's
 * llama-perplexity does (wk_lm_perplexity: chunks of N tokens, 512 by
 * default, BOS first where the model adds one, the second half of each
 * chunk scored), so the two numbers can be set side by side. --bytes reads
 * only the first B bytes. Prints "ppl P over C chunks (S tokens scored)" on
 * stdout and the timing on stderr. Errors: one line on stderr, exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/wick_cli.h"
#include "wick/generate.h"
#include "wick/lm.h"

static int fail(const char *fmt, const char *a) {
    fprintf(stderr, "wick perplexity: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The first `limit` bytes of path (all of it when limit <= 0). */
static char *read_text(const char *path, long limit, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - 1 - n;
        if (limit > 0 && (long)(n + want) > limit) want = (size_t)limit - n;
        size_t got = fread(buf + n, 1, want, f);
        n += got;
        if (got == 0 || (limit > 0 && (long)n >= limit)) break;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

static bool parse_long(const char *s, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v <= 0) return false;
    *out = v;
    return true;
}

int wk__cli_perplexity(int argc, char **argv) {
    const char *model = NULL, *file = NULL;
    long ctx = 512, bytes = 0, threads = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: wick perplexity -m MODEL -f TEXT [--ctx N (512)] [--bytes B] [--threads T]\n");
            return 0;
        }
        if (i + 1 >= argc) return fail("%s needs a value", a);
        const char *v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) file = v;
        else if (!strcmp(a, "--ctx")) ok = parse_long(v, &ctx);
        else if (!strcmp(a, "--bytes")) ok = parse_long(v, &bytes);
        else if (!strcmp(a, "--threads")) ok = parse_long(v, &threads) && threads <= 1024;
        else return fail("unknown option %s (try --help)", a);
        if (!ok) return fail("bad value for %s", a);
    }
    if (!model || !file) return fail("%s", "needs -m MODEL and -f TEXT");
    if (threads > 0) wk_set_num_threads((int)threads);
    size_t len = 0;
    char *text = read_text(file, bytes, &len);
    if (!text) return fail("cannot read %s", file);
    double t0 = now_s();
    wk_lm *m = wk_lm_load(model, NULL);
    if (!m) {
        free(text);
        return fail("%s", wk_last_error());
    }
    const wk_tokenizer *tok = wk_lm_tokenizer(m);
    int rc = 1;
    int32_t *ids = tok ? malloc(sizeof(int32_t) * (len + 8)) : NULL;
    if (!tok) fail("%s has no tokenizer", model);
    else if (!ids) fail("%s", "out of memory");
    else {
        int64_t n = wk_tokenizer_encode(tok, text, len, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, ids,
                                        (int64_t)len + 8);
        wk_perplexity p;
        double t1 = now_s();
        if (n < 0 || wk_lm_perplexity(m, ids, n, ctx, wk_tokenizer_adds_bos(tok) ? wk_tokenizer_bos(tok) : -1, &p))
            fail("%s", wk_last_error());
        else {
            printf("ppl %.4f over %lld chunks (%lld tokens scored, %lld in the text, context %ld)\n", p.ppl,
                   (long long)p.chunks, (long long)p.scored, (long long)n, ctx);
            fprintf(stderr, "wick perplexity: load + tokenize %.2f s, %lld chunks in %.2f s (%.1f tok/s)\n", t1 - t0,
                    (long long)p.chunks, now_s() - t1, (double)(p.chunks * ctx) / (now_s() - t1));
            rc = 0;
        }
    }
    free(ids);
    free(text);
    wk_lm_free(m);
    return rc;
}
