/* The strict pull-style JSON reader (see json.h). */
#include "io/json.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wk__json_init(wk__json *p, const void *s, size_t n) {
    memset(p, 0, sizeof *p);
    p->s = s;
    p->n = s ? n : 0;
}

void wk__json_free(wk__json *p) {
    free(p->buf);
    p->buf = NULL;
    p->cap = 0;
}

bool wk__json_fail(wk__json *p, const char *fmt, ...) {
    if (p->failed) return false;
    p->failed = true;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < sizeof p->msg)
        snprintf(p->msg + k, sizeof p->msg - (size_t)k, " at byte %zu", p->pos);
    return false;
}

static void skip_ws(wk__json *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* The next non-blank byte, or -1 at the end (no error recorded). */
static int next_byte(wk__json *p) {
    skip_ws(p);
    return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

wk__json_type wk__json_peek(wk__json *p) {
    if (p->failed) return WK__JSON_BAD;
    int c = next_byte(p);
    switch (c) {
    case '{': return WK__JSON_OBJECT;
    case '[': return WK__JSON_ARRAY;
    case '"': return WK__JSON_STRING;
    case 't': case 'f': return WK__JSON_BOOL;
    case 'n': return WK__JSON_NULL;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return WK__JSON_NUMBER;
    }
    return WK__JSON_BAD;
}

static bool expect_value(wk__json *p, wk__json_type want, const char *what) {
    if (p->failed) return false;
    wk__json_type t = wk__json_peek(p);
    if (t == want) return true;
    if (p->pos >= p->n) return wk__json_fail(p, "JSON: document ends where %s was expected", what);
    if (t == WK__JSON_BAD) return wk__json_fail(p, "JSON: unexpected byte 0x%02x where %s was expected",
                                                (unsigned char)p->s[p->pos], what);
    return wk__json_fail(p, "JSON: %s expected", what);
}

static bool open_container(wk__json *p, wk__json_type t, const char *what) {
    if (!expect_value(p, t, what)) return false;
    if (p->depth >= WK__JSON_MAX_DEPTH)
        return wk__json_fail(p, "JSON: nesting deeper than %d levels", WK__JSON_MAX_DEPTH);
    p->pos++;
    p->fresh |= UINT64_C(1) << p->depth;
    p->depth++;
    return true;
}

bool wk__json_object(wk__json *p) { return open_container(p, WK__JSON_OBJECT, "an object"); }
bool wk__json_array(wk__json *p) { return open_container(p, WK__JSON_ARRAY, "an array"); }

/* Shared by key and item: consume ',' between members, or the closer
 * (then return false with no error). */
static bool next_member(wk__json *p, char closer) {
    if (p->failed) return false;
    if (p->depth <= 0) return wk__json_fail(p, "JSON: member read outside a container");
    uint64_t bit = UINT64_C(1) << (p->depth - 1);
    int c = next_byte(p);
    if (c < 0) return wk__json_fail(p, "JSON: document ends inside %s", closer == '}' ? "an object" : "an array");
    if (c == closer) {
        p->pos++;
        p->depth--;
        p->fresh &= ~bit;
        return false;
    }
    if (p->fresh & bit) {
        p->fresh &= ~bit;
        return true;
    }
    if (c != ',') return wk__json_fail(p, "JSON: ',' or '%c' expected", closer);
    p->pos++;
    c = next_byte(p);
    if (c == closer) return wk__json_fail(p, "JSON: trailing comma");
    return true;
}

bool wk__json_item(wk__json *p) {
    if (!next_member(p, ']')) return false;
    if (wk__json_peek(p) == WK__JSON_BAD) return expect_value(p, WK__JSON_NULL, "a value");
    return true;
}

/* ------------------------------------------------------------- strings */

static bool put(wk__json *p, size_t *len, const char *b, size_t k) {
    if (*len + k + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 64;
        while (cap < *len + k + 1) cap *= 2; /* bounded by the document length */
        char *nb = realloc(p->buf, cap);
        if (!nb) {
            bool first = !p->failed;
            wk__json_fail(p, "JSON: out of memory for a %zu-byte string", *len + k);
            p->oom = first; /* the caller reports WK_ERR_OOM, not a format error */
            return false;
        }
        p->buf = nb;
        p->cap = cap;
    }
    memcpy(p->buf + *len, b, k);
    *len += k;
    return true;
}

static size_t encode_utf8(uint32_t cp, char *o) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence starting at s[0] (>= 0x80), 0 if it is
 * not one (overlong forms, surrogates, > U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *s, size_t avail) {
    unsigned c = s[0];
    size_t k;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c == 0xE0) k = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) k = 3;
    else if (c == 0xED) k = 3, hi = 0x9F; /* no UTF-16 surrogates */
    else if (c == 0xF0) k = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) k = 4;
    else if (c == 0xF4) k = 4, hi = 0x8F; /* nothing above U+10FFFF */
    else return 0;
    if (avail < k || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return k;
}

