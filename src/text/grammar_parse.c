/* GBNF text -> compiled grammar (grammar_internal.h).
 *
 * The format is llama.cpp's (grammars/README.md there): `name ::= body`,
 * alternatives `|`, sequences, groups `( )`, literals "..." and classes
 * [...] / [^...] with the escapes \n \r \t \\ \" \' \[ \] \- \^ \/ \xHH
 * \uHHHH \UHHHHHHHH, `.` (any character), postfix * + ? {m} {m,} {m,n},
 * comments from # to the end of the line. A rule ends at a newline outside
 * parentheses; wick also lets the next line go on with `|` (a rule never
 * starts with one, so this is unambiguous).
 *
 * The parser builds rules as lists of element vectors, rewriting groups
 * and repetitions into generated rules on the way; compile() then flattens
 * them and refuses undefined rules and left recursion (which would make the
 * matcher's expansion loop). Recursive descent is bounded by
 * WK__GR_MAX_DEPTH, sizes by the WK__GR_MAX_* limits. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "text/grammar_internal.h"

typedef struct gseq {
    wk__gelem *v;
    uint32_t n, cap;
} gseq;

typedef struct grule {
    char *name;
    gseq *alts;
    uint32_t nalt, cap;
    bool defined;
    size_t use_pos; /* first reference, for "undefined rule" */
} grule;

typedef struct gparser {
    const char *s;
    size_t n, pos;
    grule *rules;
    uint32_t nrules, caprules;
    wk__grange *rg; /* character classes being built */
    uint32_t nrg, caprg;
    wk__gset *sets;
    uint32_t nsets, capsets;
    size_t nelems; /* running total, against WK__GR_MAX_ELEMS */
    bool failed;
} gparser;

static const char OP[] = "wk_grammar_from_gbnf";

static void where(const char *s, size_t pos, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (s[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)s[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static bool fail_at(gparser *p, size_t pos, const char *fmt, ...) WK_PRINTF(3, 4);
static bool fail_at(gparser *p, size_t pos, const char *fmt, ...) {
    if (p->failed) return false;
    p->failed = true;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    where(p->s, pos < p->n ? pos : p->n, &line, &col);
    wk__err(WK_ERR_FORMAT, OP, "line %d column %d: %s", line, col, msg);
    return false;
}

static bool oom(gparser *p) {
    if (!p->failed) wk__err(WK_ERR_OOM, OP, "out of memory");
    p->failed = true;
    return false;
}

static bool grow(gparser *p, void **v, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    void *nv = realloc(*v, (size_t)c * size);
    if (!nv) return oom(p);
    *v = nv;
    *cap = c;
    return true;
}

static bool seq_push(gparser *p, gseq *q, uint32_t type, uint32_t arg) {
    if (++p->nelems > WK__GR_MAX_ELEMS)
        return fail_at(p, p->pos, "grammar too large (more than %u elements after expanding repetitions)",
                       WK__GR_MAX_ELEMS);
    if (!grow(p, (void **)&q->v, &q->cap, q->n + 1, sizeof *q->v)) return false;
    q->v[q->n++] = (wk__gelem){type, arg};
    return true;
}

static bool seq_append(gparser *p, gseq *q, const gseq *from) {
    for (uint32_t i = 0; i < from->n; i++)
        if (!seq_push(p, q, from->v[i].type, from->v[i].arg)) return false;
    return true;
}

/* A new rule; name NULL: generated (named after its parent for messages). */
static int64_t new_rule(gparser *p, const char *name, size_t len) {
    if (p->nrules >= WK__GR_MAX_RULES) return fail_at(p, p->pos, "too many rules (limit %u)", WK__GR_MAX_RULES), -1;
    if (!grow(p, (void **)&p->rules, &p->caprules, p->nrules + 1, sizeof *p->rules)) return -1;
    grule *r = &p->rules[p->nrules];
    memset(r, 0, sizeof *r);
    r->name = malloc(len + 1);
    if (!r->name) return oom(p), -1;
    memcpy(r->name, name, len);
    r->name[len] = 0;
    return p->nrules++;
}

static int64_t gen_rule(gparser *p, uint32_t parent) {
    char buf[64];
    int k = snprintf(buf, sizeof buf, "%.40s_%u", p->rules[parent].name, p->nrules);
    int64_t r = new_rule(p, buf, (size_t)k);
    if (r >= 0) p->rules[r].defined = true;
    return r;
}

static int64_t find_rule(gparser *p, const char *name, size_t len) {
    for (uint32_t i = 0; i < p->nrules; i++)
        if (strlen(p->rules[i].name) == len && memcmp(p->rules[i].name, name, len) == 0) return i;
    return -1;
}

/* A new (empty) alternative of rule r; returns it (valid until the next add). */
static gseq *add_alt(gparser *p, uint32_t r) {
    grule *R = &p->rules[r];
    if (!grow(p, (void **)&R->alts, &R->cap, R->nalt + 1, sizeof *R->alts)) return NULL;
    gseq *q = &R->alts[R->nalt++];
    memset(q, 0, sizeof *q);
    return q;
}

static bool is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static int peek(const gparser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }

/* Spaces, tabs, CRs and comments; newlines too when nl. */
static void skip_space(gparser *p, bool nl) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || c == '\r' || (nl && c == '\n')) {
            p->pos++;
        } else if (c == '#') {
            while (p->pos < p->n && p->s[p->pos] != '\n') p->pos++;
        } else {
            break;
        }
    }
}

