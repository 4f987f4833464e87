/* JSON schema -> GBNF text -> compiled grammar (wk_grammar_from_json_schema,
 * wk_grammar_json_object).
 *
 * Each schema node becomes one rule "sN"; $ref targets get one rule each,
 * named before their body is written, so recursive schemas are recursive
 * grammars (bounded by the output length). The JSON building blocks
 * (strings, numbers, any value, whitespace) are fixed rules, PRIMITIVES.
 *
 * What is enforced, and wick's choices:
 * - type (a name or a list), const, enum (each value as compact JSON),
 *   anyOf, oneOf (as anyOf: a grammar cannot say "exactly one"), allOf
 *   (object schemas merged: properties and required; anything else in an
 *   allOf of more than one schema is refused), $ref to "#", "#/$defs/..."
 *   and "#/definitions/..." (keywords beside a $ref are ignored, as in
 *   draft 7); schema true = any value, false is refused.
 * - objects: properties in the schema's order, required ones always,
 *   optional ones may be left out; other keys only when
 *   additionalProperties is true or a schema (as llama.cpp: when it is
 *   absent the model sticks to the listed keys), after the listed ones; an
 *   object schema without properties is any object (values: the
 *   additionalProperties schema if one is given).
 * - arrays: items, prefixItems (all present, then items' schema repeated
 *   when items is a schema, nothing more otherwise), minItems, maxItems.
 * - strings: minLength, maxLength (in characters), format date, time,
 *   date-time, uuid (any other format: a plain string); JSON escapes, no
 *   raw control characters.
 * - integers: minimum, maximum, exclusiveMinimum, exclusiveMaximum exactly
 *   (a digit-range grammar). numbers: minimum >= 0 (no sign); any other
 *   bound on a number is refused.
 * - refused with the keyword named: pattern, patternProperties,
 *   propertyNames, min/maxProperties, multipleOf, not, if/then/else,
 *   dependent*, uniqueItems, contains, unevaluated*, remote $ref.
 * - whitespace: between tokens at most one space, or one newline and up to
 *   16 spaces/tabs (pretty-printing), so a model cannot loop on blanks; no
 *   whitespace before the value or after it (the value ends the output).
 * Limits: nesting 128 schema levels, 16 MiB of grammar text, counts up to
 * WK__GR_MAX_REP. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "text/grammar_internal.h"
#include "text/grammar_jtree.h"

static const char OP[] = "wk_grammar_from_json_schema";

static const char PRIMITIVES[] =
    "ws ::= ( \" \" | \"\\n\" [ \\t]{0,16} )?\n"
    "jhex ::= [0-9a-fA-F]\n"
    "jchar ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" jhex jhex jhex jhex )\n"
    "jstr ::= \"\\\"\" jchar* \"\\\"\"\n"
    "jint ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "jfrac ::= ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "jnum ::= jint jfrac\n"
    "jbool ::= \"true\" | \"false\"\n"
    "jnull ::= \"null\"\n"
    "jval ::= jobj | jarr | jstr | jnum | jbool | jnull\n"
    "jobj ::= \"{\" ws ( jstr ws \":\" ws jval ws ( \",\" ws jstr ws \":\" ws jval ws )* )? \"}\"\n"
    "jarr ::= \"[\" ws ( jval ws ( \",\" ws jval ws )* )? \"]\"\n"
    "jdate ::= [0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )\n"
    "jtime ::= ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? "
    "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )\n"
    "juuid ::= jhex{8} \"-\" jhex{4} \"-\" jhex{4} \"-\" jhex{4} \"-\" jhex{12}\n";

#define MAX_TEXT (16u << 20)
#define MAX_NEST 128

typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool bad;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->bad) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n + 1) c *= 2;
        char *ns = c <= (size_t)MAX_TEXT * 2 ? realloc(b->s, c) : NULL;
        if (!ns) {
            b->bad = true;
            return;
        }
        b->s = ns;
        b->cap = c;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}
static void sb_cat(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_fmt(sbuf *b, const char *fmt, ...) WK_PRINTF(2, 3);
static void sb_fmt(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

typedef struct refmap {
    char *ref;
    uint32_t id;
} refmap;

typedef struct ctx {
    const wk__jv *root;
    sbuf out;
    uint32_t next;
    refmap *refs;
    uint32_t nrefs, caprefs;
    int depth;
    bool failed;
} ctx;

static bool fail(ctx *c, const char *fmt, ...) WK_PRINTF(2, 3);
static bool fail(ctx *c, const char *fmt, ...) {
    if (c->failed) return false;
    c->failed = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wk__err(WK_ERR_FORMAT, OP, "%s", msg);
    return false;
}

/* ---- literals ---- */

