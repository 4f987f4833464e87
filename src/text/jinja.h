/* The Jinja-subset interpreter behind wick/chat.h: shared types.
 *
 *   jinja_rt.c      arena, errors (longjmp), value constructors, dicts
 *   jinja_lex.c     template text -> tokens (whitespace control, trim_blocks,
 *                   lstrip_blocks, raw, comments)
 *   jinja_parse.c   tokens -> syntax tree
 *   jinja_value.c   Python semantics of values: truth, equality, order,
 *                   str() / repr(), json.dumps, JSON -> value
 *   jinja_eval.c    statements and expressions, scopes, macros, loops
 *   jinja_filters.c filters and `is` tests
 *   jinja_methods.c str / dict methods, loop attributes, the globals
 *   chat.c          the public API: context from messages, render
 *
 * Memory: everything a parse or a render allocates comes from one arena,
 * freed at once; errors longjmp to the entry point (jj_fail), so no path
 * needs cleanup code and a hostile template cannot leak. The arena has a
 * byte budget, which is the memory limit. */
#ifndef WICK_TEXT_JINJA_H
#define WICK_TEXT_JINJA_H
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* ---- arena and errors ---- */

typedef struct jj_chunk jj_chunk;
typedef struct jj_rt {
    jj_chunk *chunks;
    size_t used, limit; /* bytes taken from malloc, and the budget */
    jmp_buf jb;         /* where jj_fail lands */
    wk_status status;
    char msg[400];
} jj_rt;

void jj_rt_init(jj_rt *rt, size_t limit);
void jj_rt_free(jj_rt *rt);
void *jj_alloc(jj_rt *rt, size_t n); /* zeroed, aligned; fails (longjmp) past the budget */
/* Record "jinja: line L: ..." (line 0: no line) and longjmp to rt->jb. */
_Noreturn void jj_fail(jj_rt *rt, int line, const char *fmt, ...) WK_PRINTF(3, 4);
/* The message as is (raise_exception's text). */
_Noreturn void jj_fail_raw(jj_rt *rt, wk_status s, const char *msg);

/* ---- values ---- */

typedef enum jv_type {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT,
    JV_NS,    /* namespace(): a dict whose attributes `set ns.a = ...` may write */
    JV_FUNC,  /* a global function or a method bound to .self */
    JV_MACRO, /* a {% macro %} */
    JV_LOOP   /* the `loop` variable of a for loop */
} jv_type;

typedef struct jj_str { size_t n; char p[]; } jj_str; /* NUL-terminated too */
typedef struct jj_list jj_list;
typedef struct jj_dict jj_dict;
typedef struct jj_node jj_node;
typedef struct jj_loop jj_loop;

typedef struct jv {
    uint8_t t;    /* jv_type */
    uint8_t flag; /* LIST: JJ_TUPLE / JJ_GEN; UNDEF: JJ_UNDEF_* */
    int16_t fn;   /* FUNC: which builtin */
    union {
        bool b;
        int64_t i;
        double f;
        jj_str *s;     /* STR; UNDEF: the message its use raises */
        jj_list *l;
        jj_dict *d;    /* DICT, NS */
        const jj_node *m; /* MACRO */
        jj_loop *lp;
    } u;
    struct jv *self; /* FUNC: the bound object, or NULL */
} jv;

/* A list made by a filter that jinja2 answers with a generator (map,
 * select*, reject*, unique, reverse, items): always true, no len(), not
 * JSON, not subscriptable -- templates that forget `| list` fail in jinja2
 * and so in wick. */
enum { JJ_TUPLE = 1, JJ_GEN = 2 };
/* STR flag: markupsafe.Markup (from | safe / | escape): `+` escapes the plain operand. */
enum { JJ_MARKUP = 1 };
jv jj_html_escape(jj_rt *rt, jv s);
enum { JJ_UNDEF_PLAIN = 0, JJ_UNDEF_UNSAFE = 1 /* a sandbox-refused method: calling it is an error */ };

struct jj_list { size_t n, cap; jv *v; };
struct jj_dict { size_t n, cap; jv *k, *v; }; /* insertion-ordered */
struct jj_loop { jj_list *items; size_t i; int depth; };

