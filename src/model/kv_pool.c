/* The paged KV pool (include/wick/lm.h): per layer one tensor of keys and
 * one of values for every block of the pool, (Hkv, blocks * block, D) in
 * the pool's dtype on the model's device, block b holding positions
 * b*block .. b*block+block-1 of dim 1. A paged cache is a block table into
 * it. Block bookkeeping lives on the host: a refcount per block, a free
 * list, and for the prefix cache a hash of registered full blocks and an
 * LRU list of the registered blocks no cache holds (evicted oldest first,
 * only when the free list is empty).
 *
 * Attention over a paged cache gathers its blocks into a contiguous
 * (1, Hkv, len, D) scratch (one index_select per layer and tensor) and runs
 * the kit's attention on it: the same values in the same order as a
 * contiguous cache, hence bit-identical logits for f32 / f16 / bf16 pools.
 * A q8_0 pool keeps ggml's q8_0 blocks (D a multiple of 32); its writes go
 * through a u8 alias of the same bytes (wick's element ops refuse block
 * dtypes) and its gather is dequantized to f32 for attention, the new
 * positions included, so chunking a prompt does not change what it sees. */
#include "model/lm_internal.h"
#include "wick/lm.h"
#include "wick/nn.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include "tensor/block_bytes.h"
#include <stdlib.h>
#include <string.h>

struct wk_kv_pool {
    const wk_lm *m;
    int64_t block, blocks, layers;
    wk_dtype dtype;
    bool prefix_cache;
    wk_tensor **k, **v;   /* per layer (Hkv, blocks * block, D) */
    wk_tensor **kb, **vb; /* q8_0: u8 aliases (Hkv, blocks * block, D / 32 * 34) of k, v; else NULL */
    int32_t *ref;         /* caches holding each block */
    int64_t *free_list, n_free;
    /* prefix cache: registered blocks (reg), their chain key, a serial that
     * names this registration (a re-used block id gets a new one, so a
     * child never matches a parent that was evicted and refilled), the
     * parent's serial (0: the first block) and the block's ids */
    bool *reg;
    uint64_t *key, *serial, *parent;
    int32_t *bids;
    int64_t *hnext, *bucket;
    uint64_t hmask;
    int64_t *prev, *next, lru_head, lru_tail, n_lru; /* registered, ref 0: head = least recently used */
    uint64_t next_serial;
    int64_t n_caches, reused_tokens, pending;
};

static const uint64_t CHAIN_SEED = 0x9e3779b97f4a7c15ull;

/* The chain key of a block: its parent's key and its ids, mixed. The ids
 * are compared on a hit too, so a collision costs a miss, never a wrong
 * block. */
