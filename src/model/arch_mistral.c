/* Mistral: Llama's blocks with sliding-window attention on every layer when
 * the config gives a window (Mistral 7B v0.1: 4096; later versions: null,
 * full attention). llama.cpp's converter writes Mistral as a llama GGUF
 * without the window; a GGUF that names the window gets it. */
#include "model/lm_arch.h"
#include <string.h>

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
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
    .acts = {"silu"},
    .finish = finish,
};