/* Bytes as a GBNF string literal, quotes included. */
static void gbnf_literal(sbuf *b, const char *s, size_t n) {
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            sb_put(b, e, 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            sb_fmt(b, "\\x%02x", ch);
        } else {
            sb_put(b, (const char *)&ch, 1);
        }
    }
    sb_put(b, "\"", 1);
}

/* A string as JSON text (quotes, escapes). */
static void json_string(sbuf *b, const char *s, size_t n) {
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"') sb_cat(b, "\\\"");
        else if (ch == '\\') sb_cat(b, "\\\\");
        else if (ch == '\n') sb_cat(b, "\\n");
        else if (ch == '\t') sb_cat(b, "\\t");
        else if (ch == '\r') sb_cat(b, "\\r");
        else if (ch < 0x20) sb_fmt(b, "\\u%04x", ch);
        else sb_put(b, (const char *)&ch, 1);
    }
    sb_put(b, "\"", 1);
}

/* A value as compact JSON (iterative over arrays/objects would be nicer;
 * the tree's depth is bounded by the parser). */
static void json_compact(sbuf *b, const wk__jv *v) {
    switch (v->type) {
    case WK__JSON_NULL: sb_cat(b, "null"); break;
    case WK__JSON_BOOL: sb_cat(b, v->b ? "true" : "false"); break;
    case WK__JSON_NUMBER: sb_put(b, v->s, v->n); break;
    case WK__JSON_STRING: json_string(b, v->s, v->n); break;
    case WK__JSON_ARRAY:
        sb_cat(b, "[");
        for (uint32_t i = 0; i < v->len; i++) {
            if (i) sb_cat(b, ",");
            json_compact(b, &v->v[i]);
        }
        sb_cat(b, "]");
        break;
    case WK__JSON_OBJECT:
        sb_cat(b, "{");
        for (uint32_t i = 0; i < v->len; i++) {
            if (i) sb_cat(b, ",");
            json_string(b, v->keys[i], v->klen[i]);
            sb_cat(b, ":");
            json_compact(b, &v->v[i]);
        }
        sb_cat(b, "}");
        break;
    default: break;
    }
}

/* A JSON value as a GBNF literal (the exact compact text). */
static void value_literal(sbuf *b, const wk__jv *v) {
    sbuf t = {0};
    json_compact(&t, v);
    if (t.bad) b->bad = true;
    else gbnf_literal(b, t.s ? t.s : "", t.n);
    free(t.s);
}

/* ---- integer ranges ---- */

/* Digit strings of length L between x and y (same length, as text). */
static void fixed_range(sbuf *b, const char *x, const char *y, int L) {
    if (L == 0) return;
    if (x[0] == y[0]) {
        sb_fmt(b, "\"%c\" ", x[0]);
        fixed_range(b, x + 1, y + 1, L - 1);
        return;
    }
    char nines[24], zeros[24];
    memset(nines, '9', (size_t)L);
    memset(zeros, '0', (size_t)L);
    sb_fmt(b, "( \"%c\" ", x[0]);
    fixed_range(b, x + 1, nines, L - 1);
    if (x[0] + 1 <= y[0] - 1) {
        sb_fmt(b, "| [%c-%c] ", x[0] + 1, y[0] - 1);
        if (L > 1) sb_fmt(b, "[0-9]{%d} ", L - 1);
    }
    sb_fmt(b, "| \"%c\" ", y[0]);
    fixed_range(b, zeros, y + 1, L - 1);
    sb_cat(b, ") ");
}