static uint64_t chain_key(uint64_t parent_key, const int32_t *ids, int64_t n) {
    uint64_t h = parent_key ^ 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < n; i++) {
        h ^= (uint32_t)ids[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/* ---- LRU list of cached, unheld blocks ---- */

static void lru_remove(wk_kv_pool *p, int64_t b) {
    if (p->prev[b] >= 0) p->next[p->prev[b]] = p->next[b];
    else p->lru_head = p->next[b];
    if (p->next[b] >= 0) p->prev[p->next[b]] = p->prev[b];
    else p->lru_tail = p->prev[b];
    p->prev[b] = p->next[b] = -1;
    p->n_lru--;
}

static void lru_push(wk_kv_pool *p, int64_t b) {
    p->prev[b] = p->lru_tail;
    p->next[b] = -1;
    if (p->lru_tail >= 0) p->next[p->lru_tail] = b;
    else p->lru_head = b;
    p->lru_tail = b;
    p->n_lru++;
}

/* ---- the hash of registered blocks ---- */

static void hash_insert(wk_kv_pool *p, int64_t b) {
    uint64_t h = p->key[b] & p->hmask;
    p->hnext[b] = p->bucket[h];
    p->bucket[h] = b;
}

static void hash_remove(wk_kv_pool *p, int64_t b) {
    int64_t *at = &p->bucket[p->key[b] & p->hmask];
    while (*at >= 0 && *at != b) at = &p->hnext[*at];
    if (*at == b) *at = p->hnext[b];
    p->hnext[b] = -1;
}

static int64_t hash_find(const wk_kv_pool *p, uint64_t key, uint64_t parent, const int32_t *ids) {
    for (int64_t b = p->bucket[key & p->hmask]; b >= 0; b = p->hnext[b])
        if (p->key[b] == key && p->parent[b] == parent &&
            memcmp(p->bids + b * p->block, ids, sizeof(int32_t) * (size_t)p->block) == 0)
            return b;
    return -1;
}

/* ---- taking and giving back blocks ---- */

static int64_t available(const wk_kv_pool *p) { return p->n_free + p->n_lru; }

/* A block for a cache (ref 1): a free one, else the least recently used
 * cached one (unregistered); -1 when there is none. */
static int64_t take_block(wk_kv_pool *p) {
    int64_t b = -1;
    if (p->n_free > 0) {
        b = p->free_list[--p->n_free];
    } else if (p->n_lru > 0) {
        b = p->lru_head;
        lru_remove(p, b);
        hash_remove(p, b);
        p->reg[b] = false;
    }
    if (b >= 0) p->ref[b] = 1;
    return b;
}

/* A registered block gains a holder. */
static void hold_block(wk_kv_pool *p, int64_t b) {
    if (p->ref[b]++ == 0) lru_remove(p, b);
}

/* Drop one holder: a registered block stays cached (most recently used),
 * any other goes back to the free list. */
static void put_block(wk_kv_pool *p, int64_t b) {
    if (--p->ref[b] > 0) return;
    if (p->reg[b]) lru_push(p, b);
    else p->free_list[p->n_free++] = b;
}

/* Give back the table's blocks from slot `keep` on, the last first (so the
 * deepest blocks of a prefix are the first evicted). */
static void release_from(wk_kv_cache *c, int64_t keep) {
    while (c->n_table > keep) put_block(c->pool, c->table[--c->n_table]);
}

/* ---- device side: writes, copies, gathers ---- */

/* A pool tensor t (Hkv, blocks * block, X) seen as (1, Hkv, blocks * block, X)
 * (a view: the rank of the rows a cache write brings). */
static wk_tensor *as4(const wk_tensor *t) {
    int64_t s[4] = {1, wk_dim(t, 0), wk_dim(t, 1), wk_dim(t, 2)};
    return wk_reshape(t, s, 4);
}

static void drop_owner(void *ctx, void *data, size_t nbytes) {
    (void)data;
    (void)nbytes;
    wk_tensor_free(ctx);
}

/* A u8 view of the bytes of q, a contiguous block tensor owned by the
 * caller (not in a scope); q is freed with the last view of them when
 * take, else it must outlive them. */
static wk_tensor *bytes_of(wk_tensor *q, bool take) {
    if (!q) return NULL;
    wk_dtype bdt;
    wk_layout l = wk__block_bytes_layout(&q->layout, q->dtype, &bdt);
    wk_storage *s = wk__storage_wrap("wk_kv_pool", wk__dev(q), WK_U8, q->storage->buf, q->storage->nbytes,
                                     take ? drop_owner : NULL, take ? q : NULL, false);
    if (!s) {
        if (take) wk_tensor_free(q);
        return NULL;
    }
    return wk__tensor_new(s, &l);
}

/* Copy block `from` into block `to`, every layer (a copy-on-write). */
static wk_status copy_block(wk_kv_pool *p, int64_t from, int64_t to) {
    wk_status st = WK_OK;
    if (!wk__scope_open()) st = wk_last_status();
    for (int64_t l = 0; st == WK_OK && l < p->layers; l++) {
        wk_tensor *kt = p->kb ? p->kb[l] : p->k[l], *vt = p->vb ? p->vb[l] : p->v[l];
        st = wk_slice_set(kt, wk_narrow(kt, 1, from * p->block, p->block), 1, to * p->block);
        if (st == WK_OK) st = wk_slice_set(vt, wk_narrow(vt, 1, from * p->block, p->block), 1, to * p->block);
    }
    wk_scope_end();
    return st;
}

/* src (1, Hkv, n, X) rows for positions pos .. pos+n-1 of c into its blocks
 * of dst (a pool tensor or its bytes). */
static wk_status write_rows(const wk_kv_cache *c, wk_tensor *dst, const wk_tensor *src, int64_t pos) {
    int64_t B = c->pool->block, n = wk_dim(src, 2);
    wk_tensor *d4 = as4(dst);
    if (!d4) return wk_last_status();
    for (int64_t i = 0; i < n;) {
        int64_t p0 = pos + i, slot = p0 / B, in = p0 % B, seg = B - in < n - i ? B - in : n - i;
        wk_status st = wk_slice_set(d4, wk_narrow(src, 2, i, seg), 2, c->table[slot] * B + in);
        if (st != WK_OK) return st;
        i += seg;
    }
    return WK_OK;
}

/* Positions 0 .. len-1 of c from pool tensor t, (1, Hkv, len, D) in the
 * attention dtype. */
static wk_tensor *gather(const wk_kv_cache *c, const wk_tensor *t, wk_tensor *ids, int64_t len) {
    const wk_kv_pool *p = c->pool;
    int64_t Hkv = wk_dim(t, 0), D = wk_dim(t, 2), nb = wk_dim(ids, 0);
    int64_t s4[4] = {Hkv, p->blocks, p->block, D}, sg[4] = {1, Hkv, nb * p->block, D};
    wk_tensor *g = wk_index_select(wk_reshape(t, s4, 4), ids, 1); /* (Hkv, nb, block, D), contiguous */
    if (g && p->dtype == WK_Q8_0) g = wk_dequantize(g, WK_F32);
    return wk_narrow(wk_reshape(g, sg, 4), 2, 0, len);
}

wk_dtype wk__kv_attn_dtype(const wk_kv_cache *c) {
    if (!c->pool) return wk_tensor_dtype(c->kv.k[0]);
    return c->pool->dtype == WK_Q8_0 ? WK_F32 : c->pool->dtype;
}

wk_tensor *wk__kv_paged_attend(wk_kv_cache *c, const wk__attn_heads *h, int64_t li, const wk_tensor *qr,
                               const wk_tensor *kr, const wk_tensor *vv, int64_t pos, wk_dtype adt) {
    wk_kv_pool *p = c->pool;
    int64_t n = wk_dim(qr, 2), B = p->block;
    wk_status st;
    if (p->dtype == WK_Q8_0) {
        wk_tensor *kq = bytes_of(wk_keep(wk_quantize(kr, WK_Q8_0)), true);
        wk_tensor *vq = bytes_of(wk_keep(wk_quantize(vv, WK_Q8_0)), true);
        if (!kq || !vq) return NULL;
        st = write_rows(c, p->kb[li], kq, pos);
        if (st == WK_OK) st = write_rows(c, p->vb[li], vq, pos);
    } else {
        st = write_rows(c, p->k[li], kr, pos);
        if (st == WK_OK) st = write_rows(c, p->v[li], vv, pos);
    }
    if (st != WK_OK) return NULL;
    /* the blocks of positions 0 .. pos+n-1, in table order */
    int64_t nb = (pos + n + B - 1) / B, shape[1] = {nb};
    wk_tensor *ids = wk_from_host(c->table, sizeof(int64_t) * (size_t)nb, shape, 1, WK_I64, p->m->dev);
    if (!ids) return NULL;
    wk_tensor *kc = gather(c, p->k[li], ids, pos + n), *vc = gather(c, p->v[li], ids, pos + n);
    return wk__cached_attend(h, qr, kc, vc, pos, adt);
}

/* ---- the forward's bracket ---- */

static int64_t blocks_for(const wk_kv_pool *p, int64_t positions) { return (positions + p->block - 1) / p->block; }

/* Whether writing at position len of c needs a private copy of the block
 * holding it (shared with another cache, or registered in the prefix cache:
 * both must keep their contents). */
static bool needs_cow(const wk_kv_cache *c) {
    const wk_kv_pool *p = c->pool;
    int64_t slot = c->len / p->block;
    if (slot >= c->n_table) return false;
    int64_t b = c->table[slot];
    return p->ref[b] > 1 || p->reg[b];
}

/* Blocks c needs to hold positions < upto and write at len. */
static int64_t need_of(const wk_kv_cache *c, int64_t upto) {
    int64_t more = blocks_for(c->pool, upto) - c->n_table;
    return (more > 0 ? more : 0) + (needs_cow(c) ? 1 : 0);
}

/* Take what need_of counted (the pool was checked to have it); the undo
 * fields say what changed. */
static wk_status take_for(wk_kv_cache *c, int64_t upto) {
    wk_kv_pool *p = c->pool;
    c->undo_n_table = c->n_table;
    c->undo_cow_slot = c->undo_cow_block = -1;
    if (needs_cow(c)) {
        int64_t slot = c->len / p->block, old = c->table[slot], b = take_block(p);
        wk_status st = copy_block(p, old, b);
        if (st != WK_OK) {
            put_block(p, b);
            return st;
        }
        c->table[slot] = b;
        c->undo_cow_slot = slot;
        c->undo_cow_block = old;
        if (c->n_reg > slot) c->n_reg = slot;
    }
    while (c->n_table < blocks_for(p, upto)) c->table[c->n_table++] = take_block(p);
    return WK_OK;
}

/* Undo take_for. */
static void untake(wk_kv_cache *c) {
    if (c->undo_n_table < 0) return;
    release_from(c, c->undo_n_table);
    if (c->undo_cow_slot >= 0) {
        put_block(c->pool, c->table[c->undo_cow_slot]);
        c->table[c->undo_cow_slot] = c->undo_cow_block;
    }
    c->undo_n_table = c->undo_cow_slot = c->undo_cow_block = -1;
}

/* Keep take_for's work: the shared block a copy replaced loses a holder. */
static void keep_taken(wk_kv_cache *c) {
    if (c->undo_cow_slot >= 0) put_block(c->pool, c->undo_cow_block);
    c->undo_n_table = c->undo_cow_slot = c->undo_cow_block = -1;
}

/* Is the pool short of what the caches of seqs need (each pool once)? */
static wk_status check_pools(const char *op, const wk_lm_seq *seqs, int64_t n_seqs, const int64_t *upto) {
    for (int64_t i = 0; i < n_seqs; i++)
        if (seqs[i].cache->pool) seqs[i].cache->pool->pending = 0;
    for (int64_t i = 0; i < n_seqs; i++)
        if (seqs[i].cache->pool) seqs[i].cache->pool->pending += need_of(seqs[i].cache, upto[i]);
    for (int64_t i = 0; i < n_seqs; i++) {
        const wk_kv_pool *p = seqs[i].cache->pool;
        if (p && p->pending > available(p))
            return wk__err(WK_ERR_BUSY, op, "the KV pool is full: %lld blocks needed, %lld free or evictable",
                           (long long)p->pending, (long long)available(p));
    }
    return WK_OK;
}

wk_status wk__kv_paged_prepare(const wk_lm_seq *seqs, int64_t n_seqs) {
    int64_t *upto = malloc(sizeof(int64_t) * (size_t)n_seqs);
    if (!upto) return wk__err(WK_ERR_OOM, "wk_lm_forward", "cannot allocate %lld sequences", (long long)n_seqs);
    for (int64_t i = 0; i < n_seqs; i++) {
        upto[i] = seqs[i].cache->len + seqs[i].n;
        seqs[i].cache->undo_n_table = -1;
    }
    wk_status st = check_pools("wk_lm_forward", seqs, n_seqs, upto);
    for (int64_t i = 0; st == WK_OK && i < n_seqs; i++) {
        wk_kv_cache *c = seqs[i].cache;
        if (!c->pool) continue;
        st = take_for(c, upto[i]);
        if (st == WK_OK) memcpy(c->ids + c->len, seqs[i].ids, sizeof(int32_t) * (size_t)seqs[i].n);
    }
    free(upto);
    if (st != WK_OK) wk__kv_paged_rollback(seqs, n_seqs);
    return st;
}

void wk__kv_paged_rollback(const wk_lm_seq *seqs, int64_t n_seqs) {
    for (int64_t i = 0; i < n_seqs; i++)
        if (seqs[i].cache->pool) untake(seqs[i].cache);
}

/* Register c's full blocks past n_reg under their prefix; a block whose
 * prefix is cached already is swapped for the cached one (same positions,
 * same ids: one copy kept). */
static void register_blocks(wk_kv_cache *c) {
    wk_kv_pool *p = c->pool;
    int64_t B = p->block;
    for (int64_t j = c->n_reg; j < c->len / B; j++) {
        uint64_t pk = j ? p->key[c->table[j - 1]] : CHAIN_SEED, ps = j ? p->serial[c->table[j - 1]] : 0;
        const int32_t *ids = c->ids + j * B;
        uint64_t key = chain_key(pk, ids, B);
        int64_t b = c->table[j], e = hash_find(p, key, ps, ids);
        if (e == b) {
            /* already this prefix's */
        } else if (e >= 0) {
            hold_block(p, e);
            put_block(p, b);
            c->table[j] = e;
        } else if (p->reg[b]) {
            break; /* a registered block of another prefix (not reached today): leave the chain */
        } else {
            p->reg[b] = true;
            p->key[b] = key;
            p->serial[b] = ++p->next_serial;
            p->parent[b] = ps;
            memcpy(p->bids + b * B, ids, sizeof(int32_t) * (size_t)B);
            hash_insert(p, b);
        }
        c->n_reg = j + 1;
    }
}

void wk__kv_paged_commit(const wk_lm_seq *seqs, int64_t n_seqs) {
    for (int64_t i = 0; i < n_seqs; i++) {
        wk_kv_cache *c = seqs[i].cache;
        if (!c->pool) continue;
        keep_taken(c);
        if (c->pool->prefix_cache) register_blocks(c);
    }
}

/* ---- the pool ---- */

static void pool_tensors_free(wk_kv_pool *p) {
    for (int64_t l = 0; l < p->layers; l++) {
        /* the u8 aliases first: they borrow the block tensors' bytes */
        if (p->kb) wk_tensor_free(p->kb[l]);
        if (p->vb) wk_tensor_free(p->vb[l]);
        if (p->k) wk_tensor_free(p->k[l]);
        if (p->v) wk_tensor_free(p->v[l]);
    }
}

void wk_kv_pool_free(wk_kv_pool *p) {
    if (!p) return;
    if (p->n_caches > 0) {
        wk__err(WK_ERR_ARG, "wk_kv_pool_free", "%lld paged caches of the pool are alive: free them first",
                (long long)p->n_caches);
        return;
    }
    pool_tensors_free(p);
    free(p->k);
    free(p->v);
    free(p->kb);
    free(p->vb);
    free(p->ref);
    free(p->free_list);
    free(p->reg);
    free(p->key);
    free(p->serial);
    free(p->parent);
    free(p->bids);
    free(p->hnext);
    free(p->bucket);
    free(p->prev);
    free(p->next);
    free(p);
}

/* One layer's keys or values in the pool's dtype (q8_0: and their u8 alias
 * in *bytes). Owned, not in a scope. Left unwritten (wk_empty): a pool is
 * sized for every slot's whole context, and the pages of a large allocation
 * are mapped only when a block is first written, so resident memory follows
 * the blocks in use, not the pool's size (zeros would touch every page at
 * start: 3 GB for SmolLM2 with 8 slots of 8192 positions). Positions no
 * forward wrote are never read: attention narrows to each cache's length. */
static wk_tensor *pool_tensor(const wk_kv_pool *p, wk_tensor **bytes) {
    const wk_lm_config *cfg = &p->m->cfg;
    int64_t shape[3] = {cfg->n_kv_heads, p->blocks * p->block, cfg->head_dim};
    if (p->dtype != WK_Q8_0) return wk_keep(wk_empty(shape, 3, p->dtype, p->m->dev));
    wk_tensor *q = wk_keep(wk_empty(shape, 3, WK_Q8_0, p->m->dev));
    *bytes = q ? wk_keep(bytes_of(q, false)) : NULL;
    if (!*bytes) {
        wk_tensor_free(q);
        return NULL;
    }
    return q;
}

wk_kv_pool *wk_kv_pool_new(const wk_lm *m, const wk_kv_pool_opts *o) {
    const char *op = "wk_kv_pool_new";
    if (!m || !o) {
        wk__err(WK_ERR_ARG, op, "model and options must not be NULL");
        return NULL;
    }
    if (m->pp) { /* pipeline parallel: the pool (and serve) are single-process */
        wk__err(WK_ERR_ARG, op, "the model is pipeline-parallel (rank %d of %d): the paged pool is single-process",
                m->pp->rank, m->pp->size);
        return NULL;
    }
    if (m->tp.comm) { /* TP: the pool (and the serving engine on it) is single-process */
        wk__err(WK_ERR_ARG, op, "the paged KV pool is single-process; this model is tensor parallel over %d ranks",
                m->tp.size);
        return NULL;
    }
    const wk_lm_config *cfg = &m->cfg;
    int64_t B = o->block > 0 ? o->block : 16;
    wk_dtype dt = o->dtype == WK_U8 ? m->kv_dtype : o->dtype;
    if (o->blocks <= 0) {
        wk__err(WK_ERR_ARG, op, "blocks must be > 0 (got %lld)", (long long)o->blocks);
        return NULL;
    }
    if (B > (int64_t)1 << 20 || o->blocks > ((int64_t)1 << 40) / B) {
        wk__err(WK_ERR_ARG, op, "%lld blocks of %lld positions is too large a pool", (long long)o->blocks,
                (long long)B);
        return NULL;
    }
    if (dt != WK_F32 && dt != WK_F16 && dt != WK_BF16 && dt != WK_Q8_0) {
        wk__err(WK_ERR_ARG, op, "a KV pool is f32, f16, bf16 or q8_0, not %s", wk_dtype_name(dt));
        return NULL;
    }
    if (dt == WK_Q8_0 && cfg->head_dim % 32 != 0) {
        wk__err(WK_ERR_ARG, op, "a q8_0 KV pool needs head_dim %% 32 == 0 (head_dim %lld)", (long long)cfg->head_dim);
        return NULL;
    }
    wk_kv_pool *p = calloc(1, sizeof *p);
    if (!p) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a pool");
        return NULL;
    }
    p->m = m;
    p->block = B;
    p->blocks = o->blocks;
    p->dtype = dt;
    p->prefix_cache = o->prefix_cache;
    p->lru_head = p->lru_tail = -1;
    size_t nb = (size_t)p->blocks, nl = (size_t)cfg->n_layers;
    uint64_t nbucket = 1;
    while (nbucket < (uint64_t)p->blocks) nbucket <<= 1;
    p->hmask = nbucket - 1;
    p->k = calloc(nl, sizeof *p->k);
    p->v = calloc(nl, sizeof *p->v);
    if (dt == WK_Q8_0) {
        p->kb = calloc(nl, sizeof *p->kb);
        p->vb = calloc(nl, sizeof *p->vb);
    }
    p->ref = calloc(nb, sizeof *p->ref);
    p->free_list = malloc(nb * sizeof *p->free_list);
    p->reg = calloc(nb, sizeof *p->reg);
    p->key = calloc(nb, sizeof *p->key);
    p->serial = calloc(nb, sizeof *p->serial);
    p->parent = calloc(nb, sizeof *p->parent);
    p->bids = calloc(nb * (size_t)B, sizeof *p->bids);
    p->hnext = malloc(nb * sizeof *p->hnext);
    p->bucket = malloc((size_t)nbucket * sizeof *p->bucket);
    p->prev = malloc(nb * sizeof *p->prev);
    p->next = malloc(nb * sizeof *p->next);
    if (!p->k || !p->v || (dt == WK_Q8_0 && (!p->kb || !p->vb)) || !p->ref || !p->free_list || !p->reg || !p->key ||
        !p->serial || !p->parent || !p->bids || !p->hnext || !p->bucket || !p->prev || !p->next) {
        wk_kv_pool_free(p);
        wk__err(WK_ERR_OOM, op, "cannot allocate the bookkeeping of %lld blocks", (long long)p->blocks);
        return NULL;
    }
    p->layers = cfg->n_layers;
    /* the free list pops block 0 first */
    for (int64_t b = 0; b < p->blocks; b++) {
        p->free_list[b] = p->blocks - 1 - b;
        p->hnext[b] = p->prev[b] = p->next[b] = -1;
    }
    p->n_free = p->blocks;
    for (uint64_t h = 0; h < nbucket; h++) p->bucket[h] = -1;
    bool ok = wk__scope_open();
    for (int64_t l = 0; ok && l < p->layers; l++) {
        p->k[l] = pool_tensor(p, p->kb ? &p->kb[l] : NULL);
        p->v[l] = pool_tensor(p, p->vb ? &p->vb[l] : NULL);
        ok = p->k[l] && p->v[l];
    }
    wk_scope_end();
    if (!ok) {
        wk_kv_pool_free(p);
        return NULL;
    }
    return p;
}

void wk_kv_pool_get_stats(const wk_kv_pool *p, wk_kv_pool_stats *st) {
    if (!st) return;
    *st = (wk_kv_pool_stats){0};
    if (!p) return;
    st->blocks = p->blocks;
    st->cached = p->n_lru;
    st->free = p->n_free;
    st->used = p->blocks - p->n_lru - p->n_free;
    st->reused_tokens = p->reused_tokens;
}

/* ---- paged caches ---- */

/* The positions a paged cache may hold: the model's context, covered by
 * its RoPE tables (a paged cache has none of its own), and under longrope
 * no further than the original context (past it the long factors would
 * apply to every key). */
static wk_status paged_cap_ok(const char *op, const wk_lm *m, int64_t cap) {
    const wk_lm_config *cfg = &m->cfg;
    if (cap > cfg->max_ctx)
        return wk__err(WK_ERR_ARG, op, "max_tokens %lld exceeds the model's context %lld", (long long)cap,
                       (long long)cfg->max_ctx);
    for (int i = 0; i < WK__LM_ROPE_SETS; i++)
        if (m->rope[i].cos && cap > wk_dim(m->rope[i].cos, 0))
            return wk__err(WK_ERR_ARG, op,
                           "a paged cache uses the model's RoPE tables: max_tokens %lld exceeds their %lld positions",
                           (long long)cap, (long long)wk_dim(m->rope[i].cos, 0));
    if (m->rope_inv_long && cap > cfg->rope_orig_ctx)
        return wk__err(WK_ERR_ARG, op,
                       "a paged cache cannot take longrope's long factors: max_tokens %lld exceeds the original "
                       "context %lld",
                       (long long)cap, (long long)cfg->rope_orig_ctx);
    return WK_OK;
}

/* Grow c's table and ids for cap positions (their contents kept). */
static wk_status grow(wk_kv_cache *c, int64_t cap) {
    int64_t *t = realloc(c->table, sizeof(int64_t) * (size_t)blocks_for(c->pool, cap));
    if (t) c->table = t;
    int32_t *ids = t ? realloc(c->ids, sizeof(int32_t) * (size_t)cap) : NULL;
    if (ids) c->ids = ids;
    if (!t || !ids)
        return wk__err(WK_ERR_OOM, "wk_kv_cache_reserve", "cannot allocate a table for %lld positions", (long long)cap);
    c->kv.cap = cap;
    return WK_OK;
}

wk_kv_cache *wk_kv_cache_new_paged(wk_kv_pool *p, int64_t max_tokens) {
    const char *op = "wk_kv_cache_new_paged";
    if (!p) {
        wk__err(WK_ERR_ARG, op, "pool is NULL");
        return NULL;
    }
    if (max_tokens <= 0) max_tokens = p->m->cfg.max_ctx;
    if (paged_cap_ok(op, p->m, max_tokens) != WK_OK) return NULL;
    wk_kv_cache *c = calloc(1, sizeof *c);
    if (!c) {
        wk__err(WK_ERR_OOM, op, "cannot allocate a cache");
        return NULL;
    }
    c->m = p->m;
    c->pool = p;
    c->undo_n_table = c->undo_cow_slot = c->undo_cow_block = -1;
    if (grow(c, max_tokens) != WK_OK) {
        free(c->table);
        free(c->ids);
        free(c);
        return NULL;
    }
    p->n_caches++;
    return c;
}

void wk__kv_paged_free(wk_kv_cache *c) {
    release_from(c, 0);
    c->pool->n_caches--;
    free(c->table);
    free(c->ids);
}

wk_status wk__kv_paged_truncate(wk_kv_cache *c, int64_t n) {
    if (n < c->len) c->len = n;
    if (c->n_reg > c->len / c->pool->block) c->n_reg = c->len / c->pool->block;
    release_from(c, blocks_for(c->pool, c->len));
    return WK_OK;
}

wk_status wk__kv_paged_reserve(wk_kv_cache *c, int64_t max_tokens) {
    const char *op = "wk_kv_cache_reserve";
    wk_kv_pool *p = c->pool;
    if (max_tokens > c->kv.cap && paged_cap_ok(op, c->m, max_tokens) != WK_OK) return wk_last_status();
    int64_t need = need_of(c, max_tokens);
    if (need > available(p))
        return wk__err(WK_ERR_BUSY, op, "the KV pool is full: %lld blocks needed, %lld free or evictable",
                       (long long)need, (long long)available(p));
    if (max_tokens > c->kv.cap && grow(c, max_tokens) != WK_OK) return wk_last_status();
    wk_status st = take_for(c, max_tokens);
    if (st == WK_OK) keep_taken(c);
    return st;
}

int64_t wk_kv_cache_reuse_prefix(wk_kv_cache *c, const int32_t *ids, int64_t n) {
    const char *op = "wk_kv_cache_reuse_prefix";
    if (!c || (!ids && n > 0) || n < 0) {
        wk__err(WK_ERR_ARG, op, "needs a cache and n >= 0 ids");
        return -1;
    }
    if (!c->pool) {
        wk__err(WK_ERR_ARG, op, "the cache is not paged (wk_kv_cache_new_paged)");
        return -1;
    }
    if (c->len != 0 || c->n_table != 0) {
        wk__err(WK_ERR_ARG, op, "the cache must be empty and hold no block (len %lld, %lld blocks)",
                (long long)c->len, (long long)c->n_table);
        return -1;
    }
    wk_kv_pool *p = c->pool;
    if (!p->prefix_cache || n < 1) return 0;
    int64_t B = p->block, most = (n - 1) / B, fit = c->kv.cap / B;
    if (most > fit) most = fit;
    uint64_t pk = CHAIN_SEED, ps = 0;
    int64_t j = 0;
    for (; j < most; j++) {
        uint64_t key = chain_key(pk, ids + j * B, B);
        int64_t b = hash_find(p, key, ps, ids + j * B);
        if (b < 0) break;
        hold_block(p, b);
        c->table[j] = b;
        pk = key;
        ps = p->serial[b];
    }
    c->n_table = c->n_reg = j;
    c->len = j * B;
    memcpy(c->ids, ids, sizeof(int32_t) * (size_t)c->len);
    p->reused_tokens += c->len;
    return c->len;
}
