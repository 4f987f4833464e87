/* wk_safetensors_save: one file from tensors of any layout and device
 * (layout rules in include/wick/safetensors.h). */
#include <errno.h>
#include "wick/safetensors.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/dtype.h"
#include "base/error.h"
#include "tensor/tensor.h"
#include "io/json.h"
#include "io/safetensors_internal.h"

/* The header under construction. */
typedef struct sbuf {
    char *b;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *s, const char *p, size_t n) {
    if (s->oom) return;
    if (s->len + n + 1 > s->cap) {
        size_t c = s->cap ? s->cap : 256;
        while (c < s->len + n + 1) c *= 2;
        char *nb = realloc(s->b, c);
        if (!nb) {
            s->oom = true;
            return;
        }
        s->b = nb;
        s->cap = c;
    }
    memcpy(s->b + s->len, p, n);
    s->len += n;
    s->b[s->len] = '\0';
}

static void sb_printf(sbuf *s, const char *fmt, ...) WK_PRINTF(2, 3);
static void sb_printf(sbuf *s, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof tmp) s->oom = true; /* only numbers go through here */
    else sb_put(s, tmp, (size_t)k);
}

/* A JSON string: quotes, backslashes and control bytes escaped, UTF-8 as is. */
static void sb_string(sbuf *s, const char *str) {
    sb_put(s, "\"", 1);
    for (const char *p = str; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(s, e, 2);
        } else if (c < 0x20) {
            sb_printf(s, "\\u%04x", c);
        } else {
            sb_put(s, p, 1);
        }
    }
    sb_put(s, "\"", 1);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Strings must be UTF-8 and, with unique, distinct as a set. what names them in errors. */
static wk_status check_strings(const char *op, const char *const *v, int n, const char *what, bool names,
                               bool unique) {
    for (int i = 0; i < n; i++) {
        if (!v[i]) return wk__err(WK_ERR_ARG, op, "%s %d is NULL", what, i);
        if (!wk__json_utf8_valid(v[i], strlen(v[i]))) return wk__err(WK_ERR_ARG, op, "%s %d is not UTF-8", what, i);
        if (names && (!v[i][0] || strcmp(v[i], "__metadata__") == 0))
            return wk__err(WK_ERR_ARG, op, "%s %d ('%s') is empty or reserved", what, i, v[i]);
    }
    if (n < 2 || !unique) return WK_OK;
    const char **c = malloc((size_t)n * sizeof *c);
    if (!c) return wk__err(WK_ERR_OOM, op, "cannot check %d %ss", n, what);
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_str);
    wk_status s = WK_OK;
    for (int i = 1; i < n && s == WK_OK; i++)
        if (strcmp(c[i - 1], c[i]) == 0) s = wk__err(WK_ERR_ARG, op, "%s '%.64s' appears twice", what, c[i]);
    free(c);
    return s;
}

/* Write order: wider elements first, then as given (a stable sort). */
typedef struct slot {
    size_t esz;
    int i;
} slot;

