/* Phi-3 / Phi-3.5 / Phi-4-mini: Llama's blocks with q, k and v stored as one
 * matrix (qkv_proj / attn_qkv) and gate and up as one (gate_up_proj; GGUF
 * ffn_up of 2 x ffn rows, gate first), RoPE over halves of the leading
 * rope_dims of each head (partial_rotary_factor), LongRoPE ("longrope", "su")
 * scaling with per-frequency short and long factors and an attention factor
 * on cos and sin, and a sliding window on every layer when the config gives
 * one (transformers applies it; llama.cpp too when its GGUF names it). */
#include "model/lm_arch.h"
#include <string.h>

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    c->fused_qkv = true;
    if (r->sliding_window > 0) {
        c->sliding_window = r->sliding_window;
        memset(flags, WK_LM_SLIDING, (size_t)c->n_layers);
    }
    return WK_OK;
}

const wk__lm_arch wk__arch_phi3 = {
    .name = "phi3",
    .gguf = {"phi3"},
    .hf = {"phi3"},
    .acts = {"silu"},
    .partial_rotary = true,
    .finish = finish,
};