/* Non-negative integers in [a, b] (b < 0: unbounded), no leading zeros. */
static void nonneg_range(sbuf *out, long long a, long long b) {
    char xa[24], xb[24];
    int la = snprintf(xa, sizeof xa, "%lld", a);
    int lb = b < 0 ? 18 : snprintf(xb, sizeof xb, "%lld", b);
    sb_cat(out, "( ");
    bool first = true;
    for (int L = la; L <= lb; L++) {
        char lo[24], hi[24];
        if (L == la) memcpy(lo, xa, (size_t)L + 1);
        else {
            memset(lo, '0', (size_t)L);
            lo[0] = '1';
            lo[L] = 0;
        }
        if (b >= 0 && L == lb) memcpy(hi, xb, (size_t)L + 1);
        else {
            memset(hi, '9', (size_t)L);
            hi[L] = 0;
        }
        if (!first) sb_cat(out, "| ");
        first = false;
        if (b < 0 && L > la) { /* every longer number: one rule for all lengths */
            sb_fmt(out, "[1-9] [0-9]{%d,17} ", la);
            break;
        }
        fixed_range(out, lo, hi, L);
    }
    sb_cat(out, ") ");
}

/* A bound from a number's text: ceil (lower) or floor (upper), |v| < 1e17. */
static bool int_bound(ctx *c, const wk__jv *v, const char *kw, bool lower, bool exclusive, long long *out) {
    if (v->type != WK__JSON_NUMBER) return fail(c, "%s must be a number", kw);
    double d = strtod(v->s, NULL);
    if (!(fabs(d) < 1e17)) return fail(c, "%s %s is out of the range wick enforces (|v| < 1e17)", kw, v->s);
    double r = lower ? ceil(d) : floor(d);
    if (exclusive && r == d) r += lower ? 1 : -1;
    *out = (long long)r;
    return true;
}

static bool integer_body(ctx *c, const wk__jv *s, sbuf *b) {
    bool has_lo = false, has_hi = false;
    long long lo = 0, hi = 0, t = 0;
    const wk__jv *v;
    if ((v = wk__jv_get(s, "minimum"))) {
        if (!int_bound(c, v, "minimum", true, false, &t)) return false;
        lo = t, has_lo = true;
    }
    if ((v = wk__jv_get(s, "exclusiveMinimum")) && v->type != WK__JSON_BOOL) {
        if (!int_bound(c, v, "exclusiveMinimum", true, true, &t)) return false;
        if (!has_lo || t > lo) lo = t;
        has_lo = true;
    }
    if ((v = wk__jv_get(s, "maximum"))) {
        if (!int_bound(c, v, "maximum", false, false, &t)) return false;
        hi = t, has_hi = true;
    }
    if ((v = wk__jv_get(s, "exclusiveMaximum")) && v->type != WK__JSON_BOOL) {
        if (!int_bound(c, v, "exclusiveMaximum", false, true, &t)) return false;
        if (!has_hi || t < hi) hi = t;
        has_hi = true;
    }
    if (!has_lo && !has_hi) {
        sb_cat(b, "jint");
        return true;
    }
    if (has_lo && has_hi && lo > hi) return fail(c, "integer range [%lld, %lld] is empty", lo, hi);
    bool alt = false;
    sb_cat(b, "( ");
    if (!has_lo || lo < 0) { /* negative part: "-" then [max(1, -hi), -lo] */
        long long a = has_hi && hi < 0 ? -hi : 1, z = has_lo ? -lo : -1;
        sb_cat(b, "\"-\" ");
        nonneg_range(b, a, z);
        alt = true;
    }
    if (!has_hi || hi >= 0) {
        if (alt) sb_cat(b, "| ");
        nonneg_range(b, has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1);
    }
    sb_cat(b, ")");
    return true;
}

/* ---- schemas ---- */

static int64_t gen(ctx *c, const wk__jv *s);

static const char *const UNSUPPORTED[] = {
    "pattern", "patternProperties", "propertyNames", "minProperties", "maxProperties", "multipleOf", "not", "if",
    "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "uniqueItems", "contains", "minContains",
    "maxContains", "unevaluatedProperties", "unevaluatedItems",
};

