/* Constrained sampling: a grammar (GBNF text, or a JSON schema compiled to
 * one) and, per sequence, a parse state that says which token ids may come
 * next, so sampled output always parses (a mask per step from the compiled
 * automaton, not rejection and retry).
 *
 * A wk_grammar is immutable once compiled and may be shared by threads and
 * sequences; a wk_grammar_state is one sequence's position in it. */
#ifndef WICK_GRAMMAR_H
#define WICK_GRAMMAR_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "wick/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_grammar wk_grammar;
typedef struct wk_grammar_state wk_grammar_state;

/* GBNF text (llama.cpp's grammar format); root: the start rule (NULL:
 * "root"). NULL with wk_last_error (WK_ERR_FORMAT naming line and column)
 * for a grammar that does not parse or names an undefined rule. */
wk_grammar *wk_grammar_from_gbnf(const char *text, size_t len, const char *root);
/* A JSON schema (the text of one JSON object): output is a JSON text that
 * validates against it. NULL with wk_last_error for a schema that is not
 * JSON or uses a keyword wick cannot enforce (named in the message).
 * What is enforced and wick's choices (properties in schema order, extra
 * keys only with additionalProperties true / a schema, oneOf as anyOf,
 * bounded whitespace, integer ranges, formats date / time / date-time /
 * uuid; pattern and the like refused) are listed in
 * src/text/grammar_schema.c. */
wk_grammar *wk_grammar_from_json_schema(const char *schema, size_t len);
/* Any JSON object (OpenAI's response_format {"type": "json_object"}). */
wk_grammar *wk_grammar_json_object(void);
void wk_grammar_free(wk_grammar *g);

/* A sequence at the grammar's start, over t's vocabulary (both borrowed:
 * they must outlive the state). The vocabulary's byte trie is built on the
 * tokenizer's first use (about 60 ms for a 49k vocabulary) and kept with
 * the tokenizer, so later states start at once. A state is one thread's at
 * a time; it memoises the grammar's steps as it goes (memory grows with
 * the distinct parse positions seen and is compacted past a bound). */
wk_grammar_state *wk_grammar_state_new(const wk_grammar *g, const wk_tokenizer *t);
void wk_grammar_state_free(wk_grammar_state *s);
/* allowed[id] = 1 for every id of the vocabulary whose bytes may come next
 * (0 otherwise); eos: the end-of-text ids, allowed only where the grammar
 * may end. Returns the number allowed (0: nothing can follow: the output
 * is complete), or -1 with wk_last_error. */
int64_t wk_grammar_state_mask(wk_grammar_state *s, const int32_t *eos, int n_eos, uint8_t *allowed,
                              int64_t vocab);
/* Advance over the sampled id's bytes. WK_ERR_ARG when the id was not
 * allowed (the state is then unchanged); an eos / special id is never
 * accepted: sampling one ends the sequence instead. */
wk_status wk_grammar_state_accept(wk_grammar_state *s, int32_t id);
/* true when the text so far is a complete sentence of the grammar. */
bool wk_grammar_state_complete(const wk_grammar_state *s);

/* Match a whole text (UTF-8 bytes) without a tokenizer: 2 when it is a
 * complete sentence of g, 1 when it is a proper prefix of one (more text
 * could complete it), 0 when no continuation can make it one, -1 with
 * wk_last_error (a limit or out of memory). */
int wk_grammar_match(const wk_grammar *g, const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* WICK_GRAMMAR_H */
