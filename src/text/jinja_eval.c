/* Evaluating the tree: expressions with Python's operators, statements
 * with jinja2's scoping (a for loop's body gets a fresh scope each
 * iteration, so `set` inside a loop does not leak out -- that is what
 * namespace() is for; a macro sees the template's top-level names at call
 * time), and jinja2's default Undefined: a missing name or key is a value
 * that prints as nothing, is false and iterates as empty, and whose use
 * for anything else (an attribute, arithmetic, a call) is an error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja.h"

enum { FLOW_NONE, FLOW_BREAK, FLOW_CONTINUE };

static jv eval(jj_ctx *ctx, const jj_node *n);
static int exec_body(jj_ctx *ctx, const jj_node *body, jj_scope *sc);

/* The scope chain of the statement being run (set by exec_body). */
static jj_scope *scope_of(jj_ctx *ctx);

typedef struct frame {
    jj_scope *sc;
} frame;

static _Thread_local jj_scope *cur_scope;
static jj_scope *scope_of(jj_ctx *ctx) { return cur_scope ? cur_scope : ctx->top; }

static jj_scope *new_scope(jj_ctx *ctx, jj_scope *parent) {
    jj_scope *s = jj_alloc(ctx->rt, sizeof *s);
    s->parent = parent;
    return s;
}

static _Noreturn void undefined_error(jj_ctx *ctx, int line, jv u) {
    jj_fail(ctx->rt, line, "%s", u.u.s ? u.u.s->p : "undefined value");
}

static jv lookup(jj_ctx *ctx, const jj_node *n) {
    jv key = jv_cstr(ctx->rt, n->name);
    for (jj_scope *s = scope_of(ctx); s; s = s->parent) {
        jv *v = jj_dict_get(&s->vars, key);
        if (v) return *v;
    }
    jv *v = jj_dict_get(ctx->vars, key);
    if (v) return *v;
    bool found;
    jv g = jj_global(ctx, n->name, &found);
    if (found) return g;
    return jv_undef_msg(ctx->rt, "'%s' is undefined", n->name);
}

static void assign(jj_ctx *ctx, const jj_node *t, jv v, int line) {
    jj_scope *sc = scope_of(ctx);
    if (t->kind == N_NAME) {
        jj_dict_set(ctx->rt, &sc->vars, jv_cstr(ctx->rt, t->name), v);
    } else if (t->kind == N_NSREF) {
        jv ns = lookup(ctx, t->a);
        if (ns.t != JV_NS) jj_fail(ctx->rt, line, "cannot assign attribute on non-namespace object");
        if (t->name[0] == '_') jj_fail(ctx->rt, line, "cannot store underscore-prefixed attribute '%s' on a namespace", t->name);
        jj_dict_set(ctx->rt, ns.u.d, jv_cstr(ctx->rt, t->name), v);
    } else { /* tuple unpacking */
        jj_list *items = jj_iterate(ctx, line, v);
        if (items->n != t->nkids)
            jj_fail(ctx->rt, line, "cannot unpack %zu values into %zu names", items->n, t->nkids);
        for (size_t i = 0; i < t->nkids; i++) assign(ctx, t->kids[i], items->v[i], line);
    }
}

jj_list *jj_iterate(jj_ctx *ctx, int line, jv v) {
    jj_rt *rt = ctx->rt;
    switch (v.t) {
    case JV_UNDEF: return jv_list(rt, 0).u.l;
    case JV_LIST: return v.u.l;
    case JV_DICT: {
        jv l = jv_list(rt, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) jj_list_push(rt, l.u.l, v.u.d->k[i]);
        return l.u.l;
    }
    case JV_STR: {
        jv l = jv_list(rt, 0);
        const char *s = v.u.s->p;
        size_t n = v.u.s->n;
        for (size_t i = 0; i < n;) {
            size_t e = i + jj_utf8_offset(s + i, n - i, 1);
            jj_list_push(rt, l.u.l, jv_str(rt, s + i, e - i));
            i = e;
        }
        return l.u.l;
    }
    default: jj_fail(rt, line, "'%s' object is not iterable", jv_type_name(v));
    }
}

/* ---- attribute and item access ---- */

