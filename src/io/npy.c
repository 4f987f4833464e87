/* .npy reading and writing.
 *
 * Format (numpy/lib/format.py): "\x93NUMPY", major, minor, a little-endian
 * header length (u16 for 1.0, u32 for 2.0 and 3.0), then a Python dict literal
 * such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
 * with spaces and a newline, then the raw data.
 *
 * Nothing read from a file is trusted: the header length is checked against
 * the bytes that exist, the rank against WK_MAX_RANK, every dim and the
 * element and byte counts against overflow, and the data size against the
 * bytes that follow the header, all before anything is allocated. */
#include "io/npy_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/dtype.h"
#include "base/error.h"

static const uint8_t NPY_MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static bool host_is_le(void) {
    const uint16_t x = 1;
    uint8_t b;
    memcpy(&b, &x, 1);
    return b == 1;
}

/* ------------------------------------------------------------ dtype table */

typedef struct npy_type {
    const char *code;   /* without the byte-order character */
    wk_dtype    dt;
    size_t      size;
} npy_type;

static const npy_type NPY_TYPES[] = {
    {"u1", WK_U8, 1},  {"b1", WK_U8, 1},  {"u4", WK_U32, 4}, {"i2", WK_I16, 2},
    {"i4", WK_I32, 4}, {"i8", WK_I64, 8}, {"f2", WK_F16, 2}, {"f4", WK_F32, 4},
    {"f8", WK_F64, 8},
};

const char *wk__npy_descr(wk_dtype dt) {
    switch (dt) {
    case WK_U8:  return "|u1";
    case WK_U32: return "<u4";
    case WK_I16: return "<i2";
    case WK_I32: return "<i4";
    case WK_I64: return "<i8";
    case WK_F16: return "<f2";
    case WK_F32: return "<f4";
    case WK_F64: return "<f8";
    default:     return NULL;
    }
}

