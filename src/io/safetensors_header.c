/* One safetensors file's header: the dtype table, the JSON walk that reads
 * every tensor entry and __metadata__, and the checks that make a hostile
 * header an error (rules in include/wick/safetensors.h). */
#include <stdlib.h>
#include "wick/safetensors.h"
#include <string.h>
#include "base/checked.h"
#include "base/dtype_cases.h"
#include "base/error.h"
#include "io/json.h"
#include "io/safetensors_internal.h"

/* Every dtype safetensors 0.8 knows, in its own order. */
static const wk__st_dtype g_dtypes[] = {
    {"BOOL", 8, WK_U8},         {"F4", 4, -1},         {"F6_E2M3", 6, -1},     {"F6_E3M2", 6, -1},
    {"U8", 8, WK_U8},           {"I8", 8, -1},         {"F8_E5M2", 8, -1},     {"F8_E4M3", 8, WK_F8E4M3},
    {"F8_E8M0", 8, -1},         {"F8_E4M3FNUZ", 8, -1}, {"F8_E5M2FNUZ", 8, -1}, {"I16", 16, WK_I16},
    {"U16", 16, -1},            {"F16", 16, WK_F16},   {"BF16", 16, WK_BF16},  {"I32", 32, WK_I32},
    {"U32", 32, WK_U32},        {"F32", 32, WK_F32},   {"C64", 64, -1},        {"F64", 64, WK_F64},
    {"I64", 64, WK_I64},        {"U64", 64, -1},
};

const wk__st_dtype *wk__st_dtype_named(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof g_dtypes / sizeof g_dtypes[0]; i++)
        if (strlen(g_dtypes[i].name) == len && memcmp(g_dtypes[i].name, name, len) == 0) return &g_dtypes[i];
    return NULL;
}

