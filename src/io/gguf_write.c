/* GGUF v3 writer. Metadata is serialized as it is added (one growing
 * buffer); tensors are kept as references to their bytes (a contiguous CPU
 * tensor's own storage, else a contiguous CPU copy made when added) and
 * streamed to the file at write time, each at the next multiple of the
 * alignment, so writing a model costs no second copy of its weights. */
#include <stdio.h>
#include "wick/gguf.h"
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "tensor/tensor.h"
#include "io/gguf_internal.h"

#define GGML_MAX_NAME 64 /* ggml reads names shorter than this */

typedef struct wtensor {
    char *name;
    uint32_t ggml_type;
    int n_dims;
    uint64_t ne[WK__GGUF_MAX_DIMS];
    wk_storage *storage; /* one reference, keeps bytes alive */
    const uint8_t *bytes;
    uint64_t nbytes;
} wtensor;

struct wk_gguf_writer {
    uint8_t *kv;         /* serialized key/value pairs */
    size_t kv_len, kv_cap;
    int64_t n_kv;
    char **keys;         /* for the duplicate check */
    size_t keys_cap;
    uint32_t alignment;
    wtensor *tensors;
    int64_t n_tensors;
    size_t tensors_cap;
};

wk_gguf_writer *wk_gguf_writer_new(void) {
    wk_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) {
        wk__err(WK_ERR_OOM, "wk_gguf_writer_new", "cannot allocate a writer");
        return NULL;
    }
    w->alignment = WK__GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void wk_gguf_writer_free(wk_gguf_writer *w) {
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    for (int64_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        wk__storage_release(w->tensors[i].storage);
    }
    free(w->keys);
    free(w->tensors);
    free(w->kv);
    free(w);
}

/* Grow an array to hold at least n items of size sz. */
static bool grow(void **p, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < n) {
        if (c > SIZE_MAX / 2 / sz) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * sz);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static bool put(wk_gguf_writer *w, const void *b, size_t n) {
    if (n > SIZE_MAX - w->kv_len) return false;
    void *p = w->kv;
    if (!grow(&p, &w->kv_cap, w->kv_len + n, 1)) return false;
    w->kv = p;
    if (n) memcpy(w->kv + w->kv_len, b, n);
    w->kv_len += n;
    return true;
}
static bool put_u32(wk_gguf_writer *w, uint32_t v) { return put(w, &v, 4); }
static bool put_u64(wk_gguf_writer *w, uint64_t v) { return put(w, &v, 8); }
static bool put_str(wk_gguf_writer *w, const char *s, uint64_t n) {
    return n <= SIZE_MAX && put_u64(w, n) && put(w, s, (size_t)n);
}

/* The checks every key gets, then its header (key string + type). Returns
 * the buffer length to roll back to, or SIZE_MAX with the error recorded. */
static size_t begin_kv(const char *op, wk_gguf_writer *w, const char *key, wk_gguf_type ty) {
    if (!w || !key) {
        wk__err(WK_ERR_ARG, op, "NULL writer or key");
        return SIZE_MAX;
    }
    size_t n = strlen(key);
    if (!n || !wk__gguf_valid_name((const uint8_t *)key, n)) {
        wk__err(WK_ERR_ARG, op, "key '%s' is empty or not valid UTF-8", key);
        return SIZE_MAX;
    }
    for (int64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key)) {
            wk__err(WK_ERR_ARG, op, "duplicate key '%s'", key);
            return SIZE_MAX;
        }
    if (!strcmp(key, "general.alignment") && ty != WK_GGUF_U32) {
        wk__err(WK_ERR_ARG, op, "general.alignment must be u32, not %s", wk_gguf_type_name(ty));
        return SIZE_MAX;
    }
    size_t mark = w->kv_len;
    if (!put_str(w, key, n) || !put_u32(w, (uint32_t)ty)) {
        w->kv_len = mark;
        wk__err(WK_ERR_OOM, op, "cannot grow the metadata buffer for '%s'", key);
        return SIZE_MAX;
    }
    return mark;
}

/* Commit the pair begun at mark (ok: its value was appended) or roll it back. */
static wk_status end_kv(const char *op, wk_gguf_writer *w, const char *key, size_t mark, bool ok) {
    void *p = w->keys;
    char *copy = ok ? strdup(key) : NULL;
    if (!copy || !grow(&p, &w->keys_cap, (size_t)w->n_kv + 1, sizeof *w->keys)) {
        free(copy);
        w->kv_len = mark;
        return wk__err(WK_ERR_OOM, op, "cannot grow the metadata buffer for '%s'", key);
    }
    w->keys = p;
    w->keys[w->n_kv++] = copy;
    return WK_OK;
}

