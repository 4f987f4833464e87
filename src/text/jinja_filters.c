/* jinja2's built-in filters and tests that chat templates use, with
 * transformers' tojson (json.dumps with ensure_ascii=False, no HTML
 * escaping, indent / separators / sort_keys passed through). Filters the
 * list does not have fail with "filter 'x' is not supported". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja.h"

enum {
    F_ABS, F_ATTR, F_CAPITALIZE, F_COUNT, F_DEFAULT, F_D, F_DICTSORT, F_ESCAPE, F_E, F_FIRST, F_FLOAT, F_INDENT,
    F_INT, F_ITEMS, F_JOIN, F_LAST, F_LENGTH, F_LIST, F_LOWER, F_MAP, F_MAX, F_MIN, F_REJECT, F_REJECTATTR,
    F_REPLACE, F_REVERSE, F_ROUND, F_SAFE, F_SELECT, F_SELECTATTR, F_SORT, F_STRING, F_SUM, F_TITLE, F_TOJSON,
    F_TRIM, F_UNIQUE, F_UPPER, F_WORDCOUNT, F_COUNT_
};
static const char *const FILTERS[] = {
    "abs", "attr", "capitalize", "count", "default", "d", "dictsort", "escape", "e", "first", "float", "indent",
    "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string", "sum", "title", "tojson",
    "trim", "unique", "upper", "wordcount"};

enum {
    T_BOOLEAN, T_CALLABLE, T_DEFINED, T_DIVISIBLEBY, T_EQ, T_EQUALTO, T_EQEQ, T_EVEN, T_FALSE, T_FLOAT, T_GE,
    T_GT, T_GREATERTHAN, T_IN, T_INTEGER, T_ITERABLE, T_LE, T_LOWER, T_LT, T_LESSTHAN, T_MAPPING, T_NE, T_NONE,
    T_NUMBER, T_ODD, T_SAMEAS, T_SEQUENCE, T_STRING, T_TRUE, T_UNDEFINED, T_UPPER, T_NEQ, T_GTS, T_GES, T_LTS,
    T_LES, T_COUNT_
};
static const char *const TESTS[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==", "even", "false", "float", "ge",
    "gt", "greaterthan", "in", "integer", "iterable", "le", "lower", "lt", "lessthan", "mapping", "ne", "none",
    "number", "odd", "sameas", "sequence", "string", "true", "undefined", "upper", "!=", ">", ">=", "<", "<="};

int jj_filter_id(const char *name) {
    for (int i = 0; i < F_COUNT_; i++)
        if (!strcmp(FILTERS[i], name)) return i;
    return -1;
}

int jj_test_id(const char *name) {
    for (int i = 0; i < T_COUNT_; i++)
        if (!strcmp(TESTS[i], name)) return i;
    return -1;
}

/* Argument k of a call: positional k, or the keyword `name`, or dflt. */
typedef struct fargs {
    const jv *pos;
    size_t npos;
    const char *const *kwn;
    const jv *kwv;
    size_t nkw;
} fargs;

static jv arg(const fargs *a, size_t k, const char *name, jv dflt) {
    if (k < a->npos) return a->pos[k];
    for (size_t i = 0; i < a->nkw; i++)
        if (!strcmp(a->kwn[i], name)) return a->kwv[i];
    return dflt;
}

static bool is_intlike(jv v) { return v.t == JV_INT || v.t == JV_BOOL; }

static jv need_str(jj_ctx *ctx, int line, const char *what, jv v) {
    if (v.t == JV_UNDEF && v.u.s && 0) jj_fail(ctx->rt, line, "%s", v.u.s->p);
    (void)what;
    return jv_to_str(ctx->rt, v);
}