static uint64_t rd_le64(const uint8_t *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

/* What parse_tensor found, before it is checked against the data area. */
typedef struct entry_in {
    const wk__st_dtype *dt;
    int rank;
    int64_t shape[WK_MAX_RANK];
    int64_t off[2];
} entry_in;

/* The value of a tensor's key: {"dtype": "F32", "shape": [..], "data_offsets": [b, e], other keys ignored}. */
static bool parse_tensor(wk__json *p, const char *name, entry_in *e, wk_status *kind) {
    bool have_dt = false, have_shape = false, have_off = false;
    const char *k;
    size_t kl;
    if (wk__json_peek(p) != WK__JSON_OBJECT)
        return wk__json_fail(p, "tensor '%.64s': its entry must be an object", name);
    if (!wk__json_object(p)) return false;
    while (wk__json_key(p, &k, &kl)) {
        if (strcmp(k, "dtype") == 0 && kl == 5) {
            const char *s;
            size_t sl;
            if (have_dt) return wk__json_fail(p, "tensor '%.64s': \"dtype\" given twice", name);
            have_dt = true;
            if (!wk__json_string(p, &s, &sl)) return false;
            e->dt = wk__st_dtype_named(s, sl);
            if (!e->dt) {
                *kind = WK_ERR_DTYPE;
                return wk__json_fail(p, "tensor '%.64s': unknown safetensors dtype '%.32s'", name, s);
            }
        } else if (strcmp(k, "shape") == 0 && kl == 5) {
            if (have_shape) return wk__json_fail(p, "tensor '%.64s': \"shape\" given twice", name);
            have_shape = true;
            if (!wk__json_array(p)) return false;
            e->rank = 0;
            while (wk__json_item(p)) {
                int64_t v;
                if (e->rank == WK_MAX_RANK)
                    return wk__json_fail(p, "tensor '%.64s': rank above wick's limit of %d", name, WK_MAX_RANK);
                if (!wk__json_int(p, &v)) return false;
                if (v < 0) return wk__json_fail(p, "tensor '%.64s': negative dimension %lld", name, (long long)v);
                e->shape[e->rank++] = v;
            }
        } else if (strcmp(k, "data_offsets") == 0 && kl == 12) {
            int cnt = 0;
            if (have_off) return wk__json_fail(p, "tensor '%.64s': \"data_offsets\" given twice", name);
            have_off = true;
            if (!wk__json_array(p)) return false;
            while (wk__json_item(p)) {
                int64_t v;
                if (cnt == 2) return wk__json_fail(p, "tensor '%.64s': data_offsets holds more than 2 numbers", name);
                if (!wk__json_int(p, &v)) return false;
                if (v < 0) return wk__json_fail(p, "tensor '%.64s': negative data offset %lld", name, (long long)v);
                e->off[cnt++] = v;
            }
            if (!p->failed && cnt != 2)
                return wk__json_fail(p, "tensor '%.64s': data_offsets holds %d numbers, not 2", name, cnt);
        } else if (!wk__json_skip(p)) {
            return false;
        }
    }
    if (p->failed) return false;
    if (!have_dt || !have_shape || !have_off)
        return wk__json_fail(p, "tensor '%.64s': entry lacks \"%s\"", name,
                             !have_dt ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return true;
}

/* The entry's byte size from its shape and dtype must be its data range,
 * which must lie in the data area [0, data_len). */
static bool check_entry(wk__json *p, const char *name, const entry_in *e, uint64_t data_len) {
    if (e->off[0] > e->off[1])
        return wk__json_fail(p, "tensor '%.64s': data_offsets [%lld, %lld] are reversed", name, (long long)e->off[0],
                             (long long)e->off[1]);
    if ((uint64_t)e->off[1] > data_len)
        return wk__json_fail(p, "tensor '%.64s': data_offsets end %lld lies past the %llu-byte data area", name,
                             (long long)e->off[1], (unsigned long long)data_len);
    int64_t numel = 1, bits;
    for (int i = 0; i < e->rank; i++)
        if (wk__mul_overflow_i64(numel, e->shape[i], &numel) || numel > WK__MAX_NUMEL)
            return wk__json_fail(p, "tensor '%.64s': shape has too many elements", name);
    if (wk__mul_overflow_i64(numel, e->dt->bits, &bits))
        return wk__json_fail(p, "tensor '%.64s': shape has too many elements", name);
    if (bits % 8)
        return wk__json_fail(p, "tensor '%.64s': %lld elements of %s do not fill whole bytes", name, (long long)numel,
                             e->dt->name);
    if (bits / 8 != e->off[1] - e->off[0])
        return wk__json_fail(p, "tensor '%.64s': shape and %s need %lld bytes but data_offsets [%lld, %lld] hold %lld",
                             name, e->dt->name, (long long)(bits / 8), (long long)e->off[0], (long long)e->off[1],
                             (long long)(e->off[1] - e->off[0]));
    return true;
}

/* "__metadata__": null or an object of string values. */
static bool parse_meta(const char *op, wk__json *p, wk_safetensors *st, bool *oom) {
    const char *k, *v;
    size_t kl, vl, ko, vo;
    if (wk__json_peek(p) == WK__JSON_NULL) return wk__json_null(p);
    if (wk__json_peek(p) != WK__JSON_OBJECT) return wk__json_fail(p, "__metadata__ must be an object");
    if (!wk__json_object(p)) return false;
    while (wk__json_key(p, &k, &kl)) {
        if (strlen(k) != kl) return wk__json_fail(p, "a __metadata__ key holds a NUL character");
        if (!wk__st_pool_add(op, st, k, kl, &ko)) return *oom = true, wk__json_fail(p, "out of memory");
        if (wk__json_peek(p) != WK__JSON_STRING)
            return wk__json_fail(p, "__metadata__ value of '%.64s' is not a string", st->pool + ko);
        if (!wk__json_string(p, &v, &vl)) return false;
        if (strlen(v) != vl) return wk__json_fail(p, "__metadata__ value of '%.64s' holds a NUL character", st->pool + ko);
        if (!wk__st_pool_add(op, st, v, vl, &vo) || !wk__st_push_meta(op, st, ko, vo))
            return *oom = true, wk__json_fail(p, "out of memory");
    }
    return !p->failed;
}

static int cmp_range(const void *a, const void *b) {
    const wk__st_tensor *x = *(const wk__st_tensor *const *)a, *y = *(const wk__st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* The tensors [first, st->n) must tile [data_start, file_size) exactly, as
 * the reference reader requires: this is what rules out overlaps. */
static wk_status check_tiling(const char *op, wk_safetensors *st, size_t first, uint64_t data_start,
                              uint64_t file_size, const char *path) {
    size_t cnt = st->n - first;
    wk__st_tensor **v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (!v) return wk__err(WK_ERR_OOM, op, "%s: cannot sort %zu tensor entries", path, cnt);
    for (size_t i = 0; i < cnt; i++) v[i] = &st->t[first + i];
    qsort(v, cnt, sizeof *v, cmp_range);
    uint64_t at = data_start;
    wk_status s = WK_OK;
    for (size_t i = 0; i < cnt && s == WK_OK; i++) {
        const char *name = st->pool + v[i]->name_off;
        if (v[i]->begin < at)
            s = wk__err(WK_ERR_FORMAT, op, "%s: tensor '%.64s' overlaps tensor '%.64s' (data_offsets [%llu, %llu])",
                        path, name, st->pool + v[i - 1]->name_off, (unsigned long long)(v[i]->begin - data_start),
                        (unsigned long long)(v[i]->end - data_start));
        else if (v[i]->begin > at)
            s = wk__err(WK_ERR_FORMAT, op, "%s: %llu unused bytes before tensor '%.64s' (tensors must tile the data area)",
                        path, (unsigned long long)(v[i]->begin - at), name);
        at = v[i]->end;
    }
    if (s == WK_OK && at != file_size)
        s = wk__err(WK_ERR_FORMAT, op, "%s: %llu bytes after the last tensor's data (tensors must tile the data area)",
                    path, (unsigned long long)(file_size - at));
    free(v);
    return s;
}

wk_status wk__st_parse_file(const char *op, wk_safetensors *st, int shard) {
    wk__map *m = st->shards[shard].map;
    const uint8_t *d = wk__map_data(m);
    size_t size = wk__map_size(m);
    const char *path = wk__map_path(m);
    if (size < 8) return wk__err(WK_ERR_FORMAT, op, "%s: %zu bytes cannot hold the 8-byte header length", path, size);
    uint64_t hlen = rd_le64(d);
    if (hlen > WK__ST_MAX_HEADER)
        return wk__err(WK_ERR_FORMAT, op, "%s: header length %llu is above the 100 MB limit", path,
                       (unsigned long long)hlen);
    if (hlen > size - 8)
        return wk__err(WK_ERR_FORMAT, op, "%s: header length %llu runs past the end of the %zu-byte file", path,
                       (unsigned long long)hlen, size);
    const uint64_t data_start = 8 + hlen, data_len = size - data_start;

    wk__json p;
    wk__json_init(&p, d + 8, (size_t)hlen);
    wk_status kind = WK_ERR_FORMAT;
    bool oom = false, seen_meta = false;
    size_t first = st->n;
    const char *k;
    size_t kl;
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "the header must be a JSON object");
    else if (wk__json_object(&p)) {
        while (wk__json_key(&p, &k, &kl)) {
            if (strlen(k) != kl) {
                wk__json_fail(&p, "a tensor name holds a NUL character");
                break;
            }
            if (strcmp(k, "__metadata__") == 0) {
                if (seen_meta) {
                    wk__json_fail(&p, "__metadata__ given twice");
                    break;
                }
                seen_meta = true;
                if (!parse_meta(op, &p, st, &oom)) break;
                continue;
            }
            size_t name_off;
            wk__st_tensor *t;
            if (!wk__st_pool_add(op, st, k, kl, &name_off) || !(t = wk__st_push_tensor(op, st))) {
                oom = true;
                break;
            }
            const char *name = st->pool + name_off; /* stable: the pool grows only between entries */
            entry_in e = {0};
            if (!parse_tensor(&p, name, &e, &kind) || !check_entry(&p, name, &e, data_len)) {
                st->n--;
                break;
            }
            t->name_off = name_off;
            t->dt = e.dt;
            t->shard = shard;
            t->rank = e.rank;
            memcpy(t->shape, e.shape, sizeof e.shape);
            t->begin = data_start + (uint64_t)e.off[0];
            t->end = data_start + (uint64_t)e.off[1];
        }
        wk__json_finish(&p);
    }
    wk__json_free(&p);
    if (oom) return wk_last_status();
    if (p.oom) return wk__err(WK_ERR_OOM, op, "%s: header: %s", path, p.msg);
    if (p.failed) return wk__err(kind, op, "%s: header: %s", path, p.msg);
    return check_tiling(op, st, first, data_start, size, path);
}

const char *wk__st_dtype_name_of(wk_dtype dt) {
    switch (dt) {
    case WK_U8: return "U8";
    case WK_U32: return "U32";
    case WK_I16: return "I16";
    case WK_I32: return "I32";
    case WK_I64: return "I64";
    case WK_BF16: return "BF16";
    case WK_F16: return "F16";
    case WK_F32: return "F32";
    case WK_F64: return "F64";
    case WK_F8E4M3: return "F8_E4M3";
    WK__CASE_BLOCK_DTYPES:
    case WK_DTYPE_COUNT:
        return NULL;
    }
    return NULL;
}