/* descr -> dtype; false if unsupported. */
static bool descr_lookup(const char *d, wk_dtype *dt, size_t *size, bool *swap) {
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') return false;
    for (size_t i = 0; i < sizeof NPY_TYPES / sizeof NPY_TYPES[0]; i++) {
        if (strcmp(d + 1, NPY_TYPES[i].code) == 0) {
            *dt = NPY_TYPES[i].dt;
            *size = NPY_TYPES[i].size;
            bool file_le = order == '<' || ((order == '|' || order == '=') && host_is_le());
            *swap = NPY_TYPES[i].size > 1 && file_le != host_is_le();
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------- header dict parse */

typedef struct lexer {
    const char *s;
    size_t      n, i;
} lexer;

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void skip_ws(lexer *L) {
    while (L->i < L->n && is_space(L->s[L->i])) L->i++;
}

static int peek(const lexer *L) { return L->i < L->n ? (unsigned char)L->s[L->i] : -1; }

/* A quoted string ('...' or "...", no escapes) into out (cap bytes with NUL). */
static bool lex_string(lexer *L, char *out, size_t cap) {
    int q = peek(L);
    if (q != '\'' && q != '"') return false;
    size_t start = ++L->i;
    while (L->i < L->n && L->s[L->i] != (char)q) {
        char c = L->s[L->i];
        if (c == '\\' || c == '\0' || c == '\n') return false;
        L->i++;
    }
    if (L->i >= L->n) return false;
    size_t len = L->i - start;
    L->i++; /* closing quote */
    if (len >= cap) return false;
    memcpy(out, L->s + start, len);
    out[len] = '\0';
    return true;
}

static bool lex_ident(lexer *L, char *out, size_t cap) {
    size_t start = L->i;
    while (L->i < L->n) {
        char c = L->s[L->i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) break;
        L->i++;
    }
    size_t len = L->i - start;
    if (len == 0 || len >= cap) return false;
    memcpy(out, L->s + start, len);
    out[len] = '\0';
    return true;
}

#define HDR_FAIL(...) return wk__err(WK_ERR_FORMAT, op, __VA_ARGS__)

/* (d0, d1, ...) with optional trailing comma; "L" suffixes (Python 2) allowed. */
static wk_status lex_shape(lexer *L, wk__npy_info *info, const char *op, const char *what) {
    if (peek(L) != '(') HDR_FAIL("%s: header: 'shape' is not a tuple", what);
    L->i++;
    int rank = 0;
    for (;;) {
        skip_ws(L);
        int c = peek(L);
        if (c == ')') { L->i++; break; }
        if (c == '-') HDR_FAIL("%s: header: negative dimension in 'shape'", what);
        if (c < '0' || c > '9') HDR_FAIL("%s: header: bad 'shape' tuple at offset %zu", what, L->i);
        uint64_t v = 0;
        while ((c = peek(L)) >= '0' && c <= '9') {
            uint64_t digit = (uint64_t)(c - '0');
            if (v > ((uint64_t)INT64_MAX - digit) / 10)
                HDR_FAIL("%s: header: dimension in 'shape' is too large", what);
            v = v * 10 + digit;
            L->i++;
        }
        if (peek(L) == 'L' || peek(L) == 'l') L->i++;
        if (rank >= WK_MAX_RANK)
            HDR_FAIL("%s: header: 'shape' has more than WK_MAX_RANK (%d) dimensions", what, WK_MAX_RANK);
        info->shape[rank++] = (int64_t)v;
        skip_ws(L);
        c = peek(L);
        if (c == ',') { L->i++; continue; }
        if (c == ')') { L->i++; break; }
        HDR_FAIL("%s: header: bad 'shape' tuple at offset %zu", what, L->i);
    }
    info->rank = rank;
    return WK_OK;
}

static wk_status parse_dict(const char *s, size_t n, wk__npy_info *info, const char *op, const char *what) {
    lexer L = {s, n, 0};
    bool have_descr = false, have_fortran = false, have_shape = false;
    char descr[32];
    skip_ws(&L);
    if (peek(&L) != '{') HDR_FAIL("%s: header is not a Python dict", what);
    L.i++;
    for (;;) {
        skip_ws(&L);
        if (peek(&L) == '}') { L.i++; break; }
        char key[32];
        if (!lex_string(&L, key, sizeof key)) HDR_FAIL("%s: header: expected a quoted key at offset %zu", what, L.i);
        skip_ws(&L);
        if (peek(&L) != ':') HDR_FAIL("%s: header: expected ':' at offset %zu", what, L.i);
        L.i++;
        skip_ws(&L);
        if (strcmp(key, "descr") == 0) {
            if (have_descr) HDR_FAIL("%s: header: duplicate key 'descr'", what);
            have_descr = true;
            if (peek(&L) != '\'' && peek(&L) != '"')
                HDR_FAIL("%s: unsupported dtype (structured or not a string descr)", what);
            if (!lex_string(&L, descr, sizeof descr)) HDR_FAIL("%s: header: bad 'descr' string", what);
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_fortran) HDR_FAIL("%s: header: duplicate key 'fortran_order'", what);
            have_fortran = true;
            char id[8];
            if (!lex_ident(&L, id, sizeof id)) HDR_FAIL("%s: header: 'fortran_order' is not True/False", what);
            if (strcmp(id, "True") == 0) info->fortran = true;
            else if (strcmp(id, "False") == 0) info->fortran = false;
            else HDR_FAIL("%s: header: 'fortran_order' is not True/False", what);
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape) HDR_FAIL("%s: header: duplicate key 'shape'", what);
            have_shape = true;
            wk_status st = lex_shape(&L, info, op, what);
            if (st != WK_OK) return st;
        } else {
            HDR_FAIL("%s: header: unexpected key '%s'", what, key);
        }
        skip_ws(&L);
        int c = peek(&L);
        if (c == ',') { L.i++; continue; }
        if (c == '}') { L.i++; break; }
        HDR_FAIL("%s: header: expected ',' or '}' at offset %zu", what, L.i);
    }
    /* Padding after the dict: whitespace (and NULs some writers leave). */
    for (; L.i < L.n; L.i++)
        if (!is_space(L.s[L.i]) && L.s[L.i] != '\0') HDR_FAIL("%s: header: junk after the dict", what);
    if (!have_descr || !have_fortran || !have_shape)
        HDR_FAIL("%s: header lacks '%s'", what, !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
    if (!descr_lookup(descr, &info->dtype, &info->itemsize, &info->swap)) {
        if (strcmp(descr + (descr[0] ? 1 : 0), "u8") == 0)
            HDR_FAIL("%s: unsupported dtype '%s' (uint64 has no wick dtype)", what, descr);
        HDR_FAIL("%s: unsupported dtype '%s'", what, descr);
    }
    /* Element count: the product of the non-zero dims must stay within
     * WK_NPY_MAX_ELEMS (so strides and byte offsets computed from the shape
     * cannot overflow), even when a zero dim makes the array empty. */
    uint64_t prod = 1;
    bool empty = false;
    for (int d = 0; d < info->rank; d++) {
        uint64_t v = (uint64_t)info->shape[d];
        if (v == 0) { empty = true; continue; }
        if (prod > WK_NPY_MAX_ELEMS / v) HDR_FAIL("%s: shape has too many elements", what);
        prod *= v;
    }
    info->numel = empty ? 0 : prod;
    if (info->numel > (uint64_t)INT64_MAX / info->itemsize || info->numel * info->itemsize > (uint64_t)SIZE_MAX)
        HDR_FAIL("%s: array is too large (%llu elements)", what, (unsigned long long)info->numel);
    info->nbytes = info->numel * info->itemsize;
    return WK_OK;
}

/* ------------------------------------------------------------- preamble */

wk_status wk__npy_preamble_size(const uint8_t *p, size_t len, size_t *out, const char *op, const char *what) {
    if (len < 10) HDR_FAIL("%s: too short for an .npy file (%zu bytes)", what, len);
    if (memcmp(p, NPY_MAGIC, sizeof NPY_MAGIC) != 0) HDR_FAIL("%s: not an .npy file (bad magic)", what);
    uint8_t major = p[6], minor = p[7];
    if (major < 1 || major > 3 || minor != 0)
        HDR_FAIL("%s: unsupported .npy format version %u.%u", what, major, minor);
    uint64_t hlen, pre;
    if (major == 1) {
        hlen = wk__rd16(p + 8);
        pre = 10;
    } else {
        if (len < 12) HDR_FAIL("%s: too short for an .npy %u.0 file (%zu bytes)", what, major, len);
        hlen = wk__rd32(p + 8);
        pre = 12;
    }
    if (hlen > WK_NPY_MAX_HEADER) HDR_FAIL("%s: .npy header too large (%llu bytes)", what, (unsigned long long)hlen);
    *out = (size_t)(pre + hlen);
    return WK_OK;
}

wk_status wk__npy_parse_header(const uint8_t *p, size_t len, wk__npy_info *info, const char *op, const char *what) {
    memset(info, 0, sizeof *info);
    size_t total = 0;
    wk_status st = wk__npy_preamble_size(p, len, &total, op, what);
    if (st != WK_OK) return st;
    if (total > len)
        HDR_FAIL("%s: header length (%zu) runs past the end of the data (%zu bytes)", what, total, len);
    size_t pre = p[6] == 1 ? 10 : 12;
    st = parse_dict((const char *)p + pre, total - pre, info, op, what);
    if (st != WK_OK) return st;
    info->data_offset = total;
    return WK_OK;
}

/* ---------------------------------------------------------- making tensors */

static void byteswap(uint8_t *b, uint64_t numel, size_t isz) {
    for (uint64_t i = 0; i < numel; i++, b += isz)
        for (size_t j = 0; j < isz / 2; j++) {
            uint8_t t = b[j];
            b[j] = b[isz - 1 - j];
            b[isz - 1 - j] = t;
        }
}

/* Column-major src -> row-major dst, same shape. */
static void fortran_to_c(const uint8_t *src, uint8_t *dst, const int64_t *shape, int rank, size_t isz,
                         uint64_t numel) {
    int64_t sst[WK_MAX_RANK], idx[WK_MAX_RANK];
    int64_t s = 1;
    for (int k = 0; k < rank; k++) {
        sst[k] = s;
        s *= shape[k];
        idx[k] = 0;
    }
    int64_t off = 0;
    for (uint64_t n = 0; n < numel; n++) {
        memcpy(dst + n * isz, src + (uint64_t)off * isz, isz);
        for (int k = rank - 1; k >= 0; k--) {
            off += sst[k];
            if (++idx[k] < shape[k]) break;
            off -= sst[k] * shape[k];
            idx[k] = 0;
        }
    }
}

wk_tensor *wk__npy_make_tensor(const wk__npy_info *info, uint8_t *data, bool owned, wk_device *dev,
                               const char *op, const char *what) {
    uint8_t *buf = data;
    bool buf_owned = owned;
    size_t nbytes = (size_t)info->nbytes;
    if (info->fortran && info->rank >= 2 && info->numel > 1) {
        uint8_t *t = malloc(nbytes);
        if (!t) {
            if (buf_owned) free(buf);
            wk__err(WK_ERR_OOM, op, "%s: cannot allocate %zu bytes", what, nbytes);
            return NULL;
        }
        fortran_to_c(buf, t, info->shape, info->rank, info->itemsize, info->numel);
        if (buf_owned) free(buf);
        buf = t;
        buf_owned = true;
    }
    if (info->swap && info->numel > 0) {
        if (!buf_owned) {
            uint8_t *t = malloc(nbytes);
            if (!t) {
                wk__err(WK_ERR_OOM, op, "%s: cannot allocate %zu bytes", what, nbytes);
                return NULL;
            }
            memcpy(t, buf, nbytes);
            buf = t;
            buf_owned = true;
        }
        byteswap(buf, info->numel, info->itemsize);
    }
    uint8_t dummy = 0;
    const void *src = nbytes ? (const void *)buf : (const void *)&dummy;
    wk_tensor *t = wk_from_host(src, nbytes, info->shape, info->rank, info->dtype, dev);
    if (buf_owned) free(buf);
    return t;
}

wk_tensor *wk__npy_from_bytes(const void *data, size_t len, wk_device *dev, const char *op, const char *what) {
    if (!dev) {
        wk__err(WK_ERR_ARG, op, "NULL device");
        return NULL;
    }
    if (!data && len) {
        wk__err(WK_ERR_ARG, op, "data is NULL");
        return NULL;
    }
    static const uint8_t empty = 0;
    const uint8_t *p = data ? (const uint8_t *)data : &empty;
    wk__npy_info info;
    if (wk__npy_parse_header(p, len, &info, op, what) != WK_OK) return NULL;
    if (info.nbytes > len - info.data_offset) {
        wk__err(WK_ERR_FORMAT, op, "%s: data truncated: the header promises %llu bytes, %zu follow it", what,
                (unsigned long long)info.nbytes, len - info.data_offset);
        return NULL;
    }
    return wk__npy_make_tensor(&info, (uint8_t *)(p + info.data_offset), false, dev, op, what);
}

wk_tensor *wk_npy_load_bytes(const void *data, size_t len, wk_device *dev) {
    return wk__npy_from_bytes(data, len, dev, "wk_npy_load_bytes", "<memory>");
}

/* ----------------------------------------------------------------- files */

/* Open path for reading and stat it; a directory is WK_ERR_IO. */
static FILE *open_read(const char *path, struct stat *st, const char *op) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), st) != 0) {
        wk__err(WK_ERR_IO, op, "cannot stat '%s': %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    if (S_ISDIR(st->st_mode)) {
        wk__err(WK_ERR_IO, op, "cannot read '%s': %s", path, strerror(EISDIR));
        fclose(f);
        return NULL;
    }
    return f;
}

