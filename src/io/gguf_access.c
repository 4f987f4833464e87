/* The reader's public getters: typed metadata values, array elements and
 * tensor views, all answered from the parsed index over the map. */
#include <string.h>
#include "wick/gguf.h"
#include "base/error.h"
#include "io/gguf_internal.h"

uint32_t wk_gguf_version(const wk_gguf *g) { return g ? g->version : 0; }
uint32_t wk_gguf_alignment(const wk_gguf *g) { return g ? g->alignment : 0; }
uint64_t wk_gguf_data_offset(const wk_gguf *g) { return g ? g->data_offset : 0; }
uint64_t wk_gguf_file_size(const wk_gguf *g) { return g ? g->size : 0; }
int64_t wk_gguf_kv_count(const wk_gguf *g) { return g ? g->n_kv : 0; }
int64_t wk_gguf_tensor_count(const wk_gguf *g) { return g ? g->n_tensors : 0; }

const char *wk_gguf_key(const wk_gguf *g, int64_t i) { return g && i >= 0 && i < g->n_kv ? g->kv[i].key : NULL; }
int64_t wk_gguf_find_key(const wk_gguf *g, const char *key) { return g ? wk__gguf_kv_lookup(g, key) : -1; }
wk_gguf_type wk_gguf_kv_type(const wk_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_kv ? g->kv[i].type : WK_GGUF_TYPE_COUNT;
}

/* Value i of type want, or NULL with the error recorded under op. */
static const wk__gguf_kv *value(const char *op, const wk_gguf *g, int64_t i, wk_gguf_type want) {
    if (!g) {
        wk__err(WK_ERR_ARG, op, "NULL reader");
        return NULL;
    }
    if (i < 0 || i >= g->n_kv) {
        wk__err(WK_ERR_INDEX, op, "metadata index %lld out of range (%lld entries)", (long long)i, (long long)g->n_kv);
        return NULL;
    }
    const wk__gguf_kv *kv = &g->kv[i];
    if (kv->type != want) {
        wk__err(WK_ERR_DTYPE, op, "'%s' is %s, not %s", kv->key, wk_gguf_type_name(kv->type), wk_gguf_type_name(want));
        return NULL;
    }
    return kv;
}