static jv strip_ws(jj_ctx *ctx, jv s) {
    const char *p = s.u.s->p;
    size_t n = s.u.s->n, a = 0, b = n;
    /* trailing / leading Python whitespace, one code point at a time */
    while (a < n) {
        size_t e = a + jj_utf8_offset(p + a, n - a, 1);
        uint32_t cp = 0;
        if (e - a == 1) cp = (unsigned char)p[a];
        else if (e - a == 2) cp = ((unsigned char)p[a] & 0x1f) << 6 | ((unsigned char)p[a + 1] & 0x3f);
        else if (e - a == 3) cp = ((unsigned char)p[a] & 0x0f) << 12 | ((unsigned char)p[a + 1] & 0x3f) << 6 | ((unsigned char)p[a + 2] & 0x3f);
        else cp = 0x10ffff + 1;
        if (!jj_py_space(cp)) break;
        a = e;
    }
    while (b > a) {
        size_t st = b - 1;
        while (st > a && ((unsigned char)p[st] & 0xc0) == 0x80) st--;
        size_t e = b;
        uint32_t cp;
        if (e - st == 1) cp = (unsigned char)p[st];
        else if (e - st == 2) cp = ((unsigned char)p[st] & 0x1f) << 6 | ((unsigned char)p[st + 1] & 0x3f);
        else if (e - st == 3) cp = ((unsigned char)p[st] & 0x0f) << 12 | ((unsigned char)p[st + 1] & 0x3f) << 6 | ((unsigned char)p[st + 2] & 0x3f);
        else cp = 0x10ffff + 1;
        if (!jj_py_space(cp)) break;
        b = st;
    }
    return jv_str(ctx->rt, p + a, b - a);
}

jv jj_strip_ws(jj_ctx *ctx, jv s);
jv jj_strip_ws(jj_ctx *ctx, jv s) { return strip_ws(ctx, s); }

static size_t length_of(jj_ctx *ctx, int line, jv v) {
    switch (v.t) {
    case JV_UNDEF: return 0;
    case JV_STR: return jj_utf8_len(v.u.s->p, v.u.s->n);
    case JV_LIST:
        if (v.flag == JJ_GEN) jj_fail(ctx->rt, line, "object of type 'generator' has no len()");
        return v.u.l->n;
    case JV_DICT: case JV_NS: return v.u.d->n;
    default: jj_fail(ctx->rt, line, "object of type '%s' has no len()", jv_type_name(v));
    }
}

static jv attr_path(jj_ctx *ctx, int line, jv v, jv attr) {
    if (attr.t == JV_INT) return jj_getitem(ctx, line, v, attr);
    jv s = jv_to_str(ctx->rt, attr);
    /* "a.b": nested lookups, numbers as indexes (jinja2's make_attrgetter) */
    const char *p = s.u.s->p;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t k = dot ? (size_t)(dot - p) : strlen(p);
        jv part = jv_str(ctx->rt, p, k);
        char *end;
        long long iv = strtoll(part.u.s->p, &end, 10);
        if (k && *end == 0) v = jj_getitem(ctx, line, v, jv_int(iv));
        else v = jj_getitem(ctx, line, v, part);
        if (!dot) return v;
        p = dot + 1;
    }
}

static int cmp_ci(jj_ctx *ctx, int line, jv a, jv b, bool cs) { return jv_compare(ctx->rt, line, a, b, !cs); }

/* Stable merge-free sort: insertion sort over an index (lists in templates are small). */
static jv sorted(jj_ctx *ctx, int line, jj_list *src, bool reverse, bool cs, jv attr, bool by_value_pair, int pair_idx) {
    jv out = jv_list(ctx->rt, src->n);
    jv *keys = jj_alloc(ctx->rt, (src->n + 1) * sizeof(jv));
    for (size_t i = 0; i < src->n; i++) {
        jv it = src->v[i];
        jv k = by_value_pair ? it.u.l->v[pair_idx] : attr.t != JV_NONE ? attr_path(ctx, line, it, attr) : it;
        size_t j = out.u.l->n;
        out.u.l->v[j] = it;
        keys[j] = k;
        while (j > 0) {
            int c = cmp_ci(ctx, line, keys[j - 1], keys[j], cs);
            if (reverse ? c >= 0 : c <= 0) break;
            jv t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t;
            t = out.u.l->v[j]; out.u.l->v[j] = out.u.l->v[j - 1]; out.u.l->v[j - 1] = t;
            j--;
        }
        out.u.l->n++;
    }
    return out;
}

