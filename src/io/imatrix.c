/* Importance-matrix files (wick/imatrix.h): llama.cpp's GGUF form, read
 * through wick's GGUF reader, and the legacy .dat form, parsed here with
 * every length checked against the bytes that are left. Both end as one
 * list of (name, weights) with the weights already normalised the way
 * llama-quantize normalises them, so a caller hands them to
 * wk_quantize_imatrix unchanged. */
#include "wick/imatrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/map_file.h"
#include "wick/gguf.h"

typedef struct {
    char *name;
    float *w;
    int64_t n;
} entry;

struct wk_imatrix {
    entry *e;
    int64_t count, cap;
    int legacy;
    int64_t chunk_count;
    char *dataset;
};

static const char *OP = "wk_imatrix_load";

void wk_imatrix_free(wk_imatrix *m) {
    if (!m) return;
    for (int64_t i = 0; i < m->count; i++) {
        free(m->e[i].name);
        free(m->e[i].w);
    }
    free(m->e);
    free(m->dataset);
    free(m);
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static int64_t find(const wk_imatrix *m, const char *name) {
    for (int64_t i = 0; i < m->count; i++)
        if (!strcmp(m->e[i].name, name)) return i;
    return -1;
}

/* A new entry called name[0..len) with room for n weights; NULL + error
 * (a second entry of one name is malformed: which one would count?). */
static entry *add_entry(wk_imatrix *m, const char *name, size_t len, int64_t n) {
    if (len == 0 || memchr(name, 0, len)) {
        wk__err(WK_ERR_FORMAT, OP, "entry %lld has an empty name or one with a NUL byte", (long long)m->count);
        return NULL;
    }
    if (m->count == m->cap) {
        int64_t cap = m->cap ? m->cap * 2 : 16;
        entry *e = realloc(m->e, (size_t)cap * sizeof *e);
        if (!e) goto oom;
        m->e = e;
        m->cap = cap;
    }
    entry *e = &m->e[m->count];
    e->name = dup_n(name, len);
    e->w = malloc((size_t)n * sizeof *e->w);
    if (!e->name || !e->w) {
        free(e->name);
        free(e->w);
        goto oom;
    }
    e->n = n;
    if (find(m, e->name) >= 0) {
        wk__err(WK_ERR_FORMAT, OP, "tensor %s has two entries", e->name);
        free(e->name);
        free(e->w);
        return NULL;
    }
    m->count++;
    return e;
oom:
    wk__err(WK_ERR_OOM, OP, "no memory for %lld weights", (long long)n);
    return NULL;
}

/* ---- legacy .dat ---------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t left;
} cursor;

static int take(cursor *c, void *out, size_t n) {
    if (c->left < n) return 0;
    memcpy(out, c->p, n);
    c->p += n;
    c->left -= n;
    return 1;
}

static int take_i32(cursor *c, int32_t *v) {
    uint8_t b[4];
    if (!take(c, b, 4)) return 0;
    *v = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
    return 1;
}

static wk_imatrix *parse_legacy(wk_imatrix *m, const uint8_t *data, size_t size) {
    cursor c = {data, size};
    int32_t n_entries;
    m->legacy = 1;
    if (!take_i32(&c, &n_entries) || n_entries < 1) {
        wk__err(WK_ERR_FORMAT, OP, "not an importance matrix: no entries (neither GGUF nor a legacy .dat)");
        return NULL;
    }
    for (int32_t i = 0; i < n_entries; i++) {
        int32_t len, ncall, nval;
        if (!take_i32(&c, &len) || len < 1 || (size_t)len > c.left) {
            wk__err(WK_ERR_FORMAT, OP, "entry %d of %d: bad or truncated name", i, n_entries);
            return NULL;
        }
        const char *name = (const char *)c.p;
        c.p += len;
        c.left -= (size_t)len;
        if (!take_i32(&c, &ncall) || !take_i32(&c, &nval) || nval < 1 || (size_t)nval > c.left / 4) {
            wk__err(WK_ERR_FORMAT, OP, "entry %d (%.*s): bad or truncated value count", i, len < 64 ? len : 64,
                    name);
            return NULL;
        }
        entry *e = add_entry(m, name, (size_t)len, nval);
        if (!e) return NULL;
        for (int32_t j = 0; j < nval; j++) {
            float v = 0;
            take(&c, &v, 4); /* in range: checked above; little-endian hosts only (as GGUF) */
            /* the file holds mean * ncall; llama-quantize divides in float */
            e->w[j] = ncall > 0 ? v / (float)ncall : v;
        }
    }
    /* optional trailer: chunk count, then the dataset's name */
    int32_t chunks, len;
    if (take_i32(&c, &chunks)) {
        m->chunk_count = chunks;
        if (take_i32(&c, &len) && len > 0 && (size_t)len <= c.left) {
            m->dataset = dup_n((const char *)c.p, strnlen((const char *)c.p, (size_t)len));
            if (!m->dataset) {
                wk__err(WK_ERR_OOM, OP, "no memory");
                return NULL;
            }
        }
    }
    return m;
}

