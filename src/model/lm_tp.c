/* Tensor parallelism of the decoder models: the shares (heads, FFN blocks,
 * vocabulary rows) each rank holds, and the forward's collectives. The
 * weights are cut to these shares at load (lm_tp_load.c). */
#include "model/lm_internal.h"
#include "wick/dist.h"
#include "base/error.h"
#include <stdlib.h>

void wk__lm_tp_share(int64_t units, int size, int rank, int64_t *lo, int64_t *n) {
    int64_t base = units / size, rem = units % size;
    *n = base + (rank < rem ? 1 : 0);
    *lo = rank * base + (rank < rem ? rank : rem);
}

wk_status wk__lm_tp_init(wk__lm_tp *tp, wk_comm *comm, const wk_lm_config *cfg, wk_device *dev, const char *path) {
    const char *op = "wk_lm_load";
    *tp = (wk__lm_tp){.rank = 0, .size = 1, .kv_lo = 0, .hkv = cfg->n_kv_heads, .hq = cfg->n_heads,
                      .vocab_lo = 0, .vocab_n = cfg->vocab};
    int size = comm ? wk_comm_size(comm) : 1;
    if (size <= 1) return WK_OK;
    if (!wk_comm_ok(comm)) return wk__err(WK_ERR_ARG, op, "tensor parallel: the communicator is broken");
    /* MPI moves host memory: a model on another device needs NCCL */
    if (wk_comm_backend_of(comm) != WK_COMM_NCCL && !wk_same_device(dev, wk_cpu()))
        return wk__err(WK_ERR_ARG, op,
                       "tensor parallel over an MPI communicator runs on the CPU, not %s (use an NCCL one)",
                       wk_device_name(dev));
    if (cfg->n_kv_heads < size)
        return wk__err(WK_ERR_ARG, op,
                       "%s: tensor parallel over %d ranks needs n_kv_heads >= %d, the model has %lld KV heads",
                       path, size, size, (long long)cfg->n_kv_heads);
    if (cfg->vocab < size)
        return wk__err(WK_ERR_ARG, op, "%s: a vocabulary of %lld rows does not split over %d ranks", path,
                       (long long)cfg->vocab, size);
    tp->comm = comm;
    tp->size = size;
    tp->rank = wk_comm_rank(comm);
    wk__lm_tp_share(cfg->n_kv_heads, size, tp->rank, &tp->kv_lo, &tp->hkv);
    tp->hq = tp->hkv * (cfg->n_heads / cfg->n_kv_heads);
    wk__lm_tp_share(cfg->vocab, size, tp->rank, &tp->vocab_lo, &tp->vocab_n);
    return WK_OK;
}

static wk__lm_cut rows1(int64_t lo, int64_t n) { return (wk__lm_cut){.dim = 0, .n_ranges = 1, .lo = {lo}, .n = {n}}; }
static wk__lm_cut cols1(int64_t lo, int64_t n) { return (wk__lm_cut){.dim = 1, .n_ranges = 1, .lo = {lo}, .n = {n}}; }

wk__lm_cut wk__lm_tp_vocab_cut(const wk__lm_tp *tp) {
    if (!tp->comm) return (wk__lm_cut){0};
    return rows1(tp->vocab_lo, tp->vocab_n);
}

wk_status wk__lm_tp_layer_cuts(const wk__lm_tp *tp, const wk_lm_config *cfg, int64_t l, int64_t down_block,
                               const char *path, wk__lm_layer_cuts *out) {
    *out = (wk__lm_layer_cuts){0};
    if (!tp->comm) return WK_OK;
    int64_t D = cfg->head_dim, g = cfg->n_heads / cfg->n_kv_heads, F = cfg->ffn_dim;
    int64_t q_lo = tp->kv_lo * g * D, q_n = tp->hq * D, kv_lo = tp->kv_lo * D, kv_n = tp->hkv * D;
    int64_t qd = cfg->n_heads * D, kvd = cfg->n_kv_heads * D;
    out->q = rows1(q_lo, q_n);
    out->k = out->v = rows1(kv_lo, kv_n);
    out->qkv = (wk__lm_cut){.dim = 0, .n_ranges = 3, .lo = {q_lo, qd + kv_lo, qd + kvd + kv_lo}, .n = {q_n, kv_n, kv_n}};
    out->o = cols1(q_lo, q_n);
    /* the FFN in whole blocks of down's columns (the row-parallel side) */
    if (down_block < 1) down_block = 1;
    if (F % down_block != 0)
        return wk__err(WK_ERR_ARG, "wk_lm_load", "%s: layer %lld: ffn_dim %lld is not whole blocks of %lld", path,
                       (long long)l, (long long)F, (long long)down_block);
    int64_t units = F / down_block, lo, n;
    if (units < tp->size)
        return wk__err(WK_ERR_ARG, "wk_lm_load",
                       "%s: layer %lld: the FFN's %lld columns are %lld blocks of %lld: too few to split over %d "
                       "ranks",
                       path, (long long)l, (long long)F, (long long)units, (long long)down_block, tp->size);
    wk__lm_tp_share(units, tp->size, tp->rank, &lo, &n);
    lo *= down_block;
    n *= down_block;
    out->gate = out->up = rows1(lo, n);
    out->gate_up = (wk__lm_cut){.dim = 0, .n_ranges = 2, .lo = {lo, F + lo}, .n = {n, n}};
    out->down = cols1(lo, n);
    return WK_OK;
}

/* ---- the forward's collectives ---- */

wk_tensor *wk__lm_tp_reduce(const wk_lm *m, wk_tensor *x) {
    if (!m->tp.comm || !x) return x;
    return wk_all_reduce(m->tp.comm, x, WK_DIST_SUM);
}

wk_tensor *wk__lm_tp_gather_vocab(const wk_lm *m, wk_tensor *logits) {
    if (!m->tp.comm || !logits) return logits;
    return wk_all_gather(m->tp.comm, logits, 1);
}

wk_tensor *wk__lm_tp_embed(const wk_lm *m, const int32_t *ids, int64_t R) {
    int32_t *local = malloc(sizeof(int32_t) * (size_t)R);
    float *mask = malloc(sizeof(float) * (size_t)R);
    if (!local || !mask) {
        free(local);
        free(mask);
        wk__err(WK_ERR_OOM, "wk_lm_forward", "cannot allocate %lld token ids", (long long)R);
        return NULL;
    }
    /* ids outside the shard look up its row 0 and are then zeroed: the sum
     * over the ranks is exactly the one rank's row (x + 0 = x) */
    for (int64_t i = 0; i < R; i++) {
        int64_t j = (int64_t)ids[i] - m->tp.vocab_lo;
        bool mine = j >= 0 && j < m->tp.vocab_n;
        local[i] = mine ? (int32_t)j : 0;
        mask[i] = mine ? 1.0f : 0.0f;
    }
    int64_t s1[1] = {R}, s2[2] = {R, 1};
    wk_tensor *idt = wk_from_host(local, sizeof(int32_t) * (size_t)R, s1, 1, WK_I32, m->dev);
    wk_tensor *mt = wk_from_host(mask, sizeof(float) * (size_t)R, s2, 2, WK_F32, m->dev);
    free(local);
    free(mask);
    wk_tensor *e = idt && mt ? wk_embedding_layer_forward(&m->tok_embd, idt) : NULL;
    if (e && wk_tensor_dtype(e) != WK_F32) e = wk_to_dtype(e, WK_F32);
    if (e) e = wk_mul(e, mt);
    return e ? wk_all_reduce(m->tp.comm, e, WK_DIST_SUM) : NULL;
}
