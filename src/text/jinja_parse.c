/* Tokens -> syntax tree, with jinja2's grammar and precedence:
 *   expr    := or ['if' or ['else' expr]]
 *   or      := and ('or' and)*        and := not ('and' not)*
 *   not     := 'not' not | compare    compare := math1 (cmpop math1)*
 *   math1   := concat (('+'|'-') concat)*   concat := math2 ('~' math2)*
 *   math2   := pow (('*'|'/'|'//'|'%') pow)*  pow := unary ('**' unary)*
 *   unary   := ('-'|'+') unary | primary postfix* (filter | test | call)*
 * Statements: if / elif / else, for (with `if` filter and else), set
 * (names, tuples, ns.attr, block form), macro, call, filter, generation
 * (transformers' extension: renders its body), break / continue, raw.
 *
 * Like jinja2, a filter or test name wick does not know is an error at
 * parse time unless it sits in an if (or a conditional expression), where
 * it fails only if it runs. */
#include <stdlib.h>
#include <string.h>

#include "text/jinja.h"

typedef struct parser {
    jj_rt *rt;
    jj_toks tk;
    size_t i;
    int depth;
    bool soft; /* inside an if: unknown filters fail at run time */
    int loops; /* enclosing for loops (break / continue) */
} parser;

static jj_tok *cur(parser *P) { return &P->tk.v[P->i]; }
static jj_tok *next(parser *P) {
    jj_tok *t = cur(P);
    if (t->t != TK_EOF) P->i++;
    return t;
}
static bool is_op(parser *P, const char *op) {
    jj_tok *t = cur(P);
    return t->t == TK_OP && t->n == strlen(op) && memcmp(t->s, op, t->n) == 0;
}
static bool is_name(parser *P, const char *nm) {
    jj_tok *t = cur(P);
    return t->t == TK_NAME && t->n == strlen(nm) && memcmp(t->s, nm, t->n) == 0;
}
static bool is_name_at(parser *P, size_t k, const char *nm) {
    if (P->i + k >= P->tk.n) return false;
    jj_tok *t = &P->tk.v[P->i + k];
    return t->t == TK_NAME && t->n == strlen(nm) && memcmp(t->s, nm, t->n) == 0;
}

static const char *tok_desc(parser *P, jj_tok *t) {
    static const char *const names[] = {"text", "'{{'", "'}}'", "'{%'", "'%}'", "name", "string", "integer",
                                        "float", "operator", "end of template"};
    if (t->t == TK_NAME || t->t == TK_OP) {
        char *s = jj_alloc(P->rt, t->n + 3);
        s[0] = '\'';
        memcpy(s + 1, t->s, t->n);
        s[t->n + 1] = '\'';
        return s;
    }
    return names[t->t];
}

static void expect_op(parser *P, const char *op) {
    if (!is_op(P, op)) jj_fail(P->rt, cur(P)->line, "expected '%s', got %s", op, tok_desc(P, cur(P)));
    next(P);
}

static const char *expect_name(parser *P) {
    jj_tok *t = cur(P);
    if (t->t != TK_NAME) jj_fail(P->rt, t->line, "expected a name, got %s", tok_desc(P, t));
    next(P);
    char *s = jj_alloc(P->rt, t->n + 1);
    memcpy(s, t->s, t->n);
    return s;
}

