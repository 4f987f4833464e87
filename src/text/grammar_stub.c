/* A placeholder for include/wick/grammar.h until helper "grammar"'s
 * implementation lands (the lead deletes this file when merging it): every
 * entry point links, compiling a grammar fails with WK_ERR_NOT_COMPILED, so
 * the serving engine's grammar path builds and refuses nothing else. */
#include "wick/grammar.h"
#include "base/error.h"

static const char *WHY = "constrained sampling is not built yet";

wk_grammar *wk_grammar_from_gbnf(const char *text, size_t len, const char *root) {
    (void)text, (void)len, (void)root;
    wk__err(WK_ERR_NOT_COMPILED, "wk_grammar_from_gbnf", "%s", WHY);
    return NULL;
}

wk_grammar *wk_grammar_from_json_schema(const char *schema, size_t len) {
    (void)schema, (void)len;
    wk__err(WK_ERR_NOT_COMPILED, "wk_grammar_from_json_schema", "%s", WHY);
    return NULL;
}

wk_grammar *wk_grammar_json_object(void) {
    wk__err(WK_ERR_NOT_COMPILED, "wk_grammar_json_object", "%s", WHY);
    return NULL;
}

void wk_grammar_free(wk_grammar *g) { (void)g; }

wk_grammar_state *wk_grammar_state_new(const wk_grammar *g, const wk_tokenizer *t) {
    (void)g, (void)t;
    wk__err(WK_ERR_NOT_COMPILED, "wk_grammar_state_new", "%s", WHY);
    return NULL;
}

void wk_grammar_state_free(wk_grammar_state *s) { (void)s; }

int64_t wk_grammar_state_mask(wk_grammar_state *s, const int32_t *eos, int n_eos, uint8_t *allowed, int64_t vocab) {
    (void)s, (void)eos, (void)n_eos, (void)allowed, (void)vocab;
    wk__err(WK_ERR_NOT_COMPILED, "wk_grammar_state_mask", "%s", WHY);
    return -1;
}

wk_status wk_grammar_state_accept(wk_grammar_state *s, int32_t id) {
    (void)s, (void)id;
    return wk__err(WK_ERR_NOT_COMPILED, "wk_grammar_state_accept", "%s", WHY);
}

bool wk_grammar_state_complete(const wk_grammar_state *s) {
    (void)s;
    return false;
}