bool wk__json_utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_seq(u + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

static bool hex4(wk__json *p, uint32_t *out) {
    if (p->n - p->pos < 4) return wk__json_fail(p, "JSON: truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + (size_t)i];
        uint32_t d;
        if (c >= '0' && c <= '9') d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (uint32_t)(c - 'A' + 10);
        else return wk__json_fail(p, "JSON: bad hex digit in a \\u escape");
        v = v * 16 + d;
    }
    p->pos += 4;
    *out = v;
    return true;
}

/* After the backslash of a \u escape: one code point, surrogate pairs joined. */
static bool unicode_escape(wk__json *p, uint32_t *cp) {
    uint32_t u;
    if (!hex4(p, &u)) return false;
    if (u >= 0xDC00 && u <= 0xDFFF) return wk__json_fail(p, "JSON: lone low surrogate \\u%04X", (unsigned)u);
    if (u >= 0xD800 && u <= 0xDBFF) {
        if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return wk__json_fail(p, "JSON: high surrogate \\u%04X not followed by a low one", (unsigned)u);
        p->pos += 2;
        uint32_t lo;
        if (!hex4(p, &lo)) return false;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return wk__json_fail(p, "JSON: high surrogate \\u%04X followed by \\u%04X", (unsigned)u, (unsigned)lo);
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    }
    *cp = u;
    return true;
}

bool wk__json_string(wk__json *p, const char **s, size_t *len) {
    *s = NULL;
    *len = 0;
    if (!expect_value(p, WK__JSON_STRING, "a string")) return false;
    p->pos++; /* opening quote */
    size_t out = 0;
    for (;;) {
        /* copy a run of plain bytes at once */
        size_t start = p->pos;
        while (p->pos < p->n) {
            unsigned char c = (unsigned char)p->s[p->pos];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
            p->pos++;
        }
        if (p->pos > start && !put(p, &out, p->s + start, p->pos - start)) return false;
        if (p->pos >= p->n) return wk__json_fail(p, "JSON: unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return wk__json_fail(p, "JSON: raw control byte 0x%02x in a string", c);
        if (c >= 0x80) {
            size_t k = utf8_seq((const unsigned char *)p->s + p->pos, p->n - p->pos);
            if (!k) return wk__json_fail(p, "JSON: invalid UTF-8 in a string");
            if (!put(p, &out, p->s + p->pos, k)) return false;
            p->pos += k;
            continue;
        }
        /* a backslash escape */
        if (p->n - p->pos < 2) return wk__json_fail(p, "JSON: unterminated string");
        char e = p->s[p->pos + 1];
        p->pos += 2;
        char one;
        switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            uint32_t cp = 0;
            if (!unicode_escape(p, &cp)) return false;
            char enc[4];
            if (!put(p, &out, enc, encode_utf8(cp, enc))) return false;
            continue;
        }
        default:
            p->pos -= 1;
            return wk__json_fail(p, "JSON: unknown escape \\%c", e >= 0x20 && e < 0x7f ? e : '?');
        }
        if (!put(p, &out, &one, 1)) return false;
    }
    if (!put(p, &out, "", 0)) return false; /* room for the NUL */
    p->buf[out] = '\0';
    *s = p->buf;
    *len = out;
    return true;
}

bool wk__json_key(wk__json *p, const char **key, size_t *len) {
    *key = NULL;
    *len = 0;
    if (!next_member(p, '}')) return false;
    if (wk__json_peek(p) != WK__JSON_STRING) return expect_value(p, WK__JSON_STRING, "a string key");
    if (!wk__json_string(p, key, len)) return false;
    if (next_byte(p) != ':') return wk__json_fail(p, "JSON: ':' expected after a key");
    p->pos++;
    return true;
}

/* ------------------------------------------------------------- scalars */

static bool is_digit(wk__json *p, size_t i) { return i < p->n && p->s[i] >= '0' && p->s[i] <= '9'; }

/* Scan a number's grammar from the cursor: its end, and whether it has a
 * fraction or an exponent. */
