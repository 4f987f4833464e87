/* Gemma 2: RMSNorm with (1 + w) (HF stores w; llama.cpp's converter wrote
 * 1 + w), token rows times sqrt(dim), a GELU-tanh gated MLP, norms before
 * and after both attention and the MLP, attention-logit and final-logit
 * soft-capping, and local (sliding-window) layers alternating with global
 * ones, the even layers local. The q.k scale is query_pre_attn_scalar^-1/2
 * (llama.cpp's converter drops that key: its GGUF files get 1/sqrt(head_dim),
 * the same for every size but 27B). RoPE over halves. */
#include "model/lm_arch.h"
#include <math.h>

wk_status wk__gemma_features(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags, int64_t pattern) {
    c->gelu_mlp = true;
    c->post_norms = true;
    c->embed_scale = sqrt((double)c->dim);
    if (r->query_pre_attn_scalar > 0) c->attn_scale = 1.0 / sqrt(r->query_pre_attn_scalar);
    c->attn_softcap = r->attn_softcap;
    c->final_softcap = r->final_softcap;
    c->sliding_window = r->sliding_window;
    if (r->layer_sliding) {
        if (r->n_layer_types != c->n_layers)
            return wk__lm_refuse(r, "layer_types", "a list whose length differs from num_hidden_layers");
        for (int64_t i = 0; i < c->n_layers; i++)
            if (r->layer_sliding[i]) flags[i] |= WK_LM_SLIDING;
    } else {
        /* every pattern-th layer global, the others local */
        for (int64_t i = 0; i < c->n_layers; i++)
            if ((i + 1) % pattern != 0) flags[i] |= WK_LM_SLIDING;
    }
    return WK_OK;
}

/* even layers local: the pattern 2 */
static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    return wk__gemma_features(r, c, flags, 2);
}

const wk__lm_arch wk__arch_gemma2 = {
    .name = "gemma2",
    .gguf = {"gemma2"},
    .hf = {"gemma2"},
    .hf_names = {[WK__S_POST_ATTN_NORM] = "post_attention_layernorm",
                 [WK__S_FFN_NORM] = "pre_feedforward_layernorm",
                 [WK__S_POST_FFN_NORM] = "post_feedforward_layernorm"},
    .hf_norm_minus_one = true,
    .acts = {"gelu_pytorch_tanh", "gelu_tanh"},
    .finish = finish,
};
