/* Lookups over the generated tables (binary searches) and UTF-8 coding. */
#include "text/unicode.h"

wk__uc_cat wk__uc_category(uint32_t cp) {
    if (cp >= 0x110000) return WK__UC_Cn;
    unsigned lo = 0, hi = wk__uc_ncat_runs;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (wk__uc_cat_runs[mid].hi < cp) lo = mid + 1;
        else hi = mid;
    }
    return (wk__uc_cat)wk__uc_cat_runs[lo].cat; /* the runs cover 0..0x10FFFF */
}

bool wk__uc_is_space(uint32_t cp) {
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    }
    return cp >= 0x2000 && cp <= 0x200A;
}

uint32_t wk__utf8_next(const unsigned char *s, size_t n, int *len) {
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80) return c;
    int need;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; min = 0x10000; }
    else return WK__UC_RAW | c;
    if ((size_t)need >= n) return WK__UC_RAW | c;
    for (int i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) return WK__UC_RAW | c;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return WK__UC_RAW | c;
    *len = need + 1;
    return cp;
}

int wk__utf8_put(uint32_t cp, unsigned char *out) {
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int wk__uc_lower(uint32_t cp, uint32_t out[3]) {
    unsigned lo = 0, hi = wk__uc_nlower;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (wk__uc_lower_map[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < wk__uc_nlower && wk__uc_lower_map[lo].cp == cp) {
        const wk__uc_map *m = &wk__uc_lower_map[lo];
        for (int i = 0; i < m->n; i++) out[i] = m->to[i];
        return m->n;
    }
    out[0] = cp;
    return 1;
}

int wk__uc_nfd(uint32_t cp, uint32_t *out, int cap) {
    /* Hangul syllables: the Unicode standard's arithmetic (section 3.12). */
    if (cp >= 0xAC00 && cp <= 0xD7A3) {
        uint32_t s = cp - 0xAC00;
        int n = 0;
        out[n++] = 0x1100 + s / 588;
        out[n++] = 0x1161 + (s % 588) / 28;
        if (s % 28) out[n++] = 0x11A7 + s % 28;
        return n;
    }
    unsigned lo = 0, hi = wk__uc_ndecomp;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (wk__uc_decomps[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < wk__uc_ndecomp && wk__uc_decomps[lo].cp == cp && (int)wk__uc_decomps[lo].n <= cap) {
        const wk__uc_decomp *d = &wk__uc_decomps[lo];
        for (uint32_t i = 0; i < d->n; i++) out[i] = wk__uc_decomp_pool[d->off + i];
        return (int)d->n;
    }
    out[0] = cp;
    return 1;
}
