/* .npz reading and writing: a zip archive of .npy members.
 *
 * Reading works on the whole archive in memory: the end-of-central-directory
 * record (searched backwards over at most 64 KiB of comment), the Zip64 end
 * records when the classic fields are saturated, the central directory, and
 * each member's local header. Sizes come from the central directory (numpy's
 * zipfile writes 0xFFFFFFFF plus a Zip64 extra in local headers). Every
 * offset and size is checked against the archive size before use; every
 * member's CRC32 is verified. Members are stored (method 0) or deflated
 * (method 8, raw deflate).
 *
 * Writing uses method 0, like numpy.savez: local header, .npy bytes, then the
 * central directory and the end record. Archives that would need Zip64
 * (> 4 GiB or > 65535 members) are refused. */
#include "io/npy_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/dtype.h"
#include "base/error.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD    0x06054b50u
#define SIG_EOCD64  0x06064b50u
#define SIG_LOC64   0x07064b50u

#define LOCAL_SIZE   30
#define CENTRAL_SIZE 46
#define EOCD_SIZE    22
#define EOCD64_SIZE  56
#define LOC64_SIZE   20

/* Deflate cannot expand data more than ~1032:1; a member that claims more is
 * hostile, and refusing it bounds what a small archive can make us allocate. */
#define MAX_DEFLATE_RATIO 1032u

#define ZFAIL(...) return wk__err(WK_ERR_FORMAT, op, __VA_ARGS__)

void wk_npz_free(char **names, wk_tensor **tensors, int count) {
    for (int i = 0; i < count; i++) {
        if (names) free(names[i]);
        if (tensors) wk_tensor_free(tensors[i]);
    }
    free(names);
    free(tensors);
}

/* ----------------------------------------------------------------- reading */

typedef struct zip_dir {
    uint64_t entries, cd_offset, cd_size;
} zip_dir;

static wk_status find_directory(const uint8_t *p, size_t len, zip_dir *dir, const char *op, const char *what) {
    if (len < EOCD_SIZE) ZFAIL("%s: not a zip archive (too short)", what);
    size_t lowest = len - EOCD_SIZE > 65535 ? len - EOCD_SIZE - 65535 : 0;
    size_t pos = len - EOCD_SIZE;
    for (;;) {
        if (wk__rd32(p + pos) == SIG_EOCD && pos + EOCD_SIZE + wk__rd16(p + pos + 20) <= len) break;
        if (pos == lowest) ZFAIL("%s: not a zip archive (no end of central directory record)", what);
        pos--;
    }
    const uint8_t *e = p + pos;
    uint16_t disk = wk__rd16(e + 4), cd_disk = wk__rd16(e + 6);
    uint64_t n_disk = wk__rd16(e + 8), n_total = wk__rd16(e + 10);
    uint64_t cd_size = wk__rd32(e + 12), cd_off = wk__rd32(e + 16);
    size_t dir_end = pos; /* the central directory ends before this */
    bool saturated = n_disk == 0xFFFF || n_total == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu ||
                     disk == 0xFFFF || cd_disk == 0xFFFF;
    if (saturated && pos >= LOC64_SIZE && wk__rd32(p + pos - LOC64_SIZE) == SIG_LOC64) {
        const uint8_t *l = p + pos - LOC64_SIZE;
        uint64_t e64 = wk__rd64(l + 8);
        if (wk__rd32(l + 4) != 0 || wk__rd32(l + 16) > 1) ZFAIL("%s: multi-disk zip archives are not supported", what);
        if (e64 > pos - LOC64_SIZE || pos - LOC64_SIZE - e64 < EOCD64_SIZE)
            ZFAIL("%s: bad Zip64 end of central directory offset", what);
        const uint8_t *z = p + e64;
        if (wk__rd32(z) != SIG_EOCD64) ZFAIL("%s: bad Zip64 end of central directory signature", what);
        if (wk__rd32(z + 16) != 0 || wk__rd32(z + 20) != 0)
            ZFAIL("%s: multi-disk zip archives are not supported", what);
        n_disk = wk__rd64(z + 24);
        n_total = wk__rd64(z + 32);
        cd_size = wk__rd64(z + 40);
        cd_off = wk__rd64(z + 48);
        dir_end = (size_t)e64;
    } else if (disk != 0 || cd_disk != 0) {
        ZFAIL("%s: multi-disk zip archives are not supported", what);
    }
    if (n_disk != n_total) ZFAIL("%s: multi-disk zip archives are not supported", what);
    if (cd_off > dir_end || cd_size > dir_end - cd_off)
        ZFAIL("%s: central directory (offset %llu, size %llu) lies outside the archive", what,
              (unsigned long long)cd_off, (unsigned long long)cd_size);
    if (n_total > cd_size / CENTRAL_SIZE || n_total > (uint64_t)INT_MAX)
        ZFAIL("%s: central directory claims %llu entries in %llu bytes", what, (unsigned long long)n_total,
              (unsigned long long)cd_size);
    dir->entries = n_total;
    dir->cd_offset = cd_off;
    dir->cd_size = cd_size;
    return WK_OK;
}

