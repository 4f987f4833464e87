/* Qwen2 / Qwen2.5: Llama's blocks with biases on q, k and v, RoPE over
 * halves in every file (llama.cpp keeps Qwen's rows as they are). The
 * config's sliding window is off unless use_sliding_window says otherwise,
 * and wick does not run Qwen's per-layer window. */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    (void)flags;
    if (r->use_sliding_window == 1)
        return wk__lm_refuse(r, "use_sliding_window", "Qwen2's sliding window on the layers past max_window_layers");
    c->attn_bias = true;
    return WK_OK;
}

const wk__lm_arch wk__arch_qwen2 = {
    .name = "qwen2",
    .gguf = {"qwen2"},
    .hf = {"qwen2"},
    .acts = {"silu"},
    .finish = finish,
};