jv jj_getattr(jj_ctx *ctx, int line, jv obj, const char *name) {
    if (obj.t == JV_UNDEF) undefined_error(ctx, line, obj);
    if (obj.t == JV_LOOP) return jj_loop_attr(ctx, obj, name);
    if (obj.t == JV_NS) {
        jv *v = jj_dict_gets(obj.u.d, name);
        return v ? *v : jv_undef_msg(ctx->rt, "'Namespace' object has no attribute '%s'", name);
    }
    bool found;
    jv m = jj_method(ctx, obj, name, &found);
    if (found) return m;
    if (obj.t == JV_DICT) {
        jv *v = jj_dict_gets(obj.u.d, name);
        if (v) return *v;
    }
    return jv_undef_msg(ctx->rt, "'%s object' has no attribute '%s'", jv_type_name(obj), name);
}

static int64_t norm_index(int64_t i, size_t n) { return i < 0 ? i + (int64_t)n : i; }

jv jj_getitem(jj_ctx *ctx, int line, jv obj, jv key) {
    if (obj.t == JV_UNDEF) undefined_error(ctx, line, obj);
    if (obj.t == JV_DICT) {
        jv *v = jj_dict_get(obj.u.d, key);
        if (v) return *v;
    } else if (obj.t == JV_LIST && obj.flag == JJ_GEN) {
        jj_fail(ctx->rt, line, "'generator' object is not subscriptable");
    } else if ((obj.t == JV_LIST || obj.t == JV_STR) && (key.t == JV_INT || key.t == JV_BOOL)) {
        int64_t k = key.t == JV_INT ? key.u.i : key.u.b;
        if (obj.t == JV_LIST) {
            int64_t i = norm_index(k, obj.u.l->n);
            if (i >= 0 && (size_t)i < obj.u.l->n) return obj.u.l->v[i];
        } else {
            size_t len = jj_utf8_len(obj.u.s->p, obj.u.s->n);
            int64_t i = norm_index(k, len);
            if (i >= 0 && (size_t)i < len) {
                size_t a = jj_utf8_offset(obj.u.s->p, obj.u.s->n, (size_t)i);
                size_t b = a + jj_utf8_offset(obj.u.s->p + a, obj.u.s->n - a, 1);
                return jv_str(ctx->rt, obj.u.s->p + a, b - a);
            }
        }
    }
    if (key.t == JV_STR && obj.t != JV_DICT) return jj_getattr(ctx, line, obj, key.u.s->p);
    if (key.t == JV_STR) {
        bool found;
        jv m = jj_method(ctx, obj, key.u.s->p, &found);
        if (found) return m;
    }
    jj_buf b = {0};
    jv_repr_into(ctx->rt, &b, key);
    return jv_undef_msg(ctx->rt, "'%s object' has no attribute %s", jv_type_name(obj), b.p ? b.p : "");
}

static int64_t slice_bound(jj_ctx *ctx, int line, jv v, int64_t dflt, int64_t n, bool neg_step) {
    if (v.t == JV_NONE || v.t == JV_UNDEF) return dflt;
    if (v.t != JV_INT && v.t != JV_BOOL) jj_fail(ctx->rt, line, "slice indices must be integers or None");
    int64_t i = v.t == JV_INT ? v.u.i : v.u.b;
    if (i < 0) i += n;
    if (neg_step) return i < -1 ? -1 : i >= n ? n - 1 : i;
    return i < 0 ? 0 : i > n ? n : i;
}

static jv slice(jj_ctx *ctx, const jj_node *x) {
    jv obj = eval(ctx, x->a);
    if (obj.t == JV_UNDEF) undefined_error(ctx, x->line, obj);
    jv st = x->d ? eval(ctx, x->d) : jv_none();
    int64_t step = 1;
    if (st.t == JV_INT) step = st.u.i;
    else if (st.t != JV_NONE) jj_fail(ctx->rt, x->line, "slice step must be an integer");
    if (step == 0) jj_fail(ctx->rt, x->line, "slice step cannot be zero");
    jj_list *items;
    if (obj.t == JV_STR) items = jj_iterate(ctx, x->line, obj);
    else if (obj.t == JV_LIST) items = obj.u.l;
    else jj_fail(ctx->rt, x->line, "'%s' object is not subscriptable with a slice", jv_type_name(obj));
    int64_t n = (int64_t)items->n;
    int64_t a = slice_bound(ctx, x->line, x->b ? eval(ctx, x->b) : jv_none(), step > 0 ? 0 : n - 1, n, step < 0);
    int64_t b = slice_bound(ctx, x->line, x->c ? eval(ctx, x->c) : jv_none(), step > 0 ? n : -1, n, step < 0);
    jv out = jv_list(ctx->rt, 0);
    out.flag = obj.flag;
    for (int64_t i = a; step > 0 ? i < b : i > b; i += step) jj_list_push(ctx->rt, out.u.l, items->v[i]);
    if (obj.t != JV_STR) return out;
    jj_buf buf = {0};
    for (size_t i = 0; i < out.u.l->n; i++) jj_buf_put(ctx->rt, &buf, out.u.l->v[i].u.s->p, out.u.l->v[i].u.s->n);
    return jj_buf_value(ctx->rt, &buf);
}

