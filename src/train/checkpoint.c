/* Checkpoints (train.h): parameters, and optionally an optimizer's state,
 * in one safetensors file.
 *   tensors:  <name> for each parameter; "optim.<name>.m" / "optim.<name>.v"
 *             for each parameter with state (SGD momentum: m only)
 *   metadata: "wick.checkpoint" = "1"; with an optimizer "optim.kind"
 *             (sgd | adam | adamw), its config ("optim.lr", ... as %.17g, so
 *             they read back exactly), "optim.steps" and "optim.<name>.step"
 *             for each parameter that has stepped.
 * Loading checks the whole file against the parameters (and optimizer)
 * before writing anything: a missing or mis-shaped tensor, a malformed or
 * inconsistent metadata value is WK_ERR_FORMAT naming it. */
#include "train/train_internal.h"
#include "wick/train.h"
#include "wick/safetensors.h"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_FIELDS(X)                                                                                              \
    X(lr) X(weight_decay) X(momentum) X(dampening) X(beta1) X(beta2) X(eps)

static const char *kind_name(wk_optimizer_kind k) { return k == WK_SGD ? "sgd" : k == WK_ADAM ? "adam" : "adamw"; }

/* A growing list of owned strings (names and metadata). */
typedef struct strs {
    char **v;
    int n, cap;
} strs;
static const char *strs_add(strs *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *strs_add(strs *s, const char *fmt, ...) {
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 32;
        char **g = realloc(s->v, sizeof *g * (size_t)nc);
        if (!g) return NULL;
        s->v = g;
        s->cap = nc;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) return NULL;
    char *b = malloc((size_t)len + 1);
    if (!b) return NULL;
    va_start(ap, fmt);
    vsnprintf(b, (size_t)len + 1, fmt, ap);
    va_end(ap);
    s->v[s->n++] = b;
    return b;
}
static void strs_free(strs *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
}

static wk_status check_lists(const char *op, const char *const *names, wk_tensor *const *params, int n) {
    if (n < 0 || (n > 0 && (!names || !params))) return wk__err(WK_ERR_ARG, op, "bad name / parameter lists (n = %d)", n);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0]) return wk__err(WK_ERR_ARG, op, "parameter %d has no name", i);
        if (!wk__check_in(op, params[i])) return wk_last_status();
    }
    return WK_OK;
}

static wk_status check_opt_params(const char *op, const wk_optimizer *opt, wk_tensor *const *params, int n) {
    if (opt->n != n) return wk__err(WK_ERR_ARG, op, "the optimizer has %d parameters, the lists %d", opt->n, n);
    for (int i = 0; i < n; i++)
        if (opt->p[i]->node != params[i]->node) /* the optimizer holds its own header of each */
            return wk__err(WK_ERR_ARG, op, "parameter %d is not the optimizer's parameter %d (same params, same order)", i, i);
    return WK_OK;
}

wk_status wk_checkpoint_save(const char *path, const char *const *names, wk_tensor *const *params, int n,
                             const wk_optimizer *opt) {
    const char *op = "wk_checkpoint_save";
    if (!path) return wk__err(WK_ERR_ARG, op, "NULL path");
    if (check_lists(op, names, params, n) != WK_OK) return wk_last_status();
    if (opt && check_opt_params(op, opt, params, n) != WK_OK) return wk_last_status();
    strs tn = {0}, mk = {0}, mv = {0};
    wk_tensor **ts = malloc(sizeof *ts * (size_t)(3 * n + 1));
    const char **tnames = malloc(sizeof *tnames * (size_t)(3 * n + 1));
    wk_status st = WK_OK;
    int nt = 0;
    bool ok = ts && tnames;
    for (int i = 0; ok && i < n; i++) {
        ts[nt] = params[i];
        tnames[nt++] = names[i];
    }
    ok = ok && strs_add(&mk, "wick.checkpoint") && strs_add(&mv, "1");
    if (ok && opt) {
        const wk_optim_config *c = &opt->cfg;
        ok = strs_add(&mk, "optim.kind") && strs_add(&mv, "%s", kind_name(c->kind)) && strs_add(&mk, "optim.nesterov") &&
             strs_add(&mv, "%s", c->nesterov ? "true" : "false") && strs_add(&mk, "optim.steps") &&
             strs_add(&mv, "%" PRId64, opt->steps);
#define SAVE_FIELD(f) ok = ok && strs_add(&mk, "optim." #f) && strs_add(&mv, "%.17g", c->f);
        CFG_FIELDS(SAVE_FIELD)
#undef SAVE_FIELD
        for (int i = 0; ok && i < n; i++) {
            if (opt->pstep[i] > 0)
                ok = strs_add(&mk, "optim.%s.step", names[i]) && strs_add(&mv, "%" PRId64, opt->pstep[i]);
            if (ok && opt->m[i]) {
                ts[nt] = opt->m[i];
                ok = (tnames[nt++] = strs_add(&tn, "optim.%s.m", names[i])) != NULL;
            }
            if (ok && opt->v[i]) {
                ts[nt] = opt->v[i];
                ok = (tnames[nt++] = strs_add(&tn, "optim.%s.v", names[i])) != NULL;
            }
        }
    }
    if (!ok) st = wk__err(WK_ERR_OOM, op, "cannot allocate the checkpoint's lists");
    else
        st = wk_safetensors_save(path, nt, tnames, ts, mk.n, (const char *const *)mk.v, (const char *const *)mv.v);
    free(ts);
    free(tnames);
    strs_free(&tn);
    strs_free(&mk);
    strs_free(&mv);
    return st;
}

