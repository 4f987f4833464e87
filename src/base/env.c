/* The one parser of WICK_* environment variables (see env.h). Each variable
 * is one row of a table: its kind (integer with a range, one of some words,
 * or a 0/1 switch). Values are parsed once into atomics, so queries from any
 * thread are a load. */
#include "base/env.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { KIND_INT, KIND_WORD, KIND_BOOL } env_kind;

typedef struct env_var {
    const char *name;
    env_kind kind;
    int64_t lo, hi;            /* KIND_INT: allowed range */
    const char *const *words;  /* KIND_WORD: NULL-terminated */
} env_var;

static const char *const k_isa_words[] = {"avx512", "avx2", "scalar", "auto", NULL};
static const char *const k_bf16_words[] = {"dp", "fma", NULL};

/* Indexed by wk_env_id. */
static const env_var k_vars[WK_ENV_COUNT] = {
    [WK_ENV_NUM_THREADS] = {"WICK_NUM_THREADS", KIND_INT, 1, 1024, NULL},
    [WK_ENV_CPU_CACHE_MB] = {"WICK_CPU_CACHE_MB", KIND_INT, 0, INT64_C(1) << 40, NULL},
    [WK_ENV_ISA] = {"WICK_ISA", KIND_WORD, 0, 0, k_isa_words},
    [WK_ENV_GEMM_KC] = {"WICK_GEMM_KC", KIND_INT, 1, 1 << 20, NULL},
    [WK_ENV_GEMM_MC] = {"WICK_GEMM_MC", KIND_INT, 1, 1 << 20, NULL},
    [WK_ENV_GEMM_NC] = {"WICK_GEMM_NC", KIND_INT, 1, 1 << 20, NULL},
    [WK_ENV_BF16_KERNEL] = {"WICK_BF16_KERNEL", KIND_WORD, 0, 0, k_bf16_words},
    [WK_ENV_CUDA_TF32] = {"WICK_CUDA_TF32", KIND_BOOL, 0, 1, NULL},
};

static atomic_bool g_set[WK_ENV_COUNT];
static _Atomic int64_t g_value[WK_ENV_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool word_eq(const char *a, size_t n, const char *w) {
    size_t i = 0;
    for (; i < n && w[i]; i++) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != w[i]) return false;
    }
    return i == n && w[i] == 0;
}

/* Parse s (surrounding blanks allowed) for v; false if it is not valid. */
static bool parse(const env_var *v, const char *s, int64_t *out) {
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1])) n--;
    if (n == 0) return false;
    if (v->kind == KIND_WORD) {
        for (int i = 0; v->words[i]; i++)
            if (word_eq(s, n, v->words[i])) { *out = i; return true; }
        return false;
    }
    /* KIND_INT and KIND_BOOL: a decimal integer in [lo, hi] */
    if (!((s[0] >= '0' && s[0] <= '9') || ((s[0] == '-' || s[0] == '+') && n > 1))) return false;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end != s + n || x < v->lo || x > v->hi) return false;
    *out = (int64_t)x;
    return true;
}

static void report(const env_var *v, const char *s) {
    char rule[160];
    if (v->kind == KIND_INT) {
        snprintf(rule, sizeof rule, "must be an integer in [%lld, %lld]", (long long)v->lo, (long long)v->hi);
    } else if (v->kind == KIND_BOOL) {
        snprintf(rule, sizeof rule, "must be 0 or 1");
    } else {
        size_t p = (size_t)snprintf(rule, sizeof rule, "must be one of");
        for (int i = 0; v->words[i] && p < sizeof rule; i++)
            p += (size_t)snprintf(rule + p, sizeof rule - p, "%s %s", i ? "," : "", v->words[i]);
    }
    fprintf(stderr, "wick: %s=%.64s%s ignored: %s\n", v->name, s, strlen(s) > 64 ? "..." : "", rule);
}

static void load_all(void) {
    for (int i = 0; i < WK_ENV_COUNT; i++) {
        const env_var *v = &k_vars[i];
        const char *s = getenv(v->name);
        int64_t x = 0;
        bool ok = false;
        if (s && *s) {
            ok = parse(v, s, &x);
            if (!ok) report(v, s);
        }
        atomic_store_explicit(&g_value[i], x, memory_order_relaxed);
        atomic_store_explicit(&g_set[i], ok, memory_order_relaxed);
    }
}

bool wk__env_get(wk_env_id id, int64_t *value) {
    if ((unsigned)id >= WK_ENV_COUNT) return false;
    pthread_once(&g_once, load_all);
    if (!atomic_load_explicit(&g_set[id], memory_order_relaxed)) return false;
    if (value) *value = atomic_load_explicit(&g_value[id], memory_order_relaxed);
    return true;
}

const char *wk__env_name(wk_env_id id) { return (unsigned)id < WK_ENV_COUNT ? k_vars[id].name : "WICK_?"; }

void wk__env_reload(void) {
    pthread_once(&g_once, load_all);
    load_all();
}
