/* Methods of str / dict / list values, the `loop` variable's attributes,
 * and the globals transformers gives chat templates: raise_exception,
 * strftime_now (the clock is the caller's: wk_chat_opts.now), range,
 * namespace, dict. Like jinja2's ImmutableSandboxedEnvironment, methods
 * that would mutate a list or dict (append, pop, update, ...) exist but
 * fail when called. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/jinja.h"

jv jj_strip_ws(jj_ctx *ctx, jv s);

enum {
    M_STRIP, M_LSTRIP, M_RSTRIP, M_STARTSWITH, M_ENDSWITH, M_SPLIT, M_UPPER, M_LOWER, M_TITLE, M_CAPITALIZE,
    M_REPLACE, M_FORMAT, M_JOIN, M_FIND, M_SCOUNT, M_ITEMS, M_KEYS, M_VALUES, M_GET, M_INDEX, M_LCOUNT, M_COUNT_
};
static const char *const METHODS[] = {"strip", "lstrip", "rstrip", "startswith", "endswith", "split", "upper",
                                      "lower", "title", "capitalize", "replace", "format", "join", "find",
                                      "count", "items", "keys", "values", "get", "index", "count"};
static const char *const UNSAFE_LIST[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
static const char *const UNSAFE_DICT[] = {"pop", "popitem", "setdefault", "update", "clear"};

jv jj_method(jj_ctx *ctx, jv obj, const char *name, bool *found) {
    int lo = -1, hi = -1;
    if (obj.t == JV_STR) lo = M_STRIP, hi = M_SCOUNT;
    else if (obj.t == JV_DICT) lo = M_ITEMS, hi = M_GET;
    else if (obj.t == JV_LIST) lo = M_INDEX, hi = M_LCOUNT;
    *found = false;
    for (int i = lo; i >= 0 && i <= hi; i++)
        if (!strcmp(METHODS[i], name)) {
            *found = true;
            return jv_func(JJ_FN_METHOD_BASE + i, jj_box(ctx->rt, obj));
        }
    const char *const *unsafe = obj.t == JV_LIST ? UNSAFE_LIST : obj.t == JV_DICT ? UNSAFE_DICT : NULL;
    size_t nu = obj.t == JV_LIST ? sizeof UNSAFE_LIST / sizeof *UNSAFE_LIST : sizeof UNSAFE_DICT / sizeof *UNSAFE_DICT;
    for (size_t i = 0; unsafe && i < nu; i++)
        if (!strcmp(unsafe[i], name)) {
            *found = true;
            jv u = jv_undef_msg(ctx->rt, "access to attribute '%s' of '%s' object is unsafe (the sandbox: templates "
                                         "cannot modify lists or dicts)", name, jv_type_name(obj));
            u.flag = JJ_UNDEF_UNSAFE;
            return u;
        }
    return jv_undef();
}

jv jj_global(jj_ctx *ctx, const char *name, bool *found) {
    static const struct { const char *n; int fn; } G[] = {
        {"raise_exception", JJ_FN_RAISE}, {"strftime_now", JJ_FN_STRFTIME}, {"range", JJ_FN_RANGE},
        {"namespace", JJ_FN_NAMESPACE}, {"dict", JJ_FN_DICT}};
    (void)ctx;
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
        if (!strcmp(G[i].n, name)) {
            *found = true;
            return jv_func(G[i].fn, NULL);
        }
    *found = false;
    return jv_undef();
}

jv jj_loop_attr(jj_ctx *ctx, jv loop, const char *name) {
    jj_loop *lp = loop.u.lp;
    int64_t i = (int64_t)lp->i, n = (int64_t)lp->items->n;
    if (!strcmp(name, "index")) return jv_int(i + 1);
    if (!strcmp(name, "index0")) return jv_int(i);
    if (!strcmp(name, "revindex")) return jv_int(n - i);
    if (!strcmp(name, "revindex0")) return jv_int(n - i - 1);
    if (!strcmp(name, "first")) return jv_bool(i == 0);
    if (!strcmp(name, "last")) return jv_bool(i == n - 1);
    if (!strcmp(name, "length")) return jv_int(n);
    if (!strcmp(name, "depth")) return jv_int(1);
    if (!strcmp(name, "depth0")) return jv_int(0);
    if (!strcmp(name, "previtem")) return i > 0 ? lp->items->v[i - 1] : jv_undef_msg(ctx->rt, "there is no previous item");
    if (!strcmp(name, "nextitem")) return i + 1 < n ? lp->items->v[i + 1] : jv_undef_msg(ctx->rt, "there is no next item");
    if (!strcmp(name, "cycle")) return jv_func(JJ_FN_LOOP_CYCLE, jj_box(ctx->rt, loop));
    return jv_undef_msg(ctx->rt, "'LoopContext' object has no attribute '%s'", name);
}

static jv karg(const char *const *kwn, const jv *kwv, size_t nkw, const char *name, jv dflt) {
    for (size_t i = 0; i < nkw; i++)
        if (!strcmp(kwn[i], name)) return kwv[i];
    return dflt;
}

static bool in_set(jv chars, const char *p, size_t len) {
    for (size_t i = 0; i + len <= chars.u.s->n;) {
        size_t l = jj_utf8_offset(chars.u.s->p + i, chars.u.s->n - i, 1);
        if (l == len && !memcmp(chars.u.s->p + i, p, len)) return true;
        i += l ? l : 1;
    }
    return false;
}

static jv strip_chars(jj_ctx *ctx, jv s, jv chars, bool left, bool right) {
    if (chars.t == JV_NONE || chars.t == JV_UNDEF) {
        jv t = jj_strip_ws(ctx, s);
        /* one-sided: keep the other side */
        if (left && right) return t;
        const char *p = s.u.s->p;
        size_t n = s.u.s->n;
        if (!t.u.s->n) return t;
        const char *at = p;
        size_t skip = 0;
        /* t is a substring of s: find where it starts (the first non-space) */
        while (skip < n && memcmp(at + skip, t.u.s->p, t.u.s->n) != 0) skip++;
        if (left) return jv_str(ctx->rt, p + skip, n - skip);
        return jv_str(ctx->rt, p, skip + t.u.s->n);
    }
    if (chars.t != JV_STR) jj_fail(ctx->rt, 0, "strip arg must be None or str");
    const char *p = s.u.s->p;
    size_t a = 0, b = s.u.s->n;
    while (left && a < b) {
        size_t l = jj_utf8_offset(p + a, b - a, 1);
        if (!in_set(chars, p + a, l)) break;
        a += l;
    }
    while (right && b > a) {
        size_t st = b - 1;
        while (st > a && ((unsigned char)p[st] & 0xc0) == 0x80) st--;
        if (!in_set(chars, p + st, b - st)) break;
        b = st;
    }
    return jv_str(ctx->rt, p + a, b - a);
}