/* ---- operators ---- */

static bool is_intlike(jv v) { return v.t == JV_INT || v.t == JV_BOOL; }
static int64_t ival(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }
static bool is_numv(jv v) { return is_intlike(v) || v.t == JV_FLOAT; }
static double fval(jv v) { return v.t == JV_FLOAT ? v.u.f : (double)ival(v); }

static jv repeat(jj_ctx *ctx, int line, jv seq, int64_t k) {
    if (k < 0) k = 0;
    jj_rt *rt = ctx->rt;
    if (seq.t == JV_STR) {
        if (seq.u.s->n && (uint64_t)k > JJ_MAX_OUTPUT / seq.u.s->n) jj_fail(rt, line, "string repetition is too large");
        jj_buf b = {0};
        for (int64_t i = 0; i < k; i++) jj_buf_put(rt, &b, seq.u.s->p, seq.u.s->n);
        return jj_buf_value(rt, &b);
    }
    if (seq.u.l->n && (uint64_t)k > JJ_MAX_ITERATIONS / seq.u.l->n) jj_fail(rt, line, "list repetition is too large");
    jv out = jv_list(rt, 0);
    out.flag = seq.flag;
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq.u.l->n; j++) jj_list_push(rt, out.u.l, seq.u.l->v[j]);
    return out;
}

static const char *op_sym(int op) {
    static const char *const s[] = {"", "+", "-", "*", "/", "//", "%", "**", "~"};
    return op <= JJ_OP_CONCAT ? s[op] : "?";
}

static jv binop(jj_ctx *ctx, int line, int op, jv a, jv b) {
    jj_rt *rt = ctx->rt;
    if (op == JJ_OP_CONCAT) {
        jj_buf buf = {0};
        jv_str_into(rt, &buf, a);
        jv_str_into(rt, &buf, b);
        return jj_buf_value(rt, &buf);
    }
    if (a.t == JV_UNDEF) undefined_error(ctx, line, a);
    if (b.t == JV_UNDEF) undefined_error(ctx, line, b);
    if (is_numv(a) && is_numv(b)) {
        if (is_intlike(a) && is_intlike(b) && op != JJ_OP_DIV) {
            int64_t x = ival(a), y = ival(b), r;
            switch (op) {
            case JJ_OP_ADD: if (__builtin_add_overflow(x, y, &r)) goto ovf; return jv_int(r);
            case JJ_OP_SUB: if (__builtin_sub_overflow(x, y, &r)) goto ovf; return jv_int(r);
            case JJ_OP_MUL: if (__builtin_mul_overflow(x, y, &r)) goto ovf; return jv_int(r);
            case JJ_OP_FLOORDIV: case JJ_OP_MOD:
                if (y == 0) jj_fail(rt, line, "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) goto ovf;
                r = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) r--;
                return op == JJ_OP_FLOORDIV ? jv_int(r) : jv_int(x - r * y);
            case JJ_OP_POW:
                if (y < 0) return jv_float(pow((double)x, (double)y));
                r = 1;
                for (int64_t i = 0; i < y; i++)
                    if (__builtin_mul_overflow(r, x, &r)) goto ovf;
                return jv_int(r);
            }
        }
        double x = fval(a), y = fval(b);
        switch (op) {
        case JJ_OP_ADD: return jv_float(x + y);
        case JJ_OP_SUB: return jv_float(x - y);
        case JJ_OP_MUL: return jv_float(x * y);
        case JJ_OP_DIV:
            if (y == 0) jj_fail(rt, line, "division by zero");
            return jv_float(x / y);
        case JJ_OP_FLOORDIV:
            if (y == 0) jj_fail(rt, line, "float floor division by zero");
            return jv_float(floor(x / y));
        case JJ_OP_MOD: {
            if (y == 0) jj_fail(rt, line, "float modulo");
            double m = fmod(x, y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            return jv_float(m);
        }
        case JJ_OP_POW: return jv_float(pow(x, y));
        }
    }
    if (op == JJ_OP_ADD && a.t == JV_STR && b.t == JV_STR) {
        bool markup = a.flag == JJ_MARKUP || b.flag == JJ_MARKUP;
        if (markup && a.flag != JJ_MARKUP) a = jj_html_escape(rt, a);
        if (markup && b.flag != JJ_MARKUP) b = jj_html_escape(rt, b);
        jj_buf buf = {0};
        jj_buf_put(rt, &buf, a.u.s->p, a.u.s->n);
        jj_buf_put(rt, &buf, b.u.s->p, b.u.s->n);
        jv r = jj_buf_value(rt, &buf);
        r.flag = markup ? JJ_MARKUP : 0;
        return r;
    }
    if (op == JJ_OP_ADD && a.t == JV_LIST && b.t == JV_LIST && a.flag == b.flag) {
        jv out = jv_list(rt, a.u.l->n + b.u.l->n);
        out.flag = a.flag;
        for (size_t i = 0; i < a.u.l->n; i++) jj_list_push(rt, out.u.l, a.u.l->v[i]);
        for (size_t i = 0; i < b.u.l->n; i++) jj_list_push(rt, out.u.l, b.u.l->v[i]);
        return out;
    }
    if (op == JJ_OP_MUL && (a.t == JV_STR || a.t == JV_LIST) && is_intlike(b)) return repeat(ctx, line, a, ival(b));
    if (op == JJ_OP_MUL && (b.t == JV_STR || b.t == JV_LIST) && is_intlike(a)) return repeat(ctx, line, b, ival(a));
    if (op == JJ_OP_MOD && a.t == JV_STR) jj_fail(rt, line, "printf-style string formatting ('%%') is not supported");
    jj_fail(rt, line, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op), jv_type_name(a), jv_type_name(b));
ovf:
    jj_fail(rt, line, "integer overflow in '%s' (wick's integers are 64-bit)", op_sym(op));
}