/* ---- loading ---- */

static bool parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno) return false;
    *out = v;
    return true;
}
static bool parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) return false;
    *out = (int64_t)v;
    return true;
}

/* The tensor `name` exists with p's dtype and shape; its index, or -1 with
 * WK_ERR_FORMAT recorded. */
static int find_like(const char *op, const char *path, wk_safetensors *st, const char *name, const wk_tensor *p) {
    int k = wk_safetensors_find(st, name);
    if (k < 0) {
        wk__err(WK_ERR_FORMAT, op, "%s: no tensor \"%s\"", path, name);
        return -1;
    }
    wk_safetensors_info info;
    if (wk_safetensors_info_at(st, k, &info) != WK_OK) return -1;
    bool same = info.supported && info.dtype == p->dtype && info.rank == p->layout.rank;
    for (int d = 0; same && d < info.rank; d++) same = info.shape[d] == p->layout.shape[d];
    if (!same) {
        char a[160], b[160];
        wk__err(WK_ERR_FORMAT, op, "%s: tensor \"%s\" is %s %s, the parameter %s %s", path, name, info.st_dtype,
                wk__shape_str(info.shape, info.rank, a, sizeof a), wk_dtype_name(p->dtype),
                wk__shape_str(p->layout.shape, p->layout.rank, b, sizeof b));
        return -1;
    }
    return k;
}

/* The optimizer's part of the file, checked whole: the config, steps and
 * each parameter's step; no tensor is read yet. */