static bool scan_number(wk__json *p, size_t *end, bool *integral) {
    if (!expect_value(p, WK__JSON_NUMBER, "a number")) return false;
    size_t i = p->pos;
    if (p->s[i] == '-') i++;
    if (!is_digit(p, i)) return wk__json_fail(p, "JSON: digit expected in a number");
    if (p->s[i] == '0') {
        i++;
        if (is_digit(p, i)) return wk__json_fail(p, "JSON: number with a leading zero");
    } else {
        while (is_digit(p, i)) i++;
    }
    *integral = true;
    if (i < p->n && p->s[i] == '.') {
        i++;
        if (!is_digit(p, i)) return wk__json_fail(p, "JSON: digit expected after '.'");
        while (is_digit(p, i)) i++;
        *integral = false;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (!is_digit(p, i)) return wk__json_fail(p, "JSON: digit expected in an exponent");
        while (is_digit(p, i)) i++;
        *integral = false;
    }
    *end = i;
    return true;
}

bool wk__json_number_text(wk__json *p, const char **s, size_t *len) {
    size_t end = 0;
    bool integral = false;
    *s = NULL;
    *len = 0;
    if (!scan_number(p, &end, &integral)) return false;
    *s = p->s + p->pos;
    *len = end - p->pos;
    p->pos = end;
    return true;
}

bool wk__json_int(wk__json *p, int64_t *v) {
    size_t end = 0;
    bool integral = false;
    *v = 0;
    if (!scan_number(p, &end, &integral)) return false;
    if (!integral) return wk__json_fail(p, "JSON: integer expected, not a fraction or exponent");
    size_t i = p->pos;
    bool neg = p->s[i] == '-';
    if (neg) i++;
    uint64_t mag = 0, limit = neg ? (UINT64_C(1) << 63) : (uint64_t)INT64_MAX;
    for (; i < end; i++) {
        uint64_t d = (uint64_t)(p->s[i] - '0');
        if (mag > (limit - d) / 10) return wk__json_fail(p, "JSON: integer does not fit in 64 bits");
        mag = mag * 10 + d;
    }
    p->pos = end;
    /* -2^63 is representable: negate in unsigned arithmetic */
    *v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return true;
}

static bool literal(wk__json *p, const char *word) {
    size_t k = strlen(word);
    if (p->n - p->pos < k || memcmp(p->s + p->pos, word, k) != 0)
        return wk__json_fail(p, "JSON: invalid literal (expected %s)", word);
    p->pos += k;
    return true;
}

bool wk__json_bool(wk__json *p, bool *v) {
    *v = false;
    if (!expect_value(p, WK__JSON_BOOL, "true or false")) return false;
    *v = p->s[p->pos] == 't';
    return literal(p, *v ? "true" : "false");
}

bool wk__json_null(wk__json *p) {
    if (!expect_value(p, WK__JSON_NULL, "null")) return false;
    return literal(p, "null");
}

/* ------------------------------------------------------------- skipping */

bool wk__json_skip(wk__json *p) {
    const int base = p->depth;
    uint64_t objects = 0; /* bit d - base - 1: the container at depth d is an object */
    for (;;) {
        /* the cursor is at a value */
        const char *s;
        size_t len;
        bool b;
        switch (wk__json_peek(p)) {
        case WK__JSON_BAD: return expect_value(p, WK__JSON_NULL, "a value");
        case WK__JSON_NULL:
            if (!wk__json_null(p)) return false;
            break;
        case WK__JSON_BOOL:
            if (!wk__json_bool(p, &b)) return false;
            break;
        case WK__JSON_NUMBER:
            if (!wk__json_number_text(p, &s, &len)) return false;
            break;
        case WK__JSON_STRING:
            if (!wk__json_string(p, &s, &len)) return false;
            break;
        case WK__JSON_ARRAY:
            if (!wk__json_array(p)) return false;
            objects &= ~(UINT64_C(1) << (p->depth - base - 1));
            break;
        case WK__JSON_OBJECT:
            if (!wk__json_object(p)) return false;
            objects |= UINT64_C(1) << (p->depth - base - 1);
            break;
        }
        /* find the next value: a member of the innermost open container,
         * closing containers that have ended */
        for (;;) {
            if (p->depth == base) return true;
            bool more = (objects >> (p->depth - base - 1)) & 1 ? wk__json_key(p, &s, &len) : wk__json_item(p);
            if (p->failed) return false;
            if (more) break;
        }
    }
}

bool wk__json_finish(wk__json *p) {
    if (p->failed) return false;
    if (p->depth != 0) return wk__json_fail(p, "JSON: %d containers left open", p->depth);
    if (next_byte(p) >= 0) return wk__json_fail(p, "JSON: unexpected data after the document");
    return true;
}

bool wk__json_validate(const void *s, size_t n, char *msg, size_t msglen) {
    wk__json p;
    wk__json_init(&p, s, n);
    bool ok = wk__json_skip(&p) && wk__json_finish(&p);
    if (!ok && msg && msglen) snprintf(msg, msglen, "%s", p.msg);
    wk__json_free(&p);
    return ok;
}
