/* The safetensors loader: open a file, an index or a directory, and the
 * lookups over what the headers said (safetensors_header.c parses them). */
#include <dirent.h>
#include "wick/safetensors.h"
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "base/error.h"
#include "io/json.h"
#include "io/safetensors_internal.h"

/* ------------------------------------------------------------ the object */

wk_safetensors *wk__st_new(const char *op) {
    wk_safetensors *st = calloc(1, sizeof *st);
    if (!st) wk__err(WK_ERR_OOM, op, "cannot allocate a safetensors loader");
    return st;
}

void wk_safetensors_close(wk_safetensors *st) {
    if (!st) return;
    for (int i = 0; i < st->nshards; i++) wk__map_release(st->shards[i].map);
    free(st->shards);
    free(st->t);
    free(st->meta);
    free(st->pool);
    free(st);
}

/* Grow *buf (of *cap elements of size esz) to hold need elements. */
static bool grow(void **buf, size_t *cap, size_t need, size_t esz) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / esz) return false;
        c *= 2;
    }
    void *nb = realloc(*buf, c * esz);
    if (!nb) return false;
    *buf = nb;
    *cap = c;
    return true;
}

bool wk__st_pool_add(const char *op, wk_safetensors *st, const char *s, size_t len, size_t *off) {
    if (len > SIZE_MAX - st->pool_len - 1 ||
        !grow((void **)&st->pool, &st->pool_cap, st->pool_len + len + 1, 1)) {
        wk__err(WK_ERR_OOM, op, "cannot store a %zu-byte name", len);
        return false;
    }
    memcpy(st->pool + st->pool_len, s, len);
    st->pool[st->pool_len + len] = '\0';
    *off = st->pool_len;
    st->pool_len += len + 1;
    return true;
}

wk__st_tensor *wk__st_push_tensor(const char *op, wk_safetensors *st) {
    /* counts are ints in the public API */
    if (st->n >= (size_t)INT32_MAX || !grow((void **)&st->t, &st->cap, st->n + 1, sizeof *st->t)) {
        wk__err(WK_ERR_OOM, op, "cannot store %zu tensor entries", st->n + 1);
        return NULL;
    }
    wk__st_tensor *t = &st->t[st->n++];
    memset(t, 0, sizeof *t);
    return t;
}

bool wk__st_push_meta(const char *op, wk_safetensors *st, size_t key_off, size_t val_off) {
    if (st->nmeta >= (size_t)INT32_MAX || !grow((void **)&st->meta, &st->meta_cap, st->nmeta + 1, sizeof *st->meta)) {
        wk__err(WK_ERR_OOM, op, "cannot store %zu metadata entries", st->nmeta + 1);
        return false;
    }
    wk__st_meta *m = &st->meta[st->nmeta];
    m->key_off = key_off;
    m->val_off = val_off;
    m->seq = st->nmeta++;
    return true;
}

bool wk__st_add_shard(const char *op, wk_safetensors *st, wk__map *m, int *idx) {
    wk__st_shard *ns = realloc(st->shards, ((size_t)st->nshards + 1) * sizeof *ns);
    if (!ns) {
        wk__map_release(m);
        wk__err(WK_ERR_OOM, op, "cannot store a shard");
        return false;
    }
    st->shards = ns;
    ns[st->nshards].map = m;
    *idx = st->nshards++;
    return true;
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const wk__st_tensor *)a)->name, ((const wk__st_tensor *)b)->name);
}

