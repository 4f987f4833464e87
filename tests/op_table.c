/* The op-test table compiled from tests/oracle/op_table.def; see op_table.h. */
#include "op_table.h"

#include <stdlib.h>
#include <string.h>

#include "oracle_util.h"
#include "testutil.h" /* cmocka: ot_coverage_test is the body of a cmocka test */

static const char *const k_layouts[OT_NLAYOUTS] = {"c", "t", "n", "b", "tn", "p", "e", "1", "0"};

const char *ot_layout_name(int i) { return i >= 0 && i < OT_NLAYOUTS ? k_layouts[i] : "?"; }

/* Calls each space-separated token of s with fn; false when fn refuses one. */
static bool each_token(const char *s, bool (*fn)(const char *tok, void *arg), void *arg) {
    char tok[32];
    while (*s) {
        while (*s == ' ') s++;
        size_t n = strcspn(s, " ");
        if (!n) break;
        if (n >= sizeof tok) return false;
        memcpy(tok, s, n);
        tok[n] = 0;
        if (!fn(tok, arg)) return false;
        s += n;
    }
    return true;
}

static bool layout_tok(const char *tok, void *arg) {
    for (int i = 0; i < OT_NLAYOUTS; i++)
        if (strcmp(tok, k_layouts[i]) == 0) {
            *(int *)arg |= 1 << i;
            return true;
        }
    return false;
}

int ot_parse_layouts(const char *s) {
    int m = 0;
    return each_token(s, layout_tok, &m) ? m : -1;
}

static bool dtype_tok(const char *tok, void *arg) {
    unsigned *m = arg;
    static const struct { const char *name, *list; } groups[] = {
        {"FLOAT", "f32 f64 f16 bf16 f8e4m3"},
        {"FLOAT4", "f32 f64 f16 bf16"},
        {"INT", "u8 u32 i16 i32 i64"},
        {"ALL", "u8 u32 i16 i32 i64 bf16 f16 f32 f64 f8e4m3"},
    };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (strcmp(tok, groups[i].name) == 0) return each_token(groups[i].list, dtype_tok, arg);
    wk_dtype dt;
    if (!wk_dtype_from_name(tok, &dt)) return false;
    *m |= 1u << dt;
    return true;
}

unsigned ot_dtype_mask(const ot_entry *e) {
    unsigned m = 0;
    return each_token(e->dtypes, dtype_tok, &m) ? m : 0;
}

int ot_layout_mask(const ot_entry *e) { return ot_parse_layouts(e->layouts); }

void ot_tol_class(const ot_entry *e, char *out, size_t cap) {
    size_t n = strcspn(e->tol, ":");
    if (n >= cap) n = cap - 1;
    memcpy(out, e->tol, n);
    out[n] = 0;
}

/* The backend-vs-CPU tolerance of each tolerance class, a multiple of
 * tu_tol(result dtype) (tests/testutil.c: f64 1e-12, f32 2e-6, f16 2e-3,
 * bf16 1.6e-2, f8e4m3 0.13) applied as both atol and rtol. Only "exact" is
 * compared bit for bit; every other class - so every transcendental, and
 * every f64 op that is not exact by construction - gets a bound, because
 * libdevice and nvcc's FMA contraction can put the GPU an ulp or more from
 * the CPU. An op's ":S" overrides its class's scale (never to 0). */