/* One UTF-8 character of the grammar text. */
static bool read_utf8(gparser *p, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)p->s;
    size_t i = p->pos;
    unsigned c = s[i];
    int k = c < 0x80 ? 0 : (c >= 0xC2 && c <= 0xDF) ? 1 : (c >= 0xE0 && c <= 0xEF) ? 2 : (c >= 0xF0 && c <= 0xF4) ? 3 : -1;
    if (k < 0) return fail_at(p, i, "invalid UTF-8 byte 0x%02x", c);
    uint32_t v = k == 0 ? c : c & (0x3F >> k);
    for (int j = 1; j <= k; j++) {
        if (i + (size_t)j >= p->n || (s[i + j] & 0xC0) != 0x80) return fail_at(p, i, "truncated UTF-8 character");
        v = v << 6 | (s[i + j] & 0x3F);
    }
    static const uint32_t minv[4] = {0, 0x80, 0x800, 0x10000};
    if (v < minv[k] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return fail_at(p, i, "invalid UTF-8 character");
    p->pos = i + (size_t)k + 1;
    *cp = v;
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or a class, an escape resolved. */
static bool read_char(gparser *p, uint32_t *cp) {
    if (p->pos >= p->n) return fail_at(p, p->pos, "unexpected end of grammar");
    if (p->s[p->pos] != '\\') return read_utf8(p, cp);
    size_t at = p->pos++;
    if (p->pos >= p->n) return fail_at(p, at, "unexpected end of grammar after '\\'");
    char c = p->s[p->pos++];
    int digits = 0;
    switch (c) {
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 't': *cp = '\t'; return true;
    case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
        *cp = (uint32_t)c;
        return true;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default: return fail_at(p, at, "unknown escape '\\%c'", c);
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        int h = p->pos < p->n ? hexval((unsigned char)p->s[p->pos]) : -1;
        if (h < 0) return fail_at(p, at, "escape '\\%c' needs %d hex digits", c, digits);
        v = v << 4 | (uint32_t)h;
        p->pos++;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return fail_at(p, at, "escape names no Unicode scalar value (0x%lx)", (unsigned long)v);
    *cp = v;
    return true;
}

static bool parse_class(gparser *p, gseq *item) {
    size_t at = p->pos++; /* '[' */
    if (!grow(p, (void **)&p->sets, &p->capsets, p->nsets + 1, sizeof *p->sets)) return false;
    wk__gset set = {.first = p->nrg};
    if (peek(p) == '^') {
        set.neg = true;
        p->pos++;
    }
    while (peek(p) != ']') {
        if (p->pos >= p->n) return fail_at(p, at, "unterminated character class");
        uint32_t lo, hi;
        if (!read_char(p, &lo)) return false;
        hi = lo;
        if (peek(p) == '-' && p->pos + 1 < p->n && p->s[p->pos + 1] != ']') {
            p->pos++;
            if (!read_char(p, &hi)) return false;
            if (hi < lo) return fail_at(p, at, "character range out of order");
        }
        if (p->nrg >= WK__GR_MAX_ELEMS) return fail_at(p, at, "too many character ranges");
        if (!grow(p, (void **)&p->rg, &p->caprg, p->nrg + 1, sizeof *p->rg)) return false;
        p->rg[p->nrg++] = (wk__grange){lo, hi};
        set.n++;
    }
    p->pos++; /* ']' */
    for (uint32_t c = 0; c < 128; c++) {
        bool in = false;
        for (uint32_t i = 0; i < set.n; i++)
            if (c >= p->rg[set.first + i].lo && c <= p->rg[set.first + i].hi) in = true;
        if (in != set.neg) set.ascii[c >> 6] |= 1ull << (c & 63);
    }
    p->sets[p->nsets] = set;
    return seq_push(p, item, WK__GE_SET, p->nsets++);
}

static bool parse_alternates(gparser *p, uint32_t rule, int depth);

/* {m}, {m,}, {m,n}: *lo, *hi (UINT32_MAX: unbounded). */
static bool parse_count(gparser *p, uint32_t *lo, uint32_t *hi) {
    size_t at = p->pos++; /* '{' */
    uint32_t v[2] = {0, 0};
    int k = 0;
    bool have[2] = {false, false};
    for (;;) {
        skip_space(p, false);
        int c = peek(p);
        if (c >= '0' && c <= '9') {
            while ((c = peek(p)) >= '0' && c <= '9') {
                v[k] = v[k] * 10 + (uint32_t)(c - '0');
                if (v[k] > WK__GR_MAX_REP) return fail_at(p, at, "repetition count above %d", WK__GR_MAX_REP);
                p->pos++;
            }
            have[k] = true;
        } else if (c == ',' && k == 0) {
            p->pos++;
            k = 1;
        } else if (c == '}') {
            p->pos++;
            break;
        } else {
            return fail_at(p, at, "malformed repetition {m,n}");
        }
    }
    if (!have[0]) return fail_at(p, at, "repetition {m,n} needs m");
    *lo = v[0];
    *hi = k == 0 ? v[0] : have[1] ? v[1] : UINT32_MAX;
    if (*hi < *lo) return fail_at(p, at, "repetition {%u,%u}: n < m", *lo, *hi);
    return true;
}

/* x*: R ::= x R | "" (right recursive: the matcher pushes nothing for a
 * reference that ends an alternative). */
static int64_t star_rule(gparser *p, uint32_t parent, const gseq *x) {
    int64_t r = gen_rule(p, parent);
    if (r < 0) return -1;
    gseq *a = add_alt(p, (uint32_t)r);
    if (!a || !seq_append(p, a, x) || !seq_push(p, a, WK__GE_REF, (uint32_t)r)) return -1;
    return add_alt(p, (uint32_t)r) ? r : -1;
}

/* Appends item repeated lo..hi times to seq. */
static bool repeat(gparser *p, uint32_t rule, gseq *seq, const gseq *x, uint32_t lo, uint32_t hi) {
    for (uint32_t i = 0; i < lo; i++)
        if (!seq_append(p, seq, x)) return false;
    if (hi == UINT32_MAX) {
        int64_t r = star_rule(p, rule, x);
        return r >= 0 && seq_push(p, seq, WK__GE_REF, (uint32_t)r);
    }
    /* up to hi - lo more: R1 ::= x R2 | "", ..., Rk ::= x | "" (built inside out) */
    int64_t next = -1;
    for (uint32_t i = lo; i < hi; i++) {
        int64_t r = gen_rule(p, rule);
        if (r < 0) return false;
        gseq *a = add_alt(p, (uint32_t)r);
        if (!a || !seq_append(p, a, x)) return false;
        if (next >= 0 && !seq_push(p, a, WK__GE_REF, (uint32_t)next)) return false;
        if (!add_alt(p, (uint32_t)r)) return false;
        next = r;
    }
    return next < 0 || seq_push(p, seq, WK__GE_REF, (uint32_t)next);
}

/* One item (literal, class, '.', group, reference) into item; false at the
 * end of the sequence (*end) or on error. */
static bool parse_item(gparser *p, uint32_t rule, int depth, gseq *item, bool *end) {
    int c = peek(p);
    *end = false;
    if (c == '"') {
        size_t at = p->pos++;
        while (peek(p) != '"') {
            if (p->pos >= p->n || peek(p) == '\n') return fail_at(p, at, "unterminated string literal");
            uint32_t cp;
            if (!read_char(p, &cp) || !seq_push(p, item, WK__GE_CHAR, cp)) return false;
        }
        p->pos++;
        return true;
    }
    if (c == '[') return parse_class(p, item);
    if (c == '.') {
        p->pos++;
        return seq_push(p, item, WK__GE_ANY, 0);
    }
    if (c == '(') {
        size_t at = p->pos++;
        if (depth >= WK__GR_MAX_DEPTH) return fail_at(p, at, "parentheses nested deeper than %d", WK__GR_MAX_DEPTH);
        int64_t r = gen_rule(p, rule);
        if (r < 0 || !parse_alternates(p, (uint32_t)r, depth + 1)) return false;
        skip_space(p, true);
        if (peek(p) != ')') return fail_at(p, p->pos, "expected ')' (group opened at this line's '(' is not closed)");
        p->pos++;
        return seq_push(p, item, WK__GE_REF, (uint32_t)r);
    }
    if (c >= 0 && is_word(c)) {
        size_t st = p->pos;
        while (p->pos < p->n && is_word((unsigned char)p->s[p->pos])) p->pos++;
        size_t len = p->pos - st;
        /* a name followed by ::= starts the next rule: a missing newline */
        size_t save = p->pos;
        skip_space(p, false);
        if (p->n - p->pos >= 3 && memcmp(p->s + p->pos, "::=", 3) == 0)
            return fail_at(p, st, "rule '%.*s' starts in the middle of another rule", (int)(len > 60 ? 60 : len),
                           p->s + st);
        p->pos = save;
        int64_t r = find_rule(p, p->s + st, len);
        if (r < 0) {
            r = new_rule(p, p->s + st, len);
            if (r < 0) return false;
            p->rules[r].use_pos = st;
        }
        return seq_push(p, item, WK__GE_REF, (uint32_t)r);
    }
    if (c == '<') return fail_at(p, p->pos, "token references <...> are not supported");
    *end = true;
    return false;
}

/* A sequence into a new alternative of rule. */
static bool parse_sequence(gparser *p, uint32_t rule, int depth) {
    gseq seq = {0}, item = {0};
    bool ok = true;
    for (;;) {
        skip_space(p, depth > 0);
        item.n = 0;
        bool end;
        size_t at = p->pos;
        if (!parse_item(p, rule, depth, &item, &end)) {
            ok = end && !p->failed;
            break;
        }
        int c = peek(p);
        if (c == '*' || c == '+' || c == '?' || c == '{') {
            uint32_t lo = 0, hi = 0;
            if (c == '{') {
                if (!parse_count(p, &lo, &hi)) {
                    ok = false;
                    break;
                }
            } else {
                p->pos++;
                lo = c == '+' ? 1 : 0;
                hi = c == '?' ? 1 : UINT32_MAX;
            }
            if (item.n > 1) { /* a multi-character literal repeats as a whole */
                int64_t r = gen_rule(p, rule);
                gseq *a = r >= 0 ? add_alt(p, (uint32_t)r) : NULL;
                if (!a || !seq_append(p, a, &item)) {
                    ok = false;
                    break;
                }
                item.n = 0;
                if (!seq_push(p, &item, WK__GE_REF, (uint32_t)r)) {
                    ok = false;
                    break;
                }
            }
            if (item.n == 0) continue; /* "" repeated is "" */
            if (!repeat(p, rule, &seq, &item, lo, hi)) {
                ok = false;
                break;
            }
            int c2 = peek(p);
            if (c2 == '*' || c2 == '+' || c2 == '?' || c2 == '{') {
                ok = fail_at(p, p->pos, "two repetition operators in a row");
                break;
            }
        } else if (!seq_append(p, &seq, &item)) {
            ok = false;
            break;
        }
        (void)at;
    }
    free(item.v);
    if (ok) {
        gseq *a = add_alt(p, rule);
        if (!a) ok = false;
        else *a = seq;
        if (ok) return true;
    }
    free(seq.v);
    return false;
}

static bool parse_alternates(gparser *p, uint32_t rule, int depth) {
    if (!parse_sequence(p, rule, depth)) return false;
    for (;;) {
        size_t save = p->pos;
        skip_space(p, true); /* a rule may go on with '|' on the next line */
        if (peek(p) != '|') {
            p->pos = save;
            return true;
        }
        p->pos++;
        skip_space(p, true);
        if (!parse_sequence(p, rule, depth)) return false;
    }
}

static bool parse_rule(gparser *p) {
    size_t st = p->pos;
    while (p->pos < p->n && is_word((unsigned char)p->s[p->pos])) p->pos++;
    if (p->pos == st) return fail_at(p, st, "expected a rule name");
    size_t len = p->pos - st;
    skip_space(p, false);
    if (p->n - p->pos < 3 || memcmp(p->s + p->pos, "::=", 3) != 0) return fail_at(p, p->pos, "expected '::='");
    p->pos += 3;
    int64_t r = find_rule(p, p->s + st, len);
    if (r >= 0 && p->rules[r].defined)
        return fail_at(p, st, "rule '%.*s' defined twice", (int)(len > 60 ? 60 : len), p->s + st);
    if (r < 0 && (r = new_rule(p, p->s + st, len)) < 0) return false;
    p->rules[r].defined = true;
    skip_space(p, true);
    if (!parse_alternates(p, (uint32_t)r, 0)) return false;
    skip_space(p, false);
    if (p->pos < p->n && p->s[p->pos] != '\n')
        return fail_at(p, p->pos, "unexpected '%c'", p->s[p->pos]);
    return true;
}

/* nullable[r]: rule r can match the empty text (a fixpoint). */
static void nullables(const wk_grammar *g, bool *nullable) {
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t r = 0; r < g->nrules; r++) {
            if (nullable[r]) continue;
            for (uint32_t a = 0; a < g->rule_nalt[r] && !nullable[r]; a++) {
                const wk__gelem *e = &g->el[g->alt[g->rule_alt[r] + a]];
                while (e->type == WK__GE_REF && nullable[e->arg]) e++;
                if (e->type == WK__GE_END) nullable[r] = changed = true;
            }
        }
    }
}

