/* What generate.c shares with chat_session.c: rendering a conversation with
 * the chat template, and starting a wk_gen over a KV cache that outlives it
 * (a conversation's), reusing the ids that cache already holds. */
#ifndef WICK_MODEL_GEN_INTERNAL_H
#define WICK_MODEL_GEN_INTERNAL_H
#include "wick/generate.h"

/* A KV cache kept across generations, and the ids it holds: ids[0..n) are
 * at positions 0..n (n == wk_kv_cache_len(cache) between generations). */
typedef struct wk__gen_kept {
    wk_kv_cache *cache; /* NULL until the first start; grown by wk__gen_start_kept */
    int32_t *ids;
    int64_t n, ids_cap;
    /* the generation over the cache that has not ended yet, or NULL (set
     * and cleared by generate.c; an ended one never reads this struct again) */
    wk_gen *open;
    /* Called once per generation, when it ends (its last step, an error) or
     * is freed before that: reply[0..n_reply) is the text its steps handed
     * back; failed after an error. The ids are brought up to date first. */
    void (*on_end)(void *ctx, const char *reply, size_t n_reply, bool failed);
    void *ctx;
} wk__gen_kept;

/* The model's chat template rendered over msgs[0..n) with the tokenizer's
 * bos / eos texts and the generation prompt, into *text (a new string).
 * tmpl: a compiled template, or NULL to compile the model's own for this
 * call. now: strftime_now's clock (0: the time now). */
wk_status wk__gen_render(const wk_lm *m, const wk_chat_template *tmpl, const wk_chat_message *msgs, size_t n,
                         int64_t now, char **text, const char *op);

/* wk_gen_start over a rendered chat text (tokenized with specials parsed,
 * none added; the end-of-turn tokens stop it) and kept's cache: grown when
 * too small (refilled from scratch), truncated to the longest prefix of the
 * prompt it holds (but the last prompt token), only the rest prefilled. */
wk_gen *wk__gen_start_kept(const wk_lm *m, const char *text, const wk_generate_opts *o, const char *op,
                           wk__gen_kept *kept);

/* The ids that end a text (stop_at_eos) into eos[0..cap): the config's
 * eos, the tokenizer's, and with chat the families' end-of-turn tokens
 * (<|im_end|>, <end_of_turn>, <|eot_id|>, <|end|>) the vocabulary has.
 * Returns the count. wk_gen_start and the serving engine share it, so
 * both end a text at the same ids. The model may have no tokenizer. */
int wk__gen_eos_ids(const wk_lm *m, bool chat, int32_t *eos, int cap);

/* The keeper goes away: g owns the cache now (freed with g) and reports to
 * no one. */
void wk__gen_detach(wk_gen *g);

#endif
