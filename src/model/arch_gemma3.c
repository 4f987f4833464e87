/* Gemma 3 (text): Gemma 2's blocks (the (1 + w) norms, sqrt(dim) token
 * scale, GELU-tanh MLP, pre- and post-norms, query_pre_attn_scalar) plus an
 * RMSNorm over every q and k head, and five local layers to one global:
 * layer i is local unless (i + 1) % sliding_window_pattern == 0 (6 unless
 * the config says otherwise or lists layer_types; llama.cpp's GGUF files
 * use 6). Local layers rotate with their own base (rope_local_base_freq,
 * 10000) and no scaling; global layers with rope_theta and the config's
 * scaling. Soft-capping when the config sets it (Gemma 3 ships none). */
#include "model/lm_arch.h"
#include <math.h>

static const char *const ACTS[] = {"gelu_pytorch_tanh", "gelu_tanh", NULL};

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    wk_status st = wk__lm_need_act(r, ACTS);
    if (st != WK_OK) return st;
    if (r->mlp_bias == 1) return wk__lm_refuse(r, "mlp_bias", "biases on the MLP");
    if (c->rope_dims != c->head_dim) return wk__lm_refuse(r, "rope dimensions", "partial rotary embedding");
    c->attn_bias = r->attention_bias == 1;
    c->gelu_mlp = true;
    c->post_norms = true;
    c->qk_norm = true;
    c->embed_scale = sqrt((double)c->dim);
    if (r->query_pre_attn_scalar > 0) c->attn_scale = 1.0 / sqrt(r->query_pre_attn_scalar);
    c->attn_softcap = r->attn_softcap;
    c->final_softcap = r->final_softcap;
    c->sliding_window = r->sliding_window;
    c->rope_local_theta = r->rope_local_theta > 0 ? r->rope_local_theta : 10000.0;
    if (r->layer_sliding) {
        if (r->n_layer_types != c->n_layers)
            return wk__lm_refuse(r, "layer_types", "a list whose length differs from num_hidden_layers");
        for (int64_t i = 0; i < c->n_layers; i++)
            if (r->layer_sliding[i]) flags[i] |= WK_LM_SLIDING;
    } else {
        int64_t pattern = r->sliding_window_pattern > 0 ? r->sliding_window_pattern : 6;
        for (int64_t i = 0; i < c->n_layers; i++)
            if ((i + 1) % pattern != 0) flags[i] |= WK_LM_SLIDING;
    }
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
    .finish = finish,
};