/* Left recursion: rule r reaching itself through leftmost references
 * (after nullable elements). A depth-first search with colours, iterative
 * so a long chain of rules cannot overflow the C stack. */
static bool left_recursion(gparser *p, const wk_grammar *g) {
    uint32_t n = g->nrules;
    bool *nullable = calloc(n, 1);
    uint8_t *colour = calloc(n, 1);
    uint32_t *stk = malloc(sizeof(uint32_t) * 2 * (size_t)n + 2);
    bool ok = nullable && colour && stk;
    if (!ok) {
        oom(p);
        goto done;
    }
    nullables(g, nullable);
    /* edges of r: the leftmost references of each alternative; frame = (rule, next edge index) */
    for (uint32_t s0 = 0; s0 < n && ok; s0++) {
        if (colour[s0]) continue;
        uint32_t sp = 0;
        stk[sp++] = s0;
        stk[sp++] = 0;
        colour[s0] = 1;
        while (sp && ok) {
            uint32_t r = stk[sp - 2], k = stk[sp - 1]++;
            /* the k-th leftmost reference of r, counted over all alternatives */
            uint32_t cnt = 0, target = UINT32_MAX;
            for (uint32_t a = 0; a < g->rule_nalt[r] && target == UINT32_MAX; a++) {
                for (const wk__gelem *e = &g->el[g->alt[g->rule_alt[r] + a]]; e->type == WK__GE_REF; e++) {
                    if (cnt++ == k) {
                        target = e->arg;
                        break;
                    }
                    if (!nullable[e->arg]) break;
                }
            }
            if (target == UINT32_MAX) {
                colour[r] = 2;
                sp -= 2;
            } else if (colour[target] == 1) {
                ok = fail_at(p, p->rules[target].use_pos ? p->rules[target].use_pos : 0,
                             "rule '%s' is left recursive (it can reach itself without consuming a character)",
                             p->rules[target].name);
            } else if (colour[target] == 0) {
                colour[target] = 1;
                stk[sp++] = target;
                stk[sp++] = 0;
            }
        }
    }
done:
    free(nullable);
    free(colour);
    free(stk);
    return ok;
}

