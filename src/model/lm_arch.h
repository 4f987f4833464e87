/* The architecture interface of the model floor: what one family file
 * (src/model/arch_*.c) tells the shared loader and forward.
 *
 * Loading goes: the common reader (lm_config.c) takes every key any family
 * uses from the GGUF metadata or config.json into a wk__lm_raw; the family
 * named by general.architecture / model_type is looked up in the table
 * (lm_arch_table.c); its finish() turns the raw keys into the config's
 * family features, refusing what it does not implement; the loader
 * (lm_load.c) reads the tensors under the family's names; the forward
 * (lm_forward.c) composes the layer kit as the config's features say.
 *
 * Adding a Llama-like family is one arch_*.c file defining a wk__lm_arch,
 * one line in lm_arch_table.c, and its test. */
#ifndef WICK_MODEL_LM_ARCH_H
#define WICK_MODEL_LM_ARCH_H
#include <stdbool.h>
#include <stdint.h>
#include "wick/lm.h"

/* The keys that change the maths in some family, as the file gave them.
 * Absent numbers are 0 (or -1 where 0 is meaningful); absent lists NULL. */
typedef struct wk__lm_raw {
    bool gguf;                   /* from GGUF metadata (else config.json) */
    const char *src;             /* the file, for error messages */
    char model_type[48];         /* config.json model_type / GGUF general.architecture */
    char act[48];                /* hidden_act / hidden_activation; "" absent */
    int64_t sliding_window;      /* 0 absent or null */
    int use_sliding_window;      /* -1 absent, else 0 / 1 (Qwen2) */
    int64_t max_window_layers;   /* Qwen2; -1 absent */
    int64_t sliding_window_pattern; /* Gemma 3; 0 absent */
    uint8_t *layer_sliding;      /* from "layer_types": n_layer_types 0 / 1 */
    int64_t n_layer_types;
    uint8_t *rope_layers;        /* SmolLM3 "no_rope_layers": 1 = uses RoPE */
    int64_t n_rope_layers;
    int64_t no_rope_interval;    /* SmolLM3 "no_rope_layer_interval"; 0 absent */
    int attention_bias, mlp_bias; /* -1 absent */
    double query_pre_attn_scalar; /* 0 absent */
    double attn_softcap, final_softcap; /* 0 absent or null */
    double rope_local_theta;     /* Gemma 3 rope_local_base_freq; 0 absent */
    double partial_rotary;       /* partial_rotary_factor; 0 absent */
    int64_t rope_dims;           /* GGUF rope.dimension_count; 0 absent */
    float *long_factor, *short_factor; /* longrope (HF lists; GGUF tensors are read by the loader) */
    int64_t n_long, n_short;
    double rope_attn_factor;     /* longrope attention_factor; 0 absent */
    int64_t orig_ctx_top;        /* top-level original_max_position_embeddings (Phi-3); 0 absent */
} wk__lm_raw;

void wk__lm_raw_free(wk__lm_raw *r);

/* The weight slots of one layer; a family names each (NULL: it has none). */
typedef enum wk__lm_slot {
    WK__S_ATTN_NORM, WK__S_Q, WK__S_K, WK__S_V, WK__S_QKV, WK__S_O, WK__S_Q_NORM, WK__S_K_NORM,
    WK__S_POST_ATTN_NORM, WK__S_FFN_NORM, WK__S_GATE, WK__S_UP, WK__S_GATE_UP, WK__S_DOWN,
    WK__S_POST_FFN_NORM, WK__S_COUNT
} wk__lm_slot;

typedef struct wk__lm_arch {
    const char *name;          /* the config's arch */
    const char *gguf[4];       /* general.architecture values it takes (NULL-ended) */
    const char *hf[4];         /* config.json model_type values (NULL-ended) */
    /* llama.cpp's converter permuted this family's q / k rows for
     * interleaved-pair RoPE (its LLAMA_ROPE_TYPE_NORM families) */
    bool gguf_interleaved;
    /* HF names of the slots that differ from Llama's (NULL: Llama's name;
     * "" : the family has no such tensor) */
    const char *hf_names[WK__S_COUNT];
    /* norm weights are stored as w - 1 in HF checkpoints (Gemma): add 1 at
     * load (llama.cpp's converter already did for GGUF) */
    bool hf_norm_minus_one;
    /* The rules every family shares, applied before finish(): the hidden
     * activations it accepts (NULL-ended; an absent key passes), whether
     * RoPE may cover part of a head only; MLP biases are refused for all,
     * q/k/v biases follow attention_bias. */
    const char *acts[3];
    bool partial_rotary;
    /* The family's own rules: set c's feature fields from r and the common
     * fields already read, fill flags (n_layers entries, zeroed), refuse
     * what wick does not implement (an error naming the key). */
    wk_status (*finish)(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags);
} wk__lm_arch;

/* The family that a GGUF general.architecture (gguf true) or a config.json
 * model_type names; NULL + "unknown architecture '...'" when none. */
const wk__lm_arch *wk__lm_arch_find(const char *name, bool gguf);

/* The GGUF name of slot s ("attn_q", ...) and the HF name for arch
 * ("self_attn.q_proj", ...); NULL / "" when the family has none. */
const char *wk__lm_gguf_slot(wk__lm_slot s);
const char *wk__lm_hf_slot(const wk__lm_arch *a, wk__lm_slot s);

/* Refuse a key's value naming it (for the family files). */
wk_status wk__lm_refuse(const wk__lm_raw *r, const char *key, const char *why);
/* The rules every family shares (the acts and partial_rotary fields above). */
wk_status wk__lm_shared_rules(const wk__lm_arch *a, const wk__lm_raw *r, wk_lm_config *c);

/* Gemma 2's features, shared by Gemma 3 (arch_gemma2.c): the (1 + w)
 * norms are the loader's, the rest is here; pattern: every pattern-th
 * layer is global unless the config lists layer_types. */
wk_status wk__gemma_features(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags, int64_t pattern);

extern const wk__lm_arch wk__arch_llama, wk__arch_mistral, wk__arch_qwen2, wk__arch_qwen3, wk__arch_gemma2,
    wk__arch_gemma3, wk__arch_phi3, wk__arch_smollm3;

#endif
