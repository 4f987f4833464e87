/* GGUF parsing: header, metadata and tensor infos, checked against the bytes
 * of the map. Layout (all little-endian):
 *   "GGUF" u32 version, count n_tensors, count n_kv,
 *   n_kv x (string key, u32 type, value),
 *   n_tensors x (string name, u32 n_dims, n_dims x dim, u32 ggml type, u64 offset),
 *   padding to the alignment, tensor data (offsets relative to its start).
 * A count, string length, array length and dim is 32-bit in v1, 64-bit in v2
 * and v3 (v3 only added big-endian files, which wick refuses).
 * Every count is bounded by the bytes left before anything is allocated for
 * it, so a hostile file costs at most a small multiple of its own size. */
#include <stdarg.h>
#include "wick/gguf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/checked.h"
#include "base/error.h"
#include "io/gguf_internal.h"

static const char *const OP = "wk_gguf_open";

/* A read position in the file; fails (FORMAT, naming the path) at the end. */
typedef struct cursor {
    const wk_gguf *g;
    uint64_t pos;
} cursor;

static wk_status fail_as(const wk_gguf *g, wk_status s, const char *fmt, ...) WK_PRINTF(3, 4);
static wk_status fail_as(const wk_gguf *g, wk_status s, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wk__err(s, OP, "%s: %s", wk__map_path(g->map), msg);
}
#define FAIL(g, ...) fail_as((g), WK_ERR_FORMAT, __VA_ARGS__)

static uint64_t left(const cursor *c) { return c->g->size - c->pos; }

static wk_status need(cursor *c, uint64_t n, const char *what) {
    if (n > left(c))
        return FAIL(c->g, "truncated: %s needs %llu bytes at offset %llu, %llu left", what, (unsigned long long)n,
                    (unsigned long long)c->pos, (unsigned long long)left(c));
    return WK_OK;
}

static wk_status rd_u32(cursor *c, const char *what, uint32_t *out) {
    if (need(c, 4, what) != WK_OK) return wk_last_status();
    memcpy(out, c->g->data + c->pos, 4);
    c->pos += 4;
    return WK_OK;
}

static wk_status rd_u64(cursor *c, const char *what, uint64_t *out) {
    if (need(c, 8, what) != WK_OK) return wk_last_status();
    memcpy(out, c->g->data + c->pos, 8);
    c->pos += 8;
    return WK_OK;
}

/* A count or length: 32-bit in v1, 64-bit after. */
static wk_status rd_len(cursor *c, const char *what, uint64_t *out) {
    if (c->g->len_bytes == 8) return rd_u64(c, what, out);
    uint32_t v = 0;
    if (rd_u32(c, what, &v) != WK_OK) return wk_last_status();
    *out = v;
    return WK_OK;
}

/* A string: its length, then that many bytes (skipped; *off is where they start). */
static wk_status rd_str(cursor *c, const char *what, uint64_t *off, uint64_t *len) {
    if (rd_len(c, what, len) != WK_OK || need(c, *len, what) != WK_OK) return wk_last_status();
    *off = c->pos;
    c->pos += *len;
    return WK_OK;
}

uint32_t wk__gguf_scalar_size(wk_gguf_type t) {
    switch (t) {
    case WK_GGUF_U8:
    case WK_GGUF_I8:
    case WK_GGUF_BOOL: return 1;
    case WK_GGUF_U16:
    case WK_GGUF_I16: return 2;
    case WK_GGUF_U32:
    case WK_GGUF_I32:
    case WK_GGUF_F32: return 4;
    case WK_GGUF_U64:
    case WK_GGUF_I64:
    case WK_GGUF_F64: return 8;
    case WK_GGUF_STRING:
    case WK_GGUF_ARRAY:
    case WK_GGUF_TYPE_COUNT: return 0;
    }
    return 0;
}

/* Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF) and no NUL, which
 * a C-string name could not hold. */
bool wk__gguf_valid_name(const uint8_t *s, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        if (b == 0) return false;
        if (b < 0x80) {
            i++;
            continue;
        }
        int extra;
        uint32_t cp;
        if (b >= 0xC2 && b <= 0xDF) extra = 1, cp = b & 0x1Fu;
        else if (b >= 0xE0 && b <= 0xEF) extra = 2, cp = b & 0x0Fu;
        else if (b >= 0xF0 && b <= 0xF4) extra = 3, cp = b & 0x07u;
        else return false;
        if ((uint64_t)extra > n - i - 1) return false;
        for (int k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += (uint64_t)extra + 1;
    }
    return true;
}