/* ---- GGUF ----------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix, size_t *stem) {
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix)) return 0;
    *stem = n - k;
    return 1;
}

/* Tensor i's f32 values into a new buffer (*n of them). */
static float *f32_values(const wk_gguf *g, int64_t i, int64_t *n) {
    const char *name = wk_gguf_tensor_name(g, i);
    if (wk_gguf_tensor_ggml_type(g, i) != 0) {
        wk__err(WK_ERR_FORMAT, OP, "%s must be F32, it is %s", name, wk_ggml_type_name(wk_gguf_tensor_ggml_type(g, i)));
        return NULL;
    }
    wk_tensor *t = wk_gguf_tensor_at(g, i);
    if (!t) return NULL;
    *n = wk_numel(t);
    float *v = malloc(*n ? (size_t)*n * sizeof *v : 1);
    if (!v) wk__err(WK_ERR_OOM, OP, "no memory for %s", name);
    else if (wk_to_host(t, v, (size_t)*n * sizeof *v) != WK_OK) {
        free(v);
        v = NULL;
    }
    wk_tensor_free(t);
    return v;
}

static int u32_key(const wk_gguf *g, const char *key, int64_t *out) {
    int64_t k = wk_gguf_find_key(g, key);
    uint32_t v;
    if (k < 0 || wk_gguf_kv_type(g, k) != WK_GGUF_U32 || wk_gguf_get_u32(g, k, &v) != WK_OK) {
        wk__err(WK_ERR_FORMAT, OP, "an imatrix GGUF needs %s (u32), as llama-quantize does", key);
        return 0;
    }
    *out = v;
    return 1;
}

/* One entry from NAME.in_sum2 (tensor is) and NAME.counts (tensor ic). */
static int gguf_entry(wk_imatrix *m, const wk_gguf *g, const char *name, size_t stem, int64_t is, int64_t ic) {
    int64_t nval = 0, ncounts = 0;
    float *sums = f32_values(g, is, &nval);
    float *counts = sums ? f32_values(g, ic, &ncounts) : NULL;
    int ok = 0;
    if (!counts) goto done;
    if (ncounts < 1 || nval < 1 || nval % ncounts) {
        wk__err(WK_ERR_FORMAT, OP, "%.*s: %lld sums do not split into %lld matrices", (int)stem, name,
                (long long)nval, (long long)ncounts);
        goto done;
    }
    entry *e = add_entry(m, name, stem, nval);
    if (!e) goto done;
    int64_t ne0 = nval / ncounts;
    for (int64_t j = 0; j < ncounts; j++) {
        float c = counts[j];
        if (!(fabsf(c) < 0x1p62f)) { /* NaN, inf, or beyond what rounds to an int64 */
            wk__err(WK_ERR_FORMAT, OP, "%s: count %lld is %g", e->name, (long long)j, (double)c);
            m->count--;
            free(e->name);
            free(e->w);
            goto done;
        }
        float count = (float)llroundf(c); /* counts are token numbers stored as f32 */
        for (int64_t i = 0; i < ne0; i++) e->w[j * ne0 + i] = count > 0.0f ? sums[j * ne0 + i] / count : 1.0f;
    }
    ok = 1;
done:
    free(sums);
    free(counts);
    return ok;
}

