/* Mistral: Llama's blocks with sliding-window attention on every layer when
 * the config gives a window (Mistral 7B v0.1: 4096; later versions: null,
 * full attention). llama.cpp's converter writes Mistral as a llama GGUF
 * without the window; a GGUF that names the window gets it. */
#include "model/lm_arch.h"
#include <string.h>

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    static const char *const acts[] = {"silu", NULL};
    wk_status st = wk__lm_need_act(r, acts);
    if (st != WK_OK) return st;
    if (r->mlp_bias == 1) return wk__lm_refuse(r, "mlp_bias", "biases on the MLP");
    if (c->rope_dims != c->head_dim) return wk__lm_refuse(r, "rope dimensions", "partial rotary embedding");
    c->attn_bias = r->attention_bias == 1;
    if (r->sliding_window > 0) {
        c->sliding_window = r->sliding_window;
        memset(flags, WK_LM_SLIDING, (size_t)c->n_layers);
    }
    return WK_OK;
}

const wk__lm_arch wk__arch_mistral = {
    .name = "mistral",
    .gguf = {"mistral"},
    .hf = {"mistral"},
    .gguf_interleaved = true,
    .finish = finish,
};