static wk_status read_opt_meta(const char *op, const char *path, wk_safetensors *st, const wk_optimizer *opt,
                               const char *const *names, int n, wk_optim_config *cfg, int64_t *steps, int64_t *pstep) {
    const char *kind = wk_safetensors_meta_value(st, "optim.kind");
    if (!kind) return wk__err(WK_ERR_FORMAT, op, "%s: no optimizer state (metadata \"optim.kind\")", path);
    if (strcmp(kind, kind_name(opt->cfg.kind)) != 0)
        return wk__err(WK_ERR_FORMAT, op, "%s: the state is of a %s optimizer, this one is %s", path, kind,
                       kind_name(opt->cfg.kind));
    *cfg = opt->cfg;
#define READ_FIELD(f)                                                                                              \
    if (!parse_double(wk_safetensors_meta_value(st, "optim." #f), &cfg->f))                                        \
        return wk__err(WK_ERR_FORMAT, op, "%s: metadata \"optim." #f "\" is missing or not a number", path);
    CFG_FIELDS(READ_FIELD)
#undef READ_FIELD
    const char *nest = wk_safetensors_meta_value(st, "optim.nesterov");
    if (!nest || (strcmp(nest, "true") && strcmp(nest, "false")))
        return wk__err(WK_ERR_FORMAT, op, "%s: metadata \"optim.nesterov\" must be true or false", path);
    cfg->nesterov = nest[0] == 't';
    if (wk__optim_config_check(op, cfg) != WK_OK)
        return wk__err(WK_ERR_FORMAT, op, "%s: bad optimizer config: %s", path, wk_last_error());
    if (!parse_i64(wk_safetensors_meta_value(st, "optim.steps"), steps) || *steps < 0)
        return wk__err(WK_ERR_FORMAT, op, "%s: metadata \"optim.steps\" is missing or not a count", path);
    if (*steps > WK__OPTIM_MAX_STEPS)
        return wk__err(WK_ERR_FORMAT, op, "%s: metadata \"optim.steps\" = %" PRId64 " is above the %" PRId64
                       " steps an optimizer counts", path, *steps, WK__OPTIM_MAX_STEPS);
    char key[512];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "optim.%s.step", names[i]);
        const char *v = wk_safetensors_meta_value(st, key);
        pstep[i] = 0;
        if (v && (!parse_i64(v, &pstep[i]) || pstep[i] < 1 || pstep[i] > *steps))
            return wk__err(WK_ERR_FORMAT, op, "%s: metadata \"%s\" = \"%s\" is not a step in [1, %" PRId64 "]", path, key,
                           v, *steps);
        bool want[2] = {pstep[i] > 0 && wk__optim_has_m(cfg), pstep[i] > 0 && wk__optim_has_v(cfg)};
        for (int s = 0; s < 2; s++) {
            snprintf(key, sizeof key, "optim.%s.%c", names[i], s ? 'v' : 'm');
            bool have = wk_safetensors_find(st, key) >= 0;
            if (have != want[s])
                return wk__err(WK_ERR_FORMAT, op, "%s: tensor \"%s\" %s (parameter step %" PRId64 ")", path, key,
                               have ? "is there but the state has none" : "is missing", pstep[i]);
            if (have && find_like(op, path, st, key, opt->p[i]) < 0) return wk_last_status();
        }
    }
    return WK_OK;
}

static wk_status load_state(wk_safetensors *st, const char *name, char which, wk_tensor *p, wk_tensor **slot) {
    char key[512];
    snprintf(key, sizeof key, "optim.%s.%c", name, which);
    if (!*slot) {
        wk_tensor *z = wk_zeros(p->layout.shape, p->layout.rank, p->dtype, wk__dev(p));
        if (!z) return wk_last_status();
        *slot = wk_keep(z);
    }
    wk_tensor *src = wk_safetensors_get_as(st, key, p->dtype, wk__dev(p));
    wk_status s = src ? wk_copy_(*slot, src) : wk_last_status();
    wk_tensor_free(src);
    return s;
}

wk_status wk_checkpoint_load(const char *path, const char *const *names, wk_tensor *const *params, int n,
                             wk_optimizer *opt) {
    const char *op = "wk_checkpoint_load";
    if (!path) return wk__err(WK_ERR_ARG, op, "NULL path");
    if (check_lists(op, names, params, n) != WK_OK) return wk_last_status();
    if (opt && check_opt_params(op, opt, params, n) != WK_OK) return wk_last_status();
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) > 400) return wk__err(WK_ERR_ARG, op, "parameter %d's name is too long", i);
    wk_safetensors *st = wk_safetensors_open(path);
    if (!st) return wk_last_status();
    int64_t *pstep = calloc((size_t)(n ? n : 1), sizeof *pstep);
    wk_status s = pstep ? WK_OK : wk__err(WK_ERR_OOM, op, "cannot allocate %d steps", n);
    for (int i = 0; s == WK_OK && i < n; i++)
        if (find_like(op, path, st, names[i], params[i]) < 0) s = wk_last_status();
    wk_optim_config cfg;
    int64_t steps = 0;
    if (s == WK_OK && opt) s = read_opt_meta(op, path, st, opt, names, n, &cfg, &steps, pstep);
    /* everything checked: now write */
    wk_no_grad_begin();
    for (int i = 0; s == WK_OK && i < n; i++) {
        wk_tensor *src = wk_safetensors_get_as(st, names[i], params[i]->dtype, wk__dev(params[i]));
        s = src ? wk_param_assign_(params[i], src) : wk_last_status();
        wk_tensor_free(src);
    }
    if (s == WK_OK && opt) {
        opt->cfg = cfg;
        opt->steps = steps;
        for (int i = 0; s == WK_OK && i < n; i++) {
            opt->pstep[i] = pstep[i];
            bool hm = pstep[i] > 0 && wk__optim_has_m(&cfg), hv = pstep[i] > 0 && wk__optim_has_v(&cfg);
            if (hm) s = load_state(st, names[i], 'm', params[i], &opt->m[i]);
            else {
                wk_tensor_free(opt->m[i]);
                opt->m[i] = NULL;
            }
            if (s == WK_OK && hv) s = load_state(st, names[i], 'v', params[i], &opt->v[i]);
            else if (!hv) {
                wk_tensor_free(opt->v[i]);
                opt->v[i] = NULL;
            }
        }
    }
    wk_no_grad_end();
    free(pstep);
    wk_safetensors_close(st);
    return s;
}
