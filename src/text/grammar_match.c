/* The matcher (grammar_match.h): hash-consed stack nodes, interned stack
 * sets, memoised transitions. */
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "text/grammar_match.h"

static const char OP[] = "wk_grammar";

/* Hard caps for one matcher; a rebase between steps keeps it far below. */
#define MAX_NODES (1u << 24)
#define MAX_TOPS (1u << 16)     /* stacks in one set: an ambiguous grammar */
#define MAX_EXPAND (1u << 22)   /* node visits in one step */

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static bool grow(void **v, uint64_t *cap, uint64_t need, size_t size) {
    if (need <= *cap) return true;
    uint64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *nv = realloc(*v, (size_t)c * size);
    if (!nv) return false;
    *v = nv;
    *cap = c;
    return true;
}

static bool grow32(void **v, uint32_t *cap, uint32_t need, size_t size) {
    uint64_t c = *cap;
    bool ok = grow(v, &c, need, size);
    *cap = (uint32_t)c;
    return ok;
}

static int32_t oom(void) {
    wk__err(WK_ERR_OOM, OP, "out of memory in the grammar matcher");
    return WK__GM_ERR;
}

/* ---- nodes ---- */

static bool node_rehash(wk__gm *m, uint64_t size) {
    uint32_t *nh = calloc(size, sizeof *nh);
    if (!nh) return false;
    free(m->nh);
    m->nh = nh;
    m->nhmask = size - 1;
    for (uint32_t i = 0; i < m->nn; i++) {
        uint64_t h = mix((uint64_t)m->npos[i] << 32 | (uint32_t)m->npar[i]) & m->nhmask;
        while (nh[h]) h = (h + 1) & m->nhmask;
        nh[h] = i + 1;
    }
    return true;
}

/* The node (pos, parent), made once. */
static int32_t cons(wk__gm *m, uint32_t pos, int32_t parent) {
    uint64_t h = mix((uint64_t)pos << 32 | (uint32_t)parent) & m->nhmask;
    for (; m->nh[h]; h = (h + 1) & m->nhmask) {
        uint32_t i = m->nh[h] - 1;
        if (m->npos[i] == pos && m->npar[i] == parent) return (int32_t)i;
    }
    if (m->nn >= MAX_NODES) {
        wk__err(WK_ERR_BUSY, OP, "grammar matcher: more than %u parse stack nodes", MAX_NODES);
        return WK__GM_ERR;
    }
    if (m->nn + 1 > m->capn) {
        uint32_t c = m->capn ? m->capn * 2 : 1024;
        uint32_t *a = realloc(m->npos, sizeof *a * c);
        if (a) m->npos = a;
        int32_t *b = realloc(m->npar, sizeof *b * c);
        if (b) m->npar = b;
        uint32_t *s = realloc(m->nseen, sizeof *s * c);
        if (s) m->nseen = s;
        if (!a || !b || !s) return oom();
        m->capn = c;
    }
    uint32_t i = m->nn++;
    m->npos[i] = pos;
    m->npar[i] = parent;
    m->nseen[i] = 0;
    m->nh[h] = i + 1;
    if ((uint64_t)m->nn * 2 > m->nhmask && !node_rehash(m, (m->nhmask + 1) * 2)) return oom();
    return (int32_t)i;
}

/* ---- expansion: a node whose top may be a reference -> character tops ---- */

static bool work_push(wk__gm *m, int32_t n) {
    if (!grow32((void **)&m->work, &m->capwork, m->nwork + 1, sizeof *m->work)) return false;
    m->work[m->nwork++] = (uint32_t)n;
    return true;
}

/* Expands every node on the work list into m->tmp (character tops) and
 * *complete (the empty stack, n = -1, was reached). */