wk_status wk__read_file(const char *path, uint8_t **out, size_t *out_len, const char *op) {
    *out = NULL;
    *out_len = 0;
    struct stat st;
    FILE *f = open_read(path, &st, op);
    if (!f) return wk_last_status();
    if (!S_ISREG(st.st_mode)) {
        fclose(f);
        return wk__err(WK_ERR_IO, op, "'%s' is not a regular file (a zip archive needs random access)", path);
    }
    if ((uint64_t)st.st_size >= (uint64_t)SIZE_MAX) {
        fclose(f);
        return wk__err(WK_ERR_IO, op, "'%s' is too large to read", path);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        fclose(f);
        return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes to read '%s'", size, path);
    }
    /* A file that shrank since fstat gives what is there. */
    size_t len = fread(buf, 1, size, f);
    if (len < size && ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        return wk__err(WK_ERR_IO, op, "cannot read '%s': %s", path, strerror(e));
    }
    fclose(f);
    *out = buf;
    *out_len = len;
    return WK_OK;
}

/* fread exactly n bytes; WK_ERR_IO on a read error, WK_ERR_FORMAT on EOF. */
static wk_status read_exact(FILE *f, void *buf, size_t n, const char *path, const char *op) {
    if (n == 0) return WK_OK;
    size_t got = fread(buf, 1, n, f);
    if (got == n) return WK_OK;
    if (ferror(f)) return wk__err(WK_ERR_IO, op, "cannot read '%s': %s", path, strerror(errno));
    return wk__err(WK_ERR_FORMAT, op, "%s: unexpected end of file", path);
}