static bool contains(jj_ctx *ctx, int line, jv item, jv seq) {
    if (seq.t == JV_STR) {
        if (item.t == JV_UNDEF) undefined_error(ctx, line, item);
        if (item.t != JV_STR) jj_fail(ctx->rt, line, "'in <string>' requires string as left operand, not %s", jv_type_name(item));
        if (!item.u.s->n) return true;
        const char *s = seq.u.s->p;
        for (size_t i = 0; i + item.u.s->n <= seq.u.s->n; i++)
            if (memcmp(s + i, item.u.s->p, item.u.s->n) == 0) return true;
        return false;
    }
    if (seq.t == JV_DICT) return jj_dict_get(seq.u.d, item) != NULL;
    if (seq.t == JV_LIST) {
        for (size_t i = 0; i < seq.u.l->n; i++)
            if (jv_equal(seq.u.l->v[i], item)) return true;
        return false;
    }
    if (seq.t == JV_UNDEF) return false;
    jj_fail(ctx->rt, line, "argument of type '%s' is not iterable", jv_type_name(seq));
}

static bool cmp_op(jj_ctx *ctx, int line, int op, jv a, jv b) {
    switch (op) {
    case JJ_OP_EQ: return jv_equal(a, b);
    case JJ_OP_NE: return !jv_equal(a, b);
    case JJ_OP_IN: return contains(ctx, line, a, b);
    case JJ_OP_NOTIN: return !contains(ctx, line, a, b);
    }
    int c = jv_compare(ctx->rt, line, a, b, false);
    return op == JJ_OP_LT ? c < 0 : op == JJ_OP_LE ? c <= 0 : op == JJ_OP_GT ? c > 0 : c >= 0;
}

/* ---- calls ---- */

typedef struct args {
    jv *pos;
    size_t npos;
    const char **kwn;
    jv *kwv;
    size_t nkw;
} args;

static args eval_args(jj_ctx *ctx, const jj_node *call) {
    args a = {0};
    if (!call->nkids) return a;
    a.pos = jj_alloc(ctx->rt, call->nkids * sizeof(jv));
    a.kwv = jj_alloc(ctx->rt, call->nkids * sizeof(jv));
    a.kwn = jj_alloc(ctx->rt, call->nkids * sizeof(char *));
    for (size_t i = 0; i < call->nkids; i++) {
        const jj_node *k = call->kids[i];
        if (k->kind == N_KWARG) {
            a.kwn[a.nkw] = k->name;
            a.kwv[a.nkw++] = eval(ctx, k->a);
        } else {
            a.pos[a.npos++] = eval(ctx, k);
        }
    }
    return a;
}

