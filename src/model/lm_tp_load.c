/* Cutting a weight to this rank's tensor-parallel share at load, reading
 * only the share's bytes: row ranges (column-parallel q/k/v, gate/up, the
 * vocabulary) are contiguous in the file, so a view of the map touches
 * only their pages; a column range (row-parallel o and down) is a part of
 * every row, so it is read row by row with pread into the rank's own
 * buffer rather than through the map (whose pages would hold the other
 * ranks' columns too). */
#include "model/lm_tp.h"
#include "base/error.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *OP = "wk_lm_load";

static void release_free(void *ctx, void *data, size_t nbytes) {
    (void)ctx, (void)nbytes;
    free(data);
}

/* The file and offset holding name's bytes; false when it lives in memory
 * (a reader opened from bytes: the map is no file). */
static bool file_of(const wk__lm_tp_file *f, const char *name, const char **path, uint64_t *off) {
    if (f->g) {
        int64_t i = wk_gguf_find_tensor(f->g, name);
        if (i < 0 || !f->path) return false;
        *path = f->path;
        *off = wk_gguf_tensor_offset(f->g, i);
        return true;
    }
    if (!f->st) return false;
    int i = wk_safetensors_find(f->st, name);
    wk_safetensors_info info;
    if (i < 0 || wk_safetensors_info_at(f->st, i, &info) != WK_OK) return false;
    const char *p = wk_safetensors_shard_path(f->st, info.shard);
    if (!p || !strcmp(p, "<memory>")) return false;
    *path = p;
    *off = info.offset;
    return true;
}

/* Columns [lo, lo + n) of the (N, K) tensor name: n elements of every row,
 * pread from the file. */
static wk_tensor *read_cols(const char *path, uint64_t base, const char *name, wk_dtype dt, int64_t N, int64_t K,
                            int64_t lo, int64_t n) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    size_t row = (size_t)(K / di->block_elems) * di->block_bytes;
    size_t skip = (size_t)(lo / di->block_elems) * di->block_bytes;
    size_t take = (size_t)(n / di->block_elems) * di->block_bytes;
    size_t total = take * (size_t)N, cap = (total + 63) / 64 * 64;
    uint8_t *buf = aligned_alloc(64, cap ? cap : 64);
    if (!buf) {
        wk__err(WK_ERR_OOM, OP, "%s: cannot allocate %zu bytes for this rank's columns", name, total);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        wk__err(WK_ERR_IO, OP, "cannot open %s: %s", path, strerror(errno));
        free(buf);
        return NULL;
    }
    for (int64_t r = 0; r < N; r++) {
        size_t got = 0;
        off_t at = (off_t)(base + (uint64_t)r * row + skip);
        while (got < take) {
            ssize_t k = pread(fd, buf + (size_t)r * take + got, take - got, at + (off_t)got);
            if (k <= 0) {
                wk__err(WK_ERR_IO, OP, "%s: reading tensor %s's row %lld: %s", path, name, (long long)r,
                        k < 0 ? strerror(errno) : "unexpected end of file");
                close(fd);
                free(buf);
                return NULL;
            }
            got += (size_t)k;
        }
    }
    close(fd);
    int64_t shape[2] = {N, n};
    wk_tensor *t = wk_from_blob(buf, total, shape, 2, NULL, dt, wk_cpu(), release_free, NULL, 0);
    if (!t) free(buf);
    return t;
}

wk_tensor *wk__lm_tp_cut(const wk__lm_tp_file *f, const char *name, wk_tensor *t, const wk__lm_cut *c) {
    if (!t || !c || c->n_ranges == 0) return t;
    wk_dtype dt = wk_tensor_dtype(t);
    int64_t be = wk_dtype_info_of(dt)->block_elems;
    if (c->dim == 0) {
        wk_tensor *parts[3] = {0};
        wk_tensor *out = NULL;
        int k = 0;
        for (; k < c->n_ranges; k++)
            if (!(parts[k] = wk_narrow(t, 0, c->lo[k], c->n[k]))) break;
        if (k == c->n_ranges) out = k == 1 ? wk_tensor_retain(parts[0]) : wk_cat(parts, k, 0);
        for (int i = 0; i < k; i++) wk_tensor_free(parts[i]);
        wk_tensor_free(t);
        return out;
    }
    /* a column range: whole blocks of the weight's dtype */
    int64_t N = wk_dim(t, 0), K = wk_dim(t, 1), lo = c->lo[0], n = c->n[0];
    if (lo % be || n % be) {
        wk__err(WK_ERR_ARG, OP,
                "%s: tensor parallel: tensor %s (%s) splits at column %lld, inside a block of %lld elements; "
                "use fewer ranks",
                f->path, name, wk_dtype_name(dt), (long long)lo, (long long)be);
        wk_tensor_free(t);
        return NULL;
    }
    const char *path;
    uint64_t off;
    wk_tensor *out;
    if (wk_same_device(wk_tensor_device(t), wk_cpu()) && file_of(f, name, &path, &off)) {
        out = read_cols(path, off, name, dt, N, K, lo, n);
    } else {
        /* not backed by a file: a copy of the columns */
        wk_tensor *v = wk_narrow(t, 1, lo, n);
        out = v ? wk_contiguous(v) : NULL;
        wk_tensor_free(v);
    }
    wk_tensor_free(t);
    return out;
}