static wk_grammar *compile(gparser *p, uint32_t root) {
    wk_grammar *g = calloc(1, sizeof *g);
    if (!g) return oom(p), NULL;
    uint32_t nalt = 0;
    size_t nel = 0;
    for (uint32_t r = 0; r < p->nrules; r++) {
        nalt += p->rules[r].nalt;
        for (uint32_t a = 0; a < p->rules[r].nalt; a++) nel += p->rules[r].alts[a].n + 1;
    }
    g->el = malloc(sizeof *g->el * (nel + 1));
    g->alt = malloc(sizeof *g->alt * (nalt + 1));
    g->rule_alt = malloc(sizeof(uint32_t) * (p->nrules + 1));
    g->rule_nalt = malloc(sizeof(uint32_t) * (p->nrules + 1));
    if (!g->el || !g->alt || !g->rule_alt || !g->rule_nalt) {
        oom(p);
        wk_grammar_free(g);
        return NULL;
    }
    uint32_t ai = 0, ei = 0;
    for (uint32_t r = 0; r < p->nrules; r++) {
        g->rule_alt[r] = ai;
        g->rule_nalt[r] = p->rules[r].nalt;
        for (uint32_t a = 0; a < p->rules[r].nalt; a++) {
            g->alt[ai++] = ei;
            const gseq *q = &p->rules[r].alts[a];
            if (q->n) memcpy(g->el + ei, q->v, sizeof *q->v * q->n);
            ei += q->n;
            g->el[ei++] = (wk__gelem){WK__GE_END, 0};
        }
    }
    g->el[ei] = (wk__gelem){WK__GE_END, 0}; /* so e + 1 after the last END is readable */
    g->nel = ei;
    g->nrules = p->nrules;
    g->rg = p->rg;
    g->nrg = p->nrg;
    g->sets = p->sets;
    g->nsets = p->nsets;
    p->rg = NULL;
    p->sets = NULL;
    g->root = root;
    if (!left_recursion(p, g)) {
        wk_grammar_free(g);
        return NULL;
    }
    return g;
}