static jj_node *node(parser *P, int kind, int line) {
    jj_node *n = jj_alloc(P->rt, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = line;
    return n;
}

typedef struct nlist { jj_node **v; size_t n, cap; } nlist;
static void push(parser *P, nlist *l, jj_node *x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        jj_node **v = jj_alloc(P->rt, cap * sizeof *v);
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

static void enter(parser *P) {
    if (++P->depth > JJ_MAX_DEPTH) jj_fail(P->rt, cur(P)->line, "the template nests deeper than %d levels", JJ_MAX_DEPTH);
}

static jj_node *expr(parser *P);
static jj_node *or_expr(parser *P);
static jj_node *unary(parser *P, bool with_filter);

static jj_node *primary(parser *P) {
    jj_tok *t = cur(P);
    jj_node *n;
    if (t->t == TK_NAME) {
        next(P);
        n = node(P, N_LIT, t->line);
#define NAMEIS(w) (t->n == strlen(w) && memcmp(t->s, w, t->n) == 0)
        if (NAMEIS("true") || NAMEIS("True")) n->lit = jv_bool(true);
        else if (NAMEIS("false") || NAMEIS("False")) n->lit = jv_bool(false);
        else if (NAMEIS("none") || NAMEIS("None")) n->lit = jv_none();
        else {
            n->kind = N_NAME;
            char *s = jj_alloc(P->rt, t->n + 1);
            memcpy(s, t->s, t->n);
            n->name = s;
        }
#undef NAMEIS
        return n;
    }
    if (t->t == TK_STRING) {
        /* adjacent string literals are one string */
        jj_buf b = {0};
        while (cur(P)->t == TK_STRING) {
            jj_tok *s = next(P);
            jj_buf_put(P->rt, &b, s->s, s->n);
        }
        n = node(P, N_LIT, t->line);
        n->lit = jj_buf_value(P->rt, &b);
        return n;
    }
    if (t->t == TK_INT || t->t == TK_FLOAT) {
        next(P);
        n = node(P, N_LIT, t->line);
        n->lit = t->t == TK_INT ? jv_int(t->i) : jv_float(t->f);
        return n;
    }
    if (is_op(P, "(")) {
        next(P);
        enter(P);
        nlist items = {0};
        bool tuple = false;
        while (!is_op(P, ")")) {
            if (items.n) {
                expect_op(P, ",");
                tuple = true;
                if (is_op(P, ")")) break;
            }
            push(P, &items, expr(P));
        }
        next(P);
        P->depth--;
        if (items.n == 1 && !tuple) return items.v[0];
        n = node(P, N_TUPLE, t->line);
        n->kids = items.v;
        n->nkids = items.n;
        return n;
    }
    if (is_op(P, "[") || is_op(P, "{")) {
        bool dict = is_op(P, "{");
        next(P);
        enter(P);
        nlist items = {0};
        const char *close = dict ? "}" : "]";
        while (!is_op(P, close)) {
            if (items.n) {
                expect_op(P, ",");
                if (is_op(P, close)) break;
            }
            jj_node *x = expr(P);
            if (dict) {
                expect_op(P, ":");
                jj_node *kv = node(P, N_KWARG, x->line);
                kv->a = x;
                kv->b = expr(P);
                x = kv;
            }
            push(P, &items, x);
        }
        next(P);
        P->depth--;
        n = node(P, dict ? N_DICTLIT : N_LISTLIT, t->line);
        n->kids = items.v;
        n->nkids = items.n;
        return n;
    }
    jj_fail(P->rt, t->line, "unexpected %s in an expression", tok_desc(P, t));
}

/* (args, name=value, ...) after the '(' was seen; kwargs are N_KWARG. */
static void call_args(parser *P, jj_node *n) {
    expect_op(P, "(");
    enter(P);
    nlist args = {0};
    while (!is_op(P, ")")) {
        if (args.n) {
            expect_op(P, ",");
            if (is_op(P, ")")) break;
        }
        if (cur(P)->t == TK_NAME && P->i + 1 < P->tk.n && P->tk.v[P->i + 1].t == TK_OP && P->tk.v[P->i + 1].n == 1 &&
            P->tk.v[P->i + 1].s[0] == '=') {
            jj_node *kw = node(P, N_KWARG, cur(P)->line);
            kw->name = expect_name(P);
            next(P);
            kw->a = expr(P);
            push(P, &args, kw);
        } else if (is_op(P, "*") || is_op(P, "**")) {
            jj_fail(P->rt, cur(P)->line, "*args / **kwargs in a call are not supported");
        } else {
            push(P, &args, expr(P));
        }
    }
    next(P);
    P->depth--;
    n->kids = args.v;
    n->nkids = args.n;
}

static jj_node *postfix(parser *P, jj_node *n) {
    for (;;) {
        jj_tok *t = cur(P);
        if (is_op(P, ".")) {
            next(P);
            jj_tok *a = cur(P);
            jj_node *x;
            if (a->t == TK_INT) {
                next(P);
                x = node(P, N_ITEM, t->line);
                x->b = node(P, N_LIT, t->line);
                x->b->lit = jv_int(a->i);
            } else {
                x = node(P, N_ATTR, t->line);
                x->name = expect_name(P);
            }
            x->a = n;
            n = x;
        } else if (is_op(P, "[")) {
            next(P);
            enter(P);
            jj_node *parts[3] = {NULL, NULL, NULL};
            int k = 0;
            bool slice = false;
            for (;;) {
                if (is_op(P, ":")) {
                    next(P);
                    slice = true;
                    if (++k > 2) jj_fail(P->rt, t->line, "a slice has at most two ':'");
                    continue;
                }
                if (is_op(P, "]")) break;
                if (parts[k]) jj_fail(P->rt, cur(P)->line, "expected ']' or ':' in a subscript");
                parts[k] = expr(P);
            }
            next(P);
            P->depth--;
            jj_node *x = node(P, slice ? N_SLICE : N_ITEM, t->line);
            x->a = n;
            if (slice) {
                x->b = parts[0];
                x->c = parts[1];
                x->d = parts[2];
            } else {
                if (!parts[0]) jj_fail(P->rt, t->line, "empty subscript");
                x->b = parts[0];
            }
            n = x;
        } else if (is_op(P, "(")) {
            jj_node *x = node(P, N_CALL, t->line);
            x->a = n;
            call_args(P, x);
            n = x;
        } else {
            return n;
        }
    }
}

/* lead: the cursor is on the '|' or 'is' (not for {% filter NAME %}). */
static jj_node *filter_or_test(parser *P, jj_node *n, bool test, bool lead) {
    jj_tok *t = lead ? next(P) : cur(P);
    bool negate = false;
    if (test && is_name(P, "not")) {
        next(P);
        negate = true;
    }
    jj_node *x = node(P, test ? N_TEST : N_FILTER, t->line);
    x->a = n;
    x->name = expect_name(P);
    while (is_op(P, ".")) jj_fail(P->rt, t->line, "dotted filter / test names are not supported");
    int id = test ? jj_test_id(x->name) : jj_filter_id(x->name);
    if (id < 0) {
        if (!P->soft)
            jj_fail(P->rt, t->line, "%s '%s' is not supported", test ? "test" : "filter", x->name);
        x->op = 1;
    }
    x->lit = jv_int(id);
    if (is_op(P, "(")) call_args(P, x);
    else if (test) {
        jj_tok *a = cur(P);
        bool arg = (a->t == TK_NAME || a->t == TK_STRING || a->t == TK_INT || a->t == TK_FLOAT || is_op(P, "(") ||
                    is_op(P, "[") || is_op(P, "{")) &&
                   !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and");
        if (arg) {
            if (is_name(P, "is")) jj_fail(P->rt, a->line, "you cannot chain multiple tests with is");
            jj_node *v = postfix(P, primary(P));
            x->kids = jj_alloc(P->rt, sizeof(jj_node *));
            x->kids[0] = v;
            x->nkids = 1;
        }
    }
    if (negate) {
        jj_node *nt = node(P, N_NOT, t->line);
        nt->a = x;
        x = nt;
    }
    return x;
}

static jj_node *unary(parser *P, bool with_filter) {
    jj_tok *t = cur(P);
    jj_node *n;
    enter(P);
    if (is_op(P, "-") || is_op(P, "+")) {
        next(P);
        n = node(P, t->s[0] == '-' ? N_NEG : N_POS, t->line);
        n->a = unary(P, false);
    } else {
        n = postfix(P, primary(P));
    }
    if (with_filter)
        for (;;) {
            if (is_op(P, "|")) n = filter_or_test(P, n, false, true);
            else if (is_name(P, "is")) n = filter_or_test(P, n, true, true);
            else if (is_op(P, "(")) {
                jj_node *x = node(P, N_CALL, cur(P)->line);
                x->a = n;
                call_args(P, x);
                n = x;
            } else break;
        }
    P->depth--;
    return n;
}

static jj_node *binary(parser *P, int op, jj_node *a, jj_node *b, int line) {
    jj_node *n = node(P, N_BIN, line);
    n->op = (uint8_t)op;
    n->a = a;
    n->b = b;
    return n;
}

static jj_node *pow_expr(parser *P) {
    jj_node *n = unary(P, true);
    while (is_op(P, "**")) {
        int line = next(P)->line;
        n = binary(P, JJ_OP_POW, n, unary(P, true), line);
    }
    return n;
}

static jj_node *math2(parser *P) {
    jj_node *n = pow_expr(P);
    for (;;) {
        int op = is_op(P, "*") ? JJ_OP_MUL : is_op(P, "/") ? JJ_OP_DIV : is_op(P, "//") ? JJ_OP_FLOORDIV
                 : is_op(P, "%") ? JJ_OP_MOD : 0;
        if (!op) return n;
        int line = next(P)->line;
        n = binary(P, op, n, pow_expr(P), line);
    }
}

static jj_node *concat(parser *P) {
    jj_node *n = math2(P);
    while (is_op(P, "~")) {
        int line = next(P)->line;
        n = binary(P, JJ_OP_CONCAT, n, math2(P), line);
    }
    return n;
}

static jj_node *math1(parser *P) {
    jj_node *n = concat(P);
    for (;;) {
        int op = is_op(P, "+") ? JJ_OP_ADD : is_op(P, "-") ? JJ_OP_SUB : 0;
        if (!op) return n;
        int line = next(P)->line;
        n = binary(P, op, n, concat(P), line);
    }
}

static jj_node *compare(parser *P) {
    jj_node *n = math1(P);
    nlist ops = {0};
    int line = cur(P)->line;
    for (;;) {
        int op = is_op(P, "==") ? JJ_OP_EQ : is_op(P, "!=") ? JJ_OP_NE : is_op(P, "<") ? JJ_OP_LT
                 : is_op(P, "<=") ? JJ_OP_LE : is_op(P, ">") ? JJ_OP_GT : is_op(P, ">=") ? JJ_OP_GE
                 : is_name(P, "in") ? JJ_OP_IN : (is_name(P, "not") && is_name_at(P, 1, "in")) ? JJ_OP_NOTIN : 0;
        if (!op) break;
        next(P);
        if (op == JJ_OP_NOTIN) next(P);
        jj_node *x = node(P, N_KWARG, line);
        x->op = (uint8_t)op;
        x->a = math1(P);
        push(P, &ops, x);
    }
    if (!ops.n) return n;
    jj_node *c = node(P, N_CMP, line);
    c->a = n;
    c->kids = ops.v;
    c->nkids = ops.n;
    return c;
}

static jj_node *not_expr(parser *P) {
    if (is_name(P, "not")) {
        jj_node *n = node(P, N_NOT, next(P)->line);
        enter(P);
        n->a = not_expr(P);
        P->depth--;
        return n;
    }
    return compare(P);
}

static jj_node *and_expr(parser *P) {
    jj_node *n = not_expr(P);
    while (is_name(P, "and")) {
        jj_node *x = node(P, N_AND, next(P)->line);
        x->a = n;
        x->b = not_expr(P);
        n = x;
    }
    return n;
}

static jj_node *or_expr(parser *P) {
    jj_node *n = and_expr(P);
    while (is_name(P, "or")) {
        jj_node *x = node(P, N_OR, next(P)->line);
        x->a = n;
        x->b = and_expr(P);
        n = x;
    }
    return n;
}

static jj_node *expr(parser *P) {
    enter(P);
    jj_node *n = or_expr(P);
    while (is_name(P, "if")) {
        jj_node *c = node(P, N_COND, next(P)->line);
        bool soft = P->soft;
        P->soft = true;
        c->a = or_expr(P);
        c->b = n;
        if (is_name(P, "else")) {
            next(P);
            c->c = expr(P);
        }
        P->soft = soft;
        n = c;
    }
    P->depth--;
    return n;
}

/* expr [, expr ...] without brackets: a tuple (for `set a = 1, 2`). */
static jj_node *tuple_expr(parser *P) {
    jj_node *first = expr(P);
    if (!is_op(P, ",")) return first;
    jj_node *t = node(P, N_TUPLE, first->line);
    nlist items = {0};
    push(P, &items, first);
    while (is_op(P, ",")) {
        next(P);
        if (is_op(P, "%}") || cur(P)->t == TK_BLOCK_END) break;
        push(P, &items, expr(P));
    }
    t->kids = items.v;
    t->nkids = items.n;
    return t;
}

/* Assignment / loop targets: name, name.attr (set only), or names a, b. */
static jj_node *target(parser *P, bool allow_ns) {
    jj_node *first = node(P, N_NAME, cur(P)->line);
    first->name = expect_name(P);
    if (allow_ns && is_op(P, ".")) {
        next(P);
        jj_node *r = node(P, N_NSREF, first->line);
        r->a = first;
        r->name = expect_name(P);
        return r;
    }
    if (!is_op(P, ",")) return first;
    jj_node *t = node(P, N_TUPLE, first->line);
    nlist items = {0};
    push(P, &items, first);
    while (is_op(P, ",")) {
        next(P);
        jj_node *x = node(P, N_NAME, cur(P)->line);
        x->name = expect_name(P);
        push(P, &items, x);
    }
    t->kids = items.v;
    t->nkids = items.n;
    return t;
}

static void block_end(parser *P) {
    if (cur(P)->t != TK_BLOCK_END) jj_fail(P->rt, cur(P)->line, "expected the end of the block tag, got %s", tok_desc(P, cur(P)));
    next(P);
}

/* Statements until a {% NAME %} with NAME in `ends` (space separated);
 * leaves the cursor on that name. */
static jj_node *body(parser *P, const char *ends, const char *opener, int open_line);

static bool at_end_tag(parser *P, const char *ends) {
    if (cur(P)->t != TK_BLOCK_BEGIN || P->i + 1 >= P->tk.n) return false;
    jj_tok *t = &P->tk.v[P->i + 1];
    if (t->t != TK_NAME) return false;
    for (const char *e = ends; *e;) {
        size_t k = strcspn(e, " ");
        if (k == t->n && memcmp(e, t->s, k) == 0) return true;
        e += k;
        while (*e == ' ') e++;
    }
    return false;
}

static jj_node *stmt_if(parser *P, int line) {
    jj_node *n = node(P, N_IF, line);
    bool soft = P->soft;
    P->soft = true;
    n->a = tuple_expr(P);
    block_end(P);
    n->b = body(P, "elif else endif", "if", line);
    next(P); /* {% */
    if (is_name(P, "elif")) {
        int l = next(P)->line;
        jj_node *e = stmt_if(P, l);
        n->kids2 = jj_alloc(P->rt, sizeof(jj_node *));
        n->kids2[0] = e;
        n->nkids2 = 1;
        P->soft = soft;
        return n;
    }
    if (is_name(P, "else")) {
        next(P);
        block_end(P);
        jj_node *e = body(P, "endif", "if", line);
        next(P);
        n->kids2 = jj_alloc(P->rt, sizeof(jj_node *));
        n->kids2[0] = e;
        n->nkids2 = 1;
    }
    next(P); /* endif */
    block_end(P);
    P->soft = soft;
    return n;
}

static jj_node *stmt(parser *P) {
    jj_tok *t = cur(P);
    int line = t->line;
    const char *kw = expect_name(P);
    enter(P);
    jj_node *n = NULL;
    bool soft = P->soft;
    if (!strcmp(kw, "if")) {
        n = stmt_if(P, line);
    } else if (!strcmp(kw, "for")) {
        n = node(P, N_FOR, line);
        n->a = target(P, false);
        if (!is_name(P, "in")) jj_fail(P->rt, cur(P)->line, "expected 'in' in a for loop");
        next(P);
        P->soft = false;
        n->b = or_expr(P); /* not expr(): `if` here filters the loop */
        if (is_name(P, "if")) {
            next(P);
            n->c = expr(P);
        }
        if (is_name(P, "recursive")) jj_fail(P->rt, line, "recursive for loops are not supported");
        block_end(P);
        P->loops++;
        n->d = body(P, "else endfor", "for", line);
        P->loops--;
        next(P);
        if (is_name(P, "else")) {
            next(P);
            block_end(P);
            jj_node *e = body(P, "endfor", "for", line);
            next(P);
            n->kids2 = jj_alloc(P->rt, sizeof(jj_node *));
            n->kids2[0] = e;
            n->nkids2 = 1;
        }
        next(P);
        block_end(P);
    } else if (!strcmp(kw, "set")) {
        jj_node *tg = target(P, true);
        if (is_op(P, "=")) {
            next(P);
            n = node(P, N_SET, line);
            n->a = tg;
            n->b = tuple_expr(P);
            block_end(P);
        } else {
            if (tg->kind != N_NAME && tg->kind != N_NSREF) jj_fail(P->rt, line, "a block set takes one target");
            n = node(P, N_SETBLOCK, line);
            n->a = tg;
            if (is_op(P, "|")) { /* {% set x | filter %} */
                jj_node *f = filter_or_test(P, NULL, false, true);
                n->c = f;
            }
            block_end(P);
            P->soft = false;
            n->b = body(P, "endset", "set", line);
            next(P);
            next(P);
            block_end(P);
        }
    } else if (!strcmp(kw, "macro") || !strcmp(kw, "call")) {
        bool call = kw[0] == 'c';
        n = node(P, call ? N_CALLBLOCK : N_MACRO, line);
        nlist params = {0}, defs = {0};
        if (!call || is_op(P, "(")) {
            if (!call) n->name = expect_name(P);
            expect_op(P, "(");
            while (!is_op(P, ")")) {
                if (params.n) expect_op(P, ",");
                jj_node *p = node(P, N_NAME, cur(P)->line);
                p->name = expect_name(P);
                jj_node *d = NULL;
                if (is_op(P, "=")) {
                    next(P);
                    d = expr(P);
                } else if (defs.n && defs.v[defs.n - 1]) {
                    jj_fail(P->rt, p->line, "parameter without a default after one with a default");
                }
                push(P, &params, p);
                push(P, &defs, d);
            }
            next(P);
        }
        n->kids = params.v;
        n->nkids = params.n;
        n->kids2 = defs.v;
        n->nkids2 = defs.n;
        if (call) {
            jj_node *c = unary(P, true);
            if (c->kind != N_CALL) jj_fail(P->rt, line, "expected a call in {%% call %%}");
            n->a = c;
        }
        block_end(P);
        P->soft = false;
        int loops = P->loops;
        P->loops = 0;
        n->b = body(P, call ? "endcall" : "endmacro", kw, line);
        P->loops = loops;
        next(P);
        next(P);
        block_end(P);
    } else if (!strcmp(kw, "filter")) {
        n = node(P, N_FILTERBLOCK, line);
        n->a = filter_or_test(P, NULL, false, false);
        block_end(P);
        P->soft = false;
        n->b = body(P, "endfilter", "filter", line);
        next(P);
        next(P);
        block_end(P);
    } else if (!strcmp(kw, "generation")) {
        block_end(P);
        n = body(P, "endgeneration", "generation", line);
        next(P);
        next(P);
        block_end(P);
    } else if (!strcmp(kw, "break") || !strcmp(kw, "continue")) {
        if (!P->loops) jj_fail(P->rt, line, "'%s' outside a for loop", kw);
        n = node(P, kw[0] == 'b' ? N_BREAK : N_CONTINUE, line);
        block_end(P);
    } else {
        jj_fail(P->rt, line, "tag '%s' is not supported", kw);
    }
    P->soft = soft;
    P->depth--;
    return n;
}

static jj_node *body(parser *P, const char *ends, const char *opener, int open_line) {
    nlist kids = {0};
    jj_node *b = node(P, N_BODY, cur(P)->line);
    for (;;) {
        jj_tok *t = cur(P);
        if (t->t == TK_EOF) {
            if (!ends) break;
            jj_fail(P->rt, open_line, "'%s' block is never closed (expected one of: %s)", opener, ends);
        }
        if (t->t == TK_DATA) {
            jj_node *x = node(P, N_TEXT, t->line);
            x->lit = jv_str(P->rt, t->s, t->n);
            push(P, &kids, x);
            next(P);
        } else if (t->t == TK_VAR_BEGIN) {
            next(P);
            jj_node *x = node(P, N_OUT, t->line);
            x->a = tuple_expr(P);
            if (cur(P)->t != TK_VAR_END) jj_fail(P->rt, cur(P)->line, "expected '}}', got %s", tok_desc(P, cur(P)));
            next(P);
            push(P, &kids, x);
        } else if (t->t == TK_BLOCK_BEGIN) {
            if (ends && at_end_tag(P, ends)) break;
            next(P);
            if (cur(P)->t == TK_NAME) {
                jj_tok *k = cur(P);
                static const char *const closers[] = {"endif", "endfor", "endset", "endmacro", "endcall",
                                                      "endfilter", "endgeneration", "elif", "else"};
                for (size_t i = 0; i < sizeof closers / sizeof closers[0]; i++)
                    if (k->n == strlen(closers[i]) && !memcmp(k->s, closers[i], k->n))
                        jj_fail(P->rt, k->line, "unexpected '%s'%s%s", closers[i], opener ? " inside " : "",
                                opener ? opener : "");
            }
            push(P, &kids, stmt(P));
        } else {
            jj_fail(P->rt, t->line, "unexpected %s", tok_desc(P, t));
        }
    }
    b->kids = kids.v;
    b->nkids = kids.n;
    return b;
}

jj_node *jj_parse(jj_rt *rt, const char *src, size_t n) {
    parser P = {.rt = rt};
    jj_lex(rt, src, n, &P.tk);
    return body(&P, NULL, NULL, 0);
}