static bool count_kw(ctx *c, const wk__jv *s, const char *kw, long long *out) {
    const wk__jv *v = wk__jv_get(s, kw);
    if (!v) return true;
    char *end = NULL;
    long long k = v->type == WK__JSON_NUMBER ? strtoll(v->s, &end, 10) : -1;
    if (!end || *end || k < 0) return fail(c, "%s must be a non-negative integer", kw);
    if (k > WK__GR_MAX_REP) return fail(c, "%s %lld is above the limit %d", kw, k, WK__GR_MAX_REP);
    *out = k;
    return true;
}

/* "x" repeated lo..hi (hi < 0: unbounded) times, separated by sep. */
static void repeat_sep(sbuf *b, const char *x, const char *sep, long long lo, long long hi) {
    if (hi == 0) return;
    if (lo == 0) sb_cat(b, "( ");
    sb_fmt(b, "%s ", x);
    if (hi < 0) sb_fmt(b, "( %s %s )", sep, x);
    if (hi < 0) sb_fmt(b, "{%lld,}", lo > 1 ? lo - 1 : 0);
    else if (hi > 1) sb_fmt(b, "( %s %s ){%lld,%lld}", sep, x, lo > 1 ? lo - 1 : 0, hi - 1);
    if (lo == 0) sb_cat(b, ")?");
}

static bool string_body(ctx *c, const wk__jv *s, sbuf *b) {
    const wk__jv *f = wk__jv_get(s, "format");
    if (f && f->type == WK__JSON_STRING) {
        const char *fm = f->s;
        const char *r = !strcmp(fm, "date") ? "jdate" : !strcmp(fm, "time") ? "jtime"
                       : !strcmp(fm, "date-time") ? "jdate \"T\" jtime" : !strcmp(fm, "uuid") ? "juuid" : NULL;
        if (r) {
            sb_fmt(b, "\"\\\"\" %s \"\\\"\"", r);
            return true;
        }
    }
    long long lo = 0, hi = -1;
    if (!count_kw(c, s, "minLength", &lo) || !count_kw(c, s, "maxLength", &hi)) return false;
    if (hi >= 0 && hi < lo) return fail(c, "maxLength %lld < minLength %lld", hi, lo);
    if (lo == 0 && hi < 0) sb_cat(b, "jstr");
    else if (hi < 0) sb_fmt(b, "\"\\\"\" jchar{%lld,} \"\\\"\"", lo);
    else sb_fmt(b, "\"\\\"\" jchar{%lld,%lld} \"\\\"\"", lo, hi);
    return true;
}

static bool number_body(ctx *c, const wk__jv *s, sbuf *b) {
    static const char *const bounds[] = {"maximum", "exclusiveMaximum", "exclusiveMinimum"};
    for (int i = 0; i < 3; i++) {
        const wk__jv *v = wk__jv_get(s, bounds[i]);
        if (v && v->type != WK__JSON_BOOL) return fail(c, "%s on a number is not supported (only on integers)", bounds[i]);
    }
    const wk__jv *mn = wk__jv_get(s, "minimum");
    if (!mn) {
        sb_cat(b, "jnum");
        return true;
    }
    if (mn->type != WK__JSON_NUMBER || strtod(mn->s, NULL) != 0)
        return fail(c, "minimum on a number is supported only as 0 (it is %s)", mn->type == WK__JSON_NUMBER ? mn->s : "not a number");
    sb_cat(b, "( \"0\" | [1-9] [0-9]{0,15} ) jfrac");
    return true;
}

static bool array_body(ctx *c, const wk__jv *s, sbuf *b) {
    const wk__jv *items = wk__jv_get(s, "items"), *prefix = wk__jv_get(s, "prefixItems");
    long long lo = 0, hi = -1;
    if (!count_kw(c, s, "minItems", &lo) || !count_kw(c, s, "maxItems", &hi)) return false;
    if (hi >= 0 && hi < lo) return fail(c, "maxItems %lld < minItems %lld", hi, lo);
    if (prefix) {
        if (prefix->type != WK__JSON_ARRAY) return fail(c, "prefixItems must be an array");
        sb_cat(b, "\"[\" ws ");
        for (uint32_t i = 0; i < prefix->len; i++) {
            int64_t r = gen(c, &prefix->v[i]);
            if (r < 0) return false;
            sb_fmt(b, "%s s%lld ws ", i ? "\",\" ws" : "", (long long)r);
        }
        if (items && !(items->type == WK__JSON_BOOL && !items->b)) {
            int64_t r = gen(c, items);
            if (r < 0) return false;
            sb_fmt(b, "( \",\" ws s%lld ws )* ", (long long)r);
        }
        sb_cat(b, "\"]\"");
        return true;
    }
    char x[32] = "jval ws";
    if (items) {
        int64_t r = gen(c, items);
        if (r < 0) return false;
        snprintf(x, sizeof x, "s%lld ws", (long long)r);
    }
    sb_cat(b, "\"[\" ws ");
    repeat_sep(b, x, "\",\" ws", lo, hi);
    sb_cat(b, " \"]\"");
    return true;
}