typedef struct zip_entry {
    const uint8_t *name;
    size_t         name_len;
    uint16_t       flags, method;
    uint32_t       crc;
    uint64_t       csize, usize, local_offset;
    uint64_t       data_offset;     /* after the local header (read_entries) */
} zip_entry;

/* Parse the central directory entry at *pos (inside [cd, cd_end)), advance *pos. */
static wk_status read_entry(const uint8_t *p, uint64_t *pos, uint64_t cd_end, zip_entry *ze, const char *op,
                            const char *what) {
    uint64_t at = *pos;
    if (cd_end - at < CENTRAL_SIZE) ZFAIL("%s: central directory is truncated", what);
    const uint8_t *c = p + at;
    if (wk__rd32(c) != SIG_CENTRAL) ZFAIL("%s: bad central directory entry signature", what);
    ze->flags = wk__rd16(c + 8);
    ze->method = wk__rd16(c + 10);
    ze->crc = wk__rd32(c + 16);
    ze->csize = wk__rd32(c + 20);
    ze->usize = wk__rd32(c + 24);
    size_t nl = wk__rd16(c + 28), xl = wk__rd16(c + 30), kl = wk__rd16(c + 32);
    ze->local_offset = wk__rd32(c + 42);
    if (cd_end - at - CENTRAL_SIZE < (uint64_t)nl + xl + kl) ZFAIL("%s: central directory entry is truncated", what);
    ze->name = c + CENTRAL_SIZE;
    ze->name_len = nl;
    /* Zip64 extended information: only the saturated fields are present, in
     * this order (the disk number, last, is not needed: multi-disk archives
     * were refused with the end record). */
    bool need_u = ze->usize == 0xFFFFFFFFu, need_c = ze->csize == 0xFFFFFFFFu;
    bool need_o = ze->local_offset == 0xFFFFFFFFu;
    const uint8_t *x = c + CENTRAL_SIZE + nl, *xe = x + xl;
    bool found64 = false;
    while (xe - x >= 4) {
        uint16_t id = wk__rd16(x), sz = wk__rd16(x + 2);
        const uint8_t *d = x + 4;
        if ((size_t)(xe - d) < sz) ZFAIL("%s: bad extra field in central directory", what);
        if (id == 0x0001 && !found64) {
            found64 = true;
            const uint8_t *de = d + sz;
            if (need_u) {
                if (de - d < 8) ZFAIL("%s: Zip64 extra field is too short", what);
                ze->usize = wk__rd64(d);
                d += 8;
            }
            if (need_c) {
                if (de - d < 8) ZFAIL("%s: Zip64 extra field is too short", what);
                ze->csize = wk__rd64(d);
                d += 8;
            }
            if (need_o) {
                if (de - d < 8) ZFAIL("%s: Zip64 extra field is too short", what);
                ze->local_offset = wk__rd64(d);
            }
        }
        x += 4 + (size_t)sz;
    }
    if (!found64 && (need_u || need_c || need_o)) ZFAIL("%s: saturated sizes without a Zip64 extra field", what);
    *pos = at + CENTRAL_SIZE + nl + xl + kl;
    return WK_OK;
}