static int32_t expand_all(wk__gm *m, bool *complete) {
    const wk_grammar *g = m->g;
    uint64_t visits = 0;
    while (m->nwork) {
        int32_t n = (int32_t)m->work[--m->nwork];
        if (n < 0) {
            *complete = true;
            continue;
        }
        if (m->nseen[n] == m->gen) continue; /* one stack, reached twice */
        m->nseen[n] = m->gen;
        if (++visits > MAX_EXPAND) {
            wk__err(WK_ERR_BUSY, OP, "grammar too ambiguous: more than %u parse stacks visited in one step",
                    MAX_EXPAND);
            return WK__GM_ERR;
        }
        uint32_t pos = m->npos[n];
        const wk__gelem *e = &g->el[pos];
        if (e->type != WK__GE_REF) {
            if (m->ntmp >= MAX_TOPS) {
                wk__err(WK_ERR_BUSY, OP, "grammar too ambiguous: more than %u parse stacks at once", MAX_TOPS);
                return WK__GM_ERR;
            }
            if (!grow32((void **)&m->tmp, &m->captmp, m->ntmp + 1, sizeof *m->tmp)) return oom();
            m->tmp[m->ntmp++] = (uint32_t)n;
            continue;
        }
        /* what follows the reference: the rest of this alternative, or
         * (tail call) what follows the alternative itself */
        int32_t rest = m->npar[n];
        if (e[1].type != WK__GE_END && (rest = cons(m, pos + 1, m->npar[n])) < 0) return WK__GM_ERR;
        uint32_t r = e->arg;
        for (uint32_t a = 0; a < g->rule_nalt[r]; a++) {
            uint32_t st = g->alt[g->rule_alt[r] + a];
            int32_t c = rest;
            if (g->el[st].type != WK__GE_END && (c = cons(m, st, rest)) < 0) return WK__GM_ERR;
            if (!work_push(m, c)) return oom();
        }
    }
    return 0;
}

/* ---- sets ---- */

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint64_t set_hash(const uint32_t *t, uint32_t n, bool complete) {
    uint64_t h = complete ? 0x9e3779b97f4a7c15ull : 0x2545f4914f6cdd1dull;
    for (uint32_t i = 0; i < n; i++) h = mix(h ^ t[i]) + i;
    return mix(h ^ n);
}

static bool set_rehash(wk__gm *m, uint64_t size) {
    uint32_t *sh = calloc(size, sizeof *sh);
    if (!sh) return false;
    free(m->sh);
    m->sh = sh;
    m->shmask = size - 1;
    for (uint32_t i = 0; i < m->ns; i++) {
        const wk__gm_set *s = &m->sets[i];
        uint64_t h = set_hash(m->pool + s->off, s->n, s->complete) & m->shmask;
        while (sh[h]) h = (h + 1) & m->shmask;
        sh[h] = i + 1;
    }
    return true;
}

/* The set of m->tmp (sorted here) and complete, interned. */
static int32_t intern(wk__gm *m, bool complete) {
    if (m->ntmp > 1) qsort(m->tmp, m->ntmp, sizeof *m->tmp, cmp_u32);
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->ntmp; i++)
        if (!n || m->tmp[n - 1] != m->tmp[i]) m->tmp[n++] = m->tmp[i];
    m->ntmp = n;
    if (!n && !complete) return WK__GM_DEAD;
    uint64_t h = set_hash(m->tmp, n, complete) & m->shmask;
    for (; m->sh[h]; h = (h + 1) & m->shmask) {
        const wk__gm_set *s = &m->sets[m->sh[h] - 1];
        if (s->n == n && s->complete == complete && (!n || memcmp(m->pool + s->off, m->tmp, sizeof *m->tmp * n) == 0))
            return (int32_t)(m->sh[h] - 1);
    }
    if (!grow((void **)&m->pool, &m->cappool, m->npool + n, sizeof *m->pool) ||
        !grow32((void **)&m->sets, &m->caps, m->ns + 1, sizeof *m->sets))
        return oom();
    if (n) memcpy(m->pool + m->npool, m->tmp, sizeof *m->tmp * n);
    wk__gm_set *s = &m->sets[m->ns];
    memset(s, 0, sizeof *s);
    s->succ = WK__GM_ERR;
    s->off = (uint32_t)m->npool;
    s->n = n;
    s->complete = complete;
    m->npool += n;
    m->sh[h] = ++m->ns;
    if ((uint64_t)m->ns * 2 > m->shmask && !set_rehash(m, (m->shmask + 1) * 2)) return oom();
    return (int32_t)(m->ns - 1);
}