/* properties (in order; req[i]: required), extra: rule of additional
 * values (-1: none). S_i / T_i: the members from i on, none / some
 * written so far (T's members start with a comma). */
static bool object_members(ctx *c, sbuf *b, const wk__jv **props, const char **names, const size_t *nlen,
                           const bool *req, uint32_t k, int64_t extra) {
    int64_t *kv = malloc(sizeof *kv * (k + 1));
    if (!kv) return fail(c, "out of memory");
    for (uint32_t i = 0; i < k; i++) {
        int64_t r = gen(c, props[i]);
        if (r < 0) {
            free(kv);
            return false;
        }
        /* kv rule: "\"name\"" ws ":" ws value ws */
        sbuf key = {0};
        json_string(&key, names[i], nlen[i]);
        kv[i] = c->next++;
        sb_fmt(&c->out, "s%lld ::= ", (long long)kv[i]);
        gbnf_literal(&c->out, key.s ? key.s : "", key.n);
        sb_fmt(&c->out, " ws \":\" ws s%lld ws\n", (long long)r);
        if (key.bad) c->out.bad = true;
        free(key.s);
    }
    uint32_t base = c->next;
    c->next += 2 * (k + 1); /* S_i = base + 2i, T_i = base + 2i + 1 */
    for (uint32_t i = 0; i <= k; i++) {
        long long S = base + 2 * i, T = S + 1;
        if (i == k) {
            if (extra >= 0) {
                sb_fmt(&c->out, "s%lld ::= ( jstr ws \":\" ws s%lld ws ( \",\" ws jstr ws \":\" ws s%lld ws )* )?\n", S,
                       (long long)extra, (long long)extra);
                sb_fmt(&c->out, "s%lld ::= ( \",\" ws jstr ws \":\" ws s%lld ws )*\n", T, (long long)extra);
            } else {
                sb_fmt(&c->out, "s%lld ::= \"\"\ns%lld ::= \"\"\n", S, T);
            }
            break;
        }
        sb_fmt(&c->out, "s%lld ::= s%lld s%lld%s", S, (long long)kv[i], T + 2, req[i] ? "\n" : "");
        if (!req[i]) sb_fmt(&c->out, " | s%lld\n", S + 2);
        sb_fmt(&c->out, "s%lld ::= \",\" ws s%lld s%lld%s", T, (long long)kv[i], T + 2, req[i] ? "\n" : "");
        if (!req[i]) sb_fmt(&c->out, " | s%lld\n", T + 2);
    }
    sb_fmt(b, "\"{\" ws s%lld \"}\"", (long long)base);
    free(kv);
    return true;
}

static bool is_required(const wk__jv *req, const char *name, size_t n) {
    if (!req || req->type != WK__JSON_ARRAY) return false;
    for (uint32_t i = 0; i < req->len; i++)
        if (req->v[i].type == WK__JSON_STRING && req->v[i].n == n && !memcmp(req->v[i].s, name, n)) return true;
    return false;
}