static const struct {
    const char *cls;
    double scale;
} k_backend_scale[] = {
    /* data movement, comparisons, integer ops, and the float ops IEEE rounds
     * once (+ - * / sqrt recip, max/min, casts, affine as mul then add: the
     * kernels spell those __f*_rn so nvcc cannot contract them into an FMA):
     * bit-identical by construction */
    {"exact", 0.0},
    /* exp log sin cos tanh erf gelu silu sigmoid: libdevice is a few ulp
     * from glibc and wick's SIMD polynomials (f64 included), and a f16/bf16
     * result can round the other way at a boundary */
    {"trans", 4.0},
    /* pow / powf: libdevice pow against C pow; large exponents amplify an
     * ulp of the log */
    {"pow", 4.0},
    /* several roundings whose order or contraction the kernel decides (elu's
     * exp path, bilinear weights, rope's products with FMA contraction) */
    {"tol", 2.0},
    /* sums in another order (tree reductions, cuBLAS's blocking; f16/bf16
     * GEMMs accumulate in f32 with reduced-precision split-K reduction
     * disallowed, so the bound is the f32 sum's, rounded once) */
    {"acc", 8.0},
};

double ot_backend_scale(const ot_entry *e) {
    const char *colon = strchr(e->tol, ':');
    if (colon) return atof(colon + 1);
    char cls[16];
    ot_tol_class(e, cls, sizeof cls);
    for (size_t i = 0; i < sizeof k_backend_scale / sizeof k_backend_scale[0]; i++)
        if (strcmp(cls, k_backend_scale[i].cls) == 0) return k_backend_scale[i].scale;
    return -1.0; /* not a class: ot_backend_scale_problem says so */
}

const char *ot_backend_scale_problem(const ot_entry *e) {
    char cls[16];
    ot_tol_class(e, cls, sizeof cls);
    bool known = false;
    for (size_t i = 0; i < sizeof k_backend_scale / sizeof k_backend_scale[0]; i++)
        if (strcmp(cls, k_backend_scale[i].cls) == 0) known = true;
    if (!known) return "its tolerance class has no row in the backend tolerance table";
    double s = ot_backend_scale(e);
    if (strcmp(cls, "exact") != 0 && !(s > 0)) return "a non-exact class would be bit-compared (scale <= 0)";
    if (strcmp(cls, "exact") == 0 && s != 0) return "an exact op has a backend scale";
    return NULL;
}

/* ------------------------------------------------- call-side helpers */

static void bad(ot_ctx *x, const char *fmt, const char *what) {
    if (!x->bad) snprintf(x->why, sizeof x->why, fmt, what);
    x->bad = true;
}

wk_tensor *ot_in(ot_ctx *x, int i) {
    if (i < x->nin) return x->in[i];
    char n[16];
    snprintf(n, sizeof n, "%d", i + 1);
    bad(x, "the op needs at least %s inputs", n);
    return NULL;
}

wk_tensor *ot_opt(ot_ctx *x, int i) { return i >= 0 && i < x->nin ? x->in[i] : NULL; }

static bool param_str(ot_ctx *x, const char *key, char *out, size_t cap) {
    if (ou_param(x->params, key, out, cap)) return true;
    bad(x, "parameter %s missing", key);
    return false;
}

double ot_pf(ot_ctx *x, const char *key) {
    char buf[64], *end;
    if (!param_str(x, key, buf, sizeof buf)) return 0;
    double v = strtod(buf, &end);
    if (end == buf || *end) bad(x, "parameter %s is not a number", key);
    return v;
}

long long ot_pi(ot_ctx *x, const char *key) {
    char buf[64], *end;
    if (!param_str(x, key, buf, sizeof buf)) return 0;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || *end) bad(x, "parameter %s is not an integer", key);
    return v;
}

/* "AxB" parameter into two integers. */
static void pair_param(ot_ctx *x, const char *key, int64_t *a, int64_t *b) {
    char buf[64];
    int64_t s[WK_MAX_RANK];
    *a = *b = 0;
    if (!param_str(x, key, buf, sizeof buf)) return;
    if (ou_parse_shape(buf, s) != 2) {
        bad(x, "parameter %s is not AxB", key);
        return;
    }
    *a = s[0];
    *b = s[1];
}