/* ---- transitions ---- */

static bool trans_rehash(wk__gm *m, uint64_t size) {
    uint64_t *tk = malloc(size * sizeof *tk);
    int32_t *tv = malloc(size * sizeof *tv);
    if (!tk || !tv) {
        free(tk);
        free(tv);
        return false;
    }
    memset(tk, 0xff, size * sizeof *tk);
    uint64_t mask = size - 1;
    for (uint64_t i = 0; m->tk && i <= m->tmask; i++) {
        if (m->tk[i] == UINT64_MAX) continue;
        uint64_t h = mix(m->tk[i]) & mask;
        while (tk[h] != UINT64_MAX) h = (h + 1) & mask;
        tk[h] = m->tk[i];
        tv[h] = m->tv[i];
    }
    free(m->tk);
    free(m->tv);
    m->tk = tk;
    m->tv = tv;
    m->tmask = mask;
    return true;
}

static int32_t step(wk__gm *m, int32_t set, uint32_t cp) {
    const wk__gm_set *s = &m->sets[set];
    const wk_grammar *g = m->g;
    m->nwork = 0;
    m->ntmp = 0;
    if (++m->gen == 0) { /* wrapped: clear the stamps */
        memset(m->nseen, 0, sizeof *m->nseen * m->nn);
        m->gen = 1;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t t = m->pool[s->off + i];
        uint32_t pos = m->npos[t];
        if (!wk__gr_match(g, &g->el[pos], cp)) continue;
        int32_t next = m->npar[t];
        if (g->el[pos + 1].type != WK__GE_END && (next = cons(m, pos + 1, m->npar[t])) < 0) return WK__GM_ERR;
        if (!work_push(m, next)) return oom();
        s = &m->sets[set];
    }
    bool complete = false;
    if (expand_all(m, &complete) < 0) return WK__GM_ERR;
    return intern(m, complete);
}

int32_t wk__gm_next(wk__gm *m, int32_t set, uint32_t cp) {
    uint64_t key = (uint64_t)set << 21 | cp;
    uint64_t h = mix(key) & m->tmask;
    for (; m->tk[h] != UINT64_MAX; h = (h + 1) & m->tmask)
        if (m->tk[h] == key) return m->tv[h];
    int32_t r = step(m, set, cp);
    if (r == WK__GM_ERR) return r;
    m->tk[h] = key;
    m->tv[h] = r;
    if (++m->nt * 2 > m->tmask && !trans_rehash(m, (m->tmask + 1) * 2)) return oom();
    return r;
}

bool wk__gm_can_range(const wk__gm *m, int32_t set, uint32_t lo, uint32_t hi) {
    const wk__gm_set *s = &m->sets[set];
    for (uint32_t i = 0; i < s->n; i++)
        if (wk__gr_match_range(m->g, &m->g->el[m->npos[m->pool[s->off + i]]], lo, hi)) return true;
    return false;
}

int wk__gm_uniform(wk__gm *m, int32_t set, const uint64_t bytes[2], int32_t *next) {
    if (m->sets[set].succ == WK__GM_ERR) { /* the successor of a letter, a digit or a space: the usual run */
        static const uint8_t probe[] = {'a', '0', ' '};
        int32_t r = WK__GM_DEAD;
        for (size_t i = 0; i < sizeof probe && r == WK__GM_DEAD; i++) r = wk__gm_next(m, set, probe[i]);
        if (r == WK__GM_ERR) return -1;
        m->sets[set].succ = r; /* WK__GM_DEAD: no usual run; set below from the query */
    }
    unsigned b0 = bytes[0] ? (unsigned)__builtin_ctzll(bytes[0]) : 64u + (unsigned)__builtin_ctzll(bytes[1]);
    int32_t y = wk__gm_next(m, set, b0);
    if (y < 0) return y == WK__GM_ERR ? -1 : 0;
    wk__gm_set *s = &m->sets[set];
    if (s->succ == WK__GM_DEAD) s->succ = y;
    if (y == s->succ) { /* the cached case */
        for (int w = 0; w < 2; w++)
            if (bytes[w] & s->known[w] & ~s->same[w]) return 0;
        for (int w = 0; w < 2; w++) {
            uint64_t todo = bytes[w] & ~m->sets[set].known[w];
            while (todo) {
                unsigned b = (unsigned)(w * 64 + __builtin_ctzll(todo));
                todo &= todo - 1;
                int32_t r = wk__gm_next(m, set, b);
                if (r == WK__GM_ERR) return -1;
                s = &m->sets[set];
                s->known[w] |= 1ull << (b & 63);
                if (r != y) return 0;
                s->same[w] |= 1ull << (b & 63);
            }
        }
    } else { /* another successor: check each byte (memoised lookups) */
        for (int w = 0; w < 2; w++)
            for (uint64_t todo = bytes[w]; todo; todo &= todo - 1) {
                int32_t r = wk__gm_next(m, set, (unsigned)(w * 64 + __builtin_ctzll(todo)));
                if (r == WK__GM_ERR) return -1;
                if (r != y) return 0;
            }
    }
    *next = y;
    return 1;
}

