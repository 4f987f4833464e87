/* Python's meaning of the template values: truth, ==, ordering, str() and
 * repr() (templates print lists and dicts as Python would), json.dumps as
 * transformers' tojson calls it, and JSON text -> values. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "text/jinja.h"
#include "text/unicode.h"

bool jv_truthy(jv v) {
    switch (v.t) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0;
    case JV_STR: return v.u.s->n > 0;
    case JV_LIST: return v.flag == JJ_GEN || v.u.l->n > 0;
    case JV_DICT: return v.u.d->n > 0;
    default: return true;
    }
}

static bool is_num(jv v) { return v.t == JV_BOOL || v.t == JV_INT || v.t == JV_FLOAT; }
static double num(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }

bool jv_equal(jv a, jv b) {
    if (is_num(a) && is_num(b)) {
        if (a.t != JV_FLOAT && b.t != JV_FLOAT) return (a.t == JV_INT ? a.u.i : a.u.b) == (b.t == JV_INT ? b.u.i : b.u.b);
        return num(a) == num(b);
    }
    if (a.t != b.t) return false;
    switch (a.t) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return a.u.s->n == b.u.s->n && memcmp(a.u.s->p, b.u.s->p, a.u.s->n) == 0;
    case JV_LIST:
        if (a.flag != b.flag || a.u.l->n != b.u.l->n) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jv_equal(a.u.l->v[i], b.u.l->v[i])) return false;
        return true;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv *o = jj_dict_get(b.u.d, a.u.d->k[i]);
            if (!o || !jv_equal(a.u.d->v[i], *o)) return false;
        }
        return true;
    case JV_NS: return a.u.d == b.u.d;
    case JV_FUNC: return a.fn == b.fn && a.self == b.self;
    case JV_MACRO: return a.u.m == b.u.m;
    default: return false;
    }
}

int jv_compare(jj_rt *rt, int line, jv a, jv b, bool ci) {
    if (is_num(a) && is_num(b)) {
        if (a.t != JV_FLOAT && b.t != JV_FLOAT) {
            int64_t x = a.t == JV_INT ? a.u.i : a.u.b, y = b.t == JV_INT ? b.u.i : b.u.b;
            return (x > y) - (x < y);
        }
        double x = num(a), y = num(b);
        return (x > y) - (x < y);
    }
    if (a.t == JV_STR && b.t == JV_STR) {
        if (ci) {
            a = jj_str_lower(rt, a);
            b = jj_str_lower(rt, b);
        }
        size_t n = a.u.s->n < b.u.s->n ? a.u.s->n : b.u.s->n;
        int c = memcmp(a.u.s->p, b.u.s->p, n); /* UTF-8 byte order is code point order */
        if (c) return c < 0 ? -1 : 1;
        return (a.u.s->n > b.u.s->n) - (a.u.s->n < b.u.s->n);
    }
    if (a.t == JV_LIST && b.t == JV_LIST) {
        size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < n; i++)
            if (!jv_equal(a.u.l->v[i], b.u.l->v[i])) return jv_compare(rt, line, a.u.l->v[i], b.u.l->v[i], ci);
        return (a.u.l->n > b.u.l->n) - (a.u.l->n < b.u.l->n);
    }
    if (a.t == JV_UNDEF || b.t == JV_UNDEF) jj_fail(rt, line, "%s", a.t == JV_UNDEF && a.u.s ? a.u.s->p : b.t == JV_UNDEF && b.u.s ? b.u.s->p : "comparison with an undefined value");
    jj_fail(rt, line, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

const char *jv_type_name(jv v) {
    static const char *const names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict",
                                        "Namespace", "function", "Macro", "LoopContext"};
    if (v.t == JV_LIST && v.flag) return v.flag == JJ_GEN ? "generator" : "tuple";
    return names[v.t];
}

/* ---- numbers as Python prints them ---- */