wk_grammar *wk_grammar_from_gbnf(const char *text, size_t len, const char *root) {
    if (!text && len) return wk__err(WK_ERR_ARG, OP, "text is NULL"), NULL;
    gparser p = {.s = text ? text : "", .n = len};
    wk_grammar *g = NULL;
    for (;;) {
        skip_space(&p, true);
        if (p.pos >= p.n) break;
        if (!parse_rule(&p)) goto done;
    }
    const char *rn = root ? root : "root";
    int64_t r = find_rule(&p, rn, strlen(rn));
    if (r < 0 || !p.rules[r].defined) {
        fail_at(&p, p.n, "no rule named '%.60s' (the start rule)", rn);
        goto done;
    }
    for (uint32_t i = 0; i < p.nrules; i++)
        if (!p.rules[i].defined) {
            fail_at(&p, p.rules[i].use_pos, "undefined rule '%s'", p.rules[i].name);
            goto done;
        }
    g = compile(&p, (uint32_t)r);
done:
    for (uint32_t i = 0; i < p.nrules; i++) {
        for (uint32_t a = 0; a < p.rules[i].nalt; a++) free(p.rules[i].alts[a].v);
        free(p.rules[i].alts);
        free(p.rules[i].name);
    }
    free(p.rules);
    free(p.rg);
    free(p.sets);
    return g;
}

