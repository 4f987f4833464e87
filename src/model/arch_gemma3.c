/* Gemma 3 (text): Gemma 2's blocks (the (1 + w) norms, sqrt(dim) token
 * scale, GELU-tanh MLP, pre- and post-norms, query_pre_attn_scalar) plus an
 * RMSNorm over every q and k head, and five local layers to one global:
 * layer i is local unless (i + 1) % sliding_window_pattern == 0 (6 unless
 * the config says otherwise or lists layer_types; llama.cpp's GGUF files
 * use 6). Local layers rotate with their own base (rope_local_base_freq,
 * 10000) and no scaling; global layers with rope_theta and the config's
 * scaling. Soft-capping when the config sets it (Gemma 3 ships none). */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    wk_status st = wk__gemma_features(r, c, flags, r->sliding_window_pattern > 0 ? r->sliding_window_pattern : 6);
    if (st != WK_OK) return st;
    c->qk_norm = true;
    c->rope_local_theta = r->rope_local_theta > 0 ? r->rope_local_theta : 10000.0;
    return WK_OK;
}

const wk__lm_arch wk__arch_gemma3 = {
    .name = "gemma3",
    .gguf = {"gemma3"},
    .hf = {"gemma3_text"},
    .hf_names = {[WK__S_POST_ATTN_NORM] = "post_attention_layernorm",
                 [WK__S_FFN_NORM] = "pre_feedforward_layernorm",
                 [WK__S_POST_FFN_NORM] = "post_feedforward_layernorm"},
    .hf_norm_minus_one = true,
    .acts = {"gelu_pytorch_tanh", "gelu_tanh"},
    .finish = finish,
};