static wk_status add_scalar(const char *op, wk_gguf_writer *w, const char *key, wk_gguf_type ty, const void *v) {
    size_t mark = begin_kv(op, w, key, ty);
    if (mark == SIZE_MAX) return wk_last_status();
    return end_kv(op, w, key, mark, put(w, v, wk__gguf_scalar_size(ty)));
}

#define SCALAR_ADDER(NAME, CT, TY)                                                    \
    wk_status wk_gguf_writer_add_##NAME(wk_gguf_writer *w, const char *key, CT v) {   \
        return add_scalar("wk_gguf_writer_add_" #NAME, w, key, TY, &v);                \
    }
SCALAR_ADDER(u8, uint8_t, WK_GGUF_U8)
SCALAR_ADDER(i8, int8_t, WK_GGUF_I8)
SCALAR_ADDER(u16, uint16_t, WK_GGUF_U16)
SCALAR_ADDER(i16, int16_t, WK_GGUF_I16)
SCALAR_ADDER(i32, int32_t, WK_GGUF_I32)
SCALAR_ADDER(f32, float, WK_GGUF_F32)
SCALAR_ADDER(u64, uint64_t, WK_GGUF_U64)
SCALAR_ADDER(i64, int64_t, WK_GGUF_I64)
SCALAR_ADDER(f64, double, WK_GGUF_F64)

wk_status wk_gguf_writer_add_u32(wk_gguf_writer *w, const char *key, uint32_t v) {
    const char *op = "wk_gguf_writer_add_u32";
    bool align = key && !strcmp(key, "general.alignment");
    if (align && (!v || (v & (v - 1))))
        return wk__err(WK_ERR_ARG, op, "general.alignment %u is not a power of two", v);
    wk_status st = add_scalar(op, w, key, WK_GGUF_U32, &v);
    if (st == WK_OK && align) w->alignment = v;
    return st;
}

wk_status wk_gguf_writer_add_bool(wk_gguf_writer *w, const char *key, bool v) {
    uint8_t b = v ? 1 : 0;
    return add_scalar("wk_gguf_writer_add_bool", w, key, WK_GGUF_BOOL, &b);
}

wk_status wk_gguf_writer_add_string(wk_gguf_writer *w, const char *key, const char *s, uint64_t len) {
    const char *op = "wk_gguf_writer_add_string";
    if (!s && len) return wk__err(WK_ERR_ARG, op, "NULL string of %llu bytes", (unsigned long long)len);
    size_t mark = begin_kv(op, w, key, WK_GGUF_STRING);
    if (mark == SIZE_MAX) return wk_last_status();
    return end_kv(op, w, key, mark, put_str(w, s, len));
}

wk_status wk_gguf_writer_add_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type, const void *data,
                                   uint64_t n) {
    const char *op = "wk_gguf_writer_add_array";
    uint32_t esz = wk__gguf_scalar_size(elem_type);
    if (!esz)
        return wk__err(WK_ERR_ARG, op, "element type %s is not a numeric scalar (strings: wk_gguf_writer_add_string_array)",
                       wk_gguf_type_name(elem_type));
    if (n > SIZE_MAX / esz || (!data && n)) return wk__err(WK_ERR_ARG, op, "bad array of %llu elements", (unsigned long long)n);
    if (elem_type == WK_GGUF_BOOL)
        for (uint64_t j = 0; j < n; j++)
            if (((const uint8_t *)data)[j] > 1) return wk__err(WK_ERR_ARG, op, "bool element %llu is not 0 or 1", (unsigned long long)j);
    size_t mark = begin_kv(op, w, key, WK_GGUF_ARRAY);
    if (mark == SIZE_MAX) return wk_last_status();
    return end_kv(op, w, key, mark, put_u32(w, (uint32_t)elem_type) && put_u64(w, n) && put(w, data, (size_t)(n * esz)));
}

