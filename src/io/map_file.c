/* Read-only file maps with a reference count (see map_file.h). */
#include "io/map_file.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/checked.h"
#include "base/dtype.h"
#include "base/error.h"
#include "tensor/layout.h"
#include "tensor/tensor.h"

struct wk__map {
    atomic_int refs;
    uint8_t *data;
    size_t size;
    char *path;
    bool heap; /* data is malloc'ed (wk__map_from_bytes), not mapped */
};

static atomic_uint_fast64_t g_copied;

wk__map *wk__map_open(const char *op, const char *path) {
    if (!path) {
        wk__err(WK_ERR_ARG, op, "NULL path");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        wk__err(WK_ERR_IO, op, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        wk__err(WK_ERR_IO, op, "%s is not a regular file", path);
        close(fd);
        return NULL;
    }
    wk__map *m = calloc(1, sizeof *m);
    char *p = m ? strdup(path) : NULL;
    if (!m || !p) {
        free(m);
        close(fd);
        wk__err(WK_ERR_OOM, op, "cannot allocate a map header for %s", path);
        return NULL;
    }
    m->path = p;
    m->size = (size_t)st.st_size;
    if (m->size) {
        void *d = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (d == MAP_FAILED) {
            /* ENOMEM: no address space or map count left, an allocation failure */
            wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot map %s (%zu bytes): %s", path, m->size,
                    strerror(errno));
            close(fd);
            free(m->path);
            free(m);
            return NULL;
        }
        m->data = d;
    }
    close(fd); /* the mapping keeps the file alive */
    atomic_init(&m->refs, 1);
    return m;
}

wk__map *wk__map_from_bytes(const char *op, const void *data, size_t size) {
    wk__map *m = calloc(1, sizeof *m);
    char *p = m ? strdup("<memory>") : NULL;
    uint8_t *d = p && size ? malloc(size) : NULL;
    if (!m || !p || (size && !d)) {
        free(m);
        free(p);
        wk__err(WK_ERR_OOM, op, "cannot copy a %zu-byte image", size);
        return NULL;
    }
    if (size) memcpy(d, data, size);
    m->data = d;
    m->size = size;
    m->path = p;
    m->heap = true;
    atomic_init(&m->refs, 1);
    return m;
}

void wk__map_retain(wk__map *m) {
    if (m) atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void wk__map_release(wk__map *m) {
    if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
    if (m->heap) free(m->data);
    else if (m->data) munmap(m->data, m->size);
    free(m->path);
    free(m);
}

const uint8_t *wk__map_data(const wk__map *m) { return m ? m->data : NULL; }
size_t wk__map_size(const wk__map *m) { return m ? m->size : 0; }
const char *wk__map_path(const wk__map *m) { return m ? m->path : ""; }
uint64_t wk__map_tensor_copied(void) { return atomic_load(&g_copied); }

static void release_map_ref(void *ctx, void *data, size_t nbytes) {
    (void)data;
    (void)nbytes;
    wk__map_release(ctx);
}

wk_tensor *wk__map_tensor(const char *op, const char *what, wk__map *m, uint64_t offset, wk_dtype dt,
                          const int64_t *shape, int rank) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    if (!m || !di || rank < 0 || rank > WK_MAX_RANK || (rank && !shape)) {
        wk__err(WK_ERR_ARG, op, "%s: bad map tensor arguments", what);
        return NULL;
    }
    if (!wk__shape_fits(shape, rank)) { /* a 0 dim beside huge ones would still overflow the strides */
        wk__err(WK_ERR_FORMAT, op, "%s: shape has a negative or too large dimension", what);
        return NULL;
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0 || wk__mul_overflow_i64(numel, shape[i], &numel) || numel > WK__MAX_NUMEL) {
            wk__err(WK_ERR_FORMAT, op, "%s: shape has a negative or too large dimension", what);
            return NULL;
        }
    if (rank && di->block_elems > 1 && shape[rank - 1] % di->block_elems) {
        wk__err(WK_ERR_FORMAT, op, "%s: rows of %lld elements are not whole %s blocks of %u", what,
                (long long)shape[rank - 1], di->name, (unsigned)di->block_elems);
        return NULL;
    }
    size_t nbytes;
    if (wk__dtype_info_bytes(di, numel, &nbytes) != WK_OK) {
        wk__err(WK_ERR_FORMAT, op, "%s: %lld elements of %s are not whole blocks or do not fit", what,
                (long long)numel, di->name);
        return NULL;
    }
    if (offset > m->size || nbytes > m->size - offset) {
        wk__err(WK_ERR_FORMAT, op, "%s: data [%llu, +%zu) lies outside the %zu-byte file %s", what,
                (unsigned long long)offset, nbytes, m->size, m->path);
        return NULL;
    }
    wk_layout l;
    wk__layout_contiguous(&l, shape, rank, 0);
    const uint8_t *src = m->data ? m->data + offset : NULL;
    if (nbytes && ((uintptr_t)src % di->align)) {
        /* misaligned for dt: a private aligned copy (correct, not zero-copy) */
        wk_tensor *t = wk__tensor_alloc(op, wk_cpu(), dt, shape, rank);
        if (!t) return NULL;
        memcpy(t->storage->buf, src, nbytes);
        atomic_fetch_add(&g_copied, 1);
        return t;
    }
    wk_storage *s = wk__storage_wrap(op, wk_cpu(), dt, (void *)src, nbytes, release_map_ref, m, true);
    if (!s) return NULL;
    wk__map_retain(m); /* the storage's reference; dropped by release_map_ref */
    return wk__tensor_new(s, &l);
}