static bool affix(jv s, jv x, bool end) {
    if (x.t != JV_STR || x.u.s->n > s.u.s->n) return false;
    return !memcmp(s.u.s->p + (end ? s.u.s->n - x.u.s->n : 0), x.u.s->p, x.u.s->n);
}

static jv split(jj_ctx *ctx, int line, jv s, jv sep, int64_t maxsplit) {
    jj_rt *rt = ctx->rt;
    jv out = jv_list(rt, 0);
    const char *p = s.u.s->p;
    size_t n = s.u.s->n;
    if (sep.t == JV_NONE || sep.t == JV_UNDEF) { /* runs of whitespace, ends dropped */
        size_t i = 0;
        int64_t k = 0;
        for (;;) {
            while (i < n && (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r'))) i++;
            if (i >= n) break;
            if (maxsplit >= 0 && k == maxsplit) {
                size_t e = n;
                while (e > i && (p[e - 1] == ' ' || (p[e - 1] >= '\t' && p[e - 1] <= '\r'))) e--;
                jj_list_push(rt, out.u.l, jv_str(rt, p + i, e - i));
                break;
            }
            size_t j = i;
            while (j < n && !(p[j] == ' ' || (p[j] >= '\t' && p[j] <= '\r'))) j++;
            jj_list_push(rt, out.u.l, jv_str(rt, p + i, j - i));
            k++;
            i = j;
        }
        return out;
    }
    if (sep.t != JV_STR) jj_fail(rt, line, "split: the separator must be a string");
    if (!sep.u.s->n) jj_fail(rt, line, "split: empty separator");
    size_t i = 0;
    int64_t k = 0;
    for (;;) {
        const char *f = NULL;
        if (maxsplit < 0 || k < maxsplit)
            for (size_t j = i; j + sep.u.s->n <= n; j++)
                if (!memcmp(p + j, sep.u.s->p, sep.u.s->n)) {
                    f = p + j;
                    break;
                }
        if (!f) {
            jj_list_push(rt, out.u.l, jv_str(rt, p + i, n - i));
            return out;
        }
        jj_list_push(rt, out.u.l, jv_str(rt, p + i, (size_t)(f - p) - i));
        i = (size_t)(f - p) + sep.u.s->n;
        k++;
    }
}

static jv replace(jj_ctx *ctx, jv s, jv old, jv new, int64_t count) {
    jj_rt *rt = ctx->rt;
    jj_buf b = {0};
    const char *p = s.u.s->p;
    size_t n = s.u.s->n, i = 0;
    int64_t k = 0;
    if (!old.u.s->n) { /* Python inserts `new` around every character */
        jj_list *chars = jj_iterate(ctx, 0, s);
        for (size_t j = 0; j <= chars->n; j++) {
            if (count < 0 || k < count) {
                jj_buf_put(rt, &b, new.u.s->p, new.u.s->n);
                k++;
            }
            if (j < chars->n) jj_buf_put(rt, &b, chars->v[j].u.s->p, chars->v[j].u.s->n);
        }
        return jj_buf_value(rt, &b);
    }
    while (i < n) {
        if ((count < 0 || k < count) && n - i >= old.u.s->n && !memcmp(p + i, old.u.s->p, old.u.s->n)) {
            jj_buf_put(rt, &b, new.u.s->p, new.u.s->n);
            i += old.u.s->n;
            k++;
        } else {
            jj_buf_putc(rt, &b, p[i++]);
        }
    }
    return jj_buf_value(rt, &b);
}

/* str.format with {} / {0} / {name} fields (no format specs). */
static jv format(jj_ctx *ctx, int line, jv s, const jv *pos, size_t npos, const char *const *kwn, const jv *kwv, size_t nkw) {
    jj_rt *rt = ctx->rt;
    jj_buf b = {0};
    const char *p = s.u.s->p;
    size_t n = s.u.s->n, auto_i = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') { jj_buf_putc(rt, &b, '{'); i++; continue; }
        if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') { jj_buf_putc(rt, &b, '}'); i++; continue; }
        if (p[i] != '{') { jj_buf_putc(rt, &b, p[i]); continue; }
        const char *e = memchr(p + i, '}', n - i);
        if (!e) jj_fail(rt, line, "format: single '{' encountered in format string");
        size_t fl = (size_t)(e - p) - i - 1;
        const char *f = p + i + 1;
        if (memchr(f, ':', fl) || memchr(f, '!', fl)) jj_fail(rt, line, "format: format specs are not supported");
        jv v;
        if (fl == 0) {
            if (auto_i >= npos) jj_fail(rt, line, "format: replacement index %zu out of range", auto_i);
            v = pos[auto_i++];
        } else if (f[0] >= '0' && f[0] <= '9') {
            size_t k = (size_t)strtoul(f, NULL, 10);
            if (k >= npos) jj_fail(rt, line, "format: replacement index %zu out of range", k);
            v = pos[k];
        } else {
            jv key = jv_str(rt, f, fl);
            bool ok = false;
            for (size_t k = 0; k < nkw; k++)
                if (!strcmp(kwn[k], key.u.s->p)) { v = kwv[k]; ok = true; }
            if (!ok) jj_fail(rt, line, "format: KeyError '%s'", key.u.s->p);
        }
        jv_str_into(rt, &b, v);
        i = (size_t)(e - p);
    }
    return jj_buf_value(rt, &b);
}

static jv pairs(jj_ctx *ctx, jj_dict *d, int which) {
    jv out = jv_list(ctx->rt, d->n);
    for (size_t i = 0; i < d->n; i++) {
        if (which == 0) {
            jv t = jv_list(ctx->rt, 2);
            t.flag = 1;
            jj_list_push(ctx->rt, t.u.l, d->k[i]);
            jj_list_push(ctx->rt, t.u.l, d->v[i]);
            jj_list_push(ctx->rt, out.u.l, t);
        } else jj_list_push(ctx->rt, out.u.l, which == 1 ? d->k[i] : d->v[i]);
    }
    return out;
}

static void nargs_max(jj_ctx *ctx, int line, const char *what, size_t n, size_t max) {
    if (n > max) jj_fail(ctx->rt, line, "%s takes at most %zu argument(s) (%zu given)", what, max, n);
}

jv jj_call_builtin(jj_ctx *ctx, int line, jv f, const jv *pos, size_t npos, const char *const *kwn, const jv *kwv,
                   size_t nkw) {
    jj_rt *rt = ctx->rt;
    jv a0 = npos > 0 ? pos[0] : jv_none(), a1 = npos > 1 ? pos[1] : jv_none();
    switch (f.fn) {
    case JJ_FN_RAISE: {
        jv m = jv_to_str(rt, a0);
        char msg[400];
        snprintf(msg, sizeof msg, "jinja: line %d: raise_exception: %s", line, m.u.s->p);
        jj_fail_raw(rt, WK_ERR_ARG, msg);
    }
    case JJ_FN_STRFTIME: {
        if (a0.t != JV_STR) jj_fail(rt, line, "strftime_now needs a format string");
        time_t t = (time_t)(ctx->now ? ctx->now : (int64_t)time(NULL));
        struct tm tm;
        gmtime_r(&t, &tm);
        char buf[512];
        size_t k = strftime(buf, sizeof buf, a0.u.s->p, &tm);
        return jv_str(rt, buf, k);
    }
    case JJ_FN_RANGE: {
        int64_t start = 0, stop, step = 1;
        for (size_t i = 0; i < npos; i++)
            if (pos[i].t != JV_INT) jj_fail(rt, line, "range: arguments must be integers");
        if (npos == 1) stop = pos[0].u.i;
        else if (npos == 2 || npos == 3) {
            start = pos[0].u.i;
            stop = pos[1].u.i;
            if (npos == 3) step = pos[2].u.i;
        } else jj_fail(rt, line, "range takes 1 to 3 arguments");
        if (step == 0) jj_fail(rt, line, "range() arg 3 must not be zero");
        jv out = jv_list(rt, 0);
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (out.u.l->n >= JJ_MAX_RANGE) jj_fail(rt, line, "range too big, maximum size for range is %d", JJ_MAX_RANGE);
            jj_list_push(rt, out.u.l, jv_int(i));
        }
        return out;
    }
    case JJ_FN_NAMESPACE: case JJ_FN_DICT: {
        jv d = jv_dict(rt);
        if (npos > 1) jj_fail(rt, line, "%s takes at most one positional argument", f.fn == JJ_FN_DICT ? "dict" : "namespace");
        if (npos == 1) {
            if (a0.t != JV_DICT) jj_fail(rt, line, "the positional argument must be a dict");
            for (size_t i = 0; i < a0.u.d->n; i++) jj_dict_set(rt, d.u.d, a0.u.d->k[i], a0.u.d->v[i]);
        }
        for (size_t i = 0; i < nkw; i++) jj_dict_set(rt, d.u.d, jv_cstr(rt, kwn[i]), kwv[i]);
        if (f.fn == JJ_FN_NAMESPACE) {
            for (size_t i = 0; i < d.u.d->n; i++)
                if (d.u.d->k[i].t == JV_STR && d.u.d->k[i].u.s->p[0] == '_')
                    jj_fail(rt, line, "namespace attributes cannot start with '_' (%s)", d.u.d->k[i].u.s->p);
            d.t = JV_NS;
        }
        return d;
    }
    case JJ_FN_LOOP_CYCLE: {
        if (!npos) jj_fail(rt, line, "no items for cycling given");
        return pos[f.self->u.lp->i % npos];
    }
    }
    if (f.fn < JJ_FN_METHOD_BASE || !f.self) jj_fail(rt, line, "internal: bad builtin %d", f.fn);
    jv s = *f.self;
    int m = f.fn - JJ_FN_METHOD_BASE;
    const char *mn = METHODS[m];
    switch (m) {
    case M_STRIP: case M_LSTRIP: case M_RSTRIP:
        nargs_max(ctx, line, mn, npos, 1);
        return strip_chars(ctx, s, a0, m != M_RSTRIP, m != M_LSTRIP);
    case M_STARTSWITH: case M_ENDSWITH: {
        if (a0.t == JV_LIST && a0.flag) {
            for (size_t i = 0; i < a0.u.l->n; i++)
                if (affix(s, a0.u.l->v[i], m == M_ENDSWITH)) return jv_bool(true);
            return jv_bool(false);
        }
        if (a0.t != JV_STR) jj_fail(rt, line, "%s first arg must be str or a tuple of str, not %s", mn, jv_type_name(a0));
        return jv_bool(affix(s, a0, m == M_ENDSWITH));
    }
    case M_SPLIT: {
        jv sep = karg(kwn, kwv, nkw, "sep", a0);
        jv ms = karg(kwn, kwv, nkw, "maxsplit", npos > 1 ? a1 : jv_int(-1));
        return split(ctx, line, s, sep, ms.t == JV_INT ? ms.u.i : -1);
    }
    case M_UPPER: return jj_str_upper(rt, s);
    case M_LOWER: return jj_str_lower(rt, s);
    case M_TITLE: case M_CAPITALIZE:
        return jj_apply_filter(ctx, line, jj_filter_id(m == M_TITLE ? "title" : "capitalize"), mn, s, NULL, 0, NULL, NULL, 0);
    case M_REPLACE: {
        if (a0.t != JV_STR || a1.t != JV_STR) jj_fail(rt, line, "replace() arguments must be str");
        jv c = npos > 2 ? pos[2] : jv_int(-1);
        return replace(ctx, s, a0, a1, c.t == JV_INT ? c.u.i : -1);
    }
    case M_FORMAT: return format(ctx, line, s, pos, npos, kwn, kwv, nkw);
    case M_JOIN: {
        jj_list *l = jj_iterate(ctx, line, a0);
        jj_buf b = {0};
        for (size_t i = 0; i < l->n; i++) {
            if (l->v[i].t != JV_STR) jj_fail(rt, line, "sequence item %zu: expected str instance, %s found", i, jv_type_name(l->v[i]));
            if (i) jj_buf_put(rt, &b, s.u.s->p, s.u.s->n);
            jj_buf_put(rt, &b, l->v[i].u.s->p, l->v[i].u.s->n);
        }
        return jj_buf_value(rt, &b);
    }
    case M_FIND: case M_SCOUNT: {
        if (a0.t != JV_STR) jj_fail(rt, line, "%s: must be str", mn);
        int64_t k = 0;
        for (size_t i = 0; i + a0.u.s->n <= s.u.s->n;) {
            if (!memcmp(s.u.s->p + i, a0.u.s->p, a0.u.s->n)) {
                if (m == M_FIND) return jv_int((int64_t)jj_utf8_len(s.u.s->p, i));
                k++;
                i += a0.u.s->n ? a0.u.s->n : 1;
            } else i++;
        }
        return jv_int(m == M_FIND ? -1 : k);
    }
    case M_ITEMS: return pairs(ctx, s.u.d, 0);
    case M_KEYS: return pairs(ctx, s.u.d, 1);
    case M_VALUES: return pairs(ctx, s.u.d, 2);
    case M_GET: {
        nargs_max(ctx, line, "get", npos, 2);
        jv *v = jj_dict_get(s.u.d, a0);
        return v ? *v : a1;
    }
    case M_INDEX: case M_LCOUNT: {
        int64_t k = 0;
        for (size_t i = 0; i < s.u.l->n; i++)
            if (jv_equal(s.u.l->v[i], a0)) {
                if (m == M_INDEX) return jv_int((int64_t)i);
                k++;
            }
        if (m == M_INDEX) jj_fail(rt, line, "list.index(x): x not in list");
        return jv_int(k);
    }
    }
    jj_fail(rt, line, "internal: bad method %d", m);
}