static int cmp_meta_key(const void *a, const void *b) {
    const wk__st_meta *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

wk_status wk__st_finalize(const char *op, wk_safetensors *st, bool meta_first_wins, const char *what) {
    for (size_t i = 0; i < st->n; i++) st->t[i].name = st->pool + st->t[i].name_off;
    for (size_t i = 0; i < st->nmeta; i++) {
        st->meta[i].key = st->pool + st->meta[i].key_off;
        st->meta[i].val = st->pool + st->meta[i].val_off;
    }
    if (st->n) qsort(st->t, st->n, sizeof *st->t, cmp_tensor_name);
    for (size_t i = 1; i < st->n; i++)
        if (strcmp(st->t[i - 1].name, st->t[i].name) == 0)
            return wk__err(WK_ERR_FORMAT, op, "%s: tensor name '%.64s' appears twice", what, st->t[i].name);
    if (st->nmeta) qsort(st->meta, st->nmeta, sizeof *st->meta, cmp_meta_key);
    size_t w = 0;
    for (size_t i = 0; i < st->nmeta; i++) {
        if (w && strcmp(st->meta[w - 1].key, st->meta[i].key) == 0) {
            if (!meta_first_wins)
                return wk__err(WK_ERR_FORMAT, op, "%s: __metadata__ key '%.64s' appears twice", what, st->meta[i].key);
            continue; /* sorted by (key, seq): the kept one came first */
        }
        st->meta[w++] = st->meta[i];
    }
    st->nmeta = w;
    return WK_OK;
}

/* ------------------------------------------------------------ opening */

/* Tensors are views of the file's little-endian bytes. */
static bool host_is_little_endian(void) {
    const uint16_t probe = 1;
    return *(const uint8_t *)&probe == 1;
}

/* A loader over one mapped file (takes the reference to m). */
static wk_safetensors *open_single_map(const char *op, wk__map *m) {
    if (!m) return NULL;
    if (!host_is_little_endian()) {
        wk__map_release(m);
        wk__err(WK_ERR_FORMAT, op, "safetensors files are little-endian; this host is not");
        return NULL;
    }
    wk_safetensors *st = wk__st_new(op);
    int idx;
    if (!st) {
        wk__map_release(m);
        return NULL;
    }
    if (!wk__st_add_shard(op, st, m, &idx) || wk__st_parse_file(op, st, idx) != WK_OK ||
        wk__st_finalize(op, st, false, wk__map_path(m)) != WK_OK) {
        wk_safetensors_close(st);
        return NULL;
    }
    return st;
}

wk_safetensors *wk_safetensors_open_bytes(const void *data, size_t size) {
    const char *op = "wk_safetensors_open_bytes";
    if (!data && size) {
        wk__err(WK_ERR_ARG, op, "NULL data of %zu bytes", size);
        return NULL;
    }
    return open_single_map(op, wk__map_from_bytes(op, data, size));
}

static bool ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* A shard name from an index: a plain file name in the index's directory. */
static bool shard_name_ok(const char *s) {
    return s[0] && !strchr(s, '/') && !strchr(s, '\\') && !strstr(s, "..") && strcmp(s, ".") != 0;
}

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* One weight_map line: tensor -> shard file (offsets into the index's pool). */
typedef struct wm_entry {
    size_t name_off, file_off;
} wm_entry;

typedef struct index_doc {
    wk_safetensors *st; /* the result; its pool also holds the weight map's strings */
    wm_entry *wm;
    size_t nwm, wm_cap;
} index_doc;

/* The index's "metadata": scalars kept as text, the rest skipped. */
static bool parse_index_meta(const char *op, wk__json *p, wk_safetensors *st, bool *oom) {
    const char *k, *v;
    size_t kl, vl, ko, vo;
    if (wk__json_peek(p) != WK__JSON_OBJECT) return wk__json_skip(p);
    if (!wk__json_object(p)) return false;
    while (wk__json_key(p, &k, &kl)) {
        if (strlen(k) != kl) return wk__json_fail(p, "a metadata key holds a NUL character");
        if (!wk__st_pool_add(op, st, k, kl, &ko)) return *oom = true, false;
        bool b;
        switch (wk__json_peek(p)) {
        case WK__JSON_STRING:
            if (!wk__json_string(p, &v, &vl)) return false;
            if (strlen(v) != vl) return wk__json_fail(p, "metadata value of '%.64s' holds a NUL", st->pool + ko);
            break;
        case WK__JSON_NUMBER:
            if (!wk__json_number_text(p, &v, &vl)) return false;
            break;
        case WK__JSON_BOOL:
            if (!wk__json_bool(p, &b)) return false;
            v = b ? "true" : "false";
            vl = strlen(v);
            break;
        case WK__JSON_BAD:
        case WK__JSON_NULL:
        case WK__JSON_ARRAY:
        case WK__JSON_OBJECT:
            if (!wk__json_skip(p)) return false;
            continue;
        }
        if (!wk__st_pool_add(op, st, v, vl, &vo) || !wk__st_push_meta(op, st, ko, vo)) return *oom = true, false;
    }
    return !p->failed;
}

static bool parse_weight_map(const char *op, wk__json *p, index_doc *x, bool *oom) {
    const char *k, *v;
    size_t kl, vl, ko, vo;
    if (wk__json_peek(p) != WK__JSON_OBJECT) return wk__json_fail(p, "\"weight_map\" must be an object");
    if (!wk__json_object(p)) return false;
    while (wk__json_key(p, &k, &kl)) {
        if (strlen(k) != kl) return wk__json_fail(p, "a tensor name holds a NUL character");
        if (!wk__st_pool_add(op, x->st, k, kl, &ko)) return *oom = true, false;
        if (wk__json_peek(p) != WK__JSON_STRING)
            return wk__json_fail(p, "weight_map entry '%.64s' is not a file name", x->st->pool + ko);
        if (!wk__json_string(p, &v, &vl)) return false;
        if (strlen(v) != vl || !shard_name_ok(v))
            return wk__json_fail(p, "weight_map entry '%.64s' names shard '%.64s', not a plain file name beside the index",
                                 x->st->pool + ko, v);
        if (!wk__st_pool_add(op, x->st, v, vl, &vo)) return *oom = true, false;
        if (!grow((void **)&x->wm, &x->wm_cap, x->nwm + 1, sizeof *x->wm)) {
            wk__err(WK_ERR_OOM, op, "cannot store the weight map");
            return *oom = true, false;
        }
        x->wm[x->nwm++] = (wm_entry){ko, vo};
    }
    return !p->failed;
}

/* Parse the index JSON into x (weight map + metadata). */
static wk_status parse_index(const char *op, wk__map *im, index_doc *x) {
    const char *path = wk__map_path(im);
    if (wk__map_size(im) > WK__ST_MAX_HEADER)
        return wk__err(WK_ERR_FORMAT, op, "%s: an index of %zu bytes is above the 100 MB limit", path, wk__map_size(im));
    wk__json p;
    wk__json_init(&p, wk__map_data(im), wk__map_size(im));
    bool oom = false, seen_wm = false, seen_meta = false;
    const char *k;
    size_t kl;
    if (wk__json_peek(&p) != WK__JSON_OBJECT) wk__json_fail(&p, "an index must be a JSON object");
    else if (wk__json_object(&p)) {
        while (wk__json_key(&p, &k, &kl)) {
            bool ok;
            if (strcmp(k, "weight_map") == 0 && kl == 10) {
                if (seen_wm) {
                    wk__json_fail(&p, "\"weight_map\" given twice");
                    break;
                }
                seen_wm = true;
                ok = parse_weight_map(op, &p, x, &oom);
            } else if (strcmp(k, "metadata") == 0 && kl == 8) {
                if (seen_meta) {
                    wk__json_fail(&p, "\"metadata\" given twice");
                    break;
                }
                seen_meta = true;
                ok = parse_index_meta(op, &p, x->st, &oom);
            } else {
                ok = wk__json_skip(&p);
            }
            if (!ok) break;
        }
        if (!oom && !p.failed && !seen_wm) wk__json_fail(&p, "the index has no \"weight_map\"");
        if (!oom) wk__json_finish(&p);
    }
    wk__json_free(&p);
    if (oom) return wk_last_status();
    if (p.oom) return wk__err(WK_ERR_OOM, op, "%s: %s", path, p.msg);
    if (p.failed) return wk__err(WK_ERR_FORMAT, op, "%s: %s", path, p.msg);
    return WK_OK;
}

/* The weight map sorted by shard file, then by position. */
typedef struct by_file {
    const char *file;
    size_t i;
} by_file;

static int cmp_by_file(const void *a, const void *b) {
    const by_file *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    if (c) return c;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Find the tensor called name in a finalized loader (sorted by name). */
static const wk__st_tensor *find_in(const wk_safetensors *s, const char *name) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->t[mid].name, name);
        if (c == 0) return &s->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Map and check one shard file, and add the weight map's tensors that live
 * in it (wm[g[0..cnt)]) and its __metadata__ to st. */
static wk_status add_shard_tensors(const char *op, wk_safetensors *st, const char *dir, const char *file,
                                   const wm_entry *wm, const by_file *g, size_t cnt) {
    char *full = join_path(dir, file);
    if (!full) return wk__err(WK_ERR_OOM, op, "cannot build a shard path");
    wk__map *m = wk__map_open(op, full);
    free(full);
    if (!m) return wk_last_status();
    wk__map_retain(m); /* one reference for the shard loader, one for st */
    wk_safetensors *one = open_single_map(op, m);
    int idx;
    if (!one || !wk__st_add_shard(op, st, m, &idx)) {
        if (one) wk_safetensors_close(one);
        else wk__map_release(m);
        return wk_last_status();
    }
    wk_status s = WK_OK;
    for (size_t j = 0; j < cnt && s == WK_OK; j++) {
        const char *name = st->pool + wm[g[j].i].name_off;
        const wk__st_tensor *src = find_in(one, name);
        wk__st_tensor *t;
        if (!src)
            s = wk__err(WK_ERR_FORMAT, op, "the index lists tensor '%.64s' in shard %s, which does not hold it", name,
                        wk__map_path(m));
        else if (!(t = wk__st_push_tensor(op, st)))
            s = wk_last_status();
        else {
            *t = *src;
            t->name_off = wm[g[j].i].name_off;
            t->shard = idx;
        }
    }
    for (size_t j = 0; j < one->nmeta && s == WK_OK; j++) {
        size_t ko, vo;
        const wk__st_meta *mm = &one->meta[j];
        if (!wk__st_pool_add(op, st, mm->key, strlen(mm->key), &ko) ||
            !wk__st_pool_add(op, st, mm->val, strlen(mm->val), &vo) || !wk__st_push_meta(op, st, ko, vo))
            s = wk_last_status();
    }
    wk_safetensors_close(one);
    return s;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

static wk_safetensors *open_index(const char *op, const char *path) {
    wk__map *im = wk__map_open(op, path);
    if (!im) return NULL;
    index_doc x = {0};
    by_file *g = NULL;
    char *dir = dir_of(path);
    wk_safetensors *st = x.st = wk__st_new(op);
    wk_status s = !dir ? wk__err(WK_ERR_OOM, op, "cannot copy a path") : !st ? WK_ERR_OOM : parse_index(op, im, &x);
    wk__map_release(im);
    if (s == WK_OK && !(g = malloc((x.nwm ? x.nwm : 1) * sizeof *g)))
        s = wk__err(WK_ERR_OOM, op, "cannot sort a weight map of %zu entries", x.nwm);
    if (s == WK_OK) {
        /* the pool no longer grows while g points into it */
        for (size_t i = 0; i < x.nwm; i++) g[i] = (by_file){st->pool + x.wm[i].file_off, i};
        qsort(g, x.nwm, sizeof *g, cmp_by_file);
        /* copy the shard names out: adding tensors below grows the pool */
        for (size_t a = 0, b; a < x.nwm && s == WK_OK; a = b) {
            for (b = a + 1; b < x.nwm && strcmp(g[b].file, g[a].file) == 0;) b++;
            char *file = strdup(g[a].file);
            if (!file) {
                s = wk__err(WK_ERR_OOM, op, "cannot copy a shard name");
                break;
            }
            s = add_shard_tensors(op, st, dir, file, x.wm, g + a, b - a);
            free(file);
            /* adding tensors may have moved the pool: re-point the rest */
            for (size_t j = b; j < x.nwm; j++) g[j].file = st->pool + x.wm[g[j].i].file_off;
        }
    }
    if (s == WK_OK) s = wk__st_finalize(op, st, true, path);
    free(g);
    free(x.wm);
    free(dir);
    if (s != WK_OK) {
        wk_safetensors_close(st);
        return NULL;
    }
    return st;
}

/* A directory: model.safetensors.index.json, model.safetensors, or the one
 * index / the one .safetensors file it holds. The chosen path in *out. */
static wk_status pick_in_dir(const char *op, const char *dir, char **out) {
    static const char *const preferred[] = {"model.safetensors.index.json", "model.safetensors"};
    *out = NULL;
    for (int i = 0; i < 2; i++) {
        char *p = join_path(dir, preferred[i]);
        struct stat sb;
        if (!p) return wk__err(WK_ERR_OOM, op, "cannot build a path");
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            *out = p;
            return WK_OK;
        }
        free(p);
    }
    DIR *d = opendir(dir);
    if (!d) /* opendir allocates its stream: ENOMEM is an allocation failure */
        return wk__err(errno == ENOMEM ? WK_ERR_OOM : WK_ERR_IO, op, "cannot list directory %s: %s", dir,
                       strerror(errno));
    char *index = NULL, *file = NULL;
    int nindex = 0, nfile = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char **slot = ends_with(e->d_name, ".safetensors.index.json") ? &index
                      : ends_with(e->d_name, ".safetensors")          ? &file
                                                                      : NULL;
        if (!slot) continue;
        if (slot == &index) nindex++;
        else nfile++;
        if (!*slot) *slot = join_path(dir, e->d_name);
        if (!*slot) break;
    }
    closedir(d);
    wk_status s = WK_OK;
    if ((nindex && !index) || (nfile && !file)) s = wk__err(WK_ERR_OOM, op, "cannot build a path");
    else if (nindex == 1) *out = index, index = NULL;
    else if (nindex > 1) s = wk__err(WK_ERR_IO, op, "%s holds %d *.safetensors.index.json files: name one", dir, nindex);
    else if (nfile == 1) *out = file, file = NULL;
    else if (nfile > 1) s = wk__err(WK_ERR_IO, op, "%s holds %d *.safetensors files and no index: name one", dir, nfile);
    else s = wk__err(WK_ERR_IO, op, "%s holds no .safetensors file or index", dir);
    free(index);
    free(file);
    return s;
}

wk_safetensors *wk_safetensors_open(const char *path) {
    const char *op = "wk_safetensors_open";
    if (!path) {
        wk__err(WK_ERR_ARG, op, "NULL path");
        return NULL;
    }
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char *chosen;
        if (pick_in_dir(op, path, &chosen) != WK_OK) return NULL;
        wk_safetensors *st = ends_with(chosen, ".json") ? open_index(op, chosen)
                                                        : open_single_map(op, wk__map_open(op, chosen));
        free(chosen);
        return st;
    }
    if (ends_with(path, ".json")) return open_index(op, path);
    return open_single_map(op, wk__map_open(op, path));
}