/* Inflate a raw deflate stream of csize bytes into exactly usize bytes. */
static wk_status inflate_member(const uint8_t *src, uint64_t csize, uint8_t *dst, uint64_t usize, const char *op,
                                const char *what) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) return wk__err(WK_ERR_OOM, op, "%s: cannot initialise zlib", what);
    uint64_t in_left = csize, out_left = usize;
    uint8_t spill[1];
    bool spilled = false, overflow = false;
    zs.next_in = (Bytef *)src;
    zs.next_out = dst;
    int rc = Z_OK;
    for (;;) {
        if (zs.avail_in == 0 && in_left) {
            zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0) {
            if (out_left) {
                zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
                out_left -= zs.avail_out;
            } else {
                /* Everything declared is there: one more byte would be too many. */
                zs.next_out = spill;
                zs.avail_out = sizeof spill;
                spilled = true;
            }
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) break;
        if (spilled && zs.avail_out == 0) {
            overflow = true;
            break;
        }
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break; /* input ran out */
    }
    uint64_t produced = zs.total_out;
    inflateEnd(&zs);
    if (overflow || (rc == Z_STREAM_END && produced > usize))
        ZFAIL("%s: deflated data is longer than its declared size", what);
    if (rc != Z_STREAM_END) {
        if (rc == Z_MEM_ERROR) return wk__err(WK_ERR_OOM, op, "%s: zlib ran out of memory", what);
        ZFAIL("%s: corrupt deflate stream (%s)", what, rc == Z_DATA_ERROR ? "invalid data" : "truncated");
    }
    if (produced != usize)
        ZFAIL("%s: deflated data gives %llu bytes, %llu declared", what, (unsigned long long)produced,
              (unsigned long long)usize);
    return WK_OK;
}

/* zlib's crc32 takes uInt lengths; feed big buffers in pieces. */
static uint32_t crc32_big(uint32_t crc, const uint8_t *b, uint64_t n) {
    uLong c = crc;
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, b, k);
        b += k;
        n -= k;
    }
    return (uint32_t)c;
}

static int cmp_offset(const void *a, const void *b) {
    uint64_t x = ((const zip_entry *)a)->local_offset, y = ((const zip_entry *)b)->local_offset;
    return x < y ? -1 : x > y;
}

/* Read every central directory entry and its local header; check that each
 * member's bytes lie inside the archive and that no two members overlap (so
 * the total output is bounded by the archive size times the deflate ratio:
 * no "overlapping files" zip bomb). */