/* ---- the name tables ---- */

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static const char *kv_name(const wk_gguf *g, int64_t i) { return g->kv[i].key; }
static const char *tensor_name(const wk_gguf *g, int64_t i) { return g->tensors[i].name; }

static int64_t lookup(const wk_gguf *g, const int64_t *table, uint64_t mask, const char *(*name)(const wk_gguf *, int64_t),
                      const char *s) {
    if (!table || !s) return -1;
    size_t len = strlen(s);
    for (uint64_t h = hash_bytes(s, len) & mask;; h = (h + 1) & mask) {
        int64_t i = table[h];
        if (i < 0) return -1;
        if (!strcmp(name(g, i), s)) return i;
    }
}

int64_t wk__gguf_kv_lookup(const wk_gguf *g, const char *key) {
    return lookup(g, g->kv_hash, g->kv_hmask, kv_name, key);
}
int64_t wk__gguf_tensor_lookup(const wk_gguf *g, const char *name) {
    return lookup(g, g->t_hash, g->t_hmask, tensor_name, name);
}

/* An open-addressing table of the n names (load at most 1/2); a name seen
 * twice is the file's error. */
static wk_status build_table(wk_gguf *g, int64_t n, const char *(*name)(const wk_gguf *, int64_t), int64_t **table,
                             uint64_t *mask, const char *what) {
    uint64_t cap = 8;
    while (cap < 2 * (uint64_t)n) cap *= 2;
    int64_t *t = malloc(cap * sizeof *t);
    if (!t) return fail_as(g, WK_ERR_OOM, "cannot allocate a %s table of %llu slots", what, (unsigned long long)cap);
    memset(t, 0xff, cap * sizeof *t); /* all -1 */
    *table = t;
    *mask = cap - 1;
    for (int64_t i = 0; i < n; i++) {
        const char *s = name(g, i);
        uint64_t h = hash_bytes(s, strlen(s)) & *mask;
        while (t[h] >= 0) {
            if (!strcmp(name(g, t[h]), s)) return FAIL(g, "duplicate %s '%s'", what, s);
            h = (h + 1) & *mask;
        }
        t[h] = i;
    }
    return WK_OK;
}

/* ---- metadata ---- */

/* Parse one value of type ty at the cursor into kv (arrays: their index). */
static wk_status parse_value(cursor *c, wk_gguf_type ty, wk__gguf_kv *kv, const char *key) {
    const wk_gguf *g = c->g;
    kv->type = ty;
    uint32_t sz = wk__gguf_scalar_size(ty);
    if (sz) {
        if (need(c, sz, key) != WK_OK) return wk_last_status();
        if (ty == WK_GGUF_BOOL && g->data[c->pos] > 1)
            return FAIL(g, "bool '%s' holds %u (must be 0 or 1)", key, g->data[c->pos]);
        kv->off = c->pos;
        c->pos += sz;
        return WK_OK;
    }
    if (ty == WK_GGUF_STRING) return rd_str(c, key, &kv->off, &kv->n);
    if (ty != WK_GGUF_ARRAY) return FAIL(g, "key '%s' has unknown value type %u", key, (unsigned)ty);
    uint32_t et = 0;
    if (rd_u32(c, key, &et) != WK_OK || rd_len(c, key, &kv->n) != WK_OK) return wk_last_status();
    if (et == WK_GGUF_ARRAY) return FAIL(g, "array '%s' holds arrays (nested arrays are not supported)", key);
    kv->elem_type = (wk_gguf_type)et;
    uint32_t esz = wk__gguf_scalar_size(kv->elem_type);
    if (esz) {
        if (kv->n > left(c) / esz)
            return FAIL(g, "array '%s' of %llu %s elements does not fit in the %llu bytes left", key,
                        (unsigned long long)kv->n, wk_gguf_type_name(kv->elem_type), (unsigned long long)left(c));
        kv->off = c->pos;
        if (kv->elem_type == WK_GGUF_BOOL)
            for (uint64_t j = 0; j < kv->n; j++)
                if (g->data[c->pos + j] > 1) return FAIL(g, "bool array '%s' element %llu is not 0 or 1", key, (unsigned long long)j);
        c->pos += kv->n * esz;
        return WK_OK;
    }
    if (kv->elem_type != WK_GGUF_STRING) return FAIL(g, "array '%s' has unknown element type %u", key, et);
    /* strings: every one has at least its length field */
    if (kv->n > left(c) / g->len_bytes)
        return FAIL(g, "array '%s' of %llu strings does not fit in the %llu bytes left", key, (unsigned long long)kv->n,
                    (unsigned long long)left(c));
    kv->off = c->pos;
    /* the whole array lies in the bytes left; 32-bit offsets when they fit */
    bool wide = left(c) > UINT32_MAX;
    uint64_t slots = (kv->n + WK__GGUF_SIDX_STRIDE - 1) / WK__GGUF_SIDX_STRIDE;
    void *idx = malloc(slots ? slots * (wide ? 8 : 4) : 1);
    if (!idx) return fail_as(g, WK_ERR_OOM, "cannot index the %llu strings of '%s'", (unsigned long long)kv->n, key);
    if (wide) kv->sidx64 = idx;
    else kv->sidx32 = idx;
    for (uint64_t j = 0; j < kv->n; j++) {
        uint64_t rel = c->pos - kv->off, soff = 0, slen = 0;
        if (j % WK__GGUF_SIDX_STRIDE == 0) {
            if (wide) kv->sidx64[j / WK__GGUF_SIDX_STRIDE] = rel;
            else kv->sidx32[j / WK__GGUF_SIDX_STRIDE] = (uint32_t)rel;
        }
        if (rd_str(c, key, &soff, &slen) != WK_OK) return wk_last_status();
    }
    return WK_OK;
}