/* Object schemas: one, or the members of an allOf merged. */
static bool object_body(ctx *c, const wk__jv *const *parts, uint32_t nparts, sbuf *b) {
    uint32_t k = 0;
    for (uint32_t p = 0; p < nparts; p++) {
        const wk__jv *pr = wk__jv_get(parts[p], "properties");
        if (pr && pr->type != WK__JSON_OBJECT) return fail(c, "properties must be an object");
        if (pr) k += pr->len;
    }
    const wk__jv **props = malloc(sizeof *props * (k + 1));
    const char **names = malloc(sizeof *names * (k + 1));
    size_t *nlen = malloc(sizeof *nlen * (k + 1));
    bool *req = malloc(sizeof *req * (k + 1));
    bool ok = props && names && nlen && req;
    if (!ok) fail(c, "out of memory");
    uint32_t n = 0;
    const wk__jv *addl = NULL;
    bool any_props = false;
    for (uint32_t p = 0; p < nparts && ok; p++) {
        const wk__jv *pr = wk__jv_get(parts[p], "properties"), *rq = wk__jv_get(parts[p], "required");
        if (rq && rq->type != WK__JSON_ARRAY) ok = fail(c, "required must be an array");
        const wk__jv *a = wk__jv_get(parts[p], "additionalProperties");
        if (a) addl = a;
        for (uint32_t i = 0; ok && pr && i < pr->len; i++) {
            any_props = true;
            uint32_t j = 0;
            while (j < n && !(nlen[j] == pr->klen[i] && !memcmp(names[j], pr->keys[i], nlen[j]))) j++;
            if (j < n) continue; /* the first definition of a key wins */
            props[n] = &pr->v[i];
            names[n] = pr->keys[i];
            nlen[n] = pr->klen[i];
            req[n] = false;
            n++;
        }
    }
    /* required from every part */
    for (uint32_t p = 0; p < nparts && ok; p++)
        for (uint32_t j = 0; j < n; j++)
            if (is_required(wk__jv_get(parts[p], "required"), names[j], nlen[j])) req[j] = true;
    if (ok) {
        int64_t extra = -1;
        if (!any_props && !addl) {
            sb_cat(b, "jobj");
        } else {
            if (addl && !(addl->type == WK__JSON_BOOL && !addl->b)) {
                if (addl->type == WK__JSON_BOOL) extra = -2; /* any value */
                else if ((extra = gen(c, addl)) < 0) ok = false;
            }
            if (ok && extra == -2) {
                extra = c->next++;
                sb_fmt(&c->out, "s%lld ::= jval\n", (long long)extra);
            }
            if (ok) ok = object_members(c, b, props, names, nlen, req, n, extra);
        }
    }
    free(props);
    free(names);
    free(nlen);
    free(req);
    return ok;
}

static const wk__jv *resolve(ctx *c, const wk__jv *ref) {
    if (ref->type != WK__JSON_STRING) return fail(c, "$ref must be a string"), NULL;
    const char *r = ref->s;
    if (!strcmp(r, "#")) return c->root;
    const char *sec = !strncmp(r, "#/$defs/", 8) ? "$defs" : !strncmp(r, "#/definitions/", 14) ? "definitions" : NULL;
    if (!sec) return fail(c, "$ref \"%.100s\": only \"#\", \"#/$defs/...\" and \"#/definitions/...\" are supported", r), NULL;
    const char *name = r + (sec[0] == '$' ? 8 : 14);
    /* JSON pointer escapes: ~1 is '/', ~0 is '~' */
    char buf[512];
    size_t n = 0;
    for (const char *p = name; *p; p++) {
        if (n + 1 >= sizeof buf) return fail(c, "$ref name too long"), NULL;
        if (*p == '/') return fail(c, "$ref \"%.100s\": nested pointers are not supported", r), NULL;
        if (*p == '~' && (p[1] == '0' || p[1] == '1')) {
            buf[n++] = p[1] == '0' ? '~' : '/';
            p++;
        } else {
            buf[n++] = *p;
        }
    }
    buf[n] = 0;
    const wk__jv *t = wk__jv_get(wk__jv_get(c->root, sec), buf);
    if (!t) return fail(c, "$ref \"%.100s\" names no definition", r), NULL;
    return t;
}

/* The rule of a $ref target, made once (its id is known before its body,
 * so recursion refers to it). */
