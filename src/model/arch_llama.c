/* Llama 2 / 3.x, SmolLM2 and every file that calls itself llama: pre-norm
 * blocks, SwiGLU MLP, RoPE over whole heads (llama3 / linear scaling read by
 * the common reader). GGUF rows were permuted by llama.cpp's converter for
 * interleaved-pair RoPE. No sliding window, no MLP biases. */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    (void)flags;
    if (r->sliding_window > 0) return wk__lm_refuse(r, "sliding_window", "a sliding window on a llama model");
    return WK_OK;
}

const wk__lm_arch wk__arch_llama = {
    .name = "llama",
    .gguf = {"llama"},
    .hf = {"llama"},
    .gguf_interleaved = true,
    .acts = {"silu"},
    .finish = finish,
};