wk_tensor *ot_reduce(ot_ctx *x, wk_reduce_op op) {
    char buf[128];
    long long dl[WK_MAX_RANK];
    wk_tensor *t = ot_in(x, 0);
    long long keep = ot_pi(x, "keep");
    int nd = param_str(x, "dims", buf, sizeof buf) ? ou_parse_ints(buf, '|', dl, WK_MAX_RANK) : -1;
    if (nd < 0) bad(x, "parameter %s is not a '|' list", "dims");
    if (x->bad) return NULL;
    int dims[WK_MAX_RANK];
    for (int i = 0; i < nd; i++) dims[i] = (int)dl[i];
    switch (op) {
    case WK_REDUCE_SUM: return wk_sum(t, dims, nd, keep != 0);
    case WK_REDUCE_MEAN: return wk_mean(t, dims, nd, keep != 0);
    case WK_REDUCE_MAX: return wk_max(t, dims, nd, keep != 0);
    case WK_REDUCE_MIN: return wk_min(t, dims, nd, keep != 0);
    case WK_REDUCE_ARGMAX:
    case WK_REDUCE_ARGMIN:
        /* the one-dim entry points, and the general one for a wrong dim count */
        if (nd == 1) return op == WK_REDUCE_ARGMAX ? wk_argmax(t, dims[0], keep != 0) : wk_argmin(t, dims[0], keep != 0);
        return wk_reduce(t, op, dims, nd, keep != 0);
    case WK_REDUCE_PROD:
    case WK_REDUCE_ANY:
    case WK_REDUCE_ALL:
    case WK_REDUCE_COUNT: return wk_reduce(t, op, dims, nd, keep != 0);
    }
    return NULL;
}

wk_tensor *ot_cast(ot_ctx *x) {
    char buf[32];
    wk_dtype to;
    wk_tensor *t = ot_in(x, 0);
    if (!param_str(x, "to", buf, sizeof buf)) return NULL;
    if (!wk_dtype_from_name(buf, &to)) {
        bad(x, "parameter to=%s is not a dtype", buf);
        return NULL;
    }
    return x->bad ? NULL : wk_to_dtype(t, to);
}

wk_tensor *ot_join(ot_ctx *x, bool stack) {
    int dim = (int)ot_pi(x, "dim");
    if (x->bad) return NULL;
    wk_tensor **list = (wk_tensor **)x->in; /* wk_cat takes a non-const list it does not change */
    return stack ? wk_stack(list, x->nin, dim) : wk_cat(list, x->nin, dim);
}

wk_tensor *ot_create(ot_ctx *x, char which) {
    char buf[128];
    int64_t shape[WK_MAX_RANK];
    int rank = param_str(x, "shape", buf, sizeof buf) ? ou_parse_shape(buf, shape) : -1;
    if (rank < 0) bad(x, "parameter %s is not a shape", "shape");
    double v = which == 'f' ? ot_pf(x, "value") : 0;
    if (x->bad) return NULL;
    if (which == 'z') return wk_zeros(shape, rank, x->dt, x->dev);
    if (which == 'o') return wk_ones(shape, rank, x->dt, x->dev);
    return wk_full(shape, rank, v, x->dt, x->dev);
}

static int64_t opt_int(ot_ctx *x, const char *key) {
    char buf[32];
    return ou_param(x->params, key, buf, sizeof buf) ? ot_pi(x, key) : 0;
}

wk_tensor *ot_conv(ot_ctx *x, int dims, bool transposed) {
    wk_conv_params p = {
        .padding = opt_int(x, "padding"),
        .stride = opt_int(x, "stride"),
        .dilation = opt_int(x, "dilation"),
        .groups = opt_int(x, "groups"),
        .output_padding = opt_int(x, "output_padding"),
    };
    wk_tensor *in = ot_in(x, 0), *w = ot_in(x, 1);
    if (x->bad) return NULL;
    if (dims == 1) return transposed ? wk_conv_transpose1d(in, w, &p) : wk_conv1d(in, w, &p);
    return transposed ? wk_conv_transpose2d(in, w, &p) : wk_conv2d(in, w, &p);
}