static jv call_macro(jj_ctx *ctx, int line, const jj_node *m, const jv *pos, size_t npos, const char *const *kwn,
                     const jv *kwv, size_t nkw, jv caller) {
    if (ctx->depth >= JJ_MAX_CALL_DEPTH) jj_fail(ctx->rt, line, "macro calls nest deeper than %d", JJ_MAX_CALL_DEPTH);
    if (npos > m->nkids) jj_fail(ctx->rt, line, "macro '%s' takes not more than %zu argument(s)", m->name ? m->name : "caller", m->nkids);
    jj_scope *saved = cur_scope;
    jj_scope *sc = new_scope(ctx, ctx->top);
    for (size_t i = 0; i < m->nkids; i++) {
        jv v;
        const char *pn = m->kids[i]->name;
        bool have = false;
        if (i < npos) {
            v = pos[i];
            have = true;
        }
        for (size_t k = 0; k < nkw; k++)
            if (!strcmp(kwn[k], pn)) {
                if (have) jj_fail(ctx->rt, line, "macro '%s' got multiple values for argument '%s'", m->name, pn);
                v = kwv[k];
                have = true;
            }
        if (!have) {
            if (m->kids2[i]) {
                cur_scope = sc;
                v = eval(ctx, m->kids2[i]);
                cur_scope = saved;
            } else {
                v = jv_undef_msg(ctx->rt, "parameter '%s' was not provided", pn);
            }
        }
        jj_dict_set(ctx->rt, &sc->vars, jv_cstr(ctx->rt, pn), v);
    }
    for (size_t k = 0; k < nkw; k++) {
        bool known = false;
        for (size_t i = 0; i < m->nkids; i++) known |= !strcmp(kwn[k], m->kids[i]->name);
        if (!known) jj_fail(ctx->rt, line, "macro '%s' takes no keyword argument '%s'", m->name ? m->name : "caller", kwn[k]);
    }
    if (caller.t != JV_UNDEF) jj_dict_set(ctx->rt, &sc->vars, jv_cstr(ctx->rt, "caller"), caller);
    jj_buf out = {0}, *prev = ctx->out;
    ctx->out = &out;
    ctx->depth++;
    exec_body(ctx, m->b, sc);
    ctx->depth--;
    ctx->out = prev;
    cur_scope = saved;
    return jj_buf_value(ctx->rt, &out);
}

jv jj_call_value(jj_ctx *ctx, int line, jv f, const jv *pos, size_t npos, const char *const *kwn, const jv *kwv,
                 size_t nkw) {
    if (f.t == JV_MACRO) return call_macro(ctx, line, f.u.m, pos, npos, kwn, kwv, nkw, jv_undef());
    if (f.t == JV_FUNC) return jj_call_builtin(ctx, line, f, pos, npos, kwn, kwv, nkw);
    if (f.t == JV_UNDEF) {
        if (f.flag == JJ_UNDEF_UNSAFE) jj_fail(ctx->rt, line, "%s", f.u.s ? f.u.s->p : "unsafe call");
        undefined_error(ctx, line, f);
    }
    jj_fail(ctx->rt, line, "'%s' object is not callable", jv_type_name(f));
}

static jv filter(jj_ctx *ctx, const jj_node *x, jv v) {
    if (x->op) jj_fail(ctx->rt, x->line, "filter '%s' is not supported", x->name);
    args a = eval_args(ctx, x);
    return jj_apply_filter(ctx, x->line, (int)x->lit.u.i, x->name, v, a.pos, a.npos, a.kwn, a.kwv, a.nkw);
}

/* ---- expressions ---- */