static int64_t gen_ref(ctx *c, const wk__jv *ref) {
    const wk__jv *t = resolve(c, ref);
    if (!t) return -1;
    for (uint32_t i = 0; i < c->nrefs; i++)
        if (!strcmp(c->refs[i].ref, ref->s)) return c->refs[i].id;
    if (c->nrefs == c->caprefs) {
        uint32_t cap = c->caprefs ? c->caprefs * 2 : 8;
        refmap *m = realloc(c->refs, sizeof *m * cap);
        if (!m) return fail(c, "out of memory"), -1;
        c->refs = m;
        c->caprefs = cap;
    }
    uint32_t id = c->next++;
    char *name = malloc(ref->n + 1);
    if (!name) return fail(c, "out of memory"), -1;
    memcpy(name, ref->s, ref->n + 1);
    c->refs[c->nrefs++] = (refmap){name, id};
    int64_t body = gen(c, t);
    if (body < 0) return -1;
    sb_fmt(&c->out, "s%u ::= s%lld\n", id, (long long)body);
    return id;
}

static bool type_body(ctx *c, const wk__jv *s, const char *type, sbuf *b) {
    if (!strcmp(type, "string")) return string_body(c, s, b);
    if (!strcmp(type, "integer")) return integer_body(c, s, b);
    if (!strcmp(type, "number")) return number_body(c, s, b);
    if (!strcmp(type, "boolean")) return sb_cat(b, "jbool"), true;
    if (!strcmp(type, "null")) return sb_cat(b, "jnull"), true;
    if (!strcmp(type, "array")) return array_body(c, s, b);
    if (!strcmp(type, "object")) return object_body(c, &s, 1, b);
    return fail(c, "unknown type \"%.60s\"", type);
}

static bool body_of(ctx *c, const wk__jv *s, sbuf *b) {
    if (s->type == WK__JSON_BOOL) {
        if (!s->b) return fail(c, "schema false matches nothing");
        sb_cat(b, "jval");
        return true;
    }
    if (s->type != WK__JSON_OBJECT) return fail(c, "a schema must be an object or a boolean");
    const wk__jv *v;
    if ((v = wk__jv_get(s, "$ref"))) {
        int64_t r = gen_ref(c, v);
        if (r < 0) return false;
        sb_fmt(b, "s%lld", (long long)r);
        return true;
    }
    for (size_t i = 0; i < sizeof UNSUPPORTED / sizeof *UNSUPPORTED; i++)
        if (wk__jv_get(s, UNSUPPORTED[i])) return fail(c, "keyword \"%s\" is not supported", UNSUPPORTED[i]);
    if ((v = wk__jv_get(s, "const"))) {
        value_literal(b, v);
        return true;
    }
    if ((v = wk__jv_get(s, "enum"))) {
        if (v->type != WK__JSON_ARRAY || v->len == 0) return fail(c, "enum must be a non-empty array");
        sb_cat(b, "( ");
        for (uint32_t i = 0; i < v->len; i++) {
            if (i) sb_cat(b, " | ");
            value_literal(b, &v->v[i]);
        }
        sb_cat(b, " )");
        return true;
    }
    const char *alts[] = {"anyOf", "oneOf"};
    for (int k = 0; k < 2; k++) {
        if (!(v = wk__jv_get(s, alts[k]))) continue;
        if (v->type != WK__JSON_ARRAY || v->len == 0) return fail(c, "%s must be a non-empty array", alts[k]);
        sb_cat(b, "( ");
        for (uint32_t i = 0; i < v->len; i++) {
            int64_t r = gen(c, &v->v[i]);
            if (r < 0) return false;
            sb_fmt(b, "%ss%lld", i ? " | " : "", (long long)r);
        }
        sb_cat(b, " )");
        return true;
    }
    if ((v = wk__jv_get(s, "allOf"))) {
        if (v->type != WK__JSON_ARRAY || v->len == 0) return fail(c, "allOf must be a non-empty array");
        if (v->len == 1) {
            int64_t r = gen(c, &v->v[0]);
            if (r < 0) return false;
            sb_fmt(b, "s%lld", (long long)r);
            return true;
        }
        const wk__jv **parts = malloc(sizeof *parts * (v->len + 1));
        if (!parts) return fail(c, "out of memory");
        uint32_t np = 0;
        parts[np++] = s; /* the schema's own properties join the merge */
        bool ok = true;
        for (uint32_t i = 0; i < v->len && ok; i++) {
            const wk__jv *p = &v->v[i];
            for (int hops = 0; ok && p && wk__jv_get(p, "$ref"); hops++)
                p = hops > 32 ? (fail(c, "allOf: $ref chain too long"), NULL) : resolve(c, wk__jv_get(p, "$ref"));
            if (!p) ok = false;
            else if (p->type != WK__JSON_OBJECT || wk__jv_get(p, "allOf") || wk__jv_get(p, "anyOf") ||
                     wk__jv_get(p, "oneOf") ||
                     (wk__jv_get(p, "type") && (wk__jv_get(p, "type")->type != WK__JSON_STRING ||
                                                strcmp(wk__jv_get(p, "type")->s, "object"))))
                ok = fail(c, "allOf: only object schemas (properties / required) are merged");
            else parts[np++] = p;
        }
        if (ok) ok = object_body(c, parts, np, b);
        free(parts);
        return ok;
    }
    v = wk__jv_get(s, "type");
    if (!v) { /* infer from the keywords, else any value */
        if (wk__jv_get(s, "properties") || wk__jv_get(s, "additionalProperties")) return object_body(c, &s, 1, b);
        if (wk__jv_get(s, "items") || wk__jv_get(s, "prefixItems")) return array_body(c, s, b);
        sb_cat(b, "jval");
        return true;
    }
    if (v->type == WK__JSON_STRING) return type_body(c, s, v->s, b);
    if (v->type != WK__JSON_ARRAY || v->len == 0) return fail(c, "type must be a string or a non-empty array");
    sb_cat(b, "( ");
    for (uint32_t i = 0; i < v->len; i++) {
        if (v->v[i].type != WK__JSON_STRING) return fail(c, "type list must hold strings");
        if (i) sb_cat(b, " | ");
        sb_cat(b, "( ");
        if (!type_body(c, s, v->v[i].s, b)) return false;
        sb_cat(b, " )");
    }
    sb_cat(b, " )");
    return true;
}