wk_tensor *ot_pool(ot_ctx *x, char which) {
    int64_t kh, kw, sh, sw, ph, pw, oh, ow;
    wk_tensor *in = ot_in(x, 0);
    if (which == 'm' || which == 'a') {
        pair_param(x, "k", &kh, &kw);
        pair_param(x, "s", &sh, &sw);
        pair_param(x, "p", &ph, &pw);
        bool cip = which == 'a' && ot_pi(x, "cip") != 0;
        if (x->bad) return NULL;
        return which == 'm' ? wk_max_pool2d(in, kh, kw, sh, sw, ph, pw) : wk_avg_pool2d(in, kh, kw, sh, sw, ph, pw, cip);
    }
    if (which == '1') {
        int64_t len = ot_pi(x, "size");
        return x->bad ? NULL : wk_upsample_nearest1d(in, len);
    }
    pair_param(x, "size", &oh, &ow);
    bool ac = which == 'b' && ot_pi(x, "ac") != 0;
    if (x->bad) return NULL;
    return which == 'n' ? wk_upsample_nearest2d(in, oh, ow) : wk_upsample_bilinear2d(in, oh, ow, ac);
}

/* Two results: the values are returned, the indices go to x->more[0]. */
wk_tensor *ot_sort(ot_ctx *x) {
    wk_tensor *t = ot_in(x, 0), *v = NULL;
    int dim = (int)ot_pi(x, "dim");
    bool desc = ot_pi(x, "desc") != 0;
    if (x->bad) return NULL;
    if (wk_sort(t, dim, desc, &v, &x->more[0]) != WK_OK) return NULL;
    x->nmore = 1;
    return v;
}

wk_tensor *ot_topk(ot_ctx *x) {
    wk_tensor *t = ot_in(x, 0), *v = NULL;
    int dim = (int)ot_pi(x, "dim");
    int64_t k = ot_pi(x, "k");
    bool largest = ot_pi(x, "largest") != 0;
    if (x->bad) return NULL;
    if (wk_topk(t, k, dim, largest, &v, &x->more[0]) != WK_OK) return NULL;
    x->nmore = 1;
    return v;
}

/* '|'-joined integers of key into out; the count, -1 when absent (bad when
 * present but malformed). */
static int int_list(ot_ctx *x, const char *key, int64_t *out) {
    char buf[256];
    long long v[WK_MAX_RANK];
    if (!ou_param(x->params, key, buf, sizeof buf)) return -1;
    int n = ou_parse_ints(buf, '|', v, WK_MAX_RANK);
    if (n < 0) {
        bad(x, "parameter %s is not a '|' list", key);
        return -1;
    }
    for (int i = 0; i < n; i++) out[i] = (int64_t)v[i];
    return n;
}

/* p, dims (absent: every dim), keep. */
wk_tensor *ot_norm(ot_ctx *x) {
    int64_t d64[WK_MAX_RANK];
    int dims[WK_MAX_RANK];
    wk_tensor *t = ot_in(x, 0);
    double p = ot_pf(x, "p");
    bool keep = ot_pi(x, "keep") != 0;
    int nd = int_list(x, "dims", d64);
    if (x->bad) return NULL;
    for (int i = 0; i < nd; i++) dims[i] = (int)d64[i];
    return wk_norm(t, p, nd > 0 ? dims : NULL, nd > 0 ? nd : 0, keep);
}

/* Every input is one operand; outputs 2..n go to x->more. idx=ij|xy
 * (absent: ij). */
