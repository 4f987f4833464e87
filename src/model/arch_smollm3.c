/* SmolLM3: Llama's blocks, RoPE skipped on some layers ("NoPE"): those
 * whose no_rope_layers entry is 0, or by default every 4th layer (layer i
 * skips when (i + 1) % no_rope_layer_interval == 0), as llama.cpp does for
 * its GGUF files, which carry no list. */
#include "model/lm_arch.h"

static wk_status finish(const wk__lm_raw *r, wk_lm_config *c, uint8_t *flags) {
    if (r->use_sliding_window == 1 || (r->use_sliding_window < 0 && r->sliding_window > 0))
        return wk__lm_refuse(r, "sliding_window", "a sliding window on a SmolLM3 model");
    if (r->rope_layers) {
        if (r->n_rope_layers != c->n_layers)
            return wk__lm_refuse(r, "no_rope_layers", "a list whose length differs from num_hidden_layers");
        for (int64_t i = 0; i < c->n_layers; i++)
            if (!r->rope_layers[i]) flags[i] |= WK_LM_NO_ROPE;
    } else {
        int64_t step = r->no_rope_interval > 0 ? r->no_rope_interval : 4;
        for (int64_t i = 0; i < c->n_layers; i++)
            if ((i + 1) % step == 0) flags[i] |= WK_LM_NO_ROPE;
    }
    return WK_OK;
}

const wk__lm_arch wk__arch_smollm3 = {
    .name = "smollm3",
    .gguf = {"smollm3"},
    .hf = {"smollm3"},
    .gguf_interleaved = true,
    .acts = {"silu"},
    .finish = finish,
};