#define SCALAR_GETTER(NAME, CT, TY)                                                     \
    wk_status wk_gguf_get_##NAME(const wk_gguf *g, int64_t i, CT *out) {                \
        const wk__gguf_kv *kv = value("wk_gguf_get_" #NAME, g, i, TY);                   \
        if (!kv) return wk_last_status();                                                \
        if (!out) return wk__err(WK_ERR_ARG, "wk_gguf_get_" #NAME, "NULL output");      \
        memcpy(out, g->data + kv->off, sizeof *out);                                     \
        return WK_OK;                                                                    \
    }
SCALAR_GETTER(u8, uint8_t, WK_GGUF_U8)
SCALAR_GETTER(i8, int8_t, WK_GGUF_I8)
SCALAR_GETTER(u16, uint16_t, WK_GGUF_U16)
SCALAR_GETTER(i16, int16_t, WK_GGUF_I16)
SCALAR_GETTER(u32, uint32_t, WK_GGUF_U32)
SCALAR_GETTER(i32, int32_t, WK_GGUF_I32)
SCALAR_GETTER(f32, float, WK_GGUF_F32)
SCALAR_GETTER(u64, uint64_t, WK_GGUF_U64)
SCALAR_GETTER(i64, int64_t, WK_GGUF_I64)
SCALAR_GETTER(f64, double, WK_GGUF_F64)

wk_status wk_gguf_get_bool(const wk_gguf *g, int64_t i, bool *out) {
    const wk__gguf_kv *kv = value("wk_gguf_get_bool", g, i, WK_GGUF_BOOL);
    if (!kv) return wk_last_status();
    if (!out) return wk__err(WK_ERR_ARG, "wk_gguf_get_bool", "NULL output");
    *out = g->data[kv->off] != 0; /* 0 or 1, checked at open */
    return WK_OK;
}

wk_status wk_gguf_get_string(const wk_gguf *g, int64_t i, const char **s, uint64_t *len) {
    const wk__gguf_kv *kv = value("wk_gguf_get_string", g, i, WK_GGUF_STRING);
    if (!kv) return wk_last_status();
    if (!s || !len) return wk__err(WK_ERR_ARG, "wk_gguf_get_string", "NULL output");
    *s = (const char *)g->data + kv->off;
    *len = kv->n;
    return WK_OK;
}

wk_status wk_gguf_get_array(const wk_gguf *g, int64_t i, wk_gguf_type *elem_type, uint64_t *n) {
    const wk__gguf_kv *kv = value("wk_gguf_get_array", g, i, WK_GGUF_ARRAY);
    if (!kv) return wk_last_status();
    if (elem_type) *elem_type = kv->elem_type;
    if (n) *n = kv->n;
    return WK_OK;
}

/* Array i with elements of type want, element j in range. */
static const wk__gguf_kv *element(const char *op, const wk_gguf *g, int64_t i, uint64_t j, wk_gguf_type want) {
    const wk__gguf_kv *kv = value(op, g, i, WK_GGUF_ARRAY);
    if (!kv) return NULL;
    if (kv->elem_type != want) {
        wk__err(WK_ERR_DTYPE, op, "'%s' is an array of %s, not %s", kv->key, wk_gguf_type_name(kv->elem_type),
                wk_gguf_type_name(want));
        return NULL;
    }
    if (j >= kv->n) {
        wk__err(WK_ERR_INDEX, op, "element %llu of '%s', which has %llu", (unsigned long long)j, kv->key,
                (unsigned long long)kv->n);
        return NULL;
    }
    return kv;
}

wk_status wk_gguf_array_data(const wk_gguf *g, int64_t i, const void **data, size_t *nbytes) {
    const char *op = "wk_gguf_array_data";
    const wk__gguf_kv *kv = value(op, g, i, WK_GGUF_ARRAY);
    if (!kv) return wk_last_status();
    if (!data || !nbytes) return wk__err(WK_ERR_ARG, op, "NULL output");
    uint32_t esz = wk__gguf_scalar_size(kv->elem_type);
    if (!esz) return wk__err(WK_ERR_DTYPE, op, "'%s' is an array of strings (read them with wk_gguf_array_string)", kv->key);
    *data = g->data + kv->off;
    *nbytes = (size_t)(kv->n * esz); /* inside the map, checked at open */
    return WK_OK;
}

#define ARRAY_GETTER(NAME, CT, TY)                                                             \
    wk_status wk_gguf_array_##NAME(const wk_gguf *g, int64_t i, uint64_t j, CT *out) {         \
        const wk__gguf_kv *kv = element("wk_gguf_array_" #NAME, g, i, j, TY);                  \
        if (!kv) return wk_last_status();                                                      \
        if (!out) return wk__err(WK_ERR_ARG, "wk_gguf_array_" #NAME, "NULL output");          \
        memcpy(out, g->data + kv->off + j * sizeof *out, sizeof *out);                         \
        return WK_OK;                                                                          \
    }
ARRAY_GETTER(u8, uint8_t, WK_GGUF_U8)
ARRAY_GETTER(i8, int8_t, WK_GGUF_I8)
ARRAY_GETTER(u16, uint16_t, WK_GGUF_U16)
ARRAY_GETTER(i16, int16_t, WK_GGUF_I16)
ARRAY_GETTER(u32, uint32_t, WK_GGUF_U32)
ARRAY_GETTER(i32, int32_t, WK_GGUF_I32)
ARRAY_GETTER(f32, float, WK_GGUF_F32)
ARRAY_GETTER(u64, uint64_t, WK_GGUF_U64)
ARRAY_GETTER(i64, int64_t, WK_GGUF_I64)
ARRAY_GETTER(f64, double, WK_GGUF_F64)

wk_status wk_gguf_array_bool(const wk_gguf *g, int64_t i, uint64_t j, bool *out) {
    const wk__gguf_kv *kv = element("wk_gguf_array_bool", g, i, j, WK_GGUF_BOOL);
    if (!kv) return wk_last_status();
    if (!out) return wk__err(WK_ERR_ARG, "wk_gguf_array_bool", "NULL output");
    *out = g->data[kv->off + j] != 0;
    return WK_OK;
}

/* The length field of a string at file offset at (32-bit in v1). */
static uint64_t string_len(const wk_gguf *g, uint64_t at) {
    if (g->len_bytes == 8) {
        uint64_t n;
        memcpy(&n, g->data + at, 8);
        return n;
    }
    uint32_t n32;
    memcpy(&n32, g->data + at, 4);
    return n32;
}

wk_status wk_gguf_array_string(const wk_gguf *g, int64_t i, uint64_t j, const char **s, uint64_t *len) {
    const wk__gguf_kv *kv = element("wk_gguf_array_string", g, i, j, WK_GGUF_STRING);
    if (!kv) return wk_last_status();
    if (!s || !len) return wk__err(WK_ERR_ARG, "wk_gguf_array_string", "NULL output");
    uint64_t slot = j / WK__GGUF_SIDX_STRIDE;
    uint64_t at = kv->off + (kv->sidx64 ? kv->sidx64[slot] : kv->sidx32[slot]);
    /* every length was checked against the file at open */
    for (uint64_t k = slot * WK__GGUF_SIDX_STRIDE; k < j; k++) at += g->len_bytes + string_len(g, at);
    *s = (const char *)g->data + at + g->len_bytes;
    *len = string_len(g, at);
    return WK_OK;
}

/* ---- tensors ---- */

const char *wk_gguf_tensor_name(const wk_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_tensors ? g->tensors[i].name : NULL;
}
int64_t wk_gguf_find_tensor(const wk_gguf *g, const char *name) { return g ? wk__gguf_tensor_lookup(g, name) : -1; }
uint32_t wk_gguf_tensor_ggml_type(const wk_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_tensors ? g->tensors[i].ggml_type : UINT32_MAX;
}
uint64_t wk_gguf_tensor_offset(const wk_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_tensors ? g->tensors[i].off : 0;
}
uint64_t wk_gguf_tensor_nbytes(const wk_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_tensors ? g->tensors[i].nbytes : 0;
}

int wk_gguf_tensor_shape(const wk_gguf *g, int64_t i, int64_t shape[4]) {
    if (!g || i < 0 || i >= g->n_tensors || !shape) return -1;
    const wk__gguf_tensor *t = &g->tensors[i];
    for (int d = 0; d < t->rank; d++) shape[d] = t->ne[t->rank - 1 - d];
    return t->rank;
}

wk_tensor *wk_gguf_tensor_at(const wk_gguf *g, int64_t i) {
    const char *op = "wk_gguf_tensor";
    if (!g) {
        wk__err(WK_ERR_ARG, op, "NULL reader");
        return NULL;
    }
    if (i < 0 || i >= g->n_tensors) {
        wk__err(WK_ERR_INDEX, op, "tensor index %lld out of range (%lld tensors)", (long long)i, (long long)g->n_tensors);
        return NULL;
    }
    const wk__gguf_tensor *t = &g->tensors[i];
    wk_dtype dt;
    if (!wk_ggml_type_to_dtype(t->ggml_type, &dt)) {
        wk__err(WK_ERR_DTYPE, op, "tensor '%s' has ggml type %s (%u), which wick has no dtype for", t->name,
                wk_ggml_type_name(t->ggml_type), t->ggml_type);
        return NULL;
    }
    int64_t shape[WK__GGUF_MAX_DIMS];
    int rank = wk_gguf_tensor_shape(g, i, shape);
    return wk__map_tensor(op, t->name, g->map, t->off, dt, shape, rank);
}

wk_tensor *wk_gguf_tensor(const wk_gguf *g, const char *name) {
    int64_t i = wk_gguf_find_tensor(g, name);
    if (i < 0) {
        wk__err(WK_ERR_ARG, "wk_gguf_tensor", "no tensor named '%s'%s", name ? name : "(null)", g ? "" : " (NULL reader)");
        return NULL;
    }
    return wk_gguf_tensor_at(g, i);
}
