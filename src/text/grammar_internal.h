/* The compiled grammar shared by the GBNF parser (grammar_parse.c), the
 * matcher (grammar_match.c), the vocabulary trie (grammar_trie.c) and the
 * per-sequence state (grammar_state.c).
 *
 * A grammar is a list of rules; a rule is a list of alternatives; an
 * alternative is a run of elements in one flat array, closed by an END
 * element. Groups and repetitions of the GBNF text are already rewritten
 * as generated rules (x* is R ::= x R | "", right recursive, so a loop never
 * deepens a parse stack), so the matcher knows five element kinds only. */
#ifndef WICK_TEXT_GRAMMAR_INTERNAL_H
#define WICK_TEXT_GRAMMAR_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wick/grammar.h"

enum { WK__GE_END = 0, WK__GE_CHAR, WK__GE_SET, WK__GE_ANY, WK__GE_REF };

typedef struct wk__gelem {
    uint32_t type; /* WK__GE_* */
    uint32_t arg;  /* CHAR: the code point; SET: index in sets; REF: rule id */
} wk__gelem;

typedef struct wk__grange { uint32_t lo, hi; } wk__grange; /* inclusive code point range */

typedef struct wk__gset {
    uint32_t first, n; /* ranges[first, first + n) */
    bool neg;          /* [^...] */
    uint64_t ascii[2]; /* membership of code points 0..127, negation applied */
} wk__gset;

/* Limits against hostile grammars (each refused with a message naming it). */
#define WK__GR_MAX_ELEMS (1u << 20) /* elements after rewriting repetitions */
#define WK__GR_MAX_RULES (1u << 16)
#define WK__GR_MAX_REP 4096         /* m and n of x{m,n} */
#define WK__GR_MAX_DEPTH 200        /* nested parentheses */

struct wk_grammar {
    wk__gelem *el;
    uint32_t nel;
    wk__grange *rg;
    uint32_t nrg;
    wk__gset *sets;
    uint32_t nsets;
    uint32_t *alt;                 /* start element of each alternative, rule by rule */
    uint32_t *rule_alt, *rule_nalt; /* a rule's alternatives: alt[rule_alt[r], + rule_nalt[r]) */
    uint32_t nrules;
    uint32_t root;
};

/* Whether code point cp matches element e (CHAR, SET or ANY). */
static inline bool wk__gr_match(const wk_grammar *g, const wk__gelem *e, uint32_t cp) {
    if (e->type == WK__GE_CHAR) return cp == e->arg;
    if (e->type == WK__GE_ANY) return true;
    const wk__gset *s = &g->sets[e->arg];
    if (cp < 128) return (s->ascii[cp >> 6] >> (cp & 63)) & 1;
    bool in = false;
    for (uint32_t i = 0; i < s->n; i++) {
        const wk__grange *r = &g->rg[s->first + i];
        if (cp >= r->lo && cp <= r->hi) {
            in = true;
            break;
        }
    }
    return in != s->neg;
}

/* Whether element e matches some code point in [lo, hi] (a partial UTF-8
 * character: every code point it can still become). */
bool wk__gr_match_range(const wk_grammar *g, const wk__gelem *e, uint32_t lo, uint32_t hi);

/* The GBNF text a JSON schema compiles to (malloc'd, *len bytes and a
 * NUL), or NULL with wk_last_error; for tests and debugging. */
char *wk__grammar_schema_gbnf(const char *schema, size_t len, size_t *out_len);

#endif
