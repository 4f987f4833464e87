/* `wick quantize IN OUT TYPE`: write a GGUF whose weight tensors are TYPE
 * (any GGML block type, or f32/f16/bf16 to dequantize), from a GGUF or an HF
 * safetensors file/directory, as llama.cpp's quantizer chooses:
 *  - 1-D tensors and norms stay f32; non-float tensors are copied as they are;
 *  - the output projection (output.weight / lm_head.weight, or the token
 *    embedding when it is tied) gets q6_K for every quantized TYPE but q8_0;
 *  - a tensor whose rows are not whole blocks of TYPE falls back to a type
 *    they fit (q2_K/q3_K/iq4_xs -> iq4_nl, q4_K -> q5_0, q5_K -> q5_1,
 *    q6_K/q8_K -> q8_0; then f16), said on stderr;
 *  - a tensor already in its target dtype is copied byte for byte.
 * Everything else in a GGUF's metadata is copied; general.file_type is set.
 *
 * --imatrix FILE (llama-imatrix's GGUF or legacy .dat, wick/imatrix.h):
 * each quantized tensor with an entry of its name is quantized with that
 * importance matrix (wk_quantize_imatrix: llama-quantize's bytes); tensors
 * without one quantize as before, and the count of those is said on stderr.
 * An entry whose size does not fit its tensor is an error (as llama-quantize;
 * for the token embedding a note, and it goes without). The output records
 * quantize.imatrix.file / .dataset / .entries_count / .chunks_count, as
 * llama-quantize does. No wick type needs a matrix (llama.cpp demands one
 * only for the IQ1/IQ2/IQ3_XXS types and Q2_K_S files, which wick does not
 * write). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/wick_cli.h"
#include "wick/gguf.h"
#include "wick/imatrix.h"
#include "wick/nn.h"
#include "wick/safetensors.h"

/* TYPE as ggml names it, any case: a block dtype or f32/f16/bf16. */
static bool parse_type(const char *s, wk_dtype *out) {
    char low[16];
    size_t n = strlen(s);
    if (n >= sizeof low) return false;
    for (size_t i = 0; i <= n; i++) low[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] + 32 : s[i]);
    if (!strcmp(low, "f32") || !strcmp(low, "f16") || !strcmp(low, "bf16")) return wk_dtype_from_name(low, out);
    return wk_dtype_from_name(low, out) && wk_dtype_is_quantized(*out);
}

/* llama.cpp's general.file_type (enum llama_ftype) for a whole-file type;
 * -1 where it has none (q8_1, q8_K are activation types there). */
static int ftype_of(wk_dtype dt) {
    switch (dt) {
    case WK_F32: return 0;
    case WK_F16: return 1;
    case WK_Q4_0: return 2;
    case WK_Q4_1: return 3;
    case WK_Q8_0: return 7;
    case WK_Q5_0: return 8;
    case WK_Q5_1: return 9;
    case WK_Q2_K: return 10;
    case WK_Q3_K: return 11; /* Q3_K_S: every weight q3_K */
    case WK_Q4_K: return 14; /* Q4_K_S */
    case WK_Q5_K: return 16; /* Q5_K_S */
    case WK_Q6_K: return 18;
    case WK_IQ4_NL: return 25;
    case WK_IQ4_XS: return 30;
    case WK_BF16: return 32;
    case WK_Q8_1: case WK_Q8_K:
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_F64: case WK_F8E4M3:
    case WK_DTYPE_COUNT:
        return -1;
    }
    return -1;
}

static bool fits(wk_dtype dt, int64_t row) {
    const wk_dtype_info *di = wk_dtype_info_of(dt);
    return di && row % di->block_elems == 0;
}

/* llama.cpp's fallback when rows are not whole blocks of dt. */
static wk_dtype fallback(wk_dtype dt, int64_t row) {
    if (fits(dt, row)) return dt;
    wk_dtype next = WK_F16;
    switch (dt) {
    case WK_Q2_K: case WK_Q3_K: case WK_IQ4_XS: next = WK_IQ4_NL; break;
    case WK_Q4_K: next = WK_Q5_0; break;
    case WK_Q5_K: next = WK_Q5_1; break;
    case WK_Q6_K: case WK_Q8_K: next = WK_Q8_0; break;
    case WK_Q4_0: case WK_Q4_1: case WK_Q5_0: case WK_Q5_1: case WK_Q8_0: case WK_Q8_1: case WK_IQ4_NL:
    case WK_U8: case WK_U32: case WK_I16: case WK_I32: case WK_I64: case WK_BF16: case WK_F16: case WK_F32:
    case WK_F64: case WK_F8E4M3: case WK_DTYPE_COUNT:
        break;
    }
    return fits(next, row) ? next : WK_F16;
}