static wk_imatrix *parse_gguf(wk_imatrix *m, const wk_gguf *g) {
    int64_t nt = wk_gguf_tensor_count(g), chunk_size;
    if (nt < 1) {
        wk__err(WK_ERR_FORMAT, OP, "the GGUF has no tensors: no importance matrix in it");
        return NULL;
    }
    if (!u32_key(g, "imatrix.chunk_count", &m->chunk_count) || !u32_key(g, "imatrix.chunk_size", &chunk_size))
        return NULL;
    int64_t k = wk_gguf_find_key(g, "imatrix.datasets");
    wk_gguf_type et;
    uint64_t na;
    if (k < 0 || wk_gguf_kv_type(g, k) != WK_GGUF_ARRAY || wk_gguf_get_array(g, k, &et, &na) != WK_OK ||
        et != WK_GGUF_STRING) {
        wk__err(WK_ERR_FORMAT, OP, "an imatrix GGUF needs imatrix.datasets (array of strings)");
        return NULL;
    }
    const char *s;
    uint64_t slen;
    if (na > 0 && wk_gguf_array_string(g, k, 0, &s, &slen) == WK_OK) {
        m->dataset = dup_n(s, (size_t)slen);
        if (!m->dataset) {
            wk__err(WK_ERR_OOM, OP, "no memory");
            return NULL;
        }
    }
    for (int64_t i = 0; i < nt; i++) {
        const char *name = wk_gguf_tensor_name(g, i);
        size_t stem;
        if (ends_with(name, ".in_sum2", &stem)) {
            /* its partner: NAME.counts */
            char *want = malloc(stem + sizeof ".counts");
            if (!want) {
                wk__err(WK_ERR_OOM, OP, "no memory");
                return NULL;
            }
            memcpy(want, name, stem);
            memcpy(want + stem, ".counts", sizeof ".counts");
            int64_t ic = wk_gguf_find_tensor(g, want);
            if (ic < 0) wk__err(WK_ERR_FORMAT, OP, "%s has no %s beside it", name, want);
            free(want);
            if (ic < 0 || !gguf_entry(m, g, name, stem, i, ic)) return NULL;
        } else if (ends_with(name, ".counts", &stem)) {
            char *want = malloc(stem + sizeof ".in_sum2");
            if (!want) {
                wk__err(WK_ERR_OOM, OP, "no memory");
                return NULL;
            }
            memcpy(want, name, stem);
            memcpy(want + stem, ".in_sum2", sizeof ".in_sum2");
            int64_t is = wk_gguf_find_tensor(g, want);
            if (is < 0) wk__err(WK_ERR_FORMAT, OP, "%s has no %s beside it", name, want);
            free(want);
            if (is < 0) return NULL;
        }
    }
    if (m->count == 0) {
        wk__err(WK_ERR_FORMAT, OP, "the GGUF has no NAME.in_sum2 / NAME.counts tensors");
        return NULL;
    }
    return m;
}

/* ---- entry points ----------------------------------------------------------- */

static wk_imatrix *new_imatrix(void) {
    wk_imatrix *m = calloc(1, sizeof *m);
    if (!m) wk__err(WK_ERR_OOM, OP, "no memory");
    return m;
}

static wk_imatrix *finish(wk_imatrix *m, wk_imatrix *r) {
    if (!r) wk_imatrix_free(m);
    return r;
}

static int is_gguf(const uint8_t *p, size_t n) { return n >= 4 && !memcmp(p, "GGUF", 4); }

wk_imatrix *wk_imatrix_load_bytes(const void *data, size_t size) {
    if (!data && size) {
        wk__err(WK_ERR_ARG, OP, "NULL data");
        return NULL;
    }
    wk_imatrix *m = new_imatrix();
    if (!m) return NULL;
    if (is_gguf(data, size)) {
        wk_gguf *g = wk_gguf_open_bytes(data, size);
        wk_imatrix *r = g ? parse_gguf(m, g) : NULL;
        wk_gguf_close(g);
        return finish(m, r);
    }
    return finish(m, parse_legacy(m, data, size));
}

wk_imatrix *wk_imatrix_load(const char *path) {
    if (!path) {
        wk__err(WK_ERR_ARG, OP, "NULL path");
        return NULL;
    }
    wk__map *map = wk__map_open(OP, path);
    if (!map) return NULL;
    wk_imatrix *m = new_imatrix(), *r = NULL;
    if (m && is_gguf(wk__map_data(map), wk__map_size(map))) {
        wk_gguf *g = wk_gguf_open(path);
        r = g ? parse_gguf(m, g) : NULL;
        wk_gguf_close(g);
    } else if (m) {
        r = parse_legacy(m, wk__map_data(map), wk__map_size(map));
    }
    wk__map_release(map);
    return m ? finish(m, r) : NULL;
}

int64_t wk_imatrix_count(const wk_imatrix *m) { return m ? m->count : 0; }

const char *wk_imatrix_name(const wk_imatrix *m, int64_t i) {
    return m && i >= 0 && i < m->count ? m->e[i].name : NULL;
}

const float *wk_imatrix_values(const wk_imatrix *m, int64_t i, int64_t *n) {
    if (!m || i < 0 || i >= m->count) return NULL;
    if (n) *n = m->e[i].n;
    return m->e[i].w;
}

const float *wk_imatrix_find(const wk_imatrix *m, const char *name, int64_t *n) {
    return m && name ? wk_imatrix_values(m, find(m, name), n) : NULL;
}

int wk_imatrix_is_legacy(const wk_imatrix *m) { return m ? m->legacy : 0; }
int64_t wk_imatrix_chunk_count(const wk_imatrix *m) { return m ? m->chunk_count : 0; }
const char *wk_imatrix_dataset(const wk_imatrix *m) { return m ? m->dataset : NULL; }