void jj_float_repr(char *out, size_t cap, double f) {
    if (isnan(f)) {
        snprintf(out, cap, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(out, cap, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    int p = 1;
    for (; p <= 17; p++) { /* the shortest digits that read back the same double */
        snprintf(e, sizeof e, "%.*e", p - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e is [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = e[0] == '-';
    const char *q = e + neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    int ex = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    char *o = out;
    size_t left = cap;
#define EMIT(...) do { int k_ = snprintf(o, left, __VA_ARGS__); if (k_ > 0 && (size_t)k_ < left) { o += k_; left -= (size_t)k_; } } while (0)
    if (neg) EMIT("-");
    if (ex >= -5 && ex < 16) {
        if (ex < 0) {
            EMIT("0.");
            for (int i = 0; i < -ex - 1; i++) EMIT("0");
            EMIT("%s", digits);
        } else if (nd <= ex + 1) {
            EMIT("%s", digits);
            for (int i = nd; i < ex + 1; i++) EMIT("0");
            EMIT(".0");
        } else {
            EMIT("%.*s.%s", ex + 1, digits, digits + ex + 1);
        }
    } else {
        if (nd > 1) EMIT("%c.%se%c%02d", digits[0], digits + 1, ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
        else EMIT("%ce%c%02d", digits[0], ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
    }
#undef EMIT
}

/* ---- UTF-8 ---- */

size_t jj_utf8_len(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        int len;
        wk__utf8_next((const unsigned char *)s + i, n - i, &len);
        i += (size_t)len;
        k++;
    }
    return k;
}

size_t jj_utf8_offset(const char *s, size_t n, size_t idx) {
    size_t i = 0;
    for (size_t k = 0; k < idx && i < n; k++) {
        int len;
        wk__utf8_next((const unsigned char *)s + i, n - i, &len);
        i += (size_t)len;
    }
    return i;
}

bool jj_py_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || (cp >= 0x80 && wk__uc_is_space(cp));
}

/* Case mapping: lower from the Unicode tables; upper is lower's inverse
 * for single characters (what chat templates upper-case is ASCII). */
static uint32_t upper_cp(uint32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    for (unsigned i = 0; i < wk__uc_nlower; i++)
        if (wk__uc_lower_map[i].n == 1 && wk__uc_lower_map[i].to[0] == cp) return wk__uc_lower_map[i].cp;
    return cp;
}

static jv map_case(jj_rt *rt, jv s, bool upper) {
    jj_buf b = {0};
    const unsigned char *p = (const unsigned char *)s.u.s->p;
    size_t n = s.u.s->n;
    for (size_t i = 0; i < n;) {
        int len;
        uint32_t cp = wk__utf8_next(p + i, n - i, &len);
        unsigned char enc[16];
        int k = 0;
        if (cp & WK__UC_RAW) {
            enc[k++] = p[i];
        } else if (upper) {
            k = wk__utf8_put(upper_cp(cp), enc);
        } else {
            uint32_t to[3];
            int m = wk__uc_lower(cp, to);
            for (int j = 0; j < m; j++) k += wk__utf8_put(to[j], enc + k);
        }
        jj_buf_put(rt, &b, (const char *)enc, (size_t)k);
        i += (size_t)len;
    }
    return jj_buf_value(rt, &b);
}

jv jj_str_lower(jj_rt *rt, jv s) { return map_case(rt, s, false); }
jv jj_str_upper(jj_rt *rt, jv s) { return map_case(rt, s, true); }

/* ---- str() and repr() ---- */

static bool py_printable(uint32_t cp) {
    if (cp < 0x20 || cp == 0x7f) return false;
    if (cp < 0x7f) return true;
    wk__uc_cat c = wk__uc_category(cp);
    if (c == WK__UC_Cc || c == WK__UC_Cf || c == WK__UC_Cs || c == WK__UC_Co || c == WK__UC_Cn || c == WK__UC_Zl ||
        c == WK__UC_Zp)
        return false;
    if (c == WK__UC_Zs) return cp == ' ';
    return true;
}

static void repr_str(jj_rt *rt, jj_buf *b, const char *s, size_t n) {
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = (sq && !dq) ? '"' : '\'';
    jj_buf_putc(rt, b, q);
    for (size_t i = 0; i < n;) {
        int len;
        uint32_t cp = wk__utf8_next((const unsigned char *)s + i, n - i, &len);
        char c = s[i];
        if (c == q || c == '\\') {
            jj_buf_putc(rt, b, '\\');
            jj_buf_putc(rt, b, c);
        } else if (c == '\n') jj_buf_put(rt, b, "\\n", 2);
        else if (c == '\r') jj_buf_put(rt, b, "\\r", 2);
        else if (c == '\t') jj_buf_put(rt, b, "\\t", 2);
        else if (cp & WK__UC_RAW) jj_buf_printf(rt, b, "\\x%02x", (unsigned)(unsigned char)c);
        else if (!py_printable(cp)) {
            if (cp < 0x100) jj_buf_printf(rt, b, "\\x%02x", (unsigned)cp);
            else if (cp < 0x10000) jj_buf_printf(rt, b, "\\u%04x", (unsigned)cp);
            else jj_buf_printf(rt, b, "\\U%08x", (unsigned)cp);
        } else jj_buf_put(rt, b, s + i, (size_t)len);
        i += (size_t)len;
    }
    jj_buf_putc(rt, b, q);
}

static void str_or_repr(jj_rt *rt, jj_buf *b, jv v, bool repr) {
    char tmp[48];
    switch (v.t) {
    case JV_UNDEF: return;
    case JV_NONE: jj_buf_put(rt, b, "None", 4); return;
    case JV_BOOL: jj_buf_put(rt, b, v.u.b ? "True" : "False", v.u.b ? 4 : 5); return;
    case JV_INT: jj_buf_printf(rt, b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT: jj_float_repr(tmp, sizeof tmp, v.u.f); jj_buf_put(rt, b, tmp, strlen(tmp)); return;
    case JV_STR:
        if (repr) repr_str(rt, b, v.u.s->p, v.u.s->n);
        else jj_buf_put(rt, b, v.u.s->p, v.u.s->n);
        return;
    case JV_LIST:
        if (v.flag == JJ_GEN) {
            jj_buf_put(rt, b, "<generator object>", 18);
            return;
        }
        jj_buf_putc(rt, b, v.flag ? '(' : '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jj_buf_put(rt, b, ", ", 2);
            str_or_repr(rt, b, v.u.l->v[i], true);
        }
        if (v.flag && v.u.l->n == 1) jj_buf_putc(rt, b, ',');
        jj_buf_putc(rt, b, v.flag ? ')' : ']');
        return;
    case JV_NS:
        jj_buf_put(rt, b, "<Namespace ", 11);
        /* fall through */
    case JV_DICT:
        jj_buf_putc(rt, b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jj_buf_put(rt, b, ", ", 2);
            str_or_repr(rt, b, v.u.d->k[i], true);
            jj_buf_put(rt, b, ": ", 2);
            str_or_repr(rt, b, v.u.d->v[i], true);
        }
        jj_buf_putc(rt, b, '}');
        if (v.t == JV_NS) jj_buf_putc(rt, b, '>');
        return;
    case JV_MACRO: jj_buf_put(rt, b, "<Macro>", 7); return;
    case JV_LOOP: jj_buf_put(rt, b, "<LoopContext>", 13); return;
    default: jj_buf_put(rt, b, "<function>", 10); return;
    }
}

void jv_str_into(jj_rt *rt, jj_buf *b, jv v) { str_or_repr(rt, b, v, false); }
void jv_repr_into(jj_rt *rt, jj_buf *b, jv v) { str_or_repr(rt, b, v, true); }

jv jv_to_str(jj_rt *rt, jv v) {
    if (v.t == JV_STR) return v;
    jj_buf b = {0};
    jv_str_into(rt, &b, v);
    return jj_buf_value(rt, &b);
}

/* ---- json.dumps ---- */

static void json_str(jj_rt *rt, jj_buf *b, const char *s, size_t n, bool ascii) {
    jj_buf_putc(rt, b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            jj_buf_putc(rt, b, '\\');
            jj_buf_putc(rt, b, (char)c);
            i++;
        } else if (c < 0x20) {
            const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
            if (e) jj_buf_put(rt, b, e, 2);
            else jj_buf_printf(rt, b, "\\u%04x", c);
            i++;
        } else if (c >= 0x80 && ascii) {
            int len;
            uint32_t cp = wk__utf8_next((const unsigned char *)s + i, n - i, &len);
            if (cp & WK__UC_RAW) cp &= 0xff;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                jj_buf_printf(rt, b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3ff));
            } else jj_buf_printf(rt, b, "\\u%04x", cp);
            i += (size_t)len;
        } else {
            jj_buf_putc(rt, b, (char)c);
            i++;
        }
    }
    jj_buf_putc(rt, b, '"');
}

static void json_indent(jj_rt *rt, jj_buf *b, int indent, int level) {
    jj_buf_putc(rt, b, '\n');
    for (int i = 0; i < indent * level; i++) jj_buf_putc(rt, b, ' ');
}

static void json_val(jj_rt *rt, int line, jj_buf *b, jv v, bool ascii, int indent, const char *is, const char *ks,
                     bool sort, int level) {
    char tmp[48];
    if (level > JJ_MAX_DEPTH) jj_fail(rt, line, "tojson: the value nests too deeply");
    switch (v.t) {
    case JV_NONE: jj_buf_put(rt, b, "null", 4); return;
    case JV_BOOL: jj_buf_put(rt, b, v.u.b ? "true" : "false", v.u.b ? 4 : 5); return;
    case JV_INT: jj_buf_printf(rt, b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT:
        if (isnan(v.u.f)) jj_buf_put(rt, b, "NaN", 3);
        else if (isinf(v.u.f)) jj_buf_put(rt, b, v.u.f < 0 ? "-Infinity" : "Infinity", v.u.f < 0 ? 9 : 8);
        else {
            jj_float_repr(tmp, sizeof tmp, v.u.f);
            jj_buf_put(rt, b, tmp, strlen(tmp));
        }
        return;
    case JV_STR: json_str(rt, b, v.u.s->p, v.u.s->n, ascii); return;
    case JV_LIST:
        if (v.flag == JJ_GEN) jj_fail(rt, line, "tojson: Object of type generator is not JSON serializable");
        if (!v.u.l->n) {
            jj_buf_put(rt, b, "[]", 2);
            return;
        }
        jj_buf_putc(rt, b, '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jj_buf_put(rt, b, is, strlen(is));
            if (indent >= 0) json_indent(rt, b, indent, level + 1);
            json_val(rt, line, b, v.u.l->v[i], ascii, indent, is, ks, sort, level + 1);
        }
        if (indent >= 0) json_indent(rt, b, indent, level);
        jj_buf_putc(rt, b, ']');
        return;
    case JV_DICT: {
        jj_dict *d = v.u.d;
        if (!d->n) {
            jj_buf_put(rt, b, "{}", 2);
            return;
        }
        size_t *ord = jj_alloc(rt, d->n * sizeof *ord);
        for (size_t i = 0; i < d->n; i++) ord[i] = i;
        if (sort) /* insertion sort: stable, and dicts in templates are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && jv_compare(rt, line, d->k[ord[j - 1]], d->k[ord[j]], false) > 0; j--) {
                    size_t t = ord[j];
                    ord[j] = ord[j - 1];
                    ord[j - 1] = t;
                }
        jj_buf_putc(rt, b, '{');
        for (size_t i = 0; i < d->n; i++) {
            jv k = d->k[ord[i]];
            if (i) jj_buf_put(rt, b, is, strlen(is));
            if (indent >= 0) json_indent(rt, b, indent, level + 1);
            if (k.t == JV_STR) json_str(rt, b, k.u.s->p, k.u.s->n, ascii);
            else if (k.t == JV_INT || k.t == JV_FLOAT || k.t == JV_BOOL || k.t == JV_NONE) {
                jj_buf kb = {0};
                json_val(rt, line, &kb, k, ascii, -1, is, ks, sort, level + 1);
                json_str(rt, b, kb.p, kb.n, ascii);
            } else jj_fail(rt, line, "tojson: keys must be str, int, float, bool or None, not %s", jv_type_name(k));
            jj_buf_put(rt, b, ks, strlen(ks));
            json_val(rt, line, b, d->v[ord[i]], ascii, indent, is, ks, sort, level + 1);
        }
        if (indent >= 0) json_indent(rt, b, indent, level);
        jj_buf_putc(rt, b, '}');
        return;
    }
    default:
        jj_fail(rt, line, "tojson: Object of type %s is not JSON serializable", jv_type_name(v));
    }
}

void jv_json_into(jj_rt *rt, int line, jj_buf *b, jv v, bool ascii, int indent, const char *item_sep,
                  const char *key_sep, bool sort_keys) {
    json_val(rt, line, b, v, ascii, indent, item_sep, key_sep, sort_keys, 0);
}

/* ---- JSON -> value ---- */

static jv from_json(jj_rt *rt, wk__json *p) {
    const char *s;
    size_t n;
    switch (wk__json_peek(p)) {
    case WK__JSON_NULL: wk__json_null(p); return jv_none();
    case WK__JSON_BOOL: {
        bool b = false;
        wk__json_bool(p, &b);
        return jv_bool(b);
    }
    case WK__JSON_NUMBER: {
        if (!wk__json_number_text(p, &s, &n)) return jv_none();
        bool integral = !memchr(s, '.', n) && !memchr(s, 'e', n) && !memchr(s, 'E', n);
        char buf[64];
        if (n >= sizeof buf) {
            wk__json_fail(p, "number too long");
            return jv_none();
        }
        memcpy(buf, s, n);
        buf[n] = 0;
        if (integral) {
            char *end;
            long long v = strtoll(buf, &end, 10);
            if (v != LLONG_MAX && v != LLONG_MIN) return jv_int(v);
        }
        return jv_float(strtod(buf, NULL));
    }
    case WK__JSON_STRING:
        if (!wk__json_string(p, &s, &n)) return jv_none();
        return jv_str(rt, s, n);
    case WK__JSON_ARRAY: {
        jv l = jv_list(rt, 0);
        wk__json_array(p);
        while (wk__json_item(p)) jj_list_push(rt, l.u.l, from_json(rt, p));
        return l;
    }
    case WK__JSON_OBJECT: {
        jv d = jv_dict(rt);
        wk__json_object(p);
        while (wk__json_key(p, &s, &n)) {
            jv k = jv_str(rt, s, n);
            jj_dict_set(rt, d.u.d, k, from_json(rt, p));
        }
        return d;
    }
    default:
        wk__json_fail(p, "expected a value");
        return jv_none();
    }
}

jv jv_from_json(jj_rt *rt, const char *what, const char *s, size_t n) {
    wk__json p;
    wk__json_init(&p, s, n);
    jv v = from_json(rt, &p);
    wk__json_finish(&p);
    if (p.failed) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s", p.msg);
        wk__json_free(&p);
        jj_fail(rt, 0, "%s is not valid JSON: %s", what, msg);
    }
    wk__json_free(&p);
    return v;
}