static bool is_output(const char *name, bool tied) {
    return !strcmp(name, "output.weight") || !strcmp(name, "lm_head.weight") ||
           (tied && (!strcmp(name, "token_embd.weight") || !strcmp(name, "model.embed_tokens.weight")));
}

/* The dtype a tensor is written in. */
static wk_dtype target_of(const char *name, const wk_tensor *t, wk_dtype want, bool tied) {
    wk_dtype cur = wk_tensor_dtype(t);
    if (!wk_dtype_is_float(cur)) return cur; /* ids, masks: as they are */
    int r = wk_rank(t);
    if (r < 2 || strstr(name, "norm")) return WK_F32;
    wk_dtype dt = want;
    if (wk_dtype_is_quantized(want) && want != WK_Q8_0 && is_output(name, tied)) dt = WK_Q6_K;
    return wk_dtype_is_quantized(dt) ? fallback(dt, wk_shape(t)[r - 1]) : dt;
}

typedef struct {
    int done, total;
    bool tty;
    int last_decile;
} progress;

static void progress_step(progress *p, const char *name) {
    p->done++;
    if (p->tty) {
        int w = 30, fill = p->total ? p->done * w / p->total : w;
        fprintf(stderr, "\r[%.*s%*s] %d/%d %-40.40s", fill, "##############################", w - fill, "", p->done,
                p->total, name);
        if (p->done == p->total) fputc('\n', stderr);
    } else {
        int dec = p->total ? p->done * 10 / p->total : 10;
        if (dec != p->last_decile || p->done == p->total) {
            fprintf(stderr, "wick quantize: %d/%d tensors (%d%%)\n", p->done, p->total,
                    p->total ? p->done * 100 / p->total : 100);
            p->last_decile = dec;
        }
    }
}

/* The importance matrix of a run, and what it did. */
typedef struct {
    const wk_imatrix *m; /* NULL: none given */
    const char *path;
    int n_used, n_missing;
} imatrix_use;

static bool is_token_embd(const char *name) {
    return !strcmp(name, "token_embd.weight") || !strcmp(name, "model.embed_tokens.weight");
}

/* The weights for tensor t (name) and their count, or NULL to quantize
 * without; *bad when the entry does not fit t (an error but for the token
 * embedding, as llama-quantize). */
static const float *imatrix_for(imatrix_use *u, const char *name, const wk_tensor *t, int64_t *n, bool *bad) {
    *bad = false;
    if (!u->m) return NULL;
    const float *v = wk_imatrix_find(u->m, name, n);
    if (!v) {
        if (u->n_missing++ < 8) fprintf(stderr, "wick quantize: %s: no importance matrix entry, quantized without\n", name);
        return NULL;
    }
    int r = wk_rank(t);
    int64_t cols = wk_shape(t)[r - 1], per = cols * (r >= 2 ? wk_shape(t)[r - 2] : 1);
    int64_t mats = r >= 3 && per > 0 ? wk_numel(t) / per : 1;
    if (*n != cols && *n != cols * mats) {
        if (is_token_embd(name)) {
            fprintf(stderr, "wick quantize: %s: importance matrix of %lld values for %lld columns, quantized without\n",
                    name, (long long)*n, (long long)cols);
            u->n_missing++;
            return NULL;
        }
        fprintf(stderr, "wick quantize: %s: the importance matrix has %lld values, the tensor takes %lld\n", name,
                (long long)*n, (long long)(cols * mats));
        *bad = true;
        return NULL;
    }
    u->n_used++;
    return v;
}

