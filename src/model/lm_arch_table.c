/* The families wick runs, and the tensor names they share. */
#include "model/lm_arch.h"
#include "base/error.h"
#include <stdlib.h>
#include <string.h>

static const wk__lm_arch *const ARCHS[] = {
    &wk__arch_llama, &wk__arch_mistral, &wk__arch_qwen2, &wk__arch_qwen3,
    &wk__arch_gemma2, &wk__arch_gemma3, &wk__arch_phi3, &wk__arch_smollm3,
};

const wk__lm_arch *wk__lm_arch_find(const char *name, bool gguf) {
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++) {
        const char *const *names = gguf ? ARCHS[i]->gguf : ARCHS[i]->hf;
        for (int j = 0; j < 4 && names[j]; j++)
            if (!strcmp(names[j], name)) return ARCHS[i];
    }
    wk__err(WK_ERR_FORMAT, "wk_lm_load",
            "unknown architecture '%s' (wick runs llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3, smollm3)", name);
    return NULL;
}

/* llama.cpp's names (blk.N.<name>.weight) */
static const char *const GGUF_SLOTS[WK__S_COUNT] = {
    [WK__S_ATTN_NORM] = "attn_norm",       [WK__S_Q] = "attn_q",
    [WK__S_K] = "attn_k",                  [WK__S_V] = "attn_v",
    [WK__S_QKV] = "attn_qkv",              [WK__S_O] = "attn_output",
    [WK__S_Q_NORM] = "attn_q_norm",        [WK__S_K_NORM] = "attn_k_norm",
    [WK__S_POST_ATTN_NORM] = "post_attention_norm", [WK__S_FFN_NORM] = "ffn_norm",
    [WK__S_GATE] = "ffn_gate",             [WK__S_UP] = "ffn_up",
    [WK__S_GATE_UP] = "ffn_up",            [WK__S_DOWN] = "ffn_down",
    [WK__S_POST_FFN_NORM] = "post_ffw_norm",
};

/* transformers' Llama names (model.layers.N.<name>.weight) */
static const char *const HF_SLOTS[WK__S_COUNT] = {
    [WK__S_ATTN_NORM] = "input_layernorm",          [WK__S_Q] = "self_attn.q_proj",
    [WK__S_K] = "self_attn.k_proj",                 [WK__S_V] = "self_attn.v_proj",
    [WK__S_QKV] = "self_attn.qkv_proj",             [WK__S_O] = "self_attn.o_proj",
    [WK__S_Q_NORM] = "self_attn.q_norm",            [WK__S_K_NORM] = "self_attn.k_norm",
    [WK__S_POST_ATTN_NORM] = "",                    [WK__S_FFN_NORM] = "post_attention_layernorm",
    [WK__S_GATE] = "mlp.gate_proj",                 [WK__S_UP] = "mlp.up_proj",
    [WK__S_GATE_UP] = "mlp.gate_up_proj",           [WK__S_DOWN] = "mlp.down_proj",
    [WK__S_POST_FFN_NORM] = "",
};

const char *wk__lm_gguf_slot(wk__lm_slot s) { return s < WK__S_COUNT ? GGUF_SLOTS[s] : NULL; }

const char *wk__lm_hf_slot(const wk__lm_arch *a, wk__lm_slot s) {
    if (s >= WK__S_COUNT) return NULL;
    return a && a->hf_names[s] ? a->hf_names[s] : HF_SLOTS[s];
}

wk_status wk__lm_refuse(const wk__lm_raw *r, const char *key, const char *why) {
    return wk__err(WK_ERR_FORMAT, "wk_lm_load", "%s: %s '%s': %s is not supported by wick", r->src, r->model_type,
                   key, why);
}

wk_status wk__lm_shared_rules(const wk__lm_arch *a, const wk__lm_raw *r, wk_lm_config *c) {
    if (r->act[0]) {
        bool ok = false;
        for (int i = 0; i < 3 && a->acts[i]; i++) ok |= !strcmp(r->act, a->acts[i]);
        if (!ok)
            return wk__err(WK_ERR_FORMAT, "wk_lm_load", "%s: %s hidden activation '%s' is not supported (%s%s%s)",
                           r->src, r->model_type, r->act, a->acts[0], a->acts[1] ? ", " : "",
                           a->acts[1] ? a->acts[1] : "");
    }
    if (r->mlp_bias == 1) return wk__lm_refuse(r, "mlp_bias", "biases on the MLP");
    if (c->rope_dims != c->head_dim && !a->partial_rotary)
        return wk__lm_refuse(r, "rope dimensions", "partial rotary embedding");
    c->attn_bias = r->attention_bias == 1;
    return WK_OK;
}

void wk__lm_raw_free(wk__lm_raw *r) {
    if (!r) return;
    free(r->layer_sliding);
    free(r->rope_layers);
    free(r->long_factor);
    free(r->short_factor);
    r->layer_sliding = r->rope_layers = NULL;
    r->long_factor = r->short_factor = NULL;
}