/* Read n bytes from a stream of unknown length (a pipe): the buffer grows
 * with what really arrives, so a lying header cannot make us allocate more
 * than about twice the data sent. */
static wk_status read_stream(FILE *f, uint8_t **out, size_t n, const char *path, const char *op) {
    size_t cap = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20), have = 0;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes", cap);
    while (have < n) {
        if (have == cap) {
            size_t nc = cap > n / 2 ? n : cap * 2;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes", nc);
            }
            buf = nb;
            cap = nc;
        }
        wk_status st = read_exact(f, buf + have, cap - have, path, op);
        if (st != WK_OK) {
            free(buf);
            return st;
        }
        have = cap;
    }
    *out = buf;
    return WK_OK;
}

wk_tensor *wk_npy_load(const char *path, wk_device *dev) {
    const char *op = "wk_npy_load";
    if (!path || !dev) {
        wk__err(WK_ERR_ARG, op, "%s is NULL", !path ? "path" : "device");
        return NULL;
    }
    struct stat st;
    FILE *f = open_read(path, &st, op);
    if (!f) return NULL;
    /* Regular files are checked against their size before anything is
     * allocated; other files (pipes, devices) are read as the data comes. */
    bool regular = S_ISREG(st.st_mode);
    uint64_t fsize = regular ? (uint64_t)st.st_size : UINT64_MAX;
    uint8_t head[12];
    size_t have = fsize < 10 ? (size_t)fsize : 10;
    size_t pre = 0;
    uint8_t *hdr = NULL, *data = NULL;
    wk__npy_info info;
    have = fread(head, 1, have, f);
    if (ferror(f)) {
        wk__err(WK_ERR_IO, op, "cannot read '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (have == 10 && head[6] >= 2 && fsize >= 12) {
        if (read_exact(f, head + 10, 2, path, op) != WK_OK) goto fail;
        have = 12;
    }
    if (wk__npy_preamble_size(head, have, &pre, op, path) != WK_OK) goto fail;
    if (pre > fsize) {
        wk__err(WK_ERR_FORMAT, op, "%s: header length (%zu) runs past the end of the file (%llu bytes)", path, pre,
                (unsigned long long)fsize);
        goto fail;
    }
    hdr = malloc(pre); /* at most 12 + WK_NPY_MAX_HEADER */
    if (!hdr) {
        wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes", pre);
        goto fail;
    }
    memcpy(hdr, head, have);
    if (read_exact(f, hdr + have, pre - have, path, op) != WK_OK) goto fail;
    if (wk__npy_parse_header(hdr, pre, &info, op, path) != WK_OK) goto fail;
    free(hdr);
    hdr = NULL;
    if (info.nbytes > fsize - pre) {
        wk__err(WK_ERR_FORMAT, op, "%s: data truncated: the header promises %llu bytes, %llu follow it", path,
                (unsigned long long)info.nbytes, (unsigned long long)(fsize - pre));
        goto fail;
    }
    if (regular) {
        data = malloc(info.nbytes ? (size_t)info.nbytes : 1);
        if (!data) {
            wk__err(WK_ERR_OOM, op, "cannot allocate %llu bytes", (unsigned long long)info.nbytes);
            goto fail;
        }
        if (read_exact(f, data, (size_t)info.nbytes, path, op) != WK_OK) goto fail;
    } else if (read_stream(f, &data, (size_t)info.nbytes, path, op) != WK_OK) {
        goto fail;
    }
    fclose(f);
    return wk__npy_make_tensor(&info, data, true, dev, op, path);
fail:
    free(hdr);
    free(data);
    fclose(f);
    return NULL;
}

/* ---------------------------------------------------------------- saving */

wk_status wk__npy_preamble(const wk_tensor *t, uint8_t **out, size_t *out_len, const char *op) {
    *out = NULL;
    *out_len = 0;
    wk_dtype dt = wk_tensor_dtype(t);
    const char *descr = wk__npy_descr(dt);
    if (!descr)
        return wk__err(WK_ERR_DTYPE, op,
                       "dtype %s cannot be stored in .npy (numpy has no such dtype); convert it first, "
                       "e.g. wk_to_dtype(t, WK_F32)",
                       wk_dtype_name(dt));
    int rank = wk_rank(t);
    const int64_t *shape = wk_shape(t);
    if (rank < 0 || rank > WK_MAX_RANK || (rank > 0 && !shape))
        return wk__err(WK_ERR_INTERNAL, op, "tensor has an invalid rank %d", rank);
    char shp[WK_MAX_RANK * 24 + 4];
    size_t sl = 0;
    shp[0] = '\0';
    for (int d = 0; d < rank; d++)
        sl += (size_t)snprintf(shp + sl, sizeof shp - sl, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (rank == 1) snprintf(shp + sl, sizeof shp - sl, ",");
    char dict[sizeof shp + 96];
    int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shp);
    if (dl < 0 || (size_t)dl >= sizeof dict) return wk__err(WK_ERR_INTERNAL, op, "header does not fit");
    /* Pad with spaces and a final newline so the data starts 64-byte aligned. */
    size_t pre = 10, total = pre + (size_t)dl + 1;
    if (total - pre > 65535) {
        pre = 12;
        total = pre + (size_t)dl + 1;
    }
    total = (total + 63) / 64 * 64;
    uint8_t *b = malloc(total);
    if (!b) return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes", total);
    memcpy(b, NPY_MAGIC, sizeof NPY_MAGIC);
    b[6] = pre == 10 ? 1 : 2;
    b[7] = 0;
    if (pre == 10) wk__wr16(b + 8, (uint16_t)(total - pre));
    else wk__wr32(b + 8, (uint32_t)(total - pre));
    memcpy(b + pre, dict, (size_t)dl);
    memset(b + pre + dl, ' ', total - pre - (size_t)dl - 1);
    b[total - 1] = '\n';
    *out = b;
    *out_len = total;
    return WK_OK;
}

wk_status wk__npy_tensor_bytes(const wk_tensor *t, uint8_t **out, size_t *out_len, const char *op) {
    *out = NULL;
    *out_len = 0;
    int64_t numel = wk_numel(t);
    size_t n, isz = wk__dtype_elem_bytes(wk_tensor_dtype(t)); /* npy dtypes are element dtypes */
    if (wk__dtype_bytes_for(op, wk_tensor_dtype(t), numel, &n) != WK_OK) return wk_last_status();
    uint8_t *b = malloc(n ? n : 1);
    if (!b) return wk__err(WK_ERR_OOM, op, "cannot allocate %zu bytes", n);
    if (n) {
        wk_status st = wk_to_host(t, b, n);
        if (st != WK_OK) {
            free(b);
            return st;
        }
        if (!host_is_le() && isz > 1) byteswap(b, (uint64_t)numel, isz);
    }
    *out = b;
    *out_len = n;
    return WK_OK;
}

static wk_status null_tensor_status(const char *op) {
    wk__err_null_input(op);
    wk_status s = wk_last_status();
    return s != WK_OK ? s : WK_ERR_ARG;
}

wk_status wk_npy_save(const char *path, const wk_tensor *t) {
    const char *op = "wk_npy_save";
    if (!path) return wk__err(WK_ERR_ARG, op, "path is NULL");
    if (!t) return null_tensor_status(op);
    uint8_t *pre = NULL, *data = NULL;
    size_t pre_len = 0, data_len = 0;
    wk_status st = wk__npy_preamble(t, &pre, &pre_len, op);
    if (st != WK_OK) return st;
    st = wk__npy_tensor_bytes(t, &data, &data_len, op);
    if (st != WK_OK) {
        free(pre);
        return st;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        st = wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot open '%s' for writing: %s", path,
                     strerror(errno));
    } else {
        bool ok = fwrite(pre, 1, pre_len, f) == pre_len && (data_len == 0 || fwrite(data, 1, data_len, f) == data_len);
        int e = ok ? 0 : errno;
        if (fclose(f) != 0 && ok) {
            ok = false;
            e = errno;
        }
        if (!ok) {
            remove(path);
            st = wk__err(WK_ERR_IO, op, "cannot write '%s': %s", path, strerror(e));
        }
    }
    free(pre);
    free(data);
    return st;
}