/* Convert one tensor and hand it to the writer. */
static bool add_converted(wk_gguf_writer *w, const char *name, wk_tensor *t, wk_dtype want, bool tied,
                          int *n_fallback, imatrix_use *imx) {
    wk_dtype to = target_of(name, t, want, tied);
    if (wk_dtype_is_quantized(want) && wk_rank(t) >= 2 && wk_dtype_is_float(wk_tensor_dtype(t)) &&
        !strstr(name, "norm") && to != want && !(is_output(name, tied) && (to == WK_Q6_K || to == WK_Q8_0)) &&
        !fits(want, wk_shape(t)[wk_rank(t) - 1])) {
        if ((*n_fallback)++ < 8)
            fprintf(stderr, "wick quantize: %s: rows of %lld are not whole %s blocks, using %s\n", name,
                    (long long)wk_shape(t)[wk_rank(t) - 1], wk_dtype_name(want), wk_dtype_name(to));
    }
    wk_tensor *out = t;
    wk_tensor *f32 = NULL;
    if (wk_tensor_dtype(t) != to) {
        /* through f32: block -> element dequantizes, element -> block quantizes */
        const wk_tensor *src = t;
        if (wk_dtype_is_quantized(wk_tensor_dtype(t)) && wk_dtype_is_quantized(to)) {
            f32 = wk_to_dtype(t, WK_F32);
            if (!f32) return false;
            src = f32;
        }
        int64_t n_w = 0;
        bool bad = false;
        const float *qw = wk_dtype_is_quantized(to) ? imatrix_for(imx, name, t, &n_w, &bad) : NULL;
        if (bad) {
            wk_tensor_free(f32);
            return false;
        }
        out = qw ? wk_quantize_imatrix(src, to, qw, n_w) : wk_to_dtype(src, to);
        if (!out) {
            wk_tensor_free(f32);
            return false;
        }
    }
    wk_status st = wk_gguf_writer_add_tensor(w, name, out);
    if (out != t) wk_tensor_free(out);
    wk_tensor_free(f32);
    return st == WK_OK;
}

static bool copy_metadata(wk_gguf_writer *w, const wk_gguf *g) {
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        const char *k = wk_gguf_key(g, i);
        if (!strcmp(k, "general.file_type") || !strcmp(k, "general.quantization_version") ||
            !strncmp(k, "quantize.imatrix.", 17))
            continue;
        if (wk_gguf_writer_copy_kv(w, g, i) != WK_OK) return false;
    }
    return true;
}

static bool set_file_type(wk_gguf_writer *w, wk_dtype want, const imatrix_use *u) {
    int ft = ftype_of(want);
    if (ft >= 0 && wk_gguf_writer_add_u32(w, "general.file_type", (uint32_t)ft) != WK_OK) return false;
    if (wk_dtype_is_quantized(want) && wk_gguf_writer_add_u32(w, "general.quantization_version", 2) != WK_OK)
        return false;
    if (!u->m) return true;
    /* what llama-quantize records of its matrix */
    const char *ds = wk_imatrix_dataset(u->m);
    if (wk_gguf_writer_add_string(w, "quantize.imatrix.file", u->path, strlen(u->path)) != WK_OK) return false;
    if (ds && wk_gguf_writer_add_string(w, "quantize.imatrix.dataset", ds, strlen(ds)) != WK_OK) return false;
    if (wk_gguf_writer_add_u32(w, "quantize.imatrix.entries_count", (uint32_t)wk_imatrix_count(u->m)) != WK_OK)
        return false;
    int64_t chunks = wk_imatrix_chunk_count(u->m);
    if (chunks > 0 && wk_gguf_writer_add_u32(w, "quantize.imatrix.chunks_count", (uint32_t)chunks) != WK_OK)
        return false;
    return true;
}

/* A model file being read: its tensors by index, whatever the format. */
typedef struct {
    int64_t count;
    bool tied; /* no separate output projection: the token embedding is it */
    const char *(*name)(const void *src, int64_t i);
    wk_tensor *(*tensor)(const void *src, int64_t i);
    const void *src;
} model_source;

/* Convert every tensor of m into w (metadata already added) and write out. */
static int convert_all(wk_gguf_writer *w, const model_source *m, const char *out, wk_dtype want, imatrix_use *imx) {
    int n_fallback = 0;
    progress p = {.total = (int)m->count, .tty = isatty(2), .last_decile = -1};
    for (int64_t i = 0; i < m->count; i++) {
        const char *name = m->name(m->src, i);
        wk_tensor *t = m->tensor(m->src, i);
        if (!t) return wk__cli_fail("quantize");
        bool ok = add_converted(w, name, t, want, m->tied, &n_fallback, imx);
        wk_tensor_free(t);
        if (!ok) return wk__cli_fail("quantize");
        progress_step(&p, name);
    }
    if (wk_gguf_writer_write(w, out) != WK_OK) return wk__cli_fail("quantize");
    if (n_fallback > 8) fprintf(stderr, "wick quantize: ... %d tensors used a fallback type in all\n", n_fallback);
    if (imx->m)
        fprintf(stderr, "wick quantize: importance matrix used for %d tensors, %d quantized without one\n",
                imx->n_used, imx->n_missing);
    return 0;
}

static const char *gguf_name(const void *g, int64_t i) { return wk_gguf_tensor_name(g, i); }
static wk_tensor *gguf_tensor(const void *g, int64_t i) { return wk_gguf_tensor_at(g, i); }
static const char *st_name(const void *st, int64_t i) { return wk_safetensors_name(st, (int)i); }
static wk_tensor *st_tensor(const void *st, int64_t i) {
    return wk_safetensors_get((wk_safetensors *)st, wk_safetensors_name(st, (int)i));
}