static int cmp_slot(const void *a, const void *b) {
    const slot *x = a, *y = b;
    if (x->esz != y->esz) return x->esz > y->esz ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The tensor's row-major bytes to f: straight from the storage when it is a
 * contiguous CPU view, else through one host copy. */
static bool write_tensor(FILE *f, const wk_tensor *t, size_t nbytes, wk_status *st, const char *op) {
    if (!nbytes) return true;
    if (wk_device_kind_of(wk_tensor_device(t)) == WK_DEVICE_CPU && wk_is_contiguous(t)) {
        const uint8_t *p = (const uint8_t *)t->storage->buf + (size_t)t->layout.offset * wk__dtype_elem_bytes(t->dtype);
        return fwrite(p, 1, nbytes, f) == nbytes;
    }
    void *b = malloc(nbytes);
    if (!b) {
        *st = wk__err(WK_ERR_OOM, op, "cannot stage %zu bytes", nbytes);
        return false;
    }
    *st = wk_to_host(t, b, nbytes);
    bool ok = *st == WK_OK && fwrite(b, 1, nbytes, f) == nbytes;
    free(b);
    return ok;
}

static wk_status null_tensor_status(const char *op) {
    wk__err_null_input(op);
    wk_status s = wk_last_status();
    return s != WK_OK ? s : WK_ERR_ARG;
}

wk_status wk_safetensors_save(const char *path, int n, const char *const *names, wk_tensor *const *tensors,
                              int nmeta, const char *const *meta_keys, const char *const *meta_values) {
    const char *op = "wk_safetensors_save";
    if (!path) return wk__err(WK_ERR_ARG, op, "NULL path");
    if (n < 0 || nmeta < 0) return wk__err(WK_ERR_ARG, op, "negative count (%d tensors, %d metadata)", n, nmeta);
    if (n && (!names || !tensors)) return wk__err(WK_ERR_ARG, op, "NULL names or tensors for %d tensors", n);
    if (nmeta && (!meta_keys || !meta_values)) return wk__err(WK_ERR_ARG, op, "NULL metadata arrays");
    for (int i = 0; i < n; i++)
        if (!tensors[i]) return null_tensor_status(op);
    wk_status s = check_strings(op, names, n, "tensor name", true, true);
    if (s == WK_OK) s = check_strings(op, meta_keys, nmeta, "metadata key", false, true);
    if (s == WK_OK) s = check_strings(op, meta_values, nmeta, "metadata value", false, false); /* values may repeat */
    if (s != WK_OK) return s;

    slot *order = malloc((n ? (size_t)n : 1) * sizeof *order);
    size_t *nbytes = malloc((n ? (size_t)n : 1) * sizeof *nbytes);
    sbuf h = {0};
    if (!order || !nbytes) {
        free(order);
        free(nbytes);
        return wk__err(WK_ERR_OOM, op, "cannot plan %d tensors", n);
    }
    for (int i = 0; i < n && s == WK_OK; i++) {
        wk_dtype dt = wk_tensor_dtype(tensors[i]);
        if (!wk__st_dtype_name_of(dt))
            s = wk__err(WK_ERR_DTYPE, op, "tensor '%.64s' is %s: safetensors has no block-quantized dtypes", names[i],
                        wk_dtype_name(dt));
        else if (wk__dtype_bytes_for(op, dt, wk_numel(tensors[i]), &nbytes[i]) == WK_OK)
            order[i] = (slot){wk__dtype_elem_bytes(dt), i};
        else
            s = wk_last_status();
    }
    if (s == WK_OK) {
        qsort(order, (size_t)n, sizeof *order, cmp_slot);
        sb_put(&h, "{", 1);
        if (nmeta) {
            sb_put(&h, "\"__metadata__\":{", 16);
            for (int i = 0; i < nmeta; i++) {
                if (i) sb_put(&h, ",", 1);
                sb_string(&h, meta_keys[i]);
                sb_put(&h, ":", 1);
                sb_string(&h, meta_values[i]);
            }
            sb_put(&h, "}", 1);
        }
        uint64_t at = 0;
        for (int k = 0; k < n; k++) {
            int i = order[k].i;
            const wk_tensor *t = tensors[i];
            if (k || nmeta) sb_put(&h, ",", 1);
            sb_string(&h, names[i]);
            sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", wk__st_dtype_name_of(wk_tensor_dtype(t)));
            for (int d = 0; d < wk_rank(t); d++) sb_printf(&h, d ? ",%lld" : "%lld", (long long)wk_shape(t)[d]);
            sb_printf(&h, "],\"data_offsets\":[%llu,", (unsigned long long)at);
            at += nbytes[i]; /* each fits memory, so the sum fits 64 bits */
            sb_printf(&h, "%llu]}", (unsigned long long)at);
        }
        sb_put(&h, "}", 1);
        while (!h.oom && h.len % 8) sb_put(&h, " ", 1); /* data starts 8-aligned, as the reference pads */
        if (h.oom) s = wk__err(WK_ERR_OOM, op, "cannot build the header");
    }
    if (s == WK_OK) {
        FILE *f = fopen(path, "wb");
        if (!f) {
            s = wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot open '%s' for writing: %s", path,
                        strerror(errno));
        } else {
            uint8_t len8[8];
            for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)h.len >> (8 * i));
            bool ok = fwrite(len8, 1, 8, f) == 8 && fwrite(h.b, 1, h.len, f) == h.len;
            wk_status ts = WK_OK;
            for (int k = 0; k < n && ok; k++) ok = write_tensor(f, tensors[order[k].i], nbytes[order[k].i], &ts, op);
            int e = ok ? 0 : errno;
            if (fclose(f) != 0 && ok) {
                ok = false;
                e = errno;
            }
            if (!ok) {
                remove(path);
                s = ts != WK_OK ? ts : wk__err(WK_ERR_IO, op, "cannot write '%s': %s", path, strerror(e));
            }
        }
    }
    free(h.b);
    free(order);
    free(nbytes);
    return s;
}