/* ------------------------------------------------------------ lookups */

int wk_safetensors_count(const wk_safetensors *st) { return st ? (int)st->n : 0; }

const char *wk_safetensors_name(const wk_safetensors *st, int i) {
    return st && i >= 0 && (size_t)i < st->n ? st->t[i].name : NULL;
}

int wk_safetensors_find(const wk_safetensors *st, const char *name) {
    if (!st || !name) return -1;
    const wk__st_tensor *t = find_in(st, name);
    return t ? (int)(t - st->t) : -1;
}

wk_status wk_safetensors_info_at(const wk_safetensors *st, int i, wk_safetensors_info *out) {
    const char *op = "wk_safetensors_info_at";
    if (!st || !out) return wk__err(WK_ERR_ARG, op, "NULL loader or output");
    if (i < 0 || (size_t)i >= st->n)
        return wk__err(WK_ERR_INDEX, op, "tensor index %d outside [0, %zu)", i, st->n);
    const wk__st_tensor *t = &st->t[i];
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->st_dtype = t->dt->name;
    out->supported = t->dt->wk >= 0;
    out->dtype = out->supported ? (wk_dtype)t->dt->wk : WK_U8;
    out->rank = t->rank;
    memcpy(out->shape, t->shape, sizeof t->shape);
    out->nbytes = t->end - t->begin;
    out->offset = t->begin;
    out->shard = t->shard;
    return WK_OK;
}

