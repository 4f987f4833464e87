/* Qwen3: Llama's blocks with an RMSNorm over every q and k head before
 * RoPE, an explicit head_dim (not dim / heads), no biases unless
 * attention_bias, RoPE over halves. */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    (void)flags;
    static const char *const acts[] = {"silu", NULL};
    wk_status st = wk__lm_need_act(r, acts);
    if (st != WK_OK) return st;
    if (r->use_sliding_window == 1)
        return wk__lm_refuse(r, "use_sliding_window", "Qwen3's sliding window on the layers past max_window_layers");
    if (r->mlp_bias == 1) return wk__lm_refuse(r, "mlp_bias", "biases on the MLP");
    if (c->rope_dims != c->head_dim) return wk__lm_refuse(r, "rope dimensions", "partial rotary embedding");
    c->attn_bias = r->attention_bias == 1;
    c->qk_norm = true;
    return WK_OK;
}

const wk__lm_arch wk__arch_qwen3 = {
    .name = "qwen3",
    .gguf = {"qwen3"},
    .hf = {"qwen3"},
    .finish = finish,
};