static jv eval(jj_ctx *ctx, const jj_node *n) {
    jj_rt *rt = ctx->rt;
    switch (n->kind) {
    case N_LIT: return n->lit;
    case N_NAME: return lookup(ctx, n);
    case N_LISTLIT: case N_TUPLE: {
        jv l = jv_list(rt, n->nkids);
        l.flag = n->kind == N_TUPLE;
        for (size_t i = 0; i < n->nkids; i++) jj_list_push(rt, l.u.l, eval(ctx, n->kids[i]));
        return l;
    }
    case N_DICTLIT: {
        jv d = jv_dict(rt);
        for (size_t i = 0; i < n->nkids; i++) {
            jv k = eval(ctx, n->kids[i]->a);
            if (k.t == JV_LIST && !k.flag) jj_fail(rt, n->line, "unhashable type: 'list'");
            if (k.t == JV_DICT) jj_fail(rt, n->line, "unhashable type: 'dict'");
            jj_dict_set(rt, d.u.d, k, eval(ctx, n->kids[i]->b));
        }
        return d;
    }
    case N_ATTR: return jj_getattr(ctx, n->line, eval(ctx, n->a), n->name);
    case N_ITEM: {
        jv obj = eval(ctx, n->a);
        return jj_getitem(ctx, n->line, obj, eval(ctx, n->b));
    }
    case N_SLICE: return slice(ctx, n);
    case N_CALL: {
        jv f = eval(ctx, n->a);
        args a = eval_args(ctx, n);
        return jj_call_value(ctx, n->line, f, a.pos, a.npos, a.kwn, a.kwv, a.nkw);
    }
    case N_FILTER: return filter(ctx, n, eval(ctx, n->a));
    case N_TEST: {
        if (n->op) jj_fail(rt, n->line, "test '%s' is not supported", n->name);
        jv v = eval(ctx, n->a);
        args a = eval_args(ctx, n);
        return jv_bool(jj_apply_test(ctx, n->line, (int)n->lit.u.i, n->name, v, a.pos, a.npos));
    }
    case N_NOT: return jv_bool(!jv_truthy(eval(ctx, n->a)));
    case N_NEG: case N_POS: {
        jv v = eval(ctx, n->a);
        if (v.t == JV_UNDEF) undefined_error(ctx, n->line, v);
        if (!is_numv(v)) jj_fail(rt, n->line, "bad operand type for unary %c: '%s'", n->kind == N_NEG ? '-' : '+', jv_type_name(v));
        if (n->kind == N_POS) return v.t == JV_BOOL ? jv_int(v.u.b) : v;
        if (v.t == JV_FLOAT) return jv_float(-v.u.f);
        if (ival(v) == INT64_MIN) jj_fail(rt, n->line, "integer overflow");
        return jv_int(-ival(v));
    }
    case N_BIN: {
        jv a = eval(ctx, n->a);
        return binop(ctx, n->line, n->op, a, eval(ctx, n->b));
    }
    case N_AND: {
        jv a = eval(ctx, n->a);
        return jv_truthy(a) ? eval(ctx, n->b) : a;
    }
    case N_OR: {
        jv a = eval(ctx, n->a);
        return jv_truthy(a) ? a : eval(ctx, n->b);
    }
    case N_CMP: {
        jv a = eval(ctx, n->a);
        for (size_t i = 0; i < n->nkids; i++) {
            jv b = eval(ctx, n->kids[i]->a);
            if (!cmp_op(ctx, n->line, n->kids[i]->op, a, b)) return jv_bool(false);
            a = b;
        }
        return jv_bool(true);
    }
    case N_COND:
        if (jv_truthy(eval(ctx, n->a))) return eval(ctx, n->b);
        return n->c ? eval(ctx, n->c) : jv_undef_msg(rt, "the conditional expression had no else branch");
    default: jj_fail(rt, n->line, "internal: node %d is not an expression", n->kind);
    }
}

/* ---- statements ---- */

static void out_value(jj_ctx *ctx, jv v) {
    if (v.t == JV_STR) jj_buf_put(ctx->rt, ctx->out, v.u.s->p, v.u.s->n);
    else jv_str_into(ctx->rt, ctx->out, v);
}

static int exec(jj_ctx *ctx, const jj_node *n);

/* Runs body's statements in scope sc (NULL: the current one). */
static int exec_body(jj_ctx *ctx, const jj_node *body, jj_scope *sc) {
    jj_scope *saved = cur_scope;
    if (sc) cur_scope = sc;
    int flow = FLOW_NONE;
    for (size_t i = 0; i < body->nkids && flow == FLOW_NONE; i++) flow = exec(ctx, body->kids[i]);
    cur_scope = saved;
    return flow;
}

static jv capture(jj_ctx *ctx, const jj_node *body) {
    jj_buf out = {0}, *prev = ctx->out;
    ctx->out = &out;
    exec_body(ctx, body, NULL);
    ctx->out = prev;
    return jj_buf_value(ctx->rt, &out);
}