int wk_safetensors_shard_count(const wk_safetensors *st) { return st ? st->nshards : 0; }

const char *wk_safetensors_shard_path(const wk_safetensors *st, int i) {
    return st && i >= 0 && i < st->nshards ? wk__map_path(st->shards[i].map) : NULL;
}

static wk_tensor *get_view(const char *op, wk_safetensors *st, const char *name) {
    if (!st || !name) {
        wk__err(WK_ERR_ARG, op, "NULL loader or name");
        return NULL;
    }
    const wk__st_tensor *t = find_in(st, name);
    if (!t) {
        wk__err(WK_ERR_ARG, op, "no tensor named '%.64s' (%zu tensors)", name, st->n);
        return NULL;
    }
    if (t->dt->wk < 0) {
        wk__err(WK_ERR_DTYPE, op, "tensor '%.64s' has safetensors dtype %s, which wick has no dtype for", name,
                t->dt->name);
        return NULL;
    }
    return wk__map_tensor(op, t->name, st->shards[t->shard].map, t->begin, (wk_dtype)t->dt->wk, t->shape, t->rank);
}

wk_tensor *wk_safetensors_get(wk_safetensors *st, const char *name) {
    return get_view("wk_safetensors_get", st, name);
}

wk_tensor *wk_safetensors_get_as(wk_safetensors *st, const char *name, wk_dtype dt, wk_device *dev) {
    const char *op = "wk_safetensors_get_as";
    if (!wk_dtype_info_of(dt) || !dev) {
        wk__err(WK_ERR_ARG, op, "invalid dtype or NULL device");
        return NULL;
    }
    wk_tensor *v = get_view(op, st, name);
    if (v && wk_tensor_dtype(v) != dt) {
        wk_tensor *c = wk_to_dtype(v, dt);
        wk_tensor_free(v);
        v = c;
    }
    if (v && !wk_same_device(wk_tensor_device(v), dev)) {
        wk_tensor *c = wk_to_device(v, dev);
        wk_tensor_free(v);
        v = c;
    }
    return v;
}

int wk_safetensors_meta_count(const wk_safetensors *st) { return st ? (int)st->nmeta : 0; }

const char *wk_safetensors_meta_key(const wk_safetensors *st, int i) {
    return st && i >= 0 && (size_t)i < st->nmeta ? st->meta[i].key : NULL;
}

const char *wk_safetensors_meta_value(const wk_safetensors *st, const char *key) {
    if (!st || !key) return NULL;
    size_t lo = 0, hi = st->nmeta;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->meta[mid].key, key);
        if (c == 0) return st->meta[mid].val;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}
