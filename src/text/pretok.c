/* Byte-level BPE pre-tokenizers: hand-written matchers equivalent to the
 * regexes in tok_internal.h, run over code points (an invalid UTF-8 byte is
 * one unit that is neither letter, number nor space), so each word is a
 * span of input bytes handed to the BPE model. */
#include <stdlib.h>
#include "wick/tokenizer.h"
#include "text/tok_internal.h"
#include "text/unicode.h"

typedef struct cps {
    const uint32_t *c;
    size_t n;
} cps;

static bool is_l(uint32_t c) { return c < 0x80 ? ((c | 32) >= 'a' && (c | 32) <= 'z') : wk__uc_is_letter(c); }
static bool is_n(uint32_t c) { return c < 0x80 ? (c >= '0' && c <= '9') : wk__uc_is_number(c); }
static bool is_s(uint32_t c) { return c < 0x80 ? (c == ' ' || (c >= 9 && c <= 13)) : wk__uc_is_space(c); }
static bool is_other(uint32_t c) { return !is_s(c) && !is_l(c) && !is_n(c); }
static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d at i (case-folded when icase); 0 when none. */
static size_t contraction(cps s, size_t i, bool icase) {
    if (s.c[i] != '\'' || i + 1 >= s.n) return 0;
    uint32_t a = s.c[i + 1], b = i + 2 < s.n ? s.c[i + 2] : 0;
    if (icase) {
        a = lower_ascii(a);
        b = lower_ascii(b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* End of the whitespace run starting at i. */
static size_t space_run(cps s, size_t i) {
    while (i < s.n && is_s(s.c[i])) i++;
    return i;
}

/* \s+(?!\S)|\s+ at i (c[i] is a space): the run, less its last space when a
 * non-space follows and the run is longer than one. */
static size_t spaces(cps s, size_t i) {
    size_t k = space_run(s, i);
    if (k < s.n && k - i >= 2) return k - 1;
    return k;
}

static size_t match_gpt2(cps s, size_t i) {
    size_t k = contraction(s, i, false);
    if (k) return i + k;
    size_t j = i + (s.c[i] == ' ' && i + 1 < s.n);
    if (is_l(s.c[j])) {
        while (j < s.n && is_l(s.c[j])) j++;
        return j;
    }
    if (is_n(s.c[j])) {
        while (j < s.n && is_n(s.c[j])) j++;
        return j;
    }
    if (is_other(s.c[j])) {
        while (j < s.n && is_other(s.c[j])) j++;
        return j;
    }
    return spaces(s, i);
}

static size_t match_llama3(cps s, size_t i, size_t max_digits) {
    size_t k = contraction(s, i, true);
    if (k) return i + k;
    uint32_t c = s.c[i];
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    size_t j = i;
    if (c != '\r' && c != '\n' && !is_l(c) && !is_n(c) && i + 1 < s.n && is_l(s.c[i + 1])) j = i + 1;
    if (is_l(s.c[j])) {
        while (j < s.n && is_l(s.c[j])) j++;
        return j;
    }
    /* \p{N}{1,max} */
    if (is_n(c)) {
        j = i;
        while (j < s.n && j - i < max_digits && is_n(s.c[j])) j++;
        return j;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    j = i + (c == ' ' && i + 1 < s.n);
    if (is_other(s.c[j])) {
        while (j < s.n && is_other(s.c[j])) j++;
        while (j < s.n && (s.c[j] == '\r' || s.c[j] == '\n')) j++;
        return j;
    }
    /* \s*[\r\n]+ : up to just after the run's last newline */
    size_t run = space_run(s, i);
    for (size_t m = run; m > i; m--)
        if (s.c[m - 1] == '\r' || s.c[m - 1] == '\n') return m;
    return spaces(s, i);
}

static void words(const wk_tokenizer *t, cps s, const size_t *off, const unsigned char *text, wk__ids *out,
                  wk__pretok pre) {
    for (size_t i = 0; i < s.n;) {
        size_t j = s.n;
        switch (pre) {
        case WK__PRE_GPT2: j = match_gpt2(s, i); break;
        case WK__PRE_LLAMA3: j = match_llama3(s, i, 3); break;
        case WK__PRE_QWEN2: j = match_llama3(s, i, 1); break;
        case WK__PRE_NONE:
        case WK__PRE_SMOLLM:
        case WK__PRE_BERT: break;
        }
        if (j <= i) j = i + 1; /* never: every matcher consumes at least one unit */
        wk__bpe_word(t, text + off[i], off[j] - off[i], out);
        i = j;
    }
}

void wk__pretok_bpe(const wk_tokenizer *t, const unsigned char *text, size_t n, wk__ids *out) {
    if (n == 0) return;
    uint32_t stack_c[256];
    size_t stack_o[257];
    uint32_t *c = stack_c;
    size_t *off = stack_o;
    if (n > 256) {
        c = malloc(n * sizeof *c);
        off = malloc((n + 1) * sizeof *off);
        if (!c || !off) {
            free(c == stack_c ? NULL : c);
            free(off == stack_o ? NULL : off);
            out->oom = true;
            return;
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        int l;
        c[m] = wk__utf8_next(text + i, n - i, &l);
        off[m++] = i;
        i += (size_t)l;
    }
    off[m] = n;
    if (t->pre == WK__PRE_SMOLLM) {
        /* Digits(individual_digits) first: each number character is a word. */
        size_t a = 0;
        for (size_t i = 0; i <= m; i++) {
            if (i < m && !is_n(c[i])) continue;
            if (i > a) words(t, (cps){c + a, i - a}, off + a, text, out, WK__PRE_GPT2);
            if (i < m) wk__bpe_word(t, text + off[i], off[i + 1] - off[i], out);
            a = i + 1;
        }
    } else {
        words(t, (cps){c, m}, off, text, out, t->pre);
    }
    if (c != stack_c) {
        free(c);
        free(off);
    }
}