wk_tensor *ot_meshgrid(ot_ctx *x) {
    char idx[8] = "ij";
    wk_tensor *out[OT_MAX_MORE + 1];
    ou_param(x->params, "idx", idx, sizeof idx);
    if (strcmp(idx, "ij") != 0 && strcmp(idx, "xy") != 0) bad(x, "parameter %s is not ij or xy", "idx");
    if (x->nin > OT_MAX_MORE + 1) bad(x, "%s: too many inputs", "meshgrid");
    if (x->bad) return NULL;
    if (wk_meshgrid(x->in, x->nin, idx[0] == 'x' ? WK_MESHGRID_XY : WK_MESHGRID_IJ, out) != WK_OK) return NULL;
    for (int i = 1; i < x->nin; i++) x->more[i - 1] = out[i];
    x->nmore = x->nin - 1;
    return out[0];
}

/* Input 0 the destination, input 1 the source; starts, ends and (optional)
 * steps '|' lists. The in-place form returns a new view of the destination
 * after the write (the input itself belongs to the caller's scope). */
wk_tensor *ot_slice_assign(ot_ctx *x, bool inplace) {
    int64_t st[WK_MAX_RANK], en[WK_MAX_RANK], sp[WK_MAX_RANK];
    wk_tensor *dst = ot_in(x, 0), *src = ot_in(x, 1);
    int n = int_list(x, "starts", st);
    if (n < 0) bad(x, "parameter %s missing", "starts");
    if (int_list(x, "ends", en) != n) bad(x, "parameter %s missing or not as long as starts", "ends");
    int ns = int_list(x, "steps", sp);
    if (ns >= 0 && ns != n) bad(x, "parameter %s not as long as starts", "steps");
    if (x->bad) return NULL;
    const int64_t *steps = ns < 0 ? NULL : sp;
    if (!inplace) return wk_slice_assign(dst, st, en, steps, n, src);
    if (wk_slice_assign_(dst, st, en, steps, n, src) != WK_OK) return NULL;
    return wk_contiguous(dst);
}

/* The reductions of the scan oracle over "dims" ('|' list; empty: none) with
 * keep: 'v' var and 's' std (unb), 'l' log_sum_exp, 'p' prod, 'a' any,
 * 'A' all. */
wk_tensor *ot_stat(ot_ctx *x, char which) {
    int64_t d64[WK_MAX_RANK];
    int dims[WK_MAX_RANK];
    wk_tensor *t = ot_in(x, 0);
    bool keep = ot_pi(x, "keep") != 0;
    bool unb = (which == 'v' || which == 's') && ot_pi(x, "unb") != 0;
    int nd = int_list(x, "dims", d64);
    if (nd < 0) bad(x, "parameter %s missing", "dims");
    if (x->bad) return NULL;
    for (int i = 0; i < nd; i++) dims[i] = (int)d64[i];
    if (which == 'v') return wk_var(t, dims, nd, keep, unb);
    if (which == 's') return wk_std(t, dims, nd, keep, unb);
    if (which == 'l') return wk_log_sum_exp(t, dims, nd, keep);
    if (which == 'p') return wk_prod(t, dims, nd, keep);
    return which == 'a' ? wk_any(t, dims, nd, keep) : wk_all(t, dims, nd, keep);
}

/* wk_scatter_ / wk_scatter_add_ into input 0 (ids input 1, src input 2);
 * like ot_slice_assign's in-place form, a new view of input 0 after the write. */
wk_tensor *ot_scatter_inplace(ot_ctx *x, bool add) {
    wk_tensor *t = ot_in(x, 0), *ids = ot_in(x, 1), *src = ot_in(x, 2);
    int dim = (int)ot_pi(x, "dim");
    if (x->bad) return NULL;
    wk_status st = add ? wk_scatter_add_(t, ids, src, dim) : wk_scatter_(t, ids, src, dim);
    return st == WK_OK ? wk_contiguous(t) : NULL;
}