jv jv_undef(void);
jv jv_undef_msg(jj_rt *rt, const char *fmt, ...) WK_PRINTF(2, 3);
jv jv_none(void);
jv jv_bool(bool b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_str(jj_rt *rt, const char *s, size_t n);
jv jv_cstr(jj_rt *rt, const char *s);
jv jv_list(jj_rt *rt, size_t cap);
jv jv_dict(jj_rt *rt);
jv jv_func(int fn, jv *self);
void jj_list_push(jj_rt *rt, jj_list *l, jv v);
jv *jj_dict_get(const jj_dict *d, jv key);        /* NULL when absent */
jv *jj_dict_gets(const jj_dict *d, const char *key);
void jj_dict_set(jj_rt *rt, jj_dict *d, jv key, jv val); /* replaces in place */
jv *jj_box(jj_rt *rt, jv v);

/* A growable byte buffer in the arena (old blocks are left to the arena). */
typedef struct jj_buf { char *p; size_t n, cap; } jj_buf;
void jj_buf_put(jj_rt *rt, jj_buf *b, const char *s, size_t n);
void jj_buf_putc(jj_rt *rt, jj_buf *b, char c);
void jj_buf_printf(jj_rt *rt, jj_buf *b, const char *fmt, ...) WK_PRINTF(3, 4);
jv jj_buf_value(jj_rt *rt, const jj_buf *b);

/* jinja_value.c: Python semantics */
bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
/* <0, 0, >0; rt/line for the TypeError of unorderable types. ci: strings
 * compared case-insensitively (sort / dictsort / unique's default). */
int jv_compare(jj_rt *rt, int line, jv a, jv b, bool ci);
void jv_str_into(jj_rt *rt, jj_buf *b, jv v);  /* Python str() */
void jv_repr_into(jj_rt *rt, jj_buf *b, jv v); /* Python repr() */
jv jv_to_str(jj_rt *rt, jv v);
const char *jv_type_name(jv v); /* jinja's words: 'dict object', 'str object', ... */
/* json.dumps(v, ensure_ascii, indent (<0: None), separators, sort_keys) */
void jv_json_into(jj_rt *rt, int line, jj_buf *b, jv v, bool ascii, int indent, const char *item_sep,
                  const char *key_sep, bool sort_keys);
/* Parse JSON text into a value; what names the text in errors. */
jv jv_from_json(jj_rt *rt, const char *what, const char *s, size_t n);
void jj_float_repr(char *out, size_t cap, double f); /* Python repr(float) */
/* UTF-8 helpers: code points in s, and the byte offset of code point i. */
size_t jj_utf8_len(const char *s, size_t n);
size_t jj_utf8_offset(const char *s, size_t n, size_t i);
bool jj_py_space(uint32_t cp);
jv jj_str_lower(jj_rt *rt, jv s);
jv jj_str_upper(jj_rt *rt, jv s);

/* ---- tokens and syntax tree ---- */

typedef enum jj_tok_type {
    TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END, TK_NAME, TK_STRING, TK_INT, TK_FLOAT,
    TK_OP, TK_EOF
} jj_tok_type;

typedef struct jj_tok {
    uint8_t t;
    int line;
    const char *s; /* NAME / OP / DATA: into the source copy; STRING: decoded, in the arena */
    size_t n;
    int64_t i;
    double f;
} jj_tok;

typedef struct jj_toks { jj_tok *v; size_t n, cap; } jj_toks;
/* Tokenize src (its newlines already normalized to \n by the caller). */
void jj_lex(jj_rt *rt, const char *src, size_t n, jj_toks *out);

typedef enum jj_kind {
    /* statements */
    N_BODY, N_TEXT, N_OUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK, N_FILTERBLOCK, N_BREAK,
    N_CONTINUE,
    /* expressions */
    N_LIT, N_NAME, N_LISTLIT, N_TUPLE, N_DICTLIT, N_ATTR, N_ITEM, N_SLICE, N_CALL, N_FILTER, N_TEST, N_NOT,
    N_NEG, N_POS, N_BIN, N_AND, N_OR, N_CMP, N_COND, N_KWARG, N_NSREF
} jj_kind;

struct jj_node {
    uint8_t kind;
    uint8_t op;   /* N_BIN / N_CMP operators (JJ_OP_*); N_FILTER / N_TEST: 1 when unknown */
    int line;
    const char *name; /* names, attribute names, filter / test / kwarg names */
    jv lit;
    jj_node *a, *b, *c, *d;
    jj_node **kids; /* bodies, arguments, list items, dict pairs (a: key, b: value) */
    size_t nkids;
    jj_node **kids2; /* N_IF: else body; N_FOR: else body; N_MACRO: defaults */
    size_t nkids2;
};

enum {
    JJ_OP_ADD = 1, JJ_OP_SUB, JJ_OP_MUL, JJ_OP_DIV, JJ_OP_FLOORDIV, JJ_OP_MOD, JJ_OP_POW, JJ_OP_CONCAT,
    JJ_OP_EQ, JJ_OP_NE, JJ_OP_LT, JJ_OP_LE, JJ_OP_GT, JJ_OP_GE, JJ_OP_IN, JJ_OP_NOTIN
};

/* Parse a template into its body (an N_BODY). */
jj_node *jj_parse(jj_rt *rt, const char *src, size_t n);

/* ---- rendering ---- */

#define JJ_MAX_DEPTH 200             /* nested expressions / blocks in the parser, calls at run time */
#define JJ_MAX_CALL_DEPTH 64         /* macro calls */
#define JJ_MAX_ITERATIONS 4000000    /* loop iterations, all loops together */
#define JJ_MAX_OUTPUT (64u << 20)    /* bytes of rendered text */
#define JJ_MAX_RANGE 100000          /* range()'s length, jinja2's sandbox limit */

typedef struct jj_scope jj_scope;
struct jj_scope { jj_scope *parent; jj_dict vars; };

typedef struct jj_ctx {
    jj_rt *rt;
    jj_scope *top;  /* the template's own scope (macros resolve names there) */
    jj_dict *vars;  /* the render context: messages, tools, ... */
    jj_buf *out;    /* where output goes (a capture while a macro / set block runs) */
    int64_t now;    /* strftime_now's clock */
    uint64_t iterations;
    int depth;
} jj_ctx;

/* Render body into ctx->out. */
void jj_render(jj_ctx *ctx, const jj_node *body);
/* Call a callable value (FUNC / MACRO) with evaluated arguments. */
jv jj_call_value(jj_ctx *ctx, int line, jv f, const jv *args, size_t nargs, const char *const *kwn, const jv *kwv,
                 size_t nkw);
/* Attribute (obj.name) and item (obj[key]) lookup as jinja2's sandbox does them. */
jv jj_getattr(jj_ctx *ctx, int line, jv obj, const char *name);
jv jj_getitem(jj_ctx *ctx, int line, jv obj, jv key);
/* The items a for loop / filter sees: list, tuple, dict keys, string
 * characters; undefined is empty. */
jj_list *jj_iterate(jj_ctx *ctx, int line, jv v);

/* jinja_filters.c: filters and tests by name; -1 when unknown. */
int jj_filter_id(const char *name);
int jj_test_id(const char *name);
jv jj_apply_filter(jj_ctx *ctx, int line, int id, const char *name, jv v, const jv *args, size_t nargs,
                   const char *const *kwn, const jv *kwv, size_t nkw);
bool jj_apply_test(jj_ctx *ctx, int line, int id, const char *name, jv v, const jv *args, size_t nargs);

/* jinja_methods.c: the globals and bound methods (JV_FUNC's fn). */
enum {
    JJ_FN_RAISE = 1, JJ_FN_STRFTIME, JJ_FN_RANGE, JJ_FN_NAMESPACE, JJ_FN_DICT, JJ_FN_LOOP_CYCLE,
    JJ_FN_METHOD_BASE = 100 /* + a method's index */
};
jv jj_global(jj_ctx *ctx, const char *name, bool *found);
/* A method of a str / dict / list value: FUNC bound to it, or undefined
 * (unsafe for the list/dict methods that mutate). found: the type has it. */
jv jj_method(jj_ctx *ctx, jv obj, const char *name, bool *found);
jv jj_call_builtin(jj_ctx *ctx, int line, jv f, const jv *args, size_t nargs, const char *const *kwn,
                   const jv *kwv, size_t nkw);
jv jj_loop_attr(jj_ctx *ctx, jv loop, const char *name);

#endif