static jv select_like(jj_ctx *ctx, int line, jv v, const fargs *a, bool attr, bool keep_if) {
    jv out = jv_list(ctx->rt, 0);
    out.flag = JJ_GEN;
    if (!jv_truthy(v)) return out; /* jinja2 skips a false sequence (none) */
    jj_list *src = jj_iterate(ctx, line, v);
    size_t k = 0;
    jv at = jv_none();
    if (attr) {
        if (a->npos < 1) jj_fail(ctx->rt, line, "selectattr / rejectattr need an attribute");
        at = a->pos[k++];
    }
    jv tname = k < a->npos ? a->pos[k++] : jv_none();
    int tid = -1;
    if (tname.t == JV_STR) {
        tid = jj_test_id(tname.u.s->p);
        if (tid < 0) jj_fail(ctx->rt, line, "test '%s' is not supported", tname.u.s->p);
    }
    for (size_t i = 0; i < src->n; i++) {
        jv item = src->v[i];
        jv x = attr ? attr_path(ctx, line, item, at) : item;
        bool r = tid >= 0 ? jj_apply_test(ctx, line, tid, tname.u.s->p, x, a->pos + k, a->npos - k) : jv_truthy(x);
        if (r == keep_if) jj_list_push(ctx->rt, out.u.l, item);
    }
    return out;
}

static jv do_indent(jj_ctx *ctx, jv s, jv width, bool first, bool blank) {
    jj_rt *rt = ctx->rt;
    jj_buf pad = {0};
    if (width.t == JV_STR) jj_buf_put(rt, &pad, width.u.s->p, width.u.s->n);
    else for (int64_t i = 0; i < (width.t == JV_INT ? width.u.i : 4) && i < 4096; i++) jj_buf_putc(rt, &pad, ' ');
    jj_buf out = {0};
    const char *p = s.u.s->p;
    size_t n = s.u.s->n;
    /* Python splitlines on \n (what templates contain); the newline kept */
    bool first_line = true;
    size_t i = 0;
    if (n == 0) return s;
    while (i < n) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - p) : n;
        bool empty = e == i;
        if (first_line ? first : (blank || !empty)) jj_buf_put(rt, &out, pad.p, pad.n);
        jj_buf_put(rt, &out, p + i, e - i);
        if (nl) jj_buf_putc(rt, &out, '\n');
        i = nl ? e + 1 : n;
        first_line = false;
    }
    return jj_buf_value(rt, &out);
}

static jv filter2(jj_ctx *ctx, int line, int id, const char *name, jv v, const fargs *ap);

jv jj_apply_filter(jj_ctx *ctx, int line, int id, const char *name, jv v, const jv *pos, size_t npos,
                   const char *const *kwn, const jv *kwv, size_t nkw) {
    jj_rt *rt = ctx->rt;
    fargs a = {pos, npos, kwn, kwv, nkw};
    switch (id) {
    case F_STRING:
        return jv_to_str(rt, v);
    case F_SAFE: {
        jv s = jv_to_str(rt, v);
        s.flag = JJ_MARKUP;
        return s;
    }
    case F_ESCAPE: case F_E: {
        if (v.t == JV_STR && v.flag == JJ_MARKUP) return v;
        return jj_html_escape(rt, jv_to_str(rt, v));
    }
    default: break;
    }
    return filter2(ctx, line, id, name, v, &a);
}