wk_status wk_gguf_writer_add_string_array(wk_gguf_writer *w, const char *key, const char *const *strs,
                                          const uint64_t *lens, uint64_t n) {
    const char *op = "wk_gguf_writer_add_string_array";
    if (!strs && n) return wk__err(WK_ERR_ARG, op, "NULL strings");
    for (uint64_t j = 0; j < n; j++)
        if (!strs[j] && (!lens || lens[j])) return wk__err(WK_ERR_ARG, op, "string %llu is NULL", (unsigned long long)j);
    size_t mark = begin_kv(op, w, key, WK_GGUF_ARRAY);
    if (mark == SIZE_MAX) return wk_last_status();
    bool ok = put_u32(w, WK_GGUF_STRING) && put_u64(w, n);
    for (uint64_t j = 0; j < n && ok; j++) ok = put_str(w, strs[j], lens ? lens[j] : strlen(strs[j]));
    return end_kv(op, w, key, mark, ok);
}

wk_status wk_gguf_writer_copy_kv(wk_gguf_writer *w, const wk_gguf *g, int64_t i) {
    const char *op = "wk_gguf_writer_copy_kv";
    if (!g || i < 0 || i >= g->n_kv) return wk__err(WK_ERR_INDEX, op, "no metadata entry %lld", (long long)i);
    const wk__gguf_kv *kv = &g->kv[i];
    const uint8_t *v = g->data + kv->off;
    if (kv->type == WK_GGUF_U32) {
        uint32_t x;
        memcpy(&x, v, 4);
        return wk_gguf_writer_add_u32(w, kv->key, x); /* checks general.alignment */
    }
    if (wk__gguf_scalar_size(kv->type)) return add_scalar(op, w, kv->key, kv->type, v);
    if (kv->type == WK_GGUF_STRING) return wk_gguf_writer_add_string(w, kv->key, (const char *)v, kv->n);
    if (kv->elem_type != WK_GGUF_STRING) return wk_gguf_writer_add_array(w, kv->key, kv->elem_type, v, kv->n);
    /* a string array re-encoded with 64-bit lengths (the source may be v1) */
    size_t mark = begin_kv(op, w, kv->key, WK_GGUF_ARRAY);
    if (mark == SIZE_MAX) return wk_last_status();
    bool ok = put_u32(w, WK_GGUF_STRING) && put_u64(w, kv->n);
    for (uint64_t j = 0; j < kv->n && ok; j++) {
        const char *s;
        uint64_t len;
        ok = wk_gguf_array_string(g, i, j, &s, &len) == WK_OK && put_str(w, s, len);
    }
    return end_kv(op, w, kv->key, mark, ok);
}

/* ---- tensors ---- */

/* A contiguous CPU copy of t's bytes (t itself when it already is one), as a
 * storage reference and the view's first byte. */
static wk_status tensor_bytes(const char *op, const wk_tensor *t, wtensor *out) {
    wk_tensor *c = NULL, *h = NULL;
    const wk_tensor *src = t;
    if (wk__dev(t)->kind != WK_DEVICE_CPU || !wk_is_contiguous(t)) {
        c = wk_contiguous(t);
        h = c && wk__dev(c)->kind != WK_DEVICE_CPU ? wk_to_device(c, wk_cpu()) : NULL;
        src = h ? h : c;
        if (!src || wk__dev(src)->kind != WK_DEVICE_CPU) {
            wk_tensor_free(c);
            wk_tensor_free(h);
            return wk__err_pending() ? wk_last_status()
                                     : wk__err(WK_ERR_DEVICE, op, "cannot bring the tensor's bytes to the host");
        }
    }
    const wk_dtype_info *di = wk_dtype_info_of(src->dtype);
    size_t start, nbytes;
    wk_status st = wk__dtype_bytes_for(op, src->dtype, src->layout.offset, &start);
    if (st == WK_OK) st = wk__dtype_bytes_for(op, src->dtype, wk_numel(src), &nbytes);
    if (st == WK_OK && (!di || start > src->storage->nbytes || nbytes > src->storage->nbytes - start))
        st = wk__err(WK_ERR_ARG, op, "the view's bytes lie outside its storage");
    if (st == WK_OK) {
        out->storage = src->storage;
        atomic_fetch_add_explicit(&src->storage->refs, 1, memory_order_relaxed);
        out->bytes = (const uint8_t *)src->storage->buf + start;
        out->nbytes = nbytes;
    }
    wk_tensor_free(c);
    wk_tensor_free(h);
    return st;
}

wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, const wk_tensor *t) {
    const char *op = "wk_gguf_writer_add_tensor";
    if (!w || !name) return wk__err(WK_ERR_ARG, op, "NULL writer or name");
    if (!t) {
        wk__err_null_input(op);
        return wk_last_status();
    }
    size_t n = strlen(name);
    if (!n || n >= GGML_MAX_NAME || !wk__gguf_valid_name((const uint8_t *)name, n))
        return wk__err(WK_ERR_ARG, op, "tensor name '%s' is empty, not valid UTF-8 or not under %d bytes", name,
                       GGML_MAX_NAME);
    for (int64_t i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name)) return wk__err(WK_ERR_ARG, op, "duplicate tensor name '%s'", name);
    uint32_t ty;
    if (!wk_dtype_to_ggml_type(t->dtype, &ty))
        return wk__err(WK_ERR_DTYPE, op, "'%s': ggml has no type for dtype %s", name, wk_dtype_name(t->dtype));
    int rank = t->layout.rank;
    if (rank > WK__GGUF_MAX_DIMS)
        return wk__err(WK_ERR_SHAPE, op, "'%s' has rank %d (GGUF holds at most %d dims)", name, rank, WK__GGUF_MAX_DIMS);
    wtensor e = {0};
    e.ggml_type = ty;
    e.n_dims = rank ? rank : 1; /* a scalar is written as one element */
    e.ne[0] = 1;
    for (int d = 0; d < rank; d++) e.ne[d] = (uint64_t)t->layout.shape[rank - 1 - d];
    void *p = w->tensors;
    if (!grow(&p, &w->tensors_cap, (size_t)w->n_tensors + 1, sizeof *w->tensors))
        return wk__err(WK_ERR_OOM, op, "cannot grow the tensor list");
    w->tensors = p;
    if (!(e.name = strdup(name))) return wk__err(WK_ERR_OOM, op, "cannot copy the name '%s'", name);
    if (tensor_bytes(op, t, &e) != WK_OK) {
        free(e.name);
        return wk_last_status();
    }
    w->tensors[w->n_tensors++] = e;
    return WK_OK;
}

/* ---- the file ---- */

static uint64_t pad_to(uint64_t x, uint32_t a) { return (a - x % a) % a; }

static bool fput(FILE *f, const void *b, size_t n) { return !n || fwrite(b, 1, n, f) == n; }
static bool fput_u32(FILE *f, uint32_t v) { return fput(f, &v, 4); }
static bool fput_u64(FILE *f, uint64_t v) { return fput(f, &v, 8); }
static bool fput_zeros(FILE *f, uint64_t n) {
    static const uint8_t z[256];
    for (; n; n -= n < sizeof z ? n : sizeof z)
        if (!fput(f, z, n < sizeof z ? n : sizeof z)) return false;
    return true;
}

wk_status wk_gguf_writer_write(wk_gguf_writer *w, const char *path) {
    const char *op = "wk_gguf_writer_write";
    if (!w || !path) return wk__err(WK_ERR_ARG, op, "NULL writer or path");
    FILE *f = fopen(path, "wb");
    if (!f) /* fopen allocates its stream: ENOMEM is an allocation failure */
        return wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot create %s: %s", path, strerror(errno));
    bool ok = fput(f, "GGUF", 4) && fput_u32(f, 3) && fput_u64(f, (uint64_t)w->n_tensors) &&
              fput_u64(f, (uint64_t)w->n_kv) && fput(f, w->kv, w->kv_len);
    uint64_t pos = 4 + 4 + 8 + 8 + w->kv_len, data = 0;
    for (int64_t i = 0; i < w->n_tensors && ok; i++) {
        const wtensor *t = &w->tensors[i];
        uint64_t nl = strlen(t->name);
        ok = fput_u64(f, nl) && fput(f, t->name, nl) && fput_u32(f, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims && ok; d++) ok = fput_u64(f, t->ne[d]);
        ok = ok && fput_u32(f, t->ggml_type) && fput_u64(f, data);
        pos += 8 + nl + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
        data += t->nbytes + pad_to(t->nbytes, w->alignment);
    }
    ok = ok && fput_zeros(f, pad_to(pos, w->alignment));
    for (int64_t i = 0; i < w->n_tensors && ok; i++) {
        const wtensor *t = &w->tensors[i];
        ok = fput(f, t->bytes, (size_t)t->nbytes) && fput_zeros(f, pad_to(t->nbytes, w->alignment));
    }
    ok = !ferror(f) && ok;
    if (fclose(f) != 0) ok = false;
    if (!ok) {
        unlink(path);
        return wk__err(WK_ERR_IO, op, "cannot write %s", path);
    }
    return WK_OK;
}