/* dims: a '|' list. */
wk_tensor *ot_flip(ot_ctx *x) {
    int64_t d64[WK_MAX_RANK];
    int dims[WK_MAX_RANK];
    wk_tensor *t = ot_in(x, 0);
    int nd = int_list(x, "dims", d64);
    if (nd < 0) bad(x, "parameter %s missing", "dims");
    if (x->bad) return NULL;
    for (int i = 0; i < nd; i++) dims[i] = (int)d64[i];
    return wk_flip(t, dims, nd);
}

/* reps: a '|' list. */
wk_tensor *ot_repeat(ot_ctx *x) {
    int64_t reps[WK_MAX_RANK];
    wk_tensor *t = ot_in(x, 0);
    int n = int_list(x, "reps", reps);
    if (n < 0) bad(x, "parameter %s missing", "reps");
    return x->bad ? NULL : wk_repeat(t, reps, n);
}

/* 'n' nearest1d (s), 'N' nearest2d (sh, sw), 'b' bilinear2d (sh, sw, ac). */
wk_tensor *ot_upsample_scale(ot_ctx *x, char which) {
    wk_tensor *in = ot_in(x, 0);
    if (which == 'n') {
        double s = ot_pf(x, "s");
        return x->bad ? NULL : wk_upsample_nearest1d_scale(in, s);
    }
    double sh = ot_pf(x, "sh"), sw = ot_pf(x, "sw");
    bool ac = which == 'b' && ot_pi(x, "ac") != 0;
    if (x->bad) return NULL;
    return which == 'N' ? wk_upsample_nearest2d_scale(in, sh, sw) : wk_upsample_bilinear2d_scale(in, sh, sw, ac);
}

/* --------------------------------------------------------- the table */

#define A(i) ot_in(X, (i))
#define PF(k) ot_pf(X, (k))
#define PI(k) ot_pi(X, (k))

/* one call function per op: the OP's last field is its body */
#define OP(id, name, kind, oracle, dtypes, layouts, tol, grad, dom, bk, ...) \
    static wk_tensor *call_##id(ot_ctx *X) { return __VA_ARGS__; }
#include "oracle/op_table.def"
#undef OP