jv jj_html_escape(jj_rt *rt, jv s) {
    {
        jj_buf b = {0};
        for (size_t i = 0; i < s.u.s->n; i++) {
            char c = s.u.s->p[i];
            const char *r = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&#34;" : c == '\'' ? "&#39;" : NULL;
            if (r) jj_buf_put(rt, &b, r, strlen(r));
            else jj_buf_putc(rt, &b, c);
        }
        jv r = jj_buf_value(rt, &b);
        r.flag = JJ_MARKUP;
        return r;
    }
}

static jv filter2(jj_ctx *ctx, int line, int id, const char *name, jv v, const fargs *ap) {
    jj_rt *rt = ctx->rt;
    fargs a = *ap;
    const jv *pos = a.pos;
    size_t npos = a.npos;
    const char *const *kwn = a.kwn;
    const jv *kwv = a.kwv;
    size_t nkw = a.nkw;
    switch (id) {
    case F_TRIM: {
        jv chars = arg(&a, 0, "chars", jv_none());
        jv s = need_str(ctx, line, name, v);
        if (chars.t == JV_NONE) return strip_ws(ctx, s);
        jv self = s;
        return jj_call_builtin(ctx, line, jj_method(ctx, self, "strip", &(bool){0}), &chars, 1, NULL, NULL, 0);
    }
    case F_LENGTH: case F_COUNT: return jv_int((int64_t)length_of(ctx, line, v));
    case F_WORDCOUNT: {
        jv s = jv_to_str(rt, v);
        int64_t k = 0;
        bool in = false;
        for (size_t i = 0; i < s.u.s->n; i++) {
            unsigned char c = (unsigned char)s.u.s->p[i];
            bool w = c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
            if (w && !in) k++;
            in = w;
        }
        return jv_int(k);
    }
    case F_UPPER: return jj_str_upper(rt, jv_to_str(rt, v));
    case F_LOWER: return jj_str_lower(rt, jv_to_str(rt, v));
    case F_CAPITALIZE: case F_TITLE: {
        jv s = jv_to_str(rt, v);
        bool title = id == F_TITLE;
        jj_buf b = {0};
        bool start = true;
        for (size_t i = 0; i < s.u.s->n;) {
            size_t e = i + jj_utf8_offset(s.u.s->p + i, s.u.s->n - i, 1);
            jv ch = jv_str(rt, s.u.s->p + i, e - i);
            jv m = start ? jj_str_upper(rt, ch) : jj_str_lower(rt, ch);
            jj_buf_put(rt, &b, m.u.s->p, m.u.s->n);
            unsigned char c = (unsigned char)s.u.s->p[i];
            if (title) start = !(c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '\'');
            else start = false;
            i = e;
        }
        return jj_buf_value(rt, &b);
    }
    case F_DEFAULT: case F_D: {
        jv d = arg(&a, 0, "default_value", jv_str(rt, "", 0));
        bool boolean = jv_truthy(arg(&a, 1, "boolean", jv_bool(false)));
        if (v.t == JV_UNDEF || (boolean && !jv_truthy(v))) return d;
        return v;
    }
    case F_FIRST: case F_LAST: {
        jj_list *l = jj_iterate(ctx, line, v);
        if (!l->n) return jv_undef_msg(rt, "No %s item, sequence was empty.", id == F_FIRST ? "first" : "last");
        return l->v[id == F_FIRST ? 0 : l->n - 1];
    }
    case F_LIST: {
        jj_list *l = jj_iterate(ctx, line, v);
        jv out = jv_list(rt, l->n);
        for (size_t i = 0; i < l->n; i++) jj_list_push(rt, out.u.l, l->v[i]);
        return out; /* a real list: | list ends a generator */
    }
    case F_ITEMS: {
        if (v.t == JV_UNDEF) return jv_list(rt, 0);
        if (v.t != JV_DICT) jj_fail(rt, line, "can only get item pairs from a mapping.");
        jv out = jv_list(rt, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) {
            jv t = jv_list(rt, 2);
            t.flag = 1;
            jj_list_push(rt, t.u.l, v.u.d->k[i]);
            jj_list_push(rt, t.u.l, v.u.d->v[i]);
            jj_list_push(rt, out.u.l, t);
        }
        return out;
    }
    case F_DICTSORT: {
        if (v.t != JV_DICT) jj_fail(rt, line, "dictsort needs a mapping");
        bool cs = jv_truthy(arg(&a, 0, "case_sensitive", jv_bool(false)));
        jv by = arg(&a, 1, "by", jv_cstr(rt, "key"));
        bool rev = jv_truthy(arg(&a, 2, "reverse", jv_bool(false)));
        int idx = by.t == JV_STR && !strcmp(by.u.s->p, "value") ? 1 : 0;
        jv items = jj_apply_filter(ctx, line, F_ITEMS, "items", v, NULL, 0, NULL, NULL, 0);
        return sorted(ctx, line, items.u.l, rev, cs, jv_none(), true, idx);
    }
    case F_SORT: {
        bool rev = jv_truthy(arg(&a, 0, "reverse", jv_bool(false)));
        bool cs = jv_truthy(arg(&a, 1, "case_sensitive", jv_bool(false)));
        jv at = arg(&a, 2, "attribute", jv_none());
        return sorted(ctx, line, jj_iterate(ctx, line, v), rev, cs, at, false, 0);
    }
    case F_MIN: case F_MAX: {
        bool cs = jv_truthy(arg(&a, 0, "case_sensitive", jv_bool(false)));
        jv at = arg(&a, 1, "attribute", jv_none());
        jj_list *l = jj_iterate(ctx, line, v);
        if (!l->n) return jv_undef_msg(rt, "No aggregated item, sequence was empty.");
        jv best = l->v[0], bk = at.t != JV_NONE ? attr_path(ctx, line, best, at) : best;
        for (size_t i = 1; i < l->n; i++) {
            jv k = at.t != JV_NONE ? attr_path(ctx, line, l->v[i], at) : l->v[i];
            int c = cmp_ci(ctx, line, k, bk, cs);
            if (id == F_MIN ? c < 0 : c > 0) {
                best = l->v[i];
                bk = k;
            }
        }
        return best;
    }
    case F_UNIQUE: {
        bool cs = jv_truthy(arg(&a, 0, "case_sensitive", jv_bool(false)));
        jv at = arg(&a, 1, "attribute", jv_none());
        jj_list *l = jj_iterate(ctx, line, v);
        jv out = jv_list(rt, 0), seen = jv_list(rt, 0);
        out.flag = JJ_GEN;
        for (size_t i = 0; i < l->n; i++) {
            jv k = at.t != JV_NONE ? attr_path(ctx, line, l->v[i], at) : l->v[i];
            if (!cs && k.t == JV_STR) k = jj_str_lower(rt, k);
            bool dup = false;
            for (size_t j = 0; j < seen.u.l->n && !dup; j++) dup = jv_equal(seen.u.l->v[j], k);
            if (dup) continue;
            jj_list_push(rt, seen.u.l, k);
            jj_list_push(rt, out.u.l, l->v[i]);
        }
        return out;
    }
    case F_REVERSE: {
        if (v.t == JV_STR) {
            jj_list *l = jj_iterate(ctx, line, v);
            jj_buf b = {0};
            for (size_t i = l->n; i-- > 0;) jj_buf_put(rt, &b, l->v[i].u.s->p, l->v[i].u.s->n);
            return jj_buf_value(rt, &b);
        }
        jj_list *l = jj_iterate(ctx, line, v);
        jv out = jv_list(rt, l->n);
        out.flag = JJ_GEN;
        for (size_t i = l->n; i-- > 0;) jj_list_push(rt, out.u.l, l->v[i]);
        return out;
    }
    case F_JOIN: {
        jv sep = arg(&a, 0, "d", jv_str(rt, "", 0));
        jv at = arg(&a, 1, "attribute", jv_none());
        jj_list *l = jj_iterate(ctx, line, v);
        jj_buf b = {0};
        for (size_t i = 0; i < l->n; i++) {
            if (i) jv_str_into(rt, &b, sep);
            jv_str_into(rt, &b, at.t != JV_NONE ? attr_path(ctx, line, l->v[i], at) : l->v[i]);
        }
        return jj_buf_value(rt, &b);
    }
    case F_REPLACE: {
        jv s = jv_to_str(rt, v);
        jv args3[3] = {jv_to_str(rt, arg(&a, 0, "old", jv_str(rt, "", 0))), jv_to_str(rt, arg(&a, 1, "new", jv_str(rt, "", 0))),
                       arg(&a, 2, "count", jv_int(-1))};
        if (args3[2].t == JV_NONE) args3[2] = jv_int(-1);
        return jj_call_builtin(ctx, line, jj_method(ctx, s, "replace", &(bool){0}), args3, 3, NULL, NULL, 0);
    }
    case F_SELECT: return select_like(ctx, line, v, &a, false, true);
    case F_REJECT: return select_like(ctx, line, v, &a, false, false);
    case F_SELECTATTR: return select_like(ctx, line, v, &a, true, true);
    case F_REJECTATTR: return select_like(ctx, line, v, &a, true, false);
    case F_MAP: {
        jv out = jv_list(rt, 0);
        out.flag = JJ_GEN;
        if (!jv_truthy(v)) return out;
        jj_list *l = jj_iterate(ctx, line, v);
        jv at = arg(&a, 99, "attribute", jv_none());
        if (at.t != JV_NONE) {
            jv dflt = arg(&a, 99, "default", jv_undef());
            for (size_t i = 0; i < l->n; i++) {
                jv x = attr_path(ctx, line, l->v[i], at);
                jj_list_push(rt, out.u.l, x.t == JV_UNDEF && dflt.t != JV_UNDEF ? dflt : x);
            }
            return out;
        }
        if (!npos || pos[0].t != JV_STR) jj_fail(rt, line, "map needs a filter name or attribute=");
        int fid = jj_filter_id(pos[0].u.s->p);
        if (fid < 0) jj_fail(rt, line, "filter '%s' is not supported", pos[0].u.s->p);
        for (size_t i = 0; i < l->n; i++)
            jj_list_push(rt, out.u.l, jj_apply_filter(ctx, line, fid, pos[0].u.s->p, l->v[i], pos + 1, npos - 1, kwn, kwv, nkw));
        return out;
    }
    case F_ATTR: return jj_getattr(ctx, line, v, jv_to_str(rt, arg(&a, 0, "name", jv_str(rt, "", 0))).u.s->p);
    case F_TOJSON: {
        bool ascii = jv_truthy(arg(&a, 0, "ensure_ascii", jv_bool(false)));
        jv ind = arg(&a, 1, "indent", jv_none());
        jv seps = arg(&a, 2, "separators", jv_none());
        bool sk = jv_truthy(arg(&a, 3, "sort_keys", jv_bool(false)));
        int indent = ind.t == JV_NONE ? -1 : is_intlike(ind) ? (int)(ind.u.i < 0 ? 0 : ind.u.i > 64 ? 64 : ind.u.i) : -2;
        if (indent == -2) jj_fail(rt, line, "tojson: indent must be an integer");
        const char *is = indent >= 0 ? "," : ", ", *ks = ": ";
        if (seps.t == JV_LIST && seps.u.l->n == 2 && seps.u.l->v[0].t == JV_STR && seps.u.l->v[1].t == JV_STR) {
            is = seps.u.l->v[0].u.s->p;
            ks = seps.u.l->v[1].u.s->p;
        } else if (seps.t != JV_NONE) jj_fail(rt, line, "tojson: separators must be a pair of strings");
        jj_buf b = {0};
        if (v.t == JV_UNDEF) jj_fail(rt, line, "tojson: Object of type Undefined is not JSON serializable");
        jv_json_into(rt, line, &b, v, ascii, indent, is, ks, sk);
        return jj_buf_value(rt, &b);
    }
    case F_INDENT: {
        jv s = jv_to_str(rt, v);
        return do_indent(ctx, s, arg(&a, 0, "width", jv_int(4)), jv_truthy(arg(&a, 1, "first", jv_bool(false))),
                         jv_truthy(arg(&a, 2, "blank", jv_bool(false))));
    }
    case F_INT: {
        jv d = arg(&a, 0, "default", jv_int(0));
        if (v.t == JV_INT) return v;
        if (v.t == JV_BOOL) return jv_int(v.u.b);
        if (v.t == JV_FLOAT) return isfinite(v.u.f) && fabs(v.u.f) < 9.2e18 ? jv_int((int64_t)v.u.f) : d;
        if (v.t == JV_STR) {
            jv t = strip_ws(ctx, v);
            char *end;
            long long x = strtoll(t.u.s->p, &end, 10);
            if (t.u.s->n && *end == 0) return jv_int(x);
            double f = strtod(t.u.s->p, &end);
            if (t.u.s->n && *end == 0 && isfinite(f)) return jv_int((int64_t)f);
        }
        return d;
    }
    case F_FLOAT: {
        jv d = arg(&a, 0, "default", jv_float(0));
        if (v.t == JV_FLOAT) return v;
        if (is_intlike(v)) return jv_float((double)(v.t == JV_INT ? v.u.i : v.u.b));
        if (v.t == JV_STR) {
            jv t = strip_ws(ctx, v);
            char *end;
            double f = strtod(t.u.s->p, &end);
            if (t.u.s->n && *end == 0) return jv_float(f);
        }
        return d;
    }
    case F_ABS:
        if (v.t == JV_INT) return jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        if (v.t == JV_BOOL) return jv_int(v.u.b);
        if (v.t == JV_FLOAT) return jv_float(fabs(v.u.f));
        jj_fail(rt, line, "bad operand type for abs(): '%s'", jv_type_name(v));
    case F_ROUND: {
        jv prec = arg(&a, 0, "precision", jv_int(0));
        jv method = arg(&a, 1, "method", jv_cstr(rt, "common"));
        if (!is_intlike(v) && v.t != JV_FLOAT) jj_fail(rt, line, "round needs a number");
        double x = v.t == JV_FLOAT ? v.u.f : (double)(v.t == JV_INT ? v.u.i : v.u.b);
        double m = pow(10, (double)(prec.t == JV_INT ? prec.u.i : 0));
        const char *md = method.t == JV_STR ? method.u.s->p : "common";
        double r = !strcmp(md, "ceil") ? ceil(x * m) / m : !strcmp(md, "floor") ? floor(x * m) / m : round(x * m) / m;
        return jv_float(r);
    }
    case F_SUM: {
        jj_list *l = jj_iterate(ctx, line, v);
        jv at = arg(&a, 0, "attribute", jv_none());
        jv acc = arg(&a, 1, "start", jv_int(0));
        for (size_t i = 0; i < l->n; i++) {
            jv x = at.t != JV_NONE ? attr_path(ctx, line, l->v[i], at) : l->v[i];
            if (acc.t == JV_INT && x.t == JV_INT) acc = jv_int(acc.u.i + x.u.i);
            else if ((acc.t == JV_INT || acc.t == JV_FLOAT) && (x.t == JV_INT || x.t == JV_FLOAT))
                acc = jv_float((acc.t == JV_INT ? (double)acc.u.i : acc.u.f) + (x.t == JV_INT ? (double)x.u.i : x.u.f));
            else jj_fail(rt, line, "sum: unsupported operand types");
        }
        return acc;
    }
    default: jj_fail(rt, line, "filter '%s' is not supported", name);
    }
}