static wk_status parse_kvs(cursor *c, wk_gguf *g, uint64_t *key_bytes) {
    for (int64_t i = 0; i < g->n_kv; i++) {
        wk__gguf_kv *kv = &g->kv[i];
        uint64_t koff = 0, klen = 0;
        uint32_t ty = 0;
        if (rd_str(c, "a key", &koff, &klen) != WK_OK) return wk_last_status();
        if (!klen || !wk__gguf_valid_name(g->data + koff, klen))
            return FAIL(g, "key %lld at offset %llu is empty or not valid UTF-8", (long long)i, (unsigned long long)koff);
        kv->key_off = koff;
        kv->key_len = klen;
        *key_bytes += klen + 1;
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(klen < 48 ? klen : 48), (const char *)g->data + koff);
        if (rd_u32(c, key, &ty) != WK_OK || parse_value(c, (wk_gguf_type)ty, kv, key) != WK_OK) return wk_last_status();
    }
    return WK_OK;
}

/* ---- tensor infos ---- */

static wk_status parse_tensor(cursor *c, wk_gguf *g, int64_t i, uint64_t *name_bytes) {
    wk__gguf_tensor *t = &g->tensors[i];
    uint64_t noff = 0, nlen = 0;
    uint32_t nd = 0;
    if (rd_str(c, "a tensor name", &noff, &nlen) != WK_OK) return wk_last_status();
    if (!nlen || !wk__gguf_valid_name(g->data + noff, nlen))
        return FAIL(g, "tensor %lld's name at offset %llu is empty or not valid UTF-8", (long long)i,
                    (unsigned long long)noff);
    t->name_off = noff;
    t->name_len = nlen;
    *name_bytes += nlen + 1;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(nlen < 48 ? nlen : 48), (const char *)g->data + noff);
    if (rd_u32(c, name, &nd) != WK_OK) return wk_last_status();
    if (nd > WK__GGUF_MAX_DIMS) return FAIL(g, "tensor '%s' has %u dims (at most %d)", name, nd, WK__GGUF_MAX_DIMS);
    t->rank = (int)nd;
    /* wick's shape rule (wk__shape_fits): the product of the NONZERO dims is
     * bounded, so strides stay in range even when another dim is 0 */
    int64_t numel = 1, nonzero = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v = 0;
        if (rd_len(c, name, &v) != WK_OK) return wk_last_status();
        if (v > (uint64_t)WK__MAX_NUMEL || (v && wk__mul_overflow_i64(nonzero, (int64_t)v, &nonzero)) ||
            nonzero > WK__MAX_NUMEL)
            return FAIL(g, "tensor '%s': dims overflow (dim %u is %llu)", name, d, (unsigned long long)v);
        t->ne[d] = (int64_t)v;
        numel *= (int64_t)v; /* <= nonzero, or 0 */
    }
    uint64_t rel = 0;
    if (rd_u32(c, name, &t->ggml_type) != WK_OK || rd_u64(c, name, &rel) != WK_OK) return wk_last_status();
    uint32_t be, bb;
    if (!wk_ggml_type_block(t->ggml_type, &be, &bb))
        return fail_as(g, WK_ERR_DTYPE, "tensor '%s' has unknown ggml type %u", name, t->ggml_type);
    int64_t ne0 = nd ? t->ne[0] : 1;
    if (ne0 % be)
        return FAIL(g, "tensor '%s': rows of %lld elements are not whole %s blocks of %u", name, (long long)ne0,
                    wk_ggml_type_name(t->ggml_type), be);
    t->nbytes = (uint64_t)numel / be * bb; /* numel <= 2^56 and bb < 2^8 */
    if (rel % g->alignment)
        return FAIL(g, "tensor '%s' at data offset %llu is not aligned to %u", name, (unsigned long long)rel, g->alignment);
    t->off = rel; /* made absolute once the data section's start is known */
    return WK_OK;
}