static int quantize_gguf(const char *in, const char *out, wk_dtype want, imatrix_use *imx) {
    wk_gguf *g = wk_gguf_open(in);
    if (!g) return wk__cli_fail("quantize");
    wk_gguf_writer *w = wk_gguf_writer_new();
    model_source m = {.count = wk_gguf_tensor_count(g), .tied = wk_gguf_find_tensor(g, "output.weight") < 0,
                      .name = gguf_name, .tensor = gguf_tensor, .src = g};
    int rc = (!w || !copy_metadata(w, g) || !set_file_type(w, want, imx)) ? wk__cli_fail("quantize")
                                                                          : convert_all(w, &m, out, want, imx);
    wk_gguf_writer_free(w);
    wk_gguf_close(g);
    return rc;
}

/* The checkpoint's own metadata, namespaced; tensor names stay the HF ones. */
static bool copy_st_metadata(wk_gguf_writer *w, const wk_safetensors *st) {
    for (int i = 0; i < wk_safetensors_meta_count(st); i++) {
        const char *k = wk_safetensors_meta_key(st, i), *v = wk_safetensors_meta_value(st, k);
        char key[256];
        snprintf(key, sizeof key, "safetensors.%s", k);
        if (wk_gguf_writer_add_string(w, key, v, strlen(v)) != WK_OK) return false;
    }
    return true;
}

static int quantize_safetensors(const char *in, const char *out, wk_dtype want, imatrix_use *imx) {
    wk_safetensors *st = wk_safetensors_open(in);
    if (!st) return wk__cli_fail("quantize");
    wk_gguf_writer *w = wk_gguf_writer_new();
    model_source m = {.count = wk_safetensors_count(st), .tied = wk_safetensors_find(st, "lm_head.weight") < 0,
                      .name = st_name, .tensor = st_tensor, .src = st};
    int rc = (!w || !set_file_type(w, want, imx) || !copy_st_metadata(w, st)) ? wk__cli_fail("quantize")
                                                                              : convert_all(w, &m, out, want, imx);
    wk_gguf_writer_free(w);
    wk_safetensors_close(st);
    return rc;
}

int wk__cli_quantize(int argc, char **argv) {
    wk_dtype want;
    imatrix_use imx = {0};
    /* --imatrix FILE, anywhere among the positional arguments */
    char *pos[3];
    int npos = 0;
    bool bad = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--imatrix")) {
            if (i + 1 >= argc || imx.path) bad = true;
            else imx.path = argv[++i];
        } else if (npos < 3) {
            pos[npos++] = argv[i];
        } else {
            bad = true;
        }
    }
    if (bad || npos != 3 || !parse_type(pos[2], &want)) {
        fprintf(stderr,
                "usage: wick quantize [--imatrix FILE] IN OUT TYPE\n"
                "  IN    a GGUF file, or a safetensors file / index .json / directory\n"
                "  OUT   the GGUF to write\n"
                "  TYPE  q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_K q3_K q4_K q5_K q6_K q8_K iq4_nl iq4_xs,\n"
                "        or f32 f16 bf16 (dequantize); any case\n"
                "  --imatrix FILE  an importance matrix from llama-imatrix (GGUF or legacy .dat): tensors\n"
                "        it names are quantized with it (q4_0..q5_1, q2_K..q6_K, iq4_nl, iq4_xs use it),\n"
                "        the others without\n");
        return 2;
    }
    if (imx.path) {
        wk_imatrix *m = wk_imatrix_load(imx.path);
        if (!m) return wk__cli_fail("quantize");
        imx.m = m;
        fprintf(stderr, "wick quantize: %s: %lld importance matrix entries (%s)\n", imx.path,
                (long long)wk_imatrix_count(m), wk_imatrix_is_legacy(m) ? "legacy .dat" : "GGUF");
    }
    int rc;
    int fmt = wk__cli_sniff(pos[0]);
    if (fmt == WK__CLI_GGUF) rc = quantize_gguf(pos[0], pos[1], want, &imx);
    else if (fmt == WK__CLI_SAFETENSORS) rc = quantize_safetensors(pos[0], pos[1], want, &imx);
    else {
        fprintf(stderr, "wick quantize: %s is neither a GGUF nor a safetensors file or directory\n", pos[0]);
        rc = 1;
    }
    wk_imatrix_free((wk_imatrix *)imx.m);
    return rc;
}