static int exec_for(jj_ctx *ctx, const jj_node *n) {
    jj_rt *rt = ctx->rt;
    jj_list *src = jj_iterate(ctx, n->line, eval(ctx, n->b));
    jj_list *items = src;
    jj_scope *outer = scope_of(ctx);
    if (n->c) { /* {% for x in xs if cond %}: the filter runs first, loop.* counts what passes */
        items = jv_list(rt, 0).u.l;
        for (size_t i = 0; i < src->n; i++) {
            jj_scope *sc = new_scope(ctx, outer);
            jj_scope *saved = cur_scope;
            cur_scope = sc;
            assign(ctx, n->a, src->v[i], n->line);
            bool keep = jv_truthy(eval(ctx, n->c));
            cur_scope = saved;
            if (keep) jj_list_push(rt, items, src->v[i]);
        }
    }
    jj_loop *lp = jj_alloc(rt, sizeof *lp);
    lp->items = items;
    jv loopv = {.t = JV_LOOP, .u.lp = lp};
    jv loop_key = jv_cstr(rt, "loop");
    for (size_t i = 0; i < items->n; i++) {
        if (++ctx->iterations > JJ_MAX_ITERATIONS)
            jj_fail(rt, n->line, "more than %d loop iterations (limit)", JJ_MAX_ITERATIONS);
        lp->i = i;
        jj_scope *sc = new_scope(ctx, outer);
        jj_scope *saved = cur_scope;
        cur_scope = sc;
        jj_dict_set(rt, &sc->vars, loop_key, loopv);
        assign(ctx, n->a, items->v[i], n->line);
        cur_scope = saved;
        int flow = exec_body(ctx, n->d, sc);
        if (flow == FLOW_BREAK) break;
    }
    if (!items->n && n->nkids2) exec_body(ctx, n->kids2[0], NULL);
    return FLOW_NONE;
}

static int exec(jj_ctx *ctx, const jj_node *n) {
    jj_rt *rt = ctx->rt;
    switch (n->kind) {
    case N_TEXT: jj_buf_put(rt, ctx->out, n->lit.u.s->p, n->lit.u.s->n); return FLOW_NONE;
    case N_OUT: out_value(ctx, eval(ctx, n->a)); return FLOW_NONE;
    case N_BODY: return exec_body(ctx, n, NULL);
    case N_IF:
        if (jv_truthy(eval(ctx, n->a))) return exec_body(ctx, n->b, NULL);
        if (n->nkids2) return exec(ctx, n->kids2[0]);
        return FLOW_NONE;
    case N_FOR: return exec_for(ctx, n);
    case N_SET: assign(ctx, n->a, eval(ctx, n->b), n->line); return FLOW_NONE;
    case N_SETBLOCK: {
        jv v = capture(ctx, n->b);
        if (n->c) v = filter(ctx, n->c, v);
        assign(ctx, n->a, v, n->line);
        return FLOW_NONE;
    }
    case N_MACRO: {
        jv m = {.t = JV_MACRO, .u.m = n};
        jj_dict_set(rt, &scope_of(ctx)->vars, jv_cstr(rt, n->name), m);
        return FLOW_NONE;
    }
    case N_CALLBLOCK: {
        const jj_node *call = n->a;
        jv f = eval(ctx, call->a);
        args a = eval_args(ctx, call);
        if (f.t != JV_MACRO) jj_fail(rt, n->line, "{%% call %%} needs a macro");
        jv caller = {.t = JV_MACRO, .u.m = n};
        out_value(ctx, call_macro(ctx, n->line, f.u.m, a.pos, a.npos, a.kwn, a.kwv, a.nkw, caller));
        return FLOW_NONE;
    }
    case N_FILTERBLOCK: out_value(ctx, filter(ctx, n->a, capture(ctx, n->b))); return FLOW_NONE;
    case N_BREAK: return FLOW_BREAK;
    case N_CONTINUE: return FLOW_CONTINUE;
    default: jj_fail(rt, n->line, "internal: node %d is not a statement", n->kind);
    }
}

void jj_render(jj_ctx *ctx, const jj_node *body) {
    cur_scope = NULL;
    if (!ctx->top) ctx->top = new_scope(ctx, NULL);
    exec_body(ctx, body, ctx->top);
    cur_scope = NULL;
}