/* One rule for schema s; its id, or -1. */
static int64_t gen(ctx *c, const wk__jv *s) {
    if (c->failed) return -1;
    if (++c->depth > MAX_NEST) {
        fail(c, "schema nested deeper than %d levels (counting $ref hops)", MAX_NEST);
        c->depth--;
        return -1;
    }
    uint32_t id = c->next++;
    sbuf b = {0};
    bool ok = body_of(c, s, &b);
    c->depth--;
    if (ok && (b.bad || c->out.n > MAX_TEXT)) ok = fail(c, "schema too large (more than %u bytes of grammar)", MAX_TEXT);
    if (ok) sb_fmt(&c->out, "s%u ::= ", id), sb_put(&c->out, b.s, b.n), sb_cat(&c->out, "\n");
    free(b.s);
    return ok ? (int64_t)id : -1;
}

char *wk__grammar_schema_gbnf(const char *schema, size_t len, size_t *out_len) {
    if (!schema && len) return wk__err(WK_ERR_ARG, OP, "schema is NULL"), NULL;
    wk__jv root;
    char msg[200];
    if (!wk__jv_parse(schema ? schema : "", len, &root, msg, sizeof msg))
        return wk__err(WK_ERR_FORMAT, OP, "schema is not JSON: %s", msg), NULL;
    ctx c = {.root = &root};
    sb_cat(&c.out, PRIMITIVES);
    int64_t r = gen(&c, &root);
    if (r >= 0) sb_fmt(&c.out, "root ::= s%lld\n", (long long)r);
    if (r >= 0 && c.out.bad) {
        fail(&c, "out of memory");
        r = -1;
    }
    for (uint32_t i = 0; i < c.nrefs; i++) free(c.refs[i].ref);
    free(c.refs);
    wk__jv_free(&root);
    if (r < 0) {
        free(c.out.s);
        return NULL;
    }
    *out_len = c.out.n;
    return c.out.s;
}

wk_grammar *wk_grammar_from_json_schema(const char *schema, size_t len) {
    size_t n = 0;
    char *text = wk__grammar_schema_gbnf(schema, len, &n);
    if (!text) return NULL;
    wk_grammar *g = wk_grammar_from_gbnf(text, n, "root");
    if (!g) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        wk__err(wk_last_status(), OP, "the schema's grammar: %s", msg);
    }
    free(text);
    return g;
}

wk_grammar *wk_grammar_json_object(void) {
    static const char schema[] = "{\"type\":\"object\"}";
    return wk_grammar_from_json_schema(schema, sizeof schema - 1);
}
