/* Qwen3: Llama's blocks with an RMSNorm over every q and k head before
 * RoPE, an explicit head_dim (not dim / heads), no biases unless
 * attention_bias, RoPE over halves. */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    (void)flags;
    if (r->use_sliding_window == 1)
        return wk__lm_refuse(r, "use_sliding_window", "Qwen3's sliding window on the layers past max_window_layers");
    c->qk_norm = true;
    return WK_OK;
}

const wk__lm_arch wk__arch_qwen3 = {
    .name = "qwen3",
    .gguf = {"qwen3"},
    .hf = {"qwen3"},
    .acts = {"silu"},
    .finish = finish,
};