void wk_grammar_free(wk_grammar *g) {
    if (!g) return;
    free(g->el);
    free(g->rg);
    free(g->sets);
    free(g->alt);
    free(g->rule_alt);
    free(g->rule_nalt);
    free(g);
}

bool wk__gr_match_range(const wk_grammar *g, const wk__gelem *e, uint32_t lo, uint32_t hi) {
    if (e->type == WK__GE_CHAR) return e->arg >= lo && e->arg <= hi;
    if (e->type == WK__GE_ANY) return true;
    const wk__gset *s = &g->sets[e->arg];
    if (!s->neg) {
        for (uint32_t i = 0; i < s->n; i++) {
            const wk__grange *r = &g->rg[s->first + i];
            if (r->lo <= hi && r->hi >= lo) return true;
        }
        return false;
    }
    /* negated: some code point of [lo, hi] lies outside every range; walk
     * lo upwards past the ranges that cover it (n passes at most) */
    uint32_t c = lo;
    for (uint32_t pass = 0; pass <= s->n; pass++) {
        bool moved = false;
        for (uint32_t i = 0; i < s->n; i++) {
            const wk__grange *r = &g->rg[s->first + i];
            if (c >= r->lo && c <= r->hi) {
                if (r->hi >= hi) return false;
                c = r->hi + 1;
                moved = true;
            }
        }
        if (!moved) return true;
    }
    return false;
}
