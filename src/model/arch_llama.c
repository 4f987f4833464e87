/* Llama 2 / 3.x, SmolLM2 and every file that calls itself llama: pre-norm
 * blocks, SwiGLU MLP, RoPE over whole heads (llama3 / linear scaling read by
 * the common reader). GGUF rows were permuted by llama.cpp's converter for
 * interleaved-pair RoPE. No sliding window, no MLP biases. */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    (void)flags;
    static const char *const acts[] = {"silu", NULL};
    wk_status st = wk__lm_need_act(r, acts);
    if (st != WK_OK) return st;
    if (r->sliding_window > 0) return wk__lm_refuse(r, "sliding_window", "a sliding window on a llama model");
    if (r->mlp_bias == 1) return wk__lm_refuse(r, "mlp_bias", "biases on the MLP");
    if (c->rope_dims != c->head_dim) return wk__lm_refuse(r, "rope dimensions", "partial rotary embedding");
    c->attn_bias = r->attention_bias == 1;
    return WK_OK;
}

const wk__lm_arch wk__arch_llama = {
    .name = "llama",
    .gguf = {"llama"},
    .hf = {"llama"},
    .gguf_interleaved = true,
    .finish = finish,
};