/* ---- life cycle ---- */

static bool tables(wk__gm *m) {
    m->nh = calloc(1024, sizeof *m->nh);
    m->nhmask = 1023;
    m->sh = calloc(256, sizeof *m->sh);
    m->shmask = 255;
    m->gen = 1;
    return m->nh && m->sh && trans_rehash(m, 4096);
}

int32_t wk__gm_init(wk__gm *m, const wk_grammar *g) {
    memset(m, 0, sizeof *m);
    m->g = g;
    if (!tables(m)) return oom();
    uint32_t r = g->root;
    for (uint32_t a = 0; a < g->rule_nalt[r]; a++) {
        uint32_t st = g->alt[g->rule_alt[r] + a];
        int32_t c = -1;
        if (g->el[st].type != WK__GE_END && (c = cons(m, st, -1)) < 0) return WK__GM_ERR;
        if (!work_push(m, c)) return oom();
    }
    bool complete = false;
    if (expand_all(m, &complete) < 0) return WK__GM_ERR;
    return intern(m, complete);
}

void wk__gm_free(wk__gm *m) {
    free(m->npos);
    free(m->npar);
    free(m->nseen);
    free(m->nh);
    free(m->pool);
    free(m->sets);
    free(m->sh);
    free(m->tk);
    free(m->tv);
    free(m->tmp);
    free(m->work);
    memset(m, 0, sizeof *m);
}

/* Copies one stack (old node id) into fresh tables, bottom first. */
static int32_t copy_stack(wk__gm *dst, const wk__gm *src, int32_t n) {
    if (n < 0) return -1;
    /* chains are short (nesting depth); walk to the bottom iteratively */
    uint32_t depth = 0;
    for (int32_t k = n; k >= 0; k = src->npar[k]) depth++;
    uint32_t *chain = malloc(sizeof *chain * depth);
    if (!chain) return oom();
    uint32_t i = 0;
    for (int32_t k = n; k >= 0; k = src->npar[k]) chain[i++] = (uint32_t)k;
    int32_t parent = -1;
    while (i--) {
        parent = cons(dst, src->npos[chain[i]], parent);
        if (parent < 0) break;
    }
    free(chain);
    return parent;
}

int32_t wk__gm_rebase(wk__gm *m, int32_t set) {
    wk__gm fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.g = m->g;
    if (!tables(&fresh)) {
        wk__gm_free(&fresh);
        return oom();
    }
    const wk__gm_set *s = &m->sets[set];
    int32_t r = WK__GM_ERR;
    for (uint32_t i = 0; i < s->n; i++) {
        int32_t c = copy_stack(&fresh, m, (int32_t)m->pool[s->off + i]);
        if (c < 0) goto fail;
        if (!grow32((void **)&fresh.tmp, &fresh.captmp, fresh.ntmp + 1, sizeof *fresh.tmp)) {
            oom();
            goto fail;
        }
        fresh.tmp[fresh.ntmp++] = (uint32_t)c;
    }
    r = intern(&fresh, s->complete);
    if (r < 0) goto fail;
    wk__gm_free(m);
    *m = fresh;
    return r;
fail:
    wk__gm_free(&fresh);
    return WK__GM_ERR;
}
