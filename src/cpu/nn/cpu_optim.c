/* The optim_step entry on the CPU: one fused pass over a parameter, its
 * gradient and state, in place, allocating nothing; split over the thread
 * pool for large parameters. f32 computes in f32 and f64 in f64 (as
 * torch.optim does in the parameter's dtype); f16 / bf16 load each element
 * into f32, update, and round back. The formulas and their order follow
 * torch.optim's single-tensor paths, so trajectories agree to rounding. */
#include "cpu/cpu_backend.h"
#include "cpu/elementwise/cpu_convert.h"
#include "cpu/runtime/threadpool.h"
#include "base/error.h"
#include <math.h>

/* sqrt of v (never negative) needs no errno: without it GCC vectorizes the
 * Adam loops (sqrtf's errno store otherwise keeps them scalar). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno")
#endif

/* Adam's element update with x (the decayed parameter) and d (the
 * gradient, with L2 added) given as expressions of i. */
#define ADAM_LOOP(SQRT, T, XEXPR, DEXPR)                                                                          \
    for (int64_t i = b; i < e; i++) {                                                                             \
        T x = XEXPR, d = DEXPR;                                                                                   \
        T mi = mr[i] + b1c * (d - mr[i]);                                                                         \
        T vi = vr[i] * b2 + b2c * d * d;                                                                          \
        mr[i] = mi;                                                                                               \
        vr[i] = vi;                                                                                               \
        pr[i] = x - step_size * (mi / (SQRT(vi) / bc2s + eps));                                                   \
    }

/* The scalars of one step, in the compute type. */
#define OPTIM_KERNEL(NAME, T, SQRT)                                                                               \
    static void NAME(const wk_optim_args *a, T *p, const T *g, T *m, T *v, int64_t b, int64_t e) {               \
        const T lr = (T)a->lr, wd = (T)a->weight_decay;                                                           \
        if (a->kind == WK_OPTIM_SGD) {                                                                            \
            const T mom = (T)a->momentum, damp1 = (T)(1.0 - a->dampening);                                        \
            for (int64_t i = b; i < e; i++) {                                                                     \
                T d = g[i];                                                                                       \
                if (wd != 0) d = d + wd * p[i];                                                                   \
                if (m) {                                                                                          \
                    T buf = a->first_step ? d : mom * m[i] + damp1 * d;                                           \
                    m[i] = buf;                                                                                   \
                    d = a->nesterov ? d + mom * buf : buf;                                                        \
                }                                                                                                 \
                p[i] = p[i] - lr * d;                                                                             \
            }                                                                                                     \
            return;                                                                                               \
        }                                                                                                         \
        const bool adamw = a->kind == WK_OPTIM_ADAMW;                                                             \
        const T b1c = (T)(1.0 - a->beta1), b2 = (T)a->beta2, b2c = (T)(1.0 - a->beta2), eps = (T)a->eps;          \
        const T decay = (T)(1.0 - a->lr * a->weight_decay);                                                       \
        const T step_size = (T)(a->lr / a->bias_correction1), bc2s = (T)sqrt(a->bias_correction2);                \
        T *restrict pr = p, *restrict mr = m, *restrict vr = v;                                                   \
        const T *restrict gr = g;                                                                                 \
        /* one straight loop per rule (they vectorize); AdamW decays p, Adam adds wd * p to g */                  \
        if (adamw) ADAM_LOOP(SQRT, T, pr[i] * decay, gr[i])                                                       \
        else if (wd != 0) ADAM_LOOP(SQRT, T, pr[i], gr[i] + wd * pr[i])                                           \
        else ADAM_LOOP(SQRT, T, pr[i], gr[i])                                                                     \
    }
OPTIM_KERNEL(step_f32, float, sqrtf)
OPTIM_KERNEL(step_f64, double, sqrt)

typedef struct optim_ctx {
    const wk_optim_args *a;
    void *p, *m, *v;
    const void *g;
    wk_dtype dt;
} optim_ctx;

/* f16 / bf16: blocks of elements widened to f32 on the stack, updated by
 * the f32 kernel, rounded back. */
#define NARROW_BLOCK 256
static void step_narrow(const optim_ctx *c, int64_t b, int64_t e) {
    float p[NARROW_BLOCK], g[NARROW_BLOCK], m[NARROW_BLOCK], v[NARROW_BLOCK];
    for (int64_t s = b; s < e; s += NARROW_BLOCK) {
        int64_t n = e - s < NARROW_BLOCK ? e - s : NARROW_BLOCK;
        for (int64_t i = 0; i < n; i++) {
            p[i] = wk__narrow_load(c->p, s + i, c->dt);
            g[i] = wk__narrow_load(c->g, s + i, c->dt);
            if (c->m) m[i] = wk__narrow_load(c->m, s + i, c->dt);
            if (c->v) v[i] = wk__narrow_load(c->v, s + i, c->dt);
        }
        step_f32(c->a, p, g, c->m ? m : NULL, c->v ? v : NULL, 0, n);
        for (int64_t i = 0; i < n; i++) {
            wk__narrow_store(c->p, s + i, c->dt, p[i]);
            if (c->m) wk__narrow_store(c->m, s + i, c->dt, m[i]);
            if (c->v) wk__narrow_store(c->v, s + i, c->dt, v[i]);
        }
    }
}

static void optim_range(void *ctx, int64_t b, int64_t e, int tid) {
    (void)tid;
    const optim_ctx *c = ctx;
    if (c->dt == WK_F32) step_f32(c->a, c->p, c->g, c->m, c->v, b, e);
    else if (c->dt == WK_F64) step_f64(c->a, c->p, c->g, c->m, c->v, b, e);
    else step_narrow(c, b, e);
}

wk_status wk__cpu_optim_step(wk_device *dev, const wk_optim_args *a, void *param, const void *grad, void *m, void *v,
                             int64_t n, wk_dtype dt) {
    (void)dev;
    const char *op = "wk_optimizer_step";
    if (dt != WK_F32 && dt != WK_F64 && dt != WK_F16 && dt != WK_BF16)
        return wk__err(WK_ERR_DTYPE, op, "optimizer steps on f32, f64, f16 or bf16 parameters, not %s",
                       wk_dtype_name(dt));
    if (a->kind != WK_OPTIM_SGD && (!m || !v)) return wk__err(WK_ERR_INTERNAL, op, "Adam without its moment buffers");
    if (a->kind == WK_OPTIM_SGD && a->momentum != 0.0 && !m)
        return wk__err(WK_ERR_INTERNAL, op, "SGD momentum without its buffer");
    if (a->kind == WK_OPTIM_SGD && a->momentum == 0.0) m = NULL;
    optim_ctx c = {a, param, m, v, grad, dt};
    wk__parallel_for(n, NARROW_BLOCK, WK_PAR_MIN_ELEMS, optim_range, &c);
    return WK_OK;
}