const ot_entry ot_table[] = {
#define OP(id, name, kind, oracle, dtypes, layouts, tol, grad, dom, bk, ...) \
    {#id, name, kind, oracle, dtypes, layouts, tol, grad, dom, bk, call_##id},
#include "oracle/op_table.def"
#undef OP
};
const int ot_count = (int)(sizeof ot_table / sizeof ot_table[0]);

const ot_entry *ot_find(const char *name) {
    for (int i = 0; i < ot_count; i++)
        if (strcmp(ot_table[i].name, name) == 0) return &ot_table[i];
    return NULL;
}

wk_tensor *ot_run(const ot_entry *e, ot_ctx *x) {
    x->bad = false;
    x->why[0] = 0;
    x->nmore = 0;
    for (int i = 0; i < OT_MAX_MORE; i++) x->more[i] = NULL;
    wk_tensor *r = e->call(x);
    if (x->bad) {
        wk_tensor_free(r);
        for (int i = 0; i < x->nmore; i++) wk_tensor_free(x->more[i]);
        x->nmore = 0;
        return NULL;
    }
    return r;
}

int ot_case_layouts(const char *const *specs, wk_tensor *const *in, int nin, wk_tensor *const *out, int nout) {
    int m = nin ? 0 : OT_C;
    for (int i = 0; i < nin; i++) {
        const char *at = strchr(specs[i], '@');
        size_t len = at ? strcspn(at + 1, "#") : 0;
        int own = 0;
        for (size_t k = 0; at && k < len; k += strcspn(at + 1 + k, "+") + 1) {
            switch (at[1 + k]) {
            case 't': own |= OT_T; break;
            case 'n': own |= OT_N; break;
            case 'b': own |= OT_B; break;
            case 'p': own |= OT_P; break;
            }
        }
        if ((own & OT_T) && (own & OT_N)) own |= OT_TN;
        m |= own ? own : OT_C;
        int64_t n = wk_numel(in[i]);
        if (n == 0) m |= OT_E;
        else if (wk_rank(in[i]) == 0) m |= OT_0;
        else if (n == 1) m |= OT_1;
    }
    for (int i = 0; i < nout; i++)
        if (out[i] && wk_numel(out[i]) == 0) m |= OT_E;
    return m;
}

static int g_cover[sizeof ot_table / sizeof ot_table[0]][WK_DTYPE_COUNT];

void ot_cover(const ot_entry *e, wk_dtype dt, int layouts) {
    if (e >= ot_table && e < ot_table + ot_count && (int)dt >= 0 && dt < WK_DTYPE_COUNT)
        g_cover[e - ot_table][dt] |= layouts;
}

bool ot_cover_case(const char *id, const ot_entry *e, wk_dtype dt, const char *const *specs, wk_tensor *const *in,
                   int nin, wk_tensor *const *out, int nout) {
    ot_cover(e, dt, ot_case_layouts(specs, in, nin, out, nout));
    if (ot_dtype_mask(e) & (1u << dt)) return true;
    printf("FAIL %s op=%s dtype=%s: must succeed, but the op table does not declare that dtype\n", id, e->name,
           wk_dtype_name(dt));
    return false;
}

int ot_cover_check(const char *oracle, int *tuples) {
    int gaps = 0;
    *tuples = 0;
    for (int k = 0; k < ot_count; k++) {
        const ot_entry *e = &ot_table[k];
        if (strcmp(e->oracle, oracle) != 0) continue;
        unsigned dm = ot_dtype_mask(e);
        int lm = ot_layout_mask(e);
        if (!dm || lm <= 0) {
            printf("FAIL op table entry %s: bad dtypes '%s' or layouts '%s'\n", e->name, e->dtypes, e->layouts);
            gaps++;
            continue;
        }
        for (int d = 0; d < WK_DTYPE_COUNT; d++)
            for (int l = 0; (dm & (1u << d)) && l < OT_NLAYOUTS; l++) {
                if (!(lm & (1 << l))) continue;
                ++*tuples;
                if (!(g_cover[k][d] & (1 << l))) {
                    printf("FAIL op table: %s on %s declares layout '%s' but %s has no such case\n", e->name,
                           wk_dtype_name((wk_dtype)d), ot_layout_name(l), oracle);
                    gaps++;
                }
            }
    }
    return gaps;
}

void ot_coverage_test(const char *label, const char *oracle, int ncases, int problems) {
    if (ncases == 0) skip();
    int tuples = 0;
    problems += ot_cover_check(oracle, &tuples);
    printf("%s: op table coverage: %d (op, dtype, layout) tuples declared, %d problems\n", label, tuples, problems);
    assert_true(tuples > 0);
    if (problems) fail_msg("%d op-table coverage problems (the FAIL lines above say which)", problems);
}

static void json_str(FILE *f, const char *key, const char *v, bool comma) {
    fprintf(f, "\"%s\": \"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
    }
    fprintf(f, "\"%s", comma ? ", " : "");
}

void ot_print_json(FILE *f) {
    fprintf(f, "[\n");
    for (int i = 0; i < ot_count; i++) {
        const ot_entry *e = &ot_table[i];
        fprintf(f, "  {");
        json_str(f, "id", e->id, true);
        json_str(f, "name", e->name, true);
        json_str(f, "kind", e->kind, true);
        json_str(f, "oracle", e->oracle, true);
        json_str(f, "dtypes", e->dtypes, true);
        json_str(f, "layouts", e->layouts, true);
        json_str(f, "tol", e->tol, true);
        fprintf(f, "\"grad\": %d, ", e->grad);
        json_str(f, "dom", e->dom, true);
        json_str(f, "bk", e->bk, false);
        fprintf(f, "}%s\n", i + 1 < ot_count ? "," : "");
    }
    fprintf(f, "]\n");
}