static int by_offset(const void *a, const void *b) {
    const wk__gguf_tensor *x = *(const wk__gguf_tensor *const *)a, *y = *(const wk__gguf_tensor *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Inside the file and pairwise disjoint (sorted by offset, each ends before the next starts). */
static wk_status check_placement(wk_gguf *g) {
    if (!g->n_tensors) return WK_OK;
    wk__gguf_tensor **order = malloc((size_t)g->n_tensors * sizeof *order);
    if (!order) return fail_as(g, WK_ERR_OOM, "cannot sort %lld tensors", (long long)g->n_tensors);
    int64_t m = 0;
    wk_status st = WK_OK;
    for (int64_t i = 0; i < g->n_tensors && st == WK_OK; i++) {
        wk__gguf_tensor *t = &g->tensors[i];
        if (t->off > g->size - g->data_offset || t->nbytes > g->size - g->data_offset - t->off)
            st = FAIL(g, "tensor '%s' (%llu bytes at data offset %llu) lies outside the %llu-byte file", t->name,
                      (unsigned long long)t->nbytes, (unsigned long long)t->off, (unsigned long long)g->size);
        t->off += g->data_offset;
        if (t->nbytes) order[m++] = t; /* empty tensors occupy nothing */
    }
    if (st == WK_OK) {
        qsort(order, (size_t)m, sizeof *order, by_offset);
        for (int64_t k = 1; k < m && st == WK_OK; k++)
            if (order[k - 1]->off + order[k - 1]->nbytes > order[k]->off)
                st = FAIL(g, "tensors '%s' and '%s' overlap", order[k - 1]->name, order[k]->name);
    }
    free(order);
    return st;
}

/* general.alignment, before the tensor infos that must respect it (a
 * linear scan over the file bytes: the key table is built later). */
static wk_status find_alignment(wk_gguf *g) {
    static const char key[] = "general.alignment";
    g->alignment = WK__GGUF_DEFAULT_ALIGNMENT;
    for (int64_t i = 0; i < g->n_kv; i++) {
        const wk__gguf_kv *kv = &g->kv[i];
        if (kv->key_len != sizeof key - 1 || memcmp(g->data + kv->key_off, key, sizeof key - 1)) continue;
        if (kv->type != WK_GGUF_U32)
            return FAIL(g, "general.alignment is %s (must be u32)", wk_gguf_type_name(kv->type));
        uint32_t a;
        memcpy(&a, g->data + kv->off, 4);
        if (!a || (a & (a - 1))) return FAIL(g, "general.alignment %u is not a power of two", a);
        g->alignment = a; /* a duplicate key is refused later with the table */
    }
    return WK_OK;
}

/* Keys and tensor names into one arena as C strings. */
static wk_status copy_names(wk_gguf *g, uint64_t bytes) {
    g->arena = malloc(bytes ? bytes : 1);
    if (!g->arena) return fail_as(g, WK_ERR_OOM, "cannot allocate %llu bytes of names", (unsigned long long)bytes);
    char *p = g->arena;
    for (int64_t i = 0; i < g->n_kv; i++) {
        wk__gguf_kv *kv = &g->kv[i];
        memcpy(p, g->data + kv->key_off, kv->key_len);
        p[kv->key_len] = 0;
        kv->key = p;
        p += kv->key_len + 1;
    }
    for (int64_t i = 0; i < g->n_tensors; i++) {
        wk__gguf_tensor *t = &g->tensors[i];
        memcpy(p, g->data + t->name_off, t->name_len);
        p[t->name_len] = 0;
        t->name = p;
        p += t->name_len + 1;
    }
    return WK_OK;
}

/* ---- the header ---- */

static wk_status parse_header(wk_gguf *g) {
    cursor c = {g, 0};
    uint32_t version = 0;
    if (g->size < 4 || memcmp(g->data, "GGUF", 4)) return FAIL(g, "not a GGUF file (no 'GGUF' magic)");
    c.pos = 4;
    if (rd_u32(&c, "the version", &version) != WK_OK) return wk_last_status();
    uint32_t swapped = __builtin_bswap32(version);
    if (version == 0 || version > 3) {
        if (swapped >= 1 && swapped <= 3)
            return FAIL(g, "a big-endian GGUF (version %u byte-swapped); only little-endian files are read", swapped);
        return FAIL(g, "unsupported GGUF version %u (1..3 are read)", version);
    }
    g->version = version;
    g->len_bytes = version == 1 ? 4 : 8;
    uint64_t nt = 0, nkv = 0;
    if (rd_len(&c, "the tensor count", &nt) != WK_OK || rd_len(&c, "the metadata count", &nkv) != WK_OK)
        return wk_last_status();
    /* the smallest key/value: key length + 1 byte + type + a 1-byte value;
     * the smallest tensor info: name length + 1 byte + n_dims + type + offset */
    uint64_t min_kv = g->len_bytes + 1 + 4 + 1, min_t = g->len_bytes + 1 + 4 + 4 + 8;
    if (nkv > left(&c) / min_kv || nt > (left(&c) - nkv * min_kv) / min_t)
        return FAIL(g, "%llu tensors and %llu metadata entries cannot fit in the %llu bytes left",
                    (unsigned long long)nt, (unsigned long long)nkv, (unsigned long long)left(&c));
    g->n_kv = (int64_t)nkv;
    g->n_tensors = (int64_t)nt;
    g->kv = calloc(nkv ? nkv : 1, sizeof *g->kv);
    g->tensors = calloc(nt ? nt : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) return fail_as(g, WK_ERR_OOM, "cannot allocate the header tables");

    uint64_t name_bytes = 0;
    if (parse_kvs(&c, g, &name_bytes) != WK_OK || find_alignment(g) != WK_OK) return wk_last_status();
    for (int64_t i = 0; i < g->n_tensors; i++)
        if (parse_tensor(&c, g, i, &name_bytes) != WK_OK) return wk_last_status();
    /* the data section starts at the next multiple of the alignment */
    uint64_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
    g->data_offset = c.pos + pad;
    if (g->n_tensors && g->data_offset > g->size)
        return FAIL(g, "truncated: the tensor data would start at %llu, past the end (%llu bytes)",
                    (unsigned long long)g->data_offset, (unsigned long long)g->size);
    if (copy_names(g, name_bytes) != WK_OK) return wk_last_status();
    if (build_table(g, g->n_kv, kv_name, &g->kv_hash, &g->kv_hmask, "key") != WK_OK ||
        build_table(g, g->n_tensors, tensor_name, &g->t_hash, &g->t_hmask, "tensor name") != WK_OK)
        return wk_last_status();
    return check_placement(g);
}

static wk_gguf *parse(wk__map *m) {
    if (!m) return NULL;
    wk_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        wk__err(WK_ERR_OOM, OP, "cannot allocate a reader");
        wk__map_release(m);
        return NULL;
    }
    g->map = m;
    g->data = wk__map_data(m);
    g->size = wk__map_size(m);
    if (parse_header(g) != WK_OK) {
        wk_gguf_close(g);
        return NULL;
    }
    return g;
}

wk_gguf *wk_gguf_open(const char *path) { return parse(wk__map_open(OP, path)); }

wk_gguf *wk_gguf_open_bytes(const void *data, size_t size) {
    if (!data && size) {
        wk__err(WK_ERR_ARG, "wk_gguf_open_bytes", "NULL data with %zu bytes", size);
        return NULL;
    }
    return parse(wk__map_from_bytes("wk_gguf_open_bytes", data, size));
}

void wk_gguf_close(wk_gguf *g) {
    if (!g) return;
    if (g->kv)
        for (int64_t i = 0; i < g->n_kv; i++) {
            free(g->kv[i].sidx32);
            free(g->kv[i].sidx64);
        }
    free(g->kv);
    free(g->tensors);
    free(g->arena);
    free(g->kv_hash);
    free(g->t_hash);
    wk__map_release(g->map);
    free(g);
}
