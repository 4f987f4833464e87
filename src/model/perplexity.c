/* wk_lm_perplexity: llama-perplexity's measure, so wick's number can be set
 * beside llama.cpp's on the same file and text. The ids are cut into
 * floor(n / ctx) chunks; each runs alone from position 0 (a fresh cache),
 * its first id replaced by BOS when asked (llama.cpp does where the model
 * adds one); only the second half of each chunk is scored (positions
 * ctx/2 .. ctx-2 predicting the next id: every scored token has at least
 * ctx/2 of context), each by -log softmax in double. */
#include "wick/lm.h"
#include "wick/generate.h"
#include "base/error.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *OP = "wk_lm_perplexity";

wk_status wk_lm_perplexity(const wk_lm *m, const int32_t *ids, int64_t n, int64_t ctx, int32_t bos,
                           wk_perplexity *out) {
    if (!m || !ids || !out) return wk__err(WK_ERR_ARG, OP, "model, ids and out must not be NULL");
    memset(out, 0, sizeof *out);
    const wk_lm_config *cfg = wk_lm_config_of(m);
    if (ctx < 4 || ctx > cfg->max_ctx)
        return wk__err(WK_ERR_ARG, OP, "context %lld must be in [4, %lld]", (long long)ctx, (long long)cfg->max_ctx);
    if (n < ctx)
        return wk__err(WK_ERR_ARG, OP, "%lld ids do not fill one chunk of %lld", (long long)n, (long long)ctx);
    const int64_t V = cfg->vocab, chunks = n / ctx;
    float *rows = malloc(sizeof(float) * (size_t)V * (size_t)ctx);
    int32_t *chunk = malloc(sizeof(int32_t) * (size_t)ctx);
    wk_kv_cache *c = wk_kv_cache_new(m, ctx);
    wk_status st = rows && chunk ? (c ? WK_OK : wk_last_status())
                                 : wk__err(WK_ERR_OOM, OP, "no memory for %lld x %lld logits", (long long)ctx,
                                           (long long)V);
    double nll = 0;
    int64_t scored = 0;
    for (int64_t ch = 0; st == WK_OK && ch < chunks; ch++) {
        memcpy(chunk, ids + ch * ctx, sizeof(int32_t) * (size_t)ctx);
        if (bos >= 0) chunk[0] = bos;
        if ((st = wk_kv_cache_truncate(c, 0)) != WK_OK) break;
        wk_tensor *l = wk_lm_forward(m, c, chunk, ctx, true);
        if (!l) {
            st = wk_last_status();
            break;
        }
        st = wk_to_host_f32(l, rows, (size_t)V * (size_t)ctx);
        wk_tensor_free(l);
        for (int64_t i = ctx / 2; st == WK_OK && i < ctx - 1; i++) {
            const float *r = rows + i * V;
            double mx = r[0], s = 0;
            for (int64_t v = 1; v < V; v++) mx = fmax(mx, r[v]);
            for (int64_t v = 0; v < V; v++) s += exp((double)r[v] - mx);
            nll += -((double)r[ids[ch * ctx + i + 1]] - mx - log(s));
            scored++;
        }
    }
    wk_kv_cache_free(c);
    free(chunk);
    free(rows);
    if (st != WK_OK) return st;
    out->ppl = exp(nll / (double)scored);
    out->nll = nll / (double)scored;
    out->chunks = chunks;
    out->scored = scored;
    return WK_OK;
}