static wk_status read_entries(const uint8_t *p, size_t len, const zip_dir *dir, zip_entry *ents, const char *op,
                              const char *what) {
    uint64_t pos = dir->cd_offset, cd_end = dir->cd_offset + dir->cd_size;
    size_t n = (size_t)dir->entries;
    for (size_t i = 0; i < n; i++) {
        zip_entry *ze = &ents[i];
        wk_status st = read_entry(p, &pos, cd_end, ze, op, what);
        if (st != WK_OK) return st;
        if (ze->local_offset > len || len - ze->local_offset < LOCAL_SIZE)
            ZFAIL("%s: member %zu: local header offset %llu is outside the archive", what, i,
                  (unsigned long long)ze->local_offset);
        const uint8_t *lh = p + ze->local_offset;
        if (wk__rd32(lh) != SIG_LOCAL) ZFAIL("%s: member %zu: bad local header signature", what, i);
        ze->data_offset = ze->local_offset + LOCAL_SIZE + wk__rd16(lh + 26) + wk__rd16(lh + 28);
        if (ze->data_offset > len || ze->csize > len - ze->data_offset)
            ZFAIL("%s: member %zu: data (%llu bytes at %llu) runs past the end of the archive", what, i,
                  (unsigned long long)ze->csize, (unsigned long long)ze->data_offset);
    }
    if (n < 2) return WK_OK;
    zip_entry *sorted = malloc(n * sizeof *sorted);
    if (!sorted) return wk__err(WK_ERR_OOM, op, "cannot allocate %zu entries", n);
    memcpy(sorted, ents, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_offset);
    for (size_t i = 1; i < n; i++)
        if (sorted[i - 1].data_offset + sorted[i - 1].csize > sorted[i].local_offset) {
            unsigned long long at = sorted[i].local_offset;
            free(sorted);
            ZFAIL("%s: members overlap (at offset %llu)", what, at);
        }
    free(sorted);
    return WK_OK;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The writer refuses duplicate names, so the reader does too: a second
 * member of one name would silently shadow the first in any lookup. Sorted
 * copy, O(n log n): a hostile archive may hold very many members. */
static wk_status check_unique(char **names, int count, const char *op, const char *what) {
    if (count < 2) return WK_OK;
    char **sorted = malloc(sizeof *sorted * (size_t)count);
    if (!sorted) return wk__err(WK_ERR_OOM, op, "cannot allocate %d names", count);
    memcpy(sorted, names, sizeof *sorted * (size_t)count);
    qsort(sorted, (size_t)count, sizeof *sorted, cmp_name);
    wk_status st = WK_OK;
    for (int i = 1; i < count && st == WK_OK; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            st = wk__err(WK_ERR_FORMAT, op, "%s: duplicate member name '%.64s'", what, sorted[i]);
    free(sorted);
    return st;
}

wk_status wk__npz_load_bytes(const void *data, size_t len, wk_device *dev, char ***names_out,
                             wk_tensor ***tensors_out, int *count_out, const char *op, const char *what) {
    if (!names_out || !tensors_out || !count_out) return wk__err(WK_ERR_ARG, op, "NULL output pointer");
    *names_out = NULL;
    *tensors_out = NULL;
    *count_out = 0;
    if (!data && len) return wk__err(WK_ERR_ARG, op, "data is NULL");
    static const uint8_t empty = 0;
    const uint8_t *p = data ? (const uint8_t *)data : &empty;
    zip_dir dir = {0, 0, 0};
    wk_status st = find_directory(p, len, &dir, op, what);
    if (st != WK_OK) return st;
    /* entries <= cd_size / 46 <= len / 46: these are bounded by the input. */
    size_t n = (size_t)dir.entries;
    char **names = calloc(n ? n : 1, sizeof *names);
    wk_tensor **tensors = calloc(n ? n : 1, sizeof *tensors);
    zip_entry *ents = calloc(n ? n : 1, sizeof *ents);
    int count = 0;
    uint8_t *inflated = NULL;
    if (!names || !tensors || !ents) {
        st = wk__err(WK_ERR_OOM, op, "cannot allocate %zu entries", n);
        goto fail;
    }
    st = read_entries(p, len, &dir, ents, op, what);
    if (st != WK_OK) goto fail;
    for (size_t i = 0; i < n; i++) {
        const zip_entry *ze = &ents[i];
        size_t nl = ze->name_len;
        char shown[320];
        snprintf(shown, sizeof shown, "%s: member '%.*s'", what, (int)(nl > 48 ? 48 : nl), (const char *)ze->name);
        if (nl > 0 && ze->name[nl - 1] == '/' && ze->usize == 0) continue; /* a directory */
        if (memchr(ze->name, 0, nl)) { /* a C string would cut it short: another member's name */
            st = wk__err(WK_ERR_FORMAT, op, "%s...: name has an embedded NUL byte", shown);
            goto fail;
        }
        if (ze->flags & 0x0001) {
            st = wk__err(WK_ERR_FORMAT, op, "%s is encrypted", shown);
            goto fail;
        }
        if (ze->method != 0 && ze->method != 8) {
            st = wk__err(WK_ERR_FORMAT, op, "%s uses unsupported compression method %u", shown, ze->method);
            goto fail;
        }
        const uint8_t *member = p + ze->data_offset;
        if (ze->method == 0) {
            if (ze->csize != ze->usize) {
                st = wk__err(WK_ERR_FORMAT, op, "%s: stored member with different sizes", shown);
                goto fail;
            }
        } else {
            if (ze->usize > ze->csize * MAX_DEFLATE_RATIO + 64 || ze->usize > (uint64_t)SIZE_MAX - 1) {
                st = wk__err(WK_ERR_FORMAT, op, "%s: declared size %llu is impossible for %llu deflated bytes",
                             shown, (unsigned long long)ze->usize, (unsigned long long)ze->csize);
                goto fail;
            }
            inflated = malloc(ze->usize ? (size_t)ze->usize : 1);
            if (!inflated) {
                st = wk__err(WK_ERR_OOM, op, "%s: cannot allocate %llu bytes", shown, (unsigned long long)ze->usize);
                goto fail;
            }
            st = inflate_member(member, ze->csize, inflated, ze->usize, op, shown);
            if (st != WK_OK) goto fail;
            member = inflated;
        }
        uint32_t crc = crc32_big(0, member, ze->usize);
        if (crc != ze->crc) {
            st = wk__err(WK_ERR_FORMAT, op, "%s: CRC32 mismatch (stored %08x, computed %08x)", shown, ze->crc, crc);
            goto fail;
        }
        /* "name.npy" -> "name" */
        size_t keep = nl >= 4 && memcmp(ze->name + nl - 4, ".npy", 4) == 0 ? nl - 4 : nl;
        char *name = malloc(keep + 1);
        if (!name) {
            st = wk__err(WK_ERR_OOM, op, "cannot allocate a name");
            goto fail;
        }
        memcpy(name, ze->name, keep);
        name[keep] = '\0';
        wk_tensor *t = wk__npy_from_bytes(member, (size_t)ze->usize, dev, op, shown);
        if (!t) {
            free(name);
            st = wk_last_status() != WK_OK ? wk_last_status() : WK_ERR_FORMAT;
            goto fail;
        }
        names[count] = name;
        tensors[count++] = t;
        free(inflated);
        inflated = NULL;
    }
    free(ents);
    ents = NULL;
    st = check_unique(names, count, op, what);
    if (st != WK_OK) goto fail;
    *names_out = names;
    *tensors_out = tensors;
    *count_out = count;
    return WK_OK;
fail:
    free(inflated);
    free(ents);
    wk_npz_free(names, tensors, count);
    return st;
}

wk_status wk_npz_load(const char *path, wk_device *dev, char ***names, wk_tensor ***tensors, int *count) {
    const char *op = "wk_npz_load";
    if (!names || !tensors || !count) return wk__err(WK_ERR_ARG, op, "NULL output pointer");
    *names = NULL;
    *tensors = NULL;
    *count = 0;
    if (!path) return wk__err(WK_ERR_ARG, op, "path is NULL");
    if (!dev) return wk__err(WK_ERR_ARG, op, "NULL device");
    uint8_t *buf = NULL;
    size_t len = 0;
    wk_status st = wk__read_file(path, &buf, &len, op);
    if (st != WK_OK) return st;
    st = wk__npz_load_bytes(buf, len, dev, names, tensors, count, op, path);
    free(buf);
    return st;
}

/* ----------------------------------------------------------------- writing */

typedef struct npz_member {
    uint64_t offset, size;
    uint32_t crc;
    size_t   name_len;
} npz_member;

static bool put(FILE *f, const void *b, size_t n) { return n == 0 || fwrite(b, 1, n, f) == n; }

static bool non_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return true;
    return false;
}

wk_status wk_npz_save(const char *path, const char *const *names, wk_tensor *const *tensors, int count) {
    const char *op = "wk_npz_save";
    if (!path) return wk__err(WK_ERR_ARG, op, "path is NULL");
    if (count < 0) return wk__err(WK_ERR_ARG, op, "count is negative (%d)", count);
    if (count > 0 && (!names || !tensors)) return wk__err(WK_ERR_ARG, op, "names or tensors is NULL");
    if (count > 0xFFFF) return wk__err(WK_ERR_ARG, op, "%d members need Zip64, which is not supported", count);
    /* Check everything, and lay the archive out, before touching the file. */
    npz_member *mem = calloc(count ? (size_t)count : 1, sizeof *mem);
    if (!mem) return wk__err(WK_ERR_OOM, op, "cannot allocate %d entries", count);
    wk_status st = WK_OK;
    uint64_t off = 0;
    for (int i = 0; i < count; i++) {
        if (!names[i] || !names[i][0]) {
            st = wk__err(WK_ERR_ARG, op, "name %d is %s", i, names[i] ? "empty" : "NULL");
            goto done;
        }
        if (!tensors[i]) {
            wk__err_null_input(op);
            st = wk_last_status() != WK_OK ? wk_last_status() : WK_ERR_ARG;
            goto done;
        }
        size_t nl = strlen(names[i]);
        if (nl > 65535 - 4) {
            st = wk__err(WK_ERR_ARG, op, "name %d is too long (%zu bytes)", i, nl);
            goto done;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) {
                st = wk__err(WK_ERR_ARG, op, "duplicate name '%s'", names[i]);
                goto done;
            }
        wk_dtype dt = wk_tensor_dtype(tensors[i]);
        if (!wk__npy_descr(dt)) {
            st = wk__err(WK_ERR_DTYPE, op,
                         "'%s': dtype %s cannot be stored in .npy (numpy has no such dtype); convert it first, "
                         "e.g. wk_to_dtype(t, WK_F32)",
                         names[i], wk_dtype_name(dt));
            goto done;
        }
        uint8_t *pre = NULL;
        size_t pre_len = 0;
        st = wk__npy_preamble(tensors[i], &pre, &pre_len, op);
        if (st != WK_OK) goto done;
        free(pre);
        uint64_t numel = (uint64_t)wk_numel(tensors[i]);
        size_t data_len;
        st = wk__dtype_bytes_for(op, dt, wk_numel(tensors[i]), &data_len);
        if (st != WK_OK) goto done;
        uint64_t size = (uint64_t)pre_len + data_len;
        mem[i].name_len = nl + 4;
        mem[i].offset = off;
        mem[i].size = size;
        if (numel > (uint64_t)INT64_MAX / 8 || size > 0xFFFFFFFFu || off > 0xFFFFFFFFu) {
            st = wk__err(WK_ERR_ARG, op, "'%s' would need Zip64 (archive over 4 GiB), which is not supported",
                         names[i]);
            goto done;
        }
        off += LOCAL_SIZE + mem[i].name_len + size;
    }
    uint64_t cd_size = 0;
    for (int i = 0; i < count; i++) cd_size += CENTRAL_SIZE + mem[i].name_len;
    if (off > 0xFFFFFFFFu || cd_size > 0xFFFFFFFFu) {
        st = wk__err(WK_ERR_ARG, op, "the archive would need Zip64 (over 4 GiB), which is not supported");
        goto done;
    }

    FILE *f = fopen(path, "wb");
    if (!f) {
        st = wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot open '%s' for writing: %s", path,
                     strerror(errno));
        goto done;
    }
    bool ok = true;
    for (int i = 0; i < count && ok && st == WK_OK; i++) {
        uint8_t *pre = NULL, *dat = NULL;
        size_t pre_len = 0, dat_len = 0;
        st = wk__npy_preamble(tensors[i], &pre, &pre_len, op);
        if (st == WK_OK) st = wk__npy_tensor_bytes(tensors[i], &dat, &dat_len, op);
        if (st == WK_OK && (uint64_t)pre_len + dat_len != mem[i].size)
            st = wk__err(WK_ERR_INTERNAL, op, "member size changed while saving");
        if (st == WK_OK) {
            mem[i].crc = crc32_big(crc32_big(0, pre, pre_len), dat, dat_len);
            uint8_t h[LOCAL_SIZE];
            wk__wr32(h, SIG_LOCAL);
            wk__wr16(h + 4, 20);                                    /* version needed */
            wk__wr16(h + 6, non_ascii(names[i], mem[i].name_len - 4) ? 0x0800 : 0); /* UTF-8 names */
            wk__wr16(h + 8, 0);                                     /* stored */
            wk__wr16(h + 10, 0);                                    /* time 00:00 */
            wk__wr16(h + 12, (0 << 9) | (1 << 5) | 1);              /* date 1980-01-01 */
            wk__wr32(h + 14, mem[i].crc);
            wk__wr32(h + 18, (uint32_t)mem[i].size);
            wk__wr32(h + 22, (uint32_t)mem[i].size);
            wk__wr16(h + 26, (uint16_t)mem[i].name_len);
            wk__wr16(h + 28, 0);
            ok = put(f, h, sizeof h) && put(f, names[i], mem[i].name_len - 4) && put(f, ".npy", 4) &&
                 put(f, pre, pre_len) && put(f, dat, dat_len);
        }
        free(pre);
        free(dat);
    }
    for (int i = 0; i < count && ok && st == WK_OK; i++) {
        uint8_t c[CENTRAL_SIZE];
        memset(c, 0, sizeof c);
        wk__wr32(c, SIG_CENTRAL);
        wk__wr16(c + 4, (3 << 8) | 20);                                 /* made by: Unix, 2.0 */
        wk__wr16(c + 6, 20);
        wk__wr16(c + 8, non_ascii(names[i], mem[i].name_len - 4) ? 0x0800 : 0);
        wk__wr16(c + 14, (1 << 5) | 1);
        wk__wr32(c + 16, mem[i].crc);
        wk__wr32(c + 20, (uint32_t)mem[i].size);
        wk__wr32(c + 24, (uint32_t)mem[i].size);
        wk__wr16(c + 28, (uint16_t)mem[i].name_len);
        wk__wr32(c + 38, 0600u << 16);                                  /* rw------- */
        wk__wr32(c + 42, (uint32_t)mem[i].offset);
        ok = put(f, c, sizeof c) && put(f, names[i], mem[i].name_len - 4) && put(f, ".npy", 4);
    }
    if (ok && st == WK_OK) {
        uint8_t e[EOCD_SIZE];
        memset(e, 0, sizeof e);
        wk__wr32(e, SIG_EOCD);
        wk__wr16(e + 8, (uint16_t)count);
        wk__wr16(e + 10, (uint16_t)count);
        wk__wr32(e + 12, (uint32_t)cd_size);
        wk__wr32(e + 16, (uint32_t)off);
        ok = put(f, e, sizeof e);
    }
    int e = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok && st == WK_OK) st = wk__err(WK_ERR_IO, op, "cannot write '%s': %s", path, strerror(e));
    if (st != WK_OK) remove(path);
done:
    free(mem);
    return st;
}