bool jj_apply_test(jj_ctx *ctx, int line, int id, const char *name, jv v, const jv *pos, size_t npos) {
    jj_rt *rt = ctx->rt;
    jv x = npos ? pos[0] : jv_undef();
    switch (id) {
    case T_DEFINED: return v.t != JV_UNDEF;
    case T_UNDEFINED: return v.t == JV_UNDEF;
    case T_NONE: return v.t == JV_NONE;
    case T_BOOLEAN: return v.t == JV_BOOL;
    case T_TRUE: return v.t == JV_BOOL && v.u.b;
    case T_FALSE: return v.t == JV_BOOL && !v.u.b;
    case T_INTEGER: return v.t == JV_INT;
    case T_FLOAT: return v.t == JV_FLOAT;
    case T_NUMBER: return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
    case T_STRING: return v.t == JV_STR;
    case T_MAPPING: return v.t == JV_DICT;
    case T_ITERABLE: return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    case T_SEQUENCE: return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    case T_CALLABLE: return v.t == JV_FUNC || v.t == JV_MACRO;
    case T_LOWER: case T_UPPER: {
        if (v.t != JV_STR) return false;
        jv m = id == T_LOWER ? jj_str_lower(rt, v) : jj_str_upper(rt, v);
        bool cased = false;
        for (size_t i = 0; i < v.u.s->n; i++) {
            unsigned char c = (unsigned char)v.u.s->p[i];
            cased |= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        }
        return cased && jv_equal(m, v);
    }
    case T_ODD: case T_EVEN: case T_DIVISIBLEBY: {
        if (v.t == JV_UNDEF) jj_fail(rt, line, "%s", v.u.s ? v.u.s->p : "undefined");
        if (!is_intlike(v)) jj_fail(rt, line, "test '%s' needs an integer", name);
        int64_t i = v.t == JV_INT ? v.u.i : v.u.b;
        if (id == T_ODD) return i % 2 != 0;
        if (id == T_EVEN) return i % 2 == 0;
        if (!is_intlike(x) || (x.t == JV_INT ? x.u.i : x.u.b) == 0) jj_fail(rt, line, "divisibleby needs a non-zero integer");
        return i % (x.t == JV_INT ? x.u.i : x.u.b) == 0;
    }
    case T_EQ: case T_EQUALTO: case T_EQEQ: return jv_equal(v, x);
    case T_NE: case T_NEQ: return !jv_equal(v, x);
    case T_SAMEAS:
        if (v.t != x.t) return false;
        if (v.t == JV_NONE || v.t == JV_UNDEF) return true;
        if (v.t == JV_BOOL) return v.u.b == x.u.b;
        return jv_equal(v, x) && (v.t == JV_INT || v.u.s == x.u.s);
    case T_GT: case T_GREATERTHAN: case T_GTS: return jv_compare(rt, line, v, x, false) > 0;
    case T_GE: case T_GES: return jv_compare(rt, line, v, x, false) >= 0;
    case T_LT: case T_LESSTHAN: case T_LTS: return jv_compare(rt, line, v, x, false) < 0;
    case T_LE: case T_LES: return jv_compare(rt, line, v, x, false) <= 0;
    case T_IN: {
        if (x.t == JV_STR && v.t == JV_STR) return strstr(x.u.s->p, v.u.s->p) != NULL || !v.u.s->n;
        if (x.t == JV_LIST) {
            for (size_t i = 0; i < x.u.l->n; i++)
                if (jv_equal(x.u.l->v[i], v)) return true;
            return false;
        }
        if (x.t == JV_DICT) return jj_dict_get(x.u.d, v) != NULL;
        jj_fail(rt, line, "test 'in' needs a container");
    }
    default: jj_fail(rt, line, "test '%s' is not supported", name);
    }
}
